/* SPDX-License-Identifier: MIT */
/*
 * iscsi_readback - read a LUN through libiscsi and write the bytes to stdout or a file.
 *
 * A second, independent reader for the data-integrity tests: qemu-img writes an image through
 * its iscsi driver, this program reads it back with plain READ(16) commands, and the test
 * compares checksums. URL query arguments (header_digest=crc32c, target_user=...,
 * target_password=...) and "user%secret@" credentials are handled by libiscsi's URL parser.
 *
 * Usage: iscsi_readback [-i INITIATOR-IQN] [-o FILE] [-c CHUNK-BYTES] URL [BYTES]
 * Without BYTES the whole LUN is read (size from READ CAPACITY(16)).
 *        iscsi_readback -s LBA URL
 * sends one GET LBA STATUS (SBC-4 §5.17) from LBA instead and prints its descriptors, one
 * "LBA BLOCKS STATUS" line each (STATUS 0 mapped, 1 deallocated, 2 anchored).
 *        iscsi_readback -w LBA,BLOCKS,BYTE URL
 * sends one WRITE SAME(16) of a block filled with BYTE to BLOCKS blocks from LBA instead.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>

#define DEFAULT_INITIATOR "iqn.2026-11.org.libscsitgt:readback"
#define DEFAULT_CHUNK (1024u * 1024u)
#define MAX_CHUNK (16u * 1024u * 1024u)

static void usage(void)
{
	fprintf(stderr, "usage: iscsi_readback [-i INITIATOR-IQN] [-o FILE] [-c CHUNK-BYTES] URL "
			"[BYTES]\n       iscsi_readback [-i INITIATOR-IQN] -s LBA URL\n"
			"       iscsi_readback [-i INITIATOR-IQN] -w LBA,BLOCKS,BYTE URL\n");
	exit(2);
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;

	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno != 0 || end == s || *end != '\0' || s[0] == '-') {
		return -EINVAL;
	}
	*out = v;
	return 0;
}

static int write_all(FILE *f, const unsigned char *buf, size_t len)
{
	if (fwrite(buf, 1, len, f) != len) {
		return -EIO;
	}
	return 0;
}

/* READ CAPACITY(16) (SBC-4 §5.20): block size and number of blocks. */
static int read_capacity(struct iscsi_context *iscsi, int lun, uint32_t *block_size,
			 uint64_t *nblocks)
{
	struct scsi_task *task = iscsi_readcapacity16_sync(iscsi, lun);
	if (task == NULL || task->status != SCSI_STATUS_GOOD) {
		fprintf(stderr, "iscsi_readback: READ CAPACITY(16) failed: %s\n",
			iscsi_get_error(iscsi));
		if (task != NULL) {
			scsi_free_scsi_task(task);
		}
		return -EIO;
	}
	struct scsi_readcapacity16 *rc16 = scsi_datain_unmarshall(task);
	if (rc16 == NULL || rc16->block_length == 0) {
		fprintf(stderr, "iscsi_readback: cannot decode READ CAPACITY(16) data\n");
		scsi_free_scsi_task(task);
		return -EIO;
	}
	*block_size = rc16->block_length;
	*nblocks = rc16->returned_lba + 1;
	scsi_free_scsi_task(task);
	return 0;
}

static int read_lun(struct iscsi_context *iscsi, int lun, uint64_t bytes, uint32_t chunk, FILE *out)
{
	uint32_t bs;
	uint64_t nblocks;
	int ret = read_capacity(iscsi, lun, &bs, &nblocks);
	if (ret < 0) {
		return ret;
	}
	uint64_t capacity = nblocks * bs;
	if (bytes == UINT64_MAX) {
		bytes = capacity;
	}
	if (bytes > capacity) {
		fprintf(stderr, "iscsi_readback: %" PRIu64 " bytes asked, LUN has %" PRIu64 "\n",
			bytes, capacity);
		return -EINVAL;
	}
	if (bytes % bs != 0) {
		fprintf(stderr,
			"iscsi_readback: %" PRIu64 " is not a multiple of the block size %" PRIu32
			"\n",
			bytes, bs);
		return -EINVAL;
	}
	chunk -= chunk % bs;
	if (chunk == 0) {
		chunk = bs;
	}

	uint64_t done = 0;
	while (done < bytes) {
		uint32_t len = bytes - done < chunk ? (uint32_t)(bytes - done) : chunk;
		struct scsi_task *task =
			iscsi_read16_sync(iscsi, lun, done / bs, len, (int)bs, 0, 0, 0, 0, 0);
		if (task == NULL || task->status != SCSI_STATUS_GOOD) {
			fprintf(stderr, "iscsi_readback: READ(16) at LBA %" PRIu64 " failed: %s\n",
				done / bs, iscsi_get_error(iscsi));
			if (task != NULL) {
				scsi_free_scsi_task(task);
			}
			return -EIO;
		}
		if (task->datain.size < 0 || (uint32_t)task->datain.size != len) {
			fprintf(stderr,
				"iscsi_readback: READ(16) at LBA %" PRIu64 " returned %d bytes, "
				"expected %" PRIu32 "\n",
				done / bs, task->datain.size, len);
			scsi_free_scsi_task(task);
			return -EIO;
		}
		ret = write_all(out, task->datain.data, len);
		scsi_free_scsi_task(task);
		if (ret < 0) {
			fprintf(stderr, "iscsi_readback: write: %s\n", strerror(errno));
			return ret;
		}
		done += len;
	}
	return 0;
}

/* GET LBA STATUS from @lba: one line per descriptor on @out. */
static int lba_status(struct iscsi_context *iscsi, int lun, uint64_t lba, FILE *out)
{
	struct scsi_task *task = iscsi_get_lba_status_sync(iscsi, lun, lba, 65536);
	struct scsi_get_lba_status *st;

	if (task == NULL || task->status != SCSI_STATUS_GOOD) {
		fprintf(stderr, "iscsi_readback: GET LBA STATUS failed: %s\n",
			iscsi_get_error(iscsi));
		if (task != NULL) {
			scsi_free_scsi_task(task);
		}
		return -EIO;
	}
	st = scsi_datain_unmarshall(task);
	if (st == NULL) {
		fprintf(stderr, "iscsi_readback: cannot decode GET LBA STATUS data\n");
		scsi_free_scsi_task(task);
		return -EIO;
	}
	for (uint32_t i = 0; i < st->num_descriptors; i++) {
		fprintf(out, "%" PRIu64 " %" PRIu32 " %d\n", st->descriptors[i].lba,
			st->descriptors[i].num_blocks, (int)st->descriptors[i].provisioning);
	}
	scsi_free_scsi_task(task);
	return 0;
}

/* WRITE SAME(16) of one block of @byte over @n blocks from @lba (SBC-4 §5.51). */
static int write_same(struct iscsi_context *iscsi, int lun, uint64_t lba, uint32_t n, int byte)
{
	uint32_t bs;
	uint64_t nblocks;
	unsigned char *blk;
	struct scsi_task *task;
	int ret = 0;

	if (read_capacity(iscsi, lun, &bs, &nblocks) < 0) {
		return -EIO;
	}
	blk = malloc(bs);
	if (blk == NULL) {
		return -ENOMEM;
	}
	memset(blk, byte, bs);
	task = iscsi_writesame16_sync(iscsi, lun, lba, blk, bs, n, 0, 0, 0, 0);
	if (task == NULL || task->status != SCSI_STATUS_GOOD) {
		fprintf(stderr, "iscsi_readback: WRITE SAME(16) failed: %s\n",
			iscsi_get_error(iscsi));
		ret = -EIO;
	}
	if (task != NULL) {
		scsi_free_scsi_task(task);
	}
	free(blk);
	return ret;
}

int main(int argc, char **argv)
{
	const char *initiator = DEFAULT_INITIATOR;
	const char *outpath = NULL;
	uint64_t chunk = DEFAULT_CHUNK;
	uint64_t bytes = UINT64_MAX;
	uint64_t status_lba = UINT64_MAX;
	unsigned long long ws_lba = 0;
	unsigned int ws_n = 0, ws_byte = 0;
	int opt;

	while ((opt = getopt(argc, argv, "i:o:c:s:w:h")) != -1) {
		switch (opt) {
		case 'w':
			if (sscanf(optarg, "%llu,%u,%u", &ws_lba, &ws_n, &ws_byte) != 3 ||
			    ws_n == 0 || ws_byte > 255) {
				usage();
			}
			break;
		case 's':
			if (parse_u64(optarg, &status_lba) < 0 || status_lba == UINT64_MAX) {
				usage();
			}
			break;
		case 'i':
			initiator = optarg;
			break;
		case 'o':
			outpath = optarg;
			break;
		case 'c':
			if (parse_u64(optarg, &chunk) < 0 || chunk == 0 || chunk > MAX_CHUNK) {
				usage();
			}
			break;
		default:
			usage();
		}
	}
	if (argc - optind < 1 || argc - optind > 2) {
		usage();
	}
	const char *url = argv[optind];
	if (argc - optind == 2 && parse_u64(argv[optind + 1], &bytes) < 0) {
		usage();
	}

	FILE *out = stdout;
	if (outpath != NULL) {
		out = fopen(outpath, "wb");
		if (out == NULL) {
			fprintf(stderr, "iscsi_readback: %s: %s\n", outpath, strerror(errno));
			return 1;
		}
	}

	struct iscsi_context *iscsi = iscsi_create_context(initiator);
	if (iscsi == NULL) {
		fprintf(stderr, "iscsi_readback: cannot create an iSCSI context\n");
		return 1;
	}
	/* Parse with the context: URL arguments such as header_digest apply to it. */
	struct iscsi_url *iurl = iscsi_parse_full_url(iscsi, url);
	if (iurl == NULL) {
		fprintf(stderr, "iscsi_readback: bad URL %s: %s\n", url, iscsi_get_error(iscsi));
		iscsi_destroy_context(iscsi);
		return 1;
	}
	iscsi_set_targetname(iscsi, iurl->target);
	iscsi_set_session_type(iscsi, ISCSI_SESSION_NORMAL);
	/* A lost connection must fail the read, not be papered over by a silent re-login. */
	iscsi_set_noautoreconnect(iscsi, 1);

	int ret = -EIO;
	if (iscsi_full_connect_sync(iscsi, iurl->portal, iurl->lun) != 0) {
		fprintf(stderr, "iscsi_readback: login to %s failed: %s\n", iurl->portal,
			iscsi_get_error(iscsi));
	} else {
		if (ws_n) {
			ret = write_same(iscsi, iurl->lun, ws_lba, ws_n, (int)ws_byte);
		} else if (status_lba != UINT64_MAX) {
			ret = lba_status(iscsi, iurl->lun, status_lba, out);
		} else {
			ret = read_lun(iscsi, iurl->lun, bytes, (uint32_t)chunk, out);
		}
		iscsi_logout_sync(iscsi);
	}
	iscsi_destroy_url(iurl);
	iscsi_destroy_context(iscsi);

	if (fflush(out) != 0 || (out != stdout && fclose(out) != 0)) {
		fprintf(stderr, "iscsi_readback: cannot write the output: %s\n", strerror(errno));
		ret = -EIO;
	}
	return ret < 0 ? 1 : 0;
}
