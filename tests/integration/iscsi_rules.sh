#!/bin/bash
# iscsi_rules.sh MINITARGET - RFC 7143 rules an outside conformance suite found broken
# (issue 17), with the raw client of hostile_iscsi.py (iscsi_rules.py):
#  - CHAP_A: the first algorithm of the initiator's list that the target allows (§6.2.1);
#  - names a login may carry (§4.2.7, RFC 3722), and no forged line in the target's log from a
#    name, an alias or a CHAP_N, even when the login is refused;
#  - FirstBurstLength answered as the value in force (§13.14);
#  - TARGET WARM RESET keeps every session, TARGET COLD RESET closes them all (§11.5.1);
#  - the sense data of broken Data-Out sequences (§11.4.7.2).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
it_init "${1:-}"
it_need python3
RULES=(python3 "$(dirname "$0")/iscsi_rules.py")

# rules CMD ARGS...: one check against the running target.
rules() {
	"${RULES[@]}" "$1" --port "$IT_PORT" --iqn "$(it_iqn "${IT_URLS[0]}")" "${@:2}" >&2 ||
		it_fail "iscsi_rules.py $*"
	it_alive || it_fail "the target died during: $*"
}

# The log line a forged name would start, at the beginning of a line of the target's log.
no_forged_line() {
	if grep -a -n '^FORGED-LINE' "$IT_TMP/target.err" >&2; then
		it_fail "a string from the wire started a line of the target's log ($1)"
	fi
	it_log "ok: no forged line in the log ($1)"
}

# --- CHAP target, every message logged ---
it_start --lun 0:ram:16M --chap it-user:it-secret-0123456 -v
rules chap-a --offer 5,7 --expect 5
rules chap-a --offer 6,7,5 --expect 6
rules chap-a --offer 99,8,5 --expect 8
rules bad-name
rules forged-chap-login
rules chap-forged
no_forged_line "CHAP target"
it_stop || it_fail "target exited with status $? on SIGTERM"

# An operator who refuses MD5.
it_start --lun 0:ram:16M --chap it-user:it-secret-0123456 --chap-algorithms sha1,sha256,sha3-256
rules chap-a --offer 5,7,6 --expect 7
rules chap-a --offer 5 --expect refused
it_stop || it_fail "target exited with status $? on SIGTERM"

# --- no authentication ---
it_start --lun 0:ram:16M -v
rules bad-name
no_forged_line "target without CHAP"
rules first-burst
rules data-out-sense
rules resets
rules stage-ffp
rules discovery-window
it_stop || it_fail "target exited with status $? on SIGTERM"
it_log "PASS"
