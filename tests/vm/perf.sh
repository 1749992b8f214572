#!/bin/bash
# perf.sh - by hand: fio 4k random read/write at QD 32 and 1 MiB sequential read/write over our
# iSER, our iSCSI/TCP and tgtd's iSER, in one guest (guest/perf.sh; see tests/vm/README.md).
#   tests/vm/perf.sh [BUILD_DIR] [SECONDS]
# The table is printed and kept in BUILD_DIR/tests/vm-stage-perf/out/perf.txt. The guest gets 3 GiB:
# tgtd's iSER wants 1 GiB of huge pages.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BUILD=${1:-build}
SECS=${2:-8}
VM_MEM=${VM_MEM:-3072} VM_TIMEOUT=${VM_TIMEOUT:-900} exec "$HERE/vm-test.sh" "$BUILD" perf "$HERE/guest/perf.sh" \
	/host/examples/minitarget "$SECS"
