/* SPDX-License-Identifier: MIT */
/* Test hooks of the aio backend (internal, for tests/unit/backend_aio). */
#ifndef SCSITGT_BACKEND_AIO_HOOKS_H
#define SCSITGT_BACKEND_AIO_HOOKS_H

#include <stdbool.h>

/*
 * Pretend the kernel lacks RWF_DSYNC (before Linux 4.13: FUA writes are followed by a flush)
 * and/or IOCB_CMD_FDSYNC (before 4.18: flushes are a synchronous fdatasync on the loop), so
 * that the fallback paths run on a current kernel.
 */
void scsitgt__backend_aio_set_kernel_caps(void *bctx, bool rwf_dsync, bool fdsync);

/*
 * Make later scsitgt_backend_aio_create() calls behave as if the kernel had no io_uring (the
 * AUTO engine falls back to libaio, IO_URING fails), as on a kernel with
 * kernel.io_uring_disabled set. Process-wide; not thread-safe.
 */
void scsitgt__backend_aio_refuse_uring(bool refuse);

/* How many loops have a kernel context of the context's (home's and each other submitting
 * loop's). Call on home. */
unsigned int scsitgt__backend_aio_loop_count(void *bctx);

/* How many of the context's loops have an io_uring ring that punts buffered reads and writes
 * (home's and each other submitting loop's). Call on home. */
unsigned int scsitgt__backend_aio_uring_punting_loops(void *bctx);

/* How many flushes (fdatasync, as an aio or ring operation or on the loop) the context has
 * issued. Any loop. */
unsigned long scsitgt__backend_aio_syncs(void *bctx);

/* How many writes the context handed to the kernel with RWF_DSYNC in their iocb or SQE (FUA
 * writes, aio.c "Durability"; each resubmitted remainder of a short one counts again). Any
 * loop. */
unsigned long scsitgt__backend_aio_dsync_writes(void *bctx);

/* The next flush-class request of the context (a FLUSH, a FUA write, the flush after a
 * deallocation in write-through mode) that the kernel completes successfully ends with @err
 * (a negative errno) instead, as when a writeback failed. Any loop. */
void scsitgt__backend_aio_inject_sync_error(void *bctx, int err);

/* Another loop's context setup is refused (as the kernel refuses one beyond fs.aio-max-nr:
 * -EAGAIN) when it asks for more than @depth requests; 0 lifts the limit. Call before that
 * loop's first submit. */
void scsitgt__backend_aio_limit_loop_depth(void *bctx, unsigned int depth);

/* The next @count kernel completions of the context report @res (bytes or a negative errno)
 * instead of their own, whatever the request did. Set while nothing is in flight. */
void scsitgt__backend_aio_inject_result(void *bctx, long res, int count);

/* How many read or write completions the kernel posted for the context (each resubmitted
 * remainder counts again; the NOP of a failed io_uring submission does not). Any loop. */
unsigned long scsitgt__backend_aio_rw_events(void *bctx);

/* The next @count submissions to the kernel (io_submit(), io_uring_enter()) fail with @err (a
 * negative errno) without the kernel taking anything, as when it has no memory for them. Set
 * while nothing is in flight. */
void scsitgt__backend_aio_fail_submit(void *bctx, int err, int count);

#endif /* SCSITGT_BACKEND_AIO_HOOKS_H */
