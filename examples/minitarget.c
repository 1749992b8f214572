/* SPDX-License-Identifier: MIT */
/*
 * minitarget: a small iSCSI target built on libscsitgt.
 *
 *   minitarget [--portal HOST:PORT]... [--iqn NAME]
 *              [--lun N:ram:SIZE[,flag...] | N:null:SIZE[,flag...] | N:file:PATH[,flag...]]...
 *              [--chap USER:SECRET] [--mutual-chap USER:SECRET] [--initiator NAME]...
 *              [--header-digest] [--data-digest] [--login-timeout MS] [-v]
 *
 * SIZE takes K/M/G/T suffixes (powers of 1024); LUN flags: thin, ro, removable, bs=512|4096.
 * Prints one "iscsi://HOST:PORT/IQN/LUN" line per LUN once listening; logs go to stderr.
 * SIGINT or SIGTERM shut it down cleanly (exit status 0).
 * Defaults: one 1 GiB RAM LUN 0 on 127.0.0.1:3260, target iqn.2026-11.org.libscsitgt:minitarget.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <libscsitgt/scsitgt.h>

#define MAX_ITEMS 32

enum lun_kind { LUN_RAM, LUN_NULL, LUN_FILE };

struct lun_spec {
	uint64_t id;
	enum lun_kind kind;
	uint64_t size;     /* ram and null */
	char path[200];    /* file: a regular file or a block device */
	bool bs_given;
	uint32_t bs;
	uint32_t flags;
};

struct app {
	uv_loop_t loop;
	uv_signal_t sigint;
	uv_signal_t sigterm;
	struct scsitgt_engine *engine;
	bool verbose;
	bool stopping;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: minitarget [--portal HOST:PORT]... [--iqn NAME]\n"
		"                  [--lun N:ram|null:SIZE[,thin][,ro][,removable][,bs=N]]...\n"
		"                  [--lun N:file:PATH[,thin][,ro][,removable][,bs=N]]...\n"
		"                  [--chap USER:SECRET] [--mutual-chap USER:SECRET]\n"
		"                  [--initiator NAME]... [--header-digest] [--data-digest] [-v]\n"
		"                  [--pr-dir DIR] [--login-timeout MS] [--alua STATE]\n"
		"                  [--iser-portal HOST:PORT]...\n");
}

static void log_cb(void *arg, enum scsitgt_log_level level, const char *subsystem,
		   const char *fmt, va_list ap)
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
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 't': case 'T': shift = 40; end++; break;
	default: break;
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
	} else {
		return -1;
	}
	if (l->kind != LUN_FILE && parse_size(p, &l->size) < 0)
		return -1;
	while ((tok = strtok_r(NULL, ",", &save)) != NULL) {
		if (strcmp(tok, "thin") == 0)
			l->flags |= SCSITGT_LUN_THIN;
		else if (strcmp(tok, "ro") == 0)
			l->flags |= SCSITGT_LUN_READ_ONLY;
		else if (strcmp(tok, "removable") == 0)
			l->flags |= SCSITGT_LUN_REMOVABLE;
		else if (strncmp(tok, "bs=", 3) == 0) {
			l->bs = (uint32_t)strtoul(tok + 3, NULL, 10);
			l->bs_given = true;
		}
		else
			return -1;
	}
	if (l->bs != 512 && l->bs != 4096)
		return -1;
	if (l->kind != LUN_FILE && l->size < l->bs)
		return -1;
	return 0;
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

static void engine_destroyed(void *arg, int status)
{
	struct app *app = arg;

	(void)status;
	app->engine = NULL;
	uv_close((uv_handle_t *)&app->sigint, NULL);
	uv_close((uv_handle_t *)&app->sigterm, NULL);
}

static void on_signal(uv_signal_t *h, int signum)
{
	struct app *app = h->data;

	if (app->stopping)
		return;
	app->stopping = true;
	fprintf(stderr, "minitarget: signal %d, shutting down\n", signum);
	scsitgt_engine_destroy(app->engine, engine_destroyed, app);
}

int main(int argc, char **argv)
{
	struct app app;
	const char *iqn = "iqn.2026-11.org.libscsitgt:minitarget";
	const char *portals[MAX_ITEMS], *initiators[MAX_ITEMS];
	/* iSER portals (scsitgt_iser_portal_create(): needs rdma-core and an RDMA device). */
	const char *iser_portals[MAX_ITEMS];
	size_t niser = 0;
	struct lun_spec luns[MAX_ITEMS];
	size_t nportals = 0, nluns = 0, ninit = 0;
	const char *chap = NULL, *mutual = NULL;
	/* Persistent reservation state files, "<DIR>/lun<N>.pr" (the default file store). */
	const char *pr_dir = NULL;
	/* ALUA: one target port group (id 1, the portals' TPGT 1) in this state (SPC-5 Table 241
	 * value), implicit and explicit; -1: ALUA off. */
	long alua_state = -1;
	bool hdig = false, ddig = false;
	long login_timeout = -1; /* ms; -1: the library's default */
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
		} else if (v && strcmp(a, "--login-timeout") == 0) {
			char *end;

			login_timeout = strtol(v, &end, 10);
			if (*end || login_timeout < 0 || login_timeout > 3600000) {
				fprintf(stderr, "minitarget: bad --login-timeout '%s'\n", v);
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
		} else if (v && strcmp(a, "--pr-dir") == 0) {
			pr_dir = v;
			i++;
		} else if (v && strcmp(a, "--initiator") == 0 && ninit < MAX_ITEMS) {
			initiators[ninit++] = v;
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
	rc = scsitgt_engine_create(&app.engine, &app.loop, &eo);
	if (rc < 0) {
		fprintf(stderr, "minitarget: engine: %s\n", scsitgt_strerror(rc));
		return 1;
	}
	scsitgt_target_opts_init(&to, sizeof(to));
	to.name = iqn;
	to.alias = "minitarget";
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
	if (login_timeout >= 0)
		ip.login_timeout_ms = (uint32_t)login_timeout;
	rc = scsitgt_iscsi_target_set_params(tgt, &ip);
	for (size_t i = 0; rc == 0 && i < ninit; i++)
		rc = scsitgt_target_add_initiator(tgt, initiators[i]);
	if (rc == 0 && chap) {
		char u[512], s[512];

		rc = split_cred(chap, u, s, sizeof(u)) < 0 ? -EINVAL
							   : scsitgt_iscsi_target_set_chap(tgt, u, s);
	}
	if (rc == 0 && mutual) {
		char u[512], s[512];

		rc = split_cred(mutual, u, s, sizeof(u)) < 0
			     ? -EINVAL
			     : scsitgt_iscsi_target_set_mutual_chap(tgt, u, s);
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
		}
		if (rc < 0) {
			fprintf(stderr, "minitarget: backend: %s\n", scsitgt_strerror(rc));
			goto fail;
		}
		scsitgt_lun_opts_init(&lo, sizeof(lo));
		lo.id = luns[i].id;
		/* Files and devices report their own size, and devices their block size. */
		lo.block_size = luns[i].kind == LUN_FILE && !luns[i].bs_given ? 0 : luns[i].bs;
		lo.num_blocks = luns[i].kind == LUN_FILE ? 0 : luns[i].size / luns[i].bs;
		lo.flags = luns[i].flags;
		lo.backend = ops;
		lo.backend_ctx = bctx;
		rc = scsitgt_lun_create(&lun, tgt, &lo);
		if (rc < 0) {
			ops->close(bctx, NULL, NULL);
			fprintf(stderr, "minitarget: LUN %llu: %s\n",
				(unsigned long long)luns[i].id, scsitgt_strerror(rc));
			goto fail;
		}
		if (pr_dir) {
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
		po.tpgt = 1;
		rc = scsitgt_portal_create(&portal, app.engine, &po);
		if (rc < 0) {
			fprintf(stderr, "minitarget: cannot listen on %s: %s\n", portals[i],
				scsitgt_strerror(rc));
			goto fail;
		}
		if (i == 0) {
			snprintf(url_host, sizeof(url_host), strchr(host, ':') ? "[%s]" : "%s", host);
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
		po.tpgt = 1;
		rc = scsitgt_iser_portal_create(&portal, app.engine, &po);
		if (rc < 0) {
			fprintf(stderr, "minitarget: cannot listen (iSER) on %s: %s\n",
				iser_portals[i], scsitgt_strerror(rc));
			goto fail;
		}
	}

	app.sigint.data = &app;
	app.sigterm.data = &app;
	uv_signal_init(&app.loop, &app.sigint);
	uv_signal_init(&app.loop, &app.sigterm);
	uv_signal_start(&app.sigint, on_signal, SIGINT);
	uv_signal_start(&app.sigterm, on_signal, SIGTERM);
	signal(SIGPIPE, SIG_IGN);

	for (size_t i = 0; i < nluns; i++)
		printf("iscsi://%s:%u/%s/%llu\n", url_host, url_port, iqn,
		       (unsigned long long)luns[i].id);
	fflush(stdout);

	uv_run(&app.loop, UV_RUN_DEFAULT);
	rc = uv_loop_close(&app.loop);
	if (rc != 0) {
		fprintf(stderr, "minitarget: loop still has handles at exit\n");
		return 1;
	}
	return 0;

fail:
	scsitgt_engine_destroy(app.engine, NULL, NULL);
	uv_run(&app.loop, UV_RUN_DEFAULT);
	uv_loop_close(&app.loop);
	return rc == -EADDRINUSE ? 3 : 1;
}
