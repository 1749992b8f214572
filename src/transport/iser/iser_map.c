/* SPDX-License-Identifier: MIT */
/* iSER descriptor-to-SGE mapping. See iser_map.h. */
#include <errno.h>
#include <stddef.h>

#include "transport/iser/iser_map.h"

int scsitgt__iser_map_remote(uint64_t va, uint32_t base, uint32_t offset, uint32_t len,
			     uint64_t *raddr)
{
	uint64_t rel;

	if (offset < base)
		return -EPROTO;
	rel = (uint64_t)(offset - base);
	/* RFC 7145 §9.2: base offsets are 64-bit; the range must not wrap. */
	if (va > UINT64_MAX - rel || va + rel > UINT64_MAX - len)
		return -EOVERFLOW;
	*raddr = va + rel;
	return 0;
}

int scsitgt__iser_map_coalesce(const struct scsitgt__iser_seg *in, unsigned int n, uint32_t max_len,
			       struct scsitgt__iser_seg *out, unsigned int cap)
{
	unsigned int k = 0;

	if (max_len == 0)
		max_len = UINT32_MAX;
	for (unsigned int i = 0; i < n; i++) {
		struct scsitgt__iser_seg s = in[i];

		while (s.len) {
			struct scsitgt__iser_seg *prev = k ? &out[k - 1] : NULL;
			uint32_t room, take;

			if (prev && prev->lkey == s.lkey && prev->rkey == s.rkey &&
			    prev->laddr + prev->len == s.laddr &&
			    prev->raddr + prev->len == s.raddr && prev->len < max_len) {
				room = max_len - prev->len;
				take = s.len < room ? s.len : room;
				prev->len += take;
			} else {
				if (k == cap)
					return -ENOSPC;
				take = s.len < max_len ? s.len : max_len;
				out[k] = s;
				out[k].len = take;
				k++;
			}
			s.laddr += take;
			s.raddr += take;
			s.len -= take;
		}
	}
	return (int)k;
}
