/* SPDX-License-Identifier: MIT */
/*
 * SANITIZE (SBC-4 §5.28, sanitize operations §4.33), mapped onto backend ios:
 *   OVERWRITE      WRITEs of the initialization pattern, OVERWRITE COUNT passes, the pattern
 *                  inverted between passes when INVERT is set;
 *   BLOCK ERASE    WRITE ZEROES when the backend has it, else UNMAP when unmapped blocks read
 *   CRYPTO ERASE   as zeros (LBPRZ), else WRITEs of zeros. We hold no encryption key, so a
 *                  crypto erase is an erase: afterwards no previous data can be read back;
 *   EXIT FAILURE MODE  leaves the failure state of a failed sanitize that had AUSE set.
 * On a backend with a volatile cache a FLUSH follows the last piece: the sanitize completes
 * once its writes are written back.
 * While a sanitize runs, the LUN answers every command but INQUIRY, REPORT LUNS and REQUEST
 * SENSE with NOT READY, SANITIZE IN PROGRESS, and REQUEST SENSE reports the progress
 * (spc_request_sense.c). A failed sanitize leaves media access commands failing with MEDIUM ERROR,
 * SANITIZE COMMAND FAILED until a sanitize succeeds (or EXIT FAILURE MODE, if AUSE allowed it).
 *
 * The operation runs one bounded io at a time on a command of the LUN's own that no nexus
 * owns (bg_walk.h), so that task management, resets and nexus loss leave it running (SBC-4 §4.11: an I_T
 * nexus loss does not suspend it, a logical unit reset only pauses it). It yields to the loop
 * between two pieces: every other command meets it in progress, and TEST UNIT READY and
 * REQUEST SENSE report how far it got (sense key specific progress indication, SPC-5
 * §4.4.2.4.2). With IMMED 1 (SBC-4 §5.28.1) the SANITIZE command returns GOOD once its
 * parameters are checked; with IMMED 0 it waits for the end of the operation, held by a pseudo
 * io like a command waiting for the range lock (range_lock.h), and an abort of the command
 * (ABORT TASK, a reset, nexus loss) ends the wait at the next piece, not the operation. A
 * LUN being removed stops the operation. ZNR concerns zoned devices and is refused.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/bg_walk.h"
#include "core/cdb.h"
#include "core/fabric.h"
#include "core/scsi_spec.h"
#include "core/sbc.h"
#include "core/sbc_sanitize.h"
#include "core/spc_selftest.h"
#include "util/be.h"

/* SBC-4 §5.28.2 Table 98: the OVERWRITE parameter list header. */
#define SZ_OW_HDR 4
/* One io writes at most this many bytes (one buffer, reused for every piece). */
#define SZ_CHUNK_BYTES (1u << 20)
/* WRITE ZEROES / UNMAP pieces carry no data; keep them within MAXIMUM UNMAP LBA COUNT. */
#define SZ_NODATA_BLOCKS SCSITGT__MAX_UNMAP_LBA_COUNT

struct sz_walk {
	struct scsitgt__bg_walk bg; /* on the LUN's own command (bg_walk.h) */
	enum scsitgt_io_type type;
	uint64_t total; /* blocks of the LUN */
	uint64_t next;	/* first block of the current pass not yet done */
	unsigned int pass;
	unsigned int passes;
	bool invert;
	uint8_t *buf; /* the pattern (or zeros) for buf_blocks blocks; NULL for no-data ios */
	uint32_t buf_blocks;
	uint32_t piece_blocks;
	/* A FLUSH is still due after the last pass (the pieces carry no FUA). */
	bool flush;
	enum scsitgt__sense_reason reason;
};

/* End the wait of an IMMED 0 SANITIZE command: drop its hold, finish it. */
static void sz_release_waiter(struct sz_walk *w, enum scsitgt__sense_reason r)
{
	struct scsitgt__cmd *fg = scsitgt__bg_walk_take_waiter(&w->bg);

	if (fg)
		scsitgt__cmd_complete(fg, r);
}

/* SBC-4 §5.28.1: the parameter list length rules depend on the service action. */
enum scsitgt__sense_reason scsitgt__sbc_parse_sanitize(struct scsitgt__cmd *cmd)
{
	uint8_t sa = cmd->cdb[1] & 0x1f;
	uint16_t len = get_be16(&cmd->cdb[7]);

	if (sa == SBC_SANITIZE_OVERWRITE) {
		/* §5.28.2: the header plus 1..block length bytes of pattern. */
		if (len <= SZ_OW_HDR || len > cmd->lun->geo.block_size + SZ_OW_HDR)
			return scsitgt__cmd_bad_cdb_field(cmd, 7, -1);
		cmd->dir = SCSITGT__DIR_OUT;
		cmd->xfer_len = len;
		return SCSITGT__SR_OK;
	}
	/* BLOCK ERASE is offered on thin LUNs only (SBC-4 §4.33.3 ties it to logical block
	 * provisioning: erased blocks become deallocated); see the row flag. */
	if ((cmd->def->flags & SCSITGT__CDB_F_THIN) && !scsitgt__sbc_lbpme(cmd->lun))
		return scsitgt__cmd_bad_cdb_field(cmd, 1, 4);
	/* §5.28.3-§5.28.5: the other service actions have no parameter list. */
	if (len != 0)
		return scsitgt__cmd_bad_cdb_field(cmd, 7, -1);
	return SCSITGT__SR_OK;
}

enum scsitgt__sense_reason scsitgt__sanitize_check(struct scsitgt__cmd *cmd,
						   const struct scsitgt__cdb_def *row)
{
	if (cmd->lun->sanitize.state == SCSITGT__SANITIZE_RUNNING) {
		/* SBC-4 §4.33: only INQUIRY, REPORT LUNS and REQUEST SENSE go on (the rows that
		 * also serve absent LUNs). */
		if (row->flags & SCSITGT__CDB_F_NO_LUN)
			return SCSITGT__SR_OK;
		/* NOT READY, SANITIZE IN PROGRESS with the progress indication (SPC-5
		 * §4.4.2.4.2: SKSV, then a fraction of 65536 where the field pointer would be). */
		cmd->detail.sks_valid = true;
		cmd->detail.sks_cdb = false;
		cmd->detail.sks_bpv = false;
		cmd->detail.sks_field = cmd->lun->sanitize.progress;
		return SCSITGT__SR_NOT_READY_SANITIZE;
	}
	if (cmd->lun->sanitize.state == SCSITGT__SANITIZE_FAILED && cmd->cdb[0] != SBC_SANITIZE &&
	    (row->flags & SCSITGT__CDB_F_MEDIUM) && cmd->cdb[0] != SPC_TEST_UNIT_READY)
		return SCSITGT__SR_SANITIZE_FAILED;
	return SCSITGT__SR_OK;
}

static void sz_progress(struct sz_walk *w)
{
	uint64_t done = (uint64_t)w->pass * w->total + w->next;
	uint64_t all = (uint64_t)w->passes * w->total;

	/* PROGRESS INDICATION is a fraction of 65536 (SPC-5 §4.4.2.4.2). */
	w->bg.cmd->lun->sanitize.progress =
		(uint16_t)(all ? (done >= all ? 0xffff : (done * 65536) / all) : 0);
}

static void sz_finish(struct scsitgt__bg_walk *bg)
{
	struct sz_walk *w = scsitgt__container_of(bg, struct sz_walk, bg);
	struct scsitgt_lun *lun = bg->cmd->lun;
	enum scsitgt__sense_reason r = w->reason;

	sz_release_waiter(w, r == SCSITGT__SR_OK ? SCSITGT__SR_OK : SCSITGT__SR_SANITIZE_FAILED);
	uv_mutex_lock(&lun->xlock);
	lun->sanitize.progress = 0;
	if (r == SCSITGT__SR_OK) {
		lun->sanitize.state = SCSITGT__SANITIZE_IDLE;
	} else {
		/* SBC-4 §4.33.2: the operation failed; media stays unusable until a sanitize
		 * succeeds, or EXIT FAILURE MODE if this command had AUSE set. AUSE first: a
		 * command that sees FAILED reads the AUSE of this failure. */
		lun->sanitize.ause = bg->cmd->cdb[1] & 0x20;
		lun->sanitize.state = SCSITGT__SANITIZE_FAILED;
	}
	uv_mutex_unlock(&lun->xlock);
	free(w->buf);
	free(w);
}

static void sz_done(struct scsitgt__bg_walk *bg, enum scsitgt__sense_reason reason)
{
	struct sz_walk *w = scsitgt__container_of(bg, struct sz_walk, bg);

	if (reason != SCSITGT__SR_OK && w->reason == SCSITGT__SR_OK)
		w->reason = reason;
	if (bg->type == SCSITGT_IO_FLUSH)
		return;
	w->next += bg->blocks;
	if (w->next == w->total) {
		w->next = 0;
		w->pass++;
		/* SBC-4 §5.28.2: INVERT flips every bit between consecutive passes. */
		if (w->invert && w->buf) {
			for (size_t i = 0; i < (size_t)w->buf_blocks * bg->cmd->lun->geo.block_size;
			     i++)
				w->buf[i] = (uint8_t)~w->buf[i];
		}
	}
	sz_progress(w);
}

static bool sz_stop(struct scsitgt__bg_walk *bg)
{
	struct sz_walk *w = scsitgt__container_of(bg, struct sz_walk, bg);

	/* An aborted SANITIZE command stops waiting; the operation goes on. */
	if (bg->waiter && scsitgt__cmd_aborted(bg->waiter))
		sz_release_waiter(w, SCSITGT__SR_ABORTED);
	/* A LUN being removed does not wait for the sanitize (home sets the flag, this may be
	 * a worker's loop: core.h). */
	if (atomic_load_explicit(&bg->cmd->lun->drain.destroying, memory_order_relaxed) &&
	    w->reason == SCSITGT__SR_OK)
		w->reason = SCSITGT__SR_ABORTED;
	return w->reason != SCSITGT__SR_OK || (w->pass == w->passes && !w->flush);
}

static bool sz_next(struct scsitgt__bg_walk *bg)
{
	struct sz_walk *w = scsitgt__container_of(bg, struct sz_walk, bg);
	uint64_t left = w->total - w->next;

	if (w->pass == w->passes) {
		/* Every pass written: the FLUSH that ends it (sz_stop() let it through). */
		w->flush = false;
		bg->type = SCSITGT_IO_FLUSH;
		bg->lba = 0;
		bg->blocks = 0;
		bg->data = false;
		return true;
	}
	bg->type = w->type;
	bg->lba = w->next;
	bg->blocks = left < w->piece_blocks ? (uint32_t)left : w->piece_blocks;
	bg->data = w->buf != NULL;
	bg->iov.iov_base = w->buf;
	bg->iov.iov_len = (size_t)bg->blocks * bg->cmd->lun->geo.block_size;
	return true;
}

static const struct scsitgt__bg_ops sz_ops = {
	.stop = sz_stop,
	.next = sz_next,
	.done = sz_done,
	.finish = sz_finish,
};

/* Fill each block of @buf with the pattern, repeated from the block's first byte. */
static void sz_fill(uint8_t *buf, uint32_t blocks, uint32_t bs, const uint8_t *pat, uint16_t plen)
{
	for (uint32_t b = 0; b < blocks; b++) {
		uint8_t *blk = &buf[(size_t)b * bs];

		for (uint32_t i = 0; i < bs; i += plen)
			memcpy(&blk[i], pat, bs - i < plen ? bs - i : plen);
	}
}

/* SBC-4 §5.28.2 Table 98: INVERT, TEST, OVERWRITE COUNT, INITIALIZATION PATTERN LENGTH. */
static enum scsitgt__sense_reason sz_overwrite_setup(struct scsitgt__cmd *cmd, struct sz_walk *w)
{
	const uint8_t *p = cmd->buf;
	uint32_t bs = cmd->lun->geo.block_size;
	uint16_t plen = get_be16(&p[2]);

	if (p[0] & 0x60) /* TEST 00b only: the other values are reserved or vendor specific */
		return scsitgt__cmd_bad_param_field(cmd, 0, 6);
	if ((p[0] & 0x1f) == 0) /* OVERWRITE COUNT 00h is reserved */
		return scsitgt__cmd_bad_param_field(cmd, 0, 4);
	if (p[1])
		return scsitgt__cmd_bad_param_field(cmd, 1, 7);
	/* Zero, beyond the block, or beyond the list: INVALID FIELD IN PARAMETER LIST. */
	if (plen == 0 || plen > bs || (uint32_t)plen + SZ_OW_HDR > cmd->xfer_len)
		return scsitgt__cmd_bad_param_field(cmd, 2, -1);
	w->invert = p[0] & 0x80;
	w->passes = p[0] & 0x1f;
	w->type = SCSITGT_IO_WRITE;
	w->buf_blocks = SZ_CHUNK_BYTES / bs ? SZ_CHUNK_BYTES / bs : 1;
	if (w->buf_blocks > w->total)
		w->buf_blocks = (uint32_t)w->total;
	w->buf = malloc((size_t)w->buf_blocks * bs);
	if (w->buf == NULL)
		return SCSITGT__SR_BUSY;
	sz_fill(w->buf, w->buf_blocks, bs, &p[SZ_OW_HDR], plen);
	w->piece_blocks = w->buf_blocks;
	return SCSITGT__SR_OK;
}

/* BLOCK ERASE and CRYPTO ERASE: the cheapest io that leaves every block reading zeros. */
static enum scsitgt__sense_reason sz_erase_setup(struct scsitgt__cmd *cmd, struct sz_walk *w)
{
	struct scsitgt_lun *lun = cmd->lun;
	uint32_t bs = lun->geo.block_size;

	w->passes = 1;
	/* On a thin LUN the erased blocks end deallocated (SBC-4 §4.33.3: GET LBA STATUS then
	 * reports them so), when unmapped blocks read as zeros. */
	if (scsitgt__sbc_lbpme(lun) && scsitgt__lun_supports(lun, SCSITGT_IO_UNMAP) &&
	    scsitgt__sbc_lbprz(lun)) {
		w->type = SCSITGT_IO_UNMAP;
		w->piece_blocks = SZ_NODATA_BLOCKS;
		return SCSITGT__SR_OK;
	}
	if (scsitgt__lun_supports(lun, SCSITGT_IO_WRITE_ZEROES)) {
		w->type = SCSITGT_IO_WRITE_ZEROES;
		w->piece_blocks = SZ_NODATA_BLOCKS;
		return SCSITGT__SR_OK;
	}
	w->type = SCSITGT_IO_WRITE;
	w->buf_blocks = SZ_CHUNK_BYTES / bs ? SZ_CHUNK_BYTES / bs : 1;
	if (w->buf_blocks > w->total)
		w->buf_blocks = (uint32_t)w->total;
	w->buf = calloc(w->buf_blocks, bs);
	if (w->buf == NULL)
		return SCSITGT__SR_BUSY;
	w->piece_blocks = w->buf_blocks;
	return SCSITGT__SR_OK;
}

/*
 * What the parse checked against state another loop may have changed since: a sanitize
 * started by a command of another shard (SBC-4 §4.33: NOT READY, SANITIZE IN PROGRESS), a
 * self-test started there (SPC-5 §6.42). Under lun->xlock, so that two SANITIZE commands of
 * two loops never both start one: the state changes under the same lock.
 */
static enum scsitgt__sense_reason sz_start_check_locked(struct scsitgt__cmd *cmd)
{
	if (cmd->lun->sanitize.state == SCSITGT__SANITIZE_RUNNING)
		return scsitgt__sanitize_check(cmd, cmd->def);
	if (scsitgt__lun_xflags(cmd->lun) & SCSITGT__LUN_XF_SELFTEST)
		return scsitgt__selftest_check_locked(cmd, cmd->def);
	return SCSITGT__SR_OK;
}

/* SBC-4 §5.28.5: EXIT FAILURE MODE, allowed only after a failed sanitize whose AUSE was one. */
static void sz_exit_failure_mode(struct scsitgt__cmd *cmd)
{
	struct scsitgt_lun *lun = cmd->lun;
	enum scsitgt__sense_reason r;

	uv_mutex_lock(&lun->xlock);
	r = sz_start_check_locked(cmd);
	if (r == SCSITGT__SR_OK && lun->sanitize.state == SCSITGT__SANITIZE_FAILED &&
	    !lun->sanitize.ause)
		r = scsitgt__cmd_bad_cdb_field(cmd, 1, 4);
	if (r == SCSITGT__SR_OK)
		lun->sanitize.state = SCSITGT__SANITIZE_IDLE;
	uv_mutex_unlock(&lun->xlock);
	scsitgt__cmd_complete(cmd, r);
}

void scsitgt__sbc_sanitize(struct scsitgt__cmd *cmd)
{
	struct scsitgt_lun *lun = cmd->lun;
	uint8_t sa = cmd->cdb[1] & 0x1f;
	enum scsitgt__sense_reason r;
	struct sz_walk *w;

	if (sa == SBC_SANITIZE_EXIT_FAILURE_MODE) {
		sz_exit_failure_mode(cmd);
		return;
	}
	w = calloc(1, sizeof(*w));
	if (w == NULL) {
		scsitgt__cmd_complete(cmd, SCSITGT__SR_BUSY);
		return;
	}
	w->total = scsitgt__lun_blocks(lun);
	r = sa == SBC_SANITIZE_OVERWRITE ? sz_overwrite_setup(cmd, w) : sz_erase_setup(cmd, w);
	/* SBC-4 §4.33: a completed sanitize leaves no previous data recoverable; what a
	 * volatile cache still holds of the overwrite or erase is written back first. */
	w->flush = scsitgt__sbc_volatile_cache(lun);
	if (r != SCSITGT__SR_OK) {
		free(w->buf);
		free(w);
		scsitgt__cmd_complete(cmd, r);
		return;
	}
	if (w->piece_blocks > w->total)
		w->piece_blocks = (uint32_t)w->total;
	/* The start is atomic with its checks (the walk's first piece runs from a later
	 * iteration of this loop, as a self-test's). */
	uv_mutex_lock(&lun->xlock);
	r = sz_start_check_locked(cmd);
	if (r == SCSITGT__SR_OK && scsitgt__bg_walk_start(&w->bg, &sz_ops, cmd) < 0)
		r = SCSITGT__SR_BUSY;
	if (r == SCSITGT__SR_OK) {
		lun->sanitize.progress = 0;
		lun->sanitize.state = SCSITGT__SANITIZE_RUNNING;
	}
	uv_mutex_unlock(&lun->xlock);
	if (r != SCSITGT__SR_OK) {
		free(w->buf);
		free(w);
		scsitgt__cmd_complete(cmd, r);
		return;
	}
	if (cmd->cdb[1] & 0x80) {
		scsitgt__cmd_complete(cmd, SCSITGT__SR_OK);
		return;
	}
	scsitgt__bg_walk_wait(&w->bg, cmd);
}
