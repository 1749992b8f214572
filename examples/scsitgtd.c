/* SPDX-License-Identifier: MIT */
/*
 * scsitgtd: a small SCSI target daemon (iSCSI over TCP and iSER, SRP) built only on the public
 * libscsitgt API.
 *
 *   scsitgtd [-t] CONFIG
 *
 * It reads CONFIG (INI, lexed by libinih; format: docs/scsitgtd.md), serves it, and then:
 *   SIGHUP          re-reads CONFIG and applies the difference (scsitgtd_apply.c: targets,
 *                   LUNs, sizes, offline flags, LUN masking, access by name and address,
 *                   CHAP, iSCSI parameters, ALUA groups and states, portals, SRP ports)
 *                   without a restart; a file with errors is refused and the running
 *                   configuration stays;
 *   SIGUSR1         prints the counters of every LUN, session and connection to stdout;
 *   SIGTERM/SIGINT  stops cleanly (initiators are asked to log out, I/O drains).
 * With control_socket = PATH in [engine] it also answers JSON-RPC 2.0 requests on that unix
 * socket (scsitgtd_control.c; the client is scsitgtctl).
 * With metrics = ADDRESS:PORT in [engine] it serves the counters in the Prometheus text format
 * on GET /metrics (scsitgtd_metrics.c).
 * With pidfile = PATH in [engine] it locks PATH at start (a second daemon on the same file is
 * refused), writes its pid there once ready and removes it at a clean stop.
 * With -t it only checks CONFIG and exits 0 (valid) or 1 (the message says file and line).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#include "scsitgtd.h"
#include "scsitgtd_control.h"
#include "scsitgtd_log.h"
#include "scsitgtd_metrics.h"
#include "scsitgtd_notify.h"

static const char *level_name(enum scsitgt_log_level l)
{
	switch (l) {
	case SCSITGT_LOG_ERROR:
		return "error";
	case SCSITGT_LOG_WARNING:
		return "warning";
	case SCSITGT_LOG_NOTICE:
		return "notice";
	case SCSITGT_LOG_INFO:
		return "info";
	default:
		return "debug";
	}
}

static void log_cb(void *arg, enum scsitgt_log_level level, const char *subsystem, const char *fmt,
		   va_list ap)
{
	struct scsitgtd *d = arg;

	struct timespec now = { 0, 0 };
	char prefix[40];

	if ((int)level > atomic_load_explicit(&d->log_level, memory_order_relaxed))
		return;
	if (!d->log_journal)
		clock_gettime(CLOCK_REALTIME, &now);
	scsitgtd_log_prefix(prefix, sizeof(prefix), d->log_journal, (int)level, &now);
	/* One write per line (stderr is unbuffered): lines of worker threads do not mix. */
	flockfile(stderr);
	fprintf(stderr, "%sscsitgtd: %s: [%s] ", prefix, level_name(level), subsystem);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	funlockfile(stderr);
}

/* Under systemd with stderr connected to journald (systemd.exec(5), JOURNAL_STREAM). */
static bool stderr_is_journal(void)
{
	struct stat st;

	return fstat(STDERR_FILENO, &st) == 0 &&
	       scsitgtd_log_is_journal(getenv("JOURNAL_STREAM"), st.st_dev, st.st_ino);
}

void scsitgtd_log(struct scsitgtd *d, enum scsitgt_log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_cb(d, level, "scsitgtd", fmt, ap);
	va_end(ap);
}

static void event_cb(void *arg, const struct scsitgt_event *ev)
{
	struct scsitgtd *d = arg;
	const char *tname = ev->target ? scsitgt_target_get_name(ev->target) : "-";

	switch (ev->type) {
	case SCSITGT_EVENT_SESSION_LOGIN:
	case SCSITGT_EVENT_SESSION_LOGOUT:
		scsitgtd_log(d, SCSITGT_LOG_NOTICE, "event %s: %s from %s on %s",
			     scsitgt_event_type_name(ev->type), ev->initiator_name,
			     ev->initiator_addr, tname);
		break;
	case SCSITGT_EVENT_LOGIN_FAILED:
		scsitgtd_log(d, SCSITGT_LOG_NOTICE, "event %s: %s from %s to %s: %s (0x%04x)",
			     scsitgt_event_type_name(ev->type),
			     ev->initiator_name ? ev->initiator_name : "-", ev->initiator_addr,
			     ev->target_name ? ev->target_name : "-", ev->reason, ev->login_status);
		break;
	case SCSITGT_EVENT_TMF:
		scsitgtd_log(d, SCSITGT_LOG_NOTICE, "event %s: function %u on %s LUN %llu by %s",
			     scsitgt_event_type_name(ev->type), ev->tmf_function, tname,
			     (unsigned long long)ev->lun_id, ev->initiator_port);
		break;
	case SCSITGT_EVENT_LUN_ERROR:
		scsitgtd_log(d, SCSITGT_LOG_WARNING,
			     "event %s: %s LUN %llu opcode %02xh sense %xh/%02xh/%02xh (%s)",
			     scsitgt_event_type_name(ev->type), tname,
			     (unsigned long long)ev->lun_id, ev->opcode, ev->sense_key, ev->asc,
			     ev->ascq, ev->initiator_name);
		break;
	case SCSITGT_EVENT_ALUA_STATE_CHANGED:
		scsitgtd_log(d, SCSITGT_LOG_NOTICE, "event %s: %s group %u %#x -> %#x%s%s",
			     scsitgt_event_type_name(ev->type), tname, ev->alua_group,
			     ev->alua_old_state, ev->alua_new_state,
			     ev->initiator_name ? " by " : "",
			     ev->initiator_name ? ev->initiator_name : "");
		break;
	default:
		scsitgtd_log(d, SCSITGT_LOG_NOTICE, "event %s: %s LUN %llu%s%s",
			     scsitgt_event_type_name(ev->type), tname,
			     (unsigned long long)ev->lun_id, ev->initiator_name ? " by " : "",
			     ev->initiator_name ? ev->initiator_name : "");
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

/* "line N: what" lines become "PATH:N: what" lines, the form editors jump to. */
static void with_path(const char *path, const char *msg, char *err, size_t err_size)
{
	size_t off = 0;

	err[0] = '\0';
	while (*msg && off + 1 < err_size) {
		size_t n = strcspn(msg, "\n");
		int w;

		if (strncmp(msg, "line ", 5) == 0)
			w = snprintf(err + off, err_size - off, "%s%s:%.*s", off ? "\n" : "", path,
				     (int)(n - 5), msg + 5);
		else
			w = snprintf(err + off, err_size - off, "%s%s: %.*s", off ? "\n" : "", path,
				     (int)n, msg);
		if (w < 0)
			break;
		off += (size_t)w < err_size - off ? (size_t)w : err_size - off - 1;
		msg += n + (msg[n] == '\n');
	}
}

static struct scsitgtd_config *load(const char *path, char *err, size_t err_size)
{
	struct scsitgtd_config *cfg = NULL;
	char *msg = malloc(SCSITGTD_ERR_SIZE);
	size_t len, off = 0;
	char *text;
	int rc;

	if (msg == NULL) {
		snprintf(err, err_size, "%s: out of memory", path);
		return NULL;
	}
	text = read_file(path, &len, msg, SCSITGTD_ERR_SIZE);
	if (text == NULL) {
		snprintf(err, err_size, "%s: %s", path, msg);
		free(msg);
		return NULL;
	}
	rc = scsitgtd_config_parse(text, len, &cfg, msg, SCSITGTD_ERR_SIZE);
	free(text);
	/* The parser leaves fault specifications to the library that reads them: every bad
	 * one is listed too. */
	for (size_t i = 0; rc == 0 && i < cfg->ntargets; i++) {
		for (size_t j = 0; j < cfg->targets[i].nluns; j++) {
			const struct scsitgtd_lun *l = &cfg->targets[i].luns[j];
			int w;

			if (l->fault == NULL || scsitgtd_fault_spec_check(l->fault) == 0)
				continue;
			w = snprintf(msg + off, SCSITGTD_ERR_SIZE - off,
				     "%sline %u: fault: \"%s\" is not a fault "
				     "specification (backend_fault.h)",
				     off ? "\n" : "", l->fault_line, l->fault);
			if (w > 0)
				off += (size_t)w < SCSITGTD_ERR_SIZE - off ?
					       (size_t)w :
					       SCSITGTD_ERR_SIZE - off - 1;
		}
	}
	if (rc == 0 && off) {
		scsitgtd_config_free(cfg);
		cfg = NULL;
		rc = -EINVAL;
	}
	if (rc < 0)
		with_path(path, msg, err, err_size);
	free(msg);
	return cfg;
}

/* Print each line of @err on stderr after "scsitgtd: ". */
static void print_errors(const char *err)
{
	while (*err) {
		size_t n = strcspn(err, "\n");

		fprintf(stderr, "scsitgtd: %.*s\n", (int)n, err);
		err += n + (err[n] == '\n');
	}
}

static bool str_same(const char *a, const char *b)
{
	return (a == NULL && b == NULL) || (a && b && !strcmp(a, b));
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

static void print_stats(struct scsitgtd *d)
{
	for (size_t i = 0; i < d->cfg->ntargets; i++) {
		const struct scsitgtd_target *t = &d->cfg->targets[i];

		if (d->tgts[i].tgt == NULL)
			continue;
		printf("target %s\n", t->name);
		for (size_t j = 0; j < t->nluns; j++) {
			struct scsitgt_lun *lun =
				scsitgt_target_get_lun(d->tgts[i].tgt, t->luns[j].id);
			struct scsitgt_lun_stats s;
			char who[64];

			if (lun == NULL)
				continue;
			s.size = sizeof(s);
			if (scsitgt_lun_get_stats(lun, &s) < 0)
				continue;
			snprintf(who, sizeof(who), "  lun %llu%s",
				 (unsigned long long)t->luns[j].id, s.offline ? " (offline)" : "");
			print_counters(who, &s.cmds);
			printf("    latency_us");
			for (int b = 0; b < SCSITGT_LATENCY_BUCKETS; b++)
				if (s.latency_us[b])
					printf(" <%llu:%llu", 1ull << (b + 1),
					       (unsigned long long)s.latency_us[b]);
			printf("\n");
		}
		for (size_t j = 0; j < t->nsrps; j++) {
			uint32_t channels = 0, nexuses = 0;

			if (d->tgts[i].srps[j] == NULL)
				continue;
			scsitgt_srp_portal_get_counts(d->tgts[i].srps[j], &channels, &nexuses);
			printf("  srp %s:%u channels %u nexuses %u\n", t->srps[j].address,
			       scsitgt_srp_portal_get_port(d->tgts[i].srps[j]), channels, nexuses);
		}
		scsitgt_target_foreach_session(d->tgts[i].tgt, print_session, NULL);
	}
	scsitgt_iscsi_engine_foreach_conn(d->engine, print_conn, NULL);
	fflush(stdout);
}

/* ---- pidfile ---- */

/*
 * Open and lock @path (flock, held until the process ends: a daemon that dies leaves a file
 * nobody holds, which the next start takes over). The pid is written once ready.
 * Returns the descriptor, or -1 with @err saying why.
 */
static int pidfile_lock(const char *path, char *err, size_t err_size)
{
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	char buf[32];
	ssize_t n;

	if (fd < 0) {
		snprintf(err, err_size, "pidfile %s: %s", path, strerror(errno));
		return -1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) == 0)
		return fd;
	if (errno == EWOULDBLOCK) {
		n = pread(fd, buf, sizeof(buf) - 1, 0);
		buf[n > 0 ? n : 0] = '\0';
		buf[strcspn(buf, "\n")] = '\0';
		snprintf(err, err_size, "pidfile %s: held by a running scsitgtd (pid %s)", path,
			 buf[0] ? buf : "not written yet");
	} else {
		snprintf(err, err_size, "pidfile %s: lock: %s", path, strerror(errno));
	}
	close(fd);
	return -1;
}

static int pidfile_write(int fd)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%ld\n", (long)getpid());

	if (ftruncate(fd, 0) < 0 || pwrite(fd, buf, (size_t)n, 0) != n)
		return -errno;
	return 0;
}

/* ---- signals ---- */

static void engine_gone(void *arg, int status)
{
	struct scsitgtd *d = arg;

	(void)status;
	d->engine = NULL;
	/* A backend the engine gave up on (drain_timeout_ms) is ours to close; one that cannot
	 * be closed would keep the loop running for good. */
	if (scsitgtd_backends_orphaned(d)) {
		d->backends_left = true;
		uv_stop(d->loop);
	}
}

static void engine_stop(struct scsitgtd *d)
{
	scsitgt_engine_destroy(d->engine, engine_gone, d);
}

static void stop(struct scsitgtd *d)
{
	if (d->stopping)
		return;
	d->stopping = true;
	scsitgtd_notify_stopping();
	scsitgtd_log(d, SCSITGT_LOG_NOTICE, "stopping");
	uv_close((uv_handle_t *)&d->sig_hup, NULL);
	uv_close((uv_handle_t *)&d->sig_term, NULL);
	uv_close((uv_handle_t *)&d->sig_int, NULL);
	uv_close((uv_handle_t *)&d->sig_usr1, NULL);
	scsitgtd_control_stop(d);
	scsitgtd_metrics_stop(d);
	scsitgtd_reload_settle_stop(d);
	/* The gateways first: they release the lock (a standby takes it at once). */
	scsitgtd_gateways_stop(d, engine_stop);
}

static void on_signal(uv_signal_t *h, int signum)
{
	struct scsitgtd *d = h->data;
	char err[SCSITGTD_ERR_SIZE];

	switch (signum) {
	case SIGHUP:
		scsitgtd_reload(d, err, sizeof(err));
		break;
	case SIGUSR1:
		print_stats(d);
		break;
	default:
		stop(d);
		break;
	}
}

int scsitgtd_reload(struct scsitgtd *d, char *err, size_t err_size)
{
	struct scsitgtd_config *nc;

	scsitgtd_notify_reloading();
	nc = load(d->path, err, err_size);
	if (nc == NULL) {
		unsigned int n = 1;

		for (const char *e = err; *e; e++)
			n += *e == '\n';
		scsitgtd_notify_ready();
		scsitgtd_log(d, SCSITGT_LOG_ERROR, "reload refused, configuration kept: %u error%s",
			     n, n > 1 ? "s" : "");
		for (const char *e = err; *e;) {
			size_t k = strcspn(e, "\n");

			scsitgtd_log(d, SCSITGT_LOG_ERROR, "%.*s", (int)k, e);
			e += k + (e[k] == '\n');
		}
		return -EINVAL;
	}
	if (!str_same(nc->control_socket, d->cfg->control_socket))
		scsitgtd_log(d, SCSITGT_LOG_WARNING,
			     "control_socket: takes effect at the next start");
	if (!str_same(nc->metrics_address, d->cfg->metrics_address) ||
	    nc->metrics_port != d->cfg->metrics_port)
		scsitgtd_log(d, SCSITGT_LOG_WARNING, "metrics: takes effect at the next start");
	if (!str_same(nc->pidfile, d->cfg->pidfile))
		scsitgtd_log(d, SCSITGT_LOG_WARNING, "pidfile: takes effect at the next start");
	if (scsitgtd_apply(d, nc) < 0) {
		scsitgtd_notify_ready();
		scsitgtd_config_free(nc);
		snprintf(err, err_size, "out of memory");
		scsitgtd_log(d, SCSITGT_LOG_ERROR, "reload: out of memory");
		return -ENOMEM;
	}
	d->file_gen++;
	scsitgtd_notify_ready();
	scsitgtd_log(d, SCSITGT_LOG_NOTICE, "reloaded %s", d->path);
	printf("scsitgtd: reloaded\n");
	fflush(stdout);
	/* Which LUNs of the file were not created, once its images are open. */
	scsitgtd_reload_settle(d);
	return 0;
}

static int signal_start(struct scsitgtd *d, uv_signal_t *h, int signum)
{
	int rc = uv_signal_init(d->loop, h);

	if (rc < 0)
		return rc;
	h->data = d;
	return uv_signal_start(h, on_signal, signum);
}

int main(int argc, char **argv)
{
	struct scsitgtd d;
	struct scsitgt_engine_opts eo;
	struct scsitgtd_config *cfg;
	bool check_only = false;
	char err[SCSITGTD_ERR_SIZE];
	int rc, pid_fd = -1;
	char *pid_path = NULL; /* the pidfile of the start (a reload does not move it) */

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
		print_errors(err);
		return 1;
	}
	if (check_only) {
		printf("%s: OK (%zu portals, %zu targets)\n", d.path, cfg->nportals, cfg->ntargets);
		scsitgtd_config_free(cfg);
		return 0;
	}
	atomic_store_explicit(&d.log_level, cfg->log_level, memory_order_relaxed);
	d.log_journal = stderr_is_journal();
	if (cfg->pidfile) {
		pid_path = strdup(cfg->pidfile);
		pid_fd = pid_path ? pidfile_lock(pid_path, err, sizeof(err)) : -1;
		if (pid_fd < 0) {
			if (pid_path == NULL)
				snprintf(err, sizeof(err), "out of memory");
			free(pid_path);
			fprintf(stderr, "scsitgtd: %s\n", err);
			scsitgtd_config_free(cfg);
			return 1;
		}
	}
	d.loop = uv_default_loop();
	signal(SIGPIPE, SIG_IGN);

	scsitgt_engine_opts_init(&eo, sizeof(eo));
	eo.log_cb = log_cb;
	eo.log_arg = &d;
	eo.log_level = SCSITGT_LOG_DEBUG; /* filtered in log_cb, so that reload can change it */
	if (cfg->workers != -2)
		eo.workers = cfg->workers == -1 ? SCSITGT_ENGINE_WORKERS_AUTO : cfg->workers;
	if (cfg->conn_workers >= 0)
		eo.conn_workers = cfg->conn_workers != 0;
	rc = scsitgt_engine_create(&d.engine, d.loop, &eo);
	if (rc < 0) {
		fprintf(stderr, "scsitgtd: engine: %s\n", scsitgt_strerror(rc));
		scsitgtd_config_free(cfg);
		return 1;
	}
	scsitgt_engine_set_event_cb(d.engine, event_cb, &d);
	if (cfg->nportals == 0)
		scsitgtd_log(&d, SCSITGT_LOG_WARNING, "no [portal]: no iSCSI");
	rc = scsitgtd_apply(&d, cfg);
	if (rc < 0) {
		fprintf(stderr, "scsitgtd: %s\n", scsitgt_strerror(rc));
		scsitgtd_config_free(cfg);
		return 1;
	}
	if (signal_start(&d, &d.sig_hup, SIGHUP) < 0 ||
	    signal_start(&d, &d.sig_term, SIGTERM) < 0 ||
	    signal_start(&d, &d.sig_int, SIGINT) < 0 ||
	    signal_start(&d, &d.sig_usr1, SIGUSR1) < 0) {
		fprintf(stderr, "scsitgtd: cannot install signal handlers\n");
		return 1;
	}
	for (size_t i = 0; i < d.cfg->nportals; i++) {
		if (d.portals[i] == NULL)
			d.exit_code = 1;
	}
	for (size_t i = 0; i < d.cfg->ntargets; i++) {
		for (size_t j = 0; j < d.cfg->targets[i].nsrps; j++)
			if (d.tgts[i].srps[j] == NULL)
				d.exit_code = 1;
	}
	if (!d.exit_code && d.cfg->control_socket) {
		rc = scsitgtd_control_start(&d, d.cfg->control_socket, err, sizeof(err));
		if (rc < 0) {
			scsitgtd_log(&d, SCSITGT_LOG_ERROR, "control_socket %s: %s",
				     d.cfg->control_socket, err);
			d.exit_code = 1;
		}
	}
	if (!d.exit_code && d.cfg->metrics_address) {
		rc = scsitgtd_metrics_start(&d, d.cfg->metrics_address, d.cfg->metrics_port, err,
					    sizeof(err));
		if (rc < 0) {
			scsitgtd_log(&d, SCSITGT_LOG_ERROR, "metrics %s port %u: %s",
				     d.cfg->metrics_address, d.cfg->metrics_port, err);
			d.exit_code = 1;
		}
	}
	if (d.exit_code) {
		/* A portal or SRP port that cannot listen at start is a configuration error. */
		stop(&d);
	} else {
		/* RBD images open off the loop: "ready" once every LUN of the file exists;
		 * never after a SIGTERM meanwhile (STOPPING=1 was sent). */
		while (scsitgtd_opening(&d) && !d.stopping)
			uv_run(d.loop, UV_RUN_ONCE);
		if (!d.stopping) {
			if (pid_fd >= 0 && (rc = pidfile_write(pid_fd)) < 0)
				scsitgtd_log(&d, SCSITGT_LOG_ERROR, "pidfile %s: %s", pid_path,
					     strerror(-rc));
			scsitgtd_notify_ready();
			printf("scsitgtd: ready (%zu targets)\n", d.cfg->ntargets);
			fflush(stdout);
		}
	}
	uv_run(d.loop, UV_RUN_DEFAULT);
	if (pid_fd >= 0) {
		/* Removed while still locked: a new daemon cannot take it in between. */
		if (unlink(pid_path) < 0)
			scsitgtd_log(&d, SCSITGT_LOG_WARNING, "pidfile %s: %s", pid_path,
				     strerror(errno));
		close(pid_fd);
		free(pid_path);
	}
	if (d.backends_left) {
		fflush(stdout);
		fflush(stderr);
		_exit(d.exit_code);
	}
	scsitgtd_free(&d);
	uv_loop_close(d.loop);
	return d.exit_code;
}
