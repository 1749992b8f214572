#!/bin/bash
# scsitgtd.sh SCSITGTD CLIENT - the config-driven daemon (examples/scsitgtd, docs/scsitgtd.md)
# serving the README's sample (examples/scsitgtd.conf): the README block equals the file; the
# file is served; a libiscsi initiator (CLIENT, scsitgtd_client.c) stays logged in while the
# file changes under SIGHUP and sees each change with the unit attention SPC-5 §5.14 asks for:
# new and removed LUNs (REPORTED LUNS DATA HAS CHANGED), a resize (CAPACITY DATA HAS CHANGED),
# an ALUA state change (ASYMMETRIC ACCESS STATE CHANGED), a LUN offline and back, LUN masking;
# then persistent reservations in pr_dir, injected medium errors, a broken file refused, CHAP,
# per-initiator CHAP, the access list and address ranges changed by SIGHUP, stats on SIGUSR1,
# a clean stop on SIGTERM.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
it_init "${1:-}"
CLIENT=${2:-}
[[ -x "$CLIENT" ]] || it_fail "usage: scsitgtd.sh SCSITGTD SCSITGTD_CLIENT"
it_need iscsi-ls iscsi-inq python3

SRC=$(cd "$(dirname "$0")/../.." && pwd)
SAMPLE=$SRC/examples/scsitgtd.conf
IQN=iqn.2024-01.org.example:storage
CONF=$IT_TMP/scsitgtd.conf

# The README shows the sample verbatim: the first ```ini block after "## Daemon".
awk '/^## Daemon/ { d = 1 } d && /^```ini$/ { p = 1; next } p && /^```$/ { exit } p' \
	"$SRC/README.md" >"$IT_TMP/readme.conf"
diff -u "$SAMPLE" "$IT_TMP/readme.conf" >&2 ||
	it_fail "README's Daemon sample differs from examples/scsitgtd.conf"

PORT=$(it_free_port) || it_fail "cannot pick a free port"

# The sample as it is, but on loopback, on that port, with pr_dir in the temp dir: two levels
# that do not exist yet, as /var/lib/scsitgtd on a fresh machine (scsitgtd makes them).
sed -e "s|^address = 0.0.0.0$|address = 127.0.0.1|" -e "s|^port = 3260$|port = $PORT|" \
	-e "s|^pr_dir = /var/lib/scsitgtd$|pr_dir = $IT_TMP/state/pr|" "$SAMPLE" >"$CONF"
[[ $(diff "$SAMPLE" "$CONF" | grep -c '^>') -eq 3 ]] || it_fail "sample changed: fix the sed above"

"$IT_TARGET" -t "$CONF" >/dev/null || it_fail "scsitgtd -t refused the sample"
printf '[lun 0]\nbackend = ram\n' >"$IT_TMP/bad.conf"
if "$IT_TARGET" -t "$IT_TMP/bad.conf" 2>"$IT_TMP/bad.err"; then
	it_fail "scsitgtd -t accepted a LUN outside any target"
fi
grep -q "bad.conf:1: \[lun N\] before any \[target\]" "$IT_TMP/bad.err" ||
	it_fail "no file:line: message in: $(cat "$IT_TMP/bad.err")"

it_scsitgtd_start "$CONF"
it_log "scsitgtd pid $IT_PID serves the sample on 127.0.0.1:$PORT"

ls_out=$(iscsi-ls -s "iscsi://127.0.0.1:$PORT") || it_fail "iscsi-ls failed"
grep -q "Target:$IQN" <<<"$ls_out" || it_fail "iscsi-ls: no $IQN in: $ls_out"
grep -q "Lun:0" <<<"$ls_out" || it_fail "iscsi-ls: no LUN 0 in: $ls_out"
inq=$(iscsi-inq -e 1 -c 128 "iscsi://127.0.0.1:$PORT/$IQN/0") || it_fail "iscsi-inq failed"
grep -q "sample-lun0" <<<"$inq" || it_fail "iscsi-inq: no serial sample-lun0 in: $inq"

# ---- a logged-in libiscsi initiator across reloads ----

it_client_start "$CLIENT" "iscsi://127.0.0.1:$PORT/$IQN/0"

# expect LUN SENSE: TEST UNIT READY until it reports SENSE (other unit attentions first are
# fine: changes may raise several); fail on GOOD or anything else.
expect() {
	local lun=$1 want="status 2 sense $2" i
	for ((i = 0; i < 8; i++)); do
		it_ask tur "$lun"
		[[ "$ANSWER" == "$want" ]] && return 0
		[[ "$ANSWER" == "status 2 sense 6/"* ]] || break
	done
	it_fail "LUN $lun: expected \"$want\", got \"$ANSWER\""
}

# drain LUN: clear pending unit attentions; the LUN must then be ready.
drain() {
	local i
	for ((i = 0; i < 8; i++)); do
		it_ask tur "$1"
		[[ "$ANSWER" == "status 0" ]] && return 0
		[[ "$ANSWER" == "status 2 sense 6/"* ]] || break
	done
	it_fail "LUN $1 not ready: $ANSWER"
}

drain 0
it_ask luns
[[ "$ANSWER" == "luns 0" ]] || it_fail "REPORT LUNS before reload: $ANSWER"

# 1. New LUNs: the logged-in nexus learns by REPORTED LUNS DATA HAS CHANGED (3Fh/0Eh).
cat >>"$CONF" <<'EOF'

[lun 1]
backend = ram
size = 32M

[lun 2]
backend = null
size = 16M
offline = yes
EOF
it_reload
expect 0 6/3f0e
it_ask luns
[[ "$ANSWER" == "luns 0 1 2" ]] || it_fail "REPORT LUNS after adding LUNs: $ANSWER"
it_log "ok: LUNs 1 and 2 appeared for the logged-in initiator with REPORTED LUNS DATA HAS CHANGED"
# The offline LUN: NOT READY, LOGICAL UNIT NOT READY, OFFLINE (04h/12h).
expect 2 2/0412
drain 1
it_ask write 1 100 8
[[ "$ANSWER" == "status 0" ]] || it_fail "WRITE to LUN 1: $ANSWER"

# 2. Resize in place: CAPACITY DATA HAS CHANGED (2Ah/09h), the data stays.
sed -i '/^\[lun 1\]$/,/^$/s/^size = 32M$/size = 48M/' "$CONF"
it_reload
expect 1 6/2a09
it_ask cap 1
[[ "$ANSWER" == "cap 98304 512" ]] || it_fail "READ CAPACITY after resize: $ANSWER"
it_ask read 1 100 8
[[ "$ANSWER" == "status 0" ]] || it_fail "data of LUN 1 after resize: $ANSWER"
it_log "ok: LUN 1 resized with CAPACITY DATA HAS CHANGED, data kept"

# 3. ALUA state: ASYMMETRIC ACCESS STATE CHANGED (2Ah/06h), REPORT TARGET PORT GROUPS agrees.
drain 0
it_ask rtpg 0
[[ "$ANSWER" == "groups 1:0" ]] || it_fail "REPORT TARGET PORT GROUPS: $ANSWER"
sed -i 's/^state = active_optimized$/state = active_non_optimized/' "$CONF"
it_reload
expect 0 6/2a06
it_ask rtpg 0
[[ "$ANSWER" == "groups 1:1" ]] || it_fail "REPORT TARGET PORT GROUPS after reload: $ANSWER"
it_log "ok: ALUA group 1 active/non-optimized with ASYMMETRIC ACCESS STATE CHANGED"

# 4. LUN 2 online again, then removed.
sed -i 's/^offline = yes$/offline = no/' "$CONF"
it_reload
drain 2
python3 - "$CONF" <<'PY'
import re, sys
p = sys.argv[1]
t = open(p).read()
t2 = re.sub(r"\n\[lun 2\]\n(?:[^\n\[]+\n)*", "\n", t)
assert t2 != t
open(p, "w").write(t2)
PY
it_reload
expect 0 6/3f0e
it_ask luns
[[ "$ANSWER" == "luns 0 1" ]] || it_fail "REPORT LUNS after removing LUN 2: $ANSWER"
it_log "ok: LUN 2 back online, then removed with REPORTED LUNS DATA HAS CHANGED"

# 5. LUN masking: LUN 1 visible to another initiator only, then to this one, then to all.
ME=iqn.2026-11.org.libscsitgt:scsitgtd-client
sed -i 's/^\[lun 1\]$/[lun 1]\nvisible_to = iqn.2024-01.org.libscsitgt:someone-else/' "$CONF"
it_reload
expect 0 6/3f0e
it_ask tur 1
[[ "$ANSWER" == "status 2 sense 5/2500" ]] || it_fail "masked LUN 1 answered: $ANSWER"
it_ask luns
[[ "$ANSWER" == "luns 0" ]] || it_fail "REPORT LUNS with LUN 1 masked: $ANSWER"
sed -i "s/^visible_to = .*/visible_to = $ME/" "$CONF"
it_reload
expect 0 6/3f0e
it_ask luns
[[ "$ANSWER" == "luns 0 1" ]] || it_fail "REPORT LUNS with LUN 1 mapped to us: $ANSWER"
sed -i '/^visible_to = /d' "$CONF"
it_reload
drain 0
drain 1
it_ask luns
[[ "$ANSWER" == "luns 0 1" ]] || it_fail "REPORT LUNS with masking off: $ANSWER"
it_log "ok: LUN masking by visible_to changed by SIGHUP"

# A file LUN follows its file: it grows, a reload re-reads it (CAPACITY DATA HAS CHANGED).
# LUN 4 the same behind a fault rule: the fault backend passes the size query on.
truncate -s 8M "$IT_TMP/lun3.img" "$IT_TMP/lun4.img"
printf '\n[lun 3]\nbackend = file\npath = %s\n' "$IT_TMP/lun3.img" >>"$CONF"
printf '\n[lun 4]\nbackend = file\npath = %s\nfault = delay=1@write\n' "$IT_TMP/lun4.img" >>"$CONF"
it_reload
expect 0 6/3f0e
drain 3
drain 4
for lun in 3 4; do
	it_ask cap $lun
	[[ "$ANSWER" == "cap 16384 512" ]] || it_fail "READ CAPACITY of file LUN $lun: $ANSWER"
done
truncate -s 16M "$IT_TMP/lun3.img" "$IT_TMP/lun4.img"
it_reload
for lun in 3 4; do
	expect $lun 6/2a09
	it_ask cap $lun
	[[ "$ANSWER" == "cap 32768 512" ]] || it_fail "READ CAPACITY of LUN $lun after its file grew: $ANSWER"
done
it_log "ok: file LUNs added, and resized by SIGHUP after their files grew (one behind a fault rule)"

# 6. A reservation with APTPL lands in pr_dir (SPC-5 §5.13.5).
drain 0
it_ask register 0 1234605616436508552
[[ "$ANSWER" == "status 0" ]] || it_fail "PR OUT REGISTER: $ANSWER"
[[ -s "$IT_TMP/state/pr/$IQN.lun0.pr" ]] ||
	it_fail "no reservations file in pr_dir: $(ls "$IT_TMP/state/pr")"
grep -q "pr_dir $IT_TMP/state/pr: created" "$IT_TMP/target.err" ||
	it_fail "no 'pr_dir created' line in: $(head -5 "$IT_TMP/target.err")"
[[ $(stat -c %a "$IT_TMP/state/pr") == 700 ]] || it_fail "pr_dir's mode: $(stat -c %a "$IT_TMP/state/pr")"
# Events are delivered on the home loop, after the command's status when it ran on a worker
# (docs/threading.md): wait for the line, bounded.
it_wait_log "$IT_TMP/target.err" \
	"event reservation-changed: $IQN LUN 0 by iqn.2026-11.org.libscsitgt:scsitgtd-client"

# Counters while logged in (SIGUSR1): this connection and this nexus are listed.
kill -USR1 "$IT_PID"
it_wait_log "$IT_TMP/target.out" "^conn .* ffp rx_pdus"
grep -q "^conn .* ffp rx_pdus [1-9]" "$IT_TMP/target.out" ||
	it_fail "no connection counters: $(cat "$IT_TMP/target.out")"
grep -q "^  session iqn.2026-11.org.libscsitgt:scsitgtd-client," "$IT_TMP/target.out" ||
	it_fail "no session counters: $(cat "$IT_TMP/target.out")"
grep -q "^  lun 1 reads 1 writes 1 " "$IT_TMP/target.out" ||
	it_fail "LUN 1 counters: $(grep '^  lun 1' "$IT_TMP/target.out")"
it_log "ok: reservation in pr_dir, session and connection counters"

# 7. Fault injection: wrapping LUN 1 re-creates it (REPORTED LUNS DATA HAS CHANGED); new rules
# then apply live. A medium error names its LBA (MEDIUM ERROR, UNRECOVERED READ ERROR).
sed -i 's/^\[lun 1\]$/[lun 1]\nfault = medium@read:lba=100:len=8/' "$CONF"
it_reload
expect 0 6/3f0e
drain 1
it_ask write 1 96 8
[[ "$ANSWER" == "status 0" ]] || it_fail "WRITE under a read fault rule: $ANSWER"
it_ask read 1 96 8
[[ "$ANSWER" == "status 2 sense 3/1100" ]] || it_fail "READ over the faulty blocks: $ANSWER"
sed -i '/^\[lun 1\]$/{n;s/^fault = .*/fault = medium@read:lba=5000:len=1/}' "$CONF"
it_reload
it_ask read 1 96 8
[[ "$ANSWER" == "status 0" ]] || it_fail "READ after the fault rule moved: $ANSWER"
# An event comes after the command's status (see above): wait for it, bounded.
it_wait_log "$IT_TMP/target.err" "event lun-error: $IQN LUN 1 opcode 88h sense 3h/11h/00h" ||
	it_fail "no lun-error event for the injected medium error"
it_ask quit
it_log "ok: fault injection added and changed by SIGHUP"

# ---- refused and accepted reloads without a session ----

# A broken file is refused with file:line; the running configuration stays.
cp "$CONF" "$IT_TMP/good.conf"
echo "bogus line" >>"$CONF"
kill -HUP "$IT_PID"
# (The refusal line comes first, then one line per error.)
BAD_LINE="scsitgtd.conf:$(wc -l <"$CONF"): expected \"key = value\""
it_wait_log "$IT_TMP/target.err" "$BAD_LINE"
grep -q "reload refused, configuration kept: 1 error$" "$IT_TMP/target.err" &&
	grep -q "$BAD_LINE" "$IT_TMP/target.err" || it_fail "broken reload not refused with file:line"
it_alive || it_fail "scsitgtd died on a broken reload"
iscsi-inq "iscsi://127.0.0.1:$PORT/$IQN/1" >/dev/null || it_fail "LUN 1 gone after a refused reload"
cp "$IT_TMP/good.conf" "$CONF"

# CHAP, per-initiator CHAP and the access list change at run time, for the next login.
ALLOWED=iqn.2024-01.org.libscsitgt:allowed
OWN=iqn.2024-01.org.libscsitgt:own
# target_add LINE...: add lines to the [target] section (after its alias).
target_add() {
	local l add=""
	for l in "$@"; do
		add+="\\n$l"
	done
	sed -i "s|^alias = storage$|alias = storage$add|" "$CONF"
	grep -qxF "$1" "$CONF" || it_fail "could not add \"$1\" to $CONF"
}
target_add "chap = it-user:it-secret-0123" "initiator = $ALLOWED" "initiator = $OWN" \
	"initiator_chap = $OWN own-user:own-secret-4567"
it_reload
U0="iscsi://127.0.0.1:$PORT/$IQN/0"
UC="iscsi://it-user%it-secret-0123@127.0.0.1:$PORT/$IQN/0"
if iscsi-inq -i "$ALLOWED" "$U0" >/dev/null 2>&1; then
	it_fail "login without CHAP accepted after chap was configured"
fi
if iscsi-inq "$UC" >/dev/null 2>&1; then
	it_fail "an initiator outside the access list logged in"
fi
iscsi-inq -i "$ALLOWED" "$UC" >/dev/null || it_fail "listed initiator with the right secret refused"
if iscsi-inq -i "$OWN" "$UC" >/dev/null 2>&1; then
	it_fail "an initiator with its own CHAP entry logged in with the target-wide secret"
fi
iscsi-inq -i "$OWN" "iscsi://own-user%own-secret-4567@127.0.0.1:$PORT/$IQN/0" >/dev/null ||
	it_fail "initiator with its own CHAP secret refused"
it_log "ok: CHAP, per-initiator CHAP and the access list changed by SIGHUP"

# Access by source address: a range we are outside of, then one we are inside.
target_add "address = 192.0.2.0/24"
it_reload
if iscsi-inq -i "$ALLOWED" "$UC" >/dev/null 2>&1; then
	it_fail "a login from 127.0.0.1 passed address = 192.0.2.0/24"
fi
sed -i 's|^address = 192.0.2.0/24$|address = 127.0.0.0/8|' "$CONF"
it_reload
iscsi-inq -i "$ALLOWED" "$UC" >/dev/null || it_fail "a login from 127.0.0.1 refused by 127.0.0.0/8"
it_log "ok: access by source address changed by SIGHUP"

# Discovery CHAP: SendTargets needs the discovery secret once [engine] asks for it.
sed -i 's|^\[engine\]$|[engine]\ndiscovery_chap = disc-user:disc-secret-0123|' "$CONF"
it_reload
if iscsi-ls -i "$ALLOWED" "iscsi://127.0.0.1:$PORT" >/dev/null 2>&1; then
	it_fail "discovery without CHAP accepted after discovery_chap was configured"
fi
ls_out=$(iscsi-ls -i "$ALLOWED" "iscsi://disc-user%disc-secret-0123@127.0.0.1:$PORT") ||
	it_fail "discovery with the right CHAP secret refused"
grep -q "Target:$IQN" <<<"$ls_out" || it_fail "iscsi-ls with discovery CHAP: $ls_out"
it_log "ok: discovery CHAP added by SIGHUP"

# Stats on request: the LUN counters saw the commands above.
kill -USR1 "$IT_PID"
it_wait_log -n 2 "$IT_TMP/target.out" "^  lun 0 reads"
grep -q "^  lun 0 reads [0-9]* writes [0-9]* other [1-9]" "$IT_TMP/target.out" ||
	it_fail "no LUN 0 counters on SIGUSR1: $(cat "$IT_TMP/target.out")"

it_stop || it_fail "scsitgtd exited with status $? on SIGTERM"
it_log "PASS"
