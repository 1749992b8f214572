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

/* INVALID FIELD IN PARAMETER LIST at the PROTOCOL IDENTIFIER of the TransportID at @field:
 * SKSV, BPV, bit pointer 3 (byte 0 bits 3..0, SPC-5 §7.6.4.1). */
#define bad_tid_proto(x, field)                                      \
	do {                                                         \
		struct lf_result *r_ = (x);                          \
		assert_sense(r_, SENSE_ILLEGAL_REQUEST, 0x26, 0x00); \
		assert_int_equal(r_->sense[15], 0x80 | 0x08 | 3);    \
		assert_int_equal(get_be16(&r_->sense[16]), (field)); \
	} while (0)

static void svc_shutdown(struct scsitgt__service *svc, scsitgt_done_cb cb, void *cb_arg)
{
	(void)svc;
	cb(cb_arg, 0);
}

/* A REGISTER with SPEC_I_PT (@flags adds ALL_TG_PT) naming the SRP port @port, by @s. */
static struct lf_result *spec_srp(struct prt *t, struct scsitgt__session *s, const char *port,
				  uint8_t flags, uint64_t key)
{
	uint8_t p[28 + 24] = { 0 };

	put_be64(&p[8], key);
	p[20] = 0x08 | flags;
	put_be32(&p[24], 24);
	srp_tid(&p[28], port);
	return prt_out_raw(t, s, PR_OUT_REGISTER, 0, p, sizeof(p));
}

/* REGISTER AND MOVE by A (key 0xa) to relative port @rel and the TransportID @tid. */
static struct lf_result *move_to(struct prt *t, uint16_t rel, const uint8_t *tid, size_t tl)
{
	uint8_t p[24 + 64] = { 0 };

	put_be64(&p[0], 0xa);
	put_be64(&p[8], 0xc);
	put_be16(&p[18], rel);
	put_be32(&p[20], (uint32_t)tl);
	memcpy(&p[24], tid, tl);
	return prt_out_raw(t, t->a, PR_OUT_REGISTER_AND_MOVE, 0, p, (uint32_t)(24 + tl));
}

/*
 * A TransportID of a protocol no port of the target has names no I_T nexus of it (SPC-5
 * §7.6.4.1, §6.17.3, §6.17.4): SPEC_I_PT, with or without ALL_TG_PT, and REGISTER AND MOVE
 * refuse it with INVALID FIELD IN PARAMETER LIST at its PROTOCOL IDENTIFIER and register
 * nothing. The target's ports: the fabrics' (engine services, here stand-ins), the connected
 * nexuses', and ALUA-listed ports no one here has, which are other engines' of unknown
 * protocol. REGISTER AND MOVE to a port of another protocol than the TransportID's is refused
 * at the RELATIVE TARGET PORT IDENTIFIER.
 */
static void test_tid_protocol(void **state)
{
	struct prt *t = prt_create(FAKE_SYNC);
	struct scsitgt_target *tgt = t->lf->tgt;
	struct scsitgt__service iscsi2 = { .shutdown = svc_shutdown,
					   .protocol_id = SCSITGT__PROTO_ISCSI,
					   .rel_port_id = 2 };
	struct scsitgt__service srp7 = { .shutdown = svc_shutdown,
					 .protocol_id = SCSITGT__PROTO_SRP,
					 .rel_port_id = SRP_REL,
					 .tgt = tgt };
	static const char gw2[] = "iqn.2024-01.org.example:gw2,i,0x23d000000007";
	struct scsitgt_alua_opts o;
	uint8_t tid[64] = { 0 };

	(void)state;
	/* An iSCSI-only target (nexuses on port 1): an SRP TransportID names no nexus. */
	bad_tid_proto(spec_srp(t, t->a2, SRP_S, 0x04, 0x2), 28);
	bad_tid_proto(spec_srp(t, t->a2, SRP_S, 0, 0x2), 28);
	/* nothing was registered, not even A2 itself */
	assert_int_equal(get_be32(&prt_in(t, t->obs, PR_IN_READ_KEYS, 64)->data[4]), 0);
	/* ALUA lists port 2 too, an iSCSI portal group no initiator is logged in through. */
	scsitgt_alua_opts_init(&o, sizeof(o));
	o.modes = SCSITGT_ALUA_IMPLICIT;
	assert_int_equal(scsitgt_alua_configure(tgt, &o), 0);
	assert_int_equal(scsitgt_alua_group_create(tgt, 10, SCSITGT_ALUA_ACTIVE_OPTIMIZED), 0);
	assert_int_equal(scsitgt_alua_group_add_port(tgt, 10, 1), 0);
	assert_int_equal(scsitgt_alua_group_add_port(tgt, 10, 2), 0);
	scsitgt__engine_add_service(tgt->engine, &iscsi2);
	ok(prt_out(t, t->a, PR_OUT_REGISTER, 0, 0, 0xa, 0));
	ok(prt_out(t, t->a, PR_OUT_RESERVE, PR_TYPE_EA, 0xa, 0, 0));
	bad_tid_proto(move_to(t, 2, tid, srp_tid(tid, SRP_S)), 24);
	/* With an SRP port on the target: SRP TransportIDs name nexuses, but not on port 2. */
	scsitgt__engine_add_service(tgt->engine, &srp7);
	bad_param(move_to(t, 2, tid, srp_tid(tid, SRP_S)), 18);
	assert_reservation(t, 0xa, PR_TYPE_EA);
	ok(spec_srp(t, t->a2, SRP_S, 0x04, 0x2));
	/* Another engine's port (listed, unknown here) may be of any protocol. */
	scsitgt__engine_remove_service(tgt->engine, &srp7);
	bad_tid_proto(spec_srp(t, t->b, SRP_T, 0x04, 0x3), 28);
	assert_int_equal(scsitgt_alua_group_add_port(tgt, 10, 9), 0);
	ok(spec_srp(t, t->b, SRP_T, 0x04, 0x3));
	/* An iSCSI nexus through port 2: the reservation moves there. */
	memset(tid, 0, sizeof(tid));
	tid[0] = 0x40 | SCSITGT__PROTO_ISCSI;
	put_be16(&tid[2], 48);
	memcpy(&tid[4], gw2, sizeof(gw2));
	ok(move_to(t, 2, tid, 52));
	assert_reservation(t, 0xc, PR_TYPE_EA);
	scsitgt__engine_remove_service(tgt->engine, &iscsi2);
	prt_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crh_exceptions), cmocka_unit_test(test_spc2_allowed),
		cmocka_unit_test(test_spc2_rtpg),      cmocka_unit_test(test_conflict_rows),
		cmocka_unit_test(test_allow_commands), cmocka_unit_test(test_srp_transport_ids),
		cmocka_unit_test(test_tid_protocol),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
