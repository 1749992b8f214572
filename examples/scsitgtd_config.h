/* SPDX-License-Identifier: MIT */
/*
 * scsitgtd's configuration file (docs/scsitgtd.md): an INI-like text parsed by a pure function
 * (no I/O, no libuv, no libscsitgt calls), so that it can be fuzzed and unit tested alone.
 */
#ifndef SCSITGTD_CONFIG_H
#define SCSITGTD_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bounds that keep memory proportional to (and far below) the input. */
#define SCSITGTD_MAX_LINE 4096
#define SCSITGTD_MAX_PORTALS 64
#define SCSITGTD_MAX_TARGETS 256
#define SCSITGTD_MAX_LUNS 1024	     /* per target */
#define SCSITGTD_MAX_INITIATORS 1024 /* per target */
#define SCSITGTD_MAX_LUN_ID 16383

enum scsitgtd_backend {
	SCSITGTD_BACKEND_RAM,
	SCSITGTD_BACKEND_NULL,
	SCSITGTD_BACKEND_FILE,
};

/* LUN flags, as SCSITGT_LUN_* of lun.h (the daemon maps them). */
enum {
	SCSITGTD_LUN_READ_ONLY = 1u << 0,
	SCSITGTD_LUN_THIN = 1u << 1,
	SCSITGTD_LUN_REMOVABLE = 1u << 2,
	SCSITGTD_LUN_WRITE_CACHE = 1u << 3,
};

struct scsitgtd_lun {
	uint64_t id;
	unsigned int line; /* where its section starts, for messages */
	enum scsitgtd_backend backend;
	uint64_t size;	   /* bytes; 0 = backend decides (file) */
	uint32_t block_size; /* 0 = default */
	uint32_t flags;	   /* SCSITGTD_LUN_* */
	bool offline;
	char *path;	   /* file backend */
	char *vendor;	   /* NULL = library default */
	char *product;
	char *serial;
	char *pr_file;	   /* persistent reservations kept in this file; NULL = in memory */
};

struct scsitgtd_target {
	char *name;
	unsigned int line;
	char *alias;
	char **initiators;
	size_t ninitiators;
	char *chap_user; /* NULL: no CHAP */
	char *chap_secret;
	char *mutual_user;
	char *mutual_secret;
	struct scsitgtd_lun *luns;
	size_t nluns;
};

struct scsitgtd_portal {
	char *address;
	uint16_t port;
	uint16_t tpgt;
	unsigned int line;
};

struct scsitgtd_config {
	int log_level; /* syslog level 3..7 (enum scsitgt_log_level) */
	struct scsitgtd_portal *portals;
	size_t nportals;
	struct scsitgtd_target *targets;
	size_t ntargets;
};

/*
 * Parse @len bytes of configuration text. On success *out receives a new configuration (free
 * it with scsitgtd_config_free()) and 0 is returned. On failure returns -EINVAL (the text is
 * wrong: @err receives "line N: what is wrong") or -ENOMEM, and *out is NULL. @err may be NULL.
 */
int scsitgtd_config_parse(const char *text, size_t len, struct scsitgtd_config **out, char *err,
			  size_t err_size);
void scsitgtd_config_free(struct scsitgtd_config *cfg);

/* Lookups used by the reload diff. */
const struct scsitgtd_target *scsitgtd_config_find_target(const struct scsitgtd_config *cfg,
							  const char *name);
const struct scsitgtd_lun *scsitgtd_config_find_lun(const struct scsitgtd_target *t, uint64_t id);
/* Whether two LUN definitions need the LUN re-created (backend, path, block size, identity). */
bool scsitgtd_lun_needs_recreate(const struct scsitgtd_lun *a, const struct scsitgtd_lun *b);

#endif /* SCSITGTD_CONFIG_H */
