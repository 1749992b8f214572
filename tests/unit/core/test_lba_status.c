/* SPDX-License-Identifier: MIT */
/* SBC-4 §5.17 GET LBA STATUS and §5.11/§5.12 PRE-FETCH (10)/(16). */
#include <errno.h>
#include <stdlib.h>
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

/* The answer from block 0 when blocks 100..115 alone are written: @last_n blocks from 116. */
static void check_around_written(const struct lf_result *r, uint32_t last_n)
{
	assert_int_equal(get_be32(&r->data[0]), 4 + 3 * 16);
	check_desc(&r->data[8], 0, 100, 1);
	check_desc(&r->data[24], 100, 16, 0);
	check_desc(&r->data[40], 116, last_n, 1);
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

/* A thin LUN whose backend answers with SCSITGT_IO_GET_LBA_STATUS ios (and also has the
 * synchronous op, which the core must then leave alone). */
static struct tctx *async_lun(enum fake_mode mode, size_t extent_max, uint64_t extent_blocks,
			      uv_loop_t *loop)
{
	struct fake_backend_opts o;

	fake_backend_opts_init(&o);
	o.supports = 1u << SCSITGT_IO_UNMAP | 1u << SCSITGT_IO_GET_LBA_STATUS;
	o.geo_flags = SCSITGT_GEOMETRY_LBPRZ;
	o.lba_status = true;
	o.lba_extent_max = extent_max;
	o.lba_extent_blocks = extent_blocks;
	o.mode = mode;
	o.loop = loop;
	return tctx_create(SCSITGT_LUN_THIN, &o);
}

static void write_blocks(struct tctx *t, uint64_t lba, uint32_t n)
{
	uint8_t data[64 * BS];

	assert_true(n <= 64);
	memset(data, 1, sizeof(data));
	assert_good(
		tctx_run_lun(t, 0, cdb_rw(t->cdb, SBC_WRITE_16, lba, n, 0), data, (size_t)n * BS));
}

static void test_async_io(void **state)
{
	struct tctx *t = async_lun(FAKE_SYNC, 0, 0, NULL);
	const struct fake_io_rec *rec;
	struct lf_result *r;

	(void)state;
	write_blocks(t, 100, 16);
	r = tctx_run(t, cdb_gls(t->cdb, 0, 1024));
	assert_good(r);
	/* One io for the rest of the LUN, no data buffer; the sync op was not used. */
	rec = fake_backend_last(t->fb);
	assert_int_equal(rec->type, SCSITGT_IO_GET_LBA_STATUS);
	assert_int_equal(rec->lba, 0);
	assert_int_equal(rec->num_blocks, 2048);
	assert_int_equal(rec->iovcnt, 0);
	check_around_written(r, 2048 - 116);
	/* From the middle, one descriptor allowed by the allocation length. */
	r = tctx_run(t, cdb_gls(t->cdb, 110, 24));
	assert_good(r);
	assert_int_equal(r->data_len, 24);
	assert_int_equal(get_be32(&r->data[0]), 4 + 2 * 16);
	check_desc(&r->data[8], 110, 6, 0);
	assert_int_equal(fake_backend_last(t->fb)->lba, 110);
	assert_int_equal(fake_backend_last(t->fb)->num_blocks, 2048 - 110);
	tctx_destroy(t);
}

static void test_async_pieces_merge_and_stop(void **state)
{
	struct tctx *t = async_lun(FAKE_SYNC, 0, 7, NULL);
	struct lf_result *r;

	(void)state;
	write_blocks(t, 100, 16);
	/* Extents of at most 7 blocks: merged into one descriptor per run of one status, until
	 * the core's array of 256 extents is full (18 extents up to block 116, then 238 x 7). */
	r = tctx_run(t, cdb_gls(t->cdb, 0, 1024));
	assert_good(r);
	check_around_written(r, 238 * 7);
	tctx_destroy(t);
	t = async_lun(FAKE_SYNC, 0, 100, NULL);
	write_blocks(t, 100, 16);
	r = tctx_run(t, cdb_gls(t->cdb, 0, 1024));
	assert_good(r);
	check_around_written(r, 2048 - 116);
	tctx_destroy(t);
	/* A backend that describes only the first two extents: the answer stops there (the
	 * initiator asks again from block 116). */
	t = async_lun(FAKE_SYNC, 2, 0, NULL);
	write_blocks(t, 100, 16);
	r = tctx_run(t, cdb_gls(t->cdb, 0, 1024));
	assert_good(r);
	assert_int_equal(get_be32(&r->data[0]), 4 + 2 * 16);
	check_desc(&r->data[8], 0, 100, 1);
	check_desc(&r->data[24], 100, 16, 0);
	r = tctx_run(t, cdb_gls(t->cdb, 116, 1024));
	check_desc(&r->data[8], 116, 2048 - 116, 1);
	tctx_destroy(t);
}

static void test_async_descriptor_budget(void **state)
{
	struct tctx *t = async_lun(FAKE_SYNC, 0, 0, NULL);
	struct lf_result *r;

	(void)state;
	/* Every other block written: 2048 runs, more than one answer holds. */
	for (uint64_t b = 0; b < 2048; b += 2)
		write_blocks(t, b, 1);
	r = tctx_run(t, cdb_gls(t->cdb, 0, 8 + 3 * 16));
	assert_good(r);
	assert_int_equal(get_be32(&r->data[0]), 4 + 3 * 16);
	check_desc(&r->data[8], 0, 1, 0);
	check_desc(&r->data[24], 1, 1, 1);
	check_desc(&r->data[40], 2, 1, 0);
	/* The core's limit of 256 descriptors per answer. */
	r = tctx_run(t, cdb_gls(t->cdb, 0, 65536));
	assert_good(r);
	assert_int_equal(get_be32(&r->data[0]), 4 + 256 * 16);
	check_desc(&r->data[8 + 255 * 16], 255, 1, 1);
	tctx_destroy(t);
}

static void test_async_empty_and_errors(void **state)
{
	struct fake_backend_opts o;
	struct tctx *t;
	struct lf_result *r;

	(void)state;
	/* A backend that answers no extent: the range is mapped. */
	fake_backend_opts_init(&o);
	o.supports = 1u << SCSITGT_IO_UNMAP | 1u << SCSITGT_IO_GET_LBA_STATUS;
	t = tctx_create(SCSITGT_LUN_THIN, &o);
	r = tctx_run(t, cdb_gls(t->cdb, 5, 1024));
	assert_good(r);
	assert_int_equal(get_be32(&r->data[0]), 4 + 16);
	check_desc(&r->data[8], 5, 2043, 0);
	tctx_destroy(t);
	/* A failed query is an error, never a made-up answer. */
	t = async_lun(FAKE_SYNC, 0, 0, NULL);
	fake_backend_fail_next(t->fb, -EIO, 1);
	r = tctx_run(t, cdb_gls(t->cdb, 0, 1024));
	assert_sense(r, SENSE_MEDIUM_ERROR, 0x11, 0x00);
	fake_backend_fail_next(t->fb, -EAGAIN, 1);
	r = tctx_run(t, cdb_gls(t->cdb, 0, 1024));
	assert_int_equal(r->status, 0x08);
	fake_backend_fail_next_sense(t->fb, 0x02, 0x04, 0x0b);
	r = tctx_run(t, cdb_gls(t->cdb, 0, 1024));
	assert_sense(r, 0x02, 0x04, 0x0b);
	/* A fully provisioned LUN never asks. */
	tctx_destroy(t);
	fake_backend_opts_init(&o);
	o.supports = 1u << SCSITGT_IO_UNMAP | 1u << SCSITGT_IO_GET_LBA_STATUS;
	t = tctx_create(0, &o);
	r = tctx_run(t, cdb_gls(t->cdb, 0, 1024));
	assert_good(r);
	assert_int_equal(t->fb->nrecs, 0);
	tctx_destroy(t);
}

/* Completed later on the loop, and from another thread that fills the extents. */
static void test_async_completion_modes(void **state)
{
	enum fake_mode modes[] = { FAKE_ASYNC, FAKE_THREAD };

	(void)state;
	for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		struct tctx *t = calloc(1, sizeof(*t));
		struct fake_backend_opts o;
		struct lf_result *r;

		assert_non_null(t);
		assert_int_equal(loop_fabric_create(&t->lf, NULL), 0);
		fake_backend_opts_init(&o);
		o.supports = 1u << SCSITGT_IO_UNMAP | 1u << SCSITGT_IO_GET_LBA_STATUS;
		o.lba_status = true;
		o.mode = modes[m];
		o.loop = &t->lf->loop;
		assert_int_equal(fake_backend_lun_create(&t->lun, &t->fb, t->lf->tgt, 0,
							 SCSITGT_LUN_THIN, &o),
				 0);
		write_blocks(t, 10, 5);
		r = tctx_run(t, cdb_gls(t->cdb, 0, 1024));
		assert_good(r);
		assert_int_equal(get_be32(&r->data[0]), 4 + 3 * 16);
		check_desc(&r->data[8], 0, 10, 1);
		check_desc(&r->data[24], 10, 5, 0);
		check_desc(&r->data[40], 15, 2048 - 15, 1);
		tctx_destroy(t);
	}
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
		cmocka_unit_test(test_async_io),
		cmocka_unit_test(test_async_pieces_merge_and_stop),
		cmocka_unit_test(test_async_descriptor_budget),
		cmocka_unit_test(test_async_empty_and_errors),
		cmocka_unit_test(test_async_completion_modes),
		cmocka_unit_test(test_gls_bad_fields),
		cmocka_unit_test(test_prefetch),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
