#!/bin/bash
# hostile.sh MINITARGET READBACK - hostile-client tests (hostile.py): malformed and oversized
# PDUs before and after login, broken Data-Out sequences, CmdSN outside the window, unknown
# opcodes, huge pings, cut connections, idle and dribbling connections, login/logout churn.
# After each attack the target must still run, keep its memory bounded and serve a normal
# initiator (iscsi-readcapacity16, qemu-io, iscsi_readback). It must also still stop cleanly.
# Extra arguments go to hostile.py (e.g. --only nop_big,unknown_opcodes, or --bugs).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
it_init "${1:-}"
READBACK=${2:-}
[[ -x "$READBACK" ]] || it_fail "usage: $0 MINITARGET ISCSI_READBACK [hostile.py options]"
shift 2
it_need python3 iscsi-readcapacity16 qemu-io qemu-img
# qemu's iSCSI support lives in a module (Debian: qemu-block-extra).
qemu-img --help 2>/dev/null | grep -Eq '^Supported formats:.* iscsi( |$)' ||
	it_skip "qemu has no iscsi driver (install qemu-block-extra)"

# glibc fills every block it hands out, so VmRSS counts what the target allocates, not only
# what it happened to touch (meson test sets this too, with a random byte).
export MALLOC_PERTURB_=${MALLOC_PERTURB_:-165}
# A fixed mmap threshold (glibc raises it after freeing a big block, and then keeps freed
# buffers in the heap): blocks from 128 KiB on go back to the system when freed, so VmRSS after
# an attack shows what the target still holds rather than what the allocator kept.
export MALLOC_MMAP_THRESHOLD_=${MALLOC_MMAP_THRESHOLD_:-131072}
# Under AddressSanitizer, freed buffers wait in a quarantine (256 MiB by default) that would
# count against the memory bound; keep it small.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=16"

# A 5 s login timeout (default 15 s): the idle and half-header connections go sooner; the
# bound hostile.py allows for it keeps a wide margin for slow (sanitizer, valgrind) runs.
it_start --lun 0:ram:64M --login-timeout 5000
st=0
python3 "$(dirname "$0")/hostile.py" --pid "$IT_PID" --url "${IT_URLS[0]}" \
	--readback "$READBACK" --login-timeout-bound 30 "$@" || st=$?
it_alive || it_fail "the target is gone"
[[ $st -eq 0 ]] || it_fail "hostile.py failed (status $st)"
st=0
it_stop || st=$?
[[ $st -eq 0 ]] || it_fail "the target exited with status $st after the attacks"
it_log "ok: the target survived every attack and stopped cleanly"
