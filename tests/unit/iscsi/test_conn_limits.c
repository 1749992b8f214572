/* SPDX-License-Identifier: MIT */
/*
 * Connection limits of a portal (scsitgt_portal_opts.max_connections, max_login_connections):
 * connections over a limit are accepted and closed at once, the others stay; a slot freed by
 * a closing connection is available again. Real sockets on 127.0.0.1, an ephemeral port.
 * A refusal's log line shows the figures the refusal was decided on, while another thread
 * changes them under the engine's iSCSI lock (as connections on workers do).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "libscsitgt/iscsi.h"
#include "transport/iscsi/conn.h"

struct env {
	uv_loop_t loop;
	struct scsitgt_engine *engine;
	struct scsitgt_portal *portal;
	uint16_t port;
};

static void env_init(struct env *e, uint32_t max_conns, uint32_t max_login)
{
	struct scsitgt_portal_opts po;

	assert_int_equal(uv_loop_init(&e->loop), 0);
	assert_int_equal(scsitgt_engine_create(&e->engine, &e->loop, NULL), 0);
	scsitgt_portal_opts_init(&po, sizeof(po));
	assert_int_equal(po.max_connections, 1024);
	assert_int_equal(po.max_login_connections, 256);
	po.address = "127.0.0.1";
	po.port = 0;
	po.max_connections = max_conns;
	po.max_login_connections = max_login;
	assert_int_equal(scsitgt_portal_create(&e->portal, e->engine, &po), 0);
	e->port = scsitgt_portal_get_port(e->portal);
	assert_true(e->port != 0);
}

static void env_fini(struct env *e)
{
	scsitgt_engine_destroy(e->engine, NULL, NULL);
	uv_run(&e->loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&e->loop), 0);
}

static int dial(const struct env *e)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(e->port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

/* Run the loop until the portal saw @accepted connections and @refused refusals. Bounded by
 * a number of rounds, not by time: a broken limit fails the assertions after it. */
static void settle(struct env *e, unsigned int conns, uint64_t refused)
{
	for (int i = 0; i < 2000; i++) {
		uv_run(&e->loop, UV_RUN_NOWAIT);
		if (e->portal->nconns == conns && e->portal->refused == refused)
			return;
		poll(NULL, 0, 5);
	}
}

/* Whether the peer closed @fd (EOF or reset), after running the loop a little. */
static bool peer_closed(struct env *e, int fd)
{
	for (int i = 0; i < 400; i++) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		char c;

		uv_run(&e->loop, UV_RUN_NOWAIT);
		if (poll(&p, 1, 5) == 1) {
			ssize_t n = recv(fd, &c, 1, MSG_DONTWAIT);

			return n <= 0;
		}
	}
	return false;
}

static void test_login_limit(void **state)
{
	struct env e;
	int fd[4];

	(void)state;
	env_init(&e, 3, 2);
	fd[0] = dial(&e);
	fd[1] = dial(&e);
	settle(&e, 2, 0);
	fd[2] = dial(&e); /* a third connection in login: over max_login_connections */
	settle(&e, 2, 1);
	assert_int_equal(e.portal->nconns, 2);
	assert_int_equal(e.portal->nlogin, 2);
	assert_int_equal(e.portal->refused, 1);
	assert_true(peer_closed(&e, fd[2]));
	assert_false(peer_closed(&e, fd[0]));
	close(fd[2]);

	/* One goes: its slot is free again. */
	close(fd[0]);
	settle(&e, 1, 1);
	assert_int_equal(e.portal->nlogin, 1);
	fd[3] = dial(&e);
	settle(&e, 2, 1);
	assert_int_equal(e.portal->nconns, 2);
	assert_int_equal(e.portal->refused, 1);
	assert_false(peer_closed(&e, fd[3]));
	close(fd[1]);
	close(fd[3]);
	settle(&e, 0, 1);
	assert_int_equal(e.portal->nconns, 0);
	assert_int_equal(e.portal->nlogin, 0);
	env_fini(&e);
}

static void test_conn_limit(void **state)
{
	struct env e;
	int fd[3];

	(void)state;
	env_init(&e, 2, 0);
	fd[0] = dial(&e);
	fd[1] = dial(&e);
	settle(&e, 2, 0);
	fd[2] = dial(&e);
	settle(&e, 2, 1);
	assert_int_equal(e.portal->refused, 1);
	assert_true(peer_closed(&e, fd[2]));
	for (int i = 0; i < 3; i++)
		close(fd[i]);
	settle(&e, 0, 1);
	assert_int_equal(e.portal->nconns, 0);
	env_fini(&e);
}

/* What the refusals' log lines said. */
struct refusals {
	unsigned int logged;
	unsigned int below_limit; /* lines whose figures were under both limits */
	uint32_t max_conns;
	uint32_t max_login;
};

static void refusal_log(void *arg, enum scsitgt_log_level level, const char *subsystem,
			const char *fmt, va_list ap)
{
	struct refusals *r = arg;
	unsigned int nconns, nlogin;
	char line[512];
	const char *p;

	(void)level;
	(void)subsystem;
	vsnprintf(line, sizeof(line), fmt, ap);
	p = strstr(line, "connection limit reached (");
	if (p == NULL)
		return;
	assert_int_equal(sscanf(p, "connection limit reached (%u connections, %u in login)",
				&nconns, &nlogin),
			 2);
	r->logged++;
	if (nconns < r->max_conns && nlogin < r->max_login)
		r->below_limit++;
}

struct churn {
	struct scsitgt_portal *portal;
	atomic_bool stop;
};

/* Another loop's connections entering and leaving login: nlogin under ie->lock, at the
 * limit and one below it in turn. */
static void churn_main(void *arg)
{
	struct churn *c = arg;

	for (unsigned int i = 0; !atomic_load(&c->stop); i++) {
		uv_mutex_lock(&c->portal->ie->lock);
		c->portal->nlogin = c->portal->max_login_conns - (i & 1);
		uv_mutex_unlock(&c->portal->ie->lock);
	}
}

/*
 * Every refusal logs (refused set back to 0 before each); the figures of each line are the
 * ones the refusal was decided on, at or over a limit, however the other thread moves them
 * (figures read after the lock could be below both). ThreadSanitizer reports such a read too.
 */
static void test_refusal_log_figures(void **state)
{
	struct refusals r = { .max_conns = 1024, .max_login = 4 };
	struct scsitgt_engine_opts eo;
	struct scsitgt_portal_opts po;
	struct churn c;
	uv_thread_t t;
	uv_loop_t loop;
	struct scsitgt_engine *engine;
	unsigned int refusals = 0, admitted = 0;

	(void)state;
	assert_int_equal(uv_loop_init(&loop), 0);
	scsitgt_engine_opts_init(&eo, sizeof(eo));
	eo.log_cb = refusal_log;
	eo.log_arg = &r;
	eo.log_level = SCSITGT_LOG_WARNING;
	assert_int_equal(scsitgt_engine_create(&engine, &loop, &eo), 0);
	scsitgt_portal_opts_init(&po, sizeof(po));
	po.address = "127.0.0.1";
	po.port = 0;
	po.max_connections = r.max_conns;
	po.max_login_connections = r.max_login;
	assert_int_equal(scsitgt_portal_create(&c.portal, engine, &po), 0);
	atomic_init(&c.stop, false);
	assert_int_equal(uv_thread_create(&t, churn_main, &c), 0);
	/* Until both outcomes were seen often (the other thread runs when it is scheduled). */
	while (refusals < 5000 || admitted < 5000) {
		int rc;

		uv_mutex_lock(&c.portal->ie->lock);
		c.portal->refused = 0;
		uv_mutex_unlock(&c.portal->ie->lock);
		rc = scsitgt__iscsi_portal_admit(c.portal);
		assert_true(rc == 0 || rc == -ECONNREFUSED);
		if (rc == 0)
			admitted++;
		else
			refusals++;
	}
	atomic_store(&c.stop, true);
	assert_int_equal(uv_thread_join(&t), 0);
	uv_mutex_lock(&c.portal->ie->lock);
	c.portal->nlogin = 0;
	uv_mutex_unlock(&c.portal->ie->lock);
	/* Each refusal said so once. */
	assert_int_equal(r.logged, refusals);
	assert_int_equal(r.below_limit, 0);
	scsitgt_engine_destroy(engine, NULL, NULL);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_login_limit),
		cmocka_unit_test(test_conn_limit),
		cmocka_unit_test(test_refusal_log_figures),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
