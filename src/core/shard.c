/* SPDX-License-Identifier: MIT */
/* Shards: the per-loop state of the command path (see shard.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/cmd.h"
#include "core/core.h"
#include "core/shard.h"

int scsitgt__shards_create(struct scsitgt_engine *engine, unsigned int nworkers, size_t cache_bytes)
{
	unsigned int n = nworkers + 1;
	size_t bytes = (size_t)n * sizeof(struct scsitgt__shard);
	struct scsitgt__shard *shards;

	/* aligned_alloc wants a multiple of the alignment, which the struct's size is. */
	shards = aligned_alloc(SCSITGT__CACHE_LINE, bytes);
	if (shards == NULL)
		return -ENOMEM;
	memset(shards, 0, bytes);
	for (unsigned int i = 0; i < n; i++) {
		struct scsitgt__shard *s = &shards[i];

		s->engine = engine;
		s->index = i;
		s->loop = i == 0 ? engine->loop : NULL;
		scsitgt__cache_init(&s->cache, cache_bytes);
		scsitgt__list_init(&s->deferred);
		scsitgt__list_init(&s->orphans);
		atomic_init(&s->norphans, 0);
		scsitgt__mpsc_init(&s->tsq);
	}
	engine->shards = shards;
	engine->nshards = n;
	return 0;
}

void scsitgt__shards_bind_workers(struct scsitgt_engine *engine)
{
	/* Before any message reaches a worker: its first message orders these writes before
	 * its thread reads them (the queue's exchange). */
	for (unsigned int i = 0; i < engine->nworkers && i + 1 < engine->nshards; i++) {
		engine->shards[i + 1].worker = &engine->workers[i];
		engine->shards[i + 1].loop = &engine->workers[i].loop;
		engine->workers[i].shard = &engine->shards[i + 1];
	}
}

void scsitgt__shards_destroy(struct scsitgt_engine *engine)
{
	if (engine->shards == NULL)
		return;
	for (unsigned int i = 0; i < engine->nshards; i++)
		scsitgt__cache_fini(&engine->shards[i].cache);
	free(engine->shards);
	engine->shards = NULL;
	engine->nshards = 0;
}

void scsitgt__shard_run_deferred(struct scsitgt__shard *shard)
{
	struct scsitgt__list batch;

	/* Run only what was queued before this pass; new items wake another pass. */
	shard->defer_posted = false;
	scsitgt__list_init(&batch);
	if (!scsitgt__list_empty(&shard->deferred)) {
		batch.next = shard->deferred.next;
		batch.prev = shard->deferred.prev;
		batch.next->prev = &batch;
		batch.prev->next = &batch;
		scsitgt__list_init(&shard->deferred);
	}
	while (!scsitgt__list_empty(&batch)) {
		struct scsitgt__list *n = batch.next;
		struct scsitgt__deferred *d =
			scsitgt__container_of(n, struct scsitgt__deferred, node);

		scsitgt__list_remove(n);
		d->fn(d);
	}
}

static void shard_defer_msg(struct scsitgt__msg *msg)
{
	scsitgt__shard_run_deferred(scsitgt__container_of(msg, struct scsitgt__shard, defer_msg));
}

void scsitgt__shard_defer(struct scsitgt__shard *shard, struct scsitgt__deferred *d)
{
	scsitgt__list_add_tail(&shard->deferred, &d->node);
	if (shard->worker == NULL) {
		uv_async_send(&shard->engine->tsq_async);
		return;
	}
	/* One message per batch: the shard's own thread is the only one that posts it. */
	if (!shard->defer_posted) {
		shard->defer_posted = true;
		shard->defer_msg.fn = shard_defer_msg;
		scsitgt__worker_post(shard->worker, &shard->defer_msg);
	}
}

static void shard_io_msg(struct scsitgt__msg *msg)
{
	struct scsitgt_io *io = scsitgt__container_of(msg, struct scsitgt_io, tsq_msg);

	scsitgt__io_complete_here(io);
}

void scsitgt__shard_post_io(struct scsitgt__shard *shard, struct scsitgt_io *io)
{
	struct scsitgt_engine *engine = shard->engine;

	if (shard->worker) {
		/* Counted before the push: an engine shutdown that gave up on the io waits for
		 * its arrival, then for this post to return, before it closes the inbox and
		 * frees the shards (worker.c). */
		atomic_fetch_add(&shard->tsq_senders, 1);
		io->tsq_msg.fn = shard_io_msg;
		scsitgt__worker_post(shard->worker, &io->tsq_msg);
		atomic_fetch_sub(&shard->tsq_senders, 1);
		return;
	}
	/* Counted as a sender: the engine does not close its async handle between the push
	 * and the wake-up, even if the loop drains the io before that (core/drain.c). */
	atomic_fetch_add(&engine->tsq_senders, 1);
	if (scsitgt__mpsc_push(&shard->tsq, &io->tsq_msg.node))
		uv_async_send(&engine->tsq_async);
	atomic_fetch_sub(&engine->tsq_senders, 1);
}

void scsitgt__shard_post(struct scsitgt__shard *shard, struct scsitgt__msg *msg)
{
	if (shard->worker)
		scsitgt__worker_post(shard->worker, msg);
	else
		scsitgt__engine_post(shard->engine, msg);
}

struct shard_sync;

struct shard_sync_msg {
	struct scsitgt__msg msg;
	struct shard_sync *sync;
};

struct shard_sync {
	struct scsitgt_engine *engine;
	unsigned int pending;
	void (*fn)(void *arg);
	void *arg;
	struct shard_sync_msg m[];
};

/* Home: one more worker has passed the point. */
static void shard_sync_back(struct scsitgt__msg *msg)
{
	struct shard_sync *s = scsitgt__container_of(msg, struct shard_sync_msg, msg)->sync;

	if (--s->pending)
		return;
	s->fn(s->arg);
	free(s);
}

/* A worker: every callback before this one is over. */
static void shard_sync_there(struct scsitgt__msg *msg)
{
	struct shard_sync *s = scsitgt__container_of(msg, struct shard_sync_msg, msg)->sync;

	msg->fn = shard_sync_back;
	scsitgt__engine_post(s->engine, msg);
}

bool scsitgt__shards_sync(struct scsitgt_engine *engine, void (*fn)(void *arg), void *arg)
{
	unsigned int n = engine->nshards - 1;
	struct shard_sync *s;

	if (n == 0) {
		fn(arg);
		return true;
	}
	s = malloc(sizeof(*s) + n * sizeof(s->m[0]));
	if (s == NULL)
		return false;
	s->engine = engine;
	s->pending = n;
	s->fn = fn;
	s->arg = arg;
	for (unsigned int i = 0; i < n; i++) {
		s->m[i].sync = s;
		s->m[i].msg.fn = shard_sync_there;
		scsitgt__worker_post(engine->shards[i + 1].worker, &s->m[i].msg);
	}
	return true;
}
