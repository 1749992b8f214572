#!/bin/bash
# discovery.sh MINITARGET - SendTargets discovery (RFC 7143 §12.3, Appendix C) with iscsi-ls:
# the target name, its portal and every LUN with its type and size must be listed.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
it_init "${1:-}"
it_need iscsi-ls python3

IQN=iqn.2026-11.org.libscsitgt:it-discovery
it_start --iqn "$IQN" --lun 0:ram:64M --lun 1:null:1G
[[ ${#IT_URLS[@]} -eq 2 ]] || it_fail "expected 2 URL lines, got ${#IT_URLS[@]}"
[[ "$(it_iqn "${IT_URLS[0]}")" == "$IQN" ]] || it_fail "URL ${IT_URLS[0]} does not name $IQN"

out=$(iscsi-ls -s "$(it_portal_url)") || it_fail "iscsi-ls failed"
echo "$out"
grep -q "^Target:$IQN Portal:$IT_PORTAL," <<<"$out" ||
	it_fail "discovery does not list $IQN at $IT_PORTAL"
l0=$(it_lun "${IT_URLS[0]}")
l1=$(it_lun "${IT_URLS[1]}")
grep -Eq "^Lun:$l0 +Type:DIRECT_ACCESS \(Size:6[34]M\)" <<<"$out" ||
	it_fail "LUN $l0 (64 MiB RAM disk) missing or wrong in the listing"
grep -Eq "^Lun:$l1 +Type:DIRECT_ACCESS \(Size:10(23|24)M\)" <<<"$out" ||
	it_fail "LUN $l1 (1 GiB null disk) missing or wrong in the listing"

# Discovery without -s (no login to the target) lists the same target.
out=$(iscsi-ls "$(it_portal_url)") || it_fail "iscsi-ls (no -s) failed"
grep -q "^Target:$IQN Portal:$IT_PORTAL," <<<"$out" || it_fail "plain discovery lost $IQN"

it_stop || it_fail "target exited with status $? on SIGTERM"
it_log "PASS"
