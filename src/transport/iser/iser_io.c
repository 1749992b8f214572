/* SPDX-License-Identifier: MIT */
/*
 * The iSER data path (RFC 7145 §7.3). Every received SEND carries one iSCSI PDU behind the iSER
 * header (§9.2); it is fed to the shared iSCSI receiver, and the STags and base offsets a SCSI
 * Command advertises are kept by ITT. Each batch the iSCSI layer sends (xmit) becomes:
 *  - Data-In: RDMA WRITEs to the initiator's Read STag at Read Base Offset + BufferOffset
 *    (§7.3.5), straight from the command's buffer when it lies in registered memory (it does
 *    when the core took it from our pool, see cmd_init), else from a registered copy, else
 *    through a per-io registration; a status-carrying Data-In becomes a SCSI Response;
 *  - R2T: RDMA READs from the Write STag (§7.3.6) queued behind the negotiated read depth,
 *    landing in the command's registered buffer (held until they complete) and handed to the
 *    iSCSI receiver as the Data-Out PDUs the R2T solicited, without a copy (the receiver's
 *    direct mode finds the data already in place);
 *  - anything else: a SEND of iSER header + BHS + data from the registered send pool.
 * The WRITEs of a batch are posted in one chain ahead of its SENDs, so the RC ordering rule
 * places the data before the initiator sees a response. The batch is finished (its payload
 * released) when every WR of it completed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "transport/iser/iser_int.h"
#include "util/be.h"

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

void scsitgt__iser_itt_clear(struct iser_conn *ic)
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

/* ---- command buffers from registered memory (core/cmd.h buf_ops) ---- */

static void *buf_alloc(void *ctx, size_t size, size_t *cap)
{
	return scsitgt__rdma_mem_alloc(ctx, size, cap);
}

static void buf_free(void *ctx, void *p, size_t cap)
{
	(void)cap;
	scsitgt__rdma_mem_free(ctx, p);
}

static const struct scsitgt__buf_ops iser_buf_ops = {
	.alloc = buf_alloc,
	.free = buf_free,
};

void scsitgt__iser_cmd_init(struct scsitgt__iscsi_conn *conn, struct scsitgt__cmd *cmd)
{
	struct iser_conn *ic = scsitgt__iscsi_conn_dm_ctx(conn);

	/* The memory outlives the connection while any buffer of it is allocated. */
	if (ic->mem) {
		cmd->buf_ops = &iser_buf_ops;
		cmd->buf_ctx = ic->mem;
	}
}

/* ---- receive ---- */

/* One received SEND: iSER header + one iSCSI PDU. */
static int recv_pdu(struct iser_conn *ic, const uint8_t *buf, size_t len)
{
	static const uint8_t zeros[4];
	struct scsitgt__iser_hdr h;
	const uint8_t *pdu;
	uint32_t pad;
	uint8_t opc;
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
	opc = scsitgt__bhs_opcode(pdu);
	if (opc == ISCSI_OP_SCSI_CMD && (h.wsv || h.rsv)) {
		rc = itt_set(ic, scsitgt__bhs_itt(pdu), &h);
		if (rc < 0)
			return rc;
	}
	if (ic->unexp.limit) {
		/* RFC 7145 §8.4: our pings end with their NOP-Out, Async Messages when acked. */
		if (opc == ISCSI_OP_NOP_OUT && get_be32(&pdu[ISCSI_BHS_TTT]) != ISCSI_RESERVED_TAG)
			scsitgt__iser_unexp_pong(&ic->unexp, get_be32(&pdu[ISCSI_BHS_TTT]));
		if (opc != ISCSI_OP_LOGIN_REQ)
			scsitgt__iser_unexp_ack(&ic->unexp, get_be32(&pdu[ISCSI_BHS_EXPSTATSN]));
	}
	rc = scsitgt__iscsi_conn_recv(ic->conn, pdu, (size_t)n);
	if (rc >= 0 && pad)
		rc = scsitgt__iscsi_conn_recv(ic->conn, zeros, pad);
	return rc < 0 ? rc : 0;
}

void scsitgt__iser_recv_done(struct scsitgt__rdma_wr *w, const struct ibv_wc *wc)
{
	struct iser_recv *r = scsitgt__container_of(w, struct iser_recv, w);
	struct iser_conn *ic = r->ic;
	int rc;

	ic->posted--;
	ic->recvs_posted--;
	ic->busy++;
	if (wc->status != IBV_WC_SUCCESS || ic->dm_close) {
		if (wc->status != IBV_WC_WR_FLUSH_ERR && wc->status != IBV_WC_SUCCESS)
			scsitgt__iser_conn_fail(ic, -EIO, ibv_wc_status_str(wc->status));
		scsitgt__iser_conn_leave(ic);
		return;
	}
	rc = recv_pdu(ic, scsitgt__rdma_pool_buf(&ic->rxp, r->idx), wc->byte_len);
	if (rc < 0)
		scsitgt__iser_conn_fail(ic, rc, "malformed SEND from the initiator");
	else if (!ic->dm_close && scsitgt__iser_post_recv(ic, r->idx) < 0)
		scsitgt__iser_conn_fail(ic, -EIO, "cannot repost a receive buffer");
	scsitgt__iser_conn_leave(ic);
}

/* ---- RDMA READ for R2T-solicited data ---- */

static void rd_free(struct iser_read *rd)
{
	if (rd->inplace)
		scsitgt__rdma_mem_release(rd->mem, rd->buf);
	else if (rd->bounce)
		scsitgt__rdma_mem_free(rd->mem, rd->buf);
	else {
		if (rd->mr)
			ibv_dereg_mr(rd->mr);
		free(rd->buf);
	}
	free(rd);
}

/* Feed @n data bytes at @src to the receiver: in place when it points there, else copied. */
static int rd_feed(struct scsitgt__iscsi_conn *conn, const uint8_t *src, size_t n)
{
	while (n) {
		uint8_t *dst;
		size_t k = scsitgt__iscsi_conn_rx_direct(conn, &dst);
		int rc;

		if (k && dst == src) {
			if (k > n)
				k = n;
			rc = scsitgt__iscsi_conn_recv_direct(conn, k);
		} else if (k && dst < src + n && src < dst + k) {
			return -EFAULT; /* overlapping but not in place: never built that way */
		} else {
			k = n;
			rc = scsitgt__iscsi_conn_recv(conn, src, k);
		}
		if (rc < 0)
			return rc;
		src += k;
		n -= k;
	}
	return 0;
}

/* Data-Out PDUs of at most this many bytes carry a READ to the receiver. */
static uint32_t rd_seg(const struct iser_conn *ic)
{
	uint32_t max = scsitgt__iscsi_conn_max_recv_dsl(ic->conn);

	return max ? max : ISER_RECV_DSL;
}

/* Hand the read data to the iSCSI receiver as the Data-Out PDUs of the R2T. */
static int rd_deliver(struct iser_conn *ic, struct iser_read *rd)
{
	static const uint8_t zeros[4];
	struct scsitgt__iscsi_conn *conn = ic->conn;
	uint32_t seg = rd_seg(ic), off = 0, datasn = rd->datasn;

	while (off < rd->len) {
		uint8_t bhs[ISCSI_BHS_LEN];
		uint32_t n = rd->len - off < seg ? rd->len - off : seg;
		bool fin = rd->final && off + n == rd->len;
		int rc;

		scsitgt__bhs_init(bhs, ISCSI_OP_DATA_OUT, fin ? ISCSI_FLAG_FINAL : 0);
		scsitgt__bhs_set_dsl(bhs, n);
		memcpy(&bhs[ISCSI_BHS_LUN], rd->lun, 8);
		put_be32(&bhs[ISCSI_BHS_ITT], rd->itt);
		put_be32(&bhs[ISCSI_BHS_TTT], rd->ttt);
		put_be32(&bhs[ISCSI_BHS_EXPSTATSN], scsitgt__iscsi_conn_stat_sn(conn));
		put_be32(&bhs[ISCSI_BHS_DATASN], datasn++);
		put_be32(&bhs[ISCSI_BHS_BUFFER_OFFSET], rd->offset + off);
		rc = scsitgt__iscsi_conn_recv(conn, bhs, sizeof(bhs));
		if (rc >= 0)
			rc = rd_feed(conn, rd->buf + off, n);
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
	scsitgt__iser_rdq_done(&ic->rdq);
	scsitgt__list_remove(&rd->posted);
	ic->busy++;
	if (wc->status == IBV_WC_SUCCESS && !ic->dm_close && !rd->gone) {
		if (rd_deliver(ic, rd) < 0 && !ic->dm_close)
			scsitgt__iser_conn_fail(ic, -EPROTO, "solicited data rejected");
	} else if (wc->status != IBV_WC_WR_FLUSH_ERR && wc->status != IBV_WC_SUCCESS) {
		scsitgt__iser_conn_fail(ic, -EIO, ibv_wc_status_str(wc->status));
	}
	rd_free(rd);
	scsitgt__iser_conn_leave(ic);
}

/* Give a READ that is not in place a registered destination, then post it. */
static int rd_post(struct iser_conn *ic, struct iser_read *rd)
{
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;

	if (rd->buf == NULL) {
		size_t cap;

		if (ic->mem && rd->len)
			rd->buf = scsitgt__rdma_mem_alloc(ic->mem, rd->len, &cap);
		if (rd->buf) {
			rd->bounce = true;
			rd->mem = ic->mem;
			rd->lkey = ic->mem->mr->lkey;
			ic->st_bounce++;
		} else {
			/* No registered memory to be had: register this buffer alone. */
			rd->buf = malloc(rd->len ? rd->len : 1);
			if (rd->buf == NULL)
				return -ENOMEM;
			rd->mr = ibv_reg_mr(ic->dev->pd, rd->buf, rd->len ? rd->len : 1,
					    IBV_ACCESS_LOCAL_WRITE);
			if (rd->mr == NULL)
				return -ENOMEM;
			rd->lkey = rd->mr->lkey;
			ic->st_reg++;
		}
	}
	sge.addr = (uintptr_t)rd->buf;
	sge.length = rd->len;
	sge.lkey = rd->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = (uintptr_t)&rd->w;
	wr.opcode = IBV_WR_RDMA_READ;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.rdma.remote_addr = rd->raddr;
	wr.wr.rdma.rkey = rd->rkey;
	if (ibv_post_send(ic->id->qp, &wr, &bad) != 0)
		return -EIO;
	ic->posted++;
	ic->sq_free--;
	scsitgt__list_add_tail(&ic->rd_posted, &rd->posted);
	return 0;
}

/* Queue the RDMA READs an R2T asks for (one per largest message). */
static int tx_r2t(struct iser_conn *ic, const uint8_t *bhs)
{
	uint32_t itt = scsitgt__bhs_itt(bhs);
	struct iser_itt *e = *itt_slot(ic, itt);
	uint32_t off = get_be32(&bhs[ISCSI_BHS_BUFFER_OFFSET]);
	uint32_t len = get_be32(&bhs[ISCSI_R2T_DESIRED_LEN]);
	uint32_t seg = rd_seg(ic), done = 0, datasn = 0;
	uint32_t cap = 0;
	uint8_t *buf, *dst = NULL;
	uint64_t raddr;
	uint32_t lkey = 0;

	buf = scsitgt__iscsi_conn_cmd_buf(ic->conn, itt, &cap);
	if (e == NULL && buf == NULL)
		return 0; /* its task was aborted while this R2T waited in the queue */
	if (e == NULL || !e->wsv)
		return -EPROTO; /* a write without a Write STag cannot be solicited */
	if (!e->sol_base_set) {
		/* Linux ib_iser advertises write_va at the first solicited byte. */
		e->sol_base = off;
		e->sol_base_set = true;
	}
	if (scsitgt__iser_map_remote(e->write_va, e->sol_base, off, len, &raddr) < 0)
		return -EPROTO;
	/* In place: the command's buffer is registered memory; read straight into it. */
	if (buf && off <= cap && len <= cap - off &&
	    scsitgt__rdma_mem_lookup(ic->mem, buf + off, len, &lkey))
		dst = buf + off;
	do {
		uint32_t n = len - done;
		struct iser_read *rd;

		if (n > ic->max_msg)
			n = ic->max_msg - ic->max_msg % seg; /* whole Data-Out PDUs per piece */
		rd = calloc(1, sizeof(*rd));
		if (rd == NULL)
			return -ENOMEM;
		rd->w.done = rd_done;
		rd->q.itt = itt;
		scsitgt__list_init(&rd->posted);
		rd->ic = ic;
		memcpy(rd->lun, &bhs[ISCSI_BHS_LUN], 8);
		rd->itt = itt;
		rd->ttt = get_be32(&bhs[ISCSI_BHS_TTT]);
		rd->offset = off + done;
		rd->len = n;
		rd->datasn = datasn;
		rd->final = done + n == len;
		rd->rkey = e->write_stag;
		rd->raddr = raddr + done;
		/* The hold keeps the buffer from reuse should the command end meanwhile. */
		if (dst && scsitgt__rdma_mem_hold(ic->mem, dst + done) == 0) {
			rd->buf = dst + done;
			rd->lkey = lkey;
			rd->inplace = true;
			rd->mem = ic->mem;
			ic->st_direct++;
		}
		scsitgt__iser_rdq_push(&ic->rdq, &rd->q);
		datasn += (n + seg - 1) / seg;
		done += n;
	} while (done < len);
	return 0;
}

/*
 * The task of @itt ended without a response (datamover.h task_gone), before the response of
 * the TMF that ended it is queued. Its READs still waiting for the read depth would be posted
 * after that response (the pump posts the queued batches first): by then the initiator may
 * have released the task's Write STag (a remote access error fails the connection), or their
 * data would come back as Data-Out for a task the target no longer knows (a Reject the
 * initiator never caused). They go now. READs in flight are served before the initiator sees
 * any later SEND (RC ordering): they complete, and their data is dropped. The ITT's STags go
 * too (RFC 7145 §7.3.5-6: they belong to the task).
 */
void scsitgt__iser_task_gone(struct scsitgt__iscsi_conn *conn, uint32_t itt)
{
	struct iser_conn *ic = scsitgt__iscsi_conn_dm_ctx(conn);
	struct scsitgt__iser_rdq_item *it = scsitgt__iser_rdq_take_itt(&ic->rdq, itt);
	struct scsitgt__list *pos, *tmp;

	while (it) {
		struct scsitgt__iser_rdq_item *next = it->next;

		rd_free(scsitgt__container_of(it, struct iser_read, q));
		it = next;
	}
	scsitgt__list_foreach_safe(pos, tmp, &ic->rd_posted)
	{
		struct iser_read *rd = scsitgt__container_of(pos, struct iser_read, posted);

		if (rd->q.itt == itt)
			rd->gone = true;
	}
	itt_drop(ic, itt);
}

/* ---- transmit ---- */

/* The batch is over: its registrations, copies and unsignaled WRITEs' SQ entries go back. */
static void txop_release(struct iser_txop *op)
{
	struct iser_conn *ic = op->ic;

	/* The WRITEs before the batch's last signaled WR are done with it. */
	ic->sq_free += op->unsig;
	for (unsigned int i = 0; i < op->nmr; i++)
		ibv_dereg_mr(op->mrs[i]);
	for (unsigned int i = 0; i < op->nbounce; i++)
		scsitgt__rdma_mem_free(op->mem, op->bounces[i]);
	scsitgt__iscsi_conn_tx_complete(ic->conn, op->tx, op->status);
}

static void txop_finish(struct iser_txop *op)
{
	if (--op->pending)
		return;
	txop_release(op);
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
			scsitgt__iser_conn_fail(ic, -EIO, ibv_wc_status_str(wc->status));
	}
	txop_finish(op);
	scsitgt__iser_conn_leave(ic);
}

/*
 * An unsignaled WRITE failed or was flushed (one that succeeded raises no completion). It is
 * counted nowhere: its batch waits for a signaled WR behind it on the send queue, which
 * completes after it (the SEND of its response, or a refused chain's fence, tx_chain_partial()).
 */
static void txop_unsig_done(struct scsitgt__rdma_wr *w, const struct ibv_wc *wc)
{
	struct iser_txop *op = scsitgt__container_of(w, struct iser_txop, wu);
	struct iser_conn *ic = op->ic;

	ic->busy++;
	op->status = -EIO;
	if (wc->status != IBV_WC_WR_FLUSH_ERR && wc->status != IBV_WC_SUCCESS)
		scsitgt__iser_conn_fail(ic, -EIO, ibv_wc_status_str(wc->status));
	scsitgt__iser_conn_leave(ic);
}

/* A late completion naming a batch given up with its QP (scsitgt__iser_fences_abandon()). */
static void txop_parked_done(struct scsitgt__rdma_wr *w, const struct ibv_wc *wc)
{
	(void)w;
	(void)wc;
}

void scsitgt__iser_slot_done(struct scsitgt__rdma_wr *w, const struct ibv_wc *wc)
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
			scsitgt__iser_conn_fail(ic, -EIO, ibv_wc_status_str(wc->status));
	}
	txop_finish(op);
	scsitgt__iser_conn_leave(ic);
}

/* Turn a status-carrying Data-In into the SCSI Response iSER requires (RFC 7145 §7.3.5). */
static void datain_to_response(uint8_t *bhs)
{
	uint8_t flags = bhs[ISCSI_BHS_FLAGS];
	uint8_t status = bhs[ISCSI_DATAIN_STATUS];
	uint32_t resid = get_be32(&bhs[ISCSI_BHS_RESIDUAL]);
	uint32_t itt = get_be32(&bhs[ISCSI_BHS_ITT]);
	uint32_t datasn = get_be32(&bhs[ISCSI_BHS_DATASN]);
	uint8_t sn[12];

	memcpy(sn, &bhs[ISCSI_BHS_STATSN], 12); /* StatSN, ExpCmdSN, MaxCmdSN */
	/* Data-In O/U bits (0x04/0x02) sit where the SCSI Response keeps them. */
	scsitgt__bhs_init(bhs, ISCSI_OP_SCSI_RSP, ISCSI_FLAG_FINAL | (flags & 0x06u));
	bhs[ISCSI_RSP_RESPONSE] = ISCSI_RSP_COMPLETED;
	bhs[ISCSI_RSP_STATUS] = status;
	put_be32(&bhs[ISCSI_BHS_ITT], itt);
	memcpy(&bhs[ISCSI_BHS_STATSN], sn, 12);
	put_be32(&bhs[ISCSI_BHS_DATASN], datasn + 1); /* ExpDataSN */
	put_be32(&bhs[ISCSI_BHS_RESIDUAL], resid);
}

/* Target PDUs RFC 7145 §8.4 counts as unexpected: NOP-In pings and Async Messages. */
static bool pdu_unexpected(const uint8_t *bhs, bool *ping, uint32_t *value)
{
	uint8_t opc = scsitgt__bhs_opcode(bhs);

	if (opc == ISCSI_OP_NOP_IN && scsitgt__bhs_itt(bhs) == ISCSI_RESERVED_TAG &&
	    get_be32(&bhs[ISCSI_BHS_TTT]) != ISCSI_RESERVED_TAG) {
		*ping = true;
		*value = get_be32(&bhs[ISCSI_BHS_TTT]);
		return true;
	}
	if (opc == ISCSI_OP_ASYNC_MSG) {
		*ping = false;
		*value = get_be32(&bhs[ISCSI_BHS_STATSN]);
		return true;
	}
	return false;
}

static bool pdu_is_send(const uint8_t *bhs)
{
	uint8_t opc = scsitgt__bhs_opcode(bhs);

	if (opc == ISCSI_OP_R2T)
		return false;
	return opc != ISCSI_OP_DATA_IN || (bhs[ISCSI_BHS_FLAGS] & ISCSI_DATAIN_FLAG_STATUS);
}

/* Where a Data-In run's bytes come from: registered memory, a registered copy, or its own MR. */
static int seg_resolve(struct iser_conn *ic, struct iser_txop *op, struct scsitgt__iser_seg *s)
{
	const void *src = (const void *)(uintptr_t)s->laddr;
	size_t cap;
	void *b;

	if (scsitgt__rdma_mem_lookup(ic->mem, src, s->len, &s->lkey)) {
		ic->st_direct++;
		return 0;
	}
	b = ic->mem ? scsitgt__rdma_mem_alloc(ic->mem, s->len, &cap) : NULL;
	if (b) {
		memcpy(b, src, s->len);
		op->mem = ic->mem;
		op->bounces[op->nbounce++] = b;
		s->laddr = (uintptr_t)b;
		s->lkey = ic->mem->mr->lkey;
		ic->st_bounce++;
		return 0;
	}
	op->mrs[op->nmr] = ibv_reg_mr(ic->dev->pd, (void *)(uintptr_t)s->laddr, s->len, 0);
	if (op->mrs[op->nmr] == NULL)
		return -ENOMEM;
	s->lkey = op->mrs[op->nmr++]->lkey;
	ic->st_reg++;
	return 0;
}

/*
 * One batch as tx_post() turns it into work requests: what it holds, then the arrays carved
 * out of its txop's allocation, filled in order (the WRITEs, then the SENDs).
 */
struct tx_build {
	unsigned int sends;   /* PDUs that go as SENDs */
	unsigned int npieces; /* Data-In PDUs with data */
	unsigned int nunexp;  /* unexpected PDUs (RFC 7145 §8.4) */
	uint64_t data_bytes;  /* their data */
	unsigned int nseg_cap;
	struct scsitgt__iser_seg *pieces, *segs;
	struct ibv_send_wr *wr;
	struct ibv_sge *sge;
	unsigned int nwr, nsge;
	unsigned int posted; /* the first this many WRs went out */
};

/* Count what @tx needs; -E2BIG or -EAGAIN when the send pool, the SQ or the credits lack room. */
static int tx_count(struct iser_conn *ic, const struct scsitgt__iscsi_tx *tx, struct tx_build *b)
{
	bool ping;
	uint32_t value;

	memset(b, 0, sizeof(*b));
	for (unsigned int i = 0; i < tx->npdus; i++) {
		const uint8_t *bhs = tx->pdus[i].hdr;

		if (scsitgt__bhs_opcode(bhs) == ISCSI_OP_DATA_IN && tx->pdus[i].len) {
			b->npieces++;
			b->data_bytes += tx->pdus[i].len;
		}
		if (pdu_is_send(bhs))
			b->sends++;
		if (pdu_unexpected(bhs, &ping, &value))
			b->nunexp++;
	}
	if (b->sends > ISER_NSEND)
		return -E2BIG;
	if (b->sends > ic->txp.nfree || b->sends > ic->sq_free)
		return -EAGAIN;
	if (b->nunexp && !scsitgt__iser_unexp_can_send(&ic->unexp))
		return -EAGAIN; /* until a ping is answered or an Async Message acknowledged */
	b->nseg_cap = b->npieces + (unsigned int)(b->data_bytes / ic->max_msg) + 1;
	return 0;
}

/* The batch's txop with room for its pieces, segments, WRs, SGEs, MRs and bounce buffers. */
static struct iser_txop *txop_create(struct iser_conn *ic, struct scsitgt__iscsi_tx *tx,
				     struct tx_build *b)
{
	unsigned int cap = b->nseg_cap, nwr = cap + b->sends;
	struct iser_txop *op;

	op = calloc(1, sizeof(*op) + 2 * cap * sizeof(*b->pieces) +
			       nwr * (sizeof(*b->wr) + sizeof(*b->sge)) +
			       cap * (sizeof(*op->mrs) + sizeof(*op->bounces)));
	if (op == NULL)
		return NULL;
	b->pieces = (struct scsitgt__iser_seg *)(op + 1);
	b->segs = b->pieces + cap;
	b->wr = (struct ibv_send_wr *)(b->segs + cap);
	b->sge = (struct ibv_sge *)(b->wr + nwr);
	op->mrs = (struct ibv_mr **)(b->sge + nwr);
	op->bounces = (void **)(op->mrs + cap);
	op->w.done = txop_write_done;
	op->wu.done = txop_unsig_done;
	op->ic = ic;
	op->tx = tx;
	op->pending = 1; /* dropped at the end of tx_post */
	return op;
}

/* Where each Data-In piece goes: the Read STag the command advertised (RFC 7145 §7.3.5). */
static int tx_datain_pieces(struct iser_conn *ic, const struct scsitgt__iscsi_tx *tx,
			    struct tx_build *b)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < tx->npdus; i++) {
		const struct scsitgt__iscsi_tx_pdu *p = &tx->pdus[i];
		struct iser_itt *e;

		if (scsitgt__bhs_opcode(p->hdr) != ISCSI_OP_DATA_IN || p->len == 0)
			continue;
		e = *itt_slot(ic, scsitgt__bhs_itt(p->hdr));
		if (e == NULL || !e->rsv)
			return -EPROTO; /* Data-In for a command that gave no Read STag */
		b->pieces[n].laddr = (uintptr_t)p->data;
		b->pieces[n].lkey = 0;
		b->pieces[n].len = p->len;
		b->pieces[n].rkey = e->read_stag;
		if (scsitgt__iser_map_remote(e->read_va, 0,
					     get_be32(&p->hdr[ISCSI_BHS_BUFFER_OFFSET]), p->len,
					     &b->pieces[n].raddr) < 0)
			return -EPROTO;
		n++;
	}
	b->npieces = n;
	return 0;
}

/* The Data-In as few RDMA WRITEs as contiguity allows, ahead of the SENDs. */
static int tx_datain_writes(struct iser_conn *ic, struct iser_txop *op,
			    const struct scsitgt__iscsi_tx *tx, struct tx_build *b)
{
	int nsegs, rc;

	rc = tx_datain_pieces(ic, tx, b);
	if (rc < 0)
		return rc;
	nsegs = scsitgt__iser_map_coalesce(b->pieces, b->npieces, ic->max_msg, b->segs,
					   b->nseg_cap);
	if (nsegs < 0)
		return nsegs;
	if ((unsigned int)nsegs + b->sends > ic->sq_free)
		return -EAGAIN;
	for (int i = 0; i < nsegs; i++) {
		struct ibv_send_wr *wr = &b->wr[b->nwr];
		struct ibv_sge *sge = &b->sge[b->nsge++];

		rc = seg_resolve(ic, op, &b->segs[i]);
		if (rc < 0)
			return rc;
		sge->addr = b->segs[i].laddr;
		sge->length = b->segs[i].len;
		sge->lkey = b->segs[i].lkey;
		memset(wr, 0, sizeof(*wr));
		if (b->sends == 0 && i == nsegs - 1) {
			/* No SEND follows to complete the batch: this WRITE does. */
			wr->wr_id = (uintptr_t)&op->w;
			wr->send_flags = IBV_SEND_SIGNALED;
			op->pending++;
		} else {
			wr->wr_id = (uintptr_t)&op->wu;
			op->unsig++;
		}
		wr->opcode = IBV_WR_RDMA_WRITE;
		wr->sg_list = sge;
		wr->num_sge = 1;
		wr->wr.rdma.remote_addr = b->segs[i].raddr;
		wr->wr.rdma.rkey = b->segs[i].rkey;
		b->nwr++;
	}
	return 0;
}

/* One PDU as a SEND of iSER header + BHS + data from the registered send pool. */
static int tx_send(struct iser_conn *ic, struct iser_txop *op, struct scsitgt__iscsi_tx_pdu *p,
		   struct tx_build *b)
{
	uint8_t *bhs = p->hdr;
	uint8_t opc = scsitgt__bhs_opcode(bhs);
	const uint8_t *data = p->data;
	uint32_t dlen = p->len;
	struct ibv_send_wr *wr;
	struct ibv_sge *sge;
	uint32_t value;
	uint8_t *buf;
	bool ping;
	int idx;

	if (opc == ISCSI_OP_DATA_IN) {
		datain_to_response(bhs);
		data = NULL;
		dlen = 0;
		opc = ISCSI_OP_SCSI_RSP;
	}
	if (opc == ISCSI_OP_SCSI_RSP)
		itt_drop(ic, scsitgt__bhs_itt(bhs));
	if (dlen > ISER_SEND_SLOT - SCSITGT__ISER_HDR_LEN - ISCSI_BHS_LEN)
		return -EMSGSIZE;
	idx = scsitgt__rdma_pool_get(&ic->txp);
	if (idx < 0)
		return idx;
	buf = scsitgt__rdma_pool_buf(&ic->txp, (uint32_t)idx);
	scsitgt__iser_hdr_encode(buf, NULL);
	memcpy(buf + SCSITGT__ISER_HDR_LEN, bhs, ISCSI_BHS_LEN);
	scsitgt__bhs_set_dsl(buf + SCSITGT__ISER_HDR_LEN, dlen);
	if (dlen)
		memcpy(buf + SCSITGT__ISER_HDR_LEN + ISCSI_BHS_LEN, data, dlen);
	if (pdu_unexpected(bhs, &ping, &value))
		scsitgt__iser_unexp_sent(&ic->unexp, ping, value);
	ic->slots[idx].op = op;
	sge = &b->sge[b->nsge++];
	sge->addr = (uintptr_t)buf;
	sge->length = SCSITGT__ISER_HDR_LEN + ISCSI_BHS_LEN + dlen;
	sge->lkey = ic->txp.mr->lkey;
	wr = &b->wr[b->nwr++];
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = (uintptr_t)&ic->slots[idx].w;
	wr->opcode = IBV_WR_SEND;
	wr->send_flags = IBV_SEND_SIGNALED;
	wr->sg_list = sge;
	wr->num_sge = 1;
	op->pending++;
	return 0;
}

/* Then the SENDs, in order: responses follow their data on the same QP; R2Ts become READs. */
static int tx_sends(struct iser_conn *ic, struct iser_txop *op, struct scsitgt__iscsi_tx *tx,
		    struct tx_build *b)
{
	int rc = 0;

	for (unsigned int i = 0; i < tx->npdus && rc == 0; i++) {
		struct scsitgt__iscsi_tx_pdu *p = &tx->pdus[i];

		if (scsitgt__bhs_opcode(p->hdr) == ISCSI_OP_R2T)
			rc = tx_r2t(ic, p->hdr);
		else if (pdu_is_send(p->hdr))
			rc = tx_send(ic, op, p, b);
	}
	return rc;
}

/*
 * A signaled zero-length RDMA WRITE behind the unsignaled WRITEs a refused chain posted last
 * (to the STag of the last of them, still the initiator's: the command has no response yet;
 * posted later, the QP is in error and it is flushed). The send queue completes in order, in
 * error and flushed too: once it is back, so are they, whether they raised a completion
 * (failed, flushed) or not (done). Zero length: it touches no memory. True when posted.
 */
static bool tx_fence_post(struct iser_conn *ic, struct iser_txop *op)
{
	struct ibv_send_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = (uintptr_t)&op->w;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = op->fence_raddr;
	wr.wr.rdma.rkey = op->fence_rkey;
	if (ibv_post_send(ic->id->qp, &wr, &bad) != 0)
		return false;
	ic->posted++;
	ic->sq_free--;
	return true;
}

/*
 * A chain the provider refused at *@bad: ibv_post_send(3) posted every WR before it. They count
 * as posted, and the batch (its send slots, registrations and copies) stays until they are
 * over; tx_unwind() gives back the rest, and the connection goes down (pump_once()). A
 * signaled WR raises a completion in any case (done, failed or flushed), and the unsignaled
 * WRITEs before it are over when it is (the send queue completes in order). Unsignaled WRITEs
 * posted last (the chain was refused at a WRITE or at its first SEND: a chain's WRITEs come
 * before its SENDs) raise one only when they fail, or when they are still outstanding as the
 * QP enters the error state (flushed): one done before that raises none, ever. So they are
 * counted nowhere, and a fence (above) posted behind them ends the batch. When the provider
 * refuses the fence too (a full send queue, the likeliest refusal, refuses it as well), the
 * batch owes it (ic->fences): it is posted once the connection is closed, its QP in error,
 * and a completion made room (scsitgt__iser_fences_post()); if it never can be, the
 * connection does not wait for it (scsitgt__iser_fences_abandon()).
 */
static void tx_chain_partial(struct iser_conn *ic, struct iser_txop *op, struct tx_build *b,
			     const struct ibv_send_wr *bad)
{
	unsigned int sent = 0, sig = 0, tail = 0;

	while (sent < b->nwr && &b->wr[sent] != bad) {
		if (b->wr[sent].send_flags & IBV_SEND_SIGNALED) {
			sig++;
			tail = 0;
		} else {
			tail++;
		}
		sent++;
	}
	if (sent == b->nwr)
		return; /* *bad is not one of the chain's: none went out */
	b->posted = sent;
	op->pending = 1 + sig;	/* the 1 is tx_post's */
	op->unsig = sent - sig; /* their SQ entries return with the batch */
	ic->posted += sig;
	ic->sq_free -= sent;
	if (tail == 0)
		return;
	op->fence_raddr = b->wr[sent - 1].wr.rdma.remote_addr;
	op->fence_rkey = b->wr[sent - 1].wr.rdma.rkey;
	op->pending++; /* the fence's, posted now or owed */
	if (tx_fence_post(ic, op))
		return;
	op->fence_next = ic->fences;
	ic->fences = op;
}

void scsitgt__iser_fences_post(struct iser_conn *ic)
{
	while (ic->fences && tx_fence_post(ic, ic->fences))
		ic->fences = ic->fences->fence_next;
}

/*
 * ic_free(), with ic->posted at 0 and fences still owed: every WR counted is back and the
 * provider still refuses a WR to a send queue that has room (left: at most the WRITEs a
 * refused chain posted last). Nothing can tell when those are over; the QP is destroyed (no
 * DMA, no completion generated any more), so the batches end now. A completion of one of
 * their WRITEs may still be in the device's shared CQ: their memory stays with the device,
 * whose CQ goes before it (rdma.h scsitgt__rdma_parked).
 */
void scsitgt__iser_fences_abandon(struct iser_conn *ic)
{
	struct iser_txop *op;

	while ((op = ic->fences) != NULL) {
		ic->fences = op->fence_next;
		if (ic->conn)
			scsitgt__iscsi_conn_log(ic->conn, SCSITGT_LOG_WARNING,
						"iSER: cannot post a fence behind a refused chain: "
						"its RDMA WRITEs end with the QP");
		op->w.done = txop_parked_done;
		op->wu.done = txop_parked_done;
		txop_release(op);
		scsitgt__rdma_dev_park(ic->dev, &op->park, op);
	}
}

/* Post the chain of WRs in one call. */
static int tx_chain_post(struct iser_conn *ic, struct iser_txop *op, struct tx_build *b)
{
	struct ibv_send_wr *bad = NULL;

	if (b->nwr == 0)
		return 0;
	for (unsigned int i = 0; i + 1 < b->nwr; i++)
		b->wr[i].next = &b->wr[i + 1];
	if (ibv_post_send(ic->id->qp, b->wr, &bad) != 0) {
		tx_chain_partial(ic, op, b, bad);
		return -EIO;
	}
	/* Only signaled WRs count for the drain: flushes of unsignaled WRITEs come before the
	 * SEND that ends their batch. */
	ic->posted += b->nwr - op->unsig;
	ic->sq_free -= b->nwr;
	b->posted = b->nwr;
	return 0;
}

/*
 * The chain was not posted, or only its first b->posted WRs were (tx_chain_partial()): give
 * back the send slots of the rest. -EAGAIN before any WR was built retries the batch later as
 * it is (0: the txop is freed); anything else finishes it with @rc (1: the caller drops its
 * reference; the batch ends when the WRs that went out are back).
 */
static int tx_unwind(struct iser_conn *ic, struct iser_txop *op, struct tx_build *b, int rc)
{
	for (unsigned int i = b->posted; i < b->nwr; i++) {
		if (b->wr[i].opcode == IBV_WR_SEND) {
			struct iser_slot *s = (struct iser_slot *)(uintptr_t)b->wr[i].wr_id;

			s->op = NULL;
			scsitgt__rdma_pool_put(&ic->txp, s->idx);
		}
	}
	if (rc == -EAGAIN && b->nwr == 0) {
		/* Retried later as it is: release what was resolved. */
		for (unsigned int i = 0; i < op->nmr; i++)
			ibv_dereg_mr(op->mrs[i]);
		for (unsigned int i = 0; i < op->nbounce; i++)
			scsitgt__rdma_mem_free(op->mem, op->bounces[i]);
		free(op);
		return 0;
	}
	if (b->posted == 0) {
		op->pending = 1;
		op->unsig = 0;
	}
	op->status = rc;
	return 1;
}

/*
 * review32 N9: a ping that finds MaxOutstandingUnexpectedPDUs out (or others queued before it
 * that will be) would wait at the head of the queue, holding back every later batch (SCSI
 * Responses, R2T READs) until the initiator sends something; skipped instead (a ping is
 * optional). Async Messages, rare, still wait their turn.
 */
bool scsitgt__iser_may_ping(struct scsitgt__iscsi_conn *conn)
{
	struct iser_conn *ic = scsitgt__iscsi_conn_dm_ctx(conn);
	uint32_t queued = 0;
	uint32_t value;
	bool ping;

	if (ic->unexp.limit == 0)
		return true;
	for (const struct scsitgt__iscsi_tx *tx = ic->outq; tx; tx = tx->next) {
		for (unsigned int i = 0; i < tx->npdus; i++)
			queued += pdu_unexpected(tx->pdus[i].hdr, &ping, &value);
	}
	return scsitgt__iser_unexp_can_queue(&ic->unexp, queued);
}

/* Post one batch; -EAGAIN when the send pool, the SQ or the unexpected credits lack room. */
static int tx_post(struct iser_conn *ic, struct scsitgt__iscsi_tx *tx)
{
	struct tx_build b;
	struct iser_txop *op;
	int rc;

	rc = tx_count(ic, tx, &b);
	if (rc < 0)
		return rc;
	op = txop_create(ic, tx, &b);
	if (op == NULL)
		return -ENOMEM;
	rc = tx_datain_writes(ic, op, tx, &b);
	if (rc == 0)
		rc = tx_sends(ic, op, tx, &b);
	if (rc == 0)
		rc = tx_chain_post(ic, op, &b);
	if (rc < 0 && tx_unwind(ic, op, &b, rc) == 0)
		return rc;
	txop_finish(op);
	return rc;
}

void scsitgt__iser_xmit(struct scsitgt__iscsi_conn *conn, struct scsitgt__iscsi_tx *tx)
{
	struct iser_conn *ic = scsitgt__iscsi_conn_dm_ctx(conn);

	tx->next = NULL;
	if (ic->dm_close) {
		scsitgt__iscsi_conn_tx_complete(conn, tx, -ECANCELED);
		return;
	}
	*ic->outq_tail = tx;
	ic->outq_tail = &tx->next;
	ic->busy++;
	scsitgt__iser_conn_leave(ic);
}

static void pump_once(struct iser_conn *ic)
{
	struct scsitgt__iser_rdq_item *it;

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
						"iSER: cannot send: %s", scsitgt_strerror(rc));
			scsitgt__iser_conn_fail(ic, rc, "cannot post a send");
			return;
		}
	}
	/* RDMA READs within the read depth the initiator granted; the excess waits. */
	while (!ic->dm_close && ic->sq_free > 0 && (it = scsitgt__iser_rdq_next(&ic->rdq))) {
		struct iser_read *rd = scsitgt__container_of(it, struct iser_read, q);
		int rc = rd_post(ic, rd);

		if (rc < 0) {
			scsitgt__iser_rdq_done(&ic->rdq);
			rd_free(rd);
			scsitgt__iser_conn_fail(ic, rc, "cannot post an RDMA READ");
			return;
		}
	}
}

void scsitgt__iser_pump(struct iser_conn *ic)
{
	ic->busy++;
	pump_once(ic);
	if (--ic->busy == 0 && ic->dm_close)
		scsitgt__iser_conn_check_drained(ic);
}

void scsitgt__iser_io_cancel(struct iser_conn *ic)
{
	struct scsitgt__iscsi_tx *tx;
	struct scsitgt__iser_rdq_item *it = scsitgt__iser_rdq_flush(&ic->rdq);

	while ((tx = ic->outq) != NULL) {
		ic->outq = tx->next;
		tx->next = NULL;
		scsitgt__iscsi_conn_tx_complete(ic->conn, tx, -ECANCELED);
	}
	ic->outq_tail = &ic->outq;
	while (it) {
		struct scsitgt__iser_rdq_item *next = it->next;

		rd_free(scsitgt__container_of(it, struct iser_read, q));
		it = next;
	}
}
