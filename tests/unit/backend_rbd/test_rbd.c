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
/* A ceph.conf that does not exist: the open fails on the backend's thread and the callback
 * reports it on the loop, once; the context is gone and the loop has no handle left. */
static void test_async_open_fails(void **state)
{
	struct scsitgt_backend_rbd_opts o;
	struct result res = { 0 };
	uv_loop_t loop;
	void *b = NULL;

	(void)state;
	setup_opts(&o, &loop);
	o.conf_file = "/nonexistent/scsitgt-test/ceph.conf";
	o.op_timeout_s = 5;
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
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_arguments),
#if HAVE_RBD
		cmocka_unit_test(test_async_open_fails),
#endif
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
