/* SPDX-License-Identifier: MIT */
/**
 * @file engine.h
 * The engine: the root object of libscsitgt, living on a host-owned uv loop.
 */
#ifndef LIBSCSITGT_ENGINE_H
#define LIBSCSITGT_ENGINE_H

#include <stdbool.h>

#include <uv.h>

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** An engine: owns targets, LUNs, portals and sessions. Opaque. */
struct scsitgt_engine;

/** Options of scsitgt_engine_create(). Initialise with scsitgt_engine_opts_init(). */
struct scsitgt_engine_opts {
	/** sizeof(struct scsitgt_engine_opts), set by scsitgt_engine_opts_init(). */
	size_t size;
	/** Host logger. Optional, may be NULL (messages are dropped). */
	scsitgt_log_cb log_cb;
	/** Argument passed to @ref log_cb. */
	void *log_arg;
	/** Most verbose level passed to @ref log_cb. Default ::SCSITGT_LOG_NOTICE. */
	enum scsitgt_log_level log_level;
	/**
	 * Worker threads (docs/threading.md). 0, the default: none, everything runs on the
	 * home loop. N > 0: the engine starts N threads, each running its own uv loop, and
	 * places every accepted iSCSI/TCP connection on the least-loaded one, where it runs end
	 * to end: login, the protocol, the core's handling of its commands, and the calls of a
	 * ::SCSITGT_BACKEND_MULTI_LOOP backend (other backends are still called on the home
	 * loop). Events are delivered on the home loop; the log callback is called from the
	 * thread that logs. Opt-out: @ref conn_workers false keeps the protocol and the core on
	 * the home loop and only the sockets on the workers (every callback on the home loop).
	 * ::SCSITGT_ENGINE_WORKERS_AUTO: one per CPU (uv_available_parallelism()). At most
	 * ::SCSITGT_ENGINE_WORKERS_MAX.
	 */
	int workers;
	/**
	 * With @ref workers > 0: true (the default) runs each connection on its worker end to
	 * end, as @ref workers says; false runs only its socket reads and writes there, and
	 * login, the protocol, the SCSI core and every backend call on the home loop (socket
	 * workers only, docs/threading.md). Ignored without workers. iSCSI/TCP and iSER
	 * connections, and SRP: all channels of an I_T nexus on one worker. Appended: a caller
	 * compiled before it (a smaller @ref size) gets the default.
	 *
	 * The environment variable SCSITGT_CONN_WORKERS, when set to a non-empty value as the
	 * engine is created, overrides this field (for testing a host unchanged): "0" means
	 * false, any other value true. Its older name SCSITGT_EXPERIMENTAL_CONN_WORKERS is read
	 * when it is unset. The engine logs (level info) which mode it runs.
	 */
	bool conn_workers;
};

/** scsitgt_engine_opts::workers: as many worker threads as the process may use CPUs. */
#define SCSITGT_ENGINE_WORKERS_AUTO (-1)
/** The largest scsitgt_engine_opts::workers. */
#define SCSITGT_ENGINE_WORKERS_MAX 256

/**
 * Fill @p opts with the defaults.
 *
 * @param opts The options to fill.
 * @param size sizeof(*opts) as the caller was compiled.
 *
 * Thread-safe.
 */
SCSITGT_EXPORT void scsitgt_engine_opts_init(struct scsitgt_engine_opts *opts, size_t size);

/**
 * Create an engine whose home loop is @p loop.
 *
 * The engine registers handles on @p loop (an async handle for thread-safe completions); they
 * are closed by scsitgt_engine_destroy(). The host runs the loop.
 *
 * @param out  Receives the engine on success.
 * @param loop The host's loop. It must outlive the engine.
 * @param opts Options, or NULL for the defaults. Copied.
 * @return 0 on success; -EINVAL if @p out or @p loop is NULL or @p opts is malformed
 *         (size 0, a bad log level, or workers below ::SCSITGT_ENGINE_WORKERS_AUTO or above
 *         ::SCSITGT_ENGINE_WORKERS_MAX); -ENOMEM when out of memory; another negative errno
 *         if libuv refuses the async handle or a worker thread cannot start.
 *
 * Loop: @p loop's thread.
 */
SCSITGT_EXPORT int scsitgt_engine_create(struct scsitgt_engine **out, uv_loop_t *loop,
					 const struct scsitgt_engine_opts *opts);

/**
 * Destroy an engine: stop every portal, close every connection and session, let in-flight
 * backend I/O drain, destroy every target and LUN (closing their backends), stop and join the
 * worker threads (scsitgt_engine_opts::workers), then close the engine's handles and free it.
 * The engine is dead after the call: no other function may be called on it or its children.
 *
 * @param engine The engine.
 * @param cb     Called exactly once when everything is freed, from the loop (never from
 *               inside this call), with status 0. Optional, may be NULL.
 * @param cb_arg Argument of @p cb.
 *
 * Loop: home.
 */
SCSITGT_EXPORT void scsitgt_engine_destroy(struct scsitgt_engine *engine, scsitgt_done_cb cb,
					   void *cb_arg);

/**
 * The engine's home loop.
 *
 * @param engine The engine.
 * @return The loop given to scsitgt_engine_create(). Thread-safe.
 */
SCSITGT_EXPORT uv_loop_t *scsitgt_engine_get_loop(const struct scsitgt_engine *engine);

/**
 * The number of worker threads the engine runs (scsitgt_engine_opts::workers resolved).
 *
 * @param engine The engine.
 * @return 0 when everything runs on the home loop, or for a NULL engine. Thread-safe.
 */
SCSITGT_EXPORT unsigned int scsitgt_engine_get_workers(const struct scsitgt_engine *engine);

/**
 * A function run on the engine's home loop by scsitgt_engine_post().
 *
 * @param arg The argument given to scsitgt_engine_post().
 */
typedef void (*scsitgt_post_fn)(void *arg);

/**
 * Run @p fn(@p arg) on the engine's home loop. This is the one way for a host's other threads
 * to make the calls documented "Loop: home" (add a LUN, change an ACL, read statistics...):
 * post a function that makes them.
 *
 * Posted functions run in a later iteration of the home loop, never inside this call; those
 * posted by one thread run in the order it posted them. A function posted before the callback
 * of scsitgt_engine_destroy() starts is run, at the latest just before that callback (during
 * destruction the engine's targets may already be gone: the function should check what it
 * finds), so a host that frees @p arg in @p fn leaks nothing. Posting once the destroy
 * callback has started is a use after free: stop the posting threads first.
 *
 * @param engine The engine.
 * @param fn     The function.
 * @param arg    Its argument.
 * @return 0; -EINVAL if @p engine or @p fn is NULL; -ENOMEM.
 *
 * Thread-safe.
 */
SCSITGT_EXPORT int scsitgt_engine_post(struct scsitgt_engine *engine, scsitgt_post_fn fn,
				       void *arg);

/**
 * Attach a host pointer to the engine.
 *
 * @param engine   The engine.
 * @param userdata Any pointer; the library never dereferences it.
 *
 * Loop: home.
 */
SCSITGT_EXPORT void scsitgt_engine_set_userdata(struct scsitgt_engine *engine, void *userdata);

/**
 * The pointer set with scsitgt_engine_set_userdata().
 *
 * @param engine The engine.
 * @return The pointer, NULL if never set. Loop: home.
 */
SCSITGT_EXPORT void *scsitgt_engine_get_userdata(const struct scsitgt_engine *engine);

/**
 * How long a task management function (ABORT TASK, LUN RESET, ...) waits for the commands it
 * aborted to come back from their backends before it answers anyway. The aborted commands are
 * freed whenever their backend returns them; nothing else waits for them.
 *
 * @param engine     The engine.
 * @param timeout_ms The limit in milliseconds, > 0. The default is 30000.
 * @return 0; -EINVAL for a NULL engine or a zero timeout.
 *
 * Loop: home.
 */
SCSITGT_EXPORT int scsitgt_engine_set_tmf_timeout(struct scsitgt_engine *engine,
						  uint32_t timeout_ms);

/**
 * How long scsitgt_lun_destroy() (also when scsitgt_target_destroy() or
 * scsitgt_engine_destroy() removes the LUN) waits for the LUN's commands to come back from its
 * backend before it calls back anyway. On expiry the LUN's remaining commands are aborted
 * without a response; those the backend still holds stay lent to it, with their buffers,
 * and the backend's close() is called once it has completed the last of them. If the engine
 * is destroyed before that, close() is never called: the late completions only free the
 * library's memory, from any thread, and the host owns backend_ctx again once its backend
 * has completed every io it held (docs/threading.md, "Teardown"). So the callback of
 * scsitgt_engine_destroy() runs within this timeout plus the logout before it, whatever the
 * backends do: the portals' logout grace (at most 6 s) and, when an initiator logs out
 * while a backend still holds one of its commands, that Logout's wait for it
 * (scsitgt_iscsi_params::logout_timeout_ms, 10 s by default): with the defaults, 40 s.
 *
 * @param engine     The engine.
 * @param timeout_ms The limit in milliseconds, > 0. The default is 30000.
 * @return 0; -EINVAL for a NULL engine or a zero timeout.
 *
 * Loop: home.
 */
SCSITGT_EXPORT int scsitgt_engine_set_drain_timeout(struct scsitgt_engine *engine,
						    uint32_t timeout_ms);

#ifdef __cplusplus
}
#endif

#endif /* LIBSCSITGT_ENGINE_H */
