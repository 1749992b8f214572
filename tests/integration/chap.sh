#!/bin/bash
# chap.sh MINITARGET READBACK - CHAP authentication (RFC 7143 §12.1.3, RFC 1994):
# one-way CHAP admits only the right name and secret; mutual CHAP also proves the target to the
# initiator, and libiscsi must refuse a target that answers with the wrong secret. A refused
# login says why in the target's log (no CHAP offered, unknown user name, wrong response,
# no algorithm in common: userx N13) while the initiator sees only "authentication failure"
# (0x0201, RFC 7143 §11.13.5).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
it_init "${1:-}"
READBACK=${2:-}
[[ -x "$READBACK" ]] || it_fail "usage: $0 MINITARGET ISCSI_READBACK"
it_need python3

IUSER=it-initiator
ISECRET=initiator-secret-1234
TUSER=it-target
TSECRET=target-secret-5678

# login URL...: one full login and a one-block READ(16); true when both succeed.
login() {
	"$READBACK" "$1" 512 >/dev/null 2>>"$IT_TMP/logins.err"
}

expect_ok() {
	login "$1" || { tail -n 3 "$IT_TMP/logins.err" >&2; it_fail "login refused: $2"; }
	it_log "ok: $2"
}

# refusals REASON: lines of the target's log so far that refuse a login for REASON (a grep
# pattern; the target logs "login of NAME refused: authentication failure: REASON (0x0201)").
refusals() {
	grep -c -- "refused: authentication failure: $1" "$IT_TMP/target.err" || true
}

# expect_refused URL WHAT [REASON [INITIATOR]]: the login fails; with REASON, the target's
# log gets one more refusal line for it. INITIATOR: "inq" logs in with iscsi-inq instead.
expect_refused() {
	local before=0
	[[ -z "${3:-}" ]] || before=$(refusals "$3")
	if [[ ${4:-} == inq ]]; then
		if iscsi-inq "$1" >"$IT_TMP/inq.out" 2>&1; then
			it_fail "login accepted: $2"
		fi
		# the initiator learns the status and nothing more
		grep -q "Authentication failure" "$IT_TMP/inq.out" ||
			it_fail "iscsi-inq did not report an authentication failure: $(cat "$IT_TMP/inq.out")"
	elif login "$1"; then
		it_fail "login accepted: $2"
	fi
	it_alive || it_fail "target died after: $2"
	[[ -z "${3:-}" ]] ||
		it_wait_log -n $((before + 1)) "$IT_TMP/target.err" "refused: authentication failure: $3"
	it_log "ok (refused${3:+: $3}): $2"
}

# --- one-way CHAP ---
it_start --lun 0:ram:64M --chap "$IUSER:$ISECRET"
u=${IT_URLS[0]}
NO_CHAP="no CHAP offered: the initiator skipped the security stage"
MISMATCH="wrong response (secret mismatch) for user \"$IUSER\""
expect_refused "$u" "no credentials" "$NO_CHAP"
expect_refused "$(it_with_cred "$u" "$IUSER" wrong-secret-0000)" "wrong secret" "$MISMATCH"
expect_refused "$(it_with_cred "$u" other-user "$ISECRET")" "wrong user name" \
	'unknown user name: CHAP_N="other-user"'
expect_refused "$(it_with_cred "$u" "$IUSER" "${ISECRET}x")" "secret with one extra byte" \
	"$MISMATCH"
if command -v iscsi-inq >/dev/null; then
	expect_refused "$u" "iscsi-inq without credentials" "$NO_CHAP" inq
	expect_refused "$(it_with_cred "$u" "$IUSER" wrong-secret-0000)" "iscsi-inq, wrong secret" \
		"$MISMATCH" inq
fi
expect_ok "$(it_with_cred "$u" "$IUSER" "$ISECRET")" "right name and secret"
# The environment variables are libiscsi's other way to give the same credentials.
LIBISCSI_CHAP_USERNAME=$IUSER LIBISCSI_CHAP_PASSWORD=$ISECRET expect_ok "$u" \
	"right credentials from LIBISCSI_CHAP_* variables"
expect_ok "$(it_with_cred "$u" "$IUSER" "$ISECRET")" "right credentials after failures"
it_stop || it_fail "target exited with status $? on SIGTERM"

# --- mutual CHAP ---
it_start --lun 0:ram:64M --chap "$IUSER:$ISECRET" --mutual-chap "$TUSER:$TSECRET"
u=${IT_URLS[0]}
cu=$(it_with_cred "$u" "$IUSER" "$ISECRET")
expect_ok "$cu?target_user=$TUSER&target_password=$TSECRET" "mutual CHAP, right target secret"
expect_refused "$cu?target_user=$TUSER&target_password=wrong-target-secret" \
	"mutual CHAP, initiator expects another target secret"
expect_refused "$(it_with_cred "$u" "$IUSER" wrong)?target_user=$TUSER&target_password=$TSECRET" \
	"mutual CHAP, wrong initiator secret" "$MISMATCH"
expect_ok "$cu" "one-way CHAP against a target that also offers mutual CHAP"
LIBISCSI_CHAP_TARGET_USERNAME=$TUSER LIBISCSI_CHAP_TARGET_PASSWORD=$TSECRET expect_ok "$cu" \
	"mutual CHAP, target credentials from LIBISCSI_CHAP_TARGET_* variables"
it_stop || it_fail "target exited with status $? on SIGTERM"
# --- the algorithms a target allows (RFC 7143 §6.2.1, §12.1.3) ---
# libiscsi offers CHAP_A=5 (MD5) only: a target that refuses MD5 must refuse its login, one
# that allows MD5 (alone) must let it in.
it_start --lun 0:ram:64M --chap "$IUSER:$ISECRET" --chap-algorithms sha256,sha3-256
expect_refused "$(it_with_cred "${IT_URLS[0]}" "$IUSER" "$ISECRET")" \
	"MD5 offered to a target that allows only SHA-256 and SHA3-256" \
	"no CHAP algorithm in common: CHAP_A=5, the target allows"
it_stop || it_fail "target exited with status $? on SIGTERM"
it_start --lun 0:ram:64M --chap "$IUSER:$ISECRET" --chap-algorithms md5
expect_ok "$(it_with_cred "${IT_URLS[0]}" "$IUSER" "$ISECRET")" "MD5 offered, MD5 allowed"
it_stop || it_fail "target exited with status $? on SIGTERM"
it_log "PASS"
