/* SPDX-License-Identifier: MIT */
/*
 * MODE SELECT turning the write cache off (SBC-4 §6.5.5 WCE 1 -> 0) while writes are in the
 * backend: every write that went to the cache is on the medium before its GOOD, and a failed
 * write-back leaves the parameters as they were (SPC-5 §6.13).
 */
#include <errno.h>
#include <string.h>

#include "test_util.h"

#include "core/scsi_spec.h"

#define BS 512u

/* A LUN with WCE 1 on a backend with a volatile cache and FLUSH, holding every io. */
static struct tctx *held_cached(void)
{
	struct fake_backend_opts o;

	fake_backend_opts_init(&o);
	o.geo_flags = SCSITGT_GEOMETRY_WRITE_CACHE;
	o.supports = (1u << SCSITGT_IO_FLUSH) | (1u << SCSITGT_IO_WRITE_ZEROES);
	o.mode = FAKE_MANUAL;
	return tctx_create(SCSITGT_LUN_WRITE_CACHE, &o);
}

static size_t count_ios(const struct tctx *t, enum scsitgt_io_type type)
{
	size_t n = 0;

	for (size_t i = 0; i < t->fb->nrecs; i++)
		n += t->fb->recs[i].type == type;
	return n;
}

/* The parameter list of a MODE SELECT (10) of the caching page with WCE @wce. */
static size_t caching_list(uint8_t *list, bool wce)
{
	memset(list, 0, 8 + 20);
	list[8] = 0x08;
	list[9] = 0x12;
	list[10] = wce ? 0x04 : 0;
	return 8 + 20;
}

/* One case: the LUN, a WRITE's and a MODE SELECT's CDB, data and results. */
struct sw {
	struct tctx *t;
	uint8_t blk[BS], wcdb[CDB_BUF], mcdb[CDB_BUF], list[28];
	struct lf_result w, m;
};

static struct sw *sw_new(uint8_t fill)
{
	struct sw *c = calloc(1, sizeof(*c));

	assert_non_null(c);
	c->t = held_cached();
	memset(c->blk, fill, sizeof(c->blk));
	return c;
}

static void sw_free(struct sw *c)
{
	lf_result_clear(&c->w);
	lf_result_clear(&c->m);
	tctx_destroy(c->t);
	free(c);
}

/* Start a WRITE (10) of one block at LBA 4 with CDB byte 1 @byte1 (0x08: FUA). */
static void sw_write(struct sw *c, uint8_t byte1)
{
	loop_fabric_start(c->t->lf, 0, c->wcdb, cdb_rw(c->wcdb, SBC_WRITE_10, 4, 1, byte1), c->blk,
			  sizeof(c->blk), &c->w);
}

/* Start MODE SELECT (10) setting WCE @wce on LUN 0. */
static void sw_select(struct sw *c, bool wce)
{
	size_t len = caching_list(c->list, wce);

	loop_fabric_start(c->t->lf, 0, c->mcdb,
			  cdb_mode_select10(c->mcdb, true, false, (uint16_t)len), c->list, len,
			  &c->m);
}

/* Complete what the backend holds, and what that submits, then wait for @res. */
static void sw_finish(struct sw *c, struct lf_result *res)
{
	fake_backend_complete_pending(c->t->fb);
	loop_fabric_wait(c->t->lf, res);
}

/* The WRITE started before the MODE SELECT turning WCE off completes after it (the FLUSH ios
 * after MODE SELECT's failing with @flush_err, if not 0): the MODE SELECT's GOOD, and the
 * number of FLUSH ios then. */
static size_t sw_across(struct sw *c, int flush_err)
{
	sw_select(c, false);
	assert_false(c->t->lun->mode.wce);
	/* the write-back of MODE SELECT, held as well: the WRITE will complete after it */
	assert_int_equal(count_ios(c->t, SCSITGT_IO_FLUSH), 1);
	assert_false(c->w.done);
	assert_false(c->m.done);
	if (flush_err)
		fake_backend_fail_type(c->t->fb, SCSITGT_IO_FLUSH, flush_err, 1);
	sw_finish(c, &c->w);
	loop_fabric_wait(c->t->lf, &c->m);
	assert_good(&c->m);
	return count_ios(c->t, SCSITGT_IO_FLUSH);
}

/*
 * A WRITE parsed under WCE 1 (no FUA) is in the backend when WCE goes to 0; MODE SELECT's FLUSH
 * covers only what completed before it, and the initiator will send no SYNCHRONIZE CACHE: the
 * WRITE's own completion is followed by a FLUSH before its GOOD.
 */
static void test_write_in_flight_flushed(void **state)
{
	struct sw *c = sw_new(0x5a);

	(void)state;
	sw_write(c, 0);
	assert_int_equal(c->t->fb->nrecs, 1);
	assert_int_equal(c->t->fb->recs[0].flags & SCSITGT_IO_FLAG_FUA, 0);
	/* the WRITE's own FLUSH, submitted once its io was back */
	assert_int_equal(sw_across(c, 0), 2);
	assert_good(&c->w);
	assert_int_equal(fake_backend_last(c->t->fb)->type, SCSITGT_IO_FLUSH);
	/* a WRITE parsed now carries FUA and needs no FLUSH */
	sw_write(c, 0);
	sw_finish(c, &c->w);
	assert_good(&c->w);
	assert_true(fake_backend_last(c->t->fb)->flags & SCSITGT_IO_FLAG_FUA);
	assert_int_equal(count_ios(c->t, SCSITGT_IO_FLUSH), 2);
	sw_free(c);
}

/* What needs no FLUSH of its own: a WRITE with FUA, a WRITE done before the switch (MODE
 * SELECT's FLUSH covers it), a WRITE done while WCE is 1. */
static void test_no_extra_flush(void **state)
{
	struct sw *c = sw_new(0xa5);

	(void)state;
	/* FUA in the CDB */
	sw_write(c, 0x08);
	assert_int_equal(sw_across(c, 0), 1);
	assert_good(&c->w);
	/* WCE back to 1; a WRITE completed before WCE goes off again */
	sw_select(c, true);
	loop_fabric_wait(c->t->lf, &c->m);
	assert_good(&c->m);
	assert_true(c->t->lun->mode.wce);
	sw_write(c, 0);
	sw_finish(c, &c->w);
	assert_good(&c->w);
	assert_int_equal(count_ios(c->t, SCSITGT_IO_FLUSH), 1);
	sw_select(c, false);
	sw_finish(c, &c->m);
	assert_good(&c->m);
	assert_int_equal(count_ios(c->t, SCSITGT_IO_FLUSH), 2);
	sw_free(c);
}

/* WRITE SAME (16) (@kind 0: a pattern, 1: zeros, through WRITE ZEROES) or WRITE ATOMIC (16)
 * (@kind 2) of LBA 8 into @cdb. */
static size_t cdb_other_write(uint8_t *cdb, int kind)
{
	memset(cdb, 0, CDB_BUF);
	put_be64(&cdb[2], 8);
	if (kind == 2) {
		cdb[0] = SBC_WRITE_ATOMIC_16;
		put_be16(&cdb[12], 1);
	} else {
		cdb[0] = SBC_WRITE_SAME_16;
		put_be32(&cdb[10], 4);
	}
	return 16;
}

/* The other writes that go to the cache under WCE 1: WRITE SAME (a pattern, and zeros through
 * WRITE ZEROES) and WRITE ATOMIC. Each in the backend across the switch ends with a FLUSH. */
static void test_other_writes_in_flight_flushed(void **state)
{
	(void)state;
	for (int kind = 0; kind < 3; kind++) {
		struct sw *c = sw_new(kind == 1 ? 0 : 0x11);

		loop_fabric_start(c->t->lf, 0, c->wcdb, cdb_other_write(c->wcdb, kind), c->blk, BS,
				  &c->w);
		assert_int_equal(c->t->fb->nrecs, 1);
		assert_int_equal(c->t->fb->recs[0].type,
				 kind == 1 ? SCSITGT_IO_WRITE_ZEROES : SCSITGT_IO_WRITE);
		assert_int_equal(sw_across(c, 0), 2);
		assert_good(&c->w);
		assert_int_equal(fake_backend_last(c->t->fb)->type, SCSITGT_IO_FLUSH);
		sw_free(c);
	}
}

/* The WRITE's own FLUSH fails: its status is the FLUSH's, never GOOD. */
static void test_write_flush_fails(void **state)
{
	struct sw *c = sw_new(0x77);

	(void)state;
	sw_write(c, 0);
	/* MODE SELECT's FLUSH is submitted already: the next FLUSH is the WRITE's */
	assert_int_equal(sw_across(c, -EIO), 2);
	assert_sense(&c->w, 0x3, 0x0c, 0x00);
	sw_free(c);
}

/* The control page (SPC-5 §7.5.8) with SWP @swp, the other fields as the LUN has them. */
static size_t control_list(uint8_t *list, bool swp)
{
	memset(list, 0, 8 + 12);
	list[8] = 0x0a;
	list[9] = 0x0a;
	list[10] = 0x02;
	list[11] = 0x10;
	list[12] = swp ? 0x08 : 0;
	return 8 + 12;
}

/* A second nexus B on the target, past its POWER ON, for the unit attentions of a change. */
static struct scsitgt__session *nexus_b(struct tctx *t)
{
	struct scsitgt__session *b;
	struct lf_result r = { 0 };

	assert_int_equal(
		loop_fabric_add_session(t->lf, "iqn.2024-01.test:b,i,0x000000000002", 1, &b), 0);
	loop_fabric_run_on(t->lf, b, 0, t->cdb, cdb_tur(t->cdb), NULL, 0, &r);
	assert_sense(&r, 0x6, 0x29, 0x00);
	lf_result_clear(&r);
	return b;
}

/* B's next command reports MODE PARAMETERS CHANGED. */
static void assert_b_told(struct tctx *t, struct scsitgt__session *b)
{
	struct lf_result r = { 0 };

	loop_fabric_run_on(t->lf, b, 0, t->cdb, cdb_tur(t->cdb), NULL, 0, &r);
	assert_sense(&r, 0x6, 0x2a, 0x01);
	lf_result_clear(&r);
}

/*
 * The write-back fails: CHECK CONDITION with the FLUSH's sense, and WCE is 1 again (SPC-5
 * §6.13: a failed MODE SELECT changes no parameter; the initiator keeps sending SYNCHRONIZE
 * CACHE, which reaches the backend). The other nexuses, which may have read WCE 0 meanwhile,
 * are told MODE PARAMETERS CHANGED. A parameter another MODE SELECT changed meanwhile stays.
 */
static void test_failed_write_back_undone(void **state)
{
	struct sw *c = sw_new(0);
	struct tctx *t = c->t;
	struct scsitgt__session *b = nexus_b(t);
	uint8_t ccdb[CDB_BUF], clist[20];
	struct lf_result r = { 0 };

	(void)state;
	fake_backend_fail_type(t->fb, SCSITGT_IO_FLUSH, -EIO, 1);
	sw_select(c, false);
	assert_false(t->lun->mode.wce);
	assert_false(c->m.done);
	/* another MODE SELECT while the write-back runs: SWP on (no write-back of its own) */
	loop_fabric_start(t->lf, 0, ccdb,
			  cdb_mode_select10(ccdb, true, false, (uint16_t)control_list(clist, true)),
			  clist, sizeof(clist), &r);
	loop_fabric_wait(t->lf, &r);
	assert_good(&r);
	assert_true(t->lun->mode.swp);
	sw_finish(c, &c->m);
	assert_sense(&c->m, 0x3, 0x0c, 0x00);
	assert_true(t->lun->mode.wce);
	assert_true(t->lun->mode.swp);
	/* MODE SENSE of the caching page: WCE 1 */
	loop_fabric_run(t->lf, 0, t->cdb, cdb_mode_sense6(t->cdb, true, 0, 0x08, 0, 255), NULL, 0,
			&r);
	assert_int_equal(r.status, 0);
	assert_int_equal(r.data[4 + 2] & 0x04, 0x04);
	lf_result_clear(&r);
	assert_b_told(t, b);
	/* write back again: SYNCHRONIZE CACHE reaches the backend */
	loop_fabric_start(t->lf, 0, t->cdb, cdb_sync_cache10(t->cdb, 0, 0, false), NULL, 0, &r);
	sw_finish(c, &r);
	assert_good(&r);
	assert_int_equal(fake_backend_last(t->fb)->type, SCSITGT_IO_FLUSH);
	lf_result_clear(&r);
	sw_free(c);
}

/* The write-back succeeds: GOOD, WCE 0, the other nexus told. */
static void test_write_back_good(void **state)
{
	struct sw *c = sw_new(0);
	struct scsitgt__session *b = nexus_b(c->t);

	(void)state;
	sw_select(c, false);
	sw_finish(c, &c->m);
	assert_good(&c->m);
	assert_false(c->t->lun->mode.wce);
	assert_b_told(c->t, b);
	sw_free(c);
}

/*
 * Three MODE SELECTs within one write-back (review30b F6): MS1 turns WCE off (its FLUSH held,
 * then failing), MS2 turns it on, MS3 off again (its FLUSH held, then good). MS1's failure
 * must not undo WCE: MS3 changed it last, and answers GOOD for WCE 0. A compare of values
 * (WCE is 0, as MS1 left it) would set it back to 1.
 */
static void test_undo_only_own_change(void **state)
{
	struct sw *c = sw_new(0);
	struct tctx *t = c->t;
	uint8_t cdb2[CDB_BUF], cdb3[CDB_BUF], l2[28], l3[28];
	struct lf_result r2 = { 0 }, r3 = { 0 };

	(void)state;
	fake_backend_fail_type(t->fb, SCSITGT_IO_FLUSH, -EIO, 1);
	sw_select(c, false);
	assert_false(t->lun->mode.wce);
	loop_fabric_start(t->lf, 0, cdb2, cdb_mode_select10(cdb2, true, false, 28), l2,
			  caching_list(l2, true), &r2);
	loop_fabric_wait(t->lf, &r2);
	assert_good(&r2);
	assert_true(t->lun->mode.wce);
	loop_fabric_start(t->lf, 0, cdb3, cdb_mode_select10(cdb3, true, false, 28), l3,
			  caching_list(l3, false), &r3);
	assert_false(t->lun->mode.wce);
	assert_int_equal(count_ios(t, SCSITGT_IO_FLUSH), 2);
	/* MS1's FLUSH fails, MS3's succeeds */
	sw_finish(c, &c->m);
	loop_fabric_wait(t->lf, &r3);
	assert_sense(&c->m, 0x3, 0x0c, 0x00);
	assert_good(&r3);
	assert_false(t->lun->mode.wce);
	lf_result_clear(&r2);
	lf_result_clear(&r3);
	sw_free(c);
}

/* A 4-block WRITE at LBA 4 (of @data), sent under WCE 1, fails at LBA 6 (@partial: its backend
 * says LBAs 4-5 are written) after MODE SELECT turned WCE off: its CHECK CONDITION names LBA 6. */
static void write_failing_across(struct sw *c, uint8_t *data, bool partial)
{
	struct tctx *t = c->t;

	fake_backend_fail_type_at(t->fb, SCSITGT_IO_WRITE, -EIO, 6, partial);
	loop_fabric_start(t->lf, 0, c->wcdb, cdb_rw(c->wcdb, SBC_WRITE_10, 4, 4, 0), data, 4 * BS,
			  &c->w);
	assert_false(t->fb->recs[0].flags & SCSITGT_IO_FLAG_FUA);
	sw_select(c, false);
	sw_finish(c, &c->w);
	loop_fabric_wait(t->lf, &c->m);
	assert_good(&c->m);
	assert_int_equal(c->w.status, 0x02);
	/* fixed format, VALID: INFORMATION is the failing block */
	assert_true(c->w.sense[0] & 0x80);
	assert_int_equal(get_be32(&c->w.sense[3]), 6);
	/* MODE SELECT's FLUSH and the WRITE's, the last io */
	assert_int_equal(count_ios(t, SCSITGT_IO_FLUSH), 2);
	assert_int_equal(fake_backend_last(t->fb)->type, SCSITGT_IO_FLUSH);
}

/*
 * A WRITE sent under WCE 1 fails at a block (a medium error with INFORMATION) after WCE went
 * to 0: the blocks before it, which the initiator takes for written, are written again and
 * flushed before the CHECK CONDITION (review30b F7), as a whole write would be.
 */
static void test_failed_write_prefix_flushed(void **state)
{
	struct sw *c = sw_new(0x3c);
	uint8_t data[4 * BS];
	size_t prefix = 0;

	(void)state;
	memset(data, 0x3c, sizeof(data));
	write_failing_across(c, data, false);
	/* the WRITE of LBAs 4..5 again, before that FLUSH */
	for (size_t i = 1; i < c->t->fb->nrecs; i++)
		if (c->t->fb->recs[i].type == SCSITGT_IO_WRITE && c->t->fb->recs[i].lba == 4 &&
		    c->t->fb->recs[i].num_blocks == 2)
			prefix = i;
	assert_true(prefix > 0);
	assert_true(c->t->fb->nrecs - 1 > prefix);
	sw_free(c);
}

/* The same WRITE whose backend says it wrote the blocks before the error
 * (scsitgt_io_complete_partial()): no rewrite, but those blocks are flushed before the CHECK
 * CONDITION all the same. */
static void test_partial_write_flushed(void **state)
{
	struct sw *c = sw_new(0x3d);
	uint8_t data[4 * BS];

	(void)state;
	memset(data, 0x3d, sizeof(data));
	write_failing_across(c, data, true);
	assert_int_equal(count_ios(c->t, SCSITGT_IO_WRITE), 1);
	assert_true(memcmp(c->t->fb->data + 4 * BS, data, 2 * BS) == 0);
	sw_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_in_flight_flushed),
		cmocka_unit_test(test_no_extra_flush),
		cmocka_unit_test(test_other_writes_in_flight_flushed),
		cmocka_unit_test(test_write_flush_fails),
		cmocka_unit_test(test_failed_write_back_undone),
		cmocka_unit_test(test_write_back_good),
		cmocka_unit_test(test_undo_only_own_change),
		cmocka_unit_test(test_failed_write_prefix_flushed),
		cmocka_unit_test(test_partial_write_flushed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
