/* SPDX-License-Identifier: MIT */
/* SPC-5 §6.33 REPORT LUNS. */
#include "test_util.h"

static const uint64_t ids[] = { 0, 1, 7, 255, 256, 1000, 16383 };
#define NIDS (sizeof(ids) / sizeof(ids[0]))

static int setup(void **state)
{
	struct tctx *t = tctx_create(0, NULL);
	struct fake_backend_opts o;

	fake_backend_opts_init(&o);
	o.store = false;
	/* Created out of order: the report is sorted by LUN. */
	for (size_t i = NIDS; i-- > 1;)
		assert_int_equal(fake_backend_lun_create(NULL, NULL, t->lf->tgt, ids[i], 0, &o), 0);
	*state = t;
	return 0;
}

static void test_all(void **state)
{
	struct tctx *t = *state;
	struct lf_result *r;

	r = tctx_run(t, cdb_report_luns(t->cdb, 0x00, 4096));
	assert_good(r);
	assert_int_equal(r->data_len, 8 + 8 * NIDS);
	assert_int_equal(get_be32(&r->data[0]), 8 * NIDS);
	assert_int_equal(get_be32(&r->data[4]), 0);
	for (size_t i = 0; i < NIDS; i++) {
		const uint8_t *l = &r->data[8 + 8 * i];

		assert_true(scsitgt__lun_decode(l) == ids[i]);
		if (ids[i] < 256) {
			/* Peripheral device addressing. */
			assert_int_equal(l[0], 0);
			assert_int_equal(l[1], ids[i]);
		} else {
			/* Flat space addressing (SAM-5 §4.7.7.3). */
			assert_int_equal(l[0] >> 6, 1);
			assert_int_equal(get_be16(l) & 0x3fff, ids[i]);
		}
		for (int b = 2; b < 8; b++)
			assert_int_equal(l[b], 0);
	}
}

static void test_select_report(void **state)
{
	struct tctx *t = *state;
	struct lf_result *r;

	/* 01h: well known LUNs only, and we have none. */
	r = tctx_run(t, cdb_report_luns(t->cdb, 0x01, 4096));
	assert_good(r);
	assert_int_equal(r->data_len, 8);
	assert_int_equal(get_be32(&r->data[0]), 0);
	/* 02h: all LUNs. */
	r = tctx_run(t, cdb_report_luns(t->cdb, 0x02, 4096));
	assert_good(r);
	assert_int_equal(get_be32(&r->data[0]), 8 * NIDS);
	/* 10h..12h: administrative LUN views; with no conglomerate they equal 00h..02h. */
	r = tctx_run(t, cdb_report_luns(t->cdb, 0x10, 4096));
	assert_good(r);
	assert_int_equal(get_be32(&r->data[0]), 8 * NIDS);
	r = tctx_run(t, cdb_report_luns(t->cdb, 0x11, 4096));
	assert_good(r);
	assert_int_equal(get_be32(&r->data[0]), 0);
	/* Reserved values. */
	r = tctx_run(t, cdb_report_luns(t->cdb, 0x03, 4096));
	assert_bad_cdb(r, 2, 7);
	r = tctx_run(t, cdb_report_luns(t->cdb, 0xff, 4096));
	assert_bad_cdb(r, 2, 7);
}

static void test_allocation_length(void **state)
{
	struct tctx *t = *state;
	struct lf_result *r;

	/* SPC-5 §6.33: an ALLOCATION LENGTH below 16 is an invalid field. */
	r = tctx_run(t, cdb_report_luns(t->cdb, 0x00, 15));
	assert_sense(r, 0x5, 0x24, 0x00);
	assert_sks(r, 1, 6, -1);
	r = tctx_run(t, cdb_report_luns(t->cdb, 0x00, 0));
	assert_sense(r, 0x5, 0x24, 0x00);
	/* 16 bytes: the header and the first LUN; the LUN LIST LENGTH still counts all. */
	r = tctx_run(t, cdb_report_luns(t->cdb, 0x00, 16));
	assert_good(r);
	assert_int_equal(r->data_len, 16);
	assert_int_equal(get_be32(&r->data[0]), 8 * NIDS);
	/* Not a multiple of 8 is fine too. */
	r = tctx_run(t, cdb_report_luns(t->cdb, 0x00, 21));
	assert_good(r);
	assert_int_equal(r->data_len, 21);
}

static void test_missing_lun_and_reserved(void **state)
{
	struct tctx *t = *state;
	struct lf_result *r;

	/* REPORT LUNS works through any LUN, existing or not. */
	cdb_report_luns(t->cdb, 0x00, 4096);
	r = tctx_run_lun(t, 4000, 12, NULL, 0);
	assert_good(r);
	assert_int_equal(get_be32(&r->data[0]), 8 * NIDS);
	/* Reserved byte 3. */
	cdb_report_luns(t->cdb, 0x00, 4096);
	t->cdb[3] = 0x10;
	r = tctx_run(t, 12);
	assert_bad_cdb(r, 3, 4);
}

static void lun_gone(void *arg, int status)
{
	assert_int_equal(status, 0);
	*(bool *)arg = true;
}

static void test_lun_removed(void **state)
{
	struct tctx *t = *state;
	struct scsitgt_lun *lun = scsitgt__target_find_lun(t->lf->tgt, 1000);
	bool gone = false;
	struct lf_result *r;

	assert_non_null(lun);
	scsitgt_lun_destroy(lun, lun_gone, &gone);
	r = tctx_run(t, cdb_report_luns(t->cdb, 0x00, 4096));
	assert_good(r);
	assert_int_equal(get_be32(&r->data[0]), 8 * (NIDS - 1));
	/* Commands to the removed LUN now fail with LOGICAL UNIT NOT SUPPORTED. */
	cdb_tur(t->cdb);
	r = tctx_run_lun(t, 1000, 6, NULL, 0);
	assert_sense(r, 0x5, 0x25, 0x00);
	loop_fabric_run_until(t->lf, &gone);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_all, setup, tctx_teardown),
		cmocka_unit_test_setup_teardown(test_select_report, setup, tctx_teardown),
		cmocka_unit_test_setup_teardown(test_allocation_length, setup, tctx_teardown),
		cmocka_unit_test_setup_teardown(test_missing_lun_and_reserved, setup,
						tctx_teardown),
		cmocka_unit_test_setup_teardown(test_lun_removed, setup, tctx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
