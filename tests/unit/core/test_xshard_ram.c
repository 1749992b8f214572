/* SPDX-License-Identifier: MIT */
/*
 * One RAM LUN served from two loops at once (the RAM backend is SCSITGT_BACKEND_MULTI_LOOP):
 * nexus B's READs run on the worker while nexus A reads and rewrites the same chunk on home.
 * Both nexuses take lent data (as iSCSI/TCP's do), so the chunk is lent to reads of both loops,
 * released on either loop as a command ends, and copied on write while lent. The chunk's lent
 * count and the LUN it belongs to are shared between the loops: ThreadSanitizer (this test is
 * in the TSan unit suite) reported the release reading the chunk's LUN while the other loop's
 * lend wrote it (CI's conn_workers, two sessions reading one RAM LUN from two workers, stop 29).
 * Every read must see the one pattern ever written. Nothing waits on time.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/scsi_spec.h"
#include "libscsitgt/backend.h"
#include "libscsitgt/scsitgt.h"
#include "util/be.h"
#include "xshard_world.h"

#define BS 512u
#define BLOCKS 8u
/* One 1 MiB chunk of the RAM backend. */
#define LUN_BLOCKS 2048u

enum {
	R_LENT,
	R_COPIED,
	R_BAD
};

static uint8_t pattern[BLOCKS * BS];

static int setup(void **state)
{
	struct xw_world *w;
	struct scsitgt_lun_opts lo;
	void *ram;

	for (size_t i = 0; i < sizeof(pattern); i++)
		pattern[i] = (uint8_t)(i * 7 + (i >> 9) + 1);
	xw_world_create(&w, "iqn.2024-01.org.example:xram");
	w->lend_data_in = true;
	assert_int_equal(scsitgt_backend_ram_create(&ram), 0);
	scsitgt_lun_opts_init(&lo, sizeof(lo));
	lo.block_size = BS;
	lo.num_blocks = LUN_BLOCKS;
	lo.backend = scsitgt_backend_ram_ops();
	lo.backend_ctx = ram;
	xw_world_start(w, &lo);
	*state = w;
	return 0;
}

static void cdb_rw(struct xw_cmd *x, uint8_t op)
{
	x->cdb[0] = op;
	put_be32(&x->cdb[2], 0);
	put_be16(&x->cdb[7], BLOCKS);
	x->cdb_len = 10;
}

static void read_fill(const struct xw_stream *s, struct xw_cmd *x, unsigned int i)
{
	(void)s;
	(void)i;
	cdb_rw(x, SBC_READ_10);
}

static unsigned int read_kind(const struct xw_cmd *x)
{
	if (x->status != SAM_STAT_GOOD || x->din_len != sizeof(pattern) ||
	    memcmp(x->din, pattern, sizeof(pattern)) != 0)
		return R_BAD;
	return x->lent ? R_LENT : R_COPIED;
}

static unsigned int read_judge(const struct xw_stream *s, const struct xw_cmd *x)
{
	(void)s;
	return read_kind(x);
}

/* B reads the chunk on the worker while A reads it and writes it again on home. */
static void test_chunk_lent_on_two_loops(void **state)
{
	struct xw_world *w = *state;
	struct xw_stream s = { .n = 3000, .fill = read_fill, .judge = read_judge };
	unsigned int home[3] = { 0 }, writes = 0, rounds = 0;
	struct xw_cmd x;

	memset(&x, 0, sizeof(x));
	x.sess = w->a;
	cdb_rw(&x, SBC_WRITE_10);
	memcpy(x.dout, pattern, sizeof(pattern));
	x.dout_len = sizeof(pattern);
	assert_int_equal(xw_run(w, &x), SAM_STAT_GOOD);

	xw_stream_start(w, &s);
	while (!xw_stream_done(&s) || rounds < 50) {
		memset(&x, 0, sizeof(x));
		x.sess = w->a;
		if (rounds % 4 == 3) {
			/* The same bytes again: while lent, the chunk is copied first. */
			cdb_rw(&x, SBC_WRITE_10);
			memcpy(x.dout, pattern, sizeof(pattern));
			x.dout_len = sizeof(pattern);
			assert_int_equal(xw_run(w, &x), SAM_STAT_GOOD);
			writes++;
		} else {
			cdb_rw(&x, SBC_READ_10);
			xw_run(w, &x);
			home[read_kind(&x)]++;
		}
		rounds++;
	}
	xw_stream_join(&s);
	print_message("worker: %u lent, %u copied; home: %u lent, %u copied, %u writes\n",
		      s.count[R_LENT], s.count[R_COPIED], home[R_LENT], home[R_COPIED], writes);
	xw_stream_assert_none(&s, R_BAD, "read something else than the pattern");
	assert_int_equal(home[R_BAD], 0);
	assert_int_equal(s.count[R_LENT] + s.count[R_COPIED], s.n);
	/* The chunk was lent on both loops (else the test shows nothing). */
	assert_true(s.count[R_LENT] > 0);
	assert_true(home[R_LENT] > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_chunk_lent_on_two_loops, setup, xw_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
