/* SPDX-License-Identifier: MIT */
/*
 * iSCSI PDU codec (RFC 7143 §11): BHS field access, RFC 1982 serial number arithmetic, the
 * receive state machine that cuts a byte stream into PDUs (BHS, AHS, header digest, data
 * segment, pad, data digest), and the transmit batch that gathers PDUs for one writev.
 *
 * Everything here is pure: no libuv, no sockets. The receive machine is fed bytes (any split)
 * and calls back once per header and once per complete PDU; it never allocates more than the
 * DataSegmentLength limit its owner set.
 */
#ifndef SCSITGT_ISCSI_PDU_H
#define SCSITGT_ISCSI_PDU_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "transport/iscsi/iscsi_spec.h"
#include "util/be.h"

_Static_assert(ISCSI_BHS_LEN == 48, "RFC 7143 §11.2.1: BHS is 48 bytes");

/* RFC 1982 serial number arithmetic on 32-bit sequence numbers (RFC 7143 §4.2.2.1). */
static inline bool scsitgt__sn_lt(uint32_t a, uint32_t b)
{
	return a != b && (uint32_t)(b - a) < 0x80000000u;
}

static inline bool scsitgt__sn_gt(uint32_t a, uint32_t b)
{
	return a != b && (uint32_t)(a - b) < 0x80000000u;
}

static inline bool scsitgt__sn_le(uint32_t a, uint32_t b)
{
	return a == b || scsitgt__sn_lt(a, b);
}

static inline bool scsitgt__sn_ge(uint32_t a, uint32_t b)
{
	return a == b || scsitgt__sn_gt(a, b);
}

/* Bytes of padding after a data segment of @len bytes (RFC 7143 §11.1: 4-byte alignment). */
static inline uint32_t scsitgt__iscsi_pad(uint32_t len)
{
	return (4 - (len & 3)) & 3;
}

static inline uint8_t scsitgt__bhs_opcode(const uint8_t *bhs)
{
	return bhs[ISCSI_BHS_OPCODE] & ISCSI_OPCODE_MASK;
}

static inline bool scsitgt__bhs_immediate(const uint8_t *bhs)
{
	return (bhs[ISCSI_BHS_OPCODE] & ISCSI_FLAG_IMMEDIATE) != 0;
}

static inline uint32_t scsitgt__bhs_dsl(const uint8_t *bhs)
{
	return get_be24(&bhs[ISCSI_BHS_DSL]);
}

static inline uint32_t scsitgt__bhs_itt(const uint8_t *bhs)
{
	return get_be32(&bhs[ISCSI_BHS_ITT]);
}

/* Zero a BHS and set its opcode and flags byte. */
void scsitgt__bhs_init(uint8_t *bhs, uint8_t opcode, uint8_t flags);
/* Set DataSegmentLength (24 bits, RFC 7143 §11.2.1.5). */
void scsitgt__bhs_set_dsl(uint8_t *bhs, uint32_t len);
/* Name of an opcode for logs ("SCSI Command", ...); "unknown" for others. */
const char *scsitgt__iscsi_opcode_name(uint8_t opcode);
/* Whether @opcode is one an initiator may send (RFC 7143 §11.2.1.2). */
bool scsitgt__iscsi_opcode_is_initiator(uint8_t opcode);

/* One received PDU. */
struct scsitgt__iscsi_pdu {
	uint8_t bhs[ISCSI_BHS_LEN];
	uint8_t ahs[ISCSI_AHS_MAX];
	uint32_t ahs_len;  /* TotalAHSLength * 4 */
	uint32_t data_len; /* DataSegmentLength */
	/*
	 * Where the data segment goes, chosen by the header callback: NULL (the default) keeps
	 * it in the receiver's own buffer; otherwise the first dest_len bytes go to dest and the
	 * rest is dropped. With discard set, all of it is dropped (still digest-checked).
	 */
	uint8_t *dest;
	uint32_t dest_len;
	bool discard;
	/* After receipt: the data (dest, the receiver's buffer, or NULL when discarded). */
	const uint8_t *data;
};

struct scsitgt__iscsi_rx_ops {
	/*
	 * The header (BHS and AHS, header digest checked) is complete. May set pdu->dest,
	 * dest_len or discard. Return 0, or a negative errno to stop the stream.
	 */
	int (*header)(void *arg, struct scsitgt__iscsi_pdu *pdu);
	/* The whole PDU arrived (data digest checked). Return 0 or a negative errno. */
	int (*pdu)(void *arg, struct scsitgt__iscsi_pdu *pdu);
};

enum scsitgt__iscsi_rx_state {
	SCSITGT__RX_BHS,
	SCSITGT__RX_AHS,
	SCSITGT__RX_HDIGEST,
	SCSITGT__RX_DATA,
	SCSITGT__RX_PAD,
	SCSITGT__RX_DDIGEST,
};

/* Errors of the receiver (negative errno values). */
#define SCSITGT__RX_EHDIGEST (-EBADMSG) /* header digest mismatch */
#define SCSITGT__RX_EDDIGEST (-EILSEQ)	/* data digest mismatch; pdu.bhs names the PDU */
#define SCSITGT__RX_ETOOBIG (-EMSGSIZE) /* DataSegmentLength above the limit */

struct scsitgt__iscsi_rx {
	const struct scsitgt__iscsi_rx_ops *ops;
	void *arg;
	enum scsitgt__iscsi_rx_state state;
	uint32_t got; /* bytes of the current part received */
	struct scsitgt__iscsi_pdu pdu;
	bool header_digest;
	bool data_digest;
	/* Largest DataSegmentLength accepted (our MaxRecvDataSegmentLength). */
	uint32_t max_dsl;
	uint8_t *buf; /* own data buffer, grown up to max_dsl */
	uint32_t buf_cap;
	uint32_t crc;
	uint8_t digest[ISCSI_DIGEST_LEN];
	/* Sticky error: once set, feed() refuses more input. */
	int error;
	/* Set by the owner (from a callback) to stop feeding, e.g. when closing. */
	bool stop;
	/* Statistics. */
	uint64_t pdus;
};

void scsitgt__iscsi_rx_init(struct scsitgt__iscsi_rx *rx, const struct scsitgt__iscsi_rx_ops *ops,
			    void *arg, uint32_t max_dsl);
void scsitgt__iscsi_rx_destroy(struct scsitgt__iscsi_rx *rx);
/*
 * Feed received bytes. Returns the number of bytes consumed (all of them unless stopped or
 * failed) or a negative errno (the sticky error: header/data digest mismatch, segment too
 * long, or a callback's error).
 */
ssize_t scsitgt__iscsi_rx_feed(struct scsitgt__iscsi_rx *rx, const uint8_t *data, size_t len);
/*
 * Zero-copy receive: when the machine is inside a data segment bound for a caller buffer,
 * return how many of the next bytes may be read straight to *dst (0 otherwise). After reading
 * n of them there, call scsitgt__iscsi_rx_direct_done(rx, n).
 */
size_t scsitgt__iscsi_rx_direct(const struct scsitgt__iscsi_rx *rx, uint8_t **dst);
int scsitgt__iscsi_rx_direct_done(struct scsitgt__iscsi_rx *rx, size_t n);
/*
 * The data segment being received has nowhere to go any more (the task it was for ended
 * between two reads): the rest of it is read, digest-checked and dropped, and the PDU is
 * delivered with discard set. A later scsitgt__iscsi_rx_direct() hands out no pointer.
 */
void scsitgt__iscsi_rx_drop_data(struct scsitgt__iscsi_rx *rx);
/*
 * For a receiver that reads through a buffer of its own and then feeds it: the most bytes its
 * next read should take so that the read ends with the current PDU's header, or 0 for no
 * limit. Not 0 while a header is being received whose data segment is at least @big bytes
 * long and goes to a caller buffer, so that the data can then be read straight there
 * (scsitgt__iscsi_rx_direct) instead of landing in the read buffer and being copied. Before
 * the BHS is complete the segment's length is not known yet: then the previous PDU decides
 * (one that was big and went to a caller buffer predicts that the next one is, as in a
 * stream of Data-Out PDUs or of large writes), at the cost of one short read when it was not.
 */
size_t scsitgt__iscsi_rx_header_window(const struct scsitgt__iscsi_rx *rx, uint32_t big);

/*
 * A transmit batch: up to @cap PDUs written together in order. Each PDU is a header (BHS plus
 * header digest), an optional data segment (borrowed; must stay valid until done), and a tail
 * (pad plus data digest). scsitgt__iscsi_tx_seal() computes lengths and digests.
 */
struct scsitgt__iscsi_tx_pdu {
	uint8_t hdr[ISCSI_BHS_LEN + ISCSI_DIGEST_LEN];
	uint8_t tail[3 + ISCSI_DIGEST_LEN];
	const uint8_t *data;
	uint32_t len;
};

struct scsitgt__iscsi_tx;
typedef void (*scsitgt__iscsi_tx_done_fn)(struct scsitgt__iscsi_tx *tx, int status);

struct scsitgt__iscsi_tx {
	scsitgt__iscsi_tx_done_fn done; /* optional; called once written or dropped */
	void *arg;
	void *owned;	  /* freed with the batch (e.g. a copy of response data) */
	bool close_after; /* close the connection once written */
	unsigned int npdus;
	unsigned int cap;
	struct iovec *iov; /* 3 * cap entries, filled by seal */
	int iovcnt;
	size_t bytes;
	/* Owned by the data mover between xmit and done (its output queue). */
	struct scsitgt__iscsi_tx *next;
	struct scsitgt__iscsi_tx_pdu pdus[];
};

struct scsitgt__iscsi_tx *scsitgt__iscsi_tx_create(unsigned int cap);
void scsitgt__iscsi_tx_destroy(struct scsitgt__iscsi_tx *tx);
/* Add a PDU; returns its zeroed BHS to fill, or NULL when the batch is full. */
uint8_t *scsitgt__iscsi_tx_add(struct scsitgt__iscsi_tx *tx, const void *data, uint32_t len);
/* Set DataSegmentLength fields, pads and digests, and build the iovec list. */
void scsitgt__iscsi_tx_seal(struct scsitgt__iscsi_tx *tx, bool header_digest, bool data_digest);

#endif /* SCSITGT_ISCSI_PDU_H */
