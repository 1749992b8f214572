/* SPDX-License-Identifier: MIT */
/*
 * The keys of scsitgtd's configuration file (docs/scsitgtd.md): one table per section, each key
 * with its value syntax, range and message. libinih has split the line already; these
 * functions only give the value its meaning. A row's index in its table is its bit in
 * parser.seen, so that a key given twice is refused (unless it may repeat).
 */
#include "scsitgtd_config_int.h"
#include "size_arg.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- value parsers: 0 or a negative errno, no message ---- */

int cfg_parse_u64(const char *v, uint64_t max, uint64_t *out)
{
	uint64_t x = 0;

	if (*v == '\0')
		return -EINVAL;
	for (; *v; v++) {
		if (*v < '0' || *v > '9')
			return -EINVAL;
		if (x > (max - (uint64_t)(*v - '0')) / 10)
			return -ERANGE;
		x = x * 10 + (uint64_t)(*v - '0');
	}
	*out = x;
	return 0;
}

static int parse_bool(const char *v, bool *out)
{
	if (!strcmp(v, "yes") || !strcmp(v, "true") || !strcmp(v, "on") || !strcmp(v, "1")) {
		*out = true;
		return 0;
	}
	if (!strcmp(v, "no") || !strcmp(v, "false") || !strcmp(v, "off") || !strcmp(v, "0")) {
		*out = false;
		return 0;
	}
	return -EINVAL;
}

/* Split a list "a, b c" into words; calls @fn for each. */
static int for_each_word(struct parser *p, const char *v, const char *key,
			 int (*fn)(struct parser *p, const char *key, const char *word, void *arg),
			 void *arg)
{
	char word[64];
	int rc;

	while (*v) {
		size_t n = strcspn(v, ", \t");

		if (n == 0) {
			v++;
			continue;
		}
		if (n >= sizeof(word))
			return cfg_err(p, "%s: \"%.*s\" is not a valid item", key, (int)n, v);
		memcpy(word, v, n);
		word[n] = '\0';
		rc = fn(p, key, word, arg);
		if (rc < 0)
			return rc;
		v += n;
	}
	return 0;
}

/* RFC 7143 §4.2.7.2: names use a restricted character set; we check the printable subset. */
static bool name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 223)
		return false;
	for (; *s; s++) {
		char c = *s;

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '-' || c == '.' || c == ':'))
			return false;
	}
	return true;
}

/* "user:secret": the user ends at the first colon; RFC 7143 §12.1.3 lengths (iscsi.h). */
static int parse_cred(struct parser *p, const char *key, const char *v, char **user, char **secret)
{
	const char *colon = strchr(v, ':');
	size_t ulen = colon ? (size_t)(colon - v) : 0, slen = colon ? strlen(colon + 1) : 0;
	char *u;

	if (colon == NULL || ulen == 0 || slen == 0)
		return cfg_err(p, "%s: expected user:secret", key);
	if (ulen > 255)
		return cfg_err(p, "%s: the user name is longer than 255 bytes", key);
	if (slen < 12 || slen > 256)
		return cfg_err(p,
			       "%s: the secret must be 12..256 bytes (RFC 7143 §12.1.3), not %zu",
			       key, slen);
	u = strndup(v, ulen);
	if (u == NULL)
		return cfg_nomem(p);
	free(*user);
	*user = u;
	return cfg_set_str(p, secret, colon + 1);
}

int cfg_grow(struct parser *p, void **arr, size_t *n, size_t size, size_t max, const char *what)
{
	void *a;

	if (*n >= max)
		return cfg_err(p, "too many %s (at most %zu)", what, max);
	a = realloc(*arr, (*n + 1) * size);
	if (a == NULL)
		return cfg_nomem(p);
	memset((char *)a + *n * size, 0, size);
	*arr = a;
	(*n)++;
	return 0;
}

/* ---- keys: one table per section; a row's index is its bit in parser.seen ---- */

struct key {
	const char *name;
	int (*fn)(struct parser *p, const char *key, const char *v);
	bool repeat; /* may be given several times */
};

/* Unsigned integer keys of a struct, by offset: a range and the field's width. */
static int set_uint(struct parser *p, const char *key, const char *v, uint64_t min, uint64_t max,
		    uint64_t *out)
{
	uint64_t x;

	if (cfg_parse_u64(v, UINT64_MAX, &x) < 0 || x < min || x > max)
		return cfg_err(p, "%s: expected a number %llu..%llu", key, (unsigned long long)min,
			       (unsigned long long)max);
	*out = x;
	return 0;
}

/* A numeric IPv4 or IPv6 address, as inet_pton(3) reads it. */
static bool ip_ok(const char *v, bool *v6)
{
	unsigned char buf[16];

	*v6 = strchr(v, ':') != NULL;
	return inet_pton(*v6 ? AF_INET6 : AF_INET, v, buf) == 1;
}

/* "ADDRESS[/PREFIX]": the range syntax of scsitgt_target_add_address(). */
static bool cidr_ok(const char *v)
{
	char addr[64];
	const char *slash = strchr(v, '/');
	size_t n = slash ? (size_t)(slash - v) : strlen(v);
	uint64_t prefix;
	bool v6;

	if (n == 0 || n >= sizeof(addr))
		return false;
	memcpy(addr, v, n);
	addr[n] = '\0';
	if (!ip_ok(addr, &v6))
		return false;
	return slash == NULL || cfg_parse_u64(slash + 1, v6 ? 128 : 32, &prefix) == 0;
}

/* A 64-bit identifier: decimal, or hexadecimal after 0x. */
static int parse_id64(const char *v, uint64_t *out)
{
	uint64_t x = 0;
	int digits = 0;

	if (v[0] != '0' || (v[1] != 'x' && v[1] != 'X'))
		return cfg_parse_u64(v, UINT64_MAX, out);
	for (v += 2; *v; v++, digits++) {
		int d = (*v >= '0' && *v <= '9') ? *v - '0' :
			(*v >= 'a' && *v <= 'f') ? *v - 'a' + 10 :
			(*v >= 'A' && *v <= 'F') ? *v - 'A' + 10 :
						   -1;

		if (d < 0 || digits == 16)
			return -EINVAL;
		x = x << 4 | (uint64_t)d;
	}
	if (digits == 0)
		return -EINVAL;
	*out = x;
	return 0;
}

/* [engine] */

static int k_log_level(struct parser *p, const char *key, const char *v)
{
	static const char *const levels[] = { "error", "warning", "notice", "info", "debug" };

	for (int i = 0; i < 5; i++) {
		if (!strcmp(v, levels[i])) {
			p->cfg->log_level = 3 + i;
			return 0;
		}
	}
	return cfg_err(p, "%s: expected error, warning, notice, info or debug", key);
}

static int k_tmf_timeout(struct parser *p, const char *key, const char *v)
{
	uint64_t x;
	int rc = set_uint(p, key, v, 1, 3600000, &x);

	p->cfg->tmf_timeout_ms = (uint32_t)x;
	return rc;
}

static int k_pr_dir(struct parser *p, const char *key, const char *v)
{
	if (*v == '\0')
		return cfg_err(p, "%s: empty", key);
	return cfg_set_str(p, &p->cfg->pr_dir, v);
}

/* The management socket (scsitgtd_control.c): a path, at most what sockaddr_un holds. */
static int k_control_socket(struct parser *p, const char *key, const char *v)
{
	if (*v == '\0')
		return cfg_err(p, "%s: empty", key);
	if (strlen(v) >= SCSITGTD_MAX_SOCKET_PATH)
		return cfg_err(p, "%s: longer than %d bytes", key, SCSITGTD_MAX_SOCKET_PATH - 1);
	return cfg_set_str(p, &p->cfg->control_socket, v);
}

/* The pidfile (scsitgtd.c): any path; relative ones are relative to the working directory. */
static int k_pidfile(struct parser *p, const char *key, const char *v)
{
	if (*v == '\0')
		return cfg_err(p, "%s: empty", key);
	return cfg_set_str(p, &p->cfg->pidfile, v);
}

/* The metrics listener (scsitgtd_metrics.c): "IPV4:PORT" or "[IPV6]:PORT", numeric. */
static int k_metrics(struct parser *p, const char *key, const char *v)
{
	const char *colon = strrchr(v, ':');
	char addr[64];
	size_t alen;
	uint64_t port;
	bool v6, bracket = v[0] == '[';

	if (colon == NULL || colon == v)
		return cfg_err(p, "%s: expected ADDRESS:PORT", key);
	alen = (size_t)(colon - v);
	if (bracket) {
		if (alen < 3 || v[alen - 1] != ']')
			return cfg_err(p, "%s: expected [IPV6]:PORT", key);
		v++;
		alen -= 2;
	}
	if (alen >= sizeof(addr))
		return cfg_err(p, "%s: address too long", key);
	memcpy(addr, v, alen);
	addr[alen] = '\0';
	if (!ip_ok(addr, &v6) || v6 != bracket)
		return cfg_err(p, "%s: expected a numeric IPv4 address or [IPv6] address", key);
	if (cfg_parse_u64(colon + 1, 65535, &port) < 0 || port == 0)
		return cfg_err(p, "%s: port: expected 1..65535", key);
	p->cfg->metrics_port = (uint16_t)port;
	return cfg_set_str(p, &p->cfg->metrics_address, addr);
}

static int k_workers(struct parser *p, const char *key, const char *v)
{
	uint64_t x;

	if (!strcmp(v, "auto")) {
		p->cfg->workers = -1;
		return 0;
	}
	if (cfg_parse_u64(v, 256, &x) < 0)
		return cfg_err(p, "%s: expected auto or a number 0..256", key);
	p->cfg->workers = (int)x;
	return 0;
}

/* scsitgt_engine_opts.conn_workers (engine.h): no keeps only the sockets on the workers. */
static int k_conn_workers(struct parser *p, const char *key, const char *v)
{
	bool b;

	if (parse_bool(v, &b) < 0)
		return cfg_err(p, "%s: expected yes or no", key);
	p->cfg->conn_workers = b;
	return 0;
}

static int k_drain_timeout(struct parser *p, const char *key, const char *v)
{
	uint64_t x;
	int rc = set_uint(p, key, v, 1, 3600000, &x);

	p->cfg->drain_timeout_ms = (uint32_t)x;
	return rc;
}

static int k_discovery_chap(struct parser *p, const char *key, const char *v)
{
	struct scsitgtd_config *c = p->cfg;

	if (!strcmp(key, "discovery_mutual_chap"))
		return parse_cred(p, key, v, &c->discovery_mutual_user,
				  &c->discovery_mutual_secret);
	return parse_cred(p, key, v, &c->discovery_user, &c->discovery_secret);
}

static const struct key engine_keys[] = {
	{ "log_level", k_log_level, false },
	{ "workers", k_workers, false },
	{ "conn_workers", k_conn_workers, false },
	{ "drain_timeout_ms", k_drain_timeout, false },
	{ "discovery_chap", k_discovery_chap, false },
	{ "discovery_mutual_chap", k_discovery_chap, false },
	{ "tmf_timeout_ms", k_tmf_timeout, false },
	{ "pr_dir", k_pr_dir, false },
	{ "control_socket", k_control_socket, false },
	{ "pidfile", k_pidfile, false },
	{ "metrics", k_metrics, false },
};

/* iSCSI parameters ([engine] and [target]); ranges of struct scsitgt_iscsi_params. */

enum pkind {
	PK_UINT,
	PK_SIZE,
	PK_BOOL,
	PK_DIGEST,
	PK_CHAP,
	PK_ASYNC
};

static const struct {
	const char *name;
	enum pkind kind;
	uint64_t min, max;
} params[SCSITGTD_P_COUNT] = {
	[SCSITGTD_P_MAX_RECV_DATA_SEGMENT_LENGTH] = { "max_recv_data_segment_length", PK_SIZE, 512,
						      16777215 },
	[SCSITGTD_P_MAX_BURST_LENGTH] = { "max_burst_length", PK_SIZE, 512, 16777215 },
	[SCSITGTD_P_FIRST_BURST_LENGTH] = { "first_burst_length", PK_SIZE, 512, 16777215 },
	[SCSITGTD_P_IMMEDIATE_DATA] = { "immediate_data", PK_BOOL, 0, 1 },
	[SCSITGTD_P_INITIAL_R2T] = { "initial_r2t", PK_BOOL, 0, 1 },
	[SCSITGTD_P_MAX_OUTSTANDING_R2T] = { "max_outstanding_r2t", PK_UINT, 1, 65535 },
	[SCSITGTD_P_HEADER_DIGEST] = { "header_digest", PK_DIGEST, 0, 2 },
	[SCSITGTD_P_DATA_DIGEST] = { "data_digest", PK_DIGEST, 0, 2 },
	[SCSITGTD_P_DEFAULT_TIME2WAIT] = { "default_time2wait", PK_UINT, 0, 3600 },
	[SCSITGTD_P_DEFAULT_TIME2RETAIN] = { "default_time2retain", PK_UINT, 0, 3600 },
	[SCSITGTD_P_QUEUE_DEPTH] = { "queue_depth", PK_UINT, 1, 4096 },
	[SCSITGTD_P_NOP_INTERVAL_MS] = { "nop_interval_ms", PK_UINT, 0, 3600000 },
	[SCSITGTD_P_NOP_TIMEOUT_MS] = { "nop_timeout_ms", PK_UINT, 1, 3600000 },
	[SCSITGTD_P_LOGIN_TIMEOUT_MS] = { "login_timeout_ms", PK_UINT, 1, 3600000 },
	[SCSITGTD_P_CHAP_ALGORITHMS] = { "chap_algorithms", PK_CHAP, 1, 0xf },
	[SCSITGTD_P_LOGOUT_TIMEOUT_MS] = { "logout_timeout_ms", PK_UINT, 1, 3600000 },
	[SCSITGTD_P_ASYNC_EVENTS] = { "async_events", PK_ASYNC, 0, 0x7 },
	[SCSITGTD_P_MAX_WRITE_BUFFER] = { "max_write_buffer", PK_SIZE, 0, 1ull << 40 },
};

const char *scsitgtd_param_name(enum scsitgtd_param i)
{
	return (unsigned int)i < SCSITGTD_P_COUNT ? params[i].name : "?";
}

static int chap_word(struct parser *p, const char *key, const char *w, void *arg)
{
	static const char *const names[] = { "md5", "sha1", "sha256", "sha3-256" };
	uint64_t *mask = arg;

	for (unsigned int i = 0; i < 4; i++) {
		if (!strcmp(w, names[i])) {
			*mask |= 1u << i;
			return 0;
		}
	}
	return cfg_err(p, "%s: unknown algorithm \"%s\" (md5, sha1, sha256, sha3-256)", key, w);
}

/* RFC 7143 §11.9 Async Messages for unit attentions (iscsi.h SCSITGT_ISCSI_ASYNC_*). */
static int async_word(struct parser *p, const char *key, const char *w, void *arg)
{
	static const char *const names[] = { "luns_changed", "capacity_changed", "other" };
	uint64_t *mask = arg;

	if (!strcmp(w, "none"))
		return 0;
	if (!strcmp(w, "all")) {
		*mask |= 0x7;
		return 0;
	}
	for (unsigned int i = 0; i < 3; i++) {
		if (!strcmp(w, names[i])) {
			*mask |= 1u << i;
			return 0;
		}
	}
	return cfg_err(p,
		       "%s: unknown event \"%s\" (luns_changed, capacity_changed, other, all, "
		       "none)",
		       key, w);
}

/* 1: @key is no parameter; 0: set; < 0: error. */
static int param_kv(struct parser *p, struct scsitgtd_params *ps, const char *key, const char *v)
{
	unsigned int i;
	uint64_t x = 0;
	bool b;
	int rc;

	for (i = 0; i < SCSITGTD_P_COUNT; i++)
		if (!strcmp(key, params[i].name))
			break;
	if (i == SCSITGTD_P_COUNT)
		return 1;
	if (ps->set & (1u << i))
		return cfg_err(p, "%s given twice in this section", key);
	switch (params[i].kind) {
	case PK_UINT:
		rc = set_uint(p, key, v, params[i].min, params[i].max, &x);
		if (rc < 0)
			return rc;
		break;
	case PK_SIZE:
		if (size_arg_parse(v, &x) < 0 || x < params[i].min || x > params[i].max)
			return cfg_err(
				p,
				"%s: expected a byte count %llu..%llu (K, M, G suffixes allowed)",
				key, (unsigned long long)params[i].min,
				(unsigned long long)params[i].max);
		break;
	case PK_BOOL:
		if (parse_bool(v, &b) < 0)
			return cfg_err(p, "%s: expected yes or no", key);
		x = b;
		break;
	case PK_DIGEST:
		if (!strcmp(v, "any"))
			x = 0;
		else if (!strcmp(v, "none"))
			x = 1;
		else if (!strcmp(v, "crc32c"))
			x = 2;
		else
			return cfg_err(p, "%s: expected any, none or crc32c", key);
		break;
	case PK_CHAP:
		rc = for_each_word(p, v, key, chap_word, &x);
		if (rc < 0)
			return rc;
		if (x == 0)
			return cfg_err(p, "%s: name at least one algorithm", key);
		break;
	case PK_ASYNC:
		if (*v == '\0')
			return cfg_err(p, "%s: expected a list of events, or none", key);
		rc = for_each_word(p, v, key, async_word, &x);
		if (rc < 0)
			return rc;
		break;
	}
	ps->v[i] = x;
	ps->set |= 1u << i;
	return 0;
}

/* [portal] */

static int k_transport(struct parser *p, const char *key, const char *v)
{
	if (!strcmp(v, "tcp"))
		cur_portal(p)->transport = SCSITGTD_TRANSPORT_TCP;
	else if (!strcmp(v, "iser"))
		cur_portal(p)->transport = SCSITGTD_TRANSPORT_ISER;
	else
		return cfg_err(p, "%s: expected tcp or iser", key);
	return 0;
}

static int k_address(struct parser *p, const char *key, const char *v)
{
	bool v6;

	if (!ip_ok(v, &v6))
		return cfg_err(p, "%s: expected a numeric IPv4 or IPv6 address (no brackets)", key);
	return cfg_set_str(p, p->sec == SEC_SRP ? &cur_srp(p)->address : &cur_portal(p)->address,
			   v);
}

static int k_port(struct parser *p, const char *key, const char *v)
{
	uint64_t x;
	int rc = set_uint(p, key, v, 1, 65535, &x);

	cur_portal(p)->port = (uint16_t)x;
	return rc;
}

static int k_tpgt(struct parser *p, const char *key, const char *v)
{
	uint64_t x;
	int rc = set_uint(p, key, v, 1, 65535, &x);

	cur_portal(p)->tpgt = (uint16_t)x;
	return rc;
}

static int k_backlog(struct parser *p, const char *key, const char *v)
{
	uint64_t x;
	int rc = set_uint(p, key, v, 1, 65535, &x);

	cur_portal(p)->backlog = (uint32_t)x;
	return rc;
}

static int k_max_conns(struct parser *p, const char *key, const char *v)
{
	struct scsitgtd_portal *po = cur_portal(p);
	uint64_t x;
	int rc = set_uint(p, key, v, 0, 1000000, &x);

	if (!strcmp(key, "max_login_connections"))
		po->max_login_connections = (int64_t)x;
	else if (!strcmp(key, "max_connections_per_initiator"))
		po->max_connections_per_initiator = (int64_t)x;
	else
		po->max_connections = (int64_t)x;
	return rc;
}

static int k_rdma_buffer(struct parser *p, const char *key, const char *v)
{
	uint64_t x;

	if (size_arg_parse(v, &x) < 0 || x < (1u << 20) || x > (64ull << 30))
		return cfg_err(p, "%s: expected a byte count 1M..64G", key);
	cur_portal(p)->rdma_buffer = x;
	return 0;
}

static const struct key portal_keys[] = {
	{ "transport", k_transport, false },
	{ "address", k_address, false },
	{ "port", k_port, false },
	{ "tpgt", k_tpgt, false },
	{ "backlog", k_backlog, false },
	{ "max_connections", k_max_conns, false },
	{ "max_login_connections", k_max_conns, false },
	{ "max_connections_per_initiator", k_max_conns, false },
	{ "rdma_buffer", k_rdma_buffer, false },
};

/* [target] */

static int k_name(struct parser *p, const char *key, const char *v)
{
	if (!name_ok(v))
		return cfg_err(p,
			       "%s: \"%s\" is not an iSCSI name (iqn./eui./naa., at most 223 of "
			       "a-z A-Z 0-9 - . :)",
			       key, v);
	if (scsitgtd_config_find_target(p->cfg, v))
		return cfg_err(p, "target %s defined twice", v);
	return cfg_set_str(p, &cur_target(p)->name, v);
}

static int k_alias(struct parser *p, const char *key, const char *v)
{
	if (*v == '\0' || strlen(v) > 255)
		return cfg_err(p, "%s: 1..255 characters", key);
	return cfg_set_str(p, &cur_target(p)->alias, v);
}

static int k_initiator(struct parser *p, const char *key, const char *v)
{
	struct scsitgtd_target *t = cur_target(p);
	int rc;

	if (!name_ok(v))
		return cfg_err(p, "%s: invalid initiator name \"%s\"", key, v);
	for (size_t i = 0; i < t->ninitiators; i++)
		if (!strcmp(t->initiators[i], v))
			return cfg_err(p, "initiator %s listed twice", v);
	rc = cfg_grow(p, (void **)&t->initiators, &t->ninitiators, sizeof(char *),
		      SCSITGTD_MAX_INITIATORS, "initiators in one target");
	if (rc < 0)
		return rc;
	return cfg_set_str(p, &t->initiators[t->ninitiators - 1], v);
}

static int k_chap(struct parser *p, const char *key, const char *v)
{
	struct scsitgtd_target *t = cur_target(p);

	if (key[0] == 'm')
		return parse_cred(p, key, v, &t->mutual_user, &t->mutual_secret);
	return parse_cred(p, key, v, &t->chap_user, &t->chap_secret);
}

/* "INITIATOR user:secret" */
static int k_initiator_chap(struct parser *p, const char *key, const char *v)
{
	struct scsitgtd_target *t = cur_target(p);
	struct scsitgtd_initiator_chap *ic;
	size_t n = strcspn(v, " \t");
	char *name;
	int rc;

	if (v[n] == '\0')
		return cfg_err(p, "%s: expected INITIATOR-NAME user:secret", key);
	name = strndup(v, n);
	if (name == NULL)
		return cfg_nomem(p);
	if (!name_ok(name)) {
		rc = cfg_err(p, "%s: invalid initiator name \"%s\"", key, name);
		free(name);
		return rc;
	}
	if (scsitgtd_config_find_ichap(t, name)) {
		rc = cfg_err(p, "%s: initiator %s given twice", key, name);
		free(name);
		return rc;
	}
	rc = cfg_grow(p, (void **)&t->ichap, &t->nichap, sizeof(*t->ichap), SCSITGTD_MAX_INITIATORS,
		      "per-initiator CHAP entries in one target");
	if (rc < 0) {
		free(name);
		return rc;
	}
	ic = &t->ichap[t->nichap - 1];
	ic->initiator = name;
	v += n;
	v += strspn(v, " \t");
	return parse_cred(p, key, v, &ic->user, &ic->secret);
}

static int alua_word(struct parser *p, const char *key, const char *w, void *arg)
{
	uint32_t *modes = arg;

	if (!strcmp(w, "implicit"))
		*modes |= 1u;
	else if (!strcmp(w, "explicit"))
		*modes |= 2u;
	else if (strcmp(w, "off"))
		return cfg_err(p, "%s: expected off, or implicit and/or explicit", key);
	return 0;
}

static int k_alua(struct parser *p, const char *key, const char *v)
{
	struct scsitgtd_target *t = cur_target(p);
	uint32_t modes = 0;
	int rc = for_each_word(p, v, key, alua_word, &modes);

	if (rc == 0 && *v == '\0')
		return cfg_err(p, "%s: expected off, or implicit and/or explicit", key);
	t->alua_modes = modes;
	return rc;
}

/* "CIDR" for every initiator, "INITIATOR CIDR" for one (access by source address). */
static int k_address_acl(struct parser *p, const char *key, const char *v)
{
	struct scsitgtd_target *t = cur_target(p);
	struct scsitgtd_address *a;
	char *ini = NULL;
	int rc;

	if (!strcmp(key, "initiator_address")) {
		size_t n = strcspn(v, " \t");

		if (v[n] == '\0')
			return cfg_err(p, "%s: expected INITIATOR-NAME ADDRESS[/PREFIX]", key);
		ini = strndup(v, n);
		if (ini == NULL)
			return cfg_nomem(p);
		if (!name_ok(ini)) {
			rc = cfg_err(p, "%s: invalid initiator name \"%s\"", key, ini);
			free(ini);
			return rc;
		}
		v += n + strspn(v + n, " \t");
	}
	if (!cidr_ok(v)) {
		free(ini);
		return cfg_err(p, "%s: \"%s\" is not ADDRESS[/PREFIX] (e.g. 192.0.2.0/24, ::1)",
			       key, v);
	}
	if (scsitgtd_config_find_address(t, ini, v)) {
		free(ini);
		return cfg_err(p, "%s: %s listed twice", key, v);
	}
	rc = cfg_grow(p, (void **)&t->addresses, &t->naddresses, sizeof(*t->addresses),
		      SCSITGTD_MAX_ADDRESSES, "address ranges in one target");
	if (rc < 0) {
		free(ini);
		return rc;
	}
	a = &t->addresses[t->naddresses - 1];
	a->initiator = ini;
	return cfg_set_str(p, &a->cidr, v);
}

static int k_target_limit(struct parser *p, const char *key, const char *v)
{
	struct scsitgtd_target *t = cur_target(p);
	uint64_t x;
	int rc = set_uint(p, key, v, 0, 1000000, &x);

	if (!strcmp(key, "max_sessions"))
		t->max_sessions = (int64_t)x;
	else
		t->max_lun_commands = (int64_t)x;
	return rc;
}

/* rbd_gateway* (docs/scsitgtd.md): the gateway of an RBD image, as minitarget's --alua-group,
 * --alua-peer, --alua-preferred, --gw-holddown and --gw-probe. */
static int k_gateway(struct parser *p, const char *key, const char *v)
{
	struct scsitgtd_gateway *g = &cur_target(p)->gw;
	uint64_t x;
	bool b;

	if (!strcmp(key, "rbd_gateway")) {
		int rc = set_uint(p, key, v, 1, 65535, &x);

		g->group = (uint16_t)x;
		g->line = p->line;
		return rc;
	}
	if (!strcmp(key, "rbd_gateway_preferred")) {
		if (parse_bool(v, &b) < 0)
			return cfg_err(p, "%s: expected yes or no", key);
		g->preferred = b;
		return 0;
	}
	if (!strcmp(key, "rbd_gateway_holddown_ms")) {
		int rc = set_uint(p, key, v, 0, 3600000, &x);

		g->holddown_ms = (int64_t)x;
		return rc;
	}
	{
		int rc = set_uint(p, key, v, 10, 60000, &x);

		g->probe_ms = (int64_t)x;
		return rc;
	}
}

static int gw_port_word(struct parser *p, const char *key, const char *w, void *arg)
{
	struct scsitgtd_gateway *g = arg;
	uint64_t x;

	if (cfg_parse_u64(w, 65535, &x) < 0 || x == 0)
		return cfg_err(p, "%s: \"%s\" is not a portal group tag 1..65535", key, w);
	for (size_t i = 0; i < g->nports; i++)
		if (g->ports[i] == x)
			return cfg_err(p, "%s: port %llu listed twice", key, (unsigned long long)x);
	if (g->nports >= SCSITGTD_MAX_ALUA_PORTS)
		return cfg_err(p, "%s: at most %d ports", key, SCSITGTD_MAX_ALUA_PORTS);
	g->ports[g->nports++] = (uint16_t)x;
	return 0;
}

static int k_gateway_ports(struct parser *p, const char *key, const char *v)
{
	int rc = for_each_word(p, v, key, gw_port_word, &cur_target(p)->gw);

	if (rc == 0 && cur_target(p)->gw.nports == 0)
		return cfg_err(p, "%s: expected one or more portal group tags", key);
	return rc;
}

/* "GROUP[:PORT]": another gateway's target port group and its port (default GROUP). */
static int k_gateway_peer(struct parser *p, const char *key, const char *v)
{
	struct scsitgtd_gateway *g = &cur_target(p)->gw;
	char num[8];
	size_t n = strcspn(v, ":");
	uint64_t grp, port;

	if (n == 0 || n >= sizeof(num))
		goto bad;
	memcpy(num, v, n);
	num[n] = '\0';
	if (cfg_parse_u64(num, 65535, &grp) < 0 || grp == 0)
		goto bad;
	port = grp;
	if (v[n] == ':' && (cfg_parse_u64(v + n + 1, 65535, &port) < 0 || port == 0))
		goto bad;
	for (size_t i = 0; i < g->npeers; i++)
		if (g->peer_groups[i] == grp)
			return cfg_err(p, "%s: group %llu listed twice", key,
				       (unsigned long long)grp);
	if (g->npeers >= SCSITGTD_MAX_GW_PEERS)
		return cfg_err(p, "%s: at most %d peers", key, SCSITGTD_MAX_GW_PEERS);
	g->peer_groups[g->npeers] = (uint16_t)grp;
	g->peer_ports[g->npeers] = (uint16_t)port;
	g->npeers++;
	return 0;
bad:
	return cfg_err(p, "%s: expected GROUP[:PORT] (1..65535 each), not \"%s\"", key, v);
}

static const struct key target_keys[] = {
	{ "name", k_name, false },
	{ "alias", k_alias, false },
	{ "initiator", k_initiator, true },
	{ "chap", k_chap, false },
	{ "mutual_chap", k_chap, false },
	{ "initiator_chap", k_initiator_chap, true },
	{ "alua", k_alua, false },
	{ "address", k_address_acl, true },
	{ "initiator_address", k_address_acl, true },
	{ "max_sessions", k_target_limit, false },
	{ "max_lun_commands", k_target_limit, false },
	{ "rbd_gateway", k_gateway, false },
	{ "rbd_gateway_ports", k_gateway_ports, false },
	{ "rbd_gateway_peer", k_gateway_peer, true },
	{ "rbd_gateway_preferred", k_gateway, false },
	{ "rbd_gateway_holddown_ms", k_gateway, false },
	{ "rbd_gateway_probe_ms", k_gateway, false },
};

/* [alua_group N] */

static const struct {
	const char *name;
	uint8_t value;
} alua_states[] = {
	{ "active_optimized", 0x0 }, { "active_non_optimized", 0x1 }, { "standby", 0x2 },
	{ "unavailable", 0x3 },	     { "transitioning", 0xf },
};

static int k_state(struct parser *p, const char *key, const char *v)
{
	for (size_t i = 0; i < sizeof(alua_states) / sizeof(alua_states[0]); i++) {
		if (!strcmp(v, alua_states[i].name)) {
			cur_group(p)->state = alua_states[i].value;
			return 0;
		}
	}
	return cfg_err(p,
		       "%s: expected active_optimized, active_non_optimized, standby, "
		       "unavailable or transitioning",
		       key);
}

static int port_word(struct parser *p, const char *key, const char *w, void *arg)
{
	struct scsitgtd_alua_group *g = arg;
	struct scsitgtd_target *t = cur_target(p);
	uint64_t x;
	int rc;

	if (cfg_parse_u64(w, 65535, &x) < 0 || x == 0)
		return cfg_err(p, "%s: \"%s\" is not a portal group tag 1..65535", key, w);
	for (size_t i = 0; i < t->ngroups; i++)
		if (scsitgtd_group_has_port(&t->groups[i], (uint16_t)x))
			return cfg_err(p, "%s: port %llu is in alua_group %u already", key,
				       (unsigned long long)x, t->groups[i].id);
	rc = cfg_grow(p, (void **)&g->ports, &g->nports, sizeof(*g->ports), SCSITGTD_MAX_ALUA_PORTS,
		      "ports in one ALUA group");
	if (rc == 0)
		g->ports[g->nports - 1] = (uint16_t)x;
	return rc;
}

static int k_ports(struct parser *p, const char *key, const char *v)
{
	return for_each_word(p, v, key, port_word, cur_group(p));
}

static int k_preferred(struct parser *p, const char *key, const char *v)
{
	if (parse_bool(v, &cur_group(p)->preferred) < 0)
		return cfg_err(p, "%s: expected yes or no", key);
	return 0;
}

static const struct key group_keys[] = {
	{ "state", k_state, false },
	{ "ports", k_ports, true },
	{ "preferred", k_preferred, false },
};

/* [lun N] */

static int k_backend(struct parser *p, const char *key, const char *v)
{
	static const char *const names[] = { "ram", "null", "file", "block", "rbd" };

	for (int i = 0; i < 5; i++) {
		if (!strcmp(v, names[i])) {
			cur_lun(p)->backend = (enum scsitgtd_backend)i;
			return 0;
		}
	}
	return cfg_err(p, "%s: expected ram, null, file, block or rbd", key);
}

static int k_size(struct parser *p, const char *key, const char *v)
{
	uint64_t x;

	if (size_arg_parse(v, &x) < 0 || x == 0)
		return cfg_err(p, "%s: expected a byte count like 4096, 64M or 2G", key);
	cur_lun(p)->size = x;
	return 0;
}

static int k_block_size(struct parser *p, const char *key, const char *v)
{
	uint64_t x;

	if (cfg_parse_u64(v, 4096, &x) < 0 || (x != 512 && x != 4096))
		return cfg_err(p, "%s: expected 512 or 4096", key);
	cur_lun(p)->block_size = (uint32_t)x;
	return 0;
}

static int k_lun_str(struct parser *p, const char *key, const char *v)
{
	struct scsitgtd_lun *l = cur_lun(p);
	static const struct {
		const char *key;
		size_t off, max; /* max 0: a path */
	} strs[] = {
		{ "path", offsetof(struct scsitgtd_lun, path), 0 },
		{ "pr_file", offsetof(struct scsitgtd_lun, pr_file), 0 },
		{ "vendor", offsetof(struct scsitgtd_lun, vendor), 8 },
		{ "product", offsetof(struct scsitgtd_lun, product), 16 },
		{ "revision", offsetof(struct scsitgtd_lun, revision), 4 },
		{ "serial", offsetof(struct scsitgtd_lun, serial), 32 },
		{ "rbd_namespace", offsetof(struct scsitgtd_lun, rbd_namespace), 0 },
		{ "rbd_client_id", offsetof(struct scsitgtd_lun, rbd_client_id), 0 },
		{ "rbd_conf", offsetof(struct scsitgtd_lun, rbd_conf), 0 },
	};

	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++) {
		if (strcmp(key, strs[i].key))
			continue;
		if (*v == '\0')
			return cfg_err(p, "%s: empty", key);
		/* SPC-5 §4.3.1: INQUIRY identification fields are printable ASCII. */
		if (strs[i].max && strlen(v) > strs[i].max)
			return cfg_err(p, "%s: 1..%zu characters", key, strs[i].max);
		for (const char *c = v; strs[i].max && *c; c++)
			if (*c < 0x20 || *c > 0x7e)
				return cfg_err(p, "%s: printable ASCII only", key);
		return cfg_set_str(p, (char **)((char *)l + strs[i].off), v);
	}
	return cfg_err(p, "unknown key \"%s\"", key);
}

static int k_lun_bool(struct parser *p, const char *key, const char *v)
{
	static const struct {
		const char *key;
		uint32_t flag;
	} flags[] = {
		{ "read_only", SCSITGTD_LUN_READ_ONLY },
		{ "thin", SCSITGTD_LUN_THIN },
		{ "removable", SCSITGTD_LUN_REMOVABLE },
		{ "write_cache", SCSITGTD_LUN_WRITE_CACHE },
		{ "claim_spc4", SCSITGTD_LUN_CLAIM_SPC4 },
	};
	struct scsitgtd_lun *l = cur_lun(p);
	bool b;

	if (parse_bool(v, &b) < 0)
		return cfg_err(p, "%s: expected yes or no", key);
	if (!strcmp(key, "offline")) {
		l->offline = b;
		return 0;
	}
	if (!strcmp(key, "direct")) {
		l->direct = b;
		return 0;
	}
	if (!strcmp(key, "write_through")) {
		l->write_through = b;
		return 0;
	}
	if (!strcmp(key, "rbd_shared_pr")) {
		l->rbd_shared_pr = b;
		return 0;
	}
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		if (!strcmp(key, flags[i].key))
			l->flags = b ? l->flags | flags[i].flag : l->flags & ~flags[i].flag;
	return 0;
}

/* @v, one of the @n @names, as its index in *@out; else an error listing them. */
static int set_choice(struct parser *p, const char *key, const char *v, const char *const *names,
		      size_t n, uint8_t *out)
{
	char want[128];
	size_t len = 0;

	for (size_t i = 0; i < n; i++) {
		if (!strcmp(v, names[i])) {
			*out = (uint8_t)i;
			return 0;
		}
		if (len < sizeof(want))
			len += (size_t)snprintf(&want[len], sizeof(want) - len, "%s%s",
						i == 0	   ? "" :
						i + 1 == n ? " or " :
							     ", ",
						names[i]);
	}
	return cfg_err(p, "%s: expected %s", key, want);
}

/* io_engine = auto | libaio | io_uring: the file backend's kernel interface (backend_aio.h). */
static int k_io_engine(struct parser *p, const char *key, const char *v)
{
	static const char *const engines[] = { "auto", "libaio", "io_uring" };

	return set_choice(p, key, v, engines, 3, &cur_lun(p)->io_engine);
}

/* uring_async = auto | always | never: where the io_uring engine's buffered copies run
 * (enum scsitgt_backend_aio_uring_async, backend_aio.h). */
static int k_uring_async(struct parser *p, const char *key, const char *v)
{
	static const char *const modes[] = { "auto", "always", "never" };

	return set_choice(p, key, v, modes, 3, &cur_lun(p)->uring_async);
}

static int k_aio_qd(struct parser *p, const char *key, const char *v)
{
	uint64_t x;
	int rc = set_uint(p, key, v, 1, 65536, &x);

	cur_lun(p)->aio_queue_depth = (uint32_t)x;
	return rc;
}

static int k_rbd_timeout(struct parser *p, const char *key, const char *v)
{
	uint64_t x;
	int rc = set_uint(p, key, v, 0, 86400, &x);

	cur_lun(p)->rbd_op_timeout = (int32_t)x;
	return rc;
}

static int k_pbe(struct parser *p, const char *key, const char *v)
{
	uint64_t x;
	int rc = set_uint(p, key, v, 0, 8, &x);

	cur_lun(p)->physical_block_exponent = (int16_t)x;
	return rc;
}

/* Block Limits VPD page (SBC-4 §6.6.4) values of scsitgt_lun_opts, by offset and width; the
 * checks between them are made at the end of the section. */
#define LUN_LIMIT_KEY(name, type, max) \
	{ #name, offsetof(struct scsitgtd_lun, name), (max), sizeof(type) == sizeof(uint64_t) },
static const struct {
	const char *key;
	size_t off;
	uint64_t max;
	bool wide;
} lun_limit_keys[] = { SCSITGTD_LUN_LIMITS(LUN_LIMIT_KEY) };
#undef LUN_LIMIT_KEY

static int k_lun_limit(struct parser *p, const char *key, const char *v)
{
	char *base = (char *)cur_lun(p);

	for (size_t i = 0; i < sizeof(lun_limit_keys) / sizeof(lun_limit_keys[0]); i++) {
		uint64_t x;
		int rc;

		if (strcmp(key, lun_limit_keys[i].key))
			continue;
		/* 0 would mean "the default": leave the key out for that. */
		rc = set_uint(p, key, v, 1, lun_limit_keys[i].max, &x);
		if (rc < 0)
			return rc;
		if (lun_limit_keys[i].wide)
			memcpy(base + lun_limit_keys[i].off, &x, sizeof(x));
		else
			memcpy(base + lun_limit_keys[i].off, &(uint32_t){ (uint32_t)x },
			       sizeof(uint32_t));
		return 0;
	}
	return 0;
}

static int hex_digit(char c)
{
	return (c >= '0' && c <= '9') ? c - '0' :
	       (c >= 'a' && c <= 'f') ? c - 'a' + 10 :
	       (c >= 'A' && c <= 'F') ? c - 'A' + 10 :
					-1;
}

/* 16 bytes from 32 hex digits; dashes only at the positions in @dashes (NULL: none). */
static int parse_hex16(const char *v, const char *dashes, uint8_t out[16])
{
	size_t n = 0;

	for (size_t i = 0; v[i]; i++) {
		int hi, lo;

		if (dashes && dashes[i] == '-') {
			if (v[i] != '-')
				return -EINVAL;
			continue;
		}
		if (n == 16 || v[i + 1] == '\0' || (dashes && dashes[i + 1] != 'x'))
			return -EINVAL;
		hi = hex_digit(v[i]);
		lo = hex_digit(v[i + 1]);
		if (hi < 0 || lo < 0)
			return -EINVAL;
		out[n++] = (uint8_t)(hi << 4 | lo);
		i++;
	}
	return n == 16 ? 0 : -EINVAL;
}

/* NAA IEEE Registered Extended designator (SPC-5 §7.7.6.6.6): 32 hex digits, the first 6. */
static int k_naa_extended(struct parser *p, const char *key, const char *v)
{
	uint8_t b[16];

	if (!strncmp(v, "0x", 2) || !strncmp(v, "0X", 2))
		v += 2;
	if (parse_hex16(v, NULL, b) < 0 || b[0] >> 4 != 6)
		return cfg_err(p,
			       "%s: expected 32 hexadecimal digits starting with 6 (NAA type 6: "
			       "IEEE company id, vendor specific id, extension)",
			       key);
	memcpy(cur_lun(p)->naa_extended, b, sizeof(b));
	return 0;
}

/* UUID designator (SPC-5 §7.7.6.12): RFC 4122 text form, variant 10b, version 1..8. */
static int k_uuid(struct parser *p, const char *key, const char *v)
{
	static const char form[] = "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx";
	uint8_t b[16];

	if (strlen(v) != sizeof(form) - 1 || parse_hex16(v, form, b) < 0)
		return cfg_err(p, "%s: expected a UUID (xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)",
			       key);
	if ((b[8] & 0xc0) != 0x80 || b[6] >> 4 < 1 || b[6] >> 4 > 8)
		return cfg_err(p, "%s: not an RFC 4122 UUID (variant 10b, version 1..8)", key);
	memcpy(cur_lun(p)->uuid, b, sizeof(b));
	return 0;
}

/* LUN masking: the initiators that see this LUN. */
static int k_visible_to(struct parser *p, const char *key, const char *v)
{
	struct scsitgtd_lun *l = cur_lun(p);
	int rc;

	if (!name_ok(v))
		return cfg_err(p, "%s: invalid initiator name \"%s\"", key, v);
	if (scsitgtd_lun_visible_to(l, v) && l->nvisible_to)
		return cfg_err(p, "%s: %s listed twice", key, v);
	rc = cfg_grow(p, (void **)&l->visible_to, &l->nvisible_to, sizeof(char *),
		      SCSITGTD_MAX_INITIATORS, "visible_to initiators of one LUN");
	if (rc < 0)
		return rc;
	return cfg_set_str(p, &l->visible_to[l->nvisible_to - 1], v);
}

/* Fault injection (backend_fault.h): the library checks the specification (the daemon asks it
 * before it accepts a file). */
static int k_fault(struct parser *p, const char *key, const char *v)
{
	struct scsitgtd_lun *l = cur_lun(p);

	if (*v == '\0')
		return cfg_err(p, "%s: empty (leave the key out for no faults)", key);
	l->fault_line = p->line;
	return cfg_set_str(p, &l->fault, v);
}

static const struct key lun_keys[] = {
	{ "backend", k_backend, false },
	{ "size", k_size, false },
	{ "block_size", k_block_size, false },
	{ "path", k_lun_str, false },
	{ "pr_file", k_lun_str, false },
	{ "vendor", k_lun_str, false },
	{ "product", k_lun_str, false },
	{ "revision", k_lun_str, false },
	{ "serial", k_lun_str, false },
	{ "rbd_namespace", k_lun_str, false },
	{ "rbd_client_id", k_lun_str, false },
	{ "rbd_conf", k_lun_str, false },
	{ "rbd_op_timeout", k_rbd_timeout, false },
	{ "rbd_shared_pr", k_lun_bool, false },
	{ "read_only", k_lun_bool, false },
	{ "thin", k_lun_bool, false },
	{ "removable", k_lun_bool, false },
	{ "write_cache", k_lun_bool, false },
	{ "offline", k_lun_bool, false },
	{ "direct", k_lun_bool, false },
	{ "write_through", k_lun_bool, false },
	{ "aio_queue_depth", k_aio_qd, false },
	{ "io_engine", k_io_engine, false },
	{ "uring_async", k_uring_async, false },
	{ "claim_spc4", k_lun_bool, false },
	{ "physical_block_exponent", k_pbe, false },
/* clang-format off: it cannot see the entries the macro expands to. */
#define LUN_LIMIT_HANDLER(name, type, max) { #name, k_lun_limit, false },
	SCSITGTD_LUN_LIMITS(LUN_LIMIT_HANDLER)
#undef LUN_LIMIT_HANDLER
	/* clang-format on */
	{ "naa_extended", k_naa_extended, false },
	{ "uuid", k_uuid, false },
	{ "visible_to", k_visible_to, true },
	{ "fault", k_fault, false },
};

/* [srp] (srp.h) */

static int k_srp_num(struct parser *p, const char *key, const char *v)
{
	static const struct {
		const char *key;
		uint64_t min, max;
	} nums[] = {
		{ "port", 1, 65535 },		{ "max_channels", 1, 64 },
		{ "queue_size", 2, 3275 },	{ "max_it_iu_len", 64, 1048576 },
		{ "max_ti_iu_len", 64, 65536 }, { "rel_port_id", 1, 65535 },
		{ "backlog", 1, 65535 },
	};
	struct scsitgtd_srp *s = cur_srp(p);
	uint64_t x = 0;
	size_t i;
	int rc;

	for (i = 0; i < sizeof(nums) / sizeof(nums[0]); i++)
		if (!strcmp(key, nums[i].key))
			break;
	rc = set_uint(p, key, v, nums[i].min, nums[i].max, &x);
	if (rc < 0)
		return rc;
	switch (i) {
	case 0:
		s->port = (uint16_t)x;
		break;
	case 1:
		s->max_channels = (uint32_t)x;
		break;
	case 2:
		s->queue_size = (uint32_t)x;
		break;
	case 3:
		s->max_it_iu_len = (uint32_t)x;
		break;
	case 4:
		s->max_ti_iu_len = (uint32_t)x;
		break;
	case 5:
		s->rel_port_id = (uint16_t)x;
		break;
	default:
		s->backlog = (uint32_t)x;
		break;
	}
	return 0;
}

static int k_srp_id(struct parser *p, const char *key, const char *v)
{
	struct scsitgtd_srp *s = cur_srp(p);
	uint64_t x;

	if (parse_id64(v, &x) < 0)
		return cfg_err(p, "%s: expected a 64-bit number (decimal or 0x hex)", key);
	if (!strcmp(key, "ioc_guid")) {
		if (x == 0)
			return cfg_err(p, "%s: must not be 0", key);
		s->ioc_guid = x;
	} else {
		s->id_ext = x;
	}
	return 0;
}

static int k_srp_bool(struct parser *p, const char *key, const char *v)
{
	struct scsitgtd_srp *s = cur_srp(p);
	bool b;

	if (parse_bool(v, &b) < 0)
		return cfg_err(p, "%s: expected yes or no", key);
	if (strcmp(key, "aer") == 0)
		s->aer = b;
	else
		s->immediate_data = b;
	return 0;
}

static const struct key srp_keys[] = {
	{ "address", k_address, false },	 { "port", k_srp_num, false },
	{ "id_ext", k_srp_id, false },		 { "ioc_guid", k_srp_id, false },
	{ "max_channels", k_srp_num, false },	 { "queue_size", k_srp_num, false },
	{ "max_it_iu_len", k_srp_num, false },	 { "max_ti_iu_len", k_srp_num, false },
	{ "immediate_data", k_srp_bool, false }, { "aer", k_srp_bool, false },
	{ "rel_port_id", k_srp_num, false },	 { "backlog", k_srp_num, false },
};

#define NKEYS(t) (sizeof(t) / sizeof((t)[0]))

/* Per section: its name for messages, its key table, and whether iSCSI parameters apply. */
static const struct {
	const char *name;
	const struct key *keys;
	size_t nkeys;
	bool params;
} sections[] = {
	[SEC_NONE] = { "", NULL, 0, false },
	[SEC_ENGINE] = { "[engine]", engine_keys, NKEYS(engine_keys), true },
	[SEC_PORTAL] = { "[portal]", portal_keys, NKEYS(portal_keys), false },
	[SEC_TARGET] = { "[target]", target_keys, NKEYS(target_keys), true },
	[SEC_ALUA_GROUP] = { "[alua_group]", group_keys, NKEYS(group_keys), false },
	[SEC_LUN] = { "[lun]", lun_keys, NKEYS(lun_keys), false },
	[SEC_SRP] = { "[srp]", srp_keys, NKEYS(srp_keys), false },
	[SEC_SKIP] = { "", NULL, 0, false },
};

_Static_assert(NKEYS(lun_keys) <= 64 && NKEYS(target_keys) <= 64, "parser.seen has 64 bits");

int cfg_key(struct parser *p, const char *key, const char *value)
{
	const struct key *keys = sections[p->sec].keys;
	int rc;

	if (p->sec == SEC_NONE)
		return cfg_err(p, "\"%s\" outside of any section", key);
	if (sections[p->sec].params) {
		rc = param_kv(p, p->sec == SEC_ENGINE ? &p->cfg->params : &cur_target(p)->params,
			      key, value);
		if (rc <= 0)
			return rc;
	}
	for (size_t i = 0; i < sections[p->sec].nkeys; i++) {
		if (strcmp(key, keys[i].name))
			continue;
		if (!keys[i].repeat && (p->seen & (1ull << i)))
			return cfg_err(p, "%s given twice in this section", key);
		p->seen |= 1ull << i;
		return keys[i].fn(p, key, value);
	}
	return cfg_err(p, "unknown key \"%s\" in %s", key, sections[p->sec].name);
}

bool cfg_key_seen(const struct parser *p, const char *key)
{
	const struct key *keys = sections[p->sec].keys;

	for (size_t i = 0; i < sections[p->sec].nkeys; i++)
		if (!strcmp(key, keys[i].name))
			return (p->seen & (1ull << i)) != 0;
	return false;
}
