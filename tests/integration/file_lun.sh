#!/bin/bash
# file_lun.sh MINITARGET - a LUN on a regular file through the libaio backend: bytes written over
# iSCSI are the file's bytes, UNMAP punches holes in the file (SBC-4 §5.30), and GET LBA STATUS
# (SBC-4 §5.17, read by qemu-img map) agrees with the file's holes.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
it_init "${1:-}"
it_need qemu-img qemu-io python3 cmp stat

img="$IT_TMP/backing.img"
truncate -s 64M "$img"
it_start --lun "0:file:$img,thin"
url=${IT_URLS[0]}

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
it_log "PASS"
