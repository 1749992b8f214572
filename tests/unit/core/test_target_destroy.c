/* SPDX-License-Identifier: MIT */
/*
 * The engine's destruction meets a target whose own destruction is under way: the host
 * destroyed it and it still waits (here for a hold, as a cross-shard task management request
 * takes one; in scsitgtd, for sessions or an RBD LUN closing against a slow cluster). The
 * engine waits for that target too and calls back once it is freed, after the host's
 * callback. Before, the engine counted it and never heard of it again: the engine's
 * callback never came, and scsitgtd hung on SIGTERM.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/core.h"
#include "libscsitgt/scsitgt.h"

struct order {
	int seq;
	int target_done;
	int engine_done;
};

static void target_done(void *arg, int status)
{
	struct order *o = arg;

	assert_int_equal(status, 0);
	assert_int_equal(o->target_done, 0);
	o->target_done = ++o->seq;
}

static void engine_done(void *arg, int status)
{
	struct order *o = arg;

	assert_int_equal(status, 0);
	assert_int_equal(o->engine_done, 0);
	o->engine_done = ++o->seq;
}

/* Turns of the loop until *flag is set or a bound of turns passed (a test that fails must
 * not hang: the engine's handles keep the loop alive). */
static void run_until(uv_loop_t *loop, const int *flag)
{
	for (int i = 0; i < 10000 && !*flag; i++)
		uv_run(loop, UV_RUN_NOWAIT);
}

static struct scsitgt_target *target_new(struct scsitgt_engine *engine, const char *name)
{
	struct scsitgt_target_opts to;
	struct scsitgt_target *tgt;

	scsitgt_target_opts_init(&to, sizeof(to));
	to.name = name;
	assert_int_equal(scsitgt_target_create(&tgt, engine, &to), 0);
	return tgt;
}

static void test_engine_waits_for_a_target_on_its_way_out(void **state)
{
	struct scsitgt_engine *engine;
	struct scsitgt_target *tgt;
	struct order o = { 0 };
	uv_loop_t loop;

	(void)state;
	assert_int_equal(uv_loop_init(&loop), 0);
	assert_int_equal(scsitgt_engine_create(&engine, &loop, NULL), 0);
	tgt = target_new(engine, "iqn.2026-12.org.example:held");
	/* A second target, not destroyed by the host: the engine destroys it itself. */
	(void)target_new(engine, "iqn.2026-12.org.example:plain");

	scsitgt__target_hold(tgt);
	scsitgt_target_destroy(tgt, target_done, &o);
	run_until(&loop, &o.target_done);
	assert_int_equal(o.target_done, 0); /* held: still on its way out */

	scsitgt_engine_destroy(engine, engine_done, &o);
	run_until(&loop, &o.engine_done);
	assert_int_equal(o.engine_done, 0); /* the engine waits for the held target */

	scsitgt__target_unhold(tgt);
	run_until(&loop, &o.engine_done);
	assert_int_equal(o.target_done, 1);
	assert_int_equal(o.engine_done, 2);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&loop), 0);
}

static void test_engine_destroys_its_targets(void **state)
{
	struct scsitgt_engine *engine;
	struct order o = { 0 };
	uv_loop_t loop;

	(void)state;
	assert_int_equal(uv_loop_init(&loop), 0);
	assert_int_equal(scsitgt_engine_create(&engine, &loop, NULL), 0);
	(void)target_new(engine, "iqn.2026-12.org.example:one");
	(void)target_new(engine, "iqn.2026-12.org.example:two");
	scsitgt_engine_destroy(engine, engine_done, &o);
	run_until(&loop, &o.engine_done);
	assert_int_equal(o.engine_done, 1);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&loop), 0);
}

struct replace {
	struct scsitgt_engine *engine;
	const char *name;
	struct scsitgt_target *again;
	int done;
};

/* The destroy callback: the name is free now, and a target of that name can be created. */
static void replace_gone(void *arg, int status)
{
	struct replace *r = arg;
	struct scsitgt_target_opts to;

	assert_int_equal(status, 0);
	scsitgt_target_opts_init(&to, sizeof(to));
	to.name = r->name;
	assert_int_equal(scsitgt_target_create(&r->again, r->engine, &to), 0);
	r->done = 1;
}

/* A target on its way out keeps its name until its destroy calls back (target.h): its LUNs
 * may still hold their storage, and a new target of that name must not open it meanwhile. */
static void test_name_stays_taken_until_the_destroy_calls_back(void **state)
{
	const char *name = "iqn.2026-12.org.example:again";
	struct scsitgt_target_opts to;
	struct scsitgt_target *tgt, *other;
	struct replace r = { 0 };
	struct order o = { 0 };
	uv_loop_t loop;

	(void)state;
	assert_int_equal(uv_loop_init(&loop), 0);
	assert_int_equal(scsitgt_engine_create(&r.engine, &loop, NULL), 0);
	r.name = name;
	tgt = target_new(r.engine, name);

	scsitgt__target_hold(tgt);
	scsitgt_target_destroy(tgt, replace_gone, &r);
	run_until(&loop, &r.done);
	assert_int_equal(r.done, 0);
	scsitgt_target_opts_init(&to, sizeof(to));
	to.name = "IQN.2026-12.ORG.EXAMPLE:AGAIN"; /* names compare case-insensitively */
	assert_int_equal(scsitgt_target_create(&other, r.engine, &to), -EEXIST);
	/* ... and the host's lookup does not hand it out meanwhile */
	assert_null(scsitgt_engine_find_target(r.engine, name));

	scsitgt__target_unhold(tgt);
	run_until(&loop, &r.done);
	assert_int_equal(r.done, 1);
	assert_ptr_equal(scsitgt_engine_find_target(r.engine, name), r.again);

	scsitgt_engine_destroy(r.engine, engine_done, &o);
	run_until(&loop, &o.engine_done);
	assert_int_equal(o.engine_done, 1);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_engine_waits_for_a_target_on_its_way_out),
		cmocka_unit_test(test_engine_destroys_its_targets),
		cmocka_unit_test(test_name_stays_taken_until_the_destroy_calls_back),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
