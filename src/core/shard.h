/* SPDX-License-Identifier: MIT */
/*
 * Shards (issue 18, docs/threading.md): one loop of the engine with the per-loop state the
 * command path needs. The home loop (the host's) is shard 0, worker i (core/worker.c) is shard
 * i + 1; the engine creates them with itself and its workers (engine->shards[], nshards of
 * them) and frees them last. A session belongs to one shard (sess->shard, home unless a fabric
 * binds it elsewhere), and so does each of its commands (cmd->shard, set at create) and each
 * backend io of a command (io->shard): everything a command touches on its hot path is reached
 * through cmd->shard, never through the engine.
 *
 * What belongs to a shard, and who may touch it:
 *   engine, index, loop, worker
 *           set at creation, read-only afterwards: any thread may read them.
 *   cache   the free lists of this shard's commands, backend ios and data buffers
 *           (core/cache.h): one cache per shard, used by its loop's thread only. A command
 *           goes back to the cache of its own shard.
 *   deferred, defer_msg, defer_posted
 *           struct scsitgt__deferred items to run in a later iteration of this shard's loop
 *           (scsitgt__shard_defer(), its loop's thread only). Home runs them from the
 *           engine's uv_async_t (engine.c); a worker shard posts defer_msg to its own inbox
 *           once for a batch (defer_posted says it is on its way).
 *   tsq     the thread-safe completion queue of home (scsitgt_io_complete_threadsafe() of an
 *           io of a home command: pushed here by any thread, drained by the engine's
 *           uv_async_t). A worker shard has none: such a completion is a message to the
 *           worker's inbox (io->tsq_msg), which wakes that loop through its eventfd.
 * Each shard is a cache line apart from the next, so that two loops never write one line.
 */
#ifndef SCSITGT_CORE_SHARD_H
#define SCSITGT_CORE_SHARD_H

#include <stdbool.h>
#include <uv.h>

#include "core/cache.h"
#include "core/worker.h"
#include "util/list.h"
#include "util/mpsc.h"

struct scsitgt_engine;
struct scsitgt__deferred;
struct scsitgt_io;

/* The size of a cache line: per-loop state is kept this far apart. */
#define SCSITGT__CACHE_LINE 64

struct scsitgt__shard {
	_Alignas(SCSITGT__CACHE_LINE) struct scsitgt_engine *engine;
	unsigned int index; /* 0: home; i + 1: worker i */
	uv_loop_t *loop;
	struct scsitgt__worker *worker; /* NULL for home */
	struct scsitgt__cache cache;
	struct scsitgt__list deferred;
	struct scsitgt__msg defer_msg;
	bool defer_posted;
	struct scsitgt__mpsc tsq;
	/* Commands of this shard whose nexus ended while a backend held them (ORPHANED, on
	 * their sess_node): a LUN-scoped TMF of another nexus waits for them (core/tmf.c,
	 * reviewd F2). The list is the loop's; the count is read by home (tmf_xshard.c). */
	struct scsitgt__list orphans;
	_Atomic unsigned int norphans;
	/* A worker shard's ios given up at engine shutdown that a backend had completed
	 * through scsitgt_io_complete_threadsafe() (QUEUED): they still come through this
	 * worker's inbox, which its stop keeps open until they came (stop_waits), as home's
	 * queue waits for engine->orphan_queued (core/drain.c, worker.c). The loop's. */
	unsigned int orphan_queued;
	_Atomic bool stop_waits; /* atomic: a test looks from home */
	/* Backend threads posting a completion to this worker shard, between the push and the
	 * inbox's wake-up: the stop waits for them before it closes the eventfd. */
	_Atomic unsigned int tsq_senders;
};

/*
 * Create the home shard and @nworkers worker shards (without their loops yet) in
 * engine->shards, each cache holding at most @cache_bytes (0: disabled). 0 or -ENOMEM.
 */
int scsitgt__shards_create(struct scsitgt_engine *engine, unsigned int nworkers,
			   size_t cache_bytes);
/* Point each worker shard at its worker's loop and inbox, once the workers run. */
void scsitgt__shards_bind_workers(struct scsitgt_engine *engine);
/* Free every shard's cache and the shards (nothing of theirs is in use any more). */
void scsitgt__shards_destroy(struct scsitgt_engine *engine);

/* The home shard of @engine. */
#define scsitgt__shard_home(engine) (&(engine)->shards[0])

/* Run d->fn(d) from @shard's loop soon (never from inside this call). Loop: @shard's. */
void scsitgt__shard_defer(struct scsitgt__shard *shard, struct scsitgt__deferred *d);
/* Run the items deferred on @shard so far (home: from the engine's async). */
void scsitgt__shard_run_deferred(struct scsitgt__shard *shard);
/* Run msg->fn(msg) on @shard's loop (thread-safe; a worker shard's, through its inbox). */
void scsitgt__shard_post(struct scsitgt__shard *shard, struct scsitgt__msg *msg);
/*
 * Call @fn(@arg) on home once every worker shard has run a message posted now: whatever a
 * worker loop read before (a table since replaced) it no longer uses. At once without
 * workers; false without memory (nothing is called). Loop: home.
 */
bool scsitgt__shards_sync(struct scsitgt_engine *engine, void (*fn)(void *arg), void *arg);
/*
 * Hand @io, completed on a thread that is not its shard's, to its shard's loop, which then
 * calls scsitgt_io_complete(io, io->status). Thread-safe.
 */
void scsitgt__shard_post_io(struct scsitgt__shard *shard, struct scsitgt_io *io);

#endif /* SCSITGT_CORE_SHARD_H */
