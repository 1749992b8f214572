/* SPDX-License-Identifier: MIT */
/*
 * scsitgtd: bring the engine to a configuration. At start this creates everything; on SIGHUP
 * it applies the difference to the running objects, so that logged-in initiators keep their
 * sessions and learn of changes through the unit attentions the library raises (SPC-5 §5.14:
 * REPORTED LUNS DATA HAS CHANGED for LUNs that come and go, CAPACITY DATA HAS CHANGED on a
 * resize, ASYMMETRIC ACCESS STATE CHANGED on an ALUA state change).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scsitgtd.h"

static bool str_eq(const char *a, const char *b)
{
	return (a == NULL && b == NULL) || (a && b && !strcmp(a, b));
}

/*
 * One log line per change applied: NOTICE on a reload or a control socket change, INFO at the
 * first start (when everything is new). Secrets are never printed (cred_changed()).
 */
static void changed(struct scsitgtd *d, const char *fmt, ...) SCSITGT_PRINTF(2, 3);
static void changed(struct scsitgtd *d, const char *fmt, ...)
{
	char line[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	scsitgtd_log(d, d->cfg ? SCSITGT_LOG_NOTICE : SCSITGT_LOG_INFO, "change: %s", line);
}

/* A CHAP credential @what of @who going from (@ou, @os) to (@nu, @ns): the user, never the secret. */
static void cred_changed(struct scsitgtd *d, const char *who, const char *what, const char *ou,
			 const char *os, const char *nu, const char *ns)
{
	if (str_eq(ou, nu) && str_eq(os, ns))
		return;
	if (nu == NULL)
		changed(d, "%s: %s removed (was user %s)", who, what, ou ? ou : "-");
	else if (ou == NULL)
		changed(d, "%s: %s set (user %s)", who, what, nu);
	else if (!str_eq(ou, nu))
		changed(d, "%s: %s user %s -> %s%s", who, what, ou, nu,
			str_eq(os, ns) ? "" : ", secret changed");
	else
		changed(d, "%s: %s secret changed (user %s)", who, what, nu);
}

static void noop_done(void *arg, int status)
{
	(void)arg;
	(void)status;
}

/* ---- iSCSI parameters ---- */

static void params_build(const struct scsitgtd_params *ps, struct scsitgt_iscsi_params *o)
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

/* ---- LUNs ---- */

/* Where the LUN's persistent reservations live: pr_file, else a file in pr_dir. */
static const char *pr_path(const struct scsitgtd_config *cfg, const char *tname,
			   const struct scsitgtd_lun *l, char *buf, size_t size)
{
	int n;

	if (l->pr_file)
		return l->pr_file;
	if (cfg->pr_dir == NULL)
		return NULL;
	n = snprintf(buf, size, "%s/%s.lun%llu.pr", cfg->pr_dir, tname, (unsigned long long)l->id);
	return n > 0 && (size_t)n < size ? buf : NULL;
}

static int backend_open(struct scsitgtd *d, const char *tname, const struct scsitgtd_lun *l,
			const struct scsitgt_backend_ops **ops, void **bctx)
{
	struct scsitgt_backend_aio_opts ao;
	struct stat st;

	switch (l->backend) {
	case SCSITGTD_BACKEND_RAM:
		*ops = scsitgt_backend_ram_ops();
		return scsitgt_backend_ram_create(bctx);
	case SCSITGTD_BACKEND_NULL:
		*ops = scsitgt_backend_null_ops();
		return scsitgt_backend_null_create(bctx);
	case SCSITGTD_BACKEND_FILE:
	case SCSITGTD_BACKEND_BLOCK:
	default:
		/* The kind is the operator's promise; say so when the path breaks it. */
		if (stat(l->path, &st) < 0) {
			scsitgtd_log(d, SCSITGT_LOG_ERROR, "%s LUN %llu: %s: %s", tname,
				     (unsigned long long)l->id, l->path, strerror(errno));
			return -errno;
		}
		if (l->backend == SCSITGTD_BACKEND_BLOCK ? !S_ISBLK(st.st_mode) :
							   !S_ISREG(st.st_mode)) {
			scsitgtd_log(d, SCSITGT_LOG_ERROR, "%s LUN %llu: %s is not a %s", tname,
				     (unsigned long long)l->id, l->path,
				     l->backend == SCSITGTD_BACKEND_BLOCK ? "block device" :
									    "regular file");
			return -EINVAL;
		}
		scsitgt_backend_aio_opts_init(&ao, sizeof(ao));
		ao.loop = d->loop;
		ao.path = l->path;
		ao.read_only = (l->flags & SCSITGTD_LUN_READ_ONLY) != 0;
		ao.direct = l->direct;
		ao.write_through = l->write_through;
		if (l->aio_queue_depth)
			ao.queue_depth = l->aio_queue_depth;
		ao.engine = (enum scsitgt_backend_aio_engine)l->io_engine;
		ao.uring_async = (enum scsitgt_backend_aio_uring_async)l->uring_async;
		*ops = scsitgt_backend_aio_ops();
		if (*ops == NULL)
			return -ENOTSUP;
		return scsitgt_backend_aio_create(bctx, &ao);
	}
}

/* Put the fault injection backend, with the LUN's rules, in front of the backend @ops, @bctx. */
static int fault_wrap(struct scsitgtd *d, const char *tname, const struct scsitgtd_lun *l,
		      const struct scsitgt_backend_ops **ops, void **bctx)
{
	void *fctx;
	int rc;

	rc = scsitgt_backend_fault_create(&fctx, d->loop, *ops, *bctx);
	if (rc < 0) {
		(*ops)->close(*bctx, noop_done, NULL);
	} else if ((rc = scsitgt_backend_fault_add_spec(fctx, l->fault)) < 0) {
		scsitgt_backend_fault_destroy(fctx);
	} else {
		*ops = scsitgt_backend_fault_ops(fctx);
		*bctx = fctx;
		return 0;
	}
	scsitgtd_log(d, SCSITGT_LOG_ERROR, "%s LUN %llu: fault (line %u): %s", tname,
		     (unsigned long long)l->id, l->fault_line, scsitgt_strerror(rc));
	return rc;
}

int scsitgtd_fault_spec_check(const char *spec)
{
	const struct scsitgt_backend_ops *ops = scsitgt_backend_null_ops();
	void *inner, *fctx;
	int rc;

	/* A throwaway fault context around a null backend parses the rules (it touches no loop
	 * before it serves a LUN). */
	rc = scsitgt_backend_null_create(&inner);
	if (rc < 0)
		return rc;
	rc = scsitgt_backend_fault_create(&fctx, uv_default_loop(), ops, inner);
	if (rc < 0) {
		ops->close(inner, noop_done, NULL);
		return rc;
	}
	rc = scsitgt_backend_fault_add_spec(fctx, spec);
	scsitgt_backend_fault_destroy(fctx);
	return rc < 0 ? rc : 0;
}

/* A LUN waiting for its shared reservations (scsitgt_backend_rbd_use_pr()). */
struct rbd_pr_wait {
	struct scsitgtd *d;
	struct scsitgt_lun *lun;
	uint64_t id;
	bool offline;
	char tname[224];
};

static void rbd_pr_attached(void *arg, int status)
{
	struct rbd_pr_wait *w = arg;

	if (status == -ECANCELED) {
		/* The LUN went away meanwhile (a reload, shutdown): nothing to do. */
	} else if (status < 0) {
		scsitgtd_log(
			w->d, SCSITGT_LOG_ERROR,
			"%s LUN %llu: shared reservations: %s; the LUN stays offline (reload to "
			"retry)",
			w->tname, (unsigned long long)w->id, scsitgt_strerror(status));
	} else {
		if (!w->offline)
			scsitgt_lun_set_offline(w->lun, false);
		scsitgtd_log(w->d, SCSITGT_LOG_INFO, "%s LUN %llu: reservations shared in RADOS",
			     w->tname, (unsigned long long)w->id);
	}
	free(w);
}

static void rbd_share_pr(struct scsitgtd *d, const char *tname, const struct scsitgtd_lun *l,
			 struct scsitgt_lun *lun, void *rbd_ctx)
{
	struct rbd_pr_wait *w = calloc(1, sizeof(*w));
	int rc = w ? 0 : -ENOMEM;

	if (w) {
		w->d = d;
		w->lun = lun;
		w->id = l->id;
		w->offline = l->offline;
		snprintf(w->tname, sizeof(w->tname), "%s", tname);
		scsitgt_lun_set_offline(lun, true);
		rc = scsitgt_backend_rbd_use_pr(rbd_ctx, NULL, rbd_pr_attached, w);
	}
	if (rc < 0) {
		free(w);
		scsitgtd_log(d, SCSITGT_LOG_ERROR,
			     "%s LUN %llu: shared reservations: %s; the LUN stays offline", tname,
			     (unsigned long long)l->id, scsitgt_strerror(rc));
	}
}

/*
 * Create the LUN on the opened backend @ops/@bctx (the caller's; freed here on failure).
 * @rbd_ctx is the RBD context when the backend is one (bctx may be a fault wrapper around
 * it): the identification then comes from the image, the same on every gateway.
 */
static int lun_finish(struct scsitgtd *d, struct scsitgt_target *tgt,
		      const struct scsitgtd_config *cfg, const struct scsitgtd_lun *l,
		      const struct scsitgt_backend_ops *ops, void *bctx, void *rbd_ctx)
{
	const char *tname = scsitgt_target_get_name(tgt);
	struct scsitgt_lun_opts o;
	struct scsitgt_lun *lun;
	uint32_t bs = l->block_size ? l->block_size : 512;
	char prbuf[4096], serial[40];
	const char *pr;
	int rc;

	if (l->fault) {
		rc = fault_wrap(d, tname, l, &ops, &bctx);
		if (rc < 0)
			return rc;
	}
	scsitgt_lun_opts_init(&o, sizeof(o));
	o.id = l->id;
	o.block_size = l->block_size;
	o.num_blocks = l->size / bs;
	o.backend = ops;
	o.backend_ctx = bctx;
	o.vendor = l->vendor;
	o.product = l->product;
	o.revision = l->revision;
	o.serial = l->serial;
	o.flags = ((l->flags & SCSITGTD_LUN_READ_ONLY) ? SCSITGT_LUN_READ_ONLY : 0) |
		  ((l->flags & SCSITGTD_LUN_THIN) ? SCSITGT_LUN_THIN : 0) |
		  ((l->flags & SCSITGTD_LUN_REMOVABLE) ? SCSITGT_LUN_REMOVABLE : 0) |
		  ((l->flags & SCSITGTD_LUN_WRITE_CACHE) ? SCSITGT_LUN_WRITE_CACHE : 0) |
		  ((l->flags & SCSITGTD_LUN_CLAIM_SPC4) ? SCSITGT_LUN_CLAIM_SPC4 : 0);
	if (rbd_ctx) {
		/* One device for multipath on every gateway; WCE when librbd caches writes. */
		scsitgt_backend_rbd_get_ident(rbd_ctx, &o.naa, serial, sizeof(serial));
		if (l->serial == NULL)
			o.serial = serial;
		o.flags |= SCSITGT_LUN_WRITE_CACHE;
	}
	if (l->physical_block_exponent >= 0)
		o.physical_block_exponent = (uint8_t)l->physical_block_exponent;
#define COPY_LIMIT(name, type, max) o.name = l->name;
	SCSITGTD_LUN_LIMITS(COPY_LIMIT)
#undef COPY_LIMIT
	memcpy(o.naa_extended, l->naa_extended, sizeof(o.naa_extended));
	memcpy(o.uuid, l->uuid, sizeof(o.uuid));
	rc = scsitgt_lun_create(&lun, tgt, &o);
	if (rc < 0) {
		/* We still own the backend context: its close() frees it (the fault backend's
		 * destroy() closes the backend it wraps). */
		if (l->fault)
			scsitgt_backend_fault_destroy(bctx);
		else
			ops->close(bctx, noop_done, NULL);
		/* FILE:LINE of the section: -EINVAL here is a refusal of its options (block
		 * limits that contradict the backend's block size, say). */
		scsitgtd_log(d, SCSITGT_LOG_ERROR, "%s:%u: %s LUN %llu: %s",
			     d->path ? d->path : "-", l->line, tname, (unsigned long long)l->id,
			     scsitgt_strerror(rc));
		return rc;
	}
	if (rbd_ctx)
		scsitgt_backend_rbd_set_lun(rbd_ctx, lun);
	if (rbd_ctx && l->rbd_shared_pr) {
		/* Reservations shared with every gateway of the image (RADOS); offline until the
		 * shared state is read and watched. */
		rbd_share_pr(d, tname, l, lun, rbd_ctx);
		pr = NULL;
	} else {
		/* SPC-5 §5.13.5 APTPL: reservations survive a restart in this file. */
		pr = pr_path(cfg, tname, l, prbuf, sizeof(prbuf));
	}
	if (pr && (rc = scsitgt_lun_use_pr_file(lun, pr)) < 0)
		scsitgtd_log(d, SCSITGT_LOG_ERROR, "%s LUN %llu: reservations file %s: %s", tname,
			     (unsigned long long)l->id, pr, scsitgt_strerror(rc));
	if (l->offline)
		scsitgt_lun_set_offline(lun, true);
	changed(d, "%s LUN %llu: created (line %u)", tname, (unsigned long long)l->id, l->line);
	return 0;
}

/*
 * RBD gateways (rbd_gateway in [target]; backend_rbd_gateway.h): one per target, on its one
 * RBD LUN, created once the LUN is. A gateway must go before its LUN (it uses the backend
 * context) and its destruction ends on the loop, so removing the LUN or the target waits for
 * it: the entry says what to do then.
 */
struct scsitgtd_gw {
	struct scsitgtd_gw *next;
	struct scsitgtd *d;
	struct scsitgt_target *tgt;
	struct scsitgt_rbd_gateway *gw;
	/* The ALUA groups it made (its own first), destroyed with it. */
	uint16_t groups[1 + SCSITGTD_MAX_GW_PEERS];
	size_t ngroups;
	bool destroying;
	/* Once it is gone: destroy the target; or destroy LUN lun_id and create it again if
	 * the configuration applied by then has it. */
	bool then_target;
	bool then_lun;
	uint64_t lun_id;
};

static int lun_create(struct scsitgtd *d, struct scsitgt_target *tgt,
		      const struct scsitgtd_config *cfg, const struct scsitgtd_lun *l);
static void target_destroy_removed(struct scsitgtd *d, struct scsitgt_target *tgt);

static struct scsitgtd_gw *gw_find(struct scsitgtd *d, struct scsitgt_target *tgt)
{
	for (struct scsitgtd_gw *e = d->gws; e; e = e->next)
		if (e->tgt == tgt)
			return e;
	return NULL;
}

static void gw_gone(void *arg, int status)
{
	struct scsitgtd_gw *e = arg;
	struct scsitgtd *d = e->d;
	const struct scsitgtd_target *t = NULL;
	const struct scsitgtd_lun *nl = NULL;
	struct scsitgt_lun *lun;

	(void)status;
	for (struct scsitgtd_gw **pp = &d->gws; *pp; pp = &(*pp)->next) {
		if (*pp == e) {
			*pp = e->next;
			break;
		}
	}
	if (d->stopping) {
		/* The engine takes everything down next. */
	} else if (e->then_target) {
		target_destroy_removed(d, e->tgt);
	} else {
		for (size_t i = 0; i < e->ngroups; i++)
			scsitgt_alua_group_destroy(e->tgt, e->groups[i]);
		lun = e->then_lun ? scsitgt_target_get_lun(e->tgt, e->lun_id) : NULL;
		if (lun)
			scsitgt_lun_destroy(lun, NULL, NULL);
		if (d->cfg)
			t = scsitgtd_config_find_target(d->cfg, scsitgt_target_get_name(e->tgt));
		if (t && d->tgts[t - d->cfg->targets].tgt == e->tgt)
			nl = scsitgtd_config_find_lun(t, e->lun_id);
		if (e->then_lun && nl && scsitgt_target_get_lun(e->tgt, nl->id) == NULL)
			lun_create(d, e->tgt, d->cfg, nl);
	}
	free(e);
	if (d->stopping && d->gws == NULL && d->gws_stopped) {
		void (*cb)(struct scsitgtd *) = d->gws_stopped;

		d->gws_stopped = NULL;
		cb(d);
	}
}

/* Start the destruction of the gateway @e (if not started yet). */
static void gw_destroy(struct scsitgtd_gw *e)
{
	if (e->destroying)
		return;
	e->destroying = true;
	scsitgt_rbd_gateway_destroy(e->gw, gw_gone, e);
}

void scsitgtd_gateways_stop(struct scsitgtd *d, void (*cb)(struct scsitgtd *d))
{
	if (d->gws == NULL) {
		cb(d);
		return;
	}
	d->gws_stopped = cb;
	for (struct scsitgtd_gw *e = d->gws; e; e = e->next)
		gw_destroy(e);
}

/* Make @tgt, whose RBD LUN (context @rbd_ctx) was just created, one gateway of the image. */
static void gw_create(struct scsitgtd *d, struct scsitgt_target *tgt,
		      const struct scsitgtd_target *t, void *rbd_ctx)
{
	const struct scsitgtd_gateway *g = &t->gw;
	struct scsitgt_rbd_gateway_peer peers[SCSITGTD_MAX_GW_PEERS];
	struct scsitgt_rbd_gateway_opts o;
	struct scsitgtd_gw *e = calloc(1, sizeof(*e));
	uint16_t port = g->group;
	int rc = e ? 0 : -ENOMEM;

	if (rc == 0) {
		scsitgt_rbd_gateway_opts_init(&o, sizeof(o));
		o.group_id = g->group;
		o.rel_port_ids = g->nports ? g->ports : &port;
		o.nrel_port_ids = g->nports ? g->nports : 1;
		e->groups[e->ngroups++] = g->group;
		for (size_t i = 0; i < g->npeers; i++) {
			peers[i].group_id = g->peer_groups[i];
			peers[i].rel_port_id = g->peer_ports[i] ? g->peer_ports[i] :
								  g->peer_groups[i];
			e->groups[e->ngroups++] = g->peer_groups[i];
		}
		o.peers = peers;
		o.npeers = g->npeers;
		o.preferred = g->preferred;
		if (g->holddown_ms >= 0)
			o.holddown_ms = (uint32_t)g->holddown_ms;
		if (g->probe_ms >= 0)
			o.probe_interval_ms = (uint32_t)g->probe_ms;
		rc = scsitgt_rbd_gateway_create(&e->gw, tgt, rbd_ctx, &o);
	}
	if (rc < 0) {
		free(e);
		scsitgtd_log(d, SCSITGT_LOG_ERROR,
			     "%s: rbd_gateway %u: %s; the LUN is served without ALUA", t->name,
			     g->group, scsitgt_strerror(rc));
		return;
	}
	e->d = d;
	e->tgt = tgt;
	e->next = d->gws;
	d->gws = e;
	scsitgtd_log(d, SCSITGT_LOG_INFO, "%s: gateway of target port group %u (%zu peer(s))",
		     t->name, g->group, g->npeers);
}

/*
 * RBD LUNs: the image is opened off the loop (scsitgt_backend_rbd_create_async()), so a
 * reload that adds one never stalls the initiators already served. The LUN is created when
 * the open finishes, if the configuration applied by then still asks for the same LUN; a
 * reload meanwhile that changes it makes this open stale (closed when it finishes) and starts
 * another one.
 */
struct scsitgtd_rbd_open {
	struct scsitgtd_rbd_open *next;
	struct scsitgtd *d;
	char *tname;
	/* The LUN definition the open was started for (its strings copied). */
	struct scsitgtd_lun want;
	bool stale;
};

static void rbd_open_free(struct scsitgtd_rbd_open *po)
{
	char **strs[] = { &po->want.path,	   &po->want.vendor,	    &po->want.product,
			  &po->want.revision,	   &po->want.serial,	    &po->want.pr_file,
			  &po->want.rbd_namespace, &po->want.rbd_client_id, &po->want.rbd_conf };

	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
		free(*strs[i]);
	free(po->tname);
	free(po);
}

static struct scsitgtd_rbd_open *rbd_open_copy(const char *tname, const struct scsitgtd_lun *l)
{
	struct scsitgtd_rbd_open *po = calloc(1, sizeof(*po));
	bool nomem;

	if (po == NULL)
		return NULL;
	po->want = *l;
	/* Only what scsitgtd_lun_needs_recreate() compares; the fault rules by presence. */
	po->want.fault = l->fault ? (char *)"" : NULL;
	po->want.visible_to = NULL;
	po->want.nvisible_to = 0;
#define RBD_DUP(f) (po->want.f = l->f ? strdup(l->f) : NULL, l->f && po->want.f == NULL)
	nomem = RBD_DUP(path) | RBD_DUP(vendor) | RBD_DUP(product) | RBD_DUP(revision) |
		RBD_DUP(serial) | RBD_DUP(pr_file) | RBD_DUP(rbd_namespace) |
		RBD_DUP(rbd_client_id) | RBD_DUP(rbd_conf);
#undef RBD_DUP
	po->tname = strdup(tname);
	if (nomem || po->tname == NULL) {
		rbd_open_free(po);
		return NULL;
	}
	return po;
}

static struct scsitgtd_rbd_open *rbd_open_find(struct scsitgtd *d, const char *tname, uint64_t id)
{
	for (struct scsitgtd_rbd_open *po = d->rbd_opens; po; po = po->next)
		if (!po->stale && po->want.id == id && !strcmp(po->tname, tname))
			return po;
	return NULL;
}

bool scsitgtd_opening(const struct scsitgtd *d)
{
	return d->rbd_opens != NULL;
}

static void rbd_opened(void *arg, int status, void *bctx)
{
	struct scsitgtd_rbd_open *po = arg;
	struct scsitgtd *d = po->d;
	const struct scsitgtd_target *t = NULL;
	const struct scsitgtd_lun *nl = NULL;
	struct scsitgt_target *tgt = NULL;

	for (struct scsitgtd_rbd_open **pp = &d->rbd_opens; *pp; pp = &(*pp)->next) {
		if (*pp == po) {
			*pp = po->next;
			break;
		}
	}
	if (status < 0) {
		scsitgtd_log(d, SCSITGT_LOG_ERROR, "%s LUN %llu: backend: rbd %s: %s", po->tname,
			     (unsigned long long)po->want.id, po->want.path,
			     scsitgt_strerror(status));
		rbd_open_free(po);
		return;
	}
	if (!d->stopping && !po->stale && d->cfg)
		t = scsitgtd_config_find_target(d->cfg, po->tname);
	if (t) {
		nl = scsitgtd_config_find_lun(t, po->want.id);
		tgt = d->tgts[t - d->cfg->targets].tgt;
	}
	if (nl == NULL || tgt == NULL || scsitgtd_lun_needs_recreate(&po->want, nl) ||
	    scsitgt_target_get_lun(tgt, po->want.id)) {
		/* The configuration moved on while the image opened. */
		scsitgt_backend_rbd_ops()->close(bctx, noop_done, NULL);
		rbd_open_free(po);
		return;
	}
	if (lun_finish(d, tgt, d->cfg, nl, scsitgt_backend_rbd_ops(), bctx, bctx) == 0 &&
	    t->gw.group)
		gw_create(d, tgt, t, bctx);
	rbd_open_free(po);
}

/* The RBD backend's and its gateway's messages (the gateway's state changes among them). */
static void rbd_log(void *arg, enum scsitgt_log_level level, const char *subsystem, const char *fmt,
		    va_list ap)
{
	char msg[1024];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	scsitgtd_log(arg, level, "[%s] %s", subsystem, msg);
}

static int rbd_lun_start(struct scsitgtd *d, const char *tname, const struct scsitgtd_lun *l)
{
	struct scsitgt_backend_rbd_opts ro;
	struct scsitgtd_rbd_open *po;
	char pool[4096];
	const char *slash = strchr(l->path, '/');
	int rc;

	if (scsitgt_backend_rbd_ops() == NULL)
		return -ENOTSUP;
	if ((size_t)(slash - l->path) >= sizeof(pool))
		return -EINVAL;
	memcpy(pool, l->path, (size_t)(slash - l->path));
	pool[slash - l->path] = '\0';
	po = rbd_open_copy(tname, l);
	if (po == NULL)
		return -ENOMEM;
	po->d = d;
	scsitgt_backend_rbd_opts_init(&ro, sizeof(ro));
	ro.loop = d->loop;
	ro.pool = pool;
	ro.image = slash + 1;
	ro.pool_namespace = l->rbd_namespace;
	if (l->rbd_client_id)
		ro.client_id = l->rbd_client_id;
	ro.conf_file = l->rbd_conf;
	if (l->rbd_op_timeout >= 0)
		ro.op_timeout_s = (uint32_t)l->rbd_op_timeout;
	ro.read_only = (l->flags & SCSITGTD_LUN_READ_ONLY) != 0;
	ro.write_through = l->write_through;
	ro.log_cb = rbd_log;
	ro.log_arg = d;
	rc = scsitgt_backend_rbd_create_async(&ro, rbd_opened, po);
	if (rc < 0) {
		rbd_open_free(po);
		return rc;
	}
	po->next = d->rbd_opens;
	d->rbd_opens = po;
	scsitgtd_log(d, SCSITGT_LOG_INFO, "%s LUN %llu: opening rbd %s", tname,
		     (unsigned long long)l->id, l->path);
	return 0;
}

static int lun_create(struct scsitgtd *d, struct scsitgt_target *tgt,
		      const struct scsitgtd_config *cfg, const struct scsitgtd_lun *l)
{
	const char *tname = scsitgt_target_get_name(tgt);
	const struct scsitgt_backend_ops *ops = NULL;
	struct scsitgtd_rbd_open *po;
	void *bctx = NULL;
	int rc;

	if (l->backend == SCSITGTD_BACKEND_RBD) {
		po = rbd_open_find(d, tname, l->id);
		if (po && !scsitgtd_lun_needs_recreate(&po->want, l))
			return 0; /* already on its way */
		if (po)
			po->stale = true;
		rc = rbd_lun_start(d, tname, l);
		if (rc == 0)
			return 0;
	} else {
		rc = backend_open(d, tname, l, &ops, &bctx);
		if (rc == 0)
			return lun_finish(d, tgt, cfg, l, ops, bctx, NULL);
	}
	scsitgtd_log(d, SCSITGT_LOG_ERROR, "%s LUN %llu: backend: %s", tname,
		     (unsigned long long)l->id, scsitgt_strerror(rc));
	return rc;
}

/* A LUN that stays: capacity and the offline state change in place. */
static void lun_update(struct scsitgtd *d, const char *tname, struct scsitgt_lun *lun,
		       const struct scsitgtd_lun *ol, const struct scsitgtd_lun *nl)
{
	struct scsitgt_lun_geometry geo;
	uint64_t nb = 0;
	int rc;

	geo.size = sizeof(geo);
	if (scsitgt_lun_get_geometry(lun, &geo) < 0 || geo.block_size == 0)
		return;
	if (nl->backend == SCSITGTD_BACKEND_RAM || nl->backend == SCSITGTD_BACKEND_NULL) {
		nb = nl->size / geo.block_size;
	} else if (nl->backend == SCSITGTD_BACKEND_RBD) {
		/* The backend follows the image itself (librbd's update watch). */
		nb = 0;
	} else if (nl->size == 0 && nl->fault == NULL) {
		/* A file or device follows its medium: it may have grown since. (Behind fault
		 * injection the backend context is the fault backend's: no re-read then.) */
		rc = scsitgt_backend_aio_resize(scsitgt_lun_get_backend_ctx(lun), &nb);
		if (rc < 0) {
			scsitgtd_log(d, SCSITGT_LOG_ERROR, "%s LUN %llu: size of %s: %s", tname,
				     (unsigned long long)nl->id, nl->path, scsitgt_strerror(rc));
			nb = 0;
		}
	}
	if (nb && nb != geo.num_blocks) {
		changed(d, "%s LUN %llu: resized from %llu to %llu blocks", tname,
			(unsigned long long)nl->id, (unsigned long long)geo.num_blocks,
			(unsigned long long)nb);
		scsitgt_lun_resize(lun, nb);
	}
	if (ol && ol->offline != nl->offline)
		changed(d, "%s LUN %llu: %s", tname, (unsigned long long)nl->id,
			nl->offline ? "offline" : "online");
	scsitgt_lun_set_offline(lun, nl->offline);
	/* New fault rules replace the old ones; ios they hold stay held. */
	if (nl->fault && (ol == NULL || !ol->fault || strcmp(ol->fault, nl->fault))) {
		changed(d, "%s LUN %llu: fault rules \"%s\"", tname, (unsigned long long)nl->id,
			nl->fault);
		void *fctx = scsitgt_lun_get_backend_ctx(lun);

		scsitgt_backend_fault_clear_rules(fctx);
		rc = scsitgt_backend_fault_add_spec(fctx, nl->fault);
		if (rc < 0)
			scsitgtd_log(d, SCSITGT_LOG_ERROR, "%s LUN %llu: fault (line %u): %s",
				     tname, (unsigned long long)nl->id, nl->fault_line,
				     scsitgt_strerror(rc));
	}
}

/* ---- targets ---- */

static bool has_initiator(const struct scsitgtd_target *t, const char *name)
{
	for (size_t i = 0; t && i < t->ninitiators; i++)
		if (!strcmp(t->initiators[i], name))
			return true;
	return false;
}

static void acl_apply(struct scsitgtd *d, struct scsitgt_target *tgt,
		      const struct scsitgtd_target *old, const struct scsitgtd_target *nt)
{
	int rc;

	/* Drop what went, add what came; sessions already logged in stay. */
	for (size_t i = 0; old && i < old->ninitiators; i++) {
		if (!has_initiator(nt, old->initiators[i])) {
			scsitgt_target_remove_initiator(tgt, old->initiators[i]);
			changed(d, "%s: initiator %s removed from the access list", nt->name,
				old->initiators[i]);
		}
	}
	for (size_t i = 0; i < nt->ninitiators; i++) {
		if (has_initiator(old, nt->initiators[i]))
			continue;
		rc = scsitgt_target_add_initiator(tgt, nt->initiators[i]);
		if (rc < 0)
			scsitgtd_log(d, SCSITGT_LOG_ERROR, "%s: initiator %s: %s", nt->name,
				     nt->initiators[i], scsitgt_strerror(rc));
		else
			changed(d, "%s: initiator %s added to the access list", nt->name,
				nt->initiators[i]);
	}
}

static void chap_apply(struct scsitgtd *d, struct scsitgt_target *tgt,
		       const struct scsitgtd_target *old, const struct scsitgtd_target *nt)
{
	int rc;

	/* CHAP applies to logins that start from now on. */
	cred_changed(d, nt->name, "chap", old ? old->chap_user : NULL,
		     old ? old->chap_secret : NULL, nt->chap_user, nt->chap_secret);
	cred_changed(d, nt->name, "mutual_chap", old ? old->mutual_user : NULL,
		     old ? old->mutual_secret : NULL, nt->mutual_user, nt->mutual_secret);
	if (!old || !str_eq(old->chap_user, nt->chap_user) ||
	    !str_eq(old->chap_secret, nt->chap_secret)) {
		rc = scsitgt_iscsi_target_set_chap(tgt, nt->chap_user, nt->chap_secret);
		if (rc < 0)
			scsitgtd_log(d, SCSITGT_LOG_ERROR, "%s: chap: %s", nt->name,
				     scsitgt_strerror(rc));
	}
	if (!old || !str_eq(old->mutual_user, nt->mutual_user) ||
	    !str_eq(old->mutual_secret, nt->mutual_secret)) {
		rc = scsitgt_iscsi_target_set_mutual_chap(tgt, nt->mutual_user, nt->mutual_secret);
		if (rc < 0)
			scsitgtd_log(d, SCSITGT_LOG_ERROR, "%s: mutual_chap: %s", nt->name,
				     scsitgt_strerror(rc));
	}
	for (size_t i = 0; old && i < old->nichap; i++) {
		const struct scsitgtd_initiator_chap *o = &old->ichap[i];
		char what[300];

		if (scsitgtd_config_find_ichap(nt, o->initiator))
			continue;
		scsitgt_iscsi_initiator_set_chap(tgt, o->initiator, NULL, NULL);
		snprintf(what, sizeof(what), "initiator_chap of %s", o->initiator);
		cred_changed(d, nt->name, what, o->user, o->secret, NULL, NULL);
	}
	for (size_t i = 0; i < nt->nichap; i++) {
		const struct scsitgtd_initiator_chap *n = &nt->ichap[i];
		const struct scsitgtd_initiator_chap *o =
			scsitgtd_config_find_ichap(old, n->initiator);

		char what[300];

		if (o && str_eq(o->user, n->user) && str_eq(o->secret, n->secret))
			continue;
		rc = scsitgt_iscsi_initiator_set_chap(tgt, n->initiator, n->user, n->secret);
		if (rc < 0) {
			scsitgtd_log(d, SCSITGT_LOG_ERROR, "%s: initiator_chap %s: %s", nt->name,
				     n->initiator, scsitgt_strerror(rc));
			continue;
		}
		snprintf(what, sizeof(what), "initiator_chap of %s", n->initiator);
		cred_changed(d, nt->name, what, o ? o->user : NULL, o ? o->secret : NULL, n->user,
			     n->secret);
	}
}

static void group_ports(struct scsitgtd *d, struct scsitgt_target *tgt, const char *tname,
			const struct scsitgtd_alua_group *og, const struct scsitgtd_alua_group *ng)
{
	int rc;

	/* (Ports that left were removed before, see alua_apply().) */
	for (size_t i = 0; i < ng->nports; i++) {
		if (scsitgtd_group_has_port(og, ng->ports[i]))
			continue;
		rc = scsitgt_alua_group_add_port(tgt, ng->id, ng->ports[i]);
		if (rc < 0)
			scsitgtd_log(d, SCSITGT_LOG_ERROR, "%s: alua_group %u port %u: %s", tname,
				     ng->id, ng->ports[i], scsitgt_strerror(rc));
		else
			changed(d, "%s: alua_group %u: port %u added", tname, ng->id, ng->ports[i]);
	}
}

static void alua_apply(struct scsitgtd *d, struct scsitgt_target *tgt,
		       const struct scsitgtd_target *old, const struct scsitgtd_target *nt)
{
	struct scsitgt_alua_opts ao;
	int rc;

	/* Groups that went first, so that their ports are free for the others. */
	for (size_t i = 0; old && i < old->ngroups; i++)
		if (!scsitgtd_config_find_group(nt, old->groups[i].id)) {
			scsitgt_alua_group_destroy(tgt, old->groups[i].id);
			changed(d, "%s: alua_group %u removed", nt->name, old->groups[i].id);
		}
	for (size_t i = 0; old && i < old->ngroups; i++) {
		const struct scsitgtd_alua_group *ng =
			scsitgtd_config_find_group(nt, old->groups[i].id);

		for (size_t j = 0; ng && j < old->groups[i].nports; j++)
			if (!scsitgtd_group_has_port(ng, old->groups[i].ports[j])) {
				scsitgt_alua_group_remove_port(tgt, ng->id,
							       old->groups[i].ports[j]);
				changed(d, "%s: alua_group %u: port %u removed", nt->name, ng->id,
					old->groups[i].ports[j]);
			}
	}
	for (size_t i = 0; i < nt->ngroups; i++) {
		const struct scsitgtd_alua_group *ng = &nt->groups[i];
		const struct scsitgtd_alua_group *og = scsitgtd_config_find_group(old, ng->id);

		if (og == NULL) {
			rc = scsitgt_alua_group_create(tgt, ng->id,
						       (enum scsitgt_alua_state)ng->state);
			if (rc < 0) {
				scsitgtd_log(d, SCSITGT_LOG_ERROR, "%s: alua_group %u: %s",
					     nt->name, ng->id, scsitgt_strerror(rc));
				continue;
			}
			changed(d, "%s: alua_group %u created (state %#x)", nt->name, ng->id,
				ng->state);
		} else if (og->state != ng->state) {
			/* An implicit transition: every nexus gets ASYMMETRIC ACCESS STATE
			 * CHANGED (SPC-5 §5.16.2.6). */
			changed(d, "%s: alua_group %u: state %#x -> %#x", nt->name, ng->id,
				og->state, ng->state);
			scsitgt_alua_set_state(tgt, ng->id, (enum scsitgt_alua_state)ng->state);
		}
		group_ports(d, tgt, nt->name, og, ng);
		if (!og || og->preferred != ng->preferred) {
			scsitgt_alua_set_preferred(tgt, ng->id, ng->preferred);
			if (og)
				changed(d, "%s: alua_group %u: preferred %s", nt->name, ng->id,
					ng->preferred ? "yes" : "no");
		}
	}
	if (!old || old->alua_modes != nt->alua_modes) {
		scsitgt_alua_opts_init(&ao, sizeof(ao));
		ao.modes = nt->alua_modes;
		rc = scsitgt_alua_configure(tgt, &ao);
		if (rc < 0)
			scsitgtd_log(d, SCSITGT_LOG_ERROR, "%s: alua: %s", nt->name,
				     scsitgt_strerror(rc));
		else if (old)
			changed(d, "%s: alua modes %#x -> %#x", nt->name, old->alua_modes,
				nt->alua_modes);
	}
}

static void address_apply(struct scsitgtd *d, struct scsitgt_target *tgt,
			  const struct scsitgtd_target *old, const struct scsitgtd_target *nt)
{
	const struct scsitgtd_address *a;
	int rc;

	for (size_t i = 0; old && i < old->naddresses; i++) {
		a = &old->addresses[i];
		if (scsitgtd_config_find_address(nt, a->initiator, a->cidr))
			continue;
		if (a->initiator)
			scsitgt_target_remove_initiator_address(tgt, a->initiator, a->cidr);
		else
			scsitgt_target_remove_address(tgt, a->cidr);
		changed(d, "%s: address %s%s%s removed", nt->name, a->cidr,
			a->initiator ? " for " : "", a->initiator ? a->initiator : "");
	}
	for (size_t i = 0; i < nt->naddresses; i++) {
		a = &nt->addresses[i];
		if (scsitgtd_config_find_address(old, a->initiator, a->cidr))
			continue;
		rc = a->initiator ?
			     scsitgt_target_add_initiator_address(tgt, a->initiator, a->cidr) :
			     scsitgt_target_add_address(tgt, a->cidr);
		if (rc < 0)
			scsitgtd_log(d, SCSITGT_LOG_ERROR, "%s: address %s%s%s: %s", nt->name,
				     a->initiator ? a->initiator : "", a->initiator ? " " : "",
				     a->cidr, scsitgt_strerror(rc));
		else
			changed(d, "%s: address %s%s%s added", nt->name, a->cidr,
				a->initiator ? " for " : "", a->initiator ? a->initiator : "");
	}
}

/*
 * LUN masking as a set of (initiator or every initiator, LUN) mappings: a LUN with visible_to
 * lines is mapped to those initiators, one without to every initiator, and only while some LUN
 * of the target has visible_to. Whether (@ini, @id) is in @t's set:
 */
static bool mapped(const struct scsitgtd_target *t, const char *ini, uint64_t id)
{
	const struct scsitgtd_lun *l = scsitgtd_config_find_lun(t, id);

	if (l == NULL || !scsitgtd_target_masks_luns(t))
		return false;
	if (ini == NULL)
		return l->nvisible_to == 0;
	return l->nvisible_to && scsitgtd_lun_visible_to(l, ini);
}

/* Call @fn for every mapping of @t's set that @other's set lacks. */
static void mappings_missing(struct scsitgtd *d, struct scsitgt_target *tgt,
			     const struct scsitgtd_target *t, const struct scsitgtd_target *other,
			     int (*fn)(struct scsitgt_target *, const char *, uint64_t))
{
	int rc;

	if (!scsitgtd_target_masks_luns(t))
		return;
	for (size_t i = 0; i < t->nluns; i++) {
		const struct scsitgtd_lun *l = &t->luns[i];

		for (size_t j = 0; j < (l->nvisible_to ? l->nvisible_to : 1); j++) {
			const char *ini = l->nvisible_to ? l->visible_to[j] : NULL;

			if (other && mapped(other, ini, l->id))
				continue;
			rc = fn(tgt, ini, l->id);
			if (rc == 0)
				changed(d, "%s LUN %llu: %s %s", t->name, (unsigned long long)l->id,
					fn == scsitgt_target_map_lun ? "mapped to" :
								       "unmapped from",
					ini ? ini : "every initiator");
			if (rc < 0 && rc != -ENOENT)
				scsitgtd_log(d, SCSITGT_LOG_ERROR,
					     "%s LUN %llu: masking for %s: %s", t->name,
					     (unsigned long long)l->id,
					     ini ? ini : "every initiator", scsitgt_strerror(rc));
		}
	}
}

/* The library raises REPORTED LUNS DATA HAS CHANGED for the nexuses whose view changes. */
static void masking_apply(struct scsitgtd *d, struct scsitgt_target *tgt,
			  const struct scsitgtd_target *old, const struct scsitgtd_target *nt)
{
	bool was = old && scsitgtd_target_masks_luns(old), is = scsitgtd_target_masks_luns(nt);

	/* Map before unmapping and before turning masking on, so no LUN blinks out. */
	mappings_missing(d, tgt, nt, old, scsitgt_target_map_lun);
	if (was && !is) {
		scsitgt_target_set_lun_masking(tgt, false);
		changed(d, "%s: LUN masking off", nt->name);
	}
	if (old)
		mappings_missing(d, tgt, old, nt, scsitgt_target_unmap_lun);
	if (is && !was) {
		scsitgt_target_set_lun_masking(tgt, true);
		changed(d, "%s: LUN masking on", nt->name);
	}
}

static struct scsitgt_srp_portal *srp_create(struct scsitgtd *d, struct scsitgt_target *tgt,
					     const char *tname, const struct scsitgtd_srp *s)
{
	struct scsitgt_srp_portal_opts o;
	struct scsitgt_srp_portal *port;
	int rc;

	scsitgt_srp_portal_opts_init(&o, sizeof(o));
	o.address = s->address;
	o.port = s->port;
	o.id_ext = s->id_ext;
	o.ioc_guid = s->ioc_guid;
	if (s->max_channels)
		o.max_channels = s->max_channels;
	if (s->queue_size)
		o.queue_size = s->queue_size;
	if (s->max_it_iu_len)
		o.max_it_iu_len = s->max_it_iu_len;
	if (s->max_ti_iu_len)
		o.max_ti_iu_len = s->max_ti_iu_len;
	if (s->immediate_data >= 0)
		o.immediate_data = s->immediate_data != 0;
	if (s->rel_port_id)
		o.rel_port_id = s->rel_port_id;
	if (s->backlog)
		o.backlog = (int)s->backlog;
	rc = scsitgt_srp_portal_create(&port, tgt, &o);
	if (rc < 0) {
		scsitgtd_log(d, SCSITGT_LOG_ERROR, "%s: srp %s port %u (line %u): %s", tname,
			     s->address, s->port, s->line, scsitgt_strerror(rc));
		return NULL;
	}
	scsitgtd_log(d, SCSITGT_LOG_NOTICE, "%s: listening (srp) on %s:%u, ioc_guid %#llx", tname,
		     s->address, scsitgt_srp_portal_get_port(port),
		     (unsigned long long)s->ioc_guid);
	return port;
}

/* Keep identical SRP ports, close the others, open the new ones: @out parallels nt->srps. */
static void srps_apply(struct scsitgtd *d, struct scsitgt_target *tgt,
		       const struct scsitgtd_target *old, struct scsitgt_srp_portal **old_ports,
		       const struct scsitgtd_target *nt, struct scsitgt_srp_portal **out)
{
	for (size_t j = 0; old && j < old->nsrps; j++) {
		bool kept = false;

		for (size_t i = 0; i < nt->nsrps && !kept; i++) {
			if (out[i] == NULL && old_ports[j] &&
			    scsitgtd_srp_equal(&old->srps[j], &nt->srps[i])) {
				out[i] = old_ports[j];
				kept = true;
			}
		}
		if (!kept && old_ports[j])
			scsitgt_srp_portal_destroy(old_ports[j], NULL, NULL);
	}
	for (size_t i = 0; i < nt->nsrps; i++)
		if (out[i] == NULL)
			out[i] = srp_create(d, tgt, nt->name, &nt->srps[i]);
}

/* Bring target @tgt from @old (NULL: freshly created) to @nt of @nc. */
static void target_apply(struct scsitgtd *d, struct scsitgt_target *tgt,
			 const struct scsitgtd_target *old, const struct scsitgtd_config *nc,
			 const struct scsitgtd_target *nt)
{
	struct scsitgtd_gw *gw;
	struct scsitgt_iscsi_params ip;
	int rc;

	if (old && (!str_eq(old->alias, nt->alias) || old->max_sessions != nt->max_sessions ||
		    old->max_lun_commands != nt->max_lun_commands))
		scsitgtd_log(d, SCSITGT_LOG_WARNING,
			     "%s: alias, max_sessions and max_lun_commands "
			     "take effect at the next start",
			     nt->name);
	acl_apply(d, tgt, old, nt);
	address_apply(d, tgt, old, nt);
	chap_apply(d, tgt, old, nt);
	if (!old || !scsitgtd_params_equal(&old->params, &nt->params)) {
		params_build(&nt->params, &ip);
		rc = scsitgt_iscsi_target_set_params(tgt, &ip);
		if (rc < 0)
			scsitgtd_log(d, SCSITGT_LOG_ERROR, "%s: iSCSI parameters: %s", nt->name,
				     scsitgt_strerror(rc));
		else if (old)
			changed(d, "%s: iSCSI parameters changed (for new logins)", nt->name);
	}
	/* A gateway's target: the gateway drives the ALUA groups. */
	if (old && !scsitgtd_gateway_equal(&old->gw, &nt->gw))
		scsitgtd_log(d, SCSITGT_LOG_WARNING,
			     "%s: rbd_gateway settings take effect when the gateway's LUN is "
			     "created again (or at the next start)",
			     nt->name);
	gw = gw_find(d, tgt);
	if (nt->gw.group == 0 && (!old || old->gw.group == 0))
		alua_apply(d, tgt, old, nt);
	/* LUNs that went, or that changed beyond what can change in place. Removing one raises
	 * REPORTED LUNS DATA HAS CHANGED for every nexus (the library does). */
	for (size_t i = 0; old && i < old->nluns; i++) {
		const struct scsitgtd_lun *ol = &old->luns[i];
		const struct scsitgtd_lun *nl = scsitgtd_config_find_lun(nt, ol->id);
		struct scsitgt_lun *lun = scsitgt_target_get_lun(tgt, ol->id);

		if (lun && (nl == NULL || scsitgtd_lun_needs_recreate(ol, nl))) {
			changed(d, "%s LUN %llu: removed%s", nt->name, (unsigned long long)ol->id,
				nl ? " (to be re-created)" : "");
			if (gw) {
				/* After its gateway, which re-creates it if still wanted. */
				gw->then_lun = true;
				gw->lun_id = ol->id;
				gw_destroy(gw);
			} else {
				scsitgt_lun_destroy(lun, NULL, NULL);
			}
		}
	}
	for (size_t i = 0; i < nt->nluns; i++) {
		const struct scsitgtd_lun *nl = &nt->luns[i];
		struct scsitgt_lun *lun = scsitgt_target_get_lun(tgt, nl->id);

		if (gw && gw->destroying)
			continue; /* re-created, if at all, when the gateway is gone */
		if (lun == NULL)
			lun_create(d, tgt, nc, nl);
		else
			lun_update(d, nt->name, lun, scsitgtd_config_find_lun(old, nl->id), nl);
	}
	masking_apply(d, tgt, old, nt);
}

static int target_create(struct scsitgtd *d, const struct scsitgtd_config *nc,
			 const struct scsitgtd_target *t, struct scsitgt_target **out)
{
	struct scsitgt_target_opts o;
	int rc;

	scsitgt_target_opts_init(&o, sizeof(o));
	o.name = t->name;
	o.alias = t->alias;
	if (t->max_sessions >= 0)
		o.max_sessions = (uint32_t)t->max_sessions;
	if (t->max_lun_commands >= 0)
		o.max_lun_commands = (uint32_t)t->max_lun_commands;
	rc = scsitgt_target_create(out, d->engine, &o);
	if (rc == -EEXIST) {
		/* The file's target names are unique, so the name is held by a target a reload
		 * removed and that is still going away (sessions, LUNs, a gateway closing):
		 * target_gone() creates this one once it is gone. */
		scsitgtd_log(d, SCSITGT_LOG_NOTICE,
			     "target %s: %s: the removed target of that name is still going away; "
			     "created once it is gone",
			     t->name, scsitgt_strerror(rc));
	} else if (rc < 0) {
		scsitgtd_log(d, SCSITGT_LOG_ERROR, "target %s: %s", t->name, scsitgt_strerror(rc));
	}
	if (rc < 0) {
		*out = NULL;
		return rc;
	}
	changed(d, "target %s: created (line %u)", t->name, t->line);
	target_apply(d, *out, NULL, nc, t);
	return 0;
}

/* A target a reload removed, on its way out (its name still taken). */
struct removed_target {
	struct scsitgtd *d;
	char name[];
};

/* The removed target is gone. A reload that brought it back meanwhile could not create it
 * (scsitgt_target_create: the name was still taken, "File exists"); the configuration
 * applied by now has the last word: create it as that says. */
static void target_gone(void *arg, int status)
{
	struct removed_target *r = arg;
	struct scsitgtd *d = r->d;
	const struct scsitgtd_target *t = NULL;
	struct scsitgtd_tgt *slot;

	(void)status;
	if (!d->stopping && d->cfg)
		t = scsitgtd_config_find_target(d->cfg, r->name);
	if (t) {
		slot = &d->tgts[t - d->cfg->targets];
		if (slot->tgt == NULL && target_create(d, d->cfg, t, &slot->tgt) == 0)
			srps_apply(d, slot->tgt, NULL, NULL, t, slot->srps);
	}
	free(r);
}

/* Destroy a target the configuration no longer has (after its gateway, if it has one). */
static void target_destroy_removed(struct scsitgtd *d, struct scsitgt_target *tgt)
{
	const char *name = scsitgt_target_get_name(tgt);
	size_t len = strlen(name) + 1;
	struct removed_target *r = malloc(sizeof(*r) + len);

	if (r) {
		r->d = d;
		memcpy(r->name, name, len);
	} else {
		scsitgtd_log(d, SCSITGT_LOG_ERROR,
			     "target %s: out of memory: a reload that brings it back before it is "
			     "gone will not create it",
			     name);
	}
	scsitgt_target_destroy(tgt, r ? target_gone : NULL, r);
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
			changed(d, "portal %s port %u: closed", oc->portals[j].address,
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
		changed(d, "log_level %d -> %d", oc->log_level, nc->log_level);
	atomic_store_explicit(&d->log_level, nc->log_level, memory_order_relaxed);
	if (oc && oc->tmf_timeout_ms != nc->tmf_timeout_ms)
		changed(d, "tmf_timeout_ms %u -> %u", oc->tmf_timeout_ms, nc->tmf_timeout_ms);
	if (oc && oc->drain_timeout_ms != nc->drain_timeout_ms)
		changed(d, "drain_timeout_ms %u -> %u", oc->drain_timeout_ms, nc->drain_timeout_ms);
	if (oc && !scsitgtd_params_equal(&oc->params, &nc->params))
		changed(d, "[engine] iSCSI parameters changed (for new logins)");
	cred_changed(d, "[engine]", "discovery_chap", oc ? oc->discovery_user : NULL,
		     oc ? oc->discovery_secret : NULL, nc->discovery_user, nc->discovery_secret);
	cred_changed(d, "[engine]", "discovery_mutual_chap", oc ? oc->discovery_mutual_user : NULL,
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
		params_build(&nc->params, &ip);
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
			changed(d, "target %s: removed", oc->targets[i].name);
			struct scsitgtd_gw *gw = gw_find(d, d->tgts[i].tgt);

			tgt_release(&d->tgts[i], oc->targets[i].nsrps);
			if (gw) {
				/* After its gateway. */
				gw->then_target = true;
				gw_destroy(gw);
			} else {
				target_destroy_removed(d, d->tgts[i].tgt);
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
			target_apply(d, tgts[i].tgt, ot, nc, nt);
			srps_apply(d, tgts[i].tgt, ot, old->srps, nt, tgts[i].srps);
			free(old->srps);
			old->srps = NULL;
			old->tgt = NULL;
		} else if (target_create(d, nc, nt, &tgts[i].tgt) == 0) {
			srps_apply(d, tgts[i].tgt, NULL, NULL, nt, tgts[i].srps);
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
	return 0;
}

void scsitgtd_free(struct scsitgtd *d)
{
	/* The engine destroyed every object; only our arrays are left. */
	for (size_t i = 0; d->cfg && i < d->cfg->ntargets; i++)
		free(d->tgts[i].srps);
	free(d->tgts);
	free(d->portals);
	scsitgtd_config_free(d->cfg);
	d->tgts = NULL;
	d->portals = NULL;
	d->cfg = NULL;
}
