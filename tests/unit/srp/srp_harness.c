/* SPDX-License-Identifier: MIT */
/* The world of the SRP unit tests without an RDMA device: see srp_harness.h. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "srp_harness.h"
#include "util/be.h"

/* ---- the port world ---- */

static void destroyed(void *arg, int status)
{
	assert_int_equal(status, 0);
	(*(int *)arg)++;
}

void srp_world_create(struct srp_world *w, const struct scsitgt_engine_opts *eo,
		      const char *tgt_name, bool on_workers)
{
	struct scsitgt_target_opts to;
	struct scsitgt_srp_portal *port;

	memset(w, 0, sizeof(*w));
	assert_int_equal(uv_loop_init(&w->loop), 0);
	assert_int_equal(scsitgt_engine_create(&w->engine, &w->loop, eo), 0);
	scsitgt_target_opts_init(&to, sizeof(to));
	to.name = tgt_name;
	assert_int_equal(scsitgt_target_create(&w->tgt, w->engine, &to), 0);
	/* What scsitgt_srp_portal_create() sets up, without its listener. */
	port = calloc(1, sizeof(*port));
	assert_non_null(port);
	port->engine = w->engine;
	port->tgt = w->tgt;
	scsitgt_srp_portal_opts_init(&port->opts, sizeof(port->opts));
	port->opts.rel_port_id = 1;
	scsitgt__list_init(&port->chans);
	scsitgt__list_init(&port->nexuses);
	scsitgt__list_init(&port->tgt_node);
	assert_int_equal(scsitgt__rdma_loops_init(&port->loops, w->engine, on_workers, NULL, NULL),
			 0);
	w->port = port;
}

bool srp_world_idle(struct srp_world *w)
{
	return scsitgt__list_empty(&w->port->chans) && scsitgt__list_empty(&w->port->nexuses) &&
	       scsitgt__list_empty(&w->tgt->sessions);
}

void srp_world_wait(struct srp_world *w, bool (*cond)(struct srp_world *w))
{
	while (!cond(w))
		uv_run(&w->loop, UV_RUN_ONCE);
}

static bool loops_released(struct srp_world *w)
{
	return scsitgt__rdma_loops_release(&w->port->loops);
}

void srp_world_destroy(struct srp_world *w)
{
	int done = 0;

	srp_world_wait(w, srp_world_idle);
	srp_world_wait(w, loops_released);
	scsitgt__rdma_loops_fini(&w->port->loops);
	free(w->port);
	scsitgt_engine_destroy(w->engine, destroyed, &done);
	uv_run(&w->loop, UV_RUN_DEFAULT);
	assert_int_equal(done, 1);
	assert_int_equal(uv_loop_close(&w->loop), 0);
}

/* ---- the fakes ---- */

struct srp_cw_rec srp_rec;

/* The channel world whose fakes are in use (one at a time). */
static struct srp_cw *cur;

#define TX_LKEY 0x1234u
#define MEM_LKEY 0x4321u
#define MR_MAX 64u

/* Registrations of ibv_reg_mr() that are live. */
static struct ibv_mr *mrs[MR_MAX];
static uint32_t next_lkey = 0x5000;

/*
 * The harness's ibv_reg_mr() (verbs.h makes ibv_reg_mr a macro that calls this function for
 * constant access flags): a region no HCA ever sees, with an lkey of its own.
 */
#undef ibv_reg_mr
struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	struct ibv_mr *mr;

	(void)access;
	if (srp_rec.reg_fail) {
		srp_rec.reg_fail--;
		errno = ENOMEM;
		return NULL;
	}
	assert_ptr_equal(pd, &cur->pd);
	mr = calloc(1, sizeof(*mr));
	assert_non_null(mr);
	mr->pd = pd;
	mr->addr = addr;
	mr->length = length;
	mr->lkey = next_lkey++;
	mr->rkey = mr->lkey;
	for (unsigned int i = 0; i < MR_MAX; i++) {
		if (mrs[i] == NULL) {
			mrs[i] = mr;
			srp_rec.mrs_live++;
			return mr;
		}
	}
	fail_msg("more than %u live registrations", MR_MAX);
	return NULL;
}

int ibv_dereg_mr(struct ibv_mr *mr)
{
	for (unsigned int i = 0; i < MR_MAX; i++) {
		if (mrs[i] == mr) {
			mrs[i] = NULL;
			srp_rec.mrs_live--;
			free(mr);
			return 0;
		}
	}
	fail_msg("ibv_dereg_mr() of an MR that is not registered");
	return EINVAL;
}

/* The QP goes to error when the test flushes; nothing else happens here. */
int rdma_disconnect(struct rdma_cm_id *id)
{
	assert_ptr_equal(id, &cur->id);
	srp_rec.disconnects++;
	return 0;
}

int rdma_destroy_id(struct rdma_cm_id *id)
{
	assert_ptr_equal(id, &cur->id);
	srp_rec.ids_destroyed++;
	return 0;
}

static bool inside(uint64_t addr, uint32_t len, const void *base, size_t size)
{
	uintptr_t b = (uintptr_t)base;

	return addr >= b && addr + len <= b + size;
}

/* Whether @lkey registers [@addr, @addr + @len), as the HCA checks a local SGE. */
static bool lkey_covers(uint32_t lkey, uint64_t addr, uint32_t len)
{
	if (lkey == TX_LKEY)
		return inside(addr, len, cur->txmem, SRP_CW_NSEND * 512u);
	if (lkey == MEM_LKEY)
		return inside(addr, len, cur->mem.mem, cur->mem.size);
	for (unsigned int i = 0; i < MR_MAX; i++) {
		if (mrs[i] && mrs[i]->lkey == lkey)
			return inside(addr, len, mrs[i]->addr, mrs[i]->length);
	}
	return false;
}

static int fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	unsigned int fail = srp_rec.post_fail;

	assert_ptr_equal(qp, &cur->qp);
	srp_rec.post_fail = 0;
	for (; wr; wr = wr->next) {
		struct srp_cw_wr *r = &srp_rec.wrs[srp_rec.nwrs];

		if (fail && --fail == 0) {
			*bad = wr;
			return ENOMEM;
		}

		assert_true(srp_rec.nwrs < SRP_CW_WR_MAX);
		assert_int_equal(wr->num_sge, 1);
		memset(r, 0, sizeof(*r));
		r->wr_id = wr->wr_id;
		r->opcode = wr->opcode;
		r->local = wr->sg_list[0].addr;
		r->lkey = wr->sg_list[0].lkey;
		r->len = wr->sg_list[0].length;
		r->remote = wr->wr.rdma.remote_addr;
		r->rkey = wr->wr.rdma.rkey;
		assert_true(lkey_covers(r->lkey, r->local, r->len));
		srp_rec.nwrs++;
		assert_true(srp_cw_open() <= cur->ch->sq_depth);
		if (wr->opcode == IBV_WR_RDMA_READ) {
			srp_rec.reads_open++;
			/* The initiator granted this many (its responder resources). */
			assert_true(srp_rec.reads_open <= cur->ch->rd_depth);
		}
		if (wr->opcode != IBV_WR_SEND)
			continue;
		/* SRP_RSP, SRP_CRED_REQ and SRP_AER_REQ carry a REQUEST LIMIT DELTA (§5.5.2). */
		if (r->len >= 8 && (*(const uint8_t *)(uintptr_t)r->local == SRP_IU_RSP ||
				    *(const uint8_t *)(uintptr_t)r->local == SRP_IU_CRED_REQ ||
				    *(const uint8_t *)(uintptr_t)r->local == SRP_IU_AER_REQ))
			srp_rec.credits_back += get_be32((const uint8_t *)(uintptr_t)r->local + 4);
		assert_true(srp_rec.nsends < SRP_CW_SEND_MAX);
		assert_true(r->len <= sizeof(srp_rec.sends[0].iu));
		memcpy(srp_rec.sends[srp_rec.nsends].iu, (const void *)(uintptr_t)r->local, r->len);
		srp_rec.sends[srp_rec.nsends].len = r->len;
		srp_rec.sends[srp_rec.nsends].solicited = wr->send_flags & IBV_SEND_SOLICITED;
		srp_rec.nsends++;
	}
	return 0;
}

/* ---- one channel ---- */

static void ram_lun(struct srp_cw *w)
{
	struct scsitgt_lun_opts lo;
	void *bctx;

	assert_int_equal(scsitgt_backend_ram_create(&bctx), 0);
	scsitgt_lun_opts_init(&lo, sizeof(lo));
	lo.id = 0;
	lo.block_size = 512;
	lo.num_blocks = 2048;
	lo.backend = scsitgt_backend_ram_ops();
	lo.backend_ctx = bctx;
	assert_int_equal(scsitgt_lun_create(&w->lun, w->base.tgt, &lo), 0);
}

/* The channel's QP, send buffers and credits as ch_accept() leaves them, on fakes. */
static void channel_up(struct srp_cw *w)
{
	struct srp_ch *ch = w->ch;

	w->vctx.ops.post_send = fake_post_send;
	w->qp.context = &w->vctx;
	w->id.qp = &w->qp;
	w->id.verbs = &w->vctx;
	w->pd.context = &w->vctx;
	ch->id = &w->id;
	/* The device: the test keeps a reference of its own, so the channel's put frees nothing. */
	w->dev.verbs = &w->vctx;
	w->dev.pd = &w->pd;
	w->dev.refs = 2;
	scsitgt__list_init(&w->dev.node);
	ch->dev = &w->dev;
	ch->it_iu_len = 8192;
	ch->ti_iu_len = 512;
	ch->nsend = SRP_CW_NSEND;
	ch->slots = calloc(SRP_CW_NSEND, sizeof(*ch->slots));
	w->txmem = calloc(SRP_CW_NSEND, 512);
	w->txstack = calloc(SRP_CW_NSEND, sizeof(*w->txstack));
	assert_non_null(ch->slots);
	assert_non_null(w->txmem);
	assert_non_null(w->txstack);
	for (uint32_t i = 0; i < SRP_CW_NSEND; i++) {
		ch->slots[i].w.done = scsitgt__srp_slot_done;
		ch->slots[i].ch = ch;
		ch->slots[i].idx = i;
		w->txstack[i] = i;
	}
	w->txmr.lkey = TX_LKEY;
	ch->txp.mem = w->txmem;
	ch->txp.mr = &w->txmr;
	ch->txp.buf_size = 512;
	ch->txp.count = SRP_CW_NSEND;
	ch->txp.nfree = SRP_CW_NSEND;
	ch->txp.free_stack = w->txstack;
	ch->sq_depth = SRP_CW_SQ_DEPTH;
	ch->sq_free = SRP_CW_SQ_DEPTH;
	ch->rd_depth = SRP_CW_RD_DEPTH;
	/* The port's command buffers in 4 KiB units, "registered" under their fake MR. */
	w->mem.size = SRP_CW_MEM;
	w->mem.mem = aligned_alloc(4096, w->mem.size);
	assert_non_null(w->mem.mem);
	assert_int_equal(scsitgt__bufpool_init(&w->mem.bp, w->mem.mem, w->mem.size, 12,
					       SCSITGT__BUFPOOL_MAX_ORDER),
			 0);
	w->memmr.lkey = MEM_LKEY;
	w->mem.mr = &w->memmr;
	w->mem.owned = true;
	ch->mem = &w->mem;
	scsitgt__rdma_mem_use(ch->mem);
	scsitgt__srp_credits_init(&ch->cred, w->base.port->opts.queue_size);
	ch->accepted = true;
	ch->connected = true;
}

void srp_cw_create(struct srp_cw *w, const char *tgt_name)
{
	struct scsitgt__srp_login_req req;
	uint8_t mc;

	memset(w, 0, sizeof(*w));
	memset(&srp_rec, 0, sizeof(srp_rec));
	cur = w;
	srp_world_create(&w->base, NULL, tgt_name, false);
	ram_lun(w);
	memset(&req, 0, sizeof(req));
	req.initiator_port_id[15] = 1;
	req.target_port_id[15] = 0x77;
	assert_int_equal(scsitgt__srp_nexus_admit(&w->nx, w->base.port, &req, false, "peer", &mc),
			 0);
	assert_null(w->nx->w);
	w->ch = calloc(1, sizeof(*w->ch));
	assert_non_null(w->ch);
	scsitgt__srp_ch_attach(w->ch, w->base.port, NULL, w->nx);
	scsitgt__srp_ch_join(w->ch);
	channel_up(w);
	w->next_tag = 1;
}

bool srp_cw_has_ch(struct srp_cw *w)
{
	return !scsitgt__list_empty(&w->base.port->chans);
}

bool srp_cw_settle(struct srp_cw *w, bool (*cond)(struct srp_cw *w))
{
	for (int i = 0; i < 1000; i++) {
		if (cond(w))
			return true;
		uv_run(&w->base.loop, UV_RUN_NOWAIT);
	}
	return cond(w);
}

void srp_cw_destroy(struct srp_cw *w)
{
	if (srp_cw_has_ch(w)) {
		srp_cw_complete_all(w);
		assert_int_equal(w->ch->posted, 0);
		assert_int_equal(w->ch->cred.inflight, 0);
		assert_int_equal(srp_rec.credits_back + w->ch->cred.owed, srp_rec.requests);
		/* The channel closes as one that was never connected: no SRP_T_LOGOUT, no flush. */
		w->ch->connected = false;
		w->ch->accepted = false;
		scsitgt__srp_nexus_close(w->nx, SRP_TLO_NO_REASON, "test over");
	}
	assert_int_equal(srp_cw_open(), 0);
	srp_world_destroy(&w->base);
	/* The channel let go of its id, its device, the port's memory and every registration. */
	assert_int_equal(srp_rec.ids_destroyed, 1);
	assert_int_equal(w->dev.refs, 1);
	assert_int_equal(w->mem.users, 0);
	assert_int_equal(w->mem.bp.live_blocks, 0);
	assert_int_equal(srp_rec.mrs_live, 0);
	scsitgt__bufpool_fini(&w->mem.bp);
	free(w->mem.mem);
	free(w->txmem);
	free(w->txstack);
	cur = NULL;
}

void srp_cw_deliver_rc(struct srp_cw *w, const uint8_t *iu, size_t len, int rc)
{
	if (len && (iu[0] == SRP_IU_CMD || iu[0] == SRP_IU_TSK_MGMT))
		srp_rec.requests++;
	w->ch->busy++;
	assert_int_equal(scsitgt__srp_ch_recv(w->ch, iu, len), rc);
	scsitgt__srp_ch_leave(w->ch);
}

uint64_t srp_cw_send_spec(struct srp_cw *w, struct scsitgt__srp_cmd_spec *s, const uint8_t *cdb)
{
	uint8_t iu[8192];
	size_t n;

	s->tag = w->next_tag++;
	s->cdb = cdb;
	s->cdb_len = 16;
	n = scsitgt__srp_cmd_encode(iu, sizeof(iu), s);
	assert_true(n > 0);
	srp_cw_deliver_rc(w, iu, n, 0);
	return s->tag;
}

uint64_t srp_cw_send_cmd(struct srp_cw *w, const uint8_t *cdb)
{
	struct scsitgt__srp_cmd_spec s;

	memset(&s, 0, sizeof(s));
	return srp_cw_send_spec(w, &s, cdb);
}

uint64_t srp_cw_send_tm(struct srp_cw *w, struct scsitgt__srp_tsk_mgmt *tm)
{
	uint8_t iu[SRP_TSK_MGMT_LEN];

	tm->tag = w->next_tag++;
	scsitgt__srp_tsk_mgmt_encode(iu, tm);
	srp_cw_deliver_rc(w, iu, sizeof(iu), 0);
	return tm->tag;
}

uint64_t srp_cw_send_tmf(struct srp_cw *w, uint8_t func, uint64_t task_tag)
{
	struct scsitgt__srp_tsk_mgmt tm;

	memset(&tm, 0, sizeof(tm));
	tm.func = func;
	tm.task_tag = task_tag;
	return srp_cw_send_tm(w, &tm);
}

int srp_cw_rsp_at(uint64_t tag)
{
	struct scsitgt__srp_rsp r;

	for (unsigned int i = 0; i < srp_rec.nsends; i++) {
		if (srp_rec.sends[i].iu[0] == SRP_IU_RSP &&
		    scsitgt__srp_rsp_decode(srp_rec.sends[i].iu, srp_rec.sends[i].len, &r) == 0 &&
		    r.tag == tag)
			return (int)i;
	}
	return -1;
}

bool srp_cw_rsp_of(uint64_t tag, struct scsitgt__srp_rsp *r)
{
	int i = srp_cw_rsp_at(tag);

	if (i < 0)
		return false;
	assert_int_equal(scsitgt__srp_rsp_decode(srp_rec.sends[i].iu, srp_rec.sends[i].len, r), 0);
	return true;
}

bool srp_cw_answered(struct srp_cw *w)
{
	return srp_cw_rsp_at(w->want_tag) >= 0;
}

void srp_cw_clear_ua(struct srp_cw *w)
{
	static const uint8_t tur[16] = { 0 };

	w->want_tag = srp_cw_send_cmd(w, tur);
	assert_true(srp_cw_settle(w, srp_cw_answered));
	srp_cw_complete_all(w);
}

/* ---- completions ---- */

unsigned int srp_cw_open(void)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < srp_rec.nwrs; i++)
		n += !srp_rec.wrs[i].done;
	return n;
}

unsigned int srp_cw_open_of(enum ibv_wr_opcode opcode)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < srp_rec.nwrs; i++)
		n += !srp_rec.wrs[i].done && srp_rec.wrs[i].opcode == opcode;
	return n;
}

int srp_cw_nth_open(enum ibv_wr_opcode opcode, unsigned int n)
{
	for (unsigned int i = 0; i < srp_rec.nwrs; i++) {
		if (srp_rec.wrs[i].done || srp_rec.wrs[i].opcode != opcode)
			continue;
		if (n-- == 0)
			return (int)i;
	}
	return -1;
}

void srp_cw_complete(struct srp_cw *w, unsigned int i, enum ibv_wc_status status)
{
	struct srp_cw_wr *r = &srp_rec.wrs[i];
	struct scsitgt__rdma_wr *wr = (struct scsitgt__rdma_wr *)(uintptr_t)r->wr_id;
	struct ibv_wc wc;

	(void)w;
	assert_true(i < srp_rec.nwrs);
	assert_false(r->done);
	r->done = true;
	if (r->opcode == IBV_WR_RDMA_READ)
		srp_rec.reads_open--;
	if (status == IBV_WC_SUCCESS && r->opcode == IBV_WR_RDMA_READ)
		memcpy((void *)(uintptr_t)r->local, (const void *)(uintptr_t)r->remote, r->len);
	if (status == IBV_WC_SUCCESS && r->opcode == IBV_WR_RDMA_WRITE)
		memcpy((void *)(uintptr_t)r->remote, (const void *)(uintptr_t)r->local, r->len);
	memset(&wc, 0, sizeof(wc));
	wc.status = status;
	wc.wr_id = r->wr_id;
	wc.opcode = r->opcode == IBV_WR_RDMA_READ  ? IBV_WC_RDMA_READ :
		    r->opcode == IBV_WR_RDMA_WRITE ? IBV_WC_RDMA_WRITE :
						     IBV_WC_SEND;
	wc.byte_len = r->opcode == IBV_WR_RDMA_READ ? r->len : 0;
	wr->done(wr, &wc);
}

void srp_cw_complete_all(struct srp_cw *w)
{
	for (unsigned int i = 0; i < srp_rec.nwrs; i++) {
		if (!srp_rec.wrs[i].done)
			srp_cw_complete(w, i, IBV_WC_SUCCESS);
	}
	srp_rec.nwrs = 0;
}

void srp_cw_flush_all(struct srp_cw *w)
{
	for (unsigned int i = 0; i < srp_rec.nwrs; i++) {
		if (!srp_rec.wrs[i].done)
			srp_cw_complete(w, i, IBV_WC_WR_FLUSH_ERR);
	}
}
