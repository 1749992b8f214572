/* SPDX-License-Identifier: MIT */
/* SBC-4 §5.17 GET LBA STATUS and §5.11/§5.12 PRE-FETCH (10)/(16). */
#include <string.h>

#include "test_util.h"

#include "core/scsi_spec.h"

#define BS 512u

static size_t cdb_gls(uint8_t *cdb, uint64_t lba, uint32_t alloc)
{
	memset(cdb, 0, CDB_BUF);
	cdb[0] = SBC_SERVICE_ACTION_IN_16;
	cdb[1] = SBC_SAI_GET_LBA_STATUS;
	put_be64(&cdb[2], lba);
	put_be32(&cdb[10], alloc);
	return 16;
}

static size_t cdb_prefetch(uint8_t *cdb, bool sixteen, uint64_t lba, uint32_t n, uint8_t byte1)
{
	memset(cdb, 0, CDB_BUF);
	cdb[1] = byte1;
	if (!sixteen) {
		cdb[0] = SBC_PRE_FETCH_10;
		put_be32(&cdb[2], (uint32_t)lba);
		put_be16(&cdb[7], (uint16_t)n);
		return 10;
	}
	cdb[0] = SBC_PRE_FETCH_16;
	put_be64(&cdb[2], lba);
	put_be32(&cdb[10], n);
	return 16;
}

static struct tctx *thin_lun(bool thin, bool lba_status)
{
	struct fake_backend_opts o;

	fake_backend_opts_init(&o);
	o.supports = 1u << SCSITGT_IO_UNMAP;
	o.geo_flags = SCSITGT_GEOMETRY_LBPRZ;
	o.lba_status = lba_status;
	return tctx_create(thin ? SCSITGT_LUN_THIN : 0, &o);
}

static void check_desc(const uint8_t *d, uint64_t lba, uint32_t n, uint8_t status)
{
	assert_int_equal(get_be64(&d[0]), lba);
	assert_int_equal(get_be32(&d[8]), n);
	assert_int_equal(d[12] & 0x0f, status);
}

static void test_mapped_and_deallocated(void **state)
{
	struct tctx *t = thin_lun(true, true);
	uint8_t data[16 * BS];
	struct lf_result *r;

	(void)state;
	memset(data, 1, sizeof(data));
	/* Blocks 100..115 written, the rest never. */
	assert_good(
		tctx_run_lun(t, 0, cdb_rw(t->cdb, SBC_WRITE_16, 100, 16, 0), data, sizeof(data)));
	r = tctx_run(t, cdb_gls(t->cdb, 0, 1024));
	assert_good(r);
	assert_int_equal(get_be32(&r->data[0]), 4 + 3 * 16);
	assert_int_equal(r->data_len, 8 + 3 * 16);
	check_desc(&r->data[8], 0, 100, 1);
	check_desc(&r->data[24], 100, 16, 0);
	check_desc(&r->data[40], 116, 2048 - 116, 1);
	/* From inside the mapped run; an allocation length for one descriptor. */
	r = tctx_run(t, cdb_gls(t->cdb, 104, 24));
	assert_good(r);
	assert_int_equal(r->data_len, 24);
	check_desc(&r->data[8], 104, 12, 0);
	/* Unmap part of it: reported deallocated. */
	{
		uint8_t list[24] = { 0 };
		uint8_t cdb[10] = { SBC_UNMAP, 0, 0, 0, 0, 0, 0, 0, 24, 0 };

		put_be16(&list[0], 22);
		put_be16(&list[2], 16);
		put_be64(&list[8], 108);
		put_be32(&list[16], 4);
		memcpy(t->cdb, cdb, sizeof(cdb));
		assert_good(tctx_run_lun(t, 0, 10, list, sizeof(list)));
	}
	r = tctx_run(t, cdb_gls(t->cdb, 100, 1024));
	check_desc(&r->data[8], 100, 8, 0);
	check_desc(&r->data[24], 108, 4, 1);
	check_desc(&r->data[40], 112, 4, 0);
	/* A short allocation length truncates but PARAMETER DATA LENGTH tells the whole. */
	r = tctx_run(t, cdb_gls(t->cdb, 100, 8));
	assert_good(r);
	assert_int_equal(r->data_len, 8);
	tctx_destroy(t);
}

static void test_full_lun_all_mapped(void **state)
{
	struct tctx *t;
	struct lf_result *r;

	(void)state;
	/* A fully provisioned LUN maps every block (SBC-4 §4.7.2), whatever the backend says. */
	t = thin_lun(false, true);
	r = tctx_run(t, cdb_gls(t->cdb, 10, 100));
	assert_good(r);
	assert_int_equal(get_be32(&r->data[0]), 20);
	check_desc(&r->data[8], 10, 2038, 0);
	tctx_destroy(t);
	/* A thin LUN whose backend has no get_lba_status: mapped too. */
	t = thin_lun(true, false);
	r = tctx_run(t, cdb_gls(t->cdb, 0, 100));
	check_desc(&r->data[8], 0, 2048, 0);
	tctx_destroy(t);
}

static void test_gls_bad_fields(void **state)
{
	struct tctx *t = thin_lun(true, true);
	struct lf_result *r;

	(void)state;
	/* Past the end: LBA OUT OF RANGE; the last block is fine. */
	r = tctx_run(t, cdb_gls(t->cdb, 2048, 100));
	assert_sense(r, SENSE_ILLEGAL_REQUEST, 0x21, 0x00);
	r = tctx_run(t, cdb_gls(t->cdb, UINT64_MAX, 100));
	assert_sense(r, SENSE_ILLEGAL_REQUEST, 0x21, 0x00);
	r = tctx_run(t, cdb_gls(t->cdb, 2047, 100));
	assert_good(r);
	check_desc(&r->data[8], 2047, 1, 1);
	/* Byte 14 is refused. */
	cdb_gls(t->cdb, 0, 100);
	t->cdb[14] = 0x01;
	r = tctx_run(t, 16);
	assert_bad_cdb(r, 14, 0);
	/* Zero allocation length: nothing transferred, GOOD. */
	r = tctx_run(t, cdb_gls(t->cdb, 0, 0));
	assert_good(r);
	assert_int_equal(r->data_len, 0);
	tctx_destroy(t);
}

static void test_prefetch(void **state)
{
	struct tctx *t = thin_lun(false, false);
	struct lf_result *r;

	(void)state;
	for (int sixteen = 0; sixteen < 2; sixteen++) {
		/* No cache to load: GOOD, with or without IMMED, and no backend io. */
		r = tctx_run(t, cdb_prefetch(t->cdb, sixteen, 0, 16, 0));
		assert_good(r);
		r = tctx_run(t, cdb_prefetch(t->cdb, sixteen, 100, 0, 0x02));
		assert_good(r);
		r = tctx_run(t, cdb_prefetch(t->cdb, sixteen, 2047, 2, 0));
		assert_sense(r, SENSE_ILLEGAL_REQUEST, 0x21, 0x00);
		r = tctx_run(t, cdb_prefetch(t->cdb, sixteen, 2048, 0, 0));
		assert_sense(r, SENSE_ILLEGAL_REQUEST, 0x21, 0x00);
		/* Obsolete RELADR / reserved bits of byte 1. */
		r = tctx_run(t, cdb_prefetch(t->cdb, sixteen, 0, 1, 0x01));
		assert_bad_cdb(r, 1, 0);
		r = tctx_run(t, cdb_prefetch(t->cdb, sixteen, 0, 1, 0x10));
		assert_bad_cdb(r, 1, 4);
	}
	assert_int_equal(t->fb->nrecs, 0);
	tctx_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mapped_and_deallocated),
		cmocka_unit_test(test_full_lun_all_mapped),
		cmocka_unit_test(test_gls_bad_fields),
		cmocka_unit_test(test_prefetch),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
