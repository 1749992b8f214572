/* SPDX-License-Identifier: MIT */
/*
 * Commands waiting on a LUN's range lock (range_lock.h) behind a command whose io the backend
 * never returns, when the LUN's removal times out or the engine goes (core/drain.c). Nothing
 * will grant them: the holder is given up, not ended. They end as the LUN's other commands
 * outside the backend do: aborted (ops->cmd_aborted, no response; SAM-5 §5.6), or freed
 * silently when their nexus is gone; their entries go with them. Run under ASan with
 * LeakSanitizer; every debug build also counts that each command the test started is freed.
 */
#include <string.h>

#include "test_util.h"

#include "cmd_count.h"

#include "core/scsi_spec.h"

#define BS 512u

/* The three commands of a case: one in the backend, and what waits behind it. */
struct rd_cmds {
	struct lf_result held, w1, w2;
	uint8_t data[2 * BS];
};

/* A case: counting from here, a LUN on a backend that holds every io, its commands cleared. */
static struct tctx *rd_new(struct rd_cmds *c)
{
	struct fake_backend_opts o;
	struct tctx *t;

	memset(c, 0, sizeof(*c));
	memset(c->data, 0x5a, sizeof(c->data));
	count_start();
	fake_backend_opts_init(&o);
	o.mode = FAKE_MANUAL;
	t = tctx_create(0, &o);
	assert_int_equal(scsitgt_engine_set_drain_timeout(t->lf->engine, 20), 0);
	return t;
}

/*
 * A COMPARE AND WRITE at LBA 24 with its READ in the backend, then a READ and a WRITE ATOMIC
 * of the same block, which wait for its exclusive entry.
 */
static void rd_start_behind_caw(struct tctx *t, struct rd_cmds *c)
{
	uint8_t cdb[CDB_BUF];

	loop_fabric_start(t->lf, 0, cdb, cdb_caw(cdb, 24, 1, 0), c->data, 2 * BS, &c->held);
	assert_int_equal(t->fb->npending, 1);
	loop_fabric_start(t->lf, 0, cdb, cdb_rw(cdb, SBC_READ_10, 24, 1, 0), NULL, 0, &c->w1);
	loop_fabric_start(t->lf, 0, cdb, cdb_write_atomic16(cdb, 24, 0, 1, 0), c->data, BS, &c->w2);
	/* they wait: no io of theirs reached the backend */
	assert_int_equal(t->fb->npending, 1);
	assert_int_equal(t->fb->nrecs, 1);
	assert_false(c->held.done || c->w1.done || c->w2.done);
}

/* The engine goes (its nexus first) with the backend holding the one io, which comes back
 * afterwards: every command is freed, none answered. */
static void rd_engine_goes(struct tctx *t, struct rd_cmds *c)
{
	struct fake_backend *fb = t->fb;

	loop_fabric_destroy(t->lf);
	t->lf = NULL;
	assert_int_equal(fb->npending, 1);
	fake_backend_complete_pending(fb);
	/* the waiters never started an io */
	assert_int_equal(fb->nrecs, 1);
	fake_backend_destroy(fb);
	assert_false(c->held.done || c->w1.done || c->w2.done);
	lf_result_clear(&c->held);
	lf_result_clear(&c->w1);
	lf_result_clear(&c->w2);
	free(t);
	count_check();
}

/* Engine shutdown: the waiters behind an exclusive entry that is given up. */
static void test_shutdown_behind_exclusive(void **state)
{
	struct rd_cmds c;
	struct tctx *t;

	(void)state;
	t = rd_new(&c);
	rd_start_behind_caw(t, &c);
	rd_engine_goes(t, &c);
}

/*
 * Engine shutdown: a COMPARE AND WRITE and a WRITE ATOMIC waiting for a READ that took no
 * entry (no exclusive one existed) to leave: the quiescence round of range_lock.h, which the
 * READ, given up in its backend, never ends.
 */
static void test_shutdown_behind_untracked(void **state)
{
	uint8_t cdb[CDB_BUF];
	struct rd_cmds c;
	struct tctx *t;

	(void)state;
	t = rd_new(&c);
	loop_fabric_start(t->lf, 0, cdb, cdb_rw(cdb, SBC_READ_10, 500, 1, 0), NULL, 0, &c.held);
	assert_int_equal(t->fb->npending, 1);
	loop_fabric_start(t->lf, 0, cdb, cdb_caw(cdb, 24, 1, 0), c.data, 2 * BS, &c.w1);
	loop_fabric_start(t->lf, 0, cdb, cdb_write_atomic16(cdb, 40, 0, 1, 0), c.data, BS, &c.w2);
	assert_int_equal(t->fb->nrecs, 1);
	rd_engine_goes(t, &c);
}

static void lun_gone(void *arg, int status)
{
	assert_int_equal(status, 0);
	*(bool *)arg = true;
}

/*
 * The LUN's removal times out with its nexus up: the waiters end at once as aborted commands
 * (the LUN's commands outside the backend, core/drain.c), not when the holder's io comes back,
 * which may be never. The holder ends aborted when it does, and the LUN closes.
 */
static void test_lun_drain_timeout(void **state)
{
	struct fake_backend *fb;
	bool gone = false, closed = false;
	struct rd_cmds c;
	struct tctx *t;

	(void)state;
	t = rd_new(&c);
	fb = t->fb;
	fb->closed_flag = &closed;
	rd_start_behind_caw(t, &c);
	scsitgt_lun_destroy(t->lun, lun_gone, &gone);
	loop_fabric_run_until(t->lf, &gone);
	assert_true(c.w1.done && c.w1.aborted);
	assert_true(c.w2.done && c.w2.aborted);
	assert_false(c.held.done);
	assert_int_equal(t->lf->naborted, 2);
	assert_int_equal(fb->nrecs, 1);
	/* the backend gives the holder back: it ends aborted, and the zombie LUN closes */
	fake_backend_complete_pending(fb);
	assert_true(c.held.done && c.held.aborted);
	loop_fabric_run_until(t->lf, &closed);
	loop_fabric_destroy(t->lf);
	lf_result_clear(&c.held);
	lf_result_clear(&c.w1);
	lf_result_clear(&c.w2);
	free(t);
	count_check();
}

/*
 * The removal times out after the waiters' nexus is gone (a logout): they were orphaned, held
 * by the range lock; now they are freed, silently. Then the engine goes with the holder still
 * in the backend.
 */
static void test_lun_drain_timeout_nexus_gone(void **state)
{
	struct scsitgt__session *s2;
	uint8_t cdb[CDB_BUF];
	bool gone = false;
	struct rd_cmds c;
	struct tctx *t;

	(void)state;
	t = rd_new(&c);
	assert_int_equal(loop_fabric_add_session(
				 t->lf, "iqn.2024-01.org.example:other,i,0x23d000000002", 1, &s2),
			 0);
	loop_fabric_start(t->lf, 0, cdb, cdb_caw(cdb, 24, 1, 0), c.data, 2 * BS, &c.held);
	assert_int_equal(t->fb->npending, 1);
	/* the other nexus's first command reports POWER ON: a TEST UNIT READY takes it */
	loop_fabric_run_on(t->lf, s2, 0, cdb, cdb_tur(cdb), NULL, 0, &c.w1);
	lf_result_clear(&c.w1);
	memset(&c.w1, 0, sizeof(c.w1));
	loop_fabric_start_on(t->lf, s2, 0, cdb, cdb_rw(cdb, SBC_READ_10, 24, 1, 0), NULL, 0, &c.w1);
	loop_fabric_start_on(t->lf, s2, 0, cdb, cdb_write_atomic16(cdb, 24, 0, 1, 0), c.data, BS,
			     &c.w2);
	assert_int_equal(t->fb->nrecs, 1);
	scsitgt__session_destroy(s2);
	scsitgt_lun_destroy(t->lun, lun_gone, &gone);
	loop_fabric_run_until(t->lf, &gone);
	assert_false(c.w1.done || c.w2.done);
	rd_engine_goes(t, &c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shutdown_behind_exclusive),
		cmocka_unit_test(test_shutdown_behind_untracked),
		cmocka_unit_test(test_lun_drain_timeout),
		cmocka_unit_test(test_lun_drain_timeout_nexus_gone),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
