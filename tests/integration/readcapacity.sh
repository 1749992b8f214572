#!/bin/bash
# readcapacity.sh MINITARGET - READ CAPACITY(16) (SBC-4 §5.20) reports the configured size,
# block size and provisioning for 512-byte, 4096-byte and thin LUNs.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
it_init "${1:-}"
it_need iscsi-readcapacity16 python3

it_start --lun 0:ram:64M --lun 1:ram:64M,bs=4096 --lun 2:null:3G,thin

check() {
	local url=$1 last_lba=$2 bs=$3 lbpme=$4 out
	out=$(iscsi-readcapacity16 "$url") || it_fail "iscsi-readcapacity16 $url failed"
	echo "$out"
	grep -q "^RETURNED LOGICAL BLOCK ADDRESS:$last_lba\$" <<<"$out" ||
		it_fail "$url: last LBA is not $last_lba"
	grep -q "^LOGICAL BLOCK LENGTH IN BYTES:$bs\$" <<<"$out" ||
		it_fail "$url: block length is not $bs"
	grep -q "^LBPME:$lbpme " <<<"$out" || it_fail "$url: LBPME is not $lbpme"
	grep -q "^Total size:$(((last_lba + 1) * bs))\$" <<<"$out" || it_fail "$url: wrong total size"
	out=$(iscsi-readcapacity16 -s "$url") || it_fail "iscsi-readcapacity16 -s $url failed"
	[[ "$out" == "$(((last_lba + 1) * bs))" ]] || it_fail "$url: -s printed '$out'"
}

check "${IT_URLS[0]}" $((64 * 1024 * 1024 / 512 - 1)) 512 0
check "${IT_URLS[1]}" $((64 * 1024 * 1024 / 4096 - 1)) 4096 0
check "${IT_URLS[2]}" $((3 * 1024 * 1024 * 1024 / 512 - 1)) 512 1

it_stop || it_fail "target exited with status $? on SIGTERM"
it_log "PASS"
