/* SPDX-License-Identifier: MIT */
/*
 * Changes while the engine runs: LUN offline/online (SPC-5 Annex F 04h/12h), adding and
 * removing LUNs (REPORTED LUNS DATA HAS CHANGED, SPC-5 §5.14), resizing (CAPACITY DATA HAS
 * CHANGED, SBC-4 §4.6) and access list changes, each seen by a logged-in nexus.
 */
#include "test_util.h"

#include "core/scsi_spec.h"

#define OTHER "iqn.2024-01.org.example:other,i,0x23d000000002"

struct ev_count {
	unsigned int offline, online;
};

static void ev_cb(void *arg, const struct scsitgt_event *ev)
{
	struct ev_count *c = arg;

	if (ev->type == SCSITGT_EVENT_LUN_OFFLINE)
		c->offline++;
	if (ev->type == SCSITGT_EVENT_LUN_ONLINE)
		c->online++;
}

static struct tctx *rt_ctx(enum fake_mode mode)
{
	struct fake_backend_opts o;

	fake_backend_opts_init(&o);
	o.block_size = 512;
	o.num_blocks = 64;
	o.store = true;
	o.mode = mode;
	return tctx_create(0, &o);
}

static void test_offline(void **state)
{
	struct tctx *t = rt_ctx(FAKE_SYNC);
	struct scsitgt_lun_stats s;
	struct ev_count ev = { 0 };

	(void)state;
	assert_int_equal(scsitgt_engine_set_event_cb(t->lf->engine, ev_cb, &ev), 0);
	assert_false(scsitgt_lun_get_offline(t->lun));
	assert_int_equal(scsitgt_lun_set_offline(NULL, true), -EINVAL);
	assert_int_equal(scsitgt_lun_set_offline(t->lun, true), 0);
	assert_true(scsitgt_lun_get_offline(t->lun));
	assert_int_equal(ev.offline, 1);
	/* Setting the same state again changes nothing. */
	assert_int_equal(scsitgt_lun_set_offline(t->lun, true), 0);
	assert_int_equal(ev.offline, 1);

	/* Media commands: NOT READY, LOGICAL UNIT NOT READY, OFFLINE. */
	assert_sense(tctx_run(t, cdb_tur(t->cdb)), SENSE_NOT_READY, 0x04, 0x12);
	assert_sense(tctx_run(t, cdb_rw(t->cdb, SBC_READ_10, 0, 1, 0)), SENSE_NOT_READY, 0x04,
		     0x12);
	assert_sense(tctx_run(t, cdb_read_capacity10(t->cdb, 0, false)), SENSE_NOT_READY, 0x04,
		     0x12);
	/* Even a malformed media command: the unit is not ready first. */
	assert_sense(tctx_run(t, cdb_rw(t->cdb, SBC_READ_10, 1000, 1, 0)), SENSE_NOT_READY, 0x04,
		     0x12);
	/* A write with data: refused before it reaches the backend. */
	lf_result_clear(&t->r);
	t->fb->nrecs = 0;
	loop_fabric_run(t->lf, 0, t->cdb, cdb_rw(t->cdb, SBC_WRITE_10, 0, 1, 0), NULL, 0, &t->r);
	assert_sense(&t->r, SENSE_NOT_READY, 0x04, 0x12);
	assert_int_equal(t->fb->nrecs, 0);
	/* Commands without the medium still work. */
	assert_good(tctx_run(t, cdb_inquiry(t->cdb, false, 0, 96)));
	assert_good(tctx_run(t, cdb_report_luns(t->cdb, 0, 256)));
	assert_good(tctx_run(t, cdb_request_sense(t->cdb, false, 18)));

	memset(&s, 0, sizeof(s));
	s.size = sizeof(s);
	assert_int_equal(scsitgt_lun_get_stats(t->lun, &s), 0);
	assert_true(s.offline);
	assert_int_equal(s.cmds.check_conditions[SENSE_NOT_READY], 5);

	assert_int_equal(scsitgt_lun_set_offline(t->lun, false), 0);
	assert_int_equal(ev.online, 1);
	assert_good(tctx_run(t, cdb_tur(t->cdb)));
	assert_good(tctx_run(t, cdb_rw(t->cdb, SBC_READ_10, 0, 1, 0)));
	tctx_destroy(t);
}

static void test_offline_inflight(void **state)
{
	struct tctx *t = rt_ctx(FAKE_MANUAL);
	struct lf_result r;

	(void)state;
	memset(&r, 0, sizeof(r));
	/* A read already in the backend when the LUN goes offline finishes normally. */
	loop_fabric_start(t->lf, 0, t->cdb, cdb_rw(t->cdb, SBC_READ_10, 0, 1, 0), NULL, 0, &r);
	assert_false(r.done);
	assert_int_equal(scsitgt_lun_set_offline(t->lun, true), 0);
	fake_backend_complete_pending(t->fb);
	loop_fabric_wait(t->lf, &r);
	assert_good(&r);
	lf_result_clear(&r);
	tctx_destroy(t);
}

/* A nexus that has seen (and cleared) its POWER ON unit attention on LUN 0. */
static struct scsitgt__session *other_nexus(struct tctx *t)
{
	struct scsitgt__session *s;
	struct lf_result r;
	uint8_t cdb[16];

	memset(&r, 0, sizeof(r));
	assert_int_equal(loop_fabric_add_session(t->lf, OTHER, 1, &s), 0);
	loop_fabric_run_on(t->lf, s, 0, cdb, cdb_tur(cdb), NULL, 0, &r);
	assert_sense(&r, SENSE_UNIT_ATTENTION, 0x29, 0x00);
	lf_result_clear(&r);
	loop_fabric_run_on(t->lf, s, 0, cdb, cdb_tur(cdb), NULL, 0, &r);
	assert_good(&r);
	lf_result_clear(&r);
	return s;
}

static void test_add_remove_lun(void **state)
{
	struct tctx *t = rt_ctx(FAKE_SYNC);
	struct scsitgt__session *s = other_nexus(t);
	struct fake_backend_opts o;
	struct fake_backend *fb2;
	struct scsitgt_lun *lun2;
	struct lf_result r;
	uint8_t cdb[16];

	(void)state;
	memset(&r, 0, sizeof(r));
	fake_backend_opts_init(&o);
	o.num_blocks = 32;
	assert_int_equal(fake_backend_lun_create(&lun2, &fb2, t->lf->tgt, 5, 0, &o), 0);
	/* REPORTED LUNS DATA HAS CHANGED on the next command, then REPORT LUNS lists LUN 5. */
	loop_fabric_run_on(t->lf, s, 0, cdb, cdb_tur(cdb), NULL, 0, &r);
	assert_sense(&r, SENSE_UNIT_ATTENTION, 0x3f, 0x0e);
	lf_result_clear(&r);
	loop_fabric_run_on(t->lf, s, 0, cdb, cdb_report_luns(cdb, 0, 256), NULL, 0, &r);
	assert_good(&r);
	assert_int_equal(get_be32(&r.data[0]), 16);
	assert_int_equal(r.data[8 + 8 + 1], 5);
	lf_result_clear(&r);
	assert_ptr_equal(scsitgt_target_get_lun(t->lf->tgt, 5), lun2);

	scsitgt_lun_destroy(lun2, NULL, NULL);
	assert_null(scsitgt_target_get_lun(t->lf->tgt, 5));
	loop_fabric_run_on(t->lf, s, 0, cdb, cdb_tur(cdb), NULL, 0, &r);
	assert_sense(&r, SENSE_UNIT_ATTENTION, 0x3f, 0x0e);
	lf_result_clear(&r);
	loop_fabric_run_on(t->lf, s, 5, cdb, cdb_tur(cdb), NULL, 0, &r);
	assert_sense(&r, SENSE_ILLEGAL_REQUEST, 0x25, 0x00);
	lf_result_clear(&r);
	tctx_destroy(t);
}

static void test_resize(void **state)
{
	struct tctx *t = rt_ctx(FAKE_SYNC);
	struct scsitgt__session *s = other_nexus(t);
	struct lf_result r;
	uint8_t cdb[16];

	(void)state;
	memset(&r, 0, sizeof(r));
	assert_int_equal(scsitgt_lun_resize(t->lun, 128), 0);
	loop_fabric_run_on(t->lf, s, 0, cdb, cdb_read_capacity10(cdb, 0, false), NULL, 0, &r);
	assert_sense(&r, SENSE_UNIT_ATTENTION, 0x2a, 0x09);
	lf_result_clear(&r);
	loop_fabric_run_on(t->lf, s, 0, cdb, cdb_read_capacity10(cdb, 0, false), NULL, 0, &r);
	assert_good(&r);
	assert_int_equal(get_be32(&r.data[0]), 127);
	lf_result_clear(&r);
	tctx_destroy(t);
}

static void test_acl(void **state)
{
	struct tctx *t = rt_ctx(FAKE_SYNC);
	struct scsitgt__session *s;

	(void)state;
	/* Once the list holds a name, only listed initiators may log in; existing nexuses stay. */
	assert_int_equal(scsitgt_target_add_initiator(t->lf->tgt, "iqn.2024-01.org.example:a"), 0);
	assert_int_equal(loop_fabric_add_session(t->lf, OTHER, 1, &s), -EACCES);
	assert_good(tctx_run(t, cdb_tur(t->cdb)));
	assert_int_equal(scsitgt_target_add_initiator(t->lf->tgt, "iqn.2024-01.org.example:other"),
			 0);
	assert_int_equal(loop_fabric_add_session(t->lf, OTHER, 1, &s), 0);
	assert_int_equal(
		scsitgt_target_remove_initiator(t->lf->tgt, "iqn.2024-01.org.example:other"), 0);
	assert_int_equal(loop_fabric_add_session(t->lf, OTHER ",x", 1, &s), -EACCES);
	tctx_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_offline),
		cmocka_unit_test(test_offline_inflight),
		cmocka_unit_test(test_add_remove_lun),
		cmocka_unit_test(test_resize),
		cmocka_unit_test(test_acl),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
