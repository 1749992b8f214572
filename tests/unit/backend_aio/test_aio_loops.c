/* SPDX-License-Identifier: MIT */
/*
 * The aio backend on two loops at once (SCSITGT_BACKEND_MULTI_LOOP, issue 18): an engine with
 * one worker loop, nexus A on home (shard 0) and nexus B bound to the worker's shard (shard 1),
 * whose commands run on the worker thread, so that their ios are submitted there and complete
 * through the worker loop's own kernel context. Data written through one loop is read back
 * through the other; both loops stream writes and reads at once; the engine's teardown closes
 * the worker's context on the worker loop (a hang fails the test by its timeout). Each step
 * waits on a semaphore or runs the home loop until done: no sleep, no timing (the world is
 * tests/support/xshard_world.h). Runs once per
 * engine (AIO_TEST_ENGINE), on a direct (/var/tmp) and a buffered (/dev/shm) file, and under
 * the TSan build (scripts/test.sh --tsan).
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

#include "aio_test_util.h"
#include "backend/aio_hooks.h"
#include "core/fabric.h"
#include "core/scsi_spec.h"
#include "core/shard.h"
#include "libscsitgt/scsitgt.h"
#include "util/be.h"
#include "xshard_world.h"

#define BS 512u
#define NBLOCKS 8192u
/* Blocks per command. */
#define XB 8u
_Static_assert(XB *BS == XW_DATA_MAX, "a command carries XB blocks");

/* The scratch file of the test running (NULL: none there, the test skips). */
static char *path;

/* WRITE (10) of XB blocks at @lba with the pattern of @seed; FUA when asked. */
static uint8_t run_write(struct xw_world *t, struct scsitgt__session *s, uint32_t lba,
			 uint32_t seed, bool fua, struct xw_cmd *x)
{
	memset(x, 0, sizeof(*x));
	x->sess = s;
	x->cdb[0] = SBC_WRITE_10;
	x->cdb[1] = fua ? 0x08 : 0;
	put_be32(&x->cdb[2], lba);
	put_be16(&x->cdb[7], XB);
	x->cdb_len = 10;
	aio_test_pattern(x->dout, sizeof(x->dout), seed);
	x->dout_len = sizeof(x->dout);
	return xw_run(t, x);
}

/* READ (10) of XB blocks at @lba; true when GOOD with the pattern of @seed. */
static bool read_is(struct xw_world *t, struct scsitgt__session *s, uint32_t lba, uint32_t seed,
		    struct xw_cmd *x)
{
	uint8_t expect[XB * BS];

	memset(x, 0, sizeof(*x));
	x->sess = s;
	x->cdb[0] = SBC_READ_10;
	put_be32(&x->cdb[2], lba);
	put_be16(&x->cdb[7], XB);
	x->cdb_len = 10;
	if (xw_run(t, x) != SAM_STAT_GOOD || x->din_len != sizeof(expect)) {
		return false;
	}
	aio_test_pattern(expect, sizeof(expect), seed);
	return memcmp(x->din, expect, sizeof(expect)) == 0;
}

/* SYNCHRONIZE CACHE (10) of the whole medium. */
static uint8_t run_sync(struct xw_world *t, struct scsitgt__session *s, struct xw_cmd *x)
{
	memset(x, 0, sizeof(*x));
	x->sess = s;
	x->cdb[0] = SBC_SYNCHRONIZE_CACHE_10;
	x->cdb_len = 10;
	return xw_run(t, x);
}

static int setup(void **state)
{
	const char *dir = *state;
	struct xw_world *t;
	struct scsitgt_lun_opts lo;
	struct scsitgt_backend_aio_opts o;
	void *bctx;

	aio_test_log_clear();
	xw_world_create(&t, "iqn.2024-01.org.example:aioloops");
	*state = t;
	path = aio_test_file(dir, (off_t)NBLOCKS * BS);
	if (path == NULL) {
		/* the test skips (no scratch file there) */
		return 0;
	}
	aio_test_opts(&o, &t->loop, path);
	assert_int_equal(scsitgt_backend_aio_create(&bctx, &o), 0);
	scsitgt_lun_opts_init(&lo, sizeof(lo));
	lo.block_size = BS;
	lo.num_blocks = NBLOCKS;
	lo.backend = scsitgt_backend_aio_ops();
	lo.backend_ctx = bctx;
	assert_true(lo.backend->flags & SCSITGT_BACKEND_MULTI_LOOP);
	xw_world_start(t, &lo);
	return 0;
}

/* The engine's teardown closes the LUN: the worker's kernel context is torn down on the
 * worker loop. */
static int teardown(void **state)
{
	xw_world_destroy(*state);
	aio_test_file_remove(path);
	path = NULL;
	return 0;
}

static void skip_without_file(void)
{
	if (path == NULL) {
		print_message("no scratch file: skipped\n");
		skip();
	}
}

/* What one loop writes the other reads, FUA and SYNCHRONIZE CACHE on the worker too; the
 * worker made a kernel context of its own. */
static void test_data_across_loops(void **state)
{
	struct xw_world *t = *state;
	struct xw_cmd x;

	skip_without_file();
	assert_int_equal(scsitgt__backend_aio_loop_count(t->bctx), 1);
	assert_int_equal(run_write(t, t->b, 16, 1, false, &x), SAM_STAT_GOOD);
	/* home and the worker each submit through their own context */
	assert_int_equal(scsitgt__backend_aio_loop_count(t->bctx), 2);
	aio_test_pattern(x.dout, sizeof(x.dout), 1);
	assert_true(aio_test_file_equals(path, 16 * BS, x.dout, sizeof(x.dout)));
	assert_true(read_is(t, t->a, 16, 1, &x));
	assert_true(read_is(t, t->b, 16, 1, &x));
	assert_int_equal(run_write(t, t->a, 64, 2, false, &x), SAM_STAT_GOOD);
	assert_true(read_is(t, t->b, 64, 2, &x));
	assert_int_equal(run_write(t, t->b, 64, 3, true, &x), SAM_STAT_GOOD);
	assert_true(read_is(t, t->a, 64, 3, &x));
	assert_int_equal(run_sync(t, t->b, &x), SAM_STAT_GOOD);
	assert_int_equal(run_sync(t, t->a, &x), SAM_STAT_GOOD);
	assert_int_equal(scsitgt__backend_aio_loop_count(t->bctx), 2);
	/* io_uring, uring_async AUTO: buffered I/O goes to io-wq from home's ring only, the
	 * worker's tries inline first; NEVER (AIO_TEST_URING_ASYNC): from no ring. */
	if (scsitgt_backend_aio_get_engine(t->bctx) == SCSITGT_BACKEND_AIO_ENGINE_IO_URING) {
		const char *a = getenv("AIO_TEST_URING_ASYNC");

		assert_int_equal(scsitgt__backend_aio_uring_punting_loops(t->bctx),
				 a != NULL && strcmp(a, "never") == 0 ? 0 : 1);
	}
}

/* Both loops write and read back at once, on ranges of their own. */
struct stream {
	struct xw_world *t;
	struct scsitgt__session *s;
	uint32_t base;
	unsigned int n, bad;
};

static void stream_run(struct stream *s)
{
	struct xw_cmd x;

	for (unsigned int i = 0; i < s->n; i++) {
		uint32_t lba = s->base + (i % 64) * XB;
		uint32_t seed = s->base + i;

		if (run_write(s->t, s->s, lba, seed, (i % 7) == 0, &x) != SAM_STAT_GOOD ||
		    !read_is(s->t, s->s, lba, seed, &x)) {
			s->bad++;
		}
	}
}

static void stream_thread(void *arg)
{
	stream_run(arg);
}

static void test_both_loops_at_once(void **state)
{
	struct xw_world *t = *state;
	struct stream sb = { .t = t, .s = t->b, .base = 1024, .n = 300 };
	struct stream sa = { .t = t, .s = t->a, .base = 4096, .n = 300 };
	uv_thread_t th;

	skip_without_file();
	assert_int_equal(uv_thread_create(&th, stream_thread, &sb), 0);
	stream_run(&sa);
	assert_int_equal(uv_thread_join(&th), 0);
	assert_int_equal(sa.bad, 0);
	assert_int_equal(sb.bad, 0);
	assert_int_equal(scsitgt__backend_aio_loop_count(t->bctx), 2);
}

/*
 * Another loop's kernel context counts against a system-wide limit (libaio: fs.aio-max-nr):
 * when the kernel refuses the queue depth, the loop gets a smaller context and its ios still
 * complete; when it refuses even the smallest, that loop's ios end BUSY (retried by the
 * initiator), the failure is logged once, not per io, and a later io tries again (review32 R5).
 */
static void test_loop_context_refused(void **state)
{
	struct xw_world *t = *state;
	struct xw_cmd x;

	skip_without_file();
	scsitgt__backend_aio_limit_loop_depth(t->bctx, 3);
	for (int i = 0; i < 5; i++) {
		assert_int_equal(run_write(t, t->b, 16, 5, false, &x), SAM_STAT_BUSY);
	}
	assert_int_equal(scsitgt__backend_aio_loop_count(t->bctx), 1);
	assert_int_equal(aio_test_log_count(SCSITGT_LOG_ERROR, "context for another loop: "), 1);
	/* Home's context is its own. */
	assert_int_equal(run_write(t, t->a, 16, 6, false, &x), SAM_STAT_GOOD);
	scsitgt__backend_aio_limit_loop_depth(t->bctx, 16);
	assert_int_equal(run_write(t, t->b, 16, 7, true, &x), SAM_STAT_GOOD);
	assert_int_equal(scsitgt__backend_aio_loop_count(t->bctx), 2);
	assert_true(aio_test_log_has("context for another loop holds 16 requests, not 128"));
	assert_true(read_is(t, t->a, 16, 7, &x));
	assert_int_equal(run_sync(t, t->b, &x), SAM_STAT_GOOD);
}

int main(void)
{
	static const char *var_tmp = "/var/tmp";
	static const char *dev_shm = "/dev/shm";
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_prestate_setup_teardown(test_data_across_loops, setup, teardown,
							 (void *)var_tmp),
		cmocka_unit_test_prestate_setup_teardown(test_data_across_loops, setup, teardown,
							 (void *)dev_shm),
		cmocka_unit_test_prestate_setup_teardown(test_both_loops_at_once, setup, teardown,
							 (void *)var_tmp),
		cmocka_unit_test_prestate_setup_teardown(test_both_loops_at_once, setup, teardown,
							 (void *)dev_shm),
		cmocka_unit_test_prestate_setup_teardown(test_loop_context_refused, setup, teardown,
							 (void *)var_tmp),
	};

	aio_test_engine_require();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
