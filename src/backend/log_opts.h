/* SPDX-License-Identifier: MIT */
/*
 * The options of the null and RAM backends (struct scsitgt_backend_null_opts and
 * scsitgt_backend_ram_opts in backend.h: today only their logger), read and checked the same
 * way for both.
 */
#ifndef SCSITGT_BACKEND_LOG_OPTS_H
#define SCSITGT_BACKEND_LOG_OPTS_H

#include "libscsitgt/backend.h"
#include "util/log.h"

/*
 * @opts as the library's current struct (defaults past its size; NULL or size 0: the defaults,
 * no logger) into *@lg, checked: 0, or -EINVAL logged through @opts' logger at any level when
 * @bctx_out is NULL or log_level is out of range.
 */
int scsitgt__backend_null_opts(const struct scsitgt_backend_null_opts *opts, void **bctx_out,
			       struct scsitgt__logger *lg);
int scsitgt__backend_ram_opts(const struct scsitgt_backend_ram_opts *opts, void **bctx_out,
			      struct scsitgt__logger *lg);

#endif /* SCSITGT_BACKEND_LOG_OPTS_H */
