/* SPDX-License-Identifier: MIT */
/**
 * @file backend_aio.h
 * The built-in aio backend: a regular file or a block device served through one of two kernel
 * I/O engines, io_uring (liburing) where the build and the kernel allow it, Linux native AIO
 * (libaio) otherwise; completions are signalled on an eventfd watched by the loop that
 * submitted the io. No threads of its own. The ops have SCSITGT_BACKEND_MULTI_LOOP: each of
 * the engine's loops that submits gets its own kernel context (a ring or an io_context, an
 * eventfd and its poll handle), made at its first submit and torn down on that loop by
 * close().
 *
 * A LUN smaller than its medium: a LUN created with num_blocks below what the file or device
 * holds uses only those first blocks, and keeps that limit: reading the size again
 * (scsitgt_backend_aio_resize(), scsitgt_lun_resize_medium() with 0) follows the medium when it
 * shrinks below the limit, and back up to it, but never past it. The library cannot tell free
 * space from what the host keeps after the LUN (a trailer of its own metadata, another LUN's
 * part of the device): growing on its own would hand those blocks to initiators, which may
 * write them. The host moves the limit by asking for a size (scsitgt_lun_resize_medium() with
 * num_blocks): within the medium only the limit moves, the file or device is left as it is;
 * past its end a file grows to that size and the LUN is the whole file from then on. A LUN
 * made the size of its medium (num_blocks 0 or equal) follows the medium both ways.
 *
 * When the medium shrank under the LUN's capacity (the core kept the capacity because of
 * blocks in use, or was not told yet), ios past the medium's end fail with MEDIUM ERROR (a
 * WRITE with WRITE ERROR), as reads past the end of a file do, never LOGICAL BLOCK ADDRESS
 * OUT OF RANGE, which READ CAPACITY would contradict.
 *
 * When the library is built without libaio the functions still exist and return -ENOTSUP
 * (scsitgt_backend_aio_ops() then returns NULL).
 */
#ifndef LIBSCSITGT_BACKEND_AIO_H
#define LIBSCSITGT_BACKEND_AIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "backend.h"
#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The kernel interface the aio backend submits its I/O through (scsitgt_backend_aio_opts). */
enum scsitgt_backend_aio_engine {
	/**
	 * io_uring where the library was built with liburing and the kernel offers a ring and
	 * every operation the backend uses (probed at create); libaio otherwise, with a log line
	 * that says why. The default.
	 */
	SCSITGT_BACKEND_AIO_ENGINE_AUTO = 0,
	/**
	 * Linux native AIO. Buffered reads that miss the page cache, and in buffered mode
	 * writes, run inside io_submit() and block the loop; UNMAP and WRITE ZEROES are
	 * fallocate() calls on the loop.
	 */
	SCSITGT_BACKEND_AIO_ENGINE_LIBAIO = 1,
	/**
	 * io_uring: reads, writes, flushes (IORING_OP_FSYNC) and file UNMAP / WRITE ZEROES
	 * (IORING_OP_FALLOCATE) are ring operations that never block the loop, in buffered
	 * mode too. scsitgt_backend_aio_create() fails with -ENOTSUP where it is unavailable.
	 */
	SCSITGT_BACKEND_AIO_ENGINE_IO_URING = 2,
};

/**
 * How the io_uring engine hands a buffered (page cache) read or write to the kernel
 * (scsitgt_backend_aio_opts). O_DIRECT I/O, flushes and fallocate are not concerned.
 */
enum scsitgt_backend_aio_uring_async {
	/**
	 * ALWAYS on the home loop's ring, NEVER on the other loops' rings (worker loops that
	 * submit with SCSITGT_BACKEND_MULTI_LOOP). The default.
	 */
	SCSITGT_BACKEND_AIO_URING_ASYNC_AUTO = 0,
	/**
	 * Every buffered read and write goes to the kernel's io-wq worker threads at once
	 * (IOSQE_ASYNC): io_uring_enter() on the loop copies nothing and submits no readahead,
	 * and the copies run on those kernel threads, which compete with the loops for the CPUs.
	 */
	SCSITGT_BACKEND_AIO_URING_ASYNC_ALWAYS = 1,
	/**
	 * The kernel first tries the request without blocking inside io_uring_enter() on the
	 * loop's thread: a page cache hit is copied there, a miss starts the readahead there and
	 * completes later (the kernel's asynchronous buffered reads where the file system has
	 * them, io-wq otherwise). The loop never waits for the medium, but it does the copies.
	 */
	SCSITGT_BACKEND_AIO_URING_ASYNC_NEVER = 2,
};

/** Options of scsitgt_backend_aio_create(). Initialise with scsitgt_backend_aio_opts_init(). */
struct scsitgt_backend_aio_opts {
	/** sizeof(struct scsitgt_backend_aio_opts), set by scsitgt_backend_aio_opts_init(). */
	size_t size;
	/**
	 * The home loop of the LUN the backend will serve (the engine's loop): its completion
	 * eventfd is polled there (a worker loop that submits gets its own). Required.
	 */
	uv_loop_t *loop;
	/** Path of a regular file or a block device. Required. Copied. */
	const char *path;
	/** Open read-only; writes, UNMAP and WRITE ZEROES fail with -EROFS. Default false. */
	bool read_only;
	/**
	 * Try O_DIRECT (bypass the page cache). Default true. Where the file system does not
	 * support it (tmpfs, or a LUN block size below the device's direct I/O alignment) the
	 * backend falls back to buffered I/O; scsitgt_backend_aio_is_direct() tells which.
	 */
	bool direct;
	/**
	 * No volatile cache: the file is opened O_DSYNC, so every write is durable before it
	 * completes and the geometry does not claim a write cache. Default false.
	 */
	bool write_through;
	/** Most ios in the kernel at once per loop (io_setup or ring size); more are queued.
	 * Default 128. */
	unsigned int queue_depth;
	/**
	 * Host logger for the backend's messages (the I/O mode chosen and why, capacity
	 * changes, failed ios, the options create() refuses). Optional; it receives the levels
	 * up to @ref log_level, subsystem "aio", on the thread of the loop that submitted the io
	 * (any of the engine's loops), of the home loop, or of the creating thread for create();
	 * a host that needs one thread serializes in its callback. The engine's logger is not
	 * used: a backend logs after its LUN and engine are gone (docs/backends.md, "Logging");
	 * give the same callback, argument and level as the engine's options.
	 */
	scsitgt_log_cb log_cb;
	/** Argument of @ref log_cb. */
	void *log_arg;
	/**
	 * The I/O engine. Default SCSITGT_BACKEND_AIO_ENGINE_AUTO (io_uring, else libaio);
	 * scsitgt_backend_aio_get_engine() tells which one a context uses.
	 */
	enum scsitgt_backend_aio_engine engine;
	/**
	 * io_uring engine, buffered I/O: where the copies between the page cache and the io's
	 * buffers run (enum scsitgt_backend_aio_uring_async). Default
	 * SCSITGT_BACKEND_AIO_URING_ASYNC_AUTO. Ignored by libaio and for O_DIRECT.
	 */
	enum scsitgt_backend_aio_uring_async uring_async;
	/**
	 * Most verbose level passed to @ref log_cb, as the engine's log_level; messages above it
	 * are not even formatted. Default ::SCSITGT_LOG_DEBUG (every level, what a caller
	 * compiled before this member was appended gets). ::SCSITGT_LOG_ERROR ..
	 * ::SCSITGT_LOG_DEBUG; others fail create() with -EINVAL.
	 */
	enum scsitgt_log_level log_level;
};

/**
 * Fill @p opts with the defaults (direct true, queue_depth 128, log_level SCSITGT_LOG_DEBUG,
 * everything else 0/NULL).
 *
 * @param opts The options to fill.
 * @param size sizeof(*opts) as the caller was compiled.
 *
 * Thread-safe.
 */
SCSITGT_EXPORT void scsitgt_backend_aio_opts_init(struct scsitgt_backend_aio_opts *opts,
						  size_t size);

/**
 * The aio backend's ops table, to pass as the LUN options' backend with a context from
 * scsitgt_backend_aio_create(). Supports READ and WRITE; FLUSH unless write_through or
 * read_only; UNMAP and WRITE ZEROES where the file system or device supports them (probed at
 * open).
 *
 * @return The ops table (static), or NULL when the library was built without libaio.
 *         Thread-safe.
 */
SCSITGT_EXPORT const struct scsitgt_backend_ops *scsitgt_backend_aio_ops(void);

/**
 * Open @p opts->path and create an aio context for it (io_setup, eventfd). The I/O mode
 * (O_DIRECT or buffered) is chosen here and may be narrowed at open() when the LUN block size
 * does not fit the device's direct I/O alignment. The size and block sizes are read by the
 * ops' open() at scsitgt_lun_create(): files take the LUN options' block size (default 512)
 * and are rounded down to whole blocks; block devices report their logical and physical block
 * sizes (BLKSSZGET, BLKPBSZGET) and size (BLKGETSIZE64).
 *
 * @param bctx_out Receives the context. The LUN frees it through close(); if
 *                 scsitgt_lun_create() fails, free it with the ops' close(bctx, cb, cb_arg).
 *                 Once open() ran, close() finishes on the loop (the eventfd's poll handle
 *                 is closed with uv_close(); other loops' contexts are closed on their
 *                 loops, which must still run): run the loop until @p cb is called.
 * @param opts     Options; loop and path are required. Copied.
 * @return 0; -EINVAL for a NULL argument, a missing loop or path, an unknown engine or
 *         uring_async, or a file that is neither a regular file nor a block device;
 *         -ENOENT, -EACCES, -EROFS, -EISDIR... as open(2) reports them; -EAGAIN when the
 *         kernel's AIO limit (fs.aio-max-nr) is reached; -ENOMEM; -ENOTSUP when the library
 *         was built without libaio, or the engine asked for is io_uring and the build or the
 *         kernel lacks it (the reason is logged).
 *
 * Thread-safe (the loop is only used from open() on).
 */
SCSITGT_EXPORT int scsitgt_backend_aio_create(void **bctx_out,
					      const struct scsitgt_backend_aio_opts *opts);

/**
 * Read the size of the file or device again (after it grew or shrank) and adopt it: later ios
 * are checked against the new capacity (at most the num_blocks of a LUN created smaller than
 * its medium, see the top of this file). The core is not told; scsitgt_lun_resize_medium() does
 * both in one step (it calls this through the backend's get_size() op, or grows or shrinks a
 * file through resize(), and raises CAPACITY DATA HAS CHANGED).
 *
 * @param bctx           A context opened by a LUN.
 * @param num_blocks_out Receives the new capacity in logical blocks. May be NULL.
 * @return 0; -EINVAL if @p bctx is NULL, not opened yet, or the medium is now smaller than one
 *         block; an fstat or ioctl error; -ENOTSUP when the library was built without libaio.
 *
 * Loop: home of the LUN.
 */
SCSITGT_EXPORT int scsitgt_backend_aio_resize(void *bctx, uint64_t *num_blocks_out);

/**
 * Whether the context does direct I/O (O_DIRECT) rather than buffered I/O. Final once the
 * LUN is created (open() may fall back to buffered).
 *
 * @param bctx The context.
 * @return 1 for O_DIRECT, 0 for buffered; -EINVAL if @p bctx is NULL; -ENOTSUP when the
 *         library was built without libaio.
 *
 * Loop: home of the LUN.
 */
SCSITGT_EXPORT int scsitgt_backend_aio_is_direct(void *bctx);

/**
 * The engine a context submits its I/O through, chosen at create.
 *
 * @param bctx The context.
 * @return SCSITGT_BACKEND_AIO_ENGINE_LIBAIO or SCSITGT_BACKEND_AIO_ENGINE_IO_URING; -EINVAL if
 *         @p bctx is NULL; -ENOTSUP when the library was built without libaio.
 *
 * Thread-safe (the engine does not change after create).
 */
SCSITGT_EXPORT int scsitgt_backend_aio_get_engine(void *bctx);

#ifdef __cplusplus
}
#endif

#endif /* LIBSCSITGT_BACKEND_AIO_H */
