/* SPDX-License-Identifier: MIT */
/*
 * uring-fixed-bench: what io_uring registered buffers (io_uring_register_buffers +
 * IORING_OP_READ_FIXED / WRITE_FIXED) save per I/O on this kernel, against the vectored
 * opcodes the aio backend's io_uring engine uses (IORING_OP_READV / WRITEV on the io's
 * iovecs). It is the most the engine could gain from them: the same O_DIRECT random I/O at a
 * fixed queue depth, once through unregistered buffers and once through registered ones, the
 * process's CPU time (user + system, every thread, io-wq included) divided by the I/O count.
 * The modes alternate within each run and the medians are printed with their ratio.
 *
 *   uring-fixed-bench --file PATH [--size 256m] [--bs 4k] [--qd 32] [--seconds 3] [--runs 5]
 *                     [--write]
 *
 * The file is created (or grown) to --size and filled once; it must be on a file system that
 * does direct I/O (not tmpfs).
 */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench_time.h"

#include "size_arg.h"

#define MAX_QD 256

struct opts {
	const char *file;
	uint64_t size;
	uint64_t bs;
	unsigned int qd;
	double seconds;
	unsigned int runs;
	bool write;
};

struct result {
	double iops;
	double cpu_us_per_io;
};

static uint64_t rng(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

static void prep(struct io_uring *ring, const struct opts *o, int fd, bool fixed, struct iovec *iov,
		 unsigned int slot, uint64_t *seed)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	uint64_t blocks = o->size / o->bs;
	off_t off = (off_t)((rng(seed) % blocks) * o->bs);

	if (fixed) {
		if (o->write) {
			io_uring_prep_write_fixed(sqe, fd, iov[slot].iov_base, (unsigned)o->bs, off,
						  (int)slot);
		} else {
			io_uring_prep_read_fixed(sqe, fd, iov[slot].iov_base, (unsigned)o->bs, off,
						 (int)slot);
		}
	} else if (o->write) {
		io_uring_prep_writev(sqe, fd, &iov[slot], 1, off);
	} else {
		io_uring_prep_readv(sqe, fd, &iov[slot], 1, off);
	}
	io_uring_sqe_set_data(sqe, (void *)(uintptr_t)slot);
}

/* One timed run of one mode; 0 or a negative errno. */
static int run_mode(const struct opts *o, bool fixed, struct result *res)
{
	struct io_uring ring;
	struct iovec iov[MAX_QD];
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	uint64_t ios = 0;
	double t0, c0, t1, c1;
	int fd;
	int rc;

	fd = open(o->file, (o->write ? O_RDWR : O_RDONLY) | O_DIRECT);
	if (fd < 0) {
		return -errno;
	}
	rc = io_uring_queue_init(o->qd, &ring, 0);
	if (rc < 0) {
		close(fd);
		return rc;
	}
	for (unsigned int i = 0; i < o->qd; i++) {
		if (posix_memalign(&iov[i].iov_base, 4096, o->bs) != 0) {
			return -ENOMEM;
		}
		memset(iov[i].iov_base, (int)i, o->bs);
		iov[i].iov_len = o->bs;
	}
	if (fixed) {
		rc = io_uring_register_buffers(&ring, iov, o->qd);
		if (rc < 0) {
			fprintf(stderr, "io_uring_register_buffers: %s\n", strerror(-rc));
			goto out;
		}
	}
	t0 = bench_now_s();
	c0 = bench_cpu_s();
	for (unsigned int i = 0; i < o->qd; i++) {
		prep(&ring, o, fd, fixed, iov, i, &seed);
	}
	io_uring_submit(&ring);
	for (;;) {
		struct io_uring_cqe *cqe;
		unsigned int head, n = 0;

		rc = io_uring_wait_cqe(&ring, &cqe);
		if (rc < 0) {
			goto out;
		}
		io_uring_for_each_cqe(&ring, head, cqe)
		{
			unsigned int slot = (unsigned int)(uintptr_t)io_uring_cqe_get_data(cqe);

			if (cqe->res != (int)o->bs) {
				fprintf(stderr, "I/O failed: %s\n",
					cqe->res < 0 ? strerror(-cqe->res) : "short");
				rc = -EIO;
				goto out;
			}
			n++;
			prep(&ring, o, fd, fixed, iov, slot, &seed);
		}
		io_uring_cq_advance(&ring, n);
		ios += n;
		io_uring_submit(&ring);
		if (bench_now_s() - t0 >= o->seconds) {
			break;
		}
	}
	t1 = bench_now_s();
	c1 = bench_cpu_s();
	/* the ones still in flight complete before the ring goes */
	res->iops = (double)ios / (t1 - t0);
	res->cpu_us_per_io = (c1 - c0) * 1e6 / (double)ios;
	rc = 0;
out:
	io_uring_queue_exit(&ring);
	for (unsigned int i = 0; i < o->qd; i++) {
		free(iov[i].iov_base);
	}
	close(fd);
	return rc;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, unsigned int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Create or grow the file to o->size, written once so that reads hit allocated blocks. */
static int prepare_file(const struct opts *o)
{
	struct stat st;
	char *buf;
	int fd = open(o->file, O_RDWR | O_CREAT, 0600);

	if (fd < 0 || fstat(fd, &st) < 0) {
		return -errno;
	}
	if ((uint64_t)st.st_size >= o->size) {
		close(fd);
		return 0;
	}
	buf = malloc(1 << 20);
	if (buf == NULL) {
		close(fd);
		return -ENOMEM;
	}
	memset(buf, 0xa5, 1 << 20);
	for (uint64_t off = 0; off < o->size; off += 1 << 20) {
		if (pwrite(fd, buf, 1 << 20, (off_t)off) != 1 << 20) {
			free(buf);
			close(fd);
			return -EIO;
		}
	}
	free(buf);
	fsync(fd);
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = {
		.size = 256ull << 20,
		.bs = 4096,
		.qd = 32,
		.seconds = 3,
		.runs = 5,
	};
	double a_cpu[64], b_cpu[64], a_iops[64], b_iops[64];
	double ma, mb;
	int rc;

	for (int i = 1; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(argv[i], "--write") == 0) {
			o.write = true;
			continue;
		}
		if (v == NULL) {
			fprintf(stderr, "%s needs a value\n", argv[i]);
			return 2;
		}
		if (strcmp(argv[i], "--file") == 0) {
			o.file = v;
		} else if (strcmp(argv[i], "--size") == 0) {
			if (size_arg_parse(v, &o.size) < 0) {
				return 2;
			}
		} else if (strcmp(argv[i], "--bs") == 0) {
			if (size_arg_parse(v, &o.bs) < 0) {
				return 2;
			}
		} else if (strcmp(argv[i], "--qd") == 0) {
			o.qd = (unsigned int)atoi(v);
		} else if (strcmp(argv[i], "--seconds") == 0) {
			o.seconds = atof(v);
		} else if (strcmp(argv[i], "--runs") == 0) {
			o.runs = (unsigned int)atoi(v);
		} else {
			fprintf(stderr, "unknown option %s\n", argv[i]);
			return 2;
		}
		i++;
	}
	if (o.file == NULL || o.qd == 0 || o.qd > MAX_QD || o.runs == 0 || o.runs > 64 ||
	    o.bs == 0 || o.bs % 512 != 0 || o.size < o.bs) {
		fprintf(stderr,
			"usage: %s --file PATH [--size 256m] [--bs 4k] [--qd 32] "
			"[--seconds 3] [--runs 5] [--write]\n",
			argv[0]);
		return 2;
	}
	rc = prepare_file(&o);
	if (rc < 0) {
		fprintf(stderr, "%s: %s\n", o.file, strerror(-rc));
		return 1;
	}
	printf("%s 4k-aligned O_DIRECT random %s, bs %llu, qd %u, %g s x %u runs\n", o.file,
	       o.write ? "writes" : "reads", (unsigned long long)o.bs, o.qd, o.seconds, o.runs);
	printf("run mode       IOPS  cpu_us/io\n");
	for (unsigned int r = 0; r < o.runs; r++) {
		/* alternate which mode goes first */
		for (int k = 0; k < 2; k++) {
			bool fixed = (k + (int)r) % 2 == 1;
			struct result res = { 0 };

			rc = run_mode(&o, fixed, &res);
			if (rc < 0) {
				fprintf(stderr, "run failed: %s\n", strerror(-rc));
				return 1;
			}
			printf("%3u %-6s %9.0f  %8.3f\n", r, fixed ? "fixed" : "readv", res.iops,
			       res.cpu_us_per_io);
			if (fixed) {
				b_cpu[r] = res.cpu_us_per_io;
				b_iops[r] = res.iops;
			} else {
				a_cpu[r] = res.cpu_us_per_io;
				a_iops[r] = res.iops;
			}
		}
	}
	ma = median(a_cpu, o.runs);
	mb = median(b_cpu, o.runs);
	printf("median vectored (unregistered): %.0f IOPS, %.3f us CPU/IO\n",
	       median(a_iops, o.runs), ma);
	printf("median fixed (registered):      %.0f IOPS, %.3f us CPU/IO\n",
	       median(b_iops, o.runs), mb);
	printf("fixed / vectored CPU per IO: %.3f (saves %.3f us per IO)\n", mb / ma, ma - mb);
	return 0;
}
