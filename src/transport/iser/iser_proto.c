/* SPDX-License-Identifier: MIT */
/* iSER wire codecs (RFC 7145 §9). See iser_proto.h. */
#include <errno.h>
#include <string.h>

#include "transport/iser/iser_proto.h"
#include "transport/iscsi/iscsi_spec.h"
#include "util/be.h"

_Static_assert(SCSITGT__ISER_HDR_LEN == 28, "RFC 7145 §9.2: iSER header is 28 bytes");
_Static_assert(SCSITGT__ISER_CM_LEN == 4, "RFC 7145 §9.1: iSER CM messages are 4 bytes");

int scsitgt__iser_hdr_decode(const uint8_t *buf, size_t len, struct scsitgt__iser_hdr *out)
{
	uint8_t op;

	if (len < SCSITGT__ISER_HDR_LEN)
		return -EMSGSIZE;
	memset(out, 0, sizeof(*out));
	op = buf[0] >> 4;
	out->opcode = op;
	switch (op) {
	case SCSITGT__ISER_OP_ISCSI:
		/* §9.2: bits 6,7 of the low nibble and bytes 1-3 are reserved. */
		if ((buf[0] & 0x03u) != 0)
			return -EPROTO;
		out->wsv = buf[0] & SCSITGT__ISER_FLAG_WSV;
		out->rsv = buf[0] & SCSITGT__ISER_FLAG_RSV;
		out->write_stag = get_be32(&buf[4]);
		out->write_va = get_be64(&buf[8]);
		out->read_stag = get_be32(&buf[16]);
		out->read_va = get_be64(&buf[20]);
		return 0;
	case SCSITGT__ISER_OP_HELLO:
		/* §9.3: MaxVer, MinVer nibbles, IRD. */
		out->max_ver = buf[1] >> 4;
		out->min_ver = buf[1] & 0x0fu;
		out->ird = get_be16(&buf[2]);
		return 0;
	case SCSITGT__ISER_OP_HELLO_REPLY:
		/* §9.4: R bit, MaxVer, CurVer, ORD. */
		out->reject = buf[0] & 0x01u;
		out->max_ver = buf[1] >> 4;
		out->min_ver = buf[1] & 0x0fu;
		out->ird = get_be16(&buf[2]);
		return 0;
	default:
		return -EPROTO;
	}
}

void scsitgt__iser_hdr_encode(uint8_t buf[SCSITGT__ISER_HDR_LEN], const struct scsitgt__iser_hdr *h)
{
	memset(buf, 0, SCSITGT__ISER_HDR_LEN);
	buf[0] = (uint8_t)(SCSITGT__ISER_OP_ISCSI << 4);
	if (h && h->wsv) {
		buf[0] |= SCSITGT__ISER_FLAG_WSV;
		put_be32(&buf[4], h->write_stag);
		put_be64(&buf[8], h->write_va);
	}
	if (h && h->rsv) {
		buf[0] |= SCSITGT__ISER_FLAG_RSV;
		put_be32(&buf[16], h->read_stag);
		put_be64(&buf[20], h->read_va);
	}
}

int scsitgt__iser_cm_req_decode(const uint8_t *buf, size_t len, struct scsitgt__iser_cm *out)
{
	memset(out, 0, sizeof(*out));
	if (len == 0 || buf == NULL)
		return 0;
	if (len < SCSITGT__ISER_CM_LEN)
		return -EMSGSIZE;
	out->given = true;
	out->zbva_not_sup = buf[0] & SCSITGT__ISER_CM_ZBVA_NOT_SUP;
	out->sie_not_sup = buf[0] & SCSITGT__ISER_CM_SIE_NOT_SUP;
	return 0;
}

void scsitgt__iser_cm_rep_encode(uint8_t buf[SCSITGT__ISER_CM_LEN])
{
	memset(buf, 0, SCSITGT__ISER_CM_LEN);
	buf[0] = SCSITGT__ISER_CM_ZBVA_NOT_SUP | SCSITGT__ISER_CM_SIE_NOT_SUP;
}

long scsitgt__iser_pdu_span(const uint8_t *pdu, size_t len, uint32_t *pad_missing)
{
	uint32_t ahs, dsl, need, pad;

	*pad_missing = 0;
	if (len < ISCSI_BHS_LEN)
		return -EMSGSIZE;
	/* RFC 7143 §11.2.1: TotalAHSLength (4-byte words) at byte 4, DSL at bytes 5-7. */
	ahs = (uint32_t)pdu[4] * 4u;
	dsl = get_be24(&pdu[5]);
	need = ISCSI_BHS_LEN + ahs + dsl;
	pad = (4u - (dsl & 3u)) & 3u;
	if (len == need) {
		*pad_missing = pad;
		return (long)need;
	}
	if (len == (size_t)need + pad)
		return (long)(need + pad); /* the receiver consumes the pad as sent */
	return len < need ? -EMSGSIZE : -EPROTO;
}
