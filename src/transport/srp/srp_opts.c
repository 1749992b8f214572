/* SPDX-License-Identifier: MIT */
/* SRP target port options, built with or without rdma-core. */
#include <string.h>

#include "libscsitgt/srp.h"

SCSITGT_EXPORT void scsitgt_srp_portal_opts_init(struct scsitgt_srp_portal_opts *opts, size_t size)
{
	struct scsitgt_srp_portal_opts d;

	if (opts == NULL || size == 0)
		return;
	memset(&d, 0, sizeof(d));
	d.size = size < sizeof(d) ? size : sizeof(d);
	d.address = "0.0.0.0";
	d.port = 5555;
	d.max_channels = 8;
	d.queue_size = 128;
	d.max_it_iu_len = 65536;
	d.max_ti_iu_len = 512;
	d.immediate_data = true;
	d.rel_port_id = 256;
	d.backlog = 128;
	d.buffer_bytes = 64u << 20;
	memcpy(opts, &d, d.size);
}
