/* SPDX-License-Identifier: MIT */
/*
 * The CDB table: one row per operation code (and service action), with the facts needed to
 * check, dispatch and report the command. Dispatch is two-phase: parse checks the fields, sets
 * the transfer and picks the exec function; exec runs once the data is in.
 */
#ifndef SCSITGT_CORE_CDB_H
#define SCSITGT_CORE_CDB_H

#include <stdbool.h>
#include <stdint.h>

#include "core/cmd.h"
#include "core/sense.h"

/* Row flags. */
enum {
	/* Runs on a LUN that does not exist (INQUIRY, REPORT LUNS, REQUEST SENSE). */
	SCSITGT__CDB_F_NO_LUN = 1u << 0,
	/* Not refused by a pending unit attention (SPC-5 §5.14 / SAM-5 §5.14). */
	SCSITGT__CDB_F_ALLOW_UA = 1u << 1,
	/* Modifies the medium: refused with DATA PROTECT on read-only LUNs. */
	SCSITGT__CDB_F_WRITE = 1u << 2,
	/* Needs the medium present and the unit started. */
	SCSITGT__CDB_F_MEDIUM = 1u << 3,
	/* Allowed in ALUA standby state. */
	SCSITGT__CDB_F_ALLOW_STANDBY = 1u << 4,
	/* Offered only on LUNs with logical block provisioning (LBPME): REPORT SUPPORTED
	 * OPERATION CODES leaves the row out elsewhere, and its parse refuses it. */
	SCSITGT__CDB_F_THIN = 1u << 5,
	/* Starts ahead of the waiting tasks as HEAD OF QUEUE does, whatever attribute the
	 * initiator sent (SBC-4 SANITIZE; core/order.c). */
	SCSITGT__CDB_F_HEAD_OF_QUEUE = 1u << 6,
	/* Some bits of the usage mask, those of thin_usage, are offered only on LUNs with
	 * logical block provisioning (WRITE SAME's UNMAP): elsewhere they are reserved, for the
	 * reserved-bit check and REPORT SUPPORTED OPERATION CODES alike. */
	SCSITGT__CDB_F_THIN_BITS = 1u << 7,
	/* Offered only on LUNs whose backend stores a write all or none
	 * (SCSITGT_BACKEND_ATOMIC_WRITE; WRITE ATOMIC (16)): elsewhere the opcode is unknown
	 * (INVALID COMMAND OPERATION CODE) and REPORT SUPPORTED OPERATION CODES leaves it out. */
	SCSITGT__CDB_F_ATOMIC = 1u << 8,
};

/*
 * Reservation conflict classes, the .pr column (SPC-5 §5.13.1 Table 63, SBC-4 §4.17.1 Table 13):
 * how a command fares on a LUN reserved by another I_T nexus (core/pr.c).
 */
enum scsitgt__pr_class {
	/* Not set: rows with SCSITGT__CDB_F_WRITE are PR_WRITE, the others PR_READ. */
	SCSITGT__PR_DEFAULT = 0,
	/* Never conflicts with a persistent reservation (INQUIRY, REPORT LUNS, PERSISTENT
	 * RESERVE IN, TEST UNIT READY...); conflicts with another nexus's SPC-2 reservation. */
	SCSITGT__PR_ALLOWED,
	/* Conflicts under the Exclusive Access types only (reads, MODE SENSE, VERIFY...). */
	SCSITGT__PR_READ,
	/* Conflicts under every type (writes, MODE/LOG SELECT, SYNCHRONIZE CACHE...). */
	SCSITGT__PR_WRITE,
	/* PERSISTENT RESERVE OUT: its service actions check registration themselves. */
	SCSITGT__PR_OUT,
	/* RESERVE / RELEASE (6)/(10): the SPC-2 rules (SPC-2 §5.5.1). */
	SCSITGT__PR_RESERVE,
	SCSITGT__PR_RELEASE,
	/* As PR_ALLOWED, and allowed under another nexus's SPC-2 reservation too (SPC-2 Annex
	 * B, column "reserved by another initiator": READ CAPACITY, LOG SENSE; and REPORT
	 * TARGET PORT GROUPS, core/pr.c). */
	SCSITGT__PR_ALLOWED_SPC2,
	/* Decided by the CDB (core/pr.c): START STOP UNIT with START 1 and POWER CONDITION 0,
	 * PREVENT ALLOW MEDIUM REMOVAL with PREVENT 00b are PR_ALLOWED_SPC2 (SPC-5 §5.13.1
	 * Table 63, SBC-4 §4.17.1 Table 13, SPC-2 Annex B); any other form is PR_WRITE. */
	SCSITGT__PR_MEDIUM,
};

typedef enum scsitgt__sense_reason (*scsitgt__parse_fn)(struct scsitgt__cmd *cmd);

struct scsitgt__cdb_def {
	const char *name;
	uint8_t cdb_len;
	/* CDB USAGE DATA (SPC-5 §6.35.3): bits a client may set; others must be zero. Byte 0
	 * is the operation code and, for service-action rows, the service action bits of byte 1
	 * are set too. */
	uint8_t usage[16];
	/* The most significant bit of each multi-bit field the usage mask refuses (e.g.
	 * RDPROTECT), so that the field pointer names the field's first bit (SPC-5 §4.4.2.3);
	 * unmarked refused bits are reported one by one. Where a bit that may be refused
	 * (thin_usage) sits below such a field, every one-bit field between is marked too
	 * (each is its own most significant bit). */
	uint8_t field_msb[16];
	uint32_t flags;
	/* Checks fields, sets dir/xfer_len/lba/nblocks and cmd->exec. NULL: no data, exec as is. */
	scsitgt__parse_fn parse;
	/* The default exec function (parse may pick another). */
	scsitgt__exec_fn exec;
	/* Rows of the service actions, indexed by service action (opcode rows only). */
	const struct scsitgt__cdb_def *sa_rows;
	uint8_t sa_count;
	/* Where the service action sits: byte 1 bits 4..0 (all SPC/SBC users). */
	bool has_sa;
	/* Reservation conflict class, enum scsitgt__pr_class. */
	uint8_t pr;
	/* With SCSITGT__CDB_F_THIN_BITS: the bits of usage a LUN without logical block
	 * provisioning (LBPME 0) refuses. Last, away from what every command reads. */
	uint8_t thin_usage[16];
};

/* Look up a CDB's row; NULL if the opcode or service action is unsupported. */
const struct scsitgt__cdb_def *scsitgt__cdb_lookup(const uint8_t *cdb, size_t cdb_len);

/* Whether @lun (NULL: no LUN) offers @row at all: false for a SCSITGT__CDB_F_ATOMIC row on a
 * LUN whose backend has no SCSITGT_BACKEND_ATOMIC_WRITE. */
bool scsitgt__cdb_lun_offers(const struct scsitgt__cdb_def *row, const struct scsitgt_lun *lun);

/*
 * Iterate over every supported row (for REPORT SUPPORTED OPERATION CODES): @i starts at 0;
 * returns the next row and its opcode/service action, or NULL at the end.
 */
const struct scsitgt__cdb_def *scsitgt__cdb_iter(unsigned int *i, uint8_t *opcode, uint16_t *sa);

/* The usage mask of @row on @lun (@lun may be NULL): row->usage without the thin_usage bits
 * when the LUN has no logical block provisioning. */
void scsitgt__cdb_usage(const struct scsitgt__cdb_def *row, const struct scsitgt_lun *lun,
			uint8_t usage[16]);

/* Length of a CDB from its group code (SPC-5 §4.2.5.1), 0 for vendor/reserved groups. */
size_t scsitgt__cdb_group_len(uint8_t opcode);

/* Parse a command: lookup, reserved bits, row flags, then the row's parse function. */
enum scsitgt__sense_reason scsitgt__cdb_parse(struct scsitgt__cmd *cmd);

/* The checks of parse that depend on shared state, taken again when a task held back in the
 * task set starts (cmd.c, scsitgt__cmd_unpark()). */
enum scsitgt__sense_reason scsitgt__cdb_recheck(struct scsitgt__cmd *cmd);

/* Parse helpers shared by the command files. */
/* A data-in command whose allocation length is the 16-bit field at @off. */
enum scsitgt__sense_reason scsitgt__parse_alloc16(struct scsitgt__cmd *cmd, unsigned off);
/* A data-in command whose allocation length is the 32-bit field at @off. */
enum scsitgt__sense_reason scsitgt__parse_alloc32(struct scsitgt__cmd *cmd, unsigned off);
/* Copy @len bytes of response into cmd->buf, truncated to the allocation length. */
void scsitgt__cmd_respond(struct scsitgt__cmd *cmd, const void *data, size_t len);

/* Whether the table has a row for @opcode (and @sa for service-action opcodes). */
bool scsitgt__cdb_supported(uint8_t opcode, uint8_t sa);
/* Whether @opcode is a supported opcode with service actions (SERVACTV, SPC-5 §6.35.2). */
bool scsitgt__cdb_has_sa(uint8_t opcode);

#endif /* SCSITGT_CORE_CDB_H */
