/* SPDX-License-Identifier: MIT */
/*
 * A LUN removal that times out while commands of another shard wait on its range lock
 * (range_lock.h) behind a COMPARE AND WRITE whose READ the backend holds: the waiters end
 * aborted on their own loop (the worker's), at once, not when the holder comes back; the holder
 * ends aborted on home when it does (core/drain.c; SAM-5 §5.6). An engine with one worker
 * loop: nexus A on home, nexus B on the worker (tests/support/xshard_world.h). Run under the
 * TSan build as well.
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

#include "core/scsi_spec.h"
#include "libscsitgt/backend_fault.h"
#include "libscsitgt/scsitgt.h"
#include "util/be.h"
#include "xshard_world.h"

#define BS 512u

/* A RAM LUN behind the fault backend (w->bctx), every READ held. */
static int setup(void **state)
{
	struct scsitgt_lun_opts lo;
	struct xw_world *w;
	void *ram, *fault;

	xw_world_create(&w, "iqn.2024-01.org.example:xrange");
	assert_int_equal(scsitgt_backend_ram_create(&ram), 0);
	assert_int_equal(
		scsitgt_backend_fault_create(&fault, &w->loop, scsitgt_backend_ram_ops(), ram), 0);
	assert_int_equal(scsitgt_backend_fault_add_spec(fault, "hang@read"), 1);
	scsitgt_lun_opts_init(&lo, sizeof(lo));
	lo.block_size = BS;
	lo.num_blocks = 2048;
	lo.backend = scsitgt_backend_fault_ops(fault);
	lo.backend_ctx = fault;
	xw_world_start(w, &lo);
	*state = w;
	return 0;
}

static int teardown(void **state)
{
	struct xw_world *w = *state;

	if (w->bctx)
		scsitgt_backend_fault_release(w->bctx, 0, -EIO);
	xw_world_destroy(w);
	return 0;
}

static void x_caw(struct xw_cmd *x, struct scsitgt__session *s, uint64_t lba)
{
	memset(x, 0, sizeof(*x));
	x->sess = s;
	x->cdb[0] = SBC_COMPARE_AND_WRITE;
	put_be64(&x->cdb[2], lba);
	x->cdb[13] = 1;
	x->cdb_len = 16;
	x->dout_len = 2 * BS;
}

static void x_read(struct xw_cmd *x, struct scsitgt__session *s, uint64_t lba)
{
	memset(x, 0, sizeof(*x));
	x->sess = s;
	x->cdb[0] = SBC_READ_10;
	put_be32(&x->cdb[2], (uint32_t)lba);
	put_be16(&x->cdb[7], 1);
	x->cdb_len = 10;
}

static void x_write_atomic(struct xw_cmd *x, struct scsitgt__session *s, uint64_t lba)
{
	memset(x, 0, sizeof(*x));
	x->sess = s;
	x->cdb[0] = SBC_WRITE_ATOMIC_16;
	put_be64(&x->cdb[2], lba);
	put_be16(&x->cdb[12], 1);
	x->cdb_len = 16;
	x->dout_len = BS;
}

static unsigned int held(struct xw_world *w)
{
	struct scsitgt_fault_stats st = { .size = sizeof(st) };

	assert_int_equal(scsitgt_backend_fault_get_stats(w->bctx, &st), 0);
	return (unsigned int)st.held;
}

struct lun_gone {
	_Atomic int done;
};

static void lun_destroyed(void *arg, int status)
{
	(void)status;
	atomic_store(&((struct lun_gone *)arg)->done, 1);
}

static void test_waiters_on_worker(void **state)
{
	struct xw_world *w = *state;
	struct xw_cmd caw, rd, wa;
	struct lun_gone g = { 0 };

	assert_int_equal(scsitgt_engine_set_drain_timeout(w->engine, 20), 0);
	x_caw(&caw, w->a, 24);
	xw_start(w, &caw);
	xw_settle(w);
	assert_int_equal(held(w), 1);
	x_read(&rd, w->b, 24);
	xw_start(w, &rd);
	x_write_atomic(&wa, w->b, 24);
	xw_start(w, &wa);
	xw_settle(w);
	/* both wait for the exclusive entry: nothing more reached the backend */
	assert_int_equal(held(w), 1);
	assert_false(xw_finished(&rd) || xw_finished(&wa));
	scsitgt_lun_destroy(w->lun, lun_destroyed, &g);
	w->lun = NULL;
	xw_wait_flag(w, &g.done);
	xw_wait(w, &rd);
	xw_wait(w, &wa);
	assert_int_equal(atomic_load(&rd.ended), XW_ABORTED);
	assert_false(atomic_load(&rd.ended_on_home));
	assert_int_equal(atomic_load(&wa.ended), XW_ABORTED);
	assert_false(atomic_load(&wa.ended_on_home));
	assert_false(xw_finished(&caw));
	/* the holder's READ comes back: it ends aborted, and the LUN closes its backend */
	scsitgt_backend_fault_release(w->bctx, 0, 0);
	w->bctx = NULL;
	xw_wait(w, &caw);
	assert_int_equal(atomic_load(&caw.ended), XW_ABORTED);
	assert_true(atomic_load(&caw.ended_on_home));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_waiters_on_worker, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
