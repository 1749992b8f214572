/* SPDX-License-Identifier: MIT */
/*
 * Data lengths over iSCSI (issue 17): the Expected Data Transfer Length against the CDB's own
 * length for every kind of write and for READ (RFC 7143 §11.4.5.2 residuals, SAM-5 §5.4.3),
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
	uint32_t datain;     /* Data-In bytes, in order from offset 0 */
	uint8_t data[1u << 17];
	unsigned int datain_pdus;
	bool have_rsp;       /* a SCSI Response, or status in the last Data-In */
	uint8_t status;
	uint8_t flags;       /* O/U flags of the status-carrying PDU */
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read_medium_error_partial),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
