#!/bin/bash
# reinstate.sh MINITARGET [SCSITGTD] - session reinstatement (RFC 7143 §6.3.5, reinstate.py):
#  - the old session's WRITE still in the backend (fault=delay) when its initiator port logs in
#    again: the Login Response waits until that WRITE has left, and the new session's WRITE is
#    not overwritten by it; without and with workers (the two sessions on different loops);
#  - a WRITE held longer than --logout-timeout: the login is refused with 0x0301 meanwhile,
#    and so is every retry after the old session ended, until the WRITE has left (the nexus's
#    fence), without and with workers; another ISID of the same initiator is not refused;
#    with a WRITE the backend never returns, the target still shuts down cleanly (exit 0);
#    the same when the connection goes while a Logout still waits for that WRITE;
#    after a Logout answered 3 (cleanup failed), a relogin is refused at once, not after a
#    second logout_timeout_ms; another initiator's LOGICAL UNIT RESET after the session
#    ended with the WRITE left to the backend answers only once it has left;
#  - the same after an ABORT TASK of that WRITE answered at the TMF timeout (reviewc F1): the
#    login still waits, or is refused with 0x0301; a Logout waits for it (Response 0) or
#    answers 3 when logout_timeout_ms passes first; a LOGICAL UNIT RESET sent while the ABORT
#    TASK waits answers only once the WRITE has left;
#  - one initiator port through two portal groups (scsitgtd, TPGT 1 and 2): two I_T nexuses,
#    neither reinstates the other (skipped without SCSITGTD).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
it_init "${1:-}"
SCSITGTD=${2:-}
it_need python3
PY="python3 $(dirname "$0")/reinstate.py"

run() { # run TEST TARGET-OPTIONS...: one reinstate.py test against a new minitarget
	local t=$1 st=0 bound=0 prev= a
	shift
	for a in "$@"; do
		[[ $prev == --logout-timeout ]] && bound=$a
		prev=$a
	done
	it_start "$@"
	$PY "$t" --port "$IT_PORT" --iqn "$(it_iqn "${IT_URLS[0]}")" --pid "$IT_PID" \
		--out "$IT_TMP/target.out" --bound-ms "$bound" || st=$?
	[[ $st -eq 0 ]] || it_fail "reinstate.py $t failed (status $st) against: $*"
	it_stop || it_fail "the target exited with status $? after $t"
}

# A delay well above what the checks need (they wait for the counters, not for it).
run stale_write --lun 0:ram:16M,fault=delay=3000@write:count=1
run stale_write --workers 2 --lun 0:ram:16M,fault=delay=3000@write:count=1
run bound --logout-timeout 500 --lun 0:ram:16M,fault=delay=5000@write:count=1
run fence --logout-timeout 500 --lun 0:ram:16M,fault=delay=5000@write:count=1
run fence --workers 2 --logout-timeout 500 --lun 0:ram:16M,fault=delay=5000@write:count=1
# The same when the initiator drops the connection while its Logout still waits.
run logout_drop --logout-timeout 500 --lun 0:ram:16M,fault=delay=5000@write:count=1
run logout_drop --workers 2 --logout-timeout 500 --lun 0:ram:16M,fault=delay=5000@write:count=1
run logout_relogin --logout-timeout 4000 --lun 0:ram:16M,fault=delay=7900@write:count=1
run logout_relogin --workers 2 --logout-timeout 4000 --lun 0:ram:16M,fault=delay=7900@write:count=1
# Another initiator's LUN RESET waits for the WRITE of a session that ended with it (F2).
run orphan_reset --logout-timeout 500 --lun 0:ram:16M,fault=delay=4000@write:count=1
run orphan_reset --workers 2 --logout-timeout 500 --lun 0:ram:16M,fault=delay=4000@write:count=1
run fence_hang --logout-timeout 300 --drain-timeout 200 --lun 0:ram:16M,fault=hang@write:count=1
run fence_hang --workers 2 --logout-timeout 300 --drain-timeout 200 \
	--lun 0:ram:16M,fault=hang@write:count=1
# After an ABORT TASK answered at its (short) TMF timeout, the WRITE still in the backend.
ABORTED="--tmf-timeout 300 --lun 0:ram:16M,fault=delay=3000@write:count=1"
# shellcheck disable=SC2086 # word splitting of the options is meant
{
	run abort_stale $ABORTED
	run abort_stale --workers 2 $ABORTED
	run abort_bound --tmf-timeout 300 --logout-timeout 500 \
		--lun 0:ram:16M,fault=delay=5000@write:count=1
	run abort_logout_wait $ABORTED
	run abort_logout_bound --tmf-timeout 300 --logout-timeout 500 \
		--lun 0:ram:16M,fault=delay=5000@write:count=1
	run abort_lun_reset --tmf-timeout 600000 --lun 0:ram:16M,fault=delay=3000@write:count=1
}

if [[ -z "$SCSITGTD" ]]; then
	it_log "ok (two portal groups skipped: no scsitgtd)"
	exit 0
fi
IT_TARGET=$SCSITGTD
P1=$(it_free_port)
P2=$(it_free_port)
while [[ $P2 == "$P1" ]]; do P2=$(it_free_port); done
IQN=iqn.2026-12.test.reinstate:tpg
cat >"$IT_TMP/two_tpg.conf" <<CONF
[engine]
log_level = info
pr_dir = $IT_TMP

[portal]
address = 127.0.0.1
port = $P1
tpgt = 1

[portal]
address = 127.0.0.1
port = $P2
tpgt = 2

[target]
name = $IQN

[lun 0]
backend = ram
size = 16M
CONF
it_scsitgtd_start "$IT_TMP/two_tpg.conf"
st=0
$PY two_tpg --port "$P1" --port2 "$P2" --iqn "$IQN" || st=$?
[[ $st -eq 0 ]] || it_fail "reinstate.py two_tpg failed (status $st)"
it_stop || it_fail "scsitgtd exited with status $?"
it_log "ok: reinstatement waits for the old session's commands, one nexus per portal group"
