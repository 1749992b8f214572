# shellcheck shell=bash
# rbd_lib.sh - a throwaway Ceph cluster for the RBD tests (source it after lib.sh and it_init).
#
#   source lib.sh; source rbd_lib.sh
#   it_init "$1"
#   rbd_need                        # exit 77 (skipped) without ceph-mon/ceph-osd/rbd
#   rbd_cluster_up [-w 5] [-S 256M] # tests/ceph/micro-ceph.sh up in $IT_TMP/ceph; exports
#                                   # CEPH_CONF CEPH_KEYRING MICRO_CEPH_POOL MICRO_CEPH_IMAGE...
#   rbd ... / minitarget --lun 0:rbd:$MICRO_CEPH_POOL/$MICRO_CEPH_IMAGE
#   rbd_stop PID                    # SIGSTOP (an OSD); returns once none of its threads runs
#
#   gw_start A 1 2 [options...]    # a minitarget gateway (docs/rbd.md, HA model) on $IQN
#   gw_wait A owner                 # until its log says it reached a state
#   trap gw_cleanup EXIT            # after rbd_cluster_up: gateways die before the cluster
#
# The cluster is torn down by the EXIT trap (after lib.sh's cleanup stopped the target), also
# when the test fails or is interrupted. Tests whose clients get killed pass -w 5 (a short
# watch timeout: a dead client's watch and exclusive lock linger that long).

RBD_MICRO_CEPH=$(cd "$(dirname "${BASH_SOURCE[0]}")/../ceph" && pwd)/micro-ceph.sh
RBD_GW_CONF=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../examples" && pwd)/scsitgtd-gateway.conf
RBD_DIR=

# ThreadSanitizer builds: Ceph's client libraries are not instrumented; tests/tsan.supp
# ignores what happens inside them (never our code). Appended for every process these tests
# start, unless the caller's TSAN_OPTIONS names a suppressions file already.
RBD_TSAN_SUPP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/tsan.supp
case ":${TSAN_OPTIONS:-}:" in
*:suppressions=*) ;;
*) export TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}suppressions=$RBD_TSAN_SUPP" ;;
esac

# rbd_need: skip unless the Ceph daemons and tools are installed (scripts/install-deps.sh).
rbd_need() {
	local t
	for t in ceph-mon ceph-osd ceph ceph-authtool monmaptool rbd; do
		command -v "$t" >/dev/null 2>&1 ||
			it_skip "$t is not installed (Debian: ceph-mon ceph-osd ceph-common)"
	done
	[[ -x "$RBD_MICRO_CEPH" ]] || it_fail "$RBD_MICRO_CEPH missing"
}

rbd_cleanup() {
	local rc=$?
	# Stop the targets first: they are clients of the cluster (a second gateway too: with the
	# cluster gone its shutdown could wait for it).
	it_stop_helpers
	if [[ -n "$IT_PID" ]] && kill -0 "$IT_PID" 2>/dev/null; then
		it_stop >/dev/null 2>&1 || true
	fi
	if [[ -n "$RBD_DIR" && -d "$RBD_DIR" ]]; then
		if [[ $rc -ne 0 && $rc -ne 77 ]]; then
			it_log "--- ceph logs (last lines) ---"
			tail -n 15 "$RBD_DIR"/log/*.log >&2 2>/dev/null || true
		fi
		# IT_KEEP_TMP (lib.sh) keeps the test's files: the cluster's logs join them.
		if [[ -n "${IT_KEEP_TMP:-}" && -n "$IT_TMP" ]]; then
			cp -r "$RBD_DIR/log" "$IT_TMP/ceph-log" 2>/dev/null || true
		fi
		"$RBD_MICRO_CEPH" down "$RBD_DIR" >/dev/null 2>&1 || true
	fi
	# it_cleanup takes the test's exit status from $?.
	(exit "$rc")
	it_cleanup
}

# rbd_proc_start PID: the start time of process PID (field 22 of /proc/PID/stat, clock ticks
# since boot); fails when there is no such process or only its zombie. A pid names one process
# only while it lives: once it is reaped, the kernel may give the number to the next process,
# and `kill -0 PID` says yes to that one. The pair (pid, start time) never comes back.
rbd_proc_start() {
	local stat f
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	# The fields after the command name, which may hold spaces and ')': state is the first
	# (field 3), the start time the 20th.
	read -ra f <<<"${stat##*) }"
	[[ ${#f[@]} -ge 20 && ${f[0]} != [ZX] ]] || return 1
	echo "${f[19]}"
}

# rbd_guard_start [PID [START]]: a watcher in a session of its own takes the cluster in
# $RBD_DIR down once process PID (default: this test's shell) is gone without having done so;
# "gone" is exact: no process with that pid and start time (rbd_proc_start), so a pid the
# kernel hands to another process meanwhile keeps nothing alive. START (default: PID's now)
# lets a test stand for such a reused pid. Sets RBD_GUARD_PID. meson ends a test past its
# timeout with SIGTERM to the test's process group and SIGKILL half a second later, which
# cuts rbd_cleanup short (seen: `micro-ceph down` killed while it removed the directory); the
# Ceph daemons run in sessions of their own and would outlive the test, holding memory and CPU
# for the rest of the run. The watcher holds none of the test's file descriptors (meson waits
# for them).
rbd_guard_start() {
	local pid=${1:-$$} start=${2:-}
	[[ -n "$start" ]] || start=$(rbd_proc_start "$pid") || it_fail "no process $pid to guard"
	# shellcheck disable=SC2016 # expanded by the watcher's shell
	setsid bash -c "$(declare -f rbd_proc_start)"'
		while [[ $(rbd_proc_start "$1") == "$2" ]]; do sleep 1; done
		[[ -d "$3" ]] || exit 0
		# down stops the daemons, then removes the directory; a directory without its
		# marker is one whose removal was cut short (no daemon left) or whose up never
		# got that far.
		"$4" down "$3" || [[ -d "$3/.micro-ceph" ]] || rm -rf -- "$3"' \
		rbd-guard "$pid" "$start" "$RBD_DIR" "$RBD_MICRO_CEPH" </dev/null >/dev/null 2>&1 &
	# shellcheck disable=SC2034 # for the caller (tests/integration/rbd_guard.sh)
	RBD_GUARD_PID=$!
}

# rbd_cluster_up [micro-ceph up options]: start the cluster and export its environment.
# The directory is short (admin sockets need paths under 107 bytes).
rbd_cluster_up() {
	local out p2 p1
	RBD_DIR=$(mktemp -u "${TMPDIR:-/tmp}/mc.XXXXXX")
	trap rbd_cleanup EXIT
	rbd_guard_start "$$"
	# Ceph reads CEPH_KEYRING and CEPH_ARGS over the conf file: never inherit them.
	unset CEPH_KEYRING CEPH_ARGS
	# The monitor's two ports come from lib.sh's registry, like every port of the suite: a
	# port the kernel alone calls free may be one another test claimed and has not bound yet,
	# or be handed to another test before the monitor binds it (after its mkfs: seconds on a
	# loaded host).
	p2=$(it_free_port) && p1=$(it_free_port) || it_fail "no free port for the monitor"
	# Clients ping their watches every second (Ceph's 5 s would reach the 5 s watch timeout
	# of -w 5: the OSD dropped an idle client's watch 10 s after it was made, measured), and
	# the gateways' watch check (rbd_pr.c) calls a copy stale at 4 s without confirmation.
	out=$(MICRO_CEPH_PORTS="$p2 $p1" "$RBD_MICRO_CEPH" up "$RBD_DIR" \
		-o objecter_tick_interval=1 "$@" 2>"$IT_TMP/micro-ceph.err") || {
		tail -n 30 "$IT_TMP/micro-ceph.err" >&2
		it_fail "micro-ceph up failed"
	}
	eval "$out"
	export CEPH_CONF CEPH_KEYRING MICRO_CEPH_POOL MICRO_CEPH_IMAGE MICRO_CEPH_IMAGE_SIZE \
		MICRO_CEPH_MON MICRO_CEPH_DIR
	it_log "ceph cluster up in $RBD_DIR: $(tail -n 1 "$IT_TMP/micro-ceph.err")"
}

# rbd_stopped PID: every thread of process PID is stopped (state T in its /proc stat).
rbd_stopped() {
	local f s n=0
	for f in /proc/"$1"/task/*/stat; do
		read -r s 2>/dev/null <"$f" || continue
		n=$((n + 1))
		s=${s##*) }
		# A thread that exits meanwhile (Z, X) runs nothing either.
		[[ ${s:0:1} == [TZX] ]] || return 1
	done
	[[ $n -gt 0 ]]
}

# rbd_stop PID: SIGSTOP process PID (an OSD) and return once none of its threads runs. kill
# returns when the signal is queued: the stop begins only when one of the process's threads
# gets a CPU to take it, and the other threads go on until then. On a loaded host the OSD
# still served I/O up to 28 ms after kill returned: phase 3 of rbd_fault.sh saw the write it
# sends "while the only OSD is stopped" acknowledged, and that write was on the OSD.
rbd_stop() {
	local i
	kill -STOP "$1" || it_fail "cannot stop process $1"
	for ((i = 0; i < 3000; i++)); do
		rbd_stopped "$1" && return 0
		sleep 0.01
	done
	kill -CONT "$1"
	it_fail "process $1 did not stop within 30 s of SIGSTOP"
}

# rbd_mon_kill: the monitor crashes (SIGKILL); returns once the process is gone.
rbd_mon_kill() {
	local pid i
	pid=$(awk '$1 == "mon.a" { p = $2 } END { print p }' "$RBD_DIR/pids")
	[[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null || it_fail "no monitor in $RBD_DIR/pids"
	kill -KILL "$pid"
	for ((i = 0; i < 300; i++)); do
		[[ -e /proc/$pid ]] || return 0
		sleep 0.1
	done
	it_fail "the monitor (pid $pid) did not die"
}

# rbd_mon_start: the monitor again, on its store and addresses; returns once it answers.
rbd_mon_start() {
	local i pidf=$RBD_DIR/run/mon.a.pid
	rm -f "$pidf"
	ceph-mon -c "$RBD_DIR/ceph.conf" -i a || it_fail "ceph-mon did not start again"
	for ((i = 0; i < 300; i++)); do
		[[ -s "$pidf" ]] && break
		sleep 0.1
	done
	[[ -s "$pidf" ]] || it_fail "ceph-mon wrote no pid file"
	echo "mon.a $(cat "$pidf")" >>"$RBD_DIR/pids"
	for ((i = 0; i < 60; i++)); do
		timeout 10 ceph mon stat >/dev/null 2>&1 && return 0
	done
	it_fail "the monitor does not answer after its restart"
}

# ---- gateways: minitarget processes exporting the same image (docs/rbd.md, "Several
# gateways: the HA model"). The caller sets IQN; GW_LUN_FLAGS adds LUN options. ----

declare -A GW_PID GW_URL GW_PORT

# Gateways are stopped before the cluster goes down (they are its clients).
gw_cleanup() {
	local rc=$? n
	# An OSD a test stopped on purpose (SIGSTOP) and did not resume before failing.
	if [[ -n "${RBD_OSD_STOPPED:-}" ]]; then
		kill -CONT "$RBD_OSD_STOPPED" 2>/dev/null || true
	fi
	for n in "${!GW_PID[@]}"; do
		kill -KILL "${GW_PID[$n]}" 2>/dev/null || true
		wait "${GW_PID[$n]}" 2>/dev/null || true
	done
	if [[ $rc -ne 0 && $rc -ne 77 ]]; then
		for n in "${!GW_PORT[@]}"; do
			[[ -f "$IT_TMP/gw-$n.err" ]] || continue
			it_log "--- gateway $n stderr (last 30 lines) ---"
			tail -n 30 "$IT_TMP/gw-$n.err" >&2 || true
		done
	fi
	# rbd_cleanup reads the exit status from $?; errexit must not end the trap here.
	set +e
	(exit $rc)
	rbd_cleanup
}

# gw_start NAME GROUP PEER [minitarget options...]: a gateway in group GROUP (its portal
# group tag too), listing group PEER (port PEER); waits for its URL. A gateway started again
# keeps its port. When $IT_TARGET is scsitgtd, the gateway is a scsitgtd process with
# rbd_gateway in its configuration file (docs/scsitgtd.md) and takes no options.
gw_start() {
	local name=$1 group=$2 peer=$3 i port
	shift 3
	port=${GW_PORT[$name]:-$(it_free_port)}
	GW_PORT[$name]=$port
	: >"$IT_TMP/gw-$name.out"
	if [[ $(basename "$IT_TARGET") == scsitgtd* ]]; then
		[[ $# -eq 0 && -z "${GW_LUN_FLAGS:-}" ]] || it_fail "gw_start: options for scsitgtd"
		# examples/scsitgtd-gateway.conf with this gateway's port, group, peer and image.
		sed -e "s/^address = .*/address = 127.0.0.1/" -e "s/^port = .*/port = $port/" \
			-e "s/^tpgt = .*/tpgt = $group/" -e "s/^name = .*/name = $IQN/" \
			-e "s/^rbd_gateway = .*/rbd_gateway = $group/" \
			-e "s/^rbd_gateway_peer = .*/rbd_gateway_peer = $peer\nrbd_gateway_holddown_ms = 1000/" \
			-e "s|^path = .*|path = $MICRO_CEPH_POOL/$MICRO_CEPH_IMAGE|" \
			"$RBD_GW_CONF" >"$IT_TMP/gw-$name.conf"
		it_conf_workers "$IT_TMP/gw-$name.conf"
		"$IT_TARGET" "$IT_TMP/gw-$name.conf" </dev/null >"$IT_TMP/gw-$name.out" \
			2>>"$IT_TMP/gw-$name.err" &
		GW_PID[$name]=$!
		for ((i = 0; i < 600; i++)); do
			grep -q "scsitgtd: ready" "$IT_TMP/gw-$name.out" && break
			kill -0 "${GW_PID[$name]}" 2>/dev/null || it_fail "gateway $name exited at start"
			sleep 0.1
		done
		grep -q "scsitgtd: ready" "$IT_TMP/gw-$name.out" || it_fail "gateway $name not ready"
		GW_URL[$name]=iscsi://127.0.0.1:$port/$IQN/0
		it_log "gateway $name (scsitgtd, group $group): ${GW_URL[$name]} pid ${GW_PID[$name]}"
		return 0
	fi
	# shellcheck disable=SC2086 # IT_TARGET_ARGS is a command line (lib.sh)
	"$IT_TARGET" --portal "127.0.0.1:$port" --iqn "$IQN" --tpgt "$group" \
		--alua-group "$group" --alua-peer "$peer:$peer" --gw-holddown 1000 -v \
		--lun "0:rbd:$MICRO_CEPH_POOL/$MICRO_CEPH_IMAGE,nocache${GW_LUN_FLAGS:-}" "$@" \
		${IT_TARGET_ARGS:-} \
		</dev/null >"$IT_TMP/gw-$name.out" 2>>"$IT_TMP/gw-$name.err" &
	GW_PID[$name]=$!
	for ((i = 0; i < 600; i++)); do
		GW_URL[$name]=$(grep -o 'iscsi://[^[:space:]]*' "$IT_TMP/gw-$name.out" || true)
		[[ -n "${GW_URL[$name]}" ]] && break
		kill -0 "${GW_PID[$name]}" 2>/dev/null || it_fail "gateway $name exited at start"
		sleep 0.1
	done
	[[ -n "${GW_URL[$name]}" ]] || it_fail "gateway $name printed no URL"
	it_log "gateway $name (group $group): ${GW_URL[$name]} pid ${GW_PID[$name]}"
}

# gw_wait NAME STATE [N]: wait until the gateway's log says it reached STATE (N times).
gw_wait() {
	local name=$1 state=$2 n=${3:-1} i
	for ((i = 0; i < 600; i++)); do
		[[ $(grep -c -- "-> $state\$" "$IT_TMP/gw-$name.err") -ge $n ]] && return 0
		kill -0 "${GW_PID[$name]}" 2>/dev/null || it_fail "gateway $name died"
		sleep 0.1
	done
	it_fail "gateway $name never became $state: $(tail -5 "$IT_TMP/gw-$name.err")"
}

# gw_kill NAME: SIGKILL the gateway (its port stays its own for gw_start).
gw_kill() {
	kill -KILL "${GW_PID[$1]}"
	wait "${GW_PID[$1]}" 2>/dev/null || true
	unset "GW_PID[$1]"
}
