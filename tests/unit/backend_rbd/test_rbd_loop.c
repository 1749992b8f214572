/* SPDX-License-Identifier: MIT */
/*
 * The RBD backend's per-loop completion queues (src/backend/rbd_loop.c) without a cluster: two
 * loops (home on the test's thread, a worker on its own) each issue requests, a third thread
 * stands in for librbd's callback threads and posts them back interleaved, and each request
 * must be drained on the loop that issued it, in the order that loop issued it; the loops'
 * in-flight counts sum up on home. Then the close: each loop's context torn down on its own
 * loop, home called back once, no handle left on either loop, and a request still on the
 * "librbd" thread at that point posted afterwards without touching freed memory (its
 * reference keeps the queue; ASan and TSan builds check that). And a close while a request
 * is still unfinished (an io the engine gave up on, still in librbd): the loop's context stays
 * until librbd gives it back, drains it, and only then calls home back. Part of the TSan suite.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <uv.h>

#include "backend/rbd_loop.h"

#define NREQ 2000

struct req {
	struct scsitgt__rbd_cq_node cq;
	struct scsitgt__rbd_loop *lp;
	unsigned int loop_idx;
	unsigned int seq;
	struct req *next; /* on the "librbd" thread's queue */
};

struct world {
	uv_loop_t loops[2];
	uv_thread_t ids[2];
	struct scsitgt__rbd_loops set;
	struct scsitgt__logger log;
	struct scsitgt__rbd_loop *lp[2];
	struct req reqs[2][NREQ];
	struct req late;

	/* The worker loop's thread and the operations home asks of it. */
	uv_thread_t worker;
	uv_async_t wcmd;
	int wop;
	int wresult;
	uv_sem_t wdone;
	/* Home is woken when the worker drained everything. */
	uv_async_t home_wake;

	/* The stand-in for librbd's threads: posts what the loops handed it, once released. */
	uv_thread_t rbd;
	uv_mutex_t mu;
	uv_cond_t cv;
	struct req *head, *tail;
	bool go, quit;

	/* Results. */
	unsigned int expect[2];
	atomic_uint drained[2];
	atomic_uint bad;
	unsigned int closed;
};

enum {
	W_GET,
	W_ISSUE,
	W_LATE,
	W_STOP
};

static void rbd_push(struct world *w, struct req *r)
{
	uv_mutex_lock(&w->mu);
	r->next = NULL;
	if (w->tail)
		w->tail->next = r;
	else
		w->head = r;
	w->tail = r;
	uv_cond_signal(&w->cv);
	uv_mutex_unlock(&w->mu);
}

/* librbd's side: post each request back once home says go; @late waits for quit. */
static void rbd_main(void *arg)
{
	struct world *w = arg;

	uv_mutex_lock(&w->mu);
	for (;;) {
		while (!w->quit && (!w->go || w->head == NULL || w->head == &w->late))
			uv_cond_wait(&w->cv, &w->mu);
		if (w->head == NULL)
			break;
		struct req *r = w->head;

		w->head = r->next;
		if (w->head == NULL)
			w->tail = NULL;
		uv_mutex_unlock(&w->mu);
		scsitgt__rbd_loop_post(r->lp, &r->cq);
		uv_mutex_lock(&w->mu);
	}
	uv_mutex_unlock(&w->mu);
}

static void drain(void *arg, struct scsitgt__rbd_loop *lp, struct scsitgt__rbd_cq_node *node)
{
	struct world *w = arg;
	struct req *r = (struct req *)node;
	uv_thread_t self = uv_thread_self();
	unsigned int i = r->loop_idx;

	if (r == &w->late || lp != w->lp[i] || !uv_thread_equal(&self, &w->ids[i]) ||
	    r->seq != w->expect[i])
		atomic_fetch_add(&w->bad, 1);
	w->expect[i] = r->seq + 1;
	scsitgt__rbd_loop_end(lp);
	if (atomic_fetch_add(&w->drained[i], 1) + 1 == NREQ && i == 1)
		uv_async_send(&w->home_wake);
}

/* On loop @i's thread: hand NREQ requests to "librbd", as rbd_io.c's submit does. */
static void issue(struct world *w, unsigned int i)
{
	for (unsigned int k = 0; k < NREQ; k++) {
		struct req *r = &w->reqs[i][k];

		r->lp = w->lp[i];
		r->loop_idx = i;
		r->seq = k;
		scsitgt__rbd_loop_begin(r->lp);
		scsitgt__rbd_loop_hold(r->lp);
		rbd_push(w, r);
	}
}

static void wcmd_cb(uv_async_t *h)
{
	struct world *w = h->data;

	switch (w->wop) {
	case W_GET:
		w->wresult = scsitgt__rbd_loop_get(&w->set, &w->loops[1], &w->lp[1]);
		break;
	case W_ISSUE:
		issue(w, 1);
		break;
	case W_LATE:
		/* Handed over and never finished before the close (nothing drains it). */
		w->late.lp = w->lp[1];
		w->late.loop_idx = 1;
		scsitgt__rbd_loop_hold(w->late.lp);
		rbd_push(w, &w->late);
		break;
	case W_STOP:
		uv_close((uv_handle_t *)&w->wcmd, NULL);
		break;
	}
	uv_sem_post(&w->wdone);
}

static void worker_main(void *arg)
{
	struct world *w = arg;

	uv_run(&w->loops[1], UV_RUN_DEFAULT);
}

static void worker_do(struct world *w, int op)
{
	w->wop = op;
	uv_async_send(&w->wcmd);
	uv_sem_wait(&w->wdone);
}

static void home_wake_cb(uv_async_t *h)
{
	(void)h;
}

static void closed(void *arg)
{
	struct world *w = arg;

	w->closed++;
}

static void test_two_loops(void **state)
{
	struct world *w = calloc(1, sizeof(*w));
	struct scsitgt__rbd_loop *again = NULL;

	(void)state;
	assert_non_null(w);
	assert_int_equal(uv_loop_init(&w->loops[0]), 0);
	assert_int_equal(uv_loop_init(&w->loops[1]), 0);
	assert_int_equal(uv_mutex_init(&w->mu), 0);
	assert_int_equal(uv_cond_init(&w->cv), 0);
	assert_int_equal(uv_sem_init(&w->wdone, 0), 0);
	w->ids[0] = uv_thread_self();
	assert_int_equal(uv_async_init(&w->loops[0], &w->home_wake, home_wake_cb), 0);
	assert_int_equal(uv_async_init(&w->loops[1], &w->wcmd, wcmd_cb), 0);
	w->wcmd.data = w;
	assert_int_equal(uv_thread_create(&w->worker, worker_main, w), 0);
	w->ids[1] = w->worker;
	assert_int_equal(uv_thread_create(&w->rbd, rbd_main, w), 0);

	/* Home's context at start, the worker's at its first get; a second get finds it. */
	assert_int_equal(scsitgt__rbd_loops_start(&w->set, &w->loops[0], drain, w, &w->log), 0);
	assert_int_equal(scsitgt__rbd_loop_get(&w->set, &w->loops[0], &w->lp[0]), 0);
	worker_do(w, W_GET);
	assert_int_equal(w->wresult, 0);
	assert_non_null(w->lp[1]);
	assert_ptr_not_equal(w->lp[0], w->lp[1]);
	worker_do(w, W_GET);
	assert_int_equal(w->wresult, 0);
	assert_int_equal(scsitgt__rbd_loops_count(&w->set), 2);

	/* Both loops hand requests over; nothing comes back before "librbd" is let go. */
	issue(w, 0);
	worker_do(w, W_ISSUE);
	again = w->lp[1];
	assert_int_equal(scsitgt__rbd_loops_inflight(&w->set), 2 * NREQ);
	uv_mutex_lock(&w->mu);
	w->go = true;
	uv_cond_signal(&w->cv);
	uv_mutex_unlock(&w->mu);
	while (atomic_load(&w->drained[0]) < NREQ || atomic_load(&w->drained[1]) < NREQ)
		uv_run(&w->loops[0], UV_RUN_ONCE);
	assert_int_equal(atomic_load(&w->bad), 0);
	assert_int_equal(scsitgt__rbd_loops_inflight(&w->set), 0);
	assert_ptr_equal(w->lp[1], again);

	/* The close: one request still on the "librbd" thread. */
	worker_do(w, W_LATE);
	scsitgt__rbd_loops_close(&w->set, closed, w);
	while (w->closed == 0)
		uv_run(&w->loops[0], UV_RUN_ONCE);
	assert_int_equal(w->closed, 1);
	worker_do(w, W_STOP);
	assert_int_equal(uv_thread_join(&w->worker), 0);
	assert_int_equal(uv_loop_close(&w->loops[1]), 0);
	/* Now "librbd" finishes the late one: its queue is still there for it. */
	uv_mutex_lock(&w->mu);
	w->quit = true;
	uv_cond_signal(&w->cv);
	uv_mutex_unlock(&w->mu);
	assert_int_equal(uv_thread_join(&w->rbd), 0);
	assert_null(w->head);
	uv_close((uv_handle_t *)&w->home_wake, NULL);
	assert_int_equal(uv_run(&w->loops[0], UV_RUN_DEFAULT), 0);
	assert_int_equal(uv_loop_close(&w->loops[0]), 0);
	assert_int_equal(w->closed, 1);
	assert_int_equal(atomic_load(&w->bad), 0);
	uv_sem_destroy(&w->wdone);
	uv_cond_destroy(&w->cv);
	uv_mutex_destroy(&w->mu);
	free(w);
}

static void count_closed(void *arg)
{
	(*(unsigned int *)arg)++;
}

/* A context that never started (open() failed first) closes at once, from inside. */
static void test_close_unstarted(void **state)
{
	struct scsitgt__rbd_loops set;
	unsigned int n = 0;

	(void)state;
	memset(&set, 0, sizeof(set));
	scsitgt__rbd_loops_close(&set, count_closed, &n);
	assert_int_equal(n, 1);
	assert_int_equal(scsitgt__rbd_loops_inflight(&set), 0);
}

struct held {
	struct scsitgt__rbd_cq_node cq;
	struct scsitgt__rbd_loop *lp;
	unsigned int drained;
	unsigned int closed;
	/* Whether the request was drained before the close called back. */
	bool drained_first;
};

static void held_drain(void *arg, struct scsitgt__rbd_loop *lp, struct scsitgt__rbd_cq_node *node)
{
	struct held *h = arg;

	if (node == &h->cq && lp == h->lp) {
		h->drained++;
		h->drained_first = h->closed == 0;
	}
	scsitgt__rbd_loop_end(lp);
}

static void held_closed(void *arg)
{
	((struct held *)arg)->closed++;
}

/* librbd's thread giving the request back. */
static void held_post(void *arg)
{
	struct held *h = arg;

	scsitgt__rbd_loop_post(h->lp, &h->cq);
}

/*
 * The close with a request still in "librbd" (begun and handed over, as rbd_io.c's submit
 * does): the close does not call back until that request came back and was drained on its
 * loop; then it does, once, and nothing is left on the loop. (Before, the queue was torn down
 * at once: the close called back and the request was never drained.)
 */
static void test_close_waits(void **state)
{
	struct scsitgt__rbd_loops set;
	struct scsitgt__logger log = { 0 };
	struct held h = { 0 };
	uv_thread_t rbd;
	uv_loop_t loop;

	(void)state;
	memset(&set, 0, sizeof(set));
	assert_int_equal(uv_loop_init(&loop), 0);
	assert_int_equal(scsitgt__rbd_loops_start(&set, &loop, held_drain, &h, &log), 0);
	assert_int_equal(scsitgt__rbd_loop_get(&set, &loop, &h.lp), 0);
	scsitgt__rbd_loop_begin(h.lp);
	scsitgt__rbd_loop_hold(h.lp);
	scsitgt__rbd_loops_close(&set, held_closed, &h);
	assert_int_equal(h.closed, 0);
	assert_int_equal(h.drained, 0);
	assert_int_equal(uv_thread_create(&rbd, held_post, &h), 0);
	while (h.closed == 0 && uv_run(&loop, UV_RUN_ONCE) != 0)
		;
	assert_int_equal(uv_thread_join(&rbd), 0);
	assert_int_equal(h.drained, 1);
	assert_true(h.drained_first);
	assert_int_equal(h.closed, 1);
	assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_loops),
		cmocka_unit_test(test_close_unstarted),
		cmocka_unit_test(test_close_waits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
