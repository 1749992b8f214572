#!/bin/bash
# kernel-iscsi.sh - run examples/minitarget against the Linux kernel iSCSI initiator
# (iscsi_tcp + iscsiadm) in a QEMU guest, using an external VM rig. Run by hand; not
# part of `meson test` or CI. See tests/vm/README.md.
#
# Usage: tests/vm/kernel-iscsi.sh RIG_DIR [BUILD_DIR] [SCENARIO...]
#   RIG_DIR    the VM rig (run-in-guest.sh, build-image.sh, guest/iscsi-tcp-ext4.sh)
#   BUILD_DIR  a meson build dir of this project (default: ./build)
#   SCENARIO   any of: 512 4k thin digest (default: 512 4k thin)
# Environment: LOG_DIR (default: a new /tmp/kernel-iscsi.XXXXXX), LUN_SIZE (default 512M),
#   RIG_TIMEOUT (default 480 s per scenario) and the rig's own RIG_* variables.
# Exit status: 0 if every scenario passed.
set -uo pipefail

usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d;s/^# \{0,1\}//' >&2; exit 2; }
[ $# -ge 1 ] || usage
case "$1" in -h|--help) usage;; esac
RIG=$(cd "$1" && pwd) || usage
shift
BUILD=build
if [ $# -ge 1 ] && [ -d "$1" ]; then
	BUILD=$1
	shift
fi
BUILD=$(cd "$BUILD" && pwd) || { echo "no build dir $BUILD" >&2; exit 2; }
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SCENARIOS=("$@")
[ ${#SCENARIOS[@]} -gt 0 ] || SCENARIOS=(512 4k thin)
SIZE=${LUN_SIZE:-512M}
export RIG_TIMEOUT=${RIG_TIMEOUT:-480}

for f in run-in-guest.sh build-image.sh guest/iscsi-tcp-ext4.sh; do
	[ -x "$RIG/$f" ] || { echo "kernel-iscsi: $RIG/$f missing: not a VM rig?" >&2; exit 2; }
done
[ -x "$BUILD/examples/minitarget" ] || {
	echo "kernel-iscsi: $BUILD/examples/minitarget missing (ninja -C $BUILD first)" >&2
	exit 2
}
LOG_DIR=${LOG_DIR:-$(mktemp -d /tmp/kernel-iscsi.XXXXXX)}
mkdir -p "$LOG_DIR"

echo "kernel-iscsi: rig $RIG, build $BUILD, logs $LOG_DIR"
"$RIG/build-image.sh" > "$LOG_DIR/build-image.log" 2>&1 || {
	echo "kernel-iscsi: build-image.sh failed, see $LOG_DIR/build-image.log" >&2
	exit 2
}

results=()
nfail=0
for sc in "${SCENARIOS[@]}"; do
	extra=()
	case "$sc" in
	512) lun="0:ram:$SIZE";;
	4k) lun="0:ram:$SIZE,bs=4096";;
	thin)
		lun="0:ram:$SIZE,thin"
		export RIG_GUEST_ENV="EXPECT_DISCARD=1";;
	digest)
		lun="0:ram:$SIZE"
		extra=(--header-digest --data-digest)
		export RIG_GUEST_ENV="DIGEST=1";;
	*) echo "kernel-iscsi: unknown scenario $sc" >&2; exit 2;;
	esac
	# The guest sees only the staging dir (at /host): the binary, its library next to
	# $ORIGIN/.., the rig's guest script and an out/ dir for logs.
	stage=$LOG_DIR/$sc
	rm -rf "$stage"
	mkdir -p "$stage/examples" "$stage/out"
	cp -L "$BUILD/examples/minitarget" "$stage/examples/"
	cp -L "$BUILD"/libscsitgt.so.0 "$stage/"
	cp "$RIG/guest/iscsi-tcp-ext4.sh" "$stage/"
	echo "=== scenario $sc: --lun $lun ${extra[*]}"
	t0=$(date +%s.%N)
	RIG_SHARE=$stage "$RIG/run-in-guest.sh" "$HERE/guest-kernel-iscsi.sh" 127.0.0.1:3261 \
		--lun "$lun" "${extra[@]}" > "$LOG_DIR/$sc.log" 2>&1
	rc=$?
	unset RIG_GUEST_ENV
	secs=$(awk -v s="$t0" -v e="$(date +%s.%N)" 'BEGIN{printf "%.1f", e-s}')
	grep -E '^\[ *[0-9.]+s\] ==|^fio:|target exit status|block stats|not negotiated|thin LUN|guest verdict|FAILED' "$LOG_DIR/$sc.log" |
		sed 's/^/    /'
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
echo "kernel-iscsi summary (guest logs, dmesg and target logs under $LOG_DIR/<scenario>/out/):"
printf '  %s\n' "${results[@]}"
echo "$(( ${#SCENARIOS[@]} - nfail )) passed, $nfail failed"
[ $nfail = 0 ]
