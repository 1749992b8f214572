/* SPDX-License-Identifier: MIT */
/* iSER descriptor-to-SGE mapping (src/transport/iser/iser_map.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "transport/iser/iser_map.h"

static void test_remote(void **state)
{
	uint64_t r = 0;

	(void)state;
	/* Read STag: base offset 0, the buffer offset adds to the advertised address. */
	assert_int_equal(scsitgt__iser_map_remote(0x1000, 0, 0x200, 512, &r), 0);
	assert_int_equal(r, 0x1200);
	/* Write STag advertised at the first solicited byte (offset 8192). */
	assert_int_equal(scsitgt__iser_map_remote(0x7f0000, 8192, 8192, 4096, &r), 0);
	assert_int_equal(r, 0x7f0000);
	assert_int_equal(scsitgt__iser_map_remote(0x7f0000, 8192, 12288, 4096, &r), 0);
	assert_int_equal(r, 0x7f1000);
	/* Before the base: the initiator never advertised it. */
	assert_int_equal(scsitgt__iser_map_remote(0x7f0000, 8192, 4096, 4096, &r), -EPROTO);
	/* Ranges that wrap the address space. */
	assert_int_equal(scsitgt__iser_map_remote(UINT64_MAX - 100, 0, 50, 51, &r), -EOVERFLOW);
	assert_int_equal(scsitgt__iser_map_remote(UINT64_MAX - 100, 0, 200, 1, &r), -EOVERFLOW);
	assert_int_equal(scsitgt__iser_map_remote(UINT64_MAX - 100, 0, 50, 50, &r), 0);
}

static void test_coalesce_contiguous(void **state)
{
	/* Three Data-In PDUs of one command: 8 KiB each, contiguous on both sides. */
	const struct scsitgt__iser_seg in[] = {
		{ .laddr = 0x10000, .lkey = 7, .len = 8192, .raddr = 0x900000, .rkey = 3 },
		{ .laddr = 0x12000, .lkey = 7, .len = 8192, .raddr = 0x902000, .rkey = 3 },
		{ .laddr = 0x14000, .lkey = 7, .len = 100, .raddr = 0x904000, .rkey = 3 },
	};
	struct scsitgt__iser_seg out[4];

	(void)state;
	assert_int_equal(scsitgt__iser_map_coalesce(in, 3, 0, out, 4), 1);
	assert_int_equal(out[0].laddr, 0x10000);
	assert_int_equal(out[0].len, 16484);
	assert_int_equal(out[0].raddr, 0x900000);
	assert_int_equal(out[0].lkey, 7);
	assert_int_equal(out[0].rkey, 3);
}

static void test_coalesce_breaks(void **state)
{
	const struct scsitgt__iser_seg in[] = {
		{ .laddr = 0x10000, .lkey = 7, .len = 4096, .raddr = 0x900000, .rkey = 3 },
		/* remote gap */
		{ .laddr = 0x11000, .lkey = 7, .len = 4096, .raddr = 0x902000, .rkey = 3 },
		/* other command: other rkey, although contiguous */
		{ .laddr = 0x12000, .lkey = 7, .len = 4096, .raddr = 0x903000, .rkey = 4 },
		/* local gap */
		{ .laddr = 0x20000, .lkey = 7, .len = 4096, .raddr = 0x904000, .rkey = 4 },
		/* other lkey (a bounce copy) */
		{ .laddr = 0x21000, .lkey = 8, .len = 4096, .raddr = 0x905000, .rkey = 4 },
		/* empty pieces vanish */
		{ .laddr = 0x22000, .lkey = 8, .len = 0, .raddr = 0x906000, .rkey = 4 },
	};
	struct scsitgt__iser_seg out[8];

	(void)state;
	assert_int_equal(scsitgt__iser_map_coalesce(in, 6, 0, out, 8), 5);
	for (int i = 0; i < 5; i++) {
		assert_int_equal(out[i].laddr, in[i].laddr);
		assert_int_equal(out[i].len, 4096);
		assert_int_equal(out[i].raddr, in[i].raddr);
	}
	/* Too little room is an error, not a truncation. */
	assert_int_equal(scsitgt__iser_map_coalesce(in, 6, 0, out, 4), -ENOSPC);
	assert_int_equal(scsitgt__iser_map_coalesce(in, 0, 0, out, 0), 0);
}

static void test_coalesce_max_message(void **state)
{
	/* One 10000-byte piece and a contiguous 5000-byte one, 4096-byte messages at most. */
	const struct scsitgt__iser_seg in[] = {
		{ .laddr = 0x10000, .lkey = 1, .len = 10000, .raddr = 0x500000, .rkey = 2 },
		{ .laddr = 0x10000 + 10000,
		  .lkey = 1,
		  .len = 5000,
		  .raddr = 0x500000 + 10000,
		  .rkey = 2 },
	};
	struct scsitgt__iser_seg out[8];
	uint64_t total = 0;
	int n;

	(void)state;
	n = scsitgt__iser_map_coalesce(in, 2, 4096, out, 8);
	assert_int_equal(n, 4);
	for (int i = 0; i < n; i++) {
		assert_true(out[i].len <= 4096);
		/* Every request stays aligned between local and remote. */
		assert_int_equal(out[i].laddr - 0x10000, out[i].raddr - 0x500000);
		assert_int_equal(out[i].laddr, 0x10000 + total);
		total += out[i].len;
	}
	assert_int_equal(total, 15000);
	assert_int_equal(out[2].len, 4096);
	assert_int_equal(out[3].len, 15000 - 3 * 4096);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_remote),
		cmocka_unit_test(test_coalesce_contiguous),
		cmocka_unit_test(test_coalesce_breaks),
		cmocka_unit_test(test_coalesce_max_message),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
