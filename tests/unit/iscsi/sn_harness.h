/* SPDX-License-Identifier: MIT */
/*
 * What the CmdSN tests (test_cmdsn_gap.c, test_cmdsn_reject.c) ask of a harness session: which
 * tags the target answered, a TMF's response, a TEST UNIT READY at a chosen CmdSN, and a
 * session that ends idle at a known ExpCmdSN. Header-only: include after cmocka.h and
 * iscsi_harness.h.
 */
#ifndef SCSITGT_TEST_SN_HARNESS_H
#define SCSITGT_TEST_SN_HARNESS_H

/* Whether the target answered @itt (SCSI Response, Data-In with status, NOP-In, TMF, Text or
 * Logout Response). */
static inline bool sn_answered(const struct harness *h, uint32_t itt)
{
	for (unsigned int i = 0; i < h->npdus; i++) {
		const uint8_t *b = h->pdus[i].bhs;
		uint8_t op = scsitgt__bhs_opcode(b);

		if (scsitgt__bhs_itt(b) != itt)
			continue;
		if (op == ISCSI_OP_SCSI_RSP || op == ISCSI_OP_NOP_IN || op == ISCSI_OP_TMF_RSP ||
		    op == ISCSI_OP_TEXT_RSP || op == ISCSI_OP_LOGOUT_RSP ||
		    (op == ISCSI_OP_DATA_IN && (b[ISCSI_BHS_FLAGS] & ISCSI_DATAIN_FLAG_STATUS)))
			return true;
	}
	return false;
}

/* The TMF response to @itt, or -1. */
static inline int sn_tmf_response(const struct harness *h, uint32_t itt)
{
	for (unsigned int i = 0; i < h->npdus; i++) {
		const uint8_t *b = h->pdus[i].bhs;

		if (scsitgt__bhs_opcode(b) == ISCSI_OP_TMF_RSP && scsitgt__bhs_itt(b) == itt)
			return b[ISCSI_RSP_RESPONSE];
	}
	return -1;
}

/* A TEST UNIT READY with CmdSN @sn and ITT @itt. */
static inline void sn_tur_itt(struct harness *h, uint32_t sn, uint32_t itt)
{
	uint8_t bhs[ISCSI_BHS_LEN];

	h_cmd_bhs(h, bhs, ISCSI_FLAG_FINAL, 0, 0x00, 0, 0);
	put_be32(&bhs[ISCSI_BHS_ITT], itt);
	put_be32(&bhs[ISCSI_BHS_CMDSN], sn);
	h_send(h, bhs, NULL, 0);
}

/* A TEST UNIT READY with CmdSN @sn and a fresh ITT, which it returns. */
static inline uint32_t sn_tur_at(struct harness *h, uint32_t sn)
{
	uint32_t itt = h->itt + 1;

	sn_tur_itt(h, sn, itt);
	return itt;
}

/* An immediate ABORT TASK of @rtt with CmdSN @sn and RefCmdSN @ref; returns its ITT. */
static inline uint32_t sn_abort_task(struct harness *h, uint32_t sn, uint32_t rtt, uint32_t ref)
{
	uint8_t bhs[ISCSI_BHS_LEN];

	scsitgt__bhs_init(bhs, ISCSI_OP_TMF_REQ | ISCSI_FLAG_IMMEDIATE,
			  ISCSI_FLAG_FINAL | ISCSI_TMF_ABORT_TASK);
	put_be32(&bhs[ISCSI_BHS_ITT], ++h->itt);
	put_be32(&bhs[ISCSI_TMF_RTT], rtt);
	put_be32(&bhs[ISCSI_BHS_CMDSN], sn);
	put_be32(&bhs[ISCSI_TMF_REFCMDSN], ref);
	h_send(h, bhs, NULL, 0);
	return h->itt;
}

/* A normal session with LUN 0 whose first CmdSN is @first; *@exp is its ExpCmdSN. */
static inline void sn_start_at(struct harness *h, uint32_t *exp, uint32_t first)
{
	assert_int_equal(h_init(h, true), 0);
	h->cmd_sn = first;
	assert_int_equal(h_login(h, "Normal"), 0);
	*exp = h->conn->sess->exp_cmd_sn;
	assert_int_equal(*exp, first);
}

static inline void sn_start(struct harness *h, uint32_t *exp)
{
	assert_int_equal(h_init(h, true), 0);
	assert_int_equal(h_login(h, "Normal"), 0);
	*exp = h->conn->sess->exp_cmd_sn;
}

/* The session is idle (nothing held or running) and ExpCmdSN is @want; then it goes. */
static inline void sn_finish(struct harness *h, uint32_t want)
{
	assert_int_equal(h->conn->sess->exp_cmd_sn, want);
	assert_true(scsitgt__list_empty(&h->conn->sess->pending));
	assert_int_equal(h->conn->ntasks, 0);
	assert_int_equal(h->conn->sess->active, 0);
	assert_false(h_conn_gone(h));
	h_fini(h);
}

#endif /* SCSITGT_TEST_SN_HARNESS_H */
