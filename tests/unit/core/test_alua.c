/* SPDX-License-Identifier: MIT */
/*
 * ALUA (SPC-5 §5.16): INQUIRY TPGS, VPD 83h target port group, REPORT / SET TARGET PORT GROUPS,
 * the commands each access state runs or refuses, every state transition and its unit
 * attention, and the host hook.
 *
 * Layout: nexuses A (no POWER ON) and B on relative target port 1, C on port 2; group 10 holds
 * port 1, group 20 port 2. Port 3 (nexus D) belongs to no group.
 */
#include <errno.h>

#include "core/alua.h"
#include "core/ua.h"
#include "test_pr_common.h"

#define PORT_C "iqn.2024-01.org.example:third,i,0x23d000000003"
#define PORT_D "iqn.2024-01.org.example:fourth,i,0x23d000000004"

struct at {
	struct prt *p;
	struct scsitgt__session *c, *d;
	/* Hook log. */
	int hook_calls;
	int hook_ret;
	uint16_t hook_group;
	int hook_old, hook_new;
	/* The group whose change the hook defers (through transitioning); 0: none. */
	uint16_t hook_defer;
};

static int hook(void *arg, struct scsitgt_target *tgt, uint16_t group_id,
		enum scsitgt_alua_state old_state, enum scsitgt_alua_state new_state)
{
	struct at *t = arg;

	assert_non_null(tgt);
	t->hook_calls++;
	t->hook_group = group_id;
	t->hook_old = (int)old_state;
	t->hook_new = (int)new_state;
	if (group_id != 0 && group_id == t->hook_defer) {
		assert_int_equal(scsitgt_alua_set_state(tgt, group_id, SCSITGT_ALUA_TRANSITIONING),
				 0);
		return SCSITGT_ALUA_REQUEST_DEFERRED;
	}
	return t->hook_ret;
}

static void configure(struct at *t, uint32_t modes, uint8_t itt)
{
	struct scsitgt_alua_opts o;

	scsitgt_alua_opts_init(&o, sizeof(o));
	o.modes = modes;
	o.implicit_transition_secs = itt;
	o.request_cb = hook;
	o.request_arg = t;
	assert_int_equal(scsitgt_alua_configure(t->p->lf->tgt, &o), 0);
}

static struct lf_result *run(struct at *t, struct scsitgt__session *s, const uint8_t *cdb,
			     size_t len, const void *dout, size_t dout_len)
{
	return prt_run(t->p, s, cdb, len, dout, dout_len);
}

/* Clear the POWER ON of the nexuses that report it. */
static void clear_ua(struct at *t, struct scsitgt__session *s)
{
	uint8_t cdb[CDB_BUF];

	while (run(t, s, cdb, cdb_tur(cdb), NULL, 0)->status == SAM_STAT_CHECK_CONDITION &&
	       (t->p->r.sense[2] & 0x0f) == SENSE_UNIT_ATTENTION)
		;
}

static struct at *at_create(bool groups)
{
	struct at *t = calloc(1, sizeof(*t));
	struct scsitgt_target *tgt;

	assert_non_null(t);
	t->p = prt_create(FAKE_SYNC);
	tgt = t->p->lf->tgt;
	assert_int_equal(loop_fabric_add_session(t->p->lf, PORT_C, 2, &t->c), 0);
	assert_int_equal(loop_fabric_add_session(t->p->lf, PORT_D, 3, &t->d), 0);
	clear_ua(t, t->c);
	clear_ua(t, t->d);
	if (groups) {
		assert_int_equal(scsitgt_alua_group_create(tgt, 10, SCSITGT_ALUA_ACTIVE_OPTIMIZED),
				 0);
		assert_int_equal(
			scsitgt_alua_group_create(tgt, 20, SCSITGT_ALUA_ACTIVE_NON_OPTIMIZED), 0);
		assert_int_equal(scsitgt_alua_group_add_port(tgt, 10, 1), 0);
		assert_int_equal(scsitgt_alua_group_add_port(tgt, 20, 2), 0);
	}
	return t;
}

static void at_destroy(struct at *t)
{
	prt_destroy(t->p);
	free(t);
}

static size_t cdb_rtpg(uint8_t *cdb, uint8_t fmt, uint32_t alloc)
{
	memset(cdb, 0, 12);
	cdb[0] = SPC_MAINTENANCE_IN;
	cdb[1] = (uint8_t)(fmt << 5 | SPC_MI_REPORT_TARGET_PORT_GROUPS);
	put_be32(&cdb[6], alloc);
	return 12;
}

static size_t cdb_stpg(uint8_t *cdb, uint32_t len)
{
	memset(cdb, 0, 12);
	cdb[0] = SPC_MAINTENANCE_OUT;
	cdb[1] = SPC_MO_SET_TARGET_PORT_GROUPS;
	put_be32(&cdb[6], len);
	return 12;
}

/* SET TARGET PORT GROUPS with one descriptor. */
static struct lf_result *stpg(struct at *t, struct scsitgt__session *s, uint8_t state,
			      uint16_t group)
{
	uint8_t cdb[12], p[8] = { 0 };

	p[4] = state;
	put_be16(&p[6], group);
	return run(t, s, cdb, cdb_stpg(cdb, sizeof(p)), p, sizeof(p));
}

/* SET TARGET PORT GROUPS with two descriptors. */
static struct lf_result *stpg2(struct at *t, struct scsitgt__session *s, uint8_t state1,
			       uint16_t group1, uint8_t state2, uint16_t group2)
{
	uint8_t cdb[12], p[12] = { 0 };

	p[4] = state1;
	put_be16(&p[6], group1);
	p[8] = state2;
	put_be16(&p[10], group2);
	return run(t, s, cdb, cdb_stpg(cdb, sizeof(p)), p, sizeof(p));
}

/* The state REPORT TARGET PORT GROUPS gives for @group, and its status code. */
static int rtpg_state(struct at *t, struct scsitgt__session *s, uint16_t group, uint8_t *status)
{
	uint8_t cdb[12];
	struct lf_result *r = run(t, s, cdb, cdb_rtpg(cdb, 0, 1024), NULL, 0);
	size_t n = 4;

	assert_int_equal(r->status, SAM_STAT_GOOD);
	while (n + 8 <= r->data_len) {
		const uint8_t *d = &r->data[n];

		if (get_be16(&d[2]) == group) {
			if (status)
				*status = d[5];
			return d[0] & 0x0f;
		}
		n += 8 + 4u * d[7];
	}
	return -1;
}

static uint8_t inquiry_byte(struct at *t, struct scsitgt__session *s, unsigned int i)
{
	uint8_t cdb[CDB_BUF];
	struct lf_result *r = run(t, s, cdb, cdb_inquiry(cdb, false, 0, 96), NULL, 0);

	assert_int_equal(r->status, SAM_STAT_GOOD);
	return r->data[i];
}

static uint8_t inquiry_byte5(struct at *t, struct scsitgt__session *s)
{
	return inquiry_byte(t, s, 5);
}

/* The target port group designator of VPD 83h, -1 when absent. */
static int vpd83_tpg(struct at *t, struct scsitgt__session *s)
{
	uint8_t cdb[CDB_BUF];
	struct lf_result *r = run(t, s, cdb, cdb_inquiry(cdb, true, 0x83, 1024), NULL, 0);
	size_t n = 4;

	assert_int_equal(r->status, SAM_STAT_GOOD);
	while (n + 4 <= r->data_len) {
		const uint8_t *d = &r->data[n];

		if ((d[1] & 0x0f) == 0x5) {
			/* PIV set, association target port (01b). */
			assert_int_equal(d[1] & 0xb0, 0x90);
			assert_int_equal(d[3], 4);
			return get_be16(&d[6]);
		}
		n += 4u + d[3];
	}
	return -1;
}

/* SUPPORT field of REPORT SUPPORTED OPERATION CODES for one command (SPC-5 §6.35.3). */
static uint8_t rsoc_support(struct at *t, uint8_t op, uint16_t sa)
{
	uint8_t cdb[12] = { 0xa3, 0x0c, 0x02 /* one command, with service action */, op };
	struct lf_result *r;

	put_be16(&cdb[4], sa);
	put_be32(&cdb[6], 64);
	r = run(t, t->c, cdb, sizeof(cdb), NULL, 0);
	assert_int_equal(r->status, SAM_STAT_GOOD);
	return r->data[1] & 0x07;
}

static void test_off_by_default(void **state)
{
	struct at *t = at_create(true);
	uint8_t cdb[12];

	(void)state;
	/* Groups alone do not turn ALUA on, nor MULTIP. */
	assert_int_equal(inquiry_byte5(t, t->c) & 0x30, 0);
	assert_int_equal(inquiry_byte(t, t->c, 6) & 0x10, 0);
	sense(run(t, t->c, cdb, cdb_rtpg(cdb, 0, 64), NULL, 0), SENSE_ILLEGAL_REQUEST, 0x20, 0);
	sense(stpg(t, t->c, 0, 20), SENSE_ILLEGAL_REQUEST, 0x20, 0);
	/* Nor do states refuse anything while it is off. */
	assert_int_equal(scsitgt_alua_set_state(t->p->lf->tgt, 20, SCSITGT_ALUA_STANDBY), 0);
	ok(prt_read(t->p, t->c));
	/* Issue 17, defect 12: without ALUA, VPD 83h names no target port group either (it
	 * named the portal group tag while TPGS said 00b and RTPG was refused), and REPORT
	 * SUPPORTED OPERATION CODES does not offer the target port group commands. */
	assert_int_equal(vpd83_tpg(t, t->c), -1);
	assert_int_equal(rsoc_support(t, 0xa3, 0x0a), 0x1);
	assert_int_equal(rsoc_support(t, 0xa4, 0x0a), 0x1);
	/* Implicit ALUA: REPORT TARGET PORT GROUPS is offered, SET TARGET PORT GROUPS not. */
	configure(t, SCSITGT_ALUA_IMPLICIT, 0);
	assert_int_equal(vpd83_tpg(t, t->c), 20);
	assert_int_equal(rsoc_support(t, 0xa3, 0x0a), 0x3);
	assert_int_equal(rsoc_support(t, 0xa4, 0x0a), 0x1);
	configure(t, SCSITGT_ALUA_IMPLICIT | SCSITGT_ALUA_EXPLICIT, 0);
	assert_int_equal(rsoc_support(t, 0xa4, 0x0a), 0x3);
	at_destroy(t);
}

static void test_tpgs_and_vpd83(void **state)
{
	struct at *t = at_create(true);

	(void)state;
	configure(t, SCSITGT_ALUA_IMPLICIT, 0);
	assert_int_equal(inquiry_byte5(t, t->c) & 0x30, 0x10);
	configure(t, SCSITGT_ALUA_EXPLICIT, 0);
	assert_int_equal(inquiry_byte5(t, t->c) & 0x30, 0x20);
	configure(t, SCSITGT_ALUA_IMPLICIT | SCSITGT_ALUA_EXPLICIT, 0);
	assert_int_equal(inquiry_byte5(t, t->c) & 0x30, 0x30);
	/* SPC-5 §6.7.2 MULTIP: the groups list two ports (reviewj J7); one port only: 0 */
	assert_int_equal(inquiry_byte(t, t->c, 6) & 0x10, 0x10);
	assert_int_equal(scsitgt_alua_group_remove_port(t->p->lf->tgt, 20, 2), 0);
	assert_int_equal(inquiry_byte(t, t->p->b, 6) & 0x10, 0);
	assert_int_equal(scsitgt_alua_group_add_port(t->p->lf->tgt, 20, 2), 0);
	/* The designator carries the ALUA group, not the portal group tag. */
	assert_int_equal(vpd83_tpg(t, t->p->b), 10);
	assert_int_equal(vpd83_tpg(t, t->c), 20);
	/* A port in no group reports none. */
	assert_int_equal(vpd83_tpg(t, t->d), -1);
	/* Moving the port moves the designator. */
	assert_int_equal(scsitgt_alua_group_remove_port(t->p->lf->tgt, 20, 2), 0);
	assert_int_equal(scsitgt_alua_group_add_port(t->p->lf->tgt, 10, 2), 0);
	assert_int_equal(vpd83_tpg(t, t->c), 10);
	at_destroy(t);
}

static void test_rtpg_formats(void **state)
{
	struct at *t = at_create(true);
	struct scsitgt_target *tgt;
	struct lf_result *r;
	uint8_t cdb[12];

	(void)state;
	tgt = t->p->lf->tgt;
	configure(t, SCSITGT_ALUA_IMPLICIT, 7);
	assert_int_equal(scsitgt_alua_group_add_port(tgt, 20, 5), 0);
	assert_int_equal(scsitgt_alua_set_preferred(tgt, 10, true), 0);

	/* Length only (SPC-5 §6.36.1): 4 + (8 + 4) + (8 + 2 * 4) bytes. */
	r = run(t, t->c, cdb, cdb_rtpg(cdb, 0, 1024), NULL, 0);
	assert_int_equal(r->status, SAM_STAT_GOOD);
	assert_int_equal(r->data_len, 32);
	assert_int_equal(get_be32(&r->data[0]), 28);
	/* Group 10: PREF, active/optimized, T/U/S/AN/AO supported, one port. */
	assert_int_equal(r->data[4], 0x80);
	assert_int_equal(r->data[5], 0x8f);
	assert_int_equal(get_be16(&r->data[6]), 10);
	assert_int_equal(r->data[9], 0x00);
	assert_int_equal(r->data[11], 1);
	assert_int_equal(get_be16(&r->data[14]), 1);
	/* Group 20: active/non-optimized with ports 2 and 5. */
	assert_int_equal(r->data[16], 0x01);
	assert_int_equal(get_be16(&r->data[18]), 20);
	assert_int_equal(r->data[23], 2);
	assert_int_equal(get_be16(&r->data[26]), 2);
	assert_int_equal(get_be16(&r->data[30]), 5);

	/* Extended header: FORMAT TYPE 001b and IMPLICIT TRANSITION TIME. */
	r = run(t, t->c, cdb, cdb_rtpg(cdb, 1, 1024), NULL, 0);
	assert_int_equal(r->status, SAM_STAT_GOOD);
	assert_int_equal(r->data_len, 36);
	assert_int_equal(get_be32(&r->data[0]), 32);
	assert_int_equal(r->data[4], 0x10);
	assert_int_equal(r->data[5], 7);
	assert_int_equal(get_be16(&r->data[10]), 10);

	/* A short allocation length truncates but RETURN DATA LENGTH stays whole. */
	r = run(t, t->c, cdb, cdb_rtpg(cdb, 0, 6), NULL, 0);
	assert_int_equal(r->status, SAM_STAT_GOOD);
	assert_int_equal(r->data_len, 6);
	assert_int_equal(get_be32(&r->data[0]), 28);
	r = run(t, t->c, cdb, cdb_rtpg(cdb, 0, 0), NULL, 0);
	assert_int_equal(r->status, SAM_STAT_GOOD);
	assert_int_equal(r->data_len, 0);

	/* Formats 010b..111b are reserved. */
	bad_cdb(run(t, t->c, cdb, cdb_rtpg(cdb, 2, 64), NULL, 0), 1, 7);
	/* A group without ports, and none at all. */
	assert_int_equal(scsitgt_alua_group_create(tgt, 30, SCSITGT_ALUA_STANDBY), 0);
	assert_int_equal(rtpg_state(t, t->c, 30, NULL), SCSITGT_ALUA_STANDBY);
	assert_int_equal(scsitgt_alua_group_destroy(tgt, 10), 0);
	assert_int_equal(scsitgt_alua_group_destroy(tgt, 20), 0);
	assert_int_equal(scsitgt_alua_group_destroy(tgt, 30), 0);
	r = run(t, t->c, cdb, cdb_rtpg(cdb, 0, 64), NULL, 0);
	assert_int_equal(r->status, SAM_STAT_GOOD);
	assert_int_equal(r->data_len, 4);
	assert_int_equal(get_be32(&r->data[0]), 0);
	at_destroy(t);
}

/* What nexus C (port 2, group 20) gets for a few commands in @st. */
static void check_state(struct at *t, enum scsitgt_alua_state st)
{
	uint8_t cdb[CDB_BUF + 16];
	uint8_t asc_q = st == SCSITGT_ALUA_STANDBY     ? 0x0b :
			st == SCSITGT_ALUA_UNAVAILABLE ? 0x0c :
							 0x0a;
	bool active = st == SCSITGT_ALUA_ACTIVE_OPTIMIZED ||
		      st == SCSITGT_ALUA_ACTIVE_NON_OPTIMIZED;
	struct lf_result *r;

	assert_int_equal(scsitgt_alua_set_state(t->p->lf->tgt, 20, st), 0);
	/* The change is announced to C first. */
	ua(run(t, t->c, cdb, cdb_tur(cdb), NULL, 0), 0x2a, 0x06);

	/* Always: INQUIRY, REPORT LUNS, REQUEST SENSE, REPORT TARGET PORT GROUPS. */
	ok(run(t, t->c, cdb, cdb_inquiry(cdb, false, 0, 96), NULL, 0));
	ok(run(t, t->c, cdb, cdb_report_luns(cdb, 0, 256), NULL, 0));
	ok(run(t, t->c, cdb, cdb_request_sense(cdb, false, 18), NULL, 0));
	assert_int_equal(rtpg_state(t, t->c, 20, NULL), (int)st);

	/* Media access only when active. */
	r = prt_read(t->p, t->c);
	if (active)
		assert_good(r);
	else
		assert_sense(r, SENSE_NOT_READY, 0x04, asc_q);
	r = prt_write(t->p, t->c);
	if (active)
		assert_good(r);
	else
		assert_sense(r, SENSE_NOT_READY, 0x04, asc_q);
	r = run(t, t->c, cdb, cdb_tur(cdb), NULL, 0);
	if (active)
		assert_good(r);
	else
		assert_sense(r, SENSE_NOT_READY, 0x04, asc_q);

	/* Standby still runs MODE SENSE, READ CAPACITY and PERSISTENT RESERVE IN / OUT. */
	r = run(t, t->c, cdb, cdb_mode_sense6(cdb, false, 0, 0x3f, 0, 255), NULL, 0);
	if (active || st == SCSITGT_ALUA_STANDBY)
		assert_good(r);
	else
		assert_sense(r, SENSE_NOT_READY, 0x04, asc_q);
	r = run(t, t->c, cdb, cdb_read_capacity10(cdb, 0, false), NULL, 0);
	if (active || st == SCSITGT_ALUA_STANDBY)
		assert_good(r);
	else
		assert_sense(r, SENSE_NOT_READY, 0x04, asc_q);
	r = prt_in(t->p, t->c, PR_IN_READ_KEYS, 64);
	if (active || st == SCSITGT_ALUA_STANDBY)
		assert_good(r);
	else
		assert_sense(r, SENSE_NOT_READY, 0x04, asc_q);
	r = prt_out(t->p, t->c, PR_OUT_REGISTER, 0, 0, 0xc0ffee, 0);
	if (active || st == SCSITGT_ALUA_STANDBY) {
		assert_good(r);
		ok(prt_out(t->p, t->c, PR_OUT_REGISTER, 0, 0xc0ffee, 0, 0));
	} else {
		assert_sense(r, SENSE_NOT_READY, 0x04, asc_q);
	}

	/* The other port's group is untouched. */
	ua(prt_read(t->p, t->p->b), 0x2a, 0x06);
	ok(prt_read(t->p, t->p->b));
	/* So is the port in no group. */
	ua(prt_read(t->p, t->d), 0x2a, 0x06);
	ok(prt_read(t->p, t->d));
}

static void test_each_state(void **state)
{
	static const enum scsitgt_alua_state states[] = {
		SCSITGT_ALUA_STANDBY,
		SCSITGT_ALUA_UNAVAILABLE,
		SCSITGT_ALUA_TRANSITIONING,
		SCSITGT_ALUA_ACTIVE_OPTIMIZED,
		SCSITGT_ALUA_ACTIVE_NON_OPTIMIZED,
	};
	struct at *t = at_create(true);

	(void)state;
	configure(t, SCSITGT_ALUA_IMPLICIT, 0);
	for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++)
		check_state(t, states[i]);
	at_destroy(t);
}

/* Every ordered pair of distinct states: the change is reported, with its status code. */
static void test_every_transition(void **state)
{
	static const enum scsitgt_alua_state states[] = {
		SCSITGT_ALUA_ACTIVE_OPTIMIZED, SCSITGT_ALUA_ACTIVE_NON_OPTIMIZED,
		SCSITGT_ALUA_STANDBY,	       SCSITGT_ALUA_UNAVAILABLE,
		SCSITGT_ALUA_TRANSITIONING,
	};
	struct at *t = at_create(true);
	struct scsitgt_target *tgt;
	enum scsitgt_alua_state got;
	uint8_t cdb[CDB_BUF], status;

	(void)state;
	tgt = t->p->lf->tgt;
	configure(t, SCSITGT_ALUA_IMPLICIT, 0);
	for (size_t i = 0; i < 5; i++) {
		for (size_t j = 0; j < 5; j++) {
			if (i == j)
				continue;
			assert_int_equal(scsitgt_alua_set_state(tgt, 20, states[i]), 0);
			clear_ua(t, t->p->b);
			assert_int_equal(scsitgt_alua_set_state(tgt, 20, states[j]), 0);
			assert_int_equal(scsitgt_alua_get_state(tgt, 20, &got), 0);
			assert_int_equal(got, states[j]);
			/* B, through the other group, hears of it once. */
			ua(run(t, t->p->b, cdb, cdb_tur(cdb), NULL, 0), 0x2a, 0x06);
			ok(run(t, t->p->b, cdb, cdb_tur(cdb), NULL, 0));
			assert_int_equal(rtpg_state(t, t->p->b, 20, &status), (int)states[j]);
			/* STATUS CODE 02h: altered by an implicit transition. */
			assert_int_equal(status, 0x02);
		}
	}
	/* Setting the current state again is not a change. */
	assert_int_equal(scsitgt_alua_get_state(tgt, 20, &got), 0);
	assert_int_equal(scsitgt_alua_set_state(tgt, 20, got), 0);
	ok(run(t, t->p->b, cdb, cdb_tur(cdb), NULL, 0));
	assert_int_equal(rtpg_state(t, t->p->b, 10, &status), SCSITGT_ALUA_ACTIVE_OPTIMIZED);
	assert_int_equal(status, 0x00);
	at_destroy(t);
}

static void test_stpg(void **state)
{
	struct at *t = at_create(true);
	uint8_t cdb[12], p[16], status;

	(void)state;
	configure(t, SCSITGT_ALUA_IMPLICIT | SCSITGT_ALUA_EXPLICIT, 0);
	/* B (group 10) puts group 20 in standby: C hears of it, B does not. */
	ok(stpg(t, t->p->b, SCSITGT_ALUA_STANDBY, 20));
	assert_int_equal(t->hook_calls, 1);
	assert_int_equal(t->hook_group, 20);
	assert_int_equal(t->hook_old, SCSITGT_ALUA_ACTIVE_NON_OPTIMIZED);
	assert_int_equal(t->hook_new, SCSITGT_ALUA_STANDBY);
	assert_int_equal(rtpg_state(t, t->p->b, 20, &status), SCSITGT_ALUA_STANDBY);
	/* STATUS CODE 01h: altered by SET TARGET PORT GROUPS. */
	assert_int_equal(status, 0x01);
	ok(prt_read(t->p, t->p->b));
	ua(prt_read(t->p, t->c), 0x2a, 0x06);
	sense(prt_read(t->p, t->c), SENSE_NOT_READY, 0x04, 0x0b);
	/* Through the standby port itself, back to active/optimized; two groups at once. */
	ok(stpg2(t, t->c, SCSITGT_ALUA_ACTIVE_OPTIMIZED, 20, SCSITGT_ALUA_ACTIVE_NON_OPTIMIZED,
		 10));
	assert_int_equal(rtpg_state(t, t->c, 20, NULL), SCSITGT_ALUA_ACTIVE_OPTIMIZED);
	assert_int_equal(rtpg_state(t, t->c, 10, NULL), SCSITGT_ALUA_ACTIVE_NON_OPTIMIZED);
	ua(prt_read(t->p, t->p->b), 0x2a, 0x06);
	ok(prt_read(t->p, t->c));
	/* Unavailable: SET TARGET PORT GROUPS still runs there. */
	ok(stpg(t, t->p->b, SCSITGT_ALUA_UNAVAILABLE, 20));
	ua(prt_read(t->p, t->c), 0x2a, 0x06);
	sense(prt_read(t->p, t->c), SENSE_NOT_READY, 0x04, 0x0c);
	ok(stpg(t, t->c, SCSITGT_ALUA_ACTIVE_OPTIMIZED, 20));
	/* Transitioning: it does not. */
	assert_int_equal(scsitgt_alua_set_state(t->p->lf->tgt, 20, SCSITGT_ALUA_TRANSITIONING), 0);
	ua(prt_read(t->p, t->c), 0x2a, 0x06);
	sense(stpg(t, t->c, SCSITGT_ALUA_ACTIVE_OPTIMIZED, 20), SENSE_NOT_READY, 0x04, 0x0a);
	ua(prt_read(t->p, t->p->b), 0x2a, 0x06);

	/* Bad lists change nothing. */
	t->hook_calls = 0;
	bad_param(stpg(t, t->p->b, SCSITGT_ALUA_TRANSITIONING, 20), 4);
	bad_param(stpg(t, t->p->b, 0x4, 20), 4);
	bad_param(stpg(t, t->p->b, 0x10, 20), 4);
	bad_param(stpg(t, t->p->b, SCSITGT_ALUA_STANDBY, 99), 6);
	memset(p, 0, sizeof(p));
	p[4] = SCSITGT_ALUA_STANDBY;
	put_be16(&p[6], 10);
	p[8] = SCSITGT_ALUA_STANDBY;
	put_be16(&p[10], 10);
	bad_param(run(t, t->p->b, cdb, cdb_stpg(cdb, 12), p, 12), 10);
	sense(run(t, t->p->b, cdb, cdb_stpg(cdb, 6), p, 6), SENSE_ILLEGAL_REQUEST, 0x1a, 0x00);
	sense(run(t, t->p->b, cdb, cdb_stpg(cdb, 2), p, 2), SENSE_ILLEGAL_REQUEST, 0x1a, 0x00);
	assert_int_equal(t->hook_calls, 0);
	assert_int_equal(rtpg_state(t, t->p->b, 10, NULL), SCSITGT_ALUA_ACTIVE_NON_OPTIMIZED);
	/* An empty list is a no-op. */
	ok(run(t, t->p->b, cdb, cdb_stpg(cdb, 0), NULL, 0));
	assert_int_equal(t->hook_calls, 0);
	at_destroy(t);
}

static void test_stpg_veto_and_modes(void **state)
{
	struct at *t = at_create(true);

	(void)state;
	configure(t, SCSITGT_ALUA_EXPLICIT, 0);
	t->hook_ret = -EPERM;
	/* SET TARGET PORT GROUPS COMMAND FAILED; nothing changes, nobody is told. */
	sense(stpg(t, t->p->b, SCSITGT_ALUA_STANDBY, 20), SENSE_HARDWARE_ERROR, 0x67, 0x0a);
	assert_int_equal(t->hook_calls, 1);
	assert_int_equal(rtpg_state(t, t->p->b, 20, NULL), SCSITGT_ALUA_ACTIVE_NON_OPTIMIZED);
	ok(prt_read(t->p, t->c));
	/* The cluster manager drives the change itself instead, through transitioning. */
	assert_int_equal(scsitgt_alua_set_state(t->p->lf->tgt, 20, SCSITGT_ALUA_TRANSITIONING), 0);
	ua(prt_read(t->p, t->c), 0x2a, 0x06);
	sense(prt_read(t->p, t->c), SENSE_NOT_READY, 0x04, 0x0a);
	assert_int_equal(scsitgt_alua_set_state(t->p->lf->tgt, 20, SCSITGT_ALUA_STANDBY), 0);
	ua(prt_read(t->p, t->c), 0x2a, 0x06);
	sense(prt_read(t->p, t->c), SENSE_NOT_READY, 0x04, 0x0b);
	/* Implicit only: SET TARGET PORT GROUPS is not supported. */
	configure(t, SCSITGT_ALUA_IMPLICIT, 0);
	t->hook_ret = 0;
	clear_ua(t, t->p->b);
	sense(stpg(t, t->p->b, SCSITGT_ALUA_ACTIVE_OPTIMIZED, 20), SENSE_ILLEGAL_REQUEST, 0x20,
	      0x00);
	assert_int_equal(t->hook_calls, 1);
	at_destroy(t);
}

/* The host accepts a request but drives the group itself, through transitioning. */
static void test_stpg_deferred(void **state)
{
	struct at *t = at_create(true);
	uint8_t status;

	(void)state;
	configure(t, SCSITGT_ALUA_IMPLICIT | SCSITGT_ALUA_EXPLICIT, 0);
	assert_int_equal(scsitgt_alua_set_state(t->p->lf->tgt, 20, SCSITGT_ALUA_STANDBY), 0);
	ua(prt_read(t->p, t->c), 0x2a, 0x06);
	clear_ua(t, t->p->b);
	t->hook_defer = 20;
	/* Through C (group 20): 20 to active/optimized (deferred), 10 to active/non-optimized. */
	ok(stpg2(t, t->c, SCSITGT_ALUA_ACTIVE_OPTIMIZED, 20, SCSITGT_ALUA_ACTIVE_NON_OPTIMIZED,
		 10));
	assert_int_equal(t->hook_calls, 2);
	/* The host's change inside the hook was an implicit one: C hears of it too. */
	ua(prt_read(t->p, t->c), 0x2a, 0x06);
	assert_int_equal(rtpg_state(t, t->c, 20, &status), SCSITGT_ALUA_TRANSITIONING);
	assert_int_equal(status, 0x02);
	assert_int_equal(rtpg_state(t, t->c, 10, &status), SCSITGT_ALUA_ACTIVE_NON_OPTIMIZED);
	assert_int_equal(status, 0x01);
	sense(prt_read(t->p, t->c), SENSE_NOT_READY, 0x04, 0x0a);
	/* The host finishes the transition: an implicit change everybody hears of. */
	assert_int_equal(scsitgt_alua_set_state(t->p->lf->tgt, 20, SCSITGT_ALUA_ACTIVE_OPTIMIZED),
			 0);
	ua(prt_read(t->p, t->c), 0x2a, 0x06);
	ok(prt_read(t->p, t->c));
	ua(prt_read(t->p, t->p->b), 0x2a, 0x06);
	clear_ua(t, t->p->b);
	ok(prt_read(t->p, t->p->b));
	at_destroy(t);
}

static void test_api_errors(void **state)
{
	struct at *t = at_create(false);
	struct scsitgt_target *tgt;
	struct scsitgt_alua_opts o;
	enum scsitgt_alua_state st;

	(void)state;
	tgt = t->p->lf->tgt;
	scsitgt_alua_opts_init(&o, sizeof(o));
	assert_int_equal(o.modes, 0);
	assert_null(o.request_cb);
	o.modes = 4;
	assert_int_equal(scsitgt_alua_configure(tgt, &o), -EINVAL);
	assert_int_equal(scsitgt_alua_configure(NULL, &o), -EINVAL);
	assert_int_equal(scsitgt_alua_group_create(tgt, 0, SCSITGT_ALUA_STANDBY), -EINVAL);
	assert_int_equal(scsitgt_alua_group_create(tgt, 1, (enum scsitgt_alua_state)0x4), -EINVAL);
	assert_int_equal(scsitgt_alua_group_destroy(tgt, 1), -ENOENT);
	assert_int_equal(scsitgt_alua_set_state(tgt, 1, SCSITGT_ALUA_STANDBY), -ENOENT);
	assert_int_equal(scsitgt_alua_get_state(tgt, 1, &st), -ENOENT);
	assert_int_equal(scsitgt_alua_group_add_port(tgt, 1, 1), -ENOENT);
	for (unsigned int i = 1; i <= SCSITGT_ALUA_MAX_GROUPS; i++)
		assert_int_equal(
			scsitgt_alua_group_create(tgt, (uint16_t)i, SCSITGT_ALUA_ACTIVE_OPTIMIZED),
			0);
	assert_int_equal(scsitgt_alua_group_create(tgt, 999, SCSITGT_ALUA_STANDBY), -ENOSPC);
	assert_int_equal(scsitgt_alua_group_create(tgt, 1, SCSITGT_ALUA_STANDBY), -EEXIST);
	assert_int_equal(scsitgt_alua_group_add_port(tgt, 1, 0), -EINVAL);
	assert_int_equal(scsitgt_alua_group_add_port(tgt, 1, 7), 0);
	assert_int_equal(scsitgt_alua_group_add_port(tgt, 2, 7), -EEXIST);
	assert_int_equal(scsitgt_alua_group_remove_port(tgt, 2, 7), -ENOENT);
	for (unsigned int i = 1; i < SCSITGT_ALUA_MAX_PORTS; i++)
		assert_int_equal(scsitgt_alua_group_add_port(tgt, 1, (uint16_t)(100 + i)), 0);
	assert_int_equal(scsitgt_alua_group_add_port(tgt, 1, 9), -ENOSPC);
	assert_int_equal(scsitgt_alua_group_remove_port(tgt, 1, 7), 0);
	assert_int_equal(scsitgt_alua_group_add_port(tgt, 2, 7), 0);
	assert_int_equal(scsitgt_alua_set_preferred(tgt, 77, true), -ENOENT);
	assert_int_equal(scsitgt_alua_set_state(tgt, 2, (enum scsitgt_alua_state)0xe), -EINVAL);
	assert_int_equal(scsitgt_alua_group_destroy(tgt, 2), 0);
	assert_int_equal(scsitgt_alua_get_state(tgt, 2, &st), -ENOENT);
	assert_int_equal(scsitgt_alua_get_state(tgt, 3, &st), 0);
	assert_int_equal(st, SCSITGT_ALUA_ACTIVE_OPTIMIZED);
	at_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_off_by_default),	    cmocka_unit_test(test_tpgs_and_vpd83),
		cmocka_unit_test(test_rtpg_formats),	    cmocka_unit_test(test_each_state),
		cmocka_unit_test(test_every_transition),    cmocka_unit_test(test_stpg),
		cmocka_unit_test(test_stpg_veto_and_modes), cmocka_unit_test(test_stpg_deferred),
		cmocka_unit_test(test_api_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
