/* SPDX-License-Identifier: MIT */
/* SBC-4 §5.28/§5.29 SYNCHRONIZE CACHE (10)/(16). */
#include <errno.h>

#include "test_util.h"

#include "core/scsi_spec.h"

static struct tctx *cached(uint32_t lun_flags, uint32_t supports)
{
	struct fake_backend_opts o;

	fake_backend_opts_init(&o);
	o.geo_flags = SCSITGT_GEOMETRY_WRITE_CACHE;
	o.supports = supports;
	return tctx_create(lun_flags, &o);
}

static void test_flush(void **state)
{
	struct tctx *t = cached(SCSITGT_LUN_WRITE_CACHE, 1u << SCSITGT_IO_FLUSH);
	const struct fake_io_rec *rec;
	struct lf_result *r;

	(void)state;
	r = tctx_run(t, cdb_sync_cache10(t->cdb, 16, 32, false));
	assert_good(r);
	rec = fake_backend_last(t->fb);
	assert_non_null(rec);
	assert_int_equal(rec->type, SCSITGT_IO_FLUSH);
	assert_int_equal(rec->lba, 16);
	assert_int_equal(rec->num_blocks, 32);
	assert_int_equal(rec->iovcnt, 0);
	/* (16), whole medium from LBA 0, IMMED accepted. */
	r = tctx_run(t, cdb_sync_cache16(t->cdb, 0, 0, true));
	assert_good(r);
	rec = fake_backend_last(t->fb);
	assert_int_equal(rec->type, SCSITGT_IO_FLUSH);
	assert_int_equal(rec->lba, 0);
	assert_int_equal(rec->num_blocks, 0);
	assert_int_equal(t->fb->nrecs, 2);
	/* A failing flush. */
	fake_backend_fail_next(t->fb, -EIO, 1);
	r = tctx_run(t, cdb_sync_cache10(t->cdb, 0, 0, false));
	assert_sense(r, 0x3, 0x0c, 0x00);
	tctx_destroy(t);
}

static void test_no_flush_needed(void **state)
{
	struct tctx *t;
	struct lf_result *r;

	(void)state;
	/* WCE off: writes are already durable. */
	t = cached(0, 1u << SCSITGT_IO_FLUSH);
	assert_false(t->lun->mode.wce);
	r = tctx_run(t, cdb_sync_cache10(t->cdb, 0, 0, false));
	assert_good(r);
	assert_int_equal(t->fb->nrecs, 0);
	tctx_destroy(t);
	/* No FLUSH in the backend: a no-op. */
	t = cached(SCSITGT_LUN_WRITE_CACHE, 0);
	r = tctx_run(t, cdb_sync_cache16(t->cdb, 0, 0, false));
	assert_good(r);
	assert_int_equal(t->fb->nrecs, 0);
	tctx_destroy(t);
	/* No cache at all. */
	t = tctx_create(SCSITGT_LUN_WRITE_CACHE, NULL);
	assert_false(t->lun->mode.wce);
	r = tctx_run(t, cdb_sync_cache16(t->cdb, 0, 0, false));
	assert_good(r);
	assert_int_equal(t->fb->nrecs, 0);
	tctx_destroy(t);
}

static void test_range_and_fields(void **state)
{
	struct tctx *t = cached(SCSITGT_LUN_WRITE_CACHE, 1u << SCSITGT_IO_FLUSH);
	struct lf_result *r;

	(void)state;
	r = tctx_run(t, cdb_sync_cache10(t->cdb, 2048, 0, false));
	assert_sense(r, 0x5, 0x21, 0x00);
	r = tctx_run(t, cdb_sync_cache10(t->cdb, 2000, 49, false));
	assert_sense(r, 0x5, 0x21, 0x00);
	r = tctx_run(t, cdb_sync_cache16(t->cdb, UINT64_MAX, 1, false));
	assert_sense(r, 0x5, 0x21, 0x00);
	r = tctx_run(t, cdb_sync_cache10(t->cdb, 2047, 1, false));
	assert_good(r);
	/* The obsolete SYNC_NV is ignored, the obsolete RELADR refused. */
	cdb_sync_cache10(t->cdb, 0, 0, false);
	t->cdb[1] = 0x04;
	r = tctx_run(t, 10);
	assert_good(r);
	cdb_sync_cache10(t->cdb, 0, 0, false);
	t->cdb[1] = 0x01;
	r = tctx_run(t, 10);
	assert_bad_cdb(r, 1, 0);
	cdb_sync_cache16(t->cdb, 0, 0, false);
	t->cdb[1] = 0x01;
	r = tctx_run(t, 16);
	assert_bad_cdb(r, 1, 0);
	tctx_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flush),
		cmocka_unit_test(test_no_flush_needed),
		cmocka_unit_test(test_range_and_fields),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
