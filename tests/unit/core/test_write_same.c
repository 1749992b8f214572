/* SPDX-License-Identifier: MIT */
/* SBC-4 §5.50/§5.51 WRITE SAME (10)/(16), and the VPD B0/B2 fields that describe it. */
#include <errno.h>
#include <string.h>

#include "test_util.h"

#include "core/cdb.h"
#include "core/sbc_chunk.h"
#include "core/scsi_spec.h"
#include "core/sbc.h"

#define BS 512u

static size_t cdb_ws(uint8_t *cdb, bool sixteen, uint64_t lba, uint32_t n, uint8_t byte1)
{
	memset(cdb, 0, CDB_BUF);
	if (!sixteen) {
		cdb[0] = SBC_WRITE_SAME_10;
		cdb[1] = byte1;
		put_be32(&cdb[2], (uint32_t)lba);
		put_be16(&cdb[7], (uint16_t)n);
		return 10;
	}
	cdb[0] = SBC_WRITE_SAME_16;
	cdb[1] = byte1;
	put_be64(&cdb[2], lba);
	put_be32(&cdb[10], n);
	return 16;
}

static struct tctx *lun_with(uint32_t lun_flags, uint32_t supports, uint64_t nblocks, bool lbprz)
{
	struct fake_backend_opts o;

	fake_backend_opts_init(&o);
	o.supports = supports;
	o.num_blocks = nblocks;
	o.lba_status = true;
	if (lbprz)
		o.geo_flags |= SCSITGT_GEOMETRY_LBPRZ;
	return tctx_create(lun_flags, &o);
}

static void read_back(struct tctx *t, uint64_t lba, uint32_t n, const uint8_t *blk)
{
	struct lf_result *r = tctx_run(t, cdb_rw(t->cdb, SBC_READ_16, lba, n, 0));

	assert_good(r);
	for (uint32_t b = 0; b < n; b++)
		assert_memory_equal(r->data + (size_t)b * BS, blk, BS);
}

static void test_pattern_written(void **state)
{
	struct tctx *t = lun_with(0, 0, 2048, false);
	uint8_t blk[BS], zero[BS] = { 0 };

	(void)state;
	for (size_t i = 0; i < BS; i++)
		blk[i] = (uint8_t)(i ^ 0xa5);
	for (int sixteen = 0; sixteen < 2; sixteen++) {
		t->fb->nrecs = 0;
		assert_good(tctx_run_lun(t, 0, cdb_ws(t->cdb, sixteen, 10 + sixteen * 100, 37, 0),
					 blk, BS));
		/* One write of the repeated block. */
		assert_int_equal(t->fb->nrecs, 1);
		assert_int_equal(t->fb->recs[0].type, SCSITGT_IO_WRITE);
		assert_int_equal(t->fb->recs[0].num_blocks, 37);
		read_back(t, 10 + sixteen * 100, 37, blk);
	}
	/* The blocks around are untouched. */
	read_back(t, 9, 1, zero);
	read_back(t, 47, 1, zero);
	tctx_destroy(t);
}

static void test_large_range_chunks(void **state)
{
	uint32_t chunk = SCSITGT__SBC_CHUNK_BYTES / BS;
	struct tctx *t = lun_with(0, 0, 3 * chunk, false);
	uint8_t blk[BS];

	(void)state;
	memset(blk, 0x11, sizeof(blk));
	/* 2.5 chunks: bounded writes one after another, never one huge buffer. */
	assert_good(tctx_run_lun(t, 0, cdb_ws(t->cdb, true, 1, 2 * chunk + chunk / 2, 0), blk, BS));
	assert_int_equal(t->fb->nrecs, 3);
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(t->fb->recs[i].type, SCSITGT_IO_WRITE);
		assert_int_equal(t->fb->recs[i].lba, 1 + i * chunk);
		assert_true(t->fb->recs[i].bytes <= SCSITGT__SBC_CHUNK_BYTES);
	}
	read_back(t, 1 + 2 * chunk + chunk / 2 - 1, 1, blk);
	/* A zero block without WRITE ZEROES support: also emulated with bounded writes. */
	t->fb->nrecs = 0;
	memset(blk, 0, sizeof(blk));
	assert_good(tctx_run_lun(t, 0, cdb_ws(t->cdb, true, 1, chunk + 1, 0), blk, BS));
	assert_int_equal(t->fb->nrecs, 2);
	assert_int_equal(t->fb->recs[0].type, SCSITGT_IO_WRITE);
	read_back(t, 1, 1, blk);
	tctx_destroy(t);
}

static void test_zero_offload_and_unmap(void **state)
{
	uint32_t sup = (1u << SCSITGT_IO_UNMAP) | (1u << SCSITGT_IO_WRITE_ZEROES);
	struct tctx *t = lun_with(SCSITGT_LUN_THIN, sup, 2048, true);
	uint8_t blk[BS] = { 0 }, one[BS];

	(void)state;
	memset(one, 1, sizeof(one));
	/* Zero block, UNMAP 0: WRITE ZEROES, the blocks stay mapped. */
	assert_good(tctx_run_lun(t, 0, cdb_ws(t->cdb, false, 0, 8, 0), blk, BS));
	assert_int_equal(fake_backend_last(t->fb)->type, SCSITGT_IO_WRITE_ZEROES);
	assert_int_equal(t->fb->mapped[0], 1);
	/* Zero block with UNMAP on a thin LBPRZ LUN: deallocated. */
	assert_good(tctx_run_lun(t, 0, cdb_ws(t->cdb, false, 0, 8, 0x08), blk, BS));
	assert_int_equal(fake_backend_last(t->fb)->type, SCSITGT_IO_UNMAP);
	assert_int_equal(fake_backend_last(t->fb)->num_blocks, 8);
	assert_int_equal(t->fb->mapped[7], 0);
	/* Non-zero data with UNMAP: SBC-4 requires the data, so it is written. */
	assert_good(tctx_run_lun(t, 0, cdb_ws(t->cdb, true, 0, 4, 0x08), one, BS));
	assert_int_equal(fake_backend_last(t->fb)->type, SCSITGT_IO_WRITE);
	read_back(t, 0, 4, one);
	/* NDOB with UNMAP: no Data-Out, unmapped; the blocks read as zeros. */
	t->fb->nrecs = 0;
	assert_good(tctx_run(t, cdb_ws(t->cdb, true, 0, 4, 0x09)));
	assert_int_equal(t->fb->nrecs, 1);
	assert_int_equal(t->fb->recs[0].type, SCSITGT_IO_UNMAP);
	read_back(t, 0, 4, blk);
	/* NDOB alone: WRITE ZEROES. */
	assert_good(tctx_run(t, cdb_ws(t->cdb, true, 100, 4, 0x01)));
	assert_int_equal(fake_backend_last(t->fb)->type, SCSITGT_IO_WRITE_ZEROES);
	tctx_destroy(t);

	/* Thin but without LBPRZ: unmapped blocks would not read as the zeros sent. */
	t = lun_with(SCSITGT_LUN_THIN, sup, 2048, false);
	assert_good(tctx_run_lun(t, 0, cdb_ws(t->cdb, false, 0, 8, 0x08), blk, BS));
	assert_int_equal(fake_backend_last(t->fb)->type, SCSITGT_IO_WRITE_ZEROES);
	tctx_destroy(t);
	/* Fully provisioned: no LBPWS, so UNMAP is an invalid field and nothing is written. */
	t = lun_with(0, 0, 2048, true);
	{
		struct lf_result *r = tctx_run_lun(t, 0, cdb_ws(t->cdb, true, 0, 8, 0x08), blk, BS);

		assert_bad_cdb(r, 1, 3);
		r = tctx_run(t, cdb_ws(t->cdb, false, 0, 8, 0x08));
		assert_bad_cdb(r, 1, 3);
	}
	assert_int_equal(t->fb->nrecs, 0);
	tctx_destroy(t);
}

/* A backend with its own WRITE SAME gets one io of the one block for the whole range. */
static void test_backend_write_same(void **state)
{
	uint32_t chunk = SCSITGT__SBC_CHUNK_BYTES / BS;
	uint32_t sup = 1u << SCSITGT_IO_WRITE_SAME;
	struct tctx *t = lun_with(0, sup, 3 * chunk, false);
	uint8_t blk[BS], zero[BS] = { 0 };

	(void)state;
	for (size_t i = 0; i < BS; i++)
		blk[i] = (uint8_t)(i * 7 + 1);
	/* More than a chunk: still one io, its iovec the one block. */
	assert_good(tctx_run_lun(t, 0, cdb_ws(t->cdb, true, 3, 2 * chunk + 5, 0), blk, BS));
	assert_int_equal(t->fb->nrecs, 1);
	assert_int_equal(t->fb->recs[0].type, SCSITGT_IO_WRITE_SAME);
	assert_int_equal(t->fb->recs[0].lba, 3);
	assert_int_equal(t->fb->recs[0].num_blocks, 2 * chunk + 5);
	assert_int_equal(t->fb->recs[0].iovcnt, 1);
	assert_int_equal(t->fb->recs[0].bytes, BS);
	read_back(t, 3, 16, blk);
	read_back(t, 3 + 2 * chunk + 5 - 16, 16, blk);
	read_back(t, 2, 1, zero);
	read_back(t, 3 + 2 * chunk + 5, 1, zero);
	/* WRITE SAME (10) too. */
	t->fb->nrecs = 0;
	assert_good(tctx_run_lun(t, 0, cdb_ws(t->cdb, false, 0, 2, 0), blk, BS));
	assert_int_equal(t->fb->recs[0].type, SCSITGT_IO_WRITE_SAME);
	/* A zero block without WRITE ZEROES: the backend's WRITE SAME of zeros; with NDOB the
	 * block is the core's own zeroed one. */
	t->fb->nrecs = 0;
	assert_good(tctx_run_lun(t, 0, cdb_ws(t->cdb, true, 3, 8, 0), zero, BS));
	assert_int_equal(t->fb->recs[0].type, SCSITGT_IO_WRITE_SAME);
	read_back(t, 3, 8, zero);
	assert_good(tctx_run_lun(t, 0, cdb_ws(t->cdb, true, 0, 2, 0), blk, BS));
	t->fb->nrecs = 0;
	assert_good(tctx_run(t, cdb_ws(t->cdb, true, 0, 2, 0x01)));
	assert_int_equal(t->fb->recs[0].type, SCSITGT_IO_WRITE_SAME);
	assert_int_equal(t->fb->recs[0].bytes, BS);
	read_back(t, 0, 2, zero);
	tctx_destroy(t);
	/* With WRITE ZEROES as well, zeros go there and patterns to WRITE SAME. */
	t = lun_with(0, sup | 1u << SCSITGT_IO_WRITE_ZEROES, 2048, false);
	assert_good(tctx_run_lun(t, 0, cdb_ws(t->cdb, true, 0, 8, 0), zero, BS));
	assert_int_equal(fake_backend_last(t->fb)->type, SCSITGT_IO_WRITE_ZEROES);
	assert_good(tctx_run_lun(t, 0, cdb_ws(t->cdb, true, 0, 8, 0), blk, BS));
	assert_int_equal(fake_backend_last(t->fb)->type, SCSITGT_IO_WRITE_SAME);
	/* A failure is reported, never GOOD. */
	fake_backend_fail_next(t->fb, -EIO, 1);
	assert_sense(tctx_run_lun(t, 0, cdb_ws(t->cdb, true, 0, 8, 0), blk, BS), SENSE_MEDIUM_ERROR,
		     0x0c, 0x00);
	tctx_destroy(t);
}

static void test_bad_fields(void **state)
{
	struct tctx *t = lun_with(0, 0, 2048, false);
	uint8_t blk[BS] = { 0 };
	struct lf_result *r;

	(void)state;
	for (int sixteen = 0; sixteen < 2; sixteen++) {
		/* ANCHOR: not supported (ANC_SUP 0). */
		r = tctx_run(t, cdb_ws(t->cdb, sixteen, 0, 1, 0x10));
		assert_bad_cdb(r, 1, 4);
		/* WRPROTECT. */
		r = tctx_run(t, cdb_ws(t->cdb, sixteen, 0, 1, 0x40));
		assert_bad_cdb(r, 1, 7);
		/* Obsolete PBDATA and LBDATA. */
		r = tctx_run(t, cdb_ws(t->cdb, sixteen, 0, 1, 0x04));
		assert_bad_cdb(r, 1, 2);
		r = tctx_run(t, cdb_ws(t->cdb, sixteen, 0, 1, 0x02));
		assert_bad_cdb(r, 1, 1);
		/* Past the end, also when the length is invalid too (the range comes first). */
		r = tctx_run_lun(t, 0, cdb_ws(t->cdb, sixteen, 2040, 9, 0), blk, BS);
		assert_sense(r, SENSE_ILLEGAL_REQUEST, 0x21, 0x00);
		r = tctx_run(t, cdb_ws(t->cdb, sixteen, 2048, 0, 0));
		assert_sense(r, SENSE_ILLEGAL_REQUEST, 0x21, 0x00);
	}
	/* WRITE SAME (10): bit 0 is reserved (NDOB exists only in the 16-byte form). */
	r = tctx_run(t, cdb_ws(t->cdb, false, 0, 1, 0x01));
	assert_bad_cdb(r, 1, 0);
	assert_int_equal(t->fb->nrecs, 0);
	tctx_destroy(t);

	/* Above MAXIMUM WRITE SAME LENGTH (on a LUN large enough for the range). */
	t = lun_with(0, 0, 2 * (uint64_t)SCSITGT__SBC_MAX_WRITE_SAME_BLOCKS, false);
	r = tctx_run_lun(t, 0, cdb_ws(t->cdb, true, 0, SCSITGT__SBC_MAX_WRITE_SAME_BLOCKS + 1, 0),
			 blk, BS);
	assert_bad_cdb(r, 10, 7);
	assert_int_equal(t->fb->nrecs, 0);
	tctx_destroy(t);

	t = lun_with(SCSITGT_LUN_READ_ONLY, 0, 2048, false);
	r = tctx_run_lun(t, 0, cdb_ws(t->cdb, true, 0, 1, 0), blk, BS);
	assert_sense(r, SENSE_DATA_PROTECT, 0x27, 0x00);
	tctx_destroy(t);
}

static void test_backend_error(void **state)
{
	struct tctx *t = lun_with(0, 0, 2048, false);
	uint8_t blk[BS] = { 1 };
	struct lf_result *r;

	(void)state;
	fake_backend_fail_next(t->fb, -5 /* -EIO */, 1);
	r = tctx_run_lun(t, 0, cdb_ws(t->cdb, false, 0, 4, 0), blk, BS);
	assert_sense(r, SENSE_MEDIUM_ERROR, 0x0c, 0x00);
	fake_backend_fail_next_sense(t->fb, 0x3, 0x0c, 0x02);
	r = tctx_run_lun(t, 0, cdb_ws(t->cdb, false, 0, 4, 0), blk, BS);
	assert_sense(r, 0x3, 0x0c, 0x02);
	tctx_destroy(t);
}

/* SBC-4 §5.50 with WSNZ 0: NUMBER OF LOGICAL BLOCKS 0 writes through the last LBA, as
 * long as that range fits MAXIMUM WRITE SAME LENGTH. */
static void test_zero_blocks_to_end(void **state)
{
	struct tctx *t = lun_with(0, 0, 2048, false);
	uint8_t blk[BS], zero[BS] = { 0 };
	struct lf_result *r;

	(void)state;
	memset(blk, 0x3c, sizeof(blk));
	for (int sixteen = 0; sixteen < 2; sixteen++) {
		uint64_t lba = sixteen ? 1000 : 2000;

		t->fb->nrecs = 0;
		assert_good(tctx_run_lun(t, 0, cdb_ws(t->cdb, sixteen, lba, 0, 0), blk, BS));
		assert_int_equal(t->fb->nrecs, 1);
		assert_int_equal(t->fb->recs[0].type, SCSITGT_IO_WRITE);
		assert_int_equal(t->fb->recs[0].lba, lba);
		assert_int_equal(t->fb->recs[0].num_blocks, 2048 - lba);
		read_back(t, lba, (uint32_t)(2048 - lba), blk);
		read_back(t, lba - 1, 1, zero);
		/* Past the end: LBA OUT OF RANGE, whatever the length. */
		r = tctx_run_lun(t, 0, cdb_ws(t->cdb, sixteen, 2048, 0, 0), blk, BS);
		assert_sense(r, 0x5, 0x21, 0x00);
	}
	tctx_destroy(t);

	/* More blocks to the end than MAXIMUM WRITE SAME LENGTH: invalid length field. */
	t = lun_with(0, 0, SCSITGT__SBC_MAX_WRITE_SAME_BLOCKS + 2, false);
	for (int sixteen = 0; sixteen < 2; sixteen++) {
		r = tctx_run_lun(t, 0, cdb_ws(t->cdb, sixteen, 1, 0, 0), blk, BS);
		assert_bad_cdb(r, sixteen ? 10 : 7, 7);
		t->fb->nrecs = 0;
		assert_good(tctx_run_lun(t, 0, cdb_ws(t->cdb, sixteen, 2, 0, 0), blk, BS));
		/* In bounded pieces, from LBA 2 through the last LBA. */
		assert_true(t->fb->nrecs > 1);
		assert_int_equal(t->fb->recs[0].lba, 2);
		assert_int_equal(t->fb->recs[t->fb->nrecs - 1].lba +
					 t->fb->recs[t->fb->nrecs - 1].num_blocks,
				 SCSITGT__SBC_MAX_WRITE_SAME_BLOCKS + 2);
	}
	tctx_destroy(t);
}

static void test_block_limits(void **state)
{
	struct tctx *t = lun_with(0, 0, 2048, false);
	uint8_t b0[64];

	(void)state;
	memset(b0, 0, sizeof(b0));
	scsitgt__sbc_block_limits(t->lun, b0);
	/* WSNZ 0, MAXIMUM WRITE SAME LENGTH, MAXIMUM COMPARE AND WRITE LENGTH, atomic limits. */
	assert_int_equal(b0[4] & 0x01, 0x00);
	assert_int_equal(get_be64(&b0[36]), SCSITGT__SBC_MAX_WRITE_SAME_BLOCKS);
	assert_int_equal(b0[5], SCSITGT__SBC_MAX_CAW_BLOCKS);
	assert_true(b0[5] > 1);
	assert_int_equal(get_be32(&b0[44]), SCSITGT__SBC_MAX_ATOMIC_BLOCKS);
	assert_int_equal(get_be32(&b0[48]), 1);
	assert_int_equal(get_be32(&b0[52]), 1);
	assert_int_equal(get_be32(&b0[56]), 0);
	assert_int_equal(get_be32(&b0[60]), 0);
	tctx_destroy(t);
}

/* How many ios of @type the backend got. */
static size_t count_ios(const struct tctx *t, enum scsitgt_io_type type)
{
	size_t n = 0;

	for (size_t i = 0; i < t->fb->nrecs; i++)
		n += t->fb->recs[i].type == type;
	return n;
}

/* A thin LBPRZ LUN on a backend with a volatile cache, FLUSH, UNMAP and WRITE ZEROES. */
static struct tctx *cached_lun(uint32_t lun_flags, uint32_t supports)
{
	struct fake_backend_opts o;

	fake_backend_opts_init(&o);
	o.supports = supports;
	o.geo_flags = SCSITGT_GEOMETRY_WRITE_CACHE | SCSITGT_GEOMETRY_LBPRZ;
	return tctx_create(SCSITGT_LUN_THIN | lun_flags, &o);
}

/*
 * WCE 0 (SBC-4 §6.5.5): GOOD only once the blocks are on the medium. A zeroing or unmapping
 * io carries no FUA (backend.h): the core follows it with a FLUSH before the status.
 */
static void test_zeroes_durable_without_wce(void **state)
{
	uint32_t sup = (1u << SCSITGT_IO_UNMAP) | (1u << SCSITGT_IO_WRITE_ZEROES) |
		       (1u << SCSITGT_IO_FLUSH);
	struct tctx *t = cached_lun(0, sup);
	uint8_t zero[BS] = { 0 }, one[BS];

	(void)state;
	memset(one, 1, sizeof(one));
	assert_false(t->lun->mode.wce);
	/* WRITE SAME (16) of a zero block: WRITE ZEROES, then FLUSH over the range. */
	assert_good(tctx_run_lun(t, 0, cdb_ws(t->cdb, true, 8, 8, 0), zero, BS));
	assert_int_equal(t->fb->nrecs, 2);
	assert_int_equal(t->fb->recs[0].type, SCSITGT_IO_WRITE_ZEROES);
	assert_int_equal(t->fb->recs[1].type, SCSITGT_IO_FLUSH);
	assert_int_equal(t->fb->recs[1].lba, 8);
	assert_int_equal(t->fb->recs[1].num_blocks, 8);
	/* With UNMAP (LBPRZ): UNMAP, then FLUSH. NDOB the same. */
	t->fb->nrecs = 0;
	assert_good(tctx_run_lun(t, 0, cdb_ws(t->cdb, false, 0, 8, 0x08), zero, BS));
	assert_good(tctx_run(t, cdb_ws(t->cdb, true, 100, 4, 0x01)));
	assert_int_equal(t->fb->nrecs, 4);
	assert_int_equal(t->fb->recs[0].type, SCSITGT_IO_UNMAP);
	assert_int_equal(t->fb->recs[1].type, SCSITGT_IO_FLUSH);
	assert_int_equal(t->fb->recs[2].type, SCSITGT_IO_WRITE_ZEROES);
	assert_int_equal(t->fb->recs[3].type, SCSITGT_IO_FLUSH);
	/* Non-zero data: a WRITE with FUA, no extra FLUSH. */
	t->fb->nrecs = 0;
	assert_good(tctx_run_lun(t, 0, cdb_ws(t->cdb, true, 0, 4, 0), one, BS));
	assert_int_equal(t->fb->nrecs, 1);
	assert_int_equal(t->fb->recs[0].type, SCSITGT_IO_WRITE);
	assert_true(t->fb->recs[0].flags & SCSITGT_IO_FLAG_FUA);
	tctx_destroy(t);
}

/* Where no FLUSH is needed none is sent: WCE 1 (the initiator flushes), or no cache. */
static void test_zeroes_no_flush_needed(void **state)
{
	uint32_t sup = (1u << SCSITGT_IO_UNMAP) | (1u << SCSITGT_IO_WRITE_ZEROES) |
		       (1u << SCSITGT_IO_FLUSH);
	uint8_t zero[BS] = { 0 };
	struct tctx *t = cached_lun(SCSITGT_LUN_WRITE_CACHE, sup);

	(void)state;
	assert_true(t->lun->mode.wce);
	assert_good(tctx_run_lun(t, 0, cdb_ws(t->cdb, true, 8, 8, 0), zero, BS));
	assert_good(tctx_run_lun(t, 0, cdb_ws(t->cdb, false, 0, 8, 0x08), zero, BS));
	assert_int_equal(count_ios(t, SCSITGT_IO_FLUSH), 0);
	assert_int_equal(t->fb->nrecs, 2);
	tctx_destroy(t);
	/* No volatile cache (a FLUSH would have nothing to write). */
	t = lun_with(SCSITGT_LUN_THIN, (1u << SCSITGT_IO_UNMAP) | (1u << SCSITGT_IO_WRITE_ZEROES),
		     2048, true);
	assert_good(tctx_run_lun(t, 0, cdb_ws(t->cdb, true, 8, 8, 0), zero, BS));
	assert_good(tctx_run_lun(t, 0, cdb_ws(t->cdb, false, 0, 8, 0x08), zero, BS));
	assert_int_equal(count_ios(t, SCSITGT_IO_FLUSH), 0);
	assert_int_equal(t->fb->nrecs, 2);
	tctx_destroy(t);
}

/* The trailing FLUSH fails: the WRITE SAME ends with its sense (WRITE ERROR for -EIO, or the
 * backend's own sense), never GOOD; the zeroing io itself went through. */
static void test_trailing_flush_fails(void **state)
{
	uint32_t sup = (1u << SCSITGT_IO_UNMAP) | (1u << SCSITGT_IO_WRITE_ZEROES) |
		       (1u << SCSITGT_IO_FLUSH);
	struct tctx *t = cached_lun(0, sup);
	uint8_t zero[BS] = { 0 };

	(void)state;
	fake_backend_fail_type(t->fb, SCSITGT_IO_FLUSH, -EIO, 1);
	assert_sense(tctx_run_lun(t, 0, cdb_ws(t->cdb, true, 8, 8, 0), zero, BS), 0x3, 0x0c, 0x00);
	assert_int_equal(t->fb->nrecs, 2);
	assert_int_equal(t->fb->recs[0].type, SCSITGT_IO_WRITE_ZEROES);
	assert_int_equal(t->fb->recs[1].type, SCSITGT_IO_FLUSH);
	/* with UNMAP, and a backend answering with sense data of its own */
	fake_backend_fail_type(t->fb, SCSITGT_IO_FLUSH, -EIO, 1);
	t->fb->fail_sense = true;
	t->fb->fail_key = 0x4;
	t->fb->fail_asc = 0x44;
	t->fb->fail_ascq = 0x00;
	assert_sense(tctx_run_lun(t, 0, cdb_ws(t->cdb, false, 0, 8, 0x08), zero, BS), 0x4, 0x44,
		     0x00);
	assert_int_equal(t->fb->recs[2].type, SCSITGT_IO_UNMAP);
	assert_int_equal(t->fb->recs[3].type, SCSITGT_IO_FLUSH);
	/* the knob is spent: the next one is GOOD */
	assert_good(tctx_run(t, cdb_ws(t->cdb, true, 100, 4, 0x01)));
	tctx_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pattern_written),
		cmocka_unit_test(test_large_range_chunks),
		cmocka_unit_test(test_zero_offload_and_unmap),
		cmocka_unit_test(test_backend_write_same),
		cmocka_unit_test(test_bad_fields),
		cmocka_unit_test(test_backend_error),
		cmocka_unit_test(test_zero_blocks_to_end),
		cmocka_unit_test(test_block_limits),
		cmocka_unit_test(test_zeroes_durable_without_wce),
		cmocka_unit_test(test_zeroes_no_flush_needed),
		cmocka_unit_test(test_trailing_flush_fails),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
