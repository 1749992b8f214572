/* SPDX-License-Identifier: MIT */
/*
 * Third-party copy, the LID1 commands VMware VAAI "XCOPY" sends (SPC-4 r37 §6.4 EXTENDED
 * COPY(LID1), RECEIVE COPY STATUS(LID1), RECEIVE COPY OPERATING PARAMETERS, RECEIVE COPY
 * FAILURE DETAILS(LID1)); the copy manager is the LUN the command is addressed to, and its
 * copy source and destination devices (CSCDs) are LUNs of the same target named by their
 * device identification designators.
 *
 *   xcopy_parse.c    the parameter list parser (pure, fuzzable)
 *   xcopy.c          EXTENDED COPY: resolving CSCDs, the copy itself, its sense data
 *   xcopy_results.c  RECEIVE COPY RESULTS, the per-I_T-nexus list identifier table, VPD 8Fh
 */
#ifndef SCSITGT_CORE_XCOPY_H
#define SCSITGT_CORE_XCOPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cmd.h"
#include "core/spc.h"
#include "core/scsi_spec.h"

/* Limits, reported by RECEIVE COPY OPERATING PARAMETERS and VPD 8Fh. */
#define SCSITGT__XCOPY_MAX_CSCD 16u
#define SCSITGT__XCOPY_MAX_SEGS 64u
/* The identification descriptor (E4h) is 32 bytes, the block to block segment (02h) 28. */
#define SCSITGT__XCOPY_CSCD_LEN 32u
#define SCSITGT__XCOPY_SEG_B2B_LEN 28u
#define SCSITGT__XCOPY_HDR_LEN 16u
/* MAXIMUM DESCRIPTOR LIST LENGTH: exactly the largest list of supported descriptors. */
#define SCSITGT__XCOPY_MAX_DESC_LIST                         \
	(SCSITGT__XCOPY_MAX_CSCD * SCSITGT__XCOPY_CSCD_LEN + \
	 SCSITGT__XCOPY_MAX_SEGS * SCSITGT__XCOPY_SEG_B2B_LEN)
/* The largest parameter list taken in (no inline data is supported). */
#define SCSITGT__XCOPY_MAX_PARAM (SCSITGT__XCOPY_HDR_LEN + SCSITGT__XCOPY_MAX_DESC_LIST)
/* MAXIMUM SEGMENT LENGTH (RECEIVE COPY OPERATING PARAMETERS, VPD 8Fh) of a LUN of @bs-byte
 * blocks: a block to block segment's NUMBER OF BLOCKS is 16 bits, so it moves at most 65535
 * of the LUN's blocks (reviewj J8: not 65535 4096-byte blocks on a 512-byte LUN). Segments
 * are copied in pieces. */
#define SCSITGT__XCOPY_MAX_SEG_BYTES(bs) (0xffffu * (uint32_t)(bs))
/* Copies one I_T nexus may have in progress (TOTAL/MAXIMUM CONCURRENT COPIES), and list
 * identifiers whose status it keeps, in progress or done (the table's bound). */
#define SCSITGT__XCOPY_MAX_ACTIVE 8u
#define SCSITGT__XCOPY_MAX_LISTS 32u
/* The bounded piece of one read and one write of a copy. */
#define SCSITGT__XCOPY_CHUNK_BYTES (1u << 20)

/* An identification descriptor CSCD (SPC-4 §6.4, identification descriptor): a designation
 * descriptor naming a LU. */
struct scsitgt__xcopy_cscd {
	uint8_t type;
	uint8_t pdt; /* PERIPHERAL DEVICE TYPE */
	uint8_t code_set;
	uint8_t desig_type;
	uint8_t desig_len; /* at most 20 */
	uint8_t desig[20];
	uint32_t block_len; /* DISK BLOCK LENGTH (block device type specific parameters) */
	uint16_t offset;    /* of the descriptor in the parameter list */
};

/* A block device to block device segment (SPC-4 §6.4, descriptor 02h). */
struct scsitgt__xcopy_seg {
	uint8_t type;
	bool dc; /* NUMBER OF BLOCKS counts destination blocks */
	uint16_t src;
	uint16_t dst;
	uint16_t nblocks;
	uint64_t src_lba;
	uint64_t dst_lba;
	uint16_t offset; /* of the descriptor in the parameter list */
};

struct scsitgt__xcopy_list {
	uint8_t list_id;
	uint8_t list_id_usage;
	bool str;
	uint8_t priority;
	uint16_t ncscd;
	uint16_t nseg;
	struct scsitgt__xcopy_cscd cscd[SCSITGT__XCOPY_MAX_CSCD];
	struct scsitgt__xcopy_seg seg[SCSITGT__XCOPY_MAX_SEGS];
};

/* Why a parameter list was refused: ILLEGAL REQUEST with this ASC/ASCQ, and a field pointer
 * into the parameter list when sks_valid. */
struct scsitgt__xcopy_err {
	uint8_t asc;
	uint8_t ascq;
	bool sks_valid;
	uint16_t field;
	int8_t bit; /* -1: no bit pointer */
};

/*
 * Parse an EXTENDED COPY(LID1) parameter list of @len bytes (at least 1). Returns true with
 * @out filled, or false with @err (sense key ILLEGAL REQUEST). Pure: no allocation, no state.
 */
bool scsitgt__xcopy_parse(const uint8_t *buf, size_t len, struct scsitgt__xcopy_list *out,
			  struct scsitgt__xcopy_err *err);

/* xcopy.c: the commands of the CDB table. */
enum scsitgt__sense_reason scsitgt__xcopy_parse_cdb(struct scsitgt__cmd *cmd);
void scsitgt__xcopy_exec(struct scsitgt__cmd *cmd);

/*
 * xcopy_results.c: the list identifier table of an I_T nexus (SPC-4 §6.4, the LIST IDENTIFIER
 * field). An entry is taken when a copy starts and records its outcome when it ends.
 */
struct scsitgt__xcopy_entry;
/*
 * Begin copy @list_id on @cmd's nexus and LUN (tracked: LIST ID USAGE 00b or 10b; untracked
 * copies only count against the concurrency limit). On success the entry is stored in *@slot,
 * which the table clears if the nexus goes away first. Returns false with ILLEGAL REQUEST
 * @asc/@ascq (OPERATION IN PROGRESS: a copy with that list identifier runs; INSUFFICIENT
 * RESOURCES: too many copies in progress), or with *@busy set (no memory).
 */
bool scsitgt__xcopy_entry_begin(struct scsitgt__cmd *cmd, uint8_t list_id, bool tracked,
				struct scsitgt__xcopy_entry **slot, uint8_t *asc, uint8_t *ascq,
				bool *busy);
/* The copy ended: record status, sense, progress (NULL @e is a no-op). */
void scsitgt__xcopy_entry_end(struct scsitgt__xcopy_entry *e, uint8_t status, const uint8_t *sense,
			      size_t sense_len, uint16_t segs, uint64_t bytes);
/* Progress of a running copy, for COPY STATUS. */
void scsitgt__xcopy_entry_progress(struct scsitgt__xcopy_entry *e, uint16_t segs, uint64_t bytes);
/* The nexus ended: forget its lists (copies still running keep going without an entry). */
void scsitgt__xcopy_session_gone(struct scsitgt__session *sess);

enum scsitgt__sense_reason scsitgt__xcopy_parse_rcr(struct scsitgt__cmd *cmd);
void scsitgt__xcopy_rcr(struct scsitgt__cmd *cmd);

/* The Third-party Copy VPD page (SPC-5 §7.7.17) into @buf (SCSITGT__VPD_MAX bytes). */
size_t scsitgt__xcopy_vpd(const struct scsitgt__cmd *cmd, uint8_t *buf);

#endif /* SCSITGT_CORE_XCOPY_H */
