/* SPDX-License-Identifier: MIT */
/*
 * pr_client - a small libiscsi initiator for the reservation and multipath integration tests.
 *
 * Usage: pr_client [-i INITIATOR-IQN] [-q ISID-QUALIFIER] [-w FILE] URL COMMAND [ARGS]
 *   tur                       TEST UNIT READY once; prints "good" or "sense K/ASC/ASCQ"
 *   register KEY [aptpl]      PERSISTENT RESERVE OUT REGISTER with service action key KEY
 *   reserve KEY TYPE          PERSISTENT RESERVE OUT RESERVE
 *   rekey OLD NEW             PERSISTENT RESERVE OUT REGISTER changing key OLD to NEW
 *   preempt KEY SAKEY TYPE    PERSISTENT RESERVE OUT PREEMPT
 *   readkeys                  PERSISTENT RESERVE IN READ KEYS; prints one key per line (hex)
 *   readgen                   PERSISTENT RESERVE IN READ KEYS; prints the PRgeneration
 *   readres                   PERSISTENT RESERVE IN READ RESERVATION; "KEY TYPE" or "none"
 *   write START COUNT PAT [PASSES]
 *                             write blocks START..START+COUNT-1, each filled with byte
 *                             (PAT + lba) & 0xff, PASSES times (0: until killed); prints
 *                             "pass N" after each pass. A WRITE that ends with BUSY is sent
 *                             again, as initiators do, up to BUSY_TRIES times
 *   verify START COUNT PAT    read the blocks back and compare
 *   tur-after FILE            clear unit attentions, print "ready", wait until FILE exists
 *                             (polled), then TEST UNIT READY as "tur" does
 *   rtpg                      INQUIRY TPGS and REPORT TARGET PORT GROUPS (extended format):
 *                             "tpgs N", then "group ID state S status C ports P,..." lines
 *   stpg STATE GROUP          SET TARGET PORT GROUPS with one descriptor
 *   ident                     the logical unit's identification: "serial S" (VPD 80h), then
 *                             one "lu TYPE HEX" line per logical-unit designator of VPD 83h
 *                             (the target port and port group designators are left out)
 *   reserve6 | release6       SPC-2 RESERVE (6) / RELEASE (6) once unit attentions are
 *                             cleared: "good", "conflict" or "sense K/ASC/ASCQ"
 *   reserve6-hold FILE        reserve6, then keep the nexus (and so the reservation) until
 *                             FILE exists (polled)
 *   opsupport OPCODE          REPORT SUPPORTED OPERATION CODES for one opcode (no service
 *                             action): "supported", "not supported", or "sense K/ASC/ASCQ"
 *   held KIND                 a READ (10) of block 0 that the target holds (minitarget's
 *                             prhold LUN), then KIND: abort (ABORT TASK of it), abort-set,
 *                             lun-reset, logout, or drop (the connection closed, no logout);
 *                             prints "answered MS response R" (R: the TMF's response, 0 for
 *                             function complete; the logout's status) once KIND is answered,
 *                             MS after it was sent, "no answer" after HELD_WAIT_MS, or "dropped"
 *
 * -w FILE: after logging in, print "ready" and wait until FILE exists (polled) before the
 * command, so that several clients can start a command at the same moment.
 *
 * The session logs in without the TEST UNIT READY libiscsi's full connect sends, so that the
 * first command sees any pending unit attention; the other commands retry past unit
 * attentions. The ISID is random-format (RFC 7143 §11.12.5) with the given qualifier, so two
 * processes with the same initiator name and qualifiers are two I_T nexuses, and a process
 * that reuses a qualifier comes back as the same nexus.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>

#define DEFAULT_INITIATOR "iqn.2026-11.org.libscsitgt:prclient"
#define CHUNK_BLOCKS 64u
/* BUSY (SAM-5 §5.3.1) asks the initiator to send the command again later; Linux's midlayer
 * requeues it with a short delay. A WRITE is sent this many times, 10 ms apart, before its
 * BUSY is reported (a gateway re-reading its reservation state answers BUSY meanwhile:
 * docs/rbd.md). */
#define BUSY_TRIES 200
/* How long "held" waits for the answer to its TMF or logout. A target that makes them wait for
 * the held command answers only at its TMF or logout timeout, set far beyond this by the
 * test (tests/integration/pr_hold.sh). */
#define HELD_WAIT_MS 20000

static struct iscsi_context *iscsi;
static int lun;

static void usage(void)
{
	fprintf(stderr,
		"usage: pr_client [-i IQN] [-q ISID-QUALIFIER] [-w FILE] URL "
		"tur|tur-after|register|rekey|reserve|preempt|readkeys|readgen|readres|write|"
		"verify|rtpg|stpg|ident|reserve6|reserve6-hold|release6|opsupport|held [ARGS]\n");
	exit(2);
}

static uint64_t num(const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end)
		usage();
	return v;
}

static void connect_or_die(const char *initiator, uint32_t qualifier, const char *url)
{
	struct iscsi_url *u;

	iscsi = iscsi_create_context(initiator);
	if (iscsi == NULL) {
		fprintf(stderr, "pr_client: cannot create context\n");
		exit(1);
	}
	if (iscsi_set_isid_random(iscsi, 0x2a2a2a, qualifier) != 0) {
		fprintf(stderr, "pr_client: isid: %s\n", iscsi_get_error(iscsi));
		exit(1);
	}
	u = iscsi_parse_full_url(iscsi, url);
	if (u == NULL) {
		fprintf(stderr, "pr_client: bad URL %s: %s\n", url, iscsi_get_error(iscsi));
		exit(1);
	}
	iscsi_set_targetname(iscsi, u->target);
	iscsi_set_session_type(iscsi, ISCSI_SESSION_NORMAL);
	iscsi_set_header_digest(iscsi, ISCSI_HEADER_DIGEST_NONE);
	lun = u->lun;
	if (iscsi_connect_sync(iscsi, u->portal) != 0 || iscsi_login_sync(iscsi) != 0) {
		fprintf(stderr, "pr_client: login to %s: %s\n", url, iscsi_get_error(iscsi));
		exit(1);
	}
	iscsi_destroy_url(u);
}

/* A finished task: NULL on transport errors (exit), the task otherwise. */
static struct scsi_task *check(struct scsi_task *task, const char *what)
{
	if (task == NULL) {
		fprintf(stderr, "pr_client: %s: %s\n", what, iscsi_get_error(iscsi));
		exit(1);
	}
	return task;
}

static bool is_ua(const struct scsi_task *task)
{
	return task->status == SCSI_STATUS_CHECK_CONDITION &&
	       task->sense.key == SCSI_SENSE_UNIT_ATTENTION;
}

static void must_be_good(struct scsi_task *task, const char *what)
{
	if (task->status != SCSI_STATUS_GOOD) {
		fprintf(stderr, "pr_client: %s: status 0x%02x sense %x/%02x/%02x\n", what,
			task->status, task->sense.key, task->sense.ascq >> 8,
			task->sense.ascq & 0xff);
		exit(1);
	}
}

/* Clear pending unit attentions (bounded). */
static void clear_ua(void)
{
	for (int i = 0; i < 16; i++) {
		struct scsi_task *t = check(iscsi_testunitready_sync(iscsi, lun), "TUR");
		bool ua = is_ua(t);

		scsi_free_scsi_task(t);
		if (!ua)
			return;
	}
}

/* "good", "conflict" or "sense K/ASC/ASCQ" for a finished command. */
static void print_status(const struct scsi_task *t)
{
	if (t->status == SCSI_STATUS_GOOD)
		printf("good\n");
	else if (t->status == SCSI_STATUS_RESERVATION_CONFLICT)
		printf("conflict\n");
	else
		printf("sense %x/%02x/%02x\n", t->sense.key, t->sense.ascq >> 8,
		       t->sense.ascq & 0xff);
}

static int cmd_spc2(bool reserve)
{
	struct scsi_task *t;

	clear_ua();
	t = reserve ? check(iscsi_reserve6_sync(iscsi, lun), "RESERVE (6)") :
		      check(iscsi_release6_sync(iscsi, lun), "RELEASE (6)");
	print_status(t);
	scsi_free_scsi_task(t);
	return 0;
}

/* SPC-5 §6.35.3: the one_command parameter data's SUPPORT field (byte 1, bits 2..0). */
static int cmd_opsupport(unsigned opcode)
{
	struct scsi_task *t;

	clear_ua();
	t = check(iscsi_report_supported_opcodes_sync(iscsi, lun, 0, 1, (int)opcode, 0, 512),
		  "REPORT SUPPORTED OPERATION CODES");
	if (t->status != SCSI_STATUS_GOOD)
		print_status(t);
	else if (t->datain.size < 2)
		printf("short\n");
	else if ((t->datain.data[1] & 0x07) == 3)
		printf("supported\n");
	else if ((t->datain.data[1] & 0x07) == 1)
		printf("not supported\n");
	else
		printf("support %u\n", t->datain.data[1] & 0x07);
	scsi_free_scsi_task(t);
	return 0;
}

static int cmd_tur(void)
{
	struct scsi_task *t = check(iscsi_testunitready_sync(iscsi, lun), "TUR");

	if (t->status == SCSI_STATUS_GOOD)
		printf("good\n");
	else
		printf("sense %x/%02x/%02x\n", t->sense.key, t->sense.ascq >> 8,
		       t->sense.ascq & 0xff);
	scsi_free_scsi_task(t);
	return 0;
}

static int cmd_prout(int sa, uint64_t key, uint64_t sa_key, int type, bool aptpl)
{
	struct scsi_persistent_reserve_out_basic p;
	struct scsi_task *t;

	memset(&p, 0, sizeof(p));
	p.reservation_key = key;
	p.service_action_reservation_key = sa_key;
	p.aptpl = aptpl;
	clear_ua();
	t = check(iscsi_persistent_reserve_out_sync(iscsi, lun, sa, 0, type, &p), "PR OUT");
	must_be_good(t, "PR OUT");
	scsi_free_scsi_task(t);
	return 0;
}

static int cmd_readkeys(bool gen_only)
{
	struct scsi_persistent_reserve_in_read_keys *rk;
	struct scsi_task *t;

	clear_ua();
	t = check(iscsi_persistent_reserve_in_sync(iscsi, lun, SCSI_PERSISTENT_RESERVE_READ_KEYS,
						   4096),
		  "READ KEYS");
	must_be_good(t, "READ KEYS");
	rk = scsi_datain_unmarshall(t);
	if (rk == NULL) {
		fprintf(stderr, "pr_client: READ KEYS: cannot decode\n");
		return 1;
	}
	if (gen_only)
		printf("%" PRIu32 "\n", rk->prgeneration);
	for (int i = 0; !gen_only && i < rk->num_keys; i++)
		printf("0x%016" PRIx64 "\n", rk->keys[i]);
	scsi_free_scsi_task(t);
	return 0;
}

static int cmd_readres(void)
{
	struct scsi_persistent_reserve_in_read_reservation *rr;
	struct scsi_task *t;

	clear_ua();
	t = check(iscsi_persistent_reserve_in_sync(iscsi, lun,
						   SCSI_PERSISTENT_RESERVE_READ_RESERVATION, 4096),
		  "READ RESERVATION");
	must_be_good(t, "READ RESERVATION");
	rr = scsi_datain_unmarshall(t);
	if (rr == NULL) {
		fprintf(stderr, "pr_client: READ RESERVATION: cannot decode\n");
		return 1;
	}
	if (rr->reserved)
		printf("0x%016" PRIx64 " %d\n", rr->reservation_key, rr->pr_type);
	else
		printf("none\n");
	scsi_free_scsi_task(t);
	return 0;
}

static void fill(unsigned char *buf, uint64_t lba, uint32_t n, uint32_t bs, unsigned pat)
{
	for (uint32_t i = 0; i < n; i++)
		memset(&buf[(size_t)i * bs], (int)((pat + lba + i) & 0xff), bs);
}

static uint32_t block_size(void)
{
	struct scsi_readcapacity16 *rc;
	struct scsi_task *t;
	uint32_t bs;

	clear_ua();
	t = check(iscsi_readcapacity16_sync(iscsi, lun), "READ CAPACITY");
	must_be_good(t, "READ CAPACITY");
	rc = scsi_datain_unmarshall(t);
	if (rc == NULL) {
		fprintf(stderr, "pr_client: READ CAPACITY: cannot decode\n");
		exit(1);
	}
	bs = rc->block_length;
	scsi_free_scsi_task(t);
	return bs;
}

static int cmd_write(uint64_t start, uint64_t count, unsigned pat, uint64_t passes)
{
	uint32_t bs = block_size();
	unsigned char *buf = malloc((size_t)CHUNK_BLOCKS * bs);

	if (buf == NULL)
		return 1;
	for (uint64_t p = 0; passes == 0 || p < passes; p++) {
		for (uint64_t lba = start; lba < start + count; lba += CHUNK_BLOCKS) {
			uint32_t n = (uint32_t)(start + count - lba < CHUNK_BLOCKS ?
							start + count - lba :
							CHUNK_BLOCKS);
			struct scsi_task *t;

			fill(buf, lba, n, bs, pat);
			for (int tries = 1;; tries++) {
				t = check(iscsi_write16_sync(iscsi, lun, lba, buf, n * bs, (int)bs,
							     0, 0, 0, 0, 0),
					  "WRITE");
				if (t->status != SCSI_STATUS_BUSY || tries >= BUSY_TRIES)
					break;
				scsi_free_scsi_task(t);
				usleep(10000);
			}
			must_be_good(t, "WRITE");
			scsi_free_scsi_task(t);
		}
		printf("pass %" PRIu64 "\n", p + 1);
		fflush(stdout);
	}
	free(buf);
	return 0;
}

static int cmd_verify(uint64_t start, uint64_t count, unsigned pat)
{
	uint32_t bs = block_size();
	unsigned char *want = malloc((size_t)CHUNK_BLOCKS * bs);

	if (want == NULL)
		return 1;
	for (uint64_t lba = start; lba < start + count; lba += CHUNK_BLOCKS) {
		uint32_t n = (uint32_t)(start + count - lba < CHUNK_BLOCKS ? start + count - lba :
									     CHUNK_BLOCKS);
		struct scsi_task *t = check(
			iscsi_read16_sync(iscsi, lun, lba, n * bs, (int)bs, 0, 0, 0, 0, 0), "READ");

		must_be_good(t, "READ");
		fill(want, lba, n, bs, pat);
		if (t->datain.size != (int)(n * bs) ||
		    memcmp(t->datain.data, want, (size_t)n * bs) != 0) {
			fprintf(stderr,
				"pr_client: data mismatch in blocks %" PRIu64 "..%" PRIu64 "\n",
				lba, lba + n - 1);
			scsi_free_scsi_task(t);
			free(want);
			return 1;
		}
		scsi_free_scsi_task(t);
	}
	free(want);
	printf("verified %" PRIu64 " blocks\n", count);
	return 0;
}

static struct scsi_task *run_cdb(unsigned char *cdb, int cdb_len, int dir, int xfer,
				 unsigned char *dout, const char *what)
{
	struct scsi_task *t = scsi_create_task(cdb_len, cdb, dir, xfer);
	struct iscsi_data d = { .size = (size_t)(dout ? xfer : 0), .data = dout };

	if (t == NULL) {
		fprintf(stderr, "pr_client: %s: out of memory\n", what);
		exit(1);
	}
	return check(iscsi_scsi_command_sync(iscsi, lun, t, dout ? &d : NULL), what);
}

/* SPC-5 §6.7.2 TPGS and §6.36 REPORT TARGET PORT GROUPS, extended header. */
static int cmd_rtpg(void)
{
	unsigned char inq[6] = { 0x12, 0, 0, 0, 96, 0 };
	unsigned char cdb[12] = { 0xa3, 0x20 | 0x0a, 0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0 };
	struct scsi_task *t;
	const unsigned char *d;
	size_t n, len;

	clear_ua();
	t = run_cdb(inq, 6, SCSI_XFER_READ, 96, NULL, "INQUIRY");
	must_be_good(t, "INQUIRY");
	if (t->datain.size < 6)
		return 1;
	printf("tpgs %d\n", (t->datain.data[5] >> 4) & 3);
	scsi_free_scsi_task(t);
	t = run_cdb(cdb, 12, SCSI_XFER_READ, 4096, NULL, "REPORT TARGET PORT GROUPS");
	must_be_good(t, "REPORT TARGET PORT GROUPS");
	d = t->datain.data;
	len = (size_t)t->datain.size;
	if (len < 8 || ((d[4] >> 4) & 7) != 1) {
		fprintf(stderr, "pr_client: RTPG: no extended header\n");
		return 1;
	}
	printf("transition %u\n", d[5]);
	for (n = 8; n + 8 <= len;) {
		unsigned int ports = d[n + 7];

		printf("group %u state %u status %u ports", (unsigned)(d[n + 2] << 8 | d[n + 3]),
		       d[n] & 0x0f, d[n + 5]);
		for (unsigned int i = 0; i < ports && n + 8 + 4 * i + 4 <= len; i++) {
			const unsigned char *p = &d[n + 8 + 4 * i];

			printf("%c%u", i ? ',' : ' ', (unsigned)(p[2] << 8 | p[3]));
		}
		printf("\n");
		n += 8 + 4 * (size_t)ports;
	}
	scsi_free_scsi_task(t);
	return 0;
}

/* SPC-5 §7.7.4 Unit Serial Number and §7.7.6 Device Identification, LU designators only
 * (ASSOCIATION 00b): what a multipath host compares to see one device behind two paths. */
static int cmd_ident(void)
{
	unsigned char c80[6] = { 0x12, 0x01, 0x80, 0x01, 0x00, 0 };
	unsigned char c83[6] = { 0x12, 0x01, 0x83, 0x01, 0x00, 0 };
	const unsigned char *d;
	struct scsi_task *t;
	size_t len, n;

	clear_ua();
	t = run_cdb(c80, 6, SCSI_XFER_READ, 256, NULL, "INQUIRY VPD 80h");
	must_be_good(t, "INQUIRY VPD 80h");
	d = t->datain.data;
	len = (size_t)t->datain.size;
	if (len < 4 || (size_t)4 + d[3] > len)
		return 1;
	printf("serial %.*s\n", (int)d[3], (const char *)&d[4]);
	scsi_free_scsi_task(t);
	t = run_cdb(c83, 6, SCSI_XFER_READ, 256, NULL, "INQUIRY VPD 83h");
	must_be_good(t, "INQUIRY VPD 83h");
	d = t->datain.data;
	len = (size_t)t->datain.size;
	if (len >= 4 && (size_t)4 + (d[2] << 8 | d[3]) < len)
		len = (size_t)4 + (d[2] << 8 | d[3]);
	for (n = 4; n + 4 <= len && n + 4 + d[n + 3] <= len; n += 4 + (size_t)d[n + 3]) {
		if (((d[n + 1] >> 4) & 3) != 0)
			continue;
		printf("lu %u ", d[n + 1] & 0x0f);
		for (unsigned int i = 0; i < d[n + 3]; i++)
			printf("%02x", d[n + 4 + i]);
		printf("\n");
	}
	scsi_free_scsi_task(t);
	return 0;
}

/* SPC-5 §6.50 SET TARGET PORT GROUPS. */
static int cmd_stpg(unsigned int state, unsigned int group)
{
	unsigned char cdb[12] = { 0xa4, 0x0a, 0, 0, 0, 0, 0, 0, 0, 8, 0, 0 };
	unsigned char p[8] = { 0,
			       0,
			       0,
			       0,
			       (unsigned char)state,
			       0,
			       (unsigned char)(group >> 8),
			       (unsigned char)group };
	struct scsi_task *t;

	clear_ua();
	t = run_cdb(cdb, 12, SCSI_XFER_WRITE, 8, p, "SET TARGET PORT GROUPS");
	must_be_good(t, "SET TARGET PORT GROUPS");
	scsi_free_scsi_task(t);
	return 0;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Run the session until @done (or its out queue is empty, @done NULL); false at @deadline. */
static bool service_until(const bool *done, int64_t deadline)
{
	while (done ? !*done : iscsi_out_queue_length(iscsi) > 0) {
		struct pollfd pfd = { .fd = iscsi_get_fd(iscsi),
				      .events = iscsi_which_events(iscsi) };
		int64_t left = deadline - now_ms();

		if (left <= 0)
			return false;
		if (poll(&pfd, 1, (int)left) < 0 && errno != EINTR) {
			perror("pr_client: poll");
			exit(1);
		}
		if (iscsi_service(iscsi, pfd.revents) < 0) {
			fprintf(stderr, "pr_client: %s\n", iscsi_get_error(iscsi));
			exit(1);
		}
	}
	return true;
}

struct held_answer {
	bool done;
	int status;
	uint32_t response;
};

static void held_cb(struct iscsi_context *ctx, int status, void *command_data, void *priv)
{
	struct held_answer *a = priv;

	(void)ctx;
	a->done = true;
	a->status = status;
	if (command_data && status == SCSI_STATUS_GOOD)
		a->response = *(uint32_t *)command_data;
}

/* The READ's own end: libiscsi cancels it as it sends the TMF (CANCELLED); a status from the
 * target would mean that it ran. */
static void held_read_cb(struct iscsi_context *ctx, int status, void *command_data, void *priv)
{
	(void)ctx;
	(void)command_data;
	*(int *)priv = status;
}

static int cmd_held(const char *kind)
{
	uint32_t bs = block_size();
	struct held_answer a = { 0 };
	int read_status = -1, rc = -1;
	struct scsi_task *t;
	int64_t t0;

	t = iscsi_read10_task(iscsi, lun, 0, bs, (int)bs, 0, 0, 0, 0, 0, held_read_cb,
			      &read_status);
	check(t, "READ (10)");
	/* on the wire before the TMF: the target reads it, and holds it, first */
	if (!service_until(NULL, now_ms() + HELD_WAIT_MS) || read_status != -1) {
		fprintf(stderr, "pr_client: the READ was not held (status %d)\n", read_status);
		exit(1);
	}
	t0 = now_ms();
	if (strcmp(kind, "abort") == 0)
		rc = iscsi_task_mgmt_abort_task_async(iscsi, t, held_cb, &a);
	else if (strcmp(kind, "abort-set") == 0)
		rc = iscsi_task_mgmt_abort_task_set_async(iscsi, (uint32_t)lun, held_cb, &a);
	else if (strcmp(kind, "lun-reset") == 0)
		rc = iscsi_task_mgmt_lun_reset_async(iscsi, (uint32_t)lun, held_cb, &a);
	else if (strcmp(kind, "logout") == 0)
		rc = iscsi_logout_async(iscsi, held_cb, &a);
	else if (strcmp(kind, "drop") == 0) {
		iscsi_destroy_context(iscsi);
		scsi_free_scsi_task(t);
		printf("dropped\n");
		exit(0);
	} else
		usage();
	if (rc != 0) {
		fprintf(stderr, "pr_client: %s: %s\n", kind, iscsi_get_error(iscsi));
		exit(1);
	}
	if (service_until(&a.done, t0 + HELD_WAIT_MS))
		printf("answered %lld response %u\n", (long long)(now_ms() - t0),
		       a.status == SCSI_STATUS_GOOD ? a.response : 0xffffffffu);
	else
		printf("no answer\n");
	if (read_status == SCSI_STATUS_GOOD)
		printf("read ran\n");
	fflush(stdout);
	iscsi_destroy_context(iscsi);
	scsi_free_scsi_task(t);
	exit(0);
}

int main(int argc, char **argv)
{
	const char *initiator = DEFAULT_INITIATOR;
	uint32_t qualifier = (uint32_t)getpid() & 0xffff;
	const char *cmd, *wait_file = NULL;
	int opt, rc;

	while ((opt = getopt(argc, argv, "i:q:w:")) != -1) {
		if (opt == 'i')
			initiator = optarg;
		else if (opt == 'q')
			qualifier = (uint32_t)num(optarg);
		else if (opt == 'w')
			wait_file = optarg;
		else
			usage();
	}
	if (argc - optind < 2)
		usage();
	connect_or_die(initiator, qualifier, argv[optind]);
	if (wait_file) {
		printf("ready\n");
		fflush(stdout);
	}
	while (wait_file && access(wait_file, F_OK) != 0)
		usleep(1000);
	cmd = argv[optind + 1];
	argv += optind + 2;
	argc -= optind + 2;
	if (strcmp(cmd, "tur") == 0 && argc == 0)
		rc = cmd_tur();
	else if (strcmp(cmd, "register") == 0 && (argc == 1 || argc == 2))
		rc = cmd_prout(SCSI_PERSISTENT_RESERVE_REGISTER, 0, num(argv[0]), 0,
			       argc == 2 && strcmp(argv[1], "aptpl") == 0);
	else if (strcmp(cmd, "reserve") == 0 && argc == 2)
		rc = cmd_prout(SCSI_PERSISTENT_RESERVE_RESERVE, num(argv[0]), 0, (int)num(argv[1]),
			       false);
	else if (strcmp(cmd, "rekey") == 0 && argc == 2)
		rc = cmd_prout(SCSI_PERSISTENT_RESERVE_REGISTER, num(argv[0]), num(argv[1]), 0,
			       false);
	else if (strcmp(cmd, "preempt") == 0 && argc == 3)
		rc = cmd_prout(SCSI_PERSISTENT_RESERVE_PREEMPT, num(argv[0]), num(argv[1]),
			       (int)num(argv[2]), false);
	else if (strcmp(cmd, "readkeys") == 0 && argc == 0)
		rc = cmd_readkeys(false);
	else if (strcmp(cmd, "readgen") == 0 && argc == 0)
		rc = cmd_readkeys(true);
	else if (strcmp(cmd, "readres") == 0 && argc == 0)
		rc = cmd_readres();
	else if (strcmp(cmd, "write") == 0 && (argc == 3 || argc == 4))
		rc = cmd_write(num(argv[0]), num(argv[1]), (unsigned)num(argv[2]),
			       argc == 4 ? num(argv[3]) : 1);
	else if (strcmp(cmd, "verify") == 0 && argc == 3)
		rc = cmd_verify(num(argv[0]), num(argv[1]), (unsigned)num(argv[2]));
	else if (strcmp(cmd, "tur-after") == 0 && argc == 1) {
		clear_ua();
		printf("ready\n");
		fflush(stdout);
		while (access(argv[0], F_OK) != 0)
			usleep(20000);
		rc = cmd_tur();
	} else if (strcmp(cmd, "rtpg") == 0 && argc == 0)
		rc = cmd_rtpg();
	else if (strcmp(cmd, "stpg") == 0 && argc == 2)
		rc = cmd_stpg((unsigned)num(argv[0]), (unsigned)num(argv[1]));
	else if (strcmp(cmd, "ident") == 0 && argc == 0)
		rc = cmd_ident();
	else if (strcmp(cmd, "reserve6") == 0 && argc == 0)
		rc = cmd_spc2(true);
	else if (strcmp(cmd, "reserve6-hold") == 0 && argc == 1) {
		rc = cmd_spc2(true);
		fflush(stdout);
		while (access(argv[0], F_OK) != 0)
			usleep(20000);
	} else if (strcmp(cmd, "release6") == 0 && argc == 0)
		rc = cmd_spc2(false);
	else if (strcmp(cmd, "opsupport") == 0 && argc == 1)
		rc = cmd_opsupport((unsigned)num(argv[0]));
	else if (strcmp(cmd, "held") == 0 && argc == 1)
		rc = cmd_held(argv[0]);
	else
		usage();
	iscsi_logout_sync(iscsi);
	iscsi_destroy_context(iscsi);
	return rc;
}
