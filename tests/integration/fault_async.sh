#!/bin/bash
# fault_async.sh SCSITGTD CLIENT - iSCSI Async Messages for unit attentions, as Wireshark
# decodes them (RFC 7143 §11.9, AsyncEvent 0 "SCSI asynchronous event", docs/iscsi.md). A
# libiscsi initiator (CLIENT, scsitgtd_client.c) stays logged in to scsitgtd while a reload adds
# a LUN and another resizes one; tshark captures the target's side of the connection on lo and
# must decode one Async Message per change with the sense data of REPORTED LUNS DATA HAS
# CHANGED (06/3Fh/0Eh), then CAPACITY DATA HAS CHANGED (06/2Ah/09h). The unit attention itself
# must still be reported on the next command (the message is only a hint).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
it_init "${1:-}"
CLIENT=${2:-}
[[ -x "$CLIENT" ]] || it_fail "usage: fault_async.sh SCSITGTD SCSITGTD_CLIENT"
it_need tshark python3

IQN=iqn.2026-11.org.libscsitgt:async
PORT=$(it_free_port)
CONF=$IT_TMP/scsitgtd.conf
cat >"$CONF" <<EOF
[engine]
log_level = notice

[portal]
address = 127.0.0.1
port = $PORT
tpgt = 1

[target]
name = $IQN

[lun 0]
backend = ram
size = 16M
EOF

# The capture: only what the target sends.
tshark -i lo -f "tcp src port $PORT" -w "$IT_TMP/cap.pcapng" >"$IT_TMP/tshark.out" \
	2>"$IT_TMP/tshark.err" </dev/null &
TSHARK=$!
IT_HELPER_PIDS+=("$TSHARK")
for ((i = 0; i < 300; i++)); do
	grep -q "Capturing on" "$IT_TMP/tshark.err" && break
	kill -0 "$TSHARK" 2>/dev/null || it_skip "cannot capture on lo: $(tail -n 1 "$IT_TMP/tshark.err")"
	sleep 0.1
done
grep -q "Capturing on" "$IT_TMP/tshark.err" || it_skip "tshark did not start capturing"

it_scsitgtd_start "$CONF"

it_client_start "$CLIENT" "iscsi://127.0.0.1:$PORT/$IQN/0"
# Clear POWER ON: from here on the nexus has seen LUN 0.
for ((i = 0; i < 8; i++)); do
	it_ask tur 0
	[[ "$ANSWER" == "status 0" ]] && break
done
[[ "$ANSWER" == "status 0" ]] || it_fail "LUN 0 not ready: $ANSWER"

# 1. A LUN appears: the nexus gets REPORTED LUNS DATA HAS CHANGED on LUN 0, still reported
# on the next command although an Async Message announced it.
printf '\n[lun 1]\nbackend = ram\nsize = 16M\n' >>"$CONF"
it_reload
it_ask tur 0
[[ "$ANSWER" == "status 2 sense 6/3f0e" ]] || it_fail "after adding a LUN, TUR said '$ANSWER'"
# 2. LUN 0 grows: CAPACITY DATA HAS CHANGED.
sed -i '0,/^size = 16M$/s//size = 32M/' "$CONF"
it_reload
it_ask tur 0
[[ "$ANSWER" == "status 2 sense 6/2a09" ]] || it_fail "after the resize, TUR said '$ANSWER'"
it_log "ok: both unit attentions reported on the next command"
it_ask quit
st=0
it_stop || st=$?
[[ $st -eq 0 ]] || it_fail "scsitgtd exit status $st"

# Each message went out before the response to the TUR that followed its change. The capture
# shows them once dumpcap has read and written them: wait for two Async Message headers in the
# file (opcode 32h, F, DataSegmentLength 20), then stop it, which flushes the file.
for ((i = 0; i < 300; i++)); do
	n=$(python3 -c 'import sys
print(open(sys.argv[1], "rb").read().count(bytes.fromhex("3280000000000014")))' \
		"$IT_TMP/cap.pcapng" 2>/dev/null || echo 0)
	[[ $n -ge 2 ]] && break
	sleep 0.1
done
# "EVENT KEY ASC ASCQ" of each, as Wireshark decodes it.
kill -INT "$TSHARK" 2>/dev/null || true
wait "$TSHARK" 2>/dev/null || true
mapfile -t got < <(tshark -n -r "$IT_TMP/cap.pcapng" -d "tcp.port==$PORT,iscsi" \
	-Y "iscsi.opcode == 0x32" -T fields -E separator=' ' -e iscsi.asyncevent -e scsi.sns.key \
	-e scsi.sns.asc -e scsi.sns.ascq 2>/dev/null)
[[ ${#got[@]} -eq 2 ]] || it_fail "expected 2 Async Messages, the capture has: ${got[*]:-none}"
[[ "${got[0]}" == "0x00 0x06 0x3f 0x0e" ]] ||
	it_fail "first Async Message decodes as '${got[0]}', not AsyncEvent 0 with 06/3F/0E"
[[ "${got[1]}" == "0x00 0x06 0x2a 0x09" ]] ||
	it_fail "second Async Message decodes as '${got[1]}', not AsyncEvent 0 with 06/2A/09"
it_log "ok: one Async Message per change: 06/3F/0E (LUN added), 06/2A/09 (LUN resized)"
it_log "PASS"
