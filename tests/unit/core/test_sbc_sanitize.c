/* SPDX-License-Identifier: MIT */
/* SBC-4 §5.28 SANITIZE and the sanitize states of §4.33. */
#include <errno.h>
#include <string.h>

#include "test_util.h"

#include "core/fabric.h"
#include "core/sbc_sanitize.h"
#include "core/scsi_spec.h"
#include "core/tmf.h"

static void tmf_done(void *arg, enum scsitgt__tmf_response response)
{
	*(int *)arg = (int)response;
}

static size_t cdb_sanitize(uint8_t *cdb, uint8_t sa, bool ause, uint16_t len)
{
	memset(cdb, 0, CDB_BUF);
	cdb[0] = SBC_SANITIZE;
	cdb[1] = (uint8_t)((ause ? 0x20 : 0) | sa);
	put_be16(&cdb[7], len);
	return 10;
}

/* An OVERWRITE parameter list: INVERT, COUNT, and a pattern of @plen bytes of @fill. */
static size_t ow_list(uint8_t *p, bool invert, uint8_t count, uint16_t plen, uint8_t fill)
{
	p[0] = (uint8_t)((invert ? 0x80 : 0) | count);
	p[1] = 0;
	put_be16(&p[2], plen);
	memset(&p[4], fill, plen);
	return 4u + plen;
}

static struct tctx *ctx(uint32_t lun_flags, uint64_t blocks, uint32_t supports, enum fake_mode mode)
{
	struct fake_backend_opts o;

	fake_backend_opts_init(&o);
	o.num_blocks = blocks;
	o.supports = supports;
	o.mode = mode;
	return tctx_create(lun_flags, &o);
}

static bool all_bytes(const uint8_t *p, size_t n, uint8_t v)
{
	for (size_t i = 0; i < n; i++) {
		if (p[i] != v) {
			return false;
		}
	}
	return true;
}

static void test_overwrite(void **state)
{
	struct tctx *t = ctx(0, 4096, 0, FAKE_SYNC);
	uint8_t list[4 + 512];
	size_t len;
	struct lf_result *r;

	(void)state;
	/* One pass of a 2-byte pattern: every block is the pattern, repeated. */
	len = ow_list(list, false, 1, 2, 0);
	list[4] = 0x12;
	list[5] = 0x34;
	r = tctx_run_lun(t, 0, cdb_sanitize(t->cdb, SBC_SANITIZE_OVERWRITE, false, (uint16_t)len),
			 list, len);
	assert_good(r);
	for (size_t i = 0; i < 4096 * 512; i += 2) {
		assert_int_equal(t->fb->data[i], 0x12);
		assert_int_equal(t->fb->data[i + 1], 0x34);
	}
	/* Two 1 MiB writes per pass. */
	assert_int_equal(t->fb->nrecs, 2);
	assert_int_equal(t->fb->recs[0].type, SCSITGT_IO_WRITE);
	assert_int_equal(t->fb->recs[1].lba, 2048);
	/* Two passes with INVERT: the second pass writes the inverted pattern. */
	len = ow_list(list, true, 2, 512, 0xa5);
	r = tctx_run_lun(t, 0, cdb_sanitize(t->cdb, SBC_SANITIZE_OVERWRITE, false, (uint16_t)len),
			 list, len);
	assert_good(r);
	assert_int_equal(t->fb->nrecs, 2 + 4);
	assert_true(all_bytes(t->fb->data, 4096 * 512, 0x5a));
	tctx_destroy(t);
}

static void test_overwrite_bad(void **state)
{
	struct tctx *t = ctx(0, 2048, 0, FAKE_SYNC);
	uint8_t list[4 + 520];
	size_t len;
	struct lf_result *r;

	(void)state;
	memset(list, 0, sizeof(list));
	/* PARAMETER LIST LENGTH 0..4 or above block length + 4: the CDB field. */
	for (uint16_t l = 0; l <= 4; l++) {
		r = tctx_run_lun(t, 0, cdb_sanitize(t->cdb, SBC_SANITIZE_OVERWRITE, false, l), list,
				 l);
		assert_bad_cdb(r, 7, -1);
	}
	r = tctx_run_lun(t, 0, cdb_sanitize(t->cdb, SBC_SANITIZE_OVERWRITE, false, 517), list, 517);
	assert_bad_cdb(r, 7, -1);
	/* OVERWRITE COUNT 0 (reserved): byte 0 of the list. */
	len = ow_list(list, false, 0, 512, 1);
	r = tctx_run_lun(t, 0, cdb_sanitize(t->cdb, SBC_SANITIZE_OVERWRITE, false, (uint16_t)len),
			 list, len);
	assert_sense(r, SENSE_ILLEGAL_REQUEST, 0x26, 0x00);
	assert_sks(r, 0, 0, 4);
	/* INITIALIZATION PATTERN LENGTH 0, and beyond the block. */
	len = ow_list(list, false, 1, 512, 1);
	put_be16(&list[2], 0);
	r = tctx_run_lun(t, 0, cdb_sanitize(t->cdb, SBC_SANITIZE_OVERWRITE, false, (uint16_t)len),
			 list, len);
	assert_sense(r, SENSE_ILLEGAL_REQUEST, 0x26, 0x00);
	assert_sks(r, 0, 2, -1);
	put_be16(&list[2], 513);
	r = tctx_run_lun(t, 0, cdb_sanitize(t->cdb, SBC_SANITIZE_OVERWRITE, false, (uint16_t)len),
			 list, len);
	assert_sks(r, 0, 2, -1);
	/* TEST field non-zero. */
	len = ow_list(list, false, 1, 512, 1);
	list[0] |= 0x20;
	r = tctx_run_lun(t, 0, cdb_sanitize(t->cdb, SBC_SANITIZE_OVERWRITE, false, (uint16_t)len),
			 list, len);
	assert_sks(r, 0, 0, 6);
	/* ZNR is refused; so is a parameter list for BLOCK ERASE. A bad parameter list is
	 * refused before an IMMED sanitize starts. */
	len = ow_list(list, false, 0, 512, 1);
	cdb_sanitize(t->cdb, SBC_SANITIZE_OVERWRITE, false, (uint16_t)len);
	t->cdb[1] |= 0x80;
	r = tctx_run_lun(t, 0, 10, list, len);
	assert_sks(r, 0, 0, 4);
	t->cdb[1] = 0x40 | SBC_SANITIZE_CRYPTO_ERASE;
	r = tctx_run(t, 10);
	assert_bad_cdb(r, 1, 6);
	r = tctx_run(t, cdb_sanitize(t->cdb, SBC_SANITIZE_CRYPTO_ERASE, false, 4));
	assert_bad_cdb(r, 7, -1);
	/* An unknown service action. */
	r = tctx_run(t, cdb_sanitize(t->cdb, 0x04, false, 0));
	assert_bad_cdb(r, 1, 4);
	assert_int_equal(t->fb->nrecs, 0);
	tctx_destroy(t);
}

static void test_erase(void **state)
{
	struct tctx *t = ctx(0, 2048, 1u << SCSITGT_IO_WRITE_ZEROES, FAKE_SYNC);
	struct lf_result *r;

	(void)state;
	memset(t->fb->data, 0x77, 2048 * 512);
	/* A backend with WRITE ZEROES gets one io for the whole LUN. BLOCK ERASE is only for
	 * thin LUNs: the SERVICE ACTION field. */
	r = tctx_run(t, cdb_sanitize(t->cdb, SBC_SANITIZE_BLOCK_ERASE, false, 0));
	assert_bad_cdb(r, 1, 4);
	r = tctx_run(t, cdb_sanitize(t->cdb, SBC_SANITIZE_CRYPTO_ERASE, false, 0));
	assert_good(r);
	assert_int_equal(t->fb->nrecs, 1);
	assert_int_equal(t->fb->recs[0].type, SCSITGT_IO_WRITE_ZEROES);
	assert_int_equal(t->fb->recs[0].num_blocks, 2048);
	tctx_destroy(t);

	/* Without it, CRYPTO ERASE writes zeros. */
	t = ctx(0, 2048, 0, FAKE_SYNC);
	memset(t->fb->data, 0x77, 2048 * 512);
	r = tctx_run(t, cdb_sanitize(t->cdb, SBC_SANITIZE_CRYPTO_ERASE, false, 0));
	assert_good(r);
	assert_int_equal(t->fb->recs[0].type, SCSITGT_IO_WRITE);
	assert_true(all_bytes(t->fb->data, 2048 * 512, 0));
	tctx_destroy(t);

	/* A thin LUN whose unmapped blocks read as zeros: BLOCK ERASE deallocates. */
	{
		struct fake_backend_opts o;

		fake_backend_opts_init(&o);
		o.supports = 1u << SCSITGT_IO_UNMAP | 1u << SCSITGT_IO_WRITE_ZEROES;
		o.geo_flags = SCSITGT_GEOMETRY_LBPRZ;
		t = tctx_create(SCSITGT_LUN_THIN, &o);
	}
	r = tctx_run(t, cdb_sanitize(t->cdb, SBC_SANITIZE_BLOCK_ERASE, false, 0));
	assert_good(r);
	assert_int_equal(t->fb->nrecs, 1);
	assert_int_equal(t->fb->recs[0].type, SCSITGT_IO_UNMAP);
	tctx_destroy(t);

	/* A read-only LUN: DATA PROTECT, WRITE PROTECTED. */
	t = ctx(SCSITGT_LUN_READ_ONLY, 2048, 0, FAKE_SYNC);
	r = tctx_run(t, cdb_sanitize(t->cdb, SBC_SANITIZE_CRYPTO_ERASE, false, 0));
	assert_sense(r, SENSE_DATA_PROTECT, 0x27, 0x00);
	tctx_destroy(t);
}

/* Let the loop run the deferred pieces of a background sanitize. */
static void spin(struct tctx *t)
{
	for (int i = 0; i < 8; i++)
		uv_run(&t->lf->loop, UV_RUN_NOWAIT);
}

static void test_in_progress(void **state)
{
	struct tctx *t = ctx(0, 4096, 0, FAKE_MANUAL);
	struct lf_result s, *r;
	uint8_t cdb[CDB_BUF];
	size_t len = cdb_sanitize(cdb, SBC_SANITIZE_CRYPTO_ERASE, false, 0);

	(void)state;
	memset(&s, 0, sizeof(s));
	loop_fabric_start(t->lf, 0, cdb, len, NULL, 0, &s);
	assert_false(s.done);
	/* Media commands and TEST UNIT READY: NOT READY, SANITIZE IN PROGRESS. */
	r = tctx_run(t, cdb_tur(t->cdb));
	assert_sense(r, SENSE_NOT_READY, 0x04, 0x1b);
	r = tctx_run(t, cdb_rw(t->cdb, SBC_READ_10, 0, 1, 0));
	assert_sense(r, SENSE_NOT_READY, 0x04, 0x1b);
	/* INQUIRY goes on; REQUEST SENSE reports the progress (nothing done yet). */
	r = tctx_run(t, cdb_inquiry(t->cdb, false, 0, 96));
	assert_good(r);
	r = tctx_run(t, cdb_request_sense(t->cdb, false, 18));
	assert_good(r);
	assert_int_equal(r->data[2] & 0x0f, SENSE_NOT_READY);
	assert_int_equal(r->data[12], 0x04);
	assert_int_equal(r->data[13], 0x1b);
	assert_int_equal(r->data[15], 0x80);
	assert_int_equal(get_be16(&r->data[16]), 0);
	/* Half done after the first of two pieces (completed by hand, without its data: only
	 * the progress is looked at). */
	spin(t);
	assert_int_equal(t->fb->npending, 1);
	t->fb->npending = 0;
	scsitgt_io_complete(t->fb->pending[0], 0);
	spin(t);
	assert_false(s.done);
	assert_int_equal(t->fb->npending, 1);
	r = tctx_run(t, cdb_request_sense(t->cdb, false, 18));
	assert_int_equal(get_be16(&r->data[16]), 0x8000);
	fake_backend_complete_pending(t->fb);
	loop_fabric_wait(t->lf, &s);
	assert_good(&s);
	lf_result_clear(&s);
	/* Afterwards, all back to normal. */
	r = tctx_run(t, cdb_tur(t->cdb));
	assert_good(r);
	r = tctx_run(t, cdb_request_sense(t->cdb, false, 18));
	assert_int_equal(r->data[2] & 0x0f, SENSE_NO_SENSE);
	tctx_destroy(t);
}

/* SBC-4 §4.11: aborting the SANITIZE command (IMMED 0) or losing its nexus ends the
 * command, not the sanitize operation. */
static void test_abort_keeps_running(void **state)
{
	struct tctx *t = ctx(0, 6144, 0, FAKE_MANUAL);
	struct lf_result s, *r;
	uint8_t cdb[CDB_BUF], lun[8];
	size_t len = cdb_sanitize(cdb, SBC_SANITIZE_CRYPTO_ERASE, false, 0);
	int resp = -1;

	(void)state;
	memset(&s, 0, sizeof(s));
	loop_fabric_start(t->lf, 0, cdb, len, NULL, 0, &s);
	spin(t);
	assert_int_equal(t->fb->npending, 1);
	scsitgt__lun_encode(0, lun);
	scsitgt__tmf_execute(t->lf->sess, SCSITGT__TMF_ABORT_TASK, lun, s.cmd->tag, tmf_done,
			     &resp);
	/* The TMF answers once the piece in the backend is back. */
	spin(t);
	assert_int_equal(resp, -1);
	t->fb->npending = 0;
	scsitgt_io_complete(t->fb->pending[0], 0);
	spin(t);
	assert_int_equal(resp, SCSITGT__TMF_COMPLETE);
	assert_true(s.aborted);
	/* The operation goes on: a third of it done. */
	assert_int_equal(t->fb->npending, 1);
	r = tctx_run(t, cdb_tur(t->cdb));
	assert_sense(r, SENSE_NOT_READY, 0x04, 0x1b);
	assert_sks(r, 0, 0x5555, -1);
	t->fb->npending = 0;
	scsitgt_io_complete(t->fb->pending[0], 0);
	spin(t);
	fake_backend_complete_pending(t->fb);
	spin(t);
	assert_good(tctx_run(t, cdb_tur(t->cdb)));
	lf_result_clear(&s);
	tctx_destroy(t);
}

/* IMMED 1 (SBC-4 §5.28.1): GOOD at once, the operation goes on in the background. */
static void test_immed(void **state)
{
	struct tctx *t = ctx(0, 4096, 0, FAKE_MANUAL);
	struct lf_result *r;
	uint8_t lun[8];
	int resp = -1;

	(void)state;
	cdb_sanitize(t->cdb, SBC_SANITIZE_CRYPTO_ERASE, false, 0);
	t->cdb[1] |= 0x80;
	assert_good(tctx_run(t, 10));
	spin(t);
	assert_int_equal(t->fb->npending, 1);
	/* TEST UNIT READY: NOT READY, SANITIZE IN PROGRESS, with the progress indication. */
	r = tctx_run(t, cdb_tur(t->cdb));
	assert_sense(r, SENSE_NOT_READY, 0x04, 0x1b);
	assert_sks(r, 0, 0, -1);
	r = tctx_run(t, cdb_rw(t->cdb, SBC_READ_10, 0, 1, 0));
	assert_sense(r, SENSE_NOT_READY, 0x04, 0x1b);
	/* Another SANITIZE meets the one in progress. */
	r = tctx_run(t, cdb_sanitize(t->cdb, SBC_SANITIZE_CRYPTO_ERASE, false, 0));
	assert_sense(r, SENSE_NOT_READY, 0x04, 0x1b);
	/* Half done after the first of two pieces. */
	t->fb->npending = 0;
	scsitgt_io_complete(t->fb->pending[0], 0);
	spin(t);
	assert_int_equal(t->fb->npending, 1);
	r = tctx_run(t, cdb_request_sense(t->cdb, false, 18));
	assert_good(r);
	assert_int_equal(r->data[12], 0x04);
	assert_int_equal(r->data[13], 0x1b);
	assert_int_equal(r->data[15], 0x80);
	assert_int_equal(get_be16(&r->data[16]), 0x8000);
	r = tctx_run(t, cdb_tur(t->cdb));
	assert_sks(r, 0, 0x8000, -1);
	/* A logical unit reset does not stop it (SBC-4 §4.33.1). */
	scsitgt__lun_encode(0, lun);
	scsitgt__tmf_execute(t->lf->sess, SCSITGT__TMF_LUN_RESET, lun, 0, tmf_done, &resp);
	while (resp == -1)
		uv_run(&t->lf->loop, UV_RUN_ONCE);
	r = tctx_run(t, cdb_tur(t->cdb));
	assert_sense(r, SENSE_UNIT_ATTENTION, 0x29, 0x03);
	r = tctx_run(t, cdb_tur(t->cdb));
	assert_sense(r, SENSE_NOT_READY, 0x04, 0x1b);
	fake_backend_complete_pending(t->fb);
	spin(t);
	assert_good(tctx_run(t, cdb_tur(t->cdb)));
	r = tctx_run(t, cdb_request_sense(t->cdb, false, 18));
	assert_int_equal(r->data[2] & 0x0f, SENSE_NO_SENSE);
	tctx_destroy(t);

	/* A failing background sanitize leaves the failure state behind. */
	t = ctx(0, 2048, 0, FAKE_SYNC);
	fake_backend_fail_next(t->fb, -EIO, 1);
	cdb_sanitize(t->cdb, SBC_SANITIZE_CRYPTO_ERASE, false, 0);
	t->cdb[1] |= 0x80;
	assert_good(tctx_run(t, 10));
	spin(t);
	r = tctx_run(t, cdb_rw(t->cdb, SBC_READ_10, 0, 1, 0));
	assert_sense(r, SENSE_MEDIUM_ERROR, 0x31, 0x03);
	tctx_destroy(t);

	/* A LUN removed during a background sanitize stops it and goes away. */
	t = ctx(0, 4096, 0, FAKE_MANUAL);
	cdb_sanitize(t->cdb, SBC_SANITIZE_CRYPTO_ERASE, false, 0);
	t->cdb[1] |= 0x80;
	assert_good(tctx_run(t, 10));
	spin(t);
	scsitgt_lun_destroy(t->lun, NULL, NULL);
	fake_backend_complete_pending(t->fb);
	spin(t);
	tctx_destroy(t);
}

static void test_failure_mode(void **state)
{
	struct tctx *t = ctx(0, 2048, 0, FAKE_SYNC);
	struct lf_result *r;

	(void)state;
	/* A failed sanitize (AUSE 0): MEDIUM ERROR, SANITIZE COMMAND FAILED, now and for media
	 * access commands after it; EXIT FAILURE MODE is not allowed. */
	fake_backend_fail_next(t->fb, -EIO, 1);
	r = tctx_run(t, cdb_sanitize(t->cdb, SBC_SANITIZE_CRYPTO_ERASE, false, 0));
	assert_sense(r, SENSE_MEDIUM_ERROR, 0x31, 0x03);
	r = tctx_run(t, cdb_rw(t->cdb, SBC_READ_10, 0, 1, 0));
	assert_sense(r, SENSE_MEDIUM_ERROR, 0x31, 0x03);
	r = tctx_run(t, cdb_sanitize(t->cdb, SBC_SANITIZE_EXIT_FAILURE_MODE, false, 0));
	assert_bad_cdb(r, 1, 4);
	/* A successful sanitize ends it. */
	r = tctx_run(t, cdb_sanitize(t->cdb, SBC_SANITIZE_CRYPTO_ERASE, false, 0));
	assert_good(r);
	r = tctx_run(t, cdb_rw(t->cdb, SBC_READ_10, 0, 1, 0));
	assert_good(r);
	/* With AUSE, EXIT FAILURE MODE does. */
	fake_backend_fail_next(t->fb, -EIO, 1);
	r = tctx_run(t, cdb_sanitize(t->cdb, SBC_SANITIZE_CRYPTO_ERASE, true, 0));
	assert_sense(r, SENSE_MEDIUM_ERROR, 0x31, 0x03);
	r = tctx_run(t, cdb_sanitize(t->cdb, SBC_SANITIZE_EXIT_FAILURE_MODE, false, 0));
	assert_good(r);
	r = tctx_run(t, cdb_rw(t->cdb, SBC_READ_10, 0, 1, 0));
	assert_good(r);
	tctx_destroy(t);
}

/*
 * SBC-4 §4.33: once a sanitize has completed no previous data can be recovered. On a backend
 * with a volatile cache its writes are written back (one FLUSH after the last piece) before
 * the sanitize completes; without a cache nothing is added.
 */
static void test_cached_backend_flushed(void **state)
{
	uint32_t sup = 1u << SCSITGT_IO_WRITE_ZEROES | 1u << SCSITGT_IO_FLUSH;
	struct fake_backend_opts o;
	uint8_t list[4 + 512];
	size_t len;
	struct tctx *t;

	(void)state;
	fake_backend_opts_init(&o);
	o.num_blocks = 4096;
	o.supports = sup;
	o.geo_flags = SCSITGT_GEOMETRY_WRITE_CACHE;
	/* WCE 1 or 0 alike: the walk's ios carry no FUA. */
	for (int wce = 0; wce < 2; wce++) {
		t = tctx_create(wce ? SCSITGT_LUN_WRITE_CACHE : 0, &o);
		assert_good(tctx_run(t, cdb_sanitize(t->cdb, SBC_SANITIZE_CRYPTO_ERASE, false, 0)));
		assert_int_equal(t->fb->nrecs, 2);
		assert_int_equal(t->fb->recs[0].type, SCSITGT_IO_WRITE_ZEROES);
		assert_int_equal(t->fb->recs[1].type, SCSITGT_IO_FLUSH);
		/* Two passes of OVERWRITE: four writes, then one FLUSH. */
		t->fb->nrecs = 0;
		len = ow_list(list, true, 2, 512, 0xa5);
		assert_good(tctx_run_lun(
			t, 0, cdb_sanitize(t->cdb, SBC_SANITIZE_OVERWRITE, false, (uint16_t)len),
			list, len));
		assert_int_equal(t->fb->nrecs, 5);
		for (size_t i = 0; i < 4; i++)
			assert_int_equal(t->fb->recs[i].type, SCSITGT_IO_WRITE);
		assert_int_equal(t->fb->recs[4].type, SCSITGT_IO_FLUSH);
		assert_int_equal(t->lun->sanitize.state, SCSITGT__SANITIZE_IDLE);
		tctx_destroy(t);
	}
	/* FLUSH offered but no volatile cache: nothing to write back. */
	o.geo_flags = 0;
	t = tctx_create(0, &o);
	assert_good(tctx_run(t, cdb_sanitize(t->cdb, SBC_SANITIZE_CRYPTO_ERASE, false, 0)));
	assert_int_equal(t->fb->nrecs, 1);
	assert_int_equal(t->fb->recs[0].type, SCSITGT_IO_WRITE_ZEROES);
	tctx_destroy(t);
}

/* The FLUSH after the last piece fails: the sanitize failed (SBC-4 §4.33.3: MEDIUM ERROR,
 * SANITIZE COMMAND FAILED), now and for the media commands after it; never GOOD. */
static void test_cached_flush_fails(void **state)
{
	struct fake_backend_opts o;
	struct tctx *t;

	(void)state;
	fake_backend_opts_init(&o);
	o.num_blocks = 4096;
	o.supports = 1u << SCSITGT_IO_WRITE_ZEROES | 1u << SCSITGT_IO_FLUSH;
	o.geo_flags = SCSITGT_GEOMETRY_WRITE_CACHE;
	t = tctx_create(SCSITGT_LUN_WRITE_CACHE, &o);
	fake_backend_fail_type(t->fb, SCSITGT_IO_FLUSH, -EIO, 1);
	assert_sense(tctx_run(t, cdb_sanitize(t->cdb, SBC_SANITIZE_CRYPTO_ERASE, false, 0)),
		     SENSE_MEDIUM_ERROR, 0x31, 0x03);
	assert_int_equal(t->fb->nrecs, 2);
	assert_int_equal(t->fb->recs[0].type, SCSITGT_IO_WRITE_ZEROES);
	assert_int_equal(t->fb->recs[1].type, SCSITGT_IO_FLUSH);
	assert_sense(tctx_run(t, cdb_rw(t->cdb, SBC_READ_10, 0, 1, 0)), SENSE_MEDIUM_ERROR, 0x31,
		     0x03);
	tctx_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_overwrite),
		cmocka_unit_test(test_overwrite_bad),
		cmocka_unit_test(test_erase),
		cmocka_unit_test(test_in_progress),
		cmocka_unit_test(test_abort_keeps_running),
		cmocka_unit_test(test_immed),
		cmocka_unit_test(test_failure_mode),
		cmocka_unit_test(test_cached_backend_flushed),
		cmocka_unit_test(test_cached_flush_fails),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
