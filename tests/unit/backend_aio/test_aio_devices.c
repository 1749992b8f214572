/* SPDX-License-Identifier: MIT */
/*
 * The aio backend on devices and through a crash: a loop block device where losetup works, a
 * device-mapper device with an error half where dmsetup works (root), and a writer killed with
 * SIGKILL whose acknowledged writes must all be in the file. Same fixture as test_aio.c
 * (aio_test_fx.h): ios through the core's io path, checked as sense reasons.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "aio_test_fx.h"
#include "backend/aio_hooks.h"

/* Run a command line; its first output line into @out (may be NULL). 0 on exit status 0. */
static int run_cmd(const char *cmdline, char *out, size_t outlen)
{
	FILE *p = popen(cmdline, "r");
	char line[256] = "";
	int st;

	if (p == NULL) {
		return -1;
	}
	if (fgets(line, sizeof(line), p) == NULL) {
		line[0] = '\0';
	}
	st = pclose(p);
	line[strcspn(line, "\n")] = '\0';
	if (out) {
		snprintf(out, outlen, "%s", line);
	}
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* The loop device and backing file of test_block_device, released by its teardown even when
 * an assertion fails half-way (a loop device outlives the process). */
static char loop_dev[128];
static char *loop_backing;

/* Attach @file to a loop device (sector size @ss) as loop_dev; false with a message when
 * impossible. */
static bool loop_attach(const char *file, unsigned int ss)
{
	char cmdline[512];
	char out[256];

	snprintf(cmdline, sizeof(cmdline), "losetup -f --show --sector-size %u '%s' 2>&1", ss,
		 file);
	if (run_cmd(cmdline, out, sizeof(out)) < 0 || strncmp(out, "/dev/loop", 9) != 0 ||
	    strlen(out) >= sizeof(loop_dev)) {
		print_message("losetup does not work here (%s): block device test skipped\n", out);
		return false;
	}
	memcpy(loop_dev, out, strlen(out) + 1);
	return true;
}

static void loop_detach(void)
{
	char cmdline[256];

	if (loop_dev[0] == '\0') {
		return;
	}
	snprintf(cmdline, sizeof(cmdline), "losetup -d '%s' 2>&1", loop_dev);
	(void)run_cmd(cmdline, NULL, 0);
	loop_dev[0] = '\0';
}

static int loop_teardown(void **state)
{
	(void)state;
	loop_detach();
	aio_test_file_remove(loop_backing);
	loop_backing = NULL;
	return 0;
}

static void test_block_device(void **state)
{
	struct fx *f = fx_new();
	struct scsitgt_lun_geometry g;

	(void)state;
	loop_backing = aio_test_file("/var/tmp", 8 * MiB);
	assert_non_null(loop_backing);
	if (!loop_attach(loop_backing, 512)) {
		fx_free(f);
		skip();
		return;
	}
	aio_test_opts(&f->o, &f->h.loop, loop_dev);
	assert_int_equal(fx_lun(f, 0, 0, 0), 0);
	g = fx_geo(f);
	/* Block size and capacity from the device (BLKSSZGET, BLKGETSIZE64). */
	assert_int_equal(g.block_size, 512);
	assert_int_equal(g.num_blocks, 8 * MiB / 512);
	print_message("%s: %s I/O, physical exponent %u, flags 0x%x\n", loop_dev,
		      scsitgt_backend_aio_is_direct(f->bctx) ? "direct" : "buffered",
		      g.physical_block_exponent, g.flags);
	assert_true(aio_test_log_has("block device"));
	/* Discarded device blocks are not promised to read as zeros. */
	assert_false(g.flags & SCSITGT_GEOMETRY_LBPRZ);
	roundtrip_suite(f, loop_backing);
	if (f->ops->supports(f->bctx, SCSITGT_IO_UNMAP)) {
		assert_int_equal(fx_io(f, SCSITGT_IO_UNMAP, 0, 2048, NULL, 0, 0, NULL),
				 SCSITGT__SR_OK);
	}
	if (f->ops->supports(f->bctx, SCSITGT_IO_WRITE_ZEROES)) {
		uint8_t *buf = aligned_buf(4096);
		uint8_t zero[4096] = { 0 };

		assert_int_equal(fx_io(f, SCSITGT_IO_WRITE_ZEROES, 300, 8, NULL, 0, 0, NULL),
				 SCSITGT__SR_OK);
		assert_int_equal(fx_buf(f, SCSITGT_IO_READ, 300, 8, buf, 0), SCSITGT__SR_OK);
		assert_memory_equal(buf, zero, 4096);
		free(buf);
	}
	harness_fini(&f->h);
	loop_detach();

	/* A 4096-byte sector device: its block size by default, 512 refused. */
	harness_init(&f->h);
	if (loop_attach(loop_backing, 4096)) {
		aio_test_opts(&f->o, &f->h.loop, loop_dev);
		assert_int_equal(fx_lun(f, 512, 0, 0), -EINVAL);
		assert_true(aio_test_log_has("block size 512 below the device's 4096"));
		assert_int_equal(fx_lun(f, 0, 0, 0), 0);
		g = fx_geo(f);
		assert_int_equal(g.block_size, 4096);
		assert_int_equal(g.num_blocks, 8 * MiB / 4096);
		roundtrip_suite(f, loop_backing);
		harness_fini(&f->h);
		loop_detach();
		harness_init(&f->h);
	}
	fx_free(f);
}

/* An O_DIRECT FUA write's EIO on a block device is that write's own failure: it fails, and
 * later FLUSHes and FUA writes do not (no page cache whose writeback it could have eaten;
 * reviewk K2). The same on a file is kept: test_lost_write_direct_fua (test_aio.c). */
static void test_blockdev_fua_eio_not_kept(void **state)
{
	struct fx *f = fx_new();
	uint8_t *buf = aligned_buf(8 * 512);

	(void)state;
	loop_backing = aio_test_file("/var/tmp", 8 * MiB);
	assert_non_null(loop_backing);
	if (!loop_attach(loop_backing, 512)) {
		free(buf);
		fx_free(f);
		skip();
		return;
	}
	aio_test_opts(&f->o, &f->h.loop, loop_dev);
	assert_int_equal(fx_lun(f, 0, 0, 0), 0);
	if (scsitgt_backend_aio_is_direct(f->bctx) != 1) {
		print_message("%s is not O_DIRECT here: skipped\n", loop_dev);
	} else {
		aio_test_pattern(buf, 8 * 512, 53);
		scsitgt__backend_aio_inject_sync_error(f->bctx, -EIO);
		assert_int_equal(fx_buf(f, SCSITGT_IO_WRITE, 0, 8, buf, SCSITGT_IO_FLAG_FUA),
				 SCSITGT__SR_WRITE_ERROR);
		assert_false(aio_test_log_has("every later SYNCHRONIZE CACHE and FUA write fails"));
		assert_int_equal(fx_io(f, SCSITGT_IO_FLUSH, 0, 0, NULL, 0, 0, NULL),
				 SCSITGT__SR_OK);
		assert_int_equal(fx_buf(f, SCSITGT_IO_WRITE, 8, 8, buf, SCSITGT_IO_FLAG_FUA),
				 SCSITGT__SR_OK);
	}
	free(buf);
	harness_fini(&f->h);
	loop_detach();
	harness_init(&f->h);
	fx_free(f);
}

/* The mount point of test_lba_status_small_fs_blocks, released by its teardown. */
static char fs_mnt[64];

static int small_fs_teardown(void **state)
{
	char cmdline[160];

	if (fs_mnt[0] != '\0') {
		snprintf(cmdline, sizeof(cmdline), "umount -l '%s' 2>&1", fs_mnt);
		(void)run_cmd(cmdline, NULL, 0);
		(void)rmdir(fs_mnt);
		fs_mnt[0] = '\0';
	}
	return loop_teardown(state);
}

/* Write @len bytes of @seed's pattern at byte @off of @path, straight into the file. */
static void file_put(const char *path, off_t off, size_t len, uint32_t seed)
{
	uint8_t buf[4096];
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	assert_true(fd >= 0 && len <= sizeof(buf));
	aio_test_pattern(buf, len, seed);
	assert_int_equal(pwrite(fd, buf, len, off), (ssize_t)len);
	assert_int_equal(fsync(fd), 0);
	close(fd);
}

/*
 * GET LBA STATUS of a file whose file system allocates in blocks smaller than the LUN's (ext4
 * with 1 KiB blocks, 4 KiB LUN blocks), on a loop device (root, losetup, mkfs.ext4; skipped
 * otherwise). A LUN block whose data starts inside it is one mapped block, followed by the
 * deallocated ones, not mapped to the end of the LUN (reviewg F3: SEEK_HOLE from inside the
 * hole answered the offset itself); one whose data ends inside it is mapped, the rest after it
 * deallocated (reviewg C5).
 */
static void test_lba_status_small_fs_blocks(void **state)
{
	struct fx *f = fx_new();
	char cmdline[256];
	char out[256];
	uint64_t n = 0;
	bool mapped = false;

	(void)state;
	loop_backing = aio_test_file("/var/tmp", 32 * MiB);
	assert_non_null(loop_backing);
	if (geteuid() != 0 || !loop_attach(loop_backing, 512)) {
		print_message("%s: small-block file system test skipped\n",
			      geteuid() != 0 ? "not root" : "no loop device");
		fx_free(f);
		skip();
		return;
	}
	snprintf(cmdline, sizeof(cmdline), "mkfs.ext4 -q -F -b 1024 '%s' 2>&1", loop_dev);
	if (run_cmd(cmdline, out, sizeof(out)) < 0) {
		print_message("mkfs.ext4 -b 1024 failed (%s): skipped\n", out);
		fx_free(f);
		skip();
		return;
	}
	snprintf(fs_mnt, sizeof(fs_mnt), "/tmp/scsitgt-aio-fs-XXXXXX");
	assert_non_null(mkdtemp(fs_mnt));
	snprintf(cmdline, sizeof(cmdline), "mount -t ext4 '%s' '%s' 2>&1", loop_dev, fs_mnt);
	if (run_cmd(cmdline, out, sizeof(out)) < 0) {
		print_message("mount failed (%s): skipped\n", out);
		(void)rmdir(fs_mnt);
		fs_mnt[0] = '\0';
		fx_free(f);
		skip();
		return;
	}
	/* A sparse 1 MiB file: 256 LUN blocks of 4096 bytes, 1024 file system blocks. */
	fx_file(f, fs_mnt, MiB);
	assert_int_equal(fx_lun(f, 4096, 0, SCSITGT_LUN_THIN), 0);
	assert_true(f->ops->supports(f->bctx, SCSITGT_IO_UNMAP));
	/* LUN block 0: data only in its last KiB. LUN block 10: only in its first KiB. */
	file_put(f->path, 3072, 1024, 80);
	file_put(f->path, 10 * 4096, 1024, 81);
	assert_int_equal(f->ops->get_lba_status(f->bctx, 0, &n, &mapped), 0);
	assert_true(mapped);
	assert_int_equal(n, 1);
	assert_int_equal(f->ops->get_lba_status(f->bctx, 1, &n, &mapped), 0);
	assert_false(mapped);
	assert_int_equal(n, 9);
	assert_int_equal(f->ops->get_lba_status(f->bctx, 10, &n, &mapped), 0);
	assert_true(mapped);
	assert_int_equal(n, 1);
	assert_int_equal(f->ops->get_lba_status(f->bctx, 11, &n, &mapped), 0);
	assert_false(mapped);
	assert_int_equal(n, 256 - 11);
	/* The data reads back through the LUN, the holes as zeros. */
	{
		uint8_t *buf = aligned_buf(4096);
		uint8_t expect[4096] = { 0 };

		aio_test_pattern(expect + 3072, 1024, 80);
		assert_int_equal(fx_buf(f, SCSITGT_IO_READ, 0, 1, buf, 0), SCSITGT__SR_OK);
		assert_memory_equal(buf, expect, 4096);
		free(buf);
	}
	fx_free(f);
}

/* The child of the durability test: FUA writes of block i, acknowledging each on @ackfd. */
static void durability_child(const char *path, int ackfd)
{
	struct fx f = { 0 };
	uint8_t *buf = aligned_buf(512);

	harness_init(&f.h);
	f.ops = scsitgt_backend_aio_ops();
	aio_test_opts(&f.o, &f.h.loop, path);
	f.path = (char *)path;
	if (fx_lun(&f, 512, 0, 0) < 0) {
		_exit(2);
	}
	for (uint32_t i = 0;; i = (i + 1) % 2048) {
		/* Odd blocks: a plain write made durable by SYNCHRONIZE CACHE (FLUSH). */
		uint32_t fua = i % 2 ? 0 : SCSITGT_IO_FLAG_FUA;

		aio_test_pattern(buf, 512, i + 100);
		if (fx_buf(&f, SCSITGT_IO_WRITE, i, 1, buf, fua) != SCSITGT__SR_OK) {
			_exit(3);
		}
		if (!fua && fx_io(&f, SCSITGT_IO_FLUSH, 0, 0, NULL, 0, 0, NULL) != SCSITGT__SR_OK) {
			_exit(5);
		}
		/* Acknowledge only after the FUA write or the FLUSH completed. */
		if (write(ackfd, &i, sizeof(i)) != (ssize_t)sizeof(i)) {
			_exit(4);
		}
	}
}

/*
 * Durability: a process writing with FUA, or writing and then flushing, is killed with SIGKILL;
 * every write it saw complete is in the file afterwards.
 */
static void test_durability_kill9(void **state)
{
	char *path = aio_test_file("/var/tmp", MiB);
	int p[2];
	pid_t pid;
	uint32_t idx;
	uint32_t acked = 0;
	uint32_t last = 0;
	uint8_t expect[512];
	int st;

	(void)state;
	assert_non_null(path);
	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		durability_child(path, p[1]);
		_exit(0);
	}
	close(p[1]);
	/* Let it write a while, then kill it in the middle of its work. */
	while (acked < 64 && read(p[0], &idx, sizeof(idx)) == (ssize_t)sizeof(idx)) {
		last = idx;
		acked++;
	}
	assert_int_equal(acked, 64);
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGKILL);
	/* Acknowledgements already in the pipe count too. */
	while (read(p[0], &idx, sizeof(idx)) == (ssize_t)sizeof(idx)) {
		last = idx;
		acked++;
	}
	close(p[0]);
	assert_true(last < 2048);
	for (uint32_t i = 0; i <= last && i < acked; i++) {
		aio_test_pattern(expect, 512, i + 100);
		assert_true(aio_test_file_equals(path, (off_t)i * 512, expect, 512));
	}
	aio_test_file_remove(path);
}

/*
 * A medium that fails: a device-mapper device whose first half is the zero target and second
 * half the error target. Reads and writes in the error half complete with EIO, reported as
 * MEDIUM ERROR (READ ERROR / WRITE ERROR), a read across the boundary brings the good blocks
 * with it, and the good half keeps working. Needs root and dmsetup; skipped otherwise.
 */
static char dm_name[64];

static int dm_teardown(void **state)
{
	char cmdline[128];

	(void)state;
	if (dm_name[0] != '\0') {
		snprintf(cmdline, sizeof(cmdline), "dmsetup remove --retry %s 2>&1", dm_name);
		(void)run_cmd(cmdline, NULL, 0);
		dm_name[0] = '\0';
	}
	return 0;
}

static void test_dm_error(void **state)
{
	struct fx *f = fx_new();
	uint8_t *buf;
	uint8_t zero[8 * 512] = { 0 };
	struct harness_result res;
	char cmdline[256];
	char out[256];
	char dev[128];

	(void)state;
	snprintf(dm_name, sizeof(dm_name), "scsitgt-aio-err-%d", (int)getpid());
	snprintf(cmdline, sizeof(cmdline),
		 "printf '0 8192 zero\\n8192 8192 error\\n' | dmsetup create %s 2>&1", dm_name);
	if (geteuid() != 0 || run_cmd(cmdline, out, sizeof(out)) < 0) {
		print_message("no device-mapper here (%s): skipped\n",
			      geteuid() != 0 ? "not root" : out);
		dm_name[0] = '\0';
		fx_free(f);
		skip();
		return;
	}
	/* Allocated once the test runs: a skipped test must not leak it (LeakSanitizer). */
	buf = aligned_buf(8 * 512);
	snprintf(dev, sizeof(dev), "/dev/mapper/%s", dm_name);
	/* udev may create the node a moment after dmsetup returns: wait for it, bounded. */
	snprintf(cmdline, sizeof(cmdline), "udevadm settle 2>/dev/null; test -b %s", dev);
	if (run_cmd(cmdline, NULL, 0) < 0) {
		snprintf(cmdline, sizeof(cmdline), "dmsetup mknodes %s 2>&1; test -b %s", dm_name,
			 dev);
		assert_int_equal(run_cmd(cmdline, out, sizeof(out)), 0);
	}
	aio_test_opts(&f->o, &f->h.loop, dev);
	assert_int_equal(fx_lun(f, 512, 0, 0), 0);
	assert_int_equal(fx_buf(f, SCSITGT_IO_READ, 0, 8, buf, 0), SCSITGT__SR_OK);
	assert_memory_equal(buf, zero, sizeof(zero));
	assert_int_equal(fx_buf(f, SCSITGT_IO_READ, 9000, 8, buf, 0), SCSITGT__SR_READ_ERROR);
	assert_true(aio_test_log_has("Input/output error"));
	aio_test_pattern(buf, 8 * 512, 43);
	assert_int_equal(fx_buf(f, SCSITGT_IO_WRITE, 9000, 8, buf, SCSITGT_IO_FLAG_FUA),
			 SCSITGT__SR_WRITE_ERROR);
	/* Across the boundary: MEDIUM ERROR, the good blocks before it delivered. */
	memset(&res, 0, sizeof(res));
	assert_int_equal(
		fx_io(f, SCSITGT_IO_READ, 8188, 8, &(struct iovec){ buf, 8 * 512 }, 1, 0, &res),
		SCSITGT__SR_READ_ERROR);
	/* The good half carries on. */
	assert_int_equal(fx_buf(f, SCSITGT_IO_WRITE, 16, 8, buf, 0), SCSITGT__SR_OK);
	assert_int_equal(fx_buf(f, SCSITGT_IO_READ, 100, 8, buf, 0), SCSITGT__SR_OK);
	free(buf);
	fx_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_block_device, loop_teardown),
		cmocka_unit_test_teardown(test_lba_status_small_fs_blocks, small_fs_teardown),
		cmocka_unit_test_teardown(test_blockdev_fua_eio_not_kept, loop_teardown),
		cmocka_unit_test(test_durability_kill9),
		cmocka_unit_test_teardown(test_dm_error, dm_teardown),
	};

	aio_test_engine_require();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
