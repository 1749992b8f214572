/* SPDX-License-Identifier: MIT */
/*
 * Tests of backend/ram.c through the core's io path: zeros for unwritten blocks, round trips
 * across chunk boundaries with iovecs of every shape, UNMAP and WRITE ZEROES freeing and
 * zeroing, a 1 TiB LUN that costs almost nothing, and -ENOSPC when chunks run out.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "backend/ram_hooks.h"
#include "io_harness.h"

#define BS 512u

static uint64_t rng_state;

static uint64_t rng(void)
{
	return harness_rng(&rng_state);
}

static void fill_pattern(uint8_t *p, size_t len, uint64_t seed)
{
	for (size_t i = 0; i < len; i++) {
		p[i] = (uint8_t)((seed * 131 + i * 7 + (i >> 9)) ^ (i >> 3));
	}
}

static bool all_bytes(const uint8_t *p, size_t len, uint8_t v)
{
	for (size_t i = 0; i < len; i++) {
		if (p[i] != v) {
			return false;
		}
	}
	return true;
}

/*
 * Cut @len bytes of @buf into at most @max iovecs of random sizes, with some zero-length
 * entries and boundaries that ignore blocks and chunks. Returns the iovec count.
 */
static int split_iov(uint8_t *buf, size_t len, struct iovec *iov, int max)
{
	int n = 0;
	size_t off = 0;

	while (off < len && n < max - 1) {
		size_t left = len - off;
		size_t k;

		switch (rng() % 5) {
		case 0:
			k = 0;
			break;
		case 1:
			k = 1 + rng() % 7;
			break;
		case 2:
			k = 1 + rng() % 1500;
			break;
		default:
			k = 1 + rng() % (left < 300000 ? left : 300000);
			break;
		}
		if (k > left) {
			k = left;
		}
		iov[n].iov_base = buf + off;
		iov[n].iov_len = k;
		off += k;
		n++;
	}
	iov[n].iov_base = buf + off;
	iov[n].iov_len = len - off;
	return n + 1;
}

struct ram_fixture {
	struct harness h;
	void *bctx;
	struct scsitgt_lun *lun;
};

static void ram_setup(struct ram_fixture *f, uint32_t block_size, uint64_t num_blocks)
{
	harness_init(&f->h);
	assert_int_equal(scsitgt_backend_ram_create(&f->bctx), 0);
	assert_int_equal(harness_lun(&f->h, &f->lun, 0, scsitgt_backend_ram_ops(), f->bctx,
				     block_size, num_blocks, SCSITGT_LUN_THIN),
			 0);
}

static enum scsitgt__sense_reason ram_rw(struct ram_fixture *f, enum scsitgt_io_type type,
					 uint64_t lba, uint32_t n, uint8_t *buf, uint32_t bs)
{
	struct iovec iov = { .iov_base = buf, .iov_len = (size_t)n * bs };

	return harness_io(&f->h, 0, type, lba, n, buf ? &iov : NULL, buf ? 1 : 0, NULL);
}

static void test_ram_create_args(void **state)
{
	(void)state;
	assert_int_equal(scsitgt_backend_ram_create(NULL), -EINVAL);
	assert_non_null(scsitgt_backend_ram_ops());
	assert_string_equal(scsitgt_backend_ram_ops()->name, "ram");
	assert_int_equal(scsitgt_backend_ram_ops()->size, sizeof(struct scsitgt_backend_ops));
}

static void test_ram_geometry(void **state)
{
	struct harness h;
	struct scsitgt_lun *lun;
	struct scsitgt_lun_geometry geo = { .size = sizeof(geo) };
	void *bctx;

	(void)state;
	harness_init(&h);
	/* The RAM medium has no size of its own. */
	assert_int_equal(scsitgt_backend_ram_create(&bctx), 0);
	assert_int_equal(harness_lun(&h, NULL, 0, scsitgt_backend_ram_ops(), bctx, 512, 0, 0),
			 -EINVAL);
	/* A capacity whose byte count overflows 64 bits. */
	assert_int_equal(harness_lun(&h, NULL, 0, scsitgt_backend_ram_ops(), bctx, 4096,
				     UINT64_MAX / 4096 + 1, 0),
			 -EINVAL);
	/* The block size defaults to 512 as in the core. */
	assert_int_equal(harness_lun(&h, &lun, 0, scsitgt_backend_ram_ops(), bctx, 0, 100, 0), 0);
	assert_int_equal(scsitgt_lun_get_geometry(lun, &geo), 0);
	assert_int_equal(geo.block_size, 512);
	assert_int_equal(geo.num_blocks, 100);
	assert_true(geo.flags & SCSITGT_GEOMETRY_LBPRZ);
	assert_true(geo.flags & SCSITGT_GEOMETRY_NON_ROTATIONAL);
	assert_false(geo.flags & SCSITGT_GEOMETRY_WRITE_CACHE);
	/* One context serves one LUN. */
	assert_int_equal(harness_lun(&h, NULL, 1, scsitgt_backend_ram_ops(), bctx, 512, 100, 0),
			 -EBUSY);
	/* Nothing written, nothing allocated. */
	assert_int_equal(scsitgt__backend_ram_chunk_count(bctx), 0);
	assert_int_equal(scsitgt__backend_ram_node_count(bctx), 0);
	harness_fini(&h);
}

static void test_ram_unwritten_reads_zero(void **state)
{
	struct ram_fixture f;
	uint8_t *buf = malloc(64 * 4096);

	(void)state;
	ram_setup(&f, 4096, 1 << 20);
	memset(buf, 0xa5, 64 * 4096);
	assert_int_equal(ram_rw(&f, SCSITGT_IO_READ, 12345, 64, buf, 4096), SCSITGT__SR_OK);
	assert_true(all_bytes(buf, 64 * 4096, 0));
	/* The last blocks of the medium too. */
	memset(buf, 0xa5, 64 * 4096);
	assert_int_equal(ram_rw(&f, SCSITGT_IO_READ, (1 << 20) - 64, 64, buf, 4096),
			 SCSITGT__SR_OK);
	assert_true(all_bytes(buf, 64 * 4096, 0));
	assert_int_equal(scsitgt__backend_ram_chunk_count(f.bctx), 0);
	free(buf);
	harness_fini(&f.h);
}

/* A write straddling two chunk boundaries, read back whole and in pieces. */
static void test_ram_cross_chunk_round_trip(void **state)
{
	struct ram_fixture f;
	const uint64_t cblocks = scsitgt__backend_ram_chunk_size() / BS;
	const uint32_t n = (uint32_t)cblocks + 10;
	const uint64_t lba = cblocks - 3;
	size_t len = (size_t)n * BS;
	uint8_t *wbuf = malloc(len), *rbuf = malloc(len);
	struct iovec wiov[64], riov[64];
	int wcnt, rcnt;

	(void)state;
	rng_state = 0x1234;
	ram_setup(&f, BS, 4 * cblocks);
	fill_pattern(wbuf, len, 7);
	wcnt = split_iov(wbuf, len, wiov, 64);
	assert_int_equal(harness_io(&f.h, 0, SCSITGT_IO_WRITE, lba, n, wiov, wcnt, NULL),
			 SCSITGT__SR_OK);
	/* Chunks 0, 1 and 2 are touched; chunk 3 is not. */
	assert_int_equal(scsitgt__backend_ram_chunk_count(f.bctx), 3);

	memset(rbuf, 0xee, len);
	rcnt = split_iov(rbuf, len, riov, 64);
	assert_int_equal(harness_io(&f.h, 0, SCSITGT_IO_READ, lba, n, riov, rcnt, NULL),
			 SCSITGT__SR_OK);
	assert_memory_equal(rbuf, wbuf, len);

	/* One block before and after the write still read as zeros. */
	memset(rbuf, 0xee, BS);
	assert_int_equal(ram_rw(&f, SCSITGT_IO_READ, lba - 1, 1, rbuf, BS), SCSITGT__SR_OK);
	assert_true(all_bytes(rbuf, BS, 0));
	memset(rbuf, 0xee, BS);
	assert_int_equal(ram_rw(&f, SCSITGT_IO_READ, lba + n, 1, rbuf, BS), SCSITGT__SR_OK);
	assert_true(all_bytes(rbuf, BS, 0));

	/* Each block alone, through a three-piece iovec that splits it at odd offsets. */
	for (uint32_t i = 0; i < n; i += 97) {
		uint8_t blk[BS];
		struct iovec three[3] = {
			{ .iov_base = blk, .iov_len = 1 },
			{ .iov_base = blk + 1, .iov_len = 300 },
			{ .iov_base = blk + 301, .iov_len = BS - 301 },
		};

		assert_int_equal(harness_io(&f.h, 0, SCSITGT_IO_READ, lba + i, 1, three, 3, NULL),
				 SCSITGT__SR_OK);
		assert_memory_equal(blk, wbuf + (size_t)i * BS, BS);
	}
	free(wbuf);
	free(rbuf);
	harness_fini(&f.h);
}

/*
 * Random ops against a shadow copy of the medium, on a LUN whose last chunk is short: every
 * read must match the shadow byte for byte.
 */
static void test_ram_random_model(void **state)
{
	struct ram_fixture f;
	const uint64_t cblocks = scsitgt__backend_ram_chunk_size() / BS;
	const uint64_t nblocks = 5 * cblocks + 37;
	const uint32_t max_io = (uint32_t)(2 * cblocks + 50);
	uint8_t *shadow = calloc(nblocks, BS);
	uint8_t *buf = malloc((size_t)max_io * BS);
	struct iovec iov[40];

	(void)state;
	rng_state = 0xfeedbeefcafe;
	ram_setup(&f, BS, nblocks);
	for (int step = 0; step < 400; step++) {
		uint32_t n = 1 + (uint32_t)(rng() % (rng() % 4 == 0 ? max_io : 40));
		uint64_t lba = rng() % (nblocks - n + 1);
		size_t len = (size_t)n * BS;
		int op = (int)(rng() % 10);
		int cnt;

		if (rng() % 8 == 0) {
			/* Hug the chunk boundaries and the end of the medium. */
			lba = (rng() % 6) * cblocks;
			lba = lba >= 3 ? lba - 3 : 0;
			if (lba + n > nblocks) {
				lba = nblocks - n;
			}
		}
		if (op < 4) {
			fill_pattern(buf, len, (uint64_t)step);
			cnt = split_iov(buf, len, iov, 40);
			assert_int_equal(
				harness_io(&f.h, 0, SCSITGT_IO_WRITE, lba, n, iov, cnt, NULL),
				SCSITGT__SR_OK);
			memcpy(shadow + lba * BS, buf, len);
		} else if (op < 8) {
			memset(buf, 0x5c, len);
			cnt = split_iov(buf, len, iov, 40);
			assert_int_equal(
				harness_io(&f.h, 0, SCSITGT_IO_READ, lba, n, iov, cnt, NULL),
				SCSITGT__SR_OK);
			assert_memory_equal(buf, shadow + lba * BS, len);
		} else {
			enum scsitgt_io_type t = op == 8 ? SCSITGT_IO_UNMAP :
							   SCSITGT_IO_WRITE_ZEROES;

			assert_int_equal(harness_io(&f.h, 0, t, lba, n, NULL, 0, NULL),
					 SCSITGT__SR_OK);
			memset(shadow + lba * BS, 0, len);
		}
		assert_true(scsitgt__backend_ram_chunk_count(f.bctx) <= 6);
	}
	/* A final full comparison. */
	for (uint64_t lba = 0; lba < nblocks; lba += max_io) {
		uint32_t n = (uint32_t)(nblocks - lba < max_io ? nblocks - lba : max_io);

		assert_int_equal(ram_rw(&f, SCSITGT_IO_READ, lba, n, buf, BS), SCSITGT__SR_OK);
		assert_memory_equal(buf, shadow + lba * BS, (size_t)n * BS);
	}
	free(shadow);
	free(buf);
	harness_fini(&f.h);
}

static void unmap_like(enum scsitgt_io_type type)
{
	struct ram_fixture f;
	const uint64_t cb = scsitgt__backend_ram_chunk_size() / BS;
	size_t len = 3 * cb * BS;
	uint8_t *buf = malloc(len), *pat = malloc(len);

	rng_state = 99;
	ram_setup(&f, BS, 3 * cb);
	fill_pattern(pat, len, 3);
	assert_int_equal(ram_rw(&f, SCSITGT_IO_WRITE, 0, (uint32_t)(3 * cb), pat, BS),
			 SCSITGT__SR_OK);
	assert_int_equal(scsitgt__backend_ram_chunk_count(f.bctx), 3);
	assert_int_equal(scsitgt__backend_ram_node_count(f.bctx), 1);

	/* The tail of chunk 0, all of chunk 1, the head of chunk 2: one chunk freed. */
	assert_int_equal(harness_io(&f.h, 0, type, cb - 5, (uint32_t)cb + 10, NULL, 0, NULL),
			 SCSITGT__SR_OK);
	assert_int_equal(scsitgt__backend_ram_chunk_count(f.bctx), 2);
	memset(pat + (cb - 5) * BS, 0, (cb + 10) * BS);
	assert_int_equal(ram_rw(&f, SCSITGT_IO_READ, 0, (uint32_t)(3 * cb), buf, BS),
			 SCSITGT__SR_OK);
	assert_memory_equal(buf, pat, len);

	/* Zeroing the rest of chunk 0 leaves it all zeros, so it goes too. */
	assert_int_equal(harness_io(&f.h, 0, type, 0, (uint32_t)cb - 5, NULL, 0, NULL),
			 SCSITGT__SR_OK);
	assert_int_equal(scsitgt__backend_ram_chunk_count(f.bctx), 1);

	/* One written block inside chunk 2: zeroed, and the chunk (still holding data) kept. */
	assert_int_equal(harness_io(&f.h, 0, type, 2 * cb + 100, 1, NULL, 0, NULL), SCSITGT__SR_OK);
	assert_int_equal(scsitgt__backend_ram_chunk_count(f.bctx), 1);
	memset(pat + (2 * cb + 100) * BS, 0, BS);
	memset(pat, 0, cb * BS);
	assert_int_equal(ram_rw(&f, SCSITGT_IO_READ, 0, (uint32_t)(3 * cb), buf, BS),
			 SCSITGT__SR_OK);
	assert_memory_equal(buf, pat, len);

	/* An unmapped region stays unallocated. */
	assert_int_equal(harness_io(&f.h, 0, type, cb, 8, NULL, 0, NULL), SCSITGT__SR_OK);
	assert_int_equal(scsitgt__backend_ram_chunk_count(f.bctx), 1);

	/* Everything: the index goes too. */
	assert_int_equal(harness_io(&f.h, 0, type, 0, (uint32_t)(3 * cb), NULL, 0, NULL),
			 SCSITGT__SR_OK);
	assert_int_equal(scsitgt__backend_ram_chunk_count(f.bctx), 0);
	assert_int_equal(scsitgt__backend_ram_node_count(f.bctx), 0);
	assert_int_equal(ram_rw(&f, SCSITGT_IO_READ, 0, (uint32_t)(3 * cb), buf, BS),
			 SCSITGT__SR_OK);
	assert_true(all_bytes(buf, len, 0));
	free(buf);
	free(pat);
	harness_fini(&f.h);
}

static void test_ram_unmap(void **state)
{
	(void)state;
	unmap_like(SCSITGT_IO_UNMAP);
}

static void test_ram_write_zeroes(void **state)
{
	(void)state;
	unmap_like(SCSITGT_IO_WRITE_ZEROES);
}

/* Resident set size now, from /proc/self/statm (pages in memory, not peak). */
static uint64_t rss_bytes(void)
{
	FILE *fp = fopen("/proc/self/statm", "r");
	unsigned long size = 0, resident = 0;

	if (fp == NULL) {
		return 0;
	}
	if (fscanf(fp, "%lu %lu", &size, &resident) != 2) {
		resident = 0;
	}
	fclose(fp);
	return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* A 1 TiB LUN: sixteen scattered writes cost sixteen chunks and a handful of index nodes. */
static void test_ram_one_tib_sparse(void **state)
{
	struct ram_fixture f;
	const uint64_t nblocks = (1ull << 40) / 4096;
	uint8_t wbuf[4096], rbuf[4096];
	uint64_t rss0, rss1;

	(void)state;
	ram_setup(&f, 4096, nblocks);
	rss0 = rss_bytes();
	for (uint64_t i = 0; i < 16; i++) {
		uint64_t lba = i == 15 ? nblocks - 1 : i * (nblocks / 15) + i * 3;

		fill_pattern(wbuf, sizeof(wbuf), lba);
		assert_int_equal(ram_rw(&f, SCSITGT_IO_WRITE, lba, 1, wbuf, 4096), SCSITGT__SR_OK);
	}
	rss1 = rss_bytes();
	assert_int_equal(scsitgt__backend_ram_chunk_count(f.bctx), 16);
	/* 2^20 chunks need three 512-way levels: a root plus at most two nodes per chunk. */
	assert_true(scsitgt__backend_ram_node_count(f.bctx) <= 1 + 2 * 16);
	/* Sixteen 1 MiB chunks, generously bounded (allocator and sanitizer overheads). */
	if (rss0 && rss1) {
		assert_true(rss1 < rss0 + 64ull * 1024 * 1024);
	}
	for (uint64_t i = 0; i < 16; i++) {
		uint64_t lba = i == 15 ? nblocks - 1 : i * (nblocks / 15) + i * 3;

		fill_pattern(wbuf, sizeof(wbuf), lba);
		assert_int_equal(ram_rw(&f, SCSITGT_IO_READ, lba, 1, rbuf, 4096), SCSITGT__SR_OK);
		assert_memory_equal(rbuf, wbuf, sizeof(wbuf));
		assert_int_equal(
			ram_rw(&f, SCSITGT_IO_READ, lba + (i == 15 ? -1 : 1), 1, rbuf, 4096),
			SCSITGT__SR_OK);
		assert_true(all_bytes(rbuf, sizeof(rbuf), 0));
	}
	/* Unmapping the whole medium, 8 GiB at a time, returns every allocation. */
	for (uint64_t lba = 0; lba < nblocks; lba += 1u << 21) {
		assert_int_equal(
			harness_io(&f.h, 0, SCSITGT_IO_UNMAP, lba, 1u << 21, NULL, 0, NULL),
			SCSITGT__SR_OK);
	}
	assert_int_equal(scsitgt__backend_ram_chunk_count(f.bctx), 0);
	assert_int_equal(scsitgt__backend_ram_node_count(f.bctx), 0);

	/* Again, then one UNMAP of everything but the first and last blocks: the absent
	 * subtrees in between are skipped, the present chunks all found. */
	for (uint64_t i = 0; i < 16; i++) {
		uint64_t lba = i == 15 ? nblocks - 1 : i * (nblocks / 15) + i * 3;

		fill_pattern(wbuf, sizeof(wbuf), lba);
		assert_int_equal(ram_rw(&f, SCSITGT_IO_WRITE, lba, 1, wbuf, 4096), SCSITGT__SR_OK);
	}
	assert_int_equal(
		harness_io(&f.h, 0, SCSITGT_IO_UNMAP, 1, (uint32_t)(nblocks - 2), NULL, 0, NULL),
		SCSITGT__SR_OK);
	assert_int_equal(scsitgt__backend_ram_chunk_count(f.bctx), 2);
	fill_pattern(wbuf, sizeof(wbuf), 0);
	assert_int_equal(ram_rw(&f, SCSITGT_IO_READ, 0, 1, rbuf, 4096), SCSITGT__SR_OK);
	assert_memory_equal(rbuf, wbuf, sizeof(wbuf));
	fill_pattern(wbuf, sizeof(wbuf), nblocks - 1);
	assert_int_equal(ram_rw(&f, SCSITGT_IO_READ, nblocks - 1, 1, rbuf, 4096), SCSITGT__SR_OK);
	assert_memory_equal(rbuf, wbuf, sizeof(wbuf));
	assert_int_equal(
		harness_io(&f.h, 0, SCSITGT_IO_WRITE_ZEROES, 0, (uint32_t)nblocks, NULL, 0, NULL),
		SCSITGT__SR_OK);
	assert_int_equal(scsitgt__backend_ram_chunk_count(f.bctx), 0);
	assert_int_equal(scsitgt__backend_ram_node_count(f.bctx), 0);
	harness_fini(&f.h);
}

/* An UNMAP that ends inside an absent subtree must not spill into the chunk after it. */
static void test_ram_unmap_skip_bounds(void **state)
{
	struct ram_fixture f;
	const uint64_t cb = scsitgt__backend_ram_chunk_size() / 4096;
	uint8_t wbuf[4096], rbuf[4096];

	(void)state;
	/* 1 TiB: three index levels, each lowest node covering 512 chunks. */
	ram_setup(&f, 4096, (1ull << 40) / 4096);
	fill_pattern(wbuf, sizeof(wbuf), 1);
	assert_int_equal(ram_rw(&f, SCSITGT_IO_WRITE, 0, 1, wbuf, 4096), SCSITGT__SR_OK);
	assert_int_equal(ram_rw(&f, SCSITGT_IO_WRITE, 1024 * cb, 1, wbuf, 4096), SCSITGT__SR_OK);
	/* Chunks 512..1023 have no index node; end 10 blocks into chunk 1023. */
	assert_int_equal(harness_io(&f.h, 0, SCSITGT_IO_UNMAP, 512 * cb, (uint32_t)(511 * cb + 10),
				    NULL, 0, NULL),
			 SCSITGT__SR_OK);
	/* From inside chunk 1 (whose lowest node exists) to the end of chunk 1023. */
	assert_int_equal(harness_io(&f.h, 0, SCSITGT_IO_UNMAP, cb + 7, (uint32_t)(1023 * cb - 7),
				    NULL, 0, NULL),
			 SCSITGT__SR_OK);
	assert_int_equal(scsitgt__backend_ram_chunk_count(f.bctx), 2);
	assert_int_equal(ram_rw(&f, SCSITGT_IO_READ, 1024 * cb, 1, rbuf, 4096), SCSITGT__SR_OK);
	assert_memory_equal(rbuf, wbuf, sizeof(wbuf));
	assert_int_equal(ram_rw(&f, SCSITGT_IO_READ, 0, 1, rbuf, 4096), SCSITGT__SR_OK);
	assert_memory_equal(rbuf, wbuf, sizeof(wbuf));
	harness_fini(&f.h);
}

/* Allocation failure (chunk cap) completes the write with SPACE ALLOCATION FAILED. */
static void test_ram_enospc(void **state)
{
	struct ram_fixture f;
	const uint64_t cb = scsitgt__backend_ram_chunk_size() / BS;
	size_t len = (size_t)(cb + 2) * BS;
	uint8_t *buf = malloc(len);

	(void)state;
	ram_setup(&f, BS, 8 * cb);
	scsitgt__backend_ram_set_max_chunks(f.bctx, 2);
	memset(buf, 0x11, len);
	assert_int_equal(ram_rw(&f, SCSITGT_IO_WRITE, 0, 1, buf, BS), SCSITGT__SR_OK);
	/* Needs chunks 3 and 4: one more than allowed. Nothing of it may land. */
	memset(buf, 0x22, len);
	assert_int_equal(ram_rw(&f, SCSITGT_IO_WRITE, 4 * cb - 1, (uint32_t)cb + 2, buf, BS),
			 SCSITGT__SR_SPACE_ALLOC_FAILED);
	assert_int_equal(scsitgt__backend_ram_chunk_count(f.bctx), 2);
	memset(buf, 0x33, len);
	assert_int_equal(ram_rw(&f, SCSITGT_IO_READ, 4 * cb - 1, (uint32_t)cb + 2, buf, BS),
			 SCSITGT__SR_OK);
	assert_true(all_bytes(buf, len, 0));
	/* Writes into allocated chunks still work, reads of them too. */
	memset(buf, 0x44, len);
	assert_int_equal(ram_rw(&f, SCSITGT_IO_WRITE, 1, 2, buf, BS), SCSITGT__SR_OK);
	assert_int_equal(ram_rw(&f, SCSITGT_IO_READ, 0, 3, buf, BS), SCSITGT__SR_OK);
	assert_true(all_bytes(buf, BS, 0x11));
	assert_true(all_bytes(buf + BS, 2 * BS, 0x44));
	/* Freeing space makes room again. */
	assert_int_equal(harness_io(&f.h, 0, SCSITGT_IO_UNMAP, 0, (uint32_t)cb, NULL, 0, NULL),
			 SCSITGT__SR_OK);
	assert_int_equal(ram_rw(&f, SCSITGT_IO_WRITE, 5 * cb, 1, buf, BS), SCSITGT__SR_OK);
	free(buf);
	harness_fini(&f.h);
}

static void test_ram_flush_and_errors(void **state)
{
	struct ram_fixture f;
	struct harness_result res;
	uint8_t buf[2 * BS];
	struct iovec short_iov = { .iov_base = buf, .iov_len = BS };

	(void)state;
	ram_setup(&f, BS, 64);
	assert_int_equal(harness_io(&f.h, 0, SCSITGT_IO_FLUSH, 0, 0, NULL, 0, NULL),
			 SCSITGT__SR_OK);
	/* Beyond the end: ILLEGAL REQUEST, LOGICAL BLOCK ADDRESS OUT OF RANGE. */
	assert_int_equal(harness_io(&f.h, 0, SCSITGT_IO_READ, 63, 2, NULL, 0, &res),
			 SCSITGT__SR_RAW);
	assert_int_equal(res.raw.key, 0x05);
	assert_int_equal(res.raw.asc, 0x21);
	assert_int_equal(harness_io(&f.h, 0, SCSITGT_IO_UNMAP, UINT64_MAX, 1, NULL, 0, &res),
			 SCSITGT__SR_RAW);
	/* Buffers shorter than the range are refused, not overrun. */
	assert_int_equal(harness_io(&f.h, 0, SCSITGT_IO_WRITE, 0, 2, &short_iov, 1, NULL),
			 SCSITGT__SR_INTERNAL_FAILURE);
	assert_int_equal(harness_io(&f.h, 0, SCSITGT_IO_READ, 0, 2, &short_iov, 1, NULL),
			 SCSITGT__SR_INTERNAL_FAILURE);
	/* An io type this backend does not know. */
	assert_int_equal(harness_io(&f.h, 0, (enum scsitgt_io_type)5, 0, 1, NULL, 0, NULL),
			 SCSITGT__SR_INVALID_OPCODE);
	/* FUA needs nothing extra: there is no volatile cache. */
	{
		struct harness_result r2 = { 0 };
		struct scsitgt__cmd *cmd = harness_cmd_begin(&f.h, 0);
		struct iovec iov = { .iov_base = buf, .iov_len = BS };

		memset(buf, 0x77, BS);
		assert_int_equal(harness_submit(cmd, &r2, SCSITGT_IO_WRITE, 5, 1, &iov, 1,
						SCSITGT_IO_FLAG_FUA),
				 0);
		harness_wait(&f.h, &r2, 1);
		assert_int_equal(r2.reason, SCSITGT__SR_OK);
		harness_cmd_end(cmd);
	}
	memset(buf, 0, BS);
	assert_int_equal(ram_rw(&f, SCSITGT_IO_READ, 5, 1, buf, BS), SCSITGT__SR_OK);
	assert_true(all_bytes(buf, BS, 0x77));
	harness_fini(&f.h);
}

/* LUN destroy closes the backend and frees every chunk (checked by ASan's leak detector). */
static void test_ram_destroy_frees(void **state)
{
	struct ram_fixture f;
	uint8_t buf[BS];

	(void)state;
	ram_setup(&f, BS, 1ull << 30);
	memset(buf, 1, sizeof(buf));
	for (uint64_t lba = 0; lba < (1ull << 30); lba += 1ull << 26) {
		assert_int_equal(ram_rw(&f, SCSITGT_IO_WRITE, lba, 1, buf, BS), SCSITGT__SR_OK);
	}
	assert_int_equal(scsitgt__backend_ram_chunk_count(f.bctx), 16);
	scsitgt_lun_destroy(f.lun, NULL, NULL);
	harness_fini(&f.h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ram_create_args),
		cmocka_unit_test(test_ram_geometry),
		cmocka_unit_test(test_ram_unwritten_reads_zero),
		cmocka_unit_test(test_ram_cross_chunk_round_trip),
		cmocka_unit_test(test_ram_random_model),
		cmocka_unit_test(test_ram_unmap),
		cmocka_unit_test(test_ram_write_zeroes),
		cmocka_unit_test(test_ram_one_tib_sparse),
		cmocka_unit_test(test_ram_unmap_skip_bounds),
		cmocka_unit_test(test_ram_enospc),
		cmocka_unit_test(test_ram_flush_and_errors),
		cmocka_unit_test(test_ram_destroy_frees),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
