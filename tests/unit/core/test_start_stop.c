/* SPDX-License-Identifier: MIT */
/* SBC-4 §5.25 START STOP UNIT and PREVENT ALLOW MEDIUM REMOVAL. */
#include "test_util.h"

#include "core/scsi_spec.h"

static void test_eject_and_load(void **state)
{
	struct tctx *t = tctx_create(SCSITGT_LUN_REMOVABLE, NULL);
	struct lf_result *r;

	(void)state;
	assert_good(tctx_run(t, cdb_tur(t->cdb)));
	/* Unload: START 0, LOEJ 1. */
	r = tctx_run(t, cdb_start_stop(t->cdb, 0, true, false));
	assert_good(r);
	assert_false(t->lun->medium.present);
	/* Media commands: NOT READY, MEDIUM NOT PRESENT. */
	r = tctx_run(t, cdb_tur(t->cdb));
	assert_sense(r, 0x2, 0x3a, 0x00);
	r = tctx_run(t, cdb_rw(t->cdb, SBC_READ_10, 0, 1, 0));
	assert_sense(r, 0x2, 0x3a, 0x00);
	r = tctx_run(t, cdb_read_capacity16(t->cdb, 32));
	assert_sense(r, 0x2, 0x3a, 0x00);
	/* INQUIRY and MODE SENSE still work. */
	assert_good(tctx_run(t, cdb_inquiry(t->cdb, false, 0, 96)));
	assert_good(tctx_run(t, cdb_mode_sense6(t->cdb, false, 0, 0x3f, 0, 255)));
	/* Load: START 1, LOEJ 1. */
	r = tctx_run(t, cdb_start_stop(t->cdb, 0, true, true));
	assert_good(r);
	assert_true(t->lun->medium.present);
	assert_good(tctx_run(t, cdb_tur(t->cdb)));
	assert_good(tctx_run(t, cdb_rw(t->cdb, SBC_READ_10, 0, 1, 0)));
	tctx_destroy(t);
}

static void test_stop_and_start(void **state)
{
	struct tctx *t = tctx_create(0, NULL);
	struct lf_result *r;

	(void)state;
	r = tctx_run(t, cdb_start_stop(t->cdb, 0, false, false));
	assert_good(r);
	/* Stopped: NOT READY, INITIALIZING COMMAND REQUIRED. */
	r = tctx_run(t, cdb_tur(t->cdb));
	assert_sense(r, 0x2, 0x04, 0x02);
	r = tctx_run(t, cdb_rw(t->cdb, SBC_READ_16, 0, 1, 0));
	assert_sense(r, 0x2, 0x04, 0x02);
	r = tctx_run(t, cdb_start_stop(t->cdb, 0, false, true));
	assert_good(r);
	assert_good(tctx_run(t, cdb_tur(t->cdb)));
	/* LOEJ on a fixed medium does not unload it (SBC-4 §5.25 "if removable"). */
	r = tctx_run(t, cdb_start_stop(t->cdb, 0, true, false));
	assert_good(r);
	assert_true(t->lun->medium.present);
	r = tctx_run(t, cdb_tur(t->cdb));
	assert_sense(r, 0x2, 0x04, 0x02);
	assert_good(tctx_run(t, cdb_start_stop(t->cdb, 0, true, true)));
	assert_good(tctx_run(t, cdb_tur(t->cdb)));
	tctx_destroy(t);
}

static void test_power_conditions(void **state)
{
	struct tctx *t = tctx_create(0, NULL);
	struct lf_result *r;

	(void)state;
	/* SBC-4 Table 62: 1h, 2h, 3h, 7h, Ah, Bh are power conditions; the rest reserved, 5h
	 * obsolete: invalid field at the POWER CONDITION field. */
	static const int8_t max_mod[16] = {
		0, 0, 2, 1, -1, -1, -1, 0, -1, -1, 2, 1, -1, -1, -1, -1
	};

	for (uint8_t pc = 1; pc < 16; pc++) {
		r = tctx_run(t, cdb_start_stop(t->cdb, pc, false, true));
		if (max_mod[pc] < 0) {
			assert_bad_cdb(r, 4, 7);
			continue;
		}
		assert_good(r);
		/* Each modifier up to the condition's last one is accepted, one more is not. */
		for (int m = 0; m <= max_mod[pc] + 1 && m < 16; m++) {
			cdb_start_stop(t->cdb, pc, false, true);
			t->cdb[3] = (uint8_t)m;
			r = tctx_run(t, 6);
			if (m <= max_mod[pc])
				assert_good(r);
			else
				assert_bad_cdb(r, 3, 3);
		}
	}
	cdb_start_stop(t->cdb, 0, false, true);
	t->cdb[3] = 0x01; /* POWER CONDITION MODIFIER of START_VALID */
	r = tctx_run(t, 6);
	assert_bad_cdb(r, 3, 3);
	cdb_start_stop(t->cdb, 0, false, true);
	t->cdb[2] = 0x01; /* reserved */
	r = tctx_run(t, 6);
	assert_bad_cdb(r, 2, 0);
	/* A power condition ignores START and LOEJ (SBC-4 §5.25): a stopped unit becomes
	 * ready, and LOEJ with START 0 does not unload a removable medium. */
	assert_good(tctx_run(t, cdb_start_stop(t->cdb, 0, false, false)));
	assert_sense(tctx_run(t, cdb_tur(t->cdb)), 0x2, 0x04, 0x02);
	assert_good(tctx_run(t, cdb_start_stop(t->cdb, 0x3, true, false)));
	assert_good(tctx_run(t, cdb_tur(t->cdb)));
	assert_true(t->lun->medium.present);
	/* IMMED and NO_FLUSH are accepted. */
	cdb_start_stop(t->cdb, 0, false, true);
	t->cdb[1] = 0x01;
	t->cdb[4] |= 0x04;
	assert_good(tctx_run(t, 6));
	tctx_destroy(t);
}

static void test_stop_flushes(void **state)
{
	struct fake_backend_opts o;
	struct tctx *t;
	struct lf_result *r;

	(void)state;
	fake_backend_opts_init(&o);
	o.geo_flags = SCSITGT_GEOMETRY_WRITE_CACHE;
	o.supports = 1u << SCSITGT_IO_FLUSH;
	t = tctx_create(SCSITGT_LUN_WRITE_CACHE, &o);
	/* NO_FLUSH 0: the cache is written before the unit stops. */
	r = tctx_run(t, cdb_start_stop(t->cdb, 0, false, false));
	assert_good(r);
	assert_int_equal(t->fb->nrecs, 1);
	assert_int_equal(fake_backend_last(t->fb)->type, SCSITGT_IO_FLUSH);
	assert_true(t->lun->medium.stopped);
	assert_good(tctx_run(t, cdb_start_stop(t->cdb, 0, false, true)));
	/* NO_FLUSH 1: no flush. */
	cdb_start_stop(t->cdb, 0, false, false);
	t->cdb[4] |= 0x04;
	assert_good(tctx_run(t, 6));
	assert_int_equal(t->fb->nrecs, 1);
	tctx_destroy(t);

	/* SBC-4 §5.25 NO_FLUSH 0 with WCE 0 on a cached backend: what was cached while WCE was
	 * 1 (or by ios without FUA) still reaches the medium before the unit stops. */
	t = tctx_create(0, &o);
	assert_false(t->lun->mode.wce);
	assert_good(tctx_run(t, cdb_start_stop(t->cdb, 0, false, false)));
	assert_int_equal(t->fb->nrecs, 1);
	assert_int_equal(fake_backend_last(t->fb)->type, SCSITGT_IO_FLUSH);
	tctx_destroy(t);
	/* Without a volatile cache: no flush. */
	o.geo_flags = 0;
	t = tctx_create(0, &o);
	assert_good(tctx_run(t, cdb_start_stop(t->cdb, 0, false, false)));
	assert_int_equal(t->fb->nrecs, 0);
	tctx_destroy(t);
}

static void test_prevent_allow(void **state)
{
	struct tctx *t = tctx_create(SCSITGT_LUN_REMOVABLE, NULL);
	struct lf_result *r;

	(void)state;
	assert_good(tctx_run(t, cdb_prevent_allow(t->cdb, 1)));
	/* A prevented unload: ILLEGAL REQUEST, MEDIUM REMOVAL PREVENTED. */
	r = tctx_run(t, cdb_start_stop(t->cdb, 0, true, false));
	assert_sense(r, 0x5, 0x53, 0x02);
	assert_true(t->lun->medium.present);
	/* Stopping without unloading is still allowed. */
	assert_good(tctx_run(t, cdb_start_stop(t->cdb, 0, false, false)));
	assert_good(tctx_run(t, cdb_start_stop(t->cdb, 0, false, true)));
	assert_good(tctx_run(t, cdb_prevent_allow(t->cdb, 0)));
	assert_good(tctx_run(t, cdb_start_stop(t->cdb, 0, true, false)));
	assert_false(t->lun->medium.present);
	/* A prevented load is refused too, and a power condition is not a load. */
	assert_good(tctx_run(t, cdb_prevent_allow(t->cdb, 1)));
	r = tctx_run(t, cdb_start_stop(t->cdb, 0, true, true));
	assert_sense(r, 0x5, 0x53, 0x02);
	assert_false(t->lun->medium.present);
	assert_good(tctx_run(t, cdb_start_stop(t->cdb, 0x1, true, true)));
	assert_false(t->lun->medium.present);
	assert_good(tctx_run(t, cdb_prevent_allow(t->cdb, 0)));
	assert_good(tctx_run(t, cdb_start_stop(t->cdb, 0, true, true)));
	assert_true(t->lun->medium.present);
	assert_good(tctx_run(t, cdb_start_stop(t->cdb, 0, true, false)));
	/* PREVENT 10b/11b are obsolete (medium changers). */
	r = tctx_run(t, cdb_prevent_allow(t->cdb, 2));
	assert_bad_cdb(r, 4, 1);
	r = tctx_run(t, cdb_prevent_allow(t->cdb, 3));
	assert_bad_cdb(r, 4, 1);
	cdb_prevent_allow(t->cdb, 0);
	t->cdb[4] = 0x80;
	r = tctx_run(t, 6);
	assert_bad_cdb(r, 4, 7);
	tctx_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_eject_and_load),	 cmocka_unit_test(test_stop_and_start),
		cmocka_unit_test(test_power_conditions), cmocka_unit_test(test_stop_flushes),
		cmocka_unit_test(test_prevent_allow),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
