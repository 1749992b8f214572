/* SPDX-License-Identifier: MIT */
/*
 * Read-only mappings (scsitgt_target_set_lun_read_only()): the initiator it names gets DATA
 * PROTECT, WRITE PROTECTED (07h/27h/00h) for medium writes and WP in MODE SENSE, every other
 * initiator writes as before; the every-initiator mapping; lifting it; argument errors.
 */
#include <errno.h>

#include "test_pr_common.h"

#define INIT_A "iqn.2024-01.org.example:initiator"

#define write_protected(x) sense(x, SENSE_DATA_PROTECT, 0x27, 0x00)

/* MODE SENSE(6) header byte 2, DEVICE-SPECIFIC PARAMETER: WP is bit 7 (SBC-4 §6.4.1). */
static bool mode_wp(struct prt *t, struct scsitgt__session *s)
{
	uint8_t cdb[CDB_BUF];
	struct lf_result *r =
		prt_run(t, s, cdb, cdb_mode_sense6(cdb, true, 0, 0x3f, 0, 255), NULL, 0);

	ok(r);
	assert_true(r->data_len >= 4);
	return r->data[2] & 0x80;
}

static void test_read_only_one_initiator(void **state)
{
	struct prt *t = prt_create(FAKE_SYNC);
	struct scsitgt_target *tgt = t->lf->tgt;

	(void)state;
	assert_int_equal(scsitgt_target_set_lun_read_only(tgt, INIT_A, 0, true), 0);
	/* Both nexuses of initiator A (two ISIDs) are refused, before any field is looked at. */
	write_protected(prt_write(t, t->a));
	write_protected(prt_write(t, t->a2));
	assert_true(mode_wp(t, t->a));
	/* B writes and sees no WP; everyone reads. */
	ok(prt_write(t, t->b));
	assert_false(mode_wp(t, t->b));
	ok(prt_read(t, t->a));
	/* Idempotent; then lifted. */
	assert_int_equal(scsitgt_target_set_lun_read_only(tgt, INIT_A, 0, true), 0);
	assert_int_equal(scsitgt_target_set_lun_read_only(tgt, INIT_A, 0, false), 0);
	ok(prt_write(t, t->a));
	assert_false(mode_wp(t, t->a));
	/* Another LUN number does not affect LUN 0. */
	assert_int_equal(scsitgt_target_set_lun_read_only(tgt, INIT_A, 5, true), 0);
	ok(prt_write(t, t->a));
	prt_destroy(t);
}

static void test_read_only_everyone(void **state)
{
	struct prt *t = prt_create(FAKE_SYNC);
	struct scsitgt_target *tgt = t->lf->tgt;

	(void)state;
	assert_int_equal(scsitgt_target_set_lun_read_only(tgt, NULL, 0, true), 0);
	write_protected(prt_write(t, t->a));
	write_protected(prt_write(t, t->b));
	assert_true(mode_wp(t, t->b));
	/* Lifting a per-initiator mapping that was never made changes nothing. */
	assert_int_equal(scsitgt_target_set_lun_read_only(tgt, INIT_A, 0, false), 0);
	write_protected(prt_write(t, t->a));
	assert_int_equal(scsitgt_target_set_lun_read_only(tgt, NULL, 0, false), 0);
	ok(prt_write(t, t->b));

	assert_int_equal(scsitgt_target_set_lun_read_only(NULL, NULL, 0, true), -EINVAL);
	assert_int_equal(scsitgt_target_set_lun_read_only(tgt, "", 0, true), -EINVAL);
	assert_int_equal(scsitgt_target_set_lun_read_only(tgt, INIT_A, 16384, true), -EINVAL);
	prt_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read_only_one_initiator),
		cmocka_unit_test(test_read_only_everyone),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
