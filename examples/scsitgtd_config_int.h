/* SPDX-License-Identifier: MIT */
/*
 * Internals of scsitgtd's configuration parser, shared by scsitgtd_config.c (lexing through
 * libinih, sections, whole-file checks) and scsitgtd_config_keys.c (every key: its values,
 * ranges and messages). Not used by the daemon.
 */
#ifndef SCSITGTD_CONFIG_INT_H
#define SCSITGTD_CONFIG_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "scsitgtd_config.h"

enum section {
	SEC_NONE,
	SEC_ENGINE,
	SEC_PORTAL,
	SEC_TARGET,
	SEC_ALUA_GROUP,
	SEC_LUN,
	SEC_SRP,
	SEC_SKIP, /* a section whose header was refused: its keys are ignored */
};

/* The parse of one text: the configuration being built, the reader's state, the first error. */
struct parser {
	struct scsitgtd_config *cfg;
	enum section sec;
	uint64_t seen; /* keys given in the current section (bit per table row) */
	bool engine_seen;
	unsigned int engine_line;
	/* The reader's position in the text. */
	const char *text;
	size_t len, pos;
	unsigned int line;     /* 1-based number of the last line handed to libinih */
	const char *line_text; /* that line, for syntax error messages */
	size_t line_len;
	bool inject;	 /* hand the section marker pair to libinih next */
	bool marker_due; /* the next handler call is the marker's */
	/* The errors: one "line N: what" line each, in order of lines read. */
	char *err;
	size_t err_size;
	size_t err_len;
	unsigned int nerrors;
	unsigned int sec_nerrors; /* nerrors when the current section began */
	bool failed;
	bool nomem;
};

/*
 * Record an error, "line @line: ..." (a line of its own after the earlier ones; past
 * SCSITGTD_MAX_ERRORS only counted); returns -EINVAL. The parse goes on after it.
 */
int cfg_err_at(struct parser *p, unsigned int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
#define cfg_err(p, ...) cfg_err_at((p), (p)->line, __VA_ARGS__)
/* Record an allocation failure; returns -ENOMEM. */
int cfg_nomem(struct parser *p);
/* Replace *@dst by a copy of @v. */
int cfg_set_str(struct parser *p, char **dst, const char *v);
/* Grow an array of @n elements of @size by one zeroed element; bounded by @max. */
int cfg_grow(struct parser *p, void **arr, size_t *n, size_t size, size_t max, const char *what);
/* A decimal number <= @max (no sign, no spaces); 0 or -EINVAL/-ERANGE, no message. */
int cfg_parse_u64(const char *v, uint64_t max, uint64_t *out);

/* A "key = value" pair of the current section (p->sec): 0 or a negative errno. */
int cfg_key(struct parser *p, const char *key, const char *value);
/* Whether the current section gave @key. */
bool cfg_key_seen(const struct parser *p, const char *key);

static inline struct scsitgtd_target *cur_target(struct parser *p)
{
	return &p->cfg->targets[p->cfg->ntargets - 1];
}

static inline struct scsitgtd_lun *cur_lun(struct parser *p)
{
	struct scsitgtd_target *t = cur_target(p);

	return &t->luns[t->nluns - 1];
}

static inline struct scsitgtd_alua_group *cur_group(struct parser *p)
{
	struct scsitgtd_target *t = cur_target(p);

	return &t->groups[t->ngroups - 1];
}

static inline struct scsitgtd_portal *cur_portal(struct parser *p)
{
	return &p->cfg->portals[p->cfg->nportals - 1];
}

static inline struct scsitgtd_srp *cur_srp(struct parser *p)
{
	struct scsitgtd_target *t = cur_target(p);

	return &t->srps[t->nsrps - 1];
}

#endif /* SCSITGTD_CONFIG_INT_H */
