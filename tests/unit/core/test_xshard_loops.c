/* SPDX-License-Identifier: MIT */
/*
 * Per-LUN state across two shards (issue 18): an engine with one worker loop, nexus A on
 * home (shard 0) and nexus B bound to the worker's shard (shard 1), whose commands run on
 * the worker thread (posted to its inbox; the null backend completes them there): reservations,
 * unit attentions and mode parameters one shard changes and the other meets, the session walk
 * on home while the worker's nexus runs commands, and REPORT LUNS there while home adds LUNs.
 * Each step waits for the other thread's command by a semaphore: no sleep, no timing. Run
 * under the TSan build as well (scripts/test.sh --tsan).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/fabric.h"
#include "core/scsi_spec.h"
#include "core/shard.h"
#include "libscsitgt/scsitgt.h"
#include "util/be.h"

#define PORT_A "iqn.2024-01.org.example:a,i,0x23d000000001"
#define PORT_B "iqn.2024-01.org.example:b,i,0x23d000000002"

/* One command and what came back. */
struct xcmd {
	struct scsitgt__msg msg; /* first: posted to the worker */
	struct scsitgt__session *sess;
	uint8_t cdb[16];
	size_t cdb_len;
	uint8_t dout[512];
	size_t dout_len;
	uint8_t status;
	uint8_t sense[SCSITGT_SENSE_BUF_SIZE];
	uv_sem_t done;
};

struct two {
	uv_loop_t loop;
	struct scsitgt_engine *engine;
	struct scsitgt_target *tgt;
	struct scsitgt_lun *lun;
	struct scsitgt__session *a, *b;
};

static void x_done(struct scsitgt__cmd *cmd)
{
	struct xcmd *x = *(struct xcmd **)scsitgt__cmd_fabric_priv(cmd);

	x->status = cmd->status;
	memcpy(x->sense, cmd->sense, cmd->sense_len);
	scsitgt__cmd_destroy(cmd);
	uv_sem_post(&x->done);
}

static void x_session_shutdown(struct scsitgt__session *sess)
{
	scsitgt__session_destroy(sess);
}

static const struct scsitgt__fabric_ops x_ops = {
	.name = "xshard",
	.cmd_done = x_done,
	.cmd_aborted = x_done,
	.session_shutdown = x_session_shutdown,
};

/* Create, set up and execute @x on its nexus, on the calling thread (the nexus's shard). */
static void x_start(struct xcmd *x)
{
	struct scsitgt__cmd *cmd;
	uint8_t lun[8] = { 0 };

	assert_int_equal(scsitgt__cmd_create(&cmd, x->sess, sizeof(x)), 0);
	*(struct xcmd **)scsitgt__cmd_fabric_priv(cmd) = x;
	scsitgt__cmd_setup(cmd, lun, x->cdb, x->cdb_len, 1, 1);
	if (cmd->state == SCSITGT__CMD_NEED_DATA)
		memcpy(cmd->buf, x->dout,
		       x->dout_len < cmd->xfer_len ? x->dout_len : cmd->xfer_len);
	scsitgt__cmd_execute(cmd);
}

static void x_on_worker(struct scsitgt__msg *msg)
{
	x_start((struct xcmd *)msg);
}

/* Run @x to its end: on the worker for B (this thread waits), here for A. */
static uint8_t x_run(struct two *t, struct xcmd *x)
{
	assert_int_equal(uv_sem_init(&x->done, 0), 0);
	if (x->sess->shard->index != 0) {
		x->msg.fn = x_on_worker;
		scsitgt__worker_post(x->sess->shard->worker, &x->msg);
		uv_sem_wait(&x->done);
	} else {
		/* home's command completes here or from the home loop */
		x_start(x);
		while (uv_sem_trywait(&x->done) != 0)
			uv_run(&t->loop, UV_RUN_ONCE);
	}
	uv_sem_destroy(&x->done);
	return x->status;
}

static uint8_t x_key(const struct xcmd *x)
{
	return x->sense[2] & 0x0f;
}

static uint8_t run_tur(struct two *t, struct scsitgt__session *s, struct xcmd *x)
{
	memset(x, 0, sizeof(*x));
	x->sess = s;
	x->cdb_len = 6;
	return x_run(t, x);
}

static uint8_t run_write(struct two *t, struct scsitgt__session *s, struct xcmd *x)
{
	memset(x, 0, sizeof(*x));
	x->sess = s;
	x->cdb[0] = SBC_WRITE_10;
	put_be16(&x->cdb[7], 1);
	x->cdb_len = 10;
	x->dout_len = 512;
	return x_run(t, x);
}

static uint8_t run_pr_out(struct two *t, struct scsitgt__session *s, uint8_t sa, uint8_t type,
			  uint64_t key, uint64_t sa_key, struct xcmd *x)
{
	memset(x, 0, sizeof(*x));
	x->sess = s;
	x->cdb[0] = SPC_PERSISTENT_RESERVE_OUT;
	x->cdb[1] = sa;
	x->cdb[2] = type;
	put_be32(&x->cdb[5], 24);
	x->cdb_len = 10;
	put_be64(&x->dout[0], key);
	put_be64(&x->dout[8], sa_key);
	x->dout_len = 24;
	return x_run(t, x);
}

static struct scsitgt__session *nexus(struct two *t, const char *port, unsigned int shard)
{
	struct scsitgt__nexus_info ni;
	struct scsitgt__session *s;
	struct xcmd x;

	memset(&ni, 0, sizeof(ni));
	ni.protocol_id = SCSITGT__PROTO_ISCSI;
	ni.initiator_name = port;
	ni.initiator_port = port;
	ni.target_port = "iqn.2024-01.org.example:xshard,t,0x0001";
	ni.rel_port_id = 1;
	ni.tpg_id = 1;
	assert_int_equal(scsitgt__session_create(&s, t->tgt, &ni, &x_ops, t), 0);
	/* bound to its shard before its first command (what an in-process fabric does) */
	s->shard = &t->engine->shards[shard];
	/* the first command meets POWER ON (SAM-5 §5.14) */
	run_tur(t, s, &x);
	assert_int_equal(run_tur(t, s, &x), SAM_STAT_GOOD);
	return s;
}

static int setup(void **state)
{
	struct two *t = calloc(1, sizeof(*t));
	struct scsitgt_engine_opts eo;
	struct scsitgt_target_opts to;
	struct scsitgt_lun_opts lo;
	void *bctx;

	assert_non_null(t);
	assert_int_equal(uv_loop_init(&t->loop), 0);
	scsitgt_engine_opts_init(&eo, sizeof(eo));
	eo.workers = 1;
	assert_int_equal(scsitgt_engine_create(&t->engine, &t->loop, &eo), 0);
	assert_true(t->engine->nshards == 2);
	scsitgt_target_opts_init(&to, sizeof(to));
	to.name = "iqn.2024-01.org.example:xshard";
	assert_int_equal(scsitgt_target_create(&t->tgt, t->engine, &to), 0);
	assert_int_equal(scsitgt_backend_null_create(&bctx), 0);
	scsitgt_lun_opts_init(&lo, sizeof(lo));
	lo.block_size = 512;
	lo.num_blocks = 2048;
	lo.backend = scsitgt_backend_null_ops();
	lo.backend_ctx = bctx;
	assert_int_equal(scsitgt_lun_create(&t->lun, t->tgt, &lo), 0);
	t->a = nexus(t, PORT_A, 0);
	t->b = nexus(t, PORT_B, 1);
	*state = t;
	return 0;
}

static void engine_gone(void *arg, int status)
{
	(void)status;
	*(bool *)arg = true;
}

static int teardown(void **state)
{
	struct two *t = *state;
	bool gone = false;

	scsitgt__session_destroy(t->b);
	scsitgt__session_destroy(t->a);
	scsitgt_engine_destroy(t->engine, engine_gone, &gone);
	while (!gone)
		uv_run(&t->loop, UV_RUN_ONCE);
	uv_run(&t->loop, UV_RUN_DEFAULT);
	uv_loop_close(&t->loop);
	free(t);
	return 0;
}

/* A reservation taken on shard 0 refuses a WRITE from shard 1; its release lets it through. */
static void test_reservation_across_shards(void **state)
{
	struct two *t = *state;
	struct xcmd x;

	assert_int_equal(run_write(t, t->b, &x), SAM_STAT_GOOD);
	assert_int_equal(run_pr_out(t, t->a, PR_OUT_REGISTER, 0, 0, 0xa, &x), SAM_STAT_GOOD);
	/* registered keys alone arm nothing */
	assert_int_equal(run_write(t, t->b, &x), SAM_STAT_GOOD);
	assert_int_equal(run_pr_out(t, t->a, PR_OUT_RESERVE, PR_TYPE_WE, 0xa, 0, &x),
			 SAM_STAT_GOOD);
	assert_int_equal(run_write(t, t->b, &x), SAM_STAT_RESERVATION_CONFLICT);
	assert_int_equal(run_tur(t, t->b, &x), SAM_STAT_GOOD);
	assert_int_equal(run_write(t, t->a, &x), SAM_STAT_GOOD);
	assert_int_equal(run_pr_out(t, t->a, PR_OUT_RELEASE, PR_TYPE_WE, 0xa, 0, &x),
			 SAM_STAT_GOOD);
	assert_int_equal(run_write(t, t->b, &x), SAM_STAT_GOOD);
	assert_int_equal(run_pr_out(t, t->a, PR_OUT_REGISTER, 0, 0xa, 0, &x), SAM_STAT_GOOD);
}

/* A reservation change made on shard 0 raises the unit attention on shard 1's nexus. */
static void test_pr_ua_across_shards(void **state)
{
	struct two *t = *state;
	struct xcmd x;

	assert_int_equal(run_pr_out(t, t->b, PR_OUT_REGISTER, 0, 0, 0xb, &x), SAM_STAT_GOOD);
	assert_int_equal(run_pr_out(t, t->a, PR_OUT_REGISTER, 0, 0, 0xa, &x), SAM_STAT_GOOD);
	assert_int_equal(run_pr_out(t, t->a, PR_OUT_RESERVE, PR_TYPE_WE_RO, 0xa, 0, &x),
			 SAM_STAT_GOOD);
	/* B is registered: it may write under Write Exclusive - Registrants Only */
	assert_int_equal(run_write(t, t->b, &x), SAM_STAT_GOOD);
	/* A preempts B's registration: REGISTRATIONS PREEMPTED (2Ah/05h) for B, on its shard */
	assert_int_equal(run_pr_out(t, t->a, PR_OUT_PREEMPT, PR_TYPE_WE_RO, 0xa, 0xb, &x),
			 SAM_STAT_GOOD);
	assert_int_equal(run_tur(t, t->b, &x), SAM_STAT_CHECK_CONDITION);
	assert_int_equal(x_key(&x), 0x06);
	assert_int_equal(x.sense[12], 0x2a);
	assert_int_equal(x.sense[13], 0x05);
	/* and B, no longer registered, conflicts */
	assert_int_equal(run_write(t, t->b, &x), SAM_STAT_RESERVATION_CONFLICT);
	assert_int_equal(run_pr_out(t, t->a, PR_OUT_CLEAR, 0, 0xa, 0, &x), SAM_STAT_GOOD);
	assert_int_equal(run_write(t, t->b, &x), SAM_STAT_GOOD);
}

/* MODE SELECT (10) of the control mode page (SPC-5 §7.5.8) with SWP and D_SENSE 0. */
static uint8_t run_select_swp(struct two *t, struct scsitgt__session *s, bool swp, struct xcmd *x)
{
	memset(x, 0, sizeof(*x));
	x->sess = s;
	x->cdb[0] = SPC_MODE_SELECT_10;
	x->cdb[1] = 0x10; /* PF */
	put_be16(&x->cdb[7], 20);
	x->cdb_len = 10;
	x->dout[8] = 0x0a;
	x->dout[9] = 0x0a;
	x->dout[10] = 0x02;
	x->dout[11] = 0x10;
	x->dout[12] = swp ? 0x08 : 0;
	x->dout_len = 20;
	return x_run(t, x);
}

static void assert_ua(const struct xcmd *x, uint8_t asc, uint8_t ascq)
{
	assert_int_equal(x->status, SAM_STAT_CHECK_CONDITION);
	assert_int_equal(x_key(x), 0x06);
	assert_int_equal(x->sense[12], asc);
	assert_int_equal(x->sense[13], ascq);
}

/* MODE SELECT on shard 1 write-protects the LUN for shard 0's commands and tells its nexus
 * MODE PARAMETERS CHANGED; and back the other way. */
static void test_mode_select_across_shards(void **state)
{
	struct two *t = *state;
	struct xcmd x;

	assert_int_equal(run_select_swp(t, t->b, true, &x), SAM_STAT_GOOD);
	run_write(t, t->a, &x);
	assert_ua(&x, 0x2a, 0x01);
	assert_int_equal(run_write(t, t->a, &x), SAM_STAT_CHECK_CONDITION);
	assert_int_equal(x_key(&x), 0x07); /* DATA PROTECT, WRITE PROTECTED */
	assert_int_equal(x.sense[12], 0x27);
	assert_int_equal(run_select_swp(t, t->a, false, &x), SAM_STAT_GOOD);
	run_write(t, t->b, &x);
	assert_ua(&x, 0x2a, 0x01);
	assert_int_equal(run_write(t, t->b, &x), SAM_STAT_GOOD);
	assert_int_equal(run_write(t, t->a, &x), SAM_STAT_GOOD);
}

/* Commands on both shards at once while shard 0 takes and drops a reservation. */
struct stream {
	struct two *t;
	unsigned int n, conflicts, good;
};

static void stream_thread(void *arg)
{
	struct stream *s = arg;
	struct xcmd x;

	for (unsigned int i = 0; i < s->n; i++) {
		uint8_t st = run_write(s->t, s->t->b, &x);

		if (st == SAM_STAT_RESERVATION_CONFLICT)
			s->conflicts++;
		else if (st == SAM_STAT_GOOD)
			s->good++;
	}
}

static void test_concurrent_reservations(void **state)
{
	struct two *t = *state;
	struct stream s = { .t = t, .n = 400 };
	uv_thread_t th;
	struct xcmd x;

	assert_int_equal(run_pr_out(t, t->a, PR_OUT_REGISTER, 0, 0, 0xa, &x), SAM_STAT_GOOD);
	assert_int_equal(uv_thread_create(&th, stream_thread, &s), 0);
	for (unsigned int i = 0; i < 100; i++) {
		assert_int_equal(run_pr_out(t, t->a, PR_OUT_RESERVE, PR_TYPE_EA, 0xa, 0, &x),
				 SAM_STAT_GOOD);
		assert_int_equal(run_write(t, t->a, &x), SAM_STAT_GOOD);
		assert_int_equal(run_pr_out(t, t->a, PR_OUT_RELEASE, PR_TYPE_EA, 0xa, 0, &x),
				 SAM_STAT_GOOD);
	}
	assert_int_equal(uv_thread_join(&th), 0);
	assert_int_equal(s.good + s.conflicts, s.n);
	assert_int_equal(run_pr_out(t, t->a, PR_OUT_REGISTER, 0, 0xa, 0, &x), SAM_STAT_GOOD);
	assert_int_equal(run_write(t, t->b, &x), SAM_STAT_GOOD);
}

static int count_session(void *arg, const struct scsitgt_session_stats *st)
{
	unsigned int *n = arg;

	/* Each nexus has at most the one command its thread waits for. */
	assert_true(st->inflight <= 1);
	(*n)++;
	return 0;
}

/* The host's session walk on home (scsitgt_target_foreach_session(), stats.h) while B's
 * commands come and go on the worker: its snapshot of B's commands in flight is read without a
 * data race (TSan), as the counters are. */
static void test_session_walk_across_shards(void **state)
{
	struct two *t = *state;
	struct stream s = { .t = t, .n = 300 };
	uv_thread_t th;

	assert_int_equal(uv_thread_create(&th, stream_thread, &s), 0);
	for (unsigned int i = 0; i < 300; i++) {
		unsigned int n = 0;

		assert_int_equal(scsitgt_target_foreach_session(t->tgt, count_session, &n), 0);
		assert_int_equal(n, 2);
	}
	assert_int_equal(uv_thread_join(&th), 0);
	assert_int_equal(s.good, s.n);
}

/* REPORT LUNS on shard 1 while home adds LUNs (the target's array grows, reallocated): the
 * worker reads the LUN table home publishes, never home's array (TSan). */
struct luns_stream {
	struct two *t;
	unsigned int n, good;
};

static void report_luns_thread(void *arg)
{
	struct luns_stream *s = arg;
	struct xcmd x;

	for (unsigned int i = 0; i < s->n; i++) {
		memset(&x, 0, sizeof(x));
		x.sess = s->t->b;
		x.cdb[0] = SPC_REPORT_LUNS;
		put_be32(&x.cdb[6], 8 + 8 * 128);
		x.cdb_len = 12;
		s->good += x_run(s->t, &x) == SAM_STAT_GOOD;
	}
}

static void test_report_luns_while_luns_come(void **state)
{
	struct two *t = *state;
	struct luns_stream s = { .t = t, .n = 200 };
	uv_thread_t th;

	assert_int_equal(uv_thread_create(&th, report_luns_thread, &s), 0);
	for (uint64_t id = 1; id <= 64; id++) {
		struct scsitgt_lun_opts lo;
		struct scsitgt_lun *lun;
		void *bctx;

		assert_int_equal(scsitgt_backend_null_create(&bctx), 0);
		scsitgt_lun_opts_init(&lo, sizeof(lo));
		lo.id = id;
		lo.block_size = 512;
		lo.num_blocks = 2048;
		lo.backend = scsitgt_backend_null_ops();
		lo.backend_ctx = bctx;
		assert_int_equal(scsitgt_lun_create(&lun, t->tgt, &lo), 0);
		/* the replaced tables are freed once the worker has passed a message boundary */
		uv_run(&t->loop, UV_RUN_NOWAIT);
	}
	assert_int_equal(uv_thread_join(&th), 0);
	assert_int_equal(s.good, s.n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_reservation_across_shards, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pr_ua_across_shards, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mode_select_across_shards, setup, teardown),
		cmocka_unit_test_setup_teardown(test_concurrent_reservations, setup, teardown),
		cmocka_unit_test_setup_teardown(test_session_walk_across_shards, setup, teardown),
		cmocka_unit_test_setup_teardown(test_report_luns_while_luns_come, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
