/* SPDX-License-Identifier: MIT */
/* SBC-4 §5.18/§5.19 READ DEFECT DATA and §5.3 FORMAT UNIT. */
#include <string.h>

#include "test_util.h"

#include "core/scsi_spec.h"

static size_t cdb_rdd10(uint8_t *cdb, uint8_t b2, uint16_t alloc)
{
	memset(cdb, 0, CDB_BUF);
	cdb[0] = SBC_READ_DEFECT_DATA_10;
	cdb[2] = b2;
	put_be16(&cdb[7], alloc);
	return 10;
}

static size_t cdb_rdd12(uint8_t *cdb, uint8_t b1, uint32_t alloc)
{
	memset(cdb, 0, CDB_BUF);
	cdb[0] = SBC_READ_DEFECT_DATA_12;
	cdb[1] = b1;
	put_be32(&cdb[6], alloc);
	return 12;
}

static size_t cdb_format(uint8_t *cdb, uint8_t b1)
{
	memset(cdb, 0, CDB_BUF);
	cdb[0] = SBC_FORMAT_UNIT;
	cdb[1] = b1;
	return 6;
}

static void test_read_defect(void **state)
{
	struct tctx *t = tctx_create(0, NULL);
	struct lf_result *r;

	(void)state;
	/* Both lists requested, long block format: empty, both valid, format echoed. */
	r = tctx_run(t, cdb_rdd10(t->cdb, 0x18 | 0x3, 255));
	assert_good(r);
	assert_int_equal(r->data_len, 4);
	assert_int_equal(r->data[1], 0x1b);
	assert_int_equal(get_be16(&r->data[2]), 0);
	r = tctx_run(t, cdb_rdd12(t->cdb, 0x08 | 0x5, 255));
	assert_good(r);
	assert_int_equal(r->data_len, 8);
	assert_int_equal(r->data[1], 0x0d);
	assert_int_equal(get_be32(&r->data[4]), 0);
	/* Truncation to the allocation length. */
	r = tctx_run(t, cdb_rdd12(t->cdb, 0, 2));
	assert_good(r);
	assert_int_equal(r->data_len, 2);
	/* The reserved format 111b, reserved bits. */
	r = tctx_run(t, cdb_rdd10(t->cdb, 0x07, 255));
	assert_bad_cdb(r, 2, 2);
	r = tctx_run(t, cdb_rdd12(t->cdb, 0x07, 255));
	assert_bad_cdb(r, 1, 2);
	r = tctx_run(t, cdb_rdd10(t->cdb, 0x20, 255));
	assert_bad_cdb(r, 2, 5);
	tctx_destroy(t);
}

static void test_format_unit(void **state)
{
	struct tctx *t = tctx_create(0, NULL);
	uint8_t hdr[8];
	struct lf_result *r;

	(void)state;
	/* FMTDATA 0: GOOD, no io, data kept. */
	t->fb->data[0] = 0x42;
	r = tctx_run(t, cdb_format(t->cdb, 0));
	assert_good(r);
	assert_int_equal(t->fb->nrecs, 0);
	assert_int_equal(t->fb->data[0], 0x42);
	/* FMTPINFO (protection information) refused at its first bit; LONGLIST and DEFECT
	 * LIST FORMAT without FMTDATA. */
	r = tctx_run(t, cdb_format(t->cdb, 0x40));
	assert_bad_cdb(r, 1, 7);
	r = tctx_run(t, cdb_format(t->cdb, 0x20));
	assert_bad_cdb(r, 1, 5);
	r = tctx_run(t, cdb_format(t->cdb, 0x03));
	assert_bad_cdb(r, 1, 2);
	/* FMTDATA with a short header: FOV with DCRT is fine, IMMED too. */
	memset(hdr, 0, sizeof(hdr));
	hdr[1] = 0x80 | 0x20 | 0x02;
	r = tctx_run_lun(t, 0, cdb_format(t->cdb, 0x10), hdr, 4);
	assert_good(r);
	/* Option bits without FOV; IP; a defect list; PROTECTION FIELD USAGE. */
	hdr[1] = 0x20;
	r = tctx_run_lun(t, 0, cdb_format(t->cdb, 0x10), hdr, 4);
	assert_sense(r, SENSE_ILLEGAL_REQUEST, 0x26, 0x00);
	assert_sks(r, 0, 1, 6);
	hdr[1] = 0x88;
	r = tctx_run_lun(t, 0, cdb_format(t->cdb, 0x10), hdr, 4);
	assert_sks(r, 0, 1, 3);
	hdr[1] = 0;
	put_be16(&hdr[2], 8);
	r = tctx_run_lun(t, 0, cdb_format(t->cdb, 0x10), hdr, 4);
	assert_sks(r, 0, 2, -1);
	memset(hdr, 0, sizeof(hdr));
	hdr[0] = 0x01;
	r = tctx_run_lun(t, 0, cdb_format(t->cdb, 0x10), hdr, 4);
	assert_sks(r, 0, 0, 2);
	/* The long header: DEFECT LIST LENGTH in bytes 4..7. */
	memset(hdr, 0, sizeof(hdr));
	r = tctx_run_lun(t, 0, cdb_format(t->cdb, 0x30), hdr, 8);
	assert_good(r);
	put_be32(&hdr[4], 8);
	r = tctx_run_lun(t, 0, cdb_format(t->cdb, 0x30), hdr, 8);
	assert_sks(r, 0, 4, -1);
	tctx_destroy(t);

	/* A read-only LUN refuses it. */
	t = tctx_create(SCSITGT_LUN_READ_ONLY, NULL);
	r = tctx_run(t, cdb_format(t->cdb, 0));
	assert_sense(r, SENSE_DATA_PROTECT, 0x27, 0x00);
	tctx_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read_defect),
		cmocka_unit_test(test_format_unit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
