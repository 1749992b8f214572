/* SPDX-License-Identifier: MIT */
/*
 * Self-tests of SEND DIAGNOSTIC (SPC-5 §6.42 and the self-test operations it refers to) and
 * SPC-5's Self-Test Results log page (10h).
 *
 * A self-test reads the medium through the backend, one bounded io at a time, on a command of
 * the LUN's own (bg_walk.h, as SANITIZE does), and yields to the loop between pieces:
 *   segment 1  the first and the last logical block;
 *   segment 2  short: 16 samples of up to 64 KiB spread evenly over the medium;
 *              extended: the whole medium in 1 MiB pieces.
 * A piece that fails ends the test: its result says which segment, the entry keeps the first
 * failing LBA (the backend's, scsitgt_io_complete_at(), else the piece's first) and the sense
 * key and additional sense code of the failure.
 *
 * Background mode (SELF-TEST CODE 001b, 010b): SEND DIAGNOSTIC returns GOOD once the CDB is
 * checked; the LUN serves every other command meanwhile, except a SEND DIAGNOSTIC asking for
 * another test (NOT READY, LOGICAL UNIT NOT READY, SELF-TEST IN PROGRESS); 100b aborts the
 * test (result 1h); a LUN reset, a target reset, START STOP UNIT and FORMAT UNIT abort it
 * (result 2h). Foreground mode (101b, 110b): the command waits for the end and fails with
 * HARDWARE ERROR, LOGICAL UNIT FAILED SELF-TEST when the test does; meanwhile every command
 * but INQUIRY, REPORT LUNS and REQUEST SENSE gets NOT READY, SELF-TEST IN PROGRESS, and an
 * abort of the SEND DIAGNOSTIC command (ABORT TASK, ABORT TASK SET, CLEAR TASK SET, resets)
 * aborts the test (result 2h). In either mode REQUEST SENSE reports NOT READY, SELF-TEST IN
 * PROGRESS with the progress indication.
 *
 * The log keeps the 20 most recent tests, newest first (parameter 0001h), and is not reset by
 * LOG SELECT (its parameters are not counters).
 *
 * Across shards (issue 18): the walk runs on the loop of the SEND DIAGNOSTIC command that
 * started it (bg_walk.h), where a foreground command waits; commands of every loop meet the
 * test, and a reset or another SEND DIAGNOSTIC may stop it from any loop. So the log, the
 * test running and what others read of it (its progress, why it was stopped) are under
 * lun->xlock, and SCSITGT__LUN_XF_SELFTEST, set while a test runs, spares every other command
 * the lock.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/bg_walk.h"
#include "core/cdb.h"
#include "core/fabric.h"
#include "core/sbc_sanitize.h"
#include "core/scsi_spec.h"
#include "core/spc_selftest.h"
#include "util/be.h"

/* SPC-5 Self-Test Results log page: twenty parameters of 10h bytes each. */
#define ST_LOG_ENTRIES 20u
#define ST_PARAM_LEN 0x10u
#define ST_PIECE_BYTES (1u << 20)
#define ST_SAMPLES 16u
#define ST_SAMPLE_BYTES (64u * 1024u)

struct st_entry {
	uint64_t seq; /* which test wrote it (0: unused) */
	uint8_t code;
	uint8_t result;
	uint8_t segment;
	uint16_t hours;
	uint64_t fail_lba;
	uint8_t key, asc, ascq;
};

struct st_walk;

struct scsitgt__selftest {
	struct st_entry log[ST_LOG_ENTRIES]; /* newest first */
	uint64_t next_seq;
	struct st_walk *running; /* the test in progress, NULL when none */
};

struct st_walk {
	struct scsitgt__bg_walk bg; /* on the LUN's own command (bg_walk.h) */
	uint64_t seq;
	uint8_t code;
	bool foreground;
	uint8_t stop_result;  /* ST_RES_OK while going on, else why it was stopped (xlock) */
	unsigned int segment; /* 1 or 2 */
	unsigned int step;    /* piece within the segment */
	uint64_t done_blocks, plan_blocks; /* done_blocks under xlock */
	uint8_t *buf;
	enum scsitgt__sense_reason reason;
};

static struct scsitgt__selftest *st_state(struct scsitgt_lun *lun)
{
	if (lun->selftest == NULL)
		lun->selftest = calloc(1, sizeof(*lun->selftest));
	return lun->selftest;
}

void scsitgt__selftest_free(struct scsitgt_lun *lun)
{
	free(lun->selftest);
	lun->selftest = NULL;
}

static struct st_entry *st_find(struct scsitgt__selftest *st, uint64_t seq)
{
	for (unsigned int i = 0; i < ST_LOG_ENTRIES; i++)
		if (st->log[i].seq == seq)
			return &st->log[i];
	return NULL;
}

/* ACCUMULATED POWER ON HOURS: hours since the LUN was created, saturated. */
static uint16_t st_hours(const struct scsitgt_lun *lun)
{
	uint64_t h = (uv_hrtime() - lun->created_ns) / (3600ull * 1000000000ull);

	return h > 0xffff ? 0xffff : (uint16_t)h;
}

/* Blocks the test reads in all, for the progress indication. */
static uint64_t st_plan(const struct scsitgt_lun *lun, uint8_t code)
{
	uint64_t n = scsitgt__lun_blocks(lun);
	uint64_t seg1 = n > 1 ? 2 : 1;
	uint64_t sample = ST_SAMPLE_BYTES / lun->geo.block_size;

	if (code == SCSITGT__SELFTEST_BG_EXTENDED || code == SCSITGT__SELFTEST_FG_EXTENDED)
		return seg1 + n;
	return seg1 + ST_SAMPLES * (sample < n ? sample : n);
}

/* lun->xlock of a LUN the caller sees as const (the lock is not part of its value). */
static uv_mutex_t *st_lock(const struct scsitgt_lun *lun)
{
	return (uv_mutex_t *)&lun->xlock;
}

/* Under xlock. */
static bool st_progress_locked(const struct scsitgt_lun *lun, uint16_t *progress)
{
	const struct st_walk *w = lun->selftest ? lun->selftest->running : NULL;

	if (w == NULL)
		return false;
	/* a fraction of 65536 (SPC-5 §4.4.2.4.2) */
	*progress = (uint16_t)(w->plan_blocks ? (w->done_blocks * 65535) / w->plan_blocks : 0);
	return true;
}

bool scsitgt__selftest_progress(const struct scsitgt_lun *lun, uint16_t *progress)
{
	bool running;

	if (!(scsitgt__lun_xflags(lun) & SCSITGT__LUN_XF_SELFTEST))
		return false;
	uv_mutex_lock(st_lock(lun));
	running = st_progress_locked(lun, progress);
	uv_mutex_unlock(st_lock(lun));
	return running;
}

/* No test runs any more (under xlock). */
static void st_not_running(struct scsitgt_lun *lun)
{
	lun->selftest->running = NULL;
	scsitgt__lun_xflags_set(lun, SCSITGT__LUN_XF_SELFTEST, false);
}

/* foreground: complete the waiting SEND DIAGNOSTIC command (RAW: the test failed) */
static void st_release_waiter(struct st_walk *w, enum scsitgt__sense_reason r)
{
	struct scsitgt__cmd *fg = scsitgt__bg_walk_take_waiter(&w->bg);

	if (fg == NULL)
		return;
	if (r == SCSITGT__SR_RAW) {
		/* a failed foreground self-test: HARDWARE ERROR, LOGICAL UNIT FAILED SELF-TEST */
		scsitgt__cmd_complete_raw(fg, SENSE_HARDWARE_ERROR, 0x3e, 0x03);
		return;
	}
	scsitgt__cmd_complete(fg, r);
}

/* Write the final result into the test's log entry (kept if it was already final). Under
 * xlock. */
static void st_record(struct scsitgt_lun *lun, uint64_t seq, uint8_t result, uint8_t segment,
		      uint64_t fail_lba, const struct scsitgt__sense_info *si)
{
	struct st_entry *e = lun->selftest ? st_find(lun->selftest, seq) : NULL;

	if (e == NULL || e->result != ST_RES_IN_PROGRESS)
		return;
	e->result = result;
	e->segment = segment;
	e->fail_lba = fail_lba;
	if (si) {
		e->key = si->key;
		e->asc = si->asc;
		e->ascq = si->ascq;
	}
}

static void st_finish(struct scsitgt__bg_walk *bg)
{
	struct st_walk *w = scsitgt__container_of(bg, struct st_walk, bg);
	struct scsitgt__cmd *cmd = bg->cmd;
	struct scsitgt_lun *lun = cmd->lun;
	enum scsitgt__sense_reason fg_reason = SCSITGT__SR_OK;

	uv_mutex_lock(&lun->xlock);
	if (w->stop_result != ST_RES_OK) {
		st_record(lun, w->seq, w->stop_result, 0, UINT64_MAX, NULL);
		fg_reason = SCSITGT__SR_ABORTED;
	} else if (w->reason != SCSITGT__SR_OK) {
		struct scsitgt__sense_info si;
		uint64_t lba = cmd->detail.info_valid ? cmd->detail.info : bg->lba;

		if (w->reason == SCSITGT__SR_RAW)
			si = cmd->io_raw;
		else
			si = *scsitgt__sense_lookup(w->reason);
		st_record(lun, w->seq, w->segment == 1 ? ST_RES_FAILED_SEG1 : ST_RES_FAILED_SEG2,
			  (uint8_t)w->segment, lba, &si);
		fg_reason = SCSITGT__SR_RAW;
	} else {
		st_record(lun, w->seq, ST_RES_OK, 0, UINT64_MAX, NULL);
	}
	if (lun->selftest && lun->selftest->running == w)
		st_not_running(lun);
	uv_mutex_unlock(&lun->xlock);
	st_release_waiter(w, fg_reason);
	free(w->buf);
	free(w);
}

/* The next piece of the plan: false when the test is complete. */
static bool st_next(struct scsitgt__bg_walk *bg)
{
	struct st_walk *w = scsitgt__container_of(bg, struct st_walk, bg);
	const struct scsitgt_lun *lun = bg->cmd->lun;
	uint64_t n = scsitgt__lun_blocks(lun);
	uint32_t bs = lun->geo.block_size;
	bool extended = w->code == SCSITGT__SELFTEST_BG_EXTENDED ||
			w->code == SCSITGT__SELFTEST_FG_EXTENDED;

	if (w->segment == 1) {
		if (w->step < (n > 1 ? 2u : 1u)) {
			bg->lba = w->step == 0 ? 0 : n - 1;
			bg->blocks = 1;
			w->step++;
			goto piece;
		}
		w->segment = 2;
		w->step = 0;
	}
	if (extended) {
		uint64_t next = (uint64_t)w->step * (ST_PIECE_BYTES / bs);
		uint64_t left;

		if (next >= n)
			return false;
		left = n - next;
		bg->lba = next;
		bg->blocks = left < ST_PIECE_BYTES / bs ? (uint32_t)left : ST_PIECE_BYTES / bs;
	} else {
		uint32_t len = ST_SAMPLE_BYTES / bs < n ? ST_SAMPLE_BYTES / bs : (uint32_t)n;

		if (w->step >= ST_SAMPLES)
			return false;
		bg->lba = (uint64_t)w->step * (n - len) / (ST_SAMPLES - 1);
		bg->blocks = len;
	}
	w->step++;
piece:
	bg->type = SCSITGT_IO_READ;
	bg->data = true;
	bg->iov.iov_base = w->buf;
	bg->iov.iov_len = (size_t)bg->blocks * bs;
	return true;
}

static void st_done(struct scsitgt__bg_walk *bg, enum scsitgt__sense_reason reason)
{
	struct st_walk *w = scsitgt__container_of(bg, struct st_walk, bg);

	if (reason != SCSITGT__SR_OK && w->reason == SCSITGT__SR_OK)
		w->reason = reason;
	uv_mutex_lock(&bg->cmd->lun->xlock);
	w->done_blocks += bg->blocks;
	uv_mutex_unlock(&bg->cmd->lun->xlock);
}

static bool st_stop_now(struct scsitgt__bg_walk *bg)
{
	struct st_walk *w = scsitgt__container_of(bg, struct st_walk, bg);
	struct scsitgt_lun *lun = bg->cmd->lun;
	bool stop;

	/* an aborted foreground command aborts its test (the waiter is on this loop); so does
	 * the LUN's removal */
	uv_mutex_lock(&lun->xlock);
	if (w->stop_result == ST_RES_OK &&
	    ((bg->waiter && scsitgt__cmd_aborted(bg->waiter)) ||
	     atomic_load_explicit(&lun->drain.destroying, memory_order_relaxed)))
		w->stop_result = ST_RES_ABORTED_OTHER;
	stop = w->stop_result != ST_RES_OK || w->reason != SCSITGT__SR_OK;
	uv_mutex_unlock(&lun->xlock);
	return stop;
}

static const struct scsitgt__bg_ops st_ops = {
	.stop = st_stop_now,
	.next = st_next,
	.done = st_done,
	.finish = st_finish,
};

/* Stop the running test at its next piece, recording @result now (SPC-5 asks for the log to be
 * updated as the test is aborted). Under xlock. */
static void st_stop(struct scsitgt_lun *lun, uint8_t result)
{
	struct st_walk *w = lun->selftest ? lun->selftest->running : NULL;

	if (w == NULL)
		return;
	w->stop_result = result;
	st_record(lun, w->seq, result, 0, UINT64_MAX, NULL);
	st_not_running(lun);
}

void scsitgt__selftest_reset(struct scsitgt_lun *lun)
{
	if (!(scsitgt__lun_xflags(lun) & SCSITGT__LUN_XF_SELFTEST))
		return;
	uv_mutex_lock(&lun->xlock);
	st_stop(lun, ST_RES_ABORTED_OTHER);
	uv_mutex_unlock(&lun->xlock);
}

void scsitgt__selftest_start(struct scsitgt__cmd *cmd, uint8_t code)
{
	struct scsitgt_lun *lun = cmd->lun;
	struct scsitgt__selftest *st;
	enum scsitgt__sense_reason r;
	struct st_walk *w;
	size_t buf_len;

	if (code == SCSITGT__SELFTEST_ABORT) {
		bool ok;

		/* SPC-5 §6.42: valid only while a background test runs. */
		uv_mutex_lock(&lun->xlock);
		st = lun->selftest;
		ok = st && st->running && !st->running->foreground;
		if (ok)
			st_stop(lun, ST_RES_ABORTED_SEND_DIAG);
		uv_mutex_unlock(&lun->xlock);
		if (!ok) {
			scsitgt__cmd_bad_cdb_field(cmd, 1, 7);
			scsitgt__cmd_complete(cmd, SCSITGT__SR_INVALID_FIELD_IN_CDB);
			return;
		}
		scsitgt__cmd_complete(cmd, SCSITGT__SR_OK);
		return;
	}
	buf_len = code == SCSITGT__SELFTEST_BG_EXTENDED || code == SCSITGT__SELFTEST_FG_EXTENDED ?
			  ST_PIECE_BYTES :
			  ST_SAMPLE_BYTES;
	if (buf_len < lun->geo.block_size)
		buf_len = lun->geo.block_size;
	w = calloc(1, sizeof(*w));
	if (w)
		w->buf = malloc(buf_len);
	uv_mutex_lock(&lun->xlock);
	st = st_state(lun);
	/* Another loop's SEND DIAGNOSTIC may have started one since this command was parsed.
	 * The walk's first piece runs from a later iteration of this loop. */
	r = SCSITGT__SR_OK;
	if (st && st->running)
		r = SCSITGT__SR_NOT_READY_SELF_TEST;
	else if (lun->sanitize.state == SCSITGT__SANITIZE_RUNNING)
		/* SBC-4 §4.33: a SANITIZE another loop started since the parse (its start checks
		 * for a test under this lock too, sbc_sanitize.c). */
		r = scsitgt__sanitize_check(cmd, cmd->def);
	/* Only a command nothing refused starts the walk: st, w and its buffer are needed. */
	if (r == SCSITGT__SR_OK && (st == NULL || w == NULL || w->buf == NULL ||
				    scsitgt__bg_walk_start(&w->bg, &st_ops, cmd) < 0))
		r = SCSITGT__SR_BUSY;
	if (r != SCSITGT__SR_OK) {
		uv_mutex_unlock(&lun->xlock);
		if (w)
			free(w->buf);
		free(w);
		scsitgt__cmd_complete(cmd, r);
		return;
	}
	/* the newest entry first; the oldest of twenty falls off */
	memmove(&st->log[1], &st->log[0], (ST_LOG_ENTRIES - 1) * sizeof(st->log[0]));
	memset(&st->log[0], 0, sizeof(st->log[0]));
	st->log[0].seq = ++st->next_seq;
	st->log[0].code = code;
	st->log[0].result = ST_RES_IN_PROGRESS;
	st->log[0].hours = st_hours(lun);
	st->log[0].fail_lba = UINT64_MAX;
	w->seq = st->log[0].seq;
	w->code = code;
	w->foreground = code == SCSITGT__SELFTEST_FG_SHORT || code == SCSITGT__SELFTEST_FG_EXTENDED;
	w->segment = 1;
	w->plan_blocks = st_plan(lun, code);
	st->running = w;
	scsitgt__lun_xflags_set(lun, SCSITGT__LUN_XF_SELFTEST, true);
	uv_mutex_unlock(&lun->xlock);
	if (!w->foreground) {
		scsitgt__cmd_complete(cmd, SCSITGT__SR_OK);
		return;
	}
	scsitgt__bg_walk_wait(&w->bg, cmd);
}

enum scsitgt__sense_reason scsitgt__selftest_check_locked(struct scsitgt__cmd *cmd,
							  const struct scsitgt__cdb_def *row)
{
	const struct st_walk *w = cmd->lun->selftest ? cmd->lun->selftest->running : NULL;
	uint16_t progress = 0;

	if (w == NULL)
		return SCSITGT__SR_OK;
	if (!w->foreground) {
		/* START STOP UNIT and FORMAT UNIT end a background test, then run. */
		if (cmd->cdb[0] == SBC_START_STOP_UNIT || cmd->cdb[0] == SBC_FORMAT_UNIT) {
			st_stop(cmd->lun, ST_RES_ABORTED_OTHER);
			return SCSITGT__SR_OK;
		}
		/* another test while one runs in the background (SELFTEST, or a code other
		 * than 000b and 100b) */
		if (cmd->cdb[0] != SPC_SEND_DIAGNOSTIC ||
		    (!(cmd->cdb[1] & 0x04) &&
		     ((cmd->cdb[1] >> 5) == 0 || (cmd->cdb[1] >> 5) == SCSITGT__SELFTEST_ABORT)))
			return SCSITGT__SR_OK;
	} else if (row->flags & SCSITGT__CDB_F_NO_LUN) {
		/* INQUIRY, REPORT LUNS and REQUEST SENSE go on during a foreground test */
		return SCSITGT__SR_OK;
	}
	st_progress_locked(cmd->lun, &progress);
	cmd->detail.sks_valid = true;
	cmd->detail.sks_cdb = false;
	cmd->detail.sks_bpv = false;
	cmd->detail.sks_field = progress;
	return SCSITGT__SR_NOT_READY_SELF_TEST;
}

enum scsitgt__sense_reason scsitgt__selftest_check(struct scsitgt__cmd *cmd,
						   const struct scsitgt__cdb_def *row)
{
	enum scsitgt__sense_reason r;

	uv_mutex_lock(&cmd->lun->xlock);
	r = scsitgt__selftest_check_locked(cmd, row);
	uv_mutex_unlock(&cmd->lun->xlock);
	return r;
}

/* One Self-Test Results parameter (log page 10h). */
static void st_param(uint8_t *p, uint16_t code, const struct st_entry *e)
{
	put_be16(&p[0], code);
	p[2] = 0x03; /* FORMAT AND LINKING 11b: binary list */
	p[3] = ST_PARAM_LEN;
	if (e->seq == 0)
		return; /* unused: zeros */
	p[4] = (uint8_t)(e->code << 5 | e->result);
	p[5] = e->segment;
	put_be16(&p[6], e->hours);
	put_be64(&p[8], e->fail_lba);
	p[16] = e->key & 0x0f;
	p[17] = e->asc;
	p[18] = e->ascq;
}

size_t scsitgt__selftest_log_page(const struct scsitgt_lun *lun, uint8_t *buf, size_t cap,
				  uint16_t first)
{
	static const struct st_entry none;
	size_t n = 4;

	uv_mutex_lock(st_lock(lun));
	for (uint16_t code = first ? first : 1; code <= ST_LOG_ENTRIES; code++) {
		if (n + 4 + ST_PARAM_LEN > cap)
			break;
		memset(&buf[n], 0, 4 + ST_PARAM_LEN);
		st_param(&buf[n], code, lun->selftest ? &lun->selftest->log[code - 1] : &none);
		n += 4 + ST_PARAM_LEN;
	}
	uv_mutex_unlock(st_lock(lun));
	return n;
}

uint32_t scsitgt__selftest_extended_seconds(const struct scsitgt_lun *lun)
{
	/* advisory (SPC-5 §7.5.10): the extended test reads the whole medium; assume 512 MiB/s */
	uint64_t s = ((scsitgt__lun_blocks(lun) * lun->geo.block_size) >> 29) + 1;

	return s > UINT32_MAX ? UINT32_MAX : (uint32_t)s;
}
