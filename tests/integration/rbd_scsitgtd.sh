#!/bin/bash
# rbd_scsitgtd.sh SCSITGTD READBACK - scsitgtd adds an RBD LUN on SIGHUP without stalling the
# LUNs it serves: the image is opened off the loop. First the new LUN names a cluster that does
# not answer (a monitor address nobody listens on): while that open hangs until its timeout,
# LUN 0 (RAM) is read (its first MiB), and the open is still pending afterwards, so the loop
# kept serving (no timing is measured: the order of events proves it). The open then fails with an
# error in the log and no LUN. Then the LUN names the real cluster: it appears, and data
# written with qemu-img equals `rbd export`; its reservations are shared in RADOS. A LUN whose
# shared reservations cannot attach (its client may not touch their object) stays offline
# through reloads, each retrying the attach. A LUN removed (with its target) while a fault rule
# holds a write, then its image resized: no LUN is resized (a use after free before the
# backend's detach op). SIGTERM while librbd holds a write (the OSD stopped, rbd_op_timeout =
# 0) past drain_timeout_ms: the backend's close waits for librbd, then the daemon exits 0; and with the write held by a
# fault rule in front of the RBD backend, whose shared reservations must then stop using the
# LUN the engine let go of (review34 D1: a use after free under ASan).
# Skipped without Ceph or libinih.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/rbd_lib.sh"
it_init "${1:-}"
READBACK=${2:-}
[[ -x "$READBACK" ]] || it_fail "usage: $0 SCSITGTD ISCSI_READBACK"
it_need qemu-img sha256sum python3
rbd_need
rbd_cluster_up -S 16M

PORT=$(it_free_port)
IQN=iqn.2026-11.org.libscsitgt:rbd-daemon
CONF=$IT_TMP/scsitgtd.conf
URL0=iscsi://127.0.0.1:$PORT/$IQN/0
URL1=iscsi://127.0.0.1:$PORT/$IQN/1
base_conf() {
	printf '[engine]\nlog_level = info\n\n[portal]\naddress = 127.0.0.1\nport = %s\n\n' "$PORT"
	printf '[target]\nname = %s\n\n[lun 0]\nbackend = ram\nsize = 16M\n\n' "$IQN"
}
base_conf >"$CONF"
it_scsitgtd_start "$CONF"

# A ceph.conf whose monitor is a port nothing listens on: rados_connect waits for the
# operation timeout (rbd_op_timeout) and fails. The check below needs a login and a read of
# LUN 0 to end before that timeout: 60 s, and only 1 MiB read (the point is that the loop
# answers while the open hangs, not how much it reads), so that a loaded host (ThreadSanitizer,
# --workers 2) cannot turn the order around.
dead_port=$(it_free_port)
printf '[global]\nmon_host = 127.0.0.1:%s\nkeyring = %s\n' "$dead_port" "$CEPH_KEYRING" \
	>"$IT_TMP/dead.conf"
{
	base_conf
	printf '[lun 1]\nbackend = rbd\npath = %s/%s\nrbd_conf = %s\nrbd_op_timeout = 60\n' \
		"$MICRO_CEPH_POOL" "$MICRO_CEPH_IMAGE" "$IT_TMP/dead.conf"
} >"$CONF"
it_reload
grep -q "LUN 1: opening rbd" "$IT_TMP/target.err" || it_fail "no open started: $(tail -5 "$IT_TMP/target.err")"
"$READBACK" -o "$IT_TMP/lun0.img" "$URL0" 1048576 || it_fail "LUN 0 unreadable while LUN 1 opens"
if grep -Eq "LUN 1: (created|backend)" "$IT_TMP/target.err"; then
	it_fail "the open of LUN 1 ended before LUN 0 was read: did it block the loop?"
fi
it_log "LUN 0 served while LUN 1's image was still opening"
# The open gives up after its 60 s: 90 s from here at most.
for ((i = 0; i < 900; i++)); do
	grep -q "LUN 1: backend" "$IT_TMP/target.err" && break
	sleep 0.1
done
grep -q "LUN 1: backend: rbd" "$IT_TMP/target.err" || it_fail "the hanging open never failed"
it_log "failed open: $(grep "LUN 1: backend" "$IT_TMP/target.err" | tail -n 1)"
if "$READBACK" -o /dev/null "$URL1" 4096 2>/dev/null; then
	it_fail "LUN 1 exists although its open failed"
fi

# The real cluster ($CEPH_CONF): the LUN appears.
{
	base_conf
	printf '[lun 1]\nbackend = rbd\npath = %s/%s\n' "$MICRO_CEPH_POOL" "$MICRO_CEPH_IMAGE"
} >"$CONF"
seen=$(wc -l <"$IT_TMP/target.err")
it_reload
since() { tail -n "+$((seen + 1))" "$IT_TMP/target.err"; }
for ((i = 0; i < 600; i++)); do
	since | grep -Eq "LUN 1: (created|backend)" && break
	sleep 0.1
done
since | grep -q "LUN 1: created" || it_fail "LUN 1 not created: $(since | tail -5)"
# Its reservations are shared through RADOS (rbd_shared_pr, default yes): offline until then.
for ((i = 0; i < 600; i++)); do
	since | grep -Eq "LUN 1: (reservations shared|shared reservations)" && break
	sleep 0.1
done
since | grep -q "LUN 1: reservations shared in RADOS" ||
	it_fail "LUN 1's reservations are not shared: $(since | tail -5)"

size=$((16 * 1024 * 1024))
head -c "$size" /dev/urandom >"$IT_TMP/random.img"
want=$(sha256sum <"$IT_TMP/random.img" | cut -d' ' -f1)
qemu-img convert -n -f raw -O raw "$IT_TMP/random.img" "$URL1" || it_fail "qemu-img to LUN 1"
"$READBACK" -o "$IT_TMP/back.img" "$URL1" "$size" || it_fail "readback of LUN 1"
got=$(sha256sum <"$IT_TMP/back.img" | cut -d' ' -f1)
[[ "$got" == "$want" ]] || it_fail "LUN 1: read back $got, wrote $want"
rbd export "$MICRO_CEPH_POOL/$MICRO_CEPH_IMAGE" "$IT_TMP/export.img" >/dev/null 2>&1 ||
	it_fail "rbd export failed"
got=$(sha256sum <"$IT_TMP/export.img" | cut -d' ' -f1)
[[ "$got" == "$want" ]] || it_fail "rbd export has $got, wrote $want"

# Shared reservations that cannot attach (review33 D2): a Ceph client whose OSD caps reach the
# image's objects (rbd_*) but not the reservations object (scsitgt_pr.<image id>) opens the
# image, and its attach fails. The LUN must stay offline (NOT READY) through every reload, each
# of which tries the attach again: online, its reservations would be this gateway's alone.
rbd create --size 16M "$MICRO_CEPH_POOL/nopr" || it_fail "rbd create nopr"
ceph auth get-or-create client.nopr mon 'profile rbd' \
	osd "allow rwx pool=$MICRO_CEPH_POOL object_prefix rbd" >>"$CEPH_KEYRING" ||
	it_fail "ceph auth get-or-create client.nopr"
URL2=iscsi://127.0.0.1:$PORT/$IQN/2
{
	base_conf
	printf '[lun 1]\nbackend = rbd\npath = %s/%s\n\n' "$MICRO_CEPH_POOL" "$MICRO_CEPH_IMAGE"
	printf '[lun 2]\nbackend = rbd\npath = %s/nopr\nrbd_client_id = nopr\n' "$MICRO_CEPH_POOL"
} >"$CONF"
seen=$(wc -l <"$IT_TMP/target.err")
it_reload
attach_failed() { since | grep -c "LUN 2: shared reservations: .*the LUN stays offline" || true; }
# offline_lun2 WHEN: LUN 2 answers NOT READY.
offline_lun2() {
	if "$READBACK" -o /dev/null "$URL2" 4096 2>"$IT_TMP/lun2.err"; then
		it_fail "LUN 2 is online $1 although its reservations are not shared"
	fi
	grep -q "NOT READY" "$IT_TMP/lun2.err" || it_fail "LUN 2 $1: $(cat "$IT_TMP/lun2.err")"
}
for ((i = 0; i < 600; i++)); do
	[[ $(attach_failed) -ge 1 ]] && break
	since | grep -q "LUN 2: backend" && it_fail "LUN 2's image did not open: $(since | tail -5)"
	sleep 0.1
done
[[ $(attach_failed) -ge 1 ]] || it_fail "LUN 2's attach did not fail: $(since | tail -5)"
offline_lun2 "after its attach failed"
# A reload (this one changes nothing of LUN 2) retries the attach and keeps the LUN offline.
it_reload
offline_lun2 "right after a reload"
for ((i = 0; i < 600; i++)); do
	[[ $(attach_failed) -ge 2 ]] && break
	sleep 0.1
done
[[ $(attach_failed) -ge 2 ]] || it_fail "a reload did not retry LUN 2's attach: $(since | tail -5)"
offline_lun2 "after a reload"
it_log "LUN 2 without shared reservations stays offline; a reload retries the attach"

# SIGTERM with a write held past drain_timeout_ms. (Needs the control socket, json-c, to see
# the write held.)
# - By a fault rule in front of the RBD backend (review34 D1): the engine gives up on it and
#   lets go of the LUN (its reservation state freed: the store detached), scsitgtd then
#   releases the write, which frees the LUN, and closes the backend. The shared reservations
#   must not touch the LUN from their detach on: their stop called scsitgt_lun_set_pr_cluster()
#   on the freed LUN (AddressSanitizer: heap use after free, the sanitizer's abort a non-zero
#   exit status; in any build, their detach was a no-op and said nothing). First, while the
#   cluster is healthy.
# - By librbd (review33 D3): the OSD stopped and rbd_op_timeout = 0 (never). The engine gives
#   up on the write and never closes the backend; scsitgtd closes it, which ends only once
#   librbd gave the write back (the OSD running again): the write is completed, the daemon
#   exits with status 0.
if grep -q libjson-c <<<"$(ldd "$IT_TARGET")"; then
	SOCK=$IT_TMP/ctl.sock
	# lun1_conf KEY=VALUE: the file with LUN 1 on the image and that line added to it.
	lun1_conf() {
		printf '[engine]\nlog_level = info\ncontrol_socket = %s\n' "$SOCK"
		printf 'drain_timeout_ms = 500\nlogout_timeout_ms = 500\n\n'
		base_conf | tail -n +3
		printf '[lun 1]\nbackend = rbd\npath = %s/%s\n%s\n' \
			"$MICRO_CEPH_POOL" "$MICRO_CEPH_IMAGE" "$1"
	}
	inflight() {
		python3 - "$SOCK" <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(30)
s.connect(sys.argv[1])
s.sendall(b'{"jsonrpc":"2.0","method":"stats","id":1}\n')
buf = b""
while b"\n" not in buf:
    d = s.recv(65536)
    if not d:
        break
    buf += d
tgts = json.loads(buf.split(b"\n")[0])["result"]["targets"]
print(sum(l["inflight"] for t in tgts for l in t["luns"] if l["id"] == 1))
PY
	}
	head -c 65536 /dev/urandom >"$IT_TMP/small.img"
	# write_held [URL]: a qemu-img write to LUN 1 (of URL, default $URL1) in the background,
	# until the daemon counts it in flight (false if it never does).
	write_held() {
		qemu-img convert -n -f raw -O raw "$IT_TMP/small.img" "${1:-$URL1}" >/dev/null 2>&1 &
		IT_HELPER_PIDS+=($!)
		for ((i = 0; i < 600; i++)); do
			[[ $(inflight) -ge 1 ]] && return 0
			sleep 0.1
		done
		[[ $(inflight) -ge 1 ]]
	}

	# A removal that gives up on a write held by a fault rule in front of the RBD backend, then
	# the image grows (rbd resize, seen through librbd's update watch). The backend reports
	# resizes to the LUN scsitgtd gave it (scsitgt_backend_rbd_set_lun()); the LUN's destroy
	# must make it forget that LUN (the backend's detach op), since the LUN waits for the
	# write out of its target, which is freed meanwhile (and an engine shutdown would free the
	# LUN before scsitgtd closes the backend). Here LUN 1 has a target of its own, removed
	# whole. Before: the removed LUN was resized, "LUN 1: capacity 32768 -> 65536 blocks" in
	# the log with its freed target's name (AddressSanitizer: heap use after free in
	# scsitgt_lun_resize).
	IQN2=$IQN-2
	lun1_conf 'fault = hang@write' | sed "s/^\[lun 1\]/[target]\nname = $IQN2\n\n&/" >"$CONF"
	it_stop || it_fail "scsitgtd exited with status $? on SIGTERM"
	it_scsitgtd_start "$CONF"
	it_wait_log "$IT_TMP/target.err" "LUN 1: reservations shared in RADOS"
	write_held "iscsi://127.0.0.1:$PORT/$IQN2/1" || it_fail "no write held by the fault rule"
	lun1_conf '' | sed '/^\[lun 1\]/,$d' >"$CONF"
	it_reload
	it_wait_log "$IT_TMP/target.err" "LUN 1 removed with 1 ios still in backend"
	rbd resize --size 32M "$MICRO_CEPH_POOL/$MICRO_CEPH_IMAGE" >/dev/null 2>&1 ||
		it_fail "rbd resize failed"
	it_wait_log "$IT_TMP/target.err" "resized from 16777216 to 33554432 bytes"
	# The loop answers after the resize's turn (a sanitizer's report ends the process first).
	if ! inflight >/dev/null 2>&1 || ! it_alive; then
		it_fail "scsitgtd died after the resize: $(grep -m 1 "SUMMARY" "$IT_TMP/target.err" ||
			tail -5 "$IT_TMP/target.err")"
	fi
	if grep -q "LUN 1: capacity" "$IT_TMP/target.err"; then
		it_fail "the removed LUN was resized: $(grep "LUN 1: capacity" "$IT_TMP/target.err")"
	fi
	st=0
	it_stop || st=$?
	[[ $st -eq 0 ]] || it_fail "SIGTERM after the resize: exit status $st: $(tail -5 "$IT_TMP/target.err")"
	grep -q "LUN 1: backend closed after the engine gave up" "$IT_TMP/target.err" ||
		it_fail "the RBD backend of the removed LUN was not closed: $(tail -5 "$IT_TMP/target.err")"
	it_log "an image resized after its LUN's removal gave up on a held write: no LUN resized"

	lun1_conf 'fault = hang@write' >"$CONF"
	it_scsitgtd_start "$CONF"
	it_wait_log "$IT_TMP/target.err" "LUN 1: reservations shared in RADOS"
	write_held || it_fail "no write held by the fault rule"
	st=0
	it_stop || st=$?
	[[ $st -eq 0 ]] || it_fail "SIGTERM with a write held in front of RBD: exit status $st: $(tail -5 "$IT_TMP/target.err")"
	grep -q "LUN 1: backend closed after the engine gave up" "$IT_TMP/target.err" ||
		it_fail "the RBD backend behind the fault rule was not closed: $(tail -5 "$IT_TMP/target.err")"
	# (without a sanitizer: the store says it stopped using the LUN when the engine let go)
	grep -q "the LUN let go of its shared reservations before the backend's close" \
		"$IT_TMP/target.err" ||
		it_fail "the shared reservations were not detached from the LUN given up: $(tail -5 "$IT_TMP/target.err")"
	it_log "SIGTERM with a write held in front of an RBD LUN with shared reservations: exits"

	lun1_conf 'rbd_op_timeout = 0' >"$CONF"
	it_scsitgtd_start "$CONF"
	it_wait_log "$IT_TMP/target.err" "LUN 1: reservations shared in RADOS"
	osd=$(awk '$1 == "osd.0" { print $2 }' "$RBD_DIR/pids")
	[[ -n "$osd" ]] && kill -0 "$osd" || it_fail "no OSD pid in $RBD_DIR/pids"
	rbd_stop "$osd"
	write_held || { kill -CONT "$osd"; it_fail "no write held by librbd"; }
	kill -TERM "$IT_PID"
	it_wait_log "$IT_TMP/target.err" "LUN 1: closing the backend the engine gave up on"
	if ! it_alive || grep -q "LUN 1: backend closed after" "$IT_TMP/target.err"; then
		kill -CONT "$osd"
		it_fail "the RBD backend's close finished while librbd held the write"
	fi
	kill -CONT "$osd"
	# The close ends once librbd gave the write back; then the daemon exits by itself (its
	# signal handlers are gone: no second signal).
	for ((i = 0; i < IT_STOP_TIMEOUT * 10; i++)); do
		it_alive || break
		sleep 0.1
	done
	it_alive && it_fail "scsitgtd still runs ${IT_STOP_TIMEOUT}s after the OSD came back"
	st=0
	wait "$IT_PID" || st=$?
	IT_PID=
	[[ $st -eq 0 ]] || it_fail "SIGTERM with a write held by librbd: exit status $st"
	grep -q "LUN 1: backend closed after the engine gave up on its ios (librbd gave them back)" \
		"$IT_TMP/target.err" || it_fail "no close of the RBD backend: $(tail -5 "$IT_TMP/target.err")"
	grep -q "came back from librbd during the close" "$IT_TMP/target.err" ||
		it_fail "the write librbd gave back was not completed: $(tail -5 "$IT_TMP/target.err")"
	it_log "SIGTERM with a write held by librbd past drain_timeout_ms: closed once the OSD is back, exit 0"
else
	it_stop || it_fail "scsitgtd exited with status $? on SIGTERM"
	it_log "scsitgtd without json-c: SIGTERM with a write held by librbd not checked"
fi
it_log "PASS"
