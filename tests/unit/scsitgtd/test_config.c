/* SPDX-License-Identifier: MIT */
/* scsitgtd's configuration parser (examples/scsitgtd_config.c, docs/scsitgtd.md). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* cmocka needs the headers above first. */
#include <cmocka.h>

#include "scsitgtd_config.h"

static struct scsitgtd_config *parse_ok(const char *text)
{
	struct scsitgtd_config *cfg = NULL;
	char err[256];
	int rc = scsitgtd_config_parse(text, strlen(text), &cfg, err, sizeof(err));

	if (rc != 0)
		fail_msg("refused: %s", err);
	assert_non_null(cfg);
	return cfg;
}

/* Parse @text expecting a refusal whose message starts with @prefix ("line N: ...") and
 * contains @needle. */
static void parse_bad(const char *text, const char *prefix, const char *needle)
{
	struct scsitgtd_config *cfg = (struct scsitgtd_config *)1;
	char err[256];

	assert_int_equal(scsitgtd_config_parse(text, strlen(text), &cfg, err, sizeof(err)),
			 -EINVAL);
	assert_null(cfg);
	if (strncmp(err, prefix, strlen(prefix)) != 0 || strstr(err, needle) == NULL)
		fail_msg("message \"%s\" lacks \"%s\"...\"%s\"", err, prefix, needle);
}

/*
 * scsitgtd_config_write() of @cfg parses back to a configuration that writes the same text,
 * with the same objects: what the control socket's save promises.
 */
static void roundtrip(const struct scsitgtd_config *cfg)
{
	char *t1 = NULL, *t2 = NULL, err[256];
	size_t n1 = 0, n2 = 0;
	FILE *f = open_memstream(&t1, &n1);
	struct scsitgtd_config *c2 = NULL;

	assert_non_null(f);
	assert_int_equal(scsitgtd_config_write(cfg, f), 0);
	fclose(f);
	if (scsitgtd_config_parse(t1, n1, &c2, err, sizeof(err)) != 0)
		fail_msg("written text does not parse: %s\n%s", err, t1);
	f = open_memstream(&t2, &n2);
	assert_int_equal(scsitgtd_config_write(c2, f), 0);
	fclose(f);
	assert_string_equal(t1, t2);
	assert_int_equal(c2->log_level, cfg->log_level);
	assert_int_equal(c2->workers, cfg->workers);
	assert_int_equal(c2->conn_workers, cfg->conn_workers);
	assert_true(scsitgtd_params_equal(&c2->params, &cfg->params));
	assert_int_equal(c2->nportals, cfg->nportals);
	for (size_t i = 0; i < cfg->nportals; i++) {
		assert_true(scsitgtd_portal_same(&c2->portals[i], &cfg->portals[i]));
		assert_int_equal(c2->portals[i].tpgt, cfg->portals[i].tpgt);
		assert_int_equal(c2->portals[i].max_connections, cfg->portals[i].max_connections);
	}
	assert_int_equal(c2->ntargets, cfg->ntargets);
	for (size_t i = 0; i < cfg->ntargets; i++) {
		const struct scsitgtd_target *a = &cfg->targets[i], *b = &c2->targets[i];

		assert_string_equal(a->name, b->name);
		assert_int_equal(a->ninitiators, b->ninitiators);
		assert_int_equal(a->nichap, b->nichap);
		assert_int_equal(a->naddresses, b->naddresses);
		assert_int_equal(a->ngroups, b->ngroups);
		assert_int_equal(a->alua_modes, b->alua_modes);
		assert_int_equal(a->max_sessions, b->max_sessions);
		assert_true(scsitgtd_params_equal(&a->params, &b->params));
		for (size_t j = 0; j < a->ngroups; j++) {
			assert_int_equal(a->groups[j].state, b->groups[j].state);
			assert_int_equal(a->groups[j].nports, b->groups[j].nports);
		}
		assert_int_equal(a->nluns, b->nluns);
		for (size_t j = 0; j < a->nluns; j++) {
			assert_false(scsitgtd_lun_needs_recreate(&a->luns[j], &b->luns[j]));
			assert_int_equal(a->luns[j].size, b->luns[j].size);
			assert_int_equal(a->luns[j].flags, b->luns[j].flags);
			assert_int_equal(a->luns[j].offline, b->luns[j].offline);
			assert_int_equal(a->luns[j].nvisible_to, b->luns[j].nvisible_to);
		}
		assert_int_equal(a->nsrps, b->nsrps);
		for (size_t j = 0; j < a->nsrps; j++)
			assert_true(scsitgtd_srp_equal(&a->srps[j], &b->srps[j]));
	}
	scsitgtd_config_free(c2);
	free(t1);
	free(t2);
}

static void test_full(void **state)
{
	static const char text[] =
		"# comment\n"
		"; another\n"
		"[engine]\n"
		"log_level = debug\n"
		"tmf_timeout_ms = 5000\n"
		"pr_dir = /var/lib/scsitgtd\n"
		"login_timeout_ms = 3000\n"
		"\n"
		"[portal]\n"
		"address = 127.0.0.1\n"
		"port = 3360\n"
		"tpgt = 7\n"
		"max_connections = 0\n"
		"[portal]\n"
		"[portal]\n"
		"transport = iser\n"
		"  [target]\n"
		"  name = iqn.2024-01.org.example:a\n"
		"  alias =  Disk A  \n"
		"initiator = iqn.1994-05.com.redhat:c1\n"
		"initiator = iqn.1994-05.com.redhat:c2\n"
		"chap = user:secret:with:colons#and ;semicolon\n"
		"mutual_chap = tgt:tsecret-123456\n"
		"initiator_chap = iqn.1994-05.com.redhat:c2 c2user:c2-secret-0001\n"
		"queue_depth = 64\n"
		"header_digest = crc32c\n"
		"immediate_data = no\n"
		"max_recv_data_segment_length = 64K\n"
		"chap_algorithms = sha256, sha3-256\n"
		"max_write_buffer = 0\n"
		"alua = implicit explicit\n"
		"[alua_group 1]\n"
		"ports = 7, 8\n"
		"preferred = yes\n"
		"[alua_group 2]\n"
		"state = standby\n"
		"ports = 1\n"
		"[lun 3]\n"
		"backend = ram\n"
		"size = 64M\n"
		"block_size = 4096\n"
		"read_only = yes\n"
		"thin = true\n"
		"offline = on\n"
		"vendor = ACME\n"
		"revision = 1.0\n"
		"pr_file = /var/lib/pr/lun3\n"
		"[lun 0]\r\n"
		"backend = file\r\n"
		"path = /tmp/disk.img\r\n"
		"direct = no\r\n"
		"write_through = yes\r\n"
		"aio_queue_depth = 32\r\n"
		"io_engine = io_uring\r\n"
		"uring_async = never\r\n"
		"[target]\n"
		"name = iqn.2024-01.org.example:b\n"
		"[lun 16383]\n"
		"backend = null\n"
		"size = 2T\n"
		"[lun 1]\n"
		"backend = block\n"
		"path = /dev/null";
	struct scsitgtd_config *cfg = parse_ok(text);
	const struct scsitgtd_target *a, *b;
	const struct scsitgtd_alua_group *g;
	const struct scsitgtd_lun *l;

	(void)state;
	assert_int_equal(cfg->log_level, 7);
	assert_int_equal(cfg->tmf_timeout_ms, 5000);
	assert_string_equal(cfg->pr_dir, "/var/lib/scsitgtd");
	assert_int_equal(cfg->params.set, 1u << SCSITGTD_P_LOGIN_TIMEOUT_MS);
	assert_int_equal(cfg->params.v[SCSITGTD_P_LOGIN_TIMEOUT_MS], 3000);
	assert_int_equal(cfg->nportals, 3);
	assert_string_equal(cfg->portals[0].address, "127.0.0.1");
	assert_int_equal(cfg->portals[0].port, 3360);
	assert_int_equal(cfg->portals[0].tpgt, 7);
	assert_int_equal(cfg->portals[0].max_connections, 0);
	assert_int_equal(cfg->portals[0].max_login_connections, -1);
	/* An empty section still counts: libinih never reports it, our marker does. */
	assert_string_equal(cfg->portals[1].address, "0.0.0.0");
	assert_int_equal(cfg->portals[1].port, 3260);
	assert_int_equal(cfg->portals[1].tpgt, 1);
	assert_int_equal(cfg->portals[1].transport, SCSITGTD_TRANSPORT_TCP);
	assert_int_equal(cfg->portals[2].transport, SCSITGTD_TRANSPORT_ISER);
	assert_int_equal(cfg->ntargets, 2);
	a = scsitgtd_config_find_target(cfg, "iqn.2024-01.org.example:a");
	assert_non_null(a);
	assert_string_equal(a->alias, "Disk A");
	assert_int_equal(a->ninitiators, 2);
	assert_string_equal(a->initiators[1], "iqn.1994-05.com.redhat:c2");
	/* The user ends at the first colon; the secret keeps the rest verbatim (no inline
	 * comments). */
	assert_string_equal(a->chap_user, "user");
	assert_string_equal(a->chap_secret, "secret:with:colons#and ;semicolon");
	assert_string_equal(a->mutual_user, "tgt");
	assert_int_equal(a->nichap, 1);
	assert_string_equal(scsitgtd_config_find_ichap(a, "iqn.1994-05.com.redhat:c2")->secret,
			    "c2-secret-0001");
	assert_null(scsitgtd_config_find_ichap(a, "iqn.1994-05.com.redhat:c1"));
	assert_int_equal(a->params.v[SCSITGTD_P_QUEUE_DEPTH], 64);
	assert_int_equal(a->params.v[SCSITGTD_P_HEADER_DIGEST], 2);
	assert_int_equal(a->params.v[SCSITGTD_P_IMMEDIATE_DATA], 0);
	assert_true(a->params.set & (1u << SCSITGTD_P_IMMEDIATE_DATA));
	assert_int_equal(a->params.v[SCSITGTD_P_MAX_RECV_DATA_SEGMENT_LENGTH], 65536);
	assert_int_equal(a->params.v[SCSITGTD_P_CHAP_ALGORITHMS], 0xc);
	assert_false(a->params.set & (1u << SCSITGTD_P_DATA_DIGEST));
	assert_int_equal(a->alua_modes, 3);
	assert_int_equal(a->ngroups, 2);
	g = scsitgtd_config_find_group(a, 1);
	assert_non_null(g);
	assert_int_equal(g->state, 0);
	assert_true(g->preferred);
	assert_int_equal(g->nports, 2);
	assert_true(scsitgtd_group_has_port(g, 8));
	g = scsitgtd_config_find_group(a, 2);
	assert_int_equal(g->state, 2);
	assert_false(g->preferred);
	assert_int_equal(a->nluns, 2);
	l = scsitgtd_config_find_lun(a, 3);
	assert_non_null(l);
	assert_int_equal(l->backend, SCSITGTD_BACKEND_RAM);
	assert_int_equal(l->size, 64ull << 20);
	assert_int_equal(l->block_size, 4096);
	assert_int_equal(l->flags, SCSITGTD_LUN_READ_ONLY | SCSITGTD_LUN_THIN);
	assert_true(l->offline);
	assert_true(l->direct);
	assert_string_equal(l->vendor, "ACME");
	assert_string_equal(l->revision, "1.0");
	assert_string_equal(l->pr_file, "/var/lib/pr/lun3");
	assert_null(l->product);
	l = scsitgtd_config_find_lun(a, 0);
	assert_non_null(l);
	assert_int_equal(l->backend, SCSITGTD_BACKEND_FILE);
	assert_string_equal(l->path, "/tmp/disk.img");
	assert_false(l->direct);
	assert_true(l->write_through);
	assert_int_equal(l->aio_queue_depth, 32);
	assert_int_equal(l->io_engine, 2);   /* SCSITGT_BACKEND_AIO_ENGINE_IO_URING */
	assert_int_equal(l->uring_async, 2); /* SCSITGT_BACKEND_AIO_URING_ASYNC_NEVER */
	assert_null(scsitgtd_config_find_lun(a, 1));
	b = scsitgtd_config_find_target(cfg, "iqn.2024-01.org.example:b");
	assert_non_null(b);
	assert_int_equal(b->alua_modes, 0);
	assert_int_equal(b->luns[0].id, 16383);
	assert_int_equal(b->luns[0].size, 2ull << 40);
	assert_int_equal(b->luns[1].backend, SCSITGTD_BACKEND_BLOCK);
	assert_null(scsitgtd_config_find_target(cfg, "iqn.2024-01.org.example:c"));
	/* A deep copy (the control socket changes copies): equal values, no shared pointer;
	 * each frees alone (the sanitizer builds see a shared or leaked one). */
	{
		struct scsitgtd_config *c = scsitgtd_config_dup(cfg);
		const struct scsitgtd_target *ca;

		assert_non_null(c);
		assert_int_equal(c->ntargets, cfg->ntargets);
		assert_int_equal(c->nportals, cfg->nportals);
		assert_ptr_not_equal(c->portals, cfg->portals);
		assert_string_equal(c->pr_dir, cfg->pr_dir);
		assert_ptr_not_equal(c->pr_dir, cfg->pr_dir);
		ca = scsitgtd_config_find_target(c, "iqn.2024-01.org.example:a");
		assert_non_null(ca);
		assert_ptr_not_equal(ca->name, a->name);
		assert_int_equal(ca->nluns, a->nluns);
		assert_ptr_not_equal(ca->luns, a->luns);
		assert_string_equal(scsitgtd_config_find_lun(ca, 0)->path, "/tmp/disk.img");
		assert_false(scsitgtd_lun_needs_recreate(scsitgtd_config_find_lun(ca, 0),
							 scsitgtd_config_find_lun(a, 0)));
		assert_int_equal(ca->ngroups, a->ngroups);
		scsitgtd_config_free(cfg);
		cfg = c;
	}
	roundtrip(cfg);
	scsitgtd_config_free(cfg);
}

static void test_empty(void **state)
{
	struct scsitgtd_config *cfg;

	(void)state;
	cfg = parse_ok("");
	assert_int_equal(cfg->ntargets, 0);
	assert_int_equal(cfg->nportals, 0);
	assert_int_equal(cfg->log_level, 5);
	scsitgtd_config_free(cfg);
	cfg = parse_ok("\n\n# nothing\n   \n");
	scsitgtd_config_free(cfg);
	/* A UTF-8 byte order mark before the first section is fine. */
	cfg = parse_ok("\xef\xbb\xbf[engine]\nlog_level = error\n");
	assert_int_equal(cfg->log_level, 3);
	scsitgtd_config_free(cfg);
	/* ALUA groups without an alua key default to implicit ALUA. */
	cfg = parse_ok("[target]\nname = iqn.x\n[alua_group 5]\n");
	assert_int_equal(cfg->targets[0].alua_modes, 1);
	assert_int_equal(cfg->targets[0].groups[0].id, 5);
	scsitgtd_config_free(cfg);
	/* The control socket: a path that fits in sockaddr_un. */
	cfg = parse_ok("[engine]\ncontrol_socket = /run/scsitgtd/ctl.sock\n");
	assert_string_equal(cfg->control_socket, "/run/scsitgtd/ctl.sock");
	scsitgtd_config_free(cfg);
	parse_bad("[engine]\ncontrol_socket =\n", "line 2:", "control_socket: empty");
	/* The pidfile: any non-empty path, written back by save. */
	cfg = parse_ok("[engine]\npidfile = /run/scsitgtd.pid\n");
	assert_string_equal(cfg->pidfile, "/run/scsitgtd.pid");
	roundtrip(cfg);
	scsitgtd_config_free(cfg);
	parse_bad("[engine]\npidfile =\n", "line 2:", "pidfile: empty");
	/* The metrics listener: ADDRESS:PORT, IPv6 in brackets, written back the same way. */
	cfg = parse_ok("[engine]\nmetrics = 127.0.0.1:9100\n");
	assert_string_equal(cfg->metrics_address, "127.0.0.1");
	assert_int_equal(cfg->metrics_port, 9100);
	roundtrip(cfg);
	scsitgtd_config_free(cfg);
	cfg = parse_ok("[engine]\nmetrics = [::1]:65535\n");
	assert_string_equal(cfg->metrics_address, "::1");
	assert_int_equal(cfg->metrics_port, 65535);
	roundtrip(cfg);
	scsitgtd_config_free(cfg);
	parse_bad("[engine]\nmetrics = 127.0.0.1\n", "line 2:", "metrics: expected ADDRESS:PORT");
	parse_bad("[engine]\nmetrics = :9100\n", "line 2:", "expected ADDRESS:PORT");
	parse_bad("[engine]\nmetrics = 127.0.0.1:0\n", "line 2:", "port: expected 1..65535");
	parse_bad("[engine]\nmetrics = 127.0.0.1:65536\n", "line 2:", "1..65535");
	parse_bad("[engine]\nmetrics = 127.0.0.1:\n", "line 2:", "1..65535");
	parse_bad("[engine]\nmetrics = localhost:9100\n", "line 2:", "numeric");
	parse_bad("[engine]\nmetrics = ::1:9100\n", "line 2:", "numeric");
	parse_bad("[engine]\nmetrics = [127.0.0.1]:9100\n", "line 2:", "numeric");
	parse_bad("[engine]\nmetrics = []:9100\n", "line 2:", "[IPV6]:PORT");
	parse_bad("[engine]\nmetrics = [::1:9100\n", "line 2:", "[IPV6]:PORT");
	{
		char text[300];

		snprintf(text, sizeof(text), "[engine]\ncontrol_socket = /%0120d\n", 0);
		parse_bad(text, "line 2:", "control_socket: longer than 107 bytes");
	}
	assert_int_equal(scsitgtd_config_parse(NULL, 0, &cfg, NULL, 0), 0);
	scsitgtd_config_free(cfg);
	assert_int_equal(scsitgtd_config_parse("", 0, NULL, NULL, 0), -EINVAL);
}

static void test_errors(void **state)
{
	(void)state;
	/* Lexing errors libinih finds, with our line and message. */
	parse_bad("key = v\n", "line 1:", "outside of any section");
	parse_bad("[engine\n", "line 1:", "closing ']'");
	parse_bad("[engine]\njust words\n", "line 2:", "key = value");
	parse_bad("[engine]\n\n  ;c\n[portal]\nport 3260\n", "line 5:", "key = value");
	/* Sections. */
	parse_bad("\n[bogus]\n", "line 2:", "unknown section [bogus]");
	parse_bad("[]\n", "line 1:", "empty section");
	parse_bad("[engine]\n[engine]\n", "line 2:", "[engine] given twice");
	parse_bad("[engine x]\n", "line 1:", "takes no argument");
	parse_bad("[lun 000000000000000000000000000000000000000000000000001]\n",
		  "line 1:", "longer than 48");
	/* Keys. */
	parse_bad("[engine]\nlog_level = loud\n", "line 2:", "log_level");
	parse_bad("[engine]\ncolour = red\n", "line 2:", "unknown key \"colour\" in [engine]");
	parse_bad("[engine]\nlog_level = info\nlog_level = debug\n", "line 3:", "given twice");
	parse_bad("[engine]\ntmf_timeout_ms = 0\n", "line 2:", "1..3600000");
	parse_bad("[engine]\nqueue_depth = 5000\n", "line 2:", "queue_depth");
	parse_bad("[engine]\nheader_digest = md5\n", "line 2:", "any, none or crc32c");
	parse_bad("[engine]\nchap_algorithms = md4\n", "line 2:", "unknown algorithm \"md4\"");
	parse_bad("[engine]\nchap_algorithms = ,\n", "line 2:", "at least one");
	parse_bad("[engine]\nmax_burst_length = 100\n", "line 2:", "512..16777215");
	parse_bad("[portal]\nport = 0\n", "line 2:", "port");
	parse_bad("[portal]\nport = 65536\n", "line 2:", "port");
	parse_bad("[portal]\nport = 12a\n", "line 2:", "port");
	parse_bad("[portal]\ntpgt = 0\n", "line 2:", "tpgt");
	parse_bad("[portal]\ntransport = fc\n", "line 2:", "tcp or iser");
	parse_bad("[portal]\naddress = localhost\n", "line 2:", "numeric");
	parse_bad("[portal]\n[portal]\naddress=0.0.0.0\n",
		  "line 2:", "defined twice (first on line 1)");
	parse_bad("[target]\nalias = x\n", "line 1:", "name missing");
	parse_bad("[target]\nname = bad name\n", "line 2:", "not an iSCSI name");
	parse_bad("[target]\nname = iqn.x\n[target]\nname = iqn.x\n", "line 4:", "defined twice");
	parse_bad("[lun 0]\n", "line 1:", "before any [target]");
	parse_bad("[alua_group 1]\n", "line 1:", "before any [target]");
	parse_bad("[target]\nname = iqn.x\n[lun 16384]\n", "line 3:", "LUN number");
	parse_bad("[target]\nname = iqn.x\n[lun -1]\n", "line 3:", "LUN number");
	parse_bad("[target]\nname = iqn.x\n[lun 99999999999999999999999]\n",
		  "line 3:", "LUN number");
	parse_bad("[target]\nname = iqn.x\nchap = user\n", "line 3:", "user:secret");
	parse_bad("[target]\nname = iqn.x\nchap = :secret-secret\n", "line 3:", "user:secret");
	parse_bad("[target]\nname = iqn.x\nchap = u:short\n", "line 3:", "12..256");
	parse_bad("[target]\nname = iqn.x\nchap = u:same-secret-1\nmutual_chap = t:same-secret-1\n",
		  "line 1:", "other than chap's");
	parse_bad("[target]\nname = iqn.x\ninitiator_chap = iqn.i\n", "line 3:", "INITIATOR-NAME");
	parse_bad("[target]\nname = iqn.x\ninitiator_chap = iqn.i u:secret-secret\n"
		  "initiator_chap = iqn.i v:secret-secret\n",
		  "line 4:", "given twice");
	parse_bad("[target]\nname = iqn.x\ninitiator = a b\n", "line 3:", "initiator name");
	parse_bad("[target]\nname = iqn.x\ninitiator = iqn.a\ninitiator = iqn.a\n",
		  "line 4:", "twice");
	parse_bad("[target]\nname = iqn.x\nalua = sometimes\n", "line 3:", "implicit");
	parse_bad("[target]\nname = iqn.x\n[alua_group 0]\n", "line 3:", "1..65535");
	parse_bad("[target]\nname = iqn.x\n[alua_group 1]\n[alua_group 1]\n",
		  "line 4:", "defined twice");
	parse_bad("[target]\nname = iqn.x\n[alua_group 1]\nstate = sleepy\n", "line 4:", "standby");
	parse_bad("[target]\nname = iqn.x\n[alua_group 1]\nports = 1 x\n",
		  "line 4:", "portal group tag");
	parse_bad("[target]\nname = iqn.x\n[alua_group 1]\nports = 1\n[alua_group 2]\nports = 1\n",
		  "line 6:", "in alua_group 1 already");
	/* Section-wide checks name the line of the [lun] header. */
	parse_bad("[target]\nname = iqn.x\n[lun 0]\nsize = 1M\n", "line 3:", "backend missing");
	parse_bad("[target]\nname = iqn.x\n[lun 0]\nbackend = ram\n[lun 1]\n",
		  "line 3:", "size missing");
	parse_bad("[target]\nname = iqn.x\n[lun 0]\nbackend = file\n", "line 3:", "path missing");
	parse_bad("[target]\nname = iqn.x\n[lun 0]\nbackend = block\n", "line 3:", "path missing");
	parse_bad("[target]\nname = iqn.x\n[lun 0]\nbackend = block\npath = /dev/sda\nsize = 1M\n",
		  "line 3:", "remove size");
	parse_bad("[target]\nname = iqn.x\n[lun 0]\nbackend = null\nsize = 1M\npath = /x\n",
		  "line 3:", "only for the file and block backends");
	parse_bad("[target]\nname = iqn.x\n[lun 0]\nbackend = ram\nsize = 1M\ndirect = no\n",
		  "line 3:", "only for the file and block backends");
	parse_bad("[target]\nname = iqn.x\n[lun 0]\nbackend = ram\nsize = 1M\nio_engine = auto\n",
		  "line 3:", "only for the file and block backends");
	parse_bad("[target]\nname = iqn.x\n[lun 0]\nbackend = file\npath = /x\nio_engine = aio\n",
		  "line 6:", "expected auto, libaio or io_uring");
	parse_bad(
		"[target]\nname = iqn.x\n[lun 0]\nbackend = null\nsize = 1M\nuring_async = never\n",
		"line 3:", "only for the file and block backends");
	parse_bad(
		"[target]\nname = iqn.x\n[lun 0]\nbackend = rbd\npath = rbd/i\nuring_async = auto\n",
		"line 3:", "uring_async; remove them");
	parse_bad("[target]\nname = iqn.x\n[lun 0]\nbackend = file\npath = /x\nuring_async = yes\n",
		  "line 6:", "uring_async: expected auto, always or never");
	parse_bad("[target]\nname = iqn.x\n[lun 0]\nbackend = ram\nsize = 1000\n",
		  "line 3:", "multiple of the block size");
	parse_bad("[target]\nname = iqn.x\n[lun 0]\nbackend = ram\nsize = 8K\nblock_size = 4096\n"
		  "[lun 0]\n",
		  "line 7:", "defined twice");
	parse_bad("[target]\nname = iqn.x\n[lun 0]\nbackend = tape\n",
		  "line 4:", "ram, null, file, block or rbd");
	/* rbd: path is POOL/IMAGE; the size is the image's; rbd_* keys only for rbd. */
	parse_bad("[target]\nname = iqn.x\n[lun 0]\nbackend = rbd\n", "line 3:", "POOL/IMAGE");
	parse_bad("[target]\nname = iqn.x\n[lun 0]\nbackend = rbd\npath = img\n",
		  "line 3:", "POOL/IMAGE");
	parse_bad("[target]\nname = iqn.x\n[lun 0]\nbackend = rbd\npath = p/a/b\n",
		  "line 3:", "POOL/IMAGE");
	parse_bad("[target]\nname = iqn.x\n[lun 0]\nbackend = rbd\npath = p/\n",
		  "line 3:", "POOL/IMAGE");
	parse_bad("[target]\nname = iqn.x\n[lun 0]\nbackend = rbd\npath = p/i\nsize = 1M\n",
		  "line 3:", "own size");
	parse_bad("[target]\nname = iqn.x\n[lun 0]\nbackend = ram\nsize = 1M\n"
		  "rbd_namespace = ns\n",
		  "line 3:", "only for the rbd backend");
	parse_bad("[target]\nname = iqn.x\n[lun 0]\nbackend = ram\nsize = 1M\n"
		  "rbd_shared_pr = no\n",
		  "line 3:", "only for the rbd backend");
	parse_bad("[target]\nname = iqn.x\n[lun 0]\nbackend = rbd\npath = p/i\n"
		  "rbd_shared_pr = maybe\n",
		  "line 6:", "yes or no");
	parse_bad("[target]\nname = iqn.x\n[lun 0]\nbackend = rbd\npath = p/i\n"
		  "rbd_op_timeout = 86401\n",
		  "line 6:", "rbd_op_timeout");
	parse_bad("[target]\nname = iqn.x\n[lun 0]\nsize = 0\n", "line 4:", "size");
	parse_bad("[target]\nname = iqn.x\n[lun 0]\nsize = 99999999999T\n", "line 4:", "size");
	parse_bad("[target]\nname = iqn.x\n[lun 0]\nblock_size = 1024\n", "line 4:", "512 or 4096");
	parse_bad("[target]\nname = iqn.x\n[lun 0]\nthin = maybe\n", "line 4:", "yes or no");
	parse_bad("[target]\nname = iqn.x\n[lun 0]\nvendor = TOOLONGVENDOR\n", "line 4:", "1..8");
	parse_bad("[target]\nname = iqn.x\n[lun 0]\nserial = a\x01b\n", "line 4:", "printable");
	parse_bad("[target]\nname = iqn.x\n[lun 0]\nspeed = fast\n",
		  "line 4:", "unknown key \"speed\" in [lun]");
	parse_bad("[target]\nname = iqn.x\n[lun 0]\nsize = 1M\nsize = 2M\n",
		  "line 5:", "given twice");
	/* The marker key cannot be forged: control characters make a key unknown. */
	parse_bad("[engine]\n\x01section = x\n", "line 2:", "unknown key");
}

static void test_binary_and_limits(void **state)
{
	struct scsitgtd_config *cfg = NULL;
	char err[128];
	char *big;
	size_t n = SCSITGTD_MAX_LINE + 10;

	(void)state;
	/* A NUL byte and an overlong line are refused, with their line. */
	assert_int_equal(
		scsitgtd_config_parse("[engine]\nlog\0_level = info\n", 27, &cfg, err, sizeof(err)),
		-EINVAL);
	assert_string_equal(err, "line 2: NUL byte in the text");
	big = malloc(n + 1);
	assert_non_null(big);
	memset(big, '#', n);
	big[n] = '\0';
	assert_int_equal(scsitgtd_config_parse(big, n, &cfg, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "line 1: line longer than"));
	free(big);
	/* A line of exactly the limit reaches our checks (here: too long a secret). */
	{
		static const char head[] = "[target]\nname = iqn.x\nchap = u:";
		size_t hl = sizeof(head) - 1, sl = SCSITGTD_MAX_LINE - strlen("chap = u:");

		big = malloc(hl + sl + 1);
		assert_non_null(big);
		memcpy(big, head, hl);
		memset(big + hl, 's', sl);
		big[hl + sl] = '\0';
		assert_int_equal(scsitgtd_config_parse(big, hl + sl, &cfg, err, sizeof(err)),
				 -EINVAL);
		assert_non_null(strstr(err, "line 3: chap: the secret must be 12..256"));
		free(big);
	}
	/* A tiny error buffer is still terminated, and NULL works too. */
	assert_int_equal(scsitgtd_config_parse("x", 1, &cfg, err, 4), -EINVAL);
	assert_true(strlen(err) < 4);
	assert_int_equal(scsitgtd_config_parse("x", 1, &cfg, NULL, 0), -EINVAL);

	/* The portal cap. */
	{
		size_t len = (SCSITGTD_MAX_PORTALS + 1) * 30 + 1;
		char *t = malloc(len), *p = t;

		assert_non_null(t);
		for (int i = 0; i <= SCSITGTD_MAX_PORTALS; i++)
			p += sprintf(p, "[portal]\nport = %d\n", 1000 + i);
		assert_int_equal(scsitgtd_config_parse(t, strlen(t), &cfg, err, sizeof(err)),
				 -EINVAL);
		assert_non_null(strstr(err, "too many portals"));
		free(t);
	}
}

static void test_recreate(void **state)
{
	struct scsitgtd_config *c1 = parse_ok("[target]\nname = iqn.x\n"
					      "[lun 0]\nbackend = ram\nsize = 1M\n"
					      "[lun 1]\nbackend = ram\nsize = 1M\n"
					      "[lun 2]\nbackend = file\npath = /a\n"
					      "[lun 3]\nbackend = file\npath = /b\n"
					      "uring_async = auto\n");
	struct scsitgtd_config *c2 = parse_ok("[target]\nname = iqn.x\nqueue_depth = 4\n"
					      "[lun 0]\nbackend = ram\nsize = 2M\n"
					      "offline = yes\n"
					      "[lun 1]\nbackend = null\nsize = 1M\n"
					      "[lun 2]\nbackend = file\npath = /a\ndirect = no\n"
					      "[lun 3]\nbackend = file\npath = /b\n"
					      "uring_async = always\n");
	const struct scsitgtd_target *t1 = &c1->targets[0], *t2 = &c2->targets[0];

	(void)state;
	/* Size and offline change in place; a new backend or I/O mode needs a new LUN. */
	assert_false(scsitgtd_lun_needs_recreate(scsitgtd_config_find_lun(t1, 0),
						 scsitgtd_config_find_lun(t2, 0)));
	assert_true(scsitgtd_lun_needs_recreate(scsitgtd_config_find_lun(t1, 1),
						scsitgtd_config_find_lun(t2, 1)));
	assert_true(scsitgtd_lun_needs_recreate(scsitgtd_config_find_lun(t1, 2),
						scsitgtd_config_find_lun(t2, 2)));
	/* uring_async is read when the backend is made: auto (the default, written out or
	 * not) to always is a new LUN; saved and read back, each stays what it was. */
	assert_int_equal(scsitgtd_config_find_lun(t1, 3)->uring_async, 0);
	assert_int_equal(scsitgtd_config_find_lun(t2, 3)->uring_async, 1);
	assert_false(scsitgtd_lun_needs_recreate(scsitgtd_config_find_lun(t1, 3),
						 scsitgtd_config_find_lun(t1, 3)));
	assert_true(scsitgtd_lun_needs_recreate(scsitgtd_config_find_lun(t1, 3),
						scsitgtd_config_find_lun(t2, 3)));
	roundtrip(c1);
	roundtrip(c2);
	assert_false(scsitgtd_params_equal(&t1->params, &t2->params));
	assert_true(scsitgtd_params_equal(&t1->params, &t1->params));
	assert_string_equal(scsitgtd_param_name(SCSITGTD_P_QUEUE_DEPTH), "queue_depth");
	scsitgtd_config_free(c1);
	scsitgtd_config_free(c2);
}

static void test_rbd(void **state)
{
	struct scsitgtd_config *c1 = parse_ok("[target]\nname = iqn.x\n"
					      "[lun 0]\nbackend = rbd\npath = rbd/img\n"
					      "rbd_namespace = ns1\nrbd_client_id = gw\n"
					      "rbd_conf = /etc/ceph/c.conf\nrbd_op_timeout = 0\n"
					      "write_through = yes\nrbd_shared_pr = no\n"
					      "[lun 1]\nbackend = rbd\npath = rbd/img2\n");
	struct scsitgtd_config *c2 =
		parse_ok("[target]\nname = iqn.x\n"
			 "[lun 0]\nbackend = rbd\npath = rbd/img\n"
			 "rbd_namespace = ns2\nrbd_client_id = gw\n"
			 "rbd_conf = /etc/ceph/c.conf\nrbd_op_timeout = 0\n"
			 "write_through = yes\nrbd_shared_pr = no\n"
			 "[lun 1]\nbackend = rbd\npath = rbd/img2\noffline = yes\n");
	const struct scsitgtd_lun *l0 = scsitgtd_config_find_lun(&c1->targets[0], 0);
	const struct scsitgtd_lun *l1 = scsitgtd_config_find_lun(&c1->targets[0], 1);

	(void)state;
	assert_int_equal(l0->backend, SCSITGTD_BACKEND_RBD);
	assert_string_equal(l0->path, "rbd/img");
	assert_string_equal(l0->rbd_namespace, "ns1");
	assert_string_equal(l0->rbd_client_id, "gw");
	assert_string_equal(l0->rbd_conf, "/etc/ceph/c.conf");
	assert_int_equal(l0->rbd_op_timeout, 0);
	assert_true(l0->write_through);
	assert_null(l1->rbd_namespace);
	assert_int_equal(l1->rbd_op_timeout, -1);
	/* Reservations are shared through RADOS unless the LUN says no. */
	assert_false(l0->rbd_shared_pr);
	assert_true(l1->rbd_shared_pr);
	/* Another namespace is another image; offline changes in place. */
	assert_true(scsitgtd_lun_needs_recreate(l0, scsitgtd_config_find_lun(&c2->targets[0], 0)));
	assert_false(scsitgtd_lun_needs_recreate(l1, scsitgtd_config_find_lun(&c2->targets[0], 1)));
	roundtrip(c1);
	roundtrip(c2);
	scsitgtd_config_free(c1);
	scsitgtd_config_free(c2);
}

/* rbd_gateway*: a target that is one gateway of its RBD LUN's image (docs/rbd.md). */
static void test_rbd_gateway(void **state)
{
	static const char lun[] = "[lun 0]\nbackend = rbd\npath = rbd/img\n";
	struct scsitgtd_config *c1 =
		parse_ok("[portal]\ntpgt = 2\n"
			 "[target]\nname = iqn.x:gw\nrbd_gateway = 2\n"
			 "rbd_gateway_ports = 2 7\nrbd_gateway_peer = 1\n"
			 "rbd_gateway_peer = 3:9\nrbd_gateway_preferred = yes\n"
			 "rbd_gateway_holddown_ms = 0\nrbd_gateway_probe_ms = 250\n"
			 "[lun 0]\nbackend = rbd\npath = rbd/img\n"
			 "[target]\nname = iqn.x:plain\n"
			 "[lun 0]\nbackend = rbd\npath = rbd/img\n");
	struct scsitgtd_config *c2 = parse_ok("[target]\nname = iqn.x:gw\nrbd_gateway = 1\n"
					      "[lun 0]\nbackend = rbd\npath = rbd/img\n");
	const struct scsitgtd_gateway *g = &c1->targets[0].gw;
	char text[512];

	(void)state;
	assert_int_equal(g->group, 2);
	assert_int_equal(g->nports, 2);
	assert_int_equal(g->ports[0], 2);
	assert_int_equal(g->ports[1], 7);
	assert_int_equal(g->npeers, 2);
	assert_int_equal(g->peer_groups[0], 1);
	assert_int_equal(g->peer_ports[0], 1); /* PORT defaults to GROUP */
	assert_int_equal(g->peer_groups[1], 3);
	assert_int_equal(g->peer_ports[1], 9);
	assert_true(g->preferred);
	assert_int_equal(g->holddown_ms, 0);
	assert_int_equal(g->probe_ms, 250);
	/* Not a gateway: group 0, the library's timings. */
	assert_int_equal(c1->targets[1].gw.group, 0);
	assert_int_equal(c1->targets[1].gw.holddown_ms, -1);
	assert_int_equal(c2->targets[0].gw.probe_ms, -1);
	assert_int_equal(c2->targets[0].gw.nports, 0);
	assert_false(scsitgtd_gateway_equal(g, &c2->targets[0].gw));
	assert_true(scsitgtd_gateway_equal(g, g));
	roundtrip(c1);
	roundtrip(c2);
	scsitgtd_config_free(c1);
	scsitgtd_config_free(c2);

	/* One RBD LUN, no ALUA of its own; keys only with rbd_gateway; values in range. */
	parse_bad("[target]\nname = iqn.x\nrbd_gateway = 1\n", "line 3:", "exactly one LUN");
	parse_bad("[target]\nname = iqn.x\nrbd_gateway = 1\n[lun 0]\nbackend = ram\n"
		  "size = 1M\n",
		  "line 3:", "backend = rbd");
	snprintf(text, sizeof(text),
		 "[target]\nname = iqn.x\nrbd_gateway = 1\n%s[lun 1]\n"
		 "backend = rbd\npath = rbd/i2\n",
		 lun);
	parse_bad(text, "line 3:", "exactly one LUN");
	snprintf(text, sizeof(text), "[target]\nname = iqn.x\nrbd_gateway = 1\nalua = explicit\n%s",
		 lun);
	parse_bad(text, "line 3:", "remove alua");
	snprintf(text, sizeof(text),
		 "[target]\nname = iqn.x\nrbd_gateway = 1\n%s"
		 "[alua_group 1]\nports = 1\n",
		 lun);
	parse_bad(text, "line 3:", "remove alua");
	snprintf(text, sizeof(text), "[target]\nname = iqn.x\nrbd_gateway_peer = 2\n%s", lun);
	parse_bad(text, "line 1:", "need rbd_gateway = GROUP");
	snprintf(text, sizeof(text), "[target]\nname = iqn.x\nrbd_gateway_probe_ms = 100\n%s", lun);
	parse_bad(text, "line 1:", "need rbd_gateway = GROUP");
	snprintf(text, sizeof(text),
		 "[target]\nname = iqn.x\nrbd_gateway = 2\n"
		 "rbd_gateway_peer = 2\n%s",
		 lun);
	parse_bad(text, "line 3:", "own group");
	parse_bad("[target]\nname = iqn.x\nrbd_gateway = 0\n", "line 3:", "1..65535");
	parse_bad("[target]\nname = iqn.x\nrbd_gateway = 1\nrbd_gateway_peer = 2\n"
		  "rbd_gateway_peer = 2:5\n",
		  "line 5:", "listed twice");
	parse_bad("[target]\nname = iqn.x\nrbd_gateway_peer = 2:\n", "line 3:", "GROUP[:PORT]");
	parse_bad("[target]\nname = iqn.x\nrbd_gateway_peer = x\n", "line 3:", "GROUP[:PORT]");
	parse_bad("[target]\nname = iqn.x\nrbd_gateway_peer = 70000\n", "line 3:", "GROUP[:PORT]");
	parse_bad("[target]\nname = iqn.x\nrbd_gateway_ports = 1 1\n", "line 3:", "listed twice");
	parse_bad("[target]\nname = iqn.x\nrbd_gateway_ports = ,\n", "line 3:", "one or more");
	parse_bad("[target]\nname = iqn.x\nrbd_gateway_probe_ms = 5\n", "line 3:", "10..60000");
	parse_bad("[target]\nname = iqn.x\nrbd_gateway_preferred = maybe\n",
		  "line 3:", "yes or no");
	parse_bad("[target]\nname = iqn.x\nrbd_gateway = 1\nrbd_gateway = 2\n",
		  "line 4:", "given twice");
}

static void test_access_srp_limits(void **state)
{
	static const char text[] = "[engine]\n"
				   "discovery_chap = disc:disc-secret-0001\n"
				   "discovery_mutual_chap = tdisc:tdisc-secret-01\n"
				   "workers = auto\n"
				   "conn_workers = no\n"
				   "drain_timeout_ms = 2000\n"
				   "logout_timeout_ms = 500\n"
				   "async_events = luns_changed, other\n"
				   "[portal]\n"
				   "transport = iser\n"
				   "max_connections_per_initiator = 4\n"
				   "rdma_buffer = 16M\n"
				   "[target]\n"
				   "name = iqn.2024-01.org.example:a\n"
				   "address = 192.0.2.0/24\n"
				   "address = 2001:db8::/32\n"
				   "initiator_address = iqn.1994-05.com.redhat:c1 127.0.0.1\n"
				   "max_sessions = 8\n"
				   "max_lun_commands = 0\n"
				   "async_events = none\n"
				   "[srp]\n"
				   "ioc_guid = 0x0002c90300a1b2c3\n"
				   "id_ext = 7\n"
				   "port = 5556\n"
				   "queue_size = 64\n"
				   "immediate_data = no\n"
				   "aer = yes\n"
				   "rel_port_id = 300\n"
				   "[lun 0]\n"
				   "backend = null\n"
				   "size = 1G\n"
				   "physical_block_exponent = 3\n"
				   "claim_spc4 = yes\n"
				   "visible_to = iqn.1994-05.com.redhat:c1\n"
				   "visible_to = iqn.1994-05.com.redhat:c2\n"
				   "fault = delay=250@read+write;hang@flush:skip=2\n"
				   "[lun 1]\n"
				   "backend = null\n"
				   "size = 1G\n";
	struct scsitgtd_config *cfg = parse_ok(text);
	const struct scsitgtd_target *t = &cfg->targets[0];
	const struct scsitgtd_lun *l0 = &t->luns[0], *l1 = &t->luns[1];

	(void)state;
	assert_int_equal(cfg->workers, -1);
	assert_int_equal(cfg->conn_workers, 0);
	assert_string_equal(cfg->discovery_user, "disc");
	assert_string_equal(cfg->discovery_secret, "disc-secret-0001");
	assert_string_equal(cfg->discovery_mutual_user, "tdisc");
	assert_int_equal(cfg->drain_timeout_ms, 2000);
	assert_int_equal(cfg->params.v[SCSITGTD_P_LOGOUT_TIMEOUT_MS], 500);
	assert_int_equal(cfg->params.v[SCSITGTD_P_ASYNC_EVENTS], 0x5);
	assert_int_equal(cfg->portals[0].max_connections_per_initiator, 4);
	assert_int_equal(cfg->portals[0].rdma_buffer, 16u << 20);
	assert_int_equal(t->naddresses, 3);
	assert_non_null(scsitgtd_config_find_address(t, NULL, "2001:db8::/32"));
	assert_null(scsitgtd_config_find_address(t, NULL, "127.0.0.1"));
	assert_non_null(scsitgtd_config_find_address(t, "iqn.1994-05.com.redhat:c1", "127.0.0.1"));
	assert_int_equal(t->max_sessions, 8);
	assert_int_equal(t->max_lun_commands, 0);
	assert_true(t->params.set & (1u << SCSITGTD_P_ASYNC_EVENTS));
	assert_int_equal(t->params.v[SCSITGTD_P_ASYNC_EVENTS], 0);
	assert_int_equal(t->nsrps, 1);
	assert_int_equal(t->srps[0].ioc_guid, 0x0002c90300a1b2c3ull);
	assert_int_equal(t->srps[0].id_ext, 7);
	assert_int_equal(t->srps[0].port, 5556);
	assert_string_equal(t->srps[0].address, "0.0.0.0");
	assert_int_equal(t->srps[0].immediate_data, 0);
	assert_int_equal(t->srps[0].aer, 1);
	assert_int_equal(t->srps[0].rel_port_id, 300);
	assert_int_equal(t->srps[0].max_channels, 0);
	assert_int_equal(l0->physical_block_exponent, 3);
	assert_int_equal(l1->physical_block_exponent, -1);
	assert_true(l0->flags & SCSITGTD_LUN_CLAIM_SPC4);
	assert_string_equal(l0->fault, "delay=250@read+write;hang@flush:skip=2");
	assert_int_equal(l0->fault_line, 36);
	assert_null(l1->fault);
	assert_true(scsitgtd_lun_needs_recreate(l0, l1));
	assert_true(scsitgtd_target_masks_luns(t));
	assert_true(scsitgtd_lun_visible_to(l0, "iqn.1994-05.com.redhat:c2"));
	assert_false(scsitgtd_lun_visible_to(l0, "iqn.1994-05.com.redhat:c3"));
	assert_true(scsitgtd_lun_visible_to(l1, "iqn.1994-05.com.redhat:c3"));
	assert_true(scsitgtd_srp_equal(&t->srps[0], &t->srps[0]));
	roundtrip(cfg);
	scsitgtd_config_free(cfg);

	cfg = parse_ok("[engine]\nworkers = 0\n[target]\nname = iqn.x\n");
	assert_int_equal(cfg->workers, 0);
	assert_int_equal(cfg->conn_workers, -1);
	assert_false(scsitgtd_target_masks_luns(&cfg->targets[0]));
	scsitgtd_config_free(cfg);
	cfg = parse_ok("[engine]\nworkers = 2\nconn_workers = yes\n");
	assert_int_equal(cfg->conn_workers, 1);
	roundtrip(cfg);
	scsitgtd_config_free(cfg);
	cfg = parse_ok("");
	assert_int_equal(cfg->workers, -2);
	assert_int_equal(cfg->conn_workers, -1);
	scsitgtd_config_free(cfg);

	parse_bad("[engine]\nworkers = many\n", "line 2:", "auto or a number 0..256");
	parse_bad("[engine]\ndiscovery_chap = u:short\n", "line 2:", "12..256");
	parse_bad("\n[engine]\ndiscovery_chap = u:same-secret-1\n"
		  "discovery_mutual_chap = t:same-secret-1\n",
		  "line 2:", "other than discovery_chap");
	parse_bad("[engine]\nworkers = 257\n", "line 2:", "0..256");
	parse_bad("[engine]\nconn_workers = maybe\n", "line 2:", "yes or no");
	parse_bad("[engine]\nasync_events = luns\n", "line 2:", "unknown event \"luns\"");
	parse_bad("[engine]\nasync_events =\n", "line 2:", "list of events");
	parse_bad("[portal]\nrdma_buffer = 16M\n", "line 1:", "only for transport = iser");
	parse_bad("[portal]\ntransport = iser\nrdma_buffer = 1K\n", "line 3:", "1M..64G");
	parse_bad("[target]\nname = iqn.x\naddress = 300.0.0.1\n", "line 3:", "ADDRESS[/PREFIX]");
	parse_bad("[target]\nname = iqn.x\naddress = 10.0.0.0/33\n", "line 3:", "ADDRESS[/PREFIX]");
	parse_bad("[target]\nname = iqn.x\naddress = ::1/129\n", "line 3:", "ADDRESS[/PREFIX]");
	parse_bad("[target]\nname = iqn.x\naddress = 10.0.0.0/8\naddress = 10.0.0.0/8\n",
		  "line 4:", "listed twice");
	parse_bad("[target]\nname = iqn.x\ninitiator_address = 10.0.0.1\n",
		  "line 3:", "INITIATOR-NAME ADDRESS");
	parse_bad("[target]\nname = iqn.x\ninitiator_address = bad! 10.0.0.1\n",
		  "line 3:", "invalid initiator name");
	parse_bad("[target]\nname = iqn.x\nmax_sessions = -1\n", "line 3:", "0..1000000");
	parse_bad("[srp]\n", "line 1:", "[srp] before any [target]");
	parse_bad("[target]\nname = iqn.x\n[srp]\nport = 1\n", "line 3:", "ioc_guid missing");
	parse_bad("[target]\nname = iqn.x\n[srp x]\n", "line 3:", "takes no argument");
	parse_bad("[target]\nname = iqn.x\n[srp]\nioc_guid = 0\n", "line 4:", "must not be 0");
	parse_bad("[target]\nname = iqn.x\n[srp]\nioc_guid = 0x12345678901234567\n",
		  "line 4:", "64-bit number");
	parse_bad("[target]\nname = iqn.x\n[srp]\nioc_guid = 0xg\n", "line 4:", "64-bit number");
	parse_bad("[target]\nname = iqn.x\n[srp]\nioc_guid = 1\nqueue_size = 1\n",
		  "line 5:", "2..3275");
	parse_bad("[target]\nname = iqn.x\n[srp]\nioc_guid = 1\naddress = any\n",
		  "line 5:", "numeric");
	parse_bad("[target]\nname = iqn.x\n[srp]\nioc_guid = 1\n[target]\nname = iqn.y\n"
		  "[srp]\nioc_guid = 2\n",
		  "line 7:", "used by the [srp] on line 3");
	parse_bad("[target]\nname = iqn.x\n[lun 0]\nbackend = null\nsize = 1M\n"
		  "physical_block_exponent = 9\n",
		  "line 6:", "0..8");
	parse_bad("[target]\nname = iqn.x\n[lun 0]\nvisible_to = iqn.a\nvisible_to = iqn.a\n",
		  "line 5:", "listed twice");
	parse_bad("[target]\nname = iqn.x\n[lun 0]\nvisible_to = no way\n",
		  "line 4:", "invalid initiator name");
	parse_bad("[target]\nname = iqn.x\n[lun 0]\nfault =\n", "line 4:", "empty");
}

/* Block Limits (SBC-4 §6.6.4) and NAA 6 / UUID designators (SPC-5 §7.7.6) of a LUN: parsed,
 * checked against each other as scsitgt_lun_create() does, re-creating on change, saved. */
static void test_block_limits_ident(void **state)
{
	static const char base[] = "[target]\nname = iqn.x\n[lun 0]\nbackend = ram\nsize = 1M\n";
	static const uint8_t naa[16] = { 0x60, 0x01, 0x40, 0x51, 0x23, 0x45, 0x67, 0x89,
					 0xab, 0xcd, 0xef, 0x01, 0x23, 0x45, 0x67, 0x89 };
	static const uint8_t uuid[16] = { 0x12, 0x3e, 0x45, 0x67, 0xe8, 0x9b, 0x42, 0xd3,
					  0xa4, 0x56, 0x42, 0x66, 0x14, 0x17, 0x40, 0x00 };
	struct scsitgtd_config *c1 = parse_ok("[target]\nname = iqn.x\n"
					      "[lun 0]\nbackend = ram\nsize = 1M\nthin = yes\n"
					      "max_transfer_blocks = 2048\n"
					      "optimal_transfer_blocks = 128\n"
					      "optimal_transfer_granularity = 8\n"
					      "max_unmap_blocks = 4294967295\n"
					      "max_unmap_descriptors = 16\n"
					      "unmap_granularity = 8\n"
					      "unmap_granularity_alignment = 1\n"
					      "max_write_same_blocks = 4294967295\n"
					      "naa_extended = 6001405123456789abcdef0123456789\n"
					      "uuid = 123E4567-e89b-42d3-a456-426614174000\n"
					      "[lun 1]\nbackend = ram\nsize = 1M\n");
	struct scsitgtd_config *c2 = parse_ok("[target]\nname = iqn.x\n"
					      "[lun 0]\nbackend = ram\nsize = 1M\n"
					      "[lun 1]\nbackend = ram\nsize = 1M\n"
					      "uuid = 123e4567-e89b-42d3-a456-426614174000\n");
	const struct scsitgtd_lun *l0 = scsitgtd_config_find_lun(&c1->targets[0], 0);
	const struct scsitgtd_lun *l1 = scsitgtd_config_find_lun(&c1->targets[0], 1);
	char text[512];

	(void)state;
	assert_int_equal(l0->max_transfer_blocks, 2048);
	assert_int_equal(l0->optimal_transfer_blocks, 128);
	assert_int_equal(l0->optimal_transfer_granularity, 8);
	assert_int_equal(l0->max_unmap_blocks, 4294967295u);
	assert_int_equal(l0->max_unmap_descriptors, 16);
	assert_int_equal(l0->unmap_granularity, 8);
	assert_int_equal(l0->unmap_granularity_alignment, 1);
	assert_int_equal(l0->max_write_same_blocks, 4294967295u);
	assert_memory_equal(l0->naa_extended, naa, 16);
	assert_memory_equal(l0->uuid, uuid, 16);
	/* Unset: 0 and all zeros, the library's defaults. */
	assert_int_equal(l1->max_transfer_blocks, 0);
	assert_int_equal(l1->max_write_same_blocks, 0);
	assert_true(l1->uuid[0] == 0 && l1->naa_extended[0] == 0);
	/* Create-time options: any change re-creates the LUN. */
	assert_true(scsitgtd_lun_needs_recreate(l0, scsitgtd_config_find_lun(&c2->targets[0], 0)));
	assert_true(scsitgtd_lun_needs_recreate(l1, scsitgtd_config_find_lun(&c2->targets[0], 1)));
	assert_false(scsitgtd_lun_needs_recreate(l0, l0));
	roundtrip(c1);
	roundtrip(c2);
	scsitgtd_config_free(c1);
	scsitgtd_config_free(c2);

	/* One key at a time: a value out of range or malformed, at its line. */
	static const struct {
		const char *key, *needle;
	} bad[] = {
		{ "max_transfer_blocks = 0", "1..16384" },
		{ "max_transfer_blocks = 16385", "1..16384" },
		{ "optimal_transfer_granularity = 65536", "1..65535" },
		{ "max_write_same_blocks = 4294967296", "1..4294967295" },
		{ "max_unmap_blocks = x", "1..4294967295" },
		{ "naa_extended = 5001405123456789abcdef0123456789", "starting with 6" },
		{ "naa_extended = 6001405123456789abcdef012345678", "32 hexadecimal" },
		{ "naa_extended = 6001405123456789abcdef01234567890", "32 hexadecimal" },
		{ "naa_extended = 6001405123456789abcdef012345678g", "32 hexadecimal" },
		{ "uuid = 123e4567e89b42d3a456426614174000", "expected a UUID" },
		{ "uuid = 123e4567-e89b-42d3-a456-42661417400", "expected a UUID" },
		{ "uuid = 123e4567-e89b-42d3-a456-42661417400g", "expected a UUID" },
		{ "uuid = 123e4567-e89b-42d3-c456-426614174000", "RFC 4122" },
		{ "uuid = 123e4567-e89b-02d3-a456-426614174000", "RFC 4122" },
		{ "uuid = 123e4567-e89b-92d3-a456-426614174000", "RFC 4122" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "%s%s\n", base, bad[i].key);
		parse_bad(text, "line 6:", bad[i].needle);
	}
	/* Values against each other and the library's limits (what scsitgt_lun_create() refuses
	 * with -EINVAL), reported at the section's line. */
	static const struct {
		const char *keys, *needle;
	} contra[] = {
		{ "block_size = 4096\nmax_transfer_blocks = 2049\n", "above 2048" },
		{ "max_transfer_blocks = 64\noptimal_transfer_blocks = 128\n",
		  "optimal_transfer_blocks above" },
		{ "max_transfer_blocks = 64\noptimal_transfer_granularity = 128\n",
		  "optimal_transfer_granularity above" },
		{ "optimal_transfer_blocks = 12\noptimal_transfer_granularity = 8\n",
		  "not a multiple" },
		{ "max_unmap_blocks = 8\n", "need thin = yes" },
		{ "unmap_granularity = 8\n", "need thin = yes" },
		{ "thin = yes\nunmap_granularity_alignment = 1\n", "must be below" },
		{ "thin = yes\nunmap_granularity = 8\nunmap_granularity_alignment = 8\n",
		  "must be below" },
	};
	for (size_t i = 0; i < sizeof(contra) / sizeof(contra[0]); i++) {
		snprintf(text, sizeof(text), "%s%s", base, contra[i].keys);
		parse_bad(text, "line 3:", contra[i].needle);
	}
}

/* Every error of a file at once, in the order of its lines; a refused section's keys are
 * skipped (not reported against another section); a syntax error does not end the parse. */
static void test_all_errors(void **state)
{
	static const char text[] = "[engine]\n"		 /* 1 */
				   "bogus = 1\n"	 /* 2 */
				   "[target]\n"		 /* 3 */
				   "name = iqn.x\n"	 /* 4 */
				   "[lun 0]\n"		 /* 5 */
				   "backend = ram\n"	 /* 6 */
				   "thin = maybe\n"	 /* 7 */
				   "size = 8M\n"	 /* 8 */
				   "[lun abc]\n"	 /* 9 */
				   "nonsense = 1\n"	 /* 10: skipped */
				   "this is not ini\n"	 /* 11 */
				   "[lun 2\n"		 /* 12 */
				   "backend = nothing\n" /* 13: skipped */
				   "[lun 3]\n"		 /* 14 */
				   "size = 1M\n";	 /* 15; EOF: 14 */
	struct scsitgtd_config *cfg = (struct scsitgtd_config *)1;
	char err[2048];
	const char *want[] = {
		"line 2: unknown key \"bogus\" in [engine]",   "line 7: ",
		"line 9: [lun N]: N must be a LUN number",     "line 11: expected \"key = value\"",
		"line 12: section header without closing ']'", "line 14: [lun 3]: backend missing"
	};
	const char *e = err;

	(void)state;
	assert_int_equal(scsitgtd_config_parse(text, strlen(text), &cfg, err, sizeof(err)),
			 -EINVAL);
	assert_null(cfg);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		size_t n = strcspn(e, "\n");

		if (strncmp(e, want[i], strlen(want[i])) != 0)
			fail_msg("error %zu: \"%.*s\", expected \"%s...\" in:\n%s", i, (int)n, e,
				 want[i], err);
		e += n + (e[n] == '\n');
	}
	if (*e)
		fail_msg("more errors than expected: \"%s\" in:\n%s", e, err);
	/* A section with a wrong key is not checked whole (no "size missing" after a bad size). */
	assert_int_equal(scsitgtd_config_parse("[target]\nname = iqn.x\n[lun 0]\nbackend = ram\n"
					       "size = lots\n",
					       56, &cfg, err, sizeof(err)),
			 -EINVAL);
	assert_null(strchr(err, '\n'));
	assert_memory_equal(err, "line 5: size", 12);
	/* A small buffer keeps the first errors whole, cut at its end, terminated. */
	assert_int_equal(scsitgtd_config_parse(text, strlen(text), &cfg, err, 40), -EINVAL);
	assert_int_equal(strlen(err), 39);
	assert_memory_equal(err, "line 2: unknown key", 19);
	/* Past SCSITGTD_MAX_ERRORS: counted. */
	{
		char many[4096] = "[engine]\n";

		for (int i = 0; i < SCSITGTD_MAX_ERRORS + 5; i++)
			strcat(many, "x = 1\n");
		assert_int_equal(scsitgtd_config_parse(many, strlen(many), &cfg, err, sizeof(err)),
				 -EINVAL);
		assert_non_null(strstr(err, "\n(5 more errors not listed)"));
		assert_non_null(strstr(err, "line 2: unknown key \"x\" in [engine]"));
	}
	/* Long lines and NUL bytes are noted and the parse goes on. */
	{
		char t[SCSITGTD_MAX_LINE + 100];
		size_t n;

		n = (size_t)snprintf(t, sizeof(t), "[engine]\nlog_level = ");
		memset(t + n, 'a', SCSITGTD_MAX_LINE);
		n += SCSITGTD_MAX_LINE;
		memcpy(t + n, "\nx\0y = 1\nz = 2\n", 16);
		n += 16;
		assert_int_equal(scsitgtd_config_parse(t, n, &cfg, err, sizeof(err)), -EINVAL);
		if (strstr(err, "line 2: line longer than") != err ||
		    strstr(err, "\nline 3: NUL byte") == NULL ||
		    strstr(err, "\nline 4: unknown key \"z\"") == NULL)
			fail_msg("%s", err);
	}
}

/*
 * [engine]'s iSCSI parameters are every target's defaults and a [target]'s own keys win
 * (scsitgtd_params_merge(), docs/scsitgtd.md "iSCSI parameters"): every key, as the file
 * gives it, reaches the targets that do not set it.
 */
static void test_params_merge(void **state)
{
	static const char text[] = "[engine]\n"
				   "max_recv_data_segment_length = 16K\n"
				   "max_burst_length = 128K\n"
				   "first_burst_length = 32K\n"
				   "immediate_data = no\n"
				   "initial_r2t = yes\n"
				   "max_outstanding_r2t = 4\n"
				   "header_digest = crc32c\n"
				   "data_digest = none\n"
				   "default_time2wait = 7\n"
				   "default_time2retain = 9\n"
				   "queue_depth = 8\n"
				   "nop_interval_ms = 0\n"
				   "nop_timeout_ms = 1234\n"
				   "login_timeout_ms = 2345\n"
				   "chap_algorithms = sha256\n"
				   "max_write_buffer = 1M\n"
				   "logout_timeout_ms = 500\n"
				   "async_events = other\n"
				   "[target]\n"
				   "name = iqn.2024-01.org.example:plain\n"
				   "[target]\n"
				   "name = iqn.2024-01.org.example:own\n"
				   "queue_depth = 64\n"
				   "header_digest = any\n"
				   "logout_timeout_ms = 10000\n"
				   "async_events = none\n"
				   "immediate_data = yes\n";
	static const char alone[] = "[target]\n"
				    "name = iqn.2024-01.org.example:alone\n"
				    "queue_depth = 32\n";
	static const uint64_t engine_v[SCSITGTD_P_COUNT] = {
		[SCSITGTD_P_MAX_RECV_DATA_SEGMENT_LENGTH] = 16384,
		[SCSITGTD_P_MAX_BURST_LENGTH] = 131072,
		[SCSITGTD_P_FIRST_BURST_LENGTH] = 32768,
		[SCSITGTD_P_IMMEDIATE_DATA] = 0,
		[SCSITGTD_P_INITIAL_R2T] = 1,
		[SCSITGTD_P_MAX_OUTSTANDING_R2T] = 4,
		[SCSITGTD_P_HEADER_DIGEST] = 2,
		[SCSITGTD_P_DATA_DIGEST] = 1,
		[SCSITGTD_P_DEFAULT_TIME2WAIT] = 7,
		[SCSITGTD_P_DEFAULT_TIME2RETAIN] = 9,
		[SCSITGTD_P_QUEUE_DEPTH] = 8,
		[SCSITGTD_P_NOP_INTERVAL_MS] = 0,
		[SCSITGTD_P_NOP_TIMEOUT_MS] = 1234,
		[SCSITGTD_P_LOGIN_TIMEOUT_MS] = 2345,
		[SCSITGTD_P_CHAP_ALGORITHMS] = 0x4,
		[SCSITGTD_P_MAX_WRITE_BUFFER] = 1048576,
		[SCSITGTD_P_LOGOUT_TIMEOUT_MS] = 500,
		[SCSITGTD_P_ASYNC_EVENTS] = 0x4,
	};
	const uint32_t all = (1u << SCSITGTD_P_COUNT) - 1;
	const uint32_t own = (1u << SCSITGTD_P_QUEUE_DEPTH) | (1u << SCSITGTD_P_HEADER_DIGEST) |
			     (1u << SCSITGTD_P_LOGOUT_TIMEOUT_MS) |
			     (1u << SCSITGTD_P_ASYNC_EVENTS) | (1u << SCSITGTD_P_IMMEDIATE_DATA);
	struct scsitgtd_config *cfg = parse_ok(text), *c2 = parse_ok(alone);
	struct scsitgtd_params m;

	(void)state;
	/* Every parameter key is in [engine] above: one added to the file needs a line here. */
	assert_int_equal(cfg->params.set, all);
	for (unsigned int i = 0; i < SCSITGTD_P_COUNT; i++)
		assert_int_equal(cfg->params.v[i], engine_v[i]);

	/* A target without keys of its own: [engine]'s, every one. */
	assert_int_equal(cfg->targets[0].params.set, 0);
	scsitgtd_params_merge(&m, &cfg->params, &cfg->targets[0].params);
	assert_true(scsitgtd_params_equal(&m, &cfg->params));
	for (unsigned int i = 0; i < SCSITGTD_P_COUNT; i++) {
		if (!(m.set & (1u << i)) || m.v[i] != engine_v[i])
			fail_msg("%s: not [engine]'s", scsitgtd_param_name((enum scsitgtd_param)i));
	}

	/* Its own keys win (values that are the library defaults, and 0, included); the others
	 * are [engine]'s. */
	assert_int_equal(cfg->targets[1].params.set, own);
	scsitgtd_params_merge(&m, &cfg->params, &cfg->targets[1].params);
	assert_int_equal(m.set, all);
	for (unsigned int i = 0; i < SCSITGTD_P_COUNT; i++) {
		uint64_t want = (own & (1u << i)) ? cfg->targets[1].params.v[i] : engine_v[i];

		if (m.v[i] != want)
			fail_msg("%s: %llu, expected %llu",
				 scsitgtd_param_name((enum scsitgtd_param)i),
				 (unsigned long long)m.v[i], (unsigned long long)want);
	}
	assert_int_equal(m.v[SCSITGTD_P_QUEUE_DEPTH], 64);
	assert_int_equal(m.v[SCSITGTD_P_HEADER_DIGEST], 0);
	assert_int_equal(m.v[SCSITGTD_P_LOGOUT_TIMEOUT_MS], 10000);
	assert_int_equal(m.v[SCSITGTD_P_ASYNC_EVENTS], 0);
	assert_int_equal(m.v[SCSITGTD_P_IMMEDIATE_DATA], 1);
	roundtrip(cfg);

	/* No [engine] keys: the target's alone, the rest unset (the library's defaults). */
	scsitgtd_params_merge(&m, &c2->params, &c2->targets[0].params);
	assert_int_equal(m.set, 1u << SCSITGTD_P_QUEUE_DEPTH);
	assert_int_equal(m.v[SCSITGTD_P_QUEUE_DEPTH], 32);
	assert_true(scsitgtd_params_equal(&m, &c2->targets[0].params));
	scsitgtd_config_free(cfg);
	scsitgtd_config_free(c2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full),	     cmocka_unit_test(test_empty),
		cmocka_unit_test(test_errors),	     cmocka_unit_test(test_binary_and_limits),
		cmocka_unit_test(test_recreate),     cmocka_unit_test(test_rbd),
		cmocka_unit_test(test_rbd_gateway),  cmocka_unit_test(test_access_srp_limits),
		cmocka_unit_test(test_all_errors),   cmocka_unit_test(test_block_limits_ident),
		cmocka_unit_test(test_params_merge),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
