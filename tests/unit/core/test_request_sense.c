/* SPDX-License-Identifier: MIT */
/* SPC-5 §6.39 REQUEST SENSE. */
#include "test_util.h"

static void test_no_sense_fixed(void **state)
{
	struct tctx *t = *state;
	struct lf_result *r;

	/* A failed command first: its sense went with its status (autosense), none is left. */
	tctx_run(t, cdb_inquiry(t->cdb, false, 1, 96));
	assert_int_equal(t->r.status, 0x02);
	r = tctx_run(t, cdb_request_sense(t->cdb, false, 252));
	assert_good(r);
	assert_int_equal(r->data_len, 18);
	assert_int_equal(r->data[0], 0x70);
	assert_int_equal(r->data[2], 0x00); /* NO SENSE */
	assert_int_equal(r->data[7], 10);
	assert_int_equal(r->data[12], 0x00);
	assert_int_equal(r->data[13], 0x00);
}

static void test_no_sense_descriptor(void **state)
{
	struct tctx *t = *state;
	struct lf_result *r;

	r = tctx_run(t, cdb_request_sense(t->cdb, true, 252));
	assert_good(r);
	assert_int_equal(r->data_len, 8);
	assert_int_equal(r->data[0], 0x72);
	assert_int_equal(r->data[1], 0x00);
	assert_int_equal(r->data[7], 0);
}

static void test_truncation(void **state)
{
	struct tctx *t = *state;
	struct lf_result *r;

	r = tctx_run(t, cdb_request_sense(t->cdb, false, 4));
	assert_good(r);
	assert_int_equal(r->data_len, 4);
	r = tctx_run(t, cdb_request_sense(t->cdb, false, 0));
	assert_good(r);
	assert_int_equal(r->data_len, 0);
}

static void test_missing_lun(void **state)
{
	struct tctx *t = *state;
	struct lf_result *r;

	/* GOOD status; the sense data says LOGICAL UNIT NOT SUPPORTED. */
	cdb_request_sense(t->cdb, false, 252);
	r = tctx_run_lun(t, 77, 6, NULL, 0);
	assert_good(r);
	assert_int_equal(r->data_len, 18);
	assert_int_equal(r->data[0], 0x70);
	assert_int_equal(r->data[2], 0x05);
	assert_int_equal(r->data[12], 0x25);
	assert_int_equal(r->data[13], 0x00);
	cdb_request_sense(t->cdb, true, 252);
	r = tctx_run_lun(t, 77, 6, NULL, 0);
	assert_good(r);
	assert_int_equal(r->data[0], 0x72);
	assert_int_equal(r->data[1], 0x05);
	assert_int_equal(r->data[2], 0x25);
}

static void test_bad_fields(void **state)
{
	struct tctx *t = *state;
	struct lf_result *r;

	cdb_request_sense(t->cdb, false, 252);
	t->cdb[1] = 0x02; /* reserved */
	r = tctx_run(t, 6);
	assert_bad_cdb(r, 1, 1);
	cdb_request_sense(t->cdb, false, 252);
	t->cdb[2] = 0x80;
	r = tctx_run(t, 6);
	assert_bad_cdb(r, 2, 7);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_no_sense_fixed, tctx_setup, tctx_teardown),
		cmocka_unit_test_setup_teardown(test_no_sense_descriptor, tctx_setup,
						tctx_teardown),
		cmocka_unit_test_setup_teardown(test_truncation, tctx_setup, tctx_teardown),
		cmocka_unit_test_setup_teardown(test_missing_lun, tctx_setup, tctx_teardown),
		cmocka_unit_test_setup_teardown(test_bad_fields, tctx_setup, tctx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
