/* SPDX-License-Identifier: MIT */
/*
 * Per-LUN state across two shards (issue 18): an engine with one worker loop, nexus A on
 * home (shard 0) and nexus B bound to the worker's shard (shard 1), whose commands run on
 * the worker thread (posted to its inbox; the null backend completes them there): reservations,
 * unit attentions and mode parameters one shard changes and the other meets, SET TARGET PORT
 * GROUPS and MODE SELECT of a worker's nexus (their walk of the target's nexuses and the ALUA
 * hook run on home, core/home_call.h), the session walk on home while the worker's nexus runs
 * commands, and REPORT LUNS there while home adds LUNs. While a worker runs a command the
 * test thread runs the home loop until a message from the command's end says it is done (or,
 * from another thread, waits by a semaphore): no sleep, no timing. Run under the TSan build
 * as well (scripts/test.sh --tsan).
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
	/* a worker's command run from the home thread: its end posts x->msg to home, which
	 * sets @ended (another thread waits for @done) */
	bool wake_home;
	_Atomic bool ended;
};

struct two {
	uv_loop_t loop;
	uv_thread_t home;
	/* unit attentions the fabric heard of (fabric.h: always on the home loop), and how
	 * many of them came on another thread */
	_Atomic unsigned int uas, uas_off_home;
	/* the ALUA hook (alua.h: on the home loop, inside the command) */
	_Atomic unsigned int hook_calls, hook_off_home;
	struct scsitgt_engine *engine;
	struct scsitgt_target *tgt;
	struct scsitgt_lun *lun;
	struct scsitgt__session *a, *b;
};

static bool on_home(struct two *t)
{
	uv_thread_t self = uv_thread_self();

	return uv_thread_equal(&t->home, &self);
}

static void x_ended(struct scsitgt__msg *msg)
{
	atomic_store(&((struct xcmd *)msg)->ended, true);
}

static void x_done(struct scsitgt__cmd *cmd)
{
	struct xcmd *x = *(struct xcmd **)scsitgt__cmd_fabric_priv(cmd);
	struct scsitgt__session *sess = x->sess;

	x->status = cmd->status;
	memcpy(x->sense, cmd->sense, cmd->sense_len);
	scsitgt__cmd_destroy(cmd);
	if (!x->wake_home) {
		uv_sem_post(&x->done);
		return;
	}
	/* wake the home loop the test thread runs; x->msg is free again (its run started) */
	x->msg.fn = x_ended;
	scsitgt__engine_post(sess->shard->engine, &x->msg);
}

static void x_unit_attention(struct scsitgt__session *sess, uint64_t lun_id,
			     enum scsitgt__sense_reason reason)
{
	struct two *t = sess->fabric_ctx;

	(void)lun_id;
	(void)reason;
	atomic_fetch_add(&t->uas, 1);
	if (!on_home(t))
		atomic_fetch_add(&t->uas_off_home, 1);
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
	.unit_attention = x_unit_attention,
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

/* Run @x to its end: on the worker for B (from the home thread, which runs the home loop
 * until its end's message arrived; from another thread, which waits), here for A. */
static uint8_t x_run(struct two *t, struct xcmd *x)
{
	assert_int_equal(uv_sem_init(&x->done, 0), 0);
	x->wake_home = x->sess->shard->index != 0 && on_home(t);
	if (x->sess->shard->index != 0) {
		atomic_init(&x->ended, false);
		x->msg.fn = x_on_worker;
		scsitgt__worker_post(x->sess->shard->worker, &x->msg);
		if (x->wake_home) {
			while (!atomic_load(&x->ended))
				uv_run(&t->loop, UV_RUN_ONCE);
		} else {
			uv_sem_wait(&x->done);
		}
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
	t->home = uv_thread_self();
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
	/* A's fabric heard of it on home, before B's status (fabric.h, core/home_call.h) */
	assert_true(atomic_load(&t->uas) > 0);
	assert_int_equal(atomic_load(&t->uas_off_home), 0);
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

static int stpg_hook(void *arg, struct scsitgt_target *tgt, uint16_t group_id,
		     enum scsitgt_alua_state old_state, enum scsitgt_alua_state new_state)
{
	struct two *t = arg;

	(void)tgt;
	(void)group_id;
	(void)old_state;
	(void)new_state;
	atomic_fetch_add(&t->hook_calls, 1);
	if (!on_home(t))
		atomic_fetch_add(&t->hook_off_home, 1);
	return 0;
}

/* SET TARGET PORT GROUPS (SPC-5 §6.50) with one descriptor. */
static uint8_t run_stpg(struct two *t, struct scsitgt__session *s, uint8_t state, uint16_t group,
			struct xcmd *x)
{
	memset(x, 0, sizeof(*x));
	x->sess = s;
	x->cdb[0] = SPC_MAINTENANCE_OUT;
	x->cdb[1] = SPC_MO_SET_TARGET_PORT_GROUPS;
	put_be32(&x->cdb[6], 8);
	x->cdb_len = 12;
	x->dout[4] = state;
	put_be16(&x->dout[6], group);
	x->dout_len = 8;
	return x_run(t, x);
}

/* SET TARGET PORT GROUPS from the worker's nexus: the host's hook is asked on home (alua.h),
 * the other nexus is told ASYMMETRIC ACCESS STATE CHANGED on home before B's GOOD, and B
 * itself is not (SPC-5 §5.16.2.6). */
static void test_stpg_from_worker(void **state)
{
	struct two *t = *state;
	struct scsitgt_alua_opts o;
	enum scsitgt_alua_state st;
	struct xcmd x;

	scsitgt_alua_opts_init(&o, sizeof(o));
	o.modes = SCSITGT_ALUA_EXPLICIT;
	o.request_cb = stpg_hook;
	o.request_arg = t;
	assert_int_equal(scsitgt_alua_configure(t->tgt, &o), 0);
	assert_int_equal(scsitgt_alua_group_create(t->tgt, 10, SCSITGT_ALUA_ACTIVE_OPTIMIZED), 0);
	assert_int_equal(scsitgt_alua_group_add_port(t->tgt, 10, 1), 0);
	/* what configuring ALUA told each nexus */
	while (run_tur(t, t->a, &x) != SAM_STAT_GOOD)
		assert_int_equal(x_key(&x), 0x06);
	while (run_tur(t, t->b, &x) != SAM_STAT_GOOD)
		assert_int_equal(x_key(&x), 0x06);
	atomic_store(&t->uas, 0);
	atomic_store(&t->uas_off_home, 0);
	assert_int_equal(run_stpg(t, t->b, SCSITGT_ALUA_STANDBY, 10, &x), SAM_STAT_GOOD);
	assert_int_equal(atomic_load(&t->hook_calls), 1);
	assert_int_equal(atomic_load(&t->hook_off_home), 0);
	assert_true(atomic_load(&t->uas) > 0);
	assert_int_equal(atomic_load(&t->uas_off_home), 0);
	assert_int_equal(scsitgt_alua_get_state(t->tgt, 10, &st), 0);
	assert_int_equal(st, SCSITGT_ALUA_STANDBY);
	run_tur(t, t->a, &x);
	assert_ua(&x, 0x2a, 0x06);
	/* B made the change: no unit attention, the standby state itself (SPC-5 §5.16.2.4.4) */
	assert_int_equal(run_tur(t, t->b, &x), SAM_STAT_CHECK_CONDITION);
	assert_int_equal(x_key(&x), 0x02);
	assert_int_equal(x.sense[12], 0x04);
	assert_int_equal(x.sense[13], 0x0b);
	/* an invalid state is refused: its sense, built on home, is given on B's loop */
	assert_int_equal(run_stpg(t, t->b, 0x7f, 10, &x), SAM_STAT_CHECK_CONDITION);
	assert_int_equal(x_key(&x), 0x05);
}

/* Commands on both shards at once while shard 0 takes and drops a reservation. */
struct stream {
	struct two *t;
	unsigned int n, conflicts, good, capacity_uas;
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
		else if (x_key(&x) == 0x06 && x.sense[12] == 0x2a && x.sense[13] == 0x09)
			s->capacity_uas++;
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

/* A resize on home while B's writes check their range on the worker (SBC-4 §4.5): the
 * capacity is read without a data race (TSan), and B hears of each change by CAPACITY DATA
 * HAS CHANGED (SBC-4 §4.6) or writes inside both capacities. */
static void test_resize_while_worker_writes(void **state)
{
	struct two *t = *state;
	struct stream s = { .t = t, .n = 300 };
	uv_thread_t th;
	struct xcmd x;

	assert_int_equal(uv_thread_create(&th, stream_thread, &s), 0);
	for (unsigned int i = 0; i < 300; i++) {
		assert_int_equal(scsitgt_lun_resize(t->lun, i % 2 ? 2048 : 4096), 0);
		uv_run(&t->loop, UV_RUN_NOWAIT);
	}
	assert_int_equal(uv_thread_join(&th), 0);
	assert_int_equal(s.conflicts, 0);
	assert_int_equal(s.good + s.capacity_uas, s.n);
	/* the last change is reported at most once more, then writes go through */
	if (run_write(t, t->b, &x) != SAM_STAT_GOOD)
		assert_ua(&x, 0x2a, 0x09);
	assert_int_equal(run_write(t, t->b, &x), SAM_STAT_GOOD);
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
		cmocka_unit_test_setup_teardown(test_stpg_from_worker, setup, teardown),
		cmocka_unit_test_setup_teardown(test_concurrent_reservations, setup, teardown),
		cmocka_unit_test_setup_teardown(test_session_walk_across_shards, setup, teardown),
		cmocka_unit_test_setup_teardown(test_report_luns_while_luns_come, setup, teardown),
		cmocka_unit_test_setup_teardown(test_resize_while_worker_writes, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
