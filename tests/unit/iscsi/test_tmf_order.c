/* SPDX-License-Identifier: MIT */
/*
 * A task management function acts on the commands before it in CmdSN order (RFC 7143
 * §11.5.1: "Task management requests must act on all the commands from the same session
 * having a CmdSN lower than the task management CmdSN"; review30b F3). A non-immediate ABORT
 * TASK SET, CLEAR TASK SET or LOGICAL UNIT RESET at ExpCmdSN leaves alone the commands held
 * behind it (CmdSN ExpCmdSN + 1 ...), which run after it; an immediate one, whose CmdSN is
 * past theirs, aborts them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "iscsi_harness.h"
#include "sn_harness.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_abort_task_set_spares_later),
		cmocka_unit_test(test_clear_task_set_spares_later),
		cmocka_unit_test(test_lun_reset_spares_later),
		cmocka_unit_test(test_immediate_abort_task_set_aborts_held),
		cmocka_unit_test(test_drop_waiting_counts_fencing_only),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
