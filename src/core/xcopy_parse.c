/* SPDX-License-Identifier: MIT */
/*
 * The EXTENDED COPY(LID1) parameter list (SPC-4 r37 §6.4): a 16-byte header, the CSCD
 * descriptors, the segment descriptors and inline data. What is supported: identification
 * descriptor CSCDs (E4h) and block device to block device segments (02h); no inline data.
 * Everything detectable before the copy starts is refused here with ILLEGAL REQUEST and a
 * field pointer into the list; what depends on the CSCDs themselves (reachability, capacity)
 * is found while the segments are processed (xcopy.c, COPY ABORTED).
 */
#include <string.h>

#include "core/xcopy.h"
#include "util/be.h"

_Static_assert(SCSITGT__XCOPY_MAX_PARAM <= 0xffff, "field pointers fit 16 bits");

/* SPC-5 Annex D: the additional sense codes of a refused list. */
enum {
	ASC_PARAM_LIST_LENGTH = 0x1a, /* 1Ah/00h PARAMETER LIST LENGTH ERROR */
	ASC_PARAM_LIST = 0x26,	      /* 26h/xxh, INVALID FIELD IN PARAMETER LIST family */
	ASCQ_INVALID_FIELD = 0x00,
	ASCQ_TOO_MANY_CSCD = 0x06,    /* TOO MANY TARGET DESCRIPTORS */
	ASCQ_UNSUPPORTED_CSCD = 0x07, /* UNSUPPORTED TARGET DESCRIPTOR TYPE CODE */
	ASCQ_TOO_MANY_SEGS = 0x08,    /* TOO MANY SEGMENT DESCRIPTORS */
	ASCQ_UNSUPPORTED_SEG = 0x09,  /* UNSUPPORTED SEGMENT DESCRIPTOR TYPE CODE */
};

static bool xp_fail(struct scsitgt__xcopy_err *err, uint8_t asc, uint8_t ascq, bool sks,
		    size_t field, int bit)
{
	err->asc = asc;
	err->ascq = ascq;
	err->sks_valid = sks;
	err->field = (uint16_t)field;
	err->bit = (int8_t)bit;
	return false;
}

/* INVALID FIELD IN PARAMETER LIST at @field, the bit pointer on the highest set bit of @bad
 * (or 7 for a multi-byte field, its most significant bit). */
static bool xp_bad_field(struct scsitgt__xcopy_err *err, size_t field, uint8_t bad)
{
	int bit = 7;

	while (bad && !(bad & (1u << bit)))
		bit--;
	return xp_fail(err, ASC_PARAM_LIST, ASCQ_INVALID_FIELD, true, field, bit);
}

static bool xp_length_error(struct scsitgt__xcopy_err *err)
{
	return xp_fail(err, ASC_PARAM_LIST_LENGTH, 0x00, false, 0, -1);
}

/* SPC-4 §6.4 identification descriptor CSCD, at @p (offset @off in the list). */
static bool xp_cscd_e4(const uint8_t *p, size_t off, struct scsitgt__xcopy_cscd *c,
		       struct scsitgt__xcopy_err *err)
{
	memset(c, 0, sizeof(*c));
	c->type = p[0];
	c->offset = (uint16_t)off;
	/* Byte 1: bits 7..5 (LU ID TYPE, NUL) are obsolete since SPC-4 and ignored; the
	 * PERIPHERAL DEVICE TYPE is checked against the segments that use the CSCD. Bytes 2..3
	 * RELATIVE INITIATOR PORT IDENTIFIER: any port will do, the copy manager is the target. */
	c->pdt = p[1] & 0x1f;
	/* Bytes 4..7 are a designation descriptor header (SPC-5 §7.7.6.1): CODE SET, then
	 * ASSOCIATION and DESIGNATOR TYPE; a CSCD is a logical unit, so ASSOCIATION is 00b. */
	c->code_set = p[4] & 0x0f;
	if (p[5] & 0x30)
		return xp_fail(err, ASC_PARAM_LIST, ASCQ_INVALID_FIELD, true, off + 5, 5);
	c->desig_type = p[5] & 0x0f;
	c->desig_len = p[7];
	if (c->desig_len > sizeof(c->desig))
		return xp_bad_field(err, off + 7, 0x80);
	memcpy(c->desig, &p[8], c->desig_len);
	/* Bytes 28..31, block devices (SPC-4 §6.4, block device parameters): PAD, DISK BLOCK
	 * LENGTH. Other device types keep other parameters here; they are refused when a segment
	 * uses them. */
	if (c->pdt == 0x00) {
		if (p[28] & ~0x04u)
			return xp_bad_field(err, off + 28, p[28] & ~0x04u);
		c->block_len = get_be24(&p[29]);
		if (c->block_len == 0)
			return xp_bad_field(err, off + 29, 0x80);
	}
	return true;
}

/* SPC-4 §6.4 block device to block device segment descriptor, at @p. */
static bool xp_seg_b2b(const uint8_t *p, size_t off, struct scsitgt__xcopy_seg *s,
		       struct scsitgt__xcopy_err *err)
{
	memset(s, 0, sizeof(*s));
	s->type = p[0];
	s->offset = (uint16_t)off;
	/* Byte 1: DC (bit 1) and CAT (bit 0); CAT changes nothing when every segment moves
	 * whole blocks on both sides, which xcopy.c requires. The rest is reserved. */
	if (p[1] & 0xfc)
		return xp_bad_field(err, off + 1, p[1] & 0xfc);
	s->dc = p[1] & 0x02;
	/* DESCRIPTOR LENGTH: 0018h for this type. */
	if (get_be16(&p[2]) != SCSITGT__XCOPY_SEG_B2B_LEN - 4)
		return xp_bad_field(err, off + 2, 0x80);
	s->src = get_be16(&p[4]);
	s->dst = get_be16(&p[6]);
	if (p[8] || p[9])
		return xp_bad_field(err, off + (p[8] ? 8 : 9), p[8] ? p[8] : p[9]);
	s->nblocks = get_be16(&p[10]);
	s->src_lba = get_be64(&p[12]);
	s->dst_lba = get_be64(&p[20]);
	return true;
}

bool scsitgt__xcopy_parse(const uint8_t *buf, size_t len, struct scsitgt__xcopy_list *out,
			  struct scsitgt__xcopy_err *err)
{
	const uint8_t *cscd, *segs;
	uint32_t tdll, sdll, inline_len;

	memset(err, 0, sizeof(*err));
	out->ncscd = 0;
	out->nseg = 0;
	/* SPC-4 §6.4: the header must be there whole. */
	if (len < SCSITGT__XCOPY_HDR_LEN)
		return xp_length_error(err);
	out->list_id = buf[0];
	if (buf[1] & 0xc0)
		return xp_bad_field(err, 1, buf[1] & 0xc0);
	out->str = buf[1] & 0x20;
	out->list_id_usage = (buf[1] >> 3) & 0x03;
	out->priority = buf[1] & 0x07;
	/* SPC-4 §6.4, LIST ID USAGE field: 01b is reserved; 11b (no list identifier, SNLID
	 * in the operating parameters) wants LIST IDENTIFIER zero. */
	if (out->list_id_usage == XCOPY_LIST_ID_RESERVED)
		return xp_fail(err, ASC_PARAM_LIST, ASCQ_INVALID_FIELD, true, 1, 4);
	if (out->list_id_usage == XCOPY_LIST_ID_NONE && out->list_id != 0)
		return xp_bad_field(err, 0, 0x80);
	tdll = get_be16(&buf[2]);
	for (unsigned int i = 4; i < 8; i++) {
		if (buf[i])
			return xp_bad_field(err, i, buf[i]);
	}
	sdll = get_be32(&buf[8]);
	inline_len = get_be32(&buf[12]);
	/* SPC-4 §6.4.3.4, §6.4.3.5: descriptor lists longer than the MAXIMUM DESCRIPTOR LIST
	 * LENGTH are a PARAMETER LIST LENGTH ERROR (whatever else they hold). */
	if ((uint64_t)tdll + sdll > SCSITGT__XCOPY_MAX_DESC_LIST)
		return xp_length_error(err);
	/* MAXIMUM INLINE DATA LENGTH is zero: no segment type we take refers to inline data. */
	if (inline_len)
		return xp_bad_field(err, 12, 0x80);
	/* A list cut short by the PARAMETER LIST LENGTH (bytes past its end are ignored). */
	if (SCSITGT__XCOPY_HDR_LEN + (uint64_t)tdll + sdll > len)
		return xp_length_error(err);

	cscd = &buf[SCSITGT__XCOPY_HDR_LEN];
	for (size_t off = 0; off < tdll; off += SCSITGT__XCOPY_CSCD_LEN) {
		size_t at = SCSITGT__XCOPY_HDR_LEN + off;

		if (out->ncscd == SCSITGT__XCOPY_MAX_CSCD)
			return xp_fail(err, ASC_PARAM_LIST, ASCQ_TOO_MANY_CSCD, true, 2, 7);
		/* Only identification descriptors (E4h); every other CSCD type code, the Fibre
		 * Channel, SAS, IPv4/IPv6 ones included, is not supported. */
		if (cscd[off] != XCOPY_CSCD_IDENTIFICATION)
			return xp_fail(err, ASC_PARAM_LIST, ASCQ_UNSUPPORTED_CSCD, true, at, 7);
		/* The list length must end on a descriptor boundary. */
		if (off + SCSITGT__XCOPY_CSCD_LEN > tdll)
			return xp_bad_field(err, 2, 0x80);
		if (!xp_cscd_e4(&cscd[off], at, &out->cscd[out->ncscd], err))
			return false;
		out->ncscd++;
	}

	segs = &buf[SCSITGT__XCOPY_HDR_LEN + tdll];
	for (size_t off = 0; off < sdll; off += SCSITGT__XCOPY_SEG_B2B_LEN) {
		size_t at = SCSITGT__XCOPY_HDR_LEN + tdll + off;

		if (out->nseg == SCSITGT__XCOPY_MAX_SEGS)
			return xp_fail(err, ASC_PARAM_LIST, ASCQ_TOO_MANY_SEGS, true, 8, 7);
		if (segs[off] != XCOPY_SEG_BLOCK_TO_BLOCK)
			return xp_fail(err, ASC_PARAM_LIST, ASCQ_UNSUPPORTED_SEG, true, at, 7);
		if (off + SCSITGT__XCOPY_SEG_B2B_LEN > sdll)
			return xp_bad_field(err, 8, 0x80);
		if (!xp_seg_b2b(&segs[off], at, &out->seg[out->nseg], err))
			return false;
		out->nseg++;
	}
	return true;
}
