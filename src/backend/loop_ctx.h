/* SPDX-License-Identifier: MIT */
/*
 * A backend's per-loop contexts (SCSITGT_BACKEND_MULTI_LOOP; docs/threading.md section 3),
 * written once for every backend that keeps one (aio.c: a kernel I/O context per loop;
 * rbd_loop.c: a completion queue per loop).
 *
 * The engine submits an io on its command's loop (scsitgt_io_get_loop(): home or a worker's)
 * and the io completes there, so such a backend keeps one context per loop that submits: what
 * that loop submits through and where its completions come back. Each context has an eventfd
 * watched by a uv_poll_t on its loop: whatever signals it (the kernel, another thread) has the
 * backend's wake() called on that loop. Home's context is made by scsitgt__loop_ctxs_init()
 * and watched from scsitgt__loop_ctxs_start() on; another loop's is made at that loop's first
 * scsitgt__loop_ctx_get(), on its own thread, and pushed on a list that the loops read without
 * a lock (only the loop it belongs to ever makes a context, and none leaves the list before
 * the close).
 *
 * Closing (scsitgt__loop_ctxs_close(), on home) tears each context down on its own loop:
 * home's at once, every other one by a message (a uv_async_t on that loop). The backend's
 * close() may let a context finish what it still has in flight first; then its handles are
 * closed (counted per context) and the backend's fini() releases it. The last context to go
 * finishes the close on home (through another uv_async_t when it was another loop's), where
 * the closed callback runs. Every loop that submitted must therefore still run until then
 * (core/worker.c keeps a worker's loop running while a backend's handles are on it); a loop
 * that never submitted has no context and takes no part.
 *
 * Nothing here knows a backend: tests/unit/backend/test_loop_ctx.c drives it with three loops.
 */
#ifndef SCSITGT_BACKEND_LOOP_CTX_H
#define SCSITGT_BACKEND_LOOP_CTX_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

#include "util/log.h"

struct scsitgt__loop_ctxs;

/*
 * One loop's context: the first member of the backend's own per-loop struct, which the helper
 * allocates (zeroed, scsitgt__loop_ctx_ops.size bytes). Fields are the helper's; the backend
 * may read loop, efd and closing on the context's loop.
 */
struct scsitgt__loop_ctx {
	struct scsitgt__loop_ctxs *set;
	uv_loop_t *loop;
	/* The next other loop's context (not home's); never changes once published. */
	struct scsitgt__loop_ctx *next;
	/* Nonblocking; a write to it has wake() called on the loop. Open until destroy(). */
	int efd;
	/* Set when the context closes (before the backend's close() is called). */
	bool closing;

	/* Home's context (never changes). */
	bool home;

	/* Private: the loop's thread only. */
	bool torn_down;
	bool poll_inited;
	bool async_inited;
	unsigned int handles;
	uv_poll_t poll;
	uv_async_t close_async; /* not home's: the close message */
};

/* What a backend does with its contexts. Each is called on the context's own loop. */
struct scsitgt__loop_ctx_ops {
	/* Bytes of the backend's per-loop struct, which starts with a struct scsitgt__loop_ctx. */
	size_t size;
	/* For logs ("aio", "rbd"). */
	const char *subsys;
	/* What another loop's context gives that loop, for the line logged (info) when one is
	 * made: "another loop submits: its own <per_loop>" ("completion queue"). */
	const char *per_loop;
	/* Optional: the same, when it depends on the set (@arg: the set's argument; aio says
	 * which kernel interface the LUN runs on); per_loop when absent. */
	const char *(*describe)(void *arg);
	/*
	 * Optional. Set a new context up (lc->loop and lc->efd are there, the rest of the struct
	 * is zeroed; home's is set up inside scsitgt__loop_ctxs_init()). 0 or a negative errno,
	 * with nothing of its own left: then the context is freed and nothing else is called.
	 */
	int (*setup)(void *arg, struct scsitgt__loop_ctx *lc);
	/* The eventfd was signalled (read already: a later write signals it again). @status is
	 * uv_poll's (< 0: an error of the poll). */
	void (*wake)(void *arg, struct scsitgt__loop_ctx *lc, int status);
	/*
	 * Optional. The context closes (lc->closing is set): when nothing of it is left in flight
	 * call scsitgt__loop_ctx_teardown(lc), now or from a later wake(). NULL: torn down at once.
	 */
	void (*close)(void *arg, struct scsitgt__loop_ctx *lc);
	/*
	 * The context's handles are closed (at the close, or when a context could not be made):
	 * release what setup() made, then scsitgt__loop_ctx_destroy(lc), now or later from any
	 * thread (when another thread still holds it). The helper never touches @lc again.
	 */
	void (*fini)(void *arg, struct scsitgt__loop_ctx *lc);
};

/* Every loop's context of one backend context (embedded in it; zeroed before init()). */
struct scsitgt__loop_ctxs {
	uv_loop_t *home_loop;
	const struct scsitgt__loop_ctx_ops *ops;
	void *arg;
	const struct scsitgt__logger *log;
	const char *name;
	/* Home's (from init() on), and the others' (pushed by their first get(); read without a
	 * lock). */
	struct scsitgt__loop_ctx *home;
	_Atomic(struct scsitgt__loop_ctx *) others;
	bool started;
	/* Closing: contexts still to tear down; home hears from done_async when the last one was
	 * another loop's. */
	atomic_uint close_pending;
	uv_async_t done_async;
	bool done_inited;
	void (*closed)(void *arg);
	void *closed_arg;
};

/*
 * Make home's context (its eventfd and the backend's setup(); not watched yet, no handle on
 * the loop). @arg is passed to every op; @log (used from every loop: the host's logger is told
 * so, docs/threading.md) and @name (a prefix for its lines, may be NULL) must outlive the set.
 * 0 (also when home's context exists already) or a negative errno (nothing made). Loop: home.
 */
int scsitgt__loop_ctxs_init(struct scsitgt__loop_ctxs *set, uv_loop_t *home_loop,
			    const struct scsitgt__loop_ctx_ops *ops, void *arg,
			    const struct scsitgt__logger *log, const char *name);

/*
 * Watch home's eventfd and make the handle through which other loops report their teardown;
 * from now on other loops may get their contexts. 0 (also when started already) or libuv's
 * error (what was made stays until the close). Loop: home.
 */
int scsitgt__loop_ctxs_start(struct scsitgt__loop_ctxs *set);

/*
 * The context of @loop, the calling thread's (home's, or another loop's: made now when it has
 * none, which is logged at level info). 0 when it existed, 1 when it was made now, or a
 * negative errno (-EIO before start() or without home's context, -ENOMEM, the eventfd's,
 * setup()'s or libuv's error: nothing made). Loop: @loop.
 */
int scsitgt__loop_ctx_get(struct scsitgt__loop_ctxs *set, uv_loop_t *loop,
			  struct scsitgt__loop_ctx **out);

/*
 * Tear every context down on its loop (home's now, the others' by a message) and call
 * @closed(@arg) on home once all are gone: from inside when home was the last (nothing
 * started on the loop, or no other loop's left), else from the loop. @set may be zeroed and
 * never initialised. No context may be used for new work any more, and every loop that has
 * one must run until then. Loop: home.
 */
void scsitgt__loop_ctxs_close(struct scsitgt__loop_ctxs *set, void (*closed)(void *arg), void *arg);

/* Close @lc's handles, then fini() it: for the backend's close() once nothing of the context
 * is in flight. Only the first call counts. Loop: @lc's. */
void scsitgt__loop_ctx_teardown(struct scsitgt__loop_ctx *lc);

/* Close @lc's eventfd and free it (its handles are closed: after fini() was called).
 * Thread-safe. */
void scsitgt__loop_ctx_destroy(struct scsitgt__loop_ctx *lc);

/*
 * The contexts in turn: @lc NULL gives home's (NULL before init()), then each other loop's;
 * NULL after the last. Not during the close. Loop: any (the contexts' fields the caller reads
 * must be safe from its thread).
 */
struct scsitgt__loop_ctx *scsitgt__loop_ctxs_next(struct scsitgt__loop_ctxs *set,
						  struct scsitgt__loop_ctx *lc);

/* How many loops have a context (home's included). Loop: home; for tests and logs. */
unsigned int scsitgt__loop_ctxs_count(struct scsitgt__loop_ctxs *set);

#endif /* SCSITGT_BACKEND_LOOP_CTX_H */
