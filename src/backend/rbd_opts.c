/* SPDX-License-Identifier: MIT */
/* The RBD backend's option defaults: one definition, built with or without librbd. */
#include <string.h>

#include "libscsitgt/backend_rbd.h"

SCSITGT_EXPORT void scsitgt_backend_rbd_opts_init(struct scsitgt_backend_rbd_opts *opts,
						  size_t size)
{
	struct scsitgt_backend_rbd_opts def = {
		.size = sizeof(def),
		.client_id = "admin",
		.op_timeout_s = 30,
	};

	if (opts == NULL || size == 0) {
		return;
	}
	if (size > sizeof(def)) {
		memset(opts, 0, size);
		size = sizeof(def);
	}
	def.size = size;
	memcpy(opts, &def, size);
}
