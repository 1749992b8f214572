#!/bin/bash
# scsitgtd_ops.sh SCSITGTD - scsitgtd as an operator's daemon (docs/scsitgtd.md):
# pidfile = PATH is written with the daemon's pid once it is ready, a second daemon on the same
# file is refused while the first runs, the file is removed at a clean stop, and a file left by
# a daemon that died (nobody holds its lock) is taken over; a SIGTERM while the start waits for
# an RBD image to open stops the daemon without "ready" (with librbd). Log lines begin with a UTC timestamp,
# or with a syslog priority prefix ("<5>", sd-daemon(3)) when JOURNAL_STREAM names stderr.
# Reload feedback: a file with several errors is refused with every one of them as FILE:LINE
# (by -t and by SIGHUP, the running configuration kept), and an accepted reload logs one
# "change:" line per change applied (LUNs, ACL, addresses, CHAP: never the secret).
# The metrics listener (metrics = ADDR:PORT, needs json-c): GET /metrics gives the Prometheus
# text (promtool check metrics) with the right head, HEAD the head alone; other paths 404,
# other methods 405, garbage 400, an endless head 431; clients that send slowly, never send or
# never read do not stop it from answering the next one, and more connections than it serves
# at once are refused without harm.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
it_init "${1:-}"
# ThreadSanitizer builds: Ceph's client libraries, loaded by the RBD LUN below, are not
# instrumented: tests/tsan.supp ignores what happens inside them (as rbd_lib.sh does).
TSAN_SUPP=$(cd "$(dirname "$0")/.." && pwd)/tsan.supp
case ":${TSAN_OPTIONS:-}:" in
*:suppressions=*) ;;
*) export TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}suppressions=$TSAN_SUPP" ;;
esac

CONF=$IT_TMP/scsitgtd.conf
PIDFILE=$IT_TMP/scsitgtd.pid

# write_conf [EXTRA-ENGINE-LINES]: one target with a RAM LUN, no portal (nothing to bind).
write_conf() {
	cat >"$CONF" <<CONF
[engine]
log_level = info
pidfile = $PIDFILE
${1:-}

[target]
name = iqn.2026-12.org.example:ops

[lun 0]
backend = ram
size = 8M
CONF
}

# ---- pidfile ----
write_conf
it_scsitgtd_start "$CONF"
[[ -f "$PIDFILE" ]] || it_fail "pidfile: not written once ready"
[[ "$(cat "$PIDFILE")" == "$IT_PID" ]] || it_fail "pidfile: holds '$(cat "$PIDFILE")', pid is $IT_PID"

st=0
"$IT_TARGET" "$CONF" </dev/null >"$IT_TMP/second.out" 2>"$IT_TMP/second.err" || st=$?
[[ $st -eq 1 ]] || it_fail "a second scsitgtd on the same pidfile: exit $st, not 1"
grep -q "pidfile $PIDFILE: held by a running scsitgtd (pid $IT_PID)" "$IT_TMP/second.err" ||
	it_fail "second scsitgtd: no clear message: $(cat "$IT_TMP/second.err")"
[[ "$(cat "$PIDFILE")" == "$IT_PID" ]] || it_fail "pidfile changed by the refused daemon"
it_log "ok: a second scsitgtd on the pidfile is refused while pid $IT_PID runs"

it_stop || it_fail "scsitgtd did not stop cleanly"
[[ ! -e "$PIDFILE" ]] || it_fail "pidfile left behind after a clean stop"
it_log "ok: pidfile removed at a clean stop"

# A file nobody holds (a daemon that died): taken over.
echo 999999 >"$PIDFILE"
it_scsitgtd_start "$CONF"
[[ "$(cat "$PIDFILE")" == "$IT_PID" ]] || it_fail "stale pidfile not taken over"
it_stop || it_fail "scsitgtd did not stop cleanly"
it_log "ok: a stale pidfile is taken over"

# SIGTERM while the start still waits for an RBD image to open (a monitor nobody answers on,
# until rbd_op_timeout): the daemon stops without ever saying it is ready (review33 N7).
if grep -q librbd <<<"$(ldd "$IT_TARGET")"; then
	printf '[global]\nmon_host = 127.0.0.1:%s\nauth_client_required = none\n' \
		"$(it_free_port)" >"$IT_TMP/dead-ceph.conf"
	write_conf
	printf '\n[lun 1]\nbackend = rbd\npath = pool/image\nrbd_conf = %s\nrbd_op_timeout = 10\n' \
		"$IT_TMP/dead-ceph.conf" >>"$CONF"
	"$IT_TARGET" "$CONF" </dev/null >"$IT_TMP/target.out" 2>"$IT_TMP/target.err" &
	IT_PID=$!
	it_wait_log "$IT_TMP/target.err" "LUN 1: opening rbd"
	st=0
	it_stop || st=$? # one SIGTERM; the open ends within rbd_op_timeout
	[[ $st -eq 0 ]] || it_fail "SIGTERM during the start's RBD open: exit status $st"
	stop_at=$(grep -n "\] stopping$" "$IT_TMP/target.err" | head -1 | cut -d: -f1)
	open_end=$(grep -n "LUN 1: backend" "$IT_TMP/target.err" | head -1 | cut -d: -f1)
	[[ -n "$stop_at" && -n "$open_end" && $stop_at -lt $open_end ]] ||
		it_fail "the RBD open ended before the SIGTERM: did it not wait for the monitor?"
	if grep -q "scsitgtd: ready" "$IT_TMP/target.out"; then
		it_fail "scsitgtd said ready after a SIGTERM during its start"
	fi
	[[ ! -e "$PIDFILE" ]] || it_fail "pidfile left behind by a SIGTERM during the start"
	it_log "ok: SIGTERM during the start's RBD open stops without \"ready\""
else
	it_log "scsitgtd without librbd: SIGTERM during an RBD open at start not checked"
fi

# ---- log line prefixes ----
# check_lines RE WHAT: every line of the last run's stderr matches RE.
check_lines() {
	[[ -s "$IT_TMP/target.err" ]] || it_fail "$2: scsitgtd logged nothing"
	if grep -E -v -n "$1" "$IT_TMP/target.err" >&2; then
		it_fail "$2: the lines above lack the prefix"
	fi
}
TS='^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z scsitgtd: '
check_lines "$TS" "without journald"
grep -E -q "${TS}notice: \[scsitgtd\] stopping$" "$IT_TMP/target.err" ||
	it_fail "no timestamped notice line"

# stderr is the file JOURNAL_STREAM names (device:inode, as systemd sets it).
: >"$IT_TMP/target.err"
JOURNAL_STREAM=$(stat -c '%d:%i' "$IT_TMP/target.err")
export JOURNAL_STREAM
it_scsitgtd_start "$CONF"
it_stop || it_fail "scsitgtd did not stop cleanly"
check_lines '^<[3-7]>scsitgtd: ' "under journald"
grep -q '^<5>scsitgtd: notice: \[scsitgtd\] stopping$' "$IT_TMP/target.err" ||
	it_fail "journald: notice is not <5>"
grep -q '^<6>scsitgtd: info: ' "$IT_TMP/target.err" || it_fail "journald: info is not <6>"

# JOURNAL_STREAM of another file (inherited, stderr redirected): timestamps again.
JOURNAL_STREAM=$(stat -c '%d:%i' "$CONF")
it_scsitgtd_start "$CONF"
it_stop || it_fail "scsitgtd did not stop cleanly"
check_lines "$TS" "JOURNAL_STREAM of another file"
unset JOURNAL_STREAM
it_log "ok: priority prefixes under journald, timestamps otherwise"

# ---- conn_workers: the engine option, read at start (a reload that changes it says so) ----
# The environment's SCSITGT_CONN_WORKERS would override the option (docs/threading.md).
unset SCSITGT_CONN_WORKERS SCSITGT_EXPERIMENTAL_CONN_WORKERS
write_conf $'workers = 2\nconn_workers = no'
it_scsitgtd_start "$CONF"
grep -q "2 worker threads, only the connections' sockets on them$" "$IT_TMP/target.err" ||
	it_fail "conn_workers = no: $(grep 'worker threads' "$IT_TMP/target.err" || echo no line)"
write_conf $'workers = 2\nconn_workers = yes'
it_reload
grep -q "warning: \[scsitgtd\] conn_workers: takes effect at the next start" \
	"$IT_TMP/target.err" || it_fail "reload of conn_workers: no warning"
it_stop || it_fail "scsitgtd did not stop cleanly"
it_scsitgtd_start "$CONF"
grep -q "2 worker threads, each connection on one of them end to end$" "$IT_TMP/target.err" ||
	it_fail "conn_workers = yes: $(grep 'worker threads' "$IT_TMP/target.err" || echo no line)"
it_stop || it_fail "scsitgtd did not stop cleanly"
it_log "ok: conn_workers set at start, a reload that changes it warns"

# ---- reload feedback ----
IQN=iqn.2026-12.org.example:ops
write_conf
it_scsitgtd_start "$CONF"
cp "$CONF" "$IT_TMP/good.conf"
# Three errors: an unknown key (line 4), a bad value (line 11), a broken header (line 13).
cat >"$CONF" <<CONF
[engine]
log_level = info
pidfile = $PIDFILE
no_such_key = 1

[target]
name = $IQN

[lun 0]
backend = ram
size = lots

[lun 1
backend = ram
CONF
st=0
"$IT_TARGET" -t "$CONF" >/dev/null 2>"$IT_TMP/t.err" || st=$?
[[ $st -eq 1 ]] || it_fail "-t on a file with three errors: exit $st"
for want in "$CONF:4: unknown key \"no_such_key\" in \[engine\]" "$CONF:11: size" \
	"$CONF:13: section header without closing"; do
	grep -q "^scsitgtd: $want" "$IT_TMP/t.err" || it_fail "-t: no \"$want\" in: $(cat "$IT_TMP/t.err")"
done
[[ $(wc -l <"$IT_TMP/t.err") -eq 3 ]] || it_fail "-t: not three lines: $(cat "$IT_TMP/t.err")"
kill -HUP "$IT_PID"
for ((i = 0; i < 600; i++)); do
	grep -q "reload refused, configuration kept: 3 errors" "$IT_TMP/target.err" && break
	sleep 0.1
done
grep -q "reload refused, configuration kept: 3 errors" "$IT_TMP/target.err" ||
	it_fail "reload of a broken file: no refusal: $(tail -5 "$IT_TMP/target.err")"
for want in "$CONF:4: unknown key" "$CONF:11: size" "$CONF:13: section header"; do
	grep -q "scsitgtd: error: \[scsitgtd\] $want" "$IT_TMP/target.err" ||
		it_fail "reload: \"$want\" not logged: $(tail -5 "$IT_TMP/target.err")"
done
it_log "ok: every error of a broken file reported with FILE:LINE (-t and SIGHUP)"

# An accepted reload: one line per change, secrets never printed.
cp "$IT_TMP/good.conf" "$CONF"
sed -i "s|^name = $IQN\$|name = $IQN\ninitiator = iqn.2026-12.org.example:ini1\naddress = 10.0.0.0/8\nchap = alice:supersecret123456|" "$CONF"
printf '\n[lun 1]\nbackend = null\nsize = 4M\n' >>"$CONF"
sed -i 's|^size = 8M$|size = 8M\noffline = yes|' "$CONF"
it_reload
for want in "$IQN LUN 1: created (line" "$IQN: initiator iqn.2026-12.org.example:ini1 added to the access list" \
	"$IQN: address 10.0.0.0/8 added" "$IQN: chap set (user alice)" "$IQN LUN 0: offline"; do
	grep -q "notice: \[scsitgtd\] change: $want" "$IT_TMP/target.err" ||
		it_fail "reload: no \"change: $want\": $(grep change: "$IT_TMP/target.err")"
done
sed -i 's|^chap = alice:supersecret123456$|chap = alice:othersecret7890123|' "$CONF"
sed -i '/^\[lun 1\]$/,$d' "$CONF"
it_reload
for want in "$IQN: chap secret changed (user alice)" "$IQN LUN 1: removed"; do
	grep -q "notice: \[scsitgtd\] change: $want" "$IT_TMP/target.err" ||
		it_fail "reload: no \"change: $want\": $(grep change: "$IT_TMP/target.err")"
done
if grep -E -q "supersecret|othersecret" "$IT_TMP/target.err" "$IT_TMP/target.out"; then
	it_fail "a CHAP secret was logged"
fi
it_stop || it_fail "scsitgtd did not stop cleanly"
it_log "ok: reload changes logged one per line, no secret"

# ---- metrics listener ----
it_need curl python3
MPORT=$(it_free_port)
write_conf "metrics = 127.0.0.1:$MPORT"
# Both logs emptied first: target.out still holds the last daemon's "ready", and the child's
# own truncation may come after the first grep below.
: >"$IT_TMP/target.out"
: >"$IT_TMP/target.err"
if ! { "$IT_TARGET" "$CONF" </dev/null >"$IT_TMP/target.out" 2>"$IT_TMP/target.err" & IT_PID=$!
	for ((i = 0; i < IT_START_TIMEOUT * 10; i++)); do
		grep -q "scsitgtd: ready" "$IT_TMP/target.out" && break
		kill -0 "$IT_PID" 2>/dev/null || break
		sleep 0.1
	done
	grep -q "scsitgtd: ready" "$IT_TMP/target.out"; }; then
	# exited (it_cleanup kills one that runs without saying ready)
	kill -0 "$IT_PID" 2>/dev/null && it_fail "scsitgtd never became ready"
	wait "$IT_PID" 2>/dev/null || true
	IT_PID=
	grep -q "built without json-c" "$IT_TMP/target.err" &&
		it_skip "scsitgtd built without json-c: no metrics listener"
	it_fail "scsitgtd with a metrics listener did not start: $(cat "$IT_TMP/target.err")"
fi
URL=http://127.0.0.1:$MPORT/metrics

curl -sS -D "$IT_TMP/m.head" -o "$IT_TMP/m.body" "$URL" || it_fail "curl $URL failed"
grep -q '^HTTP/1.1 200 OK' "$IT_TMP/m.head" || it_fail "GET: $(head -1 "$IT_TMP/m.head")"
grep -qi '^Content-Type: text/plain; version=0.0.4; charset=utf-8' "$IT_TMP/m.head" ||
	it_fail "GET: no Prometheus content type: $(cat "$IT_TMP/m.head")"
grep -qi '^Connection: close' "$IT_TMP/m.head" || it_fail "GET: no Connection: close"
len=$(tr -d '\r' <"$IT_TMP/m.head" | awk -F': ' 'tolower($1) == "content-length" { print $2 }')
[[ "$len" == "$(stat -c %s "$IT_TMP/m.body")" ]] ||
	it_fail "Content-Length $len, body $(stat -c %s "$IT_TMP/m.body") bytes"
grep -q '^scsitgt_lun_read_commands_total{target="iqn.2026-12.org.example:ops",lun="0"} 0$' \
	"$IT_TMP/m.body" || it_fail "GET: no LUN counter in: $(head -5 "$IT_TMP/m.body")"
grep -q '^# TYPE scsitgt_lun_latency_seconds histogram$' "$IT_TMP/m.body" ||
	it_fail "GET: no latency histogram"
if command -v promtool >/dev/null; then
	promtool check metrics <"$IT_TMP/m.body" >&2 || it_fail "promtool check metrics failed"
else
	it_log "promtool not installed (Debian: prometheus): format not checked"
fi
it_log "ok: GET /metrics: $(wc -l <"$IT_TMP/m.body") lines, Prometheus text"

# HEAD: the same head, no body.
curl -sS -I -o "$IT_TMP/h.head" "$URL" || it_fail "curl -I failed"
grep -q '^HTTP/1.1 200 OK' "$IT_TMP/h.head" || it_fail "HEAD: $(head -1 "$IT_TMP/h.head")"
code=$(curl -sS -o /dev/null -w '%{http_code}' "http://127.0.0.1:$MPORT/")
[[ "$code" == 404 ]] || it_fail "GET /: $code, not 404"
code=$(curl -sS -o /dev/null -w '%{http_code}' "http://127.0.0.1:$MPORT/metricsx")
[[ "$code" == 404 ]] || it_fail "GET /metricsx: $code, not 404"
curl -sS -X POST -d x -D "$IT_TMP/p.head" -o /dev/null "$URL" || it_fail "POST: curl failed"
grep -q '^HTTP/1.1 405 Method Not Allowed' "$IT_TMP/p.head" || it_fail "POST: $(head -1 "$IT_TMP/p.head")"
grep -qi '^Allow: GET, HEAD' "$IT_TMP/p.head" || it_fail "405 without Allow"

# Raw clients (python): garbage, an endless head, slow, silent and non-reading clients, a flood.
python3 - "$MPORT" <<'PY' || it_fail "raw HTTP clients: see above"
import socket, sys, time
port = int(sys.argv[1])
WAIT = 60  # upper bound for one answer on a loaded machine

def conn():
    s = socket.create_connection(("127.0.0.1", port), timeout=WAIT)
    return s

def answer(s):
    data = b""
    while True:
        b = s.recv(65536)
        if not b:
            return data
        data += b

def status(data):
    return data.split(b"\r\n", 1)[0].decode(errors="replace")

def check(what, data, want):
    if not data.startswith(("HTTP/1.1 %d " % want).encode()):
        sys.exit("%s: %r, expected %d" % (what, data[:80], want))
    print("ok: %s -> %s" % (what, status(data)), file=sys.stderr)

def get_ok(what):
    # A connection accepted while the daemon has not yet seen the client-side closes of
    # earlier ones may be over its limit and closed unanswered: retry that (bounded).
    deadline = time.monotonic() + WAIT
    while True:
        s = conn()
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        try:
            data = answer(s)
        except ConnectionResetError:
            data = b""
        s.close()
        if data or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    check(what, data, 200)

# Garbage (a TLS client hello), a NUL in a field, HTTP/2: answered and closed.
for what, req, want in [
        ("tls hello", bytes.fromhex("16030100a5010000a10303") + b"\r\n", 400),
        ("nul in a field", b"GET /metrics HTTP/1.1\r\nA: \0\r\n\r\n", 400),
        ("http/2.0", b"GET /metrics HTTP/2.0\r\n\r\n", 505),
        ("bare cr", b"GET /metrics HTTP/1.1\rX", 400)]:
    s = conn()
    s.sendall(req)
    check(what, answer(s), want)
    s.close()

# An endless head: 431 once the limit is read, the rest dropped, then the connection ends.
s = conn()
s.sendall(b"GET /metrics HTTP/1.1\r\n")
data = b""
try:
    for i in range(64):
        s.sendall(b"X-Filler: " + b"a" * 1000 + b"\r\n")
except (BrokenPipeError, ConnectionResetError):
    pass
try:
    data = answer(s)
except ConnectionResetError:
    sys.exit("endless head: reset before the answer arrived")
check("endless head", data, 431)
s.close()

# A client that sent half a request and waits, one that sends nothing, one that never reads
# a large answer, and a flood beyond the connection limit: none stops the next scrape.
slow = conn()
slow.sendall(b"GET /met")
silent = conn()
noread = []
for i in range(4):
    c = conn()
    c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
    c.sendall(b"GET /metrics HTTP/1.1\r\n\r\n")
    noread.append(c)
get_ok("scrape beside slow, silent and non-reading clients")
flood = []
for i in range(40):
    try:
        flood.append(conn())
    except OSError as e:
        break
# The flood's connections past the limit are closed by the daemon; those it serves time out.
for c in flood:
    c.close()
# The slow client: answered, unless the daemon's timer already closed it (a loaded machine).
try:
    slow.sendall(b"rics HTTP/1.1\r\n\r\n")
    data = answer(slow)
except (BrokenPipeError, ConnectionResetError):
    data = b""
if data:
    check("slow client completing its request", data, 200)
else:
    print("ok: slow client closed by the daemon's timer", file=sys.stderr)
# The silent client is closed by the daemon's timer (bounded: WAIT).
silent.settimeout(WAIT)
if silent.recv(1) != b"":
    sys.exit("silent client: got data")
print("ok: a silent client is closed by the daemon", file=sys.stderr)
for c in noread:
    c.close()
get_ok("scrape after the others")

# A client that half-closes after its request still gets the answer.
s = conn()
s.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
s.shutdown(socket.SHUT_WR)
check("half-closed client", answer(s), 200)
PY
it_alive || it_fail "scsitgtd died under the raw clients"
it_stop || it_fail "scsitgtd did not stop cleanly"
it_log "ok: metrics listener"

it_log "PASS"
