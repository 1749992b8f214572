#!/usr/bin/env bash
# pr_aptpl.sh MINITARGET PR_CLIENT: persistent reservations that persist through power loss.
#
# minitarget keeps each LUN's reservation state in a file (--pr-dir, the library's default file
# store). Two initiators register, one with APTPL (SPC-5 §5.13.5) and takes a WRITE EXCLUSIVE
# reservation; after minitarget restarts, READ KEYS lists both keys and READ RESERVATION the
# reservation. The APTPL bit of the latest registration decides for the whole LUN (SPC-5
# §5.13.5): after a third initiator registers without it, a restart keeps nothing.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
it_init "$1"
CLIENT=${2:?usage: pr_aptpl.sh MINITARGET PR_CLIENT}
PRDIR=$IT_TMP/pr
mkdir -p "$PRDIR"

IQN_A=iqn.2026-11.org.libscsitgt:pr-a
IQN_B=iqn.2026-11.org.libscsitgt:pr-b

start() {
	it_start --iqn iqn.2026-11.org.libscsitgt:aptpl --lun 0:ram:16M --pr-dir "$PRDIR"
	URL=${IT_URLS[0]}
}

start
"$CLIENT" -i "$IQN_A" -q 1 "$URL" register 0xabc aptpl
"$CLIENT" -i "$IQN_B" -q 2 "$URL" register 0xdef aptpl
"$CLIENT" -i "$IQN_A" -q 1 "$URL" reserve 0xabc 1
[[ -s "$PRDIR/lun0.pr" ]] || it_fail "no state file written"
keys=$("$CLIENT" -i "$IQN_B" -q 2 "$URL" readkeys | sort | tr '\n' ' ')
[[ "$keys" == "0x0000000000000abc 0x0000000000000def " ]] || it_fail "keys before restart: $keys"
it_stop || it_fail "minitarget exited with an error"

# The restarted target reads the file back: keys, holder and type survive.
start
keys=$("$CLIENT" -i "$IQN_B" -q 2 "$URL" readkeys | sort | tr '\n' ' ')
[[ "$keys" == "0x0000000000000abc 0x0000000000000def " ]] || it_fail "keys after restart: $keys"
res=$("$CLIENT" -i "$IQN_B" -q 2 "$URL" readres)
[[ "$res" == "0x0000000000000abc 1" ]] || it_fail "reservation after restart: $res"
# A WRITE from the non-holder conflicts (WRITE EXCLUSIVE); from the holder it succeeds.
if "$CLIENT" -i "$IQN_B" -q 2 "$URL" write 0 8 1 1 >/dev/null 2>"$IT_TMP/conflict.err"; then
	it_fail "non-holder wrote through a WRITE EXCLUSIVE reservation"
fi
grep -q "status 0x18" "$IT_TMP/conflict.err" || it_fail "expected RESERVATION CONFLICT: $(cat "$IT_TMP/conflict.err")"
"$CLIENT" -i "$IQN_A" -q 1 "$URL" write 0 8 1 1 >/dev/null
it_stop || it_fail "minitarget exited with an error"

# Without APTPL in the last registration the state does not survive (SPC-5 §5.13.5).
start
"$CLIENT" -i "$IQN_B.c" -q 3 "$URL" register 0x123
it_stop || it_fail "minitarget exited with an error"
start
keys=$("$CLIENT" -i "$IQN_A" -q 1 "$URL" readkeys | tr '\n' ' ')
[[ -z "$keys" ]] || it_fail "keys survived without APTPL: $keys"
it_stop || it_fail "minitarget exited with an error"
it_log "PASS"
