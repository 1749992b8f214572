#!/bin/bash
# signals.sh MINITARGET READBACK - SIGTERM and SIGINT stop the target cleanly (exit status 0),
# idle and with a session in the middle of a long read; no hang, no crash.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
it_init "${1:-}"
READBACK=${2:-}
[[ -x "$READBACK" ]] || it_fail "usage: $0 MINITARGET ISCSI_READBACK"
it_need python3

# 1. Idle target, SIGTERM.
it_start --lun 0:ram:64M
st=0
it_stop || st=$?
[[ $st -eq 0 ]] || it_fail "idle target: SIGTERM gave exit status $st"
it_log "ok: idle target exits 0 on SIGTERM"

# 2. SIGINT (Ctrl-C in a terminal) after a completed session.
it_start --lun 0:ram:64M
"$READBACK" "${IT_URLS[0]}" 65536 >/dev/null || it_fail "readback failed"
st=0
it_stop INT || st=$?
[[ $st -eq 0 ]] || it_fail "SIGINT gave exit status $st"
it_log "ok: exits 0 on SIGINT"

# 3. SIGTERM while a session is busy: a whole-LUN read in small chunks (many commands) of a
# 1 GiB null LUN; it is signalled once the reader has produced output.
it_start --lun 0:null:1G
"$READBACK" -c 4096 -o "$IT_TMP/busy.out" "${IT_URLS[0]}" 2>"$IT_TMP/busy.err" &
reader=$!
IT_HELPER_PIDS+=("$reader")
for ((i = 0; i < 600; i++)); do
	[[ -s "$IT_TMP/busy.out" ]] && break
	kill -0 "$reader" 2>/dev/null || break
	sleep 0.1
done
[[ -s "$IT_TMP/busy.out" ]] || it_fail "the reader never got data"
kill -0 "$reader" 2>/dev/null || it_log "note: the reader finished before the signal"
st=0
it_stop || st=$?
[[ $st -eq 0 ]] || it_fail "busy target: SIGTERM gave exit status $st"
# The reader must notice that the target went away (or have finished): it may not hang.
for ((i = 0; i < 600; i++)); do
	kill -0 "$reader" 2>/dev/null || break
	sleep 0.1
done
kill -0 "$reader" 2>/dev/null && it_fail "the reader still hangs after the target exited"
it_log "ok: busy target exits 0 on SIGTERM"
it_log "PASS"
