/* SPDX-License-Identifier: MIT */
/* The RBD gateway API without librbd: every call reports -ENOTSUP (backend_rbd_gateway.h). */
#include <errno.h>

#include "libscsitgt/backend_rbd_gateway.h"
#include "libscsitgt/testing.h"

SCSITGT_EXPORT int scsitgt_rbd_gateway_create(struct scsitgt_rbd_gateway **gw_out,
					      struct scsitgt_target *tgt, void *bctx,
					      const struct scsitgt_rbd_gateway_opts *opts)
{
	(void)gw_out;
	(void)tgt;
	(void)bctx;
	(void)opts;
	return -ENOTSUP;
}

SCSITGT_EXPORT void scsitgt_rbd_gateway_destroy(struct scsitgt_rbd_gateway *gw, scsitgt_done_cb cb,
						void *cb_arg)
{
	(void)gw;
	(void)cb;
	(void)cb_arg;
}

SCSITGT_EXPORT int scsitgt_rbd_gateway_set_watch_fault(struct scsitgt_rbd_gateway *gw, bool hold)
{
	(void)gw;
	(void)hold;
	return -ENOTSUP;
}
