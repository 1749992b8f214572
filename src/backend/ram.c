/* SPDX-License-Identifier: MIT */
/*
 * The RAM backend: a sparse medium in memory.
 *
 * The medium is cut into fixed 1 MiB chunks, allocated on the first write that touches them.
 * Chunks hang off a radix tree of 512-way index nodes whose depth follows the capacity (one
 * level up to 512 MiB, two up to 256 GiB, three up to 128 TiB, ...), so an untouched region of
 * any size costs nothing and a 1 TiB LUN starts with no allocation at all. Chunks that are not
 * allocated read as zeros; UNMAP and WRITE ZEROES free the chunks they cover entirely (and a
 * chunk left all zeros), and zero the parts of others, which is what LBPRZ promises
 * (SBC-4 §4.7.4.5).
 *
 * There is no volatile cache: a write is in memory when it completes, so FLUSH and FUA need no
 * work and the geometry does not claim a write cache. Every io completes synchronously.
 *
 * Zero copy: a READ within one chunk that the transport may send from any memory
 * (SCSITGT_IO_FLAG_MAY_LEND) lends the chunk itself (never-written ranges lend the process's
 * zero region). A lent chunk must not change until it is released, so a write, UNMAP or WRITE
 * ZEROES that touches it copies the chunk first and changes the copy (copy on write), and a
 * lent chunk leaving the tree (freed, replaced, LUN closed) is freed by its last release.
 *
 * Several loops (SCSITGT_BACKEND_MULTI_LOOP): the engine may submit ios of one RAM LUN from
 * each of its loops at once. The chunk tree, the chunks' lent counts and the bytes of the
 * medium are the LUN's shared data; one mutex per LUN (ram_ctx.lock) covers every access to
 * them: a whole io's walk and copy, a lent chunk's release and GET LBA STATUS. An io takes it
 * once, for as long as its copy, and a LUN used by one loop only never waits on it; data lent
 * to a read is never written in place while lent (copy on write), so the transport sends it
 * without the lock. A finer scheme (per-chunk locks, a tree read without locks) would pay
 * only with many loops writing one RAM LUN; the benchmark's shared LUN is a null one.
 *
 * Like every in-tree backend it uses only the public backend.h, proving the host-backend API
 * (plus the library's log helper, for the logger of its options: log_opts.h).
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "backend/log_opts.h"
#include "backend/ram_hooks.h"
#include "backend/zero_region.h"
#include "libscsitgt/backend.h"

#define RAM_CHUNK_SHIFT 20
#define RAM_CHUNK_SIZE ((uint64_t)1 << RAM_CHUNK_SHIFT)
#define RAM_FANOUT_SHIFT 9
#define RAM_FANOUT (1u << RAM_FANOUT_SHIFT)
/* 2^64 bytes / 1 MiB chunks = 2^44 chunks, 9 index bits per level: 5 levels at most. */
#define RAM_MAX_LEVELS 5

/*
 * In front of each chunk's bytes (the tree's slots point at the bytes): the reads that hold it
 * lent, and whether it left the tree while lent, so that its last release frees it.
 */
struct ram_ctx;

struct ram_chunk_hdr {
	uint32_t lent;
	bool detached;
	/* The LUN whose lock covers lent and detached: set when the chunk is made, before any
	 * read can lend it, and never written again, so that a release (on any loop) reads it
	 * before taking that lock without racing with a lend of another loop. */
	struct ram_ctx *rc;
};
/* A multiple of the largest alignment malloc gives, so the bytes stay as aligned. */
#define RAM_HDR_SIZE 64

static struct ram_chunk_hdr *ram_hdr(uint8_t *chunk)
{
	return (struct ram_chunk_hdr *)(void *)(chunk - RAM_HDR_SIZE);
}

/* A zeroed chunk of @len bytes of LUN @rc with its header, or NULL. */
static uint8_t *ram_chunk_alloc(struct ram_ctx *rc, size_t len)
{
	uint8_t *p = calloc(1, RAM_HDR_SIZE + len);

	if (p == NULL) {
		return NULL;
	}
	((struct ram_chunk_hdr *)(void *)p)->rc = rc;
	return p + RAM_HDR_SIZE;
}

/* A chunk leaves the tree: freed now, or by its last release while reads hold it lent. */
static void ram_chunk_drop(uint8_t *chunk)
{
	struct ram_chunk_hdr *h = ram_hdr(chunk);

	if (h->lent) {
		h->detached = true;
	} else {
		free(h);
	}
}

static void ram_lock(struct ram_ctx *rc);
static void ram_unlock(struct ram_ctx *rc);

/* scsitgt_io_lend_data() release (on the io's loop): one read fewer holds the chunk. */
static void ram_lend_release(void *arg)
{
	struct ram_chunk_hdr *h = arg;
	struct ram_ctx *rc = h->rc;

	ram_lock(rc);
	if (--h->lent == 0 && h->detached) {
		free(h);
	}
	ram_unlock(rc);
}

/* An index node: RAM_FANOUT pointers to child nodes, or to chunks on the lowest level. */
struct ram_node {
	/* Number of non-NULL slots; a node that drops to 0 is freed. */
	unsigned int used;
	void *slot[RAM_FANOUT];
};

struct ram_ctx {
	uint32_t block_size;
	uint64_t num_blocks;
	/* Capacity in bytes, num_blocks * block_size. */
	uint64_t bytes;
	/* Index levels above the chunks (>= 1); 0 until open(). */
	unsigned int levels;
	/* The top index node (struct ram_node *), NULL while nothing is written. */
	void *root;
	uint64_t chunks;
	uint64_t nodes;
	/* Test hook: most chunks allowed (0: no limit). */
	uint64_t max_chunks;
	/* chunks copied because a write met them lent to a read (ram_chunk_unshare()). */
	uint64_t cow_copies;
	/* The last write, UNMAP or WRITE ZEROES found no memory (logged once until one works). */
	bool nospace;
	/* The options' logger (scsitgt_backend_ram_create_opts()); read-only after create. */
	struct scsitgt__logger log;
	/* Covers everything above once open and the medium's bytes (see the top). */
	uv_mutex_t lock;
};

static void ram_lock(struct ram_ctx *rc)
{
	uv_mutex_lock(&rc->lock);
}

static void ram_unlock(struct ram_ctx *rc)
{
	uv_mutex_unlock(&rc->lock);
}

/* Slot of chunk @c in its node on level @lvl (0: the node that points at chunks). */
static unsigned int ram_slot_index(uint64_t c, unsigned int lvl)
{
	return (unsigned int)(c >> (lvl * RAM_FANOUT_SHIFT)) & (RAM_FANOUT - 1);
}

/* Bytes of chunk @c: RAM_CHUNK_SIZE, except for a short last chunk. */
static size_t ram_chunk_len(const struct ram_ctx *rc, uint64_t c)
{
	uint64_t start = c << RAM_CHUNK_SHIFT;
	uint64_t left = rc->bytes - start;

	return (size_t)(left < RAM_CHUNK_SIZE ? left : RAM_CHUNK_SIZE);
}

/*
 * The chunk @c, or NULL when it was never written (or was unmapped). Then @span (if not NULL)
 * receives how many chunks from @c on are known to be absent: the rest of the missing subtree.
 */
static uint8_t *ram_chunk_find_span(const struct ram_ctx *rc, uint64_t c, uint64_t *span)
{
	struct ram_node *n = rc->root;
	unsigned int lvl = rc->levels;

	while (n != NULL && lvl > 1) {
		lvl--;
		n = n->slot[ram_slot_index(c, lvl)];
	}
	if (n != NULL && n->slot[ram_slot_index(c, 0)] != NULL) {
		return n->slot[ram_slot_index(c, 0)];
	}
	if (span) {
		/* The NULL was found in a node of level lvl (or at the root, lvl == levels):
		 * every chunk up to the next multiple of 512^lvl is absent. */
		unsigned int shift = (n != NULL ? 0 : lvl) * RAM_FANOUT_SHIFT;

		*span = shift >= 64 ? UINT64_MAX : (((c >> shift) + 1) << shift) - c;
	}
	return NULL;
}

static uint8_t *ram_chunk_find(const struct ram_ctx *rc, uint64_t c)
{
	return ram_chunk_find_span(rc, c, NULL);
}

/*
 * Make chunk @c (which exists) safe to change: when reads hold it lent, put a copy in its slot
 * and leave the original to them. -ENOSPC when the copy cannot be allocated.
 */
static int ram_chunk_unshare(struct ram_ctx *rc, uint64_t c)
{
	struct ram_node *n = rc->root;
	unsigned int lvl = rc->levels;
	uint8_t *old, *copy;
	size_t len;

	while (lvl > 1) {
		lvl--;
		n = n->slot[ram_slot_index(c, lvl)];
	}
	old = n->slot[ram_slot_index(c, 0)];
	if (ram_hdr(old)->lent == 0) {
		return 0;
	}
	len = ram_chunk_len(rc, c);
	copy = malloc(RAM_HDR_SIZE + len);
	if (copy == NULL) {
		return -ENOSPC;
	}
	copy += RAM_HDR_SIZE;
	memset(ram_hdr(copy), 0, sizeof(struct ram_chunk_hdr));
	ram_hdr(copy)->rc = rc;
	memcpy(copy, old, len);
	n->slot[ram_slot_index(c, 0)] = copy;
	ram_chunk_drop(old);
	rc->cow_copies++;
	return 0;
}

/*
 * Free the index nodes on chunk @c's path that hold nothing any more, bottom-up, so that an
 * unmapped region goes back to costing nothing.
 */
static void ram_prune(struct ram_ctx *rc, uint64_t c)
{
	void **parent_slot[RAM_MAX_LEVELS];
	void **slotp = &rc->root;
	int lvl;

	for (lvl = (int)rc->levels - 1; lvl >= 0; lvl--) {
		struct ram_node *n = *slotp;

		if (n == NULL) {
			break;
		}
		parent_slot[lvl] = slotp;
		slotp = &n->slot[ram_slot_index(c, (unsigned int)lvl)];
	}
	/* Nodes exist on levels lvl + 1 .. levels - 1; walk up from the lowest. */
	for (int l = lvl + 1; l < (int)rc->levels; l++) {
		struct ram_node *n = *parent_slot[l];

		if (n->used != 0) {
			break;
		}
		free(n);
		rc->nodes--;
		*parent_slot[l] = NULL;
		if (l + 1 < (int)rc->levels) {
			((struct ram_node *)*parent_slot[l + 1])->used--;
		}
	}
}

/* The chunk @c, allocated (zeroed) if needed. -ENOSPC when memory runs out. */
static int ram_chunk_get(struct ram_ctx *rc, uint64_t c, uint8_t **out)
{
	void **slotp = &rc->root;
	struct ram_node *parent = NULL;
	void *chunk;

	for (int lvl = (int)rc->levels - 1; lvl >= 0; lvl--) {
		if (*slotp == NULL) {
			struct ram_node *n = calloc(1, sizeof(*n));

			if (n == NULL) {
				ram_prune(rc, c);
				return -ENOSPC;
			}
			*slotp = n;
			rc->nodes++;
			if (parent) {
				parent->used++;
			}
		}
		parent = *slotp;
		slotp = &parent->slot[ram_slot_index(c, (unsigned int)lvl)];
	}
	if (*slotp == NULL) {
		chunk = NULL;
		if (rc->max_chunks == 0 || rc->chunks < rc->max_chunks) {
			chunk = ram_chunk_alloc(rc, ram_chunk_len(rc, c));
		}
		if (chunk == NULL) {
			ram_prune(rc, c);
			return -ENOSPC;
		}
		*slotp = chunk;
		parent->used++;
		rc->chunks++;
	}
	*out = *slotp;
	return 0;
}

static void ram_chunk_free(struct ram_ctx *rc, uint64_t c)
{
	struct ram_node *n = rc->root;
	unsigned int i;

	for (unsigned int lvl = rc->levels - 1; n != NULL && lvl > 0; lvl--) {
		n = n->slot[ram_slot_index(c, lvl)];
	}
	i = ram_slot_index(c, 0);
	if (n == NULL || n->slot[i] == NULL) {
		return;
	}
	ram_chunk_drop(n->slot[i]);
	n->slot[i] = NULL;
	n->used--;
	rc->chunks--;
	ram_prune(rc, c);
}

static void ram_tree_free(void *node, unsigned int lvl)
{
	struct ram_node *n = node;

	if (n == NULL) {
		return;
	}
	for (unsigned int i = 0; i < RAM_FANOUT; i++) {
		if (n->slot[i] == NULL) {
			continue;
		}
		if (lvl == 0) {
			ram_chunk_drop(n->slot[i]);
		} else {
			ram_tree_free(n->slot[i], lvl - 1);
		}
	}
	free(n);
}

/* A cursor over an io's iovecs; zero-length entries are skipped. */
struct ram_iov_iter {
	const struct iovec *iov;
	int iovcnt;
	int i;
	size_t off;
};

/* Move @n bytes between @mem and the iovecs (to_iov: into them; mem NULL: zeros into them). */
static void ram_iov_copy(struct ram_iov_iter *it, uint8_t *mem, size_t n, bool to_iov)
{
	while (n > 0) {
		const struct iovec *v = &it->iov[it->i];
		size_t k = v->iov_len - it->off;

		if (k == 0) {
			it->i++;
			it->off = 0;
			continue;
		}
		if (k > n) {
			k = n;
		}
		if (!to_iov) {
			memcpy(mem, (uint8_t *)v->iov_base + it->off, k);
		} else if (mem) {
			memcpy((uint8_t *)v->iov_base + it->off, mem, k);
		} else {
			memset((uint8_t *)v->iov_base + it->off, 0, k);
		}
		if (mem) {
			mem += k;
		}
		it->off += k;
		n -= k;
	}
}

/* Whether the iovecs hold at least @len bytes (the core promises exactly that many). */
static bool ram_iov_covers(const struct iovec *iov, int iovcnt, uint64_t len)
{
	uint64_t total = 0;

	for (int i = 0; i < iovcnt && total < len; i++) {
		total += iov[i].iov_len;
	}
	return total >= len;
}

static bool ram_mem_is_zero(const uint8_t *p, size_t len)
{
	return len == 0 || (p[0] == 0 && memcmp(p, p + 1, len - 1) == 0);
}

static void ram_read(struct ram_ctx *rc, uint64_t off, uint64_t len, struct ram_iov_iter *it)
{
	while (len > 0) {
		uint64_t c = off >> RAM_CHUNK_SHIFT;
		size_t in = (size_t)(off & (RAM_CHUNK_SIZE - 1));
		size_t n = ram_chunk_len(rc, c) - in;
		uint8_t *chunk = ram_chunk_find(rc, c);

		if (n > len) {
			n = (size_t)len;
		}
		ram_iov_copy(it, chunk ? chunk + in : NULL, n, true);
		off += n;
		len -= n;
	}
}

/*
 * Lend a READ's data instead of copying it: a range inside one chunk lends the chunk's bytes,
 * a range where nothing was ever written lends the zero region. false: copy as usual.
 */
static bool ram_lend(struct ram_ctx *rc, struct scsitgt_io *io, uint64_t off, uint64_t len)
{
	uint64_t first = off >> RAM_CHUNK_SHIFT;
	uint64_t last = (off + len - 1) >> RAM_CHUNK_SHIFT;
	uint64_t span = 1;
	uint8_t *chunk = ram_chunk_find_span(rc, first, &span);
	const void *zeros;

	if (chunk != NULL) {
		struct ram_chunk_hdr *h = ram_hdr(chunk);

		if (first != last) {
			return false;
		}
		h->lent++;
		if (scsitgt_io_lend_data(io, chunk + (off & (RAM_CHUNK_SIZE - 1)), (size_t)len,
					 ram_lend_release, h) < 0) {
			h->lent--;
			return false;
		}
		return true;
	}
	/* Absent: every chunk of the range must be absent (span counts from first). */
	if (last - first >= span) {
		return false;
	}
	zeros = scsitgt__zero_region((size_t)len);
	return zeros != NULL && scsitgt_io_lend_data(io, zeros, (size_t)len, NULL, NULL) == 0;
}

static int ram_write(struct ram_ctx *rc, uint64_t off, uint64_t len, struct ram_iov_iter *it)
{
	uint64_t first = off >> RAM_CHUNK_SHIFT;
	uint64_t last = (off + len - 1) >> RAM_CHUNK_SHIFT;
	uint8_t *chunk;
	int err;

	/* Allocate (or unshare) every chunk first, so that a failed write leaves the medium
	 * unchanged. */
	for (uint64_t c = first; c <= last; c++) {
		err = ram_chunk_get(rc, c, &chunk);
		if (err == 0) {
			err = ram_chunk_unshare(rc, c);
		}
		if (err < 0) {
			return err;
		}
	}
	while (len > 0) {
		uint64_t c = off >> RAM_CHUNK_SHIFT;
		size_t in = (size_t)(off & (RAM_CHUNK_SIZE - 1));
		size_t n = ram_chunk_len(rc, c) - in;

		if (n > len) {
			n = (size_t)len;
		}
		ram_iov_copy(it, ram_chunk_find(rc, c) + in, n, false);
		off += n;
		len -= n;
	}
	return 0;
}

/*
 * UNMAP and WRITE ZEROES: afterwards the range reads as zeros and whole chunks are freed.
 * -ENOSPC when a lent chunk cannot be copied to zero part of it (the chunks before it are
 * zeroed already, which an UNMAP that fails may leave: SBC-4 §5.32 gives no atomicity).
 */
static int ram_zero(struct ram_ctx *rc, uint64_t off, uint64_t len)
{
	while (len > 0) {
		uint64_t c = off >> RAM_CHUNK_SHIFT;
		size_t clen = ram_chunk_len(rc, c);
		size_t in = (size_t)(off & (RAM_CHUNK_SIZE - 1));
		size_t n = clen - in;
		uint64_t span = 1;
		uint8_t *chunk = ram_chunk_find_span(rc, c, &span);

		if (chunk == NULL && span > 1) {
			/* Skip a whole absent subtree at once: huge UNMAPs of sparse media stay
			 * cheap. */
			uint64_t last = (off + len - 1) >> RAM_CHUNK_SHIFT;
			uint64_t next;

			if (span > last - c) {
				break;
			}
			next = (c + span) << RAM_CHUNK_SHIFT;
			len -= next - off;
			off = next;
			continue;
		}
		if (n > len) {
			n = (size_t)len;
		}
		if (chunk != NULL) {
			if (n < clen) {
				if (ram_chunk_unshare(rc, c) < 0) {
					return -ENOSPC;
				}
				chunk = ram_chunk_find(rc, c);
				memset(chunk + in, 0, n);
			}
			/* A chunk left all zeros is as good as an unallocated one. */
			if (n == clen || ram_mem_is_zero(chunk, clen)) {
				ram_chunk_free(rc, c);
			}
		}
		off += n;
		len -= n;
	}
	return 0;
}

static int ram_open(void *bctx, struct scsitgt_lun_geometry *geo)
{
	struct ram_ctx *rc = bctx;
	uint64_t nchunks;

	/* The RAM medium has no size of its own: the LUN options must say how big it is. */
	if (geo->num_blocks == 0) {
		scsitgt__log(&rc->log, SCSITGT_LOG_ERROR, "ram",
			     "open: num_blocks 0: a RAM medium has no size of its own, the LUN "
			     "options must give num_blocks");
		return -EINVAL;
	}
	/* Same default as the core applies when a backend leaves the block size open. */
	if (geo->block_size == 0) {
		geo->block_size = 512;
	}
	if (geo->num_blocks > UINT64_MAX / geo->block_size) {
		scsitgt__log(&rc->log, SCSITGT_LOG_ERROR, "ram",
			     "open: %llu blocks of %u bytes: above 2^64 bytes",
			     (unsigned long long)geo->num_blocks, geo->block_size);
		return -EINVAL;
	}
	if (rc->levels != 0) {
		/* One context serves one LUN. */
		scsitgt__log(&rc->log, SCSITGT_LOG_ERROR, "ram",
			     "open: the context is open already: one context serves one LUN");
		return -EBUSY;
	}
	scsitgt__log(&rc->log, SCSITGT_LOG_INFO, "ram",
		     "open: %llu blocks of %u bytes, memory taken 1 MiB at a time on first write",
		     (unsigned long long)geo->num_blocks, geo->block_size);
	rc->block_size = geo->block_size;
	rc->num_blocks = geo->num_blocks;
	rc->bytes = geo->num_blocks * geo->block_size;
	nchunks = ((rc->bytes - 1) >> RAM_CHUNK_SHIFT) + 1;
	rc->levels = 1;
	while (rc->levels < RAM_MAX_LEVELS &&
	       (nchunks - 1) >> (rc->levels * RAM_FANOUT_SHIFT) != 0) {
		rc->levels++;
	}
	/* SBC-4 §4.7.4.5: unmapped blocks read as zeros; memory does not rotate. */
	geo->flags |= SCSITGT_GEOMETRY_LBPRZ | SCSITGT_GEOMETRY_NON_ROTATIONAL;
	/* Memory is given back in whole chunks only (ram_unmap()). */
	if (geo->size >= offsetof(struct scsitgt_lun_geometry, unmap_granularity_blocks) +
				 sizeof(geo->unmap_granularity_blocks)) {
		geo->unmap_granularity_blocks = (uint32_t)(RAM_CHUNK_SIZE / geo->block_size);
	}
	geo->flags &= ~SCSITGT_GEOMETRY_WRITE_CACHE;
	return 0;
}

static void ram_close(void *bctx, scsitgt_done_cb cb, void *cb_arg)
{
	struct ram_ctx *rc = bctx;

	if (rc->levels) {
		ram_tree_free(rc->root, rc->levels - 1);
	}
	uv_mutex_destroy(&rc->lock);
	free(rc);
	if (cb) {
		cb(cb_arg, 0);
	}
}

static void ram_submit(void *bctx, struct scsitgt_io *io)
{
	struct ram_ctx *rc = bctx;
	uint64_t lba = scsitgt_io_get_lba(io);
	uint32_t nblocks = scsitgt_io_get_num_blocks(io);
	uint64_t off = lba * rc->block_size;
	uint64_t len = (uint64_t)nblocks * rc->block_size;
	enum scsitgt_io_type type = scsitgt_io_get_type(io);
	struct ram_iov_iter it = { 0 };
	uint64_t chunks;
	bool changed;
	int status = 0;

	/* The core checks ranges (SBC-4 LBA OUT OF RANGE); refuse anyway rather than trust it. */
	if (lba > rc->num_blocks || nblocks > rc->num_blocks - lba) {
		scsitgt_io_complete_sense(io, 0x05, 0x21, 0x00);
		return;
	}
	if (type == SCSITGT_IO_READ || type == SCSITGT_IO_WRITE) {
		it.iov = scsitgt_io_get_iov(io, &it.iovcnt);
		if (!ram_iov_covers(it.iov, it.iovcnt, len)) {
			scsitgt_io_complete(io, -EFAULT);
			return;
		}
	}
	ram_lock(rc);
	switch (type) {
	case SCSITGT_IO_READ:
		if (!(scsitgt_io_get_flags(io) & SCSITGT_IO_FLAG_MAY_LEND) ||
		    !ram_lend(rc, io, off, len)) {
			ram_read(rc, off, len, &it);
		}
		break;
	case SCSITGT_IO_WRITE:
		if (len) {
			status = ram_write(rc, off, len, &it);
		}
		break;
	case SCSITGT_IO_FLUSH:
		/* Nothing volatile to flush. */
		break;
	case SCSITGT_IO_UNMAP:
	case SCSITGT_IO_WRITE_ZEROES:
		status = ram_zero(rc, off, len);
		break;
	default:
		status = -ENOTSUP;
		break;
	}
	/* A change of "out of memory" is logged, outside the lock: once, not per io. */
	changed = type != SCSITGT_IO_READ && type != SCSITGT_IO_FLUSH && status != -ENOTSUP &&
		  (status == -ENOSPC) != rc->nospace;
	if (changed) {
		rc->nospace = status == -ENOSPC;
	}
	chunks = rc->chunks;
	ram_unlock(rc);
	if (changed && status == -ENOSPC) {
		scsitgt__log(&rc->log, SCSITGT_LOG_ERROR, "ram",
			     "no memory for %u blocks at LBA %llu (%llu chunks of 1 MiB held): the "
			     "command fails (SPACE ALLOCATION FAILED); logged once until a write "
			     "works again",
			     nblocks, (unsigned long long)lba, (unsigned long long)chunks);
	} else if (changed) {
		scsitgt__log(&rc->log, SCSITGT_LOG_NOTICE, "ram",
			     "writes find memory again (%llu chunks of 1 MiB held)",
			     (unsigned long long)chunks);
	}
	scsitgt_io_complete(io, status);
}

static bool ram_supports(void *bctx, enum scsitgt_io_type type)
{
	(void)bctx;
	switch (type) {
	case SCSITGT_IO_READ:
	case SCSITGT_IO_WRITE:
	case SCSITGT_IO_FLUSH:
	case SCSITGT_IO_UNMAP:
	case SCSITGT_IO_WRITE_ZEROES:
		return true;
	default:
		/* GET LBA STATUS is answered at once from the chunk tree (ram_get_lba_status). */
		return false;
	}
}

/*
 * GET LBA STATUS (SBC-4 §5.17): blocks in an allocated chunk are mapped, the others
 * deallocated. The answer has chunk granularity: a chunk partly unmapped (zeroed) stays
 * mapped until all of it is zero, which SBC-4 §4.7.4.5 allows (an LBA may stay mapped).
 */
static int ram_get_lba_status_locked(const struct ram_ctx *rc, uint64_t lba,
				     uint64_t *num_blocks_out, bool *mapped_out)
{
	uint64_t off, c, end_c, last_c, span = 1;
	bool mapped;

	if (lba >= rc->num_blocks) {
		return -EINVAL;
	}
	off = lba * rc->block_size;
	c = off >> RAM_CHUNK_SHIFT;
	last_c = (rc->bytes - 1) >> RAM_CHUNK_SHIFT;
	mapped = ram_chunk_find_span(rc, c, &span) != NULL;
	/* Extend over the following chunks of the same status. */
	end_c = c + (mapped ? 1 : span);
	while (end_c <= last_c) {
		uint64_t s = 1;
		bool m = ram_chunk_find_span(rc, end_c, &s) != NULL;

		if (m != mapped) {
			break;
		}
		end_c += m ? 1 : s;
	}
	if (end_c > last_c) {
		*num_blocks_out = rc->num_blocks - lba;
	} else {
		*num_blocks_out = ((end_c << RAM_CHUNK_SHIFT) - off) / rc->block_size;
	}
	*mapped_out = mapped;
	return 0;
}

static int ram_get_lba_status(void *bctx, uint64_t lba, uint64_t *num_blocks_out, bool *mapped_out)
{
	struct ram_ctx *rc = bctx;
	int rc_status;

	ram_lock(rc);
	rc_status = ram_get_lba_status_locked(rc, lba, num_blocks_out, mapped_out);
	ram_unlock(rc);
	return rc_status;
}

static const struct scsitgt_backend_ops ram_ops = {
	.size = sizeof(struct scsitgt_backend_ops),
	.name = "ram",
	.io_ctx_size = 0,
	.open = ram_open,
	.close = ram_close,
	.submit = ram_submit,
	.supports = ram_supports,
	.get_lba_status = ram_get_lba_status,
	/* ram_write() allocates every chunk before it copies, all under the LUN's lock: a write
	 * is stored all or none (a process crash loses the whole medium anyway). */
	.flags = SCSITGT_BACKEND_MULTI_LOOP | SCSITGT_BACKEND_ATOMIC_WRITE,
};

SCSITGT_EXPORT const struct scsitgt_backend_ops *scsitgt_backend_ram_ops(void)
{
	return &ram_ops;
}

SCSITGT_EXPORT int scsitgt_backend_ram_create_opts(void **bctx_out,
						   const struct scsitgt_backend_ram_opts *opts)
{
	struct scsitgt__logger lg;
	struct ram_ctx *rc;
	int err = scsitgt__backend_ram_opts(opts, bctx_out, &lg);

	if (err < 0) {
		return err;
	}
	rc = calloc(1, sizeof(*rc));
	if (rc == NULL) {
		return -ENOMEM;
	}
	rc->log = lg;
	if (uv_mutex_init(&rc->lock) < 0) {
		free(rc);
		return -ENOMEM;
	}
	*bctx_out = rc;
	return 0;
}

SCSITGT_EXPORT int scsitgt_backend_ram_create(void **bctx_out)
{
	return scsitgt_backend_ram_create_opts(bctx_out, NULL);
}

void scsitgt__backend_ram_set_max_chunks(void *bctx, uint64_t max_chunks)
{
	((struct ram_ctx *)bctx)->max_chunks = max_chunks;
}

uint64_t scsitgt__backend_ram_chunk_count(const void *bctx)
{
	return ((const struct ram_ctx *)bctx)->chunks;
}

uint64_t scsitgt__backend_ram_node_count(const void *bctx)
{
	return ((const struct ram_ctx *)bctx)->nodes;
}

uint64_t scsitgt__backend_ram_cow_copies(const void *bctx)
{
	return ((const struct ram_ctx *)bctx)->cow_copies;
}

uint64_t scsitgt__backend_ram_chunk_size(void)
{
	return RAM_CHUNK_SIZE;
}
