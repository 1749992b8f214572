/* SPDX-License-Identifier: MIT */
/* SBC-4 §5.28/§5.29 SYNCHRONIZE CACHE (10)/(16). */
#include <errno.h>
#include <string.h>

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

/* The FLUSH fails, not the writes before it: SYNCHRONIZE CACHE ends with the FLUSH's sense
 * (WRITE ERROR for -EIO; the backend's own sense as it gave it), never GOOD. */
static void test_flush_fails_after_writes(void **state)
{
	struct tctx *t = cached(SCSITGT_LUN_WRITE_CACHE, 1u << SCSITGT_IO_FLUSH);
	uint8_t blk[512];

	(void)state;
	memset(blk, 0x42, sizeof(blk));
	fake_backend_fail_type(t->fb, SCSITGT_IO_FLUSH, -EIO, 1);
	assert_good(tctx_run_lun(t, 0, cdb_rw(t->cdb, SBC_WRITE_10, 0, 1, 0), blk, sizeof(blk)));
	assert_sense(tctx_run(t, cdb_sync_cache16(t->cdb, 0, 0, false)), 0x3, 0x0c, 0x00);
	fake_backend_fail_type(t->fb, SCSITGT_IO_FLUSH, -EIO, 1);
	t->fb->fail_sense = true;
	t->fb->fail_key = 0x3;
	t->fb->fail_asc = 0x0c;
	t->fb->fail_ascq = 0x02; /* WRITE ERROR - AUTO REALLOCATION FAILED */
	assert_good(tctx_run_lun(t, 0, cdb_rw(t->cdb, SBC_WRITE_10, 1, 1, 0), blk, sizeof(blk)));
	assert_sense(tctx_run(t, cdb_sync_cache10(t->cdb, 0, 0, false)), 0x3, 0x0c, 0x02);
	/* spent: GOOD again */
	assert_good(tctx_run(t, cdb_sync_cache10(t->cdb, 0, 0, false)));
	assert_int_equal(t->fb->nrecs, 5);
	tctx_destroy(t);
}

static void test_no_flush_needed(void **state)
{
	struct tctx *t;
	struct lf_result *r;

	(void)state;
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

static size_t count_flushes(const struct tctx *t)
{
	size_t n = 0;

	for (size_t i = 0; i < t->fb->nrecs; i++)
		n += t->fb->recs[i].type == SCSITGT_IO_FLUSH;
	return n;
}

/* MODE SELECT (10) of the caching page (SBC-4 §6.5.5) with WCE @wce. */
static struct lf_result *select_wce(struct tctx *t, bool wce)
{
	uint8_t list[8 + 20] = { 0 };

	list[8] = 0x08;
	list[9] = 0x12;
	list[10] = wce ? 0x04 : 0;
	return tctx_run_lun(t, 0, cdb_mode_select10(t->cdb, true, false, sizeof(list)), list,
			    sizeof(list));
}

/*
 * SBC-4 §5.27: GOOD means the blocks' most recent data are on the medium, whatever WCE is
 * now. Writes cached while WCE was 1 may still be dirty after it went to 0: the flush is
 * decided on the backend's cache, and turning WCE off writes the cache back (the initiator
 * sends no SYNCHRONIZE CACHE to a write-through disk).
 */
static void test_flush_after_wce_off(void **state)
{
	struct tctx *t = cached(SCSITGT_LUN_WRITE_CACHE, 1u << SCSITGT_IO_FLUSH);
	uint8_t blk[512];

	(void)state;
	memset(blk, 0x3c, sizeof(blk));
	assert_true(t->lun->mode.wce);
	/* Cached: no FUA, no flush. */
	assert_good(tctx_run_lun(t, 0, cdb_rw(t->cdb, SBC_WRITE_10, 4, 1, 0), blk, sizeof(blk)));
	assert_int_equal(fake_backend_last(t->fb)->flags & SCSITGT_IO_FLAG_FUA, 0);
	assert_int_equal(count_flushes(t), 0);
	/* WCE 1 -> 0: the cache is written back before MODE SELECT's GOOD. */
	assert_good(select_wce(t, false));
	assert_false(t->lun->mode.wce);
	assert_int_equal(count_flushes(t), 1);
	assert_int_equal(fake_backend_last(t->fb)->type, SCSITGT_IO_FLUSH);
	/* SYNCHRONIZE CACHE still reaches the backend. */
	assert_good(tctx_run(t, cdb_sync_cache10(t->cdb, 0, 0, false)));
	assert_int_equal(count_flushes(t), 2);
	/* Unchanged WCE 0, and 0 -> 1: nothing to write back. */
	assert_good(select_wce(t, false));
	assert_good(select_wce(t, true));
	assert_int_equal(count_flushes(t), 2);
	tctx_destroy(t);

	/* A LUN that starts with WCE 0 on a cached backend: SYNCHRONIZE CACHE flushes too. */
	t = cached(0, 1u << SCSITGT_IO_FLUSH);
	assert_false(t->lun->mode.wce);
	assert_good(tctx_run(t, cdb_sync_cache10(t->cdb, 0, 0, false)));
	assert_int_equal(count_flushes(t), 1);
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
		cmocka_unit_test(test_flush_fails_after_writes),
		cmocka_unit_test(test_no_flush_needed),
		cmocka_unit_test(test_flush_after_wce_off),
		cmocka_unit_test(test_range_and_fields),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
