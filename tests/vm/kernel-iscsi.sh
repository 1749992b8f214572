#!/bin/bash
# kernel-iscsi.sh - by hand: examples/minitarget against the Linux kernel iSCSI initiator
# (iscsi_tcp + iscsiadm) in the vm suite's QEMU guest, in several LUN configurations. The meson
# test vm/iscsi_tcp runs the 'thin' scenario. See tests/vm/README.md.
#
# Usage: tests/vm/kernel-iscsi.sh [BUILD_DIR] [SCENARIO...]
#   BUILD_DIR  a meson build dir of this project (default: ./build)
#   SCENARIO   any of: 512 4k thin digest (default: 512 4k thin)
# Environment: LOG_DIR (default: a new /tmp/kernel-iscsi.XXXXXX), LUN_SIZE (default 512M),
#   VM_TIMEOUT (default 480 s per scenario) and the other run-guest.sh variables.
# Exit status: 0 if every scenario passed; 77 when QEMU or the guest image cannot be had.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BUILD=build
if [ $# -ge 1 ] && [ -d "$1" ]; then
	BUILD=$1
	shift
fi
BUILD=$(cd "$BUILD" && pwd) || { echo "kernel-iscsi: no build dir $BUILD" >&2; exit 2; }
SCENARIOS=("$@")
[ ${#SCENARIOS[@]} -gt 0 ] || SCENARIOS=(512 4k thin)
SIZE=${LUN_SIZE:-512M}
export VM_TIMEOUT=${VM_TIMEOUT:-480}
LOG_DIR=${LOG_DIR:-$(mktemp -d /tmp/kernel-iscsi.XXXXXX)}
mkdir -p "$LOG_DIR"
echo "kernel-iscsi: build $BUILD, logs $LOG_DIR"

results=()
nfail=0
for sc in "${SCENARIOS[@]}"; do
	extra=()
	env=
	case "$sc" in
	512) lun="0:ram:$SIZE" ;;
	4k) lun="0:ram:$SIZE,bs=4096" ;;
	thin)
		lun="0:ram:$SIZE,thin"
		env="EXPECT_DISCARD=1"
		;;
	digest)
		lun="0:ram:$SIZE"
		extra=(--header-digest --data-digest)
		env="DIGEST=1"
		;;
	*) echo "kernel-iscsi: unknown scenario $sc" >&2; exit 2 ;;
	esac
	echo "=== scenario $sc: --lun $lun ${extra[*]}"
	t0=$(date +%s.%N)
	VM_ENV="$env" "$HERE/vm-test.sh" "$BUILD" "iscsi-$sc" "$HERE/guest-kernel-iscsi.sh" \
		127.0.0.1:3261 --lun "$lun" "${extra[@]}" > "$LOG_DIR/$sc.log" 2>&1
	rc=$?
	[ $rc = 77 ] && { tail -n 1 "$LOG_DIR/$sc.log"; exit 77; }
	secs=$(awk -v s="$t0" -v e="$(date +%s.%N)" 'BEGIN {printf "%.1f", e - s}')
	grep -E '^\[ *[0-9.]+s\] ==|^fio:|target exit status|block stats|not negotiated|thin LUN|guest verdict|FAILED' \
		"$LOG_DIR/$sc.log" | sed 's/^/    /'
	if [ $rc = 0 ]; then
		verdict=PASS
	else
		verdict=FAIL
		nfail=$((nfail + 1))
	fi
	results+=("$(printf '%-8s %-4s %7ss  (exit %s, log %s)' "$sc" "$verdict" "$secs" "$rc" \
		"$LOG_DIR/$sc.log")")
	echo "=== scenario $sc: $verdict in ${secs}s"
done

echo
echo "kernel-iscsi summary (target logs and dmesg under $BUILD/tests/vm-stage-iscsi-<scenario>/out/):"
printf '  %s\n' "${results[@]}"
echo "$((${#SCENARIOS[@]} - nfail)) passed, $nfail failed"
[ $nfail = 0 ]
