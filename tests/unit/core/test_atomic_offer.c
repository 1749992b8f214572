/* SPDX-License-Identifier: MIT */
/*
 * WRITE ATOMIC (16) (SBC-4 §5.49, §4.29) is offered only on LUNs whose backend stores a write
 * all or none (SCSITGT_BACKEND_ATOMIC_WRITE): REPORT SUPPORTED OPERATION CODES, the VPD B0
 * atomic limits and the command itself. A file-like backend without the flag gets none of
 * it; the RAM and null backends, and the fake one by default, keep it.
 */
#include <string.h>

#include "test_util.h"

#include "core/scsi_spec.h"
#include "core/sbc.h"

#define BS 512u

/* REPORT SUPPORTED OPERATION CODES, one command (REPORTING OPTIONS 001b): SUPPORT. */
static uint8_t rsoc_one_support(struct tctx *t, uint64_t lun, uint8_t op)
{
	struct lf_result *r;

	memset(t->cdb, 0, CDB_BUF);
	t->cdb[0] = SPC_MAINTENANCE_IN;
	t->cdb[1] = 0x0c;
	t->cdb[2] = 0x01;
	t->cdb[3] = op;
	put_be32(&t->cdb[6], 64);
	r = tctx_run_lun(t, lun, 12, NULL, 0);
	assert_good(r);
	assert_true(r->data_len >= 2);
	return r->data[1] & 0x07;
}

/* REPORT SUPPORTED OPERATION CODES, all commands: whether @op is listed. */
static bool rsoc_all_lists(struct tctx *t, uint64_t lun, uint8_t op)
{
	struct lf_result *r;
	size_t len;

	memset(t->cdb, 0, CDB_BUF);
	t->cdb[0] = SPC_MAINTENANCE_IN;
	t->cdb[1] = 0x0c;
	put_be32(&t->cdb[6], 8192);
	r = tctx_run_lun(t, lun, 12, NULL, 0);
	assert_good(r);
	len = 4 + get_be32(r->data);
	assert_true(len <= r->data_len);
	/* Descriptors of 8 bytes (no RCTD), the opcode first. */
	for (size_t off = 4; off + 8 <= len; off += 8) {
		if (r->data[off] == op)
			return true;
	}
	return false;
}

/* VPD B0 (Block Limits) bytes 44..55: MAXIMUM ATOMIC TRANSFER LENGTH, ATOMIC ALIGNMENT and
 * ATOMIC TRANSFER LENGTH GRANULARITY. */
static void vpd_b0_atomic(struct tctx *t, uint64_t lun, uint32_t out[3])
{
	struct lf_result *r = tctx_run_lun(t, lun, cdb_inquiry(t->cdb, true, 0xb0, 64), NULL, 0);

	assert_good(r);
	assert_true(r->data_len >= 56);
	for (int i = 0; i < 3; i++)
		out[i] = get_be32(&r->data[44 + 4 * i]);
}

/* One WRITE ATOMIC (16) of 0xc3 on block 8 of @lun, block 8 written 0x11 before. */
static struct lf_result *write_atomic_once(struct tctx *t, uint64_t lun)
{
	uint8_t old[BS], dout[BS];

	memset(old, 0x11, sizeof(old));
	assert_good(tctx_run_lun(t, lun, cdb_rw(t->cdb, SBC_WRITE_10, 8, 1, 0), old, sizeof(old)));
	memset(dout, 0xc3, sizeof(dout));
	return tctx_run_lun(t, lun, cdb_write_atomic16(t->cdb, 8, 0, 1, 0), dout, sizeof(dout));
}

/* Block 8 of @lun holds @v everywhere. */
static void assert_block8(struct tctx *t, uint64_t lun, uint8_t v)
{
	uint8_t want[BS];
	struct lf_result *r = tctx_run_lun(t, lun, cdb_rw(t->cdb, SBC_READ_10, 8, 1, 0), NULL, 0);

	assert_good(r);
	memset(want, v, sizeof(want));
	assert_int_equal(r->data_len, BS);
	assert_memory_equal(r->data, want, BS);
}

static void assert_offered(struct tctx *t, uint64_t lun)
{
	uint32_t b0[3];

	assert_int_equal(rsoc_one_support(t, lun, SBC_WRITE_ATOMIC_16), 0x03);
	assert_true(rsoc_all_lists(t, lun, SBC_WRITE_ATOMIC_16));
	vpd_b0_atomic(t, lun, b0);
	assert_int_equal(b0[0], SCSITGT__SBC_MAX_ATOMIC_BLOCKS);
	assert_int_equal(b0[1], 1);
	assert_int_equal(b0[2], 1);
	assert_good(write_atomic_once(t, lun));
	assert_block8(t, lun, 0xc3);
}

/* A backend without SCSITGT_BACKEND_ATOMIC_WRITE (as the file and RBD backends). */
static void test_file_like_backend_not_offered(void **state)
{
	struct fake_backend_opts o;
	struct tctx *t;
	uint32_t b0[3];
	size_t writes;

	(void)state;
	fake_backend_opts_init(&o);
	o.no_atomic_write = true;
	t = tctx_create(0, &o);
	/* SUPPORT 001b: not supported; not in the full list either. */
	assert_int_equal(rsoc_one_support(t, 0, SBC_WRITE_ATOMIC_16), 0x01);
	assert_false(rsoc_all_lists(t, 0, SBC_WRITE_ATOMIC_16));
	/* The other writes are still listed. */
	assert_true(rsoc_all_lists(t, 0, SBC_WRITE_16));
	/* VPD B0: no atomic limits. */
	vpd_b0_atomic(t, 0, b0);
	assert_int_equal(b0[0], 0);
	assert_int_equal(b0[1], 0);
	assert_int_equal(b0[2], 0);
	/* The command: INVALID COMMAND OPERATION CODE, nothing reaches the backend. */
	writes = t->fb->nrecs + 1;
	assert_sense(write_atomic_once(t, 0), SENSE_ILLEGAL_REQUEST, 0x20, 0x00);
	assert_int_equal(t->fb->nrecs, writes);
	assert_block8(t, 0, 0x11);
	tctx_destroy(t);
}

/* The same backend with the flag keeps all of it. */
static void test_atomic_backend_offered(void **state)
{
	struct tctx *t = tctx_create(0, NULL);

	(void)state;
	assert_offered(t, 0);
	tctx_destroy(t);
}

/* The RAM and null backends declare atomic writes. */
static void test_ram_and_null_offered(void **state)
{
	struct fake_backend_opts o;
	struct scsitgt_lun_opts lo;
	struct scsitgt_lun *ram_lun, *null_lun;
	struct tctx *t;
	void *ram, *nul;
	uint32_t b0[3];

	(void)state;
	fake_backend_opts_init(&o);
	o.no_atomic_write = true;
	t = tctx_create(0, &o);
	assert_int_equal(scsitgt_backend_ram_create(&ram), 0);
	scsitgt_lun_opts_init(&lo, sizeof(lo));
	lo.block_size = BS;
	lo.num_blocks = 2048;
	lo.backend = scsitgt_backend_ram_ops();
	lo.backend_ctx = ram;
	lo.id = 1;
	assert_int_equal(scsitgt_lun_create(&ram_lun, t->lf->tgt, &lo), 0);
	assert_int_equal(scsitgt_backend_null_create(&nul), 0);
	lo.backend = scsitgt_backend_null_ops();
	lo.backend_ctx = nul;
	lo.id = 2;
	assert_int_equal(scsitgt_lun_create(&null_lun, t->lf->tgt, &lo), 0);
	/* Each new LUN's first command may meet a unit attention. */
	tctx_run_lun(t, 1, cdb_tur(t->cdb), NULL, 0);
	tctx_run_lun(t, 2, cdb_tur(t->cdb), NULL, 0);
	assert_offered(t, 1);
	/* null: offered, and the command completes GOOD (it stores nothing). */
	assert_int_equal(rsoc_one_support(t, 2, SBC_WRITE_ATOMIC_16), 0x03);
	vpd_b0_atomic(t, 2, b0);
	assert_int_equal(b0[0], SCSITGT__SBC_MAX_ATOMIC_BLOCKS);
	assert_good(write_atomic_once(t, 2));
	tctx_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_file_like_backend_not_offered),
		cmocka_unit_test(test_atomic_backend_offered),
		cmocka_unit_test(test_ram_and_null_offered),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
