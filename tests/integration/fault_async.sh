#!/bin/bash
# fault_async.sh SCSITGTD CLIENT - iSCSI Async Messages for unit attentions (RFC 7143 §11.9,
# AsyncEvent 0 "SCSI asynchronous event", docs/iscsi.md). A libiscsi initiator (CLIENT,
# scsitgtd_client.c) and a raw watcher (async_watch.py) stay logged in to scsitgtd while a reload
# adds a LUN and another resizes one. The watcher reads each Async Message from its own socket:
# one per change, REPORTED LUNS DATA HAS CHANGED (06/3Fh/0Eh), then CAPACITY DATA HAS CHANGED
# (06/2Ah/09h). The unit attention itself must still be reported on the libiscsi initiator's
# next command (the message is only a hint). Where tshark can capture on lo, Wireshark's decoder
# is the referee of the messages' encoding; the capture is proven live before the test starts
# and read only once it holds both messages, so nothing depends on how fast tshark is.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
it_init "${1:-}"
CLIENT=${2:-}
[[ -x "$CLIENT" ]] || it_fail "usage: fault_async.sh SCSITGTD SCSITGTD_CLIENT"
it_need python3
WATCH=(python3 "$(dirname "$0")/async_watch.py")

IQN=iqn.2026-11.org.libscsitgt:async
PORT=$(it_free_port)
CONF=$IT_TMP/scsitgtd.conf
cat >"$CONF" <<EOC
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
EOC

# The referee's capture (only what the target sends), when tshark can capture here.
TSHARK=
if command -v tshark >/dev/null 2>&1; then
	tshark -i lo -f "tcp src port $PORT" -w "$IT_TMP/cap.pcapng" >"$IT_TMP/tshark.out" \
		2>"$IT_TMP/tshark.err" </dev/null &
	TSHARK=$!
	IT_HELPER_PIDS+=("$TSHARK")
fi

it_scsitgtd_start "$CONF"

# decoded FILTER: the capture's PDUs that match a display filter, as Wireshark decodes them.
decoded() {
	tshark -n -r "$IT_TMP/cap.pcapng" -d "tcp.port==$PORT,iscsi" -Y "$1" \
		-T fields -E separator=' ' -e iscsi.asyncevent -e scsi.sns.key -e scsi.sns.asc \
		-e scsi.sns.ascq 2>/dev/null || true
}

# The capture is live once it holds a Login Response of a probe login: until then, log in
# again (bounded). Whatever tshark's start-up takes, what follows is captured.
if [[ -n "$TSHARK" ]]; then
	for ((i = 0; i < 600; i++)); do
		if ! kill -0 "$TSHARK" 2>/dev/null; then
			it_log "note: tshark cannot capture on lo ($(tail -n 1 "$IT_TMP/tshark.err")):" \
				"no Wireshark referee"
			TSHARK=
			break
		fi
		"${WATCH[@]}" --port "$PORT" --iqn "$IQN" --probe >/dev/null 2>>"$IT_TMP/probe.err" ||
			it_fail "probe login failed: $(tail -n 3 "$IT_TMP/probe.err")"
		[[ -n "$(decoded "iscsi.opcode == 0x23")" ]] && break
		sleep 0.1
	done
	[[ -z "$TSHARK" || -n "$(decoded "iscsi.opcode == 0x23")" ]] ||
		it_fail "the capture never showed a login"
fi

# The watcher: its own session, every Async Message it reads on one line of watch.out.
"${WATCH[@]}" --port "$PORT" --iqn "$IQN" >"$IT_TMP/watch.out" 2>"$IT_TMP/watch.err" &
IT_HELPER_PIDS+=("$!")
for ((i = 0; i < 600; i++)); do
	grep -q '^ready$' "$IT_TMP/watch.out" && break
	kill -0 "${IT_HELPER_PIDS[-1]}" 2>/dev/null || it_fail "watcher: $(cat "$IT_TMP/watch.err")"
	sleep 0.1
done
grep -q '^ready$' "$IT_TMP/watch.out" || it_fail "the watcher never logged in"

it_client_start "$CLIENT" "iscsi://127.0.0.1:$PORT/$IQN/0"
# Clear POWER ON: from here on the nexus has seen LUN 0.
for ((i = 0; i < 8; i++)); do
	it_ask tur 0
	[[ "$ANSWER" == "status 0" ]] && break
done
[[ "$ANSWER" == "status 0" ]] || it_fail "LUN 0 not ready: $ANSWER"

# watched N: wait (bounded) until the watcher has reported N Async Messages.
watched() {
	local i
	for ((i = 0; i < 600; i++)); do
		[[ $(grep -c '^async ' "$IT_TMP/watch.out") -ge $1 ]] && return 0
		sleep 0.1
	done
	it_fail "the watcher saw $(grep -c '^async ' "$IT_TMP/watch.out") Async Messages," \
		"expected $1: $(cat "$IT_TMP/watch.out")"
}

# 1. A LUN appears: the nexus gets REPORTED LUNS DATA HAS CHANGED on LUN 0, still reported
# on the next command although an Async Message announced it.
printf '\n[lun 1]\nbackend = ram\nsize = 16M\n' >>"$CONF"
it_reload
watched 1
it_ask tur 0
[[ "$ANSWER" == "status 2 sense 6/3f0e" ]] || it_fail "after adding a LUN, TUR said '$ANSWER'"
# 2. LUN 0 grows: CAPACITY DATA HAS CHANGED.
sed -i '0,/^size = 16M$/s//size = 32M/' "$CONF"
it_reload
watched 2
it_ask tur 0
[[ "$ANSWER" == "status 2 sense 6/2a09" ]] || it_fail "after the resize, TUR said '$ANSWER'"
it_log "ok: both unit attentions reported on the next command"
mapfile -t got < <(grep '^async ' "$IT_TMP/watch.out")
[[ ${#got[@]} -eq 2 ]] || it_fail "expected 2 Async Messages, the watcher saw: ${got[*]}"
[[ "${got[0]}" == "async event 0 lun 0 sense 6/3f0e" ]] ||
	it_fail "first Async Message: '${got[0]}', not AsyncEvent 0 with 06/3F/0E on LUN 0"
[[ "${got[1]}" == "async event 0 lun 0 sense 6/2a09" ]] ||
	it_fail "second Async Message: '${got[1]}', not AsyncEvent 0 with 06/2A/09 on LUN 0"
it_log "ok: one Async Message per change: 06/3F/0E (LUN added), 06/2A/09 (LUN resized)"
it_ask quit
st=0
it_stop || st=$?
[[ $st -eq 0 ]] || it_fail "scsitgtd exit status $st"

# The referee: the capture holds the messages once dumpcap has read and written them (they
# were sent before the answers the watcher and the client already read): wait for two Async
# Message headers per session in the file (opcode 32h, F, DataSegmentLength 20), then stop it,
# which flushes the file.
if [[ -n "$TSHARK" ]]; then
	for ((i = 0; i < 600; i++)); do
		n=$(python3 -c 'import sys
print(open(sys.argv[1], "rb").read().count(bytes.fromhex("3280000000000014")))' \
			"$IT_TMP/cap.pcapng" 2>/dev/null || echo 0)
		[[ $n -ge 4 ]] && break
		sleep 0.1
	done
	kill -INT "$TSHARK" 2>/dev/null || true
	wait "$TSHARK" 2>/dev/null || true
	# (AsyncEvent 1, "logout requested", went out when scsitgtd stopped.)
	mapfile -t dec < <(decoded "iscsi.opcode == 0x32 && iscsi.asyncevent == 0" | sort |
		uniq -c | awk '{$1=$1; print}')
	[[ "${dec[*]}" == "2 0x00 0x06 0x2a 0x09 2 0x00 0x06 0x3f 0x0e" ]] ||
		it_fail "Wireshark decodes the Async Messages as: ${dec[*]:-none}" \
			"(expected each of 06/3F/0E and 06/2A/09 once per session)"
	it_log "ok: Wireshark decodes them as AsyncEvent 0 with 06/3F/0E and 06/2A/09"
fi
it_log "PASS"
