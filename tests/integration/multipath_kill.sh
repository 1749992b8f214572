#!/usr/bin/env bash
# multipath_kill.sh MINITARGET PR_CLIENT: one initiator, two paths (two sessions with two
# ISIDs, i.e. two I_T nexuses of one initiator device). Both write to their own half of a LUN;
# one path's process is killed mid-I/O, which drops its TCP connection with commands and
# Data-Out in flight. The other path must complete every write with the right data, and the
# killed nexus, when it logs in again with the same ISID, finds I_T NEXUS LOSS OCCURRED
# (29h/07h, SAM-5 §6.3.4) rather than POWER ON.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
it_init "$1"
CLIENT=${2:?usage: multipath_kill.sh MINITARGET PR_CLIENT}
IQN=iqn.2026-11.org.libscsitgt:twopath

it_start --iqn iqn.2026-11.org.libscsitgt:mpath --lun 0:ram:16M
URL=${IT_URLS[0]}

# Path 1 (ISID qualifier 11) writes blocks 0..4095 until killed; path 2 (qualifier 12) writes
# blocks 4096..8191 twenty times over.
"$CLIENT" -i "$IQN" -q 11 "$URL" write 0 4096 7 0 >"$IT_TMP/victim.out" 2>&1 &
VICTIM=$!
IT_HELPER_PIDS+=("$VICTIM")
"$CLIENT" -i "$IQN" -q 12 "$URL" write 4096 4096 9 20 >"$IT_TMP/survivor.out" 2>&1 &
SURVIVOR=$!
IT_HELPER_PIDS+=("$SURVIVOR")

# Kill path 1 once it is well into its writes (and path 2 is running).
for ((i = 0; i < 600; i++)); do
	if grep -q "pass 2" "$IT_TMP/victim.out" && grep -q "pass 1" "$IT_TMP/survivor.out"; then
		break
	fi
	kill -0 "$VICTIM" 2>/dev/null || it_fail "path 1 ended early: $(cat "$IT_TMP/victim.out")"
	sleep 0.1
done
grep -q "pass 2" "$IT_TMP/victim.out" || it_fail "path 1 made no progress"
kill -KILL "$VICTIM"
wait "$VICTIM" 2>/dev/null || true
it_log "killed path 1 after $(grep -c pass "$IT_TMP/victim.out") passes"

if ! wait "$SURVIVOR"; then
	it_fail "path 2 failed: $(cat "$IT_TMP/survivor.out")"
fi
grep -q "pass 20" "$IT_TMP/survivor.out" || it_fail "path 2 did not finish: $(cat "$IT_TMP/survivor.out")"
it_alive || it_fail "minitarget died"

# Path 2's data, read back through a third session.
"$CLIENT" -i "$IQN" -q 13 "$URL" verify 4096 4096 9 >/dev/null || it_fail "path 2 data is wrong"

# Path 1 comes back as the same nexus.
ua=$("$CLIENT" -i "$IQN" -q 11 "$URL" tur)
[[ "$ua" == "sense 6/29/07" ]] || it_fail "path 1 back: expected I_T NEXUS LOSS OCCURRED, got $ua"
# A nexus never seen before gets POWER ON.
ua=$("$CLIENT" -i "$IQN" -q 14 "$URL" tur)
[[ "$ua" == "sense 6/29/00" ]] || it_fail "new nexus: expected POWER ON, got $ua"
# Path 1 can write again and its data is right.
"$CLIENT" -i "$IQN" -q 11 "$URL" write 0 4096 3 1 >/dev/null
"$CLIENT" -i "$IQN" -q 15 "$URL" verify 0 4096 3 >/dev/null || it_fail "path 1 data is wrong"
it_stop || it_fail "minitarget exited with an error"
it_log "PASS"
