/* SPDX-License-Identifier: MIT */
/*
 * Held admission (core/pr_hold.c) across shards: the LUN's queue of held commands is home's
 * (under lun->xlock), while a command of nexus B runs on the worker, whose loop alone may
 * abort it. A TMF, the loss of B's nexus, or a release that races with either: the command
 * leaves the queue on its own loop, ends aborted (or freed) there and never runs, and the TMF
 * answers once it is gone, with no word from the store (which never answers here: its lease
 * ran out and it is never renewed until the test says so). The one-loop cases are
 * test_pr_hold.c. Waits are on conditions (tests/support/xshard_world.h); a TMF that waited
 * for the store would answer by its timeout, with the command still in the queue.
 * Run under the TSan build as well (scripts/test.sh --tsan).
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
#include "core/pr.h"
#include "core/scsi_spec.h"
#include "core/shard.h"
#include "libscsitgt/pr.h"
#include "libscsitgt/scsitgt.h"
#include "pr_hold_store.h"
#include "xshard_world.h"

/* A bound on a TMF's answer: one that waited for the store would come only then (before the
 * fix, with the command still held); the fixed path answers in a few messages. */
#define TMF_TIMEOUT_MS 5000u

/* The store (on home), one per test. */
static struct hold_store store;

/* A RAM LUN behind the fault backend (every io passes), its reservations in the store, whose
 * lease ran out (at 1 ms of the clock: long past). */
static int setup(void **state)
{
	struct xw_world *w;

	xw_world_create(&w, "iqn.2024-01.org.example:xprhold");
	/* (a rule that never fires: the backend only counts) */
	xw_world_start_fault(w, "hang@flush");
	assert_int_equal(scsitgt_engine_set_tmf_timeout(w->engine, TMF_TIMEOUT_MS), 0);
	memset(&store, 0, sizeof(store));
	assert_int_equal(scsitgt_lun_set_pr_cluster(w->lun, &hold_store_ops, &store), 0);
	assert_int_equal(scsitgt_lun_set_pr_lease(w->lun, 1), 0);
	*state = w;
	return 0;
}

/* The ios (writes, here) that reached the backend so far. */
static unsigned long long writes(const struct xw_world *w)
{
	return xw_fault_stats(w).submitted;
}

/* A one-block WRITE (10) of @s at @lba, started on its loop and held on home (the store asked
 * to recheck): nothing reached the backend. */
static void write_held(struct xw_world *w, struct scsitgt__session *s, uint32_t lba,
		       struct xw_cmd *x)
{
	unsigned long long n = writes(w);
	unsigned int asked = atomic_load(&store.nrecheck);

	xw_rw10(x, s, SBC_WRITE_10, lba, 1);
	xw_start(w, x);
	/* home queues it (the first held asks the store); its loop saw nothing of that */
	xw_settle(w);
	assert_false(xw_finished(x));
	assert_true(atomic_load(&store.nrecheck) >= (asked ? asked : 1));
	assert_int_equal(writes(w), n);
}

/* Held writes of B (on the worker) at LBA 0 (@xb) and of A (home) at 1 (@xa), in that order:
 * the opening of the tests of both nexuses. Returns the writes that reached the backend
 * before the two (none of them does). */
static unsigned long long hold_b_and_a(struct xw_world *w, struct xw_cmd *xb, struct xw_cmd *xa)
{
	unsigned long long n = writes(w);

	write_held(w, w->b, 0, xb);
	write_held(w, w->a, 1, xa);
	return n;
}

/* A TMF issued on its nexus's loop, and its answer (posted to home). */
struct xtmf_req {
	struct scsitgt__msg msg;
	struct xw_world *w;
	struct scsitgt__session *sess;
	enum scsitgt__tmf_type type;
	uint64_t tag;
	_Atomic int answered;
	enum scsitgt__tmf_response response;
	/* the command it aborts, or NULL */
	struct xw_cmd *x;
	struct xw_wake wake;
	/* the worker has issued it (set there, right after the call) */
	_Atomic bool issued;
};

static void tmf_cb(void *arg, enum scsitgt__tmf_response r)
{
	struct xtmf_req *q = arg;

	q->response = r;
	xw_wake_home(q->w, &q->wake, &q->answered, 1);
}

static void tmf_msg(struct scsitgt__msg *msg)
{
	struct xtmf_req *q = (struct xtmf_req *)msg;
	uint8_t lun[8] = { 0 };

	scsitgt__tmf_execute(q->sess, q->type, lun, q->tag, tmf_cb, q);
	atomic_store(&q->issued, true);
}

/* Issue @type (of @x's tag for ABORT TASK) on @s's loop; not waited for. */
static void tmf_post(struct xw_world *w, struct scsitgt__session *s, enum scsitgt__tmf_type type,
		     struct xw_cmd *x, struct xtmf_req *q)
{
	memset(q, 0, sizeof(*q));
	q->w = w;
	q->sess = s;
	q->type = type;
	q->x = x;
	q->tag = x ? (uint64_t)(uintptr_t)x : 0;
	q->msg.fn = tmf_msg;
	if (s->shard->index == 0)
		tmf_msg(&q->msg);
	else
		scsitgt__worker_post(s->shard->worker, &q->msg);
}

/* How many commands the LUN's queue holds. */
static unsigned int queued(struct xw_world *w)
{
	unsigned int n = 0;

	uv_mutex_lock(&w->lun->xlock);
	for (struct scsitgt__list *p = w->lun->pr->hold_q.next; p != &w->lun->pr->hold_q;
	     p = p->next)
		n++;
	uv_mutex_unlock(&w->lun->xlock);
	return n;
}

/* The TMF answered with @left commands still in the LUN's queue (not by the TMF's timeout
 * with its command still there), and @q->x ended aborted on its own loop, never executed. */
static void tmf_answered(struct xw_world *w, struct xtmf_req *q, unsigned int left,
			 unsigned long long nwrites)
{
	xw_wait_flag(w, &q->answered);
	assert_int_equal(q->response, SCSITGT__TMF_COMPLETE);
	assert_int_equal(queued(w), left);
	if (q->x) {
		xw_wait(w, q->x);
		/* another nexus's reset: TASK ABORTED under TAS 1 (core/tmf.c); its own: none */
		if (q->x->sess != q->sess) {
			assert_int_equal(atomic_load(&q->x->ended), XW_DONE);
			assert_int_equal(q->x->status, SAM_STAT_TASK_ABORTED);
		} else {
			assert_int_equal(atomic_load(&q->x->ended), XW_ABORTED);
		}
		assert_int_equal(atomic_load(&q->x->ended_on_home), q->x->sess->shard->index == 0);
	}
	assert_int_equal(writes(w), nwrites);
}

/* The store renews its lease: whatever is still held runs; a new write of B runs too. */
static void renew(struct xw_world *w)
{
	struct xw_cmd x;

	assert_int_equal(scsitgt_lun_set_pr_lease(w->lun, scsitgt__pr_clock_ms() + 600000), 0);
	xw_rw10(&x, w->b, SBC_WRITE_10, 9, 1);
	assert_int_equal(xw_run(w, &x), SAM_STAT_GOOD);
}

/* ABORT TASK on the worker of B's held write: it leaves home's queue from the worker, ends
 * aborted there, and the TMF answers on the worker at once. A's held write is left alone. */
static void test_abort_task_on_worker(void **state)
{
	struct xw_world *w = *state;
	struct xw_cmd xb, xa;
	struct xtmf_req q;
	unsigned long long n = hold_b_and_a(w, &xb, &xa);

	assert_int_equal(queued(w), 2);
	tmf_post(w, w->b, SCSITGT__TMF_ABORT_TASK, &xb, &q);
	tmf_answered(w, &q, 1, n);
	assert_false(xw_finished(&xa));
	renew(w);
	assert_int_equal(xw_wait(w, &xa), SAM_STAT_GOOD);
	assert_int_equal(writes(w), n + 2);
}

/* LOGICAL UNIT RESET from A (home) with B's write held: the worker takes it out of the queue
 * and ends it, and the reset answers on home once it is gone, at once. */
static void test_lun_reset_reaches_held_on_worker(void **state)
{
	struct xw_world *w = *state;
	struct xw_cmd xb, xa;
	struct xtmf_req q;
	unsigned long long n = hold_b_and_a(w, &xb, &xa);

	tmf_post(w, w->a, SCSITGT__TMF_LUN_RESET, &xb, &q);
	tmf_answered(w, &q, 0, n);
	xw_wait(w, &xa);
	assert_int_equal(atomic_load(&xa.ended), XW_ABORTED);
	assert_int_equal(scsitgt_lun_set_pr_lease(w->lun, scsitgt__pr_clock_ms() + 600000), 0);
	xw_run_tur(w, w->b, &xb);
	xw_assert_ua(&xb, 0x29, 0x03);
	renew(w);
	assert_int_equal(writes(w), n + 1);
}

/* B's nexus ends with its write held: the worker frees the command as it detaches it, not
 * when the store lets the queue go (the LUN's count of commands shows it once the nexus is
 * gone on home), and the command never runs. */
static void test_nexus_gone_held_on_worker(void **state)
{
	struct xw_world *w = *state;
	struct xw_cmd xb;
	unsigned long long n = writes(w);

	write_held(w, w->b, 0, &xb);
	assert_int_equal(scsitgt__lun_inflight(w->lun), 1);
	scsitgt__session_destroy(w->b);
	w->b = NULL;
	while (w->tgt->sessions.next->next != &w->tgt->sessions)
		uv_run(&w->loop, UV_RUN_ONCE);
	assert_int_equal(scsitgt__lun_inflight(w->lun), 0);
	assert_false(xw_finished(&xb));
	assert_int_equal(scsitgt_lun_set_pr_lease(w->lun, scsitgt__pr_clock_ms() + 600000), 0);
	xw_settle(w);
	assert_false(xw_finished(&xb));
	assert_int_equal(writes(w), n);
}

/*
 * B's write aborted on the worker while its message to home is still on its way (home's loop
 * has not run since the write started): home, when it gets it, sends it back at once instead
 * of queueing it (the store is never asked), and the TMF answers once it is back.
 */
static void test_abort_before_home_queues(void **state)
{
	struct xw_world *w = *state;
	struct xw_cmd xb;
	struct xtmf_req q;
	unsigned long long n = writes(w);

	xw_rw10(&xb, w->b, SBC_WRITE_10, 0, 1);
	/* returns once the worker executed it: held, its message to home posted, not run */
	xw_start(w, &xb);
	tmf_post(w, w->b, SCSITGT__TMF_ABORT_TASK, &xb, &q);
	while (!atomic_load(&q.issued))
		uv_sleep(0);
	assert_false(xw_finished(&xb));
	tmf_answered(w, &q, 0, n);
	assert_int_equal(atomic_load(&store.nrecheck), 0);
	renew(w);
}

/* The worker, stopped until the test lets it go. */
struct gate {
	struct scsitgt__msg msg;
	uv_sem_t in, out;
};

static void gate_msg(struct scsitgt__msg *msg)
{
	struct gate *g = (struct gate *)msg;

	uv_sem_post(&g->in);
	uv_sem_wait(&g->out);
}

/*
 * A release and an abort that cross: home lets the queue go (its message back to B's write
 * posted) while the worker, stopped, has the ABORT TASK before that message. The abort finds
 * the write taken and does not send it back a second time; the release's message finds it
 * aborted and does not run it. The TMF answers once it is back.
 */
static void test_release_crosses_abort(void **state)
{
	struct xw_world *w = *state;
	struct xw_cmd xb;
	struct xtmf_req q;
	struct gate g;
	unsigned long long n = writes(w);

	write_held(w, w->b, 0, &xb);
	assert_int_equal(uv_sem_init(&g.in, 0), 0);
	assert_int_equal(uv_sem_init(&g.out, 0), 0);
	g.msg.fn = gate_msg;
	scsitgt__worker_post(w->b->shard->worker, &g.msg);
	uv_sem_wait(&g.in);
	tmf_post(w, w->b, SCSITGT__TMF_ABORT_TASK, &xb, &q);
	/* home: the lease renewed, the queue goes (B's write sent back, behind the TMF) */
	assert_int_equal(scsitgt_lun_set_pr_lease(w->lun, scsitgt__pr_clock_ms() + 600000), 0);
	uv_sem_post(&g.out);
	tmf_answered(w, &q, 0, n);
	uv_sem_destroy(&g.in);
	uv_sem_destroy(&g.out);
	renew(w);
	assert_int_equal(writes(w), n + 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_abort_task_on_worker, setup,
						xw_teardown_fault),
		cmocka_unit_test_setup_teardown(test_lun_reset_reaches_held_on_worker, setup,
						xw_teardown_fault),
		cmocka_unit_test_setup_teardown(test_nexus_gone_held_on_worker, setup,
						xw_teardown_fault),
		cmocka_unit_test_setup_teardown(test_abort_before_home_queues, setup,
						xw_teardown_fault),
		cmocka_unit_test_setup_teardown(test_release_crosses_abort, setup,
						xw_teardown_fault),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
