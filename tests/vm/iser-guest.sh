#!/bin/bash
# iser-guest.sh - the vm suite's iSER test (meson test vm/iser; tests/vm/iser.sh by hand); runs as
# root inside the guest (vm-test.sh, run-guest.sh).
# Soft-RoCE (rdma_rxe on a dummy netdev, 192.0.2.1), our iSER target from /host, the kernel
# iSER initiator (ib_iser via iscsiadm, iface transport iser): login, mkfs.ext4, mount,
# files of 1 MiB..64 MiB written with direct I/O and checksummed, fsck -f, logout, a second
# login to the same (still running) target process, fio, a LUN RESET (TMF), and the
# target stops cleanly while the session is still logged in (it asks for a logout, Async
# Message). ISER_DEVICE_REMOVAL=1 also removes the RDMA device and adds it back before login 2.
# VM_QUICK=1 (rdma-guest.sh, .ci/run) bounds fio by size instead of time; FS_FILES_MB (must
# include 16) and LUN_SIZE shrink the data (guest/fs-files.sh). Logs go to GUEST_OUT (default
# /host/out). Exits 77 when the guest kernel has no soft-RoCE (guest/rxe.sh).
# With --max-initiator-conns 1 among the target's arguments, a second session of the same
# initiator must be refused (the portal's per-initiator connection limit applies to iSER).
#   iser-guest.sh TARGET_BIN [TARGET_ARGS...]
# The target must serve IQN (default minitarget's) on an iSER portal at 192.0.2.1:3260 and print
# a line containing "iscsi://" once it listens; its LUN 0 may be a file at /tmp/lun0.img, which
# this script creates (LUN_SIZE, default 512M).
set -Eeuo pipefail
# fs_write_files / fs_check_files (tests/vm/guest/fs-files.sh, staged at /host/guest)
. /host/guest/fs-files.sh
# iscsid_start (tests/vm/guest/iscsid-start.sh)
. /host/guest/iscsid-start.sh
# rxe_up, rxe_remove_readd (tests/vm/guest/rxe.sh)
. /host/guest/rxe.sh
# step, iscsi_disk, target_wait_for, target_stop, save_logs (tests/vm/guest/steps.sh)
. /host/guest/steps.sh
IQN=${IQN:-iqn.2026-11.org.libscsitgt:minitarget}
RXE_IP=192.0.2.1 # RFC 5737 TEST-NET-1, only on the guest's dummy device
PORTAL=$RXE_IP:3260
OUT=${GUEST_OUT:-/host/out}
[ -d $OUT ] || OUT=/ctl
trap 'set +e; echo "--- FAILED at ${BASH_SOURCE[0]##*/} line $LINENO"; save_logs; grep -v "\] iscsi: conn.*SEND of" /tmp/target.log | tail -n 40; dmesg | grep -v "speed is unknown" | tail -n 30; exit 1' ERR
[ $# -ge 1 ] || { echo "usage: $0 TARGET_BIN [ARGS...]"; exit 2; }

step "soft-RoCE rxe0 on rig0 ($RXE_IP)"
rxe_up

step "target: $*"
truncate -s ${LUN_SIZE:-512M} /tmp/lun0.img
"$@" > /tmp/target.log 2>&1 &
TPID=$!
target_wait_for "iscsi://"

step "ib_iser + iscsid"
modprobe ib_iser debug_level=${ISER_DEBUG:-0}
modprobe sd_mod
iscsid_start

login() {
	timeout 45 iscsiadm -m node -T "$IQN" -p $PORTAL -I iser --login
	iscsi_disk
	iscsiadm -m session -P 3 | grep -E 'Iface Transport|iSCSI Connection State|HeaderDigest|DataDigest|MaxRecvDataSegmentLength|FirstBurst|MaxBurst|ImmediateData|InitialR2T' | sed 's/^\s*/  /'
}
logout() { iscsiadm -m node -T "$IQN" -p $PORTAL -I iser --logout; }

step "discovery (SendTargets over iSER)"
iscsiadm -m discovery -t sendtargets -p $PORTAL -I iser
step "login 1"
login
sg_readcap "$DEV" | head -3
{ grep -m1 "QP: " /tmp/target.log || true; } | sed 's/^.*QP: /  target QP: /'

step "mkfs.ext4 + mount + direct-I/O files of $FS_FILES_MB MiB + fsck"
fs_write_files "$DEV"
fsck.ext4 -fn "$DEV"
fs_check_files "$DEV"
step "logout 1"
logout
kill -0 $TPID

# Opt-in (ISER_DEVICE_REMOVAL=1): on rxe the kernel's device removal waits for every process to
# close the device (rxe cannot disassociate user contexts) and `rdma link delete` has been seen
# to hang in D state here, so the suite does not run it by default.
if [ "${ISER_DEVICE_REMOVAL:-0}" = 1 ]; then
	step "device removal: rxe0 goes and comes back; the portal listens again"
	rxe_remove_readd ": listening again$"
fi

step "login 2 (same target process)"
login
mount -o ro "$DEV" /mnt/lun
[ "$(sha256sum < /mnt/lun/file16)" = "${FS_SUM[16]}" ]
umount /mnt/lun
if grep -q -- "--max-initiator-conns 1" <<< "$*"; then
	step "a second session of the same initiator is refused (--max-initiator-conns 1)"
	SID=$(iscsiadm -m session | sed -n 's/^[^[]*\[\([0-9]*\)\].*/\1/p' | head -1)
	# The refusal (0x0302, out of resources) is one iscsid retries (8 times by default: 64 s
	# under TCG until `timeout 60` ended it): no retry, so iscsiadm reports it at once.
	RETRIES=$(iscsiadm -m node -T "$IQN" -p $PORTAL -I iser |
		sed -n 's/^node.session.initial_login_retry_max = //p')
	iscsiadm -m node -T "$IQN" -p $PORTAL -I iser -o update \
		-n node.session.initial_login_retry_max -v 0
	if timeout 60 iscsiadm -m session -r "$SID" --op new; then
		echo "a second connection of the initiator was accepted"
		false
	fi
	iscsiadm -m node -T "$IQN" -p $PORTAL -I iser -o update \
		-n node.session.initial_login_retry_max -v "${RETRIES:-8}"
	grep "connections on this portal already\|refused: out of resources" /tmp/target.log | head -2
	grep -q "holds 1 connections on this portal already" /tmp/target.log
	# iscsid keeps the failed session's record (and may retry it): one session is logged in,
	# and the disk is still the only one.
	iscsiadm -m session -P 1 | grep -E "Target:|Session State" | sed 's/^\s*/  /'
	[ "$(iscsiadm -m session -P 1 | grep -c 'iSCSI Session State: LOGGED_IN')" = 1 ]
	[ "$(ls -d /sys/class/iscsi_session/session*/device/target*/*:*:*:*/block/* | wc -l)" = 1 ]
	for s in $(iscsiadm -m session | sed -n 's/^[^[]*\[\([0-9]*\)\].*/\1/p'); do
		[ "$s" = "$SID" ] || iscsiadm -m session -r "$s" -u > /dev/null 2>&1 || true
	done
fi
# Full: 5 s randrw 4k QD8, 3 s seq read and 3 s seq write 256k; quick: bounded by size. One
# fio process runs the three jobs one after the other (stonewall): starting fio takes seconds
# under TCG.
if [ "${VM_QUICK:-0}" = 1 ]; then
	RAND=(--io_size=2M) SEQ=(--io_size=8M) LIMITS="2 MiB, 8 MiB, 8 MiB"
else
	RAND=(--runtime=5 --time_based) SEQ=(--runtime=3 --time_based) LIMITS="5 s, 3 s, 3 s"
fi
step "fio randrw 4k QD8, seq read 256k, seq write 256k ($LIMITS; direct I/O)"
fio --filename="$DEV" --direct=1 --ioengine=libaio --size=256M \
	--output-format=terse --terse-version=3 \
	--name=rw --rw=randrw --bs=4k --iodepth=8 "${RAND[@]}" \
	--name=seqr --stonewall --rw=read --bs=256k --iodepth=4 "${SEQ[@]}" \
	--name=seqw --stonewall --rw=write --bs=256k --iodepth=4 "${SEQ[@]}" > /tmp/fio.out
awk -F';' '
	$3 == "rw" { printf "fio randrw 4k QD8: read %s IOPS, write %s IOPS\n", $8, $49; n++ }
	$3 == "seqr" { printf "fio seq read 256k QD4: %s KiB/s\n", $7; n++ }
	$3 == "seqw" { printf "fio seq write 256k QD4: %s KiB/s\n", $48; n++ }
	END { exit n != 3 }' /tmp/fio.out
step "task management over iSER: LUN RESET (sg_reset -d), then I/O again"
sg_reset -d "$DEV"
dd if="$DEV" of=/dev/null bs=1M count=4 iflag=direct status=none

step "stop the target with the session logged in (Async Message asks for a logout)"
# The target waits for the logout it asked for up to its logout timeout (10 s by default), and
# the guest runs under TCG on a host that may be busy: 60 s, as the other waits here.
target_stop
dmesg | grep -iE 'iser|async|logout' | tail -8 || true
grep -iE 'error|warning' /tmp/target.log || true
logout > /dev/null 2>&1 || true
save_logs
step "PASS iser"
