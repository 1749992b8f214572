/* SPDX-License-Identifier: MIT */
/*
 * SBC-4 §5.42-§5.44 WRITE AND VERIFY (10)/(12)/(16): write the blocks, then read them back from
 * the medium; with BYTCHK 01b also compare them with the Data-Out buffer. The write carries FUA
 * so the read-back checks the medium, not a volatile cache.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "core/cdb.h"
#include "core/fabric.h"
#include "core/scsi_spec.h"
#include "util/be.h"

/* cmd->step_arg slots used here. */
enum { WV_BYTCHK = 0, WV_READBACK = 1 };

enum scsitgt__sense_reason scsitgt__sbc_parse_write_verify(struct scsitgt__cmd *cmd)
{
	const uint8_t *cdb = cmd->cdb;
	struct scsitgt_lun *lun = cmd->lun;
	uint8_t bytchk = (cdb[1] >> 1) & 3;
	enum scsitgt__sense_reason r;
	uint64_t lba;
	uint32_t nblocks;
	uint16_t len_off;

	switch (cdb[0]) {
	case SBC_WRITE_AND_VERIFY_10:
		lba = get_be32(&cdb[2]);
		nblocks = get_be16(&cdb[7]);
		len_off = 7;
		break;
	case SBC_WRITE_AND_VERIFY_12:
		lba = get_be32(&cdb[2]);
		nblocks = get_be32(&cdb[6]);
		len_off = 6;
		break;
	default: /* WRITE AND VERIFY (16) */
		lba = get_be64(&cdb[2]);
		nblocks = get_be32(&cdb[10]);
		len_off = 10;
		break;
	}
	/* SBC-4 Table 38: BYTCHK 00b verifies the medium, 01b compares; 10b and 11b are
	 * reserved for WRITE AND VERIFY. */
	if (bytchk > 1)
		return scsitgt__cmd_bad_cdb_field(cmd, 1, 2);
	r = scsitgt__sbc_check_range(cmd, lba, nblocks, len_off);
	if (r != SCSITGT_SR_OK)
		return r;
	cmd->lba = lba;
	cmd->nblocks = nblocks;
	cmd->io_flags = scsitgt__sbc_has_cache(lun) ? SCSITGT_IO_FLAG_FUA : 0;
	cmd->step_arg[WV_BYTCHK] = bytchk;
	cmd->dir = nblocks ? SCSITGT__DIR_OUT : SCSITGT__DIR_NONE;
	cmd->xfer_len = nblocks * lun->geo.block_size;
	return SCSITGT_SR_OK;
}

static void wv_read_done(struct scsitgt__cmd *cmd, struct scsitgt_io *io,
			 enum scsitgt__sense_reason reason)
{
	uint8_t *readback = (uint8_t *)(uintptr_t)cmd->step_arg[WV_READBACK];
	struct scsitgt__sense_detail detail = { 0 };

	(void)io;
	cmd->step_arg[WV_READBACK] = 0;
	if (reason == SCSITGT_SR_OK && cmd->step_arg[WV_BYTCHK]) {
		for (uint32_t i = 0; i < cmd->xfer_len; i++) {
			if (readback[i] != cmd->buf[i]) {
				/* SBC-4 §5.42: INFORMATION is the offset of the first
				 * miscompared byte in the Data-Out buffer. */
				detail.info_valid = true;
				detail.info = i;
				reason = SCSITGT_SR_MISCOMPARE;
				break;
			}
		}
	}
	free(readback);
	if (reason == SCSITGT_SR_RAW) {
		scsitgt__cmd_complete_raw(cmd, cmd->io_raw.key, cmd->io_raw.asc, cmd->io_raw.ascq);
		return;
	}
	scsitgt__cmd_complete_detail(cmd, reason, &detail);
}

static void wv_write_done(struct scsitgt__cmd *cmd, struct scsitgt_io *io,
			  enum scsitgt__sense_reason reason)
{
	struct iovec iov;
	uint8_t *readback;

	(void)io;
	if (reason == SCSITGT_SR_RAW) {
		scsitgt__cmd_complete_raw(cmd, cmd->io_raw.key, cmd->io_raw.asc, cmd->io_raw.ascq);
		return;
	}
	if (reason != SCSITGT_SR_OK || cmd->state == SCSITGT__CMD_ABORTED) {
		scsitgt__cmd_complete(cmd, reason);
		return;
	}
	readback = malloc(cmd->xfer_len);
	if (readback == NULL) {
		scsitgt__cmd_complete(cmd, SCSITGT_SR_BUSY);
		return;
	}
	cmd->step_arg[WV_READBACK] = (uintptr_t)readback;
	iov.iov_base = readback;
	iov.iov_len = cmd->xfer_len;
	if (scsitgt__io_submit(cmd, SCSITGT_IO_READ, cmd->lba, cmd->nblocks, &iov, 1, 0,
			       wv_read_done) < 0) {
		cmd->step_arg[WV_READBACK] = 0;
		free(readback);
		scsitgt__cmd_complete(cmd, SCSITGT_SR_BUSY);
	}
}

void scsitgt__sbc_write_verify(struct scsitgt__cmd *cmd)
{
	struct iovec iov;

	if (cmd->nblocks == 0) {
		scsitgt__cmd_complete(cmd, SCSITGT_SR_OK);
		return;
	}
	iov.iov_base = cmd->buf;
	iov.iov_len = cmd->xfer_len;
	if (scsitgt__io_submit(cmd, SCSITGT_IO_WRITE, cmd->lba, cmd->nblocks, &iov, 1,
			       cmd->io_flags, wv_write_done) < 0)
		scsitgt__cmd_complete(cmd, SCSITGT_SR_BUSY);
}
