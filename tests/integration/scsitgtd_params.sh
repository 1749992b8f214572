#!/bin/bash
# scsitgtd_params.sh SCSITGTD [SCSITGTCTL] - the iSCSI parameters of [engine] are every target's
# defaults and a [target]'s own keys win (docs/scsitgtd.md, "iSCSI parameters"), as initiators
# see them at login: libiscsi's iscsi-inq prints the Login Response keys it got
# (LIBISCSI_DEBUG=6, "TargetLoginReply: KEY=VALUE"): MaxRecvDataSegmentLength the target
# declares, MaxBurstLength, FirstBurstLength, ImmediateData, InitialR2T, DefaultTime2Wait as
# negotiated from the target's values, HeaderDigest the one it accepts; the raw client of
# login_window.py reads the command window the final Login Response opens (MaxCmdSN - ExpCmdSN
# + 1: queue_depth), offering HeaderDigest=CRC32C to the target that requires it. A target without keys of its own gets [engine]'s, one with its own keeps
# them; a reload (SIGHUP, and scsitgtctl's reload through the control socket when SCSITGTCTL
# is given) that changes [engine] reaches the targets that do not set those keys, and a target
# the reload adds gets them too.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
it_init "${1:-}"
it_need iscsi-inq python3
WINDOW=(python3 "$(dirname "$0")/login_window.py")

BASE=iqn.2026-12.org.example:params
CONF=$IT_TMP/scsitgtd.conf
SOCK=$IT_TMP/ctl.sock
PORT=$(it_free_port)
CTL=${2:-} # scsitgtctl, built with json-c (the control socket) or not at all
CONTROL=
[[ -n "$CTL" ]] && CONTROL="control_socket = $SOCK"

# write_conf ENGINE-KEYS [LATE]: [engine] with the iSCSI keys ENGINE-KEYS (lines), target
# "plain" without keys of its own, target "own" with its own; LATE adds target "late" (none).
write_conf() {
	{
		printf '[engine]\nlog_level = info\n%s\n%s\n\n' "$CONTROL" "$1"
		printf '[portal]\naddress = 127.0.0.1\nport = %s\n\n' "$PORT"
		printf '[target]\nname = %s:plain\n[lun 0]\nbackend = ram\nsize = 1M\n\n' "$BASE"
		printf '[target]\nname = %s:own\nqueue_depth = 16\n' "$BASE"
		printf 'max_recv_data_segment_length = 64K\nheader_digest = any\nimmediate_data = yes\n'
		printf '[lun 0]\nbackend = ram\nsize = 1M\n\n'
		if [[ -n "${2:-}" ]]; then
			printf '[target]\nname = %s:late\n[lun 0]\nbackend = ram\nsize = 1M\n' "$BASE"
		fi
	} >"$CONF"
	"$IT_TARGET" -t "$CONF" >/dev/null || it_fail "scsitgtd -t refused: $(cat "$CONF")"
}

# keys TARGET KEY=VALUE...: libiscsi logs in to TARGET; each KEY=VALUE is what the target's
# Login Response said.
keys() {
	local t=$1 out kv
	shift
	out=$(LIBISCSI_DEBUG=6 iscsi-inq "iscsi://127.0.0.1:$PORT/$BASE:$t/0" 2>&1) ||
		it_fail "iscsi-inq to $t failed: $(tail -5 <<<"$out")"
	for kv in "$@"; do
		grep -q "TargetLoginReply: $kv " <<<"$out" && continue
		it_fail "$t: the Login Response lacks $kv:" \
			"$(grep -o "TargetLoginReply: ${kv%%=*}=[^ ]*" <<<"$out" || echo "no such key")"
	done
	it_log "ok: $t: $*"
}

# window TARGET N: a login to TARGET opens a command window of N (queue_depth).
window() {
	local got
	got=$("${WINDOW[@]}" --port "$PORT" --iqn "$BASE:$1" ${3:+"$3"}) ||
		it_fail "login_window.py to $1"
	[[ "$got" == "window $2" ]] || it_fail "$1: $got, expected queue_depth $2"
	it_log "ok: $1: command window $2"
}

# [engine] keys of every kind: declarative, minimum, maximum, OR, AND, list; queue_depth too.
write_conf 'max_recv_data_segment_length = 16K
max_burst_length = 128K
first_burst_length = 32K
immediate_data = no
initial_r2t = yes
default_time2wait = 5
header_digest = crc32c
queue_depth = 8'
it_scsitgtd_start "$CONF"
keys plain MaxRecvDataSegmentLength=16384 MaxBurstLength=131072 FirstBurstLength=32768 \
	ImmediateData=No InitialR2T=Yes DefaultTime2Wait=5 HeaderDigest=CRC32C
# plain requires HeaderDigest=CRC32C now: a login that offers None alone is refused (0x0200).
"${WINDOW[@]}" --port "$PORT" --iqn "$BASE:plain" >/dev/null 2>&1 &&
	it_fail "plain: a login offering HeaderDigest=None succeeded"
window plain 8 --header-digest
# Its own keys win; the others are [engine]'s.
keys own MaxRecvDataSegmentLength=65536 ImmediateData=Yes HeaderDigest=None \
	MaxBurstLength=131072 FirstBurstLength=32768 InitialR2T=Yes DefaultTime2Wait=5
window own 16

# A reload that changes [engine]: the targets that do not set a key follow, the new one too.
write_conf 'max_recv_data_segment_length = 8K
queue_depth = 4' late
it_reload
keys plain MaxRecvDataSegmentLength=8192 HeaderDigest=None ImmediateData=Yes InitialR2T=No
window plain 4
keys late MaxRecvDataSegmentLength=8192 ImmediateData=Yes
window late 4
keys own MaxRecvDataSegmentLength=65536
window own 16
grep -q "$BASE:plain: iSCSI parameters changed" "$IT_TMP/target.err" ||
	it_fail "no word of plain's parameters changed: $(tail -5 "$IT_TMP/target.err")"

# The same through the control socket's reload (scsitgtctl, when scsitgtd has the socket).
if [[ -n "$CTL" ]]; then
	write_conf 'queue_depth = 12' late
	"$CTL" -s "$SOCK" reload >/dev/null || it_fail "scsitgtctl reload refused"
	window plain 12
	window late 12
	window own 16
	keys plain MaxRecvDataSegmentLength=262144
else
	it_log "no scsitgtctl (json-c): the control socket's reload not checked"
fi
it_stop || it_fail "scsitgtd exited with status $? on SIGTERM"
it_log "PASS"
