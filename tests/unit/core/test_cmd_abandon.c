/* SPDX-License-Identifier: MIT */
/*
 * A command given up by an engine shutdown while its backend still holds its io (ABANDONED,
 * core/drain.c) gets no io callback again: the backend's late completion frees it, after the
 * engine and its loop are gone. The heap state of its family (MODE SELECT's record across its
 * write-back, EXTENDED COPY's copy, the range walk of WRITE SAME and VERIFY, the read-back
 * buffers of COMPARE AND WRITE and WRITE AND VERIFY) goes with it (core/cmd.h, struct
 * scsitgt__cmd_ctx_ops), and only then: the late io still writes into those buffers. Run under
 * ASan with LeakSanitizer: a leak or a use after free is the failure looked for here; every
 * build checks which io the backend holds when the engine goes.
 */
#include <string.h>

#include "test_util.h"

#include "core/scsi_spec.h"

#define BS 512u

/* One case: a LUN with WCE 1 on a backend with a volatile cache holding every io. */
struct ab {
	struct tctx *t;
	uint8_t cdb[CDB_BUF];
	uint8_t data[16 + 8 * BS];
	struct lf_result r;
	/* commands started beside the first (test_shared_entries) */
	struct lf_result more[2];
};

static struct ab *ab_new_opts(uint32_t lun_flags, struct fake_backend_opts *o)
{
	struct ab *c = calloc(1, sizeof(*c));

	assert_non_null(c);
	o->mode = FAKE_MANUAL;
	c->t = tctx_create(lun_flags, o);
	assert_int_equal(scsitgt_engine_set_drain_timeout(c->t->lf->engine, 20), 0);
	memset(c->data, 0x5a, sizeof(c->data));
	return c;
}

static struct ab *ab_new(void)
{
	struct fake_backend_opts o;

	fake_backend_opts_init(&o);
	o.geo_flags = SCSITGT_GEOMETRY_WRITE_CACHE;
	o.supports = 1u << SCSITGT_IO_FLUSH;
	return ab_new_opts(SCSITGT_LUN_WRITE_CACHE, &o);
}

static void ab_start(struct ab *c, size_t cdb_len, size_t dout_len)
{
	loop_fabric_start(c->t->lf, 0, c->cdb, cdb_len, c->data, dout_len, &c->r);
}

/* None of the case's commands has answered. */
static void ab_assert_silent(const struct ab *c)
{
	assert_false(c->r.done);
	for (size_t i = 0; i < sizeof(c->more) / sizeof(c->more[0]); i++)
		assert_false(c->more[i].done);
}

/* The backend holds @n ios: the engine goes (its session first), then the ios come back,
 * which frees the commands and what they own. */
static void ab_abandon_held(struct ab *c, size_t n)
{
	struct fake_backend *fb = c->t->fb;

	assert_int_equal(fb->npending, n);
	ab_assert_silent(c);
	loop_fabric_destroy(c->t->lf);
	c->t->lf = NULL;
	/* the commands never answer; their ios are still held */
	ab_assert_silent(c);
	assert_int_equal(fb->npending, n);
	fake_backend_complete_pending(fb);
	ab_assert_silent(c);
	fake_backend_destroy(fb);
	lf_result_clear(&c->r);
	free(c->t);
	free(c);
}

/* The backend holds one io, of @type, when the engine goes. */
static void ab_abandon(struct ab *c, enum scsitgt_io_type type)
{
	struct fake_backend *fb = c->t->fb;

	assert_int_equal(fb->recs[fb->nrecs - 1].type, type);
	ab_abandon_held(c, 1);
}

/* MODE SELECT (10) turning WCE off: its record lives across its write-back (the FLUSH). */
static void test_mode_select(void **state)
{
	struct ab *c = ab_new();

	(void)state;
	memset(c->data, 0, 28);
	c->data[8] = 0x08;
	c->data[9] = 0x12;
	ab_start(c, cdb_mode_select10(c->cdb, true, false, 28), 28);
	assert_false(c->t->lun->mode.wce);
	ab_abandon(c, SCSITGT_IO_FLUSH);
}

/* EXTENDED COPY within the LUN: the copy and its piece's buffer, which the READ fills. */
static void test_xcopy(void **state)
{
	struct ab *c = ab_new();
	uint8_t *d = c->data;

	(void)state;
	memset(d, 0, 16 + 32 + 28);
	/* header: list id 1, no tracking flags; one CSCD (32 bytes), one segment (28) */
	d[0] = 1;
	put_be16(&d[2], 32);
	put_be32(&d[8], 28);
	d[16] = 0xe4; /* identification descriptor CSCD */
	d[16 + 4] = 0x01;
	d[16 + 5] = 0x03;
	d[16 + 7] = 8;
	put_be64(&d[16 + 8], c->t->lun->ident.naa);
	put_be24(&d[16 + 29], BS);
	d[48] = 0x02; /* block to block */
	put_be16(&d[48 + 2], 0x18);
	put_be16(&d[48 + 10], 2);
	put_be64(&d[48 + 12], 100);
	put_be64(&d[48 + 20], 10);
	memset(c->cdb, 0, CDB_BUF);
	c->cdb[0] = SPC_EXTENDED_COPY;
	put_be32(&c->cdb[10], 16 + 32 + 28);
	ab_start(c, 16, 16 + 32 + 28);
	ab_abandon(c, SCSITGT_IO_READ);
}

/* WRITE SAME (16) of a pattern: the range walk and its buffer of the block repeated. */
static void test_write_same(void **state)
{
	struct ab *c = ab_new();

	(void)state;
	ab_start(c, cdb_rw(c->cdb, SBC_WRITE_SAME_16, 8, 4, 0), BS);
	ab_abandon(c, SCSITGT_IO_WRITE);
}

/* A 10-byte media CDB: @byte1, LBA @lba, @n blocks. */
static size_t ab_cdb10(struct ab *c, uint8_t opcode, uint8_t byte1, uint32_t lba, uint16_t n)
{
	memset(c->cdb, 0, CDB_BUF);
	c->cdb[0] = opcode;
	c->cdb[1] = byte1;
	put_be32(&c->cdb[2], lba);
	put_be16(&c->cdb[7], n);
	return 10;
}

/* VERIFY (10) with BYTCHK 01b: the range walk and the buffer its medium reads fill. */
static void test_verify(void **state)
{
	struct ab *c = ab_new();

	(void)state;
	ab_start(c, ab_cdb10(c, SBC_VERIFY_10, 0x02, 16, 2), 2 * BS);
	ab_abandon(c, SCSITGT_IO_READ);
}

/* COMPARE AND WRITE: the read-back buffer its READ fills. */
static void test_compare_and_write(void **state)
{
	struct ab *c = ab_new();

	(void)state;
	memset(c->cdb, 0, CDB_BUF);
	c->cdb[0] = SBC_COMPARE_AND_WRITE;
	put_be64(&c->cdb[2], 24);
	c->cdb[13] = 1;
	ab_start(c, 16, 2 * BS);
	ab_abandon(c, SCSITGT_IO_READ);
}

/* WRITE AND VERIFY (10) with BYTCHK: its WRITE back, then the read-back buffer its READ fills. */
static void test_write_and_verify(void **state)
{
	struct ab *c = ab_new();

	(void)state;
	ab_start(c, ab_cdb10(c, SBC_WRITE_AND_VERIFY_10, 0x02, 32, 1), BS);
	assert_int_equal(c->t->fb->npending, 1);
	fake_backend_complete_first(c->t->fb);
	ab_abandon(c, SCSITGT_IO_READ);
}

/* GET LBA STATUS on a thin LUN whose backend answers by io: the extent array it fills. */
static void test_get_lba_status(void **state)
{
	struct fake_backend_opts o;
	struct ab *c;

	(void)state;
	fake_backend_opts_init(&o);
	o.supports = 1u << SCSITGT_IO_UNMAP | 1u << SCSITGT_IO_GET_LBA_STATUS;
	o.geo_flags = SCSITGT_GEOMETRY_LBPRZ;
	o.lba_status = true;
	c = ab_new_opts(SCSITGT_LUN_THIN, &o);
	memset(c->cdb, 0, CDB_BUF);
	c->cdb[0] = SBC_SERVICE_ACTION_IN_16;
	c->cdb[1] = SBC_SAI_GET_LBA_STATUS;
	put_be32(&c->cdb[10], 4096);
	ab_start(c, 16, 0);
	ab_abandon(c, SCSITGT_IO_GET_LBA_STATUS);
}

/*
 * A READ and a VERIFY that took their range shared (an exclusive entry exists: a COMPARE AND
 * WRITE elsewhere on the LUN) and are in the backend when the engine goes, with the COMPARE AND
 * WRITE: their entries are the range lock's, and go with the LUN (range_lock.h), not with the
 * commands, which keep the plain path free of any ownership.
 */
static void test_shared_entries(void **state)
{
	struct ab *c = ab_new();
	uint8_t cdb[CDB_BUF];

	(void)state;
	ab_start(c, cdb_caw(c->cdb, 24, 1, 0), 2 * BS);
	assert_int_equal(c->t->fb->npending, 1);
	loop_fabric_start(c->t->lf, 0, cdb, cdb_rw(cdb, SBC_READ_10, 100, 2, 0), NULL, 0,
			  &c->more[0]);
	loop_fabric_start(c->t->lf, 0, c->cdb, ab_cdb10(c, SBC_VERIFY_10, 0x02, 200, 1), c->data,
			  BS, &c->more[1]);
	/* both run beside the COMPARE AND WRITE (other ranges): three ios held */
	ab_abandon_held(c, 3);
}

/* SEND DIAGNOSTIC's default self-test (SELFTEST 1): the block buffer its READ of block 0 fills. */
static void test_send_diag_selftest(void **state)
{
	struct ab *c = ab_new();

	(void)state;
	ab_start(c, cdb_send_diag(c->cdb, 0x04, 0), 0);
	ab_abandon(c, SCSITGT_IO_READ);
}

/*
 * A backend over RAM that holds each io until the test lets it go (the host's part after the
 * engine went: ios given up on are still completed, then the host closes the backend).
 * @own_lend: a READ lends the backend's own block at submit instead (on the loop, as
 * scsitgt_io_lend_data() wants), and is completed from "another thread" with
 * scsitgt_io_complete_threadsafe(); else the held io goes on into RAM, which lends its chunk.
 */
struct lend_be {
	struct scsitgt_backend_ops ops;
	void *ram;
	struct scsitgt_io *held;
	bool own_lend;
	uint8_t block[BS];
	unsigned int releases;
};

static int lb_open(void *bctx, struct scsitgt_lun_geometry *geo)
{
	struct lend_be *lb = bctx;

	return scsitgt_backend_ram_ops()->open(lb->ram, geo);
}

static void lb_close(void *bctx, scsitgt_done_cb cb, void *cb_arg)
{
	struct lend_be *lb = bctx;

	scsitgt_backend_ram_ops()->close(lb->ram, cb, cb_arg);
}

static void lb_release(void *arg)
{
	((struct lend_be *)arg)->releases++;
}

static void lb_submit(void *bctx, struct scsitgt_io *io)
{
	struct lend_be *lb = bctx;

	if (scsitgt_io_get_type(io) != SCSITGT_IO_READ) {
		scsitgt_backend_ram_ops()->submit(lb->ram, io);
		return;
	}
	assert_null(lb->held);
	assert_true(scsitgt_io_get_flags(io) & SCSITGT_IO_FLAG_MAY_LEND);
	if (lb->own_lend)
		assert_int_equal(scsitgt_io_lend_data(io, lb->block, BS, lb_release, lb), 0);
	lb->held = io;
}

/*
 * A plain READ of a nexus that sends lent Data-In (iSCSI/TCP's) is in the backend when the
 * engine goes; then the backend completes it with its data lent. The lent memory goes back
 * inside that completion (backend.h, scsitgt_io_lend_data(): exactly once, for an orphan from
 * inside the completion call), before the command and the LUN's shell go, so that the host
 * may close the backend right after: no chunk leaks, none is released into a closed RAM LUN.
 */
static void lend_abandon(bool own_lend)
{
	struct scsitgt_lun_opts lo;
	struct scsitgt_lun *lun;
	struct loop_fabric *lf;
	struct lf_result r;
	struct lend_be *lb;
	uint8_t cdb[CDB_BUF], data[BS];
	size_t len;

	lb = calloc(1, sizeof(*lb));
	assert_non_null(lb);
	lb->own_lend = own_lend;
	lb->ops.size = sizeof(lb->ops);
	lb->ops.name = "lend";
	lb->ops.open = lb_open;
	lb->ops.close = lb_close;
	lb->ops.submit = lb_submit;
	assert_int_equal(scsitgt_backend_ram_create(&lb->ram), 0);
	assert_int_equal(loop_fabric_create(&lf, NULL), 0);
	assert_int_equal(scsitgt_engine_set_drain_timeout(lf->engine, 20), 0);
	lf->sess->lend_data_in = true;
	scsitgt_lun_opts_init(&lo, sizeof(lo));
	lo.block_size = BS;
	lo.num_blocks = 2048;
	lo.backend = &lb->ops;
	lo.backend_ctx = lb;
	assert_int_equal(scsitgt_lun_create(&lun, lf->tgt, &lo), 0);
	/* a block in a chunk of its own, which the READ then borrows */
	memset(data, 0x5a, sizeof(data));
	memset(&r, 0, sizeof(r));
	len = cdb_rw(cdb, SBC_WRITE_10, 8, 1, 0);
	loop_fabric_run(lf, 0, cdb, len, data, sizeof(data), &r);
	assert_int_equal(r.status, 0);
	lf_result_clear(&r);
	memset(&r, 0, sizeof(r));
	loop_fabric_start(lf, 0, cdb, cdb_rw(cdb, SBC_READ_10, 8, 1, 0), NULL, 0, &r);
	assert_non_null(lb->held);
	loop_fabric_destroy(lf);
	assert_false(r.done);
	if (own_lend) {
		scsitgt_io_complete_threadsafe(lb->held, 0);
		assert_int_equal(lb->releases, 1);
	} else {
		scsitgt_backend_ram_ops()->submit(lb->ram, lb->held);
	}
	assert_false(r.done);
	lb_close(lb, NULL, NULL);
	free(lb);
}

static void test_lent_ram(void **state)
{
	(void)state;
	lend_abandon(false);
}

static void test_lent_threadsafe(void **state)
{
	(void)state;
	lend_abandon(true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mode_select),	   cmocka_unit_test(test_xcopy),
		cmocka_unit_test(test_write_same),	   cmocka_unit_test(test_verify),
		cmocka_unit_test(test_compare_and_write),  cmocka_unit_test(test_write_and_verify),
		cmocka_unit_test(test_get_lba_status),	   cmocka_unit_test(test_shared_entries),
		cmocka_unit_test(test_send_diag_selftest), cmocka_unit_test(test_lent_ram),
		cmocka_unit_test(test_lent_threadsafe),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
