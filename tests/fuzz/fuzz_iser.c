/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the iSER receive-side parsers (RFC 7145 §9): the iSER header, the CM REQ
 * private data, and the one-PDU-per-SEND span check, on arbitrary SEND payloads; then what the
 * data path derives from a header: the remote addresses of its STags (descriptor mapping) and
 * the receive credits of negotiated values; and the registered pool's allocator driven by the
 * input as a sequence of alloc/free/hold/release operations, with its invariants checked; and
 * the flow state the wire drives (iser_flow.h), against a model: the RDMA READ queue, and the
 * unexpected PDUs we sent as NOP-Out TTTs and ExpStatSNs from the input answer them.
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

#define FLOW_ITEMS 16u

/* The RDMA READ queue against a model: FIFO order, at most depth in flight, counts. */
static void fuzz_rdq(const uint8_t *data, size_t size)
{
	struct scsitgt__iser_rdq q;
	struct scsitgt__iser_rdq_item it[FLOW_ITEMS];
	unsigned int queued[FLOW_ITEMS], nq = 0, busy[FLOW_ITEMS], nb = 0, idle = FLOW_ITEMS;
	unsigned int free_ix[FLOW_ITEMS];

	if (size < 1)
		return;
	for (unsigned int i = 0; i < FLOW_ITEMS; i++)
		free_ix[i] = i;
	scsitgt__iser_rdq_init(&q, data[0] % 6);
	for (size_t i = 1; i < size; i++) {
		uint8_t op = data[i] % 5;

		if (op == 0 && idle) {
			unsigned int k = free_ix[--idle];

			scsitgt__iser_rdq_push(&q, &it[k]);
			queued[nq++] = k;
		} else if (op == 1) {
			struct scsitgt__iser_rdq_item *got = scsitgt__iser_rdq_next(&q);
			bool may = nq && nb < (data[0] % 6 ? data[0] % 6 : 1u);

			if ((got != NULL) != may || (got && got != &it[queued[0]]))
				abort();
			if (got) {
				busy[nb++] = queued[0];
				memmove(queued, queued + 1, --nq * sizeof(queued[0]));
			}
		} else if (op == 2 && nb) {
			/* The newest READ in flight could not be posted: back to the head. */
			memmove(queued + 1, queued, nq++ * sizeof(queued[0]));
			queued[0] = busy[--nb];
			scsitgt__iser_rdq_unget(&q, &it[queued[0]]);
		} else if (op == 3 && nb) {
			scsitgt__iser_rdq_done(&q);
			free_ix[idle++] = busy[--nb];
		} else if (op == 4) {
			unsigned int n = 0;

			for (struct scsitgt__iser_rdq_item *l = scsitgt__iser_rdq_flush(&q); l;
			     l = l->next) {
				if (n >= nq || l != &it[queued[n]])
					abort();
				free_ix[idle++] = queued[n++];
			}
			if (n != nq)
				abort();
			nq = 0;
		}
		if (q.busy != nb || q.queued != nq || q.busy > q.depth)
			abort();
	}
}

/* Unexpected PDUs: at most min(limit, TRACK) outstanding; pongs and acks drop the right ones. */
static void fuzz_unexp(const uint8_t *data, size_t size)
{
	struct scsitgt__iser_unexp u;
	uint32_t limit;

	if (size < 1)
		return;
	limit = data[0] % (SCSITGT__ISER_UNEXP_TRACK + 8);
	scsitgt__iser_unexp_init(&u, limit);
	for (size_t i = 1; i + 2 < size; i += 3) {
		uint32_t v = (uint32_t)data[i + 1] << 24 | (uint32_t)data[i + 2] << 3;
		uint32_t before = u.n, pings = 0, olds = 0;

		for (uint32_t k = 0; k < u.n; k++) {
			pings += u.out[k].ping && u.out[k].value == v;
			olds += !u.out[k].ping && (int32_t)(v - u.out[k].value) > 0;
		}
		switch (data[i] % 3) {
		case 0:
			if (!scsitgt__iser_unexp_can_send(&u))
				break;
			scsitgt__iser_unexp_sent(&u, data[i] & 4, v);
			if (u.n != before + (limit != 0))
				abort();
			break;
		case 1:
			if (scsitgt__iser_unexp_pong(&u, v) != (pings != 0) ||
			    u.n != before - (pings != 0))
				abort();
			break;
		default:
			scsitgt__iser_unexp_ack(&u, v);
			if (u.n != before - olds)
				abort();
			break;
		}
		if (u.n > SCSITGT__ISER_UNEXP_TRACK || (limit && u.n > limit))
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct scsitgt__iser_hdr h;
	struct scsitgt__iser_cm cm;
	uint32_t pad = 0;
	long n;

	fuzz_pool(data, size);
	fuzz_rdq(data, size);
	fuzz_unexp(data, size);
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
