#!/bin/bash
# conn_workers.sh MINITARGET READBACK - iSCSI/TCP connections that run on worker loops end to
# end (issue 18; the default with workers, docs/threading.md), against real initiators and the
# hand-written one of hostile_iscsi.py, with --workers 2:
#  - libiscsi tools (iscsi-inq, iscsi-readcapacity16): log in, one command, log out, twice;
#  - two qemu-img sessions at once write two images, two iscsi_readback sessions read them
#    back at once: both workers served connections, every SHA-256 matches;
#  - two sessions held open at once (one per worker), logout and relogin (conn_workers.py);
#  - session reinstatement (same InitiatorName and ISID, RFC 7143 §6.3.5) across workers;
#  - 200 logins reset right after their last Login Request (the nexus being made on home);
#  - login redirection by the host's hook (minitarget --redirect), which runs on the home loop,
#    with the engine option conn_workers (--conn-workers) on and off, without workers, and
#    with the environment's SCSITGT_CONN_WORKERS=0 overriding the option (it wins);
#  - a connection killed mid-I/O (kill -9 of an iscsi-perf reading): its session closes, the
#    target serves the next one, and SIGTERM still shuts it down cleanly.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
it_init "${1:-}"
READBACK=${2:-}
[[ -x "$READBACK" ]] || it_fail "usage: $0 MINITARGET ISCSI_READBACK"
it_need python3 qemu-img cmp iscsi-inq iscsi-readcapacity16 iscsi-perf
qemu-img --help 2>/dev/null | grep -Eq '^Supported formats:.* iscsi( |$)' ||
	it_skip "qemu-img has no iscsi driver (install qemu-block-extra)"

# The environment overrides the option (docs/threading.md): only the cases below set it.
unset SCSITGT_CONN_WORKERS SCSITGT_EXPERIMENTAL_CONN_WORKERS
SIZE=$((32 * 1024 * 1024))
it_start --workers 2 --conn-workers 1 -v --lun 0:ram:32M --lun 1:ram:32M,bs=4096 --lun 2:null:1G --lun 3:ram:1M
HOST=${IT_PORTAL%:*}
IQN=$(it_iqn "${IT_URLS[0]}")

it_log "libiscsi tools: login, command, logout, twice"
for i in 1 2; do
	iscsi-inq "${IT_URLS[0]}" >/dev/null || it_fail "iscsi-inq failed (run $i)"
	iscsi-readcapacity16 "${IT_URLS[1]}" >/dev/null || it_fail "iscsi-readcapacity16 failed"
done

it_log "two qemu-img writers at once, then two iscsi_readback readers at once"
pids=()
for i in 0 1; do
	head -c "$SIZE" /dev/urandom >"$IT_TMP/img$i"
	qemu-img convert -n -f raw -O raw "$IT_TMP/img$i" "${IT_URLS[i]}" >"$IT_TMP/w$i.log" 2>&1 &
	pids+=("$!")
done
for p in "${pids[@]}"; do
	wait "$p" || it_fail "a concurrent write failed"
done
pids=()
for i in 0 1; do
	"$READBACK" -o "$IT_TMP/back$i" "${IT_URLS[i]}" "$SIZE" >"$IT_TMP/r$i.log" 2>&1 &
	pids+=("$!")
done
for p in "${pids[@]}"; do
	wait "$p" || it_fail "a concurrent read failed"
done
for i in 0 1; do
	cmp -s "$IT_TMP/img$i" "$IT_TMP/back$i" || it_fail "LUN $i: the data read back differs"
done

it_log "two sessions held open at once, logout and relogin"
python3 "$(dirname "$0")/conn_workers.py" "$HOST" "$IT_PORT" "$IQN" 3 two ||
	it_fail "two sessions on two workers"
# A connection is placed on the least-loaded worker, ties to worker 0 (core/worker.c): a
# connection lands on worker 1 only while another is open. The writers and readers above were
# started two at a time, but nothing makes them overlap; conn_workers.py's two sessions are
# both connected before either logs out, so after them both workers ran a connection whatever
# the schedule (a count not yet dropped for a closed connection only moves which one goes where).
for w in 0 1; do
	grep -q "connection placed on worker $w (all of it runs there)" "$IT_TMP/target.err" ||
		it_fail "no connection ran on worker $w"
done

it_log "session reinstatement across workers"
python3 "$(dirname "$0")/conn_workers.py" "$HOST" "$IT_PORT" "$IQN" 3 reinstate ||
	it_fail "session reinstatement"
grep -q "session reinstatement: closing TSIH" "$IT_TMP/target.err" ||
	it_fail "the target did not log the reinstatement"

it_log "logins reset while home makes their nexus"
python3 "$(dirname "$0")/conn_workers.py" "$HOST" "$IT_PORT" "$IQN" 3 login_reset ||
	it_fail "logins reset at their last Login Request"

# redirected N ENV MODE ARGS...: a second target (run N), started with ARGS and the
# environment ENV ("NAME=VALUE" or ""), whose redirect hook sends every login to the first
# (RFC 7143 §11.13.5 "target moved temporarily"); libiscsi follows it. The engine logs the
# mode it chose: MODE is that line's end ("" without workers: no such line). With connections
# on workers the hook is asked on the home loop for a worker's login.
redirected() {
	local n=$1 env=$2 mode=$3 port out err pid i
	local -a envs=()
	shift 3
	[[ -n "$env" ]] && envs=("$env")
	port=$(it_free_port)
	out="$IT_TMP/redir$n.out"
	err="$IT_TMP/redir$n.err"
	env "${envs[@]}" "$IT_TARGET" --portal "127.0.0.1:$port" "$@" -v --lun 0:null:1G \
		--redirect "$IT_PORTAL" </dev/null >"$out" 2>"$err" &
	pid=$!
	IT_HELPER_PIDS+=("$pid")
	for ((i = 0; i < 600; i++)); do
		grep -q "^iscsi://" "$out" && break
		kill -0 "$pid" 2>/dev/null || it_fail "the redirecting target died: $(tail -n 3 "$err")"
		sleep 0.1
	done
	if [[ -n "$mode" ]]; then
		grep -qF "2 worker threads, $mode" "$err" ||
			it_fail "redirecting target $n: no '$mode' in: $(grep -F 'worker threads' "$err")"
	else
		! grep -qF "worker threads" "$err" || it_fail "redirecting target $n: workers"
	fi
	iscsi-inq "iscsi://127.0.0.1:$port/$IQN/0" >/dev/null ||
		it_fail "iscsi-inq through the redirecting target $n failed"
	grep -q "target moved temporarily" "$err" ||
		it_fail "the redirecting target $n did not redirect"
	kill -TERM "$pid"
	wait "$pid" || it_fail "the redirecting target $n exited with $?"
}

it_log "login redirection: the hook on the home loop for a worker's login, and without workers"
ON="each connection on one of them end to end"
OFF="only the connections' sockets on them"
redirected 1 "" "$ON" --workers 2
redirected 2 "" "$OFF" --workers 2 --conn-workers 0
redirected 3 "" "" --workers 0
it_log "the environment overrides the option: SCSITGT_CONN_WORKERS=0 wins over --conn-workers 1"
redirected 4 SCSITGT_CONN_WORKERS=0 \
	"$OFF (SCSITGT_CONN_WORKERS=0 in the environment overrides the engine option)" \
	--workers 2 --conn-workers 1

it_log "a connection killed mid-I/O"
VICTIM=iqn.2026-11.org.libscsitgt:victim
# iscsi-perf reads until it is stopped: kill it once its reads are flowing (it prints a line
# of figures per second), never at a fixed time.
iscsi-perf -i "$VICTIM" -m 32 "${IT_URLS[2]}" >"$IT_TMP/perf.out" 2>&1 &
victim=$!
IT_HELPER_PIDS+=("$victim")
it_wait_log "$IT_TMP/target.err" "normal session login: initiator $VICTIM"
for ((i = 0; i < 600; i++)); do
	grep -q "iops current" "$IT_TMP/perf.out" && break
	kill -0 "$victim" 2>/dev/null || it_fail "iscsi-perf ended: $(tail -n 3 "$IT_TMP/perf.out")"
	sleep 0.1
done
grep -q "iops current" "$IT_TMP/perf.out" || it_fail "iscsi-perf never reported reads"
kill -KILL "$victim" 2>/dev/null || true
wait "$victim" 2>/dev/null || true
it_wait_log "$IT_TMP/target.err" "normal session closed: initiator $VICTIM"
iscsi-inq "${IT_URLS[0]}" >/dev/null || it_fail "iscsi-inq after the killed connection"
"$READBACK" -o "$IT_TMP/again0" "${IT_URLS[0]}" "$SIZE" >/dev/null 2>&1 ||
	it_fail "read after the killed connection"
cmp -s "$IT_TMP/img0" "$IT_TMP/again0" || it_fail "LUN 0 changed after the killed connection"

it_alive || it_fail "target died"
it_stop || it_fail "target exited with status $? on SIGTERM"
it_log "PASS"
