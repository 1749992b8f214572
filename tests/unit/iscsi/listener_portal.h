/* SPDX-License-Identifier: MIT */
/*
 * A portal with a listener of its own and no socket (as iSER's, datamover.h), for tests that
 * place connections of a fake data mover on worker loops: its listener goes when the engine's
 * destroy stops it. Header-only; include after cmocka.h.
 */
#ifndef SCSITGT_TEST_LISTENER_PORTAL_H
#define SCSITGT_TEST_LISTENER_PORTAL_H

#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "core/worker.h"
#include "transport/iscsi/conn.h"

static inline void lp_listener_gone_fn(struct scsitgt__msg *msg)
{
	struct scsitgt_portal *portal = *(struct scsitgt_portal **)(msg + 1);

	free(msg);
	scsitgt__iscsi_portal_listener_gone(portal);
}

static inline void lp_stop(struct scsitgt_portal *portal)
{
	struct scsitgt__msg *m = malloc(sizeof(*m) + sizeof(portal));

	assert_non_null(m);
	memcpy(m + 1, &portal, sizeof(portal));
	m->fn = lp_listener_gone_fn;
	scsitgt__engine_post(portal->ie->engine, m);
}

/* A registered portal on 127.0.0.1 whose listener is @kind's. Loop: home. */
static inline struct scsitgt_portal *lp_portal(struct scsitgt_engine *engine, const char *kind)
{
	struct scsitgt_portal_opts o, po;
	struct scsitgt_portal *portal;
	struct sockaddr_storage sa;

	scsitgt_portal_opts_init(&po, sizeof(po));
	po.address = "127.0.0.1";
	assert_int_equal(scsitgt__iscsi_portal_new(&portal, engine, &po, &o, &sa, "lp_portal"), 0);
	scsitgt__iscsi_portal_set_listener(portal, kind, lp_stop, NULL);
	scsitgt__iscsi_portal_register(portal, 3260, &sa);
	return portal;
}

/* The portal's connections (counted under ie->lock by every loop). */
static inline unsigned int lp_nconns(struct scsitgt_portal *portal)
{
	unsigned int n;

	uv_mutex_lock(&portal->ie->lock);
	n = portal->nconns;
	uv_mutex_unlock(&portal->ie->lock);
	return n;
}

/* A destroy callback counting into the int at @arg. */
static inline void lp_destroyed(void *arg, int status)
{
	assert_int_equal(status, 0);
	(*(int *)arg)++;
}

#endif /* SCSITGT_TEST_LISTENER_PORTAL_H */
