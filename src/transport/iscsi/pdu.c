/* SPDX-License-Identifier: MIT */
/* iSCSI PDU codec and receive state machine (RFC 7143 §11). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "transport/iscsi/pdu.h"
#include "util/crc32c.h"

static inline uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

void scsitgt__bhs_init(uint8_t *bhs, uint8_t opcode, uint8_t flags)
{
	memset(bhs, 0, ISCSI_BHS_LEN);
	bhs[ISCSI_BHS_OPCODE] = opcode;
	bhs[ISCSI_BHS_FLAGS] = flags;
}

void scsitgt__bhs_set_dsl(uint8_t *bhs, uint32_t len)
{
	put_be24(&bhs[ISCSI_BHS_DSL], len);
}

const char *scsitgt__iscsi_opcode_name(uint8_t opcode)
{
	switch (opcode) {
	case ISCSI_OP_NOP_OUT:
		return "NOP-Out";
	case ISCSI_OP_SCSI_CMD:
		return "SCSI Command";
	case ISCSI_OP_TMF_REQ:
		return "Task Management Function Request";
	case ISCSI_OP_LOGIN_REQ:
		return "Login Request";
	case ISCSI_OP_TEXT_REQ:
		return "Text Request";
	case ISCSI_OP_DATA_OUT:
		return "SCSI Data-Out";
	case ISCSI_OP_LOGOUT_REQ:
		return "Logout Request";
	case ISCSI_OP_SNACK_REQ:
		return "SNACK Request";
	case ISCSI_OP_NOP_IN:
		return "NOP-In";
	case ISCSI_OP_SCSI_RSP:
		return "SCSI Response";
	case ISCSI_OP_TMF_RSP:
		return "Task Management Function Response";
	case ISCSI_OP_LOGIN_RSP:
		return "Login Response";
	case ISCSI_OP_TEXT_RSP:
		return "Text Response";
	case ISCSI_OP_DATA_IN:
		return "SCSI Data-In";
	case ISCSI_OP_LOGOUT_RSP:
		return "Logout Response";
	case ISCSI_OP_R2T:
		return "Ready To Transfer";
	case ISCSI_OP_ASYNC_MSG:
		return "Asynchronous Message";
	case ISCSI_OP_REJECT:
		return "Reject";
	default:
		return "unknown";
	}
}

bool scsitgt__iscsi_opcode_is_initiator(uint8_t opcode)
{
	switch (opcode) {
	case ISCSI_OP_NOP_OUT:
	case ISCSI_OP_SCSI_CMD:
	case ISCSI_OP_TMF_REQ:
	case ISCSI_OP_LOGIN_REQ:
	case ISCSI_OP_TEXT_REQ:
	case ISCSI_OP_DATA_OUT:
	case ISCSI_OP_LOGOUT_REQ:
	case ISCSI_OP_SNACK_REQ:
		return true;
	default:
		return false;
	}
}

void scsitgt__iscsi_rx_init(struct scsitgt__iscsi_rx *rx, const struct scsitgt__iscsi_rx_ops *ops,
			    void *arg, uint32_t max_dsl)
{
	memset(rx, 0, sizeof(*rx));
	rx->ops = ops;
	rx->arg = arg;
	rx->max_dsl = max_dsl;
	rx->state = SCSITGT__RX_BHS;
}

void scsitgt__iscsi_rx_destroy(struct scsitgt__iscsi_rx *rx)
{
	free(rx->buf);
	rx->buf = NULL;
	rx->buf_cap = 0;
}

static int rx_fail(struct scsitgt__iscsi_rx *rx, int err)
{
	rx->error = err;
	return err;
}

static int rx_deliver(struct scsitgt__iscsi_rx *rx)
{
	struct scsitgt__iscsi_pdu *pdu = &rx->pdu;
	int rc;

	if (pdu->data_len == 0 || pdu->discard)
		pdu->data = NULL;
	else if (pdu->dest)
		pdu->data = pdu->dest;
	else
		pdu->data = rx->buf;
	rx->state = SCSITGT__RX_BHS;
	rx->got = 0;
	rx->pdus++;
	rc = rx->ops->pdu(rx->arg, pdu);
	return rc < 0 ? rx_fail(rx, rc) : 0;
}

/* The data segment (and its pad) ended: check the digest or deliver. */
static int rx_data_end(struct scsitgt__iscsi_rx *rx)
{
	rx->got = 0;
	if (rx->data_digest) {
		rx->state = SCSITGT__RX_DDIGEST;
		return 0;
	}
	return rx_deliver(rx);
}

static int rx_after_data(struct scsitgt__iscsi_rx *rx)
{
	if (scsitgt__iscsi_pad(rx->pdu.data_len)) {
		rx->state = SCSITGT__RX_PAD;
		rx->got = 0;
		return 0;
	}
	return rx_data_end(rx);
}

static int rx_header_done(struct scsitgt__iscsi_rx *rx)
{
	struct scsitgt__iscsi_pdu *pdu = &rx->pdu;
	int rc;

	if (pdu->data_len > rx->max_dsl)
		return rx_fail(rx, SCSITGT__RX_ETOOBIG);
	pdu->dest = NULL;
	pdu->dest_len = 0;
	pdu->discard = false;
	pdu->data = NULL;
	rc = rx->ops->header(rx->arg, pdu);
	if (rc < 0)
		return rx_fail(rx, rc);
	if (pdu->dest && pdu->dest_len > pdu->data_len)
		pdu->dest_len = pdu->data_len;
	rx->got = 0;
	if (pdu->data_len == 0)
		return rx_deliver(rx);
	if (pdu->dest == NULL && !pdu->discard && rx->buf_cap < pdu->data_len) {
		/* Bounded by max_dsl, checked above. */
		uint8_t *n = realloc(rx->buf, pdu->data_len);

		if (n == NULL)
			return rx_fail(rx, -ENOMEM);
		rx->buf = n;
		rx->buf_cap = pdu->data_len;
	}
	rx->crc = 0;
	rx->state = SCSITGT__RX_DATA;
	return 0;
}

static int rx_bhs_done(struct scsitgt__iscsi_rx *rx)
{
	struct scsitgt__iscsi_pdu *pdu = &rx->pdu;

	pdu->ahs_len = (uint32_t)pdu->bhs[ISCSI_BHS_TOTAL_AHS_LEN] * 4;
	pdu->data_len = scsitgt__bhs_dsl(pdu->bhs);
	rx->got = 0;
	if (pdu->ahs_len) {
		rx->state = SCSITGT__RX_AHS;
		return 0;
	}
	if (rx->header_digest) {
		rx->state = SCSITGT__RX_HDIGEST;
		return 0;
	}
	return rx_header_done(rx);
}

/* Place @n data bytes at the current position (they are already at @src). */
static void rx_place(struct scsitgt__iscsi_rx *rx, const uint8_t *src, uint32_t n)
{
	struct scsitgt__iscsi_pdu *pdu = &rx->pdu;
	uint32_t pos = rx->got;

	if (rx->data_digest)
		rx->crc = scsitgt__crc32c(rx->crc, src, n);
	if (pdu->discard)
		return;
	if (pdu->dest) {
		if (pos < pdu->dest_len) {
			uint32_t k = pdu->dest_len - pos < n ? pdu->dest_len - pos : n;

			if (pdu->dest + pos != src)
				memcpy(pdu->dest + pos, src, k);
		}
		return;
	}
	memcpy(rx->buf + pos, src, n);
}

ssize_t scsitgt__iscsi_rx_feed(struct scsitgt__iscsi_rx *rx, const uint8_t *data, size_t len)
{
	struct scsitgt__iscsi_pdu *pdu = &rx->pdu;
	size_t off = 0;
	int rc = 0;

	if (rx->error)
		return rx->error;
	while (off < len && !rx->stop) {
		size_t avail = len - off;
		uint32_t n;

		switch (rx->state) {
		case SCSITGT__RX_BHS:
			n = ISCSI_BHS_LEN - rx->got;
			n = avail < n ? (uint32_t)avail : n;
			memcpy(pdu->bhs + rx->got, data + off, n);
			rx->got += n;
			off += n;
			if (rx->got == ISCSI_BHS_LEN)
				rc = rx_bhs_done(rx);
			break;
		case SCSITGT__RX_AHS:
			n = pdu->ahs_len - rx->got;
			n = avail < n ? (uint32_t)avail : n;
			memcpy(pdu->ahs + rx->got, data + off, n);
			rx->got += n;
			off += n;
			if (rx->got == pdu->ahs_len) {
				rx->got = 0;
				if (rx->header_digest)
					rx->state = SCSITGT__RX_HDIGEST;
				else
					rc = rx_header_done(rx);
			}
			break;
		case SCSITGT__RX_HDIGEST:
			n = ISCSI_DIGEST_LEN - rx->got;
			n = avail < n ? (uint32_t)avail : n;
			memcpy(rx->digest + rx->got, data + off, n);
			rx->got += n;
			off += n;
			if (rx->got == ISCSI_DIGEST_LEN) {
				/* RFC 7143 §11.2.3: the header digest covers BHS and AHS. */
				uint32_t crc = scsitgt__crc32c(0, pdu->bhs, ISCSI_BHS_LEN);

				crc = scsitgt__crc32c(crc, pdu->ahs, pdu->ahs_len);
				if (crc != get_le32(rx->digest))
					return rx_fail(rx, SCSITGT__RX_EHDIGEST);
				rc = rx_header_done(rx);
			}
			break;
		case SCSITGT__RX_DATA:
			n = pdu->data_len - rx->got;
			n = avail < n ? (uint32_t)avail : n;
			rx_place(rx, data + off, n);
			rx->got += n;
			off += n;
			if (rx->got == pdu->data_len)
				rc = rx_after_data(rx);
			break;
		case SCSITGT__RX_PAD:
			n = scsitgt__iscsi_pad(pdu->data_len) - rx->got;
			n = avail < n ? (uint32_t)avail : n;
			if (rx->data_digest)
				rx->crc = scsitgt__crc32c(rx->crc, data + off, n);
			rx->got += n;
			off += n;
			if (rx->got == scsitgt__iscsi_pad(pdu->data_len))
				rc = rx_data_end(rx);
			break;
		case SCSITGT__RX_DDIGEST:
			n = ISCSI_DIGEST_LEN - rx->got;
			n = avail < n ? (uint32_t)avail : n;
			memcpy(rx->digest + rx->got, data + off, n);
			rx->got += n;
			off += n;
			if (rx->got == ISCSI_DIGEST_LEN) {
				if (rx->crc != get_le32(rx->digest))
					return rx_fail(rx, SCSITGT__RX_EDDIGEST);
				rc = rx_deliver(rx);
			}
			break;
		}
		if (rc < 0)
			return rc;
	}
	return (ssize_t)off;
}

size_t scsitgt__iscsi_rx_direct(const struct scsitgt__iscsi_rx *rx, uint8_t **dst)
{
	const struct scsitgt__iscsi_pdu *pdu = &rx->pdu;

	if (rx->error || rx->stop || rx->state != SCSITGT__RX_DATA || pdu->discard ||
	    pdu->dest == NULL || rx->got >= pdu->dest_len)
		return 0;
	*dst = pdu->dest + rx->got;
	return pdu->dest_len - rx->got;
}

int scsitgt__iscsi_rx_direct_done(struct scsitgt__iscsi_rx *rx, size_t n)
{
	struct scsitgt__iscsi_pdu *pdu = &rx->pdu;

	if (rx->error)
		return rx->error;
	if (rx->state != SCSITGT__RX_DATA || pdu->dest == NULL || n > pdu->dest_len - rx->got)
		return rx_fail(rx, -EINVAL);
	rx_place(rx, pdu->dest + rx->got, (uint32_t)n);
	rx->got += (uint32_t)n;
	if (rx->got == pdu->data_len)
		return rx_after_data(rx);
	return 0;
}

void scsitgt__iscsi_rx_drop_data(struct scsitgt__iscsi_rx *rx)
{
	struct scsitgt__iscsi_pdu *pdu = &rx->pdu;

	pdu->discard = true;
	pdu->dest = NULL;
	pdu->dest_len = 0;
}

size_t scsitgt__iscsi_rx_header_window(const struct scsitgt__iscsi_rx *rx, uint32_t big)
{
	const struct scsitgt__iscsi_pdu *pdu = &rx->pdu;
	uint32_t digest = rx->header_digest ? ISCSI_DIGEST_LEN : 0;

	if (rx->error || rx->stop || big == 0)
		return 0;
	switch (rx->state) {
	case SCSITGT__RX_BHS:
		/* pdu still describes the previous PDU (dest is reset once a header is done). */
		if (pdu->dest == NULL || pdu->discard || pdu->data_len < big)
			return 0;
		return ISCSI_BHS_LEN - rx->got;
	case SCSITGT__RX_AHS:
		/* data_len is this PDU's; where its data goes is decided after the header. */
		if (pdu->data_len < big)
			return 0;
		return pdu->ahs_len - rx->got + digest;
	case SCSITGT__RX_HDIGEST:
		if (pdu->data_len < big)
			return 0;
		return ISCSI_DIGEST_LEN - rx->got;
	default:
		return 0;
	}
}

struct scsitgt__iscsi_tx *scsitgt__iscsi_tx_create(unsigned int cap)
{
	struct scsitgt__iscsi_tx *tx;
	size_t sz = sizeof(*tx) + (size_t)cap * sizeof(tx->pdus[0]);

	tx = malloc(sz + (size_t)cap * 3 * sizeof(struct iovec));
	if (tx == NULL)
		return NULL;
	memset(tx, 0, sizeof(*tx));
	tx->cap = cap;
	tx->iov = (struct iovec *)(void *)((uint8_t *)tx + sz);
	return tx;
}

void scsitgt__iscsi_tx_destroy(struct scsitgt__iscsi_tx *tx)
{
	if (tx == NULL)
		return;
	free(tx->owned);
	free(tx);
}

uint8_t *scsitgt__iscsi_tx_add(struct scsitgt__iscsi_tx *tx, const void *data, uint32_t len)
{
	struct scsitgt__iscsi_tx_pdu *p;

	if (tx->npdus == tx->cap)
		return NULL;
	p = &tx->pdus[tx->npdus++];
	memset(p->hdr, 0, sizeof(p->hdr));
	p->data = data;
	p->len = data ? len : 0;
	return p->hdr;
}

void scsitgt__iscsi_tx_seal(struct scsitgt__iscsi_tx *tx, bool header_digest, bool data_digest)
{
	int k = 0;

	tx->bytes = 0;
	for (unsigned int i = 0; i < tx->npdus; i++) {
		struct scsitgt__iscsi_tx_pdu *p = &tx->pdus[i];
		uint32_t pad = scsitgt__iscsi_pad(p->len);
		size_t hl = ISCSI_BHS_LEN, tl = 0;

		scsitgt__bhs_set_dsl(p->hdr, p->len);
		if (header_digest) {
			put_le32(&p->hdr[ISCSI_BHS_LEN], scsitgt__crc32c(0, p->hdr, ISCSI_BHS_LEN));
			hl += ISCSI_DIGEST_LEN;
		}
		tx->iov[k].iov_base = p->hdr;
		tx->iov[k++].iov_len = hl;
		tx->bytes += hl;
		if (p->len == 0)
			continue;
		tx->iov[k].iov_base = (void *)(uintptr_t)p->data;
		tx->iov[k++].iov_len = p->len;
		memset(p->tail, 0, pad);
		tl = pad;
		if (data_digest) {
			uint32_t crc = scsitgt__crc32c(0, p->data, p->len);

			crc = scsitgt__crc32c(crc, p->tail, pad);
			put_le32(&p->tail[pad], crc);
			tl += ISCSI_DIGEST_LEN;
		}
		if (tl) {
			tx->iov[k].iov_base = p->tail;
			tx->iov[k++].iov_len = tl;
		}
		tx->bytes += p->len + tl;
	}
	tx->iovcnt = k;
}
