/* SPDX-License-Identifier: MIT */
/*
 * `Loop: home` entry points check their calling thread in debug builds (core.h
 * SCSITGT__ASSERT_HOME): a call from another thread aborts, in a forked child here; the same
 * call on the home thread proceeds. Release builds (NDEBUG) compile the check out: skipped.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/core.h"
#include "libscsitgt/scsitgt.h"

struct call {
	struct scsitgt_engine *engine;
	struct scsitgt_target *tgt;
	int which;
	int rc;
};

static void call_main(void *arg)
{
	struct call *c = arg;
	struct scsitgt_target_opts to;
	struct scsitgt_target *t;

	switch (c->which) {
	case 0:
		scsitgt_target_opts_init(&to, sizeof(to));
		to.name = "iqn.2026-12.org.example:other";
		c->rc = scsitgt_target_create(&t, c->engine, &to);
		break;
	case 1:
		c->rc = scsitgt_target_add_initiator(c->tgt, "iqn.2026-12.org.example:ini");
		break;
	default:
		/* A Thread-safe function is fine from anywhere. */
		c->rc = scsitgt_engine_get_loop(c->engine) ? 0 : -1;
		break;
	}
}

/* Fork; in the child, make an engine and a target on this thread, then call entry point
 * @which from a second thread. Returns the child's wait status. */
static int run_child(int which)
{
	pid_t pid;
	int status;

	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct scsitgt_target_opts to;
		struct call c = { .which = which, .rc = -1 };
		uv_loop_t loop;
		uv_thread_t th;

		/* The abort is expected: no core dump for it. */
		struct rlimit no_core = { 0, 0 };

		(void)setrlimit(RLIMIT_CORE, &no_core);
		if (uv_loop_init(&loop) != 0 || scsitgt_engine_create(&c.engine, &loop, NULL) != 0)
			_exit(10);
		scsitgt_target_opts_init(&to, sizeof(to));
		to.name = "iqn.2026-12.org.example:home";
		if (scsitgt_target_create(&c.tgt, c.engine, &to) != 0)
			_exit(11);
		if (uv_thread_create(&th, call_main, &c) != 0)
			_exit(12);
		uv_thread_join(&th);
		_exit(c.rc == 0 ? 0 : 13);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return status;
}

static void test_off_thread_aborts(void **state)
{
	int status;

	(void)state;
#ifdef NDEBUG
	skip();
#endif
	status = run_child(0);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGABRT);
	status = run_child(1);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGABRT);
	/* The control: a Thread-safe call from the same second thread returns normally. */
	status = run_child(2);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* On the home thread the same calls just work. */
static void test_home_thread_ok(void **state)
{
	struct scsitgt_target_opts to;
	struct scsitgt_engine *engine;
	struct scsitgt_target *tgt;
	uv_loop_t loop;

	(void)state;
	assert_int_equal(uv_loop_init(&loop), 0);
	assert_int_equal(scsitgt_engine_create(&engine, &loop, NULL), 0);
	scsitgt_target_opts_init(&to, sizeof(to));
	to.name = "iqn.2026-12.org.example:home";
	assert_int_equal(scsitgt_target_create(&tgt, engine, &to), 0);
	assert_int_equal(scsitgt_target_add_initiator(tgt, "iqn.2026-12.org.example:ini"), 0);
	scsitgt_engine_destroy(engine, NULL, NULL);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_off_thread_aborts),
		cmocka_unit_test(test_home_thread_ok),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
