#!/bin/bash
# rbd_fault.sh MINITARGET PR_CLIENT RBD_LOCK_CLIENT - an RBD LUN (minitarget, client cache off,
# 3 s RADOS operation timeout) when the cluster or another gateway gets in the way. Every
# failure must reach the initiator as sense data that tells it what to do, never as GOOD:
# - another client takes the exclusive lock (rbd_lock_client hold: a second gateway): writes
#   fail with NOT READY, LOGICAL UNIT NOT ACCESSIBLE, TARGET PORT IN STANDBY STATE (2/04/0b);
#   once it lets go, writes work again;
# - another client breaks the lock (rbd_lock_client break: a failover): this client is
#   blocklisted, its writes fail with NOT READY, ASYMMETRIC ACCESS STATE TRANSITION (2/04/0a)
#   and keep failing (fenced), also the writes in flight when it happened;
# - the OSD stops (SIGSTOP) under I/O: reads and writes fail within the timeout with NOT READY,
#   BECOMING READY (2/04/01), which initiators retry; after SIGCONT they work, the acknowledged
#   data reads back and equals `rbd export`, the unacknowledged write is all or nothing;
# - the OSD stops under the writes of a gateway owning the lock, with a small librados
#   in-flight budget (CEPH_ARGS) and no op timeout: its loop (heartbeat writes on it) keeps
#   answering REPORT TARGET PORT GROUPS; after SIGCONT the writes go on;
# - nocache while the image's configuration turns rbd_cache on (librbd: image over client):
#   the LUN is not served; a gateway on an image with the client cache on is refused, and so
#   is one whose lock break would not blocklist the old owner (or only for 60 s).
# Skipped without the Ceph packages.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/rbd_lib.sh"
it_init "${1:-}"
PC=${2:-}
LOCKER=${3:-}
[[ -x "$PC" && -x "$LOCKER" ]] || it_fail "usage: $0 MINITARGET PR_CLIENT RBD_LOCK_CLIENT"
it_need python3
rbd_need
# Ceph's own 30 s watch timeout, not -w 5 (no client is killed here). A short one could break
# the hand-over: `rbd_lock_client hold` gets the lock cooperatively only while the target's
# image-header watch is live; one the OSD dropped after late pings (a loaded host) makes librbd
# break the lock with a blocklist (2/04/0a, not 0b). And the OSD stop below (two 3 s op
# timeouts and two logins) stays under the PR copy's watch bound (26.25 s; 4 s with -w 5), so
# its 2/04/01 comes from the backend's op timeout, as the section says.
rbd_cluster_up -S 16M
IMG=$MICRO_CEPH_POOL/$MICRO_CEPH_IMAGE
lun_args=(--lun "0:rbd:$IMG,nocache,timeout=3")

# write START COUNT PAT: 0 when acknowledged; the sense of a failure lands in $SENSE.
SENSE=
write() {
	SENSE=
	if "$PC" "${IT_URLS[0]}" write "$1" "$2" "$3" 1 >/dev/null 2>"$IT_TMP/pc.err"; then
		return 0
	fi
	SENSE=$(sed -n 's/.*sense \([0-9a-f]*\/[0-9a-f]*\/[0-9a-f]*\).*/\1/p' "$IT_TMP/pc.err")
	[[ -n "$SENSE" ]] || it_fail "write failed without sense: $(cat "$IT_TMP/pc.err")"
	return 1
}

# ---- another gateway holds the lock, then breaks it ----
it_start "${lun_args[@]}"
write 0 64 17 || it_fail "first write: sense $SENSE"
coproc HOLD { exec "$LOCKER" "$IMG" hold 2>>"$IT_TMP/locker.err"; }
IT_HELPER_PIDS+=("$HOLD_PID")
read -r -t 60 line <&"${HOLD[0]}" || it_fail "locker: $(cat "$IT_TMP/locker.err")"
[[ "$line" == locked ]] || it_fail "locker said $line"
if write 0 64 18; then
	it_fail "a write succeeded while another client owned the exclusive lock"
fi
[[ "$SENSE" == 2/04/0b ]] || it_fail "write under another owner's lock: sense $SENSE, want 2/04/0b"
it_log "another owner: writes fail with 2/04/0b (standby)"
echo >&"${HOLD[1]}"
wait "$HOLD_PID" || it_fail "locker hold exited with $?"
IT_HELPER_PIDS=()
write 0 64 19 || it_fail "write after the other owner let go: sense $SENSE"

# A writer in flight, then the lock broken under it: blocklisted. Its files exist before it
# starts (the wait below reads them at once).
: >"$IT_TMP/loop.out"
: >"$IT_TMP/loop.err"
"$PC" "${IT_URLS[0]}" write 64 64 33 0 >"$IT_TMP/loop.out" 2>"$IT_TMP/loop.err" &
loop_pid=$!
IT_HELPER_PIDS+=("$loop_pid")
# Its login and two passes of 64 blocks: seconds, far more under ThreadSanitizer on a loaded
# host; the bound is only for a writer that is stuck.
for ((i = 0; i < 1200; i++)); do
	grep -q "pass 2" "$IT_TMP/loop.out" && break
	kill -0 "$loop_pid" 2>/dev/null || break
	sleep 0.1
done
grep -q "pass 2" "$IT_TMP/loop.out" || it_fail "the writer made no progress: $(cat "$IT_TMP/loop.err")"
coproc BRK { exec "$LOCKER" "$IMG" break 2>>"$IT_TMP/locker.err"; }
IT_HELPER_PIDS+=("$BRK_PID")
read -r -t 60 line <&"${BRK[0]}" || it_fail "locker break: $(cat "$IT_TMP/locker.err")"
[[ "$line" == locked ]] || it_fail "locker said $line"
st=0
wait "$loop_pid" || st=$?
[[ $st -ne 0 ]] || it_fail "the writer ended well although its client was blocklisted"
grep -q "sense 2/04/0a" "$IT_TMP/loop.err" ||
	it_fail "in-flight writer after the blocklist: $(cat "$IT_TMP/loop.err")"
if write 0 64 20; then
	it_fail "a blocklisted client acknowledged a write"
fi
[[ "$SENSE" == 2/04/0a ]] || it_fail "fenced write: sense $SENSE, want 2/04/0a"
# The fenced message is home's: an io that ran on a worker loop posts the news to home and
# sends its sense at once, so the line may come after the initiator saw the sense.
it_wait_log "$IT_TMP/target.err" "blocklisted (fenced)"
it_log "lock broken by another client: in-flight and later writes fail with 2/04/0a (fenced)"
echo >&"${BRK[1]}"
wait "$BRK_PID" || it_fail "locker break exited with $?"
IT_HELPER_PIDS=()
it_stop || it_fail "fenced target exited with status $? on SIGTERM"

# ---- the OSD stops under I/O ----
it_start "${lun_args[@]}"
write 0 64 40 || it_fail "write before the OSD stop: sense $SENSE"
osd=$(awk '$1 == "osd.0" { print $2 }' "$RBD_DIR/pids")
[[ -n "$osd" ]] && kill -0 "$osd" || it_fail "no OSD pid in $RBD_DIR/pids"
rbd_stop "$osd"
if write 0 64 41; then
	kill -CONT "$osd"
	it_fail "a write was acknowledged while the only OSD was stopped"
fi
[[ "$SENSE" == 2/04/01 ]] || { kill -CONT "$osd"; it_fail "write, OSD stopped: sense $SENSE"; }
if "$PC" "${IT_URLS[0]}" verify 0 64 40 >/dev/null 2>"$IT_TMP/pc.err"; then
	kill -CONT "$osd"
	it_fail "a read succeeded while the only OSD was stopped"
fi
grep -q "sense 2/04/01" "$IT_TMP/pc.err" || { kill -CONT "$osd"; it_fail "read: $(cat "$IT_TMP/pc.err")"; }
kill -CONT "$osd"
it_log "OSD stopped: reads and writes fail with 2/04/01 (becoming ready)"
ok=
for ((i = 0; i < 60; i++)); do
	if write 64 64 42; then
		ok=1
		break
	fi
	sleep 0.5
done
[[ -n "$ok" ]] || it_fail "no recovery after SIGCONT: sense $SENSE"
"$PC" "${IT_URLS[0]}" verify 64 64 42 >/dev/null || it_fail "acknowledged blocks 64..127 differ"
# The write that failed is one RADOS object op: all of it landed or none of it.
"$PC" "${IT_URLS[0]}" verify 0 64 40 >/dev/null 2>&1 ||
	"$PC" "${IT_URLS[0]}" verify 0 64 41 >/dev/null 2>&1 ||
	it_fail "blocks 0..63 are neither the acknowledged nor the failed write's data"
rbd export "$IMG" "$IT_TMP/export.img" >/dev/null 2>&1 || it_fail "rbd export failed"
python3 - "$IT_TMP/export.img" <<'PY' || it_fail "rbd export lacks the acknowledged blocks 64..127"
import sys
d = open(sys.argv[1], "rb").read()
for lba in range(64, 128):
    want = bytes([(42 + lba) & 0xff]) * 512
    if d[lba * 512:(lba + 1) * 512] != want:
        sys.exit(1)
PY
it_log "after SIGCONT: I/O recovered, acknowledged data intact in the cluster"
it_stop || it_fail "target exited with status $? on SIGTERM"

# ---- the OSD stops under the owner's writes: its loop keeps answering ----
# A gateway (the only one: it owns the lock) writes its heartbeat from its loop at every
# tick. librados' in-flight budget, here 16 KiB (CEPH_ARGS) and filled by one of the
# writer's 32 KiB writes to the stopped OSD (no op timeout: it stays), made that submit wait
# on the loop until the OSD came back: REPORT TARGET PORT GROUPS (answered on the loop) got
# no answer. The backend takes the budget out of every client's configuration. With worker
# loops (IT_TARGET_ARGS) the writes and the answers run on a worker, but each answer's login
# still needs home, which makes the nexus: a stalled home loop fails it all the same.
# The writer's own files, emptied here before it starts: the earlier writer's loop.out holds
# "pass 1" already, and the background job's redirection truncates it only once its shell
# runs, which may come after the first look below (that look then ended the wait at once and
# the next one failed, "no progress" while the writer went on: 1 run in 6 to 12 here).
: >"$IT_TMP/gw_writer.out"
: >"$IT_TMP/gw_writer.err"
CEPH_ARGS="--objecter_inflight_op_bytes 16384" \
	it_start --alua-group 1 --gw-probe 200 --lun "0:rbd:$IMG,nocache,timeout=0,nopr"
it_wait_log "$IT_TMP/target.err" "-> owner"
"$PC" "${IT_URLS[0]}" write 0 64 50 0 >"$IT_TMP/gw_writer.out" 2>"$IT_TMP/gw_writer.err" &
loop_pid=$!
IT_HELPER_PIDS+=("$loop_pid")
for ((i = 0; i < 1200; i++)); do
	grep -q "pass 1" "$IT_TMP/gw_writer.out" && break
	kill -0 "$loop_pid" 2>/dev/null || break
	sleep 0.1
done
if ! grep -q "pass 1" "$IT_TMP/gw_writer.out"; then
	st=running
	kill -0 "$loop_pid" 2>/dev/null || { st=0; wait "$loop_pid" || st=$?; }
	it_fail "the gateway's writer made no progress (status $st): $(cat "$IT_TMP/gw_writer.out" "$IT_TMP/gw_writer.err")
$(tail -n 15 "$IT_TMP/target.err")"
fi
rbd_stop "$osd"
# Each answer is a login, a command and a logout on the loop, ticks (200 ms) apart at least
# once the writes stand still.
for ((i = 0; i < 5; i++)); do
	if ! timeout 30 "$PC" "${IT_URLS[0]}" rtpg >"$IT_TMP/rtpg.out" 2>&1; then
		kill -CONT "$osd"
		it_fail "REPORT TARGET PORT GROUPS got no answer with the OSD stopped under writes"
	fi
done
passes=$(grep -c "^pass" "$IT_TMP/gw_writer.out")
kill -CONT "$osd"
it_log "OSD stopped under the owner's writes: its loop answered 5 REPORT TARGET PORT GROUPS"
for ((i = 0; i < 1200; i++)); do
	[[ $(grep -c "^pass" "$IT_TMP/gw_writer.out") -gt $passes ]] && break
	sleep 0.1
done
[[ $(grep -c "^pass" "$IT_TMP/gw_writer.out") -gt $passes ]] || it_fail "no write after SIGCONT"
kill "$loop_pid" 2>/dev/null || true
wait "$loop_pid" 2>/dev/null || true
IT_HELPER_PIDS=()
it_stop || it_fail "gateway exited with status $? on SIGTERM"

# ---- a cache the host turned off, on again through the image's configuration ----
# refused NAME PATTERN MINITARGET-ARGS...: minitarget must exit at start, its log matching
# PATTERN, without ever listening (before: it served, with the cache).
refused() {
	local name=$1 pattern=$2 pid i
	shift 2
	# Made here, not by the background shell's redirection: the loop below greps it at once.
	: >"$IT_TMP/$name.out"
	# shellcheck disable=SC2086 # IT_TARGET_ARGS is a command line (lib.sh)
	"$IT_TARGET" --portal "$IT_PORTAL" "$@" ${IT_TARGET_ARGS:-} </dev/null \
		>>"$IT_TMP/$name.out" 2>"$IT_TMP/$name.err" &
	pid=$!
	IT_HELPER_PIDS+=("$pid")
	for ((i = 0; i < 600; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		if grep -q "iscsi://" "$IT_TMP/$name.out"; then
			kill -KILL "$pid"
			it_fail "$name: served: $(grep rbd "$IT_TMP/$name.err" | tail -2)"
		fi
		sleep 0.1
	done
	wait "$pid" && it_fail "$name: exit status 0"
	IT_HELPER_PIDS=()
	grep -q -- "$pattern" "$IT_TMP/$name.err" || it_fail "$name: $(tail -3 "$IT_TMP/$name.err")"
}
rbd config image set "$IMG" rbd_cache true >/dev/null 2>&1 || it_fail "rbd config image set"
refused nocache "overridden by the image's rbd_cache = true" --lun "0:rbd:$IMG,nocache,nopr"
rbd config image rm "$IMG" rbd_cache >/dev/null 2>&1 || it_fail "rbd config image rm"
it_log "nocache with the image's rbd_cache = true: not served"
# A gateway with the cache on (no nocache): refused.
refused cached-gateway "a gateway needs the image without librbd's client cache" \
	--alua-group 1 --lun "0:rbd:$IMG,nopr"
it_log "a gateway with librbd's client cache: refused"
# A gateway whose lock breaks would not fence the old owner (reviewh F4: two writers, a newer
# write through the new owner lost): refused, from the client's configuration (CEPH_ARGS) and
# from the image's. Before: served.
CEPH_ARGS="--rbd_blocklist_on_break_lock=false" refused unfenced-gateway \
	"a gateway needs rbd_blocklist_on_break_lock = true" \
	--alua-group 1 --lun "0:rbd:$IMG,nocache,nopr"
rbd config image set "$IMG" rbd_blocklist_expire_seconds 60 >/dev/null 2>&1 ||
	it_fail "rbd config image set"
refused short-blocklist "a gateway needs rbd_blocklist_expire_seconds = 0 .* not 60" \
	--alua-group 1 --lun "0:rbd:$IMG,nocache,nopr"
rbd config image rm "$IMG" rbd_blocklist_expire_seconds >/dev/null 2>&1 ||
	it_fail "rbd config image rm"
it_log "a gateway whose lock break would not fence (or only for 60 s): refused"
it_log "PASS"
