/* SPDX-License-Identifier: MIT */
/*
 * Fuzz an iSCSI connection in full feature phase: the login is done by the harness (keys picked
 * by the first input byte), then the input is a sequence of PDUs sent on the logged-in
 * connection: SCSI Commands with immediate and unsolicited data, Data-Out answering the R2Ts
 * the target sent, SNACK, NOP-Out, Text, Task Management, Logout, in any order. fuzz_login
 * reaches this phase only when the fuzzer writes a whole login first; here every input starts
 * there, and the harness patches the fields an initiator computes from what the target sent
 * (CmdSN, ExpStatSN, the ITT/TTT/offset of the latest R2T) when a record asks for it, so that
 * the PDUs land in the command window and the Data-Out sequences reach the code that checks
 * them. Input layout:
 *   byte 0      login keys (FZ_LOGIN_*)
 *   then up to 64 records: [control (FZ_*)][BHS, 48 bytes][data length, 2 bytes BE][data]
 * The harness seals each PDU (DataSegmentLength, padding, digests); TotalAHSLength is zeroed
 * (fuzz_login and fuzz_pdu cover the framing). Nothing may crash, hang or leak.
 */
#include <stddef.h>
#include <stdint.h>

#include "../unit/iscsi/iscsi_harness.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum {
	FZ_LOGIN_INITIAL_R2T = 1u << 0,
	FZ_LOGIN_NO_IMMEDIATE = 1u << 1,
	FZ_LOGIN_SMALL_BURST = 1u << 2, /* 1 KiB bursts, 512-byte segments: many R2Ts/Data-In */
	FZ_LOGIN_DIGESTS = 1u << 3,
	FZ_LOGIN_ONE_R2T = 1u << 4,
	FZ_LOGIN_DISCOVERY = 1u << 5,
};

enum {
	FZ_CMDSN = 1u << 0,	/* CmdSN = the next one; a non-immediate PDU advances it */
	FZ_NEW_ITT = 1u << 1,	/* ITT = a fresh one */
	FZ_LAST_ITT = 1u << 2,	/* ITT = the latest fresh one */
	FZ_R2T = 1u << 3,	/* ITT, TTT and Buffer Offset of the latest R2T */
	FZ_EXPSTATSN = 1u << 4, /* ExpStatSN = the latest StatSN + 1 */
	FZ_KEEP_LUN = 1u << 5,	/* otherwise LUN 0 */
	FZ_EDTL = 1u << 6, /* SCSI Command: EDTL = data length + the 2 bytes of TTT's low half */
};

#define FZ_RECORDS 64

static int fz_login(struct harness *h, uint8_t k)
{
	uint8_t bhs[ISCSI_BHS_LEN];
	char text[2048], keys[1024];
	uint32_t len;
	struct h_pdu *r;

	snprintf(keys, sizeof(keys),
		 "InitiatorName=%s|%s|HeaderDigest=%s|DataDigest=%s|InitialR2T=%s|"
		 "ImmediateData=%s|MaxBurstLength=%s|FirstBurstLength=%s|MaxOutstandingR2T=%s|"
		 "MaxRecvDataSegmentLength=%s|DataPDUInOrder=Yes|DataSequenceInOrder=Yes|"
		 "MaxConnections=1|DefaultTime2Wait=2|DefaultTime2Retain=0|ErrorRecoveryLevel=0",
		 H_INITIATOR,
		 (k & FZ_LOGIN_DISCOVERY) ? "SessionType=Discovery" :
					    "TargetName=" H_TARGET "|SessionType=Normal",
		 (k & FZ_LOGIN_DIGESTS) ? "CRC32C" : "None",
		 (k & FZ_LOGIN_DIGESTS) ? "CRC32C" : "None",
		 (k & FZ_LOGIN_INITIAL_R2T) ? "Yes" : "No",
		 (k & FZ_LOGIN_NO_IMMEDIATE) ? "No" : "Yes",
		 (k & FZ_LOGIN_SMALL_BURST) ? "1024" : "131072",
		 (k & FZ_LOGIN_SMALL_BURST) ? "512" : "65536", (k & FZ_LOGIN_ONE_R2T) ? "1" : "4",
		 (k & FZ_LOGIN_SMALL_BURST) ? "512" : "8192");
	len = h_text(text, sizeof(text), keys);
	/* CSG=1 (operational), NSG=3, T=1. */
	h_login_bhs(h, bhs, ISCSI_LOGIN_FLAG_TRANSIT | (1 << ISCSI_LOGIN_CSG_SHIFT) | 3, 0);
	h_send(h, bhs, text, len);
	r = h_take(h);
	if (r == NULL || scsitgt__bhs_opcode(r->bhs) != ISCSI_OP_LOGIN_RSP ||
	    r->bhs[ISCSI_LOGIN_STATUS_CLASS] != 0 || h_conn_gone(h))
		return -1;
	if (h->conn->sess && h->conn->sess->core)
		h->conn->sess->core->ua_no_power_on = true;
	return 0;
}

/* The latest PDU of @op the target sent, or NULL. */
static const struct h_pdu *fz_last(const struct harness *h, uint8_t op)
{
	for (unsigned int i = h->npdus; i-- > 0;)
		if (scsitgt__bhs_opcode(h->pdus[i].bhs) == op)
			return &h->pdus[i];
	return NULL;
}

/* The latest StatSN the target sent (responses carry one; Data-In only with status). */
static uint32_t fz_statsn(const struct harness *h)
{
	for (unsigned int i = h->npdus; i-- > 0;) {
		uint8_t op = scsitgt__bhs_opcode(h->pdus[i].bhs);

		if (op != ISCSI_OP_DATA_IN && op != ISCSI_OP_R2T)
			return get_be32(&h->pdus[i].bhs[ISCSI_BHS_STATSN]);
	}
	return 0;
}

static bool fz_takes_cmdsn(uint8_t op)
{
	return op == ISCSI_OP_SCSI_CMD || op == ISCSI_OP_TMF_REQ || op == ISCSI_OP_TEXT_REQ ||
	       op == ISCSI_OP_LOGOUT_REQ || op == ISCSI_OP_NOP_OUT;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct harness h;
	size_t off = 1;

	if (size < 1)
		return 0;
	if (h_init(&h, true) != 0)
		abort();
	if (fz_login(&h, data[0]) != 0)
		abort();
	for (int n = 0; n < FZ_RECORDS && size - off >= 1 + ISCSI_BHS_LEN && !h_conn_gone(&h);
	     n++) {
		uint8_t ctl = data[off], bhs[ISCSI_BHS_LEN], op;
		const uint8_t *d = NULL;
		uint32_t dlen = 0;

		memcpy(bhs, &data[off + 1], ISCSI_BHS_LEN);
		off += 1 + ISCSI_BHS_LEN;
		if (size - off >= 2) {
			dlen = (uint32_t)data[off] << 8 | data[off + 1];
			off += 2;
			if (dlen > size - off)
				dlen = (uint32_t)(size - off);
			d = &data[off];
			off += dlen;
		}
		op = scsitgt__bhs_opcode(bhs);
		bhs[ISCSI_BHS_TOTAL_AHS_LEN] = 0;
		if (!(ctl & FZ_KEEP_LUN) && op != ISCSI_OP_LOGIN_REQ && op != ISCSI_OP_LOGOUT_REQ)
			memset(&bhs[ISCSI_BHS_LUN], 0, 8);
		if (ctl & FZ_CMDSN) {
			put_be32(&bhs[ISCSI_BHS_CMDSN], h.cmd_sn);
			if (!(bhs[0] & ISCSI_FLAG_IMMEDIATE) && fz_takes_cmdsn(op))
				h.cmd_sn++;
		}
		if (ctl & FZ_NEW_ITT)
			put_be32(&bhs[ISCSI_BHS_ITT], ++h.itt);
		if (ctl & FZ_LAST_ITT)
			put_be32(&bhs[ISCSI_BHS_ITT], h.itt);
		if (ctl & FZ_R2T) {
			const struct h_pdu *r2t = fz_last(&h, ISCSI_OP_R2T);

			if (r2t) {
				memcpy(&bhs[ISCSI_BHS_ITT], &r2t->bhs[ISCSI_BHS_ITT], 8);
				memcpy(&bhs[ISCSI_BHS_BUFFER_OFFSET],
				       &r2t->bhs[ISCSI_BHS_BUFFER_OFFSET], 4);
			}
		}
		if (ctl & FZ_EXPSTATSN)
			put_be32(&bhs[ISCSI_BHS_EXPSTATSN], fz_statsn(&h) + 1);
		if ((ctl & FZ_EDTL) && op == ISCSI_OP_SCSI_CMD)
			put_be32(&bhs[ISCSI_CMD_EDTL], dlen + get_be16(&bhs[ISCSI_BHS_TTT + 2]));
		h_send(&h, bhs, d, dlen);
	}
	h_fini(&h);
	return 0;
}
