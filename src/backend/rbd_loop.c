/* SPDX-License-Identifier: MIT */
/* The RBD backend's per-loop completion queues (rbd_loop.h says what and why). */
#include <errno.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "backend/rbd_loop.h"

#define RBD_LOOP_SUBSYS "rbd"

static void lp_close_cb(uv_async_t *handle);

static void lp_unref(struct scsitgt__rbd_loop *lp)
{
	if (atomic_fetch_sub_explicit(&lp->refs, 1, memory_order_acq_rel) == 1) {
		close(lp->efd);
		free(lp);
	}
}

/* The loop's side: take everything posted and drain it in the order it was posted. */
static void lp_poll_cb(uv_poll_t *handle, int status, int events)
{
	struct scsitgt__rbd_loop *lp = handle->data;
	struct scsitgt__rbd_loops *set = lp->set;
	struct scsitgt__rbd_cq_node *n, *fifo = NULL, *next;
	uint64_t cnt;

	(void)status;
	(void)events;
	/* Read before taking: a post after the take writes the eventfd again. */
	if (read(lp->efd, &cnt, sizeof(cnt)) < 0) {
		/* EAGAIN: a wake-up for posts taken already; look anyway. */
	}
	n = atomic_exchange_explicit(&lp->cq, NULL, memory_order_acquire);
	for (; n; n = next) {
		next = n->next;
		n->next = fifo;
		fifo = n;
	}
	for (n = fifo; n; n = next) {
		next = n->next;
		set->drain(set->arg, lp, n);
	}
}

/* A context whose handles could not all be set up: free it once they are closed. */
static void lp_dropped(uv_handle_t *handle)
{
	struct scsitgt__rbd_loop *lp = handle->data;

	if (--lp->handles == 0) {
		lp_unref(lp);
	}
}

static int lp_create(struct scsitgt__rbd_loops *set, uv_loop_t *loop, bool home,
		     struct scsitgt__rbd_loop **out)
{
	struct scsitgt__rbd_loop *lp = calloc(1, sizeof(*lp));
	int r;

	if (lp == NULL) {
		return -ENOMEM;
	}
	atomic_init(&lp->cq, NULL);
	atomic_init(&lp->refs, 1);
	atomic_init(&lp->inflight, 0);
	lp->set = set;
	lp->loop = loop;
	lp->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (lp->efd < 0) {
		r = -errno;
		free(lp);
		return r;
	}
	r = uv_poll_init(loop, &lp->poll, lp->efd);
	if (r == 0) {
		lp->poll.data = lp;
		lp->poll_inited = true;
		r = uv_poll_start(&lp->poll, UV_READABLE, lp_poll_cb);
	}
	if (r == 0 && !home) {
		r = uv_async_init(loop, &lp->close_async, lp_close_cb);
		if (r == 0) {
			lp->close_async.data = lp;
			lp->async_inited = true;
		}
	}
	if (r < 0) {
		scsitgt__log(set->log, SCSITGT_LOG_ERROR, RBD_LOOP_SUBSYS,
			     "completion handles for a loop: %s", uv_strerror(r));
		lp->handles = (lp->poll_inited ? 1u : 0u) + (lp->async_inited ? 1u : 0u);
		if (lp->poll_inited) {
			uv_close((uv_handle_t *)&lp->poll, lp_dropped);
		}
		if (lp->async_inited) {
			uv_close((uv_handle_t *)&lp->close_async, lp_dropped);
		}
		if (lp->handles == 0) {
			lp_unref(lp);
		}
		return r;
	}
	*out = lp;
	return 0;
}

/* ---- closing ---- */

static void set_done_closed(uv_handle_t *handle)
{
	struct scsitgt__rbd_loops *set = handle->data;

	set->done_inited = false;
	set->closed(set->closed_arg);
}

/* On home: every loop's context is torn down. */
static void set_finish(struct scsitgt__rbd_loops *set)
{
	if (set->done_inited) {
		uv_close((uv_handle_t *)&set->done_async, set_done_closed);
		return;
	}
	set->closed(set->closed_arg);
}

static void set_done_cb(uv_async_t *handle)
{
	struct scsitgt__rbd_loops *set = handle->data;

	/* Only the last loop to finish its teardown sends it. */
	set_finish(set);
}

/* On @lp's loop: its handles are closed; the last loop to finish tells home. */
static void lp_closed(struct scsitgt__rbd_loop *lp)
{
	struct scsitgt__rbd_loops *set = lp->set;
	bool home = lp == set->home;

	/* Requests still on another thread keep the struct (and the eventfd they write). */
	lp_unref(lp);
	if (atomic_fetch_sub_explicit(&set->close_pending, 1, memory_order_acq_rel) != 1) {
		return;
	}
	if (home) {
		set_finish(set);
	} else {
		uv_async_send(&set->done_async);
	}
}

static void lp_handle_closed(uv_handle_t *handle)
{
	struct scsitgt__rbd_loop *lp = handle->data;

	if (--lp->handles == 0) {
		lp_closed(lp);
	}
}

/* On @lp's loop: tear its handles down. */
static void lp_close(struct scsitgt__rbd_loop *lp)
{
	lp->closing = true;
	lp->handles = (lp->poll_inited ? 1u : 0u) + (lp->async_inited ? 1u : 0u);
	if (lp->handles == 0) {
		lp_closed(lp);
		return;
	}
	if (lp->poll_inited) {
		uv_close((uv_handle_t *)&lp->poll, lp_handle_closed);
	}
	if (lp->async_inited) {
		uv_close((uv_handle_t *)&lp->close_async, lp_handle_closed);
	}
}

/* The close message, on another loop than home. */
static void lp_close_cb(uv_async_t *handle)
{
	lp_close(handle->data);
}

/* ---- the API ---- */

int scsitgt__rbd_loops_start(struct scsitgt__rbd_loops *set, uv_loop_t *home_loop,
			     scsitgt__rbd_drain_fn drain, void *arg,
			     const struct scsitgt__logger *log)
{
	int r;

	if (set->started) {
		return -EBUSY;
	}
	set->home_loop = home_loop;
	set->drain = drain;
	set->arg = arg;
	set->log = log;
	atomic_init(&set->others, NULL);
	atomic_init(&set->close_pending, 0);
	if (!set->done_inited) {
		r = uv_async_init(home_loop, &set->done_async, set_done_cb);
		if (r < 0) {
			return r;
		}
		set->done_async.data = set;
		set->done_inited = true;
	}
	r = lp_create(set, home_loop, true, &set->home);
	if (r < 0) {
		/* done_async stays until scsitgt__rbd_loops_close(). */
		return r;
	}
	set->started = true;
	return 0;
}

int scsitgt__rbd_loop_get(struct scsitgt__rbd_loops *set, uv_loop_t *loop,
			  struct scsitgt__rbd_loop **out)
{
	struct scsitgt__rbd_loop *lp;
	int r;

	if (loop == set->home_loop) {
		*out = set->home;
		return set->home ? 0 : -EIO;
	}
	for (lp = atomic_load_explicit(&set->others, memory_order_acquire); lp; lp = lp->next) {
		if (lp->loop == loop) {
			*out = lp;
			return 0;
		}
	}
	/* Only this loop's thread makes its context; the others only read the list. */
	r = lp_create(set, loop, false, &lp);
	if (r < 0) {
		return r;
	}
	scsitgt__log(set->log, SCSITGT_LOG_INFO, RBD_LOOP_SUBSYS,
		     "another loop submits: its own completion queue");
	lp->next = atomic_load_explicit(&set->others, memory_order_relaxed);
	while (!atomic_compare_exchange_weak_explicit(&set->others, &lp->next, lp,
						      memory_order_release, memory_order_relaxed)) {
	}
	*out = lp;
	return 0;
}

void scsitgt__rbd_loop_begin(struct scsitgt__rbd_loop *lp)
{
	atomic_store(&lp->inflight, atomic_load_explicit(&lp->inflight, memory_order_relaxed) + 1);
}

void scsitgt__rbd_loop_end(struct scsitgt__rbd_loop *lp)
{
	atomic_store(&lp->inflight, atomic_load_explicit(&lp->inflight, memory_order_relaxed) - 1);
}

unsigned int scsitgt__rbd_loops_inflight(struct scsitgt__rbd_loops *set)
{
	unsigned int n = 0;

	if (!set->started) {
		return 0;
	}
	n = atomic_load(&set->home->inflight);
	for (struct scsitgt__rbd_loop *lp =
		     atomic_load_explicit(&set->others, memory_order_acquire);
	     lp; lp = lp->next) {
		n += atomic_load(&lp->inflight);
	}
	return n;
}

void scsitgt__rbd_loop_hold(struct scsitgt__rbd_loop *lp)
{
	atomic_fetch_add_explicit(&lp->refs, 1, memory_order_relaxed);
}

void scsitgt__rbd_loop_unhold(struct scsitgt__rbd_loop *lp)
{
	lp_unref(lp);
}

void scsitgt__rbd_loop_post(struct scsitgt__rbd_loop *lp, struct scsitgt__rbd_cq_node *node)
{
	struct scsitgt__rbd_cq_node *old = atomic_load_explicit(&lp->cq, memory_order_relaxed);
	uint64_t one = 1;

	do {
		node->next = old;
	} while (!atomic_compare_exchange_weak_explicit(&lp->cq, &old, node, memory_order_release,
							memory_order_relaxed));
	/* The first of a burst wakes the loop; the loop reads the eventfd before it takes. */
	if (old == NULL && write(lp->efd, &one, sizeof(one)) < 0) {
		/* EAGAIN: the counter is at its maximum, the loop is woken anyway. */
	}
	lp_unref(lp);
}

void scsitgt__rbd_loops_close(struct scsitgt__rbd_loops *set, void (*closed)(void *arg), void *arg)
{
	struct scsitgt__rbd_loop *others = atomic_load_explicit(&set->others, memory_order_acquire);
	unsigned int n = 1;

	set->closed = closed;
	set->closed_arg = arg;
	if (!set->started) {
		/* start() failed or never ran: at most the message handle to close. */
		set_finish(set);
		return;
	}
	for (struct scsitgt__rbd_loop *lp = others; lp; lp = lp->next) {
		n++;
	}
	atomic_store_explicit(&set->close_pending, n, memory_order_release);
	for (struct scsitgt__rbd_loop *lp = others, *next; lp; lp = next) {
		/* Read before the message: that loop may tear its context down (and free it)
		 * as soon as it is sent. */
		next = lp->next;
		uv_async_send(&lp->close_async);
	}
	/* Last: this may call @closed. */
	lp_close(set->home);
}

unsigned int scsitgt__rbd_loops_count(struct scsitgt__rbd_loops *set)
{
	unsigned int n = set->started ? 1 : 0;

	for (struct scsitgt__rbd_loop *lp =
		     atomic_load_explicit(&set->others, memory_order_acquire);
	     lp; lp = lp->next) {
		n++;
	}
	return n;
}
