/* SPDX-License-Identifier: MIT */
/*
 * scsitgt__cmd_fit_data_out(): a write whose Data-Out length differs from its CDB's
 * (SAM-5 §5.4.3, SBC-4, RFC 7143 §11.4.5.2). Plain media writes keep the whole blocks that
 * arrive; a shorter length ending inside a block is refused with INVALID FIELD IN COMMAND
 * INFORMATION UNIT (issue 17), WRITE SAME, WRITE ATOMIC and parameter-list writes of another
 * whole length with INVALID FIELD IN CDB; zero for a CDB that moves nothing matches.
 */
#include "test_util.h"

#include "core/scsi_spec.h"

/* Set up (not execute) @cdb on the loop fabric's nexus. */
static struct scsitgt__cmd *setup(struct tctx *t, const uint8_t *cdb, size_t len)
{
	struct scsitgt__cmd *cmd;
	uint8_t lun[8];

	assert_int_equal(scsitgt__cmd_create(&cmd, t->lf->sess, 0), 0);
	scsitgt__lun_encode(0, lun);
	cmd->defer_buf = true;
	scsitgt__cmd_setup(cmd, lun, cdb, len, 0, 1);
	return cmd;
}

/* Refused with ILLEGAL REQUEST and @asc/@ascq. */
static void assert_refused(const struct scsitgt__cmd *cmd, uint8_t asc, uint8_t ascq)
{
	assert_int_equal(cmd->state, SCSITGT__CMD_DONE);
	assert_int_equal(cmd->status, 0x02);
	assert_int_equal(cmd->sense[2] & 0x0f, 0x5);
	assert_int_equal(cmd->sense[12], asc);
	assert_int_equal(cmd->sense[13], ascq);
}

/* A length ending inside a block: INVALID FIELD IN COMMAND INFORMATION UNIT (0Eh/03h). */
static void assert_invalid_field(const struct scsitgt__cmd *cmd)
{
	assert_refused(cmd, 0x0e, 0x03);
}

/* A whole-block (or parameter list) length the CDB contradicts: INVALID FIELD IN CDB. */
static void assert_invalid_cdb(const struct scsitgt__cmd *cmd)
{
	assert_refused(cmd, 0x24, 0x00);
}

static void test_media_write(void **state)
{
	struct tctx *t = tctx_create(0, NULL);
	struct scsitgt__cmd *cmd;
	uint8_t cdb[CDB_BUF];

	(void)state;
	/* Less, in whole blocks: 3 of 4 arrive and are written. */
	cmd = setup(t, cdb, cdb_rw(cdb, SBC_WRITE_10, 8, 4, 0));
	assert_int_equal(cmd->state, SCSITGT__CMD_NEED_DATA);
	assert_int_equal(scsitgt__cmd_fit_data_out(cmd, 3 * 512), 4 * 512);
	assert_int_equal(cmd->state, SCSITGT__CMD_NEED_DATA);
	assert_int_equal(cmd->nblocks, 3);
	assert_int_equal(cmd->xfer_len, 3 * 512);
	assert_int_equal(cmd->lba, 8);
	scsitgt__cmd_destroy(cmd);

	/* 3 whole blocks and part of a 4th: the part cannot be written, so nothing is. */
	cmd = setup(t, cdb, cdb_rw(cdb, SBC_WRITE_10, 8, 4, 0));
	assert_int_equal(scsitgt__cmd_fit_data_out(cmd, 3 * 512 + 100), 4 * 512);
	assert_invalid_field(cmd);
	scsitgt__cmd_destroy(cmd);

	/* Less than a block (issue 17: 200 bytes of a 512-byte block were dropped with GOOD). */
	cmd = setup(t, cdb, cdb_rw(cdb, SBC_WRITE_16, 8, 4, 0));
	assert_int_equal(scsitgt__cmd_fit_data_out(cmd, 511), 4 * 512);
	assert_invalid_field(cmd);
	scsitgt__cmd_destroy(cmd);
	cmd = setup(t, cdb, cdb_rw(cdb, SBC_WRITE_10, 8, 1, 0));
	assert_int_equal(scsitgt__cmd_fit_data_out(cmd, 200), 512);
	assert_invalid_field(cmd);
	scsitgt__cmd_destroy(cmd);

	/* Nothing at all: nothing to write, nothing dropped; GOOD at once. */
	cmd = setup(t, cdb, cdb_rw(cdb, SBC_WRITE_16, 8, 4, 0));
	assert_int_equal(scsitgt__cmd_fit_data_out(cmd, 0), 4 * 512);
	assert_int_equal(cmd->state, SCSITGT__CMD_DONE);
	assert_int_equal(cmd->status, 0x00);
	assert_int_equal(cmd->sense_len, 0);
	scsitgt__cmd_destroy(cmd);

	/* WRITE ATOMIC (16) is all or nothing: never cut. */
	memset(cdb, 0, sizeof(cdb));
	cdb[0] = SBC_WRITE_ATOMIC_16;
	put_be64(&cdb[2], 8);
	put_be16(&cdb[12], 8);
	cmd = setup(t, cdb, 16);
	assert_int_equal(cmd->state, SCSITGT__CMD_NEED_DATA);
	assert_int_equal(scsitgt__cmd_fit_data_out(cmd, 4 * 512), 8 * 512);
	assert_invalid_cdb(cmd);
	scsitgt__cmd_destroy(cmd);

	/* Overflow: the initiator offers more; the CDB's length stands. */
	cmd = setup(t, cdb, cdb_rw(cdb, SBC_WRITE_10, 8, 2, 0));
	assert_int_equal(scsitgt__cmd_fit_data_out(cmd, 8192), 2 * 512);
	assert_int_equal(cmd->state, SCSITGT__CMD_NEED_DATA);
	assert_int_equal(cmd->nblocks, 2);
	assert_int_equal(cmd->xfer_len, 2 * 512);
	scsitgt__cmd_destroy(cmd);

	/* Matching lengths: nothing changes. */
	cmd = setup(t, cdb, cdb_rw(cdb, SBC_WRITE_10, 8, 2, 0));
	assert_int_equal(scsitgt__cmd_fit_data_out(cmd, 1024), 1024);
	assert_int_equal(cmd->nblocks, 2);
	scsitgt__cmd_destroy(cmd);

	/* A command refused by setup stays as it is. */
	cmd = setup(t, cdb, cdb_rw(cdb, SBC_WRITE_10, 0xffffff, 2, 0));
	assert_int_equal(cmd->state, SCSITGT__CMD_DONE);
	assert_int_equal(cmd->sense[12], 0x21); /* LBA OUT OF RANGE */
	scsitgt__cmd_fit_data_out(cmd, 0);
	assert_int_equal(cmd->sense[12], 0x21);
	scsitgt__cmd_destroy(cmd);
	tctx_destroy(t);
}

static void test_not_cut(void **state)
{
	struct tctx *t = tctx_create(0, NULL);
	struct scsitgt__cmd *cmd;
	uint8_t cdb[16];

	(void)state;
	/* WRITE SAME (10) of one block carries one block; half of it is an error. */
	memset(cdb, 0, sizeof(cdb));
	cdb[0] = SBC_WRITE_SAME_10;
	put_be32(&cdb[2], 8);
	put_be16(&cdb[7], 1);
	cmd = setup(t, cdb, 10);
	assert_int_equal(cmd->state, SCSITGT__CMD_NEED_DATA);
	assert_int_equal(scsitgt__cmd_fit_data_out(cmd, 256), 512);
	assert_invalid_field(cmd);
	scsitgt__cmd_destroy(cmd);

	/* A parameter list (MODE SELECT (10), 24 bytes) cannot be cut short. */
	memset(cdb, 0, sizeof(cdb));
	cdb[0] = SPC_MODE_SELECT_10;
	cdb[1] = 0x10; /* PF */
	put_be16(&cdb[7], 24);
	cmd = setup(t, cdb, 10);
	assert_int_equal(cmd->state, SCSITGT__CMD_NEED_DATA);
	assert_int_equal(scsitgt__cmd_fit_data_out(cmd, 12), 24);
	assert_invalid_cdb(cmd);
	scsitgt__cmd_destroy(cmd);

	/* COMPARE AND WRITE of 0 blocks moves nothing: 0 announced bytes match. */
	memset(cdb, 0, sizeof(cdb));
	cdb[0] = SBC_COMPARE_AND_WRITE;
	put_be64(&cdb[2], 8);
	cmd = setup(t, cdb, 16);
	assert_int_not_equal(cmd->state, SCSITGT__CMD_DONE);
	assert_int_equal(cmd->xfer_len, 0);
	assert_int_equal(scsitgt__cmd_fit_data_out(cmd, 0), 0);
	assert_int_not_equal(cmd->state, SCSITGT__CMD_DONE);
	scsitgt__cmd_destroy(cmd);
	tctx_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_media_write),
		cmocka_unit_test(test_not_cut),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
