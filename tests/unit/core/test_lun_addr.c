/* SPDX-License-Identifier: MIT */
/* SAM-5 §4.7 LUN encoding and decoding (lun.c). */
#include <string.h>

#include "test_util.h"

static void test_encode_peripheral(void **state)
{
	uint8_t l[8];
	const uint8_t want[8] = { 0x00, 0x05, 0, 0, 0, 0, 0, 0 };

	(void)state;
	scsitgt__lun_encode(5, l);
	assert_memory_equal(l, want, 8);
	scsitgt__lun_encode(255, l);
	assert_int_equal(l[0], 0x00);
	assert_int_equal(l[1], 0xff);
}

static void test_encode_flat(void **state)
{
	uint8_t l[8];
	const uint8_t want[8] = { 0x40 | 0x01, 0x00, 0, 0, 0, 0, 0, 0 };

	(void)state;
	/* SAM-5 §4.7.7.3: flat space addressing, method 01b, 14-bit LUN. */
	scsitgt__lun_encode(256, l);
	assert_memory_equal(l, want, 8);
	scsitgt__lun_encode(16383, l);
	assert_int_equal(l[0], 0x7f);
	assert_int_equal(l[1], 0xff);
}

static void test_decode(void **state)
{
	uint8_t l[8] = { 0 };

	(void)state;
	l[1] = 7;
	assert_int_equal(scsitgt__lun_decode(l), 7);
	/* Flat addressing of a small LUN decodes too. */
	l[0] = 0x40;
	assert_int_equal(scsitgt__lun_decode(l), 7);
	l[0] = 0x7f;
	l[1] = 0xff;
	assert_int_equal(scsitgt__lun_decode(l), 16383);
	/* Peripheral addressing with a bus identifier: unsupported. */
	l[0] = 0x01;
	l[1] = 0x00;
	assert_true(scsitgt__lun_decode(l) == UINT64_MAX);
	/* Logical unit and extended addressing methods: unsupported. */
	l[0] = 0x80;
	assert_true(scsitgt__lun_decode(l) == UINT64_MAX);
	l[0] = 0xc0;
	assert_true(scsitgt__lun_decode(l) == UINT64_MAX);
	/* A second level: unsupported. */
	memset(l, 0, 8);
	l[3] = 1;
	assert_true(scsitgt__lun_decode(l) == UINT64_MAX);
}

static void test_round_trip(void **state)
{
	uint8_t l[8];

	(void)state;
	for (uint64_t id = 0; id <= 16383; id++) {
		scsitgt__lun_encode(id, l);
		assert_true(scsitgt__lun_decode(l) == id);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_encode_peripheral),
		cmocka_unit_test(test_encode_flat),
		cmocka_unit_test(test_decode),
		cmocka_unit_test(test_round_trip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
