/* SPDX-License-Identifier: MIT */
/*
 * Zero-copy reads (scsitgt_io_lend_data()): what the core accepts and when it releases, the
 * null backend lending the zero region, and the RAM backend lending its chunks with copy on
 * write, so that lent data is a snapshot that no later write, UNMAP or WRITE ZEROES changes.
 * Run under ASan, the release paths are also checked for use-after-free and leaks.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend/ram_hooks.h"
#include "io_harness.h"

#define BS 512u
#define CHUNK_BLOCKS ((uint32_t)(scsitgt__backend_ram_chunk_size() / BS))

static uint64_t rng_state;

static uint64_t rng(void)
{
	return harness_rng(&rng_state);
}

static void fill(uint8_t *p, size_t len, uint64_t seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(seed * 37 + i * 13 + (i >> 9));
}

static bool all_zero(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (p[i] != 0)
			return false;
	}
	return true;
}

/* ---- the core's side, through a backend that tries each misuse ---- */

struct probe {
	uint8_t data[8 * BS];
	int lend_rc[5];
	int status; /* completion status */
	unsigned int released;
};

static void probe_release(void *arg)
{
	((struct probe *)arg)->released++;
}

static void probe_submit(void *bctx, struct scsitgt_io *io)
{
	struct probe *p = bctx;
	size_t len = (size_t)scsitgt_io_get_num_blocks(io) * BS;

	p->lend_rc[0] = scsitgt_io_lend_data(io, p->data, len - 1, probe_release, p);
	p->lend_rc[1] = scsitgt_io_lend_data(io, NULL, len, probe_release, p);
	p->lend_rc[2] = scsitgt_io_lend_data(io, p->data, len, probe_release, p);
	p->lend_rc[3] = scsitgt_io_lend_data(io, p->data, len, probe_release, p);
	scsitgt_io_complete(io, p->status);
}

static int probe_open(void *bctx, struct scsitgt_lun_geometry *geo)
{
	(void)bctx;
	(void)geo;
	return 0;
}

static void probe_close(void *bctx, scsitgt_done_cb cb, void *arg)
{
	(void)bctx;
	if (cb)
		cb(arg, 0);
}

static const struct scsitgt_backend_ops probe_ops = {
	.size = sizeof(struct scsitgt_backend_ops),
	.name = "lend-probe",
	.open = probe_open,
	.close = probe_close,
	.submit = probe_submit,
};

static struct scsitgt__cmd *probe_io(struct harness *h, struct harness_result *res,
				     enum scsitgt_io_type type, uint32_t flags, uint8_t *buf)
{
	struct scsitgt__cmd *cmd = harness_cmd_begin(h, 0);
	struct iovec iov = { buf, 8 * BS };

	memset(res, 0, sizeof(*res));
	assert_int_equal(harness_submit(cmd, res, type, 0, 8, &iov, 1, flags), 0);
	harness_wait(h, res, 1);
	return cmd;
}

/* A good READ with the flag: one lend accepted, the rest refused; released at command end. */
static void test_core_lend_rules(void **state)
{
	static struct probe p;
	struct harness h;
	struct harness_result res = { 0 };
	struct scsitgt__cmd *cmd;
	uint8_t buf[8 * BS];

	(void)state;
	memset(&p, 0, sizeof(p));
	fill(p.data, sizeof(p.data), 1);
	harness_init(&h);
	assert_int_equal(harness_lun(&h, NULL, 0, &probe_ops, &p, BS, 64, 0), 0);

	cmd = probe_io(&h, &res, SCSITGT_IO_READ, SCSITGT_IO_FLAG_MAY_LEND, buf);
	assert_int_equal(res.reason, SCSITGT__SR_OK);
	assert_int_equal(p.lend_rc[0], -EINVAL); /* short */
	assert_int_equal(p.lend_rc[1], -EINVAL); /* NULL */
	assert_int_equal(p.lend_rc[2], 0);
	assert_int_equal(p.lend_rc[3], -EINVAL); /* twice */
	assert_ptr_equal(cmd->lent_data, p.data);
	assert_ptr_equal(scsitgt__cmd_data_in(cmd), p.data);
	assert_int_equal(p.released, 0);
	harness_cmd_end(cmd);
	assert_int_equal(p.released, 1);

	/* Without the flag, or on a WRITE, nothing may be lent. */
	cmd = probe_io(&h, &res, SCSITGT_IO_READ, 0, buf);
	assert_int_equal(p.lend_rc[2], -EINVAL);
	assert_null(cmd->lent_data);
	harness_cmd_end(cmd);
	cmd = probe_io(&h, &res, SCSITGT_IO_WRITE, SCSITGT_IO_FLAG_MAY_LEND, buf);
	assert_int_equal(p.lend_rc[2], -EINVAL);
	assert_null(cmd->lent_data);
	harness_cmd_end(cmd);
	assert_int_equal(p.released, 1);

	/* A failed READ gives the lent memory back at once: no Data-In will be sent. */
	p.status = -EIO;
	cmd = probe_io(&h, &res, SCSITGT_IO_READ, SCSITGT_IO_FLAG_MAY_LEND, buf);
	assert_int_equal(res.reason, SCSITGT__SR_READ_ERROR);
	assert_int_equal(p.lend_rc[2], 0);
	assert_null(cmd->lent_data);
	assert_int_equal(p.released, 2);
	harness_cmd_end(cmd);
	assert_int_equal(p.released, 2);
	harness_fini(&h);
}

/* ---- null: the zero region ---- */

static void test_null_lends_zeros(void **state)
{
	struct harness h;
	struct harness_result res = { 0 };
	struct scsitgt__cmd *cmd;
	void *bctx;
	static uint8_t buf[1 << 20];
	struct iovec iov = { buf, sizeof(buf) };

	(void)state;
	harness_init(&h);
	assert_int_equal(scsitgt_backend_null_create(&bctx), 0);
	assert_int_equal(harness_lun(&h, NULL, 0, scsitgt_backend_null_ops(), bctx, BS, 1 << 20, 0),
			 0);
	memset(buf, 0xa5, sizeof(buf));
	cmd = harness_cmd_begin(&h, 0);
	assert_int_equal(harness_submit(cmd, &res, SCSITGT_IO_READ, 5, sizeof(buf) / BS, &iov, 1,
					SCSITGT_IO_FLAG_MAY_LEND),
			 0);
	harness_wait(&h, &res, 1);
	assert_int_equal(res.reason, SCSITGT__SR_OK);
	assert_non_null(cmd->lent_data);
	assert_true(all_zero(cmd->lent_data, sizeof(buf)));
	/* the io's own buffer was not touched: nothing was copied or zeroed */
	assert_int_equal(buf[0], 0xa5);
	assert_int_equal(buf[sizeof(buf) - 1], 0xa5);
	harness_cmd_end(cmd);

	/* Without the flag the buffer is zeroed as before. */
	assert_int_equal(harness_io(&h, 0, SCSITGT_IO_READ, 5, sizeof(buf) / BS, &iov, 1, NULL),
			 SCSITGT__SR_OK);
	assert_true(all_zero(buf, sizeof(buf)));
	harness_fini(&h);
}

/* ---- RAM: chunks lent, copy on write ---- */

struct ram_fx {
	struct harness h;
	void *bctx;
};

static void ram_fx_init(struct ram_fx *f, uint64_t blocks)
{
	harness_init(&f->h);
	assert_int_equal(scsitgt_backend_ram_create(&f->bctx), 0);
	assert_int_equal(harness_lun(&f->h, NULL, 0, scsitgt_backend_ram_ops(), f->bctx, BS, blocks,
				     SCSITGT_LUN_THIN),
			 0);
}

static enum scsitgt__sense_reason ram_io(struct ram_fx *f, enum scsitgt_io_type type, uint64_t lba,
					 uint32_t n, uint8_t *buf)
{
	struct iovec iov = { buf, (size_t)n * BS };

	return harness_io(&f->h, 0, type, lba, n, buf ? &iov : NULL, buf ? 1 : 0, NULL);
}

/* A READ that may lend; the command stays alive (holding the data) until harness_cmd_end(). */
static struct scsitgt__cmd *ram_lend_read(struct ram_fx *f, uint64_t lba, uint32_t n, uint8_t *buf,
					  struct harness_result *res)
{
	struct scsitgt__cmd *cmd = harness_cmd_begin(&f->h, 0);
	struct iovec iov = { buf, (size_t)n * BS };

	memset(res, 0, sizeof(*res));
	assert_int_equal(harness_submit(cmd, res, SCSITGT_IO_READ, lba, n, &iov, 1,
					SCSITGT_IO_FLAG_MAY_LEND),
			 0);
	harness_wait(&f->h, res, 1);
	assert_int_equal(res->reason, SCSITGT__SR_OK);
	return cmd;
}

/* Lent data stays what was read while writes, UNMAP and WRITE ZEROES change the medium. */
static void test_ram_lend_snapshot(void **state)
{
	static uint8_t a[8 * BS], b[8 * BS], got[8 * BS], scratch[8 * BS];
	struct harness_result res = { 0 };
	struct scsitgt__cmd *c1, *c2, *c3;
	struct ram_fx f;

	(void)state;
	ram_fx_init(&f, 4ull * CHUNK_BLOCKS);
	fill(a, sizeof(a), 1);
	fill(b, sizeof(b), 2);
	assert_int_equal(ram_io(&f, SCSITGT_IO_WRITE, 8, 8, a), SCSITGT__SR_OK);

	c1 = ram_lend_read(&f, 8, 8, scratch, &res);
	assert_non_null(c1->lent_data);
	assert_memory_equal(c1->lent_data, a, sizeof(a));
	/* A second read of the same chunk shares it: no copy yet. */
	c2 = ram_lend_read(&f, 8, 8, scratch, &res);
	assert_ptr_equal(c2->lent_data, c1->lent_data);
	assert_int_equal(scsitgt__backend_ram_cow_copies(f.bctx), 0);

	/* The write goes to a copy; both lent reads still see a. */
	assert_int_equal(ram_io(&f, SCSITGT_IO_WRITE, 8, 8, b), SCSITGT__SR_OK);
	assert_int_equal(scsitgt__backend_ram_cow_copies(f.bctx), 1);
	assert_memory_equal(c1->lent_data, a, sizeof(a));
	assert_memory_equal(c2->lent_data, a, sizeof(a));
	assert_int_equal(ram_io(&f, SCSITGT_IO_READ, 8, 8, got), SCSITGT__SR_OK);
	assert_memory_equal(got, b, sizeof(b));
	harness_cmd_end(c1);
	harness_cmd_end(c2);

	/* Nothing lent: a write goes in place. */
	assert_int_equal(ram_io(&f, SCSITGT_IO_WRITE, 8, 8, a), SCSITGT__SR_OK);
	assert_int_equal(scsitgt__backend_ram_cow_copies(f.bctx), 1);

	/* UNMAP of the whole chunk while lent: the chunk leaves the tree, the data stays. */
	c1 = ram_lend_read(&f, 8, 8, scratch, &res);
	assert_int_equal(ram_io(&f, SCSITGT_IO_UNMAP, 0, CHUNK_BLOCKS, NULL), SCSITGT__SR_OK);
	assert_int_equal(scsitgt__backend_ram_chunk_count(f.bctx), 0);
	assert_memory_equal(c1->lent_data, a, sizeof(a));
	harness_cmd_end(c1);

	/* WRITE ZEROES of part of a lent chunk: copied, then zeroed. */
	assert_int_equal(ram_io(&f, SCSITGT_IO_WRITE, CHUNK_BLOCKS, 8, b), SCSITGT__SR_OK);
	assert_int_equal(ram_io(&f, SCSITGT_IO_WRITE, CHUNK_BLOCKS + 100, 8, a), SCSITGT__SR_OK);
	c3 = ram_lend_read(&f, CHUNK_BLOCKS, 8, scratch, &res);
	assert_int_equal(ram_io(&f, SCSITGT_IO_WRITE_ZEROES, CHUNK_BLOCKS, 4, NULL),
			 SCSITGT__SR_OK);
	assert_int_equal(scsitgt__backend_ram_cow_copies(f.bctx), 2);
	assert_memory_equal(c3->lent_data, b, sizeof(b));
	assert_int_equal(ram_io(&f, SCSITGT_IO_READ, CHUNK_BLOCKS, 8, got), SCSITGT__SR_OK);
	assert_true(all_zero(got, 4 * BS));
	assert_memory_equal(got + 4 * BS, b + 4 * BS, 4 * BS);
	harness_cmd_end(c3);
	harness_fini(&f.h);
}

/* Never-written ranges lend zeros, even across chunks; a range over two chunks with data is
 * copied. */
static void test_ram_lend_shapes(void **state)
{
	static uint8_t a[16 * BS], got[16 * BS];
	struct harness_result res = { 0 };
	struct scsitgt__cmd *cmd;
	struct ram_fx f;

	(void)state;
	ram_fx_init(&f, 4ull * CHUNK_BLOCKS);
	memset(got, 0xee, sizeof(got));
	cmd = ram_lend_read(&f, CHUNK_BLOCKS - 8, 16, got, &res);
	assert_non_null(cmd->lent_data);
	assert_true(all_zero(cmd->lent_data, sizeof(got)));
	assert_int_equal(got[0], 0xee);
	harness_cmd_end(cmd);

	fill(a, sizeof(a), 3);
	assert_int_equal(ram_io(&f, SCSITGT_IO_WRITE, CHUNK_BLOCKS - 8, 16, a), SCSITGT__SR_OK);
	cmd = ram_lend_read(&f, CHUNK_BLOCKS - 8, 16, got, &res);
	assert_null(cmd->lent_data);
	assert_memory_equal(got, a, sizeof(a));
	harness_cmd_end(cmd);
	harness_fini(&f.h);
}

/*
 * A random model: up to 24 lent reads outstanding, each with the model's bytes at its time,
 * against random writes, UNMAPs and WRITE ZEROES of a 3-chunk LUN; every lent read must still
 * hold its snapshot when released, and plain reads must match the model.
 */
static void test_ram_lend_random(void **state)
{
	enum {
		SLOTS = 24,
		MAXB = 64
	};
	const uint64_t blocks = 3ull * CHUNK_BLOCKS;
	struct {
		struct scsitgt__cmd *cmd;
		uint32_t n;
		uint8_t snap[MAXB * BS];
	} * slot;
	uint8_t *model = calloc(1, blocks * BS);
	static uint8_t buf[MAXB * BS];
	struct harness_result res = { 0 };
	struct ram_fx f;
	unsigned int lent = 0;

	(void)state;
	slot = calloc(SLOTS, sizeof(*slot));
	assert_non_null(model);
	assert_non_null(slot);
	rng_state = 0x5eed1e4d;
	ram_fx_init(&f, blocks);
	for (unsigned int step = 0; step < 4000; step++) {
		unsigned int k = (unsigned int)(rng() % SLOTS);
		uint32_t n = 1 + (uint32_t)(rng() % MAXB);
		uint64_t lba = rng() % (blocks - n + 1);

		switch (rng() % 5) {
		case 0: /* lend a read into slot k (releasing what it held) */
			if (slot[k].cmd) {
				assert_memory_equal(slot[k].cmd->lent_data ?
							    slot[k].cmd->lent_data :
							    slot[k].snap,
						    slot[k].snap, slot[k].n * BS);
				harness_cmd_end(slot[k].cmd);
				slot[k].cmd = NULL;
			}
			slot[k].cmd = ram_lend_read(&f, lba, n, buf, &res);
			slot[k].n = n;
			memcpy(slot[k].snap, model + lba * BS, (size_t)n * BS);
			if (slot[k].cmd->lent_data) {
				lent++;
				assert_memory_equal(slot[k].cmd->lent_data, slot[k].snap, n * BS);
			} else {
				assert_memory_equal(buf, slot[k].snap, n * BS);
			}
			break;
		case 1:
		case 2: /* write */
			fill(buf, (size_t)n * BS, step);
			assert_int_equal(ram_io(&f, SCSITGT_IO_WRITE, lba, n, buf), SCSITGT__SR_OK);
			memcpy(model + lba * BS, buf, (size_t)n * BS);
			break;
		case 3: /* unmap or write zeroes, sometimes a whole chunk */
			if (rng() % 4 == 0) {
				n = CHUNK_BLOCKS;
				lba = (rng() % 3) * CHUNK_BLOCKS;
			}
			assert_int_equal(
				ram_io(&f, rng() % 2 ? SCSITGT_IO_UNMAP : SCSITGT_IO_WRITE_ZEROES,
				       lba, n, NULL),
				SCSITGT__SR_OK);
			memset(model + lba * BS, 0, (size_t)n * BS);
			break;
		default: /* plain read */
			assert_int_equal(ram_io(&f, SCSITGT_IO_READ, lba, n, buf), SCSITGT__SR_OK);
			assert_memory_equal(buf, model + lba * BS, (size_t)n * BS);
			break;
		}
	}
	for (unsigned int k = 0; k < SLOTS; k++) {
		if (slot[k].cmd == NULL)
			continue;
		if (slot[k].cmd->lent_data)
			assert_memory_equal(slot[k].cmd->lent_data, slot[k].snap, slot[k].n * BS);
		harness_cmd_end(slot[k].cmd);
	}
	/* the model exercised both paths */
	assert_true(lent > 100);
	assert_true(scsitgt__backend_ram_cow_copies(f.bctx) > 10);
	harness_fini(&f.h);
	free(slot);
	free(model);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_core_lend_rules),	  cmocka_unit_test(test_null_lends_zeros),
		cmocka_unit_test(test_ram_lend_snapshot), cmocka_unit_test(test_ram_lend_shapes),
		cmocka_unit_test(test_ram_lend_random),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
