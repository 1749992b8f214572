/* SPDX-License-Identifier: MIT */
/*
 * The RBD backend when the library is built without librbd/librados: the API stays exported
 * (so hosts link the same way on every build) and reports -ENOTSUP (design rule: a
 * compiled-out feature's API returns -ENOTSUP).
 */
#include <errno.h>

#include "libscsitgt/backend_rbd.h"
#include "libscsitgt/testing.h"

SCSITGT_EXPORT const struct scsitgt_backend_ops *scsitgt_backend_rbd_ops(void)
{
	return NULL;
}

SCSITGT_EXPORT int scsitgt_backend_rbd_create(void **bctx_out,
					      const struct scsitgt_backend_rbd_opts *opts)
{
	(void)bctx_out;
	(void)opts;
	return -ENOTSUP;
}

SCSITGT_EXPORT int scsitgt_backend_rbd_create_async(const struct scsitgt_backend_rbd_opts *opts,
						    scsitgt_backend_rbd_open_cb cb, void *cb_arg)
{
	(void)opts;
	(void)cb;
	(void)cb_arg;
	return -ENOTSUP;
}

SCSITGT_EXPORT int scsitgt_backend_rbd_get_ident(void *bctx, uint64_t *naa_out, char *serial,
						 size_t serial_size)
{
	(void)bctx;
	(void)naa_out;
	(void)serial;
	(void)serial_size;
	return -ENOTSUP;
}

SCSITGT_EXPORT int scsitgt_backend_rbd_set_lun(void *bctx, struct scsitgt_lun *lun)
{
	(void)bctx;
	(void)lun;
	return -ENOTSUP;
}

SCSITGT_EXPORT int scsitgt_backend_rbd_use_pr(void *bctx,
					      const struct scsitgt_backend_rbd_pr_opts *opts,
					      scsitgt_done_cb cb, void *cb_arg)
{
	(void)bctx;
	(void)opts;
	(void)cb;
	(void)cb_arg;
	return -ENOTSUP;
}

SCSITGT_EXPORT int scsitgt_backend_rbd_set_pr_watch_fault(void *bctx, bool hold)
{
	(void)bctx;
	(void)hold;
	return -ENOTSUP;
}

SCSITGT_EXPORT int scsitgt_backend_rbd_set_pr_notify_fault(void *bctx, bool fail)
{
	(void)bctx;
	(void)fail;
	return -ENOTSUP;
}

SCSITGT_EXPORT int scsitgt_backend_rbd_set_reconnect_fault(void *bctx, bool fail)
{
	(void)bctx;
	(void)fail;
	return -ENOTSUP;
}

SCSITGT_EXPORT int scsitgt_backend_rbd_flag_update(void *bctx)
{
	(void)bctx;
	return -ENOTSUP;
}
