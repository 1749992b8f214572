/* SPDX-License-Identifier: MIT */
/* Options of the null and RAM backends: their logger (log_opts.h). */
#include <errno.h>
#include <string.h>

#include "backend/log_opts.h"

SCSITGT_EXPORT void scsitgt_backend_log_opts_init(struct scsitgt_backend_log_opts *opts,
						  size_t size)
{
	struct scsitgt_backend_log_opts def = { .size = sizeof(def),
						.log_level = SCSITGT_LOG_DEBUG };

	if (opts == NULL || size == 0) {
		return;
	}
	if (size > sizeof(def)) {
		size = sizeof(def);
	}
	memset(opts, 0, size);
	def.size = size;
	memcpy(opts, &def, size);
}

int scsitgt__backend_log_opts(const struct scsitgt_backend_log_opts *opts, void **bctx_out,
			      const char *fn, const char *subsystem, struct scsitgt__logger *lg)
{
	struct scsitgt_backend_log_opts o;
	/* Refusals pass any level, also one out of range. */
	struct scsitgt__logger all;

	scsitgt_backend_log_opts_init(&o, sizeof(o));
	/* Options of size 0 are not read (docs/ABI.md), their logger neither. */
	if (opts && opts->size) {
		memcpy(&o, opts, opts->size < sizeof(o) ? opts->size : sizeof(o));
	}
	all = (struct scsitgt__logger){ .cb = o.log_cb,
					.arg = o.log_arg,
					.level = SCSITGT_LOG_DEBUG };
	if (bctx_out == NULL) {
		return scsitgt__log_refused(&all, subsystem, -EINVAL, "%s: bctx_out is NULL", fn);
	}
	if (o.log_level < SCSITGT_LOG_ERROR || o.log_level > SCSITGT_LOG_DEBUG) {
		return scsitgt__log_refused(
			&all, subsystem, -EINVAL,
			"%s: log_level %d: not between SCSITGT_LOG_ERROR (3) and "
			"SCSITGT_LOG_DEBUG (7)",
			fn, (int)o.log_level);
	}
	*lg = (struct scsitgt__logger){ .cb = o.log_cb, .arg = o.log_arg, .level = o.log_level };
	return 0;
}
