/* SPDX-License-Identifier: MIT */
/*
 * A login straight to full feature phase over the iSCSI harness's data mover (marked rdma by
 * the test's ops), for the iSER tests of the data-mover seam (test_dm_*.c).
 */
#ifndef SCSITGT_TEST_ISER_LOGIN_H
#define SCSITGT_TEST_ISER_LOGIN_H

#include "../iscsi/iscsi_harness.h"

/*
 * One Login Request (CSG 1, NSG 3, T=1) with "InitiatorName=...|HeaderDigest=None|
 * DataDigest=None|" and the '|' separated @keys; returns its Login Response, which must
 * succeed with RDMAExtensions=Yes.
 */
static inline struct h_pdu *iser_login(struct harness *h, const char *keys)
{
	uint8_t bhs[ISCSI_BHS_LEN];
	char text[2048], all[2048];
	struct h_pdu *r;
	uint32_t len;

	snprintf(all, sizeof(all), "InitiatorName=%s|HeaderDigest=None|DataDigest=None|%s",
		 H_INITIATOR, keys);
	len = h_text(text, sizeof(text), all);
	h_login_bhs(h, bhs, ISCSI_LOGIN_FLAG_TRANSIT | (1 << ISCSI_LOGIN_CSG_SHIFT) | 3, 0);
	h_send(h, bhs, text, len);
	r = h_take(h);
	assert_non_null(r);
	assert_int_equal(scsitgt__bhs_opcode(r->bhs), ISCSI_OP_LOGIN_RSP);
	assert_int_equal(r->bhs[ISCSI_LOGIN_STATUS_CLASS], 0);
	assert_string_equal(h_find_key(r, "RDMAExtensions"), "Yes");
	assert_true(h->conn->sess != NULL);
	return r;
}

#endif /* SCSITGT_TEST_ISER_LOGIN_H */
