#!/bin/bash
# vm-test.sh - one test of the meson suite 'vm': stage the build for the guest, boot the guest
# (build-image.sh, run-guest.sh) and run a guest script against the Linux kernel's own
# initiators.
#
# Usage: tests/vm/vm-test.sh BUILD_DIR NAME GUEST_SCRIPT [ARGS...]
#   BUILD_DIR     meson build directory (examples/minitarget and libscsitgt.so.0 are staged)
#   NAME          test name (staging directory and log names)
#   GUEST_SCRIPT  run as root in the guest with ARGS; /host holds the staged files:
#                 /host/examples/minitarget, /host/libscsitgt.so.0 (minitarget's RUNPATH is
#                 $ORIGIN/..), /host/guest/*.sh (this directory's guest helpers),
#                 /host/vm/{iser,srp}-guest.sh (which rdma-guest.sh runs), /host/log-replay
#                 (vm/powerloss), /host/out/
#                 (logs the guest script wants to keep)
# Environment: VM_TIMEOUT (default 840 s; meson allows 900), VM_OTHER_BUILD (a second build
#   dir, staged at /host/other/ for comparisons) and the other run-guest.sh variables.
#   IT_TARGET_ARGS and SCSITGT_CONN_WORKERS (or its older name SCSITGT_EXPERIMENTAL_CONN_WORKERS)
#   reach the guest's target as they reach the integration suites' (tests/integration/lib.sh):
#   IT_TARGET_ARGS is appended to ARGS (every guest script ends with the target's arguments),
#   the variables are exported there, e.g.
#     IT_TARGET_ARGS="--workers 2" meson test --suite vm
#   VM_FULL=1 reaches the guest too (rdma-guest.sh: the long versions of its parts).
# Exit status: the guest script's; 77 (meson: skipped) when QEMU or the guest image cannot be
# had on this host, with the reason on stderr.
set -uo pipefail

[ $# -ge 3 ] || { sed -n '2,/^set -uo/p' "$0" | sed '$d;s/^# \{0,1\}//' >&2; exit 2; }
BUILD=$(cd "$1" && pwd) || exit 2
NAME=$2
SCRIPT=$3
shift 3
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:$PATH
export VM_TIMEOUT=${VM_TIMEOUT:-840}

skip() {
	echo "SKIP: $*" >&2
	exit 77
}
command -v qemu-system-x86_64 > /dev/null ||
	skip "qemu-system-x86_64 is not installed (scripts/install-deps.sh installs qemu-system-x86)"
[ -x "$BUILD/examples/minitarget" ] || skip "$BUILD/examples/minitarget not built (-Dexamples=false)"

t0=$(date +%s)
"$HERE/build-image.sh" 2> "$BUILD/tests/vm-$NAME-image.log"
rc=$?
case $rc in
0) ;;
3) skip "the guest image cannot be built here: $(tail -n 1 "$BUILD/tests/vm-$NAME-image.log")" ;;
*)
	cat "$BUILD/tests/vm-$NAME-image.log" >&2
	echo "vm-test: build-image.sh failed ($rc)" >&2
	exit 1
	;;
esac
echo "vm-test: image ready in $(($(date +%s) - t0)) s" >&2

STAGE=$BUILD/tests/vm-stage-$NAME
rm -rf "$STAGE"
mkdir -p "$STAGE/examples" "$STAGE/guest" "$STAGE/vm" "$STAGE/out"
cp -L "$BUILD/examples/minitarget" "$STAGE/examples/"
cp -L "$BUILD/libscsitgt.so.0" "$STAGE/"
cp "$HERE"/guest/*.sh "$STAGE/guest/"
cp "$HERE/iser-guest.sh" "$HERE/srp-guest.sh" "$STAGE/vm/"
# vm/powerloss's dm-log-writes replayer (tests/vm/log-replay.c), at /host/log-replay.
[ -x "$BUILD/tests/vm/log-replay" ] && cp "$BUILD/tests/vm/log-replay" "$STAGE/"
if [ -n "${VM_OTHER_BUILD:-}" ]; then
	# A second build (e.g. of an older commit) for comparisons, at /host/other/.
	mkdir -p "$STAGE/other/examples"
	cp -L "$VM_OTHER_BUILD/examples/minitarget" "$STAGE/other/examples/"
	cp -L "$VM_OTHER_BUILD/libscsitgt.so.0" "$STAGE/other/"
fi
for v in SCSITGT_CONN_WORKERS SCSITGT_EXPERIMENTAL_CONN_WORKERS VM_FULL; do
	[ -n "${!v:-}" ] && export VM_ENV="${VM_ENV:-} $v=${!v}"
done
# shellcheck disable=SC2086 # IT_TARGET_ARGS is a command line
VM_SHARE=$STAGE "$HERE/run-guest.sh" "$SCRIPT" "$@" ${IT_TARGET_ARGS:-}
rc=$?
[ -n "$(ls -A "$STAGE/out")" ] && echo "vm-test: guest logs in $STAGE/out" >&2
exit $rc
