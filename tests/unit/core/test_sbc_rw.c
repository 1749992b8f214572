/* SPDX-License-Identifier: MIT */
/* SBC-4 READ and WRITE (6)/(10)/(12)/(16) through the fake backend. */
#include "test_util.h"

#include "core/cdb.h"
#include "core/scsi_spec.h"
#include "core/tmf.h"

static void fill(uint8_t *p, size_t len, uint32_t seed)
{
	for (size_t i = 0; i < len; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (uint8_t)(seed >> 16);
	}
}

static const uint8_t read_ops[] = { SBC_READ_6, SBC_READ_10, SBC_READ_12, SBC_READ_16 };
static const uint8_t write_ops[] = { SBC_WRITE_6, SBC_WRITE_10, SBC_WRITE_12, SBC_WRITE_16 };

static void test_round_trip(void **state)
{
	struct tctx *t = *state;
	uint8_t buf[8 * 512];
	struct lf_result *r;

	for (size_t i = 0; i < 4; i++) {
		uint64_t lba = 100 + 10 * i;
		uint32_t n = 3 + (uint32_t)i;
		const struct fake_io_rec *rec;
		size_t len;

		fill(buf, n * 512, (uint32_t)i + 1);
		len = cdb_rw(t->cdb, write_ops[i], lba, n, 0);
		r = tctx_run_lun(t, 0, len, buf, n * 512);
		assert_good(r);
		assert_int_equal(r->data_len, 0);
		rec = fake_backend_last(t->fb);
		assert_non_null(rec);
		assert_int_equal(rec->type, SCSITGT_IO_WRITE);
		assert_int_equal(rec->lba, lba);
		assert_int_equal(rec->num_blocks, n);
		assert_int_equal(rec->bytes, n * 512);
		assert_int_equal(rec->iovcnt, 1);
		assert_memory_equal(t->fb->data + lba * 512, buf, n * 512);

		/* Read it back with every READ size. */
		for (size_t j = 0; j < 4; j++) {
			r = tctx_run(t, cdb_rw(t->cdb, read_ops[j], lba, n, 0));
			assert_good(r);
			assert_int_equal(r->data_len, n * 512);
			assert_memory_equal(r->data, buf, n * 512);
			rec = fake_backend_last(t->fb);
			assert_int_equal(rec->type, SCSITGT_IO_READ);
			assert_int_equal(rec->lba, lba);
			assert_int_equal(rec->num_blocks, n);
		}
	}
}

static void test_six_byte_zero_is_256(void **state)
{
	struct tctx *t = *state;
	static uint8_t buf[256 * 512];
	struct lf_result *r;

	/* SBC-4 READ (6)/WRITE (6): TRANSFER LENGTH 0 means 256 blocks. */
	fill(buf, sizeof(buf), 77);
	r = tctx_run_lun(t, 0, cdb_rw(t->cdb, SBC_WRITE_6, 1000, 0, 0), buf, sizeof(buf));
	assert_good(r);
	assert_int_equal(fake_backend_last(t->fb)->num_blocks, 256);
	r = tctx_run(t, cdb_rw(t->cdb, SBC_READ_6, 1000, 0, 0));
	assert_good(r);
	assert_int_equal(r->data_len, sizeof(buf));
	assert_memory_equal(r->data, buf, sizeof(buf));
	/* The 21-bit LBA reaches the end of the medium. */
	r = tctx_run(t, cdb_rw(t->cdb, SBC_READ_6, 2047, 1, 0));
	assert_good(r);
	r = tctx_run(t, cdb_rw(t->cdb, SBC_READ_6, 2047, 2, 0));
	assert_sense(r, 0x5, 0x21, 0x00);
}

static void test_zero_length(void **state)
{
	struct tctx *t = *state;
	struct lf_result *r;
	size_t before = t->fb->nrecs;

	/* SBC-4: 10/12/16 with TRANSFER LENGTH 0 move nothing and succeed. */
	for (size_t i = 1; i < 4; i++) {
		r = tctx_run(t, cdb_rw(t->cdb, read_ops[i], 5, 0, 0));
		assert_good(r);
		assert_int_equal(r->data_len, 0);
		r = tctx_run(t, cdb_rw(t->cdb, write_ops[i], 2047, 0, 0));
		assert_good(r);
	}
	assert_int_equal(t->fb->nrecs, before);
	/* The LBA is still range checked. */
	r = tctx_run(t, cdb_rw(t->cdb, SBC_READ_10, 2048, 0, 0));
	assert_sense(r, 0x5, 0x21, 0x00);
	assert_no_sks(r);
	r = tctx_run(t, cdb_rw(t->cdb, SBC_WRITE_16, 1ull << 40, 0, 0));
	assert_sense(r, 0x5, 0x21, 0x00);
}

static void test_out_of_range(void **state)
{
	struct tctx *t = *state;
	struct lf_result *r;

	r = tctx_run(t, cdb_rw(t->cdb, SBC_READ_10, 2040, 9, 0));
	assert_sense(r, 0x5, 0x21, 0x00);
	r = tctx_run(t, cdb_rw(t->cdb, SBC_READ_10, 2040, 8, 0));
	assert_good(r);
	r = tctx_run(t, cdb_rw(t->cdb, SBC_WRITE_12, 2048, 1, 0));
	assert_sense(r, 0x5, 0x21, 0x00);
	/* LBA + length wrapping around 2^64 is out of range, not a tiny request. */
	r = tctx_run(t, cdb_rw(t->cdb, SBC_READ_16, UINT64_MAX, 2, 0));
	assert_sense(r, 0x5, 0x21, 0x00);
	r = tctx_run(t, cdb_rw(t->cdb, SBC_READ_16, UINT64_MAX - 1, 1, 0));
	assert_sense(r, 0x5, 0x21, 0x00);
	assert_int_equal(t->fb->nrecs, 1);
}

static void test_transfer_too_large(void **state)
{
	struct tctx *t = tctx_create(0, NULL);
	struct fake_backend_opts o;
	struct lf_result *r;
	uint32_t max = (8u << 20) / 512;

	(void)state;
	tctx_destroy(t);
	/* A medium larger than the transfer limit, without storage. */
	fake_backend_opts_init(&o);
	o.store = false;
	o.num_blocks = 1u << 20;
	t = tctx_create(0, &o);
	r = tctx_run(t, cdb_rw(t->cdb, SBC_READ_10, 0, max + 1, 0));
	assert_bad_cdb(r, 7, 7);
	r = tctx_run(t, cdb_rw(t->cdb, SBC_READ_12, 0, max + 1, 0));
	assert_bad_cdb(r, 6, 7);
	r = tctx_run(t, cdb_rw(t->cdb, SBC_WRITE_16, 0, 0xffffffffu, 0));
	assert_bad_cdb(r, 10, 7);
	/* The transfer length is checked before the range. */
	r = tctx_run(t, cdb_rw(t->cdb, SBC_READ_16, UINT64_MAX, max + 1, 0));
	assert_bad_cdb(r, 10, 7);
	r = tctx_run(t, cdb_rw(t->cdb, SBC_READ_16, 0, max, 0));
	assert_good(r);
	assert_int_equal(r->data_len, 8u << 20);
	tctx_destroy(t);
}

static void test_protect_fields(void **state)
{
	struct tctx *t = *state;
	struct lf_result *r;

	/* No protection information: RDPROTECT/WRPROTECT must be zero. */
	/* The pointer names the field's first bit whatever its value (SPC-5 §4.4.2.3). */
	r = tctx_run(t, cdb_rw(t->cdb, SBC_READ_10, 0, 1, 0x20));
	assert_bad_cdb(r, 1, 7);
	r = tctx_run(t, cdb_rw(t->cdb, SBC_READ_16, 0, 1, 0xe0));
	assert_bad_cdb(r, 1, 7);
	r = tctx_run(t, cdb_rw(t->cdb, SBC_WRITE_12, 0, 1, 0x40 | 0x08));
	assert_bad_cdb(r, 1, 7);
	r = tctx_run(t, cdb_rw(t->cdb, SBC_WRITE_16, 0, 1, 0x20));
	assert_bad_cdb(r, 1, 7);
	/* RARC and bit 0 (obsolete; DLD2 in the 16-byte forms) too. */
	r = tctx_run(t, cdb_rw(t->cdb, SBC_READ_10, 0, 1, 0x04));
	assert_bad_cdb(r, 1, 2);
	r = tctx_run(t, cdb_rw(t->cdb, SBC_WRITE_16, 0, 1, 0x01));
	assert_bad_cdb(r, 1, 0);
	/* Reserved bits of the GROUP NUMBER byte. */
	cdb_rw(t->cdb, SBC_READ_10, 0, 1, 0);
	t->cdb[6] = 0x40;
	r = tctx_run(t, 10);
	assert_bad_cdb(r, 6, 6);
	/* Group number, DPO and the obsolete FUA_NV are accepted. */
	cdb_rw(t->cdb, SBC_READ_10, 0, 1, 0x10);
	t->cdb[6] = 0x3f;
	r = tctx_run(t, 10);
	assert_good(r);
	r = tctx_run(t, cdb_rw(t->cdb, SBC_READ_12, 0, 1, 0x1a));
	assert_good(r);
	assert_int_equal(t->fb->nrecs, 2);
}

static struct tctx *cache_lun(uint32_t lun_flags, uint32_t geo_flags, uint32_t supports)
{
	struct fake_backend_opts o;

	fake_backend_opts_init(&o);
	o.geo_flags = geo_flags;
	o.supports = supports;
	return tctx_create(lun_flags, &o);
}

static uint32_t io_flags_of(struct tctx *t, uint8_t op, uint8_t byte1)
{
	uint8_t buf[512] = { 0 };
	struct lf_result *r;

	r = tctx_run_lun(t, 0, cdb_rw(t->cdb, op, 1, 1, byte1), buf, sizeof(buf));
	assert_good(r);
	return fake_backend_last(t->fb)->flags;
}

static void test_fua(void **state)
{
	struct tctx *t;

	(void)state;
	/* Volatile cache enabled (WCE 1): FUA passes through, plain writes do not get it. */
	t = cache_lun(SCSITGT_LUN_WRITE_CACHE, SCSITGT_GEOMETRY_WRITE_CACHE,
		      1u << SCSITGT_IO_FLUSH);
	assert_true(t->lun->mode.wce);
	assert_int_equal(io_flags_of(t, SBC_WRITE_10, 0x08), SCSITGT_IO_FLAG_FUA);
	assert_int_equal(io_flags_of(t, SBC_WRITE_16, 0x18), SCSITGT_IO_FLAG_FUA);
	assert_int_equal(io_flags_of(t, SBC_READ_12, 0x08), 0); /* test_read_fua_flushes */
	assert_int_equal(io_flags_of(t, SBC_WRITE_10, 0x00), 0);
	assert_int_equal(io_flags_of(t, SBC_WRITE_6, 0x00), 0);
	/* WCE 0 on a cached backend: every write must be durable. */
	t->lun->mode.wce = false;
	assert_int_equal(io_flags_of(t, SBC_WRITE_10, 0x00), SCSITGT_IO_FLAG_FUA);
	assert_int_equal(io_flags_of(t, SBC_WRITE_6, 0x00), SCSITGT_IO_FLAG_FUA);
	assert_int_equal(io_flags_of(t, SBC_READ_10, 0x00), 0);
	tctx_destroy(t);

	/* No cache and no FLUSH: FUA is met trivially and not passed on. */
	t = cache_lun(0, 0, 0);
	assert_false(t->lun->mode.wce);
	assert_int_equal(io_flags_of(t, SBC_WRITE_10, 0x08), 0);
	assert_int_equal(io_flags_of(t, SBC_READ_10, 0x08), 0);
	tctx_destroy(t);
}

/* The ios the last command sent, in order, from record @from on. */
static void assert_ios(struct tctx *t, size_t from, const enum scsitgt_io_type *types, size_t n)
{
	assert_int_equal(t->fb->nrecs - from, n);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(t->fb->recs[from + i].type, types[i]);
		/* backend.h: FUA only on WRITE and WRITE SAME */
		if (types[i] != SCSITGT_IO_WRITE)
			assert_int_equal(t->fb->recs[from + i].flags & SCSITGT_IO_FLAG_FUA, 0);
	}
}

/*
 * SBC-4 READ (10)/(12)/(16) FUA: cached blocks are written to the medium before they are
 * read. On a volatile cache the core sends a FLUSH and then the READ io, without FUA; a READ
 * without FUA, or on a LUN with no volatile cache, is the READ io alone.
 */
static void test_read_fua_flushes(void **state)
{
	static const enum scsitgt_io_type flush_read[] = { SCSITGT_IO_FLUSH, SCSITGT_IO_READ };
	static const enum scsitgt_io_type read_only[] = { SCSITGT_IO_READ };
	static const uint8_t ops[] = { SBC_READ_10, SBC_READ_12, SBC_READ_16 };
	uint8_t buf[512] = { 0 }, want[512];
	struct lf_result *r;
	struct tctx *t;
	size_t from;

	(void)state;
	t = cache_lun(SCSITGT_LUN_WRITE_CACHE, SCSITGT_GEOMETRY_WRITE_CACHE,
		      1u << SCSITGT_IO_FLUSH);
	fill(want, sizeof(want), 7);
	r = tctx_run_lun(t, 0, cdb_rw(t->cdb, SBC_WRITE_10, 1, 1, 0), want, sizeof(want));
	assert_good(r);
	for (size_t i = 0; i < sizeof(ops); i++) {
		from = t->fb->nrecs;
		memset(buf, 0, sizeof(buf));
		r = tctx_run_lun(t, 0, cdb_rw(t->cdb, ops[i], 1, 1, 0x08), buf, sizeof(buf));
		assert_good(r);
		assert_ios(t, from, flush_read, 2);
		assert_int_equal(r->data_len, sizeof(want));
		assert_memory_equal(r->data, want, sizeof(want));
	}
	/* WCE 0 too: a write cached while it was 1 may still be dirty (backend.h FLUSH). */
	t->lun->mode.wce = false;
	from = t->fb->nrecs;
	assert_good(tctx_run_lun(t, 0, cdb_rw(t->cdb, SBC_READ_10, 1, 1, 0x08), buf, sizeof(buf)));
	assert_ios(t, from, flush_read, 2);
	t->lun->mode.wce = true;
	/* No cost without FUA. */
	from = t->fb->nrecs;
	assert_good(tctx_run_lun(t, 0, cdb_rw(t->cdb, SBC_READ_10, 1, 1, 0), buf, sizeof(buf)));
	assert_ios(t, from, read_only, 1);
	/* A FLUSH that fails fails the READ (not on the medium), and no READ io goes. */
	fake_backend_fail_type(t->fb, SCSITGT_IO_FLUSH, -EIO, 1);
	from = t->fb->nrecs;
	r = tctx_run_lun(t, 0, cdb_rw(t->cdb, SBC_READ_16, 1, 1, 0x08), buf, sizeof(buf));
	assert_sense(r, 0x3, 0x0c, 0x00); /* MEDIUM ERROR, WRITE ERROR: the FLUSH's */
	assert_int_equal(r->data_len, 0);
	assert_ios(t, from, flush_read, 1);
	tctx_destroy(t);

	/* No volatile cache (no FLUSH): FUA is met as it is, the READ io alone. */
	t = cache_lun(0, 0, 0);
	from = t->fb->nrecs;
	assert_good(tctx_run_lun(t, 0, cdb_rw(t->cdb, SBC_READ_10, 1, 1, 0x08), buf, sizeof(buf)));
	assert_ios(t, from, read_only, 1);
	tctx_destroy(t);
}

static void tmf_resp(void *arg, enum scsitgt__tmf_response response)
{
	*(int *)arg = (int)response;
}

/* A READ with FUA aborted while its FLUSH is held: the FLUSH's success sends no READ io, the
 * command ends aborted and its range is let go (a COMPARE AND WRITE, which waits for every
 * plain command of the LUN, starts at once). */
static void test_read_fua_aborted(void **state)
{
	struct fake_backend_opts o;
	struct lf_result r = { 0 };
	uint8_t cdb[CDB_BUF] = { 0 }, lun[8], dout[2 * 512] = { 0 };
	struct tctx *t;
	int resp = -1;

	(void)state;
	fake_backend_opts_init(&o);
	o.geo_flags = SCSITGT_GEOMETRY_WRITE_CACHE;
	o.supports = 1u << SCSITGT_IO_FLUSH;
	o.mode = FAKE_MANUAL;
	t = tctx_create(SCSITGT_LUN_WRITE_CACHE, &o);
	loop_fabric_start(t->lf, 0, cdb, cdb_rw(cdb, SBC_READ_10, 1, 1, 0x08), NULL, 0, &r);
	assert_int_equal(t->fb->nrecs, 1);
	assert_int_equal(t->fb->recs[0].type, SCSITGT_IO_FLUSH);
	scsitgt__lun_encode(0, lun);
	scsitgt__tmf_execute(t->lf->sess, SCSITGT__TMF_ABORT_TASK, lun, r.cmd->tag, tmf_resp,
			     &resp);
	fake_backend_complete_pending(t->fb);
	while (resp == -1)
		assert_int_not_equal(uv_run(&t->lf->loop, UV_RUN_ONCE), 0);
	assert_int_equal(resp, SCSITGT__TMF_COMPLETE);
	assert_true(r.aborted);
	assert_int_equal(t->fb->nrecs, 1);
	lf_result_clear(&r);
	/* SBC-4 §5.3 COMPARE AND WRITE of LBA 1: compare zeros, write zeros */
	memset(cdb, 0, sizeof(cdb));
	cdb[0] = 0x89;
	cdb[9] = 1;
	cdb[13] = 1;
	loop_fabric_start(t->lf, 0, cdb, 16, dout, sizeof(dout), &r);
	assert_int_equal(t->fb->nrecs, 2);
	assert_int_equal(t->fb->recs[1].type, SCSITGT_IO_READ);
	fake_backend_complete_pending(t->fb);
	loop_fabric_wait(t->lf, &r);
	assert_good(&r);
	lf_result_clear(&r);
	tctx_destroy(t);
}

static void test_read_only(void **state)
{
	struct tctx *t = tctx_create(SCSITGT_LUN_READ_ONLY, NULL);
	uint8_t buf[512] = { 0 };
	struct lf_result *r;

	(void)state;
	for (size_t i = 0; i < 4; i++) {
		r = tctx_run_lun(t, 0, cdb_rw(t->cdb, write_ops[i], 0, 1, 0), buf, sizeof(buf));
		assert_sense(r, 0x7, 0x27, 0x00);
		assert_no_sks(r);
	}
	assert_int_equal(t->fb->nrecs, 0);
	/* Write protection comes before the fields (issue 17): a WRPROTECT value, an LBA out
	 * of range. */
	r = tctx_run(t, cdb_rw(t->cdb, SBC_WRITE_10, 0, 1, 0x20));
	assert_sense(r, 0x7, 0x27, 0x00);
	r = tctx_run(t, cdb_rw(t->cdb, SBC_WRITE_16, 1ull << 40, 1, 0));
	assert_sense(r, 0x7, 0x27, 0x00);
	r = tctx_run(t, cdb_rw(t->cdb, SBC_READ_10, 0, 1, 0x20));
	assert_bad_cdb(r, 1, 7);
	r = tctx_run(t, cdb_rw(t->cdb, SBC_READ_10, 0, 1, 0));
	assert_good(r);
	tctx_destroy(t);
}

/*
 * Issue 17, defect 7: every medium-write command of the CDB table (WRITE, WRITE AND VERIFY,
 * WRITE SAME with and without UNMAP, UNMAP, COMPARE AND WRITE, ORWRITE, WRITE ATOMIC, FORMAT
 * UNIT, SANITIZE) on a write-protected, fully provisioned LUN answers DATA PROTECT, WRITE
 * PROTECTED whatever its fields hold: every other bit set (reserved bits, UNMAP on a LUN
 * without provisioning, LBAs beyond the end, lengths above the limits). By the LUN's flag and
 * by SWP of the control mode page.
 */
static void test_write_protect_before_fields(void **state)
{
	unsigned int written = 0;

	(void)state;
	for (int swp = 0; swp < 2; swp++) {
		struct tctx *t = tctx_create(swp ? 0 : SCSITGT_LUN_READ_ONLY, NULL);
		const struct scsitgt__cdb_def *row;
		unsigned int it = 0;
		uint8_t op;
		uint16_t sa;

		t->lun->mode.swp = swp;
		while ((row = scsitgt__cdb_iter(&it, &op, &sa)) != NULL) {
			struct lf_result *r;

			if (!(row->flags & SCSITGT__CDB_F_WRITE))
				continue;
			memset(t->cdb, 0xff, row->cdb_len);
			t->cdb[0] = op;
			if (scsitgt__cdb_has_sa(op))
				t->cdb[1] = (uint8_t)(0xe0 | sa);
			t->cdb[row->cdb_len - 1] = 0; /* CONTROL: no NACA, no link */
			r = tctx_run(t, row->cdb_len);
			if (r->status != 0x02 || (r->sense[2] & 0x0f) != 0x7 ||
			    r->sense[12] != 0x27)
				fail_msg("%s: status %02x sense %x/%02x/%02x, not DATA PROTECT",
					 row->name, r->status, r->sense[2] & 0x0f, r->sense[12],
					 r->sense[13]);
			assert_sense(r, 0x7, 0x27, 0x00);
			written++;
		}
		assert_int_equal(t->fb->nrecs, 0);
		tctx_destroy(t);
	}
	/* 4 WRITEs, 3 WRITE AND VERIFY, 2 WRITE SAME, UNMAP, COMPARE AND WRITE, ORWRITE,
	 * WRITE ATOMIC, FORMAT UNIT, 4 SANITIZE service actions; twice. */
	assert_int_equal(written, 2 * 18);
}

static void test_software_write_protect(void **state)
{
	struct tctx *t = *state;
	uint8_t buf[512] = { 0 };
	struct lf_result *r;

	t->lun->mode.swp = true;
	r = tctx_run_lun(t, 0, cdb_rw(t->cdb, SBC_WRITE_10, 0, 1, 0), buf, sizeof(buf));
	assert_sense(r, 0x7, 0x27, 0x00);
	t->lun->mode.swp = false;
	r = tctx_run_lun(t, 0, cdb_rw(t->cdb, SBC_WRITE_10, 0, 1, 0), buf, sizeof(buf));
	assert_good(r);
}

static void test_block_size_4096(void **state)
{
	struct fake_backend_opts o;
	uint8_t buf[2 * 4096];
	struct lf_result *r;
	struct tctx *t;

	(void)state;
	fake_backend_opts_init(&o);
	o.block_size = 4096;
	o.num_blocks = 64;
	t = tctx_create(0, &o);
	fill(buf, sizeof(buf), 9);
	r = tctx_run_lun(t, 0, cdb_rw(t->cdb, SBC_WRITE_10, 62, 2, 0), buf, sizeof(buf));
	assert_good(r);
	r = tctx_run(t, cdb_rw(t->cdb, SBC_READ_16, 62, 2, 0));
	assert_good(r);
	assert_int_equal(r->data_len, sizeof(buf));
	assert_memory_equal(r->data, buf, sizeof(buf));
	r = tctx_run(t, cdb_rw(t->cdb, SBC_READ_16, 63, 2, 0));
	assert_sense(r, 0x5, 0x21, 0x00);
	tctx_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_round_trip, tctx_setup, tctx_teardown),
		cmocka_unit_test_setup_teardown(test_six_byte_zero_is_256, tctx_setup,
						tctx_teardown),
		cmocka_unit_test_setup_teardown(test_zero_length, tctx_setup, tctx_teardown),
		cmocka_unit_test_setup_teardown(test_out_of_range, tctx_setup, tctx_teardown),
		cmocka_unit_test(test_transfer_too_large),
		cmocka_unit_test_setup_teardown(test_protect_fields, tctx_setup, tctx_teardown),
		cmocka_unit_test(test_fua),
		cmocka_unit_test(test_read_fua_flushes),
		cmocka_unit_test(test_read_fua_aborted),
		cmocka_unit_test(test_read_only),
		cmocka_unit_test(test_write_protect_before_fields),
		cmocka_unit_test_setup_teardown(test_software_write_protect, tctx_setup,
						tctx_teardown),
		cmocka_unit_test(test_block_size_4096),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
