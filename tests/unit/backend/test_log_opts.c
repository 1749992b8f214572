/* SPDX-License-Identifier: MIT */
/*
 * The null and RAM backends' logger (struct scsitgt_backend_null_opts and
 * scsitgt_backend_ram_opts, backend.h): what reaches
 * the callback, at which level and how often, and the options' refusals.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend/ram_hooks.h"
#include "io_harness.h"

struct logcap {
	unsigned int n[8]; /* lines per level */
	char last[8][512]; /* the last line per level, with its subsystem: "ram: ..." */
};

static void cap_log(void *arg, enum scsitgt_log_level level, const char *subsystem, const char *fmt,
		    va_list ap)
{
	struct logcap *c = arg;
	int n;

	assert_true(level <= SCSITGT_LOG_DEBUG);
	c->n[level]++;
	n = snprintf(c->last[level], sizeof(c->last[level]), "%s: ", subsystem);
	vsnprintf(c->last[level] + n, sizeof(c->last[level]) - (size_t)n, fmt, ap);
}

static struct scsitgt_backend_ram_opts ram_opts(struct logcap *cap, enum scsitgt_log_level lvl)
{
	struct scsitgt_backend_ram_opts o;

	scsitgt_backend_ram_opts_init(&o, sizeof(o));
	assert_int_equal(o.size, sizeof(o));
	assert_int_equal(o.log_level, SCSITGT_LOG_DEBUG);
	assert_null(o.log_cb);
	o.log_cb = cap_log;
	o.log_arg = cap;
	o.log_level = lvl;
	return o;
}

static struct scsitgt_backend_null_opts null_opts(struct logcap *cap, enum scsitgt_log_level lvl)
{
	struct scsitgt_backend_null_opts o;

	scsitgt_backend_null_opts_init(&o, sizeof(o));
	assert_int_equal(o.size, sizeof(o));
	assert_int_equal(o.log_level, SCSITGT_LOG_DEBUG);
	assert_null(o.log_cb);
	o.log_cb = cap_log;
	o.log_arg = cap;
	o.log_level = lvl;
	return o;
}

/* Backend @i (0 null, 1 RAM) created with @cap's logger at @lvl. */
static int create_logged(int i, void **ctx, struct logcap *cap, enum scsitgt_log_level lvl)
{
	struct scsitgt_backend_null_opts n = null_opts(cap, lvl);
	struct scsitgt_backend_ram_opts r = ram_opts(cap, lvl);

	return i ? scsitgt_backend_ram_create_opts(ctx, &r) :
		   scsitgt_backend_null_create_opts(ctx, &n);
}

#define assert_line(cap, lvl, text)                                              \
	do {                                                                     \
		if (strstr((cap)->last[lvl], text) == NULL)                      \
			fail_msg("\"%s\" lacks \"%s\"", (cap)->last[lvl], text); \
	} while (0)

static void test_refusals(void **state)
{
	struct logcap cap = { 0 };
	struct scsitgt_backend_ram_opts o = ram_opts(&cap, SCSITGT_LOG_DEBUG);
	struct scsitgt_backend_null_opts no = null_opts(&cap, SCSITGT_LOG_DEBUG);
	void *ctx = NULL;

	(void)state;
	assert_int_equal(scsitgt_backend_ram_create_opts(NULL, &o), -EINVAL);
	assert_int_equal(cap.n[SCSITGT_LOG_ERROR], 1);
	assert_line(&cap, SCSITGT_LOG_ERROR,
		    "ram: scsitgt_backend_ram_create_opts: bctx_out is NULL");
	no.log_level = (enum scsitgt_log_level)8;
	assert_int_equal(scsitgt_backend_null_create_opts(&ctx, &no), -EINVAL);
	assert_int_equal(cap.n[SCSITGT_LOG_ERROR], 2);
	assert_line(&cap, SCSITGT_LOG_ERROR,
		    "null: scsitgt_backend_null_create_opts: log_level 8: not between");
	assert_null(ctx);
	/* Options of size 0 are not read, their logger neither; NULL options are the defaults. */
	no.size = 0;
	assert_int_equal(scsitgt_backend_null_create_opts(NULL, &no), -EINVAL);
	assert_int_equal(cap.n[SCSITGT_LOG_ERROR], 2);
	assert_int_equal(scsitgt_backend_ram_create_opts(&ctx, NULL), 0);
	scsitgt_backend_ram_ops()->close(ctx, NULL, NULL);
	assert_int_equal(scsitgt_backend_null_create_opts(&ctx, &no), 0);
	scsitgt_backend_null_ops()->close(ctx, NULL, NULL);
	/* Refusals only: nothing else was logged. */
	assert_int_equal(cap.n[SCSITGT_LOG_WARNING] + cap.n[SCSITGT_LOG_NOTICE] +
				 cap.n[SCSITGT_LOG_INFO] + cap.n[SCSITGT_LOG_DEBUG],
			 0);
}

/* open() says what it refuses and what it opened; the level filters. */
static void test_open(void **state)
{
	const struct scsitgt_backend_ops *ops[2] = { scsitgt_backend_null_ops(),
						     scsitgt_backend_ram_ops() };
	struct logcap cap = { 0 };
	struct harness h;
	struct scsitgt_lun *lun;
	void *ctx;

	(void)state;
	harness_init(&h);
	for (int i = 0; i < 2; i++) {
		memset(&cap, 0, sizeof(cap));
		assert_int_equal(create_logged(i, &ctx, &cap, SCSITGT_LOG_INFO), 0);
		assert_int_equal(harness_lun(&h, &lun, 20 + (uint64_t)i, ops[i], ctx, 512, 0, 0),
				 -EINVAL);
		assert_int_equal(cap.n[SCSITGT_LOG_ERROR], 1);
		assert_line(&cap, SCSITGT_LOG_ERROR,
			    i ? "ram: open: num_blocks 0: a RAM medium has no size of its own" :
				"null: open: num_blocks 0: a null medium has no size of its own");
		ops[i]->close(ctx, NULL, NULL);
		assert_int_equal(create_logged(i, &ctx, &cap, SCSITGT_LOG_INFO), 0);
		assert_int_equal(harness_lun(&h, &lun, 1 + (uint64_t)i, ops[i], ctx, 4096, 256, 0),
				 0);
		assert_int_equal(cap.n[SCSITGT_LOG_INFO], 1);
		assert_line(&cap, SCSITGT_LOG_INFO, "open: 256 blocks of 4096 bytes");
		/* At ERROR the INFO line is not passed. */
		memset(&cap, 0, sizeof(cap));
		assert_int_equal(create_logged(i, &ctx, &cap, SCSITGT_LOG_ERROR), 0);
		assert_int_equal(harness_lun(&h, &lun, 10 + (uint64_t)i, ops[i], ctx, 512, 8, 0),
				 0);
		assert_int_equal(cap.n[SCSITGT_LOG_INFO], 0);
	}
	harness_fini(&h);
}

/* A RAM LUN out of memory: one ERROR line, not one per write; a NOTICE once writes work. */
static void test_ram_nospace(void **state)
{
	struct logcap cap = { 0 };
	struct scsitgt_backend_ram_opts o = ram_opts(&cap, SCSITGT_LOG_NOTICE);
	uint64_t cb = scsitgt__backend_ram_chunk_size() / 512;
	uint8_t buf[512];
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct scsitgt_lun *lun;
	struct harness h;
	void *ctx;

	(void)state;
	memset(buf, 0x5a, sizeof(buf));
	harness_init(&h);
	assert_int_equal(scsitgt_backend_ram_create_opts(&ctx, &o), 0);
	assert_int_equal(harness_lun(&h, &lun, 0, scsitgt_backend_ram_ops(), ctx, 512, 4 * cb,
				     SCSITGT_LUN_THIN),
			 0);
	scsitgt__backend_ram_set_max_chunks(ctx, 1);
	assert_int_equal(harness_io(&h, 0, SCSITGT_IO_WRITE, 0, 1, &iov, 1, NULL), SCSITGT__SR_OK);
	for (int i = 0; i < 3; i++)
		assert_int_equal(harness_io(&h, 0, SCSITGT_IO_WRITE, 2 * cb, 1, &iov, 1, NULL),
				 SCSITGT__SR_SPACE_ALLOC_FAILED);
	assert_int_equal(cap.n[SCSITGT_LOG_ERROR], 1);
	assert_line(&cap, SCSITGT_LOG_ERROR, "ram: no memory for 1 blocks at LBA");
	assert_line(&cap, SCSITGT_LOG_ERROR, "(1 chunks of 1 MiB held)");
	/* Reads do not change it; a write that works does, once. */
	assert_int_equal(harness_io(&h, 0, SCSITGT_IO_READ, 0, 1, &iov, 1, NULL), SCSITGT__SR_OK);
	assert_int_equal(cap.n[SCSITGT_LOG_NOTICE], 0);
	assert_int_equal(harness_io(&h, 0, SCSITGT_IO_WRITE, 1, 1, &iov, 1, NULL), SCSITGT__SR_OK);
	assert_int_equal(harness_io(&h, 0, SCSITGT_IO_WRITE, 2, 1, &iov, 1, NULL), SCSITGT__SR_OK);
	assert_int_equal(cap.n[SCSITGT_LOG_NOTICE], 1);
	assert_line(&cap, SCSITGT_LOG_NOTICE, "ram: writes find memory again");
	assert_int_equal(harness_io(&h, 0, SCSITGT_IO_WRITE, 2 * cb, 1, &iov, 1, NULL),
			 SCSITGT__SR_SPACE_ALLOC_FAILED);
	assert_int_equal(cap.n[SCSITGT_LOG_ERROR], 2);
	harness_fini(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_open),
		cmocka_unit_test(test_ram_nospace),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
