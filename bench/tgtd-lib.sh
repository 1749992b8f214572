# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# tgtd-lib.sh - sourced by bench/compare.sh and bench/vm-compare.sh: tgt's tgtd as the
# reference target (a foreground process of the caller, its control port numbered like its
# iSCSI port so it never meets a system tgtd), and the median of a column of numbers.
#
# The caller defines die MESSAGE (prints and exits) and sets:
#   PORT_TGTD   iSCSI port on 127.0.0.1, also tgtd's control port (-C)
#   TGTD TGTADM the programs (Debian package tgt)
# tgtd_start LOG [PREFIX...] sets TGTD_PID; tgtd_stop stops it (tgtd ignores SIGTERM).

port_busy() { ss -Hltn "sport = :$1" | grep -q .; }

tgtd_adm() { "$TGTADM" -C "$PORT_TGTD" "$@"; }

# tgtd_start LOG [PREFIX...]: tgtd on 127.0.0.1:PORT_TGTD (PREFIX: e.g. taskset -c 0), once
# its control socket answers; no target yet.
tgtd_start() {
	local log=$1 up=0
	shift
	port_busy "$PORT_TGTD" && die "port $PORT_TGTD is in use"
	if [[ -S /var/run/tgtd/socket.$PORT_TGTD ]] &&
		tgtd_adm --mode system --op show >/dev/null 2>&1; then
		die "a tgtd already answers on control port $PORT_TGTD"
	fi
	# setsid: a ^C on the terminal must not reach tgtd; it is stopped through tgtadm.
	setsid "$@" "$TGTD" -f -C "$PORT_TGTD" --iscsi "portal=127.0.0.1:$PORT_TGTD" \
		</dev/null >"$log" 2>&1 &
	TGTD_PID=$!
	for _ in $(seq 100); do
		kill -0 "$TGTD_PID" 2>/dev/null || die "tgtd exited: $(tail -3 "$log")"
		if tgtd_adm --mode system --op show >/dev/null 2>&1; then up=1; break; fi
		sleep 0.1
	done
	[[ $up == 1 ]] || die "tgtd's control socket did not come up"
	[[ $(cat "/proc/$TGTD_PID/comm" 2>/dev/null) == tgtd ]] || die "pid $TGTD_PID is not tgtd"
}

# tgtd_target IQN SHMFILE BYTES: target 1 named IQN with LUN 1, a RAM file of BYTES on
# /dev/shm (SHMFILE, its pages allocated now) through the rdwr store, and LUN 2, the null
# store (1 TiB; reads move no data from a medium and return stale buffers, writes are dropped).
tgtd_target() {
	tgtd_adm --lld iscsi --mode target --op new --tid 1 --targetname "$1" ||
		die "tgtadm: target new failed"
	rm -f "$2"
	fallocate -l "$3" "$2" || die "cannot allocate $2"
	tgtd_adm --lld iscsi --mode logicalunit --op new --tid 1 --lun 1 --bstype rdwr \
		--backing-store "$2" || die "tgtadm: RAM LUN failed"
	tgtd_adm --lld iscsi --mode logicalunit --op new --tid 1 --lun 2 --bstype null \
		--backing-store /dev/null || die "tgtadm: null LUN failed"
}

# tgtd_open: every initiator address allowed, then wait for the listener.
tgtd_open() {
	tgtd_adm --lld iscsi --mode target --op bind --tid 1 --initiator-address ALL ||
		die "tgtadm: ACL bind failed"
	for _ in $(seq 50); do port_busy "$PORT_TGTD" && break; sleep 0.1; done
	port_busy "$PORT_TGTD" || die "tgtd does not listen on $PORT_TGTD"
}

# tgtd_stop [SHMFILE]: offline, its targets deleted, then the system (it exits once nothing
# is left; SIGKILL after 10 s); the RAM file removed.
tgtd_stop() {
	[[ -n ${TGTD_PID:-} ]] || return 0
	if kill -0 "$TGTD_PID" 2>/dev/null; then
		tgtd_adm --mode system --op update --name State --value offline >/dev/null 2>&1
		local tids tid
		tids=$(tgtd_adm --lld iscsi --mode target --op show 2>/dev/null |
			awk '/^Target [0-9]+:/ {sub(":", "", $2); print $2}')
		for tid in $tids; do
			tgtd_adm --lld iscsi --mode target --op delete --force --tid "$tid" >/dev/null 2>&1
		done
		tgtd_adm --mode system --op delete >/dev/null 2>&1
		for _ in $(seq 100); do kill -0 "$TGTD_PID" 2>/dev/null || break; sleep 0.1; done
		if kill -0 "$TGTD_PID" 2>/dev/null; then
			echo "tgtd $TGTD_PID still there 10 s after 'system delete': SIGKILL" >&2
			kill -KILL "$TGTD_PID" 2>/dev/null
		fi
	fi
	wait "$TGTD_PID" 2>/dev/null
	TGTD_PID=
	rm -f "${1:-}" "/var/run/tgtd/socket.$PORT_TGTD" "/var/run/tgtd/socket.$PORT_TGTD.lock"
}

# median of the numbers on stdin ("-" when none)
median() {
	sort -g | awk '{ v[NR] = $1 } END {
		if (NR == 0) { print "-"; exit }
		if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
