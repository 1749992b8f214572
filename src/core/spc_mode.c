/* SPDX-License-Identifier: MIT */
/*
 * Mode parameters: MODE SENSE (6)/(10) (SPC-5 §6.13/§6.14) and MODE SELECT (6)/(10)
 * (SPC-5 §6.11/§6.12) over three pages: caching (SBC-4 §6.5.5), control (SPC-5 §7.5.10) and
 * informational exceptions control (SPC-5 §7.5.14). No page is saveable.
 *
 * Changeable bits (what MODE SELECT accepts, and nothing else):
 *   caching:  WCE, only when the backend has a volatile cache (SCSITGT_GEOMETRY_WRITE_CACHE);
 *   control:  D_SENSE (sense format of this LUN), SWP (software write protect, honoured by
 *             the CDB dispatch like a read-only LUN) and TAS (default 1: a command another
 *             nexus's task management aborts is answered TASK ABORTED, core/tmf.c).
 * RCD, QERR, TST, MRIE, DEXCPT and the rest describe fixed behaviour and are not changeable.
 * A MODE SELECT that changes a value raises MODE PARAMETERS CHANGED on the other I_T nexuses;
 * one that turns WCE off writes the backend's cache back (FLUSH) before its GOOD.
 */
#include <stdlib.h>
#include <string.h>

#include "core/cdb.h"
#include "core/fabric.h"
#include "core/home_call.h"
#include "core/sbc.h"
#include "core/scsi_spec.h"
#include "core/ua.h"
#include "core/spc.h"
#include "core/spc_selftest.h"
#include "util/be.h"

/* SPC-5 §6.13: PAGE CONTROL field. */
enum mode_pc {
	PC_CURRENT = 0,
	PC_CHANGEABLE = 1,
	PC_DEFAULT = 2,
	PC_SAVED = 3,
};

/* Whole page lengths including the 2-byte page_0 header (PAGE LENGTH is this minus 2). */
#define MP_CACHING_LEN 20
#define MP_CONTROL_LEN 12
#define MP_IEC_LEN 12

/* Largest MODE SENSE (10) answer: 8-byte header, long block descriptor, every page. */
#define MODE_SENSE_MAX (8 + 16 + MP_CACHING_LEN + MP_CONTROL_LEN + MP_IEC_LEN)

struct mode_page {
	uint8_t code;
	uint8_t len;
	void (*build)(const struct scsitgt_lun *lun, enum mode_pc pc, uint8_t *p);
	/* Take the changeable bits of a validated page. */
	void (*apply)(struct scsitgt_lun *lun, const uint8_t *p);
};

static bool mode_wce_changeable(const struct scsitgt_lun *lun)
{
	return (lun->geo.flags & SCSITGT_GEOMETRY_WRITE_CACHE) != 0;
}

/* SBC-4 §6.5.5 caching mode page: byte 2 holds WCE (bit 2) and RCD (bit 0). */
static void mp_caching_build(const struct scsitgt_lun *lun, enum mode_pc pc, uint8_t *p)
{
	p[0] = MP_CACHING;
	p[1] = MP_CACHING_LEN - 2;
	switch (pc) {
	case PC_CURRENT:
		p[2] = (uint8_t)((lun->mode.wce ? 0x04 : 0) | (lun->mode.rcd ? 0x01 : 0));
		break;
	case PC_CHANGEABLE:
		p[2] = mode_wce_changeable(lun) ? 0x04 : 0;
		break;
	default:
		/* The default is what scsitgt_lun_create() chose (lun.c). */
		p[2] = ((lun->flags & SCSITGT_LUN_WRITE_CACHE) && mode_wce_changeable(lun)) ? 0x04 :
											      0;
		break;
	}
}

static void mp_caching_apply(struct scsitgt_lun *lun, const uint8_t *p)
{
	if (mode_wce_changeable(lun))
		lun->mode.wce = p[2] & 0x04;
}

/*
 * SPC-5 §7.5.10 control mode page. Byte 2: TST (7..5) 000b one task set, D_SENSE (2),
 * GLTSD (1) set: we keep no log parameters to save. Byte 3: QUEUE ALGORITHM MODIFIER 1h
 * (commands may be reordered) and QERR (2..1). Byte 4: SWP (3). Byte 5: TAS (6), §7.5.10 task
 * aborted status, default 1 as in LIO (reviewj J1). Bytes 10..11: EXTENDED
 * SELF-TEST COMPLETION TIME in seconds (advisory, spc_selftest.c), FFFFh beyond.
 */
static void mp_control_build(const struct scsitgt_lun *lun, enum mode_pc pc, uint8_t *p)
{
	p[0] = MP_CONTROL;
	p[1] = MP_CONTROL_LEN - 2;
	switch (pc) {
	case PC_CURRENT:
		p[2] = (uint8_t)((lun->mode.d_sense ? 0x04 : 0) | 0x02);
		p[3] = (uint8_t)(0x10 | (lun->mode.qerr & 0x03) << 1);
		p[4] = lun->mode.swp ? 0x08 : 0;
		p[5] = lun->mode.tas ? 0x40 : 0;
		break;
	case PC_CHANGEABLE:
		p[2] = 0x04;
		p[4] = 0x08;
		p[5] = 0x40;
		break;
	default:
		p[2] = 0x02;
		p[3] = 0x10;
		p[5] = 0x40;
		break;
	}
	if (pc != PC_CHANGEABLE) {
		uint32_t s = scsitgt__selftest_extended_seconds(lun);

		put_be16(&p[10], (uint16_t)(s > 0xffff ? 0xffff : s));
	}
}

static void mp_control_apply(struct scsitgt_lun *lun, const uint8_t *p)
{
	lun->mode.d_sense = p[2] & 0x04;
	lun->mode.swp = p[4] & 0x08;
	lun->mode.tas = p[5] & 0x40;
}

/* SPC-5 §7.5.14 informational exceptions control: byte 2 DEXCPT (3), byte 3 MRIE (3..0). */
static void mp_iec_build(const struct scsitgt_lun *lun, enum mode_pc pc, uint8_t *p)
{
	p[0] = MP_IEC;
	p[1] = MP_IEC_LEN - 2;
	if (pc == PC_CURRENT) {
		p[2] = lun->mode.dexcpt ? 0x08 : 0;
		p[3] = lun->mode.mrie & 0x0f;
	}
}

/* In ascending page code order, the order of a MODE SENSE for all pages. */
static const struct mode_page mode_pages[] = {
	{ MP_CACHING, MP_CACHING_LEN, mp_caching_build, mp_caching_apply },
	{ MP_CONTROL, MP_CONTROL_LEN, mp_control_build, mp_control_apply },
	{ MP_IEC, MP_IEC_LEN, mp_iec_build, NULL },
};

static const struct mode_page *mode_page_find(uint8_t code)
{
	for (size_t i = 0; i < sizeof(mode_pages) / sizeof(mode_pages[0]); i++)
		if (mode_pages[i].code == code)
			return &mode_pages[i];
	return NULL;
}

static bool mode_is6(const struct scsitgt__cmd *cmd)
{
	return cmd->cdb[0] == SPC_MODE_SENSE_6 || cmd->cdb[0] == SPC_MODE_SELECT_6;
}

enum scsitgt__sense_reason scsitgt__spc_parse_mode_sense(struct scsitgt__cmd *cmd)
{
	uint8_t pc = cmd->cdb[2] >> 6, page = cmd->cdb[2] & 0x3f, subpage = cmd->cdb[3];

	if (pc == PC_SAVED) {
		/* SPC-5 §6.13: saved values of a LUN that saves nothing. */
		scsitgt__cmd_bad_cdb_field(cmd, 2, 7);
		return SCSITGT__SR_SAVING_PARAMS_UNSUPPORTED;
	}
	if (page != MP_ALL && mode_page_find(page) == NULL)
		return scsitgt__cmd_bad_cdb_field(cmd, 2, 5);
	/* Our pages have no subpages: 00h is the page itself, FFh "and all its subpages". */
	if (subpage != 0x00 && subpage != 0xff)
		return scsitgt__cmd_bad_cdb_field(cmd, 3, 7);
	if (mode_is6(cmd)) {
		cmd->dir = SCSITGT__DIR_IN;
		cmd->xfer_len = cmd->cdb[4];
		return SCSITGT__SR_OK;
	}
	return scsitgt__parse_alloc16(cmd, 7);
}

/* SBC-4 §6.4.2: the mode parameter block descriptor, short (8) or long LBA (16) form. */
static size_t mode_block_descriptor(const struct scsitgt_lun *lun, enum mode_pc pc, bool longlba,
				    uint8_t *p)
{
	uint64_t nblocks = scsitgt__lun_blocks(lun);
	size_t len = longlba ? 16 : 8;

	memset(p, 0, len);
	if (pc == PC_CHANGEABLE)
		return len; /* neither capacity nor block length can be changed */
	if (longlba) {
		put_be64(&p[0], nblocks);
		put_be32(&p[12], lun->geo.block_size);
	} else {
		/* NUMBER OF LOGICAL BLOCKS FFFF_FFFFh when the capacity does not fit. */
		put_be32(&p[0], nblocks > 0xffffffffull ? 0xffffffffu : (uint32_t)nblocks);
		put_be24(&p[5], lun->geo.block_size);
	}
	return len;
}

void scsitgt__spc_mode_sense(struct scsitgt__cmd *cmd)
{
	const struct scsitgt_lun *lun = cmd->lun;
	bool is6 = mode_is6(cmd);
	bool dbd = cmd->cdb[1] & 0x08, llbaa = !is6 && (cmd->cdb[1] & 0x10);
	enum mode_pc pc = (enum mode_pc)(cmd->cdb[2] >> 6);
	uint8_t page = cmd->cdb[2] & 0x3f;
	uint8_t d[MODE_SENSE_MAX];
	size_t hdr = is6 ? 4 : 8, n = hdr, bdlen = 0;
	uint8_t dsp;

	memset(d, 0, sizeof(d));
	/* SBC-4 §6.4.1 DEVICE-SPECIFIC PARAMETER: WP (7) and DPOFUA (4). */
	dsp = 0x10;
	if (scsitgt__lun_write_protected(lun, cmd->sess))
		dsp |= 0x80;
	if (!dbd) {
		bdlen = mode_block_descriptor(lun, pc, llbaa, &d[n]);
		n += bdlen;
	}
	for (size_t i = 0; i < sizeof(mode_pages) / sizeof(mode_pages[0]); i++) {
		if (page != MP_ALL && page != mode_pages[i].code)
			continue;
		mode_pages[i].build(lun, pc, &d[n]);
		n += mode_pages[i].len;
	}
	/* SPC-5 §7.5.5/§7.5.6 mode parameter headers; MEDIUM TYPE is 00h for SBC. */
	if (is6) {
		d[0] = (uint8_t)(n - 1);
		d[2] = dsp;
		d[3] = (uint8_t)bdlen;
	} else {
		put_be16(&d[0], (uint16_t)(n - 2));
		d[3] = dsp;
		d[4] = llbaa && bdlen ? 0x01 : 0x00; /* LONGLBA */
		put_be16(&d[6], (uint16_t)bdlen);
	}
	scsitgt__cmd_respond(cmd, d, n);
	scsitgt__cmd_complete(cmd, SCSITGT__SR_OK);
}

enum scsitgt__sense_reason scsitgt__spc_parse_mode_select(struct scsitgt__cmd *cmd)
{
	uint32_t len = mode_is6(cmd) ? cmd->cdb[4] : get_be16(&cmd->cdb[7]);

	/* PF is accepted either way: our pages are the standard ones. */
	cmd->dir = len ? SCSITGT__DIR_OUT : SCSITGT__DIR_NONE;
	cmd->xfer_len = len;
	return SCSITGT__SR_OK;
}

static int mode_leftmost_bit(uint8_t v)
{
	int bit = 7;

	while (bit > 0 && !(v & (1u << bit)))
		bit--;
	return bit;
}

/* SBC-4 §6.4.2: a block descriptor may repeat the current values but change nothing. */
static enum scsitgt__sense_reason mode_check_descriptor(struct scsitgt__cmd *cmd, size_t off,
							bool longlba)
{
	const struct scsitgt_lun *lun = cmd->lun;
	const uint8_t *p = &cmd->buf[off];
	uint64_t nblocks, cap = scsitgt__lun_blocks(lun);
	uint32_t bsize;

	if (longlba) {
		nblocks = get_be64(&p[0]);
		bsize = get_be32(&p[12]);
	} else {
		nblocks = get_be32(&p[0]);
		bsize = get_be24(&p[5]);
		if (cap > 0xffffffffull && nblocks == 0xffffffffull)
			nblocks = cap;
	}
	/* NUMBER OF LOGICAL BLOCKS zero means "no change". */
	if (nblocks != 0 && nblocks != cap)
		return scsitgt__cmd_bad_param_field(cmd, (uint16_t)off, 7);
	if (bsize != lun->geo.block_size)
		return scsitgt__cmd_bad_param_field(cmd, (uint16_t)(off + (longlba ? 12 : 5)), 7);
	return SCSITGT__SR_OK;
}

/*
 * Walk the pages of a parameter list. With @apply false, check each against the current and
 * changeable values (SPC-5 §6.11: a non-changeable field set to another value than its
 * current one is an invalid field); with @apply true, take the changeable bits.
 */
static enum scsitgt__sense_reason mode_walk_pages(struct scsitgt__cmd *cmd, size_t off, bool apply)
{
	struct scsitgt_lun *lun = cmd->lun;
	const uint8_t *p = cmd->buf;
	size_t len = cmd->xfer_len;

	while (off < len) {
		uint8_t cur[MP_CACHING_LEN], chg[MP_CACHING_LEN];
		const struct mode_page *mp;
		size_t plen;

		if (len - off < 2)
			return SCSITGT__SR_PARAM_LIST_LENGTH_ERROR;
		/* SPF (bit 6): the sub_page format; none of our pages has subpages. */
		if (p[off] & 0x40)
			return scsitgt__cmd_bad_param_field(cmd, (uint16_t)off, 6);
		mp = mode_page_find(p[off] & 0x3f);
		if (mp == NULL)
			return scsitgt__cmd_bad_param_field(cmd, (uint16_t)off, 5);
		plen = (size_t)p[off + 1] + 2;
		if (plen != mp->len)
			return scsitgt__cmd_bad_param_field(cmd, (uint16_t)(off + 1), 7);
		if (len - off < plen)
			return SCSITGT__SR_PARAM_LIST_LENGTH_ERROR;
		if (apply) {
			if (mp->apply)
				mp->apply(lun, &p[off]);
		} else {
			memset(cur, 0, sizeof(cur));
			memset(chg, 0, sizeof(chg));
			mp->build(lun, PC_CURRENT, cur);
			mp->build(lun, PC_CHANGEABLE, chg);
			/* Byte 0 bit 7 (PS) is reserved in MODE SELECT and ignored. */
			for (size_t i = 2; i < plen; i++) {
				uint8_t bad = (uint8_t)((p[off + i] ^ cur[i]) & ~chg[i]);

				/* advisory, and it follows the capacity: an older copy of the
				 * page sent back is not an error */
				if (mp->code == MP_CONTROL && (i == 10 || i == 11))
					continue;
				if (bad)
					return scsitgt__cmd_bad_param_field(
						cmd, (uint16_t)(off + i), mode_leftmost_bit(bad));
			}
		}
		off += plen;
	}
	return SCSITGT__SR_OK;
}

/* MODE SELECT's record: what it changed, until its status (the other nexuses are told of a
 * change on home, core/home_call.h). */
struct scsitgt__mode_select_op {
	struct scsitgt__home_call hc; /* first */
	enum scsitgt__sense_reason r;
	/* the LUN's parameters before and after this command applied its pages */
	struct scsitgt__mode_state before, after;
	/* this command's number in lun->mode_seq, when it changed anything */
	uint32_t seq;
};

/* The parameters of struct scsitgt__mode_state, in the order of lun->mode_by (core.h). */
#define MODE_FIELDS(X) X(wce) X(rcd) X(d_sense) X(swp) X(qerr) X(mrie) X(dexcpt)
#define MODE_ONE(f) +1
_Static_assert(0 MODE_FIELDS(MODE_ONE) ==
		       sizeof(((struct scsitgt_lun *)0)->mode_by) / sizeof(uint32_t),
	       "one owner per mode parameter");
#undef MODE_ONE

/* Number this command's changes (under xlock): each parameter it changed is its own until a
 * later MODE SELECT changes it, whatever the value (a value compare could not tell a later
 * command's change back to our value from ours: review30b F6). */
static void mode_select_number(struct scsitgt_lun *lun, struct scsitgt__mode_select_op *op)
{
	unsigned int i = 0;

	op->seq = ++lun->mode_seq;
#define MODE_OWN(f)                        \
	if (op->before.f != op->after.f)   \
		lun->mode_by[i] = op->seq; \
	i++;
	MODE_FIELDS(MODE_OWN)
#undef MODE_OWN
}

static enum scsitgt__sense_reason mode_select(struct scsitgt__cmd *cmd,
					      struct scsitgt__mode_select_op *op)
{
	const uint8_t *p = cmd->buf;
	size_t len = cmd->xfer_len, hdr, bdlen;
	bool is6 = mode_is6(cmd), longlba = false;
	enum scsitgt__sense_reason r;

	if (len == 0)
		return SCSITGT__SR_OK; /* SPC-5 §6.11: nothing to change is not an error */
	hdr = is6 ? 4 : 8;
	if (len < hdr)
		return SCSITGT__SR_PARAM_LIST_LENGTH_ERROR;
	/* The MODE DATA LENGTH field is reserved in MODE SELECT; it is ignored. MEDIUM TYPE
	 * must be 00h (SBC-4 §6.4.1); DEVICE-SPECIFIC PARAMETER bits are reserved here. */
	if (p[is6 ? 1 : 2] != 0)
		return scsitgt__cmd_bad_param_field(cmd, is6 ? 1 : 2, 7);
	if (is6) {
		bdlen = p[3];
	} else {
		longlba = p[4] & 0x01;
		bdlen = get_be16(&p[6]);
	}
	if (bdlen != 0 && bdlen != (longlba ? 16u : 8u))
		return scsitgt__cmd_bad_param_field(cmd, is6 ? 3 : 6, 7);
	if (len < hdr + bdlen)
		return SCSITGT__SR_PARAM_LIST_LENGTH_ERROR;
	if (bdlen) {
		r = mode_check_descriptor(cmd, hdr, longlba);
		if (r != SCSITGT__SR_OK)
			return r;
	}
	/* Validate every page before changing any, so a refused list changes nothing. */
	r = mode_walk_pages(cmd, hdr + bdlen, false);
	if (r != SCSITGT__SR_OK)
		return r;
	/* One MODE SELECT at a time: other loops may run theirs (issue 18). */
	uv_mutex_lock(&cmd->lun->xlock);
	op->before = cmd->lun->mode;
	r = mode_walk_pages(cmd, hdr + bdlen, true);
	op->after = cmd->lun->mode;
	if (memcmp(&op->before, &op->after, sizeof(op->before)) != 0)
		mode_select_number(cmd->lun, op);
	uv_mutex_unlock(&cmd->lun->xlock);
	return r;
}

static bool mode_select_changed(const struct scsitgt__mode_select_op *op)
{
	return memcmp(&op->before, &op->after, sizeof(op->before)) != 0;
}

/*
 * The write-back of a WCE turned off failed: this command's changes are undone, those a later
 * MODE SELECT made since are kept. SPC-5 §6.13 ends a refused MODE SELECT without changing a
 * parameter, and a CHECK CONDITION says the same here; it also keeps the data safe: with WCE
 * 1 again the initiators go on sending SYNCHRONIZE CACHE, whose FLUSH reports the blocks the
 * cache could not write, where WCE 0 would have told them nothing is left to flush.
 */
static void mode_select_undo(struct scsitgt_lun *lun, const struct scsitgt__mode_select_op *op)
{
	unsigned int i = 0;
	uint32_t seq;

	uv_mutex_lock(&lun->xlock);
	/* the undo is a change of its own: a still older command's failure leaves it alone */
	seq = ++lun->mode_seq;
#define MODE_UNDO(f)                                                     \
	if (op->before.f != op->after.f && lun->mode_by[i] == op->seq) { \
		lun->mode.f = op->before.f;                              \
		lun->mode_by[i] = seq;                                   \
	}                                                                \
	i++;
	MODE_FIELDS(MODE_UNDO)
#undef MODE_UNDO
	uv_mutex_unlock(&lun->xlock);
}

/* SPC-5 §7.5.1: the parameters are the LUN's, shared by every I_T nexus; the others learn of
 * a change by MODE PARAMETERS CHANGED, before this command's status. Loop: home (the walk of
 * the target's nexuses, core/home_call.h). */
static void mode_select_announce(struct scsitgt__home_call *hc)
{
	struct scsitgt__cmd *cmd = hc->cmd;

	/* The nexus as its shard saw it (core/home_call.h), not cmd->sess; NULL once it is gone
	 * during the write-back: every nexus is told then. */
	if (hc->sess)
		scsitgt__ua_mode_params_changed(hc->sess, cmd->lun_id);
	else
		scsitgt__ua_establish_all(cmd->lun->tgt, cmd->lun_id, NULL,
					  SCSITGT__SR_UA_MODE_PARAMS_CHANGED);
}

static void mode_select_done(struct scsitgt__home_call *hc)
{
	struct scsitgt__mode_select_op *op =
		scsitgt__container_of(hc, struct scsitgt__mode_select_op, hc);
	struct scsitgt__cmd *cmd = hc->cmd;
	enum scsitgt__sense_reason r = op->r;

	scsitgt__home_call_free(hc);
	/* a failed FLUSH's reason, raw sense included (cmd->io_raw) */
	scsitgt__io_done_complete_cmd(cmd, NULL, r);
}

static void mode_select_tell(struct scsitgt__mode_select_op *op)
{
	/* taken again on the command's shard: the nexus may have gone during the write-back */
	op->hc.sess = op->hc.cmd->sess;
	scsitgt__home_call(&op->hc, mode_select_announce, mode_select_done);
}

/*
 * SBC-4 §6.5.5: with WCE 0 a write is on the medium before its GOOD, and an initiator sends no
 * SYNCHRONIZE CACHE to a write-through disk (Linux drops its flushes): what was cached while
 * WCE was 1 is written back before the other nexuses are told and this GOOD. The writes still
 * in the backend now flush on their own completion (sbc.h).
 */
static void mode_select_flushed(struct scsitgt__cmd *cmd, struct scsitgt_io *io,
				enum scsitgt__sense_reason reason)
{
	struct scsitgt__mode_select_op *op = cmd->ctx.mode_select;

	(void)io;
	/* the record is this call's again (mode_select_done frees it) */
	scsitgt__cmd_ctx_own(cmd, NULL);
	if (reason != SCSITGT__SR_OK) {
		mode_select_undo(cmd->lun, op);
		op->r = reason;
	}
	/* told even when undone: a nexus may have read the parameters in between */
	mode_select_tell(op);
}

/* A MODE SELECT given up with its write-back in the backend (an engine shutdown, core/drain.c)
 * is never told: its record goes with the command. No unit attention then: the LUN is leaving
 * with the engine, and this end runs on any thread, where no nexus may be touched. */
static void mode_select_record_free(struct scsitgt__cmd *cmd)
{
	scsitgt__home_call_free(&cmd->ctx.mode_select->hc);
}

static const struct scsitgt__cmd_ctx_ops mode_select_ctx_ops = {
	.free = mode_select_record_free,
};

void scsitgt__spc_mode_select(struct scsitgt__cmd *cmd)
{
	/* Taken before anything changes (BUSY without memory); allocated, for the write-back
	 * may outlive this call. */
	struct scsitgt__home_call *hc =
		scsitgt__home_call_new(cmd, NULL, sizeof(struct scsitgt__mode_select_op));
	struct scsitgt__mode_select_op *op;

	if (hc == NULL) {
		scsitgt__cmd_complete(cmd, SCSITGT__SR_BUSY);
		return;
	}
	op = scsitgt__container_of(hc, struct scsitgt__mode_select_op, hc);
	op->r = mode_select(cmd, op);
	if (op->r != SCSITGT__SR_OK || !mode_select_changed(op)) {
		mode_select_done(hc);
		return;
	}
	if (op->before.wce && !op->after.wce && scsitgt__sbc_volatile_cache(cmd->lun)) {
		cmd->ctx.mode_select = op;
		scsitgt__cmd_ctx_own(cmd, &mode_select_ctx_ops);
		if (scsitgt__io_submit(cmd, SCSITGT_IO_FLUSH, 0, 0, NULL, 0, 0,
				       mode_select_flushed) < 0)
			mode_select_flushed(cmd, NULL, SCSITGT__SR_BUSY);
		return;
	}
	mode_select_tell(op);
}
