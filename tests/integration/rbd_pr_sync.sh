#!/bin/bash
# rbd_pr_sync.sh MINITARGET PR_CLIENT HOLD_MODULE - the copies of shared persistent reservations follow the
# object when the watch did not carry a change (docs/rbd.md, "A change whose notify was lost"):
# two gateways (minitarget, ALUA off, micro-ceph), LUN 0 on one image.
# 1. A PREEMPT through A whose notify reaches nobody (SIGRTMIN+3: minitarget's fault injection,
#    as when A's ioctx is being replaced between the write and its notify): A answers GOOD only
#    once B enforces it: the preempted initiator's write through B, sent right after, gets
#    RESERVATION CONFLICT, and READ RESERVATION through B names the new holder (before: GOOD,
#    the write landed, B kept the old holder until the next change; reviewh F1).
# 2. The object deleted (`rados rm`), then a registration through A: B's keys equal A's
#    (before: B kept the deleted registrations, its copy's sequence being higher; reviewh F5).
# 3. The object replaced by an older copy of itself (`rados put`): both gateways' copies go
#    back to it (before: both ignored it as older, for good).
# 4. B restarts and its worker is held between the attach's re-read and its hand-over (the
#    LD_PRELOAD module HOLD_MODULE, rbd_pr_hold.c, which also keeps the periodic read from
#    correcting the copy afterwards); meanwhile a PREEMPT through A is notified to B's new
#    watch and applied there. B's copy must keep it: READ RESERVATION through B names the new
#    holder (before: the older re-read was loaded over it, one change behind for good;
#    reviewh F3).
# 5. B restarts while A is stopped (SIGSTOP: a loop and librados that do not answer B's probe
#    within notify_timeout_ms, A's watch still held by the OSD): A is a gateway all the same,
#    so B must keep the registrations made without APTPL (before: B found "no other gateway",
#    cleared them, and A, resumed, kept its own copy; reviewh F2).
# Skipped without the Ceph packages.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/rbd_lib.sh"
it_init "${1:-}"
CLIENT=${2:-}
HOLD=${3:-}
[[ -x "$CLIENT" && -f "$HOLD" ]] || it_fail "usage: $0 MINITARGET PR_CLIENT HOLD_MODULE"
it_need python3
rbd_need
rbd_cluster_up -S 16M
pool=$MICRO_CEPH_POOL
IMG=$pool/$MICRO_CEPH_IMAGE
GW_IQN=iqn.2026-11.org.libscsitgt:rbd-pr-sync

B_PID=
b_launch() { # [VAR=VALUE...]: gateway B, with that environment
	local port
	port=$(it_free_port)
	: >"$IT_TMP/b.out"
	# shellcheck disable=SC2086 # IT_TARGET_ARGS is a command line (lib.sh)
	env "$@" "$IT_TARGET" -v --portal "127.0.0.1:$port" --iqn "$GW_IQN" --lun "0:rbd:$IMG,nocache" \
		${IT_TARGET_ARGS:-} >"$IT_TMP/b.out" 2>>"$IT_TMP/b.err" </dev/null &
	B_PID=$!
	IT_HELPER_PIDS=("$B_PID")
}
b_start() { # [VAR=VALUE...]: launched, and its URL in $B
	local i
	b_launch "$@"
	for ((i = 0; i < IT_START_TIMEOUT * 10; i++)); do
		grep -q '^iscsi://' "$IT_TMP/b.out" && break
		kill -0 "$B_PID" 2>/dev/null || it_fail "gateway B exited: $(tail -n 5 "$IT_TMP/b.err")"
		sleep 0.1
	done
	B=$(grep -o -m1 'iscsi://[^[:space:]]*' "$IT_TMP/b.out") || it_fail "gateway B printed no URL"
}
it_start -v --iqn "$GW_IQN" --lun "0:rbd:$IMG,nocache"
A=${IT_URLS[0]}
b_start
X=(-i iqn.2026-11.org.libscsitgt:sync-x -q 1)
Y=(-i iqn.2026-11.org.libscsitgt:sync-y -q 2)
Z=(-i iqn.2026-11.org.libscsitgt:sync-z -q 3)

keys() { # URL: the keys read through it, sorted, on one line
	"$CLIENT" "${Z[@]}" "$1" readkeys | LC_ALL=C sort | tr '\n' ' '
}
# wait_keys URL KEYS WHAT: the keys through URL become KEYS (bounded, as a target's start).
wait_keys() {
	local i k=
	for ((i = 0; i < IT_START_TIMEOUT * 10; i++)); do
		k=$(keys "$1")
		[[ "$k" == "$2" ]] && return 0
		sleep 0.1
	done
	it_fail "$3: keys '$k', expected '$2'"
}

# ---- 1. a PREEMPT whose notify reaches nobody ----
"$CLIENT" "${X[@]}" "$B" register 0xa1
"$CLIENT" "${X[@]}" "$B" reserve 0xa1 1 # WRITE EXCLUSIVE
"$CLIENT" "${Y[@]}" "$A" register 0xb1
"$CLIENT" "${X[@]}" "$B" write 0 8 1 1 >/dev/null || it_fail "the holder cannot write through B"
kill -s "SIGRTMIN+3" "$IT_PID"
it_wait_log "$IT_TMP/target.out" '^pr notify fault on'
"$CLIENT" "${Y[@]}" "$A" preempt 0xb1 0xa1 1 || it_fail "PREEMPT through A failed"
# At once: A's GOOD means B enforces it.
if "$CLIENT" "${X[@]}" "$B" write 0 8 2 1 >/dev/null 2>"$IT_TMP/x.err"; then
	it_fail "the preempted initiator's write through B was served after A's GOOD"
fi
grep -q "WRITE: status 0x18" "$IT_TMP/x.err" ||
	it_fail "the preempted initiator's write through B: $(cat "$IT_TMP/x.err")"
res=$("$CLIENT" "${X[@]}" "$B" readres)
[[ "$res" == "0x00000000000000b1 1" ]] || it_fail "READ RESERVATION through B: $res"
grep -q "its notify reached no gateway" "$IT_TMP/target.err" ||
	it_fail "A did not log the unnotified change"
grep -q "applied from the object" "$IT_TMP/b.err" || it_fail "B did not log the change it read"
kill -s "SIGRTMIN+3" "$IT_PID"
it_wait_log "$IT_TMP/target.out" '^pr notify fault off'
it_log "a PREEMPT whose notify reached nobody: answered once B enforced it"

# ---- 2. the object deleted ----
prid=$(rbd info "$IMG" --format json | python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])')
obj=scsitgt_pr.$prid
rados -p "$pool" get "$obj" "$IT_TMP/old.pr" || it_fail "rados get $obj"
old_keys=$(keys "$A")
[[ "$old_keys" == "0x00000000000000b1 " ]] || it_fail "keys before the removal: $old_keys"
rados -p "$pool" rm "$obj" || it_fail "rados rm $obj"
"$CLIENT" "${Z[@]}" "$A" register 0xc1
[[ $(keys "$A") == "0x00000000000000c1 " ]] || it_fail "keys through A after the removal: $(keys "$A")"
wait_keys "$B" "0x00000000000000c1 " "B after the object was deleted and registered again"
it_log "the object deleted: B follows A's new state"

# ---- 3. the object replaced by an older copy ----
"$CLIENT" "${Y[@]}" "$B" register 0xd1
wait_keys "$A" "0x00000000000000c1 0x00000000000000d1 " "A after a registration through B"
rados -p "$pool" put "$obj" "$IT_TMP/old.pr" || it_fail "rados put $obj"
wait_keys "$A" "$old_keys" "A after the object went back"
wait_keys "$B" "$old_keys" "B after the object went back"
res=$("$CLIENT" "${X[@]}" "$B" readres)
[[ "$res" == "0x00000000000000b1 1" ]] || it_fail "READ RESERVATION through B, object back: $res"
it_log "the object replaced by an older copy: both gateways follow it"

# ---- 4. B's attach overtaken by a notify ----
b_stop() {
	kill -TERM "$B_PID"
	wait "$B_PID" || it_fail "gateway B exited with status $? on SIGTERM"
	IT_HELPER_PIDS=()
}
b_stop
: >"$IT_TMP/b.err"
touch "$IT_TMP/hold"
# An AddressSanitizer build aborts unless its runtime comes first in the preload list.
preload=$HOLD
asan_rt=$(ldd "$IT_TARGET" 2>/dev/null | awk '/libasan\.so/ { print $3; exit }')
[[ -n "$asan_rt" ]] && preload="$asan_rt:$HOLD"
b_launch LD_PRELOAD="$preload" RBD_PR_HOLD="$IT_TMP/hold"
it_wait_log "$IT_TMP/b.err" "rbd_pr_hold: attach re-read held"
"$CLIENT" "${Z[@]}" "$A" register 0xe1
"$CLIENT" "${Z[@]}" "$A" preempt 0xe1 0xb1 1
rm "$IT_TMP/hold"
it_wait_log "$IT_TMP/b.out" '^iscsi://'
B=$(grep -o -m1 'iscsi://[^[:space:]]*' "$IT_TMP/b.out")
res=$("$CLIENT" "${X[@]}" "$B" readres)
[[ "$res" == "0x00000000000000e1 1" ]] || it_fail "READ RESERVATION through B after its attach: $res"
[[ $(keys "$B") == "0x00000000000000e1 " ]] || it_fail "keys through B after its attach: $(keys "$B")"
it_log "a notify applied during B's attach stays: B's copy is not loaded over it"

# ---- 5. a restart next to a gateway that does not answer ----
b_stop
: >"$IT_TMP/b.err"
kill -STOP "$IT_PID"
b_launch
it_wait_log "$IT_TMP/b.err" "persistent reservations shared"
kill -CONT "$IT_PID"
it_wait_log "$IT_TMP/b.out" '^iscsi://'
B=$(grep -o -m1 'iscsi://[^[:space:]]*' "$IT_TMP/b.out")
if grep -q "state without APTPL cleared" "$IT_TMP/b.err"; then
	it_fail "B cleared the state of a cluster whose gateway A was only slow"
fi
grep -q "watcher(s) of the object did not answer" "$IT_TMP/b.err" ||
	it_fail "B did not count A's silent watch: $(grep -i 'shared\|watcher' "$IT_TMP/b.err")"
[[ $(keys "$B") == "0x00000000000000e1 " ]] || it_fail "keys through B: $(keys "$B")"
[[ $(keys "$A") == "0x00000000000000e1 " ]] || it_fail "keys through A: $(keys "$A")"
it_log "B started next to a stopped gateway A: the state without APTPL stays"

b_stop
it_stop || it_fail "gateway A exited with status $? on SIGTERM"
it_log "PASS"
