/* SPDX-License-Identifier: MIT */
/*
 * SPC-5 §6.39 REQUEST SENSE. Sense data always travels with the status it belongs to
 * (autosense, SAM-5 §5.14), so no sense is ever left pending: the command reports NO SENSE,
 * LOGICAL UNIT NOT SUPPORTED for a LUN that does not exist, or the progress of a sanitize
 * or a self-test in progress (SPC-5 §6.39.2 pollable sense data), with GOOD status in each
 * case.
 */
#include "core/cdb.h"
#include "core/fabric.h"
#include "core/scsi_spec.h"
#include "core/sbc_sanitize.h"
#include "core/spc.h"
#include "core/spc_selftest.h"

enum scsitgt__sense_reason scsitgt__spc_parse_request_sense(struct scsitgt__cmd *cmd)
{
	cmd->dir = SCSITGT__DIR_IN;
	cmd->xfer_len = cmd->cdb[4];
	return SCSITGT__SR_OK;
}

void scsitgt__spc_request_sense(struct scsitgt__cmd *cmd)
{
	/* DESC selects descriptor format (SPC-5 §4.4.2) over fixed format (§4.4.3). */
	bool desc = cmd->cdb[1] & 0x01;
	uint8_t buf[SCSITGT_SENSE_BUF_SIZE];
	uint16_t progress;
	size_t len;

	if (cmd->lun == NULL) {
		/* SPC-5 §6.39.1: a REQUEST SENSE to an unsupported LUN returns GOOD status with
		 * the sense data ILLEGAL REQUEST, LOGICAL UNIT NOT SUPPORTED. */
		const struct scsitgt__sense_info *si =
			scsitgt__sense_lookup(SCSITGT__SR_LUN_NOT_SUPPORTED);

		len = scsitgt__sense_encode(buf, desc, si->key, si->asc, si->ascq, NULL);
	} else if (cmd->lun->sanitize.state == SCSITGT__SANITIZE_RUNNING) {
		/* SBC-4 §4.33.1: NOT READY, SANITIZE IN PROGRESS, with the progress indication
		 * in the sense key specific bytes (SPC-5 §4.4.2.4.2: SKSV, then a fraction of
		 * 65536; the field pointer encoding with C/D and BPV zero has that layout). */
		struct scsitgt__sense_detail d = {
			.sks_valid = true,
			.sks_field = cmd->lun->sanitize.progress,
		};

		len = scsitgt__sense_encode(buf, desc, SENSE_NOT_READY, 0x04, 0x1b, &d);
	} else if (scsitgt__selftest_progress(cmd->lun, &progress)) {
		/* SPC-5 §6.42: NOT READY, SELF-TEST IN PROGRESS, with the progress indication,
		 * in the background mode as in the foreground. */
		struct scsitgt__sense_detail d = {
			.sks_valid = true,
			.sks_field = progress,
		};

		len = scsitgt__sense_encode(buf, desc, SENSE_NOT_READY, 0x04, 0x09, &d);
	} else {
		len = scsitgt__sense_encode(buf, desc, SENSE_NO_SENSE, 0x00, 0x00, NULL);
	}
	scsitgt__cmd_respond(cmd, buf, len);
	scsitgt__cmd_complete(cmd, SCSITGT__SR_OK);
}
