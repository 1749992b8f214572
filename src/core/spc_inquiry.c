/* SPDX-License-Identifier: MIT */
/* SPC-5 §6.7 INQUIRY: standard inquiry data, and the dispatch to the VPD pages of spc_vpd.c. */
#include <string.h>

#include "core/alua.h"
#include "core/cdb.h"
#include "core/fabric.h"
#include "core/scsi_spec.h"
#include "core/spc.h"
#include "util/be.h"

/* SPC-5 §6.7.2 Table 148: we return the 96-byte form, which ends after the eight VERSION
 * DESCRIPTOR fields (bytes 58..73) and the reserved bytes 74..95. */
#define INQ_STD_LEN 96
_Static_assert(58 + 8 * 2 <= INQ_STD_LEN, "version descriptors fit the standard data");

/* SPC-5 §6.7.2: VERSION 07h claims conformance to SPC-5, 06h to SPC-4 (LUN flag
 * SCSITGT_LUN_CLAIM_SPC4, for initiators that refuse a VERSION newer than they know). */
#define INQ_VERSION_SPC5 0x07
#define INQ_VERSION_SPC4 0x06
/* RESPONSE DATA FORMAT 2: the only value SPC-5 allows. */
#define INQ_RESPONSE_FORMAT 0x02

/* Version descriptors (SPC-5 §6.7.2 Table 150), "no version claimed" variants. */
enum {
	VD_SAM5 = 0x00a0,
	VD_SPC4 = 0x0460,
	VD_SPC5 = 0x05c0,
	VD_SBC3 = 0x04c0,
	VD_SBC4 = 0x0600,
	VD_SRP = 0x0940,
	VD_ISCSI = 0x0960,
};

enum scsitgt__sense_reason scsitgt__spc_parse_inquiry(struct scsitgt__cmd *cmd)
{
	bool evpd = cmd->cdb[1] & 0x01;

	/* SPC-5 §6.7.1: with EVPD zero the PAGE CODE field shall be zero. */
	if (!evpd && cmd->cdb[2] != 0)
		return scsitgt__cmd_bad_cdb_field(cmd, 2, 7);
	return scsitgt__parse_alloc16(cmd, 3);
}

/* Copy an identification string left-aligned and padded with spaces (SPC-5 §4.3.1). */
static void inq_put_ascii(uint8_t *dst, size_t len, const char *s)
{
	size_t n = strlen(s);

	memset(dst, ' ', len);
	memcpy(dst, s, n < len ? n : len);
}

static void inq_standard(struct scsitgt__cmd *cmd)
{
	const struct scsitgt_lun *lun = cmd->lun;
	uint8_t d[INQ_STD_LEN];
	uint8_t *vd = &d[58];
	bool spc4 = lun && (lun->flags & SCSITGT_LUN_CLAIM_SPC4);

	memset(d, 0, sizeof(d));
	if (lun == NULL) {
		/* SPC-5 §6.7.2: PERIPHERAL QUALIFIER 011b with DEVICE TYPE 1Fh means "no logical
		 * unit here"; the command still completes with GOOD status. */
		d[0] = SPC_PQ_NO_LUN << 5 | 0x1f;
	} else {
		d[0] = SPC_PDT_DIRECT_ACCESS;
		d[1] = (lun->flags & SCSITGT_LUN_REMOVABLE) ? 0x80 : 0x00; /* RMB */
	}
	d[2] = spc4 ? INQ_VERSION_SPC4 : INQ_VERSION_SPC5;
	/* NORMACA 0 (no ACA), HISUP 0 (flat single-level LUNs only), RESPONSE DATA FORMAT 2. */
	d[3] = INQ_RESPONSE_FORMAT;
	/* ADDITIONAL LENGTH: the bytes after byte 4, i.e. n - 4 with n = 95 the last byte. */
	d[4] = INQ_STD_LEN - 5;
	/* Byte 5: SCCS, ACC, 3PC and PROTECT zero; TPGS (bits 5..4) from the target's ALUA
	 * modes (SPC-5 §6.7.2, core/alua.c). */
	d[5] = (uint8_t)(scsitgt__alua_tpgs(cmd->sess->tgt) << 4);
	/* 3PC, the LUN is a copy manager (EXTENDED COPY, core/xcopy.c; SPC-5 §6.7.2). */
	if (lun && scsitgt__cdb_supported(SPC_EXTENDED_COPY, 0))
		d[5] |= 0x08;
	/* Byte 6: MULTIP when the target port groups list several ports (SPC-5 §6.7.2: a
	 * multi-port device; core/alua.c), ENCSERV and the rest zero. */
	d[6] = scsitgt__alua_multiport(cmd->sess->tgt) ? 0x10 : 0x00;
	/* Byte 7: CMDQUE, we queue commands (SAM-5 §8.6 task attributes). */
	d[7] = 0x02;
	if (lun) {
		inq_put_ascii(&d[8], 8, lun->ident.vendor);
		inq_put_ascii(&d[16], 16, lun->ident.product);
		inq_put_ascii(&d[32], 4, lun->ident.revision);
	} else {
		memset(&d[8], ' ', 28);
	}
	put_be16(&vd[0], VD_SAM5);
	put_be16(&vd[2], spc4 ? VD_SPC4 : VD_SPC5);
	put_be16(&vd[4], VD_SBC4);
	/* SBC-4 keeps every SBC-3 command and page we implement (the SBC-3 form of the block
	 * limits page included); initiators that look for SBC-3 by its descriptor find it. */
	put_be16(&vd[6], VD_SBC3);
	if (cmd->sess->protocol_id == SCSITGT__PROTO_ISCSI)
		put_be16(&vd[8], VD_ISCSI);
	else if (cmd->sess->protocol_id == SCSITGT__PROTO_SRP)
		put_be16(&vd[8], VD_SRP);
	scsitgt__cmd_respond(cmd, d, sizeof(d));
	scsitgt__cmd_complete(cmd, SCSITGT__SR_OK);
}

static void inq_vpd(struct scsitgt__cmd *cmd)
{
	uint8_t buf[SCSITGT__VPD_MAX];
	size_t len;

	if (cmd->lun == NULL) {
		/* VPD pages describe a logical unit; there is none to describe. The standard data
		 * above is the SPC-5 §6.7.2 answer for a missing LUN, and only it. */
		scsitgt__cmd_complete(cmd, SCSITGT__SR_LUN_NOT_SUPPORTED);
		return;
	}
	len = scsitgt__vpd_build(cmd, cmd->cdb[2], buf);
	if (len == 0) {
		/* SPC-5 §6.7.1: an unsupported VPD page is an invalid PAGE CODE field. */
		scsitgt__cmd_bad_cdb_field(cmd, 2, 7);
		scsitgt__cmd_complete(cmd, SCSITGT__SR_INVALID_FIELD_IN_CDB);
		return;
	}
	scsitgt__cmd_respond(cmd, buf, len);
	scsitgt__cmd_complete(cmd, SCSITGT__SR_OK);
}

void scsitgt__spc_inquiry(struct scsitgt__cmd *cmd)
{
	if (cmd->cdb[1] & 0x01)
		inq_vpd(cmd);
	else
		inq_standard(cmd);
}
