/* SPDX-License-Identifier: MIT */
/*
 * Reservations against the commands of other standards' tables: the SPC-5 §5.13.3 exceptions
 * to SPC-2 RESERVE and RELEASE (CRH), what an SPC-2 reservation lets other nexuses do (SPC-2
 * Annex B), the conflict table rows decided by a CDB field (SPC-5 §5.13.1 Table 63, SBC-4
 * §4.17.1 Table 13), and SRP TransportIDs (SPC-5 §7.6.4.5).
 */
#include "libscsitgt/alua.h"
#include "test_pr_common.h"

static const uint8_t rsv6[6] = { SPC_RESERVE_6 }, rel6[6] = { SPC_RELEASE_6 };
static const uint8_t rsv10[10] = { SPC_RESERVE_10 }, rel10[10] = { SPC_RELEASE_10 };

static struct lf_result *tur(struct prt *t, struct scsitgt__session *s)
{
	uint8_t cdb[CDB_BUF];

	return prt_run(t, s, cdb, cdb_tur(cdb), NULL, 0);
}

/*
 * CRH=1 (REPORT CAPABILITIES): the persistent reservation holder, and a registrant under a
 * registrants-only or all-registrants reservation, get GOOD for RESERVE and RELEASE, and no
 * reservation is established or released; everyone else gets the SPC-2 answer (conflict).
 */
static void test_crh_exceptions(void **state)
{
	struct prt *t = prt_create(FAKE_SYNC);

	(void)state;
	assert_int_equal(prt_in(t, t->obs, PR_IN_REPORT_CAPABILITIES, 8)->data[2] & 0x10, 0x10);
	ok(prt_out(t, t->a, PR_OUT_REGISTER, 0, 0, 0xa, 0));
	ok(prt_out(t, t->b, PR_OUT_REGISTER, 0, 0, 0xb, 0));
	/* Registered, no reservation: SPC-2 §5.5.1, conflict. */
	conflict(prt_run(t, t->a, rsv6, 6, NULL, 0));
	ok(prt_out(t, t->a, PR_OUT_RESERVE, PR_TYPE_WE, 0xa, 0, 0));
	/* a) the holder: GOOD for all four. */
	ok(prt_run(t, t->a, rsv6, 6, NULL, 0));
	ok(prt_run(t, t->a, rsv10, 10, NULL, 0));
	ok(prt_run(t, t->a, rel6, 6, NULL, 0));
	ok(prt_run(t, t->a, rel10, 10, NULL, 0));
	/* ...the persistent reservation is not released... */
	assert_reservation(t, 0xa, PR_TYPE_WE);
	conflict(prt_write(t, t->b));
	ok(prt_run(t, t->a, rsv6, 6, NULL, 0));
	/* ...and no SPC-2 reservation was established: B still reads under Write Exclusive. */
	ok(prt_read(t, t->b));
	/* A registrant that does not hold a Write Exclusive reservation, and an unregistered
	 * nexus: the SPC-2 rules. */
	conflict(prt_run(t, t->b, rsv6, 6, NULL, 0));
	conflict(prt_run(t, t->b, rel6, 6, NULL, 0));
	conflict(prt_run(t, t->a2, rsv10, 10, NULL, 0));
	conflict(prt_run(t, t->a2, rel10, 10, NULL, 0));
	/* b) registrants only: every registrant; the unregistered still conflict. */
	ok(prt_out(t, t->a, PR_OUT_RELEASE, PR_TYPE_WE, 0xa, 0, 0));
	ok(prt_out(t, t->a, PR_OUT_RESERVE, PR_TYPE_EA_RO, 0xa, 0, 0));
	ok(prt_run(t, t->b, rsv6, 6, NULL, 0));
	conflict(prt_run(t, t->a2, rsv6, 6, NULL, 0));
	/* B's RESERVE established nothing: A2 would conflict on TEST UNIT READY under it. */
	ok(tur(t, t->a2));
	ok(prt_run(t, t->b, rel10, 10, NULL, 0));
	assert_reservation(t, 0xa, PR_TYPE_EA_RO);
	/* b) all registrants. */
	ok(prt_out(t, t->a, PR_OUT_RELEASE, PR_TYPE_EA_RO, 0xa, 0, 0));
	ua(tur(t, t->b), 0x2a, 0x04);
	ok(prt_out(t, t->b, PR_OUT_RESERVE, PR_TYPE_WE_AR, 0xb, 0, 0));
	ok(prt_run(t, t->a, rsv10, 10, NULL, 0));
	ok(prt_run(t, t->a, rel6, 6, NULL, 0));
	conflict(prt_run(t, t->obs, rsv6, 6, NULL, 0));
	assert_reservation(t, 0, PR_TYPE_WE_AR);
	ok(prt_read(t, t->obs));
	prt_destroy(t);
}

/* SPC-2 Annex B, "reserved by another initiator": what B may send under A's RESERVE. */
static void test_spc2_allowed(void **state)
{
	struct prt *t = prt_create(FAKE_SYNC);
	uint8_t cdb[CDB_BUF];

	(void)state;
	ok(prt_run(t, t->a, rsv6, 6, NULL, 0));
	ok(prt_run(t, t->b, cdb, cdb_read_capacity10(cdb, 0, false), NULL, 0));
	ok(prt_run(t, t->b, cdb, cdb_read_capacity16(cdb, 32), NULL, 0));
	ok(prt_run(t, t->b, cdb, cdb_log_sense(cdb, 0, 1, 0, 0, 0, 64), NULL, 0));
	ok(prt_run(t, t->b, cdb, cdb_prevent_allow(cdb, 0), NULL, 0));
	ok(prt_run(t, t->b, cdb, cdb_start_stop(cdb, 0, false, true), NULL, 0));
	/* The rest conflicts: TEST UNIT READY, media access, stopping the unit, preventing
	 * removal, a power condition. */
	conflict(tur(t, t->b));
	conflict(prt_read(t, t->b));
	conflict(prt_run(t, t->b, cdb, cdb_prevent_allow(cdb, 1), NULL, 0));
	conflict(prt_run(t, t->b, cdb, cdb_start_stop(cdb, 0, false, false), NULL, 0));
	conflict(prt_run(t, t->b, cdb, cdb_start_stop(cdb, 1, false, true), NULL, 0));
	conflict(prt_in(t, t->b, PR_IN_READ_KEYS, 64));
	ok(prt_run(t, t->a, rel6, 6, NULL, 0));
	ok(tur(t, t->b));
	prt_destroy(t);
}

/*
 * Under another nexus's SPC-2 reservation, REPORT TARGET PORT GROUPS passes: SPC-5 §5.13.1
 * Table 63 allows it under every persistent reservation type, Exclusive Access included, and
 * Linux's ALUA device handler fails the path whose RTPG fails (scsi_dh_alua alua_rtpg():
 * RESERVATION CONFLICT carries no sense, SCSI_DH_IO), so the losing node of a RESERVE race
 * would lose every path. REPORT SUPPORTED OPERATION CODES and REPORT SUPPORTED TASK
 * MANAGEMENT FUNCTIONS conflict, as under Exclusive Access; REPORT TIMESTAMP is not
 * implemented (INVALID FIELD IN CDB at the service action, never a conflict).
 */
static void test_spc2_rtpg(void **state)
{
	struct prt *t = prt_create(FAKE_SYNC);
	struct scsitgt_target *tgt = t->lf->tgt;
	struct scsitgt_alua_opts o;
	static const uint8_t rtpg[12] = { SPC_MAINTENANCE_IN,
					  SPC_MI_REPORT_TARGET_PORT_GROUPS,
					  0,
					  0,
					  0,
					  0,
					  0,
					  0,
					  0x01,
					  0,
					  0,
					  0 };
	static const uint8_t rsoc[12] = {
		SPC_MAINTENANCE_IN, SPC_MI_REPORT_SUPPORTED_OPCODES, 0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0
	};
	static const uint8_t rstmf[12] = {
		SPC_MAINTENANCE_IN, SPC_MI_REPORT_SUPPORTED_TMFS, 0, 0, 0, 0, 0, 0, 0, 0x10, 0, 0
	};
	static const uint8_t rts[12] = {
		SPC_MAINTENANCE_IN, SPC_MI_REPORT_TIMESTAMP, 0, 0, 0, 0, 0, 0, 0, 0x10, 0, 0
	};
	struct lf_result *r;

	(void)state;
	scsitgt_alua_opts_init(&o, sizeof(o));
	o.modes = SCSITGT_ALUA_IMPLICIT;
	assert_int_equal(scsitgt_alua_configure(tgt, &o), 0);
	assert_int_equal(scsitgt_alua_group_create(tgt, 10, SCSITGT_ALUA_ACTIVE_OPTIMIZED), 0);
	assert_int_equal(scsitgt_alua_group_add_port(tgt, 10, 1), 0);
	ok(prt_run(t, t->a, rsv6, 6, NULL, 0));
	r = prt_run(t, t->b, rtpg, 12, NULL, 0);
	assert_good(r);
	/* one descriptor: group 10, active/optimized, relative port 1 */
	assert_int_equal(get_be32(r->data), 12);
	assert_int_equal(r->data[4] & 0x0f, 0);
	assert_int_equal(get_be16(&r->data[6]), 10);
	assert_int_equal(get_be16(&r->data[14]), 1);
	conflict(prt_run(t, t->b, rsoc, 12, NULL, 0));
	conflict(prt_run(t, t->b, rstmf, 12, NULL, 0));
	bad_cdb(prt_run(t, t->b, rts, 12, NULL, 0), 1, 4);
	/* and under Exclusive Access, as Table 63 says */
	ok(prt_run(t, t->a, rel6, 6, NULL, 0));
	ok(prt_out(t, t->a, PR_OUT_REGISTER, 0, 0, 0xa, 0));
	ok(prt_out(t, t->a, PR_OUT_RESERVE, PR_TYPE_EA, 0xa, 0, 0));
	ok(prt_run(t, t->b, rtpg, 12, NULL, 0));
	conflict(prt_run(t, t->b, rsoc, 12, NULL, 0));
	prt_destroy(t);
}

/*
 * Under a persistent reservation of another nexus: START STOP UNIT with START 1 and POWER
 * CONDITION 0, PREVENT ALLOW MEDIUM REMOVAL with PREVENT 0 are allowed in every column; the
 * other forms conflict as writes. RECEIVE DIAGNOSTIC RESULTS is allowed through the Write
 * Exclusive types and conflicts under Exclusive Access.
 */
static void test_conflict_rows(void **state)
{
	struct prt *t = prt_create(FAKE_SYNC);
	static const uint8_t types[] = { PR_TYPE_WE, PR_TYPE_EA };
	uint8_t cdb[CDB_BUF];

	(void)state;
	ok(prt_out(t, t->a, PR_OUT_REGISTER, 0, 0, 0xa, 0));
	for (size_t i = 0; i < sizeof(types); i++) {
		uint8_t rd[6] = { SPC_RECEIVE_DIAGNOSTIC_RESULTS, 0, 0, 0, 0x40, 0 };

		ok(prt_out(t, t->a, PR_OUT_RESERVE, types[i], 0xa, 0, 0));
		ok(prt_run(t, t->b, cdb, cdb_start_stop(cdb, 0, false, true), NULL, 0));
		ok(prt_run(t, t->b, cdb, cdb_prevent_allow(cdb, 0), NULL, 0));
		conflict(prt_run(t, t->b, cdb, cdb_start_stop(cdb, 0, false, false), NULL, 0));
		conflict(prt_run(t, t->b, cdb, cdb_start_stop(cdb, 2, false, true), NULL, 0));
		conflict(prt_run(t, t->b, cdb, cdb_prevent_allow(cdb, 1), NULL, 0));
		if (types[i] == PR_TYPE_WE)
			ok(prt_run(t, t->b, rd, 6, NULL, 0));
		else
			conflict(prt_run(t, t->b, rd, 6, NULL, 0));
		ok(prt_out(t, t->a, PR_OUT_RELEASE, types[i], 0xa, 0, 0));
	}
	prt_destroy(t);
}

/*
 * REPORT CAPABILITIES says ALLOW COMMANDS 100b (SPC-5 §6.16.4 Table 223): each command of that
 * code's list, sent by a nexus that is neither the holder nor registered, under Write Exclusive
 * and Exclusive Access. TEST UNIT READY and RECEIVE COPY RESULTS (OPERATING PARAMETERS) pass
 * both; MODE SENSE, READ ATTRIBUTE, READ BUFFER, RECEIVE DIAGNOSTIC RESULTS, REPORT SUPPORTED
 * OPERATION CODES, REPORT SUPPORTED TASK MANAGEMENT FUNCTIONS and READ DEFECT DATA pass Write
 * Exclusive and conflict under Exclusive Access (SPC-5 §5.13.1 Table 63). READ ATTRIBUTE and
 * READ BUFFER are not implemented: INVALID COMMAND OPERATION CODE, never a conflict.
 */
static void test_allow_commands(void **state)
{
	struct prt *t = prt_create(FAKE_SYNC);
	static const uint8_t types[] = { PR_TYPE_WE, PR_TYPE_EA };
	static const uint8_t tur6[6] = { SPC_TEST_UNIT_READY };
	static const uint8_t rcr_op[16] = {
		SPC_RECEIVE_COPY_RESULTS, 0x03, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
	};
	static const uint8_t ms6[6] = { 0x1a, 0x08, 0x3f, 0, 0xff, 0 };
	static const uint8_t ms10[10] = { 0x5a, 0x08, 0x3f, 0, 0, 0, 0, 0x01, 0x00, 0 };
	static const uint8_t rdr[6] = { SPC_RECEIVE_DIAGNOSTIC_RESULTS, 0, 0, 0, 0x40, 0 };
	static const uint8_t rsoc[12] = {
		SPC_MAINTENANCE_IN, SPC_MI_REPORT_SUPPORTED_OPCODES, 0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0
	};
	static const uint8_t rstmf[12] = {
		SPC_MAINTENANCE_IN, SPC_MI_REPORT_SUPPORTED_TMFS, 0, 0, 0, 0, 0, 0, 0, 0x10, 0, 0
	};
	static const uint8_t rdd10[10] = {
		SBC_READ_DEFECT_DATA_10, 0, 0x05, 0, 0, 0, 0, 0, 0x40, 0
	};
	static const uint8_t rdd12[12] = {
		SBC_READ_DEFECT_DATA_12, 0x05, 0, 0, 0, 0, 0, 0, 0, 0x40, 0, 0
	};
	static const uint8_t rattr[16] = { 0x8c, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x40, 0, 0 };
	static const uint8_t rbuf[10] = { SPC_READ_BUFFER, 0x02, 0, 0, 0, 0, 0, 0, 0x40, 0 };
	const struct {
		const uint8_t *cdb;
		size_t len;
	} we_only[] = {
		{ ms6, 6 },    { ms10, 10 },  { rdr, 6 },    { rsoc, 12 },
		{ rstmf, 12 }, { rdd10, 10 }, { rdd12, 12 },
	};

	(void)state;
	/* ALLOW COMMANDS, byte 3 bits 6..4. */
	assert_int_equal(prt_in(t, t->obs, PR_IN_REPORT_CAPABILITIES, 8)->data[3] & 0x70, 0x40);
	ok(prt_out(t, t->a, PR_OUT_REGISTER, 0, 0, 0xa, 0));
	for (size_t i = 0; i < sizeof(types); i++) {
		bool we = types[i] == PR_TYPE_WE;

		ok(prt_out(t, t->a, PR_OUT_RESERVE, types[i], 0xa, 0, 0));
		ok(prt_run(t, t->b, tur6, 6, NULL, 0));
		ok(prt_run(t, t->b, rcr_op, 16, NULL, 0));
		for (size_t j = 0; j < sizeof(we_only) / sizeof(we_only[0]); j++) {
			if (we)
				ok(prt_run(t, t->b, we_only[j].cdb, we_only[j].len, NULL, 0));
			else
				conflict(prt_run(t, t->b, we_only[j].cdb, we_only[j].len, NULL, 0));
		}
		sense(prt_run(t, t->b, rattr, 16, NULL, 0), SENSE_ILLEGAL_REQUEST, 0x20, 0x00);
		sense(prt_run(t, t->b, rbuf, 10, NULL, 0), SENSE_ILLEGAL_REQUEST, 0x20, 0x00);
		/* The reservation is real: B's write conflicts under both. */
		conflict(prt_write(t, t->b));
		ok(prt_out(t, t->a, PR_OUT_RELEASE, types[i], 0xa, 0, 0));
	}
	prt_destroy(t);
}

/* SRP nexuses: port names "0x" and 32 hex digits (transport/srp/srp_nexus.c), their own
 * relative target port. */
#define SRP_S "0xfe800000000000000002c90300a1b2c3"
#define SRP_T "0xfe800000000000000002c90300d4e5f6"
#define SRP_U "0xFE800000000000000002C90300ABCDEF"
#define SRP_REL 7

static struct scsitgt__session *srp_session(struct prt *t, const char *port)
{
	struct scsitgt__session *s;

	assert_int_equal(loop_fabric_add_session(t->lf, port, SRP_REL, &s), 0);
	s->protocol_id = SCSITGT__PROTO_SRP;
	ua(tur(t, s), 0x29, 0x00);
	return s;
}

/* An SRP TransportID (SPC-5 §7.6.4.5 Table 510) for port name @port. */
static size_t srp_tid(uint8_t *p, const char *port)
{
	memset(p, 0, 24);
	p[0] = SCSITGT__PROTO_SRP;
	assert_true(scsitgt__pr_srp_port_id(port, &p[8]));
	return 24;
}

/* The full status descriptor of key @key: its TransportID. */
static const uint8_t *full_status_tid(struct prt *t, uint64_t key, uint32_t *tl)
{
	struct lf_result *r = prt_in(t, t->obs, PR_IN_READ_FULL_STATUS, 4096);
	size_t len = get_be32(&r->data[4]);
	const uint8_t *d = &r->data[8];

	assert_good(r);
	for (size_t off = 0; off < len; off += 24 + get_be32(&d[off + 20])) {
		if (get_be64(&d[off]) == key) {
			*tl = get_be32(&d[off + 20]);
			return &d[off + 24];
		}
	}
	fail();
	return NULL;
}

static void test_srp_transport_ids(void **state)
{
	struct prt *t = prt_create(FAKE_SYNC);
	struct scsitgt__session *s = srp_session(t, SRP_S), *tt;
	uint8_t p[28 + 64] = { 0 }, want[24];
	const uint8_t *d;
	uint32_t tl;

	(void)state;
	/* READ FULL STATUS: the SRP nexus's TransportID is the 24-byte binary form. */
	ok(prt_out(t, s, PR_OUT_REGISTER, 0, 0, 0x5, 0));
	d = full_status_tid(t, 0x5, &tl);
	assert_int_equal(tl, 24);
	srp_tid(want, SRP_S);
	assert_memory_equal(d, want, 24);
	/* SPEC_I_PT with an SRP TransportID registers that SRP port through this port. */
	ok(prt_out(t, s, PR_OUT_REGISTER, 0, 0x5, 0, 0));
	put_be64(&p[8], 0x6);
	p[20] = 0x08;
	srp_tid(&p[28], SRP_T);
	put_be32(&p[24], 24);
	ok(prt_out_raw(t, s, PR_OUT_REGISTER, 0, p, 28 + 24));
	ok(prt_out(t, s, PR_OUT_REGISTER, 0, 0x6, 0x9, 0));
	tt = srp_session(t, SRP_T);
	ok(prt_out(t, tt, PR_OUT_RESERVE, PR_TYPE_EA, 0x6, 0, 0));
	d = full_status_tid(t, 0x6, &tl);
	assert_int_equal(tl, 24);
	srp_tid(want, SRP_T);
	assert_memory_equal(d, want, 24);
	/* Through an iSCSI port without ALL_TG_PT: no SRP nexus can be there. */
	put_be64(&p[8], 0x7);
	bad_param(prt_out_raw(t, t->a, PR_OUT_REGISTER, 0, p, 28 + 24), 28);
	/* With ALL_TG_PT it names the SRP port through every target port: accepted, unless a
	 * reserved byte is set (then it is no SRP TransportID). */
	p[20] = 0x08 | 0x04;
	srp_tid(&p[28], SRP_U);
	p[28 + 1] = 1;
	bad_param(prt_out_raw(t, t->a, PR_OUT_REGISTER, 0, p, 28 + 24), 28);
	p[28 + 1] = 0;
	ok(prt_out_raw(t, t->a, PR_OUT_REGISTER, 0, p, 28 + 24));
	/* U, connecting through the SRP port, finds itself registered with the key. */
	ok(prt_out(t, srp_session(t, SRP_U), PR_OUT_REGISTER, 0, 0x7, 0x17, 0));
	/* REGISTER AND MOVE to the SRP port S through the SRP port: S holds. A move to an SRP
	 * TransportID through an iSCSI port is refused (no SRP nexus can be on it). */
	memset(p, 0, sizeof(p));
	put_be64(&p[0], 0x6);
	put_be64(&p[8], 0x8);
	put_be16(&p[18], 1);
	put_be32(&p[20], 24);
	srp_tid(&p[24], SRP_S);
	bad_param(prt_out_raw(t, tt, PR_OUT_REGISTER_AND_MOVE, 0, p, 24 + 24), 18);
	put_be16(&p[18], SRP_REL);
	ok(prt_out_raw(t, tt, PR_OUT_REGISTER_AND_MOVE, 0, p, 24 + 24));
	assert_reservation(t, 0x8, PR_TYPE_EA);
	ok(prt_read(t, s));
	conflict(prt_read(t, tt));
	prt_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crh_exceptions), cmocka_unit_test(test_spc2_allowed),
		cmocka_unit_test(test_spc2_rtpg),      cmocka_unit_test(test_conflict_rows),
		cmocka_unit_test(test_allow_commands), cmocka_unit_test(test_srp_transport_ids),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
