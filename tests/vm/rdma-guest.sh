#!/bin/bash
# rdma-guest.sh - the vm suite's RDMA test (meson test vm/rdma, run by .ci/run): SRP and iSER
# in one boot of the guest, against the Linux kernel's initiators over soft-RoCE. Runs as root
# inside the guest (vm-test.sh, run-guest.sh): srp-guest.sh, then iser-guest.sh (staged at
# /host/vm/), each with its own target process; the modules, rxe0 and iscsid that the first
# sets up serve the second. SRP goes first: its last check reads the whole kernel log for
# SCSI errors, and the iSER part ends by stopping a target under a logged-in session.
#   rdma-guest.sh TARGET_BIN [EXTRA_TARGET_ARGS...]
# Each part proves what it proves alone (see those scripts): logins through the kernel
# initiators, ext4 made and checked with fsck, files written and read back by direct I/O and
# checksummed, logout and a second login; for SRP two channels, the target port removed and
# logged in again, a LUN reset and its unit attention (no SRP_AER_REQ), the LUN read over iSER
# too. Unless VM_FULL=1 the data is smaller (files of 1, 4 and 16 MiB instead of up to 64) and
# fio runs are bounded by size, not time (VM_QUICK=1 for both scripts); VM_FULL=1 runs both as vm/srp and
# vm/iser do. Logs: /host/out/srp/, /host/out/iser/. Exit status: the first part that does not
# pass (77: no soft-RoCE in the guest kernel, skipped).
set -uo pipefail
[ $# -ge 1 ] || { echo "usage: $0 TARGET_BIN [ARGS...]"; exit 2; }
BIN=$1
shift
T0=$EPOCHREALTIME
ts() { awk -v s="$T0" -v e="$EPOCHREALTIME" 'BEGIN{printf "[%6.2fs]", e-s}'; }

if [ "${VM_FULL:-0}" != 1 ]; then
	export VM_QUICK=1
	export FS_FILES_MB=${FS_FILES_MB:-1 4 16}
fi

# part NAME SCRIPT ARGS...: one transport's guest script, its logs in /host/out/NAME/.
part() {
	local name=$1 rc
	shift
	echo "$(ts) ==== rdma: $name"
	mkdir -p "/host/out/$name"
	GUEST_OUT=/host/out/$name bash "$@"
	rc=$?
	echo "$(ts) ==== rdma: $name exit $rc"
	[ $rc = 0 ] || exit $rc
}

part srp /host/vm/srp-guest.sh "$BIN" "$@"
part iser /host/vm/iser-guest.sh "$BIN" --iser-portal 192.0.2.1:3260 \
	--lun 0:file:/tmp/lun0.img --max-initiator-conns 1 "$@"
echo "$(ts) ==== PASS rdma (srp, iser)"
