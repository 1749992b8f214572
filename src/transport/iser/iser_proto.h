/* SPDX-License-Identifier: MIT */
/*
 * iSER wire formats (RFC 7145), pure codecs without RDMA dependencies so that unit tests and
 * the fuzz target build everywhere:
 *  - the iSER header in front of every iSCSI PDU carried in an RDMA SEND (§9.2);
 *  - the iSER Hello / HelloReply messages (§9.3, §9.4), recognised and refused;
 *  - the iSER CM REQ / REP private data exchanged in the RDMA/CM connection setup (§9.1).
 */
#ifndef SCSITGT_ISER_PROTO_H
#define SCSITGT_ISER_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* RFC 7145 §9.2: 28 bytes: flags, 3 reserved, Write STag, Write Base Offset (8), Read STag,
 * Read Base Offset (8). */
#define SCSITGT__ISER_HDR_LEN 28u
/* RFC 7145 §9.1: both CM messages are 4 bytes of flags and reserved bits. */
#define SCSITGT__ISER_CM_LEN 4u

/* High nibble of byte 0 (RFC 7145 §9.2, §9.3, §9.4). */
#define SCSITGT__ISER_OP_ISCSI 0x1u
#define SCSITGT__ISER_OP_HELLO 0x2u
#define SCSITGT__ISER_OP_HELLO_REPLY 0x3u
/* Low nibble of byte 0 for iSCSI control-type PDUs. */
/* Named by SCSI direction: the Write STag is the buffer of a SCSI write (the target RDMA
 * READs it), the Read STag the buffer of a SCSI read (the target RDMA WRITEs into it). */
#define SCSITGT__ISER_FLAG_WSV 0x08u /* Write STag and Base Offset valid */
#define SCSITGT__ISER_FLAG_RSV 0x04u /* Read STag and Base Offset valid */

/* CM REQ (RFC 7145 §9.1.1): ZBVA not supported / Send with Invalidate not supported. */
#define SCSITGT__ISER_CM_ZBVA_NOT_SUP 0x80u
#define SCSITGT__ISER_CM_SIE_NOT_SUP 0x40u

struct scsitgt__iser_hdr {
	uint8_t opcode; /* SCSITGT__ISER_OP_* */
	bool wsv;
	bool rsv;
	uint32_t write_stag;
	uint64_t write_va;
	uint32_t read_stag;
	uint64_t read_va;
	/* Hello / HelloReply only. */
	uint8_t max_ver;
	uint8_t min_ver; /* Hello: MinVer; HelloReply: CurVer */
	bool reject;	 /* HelloReply R bit */
	uint16_t ird;	 /* Hello: IRD; HelloReply: ORD */
};

/*
 * Decode the header at the start of a received SEND of @len bytes. Returns 0; -EMSGSIZE when
 * @len is shorter than the header; -EPROTO for an unknown opcode, reserved bits set, or a
 * version other than 1 in an iSCSI control-type header.
 */
int scsitgt__iser_hdr_decode(const uint8_t *buf, size_t len, struct scsitgt__iser_hdr *out);
/* Encode a header for a target SEND (opcode iSCSI control-type, STags only when flagged). */
void scsitgt__iser_hdr_encode(uint8_t buf[SCSITGT__ISER_HDR_LEN],
			      const struct scsitgt__iser_hdr *h);

struct scsitgt__iser_cm {
	bool zbva_not_sup; /* REQ: initiator cannot use zero-based VAs */
	bool sie_not_sup;  /* REQ: initiator does not accept Send with Invalidate */
	bool given;	   /* private data was present */
};

/*
 * Decode the iSER CM REQ private data of a connect request (RFC 7145 §9.1.1). A request
 * without private data is accepted with defaults (older initiators); a non-empty one shorter
 * than 4 bytes is -EMSGSIZE. Reserved bits are ignored as the RFC requires.
 */
int scsitgt__iser_cm_req_decode(const uint8_t *buf, size_t len, struct scsitgt__iser_cm *out);
/*
 * Encode the CM REP private data (RFC 7145 §9.1.2): we never use zero-based VAs nor Send with
 * Invalidate, so both "not used" flags are set.
 */
void scsitgt__iser_cm_rep_encode(uint8_t buf[SCSITGT__ISER_CM_LEN]);

/*
 * Check that a SEND payload (after the iSER header) holds exactly one iSCSI PDU: BHS, AHS and
 * a data segment, with or without its pad (RFC 7145 §7.3.3 leaves padding optional in
 * practice: Linux ib_iser sends none). Returns the bytes of @pdu to feed to the iSCSI
 * receiver (the pad included when it was sent), sets *pad_missing to the pad bytes the
 * receiver still expects (when it was not), or -EMSGSIZE / -EPROTO.
 */
long scsitgt__iser_pdu_span(const uint8_t *pdu, size_t len, uint32_t *pad_missing);

#endif /* SCSITGT_ISER_PROTO_H */
