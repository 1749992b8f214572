/* SPDX-License-Identifier: MIT */
/*
 * Task management across shards (issue 18, core/tmf_xshard.c): an engine with one worker
 * loop, nexus A on home (shard 0) and nexus B bound to the worker's shard (shard 1), whose
 * commands run on the worker thread. A command may only be moved by its own shard's loop, so
 * a TMF, a PREEMPT AND ABORT, a LUN removal that timed out or the end of a nexus must reach it
 * there: each test checks on which thread the fabric hears of the abort (home for A's
 * commands, the worker for B's) and on which thread the TMF answers (its issuer's), and the
 * unit attentions every nexus finds afterwards (SAM-5 §7, SPC-5 §5.13.11.5).
 *
 * The backend is the fault backend around a RAM LUN: writes are held (and, for an abortable
 * hold, cancelled by the backend's abort()). Waits are on conditions, never on time: the home
 * loop runs until a flag is set, and whatever ends on the worker posts a message that wakes it.
 * The world (engine, nexuses, commands, waits) is tests/support/xshard_world.h. Run under the
 * TSan build as well (scripts/test.sh --tsan).
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
#include "core/tmf.h"
#include "core/ua.h"
#include "libscsitgt/backend_fault.h"
#include "libscsitgt/pr.h"
#include "libscsitgt/scsitgt.h"
#include "util/be.h"
#include "xshard_world.h"

/* A one-block WRITE (10) of @s; left waiting for its Data-Out unless @execute. */
static void x_write(struct xw_cmd *x, struct scsitgt__session *s, bool execute)
{
	xw_rw10(x, s, SBC_WRITE_10, 0, 1);
	x->wait_data = !execute;
}

/* A TMF, issued on its nexus's thread, and its answer. */
struct xtmf_req {
	struct scsitgt__msg msg;
	struct xw_world *w;
	struct scsitgt__session *sess;
	enum scsitgt__tmf_type type;
	_Atomic int answered;
	_Atomic bool answered_on_home;
	enum scsitgt__tmf_response response;
	struct xw_wake wake;
};

static void tmf_cb(void *arg, enum scsitgt__tmf_response r)
{
	struct xtmf_req *q = arg;

	q->response = r;
	atomic_store(&q->answered_on_home, xw_on_home(q->w));
	xw_wake_home(q->w, &q->wake, &q->answered, 1);
}

static void tmf_issue(struct xtmf_req *q)
{
	uint8_t lun[8] = { 0 };

	scsitgt__tmf_execute(q->sess, q->type, lun, 0, tmf_cb, q);
}

static void tmf_msg(struct scsitgt__msg *msg)
{
	tmf_issue((struct xtmf_req *)msg);
}

/* Issue @type on @s's own loop; its answer comes into @q later. */
static void tmf_start(struct xw_world *w, struct scsitgt__session *s, enum scsitgt__tmf_type type,
		      struct xtmf_req *q)
{
	memset(q, 0, sizeof(*q));
	q->w = w;
	q->sess = s;
	q->type = type;
	if (s->shard->index == 0) {
		tmf_issue(q);
	} else {
		q->msg.fn = tmf_msg;
		scsitgt__worker_post(s->shard->worker, &q->msg);
	}
}

static enum scsitgt__tmf_response run_tmf(struct xw_world *w, struct scsitgt__session *s,
					  enum scsitgt__tmf_type type, struct xtmf_req *q)
{
	tmf_start(w, s, type, q);
	xw_wait_flag(w, &q->answered);
	/* its issuer's loop answers */
	assert_int_equal(atomic_load(&q->answered_on_home), s->shard->index == 0);
	return q->response;
}

/* The world on a RAM LUN behind the fault backend (w->bctx) with @spec. */
static int world_setup(void **state, const char *spec)
{
	struct xw_world *w;

	xw_world_create(&w, "iqn.2024-01.org.example:xtmf");
	xw_world_start_fault(w, spec);
	*state = w;
	return 0;
}

/* Held writes are cancelled by the backend's abort(). */
static int setup_abortable(void **state)
{
	return world_setup(state, "hang@write:abortable=1");
}

/* Held writes stay held until the test releases them. */
static int setup_hang(void **state)
{
	return world_setup(state, "hang@write");
}

/* TEST UNIT READY on @first, then on @second: each finds the reset's POWER ON, RESET, OR BUS
 * DEVICE RESET OCCURRED (29h/03h; SAM-5 §6.3.3). */
static void assert_both_find_reset(struct xw_world *w, struct scsitgt__session *first,
				   struct scsitgt__session *second)
{
	struct xw_cmd x;

	xw_run_tur(w, first, &x);
	xw_assert_ua(&x, 0x29, 0x03);
	xw_run_tur(w, second, &x);
	xw_assert_ua(&x, 0x29, 0x03);
}

/* LOGICAL UNIT RESET on home: B's tasks are aborted on the worker (one waiting for its data,
 * one in the backend, cancelled there), the TMF answers on home once both are gone, and both
 * nexuses find the reset's unit attention. */
static void test_lun_reset_reaches_worker(void **state)
{
	struct xw_world *w = *state;
	struct xw_cmd waiting, held, x;
	struct xtmf_req q;

	x_write(&waiting, w->b, false);
	xw_start(w, &waiting);
	x_write(&held, w->b, true);
	xw_start(w, &held);
	assert_int_equal(xw_fault_stats(w).held, 1);
	assert_int_equal(run_tmf(w, w->a, SCSITGT__TMF_LUN_RESET, &q), SCSITGT__TMF_COMPLETE);
	/* both ended on B's own loop (the held one left its backend before the answer; its
	 * fabric hears of it just after the TMF is released, cmd.c): the one still waiting for
	 * its Data-Out without a response, the held one TASK ABORTED (TAS 1, core/tmf.c) */
	xw_wait(w, &held);
	assert_int_equal(atomic_load(&waiting.ended), XW_ABORTED);
	assert_false(atomic_load(&waiting.ended_on_home));
	assert_int_equal(atomic_load(&held.ended), XW_DONE);
	assert_int_equal(held.status, SAM_STAT_TASK_ABORTED);
	assert_false(atomic_load(&held.ended_on_home));
	assert_int_equal(xw_fault_stats(w).cancelled, 1);
	assert_int_equal(xw_fault_stats(w).resets, 1);
	/* SAM-5 §6.3.3: every nexus, the resetting one included: 29h/03h */
	assert_both_find_reset(w, w->b, w->a);
	assert_int_equal(xw_run_tur(w, w->b, &x), SAM_STAT_GOOD);
}

struct applied {
	struct xw_world *w;
	_Atomic int done;
	bool on_home;
};

static void applied_cb(void *arg, int status)
{
	struct applied *a = arg;

	assert_int_equal(status, 0);
	a->on_home = xw_on_home(a->w);
	atomic_store(&a->done, 1);
}

/* A reset applied from another gateway says when it is done (lun.h
 * scsitgt_lun_apply_reset_async()): later than the call, once B's task on the worker was
 * aborted there, and from then on every nexus finds 29h/03h. The RBD backend acknowledges
 * the other gateway's notify from this callback. */
static void test_apply_reset_async_reaches_worker(void **state)
{
	struct xw_world *w = *state;
	struct xw_cmd held;
	struct applied a = { .w = w };

	x_write(&held, w->b, true);
	xw_start(w, &held);
	assert_int_equal(xw_fault_stats(w).held, 1);
	assert_int_equal(scsitgt_lun_apply_reset_async(NULL, applied_cb, &a), -EINVAL);
	assert_int_equal(scsitgt_lun_apply_reset_async(w->lun, NULL, NULL), -EINVAL);
	assert_int_equal(scsitgt_lun_apply_reset_async(w->lun, applied_cb, &a), 0);
	assert_int_equal(atomic_load(&a.done), 0); /* the worker has not answered yet */
	xw_wait_flag(w, &a.done);
	assert_true(a.on_home);
	xw_wait(w, &held);
	/* a reset from another engine: another nexus's doing, TASK ABORTED (TAS 1) */
	assert_int_equal(atomic_load(&held.ended), XW_DONE);
	assert_int_equal(held.status, SAM_STAT_TASK_ABORTED);
	/* not told: the reset did not start here */
	assert_int_equal(xw_fault_stats(w).resets, 0);
	assert_both_find_reset(w, w->b, w->a);
}

/* CLEAR TASK SET on the worker: A's task is aborted on home, the TMF answers on the worker,
 * and A (not B) finds COMMANDS CLEARED BY ANOTHER INITIATOR (SAM-5 §7.4). */
static void test_clear_task_set_from_worker(void **state)
{
	struct xw_world *w = *state;
	struct xw_cmd waiting, x;
	struct xtmf_req q;

	x_write(&waiting, w->a, false);
	xw_start(w, &waiting);
	assert_int_equal(run_tmf(w, w->b, SCSITGT__TMF_CLEAR_TASK_SET, &q), SCSITGT__TMF_COMPLETE);
	assert_int_equal(atomic_load(&waiting.ended), XW_ABORTED);
	assert_true(atomic_load(&waiting.ended_on_home));
	xw_run_tur(w, w->a, &x);
	xw_assert_ua(&x, 0x2f, 0x00);
	assert_int_equal(xw_run_tur(w, w->b, &x), SAM_STAT_GOOD);
}

/* TARGET WARM RESET on the worker: A's task is aborted on home; both nexuses find the reset. */
static void test_target_reset_from_worker(void **state)
{
	struct xw_world *w = *state;
	struct xw_cmd waiting, held;
	struct xtmf_req q;

	x_write(&waiting, w->a, false);
	xw_start(w, &waiting);
	x_write(&held, w->b, true);
	xw_start(w, &held);
	assert_int_equal(run_tmf(w, w->b, SCSITGT__TMF_TARGET_WARM_RESET, &q),
			 SCSITGT__TMF_COMPLETE);
	xw_wait(w, &held);
	assert_int_equal(atomic_load(&waiting.ended), XW_ABORTED);
	assert_true(atomic_load(&waiting.ended_on_home));
	assert_int_equal(atomic_load(&held.ended), XW_ABORTED);
	assert_false(atomic_load(&held.ended_on_home));
	assert_both_find_reset(w, w->a, w->b);
}

/* B's WRITE @held stuck in the backend, and B's ABORT TASK SET answered at its (20 ms) TMF
 * timeout, on the worker: @held is aborted and still there. */
static void held_write_abort_timed_out(struct xw_world *w, struct xw_cmd *held)
{
	struct xtmf_req q;

	assert_int_equal(scsitgt_engine_set_tmf_timeout(w->engine, 20), 0);
	x_write(held, w->b, true);
	xw_start(w, held);
	assert_int_equal(xw_fault_stats(w).held, 1);
	assert_int_equal(run_tmf(w, w->b, SCSITGT__TMF_ABORT_TASK_SET, &q), SCSITGT__TMF_COMPLETE);
	assert_int_equal(atomic_load(&held->ended), XW_RUNNING);
}

/* ABORT TASK SET on the worker with its task stuck in the backend: the TMF's timeout runs on
 * the worker's loop and answers there; the task ends, aborted, when the backend lets it go. */
static void test_abort_task_set_timeout_on_worker(void **state)
{
	struct xw_world *w = *state;
	struct xw_cmd held, x;

	held_write_abort_timed_out(w, &held);
	assert_int_equal(scsitgt_backend_fault_release(w->bctx, 0, -EIO), 1);
	xw_wait(w, &held);
	assert_int_equal(atomic_load(&held.ended), XW_ABORTED);
	assert_false(atomic_load(&held.ended_on_home));
	assert_int_equal(xw_run_tur(w, w->b, &x), SAM_STAT_GOOD);
}

/* LOGICAL UNIT RESET from A on home while the backend holds one WRITE: its aborts made on
 * both shards and the LU reset (reset() counted on home), it is done but for the WRITE, and
 * answers FUNCTION COMPLETE, on home, only once the backend gives the WRITE back. */
static void lun_reset_waits_for_held(struct xw_world *w, struct xtmf_req *r)
{
	tmf_start(w, w->a, SCSITGT__TMF_LUN_RESET, r);
	while (xw_fault_stats(w).resets == 0)
		xw_settle(w);
	xw_settle(w);
	assert_int_equal(atomic_load(&r->answered), 0);
	assert_int_equal(xw_fault_stats(w).held, 1);
	assert_int_equal(scsitgt_backend_fault_release(w->bctx, 0, -EIO), 1);
	xw_wait_flag(w, &r->answered);
	assert_true(atomic_load(&r->answered_on_home));
	assert_int_equal(r->response, SCSITGT__TMF_COMPLETE);
}

/*
 * reviewc F1 across shards: B's WRITE on the worker is aborted by B's ABORT TASK SET, which
 * answers at its (short) TMF timeout with the WRITE still in the backend. A LOGICAL UNIT RESET
 * from A on home then reaches B's shard, finds the WRITE already aborted, and must still wait
 * for it (SAM-5 §7.7): no answer once it has made its aborts and reset the LU, the answer on
 * home once the worker has let the WRITE go.
 */
static void test_lun_reset_waits_for_aborted_on_worker(void **state)
{
	struct xw_world *w = *state;
	struct xw_cmd held;
	struct xtmf_req r;

	held_write_abort_timed_out(w, &held);
	assert_int_equal(scsitgt_engine_set_tmf_timeout(w->engine, 600000), 0);
	lun_reset_waits_for_held(w, &r);
	xw_wait(w, &held);
	assert_int_equal(atomic_load(&held.ended), XW_ABORTED);
	assert_false(atomic_load(&held.ended_on_home));
	assert_both_find_reset(w, w->a, w->b);
}

/* How many TMF records the commands of @s carry, read on @s's own loop. */
struct waiters_probe {
	struct scsitgt__msg msg;
	struct xw_world *w;
	struct scsitgt__session *sess;
	_Atomic unsigned int n;
	_Atomic int done;
	struct xw_wake wake;
};

static void waiters_probe_msg(struct scsitgt__msg *msg)
{
	struct waiters_probe *p = (struct waiters_probe *)msg;

	atomic_store(&p->n, scsitgt__tmf_session_waiters(p->sess));
	xw_wake_home(p->w, &p->wake, &p->done, 1);
}

static unsigned int session_waiters(struct xw_world *w, struct scsitgt__session *s)
{
	struct waiters_probe p = { .w = w, .sess = s };

	if (s->shard->index == 0)
		return scsitgt__tmf_session_waiters(s);
	p.msg.fn = waiters_probe_msg;
	scsitgt__worker_post(s->shard->worker, &p.msg);
	xw_wait_flag(w, &p.done);
	return atomic_load(&p.n);
}

/*
 * reviewd F1 across shards: B's WRITE on the worker stays in the backend while LUN RESETs from
 * A on home answer at their 20 ms TMF timeout. Each one's record on the WRITE goes with its
 * answer, dropped on the worker (the answer on home posts there before it calls back; the
 * probe comes after it): none is left (before: one per reset until the backend returned the
 * WRITE). A reset with time to wait still answers only once the WRITE has left.
 */
static void test_lun_reset_timeouts_leave_no_waiter_on_worker(void **state)
{
	struct xw_world *w = *state;
	/* static: a failed assert leaves the test with the WRITE still held, which the teardown
	 * lets go: its end must find it */
	static struct xw_cmd held;
	struct xtmf_req q;

	held_write_abort_timed_out(w, &held);
	assert_int_equal(session_waiters(w, w->b), 0);
	for (int i = 0; i < 50; i++) {
		assert_int_equal(run_tmf(w, w->a, SCSITGT__TMF_LUN_RESET, &q),
				 SCSITGT__TMF_COMPLETE);
		assert_int_equal(session_waiters(w, w->b), 0);
	}
	assert_int_equal(xw_fault_stats(w).held, 1);
	assert_int_equal(atomic_load(&held.ended), XW_RUNNING);
	assert_int_equal(scsitgt_engine_set_tmf_timeout(w->engine, 600000), 0);
	tmf_start(w, w->a, SCSITGT__TMF_LUN_RESET, &q);
	/* its batch has run on the worker: its record is there (only a reset not answered yet
	 * makes one) */
	while (session_waiters(w, w->b) == 0)
		xw_settle(w);
	assert_int_equal(session_waiters(w, w->b), 1);
	assert_int_equal(atomic_load(&q.answered), 0);
	assert_int_equal(scsitgt_backend_fault_release(w->bctx, 0, -EIO), 1);
	xw_wait_flag(w, &q.answered);
	assert_int_equal(q.response, SCSITGT__TMF_COMPLETE);
	xw_wait(w, &held);
	assert_int_equal(atomic_load(&held.ended), XW_ABORTED);
}

/* @by (key @by_key) PREEMPTs AND ABORTs the registration of @victim (key @victim_key) while a
 * task of @victim waits for its data: the task is aborted on @victim's own loop before the
 * PERSISTENT RESERVE OUT's status, and @victim finds REGISTRATIONS PREEMPTED (SPC-5
 * §5.13.11.5). */
static void preempt_and_abort(struct xw_world *w, struct scsitgt__session *by, uint64_t by_key,
			      struct scsitgt__session *victim, uint64_t victim_key)
{
	struct xw_cmd waiting, x;

	assert_int_equal(xw_run_pr_out(w, victim, PR_OUT_REGISTER, 0, 0, victim_key, &x),
			 SAM_STAT_GOOD);
	assert_int_equal(xw_run_pr_out(w, by, PR_OUT_REGISTER, 0, 0, by_key, &x), SAM_STAT_GOOD);
	x_write(&waiting, victim, false);
	xw_start(w, &waiting);
	assert_int_equal(
		xw_run_pr_out(w, by, PR_OUT_PREEMPT_AND_ABORT, PR_TYPE_WE, by_key, victim_key, &x),
		SAM_STAT_GOOD);
	assert_int_equal(atomic_load(&waiting.ended), XW_ABORTED);
	assert_int_equal(atomic_load(&waiting.ended_on_home), victim->shard->index == 0);
	xw_run_tur(w, victim, &x);
	xw_assert_ua(&x, 0x2a, 0x05);
	assert_int_equal(xw_run_pr_out(w, by, PR_OUT_CLEAR, 0, by_key, 0, &x), SAM_STAT_GOOD);
}

/* PREEMPT AND ABORT on home of B's registration reaches B's task on the worker. */
static void test_preempt_and_abort_reaches_worker(void **state)
{
	struct xw_world *w = *state;

	preempt_and_abort(w, w->a, 0xa, w->b, 0xb);
}

/* PREEMPT AND ABORT made on the worker reaches A's task on home the same way. */
static void test_preempt_and_abort_from_worker(void **state)
{
	struct xw_world *w = *state;

	preempt_and_abort(w, w->b, 0xb, w->a, 0xa);
}

#ifndef NDEBUG
/* Which thread detached a command from its ended nexus (cmd.h's transition hook). */
static _Atomic int orphaned_on_home = -1;
static uv_thread_t hook_home;

static void orphan_hook(const struct scsitgt__cmd *cmd, enum scsitgt__cmd_state from,
			enum scsitgt__cmd_state to)
{
	uv_thread_t self = uv_thread_self();

	(void)cmd;
	(void)from;
	if (to == SCSITGT__CMD_ORPHANED)
		atomic_store(&orphaned_on_home, uv_thread_equal(&hook_home, &self));
}
#endif

/* B's WRITE @held in the backend, then B's end: home frees the nexus once the worker has
 * detached the WRITE (ORPHANED there, the backend still holds it). */
static void b_ends_with_held_write(struct xw_world *w, struct xw_cmd *held)
{
	x_write(held, w->b, true);
	xw_start(w, held);
	assert_int_equal(xw_fault_stats(w).held, 1);
	scsitgt__session_destroy(w->b);
	w->b = NULL;
	while (w->tgt->sessions.next->next != &w->tgt->sessions)
		uv_run(&w->loop, UV_RUN_ONCE);
}

/* The end of nexus B while a backend holds its write: the command is detached on B's loop (a
 * completion may be running there), and the session is gone once home has freed it. */
static void test_session_destroy_on_its_shard(void **state)
{
	struct xw_world *w = *state;
	struct xw_cmd held;

#ifdef NDEBUG
	skip();
#else
	hook_home = w->home;
	atomic_store(&orphaned_on_home, -1);
	scsitgt__cmd_transition_hook = orphan_hook;
	b_ends_with_held_write(w, &held);
	/* (the hook stays: it only records, and the worker may still read it) */
	assert_int_equal(atomic_load(&orphaned_on_home), 0);
	/* its write comes back later: freed without a fabric */
	assert_int_equal(scsitgt_backend_fault_release(w->bctx, 0, -EIO), 1);
	assert_int_equal(atomic_load(&held.ended), XW_RUNNING);
#endif
}

/*
 * reviewd F2 across shards: nexus B on the worker ends while the backend holds its WRITE (left
 * to it, ORPHANED on the worker), so the worker has no nexus of the target left. A LOGICAL
 * UNIT RESET from A on home still asks the worker, and answers only once the WRITE is back
 * (before: at once, the WRITE still in the backend).
 */
static void test_lun_reset_waits_for_orphan_on_worker(void **state)
{
	struct xw_world *w = *state;
	struct xw_cmd held;
	struct xtmf_req r;

	assert_int_equal(scsitgt_engine_set_tmf_timeout(w->engine, 600000), 0);
	b_ends_with_held_write(w, &held);
	lun_reset_waits_for_held(w, &r);
	assert_int_equal(xw_fault_stats(w).held, 0);
	/* its write was freed without a fabric */
	assert_int_equal(atomic_load(&held.ended), XW_RUNNING);
}

/* A LUN removal that times out aborts the LUN's tasks on every shard, each on its own loop. */
static void test_drain_timeout_reaches_worker(void **state)
{
	struct xw_world *w = *state;
	struct xw_cmd waiting;

	assert_int_equal(scsitgt_engine_set_drain_timeout(w->engine, 20), 0);
	x_write(&waiting, w->b, false);
	xw_start(w, &waiting);
	xw_lun_remove(w);
	/* its backend closed with it (nothing of it was held) */
	w->bctx = NULL;
	xw_wait(w, &waiting);
	assert_int_equal(atomic_load(&waiting.ended), XW_ABORTED);
	assert_false(atomic_load(&waiting.ended_on_home));
}

/* A cluster store (libscsitgt/pr.h) that keeps the one request it is asked, on home. */
struct store {
	struct xw_world *w;
	struct scsitgt_pr_req *req;
	bool commit;
	_Atomic int asked;
	bool off_home;
};

static void store_fetch(void *arg, struct scsitgt_lun *lun, struct scsitgt_pr_req *req)
{
	struct store *st = arg;

	(void)lun;
	st->off_home |= !xw_on_home(st->w);
	st->req = req;
	st->commit = false;
	atomic_store(&st->asked, 1);
}

static void store_commit(void *arg, struct scsitgt_lun *lun, struct scsitgt_pr_req *req,
			 const void *data, size_t len, uint64_t version)
{
	struct store *st = arg;

	(void)lun;
	(void)data;
	(void)len;
	(void)version;
	st->off_home |= !xw_on_home(st->w);
	st->req = req;
	st->commit = true;
	atomic_store(&st->asked, 1);
}

static const struct scsitgt_pr_cluster_ops store_ops = {
	.size = sizeof(struct scsitgt_pr_cluster_ops),
	.fetch = store_fetch,
	.commit = store_commit,
};

/* LUN 0's reservations in @st; @x, B's REGISTER, started: returns once @st was asked to fetch
 * the state (and not to commit). */
static void store_register_b(struct xw_world *w, struct store *st, struct xw_cmd *x)
{
	assert_int_equal(scsitgt_lun_set_pr_cluster(w->lun, &store_ops, st), 0);
	xw_pr_out(x, w->b, PR_OUT_REGISTER, 0, 0, 0xb);
	xw_start(w, x);
	xw_wait_flag(w, &st->asked);
	assert_false(st->commit);
	atomic_store(&st->asked, 0);
}

/* The store was asked on home only; LUN 0 leaves it. */
static void store_done(struct xw_world *w, const struct store *st)
{
	assert_false(st->off_home);
	assert_int_equal(scsitgt_lun_set_pr_cluster(w->lun, NULL, NULL), 0);
}

/* A PERSISTENT RESERVE OUT of B (worker) on a LUN whose reservations live in a cluster store:
 * the store is asked on home (its hooks are Loop: home), and B's command gets its status on
 * its own loop. */
static void test_cluster_pr_out_from_worker(void **state)
{
	struct xw_world *w = *state;
	struct store st = { .w = w };
	struct xw_cmd x;

	store_register_b(w, &st, &x);
	/* nothing stored yet */
	scsitgt_pr_req_complete_fetch(st.req, 0, NULL, 0, 1);
	xw_wait_flag(w, &st.asked);
	assert_true(st.commit);
	scsitgt_pr_req_complete_commit(st.req, 0);
	xw_wait(w, &x);
	assert_int_equal(atomic_load(&x.ended), XW_DONE);
	assert_int_equal(x.status, SAM_STAT_GOOD);
	assert_false(atomic_load(&x.ended_on_home));
	store_done(w, &st);
}

/*
 * B's nexus ends while the cluster store has its PERSISTENT RESERVE OUT: home goes on with the
 * request's copy of the nexus (never the session, freed by then, nor the held command's state,
 * its shard's: core/home_call.h), and the command ends on its own shard, freed there without
 * a status.
 */
static void test_cluster_pr_out_nexus_gone(void **state)
{
	struct xw_world *w = *state;
	struct store st = { .w = w };
	struct xw_cmd x;

	store_register_b(w, &st, &x);
	scsitgt__session_destroy(w->b);
	w->b = NULL;
	while (w->tgt->sessions.next->next != &w->tgt->sessions)
		uv_run(&w->loop, UV_RUN_ONCE);
	scsitgt_pr_req_complete_fetch(st.req, 0, NULL, 0, 1);
	/* (whether the change of a command whose nexus is gone is made is not the point here:
	 * the store is answered whatever it is asked) */
	if (atomic_load(&st.asked)) {
		assert_true(st.commit);
		scsitgt_pr_req_complete_commit(st.req, 0);
	}
	/* its end on the worker (the status back from home) has run: freed, no fabric told */
	xw_settle(w);
	assert_false(xw_finished(&x));
	assert_int_equal(atomic_load(&x.ended), XW_RUNNING);
	store_done(w, &st);
}

/* The host's store of the reservation state (scsitgt_lun_set_pr_store()), called "on the home
 * loop, inside the PERSISTENT RESERVE OUT command" (libscsitgt/pr.h). */
struct saves {
	struct xw_world *w;
	_Atomic int n;
	_Atomic bool off_home;
};

static void save_cb(void *arg, struct scsitgt_lun *lun, const void *data, size_t len)
{
	struct saves *sv = arg;

	(void)lun;
	(void)data;
	(void)len;
	if (!xw_on_home(sv->w))
		atomic_store(&sv->off_home, true);
	atomic_fetch_add(&sv->n, 1);
}

/* The first unit attention A has on LUN 0 as the command ends (on its own thread). */
static _Atomic int a_ua_at_end;

static void note_a_ua(struct xw_cmd *x)
{
	enum scsitgt__sense_reason first = SCSITGT__SR_OK;

	atomic_store(&a_ua_at_end, scsitgt__ua_pending(x->w->a, 0, &first) ? (int)first : 0);
}

/*
 * PERSISTENT RESERVE OUT of B (worker) preempting A (home), the holder: the state's save
 * callback runs on home (libscsitgt/pr.h), the fabric hears of A's unit attention on home
 * (fabric.h), and A's REGISTRATIONS PREEMPTED is established before B's status reaches B's
 * fabric (SPC-5 §5.13.11.4); A finds it.
 */
static void test_pr_out_from_worker_home_steps(void **state)
{
	struct xw_world *w = *state;
	struct saves sv = { .w = w };
	struct xw_cmd x;

	assert_int_equal(scsitgt_lun_set_pr_store(w->lun, save_cb, &sv), 0);
	assert_int_equal(xw_run_pr_out(w, w->a, PR_OUT_REGISTER, 0, 0, 0xa, &x), SAM_STAT_GOOD);
	assert_int_equal(xw_run_pr_out(w, w->b, PR_OUT_REGISTER, 0, 0, 0xb, &x), SAM_STAT_GOOD);
	assert_int_equal(xw_run_pr_out(w, w->a, PR_OUT_RESERVE, PR_TYPE_WE_RO, 0xa, 0, &x),
			 SAM_STAT_GOOD);
	atomic_store(&a_ua_at_end, -1);
	xw_pr_out(&x, w->b, PR_OUT_PREEMPT, PR_TYPE_WE_RO, 0xb, 0xa);
	x.at_end = note_a_ua;
	assert_int_equal(xw_run(w, &x), SAM_STAT_GOOD);
	assert_false(atomic_load(&x.ended_on_home));
	assert_int_equal(atomic_load(&a_ua_at_end), SCSITGT__SR_UA_REGISTRATIONS_PREEMPTED);
	/* REGISTER twice, RESERVE, PREEMPT: each change saved, on home */
	assert_int_equal(atomic_load(&sv.n), 4);
	assert_false(atomic_load(&sv.off_home));
	assert_int_equal(atomic_load(&w->uas_off_home), 0);
	xw_run_tur(w, w->a, &x);
	xw_assert_ua(&x, 0x2a, 0x05);
	assert_int_equal(xw_run_pr_out(w, w->b, PR_OUT_CLEAR, 0, 0xb, 0, &x), SAM_STAT_GOOD);
	assert_int_equal(scsitgt_lun_set_pr_store(w->lun, NULL, NULL), 0);
}

/*
 * The TMF timeout is read by every TMF, on its issuer's loop (core/tmf.c), while home may
 * change it (scsitgt_engine_set_tmf_timeout(), which scsitgtd calls on a reload). Home sees the
 * worker's TMF answered through a relaxed flag, which orders nothing, and changes the timeout:
 * ThreadSanitizer reports the race unless the field is an atomic.
 */
static _Atomic bool tmo_answered;

static void tmo_cb(void *arg, enum scsitgt__tmf_response r)
{
	atomic_store_explicit(&tmo_answered, true, memory_order_relaxed);
	tmf_cb(arg, r);
}

static void tmo_msg(struct scsitgt__msg *msg)
{
	struct xtmf_req *q = (struct xtmf_req *)msg;
	uint8_t lun[8] = { 0 };

	scsitgt__tmf_execute(q->sess, q->type, lun, 0, tmo_cb, q);
}

static void test_tmf_timeout_set_while_worker_issues(void **state)
{
	struct xw_world *w = *state;
	struct xtmf_req q;

	assert_int_equal(scsitgt_engine_set_tmf_timeout(w->engine, 20000), 0);
	memset(&q, 0, sizeof(q));
	q.w = w;
	q.sess = w->b;
	q.type = SCSITGT__TMF_ABORT_TASK_SET;
	atomic_store(&tmo_answered, false);
	q.msg.fn = tmo_msg;
	scsitgt__worker_post(w->b->shard->worker, &q.msg);
	/* A condition: the worker sets it as its TMF (no task to abort) answers. */
	while (!atomic_load_explicit(&tmo_answered, memory_order_relaxed))
		uv_sleep(0);
	assert_int_equal(scsitgt_engine_set_tmf_timeout(w->engine, 25000), 0);
	xw_wait_flag(w, &q.answered);
	assert_int_equal(q.response, SCSITGT__TMF_COMPLETE);
	assert_false(atomic_load(&q.answered_on_home));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_apply_reset_async_reaches_worker,
						setup_abortable, xw_teardown_fault),
		cmocka_unit_test_setup_teardown(test_lun_reset_reaches_worker, setup_abortable,
						xw_teardown_fault),
		cmocka_unit_test_setup_teardown(test_clear_task_set_from_worker, setup_hang,
						xw_teardown_fault),
		cmocka_unit_test_setup_teardown(test_target_reset_from_worker, setup_abortable,
						xw_teardown_fault),
		cmocka_unit_test_setup_teardown(test_abort_task_set_timeout_on_worker, setup_hang,
						xw_teardown_fault),
		cmocka_unit_test_setup_teardown(test_lun_reset_waits_for_aborted_on_worker,
						setup_hang, xw_teardown_fault),
		cmocka_unit_test_setup_teardown(test_lun_reset_timeouts_leave_no_waiter_on_worker,
						setup_hang, xw_teardown_fault),
		cmocka_unit_test_setup_teardown(test_preempt_and_abort_reaches_worker, setup_hang,
						xw_teardown_fault),
		cmocka_unit_test_setup_teardown(test_preempt_and_abort_from_worker, setup_hang,
						xw_teardown_fault),
		cmocka_unit_test_setup_teardown(test_session_destroy_on_its_shard, setup_hang,
						xw_teardown_fault),
		cmocka_unit_test_setup_teardown(test_lun_reset_waits_for_orphan_on_worker,
						setup_hang, xw_teardown_fault),
		cmocka_unit_test_setup_teardown(test_drain_timeout_reaches_worker, setup_hang,
						xw_teardown_fault),
		cmocka_unit_test_setup_teardown(test_cluster_pr_out_from_worker, setup_hang,
						xw_teardown_fault),
		cmocka_unit_test_setup_teardown(test_cluster_pr_out_nexus_gone, setup_hang,
						xw_teardown_fault),
		cmocka_unit_test_setup_teardown(test_pr_out_from_worker_home_steps, setup_hang,
						xw_teardown_fault),
		cmocka_unit_test_setup_teardown(test_tmf_timeout_set_while_worker_issues,
						setup_hang, xw_teardown_fault),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
