/* SPDX-License-Identifier: MIT */
/*
 * scsitgtd: a configuration's LUNs onto the library (scsitgtd_apply.c applies the rest). Each
 * LUN's backend is opened (RAM, null, a file or block device through aio, an RBD image opened
 * off the loop), the fault backend put in front where asked, and the LUN created with its
 * persistent reservations (a file, or shared in RADOS); on a reload a LUN that stays is
 * resized, taken offline or given new fault rules in place. Also the RBD gateways of targets
 * with rbd_gateway: made once their LUN is, destroyed before it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "scsitgtd_apply.h"

static void noop_done(void *arg, int status)
{
	(void)arg;
	(void)status;
}

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
			int err = errno;

			scsitgtd_log(d, SCSITGT_LOG_ERROR, "%s LUN %llu: %s: %s", tname,
				     (unsigned long long)l->id, l->path, strerror(err));
			scsitgtd_lun_why(d, tname, l->id, "%s: %s", l->path, strerror(err));
			return -err;
		}
		if (l->backend == SCSITGTD_BACKEND_BLOCK ? !S_ISBLK(st.st_mode) :
							   !S_ISREG(st.st_mode)) {
			scsitgtd_log(d, SCSITGT_LOG_ERROR, "%s LUN %llu: %s is not a %s", tname,
				     (unsigned long long)l->id, l->path,
				     l->backend == SCSITGTD_BACKEND_BLOCK ? "block device" :
									    "regular file");
			scsitgtd_lun_why(d, tname, l->id, "%s is not a %s", l->path,
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
	scsitgtd_lun_why(d, tname, l->id, "fault (line %u): %s", l->fault_line,
			 scsitgt_strerror(rc));
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

/*
 * An RBD LUN whose shared reservations are not attached (scsitgt_backend_rbd_use_pr()): the
 * attach runs, or it failed. Until it succeeds the LUN stays offline whatever the
 * configuration says (backend_rbd.h: until then its reservations are this gateway's alone, so
 * another gateway's reservation would not be enforced here); every scsitgtd_apply() (reload,
 * control change) tries a failed one again. An attached LUN has no entry. A stale entry (its
 * LUN destroyed after the attach failed) is dropped when a LUN is created at that address.
 */
struct scsitgtd_pr_share {
	struct scsitgtd_pr_share *next;
	struct scsitgtd *d;
	struct scsitgt_lun *lun;
	void *rbd_ctx;
	uint64_t id;
	bool failed; /* else the attach runs */
	char tname[224];
};

static struct scsitgtd_pr_share *pr_share_find(struct scsitgtd *d, const struct scsitgt_lun *lun)
{
	for (struct scsitgtd_pr_share *e = d->pr_shares; e; e = e->next)
		if (e->lun == lun)
			return e;
	return NULL;
}

static void pr_share_drop(struct scsitgtd_pr_share *e)
{
	for (struct scsitgtd_pr_share **pp = &e->d->pr_shares; *pp; pp = &(*pp)->next) {
		if (*pp == e) {
			*pp = e->next;
			break;
		}
	}
	free(e);
}

/* Whether the configuration applied now wants LUN @id of @tname offline (or has it no more). */
static bool conf_offline(const struct scsitgtd *d, const char *tname, uint64_t id)
{
	const struct scsitgtd_target *t = d->cfg ? scsitgtd_config_find_target(d->cfg, tname) :
						   NULL;
	const struct scsitgtd_lun *l = t ? scsitgtd_config_find_lun(t, id) : NULL;

	return l == NULL || l->offline;
}

static void pr_share_failed(struct scsitgtd_pr_share *e, int err)
{
	e->failed = true;
	scsitgtd_log(e->d, SCSITGT_LOG_ERROR,
		     "%s LUN %llu: shared reservations: %s; the LUN stays offline (a reload tries "
		     "again)",
		     e->tname, (unsigned long long)e->id, scsitgt_strerror(err));
}

static void rbd_pr_attached(void *arg, int status)
{
	struct scsitgtd_pr_share *e = arg;

	if (status == -ECANCELED) {
		/* The LUN went away meanwhile (a reload, shutdown): nothing to do. */
		pr_share_drop(e);
	} else if (status < 0) {
		pr_share_failed(e, status);
	} else {
		/* The configuration's offline flag as it is now (a reload may have set it). */
		if (!conf_offline(e->d, e->tname, e->id))
			scsitgt_lun_set_offline(e->lun, false);
		scsitgtd_log(e->d, SCSITGT_LOG_INFO, "%s LUN %llu: reservations shared in RADOS",
			     e->tname, (unsigned long long)e->id);
		pr_share_drop(e);
	}
}

void scsitgtd_pr_shares_prune(struct scsitgtd *d, bool all)
{
	struct scsitgtd_pr_share *e = d->pr_shares, *next;
	struct scsitgt_target *tgt;

	for (; e; e = next) {
		next = e->next;
		if (!all && !e->failed)
			continue; /* its callback comes */
		/* Only compared: the LUN may be gone. */
		tgt = d->engine ? scsitgt_engine_find_target(d->engine, e->tname) : NULL;
		if (all || tgt == NULL || scsitgt_target_get_lun(tgt, e->id) != e->lun)
			pr_share_drop(e);
	}
}

/* Start (or start again) the attach of @e's LUN, which stays offline meanwhile. */
static void pr_share_start(struct scsitgtd_pr_share *e)
{
	int rc;

	e->failed = false;
	scsitgt_lun_set_offline(e->lun, true);
	rc = scsitgt_backend_rbd_use_pr(e->rbd_ctx, NULL, rbd_pr_attached, e);
	if (rc < 0)
		pr_share_failed(e, rc);
}

/*
 * Every LUN's backend context as the library got it, with close() interposed: the library
 * closes it when the LUN goes, except when the engine is destroyed while the backend still
 * holds ios (docs/threading.md "Teardown" 3: then close() is never called and the context is
 * the host's again). What is still here after the engine is gone is such a context. Static:
 * close() gets only the context (one daemon per process).
 */
struct tracked_backend {
	struct tracked_backend *next;
	struct scsitgt_backend_ops ops; /* what the library calls */
	const struct scsitgt_backend_ops *inner;
	void *bctx;
	bool fault; /* bctx is the fault backend's, in front of the LUN's */
	bool rbd;   /* the LUN's backend is an RBD image */
	scsitgt_done_cb close_cb;
	void *close_arg;
	uint64_t id;
	char tname[224];
};

static struct tracked_backend *tracked;

static void tracked_closed(void *arg, int status)
{
	struct tracked_backend *t = arg;

	if (t->close_cb)
		t->close_cb(t->close_arg, status);
	free(t);
}

static void tracked_close(void *bctx, scsitgt_done_cb cb, void *cb_arg)
{
	struct tracked_backend *t = NULL;

	for (struct tracked_backend **pp = &tracked; *pp; pp = &(*pp)->next) {
		if ((*pp)->bctx == bctx) {
			t = *pp;
			*pp = t->next;
			break;
		}
	}
	if (t == NULL)
		return; /* never: only tracked contexts have this close() */
	t->close_cb = cb;
	t->close_arg = cb_arg;
	t->inner->close(bctx, tracked_closed, t);
}

/* An RBD backend closed after the engine gave up on its ios: its close() calls back once
 * librbd gave the last one back (each completed) and the image is closed. */
struct orphan_close {
	struct scsitgtd *d;
	uint64_t id;
	char tname[224];
};

static void orphan_closed(void *arg, int status)
{
	struct orphan_close *oc = arg;

	(void)status;
	scsitgtd_log(oc->d, SCSITGT_LOG_WARNING,
		     "%s LUN %llu: backend closed after the engine gave up on its ios (librbd gave "
		     "them back)",
		     oc->tname, (unsigned long long)oc->id);
	free(oc);
}

unsigned int scsitgtd_backends_orphaned(struct scsitgtd *d)
{
	unsigned int left = 0;
	int rc;

	while (tracked) {
		struct tracked_backend *t = tracked;

		tracked = t->next;
		if (t->fault) {
			/* Its held ios complete with an error (orphans: only their memory goes);
			 * destroying the fault context closes the backend behind it. */
			scsitgt_backend_fault_release(t->bctx, 0, -EIO);
			rc = scsitgt_backend_fault_destroy(t->bctx);
		} else if (!t->rbd) {
			/* aio: "the host may call it at once" (docs/threading.md "Teardown"). */
			t->inner->close(t->bctx, NULL, NULL);
			rc = 0;
		} else {
			/* RBD: close() may be called at once too; it calls back once librbd gave
			 * the ios back (each completes), and its handles keep the loop running
			 * until then (docs/threading.md "A backend that never completes"). */
			struct orphan_close *oc = calloc(1, sizeof(*oc));

			if (oc == NULL) {
				rc = -ENOMEM;
			} else {
				oc->d = d;
				oc->id = t->id;
				snprintf(oc->tname, sizeof(oc->tname), "%s", t->tname);
				scsitgtd_log(d, SCSITGT_LOG_WARNING,
					     "%s LUN %llu: closing the backend the engine gave up "
					     "on: it ends once librbd gave its ios back",
					     t->tname, (unsigned long long)t->id);
				t->inner->close(t->bctx, orphan_closed, oc);
				free(t);
				continue;
			}
		}
		if (rc < 0)
			left++;
		scsitgtd_log(d, rc < 0 ? SCSITGT_LOG_ERROR : SCSITGT_LOG_WARNING,
			     "%s LUN %llu: backend %s after the engine gave up on its ios",
			     t->tname, (unsigned long long)t->id,
			     rc < 0 ? "still busy: left to the process exit" : "closed");
		free(t);
	}
	return left;
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
	struct scsitgtd_pr_share *share = NULL, *stale;
	struct tracked_backend *track;
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
	/* Both before the LUN: without them it could neither be kept offline nor closed. */
	track = calloc(1, sizeof(*track));
	rc = track ? 0 : -ENOMEM;
	if (rc == 0 && rbd_ctx && l->rbd_shared_pr) {
		share = calloc(1, sizeof(*share));
		rc = share ? 0 : -ENOMEM;
	}
	if (rc == 0) {
		track->ops = *ops;
		track->ops.close = tracked_close;
		track->inner = ops;
		track->bctx = bctx;
		track->fault = l->fault != NULL;
		track->rbd = rbd_ctx != NULL;
		track->id = l->id;
		snprintf(track->tname, sizeof(track->tname), "%s", tname);
		o.backend = &track->ops;
		rc = scsitgt_lun_create(&lun, tgt, &o);
	}
	if (rc < 0) {
		free(share);
		free(track);
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
		scsitgtd_lun_why(d, tname, l->id, "%s", scsitgt_strerror(rc));
		return rc;
	}
	track->next = tracked;
	tracked = track;
	/* An entry of a LUN that was destroyed after its attach failed, at this address. */
	while ((stale = pr_share_find(d, lun)) != NULL)
		pr_share_drop(stale);
	if (rbd_ctx)
		scsitgt_backend_rbd_set_lun(rbd_ctx, lun);
	if (share) {
		/* Reservations shared with every gateway of the image (RADOS); offline until the
		 * shared state is read and watched. */
		share->d = d;
		share->lun = lun;
		share->rbd_ctx = rbd_ctx;
		share->id = l->id;
		snprintf(share->tname, sizeof(share->tname), "%s", tname);
		share->next = d->pr_shares;
		d->pr_shares = share;
		pr_share_start(share);
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
	scsitgtd_changed(d, "%s LUN %llu: created (line %u)", tname, (unsigned long long)l->id,
			 l->line);
	return 0;
}

/* RBD gateways: see struct scsitgtd_gw (scsitgtd_apply.h). */
struct scsitgtd_gw *scsitgtd_gw_find(struct scsitgtd *d, struct scsitgt_target *tgt)
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
		scsitgtd_target_destroy_removed(d, e->tgt);
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
			scsitgtd_lun_create(d, e->tgt, d->cfg, nl);
	}
	free(e);
	if (d->stopping && d->gws == NULL && d->gws_stopped) {
		void (*cb)(struct scsitgtd *) = d->gws_stopped;

		d->gws_stopped = NULL;
		cb(d);
	}
}

/* Start the destruction of the gateway @e (if not started yet). */
void scsitgtd_gw_destroy(struct scsitgtd_gw *e)
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
		scsitgtd_gw_destroy(e);
}

/* Make @tgt, whose RBD LUN (context @rbd_ctx) was just created, one gateway of the image. */
static void gw_create(struct scsitgtd *d, struct scsitgt_target *tgt,
		      const struct scsitgtd_target *t, uint64_t lun_id, void *rbd_ctx)
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
	e->lun_id = lun_id;
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

bool scsitgtd_lun_opening(struct scsitgtd *d, const char *tname, uint64_t id)
{
	return rbd_open_find(d, tname, id) != NULL;
}

static void rbd_open_why(struct scsitgtd *d, struct scsitgtd_rbd_open *po, int status);

/* The open of @po ended (the LUN created or not): tell a waiting control request, free @po. */
static void rbd_open_done(struct scsitgtd *d, struct scsitgtd_rbd_open *po)
{
	scsitgtd_lun_settled(d, po->tname, po->want.id);
	rbd_open_free(po);
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
	if (!po->stale)
		scsitgtd_lun_why_reset(d, po->tname, po->want.id);
	if (status < 0) {
		scsitgtd_log(d, SCSITGT_LOG_ERROR, "%s LUN %llu: backend: rbd %s: %s", po->tname,
			     (unsigned long long)po->want.id, po->want.path,
			     scsitgt_strerror(status));
		if (!po->stale)
			rbd_open_why(d, po, status);
		rbd_open_done(d, po);
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
		rbd_open_done(d, po);
		return;
	}
	/* One gateway per target, on its one RBD LUN (the file's checks, also on runtime
	 * changes): never a second one that would take over the first's ALUA hook. */
	if (lun_finish(d, tgt, d->cfg, nl, scsitgt_backend_rbd_ops(), bctx, bctx) == 0 &&
	    t->gw.group && scsitgtd_gw_find(d, tgt) == NULL)
		gw_create(d, tgt, t, nl->id, bctx);
	rbd_open_done(d, po);
}

/*
 * The RBD backend's last error message ("POOL/IMAGE: step: what"), kept for the reason of a
 * failed open (rbd_open_why()): the backend logs it on the thread that opens, before the open
 * completes on the loop. Static: rbd_log() gets only the daemon (one per process).
 */
static pthread_mutex_t rbd_err_lock = PTHREAD_MUTEX_INITIALIZER;
static char rbd_err[1024];

/* The RBD backend's and its gateway's messages (the gateway's state changes among them). */
static void rbd_log(void *arg, enum scsitgt_log_level level, const char *subsystem, const char *fmt,
		    va_list ap)
{
	char msg[1024];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (level <= SCSITGT_LOG_ERROR) {
		pthread_mutex_lock(&rbd_err_lock);
		snprintf(rbd_err, sizeof(rbd_err), "%s", msg);
		pthread_mutex_unlock(&rbd_err_lock);
	}
	scsitgtd_log(arg, level, "[%s] %s", subsystem, msg);
}

/* Why the open of @po failed with @status: the backend's last error if it is about @po's
 * image (it names the step and, for a missing ceph.conf, what to set), else the errno's text. */
static void rbd_open_why(struct scsitgtd *d, struct scsitgtd_rbd_open *po, int status)
{
	char msg[sizeof(rbd_err)];
	size_t n = strlen(po->want.path);

	pthread_mutex_lock(&rbd_err_lock);
	memcpy(msg, rbd_err, sizeof(msg));
	pthread_mutex_unlock(&rbd_err_lock);
	if (!strncmp(msg, po->want.path, n) && msg[n] == ':')
		/* The library's conf_file is this LUN's rbd_conf. */
		scsitgtd_lun_why(d, po->tname, po->want.id, "rbd %s%s", msg,
				 po->want.rbd_conf == NULL && strstr(msg, "no ceph.conf read") ?
					 " (here: rbd_conf = FILE in the LUN)" :
					 "");
	else
		scsitgtd_lun_why(d, po->tname, po->want.id, "rbd %s: %s", po->want.path,
				 scsitgt_strerror(status));
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

int scsitgtd_lun_create(struct scsitgtd *d, struct scsitgt_target *tgt,
			const struct scsitgtd_config *cfg, const struct scsitgtd_lun *l)
{
	const char *tname = scsitgt_target_get_name(tgt);
	const struct scsitgt_backend_ops *ops = NULL;
	struct scsitgtd_rbd_open *po;
	void *bctx = NULL;
	int rc;

	scsitgtd_lun_why_reset(d, tname, l->id);
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
	scsitgtd_lun_why(d, tname, l->id, "backend: %s", scsitgt_strerror(rc));
	return rc;
}

/* A LUN that stays: capacity and the offline state change in place. */
void scsitgtd_lun_update(struct scsitgtd *d, const char *tname, struct scsitgt_lun *lun,
			 const struct scsitgtd_lun *ol, const struct scsitgtd_lun *nl)
{
	struct scsitgt_lun_geometry geo;
	struct scsitgtd_pr_share *share;
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
	} else if (nl->size == 0) {
		/* A file or device follows its medium: it may have grown since. Asked through the
		 * LUN's table, so behind fault injection too (the fault backend passes get_size
		 * on); the LUN adopts the size, the lines below log it. */
		rc = scsitgt_lun_resize_medium(lun, 0, 0, &nb);
		if (rc < 0) {
			scsitgtd_log(d, SCSITGT_LOG_ERROR, "%s LUN %llu: size of %s: %s", tname,
				     (unsigned long long)nl->id, nl->path, scsitgt_strerror(rc));
			nb = 0;
		}
	}
	if (nb && nb != geo.num_blocks) {
		scsitgtd_changed(d, "%s LUN %llu: resized from %llu to %llu blocks", tname,
				 (unsigned long long)nl->id, (unsigned long long)geo.num_blocks,
				 (unsigned long long)nb);
		scsitgt_lun_resize(lun, nb);
	}
	share = pr_share_find(d, lun);
	if (ol && ol->offline != nl->offline)
		scsitgtd_changed(d, "%s LUN %llu: %s", tname, (unsigned long long)nl->id,
				 nl->offline ? "offline" :
				 share	     ? "online once its reservations are shared" :
					       "online");
	if (share == NULL)
		scsitgt_lun_set_offline(lun, nl->offline);
	else if (share->failed)
		pr_share_start(share); /* the reload the log line asked for */
	/* New fault rules replace the old ones; ios they hold stay held. */
	if (nl->fault && (ol == NULL || !ol->fault || strcmp(ol->fault, nl->fault))) {
		scsitgtd_changed(d, "%s LUN %llu: fault rules \"%s\"", tname,
				 (unsigned long long)nl->id, nl->fault);
		void *fctx = scsitgt_lun_get_backend_ctx(lun);

		scsitgt_backend_fault_clear_rules(fctx);
		rc = scsitgt_backend_fault_add_spec(fctx, nl->fault);
		if (rc < 0)
			scsitgtd_log(d, SCSITGT_LOG_ERROR, "%s LUN %llu: fault (line %u): %s",
				     tname, (unsigned long long)nl->id, nl->fault_line,
				     scsitgt_strerror(rc));
	}
}
