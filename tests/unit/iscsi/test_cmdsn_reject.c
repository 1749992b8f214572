/* SPDX-License-Identifier: MIT */
/*
 * The CmdSN of a rejected command PDU (RFC 7143 §7.3): "The CmdSN of the rejected command PDU
 * (if it is a non-immediate command) MUST NOT be considered received by the target (i.e., a
 * command sequence gap must be assumed for the CmdSN) ... Upon receiving the Reject, the
 * initiator MUST plug the CmdSN gap in order to continue to use the session. The gap may be
 * plugged either by transmitting a command PDU with the same CmdSN or by aborting the task."
 * So a Reject never moves ExpCmdSN, whatever the PDU (SCSI Command, NOP-Out, Text, Logout,
 * TMF) and whatever its reason; the commands held behind the gap run once the initiator plugs
 * it, by either way. (A control PDU ahead of ExpCmdSN is held, not rejected: test_cmdsn_held.c.) And an ABORT TASK whose RefCmdSN was received under another tag names no
 * task (review30b F4).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "iscsi_harness.h"
#include "sn_harness.h"

/* Assert the PDU of @itt was rejected for @reason with ExpCmdSN @exp still, and that the
 * session's ExpCmdSN is @exp. */
static void assert_rejected(const struct harness *h, uint32_t itt, int reason, uint32_t exp)
{
	uint32_t carried = 0;

	assert_int_equal(sn_reject_reason(h, itt, &carried), reason);
	assert_int_equal(carried, exp);
	assert_int_equal(h->conn->sess->exp_cmd_sn, exp);
}

/*
 * A SCSI command at ExpCmdSN reusing the ITT of a live task (a command held at ExpCmdSN + 1):
 * "Task in progress", and ExpCmdSN stays. The initiator plugs the gap by sending a command
 * with that CmdSN: it runs, then the held one.
 */
static void test_task_in_progress_plugged_by_resend(void **state)
{
	struct harness h;
	uint32_t exp, held, plug;

	(void)state;
	sn_start(&h, &exp);
	held = sn_tur_at(&h, exp + 1);
	sn_tur_itt(&h, exp, held);
	assert_rejected(&h, held, ISCSI_REJECT_TASK_IN_PROGRESS, exp);
	assert_false(sn_answered(&h, held));
	plug = sn_tur_at(&h, exp);
	assert_true(sn_answered(&h, plug));
	assert_true(sn_answered(&h, held));
	sn_finish(&h, exp + 2);
}

/*
 * A SCSI command at ExpCmdSN with a protocol error in its header (data with W=0): rejected,
 * the command behind it held. The initiator plugs the gap by aborting the task it never
 * created (RFC 7143 §11.5.1 b): Function complete, the held command runs.
 */
static void test_protocol_error_plugged_by_abort(void **state)
{
	uint8_t bhs[ISCSI_BHS_LEN], data[512] = { 0 };
	struct harness h;
	uint32_t exp, bad, held, tmf, next;

	(void)state;
	sn_start(&h, &exp);
	h_cmd_bhs(&h, bhs, ISCSI_FLAG_FINAL, sizeof(data), 0x00, 0, 0);
	put_be32(&bhs[ISCSI_BHS_CMDSN], exp);
	scsitgt__bhs_set_dsl(bhs, sizeof(data));
	bad = h.itt;
	h_send(&h, bhs, data, sizeof(data));
	assert_rejected(&h, bad, ISCSI_REJECT_PROTOCOL_ERROR, exp);
	held = sn_tur_at(&h, exp + 1);
	assert_false(sn_answered(&h, held));
	tmf = sn_abort_task(&h, exp + 2, bad, exp);
	assert_int_equal(sn_tmf_response(&h, tmf), ISCSI_TMF_RSP_COMPLETE);
	assert_true(sn_answered(&h, held));
	next = sn_tur_at(&h, exp + 2);
	assert_true(sn_answered(&h, next));
	sn_finish(&h, exp + 3);
}

/*
 * A Text Request at ExpCmdSN continuing an exchange that does not exist (a TTT we never
 * gave): "Invalid PDU field" and ExpCmdSN stays (it moved on before: the next command, with
 * the same CmdSN as RFC 7143 §7.3 has it, was then ignored as a duplicate).
 */
static void test_text_rejected_after_verdict(void **state)
{
	struct harness h;
	uint32_t exp, text, plug;

	(void)state;
	sn_start(&h, &exp);
	text = sn_text_at(&h, exp, 0x1234u, NULL, 0);
	assert_rejected(&h, text, ISCSI_REJECT_INVALID_PDU_FIELD, exp);
	plug = sn_tur_at(&h, exp);
	assert_true(sn_answered(&h, plug));
	sn_finish(&h, exp + 1);
}

/*
 * A Logout at ExpCmdSN with a reason code RFC 7143 §11.14.1 does not define: rejected, its
 * CmdSN not received, so the command held behind it waits for the plug (it ran at once
 * before, and the plug was ignored).
 */
static void test_logout_unknown_reason_rejected(void **state)
{
	struct harness h;
	uint32_t exp, held, lo, plug;

	(void)state;
	sn_start(&h, &exp);
	held = sn_tur_at(&h, exp + 1);
	lo = sn_logout_at(&h, 0x05, 0, exp);
	assert_rejected(&h, lo, ISCSI_REJECT_PROTOCOL_ERROR, exp);
	assert_false(sn_answered(&h, held));
	plug = sn_tur_at(&h, exp);
	assert_true(sn_answered(&h, plug));
	assert_true(sn_answered(&h, held));
	sn_finish(&h, exp + 2);
}

/*
 * review30b F4: ABORT TASK of a tag the target does not know, whose RefCmdSN is the CmdSN of
 * a command it holds under another tag: that CmdSN was received, so the TMF names no task
 * ("Task does not exist"), and the held command runs in its turn.
 */
static void test_abort_task_ref_taken_by_other(void **state)
{
	struct harness h;
	uint32_t exp, held, tmf, gap;

	(void)state;
	sn_start(&h, &exp);
	held = sn_tur_at(&h, exp + 1);
	tmf = sn_abort_task(&h, exp + 2, 0x7f000000u, exp + 1);
	assert_int_equal(sn_tmf_response(&h, tmf), ISCSI_TMF_RSP_NO_TASK);
	assert_false(sn_answered(&h, held));
	gap = sn_tur_at(&h, exp);
	assert_true(sn_answered(&h, gap));
	assert_true(sn_answered(&h, held));
	sn_finish(&h, exp + 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_task_in_progress_plugged_by_resend),
		cmocka_unit_test(test_protocol_error_plugged_by_abort),
		cmocka_unit_test(test_text_rejected_after_verdict),
		cmocka_unit_test(test_logout_unknown_reason_rejected),
		cmocka_unit_test(test_abort_task_ref_taken_by_other),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
