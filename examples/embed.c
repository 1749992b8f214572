/* The smallest complete host: a 1 GiB RAM LUN served over iSCSI on 127.0.0.1:3260 until
 * Ctrl-C. This file is the README's embedding example; keep the two identical. */
#include <signal.h>

#include <libscsitgt/scsitgt.h>

static void on_sigint(uv_signal_t *sig, int signum)
{
	scsitgt_engine_destroy(sig->data, NULL, NULL); /* async: portals, sessions, LUNs */
	uv_close((uv_handle_t *)sig, NULL);
}

int main(void)
{
	uv_loop_t *loop = uv_default_loop();
	struct scsitgt_engine *engine;
	struct scsitgt_target *tgt;
	struct scsitgt_lun *lun;
	struct scsitgt_portal *portal;
	uv_signal_t sig;
	void *ram;

	struct scsitgt_target_opts t;
	scsitgt_target_opts_init(&t, sizeof(t));
	t.name = "iqn.2026-11.org.example:disk";
	struct scsitgt_lun_opts l;
	scsitgt_lun_opts_init(&l, sizeof(l));
	l.num_blocks = (1ull << 30) / 512;
	l.backend = scsitgt_backend_ram_ops();
	struct scsitgt_portal_opts p;
	scsitgt_portal_opts_init(&p, sizeof(p));
	p.address = "127.0.0.1";

	signal(SIGPIPE, SIG_IGN); /* a dropped initiator must not end the process */
	if (scsitgt_engine_create(&engine, loop, NULL) < 0 ||
	    scsitgt_target_create(&tgt, engine, &t) < 0 || scsitgt_backend_ram_create(&ram) < 0)
		return 1;
	l.backend_ctx = ram;
	if (scsitgt_lun_create(&lun, tgt, &l) < 0 || scsitgt_portal_create(&portal, engine, &p) < 0)
		return 1;
	uv_signal_init(loop, &sig);
	sig.data = engine;
	uv_signal_start(&sig, on_sigint, SIGINT);
	return uv_run(loop, UV_RUN_DEFAULT); /* returns once the engine is destroyed */
}
