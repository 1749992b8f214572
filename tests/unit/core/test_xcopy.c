/* SPDX-License-Identifier: MIT */
/*
 * SPC-4 §6.4 EXTENDED COPY(LID1) and RECEIVE COPY RESULTS (core/xcopy*.c): the parameter list
 * checks to the sense byte, copies within one LUN and between two with the data verified,
 * overlapping ranges, the range lock, reservations, write protection, CSCD failures, the list
 * identifier table, VPD 8Fh.
 */
#include <errno.h>
#include <string.h>

#include "test_util.h"

#include "core/cdb.h"
#include "core/scsi_spec.h"
#include "core/xcopy.h"

#define BS 512u
#define NBLOCKS 8192u

/* A parameter list under construction: CSCD descriptors first, then segments. */
struct xl {
	uint8_t b[SCSITGT__XCOPY_MAX_PARAM + 256];
	size_t n;    /* bytes so far */
	size_t tdll; /* CSCD bytes */
	size_t sdll; /* segment bytes */
};

static void xl_init(struct xl *x, uint8_t list_id, uint8_t usage)
{
	memset(x, 0, sizeof(*x));
	x->b[0] = list_id;
	x->b[1] = (uint8_t)(usage << 3);
	x->n = 16;
}

static void xl_cscd_naa(struct xl *x, uint64_t naa, uint32_t block_len)
{
	uint8_t *d = &x->b[x->n];

	d[0] = 0xe4;
	d[4] = 0x01; /* binary */
	d[5] = 0x03; /* LU, NAA */
	d[7] = 8;
	put_be64(&d[8], naa);
	put_be24(&d[29], block_len);
	x->n += 32;
	x->tdll += 32;
}

static void xl_cscd(struct xl *x, const struct scsitgt_lun *lun)
{
	xl_cscd_naa(x, lun->ident.naa, lun->geo.block_size);
}

static void xl_seg(struct xl *x, uint16_t src, uint16_t dst, uint16_t n, uint64_t slba,
		   uint64_t dlba)
{
	uint8_t *d = &x->b[x->n];

	d[0] = 0x02;
	put_be16(&d[2], 0x18);
	put_be16(&d[4], src);
	put_be16(&d[6], dst);
	put_be16(&d[10], n);
	put_be64(&d[12], slba);
	put_be64(&d[20], dlba);
	x->n += 28;
	x->sdll += 28;
}

static size_t xl_done(struct xl *x)
{
	put_be16(&x->b[2], (uint16_t)x->tdll);
	put_be32(&x->b[8], (uint32_t)x->sdll);
	return x->n;
}

static size_t cdb_xcopy(uint8_t *cdb, uint32_t len)
{
	memset(cdb, 0, CDB_BUF);
	cdb[0] = SPC_EXTENDED_COPY;
	put_be32(&cdb[10], len);
	return 16;
}

static size_t cdb_rcr(uint8_t *cdb, uint8_t sa, uint8_t list_id, uint32_t alloc)
{
	memset(cdb, 0, CDB_BUF);
	cdb[0] = SPC_RECEIVE_COPY_RESULTS;
	cdb[1] = sa;
	cdb[2] = list_id;
	put_be32(&cdb[10], alloc);
	return 16;
}

static struct lf_result *run_xcopy(struct tctx *t, uint64_t lun, struct xl *x)
{
	size_t len = xl_done(x);

	return tctx_run_lun(t, lun, cdb_xcopy(t->cdb, (uint32_t)len), x->b, len);
}

static struct tctx *setup(enum fake_mode mode)
{
	struct fake_backend_opts o;

	fake_backend_opts_init(&o);
	o.num_blocks = NBLOCKS;
	o.mode = mode;
	return tctx_create(0, &o);
}

/* A second LUN @id on the same target. */
static struct fake_backend *add_lun(struct tctx *t, uint64_t id, uint32_t flags, uint32_t bs,
				    enum fake_mode mode, struct scsitgt_lun **lun)
{
	struct fake_backend_opts o;
	struct fake_backend *fb;

	fake_backend_opts_init(&o);
	o.block_size = bs;
	o.num_blocks = (uint64_t)NBLOCKS * BS / bs;
	o.mode = mode;
	o.loop = &t->lf->loop;
	assert_int_equal(fake_backend_lun_create(lun, &fb, t->lf->tgt, id, flags, &o), 0);
	return fb;
}

static void fill(struct fake_backend *fb, uint64_t byte_off, size_t len, uint8_t seed)
{
	for (size_t i = 0; i < len; i++)
		fb->data[byte_off + i] = (uint8_t)(seed + i * 7 + i / 512);
}

static bool same(const uint8_t *a, const uint8_t *b, size_t len)
{
	return memcmp(a, b, len) == 0;
}

/* ILLEGAL REQUEST @asc/@ascq with a parameter list field pointer (C/D 0). */
static void assert_bad_list(const struct lf_result *r, uint8_t asc, uint8_t ascq, int field,
			    int bit)
{
	assert_sense(r, SENSE_ILLEGAL_REQUEST, asc, ascq);
	if (field < 0) {
		assert_no_sks(r);
		return;
	}
	assert_sks(r, 0, field, bit);
}

/* COPY ABORTED, fixed format, @asc/@ascq, segment @seg in COMMAND-SPECIFIC INFORMATION. */
static void assert_copy_aborted(const struct lf_result *r, uint8_t asc, uint8_t ascq, uint16_t seg)
{
	assert_int_equal(r->status, SAM_STAT_CHECK_CONDITION);
	assert_int_equal(r->sense[0] & 0x7f, 0x70);
	assert_int_equal(r->sense[2] & 0x0f, SENSE_COPY_ABORTED);
	assert_int_equal(r->sense[12], asc);
	assert_int_equal(r->sense[13], ascq);
	assert_int_equal(get_be16(&r->sense[10]), seg);
	assert_int_equal(r->sense_len, 8u + r->sense[7]);
}

/* The segment pointer (SD @sd, FIELD POINTER @field, bit 7). */
static void assert_seg_pointer(const struct lf_result *r, bool sd, uint16_t field)
{
	assert_int_equal(r->sense[15] & 0x80, 0x80);
	assert_int_equal(!!(r->sense[15] & 0x20), sd);
	assert_int_equal(get_be16(&r->sense[16]), field);
}

/* The CSCD's answer appended to the sense: @which 0 source, 1 destination. */
static void assert_cscd_area(const struct lf_result *r, int which, uint8_t status, uint8_t key,
			     uint8_t asc, uint8_t ascq)
{
	assert_int_equal(r->sense[8 + which], 18);
	assert_int_equal(r->sense[8 + !which], 0);
	assert_int_equal(r->sense[18], status);
	if (status != SAM_STAT_CHECK_CONDITION) {
		assert_int_equal(r->sense_len, 19);
		return;
	}
	assert_int_equal(r->sense_len, 19 + 18);
	assert_int_equal(r->sense[19] & 0x7f, 0x70);
	assert_int_equal(r->sense[19 + 2] & 0x0f, key);
	assert_int_equal(r->sense[19 + 12], asc);
	assert_int_equal(r->sense[19 + 13], ascq);
}

/* --- The parameter list. --- */

static void test_list_errors(void **state)
{
	struct tctx *t = setup(FAKE_SYNC);
	struct xl x;
	struct lf_result *r;
	size_t len;

	(void)state;
	/* PARAMETER LIST LENGTH zero: nothing to do, GOOD. */
	assert_good(tctx_run_lun(t, 0, cdb_xcopy(t->cdb, 0), NULL, 0));
	/* A header cut short. */
	xl_init(&x, 1, 0);
	r = tctx_run_lun(t, 0, cdb_xcopy(t->cdb, 15), x.b, 15);
	assert_bad_list(r, 0x1a, 0x00, -1, -1);
	/* A CSCD descriptor cut short, then a segment descriptor cut short. */
	xl_init(&x, 1, 0);
	xl_cscd(&x, t->lun);
	xl_seg(&x, 0, 0, 1, 0, 1);
	len = xl_done(&x);
	r = tctx_run_lun(t, 0, cdb_xcopy(t->cdb, 16 + 31), x.b, 16 + 31);
	assert_bad_list(r, 0x1a, 0x00, -1, -1);
	r = tctx_run_lun(t, 0, cdb_xcopy(t->cdb, (uint32_t)len - 1), x.b, len - 1);
	assert_bad_list(r, 0x1a, 0x00, -1, -1);
	/* Reserved bits of byte 1, LIST ID USAGE 01b, 11b with a list identifier. */
	x.b[1] = 0x40;
	assert_bad_list(run_xcopy(t, 0, &x), 0x26, 0x00, 1, 6);
	x.b[1] = 0x01 << 3;
	assert_bad_list(run_xcopy(t, 0, &x), 0x26, 0x00, 1, 4);
	x.b[1] = 0x03 << 3;
	assert_bad_list(run_xcopy(t, 0, &x), 0x26, 0x00, 0, 7);
	x.b[1] = 0;
	/* Reserved bytes 4..7; inline data (MAXIMUM INLINE DATA LENGTH 0). */
	x.b[6] = 0x10;
	assert_bad_list(run_xcopy(t, 0, &x), 0x26, 0x00, 6, 4);
	x.b[6] = 0;
	put_be32(&x.b[12], 4);
	assert_bad_list(run_xcopy(t, 0, &x), 0x26, 0x00, 12, 7);
	put_be32(&x.b[12], 0);
	/* Identification descriptor: ASSOCIATION not a LU, DESIGNATOR LENGTH above 20, DISK
	 * BLOCK LENGTH zero, reserved bits of byte 28. */
	x.b[16 + 5] = 0x13;
	assert_bad_list(run_xcopy(t, 0, &x), 0x26, 0x00, 16 + 5, 5);
	x.b[16 + 5] = 0x03;
	x.b[16 + 7] = 21;
	assert_bad_list(run_xcopy(t, 0, &x), 0x26, 0x00, 16 + 7, 7);
	x.b[16 + 7] = 8;
	put_be24(&x.b[16 + 29], 0);
	assert_bad_list(run_xcopy(t, 0, &x), 0x26, 0x00, 16 + 29, 7);
	put_be24(&x.b[16 + 29], BS);
	x.b[16 + 28] = 0x80;
	assert_bad_list(run_xcopy(t, 0, &x), 0x26, 0x00, 16 + 28, 7);
	x.b[16 + 28] = 0;
	/* Segment: reserved bits of byte 1, DESCRIPTOR LENGTH, reserved bytes 8..9. */
	x.b[48 + 1] = 0x10;
	assert_bad_list(run_xcopy(t, 0, &x), 0x26, 0x00, 48 + 1, 4);
	x.b[48 + 1] = 0;
	put_be16(&x.b[48 + 2], 0x14);
	assert_bad_list(run_xcopy(t, 0, &x), 0x26, 0x00, 48 + 2, 7);
	put_be16(&x.b[48 + 2], 0x18);
	x.b[48 + 9] = 0x01;
	assert_bad_list(run_xcopy(t, 0, &x), 0x26, 0x00, 48 + 9, 0);
	x.b[48 + 9] = 0;
	/* A segment list length that ends inside a descriptor. */
	put_be32(&x.b[8], 20);
	r = tctx_run_lun(t, 0, cdb_xcopy(t->cdb, (uint32_t)len), x.b, len);
	assert_bad_list(r, 0x26, 0x00, 8, 7);
	/* The intact list copies. */
	assert_good(run_xcopy(t, 0, &x));
	tctx_destroy(t);
}

static void test_list_type_codes(void **state)
{
	struct tctx *t = setup(FAKE_SYNC);
	struct xl x;

	(void)state;
	/* UNSUPPORTED TARGET DESCRIPTOR TYPE CODE: a Fibre Channel N_Port_Name descriptor. */
	xl_init(&x, 1, 0);
	xl_cscd(&x, t->lun);
	x.b[16] = 0xe0;
	xl_seg(&x, 0, 0, 1, 0, 1);
	assert_bad_list(run_xcopy(t, 0, &x), 0x26, 0x07, 16, 7);
	/* UNSUPPORTED SEGMENT DESCRIPTOR TYPE CODE: stream to stream (03h) at the second. */
	xl_init(&x, 1, 0);
	xl_cscd(&x, t->lun);
	xl_seg(&x, 0, 0, 1, 0, 1);
	xl_seg(&x, 0, 0, 1, 0, 1);
	x.b[16 + 32 + 28] = 0x03;
	assert_bad_list(run_xcopy(t, 0, &x), 0x26, 0x09, 16 + 32 + 28, 7);
	/* Obsolete bits of the identification descriptor's byte 1 (LU ID TYPE, NUL) are
	 * ignored since SPC-4. */
	xl_init(&x, 1, 0);
	xl_cscd(&x, t->lun);
	x.b[17] = 0xa0;
	xl_seg(&x, 0, 0, 1, 0, 1);
	assert_good(run_xcopy(t, 0, &x));
	tctx_destroy(t);
}

static void test_list_limits(void **state)
{
	struct tctx *t = setup(FAKE_SYNC);
	struct xl x;
	struct lf_result *r;

	(void)state;
	/* One CSCD descriptor too many. */
	xl_init(&x, 1, 0);
	for (unsigned int i = 0; i <= SCSITGT__XCOPY_MAX_CSCD; i++)
		xl_cscd(&x, t->lun);
	xl_seg(&x, 0, 0, 1, 0, 1);
	assert_bad_list(run_xcopy(t, 0, &x), 0x26, 0x06, 2, 7);
	/* One segment descriptor too many. */
	xl_init(&x, 2, 0);
	xl_cscd(&x, t->lun);
	for (unsigned int i = 0; i <= SCSITGT__XCOPY_MAX_SEGS; i++)
		xl_seg(&x, 0, 0, 1, 0, 1);
	assert_bad_list(run_xcopy(t, 0, &x), 0x26, 0x08, 8, 7);
	/* Descriptor lists above MAXIMUM DESCRIPTOR LIST LENGTH: PARAMETER LIST LENGTH ERROR,
	 * although the CSCD count is also too high. */
	xl_init(&x, 3, 0);
	for (unsigned int i = 0; i <= SCSITGT__XCOPY_MAX_CSCD; i++)
		xl_cscd(&x, t->lun);
	while (x.tdll + x.sdll <= SCSITGT__XCOPY_MAX_DESC_LIST)
		xl_seg(&x, 0, 0, 1, 0, 1);
	r = run_xcopy(t, 0, &x);
	assert_bad_list(r, 0x1a, 0x00, -1, -1);
	/* A PARAMETER LIST LENGTH above the largest list: refused from the CDB. */
	r = tctx_run_lun(t, 0, cdb_xcopy(t->cdb, SCSITGT__XCOPY_MAX_PARAM + 1), NULL, 0);
	assert_bad_list(r, 0x1a, 0x00, -1, -1);
	/* Exactly the largest list passes the checks (and copies). */
	xl_init(&x, 4, 0);
	for (unsigned int i = 0; i < SCSITGT__XCOPY_MAX_CSCD; i++)
		xl_cscd(&x, t->lun);
	for (unsigned int i = 0; i < SCSITGT__XCOPY_MAX_SEGS; i++)
		xl_seg(&x, (uint16_t)(i % SCSITGT__XCOPY_MAX_CSCD), 3, 2, i, 1000 + 2 * i);
	assert_int_equal(x.tdll + x.sdll, SCSITGT__XCOPY_MAX_DESC_LIST);
	assert_good(run_xcopy(t, 0, &x));
	/* Reserved CDB bits. */
	cdb_xcopy(t->cdb, 0);
	t->cdb[5] = 1;
	assert_bad_cdb(tctx_run(t, 16), 5, 0);
	tctx_destroy(t);
}

/* The parser alone, as the fuzz target drives it: never reads past the length. */
static void test_parse_pure(void **state)
{
	struct scsitgt__xcopy_list *l = malloc(sizeof(*l));
	struct scsitgt__xcopy_err err;
	struct xl x;
	size_t len;

	(void)state;
	assert_non_null(l);
	xl_init(&x, 9, 2);
	xl_cscd_naa(&x, 0x5001122334455667ull, 4096);
	xl_cscd_naa(&x, 0x5001122334455668ull, 512);
	xl_seg(&x, 1, 0, 77, 123, 456);
	x.b[16 + 64 + 1] = 0x02; /* DC */
	len = xl_done(&x);
	assert_true(scsitgt__xcopy_parse(x.b, len, l, &err));
	assert_int_equal(l->list_id, 9);
	assert_int_equal(l->list_id_usage, 2);
	assert_int_equal(l->ncscd, 2);
	assert_int_equal(l->nseg, 1);
	assert_int_equal(l->cscd[0].block_len, 4096);
	assert_int_equal(l->cscd[1].offset, 48);
	assert_int_equal(get_be64(l->cscd[1].desig), 0x5001122334455668ull);
	assert_true(l->seg[0].dc);
	assert_int_equal(l->seg[0].src, 1);
	assert_int_equal(l->seg[0].nblocks, 77);
	assert_int_equal(l->seg[0].src_lba, 123);
	assert_int_equal(l->seg[0].dst_lba, 456);
	for (size_t n = 1; n < len; n++)
		assert_false(scsitgt__xcopy_parse(x.b, n, l, &err));
	free(l);
}

/* --- Copies. --- */

static void test_copy_within_lun(void **state)
{
	struct tctx *t = setup(FAKE_SYNC);
	struct xl x;
	uint8_t *d = t->fb->data;

	(void)state;
	fill(t->fb, 0, 2048 * BS, 0x11);
	xl_init(&x, 1, 2);
	xl_cscd(&x, t->lun);
	/* 2048 blocks (1 MiB pieces), then a short segment. */
	xl_seg(&x, 0, 0, 2048, 0, NBLOCKS - 2048);
	xl_seg(&x, 0, 0, 3, 5, 4000);
	assert_good(run_xcopy(t, 0, &x));
	assert_true(same(d, d + (size_t)(NBLOCKS - 2048) * BS, 2048 * BS));
	assert_true(same(d + 5 * BS, d + 4000 * BS, 3 * BS));
	/* Copies move data with READ and WRITE ios of at most a megabyte. */
	for (size_t i = 0; i < t->fb->nrecs; i++)
		assert_true(t->fb->recs[i].bytes <= SCSITGT__XCOPY_CHUNK_BYTES);
	/* NUMBER OF BLOCKS zero moves nothing. */
	xl_init(&x, 1, 2);
	xl_cscd(&x, t->lun);
	xl_seg(&x, 0, 0, 0, 0, 1);
	t->fb->nrecs = 0;
	assert_good(run_xcopy(t, 0, &x));
	assert_int_equal(t->fb->nrecs, 0);
	tctx_destroy(t);
}

static void test_copy_between_luns(void **state)
{
	struct tctx *t = setup(FAKE_SYNC);
	struct scsitgt_lun *l1, *l2;
	struct fake_backend *f1 = add_lun(t, 1, 0, BS, FAKE_ASYNC, &l1);
	struct fake_backend *f2 = add_lun(t, 2, 0, 4096, FAKE_SYNC, &l2);
	struct xl x;

	(void)state;
	fill(t->fb, 0, 64 * BS, 0x21);
	fill(f1, 100 * BS, 16 * BS, 0x42);
	/* Sent to LUN 1, copying LUN 0 -> LUN 1 and LUN 1 -> LUN 2 (4096-byte blocks, DC 0:
	 * 16 source blocks are two destination blocks). */
	xl_init(&x, 5, 0);
	xl_cscd(&x, t->lun);
	xl_cscd(&x, l1);
	xl_cscd(&x, l2);
	xl_seg(&x, 0, 1, 64, 0, 1000);
	xl_seg(&x, 1, 2, 16, 100, 7);
	assert_good(run_xcopy(t, 1, &x));
	assert_true(same(t->fb->data, f1->data + 1000 * BS, 64 * BS));
	assert_true(same(f1->data + 100 * BS, f2->data + 7 * 4096, 16 * BS));
	/* With DC 1, NUMBER OF BLOCKS counts destination blocks: 1 block of 4096 bytes. */
	xl_init(&x, 6, 0);
	xl_cscd(&x, t->lun);
	xl_cscd(&x, l2);
	xl_seg(&x, 0, 1, 1, 8, 100);
	x.b[16 + 64 + 1] = 0x02;
	assert_good(run_xcopy(t, 0, &x));
	assert_true(same(t->fb->data + 8 * BS, f2->data + 100 * 4096, 4096));
	/* A segment that is not whole blocks on the other side: UNEXPECTED INEXACT SEGMENT. */
	xl_init(&x, 7, 0);
	xl_cscd(&x, t->lun);
	xl_cscd(&x, l2);
	xl_seg(&x, 0, 1, 3, 0, 0);
	assert_copy_aborted(run_xcopy(t, 0, &x), 0x26, 0x0a, 0);
	assert_seg_pointer(&t->r, true, 10);
	/* A DISK BLOCK LENGTH that is not the LUN's: INCORRECT COPY TARGET DEVICE TYPE. */
	xl_init(&x, 7, 0);
	xl_cscd(&x, t->lun);
	xl_cscd_naa(&x, l2->ident.naa, 512);
	xl_seg(&x, 0, 1, 8, 0, 0);
	assert_copy_aborted(run_xcopy(t, 0, &x), 0x0d, 0x03, 0);
	assert_seg_pointer(&t->r, false, 16 + 32 + 29);
	tctx_destroy(t);
}

static void test_copy_overlap(void **state)
{
	struct tctx *t = setup(FAKE_SYNC);
	size_t n = 3000 * BS; /* three pieces */
	uint8_t *ref = malloc(n);
	struct xl x;

	(void)state;
	assert_non_null(ref);
	/* Destination above the source, overlapping: as if through a buffer. */
	fill(t->fb, 0, n, 0x5a);
	memcpy(ref, t->fb->data, n);
	xl_init(&x, 1, 2);
	xl_cscd(&x, t->lun);
	xl_seg(&x, 0, 0, 3000, 0, 1000);
	assert_good(run_xcopy(t, 0, &x));
	assert_true(same(ref, t->fb->data + 1000 * BS, n));
	/* Destination below the source, overlapping. */
	fill(t->fb, 4000 * BS, n, 0x33);
	memcpy(ref, t->fb->data + 4000 * BS, n);
	xl_init(&x, 1, 2);
	xl_cscd(&x, t->lun);
	xl_seg(&x, 0, 0, 3000, 4000, 3500);
	assert_good(run_xcopy(t, 0, &x));
	assert_true(same(ref, t->fb->data + 3500 * BS, n));
	free(ref);
	tctx_destroy(t);
}

/* --- Errors while the segments are processed. --- */

static void test_unreachable(void **state)
{
	struct tctx *t = setup(FAKE_SYNC);
	struct xl x;

	(void)state;
	/* A destination index past the CSCD list: UNREACHABLE COPY TARGET, segment 1. */
	xl_init(&x, 1, 0);
	xl_cscd(&x, t->lun);
	xl_seg(&x, 0, 0, 1, 0, 1);
	xl_seg(&x, 0, 1, 1, 0, 1);
	assert_copy_aborted(run_xcopy(t, 0, &x), 0x08, 0x04, 1);
	assert_seg_pointer(&t->r, true, 6);
	/* A designator no LUN has: COPY TARGET DEVICE NOT REACHABLE, pointing at it. */
	xl_init(&x, 1, 0);
	xl_cscd(&x, t->lun);
	xl_cscd_naa(&x, t->lun->ident.naa ^ 1, BS);
	xl_seg(&x, 1, 0, 1, 0, 1);
	assert_copy_aborted(run_xcopy(t, 0, &x), 0x0d, 0x02, 0);
	assert_seg_pointer(&t->r, false, 16 + 32 + 8);
	/* An EUI-64 designator no LUN has (the LUN has none: its NAA value does not count). */
	xl_init(&x, 1, 0);
	xl_cscd(&x, t->lun);
	x.b[16 + 5] = 0x02;
	xl_seg(&x, 0, 0, 1, 0, 1);
	assert_copy_aborted(run_xcopy(t, 0, &x), 0x0d, 0x02, 0);
	/* A device type other than direct access. */
	xl_init(&x, 1, 0);
	xl_cscd(&x, t->lun);
	x.b[16 + 1] = 0x01;
	xl_seg(&x, 0, 0, 1, 0, 1);
	assert_copy_aborted(run_xcopy(t, 0, &x), 0x0d, 0x03, 0);
	assert_seg_pointer(&t->r, false, 16 + 1);
	tctx_destroy(t);
}

/* A CSCD given by a 16-byte designator (NAA 6 or UUID, the LUN options' naa_extended and
 * uuid, lun_limits.c) at byte 8 of the descriptor, DESIGNATOR LENGTH @len. */
static void xl_cscd_desig(struct xl *x, uint8_t type, const uint8_t *desig, uint8_t len,
			  uint32_t block_len)
{
	uint8_t *d = &x->b[x->n];

	d[0] = 0xe4;
	d[4] = 0x01; /* binary */
	d[5] = type; /* LU association */
	d[7] = len;
	memcpy(&d[8], desig, len);
	put_be24(&d[29], block_len);
	x->n += 32;
	x->tdll += 32;
}

static void test_copy_by_naa6_and_uuid(void **state)
{
	static const uint8_t naa6[16] = { 0x60, 0x01, 0x40, 0x5f, 0xed, 0xcb, 0xa9, 0x87,
					  0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef };
	/* UUID designator: UUID TYPE 1h, reserved, then the UUID (SPC-5 §7.7.6.12). */
	static const uint8_t uuid_desig[18] = { 0x10, 0x00, 0x1b, 0x4e, 0x28, 0xba,
						0x2f, 0xa1, 0x41, 0xd2, 0x88, 0x3f,
						0xb9, 0xa7, 0x6b, 0x1a, 0x5c, 0x0e };
	struct tctx *t = setup(FAKE_SYNC);
	struct scsitgt_lun *l1;
	struct fake_backend *f1 = add_lun(t, 1, 0, BS, FAKE_SYNC, &l1);
	struct xl x;

	(void)state;
	l1->desig.has_naa_extended = true;
	memcpy(l1->desig.naa_extended, naa6, 16);
	l1->desig.has_uuid = true;
	memcpy(l1->desig.uuid, &uuid_desig[2], 16);
	fill(t->fb, 0, 16 * BS, 0x33);
	/* By NAA 6. */
	xl_init(&x, 1, 0);
	xl_cscd(&x, t->lun);
	xl_cscd_desig(&x, 0x03, naa6, 16, BS);
	xl_seg(&x, 0, 1, 8, 0, 200);
	assert_good(run_xcopy(t, 0, &x));
	assert_true(same(t->fb->data, f1->data + 200 * BS, 8 * BS));
	/* By UUID. */
	xl_init(&x, 2, 0);
	xl_cscd(&x, t->lun);
	xl_cscd_desig(&x, 0x0a, uuid_desig, 18, BS);
	xl_seg(&x, 0, 1, 8, 8, 300);
	assert_good(run_xcopy(t, 0, &x));
	assert_true(same(t->fb->data + 8 * BS, f1->data + 300 * BS, 8 * BS));
	/* A UUID no LUN has: COPY TARGET DEVICE NOT REACHABLE. */
	xl_init(&x, 3, 0);
	xl_cscd(&x, t->lun);
	xl_cscd_desig(&x, 0x0a, uuid_desig, 18, BS);
	x.b[16 + 32 + 8 + 17] ^= 1;
	xl_seg(&x, 0, 1, 1, 0, 1);
	assert_copy_aborted(run_xcopy(t, 0, &x), 0x0d, 0x02, 0);
	tctx_destroy(t);
}

static void test_out_of_range(void **state)
{
	struct tctx *t = setup(FAKE_SYNC);
	struct xl x;

	(void)state;
	/* Destination past the end (the LUN's own answer: LBA OUT OF RANGE), nothing written. */
	xl_init(&x, 1, 0);
	xl_cscd(&x, t->lun);
	xl_seg(&x, 0, 0, 1, 0, 1);
	xl_seg(&x, 0, 0, 2048, 0, NBLOCKS - 1);
	assert_copy_aborted(run_xcopy(t, 0, &x), 0x00, 0x00, 1);
	assert_seg_pointer(&t->r, true, 20);
	assert_cscd_area(&t->r, 1, SAM_STAT_CHECK_CONDITION, SENSE_ILLEGAL_REQUEST, 0x21, 0x00);
	assert_int_equal(t->r.sense[0] & 0x80, 0); /* no residual: nothing of it was written */
	/* Source past the end. */
	xl_init(&x, 1, 0);
	xl_cscd(&x, t->lun);
	xl_seg(&x, 0, 0, 2, UINT64_MAX, 1);
	assert_copy_aborted(run_xcopy(t, 0, &x), 0x00, 0x00, 0);
	assert_seg_pointer(&t->r, true, 12);
	assert_cscd_area(&t->r, 0, SAM_STAT_CHECK_CONDITION, SENSE_ILLEGAL_REQUEST, 0x21, 0x00);
	tctx_destroy(t);
}

static void test_read_only_destination(void **state)
{
	struct tctx *t = setup(FAKE_SYNC);
	struct scsitgt_lun *ro;
	struct fake_backend *fro = add_lun(t, 1, SCSITGT_LUN_READ_ONLY, BS, FAKE_SYNC, &ro);
	struct xl x;

	(void)state;
	fill(fro, 0, 8 * BS, 0x99);
	/* Read-only source: fine. */
	xl_init(&x, 1, 0);
	xl_cscd(&x, ro);
	xl_cscd(&x, t->lun);
	xl_seg(&x, 0, 1, 8, 0, 0);
	assert_good(run_xcopy(t, 1, &x));
	assert_true(same(fro->data, t->fb->data, 8 * BS));
	/* Read-only destination: its DATA PROTECT, WRITE PROTECTED inside COPY ABORTED. */
	xl_init(&x, 1, 0);
	xl_cscd(&x, t->lun);
	xl_cscd(&x, ro);
	xl_seg(&x, 0, 1, 8, 0, 0);
	fro->nrecs = 0;
	assert_copy_aborted(run_xcopy(t, 1, &x), 0x00, 0x00, 0);
	assert_cscd_area(&t->r, 1, SAM_STAT_CHECK_CONDITION, SENSE_DATA_PROTECT, 0x27, 0x00);
	assert_int_equal(fro->nrecs, 0);
	tctx_destroy(t);
}

static void test_reservation_conflict(void **state)
{
	struct tctx *t = setup(FAKE_SYNC);
	struct scsitgt_lun *l1;
	struct scsitgt__session *other;
	uint8_t cdb[6] = { SPC_RESERVE_6 };
	struct lf_result ro = { 0 };
	struct xl x;

	(void)state;
	add_lun(t, 1, 0, BS, FAKE_SYNC, &l1);
	assert_int_equal(
		loop_fabric_add_session(t->lf, "iqn.2024-01.org.example:other,i,0x23d0", 1, &other),
		0);
	/* The other nexus's first command to LUN 1 reports POWER ON; then it reserves. */
	loop_fabric_run_on(t->lf, other, 1, cdb, sizeof(cdb), NULL, 0, &ro);
	lf_result_clear(&ro);
	loop_fabric_run_on(t->lf, other, 1, cdb, sizeof(cdb), NULL, 0, &ro);
	assert_good(&ro);
	lf_result_clear(&ro);
	/* Writing to LUN 1 from this nexus conflicts: status 18h in the destination's area. */
	xl_init(&x, 1, 0);
	xl_cscd(&x, t->lun);
	xl_cscd(&x, l1);
	xl_seg(&x, 0, 1, 4, 0, 0);
	assert_copy_aborted(run_xcopy(t, 0, &x), 0x00, 0x00, 0);
	assert_cscd_area(&t->r, 1, SAM_STAT_RESERVATION_CONFLICT, 0, 0, 0);
	/* So does reading from it (SPC-2 reservations are exclusive). */
	xl_init(&x, 1, 0);
	xl_cscd(&x, l1);
	xl_cscd(&x, t->lun);
	xl_seg(&x, 0, 1, 4, 0, 0);
	assert_copy_aborted(run_xcopy(t, 0, &x), 0x00, 0x00, 0);
	assert_cscd_area(&t->r, 0, SAM_STAT_RESERVATION_CONFLICT, 0, 0, 0);
	/* The holder itself copies. */
	xl_init(&x, 1, 0);
	xl_cscd(&x, t->lun);
	xl_cscd(&x, l1);
	xl_seg(&x, 0, 1, 4, 0, 0);
	loop_fabric_run_on(t->lf, other, 1, t->cdb, cdb_xcopy(t->cdb, (uint32_t)xl_done(&x)), x.b,
			   xl_done(&x), &ro);
	assert_good(&ro);
	lf_result_clear(&ro);
	tctx_destroy(t);
}

/* A backend error in the second piece of segment 1: the residual, the CSCD's sense, and the
 * same sense through FAILED SEGMENT DETAILS. */
static void test_backend_failure(void **state)
{
	struct tctx *t = setup(FAKE_SYNC);
	struct scsitgt_lun *l1;
	struct fake_backend *f1 = add_lun(t, 1, 0, BS, FAKE_MANUAL, &l1);
	struct lf_result r = { 0 };
	uint8_t *d;
	struct xl x;
	size_t len;

	(void)state;
	xl_init(&x, 3, 0);
	xl_cscd(&x, t->lun);
	xl_cscd(&x, l1);
	xl_seg(&x, 0, 0, 8, 0, 200);
	xl_seg(&x, 0, 1, 4096, 0, 100);
	len = xl_done(&x);
	loop_fabric_start(t->lf, 0, t->cdb, cdb_xcopy(t->cdb, (uint32_t)len), x.b, len, &r);
	/* Segment 0 ran on LUN 0; segment 1's first piece is held at LUN 1: the next write
	 * there, the second piece's, fails. */
	assert_int_equal(f1->npending, 1);
	fake_backend_fail_next(f1, -EIO, 1);
	fake_backend_complete_pending(f1);
	loop_fabric_wait(t->lf, &r);
	assert_copy_aborted(&r, 0x00, 0x00, 1);
	assert_cscd_area(&r, 1, SAM_STAT_CHECK_CONDITION, SENSE_MEDIUM_ERROR, 0x0c, 0x00);
	/* INFORMATION: the blocks of segment 1 not written (one 2048-block piece was). */
	assert_int_equal(r.sense[0] & 0x80, 0x80);
	assert_int_equal(get_be32(&r.sense[3]), 2048);
	/* COPY STATUS: completed with errors, two segments processed, 1 MiB + 4 KiB moved. */
	d = tctx_run_lun(t, 0, cdb_rcr(t->cdb, 0x00, 3, 64), NULL, 0)->data;
	assert_good(&t->r);
	assert_int_equal(t->r.data_len, 12);
	assert_int_equal(get_be32(d), 8);
	assert_int_equal(d[4], 0x02);
	assert_int_equal(get_be16(&d[5]), 2);
	assert_int_equal(d[7], 0x00);
	assert_int_equal(get_be32(&d[8]), 8 * BS + 2048 * BS);
	/* FAILED SEGMENT DETAILS: the sense data of the command. */
	d = tctx_run_lun(t, 0, cdb_rcr(t->cdb, 0x04, 3, 256), NULL, 0)->data;
	assert_good(&t->r);
	assert_int_equal(t->r.data_len, 60 + r.sense_len);
	assert_int_equal(get_be32(d), 56 + r.sense_len);
	assert_int_equal(d[56], SAM_STAT_CHECK_CONDITION);
	assert_int_equal(get_be16(&d[58]), r.sense_len);
	assert_memory_equal(&d[60], r.sense, r.sense_len);
	/* Reported: the list identifier is forgotten. */
	tctx_run_lun(t, 0, cdb_rcr(t->cdb, 0x00, 3, 64), NULL, 0);
	assert_bad_cdb(&t->r, 2, 7);
	lf_result_clear(&r);
	/* A read error of the source: the source's area. */
	xl_init(&x, 4, 0);
	xl_cscd(&x, t->lun);
	xl_cscd(&x, l1);
	xl_seg(&x, 1, 0, 8, 0, 0);
	len = xl_done(&x);
	fake_backend_fail_next_sense(f1, SENSE_MEDIUM_ERROR, 0x11, 0x00);
	loop_fabric_start(t->lf, 0, t->cdb, cdb_xcopy(t->cdb, (uint32_t)len), x.b, len, &r);
	fake_backend_complete_pending(f1);
	loop_fabric_wait(t->lf, &r);
	assert_copy_aborted(&r, 0x00, 0x00, 0);
	assert_cscd_area(&r, 0, SAM_STAT_CHECK_CONDITION, SENSE_MEDIUM_ERROR, 0x11, 0x00);
	assert_int_equal(r.sense[0] & 0x80, 0);
	lf_result_clear(&r);
	tctx_destroy(t);
}

/* Descriptor-format sense (D_SENSE): the command-specific information descriptor holds the
 * segment number, the sense key specific descriptor the segment pointer. */
static void test_descriptor_sense(void **state)
{
	struct tctx *t = setup(FAKE_SYNC);
	struct xl x;
	const uint8_t *s;

	(void)state;
	t->lun->mode.d_sense = true;
	xl_init(&x, 1, 0);
	xl_cscd(&x, t->lun);
	xl_seg(&x, 0, 0, 1, 0, 1);
	xl_seg(&x, 0, 0, 1, 0, 1);
	xl_seg(&x, 0, 2, 1, 0, 1);
	run_xcopy(t, 0, &x);
	s = t->r.sense;
	assert_int_equal(t->r.status, SAM_STAT_CHECK_CONDITION);
	assert_int_equal(s[0], 0x72);
	assert_int_equal(s[1], SENSE_COPY_ABORTED);
	assert_int_equal(s[2], 0x08);
	assert_int_equal(s[3], 0x04);
	assert_int_equal(t->r.sense_len, 8u + s[7]);
	assert_int_equal(t->r.sense_len, 8 + 8 + 12);
	/* Sense key specific (02h): SKSV, SD, field 6; then command-specific (01h). */
	assert_int_equal(s[8], 0x02);
	assert_int_equal(s[12] & 0xa0, 0xa0);
	assert_int_equal(get_be16(&s[13]), 6);
	assert_int_equal(s[16], 0x01);
	assert_int_equal(s[17], 0x0a);
	assert_int_equal(get_be16(&s[20 + 2]), 2);
	tctx_destroy(t);
}

/* COMPARE AND WRITE holds its range: a copy into it waits, then lands after it. */
static void test_range_lock(void **state)
{
	struct tctx *t = setup(FAKE_MANUAL);
	uint8_t caw[2 * BS];
	struct lf_result rc = { 0 }, rx = { 0 };
	struct xl x;
	uint8_t cdb[16] = { SBC_COMPARE_AND_WRITE };
	size_t len, writes = 0;

	(void)state;
	memset(t->fb->data + 10 * BS, 0, BS);
	memset(t->fb->data + 100 * BS, 0xcd, BS);
	memset(caw, 0, BS);
	memset(caw + BS, 0xab, BS);
	put_be64(&cdb[2], 10);
	cdb[13] = 1;
	loop_fabric_start(t->lf, 0, cdb, 16, caw, sizeof(caw), &rc);
	/* The copy reads block 100 (no conflict), then waits for block 10. */
	xl_init(&x, 1, 0);
	xl_cscd(&x, t->lun);
	xl_seg(&x, 0, 0, 1, 100, 10);
	len = xl_done(&x);
	loop_fabric_start(t->lf, 0, t->cdb, cdb_xcopy(t->cdb, (uint32_t)len), x.b, len, &rx);
	while (!rc.done || !rx.done) {
		assert_true(t->fb->npending > 0);
		fake_backend_complete_pending(t->fb);
		uv_run(&t->lf->loop, UV_RUN_NOWAIT);
	}
	assert_good(&rc);
	assert_good(&rx);
	/* The CAW's write came first, the copy's last: block 10 holds the copied data. */
	for (size_t i = 0; i < t->fb->nrecs; i++) {
		if (t->fb->recs[i].type == SCSITGT_IO_WRITE) {
			assert_int_equal(t->fb->recs[i].lba, 10);
			writes++;
		}
	}
	assert_int_equal(writes, 2);
	assert_int_equal(t->fb->data[10 * BS], 0xcd);
	lf_result_clear(&rc);
	lf_result_clear(&rx);
	tctx_destroy(t);
}

/*
 * MODE SELECT turns the destination's write cache off (WCE 1 -> 0) while a piece's WRITE, sent
 * without FUA under WCE 1, is in the backend: MODE SELECT's own FLUSH may come before that
 * write is back, so the copy flushes the destination before the piece counts (SBC-4 §6.5.5:
 * as a plain WRITE does since da3203b). The next pieces carry FUA.
 */
static void test_wce_off_under_copy(void **state)
{
	struct fake_backend_opts o;
	struct tctx *t;
	struct lf_result rx = { 0 }, rm = { 0 };
	uint8_t mcdb[CDB_BUF], list[8 + 20] = { 0 };
	size_t len, write_at = 0, flush_after = 0, fua_writes = 0;
	struct xl x;

	(void)state;
	fake_backend_opts_init(&o);
	o.num_blocks = NBLOCKS;
	o.mode = FAKE_MANUAL;
	o.geo_flags = SCSITGT_GEOMETRY_WRITE_CACHE;
	o.supports = 1u << SCSITGT_IO_FLUSH;
	t = tctx_create(SCSITGT_LUN_WRITE_CACHE, &o);
	assert_true(t->lun->mode.wce);
	fill(t->fb, 100 * BS, 2 * BS, 0x5a);
	/* Two pieces of one block each (two segments): the first written under WCE 1. */
	xl_init(&x, 1, 0);
	xl_cscd(&x, t->lun);
	xl_seg(&x, 0, 0, 1, 100, 10);
	xl_seg(&x, 0, 0, 1, 101, 11);
	len = xl_done(&x);
	loop_fabric_start(t->lf, 0, t->cdb, cdb_xcopy(t->cdb, (uint32_t)len), x.b, len, &rx);
	assert_int_equal(t->fb->npending, 1); /* the READ */
	fake_backend_complete_first(t->fb);
	for (int guard = 0; t->fb->npending == 0; guard++) {
		assert_true(guard < 1000);
		uv_run(&t->lf->loop, UV_RUN_NOWAIT);
	}
	assert_int_equal(t->fb->npending, 1); /* the WRITE, cached */
	write_at = t->fb->nrecs - 1;
	assert_int_equal(t->fb->recs[write_at].type, SCSITGT_IO_WRITE);
	assert_false(t->fb->recs[write_at].flags & SCSITGT_IO_FLAG_FUA);
	/* MODE SELECT (10) of the caching page with WCE 0 */
	list[8] = 0x08;
	list[9] = 0x12;
	loop_fabric_start(t->lf, 0, mcdb, cdb_mode_select10(mcdb, true, false, sizeof(list)), list,
			  sizeof(list), &rm);
	assert_false(t->lun->mode.wce);
	while (!rx.done || !rm.done) {
		assert_true(t->fb->npending > 0);
		fake_backend_complete_pending(t->fb);
		uv_run(&t->lf->loop, UV_RUN_NOWAIT);
	}
	assert_good(&rm);
	assert_good(&rx);
	for (size_t i = write_at + 1; i < t->fb->nrecs; i++) {
		if (t->fb->recs[i].type == SCSITGT_IO_FLUSH)
			flush_after++;
		if (t->fb->recs[i].type == SCSITGT_IO_WRITE)
			fua_writes += (t->fb->recs[i].flags & SCSITGT_IO_FLAG_FUA) != 0;
	}
	/* MODE SELECT's write-back and the copy's own */
	assert_int_equal(flush_after, 2);
	assert_int_equal(fua_writes, 1);
	assert_true(same(t->fb->data + 100 * BS, t->fb->data + 10 * BS, 2 * BS));
	lf_result_clear(&rx);
	lf_result_clear(&rm);
	tctx_destroy(t);
}

/* A task management function aborts a running copy: it issues nothing more. */
static void test_abort(void **state)
{
	struct tctx *t = setup(FAKE_MANUAL);
	struct lf_result r = { 0 };
	struct xl x;
	size_t len;

	(void)state;
	xl_init(&x, 1, 0);
	xl_cscd(&x, t->lun);
	xl_seg(&x, 0, 0, 8, 0, 100);
	xl_seg(&x, 0, 0, 8, 0, 200);
	len = xl_done(&x);
	loop_fabric_start(t->lf, 0, t->cdb, cdb_xcopy(t->cdb, (uint32_t)len), x.b, len, &r);
	assert_int_equal(t->fb->nrecs, 1);
	assert_non_null(r.cmd);
	/* As a TMF does: the command is aborted; its read is still in the backend. */
	assert_int_equal(r.cmd->state, SCSITGT__CMD_EXEC);
	scsitgt__cmd_abort(r.cmd, NULL, false);
	assert_int_equal(r.cmd->state, SCSITGT__CMD_ABORTED);
	fake_backend_complete_pending(t->fb);
	loop_fabric_run_until(t->lf, &r.aborted);
	assert_int_equal(t->fb->nrecs, 1);
	assert_int_equal(t->fb->recs[0].type, SCSITGT_IO_READ);
	assert_int_equal(atomic_load(&t->lun->shard_part[0].untracked), 0);
	lf_result_clear(&r);
	tctx_destroy(t);
}

/* The nexus goes while its copy runs: the copy ends quietly, its list entry with the nexus. */
static void test_session_gone(void **state)
{
	struct tctx *t = setup(FAKE_MANUAL);
	struct scsitgt__session *other;
	uint8_t tur[6] = { 0 };
	struct lf_result r = { 0 };
	struct xl x;
	size_t len;

	(void)state;
	assert_int_equal(
		loop_fabric_add_session(t->lf, "iqn.2024-01.org.example:other,i,0x23d0", 1, &other),
		0);
	loop_fabric_run_on(t->lf, other, 0, tur, sizeof(tur), NULL, 0, &r);
	lf_result_clear(&r);
	xl_init(&x, 1, 0);
	xl_cscd(&x, t->lun);
	xl_seg(&x, 0, 0, 8, 0, 100);
	len = xl_done(&x);
	loop_fabric_start_on(t->lf, other, 0, t->cdb, cdb_xcopy(t->cdb, (uint32_t)len), x.b, len,
			     &r);
	assert_int_equal(t->fb->npending, 1);
	scsitgt__session_destroy(other);
	fake_backend_complete_pending(t->fb);
	uv_run(&t->lf->loop, UV_RUN_NOWAIT);
	/* Nothing was written after the nexus left, and the LUN is free of the copy. */
	assert_int_equal(t->fb->nrecs, 1);
	assert_int_equal(atomic_load(&t->lun->shard_part[0].untracked), 0);
	tctx_destroy(t);
}

/* --- The list identifier table and RECEIVE COPY RESULTS. --- */

static void test_list_id_in_progress(void **state)
{
	struct tctx *t = setup(FAKE_MANUAL);
	struct lf_result r1 = { 0 }, r2 = { 0 }, r3 = { 0 };
	struct xl x;
	uint8_t *d;
	size_t len;

	(void)state;
	xl_init(&x, 7, 0);
	xl_cscd(&x, t->lun);
	xl_seg(&x, 0, 0, 8, 0, 100);
	len = xl_done(&x);
	loop_fabric_start(t->lf, 0, t->cdb, cdb_xcopy(t->cdb, (uint32_t)len), x.b, len, &r1);
	assert_false(r1.done);
	/* COPY STATUS while it runs: in progress. */
	d = tctx_run_lun(t, 0, cdb_rcr(t->cdb, 0x00, 7, 12), NULL, 0)->data;
	assert_good(&t->r);
	assert_int_equal(d[4], 0x00);
	/* FAILED SEGMENT DETAILS while it runs: no details. */
	d = tctx_run_lun(t, 0, cdb_rcr(t->cdb, 0x04, 7, 64), NULL, 0)->data;
	assert_good(&t->r);
	assert_int_equal(t->r.data_len, 4);
	assert_int_equal(get_be32(d), 0);
	/* The same list identifier again: OPERATION IN PROGRESS. */
	loop_fabric_start(t->lf, 0, t->cdb, cdb_xcopy(t->cdb, (uint32_t)len), x.b, len, &r2);
	loop_fabric_wait(t->lf, &r2);
	assert_sense(&r2, SENSE_ILLEGAL_REQUEST, 0x00, 0x16);
	/* Another one, and one without a list identifier, run alongside. */
	x.b[0] = 8;
	loop_fabric_start(t->lf, 0, t->cdb, cdb_xcopy(t->cdb, (uint32_t)len), x.b, len, &r3);
	while (!r1.done || !r3.done)
		fake_backend_complete_pending(t->fb);
	assert_good(&r1);
	assert_good(&r3);
	/* Completed without errors; reported once, then forgotten. */
	d = tctx_run_lun(t, 0, cdb_rcr(t->cdb, 0x00, 7, 12), NULL, 0)->data;
	assert_good(&t->r);
	assert_int_equal(d[4], 0x01);
	assert_int_equal(get_be16(&d[5]), 1);
	assert_int_equal(get_be32(&d[8]), 8 * BS);
	tctx_run_lun(t, 0, cdb_rcr(t->cdb, 0x00, 7, 12), NULL, 0);
	assert_bad_cdb(&t->r, 2, 7);
	/* List identifiers belong to a LUN: list 8 is unknown on LUN 1. */
	add_lun(t, 1, 0, BS, FAKE_SYNC, NULL);
	tctx_run_lun(t, 1, cdb_rcr(t->cdb, 0x00, 8, 12), NULL, 0);
	assert_bad_cdb(&t->r, 2, 7);
	lf_result_clear(&r1);
	lf_result_clear(&r2);
	lf_result_clear(&r3);
	tctx_destroy(t);
}

static void test_concurrency_limit(void **state)
{
	struct tctx *t = setup(FAKE_MANUAL);
	struct lf_result r[SCSITGT__XCOPY_MAX_ACTIVE + 1];
	struct xl x;
	size_t len;

	(void)state;
	memset(r, 0, sizeof(r));
	for (unsigned int i = 0; i <= SCSITGT__XCOPY_MAX_ACTIVE; i++) {
		/* Without list identifiers: only TOTAL CONCURRENT COPIES limits them. */
		xl_init(&x, 0, 3);
		xl_cscd(&x, t->lun);
		xl_seg(&x, 0, 0, 1, i, 100 + i);
		len = xl_done(&x);
		loop_fabric_start(t->lf, 0, t->cdb, cdb_xcopy(t->cdb, (uint32_t)len), x.b, len,
				  &r[i]);
	}
	loop_fabric_wait(t->lf, &r[SCSITGT__XCOPY_MAX_ACTIVE]);
	assert_sense(&r[SCSITGT__XCOPY_MAX_ACTIVE], SENSE_ILLEGAL_REQUEST, 0x55, 0x03);
	for (unsigned int i = 0; i < SCSITGT__XCOPY_MAX_ACTIVE; i++) {
		while (!r[i].done)
			fake_backend_complete_pending(t->fb);
		assert_good(&r[i]);
	}
	for (unsigned int i = 0; i <= SCSITGT__XCOPY_MAX_ACTIVE; i++)
		lf_result_clear(&r[i]);
	tctx_destroy(t);
}

static void test_table_bounded(void **state)
{
	struct tctx *t = setup(FAKE_SYNC);
	struct xl x;
	uint8_t *d;

	(void)state;
	/* More finished lists than the table holds: the oldest are dropped. */
	for (unsigned int i = 0; i < 2 * SCSITGT__XCOPY_MAX_LISTS; i++) {
		xl_init(&x, (uint8_t)i, 0);
		xl_cscd(&x, t->lun);
		xl_seg(&x, 0, 0, 1, 0, 1);
		assert_good(run_xcopy(t, 0, &x));
	}
	tctx_run_lun(t, 0, cdb_rcr(t->cdb, 0x00, 0, 12), NULL, 0);
	assert_bad_cdb(&t->r, 2, 7);
	d = tctx_run_lun(t, 0, cdb_rcr(t->cdb, 0x00, 2 * SCSITGT__XCOPY_MAX_LISTS - 1, 12), NULL, 0)
		    ->data;
	assert_good(&t->r);
	assert_int_equal(d[4], 0x01);
	/* LIST ID USAGE 11b is not tracked at all. */
	xl_init(&x, 0, 3);
	xl_cscd(&x, t->lun);
	xl_seg(&x, 0, 0, 1, 0, 1);
	assert_good(run_xcopy(t, 0, &x));
	tctx_run_lun(t, 0, cdb_rcr(t->cdb, 0x00, 0, 12), NULL, 0);
	assert_bad_cdb(&t->r, 2, 7);
	tctx_destroy(t);
}

static void test_operating_parameters(void **state)
{
	struct tctx *t = setup(FAKE_SYNC);
	uint8_t *d;

	(void)state;
	d = tctx_run_lun(t, 0, cdb_rcr(t->cdb, 0x03, 0, 1024), NULL, 0)->data;
	assert_good(&t->r);
	assert_int_equal(t->r.data_len, 46);
	assert_int_equal(get_be32(d), 42);
	assert_int_equal(d[4] & 0x01, 0x01); /* SNLID */
	assert_int_equal(get_be16(&d[8]), SCSITGT__XCOPY_MAX_CSCD);
	assert_int_equal(get_be16(&d[10]), SCSITGT__XCOPY_MAX_SEGS);
	assert_int_equal(get_be32(&d[12]), SCSITGT__XCOPY_MAX_DESC_LIST);
	/* 65535 blocks of this LUN's 512 bytes (reviewj J8) */
	assert_int_equal(t->lun->geo.block_size, 512);
	assert_int_equal(get_be32(&d[16]), 0xffffu * 512u);
	assert_int_equal(get_be32(&d[20]), 0); /* no inline data */
	assert_int_equal(get_be32(&d[24]), 0); /* no held data */
	assert_int_equal(get_be16(&d[34]), SCSITGT__XCOPY_MAX_ACTIVE);
	assert_int_equal(d[37], 9);
	assert_int_equal(d[43], 2);
	assert_int_equal(d[44], 0x02);
	assert_int_equal(d[45], 0xe4);
	/* Truncated to the allocation length. */
	tctx_run_lun(t, 0, cdb_rcr(t->cdb, 0x03, 0, 8), NULL, 0);
	assert_good(&t->r);
	assert_int_equal(t->r.data_len, 8);
	/* The LIST IDENTIFIER is reserved for it; RECEIVE DATA (01h) is not supported. */
	tctx_run_lun(t, 0, cdb_rcr(t->cdb, 0x03, 1, 1024), NULL, 0);
	assert_bad_cdb(&t->r, 2, 0);
	tctx_run_lun(t, 0, cdb_rcr(t->cdb, 0x01, 1, 1024), NULL, 0);
	assert_bad_cdb(&t->r, 1, 4);
	tctx_destroy(t);
}

/* INQUIRY: 3PC, the page in the supported list, the page itself; REPORT SUPPORTED OPERATION
 * CODES has the rows. */
static void test_inquiry_vpd(void **state)
{
	struct tctx *t = setup(FAKE_SYNC);
	uint8_t *d;
	bool listed = false;
	size_t n, p;

	(void)state;
	d = tctx_run(t, cdb_inquiry(t->cdb, false, 0, 96))->data;
	assert_good(&t->r);
	assert_int_equal(d[5] & 0x08, 0x08);
	d = tctx_run(t, cdb_inquiry(t->cdb, true, 0x00, 255))->data;
	for (size_t i = 4; i < t->r.data_len; i++)
		listed |= d[i] == 0x8f;
	assert_true(listed);
	d = tctx_run(t, cdb_inquiry(t->cdb, true, 0x8f, 1024))->data;
	assert_good(&t->r);
	assert_int_equal(d[1], 0x8f);
	n = 4 + get_be16(&d[2]);
	assert_int_equal(n, t->r.data_len);
	/* Descriptors, each a multiple of four bytes; the Supported Commands one lists 83h/00h
	 * and 84h/00h, 03h, 04h. */
	p = 4;
	assert_int_equal(get_be16(&d[p]), 0x0001);
	assert_int_equal(d[p + 4], 2 + 1 + 2 + 3);
	assert_int_equal(d[p + 5], 0x83);
	assert_int_equal(d[p + 6], 1);
	assert_int_equal(d[p + 7], 0x00);
	assert_int_equal(d[p + 8], 0x84);
	assert_int_equal(d[p + 9], 3);
	assert_memory_equal(&d[p + 10], "\x00\x03\x04", 3);
	while (p < n) {
		size_t len = 4 + get_be16(&d[p + 2]);

		assert_int_equal(len % 4, 0);
		if (get_be16(&d[p]) == 0x0004) {
			assert_int_equal(get_be16(&d[p + 8]), SCSITGT__XCOPY_MAX_CSCD);
			assert_int_equal(get_be16(&d[p + 10]), SCSITGT__XCOPY_MAX_SEGS);
		}
		/* General Copy Operations: MAXIMUM SEGMENT LENGTH, 65535 of the LUN's blocks */
		if (get_be16(&d[p]) == 0x8001)
			assert_int_equal(get_be32(&d[p + 12]), 0xffffu * 512u);
		p += len;
	}
	assert_int_equal(p, n);
	/* REPORT SUPPORTED OPERATION CODES, one command: 83h service action 00h. */
	memset(t->cdb, 0, CDB_BUF);
	t->cdb[0] = SPC_MAINTENANCE_IN;
	t->cdb[1] = SPC_MI_REPORT_SUPPORTED_OPCODES;
	t->cdb[2] = 0x02;
	t->cdb[3] = SPC_EXTENDED_COPY;
	put_be32(&t->cdb[6], 64);
	d = tctx_run(t, 12)->data;
	assert_good(&t->r);
	assert_int_equal(d[1] & 0x07, 0x03);
	assert_int_equal(get_be16(&d[2]), 16);
	assert_int_equal(d[4], 0x83);
	assert_int_equal(get_be32(&d[4 + 10]), 0xffffffff);
	tctx_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_list_errors),
		cmocka_unit_test(test_list_type_codes),
		cmocka_unit_test(test_list_limits),
		cmocka_unit_test(test_parse_pure),
		cmocka_unit_test(test_copy_within_lun),
		cmocka_unit_test(test_copy_between_luns),
		cmocka_unit_test(test_copy_overlap),
		cmocka_unit_test(test_unreachable),
		cmocka_unit_test(test_copy_by_naa6_and_uuid),
		cmocka_unit_test(test_out_of_range),
		cmocka_unit_test(test_read_only_destination),
		cmocka_unit_test(test_reservation_conflict),
		cmocka_unit_test(test_backend_failure),
		cmocka_unit_test(test_descriptor_sense),
		cmocka_unit_test(test_range_lock),
		cmocka_unit_test(test_wce_off_under_copy),
		cmocka_unit_test(test_abort),
		cmocka_unit_test(test_session_gone),
		cmocka_unit_test(test_list_id_in_progress),
		cmocka_unit_test(test_concurrency_limit),
		cmocka_unit_test(test_table_bounded),
		cmocka_unit_test(test_operating_parameters),
		cmocka_unit_test(test_inquiry_vpd),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
