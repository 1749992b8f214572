#!/bin/bash
# srp-guest.sh - the vm suite's SRP test (meson test vm/srp); runs as root inside the guest
# (vm-test.sh + run-guest.sh, or the shared rig's run-in-guest.sh).
# Soft-RoCE (rdma_rxe on a dummy netdev, 192.0.2.1) and our target from /host, exporting one
# RAM LUN over SRP (RDMA/CM, 192.0.2.1:5555) and over iSER (192.0.2.1:3260) at once. The Linux
# SRP initiator (ib_srp, add_target with dest=IP:PORT) logs in with two channels; mkfs.ext4,
# mount, files of 1..64 MiB written with direct I/O plus small files, fsck -f clean, checksums;
# the target port is removed (srp_remote_ports/*/delete) and logged in to again, and the data is
# still there; a LUN reset (sg_reset -d: SRP_TSK_MGMT) is answered and the unit attention it
# leaves is reported on the next command, not with an SRP_AER_REQ (the port's aer option is off
# by default, docs/srp.md: ib_srp would log "ignoring AER for LUN"). Then fio measures 4 KiB
# random reads at QD 32 and 1 MiB sequential reads, over
# SRP and over our iSER (ib_iser) against the same LUN of the same process; the figures are
# printed for information, never checked. Finally the target must stop cleanly on SIGTERM.
#   srp-guest.sh TARGET_BIN [EXTRA_TARGET_ARGS...]
# TARGET_BIN is examples/minitarget (the script adds --srp-portal, --srp-guid, --iser-portal
# and --lun). Environment: SRP_GUID (default 0x0002c90300abcdef), FIO_SECONDS (default 10),
# SRP_DEBUG=1 (ib_srp dynamic debug into dmesg), GUEST_OUT (where logs go, default /host/out),
# VM_QUICK=1 (rdma-guest.sh, .ci/run: fio bounded by size, 4 MiB random and 16 MiB sequential,
# and no idle CPU figure), FS_FILES_MB and LUN_SIZE (guest/fs-files.sh). Exits 77 when the
# guest kernel has no soft-RoCE (guest/rxe.sh).
set -Eeuo pipefail
# fs_write_files / fs_check_files (tests/vm/guest/fs-files.sh, staged at /host/guest)
. /host/guest/fs-files.sh
# iscsid_start (tests/vm/guest/iscsid-start.sh)
. /host/guest/iscsid-start.sh
# rxe_up, rxe_remove_readd (tests/vm/guest/rxe.sh)
. /host/guest/rxe.sh
# step, iscsi_disk, target_wait_for, target_stop, save_logs (tests/vm/guest/steps.sh)
. /host/guest/steps.sh
RXE_IP=192.0.2.1 # RFC 5737 TEST-NET-1, only on the guest's dummy device
SRP_PORT=5555
G=${SRP_GUID:-0x0002c90300abcdef}
IQN=iqn.2026-11.org.libscsitgt:minitarget
FIO_SECONDS=${FIO_SECONDS:-10}
OUT=${GUEST_OUT:-/host/out}
[ -d $OUT ] || OUT=/ctl
[ -d $OUT ] || OUT=/tmp
trap 'set +e; echo "--- FAILED at ${BASH_SOURCE[0]##*/} line $LINENO"; save_logs; tail -n 40 /tmp/target.log; dmesg | grep -v "speed is unknown" | tail -n 30; exit 1' ERR
[ $# -ge 1 ] || { echo "usage: $0 TARGET_BIN [ARGS...]"; exit 2; }

step "soft-RoCE rxe0 on rig0 ($RXE_IP)"
rxe_up
GID0=$(cat /sys/class/infiniband/rxe0/ports/1/gids/0)
GIDHEX=${GID0//:/}

step "target: $* (SRP $RXE_IP:$SRP_PORT, iSER $RXE_IP:3260, one RAM LUN)"
"$@" --srp-portal $RXE_IP:$SRP_PORT --srp-guid "$G" --iser-portal $RXE_IP:3260 \
	--lun 0:ram:${LUN_SIZE:-512M} > /tmp/target.log 2>&1 &
TPID=$!
target_wait_for "srp://"

step "ib_srp (initiator)"
modprobe sd_mod # no udev in the guest: nothing autoloads it for new LUNs
modprobe ib_srp
[ -n "${SRP_DEBUG:-}" ] && echo 'module ib_srp +p' > /sys/kernel/debug/dynamic_debug/control
SRPDEV=/sys/class/infiniband_srp/srp-rxe0-1
LOGIN="id_ext=$G,ioc_guid=$G,dest=$RXE_IP:$SRP_PORT,initiator_ext=${GIDHEX:0:16},ch_count=2"

# srp_login [OPTIONS]: add_target with LOGIN and ",OPTIONS" (more ib_srp login parameters).
srp_login() {
	local n login=$LOGIN${1:+,$1}
	n=$(dmesg | wc -l)
	echo "  add_target: $login"
	timeout 60 bash -c "echo '$login' > $SRPDEV/add_target"
	DEV=
	for i in $(seq 600); do
		for b in /sys/class/scsi_host/host*/device/target*/*:*:*:*/block/*; do
			[ -e "$b" ] || continue
			h=${b#/sys/class/scsi_host/}
			h=${h%%/*}
			[ -e /sys/class/scsi_host/$h/ch_count ] && DEV=/dev/$(basename "$b") && HOST=$h &&
				break
		done
		[ -n "$DEV" ] && [ -b "$DEV" ] && break
		sleep 0.1
	done
	[ -n "$DEV" ] || { echo "no SRP disk appeared"; false; }
	dmesg | awk -v n="$n" 'NR>n' | grep -E 'ib_srp|SRP|immediate' | sed 's/^/  dmesg: /' | head -8
	for a in ch_count req_lim zero_req_lim sg_tablesize; do
		echo "  $HOST/$a = $(cat /sys/class/scsi_host/$HOST/$a)"
	done
	[ "$(cat /sys/class/scsi_host/$HOST/ch_count)" = 2 ] || { echo "expected 2 channels"; false; }
	echo "  logins accepted by the target so far: $(grep -c "login accepted" /tmp/target.log || true)"
}

# The target's "I_T nexus ... ended" lines so far (one a logout).
nexus_ended() { grep -c "I_T nexus .* ended" /tmp/target.log || true; }

# srp_logout: remove the target port and wait until the target has ended this login's nexus:
# one more "ended" line than before (the log keeps the lines of earlier logouts).
srp_logout() {
	local ended
	ended=$(nexus_ended)
	for p in /sys/class/srp_remote_ports/*; do echo 1 > "$p/delete"; done
	for i in $(seq 600); do [ -z "$(ls /sys/class/srp_remote_ports/)" ] && break; sleep 0.1; done
	[ -z "$(ls /sys/class/srp_remote_ports/)" ] || { echo "remote port still there"; false; }
	for i in $(seq 600); do [ "$(nexus_ended)" -gt "$ended" ] && break; sleep 0.1; done
	[ "$(nexus_ended)" -gt "$ended" ] || { echo "the target did not end the I_T nexus"; false; }
	grep "I_T nexus .* ended" /tmp/target.log | tail -1 | sed 's/^/  target: /'
}

# Soft-RoCE counters that explain slow runs (retransmissions, RNR, sequence errors): rxe_mark
# before a phase, rxe_counters after it prints what grew in between (both ends of every
# connection are on rxe0, so the counts are the initiator's and the target's together).
rxe_mark() {
	local d=/sys/class/infiniband/rxe0/ports/1/hw_counters
	[ -d $d ] || return 0
	(cd $d && grep -H . * 2>/dev/null | tr ':' ' ') > /tmp/rxe.mark
}
rxe_counters() {
	local d=/sys/class/infiniband/rxe0/ports/1/hw_counters
	[ -d $d ] && [ -f /tmp/rxe.mark ] || return 0
	(cd $d && grep -H . * 2>/dev/null | tr ':' ' ') |
		join /tmp/rxe.mark - | awk '$3 != $2 {printf " %s=+%d", $1, $3 - $2}' |
		sed 's/^/  rxe counters in this phase:/'
	echo
}

cpu_ticks() { awk '{print $14 + $15}' /proc/$1/stat; }

# Reads the block device DEV completed and their sectors (its stat file).
dev_reads() { awk '{print $1, $3}' "/sys/block/$(basename "$1")/stat"; }

# fio against DEV; prints IOPS or MiB/s, the target's CPU time per I/O (TCG: compare ratios
# only, and only within one run) and the size of the reads the disk sent: ib_srp cuts a request
# at its sg_tablesize (default 12 pages, ib_iser's is 128), so 1 MiB of fragmented user memory
# may go as many smaller SRP_CMDs (docs/srp.md "Measured").
fio_one() {
	local what=$1 dev=$2 name=$3 rw=$4 bs=$5 qd=$6 c0 c1 r0 r1
	local limit=(--runtime="$FIO_SECONDS" --time_based)
	if [ "${VM_QUICK:-0}" = 1 ]; then
		limit=(--io_size=16M)
		[ "$rw" = randread ] && limit=(--io_size=4M)
	fi
	c0=$(cpu_ticks $TPID)
	r0=$(dev_reads "$dev")
	fio --name="$name" --filename="$dev" --direct=1 --rw="$rw" --bs="$bs" --iodepth="$qd" \
		--ioengine=libaio "${limit[@]}" --size=256M \
		--output-format=terse --terse-version=3 > /tmp/fio.out
	c1=$(cpu_ticks $TPID)
	r1=$(dev_reads "$dev")
	awk -F';' -v w="$what" -v n="$name" -v bs="$bs" -v qd="$qd" -v cpu=$((c1 - c0)) \
		-v r="$r0 $r1" -v seg="$(cat "/sys/block/$(basename "$dev")/queue/max_segments")" '{
		ios = $8 * $9 / 1000
		split(r, v, " ")
		nr = v[3] - v[1]
		printf "FIO %s %s %s QD%s: %s IOPS, %.1f MiB/s, target CPU %.0f us/IO,", w, n, bs,
			qd, $8, $7 / 1024, (ios > 0 ? cpu * 10000 / ios : 0)
		printf " %d reads of %.0f KiB on average (max_segments %s)\n", nr,
			(nr > 0 ? (v[4] - v[2]) / 2 / nr : 0), seg }' /tmp/fio.out
}

fio_pair() {
	fio_one "$1" "$2" randread randread 4k 32
	fio_one "$1" "$2" seqread read 1M 4
}

step "SRP login 1 (two channels)"
srp_login
sg_inq "$DEV" | grep -E 'Vendor|Product' | sed 's/^/  /'
sg_readcap "$DEV" | head -3 | sed 's/^/  /'

step "mkfs.ext4 + mount + direct-I/O files of $FS_FILES_MB MiB + 100 small files"
fs_write_files "$DEV"
step "fsck -f"
fsck.ext4 -fn "$DEV"
step "checksums"
fs_check_files "$DEV"

step "remove the target port (srp_remote_ports/*/delete)"
srp_logout
kill -0 $TPID

# Opt-in (SRP_DEVICE_REMOVAL=1), as iser-guest.sh's ISER_DEVICE_REMOVAL: rxe0 goes and comes
# back; the port (bound to $RXE_IP) must listen again (review32 R2) for the login below. Not
# by default: `rdma link delete` of rxe has hung in D state in this guest (tests/vm/README.md).
if [ "${SRP_DEVICE_REMOVAL:-0}" = 1 ]; then
	step "device removal: rxe0 goes and comes back; the SRP port listens again"
	rxe_remove_readd "SRP port .*: listening again($|: ok)"
	for i in $(seq 600); do [ -e $SRPDEV/add_target ] && break; sleep 0.1; done
fi

# The second login takes ib_iser's segment limit (128 pages) instead of ib_srp's default (12),
# so that the fio figures below compare the transports, not the initiators' limits: with 12,
# 1 MiB of fragmented user memory goes as many smaller SRP_CMDs (docs/srp.md "Measured").
step "SRP login 2 (same target process, sg_tablesize=128)"
srp_login sg_tablesize=128
echo 3 > /proc/sys/vm/drop_caches
mount -o ro "$DEV" /mnt/lun
[ "$(dd if=/mnt/lun/file$FS_BIG bs=1M iflag=direct status=none | sha256sum)" = "${FS_SUM[$FS_BIG]}" ]
echo "  file$FS_BIG checksum ok after the new login"
umount /mnt/lun
fsck.ext4 -fn "$DEV" > /dev/null

step "LUN reset over SRP (SRP_TSK_MGMT), its unit attention reported on the next command"
n=$(dmesg | wc -l)
sg_reset -d "$DEV"
dd if="$DEV" of=/dev/null bs=1M count=4 iflag=direct status=none
echo "  I/O after the reset ok"
# The first command after the reset got CHECK CONDITION, UNIT ATTENTION 29h (the SCSI layer
# logs it and retries); no SRP_AER_REQ came before it (scsitgt_srp_portal_opts.aer is off).
for i in $(seq 600); do
	dmesg | awk -v n="$n" 'NR>n' | grep -q "Power-on or device reset occurred" && break
	sleep 0.1
done
dmesg | awk -v n="$n" 'NR>n' | grep -iE "reset|AER" | sed 's/^/  dmesg: /'
dmesg | awk -v n="$n" 'NR>n' | grep -q "Power-on or device reset occurred" ||
	{ echo "the reset's unit attention was not reported"; false; }
if dmesg | awk -v n="$n" 'NR>n' | grep -q "AER for LUN"; then
	echo "an SRP_AER_REQ was sent with aer off"
	false
fi

# SBC-4 COMPARE AND WRITE with NUMBER OF LOGICAL BLOCKS 0: a write command with no data to
# move (SRP_CMD without a data descriptor). GOOD, as over iSCSI (review32 R1: TASK SET FULL
# from a 0-byte memory registration before).
step "COMPARE AND WRITE of 0 blocks over SRP"
sg_raw -v "$DEV" 89 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 2>&1 | sed 's/^/  /' |
	tee /tmp/caw0.out
grep -q "SCSI Status: Good" /tmp/caw0.out || { echo "expected GOOD"; false; }

if [ "${VM_QUICK:-0}" != 1 ]; then
	# information only (an idle target should not spin), never checked
	c0=$(cpu_ticks $TPID)
	sleep 5
	echo "  target CPU while idle with two channels up: $(($(cpu_ticks $TPID) - c0)) ticks in 5 s"
fi
step "fio over SRP"
{ grep -m1 "QP: " /tmp/target.log || true; } | sed 's/^.*QP: /  target QP: /'
rxe_mark
fio_pair SRP "$DEV"
rxe_counters
srp_logout

step "fio over iSER, same LUN of the same target process"
modprobe ib_iser
iscsid_start
timeout 45 iscsiadm -m discovery -t sendtargets -p $RXE_IP:3260 -I iser > /dev/null
timeout 45 iscsiadm -m node -T $IQN -p $RXE_IP:3260 -I iser --login > /dev/null
iscsi_disk
IDEV=$DEV
mount -o ro "$IDEV" /mnt/lun
[ "$(sha256sum < /mnt/lun/file16)" = "${FS_SUM[16]}" ]
echo "  file16 written over SRP reads back over iSER"
umount /mnt/lun
rxe_mark
fio_pair iSER "$IDEV"
rxe_counters
iscsiadm -m node -T $IQN -p $RXE_IP:3260 -I iser --logout > /dev/null

step "stop the target"
target_stop
if dmesg | grep -E 'ib_srp.*(failed|error|timeout)|abort|I/O error|Sense Key' | grep -v 'Connection 0/2 to .*5556'; then
	echo "kernel log shows SCSI or SRP errors"
	false
fi
save_logs
step "PASS srp-guest"
