/* SPDX-License-Identifier: MIT */
/*
 * mpath_writer - a libiscsi initiator with several paths to one logical unit that fails over
 * by ALUA state, as a well-behaved multipath host does (Linux dm-multipath with scsi_dh_alua):
 * it sends I/O down a path whose target port group is active/optimized, and when a path
 * fails (connection lost, NOT READY with any ASC 04h: standby 04h/0Bh, unavailable 04h/0Ch,
 * transitioning 04h/0Ah), it asks every path for REPORT TARGET PORT GROUPS and retries the
 * same command on an active/optimized one. No error reaches the "application" (the write
 * loop) unless no path becomes active within the deadline.
 *
 * Usage: mpath_writer [-i IQN] [-t DEADLINE_S] [-s] URL... -- COMMAND [ARGS]
 *   write START COUNT STOPFILE
 *       write blocks START..START+COUNT-1 pass after pass until STOPFILE exists, then finish
 *       the pass and read every block back: each block holds "MPWRITER", its LBA and the
 *       number of the last pass whose write was acknowledged, and a pattern of both.
 *       Prints "pass N path P" after each pass, "failover P -> Q at T" (T: CLOCK_REALTIME,
 *       seconds, of the first completed command on Q), "verified N blocks" at the end.
 *   verify START COUNT PASS
 *       read the blocks back and check they hold pass PASS.
 *   state
 *       one line per path: "path P group G state S" (REPORT TARGET PORT GROUPS through it),
 *       or "path P down".
 * -s: when no path is active/optimized, ask the first standby path's group to become
 *     active/optimized with SET TARGET PORT GROUPS (explicit failover, as scsi_dh_alua does
 *     when it activates a path group).
 * Exit 0 on success, 1 on an error that reached the application, 2 on usage errors.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>

#define MAX_PATHS 4
#define BS 512u
#define CHUNK 32u

struct path {
	const char *url;
	struct iscsi_context *ctx;
	int lun;
	int group; /* target port group of the path (VPD 83h), -1 unknown */
	int state; /* its ALUA state as last reported, -1 unknown */
};

static struct path paths[MAX_PATHS];
static int npaths;
static int cur = -1;
static const char *initiator = "iqn.2026-11.org.libscsitgt:mpath-writer";
static double deadline_s = 120;
static bool explicit_stpg;

static double now_real(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double now_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static void path_drop(struct path *p)
{
	if (p->ctx) {
		iscsi_destroy_context(p->ctx);
		p->ctx = NULL;
	}
	p->state = -1;
}

static bool path_login(struct path *p, int idx)
{
	struct iscsi_url *u;

	if (p->ctx)
		return true;
	p->ctx = iscsi_create_context(initiator);
	if (p->ctx == NULL)
		return false;
	/* One I_T nexus per path: the same initiator, an ISID per path. */
	iscsi_set_isid_random(p->ctx, 0x4d5057, (uint32_t)(idx + 1));
	/* Never reconnect behind our back: a dead path must fail, not hang. */
	iscsi_set_noautoreconnect(p->ctx, 1);
	iscsi_set_timeout(p->ctx, 10);
	u = iscsi_parse_full_url(p->ctx, p->url);
	if (u == NULL)
		goto fail;
	iscsi_set_targetname(p->ctx, u->target);
	iscsi_set_session_type(p->ctx, ISCSI_SESSION_NORMAL);
	iscsi_set_header_digest(p->ctx, ISCSI_HEADER_DIGEST_NONE);
	p->lun = u->lun;
	if (iscsi_connect_sync(p->ctx, u->portal) != 0 || iscsi_login_sync(p->ctx) != 0) {
		iscsi_destroy_url(u);
		goto fail;
	}
	iscsi_destroy_url(u);
	return true;
fail:
	path_drop(p);
	return false;
}

static struct scsi_task *run_cdb(struct path *p, unsigned char *cdb, int len, int dir, int xfer,
				 unsigned char *dout)
{
	struct scsi_task *t = scsi_create_task(len, cdb, dir, xfer);
	struct iscsi_data d = { .size = (size_t)(dout ? xfer : 0), .data = dout };

	if (t == NULL)
		return NULL;
	if (iscsi_scsi_command_sync(p->ctx, p->lun, t, dout ? &d : NULL) == NULL) {
		scsi_free_scsi_task(t);
		return NULL;
	}
	return t;
}

/* A command through @p, past unit attentions (bounded); NULL when the path is down. */
static struct scsi_task *path_cmd(struct path *p, unsigned char *cdb, int len, int dir, int xfer,
				  unsigned char *dout)
{
	for (int i = 0; i < 8; i++) {
		struct scsi_task *t = run_cdb(p, cdb, len, dir, xfer, dout);

		if (t == NULL)
			return NULL;
		if (t->status == SCSI_STATUS_CHECK_CONDITION &&
		    t->sense.key == SCSI_SENSE_UNIT_ATTENTION) {
			scsi_free_scsi_task(t);
			continue;
		}
		return t;
	}
	return NULL;
}

/* The target port group of the path: VPD 83h, designator type 5 (SPC-5 §7.7.6.6). */
static int path_group(struct path *p)
{
	unsigned char cdb[6] = { 0x12, 0x01, 0x83, 0x01, 0x00, 0 };
	struct scsi_task *t = path_cmd(p, cdb, 6, SCSI_XFER_READ, 256, NULL);
	int group = -1;

	if (t == NULL)
		return -1;
	if (t->status == SCSI_STATUS_GOOD && t->datain.size >= 4) {
		const unsigned char *d = t->datain.data;
		size_t len = 4 + (size_t)(d[2] << 8 | d[3]), n = 4;

		if (len > (size_t)t->datain.size)
			len = (size_t)t->datain.size;
		while (n + 4 <= len) {
			size_t dl = d[n + 3];

			if ((d[n + 1] & 0x0f) == 5 && dl >= 4 && n + 4 + dl <= len)
				group = d[n + 6] << 8 | d[n + 7];
			n += 4 + dl;
		}
	}
	scsi_free_scsi_task(t);
	return group;
}

/* Ask path @idx for REPORT TARGET PORT GROUPS and record every path's state from it. */
static bool path_rtpg(int idx)
{
	unsigned char cdb[12] = { 0xa3, 0x0a, 0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0 };
	struct path *p = &paths[idx];
	struct scsi_task *t;
	const unsigned char *d;
	size_t n, len;

	if (!path_login(p, idx))
		return false;
	if (p->group < 0)
		p->group = path_group(p);
	t = path_cmd(p, cdb, 12, SCSI_XFER_READ, 4096, NULL);
	if (t == NULL) {
		path_drop(p);
		return false;
	}
	if (t->status != SCSI_STATUS_GOOD || t->datain.size < 4) {
		scsi_free_scsi_task(t);
		return false;
	}
	d = t->datain.data;
	len = (size_t)t->datain.size;
	/* Only the path's own group counts: each gateway knows its own state for sure. */
	for (n = 4; n + 8 <= len; n += 8 + 4 * (size_t)d[n + 7])
		if ((d[n + 2] << 8 | d[n + 3]) == p->group)
			p->state = d[n] & 0x0f;
	scsi_free_scsi_task(t);
	return true;
}

static void stpg(int idx)
{
	unsigned char cdb[12] = { 0xa4, 0x0a, 0, 0, 0, 0, 0, 0, 0, 8, 0, 0 };
	unsigned char d[8] = { 0 };
	struct path *p = &paths[idx];
	struct scsi_task *t;

	d[4] = 0; /* active/optimized */
	d[6] = (unsigned char)(p->group >> 8);
	d[7] = (unsigned char)p->group;
	t = path_cmd(p, cdb, 12, SCSI_XFER_WRITE, 8, d);
	if (t == NULL) {
		path_drop(p);
		return;
	}
	fprintf(stderr, "mpath_writer: SET TARGET PORT GROUPS group %d through path %d: %s\n",
		p->group, idx, t->status == SCSI_STATUS_GOOD ? "good" : "failed");
	scsi_free_scsi_task(t);
}

/* Pick an active/optimized path; polls (bounded by the deadline) while none is. */
static bool choose_path(void)
{
	double end = now_mono() + deadline_s;
	bool asked = false;

	while (now_mono() < end) {
		int standby = -1;

		for (int i = 0; i < npaths; i++) {
			if (!path_rtpg(i))
				continue;
			if (paths[i].state == 0) {
				cur = i;
				return true;
			}
			if (paths[i].state == 2 && standby < 0)
				standby = i;
		}
		if (explicit_stpg && standby >= 0 && !asked) {
			stpg(standby);
			asked = true;
		}
		pause_ms(50);
	}
	return false;
}

/*
 * A failure of the path rather than of the command: libiscsi's transport errors (the
 * connection dropped: ERROR, CANCELLED, TIMEOUT), BUSY / TASK SET FULL, and NOT READY with
 * LOGICAL UNIT NOT READY / NOT ACCESSIBLE (ASC 04h: standby, unavailable, transitioning).
 * Another path, or the same one later, may do.
 */
static bool path_error(const struct scsi_task *t)
{
	switch (t->status) {
	case SCSI_STATUS_GOOD:
		return false;
	case SCSI_STATUS_CHECK_CONDITION:
		return t->sense.key == SCSI_SENSE_NOT_READY && (t->sense.ascq >> 8) == 0x04;
	case SCSI_STATUS_CONDITION_MET:
	case SCSI_STATUS_RESERVATION_CONFLICT:
		return false;
	default:
		return true;
	}
}

/*
 * One command with failover: the "application" sees only success or, when no path comes
 * back within the deadline, failure. Returns the task (GOOD or a real error), NULL if no path.
 */
static struct scsi_task *mp_cmd(unsigned char *cdb, int len, int dir, int xfer, unsigned char *dout)
{
	int from = cur;
	double failed_at = 0;

	for (;;) {
		struct scsi_task *t = NULL;

		if (cur < 0 && !choose_path())
			return NULL;
		t = path_cmd(&paths[cur], cdb, len, dir, xfer, dout);
		if (t != NULL && !path_error(t)) {
			if (failed_at > 0)
				printf("failover %d -> %d at %.3f (%.0f ms after the first failure)\n",
				       from, cur, now_real(), (now_mono() - failed_at) * 1000);
			return t;
		}
		if (failed_at == 0)
			failed_at = now_mono();
		if (t == NULL) {
			fprintf(stderr, "mpath_writer: path %d down: %s\n", cur,
				iscsi_get_error(paths[cur].ctx));
			path_drop(&paths[cur]);
		} else if (t->status == SCSI_STATUS_CHECK_CONDITION) {
			fprintf(stderr, "mpath_writer: path %d: sense %x/%02x/%02x\n", cur,
				t->sense.key, t->sense.ascq >> 8, t->sense.ascq & 0xff);
			scsi_free_scsi_task(t);
		} else {
			/* The connection is gone or the target is busy: start the path afresh. */
			fprintf(stderr, "mpath_writer: path %d: status 0x%x: %s\n", cur,
				(unsigned)t->status, iscsi_get_error(paths[cur].ctx));
			scsi_free_scsi_task(t);
			path_drop(&paths[cur]);
		}
		cur = -1;
	}
}

static void fill(unsigned char *b, uint64_t lba, uint64_t pass)
{
	memcpy(b, "MPWRITER", 8);
	for (int i = 0; i < 8; i++) {
		b[8 + i] = (unsigned char)(lba >> (8 * i));
		b[16 + i] = (unsigned char)(pass >> (8 * i));
	}
	for (unsigned int i = 24; i < BS; i++)
		b[i] = (unsigned char)(lba * 31 + pass * 7 + i);
}

static void cdb16(unsigned char *cdb, unsigned char op, uint64_t lba, uint32_t n)
{
	memset(cdb, 0, 16);
	cdb[0] = op;
	for (int i = 0; i < 8; i++)
		cdb[2 + i] = (unsigned char)(lba >> (56 - 8 * i));
	for (int i = 0; i < 4; i++)
		cdb[10 + i] = (unsigned char)(n >> (24 - 8 * i));
}

/* Read START..START+COUNT-1 back and compare with pass[i] (or @one when @pass is NULL). */
static int verify(uint64_t start, uint64_t count, const uint64_t *pass, uint64_t one)
{
	unsigned char buf[CHUNK * BS], want[BS], cdb[16];

	for (uint64_t off = 0; off < count; off += CHUNK) {
		uint32_t n = count - off < CHUNK ? (uint32_t)(count - off) : CHUNK;
		struct scsi_task *t;

		cdb16(cdb, 0x88, start + off, n);
		t = mp_cmd(cdb, 16, SCSI_XFER_READ, (int)(n * BS), NULL);
		if (t == NULL || t->status != SCSI_STATUS_GOOD || t->datain.size != (int)(n * BS)) {
			fprintf(stderr, "mpath_writer: READ at %" PRIu64 " failed\n", start + off);
			return 1;
		}
		memcpy(buf, t->datain.data, n * BS);
		scsi_free_scsi_task(t);
		for (uint32_t i = 0; i < n; i++) {
			uint64_t p = pass ? pass[off + i] : one;

			fill(want, start + off + i, p);
			if (memcmp(want, &buf[i * BS], BS) != 0) {
				fprintf(stderr,
					"mpath_writer: block %" PRIu64 " holds the wrong data "
					"(expected pass %" PRIu64 ")\n",
					start + off + i, p);
				return 1;
			}
		}
	}
	printf("verified %" PRIu64 " blocks\n", count);
	return 0;
}

static int cmd_write(uint64_t start, uint64_t count, const char *stopfile)
{
	uint64_t *pass = calloc(count, sizeof(*pass));
	unsigned char buf[CHUNK * BS], cdb[16];
	uint64_t p = 0;
	int rc;

	if (pass == NULL)
		return 1;
	do {
		p++;
		for (uint64_t off = 0; off < count; off += CHUNK) {
			uint32_t n = count - off < CHUNK ? (uint32_t)(count - off) : CHUNK;
			struct scsi_task *t;

			for (uint32_t i = 0; i < n; i++)
				fill(&buf[i * BS], start + off + i, p);
			cdb16(cdb, 0x8a, start + off, n);
			t = mp_cmd(cdb, 16, SCSI_XFER_WRITE, (int)(n * BS), buf);
			if (t == NULL || t->status != SCSI_STATUS_GOOD) {
				fprintf(stderr,
					"mpath_writer: WRITE at %" PRIu64 " failed (status 0x%x, "
					"sense %x/%02x/%02x): the application saw an I/O error\n",
					start + off, t ? (unsigned)t->status : 0u,
					t ? (unsigned)t->sense.key : 0u,
					t ? (unsigned)t->sense.ascq >> 8 : 0u,
					t ? (unsigned)t->sense.ascq & 0xffu : 0u);
				free(pass);
				return 1;
			}
			scsi_free_scsi_task(t);
			for (uint32_t i = 0; i < n; i++)
				pass[off + i] = p;
		}
		printf("pass %" PRIu64 " path %d\n", p, cur);
		fflush(stdout);
	} while (access(stopfile, F_OK) != 0);
	rc = verify(start, count, pass, 0);
	free(pass);
	return rc;
}

static int cmd_state(void)
{
	for (int i = 0; i < npaths; i++) {
		if (path_rtpg(i))
			printf("path %d group %d state %d\n", i, paths[i].group, paths[i].state);
		else
			printf("path %d down\n", i);
	}
	return 0;
}

static uint64_t num(const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end) {
		fprintf(stderr, "mpath_writer: bad number '%s'\n", s);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	int i = 1, rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
		if (strcmp(argv[i], "-i") == 0 && i + 1 < argc)
			initiator = argv[++i];
		else if (strcmp(argv[i], "-t") == 0 && i + 1 < argc)
			deadline_s = (double)num(argv[++i]);
		else if (strcmp(argv[i], "-s") == 0)
			explicit_stpg = true;
		else if (npaths < MAX_PATHS)
			paths[npaths++] = (struct path){ .url = argv[i], .group = -1, .state = -1 };
		else
			return 2;
	}
	if (npaths == 0 || i + 1 >= argc) {
		fprintf(stderr, "usage: mpath_writer [-i IQN] [-t S] [-s] URL... -- "
				"write START COUNT STOPFILE | verify START COUNT PASS | state\n");
		return 2;
	}
	argv += i + 1;
	argc -= i + 1;
	if (strcmp(argv[0], "write") == 0 && argc == 4)
		rc = cmd_write(num(argv[1]), num(argv[2]), argv[3]);
	else if (strcmp(argv[0], "verify") == 0 && argc == 4)
		rc = verify(num(argv[1]), num(argv[2]), NULL, num(argv[3]));
	else if (strcmp(argv[0], "state") == 0 && argc == 1)
		rc = cmd_state();
	else
		return 2;
	for (int j = 0; j < npaths; j++)
		path_drop(&paths[j]);
	return rc;
}
