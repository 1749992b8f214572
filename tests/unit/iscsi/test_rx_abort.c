/* SPDX-License-Identifier: MIT */
/*
 * A WRITE aborted from another nexus while the payload of its PDU is still arriving (review29
 * F1): the header callback pointed the receiver at the command's buffer, the payload comes in
 * several socket reads, and between two of them a LOGICAL UNIT RESET of another session (here
 * scsitgt_lun_apply_reset(), the same abort across shards) destroys the task and its buffer.
 * The rest of the payload must be read and dropped, never written into the freed buffer, the
 * PDU's end must not touch the task, and the session goes on: a SCSI Command PDU whose
 * immediate data was cut so still uses up its CmdSN. Under ASan (the cache poisons freed
 * blocks) the unfixed code writes into freed memory; in any build the receiver still pointed
 * at the freed buffer and task.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "iscsi_harness.h"

enum cut_pdu {
	CUT_SOLICITED,	 /* a Data-Out answering an R2T */
	CUT_UNSOLICITED, /* an unsolicited Data-Out of the first burst */
	CUT_IMMEDIATE,	 /* the SCSI Command PDU's immediate data */
};

static void data_out_bhs(uint8_t *bhs, uint32_t itt, uint32_t ttt, uint32_t off, bool fin)
{
	scsitgt__bhs_init(bhs, ISCSI_OP_DATA_OUT, fin ? ISCSI_FLAG_FINAL : 0);
	put_be32(&bhs[ISCSI_BHS_ITT], itt);
	put_be32(&bhs[ISCSI_BHS_TTT], ttt);
	put_be32(&bhs[ISCSI_BHS_DATASN], 0);
	put_be32(&bhs[ISCSI_BHS_BUFFER_OFFSET], off);
}

/* The status of the SCSI Response (or Data-In with status) for @itt among what came, or -1. */
static int status_of(struct harness *h, uint32_t itt)
{
	struct h_pdu *r;
	int st = -1;

	while ((r = h_take(h)) != NULL) {
		uint8_t op = scsitgt__bhs_opcode(r->bhs);

		if (scsitgt__bhs_itt(r->bhs) != itt)
			continue;
		if (op == ISCSI_OP_SCSI_RSP)
			st = r->bhs[ISCSI_RSP_STATUS];
		else if (op == ISCSI_OP_DATA_IN &&
			 (r->bhs[ISCSI_BHS_FLAGS] & ISCSI_DATAIN_FLAG_STATUS))
			st = r->bhs[ISCSI_DATAIN_STATUS];
	}
	return st;
}

/* WRITE(10) of @len bytes at @lba as immediate data, retried once after a unit attention. */
static void write_imm(struct harness *h, uint32_t lba, const uint8_t *data, uint32_t len)
{
	for (int attempt = 0; attempt < 2; attempt++) {
		uint8_t bhs[ISCSI_BHS_LEN];
		int st;

		h_cmd_bhs(h, bhs, ISCSI_FLAG_FINAL | ISCSI_CMD_FLAG_WRITE, len, 0x2a, lba,
			  (uint16_t)(len / 512));
		h_send(h, bhs, data, len);
		st = status_of(h, h->itt);
		if (st == 0)
			return;
		/* The reset's unit attention comes once, on the first command after it. */
		assert_int_equal(st, 0x02);
		assert_int_equal(attempt, 0);
	}
}

static void read_check(struct harness *h, uint32_t lba, const uint8_t *want, uint32_t len)
{
	uint8_t bhs[ISCSI_BHS_LEN];
	uint8_t *got = calloc(1, len);
	struct h_pdu *r;

	assert_non_null(got);
	h_cmd_bhs(h, bhs, ISCSI_FLAG_FINAL | ISCSI_CMD_FLAG_READ, len, 0x28, lba,
		  (uint16_t)(len / 512));
	h_send(h, bhs, NULL, 0);
	while ((r = h_take(h)) != NULL) {
		if (scsitgt__bhs_opcode(r->bhs) == ISCSI_OP_DATA_IN &&
		    scsitgt__bhs_itt(r->bhs) == h->itt) {
			uint32_t off = get_be32(&r->bhs[ISCSI_BHS_BUFFER_OFFSET]);

			assert_true(off + r->len <= len);
			memcpy(got + off, r->data, r->len);
		}
	}
	assert_memory_equal(got, want, len);
	free(got);
}

enum cut_by {
	BY_LUN_RESET,	/* a LOGICAL UNIT RESET of another nexus */
	BY_LUN_REMOVAL, /* the LUN removed, its drain timed out (core/drain.c) */
};

static void lun_destroyed(void *arg, int status)
{
	*(int *)arg = status;
}

/*
 * The PDU of @cut (64 KiB of payload, pattern 0xa5) arrives in two reads; @by ends its task
 * between them. Then the session writes and reads back a block of its own (or, without the
 * LUN, still gets an answer).
 */
static void abort_mid_pdu(enum cut_pdu cut, enum cut_by by)
{
	int removed = 1;
	const uint32_t len = 65536, half = len / 2;
	uint8_t bhs[ISCSI_BHS_LEN], *wire = malloc(ISCSI_BHS_LEN + len);
	uint8_t block[4096];
	struct scsitgt_lun *lun;
	struct harness h;
	uint32_t itt, cut_sn;

	assert_non_null(wire);
	assert_int_equal(h_init(&h, true), 0);
	assert_int_equal(h_login(&h, "Normal"), 0);
	/* The harness's keys: InitialR2T=No, ImmediateData=Yes, FirstBurstLength 64 KiB. */
	assert_int_equal(h.conn->sess->params.first_burst, len);
	assert_true(h.conn->rx.max_dsl >= len);
	lun = scsitgt__target_find_lun(h.tgt, 0);
	assert_non_null(lun);

	switch (cut) {
	case CUT_SOLICITED: {
		struct h_pdu *r;

		h_cmd_bhs(&h, bhs, ISCSI_FLAG_FINAL | ISCSI_CMD_FLAG_WRITE, len, 0x2a, 64,
			  len / 512);
		h_send(&h, bhs, NULL, 0);
		r = h_take(&h);
		assert_non_null(r);
		assert_int_equal(scsitgt__bhs_opcode(r->bhs), ISCSI_OP_R2T);
		assert_int_equal(get_be32(&r->bhs[ISCSI_R2T_DESIRED_LEN]), len);
		data_out_bhs(bhs, h.itt, get_be32(&r->bhs[ISCSI_BHS_TTT]), 0, true);
		break;
	}
	case CUT_UNSOLICITED:
		h_cmd_bhs(&h, bhs, ISCSI_CMD_FLAG_WRITE, len, 0x2a, 64, len / 512);
		h_send(&h, bhs, NULL, 0);
		assert_null(h_take(&h));
		data_out_bhs(bhs, h.itt, ISCSI_RESERVED_TAG, 0, true);
		break;
	case CUT_IMMEDIATE:
		h_cmd_bhs(&h, bhs, ISCSI_FLAG_FINAL | ISCSI_CMD_FLAG_WRITE, len, 0x2a, 64,
			  len / 512);
		break;
	}
	itt = h.itt;
	cut_sn = h.cmd_sn - 1;
	scsitgt__bhs_set_dsl(bhs, len);
	memcpy(wire, bhs, ISCSI_BHS_LEN);
	memset(wire + ISCSI_BHS_LEN, 0xa5, len);

	/* The header and half the payload: the receiver reads straight into the buffer. */
	h_feed(&h, wire, ISCSI_BHS_LEN + half);
	assert_non_null(scsitgt__iscsi_task_find(h.conn, itt));
	assert_non_null(h.conn->rx_task);
	assert_non_null(h.conn->rx.pdu.dest);

	/* Another nexus resets the LUN, or the LUN goes: the task and its buffer go. */
	if (by == BY_LUN_RESET) {
		assert_int_equal(scsitgt_lun_apply_reset(lun), 0);
	} else {
		assert_int_equal(scsitgt_engine_set_drain_timeout(h.engine, 1), 0);
		scsitgt_lun_destroy(lun, lun_destroyed, &removed);
		/* Bounded: each round waits for the drain timer at most. */
		for (int i = 0; i < 1000 && removed == 1; i++)
			uv_run(&h.loop, UV_RUN_ONCE);
		assert_int_equal(removed, 0);
	}
	assert_true(h_task_gone(&h, itt));
	/* Nothing points at them any more: the rest of the PDU is read and dropped. */
	assert_null(h.conn->rx_task);
	assert_null(h.conn->rx.pdu.dest);
	assert_true(h.conn->rx.pdu.discard);

	h_feed(&h, wire + ISCSI_BHS_LEN + half, len - half);
	assert_false(h_conn_gone(&h));
	/* An aborted task gets no response (SAM-5 §5.6: the reset of another nexus). */
	assert_int_equal(status_of(&h, itt), -1);
	/* The cut SCSI Command still used up its CmdSN: the next command runs. */
	assert_true(scsitgt__sn_gt(h.conn->sess->exp_cmd_sn, cut_sn));

	if (by == BY_LUN_RESET) {
		/* The session goes on: a write and a read of its own, with its own data. */
		memset(block, 0x3c, sizeof(block));
		write_imm(&h, 8, block, sizeof(block));
		read_check(&h, 8, block, sizeof(block));
	} else {
		/* The session goes on: TEST UNIT READY of the LUN that went is answered. */
		h_cmd_bhs(&h, bhs, ISCSI_FLAG_FINAL, 0, 0x00, 0, 0);
		h_send(&h, bhs, NULL, 0);
		assert_int_equal(status_of(&h, h.itt), 0x02);
	}
	assert_int_equal(h.conn->ntasks, 0);
	assert_int_equal(h.conn->sess->active, 0);
	h_fini(&h);
	free(wire);
}

static void test_abort_mid_solicited_data_out(void **state)
{
	(void)state;
	abort_mid_pdu(CUT_SOLICITED, BY_LUN_RESET);
}

static void test_abort_mid_unsolicited_data_out(void **state)
{
	(void)state;
	abort_mid_pdu(CUT_UNSOLICITED, BY_LUN_RESET);
}

static void test_abort_mid_immediate_data(void **state)
{
	(void)state;
	abort_mid_pdu(CUT_IMMEDIATE, BY_LUN_RESET);
}

static void test_lun_removed_mid_data_out(void **state)
{
	(void)state;
	abort_mid_pdu(CUT_SOLICITED, BY_LUN_REMOVAL);
}

static void test_lun_removed_mid_immediate_data(void **state)
{
	(void)state;
	abort_mid_pdu(CUT_IMMEDIATE, BY_LUN_REMOVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_abort_mid_solicited_data_out),
		cmocka_unit_test(test_abort_mid_unsolicited_data_out),
		cmocka_unit_test(test_abort_mid_immediate_data),
		cmocka_unit_test(test_lun_removed_mid_data_out),
		cmocka_unit_test(test_lun_removed_mid_immediate_data),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
