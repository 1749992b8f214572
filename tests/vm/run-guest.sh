#!/bin/bash
# run-guest.sh - boot the vm suite's guest (build-image.sh) under QEMU, run SCRIPT in it as root,
# stream its output, power off and exit with the script's exit status. Time is bounded.
#
# Usage: tests/vm/run-guest.sh SCRIPT [ARGS...]
# In the guest the script runs as `bash /ctl/script ARGS...` (cwd /ctl, a 9p share of this
# run's control directory: files the script writes there stay on the host when VM_KEEP=1 or
# the run fails). The root file system is a throw-away snapshot of the cached image.
# Environment:
#   VM_SHARE=DIR      host directory shared read-write at /host (default: none)
#   VM_TIMEOUT=S      bound for the whole VM run (default 600); the script gets S - 45
#   VM_MEM=MiB        guest memory (default 2048)        VM_CPUS=N (default 2)
#   VM_ACCEL=auto|kvm|tcg   auto: KVM only when kvm_intel/kvm_amd is loaded (a /dev/kvm of
#                     a nested sandbox may not boot a stock kernel: kvm_pvm, README.md), TCG
#                     otherwise
#   VM_NET=none|hostloop   hostloop: a virtio NIC on QEMU's user network (slirp), where the
#                     guest reaches the host's 127.0.0.1 at 10.0.2.2 (the guest script brings
#                     eth0 up: guest/net-hostloop.sh); targets on the host (default none)
#   VM_ENV="A=1 B=2"  variables exported to the script
#   VM_KEEP=1         keep the run directory (console.log, output.log, files of /ctl)
#   SCSITGT_VM_CACHE  the image cache (see build-image.sh)
# Exit status: the script's; 124 when the VM hit VM_TIMEOUT; 125 when the guest died without
# reporting (console.log is printed); 3 when QEMU or the image cannot be had.
set -uo pipefail

[ $# -ge 1 ] || { sed -n '2,/^set -uo/p' "$0" | sed '$d;s/^# \{0,1\}//' >&2; exit 2; }
SCRIPT=$1
shift
[ -f "$SCRIPT" ] || { echo "run-guest: no such script: $SCRIPT" >&2; exit 2; }
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${SCSITGT_VM_CACHE:-/var/tmp/scsitgt-vm}
VM_SHARE=${VM_SHARE:-none}
VM_TIMEOUT=${VM_TIMEOUT:-600}
VM_MEM=${VM_MEM:-2048}
VM_CPUS=${VM_CPUS:-2}
VM_ACCEL=${VM_ACCEL:-auto}
VM_NET=${VM_NET:-none}
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:$PATH

command -v qemu-system-x86_64 > /dev/null ||
	{ echo "run-guest: qemu-system-x86_64 not installed (package qemu-system-x86)" >&2; exit 3; }
"$HERE/build-image.sh" > /dev/null
rc=$?
[ $rc = 0 ] || exit $rc
CUR=$CACHE/current

if [ "$VM_ACCEL" = auto ]; then
	VM_ACCEL=tcg
	if [ -w /dev/kvm ] && { [ -d /sys/module/kvm_intel ] || [ -d /sys/module/kvm_amd ]; }; then
		VM_ACCEL=kvm
	fi
fi
case "$VM_ACCEL" in
kvm) ACCEL=(-accel kvm -cpu host) ;;
tcg) ACCEL=(-accel tcg,thread=multi,tb-size=512 -cpu max) ;;
*) echo "run-guest: bad VM_ACCEL=$VM_ACCEL" >&2; exit 2 ;;
esac

mkdir -p "$CACHE/runs"
RUN=$(mktemp -d "$CACHE/runs/run.XXXXXX")
cp "$SCRIPT" "$RUN/script"
: > "$RUN/args"
for a in "$@"; do
	printf '%s\n' "$a" >> "$RUN/args"
done
{
	echo "GUEST_TIMEOUT=$((VM_TIMEOUT > 90 ? VM_TIMEOUT - 45 : VM_TIMEOUT / 2))"
	for kv in ${VM_ENV:-}; do
		echo "export $kv"
	done
} > "$RUN/env"
: > "$RUN/output.log"

# The guest keeps time by the HPET, not by the TSC: under TCG on a loaded host the kernel's
# boot-time TSC calibration can come out several times too low ("tsc: PIT calibration deviates
# from HPET: 330023 2596170 ... Using PIT calibration value"), and with tsc=reliable (no
# clocksource watchdog) the guest's clock, its timers and timeouts then ran about 7 times too
# fast for the whole boot: GUEST_TIMEOUT expired early, fio's rates read that much too low and
# soft-RoCE's ACK timeout shrank (docs/srp.md "Measured"). QEMU's HPET follows the host's clock.
# Under KVM the guest has kvm-clock, which is right and cheap (an HPET read would trap).
GUEST_CLOCK=""
if [ "$VM_ACCEL" = tcg ]; then
	GUEST_CLOCK="clocksource=hpet"
fi
ARGS=(
	-M pc "${ACCEL[@]}" -smp "$VM_CPUS" -m "$VM_MEM"
	-nodefaults -no-user-config -display none -no-reboot
	-kernel "$CUR/vmlinuz" -initrd "$CUR/initrd.gz"
	-append "console=ttyS0 panic=-1 mitigations=off tsc=reliable $GUEST_CLOCK"
	-serial "file:$RUN/console.log" -serial "file:$RUN/output.log"
	-drive "file=$CUR/rootfs.img,format=raw,if=virtio,snapshot=on,cache=unsafe"
	-device virtio-rng-pci
	-virtfs "local,path=$RUN,mount_tag=ctl,security_model=none,id=ctl"
)
if [ "$VM_SHARE" != none ]; then
	[ -d "$VM_SHARE" ] || { echo "run-guest: VM_SHARE $VM_SHARE is not a directory" >&2; exit 2; }
	ARGS+=(-virtfs "local,path=$(cd "$VM_SHARE" && pwd),mount_tag=host,security_model=none,id=host")
fi

case "$VM_NET" in
none) ;;
hostloop) ARGS+=(-netdev "user,id=n0,ipv6=off,net=10.0.2.0/24" -device virtio-net-pci,netdev=n0) ;;
*) echo "run-guest: bad VM_NET=$VM_NET" >&2; exit 2 ;;
esac

start=$(date +%s.%N)
echo "run-guest: accel $VM_ACCEL, $VM_CPUS CPUs, $VM_MEM MiB, net $VM_NET, timeout $VM_TIMEOUT s, run $RUN" >&2
timeout -k 10 "$VM_TIMEOUT" qemu-system-x86_64 "${ARGS[@]}" > "$RUN/qemu.log" 2>&1 &
QPID=$!
tail -n +1 -F --pid=$QPID "$RUN/output.log" 2> /dev/null &
TPID=$!
wait $QPID
qrc=$?
# tail --pid prints what is left of the output and exits once QEMU is gone (it checks every
# second); wait for that rather than for a fixed time, bounded at 10 s.
for i in $(seq 100); do
	kill -0 $TPID 2> /dev/null || break
	sleep 0.1
done
kill $TPID 2> /dev/null
wait $TPID 2> /dev/null
secs=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN {printf "%.1f", e - s}')

if [ -s "$RUN/rc" ]; then
	rc=$(cat "$RUN/rc")
	echo "run-guest: script exit status $rc, VM wall time $secs s" >&2
else
	if [ $qrc = 124 ] || [ $qrc = 137 ]; then
		rc=124
		echo "run-guest: the VM timed out after $VM_TIMEOUT s; last console lines:" >&2
	else
		rc=125
		echo "run-guest: the guest died without reporting (qemu exit $qrc); last console lines:" >&2
	fi
	tail -n 40 "$RUN/console.log" 2> /dev/null | tr -d '\r' >&2
	cat "$RUN/qemu.log" >&2
fi
# Kept for a failure's post-mortem, not for a pass or a skip (77: the guest lacks something).
if { [ "$rc" = 0 ] || [ "$rc" = 77 ]; } && [ -z "${VM_KEEP:-}" ]; then
	rm -rf "$RUN"
else
	echo "run-guest: run directory kept: $RUN" >&2
fi
exit "$rc"
