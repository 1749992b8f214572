/* SPDX-License-Identifier: MIT */
/*
 * scsitgt-bench: an iSCSI load generator built on libiscsi's asynchronous API, so that the
 * initiator side of every benchmark is code we did not write.
 *
 *   scsitgt-bench --url iscsi://HOST[:PORT]/IQN/LUN [--url ...] [--sessions N]
 *                 [--bs SIZE] [--qd N] [--rw read|write|randread|randwrite|mix] [--mix PCT]
 *                 [--seconds S] [--ramp S] [--size BYTES] [--target-pid PID]
 *                 [--cpu-pid NAME=PID]... [--json]
 *
 * Each URL (or each of the N copies of one URL) is one session with its own TCP connection,
 * driven from one poll() loop. Every session keeps --qd commands in flight: READ(16) or
 * WRITE(16) of --bs bytes, issued again from the completion callback. Latencies come from
 * CLOCK_MONOTONIC and go into a log-linear histogram (bounded memory, about 1.6% resolution).
 *
 * The program verifies nothing: reads go into a scratch buffer, writes send a fixed pattern.
 * Every LBA stays inside the capacity READ CAPACITY(16) reports (or inside --size).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>

#include "size_arg.h"

#define MAX_SESSIONS 64
#define MAX_QD 1024
#define INITIATOR_NAME "iqn.2026-11.org.libscsitgt:bench"
#define NEG_KEYS 8
#define NEG_VAL_LEN 32
#define MAX_CPU_PIDS 8

/*
 * Log-linear histogram of nanoseconds: values below 2 * HIST_SUB are exact; above, each power
 * of two is split into HIST_SUB equal buckets (relative error below 1 / HIST_SUB).
 */
#define HIST_SUB_BITS 6
#define HIST_SUB (1u << HIST_SUB_BITS)
#define HIST_MAX_BITS 44 /* about 4.9 hours; larger values are clamped */
#define HIST_BUCKETS ((HIST_MAX_BITS - HIST_SUB_BITS + 1) * HIST_SUB)

struct hist {
	uint64_t count[HIST_BUCKETS];
	uint64_t n;
	uint64_t min;
	uint64_t max;
	long double sum;
};

enum rw_mode {
	RW_READ,
	RW_WRITE,
	RW_RANDREAD,
	RW_RANDWRITE,
	RW_MIX
};

enum phase {
	PHASE_RAMP,
	PHASE_MEASURE,
	PHASE_DRAIN
};

struct session;

struct slot {
	struct session *s;
	uint8_t *buf;
	struct scsi_iovec iov;
	uint64_t t_submit;
	bool busy;
};

struct session {
	const char *url_text;
	struct iscsi_context *iscsi;
	struct iscsi_url *url;
	int lun;
	uint32_t block_size;
	uint64_t num_blocks; /* blocks usable by the benchmark (capacity or --size) */
	uint64_t seq_next;   /* next LBA of sequential patterns */
	uint64_t seq_end;    /* --fill: this session writes [its start, seq_end) once */
	bool fill_done;
	struct slot slots[MAX_QD];
	unsigned int inflight;
	bool dead;
};

struct opts {
	const char *urls[MAX_SESSIONS];
	int nurls;
	int sessions;
	uint32_t bs;
	int qd;
	enum rw_mode rw;
	int mix_read_pct;
	double seconds;
	double ramp;
	uint64_t size;
	long target_pid;
	/* --cpu-pid NAME=PID: more processes whose CPU time per IO is reported (an OSD...). */
	const char *cpu_names[MAX_CPU_PIDS];
	long cpu_pids[MAX_CPU_PIDS];
	int ncpu_pids;
	bool json;
	bool fill;
};

static struct {
	struct opts o;
	struct session *sess[MAX_SESSIONS];
	int nsess;
	enum phase phase;
	uint64_t rng;
	struct hist lat;
	struct hist lat_read;
	struct hist lat_write;
	uint64_t ios;
	uint64_t bytes;
	uint64_t reads;
	uint64_t writes;
	uint64_t errors;
	uint64_t errors_logged;
	/* The first session's login reply keys, caught from libiscsi's log (see login_log). */
	char keys[NEG_KEYS][NEG_VAL_LEN];
	bool logging_login;
} g;

/*
 * Keys the target answered in its Login Response (RFC 7143 §13): for FirstBurstLength,
 * MaxBurstLength, InitialR2T and ImmediateData the answer is the negotiated outcome; the
 * target's MaxRecvDataSegmentLength is what it declares it accepts per PDU (§13.12).
 */
static const char *const neg_key_names[NEG_KEYS] = {
	"MaxRecvDataSegmentLength",
	"FirstBurstLength",
	"MaxBurstLength",
	"InitialR2T",
	"ImmediateData",
	"MaxOutstandingR2T",
	"HeaderDigest",
	"DataDigest",
};

/*
 * libiscsi keeps the negotiated keys private, but at log level 6 it logs each key of the
 * target's Login Response as "TargetLoginReply: Key=Value"; record those of the first session.
 */
static void login_log(int level, const char *message)
{
	static const char tag[] = "TargetLoginReply: ";
	const char *p = strstr(message, tag);

	(void)level;
	if (!g.logging_login || p == NULL) {
		return;
	}
	p += sizeof(tag) - 1;
	for (int i = 0; i < NEG_KEYS; i++) {
		size_t kl = strlen(neg_key_names[i]);
		size_t vl;

		if (strncmp(p, neg_key_names[i], kl) != 0 || p[kl] != '=') {
			continue;
		}
		p += kl + 1;
		vl = strcspn(p, " ");
		if (vl >= NEG_VAL_LEN) {
			vl = NEG_VAL_LEN - 1;
		}
		memcpy(g.keys[i], p, vl);
		g.keys[i][vl] = '\0';
		return;
	}
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* xorshift64*: cheap, good enough to spread LBAs. */
static uint64_t rnd(void)
{
	g.rng ^= g.rng >> 12;
	g.rng ^= g.rng << 25;
	g.rng ^= g.rng >> 27;
	return g.rng * 0x2545F4914F6CDD1Dull;
}

static unsigned int hist_index(uint64_t v)
{
	unsigned int msb, shift, idx;

	if (v < 2 * HIST_SUB) {
		return (unsigned int)v;
	}
	msb = 63u - (unsigned int)__builtin_clzll(v);
	if (msb >= HIST_MAX_BITS) {
		return HIST_BUCKETS - 1;
	}
	shift = msb - HIST_SUB_BITS;
	idx = (shift + 1) * HIST_SUB + (unsigned int)((v >> shift) - HIST_SUB);
	return idx;
}

/* The middle of bucket @idx, in the histogram's unit. */
static double hist_value(unsigned int idx)
{
	unsigned int shift;
	uint64_t lo;

	if (idx < 2 * HIST_SUB) {
		return idx;
	}
	shift = idx / HIST_SUB - 1;
	lo = (uint64_t)(idx % HIST_SUB + HIST_SUB) << shift;
	return (double)lo + (double)((uint64_t)1 << shift) / 2.0;
}

static void hist_add(struct hist *h, uint64_t v)
{
	h->count[hist_index(v)]++;
	if (h->n == 0 || v < h->min) {
		h->min = v;
	}
	if (v > h->max) {
		h->max = v;
	}
	h->n++;
	h->sum += v;
}

/* The value at quantile @q (0..1), clamped to the observed min and max. */
static double hist_quantile(const struct hist *h, double q)
{
	uint64_t rank, seen = 0;

	if (h->n == 0) {
		return 0;
	}
	rank = (uint64_t)(q * (double)h->n);
	if (rank >= h->n) {
		rank = h->n - 1;
	}
	for (unsigned int i = 0; i < HIST_BUCKETS; i++) {
		seen += h->count[i];
		if (seen > rank) {
			double v = hist_value(i);

			if (v < (double)h->min) {
				v = (double)h->min;
			}
			if (v > (double)h->max) {
				v = (double)h->max;
			}
			return v;
		}
	}
	return (double)h->max;
}

/* CPU time (user + system) of process @pid in microseconds, from /proc/PID/stat. */
static int proc_cpu_us(long pid, uint64_t *out)
{
	char path[64], buf[1024];
	unsigned long long ut, st;
	const char *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	f = fopen(path, "r");
	if (f == NULL) {
		return -errno;
	}
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* The command name may hold spaces and parentheses: fields restart after the last ')'. */
	p = strrchr(buf, ')');
	if (p == NULL) {
		return -EINVAL;
	}
	/* proc(5): after ")" come state(3) ... utime(14) stime(15); skip fields 3..13. */
	p++;
	for (int field = 3; field <= 13; field++) {
		p = strchr(p + 1, ' ');
		if (p == NULL) {
			return -EINVAL;
		}
	}
	if (sscanf(p, " %llu %llu", &ut, &st) != 2) {
		return -EINVAL;
	}
	*out = (ut + st) * 1000000ull / (unsigned long long)sysconf(_SC_CLK_TCK);
	return 0;
}

static uint64_t self_cpu_us(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (uint64_t)ru.ru_utime.tv_sec * 1000000u + (uint64_t)ru.ru_utime.tv_usec +
	       (uint64_t)ru.ru_stime.tv_sec * 1000000u + (uint64_t)ru.ru_stime.tv_usec;
}

/* CPU times at one instant: this process, the target and the --cpu-pid processes. */
struct cpu_snap {
	uint64_t own;
	uint64_t tgt;
	bool have_tgt;
	uint64_t other[MAX_CPU_PIDS];
	bool have_other[MAX_CPU_PIDS];
};

static void cpu_snap_take(struct cpu_snap *c)
{
	c->own = self_cpu_us();
	c->have_tgt = g.o.target_pid && proc_cpu_us(g.o.target_pid, &c->tgt) == 0;
	for (int i = 0; i < g.o.ncpu_pids; i++) {
		c->have_other[i] = proc_cpu_us(g.o.cpu_pids[i], &c->other[i]) == 0;
	}
}

static bool is_read(enum rw_mode rw)
{
	switch (rw) {
	case RW_READ:
	case RW_RANDREAD:
		return true;
	case RW_WRITE:
	case RW_RANDWRITE:
		return false;
	case RW_MIX:
		return (int)(rnd() % 100) < g.o.mix_read_pct;
	}
	return true;
}

static uint64_t next_lba(struct session *s, uint32_t nblk)
{
	uint64_t slots = s->num_blocks / nblk;
	uint64_t lba;

	if (g.o.rw == RW_READ || g.o.rw == RW_WRITE) {
		lba = s->seq_next;
		if (lba + nblk > s->num_blocks) {
			lba = 0;
		}
		s->seq_next = lba + nblk;
		return lba;
	}
	return (rnd() % slots) * nblk;
}

static void io_done(struct iscsi_context *iscsi, int status, void *command_data,
		    void *private_data);

static int slot_submit(struct slot *sl)
{
	struct session *s = sl->s;
	uint32_t nblk = g.o.bs / s->block_size;
	struct scsi_task *task;
	uint64_t lba;
	bool rd;

	if (g.o.fill && s->seq_next + nblk > s->seq_end) {
		/* This session's slice is written: leave the slot idle. */
		s->fill_done = true;
		return 0;
	}
	lba = next_lba(s, nblk);
	rd = is_read(g.o.rw);

	sl->t_submit = now_ns();
	if (rd) {
		task = iscsi_read16_iov_task(s->iscsi, s->lun, lba, g.o.bs, (int)s->block_size, 0,
					     0, 0, 0, 0, io_done, sl, &sl->iov, 1);
	} else {
		task = iscsi_write16_iov_task(s->iscsi, s->lun, lba, NULL, g.o.bs,
					      (int)s->block_size, 0, 0, 0, 0, 0, io_done, sl,
					      &sl->iov, 1);
	}
	if (task == NULL) {
		fprintf(stderr, "scsitgt-bench: %s: cannot queue a command: %s\n", s->url_text,
			iscsi_get_error(s->iscsi));
		g.errors++;
		return -EIO;
	}
	sl->busy = true;
	s->inflight++;
	return 0;
}

static void io_done(struct iscsi_context *iscsi, int status, void *command_data, void *private_data)
{
	struct scsi_task *task = command_data;
	struct slot *sl = private_data;
	struct session *s = sl->s;
	uint64_t lat = now_ns() - sl->t_submit;
	bool rd = task->xfer_dir == SCSI_XFER_READ;

	(void)iscsi;
	sl->busy = false;
	s->inflight--;
	if (status != SCSI_STATUS_GOOD) {
		g.errors++;
		if (g.errors_logged++ < 10) {
			if (status == SCSI_STATUS_CHECK_CONDITION) {
				fprintf(stderr,
					"scsitgt-bench: %s: CHECK CONDITION %s (0x%x) ASC/ASCQ 0x%04x\n",
					s->url_text, scsi_sense_key_str(task->sense.key),
					task->sense.key, task->sense.ascq);
			} else {
				fprintf(stderr,
					"scsitgt-bench: %s: command failed, status 0x%x: %s\n",
					s->url_text, status, iscsi_get_error(s->iscsi));
			}
		}
	} else if (g.phase == PHASE_MEASURE) {
		g.ios++;
		g.bytes += g.o.bs;
		hist_add(&g.lat, lat);
		if (rd) {
			g.reads++;
			hist_add(&g.lat_read, lat);
		} else {
			g.writes++;
			hist_add(&g.lat_write, lat);
		}
	}
	scsi_free_scsi_task(task);
	if (status == SCSI_STATUS_CANCELLED) {
		/* The context is being torn down; do not queue more. */
		return;
	}
	if (g.phase != PHASE_DRAIN && !s->dead) {
		if (slot_submit(sl) < 0) {
			s->dead = true;
		}
	}
}

static int parse_size(const char *str, uint64_t *out)
{
	uint64_t v;

	if (size_arg_parse(str, &v) < 0 || v == 0)
		return -EINVAL;
	*out = v;
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: scsitgt-bench --url iscsi://HOST[:PORT]/IQN/LUN [--url ...] [--sessions N]\n"
		"                     [--bs SIZE] [--qd N] [--rw read|write|randread|randwrite|mix]\n"
		"                     [--mix READ_PCT] [--seconds S] [--ramp S] [--size BYTES]\n"
		"                     [--target-pid PID] [--cpu-pid NAME=PID]... [--json] [--fill]\n"
		"  --url URL        a LUN to drive; repeat for several sessions\n"
		"  --sessions N     open N sessions to the (single) URL (default 1)\n"
		"  --bs SIZE        bytes per command, K/M suffixes (default 4k)\n"
		"  --qd N           commands in flight per session (default 32)\n"
		"  --rw MODE        read, write (sequential), randread, randwrite, mix (random)\n"
		"  --mix PCT        percentage of reads for --rw mix (default 70)\n"
		"  --seconds S      measured time (default 10)\n"
		"  --ramp S         unmeasured warm-up before it (default 1)\n"
		"  --size BYTES     use only the first BYTES of each LUN (default: all of it)\n"
		"  --target-pid PID report that process's CPU time per IO (from /proc/PID/stat)\n"
		"  --cpu-pid NAME=PID  the same for another process, reported under NAME\n"
		"                   (repeatable, up to 8: the OSD, the monitor...)\n"
		"  --json           one JSON object on stdout instead of text\n"
		"  --fill           write the whole range (or --size) once, sequentially, then stop;\n"
		"                   preconditions sparse or lazily allocated LUNs before reads\n");
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "url", required_argument, NULL, 'u' },
		{ "sessions", required_argument, NULL, 'S' },
		{ "bs", required_argument, NULL, 'b' },
		{ "qd", required_argument, NULL, 'q' },
		{ "rw", required_argument, NULL, 'r' },
		{ "mix", required_argument, NULL, 'm' },
		{ "seconds", required_argument, NULL, 't' },
		{ "ramp", required_argument, NULL, 'R' },
		{ "size", required_argument, NULL, 's' },
		{ "target-pid", required_argument, NULL, 'p' },
		{ "cpu-pid", required_argument, NULL, 'c' },
		{ "json", no_argument, NULL, 'j' },
		{ "fill", no_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t v;
	char *end;
	int c;

	memset(o, 0, sizeof(*o));
	o->sessions = 1;
	o->bs = 4096;
	o->qd = 32;
	o->rw = RW_RANDREAD;
	o->mix_read_pct = 70;
	o->seconds = 10;
	o->ramp = 1;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'u':
			if (o->nurls == MAX_SESSIONS) {
				fprintf(stderr, "scsitgt-bench: at most %d URLs\n", MAX_SESSIONS);
				return -EINVAL;
			}
			o->urls[o->nurls++] = optarg;
			break;
		case 'S':
			o->sessions = (int)strtol(optarg, &end, 10);
			if (*end || o->sessions < 1 || o->sessions > MAX_SESSIONS) {
				fprintf(stderr, "scsitgt-bench: --sessions 1..%d\n", MAX_SESSIONS);
				return -EINVAL;
			}
			break;
		case 'b':
			if (parse_size(optarg, &v) < 0 || v > (64u << 20)) {
				fprintf(stderr, "scsitgt-bench: bad --bs '%s'\n", optarg);
				return -EINVAL;
			}
			o->bs = (uint32_t)v;
			break;
		case 'q':
			o->qd = (int)strtol(optarg, &end, 10);
			if (*end || o->qd < 1 || o->qd > MAX_QD) {
				fprintf(stderr, "scsitgt-bench: --qd 1..%d\n", MAX_QD);
				return -EINVAL;
			}
			break;
		case 'r':
			if (strcmp(optarg, "read") == 0) {
				o->rw = RW_READ;
			} else if (strcmp(optarg, "write") == 0) {
				o->rw = RW_WRITE;
			} else if (strcmp(optarg, "randread") == 0) {
				o->rw = RW_RANDREAD;
			} else if (strcmp(optarg, "randwrite") == 0) {
				o->rw = RW_RANDWRITE;
			} else if (strcmp(optarg, "mix") == 0 || strcmp(optarg, "randrw") == 0) {
				o->rw = RW_MIX;
			} else {
				fprintf(stderr, "scsitgt-bench: bad --rw '%s'\n", optarg);
				return -EINVAL;
			}
			break;
		case 'm':
			o->mix_read_pct = (int)strtol(optarg, &end, 10);
			if (*end || o->mix_read_pct < 0 || o->mix_read_pct > 100) {
				fprintf(stderr, "scsitgt-bench: --mix 0..100\n");
				return -EINVAL;
			}
			break;
		case 't':
		case 'R': {
			double d = strtod(optarg, &end);

			if (*end || d < 0 || d > 86400 || (c == 't' && d <= 0)) {
				fprintf(stderr, "scsitgt-bench: bad duration '%s'\n", optarg);
				return -EINVAL;
			}
			if (c == 't') {
				o->seconds = d;
			} else {
				o->ramp = d;
			}
			break;
		}
		case 's':
			if (parse_size(optarg, &o->size) < 0) {
				fprintf(stderr, "scsitgt-bench: bad --size '%s'\n", optarg);
				return -EINVAL;
			}
			break;
		case 'p':
			o->target_pid = strtol(optarg, &end, 10);
			if (*end || o->target_pid <= 0) {
				fprintf(stderr, "scsitgt-bench: bad --target-pid '%s'\n", optarg);
				return -EINVAL;
			}
			break;
		case 'c': {
			char *eq = strchr(optarg, '=');
			long pid;

			pid = eq ? strtol(eq + 1, &end, 10) : 0;
			if (eq == NULL || eq == optarg || *end || pid <= 0 ||
			    o->ncpu_pids == MAX_CPU_PIDS) {
				fprintf(stderr, "scsitgt-bench: bad --cpu-pid '%s'\n", optarg);
				return -EINVAL;
			}
			*eq = '\0';
			o->cpu_names[o->ncpu_pids] = optarg;
			o->cpu_pids[o->ncpu_pids++] = pid;
			break;
		}
		case 'j':
			o->json = true;
			break;
		case 'F':
			o->fill = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -EINVAL;
		}
	}
	if (optind != argc || o->nurls == 0) {
		usage(stderr);
		return -EINVAL;
	}
	if (o->sessions > 1 && o->nurls > 1) {
		fprintf(stderr, "scsitgt-bench: --sessions needs a single --url\n");
		return -EINVAL;
	}
	if (o->fill) {
		/* Sequential writes, measured from the start, until every slice is written. */
		o->rw = RW_WRITE;
		o->ramp = 0;
		o->seconds = 86400;
	}
	return 0;
}

static int session_open(struct session *s, const char *url_text, int index)
{
	struct scsi_readcapacity16 *rc16;
	struct scsi_task *task;
	char name[256];
	uint64_t cap;
	int rc;

	s->url_text = url_text;
	/* One initiator name per session keeps each one a distinct I_T nexus on every target. */
	snprintf(name, sizeof(name), "%s:%d", INITIATOR_NAME, index);
	s->iscsi = iscsi_create_context(name);
	if (s->iscsi == NULL) {
		fprintf(stderr, "scsitgt-bench: cannot create an iSCSI context\n");
		return -ENOMEM;
	}
	s->url = iscsi_parse_full_url(s->iscsi, url_text);
	if (s->url == NULL) {
		fprintf(stderr, "scsitgt-bench: bad URL '%s': %s\n", url_text,
			iscsi_get_error(s->iscsi));
		return -EINVAL;
	}
	iscsi_set_targetname(s->iscsi, s->url->target);
	iscsi_set_session_type(s->iscsi, ISCSI_SESSION_NORMAL);
	iscsi_set_header_digest(s->iscsi, ISCSI_HEADER_DIGEST_NONE);
	s->lun = s->url->lun;
	if (index == 0) {
		g.logging_login = true;
		iscsi_set_log_fn(s->iscsi, login_log);
		iscsi_set_log_level(s->iscsi, 6);
	}
	rc = iscsi_full_connect_sync(s->iscsi, s->url->portal, s->lun);
	if (index == 0) {
		/* Level 0 again: no log formatting on the IO path. */
		iscsi_set_log_level(s->iscsi, 0);
		g.logging_login = false;
	}
	if (rc != 0) {
		fprintf(stderr, "scsitgt-bench: login to %s failed: %s\n", url_text,
			iscsi_get_error(s->iscsi));
		return -EIO;
	}
	task = iscsi_readcapacity16_sync(s->iscsi, s->lun);
	if (task == NULL || task->status != SCSI_STATUS_GOOD) {
		fprintf(stderr, "scsitgt-bench: READ CAPACITY(16) on %s failed: %s\n", url_text,
			iscsi_get_error(s->iscsi));
		if (task) {
			scsi_free_scsi_task(task);
		}
		return -EIO;
	}
	rc16 = scsi_datain_unmarshall(task);
	if (rc16 == NULL || rc16->block_length == 0) {
		fprintf(stderr, "scsitgt-bench: cannot decode READ CAPACITY(16) of %s\n", url_text);
		scsi_free_scsi_task(task);
		return -EIO;
	}
	s->block_size = rc16->block_length;
	cap = rc16->returned_lba + 1;
	scsi_free_scsi_task(task);
	if (g.o.size) {
		uint64_t lim = g.o.size / s->block_size;

		if (lim < cap) {
			cap = lim;
		}
	}
	s->num_blocks = cap;
	if (g.o.bs % s->block_size != 0) {
		fprintf(stderr, "scsitgt-bench: --bs %u is not a multiple of %s's block size %u\n",
			g.o.bs, url_text, s->block_size);
		return -EINVAL;
	}
	if (s->num_blocks < g.o.bs / s->block_size) {
		fprintf(stderr, "scsitgt-bench: %s is smaller than one command\n", url_text);
		return -EINVAL;
	}
	for (int i = 0; i < g.o.qd; i++) {
		struct slot *sl = &s->slots[i];

		sl->s = s;
		if (posix_memalign((void **)&sl->buf, 4096, g.o.bs) != 0) {
			return -ENOMEM;
		}
		/* A fixed, recognisable pattern: what writes send, what reads overwrite. */
		for (uint32_t b = 0; b < g.o.bs; b++) {
			sl->buf[b] = (uint8_t)(0xa5 ^ (b & 0xff));
		}
		sl->iov.iov_base = sl->buf;
		sl->iov.iov_len = g.o.bs;
	}
	return 0;
}

static void session_close(struct session *s)
{
	if (s->iscsi) {
		if (!s->dead && iscsi_is_logged_in(s->iscsi)) {
			iscsi_logout_sync(s->iscsi);
		}
		if (s->url) {
			iscsi_destroy_url(s->url);
		}
		iscsi_destroy_context(s->iscsi);
	}
	for (int i = 0; i < g.o.qd; i++) {
		free(s->slots[i].buf);
	}
	free(s);
}

/* One poll() over every session; false when a connection failed for good. */
static bool poll_once(int timeout_ms)
{
	struct pollfd pfd[MAX_SESSIONS];

	for (int i = 0; i < g.nsess; i++) {
		pfd[i].fd = iscsi_get_fd(g.sess[i]->iscsi);
		pfd[i].events = (short)iscsi_which_events(g.sess[i]->iscsi);
		pfd[i].revents = 0;
	}
	if (poll(pfd, (nfds_t)g.nsess, timeout_ms) < 0) {
		if (errno == EINTR) {
			return true;
		}
		perror("scsitgt-bench: poll");
		return false;
	}
	for (int i = 0; i < g.nsess; i++) {
		struct session *s = g.sess[i];

		/* revents 0 still lets libiscsi run its timers (its documented idiom). */
		if (iscsi_service(s->iscsi, pfd[i].revents) < 0) {
			fprintf(stderr, "scsitgt-bench: %s: %s\n", s->url_text,
				iscsi_get_error(s->iscsi));
			s->dead = true;
			return false;
		}
	}
	return true;
}

static const char *rw_name(enum rw_mode rw)
{
	static const char *const names[] = { "read", "write", "randread", "randwrite", "mix" };

	return names[rw];
}

/* CPU microseconds per IO of process @i of --cpu-pid between @c0 and @c1, or -1. */
static double other_us_io(const struct cpu_snap *c0, const struct cpu_snap *c1, int i)
{
	if (!c0->have_other[i] || !c1->have_other[i] || g.ios == 0) {
		return -1;
	}
	return (double)(c1->other[i] - c0->other[i]) / (double)g.ios;
}

static void report(double secs, const struct cpu_snap *c0, const struct cpu_snap *c1)
{
	bool have_tgt_cpu = c0->have_tgt && c1->have_tgt;
	uint64_t tgt_cpu_us = have_tgt_cpu ? c1->tgt - c0->tgt : 0;
	uint64_t own_cpu_us = c1->own - c0->own;
	double iops = secs > 0 ? (double)g.ios / secs : 0;
	double mibs = secs > 0 ? (double)g.bytes / secs / 1048576.0 : 0;
	double tgt_us_io = have_tgt_cpu && g.ios ? (double)tgt_cpu_us / (double)g.ios : -1;
	double own_us_io = g.ios ? (double)own_cpu_us / (double)g.ios : -1;
	double p50 = hist_quantile(&g.lat, 0.50) / 1000.0;
	double p99 = hist_quantile(&g.lat, 0.99) / 1000.0;
	double p999 = hist_quantile(&g.lat, 0.999) / 1000.0;
	double mean = g.lat.n ? (double)(g.lat.sum / g.lat.n) / 1000.0 : 0;

	if (g.o.json) {
		printf("{\"rw\":\"%s\",\"bs\":%u,\"qd\":%d,\"sessions\":%d,\"seconds\":%.3f,"
		       "\"ios\":%" PRIu64 ",\"reads\":%" PRIu64 ",\"writes\":%" PRIu64 ","
		       "\"iops\":%.1f,\"mibs\":%.2f,\"lat_us\":{\"min\":%.1f,\"mean\":%.1f,"
		       "\"p50\":%.1f,\"p99\":%.1f,\"p999\":%.1f,\"max\":%.1f},"
		       "\"errors\":%" PRIu64 ",",
		       rw_name(g.o.rw), g.o.bs, g.o.qd, g.nsess, secs, g.ios, g.reads, g.writes,
		       iops, mibs, (double)g.lat.min / 1000.0, mean, p50, p99, p999,
		       (double)g.lat.max / 1000.0, g.errors);
		if (tgt_us_io >= 0) {
			printf("\"target_cpu_us_per_io\":%.2f,", tgt_us_io);
		} else {
			printf("\"target_cpu_us_per_io\":null,");
		}
		printf("\"initiator_cpu_us_per_io\":%.2f,", own_us_io);
		printf("\"cpu_us_per_io\":{");
		for (int i = 0; i < g.o.ncpu_pids; i++) {
			double v = other_us_io(c0, c1, i);

			printf("%s\"%s\":", i ? "," : "", g.o.cpu_names[i]);
			if (v >= 0) {
				printf("%.2f", v);
			} else {
				printf("null");
			}
		}
		printf("},");
		printf("\"negotiated\":{");
		for (int i = 0, first = 1; i < NEG_KEYS; i++) {
			if (g.keys[i][0]) {
				printf("%s\"%s\":\"%s\"", first ? "" : ",", neg_key_names[i],
				       g.keys[i]);
				first = 0;
			}
		}
		printf("}}\n");
		return;
	}
	printf("scsitgt-bench: %s bs=%u qd=%d sessions=%d, %.2f s measured\n", rw_name(g.o.rw),
	       g.o.bs, g.o.qd, g.nsess, secs);
	printf("  IOs        %" PRIu64 " (%" PRIu64 " reads, %" PRIu64 " writes), errors %" PRIu64
	       "\n",
	       g.ios, g.reads, g.writes, g.errors);
	printf("  IOPS       %.0f\n", iops);
	printf("  MiB/s      %.1f\n", mibs);
	printf("  latency us min %.1f mean %.1f p50 %.1f p99 %.1f p99.9 %.1f max %.1f\n",
	       (double)g.lat.min / 1000.0, mean, p50, p99, p999, (double)g.lat.max / 1000.0);
	if (g.o.rw == RW_MIX) {
		printf("  read  p50 %.1f p99 %.1f us; write p50 %.1f p99 %.1f us\n",
		       hist_quantile(&g.lat_read, 0.5) / 1000.0,
		       hist_quantile(&g.lat_read, 0.99) / 1000.0,
		       hist_quantile(&g.lat_write, 0.5) / 1000.0,
		       hist_quantile(&g.lat_write, 0.99) / 1000.0);
	}
	if (tgt_us_io >= 0) {
		printf("  target CPU %.2f us/IO (pid %ld, %.1f%% of one core)\n", tgt_us_io,
		       g.o.target_pid, secs > 0 ? (double)tgt_cpu_us / secs / 1e4 : 0);
	}
	printf("  bench CPU  %.2f us/IO (this initiator, same machine)\n", own_us_io);
	for (int i = 0; i < g.o.ncpu_pids; i++) {
		double v = other_us_io(c0, c1, i);

		if (v >= 0) {
			printf("  %s CPU %.2f us/IO (pid %ld)\n", g.o.cpu_names[i], v,
			       g.o.cpu_pids[i]);
		}
	}
	printf("  target's login reply:");
	for (int i = 0; i < NEG_KEYS; i++) {
		if (g.keys[i][0]) {
			printf(" %s=%s", neg_key_names[i], g.keys[i]);
		}
	}
	printf("\n");
}

int main(int argc, char **argv)
{
	uint64_t t_start, t_meas = 0, t_end = 0, t_deadline;
	struct cpu_snap c0 = { 0 }, c1 = { 0 };
	bool ok = true;
	int n;

	if (parse_args(argc, argv, &g.o) < 0) {
		return 2;
	}
	g.rng = (uint64_t)now_ns() | 1;
	n = g.o.nurls > 1 ? g.o.nurls : g.o.sessions;
	for (int i = 0; i < n; i++) {
		struct session *s = calloc(1, sizeof(*s));

		if (s == NULL) {
			return 1;
		}
		g.sess[g.nsess++] = s;
		if (session_open(s, g.o.urls[g.o.nurls > 1 ? i : 0], i) < 0) {
			ok = false;
			goto out;
		}
	}
	/*
	 * Sessions to one URL split the LUN into slices: sequential streams start apart, and
	 * --fill writes each slice once. Sessions to different URLs each cover their whole LUN.
	 */
	for (int i = 0; i < g.nsess; i++) {
		struct session *s = g.sess[i];
		uint64_t nblk = g.o.bs / s->block_size;
		uint64_t slice = s->num_blocks / (uint64_t)g.nsess;

		s->seq_next = 0;
		s->seq_end = s->num_blocks;
		if (g.o.nurls == 1) {
			s->seq_next = slice * (uint64_t)i;
			s->seq_next -= s->seq_next % nblk;
			if (i + 1 < g.nsess) {
				s->seq_end = slice * (uint64_t)(i + 1);
				s->seq_end -= s->seq_end % nblk;
			}
		}
	}

	t_start = now_ns();
	g.phase = g.o.ramp > 0 ? PHASE_RAMP : PHASE_MEASURE;
	if (g.phase == PHASE_MEASURE) {
		t_meas = t_start;
		cpu_snap_take(&c0);
	}
	for (int i = 0; i < g.nsess; i++) {
		for (int q = 0; q < g.o.qd; q++) {
			if (slot_submit(&g.sess[i]->slots[q]) < 0) {
				ok = false;
				goto out;
			}
		}
	}
	while (g.phase != PHASE_DRAIN) {
		uint64_t t;

		if (!poll_once(100)) {
			ok = false;
			break;
		}
		t = now_ns();
		if (g.o.fill) {
			unsigned int busy = 0;

			for (int i = 0; i < g.nsess; i++) {
				busy += g.sess[i]->inflight;
			}
			if (busy == 0) {
				g.phase = PHASE_DRAIN;
				t_end = t;
				cpu_snap_take(&c1);
				continue;
			}
		}
		if (g.phase == PHASE_RAMP && t - t_start >= (uint64_t)(g.o.ramp * 1e9)) {
			g.phase = PHASE_MEASURE;
			t_meas = t;
			cpu_snap_take(&c0);
		} else if (g.phase == PHASE_MEASURE &&
			   t - t_meas >= (uint64_t)(g.o.seconds * 1e9)) {
			g.phase = PHASE_DRAIN;
			t_end = t;
			cpu_snap_take(&c1);
		}
	}
	if (t_end == 0) {
		t_end = now_ns();
		cpu_snap_take(&c1);
		c1.have_tgt = false;
		memset(c1.have_other, 0, sizeof(c1.have_other));
	}
	/* Let the commands in flight finish (they are not counted) before logging out. */
	t_deadline = now_ns() + 10000000000ull;
	for (;;) {
		unsigned int inflight = 0;

		for (int i = 0; i < g.nsess; i++) {
			inflight += g.sess[i]->inflight;
		}
		if (inflight == 0 || !ok || now_ns() > t_deadline) {
			break;
		}
		if (!poll_once(100)) {
			ok = false;
		}
	}
	if (t_meas) {
		report((double)(t_end - t_meas) / 1e9, &c0, &c1);
	}
out:
	for (int i = 0; i < g.nsess; i++) {
		if (!ok) {
			g.sess[i]->dead = true;
		}
		session_close(g.sess[i]);
	}
	if (!ok) {
		return 1;
	}
	return g.errors ? 3 : 0;
}
