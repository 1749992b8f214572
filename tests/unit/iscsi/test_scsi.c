/* SPDX-License-Identifier: MIT */
/*
 * Full feature phase: R2T bookkeeping (MaxOutstandingR2T, MaxBurstLength splitting, first
 * burst with immediate and unsolicited data), Data-In split by MaxRecvDataSegmentLength with
 * the status collapsed into the last PDU, residuals, CmdSN window, NOP, Data-Out errors, TMF,
 * logout.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "iscsi_harness.h"

static void data_out(struct harness *h, uint32_t itt, uint32_t ttt, uint32_t datasn, uint32_t off,
		     const uint8_t *data, uint32_t len, bool fin)
{
	uint8_t bhs[ISCSI_BHS_LEN];

	scsitgt__bhs_init(bhs, ISCSI_OP_DATA_OUT, fin ? ISCSI_FLAG_FINAL : 0);
	put_be32(&bhs[ISCSI_BHS_ITT], itt);
	put_be32(&bhs[ISCSI_BHS_TTT], ttt);
	put_be32(&bhs[ISCSI_BHS_DATASN], datasn);
	put_be32(&bhs[ISCSI_BHS_BUFFER_OFFSET], off);
	h_send(h, bhs, data, len);
}

static uint8_t pattern(uint32_t i)
{
	return (uint8_t)(i * 7 + (i >> 9));
}

/* A 1 MiB write: 8 KiB immediate, unsolicited to 64 KiB, then R2Ts of 128 KiB, 4 at a time. */
static void test_write_r2t(void **state)
{
	const uint32_t total = 1u << 20, fb = 65536, burst = 131072, seg = 8192;
	uint8_t *buf = malloc(total), bhs[ISCSI_BHS_LEN];
	struct harness h;
	struct h_pdu *r;
	uint32_t itt, off;
	struct {
		uint32_t ttt, off, len;
	} r2t[16];
	unsigned int nr2t = 0, done = 0;

	(void)state;
	for (uint32_t i = 0; i < total; i++)
		buf[i] = pattern(i);
	assert_int_equal(h_init(&h, true), 0);
	assert_int_equal(h_login(&h, "Normal"), 0);
	assert_int_equal(h.conn->sess->params.first_burst, fb);
	assert_int_equal(h.conn->sess->params.max_burst, burst);
	h_cmd_bhs(&h, bhs, ISCSI_CMD_FLAG_WRITE, total, 0x2a, 0, (uint16_t)(total / 512));
	itt = h.itt;
	h_send(&h, bhs, buf, seg); /* immediate data, F=0: unsolicited Data-Out follows */
	assert_null(h_take(&h));
	for (off = seg; off < fb; off += seg)
		data_out(&h, itt, ISCSI_RESERVED_TAG, off / seg - 1, off, buf + off, seg,
			 off + seg == fb);
	/* MaxOutstandingR2T=4: exactly four R2Ts, R2TSN 0..3, bursts of MaxBurstLength. */
	while ((r = h_take(&h)) != NULL) {
		assert_int_equal(scsitgt__bhs_opcode(r->bhs), ISCSI_OP_R2T);
		assert_int_equal(get_be32(&r->bhs[ISCSI_R2T_R2TSN]), nr2t);
		r2t[nr2t].ttt = get_be32(&r->bhs[ISCSI_BHS_TTT]);
		r2t[nr2t].off = get_be32(&r->bhs[ISCSI_BHS_BUFFER_OFFSET]);
		r2t[nr2t].len = get_be32(&r->bhs[ISCSI_R2T_DESIRED_LEN]);
		assert_int_equal(r2t[nr2t].off, fb + nr2t * burst);
		assert_int_equal(r2t[nr2t].len, burst);
		nr2t++;
	}
	assert_int_equal(nr2t, 4);
	/* Answer them one by one; each completed R2T lets the next one out. */
	while (done < nr2t) {
		uint32_t o = r2t[done].off, end = o + r2t[done].len, sn = 0;

		for (; o < end; o += seg)
			data_out(&h, itt, r2t[done].ttt, sn++, o, buf + o, seg, o + seg == end);
		done++;
		while ((r = h_take(&h)) != NULL && scsitgt__bhs_opcode(r->bhs) == ISCSI_OP_R2T) {
			r2t[nr2t].ttt = get_be32(&r->bhs[ISCSI_BHS_TTT]);
			r2t[nr2t].off = get_be32(&r->bhs[ISCSI_BHS_BUFFER_OFFSET]);
			r2t[nr2t].len = get_be32(&r->bhs[ISCSI_R2T_DESIRED_LEN]);
			assert_true(nr2t - done < 4);
			nr2t++;
		}
		if (r) {
			/* The SCSI Response, after the last R2T's data. */
			assert_int_equal(done, nr2t);
			assert_int_equal(scsitgt__bhs_opcode(r->bhs), ISCSI_OP_SCSI_RSP);
			assert_int_equal(r->bhs[ISCSI_RSP_STATUS], 0);
			assert_int_equal(r->bhs[ISCSI_BHS_FLAGS], ISCSI_FLAG_FINAL);
			assert_int_equal(get_be32(&r->bhs[ISCSI_BHS_DATASN]), nr2t); /* ExpDataSN */
		}
	}
	/* (1 MiB - 64 KiB) / 128 KiB = 7.5: eight R2Ts, the last one short. */
	assert_int_equal(nr2t, 8);
	assert_int_equal(r2t[7].len, total - fb - 7 * burst);

	/* Read it back: Data-In in 8 KiB PDUs (our peer's MaxRecvDataSegmentLength), F at each
	 * MaxBurstLength boundary, status in the last one. */
	h_cmd_bhs(&h, bhs, ISCSI_FLAG_FINAL | ISCSI_CMD_FLAG_READ, total, 0x28, 0,
		  (uint16_t)(total / 512));
	h_send(&h, bhs, NULL, 0);
	for (uint32_t n = 0, o = 0; o < total; n++, o += seg) {
		r = h_take(&h);
		assert_non_null(r);
		assert_int_equal(scsitgt__bhs_opcode(r->bhs), ISCSI_OP_DATA_IN);
		assert_int_equal(get_be32(&r->bhs[ISCSI_BHS_DATASN]), n);
		assert_int_equal(get_be32(&r->bhs[ISCSI_BHS_BUFFER_OFFSET]), o);
		assert_int_equal(r->len, seg);
		assert_memory_equal(r->data, buf + o, seg);
		assert_int_equal(!!(r->bhs[ISCSI_BHS_FLAGS] & ISCSI_FLAG_FINAL),
				 (o + seg) % burst == 0);
		assert_int_equal(!!(r->bhs[ISCSI_BHS_FLAGS] & ISCSI_DATAIN_FLAG_STATUS),
				 o + seg == total);
	}
	assert_null(h_take(&h));
	h_fini(&h);
	free(buf);
}

static void test_residuals_and_sense(void **state)
{
	uint8_t bhs[ISCSI_BHS_LEN];
	struct harness h;
	struct h_pdu *r;

	(void)state;
	assert_int_equal(h_init(&h, true), 0);
	assert_int_equal(h_login(&h, "Normal"), 0);
	/* Underflow: 1 block read, EDTL 1024. */
	h_cmd_bhs(&h, bhs, ISCSI_FLAG_FINAL | ISCSI_CMD_FLAG_READ, 1024, 0x28, 0, 1);
	h_send(&h, bhs, NULL, 0);
	r = h_take(&h);
	assert_non_null(r);
	assert_int_equal(r->len, 512);
	assert_int_equal(r->bhs[ISCSI_BHS_FLAGS],
			 ISCSI_FLAG_FINAL | ISCSI_DATAIN_FLAG_STATUS | ISCSI_DATAIN_FLAG_UNDERFLOW);
	assert_int_equal(get_be32(&r->bhs[ISCSI_BHS_RESIDUAL]), 512);
	/* Overflow: 2 blocks read, EDTL 512. */
	h_cmd_bhs(&h, bhs, ISCSI_FLAG_FINAL | ISCSI_CMD_FLAG_READ, 512, 0x28, 0, 2);
	h_send(&h, bhs, NULL, 0);
	r = h_take(&h);
	assert_non_null(r);
	assert_int_equal(r->len, 512);
	assert_true(r->bhs[ISCSI_BHS_FLAGS] & ISCSI_DATAIN_FLAG_OVERFLOW);
	assert_int_equal(get_be32(&r->bhs[ISCSI_BHS_RESIDUAL]), 512);
	assert_null(h_take(&h));
	/* Beyond the end: CHECK CONDITION with sense in a SCSI Response, no Data-In. */
	h_cmd_bhs(&h, bhs, ISCSI_FLAG_FINAL | ISCSI_CMD_FLAG_READ, 512, 0x28, 4096, 1);
	h_send(&h, bhs, NULL, 0);
	r = h_take(&h);
	assert_non_null(r);
	assert_int_equal(scsitgt__bhs_opcode(r->bhs), ISCSI_OP_SCSI_RSP);
	assert_int_equal(r->bhs[ISCSI_RSP_STATUS], 0x02);
	assert_true(r->len > 2);
	assert_int_equal(get_be16(r->data), r->len - 2);
	/* Write with EDTL shorter than the CDB: one whole block written, overflow reported. */
	{
		uint8_t blk[512];

		memset(blk, 0xee, sizeof(blk));
		h_cmd_bhs(&h, bhs, ISCSI_FLAG_FINAL | ISCSI_CMD_FLAG_WRITE, 512, 0x2a, 10, 2);
		h_send(&h, bhs, blk, 512);
		r = h_take(&h);
		assert_non_null(r);
		assert_int_equal(scsitgt__bhs_opcode(r->bhs), ISCSI_OP_SCSI_RSP);
		assert_int_equal(r->bhs[ISCSI_RSP_STATUS], 0);
		assert_true(r->bhs[ISCSI_BHS_FLAGS] & ISCSI_RSP_FLAG_OVERFLOW);
		assert_int_equal(get_be32(&r->bhs[ISCSI_BHS_RESIDUAL]), 512);
	}
	h_fini(&h);
}

/* Key, ASC and ASCQ of a SCSI Response's sense data (fixed or descriptor format). */
static uint32_t rsp_sense(const struct h_pdu *r)
{
	const uint8_t *sd;

	assert_int_equal(scsitgt__bhs_opcode(r->bhs), ISCSI_OP_SCSI_RSP);
	assert_int_equal(r->bhs[ISCSI_RSP_STATUS], 0x02);
	assert_true(r->len >= 2 + 14);
	sd = r->data + 2;
	if ((sd[0] & 0x7f) >= 0x72)
		return (uint32_t)(sd[1] & 0x0f) << 16 | (uint32_t)sd[2] << 8 | sd[3];
	return (uint32_t)(sd[2] & 0x0f) << 16 | (uint32_t)sd[12] << 8 | sd[13];
}

/* The Reject of a broken Data-Out, then the command's SCSI Response: its sense. */
static uint32_t broken_data_out_sense(struct harness *h)
{
	struct h_pdu *r = h_take(h);

	assert_non_null(r);
	assert_int_equal(scsitgt__bhs_opcode(r->bhs), ISCSI_OP_REJECT);
	assert_int_equal(r->bhs[2], ISCSI_REJECT_PROTOCOL_ERROR);
	r = h_take(h);
	assert_non_null(r);
	return rsp_sense(r);
}

/* A 16 KiB WRITE(10) without data; returns the TTT of its R2T. */
static uint32_t write_wait_r2t(struct harness *h, uint32_t lba)
{
	uint8_t bhs[ISCSI_BHS_LEN];
	struct h_pdu *r;

	h_cmd_bhs(h, bhs, ISCSI_FLAG_FINAL | ISCSI_CMD_FLAG_WRITE, 16384, 0x2a, lba, 32);
	h_send(h, bhs, NULL, 0);
	r = h_take(h);
	assert_non_null(r);
	assert_int_equal(scsitgt__bhs_opcode(r->bhs), ISCSI_OP_R2T);
	assert_int_equal(get_be32(&r->bhs[ISCSI_R2T_DESIRED_LEN]), 16384);
	return get_be32(&r->bhs[ISCSI_BHS_TTT]);
}

/*
 * RFC 7143 §11.4.7.2 sense data of the transport conditions at ErrorRecoveryLevel 0: a Data-Out
 * out of sequence (DataSN or BufferOffset: a PDU went missing, §7.9) fails its command with
 * ABORTED COMMAND, PROTOCOL SERVICE CRC ERROR (47h/05h, §7.8.1); unsolicited data a command
 * may not have, with 0Ch/0Ch; more data than asked for, with 0Ch/0Dh. Never DATA PHASE ERROR.
 */
static void test_data_out_sense(void **state)
{
	static uint8_t buf[131072];
	uint8_t bhs[ISCSI_BHS_LEN];
	struct harness h;
	uint32_t ttt;

	(void)state;
	memset(buf, 0x3c, sizeof(buf));
	assert_int_equal(h_init(&h, true), 0);
	assert_int_equal(h_login(&h, "Normal"), 0);

	/* Solicited data: wrong DataSN, wrong BufferOffset, too much. */
	ttt = write_wait_r2t(&h, 100);
	data_out(&h, h.itt, ttt, 5, 0, buf, 8192, false);
	assert_int_equal(broken_data_out_sense(&h), 0x0b4705);
	ttt = write_wait_r2t(&h, 200);
	data_out(&h, h.itt, ttt, 0, 4096, buf, 8192, false);
	assert_int_equal(broken_data_out_sense(&h), 0x0b4705);
	ttt = write_wait_r2t(&h, 300);
	data_out(&h, h.itt, ttt, 0, 0, buf, 16384 + 512, true);
	assert_int_equal(broken_data_out_sense(&h), 0x0b0c0d);

	/* Unsolicited data: after F=1 (none allowed), out of order, beyond the first burst. */
	ttt = write_wait_r2t(&h, 400);
	data_out(&h, h.itt, ISCSI_RESERVED_TAG, 0, 0, buf, 8192, false);
	assert_int_equal(broken_data_out_sense(&h), 0x0b0c0c);
	h_cmd_bhs(&h, bhs, ISCSI_CMD_FLAG_WRITE, 16384, 0x2a, 500, 32);
	h_send(&h, bhs, buf, 4096);
	data_out(&h, h.itt, ISCSI_RESERVED_TAG, 1, 4096, buf, 4096, false);
	assert_int_equal(broken_data_out_sense(&h), 0x0b4705);
	h_cmd_bhs(&h, bhs, ISCSI_CMD_FLAG_WRITE, 131072, 0x2a, 600, 256);
	h_send(&h, bhs, buf, 4096);
	data_out(&h, h.itt, ISCSI_RESERVED_TAG, 0, 4096, buf, 65536 - 4096 + 512, true);
	assert_int_equal(broken_data_out_sense(&h), 0x0b0c0d);

	/* The session goes on. */
	assert_null(h_take(&h));
	assert_false(h_conn_gone(&h));
	h_fini(&h);
}

/*
 * A WRITE(10) of @edtl bytes at @lba whose first burst is @imm bytes of immediate data (F=0)
 * and one unsolicited Data-Out of @unsol bytes with F=1: the SCSI Response that follows.
 */
static struct h_pdu *first_burst(struct harness *h, uint32_t lba, uint32_t edtl, uint32_t imm,
				 uint32_t unsol)
{
	static uint8_t buf[65536];
	uint8_t bhs[ISCSI_BHS_LEN];
	struct h_pdu *r;

	memset(buf, 0x5a, sizeof(buf));
	h_cmd_bhs(h, bhs, ISCSI_CMD_FLAG_WRITE, edtl, 0x2a, lba, (uint16_t)(edtl / 512));
	h_send(h, bhs, buf, imm);
	data_out(h, h->itt, ISCSI_RESERVED_TAG, 0, imm, buf, unsol, true);
	r = h_take(h);
	assert_non_null(r);
	assert_int_equal(scsitgt__bhs_opcode(r->bhs), ISCSI_OP_SCSI_RSP);
	assert_int_equal(scsitgt__bhs_itt(r->bhs), h->itt);
	return r;
}

/*
 * An unsolicited sequence that ends (F=1) before min(FirstBurstLength, EDTL) (review29 N1):
 * the first burst answers an implied R2T for all of that (RFC 7143 §13.10), so the command
 * fails with INCORRECT AMOUNT OF DATA (0Bh/0Ch/0Dh) instead of waiting for data nobody sends.
 */
static void test_short_first_burst(void **state)
{
	struct harness h;
	struct h_pdu *r;

	(void)state;
	assert_int_equal(h_init(&h, true), 0);
	assert_int_equal(h_login(&h, "Normal"), 0);
	assert_int_equal(h.conn->sess->params.first_burst, 65536);

	/* EDTL below FirstBurstLength: 8 of 16 KiB unsolicited, then F=1. */
	assert_int_equal(rsp_sense(first_burst(&h, 700, 16384, 0, 8192)), 0x0b0c0d);
	/* EDTL above it: 8 KiB immediate and 8 KiB unsolicited of a 64 KiB first burst. */
	assert_int_equal(rsp_sense(first_burst(&h, 800, 131072, 8192, 8192)), 0x0b0c0d);
	/* The whole first burst (here all of EDTL) with F=1 on its last PDU: GOOD. */
	r = first_burst(&h, 900, 16384, 8192, 8192);
	assert_int_equal(r->bhs[ISCSI_RSP_STATUS], 0);

	/* Nothing else came, and no task is left holding a CmdSN slot. */
	assert_null(h_take(&h));
	assert_int_equal(h.conn->ntasks, 0);
	assert_int_equal(h.conn->sess->active, 0);
	h_fini(&h);
}

static void test_cmdsn_nop_reject(void **state)
{
	uint8_t bhs[ISCSI_BHS_LEN], ping[10] = "ping-data";
	struct harness h;
	struct h_pdu *r;
	uint32_t exp;

	(void)state;
	assert_int_equal(h_init(&h, true), 0);
	assert_int_equal(h_login(&h, "Normal"), 0);
	exp = h.conn->sess->exp_cmd_sn;
	/* CmdSN beyond MaxCmdSN: silently ignored (RFC 7143 §4.2.2.1). */
	h_cmd_bhs(&h, bhs, ISCSI_FLAG_FINAL, 0, 0x00, 0, 0);
	put_be32(&bhs[ISCSI_BHS_CMDSN], h.conn->sess->max_cmd_sn + 1);
	h_send(&h, bhs, NULL, 0);
	assert_null(h_take(&h));
	/* Below ExpCmdSN: ignored too. */
	put_be32(&bhs[ISCSI_BHS_CMDSN], exp - 1);
	h_send(&h, bhs, NULL, 0);
	assert_null(h_take(&h));
	/* A closed window (MaxCmdSN = ExpCmdSN - 1) takes nothing, not even CmdSN = ExpCmdSN. */
	{
		uint32_t saved = h.conn->sess->max_cmd_sn;

		h.conn->sess->max_cmd_sn = exp - 1;
		put_be32(&bhs[ISCSI_BHS_CMDSN], exp);
		h_send(&h, bhs, NULL, 0);
		assert_null(h_take(&h));
		h.conn->sess->max_cmd_sn = saved;
	}
	/* At ExpCmdSN: TEST UNIT READY answered, window slides. */
	h.cmd_sn = exp;
	h_cmd_bhs(&h, bhs, ISCSI_FLAG_FINAL, 0, 0x00, 0, 0);
	h_send(&h, bhs, NULL, 0);
	r = h_take(&h);
	assert_non_null(r);
	assert_int_equal(scsitgt__bhs_opcode(r->bhs), ISCSI_OP_SCSI_RSP);
	assert_int_equal(get_be32(&r->bhs[ISCSI_BHS_EXPCMDSN]), exp + 1);
	assert_int_equal(get_be32(&r->bhs[ISCSI_BHS_MAXCMDSN]), exp + 128);

	/* NOP-Out ping: echoed with its data. */
	scsitgt__bhs_init(bhs, ISCSI_OP_NOP_OUT | ISCSI_FLAG_IMMEDIATE, ISCSI_FLAG_FINAL);
	put_be32(&bhs[ISCSI_BHS_ITT], 0x99);
	put_be32(&bhs[ISCSI_BHS_TTT], ISCSI_RESERVED_TAG);
	put_be32(&bhs[ISCSI_BHS_CMDSN], h.cmd_sn);
	h_send(&h, bhs, ping, sizeof(ping));
	r = h_take(&h);
	assert_non_null(r);
	assert_int_equal(scsitgt__bhs_opcode(r->bhs), ISCSI_OP_NOP_IN);
	assert_int_equal(scsitgt__bhs_itt(r->bhs), 0x99);
	assert_int_equal(r->len, sizeof(ping));
	assert_memory_equal(r->data, ping, sizeof(ping));

	/* Data-Out for an unknown task: Reject, invalid PDU field. */
	data_out(&h, 0x12345, ISCSI_RESERVED_TAG, 0, 0, ping, 8, true);
	r = h_take(&h);
	assert_non_null(r);
	assert_int_equal(scsitgt__bhs_opcode(r->bhs), ISCSI_OP_REJECT);
	assert_int_equal(r->bhs[ISCSI_REJECT_REASON], ISCSI_REJECT_INVALID_PDU_FIELD);

	/* Data-Out with a wrong DataSN: Reject, then the command fails. */
	{
		uint8_t blk[1024];
		uint32_t itt, ttt;

		memset(blk, 1, sizeof(blk));
		h_cmd_bhs(&h, bhs, ISCSI_FLAG_FINAL | ISCSI_CMD_FLAG_WRITE, 1024, 0x2a, 0, 2);
		itt = h.itt;
		h_send(&h, bhs, NULL, 0);
		r = h_take(&h);
		assert_non_null(r);
		assert_int_equal(scsitgt__bhs_opcode(r->bhs), ISCSI_OP_R2T);
		ttt = get_be32(&r->bhs[ISCSI_BHS_TTT]);
		data_out(&h, itt, ttt, 5, 0, blk, 512, false);
		r = h_take(&h);
		assert_non_null(r);
		assert_int_equal(scsitgt__bhs_opcode(r->bhs), ISCSI_OP_REJECT);
		assert_int_equal(r->bhs[ISCSI_REJECT_REASON], ISCSI_REJECT_PROTOCOL_ERROR);
		r = h_take(&h);
		assert_non_null(r);
		assert_int_equal(scsitgt__bhs_opcode(r->bhs), ISCSI_OP_SCSI_RSP);
		assert_int_equal(r->bhs[ISCSI_RSP_STATUS], 0x02);
	}

	/* Unknown opcode: Reject. */
	scsitgt__bhs_init(bhs, 0x1c, ISCSI_FLAG_FINAL);
	h_send(&h, bhs, NULL, 0);
	r = h_take(&h);
	assert_non_null(r);
	assert_int_equal(scsitgt__bhs_opcode(r->bhs), ISCSI_OP_REJECT);
	h_fini(&h);
}

/*
 * The connection finds tasks by ITT through an index: with more tasks in flight than it has
 * buckets, every Data-Out still reaches its own task, a reused ITT is refused while its task
 * lives (RFC 7143 §11.17.1, Task in progress) and accepted again once the task is gone.
 */
static void test_itt_index(void **state)
{
	enum {
		NTASKS = 300
	};
	uint8_t bhs[ISCSI_BHS_LEN], blk[512];
	uint32_t itts[NTASKS], ttts[NTASKS];
	struct harness h;
	struct h_pdu *r;

	(void)state;
	assert_int_equal(h_init(&h, true), 0);
	/* Immediate commands hold CmdSN window slots too: a window for all of them. */
	{
		struct scsitgt_iscsi_params p;

		scsitgt_iscsi_params_init(&p, sizeof(p));
		p.queue_depth = 2 * NTASKS;
		assert_int_equal(scsitgt_iscsi_target_set_params(h.tgt, &p), 0);
	}
	assert_int_equal(h_login(&h, "Normal"), 0);
	memset(blk, 0x5a, sizeof(blk));
	/* Immediate writes (no CmdSN of their own), each waiting for its Data-Out. */
	for (unsigned int i = 0; i < NTASKS; i++) {
		h_cmd_bhs(&h, bhs, ISCSI_FLAG_FINAL | ISCSI_CMD_FLAG_WRITE, 512, 0x2a, i, 1);
		bhs[ISCSI_BHS_OPCODE] |= ISCSI_FLAG_IMMEDIATE;
		put_be32(&bhs[ISCSI_BHS_CMDSN], h.cmd_sn - 1);
		h.cmd_sn--;
		/* Sparse, colliding tags: multiples of 256 plus a few low bits. */
		itts[i] = (i << 8) | (i & 3);
		put_be32(&bhs[ISCSI_BHS_ITT], itts[i]);
		h_send(&h, bhs, NULL, 0);
		r = h_take(&h);
		assert_non_null(r);
		assert_int_equal(scsitgt__bhs_opcode(r->bhs), ISCSI_OP_R2T);
		assert_int_equal(scsitgt__bhs_itt(r->bhs), itts[i]);
		ttts[i] = get_be32(&r->bhs[ISCSI_BHS_TTT]);
	}
	assert_int_equal(h.conn->ntasks, NTASKS);
	/* A new command with the ITT of a live task: Reject, Task in progress. */
	h_cmd_bhs(&h, bhs, ISCSI_FLAG_FINAL, 0, 0x00, 0, 0);
	put_be32(&bhs[ISCSI_BHS_ITT], itts[NTASKS / 2]);
	h_send(&h, bhs, NULL, 0);
	r = h_take(&h);
	assert_non_null(r);
	assert_int_equal(scsitgt__bhs_opcode(r->bhs), ISCSI_OP_REJECT);
	assert_int_equal(r->bhs[ISCSI_REJECT_REASON], ISCSI_REJECT_TASK_IN_PROGRESS);
	h.cmd_sn--; /* the rejected command did not take its CmdSN */
	assert_int_equal(h.conn->ntasks, NTASKS);
	/* Data-Out in reverse order: each completes its own command. */
	for (unsigned int k = NTASKS; k-- > 0;) {
		data_out(&h, itts[k], ttts[k], 0, 0, blk, sizeof(blk), true);
		h_pump(&h);
		r = h_take(&h);
		assert_non_null(r);
		assert_int_equal(scsitgt__bhs_opcode(r->bhs), ISCSI_OP_SCSI_RSP);
		assert_int_equal(scsitgt__bhs_itt(r->bhs), itts[k]);
		assert_int_equal(r->bhs[ISCSI_RSP_STATUS], 0x00);
	}
	assert_int_equal(h.conn->ntasks, 0);
	/* The tag is free again. */
	h_cmd_bhs(&h, bhs, ISCSI_FLAG_FINAL, 0, 0x00, 0, 0);
	put_be32(&bhs[ISCSI_BHS_ITT], itts[NTASKS / 2]);
	h_send(&h, bhs, NULL, 0);
	r = h_take(&h);
	assert_non_null(r);
	assert_int_equal(scsitgt__bhs_opcode(r->bhs), ISCSI_OP_SCSI_RSP);
	assert_int_equal(scsitgt__bhs_itt(r->bhs), itts[NTASKS / 2]);
	h_fini(&h);
}

static void test_tmf_logout(void **state)
{
	uint8_t bhs[ISCSI_BHS_LEN];
	struct harness h;
	struct h_pdu *r;

	(void)state;
	assert_int_equal(h_init(&h, true), 0);
	assert_int_equal(h_login(&h, "Normal"), 0);
	/* ABORT TASK of a task that never existed. */
	scsitgt__bhs_init(bhs, ISCSI_OP_TMF_REQ | ISCSI_FLAG_IMMEDIATE,
			  ISCSI_FLAG_FINAL | ISCSI_TMF_ABORT_TASK);
	put_be32(&bhs[ISCSI_BHS_ITT], 0x500);
	put_be32(&bhs[ISCSI_TMF_RTT], 0xabcdef);
	put_be32(&bhs[ISCSI_BHS_CMDSN], h.cmd_sn);
	put_be32(&bhs[ISCSI_TMF_REFCMDSN], h.cmd_sn - 5);
	h_send(&h, bhs, NULL, 0);
	r = h_take(&h);
	assert_non_null(r);
	assert_int_equal(scsitgt__bhs_opcode(r->bhs), ISCSI_OP_TMF_RSP);
	assert_int_equal(r->bhs[ISCSI_RSP_RESPONSE], ISCSI_TMF_RSP_NO_TASK);
	/* ABORT TASK of a write waiting for its data: aborted, no SCSI response. */
	{
		uint32_t itt;

		h_cmd_bhs(&h, bhs, ISCSI_FLAG_FINAL | ISCSI_CMD_FLAG_WRITE, 1024, 0x2a, 0, 2);
		itt = h.itt;
		h_send(&h, bhs, NULL, 0);
		r = h_take(&h);
		assert_non_null(r);
		assert_int_equal(scsitgt__bhs_opcode(r->bhs), ISCSI_OP_R2T);
		scsitgt__bhs_init(bhs, ISCSI_OP_TMF_REQ | ISCSI_FLAG_IMMEDIATE,
				  ISCSI_FLAG_FINAL | ISCSI_TMF_ABORT_TASK);
		put_be32(&bhs[ISCSI_BHS_ITT], 0x501);
		put_be32(&bhs[ISCSI_TMF_RTT], itt);
		put_be32(&bhs[ISCSI_BHS_CMDSN], h.cmd_sn);
		h_send(&h, bhs, NULL, 0);
		r = h_take(&h);
		assert_non_null(r);
		assert_int_equal(scsitgt__bhs_opcode(r->bhs), ISCSI_OP_TMF_RSP);
		assert_int_equal(r->bhs[ISCSI_RSP_RESPONSE], ISCSI_TMF_RSP_COMPLETE);
		assert_null(h_take(&h));
		assert_null(scsitgt__iscsi_task_find(h.conn, itt));
	}
	/* LUN RESET: function complete. TASK REASSIGN: not at ERL0. */
	scsitgt__bhs_init(bhs, ISCSI_OP_TMF_REQ | ISCSI_FLAG_IMMEDIATE,
			  ISCSI_FLAG_FINAL | ISCSI_TMF_LUN_RESET);
	put_be32(&bhs[ISCSI_BHS_ITT], 0x502);
	put_be32(&bhs[ISCSI_BHS_CMDSN], h.cmd_sn);
	h_send(&h, bhs, NULL, 0);
	r = h_take(&h);
	assert_non_null(r);
	assert_int_equal(r->bhs[ISCSI_RSP_RESPONSE], ISCSI_TMF_RSP_COMPLETE);
	bhs[ISCSI_BHS_FLAGS] = ISCSI_FLAG_FINAL | ISCSI_TMF_TASK_REASSIGN;
	h_send(&h, bhs, NULL, 0);
	r = h_take(&h);
	assert_non_null(r);
	assert_int_equal(r->bhs[ISCSI_RSP_RESPONSE], ISCSI_TMF_RSP_NO_REASSIGN);
	/* Logout: response, then the connection closes. */
	h_logout(&h, 0x600);
	r = h_take(&h);
	assert_non_null(r);
	assert_int_equal(scsitgt__bhs_opcode(r->bhs), ISCSI_OP_LOGOUT_RSP);
	assert_int_equal(r->bhs[ISCSI_LOGOUT_RSP_RESPONSE], ISCSI_LOGOUT_RSP_SUCCESS);
	assert_true(h_conn_gone(&h));
	h_fini(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_r2t),
		cmocka_unit_test(test_residuals_and_sense),
		cmocka_unit_test(test_data_out_sense),
		cmocka_unit_test(test_cmdsn_nop_reject),
		cmocka_unit_test(test_tmf_logout),
		cmocka_unit_test(test_itt_index),
		cmocka_unit_test(test_short_first_burst),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
