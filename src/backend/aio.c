/* SPDX-License-Identifier: MIT */
/*
 * The aio backend: a regular file or a block device through one of two kernel I/O engines.
 * This file holds what they share up to submit (options, probes, geometry, open and close, the
 * per-loop contexts, submit, the ops table); aio_req.c the request state machine after it
 * (bounce copies, short transfers, retries, FUA and flush fallbacks, errno mapping, the
 * lost-writeback latch); aio_hooks.c the test hooks of aio_hooks.h. Each engine is its own file
 * behind struct aio_engine (aio_int.h): aio_libaio.c and aio_uring.c.
 *
 * libaio (Linux native AIO): reads and writes become IOCB_CMD_PREADV / PWRITEV iocbs carrying
 * an eventfd (io_set_eventfd); the eventfd is watched by a uv_poll_t on the submitting loop,
 * whose callback drains io_getevents() in batches and completes the ios there. No thread per
 * io, no thread at all.
 *
 * Several loops (SCSITGT_BACKEND_MULTI_LOOP, docs/threading.md section 3): every loop that
 * submits has its own struct aio_loop (a per-loop context of loop_ctx.h): a kernel context
 * (io_context or ring), an eventfd and its uv_poll_t on that loop, its queue of requests
 * waiting for a kernel slot and its scratch iovecs. The home loop's is made at create (where
 * the engine is chosen); another loop's at its first submit, on that loop's thread, and pushed
 * on a list that submits read without a lock. An io completes on the loop that submitted it.
 * What the loops share is read-only after open() except the capacity (an atomic, changed by a
 * resize on home) and the kernel's refusals of RWF_DSYNC / aio fdsync (atomic flags). close()
 * (home) sends each other loop a message on which that loop, once nothing of it is in the
 * kernel, closes its handles and releases its kernel context; the last loop to finish wakes
 * home, which frees the context and calls back. Every loop that submitted must therefore
 * still run until then (the engine stops its workers after closing its LUNs; a worker whose
 * loop still carries a context of a LUN whose ios the engine gave up on at shutdown runs that
 * loop on until the host closes the backend, core/worker.c).
 *
 * io_uring (liburing, the default where the build and the kernel allow it): one ring per
 * context, its eventfd registered (io_uring_register_eventfd) and watched the same way.
 * Reads and writes are IORING_OP_READV / WRITEV, FLUSH is IORING_OP_FSYNC with
 * IORING_FSYNC_DATASYNC, UNMAP and WRITE ZEROES on files are IORING_OP_FALLOCATE. The kernel
 * never waits for the medium inside io_uring_enter(): buffered reads and writes are either
 * sent to the kernel's io-wq workers at once (IOSQE_ASYNC) or tried without blocking first
 * (a hit is copied inside io_uring_enter(), a miss starts its readahead there and completes
 * later), per ring as the uring_async option says (uring_setup: by default io-wq on the home
 * loop's ring, inline first on worker loops' rings); O_DIRECT ones are asynchronous in the
 * block layer, and fsync / fallocate always run in io-wq. Those are the
 * kernel's threads, not ours. What the engine needs is probed at create: a ring, stable submissions
 * (IORING_FEAT_SUBMIT_STABLE, Linux 5.5: the iovec arrays are copied during the submission,
 * so the kiov scratch array can be reused) and the four opcodes (IORING_REGISTER_PROBE,
 * Linux 5.6); when one is missing (or io_uring is disabled: kernel.io_uring_disabled,
 * seccomp), AUTO falls back to libaio and logs why. Registered buffers (IORING_OP_READ_FIXED)
 * are not used: the data lives in the core's and the transports' buffers, which are not one
 * registrable pool, and what they would save was measured at 0.27 us of CPU per 4 KiB O_DIRECT
 * read (docs/benchmarks-io-uring.md, "uring-fixed-bench"), about what a copy into a registered
 * bounce buffer costs.
 *
 * I/O mode. O_DIRECT is tried at create: it is kept when the file system really does direct
 * I/O (statx STATX_DIOALIGN reports an alignment; tmpfs and ramfs, whose page cache is the
 * medium, are treated as buffered even where they accept the flag) and the LUN block size is a
 * multiple of the required file offset alignment. Otherwise the file is used buffered. In
 * O_DIRECT mode an iovec list that is not aligned to the memory alignment (or is too long for
 * one iocb) is bounced through an aligned buffer, never refused. Note that the kernel performs
 * buffered AIO inside io_submit(): in buffered mode a read that misses the page cache blocks
 * the loop for its duration. O_DIRECT is truly asynchronous.
 *
 * Durability (SBC-4 §4.14 write caching, §5.24 SYNCHRONIZE CACHE, FUA of READ/WRITE):
 * - FLUSH is an IOCB_CMD_FDSYNC iocb, asynchronous (Linux >= 4.18). Older kernels refuse it
 *   with EINVAL at io_submit(); we then fall back, once and for good, to fdatasync() called on
 *   the loop. That blocks the loop for the flush, which we accept over hiding a thread in the
 *   library (design rule: no hidden threads); it is logged so that the host knows.
 * - FUA writes carry RWF_DSYNC in iocb->aio_rw_flags (Linux >= 4.13), which makes that one
 *   write durable before its completion is posted. Where the kernel refuses the flag the write
 *   is followed by the FLUSH above before the io completes.
 * - A READ with FUA arrives as a FLUSH and then a plain READ io (the core's, sbc.c).
 * - write_through opens the file O_DSYNC: every write is durable, there is no volatile cache
 *   to report, FLUSH is not offered and FUA needs nothing.
 *
 * Thin provisioning. UNMAP punches holes (fallocate PUNCH_HOLE|KEEP_SIZE) in files and
 * discards (BLKDISCARD) on block devices; WRITE ZEROES uses fallocate ZERO_RANGE on files and
 * BLKZEROOUT on block devices that offload it. What the file system supports is probed at open
 * beyond the end of the file, where it changes nothing. These are synchronous system calls on
 * the loop: fast on files (metadata only), and limited by the core's UNMAP limits on devices.
 * Punched holes read as zeros, so files report LBPRZ (SBC-4 §4.7.4.5); discarded device blocks
 * are not promised to, so block devices do not.
 *
 * Lost writes. A write the kernel took into the page cache completes GOOD; if its writeback
 * fails later (EIO from the medium, ENOSPC or EDQUOT on a thin or network file system), Linux
 * records the error on the file and reports it once per open file, to the first fsync-class
 * call that follows (fdatasync, the aio or ring fsync, an RWF_DSYNC write), whoever makes it
 * (errseq_t, Documentation/filesystems/vfs.rst "fsync"). The LUN has one descriptor for every
 * loop and initiator, so the initiator whose blocks were lost could otherwise get GOOD for its
 * SYNCHRONIZE CACHE after another one's flush took the error. The first EIO or ENOSPC of a
 * flush (a FLUSH, or the one that follows a FUA write where RWF_DSYNC is refused), and the
 * first EIO of a FUA write, buffered or O_DIRECT (an O_DIRECT LUN has page-cache writeback
 * too: partial-block UNMAP / WRITE ZEROES zeroing, file systems that fall back to buffered
 * writes; not a block device's in O_DIRECT mode, which has no page cache of its own: there
 * the EIO is the write's own sectors'), is therefore kept as -EIO: that request and every later FLUSH and FUA write of the
 * LUN fail with WRITE ERROR (SBC-4 §5.24: the cache could not be made durable; never the
 * "free space and retry" SPACE ALLOCATION FAILED of an ENOSPC, which freeing space would not
 * end), reads and plain writes go on, and only opening the LUN again clears it. Not kept: a
 * FUA write's ENOSPC (its own allocation, nothing cached), answered SPACE ALLOCATION FAILED.
 *
 * Errors. EIO completes the io with -EIO (MEDIUM ERROR), ENOSPC and EDQUOT with -ENOSPC, EROFS
 * with -EROFS. A completion of EINTR or EAGAIN is issued again (up to AIO_MAX_RETRIES times),
 * then fails BUSY either way (the initiator retries). A submission the kernel refuses with
 * EAGAIN waits for a completion when others are in flight, else fails BUSY too; io_uring's
 * entries stay in the ring and go with the next io_uring_enter(). A short read or write is
 * resubmitted for the remainder; a read that makes no progress (the file shrank under us)
 * fails with -EIO, never reports success. One context serves one LUN and shares nothing, so
 * its failures stay its own.
 *
 * Like every in-tree backend it uses only the public headers and util/.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#include "backend/aio_hooks.h"
#include "backend/aio_int.h"
#include "libscsitgt/backend_aio.h"
#include "scsitgt_config.h"
#include "util/log.h"

#define AIO_DEFAULT_QUEUE_DEPTH 128
#define AIO_MAX_QUEUE_DEPTH 65536
/* The smallest context another loop is given when the kernel refuses more. */
#define AIO_MIN_LOOP_DEPTH 4

static void aio_loop_close_maybe(struct aio_loop *al);
/* Every loop's submission context (loop_ctx.h), defined with its ops further down. */
static const struct scsitgt__loop_ctx_ops aio_loop_ops;

static bool aio_is_pow2(uint64_t v)
{
	return v != 0 && (v & (v - 1)) == 0;
}

/* Read an unsigned number from a sysfs attribute of device @dev's queue; false if absent. */
static bool aio_sysfs_queue_u64(dev_t dev, const char *attr, uint64_t *out)
{
	/* A partition has no queue directory of its own: its disk's is one level up. */
	static const char *const fmts[] = { "/sys/dev/block/%u:%u/queue/%s",
					    "/sys/dev/block/%u:%u/../queue/%s" };
	char path[128];
	char buf[64];

	for (size_t i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++) {
		FILE *f;
		bool ok;

		snprintf(path, sizeof(path), fmts[i], major(dev), minor(dev), attr);
		f = fopen(path, "re");
		if (f == NULL) {
			continue;
		}
		ok = fgets(buf, sizeof(buf), f) != NULL;
		fclose(f);
		if (!ok) {
			return false;
		}
		if (strncmp(buf, "write back", 10) == 0) {
			*out = 1;
			return true;
		}
		if (strncmp(buf, "write through", 13) == 0) {
			*out = 0;
			return true;
		}
		*out = strtoull(buf, NULL, 10);
		return true;
	}
	return false;
}

/* Switch the descriptor to buffered I/O and say why. */
static void aio_go_buffered(struct aio_ctx *ac, const char *why)
{
	int fl;

	if (!ac->direct) {
		return;
	}
	fl = fcntl(ac->fd, F_GETFL);
	if (fl >= 0) {
		(void)fcntl(ac->fd, F_SETFL, fl & ~O_DIRECT);
	}
	ac->direct = false;
	scsitgt__log(&ac->log, SCSITGT_LOG_INFO, AIO_SUBSYS, "%s: buffered I/O (%s)", ac->path,
		     why);
}

/*
 * Keep O_DIRECT only where the file system does direct I/O, and learn its alignment. statx
 * STATX_DIOALIGN (Linux >= 6.1) answers exactly; without it we use the device's logical block
 * size, which is what older kernels required for both offsets and buffers.
 */
static void aio_probe_direct(struct aio_ctx *ac)
{
	struct statfs sfs;
	uint64_t lbs = 0;

	/* (For a device node fstatfs describes /dev, not the device: files only.) */
	if (!ac->blockdev && fstatfs(ac->fd, &sfs) == 0 &&
	    (sfs.f_type == TMPFS_MAGIC || sfs.f_type == RAMFS_MAGIC)) {
		aio_go_buffered(ac, "tmpfs: the page cache is the medium");
		return;
	}
#ifdef STATX_DIOALIGN
	{
		struct statx sx;

		if (statx(ac->fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) == 0 &&
		    (sx.stx_mask & STATX_DIOALIGN)) {
			if (sx.stx_dio_offset_align == 0 || sx.stx_dio_mem_align == 0) {
				aio_go_buffered(ac, "the file system does no direct I/O");
				return;
			}
			ac->mem_align = sx.stx_dio_mem_align;
			ac->off_align = sx.stx_dio_offset_align;
			return;
		}
	}
#endif
	if (ac->blockdev) {
		lbs = ac->dev_lbs;
	} else if (!aio_sysfs_queue_u64(ac->rdev, "logical_block_size", &lbs)) {
		lbs = 4096;
	}
	if (!aio_is_pow2(lbs) || lbs > 65536) {
		lbs = 4096;
	}
	ac->mem_align = (uint32_t)lbs;
	ac->off_align = (uint32_t)lbs;
}

SCSITGT_EXPORT void scsitgt_backend_aio_opts_init(struct scsitgt_backend_aio_opts *opts,
						  size_t size)
{
	struct scsitgt_backend_aio_opts def = {
		.size = sizeof(def),
		.direct = true,
		.queue_depth = AIO_DEFAULT_QUEUE_DEPTH,
		.log_level = SCSITGT_LOG_DEBUG,
	};

	if (opts == NULL || size == 0) {
		return;
	}
	if (size > sizeof(def)) {
		memset(opts, 0, size);
		size = sizeof(def);
	}
	def.size = size;
	memcpy(opts, &def, size);
}

/* Release a loop's kernel context, its eventfd and itself (its handles are closed already:
 * loop_ctx.h fini). */
static void aio_loop_fini(void *arg, struct scsitgt__loop_ctx *lc)
{
	struct aio_ctx *ac = arg;

	if (ac->engine) {
		ac->engine->teardown((struct aio_loop *)lc);
	}
	scsitgt__loop_ctx_destroy(lc);
}

static void aio_ctx_free(struct aio_ctx *ac)
{
	/* Every loop's context was torn down on its loop (aio_loop_close_maybe). */
	if (ac->fd >= 0) {
		close(ac->fd);
	}
	free(ac->path);
	free(ac);
}

/* Test hook (aio_hooks.h): behave as if the kernel had no io_uring. */
static bool aio_uring_refused;

void scsitgt__backend_aio_refuse_uring(bool refuse)
{
	aio_uring_refused = refuse;
}

/* The engine the options ask for, set up for home's context @al: io_uring if it can be set up
 * (AUTO, IO_URING), else libaio. */
static int aio_engine_setup(struct aio_ctx *ac, struct aio_loop *al,
			    enum scsitgt_backend_aio_engine want)
{
	const char *why = NULL;
	int rc;

	if (want != SCSITGT_BACKEND_AIO_ENGINE_LIBAIO) {
#if SCSITGT_HAVE_URING
		if (aio_uring_refused) {
			why = "refused by a test hook";
			rc = -ENOSYS;
		} else {
			rc = scsitgt__aio_uring.setup(al, &why);
		}
		if (rc == 0) {
			ac->engine = &scsitgt__aio_uring;
			return 0;
		}
#else
		why = "the library was built without liburing";
		rc = -ENOTSUP;
#endif
		if (want == SCSITGT_BACKEND_AIO_ENGINE_IO_URING) {
			scsitgt__log(&ac->log, SCSITGT_LOG_ERROR, AIO_SUBSYS,
				     "%s: io_uring engine unavailable: %s (%s)", ac->path, why,
				     strerror(-rc));
			return -ENOTSUP;
		}
		scsitgt__log(&ac->log, SCSITGT_LOG_NOTICE, AIO_SUBSYS,
			     "%s: libaio engine: io_uring unavailable: %s (%s)", ac->path, why,
			     strerror(-rc));
	}
	rc = scsitgt__aio_libaio.setup(al, &why);
	if (rc < 0) {
		return rc;
	}
	ac->engine = &scsitgt__aio_libaio;
	return 0;
}

/* create()'s checks of its options; a refusal is logged through their logger. */
static int aio_opts_check(const struct scsitgt_backend_aio_opts *o, void **bctx_out)
{
	/* Refusals pass any level, also one out of range. */
	struct scsitgt__logger lg = { .cb = o->log_cb,
				      .arg = o->log_arg,
				      .level = SCSITGT_LOG_DEBUG };

	if (bctx_out == NULL || o->loop == NULL) {
		return scsitgt__log_refused(&lg, AIO_SUBSYS, -EINVAL,
					    "scsitgt_backend_aio_create: %s is NULL",
					    bctx_out == NULL ? "bctx_out" : "loop");
	}
	if (o->path == NULL || o->path[0] == '\0') {
		return scsitgt__log_refused(&lg, AIO_SUBSYS, -EINVAL,
					    "scsitgt_backend_aio_create: path %s: required",
					    o->path ? "\"\"" : "NULL");
	}
	if ((unsigned int)o->engine > SCSITGT_BACKEND_AIO_ENGINE_IO_URING) {
		return scsitgt__log_refused(&lg, AIO_SUBSYS, -EINVAL,
					    "scsitgt_backend_aio_create: %s: engine %u: not a "
					    "SCSITGT_BACKEND_AIO_ENGINE_*",
					    o->path, (unsigned int)o->engine);
	}
	if ((unsigned int)o->uring_async > SCSITGT_BACKEND_AIO_URING_ASYNC_NEVER) {
		return scsitgt__log_refused(&lg, AIO_SUBSYS, -EINVAL,
					    "scsitgt_backend_aio_create: %s: uring_async %u: not a "
					    "SCSITGT_BACKEND_AIO_URING_ASYNC_*",
					    o->path, (unsigned int)o->uring_async);
	}
	if (o->log_level < SCSITGT_LOG_ERROR || o->log_level > SCSITGT_LOG_DEBUG) {
		return scsitgt__log_refused(
			&lg, AIO_SUBSYS, -EINVAL,
			"scsitgt_backend_aio_create: %s: log_level %d: not "
			"between SCSITGT_LOG_ERROR (3) and SCSITGT_LOG_DEBUG (7)",
			o->path, (int)o->log_level);
	}
	return 0;
}

SCSITGT_EXPORT int scsitgt_backend_aio_create(void **bctx_out,
					      const struct scsitgt_backend_aio_opts *opts)
{
	struct scsitgt_backend_aio_opts o;
	struct aio_ctx *ac;
	struct stat st;
	int flags;
	int rc;

	if (opts == NULL || opts->size == 0) {
		return -EINVAL;
	}
	scsitgt_backend_aio_opts_init(&o, sizeof(o));
	memcpy(&o, opts, opts->size < sizeof(o) ? opts->size : sizeof(o));
	rc = aio_opts_check(&o, bctx_out);
	if (rc < 0) {
		return rc;
	}
	if (o.queue_depth == 0) {
		o.queue_depth = AIO_DEFAULT_QUEUE_DEPTH;
	}
	if (o.queue_depth > AIO_MAX_QUEUE_DEPTH) {
		o.queue_depth = AIO_MAX_QUEUE_DEPTH;
	}
	ac = calloc(1, sizeof(*ac));
	if (ac == NULL) {
		return -ENOMEM;
	}
	ac->fd = -1;
	ac->loop = o.loop;
	ac->log.cb = o.log_cb;
	ac->log.arg = o.log_arg;
	ac->log.level = o.log_level;
	ac->read_only = o.read_only;
	ac->write_through = o.write_through && !o.read_only;
	ac->queue_depth = o.queue_depth;
	ac->uring_async = o.uring_async;
	atomic_init(&ac->rwf_dsync_ok, true);
	atomic_init(&ac->fdsync_ok, true);
	atomic_init(&ac->sync_error, 0);
	atomic_init(&ac->sync_error_inject, 0);
	atomic_init(&ac->test_event_inject_n, 0);
	atomic_init(&ac->loop_setup_failed, false);
	ac->mem_align = 1;
	ac->off_align = 1;
	ac->path = strdup(o.path);
	if (ac->path == NULL) {
		rc = -ENOMEM;
		goto fail;
	}

	flags = (o.read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC;
	if (ac->write_through) {
		flags |= O_DSYNC;
	}
	ac->direct = o.direct;
	ac->fd = open(o.path, flags | (ac->direct ? O_DIRECT : 0));
	if (ac->fd < 0 && errno == EINVAL && ac->direct) {
		/* File systems without direct I/O refuse O_DIRECT at open (older tmpfs). */
		ac->direct = false;
		ac->fd = open(o.path, flags);
		scsitgt__log(&ac->log, SCSITGT_LOG_INFO, AIO_SUBSYS,
			     "%s: buffered I/O (O_DIRECT refused at open)", ac->path);
	}
	if (ac->fd < 0) {
		rc = -errno;
		goto fail;
	}
	if (fstat(ac->fd, &st) < 0) {
		rc = -errno;
		goto fail;
	}
	if (S_ISBLK(st.st_mode)) {
		int lbs = 0;
		unsigned int pbs = 0;

		ac->blockdev = true;
		ac->rdev = st.st_rdev;
		if (ioctl(ac->fd, BLKSSZGET, &lbs) < 0 || ioctl(ac->fd, BLKPBSZGET, &pbs) < 0) {
			rc = -errno;
			goto fail;
		}
		ac->dev_lbs = lbs > 0 ? (uint32_t)lbs : 512;
		ac->dev_pbs = pbs >= ac->dev_lbs ? pbs : ac->dev_lbs;
	} else if (S_ISREG(st.st_mode)) {
		ac->rdev = st.st_dev;
	} else {
		rc = S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
		goto fail;
	}
	if (ac->direct) {
		aio_probe_direct(ac);
	}

	/* Home's submission context: the engine is chosen there (aio_loop_setup). */
	ac->want_engine = o.engine;
	rc = scsitgt__loop_ctxs_init(&ac->loops, ac->loop, &aio_loop_ops, ac, &ac->log, ac->path);
	if (rc < 0) {
		goto fail;
	}
	*bctx_out = ac;
	return 0;

fail:
	aio_ctx_free(ac);
	return rc;
}

/* Current size of the medium in bytes. */
static int aio_medium_bytes(struct aio_ctx *ac, uint64_t *bytes)
{
	struct stat st;

	if (ac->blockdev) {
		return ioctl(ac->fd, BLKGETSIZE64, bytes) < 0 ? -errno : 0;
	}
	if (fstat(ac->fd, &st) < 0) {
		return -errno;
	}
	*bytes = (uint64_t)st.st_size;
	return 0;
}

/*
 * Which fallocate modes the file system of a file supports, tried past the end of the file
 * with KEEP_SIZE so that neither the data nor the size changes. A zero range allocated there
 * is punched out again.
 */
static void aio_probe_fallocate(struct aio_ctx *ac, uint64_t bytes)
{
	const uint64_t probe_len = 4096;
	uint64_t off = ((bytes + 2 * probe_len - 1) / probe_len) * probe_len;

	if (off > (uint64_t)INT64_MAX - probe_len) {
		return;
	}
	ac->can_unmap = fallocate(ac->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off,
				  (off_t)probe_len) == 0;
	ac->can_write_zeroes = fallocate(ac->fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE,
					 (off_t)off, (off_t)probe_len) == 0;
	if (ac->can_write_zeroes && ac->can_unmap) {
		(void)fallocate(ac->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off,
				(off_t)probe_len);
	}
}

/*
 * What a deallocation frees as a unit: a file gives back whole file-system blocks (a hole
 * punched into part of one only zeroes it), a device its discard granularity. 0: unknown.
 */
static uint32_t aio_unmap_granularity(struct aio_ctx *ac)
{
	struct statfs sfs;
	uint64_t v;

	if (ac->blockdev) {
		return aio_sysfs_queue_u64(ac->rdev, "discard_granularity", &v) && v <= UINT32_MAX ?
			       (uint32_t)v :
			       0;
	}
	if (fstatfs(ac->fd, &sfs) == 0 && sfs.f_bsize > 0 && (uint64_t)sfs.f_bsize <= UINT32_MAX) {
		return (uint32_t)sfs.f_bsize;
	}
	return 0;
}

/*
 * The LUN's block size and length on a medium of @bytes: files take the LUN's block size
 * (default 512), devices their own logical block size; the length is the medium's unless the
 * LUN asks for fewer blocks.
 */
static int aio_open_size(struct aio_ctx *ac, const struct scsitgt_lun_geometry *geo, uint64_t bytes,
			 uint32_t *bs_out, uint64_t *blocks_out)
{
	uint32_t bs = geo->block_size;
	uint64_t blocks;

	if (bs == 0) {
		bs = ac->blockdev ? ac->dev_lbs : 512;
	}
	if (bs != 512 && bs != 4096) {
		scsitgt__log(&ac->log, SCSITGT_LOG_ERROR, AIO_SUBSYS,
			     "%s: block size %" PRIu32 " not supported", ac->path, bs);
		return -EINVAL;
	}
	if (ac->blockdev && bs % ac->dev_lbs != 0) {
		/* A block smaller than the device's sector cannot be written as a unit. */
		scsitgt__log(&ac->log, SCSITGT_LOG_ERROR, AIO_SUBSYS,
			     "%s: block size %" PRIu32 " below the device's %" PRIu32, ac->path, bs,
			     ac->dev_lbs);
		return -EINVAL;
	}
	blocks = bytes / bs;
	if (blocks == 0) {
		scsitgt__log(&ac->log, SCSITGT_LOG_ERROR, AIO_SUBSYS,
			     "%s: %" PRIu64 " bytes is less than one block", ac->path, bytes);
		return -EINVAL;
	}
	if (geo->num_blocks != 0) {
		if (geo->num_blocks > blocks) {
			scsitgt__log(&ac->log, SCSITGT_LOG_ERROR, AIO_SUBSYS,
				     "%s: holds %" PRIu64 " blocks, %" PRIu64 " asked", ac->path,
				     blocks, geo->num_blocks);
			return -EINVAL;
		}
		blocks = geo->num_blocks;
	}
	*bs_out = bs;
	*blocks_out = blocks;
	return 0;
}

/* Whether UNMAP and WRITE ZEROES can be offered on a writable medium of @bytes. */
static void aio_probe_thin(struct aio_ctx *ac, uint64_t bytes)
{
	uint64_t v;

	if (ac->read_only) {
		return;
	}
	if (!ac->blockdev) {
		aio_probe_fallocate(ac, bytes);
		return;
	}
	ac->can_unmap = aio_sysfs_queue_u64(ac->rdev, "discard_max_bytes", &v) && v != 0;
	/* Only where the device offloads it: BLKZEROOUT otherwise writes zeros synchronously,
	 * which the core's emulation does without blocking. */
	ac->can_write_zeroes = aio_sysfs_queue_u64(ac->rdev, "write_zeroes_max_bytes", &v) &&
			       v != 0;
}

/* What the LUN reports of the medium: size, physical blocks, cache, LBPRZ, rotation, unmap
 * granularity. */
static void aio_fill_geometry(struct aio_ctx *ac, struct scsitgt_lun_geometry *geo, uint32_t bs,
			      uint64_t blocks)
{
	uint64_t v;
	bool cache;

	geo->block_size = bs;
	geo->num_blocks = blocks;
	if (ac->blockdev && ac->dev_pbs > bs && aio_is_pow2(ac->dev_pbs / bs)) {
		uint8_t e = 0;

		while ((bs << (e + 1)) <= ac->dev_pbs && e < 15) {
			e++;
		}
		geo->physical_block_exponent = e;
	}
	/*
	 * A volatile cache exists unless every write is synchronous: the page cache in buffered
	 * mode; in O_DIRECT mode a file's allocation metadata (and the disk's cache), or a block
	 * device whose queue says "write back" (unknown counts as yes).
	 */
	cache = !ac->write_through;
	if (cache && ac->direct && ac->blockdev &&
	    aio_sysfs_queue_u64(ac->rdev, "write_cache", &v)) {
		cache = v != 0;
	}
	geo->flags &= ~(SCSITGT_GEOMETRY_WRITE_CACHE | SCSITGT_GEOMETRY_LBPRZ |
			SCSITGT_GEOMETRY_NON_ROTATIONAL);
	if (cache) {
		geo->flags |= SCSITGT_GEOMETRY_WRITE_CACHE;
	}
	if (!ac->blockdev && ac->can_unmap) {
		/* Holes in a file read as zeros (SBC-4 §4.7.4.5 LBPRZ). */
		geo->flags |= SCSITGT_GEOMETRY_LBPRZ;
	}
	if (aio_sysfs_queue_u64(ac->rdev, "rotational", &v) && v == 0) {
		geo->flags |= SCSITGT_GEOMETRY_NON_ROTATIONAL;
	}
	if (ac->can_unmap &&
	    geo->size >= offsetof(struct scsitgt_lun_geometry, unmap_granularity_blocks) +
				 sizeof(geo->unmap_granularity_blocks)) {
		geo->unmap_granularity_blocks = aio_unmap_granularity(ac) / bs;
	}
}

/* For the open log line: where buffered copies run (io_uring, buffered only). */
static const char *aio_punt_name(const struct aio_ctx *ac)
{
#if SCSITGT_HAVE_URING
	if (ac->engine == &scsitgt__aio_uring && !ac->direct) {
		switch (ac->uring_async) {
		case SCSITGT_BACKEND_AIO_URING_ASYNC_ALWAYS:
			return " (uring_async=always: io-wq)";
		case SCSITGT_BACKEND_AIO_URING_ASYNC_NEVER:
			return " (uring_async=never: inline first)";
		default:
			return " (uring_async=auto: io-wq on home, inline first on workers)";
		}
	}
#else
	(void)ac;
#endif
	return "";
}

static int aio_open(void *bctx, struct scsitgt_lun_geometry *geo)
{
	struct aio_ctx *ac = bctx;
	uint64_t bytes;
	uint64_t blocks;
	uint32_t bs;
	int rc;

	if (ac->opened || ac->closing) {
		/* One context serves one LUN. */
		return -EBUSY;
	}
	rc = aio_medium_bytes(ac, &bytes);
	if (rc < 0) {
		return rc;
	}
	rc = aio_open_size(ac, geo, bytes, &bs, &blocks);
	if (rc < 0) {
		return rc;
	}
	if (ac->direct && (bs % ac->off_align != 0 || bs % ac->mem_align != 0)) {
		aio_go_buffered(ac, "block size below the direct I/O alignment");
	}
	aio_probe_thin(ac, bytes);
	aio_fill_geometry(ac, geo, bs, blocks);
	/* Completions arrive on home's eventfd: watch it; other loops may submit from now on. */
	rc = scsitgt__loop_ctxs_start(&ac->loops);
	if (rc < 0) {
		return rc;
	}
	ac->block_size = bs;
	/* A LUN asked smaller than its medium stays that part of it (backend_aio.h). */
	ac->limit_blocks = blocks < bytes / bs ? blocks : 0;
	atomic_store_explicit(&ac->num_blocks, blocks, memory_order_relaxed);
	ac->opened = true;
	scsitgt__log(&ac->log, SCSITGT_LOG_INFO, AIO_SUBSYS,
		     "%s: %s, %s, %s I/O%s, %" PRIu64 " blocks of %" PRIu32 " bytes%s%s%s%s",
		     ac->path, ac->blockdev ? "block device" : "file", ac->engine->name,
		     ac->direct ? "direct" : "buffered", aio_punt_name(ac), blocks, bs,
		     ac->write_through ? ", write-through" : "", ac->read_only ? ", read-only" : "",
		     ac->can_unmap ? ", unmap" : "", ac->can_write_zeroes ? ", write zeroes" : "");
	return 0;
}

/* On home, the last of it (every loop's context is gone): free the context and tell the
 * core. */
static void aio_close_done(void *arg)
{
	struct aio_ctx *ac = arg;
	scsitgt_done_cb cb = ac->close_cb;
	void *cb_arg = ac->close_cb_arg;

	aio_ctx_free(ac);
	if (cb) {
		cb(cb_arg, 0);
	}
}

/* On @al's loop: once it is closing and nothing of it is in the kernel, tear it down. */
static void aio_loop_close_maybe(struct aio_loop *al)
{
	if (!al->lc.closing || al->inflight != 0) {
		return;
	}
	scsitgt__loop_ctx_teardown(&al->lc);
}

/* On the loop's thread: its context closes (loop_ctx.h close). */
static void aio_loop_close(void *arg, struct scsitgt__loop_ctx *lc)
{
	struct aio_loop *al = (struct aio_loop *)lc;

	(void)arg;
	/* The core closes only after every io completed; should any still wait for a kernel
	 * slot, they are cancelled rather than left hanging. */
	while (al->pend_head) {
		struct aio_req *req = al->pend_head;

		al->pend_head = req->next;
		scsitgt__aio_req_finish(al->ac, req, -ECANCELED);
	}
	al->pend_tail = NULL;
	aio_loop_close_maybe(al);
}

/*
 * Each loop's context is torn down on its loop: home's here, the others' by a message; the
 * last one finishes on home, which frees the context and calls @cb (loop_ctx.h). Nothing is
 * in flight (the core closes after every io completed), so no loop submits any more.
 */
static void aio_close(void *bctx, scsitgt_done_cb cb, void *cb_arg)
{
	struct aio_ctx *ac = bctx;

	ac->closing = true;
	ac->close_cb = cb;
	ac->close_cb_arg = cb_arg;
	/* This may free the context. */
	scsitgt__loop_ctxs_close(&ac->loops, aio_close_done, ac);
}

/* A new loop context (loop_ctx.h setup): home's chooses the engine (at create), another
 * loop's sets that engine up for its loop. */
static int aio_loop_setup(void *arg, struct scsitgt__loop_ctx *lc)
{
	struct aio_ctx *ac = arg;
	struct aio_loop *al = (struct aio_loop *)lc;
	const char *why = NULL;
	int rc;

	al->ac = ac;
	al->depth = ac->queue_depth;
	if (ac->engine == NULL) {
		rc = aio_engine_setup(ac, al, ac->want_engine);
		/* Written before any other loop exists; they read it for their own. */
		ac->queue_depth = al->depth;
		return rc;
	}
	/*
	 * Every loop that submits has a context of its own, and libaio's count against the
	 * system-wide fs.aio-max-nr (65536 by default, shared with every process), io_uring's
	 * against locked memory on older kernels: many loops and LUNs can run out. A smaller
	 * context still serves (the rest of the loop's ios wait for a slot); none at all fails
	 * each io of that loop with the error (BUSY for EAGAIN, which the initiator retries).
	 */
	for (;;) {
		if (ac->test_loop_depth_limit && al->depth > ac->test_loop_depth_limit) {
			why = "refused by a test hook";
			rc = -EAGAIN;
		} else {
			rc = ac->engine->setup(al, &why);
		}
		if ((rc != -EAGAIN && rc != -ENOMEM) || al->depth <= AIO_MIN_LOOP_DEPTH) {
			break;
		}
		al->depth /= 2;
	}
	if (rc == 0 && al->depth < ac->queue_depth) {
		scsitgt__log(
			&ac->log, SCSITGT_LOG_WARNING, AIO_SUBSYS,
			"%s: %s context for another loop holds %u requests, not %u: the kernel "
			"refused more (%s)",
			ac->path, ac->engine->name, al->depth, ac->queue_depth,
			ac->engine == &scsitgt__aio_libaio ? "raise fs.aio-max-nr" :
							     "raise RLIMIT_MEMLOCK");
	}
	if (rc < 0) {
		bool first = !atomic_exchange_explicit(&ac->loop_setup_failed, true,
						       memory_order_relaxed);

		/* Tried again at the loop's next io: say it once, not once per io. */
		scsitgt__log(&ac->log, first ? SCSITGT_LOG_ERROR : SCSITGT_LOG_DEBUG, AIO_SUBSYS,
			     "%s: %s context for another loop: %s (%s)", ac->path, ac->engine->name,
			     why, strerror(-rc));
	}
	return rc;
}

/* The loop's eventfd fired (loop_ctx.h wake, the eventfd read already: events posted after
 * that signal it again): take every completion. */
static void aio_loop_wake(void *arg, struct scsitgt__loop_ctx *lc, int status)
{
	struct aio_loop *al = (struct aio_loop *)lc;
	struct aio_ctx *ac = arg;

	if (status < 0) {
		scsitgt__log(&ac->log, SCSITGT_LOG_WARNING, AIO_SUBSYS, "%s: eventfd poll: %s",
			     ac->path, uv_strerror(status));
	}
	ac->engine->reap(al);
	scsitgt__aio_drain_pending(al);
	aio_loop_close_maybe(al);
}

/*
 * Whether the io's data can go to the kernel as it is (O_DIRECT alignment, iovec count). For
 * O_DIRECT, statx(2): each buffer's address is aligned to stx_dio_mem_align, and each
 * segment's length (as file offsets) to stx_dio_offset_align; the two differ on NVMe since
 * Linux 6.1 (4 and the logical block size).
 */
bool scsitgt__aio_iov_usable(const struct aio_ctx *ac, const struct iovec *iov, int iovcnt,
			     size_t len)
{
	size_t left = len;
	int used = 0;

	for (int i = 0; i < iovcnt && left > 0; i++) {
		size_t l = iov[i].iov_len < left ? iov[i].iov_len : left;

		if (l == 0) {
			continue;
		}
		if (++used > AIO_IOV_MAX) {
			return false;
		}
		if (ac->direct &&
		    (((uintptr_t)iov[i].iov_base % ac->mem_align) != 0 || l % ac->off_align != 0)) {
			return false;
		}
		left -= l;
	}
	return true;
}

static bool aio_iov_covers(const struct iovec *iov, int iovcnt, size_t len)
{
	size_t total = 0;

	for (int i = 0; i < iovcnt && total < len; i++) {
		total += iov[i].iov_len;
	}
	return total >= len;
}

/* UNMAP and WRITE ZEROES: synchronous fallocate / ioctl (see the file comment). */
static int aio_deallocate(struct aio_ctx *ac, enum scsitgt_io_type type, uint64_t off, uint64_t len)
{
	uint64_t range[2] = { off, len };
	int rc;

	if (len == 0) {
		return 0;
	}
	if (type == SCSITGT_IO_UNMAP) {
		if (!ac->can_unmap) {
			return -ENOTSUP;
		}
		rc = ac->blockdev ? ioctl(ac->fd, BLKDISCARD, range) :
				    fallocate(ac->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
					      (off_t)off, (off_t)len);
	} else {
		if (!ac->can_write_zeroes) {
			return -ENOTSUP;
		}
		rc = ac->blockdev ? ioctl(ac->fd, BLKZEROOUT, range) :
				    fallocate(ac->fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE,
					      (off_t)off, (off_t)len);
	}
	if (rc < 0) {
		rc = errno == EOPNOTSUPP ? -ENOTSUP : -errno;
	}
	return rc;
}

static void aio_submit(void *bctx, struct scsitgt_io *io)
{
	struct aio_ctx *ac = bctx;
	struct scsitgt__loop_ctx *lc = NULL;
	struct aio_loop *al = NULL;
	struct aio_req *req = scsitgt_io_get_ctx(io);
	enum scsitgt_io_type type = scsitgt_io_get_type(io);
	uint64_t lba = scsitgt_io_get_lba(io);
	uint32_t nblocks = scsitgt_io_get_num_blocks(io);
	uint64_t num_blocks = atomic_load_explicit(&ac->num_blocks, memory_order_relaxed);
	const struct iovec *iov;
	int iovcnt;
	int rc;

	req->io = io;
	req->type = type;
	req->phase = AIO_PHASE_RW;
	req->off = lba * ac->block_size;
	req->len = (size_t)nblocks * ac->block_size;
	if (!ac->opened || ac->closing) {
		scsitgt__aio_req_finish(ac, req, -EIO);
		return;
	}
	/*
	 * The core checked the range against the LUN's capacity: past the medium's end here
	 * means the medium shrank under it (read back by get_size, kept by the core because of
	 * blocks in use, or not told the core yet). The blocks the LUN reports cannot be read or
	 * written: MEDIUM ERROR, as a read past the end of the file gives anyway, never an LBA
	 * OUT OF RANGE that READ CAPACITY contradicts, nor a write that grows the file again.
	 */
	if (lba > num_blocks || nblocks > num_blocks - lba) {
		scsitgt__aio_req_finish(ac, req, -EIO);
		return;
	}
	if (type != SCSITGT_IO_READ && ac->read_only) {
		scsitgt__aio_req_finish(ac, req, -EROFS);
		return;
	}
	/* SCSITGT_BACKEND_MULTI_LOOP: the kernel context of the io's loop, where it completes
	 * (home's, or another loop's made at its first submit: loop_ctx.h). */
	rc = scsitgt__loop_ctx_get(&ac->loops, scsitgt_io_get_loop(io), &lc);
	if (rc < 0) {
		scsitgt__aio_req_finish(ac, req, rc);
		return;
	}
	al = (struct aio_loop *)lc;
	switch (type) {
	case SCSITGT_IO_READ:
	case SCSITGT_IO_WRITE:
		break;
	case SCSITGT_IO_FLUSH:
		if (ac->write_through) {
			/* O_DSYNC: nothing volatile to flush. */
			scsitgt__aio_req_finish(ac, req, 0);
			return;
		}
		/* SBC-4 SYNCHRONIZE CACHE: the whole medium, whatever the range. */
		req->phase = AIO_PHASE_SYNC;
		scsitgt__aio_req_start(al, req);
		return;
	case SCSITGT_IO_UNMAP:
	case SCSITGT_IO_WRITE_ZEROES:
		/*
		 * io_uring: IORING_OP_FALLOCATE, in io-wq. A block device's WRITE ZEROES is its
		 * fallocate ZERO_RANGE (the kernel's BLKZEROOUT path, without unmapping); its
		 * UNMAP stays a BLKDISCARD ioctl on the loop: fallocate PUNCH_HOLE on a device
		 * writes zeros instead, and io_uring's discard command needs Linux 6.12.
		 */
		if (ac->engine->dealloc_ops && req->len != 0 &&
		    !(ac->blockdev && type == SCSITGT_IO_UNMAP) &&
		    (type == SCSITGT_IO_UNMAP ? ac->can_unmap : ac->can_write_zeroes)) {
			req->phase = AIO_PHASE_DEALLOC;
			scsitgt__aio_req_start(al, req);
			return;
		}
		rc = aio_deallocate(ac, type, req->off, req->len);
		if (rc == 0 && req->len != 0 && ac->write_through) {
			/* As above: O_DSYNC does not make a deallocation durable. */
			req->phase = AIO_PHASE_SYNC;
			scsitgt__aio_req_start(al, req);
			return;
		}
		scsitgt__aio_req_finish(ac, req, rc);
		return;
	default:
		scsitgt__aio_req_finish(ac, req, -ENOTSUP);
		return;
	}

	if (req->len == 0) {
		scsitgt__aio_req_finish(ac, req, 0);
		return;
	}
	iov = scsitgt_io_get_iov(io, &iovcnt);
	if (iov == NULL || !aio_iov_covers(iov, iovcnt, req->len)) {
		scsitgt__aio_req_finish(ac, req, -EFAULT);
		return;
	}
	if (scsitgt__aio_iov_usable(ac, iov, iovcnt, req->len)) {
		req->iov = iov;
		req->iovcnt = iovcnt;
	} else {
		size_t align = aio_max_u32(ac->mem_align, 4096);

		if (posix_memalign(&req->bounce, align, req->len) != 0) {
			req->bounce = NULL;
			scsitgt__aio_req_finish(ac, req, -ENOMEM);
			return;
		}
		if (type == SCSITGT_IO_WRITE) {
			scsitgt__aio_bounce_copy(req, iov, iovcnt, true, req->len);
		}
		req->bounce_iov.iov_base = req->bounce;
		req->bounce_iov.iov_len = req->len;
		req->iov = &req->bounce_iov;
		req->iovcnt = 1;
	}
	if (type == SCSITGT_IO_WRITE && (scsitgt_io_get_flags(io) & SCSITGT_IO_FLAG_FUA) &&
	    !ac->write_through) {
		/* SBC-4 FUA: durable before completion (see the file comment). */
		if (atomic_load_explicit(&ac->rwf_dsync_ok, memory_order_relaxed)) {
			req->used_dsync = true;
		} else {
			req->sync_after = true;
		}
	}
	scsitgt__aio_req_start(al, req);
}

static bool aio_supports(void *bctx, enum scsitgt_io_type type)
{
	const struct aio_ctx *ac = bctx;

	switch (type) {
	case SCSITGT_IO_READ:
		return true;
	case SCSITGT_IO_WRITE:
		return !ac->read_only;
	case SCSITGT_IO_FLUSH:
		return !ac->read_only && !ac->write_through;
	case SCSITGT_IO_UNMAP:
		return !ac->read_only && ac->can_unmap;
	case SCSITGT_IO_WRITE_ZEROES:
		return !ac->read_only && ac->can_write_zeroes;
	default:
		/* GET LBA STATUS: the synchronous aio_get_lba_status (SEEK_DATA/SEEK_HOLE). */
		return false;
	}
}

/*
 * GET LBA STATUS (SBC-4 §5.17) from the file's holes: SEEK_DATA/SEEK_HOLE. A block is
 * deallocated only when all of it lies in a hole. Block devices, and file systems without
 * hole reporting, answer "mapped".
 */
static int aio_get_lba_status(void *bctx, uint64_t lba, uint64_t *num_blocks_out, bool *mapped_out)
{
	struct aio_ctx *ac = bctx;
	uint64_t rest, bs = ac->block_size;
	uint64_t num_blocks = atomic_load_explicit(&ac->num_blocks, memory_order_relaxed);
	off_t off, data, hole;

	if (lba >= num_blocks) {
		/* Past the medium's end (aio_submit): mapped to the LUN's end (the core bounds
		 * it), the answer that promises nothing. */
		*num_blocks_out = UINT64_MAX;
		*mapped_out = true;
		return 0;
	}
	rest = num_blocks - lba;
	*num_blocks_out = rest;
	*mapped_out = true;
	if (ac->blockdev || lba > (uint64_t)INT64_MAX / bs) {
		return 0;
	}
	off = (off_t)(lba * bs);
	data = lseek(ac->fd, off, SEEK_DATA);
	if (data < 0) {
		/* ENXIO: no data from off to the end of the file. */
		if (errno == ENXIO) {
			*mapped_out = false;
		}
		return 0;
	}
	if ((uint64_t)(data - off) >= bs) {
		uint64_t n = (uint64_t)(data - off) / bs;

		*mapped_out = false;
		*num_blocks_out = n < rest ? n : rest;
		return 0;
	}
	/*
	 * Data within the block: mapped, up to the block holding the next hole's start. From
	 * data, not off: where off lies in a hole (a file system block smaller than the LUN's,
	 * the data starting inside the LUN block), SEEK_HOLE from off answers off itself.
	 */
	hole = lseek(ac->fd, data, SEEK_HOLE);
	if (hole > data) {
		uint64_t n = ((uint64_t)(hole - off) + bs - 1) / bs;

		*num_blocks_out = n < rest ? n : rest;
	}
	return 0;
}

static int aio_get_size(void *bctx, uint64_t *num_blocks_out)
{
	return scsitgt_backend_aio_resize(bctx, num_blocks_out);
}

/*
 * Grow or shrink a regular file to @num_blocks; a block device is resized by its owner. A LUN
 * smaller than its medium moves its limit instead while @num_blocks fits in the medium (the
 * rest, e.g. the host's trailer, is left alone); past the medium's end a file grows and the
 * LUN is the whole of it from then on.
 */
static int aio_resize(void *bctx, uint64_t num_blocks)
{
	struct aio_ctx *ac = bctx;
	uint64_t bytes;
	int rc;

	if (ac->limit_blocks != 0) {
		rc = aio_medium_bytes(ac, &bytes);
		if (rc < 0) {
			return rc;
		}
		if (num_blocks <= bytes / ac->block_size) {
			ac->limit_blocks = num_blocks < bytes / ac->block_size ? num_blocks : 0;
			return scsitgt_backend_aio_resize(bctx, NULL);
		}
	}
	if (ac->blockdev) {
		return -ENOTSUP;
	}
	if (num_blocks > (uint64_t)INT64_MAX / ac->block_size) {
		return -EFBIG;
	}
	if (ftruncate(ac->fd, (off_t)(num_blocks * ac->block_size)) < 0) {
		return -errno;
	}
	ac->limit_blocks = 0;
	return scsitgt_backend_aio_resize(bctx, NULL);
}

/* The log line of a context made for another loop names the LUN's kernel interface. */
static const char *aio_loop_describe(void *arg)
{
	const struct aio_ctx *ac = arg;

	return ac->engine->id == SCSITGT_BACKEND_AIO_ENGINE_IO_URING ? "io_uring context" :
								       "libaio context";
}

/* One submission context per loop (struct aio_loop); see the top of the file. */
static const struct scsitgt__loop_ctx_ops aio_loop_ops = {
	.size = sizeof(struct aio_loop),
	.subsys = AIO_SUBSYS,
	.per_loop = "kernel I/O context",
	.describe = aio_loop_describe,
	.setup = aio_loop_setup,
	.wake = aio_loop_wake,
	.close = aio_loop_close,
	.fini = aio_loop_fini,
};
_Static_assert(offsetof(struct aio_loop, lc) == 0, "loop_ctx.h: the helper's part first");

static const struct scsitgt_backend_ops aio_ops = {
	.size = sizeof(struct scsitgt_backend_ops),
	.name = "aio",
	.io_ctx_size = sizeof(struct aio_req),
	.open = aio_open,
	.close = aio_close,
	.submit = aio_submit,
	.supports = aio_supports,
	.get_lba_status = aio_get_lba_status,
	.get_size = aio_get_size,
	.resize = aio_resize,
	/* One kernel context per loop (struct aio_loop); see the top of the file. */
	.flags = SCSITGT_BACKEND_MULTI_LOOP,
};

SCSITGT_EXPORT const struct scsitgt_backend_ops *scsitgt_backend_aio_ops(void)
{
	return &aio_ops;
}

SCSITGT_EXPORT int scsitgt_backend_aio_resize(void *bctx, uint64_t *num_blocks_out)
{
	struct aio_ctx *ac = bctx;
	uint64_t bytes;
	uint64_t blocks;
	uint64_t old;
	int rc;

	if (ac == NULL || !ac->opened) {
		return -EINVAL;
	}
	rc = aio_medium_bytes(ac, &bytes);
	if (rc < 0) {
		return rc;
	}
	blocks = bytes / ac->block_size;
	if (blocks == 0) {
		return -EINVAL;
	}
	if (ac->limit_blocks != 0 && blocks > ac->limit_blocks) {
		/* A LUN smaller than its medium does not follow its growth (backend_aio.h). */
		blocks = ac->limit_blocks;
	}
	old = atomic_load_explicit(&ac->num_blocks, memory_order_relaxed);
	if (blocks != old) {
		scsitgt__log(&ac->log, SCSITGT_LOG_NOTICE, AIO_SUBSYS,
			     "%s: capacity %" PRIu64 " -> %" PRIu64 " blocks", ac->path, old,
			     blocks);
	}
	/* Read by every loop's submit and GET LBA STATUS. */
	atomic_store_explicit(&ac->num_blocks, blocks, memory_order_relaxed);
	if (num_blocks_out) {
		*num_blocks_out = blocks;
	}
	return 0;
}

SCSITGT_EXPORT int scsitgt_backend_aio_is_direct(void *bctx)
{
	const struct aio_ctx *ac = bctx;

	if (ac == NULL) {
		return -EINVAL;
	}
	return ac->direct ? 1 : 0;
}

SCSITGT_EXPORT int scsitgt_backend_aio_get_engine(void *bctx)
{
	const struct aio_ctx *ac = bctx;

	if (ac == NULL) {
		return -EINVAL;
	}
	return (int)ac->engine->id;
}
