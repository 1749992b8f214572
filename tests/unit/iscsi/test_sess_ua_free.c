/* SPDX-License-Identifier: MIT */
/*
 * A worker raises a unit attention on a nexus whose iSCSI session home is finishing
 * (review29 F4). A task management batch that home posted to the worker before the session
 * was leaving (core/tmf_xshard.c xt_batch_abort(): COMMANDS CLEARED BY ANOTHER INITIATOR)
 * checks that the nexus is not leaving, then calls the core's hook, scsitgt__iscsi_async_ua(),
 * which reads the iSCSI session; meanwhile home runs scsitgt__iscsi_sess_finish(), posted by
 * the worker when the session's connection went, which marks the nexus leaving and ends the
 * session. The session must outlive that hook: nothing orders the worker's reads before a
 * free on home.
 *
 * Made deterministic: the worker's connection closes (the finish is posted home), the worker
 * then raises the condition as the batch does (the nexus is not leaving yet: home has not run),
 * and sets a relaxed flag, which home polls (it orders nothing); only then does home run its
 * loop and finish the session. A free of the session on home races with the worker's reads,
 * which ThreadSanitizer reports (part of the TSan suite's unit tests); the session freed on
 * its own loop after them does not.
 *
 * Also (review30 F1): the host's walk of the target's sessions and its kick, between home's
 * finish of such a session and the end of its core nexus (see test_kick_of_ending_session()).
 */
#include <errno.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../support/conn_workers_env.h"
#include "iscsi_harness.h"
#include "core/core.h"
#include "core/ua.h"
#include "core/worker.h"
#include "libscsitgt/scsitgt.h"
#include "transport/iscsi/conn.h"

#include "listener_portal.h"

#define T_TARGET "iqn.2026-12.org.libscsitgt:ua-free"
#define T_INITIATOR "iqn.2026-12.org.libscsitgt:ua-free-initiator"

#include "worker_sess.h"

/*
 * On the worker, once the session's connection is gone (its finish posted home): raise
 * COMMANDS CLEARED BY ANOTHER INITIATOR on the nexus as a task management batch does
 * (tmf_xshard.c xt_batch_abort()), then tell home by the relaxed flag only.
 */
static void raise_fn(struct scsitgt__msg *msg)
{
	struct step *s = scsitgt__container_of(msg, struct step, msg);

	if (s->sess->nconns != 0) {
		/* The connection's handles still closing: after them. */
		scsitgt__worker_post(s->wd->w, &s->msg);
		return;
	}
	scsitgt__ua_establish(s->sess->core, 0, SCSITGT__SR_UA_COMMANDS_CLEARED_BY_OTHER);
	atomic_store_explicit(&s->raised, true, memory_order_relaxed);
}

/* On the worker: close the session's connection, then raise_fn(). */
static void close_fn(struct scsitgt__msg *msg)
{
	struct step *s = scsitgt__container_of(msg, struct step, msg);

	scsitgt__iscsi_conn_close(s->wd->conn, "test: the initiator is gone");
	s->msg.fn = raise_fn;
	scsitgt__worker_post(s->wd->w, &s->msg);
}

static void test_worker_ua_while_home_finishes_session(void **state)
{
	struct scsitgt__iscsi_sess *sess;
	struct world wd;
	struct step gone;

	(void)state;
	memset(&gone, 0, sizeof(gone));
	world_up(&wd, &sess);

	/* The connection goes and the worker raises the condition; home does not run its loop
	 * until the worker is past the hook, so the nexus is not leaving when it checks. */
	gone.sess = sess;
	step_post(&gone, &wd, close_fn);
	for (unsigned long guard = 0; !atomic_load_explicit(&gone.raised, memory_order_relaxed);
	     guard++) {
		assert_true(guard < 1000000000ul);
		sched_yield();
	}
	/* Now home finishes the session (its core nexus goes after its worker's detach). */
	world_down(&wd);
}

/* On the worker: nothing but telling home, with release order, that the messages posted
 * before this one have run. */
static void fence_fn(struct scsitgt__msg *msg)
{
	struct step *s = scsitgt__container_of(msg, struct step, msg);

	atomic_store_explicit(&s->raised, true, memory_order_release);
}

static void close_only_fn(struct scsitgt__msg *msg)
{
	struct step *s = scsitgt__container_of(msg, struct step, msg);

	scsitgt__iscsi_conn_close(s->wd->conn, "test: the initiator is gone");
}

static int kick_visit(void *arg, const struct scsitgt_session_stats *st)
{
	unsigned int *seen = arg;

	(*seen)++;
	return scsitgt_session_kick(st->session);
}

/*
 * review30 F1: the host walks the target's sessions and kicks one (scsitgtd's control "kick")
 * while that session is ending. Home has finished the iSCSI session (the worker frees it) but
 * the core nexus stays on the target's list until its detach comes back from the worker. A
 * walk then must not hand the ending nexus out, and a kick of it must not reach the freed
 * iSCSI session (ASan: heap-use-after-free in the kick before the fix).
 */
static void test_kick_of_ending_session(void **state)
{
	struct scsitgt__iscsi_sess *sess;
	struct scsitgt__session *core;
	struct world wd;
	struct step gone, fence;
	unsigned int seen = 0;

	(void)state;
	memset(&gone, 0, sizeof(gone));
	memset(&fence, 0, sizeof(fence));
	world_up(&wd, &sess);
	core = sess->core;

	step_post(&gone, &wd, close_only_fn);
	/* Home runs until the nexus is leaving (the iSCSI session's free posted to the worker). */
	for (int guard = 0; !atomic_load(&core->leaving); guard++) {
		assert_true(guard < 100000);
		uv_run(&wd.loop, UV_RUN_ONCE);
	}
	/* The worker has run everything posted before: the iSCSI session is freed. Home has not
	 * run since, so the core nexus is still listed. */
	step_post(&fence, &wd, fence_fn);
	for (unsigned long guard = 0; !atomic_load_explicit(&fence.raised, memory_order_acquire);
	     guard++) {
		assert_true(guard < 1000000000ul);
		sched_yield();
	}
	assert_false(scsitgt__list_empty(&wd.tgt->sessions));
	assert_int_equal(scsitgt_target_foreach_session(wd.tgt, kick_visit, &seen), 0);
	assert_int_equal(seen, 0);
	assert_int_equal(scsitgt_session_kick((struct scsitgt_session *)core), -EALREADY);
	world_down(&wd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_worker_ua_while_home_finishes_session),
		cmocka_unit_test(test_kick_of_ending_session),
	};

	return cmocka_run_group_tests(tests, cw_env_setup, cw_env_teardown);
}
