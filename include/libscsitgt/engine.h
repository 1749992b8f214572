/* SPDX-License-Identifier: MIT */
/**
 * @file engine.h
 * The engine: the root object of libscsitgt, living on a host-owned uv loop.
 */
#ifndef LIBSCSITGT_ENGINE_H
#define LIBSCSITGT_ENGINE_H

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
};

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
 *         (size 0 or a bad log level); -ENOMEM when out of memory; another negative errno if
 *         libuv refuses the async handle.
 *
 * Loop: @p loop's thread.
 */
SCSITGT_EXPORT int scsitgt_engine_create(struct scsitgt_engine **out, uv_loop_t *loop,
					 const struct scsitgt_engine_opts *opts);

/**
 * Destroy an engine: stop every portal, close every connection and session, let in-flight
 * backend I/O drain, destroy every target and LUN (closing their backends), then close the
 * engine's handles and free it. The engine is dead after the call: no other function may be
 * called on it or its children.
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

#ifdef __cplusplus
}
#endif

#endif /* LIBSCSITGT_ENGINE_H */
