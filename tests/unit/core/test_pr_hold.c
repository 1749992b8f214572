/* SPDX-License-Identifier: MIT */
/*
 * Held admission (core/pr_hold.c) against task management and the ends of a command's world:
 * a LUN whose reservations live in a cluster store that never answers, its lease run out, so
 * that every READ or WRITE waits in the LUN's queue for a store that may never come back. A
 * held command is in no backend: a TMF that aborts it, a PREEMPT AND ABORT, the loss of its
 * nexus, the LUN's removal and the engine's end take it out of the queue at once (SAM-5 §7:
 * the TMF answers once the task is gone, and here nothing keeps it), it is never executed
 * afterwards, and nothing of it is left behind. One loop; the worker shards' side is
 * test_xshard_pr_hold.c. Every debug build also counts that each command started was freed.
 */
#include <errno.h>

#include "test_pr_common.h"

#include "cmd_count.h"
#include "pr_hold_store.h"

struct ht {
	struct prt *p;
	struct hold_store st;
	/* the engine went with the test (loop_fabric_destroy() done) */
	bool gone;
};

/* Counting from here: three nexuses on a LUN in a store whose lease ran out (at 1 ms of the
 * clock: long past). Returns the backend's ios so far. */
static size_t ht_init(struct ht *t)
{
	memset(t, 0, sizeof(*t));
	count_start();
	t->p = prt_create(FAKE_SYNC);
	assert_int_equal(scsitgt_lun_set_pr_cluster(t->p->lun, &hold_store_ops, &t->st), 0);
	assert_int_equal(scsitgt_lun_set_pr_lease(t->p->lun, 1), 0);
	return t->p->fb->nrecs;
}

/* The loop runs what it has now (no store answer is ever given). */
static void ht_idle(struct ht *t)
{
	for (int i = 0; i < 8; i++)
		uv_run(&t->p->lf->loop, UV_RUN_NOWAIT);
}

/* A one-block WRITE (10) of @s at @lba, started: it is held (nothing reached the backend). */
static void ht_write_held(struct ht *t, struct scsitgt__session *s, uint32_t lba,
			  struct lf_result *res)
{
	uint8_t cdb[CDB_BUF], blk[512] = { 0x5a };
	size_t ios = t->p->fb->nrecs;

	memset(res, 0, sizeof(*res));
	loop_fabric_start_on(t->p->lf, s, 0, cdb, cdb_rw(cdb, SBC_WRITE_10, lba, 1, 0), blk,
			     sizeof(blk), res);
	ht_idle(t);
	assert_false(res->done);
	assert_non_null(res->cmd);
	assert_int_equal(t->p->fb->nrecs, ios);
}

/* A new lease lets the queue go: whatever was aborted stays unexecuted (@ios: the backend's
 * ios so far), and a new write of B runs. Then the engine goes; every command was freed. */
static void ht_finish(struct ht *t, size_t ios)
{
	assert_int_equal(scsitgt_lun_set_pr_lease(t->p->lun, scsitgt__pr_clock_ms() + 600000), 0);
	ht_idle(t);
	assert_int_equal(t->p->fb->nrecs, ios);
	ok(prt_write(t->p, t->p->b));
	assert_int_equal(t->p->fb->nrecs, ios + 1);
	prt_destroy(t->p);
	assert_true(atomic_load(&t->st.detached));
	count_check();
}

/* ht_init(), then a held WRITE of B at LBA 0 (@wb) and one of A2 at 1 (@wa2), in that order:
 * the opening of the tests of two nexuses. Returns the backend's ios before the two. */
static size_t ht_init_held_b_a2(struct ht *t, struct lf_result *wb, struct lf_result *wa2)
{
	size_t ios = ht_init(t);

	ht_write_held(t, t->p->b, 0, wb);
	ht_write_held(t, t->p->a2, 1, wa2);
	return ios;
}

/* ht_init() for the tests in which the LUN goes: a drain timeout of 20 ms (before, the LUN's
 * removal or the engine's end waited this long for a held command, then left it) and @closed
 * set when the backend closes. */
static void ht_init_closing(struct ht *t, bool *closed)
{
	ht_init(t);
	assert_int_equal(scsitgt_engine_set_drain_timeout(t->p->lf->engine, 20), 0);
	t->p->fb->closed_flag = closed;
}

static void tmf(struct ht *t, struct scsitgt__session *s, enum scsitgt__tmf_type type, uint64_t tag,
		int *resp)
{
	uint8_t lun[8];

	*resp = -1;
	scsitgt__lun_encode(0, lun);
	scsitgt__tmf_execute(s, type, lun, tag, tmf_resp, resp);
	ht_idle(t);
}

/*
 * ABORT TASK of a held WRITE: the command ends aborted (no response) and the function
 * answers at once, with no word from the store; the write never runs. Before, the answer
 * waited for the store's next lease (or the TMF timeout): a store that never answers kept
 * the initiator's error recovery waiting. A held command of another nexus is left alone.
 */
static void test_abort_task_held(void **state)
{
	struct lf_result w, other;
	struct ht t;
	size_t ios;
	int resp;

	(void)state;
	ios = ht_init_held_b_a2(&t, &w, &other);
	assert_int_equal(atomic_load(&t.st.nrecheck), 1);
	tmf(&t, t.p->b, SCSITGT__TMF_ABORT_TASK, w.cmd->tag, &resp);
	assert_int_equal(resp, SCSITGT__TMF_COMPLETE);
	assert_true(w.done);
	assert_true(w.aborted);
	assert_false(other.done);
	/* the other goes when the store lets it */
	ht_finish(&t, ios + 1);
	assert_true(other.done);
	assert_good(&other);
}

/*
 * LOGICAL UNIT RESET (SAM-5 §6.3.3) with held commands of two nexuses: each ends aborted and
 * the reset answers at once; the other nexus finds the reset's unit attention. ABORT TASK SET
 * takes only its own nexus's.
 */
static void test_lun_reset_held(void **state)
{
	struct lf_result wb, wa2, wb2;
	struct ht t;
	size_t ios;
	int resp;

	(void)state;
	ios = ht_init_held_b_a2(&t, &wb, &wa2);
	ht_write_held(&t, t.p->b, 2, &wb2);
	tmf(&t, t.p->b, SCSITGT__TMF_ABORT_TASK_SET, 0, &resp);
	assert_int_equal(resp, SCSITGT__TMF_COMPLETE);
	assert_true(wb.done && wb.aborted);
	assert_true(wb2.done && wb2.aborted);
	assert_false(wa2.done);
	ht_write_held(&t, t.p->b, 3, &wb);
	tmf(&t, t.p->a, SCSITGT__TMF_LUN_RESET, 0, &resp);
	assert_int_equal(resp, SCSITGT__TMF_COMPLETE);
	/* A's reset: B's and A2's held writes are answered TASK ABORTED (TAS 1) */
	assert_task_aborted(&wb);
	assert_task_aborted(&wa2);
	assert_int_equal(t.p->fb->nrecs, ios);
	assert_int_equal(scsitgt_lun_set_pr_lease(t.p->lun, scsitgt__pr_clock_ms() + 600000), 0);
	ua(prt_write(t.p, t.p->b), 0x29, 0x03);
	ht_finish(&t, ios);
}

/*
 * I_T nexus loss (SAM-5 §6.3.4): a logout's quiesce (scsitgt__tmf_quiesce()) answers at once
 * with a held command, which ends aborted; a nexus destroyed with one held frees it at once,
 * without a word to the fabric, instead of leaving it in the queue to be let go (the LUN's
 * count shows it); neither runs when the store lets the queue go.
 */
static void test_nexus_loss_held(void **state)
{
	struct lf_result wb, wa2;
	struct ht t;
	size_t ios;
	int resp = -1;

	(void)state;
	ios = ht_init(&t);
	ht_write_held(&t, t.p->b, 0, &wb);
	scsitgt__tmf_quiesce(t.p->b, 600000, tmf_resp, &resp);
	ht_idle(&t);
	assert_int_equal(resp, SCSITGT__TMF_COMPLETE);
	assert_true(wb.done && wb.aborted);
	ht_write_held(&t, t.p->a2, 1, &wa2);
	assert_int_equal(scsitgt__lun_inflight(t.p->lun), 1);
	scsitgt__session_destroy(t.p->a2);
	t.p->a2 = NULL;
	ht_idle(&t);
	assert_int_equal(scsitgt__lun_inflight(t.p->lun), 0);
	assert_false(wa2.done);
	ht_finish(&t, ios);
	assert_false(wa2.done);
}

static void lun_gone(void *arg, int status)
{
	assert_int_equal(status, 0);
	*(bool *)arg = true;
}

/*
 * The LUN is removed with a held command and the store never answers: when the removal's
 * drain times out, the command ends aborted like the LUN's other commands outside its
 * backend, and the LUN closes its backend and is freed before its removal calls back. Before,
 * the command stayed in the queue of a LUN left as a zombie, to be run by a store that came
 * back on a LUN being freed, or leaked.
 */
static void test_lun_removed_held(void **state)
{
	bool gone = false, closed = false;
	struct lf_result wb;
	struct ht t;

	(void)state;
	ht_init_closing(&t, &closed);
	ht_write_held(&t, t.p->b, 0, &wb);
	scsitgt_lun_destroy(t.p->lun, lun_gone, &gone);
	loop_fabric_run_until(t.p->lf, &gone);
	assert_true(wb.done && wb.aborted);
	assert_true(closed);
	assert_true(atomic_load(&t.st.detached));
	assert_int_equal(atomic_load(&t.st.nrecheck), 1);
	prt_destroy(t.p);
	count_check();
}

/*
 * The engine goes with a held command (its nexus first) and a store that never answers:
 * the command is freed with its nexus, the LUN closes at once and nothing leaks (LeakSanitizer
 * in the ASan build; the count of freed commands in every debug build). Before, the LUN waited
 * out its drain timeout and was then left behind with the command.
 */
static void test_engine_gone_held(void **state)
{
	bool closed = false;
	struct lf_result wb, wa;
	struct ht t;

	(void)state;
	ht_init_closing(&t, &closed);
	ht_write_held(&t, t.p->b, 0, &wb);
	ht_write_held(&t, t.p->a, 1, &wa);
	prt_destroy(t.p);
	assert_true(closed);
	assert_true(atomic_load(&t.st.detached));
	assert_false(wb.done || wa.done);
	count_check();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_abort_task_held),	 cmocka_unit_test(test_lun_reset_held),
		cmocka_unit_test(test_nexus_loss_held),	 cmocka_unit_test(test_lun_removed_held),
		cmocka_unit_test(test_engine_gone_held),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
