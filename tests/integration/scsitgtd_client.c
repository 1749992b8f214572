/* SPDX-License-Identifier: MIT */
/*
 * scsitgtd_client [-i IQN] URL - a libiscsi initiator that stays logged in while the test
 * script changes scsitgtd's configuration (tests/integration/scsitgtd.sh).
 *
 * It logs in to the target of URL (iscsi://[user%secret@]host:port/IQN/LUN), prints "ready",
 * then reads one command per line from stdin and answers each with one line on stdout:
 *
 *   tur LUN             TEST UNIT READY         -> "status 0" | "status 2 sense K/ASCQ"
 *   luns                REPORT LUNS             -> "luns 0 1 2" | "status ..."
 *   cap LUN             READ CAPACITY (16)      -> "cap BLOCKS BLOCK_SIZE" | "status ..."
 *   rtpg LUN            REPORT TARGET PORT GROUPS -> "groups ID:STATE ..." | "status ..."
 *   register LUN KEY    PERSISTENT RESERVE OUT REGISTER with APTPL -> "status ..."
 *   write LUN LBA N     WRITE (16) of N blocks of a pattern -> "status ..."
 *   read LUN LBA N      READ (16), checks the pattern -> "status 0" | "status ..." | "mismatch"
 *   vpd LUN PAGE        INQUIRY with EVPD of that page -> "vpd HEX" (the page's bytes) |
 *                       "status ..."
 *   wait_logout SECS    services the connection without commands until the session ends
 *                       (the target asked for a logout, or closed it: scsitgtctl kick) ->
 *                       "logged_out" | "still_logged_in" after SECS seconds
 *   quit                logs out                -> "bye"
 *
 * K is the sense key in hex, ASCQ the additional sense code and qualifier as 4 hex digits
 * (3f0e: REPORTED LUNS DATA HAS CHANGED). The client never retries on a unit attention:
 * seeing them is the point.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <poll.h>
#include <string.h>
#include <time.h>

#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>

#define DEFAULT_INITIATOR "iqn.2026-11.org.libscsitgt:scsitgtd-client"

static struct iscsi_context *iscsi;

/* Print the outcome of @task; returns whether it was GOOD. Frees nothing. */
static int print_status(struct scsi_task *task)
{
	if (task == NULL) {
		printf("error %s\n", iscsi_get_error(iscsi));
		return 0;
	}
	if (task->status == SCSI_STATUS_GOOD)
		return 1;
	if (task->status == SCSI_STATUS_CHECK_CONDITION)
		printf("status %d sense %x/%04x\n", task->status, task->sense.key,
		       task->sense.ascq & 0xffff);
	else
		printf("status %d\n", task->status);
	return 0;
}

/*
 * Let libiscsi read what the target sends (an Async Message asking for a logout, RFC 7143
 * §11.9.1, then the connection's end) without reconnecting, until the session is gone or
 * @secs pass.
 */
static void cmd_wait_logout(unsigned long long secs)
{
	struct timespec now, end;

	iscsi_set_noautoreconnect(iscsi, 1);
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += (time_t)secs;
	for (;;) {
		struct pollfd pfd = { .fd = iscsi_get_fd(iscsi),
				      .events = iscsi_which_events(iscsi) };

		if (!iscsi_is_logged_in(iscsi) || pfd.fd < 0) {
			printf("logged_out\n");
			return;
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > end.tv_sec ||
		    (now.tv_sec == end.tv_sec && now.tv_nsec >= end.tv_nsec)) {
			printf("still_logged_in\n");
			return;
		}
		if (poll(&pfd, 1, 100) < 0)
			continue;
		if (iscsi_service(iscsi, pfd.revents) < 0) {
			printf("logged_out\n");
			return;
		}
	}
}

static void fill(unsigned char *buf, size_t len, uint64_t lba)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (unsigned char)(lba * 131 + i * 7 + (i >> 9));
}

static void cmd_luns(void)
{
	struct scsi_task *t = iscsi_reportluns_sync(iscsi, 0, 16384);
	struct scsi_reportluns_list *list;

	if (print_status(t)) {
		list = scsi_datain_unmarshall(t);
		if (list == NULL) {
			printf("error unmarshall\n");
		} else {
			printf("luns");
			for (uint32_t i = 0; i < list->num; i++)
				printf(" %u", list->luns[i] & 0x3fff);
			printf("\n");
		}
	}
	if (t)
		scsi_free_scsi_task(t);
}

static void cmd_vpd(int lun, int page)
{
	struct scsi_task *t = iscsi_inquiry_sync(iscsi, lun, 1, page, 1024);

	if (print_status(t)) {
		printf("vpd ");
		for (int i = 0; i < t->datain.size; i++)
			printf("%02x", t->datain.data[i]);
		printf("\n");
	}
	if (t)
		scsi_free_scsi_task(t);
}

static void cmd_cap(int lun)
{
	struct scsi_task *t = iscsi_readcapacity16_sync(iscsi, lun);
	struct scsi_readcapacity16 *rc;

	if (print_status(t)) {
		rc = scsi_datain_unmarshall(t);
		if (rc == NULL)
			printf("error unmarshall\n");
		else
			printf("cap %" PRIu64 " %u\n", rc->returned_lba + 1, rc->block_length);
	}
	if (t)
		scsi_free_scsi_task(t);
}

/* REPORT TARGET PORT GROUPS (SPC-5 §6.36): MAINTENANCE IN, service action 0Ah. */
static void cmd_rtpg(int lun)
{
	unsigned char cdb[12] = { 0xa3, 0x0a, 0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0 };
	struct scsi_task *t = scsi_create_task(sizeof(cdb), cdb, SCSI_XFER_READ, 4096);
	const unsigned char *d;
	uint32_t len, off;

	if (t == NULL) {
		printf("error task\n");
		return;
	}
	if (iscsi_scsi_command_sync(iscsi, lun, t, NULL) == NULL) {
		printf("error %s\n", iscsi_get_error(iscsi));
		scsi_free_scsi_task(t);
		return;
	}
	if (print_status(t)) {
		d = t->datain.data;
		len = t->datain.size >= 4 ? ((uint32_t)d[0] << 24 | d[1] << 16 | d[2] << 8 | d[3]) :
					    0;
		printf("groups");
		/* Descriptors of 8 bytes plus 4 per port (SPC-5 Table 240). */
		for (off = 4; off + 8 <= len + 4 && off + 8 <= (uint32_t)t->datain.size;) {
			printf(" %u:%x", d[off + 2] << 8 | d[off + 3], d[off] & 0x0f);
			off += 8 + 4u * d[off + 7];
		}
		printf("\n");
	}
	scsi_free_scsi_task(t);
}

static void cmd_register(int lun, uint64_t key)
{
	struct scsi_persistent_reserve_out_basic p;
	struct scsi_task *t;

	memset(&p, 0, sizeof(p));
	p.service_action_reservation_key = key;
	p.aptpl = 1;
	t = iscsi_persistent_reserve_out_sync(iscsi, lun, SCSI_PERSISTENT_RESERVE_REGISTER, 0, 0,
					      &p);
	if (print_status(t))
		printf("status 0\n");
	if (t)
		scsi_free_scsi_task(t);
}

static void cmd_rw(int write, int lun, uint64_t lba, uint32_t n)
{
	size_t len = (size_t)n * 512;
	unsigned char *buf = malloc(len ? len : 1), *want = malloc(len ? len : 1);
	struct scsi_task *t;

	if (buf == NULL || want == NULL) {
		printf("error nomem\n");
		free(buf);
		free(want);
		return;
	}
	fill(want, len, lba);
	if (write)
		t = iscsi_write16_sync(iscsi, lun, lba, want, (uint32_t)len, 512, 0, 0, 0, 0, 0);
	else
		t = iscsi_read16_sync(iscsi, lun, lba, (uint32_t)len, 512, 0, 0, 0, 0, 0);
	if (print_status(t)) {
		if (!write && (t->datain.size != (int)len || memcmp(t->datain.data, want, len)))
			printf("mismatch\n");
		else
			printf("status 0\n");
	}
	if (t)
		scsi_free_scsi_task(t);
	free(buf);
	free(want);
}

int main(int argc, char **argv)
{
	const char *initiator = DEFAULT_INITIATOR;
	struct iscsi_url *u;
	char line[256];
	int ai = 1;

	if (argc == 4 && !strcmp(argv[1], "-i")) {
		initiator = argv[2];
		ai = 3;
	}
	if (ai != argc - 1) {
		fprintf(stderr, "usage: scsitgtd_client [-i IQN] URL\n");
		return 2;
	}
	iscsi = iscsi_create_context(initiator);
	if (iscsi == NULL)
		return 1;
	u = iscsi_parse_full_url(iscsi, argv[ai]);
	if (u == NULL) {
		fprintf(stderr, "scsitgtd_client: bad URL: %s\n", iscsi_get_error(iscsi));
		iscsi_destroy_context(iscsi);
		return 1;
	}
	iscsi_set_targetname(iscsi, u->target);
	iscsi_set_session_type(iscsi, ISCSI_SESSION_NORMAL);
	iscsi_set_header_digest(iscsi, ISCSI_HEADER_DIGEST_NONE_CRC32C);
	if (u->user[0])
		iscsi_set_initiator_username_pwd(iscsi, u->user, u->passwd);
	if (iscsi_full_connect_sync(iscsi, u->portal, u->lun) != 0) {
		fprintf(stderr, "scsitgtd_client: login: %s\n", iscsi_get_error(iscsi));
		/* Flushed and freed: under LeakSanitizer a leak here aborts at exit, and a
		 * buffered line written to a pipe would be lost with it. */
		printf("login failed\n");
		fflush(stdout);
		iscsi_destroy_url(u);
		iscsi_destroy_context(iscsi);
		return 1;
	}
	iscsi_destroy_url(u);
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready\n");
	while (fgets(line, sizeof(line), stdin)) {
		char cmd[16];
		unsigned long long a = 0, b = 0, c = 0;
		int n = sscanf(line, "%15s %llu %llu %llu", cmd, &a, &b, &c);

		if (n < 1)
			continue;
		if (!strcmp(cmd, "tur") && n == 2) {
			struct scsi_task *t = iscsi_testunitready_sync(iscsi, (int)a);

			if (print_status(t))
				printf("status 0\n");
			if (t)
				scsi_free_scsi_task(t);
		} else if (!strcmp(cmd, "luns")) {
			cmd_luns();
		} else if (!strcmp(cmd, "cap") && n == 2) {
			cmd_cap((int)a);
		} else if (!strcmp(cmd, "vpd") && n == 3 && b <= 255) {
			cmd_vpd((int)a, (int)b);
		} else if (!strcmp(cmd, "rtpg") && n == 2) {
			cmd_rtpg((int)a);
		} else if (!strcmp(cmd, "register") && n == 3) {
			cmd_register((int)a, b);
		} else if ((!strcmp(cmd, "write") || !strcmp(cmd, "read")) && n == 4 && c <= 256) {
			cmd_rw(cmd[0] == 'w', (int)a, b, (uint32_t)c);
		} else if (!strcmp(cmd, "wait_logout") && n == 2) {
			cmd_wait_logout(a);
		} else if (!strcmp(cmd, "quit")) {
			iscsi_logout_sync(iscsi);
			printf("bye\n");
			break;
		} else {
			printf("error unknown command\n");
		}
	}
	iscsi_destroy_context(iscsi);
	return 0;
}
