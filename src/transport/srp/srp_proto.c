/* SPDX-License-Identifier: MIT */
/* SRP information unit codecs and the request-limit model. See srp_proto.h. */
#include <errno.h>
#include <string.h>

#include "transport/srp/srp_proto.h"
#include "util/be.h"

_Static_assert(SRP_LOGIN_REQ_LEN == 64, "SRP r16a Table 5");
_Static_assert(SRP_LOGIN_REQ_RDMA_LEN == 56, "RDMA/CM private data: 92 - 36 bytes of CM header");
_Static_assert(SRP_LOGIN_RSP_LEN == 52, "SRP r16a Table 8");
_Static_assert(SRP_LOGIN_REJ_LEN == 32, "SRP r16a Table 10");
_Static_assert(SRP_I_LOGOUT_LEN == 16 && SRP_T_LOGOUT_LEN == 16, "SRP r16a Tables 15, 16");
_Static_assert(SRP_TSK_MGMT_LEN == 48 && SRP_CMD_LEN == 48, "SRP r16a Tables 18, 23");
_Static_assert(SRP_RSP_LEN == 36 && SRP_AER_REQ_LEN == 36, "SRP r16a Tables 26, 31");
_Static_assert(SRP_CRED_REQ_LEN == 16 && SRP_CRED_RSP_LEN == 16 && SRP_AER_RSP_LEN == 16,
	       "SRP r16a Tables 29, 30, 32");
_Static_assert(SRP_DIRECT_DESC_LEN == 16 && SRP_INDIRECT_HDR_LEN == 20, "SRP r16a §5.6.2");

/* ---- login (§5.2) ---- */

/* Offsets of the 64-byte IB form (Table 5). */
enum {
	LREQ_TAG = 8,
	LREQ_IU_LEN = 16,
	LREQ_BUF_FMT = 24,
	LREQ_FLAGS = 26,
	LREQ_IMM_OFF = 28,
	LREQ_IPORT = 32,
	LREQ_TPORT = 48,
};

/* Offsets of the 56-byte RDMA/CM form: the IB form without its reserved bytes. */
enum {
	LREQR_TAG = 0,
	LREQR_BUF_FMT = 8,
	LREQR_FLAGS = 10,
	LREQR_OPCODE = 11,
	LREQR_IU_LEN = 12,
	LREQR_IPORT = 16,
	LREQR_TPORT = 32,
	LREQR_IMM_OFF = 48,
};

int scsitgt__srp_login_req_decode(const uint8_t *buf, size_t len, bool rdma_cm,
				  struct scsitgt__srp_login_req *out)
{
	memset(out, 0, sizeof(*out));
	if (rdma_cm) {
		if (buf == NULL || len < SRP_LOGIN_REQ_RDMA_LEN)
			return -EMSGSIZE;
		if (buf[LREQR_OPCODE] != SRP_IU_LOGIN_REQ)
			return -EPROTO;
		out->tag = get_be64(&buf[LREQR_TAG]);
		out->buf_fmt = get_be16(&buf[LREQR_BUF_FMT]);
		out->flags = buf[LREQR_FLAGS];
		out->it_iu_len = get_be32(&buf[LREQR_IU_LEN]);
		memcpy(out->initiator_port_id, &buf[LREQR_IPORT], 16);
		memcpy(out->target_port_id, &buf[LREQR_TPORT], 16);
		out->imm_data_offset = get_be16(&buf[LREQR_IMM_OFF]);
		return 0;
	}
	if (buf == NULL || len < SRP_LOGIN_REQ_LEN)
		return -EMSGSIZE;
	if (buf[0] != SRP_IU_LOGIN_REQ)
		return -EPROTO;
	out->tag = get_be64(&buf[LREQ_TAG]);
	out->it_iu_len = get_be32(&buf[LREQ_IU_LEN]);
	out->buf_fmt = get_be16(&buf[LREQ_BUF_FMT]);
	out->flags = buf[LREQ_FLAGS];
	out->imm_data_offset = get_be16(&buf[LREQ_IMM_OFF]);
	memcpy(out->initiator_port_id, &buf[LREQ_IPORT], 16);
	memcpy(out->target_port_id, &buf[LREQ_TPORT], 16);
	return 0;
}

size_t scsitgt__srp_login_req_encode(uint8_t *buf, bool rdma_cm,
				     const struct scsitgt__srp_login_req *req)
{
	if (rdma_cm) {
		memset(buf, 0, SRP_LOGIN_REQ_RDMA_LEN);
		put_be64(&buf[LREQR_TAG], req->tag);
		put_be16(&buf[LREQR_BUF_FMT], req->buf_fmt);
		buf[LREQR_FLAGS] = req->flags;
		buf[LREQR_OPCODE] = SRP_IU_LOGIN_REQ;
		put_be32(&buf[LREQR_IU_LEN], req->it_iu_len);
		memcpy(&buf[LREQR_IPORT], req->initiator_port_id, 16);
		memcpy(&buf[LREQR_TPORT], req->target_port_id, 16);
		put_be16(&buf[LREQR_IMM_OFF], req->imm_data_offset);
		return SRP_LOGIN_REQ_RDMA_LEN;
	}
	memset(buf, 0, SRP_LOGIN_REQ_LEN);
	buf[0] = SRP_IU_LOGIN_REQ;
	put_be64(&buf[LREQ_TAG], req->tag);
	put_be32(&buf[LREQ_IU_LEN], req->it_iu_len);
	put_be16(&buf[LREQ_BUF_FMT], req->buf_fmt);
	buf[LREQ_FLAGS] = req->flags;
	put_be16(&buf[LREQ_IMM_OFF], req->imm_data_offset);
	memcpy(&buf[LREQ_IPORT], req->initiator_port_id, 16);
	memcpy(&buf[LREQ_TPORT], req->target_port_id, 16);
	return SRP_LOGIN_REQ_LEN;
}

/* SRP_LOGIN_RSP, Table 8. */
void scsitgt__srp_login_rsp_encode(uint8_t buf[SRP_LOGIN_RSP_LEN],
				   const struct scsitgt__srp_login_rsp *rsp)
{
	memset(buf, 0, SRP_LOGIN_RSP_LEN);
	buf[0] = SRP_IU_LOGIN_RSP;
	put_be32(&buf[4], rsp->req_lim_delta);
	put_be64(&buf[8], rsp->tag);
	put_be32(&buf[16], rsp->max_it_iu_len);
	put_be32(&buf[20], rsp->max_ti_iu_len);
	put_be16(&buf[24], rsp->buf_fmt);
	buf[26] = rsp->flags;
}

int scsitgt__srp_login_rsp_decode(const uint8_t *buf, size_t len,
				  struct scsitgt__srp_login_rsp *out)
{
	if (len < SRP_LOGIN_RSP_LEN)
		return -EMSGSIZE;
	if (buf[0] != SRP_IU_LOGIN_RSP)
		return -EPROTO;
	out->req_lim_delta = get_be32(&buf[4]);
	out->tag = get_be64(&buf[8]);
	out->max_it_iu_len = get_be32(&buf[16]);
	out->max_ti_iu_len = get_be32(&buf[20]);
	out->buf_fmt = get_be16(&buf[24]);
	out->flags = buf[26];
	return 0;
}

/* SRP_LOGIN_REJ, Table 10. */
void scsitgt__srp_login_rej_encode(uint8_t buf[SRP_LOGIN_REJ_LEN], uint32_t reason, uint64_t tag,
				   uint16_t buf_fmt)
{
	memset(buf, 0, SRP_LOGIN_REJ_LEN);
	buf[0] = SRP_IU_LOGIN_REJ;
	put_be32(&buf[4], reason);
	put_be64(&buf[8], tag);
	put_be16(&buf[24], buf_fmt);
}

int scsitgt__srp_login_rej_decode(const uint8_t *buf, size_t len, uint32_t *reason, uint64_t *tag,
				  uint16_t *buf_fmt)
{
	if (len < SRP_LOGIN_REJ_LEN)
		return -EMSGSIZE;
	if (buf[0] != SRP_IU_LOGIN_REJ)
		return -EPROTO;
	*reason = get_be32(&buf[4]);
	*tag = get_be64(&buf[8]);
	*buf_fmt = get_be16(&buf[24]);
	return 0;
}

const char *scsitgt__srp_rej_reason_name(uint32_t reason)
{
	switch (reason) {
	case SRP_REJ_UNABLE_ESTABLISH:
		return "unable to establish RDMA channel";
	case SRP_REJ_INSUFFICIENT_RESOURCES:
		return "insufficient RDMA channel resources";
	case SRP_REJ_IT_IU_TOO_LARGE:
		return "requested maximum initiator to target IU length too large";
	case SRP_REJ_UNABLE_ASSOCIATE:
		return "unable to associate RDMA channel with specified I_T nexus";
	case SRP_REJ_UNSUPPORTED_FORMAT:
		return "requested data buffer descriptor format not supported";
	case SRP_REJ_MULTICHANNEL_UNSUPPORTED:
		return "multiple RDMA channels per I_T nexus not supported";
	case SRP_REJ_CHANNEL_LIMIT:
		return "RDMA channel limit reached for this initiator";
	default:
		return "unknown reason";
	}
}

uint32_t scsitgt__srp_login_check(const struct scsitgt__srp_login_req *req,
				  const struct scsitgt__srp_login_limits *lim,
				  struct scsitgt__srp_login_verdict *v)
{
	uint8_t tport[16];
	uint8_t mc = req->flags & SRP_LOGIN_MULTICHAN_MASK;

	memset(v, 0, sizeof(*v));
	/* §6.2: the TARGET PORT IDENTIFIER names this port: IDENTIFIER EXTENSION || IOC GUID. */
	put_be64(&tport[0], lim->id_ext);
	put_be64(&tport[8], lim->ioc_guid);
	if (memcmp(tport, req->target_port_id, 16) != 0)
		return SRP_REJ_UNABLE_ASSOCIATE;
	/* §5.2.1: every format the initiator requires must be supported. */
	if ((req->buf_fmt & ~lim->buf_fmt) != 0)
		return SRP_REJ_UNSUPPORTED_FORMAT;
	/* Table 7: values 2 and 3 of MULTI-CHANNEL ACTION are reserved. */
	if (mc != SRP_LOGIN_MULTICHAN_SINGLE && mc != SRP_LOGIN_MULTICHAN_MULTI)
		return SRP_REJ_UNABLE_ESTABLISH;
	if (req->it_iu_len > lim->max_it_iu_len)
		return SRP_REJ_IT_IU_TOO_LARGE;
	if (req->it_iu_len < lim->min_it_iu_len)
		return SRP_REJ_UNABLE_ESTABLISH;
	v->it_iu_len = req->it_iu_len;
	v->multi = mc == SRP_LOGIN_MULTICHAN_MULTI;
	if ((req->flags & SRP_LOGIN_IMMED_REQUESTED) && lim->immediate_data) {
		uint16_t off = req->imm_data_offset;

		/* SRP-2: the data follows the SRP_CMD, its CDB and an immediate descriptor, and
		 * starts inside the IU; an offset elsewhere makes the login malformed. */
		if (off < SRP_CMD_LEN + SRP_IMM_DESC_LEN || off >= req->it_iu_len || (off & 3u))
			return SRP_REJ_UNABLE_ESTABLISH;
		v->imm_data_offset = off;
	}
	return 0;
}

uint32_t scsitgt__srp_multichannel(bool multi, unsigned int nchans, unsigned int max_channels,
				   enum scsitgt__srp_mc_action *action, uint8_t *result)
{
	if (multi && nchans) {
		if (max_channels <= 1)
			return SRP_REJ_MULTICHANNEL_UNSUPPORTED;
		if (nchans >= max_channels)
			return SRP_REJ_CHANNEL_LIMIT;
		*action = SRP_MC_JOIN;
		*result = SRP_LOGIN_RSP_MAINTAINED;
		return 0;
	}
	/* SINGLE, or MULTI without a nexus to join (Table 9: "no existing channels"). */
	*action = nchans ? SRP_MC_NEW_TERMINATE : SRP_MC_NEW;
	*result = nchans ? SRP_LOGIN_RSP_TERMINATED : SRP_LOGIN_RSP_NO_CHANNELS;
	return 0;
}

/* ---- logout, credits, asynchronous events (§5.3-§5.5, §5.10) ---- */

int scsitgt__srp_i_logout_decode(const uint8_t *buf, size_t len, uint64_t *tag)
{
	if (len < SRP_I_LOGOUT_LEN)
		return -EMSGSIZE;
	if (buf[0] != SRP_IU_I_LOGOUT)
		return -EPROTO;
	*tag = get_be64(&buf[8]);
	return 0;
}

void scsitgt__srp_i_logout_encode(uint8_t buf[SRP_I_LOGOUT_LEN], uint64_t tag)
{
	memset(buf, 0, SRP_I_LOGOUT_LEN);
	buf[0] = SRP_IU_I_LOGOUT;
	put_be64(&buf[8], tag);
}

void scsitgt__srp_t_logout_encode(uint8_t buf[SRP_T_LOGOUT_LEN], uint8_t sol_not, uint32_t reason,
				  uint64_t tag)
{
	memset(buf, 0, SRP_T_LOGOUT_LEN);
	buf[0] = SRP_IU_T_LOGOUT;
	buf[1] = sol_not & 1u;
	put_be32(&buf[4], reason);
	put_be64(&buf[8], tag);
}

int scsitgt__srp_t_logout_decode(const uint8_t *buf, size_t len, uint32_t *reason, uint64_t *tag)
{
	if (len < SRP_T_LOGOUT_LEN)
		return -EMSGSIZE;
	if (buf[0] != SRP_IU_T_LOGOUT)
		return -EPROTO;
	*reason = get_be32(&buf[4]);
	*tag = get_be64(&buf[8]);
	return 0;
}

void scsitgt__srp_cred_req_encode(uint8_t buf[SRP_CRED_REQ_LEN], uint8_t sol_not, uint32_t delta,
				  uint64_t tag)
{
	memset(buf, 0, SRP_CRED_REQ_LEN);
	buf[0] = SRP_IU_CRED_REQ;
	buf[1] = sol_not & 1u;
	put_be32(&buf[4], delta);
	put_be64(&buf[8], tag);
}

int scsitgt__srp_cred_req_decode(const uint8_t *buf, size_t len, uint32_t *delta, uint64_t *tag)
{
	if (len < SRP_CRED_REQ_LEN)
		return -EMSGSIZE;
	if (buf[0] != SRP_IU_CRED_REQ)
		return -EPROTO;
	*delta = get_be32(&buf[4]);
	*tag = get_be64(&buf[8]);
	return 0;
}

int scsitgt__srp_simple_rsp_decode(const uint8_t *buf, size_t len, uint8_t opcode, uint64_t *tag)
{
	if (len < 16)
		return -EMSGSIZE;
	if (buf[0] != opcode || (opcode != SRP_IU_CRED_RSP && opcode != SRP_IU_AER_RSP))
		return -EPROTO;
	*tag = get_be64(&buf[8]);
	return 0;
}

void scsitgt__srp_simple_rsp_encode(uint8_t buf[16], uint8_t opcode, uint64_t tag)
{
	memset(buf, 0, 16);
	buf[0] = opcode;
	put_be64(&buf[8], tag);
}

/* SRP_AER_REQ, Table 31. */
size_t scsitgt__srp_aer_req_encode(uint8_t *buf, size_t cap, uint8_t sol_not, uint32_t delta,
				   uint64_t tag, const uint8_t lun[8], const uint8_t *sense,
				   size_t sense_len)
{
	if (cap < SRP_AER_REQ_LEN)
		return 0;
	if (sense_len > cap - SRP_AER_REQ_LEN)
		sense_len = cap - SRP_AER_REQ_LEN;
	memset(buf, 0, SRP_AER_REQ_LEN);
	buf[0] = SRP_IU_AER_REQ;
	buf[1] = sol_not & 1u;
	put_be32(&buf[4], delta);
	put_be64(&buf[8], tag);
	/* Bytes 16..19 reserved, LOGICAL UNIT NUMBER 20..27, SENSE DATA LIST LENGTH 28..31. */
	memcpy(&buf[20], lun, 8);
	put_be32(&buf[28], (uint32_t)sense_len);
	if (sense_len)
		memcpy(&buf[SRP_AER_REQ_LEN], sense, sense_len);
	return SRP_AER_REQ_LEN + sense_len;
}

int scsitgt__srp_aer_req_decode(const uint8_t *buf, size_t len, uint32_t *delta, uint64_t *tag,
				uint8_t lun[8], const uint8_t **sense, uint32_t *sense_len)
{
	uint32_t n;

	if (len < SRP_AER_REQ_LEN)
		return -EMSGSIZE;
	if (buf[0] != SRP_IU_AER_REQ)
		return -EPROTO;
	n = get_be32(&buf[28]);
	if (n > len - SRP_AER_REQ_LEN)
		return -EPROTO;
	*delta = get_be32(&buf[4]);
	*tag = get_be64(&buf[8]);
	memcpy(lun, &buf[20], 8);
	*sense = n ? &buf[SRP_AER_REQ_LEN] : NULL;
	*sense_len = n;
	return 0;
}

/* ---- task management (§5.7, Table 18) ---- */

int scsitgt__srp_tsk_mgmt_decode(const uint8_t *buf, size_t len, struct scsitgt__srp_tsk_mgmt *out)
{
	if (len < SRP_TSK_MGMT_LEN)
		return -EMSGSIZE;
	if (buf[0] != SRP_IU_TSK_MGMT)
		return -EPROTO;
	out->sol_not = buf[1];
	out->tag = get_be64(&buf[8]);
	memcpy(out->lun, &buf[20], 8);
	out->func = buf[30];
	out->task_tag = get_be64(&buf[32]);
	return 0;
}

void scsitgt__srp_tsk_mgmt_encode(uint8_t buf[SRP_TSK_MGMT_LEN],
				  const struct scsitgt__srp_tsk_mgmt *tm)
{
	memset(buf, 0, SRP_TSK_MGMT_LEN);
	buf[0] = SRP_IU_TSK_MGMT;
	buf[1] = tm->sol_not;
	put_be64(&buf[8], tm->tag);
	memcpy(&buf[20], tm->lun, 8);
	buf[30] = tm->func;
	put_be64(&buf[32], tm->task_tag);
}

/* ---- SRP_CMD (§5.6, Table 23) ---- */

enum {
	CMD_SOLNT = 1,
	CMD_BUF_FMT = 5,
	CMD_OUT_CNT = 6,
	CMD_IN_CNT = 7,
	CMD_TAG = 8,
	CMD_LUN = 20,
	CMD_ATTR = 29,
	CMD_ADD_CDB = 31,
	CMD_CDB = 32,
};

void scsitgt__srp_desc_get(const uint8_t *p, struct scsitgt__srp_desc *d)
{
	d->va = get_be64(p);
	d->key = get_be32(p + 8);
	d->len = get_be32(p + 12);
}

void scsitgt__srp_desc_put(uint8_t *p, const struct scsitgt__srp_desc *d)
{
	put_be64(p, d->va);
	put_be32(p + 8, d->key);
	put_be32(p + 12, d->len);
}

/*
 * One direction's descriptor at @off. @count is that direction's DESCRIPTOR COUNT. Advances
 * @off past what the IU holds. Returns 0 or -EPROTO / -EMSGSIZE.
 */
static int cmd_buf_decode(const uint8_t *buf, size_t len, size_t *off, uint8_t fmt, uint8_t count,
			  uint16_t imm_data_offset, struct scsitgt__srp_buf *b)
{
	size_t o = *off;

	memset(b, 0, sizeof(*b));
	b->fmt = fmt;
	switch (fmt) {
	case SRP_DESC_NONE:
		return 0;
	case SRP_DESC_DIRECT:
		if (len < o + SRP_DIRECT_DESC_LEN)
			return -EMSGSIZE;
		scsitgt__srp_desc_get(&buf[o], &b->desc);
		b->total_len = b->desc.len;
		*off = o + SRP_DIRECT_DESC_LEN;
		return 0;
	case SRP_DESC_INDIRECT:
		if (len < o + SRP_INDIRECT_HDR_LEN)
			return -EMSGSIZE;
		/* §5.6.2.3: table descriptor, TOTAL LENGTH, then the partial table. */
		scsitgt__srp_desc_get(&buf[o], &b->desc);
		b->total_len = get_be32(&buf[o + 16]);
		if (b->desc.len % SRP_DIRECT_DESC_LEN)
			return -EPROTO;
		b->n_total = b->desc.len / SRP_DIRECT_DESC_LEN;
		b->n_in_iu = count;
		/*
		 * More than SRP_MAX_DESCRIPTORS is a well-formed table this target cannot use:
		 * decoded all the same (the part in the IU is bounded by its length), so that
		 * only that command fails (srp_cmd.c), not the channel.
		 */
		if (b->n_total == 0 || b->n_in_iu > b->n_total)
			return -EPROTO;
		o += SRP_INDIRECT_HDR_LEN;
		if (len < o + (size_t)b->n_in_iu * SRP_DIRECT_DESC_LEN)
			return -EMSGSIZE;
		b->list = &buf[o];
		*off = o + (size_t)b->n_in_iu * SRP_DIRECT_DESC_LEN;
		return 0;
	case SRP_DESC_IMMEDIATE:
		if (imm_data_offset == 0)
			return -EPROTO;
		if (len < o + SRP_IMM_DESC_LEN || o + SRP_IMM_DESC_LEN > imm_data_offset)
			return -EMSGSIZE;
		b->total_len = get_be32(&buf[o]);
		if (imm_data_offset > len || b->total_len > len - imm_data_offset)
			return -EMSGSIZE;
		b->imm = &buf[imm_data_offset];
		*off = o + SRP_IMM_DESC_LEN;
		return 0;
	default:
		return -EPROTO;
	}
}

int scsitgt__srp_cmd_decode(const uint8_t *buf, size_t len, uint16_t imm_data_offset,
			    struct scsitgt__srp_cmd *out, uint32_t *tlo_reason)
{
	uint8_t out_fmt, in_fmt, add;
	size_t off;
	int rc;

	memset(out, 0, sizeof(*out));
	*tlo_reason = SRP_TLO_INVALID_IU_LEN;
	if (buf == NULL || len < SRP_CMD_LEN)
		return -EMSGSIZE;
	if (buf[0] != SRP_IU_CMD) {
		*tlo_reason = SRP_TLO_INVALID_IU_TYPE;
		return -EPROTO;
	}
	out->sol_not = buf[CMD_SOLNT];
	out->tag = get_be64(&buf[CMD_TAG]);
	memcpy(out->lun, &buf[CMD_LUN], 8);
	out->task_attr = buf[CMD_ATTR] & 0x07u;
	/* ADDITIONAL CDB LENGTH counts 4-byte words in bits 7..2. */
	add = buf[CMD_ADD_CDB] & 0xfcu;
	if (len < SRP_CMD_LEN + (size_t)add)
		return -EMSGSIZE;
	out->cdb = &buf[CMD_CDB];
	out->cdb_len = (uint16_t)(16u + add);
	out_fmt = buf[CMD_BUF_FMT] >> 4;
	in_fmt = buf[CMD_BUF_FMT] & 0x0fu;
	/* SRP-2 immediate data carries data-out only. */
	if (out_fmt > SRP_DESC_IMMEDIATE) {
		*tlo_reason = SRP_TLO_BAD_DATA_OUT_FMT;
		return -EPROTO;
	}
	if (in_fmt > SRP_DESC_INDIRECT) {
		*tlo_reason = SRP_TLO_BAD_DATA_IN_FMT;
		return -EPROTO;
	}
	/* §5.6.2: the data-out descriptor (table) precedes the data-in one. */
	off = SRP_CMD_LEN + add;
	rc = cmd_buf_decode(buf, len, &off, out_fmt, buf[CMD_OUT_CNT], imm_data_offset, &out->out);
	if (rc < 0) {
		*tlo_reason = rc == -EMSGSIZE ? SRP_TLO_INVALID_IU_LEN : SRP_TLO_BAD_DATA_OUT_FMT;
		return -EPROTO;
	}
	if (out_fmt == SRP_DESC_IMMEDIATE && in_fmt != SRP_DESC_NONE) {
		/* The data-in descriptor would overlap the immediate data. */
		*tlo_reason = SRP_TLO_BAD_DATA_IN_FMT;
		return -EPROTO;
	}
	rc = cmd_buf_decode(buf, len, &off, in_fmt, buf[CMD_IN_CNT], 0, &out->in);
	if (rc < 0) {
		*tlo_reason = rc == -EMSGSIZE ? SRP_TLO_INVALID_IU_LEN : SRP_TLO_BAD_DATA_IN_FMT;
		return -EPROTO;
	}
	*tlo_reason = 0;
	return 0;
}

static size_t spec_buf_put(uint8_t *buf, size_t cap, size_t off, uint8_t fmt,
			   const struct scsitgt__srp_cmd_spec *s, uint8_t *count)
{
	*count = 0;
	switch (fmt) {
	case SRP_DESC_NONE:
		return off;
	case SRP_DESC_DIRECT:
		if (off + SRP_DIRECT_DESC_LEN > cap || s->ndescs < 1)
			return 0;
		scsitgt__srp_desc_put(&buf[off], &s->descs[0]);
		*count = 1;
		return off + SRP_DIRECT_DESC_LEN;
	case SRP_DESC_INDIRECT:
		if (s->ndescs > 255 ||
		    off + SRP_INDIRECT_HDR_LEN + (size_t)s->ndescs * SRP_DIRECT_DESC_LEN > cap)
			return 0;
		scsitgt__srp_desc_put(&buf[off], &s->table);
		put_be32(&buf[off + 16], s->total_len);
		off += SRP_INDIRECT_HDR_LEN;
		for (uint32_t i = 0; i < s->ndescs; i++, off += SRP_DIRECT_DESC_LEN)
			scsitgt__srp_desc_put(&buf[off], &s->descs[i]);
		*count = (uint8_t)s->ndescs;
		return off;
	case SRP_DESC_IMMEDIATE:
		if (off + SRP_IMM_DESC_LEN > s->imm_data_offset ||
		    (size_t)s->imm_data_offset + s->imm_len > cap)
			return 0;
		put_be32(&buf[off], s->imm_len);
		if (s->imm_len)
			memcpy(&buf[s->imm_data_offset], s->imm, s->imm_len);
		*count = 1;
		return (size_t)s->imm_data_offset + s->imm_len;
	default:
		return 0;
	}
}

size_t scsitgt__srp_cmd_encode(uint8_t *buf, size_t cap, const struct scsitgt__srp_cmd_spec *s)
{
	size_t add = s->cdb_len > 16 ? s->cdb_len - 16u : 0, off;
	uint8_t cnt;

	if ((add & 3u) || add > 252 || cap < SRP_CMD_LEN + add)
		return 0;
	memset(buf, 0, SRP_CMD_LEN + add);
	buf[0] = SRP_IU_CMD;
	buf[CMD_SOLNT] = s->sol_not;
	buf[CMD_BUF_FMT] = (uint8_t)((s->out_fmt << 4) | (s->in_fmt & 0x0fu));
	put_be64(&buf[CMD_TAG], s->tag);
	memcpy(&buf[CMD_LUN], s->lun, 8);
	buf[CMD_ATTR] = s->task_attr & 0x07u;
	buf[CMD_ADD_CDB] = (uint8_t)add;
	memcpy(&buf[CMD_CDB], s->cdb, s->cdb_len < 16 ? s->cdb_len : 16u + add);
	off = SRP_CMD_LEN + add;
	off = spec_buf_put(buf, cap, off, s->out_fmt, s, &cnt);
	if (off == 0)
		return 0;
	buf[CMD_OUT_CNT] = cnt;
	if (s->out_fmt == SRP_DESC_NONE || s->in_fmt == SRP_DESC_NONE) {
		off = spec_buf_put(buf, cap, off, s->in_fmt, s, &cnt);
		if (off == 0)
			return 0;
		buf[CMD_IN_CNT] = cnt;
	}
	return off;
}

/* ---- SRP_RSP (§5.9, Table 26) ---- */

size_t scsitgt__srp_rsp_encode(uint8_t *buf, size_t cap, const struct scsitgt__srp_rsp *r)
{
	uint32_t sense_len = r->sense ? r->sense_len : 0;
	uint32_t resp_len = r->resp_data ? r->resp_len : 0;
	uint8_t flags = r->flags &
			(SRP_RSP_DOOVER | SRP_RSP_DOUNDER | SRP_RSP_DIOVER | SRP_RSP_DIUNDER);

	if (cap < SRP_RSP_LEN || resp_len > cap - SRP_RSP_LEN)
		return 0;
	/* The initiator's receive buffers hold max_ti_iu_len bytes: cut the sense data. */
	if (sense_len > cap - SRP_RSP_LEN - resp_len)
		sense_len = (uint32_t)(cap - SRP_RSP_LEN - resp_len);
	if (resp_len)
		flags |= SRP_RSP_RSPVALID;
	if (sense_len)
		flags |= SRP_RSP_SNSVALID;
	memset(buf, 0, SRP_RSP_LEN);
	buf[0] = SRP_IU_RSP;
	buf[1] = r->sol_not & 1u;
	put_be32(&buf[4], r->req_lim_delta);
	put_be64(&buf[8], r->tag);
	buf[18] = flags;
	buf[19] = r->status;
	put_be32(&buf[20], r->data_out_res);
	put_be32(&buf[24], r->data_in_res);
	put_be32(&buf[28], sense_len);
	put_be32(&buf[32], resp_len);
	if (resp_len)
		memcpy(&buf[SRP_RSP_LEN], r->resp_data, resp_len);
	if (sense_len)
		memcpy(&buf[SRP_RSP_LEN + resp_len], r->sense, sense_len);
	return SRP_RSP_LEN + resp_len + sense_len;
}

int scsitgt__srp_rsp_decode(const uint8_t *buf, size_t len, struct scsitgt__srp_rsp *out)
{
	uint32_t sl, rl;

	memset(out, 0, sizeof(*out));
	if (len < SRP_RSP_LEN)
		return -EMSGSIZE;
	if (buf[0] != SRP_IU_RSP)
		return -EPROTO;
	out->sol_not = buf[1];
	out->req_lim_delta = get_be32(&buf[4]);
	out->tag = get_be64(&buf[8]);
	out->flags = buf[18];
	out->status = buf[19];
	out->data_out_res = get_be32(&buf[20]);
	out->data_in_res = get_be32(&buf[24]);
	sl = (out->flags & SRP_RSP_SNSVALID) ? get_be32(&buf[28]) : 0;
	rl = (out->flags & SRP_RSP_RSPVALID) ? get_be32(&buf[32]) : 0;
	if (rl > len - SRP_RSP_LEN || sl > len - SRP_RSP_LEN - rl)
		return -EPROTO;
	out->resp_data = rl ? &buf[SRP_RSP_LEN] : NULL;
	out->resp_len = rl;
	out->sense = sl ? &buf[SRP_RSP_LEN + rl] : NULL;
	out->sense_len = sl;
	return 0;
}

/* ---- request limit (§5.5.2) ---- */

uint32_t scsitgt__srp_credits_init(struct scsitgt__srp_credits *c, uint32_t max)
{
	c->max = max;
	c->held = max;
	c->inflight = 0;
	c->owed = 0;
	return max;
}

int scsitgt__srp_credits_take(struct scsitgt__srp_credits *c)
{
	if (c->held == 0)
		return -EPROTO;
	c->held--;
	c->inflight++;
	return 0;
}

void scsitgt__srp_credits_finish(struct scsitgt__srp_credits *c)
{
	if (c->inflight == 0)
		return;
	c->inflight--;
	c->owed++;
}

uint32_t scsitgt__srp_credits_grant(struct scsitgt__srp_credits *c)
{
	uint32_t d = c->owed;

	c->owed = 0;
	c->held += d;
	return d;
}

uint32_t scsitgt__srp_residuals(struct scsitgt__srp_rsp *r, const struct scsitgt__srp_xfer *x)
{
	uint32_t send = x->in_have < x->in_buf ? x->in_have : x->in_buf;

	if (x->out_need > x->out_buf) {
		r->flags |= SRP_RSP_DOOVER;
		r->data_out_res = x->out_need - x->out_buf;
	} else if (x->out_done < x->out_buf) {
		r->flags |= SRP_RSP_DOUNDER;
		r->data_out_res = x->out_buf - x->out_done;
	}
	if (x->in_have > x->in_buf) {
		r->flags |= SRP_RSP_DIOVER;
		r->data_in_res = x->in_have - x->in_buf;
	} else if (send < x->in_buf) {
		r->flags |= SRP_RSP_DIUNDER;
		r->data_in_res = x->in_buf - send;
	}
	return send;
}
