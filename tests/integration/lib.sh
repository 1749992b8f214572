# shellcheck shell=bash
# lib.sh - shared helpers for the integration and conformance tests (source it from bash).
#
# Starts the target under test on a free loopback port, waits for the URL lines it prints, and
# makes sure nothing is left behind: an EXIT trap stops the target and removes the temp dir
# whether the test passes, fails or is interrupted.
#
#   source lib.sh
#   it_init "$1"                 # path of minitarget; creates $IT_TMP, installs the trap
#   it_need iscsi-ls qemu-img    # exit 77 (meson: skipped) when a tool is missing
#   it_start --lun 0:ram:64M     # sets IT_PID IT_PORT IT_PORTAL IT_URLS[] (one per LUN)
#   ...
#   it_stop                      # SIGTERM; returns the target's exit status
#
# IT_TARGET_WRAPPER, when set, is a command line put in front of the target, e.g.
#   IT_TARGET_WRAPPER="valgrind -q --error-exitcode=99 --leak-check=full"
# (a wrapper that fails on errors makes it_stop report a non-zero exit status).
# IT_TARGET_ARGS, when set, is added to the arguments of every it_start, e.g. to run a whole
# suite with worker threads and connections on them (issue 18; the default with workers,
# "--workers 2 --conn-workers 0" for sockets only):
#   IT_TARGET_ARGS="--workers 2" meson test --suite ...
# (SCSITGT_CONN_WORKERS=0|1 in the environment overrides every target's --conn-workers.)
#
# Nothing here measures time: the waits are generous upper bounds for a slow, loaded machine,
# and every wait polls for the event it needs.

IT_START_TIMEOUT=${IT_START_TIMEOUT:-60}
IT_STOP_TIMEOUT=${IT_STOP_TIMEOUT:-30}
IT_PID=
IT_PORT=
IT_PORTAL=
IT_URLS=()
IT_TMP=
IT_TARGET=
IT_HELPER_PIDS=()
IT_NAME=$(basename "${0%.*}")

it_log() {
	echo "[$IT_NAME] $*" >&2
}

it_fail() {
	it_log "FAIL: $*"
	exit 1
}

it_skip() {
	it_log "SKIP: $*"
	exit 77
}

# Print the last lines of the target's logs, for the test log when something went wrong; first
# the start of a sanitizer's report if there is one (it ends the target, so the test itself saw
# only a dropped connection, and the report's stacks are longer than the last lines).
it_dump_logs() {
	local first
	if [[ -n "$IT_TMP" && -f "$IT_TMP/target.err" ]]; then
		first=$(grep -n -m 1 -E '(WARNING|ERROR): [A-Za-z]*Sanitizer|runtime error:' \
			"$IT_TMP/target.err" | cut -d: -f1 || true)
		if [[ -n "$first" ]]; then
			it_log "--- target stderr: sanitizer report (line $first on, at most 120 lines) ---"
			sed -n "${first},$((first + 119))p" "$IT_TMP/target.err" >&2 || true
		fi
		it_log "--- target stderr (last 40 lines) ---"
		tail -n 40 "$IT_TMP/target.err" >&2 || true
	fi
}

# it_kill_bounded PID WHAT [SIGNAL]: send SIGNAL (default TERM) once, then SIGKILL if PID is
# still there after IT_STOP_TIMEOUT seconds (a second gateway that hangs in its shutdown must
# not outlive the test); reap it and return its exit status (137 if it had to be killed).
it_kill_bounded() {
	local pid=$1 what=$2 sig=${3:-TERM} i st=0
	kill "-$sig" "$pid" 2>/dev/null || true
	for ((i = 0; i < IT_STOP_TIMEOUT * 10; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		it_log "$what pid $pid still running ${IT_STOP_TIMEOUT}s after SIG$sig; killing it"
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
		return 137
	fi
	wait "$pid" 2>/dev/null || st=$?
	return $st
}

# Stop the helpers (IT_HELPER_PIDS: second targets, client coprocesses), bounded.
it_stop_helpers() {
	local p
	for p in "${IT_HELPER_PIDS[@]}"; do
		it_kill_bounded "$p" helper || true
	done
	IT_HELPER_PIDS=()
}

it_cleanup() {
	local rc=$?
	it_stop_helpers
	if [[ -n "$IT_PID" ]] && kill -0 "$IT_PID" 2>/dev/null; then
		it_kill_bounded "$IT_PID" target || true
	fi
	if [[ $rc -ne 0 && $rc -ne 77 ]]; then
		it_dump_logs
	fi
	it_release_ports
	if [[ -n "$IT_TMP" && -d "$IT_TMP" && -z "${IT_KEEP_TMP:-}" ]]; then
		rm -rf "$IT_TMP"
	fi
	exit $rc
}

# it_init MINITARGET: check the program, make the temp dir, install the cleanup trap.
it_init() {
	IT_TARGET=${1:-}
	if [[ -z "$IT_TARGET" ]]; then
		it_fail "usage: $0 PATH-TO-MINITARGET"
	fi
	if [[ ! -x "$IT_TARGET" ]]; then
		it_fail "$IT_TARGET is not an executable"
	fi
	IT_TMP=$(mktemp -d "${TMPDIR:-/tmp}/scsitgt-$IT_NAME.XXXXXX")
	trap it_cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
}

# it_need TOOL...: skip the test (exit 77) unless every tool is on PATH.
it_need() {
	local t
	for t in "$@"; do
		command -v "$t" >/dev/null 2>&1 || it_skip "$t is not installed"
	done
}

# Ask the kernel for a free loopback port: bind port 0, read the port, close. The kernel can hand
# the same port to two tests started in the same moment (meson runs them in parallel), so a test
# also claims the port: a directory in IT_PORT_DIR holding its pid, made atomically (mkdir), given
# back by it_cleanup; a claim whose owner is gone is taken over. A process outside the suite may
# still take the port before the target binds; it_start retries with a new port when that happens.
IT_PORT_DIR=${IT_PORT_DIR:-${TMPDIR:-/tmp}/scsitgt-ports}

# it_kernel_port: a port the kernel calls free right now.
it_kernel_port() {
	python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()'
}

# it_claim_port PORT: claim PORT for this test; false when a live test holds it.
it_claim_port() {
	local port=$1
	if ! mkdir "$IT_PORT_DIR/$port" 2>/dev/null; then
		# Taking over a dead test's claim: under a lock, so that two tests that both saw the
		# dead owner cannot both take it (the second would remove the first one's fresh claim).
		(
			flock 9 || exit 1
			owner=$(cat "$IT_PORT_DIR/$port/pid" 2>/dev/null || true)
			# A claim being made has no pid file yet: leave it alone too.
			[[ -n "$owner" ]] && ! kill -0 "$owner" 2>/dev/null || exit 1
			rm -rf "${IT_PORT_DIR:?}/${port:?}"
			mkdir "$IT_PORT_DIR/$port" && echo $$ >"$IT_PORT_DIR/$port/pid"
		) 9>>"$IT_PORT_DIR/.takeover.lock" || return 1
	fi
	echo $$ >"$IT_PORT_DIR/$port/pid"
	echo "$port" >>"$IT_TMP/claimed-ports"
}

# it_free_port: print a free port this test has claimed.
it_free_port() {
	local port try
	mkdir -p "$IT_PORT_DIR" 2>/dev/null || true
	for ((try = 0; try < 50; try++)); do
		port=$(it_kernel_port) || return 1
		if [[ -z "$IT_TMP" ]] || it_claim_port "$port"; then
			echo "$port"
			return 0
		fi
	done
	return 1
}

# Give back the ports this test claimed (it_free_port).
it_release_ports() {
	local port
	[[ -n "$IT_TMP" && -f "$IT_TMP/claimed-ports" ]] || return 0
	while read -r port; do
		[[ $(cat "$IT_PORT_DIR/$port/pid" 2>/dev/null) == "$$" ]] && rm -rf "${IT_PORT_DIR:?}/${port:?}"
	done <"$IT_TMP/claimed-ports"
	rm -f "$IT_TMP/claimed-ports"
}

# it_start ARGS...: start the target with ARGS on a free port; wait for one URL line per --lun
# (or one when no --lun is given). Sets IT_PID, IT_PORT, IT_PORTAL, IT_URLS.
it_start() {
	local nluns=0 a attempt
	for a in "$@"; do
		[[ "$a" == --lun ]] && nluns=$((nluns + 1))
	done
	[[ $nluns -eq 0 ]] && nluns=1

	for ((attempt = 1; attempt <= 5; attempt++)); do
		IT_PORT=$(it_free_port) || it_fail "cannot pick a free port (python3 missing?)"
		IT_PORTAL=127.0.0.1:$IT_PORT
		: >"$IT_TMP/target.out"
		: >"$IT_TMP/target.err"
		# shellcheck disable=SC2086 # the wrapper and IT_TARGET_ARGS are command lines
		${IT_TARGET_WRAPPER:-} "$IT_TARGET" --portal "$IT_PORTAL" "$@" ${IT_TARGET_ARGS:-} </dev/null \
			>"$IT_TMP/target.out" 2>"$IT_TMP/target.err" &
		IT_PID=$!
		it_log "started $(basename "$IT_TARGET") pid $IT_PID on $IT_PORTAL: $*"
		if it_wait_urls "$nluns"; then
			return 0
		fi
		if kill -0 "$IT_PID" 2>/dev/null; then
			it_fail "target printed no URL line within ${IT_START_TIMEOUT}s"
		fi
		# Not a bare "wait": under set -e its non-zero status (the target's exit code) would
		# end the script before the retry below.
		local st=0
		wait "$IT_PID" 2>/dev/null || st=$?
		IT_PID=
		if grep -qi "in use" "$IT_TMP/target.err"; then
			it_log "port $IT_PORT was taken meanwhile; retrying"
			continue
		fi
		it_dump_logs
		it_fail "target exited with status $st during start-up"
	done
	it_fail "no free port after 5 attempts"
}

# it_wait_urls N: wait until the target printed N iscsi:// lines; fail fast if it dies. Only
# whole lines count: a URL line that the target is still writing (no newline yet, e.g. cut at
# a page boundary) would otherwise be taken cut short.
it_wait_urls() {
	local want=$1 i out
	for ((i = 0; i < IT_START_TIMEOUT * 10; i++)); do
		# One read of the file; the "." keeps its last newline from $(...).
		out=$(cat "$IT_TMP/target.out" 2>/dev/null; echo .)
		out=${out%.}
		if [[ $out != *$'\n'* ]]; then
			out=
		elif [[ $out != *$'\n' ]]; then
			out=${out%$'\n'*}
		fi
		mapfile -t IT_URLS < <(grep -o 'iscsi://[^[:space:]]*' <<<"$out" || true)
		if [[ ${#IT_URLS[@]} -ge $want ]]; then
			return 0
		fi
		kill -0 "$IT_PID" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# it_wait_log [-n COUNT] FILE PATTERN [TIMEOUT]: wait until FILE holds COUNT (default 1) lines
# matching the grep pattern PATTERN, looking every 0.1 s for at most TIMEOUT seconds (default
# IT_WAIT_TIMEOUT). When they do not come, or the target ($IT_PID, when one runs) ends without
# them, fail the test naming FILE and PATTERN, with FILE's last lines.
IT_WAIT_TIMEOUT=${IT_WAIT_TIMEOUT:-60}
it_wait_log() {
	local count=1 file pattern timeout i n=0 gone=
	if [[ ${1:-} == -n ]]; then
		count=$2
		shift 2
	fi
	file=$1
	pattern=$2
	timeout=${3:-$IT_WAIT_TIMEOUT}
	for ((i = 0; i <= timeout * 10; i++)); do
		n=$(grep -c -- "$pattern" "$file" 2>/dev/null || true)
		[[ ${n:-0} -ge $count ]] && return 0
		# one more look after the target ended: its last lines may have come meanwhile
		[[ -n "$gone" ]] && break
		if [[ -n "$IT_PID" ]] && ! kill -0 "$IT_PID" 2>/dev/null; then
			gone=1
			continue
		fi
		sleep 0.1
	done
	# the target's stderr: it_cleanup shows its last lines
	if [[ $file != "${IT_TMP:-}/target.err" ]]; then
		it_log "--- $file (last 20 lines) ---"
		tail -n 20 "$file" >&2 2>/dev/null || true
	fi
	[[ -z "$gone" ]] ||
		it_fail "the target (pid $IT_PID) ended: $file had ${n:-0} of $count line(s) matching '$pattern'"
	it_fail "$file had ${n:-0} of $count line(s) matching '$pattern' after ${timeout}s"
}

# it_stop [SIGNAL]: send SIGNAL (default TERM) to the target once, wait for it (bounded);
# return its exit status (137 if it had to be killed, which callers treat as a failure).
it_stop() {
	local pid=$IT_PID st=0
	[[ -n "$pid" ]] || return 0
	it_kill_bounded "$pid" target "${1:-TERM}" || st=$?
	IT_PID=
	return $st
}

# it_alive: true while the target runs (used after a tool run to spot a crashed target).
it_alive() {
	[[ -n "$IT_PID" ]] && kill -0 "$IT_PID" 2>/dev/null
}

# it_capture_until CMD...: capture what the target sends (tshark on lo, $IT_TMP/cap.pcapng)
# and run CMD (a login, which must succeed) again and again, bounded, until the capture shows
# a Login Response: that is the moment the capture runs, however long tshark takes to start.
# Skips the test when tshark cannot capture here. End the capture with it_capture_stop.
it_capture_until() {
	local i
	it_need tshark python3
	tshark -i lo -f "tcp src port $IT_PORT" -s 2048 -w "$IT_TMP/cap.pcapng" \
		>"$IT_TMP/tshark.out" 2>"$IT_TMP/tshark.err" </dev/null &
	IT_HELPER_PIDS+=("$!")
	for ((i = 0; i < 120; i++)); do
		kill -0 "${IT_HELPER_PIDS[0]}" 2>/dev/null ||
			it_skip "cannot capture on lo: $(tail -n 1 "$IT_TMP/tshark.err")"
		"$@" || it_fail "login failed: $*"
		[[ -n "$(it_sent_values HeaderDigest)" ]] && return 0
		sleep 0.5
	done
	it_fail "the capture never showed a login response"
}

# it_capture_stop: end the capture of it_capture_until (its file stays).
it_capture_stop() {
	kill -INT "${IT_HELPER_PIDS[0]}" 2>/dev/null || true
	wait "${IT_HELPER_PIDS[0]}" 2>/dev/null || true
	IT_HELPER_PIDS=()
}

# it_sent_values KEY: the values of every KEY the target sent in the capture, one a line. The
# raw TCP payload is searched: no dissector state is needed for login text.
it_sent_values() {
	tshark -r "$IT_TMP/cap.pcapng" -Y "tcp.srcport == $IT_PORT && tcp.payload contains \"$1=\"" \
		-T fields -e tcp.payload 2>/dev/null |
		python3 -c 'import re, sys
for line in sys.stdin:
    data = bytes.fromhex(line.strip().replace(":", ""))
    for m in re.finditer(sys.argv[1].encode() + rb"=([^\x00]*)", data):
        print(m.group(1).decode("ascii", "replace"))' "$1" || true
}

# it_portal_url: the portal URL (for discovery), iscsi://HOST:PORT.
it_portal_url() {
	echo "iscsi://$IT_PORTAL"
}

# it_iqn URL: the target name inside a LUN URL iscsi://HOST:PORT/IQN/LUN.
it_iqn() {
	local u=${1#iscsi://}
	u=${u#*/}
	echo "${u%/*}"
}

# it_lun URL: the LUN number at the end of a LUN URL.
it_lun() {
	echo "${1##*/}"
}

# it_with_cred URL USER SECRET: URL with "USER%SECRET@" inserted (libiscsi's CHAP syntax).
it_with_cred() {
	echo "iscsi://$2%$3@${1#iscsi://}"
}

# ---- scsitgtd and its line client (scsitgtd.sh, fault_async.sh) ----

# it_conf_engine_key CONF KEY VALUE: KEY = VALUE in the [engine] section of the scsitgtd file
# CONF (added when the file has none), unless the file sets KEY itself.
it_conf_engine_key() {
	local conf=$1 key=$2 val=$3
	grep -Eq "^[[:space:]]*$key[[:space:]]*=" "$conf" && return 0
	if grep -Eq '^[[:space:]]*\[engine\]' "$conf"; then
		sed -i -E "0,/^[[:space:]]*\[engine\]/s//[engine]\n$key = $val/" "$conf"
	else
		sed -i "1i [engine]\n$key = $val\n" "$conf"
	fi
}

# it_conf_workers CONF: when IT_TARGET_ARGS asks for worker threads (--workers N, and maybe
# --conn-workers 0|1), give the scsitgtd file CONF the same (workers, conn_workers) in its
# [engine] section, each unless the file sets it itself; so a whole suite run with
# IT_TARGET_ARGS="--workers 2" runs scsitgtd with workers too. Called before each start and
# reload.
it_conf_workers() {
	local conf=$1
	[[ " ${IT_TARGET_ARGS:-} " =~ \ --workers\ ([^ ]+)\  ]] || return 0
	it_conf_engine_key "$conf" workers "${BASH_REMATCH[1]}"
	[[ " ${IT_TARGET_ARGS:-} " =~ \ --conn-workers\ ([01])\  ]] || return 0
	it_conf_engine_key "$conf" conn_workers "$([[ ${BASH_REMATCH[1]} == 1 ]] && echo yes || echo no)"
}

# it_scsitgtd_start CONF: run scsitgtd ($IT_TARGET, under $IT_TARGET_WRAPPER if set) on CONF in
# the background as $IT_PID, and wait until it prints "scsitgtd: ready".
it_scsitgtd_start() {
	IT_SCSITGTD_CONF=$1
	it_conf_workers "$1"
	: >"$IT_TMP/target.out"
	IT_RELOADS=0 # it_reload counts this daemon's "reloaded" lines in the new target.out
	# shellcheck disable=SC2086 # the wrapper and IT_TARGET_ARGS are command lines
	${IT_TARGET_WRAPPER:-} "$IT_TARGET" "$1" </dev/null >"$IT_TMP/target.out" \
		2>"$IT_TMP/target.err" &
	IT_PID=$!
	for ((i = 0; i < IT_START_TIMEOUT * 10; i++)); do
		grep -q "scsitgtd: ready" "$IT_TMP/target.out" && break
		kill -0 "$IT_PID" 2>/dev/null || it_fail "scsitgtd exited at start"
		sleep 0.1
	done
	grep -q "scsitgtd: ready" "$IT_TMP/target.out" || it_fail "scsitgtd never became ready"
}

IT_RELOADS=0
# it_reload: SIGHUP the daemon ($IT_PID) and wait until it says it applied the file
# ("scsitgtd: reloaded" in $IT_TMP/target.out).
it_reload() {
	IT_RELOADS=$((IT_RELOADS + 1))
	[[ -n "${IT_SCSITGTD_CONF:-}" ]] && it_conf_workers "$IT_SCSITGTD_CONF"
	kill -HUP "$IT_PID"
	for ((i = 0; i < 300; i++)); do
		[[ $(grep -c "scsitgtd: reloaded" "$IT_TMP/target.out") -ge $IT_RELOADS ]] && return 0
		sleep 0.1
	done
	it_fail "reload $IT_RELOADS not applied: $(tail -5 "$IT_TMP/target.err")"
}

# it_client_start CLIENT URL: start the line client (tests/integration/scsitgtd_client.c) as a
# coprocess logged in to URL, and wait for its "ready".
it_client_start() {
	coproc CL { exec "$1" "$2" 2>>"$IT_TMP/client.err"; }
	IT_HELPER_PIDS+=("$CL_PID")
	CL_IN=${CL[1]}
	CL_OUT=${CL[0]}
	read -r -t 60 ANSWER <&"$CL_OUT" || it_fail "client: no answer: $(cat "$IT_TMP/client.err")"
	[[ "$ANSWER" == ready ]] || it_fail "client: $ANSWER"
}

# it_ask WORDS...: one request to the client; its answer line lands in $ANSWER.
it_ask() {
	echo "$*" >&"$CL_IN"
	read -r -t 60 ANSWER <&"$CL_OUT" || it_fail "client did not answer \"$*\""
}
