/* SPDX-License-Identifier: MIT */
/*
 * The RBD backend: a LUN on a Ceph RBD image through librbd (docs/rbd.md).
 *
 * I/O. READ and WRITE become rbd_aio_readv() / rbd_aio_writev() on the io's own iovecs (librbd
 * copies the data in between); READs of 64 KiB and more whose data may be lent go through
 * librbd's C++ API instead and send librbd's own buffer (rbd_zc.h, docs/rbd.md "Zero-copy
 * I/O"). The backend is SCSITGT_BACKEND_MULTI_LOOP: ios are submitted on their command's loop
 * (home or an engine worker) and complete there. Each completion's callback, on librbd's
 * thread, only pushes the request on the lock-free queue of the loop that submitted it and
 * writes that loop's eventfd when the queue was empty (rbd_loop.h); the loop's uv_poll_t takes
 * the queue and finishes the requests. That costs one eventfd write per burst of completions,
 * as librbd's own image notification did when every io ran on home (one eventfd per image,
 * rbd_poll_io_events(), which cannot tell loops apart), and no lock or allocation per io.
 * What must be single stays on home: the jobs below, the update watch and resize, the hooks
 * of the HA and PR code (rbd_int.h), and the decisions about fencing: an io of another loop
 * that meets an error those care about completes on its loop and tells home.
 *
 * WRITE SAME of a non-zero block is rbd_aio_writesame() over the range. GET LBA STATUS is a
 * job on the worker thread (rbd_diff_iterate2() with whole objects) that fills the io's extent
 * array, then completes the io on the loop.
 *
 * Slow calls. rados_connect, rbd_open, rbd_close, rados_shutdown, rbd_get_size and the like
 * block for network round trips (or forever, on a dead cluster without timeouts). They run on
 * one worker thread per context that takes jobs from a FIFO (scsitgt__rbd_queue_work), never
 * on the loop; a finished job comes back to the loop through a uv_async_t. The first job
 * opens the image, the last one closes it.
 *
 * Durability (SBC-4 §4.14, §5.24). librbd's client cache (rbd_cache, on by default) acknowledges
 * writes before the OSDs have them: the geometry then reports a volatile write cache, FLUSH is
 * rbd_aio_flush() and a FUA write is the write followed by rbd_aio_flush() before the io
 * completes. With write_through (rbd_cache=false) every write is on the OSDs when it completes
 * and no cache is reported.
 *
 * Errors are never a silent success: a failed librbd call, a short read or a blocklisted
 * client fail the io with sense data that says what happened (scsitgt__rbd_io_fail()).
 *
 * Like every in-tree backend it uses only the public headers and util/.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/rbd_int.h"
#include "backend/rbd_zc.h"
#include "libscsitgt/lun.h"

/* librbd refuses iovec arrays longer than IOV_MAX; longer lists are bounced. */
#define RBD_IOV_MAX IOV_MAX
/* READs of at least this many bytes skip librbd's copy when the image allows it (rbd_zc.h);
 * smaller ones keep the C API, whose copy costs less than the bufferlist around it. */
#define RBD_ZC_MIN_BYTES (64u * 1024)

/* What an in-flight request waits for. */
enum rbd_phase {
	RBD_PHASE_IO,
	/* The flush after a FUA write. */
	RBD_PHASE_FUA_FLUSH,
};

/* Per-io private area (io_ctx_size). */
struct rbd_req {
	struct scsitgt_io *io;
	enum scsitgt_io_type type;
	enum rbd_phase phase;
	uint64_t off;
	size_t len;
	/* A contiguous copy for iovec lists longer than librbd takes. */
	void *bounce;
	/* A zero-copy READ (rbd_zc.h): librbd's bufferlist, until lent or copied out. */
	struct scsitgt__rbd_zc_data *zc_data;
	/* The loop that submitted the io, where it completes; stored (release) after every other
	 * field, before librbd has the request, and loaded (acquire) by the completion callback:
	 * the hand-over TSan sees, since librbd's own synchronisation is invisible to it. */
	_Atomic(struct scsitgt__rbd_loop *) lp;
	/* The result, written by the completion callback (librbd's thread) or the GET LBA STATUS
	 * job's end (home) before posting the request back to its loop. */
	ssize_t ret;
	struct scsitgt__rbd_cq_node cq;
};

static void rbd_async_cb(uv_async_t *handle);
static void rbd_set_fenced(struct scsitgt__rbd_ctx *rc, bool home);

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
	struct scsitgt__rbd_ctx *rc;

	if (out == NULL || opts == NULL || opts->size == 0) {
		return -EINVAL;
	}
	scsitgt_backend_rbd_opts_init(&o, sizeof(o));
	memcpy(&o, opts, opts->size < sizeof(o) ? opts->size : sizeof(o));
	if (o.loop == NULL || o.pool == NULL || o.pool[0] == '\0' || o.image == NULL ||
	    o.image[0] == '\0') {
		return -EINVAL;
	}
	rc = calloc(1, sizeof(*rc));
	if (rc == NULL) {
		return -ENOMEM;
	}
	pthread_mutex_init(&rc->mu, NULL);
	pthread_cond_init(&rc->cv, NULL);
	atomic_init(&rc->update_pending, false);
	atomic_init(&rc->async_inited, false);
	atomic_init(&rc->fenced, false);
	atomic_init(&rc->loop_events, 0);
	atomic_init(&rc->num_blocks, 0);
	atomic_init(&rc->zc_lent, 0);
	atomic_init(&rc->zc_copied, 0);
	rc->loop = o.loop;
	rc->log.cb = o.log_cb;
	rc->log.arg = o.log_arg;
	rc->log.level = SCSITGT_LOG_DEBUG;
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
 * the pool's and the image's (`rbd config pool|image set`). false when librbd does not say. */
static bool rbd_image_option(struct scsitgt__rbd_ctx *rc, const char *name, char *buf, size_t size)
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
	bool zc_writes = false;
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
	scsitgt__log(&rc->log, SCSITGT_LOG_ERROR, SCSITGT__RBD_SUBSYS, "%s/%s: %s: %s", rc->pool,
		     rc->image_name, step, strerror(-r));
	rbd_disconnect(rc);
	return r < 0 ? r : -EIO;
}

int scsitgt__rbd_reconnect(struct scsitgt__rbd_ctx *rc)
{
	rbd_disconnect(rc);
	return rbd_connect_open(rc);
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
static int rbd_worker_start(struct scsitgt__rbd_ctx *rc)
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

static void rbd_job_push(struct scsitgt__rbd_ctx *rc, struct scsitgt__rbd_job *job)
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
	r = rbd_worker_start(rc);
	if (r < 0) {
		return r;
	}
	rbd_job_push(rc, job);
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

/* One part of the close is done (the close job, the loops' queues); the last one finishes. */
static void rbd_close_part_done(void *arg)
{
	struct scsitgt__rbd_ctx *rc = arg;

	if (--rc->close_parts == 0) {
		rbd_close_finish(rc);
	}
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
	rbd_close_part_done(rc);
}

/* Close the image on the worker thread, then free the context and call @cb on the loop. */
static void rbd_close_start(struct scsitgt__rbd_ctx *rc, scsitgt_done_cb cb, void *cb_arg)
{
	struct scsitgt__rbd_job *job;

	/* Shared reservations first: their teardown job runs before the close job. */
	scsitgt__rbd_pr_stop(rc);
	rc->closing = true;
	rc->close_cb = cb;
	rc->close_cb_arg = cb_arg;
	/* Two parts: the close job, and every loop's completion queue (no io is in flight: the
	 * core closes after the last one; each loop tears its queue down on its own thread). */
	rc->close_parts = 2;
	scsitgt__rbd_loops_close(&rc->loops, rbd_close_part_done, rc);
	job = calloc(1, sizeof(*job));
	if (job == NULL || rbd_worker_start(rc) < 0) {
		/* Out of memory or threads: close here rather than leak the cluster handle. This
		 * blocks the loop once, for a context that is going away. */
		free(job);
		scsitgt__log(&rc->log, SCSITGT_LOG_WARNING, SCSITGT__RBD_SUBSYS,
			     "%s/%s: no worker; closing on the loop", rc->pool, rc->image_name);
		rbd_disconnect(rc);
		rbd_close_part_done(rc);
		return;
	}
	job->work = rbd_close_work;
	job->done = rbd_close_done;
	rbd_job_push(rc, job);
}

static void rbd_op_close(void *bctx, scsitgt_done_cb cb, void *cb_arg)
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

	job->status = rbd_get_size(job->rc->image, &sj->size);
}

static void rbd_size_done(struct scsitgt__rbd_job *job)
{
	struct rbd_size_job *sj = (struct rbd_size_job *)job;
	struct scsitgt__rbd_ctx *rc = job->rc;
	uint64_t blocks;

	if (job->status == 0 && sj->size != rc->size_bytes) {
		scsitgt__log(&rc->log, SCSITGT_LOG_INFO, SCSITGT__RBD_SUBSYS,
			     "%s/%s: resized from %" PRIu64 " to %" PRIu64 " bytes", rc->pool,
			     rc->image_name, rc->size_bytes, sj->size);
		rc->size_bytes = sj->size;
		blocks = rc->block_size ? sj->size / rc->block_size : 0;
		if (rc->opened && blocks > 0 && blocks != rc->num_blocks) {
			rc->num_blocks = blocks;
			/* SBC-4 §4.6: CAPACITY DATA HAS CHANGED on every I_T nexus. */
			if (rc->lun) {
				scsitgt_lun_resize(rc->lun, blocks);
			}
		}
	} else if (job->status == -ESHUTDOWN) {
		rbd_set_fenced(rc, true);
	} else if (job->status < 0 && job->status != -ECANCELED) {
		scsitgt__log(&rc->log, SCSITGT_LOG_WARNING, SCSITGT__RBD_SUBSYS,
			     "%s/%s: size after an update: %s", rc->pool, rc->image_name,
			     strerror(-job->status));
	}
	free(sj);
	if (rc->hooks.updated && !rc->closing) {
		rc->hooks.updated(rc, rc->hooks.arg);
	}
}

static void rbd_loop_events(struct scsitgt__rbd_ctx *rc);

static void rbd_async_cb(uv_async_t *handle)
{
	struct scsitgt__rbd_ctx *rc = handle->data;
	struct scsitgt__rbd_job *job, *next;

	if (!rc->closing) {
		rbd_loop_events(rc);
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

/* ---- I/O ---- */

static void rbd_loop_drain(void *arg, struct scsitgt__rbd_loop *lp,
			   struct scsitgt__rbd_cq_node *node);

static int rbd_op_open(void *bctx, struct scsitgt_lun_geometry *geo)
{
	struct scsitgt__rbd_ctx *rc = bctx;
	uint64_t blocks;
	uint32_t bs;
	int r;

	if (rc->opened || rc->closing || rc->image == NULL) {
		return -EBUSY;
	}
	bs = geo->block_size ? geo->block_size : 512;
	if (bs != 512 && bs != 4096) {
		return -EINVAL;
	}
	blocks = rc->size_bytes / bs;
	if (blocks == 0) {
		scsitgt__log(&rc->log, SCSITGT_LOG_ERROR, SCSITGT__RBD_SUBSYS,
			     "%s/%s: %" PRIu64 " bytes is less than one block", rc->pool,
			     rc->image_name, rc->size_bytes);
		return -EINVAL;
	}
	if (geo->num_blocks != 0 && geo->num_blocks != blocks) {
		/* The LUN follows the image: a different size would go stale on a resize. */
		scsitgt__log(&rc->log, SCSITGT_LOG_ERROR, SCSITGT__RBD_SUBSYS,
			     "%s/%s: holds %" PRIu64 " blocks, %" PRIu64 " asked", rc->pool,
			     rc->image_name, blocks, geo->num_blocks);
		return -EINVAL;
	}
	r = rbd_worker_start(rc);
	if (r < 0) {
		return r;
	}
	/* Home's completion queue now; another loop's at its first submit. */
	r = scsitgt__rbd_loops_start(&rc->loops, rc->loop, rbd_loop_drain, rc, &rc->log);
	if (r < 0) {
		return r;
	}
	geo->block_size = bs;
	geo->num_blocks = blocks;
	geo->flags &= ~(SCSITGT_GEOMETRY_WRITE_CACHE | SCSITGT_GEOMETRY_LBPRZ |
			SCSITGT_GEOMETRY_NON_ROTATIONAL);
	if (rc->cache) {
		geo->flags |= SCSITGT_GEOMETRY_WRITE_CACHE;
	}
	if (rc->obj_size >= bs && rc->obj_size / bs <= UINT32_MAX) {
		geo->optimal_transfer_blocks = (uint32_t)(rc->obj_size / bs);
	}
	/* Discards below rbd_discard_granularity_bytes change nothing: say so in VPD B0. No
	 * LBPRZ: zeros come from WRITE ZEROES (rbd_aio_write_zeroes), never from a discard. */
	if (geo->size >= offsetof(struct scsitgt_lun_geometry, unmap_granularity_blocks) +
				 sizeof(geo->unmap_granularity_blocks) &&
	    rc->discard_granularity > bs && rc->discard_granularity / bs <= UINT32_MAX) {
		geo->unmap_granularity_blocks = (uint32_t)(rc->discard_granularity / bs);
	}
	rc->block_size = bs;
	rc->num_blocks = blocks;
	rc->opened = true;
	/* A resize seen between the open job and now is picked up on the next wake-up. */
	if (atomic_load(&rc->update_pending)) {
		uv_async_send(&rc->async);
	}
	return 0;
}

/* A zero-copy READ's data: lend it to the transport, or copy it into the io's iovecs. Returns
 * @ret, or -EIO when the copy came out short. */
static ssize_t rbd_zc_read_done(struct scsitgt__rbd_ctx *rc, struct rbd_req *req, ssize_t ret)
{
	struct scsitgt__rbd_zc_data *d = req->zc_data;
	const struct iovec *iov;
	const void *p;
	int iovcnt;

	req->zc_data = NULL;
	if (ret >= 0) {
		p = scsitgt__rbd_zc_data_contiguous(d, req->len);
		if (p && scsitgt_io_lend_data(req->io, p, req->len, scsitgt__rbd_zc_data_release,
					      d) == 0) {
			atomic_fetch_add_explicit(&rc->zc_lent, 1, memory_order_relaxed);
			return ret; /* released by the core once the data is sent */
		}
		/* Several buffers (a read across objects, a hole): one copy, as the C API. */
		iov = scsitgt_io_get_iov(req->io, &iovcnt);
		if (scsitgt__rbd_zc_data_copy(d, iov, iovcnt) != req->len) {
			ret = -EIO;
		}
		atomic_fetch_add_explicit(&rc->zc_copied, 1, memory_order_relaxed);
	}
	scsitgt__rbd_zc_data_release(d);
	return ret;
}

static void rbd_req_done(struct scsitgt__rbd_ctx *rc, struct rbd_req *req, ssize_t ret)
{
	struct scsitgt_io *io = req->io;

	if (ret >= 0 && req->type == SCSITGT_IO_READ && (size_t)ret != req->len) {
		/* Never report success for data we do not have. */
		scsitgt__log(&rc->log, SCSITGT_LOG_WARNING, SCSITGT__RBD_SUBSYS,
			     "%s/%s: short read at byte %" PRIu64 ": %zd of %zu", rc->pool,
			     rc->image_name, req->off, ret, req->len);
		ret = -EIO;
	}
	if (req->zc_data) {
		ret = rbd_zc_read_done(rc, req, ret);
	}
	if (ret >= 0 && req->bounce && req->type == SCSITGT_IO_READ) {
		int iovcnt;
		const struct iovec *iov = scsitgt_io_get_iov(io, &iovcnt);
		size_t done = 0;

		for (int i = 0; i < iovcnt; i++) {
			memcpy(iov[i].iov_base, (char *)req->bounce + done, iov[i].iov_len);
			done += iov[i].iov_len;
		}
	}
	free(req->bounce);
	req->bounce = NULL;
	if (ret < 0) {
		scsitgt__rbd_io_fail(rc, io, (int)ret);
		return;
	}
	scsitgt_io_complete(io, 0);
}

static int rbd_req_issue(struct scsitgt__rbd_ctx *rc, struct scsitgt__rbd_loop *lp,
			 struct rbd_req *req);

/* The io's loop: a request librbd (or the GET LBA STATUS job) is done with. */
static void rbd_loop_drain(void *arg, struct scsitgt__rbd_loop *lp,
			   struct scsitgt__rbd_cq_node *node)
{
	struct scsitgt__rbd_ctx *rc = arg;
	struct rbd_req *req = (struct rbd_req *)((char *)node - offsetof(struct rbd_req, cq));
	ssize_t ret = req->ret;

	if (ret >= 0 && (req->type == SCSITGT_IO_WRITE || req->type == SCSITGT_IO_WRITE_SAME) &&
	    req->phase == RBD_PHASE_IO && (scsitgt_io_get_flags(req->io) & SCSITGT_IO_FLAG_FUA) &&
	    rc->cache) {
		/* SBC-4 §5.47: FUA, the write reaches the medium before GOOD. */
		req->phase = RBD_PHASE_FUA_FLUSH;
		ret = rbd_req_issue(rc, lp, req);
		if (ret == 0) {
			return;
		}
	}
	scsitgt__rbd_loop_end(lp);
	rbd_req_done(rc, req, ret);
}

/* librbd's thread: the operation finished. Hand the request to its loop, touch nothing else. */
static void rbd_aio_cb(rbd_completion_t c, void *arg)
{
	struct rbd_req *req = arg;
	struct scsitgt__rbd_loop *lp = atomic_load_explicit(&req->lp, memory_order_acquire);

	req->ret = rbd_aio_get_return_value(c);
	rbd_aio_release(c);
	scsitgt__rbd_loop_post(lp, &req->cq);
}

/* Whether a READ goes through rbd_zc.h (docs/rbd.md, "Zero-copy I/O"): big enough, and its
 * data goes out untouched, so that librbd's buffer may be sent as it is. */
static bool rbd_zc_read_wanted(struct scsitgt__rbd_ctx *rc, struct rbd_req *req)
{
	return rc->zc_reads && req->type == SCSITGT_IO_READ && req->len >= RBD_ZC_MIN_BYTES &&
	       req->len <= UINT_MAX &&
	       (scsitgt_io_get_flags(req->io) & SCSITGT_IO_FLAG_MAY_LEND) != 0;
}

/* Start the request's current librbd operation on @lp (the io's loop); 0 or a negative errno
 * (nothing started). */
static int rbd_req_issue(struct scsitgt__rbd_ctx *rc, struct scsitgt__rbd_loop *lp,
			 struct rbd_req *req)
{
	struct scsitgt_io *io = req->io;
	rbd_completion_t c;
	const struct iovec *iov;
	int iovcnt;
	int r;

	r = rbd_aio_create_completion(req, rbd_aio_cb, &c);
	if (r < 0) {
		return r;
	}
	/* The callback may run before the call below returns, on librbd's thread. */
	scsitgt__rbd_loop_hold(lp);
	atomic_store_explicit(&req->lp, lp, memory_order_release);
	if (req->phase == RBD_PHASE_FUA_FLUSH) {
		r = rbd_aio_flush(rc->image, c);
		goto out;
	}
	switch (req->type) {
	case SCSITGT_IO_READ:
	case SCSITGT_IO_WRITE:
		if (rbd_zc_read_wanted(rc, req)) {
			r = scsitgt__rbd_zc_read(&rc->image, req->off, req->len, c, &req->zc_data);
			break;
		}
		iov = scsitgt_io_get_iov(io, &iovcnt);
		if (iovcnt > RBD_IOV_MAX) {
			struct iovec one;
			size_t done = 0;

			req->bounce = malloc(req->len);
			if (req->bounce == NULL) {
				r = -ENOMEM;
				break;
			}
			if (req->type == SCSITGT_IO_WRITE) {
				for (int i = 0; i < iovcnt; i++) {
					memcpy((char *)req->bounce + done, iov[i].iov_base,
					       iov[i].iov_len);
					done += iov[i].iov_len;
				}
			}
			one.iov_base = req->bounce;
			one.iov_len = req->len;
			r = req->type == SCSITGT_IO_READ ?
				    rbd_aio_readv(rc->image, &one, 1, req->off, c) :
				    rbd_aio_writev(rc->image, &one, 1, req->off, c);
		} else if (req->type == SCSITGT_IO_READ) {
			r = rbd_aio_readv(rc->image, iov, iovcnt, req->off, c);
		} else {
			r = rbd_aio_writev(rc->image, iov, iovcnt, req->off, c);
		}
		break;
	case SCSITGT_IO_FLUSH:
		r = rbd_aio_flush(rc->image, c);
		break;
	case SCSITGT_IO_UNMAP:
		/* librbd drops what is below rbd_discard_granularity_bytes or off its alignment
		 * (the data stays): fine for UNMAP, which is advisory with LBPRZ 0. */
		r = rbd_aio_discard(rc->image, req->off, req->len, c);
		break;
	case SCSITGT_IO_WRITE_ZEROES:
		/* Zeros guaranteed (librbd may deallocate whole objects to get them). */
		r = rbd_aio_write_zeroes(rc->image, req->off, req->len, c, 0, 0);
		break;
	case SCSITGT_IO_WRITE_SAME:
		/* The one block repeated over the range (len a multiple of it, as librbd wants);
		 * the core sends zero blocks to WRITE ZEROES instead. */
		iov = scsitgt_io_get_iov(io, &iovcnt);
		if (iovcnt != 1 || iov[0].iov_len != rc->block_size) {
			r = -EINVAL;
			break;
		}
		r = rbd_aio_writesame(rc->image, req->off, req->len, iov[0].iov_base,
				      iov[0].iov_len, c, 0);
		break;
	default:
		r = -ENOTSUP;
		break;
	}
out:
	if (r < 0) {
		/* Nothing started: librbd never calls back (its calls fail before taking the
		 * completion). */
		rbd_aio_release(c);
		scsitgt__rbd_loop_unhold(lp);
		free(req->bounce);
		req->bounce = NULL;
		return r;
	}
	return 0;
}

/* ---- GET LBA STATUS: the image's allocation, on the worker thread ---- */

/* Most of the image one query looks at, in RADOS objects: bounds the time a query holds the
 * worker when the image has no object map (one RADOS listing per object). */
#define RBD_LBAS_MAX_OBJECTS 4096

/* One allocated region from rbd_diff_iterate2(), in blocks: [first, last). */
struct rbd_lbas_region {
	uint64_t first, last;
};

struct rbd_lbas_job {
	struct scsitgt__rbd_job job;
	struct rbd_req *req;
	/* The io's extent array (written on the worker, the io is lent to us until completed). */
	struct scsitgt_lba_extent *ext;
	size_t count, used;
	uint32_t block_size;
	uint64_t next; /* the block after the last extent */
	uint64_t end;  /* the block after the range asked */
	/* The regions as librbd reported them (worker thread only). */
	struct rbd_lbas_region *regions;
	size_t nregions, cap;
	int err;
};

/* Extend the list with @n blocks of @status; false when the array is full. */
static bool rbd_lbas_put(struct rbd_lbas_job *lj, uint64_t n, uint32_t status)
{
	if (n == 0) {
		return true;
	}
	if (lj->used && lj->ext[lj->used - 1].status == status) {
		lj->ext[lj->used - 1].num_blocks += n;
	} else if (lj->used < lj->count) {
		lj->ext[lj->used].num_blocks = n;
		lj->ext[lj->used].status = status;
		lj->used++;
	} else {
		return false;
	}
	lj->next += n;
	return true;
}

/* rbd_diff_iterate2()'s callback (worker thread): one allocated region. Collected first:
 * without an object map librbd lists objects concurrently, and the order of the callbacks
 * is not promised. Partly covered blocks count as mapped (never a wrong "deallocated"). */
static int rbd_lbas_region(uint64_t off, size_t len, int exists, void *arg)
{
	struct rbd_lbas_job *lj = arg;
	struct rbd_lbas_region *r;

	if (!exists || len == 0) {
		return 0;
	}
	if (lj->nregions == lj->cap) {
		size_t cap = lj->cap ? lj->cap * 2 : 64;

		r = realloc(lj->regions, cap * sizeof(*r));
		if (r == NULL) {
			lj->err = -ENOMEM;
			return -ENOMEM;
		}
		lj->regions = r;
		lj->cap = cap;
	}
	r = &lj->regions[lj->nregions++];
	r->first = off / lj->block_size;
	r->last = (off + len + lj->block_size - 1) / lj->block_size;
	return 0;
}

static int rbd_lbas_cmp(const void *a, const void *b)
{
	const struct rbd_lbas_region *x = a, *y = b;

	return x->first < y->first ? -1 : x->first > y->first;
}

/* The extents from the sorted regions: the gaps between them hold no object (deallocated). */
static void rbd_lbas_fill(struct rbd_lbas_job *lj)
{
	qsort(lj->regions, lj->nregions, sizeof(*lj->regions), rbd_lbas_cmp);
	for (size_t i = 0; i < lj->nregions; i++) {
		uint64_t first = lj->regions[i].first, last = lj->regions[i].last;

		if (last > lj->end) {
			last = lj->end;
		}
		if (last <= lj->next) {
			continue;
		}
		if (first < lj->next) {
			first = lj->next;
		}
		if (!rbd_lbas_put(lj, first - lj->next, SCSITGT_LBA_DEALLOCATED) ||
		    !rbd_lbas_put(lj, last - first, SCSITGT_LBA_MAPPED)) {
			return; /* the answer is full: it ends here */
		}
	}
	/* No object after the last region up to the end of the range. */
	rbd_lbas_put(lj, lj->end - lj->next, SCSITGT_LBA_DEALLOCATED);
}

static void rbd_lbas_work(struct scsitgt__rbd_job *job)
{
	struct rbd_lbas_job *lj = (struct rbd_lbas_job *)job;
	struct scsitgt__rbd_ctx *rc = job->rc;
	uint64_t off = lj->next * lj->block_size;
	int r;

	if (rc->image == NULL) {
		job->status = -ESHUTDOWN;
		return;
	}
	job->status = 0;
	if (lj->end <= lj->next) {
		return; /* the image shrank under the query: nothing to say, the core says mapped */
	}
	/* Whole objects: answered from the object map when the image has one (fast-diff). */
	r = rbd_diff_iterate2(rc->image, NULL, off, (lj->end - lj->next) * lj->block_size, 1, 1,
			      rbd_lbas_region, lj);
	if (r == 0) {
		rbd_lbas_fill(lj);
	}
	free(lj->regions);
	lj->regions = NULL;
	job->status = lj->err ? lj->err : r;
}

/* Home: the query ran; the io completes on its own loop (rbd_loop_drain), as librbd's do. */
static void rbd_lbas_done(struct scsitgt__rbd_job *job)
{
	struct rbd_lbas_job *lj = (struct rbd_lbas_job *)job;
	struct rbd_req *req = lj->req;

	req->ret = job->status;
	free(lj);
	scsitgt__rbd_loop_post(atomic_load_explicit(&req->lp, memory_order_acquire), &req->cq);
}

/* Queue the io's allocation query on the worker thread (from any loop: the thread runs from
 * open() to close); 0 or a negative errno (nothing queued). */
static int rbd_lbas_start(struct scsitgt__rbd_ctx *rc, struct scsitgt__rbd_loop *lp,
			  struct rbd_req *req)
{
	struct scsitgt_io *io = req->io;
	struct rbd_lbas_job *lj;
	uint64_t max_blocks,
		num_blocks = atomic_load_explicit(&rc->num_blocks, memory_order_relaxed);

	if (!rc->thread_started) {
		return -EIO;
	}
	lj = calloc(1, sizeof(*lj));
	if (lj == NULL) {
		return -ENOMEM;
	}
	lj->req = req;
	lj->ext = scsitgt_io_get_lba_extents(io, &lj->count);
	lj->block_size = rc->block_size;
	lj->next = scsitgt_io_get_lba(io);
	lj->end = lj->next + scsitgt_io_get_num_blocks(io);
	max_blocks = rc->obj_size ? RBD_LBAS_MAX_OBJECTS * (rc->obj_size / rc->block_size) : 0;
	if (max_blocks && lj->end - lj->next > max_blocks) {
		lj->end = lj->next + max_blocks;
	}
	if (lj->end > num_blocks) {
		lj->end = num_blocks;
	}
	lj->job.work = rbd_lbas_work;
	lj->job.done = rbd_lbas_done;
	scsitgt__rbd_loop_hold(lp);
	atomic_store_explicit(&req->lp, lp, memory_order_release);
	rbd_job_push(rc, &lj->job);
	return 0;
}

static void rbd_submit(void *bctx, struct scsitgt_io *io)
{
	struct scsitgt__rbd_ctx *rc = bctx;
	struct rbd_req *req = scsitgt_io_get_ctx(io);
	struct scsitgt__rbd_loop *lp;
	int r;

	memset(req, 0, sizeof(*req));
	req->io = io;
	req->type = scsitgt_io_get_type(io);
	req->phase = RBD_PHASE_IO;
	req->off = scsitgt_io_get_lba(io) * rc->block_size;
	req->len = (size_t)scsitgt_io_get_num_blocks(io) * rc->block_size;
	if (rc->read_only && req->type != SCSITGT_IO_READ &&
	    req->type != SCSITGT_IO_GET_LBA_STATUS) {
		scsitgt_io_complete(io, -EROFS);
		return;
	}
	/* SCSITGT_BACKEND_MULTI_LOOP: the io completes on its loop, through that loop's queue. */
	r = scsitgt__rbd_loop_get(&rc->loops, scsitgt_io_get_loop(io), &lp);
	if (r < 0) {
		/* BUSY: the initiator retries. */
		scsitgt_io_complete(io, -EAGAIN);
		return;
	}
	/* Counted before rc->fenced is read (see there): home waits for this count to reach 0
	 * before it replaces the client under a fenced context. */
	scsitgt__rbd_loop_begin(lp);
	if (rc->fenced) {
		scsitgt__rbd_loop_end(lp);
		scsitgt__rbd_io_fail(rc, io, -ESHUTDOWN);
		return;
	}
	if (req->type == SCSITGT_IO_GET_LBA_STATUS) {
		r = rbd_lbas_start(rc, lp, req);
	} else {
		r = rbd_req_issue(rc, lp, req);
	}
	if (r < 0) {
		scsitgt__rbd_loop_end(lp);
		scsitgt__rbd_io_fail(rc, io, r);
	}
}

static bool rbd_supports(void *bctx, enum scsitgt_io_type type)
{
	struct scsitgt__rbd_ctx *rc = bctx;

	switch (type) {
	case SCSITGT_IO_READ:
		return true;
	case SCSITGT_IO_WRITE:
		return !rc->read_only;
	case SCSITGT_IO_FLUSH:
		return rc->cache;
	case SCSITGT_IO_UNMAP:
	case SCSITGT_IO_WRITE_ZEROES:
	case SCSITGT_IO_WRITE_SAME:
		return !rc->read_only;
	case SCSITGT_IO_GET_LBA_STATUS:
		return true;
	default:
		return false;
	}
}

/* ---- errors ---- */

/* What ios of other loops than home tell home (rc->loop_events). */
#define RBD_EV_FENCED (1u << 0)
#define RBD_EV_EROFS (1u << 1)
#define RBD_EV_ETIMEDOUT (1u << 2)
#define RBD_EV_EIO (1u << 3)

/* Any loop: tell home (rbd_loop_events() when the uv_async_t fires). */
static void rbd_post_event(struct scsitgt__rbd_ctx *rc, unsigned int ev)
{
	atomic_fetch_or_explicit(&rc->loop_events, ev, memory_order_release);
	uv_async_send(&rc->async);
}

/* Home: the client is blocklisted; say so and tell the hook. */
static void rbd_fenced_tell(struct scsitgt__rbd_ctx *rc)
{
	scsitgt__log(&rc->log, SCSITGT_LOG_ERROR, SCSITGT__RBD_SUBSYS,
		     "%s/%s: this client was blocklisted (fenced)", rc->pool, rc->image_name);
	if (rc->hooks.fenced) {
		rc->hooks.fenced(rc, rc->hooks.arg);
	}
}

/* An operation said this client is blocklisted: note it once (any loop) and tell the hook
 * (on home: now; from another loop: when home wakes). */
static void rbd_set_fenced(struct scsitgt__rbd_ctx *rc, bool home)
{
	if (atomic_exchange(&rc->fenced, true)) {
		return;
	}
	if (home) {
		rbd_fenced_tell(rc);
	} else {
		rbd_post_event(rc, RBD_EV_FENCED);
	}
}

/* Home: what ios of the other loops reported since the last wake-up, for the hooks. */
static void rbd_loop_events(struct scsitgt__rbd_ctx *rc)
{
	unsigned int ev = atomic_exchange_explicit(&rc->loop_events, 0, memory_order_acquire);

	if (ev == 0) {
		return;
	}
	if (rc->hooks.io_failed) {
		if (ev & RBD_EV_EROFS) {
			rc->hooks.io_failed(rc, -EROFS, rc->hooks.arg);
		}
		if (ev & RBD_EV_ETIMEDOUT) {
			rc->hooks.io_failed(rc, -ETIMEDOUT, rc->hooks.arg);
		}
		if (ev & RBD_EV_EIO) {
			rc->hooks.io_failed(rc, -EIO, rc->hooks.arg);
		}
	}
	if (ev & RBD_EV_FENCED) {
		rbd_fenced_tell(rc);
	}
}

void scsitgt__rbd_io_fail(struct scsitgt__rbd_ctx *rc, struct scsitgt_io *io, int err)
{
	bool home = scsitgt_io_get_loop(io) == rc->loop;

	/* The hooks are home's (rbd_int.h): another loop's io tells home and goes on. */
	if (home && rc->hooks.io_failed) {
		rc->hooks.io_failed(rc, err, rc->hooks.arg);
	} else if (!home) {
		rbd_post_event(rc, err == -EROFS     ? RBD_EV_EROFS :
				   err == -ETIMEDOUT ? RBD_EV_ETIMEDOUT :
						       RBD_EV_EIO);
	}
	if (err != -EROFS || !rc->read_only) {
		scsitgt__log(&rc->log, SCSITGT_LOG_WARNING, SCSITGT__RBD_SUBSYS,
			     "%s/%s: io type %d at block %" PRIu64 " (+%" PRIu32 ") failed: %s",
			     rc->pool, rc->image_name, (int)scsitgt_io_get_type(io),
			     scsitgt_io_get_lba(io), scsitgt_io_get_num_blocks(io), strerror(-err));
	}
	switch (err) {
	case -EROFS:
		if (rc->read_only) {
			/* Our own read-only open: DATA PROTECT, WRITE PROTECTED. */
			scsitgt_io_complete(io, -EROFS);
			return;
		}
		/*
		 * Another client owns the image's exclusive lock (another gateway is active):
		 * this path is not the one to write through. SPC-5 §5.16.2.4.4 / Table 52:
		 * NOT READY, LOGICAL UNIT NOT ACCESSIBLE, TARGET PORT IN STANDBY STATE; a
		 * multipath initiator retries on another path. Not a medium error.
		 */
		scsitgt_io_complete_sense(io, 0x02, 0x04, 0x0b);
		return;
	case -ESHUTDOWN:
		/*
		 * This client was blocklisted (fenced by a gateway that took the lock over): the
		 * io did not happen and never will through this connection. NOT READY, LOGICAL
		 * UNIT NOT ACCESSIBLE, ASYMMETRIC ACCESS STATE TRANSITION: retry elsewhere.
		 */
		rbd_set_fenced(rc, home);
		scsitgt_io_complete_sense(io, 0x02, 0x04, 0x0a);
		return;
	case -ETIMEDOUT:
		/* The cluster did not answer within op_timeout_s: NOT READY, LOGICAL UNIT IS IN
		 * PROCESS OF BECOMING READY, which initiators retry after a delay. */
		scsitgt_io_complete_sense(io, 0x02, 0x04, 0x01);
		return;
	default:
		break;
	}
	if (scsitgt_io_get_type(io) == SCSITGT_IO_READ ||
	    scsitgt_io_get_type(io) == SCSITGT_IO_WRITE) {
		scsitgt_io_complete_at(io, err, scsitgt_io_get_lba(io));
		return;
	}
	scsitgt_io_complete(io, err);
}

/* SAM-5 §6.3.3: the reset is the logical unit's, which every gateway exports. */
static void rbd_reset_async(void *bctx, scsitgt_done_cb cb, void *cb_arg)
{
	scsitgt__rbd_pr_reset(bctx, cb, cb_arg);
}

/* ---- the table and the host's calls ---- */

static const struct scsitgt_backend_ops rbd_ops = {
	.size = sizeof(struct scsitgt_backend_ops),
	.name = "rbd",
	.io_ctx_size = sizeof(struct rbd_req),
	.open = rbd_op_open,
	.close = rbd_op_close,
	.submit = rbd_submit,
	.supports = rbd_supports,
	.reset_async = rbd_reset_async,
	/* submit() on the io's loop (rbd_loop.h); everything else on home. */
	.flags = SCSITGT_BACKEND_MULTI_LOOP,
};

SCSITGT_EXPORT const struct scsitgt_backend_ops *scsitgt_backend_rbd_ops(void)
{
	return &rbd_ops;
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
