/* SPDX-License-Identifier: MIT */
/*
 * minitarget's command line (minitarget_opts.h): argv to struct minitarget_opts. The program
 * and its options are described at the top of minitarget.c.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "minitarget_opts.h"
#include "size_arg.h"

void minitarget_usage(FILE *f)
{
	fprintf(f,
		"usage: minitarget [--portal HOST:PORT]... [--iqn NAME]\n"
		"                  [--lun N:ram|null:SIZE[,thin][,ro][,removable][,bs=N][,pbe=N]\n"
		"                         [,spc4][,prhold]]...\n"
		"                  [--lun N:file:PATH[,thin][,ro][,removable][,bs=N][,pbe=N][,spc4]\n"
		"                         [,io_engine=auto|libaio|io_uring][,direct=0|1]\n"
		"                         [,uring_async=auto|always|never]]...\n"
		"                  [--lun N:rbd:POOL/IMAGE[,ns=NS][,id=CLIENT][,conf=FILE]\n"
		"                         [,timeout=S][,nocache][,nopr][,ro][,bs=N]]...\n"
		"                  [--chap USER:SECRET] [--mutual-chap USER:SECRET]\n"
		"                  [--chap-algorithms md5,sha1,sha256,sha3-256]\n"
		"                  [--initiator NAME]... [--header-digest] [--data-digest] [-v]\n"
		"                  [--pr-dir DIR] [--login-timeout MS] [--alua STATE]\n"
		"                  [--nop-interval MS] [--nop-timeout MS] [--redirect HOST:PORT]\n"
		"                  [--iser-portal HOST:PORT]... [--workers N|auto]\n"
		"                  [--conn-workers 0|1]\n"
		"                  [--srp-portal HOST:PORT]... [--srp-guid 0xHEX] [--srp-aer]\n"
		"                  [--acl-address CIDR]... [--initiator-address NAME=CIDR]...\n"
		"                  [--map NAME:LUN | *:LUN]... [--max-sessions N]\n"
		"                  [--max-lun-commands N] [--max-initiator-conns N]\n"
		"                  [--queue-depth N] [--discovery-chap USER:SECRET]\n"
		"                  [--discovery-mutual-chap USER:SECRET]\n"
		"                  [--drain-timeout MS] [--tmf-timeout MS] [--logout-timeout MS]\n"
		"                  [--tpgt N] [--alua-group G [--alua-peer G[:PORT]]...\n"
		"                   [--alua-preferred] [--gw-holddown MS] [--gw-probe MS]]\n"
		"  LUN flag fault=SPEC injects faults, e.g. fault=hang@write, fault=error=EIO@read:every=3\n"
		"  (rules joined by ';', see backend_fault.h).\n"
		"  --workers N: N worker threads, each connection on one of them end to end;\n"
		"  --conn-workers 0: only the connections' sockets there (engine option\n"
		"  conn_workers; SCSITGT_CONN_WORKERS in the environment overrides it;\n"
		"  docs/threading.md).\n"
		"  --srp-aer: the SRP ports also announce each unit attention with an SRP_AER_REQ\n"
		"  (scsitgt_srp_portal_opts.aer; off by default: Linux ib_srp only logs them,\n"
		"  docs/srp.md).\n");
}

int minitarget_parse_size(const char *s, uint64_t *out)
{
	uint64_t v;

	if (size_arg_parse(s, &v) < 0 || v == 0)
		return -1;
	*out = v;
	return 0;
}

/* "ram:SIZE", "null:SIZE", "file:PATH" or "rbd:POOL/IMAGE" after "N:". */
static int lun_kind(struct minitarget_lun *l, const char *p)
{
	if (strncmp(p, "ram:", 4) == 0 || strncmp(p, "null:", 5) == 0) {
		l->kind = p[0] == 'r' ? MINITARGET_LUN_RAM : MINITARGET_LUN_NULL;
		return minitarget_parse_size(strchr(p, ':') + 1, &l->size);
	}
	if (strncmp(p, "file:", 5) == 0) {
		/* The size comes from the file or device. Paths cannot contain commas here. */
		l->kind = MINITARGET_LUN_FILE;
		p += 5;
		if (*p == '\0' || strlen(p) >= sizeof(l->path))
			return -1;
		strcpy(l->path, p);
		return 0;
	}
	if (strncmp(p, "rbd:", 4) == 0) {
		/* POOL/IMAGE: both non-empty, one slash. */
		const char *slash;

		l->kind = MINITARGET_LUN_RBD;
		p += 4;
		slash = strchr(p, '/');
		if (slash == NULL || slash == p || slash[1] == '\0' || strchr(slash + 1, '/') ||
		    strlen(p) >= sizeof(l->path))
			return -1;
		strcpy(l->path, p);
		return 0;
	}
	return -1;
}

/* Copy "KEY=VALUE"'s value into @dst (@size bytes); empty only when @empty_ok. */
static int lun_str_flag(char *dst, size_t size, const char *value, bool empty_ok)
{
	if ((!empty_ok && *value == '\0') || strlen(value) >= size)
		return -1;
	strcpy(dst, value);
	return 0;
}

/* An rbd LUN's own flags: 1 when @tok is one (0 or -1 from its value), 0 when it is not. */
static int lun_rbd_flag(struct minitarget_lun *l, const char *tok, int *rc)
{
	char *end;

	if (strncmp(tok, "ns=", 3) == 0)
		*rc = lun_str_flag(l->rbd_ns, sizeof(l->rbd_ns), tok + 3, true);
	else if (strncmp(tok, "id=", 3) == 0)
		*rc = lun_str_flag(l->rbd_id, sizeof(l->rbd_id), tok + 3, false);
	else if (strncmp(tok, "conf=", 5) == 0)
		*rc = lun_str_flag(l->rbd_conf, sizeof(l->rbd_conf), tok + 5, false);
	else if (strncmp(tok, "timeout=", 8) == 0) {
		unsigned long v = strtoul(tok + 8, &end, 10);

		*rc = end == tok + 8 || *end != '\0' || v > 86400 ? -1 : 0;
		if (*rc == 0)
			l->rbd_timeout = (long)v;
	} else if (strcmp(tok, "nocache") == 0)
		l->rbd_nocache = true;
	else if (strcmp(tok, "nopr") == 0)
		l->rbd_nopr = true;
	else
		return 0;
	return 1;
}

/* @v is one of the @n @names: its index in *out, 0; -1 otherwise. */
static int lun_enum_flag(const char *v, const char *const *names, int n, int *out)
{
	for (int i = 0; i < n; i++) {
		if (strcmp(v, names[i]) == 0) {
			*out = i;
			return 0;
		}
	}
	return -1;
}

/* A file LUN's own flags (backend_aio.h): 1 when @tok is one (@rc 0 or -1), 0 when not. */
static int lun_file_flag(struct minitarget_lun *l, const char *tok, int *rc)
{
	static const char *const engines[] = { "auto", "libaio", "io_uring" };
	/* enum scsitgt_backend_aio_uring_async */
	static const char *const asyncs[] = { "auto", "always", "never" };

	if (strncmp(tok, "io_engine=", 10) == 0) {
		*rc = lun_enum_flag(tok + 10, engines, 3, &l->io_engine);
	} else if (strncmp(tok, "uring_async=", 12) == 0) {
		*rc = lun_enum_flag(tok + 12, asyncs, 3, &l->uring_async);
	} else if (strcmp(tok, "direct=0") == 0 || strcmp(tok, "direct=1") == 0) {
		l->buffered = tok[7] == '0';
	} else {
		return 0;
	}
	return 1;
}

/* One ",flag" of a --lun; -1 when unknown or malformed. */
static int lun_flag(struct minitarget_lun *l, const char *tok)
{
	char *end;
	int rc = 0;

	if (strcmp(tok, "thin") == 0)
		l->flags |= SCSITGT_LUN_THIN;
	else if (strcmp(tok, "ro") == 0)
		l->flags |= SCSITGT_LUN_READ_ONLY;
	else if (strcmp(tok, "removable") == 0)
		l->flags |= SCSITGT_LUN_REMOVABLE;
	else if (strcmp(tok, "spc4") == 0)
		l->flags |= SCSITGT_LUN_CLAIM_SPC4;
	else if (strcmp(tok, "prhold") == 0)
		l->pr_hold = true;
	else if (strncmp(tok, "fault=", 6) == 0)
		rc = lun_str_flag(l->fault, sizeof(l->fault), tok + 6, false);
	else if (l->kind == MINITARGET_LUN_RBD && lun_rbd_flag(l, tok, &rc))
		return rc;
	else if (l->kind == MINITARGET_LUN_FILE && lun_file_flag(l, tok, &rc))
		return rc;
	else if (strncmp(tok, "pbe=", 4) == 0) {
		unsigned long v = strtoul(tok + 4, &end, 10);

		rc = end == tok + 4 || *end != '\0' || v > 8 ? -1 : 0;
		l->pbe = rc == 0 ? (uint8_t)v : l->pbe;
	} else if (strncmp(tok, "bs=", 3) == 0) {
		/* bs=512|4096 as spelled: strtoul took "bs=4096x" and wrapped "bs=4294971392". */
		rc = strcmp(tok + 3, "512") == 0 || strcmp(tok + 3, "4096") == 0 ? 0 : -1;
		if (rc == 0) {
			l->bs = tok[3] == '5' ? 512 : 4096;
			l->bs_given = true;
		}
	} else
		rc = -1;
	return rc;
}

int minitarget_parse_lun(const char *arg, struct minitarget_lun *l)
{
	char buf[256], *save = NULL, *tok;
	char *end;

	if (strlen(arg) >= sizeof(buf))
		return -1;
	strcpy(buf, arg);
	memset(l, 0, sizeof(*l));
	l->bs = 512;
	l->rbd_timeout = -1;
	tok = strtok_r(buf, ",", &save);
	if (tok == NULL)
		return -1;
	/* N:type:ARG; N in digits (strtoull would take "-1" for the largest number), a LUN
	 * number the library takes: 0..16383 (lun.h). */
	if (tok[0] < '0' || tok[0] > '9')
		return -1;
	errno = 0;
	l->id = strtoull(tok, &end, 10);
	if (errno == ERANGE || l->id > 16383 || *end != ':' || lun_kind(l, end + 1) < 0)
		return -1;
	while ((tok = strtok_r(NULL, ",", &save)) != NULL)
		if (lun_flag(l, tok) < 0)
			return -1;
	if (l->bs != 512 && l->bs != 4096)
		return -1;
	if (l->kind != MINITARGET_LUN_FILE && l->kind != MINITARGET_LUN_RBD && l->size < l->bs)
		return -1;
	return 0;
}

/* An RBD image, opened off the loop (scsitgt_backend_rbd_create_async()); minitarget waits
 * for it before it listens, running the loop meanwhile as a serving host would. */
/* "HOST:PORT", "[V6]:PORT" or "HOST" (port 3260). */
int minitarget_parse_portal(const char *arg, char *host, size_t hsize, uint16_t *port)
{
	const char *colon;
	unsigned long p = 3260;
	size_t hl;

	if (arg[0] == '[') {
		const char *rb = strchr(arg, ']');

		if (rb == NULL)
			return -1;
		hl = (size_t)(rb - arg - 1);
		if (hl == 0 || hl >= hsize)
			return -1;
		memcpy(host, arg + 1, hl);
		host[hl] = '\0';
		colon = rb[1] == ':' ? rb + 1 : NULL;
		if (rb[1] != '\0' && rb[1] != ':')
			return -1;
	} else {
		colon = strrchr(arg, ':');
		hl = colon ? (size_t)(colon - arg) : strlen(arg);
		if (hl == 0 || hl >= hsize)
			return -1;
		memcpy(host, arg, hl);
		host[hl] = '\0';
	}
	if (colon) {
		char *end;

		p = strtoul(colon + 1, &end, 10);
		if (*end != '\0' || end == colon + 1 || p > 65535)
			return -1;
	}
	*port = (uint16_t)p;
	return 0;
}

int minitarget_split_cred(const char *arg, char *user, char *secret, size_t size)
{
	const char *c = strchr(arg, ':');

	if (c == NULL || c == arg || (size_t)(c - arg) >= size || strlen(c + 1) >= size)
		return -1;
	memcpy(user, arg, (size_t)(c - arg));
	user[c - arg] = '\0';
	strcpy(secret, c + 1);
	return 0;
}

/* "md5,sha1,sha256,sha3-256" (any subset) to SCSITGT_ISCSI_CHAP_* bits; 0 when malformed. */
uint32_t minitarget_parse_chap_algs(const char *arg)
{
	static const struct {
		const char *name;
		uint32_t bit;
	} algs[] = {
		{ "md5", SCSITGT_ISCSI_CHAP_MD5 },
		{ "sha1", SCSITGT_ISCSI_CHAP_SHA1 },
		{ "sha256", SCSITGT_ISCSI_CHAP_SHA256 },
		{ "sha3-256", SCSITGT_ISCSI_CHAP_SHA3_256 },
	};
	uint32_t mask = 0;

	while (*arg) {
		size_t n = strcspn(arg, ","), i;

		for (i = 0; i < sizeof(algs) / sizeof(algs[0]); i++)
			if (strlen(algs[i].name) == n && strncmp(arg, algs[i].name, n) == 0)
				break;
		if (i == sizeof(algs) / sizeof(algs[0]))
			return 0;
		mask |= algs[i].bit;
		arg += n + (arg[n] == ',');
	}
	return mask;
}

/* "G" or "G:PORT", each 1..65535. */
int minitarget_parse_peer(const char *arg, struct scsitgt_rbd_gateway_peer *peer)
{
	char *end;
	unsigned long g = strtoul(arg, &end, 10), port;

	if (end == arg || g == 0 || g > 65535)
		return -1;
	port = g;
	if (*end == ':') {
		const char *p = end + 1;

		port = strtoul(p, &end, 10);
		if (end == p || port == 0 || port > 65535)
			return -1;
	}
	if (*end != '\0')
		return -1;
	peer->group_id = (uint16_t)g;
	peer->rel_port_id = (uint16_t)port;
	return 0;
}

/*
 * The options that take a number, each stored in a long of struct minitarget_opts. @base is
 * strtol's; @empty_ok keeps what these options always accepted: an empty value reads as 0.
 */
#define OPT_LONG(name_, field_, min_, max_, base_, empty_ok_)                                \
	{                                                                                    \
		.name = name_, .off = offsetof(struct minitarget_opts, field_), .min = min_, \
		.max = max_, .base = base_, .empty_ok = empty_ok_                            \
	}
static const struct opt_long {
	const char *name;
	size_t off;
	long min;
	long max;
	int base;
	bool empty_ok;
} long_opts[] = {
	OPT_LONG("--drain-timeout", drain_timeout, 1, 3600000, 10, false),
	OPT_LONG("--tmf-timeout", tmf_timeout, 1, 3600000, 10, false),
	OPT_LONG("--logout-timeout", logout_timeout, 1, 3600000, 10, false),
	OPT_LONG("--login-timeout", login_timeout, 0, 3600000, 10, true),
	OPT_LONG("--nop-interval", nop_interval, 0, 3600000, 10, true),
	OPT_LONG("--nop-timeout", nop_timeout, 1, 3600000, 10, false),
	/* SPC-5 Table 241 value, in any C base. */
	OPT_LONG("--alua", alua_state, 0, 15, 0, true),
	OPT_LONG("--tpgt", tpgt, 1, 65535, 10, false),
	OPT_LONG("--alua-group", alua_group, 1, 65535, 10, false),
	OPT_LONG("--gw-holddown", gw_holddown, 0, 3600000, 10, false),
	OPT_LONG("--gw-probe", gw_probe, 0, 3600000, 10, false),
	OPT_LONG("--max-sessions", max_sessions, 0, 1000000, 10, false),
	OPT_LONG("--max-lun-commands", max_lun_cmds, 0, 1000000, 10, false),
	OPT_LONG("--max-initiator-conns", max_init_conns, 0, 1000000, 10, false),
	OPT_LONG("--queue-depth", queue_depth, 0, 1000000, 10, false),
	OPT_LONG("--conn-workers", conn_workers, 0, 1, 10, false),
};

/* The options whose value is kept as given (a pointer into argv). */
#define OPT_STR(name_, field_)                                                 \
	{                                                                      \
		.name = name_, .off = offsetof(struct minitarget_opts, field_) \
	}
static const struct opt_str {
	const char *name;
	size_t off;
} str_opts[] = {
	OPT_STR("--iqn", iqn),
	OPT_STR("--chap", chap),
	OPT_STR("--mutual-chap", mutual_chap),
	OPT_STR("--discovery-chap", discovery_chap),
	OPT_STR("--discovery-mutual-chap", discovery_mutual_chap),
	OPT_STR("--pr-dir", pr_dir),
	OPT_STR("--redirect", redirect),
};

/* The options that may be repeated, up to MINITARGET_MAX_ITEMS each. */
#define OPT_LIST(name_, field_, count_)                                         \
	{                                                                       \
		.name = name_, .off = offsetof(struct minitarget_opts, field_), \
		.count_off = offsetof(struct minitarget_opts, count_)           \
	}
static const struct opt_list {
	const char *name;
	size_t off;
	size_t count_off;
} list_opts[] = {
	OPT_LIST("--portal", portals, nportals),
	OPT_LIST("--iser-portal", iser_portals, niser),
	OPT_LIST("--srp-portal", srp_portals, nsrp),
	OPT_LIST("--initiator", initiators, ninit),
	OPT_LIST("--acl-address", acl_addrs, nacl_addrs),
	OPT_LIST("--initiator-address", init_addrs, ninit_addrs),
	OPT_LIST("--map", maps, nmaps),
};

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static int parse_long_opt(const struct opt_long *d, const char *v, long *out)
{
	char *end;
	long n = strtol(v, &end, d->base);

	if (*end || (end == v && !d->empty_ok) || n < d->min || n > d->max)
		return -1;
	*out = n;
	return 0;
}

static void opts_defaults(struct minitarget_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->iqn = "iqn.2026-11.org.libscsitgt:minitarget";
	o->srp_guid = 0x0002c90300abcdefull;
	o->alua_state = -1;
	o->tpgt = 1;
	o->alua_group = 0;
	o->gw_holddown = -1;
	o->gw_probe = -1;
	o->login_timeout = -1;
	o->nop_interval = -1;
	o->nop_timeout = -1;
	o->workers = 0;
	o->conn_workers = -1;
	o->max_sessions = -1;
	o->max_lun_cmds = -1;
	o->max_init_conns = -1;
	o->queue_depth = -1;
	o->drain_timeout = -1;
	o->tmf_timeout = -1;
	o->logout_timeout = -1;
}

/*
 * The options the tables above do not describe. Returns 1 when it consumed @v, 0 when @a is
 * not such an option (or its list is full), -1 when @v is malformed.
 */
static int parse_special(struct minitarget_opts *o, const char *a, const char *v)
{
	if (strcmp(a, "--srp-guid") == 0) {
		char *end;
		unsigned long long g = strtoull(v, &end, 16);

		if (*end || end == v || g == 0)
			return -1;
		o->srp_guid = g;
		return 1;
	}
	if (strcmp(a, "--lun") == 0) {
		if (o->nluns >= MINITARGET_MAX_ITEMS)
			return 0;
		if (minitarget_parse_lun(v, &o->luns[o->nluns]) < 0)
			return -1;
		o->nluns++;
		return 1;
	}
	if (strcmp(a, "--chap-algorithms") == 0) {
		o->chap_algs = minitarget_parse_chap_algs(v);
		return o->chap_algs == 0 ? -1 : 1;
	}
	if (strcmp(a, "--alua-peer") == 0) {
		if (o->ngw_peers == MINITARGET_MAX_PEERS ||
		    minitarget_parse_peer(v, &o->gw_peers[o->ngw_peers]) < 0)
			return -1;
		o->ngw_peers++;
		return 1;
	}
	if (strcmp(a, "--workers") == 0) {
		static const struct opt_long workers = { .min = 0,
							 .max = SCSITGT_ENGINE_WORKERS_MAX,
							 .base = 10 };
		long n;

		if (strcmp(v, "auto") == 0) {
			o->workers = SCSITGT_ENGINE_WORKERS_AUTO;
			return 1;
		}
		if (parse_long_opt(&workers, v, &n) < 0)
			return -1;
		o->workers = (int)n;
		return 1;
	}
	return 0;
}

/*
 * One option that takes a value @v (the next argument). Returns 1 when it consumed @v, 0 when
 * @a is not such an option (or its list is full: the caller prints the usage), -1 after
 * reporting a malformed value on @err.
 */
static int parse_valued(struct minitarget_opts *o, const char *a, const char *v, FILE *err)
{
	char *base = (char *)o;
	int rc;

	for (size_t i = 0; i < ARRAY_LEN(list_opts); i++) {
		const char **list = (const char **)(void *)(base + list_opts[i].off);
		size_t *n = (size_t *)(void *)(base + list_opts[i].count_off);

		if (strcmp(a, list_opts[i].name) != 0)
			continue;
		if (*n >= MINITARGET_MAX_ITEMS)
			return 0;
		list[(*n)++] = v;
		return 1;
	}
	for (size_t i = 0; i < ARRAY_LEN(str_opts); i++) {
		if (strcmp(a, str_opts[i].name) == 0) {
			*(const char **)(void *)(base + str_opts[i].off) = v;
			return 1;
		}
	}
	for (size_t i = 0; i < ARRAY_LEN(long_opts); i++) {
		long *field = (long *)(void *)(base + long_opts[i].off);

		if (strcmp(a, long_opts[i].name) == 0) {
			rc = parse_long_opt(&long_opts[i], v, field) < 0 ? -1 : 1;
			goto out;
		}
	}
	rc = parse_special(o, a, v);
out:
	if (rc < 0)
		fprintf(err, "minitarget: bad %s '%s'\n", a, v);
	return rc;
}

enum minitarget_parse_result minitarget_opts_parse(struct minitarget_opts *o, int argc, char **argv,
						   FILE *err)
{
	opts_defaults(o);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		int rc;

		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)
			return MINITARGET_PARSE_HELP;
		if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0) {
			o->verbose = true;
			continue;
		}
		if (strcmp(a, "--header-digest") == 0) {
			o->header_digest = true;
			continue;
		}
		if (strcmp(a, "--data-digest") == 0) {
			o->data_digest = true;
			continue;
		}
		if (strcmp(a, "--alua-preferred") == 0) {
			o->gw_preferred = true;
			continue;
		}
		if (strcmp(a, "--srp-aer") == 0) {
			o->srp_aer = true;
			continue;
		}
		rc = v ? parse_valued(o, a, v, err) : 0;
		if (rc < 0)
			return MINITARGET_PARSE_ERROR;
		if (rc == 0) {
			minitarget_usage(err);
			return MINITARGET_PARSE_ERROR;
		}
		i++;
	}
	if (o->nportals == 0)
		o->portals[o->nportals++] = "127.0.0.1:3260";
	if (o->nluns == 0) {
		/* LUN 0: a 1 GiB RAM disk of 512-byte blocks. */
		memset(&o->luns[0], 0, sizeof(o->luns[0]));
		o->luns[0].kind = MINITARGET_LUN_RAM;
		o->luns[0].size = 1ull << 30;
		o->luns[0].bs = 512;
		o->nluns = 1;
	}
	return MINITARGET_PARSE_RUN;
}
