/* SPDX-License-Identifier: MIT */
/* SPC-5 §6.8 LOG SENSE, §6.7 LOG SELECT and the log pages of core/spc_log.c. */
#include <string.h>

#include "test_util.h"

#include "core/scsi_spec.h"

static size_t cdb_log_select(uint8_t *cdb, uint8_t b1, uint8_t pc, uint8_t page, uint8_t sub,
			     uint16_t len)
{
	memset(cdb, 0, CDB_BUF);
	cdb[0] = SPC_LOG_SELECT;
	cdb[1] = b1;
	cdb[2] = (uint8_t)(pc << 6 | page);
	cdb[3] = sub;
	put_be16(&cdb[7], len);
	return 10;
}

static struct lf_result *run_dout(struct tctx *t, size_t len, const void *d, size_t dlen)
{
	return tctx_run_lun(t, 0, len, d, dlen);
}

static void test_supported_pages(void **state)
{
	struct tctx *t = tctx_create(0, NULL);
	static const uint8_t pages[] = { 0x00, 0x0d, 0x0f, 0x10, 0x19, 0x2f };
	struct lf_result *r;

	(void)state;
	r = tctx_run(t, cdb_log_sense(t->cdb, 0, 1, 0x00, 0x00, 0, 255));
	assert_good(r);
	/* DS (no saving), SPF 0, page 00h; one byte per page code, ascending. */
	assert_int_equal(r->data[0], 0x80);
	assert_int_equal(r->data[1], 0x00);
	assert_int_equal(get_be16(&r->data[2]), sizeof(pages));
	assert_int_equal(r->data_len, 4 + sizeof(pages));
	assert_memory_equal(&r->data[4], pages, sizeof(pages));

	/* 00h/FFh: page/subpage pairs, each page code with 00h and FFh. */
	r = tctx_run(t, cdb_log_sense(t->cdb, 0, 1, 0x00, 0xff, 0, 255));
	assert_good(r);
	assert_int_equal(r->data[0], 0xc0);
	assert_int_equal(r->data[1], 0xff);
	assert_int_equal(get_be16(&r->data[2]), 2 * 2 * sizeof(pages));
	for (size_t i = 0; i < sizeof(pages); i++) {
		assert_int_equal(r->data[4 + 4 * i], pages[i]);
		assert_int_equal(r->data[5 + 4 * i], 0x00);
		assert_int_equal(r->data[6 + 4 * i], pages[i]);
		assert_int_equal(r->data[7 + 4 * i], 0xff);
	}
	/* 0Dh/FFh: the subpages of page 0Dh only. */
	r = tctx_run(t, cdb_log_sense(t->cdb, 0, 1, 0x0d, 0xff, 0, 255));
	assert_good(r);
	assert_int_equal(r->data[0], 0xc0 | 0x0d);
	assert_int_equal(get_be16(&r->data[2]), 4);
	assert_int_equal(r->data[4], 0x0d);
	assert_int_equal(r->data[5], 0x00);
	assert_int_equal(r->data[6], 0x0d);
	assert_int_equal(r->data[7], 0xff);
	/* Truncated to the allocation length. */
	r = tctx_run(t, cdb_log_sense(t->cdb, 0, 1, 0x00, 0x00, 0, 6));
	assert_good(r);
	assert_int_equal(r->data_len, 6);
	tctx_destroy(t);
}

static void test_log_sense_fields(void **state)
{
	struct tctx *t = tctx_create(0, NULL);
	struct lf_result *r;

	(void)state;
	/* An unimplemented page: PAGE CODE (byte 2, bit 5); an unimplemented subpage of an
	 * implemented page: SUBPAGE CODE (byte 3, bit 7). */
	r = tctx_run(t, cdb_log_sense(t->cdb, 0, 1, 0x30, 0x00, 0, 255));
	assert_bad_cdb(r, 2, 5);
	r = tctx_run(t, cdb_log_sense(t->cdb, 0, 1, 0x0d, 0x01, 0, 255));
	assert_bad_cdb(r, 3, 7);
	/* SP: nothing saveable; the obsolete PPC is a reserved bit. */
	r = tctx_run(t, cdb_log_sense(t->cdb, 0x01, 1, 0x0d, 0x00, 0, 255));
	assert_bad_cdb(r, 1, 0);
	r = tctx_run(t, cdb_log_sense(t->cdb, 0x02, 1, 0x0d, 0x00, 0, 255));
	assert_bad_cdb(r, 1, 1);
	/* PARAMETER POINTER past the last parameter code (0001h for the temperature page). */
	r = tctx_run(t, cdb_log_sense(t->cdb, 0, 1, 0x0d, 0x00, 2, 255));
	assert_bad_cdb(r, 5, 7);
	r = tctx_run(t, cdb_log_sense(t->cdb, 0, 1, 0x00, 0x00, 1, 255));
	assert_bad_cdb(r, 5, 7);
	tctx_destroy(t);
}

static void test_temperature_and_ie(void **state)
{
	struct tctx *t = tctx_create(0, NULL);
	struct lf_result *r;

	(void)state;
	r = tctx_run(t, cdb_log_sense(t->cdb, 0, 1, 0x0d, 0x00, 0, 255));
	assert_good(r);
	assert_int_equal(r->data[0], 0x80 | 0x0d);
	assert_int_equal(get_be16(&r->data[2]), 12);
	/* 0000h TEMPERATURE and 0001h REFERENCE TEMPERATURE: binary list, FFh. */
	assert_int_equal(get_be16(&r->data[4]), 0x0000);
	assert_int_equal(r->data[6], 0x03);
	assert_int_equal(r->data[7], 2);
	assert_int_equal(r->data[9], 0xff);
	assert_int_equal(get_be16(&r->data[10]), 0x0001);
	assert_int_equal(r->data[15], 0xff);
	/* From parameter 0001h on. */
	r = tctx_run(t, cdb_log_sense(t->cdb, 0, 1, 0x0d, 0x00, 1, 255));
	assert_good(r);
	assert_int_equal(get_be16(&r->data[2]), 6);
	assert_int_equal(get_be16(&r->data[4]), 0x0001);

	r = tctx_run(t, cdb_log_sense(t->cdb, 0, 1, 0x2f, 0x00, 0, 255));
	assert_good(r);
	assert_int_equal(get_be16(&r->data[2]), 7);
	assert_int_equal(get_be16(&r->data[4]), 0x0000);
	assert_int_equal(r->data[7], 3);
	assert_int_equal(r->data[8], 0x00); /* no informational exception */
	assert_int_equal(r->data[9], 0x00);
	tctx_destroy(t);
}

static size_t cdb_read10(uint8_t *cdb, uint32_t lba, uint16_t n)
{
	memset(cdb, 0, CDB_BUF);
	cdb[0] = SBC_READ_10;
	put_be32(&cdb[2], lba);
	put_be16(&cdb[7], n);
	return 10;
}

static void test_general_stats_and_reset(void **state)
{
	struct tctx *t = tctx_create(0, NULL);
	struct lf_result *r;

	(void)state;
	assert_good(tctx_run(t, cdb_read10(t->cdb, 0, 4)));
	assert_good(tctx_run(t, cdb_read10(t->cdb, 8, 2)));
	r = tctx_run(t, cdb_log_sense(t->cdb, 0, 1, 0x19, 0x00, 0, 255));
	assert_good(r);
	assert_int_equal(get_be16(&r->data[2]), 4 + 64);
	assert_int_equal(get_be16(&r->data[4]), 0x0001);
	assert_int_equal(r->data[6], 0x02);
	assert_int_equal(r->data[7], 0x40);
	assert_int_equal(get_be64(&r->data[8]), 2);  /* NUMBER OF READ COMMANDS */
	assert_int_equal(get_be64(&r->data[16]), 0); /* NUMBER OF WRITE COMMANDS */
	assert_int_equal(get_be64(&r->data[32]), 6); /* LOGICAL BLOCKS TRANSMITTED */
	/* Default cumulative values are zero; threshold values are the counters' maximum. */
	r = tctx_run(t, cdb_log_sense(t->cdb, 0, 3, 0x19, 0x00, 0, 255));
	assert_good(r);
	assert_int_equal(get_be64(&r->data[8]), 0);
	r = tctx_run(t, cdb_log_sense(t->cdb, 0, 0, 0x19, 0x00, 0, 255));
	assert_good(r);
	assert_true(get_be64(&r->data[8]) == UINT64_MAX);

	/* PCR 0 with no list changes nothing; PCR 1 with PC 00b (thresholds) neither. */
	assert_good(tctx_run(t, cdb_log_select(t->cdb, 0, 1, 0, 0, 0)));
	assert_good(tctx_run(t, cdb_log_select(t->cdb, 0x02, 0, 0, 0, 0)));
	r = tctx_run(t, cdb_log_sense(t->cdb, 0, 1, 0x19, 0x00, 0, 255));
	assert_int_equal(get_be64(&r->data[8]), 2);
	/* PCR 1, PC 01b on page 19h: the counters restart from zero (this LOG SENSE is not a
	 * read command). */
	assert_good(tctx_run(t, cdb_log_select(t->cdb, 0x02, 1, 0x19, 0, 0)));
	r = tctx_run(t, cdb_log_sense(t->cdb, 0, 1, 0x19, 0x00, 0, 255));
	assert_int_equal(get_be64(&r->data[8]), 0);
	assert_int_equal(get_be64(&r->data[32]), 0);
	assert_good(tctx_run(t, cdb_read10(t->cdb, 0, 1)));
	r = tctx_run(t, cdb_log_sense(t->cdb, 0, 1, 0x19, 0x00, 0, 255));
	assert_int_equal(get_be64(&r->data[8]), 1);
	/* PCR 1, PC 11b, all pages (00h/00h). */
	assert_good(tctx_run(t, cdb_log_select(t->cdb, 0x02, 3, 0, 0, 0)));
	r = tctx_run(t, cdb_log_sense(t->cdb, 0, 1, 0x19, 0x00, 0, 255));
	assert_int_equal(get_be64(&r->data[8]), 0);
	tctx_destroy(t);
}

static void test_log_select_cdb_fields(void **state)
{
	struct tctx *t = tctx_create(0, NULL);
	uint8_t list[4] = { 0x0f, 0, 0, 0 };
	struct lf_result *r;

	(void)state;
	/* SP: not saveable. */
	r = tctx_run(t, cdb_log_select(t->cdb, 0x01, 1, 0, 0, 0));
	assert_bad_cdb(r, 1, 0);
	/* PCR with a parameter list. */
	r = run_dout(t, cdb_log_select(t->cdb, 0x02, 1, 0, 0, 4), list, 4);
	assert_bad_cdb(r, 1, 1);
	/* A parameter list names its pages: PAGE CODE and SUBPAGE CODE must be zero. */
	r = run_dout(t, cdb_log_select(t->cdb, 0, 1, 0x0f, 0, 4), list, 4);
	assert_bad_cdb(r, 2, 5);
	r = run_dout(t, cdb_log_select(t->cdb, 0, 1, 0, 1, 4), list, 4);
	assert_bad_cdb(r, 3, 7);
	/* Without a list, the page named must exist. */
	r = tctx_run(t, cdb_log_select(t->cdb, 0x02, 1, 0x30, 0, 0));
	assert_bad_cdb(r, 2, 5);
	r = tctx_run(t, cdb_log_select(t->cdb, 0x02, 1, 0x19, 0x01, 0));
	assert_bad_cdb(r, 3, 7);
	assert_good(tctx_run(t, cdb_log_select(t->cdb, 0x02, 1, 0x19, 0xff, 0)));
	/* Reserved bits of byte 1. */
	r = tctx_run(t, cdb_log_select(t->cdb, 0x04, 1, 0, 0, 0));
	assert_bad_cdb(r, 1, 2);
	tctx_destroy(t);
}

/* One application client parameter (4 + FCh bytes) at @p. */
static size_t app_param(uint8_t *p, uint16_t code, uint8_t fill)
{
	put_be16(p, code);
	p[2] = 0x03;
	p[3] = 0xfc;
	memset(&p[4], fill, 0xfc);
	return 0x100;
}

static void test_app_client(void **state)
{
	struct tctx *t = tctx_create(0, NULL);
	uint8_t list[4 + 2 * 0x100 + 4 + 0x100];
	struct lf_result *r;
	size_t n;

	(void)state;
	/* Before any LOG SELECT: 64 parameters of zeros. */
	r = tctx_run(t, cdb_log_sense(t->cdb, 0, 1, 0x0f, 0x00, 0, 0xffff));
	assert_good(r);
	assert_int_equal(get_be16(&r->data[2]), 64 * 0x100);
	assert_int_equal(get_be16(&r->data[4 + 63 * 0x100]), 63);
	assert_int_equal(r->data[4 + 5 * 0x100 + 4], 0);

	/* Parameters 0005h and 0007h written. */
	list[0] = 0x0f;
	list[1] = 0;
	put_be16(&list[2], 2 * 0x100);
	n = 4;
	n += app_param(&list[n], 5, 0xa5);
	n += app_param(&list[n], 7, 0x5a);
	assert_good(run_dout(t, cdb_log_select(t->cdb, 0, 1, 0, 0, (uint16_t)n), list, n));
	r = tctx_run(t, cdb_log_sense(t->cdb, 0, 1, 0x0f, 0x00, 5, 0xffff));
	assert_good(r);
	assert_int_equal(get_be16(&r->data[2]), (64 - 5) * 0x100);
	assert_int_equal(get_be16(&r->data[4]), 5);
	assert_int_equal(r->data[8], 0xa5);
	assert_int_equal(r->data[8 + 0xfb], 0xa5);
	assert_int_equal(r->data[4 + 2 * 0x100 + 4], 0x5a);
	assert_int_equal(r->data[4 + 1 * 0x100 + 4], 0x00);
	/* Parameter codes out of order within a page. */
	n = 4;
	n += app_param(&list[n], 7, 0x01);
	n += app_param(&list[n], 6, 0x01);
	r = run_dout(t, cdb_log_select(t->cdb, 0, 1, 0, 0, (uint16_t)n), list, n);
	assert_sense(r, 0x5, 0x26, 0x00);
	assert_sks(r, 0, 4 + 0x100, 7);
	/* PARAMETER POINTER past 003Fh. */
	r = tctx_run(t, cdb_log_sense(t->cdb, 0, 1, 0x0f, 0x00, 64, 0xffff));
	assert_bad_cdb(r, 5, 7);
	tctx_destroy(t);
}

static void test_app_client_bad_lists(void **state)
{
	struct tctx *t = tctx_create(0, NULL);
	uint8_t list[4 + 0x100 + 4 + 0x100];
	struct lf_result *r;

	(void)state;
	memset(list, 0, sizeof(list));
	list[0] = 0x0f;
	put_be16(&list[2], 0x100);
	app_param(&list[4], 1, 0x11);

	/* A page that takes no parameters from the client (19h), and one we lack (30h). */
	list[0] = 0x19;
	r = run_dout(t, cdb_log_select(t->cdb, 0, 1, 0, 0, 4 + 0x100), list, 4 + 0x100);
	assert_sense(r, 0x5, 0x26, 0x00);
	assert_sks(r, 0, 0, 5);
	list[0] = 0x30;
	r = run_dout(t, cdb_log_select(t->cdb, 0, 1, 0, 0, 4 + 0x100), list, 4 + 0x100);
	assert_sks(r, 0, 0, 5);
	list[0] = 0x0f;
	/* SPF 0 with a non-zero subpage. */
	list[1] = 1;
	r = run_dout(t, cdb_log_select(t->cdb, 0, 1, 0, 0, 4 + 0x100), list, 4 + 0x100);
	assert_sense(r, 0x5, 0x26, 0x00);
	assert_sks(r, 0, 1, 7);
	list[1] = 0;
	/* PAGE LENGTH past the list. */
	r = run_dout(t, cdb_log_select(t->cdb, 0, 1, 0, 0, 4 + 0xff), list, 4 + 0xff);
	assert_sks(r, 0, 2, 7);
	/* A list too short for a page header. */
	r = run_dout(t, cdb_log_select(t->cdb, 0, 1, 0, 0, 3), list, 3);
	assert_sense(r, 0x5, 0x1a, 0x00);
	/* Parameter code beyond 003Fh, wrong control byte, wrong length. */
	put_be16(&list[4], 0x40);
	r = run_dout(t, cdb_log_select(t->cdb, 0, 1, 0, 0, 4 + 0x100), list, 4 + 0x100);
	assert_sks(r, 0, 4, 7);
	put_be16(&list[4], 1);
	list[6] = 0x02;
	r = run_dout(t, cdb_log_select(t->cdb, 0, 1, 0, 0, 4 + 0x100), list, 4 + 0x100);
	assert_sks(r, 0, 6, 1);
	list[6] = 0x83; /* DU */
	r = run_dout(t, cdb_log_select(t->cdb, 0, 1, 0, 0, 4 + 0x100), list, 4 + 0x100);
	assert_sks(r, 0, 6, 7);
	list[6] = 0x03;
	list[7] = 0x10;
	r = run_dout(t, cdb_log_select(t->cdb, 0, 1, 0, 0, 4 + 0x100), list, 4 + 0x100);
	assert_sks(r, 0, 7, 7);
	list[7] = 0xfc;
	/* A good first page, then a bad second one: nothing of the list is applied. */
	memcpy(&list[4 + 0x100], list, 4);
	put_be16(&list[4 + 0x100 + 2], 0x100);
	app_param(&list[8 + 0x100], 0x40, 0x22);
	r = run_dout(t, cdb_log_select(t->cdb, 0, 1, 0, 0, sizeof(list)), list, sizeof(list));
	assert_sense(r, 0x5, 0x26, 0x00);
	assert_sks(r, 0, 4 + 0x100 + 4, 7);
	r = tctx_run(t, cdb_log_sense(t->cdb, 0, 1, 0x0f, 0x00, 1, 255));
	assert_good(r);
	assert_int_equal(r->data[8], 0x00);
	/* The same first page alone is applied. */
	assert_good(run_dout(t, cdb_log_select(t->cdb, 0, 1, 0, 0, 4 + 0x100), list, 4 + 0x100));
	r = tctx_run(t, cdb_log_sense(t->cdb, 0, 1, 0x0f, 0x00, 1, 255));
	assert_int_equal(r->data[8], 0x11);
	tctx_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_supported_pages),
		cmocka_unit_test(test_log_sense_fields),
		cmocka_unit_test(test_temperature_and_ie),
		cmocka_unit_test(test_general_stats_and_reset),
		cmocka_unit_test(test_log_select_cdb_fields),
		cmocka_unit_test(test_app_client),
		cmocka_unit_test(test_app_client_bad_lists),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
