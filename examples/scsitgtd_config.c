/* SPDX-License-Identifier: MIT */
/*
 * The scsitgtd configuration parser (format in docs/scsitgtd.md). Pure: text in, a struct or a
 * "line N: ..." message out. Every string is bounded by SCSITGTD_MAX_LINE and every list by a
 * SCSITGTD_MAX_* cap, so memory stays proportional to the input.
 */
#include "scsitgtd_config.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum section {
	SEC_NONE,
	SEC_ENGINE,
	SEC_PORTAL,
	SEC_TARGET,
	SEC_LUN,
};

struct parser {
	struct scsitgtd_config *cfg;
	enum section sec;
	unsigned int line;
	char *err;
	size_t err_size;
	bool nomem;
};

static int perr(struct parser *p, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (p->err == NULL || p->err_size == 0)
		return -EINVAL;
	n = snprintf(p->err, p->err_size, "line %u: ", p->line);
	if (n < 0 || (size_t)n >= p->err_size)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(p->err + n, p->err_size - (size_t)n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int pnomem(struct parser *p)
{
	p->nomem = true;
	if (p->err && p->err_size)
		snprintf(p->err, p->err_size, "line %u: out of memory", p->line);
	return -ENOMEM;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

/* Trim in place; returns the trimmed start. */
static char *trim(char *s)
{
	size_t n;

	while (is_space(*s))
		s++;
	n = strlen(s);
	while (n && is_space(s[n - 1]))
		s[--n] = '\0';
	return s;
}

static int set_str(struct parser *p, char **dst, const char *v)
{
	char *c = strdup(v);

	if (c == NULL)
		return pnomem(p);
	free(*dst);
	*dst = c;
	return 0;
}

static int parse_u64(const char *v, uint64_t max, uint64_t *out)
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

/* "64M", "1G", "4096": a byte count with an optional K/M/G/T (powers of 1024) suffix. */
static int parse_size(const char *v, uint64_t *out)
{
	char num[32];
	size_t n = strlen(v);
	unsigned int shift = 0;
	uint64_t x;

	if (n == 0 || n >= sizeof(num))
		return -EINVAL;
	memcpy(num, v, n + 1);
	switch (num[n - 1]) {
	case 'k': case 'K': shift = 10; break;
	case 'm': case 'M': shift = 20; break;
	case 'g': case 'G': shift = 30; break;
	case 't': case 'T': shift = 40; break;
	default: break;
	}
	if (shift)
		num[--n] = '\0';
	if (parse_u64(num, UINT64_MAX >> shift, &x) < 0)
		return -EINVAL;
	*out = x << shift;
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

/* "user:secret"; both parts non-empty. */
static int parse_cred(struct parser *p, const char *key, const char *v, char **user,
		      char **secret)
{
	const char *colon = strchr(v, ':');
	char *u;

	if (colon == NULL || colon == v || colon[1] == '\0')
		return perr(p, "%s: expected user:secret", key);
	u = strndup(v, (size_t)(colon - v));
	if (u == NULL)
		return pnomem(p);
	free(*user);
	*user = u;
	return set_str(p, secret, colon + 1);
}

static struct scsitgtd_target *cur_target(struct parser *p)
{
	return &p->cfg->targets[p->cfg->ntargets - 1];
}

static struct scsitgtd_lun *cur_lun(struct parser *p)
{
	struct scsitgtd_target *t = cur_target(p);

	return &t->luns[t->nluns - 1];
}

/* Grow an array of @n elements of @size by one zeroed element; bounded by @max. */
static int grow(struct parser *p, void **arr, size_t *n, size_t size, size_t max,
		const char *what)
{
	void *a;

	if (*n >= max)
		return perr(p, "too many %s (at most %zu)", what, max);
	a = realloc(*arr, (*n + 1) * size);
	if (a == NULL)
		return pnomem(p);
	memset((char *)a + *n * size, 0, size);
	*arr = a;
	(*n)++;
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

static int section_start(struct parser *p, char *hdr)
{
	struct scsitgtd_config *cfg = p->cfg;
	char *kind = trim(hdr), *arg;
	int rc;

	arg = kind;
	while (*arg && !is_space(*arg))
		arg++;
	if (*arg)
		*arg++ = '\0';
	arg = trim(arg);

	if (!strcmp(kind, "engine")) {
		if (*arg)
			return perr(p, "[engine] takes no argument");
		p->sec = SEC_ENGINE;
		return 0;
	}
	if (!strcmp(kind, "portal")) {
		struct scsitgtd_portal *po;

		if (*arg)
			return perr(p, "[portal] takes no argument");
		rc = grow(p, (void **)&cfg->portals, &cfg->nportals, sizeof(*cfg->portals),
			  SCSITGTD_MAX_PORTALS, "portals");
		if (rc < 0)
			return rc;
		po = &cfg->portals[cfg->nportals - 1];
		po->line = p->line;
		po->port = 3260;
		po->tpgt = 1;
		p->sec = SEC_PORTAL;
		return set_str(p, &po->address, "0.0.0.0");
	}
	if (!strcmp(kind, "target")) {
		struct scsitgtd_target *t;

		if (!name_ok(arg))
			return perr(p, "[target NAME]: missing or invalid target name \"%s\"", arg);
		if (scsitgtd_config_find_target(cfg, arg))
			return perr(p, "target %s defined twice", arg);
		rc = grow(p, (void **)&cfg->targets, &cfg->ntargets, sizeof(*cfg->targets),
			  SCSITGTD_MAX_TARGETS, "targets");
		if (rc < 0)
			return rc;
		t = cur_target(p);
		t->line = p->line;
		p->sec = SEC_TARGET;
		return set_str(p, &t->name, arg);
	}
	if (!strcmp(kind, "lun")) {
		struct scsitgtd_target *t;
		struct scsitgtd_lun *l;
		uint64_t id;

		if (cfg->ntargets == 0)
			return perr(p, "[lun N] before any [target NAME]");
		if (parse_u64(arg, SCSITGTD_MAX_LUN_ID, &id) < 0)
			return perr(p, "[lun N]: N must be a LUN number 0..%u", SCSITGTD_MAX_LUN_ID);
		t = cur_target(p);
		if (scsitgtd_config_find_lun(t, id))
			return perr(p, "LUN %llu of target %s defined twice", (unsigned long long)id,
				    t->name);
		rc = grow(p, (void **)&t->luns, &t->nluns, sizeof(*t->luns), SCSITGTD_MAX_LUNS,
			  "LUNs in one target");
		if (rc < 0)
			return rc;
		l = cur_lun(p);
		l->id = id;
		l->line = p->line;
		l->backend = (enum scsitgtd_backend)-1;
		p->sec = SEC_LUN;
		return 0;
	}
	return perr(p, "unknown section [%s] (engine, portal, target NAME, lun N)", kind);
}

static int kv_engine(struct parser *p, const char *k, const char *v)
{
	static const char *const levels[] = { "error", "warning", "notice", "info", "debug" };

	if (!strcmp(k, "log_level")) {
		for (int i = 0; i < 5; i++) {
			if (!strcmp(v, levels[i])) {
				p->cfg->log_level = 3 + i;
				return 0;
			}
		}
		return perr(p, "log_level: expected error, warning, notice, info or debug");
	}
	return perr(p, "unknown key \"%s\" in [engine]", k);
}

static int kv_portal(struct parser *p, const char *k, const char *v)
{
	struct scsitgtd_portal *po = &p->cfg->portals[p->cfg->nportals - 1];
	uint64_t x;

	if (!strcmp(k, "address")) {
		if (*v == '\0' || strlen(v) > 45)
			return perr(p, "address: expected a numeric IPv4 or IPv6 address");
		return set_str(p, &po->address, v);
	}
	if (!strcmp(k, "port")) {
		if (parse_u64(v, 65535, &x) < 0 || x == 0)
			return perr(p, "port: expected 1..65535");
		po->port = (uint16_t)x;
		return 0;
	}
	if (!strcmp(k, "tpgt")) {
		if (parse_u64(v, 65535, &x) < 0 || x == 0)
			return perr(p, "tpgt: expected 1..65535");
		po->tpgt = (uint16_t)x;
		return 0;
	}
	return perr(p, "unknown key \"%s\" in [portal]", k);
}

static int kv_target(struct parser *p, const char *k, const char *v)
{
	struct scsitgtd_target *t = cur_target(p);
	int rc;

	if (!strcmp(k, "alias")) {
		if (*v == '\0' || strlen(v) > 255)
			return perr(p, "alias: 1..255 characters");
		return set_str(p, &t->alias, v);
	}
	if (!strcmp(k, "initiator")) {
		if (!name_ok(v))
			return perr(p, "initiator: invalid initiator name \"%s\"", v);
		for (size_t i = 0; i < t->ninitiators; i++)
			if (!strcmp(t->initiators[i], v))
				return perr(p, "initiator %s listed twice", v);
		rc = grow(p, (void **)&t->initiators, &t->ninitiators, sizeof(char *),
			  SCSITGTD_MAX_INITIATORS, "initiators in one target");
		if (rc < 0)
			return rc;
		return set_str(p, &t->initiators[t->ninitiators - 1], v);
	}
	if (!strcmp(k, "chap"))
		return parse_cred(p, k, v, &t->chap_user, &t->chap_secret);
	if (!strcmp(k, "mutual_chap"))
		return parse_cred(p, k, v, &t->mutual_user, &t->mutual_secret);
	return perr(p, "unknown key \"%s\" in [target]", k);
}

static int kv_lun(struct parser *p, const char *k, const char *v)
{
	struct scsitgtd_lun *l = cur_lun(p);
	static const struct {
		const char *key;
		uint32_t flag;
	} flags[] = {
		{ "read_only", SCSITGTD_LUN_READ_ONLY },
		{ "thin", SCSITGTD_LUN_THIN },
		{ "removable", SCSITGTD_LUN_REMOVABLE },
		{ "write_cache", SCSITGTD_LUN_WRITE_CACHE },
	};
	uint64_t x;
	bool b;

	if (!strcmp(k, "backend")) {
		if (!strcmp(v, "ram"))
			l->backend = SCSITGTD_BACKEND_RAM;
		else if (!strcmp(v, "null"))
			l->backend = SCSITGTD_BACKEND_NULL;
		else if (!strcmp(v, "file"))
			l->backend = SCSITGTD_BACKEND_FILE;
		else
			return perr(p, "backend: expected ram, null or file");
		return 0;
	}
	if (!strcmp(k, "size")) {
		if (parse_size(v, &x) < 0 || x == 0)
			return perr(p, "size: expected a byte count like 4096, 64M or 2G");
		l->size = x;
		return 0;
	}
	if (!strcmp(k, "block_size")) {
		if (parse_u64(v, 4096, &x) < 0 || (x != 512 && x != 4096))
			return perr(p, "block_size: expected 512 or 4096");
		l->block_size = (uint32_t)x;
		return 0;
	}
	if (!strcmp(k, "path")) {
		if (*v == '\0')
			return perr(p, "path: empty");
		return set_str(p, &l->path, v);
	}
	if (!strcmp(k, "vendor") || !strcmp(k, "product") || !strcmp(k, "serial")) {
		size_t max = k[0] == 'v' ? 8 : k[0] == 'p' ? 16 : 32;

		if (*v == '\0' || strlen(v) > max)
			return perr(p, "%s: 1..%zu characters", k, max);
		for (const char *c = v; *c; c++)
			if (*c < 0x20 || *c > 0x7e)
				return perr(p, "%s: printable ASCII only", k);
		return set_str(p, k[0] == 'v' ? &l->vendor : k[0] == 'p' ? &l->product : &l->serial,
			       v);
	}
	if (!strcmp(k, "pr_file")) {
		if (*v == '\0')
			return perr(p, "pr_file: empty");
		return set_str(p, &l->pr_file, v);
	}
	if (!strcmp(k, "offline")) {
		if (parse_bool(v, &l->offline) < 0)
			return perr(p, "offline: expected yes or no");
		return 0;
	}
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		if (strcmp(k, flags[i].key))
			continue;
		if (parse_bool(v, &b) < 0)
			return perr(p, "%s: expected yes or no", k);
		l->flags = b ? l->flags | flags[i].flag : l->flags & ~flags[i].flag;
		return 0;
	}
	return perr(p, "unknown key \"%s\" in [lun]", k);
}

/* The checks that need the whole section: run when the next section starts and at EOF. */
static int section_end(struct parser *p)
{
	unsigned int line = p->line;
	struct scsitgtd_lun *l;
	int rc = 0;

	if (p->sec != SEC_LUN)
		return 0;
	l = cur_lun(p);
	p->line = l->line;
	if ((int)l->backend == -1)
		rc = perr(p, "[lun %llu]: backend missing (ram, null or file)",
			  (unsigned long long)l->id);
	else if (l->backend != SCSITGTD_BACKEND_FILE && l->size == 0)
		rc = perr(p, "[lun %llu]: size missing (needed by the %s backend)",
			  (unsigned long long)l->id, l->backend == SCSITGTD_BACKEND_RAM ? "ram" : "null");
	else if (l->backend == SCSITGTD_BACKEND_FILE && l->path == NULL)
		rc = perr(p, "[lun %llu]: path missing (needed by the file backend)",
			  (unsigned long long)l->id);
	else if (l->backend != SCSITGTD_BACKEND_FILE && l->path)
		rc = perr(p, "[lun %llu]: path is only for the file backend",
			  (unsigned long long)l->id);
	else if (l->size % (l->block_size ? l->block_size : 512))
		rc = perr(p, "[lun %llu]: size is not a multiple of the block size",
			  (unsigned long long)l->id);
	p->line = line;
	return rc;
}

static int parse_line(struct parser *p, char *s)
{
	char *eq, *k, *v;
	size_t n;

	s = trim(s);
	if (*s == '\0' || *s == '#' || *s == ';')
		return 0;
	if (*s == '[') {
		int rc;

		n = strlen(s);
		if (s[n - 1] != ']')
			return perr(p, "section header without closing ']'");
		s[n - 1] = '\0';
		rc = section_end(p);
		if (rc < 0)
			return rc;
		return section_start(p, s + 1);
	}
	eq = strchr(s, '=');
	if (eq == NULL)
		return perr(p, "expected \"key = value\" or \"[section]\"");
	*eq = '\0';
	k = trim(s);
	v = trim(eq + 1);
	if (*k == '\0')
		return perr(p, "empty key");
	switch (p->sec) {
	case SEC_ENGINE:
		return kv_engine(p, k, v);
	case SEC_PORTAL:
		return kv_portal(p, k, v);
	case SEC_TARGET:
		return kv_target(p, k, v);
	case SEC_LUN:
		return kv_lun(p, k, v);
	case SEC_NONE:
	default:
		return perr(p, "\"%s\" outside of any section", k);
	}
}

int scsitgtd_config_parse(const char *text, size_t len, struct scsitgtd_config **out, char *err,
			  size_t err_size)
{
	struct parser p = { .err = err, .err_size = err_size };
	char line[SCSITGTD_MAX_LINE + 1];
	size_t pos = 0;
	int rc = 0;

	if (out == NULL || (text == NULL && len))
		return -EINVAL;
	*out = NULL;
	if (err && err_size)
		err[0] = '\0';
	p.cfg = calloc(1, sizeof(*p.cfg));
	if (p.cfg == NULL)
		return pnomem(&p);
	p.cfg->log_level = 5;
	while (pos < len && rc == 0) {
		size_t start = pos, n;

		while (pos < len && text[pos] != '\n')
			pos++;
		n = pos - start;
		if (pos < len)
			pos++;
		p.line++;
		if (n > SCSITGTD_MAX_LINE) {
			rc = perr(&p, "line longer than %d bytes", SCSITGTD_MAX_LINE);
			break;
		}
		if (memchr(text + start, '\0', n)) {
			rc = perr(&p, "NUL byte in the text");
			break;
		}
		memcpy(line, text + start, n);
		line[n] = '\0';
		rc = parse_line(&p, line);
	}
	if (rc == 0)
		rc = section_end(&p);
	if (rc < 0) {
		scsitgtd_config_free(p.cfg);
		return p.nomem ? -ENOMEM : rc;
	}
	*out = p.cfg;
	return 0;
}

void scsitgtd_config_free(struct scsitgtd_config *cfg)
{
	if (cfg == NULL)
		return;
	for (size_t i = 0; i < cfg->nportals; i++)
		free(cfg->portals[i].address);
	free(cfg->portals);
	for (size_t i = 0; i < cfg->ntargets; i++) {
		struct scsitgtd_target *t = &cfg->targets[i];

		free(t->name);
		free(t->alias);
		for (size_t j = 0; j < t->ninitiators; j++)
			free(t->initiators[j]);
		free(t->initiators);
		free(t->chap_user);
		free(t->chap_secret);
		free(t->mutual_user);
		free(t->mutual_secret);
		for (size_t j = 0; j < t->nluns; j++) {
			free(t->luns[j].path);
			free(t->luns[j].vendor);
			free(t->luns[j].product);
			free(t->luns[j].serial);
			free(t->luns[j].pr_file);
		}
		free(t->luns);
	}
	free(cfg->targets);
	free(cfg);
}

const struct scsitgtd_target *scsitgtd_config_find_target(const struct scsitgtd_config *cfg,
							  const char *name)
{
	for (size_t i = 0; cfg && i < cfg->ntargets; i++)
		if (cfg->targets[i].name && !strcmp(cfg->targets[i].name, name))
			return &cfg->targets[i];
	return NULL;
}

const struct scsitgtd_lun *scsitgtd_config_find_lun(const struct scsitgtd_target *t, uint64_t id)
{
	for (size_t i = 0; t && i < t->nluns; i++)
		if (t->luns[i].id == id)
			return &t->luns[i];
	return NULL;
}

static bool str_eq(const char *a, const char *b)
{
	return (a == NULL && b == NULL) || (a && b && !strcmp(a, b));
}

bool scsitgtd_lun_needs_recreate(const struct scsitgtd_lun *a, const struct scsitgtd_lun *b)
{
	/* Size changes of ram/null LUNs and offline changes apply in place; all else needs a new
	 * LUN. A file LUN's size follows its file. */
	return a->backend != b->backend || a->block_size != b->block_size || a->flags != b->flags ||
	       !str_eq(a->path, b->path) || !str_eq(a->vendor, b->vendor) ||
	       !str_eq(a->product, b->product) || !str_eq(a->serial, b->serial) ||
	       !str_eq(a->pr_file, b->pr_file) ||
	       (a->backend == SCSITGTD_BACKEND_FILE && a->size != b->size);
}
