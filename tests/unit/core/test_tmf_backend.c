/* SPDX-License-Identifier: MIT */
/*
 * The backend's abort() and reset() hooks (backend.h): an ABORT TASK reaches the backend for
 * each io of the aborted command, a backend that cancels lets the TMF answer without waiting,
 * one that does not is waited for as before, and a LOGICAL UNIT RESET calls reset() once. The
 * fault backend (abortable and plain hang rules) around a RAM backend is the backend.
 */
#include <errno.h>

#include "core/core.h"
#include "core/tmf.h"
#include "libscsitgt/backend_fault.h"
#include "test_pr_common.h"

/*
 * Allocation failure on demand: this test links with -Wl,--wrap=calloc (meson.build), so the
 * library's calloc() calls come here; the next @calloc_fails of them fail.
 *
 * Address reuse on demand (with -Wl,--wrap=free): free() of @keep_tgt, a target, keeps its
 * memory, and once @reuse_tgt is set the next calloc() of a target's size returns it, zeroed,
 * as an allocator that hands the freed block back would.
 */
static int calloc_fails;
static void *keep_tgt;
static bool tgt_kept, reuse_tgt;

void *__real_calloc(size_t nmemb, size_t size);
void *__wrap_calloc(size_t nmemb, size_t size);
void __real_free(void *p);
void __wrap_free(void *p);

void *__wrap_calloc(size_t nmemb, size_t size)
{
	if (calloc_fails > 0) {
		calloc_fails--;
		return NULL;
	}
	if (reuse_tgt && tgt_kept && nmemb == 1 && size == sizeof(struct scsitgt_target)) {
		reuse_tgt = tgt_kept = false;
		memset(keep_tgt, 0, size);
		return keep_tgt;
	}
	return __real_calloc(nmemb, size);
}

void __wrap_free(void *p)
{
	if (p != NULL && p == keep_tgt && !tgt_kept) {
		tgt_kept = true;
		return;
	}
	__real_free(p);
}

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

/* A 4 KiB WRITE at LBA 0 that the backend holds ("hang@write"), and the LUN's address. */
static void tb_held_write(struct tb *t, struct lf_result *r, uint8_t lun[8])
{
	static uint8_t data[4096];
	uint8_t cdb[CDB_BUF];

	memset(data, 0x4f, sizeof(data));
	tb_create(t, "hang@write");
	loop_fabric_start(t->lf, 0, cdb, cdb_rw(cdb, SBC_WRITE_10, 0, 8, 0), data, sizeof(data), r);
	assert_int_equal(tb_stats(t).held, 1);
	scsitgt__lun_encode(0, lun);
}

/* Until the backend's reset counter shows the LUN RESET made its aborts on every shard and
 * ran its rest (core/tmf_xshard.c): the point where, without anything left to wait for, the
 * reset would answer. */
static void run_until_reset(struct tb *t)
{
	while (tb_stats(t).resets == 0)
		assert_int_not_equal(uv_run(&t->lf->loop, UV_RUN_ONCE), 0);
}

/* The TMF answering into @resp waits for the held WRITE @r however long the loop runs, and
 * answers FUNCTION COMPLETE once the backend lets it go; the WRITE ends aborted. Then the
 * world goes. */
static void tb_answers_at_release(struct tb *t, struct lf_result *r, const int *resp)
{
	for (int i = 0; i < 10; i++)
		uv_run(&t->lf->loop, UV_RUN_NOWAIT);
	assert_int_equal(*resp, -1);
	assert_int_equal(scsitgt_backend_fault_release(t->fault, 0, 0), 1);
	run_until_set(t, resp);
	assert_int_equal(*resp, SCSITGT__TMF_COMPLETE);
	assert_true(r->aborted);
	lf_result_clear(r);
	loop_fabric_destroy(t->lf);
}

/*
 * reviewc F1, the Linux escalation: ABORT TASK of a WRITE its backend holds (still waiting),
 * then LOGICAL UNIT RESET. The WRITE is already ABORTED; the reset must still answer only once
 * it has left the backend (SAM-5 §7.7), or the initiator writes anew and the old WRITE lands
 * on top. Then a second reset, and an ABORT TASK SET, after an ABORT TASK that timed out.
 */
static void test_abort_then_lun_reset_waits(void **state)
{
	struct tb t;
	struct lf_result r = { 0 };
	uint8_t lun[8];
	int abort_resp = -1, reset_resp = -1;

	(void)state;
	tb_held_write(&t, &r, lun);
	scsitgt__tmf_execute(t.lf->sess, SCSITGT__TMF_ABORT_TASK, lun, r.cmd->tag, tmf_resp,
			     &abort_resp);
	scsitgt__tmf_execute(t.lf->sess, SCSITGT__TMF_LUN_RESET, lun, 0, tmf_resp, &reset_resp);
	run_until_reset(&t);
	/* the reset is done but for the aborted WRITE: no answer yet */
	assert_int_equal(reset_resp, -1);
	assert_int_equal(abort_resp, -1);
	assert_int_equal(tb_stats(&t).held, 1);
	assert_int_equal(scsitgt_backend_fault_release(t.fault, 0, 0), 1);
	run_until_set(&t, &reset_resp);
	run_until_set(&t, &abort_resp);
	assert_int_equal(reset_resp, SCSITGT__TMF_COMPLETE);
	assert_int_equal(abort_resp, SCSITGT__TMF_COMPLETE);
	assert_true(r.aborted);
	assert_int_equal(t.lf->naborted, 1);
	lf_result_clear(&r);
	loop_fabric_destroy(t.lf);
}

/* SAM-5 §7.9 QUERY TASK after an ABORT TASK answered at its timeout, the WRITE still held: the
 * task is still there (a LUN RESET waits for it), so FUNCTION SUCCEEDED until it leaves; then
 * FUNCTION COMPLETE (reviewd N2: it said COMPLETE at once, an initiator polling QUERY TASK to
 * learn that the WRITE is gone was told so too early). */
static void test_query_task_sees_aborted_held(void **state)
{
	struct tb t;
	struct lf_result r = { 0 };
	uint8_t lun[8];
	int resp = -1, q = -1, q_after = -1, reset = -1;
	uint64_t tag;

	(void)state;
	tb_held_write(&t, &r, lun);
	tag = r.cmd->tag; /* the command is freed once it has left */
	assert_int_equal(scsitgt_engine_set_tmf_timeout(t.lf->engine, 20), 0);
	scsitgt__tmf_execute(t.lf->sess, SCSITGT__TMF_ABORT_TASK, lun, tag, tmf_resp, &resp);
	run_until_set(&t, &resp);
	assert_int_equal(tb_stats(&t).held, 1);
	scsitgt__tmf_execute(t.lf->sess, SCSITGT__TMF_QUERY_TASK, lun, tag, tmf_resp, &q);
	assert_int_equal(q, SCSITGT__TMF_SUCCEEDED);
	/* A LUN RESET answers once the WRITE has left (test_abort_then_lun_reset_waits). */
	scsitgt__tmf_execute(t.lf->sess, SCSITGT__TMF_LUN_RESET, lun, 0, tmf_resp, &reset);
	assert_int_equal(scsitgt_backend_fault_release(t.fault, 0, 0), 1);
	run_until_set(&t, &reset);
	scsitgt__tmf_execute(t.lf->sess, SCSITGT__TMF_QUERY_TASK, lun, tag, tmf_resp, &q_after);
	assert_int_equal(q_after, SCSITGT__TMF_COMPLETE);
	lf_result_clear(&r);
	loop_fabric_destroy(t.lf);
}

/* ABORT TASK answered at its timeout with the WRITE still held; then ABORT TASK SET waits for
 * it as well, bounded by the TMF timeout again; then a nexus quiescence (Logout,
 * reinstatement: scsitgt__tmf_quiesce()) says its cleanup failed at its bound, not at once. */
static void test_abort_timed_out_then_task_set_and_quiesce(void **state)
{
	struct tb t;
	struct lf_result r = { 0 };
	uint8_t lun[8];
	int resp = -1, set_resp = -1, q_resp = -1;

	(void)state;
	tb_held_write(&t, &r, lun);
	assert_int_equal(scsitgt_engine_set_tmf_timeout(t.lf->engine, 20), 0);
	scsitgt__tmf_execute(t.lf->sess, SCSITGT__TMF_ABORT_TASK, lun, r.cmd->tag, tmf_resp, &resp);
	run_until_set(&t, &resp);
	assert_int_equal(resp, SCSITGT__TMF_COMPLETE);
	assert_int_equal(tb_stats(&t).held, 1);
	scsitgt__tmf_execute(t.lf->sess, SCSITGT__TMF_ABORT_TASK_SET, lun, 0, tmf_resp, &set_resp);
	/* not from inside the call: it has something to wait for */
	assert_int_equal(set_resp, -1);
	run_until_set(&t, &set_resp);
	assert_int_equal(tb_stats(&t).held, 1);
	/* the quiescence's bound passes with the WRITE held: cleanup failed */
	scsitgt__tmf_quiesce(t.lf->sess, 20, tmf_resp, &q_resp);
	assert_int_equal(q_resp, -1);
	run_until_set(&t, &q_resp);
	assert_int_equal(q_resp, SCSITGT__TMF_REJECTED);
	assert_int_equal(tb_stats(&t).held, 1);
	/* a second one with room: it answers when the WRITE leaves, drained */
	q_resp = -1;
	scsitgt__tmf_quiesce(t.lf->sess, 600000, tmf_resp, &q_resp);
	tb_answers_at_release(&t, &r, &q_resp);
}

/*
 * reviewd F1: TMFs answered at their timeout while the backend keeps the command they waited
 * for leave nothing on it. Each TMF's record on the held WRITE goes with its answer, not when
 * the backend returns the WRITE (before: 2000 records, each keeping its op, and every new TMF
 * walked them all). ABORT TASK, ABORT TASK SET, LUN RESET and a quiescence alike; then a TMF
 * with time to wait still answers only once the WRITE has left.
 */
static void test_timed_out_waiters_go(void **state)
{
	struct tb t;
	struct lf_result r = { 0 };
	uint8_t lun[8];
	int resp;

	(void)state;
	tb_held_write(&t, &r, lun);
	assert_int_equal(scsitgt_engine_set_tmf_timeout(t.lf->engine, 1), 0);
	for (int i = 0; i < 2000; i++) {
		resp = -1;
		scsitgt__tmf_execute(t.lf->sess,
				     i % 2 ? SCSITGT__TMF_ABORT_TASK_SET : SCSITGT__TMF_ABORT_TASK,
				     lun, r.cmd->tag, tmf_resp, &resp);
		/* it waits for the WRITE, which the backend keeps */
		assert_int_equal(resp, -1);
		assert_int_equal(scsitgt__tmf_session_waiters(t.lf->sess), 1);
		run_until_set(&t, &resp);
		assert_int_equal(resp, SCSITGT__TMF_COMPLETE);
		assert_int_equal(scsitgt__tmf_session_waiters(t.lf->sess), 0);
	}
	resp = -1;
	scsitgt__tmf_execute(t.lf->sess, SCSITGT__TMF_LUN_RESET, lun, 0, tmf_resp, &resp);
	run_until_set(&t, &resp);
	assert_int_equal(resp, SCSITGT__TMF_COMPLETE);
	assert_int_equal(scsitgt__tmf_session_waiters(t.lf->sess), 0);
	resp = -1;
	scsitgt__tmf_quiesce(t.lf->sess, 1, tmf_resp, &resp);
	run_until_set(&t, &resp);
	assert_int_equal(resp, SCSITGT__TMF_REJECTED);
	assert_int_equal(scsitgt__tmf_session_waiters(t.lf->sess), 0);
	assert_int_equal(tb_stats(&t).held, 1);
	/* with time to wait: answered once the WRITE leaves, and only then */
	assert_int_equal(scsitgt_engine_set_tmf_timeout(t.lf->engine, 600000), 0);
	resp = -1;
	scsitgt__tmf_execute(t.lf->sess, SCSITGT__TMF_ABORT_TASK_SET, lun, 0, tmf_resp, &resp);
	assert_int_equal(scsitgt__tmf_session_waiters(t.lf->sess), 1);
	tb_answers_at_release(&t, &r, &resp);
}

/* scsitgt__tmf_quiesce_fence()'s gone: counts its calls, after the quiescence's answer. */
struct fence_seen {
	const int *q_resp;
	unsigned int gone;
};

static void fence_gone(void *arg)
{
	struct fence_seen *f = arg;

	assert_int_not_equal(*f->q_resp, -1);
	f->gone++;
}

static void run_nowait(struct tb *t)
{
	for (int i = 0; i < 10; i++)
		uv_run(&t->lf->loop, UV_RUN_NOWAIT);
}

/*
 * reviewd F2: a nexus ends while the backend holds its WRITE (the quiescence's bound passed:
 * "left to them", the WRITE is ORPHANED, on no nexus's list). A LOGICAL UNIT RESET from
 * another nexus must still wait for it (SAM-5 §7.7), bounded by the TMF timeout: before, it
 * answered at once and the WRITE landed after it. A target reset waits the same, until the
 * backend gives the WRITE back.
 */
static void test_lun_reset_waits_for_orphan(void **state)
{
	struct tb t;
	struct lf_result r = { 0 };
	struct scsitgt__session *b;
	uint8_t lun[8];
	int resp = -1;

	(void)state;
	tb_held_write(&t, &r, lun);
	assert_int_equal(loop_fabric_add_session(t.lf, PORT_B, 1, &b), 0);
	scsitgt__session_destroy(t.lf->sess);
	t.lf->sess = NULL;
	run_nowait(&t);
	assert_int_equal(tb_stats(&t).held, 1);
	/* bounded: answered at the TMF timeout, the WRITE still held */
	assert_int_equal(scsitgt_engine_set_tmf_timeout(t.lf->engine, 20), 0);
	scsitgt__tmf_execute(b, SCSITGT__TMF_LUN_RESET, lun, 0, tmf_resp, &resp);
	run_until_reset(&t);
	assert_int_equal(resp, -1);
	run_until_set(&t, &resp);
	assert_int_equal(resp, SCSITGT__TMF_COMPLETE);
	assert_int_equal(tb_stats(&t).held, 1);
	/* with time to wait: only once the backend gives the WRITE back */
	assert_int_equal(scsitgt_engine_set_tmf_timeout(t.lf->engine, 600000), 0);
	resp = -1;
	scsitgt__tmf_execute(b, SCSITGT__TMF_TARGET_WARM_RESET, lun, 0, tmf_resp, &resp);
	run_nowait(&t);
	assert_int_equal(tb_stats(&t).resets, 2);
	assert_int_equal(resp, -1);
	assert_int_equal(scsitgt_backend_fault_release(t.fault, 0, 0), 1);
	run_until_set(&t, &resp);
	assert_int_equal(resp, SCSITGT__TMF_COMPLETE);
	assert_int_equal(tb_stats(&t).held, 0);
	/* nothing left: the next one answers from inside the call */
	resp = -1;
	scsitgt__tmf_execute(b, SCSITGT__TMF_LUN_RESET, lun, 0, tmf_resp, &resp);
	assert_int_equal(resp, SCSITGT__TMF_COMPLETE);
	lf_result_clear(&r);
	loop_fabric_destroy(t.lf);
}

/* The fence of an ended nexus (iSCSI reinstatement, session.c): the quiescence answers at its
 * bound with the WRITE held; gone comes neither then nor when the nexus goes (the WRITE is
 * detached from it), but once the backend gives the WRITE back, once. */
static void test_quiesce_fence_outlives_nexus(void **state)
{
	struct tb t;
	struct lf_result r = { 0 };
	uint8_t lun[8];
	int q_resp = -1;
	struct fence_seen f = { .q_resp = &q_resp };

	(void)state;
	tb_held_write(&t, &r, lun);
	scsitgt__tmf_quiesce_fence(t.lf->sess, 20, tmf_resp, &q_resp, fence_gone, &f);
	assert_int_equal(q_resp, -1);
	run_until_set(&t, &q_resp);
	assert_int_equal(q_resp, SCSITGT__TMF_REJECTED);
	assert_int_equal(f.gone, 0);
	scsitgt__session_destroy(t.lf->sess);
	t.lf->sess = NULL;
	run_nowait(&t);
	assert_int_equal(f.gone, 0);
	assert_int_equal(tb_stats(&t).held, 1);
	/* Released from inside the call on its own loop, the detached WRITE frees there. */
	assert_int_equal(scsitgt_backend_fault_release(t.fault, 0, 0), 1);
	run_nowait(&t);
	assert_int_equal(tb_stats(&t).held, 0);
	assert_int_equal(f.gone, 1);
	lf_result_clear(&r);
	loop_fabric_destroy(t.lf);
}

/* Drained within the bound: gone right after the answer (COMPLETE), once. */
static void test_quiesce_fence_drained(void **state)
{
	struct tb t;
	struct lf_result r = { 0 };
	uint8_t lun[8];
	int q_resp = -1;
	struct fence_seen f = { .q_resp = &q_resp };

	(void)state;
	tb_held_write(&t, &r, lun);
	scsitgt__tmf_quiesce_fence(t.lf->sess, 600000, tmf_resp, &q_resp, fence_gone, &f);
	run_nowait(&t);
	assert_int_equal(q_resp, -1);
	assert_int_equal(f.gone, 0);
	assert_int_equal(scsitgt_backend_fault_release(t.fault, 0, 0), 1);
	run_until_set(&t, &q_resp);
	assert_int_equal(q_resp, SCSITGT__TMF_COMPLETE);
	assert_int_equal(f.gone, 1);
	assert_true(r.aborted);
	lf_result_clear(&r);
	loop_fabric_destroy(t.lf);
	assert_int_equal(f.gone, 1);
}

/* A backend that never gives the WRITE back: the engine's teardown gives it up (drain
 * timeout, core/drain.c), and that lifts the fence too: nothing leaks, nothing waits. */
static void test_quiesce_fence_engine_gives_up(void **state)
{
	struct tb t;
	struct lf_result r = { 0 };
	uint8_t lun[8];
	int q_resp = -1;
	struct fence_seen f = { .q_resp = &q_resp };
	void *fault;

	(void)state;
	tb_held_write(&t, &r, lun);
	fault = t.fault;
	assert_int_equal(scsitgt_engine_set_drain_timeout(t.lf->engine, 20), 0);
	scsitgt__tmf_quiesce_fence(t.lf->sess, 20, tmf_resp, &q_resp, fence_gone, &f);
	run_until_set(&t, &q_resp);
	assert_int_equal(q_resp, SCSITGT__TMF_REJECTED);
	/* The nexus, then the engine; returns once the engine is gone. */
	loop_fabric_destroy(t.lf);
	assert_int_equal(f.gone, 1);
	/* The late completion only frees; the host closes the backend. */
	assert_int_equal(scsitgt_backend_fault_release(fault, 0, 0), 1);
	assert_int_equal(scsitgt_backend_fault_destroy(fault), 0);
	lf_result_clear(&r);
}

/*
 * reviewd item 4: a quiescence (Logout, reinstatement, session end) with no memory for its
 * context. It still aborts the nexus's tasks, and answers at once: "cleanup failed"
 * (SCSITGT__TMF_REJECTED) with the WRITE in the backend, which ends aborted, without a
 * response, when it leaves (before: SCSITGT__TMF_COMPLETE, nothing aborted, the WRITE
 * answered GOOD afterwards). With nothing in a backend it is complete.
 */
static void test_quiesce_without_memory(void **state)
{
	struct tb t;
	struct lf_result r = { 0 };
	uint8_t lun[8], cdb[CDB_BUF];
	int resp = -1;

	(void)state;
	tb_held_write(&t, &r, lun);
	calloc_fails = 1;
	scsitgt__tmf_quiesce(t.lf->sess, 600000, tmf_resp, &resp);
	/* the context's was the call's only calloc() */
	assert_int_equal(calloc_fails, 0);
	assert_int_equal(resp, SCSITGT__TMF_REJECTED);
	assert_int_equal(tb_stats(&t).held, 1);
	assert_false(r.done);
	assert_int_equal(scsitgt_backend_fault_release(t.fault, 0, 0), 1);
	while (!r.done)
		assert_int_not_equal(uv_run(&t.lf->loop, UV_RUN_ONCE), 0);
	assert_true(r.aborted);
	assert_int_equal(t.lf->naborted, 1);
	lf_result_clear(&r);
	/* nothing in a backend: complete, without memory as with it */
	loop_fabric_run(t.lf, 0, cdb, cdb_rw(cdb, SBC_READ_10, 0, 8, 0), NULL, 0, &r);
	assert_int_equal(r.status, 0);
	lf_result_clear(&r);
	resp = -1;
	calloc_fails = 1;
	scsitgt__tmf_quiesce(t.lf->sess, 600000, tmf_resp, &resp);
	assert_int_equal(calloc_fails, 0);
	assert_int_equal(resp, SCSITGT__TMF_COMPLETE);
	loop_fabric_destroy(t.lf);
}

/* A backend whose reset_async() holds its callback until the test runs it. */
struct held_reset {
	unsigned int calls;
	scsitgt_done_cb cb;
	void *cb_arg;
	bool inline_done;
};

static struct held_reset held;

static void held_reset_async(void *bctx, scsitgt_done_cb cb, void *cb_arg)
{
	(void)bctx;
	held.calls++;
	if (held.inline_done) {
		cb(cb_arg, 0);
		return;
	}
	held.cb = cb;
	held.cb_arg = cb_arg;
}

static void assert_reset_ua(struct prt *t, struct scsitgt__session *s)
{
	uint8_t cdb[CDB_BUF];

	/* SAM-5 §6.3.3: BUS DEVICE RESET FUNCTION OCCURRED, once. */
	assert_sense(prt_run(t, s, cdb, cdb_tur(cdb), NULL, 0), SENSE_UNIT_ATTENTION, 0x29, 0x03);
	assert_good(prt_run(t, s, cdb, cdb_tur(cdb), NULL, 0));
}

/* LOGICAL UNIT RESET with reset_async(): answered only once the backend says it is done
 * (the other gateways were told), whether it finishes later or inside the call. */
static void test_lun_reset_waits_for_reset_async(void **state)
{
	struct prt *t = prt_create(FAKE_SYNC);
	uint8_t lun[8];
	int resp = -1;

	(void)state;
	memset(&held, 0, sizeof(held));
	t->lun->ops.reset_async = held_reset_async;
	scsitgt__lun_encode(0, lun);
	scsitgt__tmf_execute(t->a, SCSITGT__TMF_LUN_RESET, lun, 0, tmf_resp, &resp);
	assert_int_equal(held.calls, 1);
	/* Not answered while the backend holds it, however long the loop runs. */
	uv_run(&t->lf->loop, UV_RUN_NOWAIT);
	assert_int_equal(resp, -1);
	held.cb(held.cb_arg, 0);
	assert_int_equal(resp, SCSITGT__TMF_COMPLETE);
	assert_reset_ua(t, t->b);
	/* Done inside the call: answered once, at once. */
	resp = -1;
	held.inline_done = true;
	scsitgt__tmf_execute(t->a, SCSITGT__TMF_LUN_RESET, lun, 0, tmf_resp, &resp);
	assert_int_equal(held.calls, 2);
	assert_int_equal(resp, SCSITGT__TMF_COMPLETE);
	prt_destroy(t);
}

/* A reset applied from another gateway: every nexus's tasks of the LUN aborted, every nexus
 * finds 29h/03h, and the backend is not told (the reset did not start here). */
static void test_apply_reset(void **state)
{
	struct prt *t = prt_create(FAKE_MANUAL);
	struct lf_result r = { 0 };
	uint8_t cdb[CDB_BUF];

	(void)state;
	memset(&held, 0, sizeof(held));
	t->lun->ops.reset_async = held_reset_async;
	loop_fabric_start_on(t->lf, t->b, 0, cdb, cdb_rw(cdb, SBC_READ_10, 0, 8, 0), NULL, 0, &r);
	assert_int_equal(scsitgt_lun_apply_reset(NULL), -EINVAL);
	assert_int_equal(scsitgt_lun_apply_reset(t->lun), 0);
	assert_int_equal(held.calls, 0);
	fake_backend_complete_pending(t->fb);
	/* a reset applied from another engine is another nexus's: TASK ABORTED (TAS 1) */
	assert_task_aborted(&r);
	lf_result_clear(&r);
	t->fb->o.mode = FAKE_SYNC;
	assert_reset_ua(t, t->b);
	assert_reset_ua(t, t->a2);
	assert_reset_ua(t, t->obs);
	prt_destroy(t);
}

static void count_cb(void *arg, int status)
{
	assert_int_equal(status, 0);
	(*(int *)arg)++;
}

/* review30 F3: the same through scsitgt_lun_apply_reset_async() with every nexus on home (no
 * worker loop at all), where the reset ends inside the call: the callback still comes later,
 * from the loop (common.h), once; the nexuses find 29h/03h. */
static void test_apply_reset_async_on_home(void **state)
{
	struct prt *t = prt_create(FAKE_SYNC);
	int calls = 0;

	(void)state;
	assert_int_equal(scsitgt_lun_apply_reset_async(t->lun, count_cb, &calls), 0);
	assert_int_equal(calls, 0);
	while (calls == 0)
		assert_int_not_equal(uv_run(&t->lf->loop, UV_RUN_ONCE), 0);
	assert_int_equal(calls, 1);
	assert_reset_ua(t, t->b);
	assert_reset_ua(t, t->a2);
	uv_run(&t->lf->loop, UV_RUN_NOWAIT);
	assert_int_equal(calls, 1);
	prt_destroy(t);
}

static void done_flag(void *arg, int status)
{
	(void)status;
	*(bool *)arg = true;
}

/*
 * A target is destroyed while its ended nexus's WRITE is held (an orphan; the LUN's removal
 * times out and leaves it a zombie), and a new target gets the freed target's address (the
 * allocator seam above makes that certain): a LOGICAL UNIT RESET of the new target's LUN 0
 * has nothing of its own to wait for and answers at once. Before, the orphan was matched by
 * its LUN's (dangling) target pointer and the reset waited for the unrelated WRITE.
 */
static void test_orphan_of_freed_target_not_matched(void **state)
{
	struct tb t;
	struct lf_result r = { 0 };
	struct scsitgt_target_opts to;
	struct scsitgt_lun_opts lo;
	struct scsitgt_target *t2;
	struct scsitgt_lun *l2;
	struct scsitgt__session *b;
	uint8_t lun[8];
	bool gone = false;
	int resp = -1;
	void *ram;

	(void)state;
	tb_held_write(&t, &r, lun);
	scsitgt__session_destroy(t.lf->sess);
	t.lf->sess = NULL;
	run_nowait(&t);
	assert_int_equal(atomic_load(&t.lf->engine->shards[0].norphans), 1);
	assert_int_equal(scsitgt_engine_set_drain_timeout(t.lf->engine, 10), 0);
	keep_tgt = t.lf->tgt;
	scsitgt_target_destroy(t.lf->tgt, done_flag, &gone);
	loop_fabric_run_until(t.lf, &gone);
	assert_true(tgt_kept);
	assert_int_equal(tb_stats(&t).held, 1);
	reuse_tgt = true;
	scsitgt_target_opts_init(&to, sizeof(to));
	to.name = "iqn.2026-12.org.example:second";
	assert_int_equal(scsitgt_target_create(&t2, t.lf->engine, &to), 0);
	assert_ptr_equal(t2, keep_tgt);
	keep_tgt = NULL;
	assert_int_equal(scsitgt_backend_ram_create(&ram), 0);
	scsitgt_lun_opts_init(&lo, sizeof(lo));
	lo.num_blocks = 64; /* LUN 0 of 512-byte blocks */
	lo.backend = scsitgt_backend_ram_ops();
	lo.backend_ctx = ram;
	assert_int_equal(scsitgt_lun_create(&l2, t2, &lo), 0);
	t.lf->tgt = t2;
	assert_int_equal(loop_fabric_add_session(t.lf, PORT_B, 1, &b), 0);
	assert_int_equal(scsitgt_engine_set_tmf_timeout(t.lf->engine, 600000), 0);
	scsitgt__tmf_execute(b, SCSITGT__TMF_LUN_RESET, lun, 0, tmf_resp, &resp);
	run_nowait(&t);
	assert_int_equal(resp, SCSITGT__TMF_COMPLETE);
	/* the WRITE is still the old backend's */
	assert_int_equal(tb_stats(&t).held, 1);
	assert_int_equal(scsitgt_backend_fault_release(t.fault, 0, 0), 1);
	run_nowait(&t);
	assert_int_equal(atomic_load(&t.lf->engine->shards[0].norphans), 0);
	lf_result_clear(&r);
	loop_fabric_destroy(t.lf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_abort_cancels),
		cmocka_unit_test(test_abort_ignored),
		cmocka_unit_test(test_lun_reset_calls_reset),
		cmocka_unit_test(test_abort_then_lun_reset_waits),
		cmocka_unit_test(test_query_task_sees_aborted_held),
		cmocka_unit_test(test_abort_timed_out_then_task_set_and_quiesce),
		cmocka_unit_test(test_quiesce_fence_outlives_nexus),
		cmocka_unit_test(test_quiesce_fence_drained),
		cmocka_unit_test(test_quiesce_fence_engine_gives_up),
		cmocka_unit_test(test_timed_out_waiters_go),
		cmocka_unit_test(test_quiesce_without_memory),
		cmocka_unit_test(test_lun_reset_waits_for_orphan),
		cmocka_unit_test(test_orphan_of_freed_target_not_matched),
		cmocka_unit_test(test_lun_reset_waits_for_reset_async),
		cmocka_unit_test(test_apply_reset),
		cmocka_unit_test(test_apply_reset_async_on_home),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
