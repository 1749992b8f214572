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
};

/*
 * Reservation conflict classes, the .pr column (SPC-5 §5.13.1 Table 63, SBC-4 §4.17.1 Table 13):
 * how a command fares on a LUN reserved by another I_T nexus (core/pr.c).
 */
enum scsitgt__pr_class {
	/* Not set: rows with SCSITGT__CDB_F_WRITE are PR_WRITE, the others PR_READ. */
	SCSITGT__PR_DEFAULT = 0,
	/* Never conflicts (INQUIRY, REPORT LUNS, PERSISTENT RESERVE IN, TEST UNIT READY...). */
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
	 * unmarked refused bits are reported one by one. */
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
};

/* Look up a CDB's row; NULL if the opcode or service action is unsupported. */
const struct scsitgt__cdb_def *scsitgt__cdb_lookup(const uint8_t *cdb, size_t cdb_len);

/*
 * Iterate over every supported row (for REPORT SUPPORTED OPERATION CODES): @i starts at 0;
 * returns the next row and its opcode/service action, or NULL at the end.
 */
const struct scsitgt__cdb_def *scsitgt__cdb_iter(unsigned int *i, uint8_t *opcode, uint16_t *sa);

/* Length of a CDB from its group code (SPC-5 §4.2.5.1), 0 for vendor/reserved groups. */
size_t scsitgt__cdb_group_len(uint8_t opcode);

/* Parse a command: lookup, reserved bits, row flags, then the row's parse function. */
enum scsitgt__sense_reason scsitgt__cdb_parse(struct scsitgt__cmd *cmd);

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

/* Exec functions of the command files, referenced by the table (cdb.c). */
void scsitgt__spc_test_unit_ready(struct scsitgt__cmd *cmd);
void scsitgt__spc_report_luns(struct scsitgt__cmd *cmd);
enum scsitgt__sense_reason scsitgt__spc_parse_report_luns(struct scsitgt__cmd *cmd);

/* spc_inquiry.c: standard INQUIRY data and the dispatch to VPD pages. */
enum scsitgt__sense_reason scsitgt__spc_parse_inquiry(struct scsitgt__cmd *cmd);
void scsitgt__spc_inquiry(struct scsitgt__cmd *cmd);

/*
 * spc_vpd.c: build VPD page @page for @cmd's LUN into @buf (at least SCSITGT__VPD_MAX bytes).
 * Returns the page length in bytes, or 0 when the page is not supported.
 */
#define SCSITGT__VPD_MAX 1024
size_t scsitgt__vpd_build(const struct scsitgt__cmd *cmd, uint8_t page, uint8_t *buf);

/* spc_opcodes.c: REPORT SUPPORTED OPERATION CODES and TASK MANAGEMENT FUNCTIONS. */
enum scsitgt__sense_reason scsitgt__spc_parse_rsoc(struct scsitgt__cmd *cmd);
void scsitgt__spc_rsoc(struct scsitgt__cmd *cmd);
enum scsitgt__sense_reason scsitgt__spc_parse_rstmf(struct scsitgt__cmd *cmd);
void scsitgt__spc_rstmf(struct scsitgt__cmd *cmd);

/* sbc_sanitize.c: SANITIZE (SBC-4 §5.28) and the state it leaves on the LUN. */
enum {
	SCSITGT__SANITIZE_IDLE = 0,
	SCSITGT__SANITIZE_RUNNING = 1,
	SCSITGT__SANITIZE_FAILED = 2,
};
enum scsitgt__sense_reason scsitgt__sbc_parse_sanitize(struct scsitgt__cmd *cmd);
void scsitgt__sbc_sanitize(struct scsitgt__cmd *cmd);
/* What a command meets on a LUN whose sanitize_state is not idle (called by cdb_parse). */
/* sets the progress indication in cmd->detail while a sanitize runs. */
enum scsitgt__sense_reason scsitgt__sanitize_check(struct scsitgt__cmd *cmd,
						   const struct scsitgt__cdb_def *row);

/* sbc_format.c: READ DEFECT DATA (10)/(12) and FORMAT UNIT (SBC-4). */
enum scsitgt__sense_reason scsitgt__sbc_parse_read_defect(struct scsitgt__cmd *cmd);
void scsitgt__sbc_read_defect(struct scsitgt__cmd *cmd);
enum scsitgt__sense_reason scsitgt__sbc_parse_format_unit(struct scsitgt__cmd *cmd);
void scsitgt__sbc_format_unit(struct scsitgt__cmd *cmd);

/* spc_log.c: LOG SENSE and LOG SELECT (SPC-5 §6.8, §6.7). */
enum scsitgt__sense_reason scsitgt__spc_parse_log_sense(struct scsitgt__cmd *cmd);
void scsitgt__spc_log_sense(struct scsitgt__cmd *cmd);
enum scsitgt__sense_reason scsitgt__spc_parse_log_select(struct scsitgt__cmd *cmd);
void scsitgt__spc_log_select(struct scsitgt__cmd *cmd);
/* spc_diag.c: SEND DIAGNOSTIC and RECEIVE DIAGNOSTIC RESULTS (SPC-5 §6.42, §6.29). */
enum scsitgt__sense_reason scsitgt__spc_parse_send_diag(struct scsitgt__cmd *cmd);
void scsitgt__spc_send_diag(struct scsitgt__cmd *cmd);
enum scsitgt__sense_reason scsitgt__spc_parse_receive_diag(struct scsitgt__cmd *cmd);
void scsitgt__spc_receive_diag(struct scsitgt__cmd *cmd);

/* spc_selftest.c: the self-tests of SEND DIAGNOSTIC and their log (SPC-5 §6.42). SELF-TEST
 * CODE values: */
enum {
	SCSITGT__SELFTEST_BG_SHORT = 1,
	SCSITGT__SELFTEST_BG_EXTENDED = 2,
	SCSITGT__SELFTEST_ABORT = 4,
	SCSITGT__SELFTEST_FG_SHORT = 5,
	SCSITGT__SELFTEST_FG_EXTENDED = 6,
};
/* start a test (or abort the background one, code 4); completes @cmd (foreground: at the end) */
void scsitgt__selftest_start(struct scsitgt__cmd *cmd, uint8_t code);
/* a command meeting a test in progress (lun->selftest allocated): NOT READY, SELF-TEST IN
 * PROGRESS, or SCSITGT__SR_OK (START STOP UNIT and FORMAT UNIT end a background test) */
enum scsitgt__sense_reason scsitgt__selftest_check(struct scsitgt__cmd *cmd,
						   const struct scsitgt__cdb_def *row);
/* a logical unit or target reset aborts the test in progress */
void scsitgt__selftest_reset(struct scsitgt_lun *lun);
/* whether a test runs, and its progress in 1/65536ths (REQUEST SENSE) */
bool scsitgt__selftest_progress(const struct scsitgt_lun *lun, uint16_t *progress);
/* the parameters of log page 10h from @first on after a 4-byte header left to the caller;
 * returns the page length so far (header included) */
size_t scsitgt__selftest_log_page(const struct scsitgt_lun *lun, uint8_t *buf, size_t cap,
				  uint16_t first);
/* advisory seconds an extended self-test takes (control mode page, VPD 86h) */
uint32_t scsitgt__selftest_extended_seconds(const struct scsitgt_lun *lun);

/* spc_request_sense.c: REQUEST SENSE. */
enum scsitgt__sense_reason scsitgt__spc_parse_request_sense(struct scsitgt__cmd *cmd);
void scsitgt__spc_request_sense(struct scsitgt__cmd *cmd);

/* spc_mode.c: MODE SENSE (6)/(10) and MODE SELECT (6)/(10). */
enum scsitgt__sense_reason scsitgt__spc_parse_mode_sense(struct scsitgt__cmd *cmd);
void scsitgt__spc_mode_sense(struct scsitgt__cmd *cmd);
enum scsitgt__sense_reason scsitgt__spc_parse_mode_select(struct scsitgt__cmd *cmd);
void scsitgt__spc_mode_select(struct scsitgt__cmd *cmd);

/* sbc.c: block commands. */
enum scsitgt__sense_reason scsitgt__sbc_parse_rw(struct scsitgt__cmd *cmd);
/* LBA, NUMBER OF LOGICAL BLOCKS and that field's offset of a 10/12/16-byte media CDB. */
void scsitgt__sbc_decode_range(const uint8_t *cdb, size_t cdb_len, uint64_t *lba, uint32_t *nblocks,
			       uint16_t *len_off);
/* Transfer-length cap and LBA range check of a media command (SBC-4 §4.5, §6.6.3). */
enum scsitgt__sense_reason scsitgt__sbc_check_range(struct scsitgt__cmd *cmd, uint64_t lba,
						    uint32_t nblocks, uint16_t len_off);
bool scsitgt__sbc_has_cache(const struct scsitgt_lun *lun);
/* sbc_unmap.c: UNMAP. */
enum scsitgt__sense_reason scsitgt__sbc_parse_unmap(struct scsitgt__cmd *cmd);
void scsitgt__sbc_unmap(struct scsitgt__cmd *cmd);
/* sbc_verify.c: WRITE AND VERIFY (10)/(12)/(16). */
enum scsitgt__sense_reason scsitgt__sbc_parse_write_verify(struct scsitgt__cmd *cmd);
void scsitgt__sbc_write_verify(struct scsitgt__cmd *cmd);
/* sbc_verify.c: VERIFY (10)/(12)/(16). */
enum scsitgt__sense_reason scsitgt__sbc_parse_verify(struct scsitgt__cmd *cmd);
void scsitgt__sbc_verify(struct scsitgt__cmd *cmd);
/* sbc_write_same.c: WRITE SAME (10)/(16). */
enum scsitgt__sense_reason scsitgt__sbc_parse_write_same(struct scsitgt__cmd *cmd);
void scsitgt__sbc_write_same(struct scsitgt__cmd *cmd);
/* sbc_atomic.c: COMPARE AND WRITE, ORWRITE (16), WRITE ATOMIC (16), under the range lock. */
enum scsitgt__sense_reason scsitgt__sbc_parse_caw(struct scsitgt__cmd *cmd);
enum scsitgt__sense_reason scsitgt__sbc_parse_orwrite(struct scsitgt__cmd *cmd);
enum scsitgt__sense_reason scsitgt__sbc_parse_write_atomic(struct scsitgt__cmd *cmd);
void scsitgt__sbc_atomic_exec(struct scsitgt__cmd *cmd);
/* sbc_lba_status.c: GET LBA STATUS, PRE-FETCH (10)/(16), and their VPD B0 limits. */
enum scsitgt__sense_reason scsitgt__sbc_parse_get_lba_status(struct scsitgt__cmd *cmd);
void scsitgt__sbc_get_lba_status(struct scsitgt__cmd *cmd);
enum scsitgt__sense_reason scsitgt__sbc_parse_prefetch(struct scsitgt__cmd *cmd);
void scsitgt__sbc_prefetch(struct scsitgt__cmd *cmd);
/*
 * Fill the VPD B0 (SBC-4 §6.6.3) fields of the commands above into @b0 (a zeroed page of at
 * least 64 bytes): MAXIMUM COMPARE AND WRITE LENGTH, WSNZ, MAXIMUM WRITE SAME LENGTH and the
 * atomic write limits, each only when its command is in the table.
 */
void scsitgt__sbc_block_limits(const struct scsitgt_lun *lun, uint8_t *b0);
/* The limits advertised there (in logical blocks). */
#define SCSITGT__SBC_MAX_CAW_BLOCKS 128u
#define SCSITGT__SBC_MAX_WRITE_SAME_BLOCKS 0xffffu
#define SCSITGT__SBC_MAX_ATOMIC_BLOCKS 256u
/* ATOMIC ALIGNMENT and ATOMIC TRANSFER LENGTH GRANULARITY: one physical block (the
 * LUN's LOGICAL BLOCKS PER PHYSICAL BLOCK EXPONENT, sbc_atomic.c). */
uint32_t scsitgt__sbc_atomic_granularity(const struct scsitgt_lun *lun);
void scsitgt__sbc_rw(struct scsitgt__cmd *cmd);
enum scsitgt__sense_reason scsitgt__sbc_parse_read_capacity10(struct scsitgt__cmd *cmd);
void scsitgt__sbc_read_capacity10(struct scsitgt__cmd *cmd);
enum scsitgt__sense_reason scsitgt__sbc_parse_read_capacity16(struct scsitgt__cmd *cmd);
void scsitgt__sbc_read_capacity16(struct scsitgt__cmd *cmd);
enum scsitgt__sense_reason scsitgt__sbc_parse_sync_cache(struct scsitgt__cmd *cmd);
void scsitgt__sbc_sync_cache(struct scsitgt__cmd *cmd);
enum scsitgt__sense_reason scsitgt__sbc_parse_start_stop(struct scsitgt__cmd *cmd);
void scsitgt__sbc_start_stop(struct scsitgt__cmd *cmd);
enum scsitgt__sense_reason scsitgt__sbc_parse_prevent_allow(struct scsitgt__cmd *cmd);
void scsitgt__sbc_prevent_allow(struct scsitgt__cmd *cmd);
/* The LBPME/LBPRZ answers shared by READ CAPACITY (16) and VPD B2 (SBC-4 §4.7). */
bool scsitgt__sbc_lbpme(const struct scsitgt_lun *lun);
bool scsitgt__sbc_lbprz(const struct scsitgt_lun *lun);

#endif /* SCSITGT_CORE_CDB_H */
