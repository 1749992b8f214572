/* SPDX-License-Identifier: MIT */
/* The RBD gateway's options and their defaults (backend_rbd_gateway.h), with or without
 * librbd. */
#include <string.h>

#include "libscsitgt/backend_rbd_gateway.h"

SCSITGT_EXPORT void scsitgt_rbd_gateway_opts_init(struct scsitgt_rbd_gateway_opts *opts,
						  size_t size)
{
	struct scsitgt_rbd_gateway_opts def = {
		.size = sizeof(def),
		.probe_interval_ms = 500,
		.probe_timeout_ms = 1000,
		.probe_misses = 2,
		.holddown_ms = 5000,
	};

	if (opts == NULL || size == 0)
		return;
	if (size > sizeof(def))
		size = sizeof(def);
	def.size = size;
	memcpy(opts, &def, size);
}
