/* SPDX-License-Identifier: MIT */
/*
 * SCSI outcomes are not errors: parse and exec functions return a sense reason, and one table
 * (sense.c) maps each reason to status, sense key, ASC and ASCQ.
 */
#ifndef SCSITGT_CORE_SENSE_H
#define SCSITGT_CORE_SENSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum scsitgt__sense_reason {
	SCSITGT__SR_OK = 0,
	/* ILLEGAL REQUEST */
	SCSITGT__SR_INVALID_OPCODE,		 /* 20h/00h */
	SCSITGT__SR_INVALID_FIELD_IN_CDB,	 /* 24h/00h, with field pointer */
	SCSITGT__SR_INVALID_FIELD_IN_PARAM_LIST, /* 26h/00h, with field pointer */
	SCSITGT__SR_INVALID_FIELD_IN_CMD_IU,	 /* 0Eh/03h: the transport's data length */
	SCSITGT__SR_PARAM_LIST_LENGTH_ERROR,	 /* 1Ah/00h */
	SCSITGT__SR_LBA_OUT_OF_RANGE,		 /* 21h/00h */
	SCSITGT__SR_LUN_NOT_SUPPORTED,		 /* 25h/00h */
	SCSITGT__SR_SAVING_PARAMS_UNSUPPORTED,	 /* 39h/00h */
	SCSITGT__SR_INVALID_RELEASE_OF_PR,	 /* 26h/04h */
	SCSITGT__SR_INSUFFICIENT_REG_RESOURCES,	 /* 55h/04h */
	SCSITGT__SR_MEDIUM_REMOVAL_PREVENTED,	 /* 53h/02h */
	/* NOT READY */
	SCSITGT__SR_NOT_READY_MEDIUM_ABSENT, /* 3Ah/00h */
	SCSITGT__SR_NOT_READY_INIT_REQUIRED, /* 04h/02h */
	SCSITGT__SR_NOT_READY_IN_PROGRESS,   /* 04h/01h */
	SCSITGT__SR_NOT_READY_UNAVAILABLE,   /* 04h/0Ch ALUA unavailable */
	SCSITGT__SR_NOT_READY_STANDBY,	     /* 04h/0Bh ALUA standby */
	SCSITGT__SR_NOT_READY_TRANSITIONING, /* 04h/0Ah ALUA transition */
	/* MEDIUM ERROR */
	SCSITGT__SR_READ_ERROR,	 /* 11h/00h */
	SCSITGT__SR_WRITE_ERROR, /* 0Ch/00h */
	/* DATA PROTECT */
	SCSITGT__SR_WRITE_PROTECTED,	/* 27h/00h */
	SCSITGT__SR_SPACE_ALLOC_FAILED, /* 27h/07h */
	/* MISCOMPARE */
	SCSITGT__SR_MISCOMPARE, /* 1Dh/00h, INFORMATION = offset */
	/* HARDWARE ERROR */
	SCSITGT__SR_INTERNAL_FAILURE, /* 44h/00h */
	/* ABORTED COMMAND */
	SCSITGT__SR_ABORTED,		      /* 00h/00h */
	SCSITGT__SR_DATA_PHASE_ERROR,	      /* 4Bh/00h */
	SCSITGT__SR_INITIATOR_DETECTED_ERROR, /* 48h/00h */
	SCSITGT__SR_OVERLAPPED_COMMANDS,      /* 4Eh/00h */
	/* iSCSI transport conditions (RFC 7143 §11.4.7.2), ABORTED COMMAND too. */
	SCSITGT__SR_PROTOCOL_CRC_ERROR,		 /* 47h/05h PROTOCOL SERVICE CRC ERROR */
	SCSITGT__SR_UNEXPECTED_UNSOLICITED_DATA, /* 0Ch/0Ch */
	SCSITGT__SR_INCORRECT_DATA_AMOUNT,	 /* 0Ch/0Dh */
	/* UNIT ATTENTION */
	SCSITGT__SR_UA_POWER_ON_RESET,		  /* 29h/00h */
	SCSITGT__SR_UA_BUS_RESET,		  /* 29h/02h */
	SCSITGT__SR_UA_LUN_RESET,		  /* 29h/03h BUS DEVICE RESET FUNCTION OCCURRED */
	SCSITGT__SR_UA_NEXUS_LOSS,		  /* 29h/07h */
	SCSITGT__SR_UA_MODE_PARAMS_CHANGED,	  /* 2Ah/01h */
	SCSITGT__SR_UA_RESERVATIONS_PREEMPTED,	  /* 2Ah/03h */
	SCSITGT__SR_UA_RESERVATIONS_RELEASED,	  /* 2Ah/04h */
	SCSITGT__SR_UA_REGISTRATIONS_PREEMPTED,	  /* 2Ah/05h */
	SCSITGT__SR_UA_ASYMMETRIC_ACCESS_CHANGED, /* 2Ah/06h */
	SCSITGT__SR_UA_CAPACITY_CHANGED,	  /* 2Ah/09h */
	SCSITGT__SR_UA_REPORTED_LUNS_CHANGED,	  /* 3Fh/0Eh */
	SCSITGT__SR_UA_COMMANDS_CLEARED_BY_OTHER, /* 2Fh/00h */
	SCSITGT__SR_UA_MEDIUM_CHANGED,		  /* 28h/00h */
	/* SANITIZE (SBC-4 §4.33) */
	SCSITGT__SR_NOT_READY_SANITIZE, /* NOT READY 04h/1Bh SANITIZE IN PROGRESS */
	SCSITGT__SR_SANITIZE_FAILED,	/* MEDIUM ERROR 31h/03h SANITIZE COMMAND FAILED */
	/* NOT READY 04h/09h LOGICAL UNIT NOT READY, SELF-TEST IN PROGRESS (spc_selftest.c) */
	SCSITGT__SR_NOT_READY_SELF_TEST,
	/* NOT READY 04h/12h LOGICAL UNIT NOT READY, OFFLINE (scsitgt_lun_set_offline) */
	SCSITGT__SR_NOT_READY_OFFLINE,
	/* Statuses without sense data. */
	SCSITGT__SR_RESERVATION_CONFLICT,
	SCSITGT__SR_BUSY,
	SCSITGT__SR_TASK_SET_FULL,
	/* A reason supplied as raw key/ASC/ASCQ by a backend (scsitgt_io_complete_sense). */
	SCSITGT__SR_RAW,
	SCSITGT__SR_COUNT_
};

struct scsitgt__sense_info {
	uint8_t status; /* SAM status */
	uint8_t key;
	uint8_t asc;
	uint8_t ascq;
};

/* Table lookup; never NULL for a reason below SCSITGT__SR_COUNT_. */
const struct scsitgt__sense_info *scsitgt__sense_lookup(enum scsitgt__sense_reason reason);

/* The extra details sense data may carry. */
struct scsitgt__sense_detail {
	bool info_valid;
	uint64_t info; /* INFORMATION field (e.g. the LBA or the miscompare offset) */
	bool sks_valid;
	bool sks_cdb; /* C/D: the field pointer points into the CDB (else the parameter list) */
	bool sks_bpv; /* bit pointer valid */
	uint8_t sks_bit;
	uint16_t sks_field; /* byte offset of the bad field */
};

/* Sizes of the encodings we produce (fixed: 18 bytes; descriptor: 8 + 12 + 8). */
#define SCSITGT_SENSE_BUF_SIZE 48

/*
 * Encode sense data (SPC-5 §4.4.2 descriptor format, §4.4.3 fixed format).
 * Returns the number of bytes written to buf (at most SCSITGT_SENSE_BUF_SIZE).
 */
size_t scsitgt__sense_encode(uint8_t *buf, bool descriptor, uint8_t key, uint8_t asc, uint8_t ascq,
			     const struct scsitgt__sense_detail *detail);

#endif /* SCSITGT_CORE_SENSE_H */
