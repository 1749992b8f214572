/* SPDX-License-Identifier: MIT */
/*
 * The options of the backends whose only option is their logger (null, RAM: struct
 * scsitgt_backend_log_opts in backend.h), read and checked the same way for both.
 */
#ifndef SCSITGT_BACKEND_LOG_OPTS_H
#define SCSITGT_BACKEND_LOG_OPTS_H

#include "libscsitgt/backend.h"
#include "util/log.h"

/*
 * @opts as the library's current struct (defaults past its size; NULL or size 0: the defaults,
 * no logger) into *@lg, checked for @fn (e.g. "scsitgt_backend_ram_create_opts"): 0, or -EINVAL
 * logged through @opts' logger at any level when @bctx_out is NULL or log_level is out of range.
 */
int scsitgt__backend_log_opts(const struct scsitgt_backend_log_opts *opts, void **bctx_out,
			      const char *fn, const char *subsystem, struct scsitgt__logger *lg);

#endif /* SCSITGT_BACKEND_LOG_OPTS_H */
