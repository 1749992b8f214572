/* SPDX-License-Identifier: MIT */
/*
 * Bounded teardown when a backend never completes (issue 5: "a backend that never completes
 * cannot hang the TMF, logout or shutdown beyond a configurable timeout").
 *
 * LUN removal. scsitgt_lun_destroy() lets the LUN's commands finish, then closes the backend.
 * When the engine's drain timeout expires first:
 *   1. the LUN's commands that are not inside the backend are aborted (no response, like a
 *      LUN RESET without unit attention), those inside it are marked aborted;
 *   2. the LUN becomes a zombie: out of the target (it already was), off the task set, its
 *      destroy callback runs now. The backend keeps the ios, and their buffers, it holds;
 *   3. when the backend completes the last of them, the core closes the backend (on the home
 *      loop, with no io outstanding, as always) and frees the LUN.
 * Engine shutdown. The engine's callback waits for its LUNs' callbacks, so it is bounded by
 * the same timeout. Zombies that still hold ios when the engine closes become orphans: each
 * io still in the backend, its command and data buffer are detached from every engine
 * structure, and the backend's late completion (any completion call, on any thread, even
 * after the engine and its loop are gone) frees exactly those and, with the last one, the
 * LUN's remaining shell. The backend is then never called again: no close(); the host owns
 * backend_ctx again once its backend has completed every io it held (docs/threading.md).
 *
 * Races with scsitgt_io_complete_threadsafe() are settled per io by io->tstate: a backend
 * thread moves LENT to QUEUED before it pushes the io on the engine's queue, the engine moves
 * LENT to ORPHAN; whoever wins decides who finishes the io. The engine waits for the QUEUED
 * ones (and for completions still inside the push) before it frees itself.
 */
#include <errno.h>
#include <stdlib.h>

#include "core/cache.h"
#include "core/cmd.h"
#include "core/core.h"
#include "core/fabric.h"
#include "core/order.h"
#include "core/pr.h"
#include "core/tmf.h"
#include "core/spc.h"
#include "core/spc_selftest.h"

/* The engine re-checks every DRAIN_RETRY_MS, at most DRAIN_RETRY_MAX times, for zombies to
 * leave: after that a zombie still held by something other than an io is left to leak. */
#define DRAIN_RETRY_MS 10u
#define DRAIN_RETRY_MAX 100u

static void zombies_init(struct scsitgt_engine *engine)
{
	if (engine->zombies.next == NULL)
		scsitgt__list_init(&engine->zombies);
}

static void drain_timer_closed(uv_handle_t *h)
{
	free(h);
}

void scsitgt__drain_lun_stop(struct scsitgt_lun *lun)
{
	if (lun->drain.timer == NULL)
		return;
	uv_timer_stop(lun->drain.timer);
	uv_close((uv_handle_t *)lun->drain.timer, drain_timer_closed);
	lun->drain.timer = NULL;
}

void scsitgt__drain_lun_gone(struct scsitgt_lun *lun)
{
	scsitgt__drain_lun_stop(lun);
	if (lun->drain.zombie) {
		scsitgt__list_remove(&lun->drain.zombie_node);
		lun->drain.zombie = false;
	}
}

/* The drain timeout expired (or the engine is closing): give up waiting for the backend. */
static void drain_expire(struct scsitgt_lun *lun)
{
	struct scsitgt_engine *engine = lun->engine;
	struct scsitgt__shard *home = scsitgt__shard_home(engine);
	/* Home's ios: those of worker shards are their own, waited for (lun.c). */
	struct scsitgt__list *ios = &scsitgt__lun_part(lun, home)->ios;
	struct scsitgt_target *tgt = lun->tgt;
	/* a LUN being removed outlives its target when the host destroys the target (or the
	 * engine) meanwhile */
	bool alive = scsitgt__engine_has_target(engine, tgt);
	struct scsitgt__list *p;
	scsitgt_done_cb cb;
	void *cb_arg;
	unsigned int held = 0;

	scsitgt__drain_lun_stop(lun);
	lun->drain.expired = true;
	/* Hold the LUN across the aborts: they may drop its last command. */
	scsitgt__lun_hold(lun, home);
	/* Without its target, the LUN's commands have lost their sessions already. As an abort
	 * (SAM-5 §7), each session's on its own shard: in a backend it is freed when it comes
	 * back; the backend is being given up on, so it is not asked to cancel. */
	if (alive)
		scsitgt__tmf_drain_lun(lun);
	/* Commands waiting on its range lock are outside the backend too, but held: what they
	 * wait for may be in the backend for good. They end now (after the aborts: a worker's
	 * grant message runs after its abort message). */
	scsitgt__range_drop_waiters(lun);
	cb = lun->drain.destroy_cb;
	cb_arg = lun->drain.destroy_cb_arg;
	if (scsitgt__lun_inflight(lun) == 1 && lun->drain.parts_pending == 0) {
		/* Everything left was outside the backend: an ordinary close, which calls back. */
		scsitgt__lun_inflight_drop(lun, home);
		return;
	}
	/* The rest is in the backend. Off the task set now: the target may be gone when they
	 * come back, and nothing may wait for them. */
	for (p = ios->next; p != ios; p = p->next) {
		struct scsitgt_io *io = scsitgt__container_of(p, struct scsitgt_io, lun_node);

		scsitgt__order_done(io->cmd);
		held++;
	}
	/* Those of worker shards are theirs: counted by their commands (a snapshot). */
	for (unsigned int i = 1; i < engine->nshards; i++)
		held += atomic_load_explicit(&lun->shard_part[i].inflight, memory_order_relaxed);
	scsitgt__log(&engine->log, SCSITGT_LOG_WARNING, "core",
		     "%s LUN %llu removed with %u ios still in backend '%s' after %u ms; it is "
		     "closed when they return",
		     alive ? tgt->name : "target", (unsigned long long)lun->id, held,
		     lun->ops.name ? lun->ops.name : "?",
		     engine->drain_timeout_ms ? engine->drain_timeout_ms :
						SCSITGT__DRAIN_TIMEOUT_MS_DEFAULT);
	lun->drain.destroy_cb = NULL;
	scsitgt__lun_inflight_drop(lun, home);
	if (cb)
		cb(cb_arg, 0);
}

static void drain_timeout(uv_timer_t *t)
{
	drain_expire(t->data);
}

void scsitgt__drain_lun_start(struct scsitgt_lun *lun)
{
	struct scsitgt_engine *engine = lun->engine;
	uint32_t ms = engine->drain_timeout_ms ? engine->drain_timeout_ms :
						 SCSITGT__DRAIN_TIMEOUT_MS_DEFAULT;
	uv_timer_t *t;

	/* Known to the engine from now on: an engine destroyed first must not leave it behind
	 * (its target may not wait for it either). */
	zombies_init(engine);
	lun->drain.zombie = true;
	scsitgt__list_add_tail(&engine->zombies, &lun->drain.zombie_node);
	t = malloc(sizeof(*t));
	/* Without a timer the removal waits for the backend, or for the engine's shutdown. */
	if (t == NULL)
		return;
	if (uv_timer_init(engine->loop, t) < 0) {
		free(t);
		return;
	}
	t->data = lun;
	lun->drain.timer = t;
	uv_timer_start(t, drain_timeout, ms, 0);
}

/* Drop one reference on an orphaned LUN's shell; the last frees it. Any thread. */
static void shell_unref(struct scsitgt_lun *lun)
{
	if (atomic_fetch_sub(&lun->drain.orphan_cmds, 1) == 1) {
		/* the range entries of its commands given up in the backend */
		scsitgt__range_lock_free(lun);
		free(lun->shard_part);
		free(lun);
	}
}

void scsitgt__drain_io_orphan_done(struct scsitgt_io *io)
{
	struct scsitgt__cmd *cmd = io->cmd;
	struct scsitgt_lun *lun = io->lun;

	/* A QUEUED io of an orphaned command comes through its shard's queue, on its loop:
	 * home's engine queue, or a worker's inbox, whose stop waits for it. */
	if (atomic_load(&io->tstate) != SCSITGT__IO_ORPHAN) {
		if (io->shard->index == 0)
			lun->engine->orphan_queued--;
		else
			scsitgt__worker_orphan_arrived(io->shard);
	}
	scsitgt__cache_free(NULL, io, io->alloc_size);
	if (atomic_fetch_sub(&cmd->orphan_ios, 1) != 1)
		return;
	scsitgt__cmd_abandoned_free(cmd);
	shell_unref(lun);
}

/* Give up on every io a zombie's backend still holds. */
static void drain_orphan_lun(struct scsitgt_engine *engine, struct scsitgt_lun *lun)
{
	struct scsitgt__shard *home = scsitgt__shard_home(engine);
	struct scsitgt__list *ios = &scsitgt__lun_part(lun, home)->ios;
	struct scsitgt__list *p, *pos, *tmp;
	unsigned int ncmds = 0;

	/* The engine's own reference, dropped when it lets go of the shell. */
	if (!lun->drain.orphaning)
		atomic_store(&lun->drain.orphan_cmds, 1);
	lun->drain.orphaning = true;
	/* Each command's count first: once an io is an orphan, a thread may finish it. */
	for (p = ios->next; p != ios; p = p->next) {
		struct scsitgt__cmd *cmd =
			scsitgt__container_of(p, struct scsitgt_io, lun_node)->cmd;

		if (scsitgt__cmd_abandon(cmd))
			ncmds++;
	}
	atomic_fetch_add(&lun->drain.orphan_cmds, ncmds);
	atomic_store_explicit(&scsitgt__lun_part(lun, home)->inflight,
			      atomic_load_explicit(&scsitgt__lun_part(lun, home)->inflight,
						   memory_order_relaxed) -
				      ncmds,
			      memory_order_relaxed);
	scsitgt__list_foreach_safe(pos, tmp, ios)
	{
		struct scsitgt_io *io = scsitgt__container_of(pos, struct scsitgt_io, lun_node);
		int lent = SCSITGT__IO_LENT;

		scsitgt__list_remove(&io->lun_node);
		if (!atomic_compare_exchange_strong(&io->tstate, &lent, SCSITGT__IO_ORPHAN))
			engine->orphan_queued++;
	}
	scsitgt__log(&engine->log, SCSITGT_LOG_WARNING, "core",
		     "engine shutdown: %u commands of LUN %llu left to backend '%s' (it will not "
		     "be closed)",
		     ncmds, (unsigned long long)lun->id, lun->ops.name ? lun->ops.name : "?");
}

/* The engine is closing: LUNs still within their drain timeout cannot be waited for that long. */
static void drain_expire_all(struct scsitgt_engine *engine)
{
	struct scsitgt__list *pos, *tmp;

	zombies_init(engine);
	scsitgt__list_foreach_safe(pos, tmp, &engine->zombies)
	{
		struct scsitgt_lun *lun =
			scsitgt__container_of(pos, struct scsitgt_lun, drain.zombie_node);

		if (!lun->drain.expired && !lun->drain.closing_started)
			drain_expire(lun);
	}
}

/* One worker shard's part of an engine shutdown: the zombie LUNs whose ios it holds. */
struct drain_shard_msg {
	struct scsitgt__msg msg;
	struct drain_shards *ds;
	struct scsitgt__shard *shard;
};

struct drain_shards {
	struct scsitgt_engine *engine;
	void (*done)(struct scsitgt_engine *engine);
	unsigned int pending;
	size_t nluns;
	struct scsitgt_lun **luns;
	struct drain_shard_msg m[];
};

/*
 * A worker shard gives up on the ios of its part of each LUN (as drain_orphan_lun() does for
 * home's): their commands leave every engine structure, and the backend's late completion, on
 * any thread, frees them. Loop: that shard's.
 */
static void drain_shard_orphan(struct scsitgt__shard *shard, struct scsitgt_lun *lun)
{
	struct scsitgt__lun_part *part = scsitgt__lun_part(lun, shard);
	struct scsitgt__list *p, *pos, *tmp;
	unsigned int ncmds = 0;

	for (p = part->ios.next; p != &part->ios; p = p->next) {
		struct scsitgt__cmd *cmd =
			scsitgt__container_of(p, struct scsitgt_io, lun_node)->cmd;

		if (scsitgt__cmd_abandon(cmd))
			ncmds++;
	}
	atomic_fetch_add(&lun->drain.orphan_cmds, ncmds);
	scsitgt__list_foreach_safe(pos, tmp, &part->ios)
	{
		struct scsitgt_io *io = scsitgt__container_of(pos, struct scsitgt_io, lun_node);
		int lent = SCSITGT__IO_LENT;

		scsitgt__list_remove(&io->lun_node);
		/* One completed already is on its way to this shard's inbox, which frees it:
		 * the worker's stop waits for it (worker.c). */
		if (!atomic_compare_exchange_strong(&io->tstate, &lent, SCSITGT__IO_ORPHAN))
			shard->orphan_queued++;
	}
	/* Its commands no longer hold the LUN: the part may report empty (core/lun.c). */
	for (unsigned int i = 0; i < ncmds; i++)
		scsitgt__lun_inflight_drop(lun, shard);
}

static void drain_shards_back(struct scsitgt__msg *msg)
{
	struct drain_shards *ds = scsitgt__container_of(msg, struct drain_shard_msg, msg)->ds;
	void (*done)(struct scsitgt_engine *) = ds->done;
	struct scsitgt_engine *engine = ds->engine;

	if (--ds->pending)
		return;
	free(ds->luns);
	free(ds);
	done(engine);
}

static void drain_shards_there(struct scsitgt__msg *msg)
{
	struct drain_shard_msg *m = scsitgt__container_of(msg, struct drain_shard_msg, msg);

	for (size_t i = 0; i < m->ds->nluns; i++)
		drain_shard_orphan(m->shard, m->ds->luns[i]);
	m->msg.fn = drain_shards_back;
	scsitgt__engine_post(m->ds->engine, &m->msg);
}

void scsitgt__drain_engine_shards(struct scsitgt_engine *engine,
				  void (*done)(struct scsitgt_engine *engine))
{
	unsigned int nw = engine->nshards - 1;
	struct scsitgt__list *pos, *tmp;
	struct drain_shards *ds = NULL;
	size_t n = 0;

	drain_expire_all(engine);
	for (pos = engine->zombies.next; pos != &engine->zombies; pos = pos->next) {
		struct scsitgt_lun *lun =
			scsitgt__container_of(pos, struct scsitgt_lun, drain.zombie_node);

		if (!lun->drain.closing_started && lun->drain.parts_pending)
			n++;
	}
	if (nw && n) {
		ds = calloc(1, sizeof(*ds) + nw * sizeof(ds->m[0]));
		if (ds)
			ds->luns = calloc(n, sizeof(*ds->luns));
		if (ds && ds->luns == NULL) {
			free(ds);
			ds = NULL;
		}
	}
	if (ds == NULL) {
		/* Nothing held on a worker (or no memory: those LUNs are left behind). */
		done(engine);
		return;
	}
	scsitgt__list_foreach_safe(pos, tmp, &engine->zombies)
	{
		struct scsitgt_lun *lun =
			scsitgt__container_of(pos, struct scsitgt_lun, drain.zombie_node);

		if (lun->drain.closing_started || !lun->drain.parts_pending)
			continue;
		/* Home's part too, and the engine's reference on the shell. */
		drain_orphan_lun(engine, lun);
		ds->luns[ds->nluns++] = lun;
	}
	ds->engine = engine;
	ds->done = done;
	ds->pending = nw;
	for (unsigned int i = 0; i < nw; i++) {
		ds->m[i].ds = ds;
		ds->m[i].shard = &engine->shards[i + 1];
		ds->m[i].msg.fn = drain_shards_there;
		scsitgt__shard_post(&engine->shards[i + 1], &ds->m[i].msg);
	}
}

static bool drain_engine_check(struct scsitgt_engine *engine, bool force)
{
	struct scsitgt__list *pos, *tmp;
	bool ready = true;

	drain_expire_all(engine);
	scsitgt__list_foreach_safe(pos, tmp, &engine->zombies)
	{
		struct scsitgt_lun *lun =
			scsitgt__container_of(pos, struct scsitgt_lun, drain.zombie_node);

		if (!lun->drain.orphaning && !lun->drain.closing_started &&
		    !scsitgt__list_empty(&lun->shard_part[0].ios))
			drain_orphan_lun(engine, lun);
	}
	/* Completions on their way through the queue finish first. */
	if (engine->orphan_queued || atomic_load(&engine->tsq_senders))
		return false;
	scsitgt__list_foreach_safe(pos, tmp, &engine->zombies)
	{
		struct scsitgt_lun *lun =
			scsitgt__container_of(pos, struct scsitgt_lun, drain.zombie_node);

		if (lun->drain.closing_started) {
			/* Its backend is closing (close() must call back): lun_free() ends it. */
			ready = false;
			continue;
		}
		if (scsitgt__lun_inflight(lun) || lun->drain.parts_pending) {
			/* An order pass, or a command the range lock holds back, still holds it. */
			if (!force) {
				ready = false;
				continue;
			}
			scsitgt__list_remove(&lun->drain.zombie_node);
			lun->drain.zombie = false;
			scsitgt__log(&engine->log, SCSITGT_LOG_WARNING, "core",
				     "engine shutdown: LUN %llu still held; left behind",
				     (unsigned long long)lun->id);
			continue;
		}
		if (!lun->drain.orphaning || atomic_load(&lun->drain.orphan_cmds) == 1) {
			/* Everything came back: close the backend as usual and wait for it. */
			scsitgt__lun_close_backend(lun);
			ready = false;
			continue;
		}
		/* Let go: the shell stays for the orphans, the last of which frees it. */
		scsitgt__list_remove(&lun->drain.zombie_node);
		lun->drain.zombie = false;
		scsitgt__pr_free(lun);
		scsitgt__spc_log_free(lun);
		scsitgt__selftest_free(lun);
		for (unsigned int i = 0; i < engine->nshards; i++) {
			scsitgt__session_destroy_internal(lun->shard_part[i].bg_sess);
			lun->shard_part[i].bg_sess = NULL;
		}
		free(lun->medium.prevent_by);
		lun->medium.prevent_by = NULL;
		shell_unref(lun);
	}
	return ready;
}

struct drain_retry {
	uv_timer_t timer;
	struct scsitgt_engine *engine;
	void (*again)(struct scsitgt_engine *engine);
};

static void drain_retry_closed(uv_handle_t *h)
{
	struct drain_retry *r = h->data;
	struct scsitgt_engine *engine = r->engine;
	void (*again)(struct scsitgt_engine * engine) = r->again;

	free(r);
	again(engine);
}

static void drain_retry_fire(uv_timer_t *t)
{
	/* Run the step once the timer handle is gone, so the engine may close then. */
	uv_close((uv_handle_t *)t, drain_retry_closed);
}

bool scsitgt__drain_engine_ready(struct scsitgt_engine *engine,
				 void (*again)(struct scsitgt_engine *engine))
{
	struct drain_retry *r;

	if (drain_engine_check(engine, engine->drain_retries >= DRAIN_RETRY_MAX))
		return true;
	r = malloc(sizeof(*r));
	if (r == NULL || uv_timer_init(engine->loop, &r->timer) < 0) {
		free(r);
		/* No way to wait: let go of what can be let go of now. */
		return drain_engine_check(engine, true);
	}
	engine->drain_retries++;
	r->engine = engine;
	r->again = again;
	r->timer.data = r;
	uv_timer_start(&r->timer, drain_retry_fire, DRAIN_RETRY_MS, 0);
	return false;
}

SCSITGT_EXPORT int scsitgt_engine_set_drain_timeout(struct scsitgt_engine *engine,
						    uint32_t timeout_ms)
{
	if (engine == NULL)
		return -EINVAL;
	if (timeout_ms == 0)
		return scsitgt__log_refused(&engine->log, "core", -EINVAL,
					    "scsitgt_engine_set_drain_timeout: timeout_ms 0: "
					    "must be at least 1");
	engine->drain_timeout_ms = timeout_ms;
	return 0;
}
