/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "core/cdb.h"
#include "core/fabric.h"
#include "core/scsi_spec.h"
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
		/* Bytes 2..9 LBA and byte 14 PMI are obsolete in SBC-4 but checked as in SBC-3. */
		.usage = { 0x9e, 0x1f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
			   0xff, 0xff, 0xff, 0xff, 0x01, 0x00 },
		.flags = SCSITGT__CDB_F_MEDIUM | SCSITGT__CDB_F_ALLOW_STANDBY,
		.parse = scsitgt__sbc_parse_read_capacity16,
		.exec = scsitgt__sbc_read_capacity16,
	},
};

/* Usage of the block I/O CDBs: DPO, FUA and the obsolete FUA_NV (SBC-3; still sent by
 * initiators and conformance suites, and meaningless without a non-volatile cache) in byte 1;
 * RDPROTECT/WRPROTECT (no protection information, SBC-4 §4.22), RARC, bit 0 (obsolete, DLD2
 * in the 16-byte forms) are refused. GROUP NUMBER is bits 5..0 of its byte.
 * RDPROTECT/WRPROTECT is the 3-bit field topped by bit 7 of byte 1. */
#define RW_FLAGS 0x1a
#define GROUP 0x3f
#define RW_FIELDS { 0x00, 0x80 }

static const struct scsitgt__cdb_def cdb_table[256] = {
	[SPC_TEST_UNIT_READY] = {
		.name = "TEST UNIT READY",
		.cdb_len = 6,
		.usage = { 0x00, 0x00, 0x00, 0x00, 0x00, 0x00 },
		.flags = SCSITGT__CDB_F_MEDIUM | SCSITGT__CDB_F_ALLOW_STANDBY,
		.exec = scsitgt__spc_test_unit_ready,
	},
	[SPC_REQUEST_SENSE] = {
		.name = "REQUEST SENSE",
		.cdb_len = 6,
		.usage = { 0x03, 0x01, 0x00, 0x00, 0xff, 0x00 },
		.flags = SCSITGT__CDB_F_NO_LUN | SCSITGT__CDB_F_ALLOW_UA |
			 SCSITGT__CDB_F_ALLOW_STANDBY,
		.parse = scsitgt__spc_parse_request_sense,
		.exec = scsitgt__spc_request_sense,
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
		.usage = { 0x1b, 0x01, 0x00, 0x0f, 0xf7, 0x00 },
		.parse = scsitgt__sbc_parse_start_stop,
		.exec = scsitgt__sbc_start_stop,
	},
	[SPC_PREVENT_ALLOW_MEDIUM_REMOVAL] = {
		.name = "PREVENT ALLOW MEDIUM REMOVAL",
		.cdb_len = 6,
		.usage = { 0x1e, 0x00, 0x00, 0x00, 0x03, 0x00 },
		.parse = scsitgt__sbc_parse_prevent_allow,
		.exec = scsitgt__sbc_prevent_allow,
	},
	[SBC_READ_CAPACITY_10] = {
		.name = "READ CAPACITY (10)",
		.cdb_len = 10,
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
	/* SBC-4 §5.30: ANCHOR (byte 1 bit 0) is refused: we do not support anchored blocks. */
	[SBC_UNMAP] = {
		.name = "UNMAP",
		.cdb_len = 10,
		.usage = { 0x42, 0x00, 0x00, 0x00, 0x00, 0x00, GROUP, 0xff, 0xff, 0x00 },
		.flags = SCSITGT__CDB_F_MEDIUM | SCSITGT__CDB_F_WRITE,
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
		/* IMMED and the obsolete SYNC_NV (ignored); the obsolete RELADR is refused. */
		.usage = { 0x35, 0x06, 0xff, 0xff, 0xff, 0xff, GROUP, 0xff, 0xff, 0x00 },
		.flags = SCSITGT__CDB_F_MEDIUM,
		.parse = scsitgt__sbc_parse_sync_cache,
		.exec = scsitgt__sbc_sync_cache,
	},
	[SPC_MODE_SELECT_10] = {
		.name = "MODE SELECT (10)",
		.cdb_len = 10,
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
	[SBC_SYNCHRONIZE_CACHE_16] = {
		.name = "SYNCHRONIZE CACHE (16)",
		.cdb_len = 16,
		.usage = { 0x91, 0x06, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
			   0xff, 0xff, 0xff, 0xff, GROUP, 0x00 },
		.flags = SCSITGT__CDB_F_MEDIUM,
		.parse = scsitgt__sbc_parse_sync_cache,
		.exec = scsitgt__sbc_sync_cache,
	},
	[SBC_SERVICE_ACTION_IN_16] = {
		.name = "SERVICE ACTION IN (16)",
		.cdb_len = 16,
		.sa_rows = sai16_rows,
		.sa_count = 0x20,
		.has_sa = true,
	},
	[SPC_REPORT_LUNS] = {
		.name = "REPORT LUNS",
		.cdb_len = 12,
		.usage = { 0xa0, 0x00, 0xff, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00 },
		.flags = SCSITGT__CDB_F_NO_LUN | SCSITGT__CDB_F_ALLOW_UA |
			 SCSITGT__CDB_F_ALLOW_STANDBY,
		.parse = scsitgt__spc_parse_report_luns,
		.exec = scsitgt__spc_report_luns,
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
	[SBC_WRITE_12] = {
		.name = "WRITE (12)",
		.cdb_len = 12,
		.usage = { 0xaa, RW_FLAGS, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
			   GROUP, 0x00 },
		.field_msb = RW_FIELDS,
		.flags = SCSITGT__CDB_F_MEDIUM | SCSITGT__CDB_F_WRITE,
		.parse = scsitgt__sbc_parse_rw,
		.exec = scsitgt__sbc_rw,
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

/* SPC-5 §4.2.5.1: reserved bits must be zero; report the first offending byte and bit. */
static enum scsitgt__sense_reason cdb_check_reserved(struct scsitgt__cmd *cmd,
						     const struct scsitgt__cdb_def *row)
{
	for (unsigned int i = 1; i < row->cdb_len; i++) {
		uint8_t bad = cmd->cdb[i] & (uint8_t)~row->usage[i];

		if (bad) {
			int bit = 7;

			while (!(bad & (1u << bit)))
				bit--;
			/* Inside a refused multi-bit field, point at its first bit: walk up
			 * through refused bits to the field's marked MSB, if there is one. */
			for (int b = bit; b <= 7 && !(row->usage[i] & (1u << b)); b++) {
				if (row->field_msb[i] & (1u << b)) {
					bit = b;
					break;
				}
			}
			return scsitgt__cmd_bad_cdb_field(cmd, (uint16_t)i, bit);
		}
	}
	return SCSITGT_SR_OK;
}

enum scsitgt__sense_reason scsitgt__cdb_parse(struct scsitgt__cmd *cmd)
{
	const struct scsitgt__cdb_def *row;
	enum scsitgt__sense_reason r;

	row = scsitgt__cdb_lookup(cmd->cdb, cmd->cdb_len);
	if (row == NULL) {
		/* A missing LUN takes precedence over an unknown opcode (SPC-5 §4.5.5.2). */
		if (cmd->lun == NULL && cmd->cdb_len && cmd->cdb[0] != SPC_INQUIRY)
			return SCSITGT_SR_LUN_NOT_SUPPORTED;
		if (cmd->cdb_len > 1 && cdb_table[cmd->cdb[0]].has_sa)
			return scsitgt__cmd_bad_cdb_field(cmd, 1, 4);
		return SCSITGT_SR_INVALID_OPCODE;
	}
	cmd->def = row;
	if (cmd->lun == NULL && !(row->flags & SCSITGT__CDB_F_NO_LUN))
		return SCSITGT_SR_LUN_NOT_SUPPORTED;
	if (cmd->cdb_len < row->cdb_len)
		return SCSITGT_SR_INVALID_OPCODE;
	r = cdb_check_reserved(cmd, row);
	if (r != SCSITGT_SR_OK)
		return r;
	if (cmd->lun) {
		if ((row->flags & SCSITGT__CDB_F_MEDIUM) && !cmd->lun->medium_present)
			return SCSITGT_SR_NOT_READY_MEDIUM_ABSENT;
		if ((row->flags & SCSITGT__CDB_F_MEDIUM) && cmd->lun->stopped)
			return SCSITGT_SR_NOT_READY_INIT_REQUIRED;
	}
	cmd->exec = row->exec;
	cmd->dir = SCSITGT__DIR_NONE;
	cmd->xfer_len = 0;
	if (row->parse) {
		r = row->parse(cmd);
		if (r != SCSITGT_SR_OK)
			return r;
	}
	/* Write protection is checked after parse so that bad fields are reported first. */
	if (cmd->lun && (row->flags & SCSITGT__CDB_F_WRITE) &&
	    ((cmd->lun->flags & SCSITGT_LUN_READ_ONLY) || cmd->lun->mode.swp))
		return SCSITGT_SR_WRITE_PROTECTED;
	return SCSITGT_SR_OK;
}

enum scsitgt__sense_reason scsitgt__parse_alloc16(struct scsitgt__cmd *cmd, unsigned off)
{
	cmd->dir = SCSITGT__DIR_IN;
	cmd->xfer_len = get_be16(&cmd->cdb[off]);
	return SCSITGT_SR_OK;
}

enum scsitgt__sense_reason scsitgt__parse_alloc32(struct scsitgt__cmd *cmd, unsigned off)
{
	uint32_t len = get_be32(&cmd->cdb[off]);

	cmd->dir = SCSITGT__DIR_IN;
	/* Responses we build are small; larger allocation lengths just mean "all of it". */
	cmd->xfer_len = len > SCSITGT__MAX_XFER_BYTES ? SCSITGT__MAX_XFER_BYTES : len;
	return SCSITGT_SR_OK;
}

void scsitgt__cmd_respond(struct scsitgt__cmd *cmd, const void *data, size_t len)
{
	size_t n = len < cmd->xfer_len ? len : cmd->xfer_len;

	if (n)
		memcpy(cmd->buf, data, n);
	cmd->data_len = (uint32_t)n;
}
