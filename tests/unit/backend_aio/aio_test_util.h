/* SPDX-License-Identifier: MIT */
/* Helpers of the aio backend tests: scratch files, data patterns, a log that can be searched. */
#ifndef TESTS_UNIT_BACKEND_AIO_TEST_UTIL_H
#define TESTS_UNIT_BACKEND_AIO_TEST_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "libscsitgt/backend_aio.h"

/* A file of @size zero bytes in @dir; returns its malloc'd path, NULL if @dir is unusable. */
char *aio_test_file(const char *dir, off_t size);
/* Remove and free a path from aio_test_file() (NULL is fine). */
void aio_test_file_remove(char *path);

/* Deterministic bytes that differ per @seed and per position. */
void aio_test_pattern(uint8_t *buf, size_t len, uint32_t seed);
/* Whether @len bytes of the file at @off equal @expect (read with pread, no cache games). */
bool aio_test_file_equals(const char *path, off_t off, const void *expect, size_t len);
/* Whether the file system of @path does real direct I/O (O_DIRECT opens, statx alignment,
 * not tmpfs); @why receives the reason when not. */
bool aio_test_fs_direct(const char *path, const char **why);

/* Logger for the backend options: collects every message; aio_test_log_has() searches them. */
void aio_test_log_cb(void *arg, enum scsitgt_log_level level, const char *subsystem,
		     const char *fmt, va_list ap);
bool aio_test_log_has(const char *needle);
/* How many messages at @level contain @needle. */
unsigned int aio_test_log_count(enum scsitgt_log_level level, const char *needle);
void aio_test_log_clear(void);

/*
 * The engine the tests run on: AIO_TEST_ENGINE=libaio or io_uring (meson runs each test program
 * once per engine), AUTO when unset.
 */
enum scsitgt_backend_aio_engine aio_test_engine(void);
/* Exit 77 (skipped) when the engine asked for cannot be set up here (no io_uring). */
void aio_test_engine_require(void);

/* Options for @path on @loop, logging to aio_test_log_cb, on aio_test_engine(). */
void aio_test_opts(struct scsitgt_backend_aio_opts *o, uv_loop_t *loop, const char *path);

#endif /* TESTS_UNIT_BACKEND_AIO_TEST_UTIL_H */
