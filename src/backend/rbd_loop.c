/* SPDX-License-Identifier: MIT */
/* The RBD backend's per-loop completion queues (rbd_loop.h says what and why). */
#include <errno.h>
#include <stddef.h>
#include <unistd.h>

#include "backend/rbd_loop.h"

#define RBD_LOOP_SUBSYS "rbd"

static void lp_unref(struct scsitgt__rbd_loop *lp)
{
	if (atomic_fetch_sub_explicit(&lp->refs, 1, memory_order_acq_rel) == 1) {
		scsitgt__loop_ctx_destroy(&lp->lc);
	}
}

/* A new loop's queue (loop_ctx.h setup). */
static int lp_setup(void *arg, struct scsitgt__loop_ctx *lc)
{
	struct scsitgt__rbd_loop *lp = (struct scsitgt__rbd_loop *)lc;

	(void)arg;
	atomic_init(&lp->cq, NULL);
	atomic_init(&lp->refs, 1);
	atomic_init(&lp->inflight, 0);
	return 0;
}

static void lp_close_maybe(struct scsitgt__rbd_loop *lp);

/* The loop's side (loop_ctx.h wake, the eventfd read already: a post after the take writes it
 * again): take everything posted and drain it in the order it was posted. */
static void lp_wake(void *arg, struct scsitgt__loop_ctx *lc, int status)
{
	struct scsitgt__rbd_loops *set = arg;
	struct scsitgt__rbd_loop *lp = (struct scsitgt__rbd_loop *)lc;
	struct scsitgt__rbd_cq_node *n, *fifo = NULL, *next;

	(void)status;
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
	lp_close_maybe(lp);
}

/* On @lp's loop: once it is closing and no request of it is left (librbd gave the last one
 * back and it was drained), tear it down. */
static void lp_close_maybe(struct scsitgt__rbd_loop *lp)
{
	if (lp->lc.closing && atomic_load(&lp->inflight) == 0) {
		scsitgt__loop_ctx_teardown(&lp->lc);
	}
}

/* The loop's context closes (loop_ctx.h close): at once when nothing of it is in flight, else
 * after the wake-up that drains its last request (an io the engine gave up on, which librbd
 * returns later and which completes as usual: only its memory goes). */
static void lp_close(void *arg, struct scsitgt__loop_ctx *lc)
{
	(void)arg;
	lp_close_maybe((struct scsitgt__rbd_loop *)lc);
}

/* The loop's handles are closed (loop_ctx.h fini): requests still on another thread keep the
 * struct (and the eventfd they write). */
static void lp_fini(void *arg, struct scsitgt__loop_ctx *lc)
{
	(void)arg;
	lp_unref((struct scsitgt__rbd_loop *)lc);
}

static const struct scsitgt__loop_ctx_ops lp_ops = {
	.size = sizeof(struct scsitgt__rbd_loop),
	.subsys = RBD_LOOP_SUBSYS,
	.per_loop = "completion queue",
	.setup = lp_setup,
	.wake = lp_wake,
	/* The close waits for the loop's unfinished requests (rbd_loop.h). */
	.close = lp_close,
	.fini = lp_fini,
};
_Static_assert(offsetof(struct scsitgt__rbd_loop, lc) == 0, "loop_ctx.h: the helper's part first");

int scsitgt__rbd_loops_start(struct scsitgt__rbd_loops *set, uv_loop_t *home_loop,
			     scsitgt__rbd_drain_fn drain, void *arg,
			     const struct scsitgt__logger *log)
{
	int r;

	set->drain = drain;
	set->arg = arg;
	r = scsitgt__loop_ctxs_init(&set->ctxs, home_loop, &lp_ops, set, log, NULL);
	if (r < 0) {
		return r;
	}
	return scsitgt__loop_ctxs_start(&set->ctxs);
}

int scsitgt__rbd_loop_get(struct scsitgt__rbd_loops *set, uv_loop_t *loop,
			  struct scsitgt__rbd_loop **out)
{
	struct scsitgt__loop_ctx *lc = NULL;
	int r = scsitgt__loop_ctx_get(&set->ctxs, loop, &lc);

	*out = (struct scsitgt__rbd_loop *)lc;
	return r < 0 ? r : 0;
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

	for (struct scsitgt__loop_ctx *lc = scsitgt__loop_ctxs_next(&set->ctxs, NULL); lc;
	     lc = scsitgt__loop_ctxs_next(&set->ctxs, lc)) {
		n += atomic_load(&((struct scsitgt__rbd_loop *)lc)->inflight);
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
	if (old == NULL && write(lp->lc.efd, &one, sizeof(one)) < 0) {
		/* EAGAIN: the counter is at its maximum, the loop is woken anyway. */
	}
	lp_unref(lp);
}

void scsitgt__rbd_loops_close(struct scsitgt__rbd_loops *set, void (*closed)(void *arg), void *arg)
{
	scsitgt__loop_ctxs_close(&set->ctxs, closed, arg);
}

unsigned int scsitgt__rbd_loops_count(struct scsitgt__rbd_loops *set)
{
	return scsitgt__loop_ctxs_count(&set->ctxs);
}
