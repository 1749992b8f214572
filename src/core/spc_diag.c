/* SPDX-License-Identifier: MIT */
/*
 * SPC-5 §6.42 SEND DIAGNOSTIC and §6.29 RECEIVE DIAGNOSTIC RESULTS.
 *
 * The default self-test (SELFTEST 1) reads the first and the last logical block through the
 * backend: a LUN whose medium cannot be read fails it with HARDWARE ERROR, LOGICAL UNIT
 * FAILED SELF-TEST (3Eh/03h). The short and extended self-tests of the SELF-TEST CODE field,
 * in the background or the foreground, and the abort of a background one, are
 * spc_selftest.c's; they report in the Self-Test Results log page (10h). The only diagnostic
 * page is Supported Diagnostic Pages (00h, §7.2.2): a SEND DIAGNOSTIC may send it (PF 1) and
 * RECEIVE DIAGNOSTIC RESULTS returns it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "core/cdb.h"
#include "core/fabric.h"
#include "core/scsi_spec.h"
#include "core/spc.h"
#include "core/spc_selftest.h"
#include "util/be.h"

#define DIAG_HDR_LEN 4
#define DIAG_SUPPORTED_PAGES 0x00

/* SPC-5 §6.42: SELF-TEST CODE (byte 1 bits 7..5), PF (bit 4), SELFTEST (bit 2), DEVOFFL and
 * UNITOFFL (bits 1..0); PARAMETER LIST LENGTH in bytes 3..4. */
enum scsitgt__sense_reason scsitgt__spc_parse_send_diag(struct scsitgt__cmd *cmd)
{
	uint8_t code = cmd->cdb[1] >> 5;
	bool pf = cmd->cdb[1] & 0x10, selftest = cmd->cdb[1] & 0x04;
	uint16_t len = get_be16(&cmd->cdb[3]);

	if (selftest) {
		/* The default self-test takes no SELF-TEST CODE and no parameter list. */
		if (code)
			return scsitgt__cmd_bad_cdb_field(cmd, 1, 7);
		if (len)
			return scsitgt__cmd_bad_cdb_field(cmd, 3, 7);
		return SCSITGT__SR_OK;
	}
	/* Short/extended, background/foreground self-tests and the abort of a background
	 * one take no parameter list; 011b and 111b are reserved. */
	if (code == 3 || code == 7)
		return scsitgt__cmd_bad_cdb_field(cmd, 1, 7);
	if (code) {
		if (len)
			return scsitgt__cmd_bad_cdb_field(cmd, 3, 7);
		return SCSITGT__SR_OK;
	}
	if (len == 0)
		return SCSITGT__SR_OK;
	/* A parameter list in a vendor specific format (PF 0) is not one we know. */
	if (!pf)
		return scsitgt__cmd_bad_cdb_field(cmd, 1, 4);
	cmd->dir = SCSITGT__DIR_OUT;
	cmd->xfer_len = len;
	return SCSITGT__SR_OK;
}

/* The default self-test's reads: block 0, then the last block. */
static void diag_read_done(struct scsitgt__cmd *cmd, struct scsitgt_io *io,
			   enum scsitgt__sense_reason reason);

/* The block buffer goes with a command given up with its READ in the backend (core/drain.c;
 * cmd.h, struct scsitgt__cmd_ctx_ops), once that READ is back: it fills the buffer. */
static void diag_blk_free(struct scsitgt__cmd *cmd)
{
	free(cmd->ctx.diag.blk);
	cmd->ctx.diag.blk = NULL;
}

static const struct scsitgt__cmd_ctx_ops diag_ctx_ops = {
	.free = diag_blk_free,
};

/* The self-test ends: its buffer is the family's own again, and goes. */
static void diag_end(struct scsitgt__cmd *cmd)
{
	scsitgt__cmd_ctx_own(cmd, NULL);
	diag_blk_free(cmd);
}

static void diag_read(struct scsitgt__cmd *cmd, uint64_t lba)
{
	struct iovec iov = { cmd->ctx.diag.blk, cmd->lun->geo.block_size };

	cmd->ctx.diag.lba = lba;
	if (scsitgt__io_submit(cmd, SCSITGT_IO_READ, lba, 1, &iov, 1, 0, diag_read_done) < 0) {
		diag_end(cmd);
		scsitgt__cmd_complete(cmd, SCSITGT__SR_BUSY);
	}
}

static void diag_read_done(struct scsitgt__cmd *cmd, struct scsitgt_io *io,
			   enum scsitgt__sense_reason reason)
{
	uint64_t last = scsitgt__lun_blocks(cmd->lun) - 1;

	(void)io;
	if (reason == SCSITGT__SR_OK && cmd->ctx.diag.lba != last && !scsitgt__cmd_aborted(cmd)) {
		diag_read(cmd, last);
		return;
	}
	diag_end(cmd);
	if (scsitgt__cmd_aborted(cmd)) {
		scsitgt__cmd_complete(cmd, SCSITGT__SR_ABORTED);
		return;
	}
	if (reason == SCSITGT__SR_OK || reason == SCSITGT__SR_BUSY) {
		scsitgt__cmd_complete(cmd, reason);
		return;
	}
	/* SPC-5 §5.9.2: a failed default self-test. */
	scsitgt__cmd_complete_raw(cmd, SENSE_HARDWARE_ERROR, 0x3e, 0x03);
}

void scsitgt__spc_send_diag(struct scsitgt__cmd *cmd)
{
	const uint8_t *p = cmd->buf;
	uint8_t *blk;

	if (cmd->xfer_len) {
		/* SPC-5 §7.2.2: the Supported Diagnostic Pages page, header only, PAGE LENGTH 0
		 * (it asks for nothing; we answer it anyway). Any other page is not supported. */
		if (cmd->xfer_len < DIAG_HDR_LEN) {
			scsitgt__cmd_complete(cmd, SCSITGT__SR_PARAM_LIST_LENGTH_ERROR);
			return;
		}
		if (p[0] != DIAG_SUPPORTED_PAGES) {
			scsitgt__cmd_bad_param_field(cmd, 0, 7);
			scsitgt__cmd_complete(cmd, SCSITGT__SR_INVALID_FIELD_IN_PARAM_LIST);
			return;
		}
		if (get_be16(&p[2]) != 0 || cmd->xfer_len != DIAG_HDR_LEN) {
			scsitgt__cmd_bad_param_field(cmd, 2, 7);
			scsitgt__cmd_complete(cmd, SCSITGT__SR_INVALID_FIELD_IN_PARAM_LIST);
			return;
		}
		scsitgt__cmd_complete(cmd, SCSITGT__SR_OK);
		return;
	}
	if (!(cmd->cdb[1] & 0x04) && (cmd->cdb[1] >> 5)) {
		scsitgt__selftest_start(cmd, cmd->cdb[1] >> 5);
		return;
	}
	if (!(cmd->cdb[1] & 0x04)) {
		/* SELFTEST 0, SELF-TEST CODE 000b, no list: nothing to do. */
		scsitgt__cmd_complete(cmd, SCSITGT__SR_OK);
		return;
	}
	blk = malloc(cmd->lun->geo.block_size);
	if (blk == NULL) {
		scsitgt__cmd_complete(cmd, SCSITGT__SR_BUSY);
		return;
	}
	cmd->ctx.diag.blk = blk;
	scsitgt__cmd_ctx_own(cmd, &diag_ctx_ops);
	diag_read(cmd, 0);
}

/* SPC-5 §6.29: PCV (byte 1 bit 0), PAGE CODE (byte 2), ALLOCATION LENGTH (bytes 3..4). */
enum scsitgt__sense_reason scsitgt__spc_parse_receive_diag(struct scsitgt__cmd *cmd)
{
	/* With PCV 1 the page must be one we have; with PCV 0 the answer is the page the last
	 * SEND DIAGNOSTIC asked for, which can only be Supported Diagnostic Pages. */
	if ((cmd->cdb[1] & 0x01) && cmd->cdb[2] != DIAG_SUPPORTED_PAGES)
		return scsitgt__cmd_bad_cdb_field(cmd, 2, 7);
	return scsitgt__parse_alloc16(cmd, 3);
}

void scsitgt__spc_receive_diag(struct scsitgt__cmd *cmd)
{
	uint8_t d[DIAG_HDR_LEN + 1] = { DIAG_SUPPORTED_PAGES, 0, 0, 1, DIAG_SUPPORTED_PAGES };

	scsitgt__cmd_respond(cmd, d, sizeof(d));
	scsitgt__cmd_complete(cmd, SCSITGT__SR_OK);
}
