/* SPDX-License-Identifier: MIT */
/*
 * The commands whose effect must look atomic to other commands on their range, run under an
 * exclusive entry of the LUN's range lock (range_lock.h):
 *   - SBC-4 §5.3 COMPARE AND WRITE: read the blocks, compare them with the first half of the
 *     Data-Out, and only if equal write the second half;
 *   - SBC-4 §5.9 ORWRITE (16): read, OR the Data-Out into the blocks, write them back;
 *   - SBC-4 §5.49 WRITE ATOMIC (16) (§4.29 atomic writes): one write of the whole range.
 * Other writes and reads of an overlapping range wait, so none sees or makes a mixture.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "core/cdb.h"
#include "core/fabric.h"
#include "core/range_lock.h"
#include "core/scsi_spec.h"
#include "core/sbc.h"
#include "util/be.h"

static uint32_t at_fua(const struct scsitgt__cmd *cmd)
{
	const struct scsitgt_lun *lun = cmd->lun;
	bool fua = cmd->cdb[1] & 0x08;

	/* As for WRITE: FUA, or a disabled write cache, sends the data to the medium. */
	if (scsitgt__sbc_has_cache(lun) &&
	    (fua || ((lun->geo.flags & SCSITGT_GEOMETRY_WRITE_CACHE) && !lun->mode.wce)))
		return SCSITGT_IO_FLAG_FUA;
	return 0;
}

/* COMPARE AND WRITE: SBC-4 §5.3. NUMBER OF LOGICAL BLOCKS is byte 13; 0 does nothing. */
enum scsitgt__sense_reason scsitgt__sbc_parse_caw(struct scsitgt__cmd *cmd)
{
	struct scsitgt_lun *lun = cmd->lun;
	uint64_t lba = get_be64(&cmd->cdb[2]);
	uint32_t n = cmd->cdb[13];

	/* Above MAXIMUM COMPARE AND WRITE LENGTH (VPD B0): invalid field. */
	if (n > scsitgt__sbc_max_caw_blocks(lun))
		return scsitgt__cmd_bad_cdb_field(cmd, 13, 7);
	if (scsitgt__sbc_range_bad(lun, lba, n))
		return SCSITGT__SR_LBA_OUT_OF_RANGE;
	cmd->lba = lba;
	cmd->nblocks = n;
	cmd->io_flags = at_fua(cmd);
	/*
	 * Data-Out: the verify instance, then the write instance (2 * n blocks). Even for n 0
	 * the command is a write whose Data-Out length is fixed by the CDB: a fabric that gets a
	 * different amount refuses it like any non-media write (iSCSI: scsi.c task_execute, RFC
	 * 7143 §11.4.5.2), instead of silently dropping blocks the initiator meant to compare.
	 */
	cmd->xfer_len = 2 * n * lun->geo.block_size;
	cmd->dir = SCSITGT__DIR_OUT;
	return SCSITGT__SR_OK;
}

/* ORWRITE (16): SBC-4 §5.9; TRANSFER LENGTH at byte 10. */
enum scsitgt__sense_reason scsitgt__sbc_parse_orwrite(struct scsitgt__cmd *cmd)
{
	uint64_t lba = get_be64(&cmd->cdb[2]);
	uint32_t n = get_be32(&cmd->cdb[10]);
	enum scsitgt__sense_reason r;

	r = scsitgt__sbc_check_range(cmd, lba, n, 10);
	if (r != SCSITGT__SR_OK)
		return r;
	cmd->lba = lba;
	cmd->nblocks = n;
	cmd->io_flags = at_fua(cmd);
	cmd->xfer_len = n * cmd->lun->geo.block_size;
	cmd->dir = n ? SCSITGT__DIR_OUT : SCSITGT__DIR_NONE;
	return SCSITGT__SR_OK;
}

uint32_t scsitgt__sbc_atomic_granularity(const struct scsitgt_lun *lun)
{
	unsigned int e = lun->geo.physical_block_exponent;

	/* SBC-4 §4.29.2: an atomic write of whole physical blocks is what a medium can make
	 * atomic; lun.c keeps the host's exponent within one atomic transfer, and a backend's
	 * larger one is clamped to it. */
	return 1u << (e > SCSITGT__LUN_MAX_PBE ? SCSITGT__LUN_MAX_PBE : e);
}

/* WRITE ATOMIC (16): SBC-4 §5.49. ATOMIC BOUNDARY at bytes 10..11, TRANSFER LENGTH 12..13. */
enum scsitgt__sense_reason scsitgt__sbc_parse_write_atomic(struct scsitgt__cmd *cmd)
{
	struct scsitgt_lun *lun = cmd->lun;
	uint64_t lba = get_be64(&cmd->cdb[2]);
	uint16_t boundary = get_be16(&cmd->cdb[10]);
	uint32_t n = get_be16(&cmd->cdb[12]);

	/* The range first: a write past the end is LBA OUT OF RANGE whatever its length. */
	if (scsitgt__sbc_range_bad(lun, lba, n))
		return SCSITGT__SR_LBA_OUT_OF_RANGE;
	/* MAXIMUM ATOMIC BOUNDARY SIZE is 0 in VPD B0: a non-zero boundary is not supported. */
	if (boundary)
		return scsitgt__cmd_bad_cdb_field(cmd, 10, 7);
	/* Above MAXIMUM ATOMIC TRANSFER LENGTH, or not a multiple of the ATOMIC TRANSFER
	 * LENGTH GRANULARITY: invalid field (§5.49). */
	if (n > scsitgt__sbc_max_atomic_blocks(lun) || n % scsitgt__sbc_atomic_granularity(lun))
		return scsitgt__cmd_bad_cdb_field(cmd, 12, 7);
	/* An LBA off the ATOMIC ALIGNMENT: invalid field. */
	if (lba % scsitgt__sbc_atomic_granularity(lun))
		return scsitgt__cmd_bad_cdb_field(cmd, 2, 7);
	cmd->lba = lba;
	cmd->nblocks = n;
	cmd->io_flags = at_fua(cmd);
	cmd->xfer_len = n * lun->geo.block_size;
	cmd->dir = n ? SCSITGT__DIR_OUT : SCSITGT__DIR_NONE;
	return SCSITGT__SR_OK;
}

/* A command given up with its read or write in the backend (core/drain.c; cmd.h): its range
 * entry goes at once, the read-back buffer, which that io may still fill or read, with the
 * command. */
static void at_abandon(struct scsitgt__cmd *cmd)
{
	scsitgt__range_forget(cmd->lun, cmd->ctx.atomic.entry);
	cmd->ctx.atomic.entry = NULL;
}

static void at_readback_free(struct scsitgt__cmd *cmd)
{
	free(cmd->ctx.atomic.readback);
	cmd->ctx.atomic.readback = NULL;
}

static const struct scsitgt__cmd_ctx_ops at_ctx_ops = {
	.abandon = at_abandon,
	.free = at_readback_free,
};

/* Release the range and the read-back buffer. */
static void at_release(struct scsitgt__cmd *cmd)
{
	struct scsitgt__sbc_atomic_ctx *at = &cmd->ctx.atomic;

	scsitgt__cmd_ctx_own(cmd, NULL);
	free(at->readback);
	at->readback = NULL;
	scsitgt__range_unlock(cmd->lun, at->entry);
	at->entry = NULL;
}

/* Release, then finish with @reason. */
static void at_end(struct scsitgt__cmd *cmd, enum scsitgt__sense_reason reason,
		   const struct scsitgt__sense_detail *detail)
{
	at_release(cmd);
	if (reason == SCSITGT__SR_RAW) {
		scsitgt__cmd_complete_raw(cmd, cmd->io_raw.key, cmd->io_raw.asc, cmd->io_raw.ascq);
		return;
	}
	scsitgt__cmd_complete_detail(cmd, reason, detail);
}

static void at_write_done(struct scsitgt__cmd *cmd, struct scsitgt_io *io,
			  enum scsitgt__sense_reason reason)
{
	/* Cached under WCE 1, done under WCE 0: a FLUSH before GOOD (sbc.h), once the range
	 * is free again (the other writes wait for none of it). */
	if (scsitgt__sbc_write_back_late(cmd, io, reason)) {
		at_release(cmd);
		scsitgt__sbc_flush_then_complete(cmd);
		return;
	}
	at_end(cmd, reason, NULL);
}

static void at_write(struct scsitgt__cmd *cmd, uint8_t *data)
{
	struct iovec iov = { data, (size_t)cmd->nblocks * cmd->lun->geo.block_size };

	if (scsitgt__io_submit(cmd, SCSITGT_IO_WRITE, cmd->lba, cmd->nblocks, &iov, 1,
			       cmd->io_flags, at_write_done) < 0)
		at_end(cmd, SCSITGT__SR_BUSY, NULL);
}

static void at_read_done(struct scsitgt__cmd *cmd, struct scsitgt_io *io,
			 enum scsitgt__sense_reason reason)
{
	uint8_t *rb = cmd->ctx.atomic.readback;
	size_t len = (size_t)cmd->nblocks * cmd->lun->geo.block_size;
	struct scsitgt__sense_detail detail = { 0 };

	(void)io;
	if (reason != SCSITGT__SR_OK || scsitgt__cmd_aborted(cmd)) {
		at_end(cmd, reason, NULL);
		return;
	}
	if (cmd->cdb[0] == SBC_COMPARE_AND_WRITE) {
		for (size_t i = 0; i < len; i++) {
			if (rb[i] != cmd->buf[i]) {
				/* SBC-4 §5.3: MISCOMPARE DURING VERIFY OPERATION, INFORMATION
				 * the offset of the first differing byte in the Data-Out. */
				detail.info_valid = true;
				detail.info = i;
				at_end(cmd, SCSITGT__SR_MISCOMPARE, &detail);
				return;
			}
		}
		at_write(cmd, cmd->buf + len);
		return;
	}
	/* ORWRITE (SBC-4 §5.9, BMOP 000b): the new data is the old data OR the Data-Out. */
	for (size_t i = 0; i < len; i++)
		rb[i] |= cmd->buf[i];
	at_write(cmd, rb);
}

static void at_granted(struct scsitgt__cmd *cmd)
{
	size_t len = (size_t)cmd->nblocks * cmd->lun->geo.block_size;
	struct iovec iov;
	uint8_t *rb;

	if (scsitgt__cmd_aborted(cmd)) {
		at_end(cmd, SCSITGT__SR_ABORTED, NULL);
		return;
	}
	if (cmd->cdb[0] == SBC_WRITE_ATOMIC_16) {
		at_write(cmd, cmd->buf);
		return;
	}
	rb = malloc(len);
	if (rb == NULL) {
		at_end(cmd, SCSITGT__SR_BUSY, NULL);
		return;
	}
	cmd->ctx.atomic.readback = rb;
	iov.iov_base = rb;
	iov.iov_len = len;
	if (scsitgt__io_submit(cmd, SCSITGT_IO_READ, cmd->lba, cmd->nblocks, &iov, 1, 0,
			       at_read_done) < 0)
		at_end(cmd, SCSITGT__SR_BUSY, NULL);
}

void scsitgt__sbc_atomic_exec(struct scsitgt__cmd *cmd)
{
	if (cmd->nblocks == 0) {
		scsitgt__cmd_complete(cmd, SCSITGT__SR_OK);
		return;
	}
	cmd->ctx.atomic.readback = NULL;
	/* the range entry and the read-back buffer, until at_release() */
	scsitgt__cmd_ctx_own(cmd, &at_ctx_ops);
	/* The grant (maybe inside the call) stores the entry in the context before at_granted. */
	if (!scsitgt__range_lock(cmd, cmd->lba, cmd->nblocks, true, at_granted,
				 &cmd->ctx.atomic.entry)) {
		scsitgt__cmd_ctx_own(cmd, NULL);
		scsitgt__cmd_complete(cmd, SCSITGT__SR_BUSY);
	}
}

uint32_t scsitgt__sbc_max_caw_blocks(const struct scsitgt_lun *lun)
{
	/* SBC-4 §6.6.4: with a MAXIMUM TRANSFER LENGTH, the MAXIMUM COMPARE AND WRITE LENGTH is
	 * at most that (a host lowers it for its backend's or RDMA device's sake: a COMPARE AND
	 * WRITE of more blocks is as much too long for them). */
	return lun->limits.max_transfer_blocks < SCSITGT__SBC_MAX_CAW_BLOCKS ?
		       lun->limits.max_transfer_blocks :
		       SCSITGT__SBC_MAX_CAW_BLOCKS;
}

uint32_t scsitgt__sbc_max_atomic_blocks(const struct scsitgt_lun *lun)
{
	uint32_t g = scsitgt__sbc_atomic_granularity(lun);
	uint32_t max = SCSITGT__SBC_MAX_ATOMIC_BLOCKS;

	/* SBC-4 §6.6.3: MAXIMUM ATOMIC TRANSFER LENGTH is at most the MAXIMUM TRANSFER LENGTH,
	 * and an atomic write is whole granules. */
	if (lun->limits.max_transfer_blocks < max)
		max = lun->limits.max_transfer_blocks - lun->limits.max_transfer_blocks % g;
	return max;
}
