#!/usr/bin/env bash
# multipath_alua.sh MINITARGET PR_CLIENT: ALUA over iSCSI (SPC-5 §5.16). minitarget puts its
# portal group in one target port group, starting in standby; an initiator sees TPGS 11b,
# REPORT TARGET PORT GROUPS, NOT READY / STANDBY for media access, moves the group to
# active/optimized with SET TARGET PORT GROUPS, and another nexus then hears ASYMMETRIC ACCESS
# STATE CHANGED and can write. Under another initiator's SPC-2 RESERVE, REPORT TARGET PORT
# GROUPS still answers (Linux's ALUA handler fails a path whose RTPG fails), while a WRITE and
# REPORT SUPPORTED OPERATION CODES conflict (docs/scsi.md "Reservations").
set -euo pipefail
source "$(dirname "$0")/lib.sh"
it_init "$1"
CLIENT=${2:?usage: multipath_alua.sh MINITARGET PR_CLIENT}
IQN=iqn.2026-11.org.libscsitgt:alua-host

it_start --iqn iqn.2026-11.org.libscsitgt:alua --lun 0:ram:16M --alua 2
URL=${IT_URLS[0]}

out=$("$CLIENT" -i "$IQN" -q 1 "$URL" rtpg | tr '\n' ';')
[[ "$out" == "tpgs 3;transition 0;group 1 state 2 status 0 ports 1;" ]] ||
	it_fail "standby: RTPG says $out"
if "$CLIENT" -i "$IQN" -q 1 "$URL" write 0 8 1 1 >/dev/null 2>"$IT_TMP/w.err"; then
	it_fail "a WRITE went through a standby port"
fi
grep -q "sense 2/04/0b" "$IT_TMP/w.err" || it_fail "expected NOT READY, STANDBY: $(cat "$IT_TMP/w.err")"

# Another nexus of the host stays logged in meanwhile.
"$CLIENT" -i "$IQN" -q 2 "$URL" tur-after "$IT_TMP/changed" >"$IT_TMP/watch.out" 2>&1 &
WATCHER=$!
IT_HELPER_PIDS+=("$WATCHER")
for ((i = 0; i < 600; i++)); do
	grep -q ready "$IT_TMP/watch.out" && break
	kill -0 "$WATCHER" 2>/dev/null || it_fail "watcher ended: $(cat "$IT_TMP/watch.out")"
	sleep 0.1
done

"$CLIENT" -i "$IQN" -q 1 "$URL" stpg 0 1
out=$("$CLIENT" -i "$IQN" -q 1 "$URL" rtpg | tr '\n' ';')
[[ "$out" == "tpgs 3;transition 0;group 1 state 0 status 1 ports 1;" ]] ||
	it_fail "active: RTPG says $out"
: >"$IT_TMP/changed"
wait "$WATCHER" || it_fail "watcher failed: $(cat "$IT_TMP/watch.out")"
ua=$(tail -n 1 "$IT_TMP/watch.out")
[[ "$ua" == "sense 6/2a/06" ]] || it_fail "watcher: expected ASYMMETRIC ACCESS STATE CHANGED, got $ua"
# The watcher logged out: back again, it finds I_T NEXUS LOSS OCCURRED.
ua=$("$CLIENT" -i "$IQN" -q 2 "$URL" tur)
[[ "$ua" == "sense 6/29/07" ]] || it_fail "watcher back: expected I_T NEXUS LOSS, got $ua"
"$CLIENT" -i "$IQN" -q 2 "$URL" write 0 8 5 1 >/dev/null
"$CLIENT" -i "$IQN" -q 1 "$URL" verify 0 8 5 >/dev/null || it_fail "data is wrong"

# Another node wins an SPC-2 RESERVE race and keeps its nexus.
"$CLIENT" -i iqn.2026-11.org.libscsitgt:alua-other "$URL" reserve6-hold "$IT_TMP/release" \
	>"$IT_TMP/holder.out" 2>&1 &
HOLDER=$!
IT_HELPER_PIDS+=("$HOLDER")
for ((i = 0; i < 600; i++)); do
	grep -q . "$IT_TMP/holder.out" && break
	kill -0 "$HOLDER" 2>/dev/null || it_fail "holder ended: $(cat "$IT_TMP/holder.out")"
	sleep 0.1
done
[[ $(cat "$IT_TMP/holder.out") == good ]] || it_fail "RESERVE (6): $(cat "$IT_TMP/holder.out")"
out=$("$CLIENT" -i "$IQN" -q 1 "$URL" rtpg | tr '\n' ';') ||
	it_fail "RTPG under another node's RESERVE failed"
[[ "$out" == "tpgs 3;transition 0;group 1 state 0 status 1 ports 1;" ]] ||
	it_fail "reserved: RTPG says $out"
out=$("$CLIENT" -i "$IQN" -q 1 "$URL" opsupport 0x2a)
[[ "$out" == conflict ]] || it_fail "reserved: REPORT SUPPORTED OPERATION CODES says $out"
if "$CLIENT" -i "$IQN" -q 1 "$URL" write 0 8 6 1 >/dev/null 2>"$IT_TMP/w.err"; then
	it_fail "a WRITE went through another node's RESERVE"
fi
grep -q "status 0x18" "$IT_TMP/w.err" || it_fail "expected RESERVATION CONFLICT: $(cat "$IT_TMP/w.err")"
: >"$IT_TMP/release"
wait "$HOLDER" || it_fail "holder failed: $(cat "$IT_TMP/holder.out")"
"$CLIENT" -i "$IQN" -q 1 "$URL" verify 0 8 5 >/dev/null || it_fail "data changed under RESERVE"
it_stop || it_fail "minitarget exited with an error"
it_log "PASS"
