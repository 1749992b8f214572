/* SPDX-License-Identifier: MIT */
/*
 * Worker loops (core/worker.c) and the hand-off of iSCSI/TCP connections to them
 * (transport/iscsi/tcp_worker.c): the lock-free queue under several producer threads, messages
 * to and from workers, placement on the least-loaded worker, clean shutdown (threads joined,
 * the host loop left without handles), and real connections on a loopback portal served
 * through workers: logins, writes with immediate data and reads, verified byte for byte,
 * several sessions at once, with a burst large enough to make a worker stop reading for a
 * while; with connections on the workers (scsitgt_engine_opts.conn_workers), the threads the
 * event and log callbacks are called from. Part of the TSan suite (scripts/test.sh --tsan).
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cmocka.h>

#include "conn_workers_env.h"
#include "core/core.h"
#include "core/worker.h"
#include "libscsitgt/scsitgt.h"
#include "util/be.h"

/* ---------------------------------------------------------------- the queue ------------ */

#define MPSC_PRODUCERS 4
#define MPSC_PER_PRODUCER 20000

struct item {
	struct scsitgt__mpsc_node node;
	unsigned int producer;
	unsigned int seq;
};

struct producer {
	uv_thread_t thread;
	struct scsitgt__mpsc *q;
	struct item *items;
	unsigned int id;
	atomic_uint *wakeups;
};

static void producer_main(void *arg)
{
	struct producer *p = arg;

	for (unsigned int i = 0; i < MPSC_PER_PRODUCER; i++) {
		p->items[i].producer = p->id;
		p->items[i].seq = i;
		if (scsitgt__mpsc_push(p->q, &p->items[i].node))
			atomic_fetch_add(p->wakeups, 1);
	}
}

/* Every node arrives once, and each producer's nodes in the order it pushed them. */
static void test_mpsc_producers(void **state)
{
	struct producer prod[MPSC_PRODUCERS];
	unsigned int next[MPSC_PRODUCERS] = { 0 };
	struct scsitgt__mpsc q;
	atomic_uint wakeups;
	unsigned int got = 0, takes = 0;

	(void)state;
	scsitgt__mpsc_init(&q);
	atomic_init(&wakeups, 0);
	for (unsigned int i = 0; i < MPSC_PRODUCERS; i++) {
		prod[i].q = &q;
		prod[i].id = i;
		prod[i].wakeups = &wakeups;
		prod[i].items = calloc(MPSC_PER_PRODUCER, sizeof(struct item));
		assert_non_null(prod[i].items);
		assert_int_equal(uv_thread_create(&prod[i].thread, producer_main, &prod[i]), 0);
	}
	while (got < MPSC_PRODUCERS * MPSC_PER_PRODUCER) {
		struct scsitgt__mpsc_node *n = scsitgt__mpsc_take_all(&q);

		if (n)
			takes++;
		while (n) {
			struct item *it = scsitgt__container_of(n, struct item, node);

			n = n->next;
			assert_true(it->producer < MPSC_PRODUCERS);
			assert_int_equal(it->seq, next[it->producer]);
			next[it->producer]++;
			got++;
		}
	}
	for (unsigned int i = 0; i < MPSC_PRODUCERS; i++) {
		uv_thread_join(&prod[i].thread);
		assert_int_equal(next[i], MPSC_PER_PRODUCER);
		free(prod[i].items);
	}
	assert_null(scsitgt__mpsc_take_all(&q));
	/* A push that found the queue empty asked for a wake-up: one per non-empty take. */
	assert_int_equal(atomic_load(&wakeups), takes);
}

/* ---------------------------------------------------------------- engine options ------- */

static void destroyed(void *arg, int status)
{
	assert_int_equal(status, 0);
	(*(int *)arg)++;
}

static void run_to_end(uv_loop_t *loop, struct scsitgt_engine *engine)
{
	int done = 0;

	scsitgt_engine_destroy(engine, destroyed, &done);
	uv_run(loop, UV_RUN_DEFAULT);
	assert_int_equal(done, 1);
	/* Every handle of the engine is closed, worker threads joined. */
	assert_int_equal(uv_loop_close(loop), 0);
}

static void test_opts(void **state)
{
	struct scsitgt_engine_opts o;
	struct scsitgt_engine *engine;
	uv_loop_t loop;
	unsigned int cpus = uv_available_parallelism();

	(void)state;
	scsitgt_engine_opts_init(&o, sizeof(o));
	assert_int_equal(o.workers, 0);
	assert_int_equal(uv_loop_init(&loop), 0);
	o.workers = -2;
	assert_int_equal(scsitgt_engine_create(&engine, &loop, &o), -EINVAL);
	o.workers = SCSITGT_ENGINE_WORKERS_MAX + 1;
	assert_int_equal(scsitgt_engine_create(&engine, &loop, &o), -EINVAL);

	o.workers = 0;
	assert_int_equal(scsitgt_engine_create(&engine, &loop, &o), 0);
	assert_int_equal(scsitgt_engine_get_workers(engine), 0);
	assert_null(scsitgt__worker_pick(engine));
	run_to_end(&loop, engine);

	assert_int_equal(uv_loop_init(&loop), 0);
	o.workers = SCSITGT_ENGINE_WORKERS_AUTO;
	assert_int_equal(scsitgt_engine_create(&engine, &loop, &o), 0);
	assert_int_equal(scsitgt_engine_get_workers(engine),
			 cpus > SCSITGT_ENGINE_WORKERS_MAX ? SCSITGT_ENGINE_WORKERS_MAX : cpus);
	run_to_end(&loop, engine);
	assert_int_equal(scsitgt_engine_get_workers(NULL), 0);
}

/* What the option's field is given: the default of scsitgt_engine_opts_init(), or a value. */
enum opt_cw {
	CW_DEFAULT,
	CW_OFF,
	CW_ON,
	CW_OLD_SIZE
};

/*
 * engine->conn_workers as engine creation decides it, with WORKERS threads, the option OPT
 * and the environment NEW (SCSITGT_CONN_WORKERS) and OLD (its older name), NULL: unset.
 * CW_OLD_SIZE: a caller compiled before the field, whose struct ends before it (the bytes
 * after its size are garbage that says false).
 */
static bool conn_workers_with(int workers, enum opt_cw opt, const char *new_val,
			      const char *old_val)
{
	struct scsitgt_engine_opts o;
	struct scsitgt_engine *engine;
	uv_loop_t loop;
	bool on;

	if (new_val)
		assert_int_equal(setenv("SCSITGT_CONN_WORKERS", new_val, 1), 0);
	if (old_val)
		assert_int_equal(setenv("SCSITGT_EXPERIMENTAL_CONN_WORKERS", old_val, 1), 0);
	scsitgt_engine_opts_init(&o, sizeof(o));
	o.workers = workers;
	if (opt == CW_OFF || opt == CW_ON)
		o.conn_workers = opt == CW_ON;
	if (opt == CW_OLD_SIZE) {
		o.size = offsetof(struct scsitgt_engine_opts, conn_workers);
		o.conn_workers = false;
	}
	assert_int_equal(uv_loop_init(&loop), 0);
	assert_int_equal(scsitgt_engine_create(&engine, &loop, &o), 0);
	assert_int_equal(unsetenv("SCSITGT_CONN_WORKERS"), 0);
	assert_int_equal(unsetenv("SCSITGT_EXPERIMENTAL_CONN_WORKERS"), 0);
	on = engine->conn_workers;
	run_to_end(&loop, engine);
	return on;
}

/*
 * With workers, connections run on them by default; scsitgt_engine_opts.conn_workers false
 * opts out, and SCSITGT_CONN_WORKERS overrides the option either way, its experimental name
 * read only when the new one is unset (engine.h, docs/threading.md). A caller compiled before
 * the field gets the default. Without workers there is nothing to run on.
 */
static void test_conn_workers_default(void **state)
{
	struct scsitgt_engine_opts o;

	/* The group's setup has put the caller's environment aside (cw_env_setup()). */
	(void)state;
	scsitgt_engine_opts_init(&o, sizeof(o));
	assert_true(o.conn_workers);
	/* The option, workers 2 and 0. */
	assert_true(conn_workers_with(2, CW_DEFAULT, NULL, NULL));
	assert_true(conn_workers_with(2, CW_ON, NULL, NULL));
	assert_false(conn_workers_with(2, CW_OFF, NULL, NULL));
	assert_true(conn_workers_with(2, CW_OLD_SIZE, NULL, NULL));
	assert_false(conn_workers_with(0, CW_DEFAULT, NULL, NULL));
	assert_false(conn_workers_with(0, CW_ON, NULL, NULL));
	assert_false(conn_workers_with(0, CW_OFF, NULL, NULL));
	assert_false(conn_workers_with(0, CW_ON, "1", NULL));
	/* The environment wins over the option; empty counts as unset. */
	assert_false(conn_workers_with(2, CW_DEFAULT, "0", NULL));
	assert_false(conn_workers_with(2, CW_ON, "0", NULL));
	assert_true(conn_workers_with(2, CW_OFF, "1", NULL));
	assert_true(conn_workers_with(2, CW_DEFAULT, "1", NULL));
	assert_false(conn_workers_with(2, CW_OFF, "", NULL));
	assert_true(conn_workers_with(2, CW_ON, "", NULL));
	assert_false(conn_workers_with(2, CW_OLD_SIZE, "0", NULL));
	/* The older name, read only when the new one is unset. */
	assert_false(conn_workers_with(2, CW_DEFAULT, NULL, "0"));
	assert_true(conn_workers_with(2, CW_OFF, NULL, "1"));
	assert_true(conn_workers_with(2, CW_DEFAULT, "1", "0"));
	assert_false(conn_workers_with(2, CW_ON, "0", "1"));
}

/* ---------------------------------------------------------------- messages ------------- */

#define NWORKERS 3
#define ROUNDS 50

struct ping {
	struct scsitgt__msg msg;
	struct scsitgt_engine *engine;
	struct scsitgt__worker *w;
	uv_thread_t worker_thread;
	bool pipe_blocked;
	int hops;
	struct pings *all;
};

struct pings {
	uv_thread_t home;
	unsigned int back;
	unsigned int wrong_thread;
	unsigned int pipe_unblocked;
	uv_thread_t seen[NWORKERS];
	bool seen_set[NWORKERS];
};

static void ping_home(struct scsitgt__msg *msg);

/* On a worker: note the thread, go home. */
static void ping_worker(struct scsitgt__msg *msg)
{
	struct ping *p = scsitgt__container_of(msg, struct ping, msg);
	uv_thread_t self = uv_thread_self();
	sigset_t blocked;

	p->worker_thread = self;
	p->pipe_blocked = pthread_sigmask(SIG_BLOCK, NULL, &blocked) == 0 &&
			  sigismember(&blocked, SIGPIPE) == 1;
	p->hops++;
	p->msg.fn = ping_home;
	scsitgt__engine_post(p->engine, &p->msg);
}

/* On the home loop: check, and send it out again for another round. */
static void ping_home(struct scsitgt__msg *msg)
{
	struct ping *p = scsitgt__container_of(msg, struct ping, msg);
	struct pings *all = p->all;
	uv_thread_t self = uv_thread_self();

	if (!uv_thread_equal(&self, &all->home) || uv_thread_equal(&p->worker_thread, &self))
		all->wrong_thread++;
	all->pipe_unblocked += !p->pipe_blocked;
	if (all->seen_set[p->w->index]) {
		if (!uv_thread_equal(&all->seen[p->w->index], &p->worker_thread))
			all->wrong_thread++;
	} else {
		all->seen[p->w->index] = p->worker_thread;
		all->seen_set[p->w->index] = true;
	}
	if (p->hops < ROUNDS) {
		p->msg.fn = ping_worker;
		scsitgt__worker_post(p->w, &p->msg);
		return;
	}
	all->back++;
}

/* Messages run on the worker they were posted to and come back home, in order, many times;
 * destroying the engine joins the threads and leaves the loop empty. */
/* How many threads of this process are named @name (/proc/self/task/<tid>/comm). */
static int count_threads_named(const char *name)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)) != NULL) {
		char path[300], comm[32] = "";
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		f = fopen(path, "r");
		if (f == NULL)
			continue; /* the thread ended meanwhile */
		if (fgets(comm, sizeof(comm), f))
			comm[strcspn(comm, "\n")] = '\0';
		fclose(f);
		n += strcmp(comm, name) == 0;
	}
	closedir(d);
	return n;
}

static void test_messages(void **state)
{
	struct scsitgt_engine_opts o;
	struct scsitgt_engine *engine;
	struct ping pings[NWORKERS * 4];
	struct pings all;
	uv_loop_t loop;

	(void)state;
	memset(&all, 0, sizeof(all));
	all.home = uv_thread_self();
	assert_int_equal(uv_loop_init(&loop), 0);
	scsitgt_engine_opts_init(&o, sizeof(o));
	o.workers = NWORKERS;
	assert_int_equal(scsitgt_engine_create(&engine, &loop, &o), 0);
	assert_int_equal(scsitgt_engine_get_workers(engine), NWORKERS);
	for (unsigned int i = 0; i < NWORKERS * 4; i++) {
		memset(&pings[i], 0, sizeof(pings[i]));
		pings[i].engine = engine;
		pings[i].all = &all;
		pings[i].w = &engine->workers[i % NWORKERS];
		pings[i].msg.fn = ping_worker;
		scsitgt__worker_post(pings[i].w, &pings[i].msg);
	}
	while (all.back < NWORKERS * 4)
		uv_run(&loop, UV_RUN_ONCE);
	assert_int_equal(all.wrong_thread, 0);
	/* Worker threads write sockets and block SIGPIPE (a peer's reset is EPIPE there). */
	assert_int_equal(all.pipe_unblocked, 0);
	for (unsigned int i = 0; i < NWORKERS; i++) {
		assert_true(all.seen_set[i]);
		for (unsigned int j = 0; j < i; j++)
			assert_false(uv_thread_equal(&all.seen[i], &all.seen[j]));
	}
	/* Each worker answered, so it runs under its name: once each, as top -H shows it. */
	for (unsigned int i = 0; i < NWORKERS; i++) {
		char want[16];

		snprintf(want, sizeof(want), "scsitgt-w%u", i);
		assert_int_equal(count_threads_named(want), 1);
	}
	run_to_end(&loop, engine);
}

static int sigpipe_warnings;

static void sigpipe_log(void *arg, enum scsitgt_log_level level, const char *subsystem,
			const char *fmt, va_list ap)
{
	char msg[512];

	(void)arg;
	(void)subsystem;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (level == SCSITGT_LOG_WARNING && strstr(msg, "SIGPIPE"))
		sigpipe_warnings++;
}

/* The engine whose home thread would die of SIGPIPE says so once, when a socket portal
 * starts; it changes no signal disposition itself. */
static void test_sigpipe_warning(void **state)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL }, ign = { .sa_handler = SIG_IGN }, now;

	(void)state;
	for (int round = 0; round < 2; round++) {
		struct scsitgt_engine_opts o;
		struct scsitgt_portal_opts po;
		struct scsitgt_engine *engine;
		struct scsitgt_portal *portal;
		uv_loop_t loop;

		/* No socket is written in this test: the default action is safe here. */
		assert_int_equal(sigaction(SIGPIPE, round == 0 ? &dfl : &ign, NULL), 0);
		sigpipe_warnings = 0;
		assert_int_equal(uv_loop_init(&loop), 0);
		scsitgt_engine_opts_init(&o, sizeof(o));
		o.log_cb = sigpipe_log;
		o.log_level = SCSITGT_LOG_WARNING;
		assert_int_equal(scsitgt_engine_create(&engine, &loop, &o), 0);
		assert_int_equal(sigpipe_warnings, 0); /* no portal yet */
		scsitgt_portal_opts_init(&po, sizeof(po));
		po.address = "127.0.0.1";
		po.port = 0;
		assert_int_equal(scsitgt_portal_create(&portal, engine, &po), 0);
		assert_int_equal(scsitgt_portal_create(&portal, engine, &po), 0);
		assert_int_equal(sigpipe_warnings, round == 0 ? 1 : 0);
		assert_int_equal(sigaction(SIGPIPE, NULL, &now), 0);
		assert_ptr_equal(now.sa_handler, round == 0 ? SIG_DFL : SIG_IGN);
		run_to_end(&loop, engine);
	}
}

/* Placement goes to the worker with the fewest connections. */
static void test_pick(void **state)
{
	struct scsitgt_engine_opts o;
	struct scsitgt_engine *engine;
	struct scsitgt__worker *a, *b, *c, *d;
	uv_loop_t loop;

	(void)state;
	assert_int_equal(uv_loop_init(&loop), 0);
	scsitgt_engine_opts_init(&o, sizeof(o));
	o.workers = 3;
	assert_int_equal(scsitgt_engine_create(&engine, &loop, &o), 0);
	a = scsitgt__worker_pick(engine);
	b = scsitgt__worker_pick(engine);
	c = scsitgt__worker_pick(engine);
	assert_true(a != b && b != c && a != c);
	scsitgt__worker_unpick(b);
	d = scsitgt__worker_pick(engine);
	assert_ptr_equal(d, b);
	d = scsitgt__worker_pick(engine);
	assert_int_equal(d->nconns, 2);
	for (unsigned int i = 0; i < 3; i++)
		while (engine->workers[i].nconns)
			scsitgt__worker_unpick(&engine->workers[i]);
	run_to_end(&loop, engine);
}

/* ---------------------------------------------------------------- TCP hand-off -------- */

#define T_IQN "iqn.2026-11.org.libscsitgt:workers"
#define T_CLIENTS 4
#define T_BLOCKS 128 /* 512-byte blocks per write: 64 KiB of immediate data */
#define T_BURST 96   /* writes one client sends before it reads a response */

struct client {
	uv_thread_t thread;
	uint16_t port;
	unsigned int id;
	int fd;
	uint32_t cmd_sn;
	uint32_t itt;
	char error[160];
};

struct tcp_test {
	uv_loop_t loop;
	struct scsitgt_engine *engine;
	uv_async_t logged_in; /* a client thread logged in */
	uv_sem_t go;	      /* the home loop checked placement */
	atomic_uint nlogged;
	struct client clients[T_CLIENTS];
	unsigned int max_on_worker[2];
	bool checked;
};

static int cfail(struct client *c, const char *what)
{
	if (c->error[0] == '\0')
		snprintf(c->error, sizeof(c->error), "client %u: %s (%s)", c->id, what,
			 strerror(errno));
	return -1;
}

static int xwrite(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int xread(int fd, void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = read(fd, p, len);

		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Read one PDU: its header, and its data segment (padded) into @data (may be NULL). */
static int read_pdu(int fd, uint8_t bhs[48], uint8_t *data, size_t cap, uint32_t *dlen)
{
	uint32_t len, padded;
	uint8_t skip[512];

	if (xread(fd, bhs, 48) < 0)
		return -1;
	len = ((uint32_t)bhs[5] << 16) | ((uint32_t)bhs[6] << 8) | bhs[7];
	padded = (len + 3) & ~3u;
	*dlen = len;
	if (data && padded <= cap)
		return xread(fd, data, padded);
	while (padded) {
		uint32_t n = padded < sizeof(skip) ? padded : (uint32_t)sizeof(skip);

		if (xread(fd, skip, n) < 0)
			return -1;
		padded -= n;
	}
	return 0;
}

/* A one-PDU login (T=1, operational to full feature) as InitiatorName client<id> to @tname;
 * *@status receives the Login Response's status (class << 8 | detail, RFC 7143 §11.13.5). */
static int client_login_to(struct client *c, const char *tname, uint16_t *status)
{
	char keys[512];
	uint8_t pdu[48 + 512], rsp[48], rdata[8192];
	uint32_t dlen;
	int n;

	n = snprintf(keys, sizeof(keys),
		     "InitiatorName=iqn.2026-11.org.libscsitgt:client%u%cTargetName=%s%c"
		     "SessionType=Normal%cHeaderDigest=None%cDataDigest=None%c"
		     "ImmediateData=Yes%cInitialR2T=No%cMaxRecvDataSegmentLength=262144%c",
		     c->id, 0, tname, 0, 0, 0, 0, 0, 0, 0);
	memset(pdu, 0, sizeof(pdu));
	pdu[0] = 0x40 | 0x03; /* immediate Login Request */
	/* RFC 7143 §11.12: T=1, CSG=1 (operational), NSG=3 (full feature phase). */
	pdu[1] = 0x80 | (1 << 2) | 3;
	pdu[5] = 0;
	pdu[6] = (uint8_t)(n >> 8);
	pdu[7] = (uint8_t)n;
	pdu[8] = 0x80; /* ISID: random format */
	pdu[13] = (uint8_t)(c->id + 1);
	put_be32(&pdu[16], 0x1000 + c->id); /* ITT */
	memcpy(&pdu[48], keys, (size_t)n);
	if (xwrite(c->fd, pdu, 48 + (((size_t)n + 3) & ~(size_t)3)) < 0)
		return cfail(c, "login send");
	if (read_pdu(c->fd, rsp, rdata, sizeof(rdata), &dlen) < 0 || rsp[0] != 0x23)
		return cfail(c, "login response");
	*status = get_be16(&rsp[36]);
	if (*status == 0 && (rsp[1] & 0x83) != 0x83)
		return cfail(c, "login not in full feature phase");
	c->cmd_sn = get_be32(&rsp[24]); /* ExpCmdSN */
	return 0;
}

static int client_login(struct client *c)
{
	uint16_t status;

	if (client_login_to(c, T_IQN, &status) < 0)
		return -1;
	return status == 0 ? 0 : cfail(c, "login refused");
}

static int client_connect(struct client *c)
{
	struct sockaddr_in sa;

	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons(c->port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	c->fd = socket(AF_INET, SOCK_STREAM, 0);
	if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return cfail(c, "connect");
	return 0;
}

/* WRITE(10) or READ(10) of T_BLOCKS at @lba; a write carries its data as immediate data. */
static int send_rw(struct client *c, bool write, uint32_t lba, const uint8_t *data)
{
	uint8_t pdu[48];
	uint32_t len = T_BLOCKS * 512;

	memset(pdu, 0, sizeof(pdu));
	pdu[0] = 0x01;				      /* SCSI Command */
	pdu[1] = 0x80 | (write ? 0x20 : 0x40) | 0x01; /* F, W or R, SIMPLE */
	if (write) {
		pdu[5] = (uint8_t)(len >> 16);
		pdu[6] = (uint8_t)(len >> 8);
		pdu[7] = (uint8_t)len;
	}
	put_be32(&pdu[16], ++c->itt);
	put_be32(&pdu[20], len); /* EDTL */
	put_be32(&pdu[24], c->cmd_sn++);
	pdu[32] = write ? 0x2a : 0x28;
	put_be32(&pdu[34], lba);
	put_be16(&pdu[39], T_BLOCKS);
	if (xwrite(c->fd, pdu, sizeof(pdu)) < 0)
		return -1;
	return write ? xwrite(c->fd, data, len) : 0;
}

static void fill(uint8_t *buf, unsigned int client, uint32_t lba)
{
	for (uint32_t i = 0; i < T_BLOCKS * 512; i++)
		buf[i] = (uint8_t)(client * 131 + lba * 7 + i * 13 + (i >> 9));
}

static int client_io(struct client *c)
{
	static _Thread_local uint8_t buf[T_BLOCKS * 512], want[T_BLOCKS * 512];
	uint32_t base = c->id * T_BURST * T_BLOCKS;
	uint8_t rsp[48];
	uint32_t dlen;

	/* TEST UNIT READY takes the power-on unit attention of the new nexus (SAM-5 §5.14). */
	memset(rsp, 0, sizeof(rsp));
	rsp[0] = 0x01;
	rsp[1] = 0x80 | 0x01;
	put_be32(&rsp[16], ++c->itt);
	put_be32(&rsp[24], c->cmd_sn++);
	if (xwrite(c->fd, rsp, sizeof(rsp)) < 0 || read_pdu(c->fd, rsp, NULL, 0, &dlen) < 0)
		return cfail(c, "TEST UNIT READY");
	if (rsp[0] != 0x21 || (rsp[3] != 0 && rsp[3] != 0x02))
		return cfail(c, "TEST UNIT READY status");
	/* A burst of writes before any response is read: megabytes queue up on the worker. */
	for (uint32_t i = 0; i < T_BURST; i++) {
		fill(buf, c->id, base + i * T_BLOCKS);
		if (send_rw(c, true, base + i * T_BLOCKS, buf) < 0)
			return cfail(c, "write send");
	}
	for (uint32_t i = 0; i < T_BURST; i++) {
		if (read_pdu(c->fd, rsp, NULL, 0, &dlen) < 0)
			return cfail(c, "write response");
		if (rsp[0] != 0x21 || rsp[2] != 0 || rsp[3] != 0)
			return cfail(c, "write failed");
	}
	/* Read every range back, one command at a time, Data-In possibly in several PDUs. */
	for (uint32_t i = 0; i < T_BURST; i++) {
		uint32_t got = 0;
		bool status = false;

		if (send_rw(c, false, base + i * T_BLOCKS, NULL) < 0)
			return cfail(c, "read send");
		while (!status) {
			if (read_pdu(c->fd, rsp, buf + got, sizeof(buf) - got, &dlen) < 0)
				return cfail(c, "read response");
			if (rsp[0] == 0x25) { /* Data-In */
				if (get_be32(&rsp[40]) != got)
					return cfail(c, "Data-In offset");
				got += dlen;
				status = rsp[1] & 0x01;
				if (status && rsp[3] != 0)
					return cfail(c, "read status");
			} else if (rsp[0] == 0x21) {
				status = true;
				if (rsp[3] != 0)
					return cfail(c, "read status");
			} else {
				return cfail(c, "unexpected PDU");
			}
		}
		fill(want, c->id, base + i * T_BLOCKS);
		if (got != sizeof(buf) || memcmp(buf, want, sizeof(buf)) != 0)
			return cfail(c, "data read back differs");
	}
	return 0;
}

static struct tcp_test *g_tt;

static void client_main(void *arg)
{
	struct client *c = arg;
	int one = 1;

	if (client_connect(c) == 0) {
		setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		client_login(c);
	}
	/* Logged in (or failed): wait until the home loop has seen every client placed. */
	atomic_fetch_add(&g_tt->nlogged, 1);
	uv_async_send(&g_tt->logged_in);
	uv_sem_wait(&g_tt->go);
	if (c->error[0] == '\0')
		client_io(c);
	if (c->fd >= 0)
		close(c->fd);
}

static unsigned int worker_conns(struct tcp_test *tt, unsigned int i)
{
	return tt->engine->workers[i].nconns;
}

static void logged_in_cb(uv_async_t *h)
{
	struct tcp_test *tt = h->data;

	if (tt->checked || atomic_load(&tt->nlogged) < T_CLIENTS)
		return;
	tt->checked = true;
	tt->max_on_worker[0] = worker_conns(tt, 0);
	tt->max_on_worker[1] = worker_conns(tt, 1);
	for (unsigned int i = 0; i < T_CLIENTS; i++)
		uv_sem_post(&tt->go);
	uv_close((uv_handle_t *)h, NULL);
}

static void ram_lun(struct scsitgt_target *tgt, uint64_t id)
{
	struct scsitgt_lun_opts lo;
	struct scsitgt_lun *lun;
	void *bctx;

	assert_int_equal(scsitgt_backend_ram_create(&bctx), 0);
	scsitgt_lun_opts_init(&lo, sizeof(lo));
	lo.id = id;
	lo.block_size = 512;
	lo.num_blocks = T_CLIENTS * T_BURST * T_BLOCKS;
	lo.backend = scsitgt_backend_ram_ops();
	lo.backend_ctx = bctx;
	assert_int_equal(scsitgt_lun_create(&lun, tgt, &lo), 0);
}

/* Target T_IQN with RAM LUN 0 on a loopback portal of @engine; returns the portal's port. */
static uint16_t serve_ram_target(struct scsitgt_engine *engine)
{
	struct scsitgt_target_opts to;
	struct scsitgt_portal_opts po;
	struct scsitgt_target *tgt;
	struct scsitgt_portal *portal;

	scsitgt_target_opts_init(&to, sizeof(to));
	to.name = T_IQN;
	assert_int_equal(scsitgt_target_create(&tgt, engine, &to), 0);
	ram_lun(tgt, 0);
	scsitgt_portal_opts_init(&po, sizeof(po));
	po.address = "127.0.0.1";
	po.port = 0;
	assert_int_equal(scsitgt_portal_create(&portal, engine, &po), 0);
	return scsitgt_portal_get_port(portal);
}

/* Sessions through a portal of an engine with two workers: each connection is placed on the
 * least-loaded worker, and data written through one is read back intact. */
static void test_tcp_sessions(void **state)
{
	struct tcp_test *tt = calloc(1, sizeof(*tt));
	struct scsitgt_engine_opts o;
	uint16_t port;

	(void)state;
	assert_non_null(tt);
	g_tt = tt;
	assert_int_equal(uv_loop_init(&tt->loop), 0);
	scsitgt_engine_opts_init(&o, sizeof(o));
	o.workers = 2;
	assert_int_equal(scsitgt_engine_create(&tt->engine, &tt->loop, &o), 0);
	port = serve_ram_target(tt->engine);
	assert_int_equal(uv_async_init(&tt->loop, &tt->logged_in, logged_in_cb), 0);
	tt->logged_in.data = tt;
	assert_int_equal(uv_sem_init(&tt->go, 0), 0);
	atomic_init(&tt->nlogged, 0);
	for (unsigned int i = 0; i < T_CLIENTS; i++) {
		tt->clients[i].id = i;
		tt->clients[i].fd = -1;
		tt->clients[i].port = port;
		assert_int_equal(
			uv_thread_create(&tt->clients[i].thread, client_main, &tt->clients[i]), 0);
	}
	/* Runs until the clients are done and every connection is gone from the workers. */
	while (!tt->checked || worker_conns(tt, 0) + worker_conns(tt, 1) > 0)
		uv_run(&tt->loop, UV_RUN_ONCE);
	for (unsigned int i = 0; i < T_CLIENTS; i++) {
		uv_thread_join(&tt->clients[i].thread);
		if (tt->clients[i].error[0])
			fail_msg("%s", tt->clients[i].error);
	}
	/* Four logged-in connections, two per worker. */
	assert_int_equal(tt->max_on_worker[0], T_CLIENTS / 2);
	assert_int_equal(tt->max_on_worker[1], T_CLIENTS / 2);
	run_to_end(&tt->loop, tt->engine);
	uv_sem_destroy(&tt->go);
	free(tt);
}

/* Shutdown with connections still open on the workers: the engine logs them out / drops
 * them, closes the sockets on their workers, then joins the workers. */
static void test_shutdown_with_conns(void **state)
{
	struct scsitgt_engine_opts o;
	struct scsitgt_engine *engine;
	struct client c[3];
	struct sockaddr_in sa;
	uv_loop_t loop;
	int done = 0;

	(void)state;
	assert_int_equal(uv_loop_init(&loop), 0);
	scsitgt_engine_opts_init(&o, sizeof(o));
	o.workers = 2;
	assert_int_equal(scsitgt_engine_create(&engine, &loop, &o), 0);
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons(serve_ram_target(engine));
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	for (unsigned int i = 0; i < 3; i++) {
		memset(&c[i], 0, sizeof(c[i]));
		c[i].fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		assert_true(c[i].fd >= 0);
		assert_true(connect(c[i].fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 ||
			    errno == EINPROGRESS);
	}
	/* Let the portal accept and place them (never logged in: they are in login). */
	while (engine->workers[0].nconns + engine->workers[1].nconns < 3)
		uv_run(&loop, UV_RUN_ONCE);
	scsitgt_engine_destroy(engine, destroyed, &done);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(done, 1);
	assert_int_equal(uv_loop_close(&loop), 0);
	for (unsigned int i = 0; i < 3; i++) {
		/* A safety net, not a timing: the target has closed its end already. */
		struct timeval tv = { .tv_sec = 10 };
		ssize_t n;
		char b;

		assert_int_equal(fcntl(c[i].fd, F_SETFL, 0), 0);
		setsockopt(c[i].fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		n = read(c[i].fd, &b, 1);
		/* EOF, or a reset if the target had unread bytes: closed either way. */
		assert_true(n == 0 || (n < 0 && errno == ECONNRESET));
		close(c[i].fd);
	}
}

/* ---------------------------------------------------------------- events and logs ------ */

/*
 * docs/threading.md, connections on the workers: events raised on a worker are copied and
 * delivered on the home loop; the log callback is called from the thread that logs (a worker
 * for a worker's connection). The host's callbacks below would race with each other under
 * ThreadSanitizer if either came from a thread the documentation does not name: the event
 * callback keeps its state without a lock (home only), the log callback under one.
 */
#define E_IQN_UNKNOWN "iqn.2026-11.org.libscsitgt:nobody-home"

struct ev_test {
	uv_thread_t home;
	struct scsitgt_engine *engine;
	/* Written by the event callback only, on home. */
	unsigned int events[16];
	unsigned int events_elsewhere;
	enum scsitgt_event_type order[8];
	unsigned int norder;
	char failed_iname[128];
	char failed_tname[128];
	char failed_reason[64];
	uint16_t failed_status;
	char tmf_iname[128];
	uint8_t tmf_function;
	/* Written by the log callback, from any thread, under @lock. */
	uv_mutex_t lock;
	unsigned int log_home, log_worker, log_tmf_worker;
	/* The client thread. */
	struct client c;
	atomic_bool client_done;
};

static void ev_copy(char *dst, size_t n, const char *src)
{
	snprintf(dst, n, "%s", src ? src : "(null)");
}

static void ev_event(void *arg, const struct scsitgt_event *ev)
{
	struct ev_test *et = arg;
	uv_thread_t self = uv_thread_self();

	if (!uv_thread_equal(&self, &et->home)) {
		et->events_elsewhere++;
		return;
	}
	if ((unsigned int)ev->type < 16)
		et->events[ev->type]++;
	if (et->norder < 8)
		et->order[et->norder++] = ev->type;
	if (ev->type == SCSITGT_EVENT_LOGIN_FAILED) {
		ev_copy(et->failed_iname, sizeof(et->failed_iname), ev->initiator_name);
		ev_copy(et->failed_tname, sizeof(et->failed_tname), ev->target_name);
		ev_copy(et->failed_reason, sizeof(et->failed_reason), ev->reason);
		et->failed_status = ev->login_status;
	} else if (ev->type == SCSITGT_EVENT_TMF) {
		ev_copy(et->tmf_iname, sizeof(et->tmf_iname), ev->initiator_name);
		et->tmf_function = ev->tmf_function;
	}
}

static void ev_log(void *arg, enum scsitgt_log_level level, const char *subsystem, const char *fmt,
		   va_list ap)
{
	struct ev_test *et = arg;
	uv_thread_t self = uv_thread_self();
	bool home = uv_thread_equal(&self, &et->home);
	char msg[512];

	(void)level;
	(void)subsystem;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	uv_mutex_lock(&et->lock);
	if (home) {
		et->log_home++;
	} else {
		et->log_worker++;
		if (strstr(msg, "task management function"))
			et->log_tmf_worker++;
	}
	uv_mutex_unlock(&et->lock);
}

/* One request PDU, and its response's opcode and byte 2 (the TMF response / logout response). */
static int client_request(struct client *c, uint8_t *pdu, uint8_t want_op, uint8_t *response)
{
	uint8_t rsp[48];
	uint32_t dlen;

	put_be32(&pdu[16], ++c->itt);
	put_be32(&pdu[24], c->cmd_sn);
	if (xwrite(c->fd, pdu, 48) < 0 || read_pdu(c->fd, rsp, NULL, 0, &dlen) < 0)
		return cfail(c, "request");
	if (rsp[0] != want_op)
		return cfail(c, "unexpected response");
	*response = rsp[2];
	return 0;
}

/* A refused login (unknown target), then a session: ABORT TASK SET on LUN 0 with no task in
 * it (RFC 7143 §11.5.1; its TMF event is raised on the worker, by the core), and a logout. */
static void ev_client_main(void *arg)
{
	struct ev_test *et = arg;
	struct client *c = &et->c;
	uint8_t pdu[48], response;
	uint16_t status;

	if (client_connect(c) == 0 && client_login_to(c, E_IQN_UNKNOWN, &status) == 0 &&
	    status != 0x0203)
		cfail(c, "login to an unknown target not refused with 0x0203");
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	if (c->error[0] == '\0' && client_connect(c) == 0 && client_login(c) == 0) {
		memset(pdu, 0, sizeof(pdu));
		pdu[0] = 0x40 | 0x02; /* immediate Task Management Function Request */
		pdu[1] = 0x80 | SCSITGT_TMF_ABORT_TASK_SET; /* LUN 0 */
		put_be32(&pdu[20], 0xffffffff);		    /* Referenced Task Tag: reserved */
		if (client_request(c, pdu, 0x22, &response) == 0 && response != 0)
			cfail(c, "ABORT TASK SET response");
		memset(pdu, 0, sizeof(pdu));
		pdu[0] = 0x40 | 0x06; /* immediate Logout Request */
		pdu[1] = 0x80;	      /* close the session */
		if (c->error[0] == '\0' && client_request(c, pdu, 0x26, &response) == 0 &&
		    response != 0)
			cfail(c, "logout response");
	}
	if (c->fd >= 0)
		close(c->fd);
	atomic_store(&et->client_done, true);
}

static void test_conn_workers_events(void **state)
{
	struct ev_test *et = calloc(1, sizeof(*et));
	struct scsitgt_engine_opts o;
	uv_thread_t client;
	uv_loop_t loop;

	(void)state;
	assert_non_null(et);
	et->home = uv_thread_self();
	assert_int_equal(uv_mutex_init(&et->lock), 0);
	atomic_init(&et->client_done, false);
	assert_int_equal(uv_loop_init(&loop), 0);
	scsitgt_engine_opts_init(&o, sizeof(o));
	o.workers = 2;
	o.log_cb = ev_log;
	o.log_arg = et;
	o.log_level = SCSITGT_LOG_INFO;
	o.conn_workers = true;
	assert_int_equal(scsitgt_engine_create(&et->engine, &loop, &o), 0);
	assert_true(et->engine->conn_workers);
	assert_int_equal(scsitgt_engine_set_event_cb(et->engine, ev_event, et), 0);
	et->c.id = 7;
	et->c.fd = -1;
	et->c.port = serve_ram_target(et->engine);
	assert_int_equal(uv_thread_create(&client, ev_client_main, et), 0);
	/* Until the client is done and the session's end has reached home (or it failed). */
	while (!atomic_load(&et->client_done) ||
	       (et->c.error[0] == '\0' && et->events[SCSITGT_EVENT_SESSION_LOGOUT] == 0))
		uv_run(&loop, UV_RUN_ONCE);
	uv_thread_join(&client);
	if (et->c.error[0])
		fail_msg("%s", et->c.error);
	/* Every event came to the event callback on home, once; the session's in the order they
	 * happened (the refused login was another connection: no order is promised there). */
	assert_int_equal(et->events_elsewhere, 0);
	assert_int_equal(et->events[SCSITGT_EVENT_LOGIN_FAILED], 1);
	assert_int_equal(et->events[SCSITGT_EVENT_SESSION_LOGIN], 1);
	assert_int_equal(et->events[SCSITGT_EVENT_TMF], 1);
	assert_int_equal(et->events[SCSITGT_EVENT_SESSION_LOGOUT], 1);
	assert_int_equal(et->norder, 4);
	for (unsigned int i = 0, next = 0; i < et->norder; i++) {
		static const enum scsitgt_event_type sess[] = { SCSITGT_EVENT_SESSION_LOGIN,
								SCSITGT_EVENT_TMF,
								SCSITGT_EVENT_SESSION_LOGOUT };

		if (et->order[i] == SCSITGT_EVENT_LOGIN_FAILED)
			continue;
		assert_true(next < 3);
		assert_int_equal(et->order[i], sess[next]);
		next++;
	}
	/* The strings of events raised on a worker arrive intact (copied with the event). */
	assert_int_equal(et->failed_status, 0x0203);
	assert_string_equal(et->failed_iname, "iqn.2026-11.org.libscsitgt:client7");
	assert_string_equal(et->failed_tname, E_IQN_UNKNOWN);
	assert_true(strcmp(et->failed_reason, "(null)") != 0 && et->failed_reason[0] != '\0');
	assert_string_equal(et->tmf_iname, "iqn.2026-11.org.libscsitgt:client7");
	assert_int_equal(et->tmf_function, SCSITGT_TMF_ABORT_TASK_SET);
	/* The log callback: the worker's own lines from the worker (the TMF's), home's from home
	 * (the portal). */
	uv_mutex_lock(&et->lock);
	assert_true(et->log_tmf_worker >= 1);
	assert_true(et->log_home >= 1);
	uv_mutex_unlock(&et->lock);
	run_to_end(&loop, et->engine);
	uv_mutex_destroy(&et->lock);
	free(et);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mpsc_producers),
		cmocka_unit_test(test_opts),
		cmocka_unit_test(test_messages),
		cmocka_unit_test(test_pick),
		cmocka_unit_test(test_tcp_sessions),
		cmocka_unit_test(test_shutdown_with_conns),
		cmocka_unit_test(test_sigpipe_warning),
		cmocka_unit_test(test_conn_workers_events),
		cmocka_unit_test(test_conn_workers_default),
	};

	/* A host that serves sockets ignores SIGPIPE (docs/threading.md): the clients of this
	 * test write to connections the target may have closed. */
	signal(SIGPIPE, SIG_IGN);

	return cmocka_run_group_tests(tests, cw_env_setup, cw_env_teardown);
}
