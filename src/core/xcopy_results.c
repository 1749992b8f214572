/* SPDX-License-Identifier: MIT */
/*
 * What an initiator learns about third-party copies:
 *   - RECEIVE COPY RESULTS (84h, SPC-4 r37 §6.4 and the RECEIVE COPY STATUS(LID1), RECEIVE
 *     COPY OPERATING PARAMETERS and RECEIVE COPY FAILURE DETAILS(LID1) commands it became):
 *     service actions 00h COPY STATUS, 03h OPERATING PARAMETERS, 04h FAILED SEGMENT DETAILS.
 *     01h RECEIVE DATA has no row: no segment type we support holds data (HELD DATA LIMIT 0).
 *   - the list identifier table of each I_T nexus: the copies with a list identifier (LIST ID
 *     USAGE 00b/10b) it has running or finished, bounded to SCSITGT__XCOPY_MAX_LISTS; a
 *     finished entry goes when its completion was reported (and, for a failed copy, its
 *     failed segment details), when a copy reuses its list identifier, when room is needed
 *     (oldest first) or with the nexus;
 *   - the Third-party Copy VPD page (SPC-5 §7.7.17).
 */
#include <stdlib.h>
#include <string.h>

#include "core/cdb.h"
#include "core/fabric.h"
#include "core/scsi_spec.h"
#include "core/xcopy.h"
#include "core/spc.h"
#include "util/be.h"

struct scsitgt__xcopy_entry {
	bool used;
	bool active;
	bool tracked;
	/* The completion was returned by a COPY STATUS (failed copies stay for their details). */
	bool reported;
	uint8_t list_id;
	uint64_t lun_id;
	uint64_t age;
	/* The running copy's pointer to this entry, cleared if the nexus goes first. */
	struct scsitgt__xcopy_entry **slot;
	uint8_t status;
	uint8_t sense_len;
	uint8_t sense[SCSITGT_SENSE_BUF_SIZE];
	uint16_t segs;
	uint64_t bytes;
};

struct scsitgt__xcopy_sess {
	struct scsitgt__xcopy_entry e[SCSITGT__XCOPY_MAX_LISTS];
	uint64_t age;
};

_Static_assert(SCSITGT__XCOPY_MAX_ACTIVE < SCSITGT__XCOPY_MAX_LISTS,
	       "a finished entry can always make room");

/* SPC-5 Annex D. */
enum {
	ASC_OPERATION_IN_PROGRESS = 0x00, /* 00h/16h */
	ASCQ_OPERATION_IN_PROGRESS = 0x16,
	ASC_INSUFFICIENT_RESOURCES = 0x55, /* 55h/03h */
	ASCQ_INSUFFICIENT_RESOURCES = 0x03,
};

static struct scsitgt__xcopy_entry *xr_find(struct scsitgt__xcopy_sess *xs, uint64_t lun_id,
					    uint8_t list_id)
{
	if (xs == NULL)
		return NULL;
	for (unsigned int i = 0; i < SCSITGT__XCOPY_MAX_LISTS; i++) {
		struct scsitgt__xcopy_entry *e = &xs->e[i];

		if (e->used && e->tracked && e->lun_id == lun_id && e->list_id == list_id)
			return e;
	}
	return NULL;
}

bool scsitgt__xcopy_entry_begin(struct scsitgt__cmd *cmd, uint8_t list_id, bool tracked,
				struct scsitgt__xcopy_entry **slot, uint8_t *asc, uint8_t *ascq,
				bool *busy)
{
	struct scsitgt__session *sess = cmd->sess;
	struct scsitgt__xcopy_sess *xs = sess->xcopy;
	struct scsitgt__xcopy_entry *e = NULL, *oldest = NULL;
	unsigned int active = 0;

	*slot = NULL;
	if (xs == NULL) {
		xs = calloc(1, sizeof(*xs));
		if (xs == NULL) {
			*busy = true;
			return false;
		}
		sess->xcopy = xs;
	}
	for (unsigned int i = 0; i < SCSITGT__XCOPY_MAX_LISTS; i++)
		active += xs->e[i].used && xs->e[i].active;
	if (tracked) {
		e = xr_find(xs, cmd->lun_id, list_id);
		/* SPC-4 §6.4 (LIST ID USAGE): a list identifier already in use by a copy of this
		 * nexus. */
		if (e && e->active) {
			*asc = ASC_OPERATION_IN_PROGRESS;
			*ascq = ASCQ_OPERATION_IN_PROGRESS;
			return false;
		}
	}
	/* TOTAL CONCURRENT COPIES of the operating parameters. */
	if (active >= SCSITGT__XCOPY_MAX_ACTIVE) {
		*asc = ASC_INSUFFICIENT_RESOURCES;
		*ascq = ASCQ_INSUFFICIENT_RESOURCES;
		return false;
	}
	/* A finished copy's entry with the same list identifier is replaced; otherwise a free
	 * entry, else the oldest finished one. */
	for (unsigned int i = 0; e == NULL && i < SCSITGT__XCOPY_MAX_LISTS; i++) {
		if (!xs->e[i].used)
			e = &xs->e[i];
		else if (!xs->e[i].active && (oldest == NULL || xs->e[i].age < oldest->age))
			oldest = &xs->e[i];
	}
	if (e == NULL)
		e = oldest;
	memset(e, 0, sizeof(*e));
	e->used = true;
	e->active = true;
	e->tracked = tracked;
	e->list_id = list_id;
	e->lun_id = cmd->lun_id;
	e->age = ++xs->age;
	e->slot = slot;
	*slot = e;
	return true;
}

void scsitgt__xcopy_entry_progress(struct scsitgt__xcopy_entry *e, uint16_t segs, uint64_t bytes)
{
	if (e == NULL)
		return;
	e->segs = segs;
	e->bytes = bytes;
}

void scsitgt__xcopy_entry_end(struct scsitgt__xcopy_entry *e, uint8_t status, const uint8_t *sense,
			      size_t sense_len, uint16_t segs, uint64_t bytes)
{
	if (e == NULL)
		return;
	*e->slot = NULL;
	e->slot = NULL;
	e->active = false;
	if (!e->tracked) {
		e->used = false;
		return;
	}
	e->status = status;
	if (sense_len > sizeof(e->sense))
		sense_len = sizeof(e->sense);
	memcpy(e->sense, sense, sense_len);
	e->sense_len = (uint8_t)sense_len;
	e->segs = segs;
	e->bytes = bytes;
}

void scsitgt__xcopy_session_gone(struct scsitgt__session *sess)
{
	struct scsitgt__xcopy_sess *xs = sess->xcopy;

	if (xs == NULL)
		return;
	/* Copies still running (detached, aborted) lose their entry. */
	for (unsigned int i = 0; i < SCSITGT__XCOPY_MAX_LISTS; i++) {
		if (xs->e[i].used && xs->e[i].active)
			*xs->e[i].slot = NULL;
	}
	free(xs);
	sess->xcopy = NULL;
}

/* RECEIVE COPY RESULTS: LIST IDENTIFIER in byte 2 (reserved for OPERATING PARAMETERS, the
 * usage mask refuses it), ALLOCATION LENGTH in bytes 10..13. */
enum scsitgt__sense_reason scsitgt__xcopy_parse_rcr(struct scsitgt__cmd *cmd)
{
	return scsitgt__parse_alloc32(cmd, 10);
}

/* The operating parameters (SPC-4 RECEIVE COPY OPERATING PARAMETERS, LID1 form). */
#define RCR_OP_LEN 46u
static void rcr_operating_parameters(struct scsitgt__cmd *cmd)
{
	uint8_t d[RCR_OP_LEN];
	uint32_t bs = cmd->lun->geo.block_size;
	uint8_t gran = 0;

	while ((1u << gran) < bs)
		gran++;
	memset(d, 0, sizeof(d));
	put_be32(&d[0], RCR_OP_LEN - 4);
	d[4] = 0x01; /* SNLID: LIST ID USAGE 11b is supported */
	put_be16(&d[8], SCSITGT__XCOPY_MAX_CSCD);
	put_be16(&d[10], SCSITGT__XCOPY_MAX_SEGS);
	put_be32(&d[12], SCSITGT__XCOPY_MAX_DESC_LIST);
	put_be32(&d[16], SCSITGT__XCOPY_MAX_SEG_BYTES(bs));
	/* MAXIMUM INLINE DATA LENGTH, HELD DATA LIMIT, MAXIMUM STREAM DEVICE TRANSFER SIZE: 0. */
	put_be16(&d[34], SCSITGT__XCOPY_MAX_ACTIVE); /* TOTAL CONCURRENT COPIES */
	d[36] = SCSITGT__XCOPY_MAX_ACTIVE;	     /* MAXIMUM CONCURRENT COPIES */
	d[37] = gran;				     /* DATA SEGMENT GRANULARITY (log 2) */
	/* IMPLEMENTED DESCRIPTOR LIST: the type codes, in ascending order. */
	d[43] = 2;
	d[44] = XCOPY_SEG_BLOCK_TO_BLOCK;
	d[45] = XCOPY_CSCD_IDENTIFICATION;
	scsitgt__cmd_respond(cmd, d, sizeof(d));
	scsitgt__cmd_complete(cmd, SCSITGT__SR_OK);
}

/* TRANSFER COUNT and its units (00h bytes, 01h KiB, 02h MiB, ...) so that it fits 32 bits. */
static void rcr_transfer_count(uint64_t bytes, uint8_t *units, uint32_t *count)
{
	uint8_t u = 0;

	while (bytes > UINT32_MAX) {
		bytes >>= 10;
		u++;
	}
	*units = u;
	*count = (uint32_t)bytes;
}

/* SPC-4 RECEIVE COPY STATUS(LID1): 12 bytes. */
#define RCR_STATUS_LEN 12u
static void rcr_copy_status(struct scsitgt__cmd *cmd, struct scsitgt__xcopy_entry *e)
{
	uint8_t d[RCR_STATUS_LEN];
	uint8_t units;
	uint32_t count;

	memset(d, 0, sizeof(d));
	put_be32(&d[0], RCR_STATUS_LEN - 4);
	/* COPY MANAGER STATUS: 00h in progress, 01h completed without errors, 02h completed
	 * with errors. HDD stays zero: no data is ever held. */
	d[4] = e->active ? 0x00 : (e->status == SAM_STAT_GOOD ? 0x01 : 0x02);
	put_be16(&d[5], e->segs);
	rcr_transfer_count(e->bytes, &units, &count);
	d[7] = units;
	put_be32(&d[8], count);
	scsitgt__cmd_respond(cmd, d, sizeof(d));
	/* A completion, once reported, is forgotten; a failure stays for its details. */
	if (!e->active) {
		e->reported = true;
		if (e->status == SAM_STAT_GOOD)
			e->used = false;
	}
	scsitgt__cmd_complete(cmd, SCSITGT__SR_OK);
}

/* SPC-4 RECEIVE COPY FAILURE DETAILS(LID1): 60 bytes, then the sense data of the failure. */
#define RCR_FAILED_HDR 60u
static void rcr_failed_details(struct scsitgt__cmd *cmd, struct scsitgt__xcopy_entry *e)
{
	uint8_t d[RCR_FAILED_HDR + SCSITGT_SENSE_BUF_SIZE];
	size_t len = 4;

	memset(d, 0, sizeof(d));
	/* A copy still running or one that succeeded has no details: AVAILABLE DATA zero. */
	if (!e->active && e->status != SAM_STAT_GOOD) {
		len = RCR_FAILED_HDR + e->sense_len;
		put_be32(&d[0], (uint32_t)(len - 4));
		d[56] = e->status; /* COPY COMMAND STATUS */
		put_be16(&d[58], e->sense_len);
		memcpy(&d[RCR_FAILED_HDR], e->sense, e->sense_len);
		/* Returned whole: the list identifier is done with. */
		if (len <= cmd->xfer_len)
			e->used = false;
	}
	scsitgt__cmd_respond(cmd, d, len);
	scsitgt__cmd_complete(cmd, SCSITGT__SR_OK);
}

void scsitgt__xcopy_rcr(struct scsitgt__cmd *cmd)
{
	uint8_t sa = cmd->cdb[1] & 0x1f;
	struct scsitgt__xcopy_entry *e;

	if (sa == XCOPY_RCR_OPERATING_PARAMETERS) {
		rcr_operating_parameters(cmd);
		return;
	}
	/* A list identifier this nexus has no copy for (on this LUN): INVALID FIELD IN CDB. */
	e = xr_find(cmd->sess->xcopy, cmd->lun_id, cmd->cdb[2]);
	if (e == NULL) {
		scsitgt__cmd_bad_cdb_field(cmd, 2, 7);
		scsitgt__cmd_complete(cmd, SCSITGT__SR_INVALID_FIELD_IN_CDB);
		return;
	}
	if (sa == XCOPY_RCR_COPY_STATUS)
		rcr_copy_status(cmd, e);
	else
		rcr_failed_details(cmd, e);
}

/* Append a third-party copy descriptor header and pad its length to a multiple of four
 * (SPC-5 §7.7.17); returns the descriptor's total length. */
static size_t tpc_desc(uint8_t *p, uint16_t type, size_t body)
{
	size_t len = (4 + body + 3) & ~(size_t)3;

	put_be16(&p[0], type);
	put_be16(&p[2], (uint16_t)(len - 4));
	return len;
}

/* SPC-5 §7.7.17 Third-party Copy VPD page: the descriptors that concern EXTENDED COPY(LID1). */
size_t scsitgt__xcopy_vpd(const struct scsitgt__cmd *cmd, uint8_t *buf)
{
	static const uint8_t ops[] = { SPC_EXTENDED_COPY, SPC_RECEIVE_COPY_RESULTS };
	size_t n = 4, body;
	uint8_t *p;

	memset(buf, 0, SCSITGT__VPD_MAX);
	buf[0] = SPC_PDT_DIRECT_ACCESS;
	buf[1] = 0x8f;

	/* Supported Commands (0001h, SPC-5 §7.7.17): each third-party copy opcode with the
	 * service actions the CDB table has. */
	p = &buf[n];
	body = 1;
	for (size_t i = 0; i < sizeof(ops); i++) {
		uint8_t *c = &p[4 + body];
		uint8_t nsa = 0;

		for (uint8_t sa = 0; sa < 0x20; sa++) {
			if (scsitgt__cdb_supported(ops[i], sa))
				c[2 + nsa++] = sa;
		}
		if (nsa == 0)
			continue;
		c[0] = ops[i];
		c[1] = nsa;
		body += 2u + nsa;
	}
	p[4] = (uint8_t)(body - 1); /* COMMANDS SUPPORTED LIST LENGTH */
	n += tpc_desc(p, 0x0001, body);

	/* Parameter Data (0004h): the EXTENDED COPY limits. */
	p = &buf[n];
	put_be16(&p[8], SCSITGT__XCOPY_MAX_CSCD);
	put_be16(&p[10], SCSITGT__XCOPY_MAX_SEGS);
	put_be32(&p[12], SCSITGT__XCOPY_MAX_DESC_LIST);
	n += tpc_desc(p, 0x0004, 28);

	/* Supported Descriptors (0008h): the descriptor type codes. */
	p = &buf[n];
	p[4] = 2;
	p[5] = XCOPY_SEG_BLOCK_TO_BLOCK;
	p[6] = XCOPY_CSCD_IDENTIFICATION;
	n += tpc_desc(p, 0x0008, 3);

	/* Supported CSCD Descriptor IDs (000Ch): none of the special ones. */
	p = &buf[n];
	n += tpc_desc(p, 0x000c, 2);

	/* General Copy Operations (8001h). */
	p = &buf[n];
	put_be32(&p[4], SCSITGT__XCOPY_MAX_ACTIVE); /* TOTAL CONCURRENT COPIES */
	put_be32(&p[8], SCSITGT__XCOPY_MAX_ACTIVE); /* MAXIMUM IDENTIFIED CONCURRENT COPIES */
	/* MAXIMUM SEGMENT LENGTH */
	put_be32(&p[12], SCSITGT__XCOPY_MAX_SEG_BYTES(cmd->lun->geo.block_size));
	{
		uint32_t bs = cmd->lun->geo.block_size;
		uint8_t gran = 0;

		while ((1u << gran) < bs)
			gran++;
		p[16] = gran; /* DATA SEGMENT GRANULARITY (log 2) */
	}
	n += tpc_desc(p, 0x8001, 32);

	put_be16(&buf[2], (uint16_t)(n - 4));
	return n;
}
