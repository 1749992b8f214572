/* SPDX-License-Identifier: MIT */
/* The registered buffer pool's allocator (src/transport/rdma/bufpool.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "transport/rdma/bufpool.h"

#define UNIT 4096u

static uint8_t *region(size_t size)
{
	uint8_t *m = NULL;

	assert_int_equal(posix_memalign((void **)&m, UNIT, size), 0);
	return m;
}

static void test_init_rejects(void **state)
{
	struct scsitgt__bufpool bp;
	uint8_t *m = region(UNIT);

	(void)state;
	assert_int_equal(scsitgt__bufpool_init(&bp, NULL, UNIT, 12, 4), -EINVAL);
	assert_int_equal(scsitgt__bufpool_init(&bp, m, UNIT - 1, 12, 4), -EINVAL);
	assert_int_equal(scsitgt__bufpool_init(&bp, m, UNIT, 8, 4), -EINVAL);
	assert_int_equal(scsitgt__bufpool_init(&bp, m, UNIT, 12, SCSITGT__BUFPOOL_MAX_ORDER + 1),
			 -EINVAL);
	assert_int_equal(scsitgt__bufpool_init(&bp, m, UNIT, 12, 0), 0);
	assert_int_equal(bp.bytes_free, UNIT);
	scsitgt__bufpool_fini(&bp);
	free(m);
}

static void test_alloc_sizes_and_exhaustion(void **state)
{
	struct scsitgt__bufpool bp;
	uint8_t *m = region(16 * UNIT);
	void *a, *b, *c;
	size_t cap;

	(void)state;
	assert_int_equal(scsitgt__bufpool_init(&bp, m, 16 * UNIT, 12, 4), 0);
	assert_int_equal(scsitgt__bufpool_max_block(&bp), 16 * UNIT);
	/* Rounded up to a power-of-two number of units. */
	a = scsitgt__bufpool_alloc(&bp, 1, &cap);
	assert_non_null(a);
	assert_int_equal(cap, UNIT);
	b = scsitgt__bufpool_alloc(&bp, 3 * UNIT, &cap);
	assert_non_null(b);
	assert_int_equal(cap, 4 * UNIT);
	/* Blocks are aligned to their size within the region and do not overlap. */
	assert_int_equal(((uint8_t *)b - m) % (4 * UNIT), 0);
	assert_true((uint8_t *)b >= (uint8_t *)a + UNIT || (uint8_t *)b + 4 * UNIT <= (uint8_t *)a);
	assert_int_equal(bp.bytes_free, 11 * UNIT);
	/* 8 units are still free as one aligned block. */
	c = scsitgt__bufpool_alloc(&bp, 8 * UNIT, &cap);
	assert_non_null(c);
	assert_null(scsitgt__bufpool_alloc(&bp, 4 * UNIT, &cap));
	assert_null(scsitgt__bufpool_alloc(&bp, 0, &cap));
	assert_null(scsitgt__bufpool_alloc(&bp, 17 * UNIT, &cap));
	assert_true(bp.alloc_fails >= 2);
	assert_int_equal(scsitgt__bufpool_free(&bp, a), 0);
	assert_int_equal(scsitgt__bufpool_free(&bp, b), 0);
	assert_int_equal(scsitgt__bufpool_free(&bp, c), 0);
	/* Everything merged back: the whole region is one block again. */
	assert_int_equal(bp.bytes_free, 16 * UNIT);
	a = scsitgt__bufpool_alloc(&bp, 16 * UNIT, &cap);
	assert_ptr_equal(a, m);
	assert_int_equal(bp.live_blocks, 1);
	scsitgt__bufpool_fini(&bp);
	free(m);
}

static void test_free_rejects_foreign(void **state)
{
	struct scsitgt__bufpool bp;
	uint8_t *m = region(8 * UNIT);
	uint8_t other[16];
	uint8_t *a;
	size_t cap;

	(void)state;
	assert_int_equal(scsitgt__bufpool_init(&bp, m, 8 * UNIT, 12, 3), 0);
	a = scsitgt__bufpool_alloc(&bp, 2 * UNIT, &cap);
	assert_non_null(a);
	assert_int_equal(scsitgt__bufpool_free(&bp, other), -EINVAL);
	assert_int_equal(scsitgt__bufpool_free(&bp, a + 1), -EINVAL);
	assert_int_equal(scsitgt__bufpool_free(&bp, a + UNIT), -EINVAL); /* inside, not a head */
	assert_int_equal(scsitgt__bufpool_free(&bp, a), 0);
	assert_int_equal(scsitgt__bufpool_free(&bp, a), -EINVAL); /* twice */
	assert_int_equal(bp.bytes_free, 8 * UNIT);
	scsitgt__bufpool_fini(&bp);
	free(m);
}

static void test_owns_is_the_lookup(void **state)
{
	struct scsitgt__bufpool bp;
	uint8_t *m = region(8 * UNIT);
	uint8_t *a, *b;
	size_t cap;

	(void)state;
	assert_int_equal(scsitgt__bufpool_init(&bp, m, 8 * UNIT, 12, 3), 0);
	a = scsitgt__bufpool_alloc(&bp, 2 * UNIT, &cap);
	b = scsitgt__bufpool_alloc(&bp, UNIT, &cap);
	assert_true(scsitgt__bufpool_owns(&bp, a, 2 * UNIT));
	assert_true(scsitgt__bufpool_owns(&bp, a + UNIT + 7, UNIT - 7));
	/* A range running past its block is not one registered buffer. */
	assert_false(scsitgt__bufpool_owns(&bp, a + UNIT, UNIT + 1));
	assert_true(scsitgt__bufpool_owns(&bp, b, UNIT));
	/* Free memory and memory outside the region are not. */
	assert_false(scsitgt__bufpool_owns(&bp, m + 4 * UNIT, 16));
	assert_false(scsitgt__bufpool_owns(&bp, m + 8 * UNIT, 1));
	assert_false(scsitgt__bufpool_owns(&bp, (uint8_t *)&bp, 1));
	assert_int_equal(scsitgt__bufpool_free(&bp, a), 0);
	assert_false(scsitgt__bufpool_owns(&bp, a, 1));
	scsitgt__bufpool_fini(&bp);
	free(m);
}

static void test_hold_delays_reuse(void **state)
{
	struct scsitgt__bufpool bp;
	uint8_t *m = region(2 * UNIT);
	uint8_t *a, *b;
	size_t cap;

	(void)state;
	assert_int_equal(scsitgt__bufpool_init(&bp, m, 2 * UNIT, 12, 1), 0);
	a = scsitgt__bufpool_alloc(&bp, 2 * UNIT, &cap);
	assert_non_null(a);
	/* An RDMA READ lands in the second half; the command ends meanwhile. */
	assert_int_equal(scsitgt__bufpool_hold(&bp, a + UNIT), 0);
	assert_int_equal(scsitgt__bufpool_hold(&bp, a + UNIT + 100), 0);
	assert_int_equal(scsitgt__bufpool_free(&bp, a), 0);
	assert_int_equal(bp.pending_blocks, 1);
	assert_false(scsitgt__bufpool_owns(&bp, a, 1)); /* no longer the command's */
	assert_int_equal(scsitgt__bufpool_hold(&bp, a), -ENOENT);
	assert_null(scsitgt__bufpool_alloc(&bp, UNIT, &cap)); /* not reusable yet */
	scsitgt__bufpool_release(&bp, a + UNIT);
	assert_null(scsitgt__bufpool_alloc(&bp, UNIT, &cap));
	scsitgt__bufpool_release(&bp, a + UNIT + 100);
	assert_int_equal(bp.pending_blocks, 0);
	assert_int_equal(bp.live_blocks, 0);
	b = scsitgt__bufpool_alloc(&bp, 2 * UNIT, &cap);
	assert_ptr_equal(b, a);
	/* A release without a hold changes nothing. */
	scsitgt__bufpool_release(&bp, b);
	assert_true(scsitgt__bufpool_owns(&bp, b, 2 * UNIT));
	scsitgt__bufpool_fini(&bp);
	free(m);
}

static void test_odd_region_and_random_use(void **state)
{
	struct scsitgt__bufpool bp;
	/* 13 units: blocks of 8, 4 and 1 at init; buddies past the end never merge. */
	uint8_t *m = region(13 * UNIT + 100);
	struct {
		uint8_t *p;
		size_t cap;
	} live[64];
	unsigned int n = 0;
	uint32_t seed = 12345;

	(void)state;
	assert_int_equal(scsitgt__bufpool_init(&bp, m, 13 * UNIT + 100, 12, 4), 0);
	assert_int_equal(bp.bytes_free, 13 * UNIT);
	assert_int_equal(scsitgt__bufpool_max_block(&bp), 8 * UNIT);
	for (unsigned int round = 0; round < 5000; round++) {
		seed = seed * 1103515245u + 12345u;
		if (n < 64 && (seed >> 16) % 3) {
			size_t cap, want = 1 + (seed >> 8) % (5 * UNIT);
			uint8_t *p = scsitgt__bufpool_alloc(&bp, want, &cap);

			if (p) {
				assert_true(cap >= want);
				assert_true(p >= m && p + cap <= m + 13 * UNIT);
				for (unsigned int i = 0; i < n; i++)
					assert_true(p + cap <= live[i].p ||
						    live[i].p + live[i].cap <= p);
				memset(p, (int)round, cap);
				live[n].p = p;
				live[n].cap = cap;
				n++;
			}
		} else if (n) {
			unsigned int i = (seed >> 4) % n;

			assert_int_equal(scsitgt__bufpool_free(&bp, live[i].p), 0);
			live[i] = live[--n];
		}
		{
			size_t used = 0;

			for (unsigned int i = 0; i < n; i++)
				used += live[i].cap;
			assert_int_equal(bp.bytes_free + used, 13 * UNIT);
		}
	}
	while (n)
		assert_int_equal(scsitgt__bufpool_free(&bp, live[--n].p), 0);
	assert_int_equal(bp.bytes_free, 13 * UNIT);
	scsitgt__bufpool_fini(&bp);
	free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init_rejects),
		cmocka_unit_test(test_alloc_sizes_and_exhaustion),
		cmocka_unit_test(test_free_rejects_foreign),
		cmocka_unit_test(test_owns_is_the_lookup),
		cmocka_unit_test(test_hold_delays_reuse),
		cmocka_unit_test(test_odd_region_and_random_use),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
