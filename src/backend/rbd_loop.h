/* SPDX-License-Identifier: MIT */
/*
 * The RBD backend's completions, one queue per loop (rbd_loop.c; docs/rbd.md, "Threads").
 *
 * The backend is SCSITGT_BACKEND_MULTI_LOOP: an io is submitted on its command's loop
 * (scsitgt_io_get_loop(), home or an engine worker) and must complete there. librbd finishes
 * an operation on one of its own threads and calls the completion's callback there. The
 * callback only hands the request to the loop that submitted it: every loop that submits has
 * a struct scsitgt__rbd_loop, with a lock-free queue (any thread pushes, the loop takes all at
 * once), an eventfd written when the queue goes from empty to not empty, and a uv_poll_t on
 * that loop which takes the queue and gives each request, in the order pushed, to the
 * backend's drain function. One eventfd write per burst of completions, no lock and no
 * allocation per io; home's context is made at open(), another loop's at its first submit
 * (the contexts' making and closing are loop_ctx.h's, as for the aio backend).
 *
 * Lifetime. A loop context lives until its loop tore it down (on close, by a message from home,
 * once its unfinished requests came back and were drained) and every request handed to another
 * thread has been posted back: each one holds a reference
 * (scsitgt__rbd_loop_hold() before handing it over, dropped by scsitgt__rbd_loop_post() as its
 * very last touch), so a callback still returning on librbd's thread never writes a freed
 * eventfd or queue. What outlives the loop's teardown is only that small struct and its fd.
 *
 * Nothing here knows librbd: the unit test (tests/unit/backend_rbd/test_rbd_loop.c) drives it
 * with two loops and a thread standing in for librbd's.
 */
#ifndef SCSITGT_BACKEND_RBD_LOOP_H
#define SCSITGT_BACKEND_RBD_LOOP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "backend/loop_ctx.h"
#include "util/log.h"

/* A request on its way back to its loop (embedded in the backend's per-io area). */
struct scsitgt__rbd_cq_node {
	struct scsitgt__rbd_cq_node *next;
};

/* One loop's completion queue. */
struct scsitgt__rbd_loop {
	/* First: the loop, its eventfd and uv_poll_t, the close message (loop_ctx.h). */
	struct scsitgt__loop_ctx lc;
	/* Any thread: the requests posted and not taken yet, newest first. */
	_Atomic(struct scsitgt__rbd_cq_node *) cq;
	/* 1 for the loop until its teardown, plus 1 per request handed to another thread; the
	 * last one to drop it closes the eventfd and frees the struct. */
	atomic_uint refs;
	/* Requests of this loop not finished yet (scsitgt__rbd_loop_begin/end): written on the
	 * loop only, read by home (scsitgt__rbd_loops_inflight()). Sequentially consistent on both
	 * sides (rbd_io.c's fencing needs it: see scsitgt__rbd_loop_begin()). */
	atomic_uint inflight;
};

/* Called on a request's loop for each request posted to it, in the order posted. */
typedef void (*scsitgt__rbd_drain_fn)(void *arg, struct scsitgt__rbd_loop *lp,
				      struct scsitgt__rbd_cq_node *node);

/* Every loop context of one RBD context (embedded in it). */
struct scsitgt__rbd_loops {
	/* Home's (from scsitgt__rbd_loops_start() on) and the others' (made by their first
	 * submit), torn down each on its loop at the close (loop_ctx.h). */
	struct scsitgt__loop_ctxs ctxs;
	scsitgt__rbd_drain_fn drain;
	void *arg;
};

/*
 * Make home's context and the handle other loops use to report their teardown. @log is used
 * from every loop (the host's logger is told so, docs/threading.md). Returns 0 or a negative
 * errno (what was made goes with scsitgt__rbd_loops_close()). Loop: home.
 */
int scsitgt__rbd_loops_start(struct scsitgt__rbd_loops *set, uv_loop_t *home_loop,
			     scsitgt__rbd_drain_fn drain, void *arg,
			     const struct scsitgt__logger *log);

/*
 * The context of @loop (the calling thread's loop: home's, or another's made now). 0 or a
 * negative errno (-ENOMEM, or the eventfd's or libuv's error; nothing made). Loop: @loop.
 */
int scsitgt__rbd_loop_get(struct scsitgt__rbd_loops *set, uv_loop_t *loop,
			  struct scsitgt__rbd_loop **out);

/*
 * A request of @lp starts / is finished. begin() publishes the count with a sequentially
 * consistent store, so that a flag the caller reads after it (sequentially consistent too) and
 * home's sum read after setting that flag cannot both miss each other. Loop: @lp's.
 */
void scsitgt__rbd_loop_begin(struct scsitgt__rbd_loop *lp);
void scsitgt__rbd_loop_end(struct scsitgt__rbd_loop *lp);

/* Unfinished requests on every loop (a sequentially consistent sum). Loop: home. */
unsigned int scsitgt__rbd_loops_inflight(struct scsitgt__rbd_loops *set);

/* A request is handed to another thread that will post it back. Loop: @lp's. */
void scsitgt__rbd_loop_hold(struct scsitgt__rbd_loop *lp);
/* It was not handed over after all (nothing will post it): drop that reference. Loop: @lp's. */
void scsitgt__rbd_loop_unhold(struct scsitgt__rbd_loop *lp);

/*
 * Hand @node back to @lp's loop and drop the reference its hold() took: the drain function
 * gets it there. Thread-safe; @lp may be freed before it returns (touch neither afterwards
 * from this thread).
 */
void scsitgt__rbd_loop_post(struct scsitgt__rbd_loop *lp, struct scsitgt__rbd_cq_node *node);

/*
 * Tear every loop's context down on its loop (home's now, the others' by a message) and call
 * @closed(@arg) on home once all are gone (from inside when there was nothing on any loop;
 * @set may have been zeroed and never started). A loop with unfinished requests (ios the
 * engine gave up on, docs/threading.md "A backend that never completes") keeps its context
 * until the last one was posted back and drained there; no new request may begin. Every loop
 * that submitted must still run until then. Loop: home.
 */
void scsitgt__rbd_loops_close(struct scsitgt__rbd_loops *set, void (*closed)(void *arg), void *arg);

/* How many loops have a context (home's included). Loop: home; for tests. */
unsigned int scsitgt__rbd_loops_count(struct scsitgt__rbd_loops *set);

#endif /* SCSITGT_BACKEND_RBD_LOOP_H */
