/* SPDX-License-Identifier: MIT */
/*
 * The aio backend when the library is built without libaio: the API stays exported (so hosts
 * link the same way on every build) and reports -ENOTSUP (design rule: a compiled-out
 * feature's API returns -ENOTSUP).
 */
#include <errno.h>
#include <string.h>

#include "libscsitgt/backend_aio.h"

SCSITGT_EXPORT void scsitgt_backend_aio_opts_init(struct scsitgt_backend_aio_opts *opts,
						  size_t size)
{
	struct scsitgt_backend_aio_opts def = {
		.size = sizeof(def),
		.direct = true,
		.queue_depth = 128,
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

SCSITGT_EXPORT const struct scsitgt_backend_ops *scsitgt_backend_aio_ops(void)
{
	return NULL;
}

SCSITGT_EXPORT int scsitgt_backend_aio_create(void **bctx_out,
					      const struct scsitgt_backend_aio_opts *opts)
{
	(void)bctx_out;
	(void)opts;
	return -ENOTSUP;
}

SCSITGT_EXPORT int scsitgt_backend_aio_resize(void *bctx, uint64_t *num_blocks_out)
{
	(void)bctx;
	(void)num_blocks_out;
	return -ENOTSUP;
}

SCSITGT_EXPORT int scsitgt_backend_aio_is_direct(void *bctx)
{
	(void)bctx;
	return -ENOTSUP;
}

SCSITGT_EXPORT int scsitgt_backend_aio_get_engine(void *bctx)
{
	(void)bctx;
	return -ENOTSUP;
}
