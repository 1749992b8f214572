/* SPDX-License-Identifier: MIT */
/*
 * The fault-injection backend (backend_fault.h) around the RAM backend, under SCSI commands
 * through the loop fabric: error, medium error with its LBA, every-Nth and skip/count
 * selection, io-type filters, delays, holds released with success or an error, counters, and
 * the text specification parser.
 */
#include <errno.h>

#include "test_util.h"

#include "core/scsi_spec.h"
#include "libscsitgt/backend_fault.h"

struct fctx {
	struct loop_fabric *lf;
	void *fault;
	struct lf_result r;
	uint8_t cdb[CDB_BUF];
	uint8_t buf[8 * 512];
};

static int setup(void **state)
{
	struct fctx *f = calloc(1, sizeof(*f));
	struct scsitgt_lun_opts lo;
	struct scsitgt_lun *lun;
	void *ram;

	assert_non_null(f);
	assert_int_equal(loop_fabric_create(&f->lf, NULL), 0);
	assert_int_equal(scsitgt_backend_ram_create(&ram), 0);
	assert_int_equal(scsitgt_backend_fault_create(&f->fault, &f->lf->loop,
						      scsitgt_backend_ram_ops(), ram),
			 0);
	scsitgt_lun_opts_init(&lo, sizeof(lo));
	lo.id = 0;
	lo.block_size = 512;
	lo.num_blocks = 4096;
	lo.backend = scsitgt_backend_fault_ops(f->fault);
	lo.backend_ctx = f->fault;
	assert_int_equal(scsitgt_lun_create(&lun, f->lf->tgt, &lo), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fctx *f = *state;

	lf_result_clear(&f->r);
	loop_fabric_destroy(f->lf);
	free(f);
	return 0;
}

static struct lf_result *run_rw(struct fctx *f, uint8_t op, uint64_t lba, uint32_t n)
{
	lf_result_clear(&f->r);
	loop_fabric_run(f->lf, 0, f->cdb, cdb_rw(f->cdb, op, lba, n, 0),
			op == SBC_WRITE_10 ? f->buf : NULL, op == SBC_WRITE_10 ? n * 512u : 0,
			&f->r);
	return &f->r;
}

static struct scsitgt_fault_stats stats(struct fctx *f)
{
	struct scsitgt_fault_stats st;

	st.size = sizeof(st);
	assert_int_equal(scsitgt_backend_fault_get_stats(f->fault, &st), 0);
	return st;
}

static void test_error_rule(void **state)
{
	struct fctx *f = *state;
	struct scsitgt_fault_rule r;

	scsitgt_fault_rule_init(&r, sizeof(r));
	r.io_types = SCSITGT_FAULT_IO(SCSITGT_IO_WRITE);
	r.error = -ENOSPC;
	assert_int_equal(scsitgt_backend_fault_add_rule(f->fault, &r), 0);
	/* -ENOSPC maps to DATA PROTECT, SPACE ALLOCATION FAILED WRITE PROTECT. */
	assert_sense(run_rw(f, SBC_WRITE_10, 0, 1), 0x7, 0x27, 0x07);
	/* Reads are not of the rule's type. */
	assert_good(run_rw(f, SBC_READ_10, 0, 1));
	assert_int_equal(stats(f).errors, 1);
	assert_int_equal(stats(f).passed, 1);
	assert_int_equal(stats(f).submitted, 2);
	assert_int_equal(scsitgt_backend_fault_clear_rules(f->fault), 0);
	assert_good(run_rw(f, SBC_WRITE_10, 0, 1));
}

static void test_medium_lba(void **state)
{
	struct fctx *f = *state;
	struct lf_result *res;

	for (unsigned int i = 0; i < sizeof(f->buf); i++)
		f->buf[i] = (uint8_t)(i * 13 + 1);
	assert_good(run_rw(f, SBC_WRITE_10, 96, 8));
	assert_int_equal(scsitgt_backend_fault_add_spec(f->fault, "medium@read:lba=100:len=8"), 1);
	/* Blocks 96..103 overlap 100..107: the error is reported at 100, and the four good
	 * blocks before it come with the CHECK CONDITION (issue 17, defect 10). */
	res = run_rw(f, SBC_READ_10, 96, 8);
	assert_sense_data(res, 0x3, 0x11, 0x00, 4 * 512);
	assert_memory_equal(res->data, f->buf, 4 * 512);
	assert_int_equal(res->sense[0] & 0x80, 0x80); /* VALID: INFORMATION holds the LBA */
	assert_int_equal(get_be32(&res->sense[3]), 100);
	/* Blocks 104..107 start inside the range: reported at their first block. */
	res = run_rw(f, SBC_READ_10, 104, 4);
	assert_sense(res, 0x3, 0x11, 0x00);
	assert_int_equal(get_be32(&res->sense[3]), 104);
	/* Outside it, and writes, succeed. */
	assert_good(run_rw(f, SBC_READ_10, 0, 8));
	assert_good(run_rw(f, SBC_READ_10, 108, 8));
	assert_good(run_rw(f, SBC_WRITE_10, 100, 1));
	assert_int_equal(stats(f).medium_errors, 2);
}

/*
 * A WRITE that fails at a block reports it in INFORMATION, and initiators take the blocks
 * before it for written (Linux's sd_completed_bytes()): they must be on the medium.
 */
static void test_medium_write_prefix(void **state)
{
	struct fctx *f = *state;
	struct lf_result *res;
	uint8_t old[8 * 512];

	for (unsigned int i = 0; i < sizeof(f->buf); i++)
		f->buf[i] = (uint8_t)(i * 7 + 3);
	assert_good(run_rw(f, SBC_WRITE_10, 200, 8));
	memcpy(old, f->buf, sizeof(old));
	assert_int_equal(scsitgt_backend_fault_add_spec(f->fault, "medium@write:lba=205:len=1"), 1);
	memset(f->buf, 0x5a, sizeof(f->buf));
	res = run_rw(f, SBC_WRITE_10, 200, 8);
	/* SBC-4 MEDIUM ERROR, WRITE ERROR (0Ch/00h) at block 205. */
	assert_sense(res, 0x3, 0x0c, 0x00);
	assert_int_equal(res->sense[0] & 0x80, 0x80);
	assert_int_equal(get_be32(&res->sense[3]), 205);
	res = run_rw(f, SBC_READ_10, 200, 8);
	assert_good(res);
	/* 200..204 hold the new data, 205..207 the old. */
	for (unsigned int i = 0; i < 5 * 512; i++)
		assert_int_equal(res->data[i], 0x5a);
	assert_memory_equal(res->data + 5 * 512, old + 5 * 512, 3 * 512);
	/* A rule that hits the io's first block: nothing is good, nothing is written again. */
	assert_int_equal(scsitgt_backend_fault_clear_rules(f->fault), 0);
	assert_int_equal(scsitgt_backend_fault_add_spec(f->fault, "medium@read"), 1);
	res = run_rw(f, SBC_READ_10, 200, 8);
	assert_sense(res, 0x3, 0x11, 0x00);
	assert_int_equal(get_be32(&res->sense[3]), 200);
}

static void test_every_skip_count(void **state)
{
	struct fctx *f = *state;
	static const bool fails[] = { false, true, false, true, false, false, false };

	assert_int_equal(
		scsitgt_backend_fault_add_spec(f->fault, "error=EIO@read:skip=1:every=2:count=2"),
		1);
	for (unsigned int i = 0; i < sizeof(fails) / sizeof(fails[0]); i++) {
		struct lf_result *res = run_rw(f, SBC_READ_10, i, 1);

		if (fails[i])
			assert_sense(res, 0x3, 0x11, 0x00);
		else
			assert_good(res);
	}
	assert_int_equal(stats(f).errors, 2);
}

static void test_delay(void **state)
{
	struct fctx *f = *state;
	struct lf_result *res;

	assert_int_equal(scsitgt_backend_fault_add_spec(f->fault, "delay=5@write"), 1);
	memset(f->buf, 0xa5, 512);
	loop_fabric_start(f->lf, 0, f->cdb, cdb_rw(f->cdb, SBC_WRITE_10, 7, 1, 0), f->buf, 512,
			  &f->r);
	/* The timer, not submit(), completes it. */
	assert_false(f->r.done);
	assert_int_equal(stats(f).delaying, 1);
	loop_fabric_wait(f->lf, &f->r);
	assert_good(&f->r);
	assert_int_equal(stats(f).delaying, 0);
	assert_int_equal(stats(f).delayed, 1);
	/* The write reached the RAM backend. */
	res = run_rw(f, SBC_READ_10, 7, 1);
	assert_good(res);
	assert_int_equal(res->data[0], 0xa5);
	assert_int_equal(res->data[511], 0xa5);
}

static void test_hang_release(void **state)
{
	struct fctx *f = *state;
	struct lf_result *res;

	assert_int_equal(scsitgt_backend_fault_add_spec(f->fault, "hang@write"), 1);
	memset(f->buf, 0x3c, 512);
	loop_fabric_start(f->lf, 0, f->cdb, cdb_rw(f->cdb, SBC_WRITE_10, 9, 1, 0), f->buf, 512,
			  &f->r);
	for (int i = 0; i < 5; i++)
		uv_run(&f->lf->loop, UV_RUN_NOWAIT);
	assert_false(f->r.done);
	assert_int_equal(stats(f).held, 1);
	/* Released with success: it goes on to the RAM backend. */
	assert_int_equal(scsitgt_backend_fault_release(f->fault, 0, 0), 1);
	loop_fabric_wait(f->lf, &f->r);
	assert_good(&f->r);
	assert_int_equal(stats(f).held, 0);
	res = run_rw(f, SBC_READ_10, 9, 1);
	assert_good(res);
	assert_int_equal(res->data[0], 0x3c);
	/* Released with an error: WRITE ERROR (MEDIUM ERROR 0Ch/00h). */
	lf_result_clear(&f->r);
	loop_fabric_start(f->lf, 0, f->cdb, cdb_rw(f->cdb, SBC_WRITE_10, 9, 1, 0), f->buf, 512,
			  &f->r);
	assert_false(f->r.done);
	assert_int_equal(scsitgt_backend_fault_release(f->fault, 1, -EIO), 1);
	loop_fabric_wait(f->lf, &f->r);
	assert_sense(&f->r, 0x3, 0x0c, 0x00);
	assert_int_equal(scsitgt_backend_fault_release(f->fault, 0, 0), 0);
	assert_int_equal(scsitgt_backend_fault_release(f->fault, 0, 1), -EINVAL);
	assert_int_equal(stats(f).hung, 2);
	assert_int_equal(stats(f).released, 2);
}

static void test_spec_parser(void **state)
{
	struct fctx *f = *state;
	static const char *bad[] = {
		"",
		"hang",
		"hang@",
		"@write",
		"hang@writ",
		"hang@write+",
		"hang=3@write",
		"medium=1@read",
		"error=0@read",
		"error=EBOGUS@read",
		"error=99999@read",
		"delay=x@read",
		"delay=3600001@read",
		"hang@read:lba",
		"hang@read:len=0",
		"hang@read:every=",
		"hang@read:foo=1",
		"hang@read;",
		";hang@read",
		"hang@read:lba=18446744073709551615",
		"hang@read:skip=4294967296",
		"hang@read;bogus@write",
	};
	struct scsitgt_fault_rule r;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(scsitgt_backend_fault_add_spec(f->fault, bad[i]), -EINVAL);
	/* A rejected specification added nothing: writes and reads go through. */
	assert_good(run_rw(f, SBC_WRITE_10, 0, 1));
	assert_good(run_rw(f, SBC_READ_10, 0, 1));
	assert_int_equal(scsitgt_backend_fault_add_spec(
				 f->fault, "delay=1@read+write;hang@flush:skip=2;error=28@unmap+"
					   "write_zeroes:count=1;medium@all:len=4"),
			 4);
	assert_int_equal(scsitgt_backend_fault_add_spec(f->fault, "error=-5@ALL:every=0"), 1);
	/* Bad rule structures. */
	assert_int_equal(scsitgt_backend_fault_add_rule(f->fault, NULL), -EINVAL);
	scsitgt_fault_rule_init(&r, sizeof(r));
	r.error = 5;
	assert_int_equal(scsitgt_backend_fault_add_rule(f->fault, &r), -EINVAL);
	scsitgt_fault_rule_init(&r, sizeof(r));
	r.io_types = 0;
	assert_int_equal(scsitgt_backend_fault_add_rule(f->fault, &r), -EINVAL);
	scsitgt_fault_rule_init(&r, sizeof(r));
	r.action = (enum scsitgt_fault_action)9;
	assert_int_equal(scsitgt_backend_fault_add_rule(f->fault, &r), -EINVAL);
	scsitgt_fault_rule_init(&r, sizeof(r));
	/* 64 rules at most. */
	for (int i = 5; i < 64; i++)
		assert_int_equal(scsitgt_backend_fault_add_rule(f->fault, &r), i);
	assert_int_equal(scsitgt_backend_fault_add_rule(f->fault, &r), -ENOSPC);
	assert_int_equal(scsitgt_backend_fault_add_spec(f->fault, "hang@read"), -ENOSPC);
	assert_int_equal(scsitgt_backend_fault_clear_rules(f->fault), 0);
}

static void test_create_args(void **state)
{
	struct fctx *f = *state;
	struct scsitgt_backend_ops bad;
	struct scsitgt_fault_stats st;
	struct scsitgt_lun_opts lo;
	struct scsitgt_lun *lun;
	void *ctx, *ram;

	assert_int_equal(
		scsitgt_backend_fault_create(NULL, &f->lf->loop, scsitgt_backend_ram_ops(), NULL),
		-EINVAL);
	assert_int_equal(scsitgt_backend_fault_create(&ctx, NULL, scsitgt_backend_ram_ops(), NULL),
			 -EINVAL);
	memset(&bad, 0, sizeof(bad));
	bad.size = sizeof(bad);
	assert_int_equal(scsitgt_backend_fault_create(&ctx, &f->lf->loop, &bad, NULL), -EINVAL);
	assert_null(scsitgt_backend_fault_ops(NULL));
	assert_int_equal(scsitgt_backend_fault_destroy(NULL), 0);
	st.size = 0;
	assert_int_equal(scsitgt_backend_fault_get_stats(f->fault, &st), -EINVAL);
	/* A context whose LUN was refused is freed with scsitgt_backend_fault_destroy(). */
	assert_int_equal(scsitgt_backend_ram_create(&ram), 0);
	assert_int_equal(
		scsitgt_backend_fault_create(&ctx, &f->lf->loop, scsitgt_backend_ram_ops(), ram),
		0);
	assert_string_equal(scsitgt_backend_fault_ops(ctx)->name, scsitgt_backend_ram_ops()->name);
	scsitgt_lun_opts_init(&lo, sizeof(lo));
	lo.id = 0; /* taken */
	lo.block_size = 512;
	lo.num_blocks = 8;
	lo.backend = scsitgt_backend_fault_ops(ctx);
	lo.backend_ctx = ctx;
	assert_int_equal(scsitgt_lun_create(&lun, f->lf->tgt, &lo), -EEXIST);
	assert_int_equal(scsitgt_backend_fault_destroy(ctx), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_error_rule, setup, teardown),
		cmocka_unit_test_setup_teardown(test_medium_lba, setup, teardown),
		cmocka_unit_test_setup_teardown(test_medium_write_prefix, setup, teardown),
		cmocka_unit_test_setup_teardown(test_every_skip_count, setup, teardown),
		cmocka_unit_test_setup_teardown(test_delay, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hang_release, setup, teardown),
		cmocka_unit_test_setup_teardown(test_spec_parser, setup, teardown),
		cmocka_unit_test_setup_teardown(test_create_args, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
