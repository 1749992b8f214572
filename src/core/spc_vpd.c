/* SPDX-License-Identifier: MIT */
/*
 * Vital product data pages (SPC-5 §7.7, SBC-4 §6.6): 00h supported pages, 80h unit serial
 * number, 83h device identification, 86h extended INQUIRY data, B0h block limits, B1h block
 * device characteristics and B2h logical block provisioning (thin LUNs only).
 */
#include <string.h>

#include "core/alua.h"
#include "core/cdb.h"
#include "core/fabric.h"
#include "core/scsi_spec.h"
#include "core/xcopy.h"
#include "core/sbc.h"
#include "core/spc.h"
#include "core/spc_selftest.h"
#include "util/be.h"

/* SBC-4 §6.6.3 and §6.6.2: both pages have PAGE LENGTH 003Ch. */
#define VPD_B0_LEN 0x40
#define VPD_B1_LEN 0x40
/* SPC-5 §7.7.7: PAGE LENGTH 003Ch. */
#define VPD_86_LEN 0x40
/* SBC-4 §6.6.4: 4 bytes after the header, no provisioning group descriptor. */
#define VPD_B2_LEN 0x08

/* Every page starts with this 4-byte header (SPC-5 §7.7.1 Table 475). */
static void vpd_header(uint8_t *buf, uint8_t page, size_t len)
{
	buf[0] = SPC_PDT_DIRECT_ACCESS;
	buf[1] = page;
	put_be16(&buf[2], (uint16_t)(len - 4));
}

static bool vpd_has_b2(const struct scsitgt_lun *lun)
{
	/* SBC-4 §6.6.4: the page is required when LBPME is one; a fully provisioned LUN has no
	 * provisioning to describe, so it does not list the page, as READ CAPACITY (16) says
	 * LBPME 0 for it. */
	return scsitgt__sbc_lbpme(lun);
}

static size_t vpd_supported_pages(const struct scsitgt_lun *lun, uint8_t *buf)
{
	size_t n = 4;

	buf[n++] = VPD_SUPPORTED_PAGES;
	buf[n++] = VPD_UNIT_SERIAL;
	buf[n++] = VPD_DEVICE_ID;
	buf[n++] = VPD_EXTENDED_INQUIRY;
	if (scsitgt__cdb_supported(SPC_EXTENDED_COPY, 0))
		buf[n++] = VPD_THIRD_PARTY_COPY;
	buf[n++] = VPD_BLOCK_LIMITS;
	buf[n++] = VPD_BLOCK_DEV_CHARS;
	if (vpd_has_b2(lun))
		buf[n++] = VPD_LB_PROVISIONING;
	vpd_header(buf, VPD_SUPPORTED_PAGES, n);
	return n;
}

/* SPC-5 §7.7.18: the PRODUCT SERIAL NUMBER, ASCII. */
static size_t vpd_unit_serial(const struct scsitgt_lun *lun, uint8_t *buf)
{
	size_t len = strlen(lun->ident.serial);

	memcpy(&buf[4], lun->ident.serial, len);
	vpd_header(buf, VPD_UNIT_SERIAL, 4 + len);
	return 4 + len;
}

/* Append one designation descriptor (SPC-5 §7.7.6.1 Table 483); returns its length. */
static size_t vpd_designator(uint8_t *p, uint8_t proto, bool piv, uint8_t code_set, uint8_t assoc,
			     uint8_t type, const void *data, size_t len)
{
	p[0] = (uint8_t)(proto << 4 | code_set);
	p[1] = (uint8_t)((piv ? 0x80 : 0) | assoc << 4 | type);
	p[2] = 0;
	p[3] = (uint8_t)len;
	memcpy(&p[4], data, len);
	return 4 + len;
}

/*
 * A SCSI name string designator (SPC-5 §7.7.6.11): UTF-8, null-terminated, zero-padded to a
 * multiple of four bytes. DESIGNATOR LENGTH is one byte, so at most 252 bytes; names that do
 * not fit are left out.
 */
static size_t vpd_scsi_name(uint8_t *p, uint8_t proto, uint8_t assoc, const char *name)
{
	uint8_t s[252];
	size_t len = strlen(name), padded = (len + 1 + 3) & ~(size_t)3;

	if (padded > sizeof(s))
		return 0;
	memset(s, 0, padded);
	memcpy(s, name, len);
	return vpd_designator(p, proto, true, CODE_SET_UTF8, assoc, DESIG_SCSI_NAME, s, padded);
}

/* SPC-5 §7.7.6 device identification: the LU designators, then the target port's and the
 * target device's. */
static size_t vpd_device_id(const struct scsitgt__cmd *cmd, uint8_t *buf)
{
	const struct scsitgt_lun *lun = cmd->lun;
	const struct scsitgt__session *sess = cmd->sess;
	uint8_t proto = sess->protocol_id & 0x0f;
	uint8_t tmp[8 + 16 + sizeof(lun->ident.serial)];
	size_t n = 4, len;
	uint16_t tpg;

	/* NAA IEEE Registered, SPC-5 §7.7.6.6.5 (lun.c forces NAA 5 into the top nibble). */
	put_be64(tmp, lun->ident.naa);
	n += vpd_designator(&buf[n], 0, false, CODE_SET_BINARY, ASSOC_LU, DESIG_NAA, tmp, 8);

	/* NAA IEEE Registered Extended, SPC-5 §7.7.6.6.6, when the host gave one. */
	if (lun->desig.has_naa_extended)
		n += vpd_designator(&buf[n], 0, false, CODE_SET_BINARY, ASSOC_LU, DESIG_NAA,
				    lun->desig.naa_extended, 16);

	/* UUID, SPC-5 §7.7.6.12: UUID TYPE 1h (locally assigned, RFC 4122) in byte 0's top
	 * nibble, a reserved byte, then the UUID. */
	if (lun->desig.has_uuid) {
		memset(tmp, 0, 2);
		tmp[0] = 0x10;
		memcpy(&tmp[2], lun->desig.uuid, 16);
		n += vpd_designator(&buf[n], 0, false, CODE_SET_BINARY, ASSOC_LU, DESIG_UUID, tmp,
				    18);
	}

	/* EUI-64, SPC-5 §7.7.6.5, when the host gave one. */
	if (lun->ident.eui64) {
		put_be64(tmp, lun->ident.eui64);
		n += vpd_designator(&buf[n], 0, false, CODE_SET_BINARY, ASSOC_LU, DESIG_EUI64, tmp,
				    8);
	}

	/* T10 vendor ID based, SPC-5 §7.7.6.4: T10 VENDOR IDENTIFICATION, then vendor specific
	 * data (product identification and serial number) making it unique. */
	memset(tmp, ' ', 24);
	memcpy(tmp, lun->ident.vendor, strlen(lun->ident.vendor));
	memcpy(&tmp[8], lun->ident.product, strlen(lun->ident.product));
	len = strlen(lun->ident.serial);
	memcpy(&tmp[24], lun->ident.serial, len);
	n += vpd_designator(&buf[n], 0, false, CODE_SET_ASCII, ASSOC_LU, DESIG_T10_VENDOR, tmp,
			    24 + len);

	/* Relative target port identifier, SPC-5 §7.7.6.7: 2 reserved bytes, then the id. */
	memset(tmp, 0, 4);
	put_be16(&tmp[2], sess->rel_port_id);
	n += vpd_designator(&buf[n], proto, true, CODE_SET_BINARY, ASSOC_TARGET_PORT,
			    DESIG_REL_TARGET_PORT, tmp, 4);

	/* Target port group, SPC-5 §7.7.6.8, when the nexus belongs to one (its ALUA group when
	 * ALUA is on, core/alua.c). */
	if (scsitgt__alua_port_group(sess, &tpg)) {
		memset(tmp, 0, 4);
		put_be16(&tmp[2], tpg);
		n += vpd_designator(&buf[n], proto, true, CODE_SET_BINARY, ASSOC_TARGET_PORT,
				    DESIG_TARGET_PORT_GROUP, tmp, 4);
	}

	/* SCSI name strings of the target port and of the target device (SPC-5 §7.7.6.11). */
	n += vpd_scsi_name(&buf[n], proto, ASSOC_TARGET_PORT, sess->target_port);
	n += vpd_scsi_name(&buf[n], proto, ASSOC_TARGET_DEVICE, sess->tgt->name);

	vpd_header(buf, VPD_DEVICE_ID, n);
	return n;
}

/*
 * SPC-5 §7.7.7 extended INQUIRY data. No protection information (SPT, GRD_CHK, APP_CHK,
 * REF_CHK 0), no microcode download, no ACA. What is set: the task attributes the task set
 * honours (HEADSUP, ORDSUP, SIMPSUP: core/order.c), V_SUP when a volatile cache exists
 * (FUA and SYNCHRONIZE CACHE reach it, sbc.c), LUICLR (REPORTED LUNS DATA HAS CHANGED
 * reported for one LUN is cleared on every LUN of the I_T nexus, core/ua.c; SPC-5 requires
 * it set), and the largest sense data we return.
 */
static size_t vpd_extended_inquiry(const struct scsitgt_lun *lun, uint8_t *buf)
{
	uint32_t minutes;

	memset(buf, 0, VPD_86_LEN);
	vpd_header(buf, VPD_EXTENDED_INQUIRY, VPD_86_LEN);
	buf[5] = 0x04 | 0x02 | 0x01; /* HEADSUP, ORDSUP, SIMPSUP */
	if (scsitgt__sbc_has_cache(lun))
		buf[6] |= 0x01; /* V_SUP */
	buf[7] = 0x01;		/* LUICLR */
	/* EXTENDED SELF-TEST COMPLETION MINUTES (bytes 10..11, spc_selftest.c). */
	minutes = (scsitgt__selftest_extended_seconds(lun) + 59) / 60;
	put_be16(&buf[10], (uint16_t)(minutes > 0xffff ? 0xffff : minutes));
	/* MAXIMUM SUPPORTED SENSE DATA LENGTH (byte 13). */
	buf[13] = SCSITGT_SENSE_BUF_SIZE;
	return VPD_86_LEN;
}

/* SBC-4 §6.6.3 block limits: the values lun_limits.c settled at creation, which the commands
 * enforce. */
static size_t vpd_block_limits(const struct scsitgt_lun *lun, uint8_t *buf)
{
	const struct scsitgt__lun_limits *l = &lun->limits;

	memset(buf, 0, VPD_B0_LEN);
	vpd_header(buf, VPD_BLOCK_LIMITS, VPD_B0_LEN);
	put_be16(&buf[6], l->opt_granularity);
	put_be32(&buf[8], l->max_transfer_blocks);
	put_be32(&buf[12], l->opt_transfer_blocks);
	if (scsitgt__sbc_lbpme(lun) && scsitgt__cdb_supported(SBC_UNMAP, 0)) {
		put_be32(&buf[20], l->max_unmap_blocks);
		put_be32(&buf[24], l->max_unmap_descriptors);
		/* OPTIMAL UNMAP GRANULARITY; with UGAVALID, UNMAP GRANULARITY ALIGNMENT. */
		put_be32(&buf[28], l->unmap_granularity);
		if (l->ugavalid)
			put_be32(&buf[32], 0x80000000u | l->unmap_alignment);
	}
	/* WSNZ, MAXIMUM COMPARE AND WRITE LENGTH, MAXIMUM WRITE SAME LENGTH and the atomic
	 * limits belong to the commands that honour them (sbc_lba_status.c). */
	scsitgt__sbc_block_limits(lun, buf);
	return VPD_B0_LEN;
}

/* SBC-4 §6.6.2 block device characteristics. */
static size_t vpd_block_dev_chars(const struct scsitgt_lun *lun, uint8_t *buf)
{
	memset(buf, 0, VPD_B1_LEN);
	vpd_header(buf, VPD_BLOCK_DEV_CHARS, VPD_B1_LEN);
	/* MEDIUM ROTATION RATE: 0001h non-rotating medium, 0000h not reported. */
	if (lun->geo.flags & SCSITGT_GEOMETRY_NON_ROTATIONAL)
		put_be16(&buf[4], 0x0001);
	/* Byte 7: WABEREQ and WACEREQ 01b: a read after a block or crypto erase (SANITIZE,
	 * sbc_sanitize.c) completes with GOOD and returns zeros (SBC-4 Tables 229/230); block
	 * erase exists on thin LUNs only. NOMINAL FORM FACTOR 0: not reported. */
	buf[7] = (uint8_t)((scsitgt__sbc_lbpme(lun) ? 0x01 << 6 : 0) | 0x01 << 4);
	return VPD_B1_LEN;
}

/* SBC-4 §6.6.4 logical block provisioning. */
static size_t vpd_lb_provisioning(const struct scsitgt_lun *lun, uint8_t *buf)
{
	uint8_t b5 = 0;

	memset(buf, 0, VPD_B2_LEN);
	vpd_header(buf, VPD_LB_PROVISIONING, VPD_B2_LEN);
	/* LBPU, LBPWS and LBPWS10 say which commands unmap; only the ones we implement. */
	if (scsitgt__cdb_supported(SBC_UNMAP, 0))
		b5 |= 0x80;
	if (scsitgt__cdb_supported(SBC_WRITE_SAME_16, 0))
		b5 |= 0x40;
	if (scsitgt__cdb_supported(SBC_WRITE_SAME_10, 0))
		b5 |= 0x20;
	/* LBPRZ field 001b: unmapped blocks read as zeros (same answer as READ CAPACITY 16). */
	if (scsitgt__sbc_lbprz(lun))
		b5 |= 0x01 << 2;
	buf[5] = b5;
	/* PROVISIONING TYPE 010b thin, 000b full (SBC-4 Table 236). */
	buf[6] = scsitgt__sbc_lbpme(lun) ? 0x02 : 0x00;
	return VPD_B2_LEN;
}

size_t scsitgt__vpd_build(const struct scsitgt__cmd *cmd, uint8_t page, uint8_t *buf)
{
	const struct scsitgt_lun *lun = cmd->lun;

	switch (page) {
	case VPD_SUPPORTED_PAGES:
		return vpd_supported_pages(lun, buf);
	case VPD_UNIT_SERIAL:
		return vpd_unit_serial(lun, buf);
	case VPD_DEVICE_ID:
		return vpd_device_id(cmd, buf);
	case VPD_THIRD_PARTY_COPY:
		return scsitgt__cdb_supported(SPC_EXTENDED_COPY, 0) ? scsitgt__xcopy_vpd(cmd, buf) :
								      0;
	case VPD_EXTENDED_INQUIRY:
		return vpd_extended_inquiry(lun, buf);
	case VPD_BLOCK_LIMITS:
		return vpd_block_limits(lun, buf);
	case VPD_BLOCK_DEV_CHARS:
		return vpd_block_dev_chars(lun, buf);
	case VPD_LB_PROVISIONING:
		return vpd_has_b2(lun) ? vpd_lb_provisioning(lun, buf) : 0;
	default:
		return 0;
	}
}
