#!/bin/bash
# acl_secrets.sh MINITARGET - CHAP secrets never reach the logs (issue 10): run CHAP logins
# (one-way and mutual, right and wrong secrets; normal and discovery sessions, the latter
# also checking discovery CHAP itself) against a target logging at debug level,
# and look for each secret in every log, in plain text and in
# the hex and base64 forms CHAP values travel in.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
it_init "${1:-}"
it_need iscsi-inq python3

IUSER=it-initiator
ISECRET=initiator-Secret-4711x
TUSER=it-target
TSECRET=target-Secret-0815yz
WRONG=wrong-Secret-999999

it_start --lun 0:ram:16M --chap "$IUSER:$ISECRET" --mutual-chap "$TUSER:$TSECRET" -v
u=${IT_URLS[0]}
cred="iscsi://$IUSER%$ISECRET@${u#iscsi://}"
iscsi-inq "$cred" >"$IT_TMP/ok.log" 2>&1 || it_fail "one-way CHAP login failed"
iscsi-inq "$cred?target_user=$TUSER&target_password=$TSECRET" >>"$IT_TMP/ok.log" 2>&1 ||
	it_fail "mutual CHAP login failed"
if iscsi-inq "iscsi://$IUSER%$WRONG@${u#iscsi://}" >>"$IT_TMP/bad.log" 2>&1; then
	it_fail "a wrong secret logged in"
fi
it_stop || it_fail "target exited with status $?"
mv "$IT_TMP/target.err" "$IT_TMP/normal.err"

# Discovery CHAP (scsitgt_iscsi_engine_set_discovery_chap), one-way and mutual, with iscsi-ls.
DUSER=it-discovery
DSECRET=discovery-Secret-4242q
DTUSER=it-disc-target
DTSECRET=disc-target-Secret-77w
it_start --lun 0:ram:16M --discovery-chap "$DUSER:$DSECRET" \
	--discovery-mutual-chap "$DTUSER:$DTSECRET" -v
iqn=$(it_iqn "${IT_URLS[0]}")
p=${IT_PORTAL}
if iscsi-ls "iscsi://$p" >>"$IT_TMP/bad.log" 2>&1; then
	it_fail "discovery without credentials succeeded"
fi
if iscsi-ls "iscsi://$DUSER%$WRONG@$p" >>"$IT_TMP/bad.log" 2>&1; then
	it_fail "discovery with a wrong secret succeeded"
fi
out=$(iscsi-ls "iscsi://$DUSER%$DSECRET@$p" 2>&1) || it_fail "discovery CHAP refused: $out"
grep -q "Target:$iqn " <<<"$out" || it_fail "discovery CHAP: no target listed: $out"
out=$(LIBISCSI_CHAP_TARGET_USERNAME=$DTUSER LIBISCSI_CHAP_TARGET_PASSWORD=$DTSECRET \
	iscsi-ls "iscsi://$DUSER%$DSECRET@$p" 2>&1) || it_fail "mutual discovery CHAP: $out"
grep -q "Target:$iqn " <<<"$out" || it_fail "mutual discovery CHAP: no target listed: $out"
if LIBISCSI_CHAP_TARGET_USERNAME=$DTUSER LIBISCSI_CHAP_TARGET_PASSWORD=$WRONG \
	iscsi-ls "iscsi://$DUSER%$DSECRET@$p" >>"$IT_TMP/bad.log" 2>&1; then
	it_fail "the initiator accepted a target that proved a wrong discovery secret"
fi
# Normal sessions do not need the discovery credentials.
iscsi-inq "${IT_URLS[0]}" >/dev/null || it_fail "a normal session was refused"
it_log "ok: discovery CHAP, one-way and mutual"
it_stop || it_fail "target exited with status $?"
cat "$IT_TMP/normal.err" >>"$IT_TMP/target.err"

# The target logged the logins (so the test looks at real log output).
grep -q "CHAP" "$IT_TMP/target.err" || it_fail "no CHAP line in the target's debug log"

for s in "$ISECRET" "$TSECRET" "$WRONG" "$DSECRET" "$DTSECRET"; do
	hex=$(printf '%s' "$s" | od -An -tx1 | tr -d ' \n')
	b64=$(printf '%s' "$s" | base64 -w0)
	for f in "$IT_TMP/target.err" "$IT_TMP/target.out"; do
		for needle in "$s" "$hex" "${b64%%=*}"; do
			if grep -qiF -- "$needle" "$f"; then
				it_fail "secret found in $(basename "$f"): $needle"
			fi
		done
	done
done
it_log "ok: no secret in the target's logs ($(wc -l <"$IT_TMP/target.err") lines at debug level)"
it_log "PASS"
