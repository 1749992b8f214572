#!/bin/bash
# hostile_limits.sh MINITARGET - resource limits against a greedy initiator (acl_client.py):
# one initiator opening more connections than a portal grants it (--max-initiator-conns), more
# initiators than a target takes sessions (--max-sessions), more immediate commands than the
# CmdSN window holds (--queue-depth; Reject 0x06). The logins beyond a limit are
# refused with "out of resources" (RFC 7143 §11.13.5, 0x0302), the sessions already in place
# keep working, a freed place goes to the next login, and libiscsi is still served afterwards.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
it_init "${1:-}"
it_need python3 iscsi-inq
CLIENT="$(dirname "$0")/acl_client.py"
G=iqn.2026-11.org.libscsitgt:greedy

it_start --lun 0:ram:16M --max-initiator-conns 4 --max-sessions 6
iqn=$(it_iqn "${IT_URLS[0]}")
# Ten sessions of one initiator name (distinct ISIDs, one connection each): four get in.
python3 "$CLIENT" hold --port "$IT_PORT" --iqn "$iqn" --initiator "$G" --count 10 \
	--expect-ok 4 --status 0x0302 >&2 || it_fail "per-initiator connection limit"
it_log "ok: one initiator holds at most 4 connections of the portal"
it_alive || it_fail "target died"
# A fresh target for the next limit: the sessions above end asynchronously.
it_stop || it_fail "target exited with status $?"
it_start --lun 0:ram:16M --max-initiator-conns 4 --max-sessions 6
iqn=$(it_iqn "${IT_URLS[0]}")
# Ten initiators: six sessions fit in the target.
python3 "$CLIENT" hold --port "$IT_PORT" --iqn "$iqn" --initiator "$G-many" --count 10 \
	--distinct-names --expect-ok 6 --status 0x0302 >&2 || it_fail "per-target session limit"
it_log "ok: the target holds at most 6 sessions"
it_alive || it_fail "target died"
iscsi-inq "${IT_URLS[0]}" >/dev/null || it_fail "a normal initiator is refused afterwards"
it_log "ok: a normal initiator is served afterwards"
it_stop || it_fail "target exited with status $?"

# Immediate commands are bounded by the CmdSN window (queue depth 8) like the others.
it_start --lun 0:ram:16M --queue-depth 8
iqn=$(it_iqn "${IT_URLS[0]}")
python3 "$CLIENT" immediate --port "$IT_PORT" --iqn "$iqn" --initiator "$G" --count 20 \
	--expect-ok 8 >&2 || it_fail "immediate commands beyond the window"
it_log "ok: 8 immediate commands accepted, 12 rejected (0x06), the 8 completed"
it_alive || it_fail "target died"
iscsi-inq "${IT_URLS[0]}" >/dev/null || it_fail "a normal initiator is refused afterwards"
it_log "ok: a normal initiator is served afterwards"
it_stop || it_fail "target exited with status $?"
it_log "PASS"
