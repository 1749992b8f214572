/* SPDX-License-Identifier: MIT */
/*
 * Public iSCSI API: portals (listeners registered as engine services), per-target and
 * per-engine parameters, CHAP credentials and the redirect hook. Per-engine state lives in
 * engine->ext[SCSITGT__EXT_ISCSI], per-target state in tgt->ext[SCSITGT__EXT_ISCSI].
 */
#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "transport/iscsi/conn.h"

static void cred_clear(struct scsitgt__iscsi_cred *c);

static void engine_ext_destroy(void *data)
{
	struct scsitgt__iscsi_engine *ie = data;

	/* The engine's destroy gave up every io, which lifted every fence (session.c). */
	assert(scsitgt__list_empty(&ie->fences));
	cred_clear(&ie->disc_chap);
	cred_clear(&ie->disc_mutual);
	uv_mutex_destroy(&ie->lock);
	free(ie);
}

struct scsitgt__iscsi_engine *scsitgt__iscsi_engine_get(struct scsitgt_engine *engine)
{
	struct scsitgt__iscsi_engine *ie = engine->ext[SCSITGT__EXT_ISCSI].data;

	if (ie)
		return ie;
	ie = calloc(1, sizeof(*ie));
	if (ie == NULL)
		return NULL;
	if (uv_mutex_init(&ie->lock) < 0) {
		free(ie);
		return NULL;
	}
	ie->engine = engine;
	scsitgt_iscsi_params_init(&ie->defaults, sizeof(ie->defaults));
	scsitgt__list_init(&ie->portals);
	scsitgt__list_init(&ie->conns);
	scsitgt__list_init(&ie->sessions);
	scsitgt__list_init(&ie->fences);
	ie->rnd = scsitgt__chap_random_default;
	engine->ext[SCSITGT__EXT_ISCSI].data = ie;
	engine->ext[SCSITGT__EXT_ISCSI].destroy = engine_ext_destroy;
	return ie;
}

static void cred_clear(struct scsitgt__iscsi_cred *c)
{
	/* explicit_bzero, a memset before free() may be optimised away. */
	if (c->secret)
		explicit_bzero(c->secret, strlen(c->secret));
	free(c->secret);
	free(c->user);
	free(c->initiator);
	c->secret = c->user = c->initiator = NULL;
}

static void target_ext_destroy(void *data)
{
	struct scsitgt__iscsi_target *it = data;
	struct scsitgt__list *pos, *tmp;

	cred_clear(&it->chap);
	cred_clear(&it->mutual);
	scsitgt__list_foreach_safe(pos, tmp, &it->creds)
	{
		struct scsitgt__iscsi_cred *c =
			scsitgt__container_of(pos, struct scsitgt__iscsi_cred, node);

		cred_clear(c);
		free(c);
	}
	free(it);
}

struct scsitgt__iscsi_target *scsitgt__iscsi_target_get(struct scsitgt_target *tgt, bool create)
{
	struct scsitgt__iscsi_target *it = tgt->ext[SCSITGT__EXT_ISCSI].data;
	struct scsitgt__iscsi_engine *ie;

	if (it || !create)
		return it;
	ie = scsitgt__iscsi_engine_get(tgt->engine);
	it = calloc(1, sizeof(*it));
	if (it == NULL || ie == NULL) {
		free(it);
		return NULL;
	}
	it->params = ie->defaults;
	scsitgt__list_init(&it->creds);
	/* A login on a worker reads it under the configuration lock's read side (login.c). */
	scsitgt__cfg_wrlock(tgt->engine);
	tgt->ext[SCSITGT__EXT_ISCSI].data = it;
	tgt->ext[SCSITGT__EXT_ISCSI].destroy = target_ext_destroy;
	scsitgt__cfg_wrunlock(tgt->engine);
	return it;
}

SCSITGT_EXPORT void scsitgt_iscsi_params_init(struct scsitgt_iscsi_params *params, size_t size)
{
	struct scsitgt_iscsi_params def = {
		.size = sizeof(def),
		.max_recv_data_segment_length = 262144,
		.max_burst_length = 16776192,
		.first_burst_length = 262144,
		.immediate_data = true,
		.initial_r2t = false,
		.max_outstanding_r2t = 16,
		.header_digest = SCSITGT_ISCSI_DIGEST_ANY,
		.data_digest = SCSITGT_ISCSI_DIGEST_ANY,
		.default_time2wait = 2,
		.default_time2retain = 20,
		.max_connections = 1,
		.error_recovery_level = 0,
		.queue_depth = 128,
		.nop_interval_ms = 5000,
		.nop_timeout_ms = 15000,
		.login_timeout_ms = 15000,
		.chap_algorithms = SCSITGT_ISCSI_CHAP_ALL,
		.max_write_buffer_bytes = 32u * 1024u * 1024u,
		.logout_timeout_ms = 10000,
		.async_events = SCSITGT_ISCSI_ASYNC_LUNS_CHANGED |
				SCSITGT_ISCSI_ASYNC_CAPACITY_CHANGED,
	};

	if (params == NULL || size == 0)
		return;
	if (size > sizeof(def)) {
		memset(params, 0, size);
		size = sizeof(def);
	}
	def.size = size;
	memcpy(params, &def, size);
}

static bool in_range(uint32_t v, uint32_t lo, uint32_t hi)
{
	return v >= lo && v <= hi;
}

/* A refused argument of the public call @fn: logged (scsitgt__log_refused()), -EINVAL. */
#define ISCSI_REFUSE(lg, ...) \
	scsitgt__log_refused(lg, SCSITGT__ISCSI_SUBSYS, -EINVAL, "%s: " __VA_ARGS__)

/* An iSCSI parameter out of its range (RFC 7143 §13 gives most of them). */
static int param_range(const struct scsitgt__logger *lg, const char *fn, const char *name,
		       uint32_t v, uint32_t lo, uint32_t hi)
{
	if (in_range(v, lo, hi))
		return 0;
	return ISCSI_REFUSE(lg, "%s %u: not %u..%u", fn, name, v, lo, hi);
}

static int params_check(const struct scsitgt__logger *lg, const char *fn,
			struct scsitgt_iscsi_params *out, const struct scsitgt_iscsi_params *in)
{
	struct scsitgt_iscsi_params p;

	if (in == NULL || in->size == 0)
		return ISCSI_REFUSE(lg, "params %s", fn,
				    in == NULL ? "is NULL" :
						 "size 0 (initialise them with "
						 "scsitgt_iscsi_params_init())");
	scsitgt_iscsi_params_init(&p, sizeof(p));
	memcpy(&p, in, in->size < sizeof(p) ? in->size : sizeof(p));
	p.size = sizeof(p);
	if (param_range(lg, fn, "max_recv_data_segment_length", p.max_recv_data_segment_length, 512,
			16777215) ||
	    param_range(lg, fn, "max_burst_length", p.max_burst_length, 512, 16777215) ||
	    param_range(lg, fn, "first_burst_length", p.first_burst_length, 512, 16777215) ||
	    param_range(lg, fn, "max_outstanding_r2t", p.max_outstanding_r2t, 1, 65535) ||
	    param_range(lg, fn, "header_digest", p.header_digest, 0, 2) ||
	    param_range(lg, fn, "data_digest", p.data_digest, 0, 2) ||
	    param_range(lg, fn, "default_time2wait", p.default_time2wait, 0, 3600) ||
	    param_range(lg, fn, "default_time2retain", p.default_time2retain, 0, 3600) ||
	    param_range(lg, fn, "max_connections", p.max_connections, 1, 65535) ||
	    param_range(lg, fn, "queue_depth", p.queue_depth, 1, SCSITGT__ISCSI_WINDOW_MAX) ||
	    param_range(lg, fn, "logout_timeout_ms", p.logout_timeout_ms, 1, UINT32_MAX))
		return -EINVAL;
	if (p.chap_algorithms == 0 || (p.chap_algorithms & ~SCSITGT_ISCSI_CHAP_ALL))
		return ISCSI_REFUSE(lg,
				    "chap_algorithms 0x%x: not a non-empty set of "
				    "SCSITGT_ISCSI_CHAP_* bits (0x%x)",
				    fn, (unsigned)p.chap_algorithms,
				    (unsigned)SCSITGT_ISCSI_CHAP_ALL);
	if (p.async_events & ~SCSITGT_ISCSI_ASYNC_ALL)
		return ISCSI_REFUSE(
			lg, "async_events 0x%x: bits outside SCSITGT_ISCSI_ASYNC_ALL (0x%x)", fn,
			(unsigned)p.async_events, (unsigned)SCSITGT_ISCSI_ASYNC_ALL);
	if (p.error_recovery_level > 0 || p.max_connections > 1)
		return scsitgt__log_refused(
			lg, SCSITGT__ISCSI_SUBSYS, -ENOTSUP, "%s: %s %u: only %s is supported", fn,
			p.error_recovery_level > 0 ? "error_recovery_level" : "max_connections",
			p.error_recovery_level > 0 ? p.error_recovery_level : p.max_connections,
			p.error_recovery_level > 0 ? "0" : "1");
	*out = p;
	return 0;
}

SCSITGT_EXPORT int scsitgt_iscsi_target_set_params(struct scsitgt_target *tgt,
						   const struct scsitgt_iscsi_params *params)
{
	struct scsitgt__iscsi_target *it;
	struct scsitgt_iscsi_params p;
	int rc;

	if (tgt == NULL)
		return -EINVAL;
	rc = params_check(&tgt->engine->log, "scsitgt_iscsi_target_set_params", &p, params);
	if (rc < 0)
		return rc;
	it = scsitgt__iscsi_target_get(tgt, true);
	if (it == NULL)
		return -ENOMEM;
	scsitgt__cfg_wrlock(tgt->engine);
	it->params = p;
	scsitgt__cfg_wrunlock(tgt->engine);
	return 0;
}

SCSITGT_EXPORT int scsitgt_iscsi_engine_set_params(struct scsitgt_engine *engine,
						   const struct scsitgt_iscsi_params *params)
{
	struct scsitgt__iscsi_engine *ie;
	struct scsitgt_iscsi_params p;
	int rc;

	if (engine == NULL)
		return -EINVAL;
	rc = params_check(&engine->log, "scsitgt_iscsi_engine_set_params", &p, params);
	if (rc < 0)
		return rc;
	ie = scsitgt__iscsi_engine_get(engine);
	if (ie == NULL)
		return -ENOMEM;
	scsitgt__cfg_wrlock(engine);
	ie->defaults = p;
	scsitgt__cfg_wrunlock(engine);
	return 0;
}

/* The secret's value is never logged, only its length. */
static int cred_check(const struct scsitgt__logger *lg, const char *fn, const char *user,
		      const char *secret)
{
	size_t sl;

	if ((user == NULL) != (secret == NULL))
		return ISCSI_REFUSE(
			lg, "%s is NULL but %s is not: give both (set) or neither (clear)", fn,
			user == NULL ? "user" : "secret", user == NULL ? "secret" : "user");
	if (user == NULL)
		return 0;
	sl = strlen(secret);
	if (user[0] == '\0' || strlen(user) > 255)
		return ISCSI_REFUSE(lg, "user \"%.64s%s\": %zu bytes, not 1..255", fn, user,
				    strlen(user) > 64 ? "..." : "", strlen(user));
	if (sl < SCSITGT__CHAP_SECRET_MIN || sl > SCSITGT__CHAP_SECRET_MAX)
		return ISCSI_REFUSE(lg,
				    "user \"%s\": secret of %zu bytes, not %d..%d (RFC 7143 "
				    "§12.1.3 asks for at least 12)",
				    fn, user, sl, SCSITGT__CHAP_SECRET_MIN,
				    SCSITGT__CHAP_SECRET_MAX);
	return 1;
}

static int cred_set(struct scsitgt__iscsi_cred *c, const char *user, const char *secret)
{
	char *u = NULL, *s = NULL;

	if (user) {
		u = strdup(user);
		s = strdup(secret);
		if (u == NULL || s == NULL) {
			free(u);
			free(s);
			return -ENOMEM;
		}
	}
	/* explicit_bzero, a memset before free() may be optimised away. */
	if (c->secret)
		explicit_bzero(c->secret, strlen(c->secret));
	free(c->secret);
	free(c->user);
	c->user = u;
	c->secret = s;
	return 0;
}

/* cred_set() under the configuration lock (a login on a worker may read @c). */
static int cred_set_locked(struct scsitgt_engine *engine, struct scsitgt__iscsi_cred *c,
			   const char *user, const char *secret)
{
	int rc;

	scsitgt__cfg_wrlock(engine);
	rc = cred_set(c, user, secret);
	scsitgt__cfg_wrunlock(engine);
	return rc;
}

SCSITGT_EXPORT int scsitgt_iscsi_target_set_chap(struct scsitgt_target *tgt, const char *user,
						 const char *secret)
{
	struct scsitgt__iscsi_target *it;
	int rc;

	if (tgt == NULL)
		return -EINVAL;
	rc = cred_check(&tgt->engine->log, "scsitgt_iscsi_target_set_chap", user, secret);
	if (rc < 0)
		return rc;
	it = scsitgt__iscsi_target_get(tgt, true);
	if (it == NULL)
		return -ENOMEM;
	return cred_set_locked(tgt->engine, &it->chap, user, secret);
}

SCSITGT_EXPORT int scsitgt_iscsi_target_set_mutual_chap(struct scsitgt_target *tgt,
							const char *user, const char *secret)
{
	struct scsitgt__iscsi_target *it;
	int rc;

	if (tgt == NULL)
		return -EINVAL;
	rc = cred_check(&tgt->engine->log, "scsitgt_iscsi_target_set_mutual_chap", user, secret);
	if (rc < 0)
		return rc;
	it = scsitgt__iscsi_target_get(tgt, true);
	if (it == NULL)
		return -ENOMEM;
	return cred_set_locked(tgt->engine, &it->mutual, user, secret);
}

/* Discovery sessions' credentials live on the engine's iSCSI state (one-way or mutual). */
static int disc_cred_set(struct scsitgt_engine *engine, bool mutual, const char *user,
			 const char *secret)
{
	struct scsitgt__iscsi_engine *ie;
	int rc;

	if (engine == NULL)
		return -EINVAL;
	rc = cred_check(&engine->log,
			mutual ? "scsitgt_iscsi_engine_set_discovery_mutual_chap" :
				 "scsitgt_iscsi_engine_set_discovery_chap",
			user, secret);
	if (rc < 0)
		return rc;
	ie = scsitgt__iscsi_engine_get(engine);
	if (ie == NULL)
		return -ENOMEM;
	return cred_set_locked(engine, mutual ? &ie->disc_mutual : &ie->disc_chap, user, secret);
}

SCSITGT_EXPORT int scsitgt_iscsi_engine_set_discovery_chap(struct scsitgt_engine *engine,
							   const char *user, const char *secret)
{
	return disc_cred_set(engine, false, user, secret);
}

SCSITGT_EXPORT int scsitgt_iscsi_engine_set_discovery_mutual_chap(struct scsitgt_engine *engine,
								  const char *user,
								  const char *secret)
{
	return disc_cred_set(engine, true, user, secret);
}

SCSITGT_EXPORT int scsitgt_iscsi_initiator_set_chap(struct scsitgt_target *tgt,
						    const char *initiator_name, const char *user,
						    const char *secret)
{
	struct scsitgt__iscsi_target *it;
	struct scsitgt__iscsi_cred *c = NULL;
	struct scsitgt__list *pos;
	int rc;

	if (tgt == NULL)
		return -EINVAL;
	if (initiator_name == NULL || initiator_name[0] == '\0' ||
	    strlen(initiator_name) > SCSITGT__ISCSI_NAME_MAX)
		return ISCSI_REFUSE(
			&tgt->engine->log, "initiator_name %s%.64s%s: %zu bytes, not 1..%d",
			"scsitgt_iscsi_initiator_set_chap", initiator_name ? "\"" : "",
			initiator_name ? initiator_name : "NULL", initiator_name ? "\"" : "",
			initiator_name ? strlen(initiator_name) : 0, SCSITGT__ISCSI_NAME_MAX);
	rc = cred_check(&tgt->engine->log, "scsitgt_iscsi_initiator_set_chap", user, secret);
	if (rc < 0)
		return rc;
	it = scsitgt__iscsi_target_get(tgt, true);
	if (it == NULL)
		return -ENOMEM;
	for (pos = it->creds.next; pos != &it->creds; pos = pos->next) {
		struct scsitgt__iscsi_cred *e =
			scsitgt__container_of(pos, struct scsitgt__iscsi_cred, node);

		if (strcasecmp(e->initiator, initiator_name) == 0) {
			c = e;
			break;
		}
	}
	if (user == NULL) {
		if (c == NULL)
			return -ENOENT;
		scsitgt__cfg_wrlock(tgt->engine);
		scsitgt__list_remove(&c->node);
		scsitgt__cfg_wrunlock(tgt->engine);
		cred_clear(c);
		free(c);
		return 0;
	}
	if (c == NULL) {
		c = calloc(1, sizeof(*c));
		if (c == NULL)
			return -ENOMEM;
		c->initiator = strdup(initiator_name);
		if (c->initiator == NULL) {
			free(c);
			return -ENOMEM;
		}
		scsitgt__cfg_wrlock(tgt->engine);
		scsitgt__list_add_tail(&it->creds, &c->node);
		scsitgt__cfg_wrunlock(tgt->engine);
	}
	return cred_set_locked(tgt->engine, c, user, secret);
}

SCSITGT_EXPORT int scsitgt_iscsi_target_set_redirect(struct scsitgt_target *tgt,
						     scsitgt_iscsi_redirect_cb cb, void *cb_arg)
{
	struct scsitgt__iscsi_target *it;

	if (tgt == NULL)
		return -EINVAL;
	it = scsitgt__iscsi_target_get(tgt, true);
	if (it == NULL)
		return -ENOMEM;
	scsitgt__cfg_wrlock(tgt->engine);
	it->redirect_cb = cb;
	it->redirect_arg = cb_arg;
	scsitgt__cfg_wrunlock(tgt->engine);
	return 0;
}

SCSITGT_EXPORT void scsitgt_portal_opts_init(struct scsitgt_portal_opts *opts, size_t size)
{
	struct scsitgt_portal_opts def = {
		.size = sizeof(def),
		.address = "0.0.0.0",
		.port = 3260,
		.tpgt = 1,
		.backlog = 128,
		.max_connections = 1024,
		.max_login_connections = 256,
		.max_connections_per_initiator = 64,
	};

	if (opts == NULL || size == 0)
		return;
	if (size > sizeof(def)) {
		memset(opts, 0, size);
		size = sizeof(def);
	}
	def.size = size;
	memcpy(opts, &def, size);
}

int scsitgt__iscsi_portal_admit(struct scsitgt_portal *portal)
{
	unsigned int nconns, nlogin;
	uint64_t refused;
	bool full;

	if (portal->closing)
		return -ESHUTDOWN;
	/*
	 * Connections on workers count theirs under ie->lock (conn.h): the figures the log shows
	 * are the ones the decision saw, copied under the lock, which the log call is not made
	 * under (the host's callback). refused is counted there too: both callers (TCP's accept,
	 * iSER's CONNECT_REQUEST from its rdma_cm channel) run on home today, and the lock is
	 * taken anyway, so it stays right should a worker ever admit.
	 */
	uv_mutex_lock(&portal->ie->lock);
	nconns = portal->nconns;
	nlogin = portal->nlogin;
	full = (portal->max_conns && nconns >= portal->max_conns) ||
	       (portal->max_login_conns && nlogin >= portal->max_login_conns);
	refused = full ? ++portal->refused : 0;
	uv_mutex_unlock(&portal->ie->lock);
	if (!full)
		return 0;
	/* A connection limit: say so on the 1st, 2nd, 4th, 8th... refusal, not each. */
	if ((refused & (refused - 1)) == 0)
		scsitgt__iscsi_portal_log(portal, SCSITGT_LOG_WARNING,
					  "connection limit reached (%u connections, %u in login): "
					  "%llu connections refused so far",
					  nconns, nlogin, (unsigned long long)refused);
	return -ECONNREFUSED;
}

static void portal_on_connection(uv_stream_t *server, int status)
{
	struct scsitgt_portal *portal = server->data;
	int rc;

	if (status < 0 || portal->closing)
		return;
	rc = scsitgt__iscsi_tcp_accept(portal);
	/* A refusal for a limit was said by scsitgt__iscsi_portal_admit(). */
	if (rc < 0 && rc != -ECONNREFUSED)
		scsitgt__log(&portal->ie->engine->log, SCSITGT_LOG_WARNING, SCSITGT__ISCSI_SUBSYS,
			     "portal %s:%u: cannot accept a connection: %s", portal->address,
			     portal->port, scsitgt_strerror(rc));
}

static void portal_free_deferred(struct scsitgt__deferred *d)
{
	struct scsitgt_portal *portal = scsitgt__container_of(d, struct scsitgt_portal, done_d);
	scsitgt_done_cb cb = portal->done_cb;
	void *arg = portal->done_arg;

	free(portal);
	if (cb)
		cb(arg, 0);
}

static void portal_check_done(struct scsitgt_portal *portal)
{
	unsigned int nconns;

	uv_mutex_lock(&portal->ie->lock);
	nconns = portal->nconns;
	uv_mutex_unlock(&portal->ie->lock);
	if (!portal->closing || !portal->listener_closed || nconns)
		return;
	portal->done_d.fn = portal_free_deferred;
	scsitgt__engine_defer(portal->ie->engine, &portal->done_d);
}

void scsitgt__iscsi_portal_conn_gone(struct scsitgt_portal *portal)
{
	uv_mutex_lock(&portal->ie->lock);
	portal->nconns--;
	uv_mutex_unlock(&portal->ie->lock);
	portal_check_done(portal);
}

static void portal_listener_closed(uv_handle_t *h)
{
	struct scsitgt_portal *portal = h->data;

	portal->listener_closed = true;
	portal_check_done(portal);
}

static void portal_stop(struct scsitgt_portal *portal, scsitgt_done_cb cb, void *cb_arg)
{
	struct scsitgt__iscsi_engine *ie = portal->ie;
	unsigned int nconns;

	portal->closing = true;
	portal->done_cb = cb;
	portal->done_arg = cb_arg;
	/* SendTargets on a worker lists the portals (text.c). */
	scsitgt__cfg_wrlock(ie->engine);
	scsitgt__list_remove(&portal->node);
	scsitgt__cfg_wrunlock(ie->engine);
	scsitgt__engine_remove_service(ie->engine, &portal->svc);
	/* Connections on workers change nconns under ie->lock: log a copy. */
	uv_mutex_lock(&ie->lock);
	nconns = portal->nconns;
	uv_mutex_unlock(&ie->lock);
	scsitgt__log(&ie->engine->log, SCSITGT_LOG_INFO, SCSITGT__ISCSI_SUBSYS,
		     "portal %s:%u stopping (%u connections)", portal->address, portal->port,
		     nconns);
	if (portal->stop_listener)
		portal->stop_listener(portal);
	else
		uv_close((uv_handle_t *)&portal->listener, portal_listener_closed);
	/* Each connection on its own loop (xloop.c). */
	scsitgt__iscsi_xloop_portal_stop(portal);
}

static void portal_svc_shutdown(struct scsitgt__service *svc, scsitgt_done_cb cb, void *cb_arg)
{
	portal_stop(scsitgt__container_of(svc, struct scsitgt_portal, svc), cb, cb_arg);
}

void scsitgt__iscsi_portal_listener_gone(struct scsitgt_portal *portal)
{
	portal->listener_ctx = NULL;
	portal->listener_closed = true;
	portal_check_done(portal);
}

void scsitgt__iscsi_portal_discard(struct scsitgt_portal *portal)
{
	free(portal);
}

void scsitgt__iscsi_portal_set_listener(struct scsitgt_portal *portal, const char *kind,
					void (*stop)(struct scsitgt_portal *portal), void *ctx)
{
	portal->kind = kind;
	portal->stop_listener = stop;
	portal->listener_ctx = ctx;
}

void *scsitgt__iscsi_portal_listener_ctx(const struct scsitgt_portal *portal)
{
	return portal->listener_ctx;
}

struct scsitgt_engine *scsitgt__iscsi_portal_engine(const struct scsitgt_portal *portal)
{
	return portal->ie->engine;
}

bool scsitgt__iscsi_portal_wildcard(const struct scsitgt_portal *portal)
{
	return portal->wildcard;
}

/* A portal goes in service: the engine's service list, the iSCSI engine's portals. */
static void portal_in_service(struct scsitgt_portal *portal)
{
	portal->svc.shutdown = portal_svc_shutdown;
	/* every target's port of this portal group tag (session.c's rel_port_id) */
	portal->svc.protocol_id = SCSITGT__PROTO_ISCSI;
	portal->svc.rel_port_id = portal->tpgt;
	scsitgt__engine_add_service(portal->ie->engine, &portal->svc);
	scsitgt__cfg_wrlock(portal->ie->engine);
	scsitgt__list_add_tail(&portal->ie->portals, &portal->node);
	scsitgt__cfg_wrunlock(portal->ie->engine);
	scsitgt__log(&portal->ie->engine->log, SCSITGT_LOG_INFO, SCSITGT__ISCSI_SUBSYS,
		     "%s%sportal %s%s%s:%u (TPGT %u) listening", portal->kind ? portal->kind : "",
		     portal->kind ? " " : "", portal->ipv6 ? "[" : "", portal->address,
		     portal->ipv6 ? "]" : "", portal->port, portal->tpgt);
}

void scsitgt__iscsi_portal_register(struct scsitgt_portal *portal, uint16_t port,
				    const struct sockaddr_storage *sa)
{
	portal->port = port;
	memcpy(&portal->sa, sa, sizeof(*sa));
	portal_in_service(portal);
}

static void portal_failed_closed(uv_handle_t *h)
{
	free(h->data);
}

static int portal_opts_check(const struct scsitgt__logger *lg, const char *fn,
			     struct scsitgt_portal_opts *o, struct sockaddr_storage *sa,
			     const struct scsitgt_portal_opts *opts)
{
	scsitgt_portal_opts_init(o, sizeof(*o));
	if (opts) {
		if (opts->size == 0)
			return ISCSI_REFUSE(lg,
					    "opts size 0 (initialise the options with "
					    "scsitgt_portal_opts_init())",
					    fn);
		memcpy(o, opts, opts->size < sizeof(*o) ? opts->size : sizeof(*o));
		o->size = sizeof(*o);
	}
	if (o->address == NULL || strlen(o->address) >= 64)
		return ISCSI_REFUSE(lg, "address %s: %s", fn, o->address ? o->address : "NULL",
				    o->address ? "63 bytes at most" : "required");
	if (o->tpgt == 0)
		return ISCSI_REFUSE(lg, "%s port %u: tpgt 0: not 1..65535", fn, o->address,
				    (unsigned)o->port);
	if (o->backlog < 1)
		return ISCSI_REFUSE(lg, "%s port %u: backlog %d: at least 1", fn, o->address,
				    (unsigned)o->port, o->backlog);
	memset(sa, 0, sizeof(*sa));
	if (uv_ip4_addr(o->address, o->port, (struct sockaddr_in *)sa) != 0 &&
	    uv_ip6_addr(o->address, o->port, (struct sockaddr_in6 *)sa) != 0)
		return ISCSI_REFUSE(lg,
				    "address \"%s\": not a numeric IPv4 or IPv6 address (host "
				    "names are not resolved)",
				    fn, o->address);
	return 0;
}

int scsitgt__iscsi_portal_new(struct scsitgt_portal **out, struct scsitgt_engine *engine,
			      const struct scsitgt_portal_opts *opts, struct scsitgt_portal_opts *o,
			      struct sockaddr_storage *sa, const char *fn)
{
	struct scsitgt__iscsi_engine *ie;
	struct scsitgt_portal *portal;
	int rc;

	if (engine == NULL)
		return -EINVAL;
	if (out == NULL || engine->destroying)
		return ISCSI_REFUSE(&engine->log, "%s", fn,
				    out == NULL ? "out is NULL" : "the engine is being destroyed");
	rc = portal_opts_check(&engine->log, fn, o, sa, opts);
	if (rc < 0)
		return rc;
	ie = scsitgt__iscsi_engine_get(engine);
	if (ie == NULL)
		return -ENOMEM;
	portal = calloc(1, sizeof(*portal));
	if (portal == NULL)
		return -ENOMEM;
	portal->ie = ie;
	portal->tpgt = o->tpgt;
	portal->max_conns = o->max_connections;
	portal->max_login_conns = o->max_login_connections;
	portal->max_conns_per_initiator = o->max_connections_per_initiator;
	portal->ipv6 = sa->ss_family == AF_INET6;
	snprintf(portal->address, sizeof(portal->address), "%s", o->address);
	portal->wildcard = strcmp(o->address, "0.0.0.0") == 0 || strcmp(o->address, "::") == 0;
	*out = portal;
	return 0;
}

SCSITGT_EXPORT int scsitgt_portal_create(struct scsitgt_portal **out, struct scsitgt_engine *engine,
					 const struct scsitgt_portal_opts *opts)
{
	struct scsitgt_portal_opts o;
	struct scsitgt_portal *portal;
	struct sockaddr_storage sa;
	int salen = sizeof(sa);
	int rc;

	/* A NULL @out is refused there (before, the portal was made and *out written). */
	rc = scsitgt__iscsi_portal_new(out ? &portal : NULL, engine, opts, &o, &sa,
				       "scsitgt_portal_create");
	if (rc < 0)
		return rc;
	rc = uv_tcp_init(engine->loop, &portal->listener);
	if (rc < 0) {
		free(portal);
		return rc;
	}
	portal->listener.data = portal;
	rc = uv_tcp_bind(&portal->listener, (const struct sockaddr *)&sa, 0);
	if (rc == 0)
		rc = uv_listen((uv_stream_t *)&portal->listener, o.backlog, portal_on_connection);
	if (rc == 0)
		rc = uv_tcp_getsockname(&portal->listener, (struct sockaddr *)&portal->sa, &salen);
	if (rc < 0) {
		scsitgt__log(&engine->log, SCSITGT_LOG_ERROR, SCSITGT__ISCSI_SUBSYS,
			     "scsitgt_portal_create: %s port %u: %s", o.address, (unsigned)o.port,
			     scsitgt_strerror(rc));
		uv_close((uv_handle_t *)&portal->listener, portal_failed_closed);
		return rc;
	}
	portal->port = ntohs(portal->ipv6 ? ((struct sockaddr_in6 *)&portal->sa)->sin6_port :
					    ((struct sockaddr_in *)&portal->sa)->sin_port);
	portal_in_service(portal);
	scsitgt__engine_check_sigpipe(engine);
	*out = portal;
	return 0;
}

SCSITGT_EXPORT void scsitgt_portal_destroy(struct scsitgt_portal *portal, scsitgt_done_cb cb,
					   void *cb_arg)
{
	if (portal == NULL || portal->closing)
		return;
	portal_stop(portal, cb, cb_arg);
}

SCSITGT_EXPORT uint16_t scsitgt_portal_get_port(const struct scsitgt_portal *portal)
{
	return portal ? portal->port : 0;
}

SCSITGT_EXPORT uint16_t scsitgt_portal_get_tpgt(const struct scsitgt_portal *portal)
{
	return portal ? portal->tpgt : 0;
}

int scsitgt__iscsi_portal_address(const struct scsitgt_portal *portal,
				  const struct scsitgt__iscsi_conn *conn, char *buf, size_t size)
{
	char host[64];
	bool v6 = portal->ipv6;
	int n;

	snprintf(host, sizeof(host), "%s", portal->address);
	if (portal->wildcard && conn) {
		/* A wildcard portal is reached at the address this connection came in on. */
		const struct sockaddr *sa = (const struct sockaddr *)&conn->local_sa;

		if (sa->sa_family == AF_INET) {
			inet_ntop(AF_INET,
				  &((const struct sockaddr_in *)(const void *)sa)->sin_addr, host,
				  sizeof(host));
			v6 = false;
		} else if (sa->sa_family == AF_INET6) {
			const struct sockaddr_in6 *in6 =
				(const struct sockaddr_in6 *)(const void *)sa;

			if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
				inet_ntop(AF_INET, &in6->sin6_addr.s6_addr[12], host, sizeof(host));
				v6 = false;
			} else {
				inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
				v6 = true;
			}
		}
	}
	/* RFC 7143 §13.8: IPv6 addresses in brackets. */
	n = snprintf(buf, size, v6 ? "[%s]:%u" : "%s:%u", host, portal->port);
	return n < 0 || (size_t)n >= size ? -ENOSPC : 0;
}
