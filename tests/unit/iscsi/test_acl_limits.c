/* SPDX-License-Identifier: MIT */
/*
 * iSCSI side of access control and limits: logins refused by source address ("authorization
 * failure", RFC 7143 §11.13.5 0x0202), SendTargets filtered by address, the session limit of a
 * target ("out of resources", 0x0302), immediate commands bounded by the CmdSN window
 * (Reject reason 0x06, RFC 7143 §11.17.1), discovery CHAP, and writes whose EDTL differs from
 * their CDB.
 */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "iscsi_harness.h"

static void set_peer(struct harness *h, const char *v4)
{
	struct sockaddr_in *in = (struct sockaddr_in *)&h->conn->peer_sa;

	memset(&h->conn->peer_sa, 0, sizeof(h->conn->peer_sa));
	in->sin_family = AF_INET;
	in->sin_port = htons(40000);
	assert_int_equal(inet_pton(AF_INET, v4, &in->sin_addr), 1);
}

static void test_address_login(void **state)
{
	struct harness h;

	(void)state;
	assert_int_equal(h_init(&h, true), 0);
	assert_int_equal(scsitgt_target_add_address(h.tgt, "10.0.0.0/8"), 0);
	set_peer(&h, "127.0.0.1");
	assert_int_equal(h_login(&h, "Normal"), 0x0202);
	assert_true(h_conn_gone(&h));
	h_fini(&h);

	assert_int_equal(h_init(&h, true), 0);
	assert_int_equal(scsitgt_target_add_address(h.tgt, "10.0.0.0/8"), 0);
	set_peer(&h, "10.20.30.40");
	assert_int_equal(h_login(&h, "Normal"), 0);
	h_fini(&h);

	/* The initiator's own range narrows the target's. */
	assert_int_equal(h_init(&h, true), 0);
	assert_int_equal(scsitgt_target_add_initiator_address(h.tgt, H_INITIATOR, "10.0.0.1"), 0);
	set_peer(&h, "10.0.0.2");
	assert_int_equal(h_login(&h, "Normal"), 0x0202);
	h_fini(&h);

	/* No known peer address (family 0) while a list applies: refused. */
	assert_int_equal(h_init(&h, true), 0);
	assert_int_equal(scsitgt_target_add_address(h.tgt, "0.0.0.0/0"), 0);
	assert_int_equal(h_login(&h, "Normal"), 0x0202);
	h_fini(&h);
}

static struct h_pdu *send_targets(struct harness *h, uint32_t itt)
{
	uint8_t bhs[ISCSI_BHS_LEN];
	char text[64];
	uint32_t len = h_text(text, sizeof(text), "SendTargets=All");

	scsitgt__bhs_init(bhs, ISCSI_OP_TEXT_REQ | ISCSI_FLAG_IMMEDIATE, ISCSI_FLAG_FINAL);
	put_be32(&bhs[ISCSI_BHS_ITT], itt);
	put_be32(&bhs[ISCSI_BHS_TTT], ISCSI_RESERVED_TAG);
	put_be32(&bhs[ISCSI_BHS_CMDSN], 1);
	h_send(h, bhs, text, len);
	return h_take(h);
}

static void test_send_targets_by_address(void **state)
{
	struct harness h;
	struct h_pdu *r;

	(void)state;
	assert_int_equal(h_init(&h, false), 0);
	set_peer(&h, "192.0.2.1");
	assert_int_equal(h_login(&h, "Discovery"), 0);
	r = send_targets(&h, 9);
	assert_non_null(r);
	assert_string_equal(h_find_key(r, "TargetName"), H_TARGET);
	/* Discovery itself is open; the target is listed only where a login could succeed. */
	assert_int_equal(scsitgt_target_add_address(h.tgt, "198.51.100.0/24"), 0);
	r = send_targets(&h, 10);
	assert_non_null(r);
	assert_int_equal(scsitgt__bhs_opcode(r->bhs), ISCSI_OP_TEXT_RSP);
	assert_null(h_find_key(r, "TargetName"));
	assert_int_equal(scsitgt_target_add_address(h.tgt, "192.0.2.0/30"), 0);
	r = send_targets(&h, 11);
	assert_non_null(r);
	assert_string_equal(h_find_key(r, "TargetName"), H_TARGET);
	/* Per-initiator ranges count too. */
	assert_int_equal(scsitgt_target_add_initiator_address(h.tgt, H_INITIATOR, "192.0.2.2"), 0);
	r = send_targets(&h, 12);
	assert_non_null(r);
	assert_null(h_find_key(r, "TargetName"));
	h_fini(&h);
}

static void test_session_limit(void **state)
{
	struct harness h;

	(void)state;
	/* 0: no limit. */
	assert_int_equal(h_init(&h, true), 0);
	h.tgt->max_sessions = 0;
	assert_int_equal(h_login(&h, "Normal"), 0);
	h_fini(&h);

	assert_int_equal(h_init(&h, true), 0);
	h.tgt->max_sessions = 1;
	{
		/* One session of another initiator already holds the only slot: the login is
		 * refused before any authentication. */
		struct scsitgt__iscsi_engine *ie = h.portal.ie;
		struct scsitgt__iscsi_sess fake;

		memset(&fake, 0, sizeof(fake));
		fake.tgt = h.tgt;
		snprintf(fake.initiator_name, sizeof(fake.initiator_name), "iqn.2026-11.org.x:y");
		scsitgt__list_add_tail(&ie->sessions, &fake.node);
		assert_int_equal(h_login(&h, "Normal"), 0x0302);
		scsitgt__list_remove(&fake.node);
	}
	h_fini(&h);
}

static void cmd_bhs(struct harness *h, uint8_t *bhs, uint32_t lba, bool immediate)
{
	scsitgt__bhs_init(bhs, ISCSI_OP_SCSI_CMD | (immediate ? ISCSI_FLAG_IMMEDIATE : 0),
			  ISCSI_FLAG_FINAL | ISCSI_CMD_FLAG_WRITE | 1);
	put_be32(&bhs[ISCSI_BHS_ITT], ++h->itt);
	put_be32(&bhs[ISCSI_CMD_EDTL], 512);
	put_be32(&bhs[ISCSI_BHS_CMDSN], h->cmd_sn);
	bhs[ISCSI_CMD_CDB] = 0x2a; /* WRITE (10) */
	put_be32(&bhs[ISCSI_CMD_CDB + 2], lba);
	put_be16(&bhs[ISCSI_CMD_CDB + 7], 1);
}

static void test_immediate_window(void **state)
{
	struct scsitgt_iscsi_params p;
	uint8_t bhs[ISCSI_BHS_LEN];
	struct harness h;
	struct h_pdu *r;
	uint32_t max_sn;

	(void)state;
	assert_int_equal(h_init(&h, true), 0);
	scsitgt_iscsi_params_init(&p, sizeof(p));
	p.queue_depth = 2;
	assert_int_equal(scsitgt_iscsi_target_set_params(h.tgt, &p), 0);
	assert_int_equal(h_login(&h, "Normal"), 0);
	/* Two immediate writes wait for Data-Out, each holding a window slot. */
	for (int i = 0; i < 2; i++) {
		cmd_bhs(&h, bhs, (uint32_t)i, true);
		h_send(&h, bhs, NULL, 0);
		r = h_take(&h);
		assert_non_null(r);
		assert_int_equal(scsitgt__bhs_opcode(r->bhs), ISCSI_OP_R2T);
	}
	/* The window is full: a third immediate command is rejected, header returned. */
	cmd_bhs(&h, bhs, 2, true);
	h_send(&h, bhs, NULL, 0);
	r = h_take(&h);
	assert_non_null(r);
	assert_int_equal(scsitgt__bhs_opcode(r->bhs), ISCSI_OP_REJECT);
	assert_int_equal(r->bhs[ISCSI_REJECT_REASON], ISCSI_REJECT_IMM_CMD_REJECT);
	assert_int_equal(r->len, ISCSI_BHS_LEN);
	assert_int_equal(get_be32(&r->data[ISCSI_BHS_ITT]), h.itt);
	assert_int_equal(h.conn->ntasks, 2);
	/* MaxCmdSN does not move back (RFC 7143 §4.2.2.1), but it does not advance either. */
	max_sn = get_be32(&r->bhs[ISCSI_BHS_MAXCMDSN]);
	assert_true(max_sn - get_be32(&r->bhs[ISCSI_BHS_EXPCMDSN]) + 1 <= 2);
	h_fini(&h);
}

static void test_discovery_chap(void **state)
{
	struct harness h;

	(void)state;
	assert_int_equal(h_init(&h, true), 0);
	assert_int_equal(scsitgt_iscsi_engine_set_discovery_chap(h.engine, "u", "x"), -EINVAL);
	assert_int_equal(scsitgt_iscsi_engine_set_discovery_chap(h.engine, "u", NULL), -EINVAL);
	assert_int_equal(scsitgt_iscsi_engine_set_discovery_chap(NULL, NULL, NULL), -EINVAL);
	assert_int_equal(
		scsitgt_iscsi_engine_set_discovery_chap(h.engine, "disc", "discovery-secret-1"), 0);
	assert_int_equal(scsitgt_iscsi_engine_set_discovery_mutual_chap(h.engine, "tgt",
									"target-secret-2222"),
			 0);
	/* A discovery login that skips authentication fails. */
	assert_int_equal(h_login(&h, "Discovery"), 0x0201);
	h_fini(&h);

	/* Normal sessions are not affected; turning it off opens discovery again. */
	assert_int_equal(h_init(&h, true), 0);
	assert_int_equal(
		scsitgt_iscsi_engine_set_discovery_chap(h.engine, "disc", "discovery-secret-1"), 0);
	assert_int_equal(h_login(&h, "Normal"), 0);
	h_fini(&h);
	assert_int_equal(h_init(&h, true), 0);
	assert_int_equal(
		scsitgt_iscsi_engine_set_discovery_chap(h.engine, "disc", "discovery-secret-1"), 0);
	assert_int_equal(scsitgt_iscsi_engine_set_discovery_chap(h.engine, NULL, NULL), 0);
	assert_int_equal(h_login(&h, "Discovery"), 0);
	h_fini(&h);
}

/*
 * EDTL against the CDB (RFC 7143 §11.4.5.2, scsitgt__cmd_fit_data_out()). A COMPARE AND
 * WRITE of 0 blocks with W=0 and EDTL 0 moves nothing and succeeds; a WRITE (10) of 4 blocks
 * with an EDTL of 3 writes 3 and reports a residual overflow of one block (the CDB wanted more).
 */
static void test_edtl(void **state)
{
	uint8_t bhs[ISCSI_BHS_LEN], blk[3 * 512];
	struct harness h;
	struct h_pdu *r;

	(void)state;
	assert_int_equal(h_init(&h, true), 0);
	assert_int_equal(h_login(&h, "Normal"), 0);
	scsitgt__bhs_init(bhs, ISCSI_OP_SCSI_CMD, ISCSI_FLAG_FINAL | 1);
	put_be32(&bhs[ISCSI_BHS_ITT], ++h.itt);
	put_be32(&bhs[ISCSI_CMD_EDTL], 0);
	put_be32(&bhs[ISCSI_BHS_CMDSN], h.cmd_sn++);
	bhs[ISCSI_CMD_CDB] = 0x89; /* COMPARE AND WRITE, LBA 8, NUMBER OF LOGICAL BLOCKS 0 */
	put_be32(&bhs[ISCSI_CMD_CDB + 6], 8);
	h_send(&h, bhs, NULL, 0);
	r = h_take(&h);
	assert_non_null(r);
	assert_int_equal(scsitgt__bhs_opcode(r->bhs), ISCSI_OP_SCSI_RSP);
	assert_int_equal(r->bhs[3], 0x00);
	assert_int_equal(r->bhs[ISCSI_BHS_FLAGS] & 0x06, 0);

	/* WRITE (10), 4 blocks, EDTL 3 blocks sent as immediate data. */
	memset(blk, 0xa7, sizeof(blk));
	scsitgt__bhs_init(bhs, ISCSI_OP_SCSI_CMD, ISCSI_FLAG_FINAL | ISCSI_CMD_FLAG_WRITE | 1);
	put_be32(&bhs[ISCSI_BHS_ITT], ++h.itt);
	put_be32(&bhs[ISCSI_CMD_EDTL], sizeof(blk));
	put_be32(&bhs[ISCSI_BHS_CMDSN], h.cmd_sn++);
	bhs[ISCSI_CMD_CDB] = 0x2a;
	put_be32(&bhs[ISCSI_CMD_CDB + 2], 16);
	put_be16(&bhs[ISCSI_CMD_CDB + 7], 4);
	h_send(&h, bhs, blk, sizeof(blk));
	r = h_take(&h);
	assert_non_null(r);
	assert_int_equal(scsitgt__bhs_opcode(r->bhs), ISCSI_OP_SCSI_RSP);
	assert_int_equal(r->bhs[3], 0x00);
	/* SPDTL (4 blocks) > EDTL (3): overflow of one block, seen from the CDB. */
	assert_int_equal(r->bhs[ISCSI_BHS_FLAGS] & 0x06, 0x04);
	assert_int_equal(get_be32(&r->bhs[ISCSI_BHS_RESIDUAL]), 512);
	h_fini(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_address_login),
		cmocka_unit_test(test_send_targets_by_address),
		cmocka_unit_test(test_session_limit),
		cmocka_unit_test(test_immediate_window),
		cmocka_unit_test(test_discovery_chap),
		cmocka_unit_test(test_edtl),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
