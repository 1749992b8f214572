/* SPDX-License-Identifier: MIT */
/*
 * Per-LUN state that several loops share (issue 18, docs/threading.md "Per-LUN state across
 * shards"): the armed slow paths of lun->xflags follow the state they announce, and unit
 * attentions raised from another thread reach a nexus's next command. The threaded cases run
 * under the TSan build too (scripts/test.sh --tsan).
 */
#include <stdatomic.h>

#include "core/ua.h"
#include "test_pr_common.h"

static bool reserved(const struct prt *t)
{
	return (scsitgt__lun_xflags(t->lun) & SCSITGT__LUN_XF_RESERVED) != 0;
}

/* Registered keys alone arm nothing; a persistent or SPC-2 reservation arms the check. */
static void test_reserved_flag_follows_state(void **state)
{
	struct prt *t = prt_create(FAKE_SYNC);
	uint8_t cdb[CDB_BUF] = { 0 };

	(void)state;
	assert_false(reserved(t));
	ok(prt_out(t, t->a, PR_OUT_REGISTER, 0, 0, 0xa, 0));
	ok(prt_out(t, t->b, PR_OUT_REGISTER, 0, 0, 0xb, 0));
	assert_false(reserved(t));
	/* keys without a reservation: every command passes, RESERVE still conflicts */
	ok(prt_write(t, t->obs));
	cdb[0] = SPC_RESERVE_6;
	conflict(prt_run(t, t->obs, cdb, 6, NULL, 0));
	ok(prt_out(t, t->a, PR_OUT_RESERVE, PR_TYPE_WE_RO, 0xa, 0, 0));
	assert_true(reserved(t));
	conflict(prt_write(t, t->obs));
	ok(prt_write(t, t->b));
	ok(prt_read(t, t->obs));
	/* PREEMPT moves it: still reserved */
	ok(prt_out(t, t->b, PR_OUT_PREEMPT, PR_TYPE_WE, 0xb, 0xa, 0));
	assert_true(reserved(t));
	conflict(prt_write(t, t->obs));
	ok(prt_out(t, t->b, PR_OUT_RELEASE, PR_TYPE_WE, 0xb, 0, 0));
	assert_false(reserved(t));
	ok(prt_write(t, t->obs));
	ok(prt_out(t, t->b, PR_OUT_RESERVE, PR_TYPE_EA, 0xb, 0, 0));
	assert_true(reserved(t));
	ok(prt_out(t, t->b, PR_OUT_CLEAR, 0, 0xb, 0, 0));
	assert_false(reserved(t));

	/* SPC-2 RESERVE (6): set by it, cleared by RELEASE, by a LUN reset and by the end of
	 * the nexus that holds it. */
	cdb[0] = SPC_RESERVE_6;
	ok(prt_run(t, t->obs, cdb, 6, NULL, 0));
	assert_true(reserved(t));
	conflict(prt_read(t, t->b));
	cdb[0] = SPC_RELEASE_6;
	ok(prt_run(t, t->obs, cdb, 6, NULL, 0));
	assert_false(reserved(t));
	cdb[0] = SPC_RESERVE_6;
	ok(prt_run(t, t->obs, cdb, 6, NULL, 0));
	assert_true(reserved(t));
	scsitgt__pr_reset(t->lun);
	assert_false(reserved(t));
	ok(prt_read(t, t->b));
	ok(prt_run(t, t->obs, cdb, 6, NULL, 0));
	assert_true(reserved(t));
	scsitgt__session_destroy(t->obs);
	assert_false(reserved(t));
	ok(prt_read(t, t->b));
	prt_destroy(t);
}

static void save_nothing(void *arg, struct scsitgt_lun *lun, const void *data, size_t len)
{
	(void)arg;
	(void)lun;
	(void)data;
	(void)len;
}

/* A state loaded by the host (APTPL) arms the check too. */
static void test_reserved_flag_loaded_state(void **state)
{
	struct prt *t = prt_create(FAKE_SYNC);
	uint8_t buf[4096];
	size_t len;

	(void)state;
	assert_int_equal(scsitgt_lun_set_pr_store(t->lun, save_nothing, NULL), 0);
	ok(prt_out(t, t->a, PR_OUT_REGISTER, 0, 0, 0xa, PRP_APTPL));
	ok(prt_out(t, t->a, PR_OUT_RESERVE, PR_TYPE_EA, 0xa, 0, 0));
	assert_int_equal(scsitgt_lun_save_pr_state(t->lun, buf, sizeof(buf), &len), 0);
	ok(prt_out(t, t->a, PR_OUT_RELEASE, PR_TYPE_EA, 0xa, 0, 0));
	assert_false(reserved(t));
	assert_int_equal(scsitgt_lun_load_pr_state(t->lun, buf, len), 0);
	assert_true(reserved(t));
	conflict(prt_read(t, t->b));
	prt_destroy(t);
}

/* --- unit attentions raised from another thread --- */

struct raiser {
	struct scsitgt__session *sess;
	unsigned int n;
	enum scsitgt__sense_reason reason;
	atomic_bool done;
};

static void raise_thread(void *arg)
{
	struct raiser *r = arg;

	for (unsigned int i = 0; i < r->n; i++)
		scsitgt__ua_establish(r->sess, 0,
				      r->reason ? r->reason :
				      i % 2	? SCSITGT__SR_UA_MODE_PARAMS_CHANGED :
						  SCSITGT__SR_UA_RESERVATIONS_RELEASED);
	atomic_store(&r->done, true);
}

static void test_ua_from_another_thread(void **state)
{
	struct prt *t = prt_create(FAKE_SYNC);
	struct raiser r = { .sess = t->b, .n = 2000 };
	uint8_t cdb[CDB_BUF];
	uv_thread_t th;
	unsigned int uas = 0, rounds = 0;

	(void)state;
	/* B's commands run on this thread while the other raises conditions for B. */
	assert_int_equal(uv_thread_create(&th, raise_thread, &r), 0);
	while (!atomic_load(&r.done) || rounds < 16) {
		struct lf_result *res = prt_run(t, t->b, cdb, cdb_tur(cdb), NULL, 0);

		if (res->status == SAM_STAT_CHECK_CONDITION) {
			assert_int_equal(res->sense[2] & 0x0f, SENSE_UNIT_ATTENTION);
			uas++;
		} else {
			assert_good(res);
		}
		rounds++;
	}
	assert_int_equal(uv_thread_join(&th), 0);
	/* What is still queued comes out, one condition per command, then GOOD. */
	for (unsigned int i = 0; i < 2 * SCSITGT__UA_QUEUE_MAX; i++) {
		struct lf_result *res = prt_run(t, t->b, cdb, cdb_tur(cdb), NULL, 0);

		if (res->status == SAM_STAT_GOOD)
			break;
		assert_int_equal(res->sense[2] & 0x0f, SENSE_UNIT_ATTENTION);
		uas++;
	}
	ok(prt_run(t, t->b, cdb, cdb_tur(cdb), NULL, 0));
	assert_true(uas >= 1);
	/* Raised by another thread after B's last command: B's next one reports it. */
	r.n = 1;
	r.reason = SCSITGT__SR_UA_CAPACITY_CHANGED;
	atomic_store(&r.done, false);
	assert_int_equal(uv_thread_create(&th, raise_thread, &r), 0);
	assert_int_equal(uv_thread_join(&th), 0);
	assert_true(scsitgt__ua_pending(t->b, 0, NULL));
	ua(prt_run(t, t->b, cdb, cdb_tur(cdb), NULL, 0), 0x2a, 0x09);
	ok(prt_run(t, t->b, cdb, cdb_tur(cdb), NULL, 0));
	assert_false(scsitgt__ua_pending(t->b, 0, NULL));
	/* The other nexuses saw none of it. */
	ok(prt_run(t, t->a2, cdb, cdb_tur(cdb), NULL, 0));
	prt_destroy(t);
}

/* --- ALUA state changed from another thread --- */

struct flipper {
	struct scsitgt_target *tgt;
	unsigned int n;
	enum scsitgt_alua_state last;
};

static void flip_thread(void *arg)
{
	struct flipper *f = arg;

	for (unsigned int i = 0; i < f->n; i++)
		scsitgt_alua_set_state(f->tgt, 10,
				       i % 2 ? SCSITGT_ALUA_ACTIVE_OPTIMIZED :
					       SCSITGT_ALUA_ACTIVE_NON_OPTIMIZED);
	scsitgt_alua_set_state(f->tgt, 10, f->last);
}

/* Runs TEST UNIT READY on B until it is neither GOOD nor a unit attention; returns that. */
static struct lf_result *tur_past_uas(struct prt *t)
{
	uint8_t cdb[CDB_BUF];
	struct lf_result *res = NULL;

	for (unsigned int i = 0; i < 4 * SCSITGT__UA_QUEUE_MAX; i++) {
		res = prt_run(t, t->b, cdb, cdb_tur(cdb), NULL, 0);
		if (res->status != SAM_STAT_CHECK_CONDITION ||
		    (res->sense[2] & 0x0f) != SENSE_UNIT_ATTENTION)
			break;
	}
	return res;
}

static void test_alua_from_another_thread(void **state)
{
	struct prt *t = prt_create(FAKE_SYNC);
	struct scsitgt_alua_opts o;
	struct flipper f = { .tgt = t->lf->tgt, .n = 500, .last = SCSITGT_ALUA_STANDBY };
	uv_thread_t th;
	struct lf_result *res;

	(void)state;
	scsitgt_alua_opts_init(&o, sizeof(o));
	o.modes = SCSITGT_ALUA_IMPLICIT;
	assert_int_equal(scsitgt_alua_configure(t->lf->tgt, &o), 0);
	assert_int_equal(scsitgt_alua_group_create(t->lf->tgt, 10, SCSITGT_ALUA_ACTIVE_OPTIMIZED),
			 0);
	assert_int_equal(scsitgt_alua_group_add_port(t->lf->tgt, 10, 1), 0);
	assert_good(tur_past_uas(t));
	/* B's commands run here while another thread changes its group's state. */
	assert_int_equal(uv_thread_create(&th, flip_thread, &f), 0);
	/* Each flip queues a unit attention: while they keep coming, B may meet more of them in
	 * a row than tur_past_uas() skips, so a unit attention is a valid answer here too. */
	for (unsigned int i = 0; i < 200; i++) {
		res = tur_past_uas(t);
		assert_true(res->status == SAM_STAT_GOOD ||
			    (res->status == SAM_STAT_CHECK_CONDITION &&
			     ((res->sense[2] & 0x0f) == SENSE_NOT_READY ||
			      (res->sense[2] & 0x0f) == SENSE_UNIT_ATTENTION)));
	}
	assert_int_equal(uv_thread_join(&th), 0);
	/* The last change, made on the other thread, is what B's next command meets. */
	assert_sense(tur_past_uas(t), SENSE_NOT_READY, 0x04, 0x0b);
	f.n = 0;
	f.last = SCSITGT_ALUA_ACTIVE_OPTIMIZED;
	assert_int_equal(uv_thread_create(&th, flip_thread, &f), 0);
	assert_int_equal(uv_thread_join(&th), 0);
	ua(prt_run(t, t->b, (uint8_t[CDB_BUF]){ 0 }, 6, NULL, 0), 0x2a, 0x06);
	assert_good(tur_past_uas(t));
	prt_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reserved_flag_follows_state),
		cmocka_unit_test(test_reserved_flag_loaded_state),
		cmocka_unit_test(test_ua_from_another_thread),
		cmocka_unit_test(test_alua_from_another_thread),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
