/* SPDX-License-Identifier: MIT */
/* SBC-4 §5.42-§5.44 WRITE AND VERIFY (10)/(12)/(16). */
#include <string.h>

#include "test_util.h"

#include "core/scsi_spec.h"

#define BS 512u

static size_t cdb_wv(uint8_t *cdb, uint8_t opcode, uint64_t lba, uint32_t nblocks, uint8_t byte1)
{
	memset(cdb, 0, CDB_BUF);
	cdb[0] = opcode;
	cdb[1] = byte1;
	switch (opcode) {
	case SBC_WRITE_AND_VERIFY_10:
		put_be32(&cdb[2], (uint32_t)lba);
		put_be16(&cdb[7], (uint16_t)nblocks);
		return 10;
	case SBC_WRITE_AND_VERIFY_12:
		put_be32(&cdb[2], (uint32_t)lba);
		put_be32(&cdb[6], nblocks);
		return 12;
	default:
		put_be64(&cdb[2], lba);
		put_be32(&cdb[10], nblocks);
		return 16;
	}
}

static struct tctx *medium(bool store, uint32_t lun_flags)
{
	struct fake_backend_opts o;

	fake_backend_opts_init(&o);
	o.store = store;
	return tctx_create(lun_flags, &o);
}

static void test_write_then_verify(void **state)
{
	static const uint8_t ops[] = { SBC_WRITE_AND_VERIFY_10, SBC_WRITE_AND_VERIFY_12,
				       SBC_WRITE_AND_VERIFY_16 };
	struct tctx *t = medium(true, 0);
	uint8_t data[4 * BS];
	struct lf_result *r;

	(void)state;
	for (size_t i = 0; i < sizeof(ops); i++) {
		for (size_t j = 0; j < sizeof(data); j++)
			data[j] = (uint8_t)(j * 7 + i);
		/* BYTCHK 01b: compare with the Data-Out buffer after writing. */
		size_t len = cdb_wv(t->cdb, ops[i], 8, 4, 0x02);
		r = tctx_run_lun(t, 0, len, data, sizeof(data));
		assert_good(r);
		/* A write (with FUA when the backend has a cache) and a read-back of the range. */
		assert_true(t->fb->nrecs >= 2);
		assert_int_equal(t->fb->recs[t->fb->nrecs - 2].type, SCSITGT_IO_WRITE);
		assert_int_equal(t->fb->recs[t->fb->nrecs - 1].type, SCSITGT_IO_READ);
		assert_int_equal(t->fb->recs[t->fb->nrecs - 1].lba, 8);
		assert_int_equal(t->fb->recs[t->fb->nrecs - 1].num_blocks, 4);
		r = tctx_run(t, cdb_rw(t->cdb, SBC_READ_10, 8, 4, 0));
		assert_good(r);
		assert_int_equal(r->data_len, sizeof(data));
		assert_memory_equal(r->data, data, sizeof(data));
	}
	tctx_destroy(t);
}

static void test_miscompare_offset(void **state)
{
	/* A medium that drops writes and reads zeros: the read-back differs from the data. */
	struct tctx *t = medium(false, 0);
	uint8_t data[2 * BS];
	struct lf_result *r;

	(void)state;
	memset(data, 0, sizeof(data));
	data[700] = 0xaa;
	r = tctx_run_lun(t, 0, cdb_wv(t->cdb, SBC_WRITE_AND_VERIFY_16, 0, 2, 0x02), data,
			 sizeof(data));
	assert_sense(r, SENSE_MISCOMPARE, 0x1d, 0x00);
	/* Fixed format: VALID set, INFORMATION = offset of the first differing byte. */
	assert_int_equal(r->sense[0] & 0x80, 0x80);
	assert_int_equal(get_be32(&r->sense[3]), 700);

	/* BYTCHK 00b verifies that the medium reads, without comparing. */
	r = tctx_run_lun(t, 0, cdb_wv(t->cdb, SBC_WRITE_AND_VERIFY_10, 0, 2, 0x00), data,
			 sizeof(data));
	assert_good(r);

	/* Zero blocks: nothing moves, GOOD. */
	unsigned int before = (unsigned int)t->fb->nrecs;
	r = tctx_run(t, cdb_wv(t->cdb, SBC_WRITE_AND_VERIFY_10, 0, 0, 0x02));
	assert_good(r);
	assert_int_equal(t->fb->nrecs, before);
	tctx_destroy(t);
}

static void test_bad_fields(void **state)
{
	struct tctx *t = medium(true, 0);
	uint8_t data[BS] = { 0 };
	struct lf_result *r;

	(void)state;
	/* BYTCHK 10b and 11b are reserved for WRITE AND VERIFY. */
	r = tctx_run_lun(t, 0, cdb_wv(t->cdb, SBC_WRITE_AND_VERIFY_10, 0, 1, 0x04), data,
			 sizeof(data));
	assert_bad_cdb(r, 1, 2);
	/* WRPROTECT: no protection information. */
	r = tctx_run_lun(t, 0, cdb_wv(t->cdb, SBC_WRITE_AND_VERIFY_12, 0, 1, 0x20), data,
			 sizeof(data));
	assert_bad_cdb(r, 1, 7);
	/* Past the last LBA. */
	r = tctx_run_lun(t, 0,
			 cdb_wv(t->cdb, SBC_WRITE_AND_VERIFY_16, t->lun->geo.num_blocks, 1, 0),
			 data, sizeof(data));
	assert_sense(r, SENSE_ILLEGAL_REQUEST, 0x21, 0x00);
	assert_int_equal(t->fb->nrecs, 0);
	tctx_destroy(t);
}

static void test_read_only(void **state)
{
	struct tctx *t = medium(true, SCSITGT_LUN_READ_ONLY);
	uint8_t data[BS] = { 0 };
	struct lf_result *r;

	(void)state;
	r = tctx_run_lun(t, 0, cdb_wv(t->cdb, SBC_WRITE_AND_VERIFY_10, 0, 1, 0x02), data,
			 sizeof(data));
	assert_sense(r, SENSE_DATA_PROTECT, 0x27, 0x00);
	assert_int_equal(t->fb->nrecs, 0);
	tctx_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_then_verify),
		cmocka_unit_test(test_miscompare_offset),
		cmocka_unit_test(test_bad_fields),
		cmocka_unit_test(test_read_only),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
