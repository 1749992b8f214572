/* SPDX-License-Identifier: MIT */
/*
 * SRP_CMD and SRP_TSK_MGMT on a channel without an RDMA device (transport/srp/srp_cmd.c): a
 * port that never listens, a login admitted on home (no workers) and a channel whose QP is a
 * fake one. Its post_send (ibv_post_send() calls the QP's context ops) records each SEND's IU
 * and the work request; the test completes them when it wants, so it decides when the send
 * queue has room (RDMA WRITEs of Data-In are recorded, never performed). The port's registered
 * command memory is a buffer pool over plain memory under a fake MR. Checked: what the
 * channel answers, and in which order.
 *
 * An indirect table of more than 256 descriptors fails that command with CHECK
 * CONDITION, ILLEGAL REQUEST, INVALID FIELD IN COMMAND INFORMATION UNIT and keeps the channel
 * (review32 N8); a TMF response never overtakes the response of a task that completed before
 * the function but waits for send queue room (review32 N7).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/core.h"
#include "transport/srp/srp_int.h"
#include "util/be.h"

#define NSEND 8u
#define SQ_DEPTH 64u
#define REC_MAX 64u

/* What the fake QP was given: each SEND's IU, and every work request to complete. */
static struct {
	struct {
		uint8_t iu[512];
		uint32_t len;
	} sends[REC_MAX];
	unsigned int nsends;
	/* Work requests: what they were (their lists lived on the poster's stack). */
	struct {
		uint64_t wr_id;
		enum ibv_wr_opcode opcode;
		uint64_t remote_addr;
		uint32_t len;
	} wrs[REC_MAX];
	unsigned int nwrs;
} rec;

static int fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	(void)qp;
	(void)bad;
	for (; wr; wr = wr->next) {
		assert_true(rec.nwrs < REC_MAX);
		rec.wrs[rec.nwrs].wr_id = wr->wr_id;
		rec.wrs[rec.nwrs].opcode = wr->opcode;
		rec.wrs[rec.nwrs].remote_addr = wr->wr.rdma.remote_addr;
		rec.wrs[rec.nwrs].len = wr->num_sge ? wr->sg_list[0].length : 0;
		rec.nwrs++;
		if (wr->opcode != IBV_WR_SEND)
			continue;
		assert_true(rec.nsends < REC_MAX);
		assert_true(wr->sg_list[0].length <= sizeof(rec.sends[0].iu));
		memcpy(rec.sends[rec.nsends].iu, (const void *)(uintptr_t)wr->sg_list[0].addr,
		       wr->sg_list[0].length);
		rec.sends[rec.nsends].len = wr->sg_list[0].length;
		rec.nsends++;
	}
	return 0;
}

struct world {
	uv_loop_t loop;
	struct scsitgt_engine *engine;
	struct scsitgt_target *tgt;
	struct scsitgt_srp_portal *port;
	struct srp_nexus *nx;
	struct srp_ch *ch;
	/* The fake verbs objects behind ch->id. */
	struct ibv_context vctx;
	struct ibv_qp qp;
	struct rdma_cm_id id;
	struct ibv_mr txmr;
	struct scsitgt__rdma_mem mem;
	uint8_t *txmem;
	uint32_t *txstack;
	uint64_t next_tag;
};

static void destroyed(void *arg, int status)
{
	assert_int_equal(status, 0);
	(*(int *)arg)++;
}

static void ram_lun(struct world *w)
{
	struct scsitgt_lun_opts lo;
	struct scsitgt_lun *lun;
	void *bctx;

	assert_int_equal(scsitgt_backend_ram_create(&bctx), 0);
	scsitgt_lun_opts_init(&lo, sizeof(lo));
	lo.id = 0;
	lo.block_size = 512;
	lo.num_blocks = 2048;
	lo.backend = scsitgt_backend_ram_ops();
	lo.backend_ctx = bctx;
	assert_int_equal(scsitgt_lun_create(&lun, w->tgt, &lo), 0);
}

/* The channel's QP, send buffers and credits as ch_accept() leaves them, on fakes. */
static void channel_up(struct world *w)
{
	struct srp_ch *ch = w->ch;

	w->vctx.ops.post_send = fake_post_send;
	w->qp.context = &w->vctx;
	w->id.qp = &w->qp;
	ch->id = &w->id;
	ch->it_iu_len = 8192;
	ch->ti_iu_len = 512;
	ch->nsend = NSEND;
	ch->slots = calloc(NSEND, sizeof(*ch->slots));
	w->txmem = calloc(NSEND, 512);
	w->txstack = calloc(NSEND, sizeof(*w->txstack));
	assert_non_null(ch->slots);
	assert_non_null(w->txmem);
	assert_non_null(w->txstack);
	for (uint32_t i = 0; i < NSEND; i++) {
		ch->slots[i].ch = ch;
		ch->slots[i].idx = i;
		w->txstack[i] = i;
	}
	w->txmr.lkey = 0x1234;
	ch->txp.mem = w->txmem;
	ch->txp.mr = &w->txmr;
	ch->txp.buf_size = 512;
	ch->txp.count = NSEND;
	ch->txp.nfree = NSEND;
	ch->txp.free_stack = w->txstack;
	ch->sq_depth = SQ_DEPTH;
	ch->sq_free = SQ_DEPTH;
	ch->rd_depth = 4;
	/* The port's command buffers: 1 MiB in 4 KiB units, "registered" under the fake MR. */
	w->mem.size = 1u << 20;
	w->mem.mem = aligned_alloc(4096, w->mem.size);
	assert_non_null(w->mem.mem);
	assert_int_equal(scsitgt__bufpool_init(&w->mem.bp, w->mem.mem, w->mem.size, 12,
					       SCSITGT__BUFPOOL_MAX_ORDER),
			 0);
	w->mem.mr = &w->txmr;
	w->mem.owned = true;
	ch->mem = &w->mem;
	scsitgt__rdma_mem_use(ch->mem);
	scsitgt__srp_credits_init(&ch->cred, w->port->opts.queue_size);
	ch->accepted = true;
	ch->connected = true;
}

static void world_create(struct world *w)
{
	struct scsitgt__srp_login_req req;
	struct scsitgt_target_opts to;
	struct scsitgt_srp_portal *port;
	uint8_t mc;

	memset(w, 0, sizeof(*w));
	memset(&rec, 0, sizeof(rec));
	assert_int_equal(uv_loop_init(&w->loop), 0);
	assert_int_equal(scsitgt_engine_create(&w->engine, &w->loop, NULL), 0);
	scsitgt_target_opts_init(&to, sizeof(to));
	to.name = "iqn.2026-12.org.example:srp-cmd";
	assert_int_equal(scsitgt_target_create(&w->tgt, w->engine, &to), 0);
	ram_lun(w);
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
	assert_int_equal(scsitgt__rdma_loops_init(&port->loops, w->engine, false, NULL, NULL), 0);
	w->port = port;
	memset(&req, 0, sizeof(req));
	req.initiator_port_id[15] = 1;
	req.target_port_id[15] = 0x77;
	assert_int_equal(scsitgt__srp_nexus_admit(&w->nx, port, &req, false, "peer", &mc), 0);
	assert_null(w->nx->w);
	w->ch = calloc(1, sizeof(*w->ch));
	assert_non_null(w->ch);
	scsitgt__srp_ch_attach(w->ch, port, NULL, w->nx);
	scsitgt__srp_ch_join(w->ch);
	channel_up(w);
	w->next_tag = 1;
}

/* Run the home loop's ready work a bounded number of times, until @cond(@w). */
static bool settle(struct world *w, bool (*cond)(struct world *w))
{
	for (int i = 0; i < 1000; i++) {
		if (cond(w))
			return true;
		uv_run(&w->loop, UV_RUN_NOWAIT);
	}
	return cond(w);
}

/* Complete every recorded work request (in order, successfully). */
static void complete_all(struct world *w)
{
	for (unsigned int i = 0; i < rec.nwrs; i++) {
		struct scsitgt__rdma_wr *wr =
			(struct scsitgt__rdma_wr *)(uintptr_t)rec.wrs[i].wr_id;
		struct srp_slot *s;
		struct ibv_wc wc;

		memset(&wc, 0, sizeof(wc));
		wc.status = IBV_WC_SUCCESS;
		wc.wr_id = rec.wrs[i].wr_id;
		if (wr->done) {
			wr->done(wr, &wc);
			continue;
		}
		/* A slot of our own IUs (srp_portal.c's slot_done is not reachable from here). */
		s = scsitgt__container_of(wr, struct srp_slot, w);
		w->ch->posted--;
		w->ch->sq_free++;
		scsitgt__rdma_pool_put(&w->ch->txp, s->idx);
	}
	rec.nwrs = 0;
}

static bool port_idle(struct world *w)
{
	return scsitgt__list_empty(&w->port->chans) && scsitgt__list_empty(&w->port->nexuses) &&
	       scsitgt__list_empty(&w->tgt->sessions);
}

static bool loops_released(struct world *w)
{
	return scsitgt__rdma_loops_release(&w->port->loops);
}

static void world_destroy(struct world *w)
{
	int done = 0;

	complete_all(w);
	assert_int_equal(w->ch->posted, 0);
	/* The fakes go first: the channel then closes as one that never had an id. */
	w->ch->id = NULL;
	w->ch->connected = false;
	w->ch->accepted = false;
	scsitgt__srp_nexus_close(w->nx, SRP_TLO_NO_REASON, "test over");
	assert_true(settle(w, port_idle));
	assert_true(settle(w, loops_released));
	scsitgt__rdma_loops_fini(&w->port->loops);
	free(w->port);
	free(w->txmem);
	free(w->txstack);
	assert_int_equal(w->mem.users, 0);
	assert_int_equal(w->mem.bp.live_blocks, 0);
	scsitgt__bufpool_fini(&w->mem.bp);
	free(w->mem.mem);
	scsitgt_engine_destroy(w->engine, destroyed, &done);
	uv_run(&w->loop, UV_RUN_DEFAULT);
	assert_int_equal(done, 1);
	assert_int_equal(uv_loop_close(&w->loop), 0);
}

/* Hand the channel one IU as its receive completion does. */
static void deliver(struct world *w, const uint8_t *iu, size_t len)
{
	w->ch->busy++;
	assert_int_equal(scsitgt__srp_ch_recv(w->ch, iu, len), 0);
	scsitgt__srp_ch_leave(w->ch);
}

/* An SRP_CMD of @cdb on LUN 0 with the buffers of @s (its tag set here); returns the tag. */
static uint64_t send_spec(struct world *w, struct scsitgt__srp_cmd_spec *s, const uint8_t cdb[16])
{
	uint8_t iu[128];
	size_t n;

	s->tag = w->next_tag++;
	s->cdb = cdb;
	s->cdb_len = 16;
	n = scsitgt__srp_cmd_encode(iu, sizeof(iu), s);
	assert_true(n > 0);
	deliver(w, iu, n);
	return s->tag;
}

/* The same without data. */
static uint64_t send_cmd(struct world *w, const uint8_t cdb[16])
{
	struct scsitgt__srp_cmd_spec s;

	memset(&s, 0, sizeof(s));
	return send_spec(w, &s, cdb);
}

/* The recorded SRP_RSP of @tag, decoded; false when there is none. */
static bool rsp_of(uint64_t tag, struct scsitgt__srp_rsp *r)
{
	for (unsigned int i = 0; i < rec.nsends; i++) {
		if (rec.sends[i].iu[0] != SRP_IU_RSP ||
		    scsitgt__srp_rsp_decode(rec.sends[i].iu, rec.sends[i].len, r) < 0)
			continue;
		if (r->tag == tag)
			return true;
	}
	return false;
}

static uint64_t want_tag;

static bool answered(struct world *w)
{
	struct scsitgt__srp_rsp r;

	(void)w;
	return rsp_of(want_tag, &r);
}

/* The first command of the nexus (its power-on unit attention) is answered and done with. */
static void clear_ua(struct world *w)
{
	static const uint8_t tur[16] = { 0 };

	want_tag = send_cmd(w, tur);
	assert_true(settle(w, answered));
	complete_all(w);
}

/*
 * review32 N8: a WRITE whose indirect table holds 257 descriptors (one of them in the IU, as
 * ib_srp sends a long list) fails with CHECK CONDITION, ILLEGAL REQUEST, INVALID FIELD IN
 * COMMAND INFORMATION UNIT; the channel is not logged out and takes the next command.
 */
static void test_too_many_descriptors(void **state)
{
	static const uint8_t write10[16] = { 0x2a, 0, 0, 0, 0, 0, 0, 0, 8 };
	static const uint8_t tur[16] = { 0 };
	struct scsitgt__srp_desc d = { .va = 0x10000, .key = 7, .len = 4096 };
	struct scsitgt__srp_cmd_spec s;
	struct scsitgt__srp_rsp r;
	struct world w;

	(void)state;
	world_create(&w);
	clear_ua(&w);
	memset(&s, 0, sizeof(s));
	s.out_fmt = SRP_DESC_INDIRECT;
	s.descs = &d;
	s.ndescs = 1;
	s.table.va = 0x20000;
	s.table.key = 9;
	s.table.len = (SRP_MAX_DESCRIPTORS + 1) * SRP_DIRECT_DESC_LEN;
	s.total_len = 4096;
	want_tag = send_spec(&w, &s, write10);
	assert_true(settle(&w, answered));
	assert_false(w.ch->closing);
	assert_true(rsp_of(s.tag, &r));
	assert_int_equal(r.status, 0x02); /* CHECK CONDITION */
	assert_true(r.sense_len >= 14);
	assert_int_equal(r.sense[2] & 0x0f, 0x05); /* ILLEGAL REQUEST */
	assert_int_equal(r.sense[12], 0x0e);
	assert_int_equal(r.sense[13], 0x03);
	/* No RDMA READ went out for it (only the response's SEND). */
	for (unsigned int i = 0; i < rec.nwrs; i++)
		assert_int_equal(rec.wrs[i].opcode, IBV_WR_SEND);
	complete_all(&w);
	/* The channel goes on. */
	want_tag = send_cmd(&w, tur);
	assert_true(settle(&w, answered));
	assert_true(rsp_of(want_tag, &r));
	assert_int_equal(r.status, 0);
	assert_false(w.ch->closing);
	world_destroy(&w);
}

/* A TMF on LUN 0 (SRP_TSK_MGMT); returns its tag. */
static uint64_t send_tmf(struct world *w, uint8_t func)
{
	struct scsitgt__srp_tsk_mgmt tm;
	uint8_t iu[SRP_TSK_MGMT_LEN];

	memset(&tm, 0, sizeof(tm));
	tm.tag = w->next_tag++;
	tm.func = func;
	scsitgt__srp_tsk_mgmt_encode(iu, &tm);
	deliver(w, iu, sizeof(iu));
	return tm.tag;
}

/* Where the SRP_RSP of @tag is among the recorded SENDs, or -1. */
static int rsp_at(uint64_t tag)
{
	struct scsitgt__srp_rsp r;

	for (unsigned int i = 0; i < rec.nsends; i++) {
		if (rec.sends[i].iu[0] == SRP_IU_RSP &&
		    scsitgt__srp_rsp_decode(rec.sends[i].iu, rec.sends[i].len, &r) == 0 &&
		    r.tag == tag)
			return (int)i;
	}
	return -1;
}

static struct srp_task *first_waiting(struct world *w)
{
	if (scsitgt__list_empty(&w->ch->sendq))
		return NULL;
	return scsitgt__container_of(w->ch->sendq.next, struct srp_task, qnode);
}

static bool read_waits(struct world *w)
{
	return first_waiting(w) != NULL;
}

/* The TMF of want_tag ended: answered, or its response queued. */
static bool tmf_ended(struct world *w)
{
	return !scsitgt__list_empty(&w->ch->tmfq) || rsp_at(want_tag) >= 0;
}

/*
 * review32 N7: a READ completes first, but its Data-In (an RDMA WRITE) and SRP_RSP need two
 * send queue entries and only one is free: it waits in the send queue. A task management
 * function ending now (ABORT TASK SET, LOGICAL UNIT RESET) must not take that one entry: its
 * response goes after the READ's once room comes back (SAM-5: the responses of tasks that
 * completed before the function precede its own; ib_srp drops an SRP_RSP whose tag it already
 * gave up with the TMF). Then the same with no room at all, where only the pump decides.
 */
static void tmf_behind_waiting_read(uint8_t func, unsigned int room)
{
	static const uint8_t read10[16] = { 0x28, 0, 0, 0, 0, 0, 0, 0, 8 };
	struct scsitgt__srp_desc d = { .va = 0x10000, .key = 7, .len = 4096 };
	struct scsitgt__srp_cmd_spec s;
	struct scsitgt__srp_rsp r;
	struct world w;
	uint64_t tmf;

	world_create(&w);
	clear_ua(&w);
	w.ch->sq_free = room;
	memset(&s, 0, sizeof(s));
	s.in_fmt = SRP_DESC_DIRECT;
	s.descs = &d;
	s.ndescs = 1;
	s.total_len = 4096;
	rec.nsends = 0;
	send_spec(&w, &s, read10);
	assert_true(settle(&w, read_waits));
	assert_int_equal(first_waiting(&w)->tag, s.tag);
	assert_int_equal(rec.nsends, 0);
	tmf = send_tmf(&w, func);
	want_tag = tmf;
	assert_true(settle(&w, tmf_ended));
	/* Room for everything: the pump runs as a completion's would. */
	w.ch->sq_free += SQ_DEPTH - room;
	w.ch->busy++;
	scsitgt__srp_ch_leave(w.ch);
	assert_true(rsp_at(s.tag) >= 0);
	assert_true(rsp_at(tmf) >= 0);
	assert_true(rsp_at(s.tag) < rsp_at(tmf));
	assert_true(rsp_of(s.tag, &r));
	assert_int_equal(r.status, 0);
	assert_int_equal(r.data_in_res, 0);
	/* The WRITE of the Data-In went before the READ's SRP_RSP, in one chain. */
	assert_int_equal(rec.wrs[0].opcode, IBV_WR_RDMA_WRITE);
	assert_int_equal(rec.wrs[0].remote_addr, d.va);
	assert_int_equal(rec.wrs[0].len, 4096);
	assert_int_equal(rec.wrs[1].opcode, IBV_WR_SEND);
	assert_false(w.ch->closing);
	world_destroy(&w);
}

static void test_tmf_behind_waiting_read(void **state)
{
	(void)state;
	tmf_behind_waiting_read(SRP_TSK_ABORT_TASK_SET, 1);
	tmf_behind_waiting_read(SRP_TSK_LUN_RESET, 1);
	tmf_behind_waiting_read(SRP_TSK_ABORT_TASK_SET, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_too_many_descriptors),
		cmocka_unit_test(test_tmf_behind_waiting_read),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
