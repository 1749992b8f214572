#!/bin/bash
# inquiry.sh MINITARGET - standard INQUIRY and the VPD pages (SPC-5 §6.7, §7.8; SBC-4 §6.6)
# through iscsi-inq: every page the target lists in page 0x00 must be readable, the pages
# an SBC disk needs must be there, and two LUNs must not share identifiers.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
it_init "${1:-}"
it_need iscsi-inq python3

it_start --lun 0:ram:64M --lun 1:ram:64M,thin
u0=${IT_URLS[0]}
u1=${IT_URLS[1]}

inq() {
	iscsi-inq "$@" 2>&1 || it_fail "iscsi-inq $* failed"
}

std=$(inq "$u0")
echo "$std"
grep -q '^Peripheral Device Type:DIRECT_ACCESS' <<<"$std" || it_fail "not a DIRECT_ACCESS device"
grep -Eq '^Vendor:[[:graph:]]' <<<"$std" || it_fail "empty T10 vendor identification"
grep -Eq '^Product:[[:graph:]]' <<<"$std" || it_fail "empty product identification"
grep -Eq '^Revision:[[:graph:]]' <<<"$std" || it_fail "empty product revision level"
grep -q '^Removable:0' <<<"$std" || it_fail "a fixed RAM disk claims removable media"

for u in "$u0" "$u1"; do
	pages=$(inq -e 1 -c 0 "$u")
	echo "$pages"
	# SBC-4 §6.6.1: an SBC device supports these; 0xb2 only with logical block provisioning.
	need=(0x80 0x83 0xb0 0xb1)
	[[ "$u" == "$u1" ]] && need+=(0xb2)
	for p in "${need[@]}"; do
		grep -qi "^Page:$p " <<<"$pages" || it_fail "VPD page $p not listed for $u"
	done
	for p in $(sed -n 's/^Page:\(0x[0-9a-fA-F]*\) .*/\1/p' <<<"$pages"); do
		# libiscsi 1.19 decodes only these pages ("failed to unmarshall" for others, e.g.
		# 0x86 extended INQUIRY); the unit tests check the rest byte by byte.
		case $p in
		0x00 | 0x80 | 0x83 | 0xb0 | 0xb1 | 0xb2) ;;
		*)
			it_log "VPD page $p: listed; iscsi-inq 1.19 cannot decode it"
			continue
			;;
		esac
		out=$(inq -e 1 -c $((p)) "$u")
		[[ -n "$out" ]] || it_fail "VPD page $p of $u is empty"
		echo "--- page $p"
		echo "$out"
	done
done

serial() {
	inq -e 1 -c 128 "$1" | sed -n 's/^Unit Serial Number:\[ *\(.*\)\]$/\1/p'
}
s0=$(serial "$u0")
s1=$(serial "$u1")
[[ -n "$s0" && -n "$s1" ]] || it_fail "empty unit serial number"
[[ "$s0" != "$s1" ]] || it_fail "two LUNs share the serial number $s0"

ids() {
	# The designators of the logical unit itself (association 0), one per line.
	inq -e 1 -c 131 "$1" | awk '/^Association:/ { lu = ($0 ~ /LOGICAL_UNIT/) }
		/^Designator:/ && lu { print }'
}
i0=$(ids "$u0")
i1=$(ids "$u1")
[[ -n "$i0" ]] || it_fail "no logical-unit designator in VPD page 0x83"
[[ "$i0" != "$i1" ]] || it_fail "two LUNs share their device identifiers"

bl=$(inq -e 1 -c 176 "$u0")
grep -q '^maximum transfer length:' <<<"$bl" || it_fail "block limits page not decoded"

lbp=$(inq -e 1 -c 178 "$u1")
# SBC-4 §4.7.3.1: a thin provisioned logical unit supports at least one way to unmap:
# UNMAP (LBPU), WRITE SAME(16) with UNMAP (LBPWS) or WRITE SAME(10) with UNMAP (LBPWS10).
grep -Eq '^(lbpu|lbpws|lbpws10):1' <<<"$lbp" ||
	it_fail "thin LUN reports no unmap command (LBPU, LBPWS, LBPWS10 all 0) in page 0xb2"
grep -q '^provisioning type:2' <<<"$lbp" || it_fail "thin LUN does not report thin provisioning"

it_stop || it_fail "target exited with status $? on SIGTERM"
it_log "PASS"
