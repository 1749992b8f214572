/* SPDX-License-Identifier: MIT */
/*
 * A buddy allocator over one caller-supplied memory region: the bookkeeping of the registered
 * buffer pool (mr.c registers the region once; iSER and SRP carve command data buffers out of
 * it and look a buffer's registration up per io by address). Pure: no verbs, no libuv, so it
 * is unit tested everywhere.
 *
 * The region is cut into units of 2^unit_shift bytes; a block is 2^k units (k <= max_order),
 * aligned to its own size relative to the region's start. Freed blocks merge with their buddy.
 * A block can be held (an RDMA operation still targets it): free() then only marks it, and the
 * last release() returns it, so a command torn down while the HCA still writes into its buffer
 * cannot let that memory be handed out again.
 *
 * Loop: one thread (the owner's loop); no locking.
 */
#ifndef SCSITGT_RDMA_BUFPOOL_H
#define SCSITGT_RDMA_BUFPOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Orders 0..SCSITGT__BUFPOOL_MAX_ORDER: with 4 KiB units, blocks of 4 KiB .. 16 MiB. */
#define SCSITGT__BUFPOOL_MAX_ORDER 12u

struct scsitgt__bufpool_meta;

struct scsitgt__bufpool {
	uint8_t *base;
	size_t size; /* usable bytes: nunits << unit_shift */
	unsigned int unit_shift;
	unsigned int max_order;
	uint32_t nunits;
	struct scsitgt__bufpool_meta *meta; /* one per unit; only block heads carry state */
	uint32_t free_head[SCSITGT__BUFPOOL_MAX_ORDER + 1];
	size_t bytes_free;
	/* Statistics. */
	uint64_t allocs;
	uint64_t alloc_fails;
	uint32_t live_blocks;
	uint32_t pending_blocks; /* freed while held */
};

/*
 * Manage @size bytes at @base (not touched; the caller owns and registers it) in units of
 * 2^@unit_shift bytes (9..21) and blocks of at most 2^@max_order units (<= MAX_ORDER).
 * Returns 0; -EINVAL for bad parameters or a region smaller than one unit; -ENOMEM.
 */
int scsitgt__bufpool_init(struct scsitgt__bufpool *bp, void *base, size_t size,
			  unsigned int unit_shift, unsigned int max_order);
void scsitgt__bufpool_fini(struct scsitgt__bufpool *bp);

/* Largest block the pool can ever hand out. */
size_t scsitgt__bufpool_max_block(const struct scsitgt__bufpool *bp);
/*
 * A block of at least @size bytes (the power-of-two block size in *@cap), or NULL when none is
 * free (or @size is 0 or above the largest block).
 */
void *scsitgt__bufpool_alloc(struct scsitgt__bufpool *bp, size_t size, size_t *cap);
/*
 * Give back a block from alloc() (its start address). A held block returns once its last hold
 * is released. Returns 0, or -EINVAL when @p is not the start of a live block (nothing done).
 */
int scsitgt__bufpool_free(struct scsitgt__bufpool *bp, void *p);
/* True when [@p, @p + @len) lies inside one live (allocated, not freed) block. */
bool scsitgt__bufpool_owns(const struct scsitgt__bufpool *bp, const void *p, size_t len);
/*
 * Keep the live block holding @p from being reused until release(). Returns 0, or -ENOENT
 * when @p is in no live block.
 */
int scsitgt__bufpool_hold(struct scsitgt__bufpool *bp, const void *p);
/* Drop a hold taken on the block holding @p (freed or not). */
void scsitgt__bufpool_release(struct scsitgt__bufpool *bp, const void *p);

#endif /* SCSITGT_RDMA_BUFPOOL_H */
