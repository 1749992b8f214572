/* SPDX-License-Identifier: MIT */
/*
 * The RBD backend's API without a cluster (src/backend/rbd.c, or rbd_none.c without librbd):
 * defaults, argument checks, and scsitgt_backend_rbd_create_async()'s callback contract when
 * the open fails (called once, on the loop, never inside the call; nothing left on the loop).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "libscsitgt/backend_rbd.h"

static void test_defaults(void **state)
{
	struct scsitgt_backend_rbd_opts o;

	(void)state;
	memset(&o, 0xa5, sizeof(o));
	scsitgt_backend_rbd_opts_init(&o, sizeof(o));
	assert_int_equal(o.size, sizeof(o));
	assert_null(o.loop);
	assert_null(o.pool);
	assert_null(o.image);
	assert_null(o.pool_namespace);
	assert_string_equal(o.client_id, "admin");
	assert_null(o.conf_file);
	assert_false(o.read_only);
	assert_false(o.write_through);
	assert_int_equal(o.op_timeout_s, 30);
	assert_null(o.log_cb);
	assert_int_equal(o.log_level, SCSITGT_LOG_DEBUG);
	/* A caller compiled against a shorter struct gets only its part filled. */
	memset(&o, 0xa5, sizeof(o));
	scsitgt_backend_rbd_opts_init(&o, offsetof(struct scsitgt_backend_rbd_opts, pool));
	assert_int_equal(o.size, offsetof(struct scsitgt_backend_rbd_opts, pool));
	assert_int_equal((uintptr_t)o.pool & 0xff, 0xa5);
}

struct result {
	int calls;
	int status;
	void *bctx;
};

static void opened(void *arg, int status, void *bctx)
{
	struct result *r = arg;

	r->calls++;
	r->status = status;
	r->bctx = bctx;
}

/* A loop and options naming pool "rbd", image "img" on it. */
static void setup_opts(struct scsitgt_backend_rbd_opts *o, uv_loop_t *loop)
{
	assert_int_equal(uv_loop_init(loop), 0);
	scsitgt_backend_rbd_opts_init(o, sizeof(*o));
	o->loop = loop;
	o->pool = "rbd";
	o->image = "img";
}

static void test_arguments(void **state)
{
	struct scsitgt_backend_rbd_opts o;
	struct result res = { 0 };
	uv_loop_t loop;
	void *b = NULL;

	(void)state;
	assert_int_equal(uv_loop_init(&loop), 0);
	scsitgt_backend_rbd_opts_init(&o, sizeof(o));
#if HAVE_RBD
	assert_non_null(scsitgt_backend_rbd_ops());
	assert_int_equal(scsitgt_backend_rbd_create(NULL, &o), -EINVAL);
	assert_int_equal(scsitgt_backend_rbd_create(&b, NULL), -EINVAL);
	/* loop, pool and image are required */
	assert_int_equal(scsitgt_backend_rbd_create(&b, &o), -EINVAL);
	o.loop = &loop;
	o.pool = "rbd";
	assert_int_equal(scsitgt_backend_rbd_create(&b, &o), -EINVAL);
	o.image = "";
	assert_int_equal(scsitgt_backend_rbd_create_async(&o, opened, &res), -EINVAL);
	o.image = "img";
	assert_int_equal(scsitgt_backend_rbd_create_async(&o, NULL, &res), -EINVAL);
	assert_int_equal(scsitgt_backend_rbd_get_ident(NULL, NULL, NULL, 0), -EINVAL);
	assert_int_equal(scsitgt_backend_rbd_set_lun(NULL, NULL), -EINVAL);
#else
	uv_loop_close(&loop);
	setup_opts(&o, &loop);
	assert_null(scsitgt_backend_rbd_ops());
	assert_int_equal(scsitgt_backend_rbd_create(&b, &o), -ENOTSUP);
	assert_int_equal(scsitgt_backend_rbd_create_async(&o, opened, &res), -ENOTSUP);
	assert_int_equal(scsitgt_backend_rbd_get_ident(&o, NULL, NULL, 0), -ENOTSUP);
	assert_int_equal(scsitgt_backend_rbd_set_lun(&o, NULL), -ENOTSUP);
#endif
	assert_null(b);
	assert_int_equal(res.calls, 0);
	assert_int_equal(uv_run(&loop, UV_RUN_NOWAIT), 0);
	assert_int_equal(uv_loop_close(&loop), 0);
}

#if HAVE_RBD
/* Options whose ceph.conf does not exist: every open fails, without a cluster. */
static void setup_no_conf(struct scsitgt_backend_rbd_opts *o, uv_loop_t *loop)
{
	setup_opts(o, loop);
	o->conf_file = "/nonexistent/scsitgt-test/ceph.conf";
	o->op_timeout_s = 5;
}

/* A ceph.conf that does not exist: the open fails on the backend's thread and the callback
 * reports it on the loop, once; the context is gone and the loop has no handle left. */
static void test_async_open_fails(void **state)
{
	struct scsitgt_backend_rbd_opts o;
	struct result res = { 0 };
	uv_loop_t loop;
	void *b = NULL;

	(void)state;
	setup_no_conf(&o, &loop);
	assert_int_equal(scsitgt_backend_rbd_create_async(&o, opened, &res), 0);
	assert_int_equal(res.calls, 0);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(res.calls, 1);
	assert_true(res.status < 0);
	assert_null(res.bctx);
	assert_int_equal(uv_loop_close(&loop), 0);

	/* The synchronous create reports the same without a loop turn. */
	assert_true(scsitgt_backend_rbd_create(&b, &o) < 0);
	assert_null(b);
}
/* Lines the backend logged, by level. */
struct levels {
	unsigned int n[8];
	char last_error[512];
};

static void count_log(void *arg, enum scsitgt_log_level level, const char *subsystem,
		      const char *fmt, va_list ap)
{
	struct levels *l = arg;

	(void)subsystem;
	if ((unsigned)level < 8)
		l->n[level]++;
	if (level == SCSITGT_LOG_ERROR)
		vsnprintf(l->last_error, sizeof(l->last_error), fmt, ap);
}

/*
 * userx N12: the backend's logger gets the levels up to the options' log_level (default every
 * level, as before the member); a level out of range is refused and says so. An open that
 * fails (no ceph.conf) logs at ERROR, which passes a level of ERROR; nothing below it does.
 * (Lines below ERROR need a cluster: the filter is the aio backend's, tested there.)
 */
static void test_log_level(void **state)
{
	struct scsitgt_backend_rbd_opts o;
	struct levels all = { 0 }, errors = { 0 }, bad = { 0 };
	uv_loop_t loop;
	void *b = NULL;

	(void)state;
	setup_no_conf(&o, &loop);
	o.log_cb = count_log;
	o.log_arg = &all;
	assert_true(scsitgt_backend_rbd_create(&b, &o) < 0);
	print_message("failed open, default level: %u error, %u warning, %u notice, %u info, "
		      "%u debug lines\n",
		      all.n[3], all.n[4], all.n[5], all.n[6], all.n[7]);
	assert_true(all.n[SCSITGT_LOG_ERROR] > 0);

	o.log_arg = &errors;
	o.log_level = SCSITGT_LOG_ERROR;
	assert_true(scsitgt_backend_rbd_create(&b, &o) < 0);
	assert_int_equal(errors.n[SCSITGT_LOG_ERROR], all.n[SCSITGT_LOG_ERROR]);
	for (int lvl = SCSITGT_LOG_WARNING; lvl <= SCSITGT_LOG_DEBUG; lvl++)
		assert_int_equal(errors.n[lvl], 0);

	o.log_arg = &bad;
	o.log_level = (enum scsitgt_log_level)2;
	assert_int_equal(scsitgt_backend_rbd_create(&b, &o), -EINVAL);
	assert_int_equal(bad.n[SCSITGT_LOG_ERROR], 1);
	assert_non_null(strstr(bad.last_error, "rbd/img: log_level 2: not between"));
	o.log_level = SCSITGT_LOG_DEBUG;
	o.image = "";
	assert_int_equal(scsitgt_backend_rbd_create(&b, &o), -EINVAL);
	assert_int_equal(bad.n[SCSITGT_LOG_ERROR], 2);
	assert_non_null(strstr(bad.last_error, "scsitgt_backend_rbd_create: image: required"));
	assert_null(b);
	assert_int_equal(uv_loop_close(&loop), 0);
}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_arguments),
#if HAVE_RBD
		cmocka_unit_test(test_async_open_fails),
		cmocka_unit_test(test_log_level),
#endif
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
