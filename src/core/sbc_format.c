/* SPDX-License-Identifier: MIT */
/*
 * Medium maintenance commands of a disk that has no physical medium to maintain:
 * READ DEFECT DATA (10)/(12) (SBC-4 §5.18/§5.19) report empty defect lists, and FORMAT UNIT
 * (SBC-4) validates its fields and parameter list header and completes at once.
 *
 * FORMAT UNIT and the data: without an initialization pattern (IP 0) SBC-4 leaves the
 * contents of the logical blocks after a format vendor specific; ours keep their data, since
 * a backend file is not reformatted. Initialization patterns are not supported (IP refused).
 */
#include <string.h>

#include "core/cdb.h"
#include "core/fabric.h"
#include "core/scsi_spec.h"
#include "core/sbc.h"
#include "util/be.h"

/* SBC-4 Table 40 DEFECT LIST FORMAT: 111b is the only reserved value. */
#define DLF_RESERVED 0x7
#define RDD10_HDR 4
#define RDD12_HDR 8
/* SBC-4 §5.3.2 Tables 36/37: short and long parameter list headers. */
#define FMT_SHORT_HDR 4
#define FMT_LONG_HDR 8

enum scsitgt__sense_reason scsitgt__sbc_parse_read_defect(struct scsitgt__cmd *cmd)
{
	bool ten = cmd->cdb[0] == SBC_READ_DEFECT_DATA_10;
	uint8_t b = ten ? cmd->cdb[2] : cmd->cdb[1];

	if ((b & 0x07) == DLF_RESERVED)
		return scsitgt__cmd_bad_cdb_field(cmd, ten ? 2 : 1, 2);
	return ten ? scsitgt__parse_alloc16(cmd, 7) : scsitgt__parse_alloc32(cmd, 6);
}

void scsitgt__sbc_read_defect(struct scsitgt__cmd *cmd)
{
	bool ten = cmd->cdb[0] == SBC_READ_DEFECT_DATA_10;
	uint8_t b = ten ? cmd->cdb[2] : cmd->cdb[1];
	uint8_t d[RDD12_HDR];

	memset(d, 0, sizeof(d));
	/* PLISTV/GLISTV: the lists asked for (REQ_PLIST/REQ_GLIST) are returned, and empty;
	 * DEFECT LIST FORMAT echoes the requested one, in which an empty list is valid. The
	 * (12) header's GENERATION CODE 0 means "not supported" (§5.19.2); its DEFECT LIST
	 * LENGTH, like the (10) one, is zero. */
	d[1] = b & 0x1f;
	scsitgt__cmd_respond(cmd, d, ten ? RDD10_HDR : RDD12_HDR);
	scsitgt__cmd_complete(cmd, SCSITGT__SR_OK);
}

/*
 * SBC-4 §5.3: byte 1 FMTPINFO (refused by the usage mask: no protection information),
 * LONGLIST, FMTDATA, CMPLST, DEFECT LIST FORMAT. With FMTDATA the parameter list is the
 * header only: we accept no defect list and no initialization pattern descriptor.
 */
enum scsitgt__sense_reason scsitgt__sbc_parse_format_unit(struct scsitgt__cmd *cmd)
{
	uint8_t b1 = cmd->cdb[1];

	if (!(b1 & 0x10)) {
		/* Without FMTDATA, LONGLIST and DEFECT LIST FORMAT must be zero (§5.3.1). */
		if (b1 & 0x20)
			return scsitgt__cmd_bad_cdb_field(cmd, 1, 5);
		if (b1 & 0x07)
			return scsitgt__cmd_bad_cdb_field(cmd, 1, 2);
		return SCSITGT__SR_OK;
	}
	cmd->dir = SCSITGT__DIR_OUT;
	cmd->xfer_len = (b1 & 0x20) ? FMT_LONG_HDR : FMT_SHORT_HDR;
	return SCSITGT__SR_OK;
}

static enum scsitgt__sense_reason fmt_check_header(struct scsitgt__cmd *cmd)
{
	const uint8_t *p = cmd->buf;
	bool longlist = cmd->cdb[1] & 0x20;
	uint32_t dll = longlist ? get_be32(&p[4]) : get_be16(&p[2]);

	/* PROTECTION FIELD USAGE 000b: no protection information. */
	if (p[0] & 0x07)
		return scsitgt__cmd_bad_param_field(cmd, 0, 2);
	if (p[0] & 0xf8)
		return scsitgt__cmd_bad_param_field(cmd, 0, 7);
	/* Byte 1: FOV, DPRY, DCRT, STPF, IP, obsolete, IMMED, vendor. Without FOV the option
	 * bits shall be zero (§5.3.2.2); with it, DPRY/DCRT/STPF are meaningless to us and
	 * accepted, IP (an initialization pattern descriptor follows) is not supported. */
	if (!(p[1] & 0x80) && (p[1] & 0x78))
		return scsitgt__cmd_bad_param_field(cmd, 1, 6);
	if (p[1] & 0x08)
		return scsitgt__cmd_bad_param_field(cmd, 1, 3);
	if (p[1] & 0x05)
		return scsitgt__cmd_bad_param_field(cmd, 1, (p[1] & 0x04) ? 2 : 0);
	if (longlist && p[2])
		return scsitgt__cmd_bad_param_field(cmd, 2, 7);
	if (longlist && p[3])
		return scsitgt__cmd_bad_param_field(cmd, 3, 7);
	/* A defect list would name defects in a medium we do not have. */
	if (dll)
		return scsitgt__cmd_bad_param_field(cmd, longlist ? 4 : 2, -1);
	return SCSITGT__SR_OK;
}

void scsitgt__sbc_format_unit(struct scsitgt__cmd *cmd)
{
	enum scsitgt__sense_reason r = SCSITGT__SR_OK;

	if (cmd->cdb[1] & 0x10)
		r = fmt_check_header(cmd);
	scsitgt__cmd_complete(cmd, r);
}
