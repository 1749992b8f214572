/* SPDX-License-Identifier: MIT */
/*
 * SBC-4 §5.50 WRITE SAME (10) and §5.51 WRITE SAME (16): one block of Data-Out (or zeros with
 * NDOB) written to every block of the range. How it reaches the backend:
 *   - UNMAP set on a thin LUN whose unmapped blocks read as zeros (LBPRZ), and a zero block:
 *     one SCSITGT_IO_UNMAP (SBC-4 §4.7.3.4.3: the blocks then read back as the data sent);
 *   - a zero block otherwise: one SCSITGT_IO_WRITE_ZEROES when the backend has it;
 *   - anything else: one SCSITGT_IO_WRITE_SAME of the block when the backend has it (the
 *     backend repeats it: librbd's writesame), else WRITE ios of at most
 *     SCSITGT__SBC_CHUNK_BYTES from one pattern buffer.
 * ANCHOR is refused (VPD B2 ANC_SUP is 0), and UNMAP on a fully provisioned LUN (LBPWS 0).
 * NUMBER OF LOGICAL BLOCKS 0 writes from the LBA through the last LBA (WSNZ 0 in VPD B0), and
 * a range above MAXIMUM WRITE SAME LENGTH is refused. However long the range, memory stays
 * bounded (one pattern buffer of at most SCSITGT__SBC_CHUNK_BYTES, one io in flight) and an
 * abort stops the walk at the next piece.
 */
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

#include "core/cdb.h"
#include "core/fabric.h"
#include "core/sbc_chunk.h"
#include "core/scsi_spec.h"
#include "core/sbc.h"
#include "util/be.h"

enum scsitgt__sense_reason scsitgt__sbc_parse_write_same(struct scsitgt__cmd *cmd)
{
	const uint8_t *cdb = cmd->cdb;
	struct scsitgt_lun *lun = cmd->lun;
	uint64_t lba;
	uint32_t nblocks;
	uint16_t len_off;
	uint64_t count;
	bool ndob = false;

	if (cdb[0] == SBC_WRITE_SAME_10) {
		lba = get_be32(&cdb[2]);
		nblocks = get_be16(&cdb[7]);
		len_off = 7;
	} else {
		lba = get_be64(&cdb[2]);
		nblocks = get_be32(&cdb[10]);
		len_off = 10;
		ndob = cdb[1] & 0x01;
	}
	/* ANCHOR (never: VPD B2 ANC_SUP 0) and UNMAP on a LUN without provisioning (no
	 * LBPWS/LBPWS10) were refused with the reserved bits (the rows' usage, cdb.c). */
	/* The range first: past the end is LBA OUT OF RANGE whatever the length. */
	if (scsitgt__sbc_range_bad(lun, lba, nblocks))
		return SCSITGT__SR_LBA_OUT_OF_RANGE;
	/* SBC-4 §5.50/§5.51 with WSNZ 0: NUMBER OF LOGICAL BLOCKS 0 means through the last
	 * LBA. The blocks to write, counted so, may not exceed MAXIMUM WRITE SAME LENGTH. */
	count = nblocks ? nblocks : scsitgt__lun_blocks(lun) - lba;
	if (count > lun->limits.max_write_same_blocks)
		return scsitgt__cmd_bad_cdb_field(cmd, len_off, 7);
	cmd->lba = lba;
	cmd->nblocks = (uint32_t)count;
	/* No FUA bit: like WRITE with FUA 0, only a disabled write cache forces the medium. */
	cmd->io_flags = 0;
	if (scsitgt__sbc_has_cache(lun) && (lun->geo.flags & SCSITGT_GEOMETRY_WRITE_CACHE) &&
	    !lun->mode.wce)
		cmd->io_flags |= SCSITGT_IO_FLAG_FUA;
	cmd->dir = ndob ? SCSITGT__DIR_NONE : SCSITGT__DIR_OUT;
	cmd->xfer_len = ndob ? 0 : lun->geo.block_size;
	return SCSITGT__SR_OK;
}

/* The walk's ios, one function per way to the backend (chosen by scsitgt__sbc_write_same()). */
static int ws_issue_unmap(struct scsitgt__sbc_chunker *ch, uint64_t lba, uint32_t n)
{
	return scsitgt__io_submit(ch->cmd, SCSITGT_IO_UNMAP, lba, n, NULL, 0, 0,
				  scsitgt__sbc_chunk_io_done);
}

/* No FUA on these two (backend.h): the walk ends with a FLUSH instead when FUA is due. */
static int ws_issue_zeroes(struct scsitgt__sbc_chunker *ch, uint64_t lba, uint32_t n)
{
	return scsitgt__io_submit(ch->cmd, SCSITGT_IO_WRITE_ZEROES, lba, n, NULL, 0, 0,
				  scsitgt__sbc_chunk_io_done);
}

static int ws_issue_write(struct scsitgt__sbc_chunker *ch, uint64_t lba, uint32_t n)
{
	struct scsitgt__cmd *cmd = ch->cmd;
	struct iovec iov = { ch->buf, (size_t)n * cmd->lun->geo.block_size };

	return scsitgt__io_submit(cmd, SCSITGT_IO_WRITE, lba, n, &iov, 1, cmd->io_flags,
				  scsitgt__sbc_chunk_io_done);
}

/* The backend repeats the one block: the Data-Out buffer, or (NDOB) the chunker's zero block. */
static int ws_issue_same(struct scsitgt__sbc_chunker *ch, uint64_t lba, uint32_t n)
{
	struct scsitgt__cmd *cmd = ch->cmd;
	struct iovec iov = { ch->buf_len ? ch->buf : cmd->buf, cmd->lun->geo.block_size };

	return scsitgt__io_submit(cmd, SCSITGT_IO_WRITE_SAME, lba, n, &iov, 1, cmd->io_flags,
				  scsitgt__sbc_chunk_io_done);
}

static bool ws_is_zero(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

void scsitgt__sbc_write_same(struct scsitgt__cmd *cmd)
{
	struct scsitgt_lun *lun = cmd->lun;
	uint32_t bs = lun->geo.block_size;
	bool unmap = cmd->cdb[1] & 0x08;
	bool zero = cmd->xfer_len == 0 || ws_is_zero(cmd->buf, bs);
	uint64_t chunk_blocks = SCSITGT__SBC_CHUNK_BYTES / bs;
	uint64_t pattern_blocks = cmd->nblocks < chunk_blocks ? cmd->nblocks : chunk_blocks;
	struct scsitgt__sbc_chunker *ch;
	scsitgt__chunk_issue_fn issue = ws_issue_write;

	if (zero && unmap && scsitgt__sbc_lbprz(lun) &&
	    scsitgt__lun_supports(lun, SCSITGT_IO_UNMAP))
		issue = ws_issue_unmap;
	else if (zero && scsitgt__lun_supports(lun, SCSITGT_IO_WRITE_ZEROES))
		issue = ws_issue_zeroes;
	else if (scsitgt__lun_supports(lun, SCSITGT_IO_WRITE_SAME))
		issue = ws_issue_same;
	ch = scsitgt__sbc_chunker_new(cmd, cmd->lba, cmd->nblocks,
				      issue == ws_issue_write ? (uint32_t)(pattern_blocks * bs) :
				      issue == ws_issue_same && cmd->xfer_len == 0 ? bs :
										     0);
	if (ch == NULL) {
		scsitgt__cmd_complete(cmd, SCSITGT__SR_BUSY);
		return;
	}
	if (issue != ws_issue_write) {
		/* One io for the whole range: the backend frees, zeroes or fills it at once. */
		ch->max_blocks = cmd->nblocks;
	}
	/* SBC-4 §6.5.5: with WCE 0 the blocks are on the medium before GOOD. A backend need
	 * not honour FUA on WRITE ZEROES or UNMAP (a file's fallocate, librbd's cache): a
	 * FLUSH follows them, as SYNCHRONIZE CACHE would, before the status. */
	if ((issue == ws_issue_zeroes || issue == ws_issue_unmap) &&
	    (cmd->io_flags & SCSITGT_IO_FLAG_FUA) && scsitgt__lun_supports(lun, SCSITGT_IO_FLUSH))
		ch->flush_after = true;
	ch->cached_writes = !(cmd->io_flags & SCSITGT_IO_FLAG_FUA);
	if (issue == ws_issue_write && !zero) {
		/* The bounded buffer holds the block repeated (the zero case is calloc'ed). */
		for (uint64_t b = 0; b < pattern_blocks; b++)
			memcpy(ch->buf + b * bs, cmd->buf, bs);
	}
	ch->issue = issue;
	scsitgt__sbc_chunker_start(ch);
}
