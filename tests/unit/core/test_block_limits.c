/* SPDX-License-Identifier: MIT */
/*
 * The Block Limits and designator options of scsitgt_lun_opts (lun.h): what VPD B0h and 83h
 * report (SBC-4 §6.6.4, SPC-5 §7.7.6), that the commands enforce the limits advertised, and
 * that contradictory values are refused at scsitgt_lun_create().
 */
#include <errno.h>
#include <string.h>

#include "test_util.h"

#include "core/cdb.h"
#include "core/sbc.h"
#include "core/scsi_spec.h"

struct blctx {
	struct loop_fabric *lf;
	struct scsitgt_lun *lun;
	struct fake_backend *fb;
	struct lf_result r;
	uint8_t cdb[CDB_BUF];
};

static void opts_init(struct scsitgt_lun_opts *lo, uint32_t flags)
{
	scsitgt_lun_opts_init(lo, sizeof(*lo));
	lo->flags = flags;
}

static void fb_opts(struct fake_backend_opts *o)
{
	fake_backend_opts_init(o);
	o->supports = 1u << SCSITGT_IO_UNMAP;
	o->num_blocks = 1u << 22;
	o->store = false; /* 2 GiB of blocks: keep nothing */
}

static struct blctx *bl_create(const struct scsitgt_lun_opts *lo)
{
	struct blctx *t = calloc(1, sizeof(*t));
	struct fake_backend_opts o;

	assert_non_null(t);
	fb_opts(&o);
	assert_int_equal(loop_fabric_create(&t->lf, NULL), 0);
	assert_int_equal(fake_backend_lun_create_opts(&t->lun, &t->fb, t->lf->tgt, lo, &o), 0);
	return t;
}

/* scsitgt_lun_create()'s answer for @lo (the LUN is destroyed again on success). */
static int bl_try(const struct scsitgt_lun_opts *lo, const struct fake_backend_opts *o)
{
	struct loop_fabric *lf;
	struct scsitgt_lun *lun = NULL;
	struct fake_backend_opts def;
	int rc;

	if (o == NULL) {
		fb_opts(&def);
		o = &def;
	}
	assert_int_equal(loop_fabric_create(&lf, NULL), 0);
	rc = fake_backend_lun_create_opts(&lun, NULL, lf->tgt, lo, o);
	loop_fabric_destroy(lf);
	return rc;
}

static void bl_destroy(struct blctx *t)
{
	lf_result_clear(&t->r);
	loop_fabric_destroy(t->lf);
	free(t);
}

static struct lf_result *bl_run(struct blctx *t, size_t len, const void *dout, size_t dout_len)
{
	lf_result_clear(&t->r);
	loop_fabric_run(t->lf, 0, t->cdb, len, dout, dout_len, &t->r);
	return &t->r;
}

static const uint8_t *b0(struct blctx *t)
{
	struct lf_result *r = bl_run(t, cdb_inquiry(t->cdb, true, 0xb0, 255), NULL, 0);

	assert_good(r);
	assert_int_equal(r->data_len, 64);
	return r->data;
}

static size_t cdb_ws16(uint8_t *cdb, uint64_t lba, uint32_t n)
{
	memset(cdb, 0, CDB_BUF);
	cdb[0] = SBC_WRITE_SAME_16;
	cdb[1] = 0x01; /* NDOB: no Data-Out */
	put_be64(&cdb[2], lba);
	put_be32(&cdb[10], n);
	return 16;
}

/* Without the new options the page is what it always was. */
static void test_defaults(void **state)
{
	struct scsitgt_lun_opts lo;
	struct blctx *t;
	const uint8_t *p;

	(void)state;
	opts_init(&lo, SCSITGT_LUN_THIN);
	t = bl_create(&lo);
	p = b0(t);
	assert_int_equal(get_be16(&p[6]), 1);
	assert_int_equal(get_be32(&p[8]), SCSITGT__MAX_XFER_BYTES / 512);
	assert_int_equal(get_be32(&p[20]), SCSITGT__MAX_UNMAP_LBA_COUNT);
	assert_int_equal(get_be32(&p[24]), SCSITGT__MAX_UNMAP_DESCRIPTORS);
	assert_int_equal(get_be32(&p[28]), 1);
	assert_int_equal(p[32] & 0x80, 0);
	assert_int_equal(get_be64(&p[36]), SCSITGT__SBC_MAX_WRITE_SAME_BLOCKS);
	bl_destroy(t);
}

/* The host's limits in the page, and each one enforced. */
static void test_limits_reported_and_enforced(void **state)
{
	struct scsitgt_lun_opts lo;
	struct blctx *t;
	const uint8_t *p;
	struct lf_result *r;
	uint8_t list[8 + 16 * 4];
	uint64_t two[][2] = { { 0, 600 }, { 1000, 500 } };
	uint64_t ok[][2] = { { 0, 600 }, { 1000, 400 } };
	uint64_t three[][2] = { { 0, 1 }, { 8, 1 }, { 16, 1 } };
	size_t len;

	(void)state;
	opts_init(&lo, SCSITGT_LUN_THIN);
	lo.max_transfer_blocks = 128;
	lo.optimal_transfer_blocks = 64;
	lo.optimal_transfer_granularity = 16;
	lo.max_unmap_blocks = 1000;
	lo.max_unmap_descriptors = 2;
	lo.unmap_granularity = 32;
	lo.unmap_granularity_alignment = 8;
	lo.max_write_same_blocks = 4096;
	t = bl_create(&lo);
	p = b0(t);
	assert_int_equal(get_be16(&p[6]), 16);
	assert_int_equal(get_be32(&p[8]), 128);
	assert_int_equal(get_be32(&p[12]), 64);
	assert_int_equal(get_be32(&p[20]), 1000);
	assert_int_equal(get_be32(&p[24]), 2);
	assert_int_equal(get_be32(&p[28]), 32);
	assert_int_equal(get_be32(&p[32]), 0x80000000u | 8); /* UGAVALID, alignment 8 */
	assert_int_equal(get_be64(&p[36]), 4096);
	/* MAXIMUM ATOMIC TRANSFER LENGTH within the maximum transfer length. */
	assert_true(get_be32(&p[44]) <= 128);

	/* MAXIMUM TRANSFER LENGTH: 128 blocks pass, 129 are INVALID FIELD IN CDB at the
	 * TRANSFER LENGTH (READ (10) byte 7), for reads and writes. */
	r = bl_run(t, cdb_rw(t->cdb, SBC_READ_10, 0, 128, 0), NULL, 0);
	assert_good(r);
	r = bl_run(t, cdb_rw(t->cdb, SBC_READ_10, 0, 129, 0), NULL, 0);
	assert_bad_cdb(r, 7, 7);
	r = bl_run(t, cdb_rw(t->cdb, SBC_READ_16, 0, 129, 0), NULL, 0);
	assert_bad_cdb(r, 10, 7);
	{
		static uint8_t data[129 * 512];

		r = bl_run(t, cdb_rw(t->cdb, SBC_WRITE_10, 0, 129, 0), data, sizeof(data));
		assert_bad_cdb(r, 7, 7);
		assert_int_equal(t->fb->nrecs, 1); /* only the good READ reached the backend */
	}

	/* MAXIMUM UNMAP LBA COUNT counts every descriptor together (SBC-4 §5.30.2): 600 + 500
	 * is refused at the second descriptor's NUMBER OF LOGICAL BLOCKS, 600 + 400 passes. */
	len = unmap_param_list(list, two, 2);
	r = bl_run(t, cdb_unmap(t->cdb, (uint16_t)len, 0), list, len);
	assert_sense(r, SENSE_ILLEGAL_REQUEST, 0x26, 0x00);
	assert_sks(r, 0, 8 + 16 + 8, -1);
	len = unmap_param_list(list, ok, 2);
	r = bl_run(t, cdb_unmap(t->cdb, (uint16_t)len, 0), list, len);
	assert_good(r);
	/* MAXIMUM UNMAP BLOCK DESCRIPTOR COUNT: three descriptors are one too many. */
	len = unmap_param_list(list, three, 3);
	r = bl_run(t, cdb_unmap(t->cdb, (uint16_t)len, 0), list, len);
	assert_sense(r, SENSE_ILLEGAL_REQUEST, 0x26, 0x00);

	/* MAXIMUM WRITE SAME LENGTH. */
	r = bl_run(t, cdb_ws16(t->cdb, 0, 4096), NULL, 0);
	assert_good(r);
	r = bl_run(t, cdb_ws16(t->cdb, 0, 4097), NULL, 0);
	assert_bad_cdb(r, 10, 7);
	bl_destroy(t);
}

/*
 * SBC-4 §6.6.4: MAXIMUM COMPARE AND WRITE LENGTH is at most the MAXIMUM TRANSFER LENGTH; a
 * host's maximum below 128 blocks lowers it, in VPD B0h and in the command's check.
 */
static void test_caw_within_max_transfer(void **state)
{
	static uint8_t data[2 * 17 * 512];
	struct scsitgt_lun_opts lo;
	struct blctx *t;
	const uint8_t *p;
	struct lf_result *r;

	(void)state;
	opts_init(&lo, 0);
	lo.max_transfer_blocks = 16;
	t = bl_create(&lo);
	p = b0(t);
	assert_int_equal(get_be32(&p[8]), 16);
	assert_int_equal(p[5], 16);
	/* 17 blocks: INVALID FIELD IN CDB at NUMBER OF LOGICAL BLOCKS, nothing reaches the
	 * backend; 16 pass (the fake backend's blocks read as zeros, as the data compared). */
	r = bl_run(t, cdb_caw(t->cdb, 0, 17, 0), data, sizeof(data));
	assert_bad_cdb(r, 13, 7);
	assert_int_equal(t->fb->nrecs, 0);
	r = bl_run(t, cdb_caw(t->cdb, 0, 16, 0), data, 2 * 16 * 512);
	assert_good(r);
	bl_destroy(t);
	/* Above 128 blocks the library's own 128 stays. */
	opts_init(&lo, 0);
	lo.max_transfer_blocks = 256;
	t = bl_create(&lo);
	assert_int_equal(b0(t)[5], SCSITGT__SBC_MAX_CAW_BLOCKS);
	bl_destroy(t);
}

/* "No limit" (FFFFFFFFh) for UNMAP is reported and honoured. */
static void test_unmap_unlimited(void **state)
{
	struct scsitgt_lun_opts lo;
	struct blctx *t;
	const uint8_t *p;
	struct lf_result *r;
	uint8_t list[8 + 16 * 2];
	uint64_t big[][2] = { { 0, 3u << 20 }, { 3u << 20, 1u << 20 } };
	size_t len;

	(void)state;
	opts_init(&lo, SCSITGT_LUN_THIN);
	lo.max_unmap_blocks = UINT32_MAX;
	t = bl_create(&lo);
	p = b0(t);
	assert_int_equal(get_be32(&p[20]), UINT32_MAX);
	len = unmap_param_list(list, big, 2);
	r = bl_run(t, cdb_unmap(t->cdb, (uint16_t)len, 0), list, len);
	assert_good(r);
	bl_destroy(t);
}

/* Nonsense is refused at creation with -EINVAL. */
static void test_refused(void **state)
{
	struct scsitgt_lun_opts lo;
	struct fake_backend_opts o;

	(void)state;
	/* Above the library's largest transfer (8 MiB of 512-byte blocks). */
	opts_init(&lo, 0);
	lo.max_transfer_blocks = SCSITGT__MAX_XFER_BYTES / 512 + 1;
	assert_int_equal(bl_try(&lo, NULL), -EINVAL);
	lo.max_transfer_blocks = SCSITGT__MAX_XFER_BYTES / 512;
	assert_int_equal(bl_try(&lo, NULL), 0);
	/* Optimal transfer length above the maximum (SBC-4 §6.6.4). */
	opts_init(&lo, 0);
	lo.max_transfer_blocks = 64;
	lo.optimal_transfer_blocks = 128;
	assert_int_equal(bl_try(&lo, NULL), -EINVAL);
	/* Maximum transfer below the optimal granularity, given or the physical block. */
	opts_init(&lo, 0);
	lo.max_transfer_blocks = 8;
	lo.optimal_transfer_granularity = 16;
	assert_int_equal(bl_try(&lo, NULL), -EINVAL);
	opts_init(&lo, 0);
	lo.max_transfer_blocks = 4;
	lo.physical_block_exponent = 3;
	assert_int_equal(bl_try(&lo, NULL), -EINVAL);
	/* A granularity the 16-bit field cannot hold. */
	opts_init(&lo, 0);
	lo.optimal_transfer_granularity = 0x10000;
	assert_int_equal(bl_try(&lo, NULL), -EINVAL);
	/* Optimal transfer length not whole granules. */
	opts_init(&lo, 0);
	lo.optimal_transfer_granularity = 16;
	lo.optimal_transfer_blocks = 24;
	assert_int_equal(bl_try(&lo, NULL), -EINVAL);
	lo.optimal_transfer_blocks = 32;
	assert_int_equal(bl_try(&lo, NULL), 0);
	/* Unmap alignment without a granularity, or not below it. */
	opts_init(&lo, SCSITGT_LUN_THIN);
	lo.unmap_granularity_alignment = 4;
	assert_int_equal(bl_try(&lo, NULL), -EINVAL);
	lo.unmap_granularity = 4;
	assert_int_equal(bl_try(&lo, NULL), -EINVAL);
	lo.unmap_granularity = 8;
	assert_int_equal(bl_try(&lo, NULL), 0);
	/* Unmap limits on a LUN without UNMAP (not thin). */
	opts_init(&lo, 0);
	lo.max_unmap_blocks = 1024;
	assert_int_equal(bl_try(&lo, NULL), -EINVAL);
	/* WRITE SAME counts blocks in 32 bits. */
	opts_init(&lo, 0);
	lo.max_write_same_blocks = 0x100000000ull;
	assert_int_equal(bl_try(&lo, NULL), -EINVAL);
	/* The backend's large optimal transfer is cut to the maximum, not refused. */
	opts_init(&lo, 0);
	lo.max_transfer_blocks = 256;
	fb_opts(&o);
	o.opt_blocks = 1024;
	assert_int_equal(bl_try(&lo, &o), 0);
}

/* Find the LU designator of @type and length @len in page 83h; NULL if none. */
static const uint8_t *find_lu_desig(const uint8_t *d, size_t len, uint8_t type, uint8_t dlen)
{
	for (size_t off = 4; off + 4 <= len; off += 4 + d[off + 3]) {
		const uint8_t *p = &d[off];

		if ((p[1] & 0x0f) == type && ((p[1] >> 4) & 0x03) == 0 && p[3] == dlen)
			return p;
	}
	return NULL;
}

static const uint8_t naa6[16] = { 0x60, 0x01, 0x40, 0x5f, 0xed, 0xcb, 0xa9, 0x87,
				  0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef };
/* A version 4, variant 10b UUID. */
static const uint8_t uuid4[16] = { 0x1b, 0x4e, 0x28, 0xba, 0x2f, 0xa1, 0x41, 0xd2,
				   0x88, 0x3f, 0xb9, 0xa7, 0x6b, 0x1a, 0x5c, 0x0e };

static void test_designators(void **state)
{
	struct scsitgt_lun_opts lo;
	struct blctx *t;
	struct lf_result *r;
	const uint8_t *p;
	size_t len;

	(void)state;
	/* None unless given. */
	opts_init(&lo, 0);
	t = bl_create(&lo);
	r = bl_run(t, cdb_inquiry(t->cdb, true, 0x83, 1024), NULL, 0);
	assert_good(r);
	len = r->data_len;
	assert_non_null(find_lu_desig(r->data, len, 0x3, 8));
	assert_null(find_lu_desig(r->data, len, 0x3, 16));
	assert_null(find_lu_desig(r->data, len, 0xa, 18));
	bl_destroy(t);

	opts_init(&lo, 0);
	memcpy(lo.naa_extended, naa6, 16);
	memcpy(lo.uuid, uuid4, 16);
	t = bl_create(&lo);
	r = bl_run(t, cdb_inquiry(t->cdb, true, 0x83, 1024), NULL, 0);
	assert_good(r);
	len = get_be16(&r->data[2]) + 4;
	assert_int_equal(r->data_len, len);
	/* NAA type 5 is still there, NAA 6 besides it: binary, LU, PIV 0, 16 bytes. */
	assert_non_null(find_lu_desig(r->data, len, 0x3, 8));
	p = find_lu_desig(r->data, len, 0x3, 16);
	assert_non_null(p);
	assert_int_equal(p[0], 0x01);
	assert_int_equal(p[1], 0x03);
	assert_memory_equal(&p[4], naa6, 16);
	/* UUID: type 0Ah, length 12h, UUID TYPE 1h, reserved byte, the UUID. */
	p = find_lu_desig(r->data, len, 0xa, 18);
	assert_non_null(p);
	assert_int_equal(p[0], 0x01);
	assert_int_equal(p[1], 0x0a);
	assert_int_equal(p[4], 0x10);
	assert_int_equal(p[5], 0x00);
	assert_memory_equal(&p[6], uuid4, 16);
	bl_destroy(t);

	/* Malformed: another NAA type, a UUID of the NCS variant or of version 0. */
	opts_init(&lo, 0);
	memcpy(lo.naa_extended, naa6, 16);
	lo.naa_extended[0] = 0x50;
	assert_int_equal(bl_try(&lo, NULL), -EINVAL);
	opts_init(&lo, 0);
	memcpy(lo.uuid, uuid4, 16);
	lo.uuid[8] = 0x3f;
	assert_int_equal(bl_try(&lo, NULL), -EINVAL);
	memcpy(lo.uuid, uuid4, 16);
	lo.uuid[6] = 0x01;
	assert_int_equal(bl_try(&lo, NULL), -EINVAL);
}

/* An options struct of the first release (112 bytes) gets the defaults, whatever its padding
 * held. */
static void test_old_size(void **state)
{
	struct scsitgt_lun_opts lo;
	struct blctx *t;
	const uint8_t *p;

	(void)state;
	opts_init(&lo, SCSITGT_LUN_THIN);
	memset((uint8_t *)&lo + 105, 0xff, sizeof(lo) - 105);
	lo.size = 112;
	t = bl_create(&lo);
	p = b0(t);
	assert_int_equal(get_be32(&p[8]), SCSITGT__MAX_XFER_BYTES / 512);
	assert_int_equal(get_be32(&p[20]), SCSITGT__MAX_UNMAP_LBA_COUNT);
	bl_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_limits_reported_and_enforced),
		cmocka_unit_test(test_caw_within_max_transfer),
		cmocka_unit_test(test_unmap_unlimited),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_designators),
		cmocka_unit_test(test_old_size),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
