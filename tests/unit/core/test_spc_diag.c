/* SPDX-License-Identifier: MIT */
/* SPC-5 §6.42 SEND DIAGNOSTIC and §6.29 RECEIVE DIAGNOSTIC RESULTS (core/spc_diag.c). */
#include <errno.h>
#include <string.h>

#include "test_util.h"

#include "core/scsi_spec.h"

static size_t cdb_recv_diag(uint8_t *cdb, uint8_t b1, uint8_t page, uint16_t alloc)
{
	memset(cdb, 0, CDB_BUF);
	cdb[0] = SPC_RECEIVE_DIAGNOSTIC_RESULTS;
	cdb[1] = b1;
	cdb[2] = page;
	put_be16(&cdb[3], alloc);
	return 6;
}

static void test_default_self_test(void **state)
{
	struct tctx *t = tctx_create(0, NULL);
	struct lf_result *r;

	(void)state;
	/* SELFTEST 1 (with DEVOFFL and UNITOFFL permissions): the first and last block read. */
	t->fb->nrecs = 0;
	assert_good(tctx_run(t, cdb_send_diag(t->cdb, 0x04 | 0x03, 0)));
	assert_int_equal(t->fb->nrecs, 2);
	assert_int_equal(t->fb->recs[0].type, SCSITGT_IO_READ);
	assert_int_equal(t->fb->recs[0].lba, 0);
	assert_int_equal(t->fb->recs[1].lba, t->fb->o.num_blocks - 1);
	/* A medium that cannot be read fails it: HARDWARE ERROR, LOGICAL UNIT FAILED
	 * SELF-TEST. */
	fake_backend_fail_next(t->fb, -EIO, 1);
	r = tctx_run(t, cdb_send_diag(t->cdb, 0x04, 0));
	assert_sense(r, 0x4, 0x3e, 0x03);
	/* SELFTEST 0, SELF-TEST CODE 000b, no list: nothing to do. */
	t->fb->nrecs = 0;
	assert_good(tctx_run(t, cdb_send_diag(t->cdb, 0, 0)));
	assert_int_equal(t->fb->nrecs, 0);
	tctx_destroy(t);
}

static void test_send_diag_fields(void **state)
{
	struct tctx *t = tctx_create(0, NULL);
	uint8_t page[8] = { 0 };
	struct lf_result *r;

	(void)state;
	/* SELFTEST with a SELF-TEST CODE, or with a parameter list. */
	r = tctx_run(t, cdb_send_diag(t->cdb, 0x20 | 0x04, 0));
	assert_bad_cdb(r, 1, 7);
	r = tctx_run_lun(t, 0, cdb_send_diag(t->cdb, 0x10 | 0x04, 4), page, 4);
	assert_bad_cdb(r, 3, 7);
	/* The reserved SELF-TEST CODEs 011b and 111b; the others take no parameter list
	 * (test_spc_selftest.c tests what they do). */
	for (uint8_t code = 3; code < 8; code += 4) {
		r = tctx_run(t, cdb_send_diag(t->cdb, (uint8_t)(code << 5), 0));
		assert_bad_cdb(r, 1, 7);
	}
	for (uint8_t code = 1; code < 7; code++) {
		if (code == 3)
			continue;
		r = tctx_run_lun(t, 0, cdb_send_diag(t->cdb, (uint8_t)(code << 5 | 0x10), 4), page,
				 4);
		assert_bad_cdb(r, 3, 7);
	}
	/* The reserved bit 3 of byte 1 and byte 2. */
	r = tctx_run(t, cdb_send_diag(t->cdb, 0x08, 0));
	assert_bad_cdb(r, 1, 3);
	r = tctx_run(t, cdb_send_diag(t->cdb, 0, 0));
	t->cdb[2] = 1;
	r = tctx_run(t, 6);
	assert_bad_cdb(r, 2, 0);
	/* A list in a vendor specific format (PF 0). */
	r = tctx_run_lun(t, 0, cdb_send_diag(t->cdb, 0, 4), page, 4);
	assert_bad_cdb(r, 1, 4);
	/* PF 1: Supported Diagnostic Pages is accepted, any other page is not. */
	assert_good(tctx_run_lun(t, 0, cdb_send_diag(t->cdb, 0x10, 4), page, 4));
	page[0] = 0x40;
	r = tctx_run_lun(t, 0, cdb_send_diag(t->cdb, 0x10, 4), page, 4);
	assert_sense(r, 0x5, 0x26, 0x00);
	assert_sks(r, 0, 0, 7);
	page[0] = 0;
	put_be16(&page[2], 4);
	r = tctx_run_lun(t, 0, cdb_send_diag(t->cdb, 0x10, 8), page, 8);
	assert_sks(r, 0, 2, 7);
	r = tctx_run_lun(t, 0, cdb_send_diag(t->cdb, 0x10, 2), page, 2);
	assert_sense(r, 0x5, 0x1a, 0x00);
	tctx_destroy(t);
}

static void test_receive_diag(void **state)
{
	struct tctx *t = tctx_create(0, NULL);
	static const uint8_t want[] = { 0x00, 0x00, 0x00, 0x01, 0x00 };
	struct lf_result *r;

	(void)state;
	r = tctx_run(t, cdb_recv_diag(t->cdb, 0x01, 0x00, 255));
	assert_good(r);
	assert_int_equal(r->data_len, sizeof(want));
	assert_memory_equal(r->data, want, sizeof(want));
	/* PCV 0: the page of the last SEND DIAGNOSTIC, which can only be this one. */
	r = tctx_run(t, cdb_recv_diag(t->cdb, 0x00, 0x00, 255));
	assert_good(r);
	assert_memory_equal(r->data, want, sizeof(want));
	r = tctx_run(t, cdb_recv_diag(t->cdb, 0x01, 0x00, 3));
	assert_good(r);
	assert_int_equal(r->data_len, 3);
	/* PCV 1 with a page we do not have; reserved bits of byte 1. */
	r = tctx_run(t, cdb_recv_diag(t->cdb, 0x01, 0x80, 255));
	assert_bad_cdb(r, 2, 7);
	r = tctx_run(t, cdb_recv_diag(t->cdb, 0x02, 0x00, 255));
	assert_bad_cdb(r, 1, 1);
	tctx_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_self_test),
		cmocka_unit_test(test_send_diag_fields),
		cmocka_unit_test(test_receive_diag),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
