/* SPDX-License-Identifier: MIT */
/* SBC-4 §5.38-§5.40 VERIFY (10)/(12)/(16). */
#include <string.h>

#include "test_util.h"

#include "core/sbc_chunk.h"
#include "core/scsi_spec.h"

#define BS 512u

static size_t cdb_verify(uint8_t *cdb, uint8_t opcode, uint64_t lba, uint32_t n, uint8_t byte1)
{
	memset(cdb, 0, CDB_BUF);
	cdb[0] = opcode;
	cdb[1] = byte1;
	switch (opcode) {
	case SBC_VERIFY_10:
		put_be32(&cdb[2], (uint32_t)lba);
		put_be16(&cdb[7], (uint16_t)n);
		return 10;
	case SBC_VERIFY_12:
		put_be32(&cdb[2], (uint32_t)lba);
		put_be32(&cdb[6], n);
		return 12;
	default:
		put_be64(&cdb[2], lba);
		put_be32(&cdb[10], n);
		return 16;
	}
}

static const uint8_t ops[] = { SBC_VERIFY_10, SBC_VERIFY_12, SBC_VERIFY_16 };

/* Write a recognisable pattern to blocks [lba, lba + n). */
static void fill(struct tctx *t, uint64_t lba, uint32_t n, uint8_t *data)
{
	for (size_t i = 0; i < (size_t)n * BS; i++)
		data[i] = (uint8_t)(i * 13 + lba);
	assert_good(
		tctx_run_lun(t, 0, cdb_rw(t->cdb, SBC_WRITE_16, lba, n, 0), data, (size_t)n * BS));
}

static void test_compare_good_and_miscompare(void **state)
{
	struct tctx *t = tctx_create(0, NULL);
	uint8_t data[8 * BS];
	struct lf_result *r;

	(void)state;
	fill(t, 16, 8, data);
	for (size_t i = 0; i < sizeof(ops); i++) {
		/* BYTCHK 01b: the Data-Out equals the medium. */
		r = tctx_run_lun(t, 0, cdb_verify(t->cdb, ops[i], 16, 8, 0x02), data, sizeof(data));
		assert_good(r);
		assert_int_equal(fake_backend_last(t->fb)->type, SCSITGT_IO_READ);
		/* One byte differs: MISCOMPARE with its offset in INFORMATION. */
		data[3 * BS + 17] ^= 0x40;
		r = tctx_run_lun(t, 0, cdb_verify(t->cdb, ops[i], 16, 8, 0x02), data, sizeof(data));
		assert_sense(r, SENSE_MISCOMPARE, 0x1d, 0x00);
		assert_int_equal(r->sense[0] & 0x80, 0x80);
		assert_int_equal(get_be32(&r->sense[3]), 3 * BS + 17);
		data[3 * BS + 17] ^= 0x40;
	}
	tctx_destroy(t);
}

static void test_bytchk_same_block(void **state)
{
	struct tctx *t = tctx_create(0, NULL);
	uint8_t blk[BS], many[4 * BS];
	struct lf_result *r;

	(void)state;
	memset(blk, 0x5a, sizeof(blk));
	for (int b = 0; b < 4; b++)
		memcpy(many + b * BS, blk, BS);
	assert_good(
		tctx_run_lun(t, 0, cdb_rw(t->cdb, SBC_WRITE_10, 100, 4, 0), many, sizeof(many)));
	/* BYTCHK 11b: one block of Data-Out against each of the 4 blocks. */
	r = tctx_run_lun(t, 0, cdb_verify(t->cdb, SBC_VERIFY_16, 100, 4, 0x06), blk, sizeof(blk));
	assert_good(r);
	/* The third block differs at byte 9: INFORMATION is the offset inside the block. */
	many[2 * BS + 9] = 0;
	assert_good(
		tctx_run_lun(t, 0, cdb_rw(t->cdb, SBC_WRITE_10, 100, 4, 0), many, sizeof(many)));
	r = tctx_run_lun(t, 0, cdb_verify(t->cdb, SBC_VERIFY_10, 100, 4, 0x06), blk, sizeof(blk));
	assert_sense(r, SENSE_MISCOMPARE, 0x1d, 0x00);
	assert_int_equal(get_be32(&r->sense[3]), 9);
	tctx_destroy(t);
}

static void test_medium_verify_chunks(void **state)
{
	struct fake_backend_opts o;
	struct tctx *t;
	struct lf_result *r;
	uint32_t chunk = SCSITGT__SBC_CHUNK_BYTES / BS;

	(void)state;
	fake_backend_opts_init(&o);
	o.num_blocks = 3 * chunk + 10;
	o.store = false;
	t = tctx_create(0, &o);
	/* BYTCHK 00b over more than the transfer limit: bounded reads, no Data-Out. */
	r = tctx_run(t, cdb_verify(t->cdb, SBC_VERIFY_16, 5, 3 * chunk + 5, 0x00));
	assert_good(r);
	assert_int_equal(t->fb->nrecs, 4);
	for (size_t i = 0; i < 4; i++) {
		assert_int_equal(t->fb->recs[i].type, SCSITGT_IO_READ);
		assert_int_equal(t->fb->recs[i].lba, 5 + i * chunk);
		assert_int_equal(t->fb->recs[i].num_blocks, i < 3 ? chunk : 5);
	}
	tctx_destroy(t);

	o.store = true;
	o.num_blocks = 2048;
	t = tctx_create(0, &o);
	t->fb->nrecs = 0;
	fake_backend_fail_next(t->fb, -5 /* -EIO */, 1);
	r = tctx_run(t, cdb_verify(t->cdb, SBC_VERIFY_10, 0, 8, 0x00));
	assert_sense(r, SENSE_MEDIUM_ERROR, 0x11, 0x00);
	/* Zero VERIFICATION LENGTH: nothing read, GOOD. */
	t->fb->nrecs = 0;
	r = tctx_run(t, cdb_verify(t->cdb, SBC_VERIFY_10, 0, 0, 0x02));
	assert_good(r);
	assert_int_equal(t->fb->nrecs, 0);
	tctx_destroy(t);
}

static void test_bad_fields(void **state)
{
	struct tctx *t = tctx_create(0, NULL);
	uint8_t blk[BS] = { 0 };
	struct lf_result *r;

	(void)state;
	for (size_t i = 0; i < sizeof(ops); i++) {
		size_t len;

		/* BYTCHK 10b is reserved. */
		r = tctx_run(t, cdb_verify(t->cdb, ops[i], 0, 1, 0x04));
		assert_bad_cdb(r, 1, 2);
		/* VRPROTECT: no protection information; the pointer names the field's MSB. */
		r = tctx_run(t, cdb_verify(t->cdb, ops[i], 0, 1, 0x20));
		assert_bad_cdb(r, 1, 7);
		/* Reserved bit 0 of byte 1. */
		r = tctx_run(t, cdb_verify(t->cdb, ops[i], 0, 1, 0x01));
		assert_bad_cdb(r, 1, 0);
		/* Past the end, for each BYTCHK, and at LBA == capacity with length 0. */
		r = tctx_run(t, cdb_verify(t->cdb, ops[i], 2047, 2, 0x00));
		assert_sense(r, SENSE_ILLEGAL_REQUEST, 0x21, 0x00);
		r = tctx_run_lun(t, 0, cdb_verify(t->cdb, ops[i], 2047, 2, 0x06), blk, BS);
		assert_sense(r, SENSE_ILLEGAL_REQUEST, 0x21, 0x00);
		r = tctx_run(t, cdb_verify(t->cdb, ops[i], 2048, 0, 0x00));
		assert_sense(r, SENSE_ILLEGAL_REQUEST, 0x21, 0x00);
		/* The CONTROL byte allows nothing. */
		len = cdb_verify(t->cdb, ops[i], 0, 1, 0);
		t->cdb[len - 1] = 0x04;
		r = tctx_run(t, len);
		assert_bad_cdb(r, len - 1, 2);
	}
	/* BYTCHK 01b moves the whole range: above MAXIMUM TRANSFER LENGTH is an invalid field. */
	r = tctx_run(t, cdb_verify(t->cdb, SBC_VERIFY_16, 0, (8u << 20) / BS + 1, 0x02));
	assert_bad_cdb(r, 10, 7);
	assert_int_equal(t->fb->nrecs, 0);
	tctx_destroy(t);
}

static void test_read_only_allowed(void **state)
{
	struct tctx *t = tctx_create(SCSITGT_LUN_READ_ONLY, NULL);

	(void)state;
	/* VERIFY does not modify the medium: allowed on a write-protected LUN. */
	assert_good(tctx_run(t, cdb_verify(t->cdb, SBC_VERIFY_10, 0, 4, 0x00)));
	tctx_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_compare_good_and_miscompare),
		cmocka_unit_test(test_bytchk_same_block),
		cmocka_unit_test(test_medium_verify_chunks),
		cmocka_unit_test(test_bad_fields),
		cmocka_unit_test(test_read_only_allowed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
