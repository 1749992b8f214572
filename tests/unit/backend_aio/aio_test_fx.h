/* SPDX-License-Identifier: MIT */
/*
 * The fixture of the aio backend tests that drive ios through the core's io path
 * (../backend/io_harness.c): a scratch file or device, the backend over it, LUN 0, and ios
 * whose completions are checked as the sense reasons the core derives from them. Shared by
 * test_aio.c (files) and test_aio_devices.c (block devices, device-mapper, kill -9).
 */
#ifndef TESTS_UNIT_BACKEND_AIO_TEST_FX_H
#define TESTS_UNIT_BACKEND_AIO_TEST_FX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "aio_test_util.h"
#include "core/core.h"
#include "io_harness.h"
#include "libscsitgt/backend_aio.h"

#define MiB (1024 * 1024)

struct fx {
	struct harness h;
	char *path;
	void *bctx;
	struct scsitgt_lun *lun;
	const struct scsitgt_backend_ops *ops;
	struct scsitgt_backend_aio_opts o;
};

/* A harness, the aio ops and a cleared log; fx_free() releases it with its scratch file. */
struct fx *fx_new(void);
void fx_free(struct fx *f);
/* A scratch file of @size bytes in @dir, or skip the test when @dir cannot hold one. */
void fx_file(struct fx *f, const char *dir, off_t size);
/* Create the backend over f->path with f->o and LUN 0 over it; returns lun_create's code. */
int fx_lun(struct fx *f, uint32_t bs, uint64_t nblocks, uint32_t flags);
struct scsitgt_lun_geometry fx_geo(struct fx *f);
/* One io with @flags on a fresh command; returns the core's reason. */
enum scsitgt__sense_reason fx_io(struct fx *f, enum scsitgt_io_type type, uint64_t lba,
				 uint32_t nblocks, const struct iovec *iov, int iovcnt,
				 uint32_t flags, struct harness_result *out);
/* fx_io() on one buffer of @nblocks blocks. */
enum scsitgt__sense_reason fx_buf(struct fx *f, enum scsitgt_io_type type, uint64_t lba,
				  uint32_t nblocks, void *buf, uint32_t flags);
/* @len bytes aligned to 4096 (free()); aborts the test when out of memory. */
void *aligned_buf(size_t len);

/* Reads of the file bytes at @off equal @expect. */
#define assert_file_equals(f, off, expect, len) \
	assert_true(aio_test_file_equals((f)->path, (off), (expect), (len)))

/*
 * Whether the backing file holds @expect at @off. A block device has its own page cache in
 * buffered mode: flush it first (a file shares the page cache with pread, no flush needed).
 */
bool backing_equals(struct fx *f, const char *backing, off_t off, const void *expect, size_t len);
/*
 * Round trips that every medium must pass: aligned iovecs, unaligned ones (the bounce path in
 * O_DIRECT mode), more iovecs than one iocb takes, and the bytes in the backing file.
 */
void roundtrip_suite(struct fx *f, const char *backing);

#endif /* TESTS_UNIT_BACKEND_AIO_TEST_FX_H */
