#!/bin/bash
# pr_hold.sh MINITARGET CLIENT - task management of commands held for a cluster reservation
# store (core/pr_hold.c; docs/rbd.md, "A loop that runs late", "Cut short").
# LUN 0 is a RAM LUN with minitarget's prhold flag: its reservations live in a store whose lease
# has run out for good, so every READ or WRITE waits for a store that never answers. For each
# way of ending such a command (ABORT TASK, ABORT TASK SET, LOGICAL UNIT RESET, a logout, the
# connection dropped), a libiscsi initiator (pr_client.c "held") sends a READ (10), which the
# target holds, then that function: it must be answered without the store, that is before the
# target's TMF and logout timeouts (set to 10 minutes here; before session 35 the answer came
# only then) and well within the client's 20 s wait. Last, SIGTERM ends the target at once
# with exit status 0 (the LUN's removal does not wait out its drain timeout, also 10 minutes,
# for a held command).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
it_init "${1:-}"
CLIENT=${2:-}
[[ -x "$CLIENT" ]] || it_fail "usage: $0 MINITARGET PR_CLIENT"

it_start --lun 0:ram:16M,prhold --lun 1:ram:16M --tmf-timeout 600000 \
	--logout-timeout 600000 --drain-timeout 600000
URL0=${IT_URLS[0]}
URL1=${IT_URLS[1]}

# A command every reservation allows is not held; one on a LUN without the store neither.
out=$("$CLIENT" "$URL0" tur) || it_fail "TEST UNIT READY on LUN 0 failed"
[[ "$out" == good || "$out" == sense\ 6/* ]] || it_fail "LUN 0 TUR said '$out'"
"$CLIENT" "$URL1" write 0 8 3 >/dev/null || it_fail "a write to LUN 1 failed"

for kind in abort abort-set lun-reset logout; do
	out=$("$CLIENT" "$URL0" held "$kind") || it_fail "$kind: the client failed: $out"
	[[ "$out" == "answered "*" response 0" ]] ||
		it_fail "$kind of a held READ: '$out' (expected an answer without the store)"
	it_log "ok: $kind of a held READ: $out"
	it_alive || it_fail "the target died after $kind"
done

# The connection goes without a logout: the nexus ends with its held READ.
out=$("$CLIENT" "$URL0" held drop) || it_fail "drop: the client failed: $out"
"$CLIENT" "$URL1" verify 0 8 3 >/dev/null || it_fail "LUN 1 read back wrong data"
it_alive || it_fail "the target died after a dropped connection"

# SIGTERM: nothing held keeps the LUN (a 10-minute drain timeout would show), exit status 0.
st=0
IT_STOP_TIMEOUT=20 it_stop || st=$?
[[ $st -eq 0 ]] || it_fail "SIGTERM gave exit status $st"
! grep -q "ios still in backend\|left to leak" "$IT_TMP/target.err" ||
	it_fail "the target gave up on a LUN: $(grep -m 1 'still in backend\|leak' "$IT_TMP/target.err")"
it_log "ok: SIGTERM ends the target at once after held commands were cut short"
