#!/bin/bash
# file_lun.sh MINITARGET - a LUN on a regular file through the aio backend: bytes written over
# iSCSI are the file's bytes, UNMAP punches holes in the file (SBC-4 §5.30), and GET LBA STATUS
# (SBC-4 §5.17, read by qemu-img map) agrees with the file's holes. Then durability: FUA writes
# and writes followed by SYNCHRONIZE CACHE, acknowledged to qemu-io, are in the file after the
# target is killed with SIGKILL (buffered mode, where they could sit in our process otherwise).
# FILE_LUN_ENGINE=auto|libaio|io_uring picks the backend's I/O engine (io_engine=; meson runs
# the test once per engine).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
it_init "${1:-}"
it_need qemu-img qemu-io python3 cmp stat
engine=${FILE_LUN_ENGINE:-auto}

img="$IT_TMP/backing.img"
truncate -s 64M "$img"
# -v: the checks read the aio backend's info lines (minitarget prints them only with -v).
it_start -v --lun "0:file:$img,thin,io_engine=$engine"
url=${IT_URLS[0]}
if [[ "$engine" != auto ]]; then
	grep -q "file, $engine," "$IT_TMP/target.err" || {
		it_dump_logs
		it_fail "the file LUN does not use the $engine engine"
	}
fi

# 16 MiB of random data at LBA 0, written by qemu's iSCSI driver.
head -c 16M /dev/urandom >"$IT_TMP/src.img"
qemu-img convert -n -f raw -O raw "$IT_TMP/src.img" "$url" || it_fail "qemu-img convert to $url"
cmp -n 16777216 "$IT_TMP/src.img" "$img" || it_fail "the file does not hold the bytes written"
blocks_before=$(stat -c %b "$img")

# Discard the first 8 MiB: UNMAP, which the backend turns into a punched hole.
qemu-io -f raw -c "discard 0 8M" "$url" >/dev/null || it_fail "qemu-io discard"
blocks_after=$(stat -c %b "$img")
((blocks_after < blocks_before)) ||
	it_fail "UNMAP did not free file blocks ($blocks_before -> $blocks_after)"
cmp -n 8388608 "$img" /dev/zero || it_fail "the unmapped range does not read as zeros"
cmp -i 8388608:8388608 -n 8388608 "$IT_TMP/src.img" "$img" ||
	it_fail "data after the unmapped range changed"

# GET LBA STATUS: qemu-img map must see [0, 8M) and [16M, 64M) unallocated, [8M, 16M) as data.
qemu-img map -f raw --output=json "$url" >"$IT_TMP/map.json" || it_fail "qemu-img map"
python3 - "$IT_TMP/map.json" <<'PY' || it_fail "GET LBA STATUS disagrees with the file's holes"
import json, sys
M = 1 << 20
data = [(e["start"], e["start"] + e["length"]) for e in json.load(open(sys.argv[1])) if e["data"]]
print("data extents:", data)
covered = sum(min(b, 16 * M) - max(a, 8 * M) for a, b in data if b > 8 * M and a < 16 * M)
outside = sum(b - a for a, b in data) - covered
sys.exit(0 if covered == 8 * M and outside == 0 else 1)
PY

it_stop || it_fail "target exited with status $? on SIGTERM"

# Durability across kill -9, buffered: a FUA write (WRITE (16) with FUA) and a plain write
# followed by SYNCHRONIZE CACHE; once qemu-io returned, the bytes are the file's.
it_start -v --lun "0:file:$img,io_engine=$engine,direct=0"
url=${IT_URLS[0]}
grep -q "buffered I/O" "$IT_TMP/target.err" || it_fail "direct=0 did not give buffered I/O"
qemu-io -f raw -c "write -f -P 0xa5 32M 1M" "$url" >/dev/null || it_fail "qemu-io FUA write"
qemu-io -f raw -c "write -P 0x5a 40M 1M" -c "flush" "$url" >/dev/null ||
	it_fail "qemu-io write + flush"
it_stop KILL || true
python3 - "$img" <<'PY' || it_fail "acknowledged writes are missing after kill -9"
import sys
M = 1 << 20
with open(sys.argv[1], "rb") as f:
    f.seek(32 * M)
    a = f.read(M)
    f.seek(40 * M)
    b = f.read(M)
sys.exit(0 if a == b"\xa5" * M and b == b"\x5a" * M else 1)
PY
it_log "PASS"
