/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the iSER receive-side parsers (RFC 7145 §9): the iSER header, the CM REQ
 * private data, and the one-PDU-per-SEND span check, on arbitrary SEND payloads; then what the
 * data path derives from a header: the remote addresses of its STags (descriptor mapping) and
 * the receive credits of negotiated values; and the registered pool's allocator driven by the
 * input as a sequence of alloc/free/hold/release operations, with its invariants checked.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "transport/iser/iser_flow.h"
#include "transport/iser/iser_map.h"
#include "transport/iser/iser_proto.h"
#include "transport/rdma/bufpool.h"
#include "util/be.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define POOL_UNITS 64u
#define POOL_SHIFT 9u

static void fuzz_pool(const uint8_t *data, size_t size)
{
	static uint8_t mem[POOL_UNITS << POOL_SHIFT];
	struct scsitgt__bufpool bp;
	void *live[32];
	size_t caps[32];
	unsigned int n = 0;

	if (scsitgt__bufpool_init(&bp, mem, sizeof(mem), POOL_SHIFT, 5) != 0)
		abort();
	for (size_t i = 0; i + 1 < size; i += 2) {
		uint8_t op = data[i] & 3, arg = data[i + 1];

		if (op == 0 && n < 32) {
			size_t cap = 0, want = (size_t)arg * 97u;
			void *p = scsitgt__bufpool_alloc(&bp, want, &cap);

			if (p) {
				if (cap < want || (uint8_t *)p + cap > mem + sizeof(mem))
					abort();
				if (!scsitgt__bufpool_owns(&bp, p, cap))
					abort();
				memset(p, arg, cap);
				live[n] = p;
				caps[n++] = cap;
			}
		} else if (op == 1 && n) {
			unsigned int k = arg % n;

			if (scsitgt__bufpool_free(&bp, live[k]) != 0)
				abort();
			live[k] = live[--n];
			caps[k] = caps[n];
		} else if (op == 2 && n) {
			unsigned int k = arg % n;

			/* Hold and release at once: the block must stay the caller's. */
			if (scsitgt__bufpool_hold(&bp, (uint8_t *)live[k] + (arg % caps[k])) != 0)
				abort();
			scsitgt__bufpool_release(&bp, (uint8_t *)live[k] + (arg % caps[k]));
			if (!scsitgt__bufpool_owns(&bp, live[k], caps[k]))
				abort();
		} else if (op == 3) {
			/* Foreign or interior addresses are refused, never corrupt the pool. */
			(void)scsitgt__bufpool_free(&bp, mem + ((size_t)arg << 3));
			n = 0; /* what was live may have been freed just now: forget it */
			break;
		}
	}
	{
		size_t used = 0;

		for (unsigned int k = 0; k < n; k++)
			used += caps[k];
		if (bp.pending_blocks || bp.bytes_free + used > sizeof(mem))
			abort();
	}
	scsitgt__bufpool_fini(&bp);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct scsitgt__iser_hdr h;
	struct scsitgt__iser_cm cm;
	uint32_t pad = 0;
	long n;

	fuzz_pool(data, size);
	if (scsitgt__iser_cm_req_decode(data, size, &cm) == 0 && size >= SCSITGT__ISER_CM_LEN &&
	    !cm.given)
		abort();
	if (scsitgt__iser_hdr_decode(data, size, &h) != 0)
		return 0;
	if (h.opcode != SCSITGT__ISER_OP_ISCSI)
		return 0;
	n = scsitgt__iser_pdu_span(data + SCSITGT__ISER_HDR_LEN, size - SCSITGT__ISER_HDR_LEN,
				   &pad);
	/* A span never exceeds what was received, and a pad is only owed when none was sent. */
	if (n >= 0 && ((size_t)n > size - SCSITGT__ISER_HDR_LEN || pad > 3 ||
		       (pad && (size_t)n != size - SCSITGT__ISER_HDR_LEN)))
		abort();
	if (size >= SCSITGT__ISER_HDR_LEN + 48 + 8) {
		/* The BHS's buffer offset and length against the advertised STags. */
		const uint8_t *b = data + SCSITGT__ISER_HDR_LEN;
		uint32_t off = get_be32(&b[40]), len = get_be32(&b[44]), base = get_be32(&b[48]);
		uint64_t r;
		struct scsitgt__iser_seg in[2], out[8];
		struct scsitgt__iser_credit_params cp;

		if (scsitgt__iser_map_remote(h.write_va, base, off, len, &r) == 0 &&
		    (off < base || r < h.write_va || r + len < r))
			abort();
		memset(in, 0, sizeof(in));
		in[0].laddr = h.read_va;
		in[0].len = len;
		in[0].raddr = h.write_va;
		in[1].laddr = h.read_va + len;
		in[1].len = off;
		in[1].raddr = h.write_va + len;
		{
			int k = scsitgt__iser_map_coalesce(in, 2, base | 1u, out, 8);
			uint64_t total = 0;

			for (int i = 0; i < k; i++) {
				if (out[i].len == 0 || out[i].len > (base | 1u))
					abort();
				total += out[i].len;
			}
			if (k >= 0 && total != (uint64_t)len + off)
				abort();
		}
		memset(&cp, 0, sizeof(cp));
		cp.queue_depth = h.read_stag;
		cp.recv_dsl = len;
		cp.first_burst = off;
		cp.initial_r2t = b[1] & 1;
		cp.unexpected = base;
		{
			uint32_t w = scsitgt__iser_credit_window(&cp, h.write_stag);

			if (w == 0 || (cp.queue_depth && w > cp.queue_depth && w != 1))
				abort();
			(void)scsitgt__iser_credit_recvs(&cp);
		}
	}
	return 0;
}
