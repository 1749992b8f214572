/* SPDX-License-Identifier: MIT */
/*
 * SBC-4 block commands: READ and WRITE (6)/(10)/(12)/(16), READ CAPACITY (10)/(16),
 * SYNCHRONIZE CACHE (10)/(16), START STOP UNIT and PREVENT ALLOW MEDIUM REMOVAL.
 * Media commands reach the backend as one io over cmd->buf.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "core/cdb.h"
#include "core/fabric.h"
#include "core/range_lock.h"
#include "core/scsi_spec.h"
#include "core/sbc.h"
#include "util/be.h"

bool scsitgt__sbc_lbpme(const struct scsitgt_lun *lun)
{
	/* lun.c admits SCSITGT_LUN_THIN only on backends that can unmap. */
	return (lun->flags & SCSITGT_LUN_THIN) != 0;
}

bool scsitgt__sbc_lbprz(const struct scsitgt_lun *lun)
{
	/* SBC-4 §5.20.2: LBPRZ describes unmapped blocks, which only a thin LUN has. */
	return scsitgt__sbc_lbpme(lun) && (lun->geo.flags & SCSITGT_GEOMETRY_LBPRZ);
}

/* SBC-4 §4.5: an LBA past the last one, or a range running past it, is out of range. A zero
 * length range is still checked at its LBA. */
bool scsitgt__sbc_range_bad(const struct scsitgt_lun *lun, uint64_t lba, uint64_t nblocks)
{
	uint64_t cap = scsitgt__lun_blocks(lun);

	return lba >= cap || nblocks > cap - lba;
}

/* Whether the backend has a cache that FUA and SYNCHRONIZE CACHE must get past. */
bool scsitgt__sbc_has_cache(const struct scsitgt_lun *lun)
{
	return (lun->geo.flags & SCSITGT_GEOMETRY_WRITE_CACHE) ||
	       scsitgt__lun_supports(lun, SCSITGT_IO_FLUSH);
}

/* Whether the backend has a volatile cache that a FLUSH io writes back. */
bool scsitgt__sbc_volatile_cache(const struct scsitgt_lun *lun)
{
	return (lun->geo.flags & SCSITGT_GEOMETRY_WRITE_CACHE) &&
	       scsitgt__lun_supports(lun, SCSITGT_IO_FLUSH);
}

bool scsitgt__sbc_write_back_late(struct scsitgt__cmd *cmd, const struct scsitgt_io *io,
				  enum scsitgt__sense_reason reason)
{
	return reason == SCSITGT__SR_OK && !(io->flags & SCSITGT_IO_FLAG_FUA) &&
	       scsitgt__sbc_cache_written_through(cmd->lun) && !scsitgt__cmd_aborted(cmd);
}

void scsitgt__sbc_flush_then_complete(struct scsitgt__cmd *cmd)
{
	if (scsitgt__io_submit(cmd, SCSITGT_IO_FLUSH, 0, 0, NULL, 0, 0,
			       scsitgt__io_done_complete_cmd) < 0)
		scsitgt__io_done_complete_cmd(cmd, NULL, SCSITGT__SR_BUSY);
}

void scsitgt__sbc_decode_range(const uint8_t *cdb, size_t cdb_len, uint64_t *lba, uint32_t *nblocks,
			       uint16_t *len_off)
{
	/* SBC-4 §4.2.2: the 10-, 12- and 16-byte media CDBs share these field positions. */
	switch (cdb_len) {
	case 10:
		*lba = get_be32(&cdb[2]);
		*nblocks = get_be16(&cdb[7]);
		*len_off = 7;
		break;
	case 12:
		*lba = get_be32(&cdb[2]);
		*nblocks = get_be32(&cdb[6]);
		*len_off = 6;
		break;
	default:
		*lba = get_be64(&cdb[2]);
		*nblocks = get_be32(&cdb[10]);
		*len_off = 10;
		break;
	}
}

enum scsitgt__sense_reason scsitgt__sbc_check_range(struct scsitgt__cmd *cmd, uint64_t lba,
						    uint32_t nblocks, uint16_t len_off)
{
	const struct scsitgt_lun *lun = cmd->lun;

	/* SBC-4 §6.6.3: a transfer above MAXIMUM TRANSFER LENGTH (the LUN's, lun_limits.c) is
	 * an invalid field. */
	if (nblocks > lun->limits.max_transfer_blocks)
		return scsitgt__cmd_bad_cdb_field(cmd, len_off, 7);
	if (scsitgt__sbc_range_bad(lun, lba, nblocks))
		return SCSITGT__SR_LBA_OUT_OF_RANGE;
	return SCSITGT__SR_OK;
}

static bool sbc_is_write(uint8_t opcode)
{
	return opcode == SBC_WRITE_6 || opcode == SBC_WRITE_10 || opcode == SBC_WRITE_12 ||
	       opcode == SBC_WRITE_16;
}

/*
 * SBC-4 READ and WRITE (6)/(10)/(12)/(16). The table's usage masks already refused
 * RDPROTECT/WRPROTECT (no protection information, SBC-4 §4.22) and the obsolete bits; DPO is
 * a hint we accept, GROUP NUMBER is accepted and ignored.
 */
enum scsitgt__sense_reason scsitgt__sbc_parse_rw(struct scsitgt__cmd *cmd)
{
	const uint8_t *cdb = cmd->cdb;
	struct scsitgt_lun *lun = cmd->lun;
	uint64_t lba;
	uint32_t nblocks;
	uint16_t len_off;
	bool fua = false, write = sbc_is_write(cdb[0]);
	enum scsitgt__sense_reason r;

	switch (cdb[0]) {
	case SBC_READ_6:
	case SBC_WRITE_6:
		/* SBC-4 READ (6): 21-bit LBA; a TRANSFER LENGTH of 0 means 256 blocks. */
		lba = get_be24(&cdb[1]) & 0x1fffff;
		nblocks = cdb[4] ? cdb[4] : 256;
		len_off = 4;
		break;
	case SBC_READ_10:
	case SBC_WRITE_10:
		lba = get_be32(&cdb[2]);
		nblocks = get_be16(&cdb[7]);
		len_off = 7;
		fua = cdb[1] & 0x08;
		break;
	case SBC_READ_12:
	case SBC_WRITE_12:
		lba = get_be32(&cdb[2]);
		nblocks = get_be32(&cdb[6]);
		len_off = 6;
		fua = cdb[1] & 0x08;
		break;
	default: /* READ (16), WRITE (16) */
		lba = get_be64(&cdb[2]);
		nblocks = get_be32(&cdb[10]);
		len_off = 10;
		fua = cdb[1] & 0x08;
		break;
	}
	r = scsitgt__sbc_check_range(cmd, lba, nblocks, len_off);
	if (r != SCSITGT__SR_OK)
		return r;

	cmd->lba = lba;
	cmd->nblocks = nblocks;
	cmd->io_flags = 0;
	/*
	 * SBC-4 READ/WRITE (10): FUA asks for the medium, not a volatile cache. With WCE off
	 * (SBC-4 §6.5.5 caching page) every write must reach the medium too. A backend without
	 * cache and without FLUSH is always durable, so FUA is met without telling it. A READ
	 * keeps the flag only on the command, for a volatile cache: sbc_rw_submit() writes the
	 * cache back with a FLUSH first, and the READ io goes without it (backend.h).
	 */
	if (write ? scsitgt__sbc_has_cache(lun) &&
			    (fua ||
			     ((lun->geo.flags & SCSITGT_GEOMETRY_WRITE_CACHE) && !lun->mode.wce)) :
		    fua && scsitgt__sbc_volatile_cache(lun))
		cmd->io_flags |= SCSITGT_IO_FLAG_FUA;
	cmd->dir = nblocks == 0 ? SCSITGT__DIR_NONE : write ? SCSITGT__DIR_OUT : SCSITGT__DIR_IN;
	cmd->xfer_len = nblocks * lun->geo.block_size;
	return SCSITGT__SR_OK;
}

/* The FLUSH after a failed WRITE's good blocks (sbc_rw_prefix_durable()) is back; the
 * command ends with its first failure either way. */
static void sbc_rw_prefix_flushed(struct scsitgt__cmd *cmd, struct scsitgt_io *io,
				  enum scsitgt__sense_reason reason)
{
	/* the blocks before INFORMATION may not be on the medium: claim none */
	if (reason != SCSITGT__SR_OK)
		cmd->detail.info_valid = false;
	scsitgt__io_done_complete_cmd(cmd, io, SCSITGT__SR_OK);
}

/*
 * A WRITE that fails at INFORMATION tells the initiator the blocks before it are written
 * (sbc_rw_partial()). Went they to the cache under WCE 1 and WCE is 0 now, they are made
 * durable first, as a whole write is (sbc.h scsitgt__sbc_write_back_late(); SBC-4 §6.5.5).
 * True when the FLUSH went; the range is released already.
 */
static bool sbc_rw_prefix_durable(struct scsitgt__cmd *cmd, struct scsitgt_io *io)
{
	if (io->type != SCSITGT_IO_WRITE || !scsitgt__sbc_write_back_late(cmd, io, SCSITGT__SR_OK))
		return false;
	if (scsitgt__io_submit(cmd, SCSITGT_IO_FLUSH, 0, 0, NULL, 0, 0, sbc_rw_prefix_flushed) == 0)
		return true;
	cmd->detail.info_valid = false;
	return false;
}

/* The io again over the blocks before a medium error has come back (sbc_rw_done()). */
static void sbc_rw_prefix_done(struct scsitgt__cmd *cmd, struct scsitgt_io *io,
			       enum scsitgt__sense_reason reason)
{
	if (reason == SCSITGT__SR_OK) {
		if (io->type == SCSITGT_IO_READ)
			cmd->partial_len = io->num_blocks * cmd->lun->geo.block_size;
	} else {
		/* The earlier blocks failed too: theirs is the error to report, and INFORMATION
		 * only where this io says where (else the initiator would take the blocks
		 * before the first error for good). */
		cmd->io_reason = reason;
		cmd->detail.info_valid = io->error_lba_valid;
		cmd->detail.info = io->error_lba;
		if (io->partial && io->type == SCSITGT_IO_READ)
			cmd->partial_len =
				(uint32_t)(io->error_lba - io->lba) * cmd->lun->geo.block_size;
	}
	scsitgt__range_plain_end(cmd->lun, &cmd->ctx.rw);
	if (reason == SCSITGT__SR_OK && sbc_rw_prefix_durable(cmd, io))
		return;
	scsitgt__io_done_complete_cmd(cmd, io, SCSITGT__SR_OK);
}

/*
 * A READ or WRITE failed at a known block (SBC-4 §4.18.1 INFORMATION). Initiators take the
 * blocks before it for transferred: Linux completes (INFORMATION - LBA) blocks of a failed
 * command, bounded by the bytes the residual says moved (sd_completed_bytes()). So the blocks
 * before it must really be done: a READ sends them with the CHECK CONDITION (partial_len) and
 * a WRITE has written them. A backend that says so completes with scsitgt_io_complete_partial();
 * for one that only says where (scsitgt_io_complete_at(), the fault backend's medium errors)
 * the core moves those blocks again with an io of their own. Returns true when that io went.
 */
static bool sbc_rw_partial(struct scsitgt__cmd *cmd, struct scsitgt_io *io,
			   enum scsitgt__sense_reason reason)
{
	uint32_t bs = cmd->lun->geo.block_size, good;
	struct iovec iov;

	if (reason == SCSITGT__SR_OK || reason == SCSITGT__SR_RAW || !io->error_lba_valid ||
	    io->error_lba <= io->lba || io->error_lba - io->lba >= io->num_blocks)
		return false;
	good = (uint32_t)(io->error_lba - io->lba);
	if (io->partial) {
		if (io->type == SCSITGT_IO_READ)
			cmd->partial_len = good * bs;
		return false;
	}
	if (scsitgt__cmd_aborted(cmd))
		return false;
	/* The first failure is the one reported; io_finish() set INFORMATION from it. */
	cmd->io_reason = reason;
	iov.iov_base = cmd->buf;
	iov.iov_len = (size_t)good * bs;
	if (scsitgt__io_submit(cmd, io->type, io->lba, good, &iov, 1, io->flags,
			       sbc_rw_prefix_done) == 0)
		return true;
	/* No io for it: a WRITE must not claim the blocks before INFORMATION written. */
	cmd->io_reason = SCSITGT__SR_OK;
	if (io->type == SCSITGT_IO_WRITE)
		cmd->detail.info_valid = false;
	return false;
}

static void sbc_rw_done(struct scsitgt__cmd *cmd, struct scsitgt_io *io,
			enum scsitgt__sense_reason reason)
{
	if (sbc_rw_partial(cmd, io, reason))
		return;
	scsitgt__range_plain_end(cmd->lun, &cmd->ctx.rw);
	/* Cached under WCE 1, done under WCE 0: on the medium before GOOD (sbc.h). */
	if (io->type == SCSITGT_IO_WRITE && scsitgt__sbc_write_back_late(cmd, io, reason)) {
		scsitgt__sbc_flush_then_complete(cmd);
		return;
	}
	/* A WRITE its backend wrote up to the error (scsitgt_io_complete_partial()): those
	 * blocks too (sbc_rw_prefix_durable()). */
	if (io->partial && io->error_lba > io->lba && reason != SCSITGT__SR_OK &&
	    reason != SCSITGT__SR_RAW) {
		cmd->io_reason = reason;
		if (sbc_rw_prefix_durable(cmd, io))
			return;
	}
	scsitgt__io_done_complete_cmd(cmd, io, reason);
}

static void sbc_rw_io(struct scsitgt__cmd *cmd, bool write);

/* The FLUSH before a READ with FUA is back: the read now, or the FLUSH's error. */
static void sbc_rw_read_flushed(struct scsitgt__cmd *cmd, struct scsitgt_io *io,
				enum scsitgt__sense_reason reason)
{
	if (reason == SCSITGT__SR_OK && !scsitgt__cmd_aborted(cmd)) {
		sbc_rw_io(cmd, false);
		return;
	}
	scsitgt__range_plain_end(cmd->lun, &cmd->ctx.rw);
	scsitgt__io_done_complete_cmd(cmd, io,
				      reason == SCSITGT__SR_OK ? SCSITGT__SR_ABORTED : reason);
}

static void sbc_rw_submit(struct scsitgt__cmd *cmd)
{
	bool write;

	if (scsitgt__cmd_aborted(cmd)) {
		scsitgt__range_plain_end(cmd->lun, &cmd->ctx.rw);
		scsitgt__cmd_complete(cmd, SCSITGT__SR_ABORTED);
		return;
	}
	write = sbc_is_write(cmd->cdb[0]);
	/*
	 * SBC-4 READ (10) FUA: blocks newer in a volatile cache are written to the medium
	 * before they are read. io_flags has FUA on a READ only for such a cache (parse).
	 */
	if (!write && (cmd->io_flags & SCSITGT_IO_FLAG_FUA)) {
		if (scsitgt__io_submit(cmd, SCSITGT_IO_FLUSH, 0, 0, NULL, 0, 0,
				       sbc_rw_read_flushed) < 0) {
			scsitgt__range_plain_end(cmd->lun, &cmd->ctx.rw);
			scsitgt__cmd_complete(cmd, SCSITGT__SR_BUSY);
		}
		return;
	}
	sbc_rw_io(cmd, write);
}

/* The READ or WRITE io itself; a READ never carries FUA (backend.h). */
static void sbc_rw_io(struct scsitgt__cmd *cmd, bool write)
{
	uint32_t flags = write ? cmd->io_flags : cmd->io_flags & ~SCSITGT_IO_FLAG_FUA;
	struct iovec iov;
	int rc;

	iov.iov_base = cmd->buf;
	iov.iov_len = cmd->xfer_len;
	/* a plain READ's data goes out untouched: a fabric that sends from any memory lets the
	 * backend lend its own (scsitgt_io_lend_data()) instead of copying into buf. */
	if (!write && cmd->sess && cmd->sess->lend_data_in)
		flags |= SCSITGT_IO_FLAG_MAY_LEND;
	rc = scsitgt__io_submit(cmd, write ? SCSITGT_IO_WRITE : SCSITGT_IO_READ, cmd->lba,
				cmd->nblocks, &iov, 1, flags, sbc_rw_done);
	/* After a successful submit the command may already be complete and gone. */
	if (rc < 0) {
		scsitgt__range_plain_end(cmd->lun, &cmd->ctx.rw);
		scsitgt__cmd_complete(cmd, SCSITGT__SR_BUSY);
	}
}

void scsitgt__sbc_rw(struct scsitgt__cmd *cmd)
{
	/* SBC-4 READ (10): a TRANSFER LENGTH of zero transfers nothing and is not an error. */
	if (cmd->nblocks == 0) {
		scsitgt__cmd_complete(cmd, SCSITGT__SR_OK);
		return;
	}
	/* Counted (or, while COMPARE AND WRITE / WRITE ATOMIC hold ranges, locked shared) so
	 * that those see this io whole or not at all (range_lock.h). */
	if (!scsitgt__range_plain_begin(cmd, cmd->lba, cmd->nblocks, &cmd->ctx.rw, sbc_rw_submit))
		scsitgt__cmd_complete(cmd, SCSITGT__SR_BUSY);
}

/* SBC-3 READ CAPACITY: with PMI zero the LOGICAL BLOCK ADDRESS shall be zero (SBC-4 made
 * both fields obsolete; we keep the check so that initiators relying on it still see it). */
static enum scsitgt__sense_reason sbc_check_pmi(struct scsitgt__cmd *cmd, uint64_t lba, bool pmi)
{
	if (!pmi && lba != 0)
		return scsitgt__cmd_bad_cdb_field(cmd, 2, 7);
	return SCSITGT__SR_OK;
}

/* SBC-4 §5.20 READ CAPACITY (10). */
enum scsitgt__sense_reason scsitgt__sbc_parse_read_capacity10(struct scsitgt__cmd *cmd)
{
	enum scsitgt__sense_reason r;

	r = sbc_check_pmi(cmd, get_be32(&cmd->cdb[2]), cmd->cdb[8] & 0x01);
	if (r != SCSITGT__SR_OK)
		return r;
	cmd->dir = SCSITGT__DIR_IN;
	cmd->xfer_len = 8;
	return SCSITGT__SR_OK;
}

void scsitgt__sbc_read_capacity10(struct scsitgt__cmd *cmd)
{
	const struct scsitgt_lun *lun = cmd->lun;
	uint64_t last = scsitgt__lun_blocks(lun) - 1;
	uint8_t d[8];

	/* SBC-4 §5.20.2: FFFF_FFFFh tells the client to use READ CAPACITY (16). */
	put_be32(&d[0], last > 0xfffffffeull ? 0xffffffffu : (uint32_t)last);
	put_be32(&d[4], lun->geo.block_size);
	scsitgt__cmd_respond(cmd, d, sizeof(d));
	scsitgt__cmd_complete(cmd, SCSITGT__SR_OK);
}

/* SBC-4 §5.21 READ CAPACITY (16), SERVICE ACTION IN (16) service action 10h. */
enum scsitgt__sense_reason scsitgt__sbc_parse_read_capacity16(struct scsitgt__cmd *cmd)
{
	enum scsitgt__sense_reason r;

	r = sbc_check_pmi(cmd, get_be64(&cmd->cdb[2]), cmd->cdb[14] & 0x01);
	if (r != SCSITGT__SR_OK)
		return r;
	return scsitgt__parse_alloc32(cmd, 10);
}

#define RC16_LEN 32

void scsitgt__sbc_read_capacity16(struct scsitgt__cmd *cmd)
{
	const struct scsitgt_lun *lun = cmd->lun;
	uint8_t d[RC16_LEN];

	memset(d, 0, sizeof(d));
	put_be64(&d[0], scsitgt__lun_blocks(lun) - 1);
	put_be32(&d[8], lun->geo.block_size);
	/* Byte 12: P_TYPE 0, PROT_EN 0. Byte 13: LOGICAL BLOCKS PER PHYSICAL BLOCK EXPONENT. */
	d[13] = lun->geo.physical_block_exponent & 0x0f;
	/* Byte 14: LBPME and LBPRZ (SBC-4 §5.21.2); LOWEST ALIGNED LBA stays 0. */
	if (scsitgt__sbc_lbpme(lun))
		d[14] |= 0x80;
	if (scsitgt__sbc_lbprz(lun))
		d[14] |= 0x40;
	scsitgt__cmd_respond(cmd, d, sizeof(d));
	scsitgt__cmd_complete(cmd, SCSITGT__SR_OK);
}

/* SBC-4 §5.28 SYNCHRONIZE CACHE (10) and §5.29 (16). */
enum scsitgt__sense_reason scsitgt__sbc_parse_sync_cache(struct scsitgt__cmd *cmd)
{
	const uint8_t *cdb = cmd->cdb;
	uint64_t lba;
	uint32_t nblocks;

	if (cdb[0] == SBC_SYNCHRONIZE_CACHE_10) {
		lba = get_be32(&cdb[2]);
		nblocks = get_be16(&cdb[7]);
	} else {
		lba = get_be64(&cdb[2]);
		nblocks = get_be32(&cdb[10]);
	}
	/* NUMBER OF LOGICAL BLOCKS 0 means "through the last LBA"; the LBA is still checked. */
	if (scsitgt__sbc_range_bad(cmd->lun, lba, nblocks))
		return SCSITGT__SR_LBA_OUT_OF_RANGE;
	cmd->lba = lba;
	cmd->nblocks = nblocks;
	return SCSITGT__SR_OK;
}

void scsitgt__sbc_sync_cache(struct scsitgt__cmd *cmd)
{
	const struct scsitgt_lun *lun = cmd->lun;

	/*
	 * Without a volatile cache (or no FLUSH to send) every write is already durable: GOOD
	 * at once. SBC-4 §5.27: GOOD says the blocks' latest data are on the medium whatever
	 * WCE is now; writes cached while it was 1 may still be dirty after it went to 0, so
	 * the current WCE does not decide. IMMED is accepted; status simply follows the flush.
	 */
	if (!scsitgt__sbc_volatile_cache(lun)) {
		scsitgt__cmd_complete(cmd, SCSITGT__SR_OK);
		return;
	}
	if (scsitgt__io_submit(cmd, SCSITGT_IO_FLUSH, cmd->lba, cmd->nblocks, NULL, 0, 0,
			       scsitgt__io_done_complete_cmd) < 0)
		scsitgt__cmd_complete(cmd, SCSITGT__SR_BUSY);
}

/* The largest POWER CONDITION MODIFIER of each power condition (SBC-4 §5.25: idle_a..c are
 * modifiers 0..2, standby_z/y 0..1); -1 for a reserved or obsolete power condition. */
static int ssu_max_modifier(uint8_t pc)
{
	switch (pc) {
	case SSU_PC_START_VALID:
	case SSU_PC_ACTIVE:
	case SSU_PC_LU_CONTROL:
		return 0;
	case SSU_PC_IDLE:
	case SSU_PC_FORCE_IDLE_0:
		return 2;
	case SSU_PC_STANDBY:
	case SSU_PC_FORCE_STANDBY_0:
		return 1;
	default:
		return -1;
	}
}

/* SBC-4 §5.25 START STOP UNIT. */
enum scsitgt__sense_reason scsitgt__sbc_parse_start_stop(struct scsitgt__cmd *cmd)
{
	uint8_t pc = cmd->cdb[4] >> 4;
	int max_mod = ssu_max_modifier(pc);

	/* A reserved (or the obsolete 5h) POWER CONDITION is an invalid field (SPC-5 §4.2.5.1:
	 * reserved code values are reported as errors). */
	if (max_mod < 0)
		return scsitgt__cmd_bad_cdb_field(cmd, 4, 7);
	/* The POWER CONDITION MODIFIER selects idle_a..c / standby_z..y; anything above the
	 * modifiers of the requested condition is invalid. */
	if ((cmd->cdb[3] & 0x0f) > max_mod)
		return scsitgt__cmd_bad_cdb_field(cmd, 3, 3);
	return SCSITGT__SR_OK;
}

static void sbc_start_stop_apply(struct scsitgt__cmd *cmd)
{
	struct scsitgt_lun *lun = cmd->lun;
	bool start = cmd->cdb[4] & 0x01;
	/* SBC-4 §5.25: LOEJ loads or unloads the medium "if the medium is removable"; on a
	 * fixed medium it has no effect beyond START. */
	bool loej = (cmd->cdb[4] & 0x02) && (lun->flags & SCSITGT_LUN_REMOVABLE);

	/* one change at a time: START STOP UNIT may run on several loops (issue 18) */
	uv_mutex_lock(&lun->xlock);
	if (start) {
		if (loej)
			lun->medium.present = true;
		lun->medium.stopped = false;
	} else {
		lun->medium.stopped = true;
		if (loej)
			lun->medium.present = false;
	}
	uv_mutex_unlock(&lun->xlock);
}

static void sbc_start_stop_flushed(struct scsitgt__cmd *cmd, struct scsitgt_io *io,
				   enum scsitgt__sense_reason reason)
{
	(void)io;
	if (reason == SCSITGT__SR_OK && !scsitgt__cmd_aborted(cmd))
		sbc_start_stop_apply(cmd);
	scsitgt__io_done_complete_cmd(cmd, io, reason);
}

void scsitgt__sbc_start_stop(struct scsitgt__cmd *cmd)
{
	struct scsitgt_lun *lun = cmd->lun;
	bool start = cmd->cdb[4] & 0x01;
	bool loej = cmd->cdb[4] & 0x02;
	bool no_flush = cmd->cdb[4] & 0x04;

	/*
	 * SBC-4 §5.25: with a POWER CONDITION other than START_VALID the START and LOEJ bits are
	 * ignored and the logical unit moves to that power condition. There is no power to save
	 * behind an emulated unit: ACTIVE, IDLE and STANDBY (forced or under LU_CONTROL, with no
	 * Power Condition mode page timers) all leave it ready, and a stopped unit becomes active
	 * (SBC-4 §4.20: each of these conditions processes media access commands).
	 */
	if (cmd->cdb[4] >> 4) {
		lun->medium.stopped = false;
		scsitgt__cmd_complete(cmd, SCSITGT__SR_OK);
		return;
	}
	/* SBC-4 §5.25 and §5.16 PREVENT ALLOW MEDIUM REMOVAL: while removal is prevented the
	 * medium can be neither unloaded nor loaded (the mechanism is locked). */
	if (loej && (lun->flags & SCSITGT_LUN_REMOVABLE) && lun->medium.prevent_removal) {
		scsitgt__cmd_complete(cmd, SCSITGT__SR_MEDIUM_REMOVAL_PREVENTED);
		return;
	}
	/* NO_FLUSH zero: cached data reaches the medium before the unit stops, whatever WCE is
	 * now (as SYNCHRONIZE CACHE). */
	if (!start && !no_flush && scsitgt__sbc_volatile_cache(lun) && lun->medium.present) {
		if (scsitgt__io_submit(cmd, SCSITGT_IO_FLUSH, 0, 0, NULL, 0, 0,
				       sbc_start_stop_flushed) < 0)
			scsitgt__cmd_complete(cmd, SCSITGT__SR_BUSY);
		return;
	}
	sbc_start_stop_apply(cmd);
	scsitgt__cmd_complete(cmd, SCSITGT__SR_OK);
}

/*
 * SPC-5 §6.15 PREVENT ALLOW MEDIUM REMOVAL: PREVENT 00b allows, 01b prevents; 10b and 11b
 * (medium changer) are obsolete. The prevention is kept per I_T nexus: the medium stays
 * locked while any nexus prevents its removal, and ends for a nexus when it allows removal or
 * is lost, and for every nexus on a reset. Accepted on every LUN; only a removable medium can
 * be unloaded (START STOP UNIT with LOEJ), which a prevention refuses.
 */
enum scsitgt__sense_reason scsitgt__sbc_parse_prevent_allow(struct scsitgt__cmd *cmd)
{
	if (cmd->cdb[4] & 0x02)
		return scsitgt__cmd_bad_cdb_field(cmd, 4, 1);
	return SCSITGT__SR_OK;
}

void scsitgt__sbc_prevent_release(struct scsitgt_lun *lun, const struct scsitgt__session *sess)
{
	/* the nexuses that prevent removal are the LUN's, shared by its loops (issue 18) */
	uv_mutex_lock(&lun->xlock);
	for (uint32_t i = 0; i < lun->medium.nprevent;) {
		if (sess == NULL || lun->medium.prevent_by[i] == sess)
			lun->medium.prevent_by[i] = lun->medium.prevent_by[--lun->medium.nprevent];
		else
			i++;
	}
	lun->medium.prevent_removal = lun->medium.nprevent > 0;
	uv_mutex_unlock(&lun->xlock);
}

void scsitgt__sbc_prevent_session_gone(const struct scsitgt__session *sess)
{
	struct scsitgt_target *tgt = sess->tgt;

	/* Home's array, read on home (scsitgt__pr_session_gone(), its only caller). */
	SCSITGT__ASSERT_HOME(tgt->engine);
	for (size_t i = 0; i < tgt->nluns; i++)
		scsitgt__sbc_prevent_release(tgt->luns[i], sess);
}

void scsitgt__sbc_prevent_allow(struct scsitgt__cmd *cmd)
{
	struct scsitgt_lun *lun = cmd->lun;
	bool prevent = cmd->cdb[4] & 0x01;
	enum scsitgt__sense_reason r = SCSITGT__SR_OK;
	uint32_t i;

	if (!prevent) {
		scsitgt__sbc_prevent_release(lun, cmd->sess);
		scsitgt__cmd_complete(cmd, SCSITGT__SR_OK);
		return;
	}
	uv_mutex_lock(&lun->xlock);
	for (i = 0; i < lun->medium.nprevent && lun->medium.prevent_by[i] != cmd->sess; i++)
		;
	if (i == lun->medium.nprevent) {
		/* One entry per nexus: bounded by the target's sessions. */
		if (lun->medium.nprevent == lun->medium.prevent_cap) {
			uint32_t cap = lun->medium.prevent_cap ? 2 * lun->medium.prevent_cap : 4;
			struct scsitgt__session **p = realloc(
				lun->medium.prevent_by, cap * sizeof(*lun->medium.prevent_by));

			if (p == NULL) {
				r = SCSITGT__SR_BUSY;
			} else {
				lun->medium.prevent_by = p;
				lun->medium.prevent_cap = cap;
			}
		}
		if (r == SCSITGT__SR_OK)
			lun->medium.prevent_by[lun->medium.nprevent++] = cmd->sess;
	}
	if (r == SCSITGT__SR_OK)
		lun->medium.prevent_removal = true;
	uv_mutex_unlock(&lun->xlock);
	scsitgt__cmd_complete(cmd, r);
}
