#!/bin/bash
# integrity.sh MINITARGET READBACK [digest] - data integrity through two different initiators:
# qemu-img (its libiscsi block driver) writes a 64 MiB random image, iscsi_readback (plain
# READ(16) commands) and qemu-img read it back, and the SHA-256 sums must match. Then qemu-io
# writes patterns at unaligned byte offsets (read-modify-write on the target) and the whole LUN
# is compared again. LUN 1 has 4096-byte blocks.
# With "digest", both initiators negotiate HeaderDigest=CRC32C (RFC 7143 §13.1). libiscsi
# offers DataDigest=None only, so data digests are not reachable from these initiators.
# With "workers", the target runs on two worker threads with socket workers only (--workers 2
# --conn-workers 0, the engine option's opt-out of docs/threading.md).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
it_init "${1:-}"
READBACK=${2:-}
MODE=${3:-plain}
[[ -x "$READBACK" ]] || it_fail "usage: $0 MINITARGET ISCSI_READBACK [digest|workers]"
it_need qemu-img sha256sum python3

# qemu-img's iSCSI support lives in a module (Debian: qemu-block-extra).
qemu-img --help 2>/dev/null | grep -Eq '^Supported formats:.* iscsi( |$)' ||
	it_skip "qemu-img has no iscsi driver (install qemu-block-extra)"

SIZE=$((64 * 1024 * 1024))
target_args=()
[[ "$MODE" == workers ]] && target_args=(--workers 2 --conn-workers 0)
it_start "${target_args[@]}" --lun 0:ram:64M --lun 1:ram:64M,bs=4096
iqn=$(it_iqn "${IT_URLS[0]}")

if [[ "$MODE" == digest ]]; then
	query='?header_digest=crc32c'
	qdigest=',header-digest=crc32c'
else
	query=''
	qdigest=''
fi

# libiscsi accepts a target's HeaderDigest=None even when it offered only CRC32C, so a login
# proves nothing: capture the target's login responses and check what it really chose.
readback_page() {
	"$READBACK" "${IT_URLS[0]}$query" 4096 >/dev/null
}
if [[ "$MODE" == digest ]]; then
	it_capture_until readback_page
fi

# qemu-img target description for a LUN, with --target-image-opts so that options like
# header-digest can be given.
qopts() {
	echo "driver=iscsi,transport=tcp,portal=$IT_PORTAL,target=$iqn,lun=$1,initiator-name=iqn.2026-11.org.libscsitgt:qemu$qdigest"
}

img=$IT_TMP/random.img
head -c "$SIZE" /dev/urandom >"$img"
want=$(sha256sum <"$img" | cut -d' ' -f1)

for url in "${IT_URLS[@]}"; do
	lun=$(it_lun "$url")
	it_log "LUN $lun: writing $SIZE random bytes with qemu-img ($MODE)"
	qemu-img convert -n -f raw --target-image-opts "$img" "$(qopts "$lun")" ||
		it_fail "qemu-img convert to LUN $lun failed"
	it_alive || it_fail "target died during the write"

	it_log "LUN $lun: reading back with iscsi_readback"
	"$READBACK" -o "$IT_TMP/back.img" "$url$query" "$SIZE" || it_fail "readback of LUN $lun failed"
	got=$(sha256sum <"$IT_TMP/back.img" | cut -d' ' -f1)
	[[ "$got" == "$want" ]] || it_fail "LUN $lun: read back $got, wrote $want"

	# Read back through qemu-img too, in the other direction, in 3 MiB pieces of its choice.
	qemu-img convert --image-opts "$(qopts "$lun")" -O raw "$IT_TMP/back2.img" ||
		it_fail "qemu-img convert from LUN $lun failed"
	got=$(sha256sum <"$IT_TMP/back2.img" | cut -d' ' -f1)
	[[ "$got" == "$want" ]] || it_fail "LUN $lun: qemu-img read back $got, wrote $want"
	rm -f "$IT_TMP/back.img" "$IT_TMP/back2.img"
done

# Unaligned writes: qemu-io writes patterns at byte offsets that are not block aligned, so
# qemu's block layer does read-modify-write cycles against the target (4 KiB ones on LUN 1).
# The same patterns applied to the local copy give the expected image.
if command -v qemu-io >/dev/null 2>&1; then
	writes=("0xa5 1000 3000" "0x5a 4095 2" "0x3c 1048575 70001" "0xc3 $((SIZE - 513)) 513")
	for url in "${IT_URLS[@]}"; do
		lun=$(it_lun "$url")
		cmds=()
		for w in "${writes[@]}"; do
			read -r pat off len <<<"$w"
			cmds+=(-c "write -P $pat $off $len")
		done
		it_log "LUN $lun: ${#writes[@]} unaligned writes with qemu-io"
		qemu-io --image-opts "$(qopts "$lun")" "${cmds[@]}" >"$IT_TMP/qemu-io.log" ||
			it_fail "qemu-io on LUN $lun failed: $(cat "$IT_TMP/qemu-io.log")"
		it_alive || it_fail "target died during the unaligned writes"
	done
	python3 - "$img" "${writes[@]}" <<'PY'
import sys
path = sys.argv[1]
with open(path, "r+b") as f:
    for w in sys.argv[2:]:
        pat, off, length = w.split()
        f.seek(int(off))
        f.write(bytes([int(pat, 16)]) * int(length))
PY
	want=$(sha256sum <"$img" | cut -d' ' -f1)
	for url in "${IT_URLS[@]}"; do
		"$READBACK" -c 65536 -o "$IT_TMP/back.img" "$url$query" || it_fail "readback failed"
		got=$(sha256sum <"$IT_TMP/back.img" | cut -d' ' -f1)
		[[ "$got" == "$want" ]] ||
			it_fail "LUN $(it_lun "$url"): after unaligned writes read $got, expected $want"
	done
else
	it_log "qemu-io not installed: unaligned writes not tested"
fi

if [[ "$MODE" == digest ]]; then
	it_capture_stop
	answers=$(it_sent_values HeaderDigest)
	it_log "target's HeaderDigest answers: $(sort <<<"$answers" | uniq -c | tr '\n' ' ')"
	[[ -n "$answers" ]] || it_fail "no login response captured"
	if grep -qv '^CRC32C$' <<<"$answers"; then
		it_fail "the target answered HeaderDigest other than CRC32C to a CRC32C-only offer"
	fi
fi

it_stop || it_fail "target exited with status $? on SIGTERM"
it_log "PASS"
