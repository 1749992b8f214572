#!/usr/bin/env bash
# rbd_ha.sh MINITARGET|SCSITGTD PR_CLIENT MPATH_WRITER MODE: two gateways (two minitarget
# processes on two ports, target port groups 1 and 2; or two scsitgtd processes with
# rbd_gateway in their files: mode kill) export one RBD image of a throwaway Ceph cluster
# (docs/rbd.md, "Several gateways: the HA model"). In kill and stpg mode, the owner stopped
# by SIGTERM at the end hands the lock to the other at once (it releases it).
#
#   basic  the lock owner (A) is active/optimized, the other (B) standby through REPORT TARGET
#          PORT GROUPS on both paths; B refuses data commands with NOT READY 04h/0Bh; both show
#          the same device identification; libiscsi's MultipathIO tests pass with their first
#          URL on A and their second on B (tests/conformance/skip-rbd-ha.txt: those that cannot
#          apply to an active/standby pair, with the reason).
#   kill   a multipath writer (mpath_writer.c: fails over by ALUA state) writes verified data
#          through A and B while A is SIGKILLed: no error reaches its write loop, every
#          acknowledged block reads back, and the failover time (the kill to the first write
#          completed through B) is printed. A restarted A rejoins as standby.
#   mon    the monitor crashes (SIGKILL) under the writer: writes through A go on (OSD
#          operations need no monitor) and both loops keep answering; then A is SIGKILLed
#          too: B cannot fence it (a lock break blocklists, a monitor command), so it must not
#          take the lock, and its loop answers REPORT TARGET PORT GROUPS while its takeover
#          waits; the monitor comes back, B takes over, and no error reached the writer,
#          every block verified.
#   stpg   SET TARGET PORT GROUPS through B asks B to take over while A has writes in flight
#          (held back by A's fault-injection delay): B breaks A's lock, A's in-flight writes
#          fail (not acknowledged: NOT READY), the writer moves to B; A's reconnections fail
#          (minitarget's SIGRTMIN+1) and an image update flagged then (SIGRTMIN+2) must not
#          crash it; the image grows meanwhile; then A reconnects and rejoins as standby, its
#          LUN at the new size (written past the old end once A owns the lock again, at the
#          end); reservations registered through either gateway afterwards are
#          seen through the other (A's shared reservations moved to its new client).
#   rewatch  the standby (B) is frozen (SIGSTOP) until the OSD has dropped its watch of the
#          gateway object (osd_client_watch_timeout, 5 s in this mode), then thawed: librados reports
#          the broken watch, B watches again and answers A's probes (REPORT TARGET PORT GROUPS
#          through A shows B's group standby again, not unavailable). Without the re-watch, B
#          stayed silent for good (and an owner in its place was fenced needlessly).
#   ownerwatch  the OWNER's (A's) watch breaks and its re-watch hangs (minitarget's SIGUSR2:
#          the gateway's fault hook): A answers no probe, but writes its heartbeat record at
#          every tick; B must find it alive in at least 2 x probe_misses + 2 probes in a row
#          (it would have taken over after probe_misses), keep reporting A active/optimized,
#          and nothing may move (no acquisition by B, no fencing) while A writes through it.
#          Released, A watches again and answers. Then the same fault with A frozen (SIGSTOP):
#          its heartbeat stops too, and B takes over and fences it (a silent owner without a
#          heartbeat is dead); thawed, A learns it from its refused heartbeat write (its
#          probes wait behind the held re-watch), and, released, rejoins as standby. Last,
#          the new owner (B), not frozen, has its re-watch held past the bound (10 x
#          probe_misses ticks): its heartbeat stops, A takes over (nothing moves before),
#          and B, released, is fenced and rejoins as standby.
#   prmix  B keeps its reservations locally (nopr) next to A, which shares them
#          (docs/rbd-ha-checks.md): both log the clash, SET TARGET PORT GROUPS through B is
#          refused; A SIGKILLed, B alone takes the lock (nopr's one-gateway use); A restarted
#          breaks the lock of that live owner with local reservations, and B rejoins as
#          standby. Before, B took the lock on request and kept it against A.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib.sh"
source "$HERE/rbd_lib.sh"
MODE=${4:-}
IT_NAME=rbd_ha-$MODE
it_init "$1"
CLIENT=${2:?usage: rbd_ha.sh MINITARGET PR_CLIENT MPATH_WRITER MODE}
WRITER=${3:?usage: rbd_ha.sh MINITARGET PR_CLIENT MPATH_WRITER MODE}
[[ $MODE =~ ^(basic|kill|stpg|mon|rewatch|ownerwatch|prmix)$ ]] || it_fail "unknown mode '$MODE'"
rbd_need
it_need python3
IQN=iqn.2026-11.org.libscsitgt:rbd-ha
HOST_IQN=iqn.2026-11.org.libscsitgt:rbd-ha-host

# rtpg NAME: "G:S G:S" (group:state) from REPORT TARGET PORT GROUPS through the gateway.
rtpg() {
	"$CLIENT" -i "$HOST_IQN" -q 7 "${GW_URL[$1]}" rtpg |
		awk '$1 == "group" { print $2 ":" $4 }' | sort -n | paste -sd ' '
}

# tur NAME: TEST UNIT READY through the gateway, once the new nexus's unit attentions are
# cleared.
tur() {
	: >"$IT_TMP/go"
	"$CLIENT" -i "$HOST_IQN" -q 8 "${GW_URL[$1]}" tur-after "$IT_TMP/go" | tail -n 1
}

# rtpg_wait NAME WANT: poll REPORT TARGET PORT GROUPS through NAME until it says WANT.
rtpg_wait() {
	local got i
	for ((i = 0; i < 300; i++)); do
		got=$(rtpg "$1" 2>/dev/null || true)
		[[ "$got" == "$2" ]] && return 0
		sleep 0.1
	done
	it_fail "REPORT TARGET PORT GROUPS through $1: '$got', expected '$2'"
}

# writer_start COUNT: the multipath writer over blocks 0..COUNT-1 through A and B.
writer_start() {
	"$WRITER" -i "$HOST_IQN" "${GW_URL[A]}" "${GW_URL[B]}" -- write 0 "$1" "$IT_TMP/stop" \
		>"$IT_TMP/writer.out" 2>"$IT_TMP/writer.err" &
	WPID=$!
	IT_HELPER_PIDS+=("$WPID")
}

# writer_finish COUNT: stop the writer after its pass, check it saw no error and verified.
writer_finish() {
	: >"$IT_TMP/stop"
	wait "$WPID" || it_fail "the writer saw an error: $(tail -5 "$IT_TMP/writer.err")"
	grep -q "^verified $1 blocks" "$IT_TMP/writer.out" || it_fail "not verified"
}

# writer_wait PATTERN [N]: wait until the writer printed N (default 1) lines matching PATTERN.
writer_wait() {
	local i
	for ((i = 0; i < 1200; i++)); do
		[[ $(grep -c -- "$1" "$IT_TMP/writer.out") -ge ${2:-1} ]] && return 0
		kill -0 "$WPID" 2>/dev/null || it_fail "writer ended: $(cat "$IT_TMP/writer.err")"
		sleep 0.1
	done
	it_fail "the writer never printed '$1': $(tail -5 "$IT_TMP/writer.err")"
}

# gw_obj_init: GW_OBJ, the gateway object's name (rbd_gateway.<image id>).
gw_obj_init() {
	local id
	id=$(rbd info "$MICRO_CEPH_POOL/$MICRO_CEPH_IMAGE" | awk '$1 == "id:" { print $2 }')
	[[ -n "$id" ]] || it_fail "no image id"
	GW_OBJ=rbd_gateway.$id
}

# watching NAME: whether the gateway's client watches the gateway object (after gw_obj_init):
# WATCHING=yes or no. Not a count of watchers: that also sees the other gateway's watch, which
# the OSD may drop and that gateway make again under load (rewatch counted, and failed so in
# CI, session 29). rados writes a line per watcher: into a file, not a pipe, whose reader
# (grep -q) may leave at the first match and fail rados' next write (EPIPE), which pipefail
# turned into "no". A rados error fails the test: it is no answer. Runs in this shell (not in
# $(...)), so that it_fail ends the test.
WATCHING=
watching() {
	local addr
	addr=$(grep -oE "(joined|reconnected) as [^ ]+" "$IT_TMP/gw-$1.err" | tail -n 1)
	[[ -n "$addr" ]] || it_fail "no address of $1 in its log"
	rados -p "$MICRO_CEPH_POOL" listwatchers "$GW_OBJ" >"$IT_TMP/listwatchers" \
		2>"$IT_TMP/listwatchers.err" ||
		it_fail "rados listwatchers $GW_OBJ: $(cat "$IT_TMP/listwatchers.err")"
	if grep -qF "watcher=${addr##* } " "$IT_TMP/listwatchers"; then
		WATCHING=yes
	else
		WATCHING=no
	fi
}
# watching_wait NAME yes|no WHY: poll until the gateway's watch is there or gone.
watching_wait() {
	local i
	for ((i = 0; i < 600; i++)); do
		watching "$1"
		[[ $WATCHING == "$2" ]] && return 0
		sleep 0.1
	done
	it_fail "$3"
}

# A short watch timeout (5 s: a dead client's watch and lock go that soon) where a gateway is
# killed or frozen (kill, mon, ownerwatch) or a watch must expire (rewatch); Ceph's default
# (30 s) where none is (basic, stpg): a 5 s timeout equals librados' watch ping interval, so
# on a loaded machine one late ping drops a live gateway's watch, and a PR object watch lost
# for a moment lets that gateway answer from its old copy (docs/rbd.md, failure table) while
# stpg checks that a registration through one gateway is seen through the other at once.
case $MODE in
basic | stpg) WATCH_TIMEOUT=30 ;;
*) WATCH_TIMEOUT=5 ;;
esac
rbd_cluster_up -w "$WATCH_TIMEOUT" -S 64M
trap gw_cleanup EXIT

# Gateway A starts first and takes the free lock; B joins as standby. In stpg mode every write
# A receives is held back 1.5 s by its fault layer, so that a write is in flight in A when B
# takes over. In ownerwatch mode the gateways tick every 1000 ms, not 500: an owner's held
# re-watch stops its heartbeat after 10 x probe_misses (2) ticks, and the first phase's
# checks (a write and a verify through A, REPORT TARGET PORT GROUPS, rados) must end inside
# that bound: 20 s, not 10, for 6 probes (6 s) and those checks, process starts that a
# loaded host makes slow.
GW_OPTS=()
[[ $MODE == ownerwatch ]] && GW_OPTS=(--gw-probe 1000)
[[ $MODE == stpg ]] && GW_LUN_FLAGS=",fault=delay=1500@write"
gw_start A 1 2 "${GW_OPTS[@]}"
GW_LUN_FLAGS=
gw_wait A owner
[[ $MODE == prmix ]] && GW_LUN_FLAGS=",nopr"
gw_start B 2 1 "${GW_OPTS[@]}"
GW_LUN_FLAGS=
gw_wait B standby
rtpg_wait A "1:0 2:2"
rtpg_wait B "1:0 2:2"

case $MODE in
basic)
	# Only the owner writes.
	"$CLIENT" -i "$HOST_IQN" -q 1 "${GW_URL[A]}" write 0 256 11 1 >/dev/null
	if "$CLIENT" -i "$HOST_IQN" -q 2 "${GW_URL[B]}" write 0 8 3 1 >/dev/null \
		2>"$IT_TMP/w.err"; then
		it_fail "a WRITE went through the standby gateway"
	fi
	grep -q "sense 2/04/0b" "$IT_TMP/w.err" ||
		it_fail "standby WRITE: expected NOT READY, 04h/0Bh: $(cat "$IT_TMP/w.err")"
	out=$(tur B)
	[[ "$out" == "sense 2/04/0b" ]] || it_fail "standby TEST UNIT READY: $out"
	"$CLIENT" -i "$HOST_IQN" -q 1 "${GW_URL[A]}" verify 0 256 11 >/dev/null ||
		it_fail "the owner's data is wrong"
	# One device: the same unit serial number and logical unit designators (NAA, T10) on
	# both paths (VPD 83h's target port and port group designators are each path's own).
	"$CLIENT" -i "$HOST_IQN" -q 9 "${GW_URL[A]}" ident >"$IT_TMP/ident-A.txt"
	"$CLIENT" -i "$HOST_IQN" -q 9 "${GW_URL[B]}" ident >"$IT_TMP/ident-B.txt"
	grep -q "^lu 3 " "$IT_TMP/ident-A.txt" || it_fail "no NAA: $(cat "$IT_TMP/ident-A.txt")"
	grep -q "^serial ." "$IT_TMP/ident-A.txt" || it_fail "no serial number"
	cmp -s "$IT_TMP/ident-A.txt" "$IT_TMP/ident-B.txt" ||
		it_fail "the gateways show different devices: $(cat "$IT_TMP/ident-"[AB].txt)"
	# libiscsi's multipath tests, first URL on A, second on B: those that can apply to an
	# active/standby pair (tests/conformance/skip-rbd-ha.txt says why the others cannot).
	it_need iscsi-test-cu
	skip="$HERE/../conformance/skip-rbd-ha.txt"
	iscsi-test-cu -l | grep -E '^SCSI\.MultipathIO\.[^.]+$' | sort >"$IT_TMP/mp.txt"
	grep -Ev '^[[:space:]]*(#|$)' "$skip" | awk '{ print $1 }' | sort >"$IT_TMP/skip.txt"
	comm -23 "$IT_TMP/mp.txt" "$IT_TMP/skip.txt" >"$IT_TMP/run.txt"
	if [[ -s "$IT_TMP/run.txt" ]]; then
		st=0
		env -u MALLOC_PERTURB_ timeout -k 10 300 iscsi-test-cu -V --dataloss \
			-i "$HOST_IQN" -I "$HOST_IQN-b" -t "$IT_TMP/run.txt" \
			"${GW_URL[A]}" "${GW_URL[B]}" </dev/null >"$IT_TMP/cu.log" 2>&1 || st=$?
		[[ $st -eq 0 ]] || { tail -40 "$IT_TMP/cu.log" >&2; it_fail "iscsi-test-cu: $st"; }
		it_log "MultipathIO through A and B passed: $(tr '\n' ' ' <"$IT_TMP/run.txt")"
	fi
	it_log "MultipathIO not run (skip-rbd-ha.txt): $(tr '\n' ' ' <"$IT_TMP/skip.txt")"
	# What keeps them from running: libiscsi's connect gives up on a standby path.
	iscsi-inq "${GW_URL[B]}" >/dev/null 2>"$IT_TMP/inq.err" &&
		it_fail "libiscsi's connect to the standby path worked: run the MultipathIO tests"
	grep -q "0x040b" "$IT_TMP/inq.err" || it_fail "iscsi-inq on B: $(cat "$IT_TMP/inq.err")"
	# The standby's watch of the reservation object breaks (the object removed): its copy
	# is being read again, not fenced: its client is not blocklisted, it only does not own
	# the lock (reviewh F6: both were one flag, and the copy was called fenced). The next
	# commit creates the object again and B watches it again.
	prid=$(rbd info "$MICRO_CEPH_POOL/$MICRO_CEPH_IMAGE" --format json |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])')
	"$CLIENT" -i "$HOST_IQN" -q 1 "${GW_URL[A]}" register 0xf6 >/dev/null
	synced=$(grep -c "LUN 0: reservation state in sync with its store again" \
		"$IT_TMP/gw-B.err" || true)
	rados -p "$MICRO_CEPH_POOL" rm "scsitgt_pr.$prid"
	it_wait_log "$IT_TMP/gw-B.err" "LUN 0: reservation state may be stale"
	! grep -q "LUN 0: reservation state may be stale, this engine is fenced" \
		"$IT_TMP/gw-B.err" ||
		it_fail "the standby's copy was called fenced: $(grep 'LUN 0: reserv' "$IT_TMP/gw-B.err")"
	grep -q "LUN 0: reservation state may be stale, being read again" "$IT_TMP/gw-B.err" ||
		it_fail "the standby's copy: $(grep 'LUN 0: reserv' "$IT_TMP/gw-B.err")"
	"$CLIENT" -i "$HOST_IQN" -q 1 "${GW_URL[A]}" register 0xf6 >/dev/null
	it_wait_log -n $((synced + 1)) "$IT_TMP/gw-B.err" \
		"LUN 0: reservation state in sync with its store again"
	it_log "a standby whose reservation watch broke: being read again, not fenced"
	;;
kill)
	writer_start 1024
	writer_wait "^pass 3 path 0"
	t_kill=$(date +%s.%N)
	gw_kill A
	it_log "killed gateway A"
	writer_wait "^failover"
	writer_wait "path 1$" 2
	writer_finish 1024
	t_fo=$(awk '/^failover/ { print $6; exit }' "$IT_TMP/writer.out")
	ms=$(awk -v a="$t_kill" -v b="$t_fo" 'BEGIN { printf "%.0f", (b - a) * 1000 }')
	it_log "failover: SIGKILL of A to the first write completed through B: $ms ms"
	it_log "B: $(grep -o 'took the lock.*' "$IT_TMP/gw-B.err" | tail -1)"
	echo "failover_ms $ms"
	rtpg_wait B "1:3 2:0"
	# A comes back: it finds B owning the lock and stands by (no failback, no ping-pong).
	gw_start A 1 2
	gw_wait A standby
	rtpg_wait A "1:2 2:0"
	"$WRITER" -i "$HOST_IQN" "${GW_URL[A]}" "${GW_URL[B]}" -- verify 0 1024 \
		"$(awk '/^pass/ { p = $2 } END { print p }' "$IT_TMP/writer.out")" >/dev/null ||
		it_fail "data read back through the pair is wrong"
	;;
mon)
	writer_start 256
	writer_wait "^pass 2 path 0"
	rbd_mon_kill
	it_log "killed the monitor"
	n=$(grep -c "path 0$" "$IT_TMP/writer.out")
	writer_wait "path 0$" $((n + 2))
	it_log "two passes of writes through A completed with the monitor down"
	rtpg_wait A "1:0 2:2"
	rtpg_wait B "1:0 2:2"
	gw_kill A
	it_log "killed gateway A"
	gw_wait B acquiring
	# B's takeover waits for the monitor on B's worker thread; its loop answers meanwhile
	# (A unavailable, B transitioning or standby between attempts).
	got=$(rtpg B) || it_fail "B does not answer REPORT TARGET PORT GROUPS"
	[[ "$got" =~ ^1:3\ 2:(15|2)$ ]] || it_fail "REPORT TARGET PORT GROUPS through B: $got"
	it_log "B answers while its takeover waits: $got"
	t_mon=$(date +%s.%N)
	if grep -q -- "-> owner$" "$IT_TMP/gw-B.err"; then
		it_fail "B took the lock without a monitor (A could not be fenced)"
	fi
	kill -0 "$WPID" 2>/dev/null || it_fail "the writer gave up: $(tail -5 "$IT_TMP/writer.err")"
	rbd_mon_start
	it_log "the monitor is back"
	gw_wait B owner
	writer_wait "path 1$" 2
	writer_finish 256
	t_fo=$(awk '/^failover/ { print $6; exit }' "$IT_TMP/writer.out")
	ms=$(awk -v a="$t_mon" -v b="$t_fo" 'BEGIN { printf "%.0f", (b - a) * 1000 }')
	it_log "B: $(grep -o 'took the lock.*' "$IT_TMP/gw-B.err" | tail -1)"
	it_log "first write through B $ms ms after the monitor's restart began"
	it_log "writer: $(grep -m1 '^failover' "$IT_TMP/writer.out")"
	rtpg_wait B "1:3 2:0"
	gw_start A 1 2
	gw_wait A standby
	;;
rewatch)
	# The gateway object's watchers: A and B.
	gw_obj_init
	watching_wait A yes "A does not watch the gateway object"
	watching_wait B yes "B does not watch the gateway object"
	kill -STOP "${GW_PID[B]}"
	it_log "froze gateway B"
	# (B cannot watch again while frozen: one answer of "no" is the state, not a moment.)
	w=yes
	for ((i = 0; i < 600; i++)); do
		watching B
		w=$WATCHING
		[[ $w == no ]] && break
		sleep 0.1
	done
	[[ $w == no ]] || { kill -CONT "${GW_PID[B]}"; it_fail "B's watch never expired"; }
	# A no longer hears B.
	rtpg_wait A "1:0 2:3"
	kill -CONT "${GW_PID[B]}"
	it_log "the OSD dropped B's watch; thawed B"
	# B answers A's probes again (it can only through a watch of its own), and nothing moved
	# meanwhile: without the re-watch, B stayed silent until a takeover fenced a gateway and
	# its reconnection brought a watch back (the two gateways then fenced each other in turn).
	rtpg_wait A "1:0 2:2"
	if grep -q -e "-> fenced" "$IT_TMP/gw-"[AB].err ||
		[[ $(grep -c -e "-> acquiring" "$IT_TMP/gw-A.err") -ne 1 ]] ||
		grep -q -e "-> acquiring" "$IT_TMP/gw-B.err"; then
		it_fail "a gateway was fenced or took over: $(grep -h -e '-> ' "$IT_TMP/gw-"[AB].err)"
	fi
	watching_wait A yes "A does not watch the gateway object"
	watching_wait B yes "B does not watch the gateway object again"
	rtpg_wait B "1:0 2:2"
	# (librados itself registers a watch again when its OSD session was reset meanwhile.)
	it_log "B watches again ($(grep -c "watching the gateway object again" "$IT_TMP/gw-B.err") \
re-watch(es) after librados' error callback) and answers A's probes; the lock stayed with A"
	;;
ownerwatch)
	gw_obj_init
	a_watching_wait() { watching_wait A "$@"; }
	# count_wait WHAT FILE PATTERN N: until FILE has N lines matching PATTERN.
	count_wait() {
		local i
		for ((i = 0; i < 600; i++)); do
			[[ $(grep -c -- "$3" "$2") -ge $4 ]] && return 0
			sleep 0.1
		done
		it_fail "$1: $(grep -c -- "$3" "$2") of $4 lines '$3' in $2"
	}
	# fault_toggle [NAME] STATE: SIGUSR2 to the gateway (A) until its stdout says the fault
	# is STATE (on/off).
	fault_toggle() {
		local name=A n
		[[ $# -eq 2 ]] && { name=$1; shift; }
		n=$(grep -c "gateway watch fault $1" "$IT_TMP/gw-$name.out" || true)
		kill -USR2 "${GW_PID[$name]}"
		count_wait "$name's watch fault $1" "$IT_TMP/gw-$name.out" "gateway watch fault $1" \
			$((n + 1))
	}
	# The owner's heartbeat stops once its re-watch hung for 10 x probe_misses ticks
	# (rbd_ha.h's SCSITGT__RBD_HA_REWATCH_TICKS_PER_MISS; 20 s here, --gw-probe 1000): this
	# line in its log.
	beat_stop="the re-watch hangs past its bound: the heartbeat stops"
	# moves: the lock's moves (acquisitions) and the fencing events so far, per gateway.
	moves() {
		local n
		for n in A B; do
			printf '%s: %s acquiring, %s fenced; ' "$n" \
				"$(grep -c -e "-> acquiring$" "$IT_TMP/gw-$n.err" || true)" \
				"$(grep -c -e "-> fenced$" "$IT_TMP/gw-$n.err" || true)"
		done
	}
	watching A
	[[ $WATCHING == yes ]] || it_fail "A does not watch the gateway object"
	before=$(moves)
	fault_toggle on
	# A's watch is gone (the OSD delivers B's probes to B alone) and its re-watch hangs.
	a_watching_wait no "A's watch did not go"
	# B's probes find A silent but writing its heartbeat: 2 x probe_misses (2) + 2 of them
	# (without the heartbeat B took over after 2, and any standby would after 4).
	for ((i = 0; i < 600; i++)); do
		[[ $(grep -c -- "(heartbeat), " "$IT_TMP/gw-B.err") -ge 6 ]] && break
		[[ "$(moves)" == "$before" ]] || it_fail "the lock moved while A lived: $(moves)"
		sleep 0.1
	done
	count_wait "B's probes vouched for by A's heartbeat" "$IT_TMP/gw-B.err" "(heartbeat), " 6
	grep -q "the owner answers no probe, but its heartbeat goes on" "$IT_TMP/gw-B.err" ||
		it_fail "B does not say A is alive on its heartbeat"
	# Meanwhile A serves: a write through A, read back.
	"$CLIENT" -i "$HOST_IQN" -q 1 "${GW_URL[A]}" write 0 64 21 1 >/dev/null ||
		it_fail "a write through A failed while its watch was held broken"
	"$CLIENT" -i "$HOST_IQN" -q 1 "${GW_URL[A]}" verify 0 64 21 >/dev/null ||
		it_fail "A's data is wrong"
	got=$(rtpg B)
	[[ "$got" == "1:0 2:2" ]] || it_fail "REPORT TARGET PORT GROUPS through B: '$got'"
	watching A
	[[ $WATCHING == no ]] || it_fail "A watches again although its re-watch is held"
	[[ "$(moves)" == "$before" ]] || it_fail "the lock moved: before '$before', now '$(moves)'"
	# All of this within the bound: A never stopped its heartbeat.
	! grep -q "$beat_stop" "$IT_TMP/gw-A.err" ||
		it_fail "A's re-watch outlasted its bound before the checks ended"
	n=$(grep -c "(heartbeat), " "$IT_TMP/gw-B.err")
	it_log "A silent for $n probes of B, alive on its heartbeat; nothing moved: $before"
	# Released: A watches again, and B's probes hear A's answers again.
	n=$(grep -c "(answered), " "$IT_TMP/gw-B.err")
	fault_toggle off
	a_watching_wait yes "A did not watch again"
	count_wait "B hears A again" "$IT_TMP/gw-B.err" "(answered), " $((n + 2))
	[[ "$(moves)" == "$before" ]] || it_fail "the lock moved: before '$before', now '$(moves)'"
	rtpg_wait B "1:0 2:2"
	rtpg_wait A "1:0 2:2"
	it_log "A watches again and answers; the lock stayed with A"
	# The same, A frozen: no answer, no heartbeat. B takes over and fences A.
	fault_toggle on
	a_watching_wait no "A's watch did not go"
	n=$(grep -c "(heartbeat), " "$IT_TMP/gw-B.err")
	count_wait "B's probes vouched for by A's heartbeat" "$IT_TMP/gw-B.err" "(heartbeat), " \
		$((n + 1))
	kill -STOP "${GW_PID[A]}"
	it_log "froze A, its watch held broken"
	gw_wait B owner
	grep -q "took the lock.*broke the lock of" "$IT_TMP/gw-B.err" ||
		it_fail "B did not break A's lock: $(grep -h 'lock' "$IT_TMP/gw-B.err" | tail -3)"
	kill -CONT "${GW_PID[A]}"
	it_log "B took the frozen owner's lock over; thawed A"
	# A's probes wait behind the held re-watch; its refused heartbeat write tells it.
	gw_wait A fenced
	grep -q "the heartbeat write was refused, this client is blocklisted" "$IT_TMP/gw-A.err" ||
		it_fail "A was not fenced by its heartbeat write: $(grep -h -e '-> ' "$IT_TMP/gw-A.err")"
	fault_toggle off
	gw_wait A standby
	rtpg_wait A "1:2 2:0"
	rtpg_wait B "1:2 2:0"
	# The owner (now B) not frozen, its re-watch held past the bound: its heartbeat stops and
	# A takes over, not before; released, B finds out it was fenced and rejoins as standby.
	before=$(moves)
	n=$(grep -c "(heartbeat), " "$IT_TMP/gw-A.err" || true)
	fault_toggle B on
	watching_wait B no "B's watch did not go"
	for ((i = 0; i < 1200; i++)); do
		m=$(moves)
		grep -q "$beat_stop" "$IT_TMP/gw-B.err" && break
		[[ "$m" == "$before" ]] || it_fail "the lock moved before B's heartbeat stopped: $m"
		sleep 0.1
	done
	grep -q "$beat_stop" "$IT_TMP/gw-B.err" || it_fail "B's heartbeat never stopped"
	[[ $(grep -c "(heartbeat), " "$IT_TMP/gw-A.err") -gt $n ]] ||
		it_fail "A's probes never found B alive on its heartbeat"
	it_log "B's re-watch outlasted its bound: its heartbeat stopped"
	gw_wait A owner 2
	grep -q "took the lock.*broke the lock of" "$IT_TMP/gw-A.err" ||
		it_fail "A did not break B's lock: $(grep -h 'lock' "$IT_TMP/gw-A.err" | tail -3)"
	fault_toggle B off
	gw_wait B fenced
	gw_wait B standby
	rtpg_wait A "1:0 2:2"
	rtpg_wait B "1:0 2:2"
	it_log "A took the stuck owner's lock over; B, released, rejoined as standby"
	;;
stpg)
	# gw_signal NAME SIGNAL LINE: send SIGNAL to the gateway until its stdout says LINE once more.
	gw_signal() {
		local n i
		n=$(grep -c -- "$3" "$IT_TMP/gw-$1.out" || true)
		kill -s "$2" "${GW_PID[$1]}"
		for ((i = 0; i < 300; i++)); do
			[[ $(grep -c -- "$3" "$IT_TMP/gw-$1.out") -gt $n ]] && return 0
			sleep 0.1
		done
		it_fail "gateway $1 did not say '$3'"
	}
	# fails_wait N: until A logged N failed reconnections.
	fails_wait() {
		local i
		for ((i = 0; i < 300; i++)); do
			[[ $(grep -c "reconnection failed: " "$IT_TMP/gw-A.err") -ge $1 ]] && return 0
			kill -0 "${GW_PID[A]}" 2>/dev/null || it_fail "gateway A died"
			sleep 0.1
		done
		it_fail "A did not fail $1 reconnection(s): $(tail -3 "$IT_TMP/gw-A.err")"
	}
	# A's reconnections fail until released (as with the monitors out of reach): once fenced,
	# A has no image open and retries every second.
	gw_signal A RTMIN+1 "rbd reconnect fault on"
	writer_start 64
	writer_wait "^pass 1 path 0"
	# Explicit takeover through B (A has held the lock longer than the 1 s hold-down): GOOD,
	# B transitions, breaks A's lock and owns it.
	"$CLIENT" -i "$HOST_IQN" -q 4 "${GW_URL[B]}" stpg 0 2
	gw_wait B owner
	gw_wait A fenced
	writer_wait "path 1$" 2
	writer_finish 64
	# The write in flight in A when it was fenced failed (NOT READY), not acknowledged.
	grep -Eq "path 0: sense 2/04/0[abc]" "$IT_TMP/writer.err" ||
		it_fail "no write of A failed at the takeover: $(cat "$IT_TMP/writer.err")"
	grep -q "blocklisted" "$IT_TMP/gw-A.err" || it_fail "A does not say it was blocklisted"
	# An update of the image flagged while A has no image (librbd's update watch fires around
	# the fencing, from the old client) checks the size behind a failed reconnection: with no
	# image, not rbd_get_size(NULL) (SIGSEGV). The size check is queued before the
	# reconnection that follows the next failed one: two failures later it ran.
	fails_wait 1
	# The image grows while A has no client: B's side resizes, A's next client opens the new
	# size, and A's LUN must follow (it kept the old one: a write past the old end through A,
	# once it owns the lock again, failed LBA OUT OF RANGE).
	OLD_BYTES=$(rbd info --format json "$MICRO_CEPH_POOL/$MICRO_CEPH_IMAGE" |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["size"])')
	NEW_BYTES=$((OLD_BYTES + 16 * 1048576))
	rbd resize --size "$((NEW_BYTES / 1048576))M" "$MICRO_CEPH_POOL/$MICRO_CEPH_IMAGE" \
		>/dev/null 2>&1 || it_fail "rbd resize failed"
	gw_signal A RTMIN+2 "rbd update flagged"
	fails_wait $(($(grep -c "reconnection failed: " "$IT_TMP/gw-A.err") + 2))
	gw_signal A RTMIN+1 "rbd reconnect fault off"
	# A replaced its client and stands by, at the image's new size.
	gw_wait A standby
	grep -q "reconnected as" "$IT_TMP/gw-A.err" || it_fail "A did not reconnect"
	for ((i = 0; i < 300; i++)); do
		grep -q "resized from $OLD_BYTES to $NEW_BYTES bytes" "$IT_TMP/gw-A.err" && break
		sleep 0.1
	done
	grep -q "resized from $OLD_BYTES to $NEW_BYTES bytes" "$IT_TMP/gw-A.err" ||
		it_fail "A's LUN did not follow the resize made while it reconnected"
	rtpg_wait A "1:2 2:0"
	rtpg_wait B "1:2 2:0"
	# Shared reservations (rbd_pr.c) followed A's new client: a registration through B (the
	# owner) reaches A, and one through A (standby: PERSISTENT RESERVE IN/OUT are allowed,
	# SPC-5 §5.16.2.4.4) reaches B.
	grep -q "reservations watched again on the new client" "$IT_TMP/gw-A.err" ||
		it_fail "A's shared reservations did not follow the reconnection"
	"$CLIENT" -i "$HOST_IQN.p" -q 21 "${GW_URL[B]}" register 0xe1
	keys=$("$CLIENT" -i "$HOST_IQN.p" -q 22 "${GW_URL[A]}" readkeys | tr '\n' ' ')
	[[ "$keys" == *0x00000000000000e1* ]] || it_fail "A misses B's registration: $keys"
	"$CLIENT" -i "$HOST_IQN.q" -q 23 "${GW_URL[A]}" register 0xe2
	keys=$("$CLIENT" -i "$HOST_IQN.p" -q 22 "${GW_URL[B]}" readkeys | tr '\n' ' ')
	[[ "$keys" == *0x00000000000000e2* ]] || it_fail "B misses A's registration: $keys"
	;;
prmix)
	# log_wait NAME TEXT: until the gateway's log has TEXT.
	log_wait() {
		local i
		for ((i = 0; i < 300; i++)); do
			grep -qF -- "$2" "$IT_TMP/gw-$1.err" && return 0
			sleep 0.1
		done
		it_fail "gateway $1 did not log '$2': $(tail -3 "$IT_TMP/gw-$1.err")"
	}
	log_wait B "keeps the persistent reservations shared, this one locally"
	log_wait A "keeps the persistent reservations locally, this one shared"
	if "$CLIENT" -i "$HOST_IQN" -q 4 "${GW_URL[B]}" stpg 0 2 2>"$IT_TMP/stpg.err"; then
		it_fail "SET TARGET PORT GROUPS through B (local reservations) was accepted"
	fi
	log_wait B "SET TARGET PORT GROUPS refused: Operation not permitted"
	grep -q -- "-> acquiring$" "$IT_TMP/gw-B.err" && it_fail "B tried to take the lock"
	gw_kill A
	gw_wait B owner
	gw_start A 1 2
	gw_wait A owner 2
	gw_wait B fenced
	gw_wait B standby 2
	rtpg_wait A "1:0 2:2"
	rtpg_wait B "1:0 2:2"
	;;
esac

# scsitgtd reloads (docs/scsitgtd.md): a gateway's LUN re-created and its target removed and
# added again stop the gateway first (the owner releases the lock: the other takes it) and
# start a new one, which joins as standby.
gw_reload() {
	local i n
	n=$(grep -c "scsitgtd: reloaded" "$IT_TMP/gw-$1.out" || true)
	n=$((n + 1))
	kill -HUP "${GW_PID[$1]}"
	for ((i = 0; i < 300; i++)); do
		[[ $(grep -c "scsitgtd: reloaded" "$IT_TMP/gw-$1.out") -ge $n ]] && return 0
		sleep 0.1
	done
	it_fail "gateway $1 did not reload: $(tail -5 "$IT_TMP/gw-$1.err")"
}
# ceph_events_files: the gateways' logs, the Ceph clients' log (every gateway's librbd writes
# to client.admin.log) and the cluster's log (the monitor's blocklistings).
ceph_events_files() {
	echo "$IT_TMP/gw-A.err" "$IT_TMP/gw-B.err" "$RBD_DIR/log/client.admin.log" \
		"$RBD_DIR/log/cluster.log"
}
# ceph_events_mark: how many lines each of those has now, for ceph_events_since.
ceph_events_mark() {
	local f
	for f in $(ceph_events_files); do
		printf '%s ' "$({ wc -l <"$f"; } 2>/dev/null || echo 0)"
	done
}
# ceph_events_since MARK: what was logged after MARK about watches, the lock and fencing: per
# gateway its lost watches (the PR object's, the gateway object's) and its fencing events and
# takeovers, librbd's image watch errors and lock errors, the monitor's blocklistings.
ceph_events_since() {
	local marks files i n
	read -ra marks <<<"$1"
	read -ra files <<<"$(ceph_events_files)"
	for i in 0 1 2 3; do
		tail -n +$((marks[i] + 1)) "${files[i]}" >"$IT_TMP/since-$i" 2>/dev/null || true
	done
	for i in 0 1; do
		n=$([[ $i == 0 ]] && echo A || echo B)
		printf '%s: %s PR watch lost, %s gateway watch broke, %s fenced, %s acquiring; ' "$n" \
			"$(grep -c "watch lost" "$IT_TMP/since-$i" || true)" \
			"$(grep -c "gateway object broke" "$IT_TMP/since-$i" || true)" \
			"$(grep -c -e "-> fenced$" "$IT_TMP/since-$i" || true)" \
			"$(grep -c -e "-> acquiring$" "$IT_TMP/since-$i" || true)"
	done
	printf 'librbd: %s image watch failed, %s lock errors; %s blocklisted' \
		"$(grep -c "image watch failed" "$IT_TMP/since-2" || true)" \
		"$(grep -Ec "lock cookie|exclusive lock|blocklisted" "$IT_TMP/since-2" || true)" \
		"$(grep -c 'blocklistop": "add".*finished' "$IT_TMP/since-3" || true)"
}
if [[ $(basename "$IT_TARGET") == scsitgtd* && $MODE == kill ]]; then
	cp "$IT_TMP/gw-B.conf" "$IT_TMP/gw-B.full"
	echo "rbd_op_timeout = 20" >>"$IT_TMP/gw-B.conf"
	gw_reload B
	gw_wait A owner 2
	gw_wait B standby 2
	rtpg_wait B "1:0 2:2"
	it_log "B's LUN re-created: A took the released lock, B stands by again"
	sed '/^\[target\]/,$d' "$IT_TMP/gw-B.full" >"$IT_TMP/gw-B.conf"
	gw_reload B
	grep -q "target $IQN: removed" "$IT_TMP/gw-B.err" || it_fail "B's target not removed"
	rtpg_wait A "1:0 2:3"
	cp "$IT_TMP/gw-B.full" "$IT_TMP/gw-B.conf"
	gw_reload B
	gw_wait B standby 3
	rtpg_wait B "1:0 2:2"
	rtpg_wait A "1:0 2:2"
	it_log "B's target removed and added again: B stands by again"
	# The same with the second reload while the gateway and the target the first removed are
	# still going (held there on purpose: the OSD stopped, the gateway's unwatch and close
	# wait for it): the target's name is still taken, its creation fails ("File exists"),
	# and scsitgtd creates it once the old one is gone, as the file applied by then says.
	# Before, the target stayed away until the next reload (seen under TSan on a loaded host
	# with the reloads above, which leave the removal time to end).
	osd=$(awk '$1 == "osd.0" { print $2 }' "$RBD_DIR/pids")
	[[ -n "$osd" ]] && kill -0 "$osd" || it_fail "no OSD pid in $RBD_DIR/pids"
	n=$(grep -c "target $IQN: File exists" "$IT_TMP/gw-B.err" || true)
	# What the clients logged from here on (watches lost, locks, blocklistings), for the log.
	mark=$(ceph_events_mark)
	# A failure while it is stopped must not leave it so (gw_cleanup resumes it).
	RBD_OSD_STOPPED=$osd
	t_stop=$(date +%s%N)
	rbd_stop "$osd"
	sed '/^\[target\]/,$d' "$IT_TMP/gw-B.full" >"$IT_TMP/gw-B.conf"
	gw_reload B
	cp "$IT_TMP/gw-B.full" "$IT_TMP/gw-B.conf"
	gw_reload B
	kill -CONT "$osd"
	stopped_ms=$((($(date +%s%N) - t_stop) / 1000000))
	# shellcheck disable=SC2034 # read by gw_cleanup (rbd_lib.sh)
	RBD_OSD_STOPPED=
	it_log "the OSD was stopped for $stopped_ms ms (two reloads of B)"
	echo "osd_stopped_ms $stopped_ms"
	[[ $(grep -c "target $IQN: File exists" "$IT_TMP/gw-B.err") -gt $n ]] ||
		it_fail "the target was created again before the old one went: $(tail -3 "$IT_TMP/gw-B.err")"
	gw_wait B standby 4
	rtpg_wait B "1:0 2:2"
	rtpg_wait A "1:0 2:2"
	it_log "B's target added again while the removed one was going: created once it went"
	it_log "since the OSD's stop: $(ceph_events_since "$mark")"
fi

for n in B A; do
	[[ -n "${GW_PID[$n]:-}" ]] || continue
	kill -TERM "${GW_PID[$n]}"
	st=0
	wait "${GW_PID[$n]}" || st=$?
	unset "GW_PID[$n]"
	[[ $st -eq 0 ]] || it_fail "gateway $n exited with status $st on SIGTERM"
	# B owned the lock: it released it going down, and A (standby) takes it.
	if [[ $n == B && $MODE != basic && $MODE != rewatch && $MODE != prmix ]]; then
		gw_wait A owner 2
		it_log "A: $(grep -o 'took the lock.*' "$IT_TMP/gw-A.err" | tail -1)"
	fi
	# stpg: A owns the image again, with the size it grew to while A reconnected.
	if [[ $n == B && $MODE == stpg ]]; then
		"$CLIENT" -i "$HOST_IQN" -q 1 "${GW_URL[A]}" write $((OLD_BYTES / 512)) 8 31 1 \
			>/dev/null 2>"$IT_TMP/wpast.err" ||
			it_fail "a write past the old end through A: $(cat "$IT_TMP/wpast.err")"
		"$CLIENT" -i "$HOST_IQN" -q 1 "${GW_URL[A]}" verify $((OLD_BYTES / 512)) 8 31 \
			>/dev/null || it_fail "A's data past the old end is wrong"
	fi
done
it_log "PASS"
