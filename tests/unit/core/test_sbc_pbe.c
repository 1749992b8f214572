/* SPDX-License-Identifier: MIT */
/*
 * The LUN option physical_block_exponent (include/libscsitgt/lun.h): READ CAPACITY (16)
 * LOGICAL BLOCKS PER PHYSICAL BLOCK EXPONENT, the VPD B0 fields derived from it, and WRITE
 * ATOMIC (16) restricted to whole physical blocks (SBC-4 §5.49, §6.6.3).
 */
#include <errno.h>
#include <string.h>

#include "test_util.h"

#include "core/cdb.h"
#include "core/core.h"
#include "core/scsi_spec.h"

/* A LUN 0 on a fake backend with @pbe in the LUN options, the backend reporting @backend_pbe. */
static int lun_with_pbe(struct tctx *t, uint8_t pbe, uint8_t backend_pbe)
{
	struct fake_backend_opts o;
	struct scsitgt_lun_opts lo;
	struct fake_backend *fb;
	int rc;

	fake_backend_opts_init(&o);
	o.phys_exp = backend_pbe;
	assert_int_equal(fake_backend_create(&fb, &o), 0);
	scsitgt_lun_opts_init(&lo, sizeof(lo));
	lo.backend = &fb->ops;
	lo.backend_ctx = fb;
	lo.physical_block_exponent = pbe;
	rc = scsitgt_lun_create(&t->lun, t->lf->tgt, &lo);
	if (rc < 0) {
		fb->ops.close(fb, NULL, NULL);
		return rc;
	}
	t->fb = fb;
	return 0;
}

static struct tctx *tctx_bare(void)
{
	struct tctx *t = calloc(1, sizeof(*t));

	assert_non_null(t);
	assert_int_equal(loop_fabric_create(&t->lf, NULL), 0);
	return t;
}

static void test_option_checked(void **state)
{
	struct tctx *t = tctx_bare();

	(void)state;
	/* One physical block must fit one WRITE ATOMIC (16): at most 2^8 blocks. */
	assert_int_equal(lun_with_pbe(t, SCSITGT__LUN_MAX_PBE + 1, 0), -EINVAL);
	assert_int_equal(lun_with_pbe(t, 0xff, 0), -EINVAL);
	assert_int_equal(lun_with_pbe(t, SCSITGT__LUN_MAX_PBE, 0), 0);
	tctx_destroy(t);
}

static void test_capacity_and_limits(void **state)
{
	struct tctx *t = tctx_bare();
	struct lf_result *r;

	(void)state;
	/* The option wins over the backend's answer. */
	assert_int_equal(lun_with_pbe(t, 3, 1), 0);
	r = tctx_run(t, cdb_read_capacity16(t->cdb, 32));
	assert_good(r);
	assert_int_equal(r->data[13], 3); /* LOGICAL BLOCKS PER PHYSICAL BLOCK EXPONENT */
	assert_int_equal(get_be16(&r->data[14]) & 0x3fff, 0); /* LOWEST ALIGNED LBA */
	r = tctx_run(t, cdb_inquiry(t->cdb, true, 0xb0, 255));
	assert_good(r);
	assert_int_equal(get_be16(&r->data[6]), 8);	 /* OPTIMAL TRANSFER LENGTH GRANULARITY */
	assert_int_equal(get_be32(&r->data[48]), 8);	 /* ATOMIC ALIGNMENT */
	assert_int_equal(get_be32(&r->data[52]), 8);	 /* ATOMIC TRANSFER LENGTH GRANULARITY */
	assert_int_equal(get_be32(&r->data[44]) % 8, 0); /* MAXIMUM ATOMIC: whole blocks */
	tctx_destroy(t);

	/* 0 keeps the backend's exponent. */
	t = tctx_bare();
	assert_int_equal(lun_with_pbe(t, 0, 2), 0);
	r = tctx_run(t, cdb_read_capacity16(t->cdb, 32));
	assert_int_equal(r->data[13], 2);
	r = tctx_run(t, cdb_inquiry(t->cdb, true, 0xb0, 255));
	assert_int_equal(get_be32(&r->data[48]), 4);
	tctx_destroy(t);
}

static size_t cdb_write_atomic(uint8_t *cdb, uint64_t lba, uint16_t n)
{
	memset(cdb, 0, CDB_BUF);
	cdb[0] = SBC_WRITE_ATOMIC_16;
	put_be64(&cdb[2], lba);
	put_be16(&cdb[12], n);
	return 16;
}

static void test_atomic_alignment(void **state)
{
	struct tctx *t = tctx_bare();
	uint8_t data[16 * 512];
	struct lf_result *r;

	(void)state;
	memset(data, 0x77, sizeof(data));
	assert_int_equal(lun_with_pbe(t, 3, 0), 0);
	/* Whole, aligned physical blocks. */
	assert_good(tctx_run_lun(t, 0, cdb_write_atomic(t->cdb, 8, 16), data, sizeof(data)));
	assert_good(tctx_run_lun(t, 0, cdb_write_atomic(t->cdb, 0, 8), data, 8 * 512));
	/* SBC-4 §5.49: an LBA off ATOMIC ALIGNMENT, a length off the granularity. */
	r = tctx_run_lun(t, 0, cdb_write_atomic(t->cdb, 1, 8), data, 8 * 512);
	assert_bad_cdb(r, 2, 7);
	r = tctx_run_lun(t, 0, cdb_write_atomic(t->cdb, 4, 8), data, 8 * 512);
	assert_bad_cdb(r, 2, 7);
	r = tctx_run_lun(t, 0, cdb_write_atomic(t->cdb, 0, 1), data, 512);
	assert_bad_cdb(r, 12, 7);
	r = tctx_run_lun(t, 0, cdb_write_atomic(t->cdb, 0, 12), data, 12 * 512);
	assert_bad_cdb(r, 12, 7);
	/* Zero blocks write nothing and are no misalignment. */
	assert_good(tctx_run(t, cdb_write_atomic(t->cdb, 0, 0)));
	tctx_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_option_checked),
		cmocka_unit_test(test_capacity_and_limits),
		cmocka_unit_test(test_atomic_alignment),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
