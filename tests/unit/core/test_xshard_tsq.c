/* SPDX-License-Identifier: MIT */
/*
 * A backend thread's scsitgt_io_complete_threadsafe() of a worker shard's io racing the engine's
 * shutdown (issue 18, reviewi D2). The thread moves the io LENT -> QUEUED, then posts it to the
 * worker's inbox; preempted in between while the engine gives up on the io (its LUN's drain
 * timed out) and stops, its post reached a closed inbox, the engine's freed shards and the
 * workers' freed array. The stop of that worker now waits for the completion to arrive.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/cmd.h"
#include "core/core.h"
#include "core/scsi_spec.h"
#include "core/shard.h"
#include "fake_backend.h"
#include "xshard_world.h"

/* The backend thread, stopped between the two halves of scsitgt_io_complete_threadsafe(). */
struct late {
	struct scsitgt_io *io;
	uv_sem_t go;
	uv_thread_t thread;
};

static void late_post(void *arg)
{
	struct late *l = arg;

	uv_sem_wait(&l->go);
	/* the second half, as io.c does it after its exchange */
	l->io->status = -EIO;
	scsitgt__shard_post_io(l->io->shard, l->io);
}

static void flag_done(void *arg, int status)
{
	(void)status;
	*(bool *)arg = true;
}

static void test_threadsafe_completion_across_shutdown(void **state)
{
	struct xw_world *w;
	struct fake_backend_opts o;
	struct fake_backend *fb;
	struct scsitgt_lun_opts lo;
	struct scsitgt__shard *ws;
	struct xw_cmd held;
	struct late l;
	int lent = SCSITGT__IO_LENT;
	bool gone = false, closed = false;

	(void)state;
	xw_world_create(&w, "iqn.2024-01.org.example:tsq");
	/* the engine gives up on a held io at once */
	assert_int_equal(scsitgt_engine_set_drain_timeout(w->engine, 1), 0);
	fake_backend_opts_init(&o);
	o.mode = FAKE_MANUAL;
	o.block_size = 512;
	o.num_blocks = 1024;
	assert_int_equal(fake_backend_create(&fb, &o), 0);
	/* its ios stay on the worker's loop (a host backend of its own threads) */
	fb->ops.flags |= SCSITGT_BACKEND_MULTI_LOOP;
	fb->closed_flag = &closed;
	scsitgt_lun_opts_init(&lo, sizeof(lo));
	lo.block_size = 512;
	lo.num_blocks = 1024;
	lo.backend = &fb->ops;
	lo.backend_ctx = fb;
	xw_world_start(w, &lo);
	ws = &w->engine->shards[1];
	xw_rw10(&held, w->b, SBC_READ_10, 0, 1);
	xw_start(w, &held);
	while (__atomic_load_n(&fb->npending, __ATOMIC_ACQUIRE) == 0)
		xw_settle(w);
	pthread_mutex_lock(&fb->lock);
	l.io = fb->pending[0];
	fb->npending = 0;
	pthread_mutex_unlock(&fb->lock);
	assert_ptr_equal(l.io->shard, ws);
	/* the backend thread's exchange... */
	assert_true(atomic_compare_exchange_strong(&l.io->tstate, &lent, SCSITGT__IO_QUEUED));
	assert_int_equal(uv_sem_init(&l.go, 0), 0);
	assert_int_equal(uv_thread_create(&l.thread, late_post, &l), 0);
	/* ...and it is preempted while the host destroys the engine */
	scsitgt__session_destroy(w->b);
	scsitgt__session_destroy(w->a);
	scsitgt_engine_destroy(w->engine, flag_done, &gone);
	/* the worker's stop waits for the completion on its way (before: the engine went) */
	while (!gone && !atomic_load(&ws->stop_waits))
		uv_run(&w->loop, UV_RUN_NOWAIT);
	assert_false(gone);
	/* the thread goes on: its post arrives, frees the io, and the engine ends */
	uv_sem_post(&l.go);
	while (!gone)
		uv_run(&w->loop, UV_RUN_ONCE);
	uv_thread_join(&l.thread);
	uv_sem_destroy(&l.go);
	uv_run(&w->loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&w->loop), 0);
	free(w);
	/* the engine closed the backend if everything came back before it let go of the LUN;
	 * else the host does */
	if (!closed)
		fake_backend_destroy(fb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_threadsafe_completion_across_shutdown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
