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
 *              [--workers N|auto] [--srp-portal HOST:PORT]... [--srp-guid 0xHEX]
 *              [--acl-address CIDR]... [--initiator-address NAME=CIDR]...
 *              [--map NAME:LUN | *:LUN]... [--max-sessions N] [--max-lun-commands N]
 *              [--max-initiator-conns N] [--queue-depth N]
 *              [--discovery-chap USER:SECRET] [--discovery-mutual-chap USER:SECRET]
 *              [--tpgt N] [--alua-group G [--alua-peer G[:PORT]]... [--alua-preferred]
 *               [--gw-holddown MS] [--gw-probe MS]]
 *
 * Access control: --acl-address limits the source addresses of logins (target-wide),
 * --initiator-address those of one initiator; --map shows LUN N only to initiator NAME ('*':
 * every initiator; the LUN number is after the last ':'), and turns LUN masking on.
 * SIZE takes K/M/G/T suffixes (powers of 1024); LUN flags: thin, ro, removable, bs=512|4096,
 * pbe=N (2^N logical blocks per physical block, 0..8), spc4 (claim SPC-4 in INQUIRY).
 * rbd: a Ceph RBD image (backend_rbd.h), its size from the image; flags ns=NAMESPACE,
 * id=CLIENT (default admin), conf=CEPH.CONF (default $CEPH_CONF), timeout=SECONDS (RADOS
 * operation timeout, 0 = none), nocache (rbd_cache=false: no volatile write cache), ro. Its
 * serial and NAA come from the image (cluster fsid, pool, image id), so that every gateway
 * exporting the image shows the same device. Its persistent reservations are shared with
 * every gateway through a RADOS object (scsitgt_backend_rbd_use_pr()) unless the flag nopr
 * keeps them local (then --pr-dir applies as to other LUNs).
 * Prints one "iscsi://HOST:PORT/IQN/LUN" line per LUN once listening; logs go to stderr.
 * --srp-portal listens for SRP logins over RDMA/CM (Linux ib_srp's dest=HOST:PORT) with the
 * target port identifier id_ext = ioc_guid = --srp-guid (default 0x0002c90300abcdef); one
 * "srp://HOST:PORT id_ext=0x... ioc_guid=0x..." line per SRP port is printed at start-up.
 * --tpgt sets the portal group tag of every portal (default 1), the relative target port id.
 * --alua-group makes this process one gateway of the first RBD LUN's image
 * (backend_rbd_gateway.h; docs/rbd.md, "Several gateways: the HA model"): target port group G
 * holds this process's portals (port --tpgt), --alua-peer names another gateway's group (and
 * its port, default G), --alua-preferred makes this one take a free lock first; ALUA is
 * implicit and explicit. --gw-holddown and --gw-probe set the hold-down against takeovers and
 * the probe interval.
 * SIGINT or SIGTERM shut it down cleanly (exit status 0). SIGUSR1 prints the counters of every
 * fault= LUN to stdout, one "fault lun N: submitted S passed P delayed D hung H held H'
 * delaying D'" line each (backend_fault.h), for tests that wait until an io is held.
 * Defaults: one 1 GiB RAM LUN 0 on 127.0.0.1:3260, target iqn.2026-11.org.libscsitgt:minitarget.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <libscsitgt/scsitgt.h>

#define MAX_ITEMS 32

enum lun_kind {
	LUN_RAM,
	LUN_NULL,
	LUN_FILE,
	LUN_RBD
};

struct lun_spec {
	uint64_t id;
	enum lun_kind kind;
	uint64_t size;	/* ram and null */
	char path[200]; /* file: a regular file or a block device; rbd: POOL/IMAGE */
	/* rbd: namespace, client id, ceph.conf, operation timeout, client cache off */
	char rbd_ns[64];
	char rbd_id[64];
	char rbd_conf[200];
	long rbd_timeout; /* -1: the backend's default */
	bool rbd_nocache;
	bool rbd_nopr; /* reservations local to this process instead of shared in RADOS */
	bool bs_given;
	uint32_t bs;
	uint32_t flags;
	uint8_t pbe; /* logical blocks per physical block exponent */
	/* fault=SPEC wraps the backend in the fault-injection backend (backend_fault.h);
	 * its close is tracked, so that a context the library abandoned is freed at exit. */
	char fault[128];
	void *fault_ctx;
	struct scsitgt_backend_ops fault_ops;
	bool fault_closed;
};

struct app {
	uv_loop_t loop;
	uv_signal_t sigint;
	uv_signal_t sigterm;
	uv_signal_t sigusr1;
	struct scsitgt_engine *engine;
	/* --alua-group: this process is a gateway of an RBD image. */
	struct scsitgt_rbd_gateway *gateway;
	bool verbose;
	bool stopping;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: minitarget [--portal HOST:PORT]... [--iqn NAME]\n"
		"                  [--lun N:ram|null:SIZE[,thin][,ro][,removable][,bs=N][,pbe=N]\n"
		"                         [,spc4]]...\n"
		"                  [--lun N:file:PATH[,thin][,ro][,removable][,bs=N][,pbe=N][,spc4]]...\n"
		"                  [--lun N:rbd:POOL/IMAGE[,ns=NS][,id=CLIENT][,conf=FILE]\n"
		"                         [,timeout=S][,nocache][,nopr][,ro][,bs=N]]...\n"
		"                  [--chap USER:SECRET] [--mutual-chap USER:SECRET]\n"
		"                  [--chap-algorithms md5,sha1,sha256,sha3-256]\n"
		"                  [--initiator NAME]... [--header-digest] [--data-digest] [-v]\n"
		"                  [--pr-dir DIR] [--login-timeout MS] [--alua STATE]\n"
		"                  [--nop-interval MS]\n"
		"                  [--iser-portal HOST:PORT]... [--workers N|auto]\n"
		"                  [--srp-portal HOST:PORT]... [--srp-guid 0xHEX]\n"
		"                  [--acl-address CIDR]... [--initiator-address NAME=CIDR]...\n"
		"                  [--map NAME:LUN | *:LUN]... [--max-sessions N]\n"
		"                  [--max-lun-commands N] [--max-initiator-conns N]\n"
		"                  [--queue-depth N] [--discovery-chap USER:SECRET]\n"
		"                  [--discovery-mutual-chap USER:SECRET]\n"
		"                  [--drain-timeout MS] [--tmf-timeout MS] [--logout-timeout MS]\n"
		"                  [--tpgt N] [--alua-group G [--alua-peer G[:PORT]]...\n"
		"                   [--alua-preferred] [--gw-holddown MS] [--gw-probe MS]]\n"
		"  LUN flag fault=SPEC injects faults, e.g. fault=hang@write, fault=error=EIO@read:every=3\n"
		"  (rules joined by ';', see backend_fault.h).\n");
}

static void log_cb(void *arg, enum scsitgt_log_level level, const char *subsystem, const char *fmt,
		   va_list ap)
{
	static const char *names[] = { "", "", "", "error", "warning", "notice", "info", "debug" };

	(void)arg;
	fprintf(stderr, "minitarget: %s: %s: ", names[level & 7], subsystem);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	int shift = 0;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -1;
	switch (*end) {
	case 'k':
	case 'K':
		shift = 10;
		end++;
		break;
	case 'm':
	case 'M':
		shift = 20;
		end++;
		break;
	case 'g':
	case 'G':
		shift = 30;
		end++;
		break;
	case 't':
	case 'T':
		shift = 40;
		end++;
		break;
	default:
		break;
	}
	if (*end != '\0' || v == 0 || v > (UINT64_MAX >> shift))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

static int parse_lun(const char *arg, struct lun_spec *l)
{
	char buf[256], *save = NULL, *tok, *p;
	char *end;

	if (strlen(arg) >= sizeof(buf))
		return -1;
	strcpy(buf, arg);
	memset(l, 0, sizeof(*l));
	l->bs = 512;
	l->rbd_timeout = -1;
	tok = strtok_r(buf, ",", &save);
	if (tok == NULL)
		return -1;
	/* N:type:SIZE */
	l->id = strtoull(tok, &end, 10);
	if (end == tok || *end != ':')
		return -1;
	p = end + 1;
	if (strncmp(p, "ram:", 4) == 0) {
		l->kind = LUN_RAM;
		p += 4;
	} else if (strncmp(p, "null:", 5) == 0) {
		l->kind = LUN_NULL;
		p += 5;
	} else if (strncmp(p, "file:", 5) == 0) {
		/* The size comes from the file or device. Paths cannot contain commas here. */
		l->kind = LUN_FILE;
		p += 5;
		if (*p == '\0' || strlen(p) >= sizeof(l->path))
			return -1;
		strcpy(l->path, p);
	} else if (strncmp(p, "rbd:", 4) == 0) {
		/* POOL/IMAGE: both non-empty, one slash. */
		const char *slash;

		l->kind = LUN_RBD;
		p += 4;
		slash = strchr(p, '/');
		if (slash == NULL || slash == p || slash[1] == '\0' || strchr(slash + 1, '/') ||
		    strlen(p) >= sizeof(l->path))
			return -1;
		strcpy(l->path, p);
	} else {
		return -1;
	}
	if (l->kind != LUN_FILE && l->kind != LUN_RBD && parse_size(p, &l->size) < 0)
		return -1;
	while ((tok = strtok_r(NULL, ",", &save)) != NULL) {
		if (strcmp(tok, "thin") == 0)
			l->flags |= SCSITGT_LUN_THIN;
		else if (strcmp(tok, "ro") == 0)
			l->flags |= SCSITGT_LUN_READ_ONLY;
		else if (strcmp(tok, "removable") == 0)
			l->flags |= SCSITGT_LUN_REMOVABLE;
		else if (strcmp(tok, "spc4") == 0)
			l->flags |= SCSITGT_LUN_CLAIM_SPC4;
		else if (strncmp(tok, "fault=", 6) == 0) {
			if (tok[6] == '\0' || strlen(tok + 6) >= sizeof(l->fault))
				return -1;
			strcpy(l->fault, tok + 6);
		} else if (l->kind == LUN_RBD && strncmp(tok, "ns=", 3) == 0) {
			if (strlen(tok + 3) >= sizeof(l->rbd_ns))
				return -1;
			strcpy(l->rbd_ns, tok + 3);
		} else if (l->kind == LUN_RBD && strncmp(tok, "id=", 3) == 0) {
			if (tok[3] == '\0' || strlen(tok + 3) >= sizeof(l->rbd_id))
				return -1;
			strcpy(l->rbd_id, tok + 3);
		} else if (l->kind == LUN_RBD && strncmp(tok, "conf=", 5) == 0) {
			if (tok[5] == '\0' || strlen(tok + 5) >= sizeof(l->rbd_conf))
				return -1;
			strcpy(l->rbd_conf, tok + 5);
		} else if (l->kind == LUN_RBD && strncmp(tok, "timeout=", 8) == 0) {
			unsigned long v = strtoul(tok + 8, &end, 10);

			if (end == tok + 8 || *end != '\0' || v > 86400)
				return -1;
			l->rbd_timeout = (long)v;
		} else if (l->kind == LUN_RBD && strcmp(tok, "nocache") == 0)
			l->rbd_nocache = true;
		else if (l->kind == LUN_RBD && strcmp(tok, "nopr") == 0)
			l->rbd_nopr = true;
		else if (strncmp(tok, "pbe=", 4) == 0) {
			unsigned long v = strtoul(tok + 4, &end, 10);

			if (end == tok + 4 || *end != '\0' || v > 8)
				return -1;
			l->pbe = (uint8_t)v;
		} else if (strncmp(tok, "bs=", 3) == 0) {
			l->bs = (uint32_t)strtoul(tok + 3, NULL, 10);
			l->bs_given = true;
		} else
			return -1;
	}
	if (l->bs != 512 && l->bs != 4096)
		return -1;
	if (l->kind != LUN_FILE && l->kind != LUN_RBD && l->size < l->bs)
		return -1;
	return 0;
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

static int rbd_open_lun(uv_loop_t *loop, const struct lun_spec *l, void **bctx)
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

/* "HOST:PORT", "[V6]:PORT" or "HOST" (port 3260). */
static int parse_portal(const char *arg, char *host, size_t hsize, uint16_t *port)
{
	const char *colon;
	unsigned long p = 3260;
	size_t hl;

	if (arg[0] == '[') {
		const char *rb = strchr(arg, ']');

		if (rb == NULL)
			return -1;
		hl = (size_t)(rb - arg - 1);
		if (hl == 0 || hl >= hsize)
			return -1;
		memcpy(host, arg + 1, hl);
		host[hl] = '\0';
		colon = rb[1] == ':' ? rb + 1 : NULL;
		if (rb[1] != '\0' && rb[1] != ':')
			return -1;
	} else {
		colon = strrchr(arg, ':');
		hl = colon ? (size_t)(colon - arg) : strlen(arg);
		if (hl == 0 || hl >= hsize)
			return -1;
		memcpy(host, arg, hl);
		host[hl] = '\0';
	}
	if (colon) {
		char *end;

		p = strtoul(colon + 1, &end, 10);
		if (*end != '\0' || end == colon + 1 || p > 65535)
			return -1;
	}
	*port = (uint16_t)p;
	return 0;
}

static int split_cred(const char *arg, char *user, char *secret, size_t size)
{
	const char *c = strchr(arg, ':');

	if (c == NULL || c == arg || (size_t)(c - arg) >= size || strlen(c + 1) >= size)
		return -1;
	memcpy(user, arg, (size_t)(c - arg));
	user[c - arg] = '\0';
	strcpy(secret, c + 1);
	return 0;
}

/* fault-wrapped LUNs, whose close() minitarget watches. */
/* "md5,sha1,sha256,sha3-256" (any subset) to SCSITGT_ISCSI_CHAP_* bits; 0 when malformed. */
static uint32_t parse_chap_algs(const char *arg)
{
	static const struct {
		const char *name;
		uint32_t bit;
	} algs[] = {
		{ "md5", SCSITGT_ISCSI_CHAP_MD5 },
		{ "sha1", SCSITGT_ISCSI_CHAP_SHA1 },
		{ "sha256", SCSITGT_ISCSI_CHAP_SHA256 },
		{ "sha3-256", SCSITGT_ISCSI_CHAP_SHA3_256 },
	};
	uint32_t mask = 0;

	while (*arg) {
		size_t n = strcspn(arg, ","), i;

		for (i = 0; i < sizeof(algs) / sizeof(algs[0]); i++)
			if (strlen(algs[i].name) == n && strncmp(arg, algs[i].name, n) == 0)
				break;
		if (i == sizeof(algs) / sizeof(algs[0]))
			return 0;
		mask |= algs[i].bit;
		arg += n + (arg[n] == ',');
	}
	return mask;
}

static struct lun_spec *g_luns;
static size_t g_nluns;

static void fault_tracked_close(void *bctx, scsitgt_done_cb cb, void *cb_arg)
{
	for (size_t i = 0; i < g_nluns; i++)
		if (g_luns[i].fault_ctx == bctx)
			g_luns[i].fault_closed = true;
	scsitgt_backend_fault_ops(bctx)->close(bctx, cb, cb_arg);
}

/* After shutdown: a fault context the engine gave up on (it held ios) is the host's. */
static void fault_cleanup(void)
{
	for (size_t i = 0; i < g_nluns; i++) {
		if (g_luns[i].fault_ctx == NULL || g_luns[i].fault_closed)
			continue;
		scsitgt_backend_fault_release(g_luns[i].fault_ctx, 0, -EIO);
		if (scsitgt_backend_fault_destroy(g_luns[i].fault_ctx) == 0)
			g_luns[i].fault_ctx = NULL;
	}
}

static void engine_destroyed(void *arg, int status)
{
	struct app *app = arg;

	(void)status;
	app->engine = NULL;
	uv_close((uv_handle_t *)&app->sigint, NULL);
	uv_close((uv_handle_t *)&app->sigterm, NULL);
	uv_close((uv_handle_t *)&app->sigusr1, NULL);
}

/* SIGUSR1: the fault backends' counters, so that a test can wait for a held io. */
static void on_sigusr1(uv_signal_t *h, int signum)
{
	(void)h;
	(void)signum;
	for (size_t i = 0; i < g_nluns; i++) {
		struct scsitgt_fault_stats st = { .size = sizeof(st) };

		if (g_luns[i].fault_ctx == NULL || g_luns[i].fault_closed ||
		    scsitgt_backend_fault_get_stats(g_luns[i].fault_ctx, &st) < 0)
			continue;
		printf("fault lun %llu: submitted %llu passed %llu delayed %llu hung %llu held %u "
		       "delaying %u\n",
		       (unsigned long long)g_luns[i].id, (unsigned long long)st.submitted,
		       (unsigned long long)st.passed, (unsigned long long)st.delayed,
		       (unsigned long long)st.hung, st.held, st.delaying);
	}
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

/* "G" or "G:PORT", each 1..65535. */
static int parse_peer(const char *arg, struct scsitgt_rbd_gateway_peer *peer)
{
	char *end;
	unsigned long g = strtoul(arg, &end, 10), port;

	if (end == arg || g == 0 || g > 65535)
		return -1;
	port = g;
	if (*end == ':') {
		const char *p = end + 1;

		port = strtoul(p, &end, 10);
		if (end == p || port == 0 || port > 65535)
			return -1;
	}
	if (*end != '\0')
		return -1;
	peer->group_id = (uint16_t)g;
	peer->rel_port_id = (uint16_t)port;
	return 0;
}

int main(int argc, char **argv)
{
	struct app app;
	const char *iqn = "iqn.2026-11.org.libscsitgt:minitarget";
	const char *portals[MAX_ITEMS], *initiators[MAX_ITEMS];
	/* iSER portals (scsitgt_iser_portal_create(): needs rdma-core and an RDMA device). */
	const char *iser_portals[MAX_ITEMS];
	size_t niser = 0;
	/* SRP target ports (scsitgt_srp_portal_create()); the GUID names both halves of the
	 * target port identifier (id_ext and ioc_guid). */
	const char *srp_portals[MAX_ITEMS];
	size_t nsrp = 0;
	uint64_t srp_guid = 0x0002c90300abcdefull;
	struct lun_spec luns[MAX_ITEMS];
	size_t nportals = 0, nluns = 0, ninit = 0;
	const char *chap = NULL, *mutual = NULL;
	/* Persistent reservation state files, "<DIR>/lun<N>.pr" (the default file store). */
	const char *pr_dir = NULL;
	/* ALUA: one target port group (id 1, the portals' TPGT 1) in this state (SPC-5 Table 241
	 * value), implicit and explicit; -1: ALUA off. */
	long alua_state = -1;
	/* Portal group tag of the portals; RBD gateway: its group, peers and timings. */
	long tpgt = 1, alua_group = 0, gw_holddown = -1, gw_probe = -1;
	struct scsitgt_rbd_gateway_peer gw_peers[15];
	size_t ngw_peers = 0;
	bool gw_preferred = false;
	void *gw_rbd = NULL;
	bool hdig = false, ddig = false;
	/* CHAP algorithms allowed, SCSITGT_ISCSI_CHAP_* bits; 0: the library's default. */
	uint32_t chap_algs = 0;
	long login_timeout = -1; /* ms; -1: the library's default */
	long nop_interval = -1;	 /* ms; -1: the library's default, 0: no NOP-In pings */
	int workers = 0;	 /* worker threads (engine opts), SCSITGT_ENGINE_WORKERS_AUTO */
	/* access control and limits; -1: the library's default. */
	const char *acl_addrs[MAX_ITEMS], *init_addrs[MAX_ITEMS], *maps[MAX_ITEMS];
	size_t nacl_addrs = 0, ninit_addrs = 0, nmaps = 0;
	long max_sessions = -1, max_lun_cmds = -1, max_init_conns = -1, queue_depth = -1;
	const char *disc_chap = NULL, *disc_mutual = NULL;
	/* bounded teardown (ms; -1: the library's defaults). */
	long drain_timeout = -1, tmf_timeout = -1, logout_timeout = -1;
	struct scsitgt_engine_opts eo;
	struct scsitgt_target_opts to;
	struct scsitgt_iscsi_params ip;
	struct scsitgt_target *tgt;
	char url_host[80] = "";
	uint16_t url_port = 0;
	int rc;

	memset(&app, 0, sizeof(app));
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			usage(stdout);
			return 0;
		} else if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0) {
			app.verbose = true;
		} else if (strcmp(a, "--header-digest") == 0) {
			hdig = true;
		} else if (strcmp(a, "--data-digest") == 0) {
			ddig = true;
		} else if (v && strcmp(a, "--portal") == 0 && nportals < MAX_ITEMS) {
			portals[nportals++] = v;
			i++;
		} else if (v && strcmp(a, "--iser-portal") == 0 && niser < MAX_ITEMS) {
			iser_portals[niser++] = v;
			i++;
		} else if (v && strcmp(a, "--srp-portal") == 0 && nsrp < MAX_ITEMS) {
			srp_portals[nsrp++] = v;
			i++;
		} else if (v && strcmp(a, "--srp-guid") == 0) {
			char *end;

			srp_guid = strtoull(v, &end, 16);
			if (*end || end == v || srp_guid == 0) {
				fprintf(stderr, "minitarget: bad --srp-guid '%s'\n", v);
				return 2;
			}
			i++;
		} else if (v && strcmp(a, "--iqn") == 0) {
			iqn = v;
			i++;
		} else if (v && strcmp(a, "--lun") == 0 && nluns < MAX_ITEMS) {
			if (parse_lun(v, &luns[nluns]) < 0) {
				fprintf(stderr, "minitarget: bad --lun '%s'\n", v);
				return 2;
			}
			nluns++;
			i++;
		} else if (v && strcmp(a, "--chap") == 0) {
			chap = v;
			i++;
		} else if (v && strcmp(a, "--mutual-chap") == 0) {
			mutual = v;
			i++;
		} else if (v && strcmp(a, "--chap-algorithms") == 0) {
			chap_algs = parse_chap_algs(v);
			if (chap_algs == 0) {
				fprintf(stderr, "minitarget: bad --chap-algorithms '%s'\n", v);
				return 2;
			}
			i++;
		} else if (v &&
			   (strcmp(a, "--drain-timeout") == 0 || strcmp(a, "--tmf-timeout") == 0 ||
			    strcmp(a, "--logout-timeout") == 0)) {
			char *end;
			long n = strtol(v, &end, 10);

			if (*end || end == v || n < 1 || n > 3600000) {
				fprintf(stderr, "minitarget: bad %s '%s'\n", a, v);
				return 2;
			}
			if (strcmp(a, "--drain-timeout") == 0)
				drain_timeout = n;
			else if (strcmp(a, "--tmf-timeout") == 0)
				tmf_timeout = n;
			else
				logout_timeout = n;
			i++;
		} else if (v && strcmp(a, "--login-timeout") == 0) {
			char *end;

			login_timeout = strtol(v, &end, 10);
			if (*end || login_timeout < 0 || login_timeout > 3600000) {
				fprintf(stderr, "minitarget: bad --login-timeout '%s'\n", v);
				return 2;
			}
			i++;
		} else if (v && strcmp(a, "--nop-interval") == 0) {
			char *end;

			nop_interval = strtol(v, &end, 10);
			if (*end || nop_interval < 0 || nop_interval > 3600000) {
				fprintf(stderr, "minitarget: bad --nop-interval '%s'\n", v);
				return 2;
			}
			i++;
		} else if (v && strcmp(a, "--alua") == 0) {
			char *end;

			alua_state = strtol(v, &end, 0);
			if (*end || alua_state < 0 || alua_state > 15) {
				fprintf(stderr, "minitarget: bad --alua '%s'\n", v);
				return 2;
			}
			i++;
		} else if (v && (strcmp(a, "--tpgt") == 0 || strcmp(a, "--alua-group") == 0 ||
				 strcmp(a, "--gw-holddown") == 0 || strcmp(a, "--gw-probe") == 0)) {
			char *end;
			long n = strtol(v, &end, 10);
			bool ms = a[2] == 'g';

			if (*end || end == v || n < (ms ? 0 : 1) || n > (ms ? 3600000 : 65535)) {
				fprintf(stderr, "minitarget: bad %s '%s'\n", a, v);
				return 2;
			}
			if (strcmp(a, "--tpgt") == 0)
				tpgt = n;
			else if (strcmp(a, "--alua-group") == 0)
				alua_group = n;
			else if (strcmp(a, "--gw-holddown") == 0)
				gw_holddown = n;
			else
				gw_probe = n;
			i++;
		} else if (v && strcmp(a, "--alua-peer") == 0) {
			if (ngw_peers == sizeof(gw_peers) / sizeof(gw_peers[0]) ||
			    parse_peer(v, &gw_peers[ngw_peers]) < 0) {
				fprintf(stderr, "minitarget: bad --alua-peer '%s'\n", v);
				return 2;
			}
			ngw_peers++;
			i++;
		} else if (strcmp(a, "--alua-preferred") == 0) {
			gw_preferred = true;
		} else if (v && strcmp(a, "--workers") == 0) {
			char *end;
			long n = strtol(v, &end, 10);

			if (strcmp(v, "auto") == 0) {
				workers = SCSITGT_ENGINE_WORKERS_AUTO;
			} else if (*end || end == v || n < 0 || n > SCSITGT_ENGINE_WORKERS_MAX) {
				fprintf(stderr, "minitarget: bad --workers '%s'\n", v);
				return 2;
			} else {
				workers = (int)n;
			}
			i++;
		} else if (v && strcmp(a, "--pr-dir") == 0) {
			pr_dir = v;
			i++;
		} else if (v && strcmp(a, "--initiator") == 0 && ninit < MAX_ITEMS) {
			initiators[ninit++] = v;
			i++;
		} else if (v && strcmp(a, "--acl-address") == 0 && nacl_addrs < MAX_ITEMS) {
			acl_addrs[nacl_addrs++] = v;
			i++;
		} else if (v && strcmp(a, "--initiator-address") == 0 && ninit_addrs < MAX_ITEMS) {
			init_addrs[ninit_addrs++] = v;
			i++;
		} else if (v && strcmp(a, "--discovery-chap") == 0) {
			disc_chap = v;
			i++;
		} else if (v && strcmp(a, "--discovery-mutual-chap") == 0) {
			disc_mutual = v;
			i++;
		} else if (v && strcmp(a, "--map") == 0 && nmaps < MAX_ITEMS) {
			maps[nmaps++] = v;
			i++;
		} else if (v && (strcmp(a, "--max-sessions") == 0 ||
				 strcmp(a, "--max-lun-commands") == 0 ||
				 strcmp(a, "--max-initiator-conns") == 0 ||
				 strcmp(a, "--queue-depth") == 0)) {
			char *end;
			long n = strtol(v, &end, 10);

			if (*end || end == v || n < 0 || n > 1000000) {
				fprintf(stderr, "minitarget: bad %s '%s'\n", a, v);
				return 2;
			}
			if (strcmp(a, "--max-sessions") == 0)
				max_sessions = n;
			else if (strcmp(a, "--max-lun-commands") == 0)
				max_lun_cmds = n;
			else if (strcmp(a, "--max-initiator-conns") == 0)
				max_init_conns = n;
			else
				queue_depth = n;
			i++;
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (nportals == 0)
		portals[nportals++] = "127.0.0.1:3260";
	if (nluns == 0) {
		memset(&luns[0], 0, sizeof(luns[0]));
		luns[0].size = 1ull << 30;
		luns[0].bs = 512;
		nluns = 1;
	}

	if (uv_loop_init(&app.loop) != 0)
		return 1;
	scsitgt_engine_opts_init(&eo, sizeof(eo));
	eo.log_cb = log_cb;
	eo.log_level = app.verbose ? SCSITGT_LOG_DEBUG : SCSITGT_LOG_NOTICE;
	eo.workers = workers;
	rc = scsitgt_engine_create(&app.engine, &app.loop, &eo);
	if (rc < 0) {
		fprintf(stderr, "minitarget: engine: %s\n", scsitgt_strerror(rc));
		return 1;
	}
	if (drain_timeout > 0)
		scsitgt_engine_set_drain_timeout(app.engine, (uint32_t)drain_timeout);
	if (tmf_timeout > 0)
		scsitgt_engine_set_tmf_timeout(app.engine, (uint32_t)tmf_timeout);
	g_luns = luns;
	g_nluns = nluns;
	scsitgt_target_opts_init(&to, sizeof(to));
	to.name = iqn;
	to.alias = "minitarget";
	if (max_sessions >= 0)
		to.max_sessions = (uint32_t)max_sessions;
	if (max_lun_cmds >= 0)
		to.max_lun_commands = (uint32_t)max_lun_cmds;
	rc = scsitgt_target_create(&tgt, app.engine, &to);
	if (rc < 0) {
		fprintf(stderr, "minitarget: target '%s': %s\n", iqn, scsitgt_strerror(rc));
		goto fail;
	}
	scsitgt_iscsi_params_init(&ip, sizeof(ip));
	if (hdig)
		ip.header_digest = SCSITGT_ISCSI_DIGEST_CRC32C;
	if (ddig)
		ip.data_digest = SCSITGT_ISCSI_DIGEST_CRC32C;
	if (chap_algs)
		ip.chap_algorithms = chap_algs;
	if (login_timeout >= 0)
		ip.login_timeout_ms = (uint32_t)login_timeout;
	if (nop_interval >= 0)
		ip.nop_interval_ms = (uint32_t)nop_interval;
	if (queue_depth >= 0)
		ip.queue_depth = (uint32_t)queue_depth;
	if (logout_timeout > 0)
		ip.logout_timeout_ms = (uint32_t)logout_timeout;
	rc = scsitgt_iscsi_target_set_params(tgt, &ip);
	for (size_t i = 0; rc == 0 && i < ninit; i++)
		rc = scsitgt_target_add_initiator(tgt, initiators[i]);
	for (size_t i = 0; rc == 0 && i < nacl_addrs; i++)
		rc = scsitgt_target_add_address(tgt, acl_addrs[i]);
	for (size_t i = 0; rc == 0 && i < ninit_addrs; i++) {
		char name[256];
		const char *eq = strrchr(init_addrs[i], '=');
		size_t n = eq ? (size_t)(eq - init_addrs[i]) : 0;

		rc = -EINVAL;
		if (n > 0 && n < sizeof(name)) {
			memcpy(name, init_addrs[i], n);
			name[n] = '\0';
			rc = scsitgt_target_add_initiator_address(tgt, name, eq + 1);
		}
	}
	for (size_t i = 0; rc == 0 && i < nmaps; i++) {
		/* NAME:LUN with the LUN after the last ':' (iSCSI names hold colons). */
		char name[256], *end;
		const char *colon = strrchr(maps[i], ':');
		size_t n = colon ? (size_t)(colon - maps[i]) : 0;
		unsigned long long id = colon ? strtoull(colon + 1, &end, 10) : 0;

		rc = -EINVAL;
		if (n > 0 && n < sizeof(name) && colon[1] && *end == '\0') {
			memcpy(name, maps[i], n);
			name[n] = '\0';
			rc = scsitgt_target_map_lun(tgt, strcmp(name, "*") == 0 ? NULL : name, id);
		}
	}
	if (rc == 0 && chap) {
		char u[512], s[512];

		rc = split_cred(chap, u, s, sizeof(u)) < 0 ?
			     -EINVAL :
			     scsitgt_iscsi_target_set_chap(tgt, u, s);
	}
	if (rc == 0 && disc_chap) {
		char u[512], s[512];

		rc = split_cred(disc_chap, u, s, sizeof(u)) < 0 ?
			     -EINVAL :
			     scsitgt_iscsi_engine_set_discovery_chap(app.engine, u, s);
	}
	if (rc == 0 && disc_mutual) {
		char u[512], s[512];

		rc = split_cred(disc_mutual, u, s, sizeof(u)) < 0 ?
			     -EINVAL :
			     scsitgt_iscsi_engine_set_discovery_mutual_chap(app.engine, u, s);
	}
	if (rc == 0 && mutual) {
		char u[512], s[512];

		rc = split_cred(mutual, u, s, sizeof(u)) < 0 ?
			     -EINVAL :
			     scsitgt_iscsi_target_set_mutual_chap(tgt, u, s);
	}
	if (rc < 0) {
		fprintf(stderr, "minitarget: target settings: %s\n", scsitgt_strerror(rc));
		goto fail;
	}
	for (size_t i = 0; i < nluns; i++) {
		const struct scsitgt_backend_ops *ops = NULL;
		struct scsitgt_lun_opts lo;
		struct scsitgt_lun *lun;
		void *bctx = NULL;
		void *rbd_ctx = NULL; /* the RBD context (bctx may be a fault wrapper around it) */
		char serial[40];

		switch (luns[i].kind) {
		case LUN_NULL:
			ops = scsitgt_backend_null_ops();
			rc = scsitgt_backend_null_create(&bctx);
			break;
		case LUN_RAM:
			ops = scsitgt_backend_ram_ops();
			rc = scsitgt_backend_ram_create(&bctx);
			break;
		case LUN_FILE: {
			struct scsitgt_backend_aio_opts ao;

			scsitgt_backend_aio_opts_init(&ao, sizeof(ao));
			ao.loop = &app.loop;
			ao.path = luns[i].path;
			ao.read_only = (luns[i].flags & SCSITGT_LUN_READ_ONLY) != 0;
			ao.log_cb = log_cb;
			ops = scsitgt_backend_aio_ops();
			rc = scsitgt_backend_aio_create(&bctx, &ao);
			break;
		}
		case LUN_RBD:
			ops = scsitgt_backend_rbd_ops();
			rc = ops ? rbd_open_lun(&app.loop, &luns[i], &bctx) : -ENOTSUP;
			rbd_ctx = rc == 0 ? bctx : NULL;
			break;
		}
		if (rc < 0) {
			fprintf(stderr, "minitarget: backend: %s\n", scsitgt_strerror(rc));
			goto fail;
		}
		if (luns[i].fault[0]) {
			void *inner = bctx;

			rc = scsitgt_backend_fault_create(&bctx, &app.loop, ops, inner);
			if (rc == 0) {
				rc = scsitgt_backend_fault_add_spec(bctx, luns[i].fault);
				luns[i].fault_ops = *scsitgt_backend_fault_ops(bctx);
				luns[i].fault_ops.close = fault_tracked_close;
				luns[i].fault_ctx = bctx;
				ops = &luns[i].fault_ops;
			} else {
				ops->close(inner, NULL, NULL);
			}
			if (rc < 0) {
				if (luns[i].fault_ctx)
					scsitgt_backend_fault_destroy(bctx);
				luns[i].fault_ctx = NULL;
				fprintf(stderr, "minitarget: LUN %llu: fault '%s': %s\n",
					(unsigned long long)luns[i].id, luns[i].fault,
					scsitgt_strerror(rc));
				goto fail;
			}
		}
		scsitgt_lun_opts_init(&lo, sizeof(lo));
		lo.id = luns[i].id;
		/* Files and devices report their own size, and devices their block size. */
		lo.block_size = luns[i].kind == LUN_FILE && !luns[i].bs_given ? 0 : luns[i].bs;
		lo.num_blocks = luns[i].kind == LUN_FILE || luns[i].kind == LUN_RBD ?
					0 :
					luns[i].size / luns[i].bs;
		if (rbd_ctx) {
			/* One device for multipath, whichever gateway exports the image. */
			scsitgt_backend_rbd_get_ident(rbd_ctx, &lo.naa, serial, sizeof(serial));
			lo.serial = serial;
			/* WCE on when librbd caches writes (SBC-4 §4.14): the initiator flushes. */
			luns[i].flags |= SCSITGT_LUN_WRITE_CACHE;
		}
		lo.flags = luns[i].flags;
		lo.physical_block_exponent = luns[i].pbe;
		lo.backend = ops;
		lo.backend_ctx = bctx;
		rc = scsitgt_lun_create(&lun, tgt, &lo);
		if (rc < 0) {
			ops->close(bctx, NULL, NULL);
			fprintf(stderr, "minitarget: LUN %llu: %s\n",
				(unsigned long long)luns[i].id, scsitgt_strerror(rc));
			goto fail;
		}
		if (rbd_ctx)
			scsitgt_backend_rbd_set_lun(rbd_ctx, lun);
		if (rbd_ctx && gw_rbd == NULL)
			gw_rbd = rbd_ctx;
		if (rbd_ctx && !luns[i].rbd_nopr) {
			rc = rbd_share_pr(&app.loop, rbd_ctx);
			if (rc < 0) {
				fprintf(stderr, "minitarget: LUN %llu: shared reservations: %s\n",
					(unsigned long long)luns[i].id, scsitgt_strerror(rc));
				goto fail;
			}
		} else if (pr_dir) {
			char path[4096];

			snprintf(path, sizeof(path), "%s/lun%llu.pr", pr_dir,
				 (unsigned long long)luns[i].id);
			rc = scsitgt_lun_use_pr_file(lun, path);
			if (rc < 0) {
				fprintf(stderr, "minitarget: PR file %s: %s\n", path,
					scsitgt_strerror(rc));
				goto fail;
			}
		}
	}
	if (alua_state >= 0) {
		struct scsitgt_alua_opts ao;

		scsitgt_alua_opts_init(&ao, sizeof(ao));
		ao.modes = SCSITGT_ALUA_IMPLICIT | SCSITGT_ALUA_EXPLICIT;
		rc = scsitgt_alua_configure(tgt, &ao);
		if (rc == 0)
			rc = scsitgt_alua_group_create(tgt, 1, (enum scsitgt_alua_state)alua_state);
		if (rc == 0)
			rc = scsitgt_alua_group_add_port(tgt, 1, 1);
		if (rc < 0) {
			fprintf(stderr, "minitarget: ALUA: %s\n", scsitgt_strerror(rc));
			goto fail;
		}
	}
	if (alua_group > 0) {
		struct scsitgt_rbd_gateway_opts go;
		uint16_t port = (uint16_t)tpgt;

		if (gw_rbd == NULL || alua_state >= 0) {
			fprintf(stderr,
				"minitarget: --alua-group needs an rbd LUN and no --alua\n");
			rc = -EINVAL;
			goto fail;
		}
		scsitgt_rbd_gateway_opts_init(&go, sizeof(go));
		go.group_id = (uint16_t)alua_group;
		go.rel_port_ids = &port;
		go.nrel_port_ids = 1;
		go.peers = gw_peers;
		go.npeers = ngw_peers;
		go.preferred = gw_preferred;
		if (gw_holddown >= 0)
			go.holddown_ms = (uint32_t)gw_holddown;
		if (gw_probe > 0)
			go.probe_interval_ms = (uint32_t)gw_probe;
		rc = scsitgt_rbd_gateway_create(&app.gateway, tgt, gw_rbd, &go);
		if (rc < 0) {
			fprintf(stderr, "minitarget: RBD gateway: %s\n", scsitgt_strerror(rc));
			goto fail;
		}
	}
	for (size_t i = 0; i < nportals; i++) {
		struct scsitgt_portal_opts po;
		struct scsitgt_portal *portal;
		char host[64];

		if (parse_portal(portals[i], host, sizeof(host), &po.port) < 0) {
			fprintf(stderr, "minitarget: bad --portal '%s'\n", portals[i]);
			rc = -EINVAL;
			goto fail;
		}
		{
			uint16_t port = po.port;

			scsitgt_portal_opts_init(&po, sizeof(po));
			po.port = port;
		}
		po.address = host;
		po.tpgt = (uint16_t)tpgt;
		if (max_init_conns >= 0)
			po.max_connections_per_initiator = (uint32_t)max_init_conns;
		rc = scsitgt_portal_create(&portal, app.engine, &po);
		if (rc < 0) {
			fprintf(stderr, "minitarget: cannot listen on %s: %s\n", portals[i],
				scsitgt_strerror(rc));
			goto fail;
		}
		if (i == 0) {
			snprintf(url_host, sizeof(url_host), strchr(host, ':') ? "[%s]" : "%s",
				 host);
			url_port = scsitgt_portal_get_port(portal);
		}
	}

	for (size_t i = 0; i < niser; i++) {
		struct scsitgt_portal_opts po;
		struct scsitgt_portal *portal;
		uint16_t port;
		char host[64];

		if (parse_portal(iser_portals[i], host, sizeof(host), &port) < 0) {
			fprintf(stderr, "minitarget: bad --iser-portal '%s'\n", iser_portals[i]);
			rc = -EINVAL;
			goto fail;
		}
		scsitgt_portal_opts_init(&po, sizeof(po));
		po.address = host;
		po.port = port;
		po.tpgt = (uint16_t)tpgt;
		if (max_init_conns >= 0)
			po.max_connections_per_initiator = (uint32_t)max_init_conns;
		rc = scsitgt_iser_portal_create(&portal, app.engine, &po);
		if (rc < 0) {
			fprintf(stderr, "minitarget: cannot listen (iSER) on %s: %s\n",
				iser_portals[i], scsitgt_strerror(rc));
			goto fail;
		}
	}

	for (size_t i = 0; i < nsrp; i++) {
		struct scsitgt_srp_portal_opts so;
		struct scsitgt_srp_portal *sp;
		uint16_t port;
		char host[64];

		if (parse_portal(srp_portals[i], host, sizeof(host), &port) < 0) {
			fprintf(stderr, "minitarget: bad --srp-portal '%s'\n", srp_portals[i]);
			rc = -EINVAL;
			goto fail;
		}
		scsitgt_srp_portal_opts_init(&so, sizeof(so));
		so.address = host;
		so.port = port;
		so.id_ext = srp_guid;
		so.ioc_guid = srp_guid;
		rc = scsitgt_srp_portal_create(&sp, tgt, &so);
		if (rc < 0) {
			fprintf(stderr, "minitarget: cannot listen (SRP) on %s: %s\n",
				srp_portals[i], scsitgt_strerror(rc));
			goto fail;
		}
		printf("srp://%s:%u id_ext=0x%016" PRIx64 " ioc_guid=0x%016" PRIx64 "\n", host,
		       scsitgt_srp_portal_get_port(sp), srp_guid, srp_guid);
	}

	app.sigint.data = &app;
	app.sigterm.data = &app;
	uv_signal_init(&app.loop, &app.sigint);
	uv_signal_init(&app.loop, &app.sigterm);
	uv_signal_start(&app.sigint, on_signal, SIGINT);
	uv_signal_start(&app.sigterm, on_signal, SIGTERM);
	uv_signal_init(&app.loop, &app.sigusr1);
	uv_signal_start(&app.sigusr1, on_sigusr1, SIGUSR1);
	signal(SIGPIPE, SIG_IGN);

	for (size_t i = 0; i < nluns; i++)
		printf("iscsi://%s:%u/%s/%llu\n", url_host, url_port, iqn,
		       (unsigned long long)luns[i].id);
	fflush(stdout);

	uv_run(&app.loop, UV_RUN_DEFAULT);
	fault_cleanup();
	rc = uv_loop_close(&app.loop);
	if (rc != 0) {
		fprintf(stderr, "minitarget: loop still has handles at exit\n");
		return 1;
	}
	return 0;

fail:
	if (app.gateway)
		scsitgt_rbd_gateway_destroy(app.gateway, NULL, NULL);
	scsitgt_engine_destroy(app.engine, NULL, NULL);
	uv_run(&app.loop, UV_RUN_DEFAULT);
	uv_loop_close(&app.loop);
	return rc == -EADDRINUSE ? 3 : 1;
}
