/* SPDX-License-Identifier: MIT */
/*
 * A worker session ending while the engine is being destroyed (review29b N6): home sends a
 * finished worker session back to its worker to be freed (SESS_FREE, xloop.c), and stops the
 * workers last (core/engine.c). If the free could be posted to a worker whose inbox is no
 * longer drained, the session would leak; the order that prevents it: home posts the free
 * before the core's detach of the nexus on the same inbox, and the engine stops its workers
 * only after every target's nexuses are detached.
 *
 * Made deterministic, no sleep: a normal session on the worker that has seen LUN 0, then
 *  1. its connection gone (the session's finish waiting in home's inbox) before the host calls
 *     scsitgt_engine_destroy(), home's loop not run in between;
 *  2. its connection closing, its data mover's close held, when the host calls
 *     scsitgt_engine_destroy(); the close ends after the destroy started (a logout or a drop
 *     during the engine's stop).
 * Either way the destroy ends, and nothing leaks (LeakSanitizer, in the ASan build, fails the
 * test on a session left behind); ThreadSanitizer checks the free's ordering.
 */
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
#include "core/worker.h"
#include "libscsitgt/scsitgt.h"
#include "transport/iscsi/conn.h"

#include "listener_portal.h"

#define T_TARGET "iqn.2026-12.org.libscsitgt:sess-stop"
#define T_INITIATOR "iqn.2026-12.org.libscsitgt:sess-stop-initiator"

#include "worker_sess.h"

/* On the worker: close the session's connection; then, once its session has none (the
 * finish posted home) or at once when the data mover's close is held, tell home by the flag
 * (release: home reads what this loop did before, without running its own loop). */
static void close_fn(struct scsitgt__msg *msg)
{
	struct step *s = scsitgt__container_of(msg, struct step, msg);

	if (s->wd->conn) {
		scsitgt__iscsi_conn_close(s->wd->conn, "test: the initiator is gone");
		s->wd->conn = NULL;
	}
	if (!s->wd->hold_close && s->sess->nconns != 0) {
		/* The connection's handles still closing: after them. */
		scsitgt__worker_post(s->wd->w, &s->msg);
		return;
	}
	atomic_store_explicit(&s->raised, true, memory_order_release);
}

/* On the worker: the held data mover's close ends (the session's end follows). */
static void dm_closed_fn(struct scsitgt__msg *msg)
{
	struct step *s = scsitgt__container_of(msg, struct step, msg);

	scsitgt__iscsi_conn_dm_closed(s->wd->held);
	s->wd->held = NULL;
	atomic_store_explicit(&s->raised, true, memory_order_release);
}

/* A normal session of T_TARGET on the one worker, that has seen LUN 0; then its end raced with
 * the engine's destroy (@held: the data mover's close ends only after the destroy started). */
static void run_race(bool held)
{
	struct world wd;
	struct step gone, dmc;
	int done = 0;

	memset(&gone, 0, sizeof(gone));
	memset(&dmc, 0, sizeof(dmc));
	world_up(&wd, &gone.sess);

	/* The connection goes on the worker; home does not run its loop meanwhile (it polls the
	 * flag alone), so the session's end is still ahead of it when the destroy starts. */
	wd.hold_close = held;
	step_post(&gone, &wd, close_fn);
	for (unsigned long guard = 0; !atomic_load_explicit(&gone.raised, memory_order_acquire);
	     guard++) {
		assert_true(guard < 1000000000ul);
		sched_yield();
	}
	assert_true(atomic_load(&wd.closed));
	assert_false(scsitgt__list_empty(&wd.tgt->sessions));
	scsitgt_engine_destroy(wd.engine, lp_destroyed, &done);
	if (held) {
		/* The destroy waits for the connection: its close ends now, on the worker. */
		assert_int_equal(done, 0);
		step_post(&dmc, &wd, dm_closed_fn);
	}
	uv_run(&wd.loop, UV_RUN_DEFAULT);
	assert_int_equal(done, 1);
	if (held)
		assert_true(atomic_load_explicit(&dmc.raised, memory_order_acquire));
	assert_int_equal(uv_loop_close(&wd.loop), 0);
}

/* 1: the session's finish is already waiting at home when the destroy starts. */
static void test_session_finished_before_engine_destroy(void **state)
{
	(void)state;
	run_race(false);
}

/* 2: the session's connection finishes closing after the destroy started. */
static void test_session_ends_during_engine_destroy(void **state)
{
	(void)state;
	run_race(true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_session_finished_before_engine_destroy),
		cmocka_unit_test(test_session_ends_during_engine_destroy),
	};

	return cmocka_run_group_tests(tests, cw_env_setup, cw_env_teardown);
}
