#!/bin/bash
# fault_hang.sh MINITARGET CLIENT - a backend that never completes (issue 5, issue 10 "Faults").
# LUN 0 is a RAM LUN behind the fault-injection backend with fault=hang@write: one initiator's
# WRITE stays in the backend forever. Another initiator keeps writing, reading and verifying
# LUN 1 and reaches LUN 0 for commands that need no write; the hung initiator stays stuck; and
# SIGTERM still ends the target with exit status 0, the LUN removal giving up on the held
# write after --drain-timeout (the waits below are generous upper bounds, not measurements).
# CLIENT is pr_client.c (libiscsi).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
it_init "${1:-}"
CLIENT=${2:-}
[[ -x "$CLIENT" ]] || it_fail "usage: $0 MINITARGET PR_CLIENT"
it_need python3

it_start --lun 0:ram:16M,fault=hang@write --lun 1:ram:16M --drain-timeout 2000 \
	--tmf-timeout 1000 --logout-timeout 1000
URL0=${IT_URLS[0]}
URL1=${IT_URLS[1]}

# 1. Initiator A writes one block of LUN 0: the write never comes back.
"$CLIENT" -i iqn.2026-11.org.libscsitgt:hung "$URL0" write 0 1 7 >"$IT_TMP/hung.out" \
	2>"$IT_TMP/hung.err" &
hung=$!
IT_HELPER_PIDS+=("$hung")
# The WRITE is in the backend once the fault backend holds it: minitarget prints the fault
# counters on SIGUSR1; ask until they show the held io (bounded).
held() { grep -q "^fault lun 0: .* held 1 " "$IT_TMP/target.out"; }
for ((i = 0; i < 600; i++)); do
	kill -USR1 "$IT_PID"
	held && break
	kill -0 "$hung" 2>/dev/null || it_fail "the writer exited: $(cat "$IT_TMP/hung.err")"
	sleep 0.1
done
held || it_fail "the write never reached the backend: $(grep '^fault' "$IT_TMP/target.out" | tail -n 1)"
it_log "$(grep '^fault lun 0' "$IT_TMP/target.out" | tail -n 1)"

# 2. Initiator B is served meanwhile: LUN 1 written and verified, LUN 0 answers.
OTHER=iqn.2026-11.org.libscsitgt:other
for pass in 1 2 3; do
	"$CLIENT" -i "$OTHER" "$URL1" write 0 64 "$pass" >/dev/null ||
		it_fail "initiator B: write to LUN 1 failed (pass $pass)"
	"$CLIENT" -i "$OTHER" "$URL1" verify 0 64 "$pass" >/dev/null ||
		it_fail "initiator B: LUN 1 read back wrong data (pass $pass)"
done
out=$("$CLIENT" -i "$OTHER" "$URL0" tur) || it_fail "initiator B: TEST UNIT READY on LUN 0 failed"
[[ "$out" == good || "$out" == sense\ 6/* ]] || it_fail "initiator B: LUN 0 TUR said '$out'"
it_alive || it_fail "the target died"
kill -0 "$hung" 2>/dev/null ||
	it_fail "the hung write completed: $(cat "$IT_TMP/hung.out" "$IT_TMP/hung.err")"
it_log "ok: a hung write on LUN 0 leaves the target serving another initiator"

# 3. SIGTERM: the target asks A to log out, the logout and the LUN removal give up on the
# write after their timeouts, and the process exits 0.
st=0
it_stop || st=$?
[[ $st -eq 0 ]] || it_fail "SIGTERM with a hung write gave exit status $st"
grep -q "ios still in backend" "$IT_TMP/target.err" ||
	it_fail "the target did not report the write it gave up on"
it_log "ok: SIGTERM ends the target although its backend never returns the write"
it_log "PASS"
