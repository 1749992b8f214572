/* SPDX-License-Identifier: MIT */
/*
 * Bounded teardown with a backend that never completes (issue 5, issue 10 "Faults"), driven
 * by the fault backend's hang rule: a TMF answers within the TMF timeout, a LUN removal and an
 * engine shutdown call back within the drain timeout, the backend is not closed while it
 * holds ios, and late completions after each of them (on the loop, from another thread, after
 * the engine is gone) free what they must without touching freed objects. Run under
 * ASan/UBSan and valgrind: a use after free or a leak is the failure these tests look for.
 * No timing is asserted; short timeouts only keep the tests fast.
 */
#include <errno.h>
#include <pthread.h>

#include "test_util.h"

#include "core/scsi_spec.h"
#include "libscsitgt/backend_fault.h"

/* RAM backend ops whose close() is counted. */
static struct scsitgt_backend_ops g_ram_tracked;
static unsigned int g_closes;

static void tracked_close(void *bctx, scsitgt_done_cb cb, void *cb_arg)
{
	g_closes++;
	scsitgt_backend_ram_ops()->close(bctx, cb, cb_arg);
}

struct tt {
	struct loop_fabric *lf;
	struct scsitgt_lun *lun;
	void *fault;
	uint8_t cdb[CDB_BUF];
	uint8_t buf[512];
};

static struct tt *tt_create(const char *spec)
{
	struct tt *t = calloc(1, sizeof(*t));
	struct scsitgt_lun_opts lo;
	void *ram;

	assert_non_null(t);
	g_ram_tracked = *scsitgt_backend_ram_ops();
	g_ram_tracked.close = tracked_close;
	g_closes = 0;
	assert_int_equal(loop_fabric_create(&t->lf, NULL), 0);
	assert_int_equal(scsitgt_backend_ram_create(&ram), 0);
	assert_int_equal(scsitgt_backend_fault_create(&t->fault, &t->lf->loop, &g_ram_tracked, ram),
			 0);
	assert_int_equal(scsitgt_backend_fault_add_spec(t->fault, spec), 1);
	scsitgt_lun_opts_init(&lo, sizeof(lo));
	lo.id = 0;
	lo.block_size = 512;
	lo.num_blocks = 1024;
	lo.backend = scsitgt_backend_fault_ops(t->fault);
	lo.backend_ctx = t->fault;
	assert_int_equal(scsitgt_lun_create(&t->lun, t->lf->tgt, &lo), 0);
	assert_int_equal(scsitgt_engine_set_tmf_timeout(t->lf->engine, 20), 0);
	assert_int_equal(scsitgt_engine_set_drain_timeout(t->lf->engine, 20), 0);
	return t;
}

static void start_write(struct tt *t, uint64_t lba, struct lf_result *r)
{
	memset(r, 0, sizeof(*r));
	loop_fabric_start(t->lf, 0, t->cdb, cdb_rw(t->cdb, SBC_WRITE_10, lba, 1, 0), t->buf,
			  sizeof(t->buf), r);
}

static uint32_t held(struct tt *t)
{
	struct scsitgt_fault_stats st;

	st.size = sizeof(st);
	assert_int_equal(scsitgt_backend_fault_get_stats(t->fault, &st), 0);
	return st.held;
}

static void tmf_resp(void *arg, enum scsitgt__tmf_response response)
{
	*(int *)arg = (int)response;
}

static void done_cb(void *arg, int status)
{
	assert_int_equal(status, 0);
	*(bool *)arg = true;
}

static void run_until_int(struct tt *t, const int *v)
{
	while (*v == -1)
		uv_run(&t->lf->loop, UV_RUN_ONCE);
}

/* ABORT TASK and LUN RESET of a hung write answer by the TMF timeout; the write's late
 * return frees it without a response. */
static void test_tmf_bounded(void **state)
{
	struct tt *t = tt_create("hang@write");
	struct lf_result r1, r2;
	uint8_t lun[8];
	int resp = -1;

	(void)state;
	start_write(t, 1, &r1);
	assert_false(r1.done);
	assert_int_equal(held(t), 1);
	scsitgt__lun_encode(0, lun);
	scsitgt__tmf_execute(t->lf->sess, SCSITGT__TMF_ABORT_TASK, lun, r1.cmd->tag, tmf_resp,
			     &resp);
	/* It waits for the backend... */
	assert_int_equal(resp, -1);
	/* ...but no longer than the TMF timeout. */
	run_until_int(t, &resp);
	assert_int_equal(resp, SCSITGT__TMF_COMPLETE);
	assert_false(r1.done);
	/* A LUN RESET with another hung write, and the first one still held. */
	start_write(t, 2, &r2);
	resp = -1;
	scsitgt__tmf_execute(t->lf->sess, SCSITGT__TMF_LUN_RESET, lun, 0, tmf_resp, &resp);
	run_until_int(t, &resp);
	assert_int_equal(resp, SCSITGT__TMF_COMPLETE);
	assert_int_equal(held(t), 2);
	/* The late returns: the commands end aborted, without a response. */
	assert_int_equal(scsitgt_backend_fault_release(t->fault, 0, 0), 2);
	loop_fabric_wait(t->lf, &r1);
	loop_fabric_wait(t->lf, &r2);
	assert_true(r1.aborted);
	assert_true(r2.aborted);
	loop_fabric_destroy(t->lf);
	assert_int_equal(g_closes, 1);
	free(t);
}

/* scsitgt_lun_destroy() calls back by the drain timeout; the backend is closed only when it
 * gives the write back, and the target serves meanwhile. */
static void test_lun_destroy_bounded(void **state)
{
	struct tt *t = tt_create("hang@write");
	struct lf_result r, q;
	bool destroyed = false;

	(void)state;
	start_write(t, 3, &r);
	assert_false(r.done);
	scsitgt_lun_destroy(t->lun, done_cb, &destroyed);
	assert_false(destroyed);
	loop_fabric_run_until(t->lf, &destroyed);
	/* Called back with the write still in the backend, which is not closed under it. */
	assert_false(r.done);
	assert_int_equal(held(t), 1);
	assert_int_equal(g_closes, 0);
	/* The LUN is gone for initiators: LOGICAL UNIT NOT SUPPORTED. */
	memset(&q, 0, sizeof(q));
	loop_fabric_run(t->lf, 0, t->cdb, cdb_tur(t->cdb), NULL, 0, &q);
	assert_sense(&q, 0x5, 0x25, 0x00);
	/* The late completion (on the loop): the write ends aborted, then the backend closes
	 * (which frees the fault context and the RAM backend). */
	assert_int_equal(scsitgt_backend_fault_release(t->fault, 0, 0), 1);
	loop_fabric_wait(t->lf, &r);
	assert_true(r.aborted);
	for (int i = 0; i < 4; i++)
		uv_run(&t->lf->loop, UV_RUN_NOWAIT);
	assert_int_equal(g_closes, 1);
	loop_fabric_destroy(t->lf);
	free(t);
}

/* The engine goes while the backend holds two writes: scsitgt_engine_destroy() calls back by
 * the drain timeout, the backend is never closed, and the late completions (one handed on to
 * the RAM backend, which reads the io through the accessors, one failed) only free. */
static void test_engine_destroy_orphans(void **state)
{
	struct tt *t = tt_create("hang@write");
	struct lf_result r1, r2;
	void *fault = t->fault;

	(void)state;
	start_write(t, 4, &r1);
	start_write(t, 5, &r2);
	assert_int_equal(held(t), 2);
	/* Session, then engine; returns once the engine's callback ran and the loop closed. */
	loop_fabric_destroy(t->lf);
	t->lf = NULL;
	assert_int_equal(g_closes, 0);
	assert_int_equal(held(t), 2);
	assert_int_equal(scsitgt_backend_fault_release(fault, 1, 0), 1);
	assert_int_equal(scsitgt_backend_fault_release(fault, 1, -EIO), 1);
	/* The library will not close it: the host does. */
	assert_int_equal(scsitgt_backend_fault_destroy(fault), 0);
	assert_int_equal(g_closes, 1);
	free(t);
}

/* The host removes a LUN and destroys the engine before the LUN's (long) drain timeout: the
 * engine does not wait for it, and the LUN's own callback still runs, once. */
static void test_engine_destroy_while_draining(void **state)
{
	struct tt *t = tt_create("hang@write");
	struct lf_result r;
	void *fault = t->fault;
	bool destroyed = false;

	(void)state;
	/* Ten minutes: the test's own timeout fails it if the engine waited. */
	assert_int_equal(scsitgt_engine_set_drain_timeout(t->lf->engine, 600000), 0);
	start_write(t, 6, &r);
	scsitgt_lun_destroy(t->lun, done_cb, &destroyed);
	assert_false(destroyed);
	loop_fabric_destroy(t->lf);
	assert_true(destroyed);
	assert_int_equal(g_closes, 0);
	assert_int_equal(scsitgt_backend_fault_release(fault, 0, -EIO), 1);
	assert_int_equal(scsitgt_backend_fault_destroy(fault), 0);
	free(t);
}

/* A host backend completing from its own threads: a LUN removal times out, one io comes
 * back through scsitgt_io_complete_threadsafe() while the engine lives (normal path, then
 * close), ... and with a second LUN, one comes back after the engine is gone (orphan). */
struct held_backend {
	struct scsitgt_io *io[4];
	unsigned int n;
	unsigned int closes;
};

static int hb_open(void *bctx, struct scsitgt_lun_geometry *geo)
{
	(void)bctx;
	geo->block_size = 512;
	geo->num_blocks = 64;
	return 0;
}

static void hb_close(void *bctx, scsitgt_done_cb cb, void *cb_arg)
{
	struct held_backend *hb = bctx;

	hb->closes++;
	if (cb)
		cb(cb_arg, 0);
}

static void hb_submit(void *bctx, struct scsitgt_io *io)
{
	struct held_backend *hb = bctx;

	assert_true(hb->n < 4);
	hb->io[hb->n++] = io;
}

static const struct scsitgt_backend_ops hb_ops = {
	.size = sizeof(struct scsitgt_backend_ops),
	.name = "held",
	.io_ctx_size = 24,
	.open = hb_open,
	.close = hb_close,
	.submit = hb_submit,
};

static void *thread_complete(void *arg)
{
	struct scsitgt_io *io = arg;

	/* The backend's private area is still there (a thread reads it before completing). */
	memset(scsitgt_io_get_ctx(io), 0x5a, 24);
	scsitgt_io_complete_threadsafe(io, 0);
	return NULL;
}

static void complete_on_thread(struct scsitgt_io *io)
{
	pthread_t th;

	assert_int_equal(pthread_create(&th, NULL, thread_complete, io), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
}

static void test_threadsafe_late_completions(void **state)
{
	struct held_backend a = { 0 }, b = { 0 };
	struct scsitgt_lun *la, *lb;
	struct scsitgt_lun_opts lo;
	struct loop_fabric *lf;
	struct lf_result r1, r2;
	uint8_t cdb[CDB_BUF], buf[512] = { 0 };
	bool destroyed = false;

	(void)state;
	assert_int_equal(loop_fabric_create(&lf, NULL), 0);
	assert_int_equal(scsitgt_engine_set_drain_timeout(lf->engine, 20), 0);
	scsitgt_lun_opts_init(&lo, sizeof(lo));
	lo.backend = &hb_ops;
	lo.id = 0;
	lo.backend_ctx = &a;
	assert_int_equal(scsitgt_lun_create(&la, lf->tgt, &lo), 0);
	lo.id = 1;
	lo.backend_ctx = &b;
	assert_int_equal(scsitgt_lun_create(&lb, lf->tgt, &lo), 0);
	memset(&r1, 0, sizeof(r1));
	memset(&r2, 0, sizeof(r2));
	loop_fabric_start(lf, 0, cdb, cdb_rw(cdb, SBC_WRITE_10, 0, 1, 0), buf, 512, &r1);
	loop_fabric_start(lf, 1, cdb, cdb_rw(cdb, SBC_WRITE_10, 0, 1, 0), buf, 512, &r2);
	assert_int_equal(a.n, 1);
	assert_int_equal(b.n, 1);
	/* LUN 0: removal times out, then its io comes back from a thread. */
	scsitgt_lun_destroy(la, done_cb, &destroyed);
	loop_fabric_run_until(lf, &destroyed);
	assert_int_equal(a.closes, 0);
	complete_on_thread(a.io[0]);
	loop_fabric_wait(lf, &r1);
	assert_true(r1.aborted);
	for (int i = 0; i < 4; i++)
		uv_run(&lf->loop, UV_RUN_NOWAIT);
	assert_int_equal(a.closes, 1);
	/* LUN 1: the engine goes first; the io comes back from a thread afterwards. */
	loop_fabric_destroy(lf);
	assert_int_equal(b.closes, 0);
	complete_on_thread(b.io[0]);
	assert_int_equal(b.closes, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tmf_bounded),
		cmocka_unit_test(test_lun_destroy_bounded),
		cmocka_unit_test(test_engine_destroy_orphans),
		cmocka_unit_test(test_engine_destroy_while_draining),
		cmocka_unit_test(test_threadsafe_late_completions),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
