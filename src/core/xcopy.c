/* SPDX-License-Identifier: MIT */
/*
 * EXTENDED COPY(LID1) (SPC-4 r37 §6.4): the copy manager is the LUN the command addresses; its
 * copy sources and destinations (CSCDs) are the LUNs of the same target whose NAA or EUI-64
 * designator (VPD 83h) an identification descriptor names and which this I_T nexus sees.
 *
 * The segments run in list order. Each one is read from its source and written to its
 * destination in pieces of at most SCSITGT__XCOPY_CHUNK_BYTES, one io at a time: a piece is
 * read under the source range's plain-path lock (range_lock.h), the lock is dropped, then the
 * piece is written under the destination's, so that COMPARE AND WRITE, ORWRITE and WRITE
 * ATOMIC see neither half-copied data nor lose their atomicity, and no lock is held while
 * another is awaited. Overlapping ranges of one LUN are copied back to front when the
 * destination lies above the source, so the result is that of a copy through a buffer.
 *
 * Errors (SPC-4, third-party copy model, "errors detected during processing of segment
 * descriptors"): COPY ABORTED, the segment number in bytes 2..3 of the COMMAND-SPECIFIC
 * INFORMATION, the residual of the destination in INFORMATION once it was written to; when a
 * CSCD refused or failed an io (what its own device server would have answered: LBA out of
 * range, DATA PROTECT, RESERVATION CONFLICT, a medium error...), ASC/ASCQ 00h/00h and, in
 * fixed-format sense, the CSCD's status and sense data appended at byte 18, pointed at by
 * byte 0 (source) or byte 1 (destination) of the COMMAND-SPECIFIC INFORMATION; a field of a
 * segment in error gets the segment pointer (SD set) in the sense key specific bytes.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "core/alua.h"
#include "core/cdb.h"
#include "core/fabric.h"
#include "core/pr.h"
#include "core/range_lock.h"
#include "core/scsi_spec.h"
#include "core/xcopy.h"
#include "core/sbc.h"
#include "core/sbc_sanitize.h"
#include "util/be.h"

/* Fixed-format sense: where the CSCD's status and sense go (SPC-4, errors detected during
 * processing of segment descriptors). */
#define XC_AREA_OFF 18u
#define XC_FIXED_LEN 18u
_Static_assert(XC_AREA_OFF + 1 + XC_FIXED_LEN <= SCSITGT_SENSE_BUF_SIZE, "CSCD sense fits");
/* Descriptor format: header, information, command-specific information, sense key specific. */
_Static_assert(8 + 12 + 12 + 8 <= SCSITGT_SENSE_BUF_SIZE, "descriptor sense fits");

enum xc_step {
	XC_SEG_START,
	XC_PIECE_START,
	XC_WAIT_SRC,
	XC_READING,
	XC_WAIT_DST,
	XC_WRITING,
	XC_FLUSHING,
	XC_END,
};

/* How a copy failed, turned into sense data at the end. */
struct xc_fail {
	uint8_t asc;
	uint8_t ascq;
	bool sks;
	bool sd; /* field pointer relative to the segment descriptor */
	uint16_t field;
	int8_t bit;
	/* 0: the source's status and sense, 1: the destination's; -1 none. */
	int8_t area;
	uint8_t cscd_status;
	bool cscd_sense;
	uint8_t cscd_key, cscd_asc, cscd_ascq;
};

struct scsitgt__xcopy_op {
	struct scsitgt__cmd *cmd;
	struct scsitgt_lun *home; /* the copy manager, cmd->lun */
	struct scsitgt__xcopy_entry *entry;
	struct scsitgt_lun *cscd[SCSITGT__XCOPY_MAX_CSCD]; /* resolved, each holding inflight */
	uint16_t seg;					   /* the segment being processed */
	uint64_t total;					   /* bytes written by the whole command */
	/* The current segment. */
	struct scsitgt_lun *src, *dst;
	uint64_t seg_bytes; /* bytes the segment moves */
	uint64_t seg_done;  /* bytes of it written */
	bool backward;
	/* The current piece, as a byte offset into the segment. */
	uint64_t piece_off;
	uint32_t piece_len;
	uint8_t *buf;
	uint32_t buf_cap;
	struct scsitgt__range_token token; /* plain-path range lock (range_lock.h) */
	enum xc_step step;
	bool granted, io_done;
	/* The destination write in flight went without FUA (the cache was on). */
	bool cached_write;
	enum scsitgt__sense_reason io_reason;
	struct scsitgt__sense_info io_raw;
	bool pumping, again;
	/* Outcome: a reason, or a failure to encode as COPY ABORTED. */
	enum scsitgt__sense_reason reason;
	bool failed;
	struct xc_fail fail;
	bool info_valid;
	uint64_t info;
	struct scsitgt__xcopy_list list;
};

/* SPC-4 §6.4: PARAMETER LIST LENGTH in bytes 10..13; zero copies nothing. */
enum scsitgt__sense_reason scsitgt__xcopy_parse_cdb(struct scsitgt__cmd *cmd)
{
	uint32_t len = get_be32(&cmd->cdb[10]);

	/* A list longer than the largest we take cannot be valid: its descriptor lists would
	 * exceed MAXIMUM DESCRIPTOR LIST LENGTH (or carry inline data, which we refuse). Refuse
	 * it before its data is taken in. */
	if (len > SCSITGT__XCOPY_MAX_PARAM)
		return SCSITGT__SR_PARAM_LIST_LENGTH_ERROR;
	cmd->xfer_len = len;
	cmd->dir = len ? SCSITGT__DIR_OUT : SCSITGT__DIR_NONE;
	return SCSITGT__SR_OK;
}

/* Sense data of the copy manager (its LUN's D_SENSE) for a failure (SPC-4, errors detected during
 * processing of segment descriptors). */
static size_t xc_sense(const struct scsitgt__xcopy_op *op, uint8_t *buf)
{
	const struct xc_fail *f = &op->fail;
	struct scsitgt__sense_detail d = { 0 };
	bool desc = op->home->mode.d_sense;
	size_t len;

	d.info_valid = op->info_valid;
	d.info = op->info;
	d.sks_valid = f->sks;
	d.sks_field = f->field;
	d.sks_bpv = f->bit >= 0;
	d.sks_bit = f->bit >= 0 ? (uint8_t)f->bit : 0;
	len = scsitgt__sense_encode(buf, desc, SENSE_COPY_ABORTED, f->asc, f->ascq, &d);
	if (!desc) {
		/* Fixed format (SPC-5 §4.4.3): COMMAND-SPECIFIC INFORMATION in bytes 8..11, the
		 * segment pointer's SD bit in byte 15 bit 5 (SPC-5, segment pointer sense key
		 * specific data). */
		put_be16(&buf[10], op->seg);
		if (f->sks && f->sd)
			buf[15] |= 0x20;
		if (f->area >= 0) {
			buf[8 + f->area] = XC_AREA_OFF;
			buf[XC_AREA_OFF] = f->cscd_status;
			len = XC_AREA_OFF + 1;
			if (f->cscd_sense) {
				struct scsitgt__sense_detail none = { 0 };

				len += scsitgt__sense_encode(&buf[len], false, f->cscd_key,
							     f->cscd_asc, f->cscd_ascq, &none);
			}
			buf[7] = (uint8_t)(len - 8);
		}
		return len;
	}
	/* Descriptor format (SPC-5 §4.4.2): mark SD in the sense key specific descriptor, then
	 * add a command-specific information descriptor (SPC-5 §4.4.2) with the segment
	 * number in bytes 2..3 of its field. The CSCD's own sense data has no room here. */
	for (size_t p = 8; p + 1 < len; p += 2 + buf[p + 1]) {
		if (buf[p] == 0x02 && f->sks && f->sd)
			buf[p + 4] |= 0x20;
	}
	memset(&buf[len], 0, 12);
	buf[len] = 0x01;
	buf[len + 1] = 0x0a;
	put_be16(&buf[len + 4 + 2], op->seg);
	len += 12;
	buf[7] = (uint8_t)(len - 8);
	return len;
}

/*
 * One of the copy's counts on @lun goes, as core/drain.c drops a given-up command's own: on a
 * worker as usual (its part may report), on home without the backend close a last drop
 * starts, for this runs inside the engine's walk of its zombies, which closes an idle one
 * itself on its next turn.
 */
static void xc_count_drop(struct scsitgt_lun *lun, struct scsitgt__shard *shard)
{
	struct scsitgt__lun_part *part = scsitgt__lun_part(lun, shard);

	if (shard->index != 0) {
		scsitgt__lun_inflight_drop(lun, shard);
		return;
	}
	atomic_store_explicit(&part->inflight,
			      atomic_load_explicit(&part->inflight, memory_order_relaxed) - 1,
			      memory_order_relaxed);
}

/*
 * The copy's command was given up with a piece's io in the backend (an engine shutdown,
 * core/drain.c; cmd.h struct scsitgt__cmd_ctx_ops). On its loop: its entry in the nexus's
 * copy results ends (aborted), so that the nexus neither keeps the list identifier busy nor
 * writes through the entry's pointer into the copy once it is freed; and its counts on the
 * copy manager and the CSCDs go, but for the one the shutdown takes for the command on the
 * LUN of that io (else those LUNs would stay held and be left behind).
 */
static void xc_ctx_abandon(struct scsitgt__cmd *cmd)
{
	struct scsitgt__xcopy_op *op = cmd->ctx.xcopy;
	struct scsitgt_lun *io_lun = op->step == XC_READING ? op->src : op->dst;
	bool taken = op->home == io_lun;
	const uint8_t no_sense[1] = { 0 };

	scsitgt__xcopy_entry_end(op->entry, SAM_STAT_TASK_ABORTED, no_sense, 0, op->seg, op->total);
	if (!taken)
		xc_count_drop(op->home, cmd->shard);
	for (unsigned int i = 0; i < SCSITGT__XCOPY_MAX_CSCD; i++) {
		if (op->cscd[i] == NULL)
			continue;
		if (!taken && op->cscd[i] == io_lun)
			taken = true;
		else
			xc_count_drop(op->cscd[i], cmd->shard);
		op->cscd[i] = NULL;
	}
}

/* Then, once that io is back (any thread): the copy's memory, its buffer last. */
static void xc_ctx_free(struct scsitgt__cmd *cmd)
{
	struct scsitgt__xcopy_op *op = cmd->ctx.xcopy;

	cmd->ctx.xcopy = NULL;
	free(op->buf);
	free(op);
}

static const struct scsitgt__cmd_ctx_ops xc_ctx_ops = {
	.abandon = xc_ctx_abandon,
	.free = xc_ctx_free,
};

/* Drop the CSCD holds, record the outcome, complete the command and free the copy. */
static void xc_end(struct scsitgt__xcopy_op *op)
{
	struct scsitgt__cmd *cmd = op->cmd;
	uint8_t sense[SCSITGT_SENSE_BUF_SIZE];
	size_t sense_len = 0;
	uint8_t status = SAM_STAT_GOOD;

	cmd->lun = op->home;
	cmd->ctx.xcopy = NULL;
	scsitgt__cmd_ctx_own(cmd, NULL);
	for (unsigned int i = 0; i < SCSITGT__XCOPY_MAX_CSCD; i++) {
		if (op->cscd[i])
			scsitgt__lun_inflight_drop(op->cscd[i], op->cmd->shard);
	}
	free(op->buf);
	if (op->failed) {
		status = SAM_STAT_CHECK_CONDITION;
		sense_len = xc_sense(op, sense);
	} else if (op->reason != SCSITGT__SR_OK) {
		const struct scsitgt__sense_info *si = scsitgt__sense_lookup(op->reason);

		status = si->status;
		if (status == SAM_STAT_CHECK_CONDITION)
			sense_len = scsitgt__sense_encode(sense, op->home->mode.d_sense, si->key,
							  si->asc, si->ascq, NULL);
	}
	scsitgt__xcopy_entry_end(op->entry, status, sense, sense_len,
				 (uint16_t)(op->seg + (status != SAM_STAT_GOOD)), op->total);
	free(op);
	if (status == SAM_STAT_GOOD)
		scsitgt__cmd_complete(cmd, SCSITGT__SR_OK);
	else
		scsitgt__cmd_complete_sense(cmd, status, sense, sense_len);
}

/* A failure of the current segment: COPY ABORTED with @asc/@ascq. */
static struct xc_fail *xc_abort(struct scsitgt__xcopy_op *op, uint8_t asc, uint8_t ascq)
{
	op->failed = true;
	memset(&op->fail, 0, sizeof(op->fail));
	op->fail.asc = asc;
	op->fail.ascq = ascq;
	op->fail.area = -1;
	op->step = XC_END;
	return &op->fail;
}

static void xc_pointer(struct xc_fail *f, bool sd, uint16_t field, int bit)
{
	f->sks = true;
	f->sd = sd;
	f->field = field;
	f->bit = (int8_t)bit;
}

/* A CSCD answered @reason (or raw sense): COPY ABORTED 00h/00h carrying its answer. */
static struct xc_fail *xc_cscd_failed(struct scsitgt__xcopy_op *op, bool dst,
				      enum scsitgt__sense_reason r,
				      const struct scsitgt__sense_info *raw)
{
	const struct scsitgt__sense_info *si = r == SCSITGT__SR_RAW ? raw :
								      scsitgt__sense_lookup(r);
	struct xc_fail *f;

	if (r == SCSITGT__SR_ABORTED || scsitgt__cmd_aborted(op->cmd)) {
		op->reason = SCSITGT__SR_ABORTED;
		op->step = XC_END;
		return NULL;
	}
	f = xc_abort(op, XC_ASC_NONE, 0x00);
	f->area = dst ? 1 : 0;
	f->cscd_status = r == SCSITGT__SR_RAW ? SAM_STAT_CHECK_CONDITION : si->status;
	if (f->cscd_status == SAM_STAT_CHECK_CONDITION) {
		f->cscd_sense = true;
		f->cscd_key = si->key;
		f->cscd_asc = si->asc;
		f->cscd_ascq = si->ascq;
	}
	/* SPC-4 (errors during segment processing): once the destination was written to,
	 * INFORMATION holds the residual of the segment in destination blocks. */
	if (op->seg_done) {
		op->info_valid = true;
		op->info = (op->seg_bytes - op->seg_done) / op->dst->geo.block_size;
	}
	return f;
}

/* Whether identification descriptor @c names @lun by one of the LU designators of its VPD
 * page 83h (SPC-5 §7.7.6.5 EUI-64, §7.7.6.6 NAA types 5 and 6, §7.7.6.12 UUID). */
static bool xc_names(const struct scsitgt__xcopy_cscd *c, const struct scsitgt_lun *lun)
{
	const struct scsitgt__lun_designators *d = &lun->desig;

	if (c->code_set != CODE_SET_BINARY)
		return false;
	if (c->desig_type == DESIG_NAA && c->desig_len == 8)
		return get_be64(c->desig) == lun->ident.naa;
	if (c->desig_type == DESIG_NAA && c->desig_len == 16)
		return d->has_naa_extended && memcmp(c->desig, d->naa_extended, 16) == 0;
	if (c->desig_type == DESIG_EUI64 && c->desig_len == 8)
		return lun->ident.eui64 && get_be64(c->desig) == lun->ident.eui64;
	/* UUID TYPE (byte 0's top nibble) and the reserved byte are not compared. */
	if (c->desig_type == DESIG_UUID && c->desig_len == 18)
		return d->has_uuid && memcmp(&c->desig[2], d->uuid, 16) == 0;
	return false;
}

/*
 * The LUN CSCD @i names among those of the nexus's target it may see, held; NULL if none.
 * The copy may run on a worker shard: it looks in the LUN table home publishes (core.h, as
 * REPORT LUNS does), never in home's array, which home reallocates as LUNs come and go. The
 * table holds no LUN being destroyed once this loop has seen the change; one this loop still
 * finds in an older copy is held before this loop callback returns, and its removal waits
 * for the hold like for any command of this shard (the removal's drain message runs here
 * later, core/lun.c), so the pointer stays valid for the whole copy.
 */
static struct scsitgt_lun *xc_resolve(struct scsitgt__xcopy_op *op, uint16_t i)
{
	const struct scsitgt__session *sess = op->cmd->sess;
	const struct scsitgt__lun_table *t =
		atomic_load_explicit(&sess->tgt->lun_table, memory_order_acquire);

	if (op->cscd[i])
		return op->cscd[i];
	for (size_t n = 0; t && n < t->n; n++) {
		struct scsitgt_lun *lun = t->luns[n];

		if (!scsitgt__session_lun_visible(sess, lun->id))
			continue;
		if (xc_names(&op->list.cscd[i], lun)) {
			/* Held like a command's LUN, so that removal waits for the copy. */
			scsitgt__lun_hold(lun, op->cmd->shard);
			op->cscd[i] = lun;
			return lun;
		}
	}
	return NULL;
}

/*
 * What the CSCD's device server would answer a READ (16) or WRITE (16) from this nexus before
 * touching the medium: not ready, ALUA state, reservations, write protection (the checks of
 * scsitgt__cdb_parse and cmd.c for media commands).
 */
static enum scsitgt__sense_reason xc_access(const struct scsitgt__xcopy_op *op,
					    struct scsitgt_lun *lun, bool write)
{
	struct scsitgt__cmd probe;
	const struct scsitgt__cdb_def *row;
	enum scsitgt__sense_reason r;

	memset(&probe, 0, sizeof(probe));
	probe.sess = op->cmd->sess;
	probe.lun = lun;
	probe.xflags = scsitgt__lun_xflags(lun);
	probe.cdb[0] = write ? SBC_WRITE_16 : SBC_READ_16;
	probe.cdb_len = 16;
	row = scsitgt__cdb_lookup(probe.cdb, probe.cdb_len);
	if (row == NULL)
		return SCSITGT__SR_INVALID_OPCODE;
	probe.def = row;
	r = scsitgt__alua_check(&probe, row);
	if (r == SCSITGT__SR_OK)
		r = scsitgt__pr_check_now(&probe);
	if (r != SCSITGT__SR_OK)
		return r;
	if (!lun->medium.present)
		return SCSITGT__SR_NOT_READY_MEDIUM_ABSENT;
	if (lun->medium.stopped)
		return SCSITGT__SR_NOT_READY_INIT_REQUIRED;
	if (lun->offline)
		return SCSITGT__SR_NOT_READY_OFFLINE;
	if (lun->sanitize.state) {
		r = scsitgt__sanitize_check(&probe, row);
		if (r != SCSITGT__SR_OK)
			return r;
	}
	if (write && scsitgt__lun_write_protected(lun, op->cmd->sess))
		return SCSITGT__SR_WRITE_PROTECTED;
	return SCSITGT__SR_OK;
}

/* The CSCD of index @i for segment field @field (4: source, 6: destination), or NULL with
 * the copy failed. */
static struct scsitgt_lun *xc_cscd(struct scsitgt__xcopy_op *op, uint16_t idx, uint16_t field)
{
	const struct scsitgt__xcopy_cscd *c;
	struct scsitgt_lun *lun;

	/* SPC-4 §6.4 (segment descriptors): an index past the CSCD list names nothing the copy
	 * manager can reach. */
	if (idx >= op->list.ncscd) {
		xc_pointer(xc_abort(op, XC_ASC_UNREACHABLE, 0x04), true, field, 7);
		return NULL;
	}
	c = &op->list.cscd[idx];
	lun = xc_resolve(op, idx);
	if (lun == NULL) {
		/* No LUN of this target answers to the designator: the initiator falls back to
		 * its own reads and writes (SPC-4 §6.4, identification descriptor). */
		xc_pointer(xc_abort(op, XC_ASC_THIRD_PARTY, 0x02), false, c->offset + 8, 7);
		return NULL;
	}
	/* Block to block segments need block devices of the block length the descriptor states
	 * (SPC-4 §6.4, block device parameters): INCORRECT COPY TARGET DEVICE TYPE otherwise. */
	if (c->pdt != SPC_PDT_DIRECT_ACCESS) {
		xc_pointer(xc_abort(op, XC_ASC_THIRD_PARTY, 0x03), false, c->offset + 1, 4);
		return NULL;
	}
	if (c->block_len != lun->geo.block_size) {
		xc_pointer(xc_abort(op, XC_ASC_THIRD_PARTY, 0x03), false, c->offset + 29, 7);
		return NULL;
	}
	return lun;
}

/* Set up segment op->seg; false when it failed (op->step is XC_END then). */
/* A range that runs past @lun's capacity (the capacity read once: a resize on home may change
 * it); a block device segment may start at the capacity itself with nothing to copy. */
static bool xc_past_end(const struct scsitgt_lun *lun, uint64_t lba, uint64_t n)
{
	uint64_t cap = scsitgt__lun_blocks(lun);

	return lba > cap || n > cap - lba;
}

static bool xc_seg_setup(struct scsitgt__xcopy_op *op)
{
	const struct scsitgt__xcopy_seg *s = &op->list.seg[op->seg];
	enum scsitgt__sense_reason r;
	uint32_t sbs, dbs;
	uint64_t sblocks, dblocks;

	op->src = xc_cscd(op, s->src, 4);
	if (op->src == NULL)
		return false;
	op->dst = xc_cscd(op, s->dst, 6);
	if (op->dst == NULL)
		return false;
	sbs = op->src->geo.block_size;
	dbs = op->dst->geo.block_size;
	/* SPC-4 §6.4, block to block segment: NUMBER OF BLOCKS counts source blocks, or destination
	 * blocks with DC. A segment must move whole blocks on both sides: we neither pad nor keep
	 * residue. */
	op->seg_bytes = (uint64_t)s->nblocks * (s->dc ? dbs : sbs);
	op->seg_done = 0;
	if (op->seg_bytes % sbs || op->seg_bytes % dbs) {
		xc_pointer(xc_abort(op, XC_ASC_PARAM, 0x0a), true, 10, 7);
		return false;
	}
	sblocks = op->seg_bytes / sbs;
	dblocks = op->seg_bytes / dbs;
	/* The checks the CSCDs' device servers would make, source first. */
	r = xc_access(op, op->src, false);
	if (r == SCSITGT__SR_OK && xc_past_end(op->src, s->src_lba, sblocks))
		r = SCSITGT__SR_LBA_OUT_OF_RANGE;
	if (r != SCSITGT__SR_OK) {
		struct xc_fail *f = xc_cscd_failed(op, false, r, NULL);

		if (f && r == SCSITGT__SR_LBA_OUT_OF_RANGE)
			xc_pointer(f, true, 12, 7);
		return false;
	}
	r = xc_access(op, op->dst, true);
	if (r == SCSITGT__SR_OK && xc_past_end(op->dst, s->dst_lba, dblocks))
		r = SCSITGT__SR_LBA_OUT_OF_RANGE;
	if (r != SCSITGT__SR_OK) {
		struct xc_fail *f = xc_cscd_failed(op, true, r, NULL);

		if (f && r == SCSITGT__SR_LBA_OUT_OF_RANGE)
			xc_pointer(f, true, 20, 7);
		return false;
	}
	/* Overlapping ranges of one LUN with the destination above the source: back to front,
	 * so that no block is read after it was overwritten. */
	op->backward = op->src == op->dst && s->dst_lba > s->src_lba &&
		       s->dst_lba - s->src_lba < sblocks;
	return true;
}

static void xc_pump(struct scsitgt__xcopy_op *op);

static void xc_granted(struct scsitgt__cmd *cmd)
{
	struct scsitgt__xcopy_op *op = cmd->ctx.xcopy;

	op->granted = true;
	xc_pump(op);
}

static void xc_io_done(struct scsitgt__cmd *cmd, struct scsitgt_io *io,
		       enum scsitgt__sense_reason reason)
{
	struct scsitgt__xcopy_op *op = cmd->ctx.xcopy;

	op->io_done = true;
	op->io_reason = reason;
	if (reason == SCSITGT__SR_RAW)
		op->io_raw = io->raw;
	xc_pump(op);
}

/*
 * Take the plain-path lock of @lun's [lba, lba + n) for the next io. The range lock and the
 * io submission work on cmd->lun: it names the CSCD for the length of the call (the pump's
 * guard keeps a grant or completion inside the call from running anything else meanwhile).
 */
static bool xc_lock(struct scsitgt__xcopy_op *op, struct scsitgt_lun *lun, uint64_t lba, uint64_t n)
{
	bool ok;

	op->granted = false;
	op->cmd->lun = lun;
	ok = scsitgt__range_plain_begin(op->cmd, lba, n, &op->token, xc_granted);
	op->cmd->lun = op->home;
	return ok;
}

static bool xc_submit(struct scsitgt__xcopy_op *op, struct scsitgt_lun *lun,
		      enum scsitgt_io_type type, uint64_t lba, uint32_t n, uint32_t flags)
{
	struct iovec iov = { op->buf, op->piece_len };
	int rc;

	op->io_done = false;
	op->cmd->lun = lun;
	rc = scsitgt__io_submit(op->cmd, type, lba, n, &iov, 1, flags, xc_io_done);
	op->cmd->lun = op->home;
	return rc == 0;
}

/* FUA for the destination's writes: as a WRITE with FUA 0, only a disabled write cache. */
static uint32_t xc_write_flags(const struct scsitgt_lun *lun)
{
	if (scsitgt__sbc_has_cache(lun) && (lun->geo.flags & SCSITGT_GEOMETRY_WRITE_CACHE) &&
	    !lun->mode.wce)
		return SCSITGT_IO_FLAG_FUA;
	return 0;
}

/* End the copy with @reason, a failure of the command itself rather than of a segment. */
static void xc_stop(struct scsitgt__xcopy_op *op, enum scsitgt__sense_reason reason)
{
	op->reason = reason;
	op->step = XC_END;
}

/* The current piece's blocks on the destination (@dst) or the source, and that LUN. */
static struct scsitgt_lun *xc_piece_blocks(const struct scsitgt__xcopy_op *op, bool dst,
					   uint64_t *lba, uint32_t *n)
{
	const struct scsitgt__xcopy_seg *s = &op->list.seg[op->seg];
	struct scsitgt_lun *lun = dst ? op->dst : op->src;
	uint32_t bs = lun->geo.block_size;

	*lba = (dst ? s->dst_lba : s->src_lba) + op->piece_off / bs;
	*n = op->piece_len / bs;
	return lun;
}

/* Lock the piece's range on the destination (@dst) or the source: XC_WAIT_DST or _SRC. */
static void xc_lock_piece(struct scsitgt__xcopy_op *op, bool dst)
{
	uint64_t lba;
	uint32_t n;
	struct scsitgt_lun *lun = xc_piece_blocks(op, dst, &lba, &n);

	op->step = dst ? XC_WAIT_DST : XC_WAIT_SRC;
	if (!xc_lock(op, lun, lba, n))
		xc_stop(op, SCSITGT__SR_BUSY);
}

/* XC_SEG_START: set up the next segment, or end after the last. */
static void xc_seg_start(struct scsitgt__xcopy_op *op)
{
	if (scsitgt__cmd_aborted(op->cmd)) {
		xc_stop(op, SCSITGT__SR_ABORTED);
		return;
	}
	if (op->seg >= op->list.nseg) {
		op->step = XC_END;
		return;
	}
	scsitgt__xcopy_entry_progress(op->entry, op->seg, op->total);
	if (xc_seg_setup(op))
		op->step = XC_PIECE_START;
}

/* XC_PIECE_START: size the next piece of the segment and lock its source range; after the
 * last piece, the next segment. */
static void xc_piece_start(struct scsitgt__xcopy_op *op)
{
	uint64_t left = op->seg_bytes - op->seg_done;
	uint32_t bs;

	if (left == 0) {
		op->seg++;
		op->step = XC_SEG_START;
		return;
	}
	if (scsitgt__cmd_aborted(op->cmd)) {
		xc_stop(op, SCSITGT__SR_ABORTED);
		return;
	}
	/* Pieces are whole blocks on both sides (block sizes are powers of two). */
	bs = op->src->geo.block_size;
	if (op->dst->geo.block_size > bs)
		bs = op->dst->geo.block_size;
	op->piece_len = SCSITGT__XCOPY_CHUNK_BYTES / bs * bs;
	if (left < op->piece_len)
		op->piece_len = (uint32_t)left;
	op->piece_off = op->backward ? left - op->piece_len : op->seg_done;
	/* One buffer for the whole command, grown to the largest piece. */
	if (op->buf_cap < op->piece_len) {
		free(op->buf);
		op->buf = malloc(op->piece_len);
		op->buf_cap = op->buf ? op->piece_len : 0;
		if (op->buf == NULL) {
			xc_stop(op, SCSITGT__SR_BUSY);
			return;
		}
	}
	xc_lock_piece(op, false);
}

/* XC_WAIT_SRC, XC_WAIT_DST: once the range is granted, read the piece from the source or
 * write it to the destination (@dst). False while the grant is awaited. */
static bool xc_io_start(struct scsitgt__xcopy_op *op, bool dst)
{
	uint64_t lba;
	uint32_t n, flags;
	struct scsitgt_lun *lun;
	bool aborted;

	if (!op->granted)
		return false;
	lun = xc_piece_blocks(op, dst, &lba, &n);
	op->step = dst ? XC_WRITING : XC_READING;
	flags = dst ? xc_write_flags(lun) : 0;
	op->cached_write = dst && !(flags & SCSITGT_IO_FLAG_FUA);
	aborted = scsitgt__cmd_aborted(op->cmd);
	if (aborted ||
	    !xc_submit(op, lun, dst ? SCSITGT_IO_WRITE : SCSITGT_IO_READ, lba, n, flags)) {
		scsitgt__range_plain_end(lun, &op->token);
		xc_stop(op, aborted ? SCSITGT__SR_ABORTED : SCSITGT__SR_BUSY);
	}
	return true;
}

/* The piece is on the destination: count it, on to the next. */
static void xc_piece_done(struct scsitgt__xcopy_op *op)
{
	op->seg_done += op->piece_len;
	op->total += op->piece_len;
	op->step = XC_PIECE_START;
}

/* XC_READING, XC_WRITING: the piece's io is back; release its range. After the read, lock
 * the destination; after the write, the piece is done. False while the io is out. */
static bool xc_io_back(struct scsitgt__xcopy_op *op, bool dst)
{
	if (!op->io_done)
		return false;
	scsitgt__range_plain_end(dst ? op->dst : op->src, &op->token);
	if (op->io_reason != SCSITGT__SR_OK) {
		xc_cscd_failed(op, dst, op->io_reason, &op->io_raw);
		return true;
	}
	if (!dst) {
		xc_lock_piece(op, true);
		return true;
	}
	/* Written to the cache under WCE 1 and back once WCE is 0 (MODE SELECT's write-back
	 * may have gone before it): on the medium before the piece counts (sbc.h,
	 * scsitgt__sbc_cache_written_through(); SBC-4 §6.5.5). */
	if (op->cached_write && scsitgt__sbc_cache_written_through(op->dst)) {
		op->step = XC_FLUSHING;
		op->io_done = false;
		op->cmd->lun = op->dst;
		if (scsitgt__io_submit(op->cmd, SCSITGT_IO_FLUSH, 0, 0, NULL, 0, 0, xc_io_done) < 0)
			xc_stop(op, SCSITGT__SR_BUSY);
		op->cmd->lun = op->home;
		return true;
	}
	xc_piece_done(op);
	return true;
}

/* XC_FLUSHING: the destination's flush after a cached piece is back. */
static bool xc_flush_back(struct scsitgt__xcopy_op *op)
{
	if (!op->io_done)
		return false;
	if (op->io_reason != SCSITGT__SR_OK) {
		xc_cscd_failed(op, true, op->io_reason, &op->io_raw);
		return true;
	}
	xc_piece_done(op);
	return true;
}

/* One step of the copy; false when it waits for a grant or an io. */
static bool xc_step(struct scsitgt__xcopy_op *op)
{
	switch (op->step) {
	case XC_SEG_START:
		xc_seg_start(op);
		return true;
	case XC_PIECE_START:
		xc_piece_start(op);
		return true;
	case XC_WAIT_SRC:
		return xc_io_start(op, false);
	case XC_READING:
		return xc_io_back(op, false);
	case XC_WAIT_DST:
		return xc_io_start(op, true);
	case XC_WRITING:
		return xc_io_back(op, true);
	case XC_FLUSHING:
		return xc_flush_back(op);
	case XC_END:
	default:
		return false;
	}
}

/* Run steps until the copy waits or ends. Completions and grants that arrive inside a step
 * only set their flag; the loop picks them up (no recursion, cmd->lun restored). */
static void xc_pump(struct scsitgt__xcopy_op *op)
{
	if (op->pumping) {
		op->again = true;
		return;
	}
	op->pumping = true;
	while (op->step != XC_END) {
		op->again = false;
		if (!xc_step(op) && !op->again)
			break;
	}
	op->pumping = false;
	if (op->step == XC_END)
		xc_end(op);
}

/* Complete with ILLEGAL REQUEST @asc/@ascq, field pointer into the parameter list. */
static void xc_refuse(struct scsitgt__cmd *cmd, const struct scsitgt__xcopy_err *err)
{
	struct scsitgt__sense_detail d = { 0 };
	uint8_t sense[SCSITGT_SENSE_BUF_SIZE];
	size_t len;

	d.sks_valid = err->sks_valid;
	d.sks_field = err->field;
	d.sks_bpv = err->bit >= 0;
	d.sks_bit = err->bit >= 0 ? (uint8_t)err->bit : 0;
	len = scsitgt__sense_encode(sense, cmd->lun->mode.d_sense, SENSE_ILLEGAL_REQUEST, err->asc,
				    err->ascq, &d);
	scsitgt__cmd_complete_sense(cmd, SAM_STAT_CHECK_CONDITION, sense, len);
}

void scsitgt__xcopy_exec(struct scsitgt__cmd *cmd)
{
	struct scsitgt__xcopy_err err;
	struct scsitgt__xcopy_op *op;
	bool busy = false;

	/* SPC-4 §6.4: a PARAMETER LIST LENGTH of zero is not an error; nothing is copied. */
	if (cmd->xfer_len == 0) {
		scsitgt__cmd_complete(cmd, SCSITGT__SR_OK);
		return;
	}
	op = calloc(1, sizeof(*op));
	if (op == NULL) {
		scsitgt__cmd_complete(cmd, SCSITGT__SR_BUSY);
		return;
	}
	if (!scsitgt__xcopy_parse(cmd->buf, cmd->xfer_len, &op->list, &err)) {
		free(op);
		xc_refuse(cmd, &err);
		return;
	}
	op->cmd = cmd;
	op->home = cmd->lun;
	op->fail.area = -1;
	/* SPC-4 §6.4 (LIST ID USAGE): the list identifier of a copy still running on this nexus is
	 * refused with OPERATION IN PROGRESS; without one (LIST ID USAGE 11b) nothing is tracked.
	 */
	if (!scsitgt__xcopy_entry_begin(cmd, op->list.list_id,
					op->list.list_id_usage != XCOPY_LIST_ID_NONE, &op->entry,
					&err.asc, &err.ascq, &busy)) {
		free(op);
		if (busy) {
			scsitgt__cmd_complete(cmd, SCSITGT__SR_BUSY);
			return;
		}
		err.sks_valid = false;
		err.bit = -1;
		xc_refuse(cmd, &err);
		return;
	}
	cmd->ctx.xcopy = op;
	scsitgt__cmd_ctx_own(cmd, &xc_ctx_ops);
	xc_pump(op);
}
