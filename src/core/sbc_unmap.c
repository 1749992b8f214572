/* SPDX-License-Identifier: MIT */
/*
 * SBC-4 §5.30 UNMAP: validate the parameter list (§5.30.2), then deallocate each range with
 * one SCSITGT_IO_UNMAP io. Only thin-provisioned LUNs (LBPME) accept the command.
 *
 * An UNMAP changes what the blocks read (zeros under LBPRZ, anything otherwise), so for the
 * range lock (range_lock.h) it is a write: COMPARE AND WRITE, ORWRITE and WRITE ATOMIC must
 * see it whole or not at all. It takes the plain path once, over the span from its first to
 * its last block (every descriptor inside): one entry per command, so that it never holds one
 * range while it waits for another (no deadlock with the exclusive waiters, whatever the
 * order of its descriptors). The span may also cover blocks between the ranges: then it
 * waits for an exclusive command there too, which costs only time, and only while one exists.
 */
#include <stdint.h>

#include "core/cdb.h"
#include "core/fabric.h"
#include "core/scsi_spec.h"
#include "core/sbc.h"
#include "util/be.h"

#define UNMAP_HDR_LEN 8
#define UNMAP_DESC_LEN 16

enum scsitgt__sense_reason scsitgt__sbc_parse_unmap(struct scsitgt__cmd *cmd)
{
	uint16_t len = get_be16(&cmd->cdb[7]);

	/* SBC-4 §4.7.3.4: without logical block provisioning there is nothing to unmap (the
	 * row is SCSITGT__CDB_F_THIN: REPORT SUPPORTED OPERATION CODES does not list it there
	 * either). Refused here, after the write protection (docs/scsi.md, order of checks). */
	if (!scsitgt__sbc_lbpme(cmd->lun))
		return SCSITGT__SR_INVALID_OPCODE;
	/* A PARAMETER LIST LENGTH of zero is not an error: nothing is unmapped. */
	cmd->dir = len ? SCSITGT__DIR_OUT : SCSITGT__DIR_NONE;
	cmd->xfer_len = len;
	return SCSITGT__SR_OK;
}

/*
 * Every range's io is back. SBC-4 ties WCE to writes, not to UNMAP, but a LUN that reports
 * LBPRZ promises zeros from the unmapped blocks (§5.21.2): with WCE 0 the initiator sends no
 * SYNCHRONIZE CACHE, so the deallocation is made durable here before GOOD, as WRITE SAME with
 * UNMAP does (sbc_write_same.c). WCE is read now, not at parse: one turned off meanwhile
 * counts too (sbc.h). The FLUSH's own completion is scsitgt__io_done_complete_cmd().
 */
static void unmap_done(struct scsitgt__cmd *cmd, struct scsitgt_io *io,
		       enum scsitgt__sense_reason reason)
{
	if (reason != SCSITGT__SR_OK && cmd->io_reason == SCSITGT__SR_OK)
		cmd->io_reason = reason;
	if (cmd->ios_inflight || cmd->holds)
		return;
	scsitgt__range_plain_end(cmd->lun, &cmd->ctx.unmap);
	if (cmd->io_reason == SCSITGT__SR_OK && scsitgt__sbc_lbprz(cmd->lun) &&
	    scsitgt__sbc_cache_written_through(cmd->lun) && !scsitgt__cmd_aborted(cmd)) {
		scsitgt__sbc_flush_then_complete(cmd);
		return;
	}
	scsitgt__io_done_complete_cmd(cmd, io, SCSITGT__SR_OK);
}

/* Under the plain path's hold of the span (or counted untracked): one io per range. */
static void unmap_submit(struct scsitgt__cmd *cmd)
{
	const uint8_t *p = cmd->buf;
	uint32_t ndesc = get_be16(&p[2]) / UNMAP_DESC_LEN;

	/* A TMF while it waited for the span: no io (range_lock.h). */
	if (scsitgt__cmd_aborted(cmd)) {
		scsitgt__range_plain_end(cmd->lun, &cmd->ctx.unmap);
		scsitgt__cmd_complete(cmd, SCSITGT__SR_ABORTED);
		return;
	}
	/* Hold one count while submitting so that a backend completing inside submit cannot
	 * finish the command before every range was handed over. */
	scsitgt__cmd_hold(cmd);
	for (uint32_t i = 0; i < ndesc; i++) {
		const uint8_t *d = &p[UNMAP_HDR_LEN + i * UNMAP_DESC_LEN];
		uint32_t n = get_be32(&d[8]);

		if (n == 0)
			continue;
		if (scsitgt__io_submit(cmd, SCSITGT_IO_UNMAP, get_be64(d), n, NULL, 0, 0,
				       unmap_done) < 0) {
			if (cmd->io_reason == SCSITGT__SR_OK)
				cmd->io_reason = SCSITGT__SR_BUSY;
			break;
		}
	}
	scsitgt__cmd_unhold(cmd);
	unmap_done(cmd, NULL, SCSITGT__SR_OK);
}

void scsitgt__sbc_unmap(struct scsitgt__cmd *cmd)
{
	const struct scsitgt_lun *lun = cmd->lun;
	const uint8_t *p = cmd->buf;
	uint32_t len = cmd->xfer_len;
	const struct scsitgt__lun_limits *lim = &lun->limits;
	/* read once for the whole list (a resize on home may change it, issue 18) */
	const uint64_t cap = scsitgt__lun_blocks(lun);
	uint16_t data_len, bd_len;
	uint32_t ndesc;
	uint64_t total = 0, lo = UINT64_MAX, hi = 0;

	if (len == 0) {
		scsitgt__cmd_complete(cmd, SCSITGT__SR_OK);
		return;
	}
	/* SBC-4 §5.30.2: a list too short for its header is a length error. */
	if (len < UNMAP_HDR_LEN) {
		scsitgt__cmd_complete(cmd, SCSITGT__SR_PARAM_LIST_LENGTH_ERROR);
		return;
	}
	data_len = get_be16(&p[0]);
	bd_len = get_be16(&p[2]);
	if ((uint32_t)data_len + 2 > len || (uint32_t)bd_len + UNMAP_HDR_LEN > len) {
		scsitgt__cmd_complete(cmd, SCSITGT__SR_PARAM_LIST_LENGTH_ERROR);
		return;
	}
	/* Trailing bytes short of a whole descriptor are ignored (§5.30.2). */
	ndesc = bd_len / UNMAP_DESC_LEN;
	/* SBC-4 §5.30.2: more descriptors than MAXIMUM UNMAP BLOCK DESCRIPTOR COUNT, or more
	 * blocks in all than MAXIMUM UNMAP LBA COUNT (the LUN's, lun_limits.c; FFFFFFFFh is no
	 * limit), is INVALID FIELD IN PARAMETER LIST. */
	if (lim->max_unmap_descriptors != UINT32_MAX && ndesc > lim->max_unmap_descriptors) {
		scsitgt__cmd_complete(cmd, scsitgt__cmd_bad_param_field(cmd, 2, -1));
		return;
	}
	/* Check every descriptor before deallocating anything. */
	for (uint32_t i = 0; i < ndesc; i++) {
		const uint8_t *d = &p[UNMAP_HDR_LEN + i * UNMAP_DESC_LEN];
		uint64_t lba = get_be64(d);
		uint32_t n = get_be32(&d[8]);

		total += n;
		if (lim->max_unmap_blocks != UINT32_MAX && total > lim->max_unmap_blocks) {
			scsitgt__cmd_complete(
				cmd, scsitgt__cmd_bad_param_field(
					     cmd, (uint16_t)(UNMAP_HDR_LEN + i * 16 + 8), -1));
			return;
		}
		/* §5.30.2: only LBA + NUMBER past the capacity is out of range, so an empty
		 * descriptor at the capacity itself is accepted. */
		if (lba > cap || n > cap - lba) {
			scsitgt__cmd_complete(cmd, SCSITGT__SR_LBA_OUT_OF_RANGE);
			return;
		}
		if (n && lba < lo)
			lo = lba;
		if (n && lba + n > hi)
			hi = lba + n;
	}
	/* §5.30.2: a descriptor with NUMBER OF LOGICAL BLOCKS zero unmaps nothing, without error.
	 * Nothing for the backend: no block changed, so no write-back is due (unmap_done()). */
	if (total == 0) {
		scsitgt__cmd_complete(cmd, SCSITGT__SR_OK);
		return;
	}
	if (!scsitgt__range_plain_begin(cmd, lo, hi - lo, &cmd->ctx.unmap, unmap_submit))
		scsitgt__cmd_complete(cmd, SCSITGT__SR_BUSY);
}
