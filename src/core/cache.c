/* SPDX-License-Identifier: MIT */
/* The per-engine object cache (see cache.h). */
#include <stdlib.h>
#include <string.h>

#include "core/cache.h"

#if defined(__SANITIZE_ADDRESS__)
#define CACHE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CACHE_ASAN 1
#endif
#endif

#ifdef CACHE_ASAN
#include <sanitizer/asan_interface.h>
#define CACHE_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define CACHE_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define CACHE_POISON(p, n) ((void)(p), (void)(n))
#define CACHE_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* A block in a free list; the link lives in the block's first bytes. */
struct scsitgt__cache_block {
	struct scsitgt__cache_block *next;
};

/* Bytes one class may hold, whatever its block size. */
#define CACHE_CLASS_BYTES (8u * 1024u * 1024u)
/* Blocks one class may hold, whatever their size. */
#define CACHE_CLASS_BLOCKS 1024u

void scsitgt__cache_init(struct scsitgt__cache *c, size_t max_bytes)
{
	memset(c, 0, sizeof(*c));
	c->max_bytes = max_bytes;
	c->disabled = max_bytes == 0;
	for (unsigned int i = 0; i < SCSITGT__CACHE_CLASSES; i++) {
		size_t sz = (size_t)1 << (i + SCSITGT__CACHE_MIN_SHIFT);
		size_t n = CACHE_CLASS_BYTES / sz;

		if (n > CACHE_CLASS_BLOCKS)
			n = CACHE_CLASS_BLOCKS;
		if (n < 4)
			n = 4;
		c->cls[i].max = (uint32_t)n;
	}
}

void scsitgt__cache_fini(struct scsitgt__cache *c)
{
	for (unsigned int i = 0; i < SCSITGT__CACHE_CLASSES; i++) {
		struct scsitgt__cache_block *b = c->cls[i].free;

		while (b) {
			struct scsitgt__cache_block *next;

			CACHE_UNPOISON(b, sizeof(*b));
			next = b->next;
			free(b);
			b = next;
		}
		c->cls[i].free = NULL;
		c->cls[i].count = 0;
	}
	c->bytes = 0;
}

/* Class index of @size, or -1 when it is too large to cache. */
static int cache_class(size_t size)
{
	unsigned int shift;

	if (size > ((size_t)1 << SCSITGT__CACHE_MAX_SHIFT))
		return -1;
	if (size <= ((size_t)1 << SCSITGT__CACHE_MIN_SHIFT))
		return 0;
	/* ceil(log2(size)) in one instruction rather than a loop over the classes (this
	 * runs three times per command: command, io, data buffer). */
	shift = (unsigned int)(sizeof(unsigned long long) * 8) -
		(unsigned int)__builtin_clzll((unsigned long long)size - 1);
	return (int)(shift - SCSITGT__CACHE_MIN_SHIFT);
}

void *scsitgt__cache_alloc(struct scsitgt__cache *c, size_t size, size_t *cap)
{
	struct scsitgt__cache_block *b;
	int k;

	if (size == 0)
		size = 1;
	k = c && !c->disabled ? cache_class(size) : -1;
	if (k < 0) {
		*cap = size;
		return malloc(size);
	}
	*cap = (size_t)1 << (k + SCSITGT__CACHE_MIN_SHIFT);
	b = c->cls[k].free;
	if (b == NULL) {
		c->misses++;
		b = malloc(*cap);
		/* Only the requested bytes are usable; ASan reports touches of the slack. */
		if (b)
			CACHE_POISON((uint8_t *)b + size, *cap - size);
		return b;
	}
	CACHE_UNPOISON(b, sizeof(*b));
	c->cls[k].free = b->next;
	c->cls[k].count--;
	c->bytes -= *cap;
	c->hits++;
	CACHE_UNPOISON(b, size);
	return b;
}

void *scsitgt__cache_zalloc(struct scsitgt__cache *c, size_t size, size_t *cap)
{
	void *p = scsitgt__cache_alloc(c, size, cap);

	if (p)
		memset(p, 0, size);
	return p;
}

void scsitgt__cache_free(struct scsitgt__cache *c, void *p, size_t cap)
{
	struct scsitgt__cache_block *b = p;
	int k;

	if (p == NULL)
		return;
	k = c && !c->disabled ? cache_class(cap) : -1;
	/* Only exact class sizes came from the cache; keep within both bounds. */
	if (k < 0 || cap != ((size_t)1 << (k + SCSITGT__CACHE_MIN_SHIFT)) ||
	    c->cls[k].count >= c->cls[k].max || c->bytes + cap > c->max_bytes) {
		CACHE_UNPOISON(p, cap);
		free(p);
		return;
	}
	CACHE_UNPOISON(b, sizeof(*b));
	b->next = c->cls[k].free;
	c->cls[k].free = b;
	c->cls[k].count++;
	c->bytes += cap;
	CACHE_POISON(b, cap);
}
