/* SPDX-License-Identifier: MIT */
/* SBC-4 §5.20 READ CAPACITY (10) and §5.21 READ CAPACITY (16). */
#include "test_util.h"

#include "core/scsi_spec.h"

static struct tctx *lun_of(uint32_t bs, uint64_t nblocks, uint8_t exp, uint32_t lun_flags,
			   uint32_t geo_flags)
{
	struct fake_backend_opts o;

	fake_backend_opts_init(&o);
	o.block_size = bs;
	o.num_blocks = nblocks;
	o.phys_exp = exp;
	o.store = false;
	o.geo_flags = geo_flags;
	if (lun_flags & SCSITGT_LUN_THIN)
		o.supports = 1u << SCSITGT_IO_UNMAP;
	return tctx_create(lun_flags, &o);
}

static void test_rc10(void **state)
{
	struct tctx *t = lun_of(512, 2048, 0, 0, 0);
	struct lf_result *r;

	(void)state;
	r = tctx_run(t, cdb_read_capacity10(t->cdb, 0, false));
	assert_good(r);
	assert_int_equal(r->data_len, 8);
	assert_int_equal(get_be32(&r->data[0]), 2047);
	assert_int_equal(get_be32(&r->data[4]), 512);
	tctx_destroy(t);

	t = lun_of(4096, 100, 0, 0, 0);
	r = tctx_run(t, cdb_read_capacity10(t->cdb, 0, false));
	assert_good(r);
	assert_int_equal(get_be32(&r->data[0]), 99);
	assert_int_equal(get_be32(&r->data[4]), 4096);
	tctx_destroy(t);
}

static void test_rc10_large(void **state)
{
	struct tctx *t;
	struct lf_result *r;

	(void)state;
	/* The last LBA FFFF_FFFEh still fits. */
	t = lun_of(512, 0xffffffffull, 0, 0, 0);
	r = tctx_run(t, cdb_read_capacity10(t->cdb, 0, false));
	assert_good(r);
	assert_int_equal(get_be32(&r->data[0]), 0xfffffffe);
	tctx_destroy(t);
	/* Beyond: FFFF_FFFFh sends the client to READ CAPACITY (16). */
	t = lun_of(512, 0x100000000ull, 0, 0, 0);
	r = tctx_run(t, cdb_read_capacity10(t->cdb, 0, false));
	assert_good(r);
	assert_int_equal(get_be32(&r->data[0]), 0xffffffff);
	r = tctx_run(t, cdb_read_capacity16(t->cdb, 32));
	assert_good(r);
	assert_true(get_be64(&r->data[0]) == 0xffffffffull);
	tctx_destroy(t);
	t = lun_of(512, 1ull << 40, 0, 0, 0);
	r = tctx_run(t, cdb_read_capacity16(t->cdb, 32));
	assert_good(r);
	assert_true(get_be64(&r->data[0]) == (1ull << 40) - 1);
	tctx_destroy(t);
}

static void test_rc10_pmi(void **state)
{
	struct tctx *t = lun_of(512, 2048, 0, 0, 0);
	struct lf_result *r;

	(void)state;
	/* An LBA without PMI is an invalid field (SBC-3). */
	r = tctx_run(t, cdb_read_capacity10(t->cdb, 5, false));
	assert_bad_cdb(r, 2, 7);
	r = tctx_run(t, cdb_read_capacity10(t->cdb, 5, true));
	assert_good(r);
	assert_int_equal(get_be32(&r->data[0]), 2047);
	/* Reserved and obsolete bits. */
	cdb_read_capacity10(t->cdb, 0, false);
	t->cdb[1] = 0x01; /* RELADR, obsolete */
	r = tctx_run(t, 10);
	assert_bad_cdb(r, 1, 0);
	cdb_read_capacity10(t->cdb, 0, false);
	t->cdb[8] = 0x02;
	r = tctx_run(t, 10);
	assert_bad_cdb(r, 8, 1);
	tctx_destroy(t);
}

static void test_rc16(void **state)
{
	struct tctx *t = lun_of(512, 4096, 3, 0, 0);
	struct lf_result *r;

	(void)state;
	r = tctx_run(t, cdb_read_capacity16(t->cdb, 32));
	assert_good(r);
	assert_int_equal(r->data_len, 32);
	assert_true(get_be64(&r->data[0]) == 4095);
	assert_int_equal(get_be32(&r->data[8]), 512);
	assert_int_equal(r->data[12], 0); /* no protection information */
	assert_int_equal(r->data[13], 3); /* 8 logical blocks per physical block */
	assert_int_equal(r->data[14], 0); /* LBPME 0, LBPRZ 0 */
	assert_int_equal(r->data[15], 0);
	/* Allocation length truncates. */
	r = tctx_run(t, cdb_read_capacity16(t->cdb, 12));
	assert_good(r);
	assert_int_equal(r->data_len, 12);
	r = tctx_run(t, cdb_read_capacity16(t->cdb, 0));
	assert_good(r);
	assert_int_equal(r->data_len, 0);
	r = tctx_run(t, cdb_read_capacity16(t->cdb, 1u << 30));
	assert_good(r);
	assert_int_equal(r->data_len, 32);
	/* LBA without PMI. */
	cdb_read_capacity16(t->cdb, 32);
	t->cdb[9] = 1;
	r = tctx_run(t, 16);
	assert_bad_cdb(r, 2, 7);
	t->cdb[14] = 0x01;
	r = tctx_run(t, 16);
	assert_good(r);
	tctx_destroy(t);
}

static void test_rc16_thin(void **state)
{
	struct tctx *t;
	struct lf_result *r;

	(void)state;
	t = lun_of(512, 4096, 0, SCSITGT_LUN_THIN, SCSITGT_GEOMETRY_LBPRZ);
	r = tctx_run(t, cdb_read_capacity16(t->cdb, 32));
	assert_good(r);
	assert_int_equal(r->data[14], 0xc0); /* LBPME, LBPRZ */
	tctx_destroy(t);
	t = lun_of(512, 4096, 0, SCSITGT_LUN_THIN, 0);
	r = tctx_run(t, cdb_read_capacity16(t->cdb, 32));
	assert_good(r);
	assert_int_equal(r->data[14], 0x80);
	tctx_destroy(t);
	/* LBPRZ describes unmapped blocks: a full LUN reports neither bit. */
	t = lun_of(512, 4096, 0, 0, SCSITGT_GEOMETRY_LBPRZ);
	r = tctx_run(t, cdb_read_capacity16(t->cdb, 32));
	assert_good(r);
	assert_int_equal(r->data[14], 0x00);
	tctx_destroy(t);
}

static void test_service_actions(void **state)
{
	struct tctx *t = lun_of(512, 2048, 0, 0, 0);
	struct lf_result *r;

	(void)state;
	/* An unsupported service action of SERVICE ACTION IN (16) points at its field. */
	cdb_read_capacity16(t->cdb, 32);
	t->cdb[1] = 0x11;
	r = tctx_run(t, 16);
	assert_bad_cdb(r, 1, 4);
	/* Reserved bits above the service action. */
	cdb_read_capacity16(t->cdb, 32);
	t->cdb[1] |= 0x20;
	r = tctx_run(t, 16);
	assert_bad_cdb(r, 1, 5);
	/* A CDB shorter than the command. */
	cdb_read_capacity16(t->cdb, 32);
	r = tctx_run(t, 10);
	assert_sense(r, 0x5, 0x20, 0x00);
	/* A missing LUN. */
	cdb_read_capacity10(t->cdb, 0, false);
	r = tctx_run_lun(t, 5, 10, NULL, 0);
	assert_sense(r, 0x5, 0x25, 0x00);
	tctx_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rc10),	  cmocka_unit_test(test_rc10_large),
		cmocka_unit_test(test_rc10_pmi),  cmocka_unit_test(test_rc16),
		cmocka_unit_test(test_rc16_thin), cmocka_unit_test(test_service_actions),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
