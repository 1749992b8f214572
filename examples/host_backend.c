/* SPDX-License-Identifier: MIT */
/*
 * host_backend: how a host application plugs its own storage into libscsitgt.
 *
 * The backend here serves a regular file. Its I/O runs on a worker thread that the backend
 * owns (the library calls a backend only on the home loop), and each io is completed from that
 * thread with scsitgt_io_complete_threadsafe(), which hands the completion back to the loop.
 *
 * What it shows, in order:
 *   1. the backend's per-io private area (io_ctx_size, scsitgt_io_get_ctx());
 *   2. submit(): runs on the loop; it copies what the worker needs out of the io, because the
 *      io accessors may only be called on the loop thread;
 *   3. the worker: preadv/pwritev/fdatasync/fallocate, then the thread-safe completion;
 *   4. open() completing the geometry, supports() declaring the optional io types, close()
 *      stopping the worker once the library has drained every io;
 *   5. registering the backend as LUN 0 of a target on the application's own uv loop, and
 *      serving it over iSCSI/TCP.
 *
 * Usage: host_backend [--selftest] [--port N] [FILE [SIZE_MIB]]
 *   Without FILE a temporary 64 MiB file is used. The portal listens on 0.0.0.0, port 3260 by
 *   default. --selftest listens on an ephemeral port of 127.0.0.1, then destroys everything
 *   again and exits 0 (the build runs it as a test). Otherwise it runs until SIGINT/SIGTERM.
 *   Try it with libiscsi:  iscsi-ls -s iscsi://127.0.0.1:3260/
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* fallocate() */
#endif
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <libscsitgt/scsitgt.h>
#include <uv.h>

/* ---- The backend ---------------------------------------------------------------------- */

/*
 * One queued io. It lives in the io's private area (io_ctx_size bytes that the library
 * allocates with every io), so queueing costs no allocation.
 */
struct file_job {
	struct file_job *next;
	struct scsitgt_io *io;
	/* Copied out of the io on the loop thread; the worker reads only these. */
	enum scsitgt_io_type type;
	uint32_t flags;
	off_t offset;
	size_t length;
	const struct iovec *iov;
	int iovcnt;
};

struct file_backend {
	int fd;
	char path[256];
	uint64_t size;
	uint32_t block_size;
	/* The worker thread and its queue (a mutex-protected list is plenty for an example). */
	uv_thread_t worker;
	bool worker_started;
	uv_mutex_t lock;
	uv_cond_t wake;
	struct file_job *head, *tail;
	bool stopping;
};

/* Read or write all of @job's bytes, looping over short transfers. */
static int file_transfer(struct file_backend *fb, const struct file_job *job)
{
	off_t off = job->offset;
	size_t left = job->length;

	for (int i = 0; i < job->iovcnt && left > 0; i++) {
		char *p = job->iov[i].iov_base;
		size_t n = job->iov[i].iov_len < left ? job->iov[i].iov_len : left;

		while (n > 0) {
			ssize_t r = job->type == SCSITGT_IO_READ ? pread(fb->fd, p, n, off) :
								   pwrite(fb->fd, p, n, off);

			if (r < 0 && errno == EINTR) {
				continue;
			}
			if (r < 0) {
				return -errno;
			}
			if (r == 0) {
				/* Reading past the end of a file that shrank under us. */
				return -EIO;
			}
			p += r;
			n -= (size_t)r;
			off += r;
			left -= (size_t)r;
		}
	}
	return 0;
}

/* Do one job; returns 0 or a negative errno, which the library maps to sense data. */
static int file_execute(struct file_backend *fb, const struct file_job *job)
{
	int rc;

	switch (job->type) {
	case SCSITGT_IO_READ:
		return file_transfer(fb, job);
	case SCSITGT_IO_WRITE:
		rc = file_transfer(fb, job);
		/* Force Unit Access: durable before we report success. */
		if (rc == 0 && (job->flags & SCSITGT_IO_FLAG_FUA) && fdatasync(fb->fd) < 0) {
			rc = -errno;
		}
		return rc;
	case SCSITGT_IO_FLUSH:
		return fdatasync(fb->fd) < 0 ? -errno : 0;
	case SCSITGT_IO_UNMAP:
		/* A punched hole reads back as zeros, which is what LBPRZ promises. */
		if (fallocate(fb->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, job->offset,
			      (off_t)job->length) < 0) {
			return -errno;
		}
		return 0;
	default:
		return -ENOTSUP;
	}
}

static void file_worker(void *arg)
{
	struct file_backend *fb = arg;

	uv_mutex_lock(&fb->lock);
	for (;;) {
		struct file_job *job;

		while (fb->head == NULL && !fb->stopping) {
			uv_cond_wait(&fb->wake, &fb->lock);
		}
		if (fb->head == NULL) {
			break; /* stopping, and nothing left */
		}
		job = fb->head;
		fb->head = job->next;
		if (fb->head == NULL) {
			fb->tail = NULL;
		}
		uv_mutex_unlock(&fb->lock);

		/* Any thread may complete an io this way; the library hops to the loop. */
		scsitgt_io_complete_threadsafe(job->io, file_execute(fb, job));

		uv_mutex_lock(&fb->lock);
	}
	uv_mutex_unlock(&fb->lock);
}

/* open(): called on the loop from scsitgt_lun_create(); complete the geometry. */
static int file_open(void *bctx, struct scsitgt_lun_geometry *geo)
{
	struct file_backend *fb = bctx;

	if (geo->block_size == 0) {
		geo->block_size = 512;
	}
	if (geo->num_blocks == 0) {
		/* The file decides the capacity when the LUN options leave it open. */
		geo->num_blocks = fb->size / geo->block_size;
	}
	if (geo->num_blocks == 0 || geo->num_blocks > fb->size / geo->block_size) {
		return -EINVAL;
	}
	fb->block_size = geo->block_size;
	/* The page cache is a volatile write cache: FLUSH (fdatasync) is meaningful. */
	geo->flags |= SCSITGT_GEOMETRY_WRITE_CACHE | SCSITGT_GEOMETRY_LBPRZ;

	if (uv_thread_create(&fb->worker, file_worker, fb) != 0) {
		return -EAGAIN;
	}
	fb->worker_started = true;
	return 0;
}

/* submit(): called on the loop. Copy the io's facts into its job and queue it. */
static void file_submit(void *bctx, struct scsitgt_io *io)
{
	struct file_backend *fb = bctx;
	struct file_job *job = scsitgt_io_get_ctx(io);

	job->next = NULL;
	job->io = io;
	job->type = scsitgt_io_get_type(io);
	job->flags = scsitgt_io_get_flags(io);
	job->offset = (off_t)(scsitgt_io_get_lba(io) * fb->block_size);
	job->length = (size_t)scsitgt_io_get_num_blocks(io) * fb->block_size;
	job->iov = scsitgt_io_get_iov(io, &job->iovcnt);

	uv_mutex_lock(&fb->lock);
	if (fb->tail) {
		fb->tail->next = job;
	} else {
		fb->head = job;
	}
	fb->tail = job;
	uv_cond_signal(&fb->wake);
	uv_mutex_unlock(&fb->lock);
}

/* supports(): READ and WRITE are always used; declare the optional types we handle. */
static bool file_supports(void *bctx, enum scsitgt_io_type type)
{
	(void)bctx;
	return type == SCSITGT_IO_READ || type == SCSITGT_IO_WRITE || type == SCSITGT_IO_FLUSH ||
	       type == SCSITGT_IO_UNMAP;
}

/*
 * close(): the library calls it once, after every io completed. Stop the worker, release
 * the file and the context, then report. (It may also be called without open() when
 * scsitgt_lun_create() failed and we clean up ourselves.)
 */
static void file_close(void *bctx, scsitgt_done_cb cb, void *cb_arg)
{
	struct file_backend *fb = bctx;

	if (fb->worker_started) {
		uv_mutex_lock(&fb->lock);
		fb->stopping = true;
		uv_cond_signal(&fb->wake);
		uv_mutex_unlock(&fb->lock);
		uv_thread_join(&fb->worker);
	}
	uv_cond_destroy(&fb->wake);
	uv_mutex_destroy(&fb->lock);
	close(fb->fd);
	free(fb);
	if (cb) {
		cb(cb_arg, 0);
	}
}

/* The ops table. It may live anywhere: the library copies it at scsitgt_lun_create(). */
static const struct scsitgt_backend_ops file_ops = {
	.size = sizeof(struct scsitgt_backend_ops),
	.name = "hostfile",
	.io_ctx_size = sizeof(struct file_job),
	.open = file_open,
	.close = file_close,
	.submit = file_submit,
	.supports = file_supports,
};

/* Open (or create) @path with at least @size bytes and make a backend context for it. */
static int file_backend_create(struct file_backend **out, const char *path, uint64_t size)
{
	struct file_backend *fb = calloc(1, sizeof(*fb));
	struct stat st;

	if (fb == NULL) {
		return -ENOMEM;
	}
	snprintf(fb->path, sizeof(fb->path), "%s", path);
	fb->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fb->fd < 0 || fstat(fb->fd, &st) < 0) {
		int rc = -errno;

		if (fb->fd >= 0) {
			close(fb->fd);
		}
		free(fb);
		return rc;
	}
	if ((uint64_t)st.st_size < size && ftruncate(fb->fd, (off_t)size) < 0) {
		int rc = -errno;

		close(fb->fd);
		free(fb);
		return rc;
	}
	fb->size = (uint64_t)st.st_size > size ? (uint64_t)st.st_size : size;
	if (uv_mutex_init(&fb->lock) != 0 || uv_cond_init(&fb->wake) != 0) {
		close(fb->fd);
		free(fb);
		return -ENOMEM;
	}
	*out = fb;
	return 0;
}

/* ---- The application ------------------------------------------------------------------ */

struct app {
	uv_loop_t *loop;
	struct scsitgt_engine *engine;
	uv_signal_t sigint, sigterm;
	bool engine_gone;
};

static void app_log(void *arg, enum scsitgt_log_level level, const char *subsystem, const char *fmt,
		    va_list ap)
{
	(void)arg;
	fprintf(stderr, "[%d %s] ", (int)level, subsystem);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

static void app_engine_destroyed(void *arg, int status)
{
	struct app *app = arg;

	app->engine_gone = true;
	printf("engine destroyed (%s)\n", scsitgt_strerror(status));
}

static void app_shutdown(struct app *app)
{
	/* Destroying the engine stops its portals, destroys its targets and LUNs and closes our
	 * backend (after the last io completed). */
	scsitgt_engine_destroy(app->engine, app_engine_destroyed, app);
	uv_close((uv_handle_t *)&app->sigint, NULL);
	uv_close((uv_handle_t *)&app->sigterm, NULL);
}

static void app_on_signal(uv_signal_t *h, int signum)
{
	printf("signal %d: shutting down\n", signum);
	app_shutdown(h->data);
}

int main(int argc, char **argv)
{
	struct app app = { .loop = uv_default_loop() };
	struct scsitgt_engine_opts eo;
	struct scsitgt_target_opts to;
	struct scsitgt_lun_opts lo;
	struct scsitgt_target *tgt;
	struct scsitgt_lun *lun;
	struct scsitgt_lun_geometry geo = { .size = sizeof(geo) };
	struct file_backend *fb = NULL;
	char tmp_path[] = "/tmp/host_backend.XXXXXX";
	const char *path = NULL;
	struct scsitgt_portal_opts po;
	struct scsitgt_portal *portal;
	bool selftest = false, temporary = false;
	uint64_t size_mib = 64;
	unsigned long port = 3260;
	int rc, argi = 1;

	for (; argi < argc && strncmp(argv[argi], "--", 2) == 0; argi++) {
		if (strcmp(argv[argi], "--selftest") == 0) {
			selftest = true;
		} else if (strcmp(argv[argi], "--port") == 0 && argi + 1 < argc) {
			port = strtoul(argv[++argi], NULL, 10);
		} else {
			fprintf(stderr, "usage: %s [--selftest] [--port N] [FILE [SIZE_MIB]]\n",
				argv[0]);
			return 2;
		}
	}
	if (port > 65535) {
		fprintf(stderr, "bad port %lu\n", port);
		return 2;
	}
	if (argi < argc) {
		path = argv[argi++];
	}
	if (argi < argc) {
		size_mib = strtoull(argv[argi++], NULL, 10);
	}
	if (path == NULL) {
		int fd = mkstemp(tmp_path);

		if (fd < 0) {
			perror("mkstemp");
			return 1;
		}
		close(fd);
		path = tmp_path;
		temporary = true;
	}

	/* An initiator that drops its connection while we write must not end the process. */
	signal(SIGPIPE, SIG_IGN);

	/* 1. The engine lives on our loop; its log goes to our logger. */
	scsitgt_engine_opts_init(&eo, sizeof(eo));
	eo.log_cb = app_log;
	rc = scsitgt_engine_create(&app.engine, app.loop, &eo);
	if (rc < 0) {
		fprintf(stderr, "engine: %s\n", scsitgt_strerror(rc));
		return 1;
	}

	/* 2. A target. */
	scsitgt_target_opts_init(&to, sizeof(to));
	to.name = "iqn.2024-01.org.libscsitgt.example:host-backend";
	to.alias = "host backend example";
	rc = scsitgt_target_create(&tgt, app.engine, &to);
	if (rc < 0) {
		fprintf(stderr, "target: %s\n", scsitgt_strerror(rc));
		return 1;
	}

	/* 3. Our backend as LUN 0. On success the LUN owns the context; on failure we do. */
	rc = file_backend_create(&fb, path, size_mib << 20);
	if (rc < 0) {
		fprintf(stderr, "%s: %s\n", path, scsitgt_strerror(rc));
		return 1;
	}
	scsitgt_lun_opts_init(&lo, sizeof(lo));
	lo.id = 0;
	lo.block_size = 512;
	lo.product = "HOST FILE DISK";
	lo.backend = &file_ops;
	lo.backend_ctx = fb;
	rc = scsitgt_lun_create(&lun, tgt, &lo);
	if (rc < 0) {
		fprintf(stderr, "lun: %s\n", scsitgt_strerror(rc));
		file_ops.close(fb, NULL, NULL);
		return 1;
	}
	scsitgt_lun_get_geometry(lun, &geo);

	/* 4. An iSCSI portal: every target of the engine is reachable through it. */
	scsitgt_portal_opts_init(&po, sizeof(po));
	po.address = selftest ? "127.0.0.1" : "0.0.0.0";
	po.port = selftest ? 0 : (uint16_t)port;
	rc = scsitgt_portal_create(&portal, app.engine, &po);
	if (rc < 0) {
		fprintf(stderr, "portal %s:%u: %s\n", po.address, po.port, scsitgt_strerror(rc));
		scsitgt_engine_destroy(app.engine, NULL, NULL);
		uv_run(app.loop, UV_RUN_DEFAULT);
		return 1;
	}
	printf("libscsitgt %s: target %s on %s:%u\n", scsitgt_version_string(),
	       scsitgt_target_get_name(tgt), po.address, scsitgt_portal_get_port(portal));
	printf("  LUN %llu: %s, %llu blocks of %u bytes (%llu MiB)\n",
	       (unsigned long long)scsitgt_lun_get_id(lun), path,
	       (unsigned long long)geo.num_blocks, geo.block_size,
	       (unsigned long long)(geo.num_blocks * geo.block_size >> 20));

	/* 5. Run until a signal (or, for the self-test, shut down straight away). */
	uv_signal_init(app.loop, &app.sigint);
	uv_signal_init(app.loop, &app.sigterm);
	app.sigint.data = &app;
	app.sigterm.data = &app;
	if (selftest) {
		app_shutdown(&app);
	} else {
		uv_signal_start(&app.sigint, app_on_signal, SIGINT);
		uv_signal_start(&app.sigterm, app_on_signal, SIGTERM);
		printf("serving; press Ctrl-C to stop\n");
	}
	uv_run(app.loop, UV_RUN_DEFAULT);

	rc = app.engine_gone ? 0 : 1;
	if (uv_loop_close(app.loop) != 0) {
		fprintf(stderr, "loop still has handles\n");
		rc = 1;
	}
	if (temporary) {
		unlink(tmp_path);
	}
	return rc;
}
