/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cache.h"
#include "core/cmd.h"
#include "core/core.h"
#include "core/shard.h"

/* Bytes each shard's free lists may hold (commands, backend ios, data buffers). */
#define ENGINE_CACHE_BYTES (32u * 1024u * 1024u)

/* SCSITGT_NO_CACHE=1 turns the free lists off (every object from malloc, e.g. under Valgrind). */
static size_t engine_cache_bytes(void)
{
	const char *v = getenv("SCSITGT_NO_CACHE");

	return v && v[0] && strcmp(v, "0") != 0 ? 0 : ENGINE_CACHE_BYTES;
}

SCSITGT_EXPORT void scsitgt_engine_opts_init(struct scsitgt_engine_opts *opts, size_t size)
{
	struct scsitgt_engine_opts def = {
		.size = sizeof(def),
		.log_level = SCSITGT_LOG_NOTICE,
		.conn_workers = true,
	};

	if (opts == NULL || size == 0)
		return;
	if (size > sizeof(def)) {
		memset(opts, 0, size);
		size = sizeof(def);
	}
	def.size = size;
	memcpy(opts, &def, size);
}

/* One scsitgt_engine_post() call, queued until the home loop runs it. */
struct engine_post {
	struct scsitgt__mpsc_node node;
	scsitgt_post_fn fn;
	void *arg;
};

/* Run the functions posted so far, oldest first; later posts wake another pass. */
static void engine_run_posts(struct scsitgt_engine *engine)
{
	struct scsitgt__mpsc_node *n = scsitgt__mpsc_take_all(&engine->posts);

	while (n) {
		struct engine_post *p = scsitgt__container_of(n, struct engine_post, node);
		scsitgt_post_fn fn = p->fn;
		void *arg = p->arg;

		n = n->next;
		free(p);
		fn(arg);
	}
}

SCSITGT_EXPORT int scsitgt_engine_post(struct scsitgt_engine *engine, scsitgt_post_fn fn, void *arg)
{
	struct engine_post *p;

	if (engine == NULL)
		return -EINVAL;
	if (fn == NULL)
		return scsitgt__log_refused(&engine->log, "core", -EINVAL,
					    "scsitgt_engine_post: fn is NULL");
	p = malloc(sizeof(*p));
	if (p == NULL)
		return -ENOMEM;
	p->fn = fn;
	p->arg = arg;
	/* Counted as a sender, like a thread-safe completion, so that destruction does not
	 * close the async handle between the push and the wake-up (core/drain.c). */
	atomic_fetch_add(&engine->tsq_senders, 1);
	if (scsitgt__mpsc_push(&engine->posts, &p->node))
		uv_async_send(&engine->tsq_async);
	atomic_fetch_sub(&engine->tsq_senders, 1);
	return 0;
}

static void engine_async_cb(uv_async_t *h)
{
	struct scsitgt_engine *engine = h->data;

	scsitgt__io_drain_threadsafe(engine);
	engine_run_posts(engine);
	scsitgt__shard_run_deferred(scsitgt__shard_home(engine));
}

void scsitgt__engine_defer(struct scsitgt_engine *engine, struct scsitgt__deferred *d)
{
	scsitgt__shard_defer(scsitgt__shard_home(engine), d);
}

static void engine_failed_closed(uv_handle_t *h)
{
	struct scsitgt_engine *engine = h->data;

	scsitgt__shards_destroy(engine);
	uv_rwlock_destroy(&engine->cfg_lock);
	free(engine);
}

/*
 * Whether connections run on the workers end to end (engine->conn_workers, core.h): the
 * option @opt unless the environment overrides it (engine.h, docs/threading.md):
 * SCSITGT_CONN_WORKERS, or its older name SCSITGT_EXPERIMENTAL_CONN_WORKERS when the new one
 * is unset, set to "0" (false) or any other non-empty value (true). @env receives
 * "NAME=VALUE" of the variable that decided, or "" when the option did.
 */
static bool engine_conn_workers(bool opt, char *env, size_t env_size)
{
	static const char *const names[] = { "SCSITGT_CONN_WORKERS",
					     "SCSITGT_EXPERIMENTAL_CONN_WORKERS" };
	const char *v = NULL;
	size_t i;

	env[0] = '\0';
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		v = getenv(names[i]);
		if (v)
			break;
	}
	if (v == NULL || v[0] == '\0')
		return opt;
	snprintf(env, env_size, "%s=%s", names[i], v);
	return strcmp(v, "0") != 0;
}

bool scsitgt__engine_on_home(const struct scsitgt_engine *engine)
{
	uv_thread_t self = uv_thread_self();

	return uv_thread_equal(&engine->home_thread, &self);
}

void scsitgt__cfg_wrlock(struct scsitgt_engine *engine)
{
	if (engine->conn_workers)
		uv_rwlock_wrlock(&engine->cfg_lock);
}

void scsitgt__cfg_wrunlock(struct scsitgt_engine *engine)
{
	if (engine->conn_workers)
		uv_rwlock_wrunlock(&engine->cfg_lock);
}

bool scsitgt__cfg_rdlock(struct scsitgt_engine *engine)
{
	/* Writers run on home: a reader there excludes them already. */
	if (!engine->conn_workers || scsitgt__engine_on_home(engine))
		return false;
	uv_rwlock_rdlock(&engine->cfg_lock);
	return true;
}

void scsitgt__cfg_rdunlock(struct scsitgt_engine *engine, bool locked)
{
	if (locked)
		uv_rwlock_rdunlock(&engine->cfg_lock);
}

void scsitgt__engine_check_sigpipe(struct scsitgt_engine *engine)
{
	struct sigaction sa;
	sigset_t blocked;

	/*
	 * A peer that resets its connection while the target writes to it makes write() raise
	 * SIGPIPE in the writing thread, and its default action ends the process. The library
	 * installs no signal disposition (the process is the host's); worker threads, which are
	 * the library's, block it (core/worker.c). Say so once if the home thread would die.
	 */
	if (engine->sigpipe_checked)
		return;
	engine->sigpipe_checked = true;
	if (sigaction(SIGPIPE, NULL, &sa) != 0 || sa.sa_handler != SIG_DFL)
		return;
	if (pthread_sigmask(SIG_BLOCK, NULL, &blocked) == 0 && sigismember(&blocked, SIGPIPE) == 1)
		return;
	scsitgt__log(&engine->log, SCSITGT_LOG_WARNING, "core",
		     "SIGPIPE has its default action: an initiator that drops its connection while "
		     "the target writes would end this process; ignore it (signal(SIGPIPE, "
		     "SIG_IGN)), see docs/threading.md");
}

void scsitgt__assert_home(const struct scsitgt_engine *engine, const char *fn)
{
	uv_thread_t self = uv_thread_self();

	if (engine == NULL || uv_thread_equal(&engine->home_thread, &self))
		return;
	fprintf(stderr,
		"libscsitgt: %s() called off its engine's home thread; it is Loop: home "
		"(docs/threading.md: use scsitgt_engine_post())\n",
		fn);
	abort();
}

SCSITGT_EXPORT int scsitgt_engine_create(struct scsitgt_engine **out, uv_loop_t *loop,
					 const struct scsitgt_engine_opts *opts)
{
	struct scsitgt_engine_opts o;
	struct scsitgt_engine *engine;
	struct scsitgt__logger lg;
	int rc;

	scsitgt_engine_opts_init(&o, sizeof(o));
	if (opts && opts->size)
		memcpy(&o, opts, opts->size < sizeof(o) ? opts->size : sizeof(o));
	/*
	 * Refusals go to the host's logger, even with a log level out of range. Options of size
	 * 0 are not read at all (docs/ABI.md: only size bytes), their logger neither: that
	 * refusal is silent.
	 */
	lg.cb = o.log_cb;
	lg.arg = o.log_arg;
	lg.level = SCSITGT_LOG_DEBUG;
	if (out == NULL || loop == NULL)
		return scsitgt__log_refused(&lg, "core", -EINVAL,
					    "scsitgt_engine_create: %s is NULL",
					    out == NULL ? "out" : "loop");
	if (opts && opts->size == 0)
		return -EINVAL;
	o.size = sizeof(o);
	if (o.log_level < SCSITGT_LOG_ERROR || o.log_level > SCSITGT_LOG_DEBUG)
		return scsitgt__log_refused(&lg, "core", -EINVAL,
					    "scsitgt_engine_create: log_level %d: not between "
					    "SCSITGT_LOG_ERROR (3) and SCSITGT_LOG_DEBUG (7)",
					    (int)o.log_level);
	if (o.workers < SCSITGT_ENGINE_WORKERS_AUTO || o.workers > SCSITGT_ENGINE_WORKERS_MAX)
		return scsitgt__log_refused(&lg, "core", -EINVAL,
					    "scsitgt_engine_create: workers %d: not "
					    "SCSITGT_ENGINE_WORKERS_AUTO (%d) nor 0..%d",
					    o.workers, SCSITGT_ENGINE_WORKERS_AUTO,
					    SCSITGT_ENGINE_WORKERS_MAX);
	if (o.workers == SCSITGT_ENGINE_WORKERS_AUTO) {
		unsigned int n = uv_available_parallelism();

		o.workers = n < 1			   ? 1 :
			    n > SCSITGT_ENGINE_WORKERS_MAX ? SCSITGT_ENGINE_WORKERS_MAX :
							     (int)n;
	}

	engine = calloc(1, sizeof(*engine));
	if (engine == NULL)
		return -ENOMEM;
	engine->loop = loop;
	rc = uv_rwlock_init(&engine->cfg_lock);
	if (rc < 0) {
		free(engine);
		return rc;
	}
	/* Home's shard, and one per worker: their loops are bound once the workers run. */
	rc = scsitgt__shards_create(engine, (unsigned int)o.workers, engine_cache_bytes());
	if (rc < 0) {
		uv_rwlock_destroy(&engine->cfg_lock);
		free(engine);
		return rc;
	}
	engine->home_thread = uv_thread_self();
	engine->log.cb = o.log_cb;
	engine->log.arg = o.log_arg;
	engine->log.level = o.log_level;
	scsitgt__list_init(&engine->targets);
	scsitgt__list_init(&engine->services);
	scsitgt__mpsc_init(&engine->posts);
	rc = uv_async_init(loop, &engine->tsq_async, engine_async_cb);
	if (rc < 0) {
		scsitgt__shards_destroy(engine);
		uv_rwlock_destroy(&engine->cfg_lock);
		free(engine);
		return rc;
	}
	/* The async handle stays referenced: a live engine keeps its loop running. */
	engine->tsq_async.data = engine;
	/* worker loops, each with an inbox, and one for the home loop (core/worker.c). */
	rc = scsitgt__workers_start(engine, (unsigned int)o.workers);
	if (rc < 0) {
		uv_close((uv_handle_t *)&engine->tsq_async, engine_failed_closed);
		return rc;
	}
	scsitgt__shards_bind_workers(engine);
	if (engine->nworkers > 0) {
		char env[96];

		engine->conn_workers = engine_conn_workers(o.conn_workers, env, sizeof(env));
		scsitgt__log(&engine->log, SCSITGT_LOG_INFO, "core", "%u worker threads, %s%s%s%s",
			     engine->nworkers,
			     engine->conn_workers ? "each connection on one of them end to end" :
						    "only the connections' sockets on them",
			     env[0] ? " (" : "", env,
			     env[0] ? " in the environment overrides the engine option)" : "");
	}
	*out = engine;
	return 0;
}

void scsitgt__engine_add_service(struct scsitgt_engine *engine, struct scsitgt__service *svc)
{
	scsitgt__list_add_tail(&engine->services, &svc->node);
}

void scsitgt__engine_remove_service(struct scsitgt_engine *engine, struct scsitgt__service *svc)
{
	(void)engine;
	scsitgt__list_remove(&svc->node);
}

struct scsitgt_target *scsitgt__engine_find_target(struct scsitgt_engine *engine, const char *name)
{
	struct scsitgt__list *pos, *tmp;

	scsitgt__list_foreach_safe(pos, tmp, &engine->targets)
	{
		struct scsitgt_target *tgt =
			scsitgt__container_of(pos, struct scsitgt_target, node);

		/* RFC 7143 §4.2.7.1: iSCSI names compare case-insensitively after stringprep,
		 * which maps to lower case; our names are validated lower-case ASCII. */
		if (strcasecmp(tgt->name, name) == 0)
			return tgt;
	}
	return NULL;
}

SCSITGT_EXPORT int scsitgt_engine_foreach_target(struct scsitgt_engine *engine,
						 scsitgt_target_visit_cb cb, void *arg)
{
	struct scsitgt__list *pos, *tmp;

	SCSITGT__ASSERT_HOME(engine);
	if (engine == NULL)
		return -EINVAL;
	if (cb == NULL)
		return scsitgt__log_refused(&engine->log, "core", -EINVAL,
					    "scsitgt_engine_foreach_target: cb is NULL");
	scsitgt__list_foreach_safe(pos, tmp, &engine->targets)
	{
		struct scsitgt_target *tgt =
			scsitgt__container_of(pos, struct scsitgt_target, node);
		int rc;

		if (tgt->destroying)
			continue;
		rc = cb(arg, tgt);
		if (rc != 0)
			return rc;
	}
	return 0;
}

bool scsitgt__engine_has_target(const struct scsitgt_engine *engine,
				const struct scsitgt_target *tgt)
{
	for (const struct scsitgt__list *p = engine->targets.next; p != &engine->targets;
	     p = p->next)
		if (scsitgt__container_of(p, struct scsitgt_target, node) == tgt)
			return true;
	return false;
}

SCSITGT_EXPORT struct scsitgt_target *scsitgt_engine_find_target(struct scsitgt_engine *engine,
								 const char *name)
{
	struct scsitgt_target *tgt;

	SCSITGT__ASSERT_HOME(engine);
	if (engine == NULL || name == NULL)
		return NULL;
	tgt = scsitgt__engine_find_target(engine, name);
	return tgt && !tgt->destroying ? tgt : NULL;
}

/* Destruction runs in phases: services, then targets, then the worker threads (every
 * connection on them is closed by then), then the engine's own handle. */
enum {
	ENGINE_PHASE_SERVICES = 1,
	ENGINE_PHASE_TARGETS,
	ENGINE_PHASE_WORKERS,
	ENGINE_PHASE_CLOSE
};

static void engine_destroy_step(struct scsitgt_engine *engine);

static void engine_child_done(void *arg, int status)
{
	struct scsitgt_engine *engine = arg;

	(void)status;
	if (--engine->destroy_pending == 0)
		engine_destroy_step(engine);
}

static void engine_closed(uv_handle_t *h)
{
	struct scsitgt_engine *engine = h->data;
	scsitgt_done_cb cb = engine->destroy_cb;
	void *cb_arg = engine->destroy_cb_arg;

	/* Functions posted after the last async pass still run, before the callback. */
	engine_run_posts(engine);
	/* Items deferred after the last async pass (e.g. a backend's late close) still run. */
	while (!scsitgt__list_empty(&scsitgt__shard_home(engine)->deferred))
		scsitgt__shard_run_deferred(scsitgt__shard_home(engine));
	for (int i = 0; i < SCSITGT__EXT_COUNT_; i++)
		if (engine->ext[i].destroy)
			engine->ext[i].destroy(engine->ext[i].data);
	/* Every command and io is gone: targets waited for their LUNs' ios. */
	scsitgt__shards_destroy(engine);
	uv_rwlock_destroy(&engine->cfg_lock);
	free(engine);
	if (cb)
		cb(cb_arg, 0);
}

static void engine_workers_stop(struct scsitgt_engine *engine)
{
	/* Joined from the home inbox; calls back at once without workers. */
	scsitgt__workers_stop(engine, engine_child_done, engine);
}

static void engine_destroy_step(struct scsitgt_engine *engine)
{
	struct scsitgt__list *pos, *tmp;

	switch (engine->destroy_phase) {
	case ENGINE_PHASE_SERVICES:
		engine->destroy_phase = ENGINE_PHASE_TARGETS;
		engine->destroy_pending = 1;
		scsitgt__list_foreach_safe(pos, tmp, &engine->services)
		{
			struct scsitgt__service *svc =
				scsitgt__container_of(pos, struct scsitgt__service, node);

			engine->destroy_pending++;
			svc->shutdown(svc, engine_child_done, engine);
		}
		engine_child_done(engine, 0);
		break;
	case ENGINE_PHASE_TARGETS:
		engine->destroy_phase = ENGINE_PHASE_WORKERS;
		engine->destroy_pending = 1;
		scsitgt__list_foreach_safe(pos, tmp, &engine->targets)
		{
			struct scsitgt_target *tgt =
				scsitgt__container_of(pos, struct scsitgt_target, node);

			engine->destroy_pending++;
			scsitgt__target_destroy_engine(tgt, engine_child_done, engine);
		}
		engine_child_done(engine, 0);
		break;
	case ENGINE_PHASE_WORKERS:
		engine->destroy_phase = ENGINE_PHASE_CLOSE;
		engine->destroy_pending = 1;
		/* The ios that LUNs whose removal timed out still hold on worker shards are given
		 * up there first, while those loops run (core/drain.c). */
		scsitgt__drain_engine_shards(engine, engine_workers_stop);
		break;
	case ENGINE_PHASE_CLOSE:
		/* Deferred items of destroyed children have all run: their callbacks fired. */
		scsitgt__io_drain_threadsafe(engine);
		/* ios that LUNs whose removal timed out still hold become orphans; wait for
		 * completions on their way and backends closing (core/drain.c). */
		if (!scsitgt__drain_engine_ready(engine, engine_destroy_step))
			break;
		uv_close((uv_handle_t *)&engine->tsq_async, engine_closed);
		break;
	}
}

SCSITGT_EXPORT void scsitgt_engine_destroy(struct scsitgt_engine *engine, scsitgt_done_cb cb,
					   void *cb_arg)
{
	SCSITGT__ASSERT_HOME(engine);
	if (engine == NULL || engine->destroying)
		return;
	engine->destroying = true;
	engine->destroy_cb = cb;
	engine->destroy_cb_arg = cb_arg;
	engine->destroy_phase = ENGINE_PHASE_SERVICES;
	engine_destroy_step(engine);
}

SCSITGT_EXPORT uv_loop_t *scsitgt_engine_get_loop(const struct scsitgt_engine *engine)
{
	return engine ? engine->loop : NULL;
}

SCSITGT_EXPORT unsigned int scsitgt_engine_get_workers(const struct scsitgt_engine *engine)
{
	return engine ? engine->nworkers : 0;
}

SCSITGT_EXPORT void scsitgt_engine_set_userdata(struct scsitgt_engine *engine, void *userdata)
{
	if (engine)
		engine->userdata = userdata;
}

SCSITGT_EXPORT void *scsitgt_engine_get_userdata(const struct scsitgt_engine *engine)
{
	return engine ? engine->userdata : NULL;
}
