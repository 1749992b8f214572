/* SPDX-License-Identifier: MIT */
/*
 * uring-sock-bench: would an io_uring data mover for iSCSI/TCP sockets save CPU against the
 * epoll + read + writev that libuv drives today? (issue 18: "io_uring for sockets if it
 * measures better"). It measures the socket part alone, in the shape of the target's 4 KiB
 * QD32 read load, with nothing else in the server:
 *
 *  - a client process (forked; libiscsi's pattern) keeps --qd requests in flight, sends each
 *    48-byte request with its own send() and a new one for every response it has read;
 *  - the server answers every request with a 48-byte header and --bs bytes of data (a Data-In
 *    PDU carrying status), all responses of one wake-up in one vectored send, as the target's
 *    writer does;
 *  - mode "epoll": epoll_wait, read (up to 256 KiB), writev: the three calls per wake-up of a
 *    libuv loop; mode "uring": one io_uring_submit_and_wait() per wake-up submits the send
 *    and the next receive and waits for a completion (RECV and SENDMSG with MSG_WAITALL).
 *
 * Printed per mode (median of --runs, modes alternating within each run): requests/s, the
 * server process's CPU per request (user + system, getrusage), requests per wake-up, and the
 * ratio of uring's CPU per request to epoll's. The server's CPU per request is everything the
 * target would save or lose at best: the target's own work per command comes on top of it.
 *
 *   uring-sock-bench [--seconds 3] [--runs 5] [--qd 32] [--bs 4096] [--pin]
 *
 * --pin: the server on CPU 0 and the client on CPU 1.
 */
#include <errno.h>
#include <limits.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_time.h"

#define REQ_LEN 48
#define HDR_LEN 48
#define RBUF_LEN (256 * 1024)
#define MAX_BATCH (RBUF_LEN / REQ_LEN)

struct opts {
	double seconds;
	unsigned int runs;
	unsigned int qd;
	size_t bs;
	bool pin;
};

struct result {
	double rps;
	double cpu_us_per_req;
	double req_per_wake;
};

/* The server's reply state: one header per request, all pointing at one data buffer. */
struct server {
	int fd;
	char rbuf[RBUF_LEN];
	size_t have;
	uint8_t hdr[MAX_BATCH][HDR_LEN];
	struct iovec iov[2 * MAX_BATCH];
	char *data;
	size_t bs;
	uint64_t served;
	uint64_t wakes;
	/* The measured window: from mark (after the warm-up) to end; snapshot at mark. */
	double mark, end;
	bool marked;
	double t0, c0;
	uint64_t served0, wakes0;
};

static void die(const char *what, int err)
{
	fprintf(stderr, "uring-sock-bench: %s: %s\n", what, strerror(err));
	exit(1);
}

static void pin_to(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) < 0)
		die("sched_setaffinity", errno);
}

/* Client: keep @qd requests in flight until the server closes the connection. */
static void client(int fd, unsigned int qd, size_t bs)
{
	size_t rsp = HDR_LEN + bs, have = 0, cap = 1024 * 1024;
	char req[REQ_LEN] = { 0 };
	char *buf = malloc(cap);
	unsigned int i;

	if (buf == NULL)
		_exit(1);
	for (i = 0; i < qd; i++)
		if (send(fd, req, sizeof(req), 0) != (ssize_t)sizeof(req))
			_exit(0);
	for (;;) {
		ssize_t r = read(fd, buf, cap);

		if (r <= 0)
			_exit(0);
		have += (size_t)r;
		for (; have >= rsp; have -= rsp)
			if (send(fd, req, sizeof(req), 0) != (ssize_t)sizeof(req))
				_exit(0);
	}
}

/* Server: the complete requests received so far become one vector of responses (@have
 * counts request bytes; their content does not matter, each reply carries a fresh header).
 * Returns the vector's length in iovecs (0: nothing complete). */
static int server_take(struct server *s, size_t *bytes)
{
	size_t n = s->have / REQ_LEN, i;

	for (i = 0; i < n; i++) {
		memset(s->hdr[i], 0, HDR_LEN);
		s->hdr[i][0] = 0x25; /* a Data-In opcode, for the look of it */
		memcpy(s->hdr[i] + 16, &s->served, sizeof(s->served));
		s->iov[2 * i] = (struct iovec){ .iov_base = s->hdr[i], .iov_len = HDR_LEN };
		s->iov[2 * i + 1] = (struct iovec){ .iov_base = s->data, .iov_len = s->bs };
		s->served++;
	}
	s->have -= n * REQ_LEN;
	*bytes = n * (HDR_LEN + s->bs);
	return (int)(2 * n);
}

/* True while the run goes on; takes the snapshot when the warm-up ends. One loop serves both,
 * so nothing in flight is dropped between them. */
static bool server_running(struct server *s)
{
	double t = bench_now_s();

	if (!s->marked && t >= s->mark) {
		s->marked = true;
		s->t0 = t;
		s->c0 = bench_cpu_s();
		s->served0 = s->served;
		s->wakes0 = s->wakes;
	}
	return t < s->end;
}

static void server_epoll(struct server *s)
{
	struct epoll_event ev = { .events = EPOLLIN }, out;
	int ep = epoll_create1(0);

	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, s->fd, &ev) < 0)
		die("epoll", errno);
	while (server_running(s)) {
		size_t bytes, done = 0;
		ssize_t r;
		int n;

		if (epoll_wait(ep, &out, 1, 100) <= 0)
			continue;
		s->wakes++;
		r = read(s->fd, s->rbuf, sizeof(s->rbuf));
		if (r <= 0)
			die("read", r < 0 ? errno : EPIPE);
		s->have += (size_t)r;
		n = server_take(s, &bytes);
		/* The socket blocks on writes: the client never stops reading, and a short
		 * writev is finished here (libuv would wait for EPOLLOUT). */
		while (n > 0 && done < bytes) {
			r = writev(s->fd, s->iov, n < IOV_MAX ? n : IOV_MAX);
			if (r <= 0)
				die("writev", r < 0 ? errno : EPIPE);
			done += (size_t)r;
			/* Drop what went out from the vector's front. */
			while (n > 0 && (size_t)r >= s->iov[0].iov_len) {
				r -= (ssize_t)s->iov[0].iov_len;
				memmove(s->iov, s->iov + 1, (size_t)(n - 1) * sizeof(*s->iov));
				n--;
			}
			if (n > 0) {
				s->iov[0].iov_base = (char *)s->iov[0].iov_base + r;
				s->iov[0].iov_len -= (size_t)r;
			}
		}
	}
	close(ep);
}

enum {
	U_RECV = 1,
	U_SEND = 2
};

static void server_uring(struct server *s)
{
	struct io_uring ring;
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	struct msghdr mh = { 0 };
	bool sending = false;
	unsigned int wait_nr = 1;
	size_t want = 0;
	int r;

	/* Completions run in this thread's own calls (no task-work interrupts), as a
	 * networking ring should be set up on kernels that have it (6.1). */
	r = io_uring_queue_init(8, &ring, IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN);
	if (r == -EINVAL) {
		static bool said;

		if (!said)
			printf("(this kernel refuses SINGLE_ISSUER|DEFER_TASKRUN: plain ring)\n");
		said = true;
		r = io_uring_queue_init(8, &ring, 0);
	}
	if (r < 0)
		die("io_uring_queue_init", -r);
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_recv(sqe, s->fd, s->rbuf, sizeof(s->rbuf), 0);
	io_uring_sqe_set_data64(sqe, U_RECV);
	while (server_running(s)) {
		struct __kernel_timespec ts = { .tv_nsec = 100 * 1000 * 1000 };
		unsigned int head, seen = 0;

		/* After submitting a send, wait for it and the next receive together: a send to
		 * a socket with room completes at once, and waking for it alone would be a
		 * system call per batch that the epoll loop does not make. */
		r = io_uring_submit_and_wait_timeout(&ring, &cqe, wait_nr, &ts, NULL);
		wait_nr = 1;
		if (r == -ETIME || r == -EINTR)
			continue;
		if (r < 0)
			die("io_uring_submit_and_wait", -r);
		s->wakes++;
		io_uring_for_each_cqe(&ring, head, cqe)
		{
			seen++;
			if (io_uring_cqe_get_data64(cqe) == U_SEND) {
				if (cqe->res < 0 || (size_t)cqe->res != want)
					die("send", cqe->res < 0 ? -cqe->res : EIO);
				sending = false;
				continue;
			}
			if (cqe->res <= 0)
				die("recv", cqe->res < 0 ? -cqe->res : EPIPE);
			s->have += (size_t)cqe->res;
			sqe = io_uring_get_sqe(&ring);
			io_uring_prep_recv(sqe, s->fd, s->rbuf, sizeof(s->rbuf), 0);
			io_uring_sqe_set_data64(sqe, U_RECV);
		}
		io_uring_cq_advance(&ring, seen);
		/* One send in flight at a time (its vector must stay put): requests that arrive
		 * meanwhile wait for the next one. */
		if (!sending && s->have >= REQ_LEN) {
			int n = server_take(s, &want);

			mh.msg_iov = s->iov;
			mh.msg_iovlen = (size_t)n;
			sqe = io_uring_get_sqe(&ring);
			io_uring_prep_sendmsg(sqe, s->fd, &mh, MSG_WAITALL);
			io_uring_sqe_set_data64(sqe, U_SEND);
			sending = true;
			wait_nr = 2;
		}
	}
	io_uring_queue_exit(&ring);
}

static struct result run_mode(const struct opts *o, bool uring)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	static struct server s;
	double t0, c0, t1, c1;
	uint64_t served0, wakes0;
	int lfd, cfd, one = 1;
	pid_t pid;

	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 1) < 0 ||
	    getsockname(lfd, (struct sockaddr *)&sa, &len) < 0)
		die("listen", errno);
	pid = fork();
	if (pid < 0)
		die("fork", errno);
	if (pid == 0) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);

		if (o->pin)
			pin_to(1);
		if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
			_exit(1);
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		client(fd, o->qd, o->bs);
	}
	cfd = accept(lfd, NULL, NULL);
	if (cfd < 0)
		die("accept", errno);
	close(lfd);
	setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	s.have = 0;
	s.served = 0;
	s.wakes = 0;
	s.fd = cfd;
	s.bs = o->bs;
	s.data = calloc(1, o->bs);
	if (s.data == NULL)
		die("calloc", ENOMEM);
	/* Warm-up, then the measured window, in one run of the server's loop. */
	s.marked = false;
	s.mark = bench_now_s() + 0.5;
	s.end = s.mark + o->seconds;
	if (uring)
		server_uring(&s);
	else
		server_epoll(&s);
	t1 = bench_now_s();
	c1 = bench_cpu_s();
	t0 = s.t0;
	c0 = s.c0;
	served0 = s.served0;
	wakes0 = s.wakes0;
	shutdown(cfd, SHUT_RDWR);
	close(cfd);
	waitpid(pid, NULL, 0);
	free(s.data);
	served0 = s.served - served0;
	wakes0 = s.wakes - wakes0;
	return (struct result){
		.rps = (double)served0 / (t1 - t0),
		.cpu_us_per_req = served0 ? (c1 - c0) * 1e6 / (double)served0 : 0,
		.req_per_wake = wakes0 ? (double)served0 / (double)wakes0 : 0,
	};
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, unsigned int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void usage(void)
{
	fprintf(stderr, "usage: uring-sock-bench [--seconds S] [--runs N] [--qd N] [--bs BYTES] "
			"[--pin]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct opts o = { .seconds = 3, .runs = 5, .qd = 32, .bs = 4096 };
	double cpu[2][64], rps[2][64], rpw[2][64], ratio[64];
	unsigned int r;
	int i, m;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--pin")) {
			o.pin = true;
			continue;
		}
		if (i + 1 >= argc)
			usage();
		if (!strcmp(argv[i], "--seconds"))
			o.seconds = atof(argv[++i]);
		else if (!strcmp(argv[i], "--runs"))
			o.runs = (unsigned int)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--qd"))
			o.qd = (unsigned int)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--bs"))
			o.bs = (size_t)atol(argv[++i]);
		else
			usage();
	}
	/* At most qd requests are answered at once: 2 x qd iovecs, one sendmsg's limit. */
	if (o.runs < 1 || o.runs > 64 || o.qd < 1 || o.qd > IOV_MAX / 2 || o.bs < 1 ||
	    o.seconds <= 0)
		usage();
	signal(SIGPIPE, SIG_IGN);
	if (o.pin)
		pin_to(0);
	for (r = 0; r < o.runs; r++) {
		for (m = 0; m < 2; m++) {
			struct result x = run_mode(&o, m == 1);

			cpu[m][r] = x.cpu_us_per_req;
			rps[m][r] = x.rps;
			rpw[m][r] = x.req_per_wake;
			printf("run %u %-5s %9.0f req/s %6.2f us/req %5.1f req/wake-up\n", r + 1,
			       m ? "uring" : "epoll", x.rps, x.cpu_us_per_req, x.req_per_wake);
			fflush(stdout);
		}
		ratio[r] = cpu[1][r] / cpu[0][r];
	}
	printf("mode      req/s  CPU us/req  req/wake-up\n");
	for (m = 0; m < 2; m++)
		printf("%-5s %9.0f %11.2f %12.1f\n", m ? "uring" : "epoll", median(rps[m], o.runs),
		       median(cpu[m], o.runs), median(rpw[m], o.runs));
	printf("uring/epoll CPU per request: %.2fx (median of the runs' ratios)\n",
	       median(ratio, o.runs));
	return 0;
}
