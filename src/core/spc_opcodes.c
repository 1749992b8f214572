/* SPDX-License-Identifier: MIT */
/*
 * MAINTENANCE IN service actions describing the device server itself:
 * REPORT SUPPORTED OPERATION CODES (SPC-5 §6.35) and REPORT SUPPORTED TASK MANAGEMENT
 * FUNCTIONS (SPC-5 §6.36). Both answers are generated: the first from the CDB table
 * (scsitgt__cdb_iter, usage masks), the second from the TMFs core/tmf.c executes.
 */
#include <stdlib.h>
#include <string.h>

#include "core/alua.h"
#include "core/cdb.h"
#include "core/fabric.h"
#include "core/pr.h"
#include "core/scsi_spec.h"
#include "core/sbc.h"
#include "core/spc.h"
#include "util/be.h"

/* SPC-5 §6.35.2 Table 259: the all_commands descriptor; §6.35.4 Table 262 timeouts. */
#define RSOC_DESC_LEN 8
#define RSOC_TIMEOUTS_LEN 12
/* The command timeouts descriptor's DESCRIPTOR LENGTH (bytes after the field). */
#define RSOC_TIMEOUTS_DLEN 0x0a
_Static_assert(RSOC_TIMEOUTS_DLEN + 2 == RSOC_TIMEOUTS_LEN, "timeouts descriptor length");
/* The one_command header (SPC-5 §6.35.3 Table 260) before the CDB USAGE DATA. */
#define RSOC_ONE_HDR 4

/* SPC-5 §6.36 Table 263: REPORT SUPPORTED TASK MANAGEMENT FUNCTIONS data lengths. */
#define RSTMF_LEN 4
#define RSTMF_EXT_LEN 16

/*
 * A command timeouts descriptor (SPC-5 §6.35.4). NOMINAL and RECOMMENDED COMMAND TIMEOUT stay
 * zero ("not specified"): how long a command takes depends on the host's backend, which does
 * not tell us.
 */
static void rsoc_put_timeouts(uint8_t *p)
{
	memset(p, 0, RSOC_TIMEOUTS_LEN);
	put_be16(p, RSOC_TIMEOUTS_DLEN);
}

/* SPC-5 §6.35.1: RCTD, REPORTING OPTIONS; byte 1 service action was matched by the table. */
enum scsitgt__sense_reason scsitgt__spc_parse_rsoc(struct scsitgt__cmd *cmd)
{
	uint8_t opts = cmd->cdb[2] & 0x07;

	if (opts > RSOC_OPCODE_ANY_SA)
		return scsitgt__cmd_bad_cdb_field(cmd, 2, 2);
	/* SPC-5 §6.35.1: ALLOCATION LENGTH is bytes 6..9. */
	return scsitgt__parse_alloc32(cmd, 6);
}

/* Rows this LUN offers: SCSITGT__CDB_F_THIN rows need logical block provisioning,
 * SCSITGT__CDB_F_ATOMIC rows a backend with atomic writes, the target port group commands
 * ALUA, SPC-2 RESERVE/RELEASE local reservations (what their parse refuses is not listed
 * either). */
static bool rsoc_offered(const struct scsitgt__cmd *cmd, const struct scsitgt__cdb_def *row)
{
	return (!(row->flags & SCSITGT__CDB_F_THIN) || scsitgt__sbc_lbpme(cmd->lun)) &&
	       scsitgt__cdb_lun_offers(row, cmd->lun) &&
	       scsitgt__alua_offers(cmd->sess->tgt, row) && scsitgt__pr_offers(cmd->lun, row);
}

static void rsoc_all(struct scsitgt__cmd *cmd, bool rctd)
{
	size_t dlen = RSOC_DESC_LEN + (rctd ? RSOC_TIMEOUTS_LEN : 0);
	size_t rows = 0, n = 0, len;
	unsigned int it = 0;
	uint8_t op;
	uint16_t sa;
	const struct scsitgt__cdb_def *row;
	uint8_t *p;

	/*
	 * Room for every row, then one pass lists those this LUN offers: what it offers depends
	 * on state home may change meanwhile when this runs on a worker (the target's ALUA
	 * modes, a cluster reservation store), so a count made before such a change cannot size
	 * a list made after it.
	 */
	while (scsitgt__cdb_iter(&it, &op, &sa) != NULL)
		rows++;
	p = calloc(1, 4 + rows * dlen);
	if (p == NULL) {
		scsitgt__cmd_complete(cmd, SCSITGT__SR_BUSY);
		return;
	}
	it = 0;
	while ((row = scsitgt__cdb_iter(&it, &op, &sa)) != NULL) {
		/* SERVACTV: the opcode has service actions (a property of the opcode, so SA 0 of
		 * such an opcode is reported with SERVACTV set too). */
		uint8_t *d = &p[4 + n * dlen];
		bool sa_op;

		if (!rsoc_offered(cmd, row))
			continue;
		n++;
		sa_op = scsitgt__cdb_has_sa(op);
		d[0] = op;
		put_be16(&d[2], sa);
		d[5] = (uint8_t)((rctd ? 0x02 : 0) | (sa_op ? 0x01 : 0));
		put_be16(&d[6], row->cdb_len);
		if (rctd)
			rsoc_put_timeouts(&d[RSOC_DESC_LEN]);
	}
	len = 4 + n * dlen;
	put_be32(p, (uint32_t)(len - 4));
	scsitgt__cmd_respond(cmd, p, len);
	free(p);
	scsitgt__cmd_complete(cmd, SCSITGT__SR_OK);
}

static void rsoc_one(struct scsitgt__cmd *cmd, uint8_t opts, bool rctd)
{
	uint8_t op = cmd->cdb[3];
	uint16_t req_sa = get_be16(&cmd->cdb[4]);
	bool has_sa = scsitgt__cdb_has_sa(op);
	const struct scsitgt__cdb_def *row = NULL;
	uint8_t d[RSOC_ONE_HDR + 16 + RSOC_TIMEOUTS_LEN];
	size_t len = RSOC_ONE_HDR;

	/*
	 * SPC-5 §6.35.1 Table 257: 001b names an opcode without service actions, 010b one with
	 * them; asking either about the other kind is an invalid REQUESTED OPERATION CODE. 011b
	 * takes the service action only when the opcode has them, and a non-zero service action
	 * of an opcode without any is simply "not supported".
	 */
	if (opts == RSOC_OPCODE && has_sa)
		goto bad_opcode;
	if (opts == RSOC_OPCODE_SA && !has_sa) {
		uint8_t cdb0[2] = { op, 0 };
		const struct scsitgt__cdb_def *r0 = scsitgt__cdb_lookup(cdb0, sizeof(cdb0));

		/* An opcode this LUN does not offer at all is simply "not supported". */
		if (r0 != NULL && scsitgt__cdb_lun_offers(r0, cmd->lun))
			goto bad_opcode;
	}
	if (has_sa || opts == RSOC_OPCODE_SA) {
		/* Service actions are five bits wide (byte 1 bits 4..0) in every row we have. */
		if (req_sa <= 0x1f) {
			uint8_t cdb[2] = { op, (uint8_t)req_sa };

			row = scsitgt__cdb_lookup(cdb, sizeof(cdb));
		}
	} else if (opts == RSOC_OPCODE || req_sa == 0) {
		uint8_t cdb[2] = { op, 0 };

		row = scsitgt__cdb_lookup(cdb, sizeof(cdb));
	}

	memset(d, 0, sizeof(d));
	if (row && !rsoc_offered(cmd, row))
		row = NULL;
	if (row == NULL) {
		/* Not supported: SUPPORT 001b, CDB SIZE 0, no usage data (Table 260). */
		d[1] = RSOC_SUPPORT_NOT;
	} else {
		d[1] = (uint8_t)((rctd ? 0x80 : 0) | RSOC_SUPPORT_STANDARD);
		put_be16(&d[2], row->cdb_len);
		uint8_t usage[16];

		/* CDB USAGE DATA is the usage mask of the row on this LUN (SPC-5 §6.35.3): the
		 * bits the reserved-bit check lets through, no more (WRITE SAME's UNMAP only
		 * on a thin LUN). */
		scsitgt__cdb_usage(row, cmd->lun, usage);
		memcpy(&d[RSOC_ONE_HDR], usage, row->cdb_len);
		/* The service action field holds the service action itself (§6.35.3). */
		if (has_sa)
			d[RSOC_ONE_HDR + 1] = (uint8_t)((usage[1] & 0xe0) | (req_sa & 0x1f));
		len += row->cdb_len;
		if (rctd) {
			rsoc_put_timeouts(&d[len]);
			len += RSOC_TIMEOUTS_LEN;
		}
	}
	scsitgt__cmd_respond(cmd, d, len);
	scsitgt__cmd_complete(cmd, SCSITGT__SR_OK);
	return;

bad_opcode:
	scsitgt__cmd_bad_cdb_field(cmd, 3, 7);
	scsitgt__cmd_complete(cmd, SCSITGT__SR_INVALID_FIELD_IN_CDB);
}

void scsitgt__spc_rsoc(struct scsitgt__cmd *cmd)
{
	bool rctd = cmd->cdb[2] & 0x80;
	uint8_t opts = cmd->cdb[2] & 0x07;

	if (opts == RSOC_ALL)
		rsoc_all(cmd, rctd);
	else
		rsoc_one(cmd, opts, rctd);
}

/*
 * SPC-5 §6.36 REPORT SUPPORTED TASK MANAGEMENT FUNCTIONS. Byte 0: ATS (ABORT TASK), ATSS
 * (ABORT TASK SET), CACAS (CLEAR ACA, no: we have no ACA), CTSS (CLEAR TASK SET), LURS
 * (LOGICAL UNIT RESET), QTS (QUERY TASK), TRS (bit 1, obsolete TARGET RESET); byte 1: QAES
 * (QUERY ASYNCHRONOUS EVENT), QTSS (QUERY TASK SET), ITNRS (I_T NEXUS RESET). REPD asks for the
 * 16-byte extended form, which adds TMFTMOV and the timeouts (none reported).
 */
enum scsitgt__sense_reason scsitgt__spc_parse_rstmf(struct scsitgt__cmd *cmd)
{
	if (get_be32(&cmd->cdb[6]) < RSTMF_LEN)
		return scsitgt__cmd_bad_cdb_field(cmd, 6, -1);
	return scsitgt__parse_alloc32(cmd, 6);
}

void scsitgt__spc_rstmf(struct scsitgt__cmd *cmd)
{
	bool repd = cmd->cdb[2] & 0x80;
	uint8_t d[RSTMF_EXT_LEN];

	memset(d, 0, sizeof(d));
	/* What core/tmf.c executes: ABORT TASK, ABORT TASK SET, CLEAR TASK SET, LOGICAL UNIT
	 * RESET and the target resets (TRS); QUERY TASK and QUERY TASK SET. CLEAR ACA and QUERY
	 * ASYNCHRONOUS EVENT are answered "not supported" there, and iSCSI has no I_T NEXUS
	 * RESET function (RFC 7143 §11.5.1). */
	d[0] = 0x80 | 0x40 | 0x10 | 0x08 | 0x04 | 0x02; /* ATS ATSS CTSS LURS QTS TRS */
	d[1] = 0x02;					/* QTSS */
	if (repd)
		d[3] = RSTMF_EXT_LEN - 4; /* ADDITIONAL DATA LENGTH 0Ch */
	scsitgt__cmd_respond(cmd, d, repd ? RSTMF_EXT_LEN : RSTMF_LEN);
	scsitgt__cmd_complete(cmd, SCSITGT__SR_OK);
}
