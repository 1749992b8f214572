/* SPDX-License-Identifier: MIT */
/*
 * SBC-4 §5.42-§5.44 WRITE AND VERIFY (10)/(12)/(16): write the blocks, then read them back;
 * with BYTCHK 01b also compare them with the Data-Out buffer. The write carries FUA (on a LUN
 * with a volatile cache), so its blocks are durable before the read-back starts.
 *
 * SBC-4 §5.38-§5.40 VERIFY (10)/(12)/(16): read the range in bounded pieces; BYTCHK 00b only
 * checks that it reads, 01b compares it with the Data-Out buffer, 11b compares every block with
 * the single block of Data-Out.
 *
 * The reads are ordinary READ ios: the backend answers them as any READ, and one that keeps a
 * cache may answer from it. The aio backend in buffered mode (tmpfs, a block size below the
 * direct I/O alignment) reads the page cache, which the write just filled: there the
 * read-back checks what the kernel holds, not the medium (docs/scsi.md, reviewg F7).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "core/cdb.h"
#include "core/fabric.h"
#include "core/range_lock.h"
#include "core/sbc_chunk.h"
#include "core/scsi_spec.h"
#include "core/sbc.h"
#include "util/be.h"

/* BYTCHK of WRITE AND VERIFY and VERIFY: SBC-4 §5.42, §5.38, byte 1 bits 2..1. Read from the
 * CDB where it is needed: it does not change after parse. */
static uint8_t sbc_bytchk(const struct scsitgt__cmd *cmd)
{
	return (cmd->cdb[1] >> 1) & 3;
}

enum scsitgt__sense_reason scsitgt__sbc_parse_write_verify(struct scsitgt__cmd *cmd)
{
	const uint8_t *cdb = cmd->cdb;
	struct scsitgt_lun *lun = cmd->lun;
	uint8_t bytchk = sbc_bytchk(cmd);
	enum scsitgt__sense_reason r;
	uint64_t lba;
	uint32_t nblocks;
	uint16_t len_off;

	scsitgt__sbc_decode_range(cdb, cmd->def->cdb_len, &lba, &nblocks, &len_off);
	/* SBC-4 Table 38: BYTCHK 00b verifies the medium, 01b compares; 10b and 11b are
	 * reserved for WRITE AND VERIFY. */
	if (bytchk > 1)
		return scsitgt__cmd_bad_cdb_field(cmd, 1, 2);
	r = scsitgt__sbc_check_range(cmd, lba, nblocks, len_off);
	if (r != SCSITGT__SR_OK)
		return r;
	cmd->lba = lba;
	cmd->nblocks = nblocks;
	cmd->io_flags = scsitgt__sbc_has_cache(lun) ? SCSITGT_IO_FLAG_FUA : 0;
	cmd->dir = nblocks ? SCSITGT__DIR_OUT : SCSITGT__DIR_NONE;
	cmd->xfer_len = nblocks * lun->geo.block_size;
	return SCSITGT__SR_OK;
}

/* A WRITE AND VERIFY given up with its read-back in the backend (core/drain.c): the buffer
 * that io fills goes with the command (cmd.h). */
static void wv_readback_free(struct scsitgt__cmd *cmd)
{
	free(cmd->ctx.write_verify.readback);
	cmd->ctx.write_verify.readback = NULL;
}

static const struct scsitgt__cmd_ctx_ops wv_ctx_ops = {
	.free = wv_readback_free,
};

static void wv_read_done(struct scsitgt__cmd *cmd, struct scsitgt_io *io,
			 enum scsitgt__sense_reason reason)
{
	uint8_t *readback = cmd->ctx.write_verify.readback;
	struct scsitgt__sense_detail detail = { 0 };

	(void)io;
	cmd->ctx.write_verify.readback = NULL;
	scsitgt__cmd_ctx_own(cmd, NULL);
	scsitgt__range_plain_end(cmd->lun, &cmd->ctx.write_verify.range);
	if (reason == SCSITGT__SR_OK && sbc_bytchk(cmd)) {
		for (uint32_t i = 0; i < cmd->xfer_len; i++) {
			if (readback[i] != cmd->buf[i]) {
				/* SBC-4 §5.42: INFORMATION is the offset of the first
				 * miscompared byte in the Data-Out buffer. */
				detail.info_valid = true;
				detail.info = i;
				reason = SCSITGT__SR_MISCOMPARE;
				break;
			}
		}
	}
	free(readback);
	if (reason == SCSITGT__SR_RAW) {
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
	if (reason != SCSITGT__SR_OK || scsitgt__cmd_aborted(cmd))
		scsitgt__range_plain_end(cmd->lun, &cmd->ctx.write_verify.range);
	if (reason == SCSITGT__SR_RAW) {
		scsitgt__cmd_complete_raw(cmd, cmd->io_raw.key, cmd->io_raw.asc, cmd->io_raw.ascq);
		return;
	}
	if (reason != SCSITGT__SR_OK || scsitgt__cmd_aborted(cmd)) {
		scsitgt__cmd_complete(cmd, reason);
		return;
	}
	readback = malloc(cmd->xfer_len);
	if (readback == NULL) {
		scsitgt__range_plain_end(cmd->lun, &cmd->ctx.write_verify.range);
		scsitgt__cmd_complete(cmd, SCSITGT__SR_BUSY);
		return;
	}
	cmd->ctx.write_verify.readback = readback;
	scsitgt__cmd_ctx_own(cmd, &wv_ctx_ops);
	iov.iov_base = readback;
	iov.iov_len = cmd->xfer_len;
	if (scsitgt__io_submit(cmd, SCSITGT_IO_READ, cmd->lba, cmd->nblocks, &iov, 1, 0,
			       wv_read_done) < 0) {
		cmd->ctx.write_verify.readback = NULL;
		scsitgt__cmd_ctx_own(cmd, NULL);
		free(readback);
		scsitgt__range_plain_end(cmd->lun, &cmd->ctx.write_verify.range);
		scsitgt__cmd_complete(cmd, SCSITGT__SR_BUSY);
	}
}

static void wv_start(struct scsitgt__cmd *cmd)
{
	struct iovec iov;

	iov.iov_base = cmd->buf;
	iov.iov_len = cmd->xfer_len;
	if (scsitgt__cmd_aborted(cmd) ||
	    scsitgt__io_submit(cmd, SCSITGT_IO_WRITE, cmd->lba, cmd->nblocks, &iov, 1,
			       cmd->io_flags, wv_write_done) < 0) {
		scsitgt__range_plain_end(cmd->lun, &cmd->ctx.write_verify.range);
		scsitgt__cmd_complete(cmd, SCSITGT__SR_BUSY);
	}
}

void scsitgt__sbc_write_verify(struct scsitgt__cmd *cmd)
{
	if (cmd->nblocks == 0) {
		scsitgt__cmd_complete(cmd, SCSITGT__SR_OK);
		return;
	}
	/* Written and read back under the range lock, so COMPARE AND WRITE and WRITE ATOMIC
	 * see all of it or none. */
	if (!scsitgt__range_plain_begin(cmd, cmd->lba, cmd->nblocks, &cmd->ctx.write_verify.range,
					wv_start))
		scsitgt__cmd_complete(cmd, SCSITGT__SR_BUSY);
}

/* VERIFY's BYTCHK (SBC-4 Table 50 / §5.38): 10b is reserved. */
enum {
	VRFY_MEDIUM = 0,
	VRFY_COMPARE = 1,
	VRFY_RESERVED = 2,
	VRFY_SAME = 3
};

enum scsitgt__sense_reason scsitgt__sbc_parse_verify(struct scsitgt__cmd *cmd)
{
	const uint8_t *cdb = cmd->cdb;
	struct scsitgt_lun *lun = cmd->lun;
	uint8_t bytchk = sbc_bytchk(cmd);
	enum scsitgt__sense_reason r;
	uint64_t lba;
	uint32_t nblocks;
	uint16_t len_off;

	scsitgt__sbc_decode_range(cdb, cmd->def->cdb_len, &lba, &nblocks, &len_off);
	/* VRPROTECT was refused by the usage mask (no protection information, SBC-4 §4.22). */
	if (bytchk == VRFY_RESERVED)
		return scsitgt__cmd_bad_cdb_field(cmd, 1, 2);
	if (bytchk == VRFY_COMPARE) {
		/* The whole range travels in Data-Out: MAXIMUM TRANSFER LENGTH applies. */
		r = scsitgt__sbc_check_range(cmd, lba, nblocks, len_off);
		if (r != SCSITGT__SR_OK)
			return r;
	} else if (scsitgt__sbc_range_bad(lun, lba, nblocks)) {
		/* SBC-4 §4.5: the LBA is checked even for a zero VERIFICATION LENGTH. */
		return SCSITGT__SR_LBA_OUT_OF_RANGE;
	}
	cmd->lba = lba;
	cmd->nblocks = nblocks;
	/* A VERIFICATION LENGTH of zero verifies nothing and transfers nothing. */
	cmd->dir = SCSITGT__DIR_NONE;
	cmd->xfer_len = 0;
	if (nblocks && bytchk == VRFY_COMPARE)
		cmd->xfer_len = nblocks * lun->geo.block_size;
	else if (nblocks && bytchk == VRFY_SAME)
		cmd->xfer_len = lun->geo.block_size;
	if (cmd->xfer_len)
		cmd->dir = SCSITGT__DIR_OUT;
	return SCSITGT__SR_OK;
}

static int verify_issue(struct scsitgt__sbc_chunker *ch, uint64_t lba, uint32_t n)
{
	struct iovec iov = { ch->buf, (size_t)n * ch->cmd->lun->geo.block_size };

	/* DPO asks not to keep the blocks cached; we keep no cache, so it needs nothing. */
	return scsitgt__io_submit(ch->cmd, SCSITGT_IO_READ, lba, n, &iov, 1, 0,
				  scsitgt__sbc_chunk_io_done);
}

/* Compare a piece just read with the Data-Out: INFORMATION is the offset of the first
 * miscompared byte from the start of the Data-Out buffer (SBC-4 §5.38), for BYTCHK 11b the
 * offset inside the single block. */
static enum scsitgt__sense_reason verify_check(struct scsitgt__sbc_chunker *ch, uint64_t lba,
					       uint32_t n)
{
	struct scsitgt__cmd *cmd = ch->cmd;
	uint32_t bs = cmd->lun->geo.block_size;
	bool same = sbc_bytchk(cmd) == VRFY_SAME;

	for (uint32_t b = 0; b < n; b++) {
		const uint8_t *got = ch->buf + (size_t)b * bs;
		const uint8_t *want = same ? cmd->buf : cmd->buf + (lba - cmd->lba + b) * bs;

		if (memcmp(got, want, bs) == 0)
			continue;
		for (uint32_t i = 0; i < bs; i++) {
			if (got[i] != want[i]) {
				ch->detail.info_valid = true;
				ch->detail.info = same ? i : (lba - cmd->lba + b) * bs + i;
				return SCSITGT__SR_MISCOMPARE;
			}
		}
	}
	return SCSITGT__SR_OK;
}

void scsitgt__sbc_verify(struct scsitgt__cmd *cmd)
{
	uint64_t chunk_blocks = SCSITGT__SBC_CHUNK_BYTES / cmd->lun->geo.block_size;
	uint64_t n = cmd->nblocks < chunk_blocks ? cmd->nblocks : chunk_blocks;
	struct scsitgt__sbc_chunker *ch;

	if (cmd->nblocks == 0) {
		scsitgt__cmd_complete(cmd, SCSITGT__SR_OK);
		return;
	}
	ch = scsitgt__sbc_chunker_new(cmd, cmd->lba, cmd->nblocks,
				      (uint32_t)(n * cmd->lun->geo.block_size));
	if (ch == NULL) {
		scsitgt__cmd_complete(cmd, SCSITGT__SR_BUSY);
		return;
	}
	ch->issue = verify_issue;
	/* BYTCHK 00b: the reads alone verify the medium. */
	ch->check = sbc_bytchk(cmd) == VRFY_MEDIUM ? NULL : verify_check;
	scsitgt__sbc_chunker_start(ch);
}
