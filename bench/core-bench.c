/* SPDX-License-Identifier: MIT */
/*
 * core-bench: the core's command path alone, with no sockets and no transport.
 *
 *   core-bench [--seconds S] [--op read|write|spin] [--bs BYTES] [--copy]
 *              [--pr keys|reserved|shared]
 *              [--threads N [--luns shared|per-thread]] [--json]
 *
 * One engine on a private uv loop, one target with a null LUN, one I_T nexus created through
 * the internal fabric interface (core/fabric.h). A trivial fabric runs READ(10) (or WRITE(10))
 * commands back to back on this thread: cmd_done destroys the command and the next one is
 * created, set up and executed. Like iSCSI over TCP, the fabric takes READ data the backend
 * lends (scsitgt_io_lend_data(): the null backend's zero region); --copy makes it a fabric
 * that needs the data in the command's buffer (iSER, SRP), so the null backend zeroes it.
 * It prints commands per second, nanoseconds per command (wall and this thread's CPU time)
 * and heap allocations per command. --pr keys registers a reservation key for the nexus
 * before the run (registered keys, no reservation: issue 18 wants that to cost at most 10%
 * more per command than a plain LUN); --pr reserved also takes a Write Exclusive - All
 * Registrants reservation, which the nexus holds (the reservation check's slow path); --pr
 * shared puts the LUN's reservations in a cluster store (libscsitgt/pr.h, as an RBD LUN's)
 * that READ and WRITE never ask, with a lease as the RBD store keeps one: what the admission
 * of a LUN with shared reservations costs (docs/rbd.md).
 *
 * --threads N (issue 18) runs the engine with N worker loops and one nexus bound to each
 * worker's shard (scsitgt__nexus_info.shard): each worker thread runs its own commands back to
 * back, on one null LUN they share (--luns shared, the default) or on a null LUN each
 * (--luns per-thread). It prints the commands per second of all of them together, the CPU time
 * per command summed over the workers, and allocations per command. With --op spin the
 * workers run private arithmetic instead (no command, nothing shared): the reference that
 * shows whether N cores were free during a run, to read the commands' scaling against.
 *
 * Allocations are counted by wrapping malloc, calloc, realloc, posix_memalign, aligned_alloc
 * and free at link time (-Wl,--wrap=...): this binary links the library's static archive, so
 * every allocation the core makes passes through the wrappers. libc- and libuv-internal
 * allocations (shared libraries) are not seen; the command path makes none.
 */
#include <errno.h>
#include <getopt.h>
#include <stdatomic.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/fabric.h"
#include "libscsitgt/pr.h"
#include "core/shard.h"
#include "core/scsi_spec.h"
#include "util/be.h"

/* --- allocation counters (link-time wrappers) --- */

void *__real_malloc(size_t size);
void *__real_calloc(size_t nmemb, size_t size);
void *__real_realloc(void *ptr, size_t size);
int __real_posix_memalign(void **memptr, size_t alignment, size_t size);
void *__real_aligned_alloc(size_t alignment, size_t size);
void __real_free(void *ptr);

void *__wrap_malloc(size_t size);
void *__wrap_calloc(size_t nmemb, size_t size);
void *__wrap_realloc(void *ptr, size_t size);
int __wrap_posix_memalign(void **memptr, size_t alignment, size_t size);
void *__wrap_aligned_alloc(size_t alignment, size_t size);
void __wrap_free(void *ptr);

/* Atomic: with --threads the workers allocate too (relaxed: only the totals matter). */
static _Atomic uint64_t n_alloc;
static _Atomic uint64_t n_free;

static void count(_Atomic uint64_t *n)
{
	atomic_fetch_add_explicit(n, 1, memory_order_relaxed);
}

void *__wrap_malloc(size_t size)
{
	count(&n_alloc);
	return __real_malloc(size);
}

void *__wrap_calloc(size_t nmemb, size_t size)
{
	count(&n_alloc);
	return __real_calloc(nmemb, size);
}

void *__wrap_realloc(void *ptr, size_t size)
{
	count(&n_alloc);
	return __real_realloc(ptr, size);
}

int __wrap_posix_memalign(void **memptr, size_t alignment, size_t size)
{
	count(&n_alloc);
	return __real_posix_memalign(memptr, alignment, size);
}

void *__wrap_aligned_alloc(size_t alignment, size_t size)
{
	count(&n_alloc);
	return __real_aligned_alloc(alignment, size);
}

void __wrap_free(void *ptr)
{
	if (ptr) {
		count(&n_free);
	}
	__real_free(ptr);
}

/* --- the benchmark fabric --- */

#define LUN_BLOCK_SIZE 512u
#define LUN_BYTES (1ull << 30)
#define TIME_CHECK_EVERY 4096u

struct bench {
	uv_loop_t loop;
	struct scsitgt_engine *engine;
	struct scsitgt_target *tgt;
	struct scsitgt__session *sess;
	uint8_t lun[8];
	struct scsitgt_lun *lun0; /* LUN 0 itself */
	uint8_t cdb[10];
	uint32_t nblocks;
	uint64_t next_lba;
	uint64_t max_lba;
	bool write;
	/* --op spin: the worker threads run private arithmetic instead of commands. */
	bool spin;
	/* READ data copied into the command's buffer instead of lent (--copy). */
	bool copy;
	/* The trampoline: completions inside a submit ask for the next one instead of recursing. */
	bool in_submit;
	bool want_next;
	bool stop;
	unsigned int inflight;
	uint64_t done;
	uint64_t errors;
	unsigned int ua_seen; /* UNIT ATTENTIONs passed over at the start */
	uint64_t t_end;
	/* bench_setup_cmd() runs a command of the setup: its status, nothing else. */
	bool setup_cmd;
	uint8_t setup_status;
	/* --threads: a stream on a worker shard runs a phase when @msg reaches it and posts
	 * @msg back to home when done (main counts them in streams_back); its CPU time. */
	struct scsitgt__msg msg;
	struct bench *main;
	bool reported;
	uint64_t cpu_ns;
	unsigned int streams_back;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CPU time of this thread: unlike wall time, not inflated when other work preempts us. */
static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void run_submits(struct bench *b);
static void stream_maybe_report(struct bench *s);

/* Sense key of fixed (SPC-5 §4.4.3) or descriptor (§4.4.2) format sense data. */
static uint8_t sense_key(const struct scsitgt__cmd *cmd)
{
	if (cmd->sense_len < 3)
		return 0;
	if ((cmd->sense[0] & 0x7f) >= 0x72)
		return cmd->sense[1] & 0x0f;
	return cmd->sense[2] & 0x0f;
}

static void bench_cmd_done(struct scsitgt__cmd *cmd)
{
	struct bench *b = cmd->sess->fabric_ctx;

	if (b->setup_cmd) {
		b->setup_status = cmd->status;
		b->inflight--;
		scsitgt__cmd_destroy(cmd);
		return;
	}
	if (cmd->status == SAM_STAT_CHECK_CONDITION && sense_key(cmd) == 0x06 && b->ua_seen < 8) {
		/* A new nexus first sees its UNIT ATTENTIONs (SAM-5 §5.14, POWER ON ...). */
		b->ua_seen++;
	} else if (cmd->status != SAM_STAT_GOOD) {
		b->errors++;
		if (b->errors == 1) {
			fprintf(stderr,
				"core-bench: command failed, status 0x%02x sense %02x/%02x/%02x\n",
				cmd->status, cmd->sense_len > 2 ? cmd->sense[2] & 0x0f : 0,
				cmd->sense_len > 12 ? cmd->sense[12] : 0,
				cmd->sense_len > 13 ? cmd->sense[13] : 0);
		}
		b->stop = true;
	}
	b->done++;
	b->inflight--;
	scsitgt__cmd_destroy(cmd);
	if (b->in_submit) {
		b->want_next = true;
	} else {
		run_submits(b);
		stream_maybe_report(b);
	}
}

static void bench_cmd_aborted(struct scsitgt__cmd *cmd)
{
	struct bench *b = cmd->sess->fabric_ctx;

	b->inflight--;
	b->errors++;
	b->stop = true;
	scsitgt__cmd_destroy(cmd);
}

static void bench_session_shutdown(struct scsitgt__session *sess)
{
	struct bench *b = sess->fabric_ctx;

	b->sess = NULL;
	scsitgt__session_destroy(sess);
}

static const struct scsitgt__fabric_ops bench_ops = {
	.name = "core-bench",
	.cmd_done = bench_cmd_done,
	.cmd_aborted = bench_cmd_aborted,
	.session_shutdown = bench_session_shutdown,
};

/* Create, set up and execute one command; false when the benchmark must stop. */
static bool submit_one(struct bench *b)
{
	struct scsitgt__cmd *cmd;

	/* SBC-4 §5.16 READ (10) / §5.40 WRITE (10): LBA in bytes 2..5, length in 7..8. */
	put_be32(&b->cdb[2], (uint32_t)b->next_lba);
	b->next_lba += b->nblocks;
	if (b->next_lba + b->nblocks > b->max_lba) {
		b->next_lba = 0;
	}
	if (scsitgt__cmd_create(&cmd, b->sess, 0) < 0) {
		fprintf(stderr, "core-bench: out of memory\n");
		b->errors++;
		return false;
	}
	b->inflight++;
	scsitgt__cmd_setup(cmd, b->lun, b->cdb, sizeof(b->cdb), 0, b->done);
	if (cmd->state == SCSITGT__CMD_NEED_DATA) {
		/* Stands in for the Data-Out a transport would receive into the buffer. */
		memset(cmd->buf, 0x5a, cmd->xfer_len);
	}
	scsitgt__cmd_execute(cmd);
	return true;
}

static void run_submits(struct bench *b)
{
	do {
		b->want_next = false;
		if (b->stop) {
			return;
		}
		if (b->done % TIME_CHECK_EVERY == 0 && now_ns() >= b->t_end) {
			b->stop = true;
			return;
		}
		b->in_submit = true;
		if (!submit_one(b)) {
			b->stop = true;
		}
		b->in_submit = false;
	} while (b->want_next);
}

/* Run one command of the setup (not measured) to its end; its status, or -1. */
static int bench_setup_cmd(struct bench *b, const uint8_t *cdb, size_t cdb_len, const uint8_t *dout,
			   size_t dout_len)
{
	struct scsitgt__cmd *cmd;

	if (scsitgt__cmd_create(&cmd, b->sess, 0) < 0)
		return -1;
	b->setup_cmd = true;
	b->setup_status = 0xff;
	b->inflight++;
	scsitgt__cmd_setup(cmd, b->lun, cdb, cdb_len, 0, 0);
	if (cmd->state == SCSITGT__CMD_NEED_DATA)
		memcpy(cmd->buf, dout, dout_len < cmd->xfer_len ? dout_len : cmd->xfer_len);
	scsitgt__cmd_execute(cmd);
	while (b->inflight)
		uv_run(&b->loop, UV_RUN_ONCE);
	b->setup_cmd = false;
	return b->setup_status;
}

/* --pr: register key 1 for the nexus (SPC-5 §6.17.2 REGISTER), and with @reserve take a
 * Write Exclusive - All Registrants reservation (RESERVE type 7h). 0 or -1. */
static int bench_pr_setup(struct bench *b, bool reserve)
{
	uint8_t tur[6] = { 0 }, cdb[10] = { 0 }, param[24] = { 0 };

	/* the nexus's first command meets POWER ON (SAM-5 §5.14) */
	bench_setup_cmd(b, tur, sizeof(tur), NULL, 0);
	cdb[0] = SPC_PERSISTENT_RESERVE_OUT;
	cdb[1] = PR_OUT_REGISTER;
	put_be32(&cdb[5], sizeof(param));
	put_be64(&param[8], 1);
	if (bench_setup_cmd(b, cdb, sizeof(cdb), param, sizeof(param)) != SAM_STAT_GOOD)
		return -1;
	if (!reserve)
		return 0;
	cdb[1] = PR_OUT_RESERVE;
	cdb[2] = PR_TYPE_WE_AR;
	memset(param, 0, sizeof(param));
	put_be64(&param[0], 1);
	return bench_setup_cmd(b, cdb, sizeof(cdb), param, sizeof(param)) == SAM_STAT_GOOD ? 0 : -1;
}

static void engine_gone(void *arg, int status)
{
	(void)status;
	*(bool *)arg = true;
}

/* --pr shared: a cluster store that the commands measured never ask (PERSISTENT RESERVE OUT
 * alone fetches and commits). */
static void shared_never(void *arg, struct scsitgt_lun *lun, struct scsitgt_pr_req *req)
{
	(void)arg;
	(void)lun;
	(void)req;
	fprintf(stderr, "core-bench: the cluster store was asked\n");
	abort();
}

static void shared_never_commit(void *arg, struct scsitgt_lun *lun, struct scsitgt_pr_req *req,
				const void *data, size_t len, uint64_t version)
{
	(void)data;
	(void)len;
	(void)version;
	shared_never(arg, lun, req);
}

static int bench_pr_shared(struct bench *b)
{
	static const struct scsitgt_pr_cluster_ops ops = {
		.size = sizeof(ops),
		.fetch = shared_never,
		.commit = shared_never_commit,
	};
	int rc = scsitgt_lun_set_pr_cluster(b->lun0, &ops, NULL);

	/* a lease an hour long, renewed by nobody: each command reads the clock */
	if (rc == 0)
		rc = scsitgt_lun_set_pr_lease(b->lun0, (uint64_t)(now_ns() / 1000000u) + 3600000u);
	return rc;
}

/* A null LUN @id on the bench's target. */
static int bench_null_lun(struct bench *b, uint64_t id)
{
	struct scsitgt_lun_opts lo;
	struct scsitgt_lun *lun;
	void *bctx;
	int rc;

	rc = scsitgt_backend_null_create(&bctx);
	if (rc < 0)
		return rc;
	scsitgt_lun_opts_init(&lo, sizeof(lo));
	lo.id = id;
	lo.block_size = LUN_BLOCK_SIZE;
	lo.num_blocks = LUN_BYTES / LUN_BLOCK_SIZE;
	lo.backend = scsitgt_backend_null_ops();
	lo.backend_ctx = bctx;
	rc = scsitgt_lun_create(&lun, b->tgt, &lo);
	if (rc < 0)
		lo.backend->close(bctx, NULL, NULL); /* still ours (lun.h) */
	else if (id == 0)
		b->lun0 = lun;
	return rc;
}

static int bench_setup(struct bench *b)
{
	struct scsitgt_engine_opts eo;
	struct scsitgt_target_opts to;
	struct scsitgt__nexus_info ni;
	int rc;

	rc = uv_loop_init(&b->loop);
	if (rc < 0) {
		return rc;
	}
	scsitgt_engine_opts_init(&eo, sizeof(eo));
	rc = scsitgt_engine_create(&b->engine, &b->loop, &eo);
	if (rc < 0) {
		return rc;
	}
	scsitgt_target_opts_init(&to, sizeof(to));
	to.name = "iqn.2026-11.org.libscsitgt:core-bench";
	rc = scsitgt_target_create(&b->tgt, b->engine, &to);
	if (rc < 0) {
		return rc;
	}
	rc = bench_null_lun(b, 0);
	if (rc < 0) {
		return rc;
	}
	memset(&ni, 0, sizeof(ni));
	ni.protocol_id = SCSITGT__PROTO_ISCSI;
	ni.initiator_name = "iqn.2026-11.org.libscsitgt:core-bench-initiator";
	ni.initiator_port = "iqn.2026-11.org.libscsitgt:core-bench-initiator,i,0x23d000000001";
	ni.target_port = "iqn.2026-11.org.libscsitgt:core-bench,t,0x0001";
	ni.rel_port_id = 1;
	ni.tpg_id = 1;
	ni.lend_data_in = !b->copy;
	rc = scsitgt__session_create(&b->sess, b->tgt, &ni, &bench_ops, b);
	if (rc < 0) {
		return rc;
	}
	scsitgt__lun_encode(0, b->lun);
	b->max_lba = LUN_BYTES / LUN_BLOCK_SIZE;
	return 0;
}

static void bench_teardown(struct bench *b)
{
	bool gone = false;

	if (b->sess) {
		scsitgt__session_destroy(b->sess);
		b->sess = NULL;
	}
	if (b->engine) {
		scsitgt_engine_destroy(b->engine, engine_gone, &gone);
		while (!gone) {
			uv_run(&b->loop, UV_RUN_ONCE);
		}
	}
	uv_run(&b->loop, UV_RUN_DEFAULT);
	uv_loop_close(&b->loop);
}

/* --- --threads: one stream per worker shard --- */

#define MAX_THREADS 64

/* Home: a stream finished its phase. */
static void stream_back(struct scsitgt__msg *msg)
{
	struct bench *s = scsitgt__container_of(msg, struct bench, msg);

	s->main->streams_back++;
}

/* The stream's worker: its phase is over once stopped with nothing in flight. */
static void stream_maybe_report(struct bench *s)
{
	if (s->main == NULL || s->reported || !s->stop || s->inflight)
		return;
	s->reported = true;
	s->cpu_ns = cpu_ns() - s->cpu_ns;
	s->msg.fn = stream_back;
	scsitgt__engine_post(s->main->engine, &s->msg);
}

/*
 * --op spin: the reference for thread scaling. Each worker does arithmetic on a buffer of its
 * own (L1-resident, nothing shared with another thread) until s->t_end, one "command" per 1024
 * steps: N threads give N times one thread's rate only when N cores are free for them.
 */
static void stream_spin(struct bench *s)
{
	uint64_t buf[512] = { 0 };
	uint64_t x = 88172645463325252ull;

	while (!s->stop) {
		for (unsigned int i = 0; i < 1024; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			buf[x & 511] += x;
		}
		s->done++;
		if (s->done % 64 == 0 && now_ns() >= s->t_end)
			s->stop = true;
	}
	s->next_lba = buf[x & 511]; /* keeps the loop's work */
}

/* The stream's worker: run until s->t_end. */
static void stream_run(struct scsitgt__msg *msg)
{
	struct bench *s = scsitgt__container_of(msg, struct bench, msg);

	s->cpu_ns = cpu_ns();
	if (s->spin)
		stream_spin(s);
	else
		run_submits(s);
	stream_maybe_report(s);
}

/* Run one phase of every stream until @t_end; home waits for all of them. */
static void streams_phase(struct bench *b, struct bench *st, unsigned int n, uint64_t t_end)
{
	b->streams_back = 0;
	for (unsigned int i = 0; i < n; i++) {
		st[i].stop = false;
		st[i].reported = false;
		st[i].done = 0;
		st[i].t_end = t_end;
		st[i].msg.fn = stream_run;
		scsitgt__shard_post(&b->engine->shards[i + 1], &st[i].msg);
	}
	while (b->streams_back < n)
		uv_run(&b->loop, UV_RUN_ONCE);
}

static int threads_setup(struct bench *b, struct bench *st, unsigned int n, bool shared)
{
	struct scsitgt_engine_opts eo;
	struct scsitgt_target_opts to;
	int rc;

	rc = uv_loop_init(&b->loop);
	if (rc < 0)
		return rc;
	scsitgt_engine_opts_init(&eo, sizeof(eo));
	eo.workers = (int)n;
	rc = scsitgt_engine_create(&b->engine, &b->loop, &eo);
	if (rc < 0)
		return rc;
	scsitgt_target_opts_init(&to, sizeof(to));
	to.name = "iqn.2026-11.org.libscsitgt:core-bench";
	rc = scsitgt_target_create(&b->tgt, b->engine, &to);
	if (rc < 0)
		return rc;
	for (unsigned int i = 0; i < (shared ? 1 : n); i++) {
		rc = bench_null_lun(b, i);
		if (rc < 0)
			return rc;
	}
	for (unsigned int i = 0; i < n; i++) {
		struct scsitgt__nexus_info ni;
		char port[128];

		snprintf(port, sizeof(port),
			 "iqn.2026-11.org.libscsitgt:core-bench-initiator,i,0x23d0000000%02x", i);
		memset(&ni, 0, sizeof(ni));
		ni.protocol_id = SCSITGT__PROTO_ISCSI;
		ni.initiator_name = "iqn.2026-11.org.libscsitgt:core-bench-initiator";
		ni.initiator_port = port;
		ni.target_port = "iqn.2026-11.org.libscsitgt:core-bench,t,0x0001";
		ni.rel_port_id = 1;
		ni.tpg_id = 1;
		ni.lend_data_in = !b->copy;
		ni.shard = i + 1;
		st[i] = *b;
		st[i].main = b;
		st[i].sess = NULL;
		rc = scsitgt__session_create(&st[i].sess, b->tgt, &ni, &bench_ops, &st[i]);
		if (rc < 0)
			return rc;
		scsitgt__lun_encode(shared ? 0 : i, st[i].lun);
	}
	return 0;
}

static int run_threads(struct bench *b, unsigned int n, bool shared, double seconds, bool json,
		       unsigned long bs)
{
	static struct bench st[MAX_THREADS];
	uint64_t t0, t1, a0, a1, done = 0, errors = 0, cpu = 0;
	double secs, cps, cpu_per, allocs_per;
	int rc;

	b->max_lba = LUN_BYTES / LUN_BLOCK_SIZE;
	rc = threads_setup(b, st, n, shared);
	if (rc < 0) {
		fprintf(stderr, "core-bench: setup failed: %s\n", scsitgt_strerror(rc));
		goto out;
	}
	/* Warm up (each shard's free lists, the allocator's pages), then measure. */
	streams_phase(b, st, n, now_ns() + 200000000u);
	for (unsigned int i = 0; i < n; i++)
		errors += st[i].errors;
	if (errors) {
		rc = -EIO;
		goto out;
	}
	a0 = atomic_load(&n_alloc);
	t0 = now_ns();
	streams_phase(b, st, n, t0 + (uint64_t)(seconds * 1e9));
	t1 = now_ns();
	a1 = atomic_load(&n_alloc);
	for (unsigned int i = 0; i < n; i++) {
		done += st[i].done;
		errors += st[i].errors;
		cpu += st[i].cpu_ns;
	}
	secs = (double)(t1 - t0) / 1e9;
	cps = (double)done / secs;
	cpu_per = done ? (double)cpu / (double)done : 0;
	allocs_per = done ? (double)(a1 - a0) / (double)done : 0;
	if (json) {
		printf("{\"op\":\"%s\",\"threads\":%u,\"luns\":\"%s\",\"bs\":%lu,"
		       "\"seconds\":%.3f,\"commands\":%" PRIu64 ",\"commands_per_s\":%.0f,"
		       "\"cpu_ns_per_command\":%.1f,\"allocs_per_command\":%.2f,"
		       "\"errors\":%" PRIu64 "}\n",
		       b->spin	? "spin" :
		       b->write ? "write" :
				  "read",
		       n, shared ? "shared" : "per-thread", bs, secs, done, cps, cpu_per,
		       allocs_per, errors);
	} else {
		printf("core-bench: %s %lu bytes, %u threads (worker shards), %s, %.2f s\n",
		       b->spin	? "spin (1024 steps each)" :
		       b->write ? "WRITE(10)" :
				  "READ(10)",
		       bs, n, shared ? "one shared null LUN" : "a null LUN per thread", secs);
		printf("  commands      %" PRIu64 " (errors %" PRIu64 ")\n", done, errors);
		printf("  commands/s    %.0f (%.0f per thread)\n", cps, cps / n);
		printf("  ns/command    %.1f CPU (summed over the worker threads)\n", cpu_per);
		printf("  allocs/cmd    %.2f\n", allocs_per);
	}
	rc = errors ? -EIO : 0;
out:
	for (unsigned int i = 0; i < n; i++)
		if (st[i].sess)
			scsitgt__session_destroy(st[i].sess);
	b->sess = NULL;
	bench_teardown(b);
	return rc < 0 ? 1 : 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: core-bench [--seconds S] [--op read|write|spin] [--bs BYTES] [--copy]\n"
		"                  [--pr keys|reserved|shared] [--threads N [--luns shared|per-thread]]\n"
		"                  [--json]\n"
		"  runs READ(10)/WRITE(10) of BYTES (default 4096) on a null LUN back to back;\n"
		"  --copy: READ data is zeroed into the command's buffer instead of lent;\n"
		"  --pr keys: the nexus has a registered reservation key (no reservation);\n"
		"  --pr reserved: and holds a Write Exclusive - All Registrants reservation;\n"
		"  --pr shared: the reservations in a cluster store with a lease (RBD's);\n"
		"  --threads N: N worker loops, one nexus each, on one shared null LUN\n"
		"  (--luns shared) or one each (--luns per-thread);\n"
		"  --op spin (with --threads): private arithmetic instead of commands, the\n"
		"  reference that shows whether N cores were free\n");
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "seconds", required_argument, NULL, 't' },
		{ "op", required_argument, NULL, 'o' },
		{ "bs", required_argument, NULL, 'b' },
		{ "json", no_argument, NULL, 'j' },
		{ "copy", no_argument, NULL, 'c' },
		{ "pr", required_argument, NULL, 'p' },
		{ "threads", required_argument, NULL, 'T' },
		{ "luns", required_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static struct bench b;
	double seconds = 5, secs, cps, ns_per, cpu_ns_per, allocs_per, frees_per;
	unsigned long bs = 4096;
	uint64_t t0, t1, c0, c1, a0, f0, a1, f1;
	bool json = false;
	int pr = 0; /* 1: keys, 2: reserved, 3: shared */
	unsigned long threads = 0;
	bool shared = true;
	char *end;
	int c, rc;

	while ((c = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
		switch (c) {
		case 't':
			seconds = strtod(optarg, &end);
			if (*end || seconds <= 0 || seconds > 3600) {
				fprintf(stderr, "core-bench: bad --seconds '%s'\n", optarg);
				return 2;
			}
			break;
		case 'o':
			if (strcmp(optarg, "read") == 0) {
				b.write = false;
			} else if (strcmp(optarg, "write") == 0) {
				b.write = true;
			} else if (strcmp(optarg, "spin") == 0) {
				b.spin = true;
			} else {
				fprintf(stderr, "core-bench: bad --op '%s'\n", optarg);
				return 2;
			}
			break;
		case 'b':
			bs = strtoul(optarg, &end, 10);
			if (*end || bs == 0 || bs % LUN_BLOCK_SIZE || bs > (1u << 20)) {
				fprintf(stderr,
					"core-bench: --bs must be a multiple of %u up to 1 MiB\n",
					LUN_BLOCK_SIZE);
				return 2;
			}
			break;
		case 'j':
			json = true;
			break;
		case 'c':
			b.copy = true;
			break;
		case 'p':
			if (strcmp(optarg, "keys") == 0) {
				pr = 1;
			} else if (strcmp(optarg, "reserved") == 0) {
				pr = 2;
			} else if (strcmp(optarg, "shared") == 0) {
				pr = 3;
			} else {
				fprintf(stderr, "core-bench: bad --pr '%s'\n", optarg);
				return 2;
			}
			break;
		case 'T':
			threads = strtoul(optarg, &end, 10);
			if (*end || threads == 0 || threads > MAX_THREADS) {
				fprintf(stderr, "core-bench: --threads must be 1..%u\n",
					MAX_THREADS);
				return 2;
			}
			break;
		case 'L':
			if (strcmp(optarg, "shared") == 0) {
				shared = true;
			} else if (strcmp(optarg, "per-thread") == 0) {
				shared = false;
			} else {
				fprintf(stderr, "core-bench: bad --luns '%s'\n", optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc || (threads && pr) || (b.spin && !threads)) {
		usage(stderr);
		return 2;
	}
	if (threads) {
		b.nblocks = (uint32_t)(bs / LUN_BLOCK_SIZE);
		b.cdb[0] = b.write ? SBC_WRITE_10 : SBC_READ_10;
		put_be16(&b.cdb[7], (uint16_t)b.nblocks);
		return run_threads(&b, (unsigned int)threads, shared, seconds, json, bs);
	}
	rc = bench_setup(&b);
	if (rc < 0) {
		fprintf(stderr, "core-bench: setup failed: %s\n", scsitgt_strerror(rc));
		bench_teardown(&b);
		return 1;
	}
	if (pr == 3 && bench_pr_shared(&b) < 0) {
		fprintf(stderr, "core-bench: cannot install the cluster store\n");
		bench_teardown(&b);
		return 1;
	}
	if ((pr == 1 || pr == 2) && bench_pr_setup(&b, pr == 2) < 0) {
		fprintf(stderr, "core-bench: PERSISTENT RESERVE OUT failed (status 0x%02x)\n",
			b.setup_status);
		bench_teardown(&b);
		return 1;
	}
	b.nblocks = (uint32_t)(bs / LUN_BLOCK_SIZE);
	b.cdb[0] = b.write ? SBC_WRITE_10 : SBC_READ_10;
	put_be16(&b.cdb[7], (uint16_t)b.nblocks);

	/* Warm up (first-touch of the allocator's pages), then measure. */
	b.t_end = now_ns() + 200000000u;
	run_submits(&b);
	while (b.inflight) {
		uv_run(&b.loop, UV_RUN_ONCE);
	}
	if (b.errors) {
		bench_teardown(&b);
		return 1;
	}
	b.stop = false;
	b.done = 0;
	a0 = n_alloc;
	f0 = n_free;
	c0 = cpu_ns();
	t0 = now_ns();
	b.t_end = t0 + (uint64_t)(seconds * 1e9);
	run_submits(&b);
	while (!b.stop || b.inflight) {
		uv_run(&b.loop, UV_RUN_ONCE);
	}
	t1 = now_ns();
	c1 = cpu_ns();
	a1 = n_alloc;
	f1 = n_free;
	secs = (double)(t1 - t0) / 1e9;
	cps = (double)b.done / secs;
	ns_per = b.done ? (double)(t1 - t0) / (double)b.done : 0;
	cpu_ns_per = b.done ? (double)(c1 - c0) / (double)b.done : 0;
	allocs_per = b.done ? (double)(a1 - a0) / (double)b.done : 0;
	frees_per = b.done ? (double)(f1 - f0) / (double)b.done : 0;
	if (json) {
		printf("{\"op\":\"%s\",\"pr\":\"%s\",\"bs\":%lu,\"seconds\":%.3f,\"commands\":%" PRIu64
		       ",\"commands_per_s\":%.0f,\"ns_per_command\":%.1f,"
		       "\"cpu_ns_per_command\":%.1f,\"allocs_per_command\":%.2f,"
		       "\"frees_per_command\":%.2f,\"errors\":%" PRIu64 "}\n",
		       b.write ? "write" : "read",
		       pr == 3 ? "shared" :
		       pr == 2 ? "reserved" :
		       pr == 1 ? "keys" :
				 "none",
		       bs, secs, b.done, cps, ns_per, cpu_ns_per, allocs_per, frees_per, b.errors);
	} else {
		printf("core-bench: %s(10) %lu bytes, null LUN%s, one thread, %.2f s\n",
		       b.write ? "WRITE" : "READ", bs,
		       pr == 3 ? " (shared reservations)" :
		       pr == 2 ? " (reserved)" :
		       pr == 1 ? " (registered key)" :
				 "",
		       secs);
		printf("  commands      %" PRIu64 " (errors %" PRIu64 ")\n", b.done, b.errors);
		printf("  commands/s    %.0f\n", cps);
		printf("  ns/command    %.1f wall, %.1f CPU (this thread)\n", ns_per, cpu_ns_per);
		printf("  allocs/cmd    %.2f (frees/cmd %.2f)\n", allocs_per, frees_per);
	}
	bench_teardown(&b);
	return b.errors ? 1 : 0;
}
