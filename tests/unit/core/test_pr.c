/* SPDX-License-Identifier: MIT */
/* Persistent reservations (SPC-5 §5.13, §6.16, §6.17): every service action and type. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libscsitgt/pr.h"
#include "test_pr_common.h"

static uint32_t generation(struct prt *t)
{
	struct lf_result *r = prt_in(t, t->obs, PR_IN_READ_KEYS, 8);

	assert_good(r);
	return get_be32(r->data);
}

/* READ KEYS: the keys, in registration order. */
static void assert_keys(struct prt *t, unsigned int n, const uint64_t *keys)
{
	struct lf_result *r = prt_in(t, t->obs, PR_IN_READ_KEYS, 1024);

	assert_good(r);
	assert_int_equal(get_be32(&r->data[4]), 8 * n);
	for (unsigned int i = 0; i < n; i++)
		assert_int_equal(get_be64(&r->data[8 + 8 * i]), keys[i]);
}

static void test_register(void **state)
{
	struct prt *t = prt_create(FAKE_SYNC);
	uint32_t g0 = generation(t);

	(void)state;
	/* REGISTER: an unregistered nexus must present key 0. */
	conflict(prt_out(t, t->a, PR_OUT_REGISTER, 0, 5, 0x11, 0));
	ok(prt_out(t, t->a, PR_OUT_REGISTER, 0, 0, 0x11, 0));
	assert_int_equal(generation(t), g0 + 1);
	assert_keys(t, 1, (uint64_t[]){ 0x11 });
	/* Changing the key needs the current one. */
	conflict(prt_out(t, t->a, PR_OUT_REGISTER, 0, 0x12, 0x13, 0));
	ok(prt_out(t, t->a, PR_OUT_REGISTER, 0, 0x11, 0x12, 0));
	/* REGISTER AND IGNORE EXISTING KEY does not look at the key. */
	ok(prt_out(t, t->b, PR_OUT_REGISTER_AND_IGNORE, 0, 0x999, 0x21, 0));
	ok(prt_out(t, t->b, PR_OUT_REGISTER_AND_IGNORE, 0, 0x999, 0x22, 0));
	/* Another ISID of the same initiator is another nexus. */
	ok(prt_out(t, t->a2, PR_OUT_REGISTER, 0, 0, 0x31, 0));
	assert_keys(t, 3, (uint64_t[]){ 0x12, 0x22, 0x31 });
	assert_int_equal(generation(t), g0 + 5);
	/* Unregistering: service action key 0; unregistered + key 0 is a no-op. */
	ok(prt_out(t, t->a2, PR_OUT_REGISTER, 0, 0x31, 0, 0));
	ok(prt_out(t, t->a2, PR_OUT_REGISTER_AND_IGNORE, 0, 0, 0, 0));
	assert_keys(t, 2, (uint64_t[]){ 0x12, 0x22 });
	assert_int_equal(generation(t), g0 + 6);
	prt_destroy(t);
}

static void test_registration_survives_reconnect(void **state)
{
	struct prt *t = prt_create(FAKE_SYNC);

	(void)state;
	ok(prt_out(t, t->b, PR_OUT_REGISTER, 0, 0, 0x21, 0));
	ok(prt_out(t, t->b, PR_OUT_RESERVE, PR_TYPE_WE, 0x21, 0, 0));
	scsitgt__session_destroy(t->b);
	assert_int_equal(loop_fabric_add_session(t->lf, PORT_B, 1, &t->b), 0);
	/* The same I_T nexus is back: it finds I_T NEXUS LOSS OCCURRED (SAM-5 §6.3.4), and its
	 * registration and reservation are still there. */
	ua(prt_read(t, t->b), 0x29, 0x07);
	ok(prt_write(t, t->b));
	conflict(prt_write(t, t->a));
	assert_reservation(t, 0x21, PR_TYPE_WE);
	prt_destroy(t);
}

/*
 * The conflict table for every type (SPC-5 Table 63, SBC-4 Table 13) as seen by a registered
 * and an unregistered non-holder: READ (10) and MODE SENSE are read-class, WRITE (10) and
 * SYNCHRONIZE CACHE write-class; INQUIRY, TEST UNIT READY, READ CAPACITY, REPORT LUNS and
 * PERSISTENT RESERVE IN never conflict.
 */
struct access_row {
	uint8_t type;
	bool reg_read, reg_write, unreg_read, unreg_write;
};

static const struct access_row access_rows[] = {
	{ PR_TYPE_WE, true, false, true, false },   { PR_TYPE_EA, false, false, false, false },
	{ PR_TYPE_WE_RO, true, true, true, false }, { PR_TYPE_EA_RO, true, true, false, false },
	{ PR_TYPE_WE_AR, true, true, true, false }, { PR_TYPE_EA_AR, true, true, false, false },
};

static void check_access(struct prt *t, struct scsitgt__session *s, bool can_read, bool can_write)
{
	uint8_t cdb[CDB_BUF];
	struct lf_result *r;

	r = prt_read(t, s);
	if (can_read)
		assert_good(r);
	else
		conflict(r);
	r = prt_run(t, s, cdb, cdb_mode_sense6(cdb, false, 0, 0x3f, 0, 255), NULL, 0);
	if (can_read)
		assert_good(r);
	else
		conflict(r);
	r = prt_write(t, s);
	if (can_write)
		assert_good(r);
	else
		conflict(r);
	r = prt_run(t, s, cdb, cdb_sync_cache10(cdb, 0, 0, false), NULL, 0);
	if (can_write)
		assert_good(r);
	else
		conflict(r);
	ok(prt_run(t, s, cdb, cdb_inquiry(cdb, false, 0, 96), NULL, 0));
	ok(prt_run(t, s, cdb, cdb_tur(cdb), NULL, 0));
	ok(prt_run(t, s, cdb, cdb_read_capacity10(cdb, 0, false), NULL, 0));
	ok(prt_run(t, s, cdb, cdb_report_luns(cdb, 0, 64), NULL, 0));
	ok(prt_in(t, s, PR_IN_READ_KEYS, 64));
}

static void test_access_every_type(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(access_rows) / sizeof(access_rows[0]); i++) {
		const struct access_row *row = &access_rows[i];
		struct prt *t = prt_create(FAKE_SYNC);
		bool ar = row->type == PR_TYPE_WE_AR || row->type == PR_TYPE_EA_AR;

		ok(prt_out(t, t->a, PR_OUT_REGISTER, 0, 0, 0x11, 0));
		ok(prt_out(t, t->b, PR_OUT_REGISTER, 0, 0, 0x22, 0));
		ok(prt_out(t, t->a, PR_OUT_RESERVE, row->type, 0x11, 0, 0));
		assert_reservation(t, ar ? 0 : 0x11, row->type);
		check_access(t, t->a, true, true);
		check_access(t, t->b, row->reg_read, row->reg_write);
		check_access(t, t->a2, row->unreg_read, row->unreg_write);
		ok(prt_out(t, t->b, PR_OUT_REGISTER, 0, 0x22, 0, 0));
		check_access(t, t->b, row->unreg_read, row->unreg_write);
		prt_destroy(t);
	}
}

static void test_reserve(void **state)
{
	struct prt *t = prt_create(FAKE_SYNC);

	(void)state;
	/* Unregistered, or with the wrong key: conflict. */
	conflict(prt_out(t, t->a, PR_OUT_RESERVE, PR_TYPE_WE, 0, 0, 0));
	ok(prt_out(t, t->a, PR_OUT_REGISTER, 0, 0, 0x11, 0));
	ok(prt_out(t, t->b, PR_OUT_REGISTER, 0, 0, 0x22, 0));
	conflict(prt_out(t, t->a, PR_OUT_RESERVE, PR_TYPE_WE, 0x12, 0, 0));
	ok(prt_out(t, t->a, PR_OUT_RESERVE, PR_TYPE_EA, 0x11, 0, 0));
	/* The holder may repeat it; another type, or another nexus, conflicts. */
	ok(prt_out(t, t->a, PR_OUT_RESERVE, PR_TYPE_EA, 0x11, 0, 0));
	conflict(prt_out(t, t->a, PR_OUT_RESERVE, PR_TYPE_WE, 0x11, 0, 0));
	conflict(prt_out(t, t->b, PR_OUT_RESERVE, PR_TYPE_EA, 0x22, 0, 0));
	/* RESERVE does not change PRgeneration. */
	assert_int_equal(generation(t), 2);
	/* Bad type, bad scope, bad parameter list length. */
	bad_cdb(prt_out(t, t->a, PR_OUT_RESERVE, 0x02, 0x11, 0, 0), 2, 3);
	bad_cdb(prt_out(t, t->a, PR_OUT_RESERVE, 0x13, 0x11, 0, 0), 2, 7);
	{
		uint8_t p[32] = { 0 };

		put_be64(p, 0x11);
		sense(prt_out_raw(t, t->a, PR_OUT_RESERVE, PR_TYPE_EA, p, 32),
		      SENSE_ILLEGAL_REQUEST, 0x1a, 0x00);
		sense(prt_out_raw(t, t->a, PR_OUT_RESERVE, PR_TYPE_EA, p, 16),
		      SENSE_ILLEGAL_REQUEST, 0x1a, 0x00);
	}
	/* Unknown service action (SPC-5 Table 230 stops at 08h). */
	{
		uint8_t cdb[10] = { SPC_PERSISTENT_RESERVE_OUT, 0x09 };

		put_be32(&cdb[5], 24);
		bad_cdb(prt_run(t, t->a, cdb, 10, NULL, 0), 1, 4);
	}
	prt_destroy(t);
}

static void test_release(void **state)
{
	struct prt *t = prt_create(FAKE_SYNC);
	uint8_t cdb[CDB_BUF];

	(void)state;
	ok(prt_out(t, t->a, PR_OUT_REGISTER, 0, 0, 0x11, 0));
	ok(prt_out(t, t->b, PR_OUT_REGISTER, 0, 0, 0x22, 0));
	ok(prt_out(t, t->a, PR_OUT_RESERVE, PR_TYPE_WE_RO, 0x11, 0, 0));
	/* A non-holder's RELEASE is a no-op; the wrong type is INVALID RELEASE. */
	ok(prt_out(t, t->b, PR_OUT_RELEASE, PR_TYPE_WE_RO, 0x22, 0, 0));
	assert_reservation(t, 0x11, PR_TYPE_WE_RO);
	sense(prt_out(t, t->a, PR_OUT_RELEASE, PR_TYPE_WE, 0x11, 0, 0), SENSE_ILLEGAL_REQUEST, 0x26,
	      0x04);
	conflict(prt_out(t, t->a, PR_OUT_RELEASE, PR_TYPE_WE_RO, 0x99, 0, 0));
	ok(prt_out(t, t->a, PR_OUT_RELEASE, PR_TYPE_WE_RO, 0x11, 0, 0));
	assert_reservation(t, 0, 0);
	/* Releasing a registrants-only type tells the other registrants. */
	ua(prt_run(t, t->b, cdb, cdb_tur(cdb), NULL, 0), 0x2a, 0x04);
	/* WE / EA releases are silent. */
	ok(prt_out(t, t->a, PR_OUT_RESERVE, PR_TYPE_WE, 0x11, 0, 0));
	ok(prt_out(t, t->a, PR_OUT_RELEASE, PR_TYPE_WE, 0x11, 0, 0));
	ok(prt_run(t, t->b, cdb, cdb_tur(cdb), NULL, 0));
	/* All-registrants: any registrant releases it. */
	ok(prt_out(t, t->a, PR_OUT_RESERVE, PR_TYPE_EA_AR, 0x11, 0, 0));
	ok(prt_out(t, t->b, PR_OUT_RELEASE, PR_TYPE_EA_AR, 0x22, 0, 0));
	assert_reservation(t, 0, 0);
	ua(prt_run(t, t->a, cdb, cdb_tur(cdb), NULL, 0), 0x2a, 0x04);
	/* The holder unregistering ends a single-holder reservation... */
	ok(prt_out(t, t->a, PR_OUT_RESERVE, PR_TYPE_EA, 0x11, 0, 0));
	ok(prt_out(t, t->a, PR_OUT_REGISTER, 0, 0x11, 0, 0));
	assert_reservation(t, 0, 0);
	/* ...an all-registrants one lasts until the last registrant goes. */
	ok(prt_out(t, t->a, PR_OUT_REGISTER, 0, 0, 0x11, 0));
	ok(prt_out(t, t->a, PR_OUT_RESERVE, PR_TYPE_WE_AR, 0x11, 0, 0));
	ok(prt_out(t, t->a, PR_OUT_REGISTER, 0, 0x11, 0, 0));
	assert_reservation(t, 0, PR_TYPE_WE_AR);
	ok(prt_out(t, t->b, PR_OUT_REGISTER, 0, 0x22, 0, 0));
	assert_reservation(t, 0, 0);
	prt_destroy(t);
}

static void test_clear(void **state)
{
	struct prt *t = prt_create(FAKE_SYNC);
	uint8_t cdb[CDB_BUF];
	uint32_t g;

	(void)state;
	ok(prt_out(t, t->a, PR_OUT_REGISTER, 0, 0, 0x11, 0));
	ok(prt_out(t, t->b, PR_OUT_REGISTER, 0, 0, 0x22, 0));
	ok(prt_out(t, t->a, PR_OUT_RESERVE, PR_TYPE_EA, 0x11, 0, 0));
	g = generation(t);
	conflict(prt_out(t, t->a2, PR_OUT_CLEAR, 0, 0, 0, 0));
	conflict(prt_out(t, t->b, PR_OUT_CLEAR, 0, 0x23, 0, 0));
	/* A registered non-holder may clear. */
	ok(prt_out(t, t->b, PR_OUT_CLEAR, 0, 0x22, 0, 0));
	assert_keys(t, 0, NULL);
	assert_reservation(t, 0, 0);
	assert_int_equal(generation(t), g + 1);
	ua(prt_run(t, t->a, cdb, cdb_tur(cdb), NULL, 0), 0x2a, 0x03);
	ok(prt_run(t, t->b, cdb, cdb_tur(cdb), NULL, 0));
	prt_destroy(t);
}

static void test_preempt(void **state)
{
	struct prt *t = prt_create(FAKE_SYNC);
	uint8_t cdb[CDB_BUF];

	(void)state;
	ok(prt_out(t, t->a, PR_OUT_REGISTER, 0, 0, 0x11, 0));
	ok(prt_out(t, t->b, PR_OUT_REGISTER, 0, 0, 0x22, 0));
	ok(prt_out(t, t->a2, PR_OUT_REGISTER, 0, 0, 0x33, 0));
	/* Without a reservation: registrations with the key go; key 0 is invalid. */
	bad_param(prt_out(t, t->a, PR_OUT_PREEMPT, PR_TYPE_WE, 0x11, 0, 0), 8);
	conflict(prt_out(t, t->a, PR_OUT_PREEMPT, PR_TYPE_WE, 0x11, 0x77, 0));
	ok(prt_out(t, t->a, PR_OUT_PREEMPT, PR_TYPE_WE, 0x11, 0x33, 0));
	assert_keys(t, 2, (uint64_t[]){ 0x11, 0x22 });
	assert_reservation(t, 0, 0);
	ua(prt_run(t, t->a2, cdb, cdb_tur(cdb), NULL, 0), 0x2a, 0x05);
	/* Preempting the holder: its registration goes and the preemptor holds the new type. */
	ok(prt_out(t, t->b, PR_OUT_RESERVE, PR_TYPE_WE, 0x22, 0, 0));
	ok(prt_out(t, t->a, PR_OUT_PREEMPT, PR_TYPE_EA, 0x11, 0x22, 0));
	assert_keys(t, 1, (uint64_t[]){ 0x11 });
	assert_reservation(t, 0x11, PR_TYPE_EA);
	ua(prt_run(t, t->b, cdb, cdb_tur(cdb), NULL, 0), 0x2a, 0x05);
	conflict(prt_read(t, t->b));
	/* Unregistered nexuses cannot preempt. */
	conflict(prt_out(t, t->b, PR_OUT_PREEMPT, PR_TYPE_EA, 0x22, 0x11, 0));
	/* All-registrants with key 0: everyone else goes, the preemptor holds the new type. */
	ok(prt_out(t, t->a, PR_OUT_RELEASE, PR_TYPE_EA, 0x11, 0, 0));
	ok(prt_out(t, t->b, PR_OUT_REGISTER, 0, 0, 0x22, 0));
	ok(prt_out(t, t->a2, PR_OUT_REGISTER, 0, 0, 0x33, 0));
	ok(prt_out(t, t->a, PR_OUT_RESERVE, PR_TYPE_WE_AR, 0x11, 0, 0));
	ok(prt_out(t, t->b, PR_OUT_PREEMPT, PR_TYPE_WE, 0x22, 0, 0));
	assert_keys(t, 1, (uint64_t[]){ 0x22 });
	assert_reservation(t, 0x22, PR_TYPE_WE);
	ua(prt_run(t, t->a, cdb, cdb_tur(cdb), NULL, 0), 0x2a, 0x05);
	ua(prt_run(t, t->a2, cdb, cdb_tur(cdb), NULL, 0), 0x2a, 0x05);
	/* The holder preempting itself with another type: the others learn it was released. */
	ok(prt_out(t, t->a, PR_OUT_REGISTER, 0, 0, 0x11, 0));
	ok(prt_out(t, t->b, PR_OUT_PREEMPT, PR_TYPE_EA, 0x22, 0x22, 0));
	assert_reservation(t, 0x22, PR_TYPE_EA);
	ua(prt_run(t, t->a, cdb, cdb_tur(cdb), NULL, 0), 0x2a, 0x04);
	prt_destroy(t);
}

static void test_preempt_and_abort(void **state)
{
	struct prt *t = prt_create(FAKE_MANUAL);
	uint8_t cdb[CDB_BUF];
	struct lf_result held;

	(void)state;
	ok(prt_out(t, t->a, PR_OUT_REGISTER, 0, 0, 0x11, 0));
	ok(prt_out(t, t->b, PR_OUT_REGISTER, 0, 0, 0x22, 0));
	ok(prt_out(t, t->b, PR_OUT_RESERVE, PR_TYPE_WE, 0x22, 0, 0));
	/* B has a READ inside the backend. */
	loop_fabric_start_on(t->lf, t->b, 0, cdb, cdb_rw(cdb, SBC_READ_10, 0, 1, 0), NULL, 0,
			     &held);
	assert_false(held.done);
	ok(prt_out(t, t->a, PR_OUT_PREEMPT_AND_ABORT, PR_TYPE_EA, 0x11, 0x22, 0));
	assert_reservation(t, 0x11, PR_TYPE_EA);
	/* The READ is aborted: answered TASK ABORTED (TAS 1) when the backend returns it. */
	fake_backend_complete_pending(t->fb);
	assert_task_aborted(&held);
	lf_result_clear(&held);
	ua(prt_run(t, t->b, cdb, cdb_tur(cdb), NULL, 0), 0x2a, 0x05);
	prt_destroy(t);
}

/* An iSCSI TransportID (SPC-5 §7.6.4.6): format 01b for a port name, 00b for a device. */
static size_t tid(uint8_t *p, const char *name, bool port)
{
	size_t n = strlen(name) + 1, addl = (n + 3) & ~(size_t)3;

	if (addl < 20)
		addl = 20;
	memset(p, 0, 4 + addl);
	p[0] = (uint8_t)((port ? 0x40 : 0x00) | 0x05);
	put_be16(&p[2], (uint16_t)addl);
	memcpy(&p[4], name, n);
	return 4 + addl;
}

static void test_register_and_move(void **state)
{
	struct prt *t = prt_create(FAKE_SYNC);
	uint8_t p[24 + 300] = { 0 };
	size_t n;

	(void)state;
	ok(prt_out(t, t->a, PR_OUT_REGISTER, 0, 0, 0x11, 0));
	put_be64(&p[0], 0x11);
	put_be64(&p[8], 0x44);
	put_be16(&p[18], 1);
	n = tid(&p[24], PORT_B, true);
	put_be32(&p[20], (uint32_t)n);
	/* No reservation to move: SPC-5 §5.13.8, INVALID FIELD IN CDB. An unregistered nexus or
	 * a wrong key is still a conflict. */
	bad_cdb(prt_out_raw(t, t->a, PR_OUT_REGISTER_AND_MOVE, 0, p, (uint32_t)(24 + n)), 1, 4);
	conflict(prt_out_raw(t, t->b, PR_OUT_REGISTER_AND_MOVE, 0, p, (uint32_t)(24 + n)));
	ok(prt_out(t, t->a, PR_OUT_RESERVE, PR_TYPE_EA, 0x11, 0, 0));
	/* A relative target port no nexus, registration or ALUA group has: refused, the
	 * reservation stays (it would otherwise move to a nexus that cannot exist). */
	put_be16(&p[18], 0x7777);
	bad_param(prt_out_raw(t, t->a, PR_OUT_REGISTER_AND_MOVE, 0, p, (uint32_t)(24 + n)), 18);
	assert_keys(t, 1, (uint64_t[]){ 0x11 });
	assert_reservation(t, 0x11, PR_TYPE_EA);
	put_be16(&p[18], 1);
	/* A short list, a bad TransportID, port 0, the nexus itself. */
	sense(prt_out_raw(t, t->a, PR_OUT_REGISTER_AND_MOVE, 0, p, (uint32_t)(24 + n - 4)),
	      SENSE_ILLEGAL_REQUEST, 0x1a, 0x00);
	p[24] = 0x44;
	bad_param(prt_out_raw(t, t->a, PR_OUT_REGISTER_AND_MOVE, 0, p, (uint32_t)(24 + n)), 24);
	p[24] = 0x45;
	put_be16(&p[18], 0);
	bad_param(prt_out_raw(t, t->a, PR_OUT_REGISTER_AND_MOVE, 0, p, (uint32_t)(24 + n)), 18);
	put_be16(&p[18], 1);
	n = tid(&p[24], PORT_A, true);
	bad_param(prt_out_raw(t, t->a, PR_OUT_REGISTER_AND_MOVE, 0, p, (uint32_t)(24 + n)), 24);
	/* Move to B, and unregister A (UNREG). */
	n = tid(&p[24], PORT_B, true);
	p[17] = 0x02;
	ok(prt_out_raw(t, t->a, PR_OUT_REGISTER_AND_MOVE, 0, p, (uint32_t)(24 + n)));
	assert_keys(t, 1, (uint64_t[]){ 0x44 });
	assert_reservation(t, 0x44, PR_TYPE_EA);
	ok(prt_write(t, t->b));
	conflict(prt_write(t, t->a));
	prt_destroy(t);
}

/*
 * SPC-5 §5.13.8: "If a PERSISTENT RESERVE OUT command with a REGISTER AND MOVE service action
 * specifies a TransportID that is the same as the initiator port of the I_T nexus on which the
 * command received", INVALID FIELD IN PARAMETER LIST, whatever target port it names: A's own
 * port (or its initiator device, format 00b) through port 2 is refused, the reservation stays.
 */
static void test_move_same_initiator_port(void **state)
{
	struct prt *t = prt_create(FAKE_SYNC);
	struct scsitgt__session *a_p2;
	uint8_t p[24 + 300] = { 0 };
	uint8_t cdb[CDB_BUF];
	size_t n;

	(void)state;
	/* A's initiator port through relative target port 2 too: another I_T nexus. */
	assert_int_equal(loop_fabric_add_session(t->lf, PORT_A, 2, &a_p2), 0);
	ua(prt_run(t, a_p2, cdb, cdb_tur(cdb), NULL, 0), 0x29, 0x00);
	ok(prt_out(t, t->a, PR_OUT_REGISTER, 0, 0, 0x11, 0));
	ok(prt_out(t, t->a, PR_OUT_RESERVE, PR_TYPE_EA, 0x11, 0, 0));
	put_be64(&p[0], 0x11);
	put_be64(&p[8], 0x22);
	put_be16(&p[18], 2);
	n = tid(&p[24], PORT_A, true);
	put_be32(&p[20], (uint32_t)n);
	bad_param(prt_out_raw(t, t->a, PR_OUT_REGISTER_AND_MOVE, 0, p, (uint32_t)(24 + n)), 24);
	n = tid(&p[24], "iqn.2024-01.org.example:initiator", false);
	put_be32(&p[20], (uint32_t)n);
	bad_param(prt_out_raw(t, t->a, PR_OUT_REGISTER_AND_MOVE, 0, p, (uint32_t)(24 + n)), 24);
	assert_keys(t, 1, (uint64_t[]){ 0x11 });
	assert_reservation(t, 0x11, PR_TYPE_EA);
	conflict(prt_read(t, a_p2));
	/* Another initiator port through port 2 is fine. */
	n = tid(&p[24], PORT_B, true);
	put_be32(&p[20], (uint32_t)n);
	ok(prt_out_raw(t, t->a, PR_OUT_REGISTER_AND_MOVE, 0, p, (uint32_t)(24 + n)));
	assert_reservation(t, 0x22, PR_TYPE_EA);
	prt_destroy(t);
}

/* SPC-5 §5.13.11.3: nothing here loses reservation information, so every REPLACE LOST
 * RESERVATION gets ILLEGAL REQUEST, INVALID RELEASE OF PERSISTENT RESERVATION, and nothing
 * changes: no reservation appears, none changes type. */
static void test_replace_lost(void **state)
{
	struct prt *t = prt_create(FAKE_SYNC);
	uint32_t gen;

	(void)state;
	/* The spec's form: RESERVATION KEY zero, the new key in SERVICE ACTION RESERVATION KEY. */
	sense(prt_out(t, t->a, PR_OUT_REPLACE_LOST, PR_TYPE_WE, 0, 0x11, 0), SENSE_ILLEGAL_REQUEST,
	      0x26, 0x04);
	assert_keys(t, 0, NULL);
	ok(prt_out(t, t->a, PR_OUT_REGISTER, 0, 0, 0x11, 0));
	ok(prt_out(t, t->b, PR_OUT_REGISTER, 0, 0, 0x22, 0));
	sense(prt_out(t, t->a, PR_OUT_REPLACE_LOST, PR_TYPE_WE, 0x11, 0, 0), SENSE_ILLEGAL_REQUEST,
	      0x26, 0x04);
	assert_reservation(t, 0, 0);
	/* The holder cannot change the type in place either. */
	ok(prt_out(t, t->a, PR_OUT_RESERVE, PR_TYPE_WE, 0x11, 0, 0));
	gen = generation(t);
	sense(prt_out(t, t->a, PR_OUT_REPLACE_LOST, PR_TYPE_EA, 0x11, 0, 0), SENSE_ILLEGAL_REQUEST,
	      0x26, 0x04);
	assert_reservation(t, 0x11, PR_TYPE_WE);
	assert_int_equal(generation(t), gen);
	ok(prt_read(t, t->b));
	/* RLR_C stays 0 in REPORT CAPABILITIES. */
	assert_int_equal(prt_in(t, t->obs, PR_IN_REPORT_CAPABILITIES, 8)->data[2] & 0x80, 0);
	prt_destroy(t);
}

static void test_spec_i_pt_all_tg_pt(void **state)
{
	struct prt *t = prt_create(FAKE_SYNC);
	struct scsitgt__session *b2, *b_other_port;
	uint8_t p[28 + 600] = { 0 };
	size_t n;

	(void)state;
	put_be64(&p[8], 0x55);
	p[20] = 0x08; /* SPEC_I_PT */
	n = tid(&p[28], PORT_B, true);
	n += tid(&p[28 + n], "iqn.2024-01.org.example:third", false);
	put_be32(&p[24], (uint32_t)n);
	/* TRANSPORTID PARAMETER DATA LENGTH beyond the list. */
	sense(prt_out_raw(t, t->a, PR_OUT_REGISTER, 0, p, (uint32_t)(28 + n - 4)),
	      SENSE_ILLEGAL_REQUEST, 0x1a, 0x00);
	/* SPEC_I_PT with REGISTER AND IGNORE EXISTING KEY is invalid. */
	bad_param(prt_out_raw(t, t->a, PR_OUT_REGISTER_AND_IGNORE, 0, p, (uint32_t)(28 + n)), 20);
	ok(prt_out_raw(t, t->a, PR_OUT_REGISTER, 0, p, (uint32_t)(28 + n)));
	assert_keys(t, 3, (uint64_t[]){ 0x55, 0x55, 0x55 });
	/* B was registered by A; the device-name TransportID covers any ISID. */
	ok(prt_out(t, t->b, PR_OUT_RESERVE, PR_TYPE_WE, 0x55, 0, 0));
	assert_int_equal(loop_fabric_add_session(
				 t->lf, "iqn.2024-01.org.example:third,i,0x400000000007", 1, &b2),
			 0);
	ua(prt_read(t, b2), 0x29, 0x00);
	ok(prt_out(t, b2, PR_OUT_RELEASE, PR_TYPE_WE, 0x55, 0, 0));
	assert_reservation(t, 0x55, PR_TYPE_WE);
	/* Registered already: a second SPEC_I_PT naming B refuses the whole command. */
	put_be64(&p[8], 0x66);
	bad_param(prt_out_raw(t, t->a2, PR_OUT_REGISTER, 0, p, (uint32_t)(28 + n)), 28);
	/* A malformed TransportID (not NUL-terminated). */
	n = tid(&p[28], PORT_A2, true);
	memset(&p[28 + 4], 'x', n - 4);
	put_be32(&p[24], (uint32_t)n);
	bad_param(prt_out_raw(t, t->a2, PR_OUT_REGISTER, 0, p, (uint32_t)(28 + n)), 28);
	assert_keys(t, 3, (uint64_t[]){ 0x55, 0x55, 0x55 });
	/* ALL_TG_PT: a registration through port 1 holds on port 2 as well; without, not. */
	assert_int_equal(loop_fabric_add_session(t->lf, PORT_A2, 2, &b_other_port), 0);
	ua(prt_read(t, b_other_port), 0x29, 0x00);
	ok(prt_out(t, t->a2, PR_OUT_REGISTER, 0, 0, 0x77, 0x04));
	ok(prt_out(t, b_other_port, PR_OUT_REGISTER, 0, 0x77, 0x78, 0));
	ok(prt_out(t, t->a, PR_OUT_REGISTER, 0, 0x55, 0x56, 0));
	{
		/* READ FULL STATUS: ALL_TG_PT set, the TransportID of the port. */
		struct lf_result *r = prt_in(t, t->a, PR_IN_READ_FULL_STATUS, 4096);
		const uint8_t *d = &r->data[8];
		size_t len = get_be32(&r->data[4]);
		bool seen_all = false, seen_holder = false;

		assert_good(r);
		for (size_t off = 0; off < len;) {
			uint32_t tl = get_be32(&d[off + 20]);

			if (get_be64(&d[off]) == 0x78) {
				assert_int_equal(d[off + 12] & 0x02, 0x02);
				assert_int_equal(d[off + 24], 0x45);
				assert_string_equal((const char *)&d[off + 28], PORT_A2);
				seen_all = true;
			}
			if (d[off + 12] & 0x01) {
				assert_int_equal(get_be64(&d[off]), 0x55);
				assert_int_equal(d[off + 13], PR_TYPE_WE);
				assert_int_equal(get_be16(&d[off + 18]), 1);
				seen_holder = true;
			}
			off += 24 + tl;
		}
		assert_true(seen_all);
		assert_true(seen_holder);
	}
	prt_destroy(t);
}

/*
 * SPC-5 §6.17.3 and Table 216: ALL_TG_PT is "valid only for the REGISTER service action and the
 * REGISTER AND IGNORE EXISTING KEY service action, and shall be ignored for all other service
 * actions"; SPEC_I_PT set for any but REGISTER is INVALID FIELD IN PARAMETER LIST.
 */
static void test_all_tg_pt_ignored(void **state)
{
	struct prt *t = prt_create(FAKE_SYNC);

	(void)state;
	ok(prt_out(t, t->a, PR_OUT_REGISTER, 0, 0, 0xa, 0));
	ok(prt_out(t, t->b, PR_OUT_REGISTER, 0, 0, 0xb, 0));
	ok(prt_out(t, t->a, PR_OUT_RESERVE, PR_TYPE_WE, 0xa, 0, 0x04));
	assert_reservation(t, 0xa, PR_TYPE_WE);
	ok(prt_out(t, t->a, PR_OUT_RELEASE, PR_TYPE_WE, 0xa, 0, 0x04));
	assert_reservation(t, 0, 0);
	ok(prt_out(t, t->a, PR_OUT_RESERVE, PR_TYPE_EA, 0xa, 0, 0));
	ok(prt_out(t, t->b, PR_OUT_PREEMPT, PR_TYPE_EA, 0xb, 0xa, 0x04));
	assert_reservation(t, 0xb, PR_TYPE_EA);
	bad_param(prt_out(t, t->b, PR_OUT_RELEASE, PR_TYPE_EA, 0xb, 0, 0x08), 20);
	assert_reservation(t, 0xb, PR_TYPE_EA);
	ok(prt_out(t, t->b, PR_OUT_CLEAR, 0, 0xb, 0, 0x04));
	assert_reservation(t, 0, 0);
	prt_destroy(t);
}

static void test_report_capabilities(void **state)
{
	struct prt *t = prt_create(FAKE_SYNC);
	struct lf_result *r;

	(void)state;
	r = prt_in(t, t->a, PR_IN_REPORT_CAPABILITIES, 8);
	assert_good(r);
	assert_int_equal(get_be16(r->data), 8);
	/* CRH, SIP_C, ATP_C; no PTPL_C without a store. */
	assert_int_equal(r->data[2], 0x1c);
	/* TMV, ALLOW COMMANDS 100b (test_pr_compat.c proves its rows). */
	assert_int_equal(r->data[3], 0xc0);
	assert_int_equal(get_be16(&r->data[4]), 0xea01);
	/* Truncation honours the allocation length. */
	ok(prt_out(t, t->a, PR_OUT_REGISTER, 0, 0, 0x11, 0));
	r = prt_in(t, t->a, PR_IN_READ_KEYS, 4);
	assert_good(r);
	assert_int_equal(r->data_len, 4);
	/* Service actions 04h..1Fh do not exist. */
	r = prt_in(t, t->a, 0x04, 64);
	assert_bad_cdb(r, 1, 4);
	prt_destroy(t);
}

static void test_spc2_reserve(void **state)
{
	struct prt *t = prt_create(FAKE_SYNC);
	uint8_t rsv[6] = { SPC_RESERVE_6 }, rel[6] = { SPC_RELEASE_6 };
	uint8_t rsv10[10] = { SPC_RESERVE_10 }, cdb[CDB_BUF];
	uint8_t lun[8];
	int resp = -1;

	(void)state;
	ok(prt_run(t, t->a, rsv, 6, NULL, 0));
	ok(prt_run(t, t->a, rsv, 6, NULL, 0));
	conflict(prt_run(t, t->b, rsv10, 10, NULL, 0));
	conflict(prt_read(t, t->b));
	conflict(prt_out(t, t->b, PR_OUT_REGISTER, 0, 0, 0x22, 0));
	/* INQUIRY passes; RELEASE from another nexus is a GOOD no-op. */
	ok(prt_run(t, t->b, cdb, cdb_inquiry(cdb, false, 0, 36), NULL, 0));
	ok(prt_run(t, t->b, rel, 6, NULL, 0));
	conflict(prt_write(t, t->b));
	ok(prt_write(t, t->a));
	ok(prt_run(t, t->a, rel, 6, NULL, 0));
	ok(prt_write(t, t->b));
	/* The reservation ends with its nexus... */
	ok(prt_run(t, t->b, rsv, 6, NULL, 0));
	scsitgt__session_destroy(t->b);
	t->b = NULL;
	ok(prt_write(t, t->a));
	/* ...and with a LUN reset. */
	ok(prt_run(t, t->a2, rsv, 6, NULL, 0));
	conflict(prt_write(t, t->a));
	scsitgt__lun_encode(0, lun);
	scsitgt__tmf_execute(t->a, SCSITGT__TMF_LUN_RESET, lun, 0, tmf_resp, &resp);
	assert_int_equal(resp, SCSITGT__TMF_COMPLETE);
	ua(prt_write(t, t->a), 0x29, 0x03);
	ok(prt_write(t, t->a));
	/* With registrations present RESERVE and RELEASE conflict (SPC-2 §5.5.1). */
	ok(prt_out(t, t->a, PR_OUT_REGISTER, 0, 0, 0x11, 0));
	conflict(prt_run(t, t->a, rsv, 6, NULL, 0));
	conflict(prt_run(t, t->a, rel, 6, NULL, 0));
	prt_destroy(t);
}

struct saved {
	unsigned int calls;
	uint8_t data[4096];
	size_t len;
};

static void save_cb(void *arg, struct scsitgt_lun *lun, const void *data, size_t len)
{
	struct saved *sv = arg;

	(void)lun;
	assert_true(len <= sizeof(sv->data));
	memcpy(sv->data, data, len);
	sv->len = len;
	sv->calls++;
}

static void test_aptpl_store(void **state)
{
	struct prt *t = prt_create(FAKE_SYNC);
	struct saved sv = { 0 };
	uint8_t bad[4096];
	size_t len;
	struct lf_result *r;

	(void)state;
	/* Without a store APTPL is refused and PTPL_C is clear. */
	bad_param(prt_out(t, t->a, PR_OUT_REGISTER, 0, 0, 0x11, 0x01), 20);
	assert_int_equal(scsitgt_lun_set_pr_store(t->lun, save_cb, &sv), 0);
	r = prt_in(t, t->a, PR_IN_REPORT_CAPABILITIES, 8);
	assert_int_equal(r->data[2] & 0x01, 0x01);
	ok(prt_out(t, t->a, PR_OUT_REGISTER, 0, 0, 0x11, 0x01));
	ok(prt_out(t, t->b, PR_OUT_REGISTER, 0, 0, 0x22, 0x01));
	ok(prt_out(t, t->a, PR_OUT_RESERVE, PR_TYPE_WE_RO, 0x11, 0, 0));
	assert_int_equal(sv.calls, 3);
	r = prt_in(t, t->a, PR_IN_REPORT_CAPABILITIES, 8);
	assert_int_equal(r->data[3] & 0x01, 0x01);
	assert_int_equal(scsitgt_lun_save_pr_state(t->lun, NULL, 0, &len), -ENOSPC);
	assert_int_equal(len, sv.len);
	assert_memory_equal(sv.data, "SGPR", 4);
	/* Wipe the state, then load it back. */
	ok(prt_out(t, t->a, PR_OUT_CLEAR, 0, 0x11, 0, 0));
	assert_keys(t, 0, NULL);
	memcpy(bad, sv.data, sv.len);
	assert_int_equal(scsitgt_lun_load_pr_state(t->lun, bad, sv.len - 1), -EINVAL);
	bad[5] = 9;
	assert_int_equal(scsitgt_lun_load_pr_state(t->lun, bad, sv.len), -ENOTSUP);
	bad[5] = 1;
	bad[12] = 2; /* not a reservation type */
	assert_int_equal(scsitgt_lun_load_pr_state(t->lun, bad, sv.len), -EINVAL);
	assert_keys(t, 0, NULL);
	/* CLEAR saved too: the last saved state has no registrations. */
	assert_int_equal(sv.calls, 4);
	memcpy(bad, sv.data, sv.len);
	len = sv.len;
	assert_int_equal(scsitgt_lun_load_pr_state(t->lun, sv.data, sv.len), 0);
	assert_keys(t, 0, NULL);
	prt_destroy(t);
	(void)len;
}

static void test_aptpl_file_restart(void **state)
{
	char path[] = "/tmp/scsitgt-pr-XXXXXX";
	int fd = mkstemp(path);
	struct prt *t;

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	unlink(path);
	/* First life: register with APTPL and reserve. */
	t = prt_create(FAKE_SYNC);
	assert_int_equal(scsitgt_lun_use_pr_file(t->lun, path), 0);
	ok(prt_out(t, t->a, PR_OUT_REGISTER, 0, 0, 0x11, 0x01));
	ok(prt_out(t, t->b, PR_OUT_REGISTER_AND_IGNORE, 0, 0, 0x22, 0x01));
	ok(prt_out(t, t->b, PR_OUT_RESERVE, PR_TYPE_EA, 0x22, 0, 0));
	prt_destroy(t);
	/* Second life: the same keys, generation and reservation, held by the same nexus. */
	t = prt_create(FAKE_SYNC);
	assert_int_equal(scsitgt_lun_use_pr_file(t->lun, path), 0);
	assert_keys(t, 2, (uint64_t[]){ 0x11, 0x22 });
	assert_int_equal(generation(t), 2);
	assert_reservation(t, 0x22, PR_TYPE_EA);
	ok(prt_write(t, t->b));
	conflict(prt_write(t, t->a));
	/* APTPL off: the next restart keeps nothing. */
	ok(prt_out(t, t->a, PR_OUT_REGISTER, 0, 0x11, 0x12, 0));
	prt_destroy(t);
	t = prt_create(FAKE_SYNC);
	assert_int_equal(scsitgt_lun_use_pr_file(t->lun, path), 0);
	assert_keys(t, 0, NULL);
	prt_destroy(t);
	/* A corrupt file is refused. */
	fd = open(path, O_WRONLY | O_TRUNC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "SGPR\0\1", 6), 6);
	close(fd);
	t = prt_create(FAKE_SYNC);
	assert_int_equal(scsitgt_lun_use_pr_file(t->lun, path), -EINVAL);
	prt_destroy(t);
	unlink(path);
}

/* A change the file store cannot save fails and is undone where APTPL is, or was, on (SPC-5
 * §5.13.5): GOOD would promise a registration that a restart loses. */
static void test_aptpl_file_unwritable(void **state)
{
	char dir[] = "/tmp/scsitgt-prdir-XXXXXX";
	char path[64];
	struct prt *t;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/lun0.pr", dir);
	t = prt_create(FAKE_SYNC);
	assert_int_equal(scsitgt_lun_use_pr_file(t->lun, path), 0);
	ok(prt_out(t, t->a, PR_OUT_REGISTER, 0, 0, 0x11, 0x01));
	ok(prt_out(t, t->a, PR_OUT_RESERVE, PR_TYPE_WE, 0x11, 0, 0));
	assert_int_equal(generation(t), 1);
	/* The directory goes: nothing can be saved any more. */
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rmdir(dir), 0);
	sense(prt_out(t, t->b, PR_OUT_REGISTER, 0, 0, 0x22, 0x01), SENSE_HARDWARE_ERROR, 0x44,
	      0x00);
	sense(prt_out(t, t->a, PR_OUT_PREEMPT, PR_TYPE_EA, 0x11, 0x11, 0), SENSE_HARDWARE_ERROR,
	      0x44, 0x00);
	/* APTPL off is a change a restart must see too (the file still says on). */
	sense(prt_out(t, t->a, PR_OUT_REGISTER, 0, 0x11, 0x12, 0), SENSE_HARDWARE_ERROR, 0x44,
	      0x00);
	/* Nothing of the three happened: same keys, generation, reservation. */
	assert_keys(t, 1, (uint64_t[]){ 0x11 });
	assert_int_equal(generation(t), 1);
	assert_reservation(t, 0x11, PR_TYPE_WE);
	ok(prt_write(t, t->a));
	conflict(prt_write(t, t->b));
	/* Once it can be saved again, the same command succeeds, and a restart finds it. */
	assert_int_equal(mkdir(dir, 0700), 0);
	ok(prt_out(t, t->b, PR_OUT_REGISTER, 0, 0, 0x22, 0x01));
	prt_destroy(t);
	t = prt_create(FAKE_SYNC);
	assert_int_equal(scsitgt_lun_use_pr_file(t->lun, path), 0);
	assert_keys(t, 2, (uint64_t[]){ 0x11, 0x22 });
	assert_reservation(t, 0x11, PR_TYPE_WE);
	prt_destroy(t);
	/* Without APTPL, before or after, nothing is promised: a failed save does not fail. */
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rmdir(dir), 0);
	t = prt_create(FAKE_SYNC);
	assert_int_equal(scsitgt_lun_use_pr_file(t->lun, path), 0);
	ok(prt_out(t, t->a, PR_OUT_REGISTER, 0, 0, 0x33, 0));
	assert_keys(t, 1, (uint64_t[]){ 0x33 });
	prt_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_register),
		cmocka_unit_test(test_registration_survives_reconnect),
		cmocka_unit_test(test_access_every_type),
		cmocka_unit_test(test_reserve),
		cmocka_unit_test(test_release),
		cmocka_unit_test(test_clear),
		cmocka_unit_test(test_preempt),
		cmocka_unit_test(test_preempt_and_abort),
		cmocka_unit_test(test_register_and_move),
		cmocka_unit_test(test_move_same_initiator_port),
		cmocka_unit_test(test_replace_lost),
		cmocka_unit_test(test_spec_i_pt_all_tg_pt),
		cmocka_unit_test(test_report_capabilities),
		cmocka_unit_test(test_all_tg_pt_ignored),
		cmocka_unit_test(test_spc2_reserve),
		cmocka_unit_test(test_aptpl_store),
		cmocka_unit_test(test_aptpl_file_restart),
		cmocka_unit_test(test_aptpl_file_unwritable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
