/* SPDX-License-Identifier: MIT */
/* The engine's object cache: reuse by size class, its bounds, zeroing, and the off switch. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/cache.h"

static void test_reuse_by_class(void **state)
{
	struct scsitgt__cache c;
	size_t cap, cap2;
	void *a, *b;

	(void)state;
	scsitgt__cache_init(&c, 1u << 20);
	a = scsitgt__cache_alloc(&c, 4096, &cap);
	assert_non_null(a);
	assert_int_equal(cap, 4096);
	memset(a, 0xab, 4096);
	scsitgt__cache_free(&c, a, cap);
	assert_int_equal(c.bytes, 4096);
	/* Any size of the same class gets the cached block back. */
	b = scsitgt__cache_alloc(&c, 3000, &cap2);
	assert_ptr_equal(a, b);
	assert_int_equal(cap2, 4096);
	assert_int_equal(c.hits, 1);
	assert_int_equal(c.bytes, 0);
	/* Zeroed on request, whatever it held. */
	scsitgt__cache_free(&c, b, cap2);
	b = scsitgt__cache_zalloc(&c, 4096, &cap2);
	for (size_t i = 0; i < 4096; i++)
		assert_int_equal(((uint8_t *)b)[i], 0);
	scsitgt__cache_free(&c, b, cap2);
	/* Another class does not take it. */
	a = scsitgt__cache_alloc(&c, 100, &cap);
	assert_int_equal(cap, 128);
	assert_ptr_not_equal(a, b);
	scsitgt__cache_free(&c, a, cap);
	scsitgt__cache_fini(&c);
	assert_int_equal(c.bytes, 0);
}

static void test_bounds(void **state)
{
	struct scsitgt__cache c;
	void *p[8];
	size_t cap;

	(void)state;
	/* Room for two 64 KiB blocks: the third goes back to the system. */
	scsitgt__cache_init(&c, 2u * 65536u);
	for (int i = 0; i < 3; i++)
		p[i] = scsitgt__cache_alloc(&c, 65536, &cap);
	for (int i = 0; i < 3; i++)
		scsitgt__cache_free(&c, p[i], cap);
	assert_int_equal(c.bytes, 2u * 65536u);
	/* Larger than the largest class: plain allocation, capacity as asked. */
	p[0] = scsitgt__cache_alloc(&c, (2u << 20) + 1, &cap);
	assert_non_null(p[0]);
	assert_int_equal(cap, (2u << 20) + 1);
	scsitgt__cache_free(&c, p[0], cap);
	assert_int_equal(c.bytes, 2u * 65536u);
	scsitgt__cache_fini(&c);
}

static void test_disabled_and_null(void **state)
{
	struct scsitgt__cache c;
	size_t cap;
	void *p;

	(void)state;
	scsitgt__cache_init(&c, 0);
	p = scsitgt__cache_alloc(&c, 4096, &cap);
	assert_non_null(p);
	scsitgt__cache_free(&c, p, cap);
	assert_int_equal(c.bytes, 0);
	assert_int_equal(c.hits + c.misses, 0);
	scsitgt__cache_fini(&c);
	/* No cache at all: malloc and free. */
	p = scsitgt__cache_zalloc(NULL, 200, &cap);
	assert_non_null(p);
	assert_int_equal(cap, 200);
	scsitgt__cache_free(NULL, p, cap);
	scsitgt__cache_free(NULL, NULL, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reuse_by_class),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_disabled_and_null),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
