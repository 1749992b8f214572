#!/bin/bash
# iser.sh - by hand: our iSER target (examples/minitarget --iser-portal) against the Linux
# kernel iSER initiator (ib_iser) over soft-RoCE (rdma_rxe) in the vm suite's QEMU guest; the
# same test as `meson test --suite vm iser`, with its log kept. See tests/vm/README.md.
#
# Usage: tests/vm/iser.sh [BUILD_DIR]   (default ./build; it must have found rdma-core)
# Environment: LOG_DIR (default: a new /tmp/iser.XXXXXX), VM_TIMEOUT (default 600 s),
#   ISER_DEBUG=2 (ib_iser debug_level), VM_KEEP=1 and the other run-guest.sh variables.
# Exit status: 0 if the guest test passed; 77 when QEMU or the guest image cannot be had.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BUILD=$(cd "${1:-build}" && pwd) || { echo "iser: no build dir ${1:-build}" >&2; exit 2; }
LOG_DIR=${LOG_DIR:-$(mktemp -d /tmp/iser.XXXXXX)}
export VM_TIMEOUT=${VM_TIMEOUT:-600}
[ -n "${ISER_DEBUG:-}" ] && export VM_ENV="${VM_ENV:-} ISER_DEBUG=$ISER_DEBUG"
mkdir -p "$LOG_DIR"
"$HERE/vm-test.sh" "$BUILD" iser "$HERE/iser-guest.sh" /host/examples/minitarget \
	--iser-portal 192.0.2.1:3260 --lun 0:file:/tmp/lun0.img 2>&1 | tee "$LOG_DIR/guest.log"
rc=${PIPESTATUS[0]}
echo "iser: $([ "$rc" -eq 0 ] && echo PASS || echo "FAIL ($rc)"), log in $LOG_DIR/guest.log"
exit "$rc"
