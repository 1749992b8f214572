/* SPDX-License-Identifier: MIT */
/*
 * A LUN removal that times out while commands of another shard wait on its range lock
 * (range_lock.h) behind a COMPARE AND WRITE whose READ the backend holds: the waiters end
 * aborted on their own loop (the worker's), at once, not when the holder comes back; the holder
 * ends aborted on home when it does (core/drain.c; SAM-5 §5.6). An engine with one worker
 * loop: nexus A on home, nexus B on the worker (tests/support/xshard_world.h). Run under the
 * TSan build as well.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cdb_build.h"
#include "core/scsi_spec.h"
#include "libscsitgt/backend_fault.h"
#include "libscsitgt/scsitgt.h"
#include "util/be.h"
#include "xshard_world.h"

/* A RAM LUN behind the fault backend (w->bctx), every READ held. */
static int setup(void **state)
{
	struct xw_world *w;

	xw_world_create(&w, "iqn.2024-01.org.example:xrange");
	xw_world_start_fault(w, "hang@read");
	*state = w;
	return 0;
}

static void x_write_atomic(struct xw_cmd *x, struct scsitgt__session *s, uint64_t lba)
{
	xw_cmd_init(x, s, SBC_WRITE_ATOMIC_16, 16);
	cdb_write_atomic16(x->cdb, lba, 0, 1, 0);
	x->dout_len = 512;
}

static void test_waiters_on_worker(void **state)
{
	struct xw_world *w = *state;
	struct xw_cmd caw, rd, wa;

	assert_int_equal(scsitgt_engine_set_drain_timeout(w->engine, 20), 0);
	xw_caw(&caw, w->a, 24, 0);
	xw_start(w, &caw);
	xw_settle(w);
	assert_int_equal(xw_fault_stats(w).held, 1);
	xw_rw10(&rd, w->b, SBC_READ_10, 24, 1);
	xw_start(w, &rd);
	x_write_atomic(&wa, w->b, 24);
	xw_start(w, &wa);
	xw_settle(w);
	/* both wait for the exclusive entry: nothing more reached the backend */
	assert_int_equal(xw_fault_stats(w).held, 1);
	assert_false(xw_finished(&rd) || xw_finished(&wa));
	xw_lun_remove(w);
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
		cmocka_unit_test_setup_teardown(test_waiters_on_worker, setup, xw_teardown_fault),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
