/* SPDX-License-Identifier: MIT */
/*
 * The RBD backend: a LUN on a Ceph RBD image through librbd (docs/rbd.md).
 *
 * This file has the image: the options, the identification, connecting, opening and
 * closing (blocking, on the worker thread below), the update watch and resizes. rbd_io.c has
 * the LUN's side: open(), the request path (submit, the completions on each loop, zero-copy
 * lends, GET LBA STATUS) and what an io's error does (sense data, the fenced and io_failed
 * hooks).
 *
 * Slow calls. rados_connect, rbd_open, rbd_close, rados_shutdown, rbd_get_size and the like
 * block for network round trips (or forever, on a dead cluster without timeouts). They run on
 * one worker thread per context that takes jobs from a FIFO (scsitgt__rbd_queue_work), never
 * on the loop; a finished job comes back to the loop through a uv_async_t. The first job
 * opens the image, the last one closes it.
 *
 * Like every in-tree backend it uses only the public headers and util/.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/rbd_int.h"
#include "backend/rbd_zc.h"
#include "libscsitgt/lun.h"
#include "libscsitgt/testing.h"

static void rbd_async_cb(uv_async_t *handle);

/* ---- options (scsitgt_backend_rbd_opts_init() is in rbd_opts.c) ---- */

static void rbd_ctx_free(struct scsitgt__rbd_ctx *rc)
{
	pthread_mutex_destroy(&rc->mu);
	pthread_cond_destroy(&rc->cv);
	free(rc->pool);
	free(rc->image_name);
	free(rc->pool_namespace);
	free(rc->client_id);
	free(rc->conf_file);
	free(rc);
}

static char *rbd_strdup_or(const char *s, const char *def)
{
	return strdup(s && s[0] ? s : def);
}

static int rbd_ctx_create(struct scsitgt__rbd_ctx **out,
			  const struct scsitgt_backend_rbd_opts *opts)
{
	struct scsitgt_backend_rbd_opts o;
	/* Refusals pass any level, also one out of range. */
	struct scsitgt__logger lg = { .level = SCSITGT_LOG_DEBUG };
	struct scsitgt__rbd_ctx *rc;

	if (out == NULL || opts == NULL || opts->size == 0) {
		return -EINVAL;
	}
	scsitgt_backend_rbd_opts_init(&o, sizeof(o));
	memcpy(&o, opts, opts->size < sizeof(o) ? opts->size : sizeof(o));
	lg.cb = o.log_cb;
	lg.arg = o.log_arg;
	if (o.loop == NULL || o.pool == NULL || o.pool[0] == '\0' || o.image == NULL ||
	    o.image[0] == '\0') {
		return scsitgt__log_refused(&lg, SCSITGT__RBD_SUBSYS, -EINVAL,
					    "scsitgt_backend_rbd_create: %s: required",
					    o.loop == NULL			? "loop" :
					    o.pool == NULL || o.pool[0] == '\0' ? "pool" :
										  "image");
	}
	if (o.log_level < SCSITGT_LOG_ERROR || o.log_level > SCSITGT_LOG_DEBUG) {
		return scsitgt__log_refused(
			&lg, SCSITGT__RBD_SUBSYS, -EINVAL,
			"scsitgt_backend_rbd_create: %s/%s: log_level %d: not "
			"between SCSITGT_LOG_ERROR (3) and SCSITGT_LOG_DEBUG (7)",
			o.pool, o.image, (int)o.log_level);
	}
	rc = calloc(1, sizeof(*rc));
	if (rc == NULL) {
		return -ENOMEM;
	}
	pthread_mutex_init(&rc->mu, NULL);
	pthread_cond_init(&rc->cv, NULL);
	atomic_init(&rc->update_pending, false);
	atomic_init(&rc->reconnect_fault, false);
	atomic_init(&rc->async_inited, false);
	atomic_init(&rc->fenced, false);
	atomic_init(&rc->blocklisted, false);
	atomic_init(&rc->loop_events, 0);
	atomic_init(&rc->num_blocks, 0);
	atomic_init(&rc->zc_lent, 0);
	atomic_init(&rc->zc_copied, 0);
	rc->loop = o.loop;
	rc->log.cb = o.log_cb;
	rc->log.arg = o.log_arg;
	rc->log.level = o.log_level;
	rc->read_only = o.read_only;
	rc->write_through = o.write_through;
	rc->op_timeout_s = o.op_timeout_s;
	rc->pool = strdup(o.pool);
	rc->image_name = strdup(o.image);
	rc->pool_namespace = rbd_strdup_or(o.pool_namespace, "");
	rc->client_id = rbd_strdup_or(o.client_id, "admin");
	rc->conf_file = o.conf_file && o.conf_file[0] ? strdup(o.conf_file) : NULL;
	if (rc->pool == NULL || rc->image_name == NULL || rc->pool_namespace == NULL ||
	    rc->client_id == NULL || (o.conf_file && o.conf_file[0] && rc->conf_file == NULL)) {
		rbd_ctx_free(rc);
		return -ENOMEM;
	}
	*out = rc;
	return 0;
}

/* ---- identification ---- */

/* FNV-1a, 64 bits, continued from @h. */
static uint64_t rbd_fnv1a(uint64_t h, const char *s)
{
	for (; *s; s++) {
		h ^= (uint8_t)*s;
		h *= 0x100000001b3ull;
	}
	return h;
}

/*
 * The same image on the same cluster gives the same identification on every gateway: the
 * cluster fsid, the pool id, the namespace and the image id (stable across renames), never the
 * target name or the host. SPC-5 §7.7.6.6.1 (NAA IEEE Registered, type 5): the core forces
 * the top nibble; the 60 bits below come from the hash.
 */
static void rbd_derive_ident(struct scsitgt__rbd_ctx *rc)
{
	char key[256];
	uint64_t h1, h2;

	snprintf(key, sizeof(key), "%s/%" PRId64 "/%s/%s", rc->fsid, rc->pool_id,
		 rc->pool_namespace, rc->image_id);
	h1 = rbd_fnv1a(0xcbf29ce484222325ull, key);
	h2 = rbd_fnv1a(0x84222325cbf29ce4ull ^ h1, key);
	rc->naa = (5ull << 60) | (h1 & 0x0fffffffffffffffull);
	snprintf(rc->serial, sizeof(rc->serial), "%016" PRIx64 "%016" PRIx64, h1, h2);
}

SCSITGT_EXPORT int scsitgt_backend_rbd_get_ident(void *bctx, uint64_t *naa_out, char *serial,
						 size_t serial_size)
{
	struct scsitgt__rbd_ctx *rc = bctx;

	if (rc == NULL || rc->image == NULL || (serial && serial_size < sizeof(rc->serial))) {
		return -EINVAL;
	}
	if (naa_out) {
		*naa_out = rc->naa;
	}
	if (serial) {
		memcpy(serial, rc->serial, sizeof(rc->serial));
	}
	return 0;
}

/* ---- connect, open, close (blocking: worker thread or the creating thread) ---- */

static void rbd_update_watch_cb(void *arg)
{
	struct scsitgt__rbd_ctx *rc = arg;

	/* librbd's thread: only flag it and wake the loop. */
	scsitgt__rbd_handover_take(&rc->watch_ho);
	atomic_store(&rc->update_pending, true);
	if (rc->async_inited) {
		uv_async_send(&rc->async);
	}
	scsitgt__rbd_handover_give(&rc->watch_ho);
}

/* librbd's value of option @name for the open image: the client's configuration overridden by
 * the pool's and the image's (`rbd config pool|image set`), and where it comes from (@source,
 * optional). false when librbd does not say. */
static bool rbd_image_option_from(struct scsitgt__rbd_ctx *rc, const char *name, char *buf,
				  size_t size, rbd_config_source_t *source)
{
	rbd_config_option_t *opts;
	int max = 256, r;
	bool found = false;

	for (int tries = 0; tries < 4; tries++) {
		opts = calloc((size_t)max, sizeof(*opts));
		if (opts == NULL) {
			return false;
		}
		r = rbd_config_image_list(rc->image, opts, &max);
		if (r >= 0) {
			for (int i = 0; i < max && !found; i++) {
				if (opts[i].name && opts[i].value &&
				    strcmp(opts[i].name, name) == 0) {
					snprintf(buf, size, "%s", opts[i].value);
					if (source) {
						*source = opts[i].source;
					}
					found = true;
				}
			}
			rbd_config_image_list_cleanup(opts, max);
		}
		free(opts);
		if (r != -ERANGE) {
			break;
		}
	}
	return found;
}

static bool rbd_image_option(struct scsitgt__rbd_ctx *rc, const char *name, char *buf, size_t size)
{
	return rbd_image_option_from(rc, name, buf, size, NULL);
}

static bool rbd_option_true(const char *v)
{
	return strcmp(v, "false") != 0 && strcmp(v, "0") != 0;
}

/* Whether librbd caches writes for this image: rbd_cache from the client's configuration,
 * overridden by the pool's and the image's (rbd config pool|image set). */
static bool rbd_cache_enabled(struct scsitgt__rbd_ctx *rc)
{
	char buf[32];
	size_t len = sizeof(buf);
	bool cache = true;

	if (rbd_image_option(rc, "rbd_cache", buf, sizeof(buf))) {
		return rbd_option_true(buf);
	}
	if (rados_conf_get(rc->cluster, "rbd_cache", buf, sizeof(buf)) == 0) {
		cache = strcmp(buf, "false") != 0 && strcmp(buf, "0") != 0;
	}
	if (rbd_metadata_get(rc->image, "conf_rbd_cache", buf, &len) == 0) {
		cache = strcmp(buf, "false") != 0 && strcmp(buf, "0") != 0;
	}
	return cache;
}

/* How librbd's rbd_lock_break() fences the owner it breaks (docs/rbd.md, "Fencing"): the
 * image's effective rbd_blocklist_on_break_lock and rbd_blocklist_expire_seconds. */
static void rbd_break_options(struct scsitgt__rbd_ctx *rc)
{
	char buf[32];

	rc->break_blocklists = true;
	rc->blocklist_expire_s = 0;
	if (rbd_image_option(rc, "rbd_blocklist_on_break_lock", buf, sizeof(buf)) ||
	    rados_conf_get(rc->cluster, "rbd_blocklist_on_break_lock", buf, sizeof(buf)) == 0) {
		rc->break_blocklists = rbd_option_true(buf);
	}
	if (rbd_image_option(rc, "rbd_blocklist_expire_seconds", buf, sizeof(buf)) ||
	    rados_conf_get(rc->cluster, "rbd_blocklist_expire_seconds", buf, sizeof(buf)) == 0) {
		rc->blocklist_expire_s = strtoull(buf, NULL, 10);
	}
}

/*
 * Zero-copy I/O (docs/rbd.md, "Zero-copy I/O") needs an image without librbd's ObjectCacher:
 * the cache off, or the cache policy writearound (Ceph 16's default), which caches nothing.
 * The ObjectCacher (policies writeback and writethrough) keeps written buffers in its cache
 * for as long as it likes and serves reads from buffers it may change. Read from the image's
 * effective options (the client's, the pool's and the image's). *@zc_writes: librbd also
 * writes without a copy, which it does when allowed (rbd_disable_zero_copy_writes false) and
 * no cache may acknowledge a write early (the cache off, or rbd_cache_max_dirty 0).
 */
static bool rbd_zc_allowed(struct scsitgt__rbd_ctx *rc, bool *zc_writes)
{
	char buf[32];
	bool early_ack;

	*zc_writes = false;
	if (!rbd_image_option(rc, "rbd_cache", buf, sizeof(buf))) {
		return false; /* librbd does not say: copy */
	}
	if (rbd_option_true(buf)) {
		if (!rbd_image_option(rc, "rbd_cache_policy", buf, sizeof(buf)) ||
		    strcmp(buf, "writearound") != 0) {
			return false;
		}
		early_ack = !rbd_image_option(rc, "rbd_cache_max_dirty", buf, sizeof(buf)) ||
			    strtoull(buf, NULL, 10) != 0;
	} else {
		early_ack = false;
	}
	*zc_writes = !early_ack &&
		     rbd_image_option(rc, "rbd_disable_zero_copy_writes", buf, sizeof(buf)) &&
		     !rbd_option_true(buf);
	return true;
}

/* Tear down whatever rbd_connect_open() set up. Blocking. */
static void rbd_disconnect(struct scsitgt__rbd_ctx *rc)
{
	/* Shared reservations use the cluster handle too (rbd_pr.c). */
	scsitgt__rbd_pr_disconnect(rc);
	if (rc->watching) {
		/* Returns once the callback is not running (librbd waits for it). */
		rbd_update_unwatch(rc->image, rc->watch_handle);
		scsitgt__rbd_handover_take(&rc->watch_ho);
		rc->watching = false;
	}
	if (rc->image) {
		int r = rbd_close(rc->image);

		if (r < 0) {
			scsitgt__log(&rc->log, SCSITGT_LOG_WARNING, SCSITGT__RBD_SUBSYS,
				     "%s/%s: rbd_close: %s", rc->pool, rc->image_name,
				     strerror(-r));
		}
		rc->image = NULL;
	}
	if (rc->ioctx) {
		rados_ioctx_destroy(rc->ioctx);
		rc->ioctx = NULL;
	}
	if (rc->cluster) {
		rados_shutdown(rc->cluster);
		rc->cluster = NULL;
	}
	rc->connected = false;
}

static int rbd_conf_set_u32(struct scsitgt__rbd_ctx *rc, const char *key, uint32_t v)
{
	char buf[16];

	snprintf(buf, sizeof(buf), "%" PRIu32, v);
	return rados_conf_set(rc->cluster, key, buf);
}

/* Connect, open the image, read its identity and size. Blocking; on failure nothing is left
 * open. Logging from here runs on the calling thread (the host's logger is told so). */
static int rbd_connect_open(struct scsitgt__rbd_ctx *rc)
{
	char name[128], buf[32];
	const char *step;
	rbd_image_info_t info;
	bool zc_writes = false, no_conf = false;
	int r;

	snprintf(name, sizeof(name), "client.%s", rc->client_id);
	step = "rados_create2";
	r = rados_create2(&rc->cluster, "ceph", name, 0);
	if (r < 0) {
		rc->cluster = NULL;
		goto fail;
	}
	step = "rados_conf_read_file";
	r = rados_conf_read_file(rc->cluster, rc->conf_file);
	if (r < 0 && rc->conf_file != NULL) {
		goto fail;
	}
	/* None given and none found ($CEPH_CONF, then the default places): the connection may
	 * still come from CEPH_ARGS; if it fails, say what was missing. */
	no_conf = r < 0;
	/* CEPH_ARGS, as the ceph tools honour it. */
	rados_conf_parse_env(rc->cluster, NULL);
	if (rc->op_timeout_s) {
		rbd_conf_set_u32(rc, "rados_osd_op_timeout", rc->op_timeout_s);
		rbd_conf_set_u32(rc, "rados_mon_op_timeout", rc->op_timeout_s);
		rbd_conf_set_u32(rc, "client_mount_timeout", rc->op_timeout_s);
	}
	if (rc->write_through) {
		rados_conf_set(rc->cluster, "rbd_cache", "false");
	}
	/*
	 * Nothing blocking on a loop (docs/rbd.md, "Threads"), whatever ceph.conf or CEPH_ARGS say.
	 * librados takes the client's in-flight budget (objecter_inflight_ops / _op_bytes) on the
	 * submitting thread and waits there while it is used up: the gateway's heartbeat and the
	 * shared reservations submit aio on home, behind the image's own I/O on the same client
	 * (a slow or stopped OSD fills it). A budget of 0 never waits (Ceph's Throttle); what is in
	 * flight stays bounded by the LUN's queue depth. And librbd dispatches aio on its own
	 * thread, never on the caller's (rbd_non_blocking_aio, its default).
	 */
	rados_conf_set(rc->cluster, "objecter_inflight_ops", "0");
	rados_conf_set(rc->cluster, "objecter_inflight_op_bytes", "0");
	rados_conf_set(rc->cluster, "rbd_non_blocking_aio", "true");
	step = "rados_connect";
	r = rados_connect(rc->cluster);
	if (r < 0) {
		goto fail;
	}
	rc->connected = true;
	step = "rados_ioctx_create";
	r = rados_ioctx_create(rc->cluster, rc->pool, &rc->ioctx);
	if (r < 0) {
		rc->ioctx = NULL;
		goto fail;
	}
	rados_ioctx_set_namespace(rc->ioctx, rc->pool_namespace);
	rc->pool_id = rados_ioctx_get_id(rc->ioctx);
	step = "rbd_open";
	if (rc->read_only) {
		r = rbd_open_read_only(rc->ioctx, rc->image_name, &rc->image, NULL);
	} else {
		r = rbd_open(rc->ioctx, rc->image_name, &rc->image, NULL);
	}
	if (r < 0) {
		rc->image = NULL;
		goto fail;
	}
	step = "rbd_get_id";
	r = rbd_get_id(rc->image, rc->image_id, sizeof(rc->image_id));
	if (r < 0) {
		goto fail;
	}
	step = "rados_cluster_fsid";
	r = rados_cluster_fsid(rc->cluster, rc->fsid, sizeof(rc->fsid));
	if (r < 0) {
		goto fail;
	}
	step = "rbd_stat";
	r = rbd_stat(rc->image, &info, sizeof(info));
	if (r < 0) {
		goto fail;
	}
	rc->size_bytes = info.size;
	rc->obj_size = info.obj_size;
	rc->cache = !rc->read_only && rbd_cache_enabled(rc);
	rbd_break_options(rc);
	if (rc->write_through && rc->cache) {
		rbd_config_source_t src = RBD_CONFIG_SOURCE_CONFIG;

		/* librbd applies the pool's and the image's settings over the client's: the cache
		 * the host turned off is on. Serving with it would be the surprise (a gateway that
		 * is fenced loses what it acknowledged from the cache, docs/rbd.md). */
		rbd_image_option_from(rc, "rbd_cache", buf, sizeof(buf), &src);
		scsitgt__log(&rc->log, SCSITGT_LOG_ERROR, SCSITGT__RBD_SUBSYS,
			     "%s/%s: write_through (no client cache) is overridden by the %s's "
			     "rbd_cache = true (`rbd config %s rm ... rbd_cache`): not served",
			     rc->pool, rc->image_name,
			     src == RBD_CONFIG_SOURCE_IMAGE ? "image" :
			     src == RBD_CONFIG_SOURCE_POOL  ? "pool" :
							      "image metadata",
			     src == RBD_CONFIG_SOURCE_POOL ? "pool" : "image");
		step = "write_through";
		r = -EINVAL;
		goto fail;
	}
	if (!rc->zc_off && !rbd_zc_allowed(rc, &zc_writes)) {
		/* A pool or image option put an ObjectCacher behind the image: copy. */
		scsitgt__log(&rc->log, SCSITGT_LOG_NOTICE, SCSITGT__RBD_SUBSYS,
			     "%s/%s: librbd's cache policy keeps buffers: no zero-copy I/O",
			     rc->pool, rc->image_name);
		rc->zc_off = true;
		rbd_disconnect(rc);
		return rbd_connect_open(rc);
	}
	rc->zc_reads = SCSITGT_HAVE_RBD_ZC && !rc->zc_off;
	rc->zc_writes = !rc->zc_off && !rc->read_only && zc_writes;
	rc->discard_granularity = 64 * 1024;
	if (rados_conf_get(rc->cluster, "rbd_discard_granularity_bytes", buf, sizeof(buf)) == 0) {
		rc->discard_granularity = strtoull(buf, NULL, 10);
	}
	step = "rbd_update_watch";
	scsitgt__rbd_handover_give(&rc->watch_ho);
	r = rbd_update_watch(rc->image, &rc->watch_handle, rbd_update_watch_cb, rc);
	if (r < 0) {
		goto fail;
	}
	rc->watching = true;
	rbd_derive_ident(rc);
	scsitgt__log(&rc->log, SCSITGT_LOG_INFO, SCSITGT__RBD_SUBSYS,
		     "%s/%s%s%s: opened as %s, id %s, %" PRIu64 " bytes, objects of %" PRIu64
		     " bytes, %s%s%s",
		     rc->pool, rc->pool_namespace[0] ? rc->pool_namespace : "",
		     rc->pool_namespace[0] ? "/" : "", rc->image_name, name, rc->image_id,
		     rc->size_bytes, rc->obj_size,
		     rc->cache ? "client cache (volatile)" : "no client cache",
		     rc->read_only ? ", read-only" : "",
		     rc->zc_reads ? (rc->zc_writes ? ", zero-copy reads and writes" :
						     ", zero-copy reads") :
				    (rc->zc_writes ? ", zero-copy writes" : ""));
	/* A reconnection: shared reservations watch again on the new handle. */
	scsitgt__rbd_pr_connected(rc);
	return 0;

fail:
	if (no_conf && !rc->connected) {
		/* librados says only ENOENT (no monitor address): the file it did not find. */
		const char *env = getenv("CEPH_CONF");

		scsitgt__log(&rc->log, SCSITGT_LOG_ERROR, SCSITGT__RBD_SUBSYS,
			     "%s/%s: %s: %s: no ceph.conf read (no conf_file given; %s%s%s): "
			     "give the cluster's ceph.conf as conf_file or in $CEPH_CONF",
			     rc->pool, rc->image_name, step, strerror(-r),
			     env ? "$CEPH_CONF " : "$CEPH_CONF unset, ", env ? env : "",
			     env ? " unreadable" :
				   "none in /etc/ceph/ceph.conf, ~/.ceph/ceph.conf, ./ceph.conf");
	} else {
		scsitgt__log(&rc->log, SCSITGT_LOG_ERROR, SCSITGT__RBD_SUBSYS, "%s/%s: %s: %s",
			     rc->pool, rc->image_name, step, strerror(-r));
	}
	rbd_disconnect(rc);
	return r < 0 ? r : -EIO;
}

int scsitgt__rbd_reconnect(struct scsitgt__rbd_ctx *rc)
{
	int r;

	rbd_disconnect(rc);
	if (atomic_load(&rc->reconnect_fault)) {
		/* As a monitor out of reach fails it (client_mount_timeout): nothing is open. */
		scsitgt__log(&rc->log, SCSITGT_LOG_WARNING, SCSITGT__RBD_SUBSYS,
			     "%s/%s: fault injection: the reconnection fails", rc->pool,
			     rc->image_name);
		return -ETIMEDOUT;
	}
	r = rbd_connect_open(rc);
	if (r == 0) {
		/* A fresh client: not blocklisted (rc->fenced is the gateway's to clear). */
		atomic_store(&rc->blocklisted, false);
		/* The image may have been resized while no client of ours watched it (the old one
		 * cut off or blocklisted): check the size on home as after an update. */
		atomic_store(&rc->update_pending, true);
		if (rc->async_inited) {
			uv_async_send(&rc->async);
		}
	}
	return r;
}

unsigned int scsitgt__rbd_ios_inflight(struct scsitgt__rbd_ctx *rc)
{
	return scsitgt__rbd_loops_inflight(&rc->loops);
}

/* ---- the worker thread ---- */

static void rbd_worker_main(void *arg)
{
	struct scsitgt__rbd_ctx *rc = arg;
	struct scsitgt__rbd_job *job;
	bool exit_now = false;

	while (!exit_now) {
		pthread_mutex_lock(&rc->mu);
		while (rc->todo_head == NULL) {
			pthread_cond_wait(&rc->cv, &rc->mu);
		}
		job = rc->todo_head;
		rc->todo_head = job->next;
		if (rc->todo_head == NULL) {
			rc->todo_tail = NULL;
		}
		pthread_mutex_unlock(&rc->mu);

		job->work(job);

		pthread_mutex_lock(&rc->mu);
		job->next = NULL;
		if (rc->done_tail) {
			rc->done_tail->next = job;
		} else {
			rc->done_head = job;
		}
		rc->done_tail = job;
		exit_now = rc->worker_exit;
		pthread_mutex_unlock(&rc->mu);
		uv_async_send(&rc->async);
	}
}

/* Start the worker and the loop's wake-up handle. Loop: home. */
int scsitgt__rbd_worker_start(struct scsitgt__rbd_ctx *rc)
{
	int r;

	if (rc->thread_started) {
		return 0;
	}
	if (!rc->async_inited) {
		r = uv_async_init(rc->loop, &rc->async, rbd_async_cb);
		if (r < 0) {
			return r;
		}
		rc->async.data = rc;
		rc->async_inited = true;
	}
	r = uv_thread_create(&rc->thread, rbd_worker_main, rc);
	if (r < 0) {
		return r;
	}
	rc->thread_started = true;
	return 0;
}

void scsitgt__rbd_job_push(struct scsitgt__rbd_ctx *rc, struct scsitgt__rbd_job *job)
{
	job->rc = rc;
	job->next = NULL;
	pthread_mutex_lock(&rc->mu);
	if (rc->todo_tail) {
		rc->todo_tail->next = job;
	} else {
		rc->todo_head = job;
	}
	rc->todo_tail = job;
	pthread_cond_signal(&rc->cv);
	pthread_mutex_unlock(&rc->mu);
}

int scsitgt__rbd_queue_work(struct scsitgt__rbd_ctx *rc, struct scsitgt__rbd_job *job)
{
	int r;

	if (rc->closing) {
		return -ECANCELED;
	}
	r = scsitgt__rbd_worker_start(rc);
	if (r < 0) {
		return r;
	}
	scsitgt__rbd_job_push(rc, job);
	return 0;
}

/* ---- closing ---- */

struct rbd_close_job {
	struct scsitgt__rbd_job job;
};

static void rbd_handle_closed(uv_handle_t *handle)
{
	struct scsitgt__rbd_ctx *rc = handle->data;
	scsitgt_done_cb cb = rc->close_cb;
	void *cb_arg = rc->close_cb_arg;

	rc->async_inited = false;
	rbd_ctx_free(rc);
	if (cb) {
		cb(cb_arg, 0);
	}
}

/* The image is closed, the worker has exited and every loop's completion queue is gone:
 * release home's wake-up handle, then free. */
static void rbd_close_finish(struct scsitgt__rbd_ctx *rc)
{
	if (rc->thread_started) {
		uv_thread_join(&rc->thread);
		rc->thread_started = false;
	}
	if (!rc->async_inited) {
		/* Nothing on the loop to close: only when close() could start neither a job
		 * nor the wake-up handle (out of memory or threads). Then it ends here. */
		scsitgt_done_cb cb = rc->close_cb;
		void *cb_arg = rc->close_cb_arg;

		rbd_ctx_free(rc);
		if (cb) {
			cb(cb_arg, 0);
		}
		return;
	}
	uv_close((uv_handle_t *)&rc->async, rbd_handle_closed);
}

static void rbd_close_work(struct scsitgt__rbd_job *job)
{
	struct scsitgt__rbd_ctx *rc = job->rc;

	rbd_disconnect(rc);
	pthread_mutex_lock(&rc->mu);
	rc->worker_exit = true;
	pthread_mutex_unlock(&rc->mu);
	job->status = 0;
}

static void rbd_close_done(struct scsitgt__rbd_job *job)
{
	struct scsitgt__rbd_ctx *rc = job->rc;

	free(job);
	scsitgt__log(&rc->log, SCSITGT_LOG_INFO, SCSITGT__RBD_SUBSYS,
		     "%s/%s: closed (zero-copy reads: %" PRIu64 " lent, %" PRIu64 " copied)",
		     rc->pool, rc->image_name, (uint64_t)atomic_load(&rc->zc_lent),
		     (uint64_t)atomic_load(&rc->zc_copied));
	rbd_close_finish(rc);
}

/*
 * Every loop's completion queue is gone: librbd gave every request back and each was
 * completed on its loop. Only now the image and the cluster connection close, on the worker
 * thread (rbd_close() flushes the image: it would wait for a write librbd still had), then the
 * context goes (rbd_close_done).
 */
static void rbd_loops_closed(void *arg)
{
	struct scsitgt__rbd_ctx *rc = arg;
	struct scsitgt__rbd_job *job = rc->close_job;

	rc->close_job = NULL;
	if (rc->close_held) {
		scsitgt__log(&rc->log, SCSITGT_LOG_NOTICE, SCSITGT__RBD_SUBSYS,
			     "%s/%s: librbd gave back the last io held at the close", rc->pool,
			     rc->image_name);
	}
	if (job == NULL) {
		/* Out of memory or threads: close here rather than leak the cluster handle. This
		 * blocks the loop once, for a context that is going away. */
		scsitgt__log(&rc->log, SCSITGT_LOG_WARNING, SCSITGT__RBD_SUBSYS,
			     "%s/%s: no worker; closing on the loop", rc->pool, rc->image_name);
		rbd_disconnect(rc);
		rbd_close_finish(rc);
		return;
	}
	job->work = rbd_close_work;
	job->done = rbd_close_done;
	scsitgt__rbd_job_push(rc, job);
}

/*
 * Close the image on the worker thread, then free the context and call @cb on the loop. Ios
 * still in librbd (the engine gave up on them: docs/threading.md "A backend that never
 * completes") are waited for first, each on its loop, without blocking any: each completes
 * as usual when librbd gives it back (for an orphan that frees its io, command and buffer).
 */
static void rbd_close_start(struct scsitgt__rbd_ctx *rc, scsitgt_done_cb cb, void *cb_arg)
{
	struct scsitgt__rbd_job *job;

	/* Shared reservations first: their teardown job runs before the close job. */
	scsitgt__rbd_pr_stop(rc);
	rc->closing = true;
	rc->close_cb = cb;
	rc->close_cb_arg = cb_arg;
	job = calloc(1, sizeof(*job));
	if (job != NULL && scsitgt__rbd_worker_start(rc) < 0) {
		free(job);
		job = NULL;
	}
	rc->close_job = job;
	rc->close_held = scsitgt__rbd_loops_inflight(&rc->loops);
	if (rc->close_held) {
		scsitgt__log(&rc->log, SCSITGT_LOG_NOTICE, SCSITGT__RBD_SUBSYS,
			     "%s/%s: closing with %u io(s) still in librbd: the image closes "
			     "once librbd gave them back",
			     rc->pool, rc->image_name, rc->close_held);
	}
	/* Each loop tears its queue down on its own thread once its last request came back;
	 * then the close job (rbd_loops_closed). */
	scsitgt__rbd_loops_close(&rc->loops, rbd_loops_closed, rc);
}

void scsitgt__rbd_op_close(void *bctx, scsitgt_done_cb cb, void *cb_arg)
{
	rbd_close_start(bctx, cb, cb_arg);
}

/* ---- creating ---- */

SCSITGT_EXPORT int scsitgt_backend_rbd_create(void **bctx_out,
					      const struct scsitgt_backend_rbd_opts *opts)
{
	struct scsitgt__rbd_ctx *rc;
	int r;

	if (bctx_out == NULL) {
		return -EINVAL;
	}
	r = rbd_ctx_create(&rc, opts);
	if (r < 0) {
		return r;
	}
	r = rbd_connect_open(rc);
	if (r < 0) {
		rbd_ctx_free(rc);
		return r;
	}
	*bctx_out = rc;
	return 0;
}

struct rbd_open_job {
	struct scsitgt__rbd_job job;
	scsitgt_backend_rbd_open_cb cb;
	void *cb_arg;
};

static void rbd_open_work(struct scsitgt__rbd_job *job)
{
	job->status = rbd_connect_open(job->rc);
}

static void rbd_open_done(struct scsitgt__rbd_job *job)
{
	struct rbd_open_job *oj = (struct rbd_open_job *)job;
	struct scsitgt__rbd_ctx *rc = job->rc;
	scsitgt_backend_rbd_open_cb cb = oj->cb;
	void *cb_arg = oj->cb_arg;
	int status = job->status;

	free(oj);
	if (status < 0) {
		/* Nothing is open; stop the worker and free the context behind the callback. */
		rbd_close_start(rc, NULL, NULL);
		cb(cb_arg, status, NULL);
		return;
	}
	cb(cb_arg, 0, rc);
}

SCSITGT_EXPORT int scsitgt_backend_rbd_create_async(const struct scsitgt_backend_rbd_opts *opts,
						    scsitgt_backend_rbd_open_cb cb, void *cb_arg)
{
	struct scsitgt__rbd_ctx *rc;
	struct rbd_open_job *oj;
	int r;

	if (cb == NULL) {
		return -EINVAL;
	}
	r = rbd_ctx_create(&rc, opts);
	if (r < 0) {
		return r;
	}
	oj = calloc(1, sizeof(*oj));
	if (oj == NULL) {
		rbd_ctx_free(rc);
		return -ENOMEM;
	}
	oj->job.work = rbd_open_work;
	oj->job.done = rbd_open_done;
	oj->cb = cb;
	oj->cb_arg = cb_arg;
	r = scsitgt__rbd_queue_work(rc, &oj->job);
	if (r < 0) {
		free(oj);
		if (rc->async_inited) {
			/* The handle exists but no thread: close it, then free. */
			rc->closing = true;
			rbd_close_finish(rc);
		} else {
			rbd_ctx_free(rc);
		}
		return r == -ENOMEM ? r : -EAGAIN;
	}
	return 0;
}

/* ---- the loop's side: finished jobs, the update watch ---- */

struct rbd_size_job {
	struct scsitgt__rbd_job job;
	uint64_t size;
};

static void rbd_size_work(struct scsitgt__rbd_job *job)
{
	struct rbd_size_job *sj = (struct rbd_size_job *)job;

	/* No image after a failed reconnection (the gateway retries later); this thread is the
	 * only one that sets rc->image, so the check holds for the call. The update that queued
	 * this job is not lost: a reconnection that succeeds reads the size again. */
	if (job->rc->image == NULL) {
		job->status = -ENOTCONN;
		return;
	}
	job->status = rbd_get_size(job->rc->image, &sj->size);
}

static void rbd_size_done(struct scsitgt__rbd_job *job)
{
	struct rbd_size_job *sj = (struct rbd_size_job *)job;
	struct scsitgt__rbd_ctx *rc = job->rc;
	uint64_t blocks;

	if (job->status == 0) {
		/* Against the LUN's size, not the last byte count read: a reconnection reads the
		 * size again (rbd_connect_open) without resizing the LUN, and the new client's
		 * watch never reports a resize made before it watched. */
		rc->size_bytes = sj->size;
		blocks = rc->block_size ? sj->size / rc->block_size : 0;
		/* Not while closing. rc->lun is NULL from the LUN's destroy on (rbd_detach()):
		 * the LUN may be freed before this backend is closed, or never close it. */
		if (rc->opened && !rc->closing && blocks > 0 && blocks != rc->num_blocks) {
			scsitgt__log(&rc->log, SCSITGT_LOG_INFO, SCSITGT__RBD_SUBSYS,
				     "%s/%s: resized from %" PRIu64 " to %" PRIu64 " bytes",
				     rc->pool, rc->image_name,
				     (uint64_t)rc->num_blocks * rc->block_size, sj->size);
			rc->num_blocks = blocks;
			/* SBC-4 §4.6: CAPACITY DATA HAS CHANGED on every I_T nexus. */
			if (rc->lun) {
				scsitgt_lun_resize(rc->lun, blocks);
			}
		}
	} else if (job->status == -ESHUTDOWN) {
		scsitgt__rbd_set_fenced(rc, true);
	} else if (job->status < 0 && job->status != -ECANCELED && job->status != -ENOTCONN) {
		scsitgt__log(&rc->log, SCSITGT_LOG_WARNING, SCSITGT__RBD_SUBSYS,
			     "%s/%s: size after an update: %s", rc->pool, rc->image_name,
			     strerror(-job->status));
	}
	free(sj);
	if (rc->hooks.updated && !rc->closing) {
		rc->hooks.updated(rc, rc->hooks.arg);
	}
}

static void rbd_async_cb(uv_async_t *handle)
{
	struct scsitgt__rbd_ctx *rc = handle->data;
	struct scsitgt__rbd_job *job, *next;

	if (!rc->closing) {
		scsitgt__rbd_loop_events(rc);
	}
	pthread_mutex_lock(&rc->mu);
	job = rc->done_head;
	rc->done_head = rc->done_tail = NULL;
	pthread_mutex_unlock(&rc->mu);
	for (; job; job = next) {
		next = job->next;
		/* May free the context (the close job is the last one). */
		job->done(job);
	}
	if (rc->closing || !rc->opened) {
		return;
	}
	if (atomic_exchange(&rc->update_pending, false)) {
		struct rbd_size_job *sj = calloc(1, sizeof(*sj));

		if (sj == NULL) {
			atomic_store(&rc->update_pending, true);
			return;
		}
		sj->job.work = rbd_size_work;
		sj->job.done = rbd_size_done;
		if (scsitgt__rbd_queue_work(rc, &sj->job) < 0) {
			free(sj);
		}
	}
}

/* ---- the host's calls ---- */

/* Test hooks (libscsitgt/testing.h). */
SCSITGT_EXPORT int scsitgt_backend_rbd_set_reconnect_fault(void *bctx, bool fail)
{
	struct scsitgt__rbd_ctx *rc = bctx;

	if (rc == NULL) {
		return -EINVAL;
	}
	atomic_store(&rc->reconnect_fault, fail);
	return 0;
}

SCSITGT_EXPORT int scsitgt_backend_rbd_flag_update(void *bctx)
{
	struct scsitgt__rbd_ctx *rc = bctx;

	if (rc == NULL) {
		return -EINVAL;
	}
	/* What librbd's update watch callback does (rbd_update_watch_cb). */
	atomic_store(&rc->update_pending, true);
	if (rc->async_inited) {
		uv_async_send(&rc->async);
	}
	return 0;
}

SCSITGT_EXPORT int scsitgt_backend_rbd_set_lun(void *bctx, struct scsitgt_lun *lun)
{
	struct scsitgt__rbd_ctx *rc = bctx;

	if (rc == NULL) {
		return -EINVAL;
	}
	rc->lun = lun;
	return 0;
}
