/* SPDX-License-Identifier: MIT */
/*
 * iSER data mover (RFC 7145) for the iSCSI transport, over rdma_cm and verbs (rdma.h).
 *
 * A connection: CONNECT_REQUEST -> QP on the device's shared CQ, receive buffers posted, the
 * iSCSI connection created, rdma_accept() with the iSER CM REP private data (§9.1.2). Every
 * received SEND carries one iSCSI PDU behind the iSER header (§9.2); the PDU is fed to the
 * shared iSCSI receiver. The STags and base offsets a SCSI Command advertises are kept by ITT.
 *
 * Output (xmit): each PDU of a batch becomes
 *  - Data-In: an RDMA WRITE to the initiator's Read STag (the buffer of a SCSI read) at Read
 *    Base Offset + BufferOffset (§7.3.5); a status-carrying Data-In becomes a SCSI Response;
 *  - R2T: an RDMA READ from the Write STag (§7.3.6), queued behind the negotiated read depth
 *    (the initiator's responder resources); the data comes back to the iSCSI receiver as the
 *    Data-Out PDUs that R2T solicited;
 *  - anything else: a SEND of iSER header + BHS + data from the registered send pool.
 * WRITEs of a batch are posted in the same chain ahead of its SEND, so the RC ordering rule
 * places the data before the initiator sees the response. The batch is finished (its payload
 * released) when every WR of it completed.
 *
 * Teardown: rdma_disconnect() moves the QP to error, every posted WR completes (flushed);
 * when none is left the QP, id and buffers are destroyed and the iSCSI connection is told.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "libscsitgt/iscsi.h"
#include "transport/iscsi/conn.h"
#include "transport/iser/iser_proto.h"
#include "transport/rdma/rdma.h"
#include "util/be.h"

/* Our receive data segment limit: TargetRecvDataSegmentLength and MaxRecvDataSegmentLength. */
#define ISER_RECV_DSL 8192u
#define ISER_RECV_SLOT (SCSITGT__ISER_HDR_LEN + ISCSI_BHS_LEN + ISCSI_AHS_MAX + ISER_RECV_DSL + 4u)
/* Login responses carry up to 8192 bytes (RFC 7143 §6.2). */
#define ISER_SEND_SLOT (SCSITGT__ISER_HDR_LEN + ISCSI_BHS_LEN + 8192u)
#define ISER_NRECV 256u
#define ISER_NSEND 128u
#define ISER_SQ_DEPTH 512u
#define ISER_ITT_BUCKETS 256u
/* Commands with advertised STags tracked at once before we call it abuse. */
#define ISER_ITT_MAX 4096u

struct iser_portal;

struct iser_itt {
	struct iser_itt *next;
	uint32_t itt;
	bool wsv, rsv;
	bool sol_base_set;
	uint32_t sol_base; /* buffer offset of the first solicited byte (first R2T) */
	uint32_t write_stag, read_stag;
	uint64_t write_va, read_va;
};

struct iser_recv {
	struct scsitgt__rdma_wr w;
	struct iser_conn *ic;
	uint32_t idx;
};

struct iser_slot {
	struct scsitgt__rdma_wr w;
	struct iser_conn *ic;
	struct iser_txop *op;
	uint32_t idx;
};

/* What one batch became: its WRs, the MR over its Data-In payload. */
struct iser_txop {
	struct scsitgt__rdma_wr w; /* the WRITEs */
	struct iser_conn *ic;
	struct scsitgt__iscsi_tx *tx;
	struct ibv_mr *mr;
	unsigned int pending;
	int status;
};

struct iser_read {
	struct scsitgt__rdma_wr w;
	struct iser_read *next;
	struct iser_conn *ic;
	uint8_t lun[8];
	uint32_t itt, ttt, offset, len;
	uint32_t rkey;
	uint64_t raddr;
	uint8_t *buf;
	struct ibv_mr *mr;
};

struct iser_conn {
	struct scsitgt__rdma_cm_handler cmh;
	struct scsitgt__list node; /* ip->conns */
	struct iser_portal *ip;
	struct rdma_cm_id *id;
	struct scsitgt__rdma_dev *dev;
	struct scsitgt__iscsi_conn *conn;
	struct scsitgt__rdma_pool rxp, txp;
	struct iser_recv *recvs;
	struct iser_slot *slots;
	bool qp_created, pools, cq_reserved;
	bool connected, closing, dm_close;
	unsigned int posted; /* WRs not completed yet (receives + sends) */
	unsigned int busy;   /* handlers running: no freeing under them */
	unsigned int sq_free;
	unsigned int rd_depth, rd_busy;
	struct scsitgt__iscsi_tx *outq, **outq_tail;
	struct iser_read *rdq, **rdq_tail;
	struct iser_itt *itt[ISER_ITT_BUCKETS];
	unsigned int nitt;
};

struct iser_portal {
	struct scsitgt__rdma_cm_handler cmh;
	struct scsitgt_portal *portal;
	struct scsitgt__rdma_cm cm;
	struct rdma_cm_id *listen;
	struct scsitgt__list devs;
	struct scsitgt__list conns;
	unsigned int ndevs;
	bool stopping, cm_closed;
};

static void ic_check_drained(struct iser_conn *ic);
static void ic_pump(struct iser_conn *ic);
static void ic_pump_once(struct iser_conn *ic);

/* End of a handler: free when drained after a close, else post what became possible. */
static void ic_leave(struct iser_conn *ic)
{
	if (--ic->busy)
		return;
	if (ic->dm_close)
		ic_check_drained(ic);
	else
		ic_pump(ic);
}

/* ---- ITT table: the STags each SCSI Command advertised ---- */

static struct iser_itt **itt_slot(struct iser_conn *ic, uint32_t itt)
{
	struct iser_itt **pp = &ic->itt[(itt ^ (itt >> 8) ^ (itt >> 24)) % ISER_ITT_BUCKETS];

	while (*pp && (*pp)->itt != itt)
		pp = &(*pp)->next;
	return pp;
}

static int itt_set(struct iser_conn *ic, uint32_t itt, const struct scsitgt__iser_hdr *h)
{
	struct iser_itt **pp = itt_slot(ic, itt), *e = *pp;

	if (e == NULL) {
		if (ic->nitt >= ISER_ITT_MAX)
			return -ENOSPC;
		e = calloc(1, sizeof(*e));
		if (e == NULL)
			return -ENOMEM;
		e->itt = itt;
		*pp = e;
		ic->nitt++;
	}
	e->wsv = h->wsv;
	e->rsv = h->rsv;
	e->write_stag = h->write_stag;
	e->write_va = h->write_va;
	e->read_stag = h->read_stag;
	e->read_va = h->read_va;
	e->sol_base_set = false;
	return 0;
}

static void itt_drop(struct iser_conn *ic, uint32_t itt)
{
	struct iser_itt **pp = itt_slot(ic, itt), *e = *pp;

	if (e) {
		*pp = e->next;
		free(e);
		ic->nitt--;
	}
}

static void itt_clear(struct iser_conn *ic)
{
	for (unsigned int b = 0; b < ISER_ITT_BUCKETS; b++) {
		while (ic->itt[b]) {
			struct iser_itt *e = ic->itt[b];

			ic->itt[b] = e->next;
			free(e);
		}
	}
	ic->nitt = 0;
}

/* ---- receive ---- */

static int ic_post_recv(struct iser_conn *ic, uint32_t idx)
{
	struct ibv_recv_wr wr, *bad;
	struct ibv_sge sge;

	sge.addr = (uintptr_t)scsitgt__rdma_pool_buf(&ic->rxp, idx);
	sge.length = ic->rxp.buf_size;
	sge.lkey = ic->rxp.mr->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = (uintptr_t)&ic->recvs[idx].w;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	if (ibv_post_recv(ic->id->qp, &wr, &bad) != 0)
		return -EIO;
	ic->posted++;
	return 0;
}

static void ic_fail(struct iser_conn *ic, int err, const char *why)
{
	if (ic->conn == NULL || ic->dm_close)
		return;
	scsitgt__iscsi_conn_log(ic->conn, SCSITGT_LOG_WARNING, "iSER: %s", why);
	scsitgt__iscsi_conn_dm_error(ic->conn, err);
}

/* One received SEND: iSER header + one iSCSI PDU. */
static int ic_recv_pdu(struct iser_conn *ic, const uint8_t *buf, size_t len)
{
	static const uint8_t zeros[4];
	struct scsitgt__iser_hdr h;
	const uint8_t *pdu;
	uint32_t pad;
	long n;
	int rc;

	rc = scsitgt__iser_hdr_decode(buf, len, &h);
	if (rc < 0)
		return rc;
	/* §5.1.3: Hello messages are iWARP-only; an IB/RoCE peer must not send them. */
	if (h.opcode != SCSITGT__ISER_OP_ISCSI)
		return -EPROTO;
	pdu = buf + SCSITGT__ISER_HDR_LEN;
	n = scsitgt__iser_pdu_span(pdu, len - SCSITGT__ISER_HDR_LEN, &pad);
	if (n < 0)
		return (int)n;
	if (scsitgt__bhs_opcode(pdu) == ISCSI_OP_SCSI_CMD && (h.wsv || h.rsv)) {
		rc = itt_set(ic, scsitgt__bhs_itt(pdu), &h);
		if (rc < 0)
			return rc;
	}
	rc = scsitgt__iscsi_conn_recv(ic->conn, pdu, (size_t)n);
	if (rc >= 0 && pad)
		rc = scsitgt__iscsi_conn_recv(ic->conn, zeros, pad);
	return rc < 0 ? rc : 0;
}

static void ic_recv_done(struct scsitgt__rdma_wr *w, const struct ibv_wc *wc)
{
	struct iser_recv *r = scsitgt__container_of(w, struct iser_recv, w);
	struct iser_conn *ic = r->ic;
	int rc;

	ic->posted--;
	ic->busy++;
	if (wc->status != IBV_WC_SUCCESS || ic->dm_close) {
		if (wc->status != IBV_WC_WR_FLUSH_ERR && wc->status != IBV_WC_SUCCESS)
			ic_fail(ic, -EIO, ibv_wc_status_str(wc->status));
		ic_leave(ic);
		return;
	}
	rc = ic_recv_pdu(ic, scsitgt__rdma_pool_buf(&ic->rxp, r->idx), wc->byte_len);
	if (rc < 0)
		ic_fail(ic, rc, "malformed SEND from the initiator");
	else if (!ic->dm_close && ic_post_recv(ic, r->idx) < 0)
		ic_fail(ic, -EIO, "cannot repost a receive buffer");
	ic_leave(ic);
}

/* ---- RDMA READ for R2T-solicited data ---- */

static void rd_free(struct iser_read *rd)
{
	if (rd->mr)
		ibv_dereg_mr(rd->mr);
	free(rd->buf);
	free(rd);
}

/* Hand the read data to the iSCSI receiver as the Data-Out PDUs of the R2T. */
static int rd_deliver(struct iser_conn *ic, struct iser_read *rd)
{
	struct scsitgt__iscsi_conn *conn = ic->conn;
	uint32_t seg = conn->rx.max_dsl ? conn->rx.max_dsl : 8192u;
	uint32_t off = 0, datasn = 0;
	static const uint8_t zeros[4];

	while (off < rd->len) {
		uint8_t bhs[ISCSI_BHS_LEN];
		uint32_t n = rd->len - off < seg ? rd->len - off : seg;
		int rc;

		scsitgt__bhs_init(bhs, ISCSI_OP_DATA_OUT, off + n == rd->len ? ISCSI_FLAG_FINAL : 0);
		scsitgt__bhs_set_dsl(bhs, n);
		memcpy(&bhs[ISCSI_BHS_LUN], rd->lun, 8);
		put_be32(&bhs[ISCSI_BHS_ITT], rd->itt);
		put_be32(&bhs[ISCSI_BHS_TTT], rd->ttt);
		put_be32(&bhs[ISCSI_BHS_EXPSTATSN], conn->stat_sn);
		put_be32(&bhs[ISCSI_BHS_DATASN], datasn++);
		put_be32(&bhs[ISCSI_BHS_BUFFER_OFFSET], rd->offset + off);
		rc = scsitgt__iscsi_conn_recv(conn, bhs, sizeof(bhs));
		if (rc >= 0)
			rc = scsitgt__iscsi_conn_recv(conn, rd->buf + off, n);
		if (rc >= 0 && scsitgt__iscsi_pad(n))
			rc = scsitgt__iscsi_conn_recv(conn, zeros, scsitgt__iscsi_pad(n));
		if (rc < 0)
			return rc;
		off += n;
	}
	return 0;
}

static void rd_done(struct scsitgt__rdma_wr *w, const struct ibv_wc *wc)
{
	struct iser_read *rd = scsitgt__container_of(w, struct iser_read, w);
	struct iser_conn *ic = rd->ic;

	ic->posted--;
	ic->sq_free++;
	ic->rd_busy--;
	ic->busy++;
	if (wc->status == IBV_WC_SUCCESS && !ic->dm_close) {
		if (rd_deliver(ic, rd) < 0 && !ic->dm_close)
			ic_fail(ic, -EPROTO, "solicited data rejected");
	} else if (wc->status != IBV_WC_WR_FLUSH_ERR && wc->status != IBV_WC_SUCCESS) {
		ic_fail(ic, -EIO, ibv_wc_status_str(wc->status));
	}
	rd_free(rd);
	ic_leave(ic);
}

static int rd_post(struct iser_conn *ic, struct iser_read *rd)
{
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;

	rd->buf = malloc(rd->len ? rd->len : 1);
	if (rd->buf == NULL)
		return -ENOMEM;
	rd->mr = ibv_reg_mr(ic->dev->pd, rd->buf, rd->len ? rd->len : 1, IBV_ACCESS_LOCAL_WRITE);
	if (rd->mr == NULL)
		return -ENOMEM;
	sge.addr = (uintptr_t)rd->buf;
	sge.length = rd->len;
	sge.lkey = rd->mr->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = (uintptr_t)&rd->w;
	wr.opcode = IBV_WR_RDMA_READ;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.rdma.remote_addr = rd->raddr;
	wr.wr.rdma.rkey = rd->rkey;
	if (ibv_post_send(ic->id->qp, &wr, &bad) != 0)
		return -EIO;
	ic->posted++;
	ic->sq_free--;
	ic->rd_busy++;
	return 0;
}

/* ---- transmit ---- */

static void txop_finish(struct iser_txop *op)
{
	struct iser_conn *ic = op->ic;

	if (--op->pending)
		return;
	if (op->mr)
		ibv_dereg_mr(op->mr);
	scsitgt__iscsi_conn_tx_complete(ic->conn, op->tx, op->status);
	free(op);
}

static void txop_write_done(struct scsitgt__rdma_wr *w, const struct ibv_wc *wc)
{
	struct iser_txop *op = scsitgt__container_of(w, struct iser_txop, w);
	struct iser_conn *ic = op->ic;

	ic->posted--;
	ic->sq_free++;
	ic->busy++;
	if (wc->status != IBV_WC_SUCCESS) {
		op->status = -EIO;
		if (wc->status != IBV_WC_WR_FLUSH_ERR)
			ic_fail(ic, -EIO, ibv_wc_status_str(wc->status));
	}
	txop_finish(op);
	ic_leave(ic);
}

static void slot_done(struct scsitgt__rdma_wr *w, const struct ibv_wc *wc)
{
	struct iser_slot *s = scsitgt__container_of(w, struct iser_slot, w);
	struct iser_conn *ic = s->ic;
	struct iser_txop *op = s->op;

	ic->posted--;
	ic->sq_free++;
	ic->busy++;
	s->op = NULL;
	scsitgt__rdma_pool_put(&ic->txp, s->idx);
	if (wc->status != IBV_WC_SUCCESS) {
		op->status = -EIO;
		if (wc->status != IBV_WC_WR_FLUSH_ERR)
			ic_fail(ic, -EIO, ibv_wc_status_str(wc->status));
	}
	txop_finish(op);
	ic_leave(ic);
}

/* Turn a status-carrying Data-In into the SCSI Response iSER requires (RFC 7145 §7.3.5). */
static void datain_to_response(uint8_t *bhs, uint32_t datasn)
{
	uint8_t flags = bhs[ISCSI_BHS_FLAGS];
	uint8_t status = bhs[ISCSI_DATAIN_STATUS];
	uint32_t resid = get_be32(&bhs[ISCSI_BHS_RESIDUAL]);
	uint8_t sn[12];

	memcpy(sn, &bhs[ISCSI_BHS_STATSN], 12); /* StatSN, ExpCmdSN, MaxCmdSN */
	uint32_t itt = get_be32(&bhs[ISCSI_BHS_ITT]);

	/* Data-In O/U bits (0x04/0x02) sit where the SCSI Response keeps them. */
	scsitgt__bhs_init(bhs, ISCSI_OP_SCSI_RSP, ISCSI_FLAG_FINAL | (flags & 0x06u));
	bhs[ISCSI_RSP_RESPONSE] = ISCSI_RSP_COMPLETED;
	bhs[ISCSI_RSP_STATUS] = status;
	put_be32(&bhs[ISCSI_BHS_ITT], itt);
	memcpy(&bhs[ISCSI_BHS_STATSN], sn, 12);
	put_be32(&bhs[ISCSI_BHS_DATASN], datasn); /* ExpDataSN */
	put_be32(&bhs[ISCSI_BHS_RESIDUAL], resid);
}

/* Resources a batch needs: SEND slots and SQ entries. */
static void tx_needs(const struct scsitgt__iscsi_tx *tx, unsigned int *sends, unsigned int *wrs)
{
	*sends = 0;
	*wrs = 0;
	for (unsigned int i = 0; i < tx->npdus; i++) {
		const uint8_t *bhs = tx->pdus[i].hdr;
		uint8_t op = scsitgt__bhs_opcode(bhs);

		if (op == ISCSI_OP_R2T)
			continue;
		if (op == ISCSI_OP_DATA_IN) {
			(*wrs)++;
			if (bhs[ISCSI_BHS_FLAGS] & ISCSI_DATAIN_FLAG_STATUS) {
				(*sends)++;
				(*wrs)++;
			}
			continue;
		}
		(*sends)++;
		(*wrs)++;
	}
}

/* Queue the RDMA READ an R2T asks for. */
static int tx_r2t(struct iser_conn *ic, const uint8_t *bhs)
{
	uint32_t itt = scsitgt__bhs_itt(bhs);
	struct iser_itt *e = *itt_slot(ic, itt);
	struct iser_read *rd;
	uint32_t off = get_be32(&bhs[ISCSI_BHS_BUFFER_OFFSET]);

	if (e == NULL || !e->wsv)
		return -EPROTO; /* a write without a Write STag cannot be solicited */
	if (!e->sol_base_set) {
		/* Linux ib_iser advertises write_va at the first solicited byte. */
		e->sol_base = off;
		e->sol_base_set = true;
	}
	if (off < e->sol_base)
		return -EPROTO;
	rd = calloc(1, sizeof(*rd));
	if (rd == NULL)
		return -ENOMEM;
	rd->w.done = rd_done;
	rd->ic = ic;
	memcpy(rd->lun, &bhs[ISCSI_BHS_LUN], 8);
	rd->itt = itt;
	rd->ttt = get_be32(&bhs[ISCSI_BHS_TTT]);
	rd->offset = off;
	rd->len = get_be32(&bhs[ISCSI_R2T_DESIRED_LEN]);
	rd->rkey = e->write_stag;
	rd->raddr = e->write_va + (off - e->sol_base);
	*ic->rdq_tail = rd;
	ic->rdq_tail = &rd->next;
	return 0;
}

/* Post one batch; -EAGAIN when the send pool or SQ lacks room (it stays queued). */
static int tx_post(struct iser_conn *ic, struct scsitgt__iscsi_tx *tx)
{
	unsigned int sends, wrs, nwr = 0, nsge = 0;
	struct ibv_send_wr *wr, *bad;
	struct ibv_sge *sge;
	struct iser_txop *op;
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	uint32_t datasn = 0;
	int rc = 0;

	tx_needs(tx, &sends, &wrs);
	if (wrs > ISER_SQ_DEPTH || sends > ISER_NSEND)
		return -E2BIG;
	if (sends > ic->txp.nfree || wrs > ic->sq_free)
		return -EAGAIN;
	op = calloc(1, sizeof(*op) + wrs * (sizeof(*wr) + sizeof(*sge)) + 1);
	if (op == NULL)
		return -ENOMEM;
	wr = (struct ibv_send_wr *)(op + 1);
	sge = (struct ibv_sge *)(wr + wrs);
	op->w.done = txop_write_done;
	op->ic = ic;
	op->tx = tx;
	op->pending = 1; /* dropped at the end of this function */

	/* One MR over the span of Data-In payload (one command buffer). */
	for (unsigned int i = 0; i < tx->npdus; i++) {
		const struct scsitgt__iscsi_tx_pdu *p = &tx->pdus[i];

		if (scsitgt__bhs_opcode(p->hdr) == ISCSI_OP_DATA_IN && p->len) {
			if ((uintptr_t)p->data < lo)
				lo = (uintptr_t)p->data;
			if ((uintptr_t)p->data + p->len > hi)
				hi = (uintptr_t)p->data + p->len;
		}
	}
	if (hi > lo) {
		op->mr = ibv_reg_mr(ic->dev->pd, (void *)lo, hi - lo, 0);
		if (op->mr == NULL) {
			free(op);
			return -ENOMEM;
		}
	}
	for (unsigned int i = 0; i < tx->npdus && rc == 0; i++) {
		struct scsitgt__iscsi_tx_pdu *p = &tx->pdus[i];
		uint8_t *bhs = p->hdr;
		uint8_t opc = scsitgt__bhs_opcode(bhs);
		uint32_t itt = scsitgt__bhs_itt(bhs);
		struct scsitgt__iser_hdr ih;
		uint8_t *buf;
		int idx;

		if (opc == ISCSI_OP_R2T) {
			rc = tx_r2t(ic, bhs);
			continue;
		}
		if (opc == ISCSI_OP_DATA_IN) {
			struct iser_itt *e = *itt_slot(ic, itt);
			uint32_t off = get_be32(&bhs[ISCSI_BHS_BUFFER_OFFSET]);

			if (e == NULL || !e->rsv) {
				rc = -EPROTO;
				break;
			}
			datasn = get_be32(&bhs[ISCSI_BHS_DATASN]) + 1;
			if (p->len) {
				struct ibv_send_wr *prev = nwr ? &wr[nwr - 1] : NULL;

				/* Contiguous with the previous WRITE: extend it. */
				if (prev && prev->opcode == IBV_WR_RDMA_WRITE &&
				    prev->sg_list->addr + prev->sg_list->length == (uintptr_t)p->data &&
				    prev->wr.rdma.remote_addr + prev->sg_list->length ==
					    e->read_va + off) {
					prev->sg_list->length += p->len;
				} else {
					struct ibv_send_wr *w = &wr[nwr++];

					sge[nsge].addr = (uintptr_t)p->data;
					sge[nsge].length = p->len;
					sge[nsge].lkey = op->mr->lkey;
					memset(w, 0, sizeof(*w));
					w->wr_id = (uintptr_t)&op->w;
					w->opcode = IBV_WR_RDMA_WRITE;
					w->sg_list = &sge[nsge++];
					w->num_sge = 1;
					w->wr.rdma.remote_addr = e->read_va + off;
					w->wr.rdma.rkey = e->read_stag;
					op->pending++;
				}
			}
			if (!(bhs[ISCSI_BHS_FLAGS] & ISCSI_DATAIN_FLAG_STATUS))
				continue;
			datain_to_response(bhs, datasn);
			p->data = NULL;
			p->len = 0;
			opc = ISCSI_OP_SCSI_RSP;
		}
		if (opc == ISCSI_OP_SCSI_RSP)
			itt_drop(ic, itt);
		if (p->len > ISER_SEND_SLOT - SCSITGT__ISER_HDR_LEN - ISCSI_BHS_LEN) {
			rc = -EMSGSIZE;
			break;
		}
		idx = scsitgt__rdma_pool_get(&ic->txp);
		if (idx < 0) {
			rc = idx;
			break;
		}
		buf = scsitgt__rdma_pool_buf(&ic->txp, (uint32_t)idx);
		memset(&ih, 0, sizeof(ih));
		scsitgt__iser_hdr_encode(buf, &ih);
		memcpy(buf + SCSITGT__ISER_HDR_LEN, bhs, ISCSI_BHS_LEN);
		scsitgt__bhs_set_dsl(buf + SCSITGT__ISER_HDR_LEN, p->len);
		if (p->len)
			memcpy(buf + SCSITGT__ISER_HDR_LEN + ISCSI_BHS_LEN, p->data, p->len);
		ic->slots[idx].op = op;
		sge[nsge].addr = (uintptr_t)buf;
		sge[nsge].length = SCSITGT__ISER_HDR_LEN + ISCSI_BHS_LEN + p->len;
		sge[nsge].lkey = ic->txp.mr->lkey;
		memset(&wr[nwr], 0, sizeof(wr[nwr]));
		wr[nwr].wr_id = (uintptr_t)&ic->slots[idx].w;
		wr[nwr].opcode = IBV_WR_SEND;
		wr[nwr].sg_list = &sge[nsge++];
		wr[nwr].num_sge = 1;
		nwr++;
		op->pending++;
	}
	if (rc == 0 && nwr) {
		for (unsigned int i = 0; i + 1 < nwr; i++)
			wr[i].next = &wr[i + 1];
		if (ibv_post_send(ic->id->qp, wr, &bad) != 0)
			rc = -EIO;
		else {
			ic->posted += nwr;
			ic->sq_free -= nwr;
		}
	}
	if (rc < 0) {
		/* Nothing of the chain was posted: give slots back. */
		for (unsigned int i = 0; i < nwr; i++) {
			if (wr[i].opcode == IBV_WR_SEND) {
				struct iser_slot *s = (struct iser_slot *)(uintptr_t)wr[i].wr_id;

				s->op = NULL;
				scsitgt__rdma_pool_put(&ic->txp, s->idx);
			}
		}
		op->pending = 1;
		op->status = rc;
	}
	txop_finish(op);
	return rc;
}

/* Post what resources allow: queued batches in order, then RDMA READs within the depth. */
static void ic_pump(struct iser_conn *ic)
{
	ic->busy++;
	ic_pump_once(ic);
	if (--ic->busy == 0 && ic->dm_close)
		ic_check_drained(ic);
}

static void ic_pump_once(struct iser_conn *ic)
{
	while (ic->outq && !ic->dm_close) {
		struct scsitgt__iscsi_tx *tx = ic->outq;
		int rc;

		ic->outq = tx->next;
		if (ic->outq == NULL)
			ic->outq_tail = &ic->outq;
		tx->next = NULL;
		rc = tx_post(ic, tx);
		if (rc == -EAGAIN) {
			tx->next = ic->outq;
			ic->outq = tx;
			if (ic->outq_tail == &ic->outq)
				ic->outq_tail = &tx->next;
			break;
		}
		if (rc < 0) {
			scsitgt__iscsi_conn_log(ic->conn, SCSITGT_LOG_WARNING,
					"iSER: cannot send %s: %s",
					scsitgt__iscsi_opcode_name(scsitgt__bhs_opcode(tx->pdus[0].hdr)),
					scsitgt_strerror(rc));
		ic_fail(ic, rc, "cannot post a send");
			return;
		}
	}
	while (ic->rdq && !ic->dm_close && ic->rd_busy < ic->rd_depth && ic->sq_free > 0) {
		struct iser_read *rd = ic->rdq;
		int rc;

		ic->rdq = rd->next;
		if (ic->rdq == NULL)
			ic->rdq_tail = &ic->rdq;
		rc = rd_post(ic, rd);
		if (rc < 0) {
			rd_free(rd);
			ic_fail(ic, rc, "cannot post an RDMA READ");
			return;
		}
	}
}

static void iser_xmit(struct scsitgt__iscsi_conn *conn, struct scsitgt__iscsi_tx *tx)
{
	struct iser_conn *ic = conn->dm_ctx;

	tx->next = NULL;
	if (ic->dm_close) {
		scsitgt__iscsi_conn_tx_complete(conn, tx, -ECANCELED);
		return;
	}
	*ic->outq_tail = tx;
	ic->outq_tail = &tx->next;
	ic->busy++;
	ic_leave(ic);
}

/* ---- teardown ---- */

static void ic_free(struct iser_conn *ic);

static void ic_check_drained(struct iser_conn *ic)
{
	if (!ic->dm_close || ic->posted || ic->busy)
		return;
	ic_free(ic);
}

static void ip_check_done(struct iser_portal *ip);

static void ic_free(struct iser_conn *ic)
{
	struct iser_portal *ip = ic->ip;
	struct scsitgt__iscsi_conn *conn = ic->conn;

	if (ic->qp_created)
		rdma_destroy_qp(ic->id);
	if (ic->id)
		rdma_destroy_id(ic->id);
	if (ic->pools) {
		scsitgt__rdma_pool_destroy(&ic->rxp);
		scsitgt__rdma_pool_destroy(&ic->txp);
	}
	if (ic->cq_reserved)
		scsitgt__rdma_dev_unreserve(ic->dev, ISER_NRECV + ISER_SQ_DEPTH);
	if (ic->dev)
		scsitgt__rdma_dev_put(ic->dev);
	itt_clear(ic);
	free(ic->recvs);
	free(ic->slots);
	scsitgt__list_remove(&ic->node);
	free(ic);
	if (conn)
		scsitgt__iscsi_conn_dm_closed(conn);
	ip_check_done(ip);
}

static void iser_close(struct scsitgt__iscsi_conn *conn)
{
	struct iser_conn *ic = conn->dm_ctx;
	struct scsitgt__iscsi_tx *tx;

	if (ic->dm_close)
		return;
	ic->dm_close = true;
	while ((tx = ic->outq) != NULL) {
		ic->outq = tx->next;
		tx->next = NULL;
		scsitgt__iscsi_conn_tx_complete(conn, tx, -ECANCELED);
	}
	ic->outq_tail = &ic->outq;
	while (ic->rdq) {
		struct iser_read *rd = ic->rdq;

		ic->rdq = rd->next;
		rd_free(rd);
	}
	ic->rdq_tail = &ic->rdq;
	/* The QP goes to error: every posted WR completes as flushed. */
	if (!ic->connected || rdma_disconnect(ic->id) != 0) {
		struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};

		if (ic->qp_created)
			ibv_modify_qp(ic->id->qp, &a, IBV_QP_STATE);
	}
	ic_check_drained(ic);
}

static const struct scsitgt__iscsi_dm_ops iser_dm_ops = {
	.name = "iser",
	.xmit = iser_xmit,
	.close = iser_close,
	.rdma = true,
	.max_recv_dsl = ISER_RECV_DSL,
};

/* ---- connection setup ---- */

static void ic_cm_event(struct scsitgt__rdma_cm_handler *h, const struct scsitgt__rdma_cm_event *ev)
{
	struct iser_conn *ic = scsitgt__container_of(h, struct iser_conn, cmh);

	if (ic->conn)
		scsitgt__iscsi_conn_log(ic->conn, SCSITGT_LOG_DEBUG, "iSER: rdma_cm %s (status %d)",
					scsitgt__rdma_cm_event_name(ev->type), ev->status);
	switch (ev->type) {
	case RDMA_CM_EVENT_ESTABLISHED:
		ic->connected = true;
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_ADDR_CHANGE:
		if (ev->type == RDMA_CM_EVENT_DISCONNECTED)
			ic->connected = false;
		if (!ic->dm_close && ic->conn)
			scsitgt__iscsi_conn_dm_error(ic->conn, -ECONNRESET);
		break;
	default:
		break; /* TIMEWAIT_EXIT: nothing left to wait for, the QP is drained by counts */
	}
}

static int ic_setup(struct iser_conn *ic, const struct scsitgt__rdma_cm_event *ev)
{
	struct iser_portal *ip = ic->ip;
	struct scsitgt_portal *portal = ip->portal;
	struct scsitgt__iser_cm req;
	struct rdma_conn_param cp;
	uint8_t rep[SCSITGT__ISER_CM_LEN];
	int rc;

	rc = scsitgt__iser_cm_req_decode(ev->conn.private_data, ev->conn.private_data_len, &req);
	if (rc < 0)
		return rc;
	rc = scsitgt__rdma_dev_get(&ic->dev, &ip->devs, portal->ie->engine->loop, ic->id->verbs,
				   NULL, NULL);
	if (rc < 0)
		return rc;
	ip->ndevs = 0; /* recomputed at stop */
	rc = scsitgt__rdma_dev_reserve(ic->dev, ISER_NRECV + ISER_SQ_DEPTH);
	if (rc < 0)
		return rc;
	ic->cq_reserved = true;
	rc = scsitgt__rdma_qp_create(ic->id, ic->dev, ISER_SQ_DEPTH, ISER_NRECV, 2);
	if (rc < 0)
		return rc;
	ic->qp_created = true;
	rc = scsitgt__rdma_pool_init(&ic->rxp, ic->dev->pd, ISER_NRECV, ISER_RECV_SLOT,
				     IBV_ACCESS_LOCAL_WRITE);
	if (rc == 0) {
		rc = scsitgt__rdma_pool_init(&ic->txp, ic->dev->pd, ISER_NSEND, ISER_SEND_SLOT, 0);
		if (rc < 0)
			scsitgt__rdma_pool_destroy(&ic->rxp);
	}
	if (rc < 0)
		return rc;
	ic->pools = true;
	ic->recvs = calloc(ISER_NRECV, sizeof(*ic->recvs));
	ic->slots = calloc(ISER_NSEND, sizeof(*ic->slots));
	if (ic->recvs == NULL || ic->slots == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < ISER_NSEND; i++) {
		ic->slots[i].w.done = slot_done;
		ic->slots[i].ic = ic;
		ic->slots[i].idx = i;
	}
	/* RFC 7145 §5.1.3: receive buffers are posted before the connection is accepted. */
	for (uint32_t i = 0; i < ISER_NRECV; i++) {
		ic->recvs[i].w.done = ic_recv_done;
		ic->recvs[i].ic = ic;
		ic->recvs[i].idx = i;
		rc = ic_post_recv(ic, i);
		if (rc < 0)
			return rc;
	}
	ic->sq_free = ISER_SQ_DEPTH;
	/* Our RDMA READ depth: what the initiator grants as responder, within the device. */
	ic->rd_depth = ev->conn.responder_resources;
	if (ic->rd_depth > (unsigned int)ic->dev->attr.max_qp_init_rd_atom)
		ic->rd_depth = (unsigned int)ic->dev->attr.max_qp_init_rd_atom;
	if (ic->rd_depth == 0)
		ic->rd_depth = 1;
	rc = scsitgt__iscsi_conn_create(&ic->conn, portal, &iser_dm_ops, ic,
					rdma_get_peer_addr(ic->id), rdma_get_local_addr(ic->id));
	if (rc < 0)
		return rc;
	scsitgt__iser_cm_rep_encode(rep);
	memset(&cp, 0, sizeof(cp));
	cp.private_data = rep;
	cp.private_data_len = sizeof(rep);
	cp.responder_resources = ev->conn.initiator_depth;
	if (cp.responder_resources > ic->dev->attr.max_qp_rd_atom)
		cp.responder_resources = (uint8_t)ic->dev->attr.max_qp_rd_atom;
	cp.initiator_depth = (uint8_t)ic->rd_depth;
	cp.rnr_retry_count = 7;
	cp.flow_control = 1;
	if (rdma_accept(ic->id, &cp) != 0) {
		/* The iSCSI connection exists: it closes us through iser_close. */
		scsitgt__iscsi_conn_close(ic->conn, "rdma_accept failed");
		return 1;
	}
	scsitgt__iscsi_conn_log(ic->conn, SCSITGT_LOG_DEBUG,
				"iSER connection accepted (read depth %u, ZBVA %s)", ic->rd_depth,
				req.zbva_not_sup ? "not supported" : "supported");
	return 0;
}

static void ip_connect_request(struct iser_portal *ip, const struct scsitgt__rdma_cm_event *ev)
{
	struct iser_conn *ic;
	int rc;

	if (ip->stopping || ip->portal->closing) {
		rdma_reject(ev->id, NULL, 0);
		rdma_destroy_id(ev->id);
		return;
	}
	ic = calloc(1, sizeof(*ic));
	if (ic == NULL) {
		rdma_reject(ev->id, NULL, 0);
		rdma_destroy_id(ev->id);
		return;
	}
	ic->cmh.event = ic_cm_event;
	ic->ip = ip;
	ic->id = ev->id;
	ic->id->context = &ic->cmh;
	ic->outq_tail = &ic->outq;
	ic->rdq_tail = &ic->rdq;
	scsitgt__list_add_tail(&ip->conns, &ic->node);
	rc = ic_setup(ic, ev);
	if (rc == 0 || rc == 1)
		return;
	scsitgt__log(&ip->portal->ie->engine->log, SCSITGT_LOG_WARNING, SCSITGT__ISCSI_SUBSYS,
		     "iSER portal %s:%u: cannot accept a connection: %s", ip->portal->address,
		     ip->portal->port, scsitgt_strerror(rc));
	rdma_reject(ic->id, NULL, 0);
	if (ic->conn) {
		scsitgt__iscsi_conn_close(ic->conn, "iSER setup failed");
		return;
	}
	/* Drain the receives we posted before freeing. */
	ic->dm_close = true;
	if (ic->qp_created && ic->posted) {
		struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};

		ibv_modify_qp(ic->id->qp, &a, IBV_QP_STATE);
	}
	ic_check_drained(ic);
}

static void ip_cm_event(struct scsitgt__rdma_cm_handler *h, const struct scsitgt__rdma_cm_event *ev)
{
	struct iser_portal *ip = scsitgt__container_of(h, struct iser_portal, cmh);

	if (ev->type == RDMA_CM_EVENT_CONNECT_REQUEST) {
		/* The new id inherited the listener's context: it is ours until ic_setup. */
		ip_connect_request(ip, ev);
		return;
	}
	scsitgt__log(&ip->portal->ie->engine->log, SCSITGT_LOG_DEBUG, SCSITGT__ISCSI_SUBSYS,
		     "iSER portal: %s", scsitgt__rdma_cm_event_name(ev->type));
}

/* ---- portal ---- */

static void ip_cm_closed(struct scsitgt__rdma_cm *cm)
{
	struct iser_portal *ip = cm->data;
	struct scsitgt_portal *portal = ip->portal;

	ip->cm_closed = true;
	portal->listener_ctx = NULL;
	free(ip);
	scsitgt__iscsi_portal_listener_gone(portal);
}

static void ip_check_done(struct iser_portal *ip)
{
	if (!ip->stopping || !scsitgt__list_empty(&ip->conns) || ip->cm.ch == NULL ||
	    ip->cm.closed)
		return;
	/* Devices close on their own once their last connection released them. */
	scsitgt__rdma_cm_close(&ip->cm, ip_cm_closed);
}

static void ip_stop(struct scsitgt_portal *portal)
{
	struct iser_portal *ip = portal->listener_ctx;

	ip->stopping = true;
	if (ip->listen) {
		rdma_destroy_id(ip->listen);
		ip->listen = NULL;
	}
	ip_check_done(ip);
}

static void ip_failed_cm_closed(struct scsitgt__rdma_cm *cm)
{
	struct iser_portal *ip = cm->data;

	free(ip->portal);
	free(ip);
}

SCSITGT_EXPORT int scsitgt_iser_portal_create(struct scsitgt_portal **out,
					      struct scsitgt_engine *engine,
					      const struct scsitgt_portal_opts *opts)
{
	struct scsitgt_portal_opts o;
	struct scsitgt__iscsi_engine *ie;
	struct scsitgt_portal *portal;
	struct iser_portal *ip;
	struct sockaddr_storage sa;
	int rc;

	if (out == NULL || engine == NULL || engine->destroying)
		return -EINVAL;
	rc = scsitgt__iscsi_portal_opts_check(&o, &sa, opts);
	if (rc < 0)
		return rc;
	ie = scsitgt__iscsi_engine_get(engine);
	if (ie == NULL)
		return -ENOMEM;
	portal = calloc(1, sizeof(*portal));
	ip = calloc(1, sizeof(*ip));
	if (portal == NULL || ip == NULL) {
		free(portal);
		free(ip);
		return -ENOMEM;
	}
	portal->ie = ie;
	portal->tpgt = o.tpgt;
	portal->ipv6 = sa.ss_family == AF_INET6;
	snprintf(portal->address, sizeof(portal->address), "%s", o.address);
	portal->wildcard = strcmp(o.address, "0.0.0.0") == 0 || strcmp(o.address, "::") == 0;
	portal->stop_listener = ip_stop;
	portal->listener_ctx = ip;
	ip->portal = portal;
	ip->cmh.event = ip_cm_event;
	ip->cm.data = ip;
	scsitgt__list_init(&ip->devs);
	scsitgt__list_init(&ip->conns);
	rc = scsitgt__rdma_cm_open(&ip->cm, engine->loop);
	if (rc < 0) {
		free(portal);
		free(ip);
		return rc == -ENOENT ? -ENODEV : rc;
	}
	if (rdma_create_id(ip->cm.ch, &ip->listen, &ip->cmh, RDMA_PS_TCP) != 0)
		rc = errno ? -errno : -ENODEV;
	else if (rdma_bind_addr(ip->listen, (struct sockaddr *)&sa) != 0)
		rc = errno ? -errno : -EADDRNOTAVAIL;
	else if (ip->listen->verbs == NULL && !portal->wildcard)
		rc = -ENODEV; /* the address is not on an RDMA device */
	else if (rdma_listen(ip->listen, o.backlog) != 0)
		rc = errno ? -errno : -EIO;
	if (rc < 0) {
		if (ip->listen)
			rdma_destroy_id(ip->listen);
		ip->listen = NULL;
		scsitgt__rdma_cm_close(&ip->cm, ip_failed_cm_closed);
		return rc;
	}
	portal->port = ntohs(rdma_get_src_port(ip->listen));
	memcpy(&portal->sa, &sa, sizeof(sa));
	scsitgt__iscsi_portal_register(portal);
	scsitgt__log(&engine->log, SCSITGT_LOG_INFO, SCSITGT__ISCSI_SUBSYS,
		     "iSER portal %s%s%s:%u (TPGT %u) listening", portal->ipv6 ? "[" : "",
		     portal->address, portal->ipv6 ? "]" : "", portal->port, portal->tpgt);
	*out = portal;
	return 0;
}
