/* SPDX-License-Identifier: MIT */
/*
 * The backend's abort() and reset() hooks (backend.h): an ABORT TASK reaches the backend for
 * each io of the aborted command, a backend that cancels lets the TMF answer without waiting,
 * one that does not is waited for as before, and a LOGICAL UNIT RESET calls reset() once. The
 * fault backend (abortable and plain hang rules) around a RAM backend is the backend.
 */
#include <errno.h>

#include "libscsitgt/backend_fault.h"
#include "test_pr_common.h"

struct tb {
	struct loop_fabric *lf;
	struct scsitgt_lun *lun;
	void *fault;
};

static void tb_create(struct tb *t, const char *spec)
{
	struct scsitgt_lun_opts lo;
	void *ram;

	assert_int_equal(loop_fabric_create(&t->lf, NULL), 0);
	assert_int_equal(scsitgt_backend_ram_create(&ram), 0);
	assert_int_equal(scsitgt_backend_fault_create(&t->fault, &t->lf->loop,
						      scsitgt_backend_ram_ops(), ram),
			 0);
	assert_int_equal(scsitgt_backend_fault_add_spec(t->fault, spec), 1);
	scsitgt_lun_opts_init(&lo, sizeof(lo));
	lo.block_size = 512;
	lo.num_blocks = 2048;
	lo.backend = scsitgt_backend_fault_ops(t->fault);
	lo.backend_ctx = t->fault;
	assert_int_equal(scsitgt_lun_create(&t->lun, t->lf->tgt, &lo), 0);
}

static struct scsitgt_fault_stats tb_stats(struct tb *t)
{
	struct scsitgt_fault_stats st = { .size = sizeof(st) };

	assert_int_equal(scsitgt_backend_fault_get_stats(t->fault, &st), 0);
	return st;
}

static void run_until_set(struct tb *t, const int *resp)
{
	while (*resp == -1)
		assert_int_not_equal(uv_run(&t->lf->loop, UV_RUN_ONCE), 0);
}

/* A backend that cancels: the TMF answers once the cancelled io is back, well before the
 * TMF timeout (30 s by default: the test would hang, not pass, if it were waited for). */
static void test_abort_cancels(void **state)
{
	struct tb t;
	struct lf_result r = { 0 };
	uint8_t cdb[CDB_BUF], lun[8];
	int resp = -1;

	(void)state;
	tb_create(&t, "hang@read:abortable=1");
	loop_fabric_start(t.lf, 0, cdb, cdb_rw(cdb, SBC_READ_10, 0, 8, 0), NULL, 0, &r);
	assert_int_equal(tb_stats(&t).held, 1);
	scsitgt__lun_encode(0, lun);
	scsitgt__tmf_execute(t.lf->sess, SCSITGT__TMF_ABORT_TASK, lun, r.cmd->tag, tmf_resp, &resp);
	/* Never completed from inside abort(). */
	assert_int_equal(resp, -1);
	assert_false(r.aborted);
	run_until_set(&t, &resp);
	assert_int_equal(resp, SCSITGT__TMF_COMPLETE);
	/* Freed without a response (the loop fabric marks it done and aborted). */
	assert_true(r.aborted);
	assert_int_equal(t.lf->naborted, 1);
	assert_int_equal(tb_stats(&t).cancelled, 1);
	assert_int_equal(tb_stats(&t).held, 0);
	assert_int_equal(tb_stats(&t).resets, 0);
	lf_result_clear(&r);
	loop_fabric_destroy(t.lf);
}

/* A backend that cannot cancel (a hung device): the TMF still waits for the io, which the
 * host releases here; nothing was cancelled. */
static void test_abort_ignored(void **state)
{
	struct tb t;
	struct lf_result r = { 0 };
	uint8_t cdb[CDB_BUF], lun[8];
	int resp = -1;

	(void)state;
	tb_create(&t, "hang@read");
	loop_fabric_start(t.lf, 0, cdb, cdb_rw(cdb, SBC_READ_10, 0, 8, 0), NULL, 0, &r);
	scsitgt__lun_encode(0, lun);
	scsitgt__tmf_execute(t.lf->sess, SCSITGT__TMF_ABORT_TASK, lun, r.cmd->tag, tmf_resp, &resp);
	for (int i = 0; i < 10; i++)
		uv_run(&t.lf->loop, UV_RUN_NOWAIT);
	assert_int_equal(resp, -1);
	assert_int_equal(tb_stats(&t).held, 1);
	assert_int_equal(scsitgt_backend_fault_release(t.fault, 0, 0), 1);
	run_until_set(&t, &resp);
	assert_int_equal(resp, SCSITGT__TMF_COMPLETE);
	assert_true(r.aborted);
	assert_int_equal(tb_stats(&t).cancelled, 0);
	lf_result_clear(&r);
	loop_fabric_destroy(t.lf);
}

/* LOGICAL UNIT RESET: the delayed (abortable) write is cancelled, reset() runs once. */
static void test_lun_reset_calls_reset(void **state)
{
	struct tb t;
	struct lf_result r = { 0 };
	uint8_t cdb[CDB_BUF], lun[8], data[4096];
	int resp = -1;

	(void)state;
	memset(data, 0x5a, sizeof(data));
	tb_create(&t, "delay=600000@write:abortable=1");
	loop_fabric_start(t.lf, 0, cdb, cdb_rw(cdb, SBC_WRITE_10, 0, 8, 0), data, sizeof(data), &r);
	assert_int_equal(tb_stats(&t).delaying, 1);
	scsitgt__lun_encode(0, lun);
	scsitgt__tmf_execute(t.lf->sess, SCSITGT__TMF_LUN_RESET, lun, 0, tmf_resp, &resp);
	assert_int_equal(tb_stats(&t).resets, 1);
	run_until_set(&t, &resp);
	assert_int_equal(resp, SCSITGT__TMF_COMPLETE);
	assert_true(r.aborted);
	assert_int_equal(tb_stats(&t).cancelled, 1);
	assert_int_equal(tb_stats(&t).delaying, 0);
	lf_result_clear(&r);
	loop_fabric_destroy(t.lf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_abort_cancels),
		cmocka_unit_test(test_abort_ignored),
		cmocka_unit_test(test_lun_reset_calls_reset),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
