#!/bin/bash
# rbd_pr.sh MINITARGET PR_CLIENT - persistent reservations shared by two gateways (two
# minitarget processes on two ports) exporting the same RBD images (micro-ceph on 127.0.0.1);
# docs/rbd.md, "Persistent reservations across gateways". ALUA is off: both gateways serve
# data commands, so the conflicts below are the reservation's, not a standby path's.
#
# 1. libiscsi's iscsi-test-cu reservation families (SCSI.Prin*, SCSI.Prout*) and
#    SCSI.MultipathIO.Simple and .Reset with its first URL on gateway A and its second on gateway B: the
#    second initiator of every reservation test logs in through B only. A's LUN 0 sits behind a
#    fault rule (a 1 ms delay of each write): the fault backend passes the RBD backend's
#    reset_async on, so a LOGICAL UNIT RESET through A still reaches B's nexus.
# 2. pr_client on a second image:
#    - a reservation taken through A is enforced through B: a write by a non-holder through B
#      gets RESERVATION CONFLICT, READ RESERVATION through B shows it, the holder writes
#      through A;
#    - PREEMPT through B: the preempted nexus, logged in through A, gets REGISTRATIONS
#      PREEMPTED (2Ah/05h) on its next command, then RESERVATION CONFLICT;
#    - registrations racing through A and B (released together): all land, PRgeneration
#      advances by exactly 2 per round;
#    - SPC-2 RESERVE (6) / RELEASE (6) refused (unsupported) through both gateways;
# 3. APTPL (SPC-5 §5.13.5): a restart of one gateway keeps the state; a restart of every
#    gateway clears a state without APTPL; a state with APTPL survives it.
# 4. A gateway whose watch of the reservation object is lost (SIGUSR2: minitarget's fault
#    injection; the object has one watcher left) misses a PREEMPT made through the other: the
#    preempted initiator's WRITE through it ends BUSY, not GOOD on its old copy, and READ
#    RESERVATION through it reads the object; watched again, it enforces the new holder.
# B's client is told a longer osd_client_watch_timeout than the OSD's: it asks the OSD, logs the
# difference and uses the smaller.
#    Then the object is put back to an older copy while B's watch is lost: B's copy follows
#    it as soon as B watches again (the read after the re-watch is authoritative).
# 5. That gateway fenced (its client blocklisted, `ceph osd blocklist add`): a non-holder's
#    WRITE through it gets NOT READY 04h/0Ah, not RESERVATION CONFLICT from its copy; its
#    backend knows that it is fenced without an io having told it.
# Skipped without the Ceph packages.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/rbd_lib.sh"
it_init "${1:-}"
CLIENT=${2:-}
[[ -x "$CLIENT" ]] || it_fail "usage: $0 MINITARGET PR_CLIENT"
it_need iscsi-test-cu python3 timeout
rbd_need
rbd_cluster_up -S 32M
CU_REPORT=$(cd "$(dirname "$0")/../conformance" && pwd)/cu_report.py

pool=$MICRO_CEPH_POOL
rbd create --size 16M "$pool/primg" || it_fail "rbd create primg"
GW_IQN=iqn.2026-11.org.libscsitgt:rbd-pr
LUNS=(--lun "0:rbd:$pool/$MICRO_CEPH_IMAGE" --lun "1:rbd:$pool/primg")
A_LUNS=(--lun "0:rbd:$pool/$MICRO_CEPH_IMAGE,fault=delay=1@write" --lun "1:rbd:$pool/primg")

# Gateway B: a second minitarget on another port (gateway A is lib.sh's target). Both run with
# -v: the checks read the RBD backend's info lines (shared reservations, lease), which
# minitarget prints only with -v.
B_PID=
b_start() {
	local port i
	port=$(it_free_port)
	: >"$IT_TMP/b.out"
	# shellcheck disable=SC2086 # IT_TARGET_ARGS is a command line (lib.sh)
	# B's client configuration says osd_client_watch_timeout 60 s, the OSD runs with 30 s
	# (Ceph's default): B must ask the OSD and use 30 (checked below).
	CEPH_ARGS="--osd_client_watch_timeout=60" \
		"$IT_TARGET" -v --portal "127.0.0.1:$port" --iqn "$GW_IQN" "${LUNS[@]}" ${IT_TARGET_ARGS:-} \
		>"$IT_TMP/b.out" 2>>"$IT_TMP/b.err" </dev/null &
	B_PID=$!
	IT_HELPER_PIDS=("$B_PID")
	for ((i = 0; i < IT_START_TIMEOUT * 10; i++)); do
		[[ $(grep -c '^iscsi://' "$IT_TMP/b.out") -ge 2 ]] && break
		kill -0 "$B_PID" 2>/dev/null || it_fail "gateway B exited: $(tail -n 5 "$IT_TMP/b.err")"
		sleep 0.1
	done
	mapfile -t B_URLS < <(grep -o 'iscsi://[^[:space:]]*' "$IT_TMP/b.out")
	[[ ${#B_URLS[@]} -ge 2 ]] || it_fail "gateway B printed no URLs"
}
b_stop() {
	kill -TERM "$B_PID"
	wait "$B_PID" || it_fail "gateway B exited with status $? on SIGTERM"
	IT_HELPER_PIDS=()
	B_PID=
}
a_start() {
	it_start -v --iqn "$GW_IQN" "${A_LUNS[@]}"
	A_URLS=("${IT_URLS[@]}")
}

# Wait until FILE has a "ready" line (a pr_client logged in), bounded like a target's start
# (IT_START_TIMEOUT): a login to a loaded ThreadSanitizer gateway can take seconds.
wait_ready() {
	local i
	for ((i = 0; i < IT_START_TIMEOUT * 20; i++)); do
		grep -q '^ready' "$1" 2>/dev/null && return 0
		sleep 0.05
	done
	it_fail "client never logged in: $(cat "$1" 2>/dev/null)"
}

# write_refused STATUS WHAT CLIENT-ARGS... URL: a pr_client write that must end with SCSI
# status STATUS (0x18 RESERVATION CONFLICT, 0x08 BUSY); WHAT says what was expected.
write_refused() {
	local status=$1 what=$2
	shift 2
	if "$CLIENT" "$@" write 0 8 1 1 >/dev/null 2>"$IT_TMP/refused.err"; then
		it_fail "$what: the write was served"
	fi
	grep -q "WRITE: status $status" "$IT_TMP/refused.err" ||
		it_fail "$what: expected status $status: $(cat "$IT_TMP/refused.err")"
}

a_start
b_start
grep -q "persistent reservations shared" "$IT_TMP/target.err" ||
	it_fail "gateway A does not share reservations: $(tail -n 5 "$IT_TMP/target.err")"
# The watch bound comes from the smaller of the client's and the OSD's watch timeout; only B's
# differ (docs/rbd.md, "A gateway whose watch is lost").
grep -q "osd_client_watch_timeout is 30 s on osd.0, 60 s in this client's configuration: using 30 s" \
	"$IT_TMP/b.err" || it_fail "B did not take the OSD's watch timeout: $(grep -i watch_timeout "$IT_TMP/b.err")"
if grep -q "osd_client_watch_timeout is\|cannot ask the OSD" "$IT_TMP/target.err"; then
	it_fail "A's watch timeout: $(grep -i watch_timeout "$IT_TMP/target.err")"
fi

# ---- 1. iscsi-test-cu, first URL on A, second on B ----
iscsi-test-cu -l | grep -E '^SCSI\.(Prin|Prout)[^.]*\.[^.]+$' >"$IT_TMP/cu.txt"
# MultipathIO.Reset: a LOGICAL UNIT RESET through one gateway gives the other gateway's nexus
# its unit attention too (SAM-5 §6.3.3, carried by the reservations' watch/notify).
printf '%s\n' SCSI.MultipathIO.Simple SCSI.MultipathIO.Reset >>"$IT_TMP/cu.txt"
it_log "iscsi-test-cu: $(wc -l <"$IT_TMP/cu.txt") tests, ${A_URLS[0]} and ${B_URLS[0]}"
st=0
env -u MALLOC_PERTURB_ timeout -k 10 600 iscsi-test-cu -V --dataloss \
	-i iqn.2026-11.org.libscsitgt:conformance-a -I iqn.2026-11.org.libscsitgt:conformance-b \
	-t "$IT_TMP/cu.txt" "${A_URLS[0]}" "${B_URLS[0]}" </dev/null >"$IT_TMP/cu.log" 2>&1 || st=$?
[[ $st -le 128 ]] || it_fail "iscsi-test-cu died (status $st)"
it_alive || it_fail "gateway A died during iscsi-test-cu"
kill -0 "$B_PID" || it_fail "gateway B died during iscsi-test-cu"
python3 "$CU_REPORT" --family SCSI --results "$IT_TMP/cu-results.txt" \
	--failures "$IT_TMP/cu-failures.txt" "$IT_TMP/cu.log" >&2 ||
	{ cat "$IT_TMP/cu-failures.txt" >&2; it_fail "iscsi-test-cu across gateways: failures"; }
[[ $(wc -l <"$IT_TMP/cu-results.txt") -eq $(wc -l <"$IT_TMP/cu.txt") ]] ||
	it_fail "iscsi-test-cu reported $(wc -l <"$IT_TMP/cu-results.txt") of $(wc -l <"$IT_TMP/cu.txt") tests"
# The second initiator really went through gateway B, and only there.
grep -q "initiator iqn.2026-11.org.libscsitgt:conformance-b" "$IT_TMP/b.err" ||
	it_fail "the second initiator never logged in through gateway B"
if grep -q "initiator iqn.2026-11.org.libscsitgt:conformance-b" "$IT_TMP/target.err"; then
	it_fail "the second initiator logged in through gateway A"
fi
it_log "iscsi-test-cu reservation tests pass across gateways"

# ---- 2. pr_client on LUN 1 ----
A=${A_URLS[1]}
B=${B_URLS[1]}
X=(-i iqn.2026-11.org.libscsitgt:pr-x -q 1)
Y=(-i iqn.2026-11.org.libscsitgt:pr-y -q 2)

# A reservation taken through A is enforced through B.
"$CLIENT" "${X[@]}" "$A" register 0xa1
"$CLIENT" "${X[@]}" "$A" reserve 0xa1 1 # WRITE EXCLUSIVE
res=$("$CLIENT" "${Y[@]}" "$B" readres)
[[ "$res" == "0x00000000000000a1 1" ]] || it_fail "READ RESERVATION through B: $res"
write_refused 0x18 "a non-holder through B, reserved through A" "${Y[@]}" "$B"
"$CLIENT" "${X[@]}" "$A" write 0 8 1 1 >/dev/null || it_fail "the holder cannot write through A"
it_log "reservation through A enforced through B"

# PREEMPT through B, seen on A: X stays logged in through A and looks after the preempt.
rm -f "$IT_TMP/go1"
"$CLIENT" "${X[@]}" "$A" tur-after "$IT_TMP/go1" >"$IT_TMP/x.out" &
xpid=$!
wait_ready "$IT_TMP/x.out"
"$CLIENT" "${Y[@]}" "$B" register 0xb1
"$CLIENT" "${Y[@]}" "$B" preempt 0xb1 0xa1 1
touch "$IT_TMP/go1"
wait "$xpid" || it_fail "pr_client on A failed"
[[ $(tail -n 1 "$IT_TMP/x.out") == "sense 6/2a/05" ]] ||
	it_fail "expected REGISTRATIONS PREEMPTED on A, got: $(tail -n 1 "$IT_TMP/x.out")"
write_refused 0x18 "the preempted initiator through A" "${X[@]}" "$A"
res=$("$CLIENT" "${X[@]}" "$A" readres)
[[ "$res" == "0x00000000000000b1 1" ]] || it_fail "READ RESERVATION through A: $res"
it_log "PREEMPT through B raised REGISTRATIONS PREEMPTED through A"

# Registrations racing through A and B: every change lands.
g0=$("$CLIENT" "${Y[@]}" "$A" readgen)
race() { # CMD-ON-A... -- CMD-ON-B...
	local n=$1 a b
	rm -f "$IT_TMP/go" "$IT_TMP/ra.out" "$IT_TMP/rb.out"
	shift
	"$CLIENT" -i iqn.2026-11.org.libscsitgt:pr-c -q 11 -w "$IT_TMP/go" "$A" "${@:1:n}" \
		>"$IT_TMP/ra.out" &
	a=$!
	"$CLIENT" -i iqn.2026-11.org.libscsitgt:pr-d -q 12 -w "$IT_TMP/go" "$B" "${@:n+1}" \
		>"$IT_TMP/rb.out" &
	b=$!
	wait_ready "$IT_TMP/ra.out"
	wait_ready "$IT_TMP/rb.out"
	touch "$IT_TMP/go"
	wait "$a" || it_fail "racing command through A failed"
	wait "$b" || it_fail "racing command through B failed"
}
race 2 register 0x100 register 0x200
for ((k = 1; k <= 10; k++)); do
	race 3 rekey $((0x100 + k - 1)) $((0x100 + k)) rekey $((0x200 + k - 1)) $((0x200 + k))
done
g1=$("$CLIENT" "${Y[@]}" "$B" readgen)
[[ $g1 -eq $((g0 + 22)) ]] || it_fail "PRgeneration went from $g0 to $g1, expected +22"
keys=$("$CLIENT" "${Y[@]}" "$A" readkeys | LC_ALL=C sort | tr '\n' ' ')
[[ "$keys" == "0x00000000000000b1 0x000000000000010a 0x000000000000020a " ]] ||
	it_fail "keys after the races: $keys"
it_log "11 rounds of racing registrations: PRgeneration $g0 -> $g1, no change lost"

# ---- SPC-2 RESERVE/RELEASE: not supported on a LUN with shared reservations ----
# An SPC-2 reservation belongs to one I_T nexus of one gateway; taken through A, it would not
# be enforced through B (docs/rbd.md). Both gateways refuse RESERVE (6) and RELEASE (6) as
# unsupported (ILLEGAL REQUEST, INVALID COMMAND OPERATION CODE) and do not report them.
for g in "${A_URLS[0]}" "${B_URLS[0]}"; do
	for c in reserve6 release6; do
		got=$("$CLIENT" "${X[@]}" "$g" "$c")
		[[ "$got" == "sense 5/20/00" ]] || it_fail "$c through $g: '$got', expected 5/20/00"
	done
	for op in 0x16 0x17; do
		got=$("$CLIENT" "${X[@]}" "$g" opsupport "$op")
		[[ "$got" == "not supported" ]] || it_fail "REPORT SUPPORTED OPERATION CODES $op: $got"
	done
	got=$("$CLIENT" "${X[@]}" "$g" opsupport 0x12)
	[[ "$got" == "supported" ]] || it_fail "INQUIRY not reported: $got"
done
# Nothing was reserved: another initiator writes through B.
"$CLIENT" "${Y[@]}" "${B_URLS[0]}" write 0 8 5 1 >/dev/null || it_fail "write through B refused"
it_log "RESERVE (6) / RELEASE (6) refused through both gateways, not reported"

# ---- 3. APTPL ----
# One gateway restarts, the other stays: the logical unit kept power; the state stays.
b_stop
b_start
keys=$("$CLIENT" "${Y[@]}" "${B_URLS[1]}" readkeys | LC_ALL=C sort | tr '\n' ' ')
[[ "$keys" == "0x00000000000000b1 0x000000000000010a 0x000000000000020a " ]] ||
	it_fail "keys after restarting B alone: $keys"
# Every gateway gone: without APTPL nothing survives.
b_stop
it_stop || it_fail "gateway A exited with status $? on SIGTERM"
a_start
keys=$("$CLIENT" "${Y[@]}" "${A_URLS[1]}" readkeys)
[[ -z "$keys" ]] || it_fail "registrations without APTPL survived a restart of every gateway: $keys"
grep -q "state without APTPL cleared" "$IT_TMP/target.err" || it_fail "no clearing logged"
# With APTPL they do.
"$CLIENT" "${Y[@]}" "${A_URLS[1]}" register 0xc1 aptpl
"$CLIENT" "${Y[@]}" "${A_URLS[1]}" reserve 0xc1 3
it_stop || it_fail "gateway A exited with status $? on SIGTERM"
a_start
b_start
res=$("$CLIENT" "${X[@]}" "${B_URLS[1]}" readres)
[[ "$res" == "0x00000000000000c1 3" ]] || it_fail "APTPL reservation after a full restart: $res"
it_log "APTPL across restarts"

# ---- 4. Gateway B loses its watch of the reservation object ----
prid=$(rbd info "$pool/primg" --format json | python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])')
# wait_watchers N: the object of LUN 1 has N watchers (bounded, as a target's start).
wait_watchers() {
	local i n=
	for ((i = 0; i < IT_START_TIMEOUT * 10; i++)); do
		n=$(rados -p "$pool" listwatchers "scsitgt_pr.$prid" | grep -c '^watcher=' || true)
		[[ $n -eq $1 ]] && return 0
		sleep 0.1
	done
	it_fail "scsitgt_pr.$prid has $n watchers, expected $1"
}
wait_watchers 2
"$CLIENT" "${Y[@]}" "${B_URLS[1]}" write 0 8 1 1 >/dev/null || it_fail "the holder cannot write through B"
synced=$(grep -c "LUN 1: reservation state in sync with its store again" "$IT_TMP/b.err" || true)
kill -USR2 "$B_PID"
it_wait_log "$IT_TMP/b.out" '^pr watch fault on'
wait_watchers 1
# the one watcher left is A's client (section 5 tells B's from it)
a_watcher=$(rados -p "$pool" listwatchers "scsitgt_pr.$prid" | sed -n 's/^watcher=\([^ ]*\) .*/\1/p')
"$CLIENT" "${X[@]}" "${A_URLS[1]}" register 0xd1
"$CLIENT" "${X[@]}" "${A_URLS[1]}" preempt 0xd1 0xc1 3
# B missed it: its copy still names Y the holder. Y's write must not be served from it.
write_refused 0x08 "the preempted initiator through B, which missed the PREEMPT" \
	"${Y[@]}" "${B_URLS[1]}"
res=$("$CLIENT" "${Y[@]}" "${B_URLS[1]}" readres)
[[ "$res" == "0x00000000000000d1 3" ]] || it_fail "READ RESERVATION through B, watch lost: $res"
kill -USR2 "$B_PID"
it_wait_log "$IT_TMP/b.out" '^pr watch fault off'
it_wait_log -n $((synced + 1)) "$IT_TMP/b.err" "LUN 1: reservation state in sync with its store again"
wait_watchers 2
write_refused 0x18 "the preempted initiator through B, watched again" "${Y[@]}" "${B_URLS[1]}"
"$CLIENT" "${X[@]}" "${B_URLS[1]}" write 0 8 1 1 >/dev/null || it_fail "the new holder cannot write through B"
it_log "a gateway that lost its watch refused the preempted initiator, then enforced the PREEMPT"

# 4b. The object goes back under B's copy while B's watch is lost (an older copy put back by
# hand): the read B makes once watched again is the truth, as the periodic read is (which
# the lost watch stops): B's copy goes back with it at once, not one periodic read later.
rados -p "$pool" get "scsitgt_pr.$prid" "$IT_TMP/pr-old.obj"
"$CLIENT" "${Y[@]}" "${B_URLS[1]}" register 0xe1
keys=$("$CLIENT" "${X[@]}" "${B_URLS[1]}" readkeys)
[[ "$keys" == *0x00000000000000e1* ]] || it_fail "B's keys before: $keys"
kill -USR2 "$B_PID"
it_wait_log -n 2 "$IT_TMP/b.out" '^pr watch fault on'
wait_watchers 1
rados -p "$pool" put "scsitgt_pr.$prid" "$IT_TMP/pr-old.obj"
kill -USR2 "$B_PID"
it_wait_log -n 2 "$IT_TMP/b.out" '^pr watch fault off'
it_wait_log "$IT_TMP/b.err" "watched again: the object differs from the copy: applied"
wait_watchers 2
keys=$("$CLIENT" "${X[@]}" "${B_URLS[1]}" readkeys)
[[ "$keys" != *0x00000000000000e1* ]] || it_fail "B's keys after the object went back: $keys"
it_log "watched again, B took the object as it is, under its copy"

# ---- 5. Gateway B fenced (its client blocklisted) ----
# Its copy still names X the holder, but may be stale: Y's write through B gets the fenced
# sense, NOT READY 04h/0Ah (retry elsewhere), not RESERVATION CONFLICT from the copy.
b_watcher=$(rados -p "$pool" listwatchers "scsitgt_pr.$prid" |
	sed -n 's/^watcher=\([^ ]*\) .*/\1/p' | grep -vxF "$a_watcher" || true)
[[ -n "$b_watcher" && -n "$a_watcher" ]] || it_fail "watchers: A '$a_watcher', B '$b_watcher'"
ceph osd blocklist add "$b_watcher" >/dev/null 2>&1 || it_fail "ceph osd blocklist add $b_watcher"
# No io through B meanwhile: B learns it from its watches (pinged every second here; the
# re-watch answers "blocklisted"), and its backend must know it too: the core now answers the
# commands whose ios would have told it.
it_wait_log "$IT_TMP/b.err" "LUN 1: reservation state may be stale, this engine is fenced"
it_wait_log "$IT_TMP/b.err" "rbd/primg: this client was blocklisted (fenced)"
for who in Y X; do
	declare -n ini=$who
	if "$CLIENT" "${ini[@]}" "${B_URLS[1]}" write 0 8 1 1 >/dev/null 2>"$IT_TMP/fenced.err"; then
		it_fail "$who's write served through the fenced gateway B"
	fi
	grep -q "WRITE: status 0x02 sense 2/04/0a" "$IT_TMP/fenced.err" ||
		it_fail "$who's write through the fenced gateway B: $(cat "$IT_TMP/fenced.err")"
	unset -n ini
done
"$CLIENT" "${X[@]}" "${A_URLS[1]}" write 0 8 1 1 >/dev/null || it_fail "the holder cannot write through A"
it_log "a fenced gateway answered 2/04/0a, not RESERVATION CONFLICT from its copy"
# How often a loop ran past its watch's lease (its commands waited for the watch check, none
# failed for it: docs/rbd.md): for the record of a loaded run; A's count since its last start.
it_log "watch lease lapses: A $(grep -c "lease ran out" "$IT_TMP/target.err" || true)," \
	"B $(grep -c "lease ran out" "$IT_TMP/b.err" || true)"
b_stop
it_stop || it_fail "gateway A exited with status $? on SIGTERM"
it_log "PASS"
