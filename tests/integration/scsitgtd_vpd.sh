#!/bin/bash
# scsitgtd_vpd.sh SCSITGTD CLIENT - a [lun N]'s Block Limits and designator keys
# (docs/scsitgtd.md) as an initiator sees them: libiscsi's iscsi-inq reads the Block Limits VPD
# page (B0h, SBC-4 §6.6.4) with the configured MAXIMUM TRANSFER LENGTH; the Device
# Identification page (83h, SPC-5 §7.7.6), read raw by a libiscsi client (scsitgtd_client.c:
# iscsi-inq prints binary designators as raw characters), carries the configured UUID
# (designator type 0Ah) and NAA type 6 designator; a reload with other values re-creates the
# LUN and the pages follow.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
it_init "${1:-}"
CLIENT=${2:-}
[[ -x "$CLIENT" ]] || it_fail "usage: scsitgtd_vpd.sh SCSITGTD SCSITGTD_CLIENT"
it_need iscsi-inq python3

IQN=iqn.2026-12.org.example:vpd
CONF=$IT_TMP/scsitgtd.conf
PORT=$(it_free_port)

# write_conf MAX_TRANSFER UUID NAA
write_conf() {
	cat >"$CONF" <<CONF
[engine]
log_level = info

[portal]
address = 127.0.0.1
port = $PORT

[target]
name = $IQN

[lun 0]
backend = ram
size = 8M
max_transfer_blocks = $1
optimal_transfer_blocks = 64
uuid = $2
naa_extended = $3
CONF
}

# check MAX_TRANSFER UUID NAA: what an initiator reads from both pages.
check() {
	local url="iscsi://127.0.0.1:$PORT/$IQN/0" bl id
	local uuid_hex=${2//-/}

	bl=$(iscsi-inq -e 1 -c 176 "$url") || it_fail "iscsi-inq Block Limits page failed"
	grep -E -q -i "maximum transfer length: *$1\$" <<<"$bl" ||
		it_fail "Block Limits page: no maximum transfer length $1 in: $bl"
	grep -E -q -i "optimal transfer length: *64\$" <<<"$bl" ||
		it_fail "Block Limits page: no optimal transfer length 64 in: $bl"
	it_ask vpd 0 131
	[[ "$ANSWER" == vpd* ]] || it_fail "INQUIRY VPD 83h: $ANSWER"
	id=${ANSWER#vpd }
	# Designation descriptors (SPC-5 §7.7.6.1): code set binary, LU association; type 0Ah
	# (UUID) of length 18: UUID TYPE 1h, a reserved byte, the UUID (§7.7.6.12); type 3 (NAA)
	# of length 16 carrying the type 6 name.
	[[ "$id" == *"010a00121000$uuid_hex"* ]] ||
		it_fail "Device Identification page: no UUID designator $2 in: $id"
	[[ "$id" == *"01030010$3"* ]] ||
		it_fail "Device Identification page: no NAA type 6 designator $3 in: $id"
	it_log "ok: B0h maximum transfer length $1, 83h UUID $2 and NAA $3"
}

write_conf 256 123e4567-e89b-42d3-a456-426614174000 6001405123456789abcdef0123456789
"$IT_TARGET" -t "$CONF" >/dev/null || it_fail "scsitgtd -t refused the file"
it_scsitgtd_start "$CONF"
it_client_start "$CLIENT" "iscsi://127.0.0.1:$PORT/$IQN/0"
check 256 123e4567-e89b-42d3-a456-426614174000 6001405123456789abcdef0123456789

# A changed value re-creates the LUN: the pages follow the reload.
write_conf 1024 9b2c1a4e-0f3d-4e5a-8b6c-7d8e9f0a1b2c 6001405fedcba98765432100aabbccdd
it_reload
check 1024 9b2c1a4e-0f3d-4e5a-8b6c-7d8e9f0a1b2c 6001405fedcba98765432100aabbccdd

# What the library refuses is refused with FILE:LINE (the optimal length above the maximum).
write_conf 32 9b2c1a4e-0f3d-4e5a-8b6c-7d8e9f0a1b2c 6001405fedcba98765432100aabbccdd
if "$IT_TARGET" -t "$CONF" 2>"$IT_TMP/bad.err" >/dev/null; then
	it_fail "scsitgtd -t accepted optimal_transfer_blocks above max_transfer_blocks"
fi
grep -q "scsitgtd.conf:11: \[lun 0\]: optimal_transfer_blocks above" "$IT_TMP/bad.err" ||
	it_fail "no FILE:LINE message in: $(cat "$IT_TMP/bad.err")"
it_log "ok: a contradiction refused at FILE:LINE"

it_ask quit
it_stop || it_fail "scsitgtd did not stop cleanly"
