/* SPDX-License-Identifier: MIT */
/*
 * SPC-5 §6.15 PREVENT ALLOW MEDIUM REMOVAL kept per I_T nexus (core/sbc.c): the medium stays
 * locked while any nexus prevents its removal; a nexus ends its own prevention by allowing
 * removal or by going away; a logical unit reset ends every nexus's.
 */
#include <string.h>

#include "test_util.h"

#include "core/fabric.h"
#include "core/scsi_spec.h"
#include "core/tmf.h"

#define PORT_B "iqn.2024-01.org.example:b,i,0x23d000000002"

static struct lf_result *run_on(struct tctx *t, struct scsitgt__session *s, size_t len)
{
	lf_result_clear(&t->r);
	loop_fabric_run_on(t->lf, s, 0, t->cdb, len, NULL, 0, &t->r);
	return &t->r;
}

/* START STOP UNIT with LOEJ: eject (START 0) then load (START 1). */
static struct lf_result *eject(struct tctx *t, struct scsitgt__session *s)
{
	return run_on(t, s, cdb_start_stop(t->cdb, 0, true, false));
}

static void load(struct tctx *t, struct scsitgt__session *s)
{
	assert_good(run_on(t, s, cdb_start_stop(t->cdb, 0, true, true)));
}

static void tmf_done(void *arg, enum scsitgt__tmf_response response)
{
	*(int *)arg = (int)response;
}

static void test_two_nexuses(void **state)
{
	struct tctx *t = tctx_create(SCSITGT_LUN_REMOVABLE, NULL);
	struct scsitgt__session *a = t->lf->sess, *b;
	struct lf_result *r;

	(void)state;
	assert_int_equal(loop_fabric_add_session(t->lf, PORT_B, 1, &b), 0);
	/* B's first command reports POWER ON (its unit attention). */
	r = run_on(t, b, cdb_tur(t->cdb));
	assert_int_equal(r->status, 0x02);

	/* A and B both prevent; A allows: still prevented because of B. */
	assert_good(run_on(t, a, cdb_prevent_allow(t->cdb, 1)));
	assert_good(run_on(t, b, cdb_prevent_allow(t->cdb, 1)));
	assert_good(run_on(t, a, cdb_prevent_allow(t->cdb, 1))); /* twice: one entry */
	assert_good(run_on(t, a, cdb_prevent_allow(t->cdb, 0)));
	r = eject(t, a);
	assert_sense(r, 0x5, 0x53, 0x02); /* MEDIUM REMOVAL PREVENTED */
	r = eject(t, b);
	assert_sense(r, 0x5, 0x53, 0x02);
	/* B allows: the medium can go, and come back. */
	assert_good(run_on(t, b, cdb_prevent_allow(t->cdb, 0)));
	assert_good(eject(t, a));
	load(t, a);

	/* A nexus lost while preventing: its prevention ends with it. */
	assert_good(run_on(t, b, cdb_prevent_allow(t->cdb, 1)));
	assert_sense(eject(t, a), 0x5, 0x53, 0x02);
	scsitgt__session_destroy(b);
	assert_good(eject(t, a));
	load(t, a);
	/* Allowing without having prevented is no error and changes nothing. */
	assert_good(run_on(t, a, cdb_prevent_allow(t->cdb, 0)));
	tctx_destroy(t);
}

static void test_reset_releases(void **state)
{
	struct tctx *t = tctx_create(SCSITGT_LUN_REMOVABLE, NULL);
	struct scsitgt__session *a = t->lf->sess, *b;
	uint8_t lun[8];
	int resp = -1;

	(void)state;
	assert_int_equal(loop_fabric_add_session(t->lf, PORT_B, 1, &b), 0);
	(void)run_on(t, b, cdb_tur(t->cdb));
	assert_good(run_on(t, a, cdb_prevent_allow(t->cdb, 1)));
	assert_good(run_on(t, b, cdb_prevent_allow(t->cdb, 1)));
	scsitgt__lun_encode(0, lun);
	scsitgt__tmf_execute(a, SCSITGT__TMF_LUN_RESET, lun, 0, tmf_done, &resp);
	while (resp == -1)
		uv_run(&t->lf->loop, UV_RUN_ONCE);
	assert_int_equal(resp, SCSITGT__TMF_COMPLETE);
	/* The reset's unit attention first, then the medium is free for everyone. */
	assert_sense(run_on(t, a, cdb_tur(t->cdb)), 0x6, 0x29, 0x03);
	assert_good(eject(t, a));
	tctx_destroy(t);
}

static void test_fixed_medium(void **state)
{
	struct tctx *t = tctx_create(0, NULL);
	struct lf_result *r;

	(void)state;
	/* Accepted on a fixed medium; LOEJ there does not unload anything. */
	assert_good(tctx_run(t, cdb_prevent_allow(t->cdb, 1)));
	assert_good(tctx_run(t, cdb_start_stop(t->cdb, 0, true, true)));
	/* PREVENT 10b/11b (medium changer, obsolete) is refused at its first bit. */
	r = tctx_run(t, cdb_prevent_allow(t->cdb, 2));
	assert_bad_cdb(r, 4, 1);
	tctx_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_nexuses),
		cmocka_unit_test(test_reset_releases),
		cmocka_unit_test(test_fixed_medium),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
