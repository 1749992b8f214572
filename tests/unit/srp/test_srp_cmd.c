/* SPDX-License-Identifier: MIT */
/*
 * SRP_CMD and SRP_TSK_MGMT on a channel without an RDMA device (transport/srp/srp_cmd.c): a
 * port that never listens, a login admitted on home (no workers) and a channel whose QP is a
 * fake one (srp_harness.h): it records each work request and SEND's IU, and the test completes
 * them when it wants, so it decides when the send queue has room. Checked: what the channel
 * answers, and in which order (test_srp_data.c: the data it moves).
 *
 * An indirect table of more than 256 descriptors fails that command with CHECK
 * CONDITION, ILLEGAL REQUEST, INVALID FIELD IN COMMAND INFORMATION UNIT and keeps the channel
 * (review32 N8); a TMF response never overtakes the response of a task that completed before
 * the function but waits for send queue room (review32 N7).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/ua.h"
#include "libscsitgt/events.h"
#include "libscsitgt/stats.h"
#include "srp_harness.h"

/*
 * review32 N8: a WRITE whose indirect table holds 257 descriptors (one of them in the IU, as
 * ib_srp sends a long list) fails with CHECK CONDITION, ILLEGAL REQUEST, INVALID FIELD IN
 * COMMAND INFORMATION UNIT; the channel is not logged out and takes the next command.
 */
static void test_too_many_descriptors(void **state)
{
	static const uint8_t write10[16] = { 0x2a, 0, 0, 0, 0, 0, 0, 0, 8 };
	static const uint8_t tur[16] = { 0 };
	struct scsitgt__srp_desc d = { .va = 0x10000, .key = 7, .len = 4096 };
	struct scsitgt__srp_cmd_spec s;
	struct scsitgt__srp_rsp r;
	struct srp_cw w;

	(void)state;
	srp_cw_create(&w, "iqn.2026-12.org.example:srp-cmd");
	srp_cw_clear_ua(&w);
	memset(&s, 0, sizeof(s));
	s.out_fmt = SRP_DESC_INDIRECT;
	s.descs = &d;
	s.ndescs = 1;
	s.table.va = 0x20000;
	s.table.key = 9;
	s.table.len = (SRP_MAX_DESCRIPTORS + 1) * SRP_DIRECT_DESC_LEN;
	s.total_len = 4096;
	w.want_tag = srp_cw_send_spec(&w, &s, write10);
	assert_true(srp_cw_settle(&w, srp_cw_answered));
	assert_false(w.ch->closing);
	assert_true(srp_cw_rsp_of(s.tag, &r));
	assert_int_equal(r.status, 0x02); /* CHECK CONDITION */
	assert_true(r.sense_len >= 14);
	assert_int_equal(r.sense[2] & 0x0f, 0x05); /* ILLEGAL REQUEST */
	assert_int_equal(r.sense[12], 0x0e);
	assert_int_equal(r.sense[13], 0x03);
	/* No RDMA READ went out for it (only the response's SEND). */
	for (unsigned int i = 0; i < srp_rec.nwrs; i++)
		assert_int_equal(srp_rec.wrs[i].opcode, IBV_WR_SEND);
	srp_cw_complete_all(&w);
	/* The channel goes on. */
	w.want_tag = srp_cw_send_cmd(&w, tur);
	assert_true(srp_cw_settle(&w, srp_cw_answered));
	assert_true(srp_cw_rsp_of(w.want_tag, &r));
	assert_int_equal(r.status, 0);
	assert_false(w.ch->closing);
	srp_cw_destroy(&w);
}

static struct srp_task *first_waiting(struct srp_cw *w)
{
	if (scsitgt__list_empty(&w->ch->sendq))
		return NULL;
	return scsitgt__container_of(w->ch->sendq.next, struct srp_task, qnode);
}

static bool read_waits(struct srp_cw *w)
{
	return first_waiting(w) != NULL;
}

/* The TMF of want_tag ended: answered, or its response queued. */
static bool tmf_ended(struct srp_cw *w)
{
	return !scsitgt__list_empty(&w->ch->tmfq) || srp_cw_rsp_at(w->want_tag) >= 0;
}

/*
 * review32 N7: a READ completes first, but its Data-In (an RDMA WRITE) and SRP_RSP need two
 * send queue entries and only one is free: it waits in the send queue. A task management
 * function ending now (ABORT TASK SET, LOGICAL UNIT RESET) must not take that one entry: its
 * response goes after the READ's once room comes back (SAM-5: the responses of tasks that
 * completed before the function precede its own; ib_srp drops an SRP_RSP whose tag it already
 * gave up with the TMF). Then the same with no room at all, where only the pump decides.
 */
static void tmf_behind_waiting_read(uint8_t func, unsigned int room)
{
	static const uint8_t read10[16] = { 0x28, 0, 0, 0, 0, 0, 0, 0, 8 };
	static uint8_t ibuf[4096]; /* the initiator's buffer */
	struct scsitgt__srp_desc d = { .va = (uintptr_t)ibuf, .key = 7, .len = 4096 };
	struct scsitgt__srp_cmd_spec s;
	struct scsitgt__srp_rsp r;
	struct srp_cw w;
	uint64_t tmf;

	srp_cw_create(&w, "iqn.2026-12.org.example:srp-cmd");
	srp_cw_clear_ua(&w);
	w.ch->sq_free = room;
	memset(&s, 0, sizeof(s));
	s.in_fmt = SRP_DESC_DIRECT;
	s.descs = &d;
	s.ndescs = 1;
	s.total_len = 4096;
	srp_rec.nsends = 0;
	srp_cw_send_spec(&w, &s, read10);
	assert_true(srp_cw_settle(&w, read_waits));
	assert_int_equal(first_waiting(&w)->tag, s.tag);
	assert_int_equal(srp_rec.nsends, 0);
	tmf = srp_cw_send_tmf(&w, func, 0);
	w.want_tag = tmf;
	assert_true(srp_cw_settle(&w, tmf_ended));
	/* Room for everything: the pump runs as a completion's would. */
	w.ch->sq_free += SRP_CW_SQ_DEPTH - room;
	w.ch->busy++;
	scsitgt__srp_ch_leave(w.ch);
	assert_true(srp_cw_rsp_at(s.tag) >= 0);
	assert_true(srp_cw_rsp_at(tmf) >= 0);
	assert_true(srp_cw_rsp_at(s.tag) < srp_cw_rsp_at(tmf));
	assert_true(srp_cw_rsp_of(s.tag, &r));
	assert_int_equal(r.status, 0);
	assert_int_equal(r.data_in_res, 0);
	/* The WRITE of the Data-In went before the READ's SRP_RSP, in one chain. */
	assert_int_equal(srp_rec.wrs[0].opcode, IBV_WR_RDMA_WRITE);
	assert_int_equal(srp_rec.wrs[0].remote, d.va);
	assert_int_equal(srp_rec.wrs[0].len, 4096);
	assert_int_equal(srp_rec.wrs[1].opcode, IBV_WR_SEND);
	assert_false(w.ch->closing);
	srp_cw_destroy(&w);
}

static void test_tmf_behind_waiting_read(void **state)
{
	(void)state;
	tmf_behind_waiting_read(SRP_TSK_ABORT_TASK_SET, 1);
	tmf_behind_waiting_read(SRP_TSK_LUN_RESET, 1);
	tmf_behind_waiting_read(SRP_TSK_ABORT_TASK_SET, 0);
}

/* Kick the channel's pump as a completion's handler end would. */
static void pump(struct srp_cw *w)
{
	w->ch->busy++;
	scsitgt__srp_ch_leave(w->ch);
}

static bool ch_gone(struct srp_cw *w)
{
	return !srp_cw_has_ch(w);
}

/* The TMF of want_tag ended: answered, its response queued, or the channel closing. */
static bool tmf_over(struct srp_cw *w)
{
	return srp_rec.disconnects || tmf_ended(w);
}

/*
 * reviewe D2: the provider refuses the SEND of a TMF's response (not "no room": an error of
 * ibv_post_send()). SRP r16a §6.8 answers every SRP_TSK_MGMT, and its credit must not be lost
 * on a channel that goes on, so the channel closes, as it does for a command's response it
 * cannot post: answered at once (tmf_done()), or from the queue when the send queue was full
 * when the function ended (the pump). The closing channel flushes and goes.
 */
static void tmf_post_fails(bool queued)
{
	struct srp_cw w;
	uint64_t tmf;

	srp_cw_create(&w, "iqn.2026-12.org.example:srp-cmd");
	srp_cw_clear_ua(&w);
	srp_rec.nsends = 0;
	if (queued)
		w.ch->sq_free = 0; /* the response waits in ch->tmfq */
	else
		srp_rec.post_fail = 1;
	tmf = srp_cw_send_tmf(&w, SRP_TSK_LUN_RESET, 0);
	w.want_tag = tmf;
	assert_true(srp_cw_settle(&w, tmf_over));
	if (queued) {
		assert_false(scsitgt__list_empty(&w.ch->tmfq));
		assert_false(w.ch->closing);
		w.ch->sq_free = SRP_CW_SQ_DEPTH;
		srp_rec.post_fail = 1;
		pump(&w);
	}
	/* No response, and the channel goes (it may be freed already: nothing was posted). */
	assert_int_equal(srp_cw_rsp_at(tmf), -1);
	assert_int_equal(srp_rec.disconnects, 1);
	srp_cw_flush_all(&w);
	assert_true(srp_cw_settle(&w, ch_gone));
	srp_cw_destroy(&w);
}

static void test_tmf_post_fails(void **state)
{
	(void)state;
	tmf_post_fails(false);
	tmf_post_fails(true);
}

/*
 * reviewe N1: SRP_TSK_MGMT byte 1 carries SCSOLNT and UCSOLNT as SRP_CMD does. Its SRP_RSP sets
 * SOLNT, and its SEND asks for a solicited event, when the bit of the function's outcome is
 * set: FUNCTION COMPLETE with SCSOLNT, NOT SUPPORTED with UCSOLNT; not for the other bit.
 */
/* Send @tm and wait for its answer, decoded (four bytes of response data). */
static struct scsitgt__srp_rsp tmf_answer(struct srp_cw *w, struct scsitgt__srp_tsk_mgmt *tm)
{
	struct scsitgt__srp_rsp r;

	w->want_tag = srp_cw_send_tm(w, tm);
	assert_true(srp_cw_settle(w, srp_cw_answered));
	assert_true(srp_cw_rsp_of(w->want_tag, &r));
	assert_int_equal(r.resp_len, SRP_RSP_DATA_LEN);
	return r;
}

static void tmf_solnt(struct srp_cw *w, uint8_t func, uint8_t sol_not, uint8_t code, bool want)
{
	struct scsitgt__srp_tsk_mgmt tm;
	struct scsitgt__srp_rsp r;

	memset(&tm, 0, sizeof(tm));
	tm.func = func;
	tm.sol_not = sol_not;
	r = tmf_answer(w, &tm);
	assert_int_equal(r.resp_data[3], code);
	assert_int_equal(r.sol_not, want);
	assert_int_equal(srp_rec.sends[srp_cw_rsp_at(tm.tag)].solicited, want);
	srp_cw_complete_all(w);
}

static void test_tmf_solnt(void **state)
{
	struct srp_cw w;

	(void)state;
	srp_cw_create(&w, "iqn.2026-12.org.example:srp-cmd");
	srp_cw_clear_ua(&w);
	srp_rec.nsends = 0;
	tmf_solnt(&w, SRP_TSK_LUN_RESET, SRP_SOLNT_SC, SRP_RSP_CODE_COMPLETE, true);
	tmf_solnt(&w, SRP_TSK_LUN_RESET, SRP_SOLNT_UC, SRP_RSP_CODE_COMPLETE, false);
	tmf_solnt(&w, SRP_TSK_LUN_RESET, 0, SRP_RSP_CODE_COMPLETE, false);
	tmf_solnt(&w, 0x7f, SRP_SOLNT_UC, SRP_RSP_CODE_NOT_SUPPORTED, true);
	tmf_solnt(&w, 0x7f, SRP_SOLNT_SC, SRP_RSP_CODE_NOT_SUPPORTED, false);
	srp_cw_destroy(&w);
}

/* TMF events the host's callback saw (the function of the last). */
static unsigned int tmf_events;
static uint64_t tmf_event_lun;

static void on_event(void *arg, const struct scsitgt_event *ev)
{
	(void)arg;
	if (ev->type != SCSITGT_EVENT_TMF)
		return;
	tmf_events++;
	tmf_event_lun = ev->lun_id;
}

static uint64_t lun_tmfs(struct srp_cw *w)
{
	struct scsitgt_lun_stats st;

	memset(&st, 0, sizeof(st));
	st.size = sizeof(st);
	assert_int_equal(scsitgt_lun_get_stats(w->lun, &st), 0);
	return st.cmds.tmfs;
}

/* An ABORT TASK of @task_tag on LUN @lun; the RSP CODE of its answer. */
static uint8_t abort_task(struct srp_cw *w, uint8_t lun, uint64_t task_tag)
{
	struct scsitgt__srp_tsk_mgmt tm;
	uint8_t code;

	memset(&tm, 0, sizeof(tm));
	tm.func = SRP_TSK_ABORT_TASK;
	tm.task_tag = task_tag;
	tm.lun[1] = lun; /* peripheral addressing, SAM-5 §4.7 */
	code = tmf_answer(w, &tm).resp_data[3];
	srp_cw_complete_all(w);
	return code;
}

/*
 * reviewe N3: an ABORT TASK naming a tag the nexus has no task of goes through the core as
 * every other function does: the host's TMF event and the LUN's statistics count it, it is
 * answered FUNCTION COMPLETE on an existing LUN (SAM-5 §7.2: nothing to abort), and INCORRECT
 * LOGICAL UNIT NUMBER (09h) on one that does not exist, as the same function naming a task
 * there would be. The same for the tag of a task whose response is out already.
 */
static void test_abort_unknown_tag(void **state)
{
	static const uint8_t tur[16] = { 0 };
	struct srp_cw w;
	uint64_t done;

	(void)state;
	srp_cw_create(&w, "iqn.2026-12.org.example:srp-cmd");
	srp_cw_clear_ua(&w);
	tmf_events = 0;
	assert_int_equal(scsitgt_engine_set_event_cb(w.base.engine, on_event, NULL), 0);
	srp_rec.nsends = 0;
	assert_int_equal(abort_task(&w, 0, 0x4242), SRP_RSP_CODE_COMPLETE);
	assert_int_equal(tmf_events, 1);
	assert_int_equal(tmf_event_lun, 0);
	assert_int_equal(lun_tmfs(&w), 1);
	assert_int_equal(abort_task(&w, 5, 0x4242), SRP_RSP_CODE_INCORRECT_LUN);
	assert_int_equal(tmf_events, 2);
	assert_int_equal(tmf_event_lun, 5);
	/* A command answered (its SEND not completed yet): its tag names no task to abort. */
	w.want_tag = done = srp_cw_send_cmd(&w, tur);
	assert_true(srp_cw_settle(&w, srp_cw_answered));
	assert_int_equal(abort_task(&w, 0, done), SRP_RSP_CODE_COMPLETE);
	assert_int_equal(tmf_events, 3);
	assert_int_equal(lun_tmfs(&w), 2);
	assert_false(w.ch->closing);
	assert_int_equal(scsitgt_engine_set_event_cb(w.base.engine, NULL, NULL), 0);
	srp_cw_destroy(&w);
}

/* The SRP_AER_REQs recorded so far. */
static unsigned int aer_reqs(void)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < srp_rec.nsends; i++)
		n += srp_rec.sends[i].iu[0] == SRP_IU_AER_REQ;
	return n;
}

static bool aer_sent(struct srp_cw *w)
{
	(void)w;
	return aer_reqs() > 0;
}

/*
 * reviewe N2: a unit attention the core raises for the nexus (the fabric's unit_attention
 * hook) goes out as an SRP_AER_REQ only when the port asks for it (scsitgt_srp_portal_opts.aer,
 * default off: Linux ib_srp logs each one as an error and drops it). Either way the next
 * command to the LUN reports it (CHECK CONDITION, UNIT ATTENTION).
 */
static void aer_opt(bool aer)
{
	static const uint8_t tur[16] = { 0 };
	struct scsitgt__srp_rsp r;
	uint8_t iu[16], lun[8];
	const uint8_t *sense;
	uint32_t delta, slen;
	struct srp_cw w;
	uint64_t tag;
	int at;

	srp_cw_create(&w, "iqn.2026-12.org.example:srp-cmd");
	srp_cw_clear_ua(&w);
	w.base.port->opts.aer = aer;
	srp_rec.nsends = 0;
	scsitgt__ua_establish(w.nx->core, 0, SCSITGT__SR_UA_CAPACITY_CHANGED);
	assert_int_equal(srp_cw_settle(&w, aer_sent), aer);
	if (aer) {
		assert_int_equal(aer_reqs(), 1);
		at = 0;
		assert_int_equal(scsitgt__srp_aer_req_decode(srp_rec.sends[at].iu,
							     srp_rec.sends[at].len, &delta, &tag,
							     lun, &sense, &slen),
				 0);
		assert_true(slen >= 14);
		assert_int_equal(sense[2] & 0x0f, 0x06); /* UNIT ATTENTION */
		assert_int_equal(sense[12], 0x2a);	 /* CAPACITY DATA HAS CHANGED */
		assert_int_equal(sense[13], 0x09);
		srp_cw_complete_all(&w);
		/* The initiator answers (SRP_AER_RSP, no credit). */
		scsitgt__srp_simple_rsp_encode(iu, SRP_IU_AER_RSP, tag);
		srp_cw_deliver_rc(&w, iu, sizeof(iu), 0);
		assert_int_equal(w.ch->tgt_reqs, 0);
	}
	w.want_tag = srp_cw_send_cmd(&w, tur);
	assert_true(srp_cw_settle(&w, srp_cw_answered));
	assert_true(srp_cw_rsp_of(w.want_tag, &r));
	assert_int_equal(r.status, 0x02);
	assert_true(r.sense_len >= 14);
	assert_int_equal(r.sense[2] & 0x0f, 0x06);
	assert_int_equal(r.sense[12], 0x2a);
	assert_false(w.ch->closing);
	srp_cw_destroy(&w);
}

static void test_aer_opt_in(void **state)
{
	(void)state;
	aer_opt(false);
	aer_opt(true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_too_many_descriptors),
		cmocka_unit_test(test_tmf_behind_waiting_read),
		cmocka_unit_test(test_tmf_post_fails),
		cmocka_unit_test(test_tmf_solnt),
		cmocka_unit_test(test_abort_unknown_tag),
		cmocka_unit_test(test_aer_opt_in),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
