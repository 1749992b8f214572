/* SPDX-License-Identifier: MIT */
/*
 * iSER descriptor-to-SGE mapping, pure (no verbs) so it is unit tested everywhere. The
 * initiator describes a command's buffers by STag and base offset in the iSER header
 * (RFC 7145 §9.2); the target addresses them by RDMA WRITE (Data-In, §7.3.5) and RDMA READ
 * (solicited Data-Out, §7.3.6) at base + buffer offset. Each transfer becomes work requests
 * with one local SGE each: pieces contiguous on both sides merge, and no request exceeds the
 * device's largest message.
 */
#ifndef SCSITGT_ISER_MAP_H
#define SCSITGT_ISER_MAP_H

#include <stdint.h>

/* One RDMA work request: @len bytes between local (addr, lkey) and remote (addr, rkey). */
struct scsitgt__iser_seg {
	uint64_t laddr;
	uint32_t lkey;
	uint32_t len;
	uint64_t raddr;
	uint32_t rkey;
};

/*
 * The remote address of @len bytes at buffer offset @offset of a buffer advertised at @va,
 * where @va stands for buffer offset @base (0 for the Read STag; for the Write STag, Linux
 * ib_iser advertises the address of the first solicited byte, so @base is the offset the
 * first R2T asked for). Returns 0; -EPROTO when @offset < @base; -EOVERFLOW when the range
 * wraps the 64-bit address space.
 */
int scsitgt__iser_map_remote(uint64_t va, uint32_t base, uint32_t offset, uint32_t len,
			     uint64_t *raddr);

/*
 * Turn @n pieces (in order) into work requests in @out (room for @cap): a piece continuing the
 * previous one locally and remotely, with the same keys, extends it; no request is longer
 * than @max_len (0: no limit) and empty pieces vanish. Returns the number of requests, or
 * -ENOSPC when @cap is too small (nothing in @out is then meaningful).
 */
int scsitgt__iser_map_coalesce(const struct scsitgt__iser_seg *in, unsigned int n, uint32_t max_len,
			       struct scsitgt__iser_seg *out, unsigned int cap);

#endif /* SCSITGT_ISER_MAP_H */
