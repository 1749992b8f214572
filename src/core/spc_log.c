/* SPDX-License-Identifier: MIT */
/*
 * SPC-5 §6.8 LOG SENSE and §6.7 LOG SELECT, and the log pages of a direct access LUN:
 *   00h/00h  Supported Log Pages (SPC-5 §7.3.18)
 *   00h/FFh  Supported Log Pages and Subpages (§7.3.19), and xxh/FFh the subpages of page xxh
 *   0Dh/00h  Temperature (§7.3.21): there is no sensor behind an emulated unit, so both the
 *            TEMPERATURE and the REFERENCE TEMPERATURE read FFh, "not available"
 *   10h/00h  Self-Test Results: the 20 most recent self-tests of SEND DIAGNOSTIC
 *            (spc_selftest.c), newest first, parameters 0001h..0014h; not reset by PCR
 *   0Fh/00h  Application Client (§7.3.3): 64 general usage parameters (0000h..003Fh, the
 *            minimum SPC-5 asks of a device that has any), written by LOG SELECT, kept in
 *            memory (16 KiB per LUN, allocated on the first write)
 *   19h/00h  General Statistics and Performance (§7.3.9): the general access parameter
 *            (0001h) from the LUN's command counters (core/stats.c), since the last reset
 *   2Fh/00h  Informational Exceptions (§7.3.10): no exception has ever been detected
 * Nothing is saveable (SP refused; DS set in every page header). LOG SELECT with PCR resets
 * the cumulative values (the statistics) of the pages it names; with a parameter list it
 * writes application client parameters, after checking the whole list.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/cdb.h"
#include "core/fabric.h"
#include "core/scsi_spec.h"
#include "core/spc.h"
#include "core/spc_selftest.h"
#include "core/stats.h"
#include "util/be.h"

/* SPC-5 §7.3.3: 64 general usage parameters of FCh bytes each. */
#define LOG_APP_PARAMS 64u
#define LOG_APP_PARAM_LEN 0xfcu
#define LOG_HDR_LEN 4u
#define LOG_PARAM_HDR_LEN 4u
/* The largest page we build: the application client page. */
#define LOG_MAX_PAGE (LOG_HDR_LEN + LOG_APP_PARAMS * (LOG_PARAM_HDR_LEN + LOG_APP_PARAM_LEN))
/* SPC-5 §7.3.9.2: the general access statistics parameter holds eight 8-byte fields. */
#define LOG_GAS_LEN 0x40u

/* LOG SENSE PC field (SPC-5 §6.8 Table 160). */
enum {
	PC_THRESHOLD = 0,
	PC_CUMULATIVE = 1,
	PC_DEFAULT_THRESHOLD = 2,
	PC_DEFAULT_CUMULATIVE = 3
};

struct scsitgt__log {
	/* The command counters when the statistics were last reset (LOG SELECT PCR). */
	struct scsitgt_cmd_counters base;
	/* Application client parameters, LOG_APP_PARAMS * LOG_APP_PARAM_LEN bytes, or NULL
	 * while none was written (they then read as zeros). */
	uint8_t *app;
};

/* The (page, subpage) pairs we implement, in ascending order (SPC-5 §7.3.19). */
struct log_page_id {
	uint8_t page;
	uint8_t sub;
};
static const struct log_page_id log_pages[] = {
	{ LOG_SUPPORTED, 0x00 },       { LOG_SUPPORTED, LOG_SUBPAGES_ALL },
	{ LOG_TEMPERATURE, 0x00 },     { LOG_TEMPERATURE, LOG_SUBPAGES_ALL },
	{ LOG_APP_CLIENT, 0x00 },      { LOG_APP_CLIENT, LOG_SUBPAGES_ALL },
	{ LOG_SELF_TEST, 0x00 },       { LOG_SELF_TEST, LOG_SUBPAGES_ALL },
	{ LOG_GENERAL_STATS, 0x00 },   { LOG_GENERAL_STATS, LOG_SUBPAGES_ALL },
	{ LOG_INFO_EXCEPTIONS, 0x00 }, { LOG_INFO_EXCEPTIONS, LOG_SUBPAGES_ALL },
};
#define LOG_NPAGES (sizeof(log_pages) / sizeof(log_pages[0]))

static bool log_page_exists(uint8_t page, uint8_t sub)
{
	for (size_t i = 0; i < LOG_NPAGES; i++)
		if (log_pages[i].page == page && log_pages[i].sub == sub)
			return true;
	return false;
}

/* The LUN's log state, made on first use. Under lun->xlock: LOG SELECT and LOG SENSE of every
 * loop make, write and read it (issue 18). */
static struct scsitgt__log *log_state(struct scsitgt_lun *lun)
{
	if (lun->log == NULL)
		lun->log = calloc(1, sizeof(*lun->log));
	return lun->log;
}

void scsitgt__spc_log_free(struct scsitgt_lun *lun)
{
	if (lun->log) {
		free(lun->log->app);
		free(lun->log);
		lun->log = NULL;
	}
}

/* SPC-5 §7.3.2.1 Table 442: DS (no saving) always; SPF when the subpage is not 00h. */
static size_t log_header(uint8_t *p, uint8_t page, uint8_t sub, size_t len)
{
	p[0] = (uint8_t)(0x80 | (sub ? 0x40 : 0) | page);
	p[1] = sub;
	put_be16(&p[2], (uint16_t)(len - LOG_HDR_LEN));
	return len;
}

/* One parameter header (SPC-5 §7.3.2.2 Table 443). */
static uint8_t *log_param(uint8_t *p, uint16_t code, uint8_t control, uint8_t len)
{
	put_be16(&p[0], code);
	p[2] = control;
	p[3] = len;
	return &p[LOG_PARAM_HDR_LEN];
}

/* 00h/00h: one byte per page code; 00h/FFh and xxh/FFh: page/subpage pairs. */
static size_t log_supported(uint8_t *buf, uint8_t page, uint8_t sub)
{
	size_t n = LOG_HDR_LEN;

	for (size_t i = 0; i < LOG_NPAGES; i++) {
		if (sub == 0x00) {
			if (log_pages[i].sub == 0x00)
				buf[n++] = log_pages[i].page;
		} else if (page == LOG_SUPPORTED || log_pages[i].page == page) {
			buf[n++] = log_pages[i].page;
			buf[n++] = log_pages[i].sub;
		}
	}
	return log_header(buf, page, sub, n);
}

/* 0Dh: TEMPERATURE (0000h) and REFERENCE TEMPERATURE (0001h), FFh: not available. */
static size_t log_temperature(uint8_t *buf, uint16_t first)
{
	size_t n = LOG_HDR_LEN;

	for (uint16_t code = 0; code <= 1; code++) {
		uint8_t *v;

		if (code < first)
			continue;
		v = log_param(&buf[n], code, LP_BINARY_LIST, 2);
		v[0] = 0;
		v[1] = 0xff;
		n += LOG_PARAM_HDR_LEN + 2;
	}
	return log_header(buf, LOG_TEMPERATURE, 0, n);
}

/* 2Fh: the general informational exceptions parameter (0000h): ASC/ASCQ 00h (none), the
 * most recent temperature reading FFh (no sensor, as page 0Dh). */
static size_t log_info_exceptions(uint8_t *buf)
{
	uint8_t *v = log_param(&buf[LOG_HDR_LEN], 0x0000, LP_BINARY_LIST, 3);

	v[0] = 0x00;
	v[1] = 0x00;
	v[2] = 0xff;
	return log_header(buf, LOG_INFO_EXCEPTIONS, 0, LOG_HDR_LEN + LOG_PARAM_HDR_LEN + 3);
}

/* 0Fh: the general usage parameters from @first on. */
static size_t log_app_client(const struct scsitgt__log *lg, uint8_t *buf, uint16_t first)
{
	size_t n = LOG_HDR_LEN;

	for (uint16_t code = first; code < LOG_APP_PARAMS; code++) {
		uint8_t *v = log_param(&buf[n], code, LP_BINARY_LIST, LOG_APP_PARAM_LEN);

		if (lg && lg->app)
			memcpy(v, &lg->app[code * LOG_APP_PARAM_LEN], LOG_APP_PARAM_LEN);
		else
			memset(v, 0, LOG_APP_PARAM_LEN);
		n += LOG_PARAM_HDR_LEN + LOG_APP_PARAM_LEN;
	}
	return log_header(buf, LOG_APP_CLIENT, 0, n);
}

/*
 * 19h: the general access statistics and performance parameter (0001h). Cumulative values
 * count since the last reset; the default cumulative values are zero; thresholds are not
 * kept, so the threshold values are the counters' maximum (never reached).
 */
static size_t log_general_stats(const struct scsitgt_lun *lun, uint8_t *buf, uint8_t pc)
{
	struct scsitgt_cmd_counters sum;
	const struct scsitgt_cmd_counters *c = &sum;
	const struct scsitgt_cmd_counters *b = lun->log ? &lun->log->base : NULL;
	uint64_t v[8] = { 0 };
	uint8_t *p = log_param(&buf[LOG_HDR_LEN], 0x0001, LP_UNBOUNDED_COUNTER, LOG_GAS_LEN);

	scsitgt__stats_lun_counters(lun, &sum, NULL);
	if (pc == PC_CUMULATIVE) {
		v[0] = c->read_cmds - (b ? b->read_cmds : 0);
		v[1] = c->write_cmds - (b ? b->write_cmds : 0);
		/* NUMBER OF LOGICAL BLOCKS RECEIVED (written) and TRANSMITTED (read). */
		v[2] = (c->bytes_written - (b ? b->bytes_written : 0)) / lun->geo.block_size;
		v[3] = (c->bytes_read - (b ? b->bytes_read : 0)) / lun->geo.block_size;
		/* The processing intervals and weighted fields need a time interval
		 * descriptor (parameter 0003h) we do not keep: zero. */
	} else if (pc == PC_THRESHOLD || pc == PC_DEFAULT_THRESHOLD) {
		for (int i = 0; i < 8; i++)
			v[i] = UINT64_MAX;
	}
	for (int i = 0; i < 8; i++)
		put_be64(&p[8 * i], v[i]);
	return log_header(buf, LOG_GENERAL_STATS, 0, LOG_HDR_LEN + LOG_PARAM_HDR_LEN + LOG_GAS_LEN);
}

/* The largest parameter code of a page, for the PARAMETER POINTER check (SPC-5 §6.8). */
static uint16_t log_max_param(uint8_t page, uint8_t sub)
{
	if (sub == LOG_SUBPAGES_ALL || page == LOG_SUPPORTED)
		return 0;
	switch (page) {
	case LOG_TEMPERATURE:
		return 1;
	case LOG_APP_CLIENT:
		return LOG_APP_PARAMS - 1;
	case LOG_SELF_TEST:
		return 20;
	case LOG_GENERAL_STATS:
		return 1;
	default:
		return 0;
	}
}

/* SPC-5 §6.8 LOG SENSE: SP (byte 1 bit 0), PC and PAGE CODE (byte 2), SUBPAGE CODE (byte 3),
 * PARAMETER POINTER (bytes 5..6), ALLOCATION LENGTH (bytes 7..8). */
enum scsitgt__sense_reason scsitgt__spc_parse_log_sense(struct scsitgt__cmd *cmd)
{
	uint8_t page = cmd->cdb[2] & 0x3f, sub = cmd->cdb[3];

	/* Saving log parameters is not implemented (DS 1 in every page). */
	if (cmd->cdb[1] & 0x01)
		return scsitgt__cmd_bad_cdb_field(cmd, 1, 0);
	if (!log_page_exists(page, sub))
		return scsitgt__cmd_bad_cdb_field(cmd, sub && log_page_exists(page, 0) ? 3 : 2,
						  sub && log_page_exists(page, 0) ? 7 : 5);
	/* A pointer past the page's last parameter code is an invalid field. */
	if (get_be16(&cmd->cdb[5]) > log_max_param(page, sub))
		return scsitgt__cmd_bad_cdb_field(cmd, 5, 7);
	return scsitgt__parse_alloc16(cmd, 7);
}

void scsitgt__spc_log_sense(struct scsitgt__cmd *cmd)
{
	struct scsitgt_lun *lun = cmd->lun;
	uint8_t page = cmd->cdb[2] & 0x3f, sub = cmd->cdb[3], pc = cmd->cdb[2] >> 6;
	uint16_t first = get_be16(&cmd->cdb[5]);
	uint8_t *buf = malloc(LOG_MAX_PAGE);
	size_t len;

	if (buf == NULL) {
		scsitgt__cmd_complete(cmd, SCSITGT__SR_BUSY);
		return;
	}
	memset(buf, 0, LOG_MAX_PAGE);
	if (page == LOG_SUPPORTED || sub == LOG_SUBPAGES_ALL) {
		len = log_supported(buf, page, sub);
	} else {
		switch (page) {
		case LOG_TEMPERATURE:
			len = log_temperature(buf, first);
			break;
		case LOG_APP_CLIENT:
			uv_mutex_lock(&lun->xlock);
			len = log_app_client(lun->log, buf, first);
			uv_mutex_unlock(&lun->xlock);
			break;
		case LOG_SELF_TEST:
			len = log_header(buf, LOG_SELF_TEST, 0,
					 scsitgt__selftest_log_page(lun, buf, LOG_MAX_PAGE, first));
			break;
		case LOG_GENERAL_STATS:
			uv_mutex_lock(&lun->xlock);
			len = log_general_stats(lun, buf, pc);
			uv_mutex_unlock(&lun->xlock);
			break;
		default: /* LOG_INFO_EXCEPTIONS; parse admitted only the pages of log_pages[] */
			len = log_info_exceptions(buf);
			break;
		}
	}
	scsitgt__cmd_respond(cmd, buf, len);
	free(buf);
	scsitgt__cmd_complete(cmd, SCSITGT__SR_OK);
}

/* SPC-5 §6.7 LOG SELECT: PCR and SP (byte 1), PC and PAGE CODE (byte 2), SUBPAGE CODE (byte
 * 3), PARAMETER LIST LENGTH (bytes 7..8). */
enum scsitgt__sense_reason scsitgt__spc_parse_log_select(struct scsitgt__cmd *cmd)
{
	bool pcr = cmd->cdb[1] & 0x02;
	uint8_t page = cmd->cdb[2] & 0x3f, sub = cmd->cdb[3];
	uint16_t len = get_be16(&cmd->cdb[7]);

	/* SP: no log parameter is saveable. */
	if (cmd->cdb[1] & 0x01)
		return scsitgt__cmd_bad_cdb_field(cmd, 1, 0);
	if (len) {
		/* SPC-5 §6.7.2: with a parameter list, PCR is refused and the pages are named
		 * by the list, so PAGE CODE and SUBPAGE CODE must be zero. */
		if (pcr)
			return scsitgt__cmd_bad_cdb_field(cmd, 1, 1);
		if (page)
			return scsitgt__cmd_bad_cdb_field(cmd, 2, 5);
		if (sub)
			return scsitgt__cmd_bad_cdb_field(cmd, 3, 7);
		cmd->dir = SCSITGT__DIR_OUT;
		cmd->xfer_len = len;
		return SCSITGT__SR_OK;
	}
	/* SPC-5 §6.7.1 Table 156: 00h/00h names every page, xxh/FFh every subpage of xxh, any
	 * other pair one page, which must exist. */
	if (!(page == 0 && sub == 0) && !(sub == LOG_SUBPAGES_ALL && log_page_exists(page, 0)) &&
	    !log_page_exists(page, sub))
		return scsitgt__cmd_bad_cdb_field(cmd, sub ? 3 : 2, sub ? 7 : 5);
	return SCSITGT__SR_OK;
}

/* Check one page of a LOG SELECT parameter list at @off (page header included), @end the
 * list's end; with @apply, store it. Returns the reason, and the page's end in @next. */
static enum scsitgt__sense_reason log_select_page(struct scsitgt__cmd *cmd, size_t off, size_t end,
						  bool apply, size_t *next)
{
	const uint8_t *p = cmd->buf;
	uint8_t page, sub;
	bool spf;
	size_t pend, q;
	int32_t prev = -1;

	if (end - off < LOG_HDR_LEN)
		return SCSITGT__SR_PARAM_LIST_LENGTH_ERROR;
	page = p[off] & 0x3f;
	sub = p[off + 1];
	spf = p[off] & 0x40;
	/* SPF zero means subpage 00h (SPC-5 §7.3.2.1). */
	if (!spf && sub)
		return scsitgt__cmd_bad_param_field(cmd, (uint16_t)(off + 1), 7);
	/* Only the application client page has parameters an application client may set;
	 * another page, implemented or not, is an invalid field (SPC-5 §6.7.2). */
	if (page != LOG_APP_CLIENT || sub != 0)
		return scsitgt__cmd_bad_param_field(cmd, (uint16_t)off, 5);
	pend = off + LOG_HDR_LEN + get_be16(&p[off + 2]);
	/* A PAGE LENGTH running past the list truncates the page's parameters. */
	if (pend > end)
		return scsitgt__cmd_bad_param_field(cmd, (uint16_t)(off + 2), 7);
	for (q = off + LOG_HDR_LEN; q < pend;) {
		uint16_t code;

		if (pend - q < LOG_PARAM_HDR_LEN)
			return scsitgt__cmd_bad_param_field(cmd, (uint16_t)(off + 2), 7);
		code = get_be16(&p[q]);
		/* Parameter codes ascend and stay within the general usage parameters. */
		if (code >= LOG_APP_PARAMS || (int32_t)code <= prev)
			return scsitgt__cmd_bad_param_field(cmd, (uint16_t)q, 7);
		/* PARAMETER CONTROL BYTE: a binary format list parameter, no DU, TSD, ETC or
		 * TMC (SPC-5 §7.3.3.2). */
		if (p[q + 2] != LP_BINARY_LIST)
			return scsitgt__cmd_bad_param_field(cmd, (uint16_t)(q + 2),
							    p[q + 2] & 0xfc ? 7 : 1);
		if (p[q + 3] != LOG_APP_PARAM_LEN)
			return scsitgt__cmd_bad_param_field(cmd, (uint16_t)(q + 3), 7);
		if (pend - q - LOG_PARAM_HDR_LEN < LOG_APP_PARAM_LEN)
			return scsitgt__cmd_bad_param_field(cmd, (uint16_t)(off + 2), 7);
		if (apply)
			memcpy(&cmd->lun->log->app[code * LOG_APP_PARAM_LEN],
			       &p[q + LOG_PARAM_HDR_LEN], LOG_APP_PARAM_LEN);
		prev = code;
		q += LOG_PARAM_HDR_LEN + LOG_APP_PARAM_LEN;
	}
	*next = pend;
	return SCSITGT__SR_OK;
}

/* Reset the cumulative values of the pages @page/@sub names (only the statistics have any). */
static enum scsitgt__sense_reason log_reset(struct scsitgt_lun *lun, uint8_t page, uint8_t sub)
{
	struct scsitgt__log *lg;

	if (!(page == 0 && sub == 0) && page != LOG_GENERAL_STATS)
		return SCSITGT__SR_OK;
	lg = log_state(lun);
	if (lg == NULL)
		return SCSITGT__SR_BUSY;
	scsitgt__stats_lun_counters(lun, &lg->base, NULL);
	return SCSITGT__SR_OK;
}

void scsitgt__spc_log_select(struct scsitgt__cmd *cmd)
{
	struct scsitgt_lun *lun = cmd->lun;
	uint8_t pc = cmd->cdb[2] >> 6;
	enum scsitgt__sense_reason r = SCSITGT__SR_OK;
	size_t off, next;

	if (cmd->xfer_len == 0) {
		/* SPC-5 §6.7.1 Table 157: PCR 1 with PC 01b or 11b sets the cumulative values to
		 * their defaults (zero); with PC 00b or 10b the thresholds, of which we keep none.
		 * PCR 0 changes nothing. */
		if ((cmd->cdb[1] & 0x02) && (pc == PC_CUMULATIVE || pc == PC_DEFAULT_CUMULATIVE)) {
			uv_mutex_lock(&lun->xlock);
			r = log_reset(lun, cmd->cdb[2] & 0x3f, cmd->cdb[3]);
			uv_mutex_unlock(&lun->xlock);
		}
		scsitgt__cmd_complete(cmd, r);
		return;
	}
	/* Check the whole list before changing anything. */
	for (off = 0; off < cmd->xfer_len && r == SCSITGT__SR_OK; off = next)
		r = log_select_page(cmd, off, cmd->xfer_len, false, &next);
	if (r != SCSITGT__SR_OK) {
		scsitgt__cmd_complete(cmd, r);
		return;
	}
	uv_mutex_lock(&lun->xlock);
	if (log_state(lun) == NULL)
		r = SCSITGT__SR_BUSY;
	if (r == SCSITGT__SR_OK && lun->log->app == NULL) {
		lun->log->app = calloc(LOG_APP_PARAMS, LOG_APP_PARAM_LEN);
		if (lun->log->app == NULL)
			r = SCSITGT__SR_BUSY;
	}
	for (off = 0; off < cmd->xfer_len && r == SCSITGT__SR_OK; off = next)
		r = log_select_page(cmd, off, cmd->xfer_len, true, &next);
	uv_mutex_unlock(&lun->xlock);
	scsitgt__cmd_complete(cmd, r);
}
