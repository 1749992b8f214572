/* SPDX-License-Identifier: MIT */
/*
 * The task_gone hook of the data-mover seam (transport/iscsi/datamover.h; review32 R4): a task
 * that ends without a response (ABORT TASK, ABORT TASK SET, LOGICAL UNIT RESET, an abort from
 * another nexus) is reported to the data mover with its ITT, before the response of the TMF
 * that ended it is handed to xmit, so that iSER drops the RDMA READs still queued for its
 * R2Ts before that response goes on the wire. A task that ends with its response is never
 * reported (the initiator may reuse its ITT as soon as it has the response). A recording data
 * mover on the iSCSI harness: the iSCSI side is real, the data mover is fake.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../iscsi/iscsi_harness.h"
#include "../iscsi/sn_harness.h"

#define LOG_MAX 256

/* What the data mover saw, in order: a PDU handed to xmit, or a task_gone. */
static struct {
	struct {
		bool gone; /* task_gone(itt); else a PDU of opcode op for itt */
		uint8_t op;
		uint32_t itt;
	} ev[LOG_MAX];
	unsigned int n;
} rec;

static void rec_xmit(struct scsitgt__iscsi_conn *conn, struct scsitgt__iscsi_tx *tx)
{
	for (unsigned int i = 0; i < tx->npdus && rec.n < LOG_MAX; i++) {
		rec.ev[rec.n].gone = false;
		rec.ev[rec.n].op = scsitgt__bhs_opcode(tx->pdus[i].hdr);
		rec.ev[rec.n].itt = scsitgt__bhs_itt(tx->pdus[i].hdr);
		rec.n++;
	}
	h_xmit(conn, tx);
}

static void rec_task_gone(struct scsitgt__iscsi_conn *conn, uint32_t itt)
{
	(void)conn;
	if (rec.n < LOG_MAX) {
		rec.ev[rec.n].gone = true;
		rec.ev[rec.n].itt = itt;
		rec.n++;
	}
}

static const struct scsitgt__iscsi_dm_ops rec_dm_ops = {
	.name = "recording",
	.xmit = rec_xmit,
	.close = h_close,
	.task_gone = rec_task_gone,
};

/* Where task_gone(@itt) is in the log, or -1; -2 when it is there more than once. */
static int gone_at(uint32_t itt)
{
	int at = -1;

	for (unsigned int i = 0; i < rec.n; i++) {
		if (rec.ev[i].gone && rec.ev[i].itt == itt) {
			if (at >= 0)
				return -2;
			at = (int)i;
		}
	}
	return at;
}

/* Where the first PDU of opcode @op for @itt is in the log, or -1. */
static int xmit_at(uint8_t op, uint32_t itt)
{
	for (unsigned int i = 0; i < rec.n; i++) {
		if (!rec.ev[i].gone && rec.ev[i].op == op && rec.ev[i].itt == itt)
			return (int)i;
	}
	return -1;
}

static unsigned int gone_count(void)
{
	unsigned int k = 0;

	for (unsigned int i = 0; i < rec.n; i++)
		k += rec.ev[i].gone;
	return k;
}

static void start(struct harness *h)
{
	memset(&rec, 0, sizeof(rec));
	assert_int_equal(h_init_dm(h, true, &rec_dm_ops), 0);
	assert_int_equal(h_login(h, "Normal"), 0);
}

/* A WRITE(10) of @blocks at @lba with no data (F=1): the target solicits all of it by R2T. */
static uint32_t write_in_r2t(struct harness *h, uint32_t lba, uint16_t blocks)
{
	uint8_t bhs[ISCSI_BHS_LEN];
	uint32_t itt;

	h_cmd_bhs(h, bhs, ISCSI_FLAG_FINAL | ISCSI_CMD_FLAG_WRITE, blocks * 512u, 0x2a, lba,
		  blocks);
	itt = h->itt;
	h_send(h, bhs, NULL, 0);
	assert_true(xmit_at(ISCSI_OP_R2T, itt) >= 0);
	assert_non_null(scsitgt__iscsi_task_find(h->conn, itt));
	return itt;
}

/* An immediate TMF @func on LUN 0 (RTT @rtt for ABORT TASK) at the current CmdSN. */
static uint32_t tmf(struct harness *h, uint8_t func, uint32_t rtt, uint32_t ref)
{
	return sn_tmf(h, func, true, h->cmd_sn, rtt, ref);
}

/* ABORT TASK of a WRITE waiting for its solicited data: told once, before the TMF Response. */
static void test_abort_task_in_r2t(void **state)
{
	struct harness h;
	uint32_t w, ref, t;
	int gone, rsp;

	(void)state;
	start(&h);
	ref = h.cmd_sn;
	w = write_in_r2t(&h, 8, 64);
	assert_int_equal(gone_at(w), -1);
	t = tmf(&h, ISCSI_TMF_ABORT_TASK, w, ref);
	assert_int_equal(sn_tmf_response(&h, t), ISCSI_TMF_RSP_COMPLETE);
	gone = gone_at(w);
	rsp = xmit_at(ISCSI_OP_TMF_RSP, t);
	assert_true(gone >= 0);
	assert_true(rsp >= 0);
	assert_true(gone < rsp);
	assert_int_equal(gone_count(), 1);
	assert_false(sn_answered(&h, w));
	assert_null(scsitgt__iscsi_task_find(h.conn, w));
	sn_finish(&h, h.cmd_sn);
}

/* The TTT of the R2T sent for @itt. */
static uint32_t r2t_ttt(const struct harness *h, uint32_t itt)
{
	for (unsigned int i = 0; i < h->npdus; i++) {
		const uint8_t *b = h->pdus[i].bhs;

		if (scsitgt__bhs_opcode(b) == ISCSI_OP_R2T && scsitgt__bhs_itt(b) == itt)
			return get_be32(&b[ISCSI_BHS_TTT]);
	}
	fail_msg("no R2T for ITT 0x%08x", itt);
	return ISCSI_RESERVED_TAG;
}

/*
 * LOGICAL UNIT RESET (and ABORT TASK SET) with several WRITEs in R2T: the TMF waits for the
 * initiator's answers to their R2Ts (RFC 7143 §11.5.1, §4.2.3.3), here each ended early with
 * F=1, then acts: each told, before its response.
 */
static void reset_with_writes(uint8_t func)
{
	struct harness h;
	uint32_t w[3], t;
	int rsp;

	start(&h);
	for (int i = 0; i < 3; i++)
		w[i] = write_in_r2t(&h, 128u * (uint32_t)i, 32);
	t = tmf(&h, func, ISCSI_RESERVED_TAG, h.cmd_sn);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(sn_tmf_response(&h, t), -1);
		assert_int_equal(gone_at(w[i]), -1);
		sn_write_data(&h, w[i], r2t_ttt(&h, w[i]));
	}
	assert_int_equal(sn_tmf_response(&h, t), ISCSI_TMF_RSP_COMPLETE);
	rsp = xmit_at(ISCSI_OP_TMF_RSP, t);
	assert_true(rsp >= 0);
	for (int i = 0; i < 3; i++) {
		int gone = gone_at(w[i]);

		assert_true(gone >= 0);
		assert_true(gone < rsp);
		assert_false(sn_answered(&h, w[i]));
	}
	assert_int_equal(gone_count(), 3);
	sn_finish(&h, h.cmd_sn);
}

static void test_lun_reset_in_r2t(void **state)
{
	(void)state;
	reset_with_writes(ISCSI_TMF_LUN_RESET);
}

static void test_abort_task_set_in_r2t(void **state)
{
	(void)state;
	reset_with_writes(ISCSI_TMF_ABORT_TASK_SET);
}

/* Aborted by another nexus (a LOGICAL UNIT RESET through the API): told, and no response. */
static void test_abort_from_elsewhere(void **state)
{
	struct harness h;
	uint32_t w;

	(void)state;
	start(&h);
	w = write_in_r2t(&h, 0, 16);
	assert_int_equal(scsitgt_lun_apply_reset(scsitgt__target_find_lun(h.tgt, 0)), 0);
	assert_true(h_task_gone(&h, w));
	assert_true(gone_at(w) >= 0);
	assert_int_equal(gone_count(), 1);
	assert_false(sn_answered(&h, w));
	sn_finish(&h, h.cmd_sn);
}

/*
 * Tasks that end with a response are never reported: a WRITE that got its data, a READ, and
 * an ABORT TASK of a task that already answered (nothing to abort, Function complete).
 */
static void test_answered_tasks_not_reported(void **state)
{
	uint8_t bhs[ISCSI_BHS_LEN], data[1024];
	struct harness h;
	uint32_t w, r, ttt = ISCSI_RESERVED_TAG, t;

	(void)state;
	start(&h);
	w = write_in_r2t(&h, 4, 2);
	for (unsigned int i = 0; i < h.npdus; i++) {
		if (scsitgt__bhs_opcode(h.pdus[i].bhs) == ISCSI_OP_R2T &&
		    scsitgt__bhs_itt(h.pdus[i].bhs) == w)
			ttt = get_be32(&h.pdus[i].bhs[ISCSI_BHS_TTT]);
	}
	assert_int_not_equal(ttt, ISCSI_RESERVED_TAG);
	memset(data, 0x3c, sizeof(data));
	scsitgt__bhs_init(bhs, ISCSI_OP_DATA_OUT, ISCSI_FLAG_FINAL);
	put_be32(&bhs[ISCSI_BHS_ITT], w);
	put_be32(&bhs[ISCSI_BHS_TTT], ttt);
	scsitgt__bhs_set_dsl(bhs, sizeof(data));
	h_send(&h, bhs, data, sizeof(data));
	assert_true(h_task_gone(&h, w));
	assert_true(sn_answered(&h, w));
	h_cmd_bhs(&h, bhs, ISCSI_FLAG_FINAL | ISCSI_CMD_FLAG_READ, 1024, 0x28, 4, 2);
	r = h.itt;
	h_send(&h, bhs, NULL, 0);
	assert_true(h_task_gone(&h, r));
	assert_true(sn_answered(&h, r));
	t = tmf(&h, ISCSI_TMF_ABORT_TASK, w, h.cmd_sn - 2);
	assert_true(sn_tmf_response(&h, t) >= 0);
	assert_int_equal(gone_count(), 0);
	sn_finish(&h, h.cmd_sn);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_abort_task_in_r2t),
		cmocka_unit_test(test_lun_reset_in_r2t),
		cmocka_unit_test(test_abort_task_set_in_r2t),
		cmocka_unit_test(test_abort_from_elsewhere),
		cmocka_unit_test(test_answered_tasks_not_reported),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
