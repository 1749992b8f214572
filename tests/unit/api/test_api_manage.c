/* SPDX-License-Identifier: MIT */
/*
 * Contract tests of the management API a host uses from outside the command path:
 * enumeration and lookup of targets and LUNs, and scsitgt_engine_post() from other threads
 * (order per thread, the home loop's thread, nothing lost across engine destruction).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "libscsitgt/scsitgt.h"

struct env {
	uv_loop_t loop;
	struct scsitgt_engine *engine;
};

static void env_init(struct env *e)
{
	assert_int_equal(uv_loop_init(&e->loop), 0);
	assert_int_equal(scsitgt_engine_create(&e->engine, &e->loop, NULL), 0);
}

static void destroyed(void *arg, int status)
{
	int *calls = arg;

	assert_int_equal(status, 0);
	(*calls)++;
}

static void env_fini(struct env *e)
{
	int calls = 0;

	scsitgt_engine_destroy(e->engine, destroyed, &calls);
	assert_int_equal(uv_run(&e->loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(calls, 1);
	assert_int_equal(uv_loop_close(&e->loop), 0);
}

static struct scsitgt_target *target_create(struct env *e, const char *name)
{
	struct scsitgt_target_opts to;
	struct scsitgt_target *tgt;

	scsitgt_target_opts_init(&to, sizeof(to));
	to.name = name;
	assert_int_equal(scsitgt_target_create(&tgt, e->engine, &to), 0);
	return tgt;
}

static struct scsitgt_lun *lun_create(struct scsitgt_target *tgt, uint64_t id)
{
	struct scsitgt_lun_opts lo;
	struct scsitgt_lun *lun;
	void *bctx;

	assert_int_equal(scsitgt_backend_null_create(&bctx), 0);
	scsitgt_lun_opts_init(&lo, sizeof(lo));
	lo.id = id;
	lo.backend = scsitgt_backend_null_ops();
	lo.backend_ctx = bctx;
	lo.num_blocks = 2048;
	assert_int_equal(scsitgt_lun_create(&lun, tgt, &lo), 0);
	return lun;
}

/* ---- enumeration ---- */

struct visits {
	const void *seen[16];
	int n;
	int stop_at;	  /* return 7 at this visit (1-based), 0: never */
	int destroy_self; /* destroy the visited object at this visit, 0: never */
};

static int visit_target(void *arg, struct scsitgt_target *tgt)
{
	struct visits *v = arg;

	v->seen[v->n++] = tgt;
	if (v->destroy_self == v->n)
		scsitgt_target_destroy(tgt, NULL, NULL);
	return v->stop_at == v->n ? 7 : 0;
}

static void test_foreach_target(void **state)
{
	struct env e;
	struct scsitgt_target *a, *b, *c;
	struct visits v = { 0 };

	env_init(&e);
	assert_int_equal(scsitgt_engine_foreach_target(e.engine, visit_target, &v), 0);
	assert_int_equal(v.n, 0);
	a = target_create(&e, "iqn.2026-12.org.example:a");
	b = target_create(&e, "iqn.2026-12.org.example:b");
	c = target_create(&e, "iqn.2026-12.org.example:c");

	/* creation order */
	assert_int_equal(scsitgt_engine_foreach_target(e.engine, visit_target, &v), 0);
	assert_int_equal(v.n, 3);
	assert_ptr_equal(v.seen[0], a);
	assert_ptr_equal(v.seen[1], b);
	assert_ptr_equal(v.seen[2], c);

	/* the visitor's non-zero value stops the walk and is returned */
	memset(&v, 0, sizeof(v));
	v.stop_at = 2;
	assert_int_equal(scsitgt_engine_foreach_target(e.engine, visit_target, &v), 7);
	assert_int_equal(v.n, 2);

	/* the visitor may destroy what it is given; the walk goes on, later walks skip it */
	memset(&v, 0, sizeof(v));
	v.destroy_self = 2;
	assert_int_equal(scsitgt_engine_foreach_target(e.engine, visit_target, &v), 0);
	assert_int_equal(v.n, 3);
	memset(&v, 0, sizeof(v));
	assert_int_equal(scsitgt_engine_foreach_target(e.engine, visit_target, &v), 0);
	assert_int_equal(v.n, 2);
	assert_ptr_equal(v.seen[0], a);
	assert_ptr_equal(v.seen[1], c);

	/* lookup by name: iSCSI names compare case-insensitively; destroyed ones are gone */
	assert_ptr_equal(scsitgt_engine_find_target(e.engine, "iqn.2026-12.org.example:a"), a);
	assert_ptr_equal(scsitgt_engine_find_target(e.engine, "IQN.2026-12.ORG.EXAMPLE:C"), c);
	assert_null(scsitgt_engine_find_target(e.engine, "iqn.2026-12.org.example:b"));
	assert_null(scsitgt_engine_find_target(e.engine, "iqn.2026-12.org.example:none"));
	assert_null(scsitgt_engine_find_target(e.engine, NULL));
	assert_null(scsitgt_engine_find_target(NULL, "iqn.2026-12.org.example:a"));
	assert_int_equal(scsitgt_engine_foreach_target(NULL, visit_target, &v), -EINVAL);
	assert_int_equal(scsitgt_engine_foreach_target(e.engine, NULL, &v), -EINVAL);
	env_fini(&e);
}

struct lun_visits {
	uint64_t ids[16];
	int n;
	int stop_at;
	uint64_t destroy_id; /* destroy this LUN when visiting any LUN, UINT64_MAX: never */
	struct scsitgt_target *tgt;
	uint64_t create_id; /* create this LUN during the first visit, 0: never */
};

static int visit_lun(void *arg, struct scsitgt_lun *lun)
{
	struct lun_visits *v = arg;

	v->ids[v->n++] = scsitgt_lun_get_id(lun);
	if (v->destroy_id != UINT64_MAX) {
		struct scsitgt_lun *victim = scsitgt_target_get_lun(v->tgt, v->destroy_id);

		if (victim)
			scsitgt_lun_destroy(victim, NULL, NULL);
	}
	if (v->create_id != 0 && v->n == 1)
		lun_create(v->tgt, v->create_id);
	return v->stop_at == v->n ? 9 : 0;
}

static void test_foreach_lun(void **state)
{
	struct env e;
	struct scsitgt_target *tgt;
	struct lun_visits v = { .destroy_id = UINT64_MAX };

	env_init(&e);
	tgt = target_create(&e, "iqn.2026-12.org.example:luns");
	v.tgt = tgt;
	assert_int_equal(scsitgt_target_foreach_lun(tgt, visit_lun, &v), 0);
	assert_int_equal(v.n, 0);
	lun_create(tgt, 5);
	lun_create(tgt, 1);
	lun_create(tgt, 3);

	/* ascending LUN number whatever the creation order */
	assert_int_equal(scsitgt_target_foreach_lun(tgt, visit_lun, &v), 0);
	assert_int_equal(v.n, 3);
	assert_int_equal(v.ids[0], 1);
	assert_int_equal(v.ids[1], 3);
	assert_int_equal(v.ids[2], 5);

	memset(&v, 0, sizeof(v));
	v.tgt = tgt;
	v.destroy_id = UINT64_MAX;
	v.stop_at = 1;
	assert_int_equal(scsitgt_target_foreach_lun(tgt, visit_lun, &v), 9);
	assert_int_equal(v.n, 1);

	/* a LUN created during the walk above the current number is visited */
	memset(&v, 0, sizeof(v));
	v.tgt = tgt;
	v.destroy_id = UINT64_MAX;
	v.create_id = 4;
	assert_int_equal(scsitgt_target_foreach_lun(tgt, visit_lun, &v), 0);
	assert_int_equal(v.n, 4);
	assert_int_equal(v.ids[2], 4);

	/* destroying the next LUN from the visitor: it is skipped, the walk goes on */
	memset(&v, 0, sizeof(v));
	v.tgt = tgt;
	v.destroy_id = 3;
	assert_int_equal(scsitgt_target_foreach_lun(tgt, visit_lun, &v), 0);
	assert_int_equal(v.n, 3);
	assert_int_equal(v.ids[0], 1);
	assert_int_equal(v.ids[1], 4);
	assert_int_equal(v.ids[2], 5);

	assert_int_equal(scsitgt_target_foreach_lun(NULL, visit_lun, &v), -EINVAL);
	assert_int_equal(scsitgt_target_foreach_lun(tgt, NULL, &v), -EINVAL);
	env_fini(&e);
}

/* ---- scsitgt_engine_post() ---- */

#define POST_THREADS 4
#define POSTS_PER_THREAD 2000

struct post_test {
	struct scsitgt_engine *engine;
	uv_thread_t home;
	unsigned int next[POST_THREADS]; /* next sequence number expected per thread */
	unsigned int total;
	unsigned int wrong_thread;
	unsigned int out_of_order;
	int post_errors;
};

struct post_item {
	struct post_test *t;
	unsigned int thread;
	unsigned int seq;
};

static void post_fn(void *arg)
{
	struct post_item *it = arg;
	struct post_test *t = it->t;
	uv_thread_t self = uv_thread_self();

	if (!uv_thread_equal(&self, &t->home))
		t->wrong_thread++;
	if (it->seq != t->next[it->thread])
		t->out_of_order++;
	t->next[it->thread] = it->seq + 1;
	t->total++;
	free(it);
	if (t->total == POST_THREADS * POSTS_PER_THREAD)
		scsitgt_engine_destroy(t->engine, NULL, NULL);
}

struct poster {
	struct post_test *t;
	unsigned int thread;
};

static void poster_main(void *arg)
{
	struct poster *p = arg;

	for (unsigned int i = 0; i < POSTS_PER_THREAD; i++) {
		struct post_item *it = malloc(sizeof(*it));

		if (it == NULL) {
			p->t->post_errors++;
			return;
		}
		it->t = p->t;
		it->thread = p->thread;
		it->seq = i;
		if (scsitgt_engine_post(p->t->engine, post_fn, it) != 0) {
			free(it);
			p->t->post_errors++;
		}
	}
}

/* Four threads post at once while the loop runs: every function runs once, on the home
 * loop's thread, in each thread's order; the last one destroys the engine. */
static void test_post_threads(void **state)
{
	struct env e;
	struct post_test t = { 0 };
	struct poster p[POST_THREADS];
	uv_thread_t th[POST_THREADS];

	env_init(&e);
	t.engine = e.engine;
	t.home = uv_thread_self();
	for (unsigned int i = 0; i < POST_THREADS; i++) {
		p[i].t = &t;
		p[i].thread = i;
		assert_int_equal(uv_thread_create(&th[i], poster_main, &p[i]), 0);
	}
	/* The loop runs until the last posted function destroyed the engine. */
	assert_int_equal(uv_run(&e.loop, UV_RUN_DEFAULT), 0);
	for (unsigned int i = 0; i < POST_THREADS; i++)
		assert_int_equal(uv_thread_join(&th[i]), 0);
	assert_int_equal(t.post_errors, 0);
	assert_int_equal(t.total, POST_THREADS * POSTS_PER_THREAD);
	assert_int_equal(t.wrong_thread, 0);
	assert_int_equal(t.out_of_order, 0);
	assert_int_equal(uv_loop_close(&e.loop), 0);
}

struct order_log {
	char events[8];
	int n;
};

static void post_log(void *arg)
{
	struct order_log *l = arg;

	l->events[l->n++] = 'p';
}

static void destroy_log(void *arg, int status)
{
	struct order_log *l = arg;

	l->events[l->n++] = 'd';
}

/* Functions posted before (and while) the engine is destroyed still run, before the destroy
 * callback; none runs inside scsitgt_engine_post() itself. */
static void test_post_before_destroy(void **state)
{
	struct env e;
	struct order_log l = { 0 };

	env_init(&e);
	target_create(&e, "iqn.2026-12.org.example:post");
	assert_int_equal(scsitgt_engine_post(e.engine, post_log, &l), 0);
	assert_int_equal(l.n, 0);
	scsitgt_engine_destroy(e.engine, destroy_log, &l);
	assert_int_equal(scsitgt_engine_post(e.engine, post_log, &l), 0);
	assert_int_equal(l.n, 0);
	assert_int_equal(uv_run(&e.loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(l.n, 3);
	assert_memory_equal(l.events, "ppd", 3);
	assert_int_equal(uv_loop_close(&e.loop), 0);

	assert_int_equal(scsitgt_engine_post(NULL, post_log, &l), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_foreach_target),
		cmocka_unit_test(test_foreach_lun),
		cmocka_unit_test(test_post_threads),
		cmocka_unit_test(test_post_before_destroy),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
