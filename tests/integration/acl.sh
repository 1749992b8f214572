#!/bin/bash
# acl.sh MINITARGET - access control seen by real initiators (libiscsi's iscsi-ls, iscsi-inq,
# iscsi-readcapacity16) and by raw logins that choose their source address (acl_client.py):
# initiator names, LUN masking (REPORT LUNS, refused commands, INQUIRY peripheral qualifier),
# discovery showing only what the initiator may log in to, and source-address ranges
# (127.0.0.1 against 127.0.0.2: Linux routes all of 127/8 to the loopback interface, so a
# socket bound to 127.0.0.2 reaches the portal on 127.0.0.1 with that source address).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
it_init "${1:-}"
it_need iscsi-ls iscsi-inq iscsi-readcapacity16 python3
CLIENT="$(dirname "$0")/acl_client.py"

A=iqn.2026-11.org.libscsitgt:acl-a
B=iqn.2026-11.org.libscsitgt:acl-b
C=iqn.2026-11.org.libscsitgt:acl-c

# Can this host use 127.0.0.2 as a source address? (Some containers only have 127.0.0.1.)
python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.2", 0))' 2>/dev/null ||
	it_skip "cannot bind 127.0.0.2"

# luns NAME: the LUN numbers iscsi-ls -s lists for initiator NAME, space-separated.
luns() {
	iscsi-ls -s -i "$1" "$(it_portal_url)" 2>/dev/null |
		sed -n 's/^[[:space:]]*Lun:\([0-9]*\).*/\1/p' | sort -n | tr '\n' ' '
}

# targets NAME: the targets iscsi-ls lists for NAME (discovery, SendTargets=All).
targets() {
	iscsi-ls -i "$1" "$(it_portal_url)" 2>/dev/null | sed -n 's/^Target:\([^ ]*\).*/\1/p'
}

expect_eq() {
	[[ "$1" == "$2" ]] || it_fail "$3: got '$1', want '$2'"
	it_log "ok: $3"
}

# --- initiator names ---
it_start --lun 0:ram:16M --initiator "$A"
iqn=$(it_iqn "${IT_URLS[0]}")
expect_eq "$(targets "$A")" "$iqn" "discovery lists the target to an allowed initiator"
expect_eq "$(targets "$B")" "" "discovery hides the target from another initiator"
iscsi-inq -i "$A" "${IT_URLS[0]}" >/dev/null || it_fail "allowed initiator refused"
if iscsi-inq -i "$B" "${IT_URLS[0]}" >/dev/null 2>&1; then
	it_fail "initiator not on the list logged in"
fi
out=$(python3 "$CLIENT" login --port "$IT_PORT" --iqn "$iqn" --initiator "$B" || true)
expect_eq "$out" "refused 0x0202" "login of an unlisted initiator: authorization failure"
it_alive || it_fail "target died"
it_stop || it_fail "target exited with status $?"

# --- LUN masking: A sees 0 and 2, B sees 1, everyone sees 3 ---
it_start --lun 0:ram:16M --lun 1:ram:16M --lun 2:ram:16M --lun 3:ram:16M \
	--map "$A:0" --map "$A:2" --map "$B:1" --map "*:3"
base=${IT_URLS[0]%/*}
iqn=$(it_iqn "${IT_URLS[0]}")
# REPORT LUNS itself (raw), then what libiscsi's iscsi-ls makes of it.
rl() {
	python3 "$CLIENT" luns --port "$IT_PORT" --iqn "$iqn" --initiator "$1"
}
expect_eq "$(rl "$A")" "0 2 3" "REPORT LUNS of A"
expect_eq "$(rl "$B")" "1 3" "REPORT LUNS of B"
expect_eq "$(rl "$C")" "3" "REPORT LUNS of an initiator with no mapping of its own"
expect_eq "$(luns "$A")" "0 2 3 " "iscsi-ls -s of A"
expect_eq "$(luns "$B")" "1 3 " "iscsi-ls -s of B"
iscsi-readcapacity16 -i "$A" "$base/2" >/dev/null || it_fail "A cannot use its LUN 2"
iscsi-readcapacity16 -i "$B" "$base/1" >/dev/null || it_fail "B cannot use its LUN 1"
iscsi-readcapacity16 -i "$C" "$base/3" >/dev/null || it_fail "C cannot use the shared LUN 3"
for pair in "$A 1" "$B 0" "$B 2" "$C 0"; do
	read -r who lun <<<"$pair"
	if out=$(iscsi-readcapacity16 -i "$who" "$base/$lun" 2>&1); then
		it_fail "$who read the capacity of masked LUN $lun"
	fi
	grep -q "LOGICAL_UNIT_NOT_SUPPORTED" <<<"$out" ||
		it_fail "$who on masked LUN $lun: unexpected error: $out"
done
it_log "ok: masked LUNs refuse commands (LOGICAL UNIT NOT SUPPORTED)"
# libiscsi's connect runs TEST UNIT READY on the LUN of the URL, so a masked LUN fails the
# connection itself; the peripheral qualifier of a masked LUN is checked by test_core_acl.
out=$(iscsi-inq -i "$B" "$base/2" 2>&1 || true)
grep -q "LOGICAL_UNIT_NOT_SUPPORTED" <<<"$out" || it_fail "INQUIRY through a masked LUN: $out"
out=$(iscsi-inq -i "$B" "$base/1" 2>&1)
grep -q "Peripheral Qualifier:CONNECTED" <<<"$out" || it_fail "INQUIRY of a mapped LUN: $out"
it_log "ok: INQUIRY peripheral qualifier of masked and mapped LUNs"
it_alive || it_fail "target died"
it_stop || it_fail "target exited with status $?"

# --- source addresses: only 127.0.0.2 may log in ---
it_start --lun 0:ram:16M --acl-address 127.0.0.2/32
iqn=$(it_iqn "${IT_URLS[0]}")
if iscsi-inq -i "$A" "${IT_URLS[0]}" >/dev/null 2>&1; then
	it_fail "libiscsi from 127.0.0.1 logged in past --acl-address 127.0.0.2/32"
fi
expect_eq "$(targets "$A")" "" "discovery from 127.0.0.1 hides the target"
out=$(python3 "$CLIENT" login --port "$IT_PORT" --iqn "$iqn" --initiator "$A" --src 127.0.0.1 ||
	true)
expect_eq "$out" "refused 0x0202" "raw login from 127.0.0.1 refused"
out=$(python3 "$CLIENT" login --port "$IT_PORT" --iqn "$iqn" --initiator "$A" --src 127.0.0.2)
expect_eq "$out" "ok" "raw login from 127.0.0.2 accepted"
out=$(python3 "$CLIENT" discover --port "$IT_PORT" --initiator "$A" --src 127.0.0.2)
expect_eq "$out" "$iqn" "discovery from 127.0.0.2 lists the target"
out=$(python3 "$CLIENT" discover --port "$IT_PORT" --initiator "$A" --src 127.0.0.1)
expect_eq "$out" "" "discovery from 127.0.0.1 (raw) lists nothing"
it_stop || it_fail "target exited with status $?"

# --- per-initiator ranges: A only from 127.0.0.2, B from anywhere ---
it_start --lun 0:ram:16M --initiator-address "$A=127.0.0.2" --acl-address 127.0.0.0/8
iqn=$(it_iqn "${IT_URLS[0]}")
out=$(python3 "$CLIENT" login --port "$IT_PORT" --iqn "$iqn" --initiator "$A" --src 127.0.0.1 ||
	true)
expect_eq "$out" "refused 0x0202" "A from 127.0.0.1 refused"
out=$(python3 "$CLIENT" login --port "$IT_PORT" --iqn "$iqn" --initiator "$A" --src 127.0.0.2)
expect_eq "$out" "ok" "A from 127.0.0.2 accepted"
iscsi-inq -i "$B" "${IT_URLS[0]}" >/dev/null || it_fail "B from 127.0.0.1 refused"
it_log "ok: B from 127.0.0.1 accepted (libiscsi)"
expect_eq "$(targets "$A")" "" "discovery hides the target from A at 127.0.0.1"
expect_eq "$(targets "$B")" "$iqn" "discovery lists the target to B at 127.0.0.1"
it_stop || it_fail "target exited with status $?"
it_log "PASS"
