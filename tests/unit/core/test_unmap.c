/* SPDX-License-Identifier: MIT */
/* SBC-4 §5.30 UNMAP and its parameter list. */
#include <errno.h>
#include <string.h>

#include "test_util.h"

#include "core/scsi_spec.h"

static void test_unmap_ranges(void **state)
{
	static const uint64_t desc[][2] = { { 0, 8 }, { 2048, 0 }, { 64, 32 } };
	struct tctx *t = tctx_create_unmap(true);
	uint8_t list[64];
	size_t len = unmap_param_list(list, desc, 3);
	struct lf_result *r;

	(void)state;
	r = tctx_run_lun(t, 0, cdb_unmap(t->cdb, (uint16_t)len, 0), list, len);
	assert_good(r);
	/* One io per non-empty range, in order. */
	assert_int_equal(t->fb->nrecs, 2);
	assert_int_equal(t->fb->recs[0].type, SCSITGT_IO_UNMAP);
	assert_int_equal(t->fb->recs[0].lba, 0);
	assert_int_equal(t->fb->recs[0].num_blocks, 8);
	assert_int_equal(t->fb->recs[1].lba, 64);
	assert_int_equal(t->fb->recs[1].num_blocks, 32);
	/* A zero PARAMETER LIST LENGTH does nothing. */
	r = tctx_run(t, cdb_unmap(t->cdb, 0, 0));
	assert_good(r);
	assert_int_equal(t->fb->nrecs, 2);
	tctx_destroy(t);
}

static void test_unmap_bad_lists(void **state)
{
	struct tctx *t = tctx_create_unmap(true);
	uint64_t past[][2] = { { 0, 1 }, { 0, 2 } };
	uint8_t list[64];
	size_t len;
	struct lf_result *r;

	(void)state;
	/* Shorter than the header. */
	memset(list, 0, sizeof(list));
	r = tctx_run_lun(t, 0, cdb_unmap(t->cdb, 4, 0), list, 4);
	assert_sense(r, SENSE_ILLEGAL_REQUEST, 0x1a, 0x00);
	/* BLOCK DESCRIPTOR DATA LENGTH beyond the list. */
	len = unmap_param_list(list, past, 1);
	put_be16(&list[2], 32);
	r = tctx_run_lun(t, 0, cdb_unmap(t->cdb, (uint16_t)len, 0), list, len);
	assert_sense(r, SENSE_ILLEGAL_REQUEST, 0x1a, 0x00);
	/* A range past the end: nothing is unmapped, not even the good first range. */
	past[1][0] = t->lun->geo.num_blocks - 1;
	len = unmap_param_list(list, past, 2);
	r = tctx_run_lun(t, 0, cdb_unmap(t->cdb, (uint16_t)len, 0), list, len);
	assert_sense(r, SENSE_ILLEGAL_REQUEST, 0x21, 0x00);
	/* A count above MAXIMUM UNMAP LBA COUNT points at the descriptor's count field. */
	past[1][0] = 0;
	past[1][1] = SCSITGT__MAX_UNMAP_LBA_COUNT + 1ull;
	len = unmap_param_list(list, past, 2);
	r = tctx_run_lun(t, 0, cdb_unmap(t->cdb, (uint16_t)len, 0), list, len);
	assert_sense(r, SENSE_ILLEGAL_REQUEST, 0x26, 0x00);
	assert_sks(r, 0, 8 + 16 + 8, -1);
	/* ANCHOR is not supported. */
	r = tctx_run_lun(t, 0, cdb_unmap(t->cdb, 0, 0x01), NULL, 0);
	assert_bad_cdb(r, 1, 0);
	assert_int_equal(t->fb->nrecs, 0);
	tctx_destroy(t);
}

static void test_unmap_needs_thin(void **state)
{
	struct tctx *t = tctx_create_unmap(false);
	struct lf_result *r;

	(void)state;
	r = tctx_run(t, cdb_unmap(t->cdb, 0, 0));
	assert_sense(r, SENSE_ILLEGAL_REQUEST, 0x20, 0x00);
	tctx_destroy(t);
}

/* A thin LUN on a backend with a volatile cache, UNMAP and FLUSH; LBPRZ as @lbprz. */
static struct tctx *cached_thin(uint32_t lun_flags, bool lbprz)
{
	struct fake_backend_opts o;

	fake_backend_opts_init(&o);
	o.supports = (1u << SCSITGT_IO_UNMAP) | (1u << SCSITGT_IO_FLUSH);
	o.geo_flags = SCSITGT_GEOMETRY_WRITE_CACHE | (lbprz ? SCSITGT_GEOMETRY_LBPRZ : 0);
	return tctx_create(SCSITGT_LUN_THIN | lun_flags, &o);
}

static struct lf_result *run_unmap(struct tctx *t)
{
	static const uint64_t desc[][2] = { { 0, 8 }, { 64, 32 } };
	uint8_t list[64];
	size_t len = unmap_param_list(list, desc, 2);

	return tctx_run_lun(t, 0, cdb_unmap(t->cdb, (uint16_t)len, 0), list, len);
}

/*
 * LBPRZ promises zeros from unmapped blocks; with WCE 0 the initiator sends no SYNCHRONIZE
 * CACHE, so the deallocation is on the medium before GOOD: a FLUSH after the last range (as
 * WRITE SAME with UNMAP). Its failure is the command's.
 */
static void test_unmap_lbprz_durable_without_wce(void **state)
{
	struct tctx *t = cached_thin(0, true);

	(void)state;
	assert_false(t->lun->mode.wce);
	assert_good(run_unmap(t));
	assert_int_equal(t->fb->nrecs, 3);
	assert_int_equal(t->fb->recs[0].type, SCSITGT_IO_UNMAP);
	assert_int_equal(t->fb->recs[1].type, SCSITGT_IO_UNMAP);
	assert_int_equal(t->fb->recs[2].type, SCSITGT_IO_FLUSH);
	/* the FLUSH fails: WRITE ERROR, never GOOD */
	fake_backend_fail_type(t->fb, SCSITGT_IO_FLUSH, -EIO, 1);
	assert_sense(run_unmap(t), 0x3, 0x0c, 0x00);
	assert_int_equal(t->fb->nrecs, 6);
	assert_int_equal(t->fb->recs[5].type, SCSITGT_IO_FLUSH);
	/* an UNMAP that fails needs no FLUSH: its own error is reported */
	fake_backend_fail_type(t->fb, SCSITGT_IO_UNMAP, -EIO, 1);
	assert_sense(run_unmap(t), 0x3, 0x0c, 0x00);
	assert_int_equal(t->fb->nrecs, 8);
	assert_int_equal(t->fb->recs[7].type, SCSITGT_IO_UNMAP);
	tctx_destroy(t);
}

/* An UNMAP whose ranges are all empty (SBC-4 §5.30.2: NUMBER OF LOGICAL BLOCKS zero unmaps
 * nothing, no error; and no descriptor at all) changes no block: GOOD with no io, no FLUSH,
 * also on an LBPRZ LUN with WCE 0. */
static void test_unmap_nothing_no_flush(void **state)
{
	static const uint64_t desc[][2] = { { 0, 0 }, { 64, 0 } };
	struct tctx *t = cached_thin(0, true);
	uint8_t list[64];
	size_t len = unmap_param_list(list, desc, 2);

	(void)state;
	assert_false(t->lun->mode.wce);
	assert_good(tctx_run_lun(t, 0, cdb_unmap(t->cdb, (uint16_t)len, 0), list, len));
	assert_int_equal(t->fb->nrecs, 0);
	len = unmap_param_list(list, desc, 0);
	assert_good(tctx_run_lun(t, 0, cdb_unmap(t->cdb, (uint16_t)len, 0), list, len));
	assert_int_equal(t->fb->nrecs, 0);
	/* one range with blocks among empty ones: its UNMAP, then the FLUSH */
	static const uint64_t some[][2] = { { 0, 0 }, { 64, 4 } };
	len = unmap_param_list(list, some, 2);
	assert_good(tctx_run_lun(t, 0, cdb_unmap(t->cdb, (uint16_t)len, 0), list, len));
	assert_int_equal(t->fb->nrecs, 2);
	assert_int_equal(t->fb->recs[0].type, SCSITGT_IO_UNMAP);
	assert_int_equal(t->fb->recs[1].type, SCSITGT_IO_FLUSH);
	tctx_destroy(t);
}

/* No FLUSH where nothing is promised or the initiator flushes: WCE 1, no LBPRZ, no cache. */
static void test_unmap_no_flush_needed(void **state)
{
	struct tctx *t;

	(void)state;
	t = cached_thin(SCSITGT_LUN_WRITE_CACHE, true);
	assert_good(run_unmap(t));
	assert_int_equal(t->fb->nrecs, 2);
	tctx_destroy(t);
	t = cached_thin(0, false);
	assert_good(run_unmap(t));
	assert_int_equal(t->fb->nrecs, 2);
	tctx_destroy(t);
	t = tctx_create_unmap(true);
	assert_good(run_unmap(t));
	assert_int_equal(t->fb->nrecs, 2);
	tctx_destroy(t);
}

/*
 * An UNMAP is a write for the range lock (sbc_unmap.c): under an LBPRZ LUN it turns the blocks
 * into zeros. A COMPARE AND WRITE holding an overlapping range (its READ held by the backend)
 * makes it wait, whichever of its descriptors overlaps, so that the result is one of the two
 * serial orders (reviewj J1b: both answered GOOD with the CAW's data left mapped). An UNMAP
 * elsewhere goes on at once; one aborted while it waits sends no io.
 */
static void test_unmap_waits_for_caw(void **state)
{
	static const uint64_t near[][2] = { { 0, 8 }, { 100, 4 } }, far[][2] = { { 500, 8 } };
	struct fake_backend_opts o;
	struct tctx *t;
	uint8_t dout[2 * 512], ln[64], lf[64];
	size_t nlen, flen, len;
	struct lf_result rc = { 0 }, rn = { 0 }, rf = { 0 }, ra = { 0 };

	(void)state;
	fake_backend_opts_init(&o);
	o.mode = FAKE_MANUAL;
	o.supports = 1u << SCSITGT_IO_UNMAP;
	o.geo_flags = SCSITGT_GEOMETRY_LBPRZ;
	o.lba_status = true;
	t = tctx_create(SCSITGT_LUN_THIN, &o);
	nlen = unmap_param_list(ln, near, 2);
	flen = unmap_param_list(lf, far, 1);
	/* compare with the zeros there, write CDh */
	memset(dout, 0, 512);
	memset(dout + 512, 0xcd, 512);
	len = cdb_caw(t->cdb, 101, 1, 0);
	loop_fabric_start(t->lf, 0, t->cdb, len, dout, sizeof(dout), &rc);
	assert_int_equal(t->fb->nrecs, 1);
	len = cdb_unmap(t->cdb, (uint16_t)nlen, 0);
	loop_fabric_start(t->lf, 0, t->cdb, len, ln, nlen, &rn);
	/* it waits: not even its first range (outside the CAW's block) went */
	assert_int_equal(t->fb->nrecs, 1);
	assert_false(rn.done);
	len = cdb_unmap(t->cdb, (uint16_t)flen, 0);
	loop_fabric_start(t->lf, 0, t->cdb, len, lf, flen, &rf);
	assert_int_equal(t->fb->nrecs, 2);
	assert_int_equal(t->fb->recs[1].lba, 500);
	/* a second overlapping UNMAP waits too, and is aborted there */
	len = cdb_unmap(t->cdb, (uint16_t)nlen, 0);
	loop_fabric_start(t->lf, 0, t->cdb, len, ln, nlen, &ra);
	assert_non_null(ra.cmd);
	scsitgt__cmd_abort(ra.cmd, NULL, false);
	fake_backend_complete_pending(t->fb);
	loop_fabric_wait(t->lf, &rc);
	loop_fabric_wait(t->lf, &rn);
	loop_fabric_wait(t->lf, &rf);
	loop_fabric_run_until(t->lf, &ra.aborted);
	assert_good(&rc);
	assert_good(&rn);
	assert_good(&rf);
	/* CAW READ, far UNMAP, CAW WRITE, then the near UNMAP's two ranges; none of the
	 * aborted one */
	assert_int_equal(t->fb->nrecs, 5);
	assert_int_equal(t->fb->recs[2].type, SCSITGT_IO_WRITE);
	assert_int_equal(t->fb->recs[3].type, SCSITGT_IO_UNMAP);
	assert_int_equal(t->fb->recs[3].lba, 0);
	assert_int_equal(t->fb->recs[4].type, SCSITGT_IO_UNMAP);
	assert_int_equal(t->fb->recs[4].lba, 100);
	/* CAW then UNMAP: zeros, deallocated */
	assert_int_equal(t->fb->data[101 * 512], 0);
	assert_int_equal(t->fb->mapped[101], 0);
	assert_int_equal(t->lun->rlock.nexcl, 0);
	assert_int_equal(atomic_load(&t->lun->shard_part[0].untracked), 0);
	lf_result_clear(&rc);
	lf_result_clear(&rn);
	lf_result_clear(&rf);
	lf_result_clear(&ra);
	tctx_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unmap_ranges),
		cmocka_unit_test(test_unmap_bad_lists),
		cmocka_unit_test(test_unmap_needs_thin),
		cmocka_unit_test(test_unmap_lbprz_durable_without_wce),
		cmocka_unit_test(test_unmap_no_flush_needed),
		cmocka_unit_test(test_unmap_nothing_no_flush),
		cmocka_unit_test(test_unmap_waits_for_caw),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
