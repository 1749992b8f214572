/* SPDX-License-Identifier: MIT */
/*
 * A minimal iSER target for the guest test (tests/vm/iser.sh), until minitarget grows an
 * --iser-portal option: one target, one LUN on a file (aio backend) or in RAM, one iSER portal
 * and optionally a TCP portal. Stops on SIGINT/SIGTERM.
 *
 *   iser_target --iser HOST:PORT [--tcp HOST:PORT] --iqn IQN (--file PATH | --ram MIB) [-v]
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "libscsitgt/backend.h"
#include "libscsitgt/backend_aio.h"
#include "libscsitgt/engine.h"
#include "libscsitgt/iscsi.h"
#include "libscsitgt/lun.h"
#include "libscsitgt/target.h"

static uv_loop_t loop;
static struct scsitgt_engine *engine;
static uv_signal_t sigs[2];
static int verbose;

static void log_cb(void *arg, enum scsitgt_log_level level, const char *subsys, const char *fmt,
		   va_list ap)
{
	(void)arg;
	fprintf(stderr, "[%d] %s: ", (int)level, subsys);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

static void destroyed(void *arg, int status)
{
	(void)arg;
	(void)status;
	uv_close((uv_handle_t *)&sigs[0], NULL);
	uv_close((uv_handle_t *)&sigs[1], NULL);
}

static void on_signal(uv_signal_t *h, int signum)
{
	(void)h;
	fprintf(stderr, "iser_target: signal %d, stopping\n", signum);
	uv_signal_stop(&sigs[0]);
	uv_signal_stop(&sigs[1]);
	scsitgt_engine_destroy(engine, destroyed, NULL);
}

static int split(const char *s, char *host, size_t hsz, uint16_t *port)
{
	const char *c = strrchr(s, ':');

	if (c == NULL || (size_t)(c - s) >= hsz)
		return -EINVAL;
	memcpy(host, s, (size_t)(c - s));
	host[c - s] = 0;
	*port = (uint16_t)atoi(c + 1);
	return 0;
}

int main(int argc, char **argv)
{
	const char *iser = NULL, *tcp = NULL, *iqn = NULL, *file = NULL;
	unsigned long ram_mib = 0;
	struct scsitgt_engine_opts eo;
	struct scsitgt_target_opts to;
	struct scsitgt_lun_opts lo;
	struct scsitgt_target *tgt;
	struct scsitgt_lun *lun;
	struct scsitgt_portal *portal;
	struct scsitgt_portal_opts po;
	const struct scsitgt_backend_ops *ops;
	void *bctx = NULL;
	char host[64];
	int rc;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-v") == 0)
			verbose = 1;
		else if (i + 1 < argc && strcmp(argv[i], "--iser") == 0)
			iser = argv[++i];
		else if (i + 1 < argc && strcmp(argv[i], "--tcp") == 0)
			tcp = argv[++i];
		else if (i + 1 < argc && strcmp(argv[i], "--iqn") == 0)
			iqn = argv[++i];
		else if (i + 1 < argc && strcmp(argv[i], "--file") == 0)
			file = argv[++i];
		else if (i + 1 < argc && strcmp(argv[i], "--ram") == 0)
			ram_mib = strtoul(argv[++i], NULL, 10);
		else {
			fprintf(stderr,
				"usage: %s --iser HOST:PORT [--tcp HOST:PORT] --iqn IQN "
				"(--file PATH | --ram MIB) [-v]\n",
				argv[0]);
			return 2;
		}
	}
	if (iser == NULL || iqn == NULL || (file == NULL && ram_mib == 0)) {
		fprintf(stderr, "iser_target: --iser, --iqn and a LUN are required\n");
		return 2;
	}
	uv_loop_init(&loop);
	scsitgt_engine_opts_init(&eo, sizeof(eo));
	eo.log_cb = log_cb;
	eo.log_level = verbose ? SCSITGT_LOG_DEBUG : SCSITGT_LOG_INFO;
	rc = scsitgt_engine_create(&engine, &loop, &eo);
	if (rc < 0)
		goto fail;
	scsitgt_target_opts_init(&to, sizeof(to));
	to.name = iqn;
	rc = scsitgt_target_create(&tgt, engine, &to);
	if (rc < 0)
		goto fail;
	if (file) {
		struct scsitgt_backend_aio_opts ao;

		scsitgt_backend_aio_opts_init(&ao, sizeof(ao));
		ao.loop = &loop;
		ao.path = file;
		ao.log_cb = log_cb;
		ops = scsitgt_backend_aio_ops();
		rc = scsitgt_backend_aio_create(&bctx, &ao);
	} else {
		ops = scsitgt_backend_ram_ops();
		rc = scsitgt_backend_ram_create(&bctx);
	}
	if (rc < 0)
		goto fail;
	scsitgt_lun_opts_init(&lo, sizeof(lo));
	lo.id = 0;
	lo.block_size = file ? 0 : 512;
	lo.num_blocks = file ? 0 : (uint64_t)ram_mib * 2048u;
	lo.backend = ops;
	lo.backend_ctx = bctx;
	rc = scsitgt_lun_create(&lun, tgt, &lo);
	if (rc < 0)
		goto fail;
	scsitgt_portal_opts_init(&po, sizeof(po));
	if (split(iser, host, sizeof(host), &po.port) < 0) {
		rc = -EINVAL;
		goto fail;
	}
	po.address = host;
	rc = scsitgt_iser_portal_create(&portal, engine, &po);
	if (rc < 0) {
		fprintf(stderr, "iser_target: iSER portal %s: %s\n", iser, scsitgt_strerror(rc));
		goto fail;
	}
	if (tcp) {
		char th[64];

		scsitgt_portal_opts_init(&po, sizeof(po));
		if (split(tcp, th, sizeof(th), &po.port) < 0) {
			rc = -EINVAL;
			goto fail;
		}
		po.address = th;
		rc = scsitgt_portal_create(&portal, engine, &po);
		if (rc < 0)
			goto fail;
	}
	uv_signal_init(&loop, &sigs[0]);
	uv_signal_init(&loop, &sigs[1]);
	uv_signal_start(&sigs[0], on_signal, SIGINT);
	uv_signal_start(&sigs[1], on_signal, SIGTERM);
	signal(SIGPIPE, SIG_IGN);
	printf("iser_target: serving %s on iSER %s\n", iqn, iser);
	fflush(stdout);
	uv_run(&loop, UV_RUN_DEFAULT);
	uv_loop_close(&loop);
	fprintf(stderr, "iser_target: stopped\n");
	return 0;
fail:
	fprintf(stderr, "iser_target: %s\n", scsitgt_strerror(rc));
	return 1;
}
