/* SPDX-License-Identifier: MIT */
/* Shared helpers of the reservation, unit attention and TMF tests: a LUN with three nexuses. */
#ifndef SCSITGT_TESTS_PR_COMMON_H
#define SCSITGT_TESTS_PR_COMMON_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cdb_build.h"
#include "core/pr.h"
#include "core/scsi_spec.h"
#include "fake_backend.h"
#include "loop_fabric.h"
#include "test_util.h"
#include "util/be.h"

#define PORT_A "iqn.2024-01.org.example:initiator,i,0x23d000000001"
#define PORT_B "iqn.2024-01.org.example:other,i,0x23d000000002"
/* Same initiator device as A, another ISID: another I_T nexus. */
#define PORT_A2 "iqn.2024-01.org.example:initiator,i,0x23d000000009"
/* A nexus that never registers: it reads the state without consuming others' conditions. */
#define PORT_OBS "iqn.2024-01.org.example:observer,i,0x23d000000005"

struct prt {
	struct loop_fabric *lf;
	struct fake_backend *fb;
	struct scsitgt_lun *lun;
	struct scsitgt__session *a, *b, *a2, *obs;
	struct lf_result r;
};

/* Three nexuses on one target port; @mode FAKE_SYNC or FAKE_MANUAL. B and A2 have consumed
 * their POWER ON unit attention. */
static inline struct prt *prt_create(enum fake_mode mode)
{
	struct prt *t = calloc(1, sizeof(*t));
	struct fake_backend_opts o;
	uint8_t cdb[CDB_BUF];

	assert_non_null(t);
	assert_int_equal(loop_fabric_create(&t->lf, NULL), 0);
	fake_backend_opts_init(&o);
	o.mode = mode;
	o.store = true;
	assert_int_equal(fake_backend_lun_create(&t->lun, &t->fb, t->lf->tgt, 0, 0, &o), 0);
	t->a = t->lf->sess;
	assert_int_equal(loop_fabric_add_session(t->lf, PORT_B, 1, &t->b), 0);
	assert_int_equal(loop_fabric_add_session(t->lf, PORT_A2, 1, &t->a2), 0);
	assert_int_equal(loop_fabric_add_session(t->lf, PORT_OBS, 1, &t->obs), 0);
	loop_fabric_run_on(t->lf, t->obs, 0, cdb, cdb_tur(cdb), NULL, 0, &t->r);
	lf_result_clear(&t->r);
	loop_fabric_run_on(t->lf, t->b, 0, cdb, cdb_tur(cdb), NULL, 0, &t->r);
	lf_result_clear(&t->r);
	loop_fabric_run_on(t->lf, t->a2, 0, cdb, cdb_tur(cdb), NULL, 0, &t->r);
	lf_result_clear(&t->r);
	return t;
}

static inline void prt_destroy(struct prt *t)
{
	lf_result_clear(&t->r);
	loop_fabric_destroy(t->lf);
	free(t);
}

static inline struct lf_result *prt_run(struct prt *t, struct scsitgt__session *s,
					const uint8_t *cdb, size_t len, const void *dout,
					size_t dout_len)
{
	lf_result_clear(&t->r);
	loop_fabric_run_on(t->lf, s, 0, cdb, len, dout, dout_len, &t->r);
	return &t->r;
}

/* PERSISTENT RESERVE OUT with the basic 24-byte parameter list. */
static inline struct lf_result *prt_out(struct prt *t, struct scsitgt__session *s, uint8_t sa,
					uint8_t type, uint64_t key, uint64_t sa_key, uint8_t flags)
{
	uint8_t cdb[10] = { SPC_PERSISTENT_RESERVE_OUT, sa, type };
	uint8_t p[24] = { 0 };

	put_be32(&cdb[5], sizeof(p));
	put_be64(&p[0], key);
	put_be64(&p[8], sa_key);
	p[20] = flags;
	return prt_run(t, s, cdb, sizeof(cdb), p, sizeof(p));
}

/* PERSISTENT RESERVE OUT with a raw parameter list. */
static inline struct lf_result *prt_out_raw(struct prt *t, struct scsitgt__session *s, uint8_t sa,
					    uint8_t type, const uint8_t *p, uint32_t len)
{
	uint8_t cdb[10] = { SPC_PERSISTENT_RESERVE_OUT, sa, type };

	put_be32(&cdb[5], len);
	return prt_run(t, s, cdb, sizeof(cdb), p, len);
}

static inline struct lf_result *prt_in(struct prt *t, struct scsitgt__session *s, uint8_t sa,
				       uint16_t alloc)
{
	uint8_t cdb[10] = { SPC_PERSISTENT_RESERVE_IN, sa };

	put_be16(&cdb[7], alloc);
	return prt_run(t, s, cdb, sizeof(cdb), NULL, 0);
}

static inline struct lf_result *prt_read(struct prt *t, struct scsitgt__session *s)
{
	uint8_t cdb[CDB_BUF];

	return prt_run(t, s, cdb, cdb_rw(cdb, SBC_READ_10, 0, 1, 0), NULL, 0);
}

static inline struct lf_result *prt_write(struct prt *t, struct scsitgt__session *s)
{
	uint8_t cdb[CDB_BUF], blk[512] = { 0x5a };

	return prt_run(t, s, cdb, cdb_rw(cdb, SBC_WRITE_10, 0, 1, 0), blk, sizeof(blk));
}

/* READ RESERVATION (by OBS): @key and @type, or none when @type is 0. */
static inline void assert_reservation(struct prt *t, uint64_t key, uint8_t type)
{
	struct lf_result *r = prt_in(t, t->obs, PR_IN_READ_RESERVATION, 64);

	assert_good(r);
	if (type == 0) {
		assert_int_equal(get_be32(&r->data[4]), 0);
		return;
	}
	assert_int_equal(get_be32(&r->data[4]), 16);
	assert_int_equal(get_be64(&r->data[8]), key);
	assert_int_equal(r->data[21], type);
}

/* These evaluate @x (which runs a command) exactly once. */
#define ok(x)                               \
	do {                                \
		struct lf_result *r_ = (x); \
		assert_good(r_);            \
	} while (0)
#define conflict(x) assert_int_equal((x)->status, SAM_STAT_RESERVATION_CONFLICT)
#define sense(x, key, asc, ascq)                  \
	do {                                      \
		struct lf_result *r_ = (x);       \
		assert_sense(r_, key, asc, ascq); \
	} while (0)
#define ua(x, asc, ascq) sense(x, SENSE_UNIT_ATTENTION, asc, ascq)
#define bad_cdb(x, field, bit)                  \
	do {                                    \
		struct lf_result *r_ = (x);     \
		assert_bad_cdb(r_, field, bit); \
	} while (0)
/* INVALID FIELD IN PARAMETER LIST pointing at byte @field. */
#define bad_param(x, field)                                          \
	do {                                                         \
		struct lf_result *r_ = (x);                          \
		assert_sense(r_, SENSE_ILLEGAL_REQUEST, 0x26, 0x00); \
		assert_int_equal(r_->sense[15] & 0xc0, 0x80);        \
		assert_int_equal(get_be16(&r_->sense[16]), (field)); \
	} while (0)

static inline void tmf_resp(void *arg, enum scsitgt__tmf_response response)
{
	*(int *)arg = (int)response;
}

#endif /* SCSITGT_TESTS_PR_COMMON_H */
