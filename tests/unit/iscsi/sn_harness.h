/* SPDX-License-Identifier: MIT */
/*
 * What the CmdSN tests (test_cmdsn_gap.c, test_cmdsn_reject.c, test_tmf_order.c,
 * test_cmdsn_held.c) ask of a harness session: which tags the target answered or rejected, a
 * TMF's response, a TEST UNIT READY, a one-block WRITE, a TMF, a NOP-Out, a Text or a Logout
 * Request at a chosen CmdSN, and a session that ends idle at a known ExpCmdSN. Header-only:
 * include after cmocka.h and iscsi_harness.h.
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

/* The reason of the Reject of the PDU whose ITT was @itt, and (@exp_cmd_sn not NULL) the
 * ExpCmdSN it carried; -1 if none came. */
static inline int sn_reject_reason(const struct harness *h, uint32_t itt, uint32_t *exp_cmd_sn)
{
	for (unsigned int i = 0; i < h->npdus; i++) {
		const struct h_pdu *p = &h->pdus[i];

		if (scsitgt__bhs_opcode(p->bhs) != ISCSI_OP_REJECT || p->len < ISCSI_BHS_LEN ||
		    scsitgt__bhs_itt(p->data) != itt)
			continue;
		if (exp_cmd_sn)
			*exp_cmd_sn = get_be32(&p->bhs[ISCSI_BHS_EXPCMDSN]);
		return p->bhs[ISCSI_REJECT_REASON];
	}
	return -1;
}

/* A TMF Request @func on LUN 0, immediate or not, with CmdSN @sn, Referenced Task Tag @rtt and
 * RefCmdSN @ref; returns its ITT. */
static inline uint32_t sn_tmf(struct harness *h, uint8_t func, bool immediate, uint32_t sn,
			      uint32_t rtt, uint32_t ref)
{
	uint8_t bhs[ISCSI_BHS_LEN];

	scsitgt__bhs_init(bhs, ISCSI_OP_TMF_REQ | (immediate ? ISCSI_FLAG_IMMEDIATE : 0),
			  ISCSI_FLAG_FINAL | func);
	put_be32(&bhs[ISCSI_BHS_ITT], ++h->itt);
	put_be32(&bhs[ISCSI_TMF_RTT], rtt);
	put_be32(&bhs[ISCSI_BHS_CMDSN], sn);
	put_be32(&bhs[ISCSI_TMF_REFCMDSN], ref);
	h_send(h, bhs, NULL, 0);
	return h->itt;
}

/* A TMF @func naming no task (ABORT TASK SET, CLEAR TASK SET, LOGICAL UNIT RESET...) with
 * CmdSN and RefCmdSN @sn, immediate or not; returns its ITT. */
static inline uint32_t sn_tmf_at(struct harness *h, uint8_t func, uint32_t sn, bool immediate)
{
	return sn_tmf(h, func, immediate, sn, ISCSI_RESERVED_TAG, sn);
}

/* An immediate ABORT TASK of @rtt with CmdSN @sn and RefCmdSN @ref; returns its ITT. */
static inline uint32_t sn_abort_task(struct harness *h, uint32_t sn, uint32_t rtt, uint32_t ref)
{
	return sn_tmf(h, ISCSI_TMF_ABORT_TASK, true, sn, rtt, ref);
}

/* A non-immediate NOP-Out ping with CmdSN @sn and @len bytes of 0x5a; returns its ITT. */
static inline uint32_t sn_nop_at(struct harness *h, uint32_t sn, uint32_t len)
{
	uint8_t bhs[ISCSI_BHS_LEN], data[1024];

	assert_true(len <= sizeof(data));
	memset(data, 0x5a, len);
	scsitgt__bhs_init(bhs, ISCSI_OP_NOP_OUT, ISCSI_FLAG_FINAL);
	put_be32(&bhs[ISCSI_BHS_ITT], ++h->itt);
	put_be32(&bhs[ISCSI_BHS_TTT], ISCSI_RESERVED_TAG);
	put_be32(&bhs[ISCSI_BHS_CMDSN], sn);
	scsitgt__bhs_set_dsl(bhs, len);
	h_send(h, bhs, data, len);
	return h->itt;
}

/* A non-immediate Text Request (F=1) with CmdSN @sn, Target Transfer Tag @ttt and the @len
 * bytes of @text; returns its ITT. */
static inline uint32_t sn_text_at(struct harness *h, uint32_t sn, uint32_t ttt, const char *text,
				  uint32_t len)
{
	uint8_t bhs[ISCSI_BHS_LEN];

	scsitgt__bhs_init(bhs, ISCSI_OP_TEXT_REQ, ISCSI_FLAG_FINAL);
	put_be32(&bhs[ISCSI_BHS_ITT], ++h->itt);
	put_be32(&bhs[ISCSI_BHS_TTT], ttt);
	put_be32(&bhs[ISCSI_BHS_CMDSN], sn);
	scsitgt__bhs_set_dsl(bhs, len);
	h_send(h, bhs, text, len);
	return h->itt;
}

/* A non-immediate Logout Request with reason code @reason for CID @cid and CmdSN @sn; returns
 * its ITT. */
static inline uint32_t sn_logout_at(struct harness *h, uint8_t reason, uint16_t cid, uint32_t sn)
{
	uint8_t bhs[ISCSI_BHS_LEN];

	scsitgt__bhs_init(bhs, ISCSI_OP_LOGOUT_REQ, ISCSI_FLAG_FINAL | reason);
	put_be32(&bhs[ISCSI_BHS_ITT], ++h->itt);
	put_be16(&bhs[ISCSI_LOGOUT_CID], cid);
	put_be32(&bhs[ISCSI_BHS_CMDSN], sn);
	h_send(h, bhs, NULL, 0);
	return h->itt;
}

/* Whether the SCSI Response to @itt says GOOD. */
static inline bool sn_good(const struct harness *h, uint32_t itt)
{
	for (unsigned int i = 0; i < h->npdus; i++) {
		const uint8_t *b = h->pdus[i].bhs;

		if (scsitgt__bhs_opcode(b) == ISCSI_OP_SCSI_RSP && scsitgt__bhs_itt(b) == itt)
			return b[ISCSI_RSP_RESPONSE] == ISCSI_RSP_COMPLETED &&
			       b[ISCSI_RSP_STATUS] == 0;
	}
	return false;
}

/* A one-block WRITE(10) at CmdSN @sn without data: its ITT; *@ttt is its R2T's tag. */
static inline uint32_t sn_write_at(struct harness *h, uint32_t sn, uint32_t *ttt)
{
	uint8_t bhs[ISCSI_BHS_LEN];
	uint32_t itt;

	h_cmd_bhs(h, bhs, ISCSI_FLAG_FINAL | ISCSI_CMD_FLAG_WRITE, 512, 0x2a, 0, 1);
	put_be32(&bhs[ISCSI_BHS_CMDSN], sn);
	itt = h->itt;
	h_send(h, bhs, NULL, 0);
	*ttt = ISCSI_RESERVED_TAG;
	for (unsigned int i = 0; i < h->npdus; i++) {
		const uint8_t *b = h->pdus[i].bhs;

		if (scsitgt__bhs_opcode(b) == ISCSI_OP_R2T && scsitgt__bhs_itt(b) == itt)
			*ttt = get_be32(&b[ISCSI_BHS_TTT]);
	}
	return itt;
}

/* The one block of sn_write_at()'s WRITE @itt, answering its R2T @ttt. */
static inline void sn_write_data(struct harness *h, uint32_t itt, uint32_t ttt)
{
	uint8_t bhs[ISCSI_BHS_LEN], block[512];

	memset(block, 0xa5, sizeof(block));
	scsitgt__bhs_init(bhs, ISCSI_OP_DATA_OUT, ISCSI_FLAG_FINAL);
	put_be32(&bhs[ISCSI_BHS_ITT], itt);
	put_be32(&bhs[ISCSI_BHS_TTT], ttt);
	scsitgt__bhs_set_dsl(bhs, sizeof(block));
	h_send(h, bhs, block, sizeof(block));
}

/* LUN 0 of 1024 blocks on a RAM backend wrapped by the fault backend with the rules of
 * @spec (backend_fault.h); *@fault is its context. Include libscsitgt/backend_fault.h. */
static inline void sn_fault_lun(struct harness *h, const char *spec, void **fault)
{
	struct scsitgt_lun_opts lo;
	struct scsitgt_lun *lun;
	void *ram;

	assert_int_equal(scsitgt_backend_ram_create(&ram), 0);
	assert_int_equal(
		scsitgt_backend_fault_create(fault, &h->loop, scsitgt_backend_ram_ops(), ram), 0);
	assert_true(scsitgt_backend_fault_add_spec(*fault, spec) >= 1);
	scsitgt_lun_opts_init(&lo, sizeof(lo));
	lo.block_size = 512;
	lo.num_blocks = 1024;
	lo.backend = scsitgt_backend_fault_ops(*fault);
	lo.backend_ctx = *fault;
	assert_int_equal(scsitgt_lun_create(&lun, h->tgt, &lo), 0);
}

/* A normal session whose LUN 0 holds every write (sn_fault_lun() "hang@write", *@fault), and
 * a one-block WRITE (10) at ExpCmdSN (*@exp) with its data immediate, which the backend holds:
 * its ITT. */
static inline uint32_t sn_start_held_write(struct harness *h, uint32_t *exp, void **fault)
{
	uint8_t bhs[ISCSI_BHS_LEN], data[512];
	struct scsitgt_fault_stats st = { .size = sizeof(st) };
	uint32_t w;

	assert_int_equal(h_init(h, false), 0);
	sn_fault_lun(h, "hang@write", fault);
	assert_int_equal(h_login(h, "Normal"), 0);
	*exp = h->conn->sess->exp_cmd_sn;
	memset(data, 0x11, sizeof(data));
	h_cmd_bhs(h, bhs, ISCSI_FLAG_FINAL | ISCSI_CMD_FLAG_WRITE, 512, 0x2a, 0, 1);
	put_be32(&bhs[ISCSI_BHS_CMDSN], *exp);
	scsitgt__bhs_set_dsl(bhs, sizeof(data));
	w = h->itt;
	h_send(h, bhs, data, sizeof(data));
	assert_int_equal(scsitgt_backend_fault_get_stats(*fault, &st), 0);
	assert_int_equal(st.held, 1);
	return w;
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

/* sn_start(), then sn_write_at() at ExpCmdSN, waiting for the answer to its R2T @ttt. */
static inline uint32_t sn_start_write(struct harness *h, uint32_t *exp, uint32_t *ttt)
{
	uint32_t w;

	sn_start(h, exp);
	w = sn_write_at(h, *exp, ttt);
	assert_int_not_equal(*ttt, ISCSI_RESERVED_TAG);
	return w;
}

/* @held, a TEST UNIT READY held ahead of ExpCmdSN @exp, was aborted: its task is gone; the
 * command that fills the gap at @exp then runs GOOD, and @held is never answered (an aborted
 * task gets no response, SAM-5 §5.6). */
static inline void sn_assert_held_aborted(struct harness *h, uint32_t held, uint32_t exp)
{
	assert_true(h_task_gone(h, held));
	assert_true(sn_good(h, sn_tur_at(h, exp)));
	assert_false(sn_answered(h, held));
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
