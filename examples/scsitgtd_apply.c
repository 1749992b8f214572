/* SPDX-License-Identifier: MIT */
/*
 * scsitgtd: bring the engine to a configuration. At start this creates everything; on SIGHUP
 * it applies the difference to the running objects, so that logged-in initiators keep their
 * sessions and learn of changes through the unit attentions the library raises (SPC-5 §5.14:
 * REPORTED LUNS DATA HAS CHANGED for LUNs that come and go, CAPACITY DATA HAS CHANGED on a
 * resize, ASYMMETRIC ACCESS STATE CHANGED on an ALUA state change). This file holds the whole
 * configuration (engine settings, pr_dir, portals, which targets come and go) and the change
 * log lines every part writes; one target's settings are scsitgtd_apply_target.c's, LUNs and
 * their backends scsitgtd_apply_lun.c's (scsitgtd_apply.h: what the three share).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scsitgtd_apply.h"

/*
 * One log line per change applied: NOTICE on a reload or a control socket change, INFO at the
 * first start (when everything is new). Secrets are never printed (scsitgtd_cred_changed()).
 */
void scsitgtd_changed(struct scsitgtd *d, const char *fmt, ...)
{
	char line[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	scsitgtd_log(d, d->cfg ? SCSITGT_LOG_NOTICE : SCSITGT_LOG_INFO, "change: %s", line);
}

/* A CHAP credential @what of @who going from (@ou, @os) to (@nu, @ns): the user, never the secret. */
void scsitgtd_cred_changed(struct scsitgtd *d, const char *who, const char *what, const char *ou,
			   const char *os, const char *nu, const char *ns)
{
	if (str_eq(ou, nu) && str_eq(os, ns))
		return;
	if (nu == NULL)
		scsitgtd_changed(d, "%s: %s removed (was user %s)", who, what, ou ? ou : "-");
	else if (ou == NULL)
		scsitgtd_changed(d, "%s: %s set (user %s)", who, what, nu);
	else if (!str_eq(ou, nu))
		scsitgtd_changed(d, "%s: %s user %s -> %s%s", who, what, ou, nu,
				 str_eq(os, ns) ? "" : ", secret changed");
	else
		scsitgtd_changed(d, "%s: %s secret changed (user %s)", who, what, nu);
}

/* ---- iSCSI parameters ---- */

void scsitgtd_params_build(const struct scsitgtd_params *ps, struct scsitgt_iscsi_params *o)
{
	scsitgt_iscsi_params_init(o, sizeof(*o));
	for (unsigned int i = 0; i < SCSITGTD_P_COUNT; i++) {
		uint64_t v = ps->v[i];

		if (!(ps->set & (1u << i)))
			continue;
		switch ((enum scsitgtd_param)i) {
		case SCSITGTD_P_MAX_RECV_DATA_SEGMENT_LENGTH:
			o->max_recv_data_segment_length = (uint32_t)v;
			break;
		case SCSITGTD_P_MAX_BURST_LENGTH:
			o->max_burst_length = (uint32_t)v;
			break;
		case SCSITGTD_P_FIRST_BURST_LENGTH:
			o->first_burst_length = (uint32_t)v;
			break;
		case SCSITGTD_P_IMMEDIATE_DATA:
			o->immediate_data = v != 0;
			break;
		case SCSITGTD_P_INITIAL_R2T:
			o->initial_r2t = v != 0;
			break;
		case SCSITGTD_P_MAX_OUTSTANDING_R2T:
			o->max_outstanding_r2t = (uint32_t)v;
			break;
		case SCSITGTD_P_HEADER_DIGEST:
			o->header_digest = (enum scsitgt_iscsi_digest)v;
			break;
		case SCSITGTD_P_DATA_DIGEST:
			o->data_digest = (enum scsitgt_iscsi_digest)v;
			break;
		case SCSITGTD_P_DEFAULT_TIME2WAIT:
			o->default_time2wait = (uint32_t)v;
			break;
		case SCSITGTD_P_DEFAULT_TIME2RETAIN:
			o->default_time2retain = (uint32_t)v;
			break;
		case SCSITGTD_P_QUEUE_DEPTH:
			o->queue_depth = (uint32_t)v;
			break;
		case SCSITGTD_P_NOP_INTERVAL_MS:
			o->nop_interval_ms = (uint32_t)v;
			break;
		case SCSITGTD_P_NOP_TIMEOUT_MS:
			o->nop_timeout_ms = (uint32_t)v;
			break;
		case SCSITGTD_P_LOGIN_TIMEOUT_MS:
			o->login_timeout_ms = (uint32_t)v;
			break;
		case SCSITGTD_P_CHAP_ALGORITHMS:
			o->chap_algorithms = (uint32_t)v;
			break;
		case SCSITGTD_P_MAX_WRITE_BUFFER:
			o->max_write_buffer_bytes = v;
			break;
		case SCSITGTD_P_LOGOUT_TIMEOUT_MS:
			o->logout_timeout_ms = (uint32_t)v;
			break;
		case SCSITGTD_P_ASYNC_EVENTS:
			o->async_events = (uint32_t)v;
			break;
		case SCSITGTD_P_COUNT:
		default:
			break;
		}
	}
}

/* ---- portals ---- */

static bool portal_equal(const struct scsitgtd_portal *a, const struct scsitgtd_portal *b)
{
	return scsitgtd_portal_same(a, b) && a->tpgt == b->tpgt && a->backlog == b->backlog &&
	       a->max_connections == b->max_connections &&
	       a->max_login_connections == b->max_login_connections &&
	       a->max_connections_per_initiator == b->max_connections_per_initiator &&
	       a->rdma_buffer == b->rdma_buffer;
}

static const char *transport_name(enum scsitgtd_transport t)
{
	return t == SCSITGTD_TRANSPORT_ISER ? "iser" : "tcp";
}

static struct scsitgt_portal *portal_create(struct scsitgtd *d, const struct scsitgtd_portal *p)
{
	struct scsitgt_portal_opts o;
	struct scsitgt_portal *portal;
	int rc;

	scsitgt_portal_opts_init(&o, sizeof(o));
	o.address = p->address;
	o.port = p->port;
	o.tpgt = p->tpgt;
	if (p->backlog)
		o.backlog = (int)p->backlog;
	if (p->max_connections >= 0)
		o.max_connections = (uint32_t)p->max_connections;
	if (p->max_login_connections >= 0)
		o.max_login_connections = (uint32_t)p->max_login_connections;
	if (p->max_connections_per_initiator >= 0)
		o.max_connections_per_initiator = (uint32_t)p->max_connections_per_initiator;
	if (p->rdma_buffer)
		o.rdma_buffer_bytes = p->rdma_buffer;
	if (p->transport == SCSITGTD_TRANSPORT_ISER)
		rc = scsitgt_iser_portal_create(&portal, d->engine, &o);
	else
		rc = scsitgt_portal_create(&portal, d->engine, &o);
	if (rc < 0) {
		scsitgtd_log(d, SCSITGT_LOG_ERROR, "portal %s %s port %u (line %u): %s",
			     transport_name(p->transport), p->address, p->port, p->line,
			     scsitgt_strerror(rc));
		return NULL;
	}
	scsitgtd_log(d, SCSITGT_LOG_NOTICE, "listening (%s) on %s:%u (TPGT %u)",
		     transport_name(p->transport), p->address, scsitgt_portal_get_port(portal),
		     p->tpgt);
	return portal;
}

static void portals_apply(struct scsitgtd *d, const struct scsitgtd_config *oc,
			  const struct scsitgtd_config *nc, struct scsitgt_portal **portals)
{
	/* Keep identical ones, close the others, then open the new ones (a changed portal on
	 * the same address and port is closed before it is opened again). */
	for (size_t j = 0; oc && j < oc->nportals; j++) {
		bool kept = false;

		for (size_t i = 0; i < nc->nportals && !kept; i++) {
			if (portals[i] == NULL && d->portals[j] &&
			    portal_equal(&oc->portals[j], &nc->portals[i])) {
				portals[i] = d->portals[j];
				kept = true;
			}
		}
		if (!kept && d->portals[j]) {
			scsitgt_portal_destroy(d->portals[j], NULL, NULL);
			scsitgtd_changed(d, "portal %s port %u: closed", oc->portals[j].address,
					 oc->portals[j].port);
		}
	}
	for (size_t i = 0; i < nc->nportals; i++)
		if (portals[i] == NULL)
			portals[i] = portal_create(d, &nc->portals[i]);
}

/* ---- the whole configuration ---- */

/* mkdir -p with mode 0700 (reservation keys are the hosts' secrets of a kind). 0 or -errno. */
static int mkdir_parents(const char *path)
{
	char buf[4096];
	size_t len = strlen(path);

	if (len == 0 || len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0700) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, 0700) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/*
 * pr_dir is a state directory: made if it is missing (as systemd's StateDirectory= would),
 * and said loudly if it cannot be used. Without it the library's file store cannot save a
 * LUN's state (pr.h), so every PERSISTENT RESERVE OUT that APTPL asks to keep is undone and
 * fails with HARDWARE ERROR, INTERNAL TARGET FAILURE (SPC-5 §5.13.5); before the library
 * failed it, such a registration answered GOOD and did not survive a restart: the first
 * fresh-machine run of the sample (scripts/fresh-check.sh) showed it.
 */
static void pr_dir_prepare(struct scsitgtd *d, const char *dir)
{
	struct stat st;
	int rc = 0;

	if (stat(dir, &st) < 0) {
		rc = errno == ENOENT ? mkdir_parents(dir) : -errno;
		if (rc == 0)
			scsitgtd_log(d, SCSITGT_LOG_NOTICE, "pr_dir %s: created", dir);
	} else if (!S_ISDIR(st.st_mode)) {
		rc = -ENOTDIR;
	}
	if (rc == 0 && access(dir, W_OK | X_OK) < 0)
		rc = -errno;
	if (rc < 0)
		scsitgtd_log(d, SCSITGT_LOG_ERROR,
			     "pr_dir %s: %s: its LUNs cannot save persistent reservations: "
			     "PERSISTENT RESERVE OUT with APTPL will fail (HARDWARE ERROR)",
			     dir, strerror(-rc));
}

static void engine_apply(struct scsitgtd *d, const struct scsitgtd_config *oc,
			 const struct scsitgtd_config *nc)
{
	struct scsitgt_iscsi_params ip;
	int rc;

	if (oc && oc->log_level != nc->log_level)
		scsitgtd_changed(d, "log_level %d -> %d", oc->log_level, nc->log_level);
	atomic_store_explicit(&d->log_level, nc->log_level, memory_order_relaxed);
	if (oc && oc->tmf_timeout_ms != nc->tmf_timeout_ms)
		scsitgtd_changed(d, "tmf_timeout_ms %u -> %u", oc->tmf_timeout_ms,
				 nc->tmf_timeout_ms);
	if (oc && oc->drain_timeout_ms != nc->drain_timeout_ms)
		scsitgtd_changed(d, "drain_timeout_ms %u -> %u", oc->drain_timeout_ms,
				 nc->drain_timeout_ms);
	if (oc && !scsitgtd_params_equal(&oc->params, &nc->params))
		scsitgtd_changed(d, "[engine] iSCSI parameters changed (for new logins)");
	scsitgtd_cred_changed(d, "[engine]", "discovery_chap", oc ? oc->discovery_user : NULL,
			      oc ? oc->discovery_secret : NULL, nc->discovery_user,
			      nc->discovery_secret);
	scsitgtd_cred_changed(d, "[engine]", "discovery_mutual_chap",
			      oc ? oc->discovery_mutual_user : NULL,
			      oc ? oc->discovery_mutual_secret : NULL, nc->discovery_mutual_user,
			      nc->discovery_mutual_secret);
	if (!oc || oc->tmf_timeout_ms != nc->tmf_timeout_ms) {
		rc = scsitgt_engine_set_tmf_timeout(
			d->engine, nc->tmf_timeout_ms ? nc->tmf_timeout_ms : 30000);
		if (rc < 0)
			scsitgtd_log(d, SCSITGT_LOG_ERROR, "tmf_timeout_ms: %s",
				     scsitgt_strerror(rc));
	}
	if (!oc || !scsitgtd_params_equal(&oc->params, &nc->params)) {
		scsitgtd_params_build(&nc->params, &ip);
		rc = scsitgt_iscsi_engine_set_params(d->engine, &ip);
		if (rc < 0)
			scsitgtd_log(d, SCSITGT_LOG_ERROR, "[engine] iSCSI parameters: %s",
				     scsitgt_strerror(rc));
	}
	if (!oc || oc->drain_timeout_ms != nc->drain_timeout_ms) {
		rc = scsitgt_engine_set_drain_timeout(
			d->engine, nc->drain_timeout_ms ? nc->drain_timeout_ms : 30000);
		if (rc < 0)
			scsitgtd_log(d, SCSITGT_LOG_ERROR, "drain_timeout_ms: %s",
				     scsitgt_strerror(rc));
	}
	/* Discovery CHAP applies to discovery logins from now on. */
	if (!oc || !str_eq(oc->discovery_user, nc->discovery_user) ||
	    !str_eq(oc->discovery_secret, nc->discovery_secret)) {
		rc = scsitgt_iscsi_engine_set_discovery_chap(d->engine, nc->discovery_user,
							     nc->discovery_secret);
		if (rc < 0)
			scsitgtd_log(d, SCSITGT_LOG_ERROR, "discovery_chap: %s",
				     scsitgt_strerror(rc));
	}
	if (!oc || !str_eq(oc->discovery_mutual_user, nc->discovery_mutual_user) ||
	    !str_eq(oc->discovery_mutual_secret, nc->discovery_mutual_secret)) {
		rc = scsitgt_iscsi_engine_set_discovery_mutual_chap(
			d->engine, nc->discovery_mutual_user, nc->discovery_mutual_secret);
		if (rc < 0)
			scsitgtd_log(d, SCSITGT_LOG_ERROR, "discovery_mutual_chap: %s",
				     scsitgt_strerror(rc));
	}
	if (oc && !str_eq(oc->pr_dir, nc->pr_dir))
		scsitgtd_log(d, SCSITGT_LOG_WARNING, "pr_dir: applies to LUNs created from now on");
	if (nc->pr_dir && (!oc || !str_eq(oc->pr_dir, nc->pr_dir)))
		pr_dir_prepare(d, nc->pr_dir);
	if (oc && oc->workers != nc->workers)
		scsitgtd_log(d, SCSITGT_LOG_WARNING, "workers: takes effect at the next start");
	if (oc && oc->conn_workers != nc->conn_workers)
		scsitgtd_log(d, SCSITGT_LOG_WARNING,
			     "conn_workers: takes effect at the next start");
}

static void tgt_release(struct scsitgtd_tgt *t, size_t nsrps)
{
	for (size_t j = 0; t->srps && j < nsrps; j++)
		if (t->srps[j])
			scsitgt_srp_portal_destroy(t->srps[j], NULL, NULL);
	free(t->srps);
	t->srps = NULL;
}

int scsitgtd_apply(struct scsitgtd *d, struct scsitgtd_config *nc)
{
	struct scsitgtd_config *oc = d->cfg;
	struct scsitgtd_tgt *tgts = calloc(nc->ntargets ? nc->ntargets : 1, sizeof(*tgts));
	struct scsitgt_portal **portals = calloc(nc->nportals ? nc->nportals : 1, sizeof(*portals));
	bool nomem = tgts == NULL || portals == NULL;

	for (size_t i = 0; !nomem && i < nc->ntargets; i++) {
		tgts[i].srps = calloc(nc->targets[i].nsrps ? nc->targets[i].nsrps : 1,
				      sizeof(*tgts[i].srps));
		nomem = tgts[i].srps == NULL;
	}
	if (nomem) {
		for (size_t i = 0; tgts && i < nc->ntargets; i++)
			free(tgts[i].srps);
		free(tgts);
		free(portals);
		return -ENOMEM;
	}
	engine_apply(d, oc, nc);
	/* Targets that went: their SRP ports close, their sessions are logged out. */
	for (size_t i = 0; oc && i < oc->ntargets; i++) {
		if (d->tgts[i].tgt && !scsitgtd_config_find_target(nc, oc->targets[i].name)) {
			scsitgtd_changed(d, "target %s: removed", oc->targets[i].name);
			struct scsitgtd_gw *gw = scsitgtd_gw_find(d, d->tgts[i].tgt);

			tgt_release(&d->tgts[i], oc->targets[i].nsrps);
			if (gw) {
				/* After its gateway. */
				gw->then_target = true;
				scsitgtd_gw_destroy(gw);
			} else {
				scsitgtd_target_destroy_removed(d, d->tgts[i].tgt);
			}
			d->tgts[i].tgt = NULL;
		}
	}
	/* Targets that stay or came. */
	for (size_t i = 0; i < nc->ntargets; i++) {
		const struct scsitgtd_target *nt = &nc->targets[i];
		const struct scsitgtd_target *ot = scsitgtd_config_find_target(oc, nt->name);
		struct scsitgtd_tgt *old = ot ? &d->tgts[ot - oc->targets] : NULL;

		if (old && old->tgt) {
			tgts[i].tgt = old->tgt;
			scsitgtd_target_apply(d, tgts[i].tgt, oc, ot, nc, nt);
			scsitgtd_srps_apply(d, tgts[i].tgt, ot, old->srps, nt, tgts[i].srps);
			free(old->srps);
			old->srps = NULL;
			old->tgt = NULL;
		} else if (scsitgtd_target_create(d, nc, nt, &tgts[i]) == 0) {
			scsitgtd_srps_apply(d, tgts[i].tgt, NULL, NULL, nt, tgts[i].srps);
		}
	}
	portals_apply(d, oc, nc, portals);
	for (size_t i = 0; oc && i < oc->ntargets; i++)
		free(d->tgts[i].srps);
	free(d->tgts);
	free(d->portals);
	scsitgtd_config_free(oc);
	d->tgts = tgts;
	d->portals = portals;
	d->cfg = nc;
	scsitgtd_pr_shares_prune(d, false);
	scsitgtd_lun_fails_prune(d, false);
	return 0;
}

void scsitgtd_free(struct scsitgtd *d)
{
	/* The engine destroyed every object; only our arrays are left. */
	scsitgtd_pr_shares_prune(d, true);
	scsitgtd_lun_fails_prune(d, true);
	for (size_t i = 0; d->cfg && i < d->cfg->ntargets; i++)
		free(d->tgts[i].srps);
	free(d->tgts);
	free(d->portals);
	scsitgtd_config_free(d->cfg);
	d->tgts = NULL;
	d->portals = NULL;
	d->cfg = NULL;
}
