/* SPDX-License-Identifier: MIT */
/*
 * Worker threads: each runs its own uv loop with an inbox (see worker.h). The home loop starts
 * them with the engine and stops them last when the engine is destroyed, after every
 * connection placed on them is closed.
 *
 * An inbox wakes its loop through an eventfd: the poster that finds the queue empty writes 1
 * to it, the loop's poll callback reads it back to 0 and only then takes the queue, so a post
 * that lands after the take finds the queue empty again and wakes the loop again. No wake-up
 * is lost and none spins.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "core/core.h"
#include "core/worker.h"

/*
 * The workers' array and how many still use it: home until its workers are stopped, and each
 * worker whose loop runs on for a backend after that (worker_main()). The last one frees it.
 */
struct workers_mem {
	atomic_uint users;
	struct scsitgt__worker w[];
};

static struct workers_mem *workers_mem(struct scsitgt__worker *ws)
{
	return (struct workers_mem *)((char *)ws - offsetof(struct workers_mem, w));
}

static void workers_unref(struct scsitgt__worker *ws)
{
	struct workers_mem *m = workers_mem(ws);

	if (atomic_fetch_sub_explicit(&m->users, 1, memory_order_acq_rel) == 1)
		free(m);
}

void scsitgt__inbox_drain(struct scsitgt__inbox *inbox)
{
	struct scsitgt__mpsc_node *n = scsitgt__mpsc_take_all(&inbox->q);

	while (n) {
		struct scsitgt__msg *m = scsitgt__container_of(n, struct scsitgt__msg, node);

		/* The handler may free or re-post the message: step first. */
		n = n->next;
		m->fn(m);
	}
}

static void inbox_poll_cb(uv_poll_t *h, int status, int events)
{
	struct scsitgt__inbox *inbox = h->data;
	uint64_t v;

	(void)status;
	(void)events;
	/* Reset the counter before taking the queue (see the top of this file). */
	while (read(inbox->efd, &v, sizeof(v)) < 0 && errno == EINTR) {
	}
	scsitgt__inbox_drain(inbox);
}

int scsitgt__inbox_init(struct scsitgt__inbox *inbox, uv_loop_t *loop)
{
	int rc;

	scsitgt__mpsc_init(&inbox->q);
	atomic_init(&inbox->lazy, false);
	inbox->open = false;
	inbox->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (inbox->efd < 0)
		return -errno;
	rc = uv_poll_init(loop, &inbox->poll, inbox->efd);
	if (rc < 0) {
		close(inbox->efd);
		return rc;
	}
	inbox->poll.data = inbox;
	/* From here the handle exists: on failure the caller closes it (inbox->open). */
	inbox->open = true;
	return uv_poll_start(&inbox->poll, UV_READABLE, inbox_poll_cb);
}

static void inbox_closed(uv_handle_t *h)
{
	struct scsitgt__inbox *inbox = h->data;

	close(inbox->efd);
	inbox->efd = -1;
	if (inbox->closed_cb)
		inbox->closed_cb(inbox);
}

void scsitgt__inbox_close(struct scsitgt__inbox *inbox, void (*cb)(struct scsitgt__inbox *inbox))
{
	if (!inbox->open)
		return;
	inbox->open = false;
	inbox->closed_cb = cb;
	uv_close((uv_handle_t *)&inbox->poll, inbox_closed);
}

static void inbox_wake(struct scsitgt__inbox *inbox)
{
	uint64_t one = 1;

	/* Cannot fail but for a counter at 2^64 - 2, which a drain resets long before. */
	while (write(inbox->efd, &one, sizeof(one)) < 0 && errno == EINTR) {
	}
}

static void inbox_post(struct scsitgt__inbox *inbox, struct scsitgt__msg *msg)
{
	/* The push that finds the queue empty wakes the loop (a later one finds it woken), and
	 * so does one that finds lazily posted messages in front of it: those did not wake it. */
	bool was_empty = scsitgt__mpsc_push(&inbox->q, &msg->node);

	if (was_empty || (atomic_load_explicit(&inbox->lazy, memory_order_relaxed) &&
			  atomic_exchange(&inbox->lazy, false)))
		inbox_wake(inbox);
}

void scsitgt__worker_post(struct scsitgt__worker *w, struct scsitgt__msg *msg)
{
	inbox_post(&w->inbox, msg);
}

void scsitgt__engine_post(struct scsitgt_engine *engine, struct scsitgt__msg *msg)
{
	inbox_post(engine->home_inbox, msg);
}

static void worker_lazy_cb(uv_timer_t *t)
{
	struct scsitgt__worker *w = t->data;
	struct scsitgt__inbox *home = w->engine->home_inbox;

	if (atomic_exchange(&home->lazy, false))
		inbox_wake(home);
}

void scsitgt__engine_post_lazy(struct scsitgt__worker *w, struct scsitgt__msg *msg)
{
	struct scsitgt__inbox *home = w->engine->home_inbox;

	/* Flag first: a wake-up that sees the flag also covers this message (or the timer
	 * does). */
	atomic_store(&home->lazy, true);
	scsitgt__mpsc_push(&home->q, &msg->node);
	if (!uv_is_active((uv_handle_t *)&w->lazy_timer))
		uv_timer_start(&w->lazy_timer, worker_lazy_cb, SCSITGT__LAZY_MS, 0);
}

/* The worker's own handles are closed: its loop ends now, even if a backend keeps a handle
 * of its own there (an io the engine gave up on, core/drain.c). */
static void worker_inbox_closed(struct scsitgt__inbox *inbox)
{
	uv_stop(inbox->poll.loop);
}

/* Worker side of the stop: close the inbox and the timer; the loop ends with them. */
static void worker_stop_now(struct scsitgt__worker *w)
{
	struct scsitgt__shard *shard = w->shard;

	/* A backend thread whose completion came already may still be in its post: its
	 * wake-up writes to the eventfd (a few instructions away). */
	while (shard && atomic_load(&shard->tsq_senders))
		sched_yield();
	uv_close((uv_handle_t *)&w->lazy_timer, NULL);
	scsitgt__inbox_close(&w->inbox, worker_inbox_closed);
}

static void worker_stop_fn(struct scsitgt__msg *msg)
{
	struct scsitgt__worker *w = scsitgt__container_of(msg, struct scsitgt__worker, stop_msg);

	/* Completions given up on but on their way to this inbox come first: after the stop
	 * their post would reach a closed (then freed) inbox. They arrive soon, the backend
	 * thread is past its exchange (scsitgt_io_complete_threadsafe()). */
	if (w->shard && w->shard->orphan_queued) {
		atomic_store(&w->shard->stop_waits, true);
		return;
	}
	worker_stop_now(w);
}

void scsitgt__worker_orphan_arrived(struct scsitgt__shard *shard)
{
	if (--shard->orphan_queued == 0 && atomic_load(&shard->stop_waits)) {
		atomic_store(&shard->stop_waits, false);
		worker_stop_now(shard->worker);
	}
}

static void home_inbox_closed(struct scsitgt__inbox *inbox)
{
	struct scsitgt_engine *engine = inbox->data;
	void (*cb)(void *, int) = engine->workers_stop_cb;
	void *arg = engine->workers_stop_arg;

	/* Every message of the workers ran; nothing can post any more. */
	scsitgt__inbox_drain(inbox);
	free(inbox);
	engine->home_inbox = NULL;
	/* A loop a backend still uses (worker_main()) keeps the array until it ends. */
	workers_unref(engine->workers);
	engine->workers = NULL;
	engine->nworkers = 0;
	engine->workers_stop_cb = NULL;
	if (cb)
		cb(arg, 0);
}

/* Home side: a worker left its loop; join it (it is about to return). */
static void worker_exit_fn(struct scsitgt__msg *msg)
{
	struct scsitgt__worker *w = scsitgt__container_of(msg, struct scsitgt__worker, exit_msg);
	struct scsitgt_engine *engine = w->engine;

	/* One whose loop runs on for a backend is detached: it ends by itself. Its post of
	 * this message may not have returned yet (the message is in the queue before the
	 * post's wake-up): wait for it as a join would, since the last exit closes and frees
	 * the inbox it uses (a few instructions and one write(2) away). */
	if (w->loop_busy) {
		while (!atomic_load_explicit(&w->exit_posted, memory_order_acquire))
			sched_yield();
		scsitgt__log(&engine->log, SCSITGT_LOG_WARNING, "core",
			     "worker %u: a backend keeps handles on its loop (ios given up at "
			     "shutdown); the loop runs on until the backend closes them",
			     w->index);
	} else {
		uv_thread_join(&w->thread);
	}
	w->started = false;
	if (--engine->workers_running == 0)
		scsitgt__inbox_close(engine->home_inbox, home_inbox_closed);
}

static void worker_main(void *arg)
{
	struct scsitgt__worker *w = arg;
	sigset_t pipe_set;
	char name[16];
	int rc;

	/* "scsitgt-w<N>" in top -H, ps -L, /proc/<pid>/task/<tid>/comm (15 bytes at most). */
	snprintf(name, sizeof(name), "scsitgt-w%u", w->index);
	(void)pthread_setname_np(pthread_self(), name);
	/* This thread writes sockets: a peer's reset must fail the write with EPIPE, not raise
	 * SIGPIPE, whose default action ends the host's process. The thread is the library's,
	 * so it blocks the signal (the home thread is the host's: docs/threading.md). */
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	(void)pthread_sigmask(SIG_BLOCK, &pipe_set, NULL);
	uv_run(&w->loop, UV_RUN_DEFAULT);
	/* Stopped once the inbox closed: handles closed in that pass finish closing. */
	for (int i = 0; (rc = uv_loop_close(&w->loop)) == UV_EBUSY && i < 8; i++)
		uv_run(&w->loop, UV_RUN_NOWAIT);
	if (rc != UV_EBUSY) {
		/* The last touch of the worker from this thread: home joins it. */
		scsitgt__engine_post(w->engine, &w->exit_msg);
		return;
	}
	/*
	 * A backend keeps handles of its own here (SCSITGT_BACKEND_MULTI_LOOP: an io the
	 * engine gave up on at shutdown, core/drain.c, comes back through them, and its close(),
	 * called by the host that got the backend's context back, tears them down on this loop).
	 * The engine does not wait for it (its destroy stays bounded): the thread detaches and
	 * runs the loop for the backend alone, without touching the engine again, until the
	 * backend's last handle is closed; then it closes the loop and ends. A backend that
	 * never closes keeps the thread (blocked in the kernel) and the loop.
	 */
	w->loop_busy = true;
	atomic_fetch_add_explicit(&workers_mem(w - w->index)->users, 1, memory_order_relaxed);
	(void)pthread_detach(pthread_self());
	scsitgt__engine_post(w->engine, &w->exit_msg);
	/* The last touch of the engine from this thread (worker_exit_fn() waits for it). */
	atomic_store_explicit(&w->exit_posted, true, memory_order_release);
	do {
		uv_run(&w->loop, UV_RUN_DEFAULT);
		rc = uv_loop_close(&w->loop);
	} while (rc == UV_EBUSY && uv_loop_alive(&w->loop));
	/* Unreferenced handles left: the loop stays allocated, as the array with it. */
	if (rc == 0)
		workers_unref(w - w->index);
}

static int worker_init(struct scsitgt_engine *engine, struct scsitgt__worker *w, unsigned int i)
{
	int rc;

	w->engine = engine;
	w->index = i;
	w->stop_msg.fn = worker_stop_fn;
	w->exit_msg.fn = worker_exit_fn;
	atomic_init(&w->exit_posted, false);
	rc = uv_loop_init(&w->loop);
	if (rc < 0)
		return rc;
	rc = scsitgt__inbox_init(&w->inbox, &w->loop);
	if (rc < 0) {
		scsitgt__inbox_close(&w->inbox, NULL);
		uv_run(&w->loop, UV_RUN_NOWAIT);
		uv_loop_close(&w->loop);
		return rc;
	}
	uv_timer_init(&w->loop, &w->lazy_timer); /* cannot fail */
	w->lazy_timer.data = w;
	/* It only hurries messages along: it never keeps the loop alive. */
	uv_unref((uv_handle_t *)&w->lazy_timer);
	return 0;
}

/* Undo worker_init() of a worker whose thread never ran. */
static void worker_fini_unstarted(struct scsitgt__worker *w)
{
	scsitgt__inbox_close(&w->inbox, NULL);
	uv_close((uv_handle_t *)&w->lazy_timer, NULL);
	uv_run(&w->loop, UV_RUN_NOWAIT);
	uv_loop_close(&w->loop);
}

static void home_inbox_discard(struct scsitgt__inbox *inbox)
{
	/* Exit messages of workers joined synchronously: nothing left to do with them. It is
	 * its own allocation, so this may run after a failed engine is gone. */
	scsitgt__mpsc_take_all(&inbox->q);
	free(inbox);
}

int scsitgt__workers_start(struct scsitgt_engine *engine, unsigned int n)
{
	struct workers_mem *mem;
	struct scsitgt__worker *ws;
	unsigned int i;
	int rc = 0;

	if (n == 0)
		return 0;
	mem = calloc(1, sizeof(*mem) + n * sizeof(mem->w[0]));
	engine->home_inbox = calloc(1, sizeof(*engine->home_inbox));
	if (mem == NULL || engine->home_inbox == NULL) {
		free(mem);
		free(engine->home_inbox);
		engine->home_inbox = NULL;
		return -ENOMEM;
	}
	atomic_init(&mem->users, 1);
	ws = mem->w;
	rc = scsitgt__inbox_init(engine->home_inbox, engine->loop);
	if (rc < 0) {
		/* A handle that exists closes later and frees the inbox then. */
		if (engine->home_inbox->open)
			scsitgt__inbox_close(engine->home_inbox, home_inbox_discard);
		else
			free(engine->home_inbox);
		engine->home_inbox = NULL;
		free(mem);
		return rc;
	}
	engine->home_inbox->data = engine;
	for (i = 0; i < n; i++) {
		rc = worker_init(engine, &ws[i], i);
		if (rc < 0)
			break;
		rc = uv_thread_create(&ws[i].thread, worker_main, &ws[i]);
		if (rc < 0) {
			worker_fini_unstarted(&ws[i]);
			break;
		}
		ws[i].started = true;
	}
	if (rc < 0) {
		/* Stop what runs already, synchronously: nothing else is on those loops. */
		while (i-- > 0) {
			scsitgt__worker_post(&ws[i], &ws[i].stop_msg);
			uv_thread_join(&ws[i].thread);
		}
		scsitgt__inbox_close(engine->home_inbox, home_inbox_discard);
		engine->home_inbox = NULL;
		free(mem);
		return rc;
	}
	engine->workers = ws;
	engine->nworkers = n;
	return 0;
}

void scsitgt__workers_stop(struct scsitgt_engine *engine, void (*cb)(void *cb_arg, int status),
			   void *cb_arg)
{
	engine->workers_running = engine->nworkers;
	if (engine->nworkers == 0) {
		if (cb)
			cb(cb_arg, 0);
		return;
	}
	engine->workers_stop_cb = cb;
	engine->workers_stop_arg = cb_arg;
	for (unsigned int i = 0; i < engine->nworkers; i++)
		scsitgt__worker_post(&engine->workers[i], &engine->workers[i].stop_msg);
}

struct scsitgt__worker *scsitgt__worker_pick(struct scsitgt_engine *engine)
{
	struct scsitgt__worker *best = NULL;

	for (unsigned int i = 0; i < engine->nworkers; i++) {
		struct scsitgt__worker *w = &engine->workers[i];

		if (best == NULL || w->nconns < best->nconns)
			best = w;
	}
	if (best)
		best->nconns++;
	return best;
}

void scsitgt__worker_unpick(struct scsitgt__worker *w)
{
	if (w && w->nconns)
		w->nconns--;
}

bool scsitgt__worker_is_self(const struct scsitgt_engine *engine, const struct scsitgt__worker *w)
{
	uv_thread_t self;

	if (w == NULL)
		return scsitgt__engine_on_home(engine);
	self = uv_thread_self();
	return uv_thread_equal(&w->thread, &self);
}

void scsitgt__loop_post(struct scsitgt_engine *engine, struct scsitgt__worker *w,
			struct scsitgt__msg *msg)
{
	if (w)
		scsitgt__worker_post(w, msg);
	else
		scsitgt__engine_post(engine, msg);
}
