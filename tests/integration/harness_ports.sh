#!/bin/bash
# harness_ports.sh MINITARGET - the suite's own port choice (lib.sh): tests started in the same
# moment never share a port, a claim left by a killed test is taken over, the claims are given
# back at exit, and it_start retries with another port when the one it picked was taken before
# the target could bind it (a CI run lost a test to that race).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
it_init "${1:-}"
it_need python3 iscsi-inq

# A private claim directory: the test checks its contents.
IT_PORT_DIR=$IT_TMP/ports

# lib.sh's it_kernel_port, for sections 3 and 4: sections 1 and 2 replace it.
eval "lib_kernel_port() $(declare -f it_kernel_port | tail -n +2)"

# Sections 1 and 2 ask a kernel that hands out ports again and again, so that the claims are
# what keeps takers apart: each port of 20000-20049 twice in a row, in order (numbers only:
# nothing binds them here, and the claim directory is this test's own). $IT_TMP/offers counts
# the ports this shell was offered.
it_kernel_port() {
	local n=0
	[[ -s $IT_TMP/offers ]] && n=$(<"$IT_TMP/offers")
	echo $((n + 1)) >"$IT_TMP/offers"
	echo $((20000 + n / 2 % 50))
}

# 1. Many claims in a row are all different: every port comes a second time, after this test
#    claimed it, and its claim must make it_free_port ask again.
declare -A seen=()
for ((i = 0; i < 20; i++)); do
	p=$(it_free_port) || it_fail "it_free_port failed"
	[[ -z "${seen[$p]:-}" ]] || it_fail "port $p handed out twice"
	seen[$p]=1
	[[ $(cat "$IT_PORT_DIR/$p/pid") == "$$" ]] || it_fail "claim of $p does not name this test"
done
# 20 ports taken and 19 second offers turned down (the 20th port's second offer is never made)
offers=$(<"$IT_TMP/offers")
[[ $offers -eq 39 ]] || it_fail "20 claims took $offers offers, not 39"
it_log "ok: 20 claims, 20 different ports, each port offered twice"

# 2. Two tests at once, each offered the same ports in the same order (from the 21st on; the
#    first 20 are this test's since section 1): another shell claims concurrently; the sets do
#    not meet, and neither takes a port of section 1. The other shell lives until this one is
#    done (it is told by $other_tmp/done): the claims of a test that has ended are free to take.
other_tmp=$(mktemp -d "$IT_TMP/other.XXXXXX")
echo 40 >"$other_tmp/offers"
echo 40 >"$IT_TMP/offers"
bash -c 'source "$1/lib.sh"; eval "$4"; IT_NAME=other; IT_TMP=$2; IT_PORT_DIR=$3
	for ((i = 0; i < 15; i++)); do it_free_port || exit 1; done
	i=0; while [[ ! -e $2/done ]] && ((i++ < 6000)); do sleep 0.1; done' _ "$(dirname "$0")" \
	"$other_tmp" "$IT_PORT_DIR" "$(declare -f it_kernel_port)" >"$IT_TMP/other.ports" &
other=$!
for ((i = 0; i < 15; i++)); do
	it_free_port >>"$IT_TMP/mine.ports" || it_fail "it_free_port failed"
done
: >"$other_tmp/done"
wait "$other" || it_fail "the concurrent claimer failed"
both=$(sort "$IT_TMP/mine.ports" "$IT_TMP/other.ports" | uniq -d | wc -l)
[[ $both -eq 0 ]] || it_fail "$both ports went to both tests"
[[ $(sort -u "$IT_TMP/mine.ports" "$IT_TMP/other.ports" | wc -l) -eq 30 ]] ||
	it_fail "the two tests did not get 30 ports: $(cat "$IT_TMP/mine.ports" "$IT_TMP/other.ports")"
while read -r p; do
	[[ -z "${seen[$p]:-}" ]] || it_fail "port $p of section 1 handed out again"
done < <(cat "$IT_TMP/mine.ports" "$IT_TMP/other.ports")
it_log "ok: two concurrent claimers offered the same ports: 30 ports, none shared" \
	"($(($(<"$IT_TMP/offers") - 40)) and $(($(<"$other_tmp/offers") - 40)) offers)"

# 3. A claim whose owner is gone is taken over; a live owner's is not.
dead=$(bash -c 'echo $$')
while kill -0 "$dead" 2>/dev/null; do sleep 0.05; done
stale=$(lib_kernel_port)
mkdir "$IT_PORT_DIR/$stale"
echo "$dead" >"$IT_PORT_DIR/$stale/pid"
it_claim_port "$stale" || it_fail "a dead test's claim was not taken over"
[[ $(cat "$IT_PORT_DIR/$stale/pid") == "$$" ]] || it_fail "the taken-over claim does not name this test"
bash -c 'sleep 60' &
live=$!
echo "$live" >"$IT_PORT_DIR/$stale/pid"
if it_claim_port "$stale"; then
	it_fail "a live test's claim was taken"
fi
kill "$live"
wait "$live" 2>/dev/null || true
echo $$ >"$IT_PORT_DIR/$stale/pid"
it_log "ok: a dead test's claim is taken over, a live one's is not"

# 4. it_start: the port it picked is taken by someone outside the suite before the target binds
#    it: it starts the target again on another port.
python3 -c 'import socket, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen()
print(s.getsockname()[1], flush=True)
time.sleep(600)' >"$IT_TMP/held" &
holder=$!
IT_HELPER_PIDS+=("$holder")
for ((i = 0; i < 600; i++)); do
	[[ -s $IT_TMP/held ]] && break
	sleep 0.1
done
held=$(cat "$IT_TMP/held")
[[ -n "$held" ]] || it_fail "the port holder did not start"
it_kernel_port() { # the first answer is the held port, then the kernel's
	if [[ ! -e $IT_TMP/held.used ]]; then
		: >"$IT_TMP/held.used"
		echo "$held"
	else
		lib_kernel_port
	fi
}
it_start --lun 0:ram:16M 2>"$IT_TMP/start.log"
cat "$IT_TMP/start.log" >&2
grep -q "port $held was taken meanwhile; retrying" "$IT_TMP/start.log" ||
	it_fail "it_start did not report the taken port"
[[ $IT_PORT != "$held" ]] || it_fail "the target claims to listen on the held port"
iscsi-inq "${IT_URLS[0]}" >/dev/null 2>&1 || it_fail "no INQUIRY through the target on $IT_PORTAL"
it_stop || it_fail "the target exited with an error"
it_log "ok: the held port $held was skipped; the target serves on $IT_PORTAL"

# 5. The claims go back at exit: run a test that claims and exits.
bash -c 'source "$1/lib.sh"; IT_NAME=child; it_init "$2"; IT_PORT_DIR=$3; it_free_port' _ \
	"$(dirname "$0")" "$IT_TARGET" "$IT_PORT_DIR" >"$IT_TMP/child.port"
child=$(cat "$IT_TMP/child.port")
[[ -n "$child" && ! -e $IT_PORT_DIR/$child ]] || it_fail "the claim of port $child outlived its test"
it_log "ok: a test's claims are given back when it exits"
it_log "PASS"
