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

/* Whether the target answered @itt (SCSI Response, Data-In with status, NOP-In, TMF). */
static bool answered(const struct harness *h, uint32_t itt)
{
	for (unsigned int i = 0; i < h->npdus; i++) {
		const uint8_t *b = h->pdus[i].bhs;
		uint8_t op = scsitgt__bhs_opcode(b);

		if (scsitgt__bhs_itt(b) != itt)
			continue;
		if (op == ISCSI_OP_SCSI_RSP || op == ISCSI_OP_NOP_IN || op == ISCSI_OP_TMF_RSP ||
		    (op == ISCSI_OP_DATA_IN && (b[ISCSI_BHS_FLAGS] & ISCSI_DATAIN_FLAG_STATUS)))
			return true;
	}
	return false;
}

/* The TMF response to @itt, or -1. */
static int tmf_response(const struct harness *h, uint32_t itt)
{
	for (unsigned int i = 0; i < h->npdus; i++) {
		const uint8_t *b = h->pdus[i].bhs;

		if (scsitgt__bhs_opcode(b) == ISCSI_OP_TMF_RSP && scsitgt__bhs_itt(b) == itt)
			return b[ISCSI_RSP_RESPONSE];
	}
	return -1;
}

/* A TEST UNIT READY with CmdSN @sn and a fresh ITT, which it returns. */
static uint32_t tur_at(struct harness *h, uint32_t sn)
{
	uint8_t bhs[ISCSI_BHS_LEN];

	h_cmd_bhs(h, bhs, ISCSI_FLAG_FINAL, 0, 0x00, 0, 0);
	put_be32(&bhs[ISCSI_BHS_CMDSN], sn);
	h_send(h, bhs, NULL, 0);
	return h->itt;
}

/* An immediate ABORT TASK of @rtt (which the target does not know) with CmdSN @sn. */
static uint32_t abort_unknown(struct harness *h, uint32_t sn, uint32_t ref_cmd_sn)
{
	uint8_t bhs[ISCSI_BHS_LEN];

	scsitgt__bhs_init(bhs, ISCSI_OP_TMF_REQ | ISCSI_FLAG_IMMEDIATE,
			  ISCSI_FLAG_FINAL | ISCSI_TMF_ABORT_TASK);
	put_be32(&bhs[ISCSI_BHS_ITT], ++h->itt);
	put_be32(&bhs[ISCSI_TMF_RTT], 0x7f000000u + h->itt);
	put_be32(&bhs[ISCSI_BHS_CMDSN], sn);
	put_be32(&bhs[ISCSI_TMF_REFCMDSN], ref_cmd_sn);
	h_send(h, bhs, NULL, 0);
	return h->itt;
}

/* A session whose first CmdSN is @first. */
static void start_at(struct harness *h, uint32_t *exp, uint32_t first)
{
	assert_int_equal(h_init(h, true), 0);
	h->cmd_sn = first;
	assert_int_equal(h_login(h, "Normal"), 0);
	*exp = h->conn->sess->exp_cmd_sn;
	assert_int_equal(*exp, first);
}

static void start(struct harness *h, uint32_t *exp)
{
	assert_int_equal(h_init(h, true), 0);
	assert_int_equal(h_login(h, "Normal"), 0);
	*exp = h->conn->sess->exp_cmd_sn;
}

/* The session is idle and ExpCmdSN is @want. */
static void finish(struct harness *h, uint32_t want)
{
	assert_int_equal(h->conn->sess->exp_cmd_sn, want);
	assert_true(scsitgt__list_empty(&h->conn->sess->pending));
	assert_int_equal(h->conn->ntasks, 0);
	assert_int_equal(h->conn->sess->active, 0);
	assert_false(h_conn_gone(h));
	h_fini(h);
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
	start(&h, &exp);
	held = tur_at(&h, exp + 1);
	assert_false(answered(&h, held));
	assert_false(scsitgt__list_empty(&h.conn->sess->pending));
	assert_int_equal(scsitgt_lun_apply_reset(scsitgt__target_find_lun(h.tgt, 0)), 0);
	assert_true(h_task_gone(&h, held));
	assert_true(scsitgt__list_empty(&h.conn->sess->pending));
	gap = tur_at(&h, exp);
	assert_true(answered(&h, gap));
	assert_false(answered(&h, held)); /* aborted by another nexus: no response (SAM-5) */
	next = tur_at(&h, exp + 2);
	assert_true(answered(&h, next));
	finish(&h, exp + 3);
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
	start(&h, &exp);
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
	assert_false(answered(&h, cut));
	gap = tur_at(&h, exp);
	assert_true(answered(&h, gap));
	next = tur_at(&h, exp + 2);
	assert_true(answered(&h, next));
	free(wire);
	finish(&h, exp + 3);
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
	start(&h, &exp);
	/* The initiator gave CmdSN exp to a command it has not sent; the TMF's is exp + 1. */
	tmf = abort_unknown(&h, exp + 1, exp);
	assert_int_equal(tmf_response(&h, tmf), ISCSI_TMF_RSP_COMPLETE);
	assert_int_equal(h.conn->sess->exp_cmd_sn, exp + 1);
	late = tur_at(&h, exp);
	assert_false(answered(&h, late));
	next = tur_at(&h, exp + 1);
	assert_true(answered(&h, next));
	finish(&h, exp + 2);
}

/*
 * The same with the aborted CmdSN ahead of ExpCmdSN: it is passed when the gap before fills.
 * From @first: the CmdSNs may cross 2^32.
 */
static void abort_task_not_received_ahead(uint32_t first)
{
	struct harness h;
	uint32_t exp, tmf, gap, late, after, last;

	start_at(&h, &exp, first);
	/* exp, exp + 1 and exp + 2 are given; exp + 1 is aborted before any arrives. */
	tmf = abort_unknown(&h, exp + 3, exp + 1);
	assert_int_equal(tmf_response(&h, tmf), ISCSI_TMF_RSP_COMPLETE);
	assert_int_equal(h.conn->sess->exp_cmd_sn, exp);
	after = tur_at(&h, exp + 2);
	assert_false(answered(&h, after)); /* held: exp is missing */
	late = tur_at(&h, exp + 1);	   /* a duplicate in the window */
	assert_false(answered(&h, late));
	gap = tur_at(&h, exp);
	assert_true(answered(&h, gap));
	assert_true(answered(&h, after));
	assert_false(answered(&h, late));
	last = tur_at(&h, exp + 3);
	assert_true(answered(&h, last));
	finish(&h, exp + 4);
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
	start(&h, &exp);
	tmf = abort_unknown(&h, exp, exp);
	assert_int_equal(tmf_response(&h, tmf), ISCSI_TMF_RSP_NO_TASK);
	tmf = abort_unknown(&h, exp, exp + 1);
	assert_int_equal(tmf_response(&h, tmf), ISCSI_TMF_RSP_NO_TASK);
	/* Outside the window (§11.5.1 c). */
	tmf = abort_unknown(&h, exp, exp - 1);
	assert_int_equal(tmf_response(&h, tmf), ISCSI_TMF_RSP_NO_TASK);
	next = tur_at(&h, exp);
	assert_true(answered(&h, next));
	next = tur_at(&h, exp + 1);
	assert_true(answered(&h, next));
	finish(&h, exp + 2);
}

/* A duplicate of a held command, in the window: ignored (§3.2.2.1), never held beside it. */
static void test_duplicate_in_window(void **state)
{
	struct harness h;
	uint32_t exp, held, dup, gap, next;

	(void)state;
	start(&h, &exp);
	held = tur_at(&h, exp + 1);
	dup = tur_at(&h, exp + 1);
	gap = tur_at(&h, exp);
	assert_true(answered(&h, gap));
	assert_true(answered(&h, held));
	assert_false(answered(&h, dup));
	next = tur_at(&h, exp + 2);
	assert_true(answered(&h, next));
	finish(&h, exp + 3);
}

/* A gap filled by a non-immediate NOP-Out: the command held behind it runs. */
static void test_gap_filled_by_nop_out(void **state)
{
	uint8_t bhs[ISCSI_BHS_LEN];
	struct harness h;
	uint32_t exp, held, nop;

	(void)state;
	start(&h, &exp);
	held = tur_at(&h, exp + 1);
	assert_false(answered(&h, held));
	scsitgt__bhs_init(bhs, ISCSI_OP_NOP_OUT, ISCSI_FLAG_FINAL);
	nop = ++h.itt;
	put_be32(&bhs[ISCSI_BHS_ITT], nop);
	put_be32(&bhs[ISCSI_BHS_TTT], ISCSI_RESERVED_TAG);
	put_be32(&bhs[ISCSI_BHS_CMDSN], exp);
	h_send(&h, bhs, NULL, 0);
	assert_true(answered(&h, nop));
	assert_true(answered(&h, held));
	finish(&h, exp + 2);
}

/*
 * review30b F1: a non-immediate Logout at ExpCmdSN that does not end the session (its CID is not
 * this connection's: "CID not found", RFC 7143 §11.15.1; or "recovery not supported") passes
 * its CmdSN; the command held behind it runs after its answer.
 */
static void logout_not_ending(uint8_t reason, uint16_t cid, uint8_t want)
{
	uint8_t bhs[ISCSI_BHS_LEN];
	struct harness h;
	uint32_t exp, held, lo;
	bool seen = false;

	start(&h, &exp);
	held = tur_at(&h, exp + 1);
	assert_false(answered(&h, held));
	scsitgt__bhs_init(bhs, ISCSI_OP_LOGOUT_REQ, ISCSI_FLAG_FINAL | reason);
	lo = ++h.itt;
	put_be32(&bhs[ISCSI_BHS_ITT], lo);
	put_be16(&bhs[ISCSI_LOGOUT_CID], cid);
	put_be32(&bhs[ISCSI_BHS_CMDSN], exp);
	h_send(&h, bhs, NULL, 0);
	for (unsigned int i = 0; i < h.npdus; i++) {
		const uint8_t *b = h.pdus[i].bhs;

		if (scsitgt__bhs_opcode(b) == ISCSI_OP_LOGOUT_RSP && scsitgt__bhs_itt(b) == lo) {
			assert_int_equal(b[ISCSI_LOGOUT_RSP_RESPONSE], want);
			seen = true;
		}
	}
	assert_true(seen);
	assert_true(answered(&h, held));
	finish(&h, exp + 2);
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
		cmocka_unit_test(test_duplicate_in_window),
		cmocka_unit_test(test_gap_filled_by_nop_out),
		cmocka_unit_test(test_logout_not_ending_session),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
