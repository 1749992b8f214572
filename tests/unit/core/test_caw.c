/* SPDX-License-Identifier: MIT */
/*
 * SBC-4 §5.3 COMPARE AND WRITE, §5.9 ORWRITE (16), §5.49 WRITE ATOMIC (16), and the per-LUN
 * range lock that makes them atomic against other commands on the range.
 */
#include <string.h>

#include "test_util.h"

#include "core/cdb.h"
#include "core/scsi_spec.h"
#include "core/sbc.h"

#define BS 512u

static size_t cdb_orwrite(uint8_t *cdb, uint64_t lba, uint32_t n, uint8_t byte1)
{
	memset(cdb, 0, CDB_BUF);
	cdb[0] = SBC_ORWRITE_16;
	cdb[1] = byte1;
	put_be64(&cdb[2], lba);
	put_be32(&cdb[10], n);
	return 16;
}

static struct tctx *medium(enum fake_mode mode, uint32_t geo_flags)
{
	struct fake_backend_opts o;

	fake_backend_opts_init(&o);
	o.mode = mode;
	o.geo_flags = geo_flags;
	return tctx_create(0, &o);
}

static void put_blocks(struct tctx *t, uint64_t lba, uint32_t n, uint8_t v)
{
	uint8_t buf[8 * BS];

	memset(buf, v, (size_t)n * BS);
	assert_good(
		tctx_run_lun(t, 0, cdb_rw(t->cdb, SBC_WRITE_10, lba, n, 0), buf, (size_t)n * BS));
}

static void test_caw_match_and_miscompare(void **state)
{
	struct tctx *t = medium(FAKE_SYNC, SCSITGT_GEOMETRY_WRITE_CACHE);
	uint8_t dout[2 * 4 * BS];
	struct lf_result *r;

	(void)state;
	put_blocks(t, 20, 4, 0x33);
	memset(dout, 0x33, 4 * BS);
	memset(dout + 4 * BS, 0x77, 4 * BS);
	/* Equal: the second half is written (FUA passed on). */
	r = tctx_run_lun(t, 0, cdb_caw(t->cdb, 20, 4, 0x08), dout, sizeof(dout));
	assert_good(r);
	assert_int_equal(fake_backend_last(t->fb)->type, SCSITGT_IO_WRITE);
	assert_int_equal(fake_backend_last(t->fb)->flags & SCSITGT_IO_FLAG_FUA,
			 SCSITGT_IO_FLAG_FUA);
	r = tctx_run(t, cdb_rw(t->cdb, SBC_READ_10, 20, 4, 0));
	assert_memory_equal(r->data, dout + 4 * BS, 4 * BS);
	/* The medium now holds 0x77: the old compare data differs at byte 0. */
	t->fb->nrecs = 0;
	r = tctx_run_lun(t, 0, cdb_caw(t->cdb, 20, 4, 0), dout, sizeof(dout));
	assert_sense(r, SENSE_MISCOMPARE, 0x1d, 0x00);
	assert_int_equal(r->sense[0] & 0x80, 0x80);
	assert_int_equal(get_be32(&r->sense[3]), 0);
	/* Nothing written after a miscompare. */
	assert_int_equal(t->fb->nrecs, 1);
	assert_int_equal(t->fb->recs[0].type, SCSITGT_IO_READ);
	/* A difference in the third block at byte 100: offset from the start of the data. */
	memset(dout, 0x77, 4 * BS);
	dout[2 * BS + 100] = 0;
	r = tctx_run_lun(t, 0, cdb_caw(t->cdb, 20, 4, 0), dout, sizeof(dout));
	assert_sense(r, SENSE_MISCOMPARE, 0x1d, 0x00);
	assert_int_equal(get_be32(&r->sense[3]), 2 * BS + 100);
	tctx_destroy(t);
}

static void test_caw_bad_fields(void **state)
{
	struct tctx *t = medium(FAKE_SYNC, 0);
	struct lf_result *r;

	(void)state;
	/* Above MAXIMUM COMPARE AND WRITE LENGTH. */
	r = tctx_run(t, cdb_caw(t->cdb, 0, SCSITGT__SBC_MAX_CAW_BLOCKS + 1, 0));
	assert_bad_cdb(r, 13, 7);
	/* WRPROTECT, reserved bit 2 of byte 1, reserved bytes 10..12. */
	r = tctx_run(t, cdb_caw(t->cdb, 0, 1, 0x20));
	assert_bad_cdb(r, 1, 7);
	r = tctx_run(t, cdb_caw(t->cdb, 0, 1, 0x04));
	assert_bad_cdb(r, 1, 2);
	cdb_caw(t->cdb, 0, 1, 0);
	t->cdb[11] = 0x01;
	r = tctx_run(t, 16);
	assert_bad_cdb(r, 11, 0);
	/* Past the end. */
	r = tctx_run(t, cdb_caw(t->cdb, 2047, 2, 0));
	assert_sense(r, SENSE_ILLEGAL_REQUEST, 0x21, 0x00);
	/* Zero blocks: nothing happens. */
	r = tctx_run(t, cdb_caw(t->cdb, 0, 0, 0));
	assert_good(r);
	assert_int_equal(t->fb->nrecs, 0);
	tctx_destroy(t);
	/* Write-protected. */
	t = tctx_create(SCSITGT_LUN_READ_ONLY, NULL);
	r = tctx_run(t, cdb_caw(t->cdb, 0, 1, 0));
	assert_sense(r, SENSE_DATA_PROTECT, 0x27, 0x00);
	tctx_destroy(t);
}

static void test_caw_backend_errors(void **state)
{
	struct tctx *t = medium(FAKE_SYNC, 0);
	uint8_t dout[2 * BS] = { 0 };
	struct lf_result *r;

	(void)state;
	fake_backend_fail_next(t->fb, -5 /* -EIO */, 1);
	r = tctx_run_lun(t, 0, cdb_caw(t->cdb, 0, 1, 0), dout, sizeof(dout));
	assert_sense(r, SENSE_MEDIUM_ERROR, 0x11, 0x00);
	/* The lock was released: the next one goes through. */
	r = tctx_run_lun(t, 0, cdb_caw(t->cdb, 0, 1, 0), dout, sizeof(dout));
	assert_good(r);
	assert_int_equal(t->lun->rlock.nexcl, 0);
	tctx_destroy(t);
}

static void test_orwrite(void **state)
{
	struct tctx *t = medium(FAKE_SYNC, 0);
	uint8_t dout[2 * BS];
	struct lf_result *r;

	(void)state;
	put_blocks(t, 5, 2, 0x0f);
	memset(dout, 0x30, sizeof(dout));
	r = tctx_run_lun(t, 0, cdb_orwrite(t->cdb, 5, 2, 0), dout, sizeof(dout));
	assert_good(r);
	r = tctx_run(t, cdb_rw(t->cdb, SBC_READ_10, 5, 2, 0));
	for (size_t i = 0; i < 2 * BS; i++)
		assert_int_equal(r->data[i], 0x3f);
	/* ORPROTECT refused, range checked. */
	r = tctx_run(t, cdb_orwrite(t->cdb, 0, 1, 0x80));
	assert_bad_cdb(r, 1, 7);
	r = tctx_run(t, cdb_orwrite(t->cdb, 2048, 1, 0));
	assert_sense(r, SENSE_ILLEGAL_REQUEST, 0x21, 0x00);
	tctx_destroy(t);
}

static void test_write_atomic(void **state)
{
	struct tctx *t = medium(FAKE_SYNC, 0);
	uint8_t dout[4 * BS];
	struct lf_result *r;

	(void)state;
	memset(dout, 0xc3, sizeof(dout));
	t->fb->nrecs = 0;
	r = tctx_run_lun(t, 0, cdb_write_atomic16(t->cdb, 40, 0, 4, 0), dout, sizeof(dout));
	assert_good(r);
	/* One write of the whole range. */
	assert_int_equal(t->fb->nrecs, 1);
	assert_int_equal(t->fb->recs[0].num_blocks, 4);
	r = tctx_run(t, cdb_rw(t->cdb, SBC_READ_10, 40, 4, 0));
	assert_memory_equal(r->data, dout, sizeof(dout));
	/* Non-zero ATOMIC BOUNDARY (no boundary support), above the maximum length. */
	r = tctx_run(t, cdb_write_atomic16(t->cdb, 0, 1, 1, 0));
	assert_bad_cdb(r, 10, 7);
	r = tctx_run(t, cdb_write_atomic16(t->cdb, 0, 0, SCSITGT__SBC_MAX_ATOMIC_BLOCKS + 1, 0));
	assert_bad_cdb(r, 12, 7);
	r = tctx_run(t, cdb_write_atomic16(t->cdb, 0, 0, 1, 0x04));
	assert_bad_cdb(r, 1, 2);
	r = tctx_run(t, cdb_write_atomic16(t->cdb, 2047, 0, 2, 0));
	assert_sense(r, SENSE_ILLEGAL_REQUEST, 0x21, 0x00);
	tctx_destroy(t);
}

/* A plain WRITE in flight holds back COMPARE AND WRITE until it is done. */
static void test_lock_waits_for_plain_write(void **state)
{
	struct tctx *t = medium(FAKE_MANUAL, 0);
	uint8_t w[BS], dout[2 * BS];
	struct lf_result rw = { 0 }, rc = { 0 };
	size_t len;

	(void)state;
	memset(w, 0xee, sizeof(w));
	memset(dout, 0xee, BS);
	memset(dout + BS, 0x01, BS);
	len = cdb_rw(t->cdb, SBC_WRITE_10, 7, 1, 0);
	loop_fabric_start(t->lf, 0, t->cdb, len, w, sizeof(w), &rw);
	assert_int_equal(t->fb->nrecs, 1);
	len = cdb_caw(t->cdb, 7, 1, 0);
	loop_fabric_start(t->lf, 0, t->cdb, len, dout, sizeof(dout), &rc);
	/* The CAW waits: no READ yet. */
	assert_int_equal(t->fb->nrecs, 1);
	assert_false(rc.done);
	fake_backend_complete_pending(t->fb);
	loop_fabric_wait(t->lf, &rw);
	loop_fabric_wait(t->lf, &rc);
	/* It then compared against the new data and wrote. */
	assert_good(&rc);
	assert_int_equal(t->fb->nrecs, 3);
	assert_int_equal(t->fb->recs[1].type, SCSITGT_IO_READ);
	assert_int_equal(t->fb->recs[2].type, SCSITGT_IO_WRITE);
	lf_result_clear(&rw);
	lf_result_clear(&rc);
	tctx_destroy(t);
}

/* While COMPARE AND WRITE holds its range, overlapping WRITEs wait and others do not. */
static void test_lock_orders_overlapping(void **state)
{
	struct tctx *t = medium(FAKE_MANUAL, 0);
	uint8_t w[BS], dout[4 * BS];
	struct lf_result rc = { 0 }, ro = { 0 }, rf = { 0 };
	size_t len;

	(void)state;
	memset(w, 0x99, sizeof(w));
	memset(dout, 0, sizeof(dout));
	len = cdb_caw(t->cdb, 10, 2, 0);
	loop_fabric_start(t->lf, 0, t->cdb, len, dout, sizeof(dout), &rc);
	/* CAW's READ is held by the backend. */
	assert_int_equal(t->fb->nrecs, 1);
	len = cdb_rw(t->cdb, SBC_WRITE_10, 11, 1, 0);
	loop_fabric_start(t->lf, 0, t->cdb, len, w, sizeof(w), &ro);
	len = cdb_rw(t->cdb, SBC_WRITE_10, 500, 1, 0);
	loop_fabric_start(t->lf, 0, t->cdb, len, w, sizeof(w), &rf);
	/* The far WRITE went straight to the backend, the overlapping one waits. */
	assert_int_equal(t->fb->nrecs, 2);
	assert_int_equal(t->fb->recs[1].lba, 500);
	fake_backend_complete_pending(t->fb);
	loop_fabric_wait(t->lf, &rc);
	loop_fabric_wait(t->lf, &ro);
	loop_fabric_wait(t->lf, &rf);
	assert_good(&rc);
	assert_good(&ro);
	assert_good(&rf);
	/* Order at the backend: CAW READ, far WRITE, CAW WRITE, then the overlapping WRITE. */
	assert_int_equal(t->fb->nrecs, 4);
	assert_int_equal(t->fb->recs[2].type, SCSITGT_IO_WRITE);
	assert_int_equal(t->fb->recs[2].lba, 10);
	assert_int_equal(t->fb->recs[3].lba, 11);
	/* The last write won: block 11 holds the plain WRITE's data. */
	assert_int_equal(t->fb->data[11 * BS], 0x99);
	assert_int_equal(t->lun->rlock.nexcl, 0);
	assert_int_equal(atomic_load(&t->lun->shard_part[0].untracked), 0);
	lf_result_clear(&rc);
	lf_result_clear(&ro);
	lf_result_clear(&rf);
	tctx_destroy(t);
}

/* Two overlapping exclusive commands run one after the other, in arrival order. */
static void test_lock_fifo_exclusive(void **state)
{
	struct tctx *t = medium(FAKE_MANUAL, 0);
	uint8_t a[BS], b[2 * BS];
	struct lf_result ra = { 0 }, rb = { 0 };
	size_t len;

	(void)state;
	memset(a, 0x01, sizeof(a));
	/* CAW compares with zeros (the medium) and writes 0x02. */
	memset(b, 0, BS);
	memset(b + BS, 0x02, BS);
	len = cdb_write_atomic16(t->cdb, 3, 0, 1, 0);
	loop_fabric_start(t->lf, 0, t->cdb, len, a, sizeof(a), &ra);
	len = cdb_caw(t->cdb, 3, 1, 0);
	loop_fabric_start(t->lf, 0, t->cdb, len, b, sizeof(b), &rb);
	assert_int_equal(t->fb->nrecs, 1);
	fake_backend_complete_pending(t->fb);
	loop_fabric_wait(t->lf, &ra);
	loop_fabric_wait(t->lf, &rb);
	assert_good(&ra);
	/* The CAW ran after WRITE ATOMIC and saw 0x01, not the zeros it expected. */
	assert_int_equal(rb.status, 0x02);
	assert_int_equal(rb.sense[2] & 0x0f, SENSE_MISCOMPARE);
	lf_result_clear(&ra);
	lf_result_clear(&rb);
	tctx_destroy(t);
}

/* A command aborted while it waits for the lock is ended without io and frees the range. */
static void test_lock_abort_waiter(void **state)
{
	struct tctx *t = medium(FAKE_MANUAL, 0);
	uint8_t dout[2 * BS] = { 0 };
	struct lf_result r1 = { 0 }, r2 = { 0 };
	size_t len;

	(void)state;
	len = cdb_caw(t->cdb, 0, 1, 0);
	loop_fabric_start(t->lf, 0, t->cdb, len, dout, sizeof(dout), &r1);
	loop_fabric_start(t->lf, 0, t->cdb, len, dout, sizeof(dout), &r2);
	assert_int_equal(t->fb->nrecs, 1);
	/* The second one waits; abort it as a TMF does (the range lock holds it, so it stays
	 * ABORTED until the lock lets it go). */
	assert_non_null(r2.cmd);
	assert_int_equal(r2.cmd->holds, 1);
	assert_int_equal(r2.cmd->state, SCSITGT__CMD_EXEC);
	scsitgt__cmd_abort(r2.cmd, NULL, false);
	assert_int_equal(r2.cmd->state, SCSITGT__CMD_ABORTED);
	fake_backend_complete_pending(t->fb);
	loop_fabric_wait(t->lf, &r1);
	loop_fabric_run_until(t->lf, &r2.aborted);
	assert_good(&r1);
	assert_true(r2.aborted);
	/* Only the first CAW reached the backend (read + write). */
	assert_int_equal(t->fb->nrecs, 2);
	assert_int_equal(t->lun->rlock.nexcl, 0);
	lf_result_clear(&r1);
	lf_result_clear(&r2);
	tctx_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_caw_match_and_miscompare),
		cmocka_unit_test(test_caw_bad_fields),
		cmocka_unit_test(test_caw_backend_errors),
		cmocka_unit_test(test_orwrite),
		cmocka_unit_test(test_write_atomic),
		cmocka_unit_test(test_lock_waits_for_plain_write),
		cmocka_unit_test(test_lock_orders_overlapping),
		cmocka_unit_test(test_lock_fifo_exclusive),
		cmocka_unit_test(test_lock_abort_waiter),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
