/* SPDX-License-Identifier: MIT */
/* MODE SENSE (6)/(10) (SPC-5 §6.13/§6.14) and MODE SELECT (6)/(10) (SPC-5 §6.11/§6.12). */
#include "test_util.h"

#include "core/scsi_spec.h"

enum {
	PC_CUR,
	PC_CHG,
	PC_DEF,
	PC_SAVED
};

/* Locate page @code in a MODE SENSE answer after @hdr header bytes; NULL if absent. */
static const uint8_t *find_page(const struct lf_result *r, size_t start, uint8_t code)
{
	size_t off = start;

	while (off + 2 <= r->data_len) {
		if ((r->data[off] & 0x3f) == code)
			return &r->data[off];
		off += 2 + r->data[off + 1];
	}
	return NULL;
}

static struct tctx *cache_lun(uint32_t lun_flags)
{
	struct fake_backend_opts o;

	fake_backend_opts_init(&o);
	o.geo_flags = SCSITGT_GEOMETRY_WRITE_CACHE;
	o.supports = 1u << SCSITGT_IO_FLUSH;
	return tctx_create(lun_flags, &o);
}

static void test_sense6_all(void **state)
{
	struct tctx *t = tctx_create(0, NULL);
	struct lf_result *r;
	const uint8_t *p;

	(void)state;
	r = tctx_run(t, cdb_mode_sense6(t->cdb, false, PC_CUR, 0x3f, 0, 255));
	assert_good(r);
	assert_int_equal(r->data_len, 4 + 8 + 20 + 12 + 12);
	assert_int_equal(r->data[0], r->data_len - 1); /* MODE DATA LENGTH */
	assert_int_equal(r->data[1], 0x00);	       /* MEDIUM TYPE */
	assert_int_equal(r->data[2], 0x10);	       /* DPOFUA, not WP */
	assert_int_equal(r->data[3], 8);	       /* BLOCK DESCRIPTOR LENGTH */
	assert_int_equal(get_be32(&r->data[4]), 2048);
	assert_int_equal(r->data[8], 0);
	assert_int_equal(get_be24(&r->data[9]), 512);
	/* The pages, in ascending order. */
	assert_int_equal(r->data[12], 0x08);
	assert_int_equal(r->data[13], 0x12);
	assert_int_equal(r->data[32], 0x0a);
	assert_int_equal(r->data[33], 0x0a);
	assert_int_equal(r->data[44], 0x1c);
	assert_int_equal(r->data[45], 0x0a);
	p = find_page(r, 12, 0x08);
	assert_int_equal(p[2] & 0x05, 0); /* WCE 0, RCD 0 */
	p = find_page(r, 12, 0x0a);
	assert_int_equal(p[2] & 0xe4, 0);    /* TST 000b, D_SENSE 0 */
	assert_int_equal(p[3] & 0xf0, 0x10); /* QUEUE ALGORITHM MODIFIER 1 */
	assert_int_equal(p[3] & 0x06, 0);    /* QERR 00b */
	assert_int_equal(p[4] & 0x08, 0);    /* SWP 0 */
	p = find_page(r, 12, 0x1c);
	assert_int_equal(p[3] & 0x0f, 0); /* MRIE */
	/* Subpage FFh: the same pages. */
	r = tctx_run(t, cdb_mode_sense6(t->cdb, false, PC_CUR, 0x3f, 0xff, 255));
	assert_good(r);
	assert_int_equal(r->data_len, 56);
	/* Allocation length truncates, MODE DATA LENGTH still counts everything. */
	r = tctx_run(t, cdb_mode_sense6(t->cdb, false, PC_CUR, 0x3f, 0, 4));
	assert_good(r);
	assert_int_equal(r->data_len, 4);
	assert_int_equal(r->data[0], 55);
	tctx_destroy(t);
}

static void test_sense_single_pages(void **state)
{
	struct tctx *t = tctx_create(0, NULL);
	struct lf_result *r;

	(void)state;
	r = tctx_run(t, cdb_mode_sense6(t->cdb, true, PC_CUR, 0x08, 0, 255));
	assert_good(r);
	assert_int_equal(r->data[3], 0); /* DBD: no block descriptor */
	assert_int_equal(r->data_len, 4 + 20);
	assert_int_equal(r->data[4], 0x08);
	r = tctx_run(t, cdb_mode_sense10(t->cdb, false, true, PC_CUR, 0x0a, 0, 255));
	assert_good(r);
	assert_int_equal(r->data_len, 8 + 12);
	assert_int_equal(get_be16(&r->data[0]), 8 + 12 - 2);
	assert_int_equal(r->data[8], 0x0a);
	r = tctx_run(t, cdb_mode_sense10(t->cdb, false, true, PC_CUR, 0x1c, 0xff, 255));
	assert_good(r);
	assert_int_equal(r->data[8], 0x1c);
	tctx_destroy(t);
}

static void test_sense10_descriptors(void **state)
{
	struct fake_backend_opts o;
	struct tctx *t;
	struct lf_result *r;

	(void)state;
	fake_backend_opts_init(&o);
	o.store = false;
	o.num_blocks = 0x123456789ull;
	t = tctx_create(SCSITGT_LUN_READ_ONLY, &o);
	/* Short descriptor: NUMBER OF LOGICAL BLOCKS FFFF_FFFFh when it does not fit. */
	r = tctx_run(t, cdb_mode_sense10(t->cdb, false, false, PC_CUR, 0x08, 0, 512));
	assert_good(r);
	assert_int_equal(r->data[3], 0x90); /* WP and DPOFUA */
	assert_int_equal(r->data[4], 0);    /* LONGLBA 0 */
	assert_int_equal(get_be16(&r->data[6]), 8);
	assert_int_equal(get_be32(&r->data[8]), 0xffffffffu);
	assert_int_equal(get_be24(&r->data[13]), 512);
	/* LLBAA: the 16-byte long LBA descriptor. */
	r = tctx_run(t, cdb_mode_sense10(t->cdb, true, false, PC_CUR, 0x08, 0, 512));
	assert_good(r);
	assert_int_equal(r->data[4], 0x01); /* LONGLBA */
	assert_int_equal(get_be16(&r->data[6]), 16);
	assert_true(get_be64(&r->data[8]) == 0x123456789ull);
	assert_int_equal(get_be32(&r->data[20]), 512);
	assert_int_equal(r->data[24], 0x08);
	assert_int_equal(r->data_len, 8 + 16 + 20);
	/* LLBAA with DBD: no descriptor, LONGLBA 0. */
	r = tctx_run(t, cdb_mode_sense10(t->cdb, true, true, PC_CUR, 0x08, 0, 512));
	assert_good(r);
	assert_int_equal(r->data[4], 0);
	assert_int_equal(get_be16(&r->data[6]), 0);
	/* LLBAA does not exist in MODE SENSE (6): byte 1 bit 4 is reserved there. */
	cdb_mode_sense6(t->cdb, false, PC_CUR, 0x08, 0, 255);
	t->cdb[1] |= 0x10;
	r = tctx_run(t, 6);
	assert_bad_cdb(r, 1, 4);
	tctx_destroy(t);
}

static void test_page_control(void **state)
{
	struct tctx *t;
	struct lf_result *r;
	const uint8_t *p;

	(void)state;
	/* No volatile cache: WCE is not changeable; D_SENSE and SWP are. */
	t = tctx_create(0, NULL);
	r = tctx_run(t, cdb_mode_sense6(t->cdb, false, PC_CHG, 0x3f, 0, 255));
	assert_good(r);
	assert_int_equal(get_be32(&r->data[4]), 0); /* nothing in the descriptor changes */
	assert_int_equal(get_be24(&r->data[9]), 0);
	p = find_page(r, 12, 0x08);
	for (int i = 2; i < 20; i++)
		assert_int_equal(p[i], 0);
	p = find_page(r, 12, 0x0a);
	assert_int_equal(p[2], 0x04);
	assert_int_equal(p[3], 0x00);
	assert_int_equal(p[4], 0x08);
	assert_int_equal(p[5], 0x40); /* TAS */
	for (int i = 6; i < 12; i++)
		assert_int_equal(p[i], 0);
	p = find_page(r, 12, 0x1c);
	for (int i = 2; i < 12; i++)
		assert_int_equal(p[i], 0);
	/* Defaults. */
	r = tctx_run(t, cdb_mode_sense6(t->cdb, false, PC_DEF, 0x0a, 0, 255));
	assert_good(r);
	assert_int_equal(get_be32(&r->data[4]), 2048);
	assert_int_equal(r->data[12 + 2] & 0x04, 0);
	assert_int_equal(r->data[12 + 5], 0x40); /* TAS 1 */
	/* Saved values: SAVING PARAMETERS NOT SUPPORTED, pointing at PC. */
	r = tctx_run(t, cdb_mode_sense6(t->cdb, false, PC_SAVED, 0x3f, 0, 255));
	assert_sense(r, 0x5, 0x39, 0x00);
	assert_sks(r, 1, 2, 7);
	tctx_destroy(t);

	/* A volatile cache: WCE changeable, and on by default with SCSITGT_LUN_WRITE_CACHE. */
	t = cache_lun(SCSITGT_LUN_WRITE_CACHE);
	r = tctx_run(t, cdb_mode_sense6(t->cdb, true, PC_CHG, 0x08, 0, 255));
	assert_good(r);
	assert_int_equal(r->data[4 + 2], 0x04);
	r = tctx_run(t, cdb_mode_sense6(t->cdb, true, PC_DEF, 0x08, 0, 255));
	assert_int_equal(r->data[4 + 2] & 0x04, 0x04);
	r = tctx_run(t, cdb_mode_sense6(t->cdb, true, PC_CUR, 0x08, 0, 255));
	assert_int_equal(r->data[4 + 2] & 0x04, 0x04);
	tctx_destroy(t);
}

static void test_sense_bad_fields(void **state)
{
	struct tctx *t = tctx_create(0, NULL);
	struct lf_result *r;

	(void)state;
	r = tctx_run(t, cdb_mode_sense6(t->cdb, false, PC_CUR, 0x01, 0, 255));
	assert_bad_cdb(r, 2, 5);
	r = tctx_run(t, cdb_mode_sense10(t->cdb, false, false, PC_CUR, 0x19, 0, 255));
	assert_bad_cdb(r, 2, 5);
	r = tctx_run(t, cdb_mode_sense6(t->cdb, false, PC_CUR, 0x08, 0x01, 255));
	assert_bad_cdb(r, 3, 7);
	r = tctx_run(t, cdb_mode_sense10(t->cdb, false, false, PC_CUR, 0x3f, 0x10, 255));
	assert_bad_cdb(r, 3, 7);
	tctx_destroy(t);
}

/* MODE SELECT (10) of a 8-byte header (no block descriptor) and @page. */
static struct lf_result *select10(struct tctx *t, const uint8_t *page, size_t plen)
{
	uint8_t list[64] = { 0 };

	memcpy(&list[8], page, plen);
	return tctx_run_lun(t, 0, cdb_mode_select10(t->cdb, true, false, (uint16_t)(8 + plen)),
			    list, 8 + plen);
}

static void control_page(uint8_t *p, bool d_sense, bool swp)
{
	memset(p, 0, 12);
	p[0] = 0x0a;
	p[1] = 0x0a;
	p[2] = (uint8_t)(0x02 | (d_sense ? 0x04 : 0));
	p[3] = 0x10;
	p[4] = swp ? 0x08 : 0;
	p[5] = 0x40; /* TAS as it is by default */
}

static void test_select_d_sense(void **state)
{
	struct tctx *t = tctx_create(0, NULL);
	struct lf_result *r;
	uint8_t page[12];

	(void)state;
	control_page(page, true, false);
	r = select10(t, page, sizeof(page));
	assert_good(r);
	assert_true(t->lun->mode.d_sense);
	r = tctx_run(t, cdb_mode_sense6(t->cdb, true, PC_CUR, 0x0a, 0, 255));
	assert_int_equal(r->data[4 + 2] & 0x04, 0x04);
	/* Now errors come in descriptor format. */
	r = tctx_run(t, cdb_mode_sense6(t->cdb, true, PC_CUR, 0x02, 0, 255));
	assert_int_equal(r->status, 0x02);
	assert_int_equal(r->sense[0], 0x72);
	assert_int_equal(r->sense[1], 0x05);
	assert_int_equal(r->sense[2], 0x24);
	assert_int_equal(r->sense[8], 0x02); /* sense key specific descriptor */
	assert_int_equal(r->sense[12], 0x80 | 0x40 | 0x08 | 5);
	assert_int_equal(get_be16(&r->sense[13]), 2);
	control_page(page, false, false);
	assert_good(select10(t, page, sizeof(page)));
	assert_false(t->lun->mode.d_sense);
	tctx_destroy(t);
}

/* SPC-5 §7.5.1: a change by one nexus is a MODE PARAMETERS CHANGED for the others. */
static void test_select_raises_ua(void **state)
{
	struct tctx *t = tctx_create(0, NULL);
	struct scsitgt__session *b;
	struct lf_result r = { 0 };
	uint8_t page[12];

	(void)state;
	assert_int_equal(
		loop_fabric_add_session(t->lf, "iqn.2024-01.test:b,i,0x000000000002", 1, &b), 0);
	/* B's POWER ON first */
	loop_fabric_run_on(t->lf, b, 0, t->cdb, cdb_tur(t->cdb), NULL, 0, &r);
	assert_sense(&r, 0x6, 0x29, 0x00);
	lf_result_clear(&r);
	control_page(page, false, true); /* SWP: sense stays in fixed format */
	assert_good(select10(t, page, sizeof(page)));
	loop_fabric_run_on(t->lf, b, 0, t->cdb, cdb_tur(t->cdb), NULL, 0, &r);
	assert_sense(&r, 0x6, 0x2a, 0x01);
	lf_result_clear(&r);
	/* not for the nexus that made the change */
	assert_good(tctx_run(t, cdb_tur(t->cdb)));
	/* the same values again change nothing: no unit attention */
	assert_good(select10(t, page, sizeof(page)));
	loop_fabric_run_on(t->lf, b, 0, t->cdb, cdb_tur(t->cdb), NULL, 0, &r);
	assert_good(&r);
	lf_result_clear(&r);
	tctx_destroy(t);
}

static void test_select_swp(void **state)
{
	struct tctx *t = tctx_create(0, NULL);
	uint8_t page[12], blk[512] = { 0 };
	struct lf_result *r;

	(void)state;
	control_page(page, false, true);
	assert_good(select10(t, page, sizeof(page)));
	r = tctx_run(t, cdb_mode_sense6(t->cdb, true, PC_CUR, 0x0a, 0, 255));
	assert_int_equal(r->data[2] & 0x80, 0x80); /* WP */
	r = tctx_run_lun(t, 0, cdb_rw(t->cdb, SBC_WRITE_10, 0, 1, 0), blk, sizeof(blk));
	assert_sense(r, 0x7, 0x27, 0x00);
	control_page(page, false, false);
	assert_good(select10(t, page, sizeof(page)));
	r = tctx_run_lun(t, 0, cdb_rw(t->cdb, SBC_WRITE_10, 0, 1, 0), blk, sizeof(blk));
	assert_good(r);
	tctx_destroy(t);
}

/* SPC-5 §7.5.10 TAS: 1 by default (reviewj J1), changeable; core/tmf.c reads it. */
static void test_select_tas(void **state)
{
	struct tctx *t = tctx_create(0, NULL);
	uint8_t page[12];
	struct lf_result *r;

	(void)state;
	assert_true(t->lun->mode.tas);
	r = tctx_run(t, cdb_mode_sense6(t->cdb, true, PC_CUR, 0x0a, 0, 255));
	assert_int_equal(r->data[4 + 5], 0x40);
	control_page(page, false, false);
	page[5] = 0;
	assert_good(select10(t, page, sizeof(page)));
	assert_false(t->lun->mode.tas);
	r = tctx_run(t, cdb_mode_sense6(t->cdb, true, PC_CUR, 0x0a, 0, 255));
	assert_int_equal(r->data[4 + 5], 0);
	/* the other bits of byte 5 stay fixed */
	page[5] = 0x40 | 0x80;
	assert_sense(select10(t, page, sizeof(page)), 0x5, 0x26, 0x00);
	page[5] = 0x40;
	assert_good(select10(t, page, sizeof(page)));
	assert_true(t->lun->mode.tas);
	tctx_destroy(t);
}

static void test_select_wce(void **state)
{
	uint8_t page[20] = { 0x08, 0x12, 0x04 };
	struct tctx *t;
	struct lf_result *r;

	(void)state;
	t = cache_lun(0);
	assert_false(t->lun->mode.wce);
	assert_good(select10(t, page, sizeof(page)));
	assert_true(t->lun->mode.wce);
	page[2] = 0;
	assert_good(select10(t, page, sizeof(page)));
	assert_false(t->lun->mode.wce);
	tctx_destroy(t);

	/* Without a volatile cache WCE is not changeable: its byte and bit are reported. */
	t = tctx_create(0, NULL);
	page[2] = 0x04;
	r = select10(t, page, sizeof(page));
	assert_sense(r, 0x5, 0x26, 0x00);
	assert_sks(r, 0, 8 + 2, 2);
	assert_false(t->lun->mode.wce);
	tctx_destroy(t);
}

static void test_select_bad_lists(void **state)
{
	struct tctx *t = tctx_create(0, NULL);
	uint8_t page[12], list[64];
	struct lf_result *r;

	(void)state;
	/* A non-changeable field (QERR) set to another value. */
	control_page(page, false, false);
	page[3] |= 0x02;
	r = select10(t, page, sizeof(page));
	assert_sense(r, 0x5, 0x26, 0x00);
	assert_sks(r, 0, 8 + 3, 1);
	/* A wrong PAGE LENGTH. */
	control_page(page, false, false);
	page[1] = 0x0b;
	r = select10(t, page, sizeof(page));
	assert_sense(r, 0x5, 0x26, 0x00);
	assert_sks(r, 0, 8 + 1, 7);
	/* An unsupported page. */
	control_page(page, false, false);
	page[0] = 0x01;
	r = select10(t, page, sizeof(page));
	assert_sense(r, 0x5, 0x26, 0x00);
	assert_sks(r, 0, 8, 5);
	/* Sub-page format. */
	control_page(page, false, false);
	page[0] |= 0x40;
	r = select10(t, page, sizeof(page));
	assert_sks(r, 0, 8, 6);
	/* A page cut short by the parameter list length. */
	control_page(page, true, false);
	r = select10(t, page, 10);
	assert_sense(r, 0x5, 0x1a, 0x00);
	assert_false(t->lun->mode.d_sense);
	/* A list shorter than its header. */
	memset(list, 0, sizeof(list));
	r = tctx_run_lun(t, 0, cdb_mode_select10(t->cdb, true, false, 5), list, 5);
	assert_sense(r, 0x5, 0x1a, 0x00);
	/* Nothing at all is fine. */
	r = tctx_run_lun(t, 0, cdb_mode_select10(t->cdb, true, false, 0), NULL, 0);
	assert_good(r);
	/* A valid page followed by a bad one changes nothing. */
	memset(list, 0, sizeof(list));
	control_page(&list[8], true, false);
	list[20] = 0x1c;
	list[21] = 0x0a;
	list[23] = 0x06; /* MRIE, not changeable */
	r = tctx_run_lun(t, 0, cdb_mode_select10(t->cdb, true, false, 32), list, 32);
	assert_sense(r, 0x5, 0x26, 0x00);
	assert_sks(r, 0, 23, 2);
	assert_false(t->lun->mode.d_sense);
	/* SP: no page can be saved. */
	control_page(page, false, false);
	r = tctx_run_lun(t, 0, cdb_mode_select6(t->cdb, true, true, 16), page, 12);
	assert_bad_cdb(r, 1, 0);
	tctx_destroy(t);
}

static void test_select_block_descriptor(void **state)
{
	struct tctx *t = tctx_create(0, NULL);
	uint8_t list[4 + 8 + 12];
	struct lf_result *r;

	(void)state;
	/* MODE SELECT (6) repeating the current descriptor, and setting D_SENSE. */
	memset(list, 0, sizeof(list));
	list[3] = 8;
	put_be32(&list[4], 2048);
	put_be24(&list[9], 512);
	control_page(&list[12], true, false);
	r = tctx_run_lun(t, 0, cdb_mode_select6(t->cdb, true, false, sizeof(list)), list,
			 sizeof(list));
	assert_good(r);
	assert_true(t->lun->mode.d_sense);
	t->lun->mode.d_sense = false;
	/* NUMBER OF LOGICAL BLOCKS 0 means no change. */
	put_be32(&list[4], 0);
	r = tctx_run_lun(t, 0, cdb_mode_select6(t->cdb, true, false, sizeof(list)), list,
			 sizeof(list));
	assert_good(r);
	t->lun->mode.d_sense = false;
	/* Another block size. */
	put_be24(&list[9], 4096);
	r = tctx_run_lun(t, 0, cdb_mode_select6(t->cdb, true, false, sizeof(list)), list,
			 sizeof(list));
	assert_sense(r, 0x5, 0x26, 0x00);
	assert_sks(r, 0, 9, 7);
	/* Another capacity. */
	put_be24(&list[9], 512);
	put_be32(&list[4], 4096);
	r = tctx_run_lun(t, 0, cdb_mode_select6(t->cdb, true, false, sizeof(list)), list,
			 sizeof(list));
	assert_sks(r, 0, 4, 7);
	/* A bad BLOCK DESCRIPTOR LENGTH. */
	list[3] = 7;
	r = tctx_run_lun(t, 0, cdb_mode_select6(t->cdb, true, false, sizeof(list)), list,
			 sizeof(list));
	assert_sks(r, 0, 3, 7);
	/* A MEDIUM TYPE. */
	list[3] = 8;
	put_be32(&list[4], 2048);
	list[1] = 0x01;
	r = tctx_run_lun(t, 0, cdb_mode_select6(t->cdb, true, false, sizeof(list)), list,
			 sizeof(list));
	assert_sks(r, 0, 1, 7);
	assert_false(t->lun->mode.d_sense);
	tctx_destroy(t);
}

static void test_sense_select_round_trip(void **state)
{
	struct tctx *t = cache_lun(SCSITGT_LUN_WRITE_CACHE);
	struct lf_result *r;
	uint8_t list[256];
	size_t len;

	(void)state;
	/* What MODE SENSE reports as current is accepted back as is by MODE SELECT. */
	r = tctx_run(t, cdb_mode_sense10(t->cdb, true, false, PC_CUR, 0x3f, 0, 255));
	assert_good(r);
	len = r->data_len;
	memcpy(list, r->data, len);
	list[0] = list[1] = 0; /* MODE DATA LENGTH is reserved in MODE SELECT */
	list[3] = 0;	       /* DEVICE-SPECIFIC PARAMETER */
	r = tctx_run_lun(t, 0, cdb_mode_select10(t->cdb, true, false, (uint16_t)len), list, len);
	assert_good(r);
	assert_true(t->lun->mode.wce);
	tctx_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sense6_all),
		cmocka_unit_test(test_sense_single_pages),
		cmocka_unit_test(test_sense10_descriptors),
		cmocka_unit_test(test_page_control),
		cmocka_unit_test(test_sense_bad_fields),
		cmocka_unit_test(test_select_d_sense),
		cmocka_unit_test(test_select_raises_ua),
		cmocka_unit_test(test_select_swp),
		cmocka_unit_test(test_select_tas),
		cmocka_unit_test(test_select_wce),
		cmocka_unit_test(test_select_bad_lists),
		cmocka_unit_test(test_select_block_descriptor),
		cmocka_unit_test(test_sense_select_round_trip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
