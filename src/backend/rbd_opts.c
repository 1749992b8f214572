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
		.log_level = SCSITGT_LOG_DEBUG,
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

SCSITGT_EXPORT void scsitgt_backend_rbd_pr_opts_init(struct scsitgt_backend_rbd_pr_opts *opts,
						     size_t size)
{
	struct scsitgt_backend_rbd_pr_opts d;

	if (opts == NULL || size < sizeof(size_t))
		return;
	memset(&d, 0, sizeof(d));
	d.size = size < sizeof(d) ? size : sizeof(d);
	d.notify_timeout_ms = 5000;
	memcpy(opts, &d, d.size);
}
