/* SPDX-License-Identifier: MIT */
/*
 * The aio backend on real media: a file on /var/tmp (O_DIRECT expected where the file system
 * does direct I/O), a file on /dev/shm (tmpfs: buffered), and a loop block device where
 * losetup works. ios go through the core's io path (io_harness.c), so completion statuses are
 * checked as the sense reasons the core derives from them.
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
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "aio_test_util.h"
#include "backend/aio_hooks.h"
#include "backend/aio_int.h"
#include "core/core.h"
#include "io_harness.h"
#include "libscsitgt/backend_aio.h"

#define MiB (1024 * 1024)

struct fx {
	struct harness h;
	char *path;
	void *bctx;
	struct scsitgt_lun *lun;
	const struct scsitgt_backend_ops *ops;
	struct scsitgt_backend_aio_opts o;
};

static struct fx *fx_new(void)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	harness_init(&f->h);
	f->ops = scsitgt_backend_aio_ops();
	assert_non_null(f->ops);
	aio_test_log_clear();
	return f;
}

static void fx_free(struct fx *f)
{
	harness_fini(&f->h);
	aio_test_file_remove(f->path);
	free(f);
}

/* A scratch file of @size bytes in @dir, or skip the test when @dir cannot hold one. */
static void fx_file(struct fx *f, const char *dir, off_t size)
{
	f->path = aio_test_file(dir, size);
	if (f->path == NULL) {
		print_message("no scratch file in %s (%s): skipped\n", dir, strerror(errno));
		fx_free(f);
		skip();
		return;
	}
	aio_test_opts(&f->o, &f->h.loop, f->path);
}

/* Create the backend over f->path with f->o and LUN 0 over it; returns lun_create's code. */
static int fx_lun(struct fx *f, uint32_t bs, uint64_t nblocks, uint32_t flags)
{
	int rc;

	assert_int_equal(scsitgt_backend_aio_create(&f->bctx, &f->o), 0);
	rc = harness_lun(&f->h, &f->lun, 0, f->ops, f->bctx, bs, nblocks, flags);
	if (rc < 0) {
		/* The caller keeps the context on failure (lun.h). */
		f->ops->close(f->bctx, NULL, NULL);
		f->bctx = NULL;
		f->lun = NULL;
	}
	return rc;
}

static struct scsitgt_lun_geometry fx_geo(struct fx *f)
{
	struct scsitgt_lun_geometry g = { .size = sizeof(g) };

	assert_int_equal(scsitgt_lun_get_geometry(f->lun, &g), 0);
	return g;
}

/* One io with @flags on a fresh command; returns the core's reason. */
static enum scsitgt__sense_reason fx_io(struct fx *f, enum scsitgt_io_type type, uint64_t lba,
					uint32_t nblocks, const struct iovec *iov, int iovcnt,
					uint32_t flags, struct harness_result *out)
{
	struct harness_result res = { 0 };
	struct scsitgt__cmd *cmd = harness_cmd_begin(&f->h, 0);

	assert_int_equal(harness_submit(cmd, &res, type, lba, nblocks, iov, iovcnt, flags), 0);
	harness_wait(&f->h, &res, 1);
	harness_cmd_end(cmd);
	if (out) {
		*out = res;
	}
	return res.reason;
}

static enum scsitgt__sense_reason fx_buf(struct fx *f, enum scsitgt_io_type type, uint64_t lba,
					 uint32_t nblocks, void *buf, uint32_t flags)
{
	struct iovec v = { buf, (size_t)nblocks * fx_geo(f).block_size };

	return fx_io(f, type, lba, nblocks, &v, 1, flags, NULL);
}

static void *aligned_buf(size_t len)
{
	void *p = NULL;

	assert_int_equal(posix_memalign(&p, 4096, len), 0);
	return p;
}

/* Reads of the file bytes at @off equal @expect. */
#define assert_file_equals(f, off, expect, len) \
	assert_true(aio_test_file_equals((f)->path, (off), (expect), (len)))

/*
 * Whether the backing file holds @expect at @off. A block device has its own page cache in
 * buffered mode: flush it first (a file shares the page cache with pread, no flush needed).
 */
static bool backing_equals(struct fx *f, const char *backing, off_t off, const void *expect,
			   size_t len)
{
	if ((f->path == NULL || strcmp(backing, f->path) != 0) &&
	    f->ops->supports(f->bctx, SCSITGT_IO_FLUSH)) {
		assert_int_equal(fx_io(f, SCSITGT_IO_FLUSH, 0, 0, NULL, 0, 0, NULL),
				 SCSITGT__SR_OK);
	}
	return aio_test_file_equals(backing, off, expect, len);
}

/*
 * Round trips that every medium must pass: aligned iovecs, unaligned ones (the bounce path in
 * O_DIRECT mode), more iovecs than one iocb takes, and the bytes in the backing file.
 */
static void roundtrip_suite(struct fx *f, const char *backing)
{
	const uint32_t bs = fx_geo(f).block_size;
	const size_t len = 8 * (size_t)bs;
	uint8_t *src = aligned_buf(len);
	uint8_t *dst = aligned_buf(len);
	uint8_t *u_src = malloc(len + 64);
	uint8_t *u_dst = malloc(len + 64);
	struct iovec v[4];
	struct iovec *many;
	uint8_t *tiny;
	const int nmany = 2048;

	assert_non_null(u_src);
	assert_non_null(u_dst);

	/* Aligned: two page-aligned halves. */
	aio_test_pattern(src, len, 1);
	v[0] = (struct iovec){ src, len / 2 };
	v[1] = (struct iovec){ src + len / 2, len / 2 };
	assert_int_equal(fx_io(f, SCSITGT_IO_WRITE, 10, 8, v, 2, 0, NULL), SCSITGT__SR_OK);
	memset(dst, 0, len);
	v[0] = (struct iovec){ dst, len / 2 };
	v[1] = (struct iovec){ dst + len / 2, len / 2 };
	assert_int_equal(fx_io(f, SCSITGT_IO_READ, 10, 8, v, 2, 0, NULL), SCSITGT__SR_OK);
	assert_memory_equal(src, dst, len);
	if (backing) {
		assert_true(backing_equals(f, backing, 10 * (off_t)bs, src, len));
	}

	/* Unaligned addresses and lengths: bounced in O_DIRECT mode, never refused. */
	aio_test_pattern(u_src + 1, len, 2);
	v[0] = (struct iovec){ u_src + 1, 1 };
	v[1] = (struct iovec){ u_src + 2, 511 };
	v[2] = (struct iovec){ u_src + 513, 1000 };
	v[3] = (struct iovec){ u_src + 1513, len - 1512 };
	assert_int_equal(fx_io(f, SCSITGT_IO_WRITE, 100, 8, v, 4, 0, NULL), SCSITGT__SR_OK);
	memset(u_dst, 0, len + 64);
	v[0] = (struct iovec){ u_dst + 3, 7 };
	v[1] = (struct iovec){ u_dst + 10, len - 72 };
	v[2] = (struct iovec){ u_dst + 10 + len - 72, 65 };
	assert_int_equal(fx_io(f, SCSITGT_IO_READ, 100, 8, v, 3, 0, NULL), SCSITGT__SR_OK);
	assert_memory_equal(u_src + 1, u_dst + 3, len);
	if (backing) {
		assert_true(backing_equals(f, backing, 100 * (off_t)bs, u_src + 1, len));
	}

	/* 2048 two-byte iovecs: more than one iocb takes (UIO_MAXIOV). */
	many = calloc((size_t)nmany, sizeof(*many));
	tiny = malloc((size_t)nmany * 2);
	assert_non_null(many);
	assert_non_null(tiny);
	aio_test_pattern(tiny, (size_t)nmany * 2, 3);
	for (int i = 0; i < nmany; i++) {
		many[i] = (struct iovec){ tiny + 2 * i, 2 };
	}
	assert_int_equal(
		fx_io(f, SCSITGT_IO_WRITE, 200, (uint32_t)(nmany * 2 / bs), many, nmany, 0, NULL),
		SCSITGT__SR_OK);
	memset(dst, 0, len);
	assert_int_equal(fx_buf(f, SCSITGT_IO_READ, 200, (uint32_t)(nmany * 2 / bs), dst, 0),
			 SCSITGT__SR_OK);
	assert_memory_equal(tiny, dst, (size_t)nmany * 2);
	memset(tiny, 0, (size_t)nmany * 2);
	assert_int_equal(
		fx_io(f, SCSITGT_IO_READ, 200, (uint32_t)(nmany * 2 / bs), many, nmany, 0, NULL),
		SCSITGT__SR_OK);
	assert_memory_equal(tiny, dst, (size_t)nmany * 2);

	/* FUA write and FLUSH complete, and the data is there. */
	aio_test_pattern(src, len, 4);
	assert_int_equal(fx_buf(f, SCSITGT_IO_WRITE, 300, 8, src, SCSITGT_IO_FLAG_FUA),
			 SCSITGT__SR_OK);
	if (f->ops->supports(f->bctx, SCSITGT_IO_FLUSH)) {
		assert_int_equal(fx_io(f, SCSITGT_IO_FLUSH, 0, 0, NULL, 0, 0, NULL),
				 SCSITGT__SR_OK);
	}
	if (backing) {
		assert_true(backing_equals(f, backing, 300 * (off_t)bs, src, len));
	}

	free(many);
	free(tiny);
	free(u_src);
	free(u_dst);
	free(src);
	free(dst);
}

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
	struct harness_result res;
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
	/* After resize the backend refuses the range itself: LBA OUT OF RANGE. */
	assert_int_equal(scsitgt_backend_aio_resize(f->bctx, &nb), 0);
	assert_int_equal(nb, 1024);
	assert_int_equal(
		fx_io(f, SCSITGT_IO_READ, 1500, 8, &(struct iovec){ buf, 8 * 512 }, 1, 0, &res),
		SCSITGT__SR_RAW);
	assert_int_equal(res.raw.key, 0x5);
	assert_int_equal(res.raw.asc, 0x21);
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
	struct harness_result res;
	uint64_t nb = 0;

	(void)state;
	fx_file(f, "/var/tmp", MiB);
	assert_int_equal(fx_lun(f, 512, 0, 0), 0);
	aio_test_pattern(buf, 4096, 8);
	/* Beyond the capacity: LBA OUT OF RANGE from the backend. */
	assert_int_equal(
		fx_io(f, SCSITGT_IO_WRITE, 3000, 8, &(struct iovec){ buf, 4096 }, 1, 0, &res),
		SCSITGT__SR_RAW);
	assert_int_equal(res.raw.asc, 0x21);
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
static void lost_write_check(const char *dir, bool fdsync)
{
	struct fx *f = fx_new();
	uint8_t *buf = aligned_buf(8 * 512);

	fx_file(f, dir, MiB);
	assert_int_equal(fx_lun(f, 512, 0, 0), 0);
	scsitgt__backend_aio_set_kernel_caps(f->bctx, true, fdsync);
	aio_test_pattern(buf, 8 * 512, 50);
	assert_int_equal(fx_buf(f, SCSITGT_IO_WRITE, 0, 8, buf, 0), SCSITGT__SR_OK);
	/* A failed flush of another's FUA write or a plain FLUSH takes the error. */
	scsitgt__backend_aio_inject_sync_error(f->bctx, -EIO);
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
	lost_write_check("/var/tmp", true);
	lost_write_check("/dev/shm", true);
	lost_write_check("/dev/shm", false);
}

/* What is not a lost write is not kept: a FUA write's own ENOSPC (nothing of it was cached),
 * and an O_DIRECT FUA write's EIO (its own data). */
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

	f = fx_new();
	buf = aligned_buf(8 * 512);
	fx_file(f, "/var/tmp", MiB);
	assert_int_equal(fx_lun(f, 512, 0, 0), 0);
	if (scsitgt_backend_aio_is_direct(f->bctx) != 1) {
		print_message("/var/tmp is not O_DIRECT here: the direct half skipped\n");
	} else {
		scsitgt__backend_aio_inject_sync_error(f->bctx, -EIO);
		assert_int_equal(fx_buf(f, SCSITGT_IO_WRITE, 0, 8, buf, SCSITGT_IO_FLAG_FUA),
				 SCSITGT__SR_WRITE_ERROR);
		assert_int_equal(fx_io(f, SCSITGT_IO_FLUSH, 0, 0, NULL, 0, 0, NULL),
				 SCSITGT__SR_OK);
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
		cmocka_unit_test(test_create_errors),
		cmocka_unit_test(test_close_unopened),
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_file_direct),
		cmocka_unit_test(test_file_buffered_requested),
		cmocka_unit_test(test_tmpfs_buffered),
		cmocka_unit_test(test_write_through),
		cmocka_unit_test(test_write_through_dealloc_durable),
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
		cmocka_unit_test(test_interrupted_retried),
		cmocka_unit_test_teardown(test_block_device, loop_teardown),
		cmocka_unit_test(test_durability_kill9),
		cmocka_unit_test(test_engine_choice),
		cmocka_unit_test(test_uring_async),
		cmocka_unit_test(test_thin_sparse),
		cmocka_unit_test_teardown(test_dm_error, dm_teardown),
	};

	aio_test_engine_require();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
