/* SPDX-License-Identifier: MIT */
/*
 * The built-in backends under real SCSI commands: READ/WRITE CDBs through the core's command
 * path (tests/support loop fabric) onto the RAM and null backends, with the core's own
 * buffers and iovecs.
 */
#include "test_util.h"

#include "backend/ram_hooks.h"
#include "core/scsi_spec.h"

struct sctx {
	struct loop_fabric *lf;
	void *ram;
	struct lf_result r;
	uint8_t cdb[CDB_BUF];
};

#define RAM_LUN 0
#define NULL_LUN 1
/* 1 GiB of 512-byte blocks on the RAM LUN; the null LUN is 1 TiB of 4096-byte blocks. */
#define RAM_BLOCKS (1ull << 21)
#define NULL_BLOCKS (1ull << 28)

static int setup(void **state)
{
	struct sctx *s = calloc(1, sizeof(*s));
	struct scsitgt_lun_opts lo;
	struct scsitgt_lun *lun;
	void *nb;

	assert_non_null(s);
	assert_int_equal(loop_fabric_create(&s->lf, NULL), 0);
	assert_int_equal(scsitgt_backend_ram_create(&s->ram), 0);
	scsitgt_lun_opts_init(&lo, sizeof(lo));
	lo.id = RAM_LUN;
	lo.block_size = 512;
	lo.num_blocks = RAM_BLOCKS;
	lo.flags = SCSITGT_LUN_THIN;
	lo.backend = scsitgt_backend_ram_ops();
	lo.backend_ctx = s->ram;
	assert_int_equal(scsitgt_lun_create(&lun, s->lf->tgt, &lo), 0);
	assert_int_equal(scsitgt_backend_null_create(&nb), 0);
	lo.id = NULL_LUN;
	lo.block_size = 4096;
	lo.num_blocks = NULL_BLOCKS;
	lo.backend = scsitgt_backend_null_ops();
	lo.backend_ctx = nb;
	assert_int_equal(scsitgt_lun_create(&lun, s->lf->tgt, &lo), 0);
	*state = s;
	return 0;
}

static int teardown(void **state)
{
	struct sctx *s = *state;

	lf_result_clear(&s->r);
	loop_fabric_destroy(s->lf);
	free(s);
	return 0;
}

static struct lf_result *run(struct sctx *s, uint64_t lun, size_t cdb_len, const void *dout,
			     size_t dout_len)
{
	lf_result_clear(&s->r);
	loop_fabric_run(s->lf, lun, s->cdb, cdb_len, dout, dout_len, &s->r);
	assert_true(s->r.done);
	return &s->r;
}

static void fill(uint8_t *p, size_t len, uint32_t seed)
{
	for (size_t i = 0; i < len; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (uint8_t)(seed >> 16);
	}
}

/* Writes straddling 1 MiB chunk boundaries, read back with other CDB sizes and splits. */
static void test_ram_rw_cdbs(void **state)
{
	struct sctx *s = *state;
	const uint32_t cb = (uint32_t)(scsitgt__backend_ram_chunk_size() / 512);
	const uint32_t n = 300;
	uint8_t *w = malloc((size_t)n * 512);
	struct lf_result *r;

	fill(w, (size_t)n * 512, 42);
	/* WRITE (16) over the boundary between chunks 2 and 3. */
	r = run(s, RAM_LUN, cdb_rw(s->cdb, SBC_WRITE_16, 3ull * cb - 100, n, 0), w,
		(size_t)n * 512);
	assert_int_equal(r->status, 0);
	assert_int_equal(scsitgt__backend_ram_chunk_count(s->ram), 2);
	/* READ (10) of the whole range. */
	r = run(s, RAM_LUN, cdb_rw(s->cdb, SBC_READ_10, 3ull * cb - 100, n, 0), NULL, 0);
	assert_int_equal(r->status, 0);
	assert_int_equal(r->data_len, (size_t)n * 512);
	assert_memory_equal(r->data, w, (size_t)n * 512);
	/* READ (16) of the middle 7 blocks, across the boundary. */
	r = run(s, RAM_LUN, cdb_rw(s->cdb, SBC_READ_16, 3ull * cb - 3, 7, 0), NULL, 0);
	assert_int_equal(r->status, 0);
	assert_memory_equal(r->data, w + 97 * 512, 7 * 512);
	/* Unwritten blocks read as zeros, allocating nothing. */
	r = run(s, RAM_LUN, cdb_rw(s->cdb, SBC_READ_16, RAM_BLOCKS - 16, 16, 0), NULL, 0);
	assert_int_equal(r->status, 0);
	for (size_t i = 0; i < r->data_len; i++) {
		assert_int_equal(r->data[i], 0);
	}
	assert_int_equal(scsitgt__backend_ram_chunk_count(s->ram), 2);
	free(w);
}

/* WRITE with FUA and SYNCHRONIZE CACHE succeed on a medium without a volatile cache. */
static void test_ram_fua_and_sync(void **state)
{
	struct sctx *s = *state;
	uint8_t w[4 * 512];
	struct lf_result *r;

	fill(w, sizeof(w), 7);
	/* Byte 1 bit 3 is FUA (SBC-4 §5.40). */
	r = run(s, RAM_LUN, cdb_rw(s->cdb, SBC_WRITE_10, 1000, 4, 0x08), w, sizeof(w));
	assert_int_equal(r->status, 0);
	r = run(s, RAM_LUN, cdb_sync_cache16(s->cdb, 0, 0, false), NULL, 0);
	assert_int_equal(r->status, 0);
	r = run(s, RAM_LUN, cdb_rw(s->cdb, SBC_READ_10, 1000, 4, 0), NULL, 0);
	assert_int_equal(r->status, 0);
	assert_memory_equal(r->data, w, sizeof(w));
}

/* The null LUN: 1 TiB, writes vanish, reads give zeros, even at the last block. */
static void test_null_rw_cdbs(void **state)
{
	struct sctx *s = *state;
	uint8_t w[2 * 4096];
	struct lf_result *r;

	memset(w, 0x5a, sizeof(w));
	r = run(s, NULL_LUN, cdb_rw(s->cdb, SBC_WRITE_16, NULL_BLOCKS - 2, 2, 0), w, sizeof(w));
	assert_int_equal(r->status, 0);
	r = run(s, NULL_LUN, cdb_rw(s->cdb, SBC_READ_16, NULL_BLOCKS - 2, 2, 0), NULL, 0);
	assert_int_equal(r->status, 0);
	assert_int_equal(r->data_len, sizeof(w));
	for (size_t i = 0; i < r->data_len; i++) {
		assert_int_equal(r->data[i], 0);
	}
}

/* The capacity the initiator sees is the one the backend opened. */
static void test_capacity(void **state)
{
	struct sctx *s = *state;
	struct lf_result *r;

	r = run(s, RAM_LUN, cdb_read_capacity16(s->cdb, 32), NULL, 0);
	assert_int_equal(r->status, 0);
	assert_true(r->data_len >= 12);
	assert_int_equal(get_be64(r->data), RAM_BLOCKS - 1);
	assert_int_equal(get_be32(&r->data[8]), 512);
	r = run(s, NULL_LUN, cdb_read_capacity16(s->cdb, 32), NULL, 0);
	assert_int_equal(r->status, 0);
	assert_int_equal(get_be64(r->data), NULL_BLOCKS - 1);
	assert_int_equal(get_be32(&r->data[8]), 4096);
}

/*
 * Issue 17, defect 11: VPD B0 OPTIMAL UNMAP GRANULARITY is what the backend frees as a unit:
 * the RAM backend's 1 MiB chunk (2048 blocks of 512 bytes, aligned at LBA 0: UGAVALID 1,
 * UNMAP GRANULARITY ALIGNMENT 0); the null backend frees nothing, so a physical block.
 * Defect 9: VPD B1 WABEREQ and WACEREQ 01b, a read after BLOCK ERASE or CRYPTO ERASE completes
 * GOOD (both backends return zeros then; sbc_sanitize.c erases with zeros).
 */
static void test_vpd_what_backends_do(void **state)
{
	struct sctx *s = *state;
	struct lf_result *r;

	r = run(s, RAM_LUN, cdb_inquiry(s->cdb, true, 0xb0, 64), NULL, 0);
	assert_good(r);
	assert_int_equal(get_be32(&r->data[28]), (1u << 20) / 512);
	assert_int_equal(r->data[32] & 0x80, 0x80);
	assert_int_equal(get_be32(&r->data[32]) & 0x7fffffff, 0);
	r = run(s, NULL_LUN, cdb_inquiry(s->cdb, true, 0xb0, 64), NULL, 0);
	assert_good(r);
	assert_int_equal(get_be32(&r->data[28]), 1);
	assert_int_equal(r->data[32] & 0x80, 0);
	for (uint64_t lun = RAM_LUN; lun <= NULL_LUN; lun++) {
		r = run(s, lun, cdb_inquiry(s->cdb, true, 0xb1, 64), NULL, 0);
		assert_good(r);
		assert_int_equal((r->data[7] >> 6) & 3, 1); /* WABEREQ */
		assert_int_equal((r->data[7] >> 4) & 3, 1); /* WACEREQ */
	}
	/* Erased blocks read GOOD and zero: what 01b promises and more. */
	{
		uint8_t cdb_san[10] = { 0x48, 0x03 /* CRYPTO ERASE */ };
		uint8_t data[4096];

		fill(data, sizeof(data), 5);
		assert_good(run(s, RAM_LUN, cdb_rw(s->cdb, SBC_WRITE_10, 8, 8, 0), data, 4096));
		memcpy(s->cdb, cdb_san, sizeof(cdb_san));
		assert_good(run(s, RAM_LUN, sizeof(cdb_san), NULL, 0));
		r = run(s, RAM_LUN, cdb_rw(s->cdb, SBC_READ_10, 8, 8, 0), NULL, 0);
		assert_good(r);
		for (size_t i = 0; i < 4096; i++)
			assert_int_equal(r->data[i], 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_ram_rw_cdbs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ram_fua_and_sync, setup, teardown),
		cmocka_unit_test_setup_teardown(test_null_rw_cdbs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_capacity, setup, teardown),
		cmocka_unit_test_setup_teardown(test_vpd_what_backends_do, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
