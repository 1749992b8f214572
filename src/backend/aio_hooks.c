/* SPDX-License-Identifier: MIT */
/*
 * The aio backend's test hooks (aio_hooks.h, for tests/unit/backend_aio): pretend the kernel
 * lacks RWF_DSYNC or aio fdsync, inject a writeback error or kernel results, cap the depth of
 * another loop's context, fail submissions, and count flushes, kernel read/write completions,
 * loops and punting rings. Each reads or writes
 * the fields of struct aio_ctx (aio_int.h) that carry it; scsitgt__backend_aio_refuse_uring
 * stays in aio.c, beside the engine choice whose file-local switch it sets.
 */
#include <stdatomic.h>
#include <stdbool.h>

#include "backend/aio_hooks.h"
#include "backend/aio_int.h"
#include "scsitgt_config.h"

void scsitgt__backend_aio_set_kernel_caps(void *bctx, bool rwf_dsync, bool fdsync)
{
	struct aio_ctx *ac = bctx;

	atomic_store_explicit(&ac->rwf_dsync_ok, rwf_dsync, memory_order_relaxed);
	atomic_store_explicit(&ac->fdsync_ok, fdsync, memory_order_relaxed);
}

void scsitgt__backend_aio_inject_sync_error(void *bctx, int err)
{
	struct aio_ctx *ac = bctx;

	atomic_store_explicit(&ac->sync_error_inject, err, memory_order_relaxed);
}

void scsitgt__backend_aio_inject_result(void *bctx, long res, int count)
{
	struct aio_ctx *ac = bctx;

	ac->test_event_inject_res = res;
	atomic_store_explicit(&ac->test_event_inject_n, count, memory_order_relaxed);
}

void scsitgt__backend_aio_limit_loop_depth(void *bctx, unsigned int depth)
{
	struct aio_ctx *ac = bctx;

	ac->test_loop_depth_limit = depth;
}

unsigned long scsitgt__backend_aio_syncs(void *bctx)
{
	struct aio_ctx *ac = bctx;

	return atomic_load_explicit(&ac->syncs, memory_order_relaxed);
}

unsigned long scsitgt__backend_aio_dsync_writes(void *bctx)
{
	struct aio_ctx *ac = bctx;

	return atomic_load_explicit(&ac->dsync_writes, memory_order_relaxed);
}

unsigned long scsitgt__backend_aio_rw_events(void *bctx)
{
	struct aio_ctx *ac = bctx;
	unsigned long n = 0;

	for (struct scsitgt__loop_ctx *lc = scsitgt__loop_ctxs_next(&ac->loops, NULL); lc;
	     lc = scsitgt__loop_ctxs_next(&ac->loops, lc)) {
		n += atomic_load_explicit(&((struct aio_loop *)lc)->rw_events,
					  memory_order_relaxed);
	}
	return n;
}

void scsitgt__backend_aio_fail_submit(void *bctx, int err, int count)
{
	struct aio_ctx *ac = bctx;

	ac->test_submit_err = err;
	atomic_store_explicit(&ac->test_submit_fail_n, count, memory_order_relaxed);
}

int scsitgt__aio_test_submit_fail(struct aio_ctx *ac)
{
	if (atomic_load_explicit(&ac->test_submit_fail_n, memory_order_relaxed) > 0 &&
	    atomic_fetch_sub_explicit(&ac->test_submit_fail_n, 1, memory_order_relaxed) > 0) {
		return ac->test_submit_err;
	}
	return 0;
}

unsigned int scsitgt__backend_aio_loop_count(void *bctx)
{
	struct aio_ctx *ac = bctx;

	return scsitgt__loop_ctxs_count(&ac->loops);
}

unsigned int scsitgt__backend_aio_uring_punting_loops(void *bctx)
{
	unsigned int n = 0;
#if SCSITGT_HAVE_URING
	struct aio_ctx *ac = bctx;

	/* uring_punt is set by the context's setup, before the context is published. */
	for (struct scsitgt__loop_ctx *lc = scsitgt__loop_ctxs_next(&ac->loops, NULL); lc;
	     lc = scsitgt__loop_ctxs_next(&ac->loops, lc)) {
		n += ((struct aio_loop *)lc)->uring_punt ? 1u : 0u;
	}
#else
	(void)bctx;
#endif
	return n;
}
