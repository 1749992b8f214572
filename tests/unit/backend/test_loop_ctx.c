/* SPDX-License-Identifier: MIT */
/*
 * A backend's per-loop contexts (src/backend/loop_ctx.c) without a backend: three loops, home
 * on the test's thread and two workers on their own (the test thread is home's, as in
 * tests/support/xshard_world.h; every wait is on a condition, never on time). Checked: home's
 * context is made at init and watched from start on, another loop's at its first get, on its
 * own thread, once; each context's eventfd wakes its own loop; the close tears each context
 * down on its own loop (a context may hold its teardown back while it has work in flight),
 * whichever goes last the closed callback runs once, on home, after every fini; a loop that
 * never submitted takes no part; a set never started or never initialised closes from inside;
 * a failed setup leaves nothing. After each close no handle is left on any loop (uv_loop_close
 * succeeds). Part of the TSan suite.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>

#include <cmocka.h>
#include <uv.h>

#include "backend/loop_ctx.h"

#define NLOOPS 3

struct world;

/* A backend's per-loop struct. */
struct tctx {
	struct scsitgt__loop_ctx lc;
	unsigned int idx;
	atomic_uint wakes;
};

/* A worker loop and the commands home gives it. */
struct wloop {
	struct world *w;
	uv_async_t cmd;
	void (*fn)(struct world *w, unsigned int i);
	uv_sem_t done;
};

struct world {
	uv_loop_t loops[NLOOPS];
	uv_thread_t ids[NLOOPS];
	struct wloop wl[NLOOPS]; /* 1 and 2 */
	uv_async_t home_wake;
	struct scsitgt__loop_ctxs set;
	const char *what; /* t_describe's answer */
	struct scsitgt__logger log;

	/* What the ops saw, per loop. */
	struct tctx *ctx[NLOOPS];
	atomic_uint setups[NLOOPS];
	atomic_uint closes[NLOOPS];
	atomic_uint finis[NLOOPS];
	/* The order of fini()s and of the closed callback (1, 2, ...). */
	atomic_uint seq;
	atomic_uint fini_seq[NLOOPS];
	atomic_uint closed_seq;
	atomic_uint closed_calls;
	/* Calls on another thread than their context's loop's, or a closed callback off home. */
	atomic_uint bad;
	/* Set by a test: setup() of loop i fails; close() of loop i holds the teardown back. */
	atomic_bool fail_setup[NLOOPS];
	atomic_bool hold[NLOOPS];
	/* The result of a get() a worker ran. */
	int got[NLOOPS];
	/* Log lines (any loop's thread): the info line of a context made for another loop, and
	 * any other. */
	atomic_uint logged_made;
	atomic_uint logged_other;
};

static unsigned int loop_idx(struct world *w, uv_loop_t *loop)
{
	for (unsigned int i = 0; i < NLOOPS; i++) {
		if (loop == &w->loops[i])
			return i;
	}
	fail();
	return 0;
}

/* The calling thread is loop @i's. */
static void check_thread(struct world *w, unsigned int i)
{
	uv_thread_t self = uv_thread_self();

	if (!uv_thread_equal(&self, &w->ids[i]))
		atomic_fetch_add(&w->bad, 1);
}

static void wake_home(struct world *w)
{
	uv_async_send(&w->home_wake);
}

/* ---- the ops ---- */

static int t_setup(void *arg, struct scsitgt__loop_ctx *lc)
{
	struct world *w = arg;
	struct tctx *t = (struct tctx *)lc;
	unsigned int i = loop_idx(w, lc->loop);

	check_thread(w, i);
	if (lc->efd < 0 || lc->set != &w->set)
		atomic_fetch_add(&w->bad, 1);
	if (atomic_load(&w->fail_setup[i]))
		return -ENOSPC;
	t->idx = i;
	atomic_init(&t->wakes, 0);
	atomic_fetch_add(&w->setups[i], 1);
	return 0;
}

static void t_wake(void *arg, struct scsitgt__loop_ctx *lc, int status)
{
	struct world *w = arg;
	struct tctx *t = (struct tctx *)lc;

	check_thread(w, t->idx);
	if (status < 0)
		atomic_fetch_add(&w->bad, 1);
	atomic_fetch_add(&t->wakes, 1);
	wake_home(w);
}

static void t_close(void *arg, struct scsitgt__loop_ctx *lc)
{
	struct world *w = arg;
	struct tctx *t = (struct tctx *)lc;

	check_thread(w, t->idx);
	if (!lc->closing)
		atomic_fetch_add(&w->bad, 1);
	atomic_fetch_add(&w->closes[t->idx], 1);
	if (!atomic_load(&w->hold[t->idx]))
		scsitgt__loop_ctx_teardown(lc);
	wake_home(w);
}

static void t_fini(void *arg, struct scsitgt__loop_ctx *lc)
{
	struct world *w = arg;
	struct tctx *t = (struct tctx *)lc;
	unsigned int i = loop_idx(w, lc->loop);

	check_thread(w, i);
	atomic_fetch_add(&w->finis[i], 1);
	atomic_store(&w->fini_seq[i], atomic_fetch_add(&w->seq, 1) + 1);
	(void)t;
	scsitgt__loop_ctx_destroy(lc);
	wake_home(w);
}

static const char *t_describe(void *arg)
{
	struct world *w = arg;

	return w->what;
}

static const struct scsitgt__loop_ctx_ops t_ops = {
	.size = sizeof(struct tctx),
	.subsys = "test",
	.per_loop = "context", /* the line must come from describe */
	.describe = t_describe,
	.setup = t_setup,
	.wake = t_wake,
	.close = t_close,
	.fini = t_fini,
};

/* The host's logger, called from whichever loop logs. */
static void t_log(void *arg, enum scsitgt_log_level level, const char *subsystem, const char *fmt,
		  va_list ap)
{
	struct world *w = arg;
	char line[256];

	vsnprintf(line, sizeof(line), fmt, ap);
	if (level == SCSITGT_LOG_INFO && strcmp(subsystem, "test") == 0 &&
	    strcmp(line, "t: another loop submits: its own test context") == 0)
		atomic_fetch_add(&w->logged_made, 1);
	else
		atomic_fetch_add(&w->logged_other, 1);
}

static void closed(void *arg)
{
	struct world *w = arg;

	check_thread(w, 0);
	atomic_fetch_add(&w->closed_calls, 1);
	atomic_store(&w->closed_seq, atomic_fetch_add(&w->seq, 1) + 1);
}

/* ---- the world ---- */

static void wl_cmd_cb(uv_async_t *h)
{
	struct wloop *wl = h->data;
	unsigned int i = (unsigned int)(wl - wl->w->wl);

	wl->fn(wl->w, i);
	uv_sem_post(&wl->done);
}

static void wl_main(void *arg)
{
	struct wloop *wl = arg;
	unsigned int i = (unsigned int)(wl - wl->w->wl);

	uv_run(&wl->w->loops[i], UV_RUN_DEFAULT);
}

static void wl_post(struct world *w, unsigned int i, void (*fn)(struct world *w, unsigned int i))
{
	w->wl[i].fn = fn;
	uv_async_send(&w->wl[i].cmd);
}

static void wl_wait(struct world *w, unsigned int i)
{
	uv_sem_wait(&w->wl[i].done);
}

/* Run @fn on worker @i's loop, to its end. */
static void wl_do(struct world *w, unsigned int i, void (*fn)(struct world *w, unsigned int i))
{
	wl_post(w, i, fn);
	wl_wait(w, i);
}

/* Run the home loop until *@v is at least @want (something on another thread wakes it). */
static void home_until(struct world *w, atomic_uint *v, unsigned int want)
{
	while (atomic_load(v) < want)
		uv_run(&w->loops[0], UV_RUN_ONCE);
}

static void count_handle(uv_handle_t *h, void *arg)
{
	if (!uv_is_closing(h))
		(*(unsigned int *)arg)++;
}

/* Handles on home's loop (the test's home_wake is one). */
static unsigned int home_handles(struct world *w)
{
	unsigned int n = 0;

	uv_walk(&w->loops[0], count_handle, &n);
	return n;
}

static void home_wake_cb(uv_async_t *h)
{
	(void)h;
}

static void do_get(struct world *w, unsigned int i)
{
	struct scsitgt__loop_ctx *lc = NULL;

	w->got[i] = scsitgt__loop_ctx_get(&w->set, &w->loops[i], &lc);
	if (w->got[i] >= 0)
		w->ctx[i] = (struct tctx *)lc;
}

static void do_nothing(struct world *w, unsigned int i)
{
	(void)w;
	(void)i;
}

static void do_teardown(struct world *w, unsigned int i)
{
	scsitgt__loop_ctx_teardown(&w->ctx[i]->lc);
}

static void do_stop(struct world *w, unsigned int i)
{
	uv_close((uv_handle_t *)&w->wl[i].cmd, NULL);
}

static int setup(void **state)
{
	struct world *w = calloc(1, sizeof(*w));

	assert_non_null(w);
	w->ids[0] = uv_thread_self();
	w->log.cb = t_log;
	w->log.arg = w;
	w->log.level = SCSITGT_LOG_DEBUG;
	w->what = "test context";
	for (unsigned int i = 0; i < NLOOPS; i++)
		assert_int_equal(uv_loop_init(&w->loops[i]), 0);
	assert_int_equal(uv_async_init(&w->loops[0], &w->home_wake, home_wake_cb), 0);
	for (unsigned int i = 1; i < NLOOPS; i++) {
		struct wloop *wl = &w->wl[i];

		wl->w = w;
		assert_int_equal(uv_sem_init(&wl->done, 0), 0);
		assert_int_equal(uv_async_init(&w->loops[i], &wl->cmd, wl_cmd_cb), 0);
		wl->cmd.data = wl;
		assert_int_equal(uv_thread_create(&w->ids[i], wl_main, wl), 0);
	}
	*state = w;
	return 0;
}

/* Every loop ends with nothing of the helper's left on it. */
static int teardown(void **state)
{
	struct world *w = *state;

	for (unsigned int i = 1; i < NLOOPS; i++) {
		wl_do(w, i, do_stop);
		assert_int_equal(uv_thread_join(&w->ids[i]), 0);
		assert_int_equal(uv_loop_close(&w->loops[i]), 0);
		uv_sem_destroy(&w->wl[i].done);
	}
	uv_close((uv_handle_t *)&w->home_wake, NULL);
	assert_int_equal(uv_run(&w->loops[0], UV_RUN_DEFAULT), 0);
	assert_int_equal(uv_loop_close(&w->loops[0]), 0);
	assert_int_equal(atomic_load(&w->bad), 0);
	free(w);
	return 0;
}

static void start(struct world *w)
{
	assert_int_equal(scsitgt__loop_ctxs_init(&w->set, &w->loops[0], &t_ops, w, &w->log, "t"),
			 0);
	assert_int_equal(scsitgt__loop_ctxs_start(&w->set), 0);
	w->ctx[0] = (struct tctx *)scsitgt__loop_ctxs_next(&w->set, NULL);
	assert_non_null(w->ctx[0]);
}

/* ---- the tests ---- */

/* Home's context at init, watched from start; a worker's at its first get, once, on its own
 * thread; each eventfd wakes its own loop; worker 2 never submits and takes no part. */
static void test_first_use_per_loop(void **state)
{
	struct world *w = *state;
	struct scsitgt__loop_ctx *lc = NULL;

	assert_int_equal(scsitgt__loop_ctxs_init(&w->set, &w->loops[0], &t_ops, w, &w->log, "t"),
			 0);
	assert_int_equal(atomic_load(&w->setups[0]), 1);
	assert_int_equal(scsitgt__loop_ctxs_count(&w->set), 1);
	assert_int_equal(home_handles(w), 1);
	/* Home's is there; before start no other loop gets one. */
	assert_int_equal(scsitgt__loop_ctx_get(&w->set, &w->loops[0], &lc), 0);
	w->ctx[0] = (struct tctx *)lc;
	assert_ptr_equal(lc, scsitgt__loop_ctxs_next(&w->set, NULL));
	wl_do(w, 1, do_get);
	assert_int_equal(w->got[1], -EIO);
	assert_int_equal(atomic_load(&w->setups[1]), 0);
	/* A second init changes nothing. */
	assert_int_equal(scsitgt__loop_ctxs_init(&w->set, &w->loops[0], &t_ops, w, &w->log, "t"),
			 0);
	assert_int_equal(atomic_load(&w->setups[0]), 1);

	assert_int_equal(scsitgt__loop_ctxs_start(&w->set), 0);
	assert_int_equal(scsitgt__loop_ctxs_start(&w->set), 0);
	/* Home's eventfd watched, the close message handle. */
	assert_int_equal(home_handles(w), 3);
	assert_int_equal(atomic_load(&w->logged_made), 0);
	wl_do(w, 1, do_get);
	assert_int_equal(w->got[1], 1);
	assert_non_null(w->ctx[1]);
	/* Made now: said once, at level info, with the set's name. */
	assert_int_equal(atomic_load(&w->logged_made), 1);
	lc = &w->ctx[1]->lc;
	wl_do(w, 1, do_get);
	assert_int_equal(w->got[1], 0);
	assert_int_equal(atomic_load(&w->logged_made), 1);
	assert_ptr_equal(&w->ctx[1]->lc, lc);
	assert_ptr_equal(lc->loop, &w->loops[1]);
	assert_int_equal(atomic_load(&w->setups[1]), 1);
	assert_int_equal(scsitgt__loop_ctxs_count(&w->set), 2);
	assert_ptr_equal(scsitgt__loop_ctxs_next(&w->set, &w->ctx[0]->lc), lc);
	assert_null(scsitgt__loop_ctxs_next(&w->set, lc));

	/* Each eventfd wakes its own loop (the ops check the thread). */
	assert_int_equal(eventfd_write(w->ctx[1]->lc.efd, 1), 0);
	home_until(w, &w->ctx[1]->wakes, 1);
	assert_int_equal(eventfd_write(w->ctx[0]->lc.efd, 1), 0);
	home_until(w, &w->ctx[0]->wakes, 1);
	assert_int_equal(atomic_load(&w->ctx[1]->wakes), 1);

	/* The close: worker 1's by message, home's here; worker 2 has nothing and hears
	 * nothing. */
	scsitgt__loop_ctxs_close(&w->set, closed, w);
	home_until(w, &w->closed_calls, 1);
	assert_int_equal(atomic_load(&w->closes[0]), 1);
	assert_int_equal(atomic_load(&w->closes[1]), 1);
	assert_int_equal(atomic_load(&w->finis[0]), 1);
	assert_int_equal(atomic_load(&w->finis[1]), 1);
	assert_true(atomic_load(&w->closed_seq) > atomic_load(&w->fini_seq[0]));
	assert_true(atomic_load(&w->closed_seq) > atomic_load(&w->fini_seq[1]));
	assert_int_equal(atomic_load(&w->setups[2]), 0);
	assert_int_equal(atomic_load(&w->closes[2]), 0);
	assert_int_equal(atomic_load(&w->finis[2]), 0);
	assert_int_equal(atomic_load(&w->logged_made), 1);
	assert_int_equal(atomic_load(&w->logged_other), 0);
}

/* Both workers make theirs at once (the list is pushed without a lock); three contexts, each
 * closed on its own loop, the callback once. */
static void test_two_workers_at_once(void **state)
{
	struct world *w = *state;

	start(w);
	wl_post(w, 1, do_get);
	wl_post(w, 2, do_get);
	wl_wait(w, 1);
	wl_wait(w, 2);
	assert_int_equal(w->got[1], 1);
	assert_int_equal(w->got[2], 1);
	assert_int_equal(scsitgt__loop_ctxs_count(&w->set), 3);
	/* One line per context made, each from its own loop's thread. */
	assert_int_equal(atomic_load(&w->logged_made), 2);
	scsitgt__loop_ctxs_close(&w->set, closed, w);
	home_until(w, &w->closed_calls, 1);
	for (unsigned int i = 0; i < NLOOPS; i++) {
		assert_int_equal(atomic_load(&w->closes[i]), 1);
		assert_int_equal(atomic_load(&w->finis[i]), 1);
		assert_true(atomic_load(&w->closed_seq) > atomic_load(&w->fini_seq[i]));
	}
	assert_int_equal(atomic_load(&w->closed_calls), 1);
}

/* A worker's context holds its teardown back (work in flight): home's goes first, the callback
 * waits for the worker's, then comes on home through the message. */
static void test_close_worker_last(void **state)
{
	struct world *w = *state;

	start(w);
	wl_do(w, 1, do_get);
	assert_int_equal(w->got[1], 1);
	atomic_store(&w->hold[1], true);
	scsitgt__loop_ctxs_close(&w->set, closed, w);
	home_until(w, &w->finis[0], 1);
	home_until(w, &w->closes[1], 1);
	/* Everything ready has run on both loops: still waiting for worker 1. */
	wl_do(w, 1, do_nothing);
	uv_run(&w->loops[0], UV_RUN_NOWAIT);
	assert_int_equal(atomic_load(&w->finis[1]), 0);
	assert_int_equal(atomic_load(&w->closed_calls), 0);
	/* Its work is over. */
	wl_do(w, 1, do_teardown);
	home_until(w, &w->closed_calls, 1);
	assert_true(atomic_load(&w->fini_seq[0]) < atomic_load(&w->fini_seq[1]));
	assert_true(atomic_load(&w->fini_seq[1]) < atomic_load(&w->closed_seq));
	assert_int_equal(atomic_load(&w->finis[1]), 1);
	assert_int_equal(atomic_load(&w->closed_calls), 1);
}

/* Home's context holds its teardown back: the worker's goes first, and home's teardown ends
 * the close. */
static void test_close_home_last(void **state)
{
	struct world *w = *state;

	start(w);
	wl_do(w, 1, do_get);
	assert_int_equal(w->got[1], 1);
	atomic_store(&w->hold[0], true);
	scsitgt__loop_ctxs_close(&w->set, closed, w);
	assert_int_equal(atomic_load(&w->closes[0]), 1);
	home_until(w, &w->finis[1], 1);
	uv_run(&w->loops[0], UV_RUN_NOWAIT);
	assert_int_equal(atomic_load(&w->finis[0]), 0);
	assert_int_equal(atomic_load(&w->closed_calls), 0);
	scsitgt__loop_ctx_teardown(&w->ctx[0]->lc);
	/* A second teardown is no second close. */
	scsitgt__loop_ctx_teardown(&w->ctx[0]->lc);
	home_until(w, &w->closed_calls, 1);
	assert_true(atomic_load(&w->fini_seq[1]) < atomic_load(&w->fini_seq[0]));
	assert_true(atomic_load(&w->fini_seq[0]) < atomic_load(&w->closed_seq));
	assert_int_equal(atomic_load(&w->finis[0]), 1);
	assert_int_equal(atomic_load(&w->closed_calls), 1);
}

/* Made but never started (a backend created, never opened): nothing on the loop, the close
 * ends inside the call. A set never initialised closes from inside too. */
static void test_never_started(void **state)
{
	struct world *w = *state;
	struct scsitgt__loop_ctxs zero;

	assert_int_equal(scsitgt__loop_ctxs_init(&w->set, &w->loops[0], &t_ops, w, &w->log, "t"),
			 0);
	assert_int_equal(home_handles(w), 1);
	scsitgt__loop_ctxs_close(&w->set, closed, w);
	assert_int_equal(atomic_load(&w->closed_calls), 1);
	assert_int_equal(atomic_load(&w->finis[0]), 1);

	memset(&zero, 0, sizeof(zero));
	assert_null(scsitgt__loop_ctxs_next(&zero, NULL));
	assert_int_equal(scsitgt__loop_ctxs_count(&zero), 0);
	scsitgt__loop_ctxs_close(&zero, closed, w);
	assert_int_equal(atomic_load(&w->closed_calls), 2);
}

/* A setup that fails leaves nothing (home's: init fails; a worker's: its get fails, the next
 * get makes it). */
static void test_setup_fails(void **state)
{
	struct world *w = *state;
	struct scsitgt__loop_ctx *lc = NULL;

	atomic_store(&w->fail_setup[0], true);
	assert_int_equal(scsitgt__loop_ctxs_init(&w->set, &w->loops[0], &t_ops, w, &w->log, "t"),
			 -ENOSPC);
	assert_int_equal(scsitgt__loop_ctx_get(&w->set, &w->loops[0], &lc), -EIO);
	assert_int_equal(scsitgt__loop_ctxs_start(&w->set), -EIO);
	atomic_store(&w->fail_setup[0], false);
	start(w);
	atomic_store(&w->fail_setup[1], true);
	wl_do(w, 1, do_get);
	assert_int_equal(w->got[1], -ENOSPC);
	assert_int_equal(scsitgt__loop_ctxs_count(&w->set), 1);
	atomic_store(&w->fail_setup[1], false);
	wl_do(w, 1, do_get);
	assert_int_equal(w->got[1], 1);
	assert_int_equal(scsitgt__loop_ctxs_count(&w->set), 2);
	scsitgt__loop_ctxs_close(&w->set, closed, w);
	home_until(w, &w->closed_calls, 1);
	assert_int_equal(atomic_load(&w->finis[1]), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_first_use_per_loop, setup, teardown),
		cmocka_unit_test_setup_teardown(test_two_workers_at_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_close_worker_last, setup, teardown),
		cmocka_unit_test_setup_teardown(test_close_home_last, setup, teardown),
		cmocka_unit_test_setup_teardown(test_never_started, setup, teardown),
		cmocka_unit_test_setup_teardown(test_setup_fails, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
