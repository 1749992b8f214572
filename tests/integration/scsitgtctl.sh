#!/bin/bash
# scsitgtctl.sh SCSITGTD SCSITGTCTL CLIENT - scsitgtd's control socket (JSON-RPC 2.0, one object
# per line; docs/scsitgtd.md) driven through scsitgtctl: the socket is 0600, a live one is not
# taken over and a stale one is replaced; show lists portals, targets, LUNs, ACLs and the
# session of a logged-in libiscsi initiator (CLIENT, scsitgtd_client.c); stats counts its
# commands; metrics passes promtool; kick makes the initiator see its session end; reload
# applies a changed file and refuses a broken one (FILE:LINE); the runtime changes (LUN,
# initiator, address) act on the initiator; save writes a file that, served after a restart,
# gives the same show; a reload of a file with a LUN that cannot be created answers which and
# why, show lists it as failed, save writes it; a target that cannot be created is listed by show
# as failed with its reason; protocol errors come back as JSON-RPC error objects; systemd hears
# READY=1, RELOADING=1 and STOPPING=1 (sd_notify) when scsitgtd is built with libsystemd.
# Runtime changes pass the file's checks across sections: a LUN added to or removed from an
# rbd_gateway target (exactly one RBD LUN) is refused, so that save writes a file that starts.
# SIGTERM while a backend holds a write past drain_timeout_ms (fault = hang@write on a file LUN)
# ends the daemon with status 0: it closes the backend the engine gave up on.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
it_init "${1:-}"
CTL=${2:-}
CLIENT=${3:-}
[[ -x "$CTL" && -x "$CLIENT" ]] || it_fail "usage: scsitgtctl.sh SCSITGTD SCSITGTCTL CLIENT"
CTL=$(realpath "$CTL") # "save" runs it from another directory
it_need python3 jq
# ThreadSanitizer builds: Ceph's client libraries, loaded by the RBD LUN below, are not
# instrumented: tests/tsan.supp ignores what happens inside them (as rbd_lib.sh does).
TSAN_SUPP=$(cd "$(dirname "$0")/.." && pwd)/tsan.supp
case ":${TSAN_OPTIONS:-}:" in
*:suppressions=*) ;;
*) export TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}suppressions=$TSAN_SUPP" ;;
esac

IQN=iqn.2024-01.org.example:ctl
CLIENT_IQN=iqn.2026-11.org.libscsitgt:scsitgtd-client
SOCK=$IT_TMP/ctl.sock
CONF=$IT_TMP/scsitgtd.conf

ctl() { "$CTL" -s "$SOCK" "$@"; }

# write_conf PORT [EXTRA-LUN-SECTION]
write_conf() {
	cat >"$CONF" <<CONF
[engine]
log_level = info
control_socket = $SOCK

[portal]
address = 127.0.0.1
port = $1
tpgt = 1

[target]
name = $IQN
initiator = $CLIENT_IQN
address = 127.0.0.0/8

[lun 0]
backend = ram
size = 16M
serial = ctl-lun0
${2:-}
CONF
}

# try_start CONF: run scsitgtd on CONF as $IT_PID; wait until it is ready (0) or exited (1).
try_start() {
	local i
	it_conf_workers "$1"
	: >"$IT_TMP/target.out"
	# shellcheck disable=SC2086 # the wrapper is a command line
	${IT_TARGET_WRAPPER:-} "$IT_TARGET" "$1" </dev/null >"$IT_TMP/target.out" \
		2>"$IT_TMP/target.err" &
	IT_PID=$!
	for ((i = 0; i < IT_START_TIMEOUT * 10; i++)); do
		grep -q "scsitgtd: ready" "$IT_TMP/target.out" && return 0
		if ! kill -0 "$IT_PID" 2>/dev/null; then
			wait "$IT_PID" || true
			IT_PID=
			return 1
		fi
		sleep 0.1
	done
	it_fail "scsitgtd never became ready"
}

# start: the daemon on a free port (another process may take the port first: try again).
start() {
	local try
	for ((try = 0; try < 5; try++)); do
		PORT=$(it_free_port)
		write_conf "$PORT"
		try_start "$CONF" && return 0
		grep -q "Address already in use" "$IT_TMP/target.err" ||
			it_fail "scsitgtd exited at start: $(tail -5 "$IT_TMP/target.err")"
	done
	it_fail "no free port after 5 tries"
}

# wait_for WHAT CMD...: run CMD until it succeeds (bounded); a line of a log: it_wait_log.
wait_for() {
	local what=$1 i
	shift
	for ((i = 0; i < 300; i++)); do
		"$@" && return 0
		sleep 0.1
	done
	it_fail "timed out waiting for $what"
}

# rpc LINE: send raw LINE on the socket, print the answer line ("" if the daemon sent none
# before closing or within the bound).
rpc() {
	python3 - "$SOCK" "$1" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(30)
s.connect(sys.argv[1])
buf = b""
try:
    # The daemon may answer and hang up before it read everything (an oversized request).
    s.sendall(sys.argv[2].encode() + b"\n")
    s.shutdown(socket.SHUT_WR)
except OSError:
    pass
try:
    while b"\n" not in buf:
        d = s.recv(65536)
        if not d:
            break
        buf += d
except OSError:
    pass
print(buf.split(b"\n")[0].decode())
PY
}

# ---- systemd's readiness protocol (sd_notify) on a socket of ours, when built with it ----

NOTIFY=no
if ldd "$IT_TARGET" 2>/dev/null | grep libsystemd >/dev/null; then
	NOTIFY=yes
	python3 - "$IT_TMP/notify.sock" "$IT_TMP/notify.log" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "a", buffering=1) as log:
    while True:
        log.write(s.recv(4096).decode().replace("\n", " ") + "\n")
PY
	IT_HELPER_PIDS+=($!)
	notify_up() { [[ -S "$IT_TMP/notify.sock" ]]; }
	wait_for "the notify listener" notify_up
	export NOTIFY_SOCKET=$IT_TMP/notify.sock
else
	it_log "scsitgtd built without libsystemd: sd_notify not checked"
fi
# notified N WORD: the notify log has at least N messages with WORD; wait_notified N WORD: until
# it has (bounded).
notified() { [[ $NOTIFY == no ]] || [[ $(grep -c "$2" "$IT_TMP/notify.log" 2>/dev/null) -ge $1 ]]; }
wait_notified() { [[ $NOTIFY == no ]] || it_wait_log -n "$1" "$IT_TMP/notify.log" "$2"; }

# ---- the socket ----

start
wait_notified 1 READY=1
it_log "scsitgtd pid $IT_PID on 127.0.0.1:$PORT, control socket $SOCK"
[[ -S "$SOCK" ]] || it_fail "no socket at $SOCK"
[[ $(stat -c %a "$SOCK") == 600 ]] || it_fail "socket mode $(stat -c %a "$SOCK"), want 600"

# A second daemon on the same socket (another portal) must not take it over.
FIRST_PID=$IT_PID
sed -e "s/^port = $PORT$/port = $(it_free_port)/" "$CONF" >"$IT_TMP/second.conf"
if "$IT_TARGET" "$IT_TMP/second.conf" </dev/null >"$IT_TMP/second.out" 2>"$IT_TMP/second.err"
then
	it_fail "a second scsitgtd started on a live control socket"
fi
grep -q "another process listens there" "$IT_TMP/second.err" ||
	it_fail "second daemon: no clear message: $(tail -3 "$IT_TMP/second.err")"
[[ -S "$SOCK" ]] && ctl show >/dev/null || it_fail "the second daemon broke the first's socket"
IT_PID=$FIRST_PID

# ---- show, with a logged-in initiator ----

show=$(ctl show)
[[ $(jq -r '.portals[0].port' <<<"$show") == "$PORT" ]] || it_fail "show: portal: $show"
[[ $(jq -r '.targets[0].name' <<<"$show") == "$IQN" ]] || it_fail "show: target: $show"
[[ $(jq -r '.targets[0].luns[0] | "\(.id) \(.backend) \(.size) \(.offline)"' <<<"$show") == \
	"0 ram 16777216 false" ]] || it_fail "show: LUN 0: $show"
[[ $(jq -r '.targets[0].initiators[0]' <<<"$show") == "$CLIENT_IQN" ]] ||
	it_fail "show: initiators: $show"
[[ $(jq -r '.targets[0].addresses[0].cidr' <<<"$show") == 127.0.0.0/8 ]] ||
	it_fail "show: addresses: $show"

it_client_start "$CLIENT" "iscsi://127.0.0.1:$PORT/$IQN/0"
sessions() { ctl show | jq -r '.targets[0].sessions | length'; }
[[ $(sessions) == 1 ]] || it_fail "show: no session: $(ctl show)"
session=$(ctl show | jq -c '.targets[0].sessions[0]')
IPORT=$(jq -r .initiator_port <<<"$session")
[[ $(jq -r .initiator_name <<<"$session") == "$CLIENT_IQN" && "$IPORT" == "$CLIENT_IQN,i,0x"* &&
	$(jq -r .address <<<"$session") == 127.0.0.1:* ]] || it_fail "show: session: $session"

# ---- stats and metrics ----

it_ask write 0 0 8
[[ "$ANSWER" == "status 0" ]] || it_fail "write: $ANSWER"
it_ask read 0 0 8
[[ "$ANSWER" == "status 0" ]] || it_fail "read: $ANSWER"
stats=$(ctl stats)
[[ $(jq -r '.targets[0].luns[0].cmds | "\(.write_cmds) \(.read_cmds) \(.bytes_written)"' \
	<<<"$stats") == "1 1 4096" ]] || it_fail "stats: LUN 0 counters: $stats"
[[ $(jq -r '.targets[0].sessions[0].cmds.write_cmds' <<<"$stats") == 1 ]] ||
	it_fail "stats: session counters: $stats"
[[ $(jq -r '[.targets[0].luns[0].latency_us[]] | add' <<<"$stats") -ge 2 ]] ||
	it_fail "stats: latency histogram: $stats"
[[ $(jq -r '[.connections[] | select(.full_feature)] | length' <<<"$stats") == 1 ]] ||
	it_fail "stats: connections: $stats"
ctl metrics >"$IT_TMP/metrics.txt"
grep -q "^scsitgt_lun_write_commands_total{target=\"$IQN\",lun=\"0\"} 1$" "$IT_TMP/metrics.txt" ||
	it_fail "metrics: no write counter: $(head -20 "$IT_TMP/metrics.txt")"
grep -q "^scsitgt_lun_latency_seconds_count{target=\"$IQN\",lun=\"0\"} [1-9]" "$IT_TMP/metrics.txt" ||
	it_fail "metrics: no latency histogram"
if command -v promtool >/dev/null; then
	promtool check metrics <"$IT_TMP/metrics.txt" >&2 || it_fail "promtool check metrics failed"
else
	it_log "promtool not installed (Debian: prometheus): metrics format not checked"
fi

# ---- reload ----

write_conf "$PORT" $'[lun 1]\nbackend = ram\nsize = 8M'
ctl reload >"$IT_TMP/reload.json" || it_fail "reload failed: $(cat "$IT_TMP/reload.json")"
[[ $(ctl show | jq -c '[.targets[0].luns[].id]') == "[0,1]" ]] ||
	it_fail "reload: LUN 1 not added: $(ctl show)"
wait_notified 2 READY=1 # RELOADING=1 then READY=1
notified 1 RELOADING=1 || it_fail "no RELOADING=1: $(cat "$IT_TMP/notify.log")"
it_ask luns
[[ "$ANSWER" == "status 2 sense 6/3f0e" || "$ANSWER" == "luns 0 1" ]] ||
	it_fail "client after reload: $ANSWER"
cp "$CONF" "$IT_TMP/good.conf"
printf '[lun 2]\nbackend = bogus\n' >>"$CONF"
if ctl reload 2>"$IT_TMP/reload.err"; then
	it_fail "reload accepted a broken file"
fi
[[ $(jq -r .code "$IT_TMP/reload.err") == -32003 ]] &&
	grep -q "scsitgtd.conf:[0-9]*:" "$IT_TMP/reload.err" ||
	it_fail "reload of a broken file: $(cat "$IT_TMP/reload.err")"
[[ $(ctl show | jq -c '[.targets[0].luns[].id]') == "[0,1]" ]] ||
	it_fail "a refused reload changed the LUNs"
# A LUN of the file that cannot be created (a missing file): the reload's answer says which and
# why, show lists it as failed with the reason (what the file asks for, and what runs), save
# writes it as the file has it, and the reload's log line names it (SIGHUP too).
cp "$IT_TMP/good.conf" "$CONF"
printf '[lun 4]\nbackend = file\npath = %s\n' "$IT_TMP/missing.img" >>"$CONF"
why="$IT_TMP/missing.img: No such file or directory"
ctl reload >"$IT_TMP/reload.json" || it_fail "reload failed: $(cat "$IT_TMP/reload.json")"
[[ $(jq -c '.failed' "$IT_TMP/reload.json") == "[{\"target\":\"$IQN\",\"id\":4,\"error\":\"$why\"}]" ]] ||
	it_fail "reload does not say LUN 4 failed and why: $(cat "$IT_TMP/reload.json")"
[[ $(ctl show | jq -c '[.targets[0].luns[] | [.id, .state, .error]]') == \
	"[[0,\"running\",null],[1,\"running\",null],[4,\"failed\",\"$why\"]]" ]] ||
	it_fail "show does not list the failed LUN 4: $(ctl show | jq -c .targets[0].luns)"
ctl save "$IT_TMP/saved4.conf" >/dev/null || it_fail "save failed"
grep -A2 '^\[lun 4\]' "$IT_TMP/saved4.conf" | grep -qx "path = $IT_TMP/missing.img" ||
	it_fail "save does not write the failed LUN 4 as the file has it: $(cat "$IT_TMP/saved4.conf")"
logged="reload: 1 LUN(s) of $CONF not created, 0 still opening: $IQN LUN 4: $why"
it_wait_log "$IT_TMP/target.err" "$logged"
kill -HUP "$IT_PID"
it_wait_log -n 2 "$IT_TMP/target.err" "$logged"
it_log "reload of a file with a missing LUN file: $(jq -c .failed "$IT_TMP/reload.json")"
cp "$IT_TMP/good.conf" "$CONF"
ctl reload >"$IT_TMP/reload.json" || it_fail "reload failed: $(cat "$IT_TMP/reload.json")"
[[ $(jq -c '.failed' "$IT_TMP/reload.json") == "[]" && $(ctl show | jq -c '[.targets[0].luns[].id]') == "[0,1]" ]] ||
	it_fail "reload without LUN 4: $(cat "$IT_TMP/reload.json"); $(ctl show | jq -c .targets[0].luns)"
# A target of the file that cannot be created (its name differs from $IQN's only in case: the
# library compares names without case): show lists it after the running one, failed, with the
# reason, and its LUN as failed with it; the reload's answer names that LUN.
UPPER=${IQN^^}
printf '[target]\nname = %s\n\n[lun 0]\nbackend = ram\nsize = 1M\n' "$UPPER" >>"$CONF"
ctl reload >"$IT_TMP/reload.json" || it_fail "reload failed: $(cat "$IT_TMP/reload.json")"
why="File exists: target $IQN has that name (names compare without case)"
lwhy="its target was not created (the log says why)"
[[ $(jq -c '.failed' "$IT_TMP/reload.json") == "[{\"target\":\"$UPPER\",\"id\":0,\"error\":\"$lwhy\"}]" ]] ||
	it_fail "reload does not say the failed target's LUN 0 failed: $(cat "$IT_TMP/reload.json")"
[[ $(ctl show | jq -c '[.targets[] | [.name, .state, .error, [.luns[] | [.id, .state]]]]') == \
	"[[\"$IQN\",\"running\",null,[[0,\"running\"],[1,\"running\"]]],[\"$UPPER\",\"failed\",\"$why\",[[0,\"failed\"]]]]" ]] ||
	it_fail "show does not list the failed target: $(ctl show | jq -c .targets)"
it_wait_log "$IT_TMP/target.err" "target $UPPER: $why"
cp "$IT_TMP/good.conf" "$CONF"
ctl reload >"$IT_TMP/reload.json" || it_fail "reload failed: $(cat "$IT_TMP/reload.json")"
[[ $(ctl show | jq -c '[.targets[].name]') == "[\"$IQN\"]" ]] ||
	it_fail "reload without the failed target: $(ctl show | jq -c .targets)"

# ---- runtime changes: LUNs, initiators, addresses ----

luns() { ctl show | jq -c '[.targets[0].luns[].id]'; }
ctl add-lun "$IQN" 2 backend=ram size=4M serial=ctl-lun2 >"$IT_TMP/add.json" ||
	it_fail "add-lun failed"
[[ $(luns) == "[0,1,2]" ]] || it_fail "add-lun: $(ctl show)"
[[ $(ctl show | jq -r '.targets[0].luns[2].size') == 4194304 ]] || it_fail "add-lun: size"
expect_luns() {
	local i
	for ((i = 0; i < 4; i++)); do
		it_ask luns
		[[ "$ANSWER" == "luns $1" ]] && return 0
		[[ "$ANSWER" == "status 2 sense 6/"* ]] || break
	done
	it_fail "client: expected \"luns $1\", got \"$ANSWER\""
}
expect_luns "0 1 2"
if ctl add-lun "$IQN" 2 backend=ram size=4M 2>"$IT_TMP/err.json"; then
	it_fail "add-lun of an existing LUN succeeded"
fi
[[ $(jq -r .code "$IT_TMP/err.json") == -32004 ]] || it_fail "add-lun twice: $(cat "$IT_TMP/err.json")"
if ctl add-lun "$IQN" 3 backend=ram 2>"$IT_TMP/err.json"; then
	it_fail "add-lun without a size succeeded"
fi
[[ $(jq -r .code "$IT_TMP/err.json") == -32602 ]] && grep -q "size missing" "$IT_TMP/err.json" ||
	it_fail "add-lun without size: $(cat "$IT_TMP/err.json")"
if ctl add-lun "$IQN" 3 backend=file path="$IT_TMP/missing.img" 2>"$IT_TMP/err.json"; then
	it_fail "add-lun of a missing file succeeded"
fi
[[ $(jq -r .code "$IT_TMP/err.json") == -32002 && $(luns) == "[0,1,2]" ]] ||
	it_fail "add-lun of a missing file: $(cat "$IT_TMP/err.json"); $(luns)"
# The reason is in the answer, not only in the daemon's log (userx35 D5).
[[ $(jq -r .message "$IT_TMP/err.json") == "LUN 3: not created: $IT_TMP/missing.img: No such file or directory" ]] ||
	it_fail "add-lun of a missing file does not say why: $(cat "$IT_TMP/err.json")"
# The same while another LUN's RBD image is still opening (a monitor nobody answers on, until
# rbd_op_timeout): the file LUN is still reported not created (review33 N5). The RBD LUN's
# answer waits for its open 10 s, then says it is still opening.
if grep -q librbd <<<"$(ldd "$IT_TARGET")"; then
	printf '[global]\nmon_host = 127.0.0.1:%s\nauth_client_required = none\n' "$(it_free_port)" \
		>"$IT_TMP/dead-ceph.conf"
	ctl add-lun "$IQN" 8 backend=rbd path=pool/image rbd_conf="$IT_TMP/dead-ceph.conf" \
		rbd_op_timeout=25 >"$IT_TMP/out.json" || it_fail "add-lun of an RBD LUN failed"
	[[ $(jq -r .opening "$IT_TMP/out.json") == true ]] ||
		it_fail "add-lun of an RBD LUN whose image hangs: $(cat "$IT_TMP/out.json")"
	# show lists it, as opening (it did not before: what runs, not what was asked).
	[[ $(ctl show | jq -c '[.targets[0].luns[] | [.id, .state]]') == \
		'[[0,"running"],[1,"running"],[2,"running"],[8,"opening"]]' ]] ||
		it_fail "show while LUN 8 opens: $(ctl show | jq -c .targets[0].luns)"
	if ctl add-lun "$IQN" 3 backend=file path="$IT_TMP/missing.img" 2>"$IT_TMP/err.json"; then
		it_fail "add-lun of a missing file succeeded while an RBD image opens"
	fi
	[[ $(jq -r .code "$IT_TMP/err.json") == -32002 && $(luns) == "[0,1,2,8]" ]] ||
		it_fail "add-lun of a missing file while an RBD image opens: $(cat "$IT_TMP/err.json")"
	grep -q "LUN 8: backend" "$IT_TMP/target.err" &&
		it_fail "the RBD open ended before the check: did it not wait for the monitor?"
	ctl remove-lun "$IQN" 8 >/dev/null || it_fail "remove-lun 8 (still opening) failed"
else
	it_log "scsitgtd without librbd: add-lun while an image opens not checked"
fi
ctl remove-lun "$IQN" 1 >/dev/null || it_fail "remove-lun failed"
[[ $(luns) == "[0,2]" ]] || it_fail "remove-lun: $(luns)"
expect_luns "0 2"
if ctl remove-lun "$IQN" 7 2>"$IT_TMP/err.json"; then it_fail "remove-lun 7 succeeded"; fi
[[ $(jq -r .code "$IT_TMP/err.json") == -32001 ]] || it_fail "remove-lun 7: $(cat "$IT_TMP/err.json")"

# A login from an initiator the lists do not allow is refused; allowed again, it works.
login() { "$CLIENT" "iscsi://127.0.0.1:$PORT/$IQN/0" </dev/null 2>/dev/null | head -1; }
[[ $(login) == ready ]] || it_fail "second login refused before any change"
ctl add-initiator "$IQN" iqn.1999-01.example:other >/dev/null || it_fail "add-initiator failed"
ctl remove-initiator "$IQN" "$CLIENT_IQN" >/dev/null || it_fail "remove-initiator failed"
[[ $(ctl show | jq -c '.targets[0].initiators') == '["iqn.1999-01.example:other"]' ]] ||
	it_fail "initiators: $(ctl show | jq -c '.targets[0].initiators')"
[[ $(login) == "login failed" ]] || it_fail "a removed initiator logged in"
ctl add-initiator "$IQN" "$CLIENT_IQN" >/dev/null || it_fail "add-initiator failed"
[[ $(login) == ready ]] || it_fail "an added initiator cannot log in"
if ctl add-initiator "$IQN" "bad name" 2>"$IT_TMP/err.json"; then
	it_fail "add-initiator of an invalid name succeeded"
fi
[[ $(jq -r .code "$IT_TMP/err.json") == -32602 ]] || it_fail "bad name: $(cat "$IT_TMP/err.json")"
ctl add-address "$IQN" 192.0.2.0/24 >/dev/null || it_fail "add-address failed"
ctl remove-address "$IQN" 127.0.0.0/8 >/dev/null || it_fail "remove-address failed"
[[ $(login) == "login failed" ]] || it_fail "a login from an address not listed succeeded"
# The target-wide ranges and the initiator's own apply together.
ctl add-address "$IQN" 127.0.0.1 "$CLIENT_IQN" >/dev/null || it_fail "add-address INITIATOR failed"
[[ $(ctl show | jq -c '.targets[0].addresses') == \
	'[{"cidr":"192.0.2.0/24"},{"initiator":"'"$CLIENT_IQN"'","cidr":"127.0.0.1"}]' ]] ||
	it_fail "addresses: $(ctl show | jq -c '.targets[0].addresses')"
[[ $(login) == "login failed" ]] || it_fail "the target-wide ranges were not applied"
ctl remove-address "$IQN" 192.0.2.0/24 >/dev/null || it_fail "remove-address failed"
[[ $(login) == ready ]] || it_fail "a login from an address listed for the initiator failed"
ctl remove-address "$IQN" 127.0.0.1 "$CLIENT_IQN" >/dev/null || it_fail "remove-address failed"
ctl add-address "$IQN" 127.0.0.0/8 >/dev/null || it_fail "add-address failed"
[[ $(login) == ready ]] || it_fail "login after restoring the addresses failed"

# ---- kick: the initiator sees its session end ----

if ctl kick "$IQN" "iqn.1999-01.example:nobody,i,0x1" 2>"$IT_TMP/kick.err"; then
	it_fail "kick of a session that does not exist succeeded"
fi
[[ $(jq -r .code "$IT_TMP/kick.err") == -32001 ]] || it_fail "kick: $(cat "$IT_TMP/kick.err")"
ctl kick "$IQN" "$IPORT" >"$IT_TMP/kick.json" || it_fail "kick failed"
[[ $(jq -r .kicked "$IT_TMP/kick.json") == "$IPORT" ]] || it_fail "kick: $(cat "$IT_TMP/kick.json")"
it_ask wait_logout 40 # it_ask waits 60 s for the answer
[[ "$ANSWER" == logged_out ]] || it_fail "the kicked initiator: $ANSWER"
no_session() { [[ $(sessions) == 0 ]]; }
wait_for "the kicked session to go" no_session
it_log "kick: the initiator saw its session end"

# ---- protocol errors ----

code() { jq -r '.error.code' <<<"$1"; }
a=$(rpc 'not json')
[[ $(code "$a") == -32700 ]] || it_fail "bad JSON: $a"
a=$(rpc '{"jsonrpc":"2.0","method":"nope","id":7}')
[[ $(code "$a") == -32601 && $(jq -r .id <<<"$a") == 7 ]] || it_fail "unknown method: $a"
a=$(rpc '{"jsonrpc":"1.0","method":"show","id":1}')
[[ $(code "$a") == -32600 ]] || it_fail "wrong version: $a"
a=$(rpc '{"jsonrpc":"2.0","method":"kick","params":[1],"id":1}')
[[ $(code "$a") == -32602 ]] || it_fail "params not an object: $a"
a=$(rpc '{"jsonrpc":"2.0","method":"kick","params":{},"id":"x"}')
[[ $(code "$a") == -32602 && $(jq -r .id <<<"$a") == x ]] || it_fail "kick without params: $a"
a=$(rpc '{"jsonrpc":"2.0","method":"show"}')
[[ -z "$a" ]] || it_fail "a notification was answered: $a"
a=$(rpc "$(head -c 70000 /dev/zero | tr '\0' ' ')")
[[ $(code "$a") == -32600 ]] || it_fail "oversized request: $a"
# 16 idle connections held open: the 17th is turned away, and served again once they close.
a=$(python3 - "$SOCK" <<'PY'
import socket, sys
held = []
for i in range(16):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sys.argv[1])
    held.append(s)
s = socket.socket(socket.AF_UNIX)
s.settimeout(30)
s.connect(sys.argv[1])
print(s.makefile().readline().strip())
PY
)
[[ $(code "$a") == -32603 ]] || it_fail "17th connection: $a"
ctl show >/dev/null || it_fail "the daemon stopped answering after bad requests"

# ---- save: the running configuration (with the runtime changes) loads back the same ----

ctl add-lun "$IQN" 5 backend=ram size=2M serial=ctl-lun5 offline=yes read_only=yes >/dev/null ||
	it_fail "add-lun 5 failed"
ctl add-initiator "$IQN" iqn.1999-01.example:third >/dev/null || it_fail "add-initiator failed"
ctl add-address "$IQN" 10.1.0.0/16 "$CLIENT_IQN" >/dev/null || it_fail "add-address failed"
(cd "$IT_TMP" && ctl save saved.conf) >"$IT_TMP/save.json" || it_fail "save failed"
[[ $(jq -r .saved "$IT_TMP/save.json") == "$IT_TMP/saved.conf" ]] ||
	it_fail "save: $(cat "$IT_TMP/save.json")"
[[ $(stat -c %a "$IT_TMP/saved.conf") == 600 ]] || it_fail "saved file mode $(stat -c %a "$IT_TMP/saved.conf")"
"$IT_TARGET" -t "$IT_TMP/saved.conf" >/dev/null || it_fail "scsitgtd -t refused the saved file"
# show without what a restart changes (sessions).
state() { ctl show | jq -S 'del(.targets[].sessions)'; }
state >"$IT_TMP/before.json"
grep -q ctl-lun5 "$IT_TMP/saved.conf" || it_fail "saved file lacks LUN 5"
if ctl save relative/missing/dir.conf 2>"$IT_TMP/err.json"; then
	it_fail "save into a missing directory succeeded"
fi
echo "quit" >&"$CL_IN" || true

# ---- stop: the socket goes; after a crash a stale one is replaced ----

it_stop || it_fail "scsitgtd exited with $?"
IT_PID=
[[ ! -e "$SOCK" ]] || it_fail "the socket outlived the daemon"
# Two: the second daemon refused above stopped too.
wait_notified 2 STOPPING=1 || it_fail "no STOPPING=1: $(cat "$IT_TMP/notify.log")"
unset NOTIFY_SOCKET
try_start "$IT_TMP/saved.conf" || it_fail "the saved file does not start"
state >"$IT_TMP/after.json"
diff -u "$IT_TMP/before.json" "$IT_TMP/after.json" >&2 ||
	it_fail "show after a restart on the saved file differs"
it_log "save: a restart on the saved file shows the same state"
it_stop || it_fail "scsitgtd exited with $?"
IT_PID=
try_start "$CONF" || it_fail "restart failed: $(tail -3 "$IT_TMP/target.err")"
kill -KILL "$IT_PID"
wait "$IT_PID" 2>/dev/null || true
[[ -S "$SOCK" ]] || it_fail "no socket left by the killed daemon (the stale case is untested)"
try_start "$CONF" || it_fail "a stale socket stopped the start: $(tail -3 "$IT_TMP/target.err")"
grep -q "removed a stale socket" "$IT_TMP/target.err" || it_fail "stale socket: no message"
ctl show >/dev/null || it_fail "no answer after replacing a stale socket"
it_stop || it_fail "scsitgtd exited with $?"
IT_PID=

# ---- runtime changes pass the file's checks across sections (review33 D1) ----
# An rbd_gateway target has exactly one LUN, its RBD one: a LUN added or removed at runtime
# that breaks this is refused as the file would be, and what save writes still starts. The
# image need not open (a ceph.conf that does not exist: the open fails at once, logged).
GW_IQN=iqn.2024-01.org.example:ctl-gw
GW_CONF=$IT_TMP/gateway.conf
cat >"$GW_CONF" <<CONF
[engine]
log_level = info
control_socket = $SOCK

[target]
name = $GW_IQN
rbd_gateway = 1
initiator = $CLIENT_IQN

[lun 0]
backend = rbd
path = pool/image
rbd_conf = $IT_TMP/no-such-ceph.conf
CONF
"$IT_TARGET" -t "$GW_CONF" >/dev/null || it_fail "scsitgtd -t refused the gateway file"
try_start "$GW_CONF" || it_fail "the gateway file does not start: $(tail -3 "$IT_TMP/target.err")"
# refused CODE WHAT CMD...: CMD fails with JSON-RPC error CODE whose message has WHAT.
refused() {
	local want=$1 what=$2
	shift 2
	if ctl "$@" 2>"$IT_TMP/err.json"; then
		it_fail "$* succeeded on a gateway target"
	fi
	[[ $(jq -r .code "$IT_TMP/err.json") == "$want" ]] && grep -q "$what" "$IT_TMP/err.json" ||
		it_fail "$*: $(cat "$IT_TMP/err.json")"
}
refused -32602 "rbd_gateway needs exactly one LUN" add-lun "$GW_IQN" 1 backend=ram size=1M
refused -32602 "rbd_gateway needs exactly one LUN" remove-lun "$GW_IQN" 0
# Its one LUN failed (no ceph.conf): show lists it so, with why.
[[ $(ctl show | jq -c '[.targets[0].luns[] | [.id, .state]]') == '[[0,"failed"]]' ]] ||
	it_fail "a refused change touched the LUNs: $(ctl show)"
# What the file allows still goes.
ctl add-initiator "$GW_IQN" iqn.1999-01.example:gw-other >/dev/null ||
	it_fail "add-initiator on a gateway target failed"
(cd "$IT_TMP" && ctl save gw-saved.conf) >/dev/null || it_fail "save of the gateway target failed"
"$IT_TARGET" -t "$IT_TMP/gw-saved.conf" >/dev/null 2>"$IT_TMP/gw-check.err" ||
	it_fail "scsitgtd -t refused the saved gateway file: $(cat "$IT_TMP/gw-check.err")"
it_stop || it_fail "scsitgtd exited with $?"
IT_PID=
it_log "runtime changes that break rbd_gateway's one LUN are refused; save stays loadable"

# ---- SIGTERM while a backend holds an io past drain_timeout_ms (review33 D3) ----
# A file LUN behind fault = hang@write: the write never comes back, the engine gives up on it
# (docs/threading.md "Teardown" 3) and never closes the backend: the daemon must close what
# the engine left to it, and exit, with status 0 (its file backend's handles on the loop would
# keep it running for good).
HANG_IQN=iqn.2024-01.org.example:ctl-hang
HANG_CONF=$IT_TMP/hang.conf
truncate -s 4M "$IT_TMP/hang.img"
HANG_PORT=$(it_free_port)
cat >"$HANG_CONF" <<CONF
[engine]
log_level = info
control_socket = $SOCK
drain_timeout_ms = 500
logout_timeout_ms = 500

[portal]
address = 127.0.0.1
port = $HANG_PORT

[target]
name = $HANG_IQN

[lun 0]
backend = file
path = $IT_TMP/hang.img
fault = hang@write
CONF
try_start "$HANG_CONF" || it_fail "the hang file does not start: $(tail -3 "$IT_TMP/target.err")"
mkfifo "$IT_TMP/hang.in"
"$CLIENT" "iscsi://127.0.0.1:$HANG_PORT/$HANG_IQN/0" <"$IT_TMP/hang.in" >"$IT_TMP/hang.out" \
	2>>"$IT_TMP/client.err" &
IT_HELPER_PIDS+=($!)
exec {HANG_FD}>"$IT_TMP/hang.in"
hang_ready() { grep -q '^ready$' "$IT_TMP/hang.out"; }
wait_for "the hung client's login" hang_ready
echo "write 0 0 8" >&"$HANG_FD"
held() { [[ $(ctl stats | jq -r '.targets[0].luns[0].inflight') == 1 ]]; }
wait_for "the write to be held by the backend" held
st=0
it_stop || st=$?
exec {HANG_FD}>&-
[[ $st -eq 0 ]] || it_fail "SIGTERM with a held write: exit status $st (137: it never exited)"
grep -q "ios still in backend" "$IT_TMP/target.err" ||
	it_fail "the engine did not give up on the held write: $(tail -5 "$IT_TMP/target.err")"
grep -q "LUN 0: backend closed after the engine gave up on its ios" "$IT_TMP/target.err" ||
	it_fail "no word of the backend closed after shutdown: $(tail -5 "$IT_TMP/target.err")"
IT_PID=
it_log "SIGTERM with a write held past drain_timeout_ms: the daemon closes the backend and exits"
it_log "PASS"
