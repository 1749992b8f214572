#!/bin/bash
# workers.sh MINITARGET READBACK - several sessions at once on a target with worker threads
# (--workers 2): four qemu-img sessions write four different random images to four LUNs at the
# same time, then four iscsi_readback sessions and four qemu-img sessions read them back at the
# same time, and every SHA-256 must match. The connections are spread over the two workers
# (the target logs where each one went, checked at the end), and SIGTERM must still shut the
# target down cleanly with sessions having come and gone on both workers.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
it_init "${1:-}"
READBACK=${2:-}
[[ -x "$READBACK" ]] || it_fail "usage: $0 MINITARGET ISCSI_READBACK"
it_need qemu-img sha256sum
qemu-img --help 2>/dev/null | grep -Eq '^Supported formats:.* iscsi( |$)' ||
	it_skip "qemu-img has no iscsi driver (install qemu-block-extra)"

SIZE=$((32 * 1024 * 1024))
NLUN=4
it_start --workers 2 -v --lun 0:ram:32M --lun 1:ram:32M,bs=4096 --lun 2:ram:32M --lun 3:ram:32M,bs=4096
[[ ${#IT_URLS[@]} -eq $NLUN ]] || it_fail "expected $NLUN LUN URLs, got ${#IT_URLS[@]}"

declare -a want
for ((i = 0; i < NLUN; i++)); do
	head -c "$SIZE" /dev/urandom >"$IT_TMP/img$i"
	want[i]=$(sha256sum <"$IT_TMP/img$i" | cut -d' ' -f1)
done

# run_all CMD...: run one command line per LUN (with @I@ replaced by the index) concurrently;
# fail if any fails.
run_all() {
	local pids=() i rc=0 args a
	for ((i = 0; i < NLUN; i++)); do
		args=()
		for a in "$@"; do
			args+=("${a//@I@/$i}")
		done
		"${args[@]}" >"$IT_TMP/run$i.log" 2>&1 &
		pids+=("$!")
	done
	for ((i = 0; i < NLUN; i++)); do
		wait "${pids[i]}" || {
			it_log "command $i failed: $(tail -n 3 "$IT_TMP/run$i.log")"
			rc=1
		}
	done
	return $rc
}

url() {
	echo "${IT_URLS[$1]}"
}

it_log "writing $NLUN images through $NLUN concurrent qemu-img sessions"
declare -a urls
for ((i = 0; i < NLUN; i++)); do
	urls[i]=$(url "$i")
done
# Each child gets its own URL through the @I@ index.
writer() {
	qemu-img convert -n -f raw -O raw "$IT_TMP/img$1" "${urls[$1]}"
}
reader() {
	"$READBACK" -o "$IT_TMP/back$1" "${urls[$1]}" "$SIZE"
}
qreader() {
	qemu-img convert -f raw -O raw "${urls[$1]}" "$IT_TMP/qback$1"
}
run_all writer @I@ || it_fail "a concurrent write failed"
it_alive || it_fail "target died during the writes"

it_log "reading back through $NLUN iscsi_readback and $NLUN qemu-img sessions at once"
pids=()
for ((i = 0; i < NLUN; i++)); do
	reader "$i" >"$IT_TMP/r$i.log" 2>&1 &
	pids+=("$!")
	qreader "$i" >"$IT_TMP/q$i.log" 2>&1 &
	pids+=("$!")
done
for p in "${pids[@]}"; do
	wait "$p" || it_fail "a concurrent read failed"
done
it_alive || it_fail "target died during the reads"

for ((i = 0; i < NLUN; i++)); do
	got=$(sha256sum <"$IT_TMP/back$i" | cut -d' ' -f1)
	[[ "$got" == "${want[i]}" ]] || it_fail "LUN $i: iscsi_readback read $got, wrote ${want[i]}"
	got=$(sha256sum <"$IT_TMP/qback$i" | cut -d' ' -f1)
	[[ "$got" == "${want[i]}" ]] || it_fail "LUN $i: qemu-img read $got, wrote ${want[i]}"
done

it_stop || it_fail "target exited with status $? on SIGTERM"
# Both workers served connections. A connection goes to the least-loaded worker, ties to worker
# 0 (core/worker.c), so worker 1 gets one only while another is open: here the four writers
# and the eight readers were each started together and move 32 MiB apiece, so all of a group
# going to worker 0 would need each of its sessions to end before the next one connected.
for w in 0 1; do
	grep -q "connection placed on worker $w" "$IT_TMP/target.err" ||
		it_fail "no connection was placed on worker $w"
done
it_log "PASS"
