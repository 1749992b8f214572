/* SPDX-License-Identifier: MIT */
/* sense.c: the reason table and the fixed/descriptor encodings (SPC-5 §4.4). */
#include "test_util.h"

#include "core/scsi_spec.h"
#include "core/sense.h"

static void test_table_rows(void **state)
{
	const struct scsitgt__sense_info *si;

	(void)state;
	si = scsitgt__sense_lookup(SCSITGT__SR_OK);
	assert_int_equal(si->status, SAM_STAT_GOOD);
	si = scsitgt__sense_lookup(SCSITGT__SR_INVALID_FIELD_IN_CDB);
	assert_int_equal(si->status, SAM_STAT_CHECK_CONDITION);
	assert_int_equal(si->key, SENSE_ILLEGAL_REQUEST);
	assert_int_equal(si->asc, 0x24);
	assert_int_equal(si->ascq, 0x00);
	si = scsitgt__sense_lookup(SCSITGT__SR_SPACE_ALLOC_FAILED);
	assert_int_equal(si->key, SENSE_DATA_PROTECT);
	assert_int_equal(si->asc, 0x27);
	assert_int_equal(si->ascq, 0x07);
	si = scsitgt__sense_lookup(SCSITGT__SR_BUSY);
	assert_int_equal(si->status, SAM_STAT_BUSY);
	/* Every reason has a row: CHECK CONDITION rows carry a sense key (RAW excepted). */
	for (int r = 1; r < SCSITGT__SR_COUNT_; r++) {
		si = scsitgt__sense_lookup((enum scsitgt__sense_reason)r);
		if (r == SCSITGT__SR_RAW)
			continue;
		assert_true(si->status != SAM_STAT_GOOD);
		if (si->status == SAM_STAT_CHECK_CONDITION)
			assert_true(si->key != 0 || r == SCSITGT__SR_ABORTED);
	}
	/* Out-of-range reasons map to an internal failure, never a NULL row. */
	si = scsitgt__sense_lookup(SCSITGT__SR_COUNT_);
	assert_int_equal(si->key, SENSE_HARDWARE_ERROR);
	assert_int_equal(si->asc, 0x44);
}

static void test_fixed_plain(void **state)
{
	uint8_t b[SCSITGT_SENSE_BUF_SIZE];
	size_t n;

	(void)state;
	memset(b, 0xee, sizeof(b));
	n = scsitgt__sense_encode(b, false, SENSE_MEDIUM_ERROR, 0x11, 0x00, NULL);
	assert_int_equal(n, 18);
	assert_int_equal(b[0], 0x70); /* current, VALID clear */
	assert_int_equal(b[2], 0x03);
	assert_int_equal(b[7], 10);
	assert_int_equal(b[12], 0x11);
	assert_int_equal(b[13], 0x00);
	assert_int_equal(b[15], 0); /* SKSV clear */
	assert_int_equal(get_be32(&b[3]), 0);
}

static void test_fixed_field_pointer(void **state)
{
	struct scsitgt__sense_detail d = {
		.sks_valid = true,
		.sks_cdb = true,
		.sks_bpv = true,
		.sks_bit = 5,
		.sks_field = 0x0102,
	};
	uint8_t b[SCSITGT_SENSE_BUF_SIZE];

	(void)state;
	assert_int_equal(scsitgt__sense_encode(b, false, 5, 0x24, 0, &d), 18);
	assert_int_equal(b[15], 0x80 | 0x40 | 0x08 | 5);
	assert_int_equal(b[16], 0x01);
	assert_int_equal(b[17], 0x02);
	/* Parameter list pointer, no bit pointer. */
	d.sks_cdb = false;
	d.sks_bpv = false;
	scsitgt__sense_encode(b, false, 5, 0x26, 0, &d);
	assert_int_equal(b[15], 0x80);
}

static void test_fixed_information(void **state)
{
	struct scsitgt__sense_detail d = { .info_valid = true, .info = 0x12345678 };
	uint8_t b[SCSITGT_SENSE_BUF_SIZE];

	(void)state;
	scsitgt__sense_encode(b, false, SENSE_MISCOMPARE, 0x1d, 0, &d);
	assert_int_equal(b[0], 0xf0); /* VALID */
	assert_int_equal(get_be32(&b[3]), 0x12345678);
	/* A value above 32 bits cannot be VALID in fixed format. */
	d.info = 0x100000000ull;
	scsitgt__sense_encode(b, false, SENSE_MISCOMPARE, 0x1d, 0, &d);
	assert_int_equal(b[0], 0x70);
}

static void test_descriptor(void **state)
{
	struct scsitgt__sense_detail d = {
		.info_valid = true,
		.info = 0x1122334455667788ull,
		.sks_valid = true,
		.sks_cdb = true,
		.sks_bpv = true,
		.sks_bit = 7,
		.sks_field = 2,
	};
	uint8_t b[SCSITGT_SENSE_BUF_SIZE];
	size_t n;

	(void)state;
	n = scsitgt__sense_encode(b, true, SENSE_ILLEGAL_REQUEST, 0x24, 0x00, NULL);
	assert_int_equal(n, 8);
	assert_int_equal(b[0], 0x72);
	assert_int_equal(b[1], 0x05);
	assert_int_equal(b[2], 0x24);
	assert_int_equal(b[3], 0x00);
	assert_int_equal(b[7], 0);

	n = scsitgt__sense_encode(b, true, SENSE_ILLEGAL_REQUEST, 0x24, 0x00, &d);
	assert_int_equal(n, 8 + 12 + 8);
	assert_int_equal(b[7], 20);
	/* Information descriptor (SPC-5 §4.4.2.2). */
	assert_int_equal(b[8], 0x00);
	assert_int_equal(b[9], 0x0a);
	assert_int_equal(b[10], 0x80);
	assert_true(get_be64(&b[12]) == 0x1122334455667788ull);
	/* Sense key specific descriptor (SPC-5 §4.4.2.3). */
	assert_int_equal(b[20], 0x02);
	assert_int_equal(b[21], 0x06);
	assert_int_equal(b[24], 0x80 | 0x40 | 0x08 | 7);
	assert_int_equal(get_be16(&b[25]), 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table_rows),
		cmocka_unit_test(test_fixed_plain),
		cmocka_unit_test(test_fixed_field_pointer),
		cmocka_unit_test(test_fixed_information),
		cmocka_unit_test(test_descriptor),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
