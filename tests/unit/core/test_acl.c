/* SPDX-License-Identifier: MIT */
/*
 * Access control (core/acl.c): initiator names, source address ranges (IPv4, IPv6,
 * IPv4-mapped), LUN masking seen through REPORT LUNS, INQUIRY, media commands, TMFs and unit
 * attentions, the per-LUN command limit and the per-session Data-In buffer limit (TASK SET FULL).
 */
#include <arpa/inet.h>
#include <errno.h>

#include "test_util.h"

#include "core/scsi_spec.h"

#define INAME_A "iqn.2024-01.org.example:a"
#define INAME_B "iqn.2024-01.org.example:b"
#define PORT_A INAME_A ",i,0x23d000000011"
#define PORT_B INAME_B ",i,0x23d000000012"

static void nop_cmd(struct scsitgt__cmd *cmd)
{
	(void)cmd;
}

static void nop_shutdown(struct scsitgt__session *sess)
{
	scsitgt__session_destroy(sess);
}

/* Sessions of the address tests run no command. */
static const struct scsitgt__fabric_ops addr_ops = {
	.name = "acl-test",
	.cmd_done = nop_cmd,
	.cmd_aborted = nop_cmd,
	.session_shutdown = nop_shutdown,
};

/* Try a nexus of @iname from @addr (numeric IPv4/IPv6, NULL: none); returns its rc. */
static int try_login(struct scsitgt_target *tgt, const char *iname, const char *addr)
{
	struct sockaddr_storage ss;
	struct scsitgt__nexus_info ni;
	struct scsitgt__session *s = NULL;
	char port[300];
	int rc;

	memset(&ss, 0, sizeof(ss));
	if (addr) {
		struct sockaddr_in *in = (struct sockaddr_in *)&ss;
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

		if (inet_pton(AF_INET, addr, &in->sin_addr) == 1) {
			in->sin_family = AF_INET;
		} else {
			assert_int_equal(inet_pton(AF_INET6, addr, &in6->sin6_addr), 1);
			in6->sin6_family = AF_INET6;
		}
	}
	snprintf(port, sizeof(port), "%s,i,0x23d000000099", iname);
	memset(&ni, 0, sizeof(ni));
	ni.protocol_id = SCSITGT__PROTO_ISCSI;
	ni.initiator_name = iname;
	ni.initiator_port = port;
	ni.target_port = "t,t,0x0001";
	ni.rel_port_id = 1;
	ni.tpg_id = 1;
	ni.initiator_sa = addr ? (const struct sockaddr *)&ss : NULL;
	rc = scsitgt__session_create(&s, tgt, &ni, &addr_ops, NULL);
	if (rc == 0)
		scsitgt__session_destroy(s);
	return rc;
}

static void test_opts_defaults(void **state)
{
	struct scsitgt_target_opts o;

	(void)state;
	memset(&o, 0xa5, sizeof(o));
	scsitgt_target_opts_init(&o, sizeof(o));
	assert_int_equal(o.size, sizeof(o));
	assert_int_equal(o.max_sessions, 256);
	assert_int_equal(o.max_lun_commands, 1024);
	assert_true(o.max_read_buffer_bytes == 256ull << 20);
}

static void test_cidr_parse(void **state)
{
	struct tctx *t = tctx_create(0, NULL);
	struct scsitgt_target *tgt = t->lf->tgt;
	static const char *const bad[] = {
		"",
		"/24",
		"10.0.0.0/",
		"10.0.0.0/33",
		"10.0.0.0/-1",
		"10.0.0.0/+8",
		"10.0.0/8",
		"::1/129",
		"10.0.0.0/ 8",
		"10.0.0.0/8x",
		"host.example",
		"1.2.3.4/0008",
		"fe80::1%lo",
		"[::1]",
		"10.0.0.1 ",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(scsitgt_target_add_address(tgt, bad[i]), -EINVAL);
	assert_int_equal(scsitgt_target_add_address(tgt, NULL), -EINVAL);
	assert_int_equal(scsitgt_target_add_address(NULL, "10.0.0.0/8"), -EINVAL);
	assert_int_equal(scsitgt_target_add_address(tgt, "10.1.2.3/8"), 0);
	/* Host bits are ignored: the same range. */
	assert_int_equal(scsitgt_target_add_address(tgt, "10.0.0.0/8"), -EEXIST);
	assert_int_equal(scsitgt_target_add_address(tgt, "2001:db8::/32"), 0);
	assert_int_equal(scsitgt_target_remove_address(tgt, "10.9.9.9/8"), 0);
	assert_int_equal(scsitgt_target_remove_address(tgt, "10.0.0.0/8"), -ENOENT);
	assert_int_equal(scsitgt_target_remove_address(tgt, "bogus"), -EINVAL);
	assert_int_equal(scsitgt_target_remove_address(tgt, "2001:db8::/32"), 0);
	assert_int_equal(scsitgt_target_add_initiator_address(tgt, "", "10.0.0.0/8"), -EINVAL);
	assert_int_equal(scsitgt_target_add_initiator_address(tgt, INAME_A, "x"), -EINVAL);
	assert_int_equal(scsitgt_target_remove_initiator_address(tgt, INAME_A, "10.0.0.0/8"),
			 -ENOENT);
	tctx_destroy(t);
}

static void test_addresses(void **state)
{
	struct tctx *t = tctx_create(0, NULL);
	struct scsitgt_target *tgt = t->lf->tgt;

	(void)state;
	/* No list: any address, and no address at all. */
	assert_int_equal(try_login(tgt, INAME_A, "192.0.2.7"), 0);
	assert_int_equal(try_login(tgt, INAME_A, NULL), 0);

	assert_int_equal(scsitgt_target_add_address(tgt, "192.0.2.0/25"), 0);
	assert_int_equal(try_login(tgt, INAME_A, "192.0.2.7"), 0);
	assert_int_equal(try_login(tgt, INAME_A, "192.0.2.127"), 0);
	assert_int_equal(try_login(tgt, INAME_A, "192.0.2.128"), -EACCES);
	assert_int_equal(try_login(tgt, INAME_A, "198.51.100.1"), -EACCES);
	/* A dual-stack socket reports IPv4 peers as IPv4-mapped IPv6. */
	assert_int_equal(try_login(tgt, INAME_A, "::ffff:192.0.2.9"), 0);
	assert_int_equal(try_login(tgt, INAME_A, "::ffff:192.0.2.200"), -EACCES);
	assert_int_equal(try_login(tgt, INAME_A, "2001:db8::1"), -EACCES);
	/* Fail closed: with a list, a nexus without an address is refused. */
	assert_int_equal(try_login(tgt, INAME_A, NULL), -EACCES);

	assert_int_equal(scsitgt_target_add_address(tgt, "2001:db8:1::/48"), 0);
	assert_int_equal(try_login(tgt, INAME_A, "2001:db8:1:ffff::5"), 0);
	assert_int_equal(try_login(tgt, INAME_A, "2001:db8:2::5"), -EACCES);
	assert_int_equal(scsitgt_target_add_address(tgt, "::1"), 0);
	assert_int_equal(try_login(tgt, INAME_A, "::1"), 0);
	assert_int_equal(try_login(tgt, INAME_A, "::2"), -EACCES);

	/* Per initiator: B only from one host, inside the target's ranges. */
	assert_int_equal(scsitgt_target_add_initiator_address(tgt, INAME_B, "192.0.2.10"), 0);
	assert_int_equal(scsitgt_target_add_initiator_address(tgt, INAME_B, "192.0.2.10/32"),
			 -EEXIST);
	assert_int_equal(try_login(tgt, INAME_B, "192.0.2.10"), 0);
	assert_int_equal(try_login(tgt, "IQN.2024-01.ORG.EXAMPLE:B", "192.0.2.11"), -EACCES);
	assert_int_equal(try_login(tgt, INAME_B, "192.0.2.11"), -EACCES);
	assert_int_equal(try_login(tgt, INAME_A, "192.0.2.11"), 0);
	/* An initiator range outside the target's ranges does not widen them. */
	assert_int_equal(scsitgt_target_add_initiator_address(tgt, INAME_B, "203.0.113.0/24"), 0);
	assert_int_equal(try_login(tgt, INAME_B, "203.0.113.5"), -EACCES);
	/* An address range does not put the name on the login list. */
	assert_int_equal(scsitgt_target_add_initiator(tgt, INAME_A), 0);
	assert_int_equal(try_login(tgt, INAME_B, "192.0.2.10"), -EACCES);
	assert_int_equal(try_login(tgt, INAME_A, "192.0.2.10"), 0);
	assert_int_equal(scsitgt_target_add_initiator(tgt, INAME_B), 0);
	assert_int_equal(try_login(tgt, INAME_B, "192.0.2.10"), 0);

	/* Removing the ranges opens the doors again. */
	assert_int_equal(scsitgt_target_remove_initiator_address(tgt, INAME_B, "192.0.2.10"), 0);
	assert_int_equal(scsitgt_target_remove_initiator_address(tgt, INAME_B, "203.0.113.0/24"),
			 0);
	assert_int_equal(scsitgt_target_remove_address(tgt, "192.0.2.0/25"), 0);
	assert_int_equal(scsitgt_target_remove_address(tgt, "2001:db8:1::/48"), 0);
	assert_int_equal(scsitgt_target_remove_address(tgt, "::1/128"), 0);
	assert_int_equal(try_login(tgt, INAME_B, "198.51.100.1"), 0);
	assert_int_equal(try_login(tgt, "iqn.2024-01.org.example:c", "198.51.100.1"), -EACCES);
	tctx_destroy(t);
}

/* REPORT LUNS of @s as a sorted list of ids; returns their number. */
static size_t report(struct tctx *t, struct scsitgt__session *s, uint64_t *ids, size_t cap)
{
	struct lf_result r = { 0 };
	uint8_t cdb[CDB_BUF];
	size_t n;

	loop_fabric_run_on(t->lf, s, 0, cdb, cdb_report_luns(cdb, 0x00, 4096), NULL, 0, &r);
	assert_good(&r);
	n = get_be32(r.data) / 8;
	assert_true(n <= cap);
	assert_int_equal(r.data_len, 8 + 8 * n);
	for (size_t i = 0; i < n; i++)
		ids[i] = scsitgt__lun_decode(&r.data[8 + 8 * i]);
	lf_result_clear(&r);
	return n;
}

static void run_on(struct tctx *t, struct scsitgt__session *s, uint64_t lun, size_t len,
		   struct lf_result *r)
{
	lf_result_clear(r);
	loop_fabric_run_on(t->lf, s, lun, t->cdb, len, NULL, 0, r);
}

/* Clear the POWER ON a fresh nexus reports on the first command to each of @ids. */
static void clear_power_on(struct tctx *t, struct scsitgt__session *s)
{
	struct lf_result r = { 0 };

	for (uint64_t id = 0; id < 4; id++) {
		run_on(t, s, id, cdb_tur(t->cdb), &r);
		run_on(t, s, id, cdb_tur(t->cdb), &r);
	}
	lf_result_clear(&r);
}

static struct tctx *masking_ctx(struct scsitgt__session **a, struct scsitgt__session **b)
{
	struct tctx *t = tctx_create(0, NULL);
	struct fake_backend_opts o;

	fake_backend_opts_init(&o);
	o.store = false;
	for (uint64_t id = 1; id < 4; id++)
		assert_int_equal(fake_backend_lun_create(NULL, NULL, t->lf->tgt, id, 0, &o), 0);
	assert_int_equal(loop_fabric_add_session(t->lf, PORT_A, 1, a), 0);
	assert_int_equal(loop_fabric_add_session(t->lf, PORT_B, 1, b), 0);
	clear_power_on(t, *a);
	clear_power_on(t, *b);
	return t;
}

static void test_masking(void **state)
{
	struct scsitgt__session *a, *b;
	struct tctx *t = masking_ctx(&a, &b);
	struct scsitgt_target *tgt = t->lf->tgt;
	struct lf_result r = { 0 };
	uint64_t ids[8];

	(void)state;
	/* No masking: everyone sees everything. */
	assert_int_equal(report(t, a, ids, 8), 4);
	assert_int_equal(report(t, b, ids, 8), 4);

	assert_int_equal(scsitgt_target_map_lun(tgt, INAME_A, 1), 0);
	assert_int_equal(scsitgt_target_map_lun(tgt, INAME_A, 1), -EEXIST);
	assert_int_equal(scsitgt_target_map_lun(tgt, INAME_A, 16384), -EINVAL);
	assert_int_equal(scsitgt_target_map_lun(tgt, "", 1), -EINVAL);
	assert_int_equal(scsitgt_target_map_lun(tgt, "iqn.2024-01.org.example:A", 3), 0);
	assert_int_equal(scsitgt_target_map_lun(tgt, INAME_B, 2), 0);

	/* A sees 1 and 3, B sees 2; the first command after the change reports it. */
	run_on(t, a, 1, cdb_tur(t->cdb), &r);
	assert_sense(&r, 0x6, 0x3f, 0x0e);
	assert_int_equal(report(t, a, ids, 8), 2);
	assert_true(ids[0] == 1 && ids[1] == 3);
	assert_int_equal(report(t, b, ids, 8), 1);
	assert_true(ids[0] == 2);

	/* A masked LUN is a missing LUN: LOGICAL UNIT NOT SUPPORTED, INQUIRY PQ 011b. */
	run_on(t, a, 2, cdb_tur(t->cdb), &r);
	assert_sense(&r, 0x5, 0x25, 0x00);
	run_on(t, a, 0, cdb_read_capacity10(t->cdb, 0, false), &r);
	assert_sense(&r, 0x5, 0x25, 0x00);
	run_on(t, a, 2, cdb_inquiry(t->cdb, false, 0, 96), &r);
	assert_good(&r);
	assert_int_equal(r.data[0], 0x7f);
	run_on(t, a, 2, cdb_inquiry(t->cdb, true, 0x80, 96), &r);
	assert_sense(&r, 0x5, 0x25, 0x00);
	run_on(t, a, 3, cdb_inquiry(t->cdb, false, 0, 96), &r);
	assert_good(&r);
	assert_int_equal(r.data[0], 0x00);
	run_on(t, b, 2, cdb_read_capacity10(t->cdb, 0, false), &r);
	assert_sense(&r, 0x6, 0x3f, 0x0e);
	run_on(t, b, 2, cdb_read_capacity10(t->cdb, 0, false), &r);
	assert_good(&r);
	run_on(t, b, 1, cdb_tur(t->cdb), &r);
	assert_sense(&r, 0x5, 0x25, 0x00);
	/* The main nexus has no mapping at all: it sees nothing. */
	run_on(t, t->lf->sess, 0, cdb_tur(t->cdb), &r);
	assert_sense(&r, 0x5, 0x25, 0x00);
	assert_int_equal(report(t, t->lf->sess, ids, 8), 0);

	/* Mapped to every initiator. */
	assert_int_equal(scsitgt_target_map_lun(tgt, NULL, 0), 0);
	assert_int_equal(report(t, t->lf->sess, ids, 8), 1);
	assert_int_equal(report(t, b, ids, 8), 2);
	assert_true(ids[0] == 0 && ids[1] == 2);
	assert_int_equal(scsitgt_target_unmap_lun(tgt, NULL, 0), 0);
	assert_int_equal(scsitgt_target_unmap_lun(tgt, NULL, 0), -ENOENT);

	/* Unmapping at run time: B loses LUN 2, A is told about nothing. */
	clear_power_on(t, a);
	assert_int_equal(scsitgt_target_unmap_lun(tgt, INAME_B, 2), 0);
	assert_int_equal(scsitgt_target_unmap_lun(tgt, INAME_B, 2), -ENOENT);
	assert_int_equal(scsitgt_target_unmap_lun(tgt, "iqn.2024-01.org.example:none", 2), -ENOENT);
	run_on(t, b, 2, cdb_tur(t->cdb), &r);
	assert_sense(&r, 0x5, 0x25, 0x00);
	assert_int_equal(report(t, b, ids, 8), 0);
	run_on(t, a, 1, cdb_tur(t->cdb), &r);
	assert_good(&r);

	/* Masking off: every LUN again, and every nexus hears of it. */
	assert_int_equal(scsitgt_target_set_lun_masking(tgt, false), 0);
	run_on(t, a, 1, cdb_tur(t->cdb), &r);
	assert_sense(&r, 0x6, 0x3f, 0x0e);
	assert_int_equal(report(t, b, ids, 8), 4);
	/* On again: the mappings were kept. */
	assert_int_equal(scsitgt_target_set_lun_masking(tgt, true), 0);
	assert_int_equal(report(t, a, ids, 8), 2);
	lf_result_clear(&r);
	tctx_destroy(t);
}

/* A session that logs in after the mapping finds its entry (and one made later, too). */
static void test_masking_late_session(void **state)
{
	struct tctx *t = tctx_create(0, NULL);
	struct scsitgt_target *tgt = t->lf->tgt;
	struct scsitgt__session *a, *b;
	uint64_t ids[4];

	(void)state;
	assert_int_equal(scsitgt_target_map_lun(tgt, INAME_A, 0), 0);
	assert_int_equal(loop_fabric_add_session(t->lf, PORT_A, 1, &a), 0);
	assert_int_equal(loop_fabric_add_session(t->lf, PORT_B, 1, &b), 0);
	assert_int_equal(report(t, a, ids, 4), 1);
	assert_int_equal(report(t, b, ids, 4), 0);
	assert_int_equal(scsitgt_target_map_lun(tgt, INAME_B, 0), 0);
	assert_int_equal(report(t, b, ids, 4), 1);
	/* The entry goes when its last mapping does; the session must not keep it. */
	assert_int_equal(scsitgt_target_unmap_lun(tgt, INAME_B, 0), 0);
	assert_int_equal(report(t, b, ids, 4), 0);
	assert_int_equal(scsitgt_target_map_lun(tgt, INAME_B, 0), 0);
	assert_int_equal(report(t, b, ids, 4), 1);
	tctx_destroy(t);
}

static void tmf_cb(void *arg, enum scsitgt__tmf_response resp)
{
	*(int *)arg = (int)resp;
}

static void test_masking_tmf(void **state)
{
	struct scsitgt__session *a, *b;
	struct tctx *t = masking_ctx(&a, &b);
	uint8_t lun[8];
	int resp = -1;

	(void)state;
	assert_int_equal(scsitgt_target_map_lun(t->lf->tgt, INAME_A, 1), 0);
	scsitgt__lun_encode(2, lun);
	scsitgt__tmf_execute(a, SCSITGT__TMF_LUN_RESET, lun, 0, tmf_cb, &resp);
	loop_fabric_run_until(t->lf, &(bool){ true });
	assert_int_equal(resp, SCSITGT__TMF_LUN_NOT_FOUND);
	resp = -1;
	scsitgt__tmf_execute(a, SCSITGT__TMF_QUERY_TASK_SET, lun, 0, tmf_cb, &resp);
	assert_int_equal(resp, SCSITGT__TMF_LUN_NOT_FOUND);
	resp = -1;
	scsitgt__lun_encode(1, lun);
	scsitgt__tmf_execute(a, SCSITGT__TMF_QUERY_TASK_SET, lun, 0, tmf_cb, &resp);
	assert_int_equal(resp, SCSITGT__TMF_COMPLETE);
	tctx_destroy(t);
}

/* TARGET RESET resets only the LUNs the requester sees: B's LUN keeps its state. */
static void test_masking_target_reset(void **state)
{
	struct scsitgt__session *a, *b;
	struct tctx *t = masking_ctx(&a, &b);
	struct lf_result r = { 0 };
	uint8_t lun[8];
	int resp = -1;

	(void)state;
	assert_int_equal(scsitgt_target_map_lun(t->lf->tgt, INAME_A, 1), 0);
	assert_int_equal(scsitgt_target_map_lun(t->lf->tgt, INAME_B, 2), 0);
	/* take the REPORTED LUNS DATA HAS CHANGED of the mapping first */
	run_on(t, a, 1, cdb_tur(t->cdb), &r);
	run_on(t, b, 2, cdb_tur(t->cdb), &r);
	run_on(t, a, 1, cdb_tur(t->cdb), &r);
	assert_good(&r);
	run_on(t, b, 2, cdb_tur(t->cdb), &r);
	assert_good(&r);

	scsitgt__lun_encode(0, lun);
	scsitgt__tmf_execute(a, SCSITGT__TMF_TARGET_WARM_RESET, lun, 0, tmf_cb, &resp);
	loop_fabric_run_until(t->lf, &(bool){ true });
	assert_int_equal(resp, SCSITGT__TMF_COMPLETE);
	/* A's LUN was reset (29h/03h), B's was not. */
	run_on(t, a, 1, cdb_tur(t->cdb), &r);
	assert_sense(&r, 0x6, 0x29, 0x03);
	run_on(t, b, 2, cdb_tur(t->cdb), &r);
	assert_good(&r);
	/* a cold reset from B: its LUN reports POWER ON, RESET (29h/00h), A's is untouched */
	resp = -1;
	scsitgt__tmf_execute(b, SCSITGT__TMF_TARGET_COLD_RESET, lun, 0, tmf_cb, &resp);
	loop_fabric_run_until(t->lf, &(bool){ true });
	assert_int_equal(resp, SCSITGT__TMF_COMPLETE);
	run_on(t, b, 2, cdb_tur(t->cdb), &r);
	assert_sense(&r, 0x6, 0x29, 0x00);
	run_on(t, a, 1, cdb_tur(t->cdb), &r);
	assert_good(&r);
	lf_result_clear(&r);
	tctx_destroy(t);
}

static void test_lun_command_limit(void **state)
{
	struct fake_backend_opts o;
	struct tctx *t;
	struct lf_result r[4];

	(void)state;
	fake_backend_opts_init(&o);
	o.mode = FAKE_MANUAL;
	t = tctx_create(0, &o);
	t->lf->tgt->max_lun_commands = 2;
	memset(r, 0, sizeof(r));
	for (int i = 0; i < 3; i++) {
		uint8_t cdb[CDB_BUF];

		size_t n = cdb_rw(cdb, SBC_READ_10, (uint32_t)i, 1, 0);

		loop_fabric_start(t->lf, 0, cdb, n, NULL, 0, &r[i]);
	}
	/* Two are held by the backend; the third is refused at once with TASK SET FULL. */
	assert_false(r[0].done);
	assert_false(r[1].done);
	assert_true(r[2].done);
	assert_int_equal(r[2].status, 0x28);
	assert_int_equal(r[2].sense_len, 0);
	fake_backend_complete_pending(t->fb);
	loop_fabric_wait(t->lf, &r[0]);
	loop_fabric_wait(t->lf, &r[1]);
	assert_good(&r[0]);
	assert_good(&r[1]);
	/* Room again. */
	loop_fabric_start(t->lf, 0, t->cdb, cdb_rw(t->cdb, SBC_READ_10, 0, 1, 0), NULL, 0, &r[3]);
	assert_false(r[3].done);
	fake_backend_complete_pending(t->fb);
	loop_fabric_wait(t->lf, &r[3]);
	assert_good(&r[3]);
	for (int i = 0; i < 4; i++)
		lf_result_clear(&r[i]);
	tctx_destroy(t);
}

static void test_read_buffer_limit(void **state)
{
	struct fake_backend_opts o;
	struct tctx *t;
	struct lf_result r[3];
	uint8_t cdb[CDB_BUF];

	(void)state;
	fake_backend_opts_init(&o);
	o.mode = FAKE_MANUAL;
	t = tctx_create(0, &o);
	t->lf->tgt->max_read_buffer_bytes = 1024;
	memset(r, 0, sizeof(r));
	/* Alone, a command may exceed the limit; while it holds its buffer, nothing more fits. */
	loop_fabric_start(t->lf, 0, cdb, cdb_rw(cdb, SBC_READ_10, 0, 4, 0), NULL, 0, &r[0]);
	assert_false(r[0].done);
	assert_int_equal(t->lf->sess->read_bytes, 2048);
	loop_fabric_start(t->lf, 0, cdb, cdb_rw(cdb, SBC_READ_10, 8, 1, 0), NULL, 0, &r[1]);
	assert_true(r[1].done);
	assert_int_equal(r[1].status, 0x28);
	/* Commands without Data-In are not affected. */
	loop_fabric_start(t->lf, 0, cdb, cdb_tur(cdb), NULL, 0, &r[2]);
	loop_fabric_wait(t->lf, &r[2]);
	assert_good(&r[2]);
	fake_backend_complete_pending(t->fb);
	loop_fabric_wait(t->lf, &r[0]);
	assert_good(&r[0]);
	assert_int_equal(t->lf->sess->read_bytes, 0);
	lf_result_clear(&r[1]);
	loop_fabric_start(t->lf, 0, cdb, cdb_rw(cdb, SBC_READ_10, 8, 1, 0), NULL, 0, &r[1]);
	assert_false(r[1].done);
	assert_int_equal(t->lf->sess->read_bytes, 512);
	fake_backend_complete_pending(t->fb);
	loop_fabric_wait(t->lf, &r[1]);
	assert_good(&r[1]);
	for (int i = 0; i < 3; i++)
		lf_result_clear(&r[i]);
	tctx_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_opts_defaults),
		cmocka_unit_test(test_cidr_parse),
		cmocka_unit_test(test_addresses),
		cmocka_unit_test(test_masking),
		cmocka_unit_test(test_masking_late_session),
		cmocka_unit_test(test_masking_tmf),
		cmocka_unit_test(test_masking_target_reset),
		cmocka_unit_test(test_lun_command_limit),
		cmocka_unit_test(test_read_buffer_limit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
