/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "aio_test_util.h"

static char log_buf[16384];
static size_t log_len;

char *aio_test_file(const char *dir, off_t size)
{
	char *path;
	int fd;

	if (asprintf(&path, "%s/scsitgt-aio-XXXXXX", dir) < 0) {
		return NULL;
	}
	fd = mkstemp(path);
	if (fd < 0) {
		free(path);
		return NULL;
	}
	if (ftruncate(fd, size) < 0) {
		close(fd);
		unlink(path);
		free(path);
		return NULL;
	}
	close(fd);
	return path;
}

void aio_test_file_remove(char *path)
{
	if (path) {
		unlink(path);
		free(path);
	}
}

void aio_test_pattern(uint8_t *buf, size_t len, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 1;

	for (size_t i = 0; i < len; i++) {
		/* xorshift32: cheap, never all zeros, so a zeroed block never matches. */
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		buf[i] = (uint8_t)x;
	}
}

bool aio_test_file_equals(const char *path, off_t off, const void *expect, size_t len)
{
	uint8_t *got = malloc(len ? len : 1);
	size_t have = 0;
	bool eq;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || got == NULL) {
		free(got);
		if (fd >= 0) {
			close(fd);
		}
		return false;
	}
	while (have < len) {
		ssize_t n = pread(fd, got + have, len - have, off + (off_t)have);

		if (n <= 0) {
			break;
		}
		have += (size_t)n;
	}
	close(fd);
	eq = have == len && memcmp(got, expect, len) == 0;
	free(got);
	return eq;
}

bool aio_test_fs_direct(const char *path, const char **why)
{
	struct statfs sfs;
	int fd = open(path, O_RDONLY | O_DIRECT);

	if (fd < 0) {
		*why = "the file system refuses O_DIRECT";
		return false;
	}
	if (fstatfs(fd, &sfs) == 0 && (sfs.f_type == TMPFS_MAGIC || sfs.f_type == RAMFS_MAGIC)) {
		close(fd);
		*why = "tmpfs";
		return false;
	}
#ifdef STATX_DIOALIGN
	{
		struct statx sx;

		if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) == 0 &&
		    (sx.stx_mask & STATX_DIOALIGN) && sx.stx_dio_offset_align == 0) {
			close(fd);
			*why = "statx reports no direct I/O";
			return false;
		}
		if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) == 0 &&
		    (sx.stx_mask & STATX_DIOALIGN) && sx.stx_dio_offset_align > 512) {
			close(fd);
			*why = "direct I/O alignment above 512 bytes";
			return false;
		}
	}
#endif
	close(fd);
	return true;
}

void aio_test_log_cb(void *arg, enum scsitgt_log_level level, const char *subsystem,
		     const char *fmt, va_list ap)
{
	char line[512];
	int n;

	(void)arg;
	n = vsnprintf(line, sizeof(line), fmt, ap);
	if (n < 0) {
		return;
	}
	if (getenv("AIO_TEST_VERBOSE")) {
		fprintf(stderr, "[%d %s] %s\n", (int)level, subsystem, line);
	}
	/* "L<level> <message>" per line: aio_test_log_count() matches the level. */
	if (log_len + strlen(line) + 5 < sizeof(log_buf)) {
		log_len += (size_t)snprintf(log_buf + log_len, sizeof(log_buf) - log_len,
					    "L%d %s\n", (int)level, line);
	}
}

unsigned int aio_test_log_count(enum scsitgt_log_level level, const char *needle)
{
	char prefix[8];
	unsigned int n = 0;

	snprintf(prefix, sizeof(prefix), "L%d ", (int)level);
	for (const char *l = log_buf; *l; l = strchr(l, '\n') + 1) {
		const char *end = strchr(l, '\n');
		const char *hit = strstr(l, needle);

		if (strncmp(l, prefix, strlen(prefix)) == 0 && hit != NULL && hit < end) {
			n++;
		}
	}
	return n;
}

bool aio_test_log_has(const char *needle)
{
	return log_len > 0 && strstr(log_buf, needle) != NULL;
}

void aio_test_log_clear(void)
{
	log_len = 0;
	log_buf[0] = '\0';
}

enum scsitgt_backend_aio_engine aio_test_engine(void)
{
	const char *e = getenv("AIO_TEST_ENGINE");

	if (e != NULL && strcmp(e, "libaio") == 0) {
		return SCSITGT_BACKEND_AIO_ENGINE_LIBAIO;
	}
	if (e != NULL && strcmp(e, "io_uring") == 0) {
		return SCSITGT_BACKEND_AIO_ENGINE_IO_URING;
	}
	return SCSITGT_BACKEND_AIO_ENGINE_AUTO;
}

void aio_test_engine_require(void)
{
	struct scsitgt_backend_aio_opts o;
	uv_loop_t loop;
	char *path = aio_test_file("/var/tmp", 4096);
	void *b = NULL;
	int rc;

	if (path == NULL || uv_loop_init(&loop) != 0) {
		fprintf(stderr, "no scratch file or loop\n");
		exit(1);
	}
	aio_test_opts(&o, &loop, path);
	rc = scsitgt_backend_aio_create(&b, &o);
	if (rc == 0) {
		scsitgt_backend_aio_ops()->close(b, NULL, NULL);
	}
	uv_loop_close(&loop);
	aio_test_file_remove(path);
	if (rc == -ENOTSUP && o.engine == SCSITGT_BACKEND_AIO_ENGINE_IO_URING) {
		printf("io_uring unavailable here (%s): skipped\n", log_buf);
		exit(77);
	}
	aio_test_log_clear();
}

void aio_test_opts(struct scsitgt_backend_aio_opts *o, uv_loop_t *loop, const char *path)
{
	scsitgt_backend_aio_opts_init(o, sizeof(*o));
	o->loop = loop;
	o->path = path;
	o->log_cb = aio_test_log_cb;
	o->engine = aio_test_engine();
	/* AIO_TEST_URING_ASYNC=always|never: the io_uring engine's buffered mode. */
	if (getenv("AIO_TEST_URING_ASYNC") != NULL) {
		const char *a = getenv("AIO_TEST_URING_ASYNC");

		o->uring_async = strcmp(a, "always") == 0 ? SCSITGT_BACKEND_AIO_URING_ASYNC_ALWAYS :
				 strcmp(a, "never") == 0  ? SCSITGT_BACKEND_AIO_URING_ASYNC_NEVER :
							    SCSITGT_BACKEND_AIO_URING_ASYNC_AUTO;
	}
}
