/* SPDX-License-Identifier: MIT */
/* cmocka helpers shared by the core unit tests: a fixture and sense data assertions. */
#ifndef SCSITGT_TESTS_TEST_UTIL_H
#define SCSITGT_TESTS_TEST_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
/* cmocka needs the headers above first. */
#include <cmocka.h>

#include "cdb_build.h"
#include "fake_backend.h"
#include "loop_fabric.h"
#include "util/be.h"

/* A loop fabric with one LUN 0 on a fake backend. */
struct tctx {
	struct loop_fabric *lf;
	struct scsitgt_lun *lun;
	struct fake_backend *fb;
	struct lf_result r;
	uint8_t cdb[CDB_BUF];
};

static inline struct tctx *tctx_create(uint32_t lun_flags, const struct fake_backend_opts *o)
{
	struct tctx *t = calloc(1, sizeof(*t));
	struct fake_backend_opts def;

	assert_non_null(t);
	assert_int_equal(loop_fabric_create(&t->lf, NULL), 0);
	if (o == NULL) {
		fake_backend_opts_init(&def);
		o = &def;
	}
	assert_int_equal(fake_backend_lun_create(&t->lun, &t->fb, t->lf->tgt, 0, lun_flags, o), 0);
	return t;
}

/* A LUN on a backend that unmaps: thin (SCSITGT_LUN_THIN) or fully provisioned. */
static inline struct tctx *tctx_create_unmap(bool thin)
{
	struct fake_backend_opts o;

	fake_backend_opts_init(&o);
	o.supports = 1u << SCSITGT_IO_UNMAP;
	return tctx_create(thin ? SCSITGT_LUN_THIN : 0, &o);
}

static inline void tctx_destroy(struct tctx *t)
{
	lf_result_clear(&t->r);
	loop_fabric_destroy(t->lf);
	free(t);
}

/* cmocka fixtures: *state is a tctx with LUN 0 on a default fake backend. */
static inline int tctx_setup(void **state)
{
	*state = tctx_create(0, NULL);
	return 0;
}

static inline int tctx_teardown(void **state)
{
	tctx_destroy(*state);
	return 0;
}

/* Run t->cdb (length @len) on LUN @lun; the result lands in t->r (previous data freed). */
static inline struct lf_result *tctx_run_lun(struct tctx *t, uint64_t lun, size_t len,
					     const void *dout, size_t dout_len)
{
	lf_result_clear(&t->r);
	loop_fabric_run(t->lf, lun, t->cdb, len, dout, dout_len, &t->r);
	return &t->r;
}

static inline struct lf_result *tctx_run(struct tctx *t, size_t len)
{
	return tctx_run_lun(t, 0, len, NULL, 0);
}

/* Evaluates @res once: callers pass tctx_run(...) directly. */
#define assert_good(res)                                  \
	do {                                              \
		const struct lf_result *tu_good_ = (res); \
		assert_int_equal(tu_good_->status, 0x00); \
		assert_int_equal(tu_good_->sense_len, 0); \
	} while (0)

/* Answered TASK ABORTED (40h: another nexus aborted it under TAS 1, SAM-5 §5.6): a response,
 * no sense, no data. Evaluates @res once. */
#define assert_task_aborted(res)                        \
	do {                                            \
		const struct lf_result *tu_ta_ = (res); \
		assert_true(tu_ta_->done);              \
		assert_false(tu_ta_->aborted);          \
		assert_int_equal(tu_ta_->status, 0x40); \
		assert_int_equal(tu_ta_->sense_len, 0); \
		assert_int_equal(tu_ta_->data_len, 0);  \
	} while (0)

/* CHECK CONDITION with fixed-format sense (SPC-5 §4.4.3) of @key/@asc/@ascq. */
#define assert_sense(res, key, asc, ascq) assert_sense_data(res, key, asc, ascq, 0)

/* CHECK CONDITION that still carries @len bytes of Data-In (the good blocks of a READ that
 * failed part way, scsitgt_io_complete_partial()). */
#define assert_sense_data(res, key, asc, ascq, len)                  \
	do {                                                         \
		const struct lf_result *tu_sense_ = (res);           \
		assert_int_equal(tu_sense_->status, 0x02);           \
		assert_int_equal(tu_sense_->sense_len, 18);          \
		assert_int_equal(tu_sense_->sense[0] & 0x7f, 0x70);  \
		assert_int_equal(tu_sense_->sense[2] & 0x0f, (key)); \
		assert_int_equal(tu_sense_->sense[7], 10);           \
		assert_int_equal(tu_sense_->sense[12], (asc));       \
		assert_int_equal(tu_sense_->sense[13], (ascq));      \
		assert_int_equal(tu_sense_->data_len, (len));        \
	} while (0)

/* Fixed-format SENSE KEY SPECIFIC field pointer: C/D @cd, FIELD POINTER @field, BIT POINTER
 * @bit (-1: BPV zero). */
#define assert_sks(res, cd, field, bit)                        \
	do {                                                   \
		const uint8_t *s_ = &(res)->sense[15];         \
		assert_int_equal(s_[0] & 0x80, 0x80);          \
		assert_int_equal(!!(s_[0] & 0x40), !!(cd));    \
		if ((bit) < 0) {                               \
			assert_int_equal(s_[0] & 0x08, 0);     \
		} else {                                       \
			assert_int_equal(s_[0] & 0x08, 0x08);  \
			assert_int_equal(s_[0] & 0x07, (bit)); \
		}                                              \
		assert_int_equal(get_be16(&s_[1]), (field));   \
	} while (0)

#define assert_no_sks(res) assert_int_equal((res)->sense[15] & 0x80, 0)

/* INVALID FIELD IN CDB with the field pointer at @field/@bit. */
#define assert_bad_cdb(res, field, bit)               \
	do {                                          \
		assert_sense((res), 0x5, 0x24, 0x00); \
		assert_sks((res), 1, (field), (bit)); \
	} while (0)

#endif /* SCSITGT_TESTS_TEST_UTIL_H */
