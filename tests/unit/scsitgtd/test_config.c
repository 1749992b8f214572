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

/* Parse @text expecting a refusal whose message starts with @prefix ("line N: ..."). */
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

static void test_full(void **state)
{
	static const char text[] =
		"# comment\n"
		"; another\n"
		"[engine]\n"
		"log_level = debug\n"
		"\n"
		"[portal]\n"
		"address = 127.0.0.1\n"
		"port = 3360\n"
		"tpgt = 7\n"
		"[portal]\n"
		"[target iqn.2024-01.org.example:a]\n"
		"  alias =  Disk A  \n"
		"initiator = iqn.1994-05.com.redhat:c1\n"
		"initiator = iqn.1994-05.com.redhat:c2\n"
		"chap = user:secret:with:colons#and hash\n"
		"mutual_chap = tgt:tsecret-123456\n"
		"[lun 3]\n"
		"backend = ram\n"
		"size = 64M\n"
		"block_size = 4096\n"
		"read_only = yes\n"
		"thin = true\n"
		"offline = on\n"
		"vendor = ACME\n"
		"pr_file = /var/lib/pr/lun3\n"
		"[lun 0]\r\n"
		"backend = file\r\n"
		"path = /tmp/disk.img\r\n"
		"[target iqn.2024-01.org.example:b]\n"
		"[lun 16383]\n"
		"backend = null\n"
		"size = 2T";
	struct scsitgtd_config *cfg = parse_ok(text);
	const struct scsitgtd_target *a, *b;
	const struct scsitgtd_lun *l;

	(void)state;
	assert_int_equal(cfg->log_level, 7);
	assert_int_equal(cfg->nportals, 2);
	assert_string_equal(cfg->portals[0].address, "127.0.0.1");
	assert_int_equal(cfg->portals[0].port, 3360);
	assert_int_equal(cfg->portals[0].tpgt, 7);
	assert_string_equal(cfg->portals[1].address, "0.0.0.0");
	assert_int_equal(cfg->portals[1].port, 3260);
	assert_int_equal(cfg->portals[1].tpgt, 1);
	assert_int_equal(cfg->ntargets, 2);
	a = scsitgtd_config_find_target(cfg, "iqn.2024-01.org.example:a");
	assert_non_null(a);
	assert_string_equal(a->alias, "Disk A");
	assert_int_equal(a->ninitiators, 2);
	assert_string_equal(a->initiators[1], "iqn.1994-05.com.redhat:c2");
	/* The user ends at the first colon; the secret keeps the rest verbatim. */
	assert_string_equal(a->chap_user, "user");
	assert_string_equal(a->chap_secret, "secret:with:colons#and hash");
	assert_string_equal(a->mutual_user, "tgt");
	assert_int_equal(a->nluns, 2);
	l = scsitgtd_config_find_lun(a, 3);
	assert_non_null(l);
	assert_int_equal(l->backend, SCSITGTD_BACKEND_RAM);
	assert_int_equal(l->size, 64ull << 20);
	assert_int_equal(l->block_size, 4096);
	assert_int_equal(l->flags, SCSITGTD_LUN_READ_ONLY | SCSITGTD_LUN_THIN);
	assert_true(l->offline);
	assert_string_equal(l->vendor, "ACME");
	assert_string_equal(l->pr_file, "/var/lib/pr/lun3");
	assert_null(l->product);
	l = scsitgtd_config_find_lun(a, 0);
	assert_non_null(l);
	assert_int_equal(l->backend, SCSITGTD_BACKEND_FILE);
	assert_string_equal(l->path, "/tmp/disk.img");
	assert_null(scsitgtd_config_find_lun(a, 1));
	b = scsitgtd_config_find_target(cfg, "iqn.2024-01.org.example:b");
	assert_non_null(b);
	assert_int_equal(b->luns[0].id, 16383);
	assert_int_equal(b->luns[0].size, 2ull << 40);
	assert_null(scsitgtd_config_find_target(cfg, "iqn.2024-01.org.example:c"));
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
	assert_int_equal(scsitgtd_config_parse(NULL, 0, &cfg, NULL, 0), 0);
	scsitgtd_config_free(cfg);
	assert_int_equal(scsitgtd_config_parse("", 0, NULL, NULL, 0), -EINVAL);
}

static void test_errors(void **state)
{
	(void)state;
	parse_bad("key = v\n", "line 1:", "outside of any section");
	parse_bad("\n[bogus]\n", "line 2:", "unknown section [bogus]");
	parse_bad("[engine\n", "line 1:", "closing ']'");
	parse_bad("[engine]\nlog_level = loud\n", "line 2:", "log_level");
	parse_bad("[engine]\ncolour = red\n", "line 2:", "unknown key \"colour\"");
	parse_bad("[engine]\njust words\n", "line 2:", "key = value");
	parse_bad("[engine]\n = x\n", "line 2:", "empty key");
	parse_bad("[portal]\nport = 0\n", "line 2:", "port");
	parse_bad("[portal]\nport = 65536\n", "line 2:", "port");
	parse_bad("[portal]\nport = 12a\n", "line 2:", "port");
	parse_bad("[portal]\ntpgt = 0\n", "line 2:", "tpgt");
	parse_bad("[target]\n", "line 1:", "target name");
	parse_bad("[target bad name]\n", "line 1:", "target name");
	parse_bad("[target iqn.x]\n[target iqn.x]\n", "line 2:", "defined twice");
	parse_bad("[lun 0]\n", "line 1:", "before any [target NAME]");
	parse_bad("[target iqn.x]\n[lun 16384]\n", "line 2:", "LUN number");
	parse_bad("[target iqn.x]\n[lun -1]\n", "line 2:", "LUN number");
	parse_bad("[target iqn.x]\n[lun 99999999999999999999999]\n", "line 2:", "LUN number");
	parse_bad("[target iqn.x]\nchap = user\n", "line 2:", "user:secret");
	parse_bad("[target iqn.x]\nchap = :secret\n", "line 2:", "user:secret");
	parse_bad("[target iqn.x]\ninitiator = a b\n", "line 2:", "initiator name");
	parse_bad("[target iqn.x]\ninitiator = iqn.a\ninitiator = iqn.a\n", "line 3:", "twice");
	/* Section-wide checks name the line of the [lun] header. */
	parse_bad("[target iqn.x]\n[lun 0]\nsize = 1M\n", "line 2:", "backend missing");
	parse_bad("[target iqn.x]\n[lun 0]\nbackend = ram\n[lun 1]\n", "line 2:", "size missing");
	parse_bad("[target iqn.x]\n[lun 0]\nbackend = file\n", "line 2:", "path missing");
	parse_bad("[target iqn.x]\n[lun 0]\nbackend = null\nsize = 1M\npath = /x\n", "line 2:",
		  "only for the file backend");
	parse_bad("[target iqn.x]\n[lun 0]\nbackend = ram\nsize = 1000\n", "line 2:",
		  "multiple of the block size");
	parse_bad("[target iqn.x]\n[lun 0]\nbackend = ram\nsize = 8K\nblock_size = 4096\n"
		  "[lun 0]\n", "line 6:", "defined twice");
	parse_bad("[target iqn.x]\n[lun 0]\nbackend = tape\n", "line 3:", "ram, null or file");
	parse_bad("[target iqn.x]\n[lun 0]\nsize = 0\n", "line 3:", "size");
	parse_bad("[target iqn.x]\n[lun 0]\nsize = 99999999999T\n", "line 3:", "size");
	parse_bad("[target iqn.x]\n[lun 0]\nblock_size = 1024\n", "line 3:", "512 or 4096");
	parse_bad("[target iqn.x]\n[lun 0]\nthin = maybe\n", "line 3:", "yes or no");
	parse_bad("[target iqn.x]\n[lun 0]\nvendor = TOOLONGVENDOR\n", "line 3:", "1..8");
	parse_bad("[target iqn.x]\n[lun 0]\nspeed = fast\n", "line 3:", "unknown key");
}

static void test_binary_and_limits(void **state)
{
	struct scsitgtd_config *cfg = NULL;
	char err[128];
	char *big;
	size_t n = SCSITGTD_MAX_LINE + 10;

	(void)state;
	/* A NUL byte and an overlong line are refused, with their line. */
	assert_int_equal(scsitgtd_config_parse("[engine]\nlog\0_level = info\n", 27, &cfg, err,
					       sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "line 2: NUL byte in the text");
	big = malloc(n + 1);
	assert_non_null(big);
	memset(big, '#', n);
	big[n] = '\0';
	assert_int_equal(scsitgtd_config_parse(big, n, &cfg, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "line 1: line longer than"));
	free(big);
	/* A tiny error buffer is still terminated, and NULL works too. */
	assert_int_equal(scsitgtd_config_parse("x", 1, &cfg, err, 4), -EINVAL);
	assert_true(strlen(err) < 4);
	assert_int_equal(scsitgtd_config_parse("x", 1, &cfg, NULL, 0), -EINVAL);

	/* The portal cap. */
	{
		size_t len = (SCSITGTD_MAX_PORTALS + 1) * 9 + 1;
		char *t = malloc(len), *p = t;

		assert_non_null(t);
		for (int i = 0; i <= SCSITGTD_MAX_PORTALS; i++)
			p += sprintf(p, "[portal]\n");
		assert_int_equal(scsitgtd_config_parse(t, strlen(t), &cfg, err, sizeof(err)),
				 -EINVAL);
		assert_non_null(strstr(err, "too many portals"));
		free(t);
	}
}

static void test_recreate(void **state)
{
	struct scsitgtd_config *c1 = parse_ok("[target iqn.x]\n[lun 0]\nbackend = ram\nsize = 1M\n"
					      "[lun 1]\nbackend = ram\nsize = 1M\n");
	struct scsitgtd_config *c2 = parse_ok("[target iqn.x]\n[lun 0]\nbackend = ram\nsize = 2M\n"
					      "offline = yes\n"
					      "[lun 1]\nbackend = null\nsize = 1M\n");
	const struct scsitgtd_target *t1 = &c1->targets[0], *t2 = &c2->targets[0];

	(void)state;
	/* Size and offline change in place; a new backend needs a new LUN. */
	assert_false(scsitgtd_lun_needs_recreate(scsitgtd_config_find_lun(t1, 0),
						 scsitgtd_config_find_lun(t2, 0)));
	assert_true(scsitgtd_lun_needs_recreate(scsitgtd_config_find_lun(t1, 1),
						scsitgtd_config_find_lun(t2, 1)));
	scsitgtd_config_free(c1);
	scsitgtd_config_free(c2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_binary_and_limits),
		cmocka_unit_test(test_recreate),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
