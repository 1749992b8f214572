/* SPDX-License-Identifier: MIT */
/*
 * The RBD backend's context, shared by the backend's files (rbd.c: the image, its worker
 * thread and jobs, the update watch; rbd_io.c: the LUN's open(), the I/O path and its errors;
 * rbd_pr.c: persistent reservations in RADOS; rbd_gateway.c: the exclusive lock, probes and
 * takeovers of the multi-gateway model, whose decisions rbd_ha.c makes). Not a public header:
 * hosts see only include/libscsitgt/backend_rbd.h.
 *
 * Threads. Every field is owned by the LUN's home loop unless its comment says otherwise.
 * The I/O path (submit, completions, errors) runs on the loop of each io's command: home or an
 * engine worker (SCSITGT_BACKEND_MULTI_LOOP; rbd_loop.h, docs/rbd.md "Threads"); it reads the
 * fields set at open and only the fields marked "any loop" change under it. Everything that
 * must be single stays on home: the jobs, the update watch, resize, the hooks (HA, PR), the
 * fencing decisions and close. Blocking librados/librbd calls never run on a loop: each
 * context has one worker thread (started when the context is created asynchronously, or at
 * open()) that runs jobs in FIFO order, one at a time, and hands each finished job back to
 * home (scsitgt__rbd_queue_work). The image is opened by the first job and closed by the last
 * one. librbd's own threads only hand work over: io completions to the io's loop (rbd_loop.h),
 * everything else (the update watch) to home through the context's uv_async_t.
 */
#ifndef SCSITGT_BACKEND_RBD_INT_H
#define SCSITGT_BACKEND_RBD_INT_H

#include <pthread.h>
#include <rados/librados.h>
#include <rbd/librbd.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "backend/rbd_loop.h"
#include "libscsitgt/backend_rbd.h"
#include "util/log.h"

#define SCSITGT__RBD_SUBSYS "rbd"

/*
 * A hand-over between our threads and librados'/librbd's that ThreadSanitizer sees. Those
 * libraries order their own threads with locks and atomics TSan cannot see (tests/tsan.supp
 * makes it ignore what happens inside them), so a structure one of their callbacks reads is
 * handed over explicitly, as rbd_io.c's rbd_req.lp is for each io:
 * - in: the thread that gives the structure to librados or librbd (the call that starts the
 *   operation or registers the watch) calls give() after its last write, before that call;
 *   the callback calls take() before its first access;
 * - out: a callback that does not hand its work on through a lock or a queue (a watch
 *   callback) calls give() after its last access, and the thread that writes or frees the
 *   structure once librados or librbd promised that no callback runs any more
 *   (rados_watch_flush, rados_aio_flush, rbd_update_unwatch) calls take() before.
 * give() is a release read-modify-write: a take() (acquire) sees every give() before it,
 * whichever thread made it. Not on the I/O path (an io's callback has its own rbd_req.lp).
 */
struct scsitgt__rbd_handover {
	atomic_uint n;
};

static inline void scsitgt__rbd_handover_give(struct scsitgt__rbd_handover *h)
{
	atomic_fetch_add_explicit(&h->n, 1, memory_order_release);
}

static inline void scsitgt__rbd_handover_take(struct scsitgt__rbd_handover *h)
{
	(void)atomic_load_explicit(&h->n, memory_order_acquire);
}

struct scsitgt__rbd_ctx;

/*
 * A blocking operation run on the context's worker thread. The caller owns the memory (embed
 * it in a larger struct and get back to it with container_of-style arithmetic or @arg).
 */
struct scsitgt__rbd_job {
	/* Runs on the worker thread; may block (rbd_lock_acquire, rados_write_op_operate...).
	 * Must not touch loop-owned state. Sets @status. */
	void (*work)(struct scsitgt__rbd_job *job);
	/* Runs on the loop afterwards, exactly once (also with status -ECANCELED when the
	 * context closed before @work could run: then @work is skipped). */
	void (*done)(struct scsitgt__rbd_job *job);
	void *arg;
	int status;
	/* The context, set by scsitgt__rbd_queue_work(). */
	struct scsitgt__rbd_ctx *rc;
	struct scsitgt__rbd_job *next; /* private */
};

/*
 * Hooks for the HA and PR code. Each is optional (NULL: the backend's default) and is called
 * on the loop with @arg.
 */
struct scsitgt__rbd_hooks {
	void *arg;
	/*
	 * This client was blocklisted (an operation returned -ESHUTDOWN / -EBLOCKLISTED,
	 * 108): the rados_t is dead for good (README of tools/ceph: shut it down and reconnect).
	 * Called once per context; from then on every io fails (NOT READY, ASYMMETRIC ACCESS
	 * STATE TRANSITION, never acknowledged) until the hook's owner replaces the connection
	 * and clears rc->fenced.
	 */
	void (*fenced)(struct scsitgt__rbd_ctx *rc, void *arg);
	/*
	 * The image header changed (librbd's update watch fired: a resize, a lock owner change,
	 * a feature or snapshot change), on this or another gateway. Called after the backend
	 * handled a size change itself.
	 */
	void (*updated)(struct scsitgt__rbd_ctx *rc, void *arg);
	/*
	 * An io failed with @err (negative errno from librbd: -EROFS when another client owns
	 * the exclusive lock, -ETIMEDOUT, -EIO...); the backend completes the io itself
	 * (docs/rbd.md, "Errors"). For an io of the home loop the hook runs before that
	 * completion; an io of another loop completes on its loop and home hears of it when it
	 * next wakes, once per kind of error in between (-EROFS, -ETIMEDOUT, or -EIO for any
	 * other error).
	 */
	void (*io_failed)(struct scsitgt__rbd_ctx *rc, int err, void *arg);
};

struct scsitgt__rbd_ctx {
	uv_loop_t *loop;
	struct scsitgt__logger log;
	/* The options, copied (strings owned). */
	char *pool;
	char *image_name;
	char *pool_namespace; /* "" for the default namespace */
	char *client_id;
	char *conf_file; /* NULL: librados' default */
	bool read_only;
	bool write_through;
	uint32_t op_timeout_s;

	/* librados/librbd handles: set by the open job, used by I/O on the loop afterwards
	 * (librbd's aio calls are thread-safe), closed by the close job. */
	rados_t cluster;
	rados_ioctx_t ioctx;
	rbd_image_t image;
	bool connected; /* rados_connect() succeeded */
	int64_t pool_id;
	char image_id[64];
	char fsid[40];
	/* Device identification derived from fsid, pool id, namespace and image id. */
	uint64_t naa;
	char serial[33];
	/* librbd's rbd_cache at open (a volatile write cache) and the discard granularity. */
	bool cache;
	/* How rbd_lock_break() fences the owner it breaks, from the image's options at open
	 * (rbd_blocklist_on_break_lock, rbd_blocklist_expire_seconds; 0: the monitors' default):
	 * the gateway model's single writer rests on it (scsitgt_rbd_gateway_create()). */
	bool break_blocklists;
	uint64_t blocklist_expire_s;
	uint64_t discard_granularity;
	/* RADOS object size of the image (rbd_stat), the optimal transfer length. */
	uint64_t obj_size;
	/* Image size in bytes as last read (the open job, a reconnection, the size jobs): a
	 * record; resizes compare the LUN's num_blocks. Atomic: a reconnection (worker thread)
	 * writes it while home may take a size job's result. */
	_Atomic uint64_t size_bytes;

	/* The LUN: geometry adopted at open(), and the LUN once the host attached it. */
	bool opened;
	uint32_t block_size;
	/* Written on home (a resize), read on any loop. */
	_Atomic uint64_t num_blocks;
	/* Home: set by scsitgt_backend_rbd_set_lun(), cleared when the LUN is destroyed (the
	 * detach op), before the LUN may be freed. */
	struct scsitgt_lun *lun;

	/*
	 * Any loop: ios pass to librbd only while this is false. Set when an operation reported
	 * this client blocklisted (on any loop) and by the HA code (home), cleared by the HA code
	 * once a fresh client owns the lock. Sequentially consistent (plain reads and writes of
	 * the atomic): a loop counts its io in flight (scsitgt__rbd_loop_begin()) before reading
	 * it, home sets it before summing those counts (scsitgt__rbd_loops_inflight()) to know
	 * that no loop uses the image any more; and a loop that reads false sees the image and
	 * the settings (zc_reads, cache...) the last (re)connection wrote.
	 */
	atomic_bool fenced;
	/*
	 * Any loop: this client was really blocklisted (an operation said so). rc->fenced is
	 * also set for a client that merely does not own the lock (a gateway's standby); only
	 * this one means "the rados_t is dead": the shared reservations read it (a standby's
	 * lost watch is stale, not fenced). Set with rc->fenced by scsitgt__rbd_set_fenced(),
	 * cleared by a successful reconnection (a fresh client).
	 */
	atomic_bool blocklisted;
	/* Any loop: what ios of other loops than home reported for home's hooks
	 * (RBD_EV_* in rbd_io.c); home takes them when the uv_async_t fires. */
	atomic_uint loop_events;
	struct scsitgt__rbd_hooks hooks;

	/* Zero-copy I/O (docs/rbd.md), decided at open: READs through librbd's C++ API
	 * (rbd_zc.h); WRITEs without librbd's copy, where the host's configuration asks librbd
	 * for it (rbd_disable_zero_copy_writes=false) and no cache acknowledges early. */
	bool zc_reads;
	bool zc_writes;
	/* Set when the image's options forbid it (then the client is opened again without). */
	bool zc_off;
	/* Counted on any loop (relaxed), logged at close: zero-copy READs lent and copied out. */
	atomic_uint_fast64_t zc_lent, zc_copied;

	/* io completions: each loop's queue, which librbd's completion callbacks fill. */
	struct scsitgt__rbd_loops loops;

	/* The worker thread and its job queue (mutex-protected), and the loop's wake-up. */
	uv_thread_t thread;
	bool thread_started;
	uv_async_t async;
	/* Written on home; also read by the update watch callback, which may run before home
	 * made the handle (a context opened synchronously watches before its first job). */
	atomic_bool async_inited;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct scsitgt__rbd_job *todo_head, *todo_tail; /* under mu */
	struct scsitgt__rbd_job *done_head, *done_tail; /* under mu */
	bool worker_exit;				/* under mu: the close job ran */
	/* Set by librbd's update watch callback (any thread), consumed on the loop. */
	atomic_bool update_pending;
	/* Fault injection (scsitgt_backend_rbd_set_reconnect_fault()): set on home, read by the
	 * worker; while set, every reconnection fails after the old client is shut down. */
	atomic_bool reconnect_fault;
	/* The context handed to that callback (rbd_update_watch) and back (rbd_update_unwatch). */
	struct scsitgt__rbd_handover watch_ho;
	uint64_t watch_handle;
	bool watching;

	/* Shared persistent reservations (rbd_pr.c), when attached: stopped (unwatched) before
	 * the close job runs. Set and cleared on the loop with __atomic stores; the worker reads it
	 * (__atomic_load_n) around a reconnection. */
	struct scsitgt__rbd_pr *pr;

	/* Closing: no new jobs. Every loop's completion queue is torn down first, each once
	 * librbd gave its last request back; then the close job (close_job, allocated at the
	 * close's start: NULL without memory or a worker) closes the image, the last job. */
	bool closing;
	struct scsitgt__rbd_job *close_job;
	/* ios still in librbd when close() was called (for the logs). */
	unsigned int close_held;
	scsitgt_done_cb close_cb;
	void *close_cb_arg;
};

/*
 * Run @job on the context's worker thread, then @job->done on the loop. Returns 0, or
 * -ECANCELED when the context is closing (then nothing is called), -ENOMEM/-EAGAIN when the
 * worker could not be started. Loop: home.
 */
int scsitgt__rbd_queue_work(struct scsitgt__rbd_ctx *rc, struct scsitgt__rbd_job *job);

/*
 * Complete a failed io with the sense its librbd error @err deserves (docs/rbd.md, "Errors"):
 * -EROFS -> NOT READY, LOGICAL UNIT NOT ACCESSIBLE, TARGET PORT IN STANDBY STATE; -ESHUTDOWN
 * (blocklisted) -> NOT READY, ASYMMETRIC ACCESS STATE TRANSITION and the fenced hook;
 * -ETIMEDOUT -> NOT READY, BECOMING READY (retried); others as scsitgt_io_complete(). The
 * io_failed hook runs first on home; an io of another loop tells home (hooks.io_failed). Loop:
 * the io's.
 */
void scsitgt__rbd_io_fail(struct scsitgt__rbd_ctx *rc, struct scsitgt_io *io, int err);

/* Stop sharing persistent reservations (rbd_pr.c): unwatch and release on the worker thread,
 * queued ahead of the close job. Loop: home. */
struct scsitgt__rbd_pr;
void scsitgt__rbd_pr_stop(struct scsitgt__rbd_ctx *rc);
/* Worker: the age in ms past which the watch on @oid may be gone at the OSD (0: unknown), with
 * the slack a check every @check_ms needs (rbd_pr_bound.c). */
uint64_t scsitgt__rbd_pr_stale_bound(struct scsitgt__rbd_ctx *rc, const char *oid,
				     uint64_t check_ms);
/* A LOGICAL UNIT RESET through this gateway: tell the other gateways sharing reservations
 * (they call scsitgt_lun_apply_reset()) and call @cb once they acknowledged, or the notify
 * timed out, or at once without shared reservations. Loop: home. */
void scsitgt__rbd_pr_reset(struct scsitgt__rbd_ctx *rc, scsitgt_done_cb cb, void *cb_arg);
/* The cluster handle is about to be shut down / was connected again (a reconnection): the
 * shared reservations let go of their ioctx and watch, then take new ones and re-read the
 * state. Worker thread; no-ops without shared reservations. */
void scsitgt__rbd_pr_disconnect(struct scsitgt__rbd_ctx *rc);
void scsitgt__rbd_pr_connected(struct scsitgt__rbd_ctx *rc);

/*
 * Replace a blocklisted client (rc->fenced): close the image, shut the rados_t down, connect a
 * fresh client and reopen the image. Blocking: a job's work, queued while rc->fenced is set
 * and no io is in flight on any loop (scsitgt__rbd_ios_inflight() 0 after fenced was set). 0
 * or a negative errno (then rc->image is NULL and the caller retries later).
 */
int scsitgt__rbd_reconnect(struct scsitgt__rbd_ctx *rc);

/* ios passed to librbd and not finished yet, on every loop. Read it after setting rc->fenced:
 * once it is 0, no loop touches the image until rc->fenced is cleared. Loop: home. */
unsigned int scsitgt__rbd_ios_inflight(struct scsitgt__rbd_ctx *rc);

/*
 * The context's worker thread and its job queue (rbd.c). worker_start: start the worker and
 * home's wake-up handle, once (0 or libuv's error); Loop: home. job_push: queue @job for it
 * without the closing check of scsitgt__rbd_queue_work() (the worker must be started);
 * Thread-safe.
 */
int scsitgt__rbd_worker_start(struct scsitgt__rbd_ctx *rc);
void scsitgt__rbd_job_push(struct scsitgt__rbd_ctx *rc, struct scsitgt__rbd_job *job);

/* The backend's close() (rbd.c): wait for every io still in librbd (each completes on its
 * loop), close the image on the worker thread, then free the context and call @cb on home.
 * Loop: home. */
void scsitgt__rbd_op_close(void *bctx, scsitgt_done_cb cb, void *cb_arg);

/*
 * An operation said this client is blocklisted: note it once (rc->fenced) and tell the fenced
 * hook, now when @home, else when home next wakes (rbd_io.c). Loop: any (@home: home).
 */
void scsitgt__rbd_set_fenced(struct scsitgt__rbd_ctx *rc, bool home);
/* What ios of other loops than home reported since the last wake-up: the hooks run now
 * (rbd_io.c). Loop: home. */
void scsitgt__rbd_loop_events(struct scsitgt__rbd_ctx *rc);

#endif /* SCSITGT_BACKEND_RBD_INT_H */
