/* SPDX-License-Identifier: MIT */
/*
 * The null backend: any capacity, writes are discarded and reads return zeros. It is the
 * baseline for benchmarks of the command path, so every io completes synchronously from
 * submit() (allowed by backend.h: the core copes with completion from inside submit). Reads
 * the transport may send from any memory lend the process's read-only zero region
 * (zero_region.h) instead of zeroing a buffer.
 *
 * Like every in-tree backend it uses only the public backend.h, proving the host-backend API
 * (plus the library's log helper, for the logger of its options: log_opts.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "backend/log_opts.h"
#include "backend/zero_region.h"
#include "libscsitgt/backend.h"

struct null_ctx {
	uint32_t block_size;
	uint64_t num_blocks;
	struct scsitgt__logger log;
};

static int null_open(void *bctx, struct scsitgt_lun_geometry *geo)
{
	struct null_ctx *nc = bctx;

	/* A null medium has no size of its own: the LUN options must say how big it is. */
	if (geo->num_blocks == 0) {
		scsitgt__log(&nc->log, SCSITGT_LOG_ERROR, "null",
			     "open: num_blocks 0: a null medium has no size of its own, the LUN "
			     "options must give num_blocks");
		return -EINVAL;
	}
	/* Same default as the core applies when a backend leaves the block size open. */
	if (geo->block_size == 0) {
		geo->block_size = 512;
	}
	scsitgt__log(&nc->log, SCSITGT_LOG_INFO, "null", "open: %llu blocks of %u bytes",
		     (unsigned long long)geo->num_blocks, geo->block_size);
	/* SBC-4 §4.7.4.5: unmapped blocks of a medium that stores nothing read as zeros. */
	geo->flags |= SCSITGT_GEOMETRY_LBPRZ | SCSITGT_GEOMETRY_NON_ROTATIONAL;
	geo->flags &= ~SCSITGT_GEOMETRY_WRITE_CACHE;
	nc->block_size = geo->block_size;
	nc->num_blocks = geo->num_blocks;
	return 0;
}

static void null_close(void *bctx, scsitgt_done_cb cb, void *cb_arg)
{
	free(bctx);
	if (cb) {
		cb(cb_arg, 0);
	}
}

/* Zero the first @len bytes described by @iov (a READ's data). */
static void null_zero_iov(const struct iovec *iov, int iovcnt, uint64_t len)
{
	for (int i = 0; i < iovcnt && len; i++) {
		size_t n = iov[i].iov_len < len ? iov[i].iov_len : (size_t)len;

		memset(iov[i].iov_base, 0, n);
		len -= n;
	}
}

static void null_submit(void *bctx, struct scsitgt_io *io)
{
	const struct null_ctx *nc = bctx;
	uint64_t lba = scsitgt_io_get_lba(io);
	uint32_t nblocks = scsitgt_io_get_num_blocks(io);
	const struct iovec *iov;
	const void *zeros;
	uint64_t len;
	int iovcnt;

	/* The core checks ranges (SBC-4 LBA OUT OF RANGE); refuse anyway rather than trust it. */
	if (lba > nc->num_blocks || nblocks > nc->num_blocks - lba) {
		scsitgt_io_complete_sense(io, 0x05, 0x21, 0x00);
		return;
	}
	switch (scsitgt_io_get_type(io)) {
	case SCSITGT_IO_READ:
		len = (uint64_t)nblocks * nc->block_size;
		/* Lend the shared zero region when the transport sends from any memory: no
		 * memset per read, and the data never changes, so nothing to release. */
		zeros = (scsitgt_io_get_flags(io) & SCSITGT_IO_FLAG_MAY_LEND) ?
				scsitgt__zero_region((size_t)len) :
				NULL;
		if (zeros == NULL || scsitgt_io_lend_data(io, zeros, (size_t)len, NULL, NULL) < 0) {
			iov = scsitgt_io_get_iov(io, &iovcnt);
			null_zero_iov(iov, iovcnt, len);
		}
		scsitgt_io_complete(io, 0);
		break;
	case SCSITGT_IO_WRITE:
	case SCSITGT_IO_FLUSH:
	case SCSITGT_IO_UNMAP:
	case SCSITGT_IO_WRITE_ZEROES:
		scsitgt_io_complete(io, 0);
		break;
	default:
		scsitgt_io_complete(io, -ENOTSUP);
		break;
	}
}

static bool null_supports(void *bctx, enum scsitgt_io_type type)
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
		return false;
	}
}

/* GET LBA STATUS: nothing is ever stored, and every block reads as zeros (LBPRZ), so on a
 * thin LUN every block is honestly deallocated. (Fully provisioned LUNs never ask.) */
static int null_get_lba_status(void *bctx, uint64_t lba, uint64_t *num_blocks_out, bool *mapped_out)
{
	const struct null_ctx *nc = bctx;

	if (lba >= nc->num_blocks) {
		return -EINVAL;
	}
	*num_blocks_out = nc->num_blocks - lba;
	*mapped_out = false;
	return 0;
}

static const struct scsitgt_backend_ops null_ops = {
	.size = sizeof(struct scsitgt_backend_ops),
	.name = "null",
	.io_ctx_size = 0,
	.open = null_open,
	.close = null_close,
	.submit = null_submit,
	.supports = null_supports,
	.get_lba_status = null_get_lba_status,
	/* Its context is read-only after open(): any loop may submit at once. Nothing is stored,
	 * so a write is trivially all or none (WRITE ATOMIC (16) is offered). */
	.flags = SCSITGT_BACKEND_MULTI_LOOP | SCSITGT_BACKEND_ATOMIC_WRITE,
};

SCSITGT_EXPORT const struct scsitgt_backend_ops *scsitgt_backend_null_ops(void)
{
	return &null_ops;
}

SCSITGT_EXPORT int scsitgt_backend_null_create_opts(void **bctx_out,
						    const struct scsitgt_backend_null_opts *opts)
{
	struct scsitgt__logger lg;
	struct null_ctx *nc;
	int rc = scsitgt__backend_null_opts(opts, bctx_out, &lg);

	if (rc < 0) {
		return rc;
	}
	nc = calloc(1, sizeof(*nc));
	if (nc == NULL) {
		return -ENOMEM;
	}
	nc->log = lg;
	*bctx_out = nc;
	return 0;
}

SCSITGT_EXPORT int scsitgt_backend_null_create(void **bctx_out)
{
	return scsitgt_backend_null_create_opts(bctx_out, NULL);
}
