/* SPDX-License-Identifier: MIT */
/*
 * A task management function acts on the commands before it in CmdSN order (RFC 7143
 * §11.5.1: "Task management requests must act on all the commands from the same session
 * having a CmdSN lower than the task management CmdSN"; review30b F3). A non-immediate ABORT
 * TASK SET, CLEAR TASK SET or LOGICAL UNIT RESET at ExpCmdSN leaves alone the commands held
 * behind it (CmdSN ExpCmdSN + 1 ...), which run after it; an immediate one, whose CmdSN is
 * past theirs, aborts them. An ABORT TASK that names no task goes through the core all the same.
 * A connection has a bounded number of TMFs in flight.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "iscsi_harness.h"
#include "libscsitgt/backend_fault.h"
#include "sn_harness.h"
#include "tmf_seen.h"

/*
 * A WRITE held behind a non-immediate @func at ExpCmdSN, waiting for its data (so still in
 * the task set when the TMF acts, as a command in a slow backend would be): it survives the
 * TMF and, once its data comes, ends GOOD.
 */
static void held_behind(uint8_t func)
{
	struct harness h;
	uint32_t exp, w, ttt, tmf, next;

	sn_start(&h, &exp);
	w = sn_write_at(&h, exp + 1, &ttt);
	assert_int_not_equal(ttt, ISCSI_RESERVED_TAG);
	tmf = sn_tmf_at(&h, func, exp, false);
	assert_int_equal(sn_tmf_response(&h, tmf), ISCSI_TMF_RSP_COMPLETE);
	assert_non_null(scsitgt__iscsi_task_find(h.conn, w));
	sn_write_data(&h, w, ttt);
	assert_true(h_task_gone(&h, w));
	/* A LOGICAL UNIT RESET may leave a unit attention for this nexus: answered, not GOOD. */
	assert_true(func == ISCSI_TMF_LUN_RESET ? sn_answered(&h, w) : sn_good(&h, w));
	next = sn_tur_at(&h, exp + 2);
	assert_true(sn_answered(&h, next));
	sn_finish(&h, exp + 3);
}

static void test_abort_task_set_spares_later(void **state)
{
	(void)state;
	held_behind(ISCSI_TMF_ABORT_TASK_SET);
}

static void test_clear_task_set_spares_later(void **state)
{
	(void)state;
	held_behind(ISCSI_TMF_CLEAR_TASK_SET);
}

static void test_lun_reset_spares_later(void **state)
{
	(void)state;
	held_behind(ISCSI_TMF_LUN_RESET);
}

/*
 * An immediate ABORT TASK SET carries the next CmdSN: the held command (issued before it) is
 * aborted, its CmdSN used up, and the gap before it filled by the next command.
 */
static void test_immediate_abort_task_set_aborts_held(void **state)
{
	struct harness h;
	uint32_t exp, held, tmf, next;

	(void)state;
	sn_start(&h, &exp);
	held = sn_tur_at(&h, exp + 1);
	tmf = sn_tmf_at(&h, ISCSI_TMF_ABORT_TASK_SET, exp + 2, true);
	assert_int_equal(sn_tmf_response(&h, tmf), ISCSI_TMF_RSP_COMPLETE);
	assert_false(sn_answered(&h, held));
	sn_assert_held_aborted(&h, held, exp);
	next = sn_tur_at(&h, exp + 2);
	assert_true(sn_good(&h, next));
	sn_finish(&h, exp + 3);
}

/*
 * reviewc N1: an immediate ABORT TASK SET waits for the answer to its WRITE's R2T (counted in
 * conn->tmf_fencing), an ABORT TASK queues behind it (not counted: it fences nothing); when
 * the connection drops them, the count comes back to zero, not below.
 */
static void test_drop_waiting_counts_fencing_only(void **state)
{
	struct harness h;
	uint32_t exp, w, ttt, set, at;

	(void)state;
	w = sn_start_write(&h, &exp, &ttt);
	set = sn_tmf_at(&h, ISCSI_TMF_ABORT_TASK_SET, exp + 1, true);
	at = sn_abort_task(&h, exp + 1, w, exp);
	assert_int_equal(sn_tmf_response(&h, set), -1);
	assert_int_equal(sn_tmf_response(&h, at), -1);
	assert_int_equal(h.conn->tmf_fencing, 1);
	scsitgt__iscsi_tmf_drop_waiting(h.conn);
	assert_int_equal(h.conn->tmf_fencing, 0);
	h_fini(&h);
}

/* The TMFs LUN 0's statistics counted. */
static uint64_t lun0_tmfs(struct harness *h)
{
	return tmf_seen_lun_tmfs(scsitgt_target_get_lun(h->tgt, 0));
}

/* An immediate ABORT TASK of @rtt on LUN @lun with CmdSN @sn and RefCmdSN @ref: its answer. */
static int abort_on(struct harness *h, uint8_t lun, uint32_t sn, uint32_t rtt, uint32_t ref)
{
	uint8_t bhs[ISCSI_BHS_LEN];

	scsitgt__bhs_init(bhs, ISCSI_OP_TMF_REQ | ISCSI_FLAG_IMMEDIATE,
			  ISCSI_FLAG_FINAL | ISCSI_TMF_ABORT_TASK);
	scsitgt__lun_encode(lun, &bhs[ISCSI_BHS_LUN]);
	put_be32(&bhs[ISCSI_BHS_ITT], ++h->itt);
	put_be32(&bhs[ISCSI_TMF_RTT], rtt);
	put_be32(&bhs[ISCSI_BHS_CMDSN], sn);
	put_be32(&bhs[ISCSI_TMF_REFCMDSN], ref);
	h_send(h, bhs, NULL, 0);
	return sn_tmf_response(h, h->itt);
}

/*
 * An ABORT TASK naming no task goes through the core as SRP's does (ecde905): the host's TMF
 * event and the LUN's statistics count it. Its answer stays the transport's (RFC 7143
 * §11.6.1): "task does not exist" for an unknown tag (c) and for a task already answered,
 * "function complete" for a RefCmdSN not received yet (b, the CmdSN used up), and "LUN does
 * not exist" (response 2) on a LUN that does not exist, as for a task there.
 */
static void test_abort_absent_through_core(void **state)
{
	struct harness h;
	uint32_t exp, tur;

	(void)state;
	sn_start(&h, &exp);
	tmf_events = 0;
	assert_int_equal(scsitgt_engine_set_event_cb(h.engine, tmf_seen_cb, NULL), 0);
	/* RefCmdSN below the window: (c) */
	assert_int_equal(abort_on(&h, 0, exp, 0x4242, exp - 8), ISCSI_TMF_RSP_NO_TASK);
	assert_int_equal(tmf_events, 1);
	assert_int_equal(tmf_event_lun, 0);
	assert_int_equal(lun0_tmfs(&h), 1);
	assert_int_equal(abort_on(&h, 5, exp, 0x4242, exp - 8), ISCSI_TMF_RSP_NO_LUN);
	assert_int_equal(tmf_events, 2);
	assert_int_equal(tmf_event_lun, 5);
	/* a command already answered: nothing to abort */
	tur = sn_tur_at(&h, exp);
	assert_true(sn_good(&h, tur));
	assert_int_equal(abort_on(&h, 0, exp + 1, tur, exp), ISCSI_TMF_RSP_NO_TASK);
	assert_int_equal(tmf_events, 3);
	assert_int_equal(lun0_tmfs(&h), 2);
	/* (b): CmdSN exp + 1 not received, below the TMF's: used up, "function complete" */
	assert_int_equal(abort_on(&h, 0, exp + 2, 0x4343, exp + 1), ISCSI_TMF_RSP_COMPLETE);
	assert_int_equal(tmf_events, 4);
	assert_int_equal(lun0_tmfs(&h), 3);
	assert_int_equal(scsitgt_engine_set_event_cb(h.engine, NULL, NULL), 0);
	sn_finish(&h, exp + 2);
}

/*
 * How many TMFs one connection has in flight is bounded (reviewd measured 50,000 LOGICAL UNIT
 * RESETs waiting on one held WRITE): with a WRITE the backend holds, SCSITGT__ISCSI_TMFS_MAX
 * immediate LOGICAL UNIT RESETs wait for it, the next one draws Reject 0x06 (RFC 7143
 * §11.17.1, "too many immediate commands") and leaves nothing behind; once the WRITE is back
 * they all answer, and the connection takes TMFs again.
 */
static void test_immediate_tmfs_bounded(void **state)
{
	uint32_t exp, first, over, again;
	struct harness h;
	void *fault;

	(void)state;
	(void)sn_start_held_write(&h, &exp, &fault);
	first = h.itt + 1;
	for (unsigned int i = 0; i < SCSITGT__ISCSI_TMFS_MAX; i++)
		assert_int_equal(
			sn_tmf_response(&h, sn_tmf_at(&h, ISCSI_TMF_LUN_RESET, exp + 1, true)), -1);
	assert_int_equal(h.conn->tmfs, SCSITGT__ISCSI_TMFS_MAX);
	over = sn_tmf_at(&h, ISCSI_TMF_LUN_RESET, exp + 1, true);
	assert_int_equal(sn_reject_reason(&h, over, NULL), ISCSI_REJECT_IMM_CMD_REJECT);
	assert_int_equal(sn_tmf_response(&h, over), -1);
	assert_int_equal(h.conn->tmfs, SCSITGT__ISCSI_TMFS_MAX);
	assert_int_equal(scsitgt_backend_fault_release(fault, 0, 0), 1);
	for (int i = 0; i < 100 && h.conn->tmfs; i++)
		h_pump(&h);
	for (uint32_t itt = first; itt < over; itt++)
		assert_int_equal(sn_tmf_response(&h, itt), ISCSI_TMF_RSP_COMPLETE);
	again = sn_tmf_at(&h, ISCSI_TMF_LUN_RESET, exp + 1, true);
	assert_int_equal(sn_tmf_response(&h, again), ISCSI_TMF_RSP_COMPLETE);
	assert_int_equal(h.conn->tmfs, 0);
	sn_finish(&h, exp + 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_abort_task_set_spares_later),
		cmocka_unit_test(test_clear_task_set_spares_later),
		cmocka_unit_test(test_lun_reset_spares_later),
		cmocka_unit_test(test_immediate_abort_task_set_aborts_held),
		cmocka_unit_test(test_drop_waiting_counts_fencing_only),
		cmocka_unit_test(test_abort_absent_through_core),
		cmocka_unit_test(test_immediate_tmfs_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
