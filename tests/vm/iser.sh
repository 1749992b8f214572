#!/bin/bash
# iser.sh - run our iSER target against the Linux kernel iSER initiator (ib_iser) over
# soft-RoCE (rdma_rxe) in a QEMU guest, using an external VM rig. Run by hand; not part of
# `meson test` or CI yet. See tests/vm/README.md.
#
# Usage: tests/vm/iser.sh RIG_DIR [BUILD_DIR]
#   RIG_DIR    the VM rig (run-in-guest.sh, build-image.sh)
#   BUILD_DIR  a meson build dir of this project built with rdma-core (default: ./build)
# Environment: LOG_DIR (default: a new /tmp/iser.XXXXXX), RIG_TIMEOUT (default 480 s) and
#   the rig's own RIG_* variables.
# Exit status: 0 if the guest test passed.
set -uo pipefail

usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d;s/^# \{0,1\}//' >&2; exit 2; }
[ $# -ge 1 ] || usage
case "$1" in -h|--help) usage;; esac
RIG=$(cd "$1" && pwd) || usage
BUILD=$(cd "${2:-build}" && pwd) || { echo "no build dir ${2:-build}" >&2; exit 2; }
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export RIG_TIMEOUT=${RIG_TIMEOUT:-480}
for f in run-in-guest.sh build-image.sh; do
	[ -x "$RIG/$f" ] || { echo "iser: $RIG/$f missing: not a VM rig?" >&2; exit 2; }
done
BIN=tests/unit/iser/iser_target
[ -x "$BUILD/$BIN" ] || {
	echo "iser: $BUILD/$BIN missing (configure with rdma-core and ninja -C $BUILD)" >&2
	exit 2
}
LOG_DIR=${LOG_DIR:-$(mktemp -d /tmp/iser.XXXXXX)}
mkdir -p "$LOG_DIR"
"$RIG/build-image.sh" > "$LOG_DIR/build-image.log" 2>&1 || {
	echo "iser: image build failed, see $LOG_DIR/build-image.log" >&2
	exit 1
}
RIG_SHARE=$BUILD "$RIG/run-in-guest.sh" "$HERE/iser-guest.sh" /host/$BIN \
	--iser 192.0.2.1:3260 --iqn iqn.2026-11.org.libscsitgt:iser --file /tmp/lun0.img \
	2>&1 | tee "$LOG_DIR/guest.log"
rc=${PIPESTATUS[0]}
echo "iser: $([ $rc -eq 0 ] && echo PASS || echo "FAIL ($rc)"), log in $LOG_DIR/guest.log"
exit $rc
