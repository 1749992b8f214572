/* SPDX-License-Identifier: MIT */
/*
 * Contract tests of the public object API (engine, target, LUN): every documented error code,
 * options structs of older and newer callers, the destroy-callback contract (never from inside
 * the call, exactly once from the loop), userdata, strerror and version queries.
 */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "libscsitgt/backend_aio.h"
#include "libscsitgt/scsitgt.h"
#include "probe_backend.h"

struct env {
	uv_loop_t loop;
	struct scsitgt_engine *engine;
	struct scsitgt_target *tgt;
};

static void env_init(struct env *e)
{
	struct scsitgt_target_opts to;

	assert_int_equal(uv_loop_init(&e->loop), 0);
	assert_int_equal(scsitgt_engine_create(&e->engine, &e->loop, NULL), 0);
	scsitgt_target_opts_init(&to, sizeof(to));
	to.name = "iqn.2024-01.org.example:api";
	assert_int_equal(scsitgt_target_create(&e->tgt, e->engine, &to), 0);
}

struct done {
	unsigned int calls;
	int status;
};

static void done_cb(void *arg, int status)
{
	struct done *d = arg;

	d->calls++;
	d->status = status;
}

static void env_fini(struct env *e)
{
	struct done d = { 0 };

	scsitgt_engine_destroy(e->engine, done_cb, &d);
	assert_int_equal(d.calls, 0);
	assert_int_equal(uv_run(&e->loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(d.calls, 1);
	assert_int_equal(d.status, 0);
	assert_int_equal(uv_loop_close(&e->loop), 0);
}

static int lun_create(struct env *e, struct scsitgt_lun **out, uint64_t id,
		      const struct scsitgt_backend_ops *ops, void *bctx, uint32_t bs, uint64_t nb,
		      uint32_t flags)
{
	struct scsitgt_lun_opts lo;
	struct scsitgt_lun *lun;

	scsitgt_lun_opts_init(&lo, sizeof(lo));
	lo.id = id;
	lo.backend = ops;
	lo.backend_ctx = bctx;
	lo.block_size = bs;
	lo.num_blocks = nb;
	lo.flags = flags;
	return scsitgt_lun_create(out ? out : &lun, e->tgt, &lo);
}

/* ---- options structs: older (smaller) and newer (larger) callers ---- */

#define OPTS_INIT_CHECK(type, init_fn, last_field)                              \
	do {                                                                    \
		_Alignas(16) unsigned char raw[sizeof(type) + 32];              \
		size_t small = offsetof(type, last_field);                      \
		type *o = (type *)(void *)raw;                                  \
                                                                                \
		/* An older caller: only its bytes are written. */              \
		memset(raw, 0xcc, sizeof(raw));                                 \
		init_fn(o, small);                                              \
		assert_int_equal(o->size, small);                               \
		for (size_t i = small; i < sizeof(raw); i++)                    \
			assert_int_equal(raw[i], 0xcc);                         \
		/* A newer caller: its unknown tail is zeroed. */               \
		memset(raw, 0xcc, sizeof(raw));                                 \
		init_fn(o, sizeof(raw));                                        \
		assert_true(o->size >= sizeof(type) && o->size <= sizeof(raw)); \
		for (size_t i = sizeof(type); i < sizeof(raw); i++)             \
			assert_int_equal(raw[i], 0);                            \
		/* The exact size. */                                           \
		init_fn(o, sizeof(type));                                       \
		assert_int_equal(o->size, sizeof(type));                        \
		/* NULL and size 0 are ignored. */                              \
		init_fn(NULL, sizeof(type));                                    \
		memset(raw, 0xcc, sizeof(raw));                                 \
		init_fn(o, 0);                                                  \
		assert_int_equal(raw[0], 0xcc);                                 \
	} while (0)

static void test_opts_init_sizes(void **state)
{
	struct scsitgt_engine_opts eo;
	struct scsitgt_lun_opts lo;

	(void)state;
	OPTS_INIT_CHECK(struct scsitgt_engine_opts, scsitgt_engine_opts_init, log_level);
	OPTS_INIT_CHECK(struct scsitgt_engine_opts, scsitgt_engine_opts_init, conn_workers);
	OPTS_INIT_CHECK(struct scsitgt_target_opts, scsitgt_target_opts_init, alias);
	OPTS_INIT_CHECK(struct scsitgt_lun_opts, scsitgt_lun_opts_init, backend_ctx);

	/* Documented defaults. */
	scsitgt_engine_opts_init(&eo, sizeof(eo));
	assert_int_equal(eo.log_level, SCSITGT_LOG_NOTICE);
	assert_null(eo.log_cb);
	assert_int_equal(eo.workers, 0);
	assert_true(eo.conn_workers);
	scsitgt_lun_opts_init(&lo, sizeof(lo));
	assert_int_equal(lo.id, 0);
	assert_int_equal(lo.block_size, 0);
	assert_null(lo.backend);
}

/* struct scsitgt_engine_opts as the 0.1 ABI baseline has it (tests/unit/api/test_api_abi.c). */
struct engine_opts_v0 {
	size_t size;
	scsitgt_log_cb log_cb;
	void *log_arg;
	enum scsitgt_log_level log_level;
	int workers;
};

static void test_engine_create_errors(void **state)
{
	struct scsitgt_engine *engine = NULL;
	struct scsitgt_engine_opts eo;
	struct engine_opts_v0 *v0;
	uv_loop_t loop;

	(void)state;
	assert_int_equal(uv_loop_init(&loop), 0);
	assert_int_equal(scsitgt_engine_create(NULL, &loop, NULL), -EINVAL);
	assert_int_equal(scsitgt_engine_create(&engine, NULL, NULL), -EINVAL);
	scsitgt_engine_opts_init(&eo, sizeof(eo));
	eo.size = 0;
	assert_int_equal(scsitgt_engine_create(&engine, &loop, &eo), -EINVAL);
	scsitgt_engine_opts_init(&eo, sizeof(eo));
	eo.log_level = (enum scsitgt_log_level)2;
	assert_int_equal(scsitgt_engine_create(&engine, &loop, &eo), -EINVAL);
	eo.log_level = (enum scsitgt_log_level)8;
	assert_int_equal(scsitgt_engine_create(&engine, &loop, &eo), -EINVAL);
	assert_null(engine);
	/* An older caller whose struct ends before log_level gets the default level. */
	scsitgt_engine_opts_init(&eo, offsetof(struct scsitgt_engine_opts, log_level));
	eo.log_level = (enum scsitgt_log_level)99; /* beyond its size: never read */
	assert_int_equal(scsitgt_engine_create(&engine, &loop, &eo), 0);
	assert_ptr_equal(scsitgt_engine_get_loop(engine), &loop);
	scsitgt_engine_destroy(engine, NULL, NULL);
	assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
	/*
	 * A binary compiled before conn_workers was appended: its struct is 32 bytes on the
	 * heap, which init and create must neither write nor read past (ASan's builds see it).
	 */
	v0 = calloc(1, sizeof(*v0));
	assert_non_null(v0);
	scsitgt_engine_opts_init((struct scsitgt_engine_opts *)(void *)v0, sizeof(*v0));
	assert_int_equal(v0->size, sizeof(*v0));
	assert_int_equal(v0->log_level, SCSITGT_LOG_NOTICE);
	v0->workers = 1;
	assert_int_equal(
		scsitgt_engine_create(&engine, &loop, (struct scsitgt_engine_opts *)(void *)v0), 0);
	free(v0);
	assert_int_equal(scsitgt_engine_get_workers(engine), 1);
	scsitgt_engine_destroy(engine, NULL, NULL);
	assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(uv_loop_close(&loop), 0);
}

static void test_target_create_errors(void **state)
{
	struct env e;
	struct scsitgt_target *t = NULL;
	struct scsitgt_target_opts to;
	char name[300];

	(void)state;
	env_init(&e);
	scsitgt_target_opts_init(&to, sizeof(to));
	to.name = "iqn.2024-01.org.example:x";
	assert_int_equal(scsitgt_target_create(NULL, e.engine, &to), -EINVAL);
	assert_int_equal(scsitgt_target_create(&t, NULL, &to), -EINVAL);
	assert_int_equal(scsitgt_target_create(&t, e.engine, NULL), -EINVAL);
	to.size = 0;
	assert_int_equal(scsitgt_target_create(&t, e.engine, &to), -EINVAL);
	scsitgt_target_opts_init(&to, sizeof(to));
	to.name = NULL;
	assert_int_equal(scsitgt_target_create(&t, e.engine, &to), -EINVAL);
	to.name = "";
	assert_int_equal(scsitgt_target_create(&t, e.engine, &to), -EINVAL);
	to.name = "iqn.2024-01.org.example:with space";
	assert_int_equal(scsitgt_target_create(&t, e.engine, &to), -EINVAL);
	to.name = "iqn.2024-01.org.example:under_score";
	assert_int_equal(scsitgt_target_create(&t, e.engine, &to), -EINVAL);
	/* 223 bytes is the longest name (RFC 7143 §4.2.7.1), 224 is refused. */
	memset(name, 'a', sizeof(name));
	memcpy(name, "iqn.2024-01.x:", 14);
	name[224] = '\0';
	to.name = name;
	assert_int_equal(scsitgt_target_create(&t, e.engine, &to), -EINVAL);
	name[223] = '\0';
	assert_int_equal(scsitgt_target_create(&t, e.engine, &to), 0);
	/* The name is copied. */
	name[20] = 'b';
	assert_int_equal(strlen(scsitgt_target_get_name(t)), 223);
	assert_int_equal(scsitgt_target_get_name(t)[20], 'a');
	/* Alias at most 255 bytes. */
	scsitgt_target_opts_init(&to, sizeof(to));
	to.name = "iqn.2024-01.org.example:alias";
	memset(name, 'x', 256);
	name[256] = '\0';
	to.alias = name;
	assert_int_equal(scsitgt_target_create(&t, e.engine, &to), -EINVAL);
	name[255] = '\0';
	assert_int_equal(scsitgt_target_create(&t, e.engine, &to), 0);
	/* Duplicate names, compared case-insensitively (RFC 7143 §4.2.7.1). */
	to.alias = NULL;
	assert_int_equal(scsitgt_target_create(&t, e.engine, &to), -EEXIST);
	to.name = "IQN.2024-01.ORG.EXAMPLE:ALIAS";
	assert_int_equal(scsitgt_target_create(&t, e.engine, &to), -EEXIST);
	/* An older caller without the alias field. */
	scsitgt_target_opts_init(&to, offsetof(struct scsitgt_target_opts, alias));
	to.name = "eui.0123456789abcdef";
	assert_int_equal(scsitgt_target_create(&t, e.engine, &to), 0);
	env_fini(&e);
}

static void test_target_acl(void **state)
{
	struct env e;
	char longname[240];

	(void)state;
	env_init(&e);
	assert_int_equal(scsitgt_target_add_initiator(NULL, "iqn.a:b"), -EINVAL);
	assert_int_equal(scsitgt_target_add_initiator(e.tgt, NULL), -EINVAL);
	assert_int_equal(scsitgt_target_add_initiator(e.tgt, ""), -EINVAL);
	memset(longname, 'a', sizeof(longname));
	longname[sizeof(longname) - 1] = '\0';
	assert_int_equal(scsitgt_target_add_initiator(e.tgt, longname), -EINVAL);
	assert_int_equal(scsitgt_target_add_initiator(e.tgt, "iqn.2024-01.a:b"), 0);
	assert_int_equal(scsitgt_target_add_initiator(e.tgt, "iqn.2024-01.a:b"), -EEXIST);
	assert_int_equal(scsitgt_target_add_initiator(e.tgt, "iqn.2024-01.a:c"), 0);
	assert_int_equal(scsitgt_target_remove_initiator(e.tgt, NULL), -EINVAL);
	assert_int_equal(scsitgt_target_remove_initiator(NULL, "iqn.2024-01.a:b"), -EINVAL);
	assert_int_equal(scsitgt_target_remove_initiator(e.tgt, "iqn.2024-01.a:z"), -ENOENT);
	assert_int_equal(scsitgt_target_remove_initiator(e.tgt, "iqn.2024-01.a:b"), 0);
	assert_int_equal(scsitgt_target_remove_initiator(e.tgt, "iqn.2024-01.a:b"), -ENOENT);
	/* "iqn.2024-01.a:c" stays listed: freed with the target (ASan checks). */
	env_fini(&e);
}

static void test_lun_create_errors(void **state)
{
	struct env e;
	struct probe p = { .open_num_blocks = 1000 };
	struct scsitgt_backend_ops ops = probe_ops(false);
	struct scsitgt_backend_ops bad;
	struct scsitgt_lun_opts lo;
	struct scsitgt_lun *lun = NULL;

	(void)state;
	env_init(&e);
	scsitgt_lun_opts_init(&lo, sizeof(lo));
	lo.backend = &ops;
	lo.backend_ctx = &p;
	assert_int_equal(scsitgt_lun_create(NULL, e.tgt, &lo), -EINVAL);
	assert_int_equal(scsitgt_lun_create(&lun, NULL, &lo), -EINVAL);
	assert_int_equal(scsitgt_lun_create(&lun, e.tgt, NULL), -EINVAL);
	lo.size = 0;
	assert_int_equal(scsitgt_lun_create(&lun, e.tgt, &lo), -EINVAL);
	lo.size = sizeof(lo);
	lo.backend = NULL;
	assert_int_equal(scsitgt_lun_create(&lun, e.tgt, &lo), -EINVAL);
	/* Tables without a required entry, or without a size. */
	lo.backend = &bad;
	bad = ops;
	bad.open = NULL;
	assert_int_equal(scsitgt_lun_create(&lun, e.tgt, &lo), -EINVAL);
	bad = ops;
	bad.close = NULL;
	assert_int_equal(scsitgt_lun_create(&lun, e.tgt, &lo), -EINVAL);
	bad = ops;
	bad.submit = NULL;
	assert_int_equal(scsitgt_lun_create(&lun, e.tgt, &lo), -EINVAL);
	bad = ops;
	bad.size = 0;
	assert_int_equal(scsitgt_lun_create(&lun, e.tgt, &lo), -EINVAL);
	/* A table that ends before open() is missing it. */
	bad = ops;
	bad.size = offsetof(struct scsitgt_backend_ops, open);
	assert_int_equal(scsitgt_lun_create(&lun, e.tgt, &lo), -EINVAL);
	lo.backend = &ops;
	/* LUN numbers: SAM-5 flat space ends at 16383. */
	lo.id = 16384;
	assert_int_equal(scsitgt_lun_create(&lun, e.tgt, &lo), -EINVAL);
	lo.id = UINT64_MAX;
	assert_int_equal(scsitgt_lun_create(&lun, e.tgt, &lo), -EINVAL);
	/* Block sizes: 512 and 4096, or 0 for the backend's choice. */
	lo.id = 1;
	lo.block_size = 1024;
	assert_int_equal(scsitgt_lun_create(&lun, e.tgt, &lo), -EINVAL);
	lo.block_size = 520;
	assert_int_equal(scsitgt_lun_create(&lun, e.tgt, &lo), -EINVAL);
	/* Identification strings too long or not printable ASCII. */
	lo.block_size = 0;
	lo.vendor = "VENDORXYZ";
	assert_int_equal(scsitgt_lun_create(&lun, e.tgt, &lo), -EINVAL);
	lo.vendor = "VEN\tDOR";
	assert_int_equal(scsitgt_lun_create(&lun, e.tgt, &lo), -EINVAL);
	lo.vendor = NULL;
	lo.product = "PRODUCT-17-CHARSX";
	assert_int_equal(scsitgt_lun_create(&lun, e.tgt, &lo), -EINVAL);
	lo.product = NULL;
	lo.revision = "12345";
	assert_int_equal(scsitgt_lun_create(&lun, e.tgt, &lo), -EINVAL);
	lo.revision = NULL;
	lo.serial = "0123456789abcdef0123456789abcdef0";
	assert_int_equal(scsitgt_lun_create(&lun, e.tgt, &lo), -EINVAL);
	lo.serial = NULL;
	/* None of these reached the backend. */
	assert_int_equal(p.open_calls, 0);

	/* The backend's own refusal is passed through. */
	p.open_rc = -EIO;
	assert_int_equal(scsitgt_lun_create(&lun, e.tgt, &lo), -EIO);
	p.open_rc = 0;
	/* A geometry the backend leaves incomplete or sets wrong. */
	p.open_num_blocks = 0;
	assert_int_equal(scsitgt_lun_create(&lun, e.tgt, &lo), -EINVAL);
	p.open_num_blocks = 1000;
	p.open_block_size = 1024;
	assert_int_equal(scsitgt_lun_create(&lun, e.tgt, &lo), -EINVAL);
	p.open_block_size = 0;
	/* On failure the caller keeps backend_ctx: the library did not close it. */
	assert_int_equal(p.close_calls, 0);

	/* Thin provisioning needs UNMAP. */
	lo.flags = SCSITGT_LUN_THIN;
	assert_int_equal(scsitgt_lun_create(&lun, e.tgt, &lo), -ENOTSUP);
	p.supports_unmap = true;
	assert_int_equal(scsitgt_lun_create(&lun, e.tgt, &lo), 0);
	/* Block size 0 became 512. */
	{
		struct scsitgt_lun_geometry geo = { .size = sizeof(geo) };

		assert_int_equal(scsitgt_lun_get_geometry(lun, &geo), 0);
		assert_int_equal(geo.block_size, 512);
		assert_int_equal(geo.num_blocks, 1000);
	}
	/* Duplicate LUN numbers, checked before the backend is opened. */
	{
		unsigned int opens = p.open_calls;
		struct probe p2 = { .open_num_blocks = 8 };

		lo.backend_ctx = &p2;
		lo.flags = 0;
		assert_int_equal(scsitgt_lun_create(&lun, e.tgt, &lo), -EEXIST);
		assert_int_equal(p2.open_calls, 0);
		assert_int_equal(p.open_calls, opens);
	}
	/* The highest LUN number and 4096-byte blocks. */
	{
		void *bctx;

		assert_int_equal(scsitgt_backend_null_create(&bctx), 0);
		assert_int_equal(
			lun_create(&e, &lun, 16383, scsitgt_backend_null_ops(), bctx, 4096, 10, 0),
			0);
		assert_int_equal(scsitgt_lun_get_id(lun), 16383);
	}
	env_fini(&e);
	assert_int_equal(p.close_calls, 1);
}

/*
 * Issue 17, defect 8. Who owns backend_ctx when scsitgt_lun_create() fails (lun.h, backend.h): the caller, on
 * every failure path, before or after open() ran; the library never calls close() then, and
 * the caller's close() releases whatever open() acquired. A backend that counts its opens and
 * closes and holds a resource between them checks each failure path; the aio backend (a file
 * descriptor and a poll handle after open()) checks the case of issue 17: a THIN LUN on a
 * medium without UNMAP, refused after open().
 */
/* A backend whose open() acquires a resource that only close() gives back. */
struct counted {
	int open_rc;
	uint32_t geo_block_size;
	uint64_t geo_num_blocks;
	bool unmap;
	unsigned int opens, closes;
	void *resource; /* held from a successful open() to close() */
};

static int counted_open(void *bctx, struct scsitgt_lun_geometry *geo)
{
	struct counted *c = bctx;

	c->opens++;
	if (c->open_rc < 0)
		return c->open_rc;
	c->resource = malloc(64);
	if (c->resource == NULL)
		return -ENOMEM;
	geo->block_size = c->geo_block_size;
	geo->num_blocks = c->geo_num_blocks;
	return 0;
}

static void counted_close(void *bctx, scsitgt_done_cb cb, void *cb_arg)
{
	struct counted *c = bctx;

	/* Accepts a context whatever open() did, as backend.h requires. */
	c->closes++;
	free(c->resource);
	c->resource = NULL;
	if (cb)
		cb(cb_arg, 0);
}

static void counted_submit(void *bctx, struct scsitgt_io *io)
{
	(void)bctx;
	scsitgt_io_complete(io, 0);
}

static bool counted_supports(void *bctx, enum scsitgt_io_type type)
{
	const struct counted *c = bctx;

	return type == SCSITGT_IO_UNMAP && c->unmap;
}

static const struct scsitgt_backend_ops counted_ops = {
	.size = sizeof(struct scsitgt_backend_ops),
	.name = "counted",
	.open = counted_open,
	.close = counted_close,
	.submit = counted_submit,
	.supports = counted_supports,
};

static unsigned int failures;

/*
 * One failing create: it returns @want, the library did not close the backend, and the
 * caller's close (the rule of lun.h) leaves nothing open. @opened: whether open() ran.
 */
static void fail_once(struct scsitgt_target *tgt, const struct scsitgt_lun_opts *lo,
		      struct counted *c, int want, bool opened)
{
	unsigned int opens = c->opens, closes = c->closes;
	struct scsitgt_lun *lun = NULL;

	assert_int_equal(scsitgt_lun_create(&lun, tgt, lo), want);
	assert_null(lun);
	assert_int_equal(c->opens, opens + (opened ? 1 : 0));
	assert_int_equal(c->closes, closes);
	failures++;
	counted_close(c, NULL, NULL);
	assert_null(c->resource);
}

static void test_every_failure_path(void **state)
{
	struct env e;
	struct counted c = { .geo_block_size = 512, .geo_num_blocks = 100 };
	struct scsitgt_backend_ops bad;
	struct scsitgt_lun_opts lo;
	struct scsitgt_lun *lun;

	(void)state;
	env_init(&e);
	scsitgt_lun_opts_init(&lo, sizeof(lo));
	lo.backend = &counted_ops;
	lo.backend_ctx = &c;

	/* Refused before open(). */
	assert_int_equal(scsitgt_lun_create(NULL, e.tgt, &lo), -EINVAL);
	assert_int_equal(scsitgt_lun_create(&lun, NULL, &lo), -EINVAL);
	assert_int_equal(c.opens, 0);
	lo.size = 0;
	fail_once(e.tgt, &lo, &c, -EINVAL, false);
	lo.size = sizeof(lo);
	bad = counted_ops;
	bad.submit = NULL;
	lo.backend = &bad;
	fail_once(e.tgt, &lo, &c, -EINVAL, false);
	lo.backend = &counted_ops;
	lo.id = 16384;
	fail_once(e.tgt, &lo, &c, -EINVAL, false);
	lo.id = 0;
	lo.block_size = 1024;
	fail_once(e.tgt, &lo, &c, -EINVAL, false);
	lo.block_size = 0;
	lo.physical_block_exponent = 9;
	fail_once(e.tgt, &lo, &c, -EINVAL, false);
	lo.physical_block_exponent = 0;
	lo.vendor = "TOO-LONG-VENDOR";
	fail_once(e.tgt, &lo, &c, -EINVAL, false);
	lo.vendor = NULL;

	/* open() itself fails. */
	c.open_rc = -EIO;
	fail_once(e.tgt, &lo, &c, -EIO, true);
	c.open_rc = 0;

	/* Refused after a successful open(): the geometry, then THIN without UNMAP.
	 */
	c.geo_block_size = 1024;
	fail_once(e.tgt, &lo, &c, -EINVAL, true);
	c.geo_block_size = 512;
	c.geo_num_blocks = 0;
	fail_once(e.tgt, &lo, &c, -EINVAL, true);
	c.geo_num_blocks = 100;
	lo.flags = SCSITGT_LUN_THIN;
	fail_once(e.tgt, &lo, &c, -ENOTSUP, true);
	lo.flags = 0;

	/* A LUN that exists already: refused before open(). */
	{
		struct counted first = { .geo_block_size = 512, .geo_num_blocks = 8 };
		struct scsitgt_lun_opts o2 = lo;

		o2.backend_ctx = &first;
		assert_int_equal(scsitgt_lun_create(&lun, e.tgt, &o2), 0);
		fail_once(e.tgt, &lo, &c, -EEXIST, false);
		/* On success the LUN owns it: closed once, by the library, at teardown. */
		env_fini(&e);
		assert_int_equal(first.opens, 1);
		assert_int_equal(first.closes, 1);
		assert_null(first.resource);
	}
	/* The library closed nothing of the failed creates: every close was the
	 * caller's. */
	assert_int_equal(c.closes, failures);
}

/* Open file descriptors of this process. */
static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	if (d == NULL)
		return -1;
	while ((de = readdir(d)) != NULL)
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

static void closed_cb(void *arg, int status)
{
	(void)status;
	*(bool *)arg = true;
}

/* Issue 17: THIN on a read-only aio file (no UNMAP) fails after open(); nothing leaks. */
static void test_aio_thin_refused(void **state)
{
	const struct scsitgt_backend_ops *ops = scsitgt_backend_aio_ops();
	char path[] = "/tmp/scsitgt-ownership-XXXXXX";
	struct scsitgt_backend_aio_opts ao;
	struct scsitgt_lun_opts lo;
	struct scsitgt_lun *lun;
	struct env e;
	void *bctx;
	bool closed = false;
	int fd, fds;

	(void)state;
	if (ops == NULL)
		skip();
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 1 << 20), 0);
	close(fd);
	env_init(&e);
	fds = count_fds();
	scsitgt_backend_aio_opts_init(&ao, sizeof(ao));
	ao.loop = &e.loop;
	ao.path = path;
	ao.read_only = true;
	assert_int_equal(scsitgt_backend_aio_create(&bctx, &ao), 0);
	assert_true(count_fds() > fds);
	scsitgt_lun_opts_init(&lo, sizeof(lo));
	lo.backend = ops;
	lo.backend_ctx = bctx;
	lo.flags = SCSITGT_LUN_THIN;
	assert_int_equal(scsitgt_lun_create(&lun, e.tgt, &lo), -ENOTSUP);
	/* Still the caller's: its close() releases the file, the eventfd and the
	 * poll. */
	ops->close(bctx, closed_cb, &closed);
	while (!closed)
		assert_true(uv_run(&e.loop, UV_RUN_ONCE) >= 0);
	assert_int_equal(count_fds(), fds);
	env_fini(&e);
	unlink(path);
}

/* The library copies min(size, sizeof) bytes of the table: entries past the size do not exist. */
static void test_lun_old_ops_table(void **state)
{
	struct env e;
	struct probe p = { .open_num_blocks = 100, .supports_unmap = true };
	struct scsitgt_backend_ops ops = probe_ops(false);
	struct scsitgt_lun *lun;

	(void)state;
	env_init(&e);
	/* An "old" backend compiled when the table ended after submit(). */
	ops.size = offsetof(struct scsitgt_backend_ops, supports);
	assert_int_equal(lun_create(&e, &lun, 0, &ops, &p, 512, 0, SCSITGT_LUN_THIN), -ENOTSUP);
	assert_int_equal(lun_create(&e, &lun, 0, &ops, &p, 512, 0, 0), 0);
	assert_int_equal(p.supports_calls, 0);
	/* A table on the stack may change after create: the LUN keeps its copy. */
	memset(&ops, 0, sizeof(ops));
	env_fini(&e);
	assert_int_equal(p.close_calls, 1);
}

static void test_lun_get_geometry_sizes(void **state)
{
	struct env e;
	struct probe p = { .open_num_blocks = 77 };
	struct scsitgt_backend_ops ops = probe_ops(false);
	struct scsitgt_lun *lun;
	_Alignas(16) unsigned char raw[sizeof(struct scsitgt_lun_geometry) + 8];
	struct scsitgt_lun_geometry *geo = (struct scsitgt_lun_geometry *)(void *)raw;
	size_t small = offsetof(struct scsitgt_lun_geometry, physical_block_exponent);

	(void)state;
	env_init(&e);
	assert_int_equal(lun_create(&e, &lun, 5, &ops, &p, 4096, 0, 0), 0);
	assert_int_equal(scsitgt_lun_get_geometry(NULL, geo), -EINVAL);
	assert_int_equal(scsitgt_lun_get_geometry(lun, NULL), -EINVAL);
	geo->size = 0;
	assert_int_equal(scsitgt_lun_get_geometry(lun, geo), -EINVAL);
	/* An older caller: only its bytes are written. */
	memset(raw, 0xcc, sizeof(raw));
	geo->size = small;
	assert_int_equal(scsitgt_lun_get_geometry(lun, geo), 0);
	assert_int_equal(geo->size, small);
	assert_int_equal(geo->block_size, 4096);
	assert_int_equal(geo->num_blocks, 77);
	for (size_t i = small; i < sizeof(raw); i++) {
		assert_int_equal(raw[i], 0xcc);
	}
	/* A newer caller gets the library's size back. */
	geo->size = sizeof(raw);
	assert_int_equal(scsitgt_lun_get_geometry(lun, geo), 0);
	assert_int_equal(geo->size, sizeof(struct scsitgt_lun_geometry));
	assert_int_equal(scsitgt_lun_get_id(lun), 5);
	assert_ptr_equal(scsitgt_lun_get_backend_ctx(lun), &p);
	env_fini(&e);
}

/* ---- destroy callbacks ---- */

static void test_destroy_callbacks_deferred(void **state)
{
	struct env e;
	struct probe p1 = { .open_num_blocks = 8 }, p2 = { .open_num_blocks = 8 };
	struct scsitgt_backend_ops ops = probe_ops(false);
	struct scsitgt_target_opts to;
	struct scsitgt_target *t2;
	struct scsitgt_lun *l1;
	struct done dl = { 0 }, dt = { 0 };

	(void)state;
	env_init(&e);
	assert_int_equal(lun_create(&e, &l1, 1, &ops, &p1, 512, 0, 0), 0);

	/* LUN destroy: the callback waits for the loop, then runs once. */
	scsitgt_lun_destroy(l1, done_cb, &dl);
	assert_int_equal(dl.calls, 0);
	assert_int_equal(uv_run(&e.loop, UV_RUN_NOWAIT), 1);
	assert_int_equal(dl.calls, 1);
	assert_int_equal(dl.status, 0);
	assert_int_equal(p1.close_calls, 1);
	/* The id is free again. */
	assert_int_equal(lun_create(&e, NULL, 1, &ops, &p1, 512, 0, 0), 0);

	/* Target destroy with a LUN: both freed, the callback once, from the loop. */
	scsitgt_target_opts_init(&to, sizeof(to));
	to.name = "iqn.2024-01.org.example:second";
	assert_int_equal(scsitgt_target_create(&t2, e.engine, &to), 0);
	{
		struct scsitgt_lun_opts lo;
		struct scsitgt_lun *l2;

		scsitgt_lun_opts_init(&lo, sizeof(lo));
		lo.backend = &ops;
		lo.backend_ctx = &p2;
		assert_int_equal(scsitgt_lun_create(&l2, t2, &lo), 0);
	}
	scsitgt_target_destroy(t2, done_cb, &dt);
	assert_int_equal(dt.calls, 0);
	for (int i = 0; i < 10 && dt.calls == 0; i++) {
		uv_run(&e.loop, UV_RUN_NOWAIT);
	}
	assert_int_equal(dt.calls, 1);
	assert_int_equal(p2.close_calls, 1);
	/* The name is free again. */
	assert_int_equal(scsitgt_target_create(&t2, e.engine, &to), 0);
	/* A target without LUNs and without a callback. */
	scsitgt_target_destroy(t2, NULL, NULL);
	uv_run(&e.loop, UV_RUN_NOWAIT);
	assert_int_equal(dt.calls, 1);
	assert_int_equal(dl.calls, 1);

	/* The engine frees the remaining target and LUN 1 (p1 closed a second time). */
	env_fini(&e);
	assert_int_equal(p1.close_calls, 2);
}

/* An engine with several targets, built-in and host LUNs, and data in RAM: all freed. */
static void test_engine_destroy_frees_everything(void **state)
{
	struct env e;
	struct probe p[3] = { { .open_num_blocks = 8 },
			      { .open_num_blocks = 8 },
			      { .open_num_blocks = 8 } };
	struct scsitgt_backend_ops ops = probe_ops(true);
	struct scsitgt_target_opts to;
	char name[64];

	(void)state;
	env_init(&e);
	scsitgt_target_opts_init(&to, sizeof(to));
	for (int t = 0; t < 3; t++) {
		struct scsitgt_target *tgt;
		struct scsitgt_lun_opts lo;
		struct scsitgt_lun *lun;
		void *bctx;

		snprintf(name, sizeof(name), "iqn.2024-01.org.example:t%d", t);
		to.name = name;
		assert_int_equal(scsitgt_target_create(&tgt, e.engine, &to), 0);
		assert_int_equal(scsitgt_target_add_initiator(tgt, "iqn.2024-01.a:b"), 0);
		scsitgt_lun_opts_init(&lo, sizeof(lo));
		lo.vendor = "ACME";
		lo.serial = "S1";
		assert_int_equal(scsitgt_backend_ram_create(&bctx), 0);
		lo.backend = scsitgt_backend_ram_ops();
		lo.backend_ctx = bctx;
		lo.num_blocks = 1u << 20;
		assert_int_equal(scsitgt_lun_create(&lun, tgt, &lo), 0);
		assert_int_equal(scsitgt_backend_null_create(&bctx), 0);
		lo.id = 1;
		lo.backend = scsitgt_backend_null_ops();
		lo.backend_ctx = bctx;
		assert_int_equal(scsitgt_lun_create(&lun, tgt, &lo), 0);
		lo.id = 200 + (uint64_t)t;
		lo.backend = &ops;
		lo.backend_ctx = &p[t];
		lo.num_blocks = 0;
		assert_int_equal(scsitgt_lun_create(&lun, tgt, &lo), 0);
	}
	env_fini(&e);
	for (int t = 0; t < 3; t++) {
		assert_int_equal(p[t].close_calls, 1);
	}
}

static void test_userdata(void **state)
{
	struct env e;
	int a, b;

	(void)state;
	env_init(&e);
	assert_null(scsitgt_engine_get_userdata(e.engine));
	assert_null(scsitgt_target_get_userdata(e.tgt));
	scsitgt_engine_set_userdata(e.engine, &a);
	scsitgt_target_set_userdata(e.tgt, &b);
	assert_ptr_equal(scsitgt_engine_get_userdata(e.engine), &a);
	assert_ptr_equal(scsitgt_target_get_userdata(e.tgt), &b);
	scsitgt_engine_set_userdata(e.engine, NULL);
	assert_null(scsitgt_engine_get_userdata(e.engine));
	assert_ptr_equal(scsitgt_engine_get_loop(e.engine), &e.loop);
	assert_string_equal(scsitgt_target_get_name(e.tgt), "iqn.2024-01.org.example:api");
	env_fini(&e);
}

static void test_strerror(void **state)
{
	(void)state;
	assert_string_equal(scsitgt_strerror(-ENOMEM), strerror(ENOMEM));
	assert_string_equal(scsitgt_strerror(-EINVAL), strerror(EINVAL));
	assert_string_equal(scsitgt_strerror(-ECANCELED), strerror(ECANCELED));
	assert_non_null(scsitgt_strerror(0));
	assert_non_null(scsitgt_strerror(SCSITGT_EPROTO_PEER));
	assert_non_null(scsitgt_strerror(SCSITGT_EAUTH));
	assert_string_not_equal(scsitgt_strerror(SCSITGT_EPROTO_PEER),
				scsitgt_strerror(SCSITGT_EAUTH));
	assert_string_not_equal(scsitgt_strerror(SCSITGT_EAUTH), scsitgt_strerror(-4003));
	/* Unknown codes still give text. */
	assert_non_null(scsitgt_strerror(-4999));
	assert_non_null(scsitgt_strerror(12345));
	assert_non_null(scsitgt_strerror(-100000));
}

static void test_version(void **state)
{
	char buf[32];

	(void)state;
	assert_int_equal(scsitgt_version(), SCSITGT_VERSION_HEX);
	assert_int_equal(SCSITGT_VERSION_HEX, (SCSITGT_VERSION_MAJOR << 16) |
						      (SCSITGT_VERSION_MINOR << 8) |
						      SCSITGT_VERSION_PATCH);
	snprintf(buf, sizeof(buf), "%d.%d.%d", SCSITGT_VERSION_MAJOR, SCSITGT_VERSION_MINOR,
		 SCSITGT_VERSION_PATCH);
	assert_string_equal(scsitgt_version_string(), buf);
	/* The build's version (meson project version, read from version.h) agrees. */
	assert_string_equal(scsitgt_version_string(), SCSITGT_TEST_PROJECT_VERSION);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_opts_init_sizes),
		cmocka_unit_test(test_engine_create_errors),
		cmocka_unit_test(test_target_create_errors),
		cmocka_unit_test(test_target_acl),
		cmocka_unit_test(test_lun_create_errors),
		cmocka_unit_test(test_every_failure_path),
		cmocka_unit_test(test_aio_thin_refused),
		cmocka_unit_test(test_lun_old_ops_table),
		cmocka_unit_test(test_lun_get_geometry_sizes),
		cmocka_unit_test(test_destroy_callbacks_deferred),
		cmocka_unit_test(test_engine_destroy_frees_everything),
		cmocka_unit_test(test_userdata),
		cmocka_unit_test(test_strerror),
		cmocka_unit_test(test_version),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
