#!/bin/bash
# steps.sh - sourced by the vm suite's guest scripts (iser-guest.sh, srp-guest.sh,
# iscsi-tcp-ext4.sh): the steps they share. Each wait is bounded at 60 s (TCG on a busy host)
# and fails the calling script (set -e) with a message after it.
#   step TEXT...           "[  12.34s] == TEXT": the time since this file was sourced
#   iscsi_disk             DEV=/dev/sdX of the iSCSI session logged in, once its disk is there
# For a script that runs our target in the guest, in the background as TPID, its output in
# /tmp/target.log, its logs kept in OUT:
#   target_wait_for REGEX  until a line of the target's log matches REGEX (grep -E; printed),
#                          the target still running
#   target_stop            SIGTERM, then until the target has exited; fails if it has not or
#                          its exit status is not 0
#   save_logs              the target's log and the kernel's into OUT

STEPS_T0=$(date +%s.%N)

step() {
	echo "$(awk -v s="$STEPS_T0" -v e="$(date +%s.%N)" 'BEGIN{printf "[%6.2fs]", e-s}') == $*"
}

iscsi_disk() {
	local b _
	DEV=
	for _ in $(seq 600); do
		for b in /sys/class/iscsi_session/session*/device/target*/*:*:*:*/block/*; do
			[ -e "$b" ] && DEV=/dev/$(basename "$b") && break
		done
		[ -n "$DEV" ] && [ -b "$DEV" ] && return 0
		sleep 0.1
	done
	echo "no iSCSI block device appeared"
	false
}

target_wait_for() {
	local _
	for _ in $(seq 600); do grep -qE "$1" /tmp/target.log && break; sleep 0.1; done
	kill -0 "$TPID"
	grep -E "$1" /tmp/target.log || { echo "the target printed no line matching $1"; false; }
}

target_stop() {
	local _
	kill -TERM "$TPID"
	for _ in $(seq 600); do kill -0 "$TPID" 2>/dev/null || break; sleep 0.1; done
	if kill -0 "$TPID" 2>/dev/null; then
		echo "the target did not stop within 60 s"
		false
	fi
	wait "$TPID"
}

save_logs() { cp /tmp/target.log "$OUT"/ 2>/dev/null; dmesg > "$OUT"/dmesg.log; }
