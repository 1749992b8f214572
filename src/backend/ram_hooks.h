/* SPDX-License-Identifier: MIT */
/*
 * Internal knobs of the RAM backend, for unit tests: not part of the public API (the symbols
 * are hidden in the shared library). @bctx is a context from scsitgt_backend_ram_create().
 */
#ifndef SCSITGT_BACKEND_RAM_HOOKS_H
#define SCSITGT_BACKEND_RAM_HOOKS_H

#include <stdint.h>

/* Refuse to hold more than @max_chunks data chunks (0: no limit): writes that need another
 * chunk then fail with -ENOSPC, as if the allocator had run dry. */
void scsitgt__backend_ram_set_max_chunks(void *bctx, uint64_t max_chunks);
/* Data chunks currently allocated. */
uint64_t scsitgt__backend_ram_chunk_count(const void *bctx);
/* Index nodes currently allocated. */
uint64_t scsitgt__backend_ram_node_count(const void *bctx);
/* Chunks copied so far because a write met them lent to a read (copy on write). */
uint64_t scsitgt__backend_ram_cow_copies(const void *bctx);
/* Bytes of one data chunk. */
uint64_t scsitgt__backend_ram_chunk_size(void);

#endif /* SCSITGT_BACKEND_RAM_HOOKS_H */
