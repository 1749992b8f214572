/* SPDX-License-Identifier: MIT */
/*
 * Per-loop device contexts of an RDMA port (iSER portal, SRP target port): what the
 * connections of the port that run on one loop share, each touched by that loop's thread
 * only; and the rdma_cm events a worker's connection gets from home. See rdma.h
 * ("loop_ctx.c").
 */
#include <errno.h>
#include <stdlib.h>

#include "core/core.h"
#include "transport/rdma/rdma.h"

/* Registered memory of one device, for the port's connections of one loop on it. */
struct rdma_loop_mem {
	struct scsitgt__list node; /* lp->mems */
	struct scsitgt__rdma_dev *dev;
	struct scsitgt__rdma_mem *mem;
};

int scsitgt__rdma_loops_init(struct scsitgt__rdma_loops *s, struct scsitgt_engine *engine,
			     bool on_workers, void (*back)(void *arg), void *arg)
{
	s->engine = engine;
	s->n = on_workers ? engine->nworkers + 1 : 1;
	s->xmsgs = 0;
	s->released = false;
	s->back = back;
	s->arg = arg;
	s->v = calloc(s->n, sizeof(*s->v));
	if (s->v == NULL)
		return -ENOMEM;
	for (unsigned int i = 0; i < s->n; i++) {
		struct scsitgt__rdma_loop *lp = &s->v[i];

		scsitgt__list_init(&lp->devs);
		scsitgt__list_init(&lp->mems);
		lp->set = s;
		lp->w = i ? &engine->workers[i - 1] : NULL;
		lp->loop = i ? &lp->w->loop : engine->loop;
	}
	return 0;
}

void scsitgt__rdma_loops_fini(struct scsitgt__rdma_loops *s)
{
	/* The worker loops dropped theirs before (scsitgt__rdma_loops_release()). */
	if (s->v)
		scsitgt__rdma_loop_drop(&s->v[0], true);
	free(s->v);
	s->v = NULL;
}

struct scsitgt__rdma_loop *scsitgt__rdma_loops_at(struct scsitgt__rdma_loops *s,
						  const struct scsitgt__worker *w)
{
	return &s->v[w && s->n > 1 ? w->index + 1 : 0];
}

/* Drop the port's memory of @lp on every device; each goes once no buffer of it is out. */
static void loop_mem_drop(struct scsitgt__rdma_loop *lp)
{
	struct scsitgt__list *pos, *tmp;

	scsitgt__list_foreach_safe(pos, tmp, &lp->mems)
	{
		struct rdma_loop_mem *m = scsitgt__container_of(pos, struct rdma_loop_mem, node);

		scsitgt__list_remove(&m->node);
		/* Buffers of commands still in a backend keep the memory until they return. */
		scsitgt__rdma_mem_put(m->mem);
		free(m);
	}
}

int scsitgt__rdma_loop_mem_get(struct scsitgt__rdma_loop *lp, struct scsitgt__rdma_dev *dev,
			       uint64_t bytes, struct scsitgt__rdma_mem **out)
{
	struct rdma_loop_mem *m;
	int rc;

	for (struct scsitgt__list *p = lp->mems.next; p != &lp->mems; p = p->next) {
		m = scsitgt__container_of(p, struct rdma_loop_mem, node);
		if (m->dev == dev) {
			*out = m->mem;
			return 0;
		}
	}
	m = calloc(1, sizeof(*m));
	if (m == NULL)
		return -ENOMEM;
	rc = scsitgt__rdma_mem_create(&m->mem, dev, (size_t)bytes, IBV_ACCESS_LOCAL_WRITE);
	if (rc < 0) {
		free(m);
		return rc;
	}
	m->dev = dev;
	scsitgt__list_add_tail(&lp->mems, &m->node);
	*out = m->mem;
	return 0;
}

void scsitgt__rdma_loop_drop(struct scsitgt__rdma_loop *lp, bool unlink)
{
	struct scsitgt__list *pos, *tmp;

	loop_mem_drop(lp);
	if (!unlink)
		return;
	/* Devices still held by buffers out outlive the list head: unlink them. */
	scsitgt__list_foreach_safe(pos, tmp, &lp->devs)
	{
		scsitgt__list_remove(pos);
	}
}

/* Home: a worker loop has dropped what it was asked to. */
static void loop_drop_back(struct scsitgt__msg *msg)
{
	struct scsitgt__rdma_loop *lp =
		scsitgt__container_of(msg, struct scsitgt__rdma_loop, drop_msg);
	struct scsitgt__rdma_loops *s = lp->set;

	lp->drop_posted = false;
	s->xmsgs--;
	if (s->back)
		s->back(s->arg);
}

/* A worker loop: drop, then tell home. */
static void loop_drop_fn(struct scsitgt__msg *msg)
{
	struct scsitgt__rdma_loop *lp =
		scsitgt__container_of(msg, struct scsitgt__rdma_loop, drop_msg);

	scsitgt__rdma_loop_drop(lp, lp->drop_unlink);
	lp->drop_msg.fn = loop_drop_back;
	scsitgt__engine_post(lp->set->engine, &lp->drop_msg);
}

void scsitgt__rdma_loops_drop(struct scsitgt__rdma_loops *s, bool unlink)
{
	scsitgt__rdma_loop_drop(&s->v[0], unlink);
	for (unsigned int i = 1; i < s->n; i++) {
		struct scsitgt__rdma_loop *lp = &s->v[i];

		if (lp->drop_posted)
			continue;
		lp->drop_posted = true;
		lp->drop_unlink = unlink;
		lp->drop_msg.fn = loop_drop_fn;
		s->xmsgs++;
		scsitgt__worker_post(lp->w, &lp->drop_msg);
	}
}

bool scsitgt__rdma_loops_release(struct scsitgt__rdma_loops *s)
{
	if (s->xmsgs)
		return false;
	if (!s->released) {
		/* Each worker loop lets go of its lists before they are freed. */
		s->released = true;
		scsitgt__rdma_loops_drop(s, true);
	}
	return s->xmsgs == 0;
}

/* The worker: a handed-over ESTABLISHED. */
static void xev_est_fn(struct scsitgt__msg *msg)
{
	struct scsitgt__rdma_xev *x = scsitgt__container_of(msg, struct scsitgt__rdma_xev, est_msg);

	if (!x->released)
		x->here(x, RDMA_CM_EVENT_ESTABLISHED, 0);
}

/* The worker: the handed-over disconnect-class event. */
static void xev_down_fn(struct scsitgt__msg *msg)
{
	struct scsitgt__rdma_xev *x =
		scsitgt__container_of(msg, struct scsitgt__rdma_xev, down_msg);

	if (!x->released)
		x->here(x, (enum rdma_cm_event_type)x->down_type, x->down_status);
}

void scsitgt__rdma_xev_deliver(struct scsitgt__rdma_xev *x, struct scsitgt__worker *w,
			       const struct scsitgt__rdma_cm_event *ev)
{
	if (w == NULL) {
		x->here(x, ev->type, ev->status);
		return;
	}
	switch (ev->type) {
	case RDMA_CM_EVENT_ESTABLISHED:
		if (x->x_est)
			break;
		x->x_est = true;
		x->est_msg.fn = xev_est_fn;
		scsitgt__worker_post(w, &x->est_msg);
		break;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
	case RDMA_CM_EVENT_ADDR_CHANGE:
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_REJECTED:
		if (x->x_down)
			break;
		x->x_down = true;
		x->down_type = (int)ev->type;
		x->down_status = ev->status;
		x->down_msg.fn = xev_down_fn;
		scsitgt__worker_post(w, &x->down_msg);
		break;
	default:
		break;
	}
}

/* Home: the worker released the connection. */
static void xev_release_fn(struct scsitgt__msg *msg)
{
	struct scsitgt__rdma_xev *x =
		scsitgt__container_of(msg, struct scsitgt__rdma_xev, release_msg);

	x->release(x);
}

void scsitgt__rdma_xev_release(struct scsitgt__rdma_xev *x, struct scsitgt_engine *engine)
{
	x->released = true;
	x->release_msg.fn = xev_release_fn;
	scsitgt__engine_post(engine, &x->release_msg);
}

/* The worker: home let go of the connection, and no event message of it is left. */
static void xev_final_fn(struct scsitgt__msg *msg)
{
	struct scsitgt__rdma_xev *x =
		scsitgt__container_of(msg, struct scsitgt__rdma_xev, final_msg);

	x->final(x);
}

void scsitgt__rdma_xev_final(struct scsitgt__rdma_xev *x, struct scsitgt__worker *w)
{
	x->final_msg.fn = xev_final_fn;
	scsitgt__worker_post(w, &x->final_msg);
}
