#!/bin/bash
# xcopy.sh MINITARGET XCOPY_CLIENT - EXTENDED COPY (SPC-4 §6.4) between two LUNs of one target
# over iSCSI (xcopy_client.c on libiscsi): 512-byte LUNs 0 and 1, data verified by reading back.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
it_init "${1:-}"
CLIENT=${2:-}
[[ -x "$CLIENT" ]] || it_skip "no xcopy_client"

it_start --lun 0:ram:16M --lun 1:ram:16M
"$CLIENT" "${IT_URLS[0]}" "${IT_URLS[1]}" || it_fail "xcopy_client failed"
# The other way round: the copy manager is the destination LUN this time.
"$CLIENT" "${IT_URLS[1]}" "${IT_URLS[0]}" || it_fail "xcopy_client (reversed) failed"

it_stop || it_fail "target exited with status $? on SIGTERM"
it_log "PASS"
