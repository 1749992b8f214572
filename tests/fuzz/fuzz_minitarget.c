/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target of minitarget's command line (examples/minitarget_opts.c): the LUN specs
 * ("N:ram|null:SIZE", "N:file:PATH", "N:rbd:POOL/IMAGE", then ",flag..."), portals, peers,
 * credentials, CHAP algorithms and every numeric option. Each line of the input is one argv
 * element. The parser must refuse or accept, never crash, and what it accepts must be what
 * its usage says: the values in range, the strings terminated inside their fields, and
 * bs=512|4096 and the LUN number N spelled as such. The parser lives with the example, so
 * it is compiled into this target (tests/fuzz/meson.build).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "minitarget_opts.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ARGS 96

static bool terminated(const char *s, size_t size)
{
	return memchr(s, '\0', size) != NULL;
}

static bool all_digits(const char *s, size_t n)
{
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

/* What an accepted LUN holds, and that its spec says so (@arg: the spec, NULL: not known). */
static void check_lun(const struct minitarget_lun *l, const char *arg)
{
	const char *first;

	CHECK(l->bs == 512 || l->bs == 4096);
	CHECK(l->id <= 16383);
	CHECK(l->pbe <= 8);
	CHECK(l->rbd_timeout == -1 || (l->rbd_timeout >= 0 && l->rbd_timeout <= 86400));
	CHECK(terminated(l->path, sizeof(l->path)) && terminated(l->fault, sizeof(l->fault)));
	CHECK(terminated(l->rbd_ns, sizeof(l->rbd_ns)) && terminated(l->rbd_id, sizeof(l->rbd_id)));
	CHECK(terminated(l->rbd_conf, sizeof(l->rbd_conf)));
	CHECK(l->io_engine >= 0 && l->io_engine <= 2 && l->uring_async >= 0 && l->uring_async <= 2);
	switch (l->kind) {
	case MINITARGET_LUN_RAM:
	case MINITARGET_LUN_NULL:
		CHECK(l->size >= l->bs);
		break;
	case MINITARGET_LUN_FILE:
		CHECK(l->path[0] != '\0' && strchr(l->path, ',') == NULL);
		break;
	case MINITARGET_LUN_RBD: {
		const char *slash = strchr(l->path, '/');

		/* POOL/IMAGE: both non-empty, one slash. */
		CHECK(slash && slash != l->path && slash[1] && !strchr(slash + 1, '/'));
		break;
	}
	default:
		CHECK(0);
	}
	if (arg == NULL)
		return;
	/* The spec's tokens, as the parser splits them (empty ones skipped). */
	first = arg + strspn(arg, ",");
	for (const char *t = first, *e; *t; t = *e ? e + 1 : e) {
		size_t n;

		e = strchr(t, ',');
		if (e == NULL)
			e = t + strlen(t);
		n = (size_t)(e - t);
		if (n == 0)
			continue;
		if (t == first) {
			/* The first token: N, a colon. */
			CHECK(all_digits(t, strcspn(t, ":")));
		} else if (n >= 3 && strncmp(t, "bs=", 3) == 0) {
			CHECK((n == 6 && strncmp(t, "bs=512", 6) == 0) ||
			      (n == 7 && strncmp(t, "bs=4096", 7) == 0));
		}
	}
}

static void check_opts(const struct minitarget_opts *o)
{
	const long *in_range[] = { &o->drain_timeout, &o->tmf_timeout,	&o->logout_timeout,
				   &o->login_timeout, &o->nop_interval, &o->gw_holddown,
				   &o->gw_probe };

	CHECK(o->nportals >= 1 && o->nportals <= MINITARGET_MAX_ITEMS);
	CHECK(o->nluns >= 1 && o->nluns <= MINITARGET_MAX_ITEMS);
	CHECK(o->niser <= MINITARGET_MAX_ITEMS && o->nsrp <= MINITARGET_MAX_ITEMS);
	CHECK(o->ninit <= MINITARGET_MAX_ITEMS && o->nacl_addrs <= MINITARGET_MAX_ITEMS);
	CHECK(o->ninit_addrs <= MINITARGET_MAX_ITEMS && o->nmaps <= MINITARGET_MAX_ITEMS);
	CHECK(o->ngw_peers <= MINITARGET_MAX_PEERS);
	for (size_t i = 0; i < o->nluns; i++)
		check_lun(&o->luns[i], NULL);
	for (size_t i = 0; i < o->ngw_peers; i++)
		CHECK(o->gw_peers[i].group_id != 0 && o->gw_peers[i].rel_port_id != 0);
	for (size_t i = 0; i < sizeof(in_range) / sizeof(in_range[0]); i++)
		CHECK(*in_range[i] >= -1 && *in_range[i] <= 3600000);
	CHECK(o->alua_state >= -1 && o->alua_state <= 15);
	CHECK(o->tpgt >= 1 && o->tpgt <= 65535);
	CHECK(o->alua_group >= 0 && o->alua_group <= 65535);
	CHECK(o->conn_workers >= -1 && o->conn_workers <= 1);
	CHECK(o->srp_guid != 0 && o->iqn != NULL);
	CHECK(o->workers == SCSITGT_ENGINE_WORKERS_AUTO ||
	      (o->workers >= 0 && o->workers <= SCSITGT_ENGINE_WORKERS_MAX));
}

/* Every value parser on one argument. */
static void each_parser(const char *a)
{
	struct scsitgt_rbd_gateway_peer peer;
	struct minitarget_lun l;
	char host[64], user[32], secret[32];
	uint64_t sz;
	uint16_t port;

	if (minitarget_parse_lun(a, &l) == 0)
		check_lun(&l, a);
	if (minitarget_parse_portal(a, host, sizeof(host), &port) == 0)
		CHECK(host[0] != '\0' && terminated(host, sizeof(host)));
	if (minitarget_parse_peer(a, &peer) == 0)
		CHECK(peer.group_id != 0 && peer.rel_port_id != 0);
	if (minitarget_split_cred(a, user, secret, sizeof(user)) == 0)
		CHECK(user[0] != '\0' && strlen(user) < sizeof(user) &&
		      strlen(secret) < sizeof(secret));
	if (minitarget_parse_size(a, &sz) == 0)
		CHECK(sz != 0);
	(void)minitarget_parse_chap_algs(a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *null_out;
	char *argv[MAX_ARGS + 1];
	struct minitarget_opts *o;
	int argc = 1;

	if (size > 8192)
		return 0;
	if (null_out == NULL && (null_out = fopen("/dev/null", "w")) == NULL)
		abort();
	argv[0] = "minitarget";
	for (size_t off = 0; off <= size && argc < MAX_ARGS;) {
		const uint8_t *nl = memchr(data + off, '\n', size - off);
		size_t n = nl ? (size_t)(nl - (data + off)) : size - off;

		/* Exact-size strings: ASan sees any read past one. */
		argv[argc] = malloc(n + 1);
		if (argv[argc] == NULL)
			break;
		memcpy(argv[argc], data + off, n);
		argv[argc][n] = '\0';
		argc++;
		if (nl == NULL)
			break;
		off += n + 1;
	}
	argv[argc] = NULL;
	o = malloc(sizeof(*o));
	if (o && minitarget_opts_parse(o, argc, argv, null_out) == MINITARGET_PARSE_RUN)
		check_opts(o);
	free(o);
	for (int i = 1; i < argc; i++) {
		each_parser(argv[i]);
		free(argv[i]);
	}
	return 0;
}
