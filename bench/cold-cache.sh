#!/bin/bash
# SPDX-License-Identifier: MIT
#
# cold-cache.sh - does a buffered file LUN reading from a cold page cache stall the loop?
# (issue 18's goal: a concurrent null-LUN session's QD1 read latency p99 moves by at most 2x
# while the file LUN is read).
#
# Usage: bench/cold-cache.sh [--build DIR] [--seconds S] [--runs N] [--size SIZE] [--file PATH]
#                            [--engines "libaio io_uring"] [--reader "BS QD"] [--port P]
#                            [--cache cold|warm] [--target-args "ARGS"] [--out DIR]
#
#   --build DIR    meson build directory with examples/minitarget and bench/scsitgt-bench
#                  (default: <source>/build)
#   --seconds S    measured seconds of each latency run (default 5)
#   --runs N       runs per engine, alternating engines; the table shows medians (default 3)
#   --size SIZE    size of the file (default 1G); written once with real blocks (not
#                  fallocated: unwritten extents read as zeros without touching the disk)
#   --file PATH    the file (default /var/tmp/scsitgt-cold-cache.img, removed at the end)
#   --engines LIST the file backend's io_engine values to compare (default "libaio io_uring")
#   --reader "BS QD"  the file reader's block size and queue depth (default "128k 4")
#   --cache cold|warm  cold (default): the file's pages are dropped every 100 ms; warm: the
#                  file is read into the page cache once and stays there, the reference for
#                  what the reader's traffic costs the loop without a single miss
#   --target-args "ARGS"  extra minitarget arguments, e.g. "--workers 2" (the sessions on
#                  worker loops of their own, the default with workers; "--workers 2
#                  --conn-workers 0": only their sockets there)
#
# One minitarget (one loop, no workers) serves LUN 0 on the null backend and LUN 1 on the file,
# buffered (io_engine=ENGINE,direct=0). For each engine and run: a QD1 4 KiB random-read
# session on the null LUN alone (the reference), then the same while a second session reads
# the file LUN sequentially and the page cache of the file is kept cold (posix_fadvise
# POSIX_FADV_DONTNEED on the file every 100 ms, so the reader keeps missing instead of
# warming the cache once). The table shows the null session's p50/p99 in both cases, the
# ratio of the p99s, and the file reader's throughput. The machine's load (uptime) is printed
# before and after: the ratio is only meaningful against the reference of the same run.
set -euo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$SRC/build
SECONDS_RUN=5
RUNS=3
SIZE=1G
FILE=/var/tmp/scsitgt-cold-cache.img
ENGINES="libaio io_uring"
READER="128k 4"
PORT=3299
OUT=
CACHE=cold
TARGET_ARGS=

while [[ $# -gt 0 ]]; do
	case "$1" in
	--build) BUILD=$2; shift 2 ;;
	--seconds) SECONDS_RUN=$2; shift 2 ;;
	--runs) RUNS=$2; shift 2 ;;
	--size) SIZE=$2; shift 2 ;;
	--file) FILE=$2; shift 2 ;;
	--engines) ENGINES=$2; shift 2 ;;
	--reader) READER=$2; shift 2 ;;
	--port) PORT=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	--cache) CACHE=$2; shift 2 ;;
	--target-args) TARGET_ARGS=$2; shift 2 ;;
	-h | --help) sed -n '4,34p' "$0"; exit 0 ;;
	*) echo "cold-cache: unknown argument $1" >&2; exit 2 ;;
	esac
done

MINITARGET=$BUILD/examples/minitarget
BENCH=$BUILD/bench/scsitgt-bench
for x in "$MINITARGET" "$BENCH"; do
	[[ -x "$x" ]] || { echo "cold-cache: $x missing (ninja -C $BUILD)" >&2; exit 1; }
done
command -v python3 >/dev/null || { echo "cold-cache: needs python3" >&2; exit 1; }
[[ $CACHE == cold || $CACHE == warm ]] || { echo "cold-cache: --cache cold|warm" >&2; exit 2; }
read -r RBS RQD <<<"$READER"
OUT=${OUT:-$(mktemp -d /tmp/scsitgt-cold-cache.XXXXXX)}
mkdir -p "$OUT"
TPID=
EVPID=
RPID=

cleanup() {
	[[ -n "$RPID" ]] && kill "$RPID" 2>/dev/null || true
	[[ -n "$EVPID" ]] && kill "$EVPID" 2>/dev/null || true
	if [[ -n "$TPID" ]]; then
		kill "$TPID" 2>/dev/null || true
		wait "$TPID" 2>/dev/null || true
	fi
	rm -f "$FILE"
}
trap cleanup EXIT

echo "# cold-cache.sh $(date -u +%FT%TZ) on $(uname -r), $(nproc) CPUs"
echo "# uptime before: $(uptime)"
echo "# writing $SIZE to $FILE (real blocks)"
bytes=$(numfmt --from=iec "$SIZE")
dd if=/dev/urandom of="$FILE" bs=1M count=$((bytes >> 20)) conv=fsync status=none

# evict FILE: drop its pages from the page cache (clean pages go at once).
evict() {
	python3 -c 'import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
os.close(fd)' "$FILE"
}

# Keep FILE cold until killed.
evict_loop() {
	while :; do
		evict
		sleep 0.1
	done
}

start_target() {
	local engine=$1
	: >"$OUT/target-$engine.out"
	# shellcheck disable=SC2086 # TARGET_ARGS: words on purpose
	"$MINITARGET" $TARGET_ARGS --portal "127.0.0.1:$PORT" --lun "0:null:1G" \
		--lun "1:file:$FILE,io_engine=$engine,direct=0" \
		>"$OUT/target-$engine.out" 2>"$OUT/target-$engine.err" </dev/null &
	TPID=$!
	for ((i = 0; i < 300; i++)); do
		[[ $(grep -c '^iscsi://' "$OUT/target-$engine.out") -ge 2 ]] && break
		kill -0 "$TPID" 2>/dev/null || { cat "$OUT/target-$engine.err" >&2; exit 1; }
		sleep 0.1
	done
	mapfile -t URLS < <(grep -o '^iscsi://[^[:space:]]*' "$OUT/target-$engine.out")
	[[ ${#URLS[@]} -ge 2 ]] || { echo "cold-cache: no URLs from minitarget" >&2; exit 1; }
	grep -q "file, $engine, buffered I/O" "$OUT/target-$engine.err" || {
		echo "cold-cache: the file LUN is not $engine/buffered:" >&2
		cat "$OUT/target-$engine.err" >&2
		exit 1
	}
}

stop_target() {
	kill "$TPID" 2>/dev/null || true
	wait "$TPID" 2>/dev/null || true
	TPID=
}

# null QD1 latency run; its JSON into $1.
null_run() {
	"$BENCH" --url "${URLS[0]}" --qd 1 --bs 4k --rw randread --ramp 1 \
		--seconds "$SECONDS_RUN" --json >"$1"
}

for ((run = 1; run <= RUNS; run++)); do
	for engine in $ENGINES; do
		start_target "$engine"
		null_run "$OUT/$engine-$run-alone.json"
		if [[ $CACHE == cold ]]; then
			evict
			evict_loop &
			EVPID=$!
		else
			cat "$FILE" >/dev/null
		fi
		"$BENCH" --url "${URLS[1]}" --qd "$RQD" --bs "$RBS" --rw read --ramp 0 \
			--seconds $((SECONDS_RUN + 3)) --json >"$OUT/$engine-$run-reader.json" &
		RPID=$!
		null_run "$OUT/$engine-$run-loaded.json"
		wait "$RPID" || true
		RPID=
		kill "$EVPID" 2>/dev/null || true
		wait "$EVPID" 2>/dev/null || true
		EVPID=
		stop_target
	done
done

echo "# uptime after:  $(uptime)"
echo "# null LUN: QD1 4 KiB randread, ${SECONDS_RUN}s per run; file LUN: buffered, read" \
	"sequentially at $RBS QD$RQD, page cache kept $CACHE; target args: '${TARGET_ARGS}';" \
	"medians of $RUNS runs; raw: $OUT"
python3 - "$OUT" "$RUNS" $ENGINES <<'PY'
import json, statistics, sys
out, runs, engines = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def load(p):
    with open(p) as f:
        return json.load(f)
def lat(j, k):
    return j["lat_us"][k]
print("| engine | null p50 alone (us) | null p99 alone (us) | null p50 with reader | "
      "null p99 with reader | null p99.9 with reader | p99 ratio | reader MiB/s |")
print("|---|---|---|---|---|---|---|---|")
for e in engines:
    a50, a99, l50, l99, l999, rat, mb = [], [], [], [], [], [], []
    for r in range(1, runs + 1):
        a = load(f"{out}/{e}-{r}-alone.json")
        l = load(f"{out}/{e}-{r}-loaded.json")
        rd = load(f"{out}/{e}-{r}-reader.json")
        a50.append(lat(a, "p50")); a99.append(lat(a, "p99"))
        l50.append(lat(l, "p50")); l99.append(lat(l, "p99")); l999.append(lat(l, "p999"))
        rat.append(lat(l, "p99") / lat(a, "p99"))
        mb.append(rd["mibs"])
    m = statistics.median
    print(f"| {e} | {m(a50):.0f} | {m(a99):.0f} | {m(l50):.0f} | {m(l99):.0f} | {m(l999):.0f} | "
          f"{m(rat):.2f}x ({', '.join(f'{x:.2f}' for x in rat)}) | {m(mb):.0f} |")
PY
