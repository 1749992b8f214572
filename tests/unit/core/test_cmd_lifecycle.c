/* SPDX-License-Identifier: MIT */
/*
 * The command lifecycle through the core: dispatch outcomes (unknown opcodes, missing LUNs,
 * bad LUN addresses), backend completion paths (synchronous, deferred on the loop, held,
 * from other threads), the errno and exact-sense mappings, and nexus/LUN teardown with ios
 * in flight.
 */
#include <errno.h>

#include "test_util.h"

#include "core/scsi_spec.h"

static void test_dispatch(void **state)
{
	struct tctx *t = tctx_create(0, NULL);
	uint8_t lun[8] = { 0 };
	struct lf_result *r;
	uint8_t big[40] = { 0 };

	(void)state;
	r = tctx_run(t, cdb_tur(t->cdb));
	assert_good(r);
	/* Unsupported operation code; the field pointer is not used for it. */
	memset(t->cdb, 0, CDB_BUF);
	t->cdb[0] = 0x02;
	r = tctx_run(t, 6);
	assert_sense(r, 0x5, 0x20, 0x00);
	assert_no_sks(r);
	t->cdb[0] = 0xff;
	r = tctx_run(t, 16);
	assert_sense(r, 0x5, 0x20, 0x00);
	/* Unknown opcode to a missing LUN: the LUN is reported first (SPC-5 §4.5.5.2 order). */
	t->cdb[0] = 0x02;
	r = tctx_run_lun(t, 42, 6, NULL, 0);
	assert_sense(r, 0x5, 0x25, 0x00);
	/* A LUN-bound command to a missing LUN. */
	r = tctx_run_lun(t, 42, cdb_tur(t->cdb), NULL, 0);
	assert_sense(r, 0x5, 0x25, 0x00);
	/* An unsupported addressing method reaches no LUN. */
	lun[0] = 0x01; /* peripheral addressing with bus 1 */
	cdb_tur(t->cdb);
	lf_result_clear(&t->r);
	loop_fabric_run_raw_lun(t->lf, lun, t->cdb, 6, NULL, 0, &t->r);
	assert_sense(&t->r, 0x5, 0x25, 0x00);
	/* Reserved bits of TEST UNIT READY. */
	cdb_tur(t->cdb);
	t->cdb[3] = 0x01;
	r = tctx_run(t, 6);
	assert_bad_cdb(r, 3, 0);
	/* A CDB shorter than its command, and one longer than any we know. */
	r = tctx_run(t, cdb_rw(t->cdb, SBC_READ_10, 0, 1, 0) - 1);
	assert_sense(r, 0x5, 0x20, 0x00);
	big[0] = SPC_TEST_UNIT_READY;
	lf_result_clear(&t->r);
	scsitgt__lun_encode(0, lun);
	loop_fabric_run_raw_lun(t->lf, lun, big, sizeof(big), NULL, 0, &t->r);
	assert_sense(&t->r, 0x5, 0x20, 0x00);
	/* An empty CDB. */
	r = tctx_run(t, 0);
	assert_sense(r, 0x5, 0x20, 0x00);
	tctx_destroy(t);
}

/* Write a pattern and read it back through a backend completing in @mode. */
static void round_trip_in_mode(enum fake_mode mode)
{
	struct loop_fabric *lf;
	struct fake_backend_opts o;
	struct fake_backend *fb;
	struct lf_result r;
	uint8_t cdb[CDB_BUF], buf[4 * 512];
	size_t len;

	assert_int_equal(loop_fabric_create(&lf, NULL), 0);
	fake_backend_opts_init(&o);
	o.mode = mode;
	o.loop = &lf->loop;
	assert_int_equal(fake_backend_lun_create(NULL, &fb, lf->tgt, 0, 0, &o), 0);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 7 + mode);

	len = cdb_rw(cdb, SBC_WRITE_10, 10, 4, 0);
	loop_fabric_start(lf, 0, cdb, len, buf, sizeof(buf), &r);
	if (mode == FAKE_SYNC) {
		assert_true(r.done);
	} else {
		/* Not completed inside the submitting call. */
		assert_false(r.done);
		if (mode == FAKE_MANUAL) {
			assert_int_equal(fb->npending, 1);
			fake_backend_complete_pending(fb);
			assert_true(r.done);
		}
	}
	loop_fabric_wait(lf, &r);
	assert_int_equal(r.status, 0);
	len = cdb_rw(cdb, SBC_READ_10, 10, 4, 0);
	loop_fabric_start(lf, 0, cdb, len, NULL, 0, &r);
	if (mode == FAKE_MANUAL)
		fake_backend_complete_pending(fb);
	loop_fabric_wait(lf, &r);
	assert_int_equal(r.status, 0);
	assert_int_equal(r.data_len, sizeof(buf));
	assert_memory_equal(r.data, buf, sizeof(buf));
	lf_result_clear(&r);
	loop_fabric_destroy(lf);
}

static void test_complete_sync(void **state)
{
	(void)state;
	round_trip_in_mode(FAKE_SYNC);
}

static void test_complete_async(void **state)
{
	(void)state;
	round_trip_in_mode(FAKE_ASYNC);
}

static void test_complete_manual(void **state)
{
	(void)state;
	round_trip_in_mode(FAKE_MANUAL);
}

static void test_complete_threadsafe(void **state)
{
	(void)state;
	round_trip_in_mode(FAKE_THREAD);
}

static void test_threadsafe_many(void **state)
{
	enum {
		N = 16
	};
	struct loop_fabric *lf;
	struct fake_backend_opts o;
	struct fake_backend *fb;
	struct lf_result r[N];
	uint8_t cdb[CDB_BUF];

	(void)state;
	assert_int_equal(loop_fabric_create(&lf, NULL), 0);
	fake_backend_opts_init(&o);
	o.mode = FAKE_THREAD;
	assert_int_equal(fake_backend_lun_create(NULL, &fb, lf->tgt, 0, 0, &o), 0);
	for (int i = 0; i < N; i++)
		fb->data[i * 512] = (uint8_t)(i + 1);
	/* Many commands in flight at once, completed from as many threads. */
	for (int i = 0; i < N; i++) {
		size_t len = cdb_rw(cdb, SBC_READ_16, (uint64_t)i, 1, 0);

		loop_fabric_start(lf, 0, cdb, len, NULL, 0, &r[i]);
	}
	for (int i = 0; i < N; i++) {
		loop_fabric_wait(lf, &r[i]);
		assert_int_equal(r[i].status, 0);
		assert_int_equal(r[i].data_len, 512);
		assert_int_equal(r[i].data[0], i + 1);
		lf_result_clear(&r[i]);
	}
	assert_int_equal(fb->nrecs, N);
	loop_fabric_destroy(lf);
}

struct errno_case {
	int err;
	uint8_t op;
	uint8_t status;
	uint8_t key, asc, ascq;
};

static void test_errno_mapping(void **state)
{
	/* As documented at scsitgt_io_complete(). */
	static const struct errno_case cases[] = {
		{ -EIO, SBC_READ_10, 0x02, 0x3, 0x11, 0x00 },
		{ -EIO, SBC_WRITE_10, 0x02, 0x3, 0x0c, 0x00 },
		{ -ENOSPC, SBC_WRITE_16, 0x02, 0x7, 0x27, 0x07 },
		{ -EROFS, SBC_WRITE_12, 0x02, 0x7, 0x27, 0x00 },
		{ -ENOTSUP, SBC_READ_10, 0x02, 0x5, 0x20, 0x00 },
		{ -EBADF, SBC_READ_10, 0x02, 0x4, 0x44, 0x00 },
		{ -ENOMEM, SBC_READ_10, 0x08, 0, 0, 0 },
		{ -EAGAIN, SBC_WRITE_10, 0x08, 0, 0, 0 },
	};
	struct tctx *t = tctx_create(0, NULL);
	uint8_t buf[512] = { 0 };

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct errno_case *c = &cases[i];
		struct lf_result *r;

		fake_backend_fail_next(t->fb, c->err, 1);
		r = tctx_run_lun(t, 0, cdb_rw(t->cdb, c->op, 0, 1, 0), buf, sizeof(buf));
		if (c->status == 0x02) {
			assert_sense(r, c->key, c->asc, c->ascq);
		} else {
			assert_int_equal(r->status, c->status);
			assert_int_equal(r->sense_len, 0);
			assert_int_equal(r->data_len, 0);
		}
	}
	/* The failure was one-shot. */
	assert_good(tctx_run(t, cdb_rw(t->cdb, SBC_READ_10, 0, 1, 0)));
	tctx_destroy(t);
}

static void test_errno_async(void **state)
{
	struct fake_backend_opts o;
	struct loop_fabric *lf;
	struct fake_backend *fb;
	struct lf_result r;
	uint8_t cdb[CDB_BUF];
	size_t len;

	(void)state;
	assert_int_equal(loop_fabric_create(&lf, NULL), 0);
	fake_backend_opts_init(&o);
	o.mode = FAKE_THREAD;
	assert_int_equal(fake_backend_lun_create(NULL, &fb, lf->tgt, 0, 0, &o), 0);
	fake_backend_fail_next(fb, -EIO, 1);
	len = cdb_rw(cdb, SBC_READ_10, 0, 1, 0);
	loop_fabric_run(lf, 0, cdb, len, NULL, 0, &r);
	assert_sense(&r, 0x3, 0x11, 0x00);
	loop_fabric_destroy(lf);
}

static void test_complete_sense(void **state)
{
	struct tctx *t = tctx_create(0, NULL);
	struct lf_result *r;

	(void)state;
	/* Exact sense from the backend reaches the initiator unchanged. */
	fake_backend_fail_next_sense(t->fb, 0x3, 0x11, 0x04);
	r = tctx_run(t, cdb_rw(t->cdb, SBC_READ_10, 7, 1, 0));
	assert_sense(r, 0x3, 0x11, 0x04);
	assert_no_sks(r);
	/* In descriptor format when D_SENSE is set. */
	t->lun->mode.d_sense = true;
	fake_backend_fail_next_sense(t->fb, 0x4, 0x3e, 0x01);
	r = tctx_run(t, cdb_rw(t->cdb, SBC_READ_10, 7, 1, 0));
	assert_int_equal(r->status, 0x02);
	assert_int_equal(r->sense_len, 8);
	assert_int_equal(r->sense[0], 0x72);
	assert_int_equal(r->sense[1], 0x04);
	assert_int_equal(r->sense[2], 0x3e);
	assert_int_equal(r->sense[3], 0x01);
	t->lun->mode.d_sense = false;
	/* Sense key 0 is success. */
	fake_backend_fail_next_sense(t->fb, 0x0, 0x00, 0x00);
	r = tctx_run(t, cdb_rw(t->cdb, SBC_READ_10, 7, 1, 0));
	assert_good(r);
	assert_int_equal(r->data_len, 512);
	tctx_destroy(t);
}

static void test_session_destroy_inflight(void **state)
{
	struct fake_backend_opts o;
	struct loop_fabric *lf;
	struct fake_backend *fb;
	struct lf_result r;
	uint8_t cdb[CDB_BUF];
	size_t len;

	(void)state;
	assert_int_equal(loop_fabric_create(&lf, NULL), 0);
	fake_backend_opts_init(&o);
	o.mode = FAKE_MANUAL;
	assert_int_equal(fake_backend_lun_create(NULL, &fb, lf->tgt, 0, 0, &o), 0);
	len = cdb_rw(cdb, SBC_READ_10, 0, 8, 0);
	loop_fabric_start(lf, 0, cdb, len, NULL, 0, &r);
	assert_false(r.done);
	/* The nexus goes away while the backend holds the io: the command is detached. */
	scsitgt__session_destroy(lf->sess);
	lf->sess = NULL;
	fake_backend_complete_pending(fb);
	/* Neither cmd_done nor cmd_aborted: the fabric has forgotten it. */
	assert_false(r.done);
	assert_int_equal(lf->ndone, 0);
	assert_int_equal(lf->naborted, 0);
	loop_fabric_destroy(lf);
}

static void lun_gone(void *arg, int status)
{
	assert_int_equal(status, 0);
	*(bool *)arg = true;
}

static void test_lun_destroy_waits_for_ios(void **state)
{
	struct fake_backend_opts o;
	struct loop_fabric *lf;
	struct fake_backend *fb;
	struct scsitgt_lun *lun;
	struct lf_result r, r2;
	bool gone = false, closed = false;
	uint8_t cdb[CDB_BUF];
	size_t len;

	(void)state;
	assert_int_equal(loop_fabric_create(&lf, NULL), 0);
	fake_backend_opts_init(&o);
	o.mode = FAKE_MANUAL;
	assert_int_equal(fake_backend_lun_create(&lun, &fb, lf->tgt, 0, 0, &o), 0);
	fb->closed_flag = &closed;
	len = cdb_rw(cdb, SBC_READ_10, 0, 1, 0);
	loop_fabric_start(lf, 0, cdb, len, NULL, 0, &r);
	scsitgt_lun_destroy(lun, lun_gone, &gone);
	/* New commands no longer see the LUN. */
	loop_fabric_run(lf, 0, cdb, cdb_tur(cdb), NULL, 0, &r2);
	assert_sense(&r2, 0x5, 0x25, 0x00);
	/* The backend is not closed while it holds an io. */
	assert_false(closed);
	assert_false(gone);
	fake_backend_complete_pending(fb);
	assert_true(r.done);
	assert_int_equal(r.status, 0);
	lf_result_clear(&r);
	loop_fabric_run_until(lf, &gone);
	assert_true(closed);
	loop_fabric_destroy(lf);
}

static void tmf_done(void *arg, enum scsitgt__tmf_response response)
{
	*(int *)arg = (int)response;
}

/*
 * A LUN removed while a READ's lent data is still being sent (review31 C1): the command's end
 * must give the RAM backend its chunk back before it lets the LUN's close run, which frees the
 * backend's context. Released after, the release locked freed memory (ASan: use-after-free;
 * this test is in the ASan unit suite).
 */
static void test_lun_destroy_while_data_lent(void **state)
{
	struct scsitgt_lun_opts lo;
	struct scsitgt__session *s2;
	struct loop_fabric *lf;
	struct scsitgt_lun *lun;
	struct lf_result r;
	bool gone = false;
	uint8_t cdb[CDB_BUF];
	uint8_t data[512];
	size_t len;
	void *ram;

	(void)state;
	assert_int_equal(loop_fabric_create(&lf, NULL), 0);
	lf->lend_data_in = true;
	assert_int_equal(loop_fabric_add_session(
				 lf, "iqn.2024-01.org.example:lend,i,0x23d000000002", 1, &s2),
			 0);
	assert_int_equal(scsitgt_backend_ram_create(&ram), 0);
	scsitgt_lun_opts_init(&lo, sizeof(lo));
	lo.block_size = 512;
	lo.num_blocks = 2048;
	lo.backend = scsitgt_backend_ram_ops();
	lo.backend_ctx = ram;
	lo.id = 0;
	assert_int_equal(scsitgt_lun_create(&lun, lf->tgt, &lo), 0);
	/* The nexus's first command reports POWER ON; a block is written so that it is lent. */
	loop_fabric_run_on(lf, s2, 0, cdb, cdb_tur(cdb), NULL, 0, &r);
	lf_result_clear(&r);
	memset(data, 0x5a, sizeof(data));
	len = cdb_rw(cdb, SBC_WRITE_10, 0, 1, 0);
	loop_fabric_run_on(lf, s2, 0, cdb, len, data, sizeof(data), &r);
	assert_int_equal(r.status, 0);
	lf_result_clear(&r);

	lf->keep_done = true;
	len = cdb_rw(cdb, SBC_READ_10, 0, 1, 0);
	loop_fabric_run_on(lf, s2, 0, cdb, len, NULL, 0, &r);
	assert_int_equal(r.status, 0);
	assert_non_null(r.cmd);
	assert_non_null(r.cmd->lent_data);
	assert_memory_equal(r.data, data, sizeof(data));
	scsitgt_lun_destroy(lun, lun_gone, &gone);
	/* The command still holds the LUN: it is not gone yet. */
	assert_false(gone);
	scsitgt__cmd_destroy(r.cmd);
	lf_result_clear(&r);
	loop_fabric_run_until(lf, &gone);
	loop_fabric_destroy(lf);
}

static void test_tmf_abort_inflight(void **state)
{
	struct fake_backend_opts o;
	struct loop_fabric *lf;
	struct fake_backend *fb;
	struct lf_result r;
	uint8_t cdb[CDB_BUF], lun[8];
	int response = -1;
	size_t len;

	(void)state;
	assert_int_equal(loop_fabric_create(&lf, NULL), 0);
	fake_backend_opts_init(&o);
	o.mode = FAKE_MANUAL;
	assert_int_equal(fake_backend_lun_create(NULL, &fb, lf->tgt, 0, 0, &o), 0);
	len = cdb_rw(cdb, SBC_READ_10, 0, 1, 0);
	loop_fabric_start(lf, 0, cdb, len, NULL, 0, &r);
	scsitgt__lun_encode(0, lun);
	scsitgt__tmf_execute(lf->sess, SCSITGT__TMF_LUN_RESET, lun, 0, tmf_done, &response);
	/* The io still runs: the TMF answers (SAM-5 §7) and the command is reported
	 * aborted once it returns. */
	assert_int_equal(response, -1);
	assert_false(r.done);
	fake_backend_complete_pending(fb);
	assert_true(r.done);
	assert_true(r.aborted);
	assert_int_equal(response, SCSITGT__TMF_COMPLETE);
	assert_int_equal(lf->naborted, 1);
	loop_fabric_destroy(lf);
}

static void engine_gone(void *arg, int status)
{
	assert_int_equal(status, 0);
	*(bool *)arg = true;
}

/* Engine teardown with the nexus still up: the fabric's session_shutdown ends it at once. */
static void shutdown_with_session(bool with_lun)
{
	struct loop_fabric *lf;
	bool gone = false;

	assert_int_equal(loop_fabric_create(&lf, NULL), 0);
	if (with_lun) {
		struct fake_backend_opts o;

		fake_backend_opts_init(&o);
		assert_int_equal(fake_backend_lun_create(NULL, NULL, lf->tgt, 0, 0, &o), 0);
	}
	scsitgt_engine_destroy(lf->engine, engine_gone, &gone);
	lf->engine = NULL;
	assert_null(lf->sess);
	loop_fabric_run_until(lf, &gone);
	loop_fabric_destroy(lf);
}

static void test_engine_destroy_live_session(void **state)
{
	(void)state;
	shutdown_with_session(false);
	shutdown_with_session(true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dispatch),
		cmocka_unit_test(test_complete_sync),
		cmocka_unit_test(test_complete_async),
		cmocka_unit_test(test_complete_manual),
		cmocka_unit_test(test_complete_threadsafe),
		cmocka_unit_test(test_threadsafe_many),
		cmocka_unit_test(test_errno_mapping),
		cmocka_unit_test(test_errno_async),
		cmocka_unit_test(test_complete_sense),
		cmocka_unit_test(test_session_destroy_inflight),
		cmocka_unit_test(test_lun_destroy_waits_for_ios),
		cmocka_unit_test(test_lun_destroy_while_data_lent),
		cmocka_unit_test(test_tmf_abort_inflight),
		cmocka_unit_test(test_engine_destroy_live_session),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
