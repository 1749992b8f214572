/* SPDX-License-Identifier: MIT */
/*
 * CmdSN slots used up without a command to run (RFC 7143 §3.2.2.1, §4.2.2.1, §11.5.1). A
 * command whose CmdSN is ahead of ExpCmdSN waits for the gap; when its CmdSN is used up
 * otherwise (the command aborted by another nexus while it waited or while its PDU arrived,
 * or named by an ABORT TASK before the target received it), ExpCmdSN must still pass that
 * CmdSN once the gap fills, or every later command waits for ever; and a command that comes
 * late with a used-up CmdSN, like any duplicate in the window, is silently ignored.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "iscsi_harness.h"
#include "sn_harness.h"

/* An immediate ABORT TASK of @rtt (which the target does not know) with CmdSN @sn. */
static uint32_t abort_unknown(struct harness *h, uint32_t sn, uint32_t ref_cmd_sn)
{
	return sn_abort_task(h, sn, 0x7f000000u + h->itt + 1, ref_cmd_sn);
}

/*
 * (a) A command held for CmdSN order (ExpCmdSN + 1 before ExpCmdSN) is aborted by another
 * nexus (a LOGICAL UNIT RESET: scsitgt_lun_apply_reset(), as in test_rx_abort.c). When the gap
 * fills, ExpCmdSN passes its CmdSN and the next command runs.
 */
static void test_held_command_aborted(void **state)
{
	struct harness h;
	uint32_t exp, held, gap, next;

	(void)state;
	sn_start(&h, &exp);
	held = sn_tur_at(&h, exp + 1);
	assert_false(sn_answered(&h, held));
	assert_false(scsitgt__list_empty(&h.conn->sess->pending));
	assert_int_equal(scsitgt_lun_apply_reset(scsitgt__target_find_lun(h.tgt, 0)), 0);
	assert_true(h_task_gone(&h, held));
	assert_true(scsitgt__list_empty(&h.conn->sess->pending));
	gap = sn_tur_at(&h, exp);
	assert_true(sn_answered(&h, gap));
	assert_false(sn_answered(&h, held)); /* aborted by another nexus: no response (SAM-5) */
	next = sn_tur_at(&h, exp + 2);
	assert_true(sn_answered(&h, next));
	sn_finish(&h, exp + 3);
}

/*
 * (b) A WRITE with CmdSN ExpCmdSN + 1 whose immediate data is cut by a LOGICAL UNIT RESET
 * while it arrives (task_rx_forget()): its CmdSN is used up all the same.
 */
static void test_cut_command_ahead(void **state)
{
	const uint32_t len = 65536, half = len / 2;
	uint8_t bhs[ISCSI_BHS_LEN], *wire = malloc(ISCSI_BHS_LEN + len);
	struct harness h;
	uint32_t exp, cut, gap, next;

	(void)state;
	assert_non_null(wire);
	sn_start(&h, &exp);
	h_cmd_bhs(&h, bhs, ISCSI_FLAG_FINAL | ISCSI_CMD_FLAG_WRITE, len, 0x2a, 64, len / 512);
	put_be32(&bhs[ISCSI_BHS_CMDSN], exp + 1);
	cut = h.itt;
	scsitgt__bhs_set_dsl(bhs, len);
	memcpy(wire, bhs, ISCSI_BHS_LEN);
	memset(wire + ISCSI_BHS_LEN, 0x5a, len);
	h_feed(&h, wire, ISCSI_BHS_LEN + half);
	assert_non_null(scsitgt__iscsi_task_find(h.conn, cut));
	assert_int_equal(scsitgt_lun_apply_reset(scsitgt__target_find_lun(h.tgt, 0)), 0);
	assert_true(h_task_gone(&h, cut));
	h_feed(&h, wire + ISCSI_BHS_LEN + half, len - half);
	assert_false(sn_answered(&h, cut));
	gap = sn_tur_at(&h, exp);
	assert_true(sn_answered(&h, gap));
	next = sn_tur_at(&h, exp + 2);
	assert_true(sn_answered(&h, next));
	free(wire);
	sn_finish(&h, exp + 3);
}

/*
 * (c) RFC 7143 §11.5.1 b): an ABORT TASK whose RefCmdSN names a command not received yet,
 * in the window and below the TMF's CmdSN: Function complete, and that CmdSN counts as
 * received. The next command runs; the aborted one, if it comes after all, is ignored.
 */
static void test_abort_task_not_received(void **state)
{
	struct harness h;
	uint32_t exp, tmf, late, next;

	(void)state;
	sn_start(&h, &exp);
	/* The initiator gave CmdSN exp to a command it has not sent; the TMF's is exp + 1. */
	tmf = abort_unknown(&h, exp + 1, exp);
	assert_int_equal(sn_tmf_response(&h, tmf), ISCSI_TMF_RSP_COMPLETE);
	assert_int_equal(h.conn->sess->exp_cmd_sn, exp + 1);
	late = sn_tur_at(&h, exp);
	assert_false(sn_answered(&h, late));
	next = sn_tur_at(&h, exp + 1);
	assert_true(sn_answered(&h, next));
	sn_finish(&h, exp + 2);
}

/*
 * The same with the aborted CmdSN ahead of ExpCmdSN: it is passed when the gap before fills.
 * From @first: the CmdSNs may cross 2^32.
 */
static void abort_task_not_received_ahead(uint32_t first)
{
	struct harness h;
	uint32_t exp, tmf, gap, late, after, last;

	sn_start_at(&h, &exp, first);
	/* exp, exp + 1 and exp + 2 are given; exp + 1 is aborted before any arrives. */
	tmf = abort_unknown(&h, exp + 3, exp + 1);
	assert_int_equal(sn_tmf_response(&h, tmf), ISCSI_TMF_RSP_COMPLETE);
	assert_int_equal(h.conn->sess->exp_cmd_sn, exp);
	after = sn_tur_at(&h, exp + 2);
	assert_false(sn_answered(&h, after)); /* held: exp is missing */
	late = sn_tur_at(&h, exp + 1);	      /* a duplicate in the window */
	assert_false(sn_answered(&h, late));
	gap = sn_tur_at(&h, exp);
	assert_true(sn_answered(&h, gap));
	assert_true(sn_answered(&h, after));
	assert_false(sn_answered(&h, late));
	last = sn_tur_at(&h, exp + 3);
	assert_true(sn_answered(&h, last));
	sn_finish(&h, exp + 4);
}

static void test_abort_task_not_received_ahead(void **state)
{
	(void)state;
	abort_task_not_received_ahead(1);
}

static void test_abort_task_not_received_across_wrap(void **state)
{
	(void)state;
	abort_task_not_received_ahead(0xfffffffeu);
}

/*
 * RefCmdSN not below the TMF's CmdSN names no command issued before the TMF: "Task does not
 * exist", and the CmdSN stays free for the command that will carry it.
 */
static void test_abort_task_refcmdsn_not_before(void **state)
{
	struct harness h;
	uint32_t exp, tmf, next;

	(void)state;
	sn_start(&h, &exp);
	tmf = abort_unknown(&h, exp, exp);
	assert_int_equal(sn_tmf_response(&h, tmf), ISCSI_TMF_RSP_NO_TASK);
	tmf = abort_unknown(&h, exp, exp + 1);
	assert_int_equal(sn_tmf_response(&h, tmf), ISCSI_TMF_RSP_NO_TASK);
	/* Outside the window (§11.5.1 c). */
	tmf = abort_unknown(&h, exp, exp - 1);
	assert_int_equal(sn_tmf_response(&h, tmf), ISCSI_TMF_RSP_NO_TASK);
	next = sn_tur_at(&h, exp);
	assert_true(sn_answered(&h, next));
	next = sn_tur_at(&h, exp + 1);
	assert_true(sn_answered(&h, next));
	sn_finish(&h, exp + 2);
}

/*
 * review30b F9: the command aborted before it came (test_abort_task_not_received) arrives
 * after all, with unsolicited Data-Out behind it (InitialR2T=No). The command is ignored
 * silently (§3.2.2.1), and so is its data: no Reject of a Data-Out "for a task we do not
 * know". A Data-Out of a tag never seen is still rejected.
 */
static void test_late_command_data_ignored(void **state)
{
	uint8_t bhs[ISCSI_BHS_LEN], block[512];
	struct harness h;
	uint32_t exp, tmf, late, next;

	(void)state;
	memset(block, 0x3c, sizeof(block));
	sn_start(&h, &exp);
	tmf = abort_unknown(&h, exp + 1, exp);
	assert_int_equal(sn_tmf_response(&h, tmf), ISCSI_TMF_RSP_COMPLETE);
	/* A two-block WRITE: one block of immediate data, F=0, then one unsolicited Data-Out. */
	h_cmd_bhs(&h, bhs, ISCSI_CMD_FLAG_WRITE, 2 * sizeof(block), 0x2a, 0, 2);
	put_be32(&bhs[ISCSI_BHS_CMDSN], exp);
	late = h.itt;
	scsitgt__bhs_set_dsl(bhs, sizeof(block));
	h_send(&h, bhs, block, sizeof(block));
	scsitgt__bhs_init(bhs, ISCSI_OP_DATA_OUT, ISCSI_FLAG_FINAL);
	put_be32(&bhs[ISCSI_BHS_ITT], late);
	put_be32(&bhs[ISCSI_BHS_TTT], ISCSI_RESERVED_TAG);
	put_be32(&bhs[ISCSI_BHS_BUFFER_OFFSET], sizeof(block));
	scsitgt__bhs_set_dsl(bhs, sizeof(block));
	h_send(&h, bhs, block, sizeof(block));
	assert_int_equal(sn_reject_reason(&h, late, NULL), -1);
	assert_false(sn_answered(&h, late));
	/* Its sequence ended (F=1): a Data-Out with that tag now is for no task. */
	h_send(&h, bhs, block, sizeof(block));
	assert_int_not_equal(sn_reject_reason(&h, late, NULL), -1);
	next = sn_tur_at(&h, exp + 1);
	assert_true(sn_answered(&h, next));
	sn_finish(&h, exp + 2);
}

/* A duplicate of a held command, in the window: ignored (§3.2.2.1), never held beside it. */
static void test_duplicate_in_window(void **state)
{
	struct harness h;
	uint32_t exp, held, dup, gap, next;

	(void)state;
	sn_start(&h, &exp);
	held = sn_tur_at(&h, exp + 1);
	dup = sn_tur_at(&h, exp + 1);
	gap = sn_tur_at(&h, exp);
	assert_true(sn_answered(&h, gap));
	assert_true(sn_answered(&h, held));
	assert_false(sn_answered(&h, dup));
	next = sn_tur_at(&h, exp + 2);
	assert_true(sn_answered(&h, next));
	sn_finish(&h, exp + 3);
}

/* A gap filled by a non-immediate NOP-Out: the command held behind it runs. */
static void test_gap_filled_by_nop_out(void **state)
{
	struct harness h;
	uint32_t exp, held, nop;

	(void)state;
	sn_start(&h, &exp);
	held = sn_tur_at(&h, exp + 1);
	assert_false(sn_answered(&h, held));
	nop = sn_nop_at(&h, exp, 0);
	assert_true(sn_answered(&h, nop));
	assert_true(sn_answered(&h, held));
	sn_finish(&h, exp + 2);
}

/*
 * review30b F1: a non-immediate Logout at ExpCmdSN that does not end the session (its CID is not
 * this connection's: "CID not found", RFC 7143 §11.15.1; or "recovery not supported") passes
 * its CmdSN; the command held behind it runs after its answer.
 */
static void logout_not_ending(uint8_t reason, uint16_t cid, uint8_t want)
{
	struct harness h;
	uint32_t exp, held, lo;
	bool seen = false;

	sn_start(&h, &exp);
	held = sn_tur_at(&h, exp + 1);
	assert_false(sn_answered(&h, held));
	lo = sn_logout_at(&h, reason, cid, exp);
	for (unsigned int i = 0; i < h.npdus; i++) {
		const uint8_t *b = h.pdus[i].bhs;

		if (scsitgt__bhs_opcode(b) == ISCSI_OP_LOGOUT_RSP && scsitgt__bhs_itt(b) == lo) {
			assert_int_equal(b[ISCSI_LOGOUT_RSP_RESPONSE], want);
			seen = true;
		}
	}
	assert_true(seen);
	assert_true(sn_answered(&h, held));
	sn_finish(&h, exp + 2);
}

static void test_logout_not_ending_session(void **state)
{
	(void)state;
	logout_not_ending(ISCSI_LOGOUT_CLOSE_CONNECTION, 0x7777, ISCSI_LOGOUT_RSP_CID_NOT_FOUND);
	logout_not_ending(ISCSI_LOGOUT_REMOVE_FOR_RECOVERY, 0x7777,
			  ISCSI_LOGOUT_RSP_RECOVERY_UNSUPPORTED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_held_command_aborted),
		cmocka_unit_test(test_cut_command_ahead),
		cmocka_unit_test(test_abort_task_not_received),
		cmocka_unit_test(test_abort_task_not_received_ahead),
		cmocka_unit_test(test_abort_task_not_received_across_wrap),
		cmocka_unit_test(test_abort_task_refcmdsn_not_before),
		cmocka_unit_test(test_late_command_data_ignored),
		cmocka_unit_test(test_duplicate_in_window),
		cmocka_unit_test(test_gap_filled_by_nop_out),
		cmocka_unit_test(test_logout_not_ending_session),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
