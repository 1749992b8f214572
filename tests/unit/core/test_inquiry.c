/* SPDX-License-Identifier: MIT */
/* Standard INQUIRY data (SPC-5 §6.7.2) and the INQUIRY CDB checks. */
#include <string.h>

#include "test_util.h"

#include "core/scsi_spec.h"

static void test_standard_data(void **state)
{
	struct tctx *t = *state;
	struct lf_result *r;
	const uint8_t *d;

	r = tctx_run(t, cdb_inquiry(t->cdb, false, 0, 255));
	assert_good(r);
	assert_int_equal(r->data_len, 96);
	d = r->data;
	assert_int_equal(d[0], 0x00);	/* PQ 000b, PDT 0 direct access block device */
	assert_int_equal(d[1], 0x00);	/* RMB 0 */
	assert_int_equal(d[2], 0x07);	/* VERSION: SPC-5 */
	assert_int_equal(d[3], 0x02);	/* NORMACA 0, HISUP 0, RESPONSE DATA FORMAT 2 */
	assert_int_equal(d[4], 96 - 5); /* ADDITIONAL LENGTH */
	assert_int_equal(d[5], 0x08);	/* TPGS 0, PROTECT 0, 3PC 1 (EXTENDED COPY) */
	assert_int_equal(d[7], 0x02);	/* CMDQUE */
	assert_memory_equal(&d[8], "LIBSCSI ", 8);
	assert_memory_equal(&d[16], "fake            ", 16);
	assert_memory_equal(&d[32], "0.1 ", 4);
	/* VERSION DESCRIPTORS: SAM-5, SPC-5, SBC-4, SBC-3, iSCSI, then zero. */
	assert_int_equal(get_be16(&d[58]), 0x00a0);
	assert_int_equal(get_be16(&d[60]), 0x05c0);
	assert_int_equal(get_be16(&d[62]), 0x0600);
	assert_int_equal(get_be16(&d[64]), 0x04c0);
	assert_int_equal(get_be16(&d[66]), 0x0960);
	assert_int_equal(get_be16(&d[68]), 0x0000);
}

static void test_removable(void **state)
{
	struct tctx *t = tctx_create(SCSITGT_LUN_REMOVABLE, NULL);
	struct lf_result *r;

	(void)state;
	r = tctx_run(t, cdb_inquiry(t->cdb, false, 0, 96));
	assert_good(r);
	assert_int_equal(r->data[1], 0x80);
	tctx_destroy(t);
}

static void test_allocation_length(void **state)
{
	struct tctx *t = *state;
	struct lf_result *r;

	/* SPC-5 §4.2.5.6: the data is truncated to the ALLOCATION LENGTH, without error. */
	r = tctx_run(t, cdb_inquiry(t->cdb, false, 0, 36));
	assert_good(r);
	assert_int_equal(r->data_len, 36);
	assert_int_equal(r->data[4], 91); /* still the full length */
	r = tctx_run(t, cdb_inquiry(t->cdb, false, 0, 5));
	assert_good(r);
	assert_int_equal(r->data_len, 5);
	r = tctx_run(t, cdb_inquiry(t->cdb, false, 0, 0));
	assert_good(r);
	assert_int_equal(r->data_len, 0);
	/* A larger allocation length returns only what there is. */
	r = tctx_run(t, cdb_inquiry(t->cdb, false, 0, 4096));
	assert_good(r);
	assert_int_equal(r->data_len, 96);
}

static void test_page_code_without_evpd(void **state)
{
	struct tctx *t = *state;
	struct lf_result *r;

	r = tctx_run(t, cdb_inquiry(t->cdb, false, 0x80, 255));
	assert_bad_cdb(r, 2, 7);
}

static void test_cmddt(void **state)
{
	struct tctx *t = *state;
	struct lf_result *r;

	cdb_inquiry(t->cdb, false, 0, 255);
	t->cdb[1] = 0x02; /* CMDDT, obsolete */
	r = tctx_run(t, 6);
	assert_bad_cdb(r, 1, 1);
}

static void test_control_byte(void **state)
{
	struct tctx *t = *state;
	struct lf_result *r;

	cdb_inquiry(t->cdb, false, 0, 255);
	t->cdb[5] = 0x04; /* NACA: no ACA support */
	r = tctx_run(t, 6);
	assert_bad_cdb(r, 5, 2);
}

static void test_missing_lun(void **state)
{
	struct tctx *t = *state;
	struct lf_result *r;

	/* SPC-5 §6.7.2: PQ 011b, PDT 1Fh, GOOD status, no sense. */
	cdb_inquiry(t->cdb, false, 0, 96);
	r = tctx_run_lun(t, 9, 6, NULL, 0);
	assert_good(r);
	assert_int_equal(r->data_len, 96);
	assert_int_equal(r->data[0], 0x7f);
	assert_int_equal(r->data[2], 0x07);
	/* Bad fields are still bad on a missing LUN. */
	cdb_inquiry(t->cdb, false, 0x83, 96);
	r = tctx_run_lun(t, 9, 6, NULL, 0);
	assert_bad_cdb(r, 2, 7);
	/* VPD pages need a logical unit. */
	cdb_inquiry(t->cdb, true, 0x00, 96);
	r = tctx_run_lun(t, 9, 6, NULL, 0);
	assert_sense(r, 0x5, 0x25, 0x00);
}

static void test_descriptor_sense(void **state)
{
	struct tctx *t = *state;
	struct lf_result *r;

	/* D_SENSE selects descriptor-format sense data (SPC-5 §7.5.10). */
	t->lun->mode.d_sense = true;
	r = tctx_run(t, cdb_inquiry(t->cdb, false, 0x01, 255));
	assert_int_equal(r->status, 0x02);
	assert_int_equal(r->sense_len, 16);
	assert_int_equal(r->sense[0], 0x72);
	assert_int_equal(r->sense[1], 0x05);
	assert_int_equal(r->sense[2], 0x24);
	assert_int_equal(r->sense[3], 0x00);
	assert_int_equal(r->sense[7], 8);
	/* The sense key specific descriptor: field pointer byte 2, bit 7, in the CDB. */
	assert_int_equal(r->sense[8], 0x02);
	assert_int_equal(r->sense[9], 0x06);
	assert_int_equal(r->sense[12], 0x80 | 0x40 | 0x08 | 7);
	assert_int_equal(get_be16(&r->sense[13]), 2);
	t->lun->mode.d_sense = false;
}

/* SCSITGT_LUN_CLAIM_SPC4: VERSION 06h and the SPC-4 version descriptor. */
static void test_claim_spc4(void **state)
{
	struct tctx *t = tctx_create(SCSITGT_LUN_CLAIM_SPC4, NULL);
	struct lf_result *r;

	(void)state;
	r = tctx_run(t, cdb_inquiry(t->cdb, false, 0, 255));
	assert_good(r);
	assert_int_equal(r->data[2], 0x06);
	assert_int_equal(get_be16(&r->data[60]), 0x0460);
	/* A 16-bit allocation length: the same data as with 255. */
	r = tctx_run(t, cdb_inquiry(t->cdb, false, 0, 256));
	assert_good(r);
	assert_int_equal(r->data_len, 96);
	tctx_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_claim_spc4),
		cmocka_unit_test_setup_teardown(test_standard_data, tctx_setup, tctx_teardown),
		cmocka_unit_test(test_removable),
		cmocka_unit_test_setup_teardown(test_allocation_length, tctx_setup, tctx_teardown),
		cmocka_unit_test_setup_teardown(test_page_code_without_evpd, tctx_setup,
						tctx_teardown),
		cmocka_unit_test_setup_teardown(test_cmddt, tctx_setup, tctx_teardown),
		cmocka_unit_test_setup_teardown(test_control_byte, tctx_setup, tctx_teardown),
		cmocka_unit_test_setup_teardown(test_missing_lun, tctx_setup, tctx_teardown),
		cmocka_unit_test_setup_teardown(test_descriptor_sense, tctx_setup, tctx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
