/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "aio_test_fx.h"

struct fx *fx_new(void)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	harness_init(&f->h);
	f->ops = scsitgt_backend_aio_ops();
	assert_non_null(f->ops);
	aio_test_log_clear();
	return f;
}

void fx_free(struct fx *f)
{
	harness_fini(&f->h);
	aio_test_file_remove(f->path);
	free(f);
}

void fx_file(struct fx *f, const char *dir, off_t size)
{
	f->path = aio_test_file(dir, size);
	if (f->path == NULL) {
		print_message("no scratch file in %s (%s): skipped\n", dir, strerror(errno));
		fx_free(f);
		skip();
		return;
	}
	aio_test_opts(&f->o, &f->h.loop, f->path);
}

int fx_lun(struct fx *f, uint32_t bs, uint64_t nblocks, uint32_t flags)
{
	int rc;

	assert_int_equal(scsitgt_backend_aio_create(&f->bctx, &f->o), 0);
	rc = harness_lun(&f->h, &f->lun, 0, f->ops, f->bctx, bs, nblocks, flags);
	if (rc < 0) {
		/* The caller keeps the context on failure (lun.h). */
		f->ops->close(f->bctx, NULL, NULL);
		f->bctx = NULL;
		f->lun = NULL;
	}
	return rc;
}

struct scsitgt_lun_geometry fx_geo(struct fx *f)
{
	struct scsitgt_lun_geometry g = { .size = sizeof(g) };

	assert_int_equal(scsitgt_lun_get_geometry(f->lun, &g), 0);
	return g;
}

enum scsitgt__sense_reason fx_io(struct fx *f, enum scsitgt_io_type type, uint64_t lba,
				 uint32_t nblocks, const struct iovec *iov, int iovcnt,
				 uint32_t flags, struct harness_result *out)
{
	struct harness_result res = { 0 };
	struct scsitgt__cmd *cmd = harness_cmd_begin(&f->h, 0);

	assert_int_equal(harness_submit(cmd, &res, type, lba, nblocks, iov, iovcnt, flags), 0);
	harness_wait(&f->h, &res, 1);
	harness_cmd_end(cmd);
	if (out) {
		*out = res;
	}
	return res.reason;
}

enum scsitgt__sense_reason fx_buf(struct fx *f, enum scsitgt_io_type type, uint64_t lba,
				  uint32_t nblocks, void *buf, uint32_t flags)
{
	struct iovec v = { buf, (size_t)nblocks * fx_geo(f).block_size };

	return fx_io(f, type, lba, nblocks, &v, 1, flags, NULL);
}

void *aligned_buf(size_t len)
{
	void *p = NULL;

	assert_int_equal(posix_memalign(&p, 4096, len), 0);
	return p;
}

bool backing_equals(struct fx *f, const char *backing, off_t off, const void *expect, size_t len)
{
	if ((f->path == NULL || strcmp(backing, f->path) != 0) &&
	    f->ops->supports(f->bctx, SCSITGT_IO_FLUSH)) {
		assert_int_equal(fx_io(f, SCSITGT_IO_FLUSH, 0, 0, NULL, 0, 0, NULL),
				 SCSITGT__SR_OK);
	}
	return aio_test_file_equals(backing, off, expect, len);
}

void roundtrip_suite(struct fx *f, const char *backing)
{
	const uint32_t bs = fx_geo(f).block_size;
	const size_t len = 8 * (size_t)bs;
	uint8_t *src = aligned_buf(len);
	uint8_t *dst = aligned_buf(len);
	uint8_t *u_src = malloc(len + 64);
	uint8_t *u_dst = malloc(len + 64);
	struct iovec v[4];
	struct iovec *many;
	uint8_t *tiny;
	const int nmany = 2048;

	assert_non_null(u_src);
	assert_non_null(u_dst);

	/* Aligned: two page-aligned halves. */
	aio_test_pattern(src, len, 1);
	v[0] = (struct iovec){ src, len / 2 };
	v[1] = (struct iovec){ src + len / 2, len / 2 };
	assert_int_equal(fx_io(f, SCSITGT_IO_WRITE, 10, 8, v, 2, 0, NULL), SCSITGT__SR_OK);
	memset(dst, 0, len);
	v[0] = (struct iovec){ dst, len / 2 };
	v[1] = (struct iovec){ dst + len / 2, len / 2 };
	assert_int_equal(fx_io(f, SCSITGT_IO_READ, 10, 8, v, 2, 0, NULL), SCSITGT__SR_OK);
	assert_memory_equal(src, dst, len);
	if (backing) {
		assert_true(backing_equals(f, backing, 10 * (off_t)bs, src, len));
	}

	/* Unaligned addresses and lengths: bounced in O_DIRECT mode, never refused. */
	aio_test_pattern(u_src + 1, len, 2);
	v[0] = (struct iovec){ u_src + 1, 1 };
	v[1] = (struct iovec){ u_src + 2, 511 };
	v[2] = (struct iovec){ u_src + 513, 1000 };
	v[3] = (struct iovec){ u_src + 1513, len - 1512 };
	assert_int_equal(fx_io(f, SCSITGT_IO_WRITE, 100, 8, v, 4, 0, NULL), SCSITGT__SR_OK);
	memset(u_dst, 0, len + 64);
	v[0] = (struct iovec){ u_dst + 3, 7 };
	v[1] = (struct iovec){ u_dst + 10, len - 72 };
	v[2] = (struct iovec){ u_dst + 10 + len - 72, 65 };
	assert_int_equal(fx_io(f, SCSITGT_IO_READ, 100, 8, v, 3, 0, NULL), SCSITGT__SR_OK);
	assert_memory_equal(u_src + 1, u_dst + 3, len);
	if (backing) {
		assert_true(backing_equals(f, backing, 100 * (off_t)bs, u_src + 1, len));
	}

	/* 2048 two-byte iovecs: more than one iocb takes (UIO_MAXIOV). */
	many = calloc((size_t)nmany, sizeof(*many));
	tiny = malloc((size_t)nmany * 2);
	assert_non_null(many);
	assert_non_null(tiny);
	aio_test_pattern(tiny, (size_t)nmany * 2, 3);
	for (int i = 0; i < nmany; i++) {
		many[i] = (struct iovec){ tiny + 2 * i, 2 };
	}
	assert_int_equal(
		fx_io(f, SCSITGT_IO_WRITE, 200, (uint32_t)(nmany * 2 / bs), many, nmany, 0, NULL),
		SCSITGT__SR_OK);
	memset(dst, 0, len);
	assert_int_equal(fx_buf(f, SCSITGT_IO_READ, 200, (uint32_t)(nmany * 2 / bs), dst, 0),
			 SCSITGT__SR_OK);
	assert_memory_equal(tiny, dst, (size_t)nmany * 2);
	memset(tiny, 0, (size_t)nmany * 2);
	assert_int_equal(
		fx_io(f, SCSITGT_IO_READ, 200, (uint32_t)(nmany * 2 / bs), many, nmany, 0, NULL),
		SCSITGT__SR_OK);
	assert_memory_equal(tiny, dst, (size_t)nmany * 2);

	/* FUA write and FLUSH complete, and the data is there. */
	aio_test_pattern(src, len, 4);
	assert_int_equal(fx_buf(f, SCSITGT_IO_WRITE, 300, 8, src, SCSITGT_IO_FLAG_FUA),
			 SCSITGT__SR_OK);
	if (f->ops->supports(f->bctx, SCSITGT_IO_FLUSH)) {
		assert_int_equal(fx_io(f, SCSITGT_IO_FLUSH, 0, 0, NULL, 0, 0, NULL),
				 SCSITGT__SR_OK);
	}
	if (backing) {
		assert_true(backing_equals(f, backing, 300 * (off_t)bs, src, len));
	}

	free(many);
	free(tiny);
	free(u_src);
	free(u_dst);
	free(src);
	free(dst);
}
