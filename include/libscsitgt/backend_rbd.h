/* SPDX-License-Identifier: MIT */
/**
 * @file backend_rbd.h
 * The built-in Ceph RBD backend: a LUN is an RBD image (pool, optional namespace, image),
 * reached through librbd and librados. I/O goes through librbd's asynchronous calls with the
 * io's iovecs; librbd completes on its own threads, signals an eventfd per image, and the
 * LUN's home loop drains the completions (rbd_poll_io_events()) from a uv_poll_t.
 *
 * Connecting to the cluster and opening or closing an image are slow, blocking calls
 * (rados_connect, rbd_open, rbd_close, rados_shutdown): the backend runs them on a thread of
 * its own, never on the loop. scsitgt_backend_rbd_create_async() opens an image without
 * blocking the loop (for hosts that add LUNs while serving); the ops' close() also finishes on
 * that thread and calls its callback on the loop. docs/rbd.md describes the options, what each
 * SCSI command maps to, and the error mapping.
 *
 * When the library is built without librbd the functions still exist and return -ENOTSUP
 * (scsitgt_backend_rbd_ops() then returns NULL).
 */
#ifndef LIBSCSITGT_BACKEND_RBD_H
#define LIBSCSITGT_BACKEND_RBD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "backend.h"
#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

struct scsitgt_lun;

/** Options of scsitgt_backend_rbd_create(). Initialise with scsitgt_backend_rbd_opts_init(). */
struct scsitgt_backend_rbd_opts {
	/** sizeof(struct scsitgt_backend_rbd_opts), set by scsitgt_backend_rbd_opts_init(). */
	size_t size;
	/** The home loop of the LUN the backend will serve. Required. */
	uv_loop_t *loop;
	/** RADOS pool of the image. Required. Copied. */
	const char *pool;
	/** Image name. Required. Copied. */
	const char *image;
	/** RADOS namespace inside the pool; NULL or "" for the default one. Copied. */
	const char *pool_namespace;
	/** Ceph client id (the name without "client."). Default "admin". Copied. */
	const char *client_id;
	/**
	 * Path of the ceph.conf file; NULL reads librados' default ($CEPH_CONF, then
	 * /etc/ceph/ceph.conf, ...). Copied.
	 */
	const char *conf_file;
	/** Open the image read-only (rbd_open_read_only); writes fail with -EROFS. */
	bool read_only;
	/**
	 * Turn librbd's client cache off (rbd_cache=false): every write is on the OSDs before it
	 * completes and the LUN reports no volatile write cache (WCE 0). Default false: librbd's
	 * configured cache (rbd_cache=true by default) is reported as a volatile cache, and
	 * SYNCHRONIZE CACHE and FUA become rbd_aio_flush(). A pool's or image's rbd_cache = true
	 * (`rbd config pool|image set`) wins over the client's setting in librbd: the open then
	 * fails with -EINVAL (logged) rather than serve with the cache.
	 */
	bool write_through;
	/**
	 * Seconds after which a RADOS operation that gets no answer fails (rados_osd_op_timeout,
	 * rados_mon_op_timeout, client_mount_timeout), so that a dead cluster turns into errors
	 * the initiator retries rather than commands that never end. Default 30; 0 keeps Ceph's
	 * setting (OSD operations then wait forever).
	 */
	uint32_t op_timeout_s;
	/**
	 * Host logger for the backend's messages (open, close, failed ios, resizes, the
	 * gateway's and the reservation store's, the options create() refuses). Optional; it
	 * receives the levels up to @ref log_level, subsystem "rbd", on the loop's thread, except
	 * the messages of opening and closing the image: those come from the thread that does it
	 * (the caller of scsitgt_backend_rbd_create(), else the backend's worker thread). Give
	 * the engine's logger and level (docs/backends.md, "Logging").
	 */
	scsitgt_log_cb log_cb;
	/** Argument of @ref log_cb. */
	void *log_arg;
	/**
	 * Most verbose level passed to @ref log_cb, as the engine's log_level; messages above it
	 * are not even formatted. Default ::SCSITGT_LOG_DEBUG (every level, what a caller
	 * compiled before this member was appended gets). ::SCSITGT_LOG_ERROR ..
	 * ::SCSITGT_LOG_DEBUG; others fail create with -EINVAL.
	 */
	enum scsitgt_log_level log_level;
};

/**
 * Called on the loop when scsitgt_backend_rbd_create_async() finished.
 *
 * @param cb_arg The argument given.
 * @param status 0, or a negative errno as for scsitgt_backend_rbd_create().
 * @param bctx   With status 0, the opened context (owned by the callee from now on: pass it
 *               to scsitgt_lun_create(), or free it with the ops' close()); NULL otherwise.
 */
typedef void (*scsitgt_backend_rbd_open_cb)(void *cb_arg, int status, void *bctx);

/**
 * Fill @p opts with the defaults (client_id "admin", op_timeout_s 30, everything else
 * 0/NULL).
 *
 * @param opts The options to fill.
 * @param size sizeof(*opts) as the caller was compiled.
 *
 * Thread-safe.
 */
SCSITGT_EXPORT void scsitgt_backend_rbd_opts_init(struct scsitgt_backend_rbd_opts *opts,
						  size_t size);

/**
 * The RBD backend's ops table, to pass as the LUN options' backend with a context from
 * scsitgt_backend_rbd_create() or scsitgt_backend_rbd_create_async().
 *
 * @return The ops table (static), or NULL when the library was built without librbd.
 *         Thread-safe.
 */
SCSITGT_EXPORT const struct scsitgt_backend_ops *scsitgt_backend_rbd_ops(void);

/**
 * Connect to the cluster and open the image, on the calling thread: this blocks for the
 * duration of rados_connect() and rbd_open() (typically milliseconds, up to op_timeout_s
 * when the cluster does not answer). For setting up before the loop serves; a host that adds
 * LUNs while serving uses scsitgt_backend_rbd_create_async().
 *
 * @param bctx_out Receives the context. The LUN frees it through close(); if
 *                 scsitgt_lun_create() fails, free it with the ops' close(bctx, cb, cb_arg)
 *                 and run the loop until @p cb is called (the image is closed on a thread).
 * @param opts     Options; loop, pool and image are required. Copied.
 * @return 0; -EINVAL for a NULL argument or a missing loop, pool or image; -ENOMEM; -ENOENT
 *         (no such pool or image, or no usable ceph.conf or keyring), -EACCES, -EPERM,
 *         -ETIMEDOUT... as librados and librbd report them; -ENOTSUP when the library was
 *         built without librbd.
 *
 * Thread-safe (the loop is only used from open() on).
 */
SCSITGT_EXPORT int scsitgt_backend_rbd_create(void **bctx_out,
					      const struct scsitgt_backend_rbd_opts *opts);

/**
 * As scsitgt_backend_rbd_create(), without blocking: the connection and rbd_open() run on a
 * thread of the backend, and @p cb is called on @p opts->loop with the result.
 *
 * @param opts   Options, as for scsitgt_backend_rbd_create(). Copied.
 * @param cb     Called exactly once, on the loop, never from inside this call. Required.
 * @param cb_arg Argument of @p cb.
 * @return 0 (then @p cb is called); -EINVAL, -ENOMEM, -EAGAIN (no thread could be started),
 *         -ENOTSUP (built without librbd): then @p cb is never called.
 *
 * Loop: @p opts->loop.
 */
SCSITGT_EXPORT int scsitgt_backend_rbd_create_async(const struct scsitgt_backend_rbd_opts *opts,
						    scsitgt_backend_rbd_open_cb cb, void *cb_arg);

/**
 * The device identification of the image, the same on every gateway that exports it (so
 * multipath initiators see one device): derived from the cluster's fsid, the pool id, the
 * namespace and the image id, never from the target name. Pass them as the LUN options'
 * naa and serial.
 *
 * @param bctx        An opened context.
 * @param naa_out     Receives the NAA designator (top nibble 5, IEEE Registered). May be
 *                    NULL.
 * @param serial      Receives the unit serial number (VPD 80h), NUL-terminated, 32 hex
 *                    characters. May be NULL.
 * @param serial_size Size of @p serial; at least 33 when @p serial is given.
 * @return 0; -EINVAL for a NULL @p bctx or a short @p serial; -ENOTSUP when the library was
 *         built without librbd.
 *
 * Thread-safe once the context is opened.
 */
SCSITGT_EXPORT int scsitgt_backend_rbd_get_ident(void *bctx, uint64_t *naa_out, char *serial,
						 size_t serial_size);

/**
 * Tell the backend which LUN serves it, once scsitgt_lun_create() succeeded: from then on a
 * change of the image's size (an rbd resize, seen through librbd's update watch on every
 * gateway) is reported with scsitgt_lun_resize() (CAPACITY DATA HAS CHANGED). Without it the
 * backend still checks ios against the new size but the initiators are not told. The backend
 * forgets the LUN when scsitgt_lun_destroy() is called for it (its detach op, backend.h), so
 * a resize seen after that, while ios drain or after an engine shutdown gave up on them,
 * touches no LUN.
 *
 * @param bctx The context the LUN serves.
 * @param lun  The LUN; NULL detaches it.
 * @return 0; -EINVAL for a NULL @p bctx; -ENOTSUP when the library was built without librbd.
 *
 * Loop: home of the LUN.
 */
SCSITGT_EXPORT int scsitgt_backend_rbd_set_lun(void *bctx, struct scsitgt_lun *lun);

/**
 * Options of scsitgt_backend_rbd_use_pr(). Initialise with scsitgt_backend_rbd_pr_opts_init().
 */
struct scsitgt_backend_rbd_pr_opts {
	/** sizeof(struct scsitgt_backend_rbd_pr_opts). */
	size_t size;
	/**
	 * How long a PERSISTENT RESERVE OUT waits for the other gateways to acknowledge a change
	 * (rados_aio_notify), in milliseconds. Default 5000. A gateway that died keeps a watch
	 * on the object until Ceph's watch timeout (osd_client_watch_timeout, 30 s by default);
	 * meanwhile every change waits this long, then completes (the state is stored).
	 */
	uint32_t notify_timeout_ms;
};

/**
 * Fill @p opts with the defaults.
 * @param opts The options to fill.
 * @param size sizeof(*opts) as the caller was compiled.
 * Thread-safe.
 */
SCSITGT_EXPORT void scsitgt_backend_rbd_pr_opts_init(struct scsitgt_backend_rbd_pr_opts *opts,
						     size_t size);

/**
 * Share the LUN's persistent reservations with every gateway that exports the image: the
 * state lives in the RADOS object "scsitgt_pr.<image id>" in the image's pool and namespace,
 * changed with compare-and-swap and announced by watch/notify (docs/rbd.md, "Persistent
 * reservations across gateways"; the cluster store of pr.h). The connection, the first read
 * and the watch run on the backend's thread; @p cb reports the result on the loop. Until it
 * is called the LUN's reservations are local: call it before the LUN is exported.
 *
 * APTPL: the object persists, so "power loss" is every gateway gone: a gateway that attaches
 * while no other gateway watches the object clears a state stored with APTPL off.
 *
 * The backend stops sharing (unwatches) when it closes.
 *
 * @param bctx   An opened context, attached to its LUN with scsitgt_backend_rbd_set_lun().
 * @param opts   Options; NULL for the defaults. Copied.
 * @param cb     Called once on the loop with 0 or a negative errno (librados'), never from
 *               inside this call. Required.
 * @param cb_arg Argument of @p cb.
 * @return 0 (then @p cb is called); -EINVAL (no LUN set, a NULL argument, bad opts size);
 *         -EALREADY; -ENOMEM; -ECANCELED (closing); -ENOTSUP when built without librbd.
 *
 * Loop: home of the LUN.
 */
SCSITGT_EXPORT int scsitgt_backend_rbd_use_pr(void *bctx,
					      const struct scsitgt_backend_rbd_pr_opts *opts,
					      scsitgt_done_cb cb, void *cb_arg);

#ifdef __cplusplus
}
#endif

#endif /* LIBSCSITGT_BACKEND_RBD_H */
