/* SPDX-License-Identifier: MIT */
/*
 * The aio backend on real files: a file on /var/tmp (O_DIRECT expected where the file system
 * does direct I/O) and a file on /dev/shm (tmpfs: buffered). ios go through the core's io path
 * (io_harness.c, the fixture of aio_test_fx.h), so completion statuses are checked as the sense
 * reasons the core derives from them. Block devices, device-mapper and kill -9 durability:
 * test_aio_devices.c.
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
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cmocka.h>

#include "aio_test_fx.h"
#include "backend/aio_hooks.h"
#include "backend/aio_int.h"

static void test_create_errors(void **state)
{
	struct scsitgt_backend_aio_opts o;
	uv_loop_t loop;
	void *b = NULL;

	(void)state;
	assert_int_equal(uv_loop_init(&loop), 0);
	aio_test_opts(&o, &loop, "/var/tmp");
	assert_int_equal(o.size, sizeof(o));
	assert_true(o.direct);
	assert_int_equal(o.queue_depth, 128);
	assert_false(o.read_only);
	assert_false(o.write_through);

	assert_int_equal(scsitgt_backend_aio_create(NULL, &o), -EINVAL);
	assert_int_equal(scsitgt_backend_aio_create(&b, NULL), -EINVAL);
	o.loop = NULL;
	assert_int_equal(scsitgt_backend_aio_create(&b, &o), -EINVAL);
	o.loop = &loop;
	o.path = NULL;
	assert_int_equal(scsitgt_backend_aio_create(&b, &o), -EINVAL);
	o.path = "/nonexistent-scsitgt/disk.img";
	assert_int_equal(scsitgt_backend_aio_create(&b, &o), -ENOENT);
	o.read_only = true;
	assert_int_equal(scsitgt_backend_aio_create(&b, &o), -ENOENT);
	o.path = "/var/tmp";
	assert_int_equal(scsitgt_backend_aio_create(&b, &o), -EISDIR);
	o.read_only = false;
	assert_int_equal(scsitgt_backend_aio_create(&b, &o), -EISDIR);
	/* A character device is neither a file nor a block device. */
	o.path = "/dev/null";
	assert_int_equal(scsitgt_backend_aio_create(&b, &o), -EINVAL);
	assert_null(b);

	assert_int_equal(scsitgt_backend_aio_is_direct(NULL), -EINVAL);
	assert_int_equal(scsitgt_backend_aio_resize(NULL, NULL), -EINVAL);
	assert_string_equal(scsitgt_backend_aio_ops()->name, "aio");
	assert_int_equal(uv_loop_close(&loop), 0);
}

/*
 * userx N12: the backend's logger gets the levels up to the options' log_level, as the engine's
 * does (a host no longer has to filter); the default (DEBUG) is every level, as before the
 * member. A log_level out of range is refused, and says so; so are the other bad options.
 */
static void test_log_level(void **state)
{
	struct fx *f = fx_new();
	void *b = NULL;

	(void)state;
	fx_file(f, "/var/tmp", MiB);
	assert_int_equal(f->o.log_level, SCSITGT_LOG_DEBUG);
	assert_int_equal(fx_lun(f, 512, 0, 0), 0);
	/* open() says which engine and I/O mode, at INFO. */
	assert_true(aio_test_log_count(SCSITGT_LOG_INFO, f->path) > 0);
	fx_free(f);

	f = fx_new();
	fx_file(f, "/var/tmp", MiB);
	f->o.log_level = SCSITGT_LOG_NOTICE;
	assert_int_equal(fx_lun(f, 512, 0, 0), 0);
	assert_int_equal(aio_test_log_count(SCSITGT_LOG_INFO, ""), 0);
	assert_int_equal(aio_test_log_count(SCSITGT_LOG_DEBUG, ""), 0);
	roundtrip_suite(f, f->path);
	assert_int_equal(aio_test_log_count(SCSITGT_LOG_INFO, ""), 0);
	assert_int_equal(aio_test_log_count(SCSITGT_LOG_DEBUG, ""), 0);

	f->o.log_level = (enum scsitgt_log_level)9;
	aio_test_log_clear();
	assert_int_equal(scsitgt_backend_aio_create(&b, &f->o), -EINVAL);
	assert_int_equal(aio_test_log_count(SCSITGT_LOG_ERROR, "log_level 9: not between"), 1);
	f->o.log_level = SCSITGT_LOG_ERROR;
	f->o.uring_async = (enum scsitgt_backend_aio_uring_async)77;
	assert_int_equal(scsitgt_backend_aio_create(&b, &f->o), -EINVAL);
	assert_int_equal(aio_test_log_count(SCSITGT_LOG_ERROR, "uring_async 77"), 1);
	f->o.uring_async = SCSITGT_BACKEND_AIO_URING_ASYNC_AUTO;
	f->o.path = "";
	assert_int_equal(scsitgt_backend_aio_create(&b, &f->o), -EINVAL);
	assert_int_equal(aio_test_log_count(SCSITGT_LOG_ERROR, "path \"\": required"), 1);
	assert_null(b);
	f->o.path = f->path;
	fx_free(f);
}

static void closed_cb(void *arg, int status)
{
	assert_int_equal(status, 0);
	(*(int *)arg)++;
}

/* A context that was never opened by a LUN is freed by close() at once. */
static void test_close_unopened(void **state)
{
	struct fx *f = fx_new();
	uint64_t nb;
	int closed = 0;

	(void)state;
	fx_file(f, "/var/tmp", 4096);
	assert_int_equal(scsitgt_backend_aio_create(&f->bctx, &f->o), 0);
	/* Not opened: resize has no block size yet; the mode is known already. */
	assert_int_equal(scsitgt_backend_aio_resize(f->bctx, &nb), -EINVAL);
	assert_true(scsitgt_backend_aio_is_direct(f->bctx) >= 0);
	f->ops->close(f->bctx, closed_cb, &closed);
	assert_int_equal(closed, 1);
	f->bctx = NULL;
	fx_free(f);
}

static void test_sizes(void **state)
{
	struct fx *f = fx_new();
	struct scsitgt_lun_geometry g;

	(void)state;
	/* Smaller than one block: refused. */
	fx_file(f, "/var/tmp", 511);
	assert_int_equal(fx_lun(f, 512, 0, 0), -EINVAL);
	assert_true(aio_test_log_has("less than one block"));
	aio_test_file_remove(f->path);

	/* Rounded down to whole blocks, block size from the LUN options. */
	fx_file(f, "/var/tmp", 3 * 4096 + 100);
	assert_int_equal(fx_lun(f, 4096, 0, 0), 0);
	g = fx_geo(f);
	assert_int_equal(g.block_size, 4096);
	assert_int_equal(g.num_blocks, 3);
	fx_free(f);

	/* More blocks than the file holds: refused; fewer: taken. */
	f = fx_new();
	fx_file(f, "/var/tmp", 64 * 512);
	assert_int_equal(fx_lun(f, 512, 65, 0), -EINVAL);
	assert_int_equal(fx_lun(f, 512, 10, 0), 0);
	assert_int_equal(fx_geo(f).num_blocks, 10);
	/* Default block size 512. */
	fx_free(f);
	f = fx_new();
	fx_file(f, "/var/tmp", 64 * 512);
	assert_int_equal(fx_lun(f, 0, 0, 0), 0);
	assert_int_equal(fx_geo(f).block_size, 512);
	assert_int_equal(fx_geo(f).num_blocks, 64);
	fx_free(f);
}

static void test_file_direct(void **state)
{
	struct fx *f = fx_new();
	struct scsitgt_lun_geometry g;
	const char *why = NULL;

	(void)state;
	fx_file(f, "/var/tmp", MiB);
	assert_int_equal(fx_lun(f, 512, 0, 0), 0);
	g = fx_geo(f);
	assert_int_equal(g.block_size, 512);
	assert_int_equal(g.num_blocks, MiB / 512);
	/* Not write-through: the page cache or the disk's cache may hold writes. */
	assert_true(g.flags & SCSITGT_GEOMETRY_WRITE_CACHE);
	assert_true(f->ops->supports(f->bctx, SCSITGT_IO_FLUSH));
	assert_int_equal(!!(g.flags & SCSITGT_GEOMETRY_LBPRZ),
			 f->ops->supports(f->bctx, SCSITGT_IO_UNMAP));
	if (aio_test_fs_direct(f->path, &why)) {
		assert_int_equal(scsitgt_backend_aio_is_direct(f->bctx), 1);
		assert_true(aio_test_log_has("direct I/O"));
	} else {
		print_message("/var/tmp: %s; O_DIRECT assertion skipped\n", why);
		assert_int_equal(scsitgt_backend_aio_is_direct(f->bctx), 0);
		assert_true(aio_test_log_has("buffered I/O"));
	}
	roundtrip_suite(f, f->path);
	fx_free(f);
}

static void test_file_buffered_requested(void **state)
{
	struct fx *f = fx_new();

	(void)state;
	fx_file(f, "/var/tmp", MiB);
	f->o.direct = false;
	assert_int_equal(fx_lun(f, 512, 0, 0), 0);
	assert_int_equal(scsitgt_backend_aio_is_direct(f->bctx), 0);
	assert_true(fx_geo(f).flags & SCSITGT_GEOMETRY_WRITE_CACHE);
	roundtrip_suite(f, f->path);
	fx_free(f);
}

static void test_tmpfs_buffered(void **state)
{
	struct fx *f = fx_new();
	char *probe;
	bool zr = false;
	int fd;

	(void)state;
	fx_file(f, "/dev/shm", 4 * MiB);
	/* 4096-byte blocks, so that no alignment argument could be the reason for buffered. */
	assert_int_equal(fx_lun(f, 4096, 0, 0), 0);
	assert_int_equal(fx_geo(f).num_blocks, 4 * MiB / 4096);
	/* tmpfs: the page cache is the medium, direct I/O would only pretend. */
	assert_int_equal(scsitgt_backend_aio_is_direct(f->bctx), 0);
	assert_true(aio_test_log_has("buffered I/O"));
	/* supports() follows what the file system does (probed here independently). */
	probe = aio_test_file("/dev/shm", 8192);
	assert_non_null(probe);
	fd = open(probe, O_RDWR);
	assert_true(fd >= 0);
	zr = fallocate(fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, 0, 4096) == 0;
	assert_int_equal(f->ops->supports(f->bctx, SCSITGT_IO_UNMAP),
			 fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096) == 0);
	close(fd);
	aio_test_file_remove(probe);
	assert_int_equal(f->ops->supports(f->bctx, SCSITGT_IO_WRITE_ZEROES), zr);
	roundtrip_suite(f, f->path);
	if (!zr) {
		/* Not supported: the core would emulate; a stray one is refused cleanly. */
		assert_int_equal(fx_io(f, SCSITGT_IO_WRITE_ZEROES, 0, 2, NULL, 0, 0, NULL),
				 SCSITGT__SR_INVALID_OPCODE);
	}
	fx_free(f);
}

static void test_write_through(void **state)
{
	struct fx *f = fx_new();
	uint8_t *buf = aligned_buf(4096);

	(void)state;
	fx_file(f, "/var/tmp", MiB);
	f->o.write_through = true;
	assert_int_equal(fx_lun(f, 512, 0, 0), 0);
	/* O_DSYNC: no volatile cache, nothing to flush. */
	assert_false(fx_geo(f).flags & SCSITGT_GEOMETRY_WRITE_CACHE);
	assert_false(f->ops->supports(f->bctx, SCSITGT_IO_FLUSH));
	aio_test_pattern(buf, 4096, 9);
	assert_int_equal(fx_buf(f, SCSITGT_IO_WRITE, 8, 8, buf, SCSITGT_IO_FLAG_FUA),
			 SCSITGT__SR_OK);
	assert_file_equals(f, 8 * 512, buf, 4096);
	assert_int_equal(fx_io(f, SCSITGT_IO_FLUSH, 0, 0, NULL, 0, 0, NULL), SCSITGT__SR_OK);
	free(buf);
	fx_free(f);
}

/* O_DSYNC does not cover fallocate (ext4's punch hole ignores it): with write_through, and
 * so no FLUSH for the core to send, a WRITE ZEROES or UNMAP is followed by an fdatasync
 * before it completes, on either engine (review29b B1). With a cache it is not: the core
 * sends the FLUSH when the command needs it. */
static void test_write_through_dealloc_durable(void **state)
{
	static const enum scsitgt_backend_aio_engine engines[] = {
		SCSITGT_BACKEND_AIO_ENGINE_LIBAIO,
		SCSITGT_BACKEND_AIO_ENGINE_IO_URING,
	};

	(void)state;
	for (size_t i = 0; i < sizeof(engines) / sizeof(engines[0]); i++) {
		for (int wt = 0; wt < 2; wt++) {
			struct fx *f = fx_new();

			fx_file(f, "/var/tmp", MiB);
			f->o.engine = engines[i];
			f->o.write_through = wt;
			if (engines[i] == SCSITGT_BACKEND_AIO_ENGINE_IO_URING) {
				void *b = NULL;

				/* io_uring refused by this kernel: the libaio run covers it */
				if (scsitgt_backend_aio_create(&b, &f->o) != 0) {
					fx_free(f);
					continue;
				}
				f->ops->close(b, NULL, NULL);
			}
			assert_int_equal(fx_lun(f, 512, 0, 0), 0);
			for (int k = 0; k < 2; k++) {
				enum scsitgt_io_type t = k ? SCSITGT_IO_UNMAP :
							     SCSITGT_IO_WRITE_ZEROES;
				unsigned long before = scsitgt__backend_aio_syncs(f->bctx);

				if (!f->ops->supports(f->bctx, t))
					continue;
				assert_int_equal(fx_io(f, t, 8, 256, NULL, 0, 0, NULL),
						 SCSITGT__SR_OK);
				assert_int_equal(scsitgt__backend_aio_syncs(f->bctx) - before,
						 (unsigned long)wt);
			}
			fx_free(f);
		}
	}
}

/*
 * A FUA write reaches the kernel with RWF_DSYNC in the iocb (libaio) or SQE (io_uring) the
 * engine builds, a plain write or a read without it, O_DIRECT and buffered alike (reviewg
 * C1). The file's bytes cannot tell (the page cache serves them either way) and the flag
 * needs no flush of its own (syncs stays): the hook reads what the kernel is handed.
 */
static void test_fua_write_dsync(void **state)
{
	(void)state;
	for (int direct = 0; direct < 2; direct++) {
		struct fx *f = fx_new();
		uint8_t *buf = aligned_buf(8 * 512);
		unsigned long dsync, syncs;

		fx_file(f, "/var/tmp", MiB);
		f->o.direct = direct;
		assert_int_equal(fx_lun(f, 512, 0, 0), 0);
		aio_test_pattern(buf, 8 * 512, 60 + (uint32_t)direct);
		dsync = scsitgt__backend_aio_dsync_writes(f->bctx);
		syncs = scsitgt__backend_aio_syncs(f->bctx);
		assert_int_equal(fx_buf(f, SCSITGT_IO_WRITE, 0, 8, buf, 0), SCSITGT__SR_OK);
		assert_int_equal(fx_buf(f, SCSITGT_IO_READ, 0, 8, buf, 0), SCSITGT__SR_OK);
		assert_int_equal(scsitgt__backend_aio_dsync_writes(f->bctx), dsync);
		assert_int_equal(fx_buf(f, SCSITGT_IO_WRITE, 8, 8, buf, SCSITGT_IO_FLAG_FUA),
				 SCSITGT__SR_OK);
		assert_int_equal(scsitgt__backend_aio_dsync_writes(f->bctx) - dsync, 1);
		assert_int_equal(scsitgt__backend_aio_syncs(f->bctx), syncs);
		assert_file_equals(f, 8 * 512, buf, 8 * 512);
		free(buf);
		fx_free(f);
	}
}

static void test_read_only(void **state)
{
	struct fx *f = fx_new();
	uint8_t *buf = aligned_buf(4096);
	uint8_t *zero = calloc(1, 4096);

	(void)state;
	fx_file(f, "/var/tmp", MiB);
	f->o.read_only = true;
	assert_int_equal(fx_lun(f, 512, 0, SCSITGT_LUN_READ_ONLY), 0);
	assert_false(f->ops->supports(f->bctx, SCSITGT_IO_WRITE));
	assert_false(f->ops->supports(f->bctx, SCSITGT_IO_FLUSH));
	assert_false(f->ops->supports(f->bctx, SCSITGT_IO_UNMAP));
	assert_int_equal(fx_buf(f, SCSITGT_IO_READ, 0, 8, buf, 0), SCSITGT__SR_OK);
	assert_memory_equal(buf, zero, 4096);
	/* A write that reaches the backend anyway: DATA PROTECT, WRITE PROTECTED. */
	assert_int_equal(fx_buf(f, SCSITGT_IO_WRITE, 0, 8, buf, 0), SCSITGT__SR_WRITE_PROTECTED);
	free(zero);
	free(buf);
	fx_free(f);
}

static blkcnt_t file_blocks(const char *path)
{
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	return st.st_blocks;
}

/* UNMAP punches holes that read back as zeros; WRITE ZEROES zeroes in place. */
static void thin_suite(struct fx *f)
{
	const size_t len = 2 * MiB;
	uint8_t *src = aligned_buf(len);
	uint8_t *dst = aligned_buf(len);
	uint8_t *zero = calloc(1, len);
	blkcnt_t before;
	blkcnt_t after;

	assert_non_null(zero);
	if (!f->ops->supports(f->bctx, SCSITGT_IO_UNMAP)) {
		print_message("%s: no hole punching here; UNMAP not tested\n", f->path);
	} else {
		struct statfs sfs;

		assert_true(fx_geo(f).flags & SCSITGT_GEOMETRY_LBPRZ);
		/* Issue 17, defect 11: holes free whole file-system blocks; VPD B0 says so. */
		assert_int_equal(statfs(f->path, &sfs), 0);
		assert_int_equal(fx_geo(f).unmap_granularity_blocks, (uint32_t)sfs.f_bsize / 512);
		aio_test_pattern(src, len, 5);
		assert_int_equal(fx_buf(f, SCSITGT_IO_WRITE, 0, (uint32_t)(len / 512), src,
					SCSITGT_IO_FLAG_FUA),
				 SCSITGT__SR_OK);
		assert_int_equal(fx_io(f, SCSITGT_IO_FLUSH, 0, 0, NULL, 0, 0, NULL),
				 SCSITGT__SR_OK);
		before = file_blocks(f->path);
		/* The middle MiB, 4 KiB aligned so that whole file system blocks go. */
		assert_int_equal(fx_io(f, SCSITGT_IO_UNMAP, 1024, 2048, NULL, 0, 0, NULL),
				 SCSITGT__SR_OK);
		after = file_blocks(f->path);
		assert_true(after < before);
		assert_int_equal(fx_buf(f, SCSITGT_IO_READ, 0, (uint32_t)(len / 512), dst, 0),
				 SCSITGT__SR_OK);
		assert_memory_equal(dst, src, 512 * 1024);
		assert_memory_equal(dst + 512 * 1024, zero, MiB);
		assert_memory_equal(dst + 512 * 3072, src + 512 * 3072, 512 * 1024);
		assert_file_equals(f, 512 * 1024, zero, MiB);
	}
	if (!f->ops->supports(f->bctx, SCSITGT_IO_WRITE_ZEROES)) {
		print_message("%s: no zero range here; WRITE ZEROES not tested\n", f->path);
	} else {
		aio_test_pattern(src, len, 6);
		assert_int_equal(fx_buf(f, SCSITGT_IO_WRITE, 0, (uint32_t)(len / 512), src, 0),
				 SCSITGT__SR_OK);
		/* Unaligned to file system blocks on purpose: 7 blocks from LBA 3. */
		assert_int_equal(fx_io(f, SCSITGT_IO_WRITE_ZEROES, 3, 7, NULL, 0, 0, NULL),
				 SCSITGT__SR_OK);
		assert_int_equal(fx_buf(f, SCSITGT_IO_READ, 0, 16, dst, 0), SCSITGT__SR_OK);
		assert_memory_equal(dst, src, 3 * 512);
		assert_memory_equal(dst + 3 * 512, zero, 7 * 512);
		assert_memory_equal(dst + 10 * 512, src + 10 * 512, 6 * 512);
		assert_file_equals(f, 3 * 512, zero, 7 * 512);
		assert_file_equals(f, 10 * 512, src + 10 * 512, 6 * 512);
	}
	free(zero);
	free(src);
	free(dst);
}

static void test_thin_file(void **state)
{
	struct fx *f = fx_new();

	(void)state;
	fx_file(f, "/var/tmp", 4 * MiB);
	assert_int_equal(fx_lun(f, 512, 0, SCSITGT_LUN_THIN), 0);
	thin_suite(f);
	fx_free(f);
}

static void test_thin_tmpfs(void **state)
{
	struct fx *f = fx_new();

	(void)state;
	fx_file(f, "/dev/shm", 4 * MiB);
	assert_int_equal(fx_lun(f, 512, 0, 0), 0);
	thin_suite(f);
	fx_free(f);
}

/* Shrunk from outside: reads past the new end fail with MEDIUM ERROR, never succeed short. */
static void test_read_past_eof(void **state)
{
	struct fx *f = fx_new();
	uint8_t *buf = aligned_buf(8 * 512);
	uint64_t nb = 0;

	(void)state;
	fx_file(f, "/var/tmp", MiB);
	assert_int_equal(fx_lun(f, 512, 0, 0), 0);
	aio_test_pattern(buf, 8 * 512, 7);
	assert_int_equal(fx_buf(f, SCSITGT_IO_WRITE, 1500, 8, buf, 0), SCSITGT__SR_OK);
	assert_int_equal(truncate(f->path, MiB / 2), 0);
	/* Wholly past the end: nothing is read. */
	assert_int_equal(fx_buf(f, SCSITGT_IO_READ, 1500, 8, buf, 0), SCSITGT__SR_READ_ERROR);
	assert_true(aio_test_log_has("Input/output error"));
	/* Straddling the end: the first half arrives, the rest cannot. */
	assert_int_equal(fx_buf(f, SCSITGT_IO_READ, 1020, 8, buf, 0), SCSITGT__SR_READ_ERROR);
	/* Within the file: fine. */
	assert_int_equal(fx_buf(f, SCSITGT_IO_READ, 1016, 8, buf, 0), SCSITGT__SR_OK);
	/* After resize the backend refuses the range itself, with the same MEDIUM ERROR: the
	 * core checked the LUN's range, which the medium no longer holds (backend_aio.h). */
	assert_int_equal(scsitgt_backend_aio_resize(f->bctx, &nb), 0);
	assert_int_equal(nb, 1024);
	assert_int_equal(fx_buf(f, SCSITGT_IO_READ, 1500, 8, buf, 0), SCSITGT__SR_READ_ERROR);
	/* A write there does not grow the file again. */
	assert_int_equal(fx_buf(f, SCSITGT_IO_WRITE, 1500, 8, buf, 0), SCSITGT__SR_WRITE_ERROR);
	{
		struct stat st;

		assert_int_equal(stat(f->path, &st), 0);
		assert_int_equal(st.st_size, MiB / 2);
	}
	free(buf);
	fx_free(f);
}

/*
 * A bounced READ (more iovecs than one iocb takes, so in any mode) that fails half-way: the
 * blocks read before the failure reach the io's iovecs, and nothing past them does (review32
 * N6: the whole bounce buffer was copied, uninitialized after the good blocks).
 */
static void test_failed_bounced_read(void **state)
{
	const size_t len = 8 * 512, half = len / 2;
	const int niov = (int)len / 2; /* 2048 > UIO_MAXIOV (aio_int.h AIO_IOV_MAX) */
	struct fx *f = fx_new();
	uint8_t *src = aligned_buf(len);
	uint8_t *dst = malloc(len);
	struct iovec *v = calloc((size_t)niov, sizeof(*v));

	(void)state;
	assert_non_null(dst);
	assert_non_null(v);
	fx_file(f, "/var/tmp", MiB);
	assert_int_equal(fx_lun(f, 512, 0, 0), 0);
	aio_test_pattern(src, len, 11);
	assert_int_equal(fx_buf(f, SCSITGT_IO_WRITE, 1020, 8, src, 0), SCSITGT__SR_OK);
	assert_int_equal(truncate(f->path, MiB / 2), 0);
	memset(dst, 0xee, len);
	for (int i = 0; i < niov; i++)
		v[i] = (struct iovec){ dst + 2 * (size_t)i, 2 };
	/* Blocks 1020-1023 are in the file, 1024-1027 past its new end. */
	assert_int_equal(fx_io(f, SCSITGT_IO_READ, 1020, 8, v, niov, 0, NULL),
			 SCSITGT__SR_READ_ERROR);
	assert_memory_equal(dst, src, half);
	for (size_t i = half; i < len; i++)
		assert_int_equal(dst[i], 0xee);
	free(v);
	free(dst);
	free(src);
	fx_free(f);
}

/*
 * O_DIRECT alignment as statx(2) states it (review32 N5): buffer addresses to
 * stx_dio_mem_align, segment lengths to stx_dio_offset_align. With NVMe's 4 and 512 (Linux
 * 6.1 and later) a 4-aligned segment of 1000 bytes must be bounced, not handed to the kernel
 * (-EINVAL there); whole blocks at 4-aligned addresses go as they are.
 */
static void test_dio_segment_alignment(void **state)
{
	static uint8_t mem[4096] __attribute__((aligned(4096)));
	struct aio_ctx ac;
	struct iovec v[2];

	(void)state;
	memset(&ac, 0, sizeof(ac));
	ac.direct = true;
	ac.mem_align = 4;
	ac.off_align = 512;
	v[0] = (struct iovec){ mem + 4, 1000 };
	v[1] = (struct iovec){ mem + 1004, 24 };
	assert_false(scsitgt__aio_iov_usable(&ac, v, 2, 1024));
	v[0] = (struct iovec){ mem + 4, 512 };
	v[1] = (struct iovec){ mem + 516, 512 };
	assert_true(scsitgt__aio_iov_usable(&ac, v, 2, 1024));
	/* An address off the memory alignment: bounced. */
	v[0] = (struct iovec){ mem + 2, 512 };
	assert_false(scsitgt__aio_iov_usable(&ac, v, 1, 512));
	/* Buffered I/O takes anything (up to the iovec count). */
	ac.direct = false;
	v[0] = (struct iovec){ mem + 1, 1000 };
	assert_true(scsitgt__aio_iov_usable(&ac, v, 1, 1000));
}

static void test_resize(void **state)
{
	struct fx *f = fx_new();
	uint8_t *buf = aligned_buf(4096);
	uint8_t *back = aligned_buf(4096);
	uint64_t nb = 0;

	(void)state;
	fx_file(f, "/var/tmp", MiB);
	assert_int_equal(fx_lun(f, 512, 0, 0), 0);
	aio_test_pattern(buf, 4096, 8);
	/* Beyond the capacity: not on the medium, a WRITE ERROR from the backend. */
	assert_int_equal(fx_buf(f, SCSITGT_IO_WRITE, 3000, 8, buf, 0), SCSITGT__SR_WRITE_ERROR);
	/* Grown from outside (not to a whole block: rounded down). */
	assert_int_equal(truncate(f->path, 2 * MiB + 100), 0);
	assert_int_equal(scsitgt_backend_aio_resize(f->bctx, &nb), 0);
	assert_int_equal(nb, 2 * MiB / 512);
	assert_true(aio_test_log_has("capacity 2048 -> 4096 blocks"));
	assert_int_equal(fx_buf(f, SCSITGT_IO_WRITE, 3000, 8, buf, 0), SCSITGT__SR_OK);
	assert_int_equal(fx_buf(f, SCSITGT_IO_READ, 3000, 8, back, 0), SCSITGT__SR_OK);
	assert_memory_equal(buf, back, 4096);
	assert_file_equals(f, 3000 * 512, buf, 4096);
	/* Shrunk below one block: refused, the capacity stays. */
	assert_int_equal(truncate(f->path, 100), 0);
	assert_int_equal(scsitgt_backend_aio_resize(f->bctx, &nb), -EINVAL);
	assert_int_equal(nb, 4096);
	free(buf);
	free(back);
	fx_free(f);
}

/*
 * A write cut short by the kernel (RLIMIT_FSIZE truncates it at the limit) is resubmitted for
 * the rest, which then fails with EFBIG: reported as SPACE ALLOCATION FAILED, never as done.
 */
static void test_short_write_then_enospc(void **state)
{
	struct fx *f = fx_new();
	uint8_t *buf = aligned_buf(4 * 512);
	struct rlimit old;
	struct rlimit lim;
	void (*old_sig)(int);
	enum scsitgt__sense_reason r;

	(void)state;
	fx_file(f, "/var/tmp", MiB);
	assert_int_equal(fx_lun(f, 512, 0, 0), 0);
	aio_test_pattern(buf, 4 * 512, 10);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = old;
	lim.rlim_cur = MiB - 1024;
	old_sig = signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	r = fx_buf(f, SCSITGT_IO_WRITE, MiB / 512 - 4, 4, buf, 0);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, old_sig);
	assert_int_equal(r, SCSITGT__SR_SPACE_ALLOC_FAILED);
	/* The part below the limit was written (the short write was real). */
	assert_file_equals(f, MiB - 2048, buf, 1024);
	free(buf);
	fx_free(f);
}

/* More ios than the kernel queue holds: the rest wait and all complete. */
static void test_queue_depth(void **state)
{
	enum {
		N = 40
	};
	struct fx *f = fx_new();
	struct harness_result res[N];
	struct scsitgt__cmd *cmd[N];
	struct iovec v[N];
	uint8_t *buf = aligned_buf(N * 512);
	uint8_t *back = aligned_buf(N * 512);

	(void)state;
	fx_file(f, "/var/tmp", MiB);
	f->o.queue_depth = 2;
	assert_int_equal(fx_lun(f, 512, 0, 0), 0);
	memset(res, 0, sizeof(res));
	aio_test_pattern(buf, N * 512, 11);
	for (int i = 0; i < N; i++) {
		cmd[i] = harness_cmd_begin(&f->h, 0);
		v[i] = (struct iovec){ buf + i * 512, 512 };
		/* Every other one unaligned in length split: still one block. */
		assert_int_equal(harness_submit(cmd[i], &res[i], SCSITGT_IO_WRITE,
						(uint64_t)(N - 1 - i) * 3, 1, &v[i], 1,
						i % 3 == 0 ? SCSITGT_IO_FLAG_FUA : 0),
				 0);
	}
	for (int i = 0; i < N; i++) {
		harness_wait(&f->h, &res[i], 1);
		assert_int_equal(res[i].reason, SCSITGT__SR_OK);
		harness_cmd_end(cmd[i]);
	}
	memset(res, 0, sizeof(res));
	for (int i = 0; i < N; i++) {
		cmd[i] = harness_cmd_begin(&f->h, 0);
		v[i] = (struct iovec){ back + i * 512, 512 };
		assert_int_equal(harness_submit(cmd[i], &res[i], SCSITGT_IO_READ,
						(uint64_t)(N - 1 - i) * 3, 1, &v[i], 1, 0),
				 0);
	}
	for (int i = 0; i < N; i++) {
		harness_wait(&f->h, &res[i], 1);
		assert_int_equal(res[i].reason, SCSITGT__SR_OK);
		harness_cmd_end(cmd[i]);
	}
	assert_memory_equal(buf, back, N * 512);
	for (int i = 0; i < N; i++) {
		assert_file_equals(f, (off_t)(N - 1 - i) * 3 * 512, buf + i * 512, 512);
	}
	free(buf);
	free(back);
	fx_free(f);
}

/*
 * Older kernels: without RWF_DSYNC a FUA write is followed by an aio fdsync before it
 * completes; without IOCB_CMD_FDSYNC the flushes are fdatasync() calls on the loop.
 */
/* A 1 MiB file on /var/tmp served as a LUN of 512-byte blocks. */
static struct fx *fx_var_tmp_lun(void)
{
	struct fx *f = fx_new();

	fx_file(f, "/var/tmp", MiB);
	assert_int_equal(fx_lun(f, 512, 0, 0), 0);
	return f;
}

static void test_kernel_fallbacks(void **state)
{
	struct fx *f = fx_var_tmp_lun();
	uint8_t *buf = aligned_buf(8 * 512);
	uint8_t *back = aligned_buf(8 * 512);

	(void)state;
	for (int caps = 0; caps < 2; caps++) {
		scsitgt__backend_aio_set_kernel_caps(f->bctx, false, caps == 0);
		aio_test_pattern(buf, 8 * 512, 30 + (uint32_t)caps);
		/* Unaligned too: the bounce buffer lives through the flush phase. */
		assert_int_equal(fx_io(f, SCSITGT_IO_WRITE, 40, 8,
				       (struct iovec[]){ { buf, 1000 }, { buf + 1000, 3096 } }, 2,
				       SCSITGT_IO_FLAG_FUA, NULL),
				 SCSITGT__SR_OK);
		assert_file_equals(f, 40 * 512, buf, 8 * 512);
		assert_int_equal(fx_io(f, SCSITGT_IO_FLUSH, 0, 0, NULL, 0, 0, NULL),
				 SCSITGT__SR_OK);
		assert_int_equal(fx_buf(f, SCSITGT_IO_READ, 40, 8, back, 0), SCSITGT__SR_OK);
		assert_memory_equal(buf, back, 8 * 512);
	}
	free(buf);
	free(back);
	fx_free(f);
}

/*
 * A writeback error is reported once per open file, to whichever flush comes first (aio.c,
 * "Lost writes"): the backend keeps it, so a later FLUSH or FUA write of any initiator fails
 * too, while reads and plain writes go on (review32 R7). The kernel's report is simulated by
 * the hook: a page-cache write cannot be made to fail on demand here.
 */
static void lost_write_check(const char *dir, bool fdsync, int err)
{
	struct fx *f = fx_new();
	uint8_t *buf = aligned_buf(8 * 512);

	fx_file(f, dir, MiB);
	assert_int_equal(fx_lun(f, 512, 0, 0), 0);
	scsitgt__backend_aio_set_kernel_caps(f->bctx, true, fdsync);
	aio_test_pattern(buf, 8 * 512, 50);
	assert_int_equal(fx_buf(f, SCSITGT_IO_WRITE, 0, 8, buf, 0), SCSITGT__SR_OK);
	/* A failed flush of another's FUA write or a plain FLUSH takes the error. */
	scsitgt__backend_aio_inject_sync_error(f->bctx, err);
	assert_int_equal(fx_io(f, SCSITGT_IO_FLUSH, 0, 0, NULL, 0, 0, NULL),
			 SCSITGT__SR_WRITE_ERROR);
	assert_true(aio_test_log_has("every later SYNCHRONIZE CACHE and FUA write fails"));
	/* The kernel would answer the next fdatasync with success: the backend does not. */
	assert_int_equal(fx_io(f, SCSITGT_IO_FLUSH, 0, 0, NULL, 0, 0, NULL),
			 SCSITGT__SR_WRITE_ERROR);
	assert_int_equal(fx_buf(f, SCSITGT_IO_WRITE, 8, 8, buf, SCSITGT_IO_FLAG_FUA),
			 SCSITGT__SR_WRITE_ERROR);
	/* Reads and plain writes are not refused. */
	assert_int_equal(fx_buf(f, SCSITGT_IO_WRITE, 16, 8, buf, 0), SCSITGT__SR_OK);
	memset(buf, 0, 8 * 512);
	assert_int_equal(fx_buf(f, SCSITGT_IO_READ, 16, 8, buf, 0), SCSITGT__SR_OK);
	free(buf);
	fx_free(f);
}

static void test_lost_write_kept(void **state)
{
	(void)state;
	/* O_DIRECT where /var/tmp does it, buffered on tmpfs; fdatasync as an aio/ring
	 * operation and on the loop (the old-kernel fallback). */
	lost_write_check("/var/tmp", true, -EIO);
	lost_write_check("/dev/shm", true, -EIO);
	lost_write_check("/dev/shm", false, -EIO);
	/* Writeback that ran out of space (thin or quota'd file system) lost acknowledged
	 * writes: a WRITE ERROR, not the "free space and retry" 27h/07h that would fail every
	 * later flush after the space was freed (reviewj J2). */
	lost_write_check("/var/tmp", true, -ENOSPC);
	lost_write_check("/dev/shm", true, -ENOSPC);
	lost_write_check("/dev/shm", false, -ENOSPC);
}

/* What is not a lost write is not kept: a FUA write's own ENOSPC (nothing of it was
 * cached). */
static void test_lost_write_not_kept(void **state)
{
	struct fx *f = fx_new();
	uint8_t *buf = aligned_buf(8 * 512);

	(void)state;
	fx_file(f, "/dev/shm", MiB);
	assert_int_equal(fx_lun(f, 512, 0, 0), 0);
	aio_test_pattern(buf, 8 * 512, 51);
	scsitgt__backend_aio_inject_sync_error(f->bctx, -ENOSPC);
	assert_int_equal(fx_buf(f, SCSITGT_IO_WRITE, 0, 8, buf, SCSITGT_IO_FLAG_FUA),
			 SCSITGT__SR_SPACE_ALLOC_FAILED);
	assert_int_equal(fx_io(f, SCSITGT_IO_FLUSH, 0, 0, NULL, 0, 0, NULL), SCSITGT__SR_OK);
	assert_int_equal(fx_buf(f, SCSITGT_IO_WRITE, 0, 8, buf, SCSITGT_IO_FLAG_FUA),
			 SCSITGT__SR_OK);
	assert_false(aio_test_log_has("every later SYNCHRONIZE CACHE"));
	free(buf);
	fx_free(f);
}

/*
 * An O_DIRECT LUN has page-cache writeback too (a partial-block UNMAP zeroed through the page
 * cache, a file system that falls back to buffered writes): the EIO of its FUA write may be
 * that writeback's, consumed by the write's RWF_DSYNC flush, so it is kept as a FLUSH's is,
 * and the initiator whose zeroing was lost gets no GOOD for its SYNCHRONIZE CACHE (reviewg
 * F6).
 */
static void test_lost_write_direct_fua(void **state)
{
	struct fx *f = fx_new();
	uint8_t *buf = aligned_buf(8 * 512);

	(void)state;
	fx_file(f, "/var/tmp", MiB);
	assert_int_equal(fx_lun(f, 512, 0, 0), 0);
	if (scsitgt_backend_aio_is_direct(f->bctx) != 1) {
		print_message("/var/tmp is not O_DIRECT here: skipped\n");
	} else {
		aio_test_pattern(buf, 8 * 512, 52);
		scsitgt__backend_aio_inject_sync_error(f->bctx, -EIO);
		assert_int_equal(fx_buf(f, SCSITGT_IO_WRITE, 0, 8, buf, SCSITGT_IO_FLAG_FUA),
				 SCSITGT__SR_WRITE_ERROR);
		assert_true(aio_test_log_has("every later SYNCHRONIZE CACHE and FUA write fails"));
		assert_int_equal(fx_io(f, SCSITGT_IO_FLUSH, 0, 0, NULL, 0, 0, NULL),
				 SCSITGT__SR_WRITE_ERROR);
		assert_int_equal(fx_buf(f, SCSITGT_IO_WRITE, 8, 8, buf, SCSITGT_IO_FLAG_FUA),
				 SCSITGT__SR_WRITE_ERROR);
		assert_int_equal(fx_buf(f, SCSITGT_IO_WRITE, 16, 8, buf, 0), SCSITGT__SR_OK);
	}
	free(buf);
	fx_free(f);
}

/* A completion of -EINTR (io_uring's for an interrupted NFS or FUSE request) or -EAGAIN is
 * a "try again": the request is issued again, a bounded number of times, instead of failing
 * the command with a HARDWARE ERROR (review32 N10). */
static void test_interrupted_retried(void **state)
{
	struct fx *f = fx_var_tmp_lun();
	uint8_t *buf = aligned_buf(8 * 512);
	uint8_t *back = aligned_buf(8 * 512);

	(void)state;
	aio_test_pattern(buf, 8 * 512, 60);
	scsitgt__backend_aio_inject_result(f->bctx, -EINTR, 3);
	assert_int_equal(fx_buf(f, SCSITGT_IO_WRITE, 24, 8, buf, 0), SCSITGT__SR_OK);
	scsitgt__backend_aio_inject_result(f->bctx, -EAGAIN, 2);
	assert_int_equal(fx_buf(f, SCSITGT_IO_READ, 24, 8, back, 0), SCSITGT__SR_OK);
	assert_memory_equal(buf, back, 8 * 512);
	scsitgt__backend_aio_inject_result(f->bctx, -EINTR, 1);
	assert_int_equal(fx_io(f, SCSITGT_IO_FLUSH, 0, 0, NULL, 0, 0, NULL), SCSITGT__SR_OK);
	/* Bounded: a request that keeps being interrupted fails. */
	scsitgt__backend_aio_inject_result(f->bctx, -EINTR, 100);
	assert_int_not_equal(fx_buf(f, SCSITGT_IO_READ, 24, 8, back, 0), SCSITGT__SR_OK);
	scsitgt__backend_aio_inject_result(f->bctx, 0, 0);
	assert_int_equal(fx_buf(f, SCSITGT_IO_READ, 24, 8, back, 0), SCSITGT__SR_OK);
	free(buf);
	free(back);
	fx_free(f);
}

/*
 * The engine choice: AUTO takes io_uring where it can be set up and says why when it cannot;
 * a refused io_uring (forced by the test hook, as with kernel.io_uring_disabled) makes AUTO
 * fall back to libaio with a log line, and an explicit IO_URING fail with -ENOTSUP.
 */
static void test_engine_choice(void **state)
{
	static const enum scsitgt_backend_aio_engine engines[] = {
		SCSITGT_BACKEND_AIO_ENGINE_AUTO,
		SCSITGT_BACKEND_AIO_ENGINE_LIBAIO,
		SCSITGT_BACKEND_AIO_ENGINE_IO_URING,
	};
	struct fx *f = fx_new();
	uint8_t *buf = aligned_buf(4096);
	uint8_t *back = aligned_buf(4096);
	void *b = NULL;
	int got;

	(void)state;
	fx_file(f, "/var/tmp", MiB);
	f->o.engine = (enum scsitgt_backend_aio_engine)7;
	assert_int_equal(scsitgt_backend_aio_create(&b, &f->o), -EINVAL);
	assert_int_equal(scsitgt_backend_aio_get_engine(NULL), -EINVAL);

	f->o.engine = SCSITGT_BACKEND_AIO_ENGINE_AUTO;
	assert_int_equal(scsitgt_backend_aio_create(&b, &f->o), 0);
	got = scsitgt_backend_aio_get_engine(b);
	print_message("AUTO chose %s\n",
		      got == SCSITGT_BACKEND_AIO_ENGINE_IO_URING ? "io_uring" : "libaio");
	if (got == SCSITGT_BACKEND_AIO_ENGINE_LIBAIO) {
		assert_true(aio_test_log_has("libaio engine: io_uring unavailable"));
	} else {
		assert_int_equal(got, SCSITGT_BACKEND_AIO_ENGINE_IO_URING);
	}
	f->ops->close(b, NULL, NULL);

	scsitgt__backend_aio_refuse_uring(true);
	for (size_t i = 0; i < sizeof(engines) / sizeof(engines[0]); i++) {
		aio_test_log_clear();
		f->o.engine = engines[i];
		b = NULL;
		if (engines[i] == SCSITGT_BACKEND_AIO_ENGINE_IO_URING) {
			assert_int_equal(scsitgt_backend_aio_create(&b, &f->o), -ENOTSUP);
			assert_null(b);
			assert_true(aio_test_log_has("io_uring engine unavailable: refused"));
			continue;
		}
		assert_int_equal(scsitgt_backend_aio_create(&b, &f->o), 0);
		assert_int_equal(scsitgt_backend_aio_get_engine(b),
				 SCSITGT_BACKEND_AIO_ENGINE_LIBAIO);
		assert_int_equal(aio_test_log_has("libaio engine: io_uring unavailable: refused"),
				 engines[i] == SCSITGT_BACKEND_AIO_ENGINE_AUTO);
		f->ops->close(b, NULL, NULL);
	}
	/* The fallback serves a LUN like the default engine. */
	f->o.engine = SCSITGT_BACKEND_AIO_ENGINE_AUTO;
	assert_int_equal(fx_lun(f, 512, 0, 0), 0);
	scsitgt__backend_aio_refuse_uring(false);
	assert_true(aio_test_log_has("file, libaio,"));
	aio_test_pattern(buf, 4096, 40);
	assert_int_equal(fx_buf(f, SCSITGT_IO_WRITE, 8, 8, buf, SCSITGT_IO_FLAG_FUA),
			 SCSITGT__SR_OK);
	assert_int_equal(fx_io(f, SCSITGT_IO_FLUSH, 0, 0, NULL, 0, 0, NULL), SCSITGT__SR_OK);
	assert_int_equal(fx_buf(f, SCSITGT_IO_READ, 8, 8, back, 0), SCSITGT__SR_OK);
	assert_memory_equal(buf, back, 4096);
	assert_file_equals(f, 8 * 512, buf, 4096);
	free(buf);
	free(back);
	fx_free(f);
}

/*
 * uring_async: which buffered reads and writes the home loop's io_uring ring sends to io-wq
 * (IOSQE_ASYNC). AUTO and ALWAYS punt on home (the loop that serves every connection without
 * workers), NEVER tries inline first; the data is right either way. O_DIRECT never punts. An
 * unknown value is refused. uring_issue() punts a request when its loop punts and the file is
 * not open O_DIRECT: the test checks both inputs of that (home punting, the open mode).
 */
static void test_uring_async(void **state)
{
	static const struct {
		enum scsitgt_backend_aio_uring_async mode;
		bool direct;
		bool punts;
		const char *log;
	} cases[] = {
		{ SCSITGT_BACKEND_AIO_URING_ASYNC_AUTO, false, true, "uring_async=auto" },
		{ SCSITGT_BACKEND_AIO_URING_ASYNC_ALWAYS, false, true, "uring_async=always" },
		{ SCSITGT_BACKEND_AIO_URING_ASYNC_NEVER, false, false, "uring_async=never" },
		{ SCSITGT_BACKEND_AIO_URING_ASYNC_ALWAYS, true, false, NULL },
	};
	uint8_t *buf = aligned_buf(4096);
	uint8_t *back = aligned_buf(4096);
	void *b = NULL;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fx *f = fx_new();

		fx_file(f, "/var/tmp", MiB);
		if (i == 0) {
			f->o.uring_async = (enum scsitgt_backend_aio_uring_async)3;
			assert_int_equal(scsitgt_backend_aio_create(&b, &f->o), -EINVAL);
		}
		if (f->o.engine != SCSITGT_BACKEND_AIO_ENGINE_IO_URING) {
			print_message("not the io_uring engine (AIO_TEST_ENGINE): skipped\n");
			fx_free(f);
			free(buf);
			free(back);
			skip();
			return;
		}
		f->o.direct = cases[i].direct;
		f->o.uring_async = cases[i].mode;
		assert_int_equal(fx_lun(f, 512, 0, 0), 0);
		if (cases[i].direct && scsitgt_backend_aio_is_direct(f->bctx) == 0) {
			print_message("/var/tmp without O_DIRECT: direct case skipped\n");
			fx_free(f);
			continue;
		}
		if (cases[i].log) {
			assert_true(aio_test_log_has(cases[i].log));
		}
		aio_test_pattern(buf, 4096, 50 + (int)i);
		assert_int_equal(fx_buf(f, SCSITGT_IO_WRITE, 8, 8, buf, SCSITGT_IO_FLAG_FUA),
				 SCSITGT__SR_OK);
		assert_int_equal(fx_buf(f, SCSITGT_IO_READ, 8, 8, back, 0), SCSITGT__SR_OK);
		assert_memory_equal(buf, back, 4096);
		assert_file_equals(f, 8 * 512, buf, 4096);
		/* Home alone submits here: its ring is the one that punted or did not. */
		assert_int_equal(scsitgt__backend_aio_loop_count(f->bctx), 1);
		assert_int_equal(scsitgt__backend_aio_uring_punting_loops(f->bctx) == 1 &&
					 scsitgt_backend_aio_is_direct(f->bctx) == 0,
				 cases[i].punts);
		fx_free(f);
	}
	free(buf);
	free(back);
}

/*
 * UNMAP and WRITE ZEROES on a sparse file: over holes nothing gets allocated and zeros read
 * back; over data UNMAP frees the blocks and GET LBA STATUS reports them deallocated. On the
 * io_uring engine both are IORING_OP_FALLOCATE, completed through the ring.
 */
static void test_thin_sparse(void **state)
{
	struct fx *f = fx_new();
	uint8_t *buf = aligned_buf(64 * 1024);
	uint8_t *zero = calloc(1, 64 * 1024);
	uint64_t n = 0;
	bool mapped = true;
	blkcnt_t base;

	(void)state;
	assert_non_null(zero);
	fx_file(f, "/var/tmp", 16 * MiB);
	assert_int_equal(fx_lun(f, 512, 0, SCSITGT_LUN_THIN), 0);
	if (!f->ops->supports(f->bctx, SCSITGT_IO_UNMAP) ||
	    !f->ops->supports(f->bctx, SCSITGT_IO_WRITE_ZEROES)) {
		print_message("%s: no hole punching or zero range: skipped\n", f->path);
		free(buf);
		free(zero);
		fx_free(f);
		skip();
		return;
	}
	base = file_blocks(f->path);
	/* UNMAP over holes allocates nothing; WRITE ZEROES there may allocate (ZERO_RANGE leaves
	 * unwritten extents). Zeros read back either way. */
	assert_int_equal(fx_io(f, SCSITGT_IO_UNMAP, 0, 8192, NULL, 0, 0, NULL), SCSITGT__SR_OK);
	assert_int_equal(file_blocks(f->path), base);
	assert_int_equal(fx_io(f, SCSITGT_IO_WRITE_ZEROES, 8192, 128, NULL, 0, 0, NULL),
			 SCSITGT__SR_OK);
	base = file_blocks(f->path);
	assert_int_equal(fx_buf(f, SCSITGT_IO_READ, 8192, 128, buf, 0), SCSITGT__SR_OK);
	assert_memory_equal(buf, zero, 64 * 1024);
	/* Data in the middle of the holes, then unmapped again. */
	aio_test_pattern(buf, 64 * 1024, 41);
	assert_int_equal(fx_buf(f, SCSITGT_IO_WRITE, 16384, 128, buf, SCSITGT_IO_FLAG_FUA),
			 SCSITGT__SR_OK);
	assert_int_equal(f->ops->get_lba_status(f->bctx, 16384, &n, &mapped), 0);
	assert_true(mapped);
	assert_true(file_blocks(f->path) > base);
	assert_int_equal(fx_io(f, SCSITGT_IO_UNMAP, 16384, 128, NULL, 0, 0, NULL), SCSITGT__SR_OK);
	assert_int_equal(f->ops->get_lba_status(f->bctx, 16384, &n, &mapped), 0);
	assert_false(mapped);
	assert_int_equal(fx_buf(f, SCSITGT_IO_READ, 16384, 128, buf, 0), SCSITGT__SR_OK);
	assert_memory_equal(buf, zero, 64 * 1024);
	assert_file_equals(f, 16384 * 512, zero, 64 * 1024);
	/* Several in flight at once, mixed with writes around them. */
	{
		enum {
			N = 16
		};
		struct harness_result res[N];
		struct scsitgt__cmd *cmd[N];
		struct iovec v = { buf, 4096 };

		memset(res, 0, sizeof(res));
		aio_test_pattern(buf, 4096, 42);
		for (int i = 0; i < N; i++) {
			enum scsitgt_io_type t = i % 3 == 0 ? SCSITGT_IO_UNMAP :
						 i % 3 == 1 ? SCSITGT_IO_WRITE_ZEROES :
							      SCSITGT_IO_WRITE;

			cmd[i] = harness_cmd_begin(&f->h, 0);
			assert_int_equal(harness_submit(cmd[i], &res[i], t,
							20000 + 64 * (uint64_t)i, 8,
							t == SCSITGT_IO_WRITE ? &v : NULL,
							t == SCSITGT_IO_WRITE ? 1 : 0, 0),
					 0);
		}
		for (int i = 0; i < N; i++) {
			harness_wait(&f->h, &res[i], 1);
			assert_int_equal(res[i].reason, SCSITGT__SR_OK);
			harness_cmd_end(cmd[i]);
			if (i % 3 == 2) {
				assert_file_equals(f, (20000 + 64 * (off_t)i) * 512, buf, 4096);
			} else {
				assert_file_equals(f, (20000 + 64 * (off_t)i) * 512, zero, 4096);
			}
		}
	}
	free(buf);
	free(zero);
	fx_free(f);
}

/*
 * UNMAP of one 512-byte block inside a 4 KiB file system block (reviewg C5): the file system
 * cannot free part of its block, so it zeroes that part in place. The LUN reports LBPRZ: the
 * block reads zeros, its neighbours keep their data, and GET LBA STATUS calls the block mapped
 * (its file system block is still allocated), which SBC-4 allows after an UNMAP.
 */
static void test_unmap_partial_fs_block(void **state)
{
	struct fx *f = fx_new();
	uint8_t *buf = aligned_buf(8 * 512);
	uint8_t *back = aligned_buf(8 * 512);
	struct statfs sfs;
	uint64_t n = 0;
	bool mapped = false;

	(void)state;
	fx_file(f, "/var/tmp", MiB);
	assert_int_equal(fx_lun(f, 512, 0, SCSITGT_LUN_THIN), 0);
	assert_int_equal(statfs(f->path, &sfs), 0);
	if (!f->ops->supports(f->bctx, SCSITGT_IO_UNMAP) || sfs.f_bsize < 4096) {
		print_message("%s: no hole punching or blocks below 4 KiB: skipped\n", f->path);
		free(buf);
		free(back);
		fx_free(f);
		skip();
		return;
	}
	aio_test_pattern(buf, 8 * 512, 90);
	assert_int_equal(fx_buf(f, SCSITGT_IO_WRITE, 0, 8, buf, SCSITGT_IO_FLAG_FUA),
			 SCSITGT__SR_OK);
	assert_true(fx_geo(f).flags & SCSITGT_GEOMETRY_LBPRZ);
	assert_int_equal(fx_io(f, SCSITGT_IO_UNMAP, 3, 1, NULL, 0, 0, NULL), SCSITGT__SR_OK);
	assert_int_equal(fx_buf(f, SCSITGT_IO_READ, 0, 8, back, 0), SCSITGT__SR_OK);
	memset(buf + 3 * 512, 0, 512);
	assert_memory_equal(back, buf, 8 * 512);
	assert_file_equals(f, 0, buf, 8 * 512);
	assert_int_equal(f->ops->get_lba_status(f->bctx, 3, &n, &mapped), 0);
	assert_true(mapped);
	assert_int_equal(n, 5);
	free(buf);
	free(back);
	fx_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_errors),
		cmocka_unit_test(test_close_unopened),
		cmocka_unit_test(test_log_level),
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_file_direct),
		cmocka_unit_test(test_file_buffered_requested),
		cmocka_unit_test(test_tmpfs_buffered),
		cmocka_unit_test(test_write_through),
		cmocka_unit_test(test_write_through_dealloc_durable),
		cmocka_unit_test(test_fua_write_dsync),
		cmocka_unit_test(test_read_only),
		cmocka_unit_test(test_thin_file),
		cmocka_unit_test(test_thin_tmpfs),
		cmocka_unit_test(test_read_past_eof),
		cmocka_unit_test(test_failed_bounced_read),
		cmocka_unit_test(test_dio_segment_alignment),
		cmocka_unit_test(test_resize),
		cmocka_unit_test(test_short_write_then_enospc),
		cmocka_unit_test(test_queue_depth),
		cmocka_unit_test(test_kernel_fallbacks),
		cmocka_unit_test(test_lost_write_kept),
		cmocka_unit_test(test_lost_write_not_kept),
		cmocka_unit_test(test_lost_write_direct_fua),
		cmocka_unit_test(test_interrupted_retried),
		cmocka_unit_test(test_engine_choice),
		cmocka_unit_test(test_uring_async),
		cmocka_unit_test(test_thin_sparse),
		cmocka_unit_test(test_unmap_partial_fs_block),
	};

	aio_test_engine_require();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
