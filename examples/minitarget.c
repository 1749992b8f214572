/* SPDX-License-Identifier: MIT */
/*
 * minitarget: a small iSCSI target built on libscsitgt.
 *
 *   minitarget [--portal HOST:PORT]... [--iqn NAME]
 *              [--lun N:ram:SIZE[,flag...] | N:null:SIZE[,flag...] | N:file:PATH[,flag...]
 *                     | N:rbd:POOL/IMAGE[,flag...]]...
 *              [--chap USER:SECRET] [--mutual-chap USER:SECRET] [--initiator NAME]...
 *              [--chap-algorithms LIST]
 *              [--header-digest] [--data-digest] [--login-timeout MS] [-v]
 *              [--workers N|auto] [--conn-workers 0|1]
 *              [--srp-portal HOST:PORT]... [--srp-guid 0xHEX] [--srp-aer]
 *              [--acl-address CIDR]... [--initiator-address NAME=CIDR]...
 *              [--map NAME:LUN | *:LUN]... [--max-sessions N] [--max-lun-commands N]
 *              [--max-initiator-conns N] [--queue-depth N]
 *              [--discovery-chap USER:SECRET] [--discovery-mutual-chap USER:SECRET]
 *              [--redirect HOST:PORT] [--tpgt N] [--alua-group G [--alua-peer G[:PORT]]... [--alua-preferred]
 *               [--gw-holddown MS] [--gw-probe MS]]
 *
 * Access control: --acl-address limits the source addresses of logins (target-wide),
 * --initiator-address those of one initiator; --map shows LUN N only to initiator NAME ('*':
 * every initiator; the LUN number is after the last ':'), and turns LUN masking on.
 * SIZE takes K/M/G/T suffixes (powers of 1024); LUN flags: thin, ro, removable, bs=512|4096,
 * pbe=N (2^N logical blocks per physical block, 0..8), spc4 (claim SPC-4 in INQUIRY).
 * file: a regular file or block device (backend_aio.h); flags io_engine=auto|libaio|io_uring
 * (default auto: io_uring where the kernel allows it, libaio otherwise), direct=0 (use the
 * page cache; default direct=1, O_DIRECT where the file system does it) and
 * uring_async=auto|always|never (io_uring, buffered: where the page cache copies run).
 * rbd: a Ceph RBD image (backend_rbd.h), its size from the image; flags ns=NAMESPACE,
 * id=CLIENT (default admin), conf=CEPH.CONF (default $CEPH_CONF), timeout=SECONDS (RADOS
 * operation timeout, 0 = none), nocache (rbd_cache=false: no volatile write cache), ro. Its
 * serial and NAA come from the image (cluster fsid, pool, image id), so that every gateway
 * exporting the image shows the same device. Its persistent reservations are shared with
 * every gateway through a RADOS object (scsitgt_backend_rbd_use_pr()) unless the flag nopr
 * keeps them local (then --pr-dir applies as to other LUNs).
 * The flag prhold (tests only, any LUN) puts its reservations in a store whose lease has run
 * out for good (minitarget_prhold.c): its read and write commands wait until a task management
 * function, a logout or the LUN's end cuts them short (tests/integration/pr_hold.sh).
 * Prints one "iscsi://HOST:PORT/IQN/LUN" line per LUN once listening; logs go to stderr.
 * --srp-portal listens for SRP logins over RDMA/CM (Linux ib_srp's dest=HOST:PORT) with the
 * target port identifier id_ext = ioc_guid = --srp-guid (default 0x0002c90300abcdef); one
 * "srp://HOST:PORT id_ext=0x... ioc_guid=0x..." line per SRP port is printed at start-up.
 * --srp-aer makes those ports announce each unit attention with an SRP_AER_REQ too
 * (scsitgt_srp_portal_opts.aer; off by default, docs/srp.md).
 * --redirect HOST:PORT answers every normal login with "target moved temporarily" to that
 * address (RFC 7143 §11.13.5, class 1), through the redirect hook (iscsi.h).
 * --tpgt sets the portal group tag of every portal (default 1), the relative target port id.
 * --workers N runs N worker threads, each connection on one of them end to end; with
 * --conn-workers 0 only the connections' sockets run there, the protocol and the core on the
 * main loop (the engine option conn_workers, engine.h; SCSITGT_CONN_WORKERS in the
 * environment overrides it).
 * --alua-group makes this process one gateway of the first RBD LUN's image
 * (backend_rbd_gateway.h; docs/rbd.md, "Several gateways: the HA model"): target port group G
 * holds this process's portals (port --tpgt), --alua-peer names another gateway's group (and
 * its port, default G), --alua-preferred makes this one take a free lock first; ALUA is
 * implicit and explicit. --gw-holddown and --gw-probe set the hold-down against takeovers and
 * the probe interval.
 * SIGINT or SIGTERM shut it down cleanly (exit status 0); an RBD LUN whose io librbd still
 * had when the engine gave up on it (--drain-timeout) is closed afterwards, and the process
 * exits once librbd gave it back. SIGUSR1 prints "lun N: inflight I" (commands in flight) for
 * every LUN, then the counters of every fault= LUN to stdout, one "fault lun N: submitted S
 * passed P delayed D hung H held H' delaying D'" line each (backend_fault.h), for tests that
 * wait until an io is held.
 * SIGUSR2 (a gateway, --alua-group) toggles its watch fault: the watch of the gateway object
 * breaks and its re-watch hangs until the next SIGUSR2 (the test hook
 * scsitgt_rbd_gateway_set_watch_fault(), libscsitgt/testing.h); each prints "gateway watch
 * fault on" or "off" to stdout. Without --alua-group it toggles the watch fault of the shared
 * reservation object of every RBD LUN instead (scsitgt_backend_rbd_set_pr_watch_fault()):
 * "pr watch fault on" or "off". For a gateway, SIGRTMIN+1 toggles the fault that fails every
 * reconnection of its RBD context (scsitgt_backend_rbd_set_reconnect_fault(); "rbd reconnect
 * fault on" or "off") and SIGRTMIN+2 makes it check the image's size as librbd's update watch
 * does (scsitgt_backend_rbd_flag_update(); "rbd update flagged"). SIGRTMIN+3 toggles the fault
 * that leaves every reservation change of every RBD LUN sharing them unnotified
 * (scsitgt_backend_rbd_set_pr_notify_fault(); "pr notify fault on" or "off").
 * Defaults: one 1 GiB RAM LUN 0 on 127.0.0.1:3260, target iqn.2026-11.org.libscsitgt:minitarget.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libscsitgt/scsitgt.h>
#include <libscsitgt/testing.h> /* the watch fault of SIGUSR2 */

#include "minitarget_opts.h"
#include "minitarget_prhold.h"

/* A LUN's fault-injection wrapper (fault=SPEC), whose close() minitarget watches: a context
 * the library abandoned at shutdown (it held ios) is the host's to free. An RBD LUN without
 * one is watched the same way (rbd, rbd_ops, rbd_closed): its close() is minitarget's then
 * (docs/threading.md, "A backend that never completes"). */
struct lun_fault {
	uint64_t lun_id;
	void *ctx;
	struct scsitgt_backend_ops ops;
	bool closed;
	void *rbd;
	struct scsitgt_backend_ops rbd_ops;
	bool rbd_closed;
	/* For SIGUSR1's "lun N: inflight I" (NULL once the engine is gone). */
	struct scsitgt_lun *lun;
};

struct app {
	const struct minitarget_opts *opts;
	uv_loop_t loop;
	uv_signal_t sigint;
	uv_signal_t sigterm;
	uv_signal_t sigusr1;
	uv_signal_t sigusr2;
	uv_signal_t sigrt1, sigrt2, sigrt3;
	struct scsitgt_engine *engine;
	struct scsitgt_target *tgt;
	/* --alua-group: this process is a gateway of the first RBD LUN's image (gw_rbd). */
	struct scsitgt_rbd_gateway *gateway;
	void *gw_rbd;
	bool gw_watch_fault;
	bool gw_reconnect_fault;
	/* RBD contexts sharing reservations, for SIGUSR2 without a gateway. */
	void *pr_rbd[MINITARGET_MAX_ITEMS];
	size_t npr_rbd;
	bool pr_watch_fault;
	bool pr_notify_fault;
	/* The first portal, for the iscsi:// lines. */
	char url_host[80];
	uint16_t url_port;
	bool stopping;
};

/* One per LUN of the command line (the signal and close callbacks have no other way in). */
static struct lun_fault g_faults[MINITARGET_MAX_ITEMS];
static size_t g_nluns;

/*
 * The most verbose level printed (-v: debug, else notice), set before any thread starts. The
 * engine filters its own messages at it, but the backends' loggers (aio, RBD and its gateway)
 * get every level (backend.h): log_cb filters them, else an RBD gateway printed its probe's
 * debug lines three times a second without -v (userx35 N8).
 */
static enum scsitgt_log_level g_log_level = SCSITGT_LOG_NOTICE;

static void log_cb(void *arg, enum scsitgt_log_level level, const char *subsystem, const char *fmt,
		   va_list ap)
{
	static const char *names[] = { "", "", "", "error", "warning", "notice", "info", "debug" };

	(void)arg;
	if (level > g_log_level)
		return;
	/* One line at a time: with workers the library logs from their threads too. */
	flockfile(stderr);
	fprintf(stderr, "minitarget: %s: %s: ", names[level & 7], subsystem);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	funlockfile(stderr);
}

/* An RBD image, opened off the loop (scsitgt_backend_rbd_create_async()); minitarget waits
 * for it before it listens, running the loop meanwhile as a serving host would. */
struct rbd_wait {
	bool done;
	int status;
	void *bctx;
};

static void rbd_opened(void *arg, int status, void *bctx)
{
	struct rbd_wait *w = arg;

	w->done = true;
	w->status = status;
	w->bctx = bctx;
}

static int rbd_open_lun(uv_loop_t *loop, const struct minitarget_lun *l, void **bctx)
{
	struct scsitgt_backend_rbd_opts ro;
	struct rbd_wait w = { 0 };
	char pool[200];
	char *slash;
	int rc;

	strcpy(pool, l->path);
	slash = strchr(pool, '/');
	*slash = '\0';
	scsitgt_backend_rbd_opts_init(&ro, sizeof(ro));
	ro.loop = loop;
	ro.pool = pool;
	ro.image = slash + 1;
	ro.pool_namespace = l->rbd_ns[0] ? l->rbd_ns : NULL;
	if (l->rbd_id[0])
		ro.client_id = l->rbd_id;
	ro.conf_file = l->rbd_conf[0] ? l->rbd_conf : NULL;
	ro.read_only = (l->flags & SCSITGT_LUN_READ_ONLY) != 0;
	ro.write_through = l->rbd_nocache;
	if (l->rbd_timeout >= 0)
		ro.op_timeout_s = (uint32_t)l->rbd_timeout;
	ro.log_cb = log_cb;
	rc = scsitgt_backend_rbd_create_async(&ro, rbd_opened, &w);
	if (rc < 0)
		return rc;
	while (!w.done)
		uv_run(loop, UV_RUN_ONCE);
	*bctx = w.bctx;
	return w.status;
}

static void rbd_pr_attached(void *arg, int status)
{
	struct rbd_wait *w = arg;

	w->done = true;
	w->status = status;
}

/* Share the image's reservations with the other gateways (a RADOS object, watch/notify);
 * waits for the first read and the watch before the target listens. */
static int rbd_share_pr(uv_loop_t *loop, void *rbd_ctx)
{
	struct rbd_wait w = { 0 };
	int rc = scsitgt_backend_rbd_use_pr(rbd_ctx, NULL, rbd_pr_attached, &w);

	if (rc < 0)
		return rc;
	while (!w.done)
		uv_run(loop, UV_RUN_ONCE);
	return w.status;
}

static void fault_tracked_close(void *bctx, scsitgt_done_cb cb, void *cb_arg)
{
	for (size_t i = 0; i < g_nluns; i++)
		if (g_faults[i].ctx == bctx)
			g_faults[i].closed = true;
	scsitgt_backend_fault_ops(bctx)->close(bctx, cb, cb_arg);
}

/* After shutdown: a fault context the engine gave up on (it held ios) is the host's. */
static void fault_cleanup(void)
{
	for (size_t i = 0; i < g_nluns; i++) {
		if (g_faults[i].ctx == NULL || g_faults[i].closed)
			continue;
		scsitgt_backend_fault_release(g_faults[i].ctx, 0, -EIO);
		if (scsitgt_backend_fault_destroy(g_faults[i].ctx) == 0)
			g_faults[i].ctx = NULL;
	}
}

static void rbd_tracked_close(void *bctx, scsitgt_done_cb cb, void *cb_arg)
{
	for (size_t i = 0; i < g_nluns; i++)
		if (g_faults[i].rbd == bctx)
			g_faults[i].rbd_closed = true;
	scsitgt_backend_rbd_ops()->close(bctx, cb, cb_arg);
}

static void rbd_orphan_closed(void *arg, int status)
{
	struct lun_fault *f = arg;

	(void)status;
	fprintf(stderr,
		"minitarget: LUN %llu: rbd backend closed after the engine gave up on its "
		"ios\n",
		(unsigned long long)f->lun_id);
}

/* After the engine's destroy: an RBD context the engine gave up on (it held ios, close() never
 * came) is the host's. Its close() may be called at once: it calls back once librbd gave the
 * last io back (each completes: only its memory goes) and the image is closed; until then its
 * handles keep the loop running. */
static void rbd_orphans_close(void)
{
	for (size_t i = 0; i < g_nluns; i++) {
		struct lun_fault *f = &g_faults[i];

		if (f->rbd == NULL || f->rbd_closed)
			continue;
		f->rbd_closed = true;
		fprintf(stderr,
			"minitarget: LUN %llu: closing the rbd backend the engine gave up "
			"on\n",
			(unsigned long long)f->lun_id);
		scsitgt_backend_rbd_ops()->close(f->rbd, rbd_orphan_closed, f);
	}
}

static void engine_destroyed(void *arg, int status)
{
	struct app *app = arg;

	(void)status;
	app->engine = NULL;
	for (size_t i = 0; i < g_nluns; i++)
		g_faults[i].lun = NULL;
	/* Here, not after the loop: a backend behind a fault context (RBD) keeps handles on the
	 * loop until that context, which closes it, is gone. */
	fault_cleanup();
	rbd_orphans_close();
	uv_close((uv_handle_t *)&app->sigint, NULL);
	uv_close((uv_handle_t *)&app->sigterm, NULL);
	uv_close((uv_handle_t *)&app->sigusr1, NULL);
	uv_close((uv_handle_t *)&app->sigusr2, NULL);
	uv_close((uv_handle_t *)&app->sigrt1, NULL);
	uv_close((uv_handle_t *)&app->sigrt2, NULL);
	uv_close((uv_handle_t *)&app->sigrt3, NULL);
}

/* SIGUSR1: the fault backends' counters and every LUN's commands in flight, so that a test
 * can wait for a held io. */
static void on_sigusr1(uv_signal_t *h, int signum)
{
	struct app *app = h->data;

	(void)signum;
	for (size_t i = 0; i < g_nluns; i++) {
		struct scsitgt_lun_stats ls = { .size = sizeof(ls) };

		/* Not once the engine's destroy began: it frees the LUNs. */
		if (!app->stopping && g_faults[i].lun &&
		    scsitgt_lun_get_stats(g_faults[i].lun, &ls) == 0)
			printf("lun %llu: inflight %llu\n", (unsigned long long)g_faults[i].lun_id,
			       (unsigned long long)ls.inflight);
	}
	for (size_t i = 0; i < g_nluns; i++) {
		struct scsitgt_fault_stats st = { .size = sizeof(st) };

		if (g_faults[i].ctx == NULL || g_faults[i].closed ||
		    scsitgt_backend_fault_get_stats(g_faults[i].ctx, &st) < 0)
			continue;
		printf("fault lun %llu: submitted %llu passed %llu delayed %llu hung %llu held %u "
		       "delaying %u\n",
		       (unsigned long long)g_faults[i].lun_id, (unsigned long long)st.submitted,
		       (unsigned long long)st.passed, (unsigned long long)st.delayed,
		       (unsigned long long)st.hung, st.held, st.delaying);
	}
	fflush(stdout);
}

/* SIGUSR2: the gateway's watch fault on or off, for tests of the HA model. */
static void on_sigusr2(uv_signal_t *h, int signum)
{
	struct app *app = h->data;

	(void)signum;
	if (app->gateway == NULL && !app->stopping && app->npr_rbd) {
		app->pr_watch_fault = !app->pr_watch_fault;
		for (size_t i = 0; i < app->npr_rbd; i++)
			scsitgt_backend_rbd_set_pr_watch_fault(app->pr_rbd[i], app->pr_watch_fault);
		printf("pr watch fault %s\n", app->pr_watch_fault ? "on" : "off");
		fflush(stdout);
		return;
	}
	if (app->gateway == NULL || app->stopping ||
	    scsitgt_rbd_gateway_set_watch_fault(app->gateway, !app->gw_watch_fault) < 0)
		return;
	app->gw_watch_fault = !app->gw_watch_fault;
	printf("gateway watch fault %s\n", app->gw_watch_fault ? "on" : "off");
	fflush(stdout);
}

/* SIGRTMIN+1: the gateway's reconnections fail, or no more (tests of the HA model). */
static void on_sigrt1(uv_signal_t *h, int signum)
{
	struct app *app = h->data;

	(void)signum;
	if (app->gateway == NULL || app->stopping ||
	    scsitgt_backend_rbd_set_reconnect_fault(app->gw_rbd, !app->gw_reconnect_fault) < 0)
		return;
	app->gw_reconnect_fault = !app->gw_reconnect_fault;
	printf("rbd reconnect fault %s\n", app->gw_reconnect_fault ? "on" : "off");
	fflush(stdout);
}

/* SIGRTMIN+2: the gateway's image as if librbd's update watch fired (a size check). */
static void on_sigrt2(uv_signal_t *h, int signum)
{
	struct app *app = h->data;

	(void)signum;
	if (app->gateway == NULL || app->stopping ||
	    scsitgt_backend_rbd_flag_update(app->gw_rbd) < 0)
		return;
	printf("rbd update flagged\n");
	fflush(stdout);
}

/* SIGRTMIN+3: reservation changes not notified, or notified again (tests of shared PR). */
static void on_sigrt3(uv_signal_t *h, int signum)
{
	struct app *app = h->data;

	(void)signum;
	if (app->stopping || app->npr_rbd == 0)
		return;
	app->pr_notify_fault = !app->pr_notify_fault;
	for (size_t i = 0; i < app->npr_rbd; i++)
		scsitgt_backend_rbd_set_pr_notify_fault(app->pr_rbd[i], app->pr_notify_fault);
	printf("pr notify fault %s\n", app->pr_notify_fault ? "on" : "off");
	fflush(stdout);
}

/* The gateway goes first: it releases the lock, so that a standby takes it at once. */
static void gateway_destroyed(void *arg, int status)
{
	struct app *app = arg;

	(void)status;
	app->gateway = NULL;
	scsitgt_engine_destroy(app->engine, engine_destroyed, app);
}

static void on_signal(uv_signal_t *h, int signum)
{
	struct app *app = h->data;

	if (app->stopping)
		return;
	app->stopping = true;
	fprintf(stderr, "minitarget: signal %d, shutting down\n", signum);
	if (app->gateway)
		scsitgt_rbd_gateway_destroy(app->gateway, gateway_destroyed, app);
	else
		scsitgt_engine_destroy(app->engine, engine_destroyed, app);
}

/* The engine on app->loop, with its logger, workers and teardown timeouts. */
static int engine_setup(struct app *app)
{
	const struct minitarget_opts *o = app->opts;
	struct scsitgt_engine_opts eo;
	int rc;

	scsitgt_engine_opts_init(&eo, sizeof(eo));
	eo.log_cb = log_cb;
	eo.log_level = g_log_level;
	eo.workers = o->workers;
	if (o->conn_workers >= 0)
		eo.conn_workers = o->conn_workers != 0;
	rc = scsitgt_engine_create(&app->engine, &app->loop, &eo);
	if (rc < 0) {
		fprintf(stderr, "minitarget: engine: %s\n", scsitgt_strerror(rc));
		return rc;
	}
	if (o->drain_timeout > 0)
		scsitgt_engine_set_drain_timeout(app->engine, (uint32_t)o->drain_timeout);
	if (o->tmf_timeout > 0)
		scsitgt_engine_set_tmf_timeout(app->engine, (uint32_t)o->tmf_timeout);
	return 0;
}

/* "USER:SECRET" of @arg handed to @set (target CHAP) or @set_engine (discovery CHAP). */
/* --redirect: every login goes to that address (the library checks nothing more here). */
static enum scsitgt_iscsi_redirect redirect_login(void *cb_arg, struct scsitgt_target *tgt,
						  const char *initiator_name, char *address,
						  size_t address_size)
{
	(void)tgt;
	(void)initiator_name;
	snprintf(address, address_size, "%s", (const char *)cb_arg);
	return SCSITGT_ISCSI_REDIRECT_TEMPORARY;
}

static int set_cred(struct app *app, const char *arg,
		    int (*set)(struct scsitgt_target *tgt, const char *user, const char *secret),
		    int (*set_engine)(struct scsitgt_engine *engine, const char *user,
				      const char *secret))
{
	char u[512], s[512];

	if (arg == NULL)
		return 0;
	if (minitarget_split_cred(arg, u, s, sizeof(u)) < 0)
		return -EINVAL;
	return set ? set(app->tgt, u, s) : set_engine(app->engine, u, s);
}

/* --initiator-address NAME=CIDR: the address after the last '='. */
static int add_initiator_address(struct scsitgt_target *tgt, const char *arg)
{
	char name[256];
	const char *eq = strrchr(arg, '=');
	size_t n = eq ? (size_t)(eq - arg) : 0;

	if (n == 0 || n >= sizeof(name))
		return -EINVAL;
	memcpy(name, arg, n);
	name[n] = '\0';
	return scsitgt_target_add_initiator_address(tgt, name, eq + 1);
}

/* --map NAME:LUN with the LUN after the last ':' (iSCSI names hold colons); '*': everyone. */
static int add_map(struct scsitgt_target *tgt, const char *arg)
{
	char name[256], *end;
	const char *colon = strrchr(arg, ':');
	size_t n = colon ? (size_t)(colon - arg) : 0;
	unsigned long long id = colon ? strtoull(colon + 1, &end, 10) : 0;

	if (n == 0 || n >= sizeof(name) || colon[1] == '\0' || *end != '\0')
		return -EINVAL;
	memcpy(name, arg, n);
	name[n] = '\0';
	return scsitgt_target_map_lun(tgt, strcmp(name, "*") == 0 ? NULL : name, id);
}

/* The iSCSI settings, access control and CHAP of the target. */
static int target_configure(struct app *app)
{
	const struct minitarget_opts *o = app->opts;
	struct scsitgt_iscsi_params ip;
	int rc;

	scsitgt_iscsi_params_init(&ip, sizeof(ip));
	if (o->header_digest)
		ip.header_digest = SCSITGT_ISCSI_DIGEST_CRC32C;
	if (o->data_digest)
		ip.data_digest = SCSITGT_ISCSI_DIGEST_CRC32C;
	if (o->chap_algs)
		ip.chap_algorithms = o->chap_algs;
	if (o->login_timeout >= 0)
		ip.login_timeout_ms = (uint32_t)o->login_timeout;
	if (o->nop_interval >= 0)
		ip.nop_interval_ms = (uint32_t)o->nop_interval;
	if (o->nop_timeout > 0)
		ip.nop_timeout_ms = (uint32_t)o->nop_timeout;
	if (o->queue_depth >= 0)
		ip.queue_depth = (uint32_t)o->queue_depth;
	if (o->logout_timeout > 0)
		ip.logout_timeout_ms = (uint32_t)o->logout_timeout;
	rc = scsitgt_iscsi_target_set_params(app->tgt, &ip);
	for (size_t i = 0; rc == 0 && i < o->ninit; i++)
		rc = scsitgt_target_add_initiator(app->tgt, o->initiators[i]);
	for (size_t i = 0; rc == 0 && i < o->nacl_addrs; i++)
		rc = scsitgt_target_add_address(app->tgt, o->acl_addrs[i]);
	for (size_t i = 0; rc == 0 && i < o->ninit_addrs; i++)
		rc = add_initiator_address(app->tgt, o->init_addrs[i]);
	for (size_t i = 0; rc == 0 && i < o->nmaps; i++)
		rc = add_map(app->tgt, o->maps[i]);
	if (rc == 0)
		rc = set_cred(app, o->chap, scsitgt_iscsi_target_set_chap, NULL);
	if (rc == 0)
		rc = set_cred(app, o->discovery_chap, NULL,
			      scsitgt_iscsi_engine_set_discovery_chap);
	if (rc == 0)
		rc = set_cred(app, o->discovery_mutual_chap, NULL,
			      scsitgt_iscsi_engine_set_discovery_mutual_chap);
	if (rc == 0)
		rc = set_cred(app, o->mutual_chap, scsitgt_iscsi_target_set_mutual_chap, NULL);
	if (rc == 0 && o->redirect)
		rc = scsitgt_iscsi_target_set_redirect(app->tgt, redirect_login,
						       (void *)o->redirect);
	if (rc < 0)
		fprintf(stderr, "minitarget: target settings: %s\n", scsitgt_strerror(rc));
	return rc;
}

static int target_setup(struct app *app)
{
	const struct minitarget_opts *o = app->opts;
	struct scsitgt_target_opts to;
	int rc;

	scsitgt_target_opts_init(&to, sizeof(to));
	to.name = o->iqn;
	to.alias = "minitarget";
	if (o->max_sessions >= 0)
		to.max_sessions = (uint32_t)o->max_sessions;
	if (o->max_lun_cmds >= 0)
		to.max_lun_commands = (uint32_t)o->max_lun_cmds;
	rc = scsitgt_target_create(&app->tgt, app->engine, &to);
	if (rc < 0) {
		fprintf(stderr, "minitarget: target '%s': %s\n", o->iqn, scsitgt_strerror(rc));
		return rc;
	}
	return target_configure(app);
}

/* The backend of LUN @l: its ops and context; *rbd_ctx is the RBD context of an rbd LUN. */
static int lun_backend_create(struct app *app, const struct minitarget_lun *l,
			      const struct scsitgt_backend_ops **ops, void **bctx, void **rbd_ctx)
{
	int rc = -EINVAL;

	*rbd_ctx = NULL;
	switch (l->kind) {
	case MINITARGET_LUN_NULL:
		*ops = scsitgt_backend_null_ops();
		rc = scsitgt_backend_null_create(bctx);
		break;
	case MINITARGET_LUN_RAM:
		*ops = scsitgt_backend_ram_ops();
		rc = scsitgt_backend_ram_create(bctx);
		break;
	case MINITARGET_LUN_FILE: {
		struct scsitgt_backend_aio_opts ao;

		scsitgt_backend_aio_opts_init(&ao, sizeof(ao));
		ao.loop = &app->loop;
		ao.path = l->path;
		ao.read_only = (l->flags & SCSITGT_LUN_READ_ONLY) != 0;
		ao.direct = !l->buffered;
		ao.engine = (enum scsitgt_backend_aio_engine)l->io_engine;
		ao.uring_async = (enum scsitgt_backend_aio_uring_async)l->uring_async;
		ao.log_cb = log_cb;
		*ops = scsitgt_backend_aio_ops();
		rc = scsitgt_backend_aio_create(bctx, &ao);
		break;
	}
	case MINITARGET_LUN_RBD:
		*ops = scsitgt_backend_rbd_ops();
		rc = *ops ? rbd_open_lun(&app->loop, l, bctx) : -ENOTSUP;
		*rbd_ctx = rc == 0 ? *bctx : NULL;
		break;
	}
	if (rc < 0)
		fprintf(stderr, "minitarget: backend: %s\n", scsitgt_strerror(rc));
	return rc;
}

/* fault=SPEC: wrap LUN @i's backend (*ops, *bctx) in the fault-injection backend, whose close
 * is tracked in g_faults[i]. On failure the inner backend is closed. */
static int lun_fault_wrap(struct app *app, size_t i, const struct scsitgt_backend_ops **ops,
			  void **bctx)
{
	const struct minitarget_lun *l = &app->opts->luns[i];
	struct lun_fault *f = &g_faults[i];
	void *inner = *bctx;
	int rc;

	rc = scsitgt_backend_fault_create(bctx, &app->loop, *ops, inner);
	if (rc == 0) {
		rc = scsitgt_backend_fault_add_spec(*bctx, l->fault);
		f->ops = *scsitgt_backend_fault_ops(*bctx);
		f->ops.close = fault_tracked_close;
		f->ctx = *bctx;
		*ops = &f->ops;
	} else {
		(*ops)->close(inner, NULL, NULL);
	}
	if (rc < 0) {
		if (f->ctx)
			scsitgt_backend_fault_destroy(*bctx);
		f->ctx = NULL;
		fprintf(stderr, "minitarget: LUN %llu: fault '%s': %s\n", (unsigned long long)l->id,
			l->fault, scsitgt_strerror(rc));
	}
	return rc;
}

/* LUN @lun's persistent reservations: shared through RADOS for an RBD LUN (unless nopr),
 * else in --pr-dir's file when given. */
static int lun_pr_setup(struct app *app, const struct minitarget_lun *l, struct scsitgt_lun *lun,
			void *rbd_ctx)
{
	const char *pr_dir = app->opts->pr_dir;
	int rc = 0;

	if (l->pr_hold) {
		rc = minitarget_prhold_setup(&app->loop, lun);
		if (rc < 0)
			fprintf(stderr, "minitarget: LUN %llu: prhold: %s\n",
				(unsigned long long)l->id, scsitgt_strerror(rc));
	} else if (rbd_ctx && !l->rbd_nopr) {
		rc = rbd_share_pr(&app->loop, rbd_ctx);
		if (rc == 0)
			app->pr_rbd[app->npr_rbd++] = rbd_ctx;
		if (rc < 0)
			fprintf(stderr, "minitarget: LUN %llu: shared reservations: %s\n",
				(unsigned long long)l->id, scsitgt_strerror(rc));
	} else if (pr_dir) {
		char path[4096];

		snprintf(path, sizeof(path), "%s/lun%llu.pr", pr_dir, (unsigned long long)l->id);
		rc = scsitgt_lun_use_pr_file(lun, path);
		if (rc < 0)
			fprintf(stderr, "minitarget: PR file %s: %s\n", path, scsitgt_strerror(rc));
	}
	return rc;
}

/* LUN @i of the command line: its backend (perhaps fault-wrapped), the LUN, its reservations. */
static int lun_add(struct app *app, size_t i)
{
	const struct minitarget_lun *l = &app->opts->luns[i];
	const struct scsitgt_backend_ops *ops = NULL;
	struct scsitgt_lun_opts lo;
	struct scsitgt_lun *lun;
	void *bctx = NULL;
	void *rbd_ctx = NULL; /* the RBD context (bctx may be a fault wrapper around it) */
	char serial[40];
	uint32_t flags = l->flags;
	int rc;

	rc = lun_backend_create(app, l, &ops, &bctx, &rbd_ctx);
	if (rc == 0 && l->fault[0])
		rc = lun_fault_wrap(app, i, &ops, &bctx);
	if (rc < 0)
		return rc;
	if (rbd_ctx && bctx == rbd_ctx) {
		/* Its close() is watched: one the engine never calls is minitarget's. */
		g_faults[i].rbd_ops = *ops;
		g_faults[i].rbd_ops.close = rbd_tracked_close;
		g_faults[i].rbd = rbd_ctx;
		ops = &g_faults[i].rbd_ops;
	}
	scsitgt_lun_opts_init(&lo, sizeof(lo));
	lo.id = l->id;
	/* Files and devices report their own size, and devices their block size. */
	lo.block_size = l->kind == MINITARGET_LUN_FILE && !l->bs_given ? 0 : l->bs;
	lo.num_blocks = l->kind == MINITARGET_LUN_FILE || l->kind == MINITARGET_LUN_RBD ?
				0 :
				l->size / l->bs;
	if (rbd_ctx) {
		/* One device for multipath, whichever gateway exports the image. */
		scsitgt_backend_rbd_get_ident(rbd_ctx, &lo.naa, serial, sizeof(serial));
		lo.serial = serial;
		/* WCE on when librbd caches writes (SBC-4 §4.14): the initiator flushes. */
		flags |= SCSITGT_LUN_WRITE_CACHE;
	}
	lo.flags = flags;
	lo.physical_block_exponent = l->pbe;
	lo.backend = ops;
	lo.backend_ctx = bctx;
	rc = scsitgt_lun_create(&lun, app->tgt, &lo);
	if (rc < 0) {
		ops->close(bctx, NULL, NULL);
		fprintf(stderr, "minitarget: LUN %llu: %s\n", (unsigned long long)l->id,
			scsitgt_strerror(rc));
		return rc;
	}
	g_faults[i].lun = lun;
	if (rbd_ctx)
		scsitgt_backend_rbd_set_lun(rbd_ctx, lun);
	if (rbd_ctx && app->gw_rbd == NULL)
		app->gw_rbd = rbd_ctx;
	return lun_pr_setup(app, l, lun, rbd_ctx);
}

/* --alua STATE: one target port group (1) holding relative port 1, implicit and explicit. */
static int alua_setup(struct app *app)
{
	struct scsitgt_alua_opts ao;
	int rc;

	if (app->opts->alua_state < 0)
		return 0;
	scsitgt_alua_opts_init(&ao, sizeof(ao));
	ao.modes = SCSITGT_ALUA_IMPLICIT | SCSITGT_ALUA_EXPLICIT;
	rc = scsitgt_alua_configure(app->tgt, &ao);
	if (rc == 0)
		rc = scsitgt_alua_group_create(app->tgt, 1,
					       (enum scsitgt_alua_state)app->opts->alua_state);
	if (rc == 0)
		rc = scsitgt_alua_group_add_port(app->tgt, 1, 1);
	if (rc < 0)
		fprintf(stderr, "minitarget: ALUA: %s\n", scsitgt_strerror(rc));
	return rc;
}

/* --alua-group G: this process is one gateway of the first RBD LUN's image. */
static int gateway_setup(struct app *app)
{
	const struct minitarget_opts *o = app->opts;
	struct scsitgt_rbd_gateway_opts go;
	uint16_t port = (uint16_t)o->tpgt;
	int rc;

	if (o->alua_group <= 0)
		return 0;
	if (app->gw_rbd == NULL || o->alua_state >= 0) {
		fprintf(stderr, "minitarget: --alua-group needs an rbd LUN and no --alua\n");
		return -EINVAL;
	}
	scsitgt_rbd_gateway_opts_init(&go, sizeof(go));
	go.group_id = (uint16_t)o->alua_group;
	go.rel_port_ids = &port;
	go.nrel_port_ids = 1;
	go.peers = o->gw_peers;
	go.npeers = o->ngw_peers;
	go.preferred = o->gw_preferred;
	if (o->gw_holddown >= 0)
		go.holddown_ms = (uint32_t)o->gw_holddown;
	if (o->gw_probe > 0)
		go.probe_interval_ms = (uint32_t)o->gw_probe;
	rc = scsitgt_rbd_gateway_create(&app->gateway, app->tgt, app->gw_rbd, &go);
	if (rc < 0)
		fprintf(stderr, "minitarget: RBD gateway: %s\n", scsitgt_strerror(rc));
	return rc;
}

/* One iSCSI portal, over TCP or (@iser) iSER. The first TCP one names the iscsi:// URLs. */
static int portal_listen(struct app *app, const char *arg, bool iser, bool first)
{
	const struct minitarget_opts *o = app->opts;
	struct scsitgt_portal_opts po;
	struct scsitgt_portal *portal;
	uint16_t port;
	char host[64];
	int rc;

	if (minitarget_parse_portal(arg, host, sizeof(host), &port) < 0) {
		fprintf(stderr, "minitarget: bad %s '%s'\n", iser ? "--iser-portal" : "--portal",
			arg);
		return -EINVAL;
	}
	scsitgt_portal_opts_init(&po, sizeof(po));
	po.address = host;
	po.port = port;
	po.tpgt = (uint16_t)o->tpgt;
	if (o->max_init_conns >= 0)
		po.max_connections_per_initiator = (uint32_t)o->max_init_conns;
	rc = iser ? scsitgt_iser_portal_create(&portal, app->engine, &po) :
		    scsitgt_portal_create(&portal, app->engine, &po);
	if (rc < 0) {
		fprintf(stderr, "minitarget: cannot listen%s on %s: %s\n", iser ? " (iSER)" : "",
			arg, scsitgt_strerror(rc));
		return rc;
	}
	if (first) {
		snprintf(app->url_host, sizeof(app->url_host), strchr(host, ':') ? "[%s]" : "%s",
			 host);
		app->url_port = scsitgt_portal_get_port(portal);
	}
	return 0;
}

/* One SRP target port; prints its srp:// line. */
static int srp_listen(struct app *app, const char *arg)
{
	uint64_t guid = app->opts->srp_guid;
	struct scsitgt_srp_portal_opts so;
	struct scsitgt_srp_portal *sp;
	uint16_t port;
	char host[64];
	int rc;

	if (minitarget_parse_portal(arg, host, sizeof(host), &port) < 0) {
		fprintf(stderr, "minitarget: bad --srp-portal '%s'\n", arg);
		return -EINVAL;
	}
	scsitgt_srp_portal_opts_init(&so, sizeof(so));
	so.address = host;
	so.port = port;
	so.id_ext = guid;
	so.ioc_guid = guid;
	so.aer = app->opts->srp_aer;
	rc = scsitgt_srp_portal_create(&sp, app->tgt, &so);
	if (rc < 0) {
		fprintf(stderr, "minitarget: cannot listen (SRP) on %s: %s\n", arg,
			scsitgt_strerror(rc));
		return rc;
	}
	printf("srp://%s:%u id_ext=0x%016" PRIx64 " ioc_guid=0x%016" PRIx64 "\n", host,
	       scsitgt_srp_portal_get_port(sp), guid, guid);
	return 0;
}

/* Everything the options ask for, in order: target, LUNs, ALUA or gateway, then listeners. */
static int wire(struct app *app)
{
	const struct minitarget_opts *o = app->opts;
	int rc = target_setup(app);

	for (size_t i = 0; rc == 0 && i < o->nluns; i++)
		rc = lun_add(app, i);
	if (rc == 0)
		rc = alua_setup(app);
	if (rc == 0)
		rc = gateway_setup(app);
	for (size_t i = 0; rc == 0 && i < o->nportals; i++)
		rc = portal_listen(app, o->portals[i], false, i == 0);
	for (size_t i = 0; rc == 0 && i < o->niser; i++)
		rc = portal_listen(app, o->iser_portals[i], true, false);
	for (size_t i = 0; rc == 0 && i < o->nsrp; i++)
		rc = srp_listen(app, o->srp_portals[i]);
	return rc;
}

static void signals_start(struct app *app)
{
	app->sigint.data = app;
	app->sigterm.data = app;
	uv_signal_init(&app->loop, &app->sigint);
	uv_signal_init(&app->loop, &app->sigterm);
	uv_signal_start(&app->sigint, on_signal, SIGINT);
	uv_signal_start(&app->sigterm, on_signal, SIGTERM);
	app->sigusr1.data = app;
	uv_signal_init(&app->loop, &app->sigusr1);
	uv_signal_start(&app->sigusr1, on_sigusr1, SIGUSR1);
	app->sigusr2.data = app;
	uv_signal_init(&app->loop, &app->sigusr2);
	uv_signal_start(&app->sigusr2, on_sigusr2, SIGUSR2);
	app->sigrt1.data = app;
	uv_signal_init(&app->loop, &app->sigrt1);
	uv_signal_start(&app->sigrt1, on_sigrt1, SIGRTMIN + 1);
	app->sigrt2.data = app;
	uv_signal_init(&app->loop, &app->sigrt2);
	uv_signal_start(&app->sigrt2, on_sigrt2, SIGRTMIN + 2);
	app->sigrt3.data = app;
	uv_signal_init(&app->loop, &app->sigrt3);
	uv_signal_start(&app->sigrt3, on_sigrt3, SIGRTMIN + 3);
}

int main(int argc, char **argv)
{
	static struct minitarget_opts opts;
	struct app app;
	int rc;

	switch (minitarget_opts_parse(&opts, argc, argv, stderr)) {
	case MINITARGET_PARSE_HELP:
		minitarget_usage(stdout);
		return 0;
	case MINITARGET_PARSE_ERROR:
		return 2;
	case MINITARGET_PARSE_RUN:
		break;
	}
	memset(&app, 0, sizeof(app));
	app.opts = &opts;
	g_log_level = opts.verbose ? SCSITGT_LOG_DEBUG : SCSITGT_LOG_NOTICE;
	for (size_t i = 0; i < opts.nluns; i++)
		g_faults[i].lun_id = opts.luns[i].id;
	g_nluns = opts.nluns;

	/* Before any portal: an initiator that drops its connection while we write must not end
	 * the process (docs/threading.md, SIGPIPE). */
	signal(SIGPIPE, SIG_IGN);
	if (uv_loop_init(&app.loop) != 0)
		return 1;
	if (engine_setup(&app) < 0)
		return 1;
	rc = wire(&app);
	if (rc < 0) {
		if (app.gateway)
			scsitgt_rbd_gateway_destroy(app.gateway, NULL, NULL);
		scsitgt_engine_destroy(app.engine, NULL, NULL);
		uv_run(&app.loop, UV_RUN_DEFAULT);
		uv_loop_close(&app.loop);
		return rc == -EADDRINUSE ? 3 : 1;
	}

	signals_start(&app);
	for (size_t i = 0; i < opts.nluns; i++)
		printf("iscsi://%s:%u/%s/%llu\n", app.url_host, app.url_port, opts.iqn,
		       (unsigned long long)opts.luns[i].id);
	fflush(stdout);

	uv_run(&app.loop, UV_RUN_DEFAULT);
	fault_cleanup();
	rc = uv_loop_close(&app.loop);
	if (rc != 0) {
		fprintf(stderr, "minitarget: loop still has handles at exit\n");
		return 1;
	}
	return 0;
}
