/* SPDX-License-Identifier: MIT */
/*
 * scsitgtd: a small iSCSI target daemon built only on the public libscsitgt API.
 *
 *   scsitgtd [-t] CONFIG
 *
 * It reads CONFIG (format: docs/scsitgtd.md), serves it, and then:
 *   SIGHUP          re-reads CONFIG and applies the difference (targets, LUNs, ACLs, CHAP,
 *                   portals, offline flags, sizes of ram/null LUNs) without a restart; a
 *                   file with errors is refused and the running configuration stays;
 *   SIGUSR1         prints the counters of every LUN, session and connection to stdout;
 *   SIGTERM/SIGINT  stops cleanly (initiators are asked to log out, I/O drains).
 * With -t it only checks CONFIG and exits 0 (valid) or 1 (the message says file and line).
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include <libscsitgt/scsitgt.h>

#include "scsitgtd_config.h"

/* A running target: its handle, parallel to the applied configuration's targets. */
struct daemon {
	uv_loop_t *loop;
	const char *path;
	struct scsitgt_engine *engine;
	struct scsitgtd_config *cfg;	     /* the configuration applied */
	struct scsitgt_target **tgts;	     /* cfg->ntargets handles */
	struct scsitgt_portal **portals;     /* cfg->nportals handles (NULL: failed) */
	int log_level;
	uv_signal_t sig_hup, sig_term, sig_int, sig_usr1;
	bool stopping;
	int exit_code;
};

static const char *level_name(enum scsitgt_log_level l)
{
	switch (l) {
	case SCSITGT_LOG_ERROR: return "error";
	case SCSITGT_LOG_WARNING: return "warning";
	case SCSITGT_LOG_NOTICE: return "notice";
	case SCSITGT_LOG_INFO: return "info";
	default: return "debug";
	}
}

static void log_cb(void *arg, enum scsitgt_log_level level, const char *subsystem,
		   const char *fmt, va_list ap)
{
	struct daemon *d = arg;

	if ((int)level > d->log_level)
		return;
	fprintf(stderr, "scsitgtd: %s: [%s] ", level_name(level), subsystem);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

SCSITGT_PRINTF(3, 4)
static void dlog(struct daemon *d, enum scsitgt_log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_cb(d, level, "scsitgtd", fmt, ap);
	va_end(ap);
}

static void event_cb(void *arg, const struct scsitgt_event *ev)
{
	struct daemon *d = arg;
	const char *tname = ev->target ? scsitgt_target_get_name(ev->target) : "-";

	switch (ev->type) {
	case SCSITGT_EVENT_SESSION_LOGIN:
	case SCSITGT_EVENT_SESSION_LOGOUT:
		dlog(d, SCSITGT_LOG_NOTICE, "event %s: %s from %s on %s",
		     scsitgt_event_type_name(ev->type), ev->initiator_name, ev->initiator_addr,
		     tname);
		break;
	case SCSITGT_EVENT_LUN_ERROR:
		dlog(d, SCSITGT_LOG_WARNING,
		     "event %s: %s LUN %llu opcode %02xh sense %xh/%02xh/%02xh (%s)",
		     scsitgt_event_type_name(ev->type), tname, (unsigned long long)ev->lun_id,
		     ev->opcode, ev->sense_key, ev->asc, ev->ascq, ev->initiator_name);
		break;
	default:
		dlog(d, SCSITGT_LOG_NOTICE, "event %s: %s LUN %llu%s%s",
		     scsitgt_event_type_name(ev->type), tname, (unsigned long long)ev->lun_id,
		     ev->initiator_name ? " by " : "", ev->initiator_name ? ev->initiator_name : "");
		break;
	}
}

static char *read_file(const char *path, size_t *len, char *err, size_t err_size)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0, n = 0;

	if (f == NULL) {
		snprintf(err, err_size, "cannot open: %s", strerror(errno));
		return NULL;
	}
	for (;;) {
		size_t r;

		/* Configuration files are small; refuse absurd ones. */
		if (n == cap) {
			char *nb;

			if (cap >= (16u << 20)) {
				snprintf(err, err_size, "larger than 16 MiB");
				goto fail;
			}
			cap = cap ? cap * 2 : 4096;
			nb = realloc(buf, cap);
			if (nb == NULL) {
				snprintf(err, err_size, "out of memory");
				goto fail;
			}
			buf = nb;
		}
		r = fread(buf + n, 1, cap - n, f);
		n += r;
		if (r == 0)
			break;
	}
	if (ferror(f)) {
		snprintf(err, err_size, "read error");
		goto fail;
	}
	fclose(f);
	*len = n;
	return buf;
fail:
	fclose(f);
	free(buf);
	return NULL;
}

static struct scsitgtd_config *load(const char *path, char *err, size_t err_size)
{
	struct scsitgtd_config *cfg = NULL;
	char msg[512];
	size_t len;
	char *text = read_file(path, &len, msg, sizeof(msg));
	int rc;

	if (text == NULL) {
		snprintf(err, err_size, "%s: %s", path, msg);
		return NULL;
	}
	rc = scsitgtd_config_parse(text, len, &cfg, msg, sizeof(msg));
	free(text);
	if (rc < 0) {
		/* "line N: what" becomes "PATH:N: what", the form editors jump to. */
		snprintf(err, err_size, "%s:%s", path,
			 strncmp(msg, "line ", 5) == 0 ? msg + 5 : " error");
		return NULL;
	}
	return cfg;
}

static void noop_done(void *arg, int status)
{
	(void)arg;
	(void)status;
}

static int lun_create(struct daemon *d, struct scsitgt_target *tgt, const struct scsitgtd_lun *l)
{
	const struct scsitgt_backend_ops *ops;
	struct scsitgt_lun_opts o;
	struct scsitgt_lun *lun;
	uint32_t bs = l->block_size ? l->block_size : 512;
	void *bctx = NULL;
	int rc;

	scsitgt_lun_opts_init(&o, sizeof(o));
	o.id = l->id;
	o.block_size = l->block_size;
	switch (l->backend) {
	case SCSITGTD_BACKEND_RAM:
		ops = scsitgt_backend_ram_ops();
		rc = scsitgt_backend_ram_create(&bctx);
		o.num_blocks = l->size / bs;
		break;
	case SCSITGTD_BACKEND_NULL:
		ops = scsitgt_backend_null_ops();
		rc = scsitgt_backend_null_create(&bctx);
		o.num_blocks = l->size / bs;
		break;
	case SCSITGTD_BACKEND_FILE:
	default: {
		struct scsitgt_backend_aio_opts ao;

		scsitgt_backend_aio_opts_init(&ao, sizeof(ao));
		ao.loop = d->loop;
		ao.path = l->path;
		ao.read_only = (l->flags & SCSITGTD_LUN_READ_ONLY) != 0;
		ops = scsitgt_backend_aio_ops();
		rc = scsitgt_backend_aio_create(&bctx, &ao);
		o.num_blocks = l->size / bs;
		break;
	}
	}
	if (rc < 0) {
		dlog(d, SCSITGT_LOG_ERROR, "%s LUN %llu: backend: %s", scsitgt_target_get_name(tgt),
		     (unsigned long long)l->id, scsitgt_strerror(rc));
		return rc;
	}
	o.backend = ops;
	o.backend_ctx = bctx;
	o.vendor = l->vendor;
	o.product = l->product;
	o.serial = l->serial;
	o.flags = ((l->flags & SCSITGTD_LUN_READ_ONLY) ? SCSITGT_LUN_READ_ONLY : 0) |
		  ((l->flags & SCSITGTD_LUN_THIN) ? SCSITGT_LUN_THIN : 0) |
		  ((l->flags & SCSITGTD_LUN_REMOVABLE) ? SCSITGT_LUN_REMOVABLE : 0) |
		  ((l->flags & SCSITGTD_LUN_WRITE_CACHE) ? SCSITGT_LUN_WRITE_CACHE : 0);
	rc = scsitgt_lun_create(&lun, tgt, &o);
	if (rc < 0) {
		/* We still own the backend context: its close() frees it. */
		ops->close(bctx, noop_done, NULL);
		dlog(d, SCSITGT_LOG_ERROR, "%s LUN %llu: %s", scsitgt_target_get_name(tgt),
		     (unsigned long long)l->id, scsitgt_strerror(rc));
		return rc;
	}
	/* SPC-5 §5.13.5 APTPL: reservations survive a restart in this file. */
	if (l->pr_file && (rc = scsitgt_lun_use_pr_file(lun, l->pr_file)) < 0)
		dlog(d, SCSITGT_LOG_ERROR, "%s LUN %llu: pr_file %s: %s",
		     scsitgt_target_get_name(tgt), (unsigned long long)l->id, l->pr_file,
		     scsitgt_strerror(rc));
	if (l->offline)
		scsitgt_lun_set_offline(lun, true);
	dlog(d, SCSITGT_LOG_INFO, "%s LUN %llu: created", scsitgt_target_get_name(tgt),
	     (unsigned long long)l->id);
	return 0;
}

static bool str_eq(const char *a, const char *b)
{
	return (a == NULL && b == NULL) || (a && b && !strcmp(a, b));
}

static bool has_initiator(const struct scsitgtd_target *t, const char *name)
{
	for (size_t i = 0; t && i < t->ninitiators; i++)
		if (!strcmp(t->initiators[i], name))
			return true;
	return false;
}

/* Bring target @tgt from @old (NULL: freshly created) to @nt. */
static void target_apply(struct daemon *d, struct scsitgt_target *tgt,
			 const struct scsitgtd_target *old, const struct scsitgtd_target *nt)
{
	int rc;

	/* ACL: drop what went, add what came. */
	for (size_t i = 0; old && i < old->ninitiators; i++)
		if (!has_initiator(nt, old->initiators[i]))
			scsitgt_target_remove_initiator(tgt, old->initiators[i]);
	for (size_t i = 0; i < nt->ninitiators; i++)
		if (!has_initiator(old, nt->initiators[i]) &&
		    (rc = scsitgt_target_add_initiator(tgt, nt->initiators[i])) < 0)
			dlog(d, SCSITGT_LOG_ERROR, "%s: initiator %s: %s", nt->name,
			     nt->initiators[i], scsitgt_strerror(rc));
	/* CHAP applies to logins that start from now on. */
	if (!old || !str_eq(old->chap_user, nt->chap_user) ||
	    !str_eq(old->chap_secret, nt->chap_secret)) {
		rc = scsitgt_iscsi_target_set_chap(tgt, nt->chap_user, nt->chap_secret);
		if (rc < 0)
			dlog(d, SCSITGT_LOG_ERROR, "%s: chap: %s", nt->name, scsitgt_strerror(rc));
	}
	if (!old || !str_eq(old->mutual_user, nt->mutual_user) ||
	    !str_eq(old->mutual_secret, nt->mutual_secret)) {
		rc = scsitgt_iscsi_target_set_mutual_chap(tgt, nt->mutual_user, nt->mutual_secret);
		if (rc < 0)
			dlog(d, SCSITGT_LOG_ERROR, "%s: mutual_chap: %s", nt->name,
			     scsitgt_strerror(rc));
	}
	/* LUNs that went, or that changed beyond what can change in place. */
	for (size_t i = 0; old && i < old->nluns; i++) {
		const struct scsitgtd_lun *ol = &old->luns[i];
		const struct scsitgtd_lun *nl = scsitgtd_config_find_lun(nt, ol->id);
		struct scsitgt_lun *lun = scsitgt_target_get_lun(tgt, ol->id);

		if (lun && (nl == NULL || scsitgtd_lun_needs_recreate(ol, nl))) {
			dlog(d, SCSITGT_LOG_INFO, "%s LUN %llu: removed", nt->name,
			     (unsigned long long)ol->id);
			scsitgt_lun_destroy(lun, NULL, NULL);
		}
	}
	for (size_t i = 0; i < nt->nluns; i++) {
		const struct scsitgtd_lun *nl = &nt->luns[i];
		struct scsitgt_lun *lun = scsitgt_target_get_lun(tgt, nl->id);
		struct scsitgt_lun_geometry geo;

		if (lun == NULL) {
			lun_create(d, tgt, nl);
			continue;
		}
		geo.size = sizeof(geo);
		if (nl->backend != SCSITGTD_BACKEND_FILE &&
		    scsitgt_lun_get_geometry(lun, &geo) == 0 &&
		    geo.num_blocks != nl->size / geo.block_size) {
			dlog(d, SCSITGT_LOG_INFO, "%s LUN %llu: resized to %llu blocks", nt->name,
			     (unsigned long long)nl->id,
			     (unsigned long long)(nl->size / geo.block_size));
			scsitgt_lun_resize(lun, nl->size / geo.block_size);
		}
		scsitgt_lun_set_offline(lun, nl->offline);
	}
}

static int target_create(struct daemon *d, const struct scsitgtd_target *t,
			 struct scsitgt_target **out)
{
	struct scsitgt_target_opts o;
	int rc;

	scsitgt_target_opts_init(&o, sizeof(o));
	o.name = t->name;
	o.alias = t->alias;
	rc = scsitgt_target_create(out, d->engine, &o);
	if (rc < 0) {
		dlog(d, SCSITGT_LOG_ERROR, "target %s: %s", t->name, scsitgt_strerror(rc));
		*out = NULL;
		return rc;
	}
	dlog(d, SCSITGT_LOG_INFO, "target %s: created", t->name);
	target_apply(d, *out, NULL, t);
	return 0;
}

static bool same_portal(const struct scsitgtd_portal *a, const struct scsitgtd_portal *b)
{
	return a->port == b->port && a->tpgt == b->tpgt && !strcmp(a->address, b->address);
}

static struct scsitgt_portal *portal_create(struct daemon *d, const struct scsitgtd_portal *p)
{
	struct scsitgt_portal_opts o;
	struct scsitgt_portal *portal;
	int rc;

	scsitgt_portal_opts_init(&o, sizeof(o));
	o.address = p->address;
	o.port = p->port;
	o.tpgt = p->tpgt;
	rc = scsitgt_portal_create(&portal, d->engine, &o);
	if (rc < 0) {
		dlog(d, SCSITGT_LOG_ERROR, "portal %s:%u: %s", p->address, p->port,
		     scsitgt_strerror(rc));
		return NULL;
	}
	dlog(d, SCSITGT_LOG_NOTICE, "listening on %s:%u (TPGT %u)", p->address,
	     scsitgt_portal_get_port(portal), p->tpgt);
	return portal;
}

/*
 * Make the engine serve @nc (a diff against d->cfg, NULL on the first call), then adopt it.
 * Failures of single objects are logged and the rest goes on, as an operator would want.
 */
static int apply(struct daemon *d, struct scsitgtd_config *nc)
{
	struct scsitgtd_config *oc = d->cfg;
	struct scsitgt_target **tgts = calloc(nc->ntargets ? nc->ntargets : 1, sizeof(*tgts));
	struct scsitgt_portal **portals = calloc(nc->nportals ? nc->nportals : 1, sizeof(*portals));
	size_t nold_p = oc ? oc->nportals : 0;

	if (tgts == NULL || portals == NULL) {
		free(tgts);
		free(portals);
		return -ENOMEM;
	}
	d->log_level = nc->log_level;
	/* Targets that went. */
	for (size_t i = 0; oc && i < oc->ntargets; i++) {
		if (d->tgts[i] && !scsitgtd_config_find_target(nc, oc->targets[i].name)) {
			dlog(d, SCSITGT_LOG_INFO, "target %s: removed", oc->targets[i].name);
			scsitgt_target_destroy(d->tgts[i], NULL, NULL);
			d->tgts[i] = NULL;
		}
	}
	/* Targets that stay or came. */
	for (size_t i = 0; i < nc->ntargets; i++) {
		const struct scsitgtd_target *nt = &nc->targets[i];
		const struct scsitgtd_target *ot = scsitgtd_config_find_target(oc, nt->name);

		if (ot && d->tgts[ot - oc->targets]) {
			tgts[i] = d->tgts[ot - oc->targets];
			target_apply(d, tgts[i], ot, nt);
		} else {
			target_create(d, nt, &tgts[i]);
		}
	}
	/* Portals: keep identical ones, close the others, open the new ones. */
	for (size_t j = 0; j < nold_p; j++) {
		bool kept = false;

		for (size_t i = 0; i < nc->nportals && !kept; i++) {
			if (portals[i] == NULL && d->portals[j] &&
			    same_portal(&oc->portals[j], &nc->portals[i])) {
				portals[i] = d->portals[j];
				kept = true;
			}
		}
		if (!kept && d->portals[j])
			scsitgt_portal_destroy(d->portals[j], NULL, NULL);
	}
	for (size_t i = 0; i < nc->nportals; i++)
		if (portals[i] == NULL)
			portals[i] = portal_create(d, &nc->portals[i]);
	free(d->tgts);
	free(d->portals);
	scsitgtd_config_free(oc);
	d->tgts = tgts;
	d->portals = portals;
	d->cfg = nc;
	return 0;
}

/* ---- SIGUSR1: print the counters ---- */

static void print_counters(const char *who, const struct scsitgt_cmd_counters *c)
{
	uint64_t errs = 0;

	for (int k = 0; k < 16; k++)
		errs += c->check_conditions[k];
	printf("%s reads %llu writes %llu other %llu bytes_read %llu bytes_written %llu "
	       "check_conditions %llu conflicts %llu busy %llu aborted %llu tmfs %llu\n",
	       who, (unsigned long long)c->read_cmds, (unsigned long long)c->write_cmds,
	       (unsigned long long)c->other_cmds, (unsigned long long)c->bytes_read,
	       (unsigned long long)c->bytes_written, (unsigned long long)errs,
	       (unsigned long long)c->reservation_conflicts, (unsigned long long)c->busy,
	       (unsigned long long)c->aborted, (unsigned long long)c->tmfs);
}

static int print_session(void *arg, const struct scsitgt_session_stats *s)
{
	char who[600];

	(void)arg;
	snprintf(who, sizeof(who), "  session %s (%s)", s->initiator_port,
		 s->initiator_addr[0] ? s->initiator_addr : "?");
	print_counters(who, &s->cmds);
	return 0;
}

static int print_conn(void *arg, const struct scsitgt_iscsi_conn_stats *s)
{
	(void)arg;
	printf("conn %s cid %u tsih %u %s%s rx_pdus %llu tx_pdus %llu rx_bytes %llu "
	       "tx_bytes %llu\n",
	       s->peer_addr, s->cid, s->tsih, s->discovery ? "discovery " : "",
	       s->full_feature ? "ffp" : "login", (unsigned long long)s->rx_pdus,
	       (unsigned long long)s->tx_pdus, (unsigned long long)s->rx_bytes,
	       (unsigned long long)s->tx_bytes);
	return 0;
}

static void print_stats(struct daemon *d)
{
	for (size_t i = 0; i < d->cfg->ntargets; i++) {
		const struct scsitgtd_target *t = &d->cfg->targets[i];

		if (d->tgts[i] == NULL)
			continue;
		printf("target %s\n", t->name);
		for (size_t j = 0; j < t->nluns; j++) {
			struct scsitgt_lun *lun = scsitgt_target_get_lun(d->tgts[i], t->luns[j].id);
			struct scsitgt_lun_stats s;
			char who[64];

			if (lun == NULL)
				continue;
			s.size = sizeof(s);
			if (scsitgt_lun_get_stats(lun, &s) < 0)
				continue;
			snprintf(who, sizeof(who), "  lun %llu%s", (unsigned long long)t->luns[j].id,
				 s.offline ? " (offline)" : "");
			print_counters(who, &s.cmds);
			printf("    latency_us");
			for (int b = 0; b < SCSITGT_LATENCY_BUCKETS; b++)
				if (s.latency_us[b])
					printf(" <%llu:%llu", 1ull << (b + 1),
					       (unsigned long long)s.latency_us[b]);
			printf("\n");
		}
		scsitgt_target_foreach_session(d->tgts[i], print_session, NULL);
	}
	scsitgt_iscsi_engine_foreach_conn(d->engine, print_conn, NULL);
	fflush(stdout);
}

/* ---- signals ---- */

static void engine_gone(void *arg, int status)
{
	struct daemon *d = arg;

	(void)status;
	d->engine = NULL;
}

static void stop(struct daemon *d)
{
	if (d->stopping)
		return;
	d->stopping = true;
	dlog(d, SCSITGT_LOG_NOTICE, "stopping");
	uv_close((uv_handle_t *)&d->sig_hup, NULL);
	uv_close((uv_handle_t *)&d->sig_term, NULL);
	uv_close((uv_handle_t *)&d->sig_int, NULL);
	uv_close((uv_handle_t *)&d->sig_usr1, NULL);
	scsitgt_engine_destroy(d->engine, engine_gone, d);
}

static void on_signal(uv_signal_t *h, int signum)
{
	struct daemon *d = h->data;
	char err[600];

	switch (signum) {
	case SIGHUP: {
		struct scsitgtd_config *nc = load(d->path, err, sizeof(err));

		if (nc == NULL) {
			dlog(d, SCSITGT_LOG_ERROR, "reload refused, configuration kept: %s", err);
			return;
		}
		if (apply(d, nc) < 0) {
			scsitgtd_config_free(nc);
			dlog(d, SCSITGT_LOG_ERROR, "reload: out of memory");
			return;
		}
		dlog(d, SCSITGT_LOG_NOTICE, "reloaded %s", d->path);
		printf("scsitgtd: reloaded\n");
		fflush(stdout);
		break;
	}
	case SIGUSR1:
		print_stats(d);
		break;
	default:
		stop(d);
		break;
	}
}

static int signal_start(struct daemon *d, uv_signal_t *h, int signum)
{
	int rc = uv_signal_init(d->loop, h);

	if (rc < 0)
		return rc;
	h->data = d;
	return uv_signal_start(h, on_signal, signum);
}

int main(int argc, char **argv)
{
	struct daemon d;
	struct scsitgt_engine_opts eo;
	struct scsitgtd_config *cfg;
	bool check_only = false;
	char err[600];
	int rc;

	memset(&d, 0, sizeof(d));
	if (argc == 3 && !strcmp(argv[1], "-t")) {
		check_only = true;
		d.path = argv[2];
	} else if (argc == 2 && argv[1][0] != '-') {
		d.path = argv[1];
	} else {
		fprintf(stderr, "usage: %s [-t] CONFIG\n", argv[0]);
		return 2;
	}
	cfg = load(d.path, err, sizeof(err));
	if (cfg == NULL) {
		fprintf(stderr, "scsitgtd: %s\n", err);
		return 1;
	}
	if (check_only) {
		printf("%s: OK (%zu portals, %zu targets)\n", d.path, cfg->nportals, cfg->ntargets);
		scsitgtd_config_free(cfg);
		return 0;
	}
	d.log_level = cfg->log_level;
	d.loop = uv_default_loop();
	signal(SIGPIPE, SIG_IGN);

	scsitgt_engine_opts_init(&eo, sizeof(eo));
	eo.log_cb = log_cb;
	eo.log_arg = &d;
	eo.log_level = SCSITGT_LOG_DEBUG; /* filtered in log_cb, so that reload can change it */
	rc = scsitgt_engine_create(&d.engine, d.loop, &eo);
	if (rc < 0) {
		fprintf(stderr, "scsitgtd: engine: %s\n", scsitgt_strerror(rc));
		scsitgtd_config_free(cfg);
		return 1;
	}
	scsitgt_engine_set_event_cb(d.engine, event_cb, &d);
	if (cfg->nportals == 0)
		dlog(&d, SCSITGT_LOG_WARNING, "no [portal]: nothing to listen on");
	rc = apply(&d, cfg);
	if (rc < 0) {
		fprintf(stderr, "scsitgtd: %s\n", scsitgt_strerror(rc));
		scsitgtd_config_free(cfg);
		return 1;
	}
	if (signal_start(&d, &d.sig_hup, SIGHUP) < 0 || signal_start(&d, &d.sig_term, SIGTERM) < 0 ||
	    signal_start(&d, &d.sig_int, SIGINT) < 0 || signal_start(&d, &d.sig_usr1, SIGUSR1) < 0) {
		fprintf(stderr, "scsitgtd: cannot install signal handlers\n");
		return 1;
	}
	for (size_t i = 0; i < d.cfg->nportals; i++) {
		if (d.portals[i] == NULL)
			d.exit_code = 1;
	}
	if (d.exit_code) {
		/* A portal that cannot listen at start is a configuration error: stop. */
		stop(&d);
	} else {
		printf("scsitgtd: ready (%zu targets)\n", d.cfg->ntargets);
		fflush(stdout);
	}
	uv_run(d.loop, UV_RUN_DEFAULT);
	free(d.tgts);
	free(d.portals);
	scsitgtd_config_free(d.cfg);
	uv_loop_close(d.loop);
	return d.exit_code;
}
