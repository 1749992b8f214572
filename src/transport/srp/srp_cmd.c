/* SPDX-License-Identifier: MIT */
/*
 * SRP information units on an established channel (SRP r16a §6.5-§6.9), and the fabric ops
 * the core calls back.
 *
 * SRP_CMD (§6.7): the IU is decoded, takes one credit of the request limit, and becomes a core
 * command. Its data buffer descriptors are copied out of the IU (a partial indirect table is
 * completed by an RDMA READ of the whole table, §5.6.2.3) so the receive buffer can be posted
 * again at once. Write data comes from SRP-2 immediate data inside the IU, or is pulled with
 * RDMA READs across the descriptors, never more at once than the read depth the initiator
 * granted (the excess waits in the channel's read queue). When the command is done, its
 * Data-In goes out as RDMA WRITEs and the SRP_RSP as a SEND in the same chain on the same QP
 * (in pieces when the chain is longer than the send queue), so the initiator sees the data
 * before the response. The response returns the request's credit (and any owed) in REQUEST
 * LIMIT DELTA; credits of requests that end without a response (aborted tasks) go back with
 * the next response, or in an SRP_CRED_REQ when the channel has nothing else to say.
 *
 * SRP_TSK_MGMT (§6.8) maps onto the core's task management; its SRP_RSP carries a four-byte
 * response data field with the RSP CODE.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/order.h"
#include "core/scsi_spec.h"
#include "core/stats.h"
#include "transport/srp/srp_int.h"
#include "util/be.h"

static struct srp_task *task_of(struct scsitgt__cmd *cmd)
{
	return scsitgt__cmd_fabric_priv(cmd);
}

/* Run the channel's pump once no handler is active (see srp_portal.c). */
static void ch_kick(struct srp_ch *ch)
{
	ch->busy++;
	scsitgt__srp_ch_leave(ch);
}

/* SRP_CMD TASK ATTRIBUTE (§5.6 Table 21) to the core's values. */
static uint8_t attr_map(uint8_t a)
{
	switch (a) {
	case SRP_ATTR_HEAD_OF_QUEUE:
		return SCSITGT__TASK_HEAD_OF_QUEUE;
	case SRP_ATTR_ORDERED:
		return SCSITGT__TASK_ORDERED;
	case SRP_ATTR_ACA:
		return SCSITGT__TASK_ACA;
	default:
		return SCSITGT__TASK_SIMPLE;
	}
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

static const struct scsitgt__buf_ops srp_buf_ops = {
	.alloc = buf_alloc,
	.free = buf_free,
};

/* ---- tasks ---- */

static void task_wr_done(struct scsitgt__rdma_wr *w, const struct ibv_wc *wc);

static void task_unqueue(struct srp_task *t)
{
	scsitgt__list_remove(&t->qnode);
	scsitgt__list_init(&t->qnode);
}

/* Give the task's credit back (it reaches the initiator with the next delta). */
static void task_credit_done(struct srp_task *t)
{
	if (t->counted && t->ch)
		scsitgt__srp_credits_finish(&t->ch->cred);
	t->counted = false;
}

/* Free a task with no work request outstanding, and its command. */
static void task_free(struct srp_task *t)
{
	struct srp_ch *ch = t->ch;

	task_credit_done(t);
	task_unqueue(t);
	if (ch) {
		scsitgt__list_remove(&t->node);
		if (t->slot >= 0)
			scsitgt__rdma_pool_put(&ch->txp, (uint32_t)t->slot);
	}
	if (t->mr)
		ibv_dereg_mr(t->mr);
	if (t->tbl_mr)
		ibv_dereg_mr(t->tbl_mr);
	free(t->tbl);
	if (t->descs != &t->one)
		free(t->descs);
	scsitgt__cmd_destroy(t->cmd);
}

static void task_execute(struct srp_task *t)
{
	t->state = SRP_TASK_EXEC;
	scsitgt__cmd_execute(t->cmd);
}

/* Refuse the command before execution; it still gets its response. */
static void task_refuse(struct srp_task *t, enum scsitgt__sense_reason reason)
{
	if (t->cmd->state != SCSITGT__CMD_DONE)
		scsitgt__cmd_fail(t->cmd, reason);
	task_execute(t);
}

/*
 * The lkey of the first @len bytes of cmd->buf: from the port's registered memory when the
 * buffer came from it, else a registration of its own (released with the task).
 */
static int task_lkey(struct srp_task *t, uint32_t len)
{
	if (!scsitgt__rdma_mem_lookup(t->ch->mem, t->cmd->buf, len, &t->lkey)) {
		t->mr = ibv_reg_mr(t->ch->dev->pd, t->cmd->buf, len, IBV_ACCESS_LOCAL_WRITE);
		if (t->mr == NULL)
			return -ENOMEM;
		t->lkey = t->mr->lkey;
	}
	t->keyed = true;
	return 0;
}

/* The descriptors of the task's data buffer are known: start the data phase or execute. */
static void task_descs_known(struct srp_task *t)
{
	struct scsitgt__cmd *cmd = t->cmd;
	uint64_t sum = 0;

	for (uint32_t i = 0; i < t->ndesc; i++)
		sum += t->descs[i].len;
	/* TOTAL LENGTH larger than the descriptors: only the descriptors hold data. */
	if (sum < t->edtl)
		t->edtl = (uint32_t)sum;
	if (cmd->state == SCSITGT__CMD_DONE || cmd->dir != SCSITGT__DIR_OUT) {
		task_execute(t);
		return;
	}
	/*
	 * A data-out buffer of another size than the CDB's transfer (SAM-5 §5.4.3): a media
	 * write keeps the whole blocks the buffer holds, other writes are refused; the residual
	 * is reported against the CDB's length (§5.9 DOOVER/DOUNDER).
	 */
	t->spdtl = scsitgt__cmd_fit_data_out(cmd, t->out ? t->edtl : 0);
	t->spdtl_set = true;
	if (cmd->state == SCSITGT__CMD_DONE) {
		task_execute(t);
		return;
	}
	if (scsitgt__cmd_alloc_buf(cmd) < 0) {
		task_refuse(t, SCSITGT__SR_TASK_SET_FULL);
		return;
	}
	t->want = cmd->xfer_len;
	if (t->want == 0) {
		/*
		 * A write that moves no data (COMPARE AND WRITE of 0 blocks, SBC-4 §5.3): nothing
		 * to read, and a 0-byte memory region would be refused (or, accepted, leave the
		 * task waiting for a READ completion that never comes).
		 */
		task_execute(t);
		return;
	}
	if (task_lkey(t, t->want) < 0) {
		task_refuse(t, SCSITGT__SR_TASK_SET_FULL);
		return;
	}
	t->state = SRP_TASK_DATA_OUT;
	t->next_desc = 0;
	t->next_off = 0;
	t->desc_off = 0;
	scsitgt__list_add_tail(&t->ch->rdq, &t->qnode);
}

/*
 * Copy the descriptors of @b out of the IU. Returns 0 when they are all known, 1 when the
 * table must be fetched first, -ENOMEM.
 */
static int task_take_descs(struct srp_task *t, const struct scsitgt__srp_buf *b)
{
	if (b->fmt == SRP_DESC_DIRECT) {
		t->one = b->desc;
		t->descs = &t->one;
		t->ndesc = 1;
		return 0;
	}
	/* INDIRECT: n_total >= 1 (the decoder) and <= SRP_MAX_DESCRIPTORS (ch_cmd). */
	if (b->n_in_iu < b->n_total) {
		/* §5.6.2.3: a partial table in the IU; the whole table is at the table descriptor. */
		t->table = b->desc;
		t->tbl = malloc(b->desc.len);
		if (t->tbl == NULL)
			return -ENOMEM;
		t->tbl_mr = ibv_reg_mr(t->ch->dev->pd, t->tbl, b->desc.len, IBV_ACCESS_LOCAL_WRITE);
		return t->tbl_mr ? 1 : -ENOMEM;
	}
	t->ndesc = b->n_total;
	t->descs = t->ndesc == 1 ? &t->one : calloc(t->ndesc, sizeof(*t->descs));
	if (t->descs == NULL) {
		t->descs = &t->one;
		t->ndesc = 0;
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < t->ndesc; i++)
		scsitgt__srp_desc_get(&b->list[i * SRP_DIRECT_DESC_LEN], &t->descs[i]);
	return 0;
}

/* The fetched table arrived: its descriptors replace the partial list. */
static int task_table_arrived(struct srp_task *t)
{
	uint32_t n = t->table.len / SRP_DIRECT_DESC_LEN;
	struct scsitgt__srp_desc *d = n == 1 ? &t->one : calloc(n, sizeof(*d));

	if (d == NULL)
		return -ENOMEM;
	t->ndesc = n;
	for (uint32_t i = 0; i < n; i++)
		scsitgt__srp_desc_get(&t->tbl[i * SRP_DIRECT_DESC_LEN], &d[i]);
	t->descs = d;
	ibv_dereg_mr(t->tbl_mr);
	t->tbl_mr = NULL;
	free(t->tbl);
	t->tbl = NULL;
	return 0;
}

/* Answer a request we could not even make a command of (no memory): BUSY. */
static void ch_answer_busy(struct srp_ch *ch, uint64_t tag)
{
	struct scsitgt__srp_rsp r;
	uint8_t iu[SRP_RSP_LEN];

	scsitgt__srp_credits_finish(&ch->cred);
	memset(&r, 0, sizeof(r));
	r.tag = tag;
	r.status = SAM_STAT_BUSY;
	r.req_lim_delta = scsitgt__srp_credits_grant(&ch->cred);
	scsitgt__srp_rsp_encode(iu, sizeof(iu), &r);
	if (scsitgt__srp_ch_send_own(ch, iu, sizeof(iu), false) < 0)
		scsitgt__srp_ch_close(ch, SRP_TLO_NO_REASON, "no resources to answer a command");
}

static int ch_cmd(struct srp_ch *ch, const uint8_t *iu, size_t len)
{
	struct scsitgt__srp_cmd c;
	const struct scsitgt__srp_buf *b;
	struct scsitgt__cmd *cmd;
	struct srp_task *t;
	uint32_t tlo;
	int rc;

	if (scsitgt__srp_cmd_decode(iu, len, ch->imm_off, &c, &tlo) < 0) {
		scsitgt__srp_ch_close(ch, (int)tlo, "malformed SRP_CMD");
		return -EPROTO;
	}
	if (scsitgt__srp_credits_take(&ch->cred) < 0) {
		scsitgt__srp_ch_close(ch, SRP_TLO_NO_REASON, "request limit exceeded");
		return -EPROTO;
	}
	if (scsitgt__cmd_create(&cmd, ch->nx->core, sizeof(*t)) < 0) {
		ch_answer_busy(ch, c.tag);
		return 0;
	}
	/* Data buffers from the port's registered memory (set before setup allocates). */
	if (ch->mem) {
		cmd->buf_ops = &srp_buf_ops;
		cmd->buf_ctx = ch->mem;
	}
	t = task_of(cmd); /* zeroed */
	t->w.done = task_wr_done;
	t->cmd = cmd;
	t->ch = ch;
	t->slot = -1;
	t->counted = true;
	t->tag = c.tag;
	t->sol_not = c.sol_not;
	t->descs = &t->one;
	t->state = SRP_TASK_EXEC;
	scsitgt__list_init(&t->qnode);
	scsitgt__list_add_tail(&ch->tasks, &t->node);
	cmd->defer_buf = true;
	scsitgt__cmd_setup(cmd, c.lun, c.cdb, c.cdb_len, attr_map(c.task_attr), c.tag);

	if (c.out.fmt != SRP_DESC_NONE && c.in.fmt != SRP_DESC_NONE) {
		/* Bidirectional: none of the commands the core implements has two buffers. */
		task_refuse(t, SCSITGT__SR_INVALID_FIELD_IN_CDB);
		return 0;
	}
	t->out = c.out.fmt != SRP_DESC_NONE;
	b = t->out ? &c.out : &c.in;
	t->edtl = b->total_len;
	if (b->fmt == SRP_DESC_NONE) {
		task_descs_known(t);
		return 0;
	}
	if (b->fmt == SRP_DESC_IMMEDIATE) {
		/* SRP-2: the write data came with the IU; copy it before the buffer is reused. */
		if (cmd->state != SCSITGT__CMD_DONE && cmd->dir == SCSITGT__DIR_OUT) {
			t->spdtl = scsitgt__cmd_fit_data_out(cmd, t->edtl);
			t->spdtl_set = true;
		}
		if (cmd->state != SCSITGT__CMD_DONE && cmd->dir == SCSITGT__DIR_OUT) {
			if (scsitgt__cmd_alloc_buf(cmd) < 0) {
				task_refuse(t, SCSITGT__SR_TASK_SET_FULL);
				return 0;
			}
			if (cmd->xfer_len)
				memcpy(cmd->buf, b->imm, cmd->xfer_len); /* buf is NULL for 0 */
			t->want = cmd->xfer_len;
		}
		task_execute(t);
		return 0;
	}
	if (cmd->state == SCSITGT__CMD_DONE) {
		/* Refused by setup: no data moves, the descriptors do not matter. */
		task_execute(t);
		return 0;
	}
	if (b->fmt == SRP_DESC_INDIRECT && b->n_total > SRP_MAX_DESCRIPTORS) {
		/*
		 * A valid table longer than we take (ib_srp's indirect_sg_entries goes up to
		 * 2048): this command fails, the channel stays (SPC-5 0Eh/03h).
		 */
		task_refuse(t, SCSITGT__SR_INVALID_FIELD_IN_CMD_IU);
		return 0;
	}
	rc = task_take_descs(t, b);
	if (rc < 0) {
		task_refuse(t, SCSITGT__SR_TASK_SET_FULL);
		return 0;
	}
	if (rc == 1) {
		t->state = SRP_TASK_FETCH;
		scsitgt__list_add_tail(&ch->rdq, &t->qnode);
		return 0;
	}
	task_descs_known(t);
	return 0;
}

/* ---- work request completions ---- */

static void task_wr_idle(struct srp_task *t)
{
	struct srp_ch *ch = t->ch;

	switch (t->state) {
	case SRP_TASK_SENDING:
		if (!scsitgt__list_empty(&t->qnode))
			return; /* a piece of its Data-In: the rest and the response are to post */
		/* The response (and Data-In before it) was delivered. */
		task_free(t);
		return;
	case SRP_TASK_DEAD:
		/* Aborted meanwhile. */
		task_free(t);
		return;
	case SRP_TASK_FETCH:
		if (ch->closing || t->failed_data || !scsitgt__list_empty(&t->qnode))
			return; /* the channel releases it; or the table read is not posted yet */
		if (task_table_arrived(t) < 0) {
			task_refuse(t, SCSITGT__SR_TASK_SET_FULL);
			return;
		}
		task_descs_known(t);
		return;
	case SRP_TASK_DATA_OUT:
		if (ch->closing || t->failed_data || !scsitgt__list_empty(&t->qnode))
			return;
		/* All the write data is in. */
		if (t->mr)
			ibv_dereg_mr(t->mr);
		t->mr = NULL;
		task_execute(t);
		return;
	case SRP_TASK_EXEC:
		return;
	}
}

static void task_wr_done(struct scsitgt__rdma_wr *w, const struct ibv_wc *wc)
{
	struct srp_task *t = scsitgt__container_of(w, struct srp_task, w);
	struct srp_ch *ch = t->ch;

	ch->posted--;
	ch->sq_free++;
	ch->busy++;
	t->pending--;
	/* A task's reads and its response never overlap: outstanding reads were reads. */
	if (t->rd_out) {
		t->rd_out--;
		ch->rd_busy--;
	}
	if (wc->status != IBV_WC_SUCCESS) {
		t->failed_data = true;
		if (wc->status != IBV_WC_WR_FLUSH_ERR)
			scsitgt__srp_ch_close(ch, -1, ibv_wc_status_str(wc->status));
	}
	if (t->pending == 0)
		task_wr_idle(t);
	scsitgt__srp_ch_leave(ch);
}

static int post_read(struct srp_ch *ch, struct srp_task *t, void *local, uint32_t lkey,
		     uint64_t raddr, uint32_t rkey, uint32_t len)
{
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;

	sge.addr = (uintptr_t)local;
	sge.length = len;
	sge.lkey = lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = (uintptr_t)&t->w;
	wr.opcode = IBV_WR_RDMA_READ;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	if (ibv_post_send(ch->id->qp, &wr, &bad) != 0)
		return -EIO;
	ch->posted++;
	ch->sq_free--;
	ch->rd_busy++;
	t->pending++;
	t->rd_out++;
	return 0;
}

/*
 * Post the task's RDMA READs within the channel's read depth. Returns 1 when all are posted,
 * 0 when the depth or the send queue is exhausted, -EIO.
 */
static int task_post_reads(struct srp_ch *ch, struct srp_task *t)
{
	if (t->state == SRP_TASK_FETCH) {
		if (ch->rd_busy >= ch->rd_depth || ch->sq_free == 0)
			return 0;
		if (post_read(ch, t, t->tbl, t->tbl_mr->lkey, t->table.va, t->table.key,
			      t->table.len) < 0)
			return -EIO;
		return 1;
	}
	while (t->next_off < t->want) {
		const struct scsitgt__srp_desc *d;
		uint32_t n;

		if (t->next_desc >= t->ndesc)
			return -EIO; /* cannot happen: the descriptors hold at least @want */
		d = &t->descs[t->next_desc];
		n = d->len - t->desc_off;
		if (n > t->want - t->next_off)
			n = t->want - t->next_off;
		if (n == 0) {
			t->next_desc++;
			t->desc_off = 0;
			continue;
		}
		if (ch->rd_busy >= ch->rd_depth || ch->sq_free == 0)
			return 0;
		if (post_read(ch, t, t->cmd->buf + t->next_off, t->lkey, d->va + t->desc_off,
			      d->key, n) < 0)
			return -EIO;
		t->next_off += n;
		t->desc_off += n;
	}
	return 1;
}

/* ---- responses ---- */

/* Residuals of a finished command (§5.9 Table 27), srp_proto.c. */
static void task_residuals(const struct srp_task *t, struct scsitgt__srp_rsp *r, uint32_t *send)
{
	const struct scsitgt__cmd *cmd = t->cmd;
	struct scsitgt__srp_xfer x = {
		.out_buf = t->out ? t->edtl : 0,
		.in_buf = t->out ? 0 : t->edtl,
		.out_need = t->spdtl_set		 ? t->spdtl :
			    cmd->dir == SCSITGT__DIR_OUT ? cmd->xfer_len :
							   0,
		.out_done = t->want,
		.in_have = cmd->dir == SCSITGT__DIR_IN ? cmd->data_len : 0,
	};

	*send = scsitgt__srp_residuals(r, &x);
}

/*
 * The RDMA WRITEs of Data-In still to post: one per descriptor (none for an empty one) until
 * @send bytes are placed, from where the last piece ended (t->in_desc, t->in_off).
 */
static unsigned int task_writes_left(const struct srp_task *t, uint32_t send)
{
	uint32_t off = t->in_off;
	unsigned int n = 0;

	for (uint32_t i = t->in_desc; i < t->ndesc && off < send; i++) {
		uint32_t len = t->descs[i].len < send - off ? t->descs[i].len : send - off;

		n += len != 0;
		off += len;
	}
	return n;
}

/*
 * At most @max of those RDMA WRITEs into @wr/@sge (not linked); t->in_desc and t->in_off move
 * past them.
 */
static unsigned int task_build_writes(struct srp_task *t, uint32_t send, unsigned int max,
				      struct ibv_send_wr *wr, struct ibv_sge *sge)
{
	unsigned int n = 0;

	for (; t->in_desc < t->ndesc && t->in_off < send && n < max; t->in_desc++) {
		const struct scsitgt__srp_desc *d = &t->descs[t->in_desc];
		uint32_t len = d->len < send - t->in_off ? d->len : send - t->in_off;

		if (len == 0)
			continue;
		sge[n].addr = (uintptr_t)t->cmd->buf + t->in_off;
		sge[n].length = len;
		sge[n].lkey = t->lkey;
		memset(&wr[n], 0, sizeof(wr[n]));
		wr[n].wr_id = (uintptr_t)&t->w;
		wr[n].opcode = IBV_WR_RDMA_WRITE;
		wr[n].sg_list = &sge[n];
		wr[n].num_sge = 1;
		wr[n].wr.rdma.remote_addr = d->va;
		wr[n].wr.rdma.rkey = d->key;
		n++;
		t->in_off += len;
	}
	return n;
}

/*
 * Post the @nw work requests of @wr (linked here) of @t. -EIO when the provider refused one:
 * those before it went out and are counted, since each raises a completion, done or flushed
 * as the channel closes (the QP signals every WR, sq_sig_all, srp_portal.c), so the task and
 * the channel wait for them too (ibv_post_send(3)).
 */
static int task_post_chain(struct srp_ch *ch, struct srp_task *t, struct ibv_send_wr *wr,
			   unsigned int nw)
{
	struct ibv_send_wr *bad = NULL;
	int rc;

	for (unsigned int i = 0; i + 1 < nw; i++)
		wr[i].next = &wr[i + 1];
	rc = ibv_post_send(ch->id->qp, wr, &bad) != 0 ? -EIO : 0;
	if (rc < 0) {
		unsigned int sent = 0;

		while (sent < nw && &wr[sent] != bad)
			sent++;
		nw = sent < nw ? sent : 0; /* *bad not one of ours: none went out */
	}
	ch->posted += nw;
	ch->sq_free -= nw;
	t->pending += nw;
	return rc;
}

/*
 * Post Data-In and the SRP_RSP of @t; -EAGAIN when the send queue or buffers lack room. The
 * RDMA WRITEs and the SEND go in one chain once the send queue has room for all of it. A chain
 * longer than the send queue (its depth is the device's max_qp_wr when that is smaller than
 * SRP_CH_SQ_DEPTH(), and a table may hold up to 256 descriptors) would never fit: its WRITEs go
 * in pieces as entries free (each entry is one signaled work request), then the rest of the
 * chain with the SEND. The RC QP executes them in the order posted, so the data is still placed
 * before the initiator sees the response; the task stays at the head of ch->sendq meanwhile.
 */
static int task_post_rsp(struct srp_ch *ch, struct srp_task *t)
{
	struct scsitgt__cmd *cmd = t->cmd;
	struct ibv_send_wr wr[SRP_MAX_DESCRIPTORS + 1];
	struct ibv_sge sge[SRP_MAX_DESCRIPTORS + 1];
	struct scsitgt__srp_rsp r;
	unsigned int nw = 0, left;
	uint32_t send;
	uint8_t *buf;
	size_t len;
	bool good;
	int idx;

	memset(&r, 0, sizeof(r));
	task_residuals(t, &r, &send);
	left = send ? task_writes_left(t, send) : 0;
	if (left + 1 > ch->sq_free || ch->txp.nfree == 0) {
		if (left + 1 <= ch->sq_depth || left == 0 || ch->sq_free == 0)
			return -EAGAIN;
		/* More than the send queue holds: the WRITEs that fit go now. */
		if (!t->keyed && task_lkey(t, send) < 0)
			return -ENOMEM;
		nw = task_build_writes(t, send, left < ch->sq_free ? left : ch->sq_free, wr, sge);
		return task_post_chain(ch, t, wr, nw) < 0 ? -EIO : -EAGAIN;
	}
	if (send && !t->keyed && task_lkey(t, send) < 0)
		return -ENOMEM;
	idx = scsitgt__rdma_pool_get(&ch->txp);
	if (idx < 0)
		return -EAGAIN;
	t->slot = idx;
	nw = task_build_writes(t, send, left, wr, sge);
	buf = scsitgt__rdma_pool_buf(&ch->txp, (uint32_t)idx);
	good = cmd->status == SAM_STAT_GOOD || cmd->status == SAM_STAT_CONDITION_MET;
	/* §5.6: SOLNT asks for a solicited event on the response of this outcome. */
	if ((good && (t->sol_not & SRP_SOLNT_SC)) || (!good && (t->sol_not & SRP_SOLNT_UC)))
		r.sol_not = 1;
	task_credit_done(t);
	r.req_lim_delta = scsitgt__srp_credits_grant(&ch->cred);
	r.tag = t->tag;
	r.status = cmd->status;
	r.sense = cmd->sense_len ? cmd->sense : NULL;
	r.sense_len = cmd->sense_len;
	len = scsitgt__srp_rsp_encode(buf, ch->ti_iu_len, &r);
	sge[nw].addr = (uintptr_t)buf;
	sge[nw].length = (uint32_t)len;
	sge[nw].lkey = ch->txp.mr->lkey;
	memset(&wr[nw], 0, sizeof(wr[nw]));
	wr[nw].wr_id = (uintptr_t)&t->w;
	wr[nw].opcode = IBV_WR_SEND;
	wr[nw].send_flags = r.sol_not ? IBV_SEND_SOLICITED : 0;
	wr[nw].sg_list = &sge[nw];
	wr[nw].num_sge = 1;
	nw++;
	return task_post_chain(ch, t, wr, nw);
}

/* ---- task management ---- */

struct srp_tmf {
	struct scsitgt__list node; /* ch->tmfq while its response waits for room */
	struct srp_ch *ch;
	uint64_t tag;
	uint8_t sol_not; /* SCSOLNT, UCSOLNT of the SRP_TSK_MGMT */
	uint8_t code;
	uint32_t after; /* ch->rsp_seq when it ended: task responses queued before go first */
};

static uint8_t tmf_code(enum scsitgt__tmf_response r)
{
	switch (r) {
	case SCSITGT__TMF_COMPLETE:
	case SCSITGT__TMF_TASK_NOT_FOUND:
		return SRP_RSP_CODE_COMPLETE;
	case SCSITGT__TMF_SUCCEEDED:
		return SRP_RSP_CODE_SUCCEEDED;
	case SCSITGT__TMF_LUN_NOT_FOUND:
		return SRP_RSP_CODE_INCORRECT_LUN;
	case SCSITGT__TMF_NOT_SUPPORTED:
		return SRP_RSP_CODE_NOT_SUPPORTED;
	case SCSITGT__TMF_REJECTED:
	default:
		return SRP_RSP_CODE_FAILED;
	}
}

/*
 * Send a TMF response; -EAGAIN when the send queue is full, another negative errno when the
 * provider refused the SEND (the caller closes the channel, as for a command's response).
 */
static int tmf_send(struct srp_ch *ch, struct srp_tmf *m)
{
	uint8_t iu[SRP_RSP_LEN + SRP_RSP_DATA_LEN];
	uint8_t data[SRP_RSP_DATA_LEN] = { 0, 0, 0, m->code };
	struct scsitgt__srp_credits saved = ch->cred;
	struct scsitgt__srp_rsp r;
	bool good = m->code == SRP_RSP_CODE_COMPLETE || m->code == SRP_RSP_CODE_SUCCEEDED;
	int rc;

	memset(&r, 0, sizeof(r));
	r.tag = m->tag;
	r.resp_data = data;
	r.resp_len = sizeof(data);
	/* SCSOLNT / UCSOLNT of the SRP_TSK_MGMT (byte 1, as in SRP_CMD, task_post_rsp()). */
	if ((good && (m->sol_not & SRP_SOLNT_SC)) || (!good && (m->sol_not & SRP_SOLNT_UC)))
		r.sol_not = 1;
	scsitgt__srp_credits_finish(&ch->cred);
	r.req_lim_delta = scsitgt__srp_credits_grant(&ch->cred);
	scsitgt__srp_rsp_encode(iu, sizeof(iu), &r);
	rc = scsitgt__srp_ch_send_own(ch, iu, sizeof(iu), false);
	if (rc < 0)
		ch->cred = saved; /* not sent: the credits stay owed */
	return rc;
}

/*
 * The function ended. The responses of tasks that completed before it precede its own (SAM-5's
 * task management functions; ib_srp drops an SRP_RSP whose tag it gave up with the TMF's
 * response): one still waiting for send room in ch->sendq keeps it queued behind, and the pump
 * sends both in the order they ended (review32 N7). Later task responses do not hold it.
 */
static void tmf_done(void *arg, enum scsitgt__tmf_response resp)
{
	struct srp_tmf *m = arg;
	struct srp_ch *ch = m->ch;
	int rc;

	/* Held as a handler: a close below must not free the channel under us. */
	ch->busy++;
	ch->holds--;
	m->code = tmf_code(resp);
	m->after = ch->rsp_seq;
	if (!ch->closing) {
		rc = !scsitgt__list_empty(&ch->sendq) || !scsitgt__list_empty(&ch->tmfq) ?
			     -EAGAIN :
			     tmf_send(ch, m);
		if (rc == -EAGAIN) {
			ch->holds++;
			scsitgt__list_add_tail(&ch->tmfq, &m->node);
			scsitgt__srp_ch_leave(ch);
			return;
		}
		/* §6.8: every SRP_TSK_MGMT is answered; a response that cannot go ends the channel
		 * (as a command's does), so its credit is not lost on a channel that goes on. */
		if (rc < 0)
			scsitgt__srp_ch_close(ch, -1, "cannot post a TMF response");
	}
	free(m);
	scsitgt__srp_ch_leave(ch);
}

/* Answer a TMF of ours alone: a function we do not support. */
static void tmf_answer_now(struct srp_ch *ch, const struct scsitgt__srp_tsk_mgmt *tm)
{
	struct srp_tmf *m = calloc(1, sizeof(*m));

	if (m == NULL) {
		scsitgt__srp_ch_close(ch, SRP_TLO_NO_REASON, "no memory for a TMF response");
		return;
	}
	m->ch = ch;
	m->tag = tm->tag;
	m->sol_not = tm->sol_not;
	ch->holds++;
	tmf_done(m, SCSITGT__TMF_NOT_SUPPORTED);
}

static int ch_tmf(struct srp_ch *ch, const uint8_t *iu, size_t len)
{
	struct scsitgt__srp_tsk_mgmt tm;
	enum scsitgt__tmf_type type;
	struct srp_tmf *m;

	if (scsitgt__srp_tsk_mgmt_decode(iu, len, &tm) < 0) {
		scsitgt__srp_ch_close(ch, SRP_TLO_INVALID_IU_LEN, "short SRP_TSK_MGMT");
		return -EPROTO;
	}
	if (scsitgt__srp_credits_take(&ch->cred) < 0) {
		scsitgt__srp_ch_close(ch, SRP_TLO_NO_REASON, "request limit exceeded");
		return -EPROTO;
	}
	switch (tm.func) {
	case SRP_TSK_ABORT_TASK:
		/*
		 * Through the core also for a tag no task of the nexus has (any more), or one
		 * whose response is out (its command is done): the core checks the LUN (INCORRECT
		 * LOGICAL UNIT NUMBER for one that does not exist), tells the host (its TMF event
		 * and statistics) and, finding nothing to abort, answers FUNCTION COMPLETE
		 * (SAM-5 §7.2). The response still follows those queued before (tmf_done()).
		 */
		type = SCSITGT__TMF_ABORT_TASK;
		break;
	case SRP_TSK_ABORT_TASK_SET:
		type = SCSITGT__TMF_ABORT_TASK_SET;
		break;
	case SRP_TSK_CLEAR_TASK_SET:
		type = SCSITGT__TMF_CLEAR_TASK_SET;
		break;
	case SRP_TSK_LUN_RESET:
		type = SCSITGT__TMF_LUN_RESET;
		break;
	case SRP_TSK_CLEAR_ACA:
		type = SCSITGT__TMF_CLEAR_ACA;
		break;
	case SRP_TSK_QUERY_TASK:
		type = SCSITGT__TMF_QUERY_TASK;
		break;
	case SRP_TSK_QUERY_TASK_SET:
		type = SCSITGT__TMF_QUERY_TASK_SET;
		break;
	case SRP_TSK_QUERY_ASYNC_EVENT:
		type = SCSITGT__TMF_QUERY_ASYNC_EVENT;
		break;
	default:
		tmf_answer_now(ch, &tm);
		return 0;
	}
	m = calloc(1, sizeof(*m));
	if (m == NULL) {
		scsitgt__srp_ch_close(ch, SRP_TLO_NO_REASON, "no memory for a TMF");
		return -EPROTO;
	}
	m->ch = ch;
	m->tag = tm.tag;
	m->sol_not = tm.sol_not;
	ch->holds++;
	scsitgt__srp_ch_log(ch, SCSITGT_LOG_INFO, "task management function 0x%02x (tag 0x%llx)",
			    tm.func, (unsigned long long)tm.task_tag);
	scsitgt__stats_tmf(ch->nx->core, tm.lun);
	scsitgt__tmf_execute(ch->nx->core, type, tm.lun, tm.task_tag, tmf_done, m);
	return 0;
}

/* ---- receive ---- */

int scsitgt__srp_ch_recv(struct srp_ch *ch, const uint8_t *iu, size_t len)
{
	uint64_t tag;

	if (ch->closing)
		return 0; /* logging out: what comes now is dropped */
	if (len == 0) {
		scsitgt__srp_ch_close(ch, SRP_TLO_INVALID_IU_LEN, "empty SEND");
		return -EPROTO;
	}
	switch (iu[0]) {
	case SRP_IU_CMD:
		return ch_cmd(ch, iu, len);
	case SRP_IU_TSK_MGMT:
		return ch_tmf(ch, iu, len);
	case SRP_IU_I_LOGOUT:
		/* §6.3: the initiator ends this channel; no response. */
		if (scsitgt__srp_i_logout_decode(iu, len, &tag) < 0) {
			scsitgt__srp_ch_close(ch, SRP_TLO_INVALID_IU_LEN, "short SRP_I_LOGOUT");
			return -EPROTO;
		}
		scsitgt__srp_ch_close(ch, -1, "SRP_I_LOGOUT");
		return -EPROTO;
	case SRP_IU_CRED_RSP:
	case SRP_IU_AER_RSP:
		if (scsitgt__srp_simple_rsp_decode(iu, len, iu[0], &tag) < 0) {
			scsitgt__srp_ch_close(ch, SRP_TLO_INVALID_IU_LEN, "short response IU");
			return -EPROTO;
		}
		if (ch->tgt_reqs == 0) {
			scsitgt__srp_ch_close(ch, SRP_TLO_UNEXPECTED_RSP, "unsolicited response");
			return -EPROTO;
		}
		ch->tgt_reqs--;
		return 0;
	default:
		scsitgt__srp_ch_close(ch, SRP_TLO_INVALID_IU_TYPE, "unknown IU type");
		return -EPROTO;
	}
}

/* ---- the pump ---- */

/*
 * Credits of tasks that ended without a response go back in an SRP_CRED_REQ (§6.9) when
 * nothing else will carry them: no task and no TMF left on the channel.
 */
static void ch_maybe_cred_req(struct srp_ch *ch)
{
	struct scsitgt__srp_credits saved = ch->cred;
	uint8_t iu[SRP_CRED_REQ_LEN];

	if (ch->cred.owed == 0 || !scsitgt__list_empty(&ch->tasks) || ch->holds ||
	    ch->tgt_reqs >= SRP_TGT_REQ_MAX || !ch->connected)
		return;
	scsitgt__srp_cred_req_encode(iu, 0, scsitgt__srp_credits_grant(&ch->cred), ch->next_tag++);
	if (scsitgt__srp_ch_send_own(ch, iu, sizeof(iu), false) < 0) {
		ch->cred = saved;
		return;
	}
	ch->tgt_reqs++;
}

void scsitgt__srp_ch_pump(struct srp_ch *ch)
{
	if (ch->closing || !ch->accepted)
		return;
	/* Task and TMF responses in the order they ended (tmf_done()). */
	for (;;) {
		struct srp_tmf *m =
			scsitgt__list_empty(&ch->tmfq) ?
				NULL :
				scsitgt__container_of(ch->tmfq.next, struct srp_tmf, node);
		struct srp_task *t =
			scsitgt__list_empty(&ch->sendq) ?
				NULL :
				scsitgt__container_of(ch->sendq.next, struct srp_task, qnode);
		int rc;

		if (m && (t == NULL || (int32_t)(t->seq - m->after) >= 0)) {
			rc = tmf_send(ch, m);
			if (rc == -EAGAIN)
				return;
			scsitgt__list_remove(&m->node);
			ch->holds--;
			free(m);
			if (rc < 0) {
				scsitgt__srp_ch_close(ch, -1, "cannot post a TMF response");
				return;
			}
			continue;
		}
		if (t == NULL)
			break;
		rc = task_post_rsp(ch, t);
		if (rc == -EAGAIN)
			return;
		task_unqueue(t);
		if (rc < 0) {
			scsitgt__srp_ch_close(ch, -1, "cannot post a response");
			return;
		}
	}
	while (!scsitgt__list_empty(&ch->rdq)) {
		struct srp_task *t = scsitgt__container_of(ch->rdq.next, struct srp_task, qnode);
		int rc = task_post_reads(ch, t);

		if (rc == 0)
			return;
		task_unqueue(t);
		if (rc < 0) {
			scsitgt__srp_ch_close(ch, -1, "cannot post an RDMA READ");
			return;
		}
	}
	scsitgt__srp_ch_send_aers(ch);
	ch_maybe_cred_req(ch);
}

void scsitgt__srp_ch_drop_queued(struct srp_ch *ch)
{
	while (!scsitgt__list_empty(&ch->sendq))
		task_unqueue(scsitgt__container_of(ch->sendq.next, struct srp_task, qnode));
	while (!scsitgt__list_empty(&ch->rdq))
		task_unqueue(scsitgt__container_of(ch->rdq.next, struct srp_task, qnode));
	while (!scsitgt__list_empty(&ch->tmfq)) {
		struct srp_tmf *m = scsitgt__container_of(ch->tmfq.next, struct srp_tmf, node);

		scsitgt__list_remove(&m->node);
		ch->holds--;
		free(m);
	}
	ch->aer_n = 0;
}

void scsitgt__srp_ch_release_tasks(struct srp_ch *ch)
{
	struct scsitgt__list *pos, *tmp;

	scsitgt__list_foreach_safe(pos, tmp, &ch->tasks)
	{
		struct srp_task *t = scsitgt__container_of(pos, struct srp_task, node);

		task_unqueue(t);
		if (t->state == SRP_TASK_EXEC) {
			/* In the core: cmd_done() frees it, or the nexus going detaches it. */
			t->counted = false;
			scsitgt__list_remove(&t->node);
			scsitgt__list_init(&t->node);
			if (t->slot >= 0)
				scsitgt__rdma_pool_put(&ch->txp, (uint32_t)t->slot);
			t->slot = -1;
			if (t->mr)
				ibv_dereg_mr(t->mr);
			t->mr = NULL;
			/* The core may free the command without calling us (its nexus ends while
			 * it is parked or in a backend, core/cmd.c): the list goes now. Detached,
			 * the task never sends Data-In again (reviewe D1). */
			if (t->descs != &t->one)
				free(t->descs);
			t->descs = &t->one;
			t->ndesc = 0;
			t->ch = NULL;
			continue;
		}
		task_free(t);
	}
}

/* ---- fabric ops ---- */

static void srp_cmd_done(struct scsitgt__cmd *cmd)
{
	struct srp_task *t = task_of(cmd);
	struct srp_ch *ch = t->ch;

	if (ch == NULL || ch->closing || t->state == SRP_TASK_DEAD) {
		task_free(t);
		if (ch)
			ch_kick(ch);
		return;
	}
	t->state = SRP_TASK_SENDING;
	t->seq = ch->rsp_seq++;
	scsitgt__list_add_tail(&ch->sendq, &t->qnode);
	ch_kick(ch);
}

static void srp_cmd_aborted(struct scsitgt__cmd *cmd)
{
	struct srp_task *t = task_of(cmd);
	struct srp_ch *ch = t->ch;

	t->state = SRP_TASK_DEAD;
	task_unqueue(t);
	if (t->pending)
		return; /* freed when its RDMA READs are back */
	task_free(t);
	if (ch)
		ch_kick(ch);
}

/* The target goes (on home): its channels close on the nexus's loop. */
static void srp_session_shutdown(struct scsitgt__session *sess)
{
	scsitgt__srp_nexus_close(sess->fabric_ctx, SRP_TLO_NO_REASON, "target removed");
}

const struct scsitgt__fabric_ops scsitgt__srp_fabric_ops = {
	.name = "srp",
	.cmd_done = srp_cmd_done,
	.cmd_aborted = srp_cmd_aborted,
	.session_shutdown = srp_session_shutdown,
	.unit_attention = scsitgt__srp_unit_attention,
};
