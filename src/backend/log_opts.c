/* SPDX-License-Identifier: MIT */
/* Options of the null and RAM backends: their logger (log_opts.h). */
#include <errno.h>
#include <string.h>

#include "backend/log_opts.h"

/* Fill the caller's @size bytes of @opts from @def (@full bytes, its size field first). */
static void opts_init(void *opts, size_t size, void *def, size_t full)
{
	if (opts == NULL || size == 0) {
		return;
	}
	if (size > full) {
		memset(opts, 0, size);
		size = full;
	}
	memcpy(def, &size, sizeof(size));
	memcpy(opts, def, size);
}

SCSITGT_EXPORT void scsitgt_backend_null_opts_init(struct scsitgt_backend_null_opts *opts,
						   size_t size)
{
	struct scsitgt_backend_null_opts def = { .log_level = SCSITGT_LOG_DEBUG };

	opts_init(opts, size, &def, sizeof(def));
}

SCSITGT_EXPORT void scsitgt_backend_ram_opts_init(struct scsitgt_backend_ram_opts *opts,
						  size_t size)
{
	struct scsitgt_backend_ram_opts def = { .log_level = SCSITGT_LOG_DEBUG };

	opts_init(opts, size, &def, sizeof(def));
}

/* The checks both backends make on their logger fields, for @fn of @subsystem. */
static int log_fields(scsitgt_log_cb cb, void *arg, enum scsitgt_log_level level, void **bctx_out,
		      const char *fn, const char *subsystem, struct scsitgt__logger *lg)
{
	/* Refusals pass any level, also one out of range. */
	struct scsitgt__logger all = { .cb = cb, .arg = arg, .level = SCSITGT_LOG_DEBUG };

	if (bctx_out == NULL) {
		return scsitgt__log_refused(&all, subsystem, -EINVAL, "%s: bctx_out is NULL", fn);
	}
	if (level < SCSITGT_LOG_ERROR || level > SCSITGT_LOG_DEBUG) {
		return scsitgt__log_refused(
			&all, subsystem, -EINVAL,
			"%s: log_level %d: not between SCSITGT_LOG_ERROR (3) and "
			"SCSITGT_LOG_DEBUG (7)",
			fn, (int)level);
	}
	*lg = (struct scsitgt__logger){ .cb = cb, .arg = arg, .level = level };
	return 0;
}

int scsitgt__backend_null_opts(const struct scsitgt_backend_null_opts *opts, void **bctx_out,
			       struct scsitgt__logger *lg)
{
	struct scsitgt_backend_null_opts o;

	scsitgt_backend_null_opts_init(&o, sizeof(o));
	/* Options of size 0 are not read (docs/ABI.md), their logger neither. */
	if (opts && opts->size) {
		memcpy(&o, opts, opts->size < sizeof(o) ? opts->size : sizeof(o));
	}
	return log_fields(o.log_cb, o.log_arg, o.log_level, bctx_out,
			  "scsitgt_backend_null_create_opts", "null", lg);
}

int scsitgt__backend_ram_opts(const struct scsitgt_backend_ram_opts *opts, void **bctx_out,
			      struct scsitgt__logger *lg)
{
	struct scsitgt_backend_ram_opts o;

	scsitgt_backend_ram_opts_init(&o, sizeof(o));
	if (opts && opts->size) {
		memcpy(&o, opts, opts->size < sizeof(o) ? opts->size : sizeof(o));
	}
	return log_fields(o.log_cb, o.log_arg, o.log_level, bctx_out,
			  "scsitgt_backend_ram_create_opts", "ram", lg);
}
