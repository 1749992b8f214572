#!/bin/bash
# SPDX-License-Identifier: MIT
#
# rbd-compare.sh - an RBD LUN through minitarget against `rbd bench` on the same image, side by
# side in one run, on a throwaway cluster (tests/ceph/micro-ceph.sh).
#
# Usage: bench/rbd-compare.sh [--build DIR] [--seconds S] [--runs N] [--size SIZE]
#                             [--tests "NAME ..."] [--store memstore|bluestore] [--out DIR]
#                             [--nocache] [--target-ceph-args ARGS] [--workers N]
#
#   --build DIR   meson build directory with examples/minitarget and bench/scsitgt-bench
#                 (default: <source>/build)
#   --seconds S   measured seconds of each scsitgt-bench run (default 5); `rbd bench` has no
#                 time limit: it gets an --io-total of about the same duration (measured
#                 once per test from a short probe run)
#   --runs N      runs per test and side, alternating; the table shows medians (default 3)
#   --size SIZE   image size (default 512M); written in full before measuring, so that reads
#                 hit real objects
#   --tests LIST  subset of 4k-randread-qd32 4k-randwrite-qd32 1m-read-qd16 1m-write-qd16
#   --store S     the OSD's object store (default memstore: the cluster is not the bottleneck)
#   --nocache     both sides with rbd_cache=false (default: librbd's default, cache on)
#   --target-ceph-args ARGS
#                 CEPH_ARGS of the target only (default
#                 "--rbd_cache_writethrough_until_flush=false": the rbd tool sets that for
#                 itself, so both sides run librbd's cache the same way; "" for librbd's
#                 default, under which an initiator that never flushes keeps it write-through)
#   --workers N   the target with N worker loops and its connections on them end to end
#                 (minitarget --workers N, the default with workers): the RBD LUN's
#                 ios are then submitted and completed on the connection's worker (default 0:
#                 everything on the home loop)
#   --out DIR     keep the raw results there (default: a new directory under /tmp)
#
# Both sides use librbd with the same configuration on the same image: `rbd bench` is librbd's
# own load generator (one process, io-threads = queue depth); ours is scsitgt-bench (libiscsi)
# -> iSCSI over loopback -> minitarget -> librbd. The ratio is ours / rbd bench. The target's
# CPU time per IO comes from /proc/PID/stat (scsitgt-bench --target-pid), the initiator's from
# scsitgt-bench itself, rbd bench's from its rusage (less the CPU of a run of a single IO: its
# connect, open and close), and the OSD's and monitor's from /proc/PID/stat over each side's run.
# Everything shares this machine's cores, so the sum per side (client processes + OSD + monitor)
# is what bounds each side's IOPS: table.md shows it and split.md each process.
set -uo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$SRC/build
RUN_SECS=5
RUNS=3
SIZE=512M
STORE=memstore
NOCACHE=0
TARGET_CEPH_ARGS=--rbd_cache_writethrough_until_flush=false
OUT=
WORKERS=0
ALL_TESTS="4k-randread-qd32 4k-randwrite-qd32 1m-read-qd16 1m-write-qd16"
TESTS=$ALL_TESTS

usage() { sed -n '3,35{s/^# \{0,1\}//;p}' "$0" >&2; exit "${1:-2}"; }
say() { echo "rbd-compare: $*" >&2; }
die() { say "$*"; exit 1; }

while [[ $# -gt 0 ]]; do
	case "$1" in
	--build) BUILD=$2; shift 2 ;;
	--seconds) RUN_SECS=$2; shift 2 ;;
	--runs) RUNS=$2; shift 2 ;;
	--size) SIZE=$2; shift 2 ;;
	--tests) TESTS=$2; shift 2 ;;
	--store) STORE=$2; shift 2 ;;
	--nocache) NOCACHE=1; shift ;;
	--target-ceph-args) TARGET_CEPH_ARGS=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	--workers) WORKERS=$2; shift 2 ;;
	-h | --help) usage 0 ;;
	*) usage ;;
	esac
done

MT=$BUILD/examples/minitarget
BENCH=$BUILD/bench/scsitgt-bench
MC=$SRC/tests/ceph/micro-ceph.sh
[[ -x "$MT" && -x "$BENCH" ]] || die "build first: $MT and $BENCH"
command -v rbd >/dev/null && command -v ceph-mon >/dev/null ||
	die "needs Ceph (scripts/install-deps.sh: ceph-mon ceph-osd ceph-common)"
OUT=${OUT:-$(mktemp -d /tmp/rbd-compare.XXXXXX)}
mkdir -p "$OUT"
CEPH_DIR=$(mktemp -u /tmp/mcb.XXXXXX)
MT_PID=

cleanup() {
	if [[ -n "$MT_PID" ]]; then
		kill -TERM "$MT_PID" 2>/dev/null
		wait "$MT_PID" 2>/dev/null
	fi
	"$MC" down "$CEPH_DIR" >/dev/null 2>&1
}
trap cleanup EXIT

up_args=(-S "$SIZE" -s "$STORE")
[[ $NOCACHE -eq 1 ]] && up_args+=(-o rbd_cache=false)
unset CEPH_KEYRING CEPH_ARGS
env_lines=$("$MC" up "$CEPH_DIR" "${up_args[@]}" 2>"$OUT/micro-ceph.err") ||
	die "micro-ceph up failed: $(tail -5 "$OUT/micro-ceph.err")"
eval "$env_lines"
export CEPH_CONF CEPH_KEYRING
IMG=$MICRO_CEPH_POOL/$MICRO_CEPH_IMAGE
say "cluster up ($STORE), image $IMG $SIZE; prefilling"
rbd bench --io-type write --io-pattern seq --io-size 4M --io-threads 16 --io-total "$SIZE" \
	"$IMG" >"$OUT/prefill.txt" 2>&1 || die "prefill failed"

PORT=$(python3 -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
MT_ARGS=()
if [[ $WORKERS -gt 0 ]]; then
	MT_ARGS=(--workers "$WORKERS" --conn-workers 1)
	say "target: $WORKERS worker loops, connections on them"
fi
env CEPH_ARGS="$TARGET_CEPH_ARGS" "$MT" "${MT_ARGS[@]}" --portal "127.0.0.1:$PORT" \
	--lun "0:rbd:$IMG" >"$OUT/minitarget.out" 2>"$OUT/minitarget.err" </dev/null &
MT_PID=$!
for ((i = 0; i < 300; i++)); do
	grep -qs '^iscsi://' "$OUT/minitarget.out" && break
	kill -0 "$MT_PID" 2>/dev/null || die "minitarget exited: $(tail -3 "$OUT/minitarget.err")"
	sleep 0.1
done
URL=$(grep -o 'iscsi://[^[:space:]]*' "$OUT/minitarget.out" | head -n 1)
[[ -n "$URL" ]] || die "minitarget printed no URL"
OSD_PID=$(awk '$1 == "osd.0" { print $2 }' "$CEPH_DIR/pids")
MON_PID=$(awk '$1 ~ /^mon\./ { print $2; exit }' "$CEPH_DIR/pids")
[[ -n "$OSD_PID" && -n "$MON_PID" ]] || die "no osd.0 / mon pid in $CEPH_DIR/pids"
TCK=$(getconf CLK_TCK)

# CPU time (user + system) of a process in microseconds, from /proc/PID/stat.
cpu_us() { awk -v t="$TCK" '{ sub(/^.*\) /, ""); printf "%d\n", ($12 + $13) * 1000000 / t }' "/proc/$1/stat"; }

# rbd bench's own CPU time in microseconds, as its parent sees it (rusage of the child).
TIMEFORMAT='%3U %3S'
rbd_timed() { # out-file args...: run rbd bench, print its user+system CPU in us
	local t
	t=$({ time rbd bench "${@:2}" "$IMG" >"$1" 2>&1; } 2>&1) || return 1
	awk '{ printf "%d\n", ($1 + $2) * 1000000 }' <<<"$t"
}
# What one rbd bench costs besides its IO (connect, open, close): the least of three runs of
# a single 4 KiB IO, subtracted from every run's CPU.
RBD_BASE_US=
for i in 1 2 3; do
	c=$(rbd_timed "$OUT/rbd-base.txt" --io-size 4K --io-threads 1 --io-type read \
		--io-total 4K) || die "rbd bench of one IO failed: $(tail -3 "$OUT/rbd-base.txt")"
	[[ -z "$RBD_BASE_US" || $c -lt $RBD_BASE_US ]] && RBD_BASE_US=$c
done
say "rbd bench startup+teardown: $RBD_BASE_US us of CPU (subtracted)"

# test name -> "bs qd scsitgt-bench-rw rbd-io-type rbd-pattern"
spec() {
	case $1 in
	4k-randread-qd32) echo "4K 32 randread read rand" ;;
	4k-randwrite-qd32) echo "4K 32 randwrite write rand" ;;
	1m-read-qd16) echo "1M 16 read read seq" ;;
	1m-write-qd16) echo "1M 16 write write seq" ;;
	*) die "unknown test $1" ;;
	esac
}

# rbd bench ... -> "iops mibs rbd-us/io osd-us/io mon-us/io" from its summary line
# "elapsed: S ops: N ops/sec: X bytes/sec: Y" (Y carries a unit; MiB/s are computed from the
# IOPS and the IO size instead) and the CPU times around it
rbd_run() { # bs qd type pattern total out bytes-per-io
	local o0 m0 o1 m1 c
	o0=$(cpu_us "$OSD_PID")
	m0=$(cpu_us "$MON_PID")
	c=$(rbd_timed "$6" --io-size "$1" --io-threads "$2" --io-type "$3" --io-pattern "$4" \
		--io-total "$5") || return 1
	o1=$(cpu_us "$OSD_PID")
	m1=$(cpu_us "$MON_PID")
	awk -v bs="$7" -v c=$((c - RBD_BASE_US)) -v o=$((o1 - o0)) -v m=$((m1 - m0)) \
		'/^elapsed:/ { for (i = 1; i <= NF; i++) { if ($i == "ops/sec:") r = $(i + 1)
				if ($i == "ops:") n = $(i + 1) } }
		END { if (n < 1) n = 1; if (c < 0) c = 0
			printf "%.1f %.2f %.1f %.1f %.1f\n", r, r * bs / 1048576, c / n, o / n, m / n }' "$6"
}

ours_run() { # bs qd rw out
	"$BENCH" --url "$URL" --bs "$1" --qd "$2" --rw "$3" --seconds "$RUN_SECS" --ramp 0.5 \
		--target-pid "$MT_PID" --cpu-pid "osd=$OSD_PID" --cpu-pid "mon=$MON_PID" --json \
		>"$4" 2>"$4.err" || return 1
	python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
f = lambda v: "-" if v is None else "%.1f" % v
c = r["cpu_us_per_io"]
print("%.1f %.2f %s %d %s %s %s" % (r["iops"], r["mibs"], f(r["target_cpu_us_per_io"]),
      r["errors"], f(r["initiator_cpu_us_per_io"]), f(c.get("osd")), f(c.get("mon"))))' "$4"
}

median() { sort -g | awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)]; else print "n/a" }'; }

printf '| test | rbd bench IOPS | rbd bench MiB/s | target IOPS | target MiB/s | ratio | target CPU us/IO | CPU us/IO all processes: target side / rbd bench side |\n' >"$OUT/table.md"
printf '|---|---|---|---|---|---|---|---|\n' >>"$OUT/table.md"
printf '| test | target | initiator | OSD (target side) | mon (target side) | sum | rbd bench | OSD (rbd bench side) | mon (rbd bench side) | sum |\n' >"$OUT/split.md"
printf '|---|---|---|---|---|---|---|---|---|---|\n' >>"$OUT/split.md"
for t in $TESTS; do
	read -r bs qd rw rtype rpat <<<"$(spec "$t")"
	case $bs in
	*M) bytes=$((${bs%M} * 1048576)) ;;
	*K) bytes=$((${bs%K} * 1024)) ;;
	esac
	# Size rbd bench's run to about RUN_SECS from a short probe.
	probe=$(rbd_run "$bs" "$qd" "$rtype" "$rpat" $((bytes * 2000)) "$OUT/$t.probe.txt" "$bytes") ||
		die "rbd bench probe $t failed: $(tail -3 "$OUT/$t.probe.txt")"
	total=$(awk -v i="${probe%% *}" -v s="$RUN_SECS" -v b="$bytes" \
		'BEGIN { n = int(i * s); if (n < 1000) n = 1000; printf "%d", n * b }')
	: >"$OUT/$t.rbd"
	: >"$OUT/$t.ours"
	for ((r = 1; r <= RUNS; r++)); do
		res=$(rbd_run "$bs" "$qd" "$rtype" "$rpat" "$total" "$OUT/$t.rbd.$r.txt" "$bytes") ||
			die "rbd bench $t failed: $(tail -3 "$OUT/$t.rbd.$r.txt")"
		echo "$res" >>"$OUT/$t.rbd"
		res=$(ours_run "$bs" "$qd" "$rw" "$OUT/$t.ours.$r.json") ||
			die "scsitgt-bench $t failed: $(cat "$OUT/$t.ours.$r.json.err")"
		echo "$res" >>"$OUT/$t.ours"
		say "$t run $r: rbd bench $(tail -n 1 "$OUT/$t.rbd") | target $res"
	done
	ri=$(cut -d' ' -f1 "$OUT/$t.rbd" | median)
	rm_=$(cut -d' ' -f2 "$OUT/$t.rbd" | median)
	oi=$(cut -d' ' -f1 "$OUT/$t.ours" | median)
	om=$(cut -d' ' -f2 "$OUT/$t.ours" | median)
	oc=$(cut -d' ' -f3 "$OUT/$t.ours" | median)
	oinit=$(cut -d' ' -f5 "$OUT/$t.ours" | median)
	oosd=$(cut -d' ' -f6 "$OUT/$t.ours" | median)
	omon=$(cut -d' ' -f7 "$OUT/$t.ours" | median)
	rc_=$(cut -d' ' -f3 "$OUT/$t.rbd" | median)
	rosd=$(cut -d' ' -f4 "$OUT/$t.rbd" | median)
	rmon=$(cut -d' ' -f5 "$OUT/$t.rbd" | median)
	osum=$(awk -v a="$oc" -v b="$oinit" -v c="$oosd" -v d="$omon" 'BEGIN { printf "%.1f", a + b + c + d }')
	rsum=$(awk -v a="$rc_" -v c="$rosd" -v d="$rmon" 'BEGIN { printf "%.1f", a + c + d }')
	printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$t" "$oc" "$oinit" "$oosd" \
		"$omon" "$osum" "$rc_" "$rosd" "$rmon" "$rsum" >>"$OUT/split.md"
	errs=$(awk '{ s += $4 } END { print s + 0 }' "$OUT/$t.ours")
	[[ "$errs" -eq 0 ]] || say "$t: $errs failed commands on our side"
	ratio=$(awk -v a="$oi" -v b="$ri" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }')
	printf '| %s | %s | %s | %s | %s | %sx | %s | %s / %s |\n' "$t" "$ri" "$rm_" "$oi" "$om" \
		"$ratio" "$oc" "$osum" "$rsum" >>"$OUT/table.md"
done
cat "$OUT/table.md"
echo
echo "CPU us per IO of each process (medians; sums of the medians):"
cat "$OUT/split.md"
say "raw results in $OUT"
