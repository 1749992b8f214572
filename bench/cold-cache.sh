#!/bin/bash
# SPDX-License-Identifier: MIT
#
# cold-cache.sh - does a buffered file LUN reading from a cold page cache stall the loop?
# (issue 18's goal: a concurrent null-LUN session's QD1 read latency p99 moves by at most 2x
# while the file LUN is read).
#
# Usage: bench/cold-cache.sh [--build DIR] [--seconds S] [--runs N] [--size SIZE] [--file PATH]
#                            [--engines "libaio io_uring"] [--reader "BS QD"] [--port P]
#                            [--cache cold|warm] [--caches "cold warm"] [--workers-list "0 2"]
#                            [--target-args "ARGS"] [--out DIR]
#
#   --build DIR    meson build directory with examples/minitarget and bench/scsitgt-bench
#                  (default: <source>/build)
#   --seconds S    measured seconds of each latency run (default 5)
#   --runs N       runs of every configuration, interleaved (run 1 of each configuration, then
#                  run 2...); the table shows medians and every run's ratio (default 3)
#   --size SIZE    size of the file (default 1G); written once with real blocks (not
#                  fallocated: unwritten extents read as zeros without touching the disk)
#   --file PATH    the file (default /var/tmp/scsitgt-cold-cache.img, removed at the end)
#   --engines LIST the file LUNs to compare: each an io_engine value, optionally followed by
#                  more of minitarget's file LUN flags, e.g. "libaio io_uring
#                  io_uring,uring_async=always io_uring,uring_async=never" (default
#                  "libaio io_uring")
#   --reader "BS QD"  the file reader's block size and queue depth (default "128k 4")
#   --cache cold|warm  cold (default): the file's pages are dropped every 100 ms; warm: the
#                  file is read into the page cache once and stays there, the reference for
#                  what the reader's traffic costs the loop without a single miss
#   --caches LIST  several of those, interleaved in one run (e.g. "cold warm")
#   --workers-list LIST  minitarget --workers values to compare, interleaved (default "0": one
#                  loop; "0 2": also two workers, each session's connection on a worker loop
#                  of its own, the default with workers)
#   --target-args "ARGS"  extra minitarget arguments for every configuration, e.g.
#                  "--conn-workers 0" (with workers, only the sessions' sockets on them)
#
# One minitarget serves LUN 0 on the null backend and LUN 1 on the file, buffered
# (io_engine=ENGINE,direct=0). For each configuration and run: a QD1 4 KiB random-read
# session on the null LUN alone (the reference), then the same while a second session reads
# the file LUN sequentially and, with a cold cache, the page cache of the file is kept cold
# (posix_fadvise POSIX_FADV_DONTNEED on the file every 100 ms, so the reader keeps missing
# instead of warming the cache once). The table shows the null session's p50/p99 in both
# cases, the ratio of the p99s, and the file reader's throughput; with both caches a second
# table compares each configuration's loaded p99 cold against warm (what the misses add on top
# of the reader's traffic). The machine's load (uptime) is printed before, during (after each
# round of configurations) and after: a ratio is only meaningful against the reference of the
# same run.
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
CACHES=cold
WORKERS_LIST=0
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
	--cache | --caches) CACHES=$2; shift 2 ;;
	--workers-list) WORKERS_LIST=$2; shift 2 ;;
	--target-args) TARGET_ARGS=$2; shift 2 ;;
	-h | --help) sed -n '4,46p' "$0"; exit 0 ;;
	*) echo "cold-cache: unknown argument $1" >&2; exit 2 ;;
	esac
done

MINITARGET=$BUILD/examples/minitarget
BENCH=$BUILD/bench/scsitgt-bench
for x in "$MINITARGET" "$BENCH"; do
	[[ -x "$x" ]] || { echo "cold-cache: $x missing (ninja -C $BUILD)" >&2; exit 1; }
done
command -v python3 >/dev/null || { echo "cold-cache: needs python3" >&2; exit 1; }
for c in $CACHES; do
	[[ $c == cold || $c == warm ]] || { echo "cold-cache: --cache cold|warm" >&2; exit 2; }
done
for w in $WORKERS_LIST; do
	[[ $w =~ ^[0-9]+$ ]] || { echo "cold-cache: --workers-list: numbers" >&2; exit 2; }
done
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

# start_target ENGINE[,FLAGS] WORKERS TAG
start_target() {
	local lun=$1 workers=$2 tag=$3 engine=${1%%,*} wargs=
	[[ $workers -gt 0 ]] && wargs="--workers $workers"
	: >"$OUT/target-$tag.out"
	# shellcheck disable=SC2086 # TARGET_ARGS, wargs: words on purpose
	"$MINITARGET" $TARGET_ARGS $wargs --portal "127.0.0.1:$PORT" --lun "0:null:1G" \
		--lun "1:file:$FILE,io_engine=$lun,direct=0" \
		>"$OUT/target-$tag.out" 2>"$OUT/target-$tag.err" </dev/null &
	TPID=$!
	for ((i = 0; i < 300; i++)); do
		[[ $(grep -c '^iscsi://' "$OUT/target-$tag.out") -ge 2 ]] && break
		kill -0 "$TPID" 2>/dev/null || { cat "$OUT/target-$tag.err" >&2; exit 1; }
		sleep 0.1
	done
	mapfile -t URLS < <(grep -o '^iscsi://[^[:space:]]*' "$OUT/target-$tag.out")
	[[ ${#URLS[@]} -ge 2 ]] || { echo "cold-cache: no URLs from minitarget" >&2; exit 1; }
	grep -q "file, $engine, buffered I/O" "$OUT/target-$tag.err" || {
		echo "cold-cache: the file LUN is not $engine/buffered:" >&2
		cat "$OUT/target-$tag.err" >&2
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

# The configurations, in the order each run goes through them: TAG LUN WORKERS CACHE.
CONFIGS=()
for cache in $CACHES; do
	for workers in $WORKERS_LIST; do
		for lun in $ENGINES; do
			tag=$(tr ',=' '+-' <<<"$lun")-w$workers-$cache
			CONFIGS+=("$tag $lun $workers $cache")
		done
	done
done

for ((run = 1; run <= RUNS; run++)); do
	for cfg in "${CONFIGS[@]}"; do
		read -r tag lun workers cache <<<"$cfg"
		start_target "$lun" "$workers" "$tag"
		null_run "$OUT/$tag-$run-alone.json"
		if [[ $cache == cold ]]; then
			evict
			evict_loop &
			EVPID=$!
		else
			cat "$FILE" >/dev/null
		fi
		"$BENCH" --url "${URLS[1]}" --qd "$RQD" --bs "$RBS" --rw read --ramp 0 \
			--seconds $((SECONDS_RUN + 3)) --json >"$OUT/$tag-$run-reader.json" &
		RPID=$!
		null_run "$OUT/$tag-$run-loaded.json"
		wait "$RPID" || true
		RPID=
		kill "$EVPID" 2>/dev/null || true
		wait "$EVPID" 2>/dev/null || true
		EVPID=
		stop_target
	done
	echo "# uptime after run $run: $(uptime)"
done

echo "# uptime after:  $(uptime)"
echo "# null LUN: QD1 4 KiB randread, ${SECONDS_RUN}s per run; file LUN: buffered, read" \
	"sequentially at $RBS QD$RQD; extra target args: '${TARGET_ARGS}';" \
	"medians of $RUNS interleaved runs; raw: $OUT"
printf '%s\n' "${CONFIGS[@]}" >"$OUT/configs"
python3 - "$OUT" "$RUNS" <<'PY'
import json, statistics, sys
out, runs = sys.argv[1], int(sys.argv[2])
configs = [l.split() for l in open(f"{out}/configs") if l.strip()]
def load(p):
    with open(p) as f:
        return json.load(f)
def lat(j, k):
    return j["lat_us"][k]
m = statistics.median
print("| file LUN | workers | cache | null p50 alone (us) | null p99 alone (us) | "
      "null p50 with reader | null p99 with reader | null p99.9 with reader | p99 ratio | "
      "reader MiB/s |")
print("|---|---|---|---|---|---|---|---|---|---|")
loaded = {}
for tag, lun, workers, cache in configs:
    a50, a99, l50, l99, l999, rat, mb = [], [], [], [], [], [], []
    for r in range(1, runs + 1):
        a = load(f"{out}/{tag}-{r}-alone.json")
        l = load(f"{out}/{tag}-{r}-loaded.json")
        rd = load(f"{out}/{tag}-{r}-reader.json")
        a50.append(lat(a, "p50")); a99.append(lat(a, "p99"))
        l50.append(lat(l, "p50")); l99.append(lat(l, "p99")); l999.append(lat(l, "p999"))
        rat.append(lat(l, "p99") / lat(a, "p99"))
        mb.append(rd["mibs"])
    loaded[(lun, workers, cache)] = l99
    print(f"| {lun} | {workers} | {cache} | {m(a50):.0f} | {m(a99):.0f} | {m(l50):.0f} | "
          f"{m(l99):.0f} | {m(l999):.0f} | "
          f"{m(rat):.2f}x ({', '.join(f'{x:.2f}' for x in rat)}) | {m(mb):.0f} |")
pairs = [(lun, w) for (lun, w, c) in loaded if c == "cold" and (lun, w, "warm") in loaded]
if pairs:
    print()
    print("| file LUN | workers | null p99 with reader, cold / warm (per run) |")
    print("|---|---|---|")
    for lun, w in pairs:
        r = [c / x for c, x in zip(loaded[(lun, w, "cold")], loaded[(lun, w, "warm")])]
        print(f"| {lun} | {w} | {m(r):.2f}x ({', '.join(f'{x:.2f}' for x in r)}) |")
PY
