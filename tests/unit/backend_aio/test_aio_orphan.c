/* SPDX-License-Identifier: MIT */
/*
 * An engine destroyed while a backend on a worker loop still holds an io (docs/threading.md,
 * "Teardown"): the fault backend wraps an aio LUN and holds a READ of the worker's nexus, so
 * that the worker loop carries the fault backend's handle for that io and the aio backend's
 * kernel context of that loop (its eventfd poll and close message). The engine's destroy does
 * not wait for them (its callback comes, bounded by the drain timeout); the worker loop goes on
 * running them, so that the host, which owns the backend's context again, can still release
 * the io (its late completion frees it) and close the backend, whose context on the worker
 * loop is torn down there; then the host's loop ends with nothing left on it. Without that the
 * release and the close never reach the worker loop and the last step waits forever (the test
 * fails by its timeout). Runs once per engine (AIO_TEST_ENGINE) and under the TSan build.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "aio_test_util.h"
#include "backend/aio_hooks.h"
#include "core/scsi_spec.h"
#include "libscsitgt/backend_fault.h"
#include "libscsitgt/scsitgt.h"
#include "util/be.h"
#include "xshard_world.h"

#define BS 512u
#define NBLOCKS 1024u

static void cdb_rw(struct xw_cmd *x, struct scsitgt__session *s, uint8_t op)
{
	memset(x, 0, sizeof(*x));
	x->sess = s;
	x->cdb[0] = op;
	put_be16(&x->cdb[7], 1);
	x->cdb_len = 10;
	x->dout_len = op == SBC_WRITE_10 ? BS : 0;
}

static void flag_done(void *arg, int status)
{
	assert_int_equal(status, 0);
	*(bool *)arg = true;
}

static void test_io_held_on_worker_at_shutdown(void **state)
{
	const char *dir = *state;
	char *path = aio_test_file(dir, (off_t)NBLOCKS * BS);
	struct scsitgt_backend_aio_opts o;
	struct scsitgt_lun_opts lo;
	struct scsitgt_fault_stats st;
	struct xw_world *w;
	struct xw_cmd x, held;
	void *actx, *fctx;
	bool gone = false;

	if (path == NULL) {
		print_message("no scratch file in %s: skipped\n", dir);
		skip();
	}
	xw_world_create(&w, "iqn.2024-01.org.example:aioorphan");
	/* the removal of a LUN whose io never returns gives up at once */
	assert_int_equal(scsitgt_engine_set_drain_timeout(w->engine, 1), 0);
	aio_test_opts(&o, &w->loop, path);
	assert_int_equal(scsitgt_backend_aio_create(&actx, &o), 0);
	assert_int_equal(
		scsitgt_backend_fault_create(&fctx, &w->loop, scsitgt_backend_aio_ops(), actx), 0);
	scsitgt_lun_opts_init(&lo, sizeof(lo));
	lo.block_size = BS;
	lo.num_blocks = NBLOCKS;
	lo.backend = scsitgt_backend_fault_ops(fctx);
	lo.backend_ctx = fctx;
	assert_true(lo.backend->flags & SCSITGT_BACKEND_MULTI_LOOP);
	xw_world_start(w, &lo);

	/* a WRITE of the worker's nexus: the worker loop gets its own aio context */
	cdb_rw(&x, w->b, SBC_WRITE_10);
	assert_int_equal(xw_run(w, &x), SAM_STAT_GOOD);
	assert_int_equal(scsitgt__backend_aio_loop_count(actx), 2);
	/* a READ the fault backend holds on the worker loop (never answered: its nexus goes) */
	assert_int_equal(scsitgt_backend_fault_add_spec(fctx, "hang@read"), 1);
	cdb_rw(&held, w->b, SBC_READ_10);
	xw_start(w, &held);
	memset(&st, 0, sizeof(st));
	st.size = sizeof(st);
	assert_int_equal(scsitgt_backend_fault_get_stats(fctx, &st), 0);
	assert_int_equal(st.held, 1);

	/* the engine goes; its callback does not wait for the held io */
	scsitgt__session_destroy(w->b);
	scsitgt__session_destroy(w->a);
	scsitgt_engine_destroy(w->engine, flag_done, &gone);
	while (!gone)
		uv_run(&w->loop, UV_RUN_ONCE);
	/* the host owns the fault context again: the io completes (on the worker loop, which
	 * frees it), then the wrapped aio context closes, the worker's part on the worker loop */
	assert_int_equal(scsitgt_backend_fault_release(fctx, 0, -EIO), 1);
	assert_int_equal(scsitgt_backend_fault_destroy(fctx), 0);
	/* until the aio context's last handle on this loop is closed (the worker's teardown
	 * wakes it) */
	uv_run(&w->loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&w->loop), 0);
	free(w);
	aio_test_file_remove(path);
}

int main(void)
{
	static const char *var_tmp = "/var/tmp";
	static const char *dev_shm = "/dev/shm";
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_prestate(test_io_held_on_worker_at_shutdown, (void *)var_tmp),
		cmocka_unit_test_prestate(test_io_held_on_worker_at_shutdown, (void *)dev_shm),
	};

	aio_test_engine_require();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
