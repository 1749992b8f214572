/* SPDX-License-Identifier: MIT */
/*
 * Login state machine driven with hand-built Login PDUs: AuthMethod None, discovery and
 * SendTargets, CHAP one-way and mutual, wrong secrets, ACL refusal, unknown target, missing
 * keys, bad stage transitions.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "iscsi_harness.h"

static int status_of(const struct h_pdu *r)
{
	return r->bhs[ISCSI_LOGIN_STATUS_CLASS] << 8 | r->bhs[ISCSI_LOGIN_STATUS_DETAIL];
}

static void test_login_none(void **state)
{
	struct harness h;
	struct h_pdu *r;

	(void)state;
	assert_int_equal(h_init(&h, true), 0);
	assert_int_equal(h_login(&h, "Normal"), 0);
	r = &h.pdus[0];
	assert_true(r->bhs[ISCSI_BHS_FLAGS] & ISCSI_LOGIN_FLAG_TRANSIT);
	assert_int_equal(r->bhs[ISCSI_BHS_FLAGS] & 3, 3);
	assert_int_not_equal(get_be16(&r->bhs[ISCSI_LOGIN_TSIH]), 0);
	assert_string_equal(h_find_key(r, "TargetPortalGroupTag"), "1");
	assert_non_null(h_find_key(r, "MaxRecvDataSegmentLength"));
	assert_int_equal(h.conn->state, SCSITGT__CONN_FFP);
	/* ExpCmdSN = the login's CmdSN; the window is the queue depth (128). */
	assert_int_equal(get_be32(&r->bhs[ISCSI_BHS_EXPCMDSN]), 1);
	assert_int_equal(get_be32(&r->bhs[ISCSI_BHS_MAXCMDSN]), 128);
	h_fini(&h);
}

static void test_discovery_send_targets(void **state)
{
	uint8_t bhs[ISCSI_BHS_LEN];
	char text[64];
	struct harness h;
	struct h_pdu *r;
	uint32_t len;

	(void)state;
	assert_int_equal(h_init(&h, false), 0);
	assert_int_equal(h_login(&h, "Discovery"), 0);
	len = h_text(text, sizeof(text), "SendTargets=All");
	scsitgt__bhs_init(bhs, ISCSI_OP_TEXT_REQ | ISCSI_FLAG_IMMEDIATE, ISCSI_FLAG_FINAL);
	put_be32(&bhs[ISCSI_BHS_ITT], 9);
	put_be32(&bhs[ISCSI_BHS_TTT], ISCSI_RESERVED_TAG);
	put_be32(&bhs[ISCSI_BHS_CMDSN], 1);
	h_send(&h, bhs, text, len);
	r = h_take(&h);
	assert_non_null(r);
	assert_int_equal(scsitgt__bhs_opcode(r->bhs), ISCSI_OP_TEXT_RSP);
	assert_int_equal(scsitgt__bhs_itt(r->bhs), 9);
	assert_string_equal(h_find_key(r, "TargetName"), H_TARGET);
	assert_string_equal(h_find_key(r, "TargetAddress"), "127.0.0.1:3260,1");

	/* ACL-filtered: an initiator not on the list sees nothing. */
	assert_int_equal(scsitgt_target_add_initiator(h.tgt, "iqn.2026-11.org.example:other"), 0);
	put_be32(&bhs[ISCSI_BHS_ITT], 10);
	h_send(&h, bhs, text, len);
	r = h_take(&h);
	assert_non_null(r);
	assert_null(h_find_key(r, "TargetName"));

	/* SCSI commands are not allowed in a discovery session: Reject. */
	scsitgt__bhs_init(bhs, ISCSI_OP_SCSI_CMD, ISCSI_FLAG_FINAL);
	put_be32(&bhs[ISCSI_BHS_ITT], 11);
	put_be32(&bhs[ISCSI_BHS_CMDSN], 1);
	h_send(&h, bhs, NULL, 0);
	r = h_take(&h);
	assert_non_null(r);
	assert_int_equal(scsitgt__bhs_opcode(r->bhs), ISCSI_OP_REJECT);
	assert_int_equal(r->bhs[ISCSI_REJECT_REASON], ISCSI_REJECT_PROTOCOL_ERROR);
	assert_int_equal(r->len, ISCSI_BHS_LEN);
	h_fini(&h);
}

static void expect_refusal(const char *keys, int status, const char *acl)
{
	uint8_t bhs[ISCSI_BHS_LEN];
	char text[1024];
	struct harness h;
	struct h_pdu *r;
	uint32_t len;

	assert_int_equal(h_init(&h, false), 0);
	if (acl)
		assert_int_equal(scsitgt_target_add_initiator(h.tgt, acl), 0);
	len = h_text(text, sizeof(text), keys);
	h_login_bhs(&h, bhs, ISCSI_LOGIN_FLAG_TRANSIT | (1 << ISCSI_LOGIN_CSG_SHIFT) | 3, 0);
	h_send(&h, bhs, text, len);
	r = h_take(&h);
	assert_non_null(r);
	assert_int_equal(status_of(r), status);
	assert_false(r->bhs[ISCSI_BHS_FLAGS] & ISCSI_LOGIN_FLAG_TRANSIT);
	/* The connection closes once the refusal is written. */
	assert_true(h_conn_gone(&h));
	h_fini(&h);
}

static void test_login_refusals(void **state)
{
	(void)state;
	expect_refusal("InitiatorName=" H_INITIATOR "|TargetName=iqn.2026-11.org.example:nope",
		       ISCSI_LOGIN_STATUS_TGT_NOT_FOUND, NULL);
	expect_refusal("TargetName=" H_TARGET, ISCSI_LOGIN_STATUS_MISSING_FIELDS, NULL);
	expect_refusal("InitiatorName=" H_INITIATOR, ISCSI_LOGIN_STATUS_MISSING_FIELDS, NULL);
	expect_refusal("InitiatorName=" H_INITIATOR "|TargetName=" H_TARGET,
		       ISCSI_LOGIN_STATUS_TGT_FORBIDDEN, "iqn.2026-11.org.example:someone-else");
	expect_refusal("InitiatorName=" H_INITIATOR "|TargetName=" H_TARGET "|SessionType=Bogus",
		       ISCSI_LOGIN_STATUS_NO_SESSION_TYPE, NULL);
}

static void test_login_bad_stages(void **state)
{
	uint8_t bhs[ISCSI_BHS_LEN];
	char text[512];
	struct harness h;
	struct h_pdu *r;
	uint32_t len;

	(void)state;
	/* T=1 with NSG=CSG is not a transition (RFC 7143 §11.12.3). */
	assert_int_equal(h_init(&h, false), 0);
	len = h_text(text, sizeof(text), "InitiatorName=" H_INITIATOR "|TargetName=" H_TARGET);
	h_login_bhs(&h, bhs, ISCSI_LOGIN_FLAG_TRANSIT | (1 << ISCSI_LOGIN_CSG_SHIFT) | 1, 0);
	h_send(&h, bhs, text, len);
	r = h_take(&h);
	assert_non_null(r);
	assert_int_equal(status_of(r), ISCSI_LOGIN_STATUS_INIT_ERR);
	h_fini(&h);

	/* T and C together. */
	assert_int_equal(h_init(&h, false), 0);
	h_login_bhs(&h, bhs, ISCSI_LOGIN_FLAG_TRANSIT | ISCSI_LOGIN_FLAG_CONTINUE | 1, 0);
	h_send(&h, bhs, text, len);
	r = h_take(&h);
	assert_non_null(r);
	assert_int_equal(status_of(r), ISCSI_LOGIN_STATUS_INIT_ERR);
	h_fini(&h);

	/* Adding a connection to a session that does not exist. */
	assert_int_equal(h_init(&h, false), 0);
	h_login_bhs(&h, bhs, ISCSI_LOGIN_FLAG_TRANSIT | (1 << ISCSI_LOGIN_CSG_SHIFT) | 3, 77);
	h_send(&h, bhs, text, len);
	r = h_take(&h);
	assert_non_null(r);
	assert_int_equal(status_of(r), ISCSI_LOGIN_STATUS_NO_SESSION);
	h_fini(&h);

	/* A SCSI command before login completes drops the connection. */
	assert_int_equal(h_init(&h, false), 0);
	scsitgt__bhs_init(bhs, ISCSI_OP_SCSI_CMD, ISCSI_FLAG_FINAL);
	h_send(&h, bhs, NULL, 0);
	assert_true(h_conn_gone(&h));
	h_fini(&h);
}

/* Drive a CHAP login; returns the final status. */
static int chap_login(struct harness *h, const char *user, const char *secret, bool mutual,
		      const char *tsecret)
{
	uint8_t bhs[ISCSI_BHS_LEN], chal[64], resp[32], mchal[16];
	char text[2048], keys[1024], hex[200], mhex[64];
	struct h_pdu *r;
	const char *v;
	uint32_t len;
	int id, clen, n;

	snprintf(keys, sizeof(keys), "InitiatorName=%s|TargetName=%s|AuthMethod=CHAP,None",
		 H_INITIATOR, H_TARGET);
	len = h_text(text, sizeof(text), keys);
	h_login_bhs(h, bhs, (0 << ISCSI_LOGIN_CSG_SHIFT), 0);
	h_send(h, bhs, text, len);
	r = h_take(h);
	if (r == NULL || status_of(r))
		return r ? status_of(r) : -1;
	assert_string_equal(h_find_key(r, "AuthMethod"), "CHAP");

	len = h_text(text, sizeof(text), "CHAP_A=5");
	h_login_bhs(h, bhs, 0, 0);
	h_send(h, bhs, text, len);
	r = h_take(h);
	if (r == NULL || status_of(r))
		return r ? status_of(r) : -1;
	assert_string_equal(h_find_key(r, "CHAP_A"), "5");
	v = h_find_key(r, "CHAP_I");
	assert_non_null(v);
	id = atoi(v);
	v = h_find_key(r, "CHAP_C");
	assert_non_null(v);
	clen = scsitgt__chap_decode(chal, sizeof(chal), v, strlen(v));
	assert_true(clen >= 16);
	n = scsitgt__chap_response(resp, sizeof(resp), 5, (uint8_t)id, secret, strlen(secret), chal,
				   (size_t)clen);
	assert_int_equal(n, 16);
	assert_true(scsitgt__chap_encode(hex, sizeof(hex), resp, 16, SCSITGT__CHAP_ENC_HEX) > 0);
	memset(mchal, 0xa5, sizeof(mchal));
	assert_true(scsitgt__chap_encode(mhex, sizeof(mhex), mchal, 16, SCSITGT__CHAP_ENC_HEX) > 0);
	if (mutual)
		snprintf(keys, sizeof(keys), "CHAP_N=%s|CHAP_R=%s|CHAP_I=7|CHAP_C=%s", user, hex,
			 mhex);
	else
		snprintf(keys, sizeof(keys), "CHAP_N=%s|CHAP_R=%s", user, hex);
	len = h_text(text, sizeof(text), keys);
	h_login_bhs(h, bhs, ISCSI_LOGIN_FLAG_TRANSIT | 1, 0);
	h_send(h, bhs, text, len);
	r = h_take(h);
	if (r == NULL || status_of(r))
		return r ? status_of(r) : -1;
	assert_true(r->bhs[ISCSI_BHS_FLAGS] & ISCSI_LOGIN_FLAG_TRANSIT);
	if (mutual) {
		uint8_t want[16];

		assert_string_equal(h_find_key(r, "CHAP_N"), "target-user");
		v = h_find_key(r, "CHAP_R");
		assert_non_null(v);
		n = scsitgt__chap_response(want, sizeof(want), 5, 7, tsecret, strlen(tsecret),
					   mchal, sizeof(mchal));
		assert_int_equal(n, 16);
		assert_int_equal(scsitgt__chap_decode(resp, sizeof(resp), v, strlen(v)), 16);
		assert_memory_equal(resp, want, 16);
	}
	len = h_text(text, sizeof(text), H_OP_KEYS);
	h_login_bhs(h, bhs, ISCSI_LOGIN_FLAG_TRANSIT | (1 << ISCSI_LOGIN_CSG_SHIFT) | 3, 0);
	h_send(h, bhs, text, len);
	r = h_take(h);
	if (r == NULL)
		return -1;
	return status_of(r);
}

static void test_chap(void **state)
{
	struct harness h;

	(void)state;
	assert_int_equal(h_init(&h, false), 0);
	assert_int_equal(scsitgt_iscsi_target_set_chap(h.tgt, "user", "secret-of-16byte"), 0);
	assert_int_equal(chap_login(&h, "user", "secret-of-16byte", false, NULL), 0);
	assert_int_equal(h.conn->state, SCSITGT__CONN_FFP);
	h_fini(&h);

	assert_int_equal(h_init(&h, false), 0);
	assert_int_equal(scsitgt_iscsi_target_set_chap(h.tgt, "user", "secret-of-16byte"), 0);
	assert_int_equal(chap_login(&h, "user", "wrong-secret-16b", false, NULL),
			 ISCSI_LOGIN_STATUS_AUTH_FAILED);
	h_fini(&h);

	assert_int_equal(h_init(&h, false), 0);
	assert_int_equal(scsitgt_iscsi_target_set_chap(h.tgt, "user", "secret-of-16byte"), 0);
	assert_int_equal(chap_login(&h, "intruder", "secret-of-16byte", false, NULL),
			 ISCSI_LOGIN_STATUS_AUTH_FAILED);
	h_fini(&h);

	/* Mutual CHAP. */
	assert_int_equal(h_init(&h, false), 0);
	assert_int_equal(scsitgt_iscsi_target_set_chap(h.tgt, "user", "secret-of-16byte"), 0);
	assert_int_equal(
		scsitgt_iscsi_target_set_mutual_chap(h.tgt, "target-user", "target-secret-16"), 0);
	assert_int_equal(chap_login(&h, "user", "secret-of-16byte", true, "target-secret-16"), 0);
	h_fini(&h);

	/* Mutual CHAP asked of a target without credentials fails. */
	assert_int_equal(h_init(&h, false), 0);
	assert_int_equal(scsitgt_iscsi_target_set_chap(h.tgt, "user", "secret-of-16byte"), 0);
	assert_int_equal(chap_login(&h, "user", "secret-of-16byte", true, "x"),
			 ISCSI_LOGIN_STATUS_AUTH_FAILED);
	h_fini(&h);

	/* Per-initiator credentials take precedence. */
	assert_int_equal(h_init(&h, false), 0);
	assert_int_equal(scsitgt_iscsi_target_set_chap(h.tgt, "user", "secret-of-16byte"), 0);
	assert_int_equal(
		scsitgt_iscsi_initiator_set_chap(h.tgt, H_INITIATOR, "me", "my-own-secret-1"), 0);
	assert_int_equal(chap_login(&h, "me", "my-own-secret-1", false, NULL), 0);
	h_fini(&h);

	/* A CHAP target refuses a login that skips the security stage. */
	assert_int_equal(h_init(&h, false), 0);
	assert_int_equal(scsitgt_iscsi_target_set_chap(h.tgt, "user", "secret-of-16byte"), 0);
	assert_int_equal(h_login(&h, "Normal"), ISCSI_LOGIN_STATUS_AUTH_FAILED);
	h_fini(&h);
}

/*
 * Start a CHAP login up to the target's CHAP_A answer to @p offer; returns the answer, or
 * NULL when the login was refused (the status in *status).
 */
static const char *chap_a_answer(struct harness *h, const char *offer, int *status)
{
	uint8_t bhs[ISCSI_BHS_LEN];
	char text[512], keys[512];
	struct h_pdu *r;
	uint32_t len;

	*status = 0;
	snprintf(keys, sizeof(keys), "InitiatorName=%s|TargetName=%s|AuthMethod=CHAP", H_INITIATOR,
		 H_TARGET);
	len = h_text(text, sizeof(text), keys);
	h_login_bhs(h, bhs, 0, 0);
	h_send(h, bhs, text, len);
	r = h_take(h);
	assert_non_null(r);
	assert_int_equal(status_of(r), 0);
	snprintf(keys, sizeof(keys), "CHAP_A=%s", offer);
	len = h_text(text, sizeof(text), keys);
	h_login_bhs(h, bhs, 0, 0);
	h_send(h, bhs, text, len);
	r = h_take(h);
	assert_non_null(r);
	*status = status_of(r);
	return *status ? NULL : h_find_key(r, "CHAP_A");
}

/* What the target's side said of a refused login: its log line and the event's reason. */
struct auth_seen {
	unsigned int events;
	uint16_t status;
	char reason[256];
	char log[512];
};

static void auth_on_event(void *arg, const struct scsitgt_event *ev)
{
	struct auth_seen *a = arg;

	if (ev->type != SCSITGT_EVENT_LOGIN_FAILED)
		return;
	a->events++;
	a->status = ev->login_status;
	snprintf(a->reason, sizeof(a->reason), "%s", ev->reason ? ev->reason : "(null)");
}

static void auth_on_log(void *arg, enum scsitgt_log_level level, const char *subsystem,
			const char *fmt, va_list ap)
{
	struct auth_seen *a = arg;
	char line[512];

	(void)level;
	(void)subsystem;
	vsnprintf(line, sizeof(line), fmt, ap);
	if (strstr(line, " refused: "))
		snprintf(a->log, sizeof(a->log), "%s", line);
}

/* A harness whose target requires CHAP ("user"), watched by @a. */
static void auth_init(struct harness *h, struct auth_seen *a)
{
	memset(a, 0, sizeof(*a));
	assert_int_equal(h_init(h, false), 0);
	assert_int_equal(scsitgt_engine_set_event_cb(h->engine, auth_on_event, a), 0);
	h->engine->log.cb = auth_on_log;
	h->engine->log.arg = a;
	h->engine->log.level = SCSITGT_LOG_DEBUG;
	assert_int_equal(scsitgt_iscsi_target_set_chap(h->tgt, "user", "secret-of-16byte"), 0);
}

/* The login ended with 0x0201 (or @status) and the target's log and event say @why. */
static void auth_check(struct harness *h, struct auth_seen *a, int got, int status, const char *why)
{
	assert_int_equal(got, status);
	assert_int_equal(a->events, 1);
	assert_int_equal(a->status, status);
	if (strstr(a->reason, why) == NULL || strstr(a->log, why) == NULL)
		fail_msg("reason \"%s\" / log \"%s\" do not say \"%s\"", a->reason, a->log, why);
	h_fini(h);
}

/* The challenge step of a CHAP login (AuthMethod=CHAP, CHAP_A=5), then @keys; the status. */
static int chap_then(struct harness *h, const char *keys)
{
	uint8_t bhs[ISCSI_BHS_LEN];
	char text[1024];
	struct h_pdu *r;
	uint32_t len;
	int st;

	assert_string_equal(chap_a_answer(h, "5", &st), "5");
	len = h_text(text, sizeof(text), keys);
	h_login_bhs(h, bhs, ISCSI_LOGIN_FLAG_TRANSIT | 1, 0);
	h_send(h, bhs, text, len);
	r = h_take(h);
	assert_non_null(r);
	/* RFC 7143 §11.13.5: the initiator gets the status and nothing more. */
	if (status_of(r))
		assert_int_equal(r->len, 0);
	return status_of(r);
}

/*
 * userx N13: a refused CHAP login says in the target's log and in SCSITGT_EVENT_LOGIN_FAILED's
 * reason which of these it was, while the initiator sees 0x0201 only: no CHAP offered, no
 * algorithm in common, an unknown user name, a wrong response (secret mismatch), a mutual
 * CHAP failure, malformed CHAP keys.
 */
static void test_chap_refusal_reasons(void **state)
{
	const int fail = ISCSI_LOGIN_STATUS_AUTH_FAILED;
	struct auth_seen a;
	struct harness h;
	uint8_t bhs[ISCSI_BHS_LEN];
	char text[512], keys[512];
	struct h_pdu *r;
	uint32_t len;

	(void)state;
	auth_init(&h, &a);
	auth_check(&h, &a, chap_login(&h, "user", "wrong-secret-16b", false, NULL), fail,
		   "authentication failure: wrong response (secret mismatch) for user \"user\"");

	auth_init(&h, &a);
	auth_check(&h, &a, chap_login(&h, "intruder", "secret-of-16byte", false, NULL), fail,
		   "authentication failure: unknown user name: CHAP_N=\"intruder\"");

	auth_init(&h, &a);
	auth_check(&h, &a, chap_login(&h, "user", "secret-of-16byte", true, "x"), fail,
		   "mutual CHAP failure: the initiator asks the target to authenticate");

	auth_init(&h, &a);
	assert_int_equal(
		scsitgt_iscsi_target_set_mutual_chap(h.tgt, "target-user", "target-secret-16"), 0);
	auth_check(&h, &a, chap_then(&h, "CHAP_N=user|CHAP_R=0x00|CHAP_I=7"), fail,
		   "mutual CHAP failure: CHAP_I without CHAP_C");

	auth_init(&h, &a);
	auth_check(&h, &a, chap_then(&h, "CHAP_R=0x0011"), fail,
		   "malformed CHAP keys: CHAP_R without CHAP_N");

	auth_init(&h, &a);
	auth_check(&h, &a, chap_then(&h, "CHAP_N=user|CHAP_R=zz-not-hex"), fail,
		   "malformed CHAP keys: CHAP_R is not a hex");

	/* An initiator configured without CHAP: AuthMethod=None in the security stage. */
	auth_init(&h, &a);
	snprintf(keys, sizeof(keys), "InitiatorName=%s|TargetName=%s|AuthMethod=None", H_INITIATOR,
		 H_TARGET);
	len = h_text(text, sizeof(text), keys);
	h_login_bhs(&h, bhs, ISCSI_LOGIN_FLAG_TRANSIT | 1, 0);
	h_send(&h, bhs, text, len);
	r = h_take(&h);
	assert_non_null(r);
	assert_int_equal(r->len, 0);
	auth_check(&h, &a, status_of(r), fail,
		   "no CHAP offered (AuthMethod=None) and the target requires CHAP");

	/* ... or straight to the operational stage. */
	auth_init(&h, &a);
	auth_check(&h, &a, h_login(&h, "Normal"), fail,
		   "no CHAP offered: the initiator skipped the security stage");
}

/*
 * RFC 7143 §6.2.1, §12.1.3: the target answers CHAP_A with the first algorithm of the
 * initiator's list that it allows (scsitgt_iscsi_params::chap_algorithms), not with its own
 * favourite.
 */
static void test_chap_a_initiator_order(void **state)
{
	static const struct {
		uint32_t allowed;
		const char *offer;
		const char *answer; /* NULL: refused (authentication failure) */
	} cases[] = {
		{ SCSITGT_ISCSI_CHAP_ALL, "5,7", "5" },
		{ SCSITGT_ISCSI_CHAP_ALL, "6,7,5", "6" },
		{ SCSITGT_ISCSI_CHAP_ALL, "99,7,5", "7" },
		{ SCSITGT_ISCSI_CHAP_ALL, "8,5", "8" },
		/* an operator who refuses MD5 */
		{ SCSITGT_ISCSI_CHAP_ALL & ~SCSITGT_ISCSI_CHAP_MD5, "5,7,6", "7" },
		{ SCSITGT_ISCSI_CHAP_ALL & ~SCSITGT_ISCSI_CHAP_MD5, "5", NULL },
		{ SCSITGT_ISCSI_CHAP_SHA256, "5,6,8", NULL },
		{ SCSITGT_ISCSI_CHAP_SHA256 | SCSITGT_ISCSI_CHAP_MD5, "8,5,7", "5" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct scsitgt_iscsi_params p;
		struct harness h;
		const char *a;
		int st;

		assert_int_equal(h_init(&h, false), 0);
		assert_int_equal(scsitgt_iscsi_target_set_chap(h.tgt, "user", "secret-of-16byte"),
				 0);
		scsitgt_iscsi_params_init(&p, sizeof(p));
		p.chap_algorithms = cases[i].allowed;
		assert_int_equal(scsitgt_iscsi_target_set_params(h.tgt, &p), 0);
		a = chap_a_answer(&h, cases[i].offer, &st);
		if (cases[i].answer == NULL) {
			assert_int_equal(st, ISCSI_LOGIN_STATUS_AUTH_FAILED);
		} else {
			assert_non_null(a);
			assert_string_equal(a, cases[i].answer);
		}
		h_fini(&h);
	}
}

/* Send one leading login request with @p keys ('|'-separated); the status of the answer. */
static int login_status(const char *keys)
{
	uint8_t bhs[ISCSI_BHS_LEN];
	char text[1024];
	struct harness h;
	struct h_pdu *r;
	uint32_t len;
	int st;

	assert_int_equal(h_init(&h, false), 0);
	len = h_text(text, sizeof(text), keys);
	h_login_bhs(&h, bhs, ISCSI_LOGIN_FLAG_TRANSIT | (1 << ISCSI_LOGIN_CSG_SHIFT) | 3, 0);
	h_send(&h, bhs, text, len);
	r = h_take(&h);
	assert_non_null(r);
	st = status_of(r);
	h_fini(&h);
	return st;
}

/*
 * RFC 7143 §4.2.7, §11.13.5, §13.11: a missing or empty InitiatorName is 0x0207 (missing
 * parameter); one with characters an iSCSI name cannot hold (a forged log line, a terminal
 * escape) is 0x0200 (initiator error), refused before it is logged or matched. Same for
 * TargetName.
 */
/* userx N13: no CHAP algorithm in common, named in the target's log and event only. */
static void test_chap_refusal_algorithm(void **state)
{
	struct auth_seen a;
	struct harness h;
	int st;

	(void)state;
	auth_init(&h, &a);
	assert_null(chap_a_answer(&h, "99,100", &st));
	auth_check(
		&h, &a, st, ISCSI_LOGIN_STATUS_AUTH_FAILED,
		"no CHAP algorithm in common: CHAP_A=99,100, the target allows 8 (SHA3-256), 7 (SHA-256), 6 (SHA-1), 5 (MD5)");
}

static void test_login_bad_names(void **state)
{
	(void)state;
	assert_int_equal(login_status("TargetName=" H_TARGET "|SessionType=Normal"),
			 ISCSI_LOGIN_STATUS_MISSING_FIELDS);
	assert_int_equal(login_status("InitiatorName=|TargetName=" H_TARGET),
			 ISCSI_LOGIN_STATUS_MISSING_FIELDS);
	assert_int_equal(login_status("InitiatorName=iqn.x\n2026-12-01 login of iqn.admin ok|"
				      "TargetName=" H_TARGET),
			 ISCSI_LOGIN_STATUS_INIT_ERR);
	assert_int_equal(login_status("InitiatorName=iqn.x\x1b[2K|TargetName=" H_TARGET),
			 ISCSI_LOGIN_STATUS_INIT_ERR);
	assert_int_equal(login_status("InitiatorName=iqn.x\xe2\x80\xa8y|TargetName=" H_TARGET),
			 ISCSI_LOGIN_STATUS_INIT_ERR);
	assert_int_equal(login_status("InitiatorName=not-an-iqn|TargetName=" H_TARGET),
			 ISCSI_LOGIN_STATUS_INIT_ERR);
	assert_int_equal(login_status("InitiatorName=" H_INITIATOR "|TargetName=iqn.t\r\nx"),
			 ISCSI_LOGIN_STATUS_INIT_ERR);
	assert_int_equal(login_status("InitiatorName=" H_INITIATOR "|SessionType=Discovery|"
				      "TargetName=iqn.t\x07"),
			 ISCSI_LOGIN_STATUS_INIT_ERR);
	assert_int_equal(login_status("InitiatorName=" H_INITIATOR "|TargetName="),
			 ISCSI_LOGIN_STATUS_MISSING_FIELDS);
	/* The same names, well formed, log in (upper case and UTF-8 are valid). */
	assert_int_equal(login_status("InitiatorName=IQN.2026-11.ORG.EXAMPLE:M\xc3\xbcLLER|"
				      "TargetName=" H_TARGET "|" H_OP_KEYS),
			 0);
}

/*
 * Numeric keys answer the value in force (RFC 7143 §6.2.2, §13.14): FirstBurstLength offered
 * above MaxBurstLength is answered as MaxBurstLength, and MaxOutstandingR2T above what a task
 * tracks as that; the session then uses exactly the answers.
 */
static void test_login_answers_in_force(void **state)
{
	struct scsitgt_iscsi_params p;
	uint8_t bhs[ISCSI_BHS_LEN];
	char text[1024];
	struct harness h;
	struct h_pdu *r;
	uint32_t len;

	(void)state;
	assert_int_equal(h_init(&h, false), 0);
	scsitgt_iscsi_params_init(&p, sizeof(p));
	p.max_outstanding_r2t = 1000;
	assert_int_equal(scsitgt_iscsi_target_set_params(h.tgt, &p), 0);
	len = h_text(text, sizeof(text),
		     "InitiatorName=" H_INITIATOR "|TargetName=" H_TARGET
		     "|FirstBurstLength=262144|"
		     "ImmediateData=Yes|InitialR2T=No|MaxBurstLength=16384|MaxOutstandingR2T=500|"
		     "MaxRecvDataSegmentLength=8192|DataPDUInOrder=Yes|DataSequenceInOrder=Yes|"
		     "MaxConnections=1|ErrorRecoveryLevel=0|DefaultTime2Wait=2|"
		     "DefaultTime2Retain=20");
	h_login_bhs(&h, bhs, ISCSI_LOGIN_FLAG_TRANSIT | (1 << ISCSI_LOGIN_CSG_SHIFT) | 3, 0);
	h_send(&h, bhs, text, len);
	r = h_take(&h);
	assert_non_null(r);
	assert_int_equal(status_of(r), 0);
	assert_string_equal(h_find_key(r, "FirstBurstLength"), "16384");
	assert_string_equal(h_find_key(r, "MaxBurstLength"), "16384");
	assert_string_equal(h_find_key(r, "MaxOutstandingR2T"), "64");
	assert_non_null(h.conn->sess);
	assert_int_equal(h.conn->sess->params.first_burst, 16384);
	assert_int_equal(h.conn->sess->params.max_burst, 16384);
	assert_int_equal(h.conn->sess->params.max_outstanding_r2t, 64);
	h_fini(&h);
}

/* One operational-stage login to a target requiring digests; the response's status. */
static int digest_login(struct harness *h, enum scsitgt_iscsi_digest hd,
			enum scsitgt_iscsi_digest dd, const char *keys)
{
	struct scsitgt_iscsi_params p;
	uint8_t bhs[ISCSI_BHS_LEN];
	char text[1024];
	struct h_pdu *r;
	uint32_t len;

	assert_int_equal(h_init(h, false), 0);
	scsitgt_iscsi_params_init(&p, sizeof(p));
	p.header_digest = hd;
	p.data_digest = dd;
	assert_int_equal(scsitgt_iscsi_target_set_params(h->tgt, &p), 0);
	len = h_text(text, sizeof(text), keys);
	h_login_bhs(h, bhs, ISCSI_LOGIN_FLAG_TRANSIT | (1 << ISCSI_LOGIN_CSG_SHIFT) | 3, 0);
	h_send(h, bhs, text, len);
	r = h_take(h);
	assert_non_null(r);
	return status_of(r);
}

/*
 * RFC 7143 §6.2.1, §13.1: a target required to use a digest fails the login (0x0200) when the
 * offer holds no CRC32C, or the key is never offered; it does not answer Reject and go on with
 * the default None. An offer listing CRC32C gets it, and the connection uses it.
 */
static void test_login_required_digest(void **state)
{
#define DIGEST_KEYS "InitiatorName=" H_INITIATOR "|TargetName=" H_TARGET
	static const struct {
		enum scsitgt_iscsi_digest hd, dd;
		const char *keys;
	} refused[] = {
		{ SCSITGT_ISCSI_DIGEST_CRC32C, SCSITGT_ISCSI_DIGEST_ANY,
		  DIGEST_KEYS "|HeaderDigest=None|DataDigest=None" },
		{ SCSITGT_ISCSI_DIGEST_ANY, SCSITGT_ISCSI_DIGEST_CRC32C,
		  DIGEST_KEYS "|HeaderDigest=CRC32C|DataDigest=None" },
		{ SCSITGT_ISCSI_DIGEST_CRC32C, SCSITGT_ISCSI_DIGEST_ANY,
		  DIGEST_KEYS "|DataDigest=None" },
		{ SCSITGT_ISCSI_DIGEST_CRC32C, SCSITGT_ISCSI_DIGEST_CRC32C, DIGEST_KEYS },
	};
	struct harness h;

	(void)state;
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		assert_int_equal(digest_login(&h, refused[i].hd, refused[i].dd, refused[i].keys),
				 ISCSI_LOGIN_STATUS_INIT_ERR);
		assert_false(h.pdus[0].bhs[ISCSI_BHS_FLAGS] & ISCSI_LOGIN_FLAG_TRANSIT);
		assert_null(h_find_key(&h.pdus[0], "HeaderDigest"));
		/* The connection closes once the refusal is written: no session. */
		assert_true(h_conn_gone(&h));
		h_fini(&h);
	}

	assert_int_equal(digest_login(&h, SCSITGT_ISCSI_DIGEST_CRC32C, SCSITGT_ISCSI_DIGEST_CRC32C,
				      DIGEST_KEYS
				      "|HeaderDigest=None,CRC32C|DataDigest=CRC32C,None"),
			 0);
	assert_string_equal(h_find_key(&h.pdus[0], "HeaderDigest"), "CRC32C");
	assert_string_equal(h_find_key(&h.pdus[0], "DataDigest"), "CRC32C");
	assert_int_equal(h.conn->state, SCSITGT__CONN_FFP);
	assert_true(h.conn->header_digest);
	assert_true(h.conn->data_digest);
	h_fini(&h);
#undef DIGEST_KEYS
}

static void test_api_checks(void **state)
{
	struct scsitgt_iscsi_params p;
	struct harness h;

	(void)state;
	assert_int_equal(h_init(&h, false), 0);
	scsitgt_iscsi_params_init(&p, sizeof(p));
	assert_int_equal(p.max_recv_data_segment_length, 262144);
	assert_int_equal(p.max_burst_length, 16776192);
	assert_int_equal(p.first_burst_length, 262144);
	assert_true(p.immediate_data);
	assert_false(p.initial_r2t);
	assert_true(p.max_outstanding_r2t >= 4);
	assert_int_equal(scsitgt_iscsi_target_set_params(h.tgt, &p), 0);
	p.max_recv_data_segment_length = 100;
	assert_int_equal(scsitgt_iscsi_target_set_params(h.tgt, &p), -EINVAL);
	p.max_recv_data_segment_length = 8192;
	p.error_recovery_level = 1;
	assert_int_equal(scsitgt_iscsi_target_set_params(h.tgt, &p), -ENOTSUP);
	assert_int_equal(scsitgt_iscsi_target_set_chap(h.tgt, "u", "short"), -EINVAL);
	assert_int_equal(scsitgt_iscsi_target_set_chap(h.tgt, "u", NULL), -EINVAL);
	assert_int_equal(scsitgt_iscsi_initiator_set_chap(h.tgt, "iqn.x", NULL, NULL), -ENOENT);
	h_fini(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_login_none),
		cmocka_unit_test(test_discovery_send_targets),
		cmocka_unit_test(test_login_refusals),
		cmocka_unit_test(test_login_bad_stages),
		cmocka_unit_test(test_chap),
		cmocka_unit_test(test_chap_a_initiator_order),
		cmocka_unit_test(test_chap_refusal_reasons),
		cmocka_unit_test(test_chap_refusal_algorithm),
		cmocka_unit_test(test_login_bad_names),
		cmocka_unit_test(test_login_answers_in_force),
		cmocka_unit_test(test_login_required_digest),
		cmocka_unit_test(test_api_checks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
