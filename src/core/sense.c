/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "core/scsi_spec.h"
#include "core/sense.h"
#include "util/be.h"

#define CC(k, a, q)                                     \
	{                                               \
		SAM_STAT_CHECK_CONDITION, (k), (a), (q) \
	}

/* One row per reason; SPC-5 Annex D (ASC/ASCQ assignments). */
static const struct scsitgt__sense_info sense_table[SCSITGT__SR_COUNT_] = {
	[SCSITGT__SR_OK] = { SAM_STAT_GOOD, 0, 0, 0 },
	[SCSITGT__SR_INVALID_OPCODE] = CC(SENSE_ILLEGAL_REQUEST, 0x20, 0x00),
	[SCSITGT__SR_INVALID_FIELD_IN_CDB] = CC(SENSE_ILLEGAL_REQUEST, 0x24, 0x00),
	[SCSITGT__SR_INVALID_FIELD_IN_PARAM_LIST] = CC(SENSE_ILLEGAL_REQUEST, 0x26, 0x00),
	[SCSITGT__SR_INVALID_FIELD_IN_CMD_IU] = CC(SENSE_ILLEGAL_REQUEST, 0x0e, 0x03),
	[SCSITGT__SR_PARAM_LIST_LENGTH_ERROR] = CC(SENSE_ILLEGAL_REQUEST, 0x1a, 0x00),
	[SCSITGT__SR_LBA_OUT_OF_RANGE] = CC(SENSE_ILLEGAL_REQUEST, 0x21, 0x00),
	[SCSITGT__SR_LUN_NOT_SUPPORTED] = CC(SENSE_ILLEGAL_REQUEST, 0x25, 0x00),
	[SCSITGT__SR_SAVING_PARAMS_UNSUPPORTED] = CC(SENSE_ILLEGAL_REQUEST, 0x39, 0x00),
	[SCSITGT__SR_INVALID_RELEASE_OF_PR] = CC(SENSE_ILLEGAL_REQUEST, 0x26, 0x04),
	[SCSITGT__SR_INSUFFICIENT_REG_RESOURCES] = CC(SENSE_ILLEGAL_REQUEST, 0x55, 0x04),
	[SCSITGT__SR_MEDIUM_REMOVAL_PREVENTED] = CC(SENSE_ILLEGAL_REQUEST, 0x53, 0x02),
	[SCSITGT__SR_NOT_READY_MEDIUM_ABSENT] = CC(SENSE_NOT_READY, 0x3a, 0x00),
	[SCSITGT__SR_NOT_READY_INIT_REQUIRED] = CC(SENSE_NOT_READY, 0x04, 0x02),
	[SCSITGT__SR_NOT_READY_IN_PROGRESS] = CC(SENSE_NOT_READY, 0x04, 0x01),
	[SCSITGT__SR_NOT_READY_UNAVAILABLE] = CC(SENSE_NOT_READY, 0x04, 0x0c),
	[SCSITGT__SR_NOT_READY_STANDBY] = CC(SENSE_NOT_READY, 0x04, 0x0b),
	[SCSITGT__SR_NOT_READY_TRANSITIONING] = CC(SENSE_NOT_READY, 0x04, 0x0a),
	[SCSITGT__SR_NOT_READY_OFFLINE] = CC(SENSE_NOT_READY, 0x04, 0x12),
	[SCSITGT__SR_READ_ERROR] = CC(SENSE_MEDIUM_ERROR, 0x11, 0x00),
	[SCSITGT__SR_WRITE_ERROR] = CC(SENSE_MEDIUM_ERROR, 0x0c, 0x00),
	[SCSITGT__SR_WRITE_PROTECTED] = CC(SENSE_DATA_PROTECT, 0x27, 0x00),
	[SCSITGT__SR_SPACE_ALLOC_FAILED] = CC(SENSE_DATA_PROTECT, 0x27, 0x07),
	[SCSITGT__SR_MISCOMPARE] = CC(SENSE_MISCOMPARE, 0x1d, 0x00),
	[SCSITGT__SR_INTERNAL_FAILURE] = CC(SENSE_HARDWARE_ERROR, 0x44, 0x00),
	[SCSITGT__SR_ABORTED] = CC(SENSE_ABORTED_COMMAND, 0x00, 0x00),
	[SCSITGT__SR_DATA_PHASE_ERROR] = CC(SENSE_ABORTED_COMMAND, 0x4b, 0x00),
	[SCSITGT__SR_INITIATOR_DETECTED_ERROR] = CC(SENSE_ABORTED_COMMAND, 0x48, 0x00),
	[SCSITGT__SR_OVERLAPPED_COMMANDS] = CC(SENSE_ABORTED_COMMAND, 0x4e, 0x00),
	[SCSITGT__SR_PROTOCOL_CRC_ERROR] = CC(SENSE_ABORTED_COMMAND, 0x47, 0x05),
	[SCSITGT__SR_UNEXPECTED_UNSOLICITED_DATA] = CC(SENSE_ABORTED_COMMAND, 0x0c, 0x0c),
	[SCSITGT__SR_INCORRECT_DATA_AMOUNT] = CC(SENSE_ABORTED_COMMAND, 0x0c, 0x0d),
	[SCSITGT__SR_UA_POWER_ON_RESET] = CC(SENSE_UNIT_ATTENTION, 0x29, 0x00),
	[SCSITGT__SR_UA_BUS_RESET] = CC(SENSE_UNIT_ATTENTION, 0x29, 0x02),
	[SCSITGT__SR_UA_LUN_RESET] = CC(SENSE_UNIT_ATTENTION, 0x29, 0x03),
	[SCSITGT__SR_UA_NEXUS_LOSS] = CC(SENSE_UNIT_ATTENTION, 0x29, 0x07),
	[SCSITGT__SR_UA_MODE_PARAMS_CHANGED] = CC(SENSE_UNIT_ATTENTION, 0x2a, 0x01),
	[SCSITGT__SR_UA_RESERVATIONS_PREEMPTED] = CC(SENSE_UNIT_ATTENTION, 0x2a, 0x03),
	[SCSITGT__SR_UA_RESERVATIONS_RELEASED] = CC(SENSE_UNIT_ATTENTION, 0x2a, 0x04),
	[SCSITGT__SR_UA_REGISTRATIONS_PREEMPTED] = CC(SENSE_UNIT_ATTENTION, 0x2a, 0x05),
	[SCSITGT__SR_UA_ASYMMETRIC_ACCESS_CHANGED] = CC(SENSE_UNIT_ATTENTION, 0x2a, 0x06),
	[SCSITGT__SR_UA_CAPACITY_CHANGED] = CC(SENSE_UNIT_ATTENTION, 0x2a, 0x09),
	[SCSITGT__SR_UA_REPORTED_LUNS_CHANGED] = CC(SENSE_UNIT_ATTENTION, 0x3f, 0x0e),
	[SCSITGT__SR_UA_COMMANDS_CLEARED_BY_OTHER] = CC(SENSE_UNIT_ATTENTION, 0x2f, 0x00),
	[SCSITGT__SR_UA_MEDIUM_CHANGED] = CC(SENSE_UNIT_ATTENTION, 0x28, 0x00),
	[SCSITGT__SR_RESERVATION_CONFLICT] = { SAM_STAT_RESERVATION_CONFLICT, 0, 0, 0 },
	[SCSITGT__SR_BUSY] = { SAM_STAT_BUSY, 0, 0, 0 },
	[SCSITGT__SR_TASK_SET_FULL] = { SAM_STAT_TASK_SET_FULL, 0, 0, 0 },
	[SCSITGT__SR_NOT_READY_SANITIZE] = CC(SENSE_NOT_READY, 0x04, 0x1b),
	[SCSITGT__SR_SANITIZE_FAILED] = CC(SENSE_MEDIUM_ERROR, 0x31, 0x03),
	[SCSITGT__SR_NOT_READY_SELF_TEST] = CC(SENSE_NOT_READY, 0x04, 0x09),
	[SCSITGT__SR_RAW] = CC(0, 0, 0),
};

const struct scsitgt__sense_info *scsitgt__sense_lookup(enum scsitgt__sense_reason reason)
{
	if ((unsigned)reason >= SCSITGT__SR_COUNT_)
		reason = SCSITGT__SR_INTERNAL_FAILURE;
	return &sense_table[reason];
}

/* SPC-5 §4.4.2.3 sense-key specific field pointer bytes (3 bytes, SKSV in bit 7). */
static void sense_put_sks(uint8_t *p, const struct scsitgt__sense_detail *d)
{
	p[0] = 0x80 | (d->sks_cdb ? 0x40 : 0) | (d->sks_bpv ? 0x08 | (d->sks_bit & 7) : 0);
	put_be16(&p[1], d->sks_field);
}

size_t scsitgt__sense_encode(uint8_t *buf, bool descriptor, uint8_t key, uint8_t asc, uint8_t ascq,
			     const struct scsitgt__sense_detail *d)
{
	if (descriptor) {
		/* SPC-5 §4.4.2: 8-byte header, then descriptors. */
		size_t len = 8;

		memset(buf, 0, SCSITGT_SENSE_BUF_SIZE);
		buf[0] = SENSE_DESC_CURRENT;
		buf[1] = key & 0x0f;
		buf[2] = asc;
		buf[3] = ascq;
		if (d && d->info_valid) {
			/* Information descriptor, SPC-5 §4.4.2.2. */
			buf[len] = 0x00;
			buf[len + 1] = 0x0a;
			buf[len + 2] = 0x80; /* VALID */
			put_be64(&buf[len + 4], d->info);
			len += 12;
		}
		if (d && d->sks_valid) {
			/* Sense key specific descriptor, SPC-5 §4.4.2.3. */
			buf[len] = 0x02;
			buf[len + 1] = 0x06;
			sense_put_sks(&buf[len + 4], d);
			len += 8;
		}
		buf[7] = (uint8_t)(len - 8);
		return len;
	}

	/* SPC-5 §4.4.3: fixed format, 18 bytes. */
	memset(buf, 0, 18);
	buf[0] = SENSE_FIXED_CURRENT;
	buf[2] = key & 0x0f;
	buf[7] = 10; /* ADDITIONAL SENSE LENGTH */
	buf[12] = asc;
	buf[13] = ascq;
	if (d && d->info_valid) {
		/* The INFORMATION field holds 32 bits; VALID only when the value fits. */
		put_be32(&buf[3], (uint32_t)d->info);
		if (d->info <= UINT32_MAX)
			buf[0] |= 0x80;
	}
	if (d && d->sks_valid)
		sense_put_sks(&buf[15], d);
	return 18;
}
