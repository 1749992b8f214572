/* SPDX-License-Identifier: MIT */
/*
 * Every non-immediate PDU is delivered in CmdSN order (RFC 7143 §3.2.2.1, §4.2.2.1), control
 * PDUs as much as SCSI Commands: a NOP-Out ping, Text Request, Logout Request or TMF Request
 * ahead of ExpCmdSN in the window is held until the gap before it fills, then runs in its
 * turn (it was rejected); it holds a window slot meanwhile, and the session's held data is
 * bounded. One at the CmdSN after a non-immediate TMF that is still acting waits for it
 * (§11.5.1). And an ABORT TASK that plugs a gap left by a command rejected for reusing a live
 * tag leaves the live task alone: RefCmdSN names the command in the gap (§11.5.1 b, §11.5.4).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "iscsi_harness.h"
#include "libscsitgt/backend_fault.h"
#include "sn_harness.h"

/* Where the target's answer to @itt is among its PDUs, or -1. */
static int answer_at(const struct harness *h, uint32_t itt)
{
	for (unsigned int i = 0; i < h->npdus; i++) {
		const uint8_t *b = h->pdus[i].bhs;
		uint8_t op = scsitgt__bhs_opcode(b);

		if (scsitgt__bhs_itt(b) == itt && op != ISCSI_OP_R2T && op != ISCSI_OP_REJECT)
			return (int)i;
	}
	return -1;
}

/*
 * A NOP-Out ping ahead of ExpCmdSN is held, not rejected: no answer, a window slot taken,
 * its CmdSN taken (the same again is a duplicate). The command that fills the gap runs, then
 * the ping is answered, with its data, and with ExpCmdSN past both.
 */
static void test_nop_held_until_gap_fills(void **state)
{
	struct harness h;
	uint32_t exp, nop, dup, plug;
	int at;

	(void)state;
	sn_start(&h, &exp);
	nop = sn_nop_at(&h, exp + 1, 16);
	assert_int_equal(sn_reject_reason(&h, nop, NULL), -1);
	assert_false(sn_answered(&h, nop));
	assert_int_equal(h.conn->sess->active, 1);
	dup = sn_nop_at(&h, exp + 1, 0);
	assert_int_equal(sn_reject_reason(&h, dup, NULL), -1);
	assert_false(sn_answered(&h, dup));
	plug = sn_tur_at(&h, exp);
	assert_true(sn_good(&h, plug));
	at = answer_at(&h, nop);
	assert_true(at > answer_at(&h, plug));
	assert_int_equal(scsitgt__bhs_opcode(h.pdus[at].bhs), ISCSI_OP_NOP_IN);
	assert_int_equal(h.pdus[at].len, 16);
	assert_int_equal(h.pdus[at].data[15], 0x5a);
	assert_int_equal(get_be32(&h.pdus[at].bhs[ISCSI_BHS_EXPCMDSN]), exp + 2);
	assert_false(sn_answered(&h, dup));
	sn_finish(&h, exp + 2);
}

/* A Text Request (SendTargets in a normal session) ahead of ExpCmdSN waits for its turn. */
static void test_text_held_until_gap_fills(void **state)
{
	char text[64];
	struct harness h;
	uint32_t exp, tx, plug, len;
	int at;

	(void)state;
	sn_start(&h, &exp);
	len = h_text(text, sizeof(text), "SendTargets=All");
	tx = sn_text_at(&h, exp + 1, ISCSI_RESERVED_TAG, text, len);
	assert_int_equal(sn_reject_reason(&h, tx, NULL), -1);
	assert_false(sn_answered(&h, tx));
	plug = sn_tur_at(&h, exp);
	assert_true(sn_good(&h, plug));
	at = answer_at(&h, tx);
	assert_true(at > answer_at(&h, plug));
	assert_int_equal(scsitgt__bhs_opcode(h.pdus[at].bhs), ISCSI_OP_TEXT_RSP);
	assert_string_equal(h_find_key(&h.pdus[at], "TargetName"), H_TARGET);
	sn_finish(&h, exp + 2);
}

/*
 * A Logout (close the session) ahead of ExpCmdSN, with a command held behind it: when the gap
 * fills, the Logout runs in its turn, and the command after it never does.
 */
static void test_logout_held_ends_in_turn(void **state)
{
	struct harness h;
	uint32_t exp, lo, after, plug;
	int at;

	(void)state;
	sn_start(&h, &exp);
	lo = sn_logout_at(&h, ISCSI_LOGOUT_CLOSE_SESSION, 0, exp + 1);
	after = sn_tur_at(&h, exp + 2);
	assert_int_equal(sn_reject_reason(&h, lo, NULL), -1);
	assert_false(sn_answered(&h, lo));
	assert_int_equal(h.conn->sess->active, 2);
	plug = sn_tur_at(&h, exp);
	assert_true(sn_good(&h, plug));
	at = answer_at(&h, lo);
	assert_true(at > answer_at(&h, plug));
	assert_int_equal(scsitgt__bhs_opcode(h.pdus[at].bhs), ISCSI_OP_LOGOUT_RSP);
	assert_int_equal(h.pdus[at].bhs[ISCSI_LOGOUT_RSP_RESPONSE], ISCSI_LOGOUT_RSP_SUCCESS);
	assert_false(sn_answered(&h, after));
	h_pump(&h);
	assert_true(h_conn_gone(&h));
	h_fini(&h);
}

/*
 * A non-immediate ABORT TASK SET ahead of ExpCmdSN, a command held behind it: in its turn the
 * TMF acts (after the plug, before the command behind it, which it spares).
 */
static void test_tmf_held_in_order(void **state)
{
	struct harness h;
	uint32_t exp, tmf, after, plug;

	(void)state;
	sn_start(&h, &exp);
	tmf = sn_tmf_at(&h, ISCSI_TMF_ABORT_TASK_SET, exp + 1, false);
	after = sn_tur_at(&h, exp + 2);
	assert_int_equal(sn_reject_reason(&h, tmf, NULL), -1);
	assert_int_equal(sn_tmf_response(&h, tmf), -1);
	plug = sn_tur_at(&h, exp);
	assert_true(sn_good(&h, plug));
	assert_int_equal(sn_tmf_response(&h, tmf), ISCSI_TMF_RSP_COMPLETE);
	assert_true(sn_good(&h, after));
	assert_true(answer_at(&h, plug) < answer_at(&h, tmf));
	assert_true(answer_at(&h, tmf) < answer_at(&h, after));
	sn_finish(&h, exp + 3);
}

/*
 * A non-immediate TARGET COLD RESET held, a command behind it: in its turn it resets and its
 * connection closes once its answer is out; the command behind it never runs.
 */
static void test_cold_reset_held_ends_in_turn(void **state)
{
	struct harness h;
	uint32_t exp, tmf, after, plug;

	(void)state;
	sn_start(&h, &exp);
	tmf = sn_tmf_at(&h, ISCSI_TMF_TARGET_COLD_RESET, exp + 1, false);
	after = sn_tur_at(&h, exp + 2);
	plug = sn_tur_at(&h, exp);
	assert_true(sn_good(&h, plug));
	assert_int_equal(sn_tmf_response(&h, tmf), ISCSI_TMF_RSP_COMPLETE);
	assert_false(sn_answered(&h, after));
	h_pump(&h);
	assert_true(h_conn_gone(&h));
	assert_false(sn_answered(&h, after));
	h_fini(&h);
}

/*
 * The data of held PDUs is bounded by max_write_buffer_bytes: a ping that would pass it is
 * refused (Out of resources), its CmdSN not received (RFC 7143 §7.3); sent again once the
 * first ran, it is answered.
 */
static void test_held_data_bounded(void **state)
{
	struct scsitgt_iscsi_params p;
	struct harness h;
	uint32_t exp, first, over, plug, again;

	(void)state;
	assert_int_equal(h_init(&h, true), 0);
	scsitgt_iscsi_params_init(&p, sizeof(p));
	p.max_write_buffer_bytes = 1000;
	assert_int_equal(scsitgt_iscsi_target_set_params(h.tgt, &p), 0);
	assert_int_equal(h_login(&h, "Normal"), 0);
	exp = h.conn->sess->exp_cmd_sn;
	first = sn_nop_at(&h, exp + 1, 600);
	over = sn_nop_at(&h, exp + 2, 600);
	assert_int_equal(sn_reject_reason(&h, first, NULL), -1);
	assert_int_equal(sn_reject_reason(&h, over, NULL), ISCSI_REJECT_OUT_OF_RESOURCES);
	assert_int_equal(h.conn->sess->exp_cmd_sn, exp);
	assert_int_equal(h.conn->sess->active, 1);
	plug = sn_tur_at(&h, exp);
	assert_true(sn_good(&h, plug));
	assert_true(sn_answered(&h, first));
	assert_false(sn_answered(&h, over));
	again = sn_nop_at(&h, exp + 2, 600);
	assert_true(sn_answered(&h, again));
	sn_finish(&h, exp + 3);
}

/*
 * A NOP-Out at the CmdSN after a non-immediate ABORT TASK SET that waits for a WRITE in a
 * backend (held there by the fault backend): it waits behind the TMF (it was rejected), and
 * runs once the backend lets the WRITE go and the TMF has acted. The CmdSN after it used up
 * meanwhile does not let it pass the TMF either.
 */
static void test_nop_waits_behind_tmf(void **state)
{
	struct harness h;
	uint32_t exp, w, tmf, nop, abort;
	void *fault;

	(void)state;
	/* A one-block WRITE (10) with its data immediate: into the backend, which holds it. */
	w = sn_start_held_write(&h, &exp, &fault);
	tmf = sn_tmf_at(&h, ISCSI_TMF_ABORT_TASK_SET, exp + 1, false);
	assert_int_equal(sn_tmf_response(&h, tmf), -1);
	nop = sn_nop_at(&h, exp + 2, 0);
	assert_int_equal(sn_reject_reason(&h, nop, NULL), -1);
	assert_false(sn_answered(&h, nop));
	assert_int_equal(h.conn->sess->exp_cmd_sn, exp + 1);
	/* An immediate ABORT TASK using up a later CmdSN (§11.5.1 b) drains: still nothing
	 * passes the TMF that has not acted. */
	abort = sn_abort_task(&h, exp + 4, 0x7f000000u, exp + 3);
	assert_int_equal(sn_tmf_response(&h, abort), ISCSI_TMF_RSP_COMPLETE);
	assert_false(sn_answered(&h, nop));
	assert_int_equal(h.conn->sess->exp_cmd_sn, exp + 1);
	assert_int_equal(scsitgt_backend_fault_release(fault, 0, 0), 1);
	for (int i = 0; i < 100 && !sn_answered(&h, nop); i++)
		h_pump(&h);
	assert_int_equal(sn_tmf_response(&h, tmf), ISCSI_TMF_RSP_COMPLETE);
	assert_true(sn_answered(&h, nop));
	assert_false(sn_answered(&h, w)); /* aborted by the TMF: no response (SAM-5) */
	assert_true(h_task_gone(&h, w));
	sn_finish(&h, exp + 4);
}

/*
 * A command reusing the tag of a live task (a WRITE running, waiting for its data; or a
 * command held for its turn) is rejected ("Task in progress"), its CmdSN a gap. The initiator
 * plugs it with an ABORT TASK of that tag whose RefCmdSN is the rejected command's: that
 * names the command in the gap, not a task (RFC 7143 §11.5.1 b): Function complete, the
 * CmdSN used up, and the live task is untouched (it was aborted, and the gap stayed).
 */
static void test_abort_plug_spares_running_tag(void **state)
{
	struct harness h;
	uint32_t exp, w, ttt, tmf, next;

	(void)state;
	w = sn_start_write(&h, &exp, &ttt);
	sn_tur_itt(&h, exp + 1, w);
	assert_int_equal(sn_reject_reason(&h, w, NULL), ISCSI_REJECT_TASK_IN_PROGRESS);
	assert_int_equal(h.conn->sess->exp_cmd_sn, exp + 1);
	tmf = sn_abort_task(&h, exp + 2, w, exp + 1);
	assert_int_equal(sn_tmf_response(&h, tmf), ISCSI_TMF_RSP_COMPLETE);
	assert_non_null(scsitgt__iscsi_task_find(h.conn, w));
	assert_int_equal(h.conn->sess->exp_cmd_sn, exp + 2);
	sn_write_data(&h, w, ttt);
	assert_true(h_task_gone(&h, w));
	assert_true(sn_good(&h, w));
	next = sn_tur_at(&h, exp + 2);
	assert_true(sn_good(&h, next));
	sn_finish(&h, exp + 3);
}

static void test_abort_plug_spares_held_tag(void **state)
{
	struct harness h;
	uint32_t exp, held, tmf;

	(void)state;
	sn_start(&h, &exp);
	held = sn_tur_at(&h, exp + 1);
	sn_tur_itt(&h, exp, held);
	assert_int_equal(sn_reject_reason(&h, held, NULL), ISCSI_REJECT_TASK_IN_PROGRESS);
	tmf = sn_abort_task(&h, exp + 2, held, exp);
	assert_int_equal(sn_tmf_response(&h, tmf), ISCSI_TMF_RSP_COMPLETE);
	/* The gap is plugged: the held command, never the victim, runs in its turn. */
	assert_true(sn_good(&h, held));
	sn_finish(&h, exp + 2);
}

/* An ABORT TASK whose tag and RefCmdSN both name the held command still aborts it. */
static void test_abort_task_names_held(void **state)
{
	struct harness h;
	uint32_t exp, held, tmf;

	(void)state;
	sn_start(&h, &exp);
	held = sn_tur_at(&h, exp + 1);
	tmf = sn_abort_task(&h, exp + 2, held, exp + 1);
	assert_int_equal(sn_tmf_response(&h, tmf), ISCSI_TMF_RSP_COMPLETE);
	sn_assert_held_aborted(&h, held, exp);
	sn_finish(&h, exp + 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nop_held_until_gap_fills),
		cmocka_unit_test(test_text_held_until_gap_fills),
		cmocka_unit_test(test_logout_held_ends_in_turn),
		cmocka_unit_test(test_tmf_held_in_order),
		cmocka_unit_test(test_cold_reset_held_ends_in_turn),
		cmocka_unit_test(test_held_data_bounded),
		cmocka_unit_test(test_nop_waits_behind_tmf),
		cmocka_unit_test(test_abort_plug_spares_running_tag),
		cmocka_unit_test(test_abort_plug_spares_held_tag),
		cmocka_unit_test(test_abort_task_names_held),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
