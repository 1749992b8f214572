/* SPDX-License-Identifier: MIT */
/*
 * Data lengths over iSCSI (issue 17): the Expected Data Transfer Length against the CDB's own
 * length for WRITE, WRITE AND VERIFY, WRITE SAME, COMPARE AND WRITE and READ, with and without
 * immediate data (RFC 7143 §11.4.5.2 residuals, SAM-5 §5.4.3, docs/scsi.md "Data lengths"),
 * and a READ that fails part way at a medium error: the good blocks go out as Data-In before
 * a SCSI Response with the CHECK CONDITION and the residual of the rest (what Linux's sd
 * needs to complete the blocks before the INFORMATION field).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "iscsi_harness.h"
#include "libscsitgt/backend_fault.h"

#define FAULT_LUN 1

/* What the target answered to one command. */
struct answer {
	uint32_t datain; /* Data-In bytes, in order from offset 0 */
	uint8_t data[1u << 17];
	unsigned int datain_pdus;
	bool have_rsp; /* a SCSI Response, or status in the last Data-In */
	uint8_t status;
	uint8_t flags; /* O/U flags of the status-carrying PDU */
	uint32_t residual;
	uint8_t sense[64];
	uint32_t sense_len;
	unsigned int r2ts;
};

static struct answer ans;

/* LUN 1: the fault backend over RAM (4096 blocks of 512 bytes). */
static void *add_fault_lun(struct harness *h)
{
	struct scsitgt_lun_opts lo;
	struct scsitgt_lun *lun;
	void *ram, *fault;

	assert_int_equal(scsitgt_backend_ram_create(&ram), 0);
	assert_int_equal(
		scsitgt_backend_fault_create(&fault, &h->loop, scsitgt_backend_ram_ops(), ram), 0);
	scsitgt_lun_opts_init(&lo, sizeof(lo));
	lo.id = FAULT_LUN;
	lo.block_size = 512;
	lo.num_blocks = 4096;
	lo.backend = scsitgt_backend_fault_ops(fault);
	lo.backend_ctx = fault;
	assert_int_equal(scsitgt_lun_create(&lun, h->tgt, &lo), 0);
	return fault;
}

/*
 * Send a SCSI Command PDU for @cdb to @lun with EDTL @edtl, @imm bytes of immediate data
 * (F=1: no unsolicited Data-Out follows), and answer R2Ts from @dout; collect the answer.
 */
static void run(struct harness *h, uint8_t lun, const uint8_t *cdb, size_t cdb_len,
		uint8_t rw_flags, uint32_t edtl, const uint8_t *dout, uint32_t imm)
{
	uint8_t bhs[ISCSI_BHS_LEN];
	uint32_t itt = ++h->itt;
	struct h_pdu *r;

	memset(&ans, 0, sizeof(ans));
	scsitgt__bhs_init(bhs, ISCSI_OP_SCSI_CMD, ISCSI_FLAG_FINAL | rw_flags | 1 /* simple */);
	bhs[ISCSI_BHS_LUN + 1] = lun;
	put_be32(&bhs[ISCSI_BHS_ITT], itt);
	put_be32(&bhs[ISCSI_CMD_EDTL], edtl);
	put_be32(&bhs[ISCSI_BHS_CMDSN], h->cmd_sn++);
	memcpy(&bhs[ISCSI_CMD_CDB], cdb, cdb_len);
	h_send(h, bhs, imm ? dout : NULL, imm);
	while ((r = h_take(h)) != NULL) {
		uint8_t op = scsitgt__bhs_opcode(r->bhs);

		if (op == ISCSI_OP_R2T) {
			uint32_t off = get_be32(&r->bhs[ISCSI_BHS_BUFFER_OFFSET]);
			uint32_t len = get_be32(&r->bhs[ISCSI_R2T_DESIRED_LEN]);
			uint8_t d[ISCSI_BHS_LEN];

			ans.r2ts++;
			scsitgt__bhs_init(d, ISCSI_OP_DATA_OUT, ISCSI_FLAG_FINAL);
			put_be32(&d[ISCSI_BHS_ITT], itt);
			memcpy(&d[ISCSI_BHS_TTT], &r->bhs[ISCSI_BHS_TTT], 4);
			put_be32(&d[ISCSI_BHS_BUFFER_OFFSET], off);
			h_send(h, d, dout + off, len);
		} else if (op == ISCSI_OP_DATA_IN) {
			assert_int_equal(get_be32(&r->bhs[ISCSI_BHS_BUFFER_OFFSET]), ans.datain);
			assert_true(ans.datain + r->len <= sizeof(ans.data));
			memcpy(ans.data + ans.datain, r->data, r->len);
			ans.datain += r->len;
			ans.datain_pdus++;
			if (r->bhs[ISCSI_BHS_FLAGS] & ISCSI_DATAIN_FLAG_STATUS) {
				ans.have_rsp = true;
				ans.status = r->bhs[ISCSI_DATAIN_STATUS];
				ans.flags = r->bhs[ISCSI_BHS_FLAGS] &
					    (ISCSI_RSP_FLAG_OVERFLOW | ISCSI_RSP_FLAG_UNDERFLOW);
				ans.residual = get_be32(&r->bhs[ISCSI_BHS_RESIDUAL]);
			}
		} else if (op == ISCSI_OP_SCSI_RSP) {
			ans.have_rsp = true;
			ans.status = r->bhs[ISCSI_RSP_STATUS];
			ans.flags = r->bhs[ISCSI_BHS_FLAGS] &
				    (ISCSI_RSP_FLAG_OVERFLOW | ISCSI_RSP_FLAG_UNDERFLOW);
			ans.residual = get_be32(&r->bhs[ISCSI_BHS_RESIDUAL]);
			if (r->len >= 2) {
				ans.sense_len = get_be16(r->data);
				assert_true(ans.sense_len <= sizeof(ans.sense));
				memcpy(ans.sense, r->data + 2, ans.sense_len);
			}
		} else {
			fail_msg("unexpected PDU opcode %02x", op);
		}
	}
	assert_true(ans.have_rsp);
}

static void cdb_rw10(uint8_t *cdb, uint8_t op, uint32_t lba, uint16_t blocks)
{
	memset(cdb, 0, 16);
	cdb[0] = op;
	put_be32(&cdb[2], lba);
	put_be16(&cdb[7], blocks);
}

static uint8_t pattern(uint32_t i, uint8_t seed)
{
	return (uint8_t)(i * 31 + seed + (i >> 9));
}

/*
 * Issue 17, defect 10: a 64 KiB READ from LBA 960 with a bad block at 1000. The 40 good
 * blocks come first as Data-In, then the SCSI Response: CHECK CONDITION, MEDIUM ERROR
 * UNRECOVERED READ ERROR with INFORMATION 1000, and an underflow residual of the 88 blocks not
 * sent, so that the initiator completes 40 blocks (Linux: min((1000 - 960) * 512, bufflen -
 * resid)) and reports sector 1000.
 */
static void test_read_medium_error_partial(void **state)
{
	static uint8_t blocks[128 * 512];
	struct harness h;
	uint8_t cdb[16];
	void *fault;

	(void)state;
	assert_int_equal(h_init(&h, true), 0);
	fault = add_fault_lun(&h);
	assert_int_equal(h_login(&h, "Normal"), 0);
	for (uint32_t i = 0; i < sizeof(blocks); i++)
		blocks[i] = pattern(i, 9);
	cdb_rw10(cdb, 0x2a, 960, 128);
	run(&h, FAULT_LUN, cdb, 10, ISCSI_CMD_FLAG_WRITE, sizeof(blocks), blocks, 8192);
	assert_int_equal(ans.status, 0);
	assert_int_equal(scsitgt_backend_fault_add_spec(fault, "medium@read:lba=1000:len=1"), 1);

	cdb_rw10(cdb, 0x28, 960, 128);
	run(&h, FAULT_LUN, cdb, 10, ISCSI_CMD_FLAG_READ, sizeof(blocks), NULL, 0);
	assert_int_equal(ans.datain, 40 * 512);
	assert_memory_equal(ans.data, blocks, 40 * 512);
	/* RFC 7143 §11.7.2: no status in a Data-In when there is sense data. */
	assert_int_equal(ans.status, 0x02);
	assert_int_equal(ans.flags, ISCSI_RSP_FLAG_UNDERFLOW);
	assert_int_equal(ans.residual, 88 * 512);
	assert_true(ans.sense_len >= 18);
	assert_int_equal(ans.sense[0], 0xf0); /* VALID, current, fixed format */
	assert_int_equal(ans.sense[2] & 0x0f, 0x3);
	assert_int_equal(get_be32(&ans.sense[3]), 1000);
	assert_int_equal(ans.sense[12], 0x11);
	assert_int_equal(ans.sense[13], 0x00);

	/* EDTL shorter than the good part: only EDTL bytes go, the overflow is the rest. */
	run(&h, FAULT_LUN, cdb, 10, ISCSI_CMD_FLAG_READ, 16 * 512, NULL, 0);
	assert_int_equal(ans.datain, 16 * 512);
	assert_int_equal(ans.status, 0x02);
	assert_int_equal(ans.flags, ISCSI_RSP_FLAG_OVERFLOW);
	assert_int_equal(ans.residual, 24 * 512);
	h_fini(&h);
}

/* One EDTL against a CDB, and what must come of it. */
struct len_case {
	uint32_t edtl;
	uint32_t imm;	/* immediate data sent with the command */
	uint8_t status; /* 0 GOOD, or CHECK CONDITION: */
	uint8_t asc;	/* 0Eh INVALID FIELD IN COMMAND IU (03h), 24h INVALID FIELD IN CDB */
	uint8_t flags;	/* ISCSI_RSP_FLAG_OVERFLOW / _UNDERFLOW */
	uint32_t residual;
	uint32_t written; /* blocks of the new data on the medium afterwards (writes) */
};

static void assert_outcome(const struct len_case *c, uint32_t datain)
{
	assert_int_equal(ans.status, c->status);
	assert_int_equal(ans.flags, c->flags);
	assert_int_equal(ans.residual, c->residual);
	assert_int_equal(ans.datain, datain);
	if (c->status == 0x02) {
		/* ILLEGAL REQUEST, and no data was solicited for a command refused for its
		 * length. */
		assert_int_equal(ans.sense[2] & 0x0f, 0x5);
		assert_int_equal(ans.sense[12], c->asc);
		assert_int_equal(ans.sense[13], c->asc == 0x0e ? 0x03 : 0x00);
		assert_int_equal(ans.r2ts, 0);
	}
}

/* Blocks @lba, @lba + 1 hold @old; the command wrote the new data over the first @written. */
static void assert_medium(struct harness *h, uint32_t lba, const uint8_t *old, const uint8_t *new,
			  uint32_t written)
{
	uint8_t cdb[16];

	cdb_rw10(cdb, 0x28, lba, 2);
	run(h, 0, cdb, 10, ISCSI_CMD_FLAG_READ, 1024, NULL, 0);
	assert_int_equal(ans.status, 0);
	assert_memory_equal(ans.data, new, written * 512);
	assert_memory_equal(ans.data + written * 512, old + written * 512, (2 - written) * 512);
}

/*
 * Issue 17, defect 1: every EDTL against a two-block WRITE (10) and WRITE AND VERIFY (10):
 * equal, above (whole blocks or not), below in whole blocks (those are written), below inside
 * a block or below one block (refused, nothing written: never GOOD with data dropped), zero.
 */
static void test_write_lengths(void **state)
{
	static const struct len_case cases[] = {
		{ 1024, 0, 0, 0, 0, 0, 2 },
		{ 1024, 1024, 0, 0, 0, 0, 2 },
		{ 2048, 0, 0, 0, ISCSI_RSP_FLAG_UNDERFLOW, 1024, 2 },
		{ 1500, 1500, 0, 0, ISCSI_RSP_FLAG_UNDERFLOW, 476, 2 },
		{ 512, 0, 0, 0, ISCSI_RSP_FLAG_OVERFLOW, 512, 1 },
		{ 512, 512, 0, 0, ISCSI_RSP_FLAG_OVERFLOW, 512, 1 },
		{ 700, 0, 2, 0x0e, ISCSI_RSP_FLAG_OVERFLOW, 324, 0 },
		{ 700, 700, 2, 0x0e, ISCSI_RSP_FLAG_OVERFLOW, 324, 0 },
		{ 200, 200, 2, 0x0e, ISCSI_RSP_FLAG_OVERFLOW, 824, 0 },
		{ 200, 0, 2, 0x0e, ISCSI_RSP_FLAG_OVERFLOW, 824, 0 },
		{ 0, 0, 0, 0, ISCSI_RSP_FLAG_OVERFLOW, 1024, 0 },
	};
	static const uint8_t ops[] = { 0x2a /* WRITE (10) */, 0x2e /* WRITE AND VERIFY (10) */ };
	static uint8_t old[2048], new[2048];
	struct harness h;
	uint8_t cdb[16];
	uint32_t lba = 100;

	(void)state;
	assert_int_equal(h_init(&h, true), 0);
	assert_int_equal(h_login(&h, "Normal"), 0);
	for (size_t o = 0; o < sizeof(ops); o++) {
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++, lba += 2) {
			const struct len_case *c = &cases[i];

			for (uint32_t k = 0; k < sizeof(old); k++) {
				old[k] = pattern(k, (uint8_t)(2 * i));
				new[k] = pattern(k, (uint8_t)(2 * i + 1));
			}
			cdb_rw10(cdb, 0x2a, lba, 2);
			run(&h, 0, cdb, 10, ISCSI_CMD_FLAG_WRITE, 1024, old, 0);
			assert_int_equal(ans.status, 0);
			cdb_rw10(cdb, ops[o], lba, 2);
			run(&h, 0, cdb, 10, ISCSI_CMD_FLAG_WRITE, c->edtl, new, c->imm);
			assert_outcome(c, 0);
			assert_medium(&h, lba, old, new, c->written);
		}
	}
	h_fini(&h);
}

/* READ (10) of two blocks: the target sends what fits in EDTL and reports the rest. */
static void test_read_lengths(void **state)
{
	static const struct len_case cases[] = {
		{ 1024, 0, 0, 0, 0, 0, 0 },
		{ 2048, 0, 0, 0, ISCSI_RSP_FLAG_UNDERFLOW, 1024, 0 },
		{ 1500, 0, 0, 0, ISCSI_RSP_FLAG_UNDERFLOW, 476, 0 },
		{ 512, 0, 0, 0, ISCSI_RSP_FLAG_OVERFLOW, 512, 0 },
		{ 700, 0, 0, 0, ISCSI_RSP_FLAG_OVERFLOW, 324, 0 },
		{ 200, 0, 0, 0, ISCSI_RSP_FLAG_OVERFLOW, 824, 0 },
		{ 0, 0, 0, 0, ISCSI_RSP_FLAG_OVERFLOW, 1024, 0 },
	};
	static uint8_t blocks[1024];
	struct harness h;
	uint8_t cdb[16];

	(void)state;
	assert_int_equal(h_init(&h, true), 0);
	assert_int_equal(h_login(&h, "Normal"), 0);
	for (uint32_t k = 0; k < sizeof(blocks); k++)
		blocks[k] = pattern(k, 77);
	cdb_rw10(cdb, 0x2a, 50, 2);
	run(&h, 0, cdb, 10, ISCSI_CMD_FLAG_WRITE, 1024, blocks, 1024);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct len_case *c = &cases[i];
		uint32_t sent = c->edtl < 1024 ? c->edtl : 1024;

		cdb_rw10(cdb, 0x28, 50, 2);
		run(&h, 0, cdb, 10, ISCSI_CMD_FLAG_READ, c->edtl, NULL, 0);
		assert_outcome(c, sent);
		assert_memory_equal(ans.data, blocks, sent);
	}
	h_fini(&h);
}

/*
 * WRITE SAME (10) (one block of data for four) and COMPARE AND WRITE (two blocks of data for
 * one): their data cannot be cut or extended, so any other EDTL is refused and nothing is
 * written.
 */
static void test_fixed_data_lengths(void **state)
{
	static const struct len_case ws_cases[] = {
		{ 512, 512, 0, 0, 0, 0, 1 },
		{ 512, 0, 0, 0, 0, 0, 1 },
		{ 1024, 1024, 2, 0x24, ISCSI_RSP_FLAG_UNDERFLOW, 512, 0 },
		{ 700, 0, 2, 0x24, ISCSI_RSP_FLAG_UNDERFLOW, 188, 0 },
		{ 200, 200, 2, 0x0e, ISCSI_RSP_FLAG_OVERFLOW, 312, 0 },
		{ 0, 0, 2, 0x24, ISCSI_RSP_FLAG_OVERFLOW, 512, 0 },
	};
	static const struct len_case caw_cases[] = {
		{ 1024, 1024, 0, 0, 0, 0, 1 },
		{ 2048, 1024, 2, 0x24, ISCSI_RSP_FLAG_UNDERFLOW, 1024, 0 },
		{ 1500, 0, 2, 0x24, ISCSI_RSP_FLAG_UNDERFLOW, 476, 0 },
		{ 512, 512, 2, 0x24, ISCSI_RSP_FLAG_OVERFLOW, 512, 0 },
		{ 700, 700, 2, 0x0e, ISCSI_RSP_FLAG_OVERFLOW, 324, 0 },
		{ 200, 0, 2, 0x0e, ISCSI_RSP_FLAG_OVERFLOW, 824, 0 },
		{ 0, 0, 2, 0x24, ISCSI_RSP_FLAG_OVERFLOW, 1024, 0 },
	};
	static uint8_t old[2048], dout[2048], expect[1024];
	struct harness h;
	uint8_t cdb[16];
	uint32_t lba = 300;

	(void)state;
	assert_int_equal(h_init(&h, true), 0);
	assert_int_equal(h_login(&h, "Normal"), 0);
	for (size_t i = 0; i < sizeof(ws_cases) / sizeof(ws_cases[0]); i++, lba += 4) {
		const struct len_case *c = &ws_cases[i];

		for (uint32_t k = 0; k < sizeof(old); k++) {
			old[k] = pattern(k, (uint8_t)i);
			dout[k] = (uint8_t)(0xa0 + i);
		}
		cdb_rw10(cdb, 0x2a, lba, 2);
		run(&h, 0, cdb, 10, ISCSI_CMD_FLAG_WRITE, 1024, old, 0);
		/* WRITE SAME (10) of 2 blocks from one block of data. */
		cdb_rw10(cdb, 0x41, lba, 2);
		run(&h, 0, cdb, 10, ISCSI_CMD_FLAG_WRITE, c->edtl, dout, c->imm);
		assert_outcome(c, 0);
		memset(expect, 0xa0 + (int)i, sizeof(expect));
		if (c->written)
			assert_medium(&h, lba, old, expect, 2);
		else
			assert_medium(&h, lba, old, expect, 0);
	}
	for (size_t i = 0; i < sizeof(caw_cases) / sizeof(caw_cases[0]); i++, lba += 2) {
		const struct len_case *c = &caw_cases[i];

		for (uint32_t k = 0; k < sizeof(old); k++)
			old[k] = pattern(k, (uint8_t)(40 + i));
		cdb_rw10(cdb, 0x2a, lba, 2);
		run(&h, 0, cdb, 10, ISCSI_CMD_FLAG_WRITE, 1024, old, 0);
		/* COMPARE AND WRITE of block lba: compare with old, write new. */
		memcpy(dout, old, 512);
		memset(dout + 512, 0xc0 + (int)i, 1536);
		memset(cdb, 0, sizeof(cdb));
		cdb[0] = 0x89;
		put_be64(&cdb[2], lba);
		cdb[13] = 1;
		run(&h, 0, cdb, 16, ISCSI_CMD_FLAG_WRITE, c->edtl, dout, c->imm);
		assert_outcome(c, 0);
		assert_medium(&h, lba, old, dout + 512, c->written);
	}
	h_fini(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_lengths),
		cmocka_unit_test(test_read_lengths),
		cmocka_unit_test(test_fixed_data_lengths),
		cmocka_unit_test(test_read_medium_error_partial),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
