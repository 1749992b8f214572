/* SPDX-License-Identifier: MIT */
/* Task management semantics (SAM-5 §7) across I_T nexuses, and aborts inside backends. */
#include <errno.h>

#include "core/ua.h"
#include "test_pr_common.h"

static void run_until_set(struct prt *t, const int *resp)
{
	while (*resp == -1)
		uv_run(&t->lf->loop, UV_RUN_ONCE);
}

/* TAS 0: the other nexuses' tasks end without a response (TAS 1: test_tas_task_aborted). */
static void test_lun_reset_all_nexuses(void **state)
{
	struct prt *t = prt_create(FAKE_MANUAL);
	struct lf_result ra, rb;
	uint8_t cdb[CDB_BUF], lun[8];
	int resp = -1;

	(void)state;
	t->lun->mode.tas = false;
	scsitgt_engine_set_tmf_timeout(t->lf->engine, 1);
	loop_fabric_start_on(t->lf, t->a, 0, cdb, cdb_rw(cdb, SBC_READ_10, 0, 1, 0), NULL, 0, &ra);
	loop_fabric_start_on(t->lf, t->b, 0, cdb, cdb_rw(cdb, SBC_READ_10, 1, 1, 0), NULL, 0, &rb);
	scsitgt__lun_encode(0, lun);
	scsitgt__tmf_execute(t->a, SCSITGT__TMF_LUN_RESET, lun, 0, tmf_resp, &resp);
	/* Both READs sit in the backend: the reset waits for them. */
	assert_int_equal(resp, -1);
	fake_backend_complete_pending(t->fb);
	run_until_set(t, &resp);
	assert_int_equal(resp, SCSITGT__TMF_COMPLETE);
	assert_true(ra.aborted);
	assert_true(rb.aborted);
	/* Every nexus, the resetting one too, finds BUS DEVICE RESET FUNCTION OCCURRED. */
	t->lf->sess = NULL;
	ua(prt_run(t, t->a, cdb, cdb_tur(cdb), NULL, 0), 0x29, 0x03);
	ua(prt_run(t, t->b, cdb, cdb_tur(cdb), NULL, 0), 0x29, 0x03);
	ua(prt_run(t, t->a2, cdb, cdb_tur(cdb), NULL, 0), 0x29, 0x03);
	t->lf->sess = t->a;
	/* A LUN that does not exist. */
	resp = -1;
	scsitgt__lun_encode(7, lun);
	scsitgt__tmf_execute(t->a, SCSITGT__TMF_LUN_RESET, lun, 0, tmf_resp, &resp);
	assert_int_equal(resp, SCSITGT__TMF_LUN_NOT_FOUND);
	prt_destroy(t);
}

/* The backend returns the command right after the abort: the TMF answers then, once. */
static void test_abort_races_completion(void **state)
{
	struct prt *t = prt_create(FAKE_MANUAL);
	struct lf_result r;
	uint8_t cdb[CDB_BUF], lun[8];
	int resp = -1;

	(void)state;
	loop_fabric_start_on(t->lf, t->b, 0, cdb, cdb_rw(cdb, SBC_READ_10, 0, 1, 0), NULL, 0, &r);
	scsitgt__lun_encode(0, lun);
	scsitgt__tmf_execute(t->b, SCSITGT__TMF_ABORT_TASK, lun, r.cmd->tag, tmf_resp, &resp);
	assert_int_equal(resp, -1);
	assert_false(r.done);
	/* Other nexuses and commands go on meanwhile. */
	ok(prt_run(t, t->a2, cdb, cdb_tur(cdb), NULL, 0));
	fake_backend_complete_pending(t->fb);
	assert_true(r.aborted);
	/* Answered as the backend returned the command, not by a timer. */
	assert_int_equal(resp, SCSITGT__TMF_COMPLETE);
	/* The aborted READ never produced a response. */
	assert_int_equal(t->lf->naborted, 1);
	prt_destroy(t);
}

/* A backend that never returns cannot hold the TMF beyond the engine's timeout. */
static void test_abort_timeout(void **state)
{
	struct prt *t = prt_create(FAKE_MANUAL);
	struct lf_result r;
	uint8_t cdb[CDB_BUF], lun[8];
	int resp = -1;

	(void)state;
	assert_int_equal(scsitgt_engine_set_tmf_timeout(t->lf->engine, 0), -EINVAL);
	assert_int_equal(scsitgt_engine_set_tmf_timeout(t->lf->engine, 1), 0);
	loop_fabric_start_on(t->lf, t->b, 0, cdb, cdb_rw(cdb, SBC_READ_10, 0, 1, 0), NULL, 0, &r);
	scsitgt__lun_encode(0, lun);
	scsitgt__tmf_execute(t->b, SCSITGT__TMF_ABORT_TASK_SET, lun, 0, tmf_resp, &resp);
	run_until_set(t, &resp);
	assert_int_equal(resp, SCSITGT__TMF_COMPLETE);
	assert_false(r.done);
	/* When the backend finally returns it, the command is freed without a response. */
	fake_backend_complete_pending(t->fb);
	assert_true(r.aborted);
	prt_destroy(t);
}

static void test_clear_task_set_and_queries(void **state)
{
	struct prt *t = prt_create(FAKE_MANUAL);
	struct lf_result ra, rb;
	uint8_t cdb[CDB_BUF], lun[8];
	int resp = -1;

	(void)state;
	t->lun->mode.tas = false;
	scsitgt_engine_set_tmf_timeout(t->lf->engine, 1);
	loop_fabric_start_on(t->lf, t->b, 0, cdb, cdb_rw(cdb, SBC_READ_10, 0, 1, 0), NULL, 0, &rb);
	loop_fabric_start_on(t->lf, t->a2, 0, cdb, cdb_rw(cdb, SBC_READ_10, 0, 1, 0), NULL, 0, &ra);
	scsitgt__lun_encode(0, lun);
	/* QUERY TASK / TASK SET see B's READ; QUERY ASYNCHRONOUS EVENT sees no condition. */
	scsitgt__tmf_execute(t->b, SCSITGT__TMF_QUERY_TASK, lun, rb.cmd->tag, tmf_resp, &resp);
	assert_int_equal(resp, SCSITGT__TMF_SUCCEEDED);
	scsitgt__tmf_execute(t->b, SCSITGT__TMF_QUERY_TASK, lun, 0x9999, tmf_resp, &resp);
	assert_int_equal(resp, SCSITGT__TMF_COMPLETE);
	scsitgt__tmf_execute(t->b, SCSITGT__TMF_QUERY_TASK_SET, lun, 0, tmf_resp, &resp);
	assert_int_equal(resp, SCSITGT__TMF_SUCCEEDED);
	scsitgt__tmf_execute(t->b, SCSITGT__TMF_QUERY_ASYNC_EVENT, lun, 0, tmf_resp, &resp);
	assert_int_equal(resp, SCSITGT__TMF_COMPLETE);
	/* CLEAR TASK SET from B clears A2's READ too (one task set); A2 is told. */
	resp = -1;
	scsitgt__tmf_execute(t->b, SCSITGT__TMF_CLEAR_TASK_SET, lun, 0, tmf_resp, &resp);
	fake_backend_complete_pending(t->fb);
	run_until_set(t, &resp);
	assert_int_equal(resp, SCSITGT__TMF_COMPLETE);
	assert_true(ra.aborted);
	assert_true(rb.aborted);
	scsitgt__tmf_execute(t->a2, SCSITGT__TMF_QUERY_ASYNC_EVENT, lun, 0, tmf_resp, &resp);
	assert_int_equal(resp, SCSITGT__TMF_SUCCEEDED);
	ua(prt_run(t, t->a2, cdb, cdb_tur(cdb), NULL, 0), 0x2f, 0x00);
	ok(prt_run(t, t->b, cdb, cdb_tur(cdb), NULL, 0));
	prt_destroy(t);
}

/*
 * TAS 1, the default (SPC-5 §7.5.10, reviewj J1): a LUN RESET from A answers the READ of
 * another nexus (B) TASK ABORTED once the backend has given it back, instead of leaving B to
 * its timeout; A's own READ still gets no response (SAM-5 §7.1), and every nexus still finds
 * the reset's unit attention. A CLEAR TASK SET from B does the same to A2's READ.
 */
static void test_tas_task_aborted(void **state)
{
	struct prt *t = prt_create(FAKE_MANUAL);
	struct lf_result ra = { 0 }, rb = { 0 };
	uint8_t cdb[CDB_BUF], lun[8];
	int resp = -1;

	(void)state;
	assert_true(t->lun->mode.tas);
	loop_fabric_start_on(t->lf, t->a, 0, cdb, cdb_rw(cdb, SBC_READ_10, 0, 1, 0), NULL, 0, &ra);
	loop_fabric_start_on(t->lf, t->b, 0, cdb, cdb_rw(cdb, SBC_READ_10, 1, 1, 0), NULL, 0, &rb);
	scsitgt__lun_encode(0, lun);
	scsitgt__tmf_execute(t->a, SCSITGT__TMF_LUN_RESET, lun, 0, tmf_resp, &resp);
	/* B's READ sits in the backend: no answer before it is back (SAM-5 §5.6). */
	assert_false(rb.done);
	assert_int_equal(resp, -1);
	fake_backend_complete_pending(t->fb);
	run_until_set(t, &resp);
	assert_int_equal(resp, SCSITGT__TMF_COMPLETE);
	assert_true(ra.aborted);
	assert_task_aborted(&rb);
	t->lf->sess = NULL;
	ua(prt_run(t, t->a, cdb, cdb_tur(cdb), NULL, 0), 0x29, 0x03);
	ua(prt_run(t, t->b, cdb, cdb_tur(cdb), NULL, 0), 0x29, 0x03);
	ua(prt_run(t, t->a2, cdb, cdb_tur(cdb), NULL, 0), 0x29, 0x03);
	t->lf->sess = t->a;
	lf_result_clear(&ra);
	lf_result_clear(&rb);
	/* CLEAR TASK SET from B: A2's READ is answered TASK ABORTED, B's own is not. */
	loop_fabric_start_on(t->lf, t->a2, 0, cdb, cdb_rw(cdb, SBC_READ_10, 2, 1, 0), NULL, 0, &ra);
	loop_fabric_start_on(t->lf, t->b, 0, cdb, cdb_rw(cdb, SBC_READ_10, 3, 1, 0), NULL, 0, &rb);
	resp = -1;
	scsitgt__tmf_execute(t->b, SCSITGT__TMF_CLEAR_TASK_SET, lun, 0, tmf_resp, &resp);
	fake_backend_complete_pending(t->fb);
	run_until_set(t, &resp);
	assert_int_equal(resp, SCSITGT__TMF_COMPLETE);
	assert_task_aborted(&ra);
	assert_true(rb.aborted);
	lf_result_clear(&ra);
	lf_result_clear(&rb);
	prt_destroy(t);
}

/* B aborts its own command after A's LUN RESET aborted it under TAS 1 (reviewk K1): B's
 * ABORT TASK takes the TAS answer back, so no TASK ABORTED follows the TMF's answer. */
struct own_abort {
	int resp;
};

static void own_abort_resp(void *arg, enum scsitgt__tmf_response response)
{
	struct own_abort *k = arg;

	k->resp = (int)response;
}

static void test_tas_not_after_own_abort(void **state)
{
	struct prt *t = prt_create(FAKE_MANUAL);
	struct lf_result rb = { 0 };
	uint8_t cdb[CDB_BUF], lun[8];
	int resp = -1;
	struct own_abort k = { .resp = -1 };
	uint64_t tag;

	(void)state;
	loop_fabric_start_on(t->lf, t->b, 0, cdb, cdb_rw(cdb, SBC_READ_10, 1, 1, 0), NULL, 0, &rb);
	tag = rb.cmd->tag;
	scsitgt__lun_encode(0, lun);
	scsitgt__tmf_execute(t->a, SCSITGT__TMF_LUN_RESET, lun, 0, tmf_resp, &resp);
	assert_false(rb.done);
	/* B times out and aborts its own command. */
	scsitgt__tmf_execute(t->b, SCSITGT__TMF_ABORT_TASK, lun, tag, own_abort_resp, &k);
	fake_backend_complete_pending(t->fb);
	run_until_set(t, &resp);
	while (k.resp == -1)
		uv_run(&t->lf->loop, UV_RUN_ONCE);
	/* SAM-5 §7.2: B's own ABORT TASK: no response for the task. */
	assert_true(rb.aborted);
	assert_int_not_equal(rb.status, 0x40);
	assert_int_equal(k.resp, SCSITGT__TMF_COMPLETE);
	lf_result_clear(&rb);
	prt_destroy(t);
}

static void test_target_reset(void **state)
{
	struct prt *t = prt_create(FAKE_SYNC);
	struct fake_backend_opts fbo;
	struct fake_backend *fb1;
	uint8_t cdb[CDB_BUF], lun[8] = { 0 };
	int resp = -1;

	(void)state;
	fake_backend_opts_init(&fbo);
	assert_int_equal(fake_backend_lun_create(NULL, &fb1, t->lf->tgt, 1, 0, &fbo), 0);
	lf_result_clear(&t->r);
	loop_fabric_run_on(t->lf, t->b, 1, cdb, cdb_tur(cdb), NULL, 0, &t->r);
	ua(&t->r, 0x29, 0x00);
	scsitgt__tmf_execute(t->a, SCSITGT__TMF_TARGET_WARM_RESET, lun, 0, tmf_resp, &resp);
	assert_int_equal(resp, SCSITGT__TMF_COMPLETE);
	ua(prt_run(t, t->b, cdb, cdb_tur(cdb), NULL, 0), 0x29, 0x03);
	lf_result_clear(&t->r);
	loop_fabric_run_on(t->lf, t->b, 1, cdb, cdb_tur(cdb), NULL, 0, &t->r);
	ua(&t->r, 0x29, 0x03);
	resp = -1;
	scsitgt__tmf_execute(t->a, SCSITGT__TMF_TARGET_COLD_RESET, lun, 0, tmf_resp, &resp);
	assert_int_equal(resp, SCSITGT__TMF_COMPLETE);
	ua(prt_run(t, t->b, cdb, cdb_tur(cdb), NULL, 0), 0x29, 0x00);
	prt_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lun_reset_all_nexuses),
		cmocka_unit_test(test_abort_races_completion),
		cmocka_unit_test(test_abort_timeout),
		cmocka_unit_test(test_clear_task_set_and_queries),
		cmocka_unit_test(test_tas_task_aborted),
		cmocka_unit_test(test_tas_not_after_own_abort),
		cmocka_unit_test(test_target_reset),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
