/* SPDX-License-Identifier: MIT */
/*
 * The aio backend when the kernel answers badly, made to by the test hooks of aio_hooks.h: a
 * FUA write that completes -EINVAL on io_uring (RWF_DSYNC refused, or something else wrong
 * with the write), a submission the kernel takes nothing of (io_uring_enter(), io_submit()),
 * a request that keeps being interrupted. ios go through the core's io path (aio_test_fx.h).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "aio_test_fx.h"
#include "backend/aio_hooks.h"

/* A 1 MiB file on /var/tmp served as a LUN of 512-byte blocks. */
static struct fx *fx_var_tmp_lun(void)
{
	struct fx *f = fx_new();

	fx_file(f, "/var/tmp", MiB);
	assert_int_equal(fx_lun(f, 512, 0, 0), 0);
	return f;
}

static bool on_uring(struct fx *f)
{
	return scsitgt_backend_aio_get_engine(f->bctx) == SCSITGT_BACKEND_AIO_ENGINE_IO_URING;
}

/*
 * io_uring reports a refused RWF_DSYNC as the write's -EINVAL or -EOPNOTSUPP, but so it does
 * anything else wrong with the write. Only a write that then succeeds without the flag proves
 * the refusal; one that fails again leaves RWF_DSYNC on for the LUN's later FUA writes
 * (reviewg F4: before, one such completion turned it off for good, each later FUA write
 * costing a whole-file flush).
 */
static void test_uring_dsync_einval(void **state)
{
	struct fx *f = fx_var_tmp_lun();
	uint8_t *buf = aligned_buf(8 * 512);
	unsigned long dsync, syncs;

	(void)state;
	if (!on_uring(f)) {
		print_message("libaio: a refused RWF_DSYNC is io_submit()'s, no completion to "
			      "doubt: skipped\n");
		free(buf);
		fx_free(f);
		return;
	}
	aio_test_pattern(buf, 8 * 512, 70);
	/* The write fails with and without the flag: not a refusal of the flag. */
	scsitgt__backend_aio_inject_result(f->bctx, -EINVAL, 2);
	assert_int_not_equal(fx_buf(f, SCSITGT_IO_WRITE, 0, 8, buf, SCSITGT_IO_FLAG_FUA),
			     SCSITGT__SR_OK);
	assert_false(aio_test_log_has("kernel refuses RWF_DSYNC"));
	dsync = scsitgt__backend_aio_dsync_writes(f->bctx);
	syncs = scsitgt__backend_aio_syncs(f->bctx);
	assert_int_equal(fx_buf(f, SCSITGT_IO_WRITE, 0, 8, buf, SCSITGT_IO_FLAG_FUA),
			 SCSITGT__SR_OK);
	assert_int_equal(scsitgt__backend_aio_dsync_writes(f->bctx) - dsync, 1);
	assert_int_equal(scsitgt__backend_aio_syncs(f->bctx), syncs);
	assert_file_equals(f, 0, buf, 8 * 512);

	/* Refused with the flag, done without it (and flushed): the flag is off from now on. */
	aio_test_pattern(buf, 8 * 512, 71);
	scsitgt__backend_aio_inject_result(f->bctx, -EINVAL, 1);
	syncs = scsitgt__backend_aio_syncs(f->bctx);
	assert_int_equal(fx_buf(f, SCSITGT_IO_WRITE, 8, 8, buf, SCSITGT_IO_FLAG_FUA),
			 SCSITGT__SR_OK);
	assert_int_equal(scsitgt__backend_aio_syncs(f->bctx) - syncs, 1);
	assert_true(aio_test_log_has("kernel refuses RWF_DSYNC"));
	assert_file_equals(f, 8 * 512, buf, 8 * 512);
	dsync = scsitgt__backend_aio_dsync_writes(f->bctx);
	syncs = scsitgt__backend_aio_syncs(f->bctx);
	assert_int_equal(fx_buf(f, SCSITGT_IO_WRITE, 16, 8, buf, SCSITGT_IO_FLAG_FUA),
			 SCSITGT__SR_OK);
	assert_int_equal(scsitgt__backend_aio_dsync_writes(f->bctx), dsync);
	assert_int_equal(scsitgt__backend_aio_syncs(f->bctx) - syncs, 1);
	free(buf);
	fx_free(f);
}

/*
 * The kernel takes nothing of a submission (EAGAIN: no memory for the requests; reviewg C9,
 * C10). io_uring: the entry stays in the ring, goes as a NOP whose completion issues the write
 * again (the scratch iovecs it pointed at are reused meanwhile), and the loop retries on its
 * own: the write completes once, with its data, and reaches the kernel once. libaio, nothing
 * else in flight to wait for: BUSY, which the initiator retries, and nothing written.
 */
static void test_submit_refused(void **state)
{
	struct fx *f = fx_var_tmp_lun();
	uint8_t *buf = aligned_buf(8 * 512);
	uint8_t *back = aligned_buf(8 * 512);
	unsigned long rw;

	(void)state;
	aio_test_pattern(buf, 8 * 512, 72);
	rw = scsitgt__backend_aio_rw_events(f->bctx);
	scsitgt__backend_aio_fail_submit(f->bctx, -EAGAIN, 1);
	if (on_uring(f)) {
		assert_int_equal(fx_buf(f, SCSITGT_IO_WRITE, 32, 8, buf, 0), SCSITGT__SR_OK);
		assert_true(aio_test_log_has("io_uring submission failed"));
		assert_int_equal(scsitgt__backend_aio_rw_events(f->bctx) - rw, 1);
		assert_file_equals(f, 32 * 512, buf, 8 * 512);
		/* A read, a FLUSH: the same. */
		scsitgt__backend_aio_fail_submit(f->bctx, -EAGAIN, 1);
		assert_int_equal(fx_buf(f, SCSITGT_IO_READ, 32, 8, back, 0), SCSITGT__SR_OK);
		assert_memory_equal(buf, back, 8 * 512);
		scsitgt__backend_aio_fail_submit(f->bctx, -EAGAIN, 1);
		assert_int_equal(fx_io(f, SCSITGT_IO_FLUSH, 0, 0, NULL, 0, 0, NULL),
				 SCSITGT__SR_OK);
		assert_int_equal(scsitgt__backend_aio_rw_events(f->bctx) - rw, 2);
	} else {
		assert_int_equal(fx_buf(f, SCSITGT_IO_WRITE, 32, 8, buf, 0), SCSITGT__SR_BUSY);
		assert_int_equal(scsitgt__backend_aio_rw_events(f->bctx), rw);
		memset(back, 0, 8 * 512);
		assert_file_equals(f, 32 * 512, back, 8 * 512);
		/* The next one goes in. */
		assert_int_equal(fx_buf(f, SCSITGT_IO_WRITE, 32, 8, buf, 0), SCSITGT__SR_OK);
		assert_file_equals(f, 32 * 512, buf, 8 * 512);
	}
	free(buf);
	free(back);
	fx_free(f);
}

/*
 * A request the kernel keeps answering -EINTR (a file system's interrupted request) is issued
 * again a bounded number of times, then fails BUSY as one that keeps answering -EAGAIN does,
 * not INTERNAL TARGET FAILURE (which Linux sd fails without a retry; reviewg C10).
 */
static void test_interrupted_exhausted_busy(void **state)
{
	struct fx *f = fx_var_tmp_lun();
	uint8_t *buf = aligned_buf(8 * 512);

	(void)state;
	aio_test_pattern(buf, 8 * 512, 73);
	scsitgt__backend_aio_inject_result(f->bctx, -EINTR, 100);
	assert_int_equal(fx_buf(f, SCSITGT_IO_READ, 0, 8, buf, 0), SCSITGT__SR_BUSY);
	assert_int_equal(fx_buf(f, SCSITGT_IO_WRITE, 0, 8, buf, 0), SCSITGT__SR_BUSY);
	scsitgt__backend_aio_inject_result(f->bctx, -EAGAIN, 100);
	assert_int_equal(fx_buf(f, SCSITGT_IO_WRITE, 0, 8, buf, 0), SCSITGT__SR_BUSY);
	scsitgt__backend_aio_inject_result(f->bctx, 0, 0);
	assert_int_equal(fx_buf(f, SCSITGT_IO_WRITE, 0, 8, buf, 0), SCSITGT__SR_OK);
	free(buf);
	fx_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_uring_dsync_einval),
		cmocka_unit_test(test_submit_refused),
		cmocka_unit_test(test_interrupted_exhausted_busy),
	};

	aio_test_engine_require();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
