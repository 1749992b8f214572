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
 * from another thread, waits by a semaphore): no sleep, no timing (the world is
 * tests/support/xshard_world.h). Run under the TSan build as well (scripts/test.sh --tsan).
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
#include "core/order.h"
#include "core/scsi_spec.h"
#include "core/shard.h"
#include "libscsitgt/scsitgt.h"
#include "fake_backend.h"
#include "util/be.h"
#include "xshard_world.h"

static uint8_t run_write(struct xw_world *t, struct scsitgt__session *s, struct xw_cmd *x)
{
	xw_rw10(x, s, SBC_WRITE_10, 0, 1);
	return xw_run(t, x);
}

static int setup(void **state)
{
	struct xw_world *t;

	xw_world_create(&t, "iqn.2024-01.org.example:xshard");
	/* a null LUN */
	xw_world_start(t, NULL);
	*state = t;
	return 0;
}

/* A RAM LUN behind the fault backend (t->bctx), every READ held. */
static int setup_held_reads(void **state)
{
	struct xw_world *t;

	xw_world_create(&t, "iqn.2024-01.org.example:xshard");
	xw_world_start_fault(t, "hang@read");
	*state = t;
	return 0;
}

/*
 * SAM-5 §8.6.3 across shards (reviewi D1): B (worker) holds WRITE EXCLUSIVE; A (home) sends
 * PREEMPT ORDERED behind its held READ, then B a SIMPLE WRITE, held on the worker behind the
 * PREEMPT. Started by the worker once the PREEMPT is done, it is checked again there: B lost
 * its registration and the reservation, RESERVATION CONFLICT; the unit attention of the
 * preemption is for B's next command.
 */
static void test_write_held_behind_ordered_preempt(void **state)
{
	struct xw_world *t = *state;
	struct xw_cmd x, rd, pre, w2;

	assert_int_equal(xw_run_pr_out(t, t->b, PR_OUT_REGISTER, 0, 0, 0x22, &x), SAM_STAT_GOOD);
	assert_int_equal(xw_run_pr_out(t, t->a, PR_OUT_REGISTER, 0, 0, 0x11, &x), SAM_STAT_GOOD);
	assert_int_equal(xw_run_pr_out(t, t->b, PR_OUT_RESERVE, PR_TYPE_WE, 0x22, 0, &x),
			 SAM_STAT_GOOD);
	xw_rw10(&rd, t->a, SBC_READ_10, 7, 1);
	xw_start(t, &rd);
	xw_settle(t);
	assert_int_equal(xw_fault_stats(t).held, 1);
	xw_pr_out(&pre, t->a, PR_OUT_PREEMPT, PR_TYPE_WE, 0x11, 0x22);
	pre.attr = SCSITGT__TASK_ORDERED;
	xw_start(t, &pre);
	xw_rw10(&w2, t->b, SBC_WRITE_10, 0, 1);
	xw_start(t, &w2);
	xw_settle(t);
	assert_false(xw_finished(&pre) || xw_finished(&w2));
	assert_int_equal(scsitgt_backend_fault_release(t->bctx, 0, 0), 1);
	assert_int_equal(xw_wait(t, &rd), SAM_STAT_GOOD);
	assert_int_equal(xw_wait(t, &pre), SAM_STAT_GOOD);
	assert_int_equal(xw_wait(t, &w2), SAM_STAT_RESERVATION_CONFLICT);
	assert_int_equal(xw_fault_stats(t).held, 0);
	xw_rw10(&x, t->b, SBC_WRITE_10, 0, 1);
	xw_run(t, &x);
	xw_assert_ua(&x, 0x2a, 0x05);
}

/* A reservation taken on shard 0 refuses a WRITE from shard 1; its release lets it through. */
static void test_reservation_across_shards(void **state)
{
	struct xw_world *t = *state;
	struct xw_cmd x;

	assert_int_equal(run_write(t, t->b, &x), SAM_STAT_GOOD);
	assert_int_equal(xw_run_pr_out(t, t->a, PR_OUT_REGISTER, 0, 0, 0xa, &x), SAM_STAT_GOOD);
	/* registered keys alone arm nothing */
	assert_int_equal(run_write(t, t->b, &x), SAM_STAT_GOOD);
	assert_int_equal(xw_run_pr_out(t, t->a, PR_OUT_RESERVE, PR_TYPE_WE, 0xa, 0, &x),
			 SAM_STAT_GOOD);
	assert_int_equal(run_write(t, t->b, &x), SAM_STAT_RESERVATION_CONFLICT);
	assert_int_equal(xw_run_tur(t, t->b, &x), SAM_STAT_GOOD);
	assert_int_equal(run_write(t, t->a, &x), SAM_STAT_GOOD);
	assert_int_equal(xw_run_pr_out(t, t->a, PR_OUT_RELEASE, PR_TYPE_WE, 0xa, 0, &x),
			 SAM_STAT_GOOD);
	assert_int_equal(run_write(t, t->b, &x), SAM_STAT_GOOD);
	assert_int_equal(xw_run_pr_out(t, t->a, PR_OUT_REGISTER, 0, 0xa, 0, &x), SAM_STAT_GOOD);
}

/* A reservation change made on shard 0 raises the unit attention on shard 1's nexus. */
static void test_pr_ua_across_shards(void **state)
{
	struct xw_world *t = *state;
	struct xw_cmd x;

	assert_int_equal(xw_run_pr_out(t, t->b, PR_OUT_REGISTER, 0, 0, 0xb, &x), SAM_STAT_GOOD);
	assert_int_equal(xw_run_pr_out(t, t->a, PR_OUT_REGISTER, 0, 0, 0xa, &x), SAM_STAT_GOOD);
	assert_int_equal(xw_run_pr_out(t, t->a, PR_OUT_RESERVE, PR_TYPE_WE_RO, 0xa, 0, &x),
			 SAM_STAT_GOOD);
	/* B is registered: it may write under Write Exclusive - Registrants Only */
	assert_int_equal(run_write(t, t->b, &x), SAM_STAT_GOOD);
	/* A preempts B's registration: REGISTRATIONS PREEMPTED (2Ah/05h) for B, on its shard */
	assert_int_equal(xw_run_pr_out(t, t->a, PR_OUT_PREEMPT, PR_TYPE_WE_RO, 0xa, 0xb, &x),
			 SAM_STAT_GOOD);
	assert_int_equal(xw_run_tur(t, t->b, &x), SAM_STAT_CHECK_CONDITION);
	assert_int_equal(xw_sense_key(&x), 0x06);
	assert_int_equal(x.sense[12], 0x2a);
	assert_int_equal(x.sense[13], 0x05);
	/* and B, no longer registered, conflicts */
	assert_int_equal(run_write(t, t->b, &x), SAM_STAT_RESERVATION_CONFLICT);
	assert_int_equal(xw_run_pr_out(t, t->a, PR_OUT_CLEAR, 0, 0xa, 0, &x), SAM_STAT_GOOD);
	assert_int_equal(run_write(t, t->b, &x), SAM_STAT_GOOD);
}

/* MODE SELECT (10) of the control mode page (SPC-5 §7.5.8) with SWP and D_SENSE 0. */
static uint8_t run_select_swp(struct xw_world *t, struct scsitgt__session *s, bool swp,
			      struct xw_cmd *x)
{
	xw_cmd_init(x, s, SPC_MODE_SELECT_10, 10);
	x->cdb[1] = 0x10; /* PF */
	put_be16(&x->cdb[7], 20);
	x->dout[8] = 0x0a;
	x->dout[9] = 0x0a;
	x->dout[10] = 0x02;
	x->dout[11] = 0x10;
	x->dout[12] = swp ? 0x08 : 0;
	x->dout_len = 20;
	return xw_run(t, x);
}

/* MODE SELECT on shard 1 write-protects the LUN for shard 0's commands and tells its nexus
 * MODE PARAMETERS CHANGED; and back the other way. */
static void test_mode_select_across_shards(void **state)
{
	struct xw_world *t = *state;
	struct xw_cmd x;

	assert_int_equal(run_select_swp(t, t->b, true, &x), SAM_STAT_GOOD);
	/* A's fabric heard of it on home, before B's status (fabric.h, core/home_call.h) */
	assert_true(atomic_load(&t->uas) > 0);
	assert_int_equal(atomic_load(&t->uas_off_home), 0);
	run_write(t, t->a, &x);
	xw_assert_ua(&x, 0x2a, 0x01);
	assert_int_equal(run_write(t, t->a, &x), SAM_STAT_CHECK_CONDITION);
	assert_int_equal(xw_sense_key(&x), 0x07); /* DATA PROTECT, WRITE PROTECTED */
	assert_int_equal(x.sense[12], 0x27);
	assert_int_equal(run_select_swp(t, t->a, false, &x), SAM_STAT_GOOD);
	run_write(t, t->b, &x);
	xw_assert_ua(&x, 0x2a, 0x01);
	assert_int_equal(run_write(t, t->b, &x), SAM_STAT_GOOD);
	assert_int_equal(run_write(t, t->a, &x), SAM_STAT_GOOD);
}

/* MODE SELECT (10) of the caching page (SBC-4 §6.5.5) with WCE 0. */
static uint8_t run_select_wce_off(struct xw_world *t, struct scsitgt__session *s, struct xw_cmd *x)
{
	xw_cmd_init(x, s, SPC_MODE_SELECT_10, 10);
	x->cdb[1] = 0x10; /* PF */
	put_be16(&x->cdb[7], 28);
	x->dout[8] = 0x08;
	x->dout[9] = 0x12;
	x->dout_len = 28;
	return xw_run(t, x);
}

/* LUN 0 on a fake backend with a volatile cache and FLUSH (called on home: not multi-loop),
 * WCE 1. */
static int setup_cached(void **state)
{
	struct fake_backend_opts o;
	struct scsitgt_lun_opts lo;
	struct fake_backend *fb;
	struct xw_world *t;

	fake_backend_opts_init(&o);
	o.geo_flags = SCSITGT_GEOMETRY_WRITE_CACHE;
	o.supports = 1u << SCSITGT_IO_FLUSH;
	assert_int_equal(fake_backend_create(&fb, &o), 0);
	scsitgt_lun_opts_init(&lo, sizeof(lo));
	lo.flags = SCSITGT_LUN_WRITE_CACHE;
	lo.backend = &fb->ops;
	lo.backend_ctx = fb;
	xw_world_create(&t, "iqn.2024-01.org.example:xshard");
	xw_world_start(t, &lo);
	*state = t;
	return 0;
}

/*
 * MODE SELECT turning WCE off from the worker's nexus: the write-back (a FLUSH on home, the
 * backend's loop) comes first, then A is told on home, then B's status. A failed write-back
 * fails the command and leaves WCE 1; A is told all the same.
 */
static void test_wce_off_from_worker(void **state)
{
	struct xw_world *t = *state;
	struct fake_backend *fb = t->bctx;
	struct xw_cmd x;

	fake_backend_fail_type(fb, SCSITGT_IO_FLUSH, -5 /* -EIO */, 1);
	assert_int_equal(run_select_wce_off(t, t->b, &x), SAM_STAT_CHECK_CONDITION);
	assert_int_equal(xw_sense_key(&x), 0x03);
	assert_int_equal(x.sense[12], 0x0c);
	assert_true(atomic_load(&t->lun->mode.wce));
	assert_int_equal(fake_backend_last(fb)->type, SCSITGT_IO_FLUSH);
	run_write(t, t->a, &x);
	xw_assert_ua(&x, 0x2a, 0x01);
	assert_int_equal(run_select_wce_off(t, t->b, &x), SAM_STAT_GOOD);
	assert_false(atomic_load(&t->lun->mode.wce));
	assert_int_equal(fb->nrecs, 2); /* A's WRITE above reported the UA only */
	assert_int_equal(fake_backend_last(fb)->type, SCSITGT_IO_FLUSH);
	run_write(t, t->a, &x);
	xw_assert_ua(&x, 0x2a, 0x01);
	/* WCE 0: B's writes go with FUA */
	assert_int_equal(run_write(t, t->b, &x), SAM_STAT_GOOD);
	assert_true(fake_backend_last(fb)->flags & SCSITGT_IO_FLAG_FUA);
}

/* the ALUA hook (alua.h: on the home loop, inside the command) */
static _Atomic unsigned int hook_calls, hook_off_home;

static int stpg_hook(void *arg, struct scsitgt_target *tgt, uint16_t group_id,
		     enum scsitgt_alua_state old_state, enum scsitgt_alua_state new_state)
{
	struct xw_world *t = arg;

	(void)tgt;
	(void)group_id;
	(void)old_state;
	(void)new_state;
	atomic_fetch_add(&hook_calls, 1);
	if (!xw_on_home(t))
		atomic_fetch_add(&hook_off_home, 1);
	return 0;
}

/* SET TARGET PORT GROUPS (SPC-5 §6.50) with one descriptor. */
static uint8_t run_stpg(struct xw_world *t, struct scsitgt__session *s, uint8_t state,
			uint16_t group, struct xw_cmd *x)
{
	xw_cmd_init(x, s, SPC_MAINTENANCE_OUT, 12);
	x->cdb[1] = SPC_MO_SET_TARGET_PORT_GROUPS;
	put_be32(&x->cdb[6], 8);
	x->dout[4] = state;
	put_be16(&x->dout[6], group);
	x->dout_len = 8;
	return xw_run(t, x);
}

/* SET TARGET PORT GROUPS from the worker's nexus: the host's hook is asked on home (alua.h),
 * the other nexus is told ASYMMETRIC ACCESS STATE CHANGED on home before B's GOOD, and B
 * itself is not (SPC-5 §5.16.2.6). */
static void test_stpg_from_worker(void **state)
{
	struct xw_world *t = *state;
	struct scsitgt_alua_opts o;
	enum scsitgt_alua_state st;
	struct xw_cmd x;

	scsitgt_alua_opts_init(&o, sizeof(o));
	o.modes = SCSITGT_ALUA_EXPLICIT;
	o.request_cb = stpg_hook;
	o.request_arg = t;
	assert_int_equal(scsitgt_alua_configure(t->tgt, &o), 0);
	assert_int_equal(scsitgt_alua_group_create(t->tgt, 10, SCSITGT_ALUA_ACTIVE_OPTIMIZED), 0);
	assert_int_equal(scsitgt_alua_group_add_port(t->tgt, 10, 1), 0);
	/* what configuring ALUA told each nexus */
	while (xw_run_tur(t, t->a, &x) != SAM_STAT_GOOD)
		assert_int_equal(xw_sense_key(&x), 0x06);
	while (xw_run_tur(t, t->b, &x) != SAM_STAT_GOOD)
		assert_int_equal(xw_sense_key(&x), 0x06);
	atomic_store(&t->uas, 0);
	atomic_store(&t->uas_off_home, 0);
	assert_int_equal(run_stpg(t, t->b, SCSITGT_ALUA_STANDBY, 10, &x), SAM_STAT_GOOD);
	assert_int_equal(atomic_load(&hook_calls), 1);
	assert_int_equal(atomic_load(&hook_off_home), 0);
	assert_true(atomic_load(&t->uas) > 0);
	assert_int_equal(atomic_load(&t->uas_off_home), 0);
	assert_int_equal(scsitgt_alua_get_state(t->tgt, 10, &st), 0);
	assert_int_equal(st, SCSITGT_ALUA_STANDBY);
	xw_run_tur(t, t->a, &x);
	xw_assert_ua(&x, 0x2a, 0x06);
	/* B made the change: no unit attention, the standby state itself (SPC-5 §5.16.2.4.4) */
	assert_int_equal(xw_run_tur(t, t->b, &x), SAM_STAT_CHECK_CONDITION);
	assert_int_equal(xw_sense_key(&x), 0x02);
	assert_int_equal(x.sense[12], 0x04);
	assert_int_equal(x.sense[13], 0x0b);
	/* an invalid state is refused: its sense, built on home, is given on B's loop */
	assert_int_equal(run_stpg(t, t->b, 0x7f, 10, &x), SAM_STAT_CHECK_CONDITION);
	assert_int_equal(xw_sense_key(&x), 0x05);
}

/* Commands on both shards at once while shard 0 takes and drops a reservation. */
struct stream {
	struct xw_world *t;
	unsigned int n, conflicts, good, capacity_uas;
};

static void stream_thread(void *arg)
{
	struct stream *s = arg;
	struct xw_cmd x;

	for (unsigned int i = 0; i < s->n; i++) {
		uint8_t st = run_write(s->t, s->t->b, &x);

		if (st == SAM_STAT_RESERVATION_CONFLICT)
			s->conflicts++;
		else if (st == SAM_STAT_GOOD)
			s->good++;
		else if (xw_sense_key(&x) == 0x06 && x.sense[12] == 0x2a && x.sense[13] == 0x09)
			s->capacity_uas++;
	}
}

static void test_concurrent_reservations(void **state)
{
	struct xw_world *t = *state;
	struct stream s = { .t = t, .n = 400 };
	uv_thread_t th;
	struct xw_cmd x;

	assert_int_equal(xw_run_pr_out(t, t->a, PR_OUT_REGISTER, 0, 0, 0xa, &x), SAM_STAT_GOOD);
	assert_int_equal(uv_thread_create(&th, stream_thread, &s), 0);
	for (unsigned int i = 0; i < 100; i++) {
		assert_int_equal(xw_run_pr_out(t, t->a, PR_OUT_RESERVE, PR_TYPE_EA, 0xa, 0, &x),
				 SAM_STAT_GOOD);
		assert_int_equal(run_write(t, t->a, &x), SAM_STAT_GOOD);
		assert_int_equal(xw_run_pr_out(t, t->a, PR_OUT_RELEASE, PR_TYPE_EA, 0xa, 0, &x),
				 SAM_STAT_GOOD);
	}
	assert_int_equal(uv_thread_join(&th), 0);
	assert_int_equal(s.good + s.conflicts, s.n);
	assert_int_equal(xw_run_pr_out(t, t->a, PR_OUT_REGISTER, 0, 0xa, 0, &x), SAM_STAT_GOOD);
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
	struct xw_world *t = *state;
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
	struct xw_world *t = *state;
	struct stream s = { .t = t, .n = 300 };
	uv_thread_t th;
	struct xw_cmd x;

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
		xw_assert_ua(&x, 0x2a, 0x09);
	assert_int_equal(run_write(t, t->b, &x), SAM_STAT_GOOD);
}

/* REPORT LUNS on shard 1 while home adds LUNs (the target's array grows, reallocated): the
 * worker reads the LUN table home publishes, never home's array (TSan). */
struct luns_stream {
	struct xw_world *t;
	unsigned int n, good;
};

static void report_luns_thread(void *arg)
{
	struct luns_stream *s = arg;
	struct xw_cmd x;

	for (unsigned int i = 0; i < s->n; i++)
		s->good += xw_run_report_luns(s->t, s->t->b, 8 + 8 * 128, &x) == SAM_STAT_GOOD;
}

static void test_report_luns_while_luns_come(void **state)
{
	struct xw_world *t = *state;
	struct luns_stream s = { .t = t, .n = 200 };
	uv_thread_t th;

	assert_int_equal(uv_thread_create(&th, report_luns_thread, &s), 0);
	for (uint64_t id = 1; id <= 64; id++) {
		xw_null_lun(t, id);
		/* the replaced tables are freed once the worker has passed a message boundary */
		uv_run(&t->loop, UV_RUN_NOWAIT);
	}
	assert_int_equal(uv_thread_join(&th), 0);
	assert_int_equal(s.good, s.n);
}

/* TEST UNIT READY on LUN @lun of @s to its end; its status. */
static uint8_t run_tur_on(struct xw_world *t, struct scsitgt__session *s, uint64_t lun,
			  struct xw_cmd *x)
{
	xw_cmd_init(x, s, SPC_TEST_UNIT_READY, 6);
	x->lun_id = lun;
	return xw_run(t, x);
}

/*
 * LUICLR (SPC-5 §7.7.7) with the nexus on a worker shard: home adds a LUN and queues REPORTED
 * LUNS DATA HAS CHANGED on every LUN B has seen; B reports it on LUN 1, on its own loop, which
 * clears it on LUN 0 and LUN 2 too (home's queueing and the worker's report share the nexus's
 * lock, clean under ThreadSanitizer). A keeps its own.
 */
static void test_luns_changed_once_per_nexus(void **state)
{
	struct xw_world *t = *state;
	struct xw_cmd x;

	xw_null_lun(t, 1);
	xw_null_lun(t, 2);
	assert_int_equal(run_tur_on(t, t->b, 0, &x), SAM_STAT_CHECK_CONDITION);
	xw_assert_ua(&x, 0x3f, 0x0e);
	for (uint64_t lun = 1; lun <= 2; lun++) {
		assert_int_equal(run_tur_on(t, t->b, lun, &x), SAM_STAT_CHECK_CONDITION);
		xw_assert_ua(&x, 0x29, 0x00);
		assert_int_equal(run_tur_on(t, t->a, lun, &x), SAM_STAT_CHECK_CONDITION);
		xw_assert_ua(&x, 0x29, 0x00);
	}
	xw_null_lun(t, 3);
	assert_int_equal(run_tur_on(t, t->b, 1, &x), SAM_STAT_CHECK_CONDITION);
	xw_assert_ua(&x, 0x3f, 0x0e);
	assert_int_equal(run_tur_on(t, t->b, 0, &x), SAM_STAT_GOOD);
	assert_int_equal(run_tur_on(t, t->b, 2, &x), SAM_STAT_GOOD);
	assert_int_equal(run_tur_on(t, t->a, 2, &x), SAM_STAT_CHECK_CONDITION);
	xw_assert_ua(&x, 0x3f, 0x0e);
	assert_int_equal(run_tur_on(t, t->a, 1, &x), SAM_STAT_GOOD);
}

/*
 * SAM-5 §6.3.4 across shards: a nexus ends and the same I_T nexus (initiator port, target port)
 * logs in again at once. A worker's nexus is freed by home only after that loop detached its
 * commands (a message there and back); the loss is recorded as the nexus ends, so the new
 * nexus's first command finds I_T NEXUS LOSS OCCURRED (29h/07h), never POWER ON, whatever the
 * schedule. Back on home, the first command runs before home's loop has run since the end (it
 * met POWER ON when the loss was recorded at the free); back on the worker, it races home's
 * free of the old nexus.
 */
static void test_nexus_loss_reconnect_at_once(void **state)
{
	struct xw_world *t = *state;
	struct scsitgt__session *s;
	struct xw_cmd x;

	/* B (worker) ends; the same nexus comes back on home. */
	scsitgt__session_destroy(t->b);
	t->b = NULL;
	s = xw_nexus_new(t, XW_PORT_B, 0);
	assert_int_equal(xw_run_tur(t, s, &x), SAM_STAT_CHECK_CONDITION);
	xw_assert_ua(&x, 0x29, 0x07);
	assert_int_equal(xw_run_tur(t, s, &x), SAM_STAT_GOOD);
	/* It ends on home and comes back on the worker: reported again. */
	scsitgt__session_destroy(s);
	s = xw_nexus_new(t, XW_PORT_B, 1);
	assert_int_equal(xw_run_tur(t, s, &x), SAM_STAT_CHECK_CONDITION);
	xw_assert_ua(&x, 0x29, 0x07);
	assert_int_equal(xw_run_tur(t, s, &x), SAM_STAT_GOOD);
	/* It ends on the worker and comes back there at once. */
	scsitgt__session_destroy(s);
	t->b = xw_nexus_new(t, XW_PORT_B, 1);
	assert_int_equal(xw_run_tur(t, t->b, &x), SAM_STAT_CHECK_CONDITION);
	xw_assert_ua(&x, 0x29, 0x07);
	assert_int_equal(xw_run_tur(t, t->b, &x), SAM_STAT_GOOD);
	/* Another initiator port never had a nexus here: POWER ON. */
	s = xw_nexus_new(t, "iqn.2024-01.org.example:c,i,0x23d000000003", 1);
	assert_int_equal(xw_run_tur(t, s, &x), SAM_STAT_CHECK_CONDITION);
	xw_assert_ua(&x, 0x29, 0x00);
	scsitgt__session_destroy(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_reservation_across_shards, setup, xw_teardown),
		cmocka_unit_test_setup_teardown(test_pr_ua_across_shards, setup, xw_teardown),
		cmocka_unit_test_setup_teardown(test_mode_select_across_shards, setup, xw_teardown),
		cmocka_unit_test_setup_teardown(test_wce_off_from_worker, setup_cached,
						xw_teardown),
		cmocka_unit_test_setup_teardown(test_stpg_from_worker, setup, xw_teardown),
		cmocka_unit_test_setup_teardown(test_concurrent_reservations, setup, xw_teardown),
		cmocka_unit_test_setup_teardown(test_session_walk_across_shards, setup,
						xw_teardown),
		cmocka_unit_test_setup_teardown(test_report_luns_while_luns_come, setup,
						xw_teardown),
		cmocka_unit_test_setup_teardown(test_resize_while_worker_writes, setup,
						xw_teardown),
		cmocka_unit_test_setup_teardown(test_luns_changed_once_per_nexus, setup,
						xw_teardown),
		cmocka_unit_test_setup_teardown(test_nexus_loss_reconnect_at_once, setup,
						xw_teardown),
		cmocka_unit_test_setup_teardown(test_write_held_behind_ordered_preempt,
						setup_held_reads, xw_teardown_fault),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
