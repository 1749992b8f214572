/* SPDX-License-Identifier: MIT */
/* A backend's per-loop contexts (loop_ctx.h says what and why). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "backend/loop_ctx.h"

static void lc_close_cb(uv_async_t *handle);

/* The loop's side of the eventfd: clear it, then let the backend look. */
static void lc_poll_cb(uv_poll_t *handle, int status, int events)
{
	struct scsitgt__loop_ctx *lc = handle->data;
	struct scsitgt__loop_ctxs *set = lc->set;
	uint64_t cnt;

	(void)events;
	/* Read before the backend looks: a signal after this read wakes the loop again. */
	if (read(lc->efd, &cnt, sizeof(cnt)) < 0) {
		/* EAGAIN: a wake-up for what was taken already; look anyway. */
	}
	set->ops->wake(set->arg, lc, status);
}

static int lc_watch(struct scsitgt__loop_ctx *lc)
{
	int r = uv_poll_init(lc->loop, &lc->poll, lc->efd);

	if (r < 0) {
		return r;
	}
	lc->poll.data = lc;
	lc->poll_inited = true;
	return uv_poll_start(&lc->poll, UV_READABLE, lc_poll_cb);
}

/* A context whose handles could not all be set up: release it once they are closed. */
static void lc_dropped(uv_handle_t *handle)
{
	struct scsitgt__loop_ctx *lc = handle->data;
	struct scsitgt__loop_ctxs *set = lc->set;

	if (--lc->handles == 0) {
		set->ops->fini(set->arg, lc);
	}
}

/* Make @loop's context (home's: not watched yet, no handle). 0 or a negative errno, nothing
 * left. On @loop's thread. */
static int lc_create(struct scsitgt__loop_ctxs *set, uv_loop_t *loop, bool home,
		     struct scsitgt__loop_ctx **out)
{
	struct scsitgt__loop_ctx *lc = calloc(1, set->ops->size);
	int r;

	if (lc == NULL) {
		return -ENOMEM;
	}
	lc->set = set;
	lc->loop = loop;
	lc->home = home;
	lc->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (lc->efd < 0) {
		r = -errno;
		free(lc);
		return r;
	}
	r = set->ops->setup ? set->ops->setup(set->arg, lc) : 0;
	if (r < 0) {
		scsitgt__loop_ctx_destroy(lc);
		return r;
	}
	if (home) {
		*out = lc;
		return 0;
	}
	r = uv_async_init(loop, &lc->close_async, lc_close_cb);
	if (r == 0) {
		lc->close_async.data = lc;
		lc->async_inited = true;
		r = lc_watch(lc);
	}
	if (r < 0) {
		/* Never published: its handles close, then it goes (lc_dropped). */
		scsitgt__log(set->log, SCSITGT_LOG_ERROR, set->ops->subsys,
			     "%s%scompletion handles for another loop: %s",
			     set->name ? set->name : "", set->name ? ": " : "", uv_strerror(r));
		lc->handles = (lc->poll_inited ? 1u : 0u) + (lc->async_inited ? 1u : 0u);
		if (lc->poll_inited) {
			uv_close((uv_handle_t *)&lc->poll, lc_dropped);
		}
		if (lc->async_inited) {
			uv_close((uv_handle_t *)&lc->close_async, lc_dropped);
		}
		if (lc->handles == 0) {
			set->ops->fini(set->arg, lc);
		}
		return r;
	}
	*out = lc;
	return 0;
}

/* ---- closing ---- */

static void set_done_closed(uv_handle_t *handle)
{
	struct scsitgt__loop_ctxs *set = handle->data;

	set->done_inited = false;
	set->closed(set->closed_arg);
}

/* On home: every context is torn down; close the message handle, then call back. */
static void set_finish(struct scsitgt__loop_ctxs *set)
{
	if (set->done_inited) {
		uv_close((uv_handle_t *)&set->done_async, set_done_closed);
		return;
	}
	set->closed(set->closed_arg);
}

static void set_done_cb(uv_async_t *handle)
{
	/* Only the last context to go sends it. */
	set_finish(handle->data);
}

/* On @lc's loop: its handles are closed; the last context to go tells home. */
static void lc_closed(struct scsitgt__loop_ctx *lc)
{
	struct scsitgt__loop_ctxs *set = lc->set;
	bool home = lc->home;

	/* The backend may free @lc here, or keep it for a thread that still holds it. */
	set->ops->fini(set->arg, lc);
	if (atomic_fetch_sub_explicit(&set->close_pending, 1, memory_order_acq_rel) != 1) {
		return;
	}
	if (home) {
		set_finish(set);
	} else {
		uv_async_send(&set->done_async);
	}
}

static void lc_handle_closed(uv_handle_t *handle)
{
	struct scsitgt__loop_ctx *lc = handle->data;

	if (--lc->handles == 0) {
		lc_closed(lc);
	}
}

void scsitgt__loop_ctx_teardown(struct scsitgt__loop_ctx *lc)
{
	if (lc->torn_down) {
		return;
	}
	lc->torn_down = true;
	lc->handles = (lc->poll_inited ? 1u : 0u) + (lc->async_inited ? 1u : 0u);
	if (lc->handles == 0) {
		lc_closed(lc);
		return;
	}
	if (lc->poll_inited) {
		uv_close((uv_handle_t *)&lc->poll, lc_handle_closed);
	}
	if (lc->async_inited) {
		uv_close((uv_handle_t *)&lc->close_async, lc_handle_closed);
	}
}

/* On @lc's loop: the context closes; the backend says when it may go. */
static void lc_close(struct scsitgt__loop_ctx *lc)
{
	struct scsitgt__loop_ctxs *set = lc->set;

	lc->closing = true;
	if (set->ops->close) {
		set->ops->close(set->arg, lc);
	} else {
		scsitgt__loop_ctx_teardown(lc);
	}
}

/* The close message, on another loop than home. */
static void lc_close_cb(uv_async_t *handle)
{
	lc_close(handle->data);
}

/* ---- the API ---- */

int scsitgt__loop_ctxs_init(struct scsitgt__loop_ctxs *set, uv_loop_t *home_loop,
			    const struct scsitgt__loop_ctx_ops *ops, void *arg,
			    const struct scsitgt__logger *log, const char *name)
{
	if (set->home) {
		return 0;
	}
	set->home_loop = home_loop;
	set->ops = ops;
	set->arg = arg;
	set->log = log;
	set->name = name;
	atomic_init(&set->others, NULL);
	atomic_init(&set->close_pending, 0);
	return lc_create(set, home_loop, true, &set->home);
}

int scsitgt__loop_ctxs_start(struct scsitgt__loop_ctxs *set)
{
	int r;

	if (set->started) {
		return 0;
	}
	if (set->home == NULL) {
		return -EIO;
	}
	if (!set->done_inited) {
		r = uv_async_init(set->home_loop, &set->done_async, set_done_cb);
		if (r < 0) {
			return r;
		}
		set->done_async.data = set;
		set->done_inited = true;
	}
	if (!set->home->poll_inited) {
		r = lc_watch(set->home);
		if (r < 0) {
			/* A poll handle that was made is closed with the context. */
			return r;
		}
	}
	set->started = true;
	return 0;
}

int scsitgt__loop_ctx_get(struct scsitgt__loop_ctxs *set, uv_loop_t *loop,
			  struct scsitgt__loop_ctx **out)
{
	struct scsitgt__loop_ctx *lc;
	int r;

	if (loop == set->home_loop) {
		*out = set->home;
		return set->home ? 0 : -EIO;
	}
	for (lc = atomic_load_explicit(&set->others, memory_order_acquire); lc; lc = lc->next) {
		if (lc->loop == loop) {
			*out = lc;
			return 0;
		}
	}
	if (!set->started) {
		return -EIO;
	}
	/* Only this loop's thread makes its context; the others only read the list. */
	r = lc_create(set, loop, false, &lc);
	if (r < 0) {
		return r;
	}
	scsitgt__log(set->log, SCSITGT_LOG_INFO, set->ops->subsys,
		     "%s%sanother loop submits: its own %s", set->name ? set->name : "",
		     set->name ? ": " : "",
		     set->ops->describe ? set->ops->describe(set->arg) : set->ops->per_loop);
	lc->next = atomic_load_explicit(&set->others, memory_order_relaxed);
	while (!atomic_compare_exchange_weak_explicit(&set->others, &lc->next, lc,
						      memory_order_release, memory_order_relaxed)) {
	}
	*out = lc;
	return 1;
}

void scsitgt__loop_ctxs_close(struct scsitgt__loop_ctxs *set, void (*closed)(void *arg), void *arg)
{
	struct scsitgt__loop_ctx *others = atomic_load_explicit(&set->others, memory_order_acquire);
	unsigned int n = 1;

	set->closed = closed;
	set->closed_arg = arg;
	if (set->home == NULL) {
		/* init() failed or never ran: at most the message handle to close. */
		set_finish(set);
		return;
	}
	for (struct scsitgt__loop_ctx *lc = others; lc; lc = lc->next) {
		n++;
	}
	atomic_store_explicit(&set->close_pending, n, memory_order_release);
	for (struct scsitgt__loop_ctx *lc = others, *next; lc; lc = next) {
		/* Read before the message: that loop may tear its context down (and free it) as
		 * soon as it is sent. */
		next = lc->next;
		uv_async_send(&lc->close_async);
	}
	/* Last: this may call @closed. */
	lc_close(set->home);
}

void scsitgt__loop_ctx_destroy(struct scsitgt__loop_ctx *lc)
{
	if (lc->efd >= 0) {
		close(lc->efd);
	}
	free(lc);
}

struct scsitgt__loop_ctx *scsitgt__loop_ctxs_next(struct scsitgt__loop_ctxs *set,
						  struct scsitgt__loop_ctx *lc)
{
	if (lc == NULL) {
		return set->home;
	}
	if (lc->home) {
		return atomic_load_explicit(&set->others, memory_order_acquire);
	}
	return lc->next;
}

unsigned int scsitgt__loop_ctxs_count(struct scsitgt__loop_ctxs *set)
{
	unsigned int n = 0;

	for (struct scsitgt__loop_ctx *lc = scsitgt__loop_ctxs_next(set, NULL); lc;
	     lc = scsitgt__loop_ctxs_next(set, lc)) {
		n++;
	}
	return n;
}
