/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "core/alua.h"
#include "core/cdb.h"
#include "core/fabric.h"
#include "core/order.h"
#include "core/pr.h"
#include "core/scsi_spec.h"
#include "core/ua.h"
#include "core/xcopy.h"
#include "core/sbc.h"
#include "core/sbc_sanitize.h"
#include "core/spc.h"
#include "core/spc_selftest.h"
#include "util/be.h"

/*
 * The opcode table, keyed by operation code. Usage masks follow SPC-5 §6.35.3 (CDB USAGE DATA):
 * byte 0 is the operation code; a set bit is a bit the initiator may set. The CONTROL byte
 * allows nothing: we support neither NACA (SAM-5 §5.10) nor the obsolete LINK bit.
 */
/* SERVICE ACTION IN (16) rows, indexed by service action (SBC-4 §5.20 READ CAPACITY (16)). */
static const struct scsitgt__cdb_def sai16_rows[0x20] = {
	[SBC_SAI_READ_CAPACITY_16] = {
		.name = "READ CAPACITY (16)",
		.cdb_len = 16,
		.pr = SCSITGT__PR_ALLOWED_SPC2,
		/* Bytes 2..9 LBA and byte 14 PMI are obsolete in SBC-4 but checked as in SBC-3. */
		.usage = { 0x9e, 0x1f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
			   0xff, 0xff, 0xff, 0xff, 0x01, 0x00 },
		.flags = SCSITGT__CDB_F_MEDIUM | SCSITGT__CDB_F_ALLOW_STANDBY,
		.parse = scsitgt__sbc_parse_read_capacity16,
		.exec = scsitgt__sbc_read_capacity16,
	},
	/* SBC-4 §5.17 GET LBA STATUS: byte 14 (REPORT TYPE in later revisions) is refused. */
	[SBC_SAI_GET_LBA_STATUS] = {
		.name = "GET LBA STATUS",
		.cdb_len = 16,
		.usage = { 0x9e, 0x12, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
			   0xff, 0xff, 0xff, 0xff, 0x00, 0x00 },
		.flags = SCSITGT__CDB_F_MEDIUM,
		.parse = scsitgt__sbc_parse_get_lba_status,
		.exec = scsitgt__sbc_get_lba_status,
	},
};

/* Usage of the block I/O CDBs: DPO, FUA and the obsolete FUA_NV (SBC-3; still sent by
 * initiators and conformance suites, and meaningless without a non-volatile cache) in byte 1;
 * RDPROTECT/WRPROTECT (no protection information, SBC-4 §4.22), RARC, bit 0 (obsolete, DLD2
 * in the 16-byte forms) are refused. GROUP NUMBER is bits 5..0 of its byte.
 * RDPROTECT/WRPROTECT is the 3-bit field topped by bit 7 of byte 1. */
#define RW_FLAGS 0x1a
#define GROUP 0x3f
#define RW_FIELDS          \
	{                  \
		0x00, 0x80 \
	}
/* WRITE SAME: WRPROTECT, and below it the one-bit ANCHOR, UNMAP, PBDATA, LBDATA and bit 0,
 * each its own field (UNMAP is refused on a fully provisioned LUN, next to the others). */
#define WS_FIELDS          \
	{                  \
		0x00, 0x9f \
	}

/* MAINTENANCE IN (A3h) rows, indexed by service action (the SPC_MI_* values of scsi_spec.h). */
static const struct scsitgt__cdb_def maint_in_rows[0x20] = {
	/* SPC-5 §6.35: RCTD and REPORTING OPTIONS in byte 2, REQUESTED OPERATION CODE, REQUESTED
	 * SERVICE ACTION, ALLOCATION LENGTH. */
	[SPC_MI_REPORT_SUPPORTED_OPCODES] = {
		.name = "REPORT SUPPORTED OPERATION CODES",
		.cdb_len = 12,
		.usage = { 0xa3, 0x0c, 0x87, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00 },
		.flags = SCSITGT__CDB_F_ALLOW_STANDBY,
		.parse = scsitgt__spc_parse_rsoc,
		.exec = scsitgt__spc_rsoc,
	},
	/* SPC-5 §6.36: PARAMETER DATA FORMAT in byte 1, ALLOCATION LENGTH. Allowed under
	 * every reservation, another nexus's SPC-2 RESERVE too (core/pr.c says why). */
	[SPC_MI_REPORT_TARGET_PORT_GROUPS] = {
		.name = "REPORT TARGET PORT GROUPS",
		.cdb_len = 12,
		.usage = { 0xa3, 0xea, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00 },
		.flags = SCSITGT__CDB_F_ALLOW_STANDBY,
		.pr = SCSITGT__PR_ALLOWED_SPC2,
		.parse = scsitgt__alua_parse_rtpg,
		.exec = scsitgt__alua_rtpg,
	},
	/* SPC-5 §6.36: REPD in byte 2, ALLOCATION LENGTH. */
	[SPC_MI_REPORT_SUPPORTED_TMFS] = {
		.name = "REPORT SUPPORTED TASK MANAGEMENT FUNCTIONS",
		.cdb_len = 12,
		.usage = { 0xa3, 0x0d, 0x80, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00 },
		.flags = SCSITGT__CDB_F_ALLOW_STANDBY,
		.parse = scsitgt__spc_parse_rstmf,
		.exec = scsitgt__spc_rstmf,
	},
};

/* SANITIZE rows (SBC-4 §5.28): IMMED and AUSE in byte 1 with the service action, PARAMETER
 * LIST LENGTH in bytes 7..8. ZNR is refused (sbc_sanitize.c says why). The command "shall be
 * processed as if it has a HEAD OF QUEUE task attribute" (§5.28.1). */
#define SANITIZE_ROW(nm, sa, fl)                                                                \
	{                                                                                       \
		.name = (nm), .cdb_len = 10,                                                    \
		.usage = { 0x48, 0xa0 | (sa), 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0x00 }, \
		.flags = SCSITGT__CDB_F_MEDIUM | SCSITGT__CDB_F_WRITE |                         \
			 SCSITGT__CDB_F_HEAD_OF_QUEUE | (fl),                                   \
		.parse = scsitgt__sbc_parse_sanitize, .exec = scsitgt__sbc_sanitize,            \
	}
static const struct scsitgt__cdb_def sanitize_rows[0x20] = {
	[SBC_SANITIZE_OVERWRITE] = SANITIZE_ROW("SANITIZE OVERWRITE", SBC_SANITIZE_OVERWRITE, 0),
	[SBC_SANITIZE_BLOCK_ERASE] =
		SANITIZE_ROW("SANITIZE BLOCK ERASE", SBC_SANITIZE_BLOCK_ERASE, SCSITGT__CDB_F_THIN),
	[SBC_SANITIZE_CRYPTO_ERASE] =
		SANITIZE_ROW("SANITIZE CRYPTO ERASE", SBC_SANITIZE_CRYPTO_ERASE, 0),
	[SBC_SANITIZE_EXIT_FAILURE_MODE] =
		SANITIZE_ROW("SANITIZE EXIT FAILURE MODE", SBC_SANITIZE_EXIT_FAILURE_MODE, 0),
};

/* MAINTENANCE OUT rows, indexed by service action. SPC-5 §6.50 SET TARGET PORT GROUPS:
 * PARAMETER LIST LENGTH in bytes 6..9. */
static const struct scsitgt__cdb_def maint_out_rows[0x20] = {
	[SPC_MO_SET_TARGET_PORT_GROUPS] = {
		.name = "SET TARGET PORT GROUPS",
		.cdb_len = 12,
		.usage = { 0xa4, 0x0a, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00 },
		.flags = SCSITGT__CDB_F_ALLOW_STANDBY,
		.pr = SCSITGT__PR_WRITE,
		.parse = scsitgt__alua_parse_stpg,
		.exec = scsitgt__alua_stpg,
	},
};

/* PERSISTENT RESERVE IN rows (SPC-5 §6.16): ALLOCATION LENGTH in bytes 7..8. */
#define PR_IN_ROW(nm, sa)                                                                \
	{                                                                                \
		.name = (nm), .cdb_len = 10,                                             \
		.usage = { 0x5e, 0x1f, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0x00 }, \
		.flags = SCSITGT__CDB_F_ALLOW_STANDBY, .pr = SCSITGT__PR_ALLOWED,        \
		.parse = scsitgt__pr_parse_in, .exec = scsitgt__pr_in,                   \
	}
static const struct scsitgt__cdb_def pr_in_rows[0x20] = {
	[PR_IN_READ_KEYS] = PR_IN_ROW("PERSISTENT RESERVE IN READ KEYS", PR_IN_READ_KEYS),
	[PR_IN_READ_RESERVATION] =
		PR_IN_ROW("PERSISTENT RESERVE IN READ RESERVATION", PR_IN_READ_RESERVATION),
	[PR_IN_REPORT_CAPABILITIES] =
		PR_IN_ROW("PERSISTENT RESERVE IN REPORT CAPABILITIES", PR_IN_REPORT_CAPABILITIES),
	[PR_IN_READ_FULL_STATUS] =
		PR_IN_ROW("PERSISTENT RESERVE IN READ FULL STATUS", PR_IN_READ_FULL_STATUS),
};

/* PERSISTENT RESERVE OUT rows (SPC-5 §6.17): SCOPE and TYPE in byte 2, PARAMETER LIST LENGTH
 * in bytes 5..8. */
#define PR_OUT_ROW(nm)                                                                   \
	{                                                                                \
		.name = (nm), .cdb_len = 10,                                             \
		.usage = { 0x5f, 0x1f, 0xff, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0x00 }, \
		.flags = SCSITGT__CDB_F_ALLOW_STANDBY, .pr = SCSITGT__PR_OUT,            \
		.parse = scsitgt__pr_parse_out, .exec = scsitgt__pr_out,                 \
	}
static const struct scsitgt__cdb_def pr_out_rows[0x20] = {
	[PR_OUT_REGISTER] = PR_OUT_ROW("PERSISTENT RESERVE OUT REGISTER"),
	[PR_OUT_RESERVE] = PR_OUT_ROW("PERSISTENT RESERVE OUT RESERVE"),
	[PR_OUT_RELEASE] = PR_OUT_ROW("PERSISTENT RESERVE OUT RELEASE"),
	[PR_OUT_CLEAR] = PR_OUT_ROW("PERSISTENT RESERVE OUT CLEAR"),
	[PR_OUT_PREEMPT] = PR_OUT_ROW("PERSISTENT RESERVE OUT PREEMPT"),
	[PR_OUT_PREEMPT_AND_ABORT] = PR_OUT_ROW("PERSISTENT RESERVE OUT PREEMPT AND ABORT"),
	[PR_OUT_REGISTER_AND_IGNORE] =
		PR_OUT_ROW("PERSISTENT RESERVE OUT REGISTER AND IGNORE EXISTING KEY"),
	[PR_OUT_REGISTER_AND_MOVE] = PR_OUT_ROW("PERSISTENT RESERVE OUT REGISTER AND MOVE"),
	[PR_OUT_REPLACE_LOST] = PR_OUT_ROW("PERSISTENT RESERVE OUT REPLACE LOST RESERVATION"),
};

/*
 * third-party copy (core/xcopy*.c). SPC-4 r37 §6.4 EXTENDED COPY(LID1): service action
 * 00h of 83h, PARAMETER LIST LENGTH in bytes 10..13. The copy manager's own LUN is checked
 * for nothing but the command: each copy source and destination is checked (reservations,
 * write protection, readiness) as the LUN it is when the segments are processed.
 */
static const struct scsitgt__cdb_def xcopy_out_rows[0x20] = {
	[0x00] = {
		.name = "EXTENDED COPY (LID1)",
		.cdb_len = 16,
		.usage = { 0x83, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
			   0xff, 0xff, 0xff, 0xff, 0x00, 0x00 },
		.pr = SCSITGT__PR_ALLOWED,
		.parse = scsitgt__xcopy_parse_cdb,
		.exec = scsitgt__xcopy_exec,
	},
};

/* RECEIVE COPY RESULTS (84h) service actions: LIST IDENTIFIER in byte 2 (reserved for
 * OPERATING PARAMETERS), ALLOCATION LENGTH in bytes 10..13. 01h RECEIVE DATA is absent: no
 * data is ever held. */
#define RCR_ROW(nm, sa, lid)                                                  \
	{                                                                     \
		.name = (nm), .cdb_len = 16,                                  \
		.usage = { 0x84, (sa), (lid), 0x00, 0x00, 0x00, 0x00, 0x00,   \
			   0x00, 0x00, 0xff,  0xff, 0xff, 0xff, 0x00, 0x00 }, \
		.pr = SCSITGT__PR_ALLOWED, .parse = scsitgt__xcopy_parse_rcr, \
		.exec = scsitgt__xcopy_rcr,                                   \
	}
static const struct scsitgt__cdb_def xcopy_in_rows[0x20] = {
	[0x00] = RCR_ROW("RECEIVE COPY RESULTS COPY STATUS", 0x00, 0xff),
	[0x03] = RCR_ROW("RECEIVE COPY RESULTS OPERATING PARAMETERS", 0x03, 0x00),
	[0x04] = RCR_ROW("RECEIVE COPY RESULTS FAILED SEGMENT DETAILS", 0x04, 0xff),
};

static const struct scsitgt__cdb_def cdb_table[256] = {
	[SPC_TEST_UNIT_READY] = {
		.name = "TEST UNIT READY",
		.cdb_len = 6,
		.pr = SCSITGT__PR_ALLOWED,
		.usage = { 0x00, 0x00, 0x00, 0x00, 0x00, 0x00 },
		.flags = SCSITGT__CDB_F_MEDIUM | SCSITGT__CDB_F_ALLOW_STANDBY,
		.exec = scsitgt__spc_test_unit_ready,
	},
	[SPC_REQUEST_SENSE] = {
		.name = "REQUEST SENSE",
		.cdb_len = 6,
		.pr = SCSITGT__PR_ALLOWED,
		.usage = { 0x03, 0x01, 0x00, 0x00, 0xff, 0x00 },
		.flags = SCSITGT__CDB_F_NO_LUN | SCSITGT__CDB_F_ALLOW_UA |
			 SCSITGT__CDB_F_ALLOW_STANDBY,
		.parse = scsitgt__spc_parse_request_sense,
		.exec = scsitgt__spc_request_sense,
	},
	/* SBC-4 §5.3: FMTPINFO (no protection information), vendor byte 2 refused. */
	[SBC_FORMAT_UNIT] = {
		.name = "FORMAT UNIT",
		.cdb_len = 6,
		.usage = { 0x04, 0x3f, 0x00, 0x00, 0x00, 0x00 },
		.field_msb = { 0x00, 0x80 },
		.flags = SCSITGT__CDB_F_MEDIUM | SCSITGT__CDB_F_WRITE,
		.parse = scsitgt__sbc_parse_format_unit,
		.exec = scsitgt__sbc_format_unit,
	},
	[SBC_READ_6] = {
		.name = "READ (6)",
		.cdb_len = 6,
		.usage = { 0x08, 0x1f, 0xff, 0xff, 0xff, 0x00 },
		.flags = SCSITGT__CDB_F_MEDIUM,
		.parse = scsitgt__sbc_parse_rw,
		.exec = scsitgt__sbc_rw,
	},
	[SBC_WRITE_6] = {
		.name = "WRITE (6)",
		.cdb_len = 6,
		.usage = { 0x0a, 0x1f, 0xff, 0xff, 0xff, 0x00 },
		.flags = SCSITGT__CDB_F_MEDIUM | SCSITGT__CDB_F_WRITE,
		.parse = scsitgt__sbc_parse_rw,
		.exec = scsitgt__sbc_rw,
	},
	[SPC_INQUIRY] = {
		.name = "INQUIRY",
		.cdb_len = 6,
		.pr = SCSITGT__PR_ALLOWED,
		/* Byte 1 bit 1 is the obsolete CMDDT: refused like a reserved bit. */
		.usage = { 0x12, 0x01, 0xff, 0xff, 0xff, 0x00 },
		.flags = SCSITGT__CDB_F_NO_LUN | SCSITGT__CDB_F_ALLOW_UA |
			 SCSITGT__CDB_F_ALLOW_STANDBY,
		.parse = scsitgt__spc_parse_inquiry,
		.exec = scsitgt__spc_inquiry,
	},
	[SPC_MODE_SELECT_6] = {
		.name = "MODE SELECT (6)",
		.cdb_len = 6,
		.pr = SCSITGT__PR_WRITE,
		/* PF; SP is refused since no page is saveable (SPC-5 §6.11). */
		.usage = { 0x15, 0x10, 0x00, 0x00, 0xff, 0x00 },
		.parse = scsitgt__spc_parse_mode_select,
		.exec = scsitgt__spc_mode_select,
	},
	[SPC_MODE_SENSE_6] = {
		.name = "MODE SENSE (6)",
		.cdb_len = 6,
		.usage = { 0x1a, 0x08, 0xff, 0xff, 0xff, 0x00 },
		.flags = SCSITGT__CDB_F_ALLOW_STANDBY,
		.parse = scsitgt__spc_parse_mode_sense,
		.exec = scsitgt__spc_mode_sense,
	},
	[SBC_START_STOP_UNIT] = {
		.name = "START STOP UNIT",
		.cdb_len = 6,
		.pr = SCSITGT__PR_MEDIUM,
		.usage = { 0x1b, 0x01, 0x00, 0x0f, 0xf7, 0x00 },
		.parse = scsitgt__sbc_parse_start_stop,
		.exec = scsitgt__sbc_start_stop,
	},
	[SPC_PREVENT_ALLOW_MEDIUM_REMOVAL] = {
		.name = "PREVENT ALLOW MEDIUM REMOVAL",
		.cdb_len = 6,
		.pr = SCSITGT__PR_MEDIUM,
		.usage = { 0x1e, 0x00, 0x00, 0x00, 0x03, 0x00 },
		.parse = scsitgt__sbc_parse_prevent_allow,
		.exec = scsitgt__sbc_prevent_allow,
	},
	[SBC_READ_CAPACITY_10] = {
		.name = "READ CAPACITY (10)",
		.cdb_len = 10,
		.pr = SCSITGT__PR_ALLOWED_SPC2,
		.usage = { 0x25, 0x00, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x01, 0x00 },
		.flags = SCSITGT__CDB_F_MEDIUM | SCSITGT__CDB_F_ALLOW_STANDBY,
		.parse = scsitgt__sbc_parse_read_capacity10,
		.exec = scsitgt__sbc_read_capacity10,
	},
	[SBC_READ_10] = {
		.name = "READ (10)",
		.cdb_len = 10,
		.usage = { 0x28, RW_FLAGS, 0xff, 0xff, 0xff, 0xff, GROUP, 0xff, 0xff, 0x00 },
		.field_msb = RW_FIELDS,
		.flags = SCSITGT__CDB_F_MEDIUM,
		.parse = scsitgt__sbc_parse_rw,
		.exec = scsitgt__sbc_rw,
	},
	[SBC_WRITE_10] = {
		.name = "WRITE (10)",
		.cdb_len = 10,
		.usage = { 0x2a, RW_FLAGS, 0xff, 0xff, 0xff, 0xff, GROUP, 0xff, 0xff, 0x00 },
		.field_msb = RW_FIELDS,
		.flags = SCSITGT__CDB_F_MEDIUM | SCSITGT__CDB_F_WRITE,
		.parse = scsitgt__sbc_parse_rw,
		.exec = scsitgt__sbc_rw,
	},
	/* SBC-4 §5.50: WRPROTECT (refused), ANCHOR (refused: no anchored blocks, VPD B2h
	 * ANC_SUP 0), UNMAP (thin LUNs only: LBPWS10 is in their VPD B2h alone); the obsolete
	 * PBDATA/LBDATA and reserved bit 0 are refused. */
	[SBC_WRITE_SAME_10] = {
		.name = "WRITE SAME (10)",
		.cdb_len = 10,
		.usage = { 0x41, 0x08, 0xff, 0xff, 0xff, 0xff, GROUP, 0xff, 0xff, 0x00 },
		.field_msb = WS_FIELDS,
		.flags = SCSITGT__CDB_F_MEDIUM | SCSITGT__CDB_F_WRITE | SCSITGT__CDB_F_THIN_BITS,
		.parse = scsitgt__sbc_parse_write_same,
		.exec = scsitgt__sbc_write_same,
		.thin_usage = { 0x00, 0x08 },
	},
	/* SBC-4 §5.30: ANCHOR (byte 1 bit 0) is refused: we do not support anchored blocks.
	 * Thin LUNs only (SBC-4 §4.7.3.4): a fully provisioned one neither lists nor runs it. */
	[SBC_UNMAP] = {
		.name = "UNMAP",
		.cdb_len = 10,
		.usage = { 0x42, 0x00, 0x00, 0x00, 0x00, 0x00, GROUP, 0xff, 0xff, 0x00 },
		.flags = SCSITGT__CDB_F_MEDIUM | SCSITGT__CDB_F_WRITE | SCSITGT__CDB_F_THIN,
		.parse = scsitgt__sbc_parse_unmap,
		.exec = scsitgt__sbc_unmap,
	},
	/* SBC-4 §5.42-§5.44: byte 1 holds WRPROTECT (refused: no protection information), DPO
	 * and the two-bit BYTCHK; bit 0 is reserved. */
	[SBC_WRITE_AND_VERIFY_10] = {
		.name = "WRITE AND VERIFY (10)",
		.cdb_len = 10,
		.usage = { 0x2e, 0x16, 0xff, 0xff, 0xff, 0xff, GROUP, 0xff, 0xff, 0x00 },
		.field_msb = RW_FIELDS,
		.flags = SCSITGT__CDB_F_MEDIUM | SCSITGT__CDB_F_WRITE,
		.parse = scsitgt__sbc_parse_write_verify,
		.exec = scsitgt__sbc_write_verify,
	},
	/* SBC-4 §5.38-§5.40: VRPROTECT (refused), DPO, BYTCHK; bit 0 is reserved. */
	[SBC_VERIFY_10] = {
		.name = "VERIFY (10)",
		.cdb_len = 10,
		.usage = { 0x2f, 0x16, 0xff, 0xff, 0xff, 0xff, GROUP, 0xff, 0xff, 0x00 },
		.field_msb = RW_FIELDS,
		.flags = SCSITGT__CDB_F_MEDIUM,
		.parse = scsitgt__sbc_parse_verify,
		.exec = scsitgt__sbc_verify,
	},
	/* SBC-4 §5.11 PRE-FETCH (10): IMMED only in byte 1 (bit 0 is the obsolete RELADR). */
	[SBC_PRE_FETCH_10] = {
		.name = "PRE-FETCH (10)",
		.cdb_len = 10,
		.usage = { 0x34, 0x02, 0xff, 0xff, 0xff, 0xff, GROUP, 0xff, 0xff, 0x00 },
		.flags = SCSITGT__CDB_F_MEDIUM,
		.parse = scsitgt__sbc_parse_prefetch,
		.exec = scsitgt__sbc_prefetch,
	},
	[SBC_WRITE_AND_VERIFY_12] = {
		.name = "WRITE AND VERIFY (12)",
		.cdb_len = 12,
		.usage = { 0xae, 0x16, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, GROUP, 0x00 },
		.field_msb = RW_FIELDS,
		.flags = SCSITGT__CDB_F_MEDIUM | SCSITGT__CDB_F_WRITE,
		.parse = scsitgt__sbc_parse_write_verify,
		.exec = scsitgt__sbc_write_verify,
	},
	[SBC_WRITE_AND_VERIFY_16] = {
		.name = "WRITE AND VERIFY (16)",
		.cdb_len = 16,
		.usage = { 0x8e, 0x16, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
			   0xff, 0xff, 0xff, 0xff, GROUP, 0x00 },
		.field_msb = RW_FIELDS,
		.flags = SCSITGT__CDB_F_MEDIUM | SCSITGT__CDB_F_WRITE,
		.parse = scsitgt__sbc_parse_write_verify,
		.exec = scsitgt__sbc_write_verify,
	},
	[SBC_SYNCHRONIZE_CACHE_10] = {
		.name = "SYNCHRONIZE CACHE (10)",
		.cdb_len = 10,
		.pr = SCSITGT__PR_WRITE,
		/* IMMED and the obsolete SYNC_NV (ignored); the obsolete RELADR is refused. */
		.usage = { 0x35, 0x06, 0xff, 0xff, 0xff, 0xff, GROUP, 0xff, 0xff, 0x00 },
		.flags = SCSITGT__CDB_F_MEDIUM,
		.parse = scsitgt__sbc_parse_sync_cache,
		.exec = scsitgt__sbc_sync_cache,
	},
	/* SBC-4 §5.18: REQ_PLIST, REQ_GLIST, DEFECT LIST FORMAT; ALLOCATION LENGTH. */
	[SBC_READ_DEFECT_DATA_10] = {
		.name = "READ DEFECT DATA (10)",
		.cdb_len = 10,
		.usage = { 0x37, 0x00, 0x1f, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0x00 },
		.parse = scsitgt__sbc_parse_read_defect,
		.exec = scsitgt__sbc_read_defect,
	},
	[SBC_SANITIZE] = {
		.name = "SANITIZE",
		.cdb_len = 10,
		.sa_rows = sanitize_rows,
		.sa_count = 0x20,
		.has_sa = true,
	},
	/* SPC-5 §6.7 LOG SELECT: PCR and SP; PC and PAGE CODE; SUBPAGE CODE; PARAMETER
	 * LIST LENGTH (spc_log.c). */
	[SPC_LOG_SELECT] = {
		.name = "LOG SELECT",
		.cdb_len = 10,
		.pr = SCSITGT__PR_WRITE,
		.usage = { 0x4c, 0x03, 0xff, 0xff, 0x00, 0x00, 0x00, 0xff, 0xff, 0x00 },
		.flags = SCSITGT__CDB_F_ALLOW_STANDBY,
		.parse = scsitgt__spc_parse_log_select,
		.exec = scsitgt__spc_log_select,
	},
	/* SPC-5 §6.8 LOG SENSE: SP (the obsolete PPC is refused); PC and PAGE CODE; SUBPAGE
	 * CODE; PARAMETER POINTER; ALLOCATION LENGTH. */
	[SPC_LOG_SENSE] = {
		.name = "LOG SENSE",
		.cdb_len = 10,
		.pr = SCSITGT__PR_ALLOWED_SPC2,
		.usage = { 0x4d, 0x01, 0xff, 0xff, 0x00, 0xff, 0xff, 0xff, 0xff, 0x00 },
		.flags = SCSITGT__CDB_F_ALLOW_STANDBY,
		.parse = scsitgt__spc_parse_log_sense,
		.exec = scsitgt__spc_log_sense,
	},
	/* SPC-5 §6.42 SEND DIAGNOSTIC: SELF-TEST CODE, PF, SELFTEST, DEVOFFL, UNITOFFL;
	 * PARAMETER LIST LENGTH (spc_diag.c). */
	[SPC_SEND_DIAGNOSTIC] = {
		.name = "SEND DIAGNOSTIC",
		.cdb_len = 6,
		.pr = SCSITGT__PR_WRITE,
		.usage = { 0x1d, 0xf7, 0x00, 0xff, 0xff, 0x00 },
		.flags = SCSITGT__CDB_F_ALLOW_STANDBY,
		.parse = scsitgt__spc_parse_send_diag,
		.exec = scsitgt__spc_send_diag,
	},
	/* SPC-5 §6.29 RECEIVE DIAGNOSTIC RESULTS: PCV; PAGE CODE; ALLOCATION LENGTH. */
	[SPC_RECEIVE_DIAGNOSTIC_RESULTS] = {
		.name = "RECEIVE DIAGNOSTIC RESULTS",
		.cdb_len = 6,
		.pr = SCSITGT__PR_READ,
		.usage = { 0x1c, 0x01, 0xff, 0xff, 0xff, 0x00 },
		.flags = SCSITGT__CDB_F_ALLOW_STANDBY,
		.parse = scsitgt__spc_parse_receive_diag,
		.exec = scsitgt__spc_receive_diag,
	},
	[SPC_MODE_SELECT_10] = {
		.name = "MODE SELECT (10)",
		.cdb_len = 10,
		.pr = SCSITGT__PR_WRITE,
		.usage = { 0x55, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0x00 },
		.parse = scsitgt__spc_parse_mode_select,
		.exec = scsitgt__spc_mode_select,
	},
	[SPC_MODE_SENSE_10] = {
		.name = "MODE SENSE (10)",
		.cdb_len = 10,
		.usage = { 0x5a, 0x18, 0xff, 0xff, 0x00, 0x00, 0x00, 0xff, 0xff, 0x00 },
		.flags = SCSITGT__CDB_F_ALLOW_STANDBY,
		.parse = scsitgt__spc_parse_mode_sense,
		.exec = scsitgt__spc_mode_sense,
	},
	[SBC_READ_16] = {
		.name = "READ (16)",
		.cdb_len = 16,
		.usage = { 0x88, RW_FLAGS, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
			   0xff, 0xff, 0xff, 0xff, GROUP, 0x00 },
		.field_msb = RW_FIELDS,
		.flags = SCSITGT__CDB_F_MEDIUM,
		.parse = scsitgt__sbc_parse_rw,
		.exec = scsitgt__sbc_rw,
	},
	/* SBC-4 §5.3: WRPROTECT (refused), DPO, FUA, obsolete FUA_NV; NUMBER OF LOGICAL BLOCKS
	 * in byte 13, bytes 10..12 reserved. */
	[SBC_COMPARE_AND_WRITE] = {
		.name = "COMPARE AND WRITE",
		.cdb_len = 16,
		.usage = { 0x89, RW_FLAGS, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
			   0x00, 0x00, 0x00, 0xff, GROUP, 0x00 },
		.field_msb = RW_FIELDS,
		.flags = SCSITGT__CDB_F_MEDIUM | SCSITGT__CDB_F_WRITE,
		.parse = scsitgt__sbc_parse_caw,
		.exec = scsitgt__sbc_atomic_exec,
	},
	[SBC_WRITE_16] = {
		.name = "WRITE (16)",
		.cdb_len = 16,
		.usage = { 0x8a, RW_FLAGS, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
			   0xff, 0xff, 0xff, 0xff, GROUP, 0x00 },
		.field_msb = RW_FIELDS,
		.flags = SCSITGT__CDB_F_MEDIUM | SCSITGT__CDB_F_WRITE,
		.parse = scsitgt__sbc_parse_rw,
		.exec = scsitgt__sbc_rw,
	},
	/* SBC-4 §5.9 ORWRITE (16): ORPROTECT (refused), DPO, FUA, obsolete FUA_NV. */
	[SBC_ORWRITE_16] = {
		.name = "ORWRITE (16)",
		.cdb_len = 16,
		.usage = { 0x8b, RW_FLAGS, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
			   0xff, 0xff, 0xff, 0xff, GROUP, 0x00 },
		.field_msb = RW_FIELDS,
		.flags = SCSITGT__CDB_F_MEDIUM | SCSITGT__CDB_F_WRITE,
		.parse = scsitgt__sbc_parse_orwrite,
		.exec = scsitgt__sbc_atomic_exec,
	},
	[SBC_VERIFY_16] = {
		.name = "VERIFY (16)",
		.cdb_len = 16,
		.usage = { 0x8f, 0x16, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
			   0xff, 0xff, 0xff, 0xff, GROUP, 0x00 },
		.field_msb = RW_FIELDS,
		.flags = SCSITGT__CDB_F_MEDIUM,
		.parse = scsitgt__sbc_parse_verify,
		.exec = scsitgt__sbc_verify,
	},
	[SBC_PRE_FETCH_16] = {
		.name = "PRE-FETCH (16)",
		.cdb_len = 16,
		.usage = { 0x90, 0x02, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
			   0xff, 0xff, 0xff, 0xff, GROUP, 0x00 },
		.flags = SCSITGT__CDB_F_MEDIUM,
		.parse = scsitgt__sbc_parse_prefetch,
		.exec = scsitgt__sbc_prefetch,
	},
	[SBC_SYNCHRONIZE_CACHE_16] = {
		.name = "SYNCHRONIZE CACHE (16)",
		.cdb_len = 16,
		.pr = SCSITGT__PR_WRITE,
		.usage = { 0x91, 0x06, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
			   0xff, 0xff, 0xff, 0xff, GROUP, 0x00 },
		.flags = SCSITGT__CDB_F_MEDIUM,
		.parse = scsitgt__sbc_parse_sync_cache,
		.exec = scsitgt__sbc_sync_cache,
	},
	/* SBC-4 §5.51: as WRITE SAME (10), plus NDOB in bit 0. */
	[SBC_WRITE_SAME_16] = {
		.name = "WRITE SAME (16)",
		.cdb_len = 16,
		.usage = { 0x93, 0x09, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
			   0xff, 0xff, 0xff, 0xff, GROUP, 0x00 },
		.field_msb = WS_FIELDS,
		.flags = SCSITGT__CDB_F_MEDIUM | SCSITGT__CDB_F_WRITE | SCSITGT__CDB_F_THIN_BITS,
		.parse = scsitgt__sbc_parse_write_same,
		.exec = scsitgt__sbc_write_same,
		.thin_usage = { 0x00, 0x08 },
	},
	/* SBC-4 §5.49 WRITE ATOMIC (16): WRPROTECT (refused), DPO, FUA; ATOMIC BOUNDARY,
	 * TRANSFER LENGTH. */
	[SBC_WRITE_ATOMIC_16] = {
		.name = "WRITE ATOMIC (16)",
		.cdb_len = 16,
		.usage = { 0x9c, 0x18, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
			   0xff, 0xff, 0xff, 0xff, GROUP, 0x00 },
		.field_msb = RW_FIELDS,
		.flags = SCSITGT__CDB_F_MEDIUM | SCSITGT__CDB_F_WRITE | SCSITGT__CDB_F_ATOMIC,
		.parse = scsitgt__sbc_parse_write_atomic,
		.exec = scsitgt__sbc_atomic_exec,
	},
	[SBC_SERVICE_ACTION_IN_16] = {
		.name = "SERVICE ACTION IN (16)",
		.cdb_len = 16,
		.sa_rows = sai16_rows,
		.sa_count = 0x20,
		.has_sa = true,
	},
	/* SPC-2 §7.21-7.24: logical unit reservations only; the obsolete third-party and extent
	 * fields are refused. */
	[SPC_RESERVE_6] = {
		.name = "RESERVE (6)",
		.cdb_len = 6,
		.usage = { 0x16, 0x00, 0x00, 0x00, 0x00, 0x00 },
		.pr = SCSITGT__PR_RESERVE,
		.parse = scsitgt__pr_parse_reserve,
		.exec = scsitgt__pr_reserve,
	},
	[SPC_RELEASE_6] = {
		.name = "RELEASE (6)",
		.cdb_len = 6,
		.usage = { 0x17, 0x00, 0x00, 0x00, 0x00, 0x00 },
		.pr = SCSITGT__PR_RELEASE,
		.parse = scsitgt__pr_parse_reserve,
		.exec = scsitgt__pr_release,
	},
	[SPC_RESERVE_10] = {
		.name = "RESERVE (10)",
		.cdb_len = 10,
		.usage = { 0x56, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00 },
		.pr = SCSITGT__PR_RESERVE,
		.parse = scsitgt__pr_parse_reserve,
		.exec = scsitgt__pr_reserve,
	},
	[SPC_RELEASE_10] = {
		.name = "RELEASE (10)",
		.cdb_len = 10,
		.usage = { 0x57, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00 },
		.pr = SCSITGT__PR_RELEASE,
		.parse = scsitgt__pr_parse_reserve,
		.exec = scsitgt__pr_release,
	},
	[SPC_PERSISTENT_RESERVE_IN] = {
		.name = "PERSISTENT RESERVE IN",
		.cdb_len = 10,
		.sa_rows = pr_in_rows,
		.sa_count = 0x20,
		.has_sa = true,
	},
	[SPC_PERSISTENT_RESERVE_OUT] = {
		.name = "PERSISTENT RESERVE OUT",
		.cdb_len = 10,
		.sa_rows = pr_out_rows,
		.sa_count = 0x20,
		.has_sa = true,
	},
	/* third-party copy. */
	[SPC_EXTENDED_COPY] = {
		.name = "EXTENDED COPY",
		.cdb_len = 16,
		.sa_rows = xcopy_out_rows,
		.sa_count = 0x20,
		.has_sa = true,
	},
	[SPC_RECEIVE_COPY_RESULTS] = {
		.name = "RECEIVE COPY RESULTS",
		.cdb_len = 16,
		.sa_rows = xcopy_in_rows,
		.sa_count = 0x20,
		.has_sa = true,
	},
	[SPC_REPORT_LUNS] = {
		.name = "REPORT LUNS",
		.cdb_len = 12,
		.pr = SCSITGT__PR_ALLOWED,
		.usage = { 0xa0, 0x00, 0xff, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00 },
		.flags = SCSITGT__CDB_F_NO_LUN | SCSITGT__CDB_F_ALLOW_UA |
			 SCSITGT__CDB_F_ALLOW_STANDBY,
		.parse = scsitgt__spc_parse_report_luns,
		.exec = scsitgt__spc_report_luns,
	},
	[SPC_MAINTENANCE_IN] = {
		.name = "MAINTENANCE IN",
		.cdb_len = 12,
		.sa_rows = maint_in_rows,
		.sa_count = 0x20,
		.has_sa = true,
	},
	[SPC_MAINTENANCE_OUT] = {
		.name = "MAINTENANCE OUT",
		.cdb_len = 12,
		.sa_rows = maint_out_rows,
		.sa_count = 0x20,
		.has_sa = true,
	},
	[SBC_READ_12] = {
		.name = "READ (12)",
		.cdb_len = 12,
		.usage = { 0xa8, RW_FLAGS, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
			   GROUP, 0x00 },
		.field_msb = RW_FIELDS,
		.flags = SCSITGT__CDB_F_MEDIUM,
		.parse = scsitgt__sbc_parse_rw,
		.exec = scsitgt__sbc_rw,
	},
	[SBC_VERIFY_12] = {
		.name = "VERIFY (12)",
		.cdb_len = 12,
		.usage = { 0xaf, 0x16, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, GROUP, 0x00 },
		.field_msb = RW_FIELDS,
		.flags = SCSITGT__CDB_F_MEDIUM,
		.parse = scsitgt__sbc_parse_verify,
		.exec = scsitgt__sbc_verify,
	},
	[SBC_WRITE_12] = {
		.name = "WRITE (12)",
		.cdb_len = 12,
		.usage = { 0xaa, RW_FLAGS, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
			   GROUP, 0x00 },
		.field_msb = RW_FIELDS,
		.flags = SCSITGT__CDB_F_MEDIUM | SCSITGT__CDB_F_WRITE,
		.parse = scsitgt__sbc_parse_rw,
		.exec = scsitgt__sbc_rw,
	},	/* SBC-4 §5.19: as (10) in byte 1, ADDRESS DESCRIPTOR INDEX, ALLOCATION LENGTH. */
	[SBC_READ_DEFECT_DATA_12] = {
		.name = "READ DEFECT DATA (12)",
		.cdb_len = 12,
		.usage = { 0xb7, 0x1f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00 },
		.parse = scsitgt__sbc_parse_read_defect,
		.exec = scsitgt__sbc_read_defect,
	},

};

size_t scsitgt__cdb_group_len(uint8_t opcode)
{
	/* SPC-5 §4.2.5.1 Table 4: the group code is the top three bits. */
	switch (opcode >> 5) {
	case 0:
		return 6;
	case 1:
	case 2:
		return 10;
	case 4:
		return 16;
	case 5:
		return 12;
	default:
		return 0;
	}
}

const struct scsitgt__cdb_def *scsitgt__cdb_lookup(const uint8_t *cdb, size_t cdb_len)
{
	const struct scsitgt__cdb_def *row;

	if (cdb_len == 0)
		return NULL;
	row = &cdb_table[cdb[0]];
	if (row->name == NULL)
		return NULL;
	if (row->has_sa) {
		uint8_t sa;

		if (cdb_len < 2)
			return NULL;
		sa = cdb[1] & 0x1f;
		if (sa >= row->sa_count || row->sa_rows[sa].name == NULL)
			return NULL;
		row = &row->sa_rows[sa];
	}
	return row;
}

bool scsitgt__cdb_lun_offers(const struct scsitgt__cdb_def *row, const struct scsitgt_lun *lun)
{
	/* SBC-4 §4.29: atomic writes only where the backend stores a write all or none. */
	return !(row->flags & SCSITGT__CDB_F_ATOMIC) || lun == NULL ||
	       (lun->ops.flags & SCSITGT_BACKEND_ATOMIC_WRITE);
}

bool scsitgt__cdb_has_sa(uint8_t opcode)
{
	return cdb_table[opcode].name != NULL && cdb_table[opcode].has_sa;
}

bool scsitgt__cdb_supported(uint8_t opcode, uint8_t sa)
{
	uint8_t cdb[2] = { opcode, sa };

	return scsitgt__cdb_lookup(cdb, sizeof(cdb)) != NULL;
}

const struct scsitgt__cdb_def *scsitgt__cdb_iter(unsigned int *i, uint8_t *opcode, uint16_t *sa)
{
	/* The cursor packs the opcode in bits 15..8 and the service action in bits 7..0. */
	while (*i < 256u * 256u) {
		unsigned int op = *i >> 8, s = *i & 0xff;
		const struct scsitgt__cdb_def *row = &cdb_table[op];

		if (row->name == NULL) {
			*i = (op + 1) << 8;
			continue;
		}
		if (!row->has_sa) {
			*i = (op + 1) << 8;
			*opcode = (uint8_t)op;
			*sa = 0;
			return row;
		}
		if (s >= row->sa_count) {
			*i = (op + 1) << 8;
			continue;
		}
		(*i)++;
		if (row->sa_rows[s].name != NULL) {
			*opcode = (uint8_t)op;
			*sa = (uint16_t)s;
			return &row->sa_rows[s];
		}
	}
	return NULL;
}

/* SPC-5 §4.2.5.1: reserved bits (those @usage does not allow) must be zero; report the first
 * offending byte and bit. */
static enum scsitgt__sense_reason cdb_check_usage(struct scsitgt__cmd *cmd,
						  const struct scsitgt__cdb_def *row,
						  const uint8_t *usage)
{
	for (unsigned int i = 1; i < row->cdb_len; i++) {
		uint8_t bad = cmd->cdb[i] & (uint8_t)~usage[i];

		if (bad) {
			int bit = 7;

			while (!(bad & (1u << bit)))
				bit--;
			/* Inside a refused multi-bit field, point at its first bit: walk up
			 * through refused bits to the field's marked MSB, if there is one. */
			for (int b = bit; b <= 7 && !(usage[i] & (1u << b)); b++) {
				if (row->field_msb[i] & (1u << b)) {
					bit = b;
					break;
				}
			}
			return scsitgt__cmd_bad_cdb_field(cmd, (uint16_t)i, bit);
		}
	}
	return SCSITGT__SR_OK;
}

/* The usage mask of @row on @lun (REPORT SUPPORTED OPERATION CODES, the reserved-bit check):
 * without logical block provisioning the thin_usage bits are reserved. */
void scsitgt__cdb_usage(const struct scsitgt__cdb_def *row, const struct scsitgt_lun *lun,
			uint8_t usage[16])
{
	bool thin = lun && scsitgt__sbc_lbpme(lun);

	for (unsigned int i = 0; i < 16; i++)
		usage[i] = (uint8_t)(row->usage[i] &
				     ~((row->flags & SCSITGT__CDB_F_THIN_BITS) && !thin ?
					       row->thin_usage[i] :
					       0));
}

static enum scsitgt__sense_reason cdb_check_reserved(struct scsitgt__cmd *cmd,
						     const struct scsitgt__cdb_def *row)
{
	uint8_t usage[16];

	/* Every command: a bit the row's own mask refuses (the field pointer is worked out
	 * only then, out of line). */
	for (unsigned int i = 1; i < row->cdb_len; i++)
		if (cmd->cdb[i] & (uint8_t)~row->usage[i])
			return cdb_check_usage(cmd, row, row->usage);
	/* WRITE SAME's UNMAP on a LUN without provisioning; a plain READ or WRITE stops at
	 * the flag. */
	if (!(row->flags & SCSITGT__CDB_F_THIN_BITS) || scsitgt__sbc_lbpme(cmd->lun))
		return SCSITGT__SR_OK;
	scsitgt__cdb_usage(row, cmd->lun, usage);
	return cdb_check_usage(cmd, row, usage);
}

/*
 * Whether a medium-write command meets a write-protected LUN (SBC-4 §4.11: the LUN's
 * read-only flag, SWP of the control mode page, SPC-5 §7.5.8, or a read-only mapping for the
 * initiator). A LUN without its medium
 * answers NOT READY instead, further on.
 */
static bool cdb_write_protected(const struct scsitgt__cmd *cmd, const struct scsitgt__cdb_def *row)
{
	const struct scsitgt_lun *lun = cmd->lun;

	return lun && (row->flags & SCSITGT__CDB_F_WRITE) && lun->medium.present &&
	       scsitgt__lun_write_protected(lun, cmd->sess);
}

/* Steps 4 to 6 below: the port group's access state (SPC-5 §5.16.2.4), reservations (SPC-5
 * §5.13), write protection. */
static enum scsitgt__sense_reason cdb_check_access(struct scsitgt__cmd *cmd,
						   const struct scsitgt__cdb_def *row)
{
	enum scsitgt__sense_reason r;

	r = scsitgt__alua_check(cmd, row);
	if (r != SCSITGT__SR_OK)
		return r;
	r = scsitgt__pr_check(cmd);
	if (r != SCSITGT__SR_OK)
		return r;
	if (cdb_write_protected(cmd, row))
		return SCSITGT__SR_WRITE_PROTECTED;
	return SCSITGT__SR_OK;
}

/* Step 8 below: the medium absent or stopped, a sanitize or a self-test in progress. */
static enum scsitgt__sense_reason cdb_check_medium(struct scsitgt__cmd *cmd,
						   const struct scsitgt__cdb_def *row)
{
	enum scsitgt__sense_reason r;

	if (cmd->lun == NULL)
		return SCSITGT__SR_OK;
	if ((row->flags & SCSITGT__CDB_F_MEDIUM) && !cmd->lun->medium.present)
		return SCSITGT__SR_NOT_READY_MEDIUM_ABSENT;
	if ((row->flags & SCSITGT__CDB_F_MEDIUM) && cmd->lun->medium.stopped)
		return SCSITGT__SR_NOT_READY_INIT_REQUIRED;
	/* SBC-4 §4.33: a sanitize in progress or failed (sbc_sanitize.c). */
	if (cmd->lun->sanitize.state) {
		r = scsitgt__sanitize_check(cmd, row);
		if (r != SCSITGT__SR_OK)
			return r;
	}
	/* SPC-5 §6.42: a self-test in progress (spc_selftest.c). */
	if (cmd->xflags & SCSITGT__LUN_XF_SELFTEST)
		return scsitgt__selftest_check(cmd, row);
	return SCSITGT__SR_OK;
}

/*
 * The order in which a command's conditions are checked, in this one place (docs/scsi.md,
 * "Order of checks"):
 *  1. the addressed LUN exists (or the opcode needs none), SPC-5 §4.5.5.2;
 *  2. the opcode and service action are known, the CDB is long enough;
 *  3. unit attention (SAM-5 §5.14), ACA task attribute (REQUEST SENSE and REPORT LUNS
 *     clear a condition only when they run, past every step below: core/ua.c);
 *  4. ALUA access state of the port group (SPC-5 §5.16.2.4);
 *  5. reservation conflict (SPC-5 §5.13);
 *  6. write protection of a medium-write command (DATA PROTECT, WRITE PROTECTED), before any
 *     field of the CDB is looked at, as LIO and libiscsi's ReadOnly tests expect;
 *  7. reserved bits and unsupported flags (INVALID FIELD IN CDB with the field pointer);
 *  8. the medium: absent, stopped, sanitize or self-test in progress (NOT READY ...);
 *  9. the command's own fields: parse (LBA range, lengths, modes);
 * then the command joins the LUN's task set. The transport's data length is checked after
 * this (scsitgt__cmd_fit_data_out()), and the backend may still refuse a write (-EROFS).
 */
enum scsitgt__sense_reason scsitgt__cdb_parse(struct scsitgt__cmd *cmd)
{
	const struct scsitgt__cdb_def *row;
	enum scsitgt__sense_reason r;

	row = scsitgt__cdb_lookup(cmd->cdb, cmd->cdb_len);
	if (row != NULL && !scsitgt__cdb_lun_offers(row, cmd->lun))
		row = NULL;
	if (row == NULL) {
		/* A missing LUN takes precedence over an unknown opcode (SPC-5 §4.5.5.2). */
		if (cmd->lun == NULL && cmd->cdb_len && cmd->cdb[0] != SPC_INQUIRY)
			return SCSITGT__SR_LUN_NOT_SUPPORTED;
		/* A pending unit attention comes before the opcode (SAM-5 §5.14). */
		r = scsitgt__ua_check(cmd);
		if (r != SCSITGT__SR_OK)
			return r;
		if (cmd->cdb_len > 1 && cdb_table[cmd->cdb[0]].has_sa)
			return scsitgt__cmd_bad_cdb_field(cmd, 1, 4);
		return SCSITGT__SR_INVALID_OPCODE;
	}
	cmd->def = row;
	if (cmd->lun == NULL && !(row->flags & SCSITGT__CDB_F_NO_LUN))
		return SCSITGT__SR_LUN_NOT_SUPPORTED;
	if (cmd->cdb_len < row->cdb_len)
		return SCSITGT__SR_INVALID_OPCODE;
	cmd->exec = row->exec;
	/* the LUN's armed slow paths, loaded once for every step below (core.h). */
	cmd->xflags = cmd->lun ? scsitgt__lun_xflags(cmd->lun) : 0;
	/* SAM-5 §5.14, SPC-5 §5.13: unit attentions, then reservations; the UA step may
	 * replace cmd->exec (REQUEST SENSE reports the condition, REPORT LUNS clears one). */
	r = scsitgt__ua_check(cmd);
	if (r != SCSITGT__SR_OK)
		return r;
	/* SAM-5 §8.6.5: ACA tasks need an ACA condition, which never exists without NACA. */
	if (cmd->task_attr == SCSITGT__TASK_ACA)
		return SCSITGT__SR_INVALID_FIELD_IN_CDB;
	r = cdb_check_access(cmd, row);
	if (r != SCSITGT__SR_OK)
		return r;
	r = cdb_check_reserved(cmd, row);
	if (r != SCSITGT__SR_OK)
		return r;
	r = cdb_check_medium(cmd, row);
	if (r != SCSITGT__SR_OK)
		return r;
	cmd->dir = SCSITGT__DIR_NONE;
	cmd->xfer_len = 0;
	if (row->parse) {
		r = row->parse(cmd);
		if (r != SCSITGT__SR_OK)
			return r;
	}
	/* Accepted: the command joins the LUN's task set (SAM-5 §8.6, core/order.c). */
	scsitgt__order_enter(cmd);
	return SCSITGT__SR_OK;
}

/*
 * A task held back in the LUN's task set behind an ORDERED or HEAD OF QUEUE task starts long
 * after parse (core/order.c, scsitgt__cmd_unpark()): the task ahead of it may have changed
 * what parse decided from the LUN's and the target's shared state, and SAM-5 §8.6 has it
 * processed after that task (a PERSISTENT RESERVE OUT PREEMPT sent ORDERED is complete
 * before the newer WRITE of the preempted nexus is processed). Steps 4, 5, 6 and 8 of parse
 * are taken again on the state of now: ALUA, reservations, write protection, the medium,
 * sanitize, self-test (the caller adds the offline state). Not step 3: SAM-5 §5.14 reports a
 * unit attention condition to a command received while it is pending; this task was received
 * before a condition established while it waited, which stays pending for the nexus's next
 * command (and is not cleared here). Not steps 1, 2, 7 and 9: the CDB did not change.
 */
enum scsitgt__sense_reason scsitgt__cdb_recheck(struct scsitgt__cmd *cmd)
{
	const struct scsitgt__cdb_def *row = cmd->def;
	enum scsitgt__sense_reason r;

	if (cmd->lun == NULL || row == NULL)
		return SCSITGT__SR_OK;
	cmd->xflags = scsitgt__lun_xflags(cmd->lun);
	r = cdb_check_access(cmd, row);
	if (r != SCSITGT__SR_OK)
		return r;
	return cdb_check_medium(cmd, row);
}

enum scsitgt__sense_reason scsitgt__parse_alloc16(struct scsitgt__cmd *cmd, unsigned off)
{
	cmd->dir = SCSITGT__DIR_IN;
	cmd->xfer_len = get_be16(&cmd->cdb[off]);
	return SCSITGT__SR_OK;
}

enum scsitgt__sense_reason scsitgt__parse_alloc32(struct scsitgt__cmd *cmd, unsigned off)
{
	uint32_t len = get_be32(&cmd->cdb[off]);

	cmd->dir = SCSITGT__DIR_IN;
	/* Responses we build are small; larger allocation lengths just mean "all of it". */
	cmd->xfer_len = len > SCSITGT__MAX_XFER_BYTES ? SCSITGT__MAX_XFER_BYTES : len;
	return SCSITGT__SR_OK;
}

void scsitgt__cmd_respond(struct scsitgt__cmd *cmd, const void *data, size_t len)
{
	size_t n = len < cmd->xfer_len ? len : cmd->xfer_len;

	if (n)
		memcpy(cmd->buf, data, n);
	cmd->data_len = (uint32_t)n;
}
