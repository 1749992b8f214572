/* SPDX-License-Identifier: MIT */
/* Tests of backend/null.c through the core's io path. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "io_harness.h"

static bool all_bytes(const uint8_t *p, size_t len, uint8_t v)
{
	for (size_t i = 0; i < len; i++) {
		if (p[i] != v) {
			return false;
		}
	}
	return true;
}

static void test_null_create_args(void **state)
{
	(void)state;
	assert_int_equal(scsitgt_backend_null_create(NULL), -EINVAL);
	assert_non_null(scsitgt_backend_null_ops());
	assert_string_equal(scsitgt_backend_null_ops()->name, "null");
	assert_int_equal(scsitgt_backend_null_ops()->size, sizeof(struct scsitgt_backend_ops));
	assert_non_null(scsitgt_backend_null_ops()->supports);
}

static void test_null_geometry(void **state)
{
	struct harness h;
	struct scsitgt_lun *lun;
	struct scsitgt_lun_geometry geo = { .size = sizeof(geo) };
	void *bctx;

	(void)state;
	harness_init(&h);
	assert_int_equal(scsitgt_backend_null_create(&bctx), 0);
	/* No capacity: refused by open; the caller keeps and frees the context. */
	assert_int_equal(harness_lun(&h, NULL, 0, scsitgt_backend_null_ops(), bctx, 512, 0, 0),
			 -EINVAL);
	scsitgt_backend_null_ops()->close(bctx, NULL, NULL);

	/* Any capacity, even 2^50 blocks; block size 0 defaults to 512. */
	assert_int_equal(scsitgt_backend_null_create(&bctx), 0);
	assert_int_equal(
		harness_lun(&h, &lun, 0, scsitgt_backend_null_ops(), bctx, 0, 1ull << 50, 0), 0);
	assert_int_equal(scsitgt_lun_get_geometry(lun, &geo), 0);
	assert_int_equal(geo.block_size, 512);
	assert_int_equal(geo.num_blocks, 1ull << 50);
	assert_true(geo.flags & SCSITGT_GEOMETRY_LBPRZ);
	assert_true(geo.flags & SCSITGT_GEOMETRY_NON_ROTATIONAL);
	assert_false(geo.flags & SCSITGT_GEOMETRY_WRITE_CACHE);
	assert_ptr_equal(scsitgt_lun_get_backend_ctx(lun), bctx);

	/* Thin provisioning needs UNMAP, which null has. */
	assert_int_equal(scsitgt_backend_null_create(&bctx), 0);
	assert_int_equal(harness_lun(&h, NULL, 1, scsitgt_backend_null_ops(), bctx, 4096, 1000,
				     SCSITGT_LUN_THIN),
			 0);
	harness_fini(&h);
}

static void test_null_reads_zero_after_write(void **state)
{
	struct harness h;
	void *bctx;
	uint8_t buf[8 * 4096];
	struct iovec iov[4] = {
		{ .iov_base = buf, .iov_len = 3 },
		{ .iov_base = buf + 3, .iov_len = 0 },
		{ .iov_base = buf + 3, .iov_len = 5000 },
		{ .iov_base = buf + 5003, .iov_len = sizeof(buf) - 5003 },
	};

	(void)state;
	harness_init(&h);
	assert_int_equal(scsitgt_backend_null_create(&bctx), 0);
	assert_int_equal(
		harness_lun(&h, NULL, 3, scsitgt_backend_null_ops(), bctx, 4096, 1 << 20, 0), 0);
	memset(buf, 0xab, sizeof(buf));
	assert_int_equal(harness_io(&h, 3, SCSITGT_IO_WRITE, 100, 8, iov, 4, NULL), SCSITGT__SR_OK);
	/* The written data is gone: a read returns zeros over the whole, oddly split buffer. */
	assert_int_equal(harness_io(&h, 3, SCSITGT_IO_READ, 100, 8, iov, 4, NULL), SCSITGT__SR_OK);
	assert_true(all_bytes(buf, sizeof(buf), 0));
	/* Only the io's bytes are touched, even when the iovecs are longer. */
	memset(buf, 0xab, sizeof(buf));
	assert_int_equal(harness_io(&h, 3, SCSITGT_IO_READ, 0, 1, iov, 4, NULL), SCSITGT__SR_OK);
	assert_true(all_bytes(buf, 4096, 0));
	assert_true(all_bytes(buf + 4096, sizeof(buf) - 4096, 0xab));
	/* The last block. */
	assert_int_equal(harness_io(&h, 3, SCSITGT_IO_READ, (1 << 20) - 1, 1, iov, 4, NULL),
			 SCSITGT__SR_OK);
	harness_fini(&h);
}

static void test_null_other_types(void **state)
{
	struct harness h;
	struct harness_result res;
	void *bctx;

	(void)state;
	harness_init(&h);
	assert_int_equal(scsitgt_backend_null_create(&bctx), 0);
	assert_int_equal(harness_lun(&h, NULL, 0, scsitgt_backend_null_ops(), bctx, 512, 4096, 0),
			 0);
	assert_int_equal(harness_io(&h, 0, SCSITGT_IO_FLUSH, 0, 0, NULL, 0, NULL), SCSITGT__SR_OK);
	assert_int_equal(harness_io(&h, 0, SCSITGT_IO_UNMAP, 10, 100, NULL, 0, NULL),
			 SCSITGT__SR_OK);
	assert_int_equal(harness_io(&h, 0, SCSITGT_IO_WRITE_ZEROES, 0, 4096, NULL, 0, NULL),
			 SCSITGT__SR_OK);
	/* Beyond the end: ILLEGAL REQUEST, LOGICAL BLOCK ADDRESS OUT OF RANGE. */
	assert_int_equal(harness_io(&h, 0, SCSITGT_IO_UNMAP, 4095, 2, NULL, 0, &res),
			 SCSITGT__SR_RAW);
	assert_int_equal(res.raw.key, 0x05);
	assert_int_equal(res.raw.asc, 0x21);
	assert_int_equal(res.raw.ascq, 0x00);
	assert_int_equal(harness_io(&h, 0, SCSITGT_IO_READ, UINT64_MAX, 1, NULL, 0, &res),
			 SCSITGT__SR_RAW);
	/* An io type this backend does not know. */
	assert_int_equal(harness_io(&h, 0, (enum scsitgt_io_type)6, 0, 1, NULL, 0, NULL),
			 SCSITGT__SR_INVALID_OPCODE);
	harness_fini(&h);
}

/* Synchronous completion from inside submit, many times on one command. */
static void test_null_sync_completion_many(void **state)
{
	struct harness h;
	struct harness_result res = { 0 };
	struct scsitgt__cmd *cmd;
	uint8_t buf[512];
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	void *bctx;

	(void)state;
	harness_init(&h);
	assert_int_equal(scsitgt_backend_null_create(&bctx), 0);
	assert_int_equal(harness_lun(&h, NULL, 0, scsitgt_backend_null_ops(), bctx, 512, 4096, 0),
			 0);
	cmd = harness_cmd_begin(&h, 0);
	for (unsigned int i = 0; i < 1000; i++) {
		enum scsitgt_io_type t = i % 2 ? SCSITGT_IO_READ : SCSITGT_IO_WRITE;

		assert_int_equal(harness_submit(cmd, &res, t, i, 1, &iov, 1, 0), 0);
		/* Completed before submit returned. */
		assert_int_equal(res.done, i + 1);
		assert_int_equal(res.reason, SCSITGT__SR_OK);
	}
	harness_cmd_end(cmd);
	harness_fini(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_null_create_args),
		cmocka_unit_test(test_null_geometry),
		cmocka_unit_test(test_null_reads_zero_after_write),
		cmocka_unit_test(test_null_other_types),
		cmocka_unit_test(test_null_sync_completion_many),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
