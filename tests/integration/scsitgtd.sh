#!/bin/bash
# scsitgtd.sh SCSITGTD - the config-driven daemon (examples/scsitgtd, docs/scsitgtd.md): serve a
# config, check it with iscsi-ls/iscsi-inq, add LUNs with SIGHUP under a logged-in initiator
# (REPORTED LUNS DATA HAS CHANGED), refuse a broken config on reload, print stats on SIGUSR1,
# stop cleanly on SIGTERM.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
it_init "${1:-}"
it_need iscsi-ls iscsi-inq python3

IQN=iqn.2024-01.org.libscsitgt:scsitgtd
CONF=$IT_TMP/scsitgtd.conf

# A free port of the range this test may use (3360-3369).
PORT=$(python3 -c 'import socket
for p in range(3360, 3370):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
    except OSError:
        continue
    finally:
        s.close()
    print(p)
    break')
[[ -n "$PORT" ]] || it_skip "no free port in 3360-3369"

cat >"$CONF" <<CONF
# scsitgtd integration test
[engine]
log_level = info

[portal]
address = 127.0.0.1
port = $PORT

[target $IQN]
alias = it-disk

[lun 0]
backend = ram
size = 64M
serial = it-lun0
pr_file = $IT_TMP/lun0.pr
CONF

"$IT_TARGET" -t "$CONF" >/dev/null || it_fail "scsitgtd -t refused a valid config"
printf '[lun 0]\nbackend = ram\n' >"$IT_TMP/bad.conf"
if "$IT_TARGET" -t "$IT_TMP/bad.conf" 2>"$IT_TMP/bad.err"; then
	it_fail "scsitgtd -t accepted a LUN outside any target"
fi
grep -q "bad.conf:1:" "$IT_TMP/bad.err" || it_fail "no file:line in: $(cat "$IT_TMP/bad.err")"

: >"$IT_TMP/target.out"
"$IT_TARGET" "$CONF" </dev/null >"$IT_TMP/target.out" 2>"$IT_TMP/target.err" &
IT_PID=$!
for ((i = 0; i < IT_START_TIMEOUT * 10; i++)); do
	grep -q "scsitgtd: ready" "$IT_TMP/target.out" && break
	kill -0 "$IT_PID" 2>/dev/null || it_fail "scsitgtd exited at start"
	sleep 0.1
done
grep -q "scsitgtd: ready" "$IT_TMP/target.out" || it_fail "scsitgtd never became ready"
it_log "scsitgtd pid $IT_PID on 127.0.0.1:$PORT"

[[ ! -e "$IT_TMP/lun0.pr" ]] || it_fail "pr_file written before any reservation"
ls_out=$(iscsi-ls -s "iscsi://127.0.0.1:$PORT") || it_fail "iscsi-ls failed"
grep -q "Target:$IQN" <<<"$ls_out" || it_fail "iscsi-ls: no $IQN in: $ls_out"
grep -q "Lun:0" <<<"$ls_out" || it_fail "iscsi-ls: no LUN 0 in: $ls_out"
inq=$(iscsi-inq -e 1 -c 128 "iscsi://127.0.0.1:$PORT/$IQN/0") || it_fail "iscsi-inq failed"
grep -q "it-lun0" <<<"$inq" || it_fail "iscsi-inq: no serial it-lun0 in: $inq"
it_log "ok: iscsi-ls and iscsi-inq see the configured LUN"

python3 "$(dirname "$0")/scsitgtd_reload.py" "$PORT" "$IQN" "$CONF" "$IT_PID" \
	"$IT_TMP/target.out" || it_fail "reload under a logged-in initiator"
# The REGISTER of the reload script: an event, and the APTPL state in the LUN's pr_file.
grep -q "event reservation-changed: $IQN LUN 0 by iqn.2026-11.org.libscsitgt:hostile" \
	"$IT_TMP/target.err" || it_fail "no reservation-changed event"
[[ -s "$IT_TMP/lun0.pr" ]] || it_fail "pr_file not written after PR OUT REGISTER with APTPL"
# (iscsi-ls -s would stop at the offline LUN 2's TEST UNIT READY: ask LUN 1 directly.)
iscsi-inq "iscsi://127.0.0.1:$PORT/$IQN/1" >/dev/null || it_fail "iscsi-inq LUN 1 after reload"

# A broken file is refused; the running configuration stays.
cp "$CONF" "$IT_TMP/good.conf"
echo "bogus line" >>"$CONF"
kill -HUP "$IT_PID"
for ((i = 0; i < 300; i++)); do
	grep -q "reload refused" "$IT_TMP/target.err" && break
	sleep 0.1
done
grep -q "reload refused.*scsitgtd.conf:" "$IT_TMP/target.err" || it_fail "broken reload not refused"
it_alive || it_fail "scsitgtd died on a broken reload"
iscsi-inq "iscsi://127.0.0.1:$PORT/$IQN/1" >/dev/null || it_fail "LUN 1 gone after a refused reload"
cp "$IT_TMP/good.conf" "$CONF"

# CHAP and the access list change at run time and apply to the next login.
sed -i 's/^alias = it-disk$/alias = it-disk\nchap = it-user:it-secret-0123\ninitiator = iqn.2024-01.org.libscsitgt:allowed/' "$CONF"
kill -HUP "$IT_PID"
for ((i = 0; i < 300; i++)); do
	[[ $(grep -c "scsitgtd: reloaded" "$IT_TMP/target.out") -ge 2 ]] && break
	sleep 0.1
done
[[ $(grep -c "scsitgtd: reloaded" "$IT_TMP/target.out") -ge 2 ]] || it_fail "second reload not applied"
U0="iscsi://127.0.0.1:$PORT/$IQN/0"
UC="iscsi://it-user%it-secret-0123@127.0.0.1:$PORT/$IQN/0"
if iscsi-inq -i iqn.2024-01.org.libscsitgt:allowed "$U0" >/dev/null 2>&1; then
	it_fail "login without CHAP accepted after chap was configured"
fi
if iscsi-inq "$UC" >/dev/null 2>&1; then
	it_fail "an initiator outside the access list logged in"
fi
iscsi-inq -i iqn.2024-01.org.libscsitgt:allowed "$UC" >/dev/null ||
	it_fail "listed initiator with the right CHAP secret refused"
it_log "ok: CHAP and access list changed by SIGHUP"

# Stats on request: the LUN counters saw the commands above.
kill -USR1 "$IT_PID"
for ((i = 0; i < 300; i++)); do
	grep -q "^  lun 0 reads" "$IT_TMP/target.out" && break
	sleep 0.1
done
grep -q "^  lun 0 reads [0-9]* writes [0-9]* other [1-9]" "$IT_TMP/target.out" ||
	it_fail "no LUN 0 counters on SIGUSR1: $(cat "$IT_TMP/target.out")"
grep "^  lun" "$IT_TMP/target.out" >&2

it_stop || it_fail "scsitgtd exited with status $? on SIGTERM"
it_log "PASS"
