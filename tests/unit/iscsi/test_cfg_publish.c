/* SPDX-License-Identifier: MIT */
/*
 * A target's iSCSI configuration (its parameters, CHAP credentials, redirect hook: the
 * struct scsitgt__iscsi_target of tgt->ext) is read by logins on worker loops under
 * engine->cfg_lock for read (login.c), and changed on home under it for write (core.h). The
 * first of those setters on a target also creates that struct: it must publish the pointer
 * under the write lock too, or a login on a worker that found the target reads tgt->ext while
 * home writes it, with nothing ordering the two (the configuration lock is taken by home only
 * after the store).
 *
 * A thread stands in for a worker's login (login.c login_setup(): the target looked up, then
 * its configuration, under the read lock); home sees it done through a relaxed flag (no
 * synchronisation of its own) and sets the target's first iSCSI parameters. Without the lock
 * around the publication ThreadSanitizer reports the race (the test is part of the TSan
 * suite's unit tests); with it, home's store waits for the reader's unlock.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../support/conn_workers_env.h"
#include "core/core.h"
#include "transport/iscsi/conn.h"

#define T_IQN "iqn.2024-01.org.example:cfg-publish"

struct reader {
	struct scsitgt_engine *engine;
	/* relaxed: the flag itself orders nothing */
	atomic_bool looked;
	bool found;
	bool had_config;
};

/* A worker's login: the target by name, then its iSCSI configuration, under the read lock. */
static void reader_main(void *arg)
{
	struct reader *r = arg;
	bool locked = scsitgt__cfg_rdlock(r->engine);
	struct scsitgt_target *tgt = scsitgt__engine_find_target(r->engine, T_IQN);

	r->found = tgt != NULL;
	r->had_config = tgt && scsitgt__iscsi_target_get(tgt, false) != NULL;
	atomic_store_explicit(&r->looked, true, memory_order_relaxed);
	scsitgt__cfg_rdunlock(r->engine, locked);
}

static void destroyed(void *arg, int status)
{
	(void)status;
	*(bool *)arg = true;
}

static void test_first_params_published_locked(void **state)
{
	struct scsitgt_engine_opts eo;
	struct scsitgt_target_opts to;
	struct scsitgt_iscsi_params p;
	struct scsitgt_target *tgt;
	struct reader r;
	uv_thread_t th;
	uv_loop_t loop;
	bool done = false;

	(void)state;
	assert_int_equal(uv_loop_init(&loop), 0);
	scsitgt_engine_opts_init(&eo, sizeof(eo));
	eo.workers = 1;
	/* Connections on the worker (the default with workers; explicit here). */
	eo.conn_workers = true;
	memset(&r, 0, sizeof(r));
	assert_int_equal(scsitgt_engine_create(&r.engine, &loop, &eo), 0);
	assert_true(r.engine->conn_workers);
	scsitgt_target_opts_init(&to, sizeof(to));
	to.name = T_IQN;
	assert_int_equal(scsitgt_target_create(&tgt, r.engine, &to), 0);
	/* No iSCSI configuration of its own yet: a login uses the engine's defaults. */
	assert_null(scsitgt__iscsi_target_get(tgt, false));

	atomic_init(&r.looked, false);
	assert_int_equal(uv_thread_create(&th, reader_main, &r), 0);
	/* A condition, not a time: the reader sets it once it has looked. */
	while (!atomic_load_explicit(&r.looked, memory_order_relaxed))
		uv_sleep(0);
	scsitgt_iscsi_params_init(&p, sizeof(p));
	p.queue_depth = 64;
	assert_int_equal(scsitgt_iscsi_target_set_params(tgt, &p), 0);
	assert_int_equal(uv_thread_join(&th), 0);
	assert_true(r.found);
	assert_false(r.had_config);
	assert_non_null(scsitgt__iscsi_target_get(tgt, false));
	assert_int_equal(scsitgt__iscsi_target_get(tgt, false)->params.queue_depth, 64);

	scsitgt_engine_destroy(r.engine, destroyed, &done);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_true(done);
	assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_first_params_published_locked),
	};

	return cmocka_run_group_tests(tests, cw_env_setup, cw_env_teardown);
}
