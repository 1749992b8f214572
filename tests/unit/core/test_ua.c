/* SPDX-License-Identifier: MIT */
/* Unit attention conditions (SAM-5 §5.14, SPC-5 §5.14). */
#include <errno.h>

#include "core/ua.h"
#include "test_pr_common.h"

static void test_power_on_once_per_lun(void **state)
{
	struct prt *t = prt_create(FAKE_SYNC);
	struct scsitgt__session *c;
	struct fake_backend *fb1;
	struct fake_backend_opts fbo;
	uint8_t cdb[CDB_BUF];
	struct lf_result *r;

	(void)state;
	fake_backend_opts_init(&fbo);
	assert_int_equal(fake_backend_lun_create(NULL, &fb1, t->lf->tgt, 1, 0, &fbo), 0);
	assert_int_equal(loop_fabric_add_session(t->lf, "iqn.x:c,i,0x000000000001", 1, &c), 0);
	/* INQUIRY and REPORT LUNS run and leave the condition pending. */
	ok(prt_run(t, c, cdb, cdb_inquiry(cdb, false, 0, 36), NULL, 0));
	ok(prt_run(t, c, cdb, cdb_report_luns(cdb, 0, 64), NULL, 0));
	ua(prt_run(t, c, cdb, cdb_tur(cdb), NULL, 0), 0x29, 0x00);
	ok(prt_run(t, c, cdb, cdb_tur(cdb), NULL, 0));
	/* LUN 1 is a logical unit of its own: POWER ON again, there. REQUEST SENSE returns it
	 * as sense data with GOOD status and clears it. */
	lf_result_clear(&t->r);
	loop_fabric_run_on(t->lf, c, 1, cdb, cdb_request_sense(cdb, false, 252), NULL, 0, &t->r);
	r = &t->r;
	assert_int_equal(r->status, 0);
	assert_int_equal(r->data[2] & 0x0f, SENSE_UNIT_ATTENTION);
	assert_int_equal(r->data[12], 0x29);
	lf_result_clear(&t->r);
	loop_fabric_run_on(t->lf, c, 1, cdb, cdb_tur(cdb), NULL, 0, &t->r);
	assert_good(&t->r);
	/* An unsupported opcode still reports the pending condition first. */
	assert_int_equal(loop_fabric_add_session(t->lf, "iqn.x:d,i,0x000000000001", 1, &c), 0);
	cdb[0] = 0xff;
	ua(prt_run(t, c, cdb, 6, NULL, 0), 0x29, 0x00);
	prt_destroy(t);
}

static void test_capacity_and_luns_changed(void **state)
{
	struct prt *t = prt_create(FAKE_SYNC);
	struct scsitgt_lun *l1;
	struct fake_backend *fb1;
	struct fake_backend_opts fbo;
	uint8_t cdb[CDB_BUF];

	(void)state;
	fake_backend_opts_init(&fbo);
	assert_int_equal(scsitgt_lun_resize(t->lun, 0), -EINVAL);
	assert_int_equal(scsitgt_lun_resize(t->lun, t->lun->geo.num_blocks), 0);
	ok(prt_read(t, t->b));
	assert_int_equal(scsitgt_lun_resize(t->lun, t->lun->geo.num_blocks / 2), 0);
	ua(prt_read(t, t->b), 0x2a, 0x09);
	ua(prt_read(t, t->a2), 0x2a, 0x09);
	ok(prt_read(t, t->b));
	/* A new LUN: REPORTED LUNS DATA HAS CHANGED on the LUNs the nexuses know. REPORT LUNS
	 * clears it; other commands report it. */
	assert_int_equal(fake_backend_lun_create(&l1, &fb1, t->lf->tgt, 1, 0, &fbo), 0);
	ok(prt_run(t, t->b, cdb, cdb_report_luns(cdb, 0, 64), NULL, 0));
	ok(prt_read(t, t->b));
	ua(prt_read(t, t->a2), 0x3f, 0x0e);
	scsitgt_lun_destroy(l1, NULL, NULL);
	ua(prt_read(t, t->b), 0x3f, 0x0e);
	ua(prt_read(t, t->a2), 0x3f, 0x0e);
	/* MODE PARAMETERS CHANGED: the other nexuses, not the one that changed them. */
	scsitgt__ua_mode_params_changed(t->b, 0);
	ok(prt_read(t, t->b));
	ua(prt_read(t, t->a2), 0x2a, 0x01);
	prt_destroy(t);
}

static void test_queue_precedence(void **state)
{
	struct prt *t = prt_create(FAKE_SYNC);
	enum scsitgt__sense_reason first;
	static const enum scsitgt__sense_reason many[] = {
		SCSITGT__SR_UA_MODE_PARAMS_CHANGED,
		SCSITGT__SR_UA_RESERVATIONS_PREEMPTED,
		SCSITGT__SR_UA_RESERVATIONS_RELEASED,
		SCSITGT__SR_UA_REGISTRATIONS_PREEMPTED,
		SCSITGT__SR_UA_ASYMMETRIC_ACCESS_CHANGED,
		SCSITGT__SR_UA_CAPACITY_CHANGED,
		SCSITGT__SR_UA_REPORTED_LUNS_CHANGED,
		SCSITGT__SR_UA_COMMANDS_CLEARED_BY_OTHER,
		SCSITGT__SR_UA_MEDIUM_CHANGED,
	};

	(void)state;
	assert_false(scsitgt__ua_pending(t->b, 0, NULL));
	/* Nine distinct conditions into a queue of eight: the oldest eight stay, in order;
	 * duplicates are merged. */
	for (size_t i = 0; i < 9; i++)
		scsitgt__ua_establish(t->b, 0, many[i]);
	scsitgt__ua_establish(t->b, 0, many[0]);
	assert_true(scsitgt__ua_pending(t->b, 0, &first));
	assert_int_equal(first, many[0]);
	ua(prt_read(t, t->b), 0x2a, 0x01);
	ua(prt_read(t, t->b), 0x2a, 0x03);
	for (size_t i = 2; i < 8; i++) {
		struct lf_result *r = prt_read(t, t->b);

		assert_int_equal(r->status, SAM_STAT_CHECK_CONDITION);
		assert_int_equal(r->sense[12], scsitgt__sense_lookup(many[i])->asc);
		assert_int_equal(r->sense[13], scsitgt__sense_lookup(many[i])->ascq);
	}
	ok(prt_read(t, t->b));
	/* A reset supersedes what is pending. */
	scsitgt__ua_establish(t->b, 0, SCSITGT__SR_UA_CAPACITY_CHANGED);
	scsitgt__ua_establish(t->b, 0, SCSITGT__SR_UA_LUN_RESET);
	scsitgt__ua_establish(t->b, 0, SCSITGT__SR_UA_MODE_PARAMS_CHANGED);
	ua(prt_read(t, t->b), 0x29, 0x03);
	ua(prt_read(t, t->b), 0x2a, 0x01);
	ok(prt_read(t, t->b));
	prt_destroy(t);
}

/*
 * SAM-5 §6.3.4: a nexus that comes back (same initiator port, same target port) after it ended
 * finds I_T NEXUS LOSS OCCURRED, once per LUN it had seen; other nexuses get POWER ON.
 */
static void test_nexus_loss(void **state)
{
	struct prt *t = prt_create(FAKE_SYNC);
	struct scsitgt__session *s, *other_port, *fresh;
	struct scsitgt_lun *lun1;
	struct fake_backend *fb1;
	struct fake_backend_opts o;
	uint8_t cdb[CDB_BUF];
	enum scsitgt__sense_reason first;

	(void)state;
	fake_backend_opts_init(&o);
	assert_int_equal(fake_backend_lun_create(&lun1, &fb1, t->lf->tgt, 1, 0, &o), 0);
	/* B saw LUN 0 (prt_create) but not LUN 1, whose creation it hears of. */
	ua(prt_read(t, t->b), 0x3f, 0x0e);
	ok(prt_out(t, t->b, PR_OUT_REGISTER, 0, 0, 0x77, 0));
	scsitgt__session_destroy(t->b);
	assert_int_equal(loop_fabric_add_session(t->lf, PORT_B, 1, &t->b), 0);
	/* QUERY ASYNCHRONOUS EVENT sees it before any command consumes it. */
	assert_true(scsitgt__ua_pending(t->b, 0, &first));
	assert_int_equal(first, SCSITGT__SR_UA_NEXUS_LOSS);
	ua(prt_read(t, t->b), 0x29, 0x07);
	ok(prt_read(t, t->b));
	/* The registration survived. */
	ok(prt_out(t, t->b, PR_OUT_REGISTER, 0, 0x77, 0, 0));
	/* LUN 1 was never seen through that nexus: POWER ON. */
	lf_result_clear(&t->r);
	loop_fabric_run_on(t->lf, t->b, 1, cdb, cdb_tur(cdb), NULL, 0, &t->r);
	ua(&t->r, 0x29, 0x00);
	/* Reported once: a second loss and return reports it again, though. */
	scsitgt__session_destroy(t->b);
	assert_int_equal(loop_fabric_add_session(t->lf, PORT_B, 1, &t->b), 0);
	ua(prt_read(t, t->b), 0x29, 0x07);
	lf_result_clear(&t->r);
	loop_fabric_run_on(t->lf, t->b, 1, cdb, cdb_tur(cdb), NULL, 0, &t->r);
	ua(&t->r, 0x29, 0x07);
	/* The same initiator port through another target port is another nexus. */
	scsitgt__session_destroy(t->b);
	assert_int_equal(loop_fabric_add_session(t->lf, PORT_B, 2, &other_port), 0);
	ua(prt_read(t, other_port), 0x29, 0x00);
	/* So is another ISID of the same initiator. */
	assert_int_equal(loop_fabric_add_session(t->lf,
						 "iqn.2024-01.org.example:other,i,0x23d0000000ff",
						 1, &fresh),
			 0);
	ua(prt_read(t, fresh), 0x29, 0x00);
	/* The original nexus is still remembered. */
	assert_int_equal(loop_fabric_add_session(t->lf, PORT_B, 1, &s), 0);
	ua(prt_read(t, s), 0x29, 0x07);
	(void)fb1;
	prt_destroy(t);
}

/* Run @cdb on LUN @lun of nexus @s. */
static struct lf_result *run_on(struct prt *t, struct scsitgt__session *s, uint64_t lun,
				const uint8_t *cdb, size_t len)
{
	lf_result_clear(&t->r);
	loop_fabric_run_on(t->lf, s, lun, cdb, len, NULL, 0, &t->r);
	return &t->r;
}

static struct lf_result *tur_on(struct prt *t, struct scsitgt__session *s, uint64_t lun)
{
	uint8_t cdb[CDB_BUF];

	return run_on(t, s, lun, cdb, cdb_tur(cdb));
}

/*
 * SPC-5 §7.7.7 (VPD 86h LUICLR, which we set): REPORTED LUNS DATA HAS CHANGED reported for any
 * LUN of an I_T nexus is cleared on every LUN of that nexus; the other nexuses keep theirs,
 * and so do the other conditions of the cleared LUNs.
 */
static void test_luns_changed_cleared_per_nexus(void **state)
{
	struct prt *t = prt_create(FAKE_SYNC);
	struct fake_backend_opts o;
	uint8_t cdb[CDB_BUF];
	struct lf_result *r;

	(void)state;
	fake_backend_opts_init(&o);
	assert_int_equal(fake_backend_lun_create(NULL, NULL, t->lf->tgt, 1, 0, &o), 0);
	assert_int_equal(fake_backend_lun_create(NULL, NULL, t->lf->tgt, 2, 0, &o), 0);
	/* B and A2 learn of the new LUNs on LUN 0 and meet LUNs 1 and 2: nothing pending. */
	ua(tur_on(t, t->b, 0), 0x3f, 0x0e);
	ua(tur_on(t, t->a2, 0), 0x3f, 0x0e);
	for (uint64_t lun = 1; lun < 3; lun++) {
		ua(tur_on(t, t->b, lun), 0x29, 0x00);
		ua(tur_on(t, t->a2, lun), 0x29, 0x00);
	}
	/* A condition of its own on LUN 2, queued before the change. */
	scsitgt__ua_establish(t->b, 2, SCSITGT__SR_UA_MODE_PARAMS_CHANGED);
	assert_int_equal(fake_backend_lun_create(NULL, NULL, t->lf->tgt, 3, 0, &o), 0);
	ua(tur_on(t, t->b, 0), 0x3f, 0x0e);
	ok(tur_on(t, t->b, 1));
	ua(tur_on(t, t->b, 2), 0x2a, 0x01);
	ok(tur_on(t, t->b, 2));
	/* Per nexus: A2 has it on every LUN until it is reported there once. */
	ua(tur_on(t, t->a2, 2), 0x3f, 0x0e);
	ok(tur_on(t, t->a2, 0));
	ok(tur_on(t, t->a2, 1));
	/* Reported by REQUEST SENSE it is cleared everywhere too. */
	assert_int_equal(fake_backend_lun_create(NULL, NULL, t->lf->tgt, 4, 0, &o), 0);
	r = run_on(t, t->b, 1, cdb, cdb_request_sense(cdb, false, 252));
	assert_good(r);
	assert_int_equal(r->data[2] & 0x0f, SENSE_UNIT_ATTENTION);
	assert_int_equal(r->data[12], 0x3f);
	assert_int_equal(r->data[13], 0x0e);
	ok(tur_on(t, t->b, 0));
	ok(tur_on(t, t->b, 2));
	/* LUN 3 is new to B: POWER ON covers the change. */
	ua(tur_on(t, t->b, 3), 0x29, 0x00);
	assert_false(scsitgt__ua_pending(t->b, 0, NULL));
	assert_false(scsitgt__ua_pending(t->b, 2, NULL));
	/* REPORT LUNS clears it on the LUN it is sent to only (it reports nothing). */
	assert_int_equal(fake_backend_lun_create(NULL, NULL, t->lf->tgt, 5, 0, &o), 0);
	ok(run_on(t, t->b, 0, cdb, cdb_report_luns(cdb, 0, 256)));
	ok(tur_on(t, t->b, 0));
	ua(tur_on(t, t->b, 1), 0x3f, 0x0e);
	ok(tur_on(t, t->b, 2));
	prt_destroy(t);
}

/*
 * A LUN masked from a nexus (core/acl.c) gets no REPORTED LUNS DATA HAS CHANGED when LUNs come
 * or go: the nexus cannot address it, so the condition would only sit there (and keep every
 * command of the nexus on the slow path) until a report elsewhere cleared it.
 */
static void test_luns_changed_skips_masked(void **state)
{
	struct prt *t = prt_create(FAKE_SYNC);
	struct fake_backend_opts o;

	(void)state;
	fake_backend_opts_init(&o);
	assert_int_equal(fake_backend_lun_create(NULL, NULL, t->lf->tgt, 1, 0, &o), 0);
	ua(tur_on(t, t->b, 0), 0x3f, 0x0e);
	ua(tur_on(t, t->b, 1), 0x29, 0x00);
	/* Only LUN 0 stays visible: B hears of it there. */
	assert_int_equal(scsitgt_target_map_lun(t->lf->tgt, NULL, 0), 0);
	assert_int_equal(scsitgt_target_set_lun_masking(t->lf->tgt, true), 0);
	ua(tur_on(t, t->b, 0), 0x3f, 0x0e);
	assert_false(scsitgt__ua_pending(t->b, 1, NULL));
	/* A new LUN (masked too): the condition on LUN 0 only. */
	assert_int_equal(fake_backend_lun_create(NULL, NULL, t->lf->tgt, 2, 0, &o), 0);
	assert_true(scsitgt__ua_pending(t->b, 0, NULL));
	assert_false(scsitgt__ua_pending(t->b, 1, NULL));
	ua(tur_on(t, t->b, 0), 0x3f, 0x0e);
	ok(tur_on(t, t->b, 0));
	prt_destroy(t);
}

/*
 * SAM-5 §5.14: a condition is cleared when it is reported. A REQUEST SENSE or REPORT LUNS that
 * is itself refused (INVALID FIELD IN CDB) reported nothing: the condition stays pending.
 */
static void test_refused_command_keeps_condition(void **state)
{
	struct prt *t = prt_create(FAKE_SYNC);
	struct fake_backend_opts o;
	uint8_t cdb[CDB_BUF];
	struct lf_result *r;
	size_t len;

	(void)state;
	fake_backend_opts_init(&o);
	scsitgt__ua_mode_params_changed(t->a, 0);
	/* NACA in the CONTROL byte: refused, the condition is still there. */
	len = cdb_request_sense(cdb, false, 252);
	cdb[5] = 0x04;
	bad_cdb(prt_run(t, t->b, cdb, len, NULL, 0), 5, 2);
	assert_true(scsitgt__ua_pending(t->b, 0, NULL));
	/* A reserved bit of byte 1. */
	len = cdb_request_sense(cdb, false, 252);
	cdb[1] = 0x02;
	bad_cdb(prt_run(t, t->b, cdb, len, NULL, 0), 1, 1);
	/* Reported by the next command that runs. */
	ua(prt_read(t, t->b), 0x2a, 0x01);
	ok(prt_read(t, t->b));
	/* A valid REQUEST SENSE reports it, as before. */
	r = prt_run(t, t->a2, cdb, cdb_request_sense(cdb, false, 252), NULL, 0);
	assert_good(r);
	assert_int_equal(r->data[12], 0x2a);
	assert_int_equal(r->data[13], 0x01);
	ok(prt_read(t, t->a2));
	/* REPORT LUNS with a reserved SELECT REPORT keeps REPORTED LUNS DATA HAS CHANGED. */
	assert_int_equal(fake_backend_lun_create(NULL, NULL, t->lf->tgt, 1, 0, &o), 0);
	bad_cdb(prt_run(t, t->b, cdb, cdb_report_luns(cdb, 0x07, 256), NULL, 0), 2, 7);
	bad_cdb(prt_run(t, t->b, cdb, cdb_report_luns(cdb, 0, 8), NULL, 0), 6, -1);
	ua(prt_read(t, t->b), 0x3f, 0x0e);
	prt_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_power_on_once_per_lun),
		cmocka_unit_test(test_capacity_and_luns_changed),
		cmocka_unit_test(test_queue_precedence),
		cmocka_unit_test(test_nexus_loss),
		cmocka_unit_test(test_luns_changed_cleared_per_nexus),
		cmocka_unit_test(test_luns_changed_skips_masked),
		cmocka_unit_test(test_refused_command_keeps_condition),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
