/* SPDX-License-Identifier: MIT */
/*
 * The self-tests of SEND DIAGNOSTIC (SPC-5 §6.42) and the Self-Test Results log page (10h)
 * (core/spc_selftest.c): what each test reads, background and foreground behaviour, failures
 * with their segment, LBA and sense, aborts (SEND DIAGNOSTIC 100b, resets, START STOP UNIT,
 * TMFs), the twenty-entry history and the advisory completion time.
 */
#include <errno.h>
#include <string.h>

#include "test_util.h"

#include "core/fabric.h"
#include "core/scsi_spec.h"
#include "core/tmf.h"

#define BLOCKS 4096u
#define SAMPLE_BLOCKS 128u /* 64 KiB of 512-byte blocks */
#define PARAM_LEN 20u

static struct tctx *ctx(enum fake_mode mode, uint64_t blocks)
{
	struct fake_backend_opts o;

	fake_backend_opts_init(&o);
	o.num_blocks = blocks;
	o.mode = mode;
	return tctx_create(0, &o);
}

/* Let the loop run the deferred pieces of a test (one piece per loop iteration). */
static void spin(struct tctx *t)
{
	for (int i = 0; i < 64; i++)
		uv_run(&t->lf->loop, UV_RUN_NOWAIT);
}

static void tmf_done(void *arg, enum scsitgt__tmf_response response)
{
	*(int *)arg = (int)response;
}

/* The log page's parameter @n (1-based) into @p (PARAM_LEN bytes); returns the page length. */
static size_t log_param(struct tctx *t, unsigned int n, uint8_t *p)
{
	struct lf_result *r = tctx_run(t, cdb_log_sense(t->cdb, 0, 1, 0x10, 0, 0, 1024));

	assert_good(r);
	assert_int_equal(r->data[0] & 0x3f, 0x10);
	assert_int_equal(r->data_len, 4 + 20 * PARAM_LEN);
	memcpy(p, &r->data[4 + (n - 1) * PARAM_LEN], PARAM_LEN);
	assert_int_equal(get_be16(&p[0]), n);
	assert_int_equal(p[2], 0x03);
	assert_int_equal(p[3], 0x10);
	return get_be16(&r->data[2]);
}

static void assert_entry(struct tctx *t, unsigned int n, uint8_t code, uint8_t result,
			 uint8_t segment, uint64_t lba, uint8_t key, uint8_t asc)
{
	uint8_t p[PARAM_LEN];

	log_param(t, n, p);
	assert_int_equal(p[4] >> 5, code);
	assert_int_equal(p[4] & 0x0f, result);
	assert_int_equal(p[5], segment);
	assert_true(get_be64(&p[8]) == lba);
	assert_int_equal(p[16], key);
	assert_int_equal(p[17], asc);
}

/* A background short test: GOOD at once, then the first and last block and 16 samples. */
static void test_background_short(void **state)
{
	struct tctx *t = ctx(FAKE_SYNC, BLOCKS);
	uint8_t p[PARAM_LEN];

	(void)state;
	t->fb->nrecs = 0;
	assert_good(tctx_run(t, cdb_send_diag(t->cdb, 1 << 5, 0)));
	spin(t);
	assert_int_equal(t->fb->nrecs, 2 + 16);
	assert_int_equal(t->fb->recs[0].lba, 0);
	assert_int_equal(t->fb->recs[1].lba, BLOCKS - 1);
	for (unsigned int i = 0; i < 16; i++) {
		assert_int_equal(t->fb->recs[2 + i].type, SCSITGT_IO_READ);
		assert_int_equal(t->fb->recs[2 + i].num_blocks, SAMPLE_BLOCKS);
		assert_int_equal(t->fb->recs[2 + i].lba, i * (BLOCKS - SAMPLE_BLOCKS) / 15);
	}
	assert_entry(t, 1, 1, 0x0, 0, UINT64_MAX, 0, 0);
	/* the other nineteen parameters are there, unused */
	assert_int_equal(log_param(t, 2, p), 20 * PARAM_LEN);
	for (unsigned int i = 4; i < PARAM_LEN; i++)
		assert_int_equal(p[i], 0);
	/* PARAMETER POINTER: from parameter 5 on; past 20 is an invalid field */
	assert_good(tctx_run(t, cdb_log_sense(t->cdb, 0, 1, 0x10, 0, 5, 1024)));
	assert_int_equal(get_be16(&t->r.data[4]), 5);
	assert_int_equal(t->r.data_len, 4 + 16 * PARAM_LEN);
	assert_bad_cdb(tctx_run(t, cdb_log_sense(t->cdb, 0, 1, 0x10, 0, 21, 1024)), 5, 7);
	tctx_destroy(t);
}

/* A background extended test reads everything and records where it failed. */
static void test_background_extended_failure(void **state)
{
	struct tctx *t = ctx(FAKE_MANUAL, 8192);
	struct lf_result *r;

	(void)state;
	assert_good(tctx_run(t, cdb_send_diag(t->cdb, 2 << 5, 0)));
	/* background: the LUN serves other commands meanwhile */
	spin(t);
	assert_int_equal(t->fb->npending, 1);
	assert_good(tctx_run(t, cdb_tur(t->cdb)));
	/* REQUEST SENSE: NOT READY, SELF-TEST IN PROGRESS with the progress (nothing done) */
	r = tctx_run(t, cdb_request_sense(t->cdb, false, 18));
	assert_good(r);
	assert_int_equal(r->data[2] & 0x0f, SENSE_NOT_READY);
	assert_int_equal(r->data[12], 0x04);
	assert_int_equal(r->data[13], 0x09);
	assert_int_equal(r->data[15], 0x80);
	assert_int_equal(get_be16(&r->data[16]), 0);
	assert_entry(t, 1, 2, 0xf, 0, UINT64_MAX, 0, 0);
	/* segment 1 (two blocks), then the first 1 MiB piece of segment 2 */
	fake_backend_complete_pending(t->fb);
	spin(t);
	fake_backend_complete_pending(t->fb);
	spin(t);
	assert_int_equal(t->fb->npending, 1);
	assert_int_equal(fake_backend_last(t->fb)->lba, 0);
	assert_int_equal(fake_backend_last(t->fb)->num_blocks, 2048);
	fake_backend_complete_pending(t->fb);
	spin(t);
	assert_int_equal(fake_backend_last(t->fb)->lba, 2048);
	/* the second piece fails at block 3000 */
	t->fb->npending = 0;
	scsitgt_io_complete_at(t->fb->pending[0], -EIO, 3000);
	spin(t);
	assert_int_equal(t->fb->npending, 0);
	/* failed in segment 2, at 3000, MEDIUM ERROR UNRECOVERED READ ERROR */
	assert_entry(t, 1, 2, 0x6, 2, 3000, SENSE_MEDIUM_ERROR, 0x11);
	r = tctx_run(t, cdb_request_sense(t->cdb, false, 18));
	assert_int_equal(r->data[2] & 0x0f, SENSE_NO_SENSE);
	tctx_destroy(t);
}

/* Foreground: the command waits; meanwhile other commands get NOT READY, SELF-TEST IN
 * PROGRESS but INQUIRY, REPORT LUNS and REQUEST SENSE. */
static void test_foreground(void **state)
{
	struct tctx *t = ctx(FAKE_MANUAL, BLOCKS);
	struct lf_result s, *r;
	uint8_t cdb[CDB_BUF];
	size_t len = cdb_send_diag(cdb, 5 << 5, 0);

	(void)state;
	memset(&s, 0, sizeof(s));
	loop_fabric_start(t->lf, 0, cdb, len, NULL, 0, &s);
	spin(t);
	assert_false(s.done);
	r = tctx_run(t, cdb_tur(t->cdb));
	assert_sense(r, SENSE_NOT_READY, 0x04, 0x09);
	r = tctx_run(t, cdb_rw(t->cdb, SBC_READ_10, 0, 1, 0));
	assert_sense(r, SENSE_NOT_READY, 0x04, 0x09);
	assert_good(tctx_run(t, cdb_inquiry(t->cdb, false, 0, 96)));
	assert_good(tctx_run(t, cdb_report_luns(t->cdb, 0, 256)));
	/* half-way through segment 1's two blocks and 16 samples: 1 of 2050 blocks */
	fake_backend_complete_pending(t->fb);
	spin(t);
	r = tctx_run(t, cdb_request_sense(t->cdb, false, 18));
	assert_int_equal(r->data[13], 0x09);
	assert_int_equal(get_be16(&r->data[16]), 65535u / (2 + 16 * SAMPLE_BLOCKS));
	for (int i = 0; i < 17; i++) {
		fake_backend_complete_pending(t->fb);
		spin(t);
	}
	loop_fabric_wait(t->lf, &s);
	assert_good(&s);
	lf_result_clear(&s);
	assert_good(tctx_run(t, cdb_tur(t->cdb)));
	assert_entry(t, 1, 5, 0x0, 0, UINT64_MAX, 0, 0);

	/* a foreground extended test whose first read fails: HARDWARE ERROR, LOGICAL UNIT
	 * FAILED SELF-TEST, and the log says segment 1 at block 0 */
	memset(&s, 0, sizeof(s));
	len = cdb_send_diag(cdb, 6 << 5, 0);
	loop_fabric_start(t->lf, 0, cdb, len, NULL, 0, &s);
	spin(t);
	t->fb->npending = 0;
	scsitgt_io_complete(t->fb->pending[0], -EIO);
	spin(t);
	loop_fabric_wait(t->lf, &s);
	assert_sense(&s, SENSE_HARDWARE_ERROR, 0x3e, 0x03);
	lf_result_clear(&s);
	assert_entry(t, 1, 6, 0x5, 1, 0, SENSE_MEDIUM_ERROR, 0x11);
	assert_entry(t, 2, 5, 0x0, 0, UINT64_MAX, 0, 0);
	tctx_destroy(t);
}

/* Aborting the foreground SEND DIAGNOSTIC command (ABORT TASK) aborts its test. */
static void test_foreground_abort_task(void **state)
{
	struct tctx *t = ctx(FAKE_MANUAL, BLOCKS);
	struct lf_result s;
	uint8_t cdb[CDB_BUF], lun[8];
	size_t len = cdb_send_diag(cdb, 6 << 5, 0);
	int resp = -1;

	(void)state;
	memset(&s, 0, sizeof(s));
	loop_fabric_start(t->lf, 0, cdb, len, NULL, 0, &s);
	spin(t);
	scsitgt__lun_encode(0, lun);
	scsitgt__tmf_execute(t->lf->sess, SCSITGT__TMF_ABORT_TASK, lun, s.cmd->tag, tmf_done,
			     &resp);
	fake_backend_complete_pending(t->fb);
	spin(t);
	assert_int_equal(resp, SCSITGT__TMF_COMPLETE);
	assert_true(s.aborted);
	assert_int_equal(t->fb->npending, 0);
	assert_entry(t, 1, 6, 0x2, 0, UINT64_MAX, 0, 0);
	assert_good(tctx_run(t, cdb_tur(t->cdb)));
	lf_result_clear(&s);
	tctx_destroy(t);
}

/* Background: another test is refused while one runs; 100b aborts it; resets and START
 * STOP UNIT abort it too. */
static void test_background_aborts(void **state)
{
	struct tctx *t = ctx(FAKE_MANUAL, BLOCKS);
	struct lf_result *r;
	uint8_t lun[8];
	int resp = -1;

	(void)state;
	/* 100b with nothing running: INVALID FIELD IN CDB */
	assert_bad_cdb(tctx_run(t, cdb_send_diag(t->cdb, 4 << 5, 0)), 1, 7);

	assert_good(tctx_run(t, cdb_send_diag(t->cdb, 2 << 5, 0)));
	spin(t);
	r = tctx_run(t, cdb_send_diag(t->cdb, 1 << 5, 0));
	assert_sense(r, SENSE_NOT_READY, 0x04, 0x09);
	r = tctx_run(t, cdb_send_diag(t->cdb, 0x04, 0));
	assert_sense(r, SENSE_NOT_READY, 0x04, 0x09);
	/* SELFTEST 0, code 000b is no test: it goes through */
	assert_good(tctx_run(t, cdb_send_diag(t->cdb, 0, 0)));
	/* abort: the log says so at once, and keeps saying so when the piece returns */
	assert_good(tctx_run(t, cdb_send_diag(t->cdb, 4 << 5, 0)));
	assert_entry(t, 1, 2, 0x1, 0, UINT64_MAX, 0, 0);
	fake_backend_complete_pending(t->fb);
	spin(t);
	assert_int_equal(t->fb->npending, 0);
	assert_entry(t, 1, 2, 0x1, 0, UINT64_MAX, 0, 0);

	/* a LUN RESET aborts the next one: result 2h */
	assert_good(tctx_run(t, cdb_send_diag(t->cdb, 1 << 5, 0)));
	spin(t);
	scsitgt__lun_encode(0, lun);
	scsitgt__tmf_execute(t->lf->sess, SCSITGT__TMF_LUN_RESET, lun, 0, tmf_done, &resp);
	spin(t);
	assert_int_equal(resp, SCSITGT__TMF_COMPLETE);
	fake_backend_complete_pending(t->fb);
	spin(t);
	r = tctx_run(t, cdb_tur(t->cdb));
	assert_sense(r, SENSE_UNIT_ATTENTION, 0x29, 0x03);
	assert_entry(t, 1, 1, 0x2, 0, UINT64_MAX, 0, 0);
	assert_entry(t, 2, 2, 0x1, 0, UINT64_MAX, 0, 0);

	/* START STOP UNIT ends a background test and runs */
	assert_good(tctx_run(t, cdb_send_diag(t->cdb, 2 << 5, 0)));
	spin(t);
	assert_good(tctx_run(t, cdb_start_stop(t->cdb, 0, false, true)));
	assert_entry(t, 1, 2, 0x2, 0, UINT64_MAX, 0, 0);
	fake_backend_complete_pending(t->fb);
	spin(t);
	assert_int_equal(t->fb->npending, 0);
	tctx_destroy(t);
}

/* Twenty entries, newest first; the oldest falls off. */
static void test_history(void **state)
{
	struct tctx *t = ctx(FAKE_SYNC, 64);

	(void)state;
	for (unsigned int i = 0; i < 23; i++) {
		/* codes alternate 1, 2, 1, 2...: the last (i = 22) is a 1 */
		assert_good(tctx_run(t, cdb_send_diag(t->cdb, (uint8_t)((1 + i % 2) << 5), 0)));
		spin(t);
	}
	for (unsigned int n = 1; n <= 20; n++)
		assert_entry(t, n, (n % 2) ? 1 : 2, 0x0, 0, UINT64_MAX, 0, 0);
	/* LOG SELECT PCR does not reset the self-test log */
	memset(t->cdb, 0, CDB_BUF);
	t->cdb[0] = SPC_LOG_SELECT;
	t->cdb[1] = 0x02;
	t->cdb[2] = 1 << 6;
	assert_good(tctx_run(t, 10));
	assert_entry(t, 1, 1, 0x0, 0, UINT64_MAX, 0, 0);
	tctx_destroy(t);
}

/* The advisory EXTENDED SELF-TEST COMPLETION TIME: control mode page and VPD 86h. */
static void test_completion_time(void **state)
{
	struct fake_backend_opts o;
	struct lf_result *r;
	struct tctx *t;

	(void)state;
	fake_backend_opts_init(&o);
	o.num_blocks = 8ull << 21; /* 8 GiB of 512-byte blocks */
	o.mode = FAKE_SYNC;
	/* keep no data: with meson's MALLOC_PERTURB_ glibc's calloc fills every byte (8 GiB) */
	o.store = false;
	t = tctx_create(0, &o);
	/* 8 GiB at the assumed 512 MiB/s: 17 seconds, 1 minute */
	r = tctx_run(t, cdb_mode_sense6(t->cdb, true, 0, 0x0a, 0, 255));
	assert_good(r);
	assert_int_equal(r->data[4], 0x0a);
	assert_int_equal(get_be16(&r->data[4 + 10]), 17);
	r = tctx_run(t, cdb_inquiry(t->cdb, true, 0x86, 64));
	assert_good(r);
	assert_int_equal(get_be16(&r->data[10]), 1);
	/* changeable: not */
	r = tctx_run(t, cdb_mode_sense6(t->cdb, true, 1, 0x0a, 0, 255));
	assert_int_equal(get_be16(&r->data[4 + 10]), 0);
	tctx_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_background_short),
		cmocka_unit_test(test_background_extended_failure),
		cmocka_unit_test(test_foreground),
		cmocka_unit_test(test_foreground_abort_task),
		cmocka_unit_test(test_background_aborts),
		cmocka_unit_test(test_history),
		cmocka_unit_test(test_completion_time),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
