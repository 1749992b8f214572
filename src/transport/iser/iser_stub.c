/* SPDX-License-Identifier: MIT */
/* iSER without rdma-core: the API exists and says so. */
#include <errno.h>

#include "libscsitgt/iscsi.h"

SCSITGT_EXPORT int scsitgt_iser_portal_create(struct scsitgt_portal **out,
					      struct scsitgt_engine *engine,
					      const struct scsitgt_portal_opts *opts)
{
	(void)engine;
	(void)opts;
	if (out)
		*out = NULL;
	return -ENOTSUP;
}
