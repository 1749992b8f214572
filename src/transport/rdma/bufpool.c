/* SPDX-License-Identifier: MIT */
/* Buddy allocator of the registered buffer pool. See bufpool.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "transport/rdma/bufpool.h"

#define NONE UINT32_MAX

/* State of a block head; units inside a block keep NOT_HEAD. */
enum {
	NOT_HEAD = 0,
	HEAD_FREE,
	HEAD_LIVE,    /* allocated */
	HEAD_PENDING, /* freed while held: returns on the last release */
};

struct scsitgt__bufpool_meta {
	uint32_t next, prev; /* free list links (HEAD_FREE only) */
	uint32_t holds;
	uint8_t state;
	uint8_t order;
};

static void list_push(struct scsitgt__bufpool *bp, uint32_t u, unsigned int k)
{
	struct scsitgt__bufpool_meta *m = &bp->meta[u];

	m->state = HEAD_FREE;
	m->order = (uint8_t)k;
	m->holds = 0;
	m->prev = NONE;
	m->next = bp->free_head[k];
	if (m->next != NONE)
		bp->meta[m->next].prev = u;
	bp->free_head[k] = u;
	bp->bytes_free += (size_t)1 << (k + bp->unit_shift);
}

static void list_unlink(struct scsitgt__bufpool *bp, uint32_t u)
{
	struct scsitgt__bufpool_meta *m = &bp->meta[u];

	if (m->prev != NONE)
		bp->meta[m->prev].next = m->next;
	else
		bp->free_head[m->order] = m->next;
	if (m->next != NONE)
		bp->meta[m->next].prev = m->prev;
	m->state = NOT_HEAD;
	bp->bytes_free -= (size_t)1 << (m->order + bp->unit_shift);
}

int scsitgt__bufpool_init(struct scsitgt__bufpool *bp, void *base, size_t size,
			  unsigned int unit_shift, unsigned int max_order)
{
	uint32_t u;

	memset(bp, 0, sizeof(*bp));
	if (base == NULL || unit_shift < 9 || unit_shift > 21 ||
	    max_order > SCSITGT__BUFPOOL_MAX_ORDER || (size >> unit_shift) == 0 ||
	    (size >> unit_shift) >= NONE)
		return -EINVAL;
	bp->meta = calloc(size >> unit_shift, sizeof(*bp->meta));
	if (bp->meta == NULL)
		return -ENOMEM;
	bp->base = base;
	bp->unit_shift = unit_shift;
	bp->max_order = max_order;
	bp->nunits = (uint32_t)(size >> unit_shift);
	bp->size = (size_t)bp->nunits << unit_shift;
	for (unsigned int k = 0; k <= SCSITGT__BUFPOOL_MAX_ORDER; k++)
		bp->free_head[k] = NONE;
	/* Cut the region into the largest aligned blocks that fit. */
	for (u = 0; u < bp->nunits;) {
		unsigned int k = max_order;

		while (k > 0 && ((u & ((1u << k) - 1)) != 0 || u + (1u << k) > bp->nunits))
			k--;
		list_push(bp, u, k);
		u += 1u << k;
	}
	return 0;
}

void scsitgt__bufpool_fini(struct scsitgt__bufpool *bp)
{
	free(bp->meta);
	memset(bp, 0, sizeof(*bp));
}

size_t scsitgt__bufpool_max_block(const struct scsitgt__bufpool *bp)
{
	unsigned int k = bp->max_order;

	/* A region smaller than the largest order never holds such a block. */
	while (k > 0 && (1u << k) > bp->nunits)
		k--;
	return bp->nunits ? (size_t)1 << (k + bp->unit_shift) : 0;
}

void *scsitgt__bufpool_alloc(struct scsitgt__bufpool *bp, size_t size, size_t *cap)
{
	unsigned int k = 0, j;
	uint32_t u;

	if (size == 0 || bp->nunits == 0)
		return NULL;
	while (k <= bp->max_order && ((size_t)1 << (k + bp->unit_shift)) < size)
		k++;
	if (k > bp->max_order) {
		bp->alloc_fails++;
		return NULL;
	}
	for (j = k; j <= bp->max_order && bp->free_head[j] == NONE; j++)
		;
	if (j > bp->max_order) {
		bp->alloc_fails++;
		return NULL;
	}
	u = bp->free_head[j];
	list_unlink(bp, u);
	/* Split: keep the lower half, put the upper halves back. */
	while (j > k) {
		j--;
		list_push(bp, u + (1u << j), j);
	}
	bp->meta[u].state = HEAD_LIVE;
	bp->meta[u].order = (uint8_t)k;
	bp->meta[u].holds = 0;
	bp->allocs++;
	bp->live_blocks++;
	*cap = (size_t)1 << (k + bp->unit_shift);
	return bp->base + ((size_t)u << bp->unit_shift);
}

/* The head of the allocated or pending block holding unit @u, or NONE. */
static uint32_t block_of(const struct scsitgt__bufpool *bp, uint32_t u)
{
	/*
	 * Blocks are aligned to their size, so the block holding u starts at u rounded down to
	 * its order; the first k whose rounded unit is a used head of order k is it (blocks are
	 * disjoint, so no other head can claim u).
	 */
	for (unsigned int k = 0; k <= bp->max_order; k++) {
		uint32_t h = u & ~((1u << k) - 1);
		const struct scsitgt__bufpool_meta *m = &bp->meta[h];

		if ((m->state == HEAD_LIVE || m->state == HEAD_PENDING) && m->order == k)
			return h;
	}
	return NONE;
}

static bool unit_of(const struct scsitgt__bufpool *bp, const void *p, uint32_t *u)
{
	const uint8_t *q = p;

	if (bp->nunits == 0 || q < bp->base || q >= bp->base + bp->size)
		return false;
	*u = (uint32_t)((size_t)(q - bp->base) >> bp->unit_shift);
	return true;
}

/* Return a block to the free lists, merging it with free buddies. */
static void block_release(struct scsitgt__bufpool *bp, uint32_t h)
{
	unsigned int k = bp->meta[h].order;

	bp->meta[h].state = NOT_HEAD;
	bp->live_blocks--;
	while (k < bp->max_order) {
		uint32_t b = h ^ (1u << k);

		if (b >= bp->nunits || b + (1u << k) > bp->nunits ||
		    bp->meta[b].state != HEAD_FREE || bp->meta[b].order != k)
			break;
		list_unlink(bp, b);
		if (b < h)
			h = b;
		k++;
	}
	list_push(bp, h, k);
}

int scsitgt__bufpool_free(struct scsitgt__bufpool *bp, void *p)
{
	uint32_t u;
	struct scsitgt__bufpool_meta *m;

	if (!unit_of(bp, p, &u))
		return -EINVAL;
	/* Only the start of a block: its unit's first byte. */
	if ((size_t)((uint8_t *)p - bp->base) & (((size_t)1 << bp->unit_shift) - 1))
		return -EINVAL;
	m = &bp->meta[u];
	if (m->state != HEAD_LIVE)
		return -EINVAL;
	if (m->holds) {
		m->state = HEAD_PENDING;
		bp->pending_blocks++;
		return 0;
	}
	block_release(bp, u);
	return 0;
}

bool scsitgt__bufpool_owns(const struct scsitgt__bufpool *bp, const void *p, size_t len)
{
	uint32_t u, h;
	size_t end;

	if (!unit_of(bp, p, &u))
		return false;
	h = block_of(bp, u);
	if (h == NONE || bp->meta[h].state != HEAD_LIVE)
		return false;
	end = ((size_t)h << bp->unit_shift) + ((size_t)1 << (bp->meta[h].order + bp->unit_shift));
	return (size_t)((const uint8_t *)p - bp->base) + len <= end;
}

int scsitgt__bufpool_hold(struct scsitgt__bufpool *bp, const void *p)
{
	uint32_t u, h;

	if (!unit_of(bp, p, &u))
		return -ENOENT;
	h = block_of(bp, u);
	if (h == NONE || bp->meta[h].state != HEAD_LIVE)
		return -ENOENT;
	bp->meta[h].holds++;
	return 0;
}

void scsitgt__bufpool_release(struct scsitgt__bufpool *bp, const void *p)
{
	uint32_t u, h;
	struct scsitgt__bufpool_meta *m;

	if (!unit_of(bp, p, &u))
		return;
	h = block_of(bp, u);
	if (h == NONE)
		return;
	m = &bp->meta[h];
	if (m->holds == 0)
		return;
	if (--m->holds == 0 && m->state == HEAD_PENDING) {
		bp->pending_blocks--;
		block_release(bp, h);
	}
}
