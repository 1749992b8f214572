/* SPDX-License-Identifier: MIT */
/* SRP without rdma-core: the API exists and says so. */
#include <errno.h>

#include "libscsitgt/srp.h"

SCSITGT_EXPORT int scsitgt_srp_portal_create(struct scsitgt_srp_portal **out,
					     struct scsitgt_target *tgt,
					     const struct scsitgt_srp_portal_opts *opts)
{
	(void)tgt;
	(void)opts;
	if (out)
		*out = NULL;
	return -ENOTSUP;
}

SCSITGT_EXPORT void scsitgt_srp_portal_destroy(struct scsitgt_srp_portal *portal,
					       scsitgt_done_cb cb, void *cb_arg)
{
	/* No port can exist: nothing to do, and no callback (none was promised). */
	(void)portal;
	(void)cb;
	(void)cb_arg;
}

SCSITGT_EXPORT uint16_t scsitgt_srp_portal_get_port(const struct scsitgt_srp_portal *portal)
{
	(void)portal;
	return 0;
}

SCSITGT_EXPORT void scsitgt_srp_portal_get_counts(const struct scsitgt_srp_portal *portal,
						  uint32_t *channels, uint32_t *nexuses)
{
	(void)portal;
	if (channels)
		*channels = 0;
	if (nexuses)
		*nexuses = 0;
}
