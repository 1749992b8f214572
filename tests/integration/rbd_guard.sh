#!/bin/bash
# rbd_guard.sh - the harness of the RBD tests, without a cluster (no Ceph needed):
# - rbd_proc_start (rbd_lib.sh) names a process by pid and start time: the same for a live
#   process every time, nothing for its zombie, and never the old value once it is reaped;
# - the cluster watcher (rbd_guard_start) keeps a cluster directory while the process it guards
#   lives, takes it down once that process is SIGKILLed, and at once when the pid is alive but
#   is another process than the one it was given (a start time that is not the pid's: what a
#   pid the kernel handed on looks like; `kill -0` said yes to it before);
# - micro-ceph.sh up refuses MICRO_CEPH_PORTS that are not two different ports 1-65535
#   before it makes anything, and takes two that are.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib.sh"
source "$HERE/rbd_lib.sh"
it_init "$RBD_MICRO_CEPH"
it_need python3 pgrep

# fake_cluster DIR: a directory `micro-ceph.sh down` takes down (its marker, no daemon).
fake_cluster() {
	mkdir -p "$1/.micro-ceph"
	: >"$1/pids"
}

# gone_wait DIR WHY: until DIR is gone (the watcher looks once a second; the bound is for one
# that never acts).
gone_wait() {
	local i
	for ((i = 0; i < 600; i++)); do
		[[ -e "$1" ]] || return 0
		sleep 0.1
	done
	it_fail "$2"
}

# looked_wait WATCHER: until the watcher found its process alive at least once (it sleeps in
# its loop only after such a look: a `sleep` child).
looked_wait() {
	local i
	for ((i = 0; i < 600; i++)); do
		pgrep -P "$1" -x sleep >/dev/null && return 0
		kill -0 "$1" 2>/dev/null || it_fail "watcher $1 ended"
		sleep 0.1
	done
	it_fail "watcher $1 never looked"
}

# ---- rbd_proc_start ----
s1=$(rbd_proc_start $$) || it_fail "no start time for this shell"
s2=$(rbd_proc_start $$)
[[ $s1 =~ ^[0-9]+$ && $s1 == "$s2" ]] || it_fail "this shell's start time: '$s1', then '$s2'"
sleep 600 &
p=$!
sp=$(rbd_proc_start $p) || it_fail "no start time for a live child"
kill -KILL $p
wait $p 2>/dev/null || true
# Reaped: no process, or (the pid handed on already) another start time.
[[ $(rbd_proc_start $p || true) != "$sp" ]] || it_fail "a reaped process still has its start time"
# A zombie (exited, not reaped by its parent) is gone too. The file exists before the
# background job's redirection makes it (else the first read may come first: cat fails).
: >"$IT_TMP/zombie"
python3 -c 'import os, sys, time
pid = os.fork()
if pid == 0:
    os._exit(0)
print(pid, flush=True)
time.sleep(600)' >"$IT_TMP/zombie" &
zparent=$!
IT_HELPER_PIDS+=("$zparent")
for ((i = 0; i < 600; i++)); do
	z=$(cat "$IT_TMP/zombie" 2>/dev/null || true)
	[[ -n "$z" && $(awk '{ print $3 }' "/proc/$z/stat" 2>/dev/null) == Z ]] && break
	sleep 0.1
done
[[ -n "$z" && $(awk '{ print $3 }' "/proc/$z/stat" 2>/dev/null) == Z ]] ||
	it_fail "no zombie to look at"
if rbd_proc_start "$z" >/dev/null; then
	it_fail "a zombie counted as a live process: $(cat "/proc/$z/stat")"
fi
it_stop_helpers
it_log "rbd_proc_start: a live process has one start time, a zombie and a reaped one none"

# ---- the watcher ----
sleep 600 &
p=$!
IT_HELPER_PIDS+=("$p")
sp=$(rbd_proc_start $p)
RBD_DIR=$IT_TMP/kept
fake_cluster "$RBD_DIR"
rbd_guard_start $p
kept_guard=$RBD_GUARD_PID
IT_HELPER_PIDS+=("$kept_guard")
looked_wait "$kept_guard"
[[ -d $IT_TMP/kept ]] || it_fail "the watcher took the cluster of a live process down"
# The same pid, alive, but not the process the watcher was given.
RBD_DIR=$IT_TMP/reused
fake_cluster "$RBD_DIR"
rbd_guard_start $p $((sp + 1))
IT_HELPER_PIDS+=("$RBD_GUARD_PID")
gone_wait "$IT_TMP/reused" "a live pid with another start time kept the cluster up"
kill -0 $p || it_fail "the guarded process died"
[[ -d $IT_TMP/kept ]] || it_fail "the watcher of the live process took its cluster down"
it_log "a live pid that is another process keeps nothing up; the live process does"
kill -KILL $p
wait $p 2>/dev/null || true
gone_wait "$IT_TMP/kept" "the cluster outlived the process it belonged to"
it_log "the cluster goes down once its process is SIGKILLed"

# ---- micro-ceph.sh's ports ----
# Invalid ports are refused before anything else is looked at (-n 9 would be refused next):
# the error names them, and the directory is not made.
for v in "1234" "1 2 3" "a b" "0 5" "70000 1" "5 5" "065 66" "1.5 2"; do
	if MICRO_CEPH_PORTS=$v "$RBD_MICRO_CEPH" up "$IT_TMP/mc" -n 9 2>"$IT_TMP/mc.err"; then
		it_fail "micro-ceph up took MICRO_CEPH_PORTS='$v'"
	fi
	grep -q "MICRO_CEPH_PORTS='$v'" "$IT_TMP/mc.err" ||
		it_fail "MICRO_CEPH_PORTS='$v': $(cat "$IT_TMP/mc.err")"
	[[ ! -e $IT_TMP/mc ]] || it_fail "MICRO_CEPH_PORTS='$v' refused after making the directory"
done
# Valid ones pass the check (and -n 9 is what is refused).
for v in "6789 3300" " 1  65535 " ""; do
	if MICRO_CEPH_PORTS=$v "$RBD_MICRO_CEPH" up "$IT_TMP/mc" -n 9 2>"$IT_TMP/mc.err"; then
		it_fail "micro-ceph up took -n 9"
	fi
	grep -q -- "-n: 1 to 3 OSDs" "$IT_TMP/mc.err" ||
		it_fail "MICRO_CEPH_PORTS='$v': $(cat "$IT_TMP/mc.err")"
done
it_log "micro-ceph.sh refuses MICRO_CEPH_PORTS but two different ports 1-65535"
it_log "PASS"
