/* SPDX-License-Identifier: MIT */
/* minitarget's command line (examples/minitarget_opts.c): argv to struct minitarget_opts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "minitarget_opts.h"

#define NARGS(...) (sizeof((char *[]){ __VA_ARGS__ }) / sizeof(char *))
/* Parse "minitarget ARGS..." into @o, with the errors in the text buffer g_err. */
#define PARSE(o, ...)                                          \
	parse_args((o), (int)NARGS("minitarget", __VA_ARGS__), \
		   (char *[]){ "minitarget", __VA_ARGS__ })

static char g_err[8192];

static enum minitarget_parse_result parse_args(struct minitarget_opts *o, int argc, char **argv)
{
	FILE *err = tmpfile();
	enum minitarget_parse_result r;
	size_t n;

	assert_non_null(err);
	r = minitarget_opts_parse(o, argc, argv, err);
	rewind(err);
	n = fread(g_err, 1, sizeof(g_err) - 1, err);
	g_err[n] = '\0';
	fclose(err);
	return r;
}

static struct minitarget_opts g_o;

static void test_defaults(void **state)
{
	char *argv[] = { "minitarget" };
	struct minitarget_opts *o = &g_o;

	(void)state;
	assert_int_equal(parse_args(o, 1, argv), MINITARGET_PARSE_RUN);
	assert_string_equal(o->iqn, "iqn.2026-11.org.libscsitgt:minitarget");
	assert_int_equal(o->nportals, 1);
	assert_string_equal(o->portals[0], "127.0.0.1:3260");
	assert_int_equal(o->nluns, 1);
	assert_int_equal(o->luns[0].id, 0);
	assert_int_equal(o->luns[0].kind, MINITARGET_LUN_RAM);
	assert_int_equal(o->luns[0].size, 1ull << 30);
	assert_int_equal(o->luns[0].bs, 512);
	assert_int_equal(o->srp_guid, 0x0002c90300abcdefull);
	assert_false(o->srp_aer);
	assert_int_equal(o->tpgt, 1);
	assert_int_equal(o->alua_state, -1);
	assert_int_equal(o->alua_group, 0);
	assert_int_equal(o->login_timeout, -1);
	assert_int_equal(o->nop_interval, -1);
	assert_int_equal(o->queue_depth, -1);
	assert_int_equal(o->max_sessions, -1);
	assert_int_equal(o->drain_timeout, -1);
	assert_int_equal(o->workers, 0);
	assert_int_equal(o->conn_workers, -1);
	assert_int_equal(o->chap_algs, 0);
	assert_null(o->chap);
	assert_null(o->pr_dir);
	assert_false(o->verbose);
	assert_false(o->header_digest);
	assert_string_equal(g_err, "");
}

static void test_help(void **state)
{
	(void)state;
	assert_int_equal(PARSE(&g_o, "-h"), MINITARGET_PARSE_HELP);
	assert_int_equal(PARSE(&g_o, "-v", "--help"), MINITARGET_PARSE_HELP);
	/* An error before --help wins, as the options are read in order. */
	assert_int_equal(PARSE(&g_o, "--bogus", "--help"), MINITARGET_PARSE_ERROR);
}

static void test_every_option(void **state)
{
	struct minitarget_opts *o = &g_o;

	(void)state;
	assert_int_equal(
		PARSE(o, "--portal", "0.0.0.0:3261", "--portal", "[::1]:3262", "--iqn", "iqn.x:y",
		      "--lun", "3:null:1G,thin", "--lun", "4:file:/tmp/f,ro,bs=4096", "--chap",
		      "u:s", "--mutual-chap", "mu:ms", "--chap-algorithms", "sha256,md5",
		      "--initiator", "iqn.a", "--initiator", "iqn.b", "--header-digest",
		      "--data-digest", "-v", "--pr-dir", "/tmp/pr", "--login-timeout", "5000",
		      "--alua", "0x2", "--nop-interval", "0", "--iser-portal", "10.0.0.1",
		      "--workers", "auto", "--conn-workers", "0", "--srp-portal", "10.0.0.2:5555",
		      "--srp-guid", "0xab", "--acl-address", "10.0.0.0/8", "--initiator-address",
		      "iqn.a=10.1.0.0/16", "--map", "iqn.a:3", "--map", "*:4", "--max-sessions",
		      "7", "--max-lun-commands", "8", "--max-initiator-conns", "9", "--queue-depth",
		      "10", "--discovery-chap", "du:ds", "--discovery-mutual-chap", "dm:dms",
		      "--drain-timeout", "11", "--tmf-timeout", "12", "--logout-timeout", "13",
		      "--tpgt", "14", "--alua-group", "15", "--alua-peer", "16", "--alua-peer",
		      "17:18", "--alua-preferred", "--gw-holddown", "0", "--gw-probe", "19",
		      "--srp-aer"),
		MINITARGET_PARSE_RUN);
	assert_string_equal(g_err, "");
	assert_int_equal(o->nportals, 2);
	assert_string_equal(o->portals[1], "[::1]:3262");
	assert_string_equal(o->iqn, "iqn.x:y");
	assert_int_equal(o->nluns, 2);
	assert_int_equal(o->luns[0].id, 3);
	assert_int_equal(o->luns[0].kind, MINITARGET_LUN_NULL);
	assert_int_equal(o->luns[0].flags, SCSITGT_LUN_THIN);
	assert_int_equal(o->luns[1].kind, MINITARGET_LUN_FILE);
	assert_string_equal(o->luns[1].path, "/tmp/f");
	assert_int_equal(o->luns[1].bs, 4096);
	assert_true(o->luns[1].bs_given);
	assert_string_equal(o->chap, "u:s");
	assert_string_equal(o->mutual_chap, "mu:ms");
	assert_int_equal(o->chap_algs, SCSITGT_ISCSI_CHAP_SHA256 | SCSITGT_ISCSI_CHAP_MD5);
	assert_int_equal(o->ninit, 2);
	assert_string_equal(o->initiators[1], "iqn.b");
	assert_true(o->header_digest);
	assert_true(o->data_digest);
	assert_true(o->verbose);
	assert_string_equal(o->pr_dir, "/tmp/pr");
	assert_int_equal(o->login_timeout, 5000);
	assert_int_equal(o->alua_state, 2);
	assert_int_equal(o->nop_interval, 0);
	assert_int_equal(o->niser, 1);
	assert_string_equal(o->iser_portals[0], "10.0.0.1");
	assert_int_equal(o->workers, SCSITGT_ENGINE_WORKERS_AUTO);
	assert_int_equal(o->conn_workers, 0);
	assert_int_equal(o->nsrp, 1);
	assert_int_equal(o->srp_guid, 0xab);
	assert_true(o->srp_aer);
	assert_int_equal(o->nacl_addrs, 1);
	assert_int_equal(o->ninit_addrs, 1);
	assert_string_equal(o->init_addrs[0], "iqn.a=10.1.0.0/16");
	assert_int_equal(o->nmaps, 2);
	assert_string_equal(o->maps[1], "*:4");
	assert_int_equal(o->max_sessions, 7);
	assert_int_equal(o->max_lun_cmds, 8);
	assert_int_equal(o->max_init_conns, 9);
	assert_int_equal(o->queue_depth, 10);
	assert_string_equal(o->discovery_chap, "du:ds");
	assert_string_equal(o->discovery_mutual_chap, "dm:dms");
	assert_int_equal(o->drain_timeout, 11);
	assert_int_equal(o->tmf_timeout, 12);
	assert_int_equal(o->logout_timeout, 13);
	assert_int_equal(o->tpgt, 14);
	assert_int_equal(o->alua_group, 15);
	assert_int_equal(o->ngw_peers, 2);
	assert_int_equal(o->gw_peers[0].group_id, 16);
	assert_int_equal(o->gw_peers[0].rel_port_id, 16);
	assert_int_equal(o->gw_peers[1].group_id, 17);
	assert_int_equal(o->gw_peers[1].rel_port_id, 18);
	assert_true(o->gw_preferred);
	assert_int_equal(o->gw_holddown, 0);
	assert_int_equal(o->gw_probe, 19);
}

/* Each bad value is named in the error, and nothing else is printed. */
static void test_bad_values(void **state)
{
	static const char *const bad[][2] = {
		{ "--lun", "0:ram:0" },
		{ "--srp-guid", "0" },
		{ "--srp-guid", "xyz" },
		{ "--chap-algorithms", "md4" },
		{ "--drain-timeout", "0" },
		{ "--tmf-timeout", "3600001" },
		{ "--logout-timeout", "1s" },
		{ "--login-timeout", "-1" },
		{ "--nop-interval", "3600001" },
		{ "--alua", "16" },
		{ "--alua", "1x" },
		{ "--tpgt", "0" },
		{ "--tpgt", "65536" },
		{ "--alua-group", "" },
		{ "--gw-holddown", "-1" },
		{ "--gw-probe", "3600001" },
		{ "--alua-peer", "0" },
		{ "--alua-peer", "1:65536" },
		{ "--workers", "-2" },
		{ "--workers", "many" },
		{ "--conn-workers", "2" },
		{ "--conn-workers", "" },
		{ "--max-sessions", "1000001" },
		{ "--queue-depth", "-1" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char expect[128];

		assert_int_equal(PARSE(&g_o, (char *)bad[i][0], (char *)bad[i][1]),
				 MINITARGET_PARSE_ERROR);
		snprintf(expect, sizeof(expect), "minitarget: bad %s '%s'\n", bad[i][0], bad[i][1]);
		assert_string_equal(g_err, expect);
	}
}

/* An unknown option, a missing value or a full list: the usage, on err. */
static void test_usage_errors(void **state)
{
	char *argv[2 * MINITARGET_MAX_ITEMS + 3];
	int argc = 0;

	(void)state;
	assert_int_equal(PARSE(&g_o, "--bogus"), MINITARGET_PARSE_ERROR);
	assert_non_null(strstr(g_err, "usage: minitarget"));
	assert_int_equal(PARSE(&g_o, "--portal"), MINITARGET_PARSE_ERROR);
	assert_non_null(strstr(g_err, "usage: minitarget"));
	assert_int_equal(PARSE(&g_o, "-v", "--iqn"), MINITARGET_PARSE_ERROR);
	assert_non_null(strstr(g_err, "usage: minitarget"));

	argv[argc++] = "minitarget";
	for (int i = 0; i <= MINITARGET_MAX_ITEMS; i++) {
		argv[argc++] = "--initiator";
		argv[argc++] = "iqn.x";
	}
	assert_int_equal(parse_args(&g_o, argc - 2, argv), MINITARGET_PARSE_RUN);
	assert_int_equal(g_o.ninit, MINITARGET_MAX_ITEMS);
	assert_int_equal(parse_args(&g_o, argc, argv), MINITARGET_PARSE_ERROR);
	assert_non_null(strstr(g_err, "usage: minitarget"));

	/* The 16th --alua-peer is a bad value, not a usage error. */
	argc = 1;
	for (int i = 0; i <= MINITARGET_MAX_PEERS; i++) {
		argv[argc++] = "--alua-peer";
		argv[argc++] = "2";
	}
	assert_int_equal(parse_args(&g_o, argc, argv), MINITARGET_PARSE_ERROR);
	assert_string_equal(g_err, "minitarget: bad --alua-peer '2'\n");
}

static void test_parse_size(void **state)
{
	uint64_t v = 0;

	(void)state;
	assert_int_equal(minitarget_parse_size("512", &v), 0);
	assert_int_equal(v, 512);
	assert_int_equal(minitarget_parse_size("4k", &v), 0);
	assert_int_equal(v, 4096);
	assert_int_equal(minitarget_parse_size("3M", &v), 0);
	assert_int_equal(v, 3ull << 20);
	assert_int_equal(minitarget_parse_size("2g", &v), 0);
	assert_int_equal(v, 2ull << 30);
	assert_int_equal(minitarget_parse_size("5T", &v), 0);
	assert_int_equal(v, 5ull << 40);
	assert_int_equal(minitarget_parse_size("0", &v), -1);
	assert_int_equal(minitarget_parse_size("", &v), -1);
	assert_int_equal(minitarget_parse_size("1P", &v), -1);
	/* "Ki", "KiB" and "KB" mean K, as in scsitgtd's configuration (examples/size_arg.c). */
	assert_int_equal(minitarget_parse_size("1KB", &v), 0);
	assert_int_equal(v, 1024);
	assert_int_equal(minitarget_parse_size("2MiB", &v), 0);
	assert_int_equal(v, 2ull << 20);
	assert_int_equal(minitarget_parse_size("1Ki", &v), 0);
	assert_int_equal(v, 1024);
	/* strtoull would take these: a sign wraps around, a space is skipped. */
	assert_int_equal(minitarget_parse_size("-1", &v), -1);
	assert_int_equal(minitarget_parse_size("+4k", &v), -1);
	assert_int_equal(minitarget_parse_size(" 4k", &v), -1);
	assert_int_equal(minitarget_parse_size("4 k", &v), -1);
	assert_int_equal(minitarget_parse_size("4B", &v), -1);
	assert_int_equal(minitarget_parse_size("4kx", &v), -1);
	assert_int_equal(minitarget_parse_size("18446744073709551615", &v), 0);
	assert_int_equal(v, UINT64_MAX);
	assert_int_equal(minitarget_parse_size("18446744073709551616", &v), -1);
	assert_int_equal(minitarget_parse_size("16777216T", &v), -1);
	assert_int_equal(minitarget_parse_size("99999999999999999999", &v), -1);
}

static void test_parse_lun(void **state)
{
	struct minitarget_lun l;

	(void)state;
	assert_int_equal(minitarget_parse_lun("1:ram:64M,thin,ro,removable,spc4,pbe=3", &l), 0);
	assert_int_equal(l.id, 1);
	assert_int_equal(l.kind, MINITARGET_LUN_RAM);
	assert_int_equal(l.size, 64ull << 20);
	assert_int_equal(l.bs, 512);
	assert_false(l.bs_given);
	assert_int_equal(l.pbe, 3);
	assert_int_equal(l.flags, SCSITGT_LUN_THIN | SCSITGT_LUN_READ_ONLY | SCSITGT_LUN_REMOVABLE |
					  SCSITGT_LUN_CLAIM_SPC4);

	assert_false(l.pr_hold);
	assert_int_equal(minitarget_parse_lun("2:null:1G,fault=hang@write,prhold", &l), 0);
	assert_int_equal(l.kind, MINITARGET_LUN_NULL);
	assert_string_equal(l.fault, "hang@write");
	assert_true(l.pr_hold);

	assert_int_equal(minitarget_parse_lun("0:file:/dev/sdz,bs=4096", &l), 0);
	assert_int_equal(l.kind, MINITARGET_LUN_FILE);
	assert_string_equal(l.path, "/dev/sdz");
	assert_int_equal(l.size, 0);
	assert_true(l.bs_given);
	assert_int_equal(l.io_engine, 0);
	assert_false(l.buffered);
	assert_int_equal(minitarget_parse_lun("0:file:/f,io_engine=io_uring,direct=0", &l), 0);
	assert_int_equal(l.io_engine, 2);
	assert_true(l.buffered);
	assert_int_equal(minitarget_parse_lun("0:file:/f,io_engine=libaio,direct=1", &l), 0);
	assert_int_equal(l.io_engine, 1);
	assert_false(l.buffered);
	assert_int_equal(minitarget_parse_lun("0:file:/f,io_engine=uring", &l), -1);
	assert_int_equal(l.uring_async, 0);
	assert_int_equal(minitarget_parse_lun("0:file:/f,direct=0,uring_async=never", &l), 0);
	assert_int_equal(l.uring_async, 2);
	assert_int_equal(minitarget_parse_lun("0:file:/f,direct=0,uring_async=always", &l), 0);
	assert_int_equal(l.uring_async, 1);
	assert_int_equal(minitarget_parse_lun("0:file:/f,uring_async=1", &l), -1);
	/* Only file LUNs have an engine. */
	assert_int_equal(minitarget_parse_lun("0:ram:1M,io_engine=libaio", &l), -1);
	assert_int_equal(minitarget_parse_lun("0:ram:1M,direct=0", &l), -1);
	assert_int_equal(minitarget_parse_lun("0:ram:1M,uring_async=never", &l), -1);

	assert_int_equal(minitarget_parse_lun("5:rbd:rbd/img,ns=n1,id=gw,conf=/etc/c.conf,"
					      "timeout=30,nocache,nopr,ro",
					      &l),
			 0);
	assert_int_equal(l.kind, MINITARGET_LUN_RBD);
	assert_string_equal(l.path, "rbd/img");
	assert_string_equal(l.rbd_ns, "n1");
	assert_string_equal(l.rbd_id, "gw");
	assert_string_equal(l.rbd_conf, "/etc/c.conf");
	assert_int_equal(l.rbd_timeout, 30);
	assert_true(l.rbd_nocache);
	assert_true(l.rbd_nopr);
	assert_int_equal(l.flags, SCSITGT_LUN_READ_ONLY);
	assert_int_equal(minitarget_parse_lun("5:rbd:rbd/img", &l), 0);
	assert_int_equal(l.rbd_timeout, -1);

	/* Malformed. */
	assert_int_equal(minitarget_parse_lun("", &l), -1);
	assert_int_equal(minitarget_parse_lun("x:ram:1M", &l), -1);
	/* LUN numbers the library takes (lun.h), and no wrap past 2^64 */
	assert_int_equal(minitarget_parse_lun("16383:ram:1M", &l), 0);
	assert_int_equal(l.id, 16383);
	assert_int_equal(minitarget_parse_lun("16384:ram:1M", &l), -1);
	assert_int_equal(minitarget_parse_lun("18446744073709551616:ram:1M", &l), -1);
	assert_int_equal(minitarget_parse_lun("1ram:1M", &l), -1);
	assert_int_equal(minitarget_parse_lun("1:disk:1M", &l), -1);
	assert_int_equal(minitarget_parse_lun("1:ram:1M,bs=1024", &l), -1);
	/* bs=512|4096 and N as written (fuzz_minitarget): no trailing text, no wrap to 4096
	 * (2^32 + 4096), no sign or blank before the LUN number. */
	assert_int_equal(minitarget_parse_lun("1:ram:1M,bs=4096x", &l), -1);
	assert_int_equal(minitarget_parse_lun("1:ram:1M,bs=4294971392", &l), -1);
	assert_int_equal(minitarget_parse_lun("1:ram:1M,bs=04096", &l), -1);
	assert_int_equal(minitarget_parse_lun("1:ram:1M,bs=", &l), -1);
	assert_int_equal(minitarget_parse_lun("-1:ram:1M", &l), -1);
	assert_int_equal(minitarget_parse_lun("+1:ram:1M", &l), -1);
	assert_int_equal(minitarget_parse_lun(" 1:ram:1M", &l), -1);
	assert_int_equal(minitarget_parse_lun("1:ram:1M,bs=512", &l), 0);
	assert_int_equal(l.bs, 512);
	assert_true(l.bs_given);
	assert_int_equal(minitarget_parse_lun("1:ram:256", &l), -1); /* below one block */
	assert_int_equal(minitarget_parse_lun("1:ram:1M,pbe=9", &l), -1);
	assert_int_equal(minitarget_parse_lun("1:ram:1M,fault=", &l), -1);
	assert_int_equal(minitarget_parse_lun("1:ram:1M,nocache", &l), -1); /* rbd only */
	assert_int_equal(minitarget_parse_lun("1:ram:1M,bogus", &l), -1);
	assert_int_equal(minitarget_parse_lun("1:file:", &l), -1);
	assert_int_equal(minitarget_parse_lun("1:rbd:img", &l), -1);
	assert_int_equal(minitarget_parse_lun("1:rbd:/img", &l), -1);
	assert_int_equal(minitarget_parse_lun("1:rbd:pool/", &l), -1);
	assert_int_equal(minitarget_parse_lun("1:rbd:a/b/c", &l), -1);
	assert_int_equal(minitarget_parse_lun("1:rbd:a/b,id=", &l), -1);
	assert_int_equal(minitarget_parse_lun("1:rbd:a/b,timeout=86401", &l), -1);
	assert_int_equal(minitarget_parse_lun("1:rbd:a/b,timeout=x", &l), -1);
	assert_int_equal(minitarget_parse_lun("1:rbd:a/b,conf=", &l), -1);
	assert_int_equal(minitarget_parse_lun("1:ram:1M,ns=x", &l), -1); /* rbd only */
	assert_int_equal(minitarget_parse_lun("1:null:1M,pbe=", &l), -1);
	assert_int_equal(minitarget_parse_lun("1:null:1M,pbe=1x", &l), -1);
	assert_int_equal(minitarget_parse_lun("1:ram:", &l), -1);
	assert_int_equal(minitarget_parse_lun("1:rbd:a/b,ns=", &l), 0); /* the default namespace */
	assert_string_equal(l.rbd_ns, "");
	assert_int_equal(minitarget_parse_lun("1:null:1M,bs=4096,pbe=2,thin", &l), 0);
	assert_int_equal(l.bs, 4096);
	assert_int_equal(l.pbe, 2);
}

static void test_parse_portal(void **state)
{
	char host[64];
	uint16_t port = 0;

	(void)state;
	assert_int_equal(minitarget_parse_portal("127.0.0.1:3261", host, sizeof(host), &port), 0);
	assert_string_equal(host, "127.0.0.1");
	assert_int_equal(port, 3261);
	assert_int_equal(minitarget_parse_portal("localhost", host, sizeof(host), &port), 0);
	assert_string_equal(host, "localhost");
	assert_int_equal(port, 3260);
	assert_int_equal(minitarget_parse_portal("[::1]:0", host, sizeof(host), &port), 0);
	assert_string_equal(host, "::1");
	assert_int_equal(port, 0);
	assert_int_equal(minitarget_parse_portal("[fe80::1]", host, sizeof(host), &port), 0);
	assert_string_equal(host, "fe80::1");
	assert_int_equal(port, 3260);

	assert_int_equal(minitarget_parse_portal(":3260", host, sizeof(host), &port), -1);
	assert_int_equal(minitarget_parse_portal("h:65536", host, sizeof(host), &port), -1);
	assert_int_equal(minitarget_parse_portal("h:", host, sizeof(host), &port), -1);
	assert_int_equal(minitarget_parse_portal("h:1x", host, sizeof(host), &port), -1);
	assert_int_equal(minitarget_parse_portal("[::1", host, sizeof(host), &port), -1);
	assert_int_equal(minitarget_parse_portal("[]:1", host, sizeof(host), &port), -1);
	assert_int_equal(minitarget_parse_portal("[::1]x", host, sizeof(host), &port), -1);
	assert_int_equal(minitarget_parse_portal("abcdefgh:1", host, 8, &port), -1);
}

static void test_small_parsers(void **state)
{
	char u[8], s[8];
	struct scsitgt_rbd_gateway_peer peer;

	(void)state;
	assert_int_equal(minitarget_split_cred("user:se:cret", u, s, sizeof(u)), 0);
	assert_string_equal(u, "user");
	assert_string_equal(s, "se:cret");
	assert_int_equal(minitarget_split_cred("nocolon", u, s, sizeof(u)), -1);
	assert_int_equal(minitarget_split_cred(":secret", u, s, sizeof(u)), -1);
	assert_int_equal(minitarget_split_cred("longuser:s", u, s, sizeof(u)), -1);
	assert_int_equal(minitarget_split_cred("u:longsecret", u, s, sizeof(u)), -1);

	assert_int_equal(minitarget_parse_chap_algs("md5,sha1,sha256,sha3-256"),
			 SCSITGT_ISCSI_CHAP_MD5 | SCSITGT_ISCSI_CHAP_SHA1 |
				 SCSITGT_ISCSI_CHAP_SHA256 | SCSITGT_ISCSI_CHAP_SHA3_256);
	assert_int_equal(minitarget_parse_chap_algs("sha1"), SCSITGT_ISCSI_CHAP_SHA1);
	assert_int_equal(minitarget_parse_chap_algs(""), 0);
	assert_int_equal(minitarget_parse_chap_algs("sha"), 0);
	assert_int_equal(minitarget_parse_chap_algs("md5,sha512"), 0);

	assert_int_equal(minitarget_parse_peer("65535", &peer), 0);
	assert_int_equal(peer.group_id, 65535);
	assert_int_equal(peer.rel_port_id, 65535);
	assert_int_equal(minitarget_parse_peer("2:7", &peer), 0);
	assert_int_equal(peer.group_id, 2);
	assert_int_equal(peer.rel_port_id, 7);
	assert_int_equal(minitarget_parse_peer("", &peer), -1);
	assert_int_equal(minitarget_parse_peer("2:", &peer), -1);
	assert_int_equal(minitarget_parse_peer("2:0", &peer), -1);
	assert_int_equal(minitarget_parse_peer("2:3:4", &peer), -1);
}

/* The usage names every option the parser takes. */
static void test_usage_lists_options(void **state)
{
	static const char *const options[] = {
		"--portal",
		"--iqn",
		"--lun",
		"--chap",
		"--mutual-chap",
		"--chap-algorithms",
		"--initiator",
		"--header-digest",
		"--data-digest",
		"-v",
		"--pr-dir",
		"--login-timeout",
		"--alua",
		"--nop-interval",
		"--iser-portal",
		"--workers",
		"--conn-workers",
		"--srp-portal",
		"--srp-guid",
		"--srp-aer",
		"--acl-address",
		"--initiator-address",
		"--map",
		"--max-sessions",
		"--max-lun-commands",
		"--max-initiator-conns",
		"--queue-depth",
		"--discovery-chap",
		"--discovery-mutual-chap",
		"--drain-timeout",
		"--tmf-timeout",
		"--logout-timeout",
		"--tpgt",
		"--alua-group",
		"--alua-peer",
		"--alua-preferred",
		"--gw-holddown",
		"--gw-probe",
	};
	FILE *f = tmpfile();
	size_t n;

	(void)state;
	assert_non_null(f);
	minitarget_usage(f);
	rewind(f);
	n = fread(g_err, 1, sizeof(g_err) - 1, f);
	g_err[n] = '\0';
	fclose(f);
	for (size_t i = 0; i < sizeof(options) / sizeof(options[0]); i++) {
		char word[64];

		snprintf(word, sizeof(word), "[%s", options[i]);
		if (strstr(g_err, word) == NULL)
			fail_msg("usage lacks %s", options[i]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),      cmocka_unit_test(test_help),
		cmocka_unit_test(test_every_option),  cmocka_unit_test(test_bad_values),
		cmocka_unit_test(test_usage_errors),  cmocka_unit_test(test_parse_size),
		cmocka_unit_test(test_parse_lun),     cmocka_unit_test(test_parse_portal),
		cmocka_unit_test(test_small_parsers), cmocka_unit_test(test_usage_lists_options),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
