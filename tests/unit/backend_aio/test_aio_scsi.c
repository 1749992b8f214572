/* SPDX-License-Identifier: MIT */
/*
 * The aio backend under SCSI commands (tests/support loop fabric): READ/WRITE with FUA,
 * SYNCHRONIZE CACHE, READ CAPACITY (16) provisioning bits, and a medium that fails (the file
 * shrank from outside) reporting MEDIUM ERROR while another LUN of the target carries on, and
 * online resize in one step (scsitgt_lun_resize_medium()).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_util.h"

#include "aio_test_util.h"
#include "backend/aio_hooks.h"
#include "core/scsi_spec.h"
#include "libscsitgt/backend_aio.h"

#define AIO_LUN 0
#define RAM_LUN 1
#define FILE_BYTES (1024 * 1024)

struct sctx {
	struct loop_fabric *lf;
	char *path;
	void *bctx;
	struct lf_result r;
	uint8_t cdb[CDB_BUF];
};

static int setup(void **state)
{
	struct sctx *s = calloc(1, sizeof(*s));
	struct scsitgt_backend_aio_opts ao;
	struct scsitgt_lun_opts lo;
	struct scsitgt_lun *lun;
	void *ram;

	assert_non_null(s);
	assert_int_equal(loop_fabric_create(&s->lf, NULL), 0);
	s->path = aio_test_file("/var/tmp", FILE_BYTES);
	assert_non_null(s->path);
	aio_test_opts(&ao, &s->lf->loop, s->path);
	assert_int_equal(scsitgt_backend_aio_create(&s->bctx, &ao), 0);
	scsitgt_lun_opts_init(&lo, sizeof(lo));
	lo.id = AIO_LUN;
	lo.block_size = 512;
	lo.flags = SCSITGT_LUN_WRITE_CACHE;
	lo.backend = scsitgt_backend_aio_ops();
	lo.backend_ctx = s->bctx;
	assert_int_equal(scsitgt_lun_create(&lun, s->lf->tgt, &lo), 0);

	assert_int_equal(scsitgt_backend_ram_create(&ram), 0);
	lo.id = RAM_LUN;
	lo.num_blocks = 2048;
	lo.flags = 0;
	lo.backend = scsitgt_backend_ram_ops();
	lo.backend_ctx = ram;
	assert_int_equal(scsitgt_lun_create(&lun, s->lf->tgt, &lo), 0);
	*state = s;
	return 0;
}

static int teardown(void **state)
{
	struct sctx *s = *state;

	lf_result_clear(&s->r);
	loop_fabric_destroy(s->lf);
	aio_test_file_remove(s->path);
	free(s);
	return 0;
}

static struct lf_result *run(struct sctx *s, uint64_t lun, size_t len, const void *dout,
			     size_t dout_len)
{
	lf_result_clear(&s->r);
	loop_fabric_run(s->lf, lun, s->cdb, len, dout, dout_len, &s->r);
	return &s->r;
}

static void test_rw_fua_sync(void **state)
{
	struct sctx *s = *state;
	uint8_t data[8 * 512];
	struct lf_result *r;

	aio_test_pattern(data, sizeof(data), 21);
	/* WRITE (10) with FUA (SBC-4 §5.39: byte 1 bit 3). */
	r = run(s, AIO_LUN, cdb_rw(s->cdb, SBC_WRITE_10, 16, 8, 0x08), data, sizeof(data));
	assert_good(r);
	assert_true(aio_test_file_equals(s->path, 16 * 512, data, sizeof(data)));
	r = run(s, AIO_LUN, cdb_rw(s->cdb, SBC_READ_10, 16, 8, 0), NULL, 0);
	assert_good(r);
	assert_int_equal(r->data_len, sizeof(data));
	assert_memory_equal(r->data, data, sizeof(data));
	/* Plain write, then SYNCHRONIZE CACHE (10) over the whole medium. */
	aio_test_pattern(data, sizeof(data), 22);
	r = run(s, AIO_LUN, cdb_rw(s->cdb, SBC_WRITE_10, 100, 8, 0), data, sizeof(data));
	assert_good(r);
	r = run(s, AIO_LUN, cdb_sync_cache10(s->cdb, 0, 0, false), NULL, 0);
	assert_good(r);
	assert_true(aio_test_file_equals(s->path, 100 * 512, data, sizeof(data)));
}

/*
 * SBC-4 READ (10) FUA on a file LUN with a write cache (page cache): the cached blocks are
 * written back (a flush the backend issues) before the read, and the read is no FUA write;
 * a READ without FUA costs no flush (reviewg F1).
 */
static void test_read_fua_flushes(void **state)
{
	struct sctx *s = *state;
	uint8_t data[8 * 512];
	unsigned long syncs, dsync;
	struct lf_result *r;

	aio_test_pattern(data, sizeof(data), 23);
	r = run(s, AIO_LUN, cdb_rw(s->cdb, SBC_WRITE_10, 200, 8, 0), data, sizeof(data));
	assert_good(r);
	syncs = scsitgt__backend_aio_syncs(s->bctx);
	dsync = scsitgt__backend_aio_dsync_writes(s->bctx);
	r = run(s, AIO_LUN, cdb_rw(s->cdb, SBC_READ_10, 200, 8, 0), NULL, 0);
	assert_good(r);
	assert_int_equal(scsitgt__backend_aio_syncs(s->bctx), syncs);
	r = run(s, AIO_LUN, cdb_rw(s->cdb, SBC_READ_10, 200, 8, 0x08), NULL, 0);
	assert_good(r);
	assert_int_equal(r->data_len, sizeof(data));
	assert_memory_equal(r->data, data, sizeof(data));
	assert_int_equal(scsitgt__backend_aio_syncs(s->bctx) - syncs, 1);
	assert_int_equal(scsitgt__backend_aio_dsync_writes(s->bctx), dsync);
}

static void test_capacity(void **state)
{
	struct sctx *s = *state;
	struct lf_result *r;

	r = run(s, AIO_LUN, cdb_read_capacity16(s->cdb, 32), NULL, 0);
	assert_good(r);
	/* SBC-4 §5.20.2: RETURNED LOGICAL BLOCK ADDRESS is the last LBA. */
	assert_int_equal(get_be64(&r->data[0]), FILE_BYTES / 512 - 1);
	assert_int_equal(get_be32(&r->data[8]), 512);
}

/* The file shrinks under the LUN: MEDIUM ERROR for what is gone, the rest still works. */
static void test_medium_error(void **state)
{
	struct sctx *s = *state;
	uint8_t data[4 * 512];
	struct lf_result *r;

	assert_int_equal(truncate(s->path, FILE_BYTES / 4), 0);
	r = run(s, AIO_LUN, cdb_rw(s->cdb, SBC_READ_10, 1000, 4, 0), NULL, 0);
	/* SPC-5 sense key MEDIUM ERROR, UNRECOVERED READ ERROR. */
	assert_sense(r, 0x3, 0x11, 0x00);
	/* SBC-4 §4.18.1: INFORMATION holds the first LBA in error, here the new end of the
	 * file for a read that starts two blocks before it; the two blocks the file still has
	 * come with the CHECK CONDITION (scsitgt_io_complete_partial()). */
	aio_test_pattern(data, sizeof(data), 24);
	r = run(s, AIO_LUN, cdb_rw(s->cdb, SBC_WRITE_10, FILE_BYTES / 4 / 512 - 2, 2, 0), data,
		2 * 512);
	assert_good(r);
	r = run(s, AIO_LUN, cdb_rw(s->cdb, SBC_READ_10, FILE_BYTES / 4 / 512 - 2, 4, 0), NULL, 0);
	assert_sense_data(r, 0x3, 0x11, 0x00, 2 * 512);
	assert_memory_equal(r->data, data, 2 * 512);
	assert_int_equal(r->sense[0] & 0x80, 0x80);
	assert_int_equal(get_be32(&r->sense[3]), FILE_BYTES / 4 / 512);
	r = run(s, AIO_LUN, cdb_rw(s->cdb, SBC_READ_10, 0, 4, 0), NULL, 0);
	assert_good(r);
	/* Another LUN of the target does not care. */
	aio_test_pattern(data, sizeof(data), 23);
	r = run(s, RAM_LUN, cdb_rw(s->cdb, SBC_WRITE_10, 7, 4, 0), data, sizeof(data));
	assert_good(r);
	r = run(s, RAM_LUN, cdb_rw(s->cdb, SBC_READ_10, 7, 4, 0), NULL, 0);
	assert_good(r);
	assert_memory_equal(r->data, data, sizeof(data));
}

static off_t file_size(const char *path)
{
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	return st.st_size;
}

/* scsitgt_lun_resize_medium(): the file resized outside and read back, resized through the
 * backend, a shrink below the blocks in use refused either way; CAPACITY DATA HAS CHANGED. */
static void test_resize_medium(void **state)
{
	struct sctx *s = *state;
	struct scsitgt_lun *lun = scsitgt_target_get_lun(s->lf->tgt, AIO_LUN);
	struct lf_result *r;
	uint64_t n = 0;

	/* Grown with truncate(1): asked for, the LUN adopts it; the nexus hears of it once. */
	assert_int_equal(truncate(s->path, 2 * FILE_BYTES), 0);
	assert_int_equal(scsitgt_lun_resize_medium(lun, 0, 0, &n), 0);
	assert_int_equal(n, 2 * FILE_BYTES / 512);
	r = run(s, AIO_LUN, cdb_read_capacity16(s->cdb, 32), NULL, 0);
	assert_sense(r, SENSE_UNIT_ATTENTION, 0x2a, 0x09);
	r = run(s, AIO_LUN, cdb_read_capacity16(s->cdb, 32), NULL, 0);
	assert_good(r);
	assert_int_equal(get_be64(&r->data[0]), 2 * FILE_BYTES / 512 - 1);

	/* A shrink below the blocks in use is refused before the file is touched. */
	assert_int_equal(scsitgt_lun_resize_medium(lun, 1024, 2048, &n), -EBUSY);
	assert_int_equal(n, 2 * FILE_BYTES / 512);
	assert_int_equal(file_size(s->path), 2 * FILE_BYTES);

	/* Through the backend: the file is cut to the new size, the LUN follows. */
	assert_int_equal(scsitgt_lun_resize_medium(lun, 3072, 2048, &n), 0);
	assert_int_equal(n, 3072);
	assert_int_equal(file_size(s->path), 3072 * 512);
	r = run(s, AIO_LUN, cdb_read_capacity16(s->cdb, 32), NULL, 0);
	assert_sense(r, SENSE_UNIT_ATTENTION, 0x2a, 0x09);
	r = run(s, AIO_LUN, cdb_read_capacity16(s->cdb, 32), NULL, 0);
	assert_good(r);
	assert_int_equal(get_be64(&r->data[0]), 3071);
	/* The same size again: nothing to tell. */
	assert_int_equal(scsitgt_lun_resize_medium(lun, 3072, 0, NULL), 0);
	r = run(s, AIO_LUN, cdb_read_capacity16(s->cdb, 32), NULL, 0);
	assert_good(r);

	/* Shrunk outside below what is in use: the LUN keeps its capacity, no attention. */
	assert_int_equal(truncate(s->path, FILE_BYTES / 2), 0);
	assert_int_equal(scsitgt_lun_resize_medium(lun, 0, 2048, &n), -EBUSY);
	assert_int_equal(n, 3072);
	r = run(s, AIO_LUN, cdb_read_capacity16(s->cdb, 32), NULL, 0);
	assert_good(r);
	assert_int_equal(get_be64(&r->data[0]), 3071);

	/* The RAM backend has neither op. */
	lun = scsitgt_target_get_lun(s->lf->tgt, RAM_LUN);
	assert_int_equal(scsitgt_lun_resize_medium(lun, 0, 0, NULL), -ENOTSUP);
	assert_int_equal(scsitgt_lun_resize_medium(lun, 4096, 0, NULL), -ENOTSUP);
	assert_int_equal(scsitgt_lun_resize_medium(NULL, 0, 0, NULL), -EINVAL);
}

/* A LUN of the first PART_BLOCKS blocks of its file: read back, it keeps to them (reviewg F2). */
#define PART_LUN 2
#define PART_BLOCKS 1000

/* Another aio LUN of the target over @path: 512-byte blocks, @num_blocks (0: the medium's). */
static struct scsitgt_lun *aio_lun_add(struct sctx *s, uint64_t id, const char *path,
				       uint64_t num_blocks, uint32_t flags)
{
	struct scsitgt_backend_aio_opts ao;
	struct scsitgt_lun_opts lo;
	struct scsitgt_lun *lun;
	void *bctx;

	aio_test_opts(&ao, &s->lf->loop, path);
	assert_int_equal(scsitgt_backend_aio_create(&bctx, &ao), 0);
	scsitgt_lun_opts_init(&lo, sizeof(lo));
	lo.id = id;
	lo.block_size = 512;
	lo.num_blocks = num_blocks;
	lo.flags = flags;
	lo.backend = scsitgt_backend_aio_ops();
	lo.backend_ctx = bctx;
	assert_int_equal(scsitgt_lun_create(&lun, s->lf->tgt, &lo), 0);
	return lun;
}

static void assert_last_lba(struct sctx *s, uint64_t last)
{
	struct lf_result *r = run(s, PART_LUN, cdb_read_capacity16(s->cdb, 32), NULL, 0);

	if (r->status != 0) {
		/* CAPACITY DATA HAS CHANGED, once. */
		assert_sense(r, SENSE_UNIT_ATTENTION, 0x2a, 0x09);
		r = run(s, PART_LUN, cdb_read_capacity16(s->cdb, 32), NULL, 0);
	}
	assert_good(r);
	assert_int_equal(get_be64(&r->data[0]), last);
}

/*
 * A LUN created smaller than its file: reading the size back never exposes the rest of the
 * file (the host's trailer), follows a shrink and grows back up to its size only; a size asked
 * for within the file moves the limit without touching the file, past its end grows the file.
 * A medium that shrank under a capacity the core kept (-EBUSY) answers MEDIUM ERROR, which
 * READ CAPACITY does not contradict, and a write there does not grow the file again.
 */
static void test_resize_medium_part(void **state)
{
	struct sctx *s = *state;
	char *path = aio_test_file("/var/tmp", FILE_BYTES);
	struct scsitgt_lun *lun;
	uint8_t data[4 * 512];
	struct lf_result *r;
	uint64_t n = 0;

	assert_non_null(path);
	lun = aio_lun_add(s, PART_LUN, path, PART_BLOCKS, 0);
	assert_last_lba(s, PART_BLOCKS - 1);
	/* Read back: the file holds 2048 blocks, the LUN stays at 1000. */
	assert_int_equal(scsitgt_lun_resize_medium(lun, 0, 0, &n), 0);
	assert_int_equal(n, PART_BLOCKS);
	assert_last_lba(s, PART_BLOCKS - 1);
	/* The file grows: still 1000. */
	assert_int_equal(truncate(path, 2 * FILE_BYTES), 0);
	assert_int_equal(scsitgt_lun_resize_medium(lun, 0, 0, &n), 0);
	assert_int_equal(n, PART_BLOCKS);
	r = run(s, PART_LUN, cdb_rw(s->cdb, SBC_READ_16, PART_BLOCKS, 1, 0), NULL, 0);
	assert_sense(r, SENSE_ILLEGAL_REQUEST, 0x21, 0x00);

	/* Shrunk below the blocks in use: the capacity is kept, what is gone is a medium
	 * error (the read straddling the end brings the blocks still there). */
	assert_int_equal(truncate(path, 800 * 512), 0);
	assert_int_equal(scsitgt_lun_resize_medium(lun, 0, 900, &n), -EBUSY);
	assert_int_equal(n, PART_BLOCKS);
	assert_last_lba(s, PART_BLOCKS - 1);
	r = run(s, PART_LUN, cdb_rw(s->cdb, SBC_READ_10, 900, 4, 0), NULL, 0);
	assert_sense(r, 0x3, 0x11, 0x00);
	aio_test_pattern(data, sizeof(data), 25);
	r = run(s, PART_LUN, cdb_rw(s->cdb, SBC_WRITE_10, 900, 4, 0), data, sizeof(data));
	assert_sense(r, 0x3, 0x0c, 0x00);
	assert_int_equal(file_size(path), 800 * 512);
	r = run(s, PART_LUN, cdb_rw(s->cdb, SBC_READ_10, 796, 4, 0), NULL, 0);
	assert_good(r);

	/* Grown back: up to the LUN's size again, not past it. */
	assert_int_equal(truncate(path, 2 * FILE_BYTES), 0);
	assert_int_equal(scsitgt_lun_resize_medium(lun, 0, 0, &n), 0);
	assert_int_equal(n, PART_BLOCKS);
	r = run(s, PART_LUN, cdb_rw(s->cdb, SBC_WRITE_10, 900, 4, 0), data, sizeof(data));
	assert_good(r);

	/* Asked for within the file: the limit moves, the file stays. */
	assert_int_equal(scsitgt_lun_resize_medium(lun, 1500, 0, &n), 0);
	assert_int_equal(n, 1500);
	assert_int_equal(file_size(path), 2 * FILE_BYTES);
	assert_last_lba(s, 1499);
	assert_int_equal(truncate(path, 3 * FILE_BYTES), 0);
	assert_int_equal(scsitgt_lun_resize_medium(lun, 0, 0, &n), 0);
	assert_int_equal(n, 1500);
	/* Past the file's end: the file grows, and the LUN is all of it from then on. */
	assert_int_equal(scsitgt_lun_resize_medium(lun, 7000, 0, &n), 0);
	assert_int_equal(n, 7000);
	assert_int_equal(file_size(path), 7000 * 512);
	assert_int_equal(truncate(path, 8000 * 512), 0);
	assert_int_equal(scsitgt_lun_resize_medium(lun, 0, 0, &n), 0);
	assert_int_equal(n, 8000);
	assert_last_lba(s, 7999);
	aio_test_file_remove(path);
}

/* READ CAPACITY (16) byte 14 (LBPME 0x80, LBPRZ 0x40) and VPD B2h byte 5 LBPRZ field and
 * byte 6 PROVISIONING TYPE of a LUN. */
static void provisioning_bits(struct sctx *s, uint64_t lun, uint8_t *rc16_b14, uint8_t *b2_lbprz,
			      uint8_t *b2_type)
{
	struct lf_result *r = run(s, lun, cdb_read_capacity16(s->cdb, 32), NULL, 0);

	if (r->status != 0) {
		/* REPORTED LUNS DATA HAS CHANGED or the like, once. */
		r = run(s, lun, cdb_read_capacity16(s->cdb, 32), NULL, 0);
	}
	assert_good(r);
	*rc16_b14 = r->data[14] & 0xc0;
	r = run(s, lun, cdb_inquiry(s->cdb, true, 0xb2, 64), NULL, 0);
	assert_good(r);
	*b2_lbprz = (r->data[5] >> 2) & 7;
	*b2_type = r->data[6] & 7;
}

/* The loop device and backing file of test_blockdev_thin_lbprz, released after the target
 * (which closes the LUN) even when an assertion fails half-way. */
static char loop_dev[64];
static char *loop_backing;

static int teardown_loop(void **state)
{
	char cmdline[128];

	teardown(state);
	if (loop_dev[0] != '\0') {
		snprintf(cmdline, sizeof(cmdline), "losetup -d '%s'", loop_dev);
		(void)system(cmdline);
		loop_dev[0] = '\0';
	}
	aio_test_file_remove(loop_backing);
	loop_backing = NULL;
	return 0;
}

static void lun_gone(void *arg, int status)
{
	(void)status;
	*(bool *)arg = true;
}

/*
 * A thin LUN on a block device does not promise zeros from discarded blocks (LBPRZ 0 in READ
 * CAPACITY (16) and VPD B2h), a thin LUN on a file does (punched holes read as zeros; reviewg
 * C6). The device is a loop device over a scratch file: root and losetup, skipped otherwise.
 */
static void test_blockdev_thin_lbprz(void **state)
{
	struct sctx *s = *state;
	struct scsitgt_lun *lun;
	uint8_t b14, lbprz, type;
	char cmdline[256];
	bool gone = false;
	FILE *p;

	loop_backing = aio_test_file("/var/tmp", 8 * 1024 * 1024);
	assert_non_null(loop_backing);
	snprintf(cmdline, sizeof(cmdline), "losetup -f --show '%s' 2>/dev/null", loop_backing);
	p = geteuid() == 0 ? popen(cmdline, "r") : NULL;
	if (p != NULL) {
		if (fgets(loop_dev, sizeof(loop_dev), p) == NULL) {
			loop_dev[0] = '\0';
		}
		loop_dev[strcspn(loop_dev, "\n")] = '\0';
		(void)pclose(p);
	}
	if (strncmp(loop_dev, "/dev/loop", 9) != 0) {
		print_message("no loop device here: skipped\n");
		loop_dev[0] = '\0';
		skip();
		return;
	}
	lun = aio_lun_add(s, 3, loop_dev, 0, SCSITGT_LUN_THIN);
	provisioning_bits(s, 3, &b14, &lbprz, &type);
	assert_int_equal(b14, 0x80);
	assert_int_equal(lbprz, 0);
	assert_int_equal(type, 2);
	/* Gone before the loop device is (teardown_loop). */
	scsitgt_lun_destroy(lun, lun_gone, &gone);
	loop_fabric_run_until(s->lf, &gone);

	/* The same on a thin file LUN: LBPRZ 1. */
	(void)aio_lun_add(s, 4, s->path, 0, SCSITGT_LUN_THIN);
	provisioning_bits(s, 4, &b14, &lbprz, &type);
	assert_int_equal(b14, 0xc0);
	assert_int_equal(lbprz, 1);
	assert_int_equal(type, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_rw_fua_sync, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_fua_flushes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_capacity, setup, teardown),
		cmocka_unit_test_setup_teardown(test_medium_error, setup, teardown),
		cmocka_unit_test_setup_teardown(test_resize_medium, setup, teardown),
		cmocka_unit_test_setup_teardown(test_resize_medium_part, setup, teardown),
		cmocka_unit_test_setup_teardown(test_blockdev_thin_lbprz, setup, teardown_loop),
	};

	aio_test_engine_require();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
