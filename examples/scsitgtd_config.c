/* SPDX-License-Identifier: MIT */
/*
 * The scsitgtd configuration parser (format in docs/scsitgtd.md). libinih does the lexing
 * (sections, "key = value" pairs, comments, line ends); this file keeps the meaning: which
 * sections and keys exist, their values and ranges, and the checks that need a whole section
 * or the whole file. Pure: text in, a struct or a "line N: ..." message out. Every line is
 * bounded by SCSITGTD_MAX_LINE and every list by a SCSITGTD_MAX_* cap, so memory stays
 * proportional to the input.
 */
#include "scsitgtd_config_int.h"

#include <errno.h>
#include <ini.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * libinih calls its handler for "key = value" pairs only (the Debian build leaves
 * INI_CALL_HANDLER_ON_NEW_SECTION off), so an empty section would go unseen and two
 * sections of one name would merge. The reader therefore hands libinih one extra pair after
 * every section header line: this key, which no file can contain (a control character), with
 * an empty value. Its handler call opens the section, with libinih's own reading of the name.
 */
#define MARKER_KEY "\x01section"
#define MARKER_LINE MARKER_KEY " =\n"

/* Append to the error text what fits (always NUL-terminated). */
static void err_append(struct parser *p, const char *fmt, va_list ap)
{
	int n;

	if (p->err == NULL || p->err_len + 1 >= p->err_size)
		return;
	n = vsnprintf(p->err + p->err_len, p->err_size - p->err_len, fmt, ap);
	if (n > 0)
		p->err_len += (size_t)n < p->err_size - p->err_len ? (size_t)n :
								     p->err_size - p->err_len - 1;
}

static void err_add(struct parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void err_add(struct parser *p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	err_append(p, fmt, ap);
	va_end(ap);
}

int cfg_err_at(struct parser *p, unsigned int line, const char *fmt, ...)
{
	va_list ap;

	if (p->nomem)
		return -EINVAL;
	p->failed = true;
	if (++p->nerrors > SCSITGTD_MAX_ERRORS)
		return -EINVAL;
	err_add(p, "%sline %u: ", p->nerrors > 1 ? "\n" : "", line);
	va_start(ap, fmt);
	err_append(p, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

int cfg_nomem(struct parser *p)
{
	if (!p->nomem)
		err_add(p, "%sline %u: out of memory", p->nerrors ? "\n" : "", p->line);
	p->failed = true;
	p->nomem = true;
	return -ENOMEM;
}

int cfg_set_str(struct parser *p, char **dst, const char *v)
{
	char *c = strdup(v);

	if (c == NULL)
		return cfg_nomem(p);
	free(*dst);
	*dst = c;
	return 0;
}

/* ---- sections ---- */

/*
 * The Block Limits values against each other, as scsitgt_lun_create() checks them (lun.h,
 * SBC-4 §6.6.4), so that a file it would refuse is refused at FILE:LINE. What depends on the
 * backend (a block device's own block size and physical block) is left to the library.
 */
static int lun_limits_check(struct parser *p, const struct scsitgtd_lun *l)
{
	uint32_t bs = l->block_size ? l->block_size : 512;
	uint32_t max = l->max_transfer_blocks ? l->max_transfer_blocks :
						SCSITGTD_MAX_XFER_BYTES / bs;
	unsigned long long id = (unsigned long long)l->id;

	if (l->max_transfer_blocks > SCSITGTD_MAX_XFER_BYTES / bs)
		return cfg_err_at(p, l->line,
				  "[lun %llu]: max_transfer_blocks above %u (8 MiB of %u-byte "
				  "blocks, the library's largest transfer)",
				  id, SCSITGTD_MAX_XFER_BYTES / bs, bs);
	if (l->optimal_transfer_granularity > max)
		return cfg_err_at(p, l->line,
				  "[lun %llu]: optimal_transfer_granularity above the maximum "
				  "transfer length (%u blocks)",
				  id, max);
	if (l->optimal_transfer_blocks > max)
		return cfg_err_at(p, l->line,
				  "[lun %llu]: optimal_transfer_blocks above the maximum transfer "
				  "length (%u blocks)",
				  id, max);
	if (l->optimal_transfer_blocks && l->optimal_transfer_granularity &&
	    l->optimal_transfer_blocks % l->optimal_transfer_granularity)
		return cfg_err_at(p, l->line,
				  "[lun %llu]: optimal_transfer_blocks is not a multiple of "
				  "optimal_transfer_granularity",
				  id);
	if ((l->max_unmap_blocks || l->max_unmap_descriptors || l->unmap_granularity ||
	     l->unmap_granularity_alignment) &&
	    !(l->flags & SCSITGTD_LUN_THIN))
		return cfg_err_at(p, l->line,
				  "[lun %llu]: max_unmap_*, unmap_granularity and "
				  "unmap_granularity_alignment need thin = yes (UNMAP)",
				  id);
	if (l->unmap_granularity_alignment &&
	    l->unmap_granularity_alignment >= l->unmap_granularity)
		return cfg_err_at(p, l->line,
				  "[lun %llu]: unmap_granularity_alignment must be below "
				  "unmap_granularity (and needs it)",
				  id);
	return 0;
}

/* The checks that need the whole section: run when the next section starts and at EOF. */
static int section_end(struct parser *p)
{
	struct scsitgtd_target *t;
	struct scsitgtd_lun *l;

	/* A section with a wrong key is not checked whole: "size missing" after "size: expected
	 * a byte count" would only repeat it. */
	if (p->nerrors != p->sec_nerrors)
		return 0;
	switch (p->sec) {
	case SEC_ENGINE:
		if (p->cfg->discovery_secret && p->cfg->discovery_mutual_secret &&
		    !strcmp(p->cfg->discovery_secret, p->cfg->discovery_mutual_secret))
			return cfg_err_at(p, p->engine_line,
					  "[engine]: discovery_mutual_chap must use a secret other "
					  "than discovery_chap's (RFC 7143 §12.1.3)");
		return 0;
	case SEC_TARGET:
		t = cur_target(p);
		if (t->name == NULL)
			return cfg_err_at(p, t->line,
					  "[target]: name missing (the target's iSCSI name, "
					  "e.g. name = iqn.2024-01.org.example:disk)");
		if (t->chap_secret && t->mutual_secret && !strcmp(t->chap_secret, t->mutual_secret))
			return cfg_err_at(p, t->line,
					  "[target]: mutual_chap must use a secret other "
					  "than chap's (RFC 7143 §12.1.3)");
		if (t->gw.group == 0 &&
		    (t->gw.nports || t->gw.npeers || cfg_key_seen(p, "rbd_gateway_preferred") ||
		     t->gw.holddown_ms >= 0 || t->gw.probe_ms >= 0))
			return cfg_err_at(p, t->line,
					  "[target]: rbd_gateway_* keys need rbd_gateway = GROUP");
		for (size_t i = 0; i < t->gw.npeers; i++)
			if (t->gw.peer_groups[i] == t->gw.group)
				return cfg_err_at(p, t->gw.line,
						  "[target]: rbd_gateway_peer %u is this "
						  "gateway's own group",
						  t->gw.group);
		return 0;
	case SEC_SRP:
		if (cur_srp(p)->ioc_guid == 0)
			return cfg_err_at(p, cur_srp(p)->line,
					  "[srp]: ioc_guid missing (the I/O "
					  "controller GUID initiators address)");
		return 0;
	case SEC_LUN:
		l = cur_lun(p);
		if ((int)l->backend == -1)
			return cfg_err_at(p, l->line,
					  "[lun %llu]: backend missing (ram, null, file, "
					  "block or rbd)",
					  (unsigned long long)l->id);
		if ((l->backend == SCSITGTD_BACKEND_RAM || l->backend == SCSITGTD_BACKEND_NULL) &&
		    l->size == 0)
			return cfg_err_at(p, l->line,
					  "[lun %llu]: size missing (needed by the %s "
					  "backend)",
					  (unsigned long long)l->id,
					  l->backend == SCSITGTD_BACKEND_RAM ? "ram" : "null");
		if ((l->backend == SCSITGTD_BACKEND_FILE || l->backend == SCSITGTD_BACKEND_BLOCK) &&
		    l->path == NULL)
			return cfg_err_at(p, l->line,
					  "[lun %llu]: path missing (needed by the %s "
					  "backend)",
					  (unsigned long long)l->id,
					  l->backend == SCSITGTD_BACKEND_FILE ? "file" : "block");
		if (l->backend == SCSITGTD_BACKEND_RBD) {
			const char *slash = l->path ? strchr(l->path, '/') : NULL;

			if (slash == NULL || slash == l->path || slash[1] == '\0' ||
			    strchr(slash + 1, '/'))
				return cfg_err_at(p, l->line,
						  "[lun %llu]: path must be POOL/IMAGE for the "
						  "rbd backend",
						  (unsigned long long)l->id);
			if (l->size || cfg_key_seen(p, "direct") ||
			    cfg_key_seen(p, "aio_queue_depth") || cfg_key_seen(p, "io_engine") ||
			    cfg_key_seen(p, "uring_async"))
				return cfg_err_at(p, l->line,
						  "[lun %llu]: an RBD image has its own size and "
						  "no direct, aio_queue_depth, io_engine or "
						  "uring_async; remove them",
						  (unsigned long long)l->id);
		} else if (l->rbd_namespace || l->rbd_client_id || l->rbd_conf ||
			   l->rbd_op_timeout >= 0 || cfg_key_seen(p, "rbd_shared_pr")) {
			return cfg_err_at(p, l->line,
					  "[lun %llu]: rbd_* keys are only for the rbd backend",
					  (unsigned long long)l->id);
		}
		if ((l->backend == SCSITGTD_BACKEND_RAM || l->backend == SCSITGTD_BACKEND_NULL) &&
		    (l->path || cfg_key_seen(p, "direct") || cfg_key_seen(p, "write_through") ||
		     cfg_key_seen(p, "aio_queue_depth") || cfg_key_seen(p, "io_engine") ||
		     cfg_key_seen(p, "uring_async")))
			return cfg_err_at(p, l->line,
					  "[lun %llu]: path, direct, write_through, "
					  "aio_queue_depth, io_engine and uring_async are only for "
					  "the file and block backends",
					  (unsigned long long)l->id);
		if (l->backend == SCSITGTD_BACKEND_BLOCK && l->size)
			return cfg_err_at(p, l->line,
					  "[lun %llu]: a block device's size is its own; "
					  "remove size",
					  (unsigned long long)l->id);
		if (l->size % (l->block_size ? l->block_size : 512))
			return cfg_err_at(p, l->line,
					  "[lun %llu]: size is not a multiple of the block "
					  "size",
					  (unsigned long long)l->id);
		return lun_limits_check(p, l);
	default:
		return 0;
	}
}

static int section_open_kind(struct parser *p, const char *hdr)
{
	struct scsitgtd_config *cfg = p->cfg;
	char kind[16];
	const char *arg;
	size_t n = strcspn(hdr, " \t");
	uint64_t id;
	int rc;

	p->sec = SEC_NONE;
	p->sec_nerrors = p->nerrors;
	p->seen = 0;
	arg = hdr + n + strspn(hdr + n, " \t");
	if (n >= sizeof(kind))
		n = sizeof(kind) - 1;
	memcpy(kind, hdr, n);
	kind[n] = '\0';
	if (*hdr == '\0')
		return cfg_err(p, "empty section name []");
	/* libinih keeps 49 bytes of a section name; ours are far shorter. */
	if (strlen(hdr) >= 49)
		return cfg_err(p, "section header longer than 48 characters");

	if (!strcmp(kind, "engine") || !strcmp(kind, "portal") || !strcmp(kind, "target") ||
	    !strcmp(kind, "srp")) {
		if (*arg)
			return cfg_err(p, "[%s] takes no argument (\"%s\")", kind, arg);
	}
	if (!strcmp(kind, "engine")) {
		if (p->engine_seen)
			return cfg_err(p, "[engine] given twice");
		p->engine_seen = true;
		p->engine_line = p->line;
		p->sec = SEC_ENGINE;
		return 0;
	}
	if (!strcmp(kind, "portal")) {
		struct scsitgtd_portal *po;

		rc = cfg_grow(p, (void **)&cfg->portals, &cfg->nportals, sizeof(*cfg->portals),
			      SCSITGTD_MAX_PORTALS, "portals");
		if (rc < 0)
			return rc;
		po = cur_portal(p);
		po->line = p->line;
		po->port = 3260;
		po->tpgt = 1;
		po->max_connections = -1;
		po->max_login_connections = -1;
		po->max_connections_per_initiator = -1;
		p->sec = SEC_PORTAL;
		return cfg_set_str(p, &po->address, "0.0.0.0");
	}
	if (!strcmp(kind, "target")) {
		struct scsitgtd_target *t;

		rc = cfg_grow(p, (void **)&cfg->targets, &cfg->ntargets, sizeof(*cfg->targets),
			      SCSITGTD_MAX_TARGETS, "targets");
		if (rc < 0)
			return rc;
		t = cur_target(p);
		t->line = p->line;
		t->max_sessions = -1;
		t->max_lun_commands = -1;
		t->gw.holddown_ms = -1;
		t->gw.probe_ms = -1;
		p->sec = SEC_TARGET;
		return 0;
	}
	if (!strcmp(kind, "lun")) {
		struct scsitgtd_target *t;
		struct scsitgtd_lun *l;

		if (cfg->ntargets == 0)
			return cfg_err(p, "[lun N] before any [target]");
		if (cfg_parse_u64(arg, SCSITGTD_MAX_LUN_ID, &id) < 0)
			return cfg_err(p, "[lun N]: N must be a LUN number 0..%u",
				       SCSITGTD_MAX_LUN_ID);
		t = cur_target(p);
		if (scsitgtd_config_find_lun(t, id))
			return cfg_err(p, "LUN %llu of this target defined twice",
				       (unsigned long long)id);
		rc = cfg_grow(p, (void **)&t->luns, &t->nluns, sizeof(*t->luns), SCSITGTD_MAX_LUNS,
			      "LUNs in one target");
		if (rc < 0)
			return rc;
		l = cur_lun(p);
		l->id = id;
		l->line = p->line;
		l->backend = (enum scsitgtd_backend) - 1;
		l->direct = true;
		l->physical_block_exponent = -1;
		l->rbd_op_timeout = -1;
		l->rbd_shared_pr = true;
		p->sec = SEC_LUN;
		return 0;
	}
	if (!strcmp(kind, "alua_group")) {
		struct scsitgtd_target *t;
		struct scsitgtd_alua_group *g;

		if (cfg->ntargets == 0)
			return cfg_err(p, "[alua_group N] before any [target]");
		if (cfg_parse_u64(arg, 65535, &id) < 0 || id == 0)
			return cfg_err(p, "[alua_group N]: N must be a group number 1..65535");
		t = cur_target(p);
		if (scsitgtd_config_find_group(t, (uint16_t)id))
			return cfg_err(p, "alua_group %llu of this target defined twice",
				       (unsigned long long)id);
		rc = cfg_grow(p, (void **)&t->groups, &t->ngroups, sizeof(*t->groups),
			      SCSITGTD_MAX_ALUA_GROUPS, "ALUA groups in one target");
		if (rc < 0)
			return rc;
		g = cur_group(p);
		g->id = (uint16_t)id;
		g->line = p->line;
		p->sec = SEC_ALUA_GROUP;
		return 0;
	}
	if (!strcmp(kind, "srp")) {
		struct scsitgtd_target *t;
		struct scsitgtd_srp *s;

		if (cfg->ntargets == 0)
			return cfg_err(p, "[srp] before any [target]");
		t = cur_target(p);
		rc = cfg_grow(p, (void **)&t->srps, &t->nsrps, sizeof(*t->srps), SCSITGTD_MAX_SRP,
			      "SRP ports in one target");
		if (rc < 0)
			return rc;
		s = cur_srp(p);
		s->line = p->line;
		s->port = 5555;
		s->immediate_data = -1;
		s->aer = -1;
		p->sec = SEC_SRP;
		return cfg_set_str(p, &s->address, "0.0.0.0");
	}
	return cfg_err(p, "unknown section [%s] (engine, portal, target, alua_group N, lun N, srp)",
		       hdr);
}

/* The previous section ends (its errors are noted), the next one begins; the keys of one whose
 * header is refused are skipped, so that its errors are not reported against another. */
static int section_open(struct parser *p, const char *hdr)
{
	int rc;

	section_end(p);
	rc = section_open_kind(p, hdr);
	if (rc < 0)
		p->sec = SEC_SKIP;
	return rc;
}

/* The libinih handler: non-zero to go on (errors are noted and the parse goes on). */
static int on_pair(void *user, const char *section, const char *key, const char *value)
{
	struct parser *p = user;

	if (p->nomem)
		return 0;
	if (p->marker_due) {
		p->marker_due = false;
		section_open(p, section);
	} else if (p->sec != SEC_SKIP) {
		cfg_key(p, key, value);
	}
	return !p->nomem;
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

/*
 * libinih's line source (fgets-like): the next line of the text, or the marker pair after a
 * section header. It enforces what libinih leaves to its caller: the line length limit and
 * no NUL bytes (libinih would cut the line there).
 */
static char *reader(char *str, int num, void *stream)
{
	struct parser *p = stream;
	const char *s, *nl;
	size_t n, body;

	if (p->nomem || num < (int)sizeof(MARKER_LINE))
		return NULL;
	if (p->inject) {
		p->inject = false;
		p->marker_due = true;
		memcpy(str, MARKER_LINE, sizeof(MARKER_LINE));
		return str;
	}
	if (p->pos >= p->len)
		return NULL;
	s = p->text + p->pos;
	nl = memchr(s, '\n', p->len - p->pos);
	n = nl ? (size_t)(nl - s) + 1 : p->len - p->pos;
	body = nl ? n - 1 : n;
	p->line++;
	p->line_text = s;
	p->line_len = body;
	if (body > SCSITGTD_MAX_LINE || n + 1 > (size_t)num || memchr(s, '\0', n)) {
		/* Noted, and handed to libinih as an empty line. */
		if (memchr(s, '\0', n))
			cfg_err(p, "NUL byte in the text");
		else
			cfg_err(p, "line longer than %d bytes", SCSITGTD_MAX_LINE);
		p->pos += n;
		p->inject = false;
		memcpy(str, "\n", 2);
		return str;
	}
	memcpy(str, s, n);
	str[n] = '\0';
	p->pos += n;
	/* libinih's rule: after leading white space (and a UTF-8 BOM on line 1), '[' opens a
	 * section header. (The text need not end in NUL: look at the copy.) */
	s = str;
	if (p->line == 1 && n >= 3 && !memcmp(s, "\xef\xbb\xbf", 3))
		s += 3;
	while (is_blank(*s))
		s++;
	p->inject = *s == '[';
	return str;
}

/* libinih's settings: process-wide variables in Debian's build. */
static void inih_setup(void)
{
	ini_use_stack = false; /* a heap buffer, so that lines may be long */
	ini_allow_realloc = false;
	ini_max_line = SCSITGTD_MAX_LINE + 3; /* text, "\r\n", NUL */
	ini_initial_alloc = SCSITGTD_MAX_LINE + 3;
	ini_allow_multiline = false;	   /* indented lines are ordinary lines */
	ini_allow_inline_comments = false; /* secrets may contain ';' and '#' */
	ini_allow_no_value = false;
	ini_stop_on_first_error = true;
	ini_allow_bom = true;
}

/* A syntax error libinih found: on the last line read (it stops on each). */
static int syntax_error(struct parser *p)
{
	const char *s = p->line_text;
	size_t n = p->line_len;

	while (n && is_blank(*s)) {
		s++;
		n--;
	}
	if (n && *s == '[')
		return cfg_err(p, "section header without closing ']'");
	return cfg_err(p, "expected \"key = value\", \"[section]\" or a comment (# or ;)");
}

/* Checks across sections. */
static int file_end(struct parser *p)
{
	struct scsitgtd_config *cfg = p->cfg;

	for (size_t i = 0; i < cfg->nportals; i++) {
		for (size_t j = 0; j < i; j++) {
			if (scsitgtd_portal_same(&cfg->portals[i], &cfg->portals[j]))
				return cfg_err_at(p, cfg->portals[i].line,
						  "portal %s port %u defined "
						  "twice (first on line %u)",
						  cfg->portals[i].address, cfg->portals[i].port,
						  cfg->portals[j].line);
		}
	}
	for (size_t i = 0; i < cfg->nportals; i++)
		if (cfg->portals[i].rdma_buffer &&
		    cfg->portals[i].transport != SCSITGTD_TRANSPORT_ISER)
			return cfg_err_at(p, cfg->portals[i].line,
					  "[portal]: rdma_buffer is only for "
					  "transport = iser");
	for (size_t i = 0; i < cfg->ntargets; i++) {
		struct scsitgtd_target *t = &cfg->targets[i];

		/* RDMA/CM ports are per address, whichever target listens on them. */
		for (size_t j = 0; j < t->nsrps; j++) {
			for (size_t k = 0; k <= i; k++) {
				const struct scsitgtd_target *u = &cfg->targets[k];

				for (size_t m = 0; m < (k == i ? j : u->nsrps); m++)
					if (u->srps[m].port == t->srps[j].port &&
					    !strcmp(u->srps[m].address, t->srps[j].address))
						return cfg_err_at(
							p, t->srps[j].line,
							"[srp]: %s port %u is used by the "
							"[srp] on line %u already",
							t->srps[j].address, t->srps[j].port,
							u->srps[m].line);
			}
		}
		/* A gateway drives its target's ALUA groups itself, for its one RBD LUN
		 * (backend_rbd_gateway.h: the ALUA state belongs to all LUNs of a target). */
		if (t->gw.group && (t->nluns != 1 || t->luns[0].backend != SCSITGTD_BACKEND_RBD))
			return cfg_err_at(p, t->gw.line,
					  "[target]: rbd_gateway needs exactly one LUN, "
					  "with backend = rbd");
		if (t->gw.group && (t->ngroups || t->alua_modes))
			return cfg_err_at(p, t->gw.line,
					  "[target]: rbd_gateway sets the target's ALUA groups "
					  "and modes itself: remove alua and [alua_group]");
		/* ALUA groups need ALUA: default to implicit (the host, i.e. this file, drives
		 * the states). */
		if (t->ngroups && t->alua_modes == 0)
			t->alua_modes = 1;
	}
	return 0;
}

int scsitgtd_config_parse(const char *text, size_t len, struct scsitgtd_config **out, char *err,
			  size_t err_size)
{
	struct parser p = { .err = err, .err_size = err_size, .text = text, .len = len };
	int rc;

	if (out == NULL || (text == NULL && len))
		return -EINVAL;
	*out = NULL;
	if (err && err_size)
		err[0] = '\0';
	p.cfg = calloc(1, sizeof(*p.cfg));
	if (p.cfg == NULL)
		return cfg_nomem(&p);
	p.cfg->log_level = 5;
	p.cfg->workers = -2;
	p.cfg->conn_workers = -1;
	inih_setup();
	for (;;) {
		size_t pos = p.pos;

		rc = ini_parse_stream(reader, &p, on_pair, &p);
		if (rc == -2 || p.nomem) {
			cfg_nomem(&p);
			break;
		}
		if (rc <= 0)
			break;
		/* libinih stopped on a syntax error in the last line read: note it and go on
		 * after it with a new libinih pass (our state is the parser's, not libinih's). */
		if (p.inject) {
			/* A broken section header: the section before it ends, its keys go. */
			p.inject = false;
			section_end(&p);
			syntax_error(&p);
			p.sec = SEC_SKIP;
		} else {
			syntax_error(&p);
		}
		if (p.pos >= p.len || p.pos == pos)
			break;
	}
	if (!p.nomem)
		section_end(&p);
	/* The checks across sections assume sound sections. */
	if (!p.failed)
		file_end(&p);
	if (p.nerrors > SCSITGTD_MAX_ERRORS && !p.nomem)
		err_add(&p, "\n(%u more errors not listed)", p.nerrors - SCSITGTD_MAX_ERRORS);
	if (p.failed) {
		scsitgtd_config_free(p.cfg);
		return p.nomem ? -ENOMEM : -EINVAL;
	}
	*out = p.cfg;
	return 0;
}

int scsitgtd_config_check(struct scsitgtd_config *cfg, char *err, size_t err_size)
{
	struct parser p = { .cfg = cfg, .err = err, .err_size = err_size };

	if (err && err_size)
		err[0] = '\0';
	file_end(&p);
	return p.failed ? -EINVAL : 0;
}

void scsitgtd_lun_clear(struct scsitgtd_lun *l)
{
	free(l->path);
	free(l->rbd_namespace);
	free(l->rbd_client_id);
	free(l->rbd_conf);
	free(l->vendor);
	free(l->product);
	free(l->revision);
	free(l->serial);
	free(l->pr_file);
	free(l->fault);
	for (size_t k = 0; k < l->nvisible_to; k++)
		free(l->visible_to[k]);
	free(l->visible_to);
	memset(l, 0, sizeof(*l));
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
		for (size_t j = 0; j < t->nichap; j++) {
			free(t->ichap[j].initiator);
			free(t->ichap[j].user);
			free(t->ichap[j].secret);
		}
		free(t->ichap);
		for (size_t j = 0; j < t->ngroups; j++)
			free(t->groups[j].ports);
		free(t->groups);
		for (size_t j = 0; j < t->naddresses; j++) {
			free(t->addresses[j].initiator);
			free(t->addresses[j].cidr);
		}
		free(t->addresses);
		for (size_t j = 0; j < t->nsrps; j++)
			free(t->srps[j].address);
		free(t->srps);
		for (size_t j = 0; j < t->nluns; j++)
			scsitgtd_lun_clear(&t->luns[j]);
		free(t->luns);
	}
	free(cfg->targets);
	free(cfg->pr_dir);
	free(cfg->control_socket);
	free(cfg->pidfile);
	free(cfg->metrics_address);
	free(cfg->discovery_user);
	free(cfg->discovery_secret);
	free(cfg->discovery_mutual_user);
	free(cfg->discovery_mutual_secret);
	free(cfg);
}

/* ---- a deep copy (the control socket changes a copy, then applies it as a reload) ---- */

static bool dup_str(char **s)
{
	if (*s == NULL)
		return true;
	*s = strdup(*s);
	return *s != NULL;
}

/* Replace *@arr (@n elements of @size) by a copy; false on failure (then *arr is NULL). */
static bool dup_arr(void *arr, size_t n, size_t size)
{
	void **a = arr, *c;

	if (*a == NULL || n == 0) {
		*a = NULL;
		return true;
	}
	c = malloc(n * size);
	if (c)
		memcpy(c, *a, n * size);
	*a = c;
	return c != NULL;
}

static bool dup_strv(char ***v, size_t *n)
{
	bool ok = dup_arr(v, *n, sizeof(**v));

	if (!ok)
		*n = 0;
	for (size_t i = 0; i < *n; i++)
		if (!dup_str(&(*v)[i]))
			ok = false; /* the failed one is NULL: free() of the copy copes */
	return ok;
}

/* Copy every pointer of @l in place (the struct itself already copied). */
static bool dup_lun(struct scsitgtd_lun *l)
{
	bool ok = true;
	char **strs[] = { &l->path,    &l->rbd_namespace, &l->rbd_client_id, &l->rbd_conf,
			  &l->vendor,  &l->product,	  &l->revision,	     &l->serial,
			  &l->pr_file, &l->fault };

	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
		ok &= dup_str(strs[i]);
	return dup_strv(&l->visible_to, &l->nvisible_to) && ok;
}

static bool dup_target(struct scsitgtd_target *t)
{
	bool ok = dup_str(&t->name) & dup_str(&t->alias) & dup_str(&t->chap_user) &
		  dup_str(&t->chap_secret) & dup_str(&t->mutual_user) & dup_str(&t->mutual_secret);

	ok &= dup_strv(&t->initiators, &t->ninitiators);
#define DUP_ARR(a, n) (dup_arr(&t->a, t->n, sizeof(*t->a)) ? true : (t->n = 0, false))
	ok &= DUP_ARR(ichap, nichap);
	for (size_t j = 0; j < t->nichap; j++)
		ok &= dup_str(&t->ichap[j].initiator) & dup_str(&t->ichap[j].user) &
		      dup_str(&t->ichap[j].secret);
	ok &= DUP_ARR(groups, ngroups);
	for (size_t j = 0; j < t->ngroups; j++)
		if (!dup_arr(&t->groups[j].ports, t->groups[j].nports, sizeof(uint16_t)))
			ok = false, t->groups[j].nports = 0;
	ok &= DUP_ARR(addresses, naddresses);
	for (size_t j = 0; j < t->naddresses; j++)
		ok &= dup_str(&t->addresses[j].initiator) & dup_str(&t->addresses[j].cidr);
	ok &= DUP_ARR(srps, nsrps);
	for (size_t j = 0; j < t->nsrps; j++)
		ok &= dup_str(&t->srps[j].address);
	ok &= DUP_ARR(luns, nluns);
	for (size_t j = 0; j < t->nluns; j++)
		ok &= dup_lun(&t->luns[j]);
#undef DUP_ARR
	return ok;
}

struct scsitgtd_config *scsitgtd_config_dup(const struct scsitgtd_config *cfg)
{
	struct scsitgtd_config *c = malloc(sizeof(*c));
	bool ok;

	if (c == NULL)
		return NULL;
	*c = *cfg;
	/* Every pointer is copied in place; on a failure the copy holds NULLs (and counts that
	 * match what was copied), which scsitgtd_config_free() handles. */
	ok = dup_str(&c->pr_dir) & dup_str(&c->control_socket) & dup_str(&c->pidfile) &
	     dup_str(&c->metrics_address) & dup_str(&c->discovery_user) &
	     dup_str(&c->discovery_secret) & dup_str(&c->discovery_mutual_user) &
	     dup_str(&c->discovery_mutual_secret);
	if (!dup_arr(&c->portals, c->nportals, sizeof(*c->portals)))
		ok = false, c->nportals = 0;
	for (size_t i = 0; i < c->nportals; i++)
		ok &= dup_str(&c->portals[i].address);
	if (!dup_arr(&c->targets, c->ntargets, sizeof(*c->targets)))
		ok = false, c->ntargets = 0;
	for (size_t i = 0; i < c->ntargets; i++)
		ok &= dup_target(&c->targets[i]);
	if (!ok) {
		scsitgtd_config_free(c);
		return NULL;
	}
	return c;
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

const struct scsitgtd_alua_group *scsitgtd_config_find_group(const struct scsitgtd_target *t,
							     uint16_t id)
{
	for (size_t i = 0; t && i < t->ngroups; i++)
		if (t->groups[i].id == id)
			return &t->groups[i];
	return NULL;
}

const struct scsitgtd_initiator_chap *scsitgtd_config_find_ichap(const struct scsitgtd_target *t,
								 const char *initiator)
{
	for (size_t i = 0; t && i < t->nichap; i++)
		if (t->ichap[i].initiator && !strcmp(t->ichap[i].initiator, initiator))
			return &t->ichap[i];
	return NULL;
}

bool scsitgtd_group_has_port(const struct scsitgtd_alua_group *g, uint16_t port)
{
	for (size_t i = 0; g && i < g->nports; i++)
		if (g->ports[i] == port)
			return true;
	return false;
}

static bool str_eq(const char *a, const char *b)
{
	return (a == NULL && b == NULL) || (a && b && !strcmp(a, b));
}

const struct scsitgtd_address *scsitgtd_config_find_address(const struct scsitgtd_target *t,
							    const char *initiator, const char *cidr)
{
	for (size_t i = 0; t && i < t->naddresses; i++)
		if (str_eq(t->addresses[i].initiator, initiator) &&
		    !strcmp(t->addresses[i].cidr, cidr))
			return &t->addresses[i];
	return NULL;
}

bool scsitgtd_lun_visible_to(const struct scsitgtd_lun *l, const char *initiator)
{
	if (l->nvisible_to == 0)
		return true;
	for (size_t i = 0; i < l->nvisible_to; i++)
		if (!strcmp(l->visible_to[i], initiator))
			return true;
	return false;
}

bool scsitgtd_target_masks_luns(const struct scsitgtd_target *t)
{
	for (size_t i = 0; t && i < t->nluns; i++)
		if (t->luns[i].nvisible_to)
			return true;
	return false;
}

bool scsitgtd_srp_equal(const struct scsitgtd_srp *a, const struct scsitgtd_srp *b)
{
	return !strcmp(a->address, b->address) && a->port == b->port && a->id_ext == b->id_ext &&
	       a->ioc_guid == b->ioc_guid && a->max_channels == b->max_channels &&
	       a->queue_size == b->queue_size && a->max_it_iu_len == b->max_it_iu_len &&
	       a->max_ti_iu_len == b->max_ti_iu_len && a->immediate_data == b->immediate_data &&
	       a->aer == b->aer && a->rel_port_id == b->rel_port_id && a->backlog == b->backlog;
}

/* Same Block Limits values and designators (a change re-creates the LUN: they are create-time
 * options of scsitgt_lun_create()). */
static bool lun_limits_equal(const struct scsitgtd_lun *a, const struct scsitgtd_lun *b)
{
	bool same = true;

#define LIMIT_EQUAL(name, type, max) same = same && a->name == b->name;
	SCSITGTD_LUN_LIMITS(LIMIT_EQUAL)
#undef LIMIT_EQUAL
	return same && !memcmp(a->naa_extended, b->naa_extended, sizeof(a->naa_extended)) &&
	       !memcmp(a->uuid, b->uuid, sizeof(a->uuid));
}

bool scsitgtd_lun_needs_recreate(const struct scsitgtd_lun *a, const struct scsitgtd_lun *b)
{
	/* Size changes of ram/null LUNs, offline, fault rules and masking apply in place; all else
	 * needs a new LUN. A file or block LUN's size follows its medium (re-read on every
	 * reload). Adding or removing fault injection wraps or unwraps the backend: a new LUN. */
	return a->backend != b->backend || a->block_size != b->block_size || a->flags != b->flags ||
	       a->direct != b->direct || a->write_through != b->write_through ||
	       a->aio_queue_depth != b->aio_queue_depth || a->io_engine != b->io_engine ||
	       a->uring_async != b->uring_async || !str_eq(a->path, b->path) ||
	       !str_eq(a->vendor, b->vendor) || !str_eq(a->product, b->product) ||
	       !str_eq(a->revision, b->revision) || !str_eq(a->serial, b->serial) ||
	       !str_eq(a->pr_file, b->pr_file) || !str_eq(a->rbd_namespace, b->rbd_namespace) ||
	       !str_eq(a->rbd_client_id, b->rbd_client_id) || !str_eq(a->rbd_conf, b->rbd_conf) ||
	       a->rbd_op_timeout != b->rbd_op_timeout || a->rbd_shared_pr != b->rbd_shared_pr ||
	       a->physical_block_exponent != b->physical_block_exponent ||
	       (a->fault == NULL) != (b->fault == NULL) || !lun_limits_equal(a, b) ||
	       (a->backend == SCSITGTD_BACKEND_FILE && a->size != b->size);
}

bool scsitgtd_params_equal(const struct scsitgtd_params *a, const struct scsitgtd_params *b)
{
	if (a->set != b->set)
		return false;
	for (unsigned int i = 0; i < SCSITGTD_P_COUNT; i++)
		if ((a->set & (1u << i)) && a->v[i] != b->v[i])
			return false;
	return true;
}

void scsitgtd_params_merge(struct scsitgtd_params *out, const struct scsitgtd_params *engine,
			   const struct scsitgtd_params *t)
{
	struct scsitgtd_params m = *engine;

	for (unsigned int i = 0; i < SCSITGTD_P_COUNT; i++)
		if (t->set & (1u << i))
			m.v[i] = t->v[i];
	m.set |= t->set;
	*out = m;
}

bool scsitgtd_gateway_equal(const struct scsitgtd_gateway *a, const struct scsitgtd_gateway *b)
{
	return a->group == b->group && a->nports == b->nports && a->npeers == b->npeers &&
	       !memcmp(a->ports, b->ports, a->nports * sizeof(a->ports[0])) &&
	       !memcmp(a->peer_groups, b->peer_groups, a->npeers * sizeof(a->peer_groups[0])) &&
	       !memcmp(a->peer_ports, b->peer_ports, a->npeers * sizeof(a->peer_ports[0])) &&
	       a->preferred == b->preferred && a->holddown_ms == b->holddown_ms &&
	       a->probe_ms == b->probe_ms;
}

bool scsitgtd_portal_same(const struct scsitgtd_portal *a, const struct scsitgtd_portal *b)
{
	return a->transport == b->transport && a->port == b->port &&
	       !strcmp(a->address, b->address);
}
