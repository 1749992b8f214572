/* SPDX-License-Identifier: MIT */
/*
 * iser_io.c posts each batch the iSCSI layer sends (its Data-In RDMA WRITEs, then its SENDs)
 * as one chain of work requests. A provider may refuse one partway: ibv_post_send(3) then
 * sets *bad_wr to the first it refused, and every one before it was posted: it completes if
 * signaled, failed, or flushed as the connection goes down. The batch, the send buffers and
 * the per-io memory registrations those work requests use must stay until they are over, and
 * the connection must not be freed before; those refused are given back at once. Unsignaled
 * WRITEs posted last raise no completion when they were done: a signaled zero-length WRITE
 * posted behind them (a fence) completes after them. When the provider refuses the fence too
 * (its send queue full), the fence is posted once a completion freed an entry; when it never
 * can be, the connection is freed once everything else is back and the batch's memory stays
 * with the device, where a late completion can still name it.
 *
 * The iSCSI side is real (the iSCSI harness, logged in over a data mover marked rdma); then
 * the connection's data mover becomes iSER (iser_io.c) on a fake QP: ibv_post_send() and
 * ibv_post_recv() record the work requests, nothing completes until the test says so, and
 * post_fail makes the provider refuse work request number post_fail (from 1) of the next
 * ibv_post_send(); sq_full makes it refuse the first of every ibv_post_send() until a send
 * queue completion is taken. No registered command memory: Data-In is sent from per-io
 * registrations (this file's ibv_reg_mr() and ibv_dereg_mr() count them). The data mover's
 * close is iser.c's iser_close() without the QP's move to error (the test flushes).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../iscsi/iscsi_harness.h"
#include "transport/iser/iser_int.h"

#define WR_MAX 64u
#define MAX_MSG 4096u /* the port's largest message: 16 KiB of Data-In is four WRITEs */
#define READ_BLOCKS 32u
#define STAG 0x77u

/* A work request the fake QP took. */
struct fx_wr {
	uint64_t wr_id;
	enum ibv_wr_opcode opcode;
	bool recv;
	bool signaled;
	bool empty; /* no SGE: a zero-length WRITE (a refused chain's fence) */
	bool done;
};

static struct {
	struct fx_wr wrs[WR_MAX];
	unsigned int nwrs;
	unsigned int post_fail;	      /* see the top */
	unsigned int post_fail_after; /* the same for the ibv_post_send() after that one */
	bool full_after;	      /* the send queue is full after the next ibv_post_send() */
	bool sq_full;		      /* see the top */
	bool sq_stuck;		      /* and stays full */
	unsigned int refused;	      /* ibv_post_send() calls refused */
	unsigned int mrs_live;	      /* ibv_reg_mr() not deregistered yet */
	unsigned int ids_destroyed;
} rec;

struct fx {
	struct harness h;
	struct iser_conn *ic; /* valid until the connection is freed (h_conn_gone) */
	bool attached;	      /* the data mover is iSER now */
	struct iser_portal ip;
	struct ibv_context vctx;
	struct ibv_qp qp;
	struct rdma_cm_id id;
	struct ibv_pd pd;
	struct scsitgt__rdma_dev dev;
	struct ibv_mr txmr, rxmr;
	uint8_t *txmem, *rxmem;
	uint32_t *txstack;
	uint8_t initiator[READ_BLOCKS * 512u]; /* the memory of the Read STag */
};

static struct fx *cur;

/* ---- verbs and rdma_cm fakes ---- */

#undef ibv_reg_mr
struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	struct ibv_mr *mr = calloc(1, sizeof(*mr));

	(void)access;
	assert_ptr_equal(pd, &cur->pd);
	assert_non_null(mr);
	mr->pd = pd;
	mr->addr = addr;
	mr->length = length;
	mr->lkey = 0x5000u + rec.mrs_live;
	rec.mrs_live++;
	return mr;
}

int ibv_dereg_mr(struct ibv_mr *mr)
{
	assert_true(rec.mrs_live > 0);
	rec.mrs_live--;
	free(mr);
	return 0;
}

int rdma_destroy_id(struct rdma_cm_id *id)
{
	assert_ptr_equal(id, &cur->id);
	rec.ids_destroyed++;
	return 0;
}

static struct fx_wr *fx_record(uint64_t wr_id)
{
	struct fx_wr *r = &rec.wrs[rec.nwrs];

	assert_true(rec.nwrs < WR_MAX);
	memset(r, 0, sizeof(*r));
	r->wr_id = wr_id;
	rec.nwrs++;
	return r;
}

static int fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	unsigned int fail = rec.post_fail;

	assert_ptr_equal(qp, &cur->qp);
	if (rec.sq_full) {
		rec.refused++;
		*bad = wr;
		return ENOMEM;
	}
	rec.post_fail = rec.post_fail_after;
	rec.post_fail_after = 0;
	rec.sq_full = rec.full_after;
	rec.full_after = false;
	for (; wr; wr = wr->next) {
		struct fx_wr *r;

		if (fail && --fail == 0) {
			rec.refused++;
			*bad = wr;
			return ENOMEM;
		}
		r = fx_record(wr->wr_id);
		r->opcode = wr->opcode;
		r->signaled = wr->send_flags & IBV_SEND_SIGNALED;
		r->empty = wr->num_sge == 0;
	}
	return 0;
}

static int fake_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	(void)bad;
	assert_ptr_equal(qp, &cur->qp);
	for (; wr; wr = wr->next)
		fx_record(wr->wr_id)->recv = true;
	return 0;
}

/* Work request @i completes with @status; one unsignaled that succeeded raises nothing. */
static void fx_complete(unsigned int i, enum ibv_wc_status status, uint32_t byte_len)
{
	struct fx_wr *r = &rec.wrs[i];
	struct scsitgt__rdma_wr *w = (struct scsitgt__rdma_wr *)(uintptr_t)r->wr_id;
	struct ibv_wc wc;

	assert_true(i < rec.nwrs);
	assert_false(r->done);
	r->done = true;
	if (status == IBV_WC_SUCCESS && !r->recv && !r->signaled)
		return;
	if (!r->recv && !rec.sq_stuck)
		rec.sq_full = false; /* taking the completion freed send queue entries */
	memset(&wc, 0, sizeof(wc));
	wc.wr_id = r->wr_id;
	wc.status = status;
	wc.opcode = r->recv			   ? IBV_WC_RECV :
		    r->opcode == IBV_WR_RDMA_WRITE ? IBV_WC_RDMA_WRITE :
		    r->opcode == IBV_WR_RDMA_READ  ? IBV_WC_RDMA_READ :
						     IBV_WC_SEND;
	wc.byte_len = byte_len;
	w->done(w, &wc);
}

/* The QP went to error: every work request not completed yet is flushed, in order. */
static void fx_flush_all(void)
{
	for (unsigned int i = 0; i < rec.nwrs; i++) {
		if (!rec.wrs[i].done)
			fx_complete(i, IBV_WC_WR_FLUSH_ERR, 0);
	}
}

/* Send queue work requests of @opcode not completed yet (with data, or zero-length ones). */
static unsigned int fx_open(enum ibv_wr_opcode opcode, bool empty)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < rec.nwrs; i++)
		n += !rec.wrs[i].done && !rec.wrs[i].recv && rec.wrs[i].opcode == opcode &&
		     rec.wrs[i].empty == empty;
	return n;
}

static unsigned int fx_open_sends(enum ibv_wr_opcode opcode)
{
	return fx_open(opcode, false);
}

/* The first send queue work request not completed yet, or -1. */
static int fx_first_open_send(void)
{
	for (unsigned int i = 0; i < rec.nwrs; i++) {
		if (!rec.wrs[i].done && !rec.wrs[i].recv)
			return (int)i;
	}
	return -1;
}

static int fx_open_recv(void)
{
	for (unsigned int i = 0; i < rec.nwrs; i++) {
		if (!rec.wrs[i].done && rec.wrs[i].recv)
			return (int)i;
	}
	return -1;
}

/* ---- the data mover: the harness's during login, iSER after ---- */

static void fx_xmit(struct scsitgt__iscsi_conn *conn, struct scsitgt__iscsi_tx *tx)
{
	if (cur->attached)
		scsitgt__iser_xmit(conn, tx);
	else
		h_xmit(conn, tx);
}

/* iser.c iser_close() but for the QP's move to error: the test flushes. */
static void fx_close(struct scsitgt__iscsi_conn *conn)
{
	struct iser_conn *ic = cur->ic;

	if (!cur->attached) {
		h_close(conn);
		return;
	}
	ic->dm_close = true;
	scsitgt__iser_io_cancel(ic);
	scsitgt__iser_conn_check_drained(ic);
}

static const struct scsitgt__iscsi_dm_ops fx_dm_ops = {
	.name = "iser-fake-qp",
	.xmit = fx_xmit,
	.close = fx_close,
	.rdma = true,
	.max_recv_dsl = ISER_RECV_DSL,
	.max_send_dsl = ISER_SEND_SLOT - SCSITGT__ISER_HDR_LEN - ISCSI_BHS_LEN,
	.task_gone = scsitgt__iser_task_gone,
};

/* The iSER connection as ic_setup() and accept leave it, on the fakes; one receive posted. */
static void fx_attach(struct fx *f)
{
	struct iser_conn *ic = calloc(1, sizeof(*ic));

	assert_non_null(ic);
	f->vctx.ops.post_send = fake_post_send;
	f->vctx.ops.post_recv = fake_post_recv;
	f->qp.context = &f->vctx;
	f->id.qp = &f->qp;
	f->id.verbs = &f->vctx;
	f->pd.context = &f->vctx;
	/* The device: the test keeps a reference of its own, so the connection's put frees nothing. */
	f->dev.verbs = &f->vctx;
	f->dev.pd = &f->pd;
	f->dev.refs = 2;
	scsitgt__list_init(&f->dev.node);
	scsitgt__list_init(&f->dev.parked);
	scsitgt__list_init(&f->ip.conns);
	ic->ip = &f->ip;
	scsitgt__list_init(&ic->node);
	ic->id = &f->id;
	ic->dev = &f->dev;
	ic->conn = f->h.conn;
	ic->connected = true;
	ic->sq_free = ISER_SQ_DEPTH;
	ic->max_msg = MAX_MSG;
	scsitgt__iser_rdq_init(&ic->rdq, 4);
	scsitgt__list_init(&ic->rd_posted);
	ic->outq_tail = &ic->outq;
	/* One receive buffer, one SEND at a time. */
	f->rxmem = calloc(1, ISER_RECV_SLOT);
	ic->recvs = calloc(1, sizeof(*ic->recvs));
	assert_non_null(f->rxmem);
	assert_non_null(ic->recvs);
	ic->rxp.mem = f->rxmem;
	ic->rxp.mr = &f->rxmr;
	ic->rxp.buf_size = ISER_RECV_SLOT;
	ic->rxp.count = 1;
	ic->recvs[0].w.done = scsitgt__iser_recv_done;
	ic->recvs[0].ic = ic;
	/* The send buffers. */
	f->txmem = calloc(ISER_NSEND, ISER_SEND_SLOT);
	f->txstack = calloc(ISER_NSEND, sizeof(*f->txstack));
	ic->slots = calloc(ISER_NSEND, sizeof(*ic->slots));
	assert_non_null(f->txmem);
	assert_non_null(f->txstack);
	assert_non_null(ic->slots);
	for (uint32_t i = 0; i < ISER_NSEND; i++) {
		ic->slots[i].w.done = scsitgt__iser_slot_done;
		ic->slots[i].ic = ic;
		ic->slots[i].idx = i;
		f->txstack[i] = i;
	}
	ic->txp.mem = f->txmem;
	ic->txp.mr = &f->txmr;
	ic->txp.buf_size = ISER_SEND_SLOT;
	ic->txp.count = ISER_NSEND;
	ic->txp.nfree = ISER_NSEND;
	ic->txp.free_stack = f->txstack;
	assert_int_equal(scsitgt__iser_post_recv(ic, 0), 0);
	ic->recvs_used = 1;
	f->ic = ic;
	f->h.conn->dm_ctx = ic;
	f->attached = true;
}

static void fx_start(struct fx *f)
{
	memset(&rec, 0, sizeof(rec));
	memset(f, 0, sizeof(*f));
	cur = f;
	assert_int_equal(h_init_dm(&f->h, true, &fx_dm_ops), 0);
	assert_int_equal(h_login(&f->h, "Normal"), 0);
	fx_attach(f);
}

static void fx_finish(struct fx *f)
{
	h_fini(&f->h);
	assert_int_equal(rec.ids_destroyed, 1);
	assert_int_equal(rec.mrs_live, 0);
	assert_int_equal(f->dev.refs, 1);
	free(f->txmem);
	free(f->txstack);
	free(f->rxmem);
	cur = NULL;
}

/* Run the loop's ready work a bounded number of times, until @cond(@f). */
static bool fx_settle(struct fx *f, bool (*cond)(struct fx *f))
{
	for (int i = 0; i < 1000; i++) {
		if (cond(f))
			return true;
		uv_run(&f->h.loop, UV_RUN_NOWAIT);
	}
	return cond(f);
}

static bool fx_closing(struct fx *f)
{
	return f->ic->dm_close;
}

static bool fx_response_posted(struct fx *f)
{
	(void)f;
	return fx_open_sends(IBV_WR_SEND) > 0;
}

static bool fx_gone(struct fx *f)
{
	return h_conn_gone(&f->h);
}

/*
 * A SCSI Command arrives in the posted receive with the STag of its direction over
 * f->initiator: a READ(10) of @blocks (its Data-In and SCSI Response go as one chain), or a
 * WRITE(10) of @blocks without data (F=1: solicited by R2T, so by RDMA READ).
 */
static void fx_cmd(struct fx *f, bool write, uint16_t blocks)
{
	struct scsitgt__iser_hdr ih;
	int r = fx_open_recv();

	assert_true(r >= 0);
	memset(&ih, 0, sizeof(ih));
	ih.opcode = SCSITGT__ISER_OP_ISCSI;
	ih.wsv = write;
	ih.rsv = !write;
	ih.write_stag = ih.read_stag = STAG;
	ih.write_va = ih.read_va = (uintptr_t)f->initiator;
	scsitgt__iser_hdr_encode(f->rxmem, &ih);
	h_cmd_bhs(&f->h, f->rxmem + SCSITGT__ISER_HDR_LEN,
		  ISCSI_FLAG_FINAL | (write ? ISCSI_CMD_FLAG_WRITE : ISCSI_CMD_FLAG_READ),
		  blocks * 512u, write ? 0x2a : 0x28, 0, blocks);
	fx_complete((unsigned int)r, IBV_WC_SUCCESS, SCSITGT__ISER_HDR_LEN + ISCSI_BHS_LEN);
}

/*
 * The chain refused at work request @refused (from 1), and the fence behind what went out too
 * when @fence_refused (posted again as the connection closes): those before it are out, and
 * the batch and the connection wait for them.
 */
static void chain_refused_at(unsigned int refused, bool fence_refused)
{
	struct fx f;
	unsigned int out = refused - 1;
	bool fence = out > 0;

	fx_start(&f);
	rec.post_fail = refused;
	rec.post_fail_after = fence_refused ? 1 : 0;
	fx_cmd(&f, false, READ_BLOCKS);
	/* The connection fails and closes ("cannot post a send"). */
	assert_true(fx_settle(&f, fx_closing));
	assert_int_equal(rec.post_fail, 0);
	assert_int_equal(rec.post_fail_after, 0);
	assert_int_equal(rec.refused, fence_refused ? 2 : 1);
	assert_int_equal(fx_open_sends(IBV_WR_RDMA_WRITE), out);
	assert_int_equal(fx_open(IBV_WR_RDMA_WRITE, true), fence);
	assert_int_equal(fx_open_sends(IBV_WR_SEND), 0);
	assert_true(fx_open_recv() >= 0);
	/* The refused SEND's buffer is back; the WRITEs that went out still read their memory. */
	assert_int_equal(f.ic->txp.nfree, ISER_NSEND);
	assert_int_equal(rec.mrs_live, out ? 4 : 0);
	/* Freed only after the fence's completion (and the receive's) are back. */
	assert_int_equal(f.ic->posted, 1 + fence);
	assert_false(fx_gone(&f));
	/* With a fence, the first WRITE may have been done (no completion) before the QP failed. */
	if (fence)
		fx_complete((unsigned int)fx_first_open_send(), IBV_WC_SUCCESS, 0);
	fx_flush_all();
	assert_true(fx_settle(&f, fx_gone));
	assert_int_equal(rec.mrs_live, 0);
	fx_finish(&f);
}

/* Two of the four WRITEs went out, the third was refused. */
static void test_refused_in_writes(void **state)
{
	(void)state;
	chain_refused_at(3, false);
}

/* The four WRITEs went out, the SCSI Response's SEND was refused. */
static void test_refused_at_send(void **state)
{
	(void)state;
	chain_refused_at(5, false);
}

/* The fence was refused too, once: it goes out as the connection closes. */
static void test_refused_fence_refused(void **state)
{
	(void)state;
	chain_refused_at(3, true);
}

/* The WRITEs of the batch the last command's chain put out (no fence: zero-length ones). */
static unsigned int fx_writes_from(unsigned int first, unsigned int *idx, unsigned int max)
{
	unsigned int n = 0;

	for (unsigned int i = first; i < rec.nwrs; i++) {
		if (!rec.wrs[i].recv && rec.wrs[i].opcode == IBV_WR_RDMA_WRITE &&
		    !rec.wrs[i].empty) {
			assert_true(n < max);
			idx[n++] = i;
		}
	}
	return n;
}

/* Zero-length WRITEs (fences) posted, done or not. */
static unsigned int fx_fences(void)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < rec.nwrs; i++)
		n += !rec.wrs[i].recv && rec.wrs[i].opcode == IBV_WR_RDMA_WRITE && rec.wrs[i].empty;
	return n;
}

/*
 * review34 D2: a READ's chain refused at its third work request with the send queue full (the
 * provider's ENOMEM), so the fence is refused as well; an earlier READ's WRITEs and SCSI
 * Response are still out ahead of it. The two WRITEs that went out were done before the QP
 * went to error: they raise no completion, ever, and nothing may wait for one. The fence goes
 * out once a completion freed room on the send queue (the earlier SEND's flush); its flush
 * ends the batch, and the connection is freed. Before the fix each stranded WRITE counted as a
 * completion to come: ic->posted stayed at 2 and the connection was never freed.
 */
static void test_fence_posted_later(void **state)
{
	struct fx f;
	unsigned int w[4], first;

	(void)state;
	fx_start(&f);
	fx_cmd(&f, false, READ_BLOCKS);
	assert_true(fx_settle(&f, fx_response_posted));
	first = rec.nwrs;
	rec.post_fail = 3;
	rec.full_after = true;
	fx_cmd(&f, false, READ_BLOCKS);
	assert_true(fx_settle(&f, fx_closing));
	assert_int_equal(fx_writes_from(first, w, 4), 2);
	assert_true(rec.sq_full);
	assert_true(rec.refused >= 2); /* the chain, then its fence */
	assert_int_equal(fx_fences(), 0);
	/* The receive and the first READ's SEND; not the stranded WRITEs. */
	assert_int_equal(f.ic->posted, 2);
	assert_int_equal(rec.mrs_live, 8);
	/* Both executed before the QP went to error: no completion. */
	fx_complete(w[0], IBV_WC_SUCCESS, 0);
	fx_complete(w[1], IBV_WC_SUCCESS, 0);
	assert_false(fx_gone(&f));
	/* The flush: the first batch's SEND frees room, the fence goes out behind, flushed too. */
	fx_flush_all();
	assert_int_equal(fx_fences(), 1);
	assert_int_equal(fx_open(IBV_WR_RDMA_WRITE, true), 0);
	assert_true(fx_settle(&f, fx_gone));
	assert_int_equal(rec.mrs_live, 0);
	assert_true(scsitgt__list_empty(&f.dev.parked));
	fx_finish(&f);
}

/*
 * The same, but the provider never takes the fence: once every work request counted is back
 * the connection is freed anyway (its QP destroyed) and the batch ends; a late flush of one of
 * its WRITEs names memory the device keeps until its CQ goes (ASan: no use after free).
 */
static void test_fence_never_posted(void **state)
{
	struct fx f;
	unsigned int w[4];

	(void)state;
	fx_start(&f);
	rec.post_fail = 3;
	rec.full_after = true;
	rec.sq_stuck = true;
	fx_cmd(&f, false, READ_BLOCKS);
	assert_true(fx_settle(&f, fx_closing));
	assert_int_equal(fx_writes_from(0, w, 4), 2);
	assert_int_equal(fx_fences(), 0);
	assert_int_equal(f.ic->posted, 1); /* the receive */
	assert_int_equal(rec.mrs_live, 4);
	fx_complete(w[0], IBV_WC_SUCCESS, 0);
	fx_complete((unsigned int)fx_open_recv(), IBV_WC_WR_FLUSH_ERR, 0);
	assert_true(fx_settle(&f, fx_gone));
	assert_int_equal(fx_fences(), 0);
	assert_int_equal(rec.mrs_live, 0);
	assert_false(scsitgt__list_empty(&f.dev.parked));
	fx_complete(w[1], IBV_WC_WR_FLUSH_ERR, 0);
	scsitgt__rdma_dev_release_parked(&f.dev);
	fx_finish(&f);
}

/* The first was refused: nothing went out, the batch is unwound at once. */
static void test_refused_first(void **state)
{
	(void)state;
	chain_refused_at(1, false);
}

/* A chain taken whole: the response follows its data, and the batch ends with the SEND. */
static void test_chain_taken(void **state)
{
	struct fx f;

	(void)state;
	fx_start(&f);
	for (unsigned int i = 0; i < sizeof(f.initiator); i++)
		f.initiator[i] = (uint8_t)i;
	fx_cmd(&f, false, READ_BLOCKS);
	assert_true(fx_settle(&f, fx_response_posted));
	assert_int_equal(fx_open_sends(IBV_WR_RDMA_WRITE), 4);
	assert_int_equal(fx_open_sends(IBV_WR_SEND), 1);
	assert_int_equal(rec.mrs_live, 4);
	assert_int_equal(f.ic->posted, 2); /* the receive reposted and the SEND */
	for (unsigned int i = 0; i < rec.nwrs; i++) {
		if (!rec.wrs[i].done && !rec.wrs[i].recv)
			fx_complete(i, IBV_WC_SUCCESS, 0);
	}
	assert_int_equal(rec.mrs_live, 0);
	assert_int_equal(f.ic->posted, 1);
	assert_int_equal(f.ic->txp.nfree, ISER_NSEND);
	scsitgt__iscsi_conn_close(f.h.conn, "test over");
	assert_true(fx_settle(&f, fx_closing));
	fx_flush_all();
	assert_true(fx_settle(&f, fx_gone));
	fx_finish(&f);
}

/*
 * The RDMA READ of an R2T is posted alone: refused, nothing went out; the READ and its per-io
 * registration go at once and the connection closes.
 */
static void test_read_refused(void **state)
{
	struct fx f;

	(void)state;
	fx_start(&f);
	rec.post_fail = 1;
	fx_cmd(&f, true, 8);
	assert_true(fx_settle(&f, fx_closing));
	assert_int_equal(rec.post_fail, 0); /* the READ was the one refused */
	assert_int_equal(fx_open_sends(IBV_WR_RDMA_READ), 0);
	assert_int_equal(rec.mrs_live, 0);
	assert_int_equal(f.ic->posted, 1);
	assert_int_equal(f.ic->sq_free, ISER_SQ_DEPTH);
	fx_flush_all();
	assert_true(fx_settle(&f, fx_gone));
	fx_finish(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chain_taken),
		cmocka_unit_test(test_refused_in_writes),
		cmocka_unit_test(test_refused_at_send),
		cmocka_unit_test(test_refused_fence_refused),
		cmocka_unit_test(test_fence_posted_later),
		cmocka_unit_test(test_fence_never_posted),
		cmocka_unit_test(test_refused_first),
		cmocka_unit_test(test_read_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
