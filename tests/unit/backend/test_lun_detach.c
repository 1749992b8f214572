/* SPDX-License-Identifier: MIT */
/*
 * The backend's detach op (backend.h): a backend that keeps its LUN's handle, as the RBD
 * backend does to report an image resize (scsitgt_backend_rbd_set_lun()), is told when the
 * LUN goes, whether its close() follows or an engine shutdown gives up on an io it holds.
 * Here the backend "sees its medium grow" at the worst moments, as librbd's update watch may:
 * after a LUN removal timed out, and after the engine gave up on the LUN and the held io came
 * back, which frees what is left of the LUN before the host closes the backend (scsitgtd's
 * shutdown with a fault rule in front of an RBD LUN). Without the op the second one resized
 * a freed LUN (AddressSanitizer: heap-use-after-free); in any build the counts below fail.
 */
#include <errno.h>

#include "test_util.h"

#include "core/scsi_spec.h"
#include "libscsitgt/backend_fault.h"

/* A backend that remembers its LUN, told by its host after scsitgt_lun_create(). */
struct keeper {
	struct scsitgt_lun *lun;
	bool hold; /* keep WRITEs (never completed until the test does) */
	struct scsitgt_io *held[4];
	unsigned int nheld;
	unsigned int detaches;
	unsigned int closes;
	int seq, detach_seq, close_seq;
};

static int keeper_open(void *bctx, struct scsitgt_lun_geometry *geo)
{
	(void)bctx;
	geo->block_size = 512;
	geo->num_blocks = 1024;
	return 0;
}

static int keeper_open_fail(void *bctx, struct scsitgt_lun_geometry *geo)
{
	(void)bctx;
	(void)geo;
	return -EIO;
}

static void keeper_close(void *bctx, scsitgt_done_cb cb, void *cb_arg)
{
	struct keeper *k = bctx;

	k->closes++;
	k->close_seq = ++k->seq;
	if (cb)
		cb(cb_arg, 0);
}

static void keeper_submit(void *bctx, struct scsitgt_io *io)
{
	struct keeper *k = bctx;

	if (k->hold && scsitgt_io_get_type(io) == SCSITGT_IO_WRITE) {
		assert_true(k->nheld < 4);
		k->held[k->nheld++] = io;
		return;
	}
	scsitgt_io_complete(io, 0);
}

static void keeper_detach(void *bctx, struct scsitgt_lun *lun)
{
	struct keeper *k = bctx;

	assert_ptr_equal(lun, k->lun);
	k->detaches++;
	k->detach_seq = ++k->seq;
	k->lun = NULL;
}

/* The medium changed size (librbd's update watch): tell the LUN, if the backend has one. */
static void keeper_medium_resized(struct keeper *k, uint64_t num_blocks)
{
	if (k->lun)
		assert_int_equal(scsitgt_lun_resize(k->lun, num_blocks), 0);
}

static const struct scsitgt_backend_ops keeper_ops = {
	.size = sizeof(struct scsitgt_backend_ops),
	.name = "keeper",
	.open = keeper_open,
	.close = keeper_close,
	.submit = keeper_submit,
	.detach = keeper_detach,
};

static void done_cb(void *arg, int status)
{
	assert_int_equal(status, 0);
	*(bool *)arg = true;
}

static struct scsitgt_lun *lun_add(struct loop_fabric *lf, const struct scsitgt_backend_ops *ops,
				   void *bctx, struct keeper *k)
{
	struct scsitgt_lun_opts lo;
	struct scsitgt_lun *lun;

	scsitgt_lun_opts_init(&lo, sizeof(lo));
	lo.id = 0;
	lo.backend = ops;
	lo.backend_ctx = bctx;
	assert_int_equal(scsitgt_lun_create(&lun, lf->tgt, &lo), 0);
	/* The host tells the backend its LUN (scsitgt_backend_rbd_set_lun()). */
	k->lun = lun;
	return lun;
}

static void start_write(struct loop_fabric *lf, uint8_t *cdb, uint8_t *buf, struct lf_result *r)
{
	memset(r, 0, sizeof(*r));
	loop_fabric_start(lf, 0, cdb, cdb_rw(cdb, SBC_WRITE_10, 7, 1, 0), buf, 512, r);
}

/* An ordinary removal: detach once, at the destroy, before close(). */
static void test_detach_before_close(void **state)
{
	struct keeper k = { 0 };
	struct loop_fabric *lf;
	struct scsitgt_lun *lun;
	bool destroyed = false;

	(void)state;
	assert_int_equal(loop_fabric_create(&lf, NULL), 0);
	lun = lun_add(lf, &keeper_ops, &k, &k);
	keeper_medium_resized(&k, 2048);
	scsitgt_lun_destroy(lun, done_cb, &destroyed);
	assert_int_equal(k.detaches, 1);
	assert_null(k.lun);
	loop_fabric_run_until(lf, &destroyed);
	assert_int_equal(k.closes, 1);
	assert_true(k.detach_seq < k.close_seq);
	loop_fabric_destroy(lf);
	assert_int_equal(k.detaches, 1);
}

/* A LUN whose creation failed was never the backend's: no detach (the host closes it). */
static void test_no_detach_when_create_fails(void **state)
{
	struct scsitgt_backend_ops ops = keeper_ops;
	struct keeper k = { 0 };
	struct scsitgt_lun_opts lo;
	struct scsitgt_lun *lun = NULL;
	struct loop_fabric *lf;

	(void)state;
	ops.open = keeper_open_fail;
	assert_int_equal(loop_fabric_create(&lf, NULL), 0);
	scsitgt_lun_opts_init(&lo, sizeof(lo));
	lo.backend = &ops;
	lo.backend_ctx = &k;
	assert_int_equal(scsitgt_lun_create(&lun, lf->tgt, &lo), -EIO);
	loop_fabric_destroy(lf);
	assert_int_equal(k.detaches, 0);
	assert_int_equal(k.closes, 0);
}

/* A removal that times out with a write in the backend: the backend was told at the destroy,
 * so a resize it sees while the LUN waits for that write (out of its target, its callback
 * run) reaches nothing; close() comes after the write, detach is not repeated. */
static void test_removal_timed_out(void **state)
{
	struct keeper k = { .hold = true };
	uint8_t cdb[CDB_BUF], buf[512] = { 0 };
	struct loop_fabric *lf;
	struct scsitgt_lun *lun;
	struct lf_result r;
	bool destroyed = false;

	(void)state;
	assert_int_equal(loop_fabric_create(&lf, NULL), 0);
	assert_int_equal(scsitgt_engine_set_drain_timeout(lf->engine, 20), 0);
	lun = lun_add(lf, &keeper_ops, &k, &k);
	start_write(lf, cdb, buf, &r);
	assert_int_equal(k.nheld, 1);
	scsitgt_lun_destroy(lun, done_cb, &destroyed);
	assert_int_equal(k.detaches, 1);
	loop_fabric_run_until(lf, &destroyed);
	assert_int_equal(k.closes, 0);
	keeper_medium_resized(&k, 4096);
	scsitgt_io_complete(k.held[0], 0);
	loop_fabric_wait(lf, &r);
	assert_true(r.aborted);
	for (int i = 0; i < 4 && k.closes == 0; i++)
		uv_run(&lf->loop, UV_RUN_NOWAIT);
	assert_int_equal(k.closes, 1);
	assert_int_equal(k.detaches, 1);
	assert_true(k.detach_seq < k.close_seq);
	loop_fabric_destroy(lf);
}

/*
 * scsitgtd's shutdown with a fault rule in front of an RBD LUN: the engine gives up on the
 * held write (close() is never called), the host releases it, which frees the rest of the
 * LUN, and only then closes the backend. A resize seen in between must not reach the LUN:
 * the fault backend passes detach on to the backend it wraps.
 */
static void test_engine_gave_up(void **state)
{
	struct keeper k = { 0 };
	uint8_t cdb[CDB_BUF], buf[512] = { 0 };
	struct scsitgt_fault_stats st;
	struct loop_fabric *lf;
	struct lf_result r;
	void *fault;

	(void)state;
	assert_int_equal(loop_fabric_create(&lf, NULL), 0);
	assert_int_equal(scsitgt_engine_set_drain_timeout(lf->engine, 20), 0);
	assert_int_equal(scsitgt_backend_fault_create(&fault, &lf->loop, &keeper_ops, &k), 0);
	assert_int_equal(scsitgt_backend_fault_add_spec(fault, "hang@write"), 1);
	lun_add(lf, scsitgt_backend_fault_ops(fault), fault, &k);
	start_write(lf, cdb, buf, &r);
	st.size = sizeof(st);
	assert_int_equal(scsitgt_backend_fault_get_stats(fault, &st), 0);
	assert_int_equal(st.held, 1);
	/* The engine goes: it gives up on the write and on the LUN. */
	loop_fabric_destroy(lf);
	assert_int_equal(k.closes, 0);
	/* The late completion frees what was left of the LUN... */
	assert_int_equal(scsitgt_backend_fault_release(fault, 0, -EIO), 1);
	/* ...and the image grows before the host closes the backend. */
	keeper_medium_resized(&k, 8192);
	assert_int_equal(k.detaches, 1);
	assert_null(k.lun);
	assert_int_equal(scsitgt_backend_fault_destroy(fault), 0);
	assert_int_equal(k.closes, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_detach_before_close),
		cmocka_unit_test(test_no_detach_when_create_fails),
		cmocka_unit_test(test_removal_timed_out),
		cmocka_unit_test(test_engine_gave_up),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
