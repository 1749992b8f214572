#!/bin/bash
# rbd_close.sh MINITARGET PR_CLIENT - the RBD backend's close() after the engine gave up on an
# io librbd still has (docs/threading.md, "A backend that never completes", item 3):
# - a WRITE reaches librbd while the only OSD is stopped (SIGSTOP; no RADOS op timeout, so it
#   stays there), the target is told to stop (SIGTERM) and its engine gives the io up after
#   --drain-timeout; minitarget then closes the RBD backend itself (close() called by the host
#   at once after the engine's destroy);
# - the close does not finish while librbd holds the write (the process still runs, no
#   "closed" line) and never blocks the loop's teardown of the rest;
# - once the OSD runs again, librbd gives the write back, the backend completes it (its io,
#   command, buffer and the LUN's remaining memory go: ASan builds, detect_leaks=1, report
#   any leak), then closes the image and calls back: the process exits 0;
# - the write is all or nothing on the image (the initiator got no status for it).
# Once with the session on the home loop, once on a worker loop (--workers 2: that worker
# detaches and runs its loop on for the backend until the close tore its queue down). Then a
# fault rule in front of the RBD backend holds the write instead: minitarget releases it and
# closes the RBD backend after the engine's destroy; the process exits 0.
# Skipped without the Ceph packages.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/rbd_lib.sh"
it_init "${1:-}"
PC=${2:-}
[[ -x "$PC" ]] || it_fail "usage: $0 MINITARGET PR_CLIENT"
it_need python3
rbd_need
rbd_cluster_up -S 16M
IMG=$MICRO_CEPH_POOL/$MICRO_CEPH_IMAGE
osd=$(awk '$1 == "osd.0" { print $2 }' "$RBD_DIR/pids")
[[ -n "$osd" ]] && kill -0 "$osd" || it_fail "no OSD pid in $RBD_DIR/pids"
osd_stopped=
cont_osd() {
	[[ -z "$osd_stopped" ]] || kill -CONT "$osd" 2>/dev/null || true
	osd_stopped=
}
# rbd_cleanup reads the test's status from $?.
trap 'st=$?; cont_osd; (exit $st); rbd_cleanup' EXIT

# inflight N: SIGUSR1 until minitarget says LUN 0 has N commands in flight (bounded).
inflight() {
	local i
	for ((i = 0; i < 300; i++)); do
		kill -USR1 "$IT_PID"
		sleep 0.1
		[[ "$(grep '^lun 0: inflight' "$IT_TMP/target.out" | tail -n 1)" == "lun 0: inflight $1" ]] &&
			return 0
		kill -0 "$IT_PID" 2>/dev/null || break
	done
	it_fail "LUN 0 never had $1 command(s) in flight: $(grep '^lun 0' "$IT_TMP/target.out" | tail -n 1)"
}

# block LBA: the byte filling block LBA of the image (pr_client writes (PAT + LBA) & 0xff), or
# "mixed".
block() {
	rbd export --no-progress "$IMG" "$IT_TMP/img" >/dev/null 2>&1 || it_fail "rbd export failed"
	python3 - "$IT_TMP/img" "$1" <<'PY'
import sys
with open(sys.argv[1], "rb") as f:
    f.seek(int(sys.argv[2]) * 512)
    b = f.read(512)
print(b[0] if len(b) == 512 and b == bytes([b[0]]) * 512 else "mixed")
PY
	rm -f "$IT_TMP/img"
}

# exited_by_itself: the target ends without another signal (its handlers are gone after the
# engine's destroy), status 0.
exited_by_itself() {
	local i st=0
	for ((i = 0; i < IT_STOP_TIMEOUT * 10; i++)); do
		kill -0 "$IT_PID" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$IT_PID" 2>/dev/null && it_fail "the target still runs ${IT_STOP_TIMEOUT}s after $1"
	wait "$IT_PID" || st=$?
	IT_PID=
	[[ $st -eq 0 ]] || it_fail "the target exited with status $st after $1"
	! grep -qE "(ERROR|WARNING): [A-Za-z]*Sanitizer" "$IT_TMP/target.err" ||
		it_fail "sanitizer report"
}

phase() {
	local workers=$1 lba=$2 old=$3 new=$4 pc got
	it_start -v --workers "$workers" --drain-timeout 300 --logout-timeout 300 \
		--lun "0:rbd:$IMG,nocache,timeout=0,nopr"
	"$PC" "${IT_URLS[0]}" write "$lba" 1 "$old" 1 >/dev/null 2>"$IT_TMP/pc.err" ||
		it_fail "first write: $(cat "$IT_TMP/pc.err")"
	rbd_stop "$osd"
	osd_stopped=1
	"$PC" "${IT_URLS[0]}" write "$lba" 1 "$new" 1 >"$IT_TMP/pc2.out" 2>"$IT_TMP/pc2.err" &
	pc=$!
	IT_HELPER_PIDS+=("$pc")
	inflight 1
	kill -TERM "$IT_PID"
	it_wait_log "$IT_TMP/target.err" "closing with 1 io(s) still in librbd"
	# The engine is gone and the host called close(): it waits for librbd, on no loop.
	it_wait_log "$IT_TMP/target.err" "closing the rbd backend the engine gave up on"
	kill -0 "$IT_PID" 2>/dev/null || it_fail "the target exited while librbd held the write"
	! grep -q "rbd backend closed after" "$IT_TMP/target.err" ||
		it_fail "the close finished while librbd held the write"
	cont_osd
	# The close finishes (its callback) and the process ends by itself.
	exited_by_itself "the OSD came back"
	grep -q "came back from librbd during the close" "$IT_TMP/target.err" ||
		it_fail "the write librbd gave back was never completed"
	grep -q "rbd backend closed after the engine gave up" "$IT_TMP/target.err" ||
		it_fail "no close callback"
	kill "$pc" 2>/dev/null || true
	wait "$pc" 2>/dev/null || true
	IT_HELPER_PIDS=()
	got=$(block "$lba")
	if [[ $got == $(((old + lba) & 255)) ]]; then
		it_log "workers $workers: the write given up on did not land (all or nothing: nothing)"
	elif [[ $got == $(((new + lba) & 255)) ]]; then
		it_log "workers $workers: the write given up on landed whole (all or nothing: all)"
	else
		it_fail "block $lba after the close: $got, neither the old data nor the new"
	fi
	it_log "workers $workers: close after the engine gave up: waited for librbd, completed the write, exit 0"
	cp "$IT_TMP/target.err" "$IT_TMP/target-w$workers.err"
}

phase 0 8 17 99
phase 2 9 23 77

# A fault rule in front of the RBD backend holds the write (never in librbd): minitarget
# releases it (EIO) and destroys the fault context after the engine's destroy, which closes the
# RBD backend behind it. Before, that happened only after the loop ended, which the RBD
# context's handles kept from ending: the process never exited.
it_start -v --drain-timeout 300 --logout-timeout 300 --lun "0:rbd:$IMG,nocache,nopr,fault=hang@write"
"$PC" "${IT_URLS[0]}" write 10 1 31 1 >/dev/null 2>"$IT_TMP/pc3.err" &
IT_HELPER_PIDS+=("$!")
for ((i = 0; i < 300; i++)); do
	kill -USR1 "$IT_PID"
	sleep 0.1
	grep -q "^fault lun 0: .* held 1 " "$IT_TMP/target.out" && break
done
grep -q "^fault lun 0: .* held 1 " "$IT_TMP/target.out" || it_fail "the fault rule held no write"
kill -TERM "$IT_PID"
exited_by_itself "a SIGTERM with the write held by the fault rule"
grep -q "rbd/test: closed" "$IT_TMP/target.err" || it_fail "the RBD backend behind the fault rule was not closed"
it_stop_helpers
it_log "fault rule in front of RBD holding a write: released, the RBD backend closed, exit 0"
it_log "PASS"
