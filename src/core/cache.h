/* SPDX-License-Identifier: MIT */
/*
 * A per-engine object cache: bounded free lists in power-of-two size classes, so that the
 * steady-state command path (command, backend io, data buffer) does not call malloc. It is
 * used from the engine's loop thread only (the core runs on one loop).
 *
 * Blocks larger than the biggest class, and every block when the cache is disabled, go
 * straight to malloc/free. Under AddressSanitizer, cached blocks are poisoned while they sit
 * in a free list and the slack between the requested size and the class size stays poisoned,
 * so use-after-free and overflows are still reported. SCSITGT_NO_CACHE=1 in the environment
 * (read when the engine is created) disables caching altogether.
 */
#ifndef SCSITGT_CORE_CACHE_H
#define SCSITGT_CORE_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Classes 2^6 (64 B) .. 2^20 (1 MiB). */
#define SCSITGT__CACHE_MIN_SHIFT 6
#define SCSITGT__CACHE_MAX_SHIFT 20
#define SCSITGT__CACHE_CLASSES (SCSITGT__CACHE_MAX_SHIFT - SCSITGT__CACHE_MIN_SHIFT + 1)

struct scsitgt__cache_block;

struct scsitgt__cache {
	struct {
		struct scsitgt__cache_block *free;
		uint32_t count;
		uint32_t max; /* blocks kept at most in this class */
	} cls[SCSITGT__CACHE_CLASSES];
	size_t bytes;	  /* held in free lists */
	size_t max_bytes; /* bound over all classes */
	bool disabled;
	/* Statistics. */
	uint64_t hits;
	uint64_t misses;
};

/* Set up an empty cache holding at most @max_bytes in its free lists (0: disabled). */
void scsitgt__cache_init(struct scsitgt__cache *c, size_t max_bytes);
/* Free every cached block. */
void scsitgt__cache_fini(struct scsitgt__cache *c);
/*
 * A block of at least @size bytes (not zeroed; NULL on failure). *@cap receives the size to
 * give back to scsitgt__cache_free(). @c may be NULL (plain malloc).
 */
void *scsitgt__cache_alloc(struct scsitgt__cache *c, size_t size, size_t *cap);
/* The same, zeroed. */
void *scsitgt__cache_zalloc(struct scsitgt__cache *c, size_t size, size_t *cap);
/* Give back a block from scsitgt__cache_alloc() with the capacity it reported. */
void scsitgt__cache_free(struct scsitgt__cache *c, void *p, size_t cap);

#endif /* SCSITGT_CORE_CACHE_H */
