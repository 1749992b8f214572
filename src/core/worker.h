/* SPDX-License-Identifier: MIT */
/*
 * Worker loops (engine opts .workers > 0) and the messages that cross between them and the
 * engine's home loop.
 *
 * Every loop has an inbox: a lock-free multi-producer queue (util/mpsc.h) and an eventfd,
 * watched by a uv_poll_t, that wakes the loop. (Not a uv_async_t: libuv 1.44's receiving
 * side spins, with sched_yield(), until the sending thread is back from its write() to the
 * loop's wake-up descriptor; on a busy machine that spin was a third of the target's CPU time
 * per command at queue depth 1.)
 *
 * A message is a struct scsitgt__msg embedded in (or at the head of) the object it carries;
 * posting it hands that object to the receiving loop, which runs msg->fn(msg) from its inbox
 * callback, in the order the sender posted. The sender must not touch the object after
 * posting it: ownership travels with the message, so no field is ever shared by two threads
 * and no lock is taken.
 */
#ifndef SCSITGT_CORE_WORKER_H
#define SCSITGT_CORE_WORKER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <uv.h>

#include "util/mpsc.h"

struct scsitgt_engine;
struct scsitgt__msg;
struct scsitgt__shard;

typedef void (*scsitgt__msg_fn)(struct scsitgt__msg *msg);

struct scsitgt__msg {
	struct scsitgt__mpsc_node node; /* first: the queue links through it */
	scsitgt__msg_fn fn;
};

/* An inbox: the queue, and the eventfd that wakes the loop which drains it. */
struct scsitgt__inbox {
	struct scsitgt__mpsc q;
	int efd;
	uv_poll_t poll;
	bool open;
	/* A message was posted without a wake-up (scsitgt__engine_post_lazy()). */
	atomic_bool lazy;
	void (*closed_cb)(struct scsitgt__inbox *inbox);
	void *data;
};

struct scsitgt__worker {
	struct scsitgt_engine *engine;
	unsigned int index;
	/* the worker's shard (core/shard.h): engine->shards[index + 1]. */
	struct scsitgt__shard *shard;
	uv_thread_t thread;
	bool started;
	uv_loop_t loop;
	struct scsitgt__inbox inbox;
	/* Wakes the home loop for messages posted lazily from this worker (worker only). */
	uv_timer_t lazy_timer;
	/* Connections the home loop placed here (home loop only, for least-loaded placement). */
	unsigned int nconns;
	/* The loop could not be closed: a backend keeps a handle on it, and the worker runs on,
	 * detached, until the backend closes it (written by the worker before its exit
	 * message). */
	bool loop_busy;
	/* Set (release) by a detached worker once its exit message's post has returned: until
	 * then it may still read home's inbox and write its eventfd, which home frees and
	 * closes once its last worker has exited (worker_exit_fn() waits for it). */
	atomic_bool exit_posted;
	/* Shutdown: the stop message (home -> worker) and the exit message (worker -> home). */
	struct scsitgt__msg stop_msg;
	struct scsitgt__msg exit_msg;
};

/* Set up @inbox on @loop (its thread drains it); 0 or a negative errno. */
int scsitgt__inbox_init(struct scsitgt__inbox *inbox, uv_loop_t *loop);
/* Close it (from its loop); @cb runs once its handle is closed. */
void scsitgt__inbox_close(struct scsitgt__inbox *inbox, void (*cb)(struct scsitgt__inbox *inbox));
/* Run every message of @inbox queued so far, in posting order. */
void scsitgt__inbox_drain(struct scsitgt__inbox *inbox);

/* Post @msg to a worker's loop / to the engine's home loop. Thread-safe. */
void scsitgt__worker_post(struct scsitgt__worker *w, struct scsitgt__msg *msg);
/* A completion given up on at engine shutdown came through @shard's inbox (core/drain.c): the
 * worker's stop, which waits for the last of them, goes on. Loop: @shard's. */
struct scsitgt__shard;
void scsitgt__worker_orphan_arrived(struct scsitgt__shard *shard);
void scsitgt__engine_post(struct scsitgt_engine *engine, struct scsitgt__msg *msg);
/*
 * Post @msg from worker @w to the home loop without waking it: it runs with the next message
 * that does wake it, or at the latest SCSITGT__LAZY_MS later (from @w's timer). For news the
 * home loop does not wait for (batches written: it only frees them). Loop: @w's.
 */
void scsitgt__engine_post_lazy(struct scsitgt__worker *w, struct scsitgt__msg *msg);
#define SCSITGT__LAZY_MS 2

/*
 * Start @n worker threads, each running its own loop. Returns 0 or a negative errno (every
 * thread started so far is stopped and joined again). Loop: home.
 */
int scsitgt__workers_start(struct scsitgt_engine *engine, unsigned int n);
/*
 * Stop the workers: each one closes its inbox, leaves its loop (which must hold no other
 * handle by then: every connection is closed), and tells the home loop, which joins it.
 * @cb(@cb_arg, 0) runs from the home loop when every thread is joined (at once with none).
 */
void scsitgt__workers_stop(struct scsitgt_engine *engine, void (*cb)(void *cb_arg, int status),
			   void *cb_arg);
/* The least-loaded worker (counted in its nconns), or NULL without workers. Loop: home. */
struct scsitgt__worker *scsitgt__worker_pick(struct scsitgt_engine *engine);
/* A connection placed with scsitgt__worker_pick() is gone. Loop: home. */
void scsitgt__worker_unpick(struct scsitgt__worker *w);
/* Whether the calling thread runs @w's loop (@w NULL: @engine's home loop). Thread-safe. */
bool scsitgt__worker_is_self(const struct scsitgt_engine *engine, const struct scsitgt__worker *w);
/* Post @msg to @w's loop, or to @engine's home loop when @w is NULL. Thread-safe. */
void scsitgt__loop_post(struct scsitgt_engine *engine, struct scsitgt__worker *w,
			struct scsitgt__msg *msg);

#endif /* SCSITGT_CORE_WORKER_H */
