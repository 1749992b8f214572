#!/bin/bash
# SPDX-License-Identifier: MIT
#
# rbd-compare.sh - an RBD LUN through minitarget against `rbd bench` on the same image, side by
# side in one run, on a throwaway cluster (tests/ceph/micro-ceph.sh).
#
# Usage: bench/rbd-compare.sh [--build DIR] [--seconds S] [--runs N] [--size SIZE]
#                             [--tests "NAME ..."] [--store memstore|bluestore] [--out DIR]
#                             [--nocache]
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
#   --out DIR     keep the raw results there (default: a new directory under /tmp)
#
# Both sides use librbd with the same configuration on the same image: `rbd bench` is librbd's
# own load generator (one process, io-threads = queue depth); ours is scsitgt-bench (libiscsi)
# -> iSCSI over loopback -> minitarget -> librbd. The ratio is ours / rbd bench. The target's
# CPU time per IO comes from /proc/PID/stat (scsitgt-bench --target-pid), the OSD's and
# monitor's are not counted on either side. Everything shares this machine's cores.
set -uo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$SRC/build
RUN_SECS=5
RUNS=3
SIZE=512M
STORE=memstore
NOCACHE=0
OUT=
ALL_TESTS="4k-randread-qd32 4k-randwrite-qd32 1m-read-qd16 1m-write-qd16"
TESTS=$ALL_TESTS

usage() { sed -n '3,26{s/^# \{0,1\}//;p}' "$0" >&2; exit "${1:-2}"; }
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
	--out) OUT=$2; shift 2 ;;
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
"$MT" --portal "127.0.0.1:$PORT" --lun "0:rbd:$IMG" >"$OUT/minitarget.out" \
	2>"$OUT/minitarget.err" </dev/null &
MT_PID=$!
for ((i = 0; i < 300; i++)); do
	grep -q '^iscsi://' "$OUT/minitarget.out" && break
	kill -0 "$MT_PID" 2>/dev/null || die "minitarget exited: $(tail -3 "$OUT/minitarget.err")"
	sleep 0.1
done
URL=$(grep -o 'iscsi://[^[:space:]]*' "$OUT/minitarget.out" | head -n 1)
[[ -n "$URL" ]] || die "minitarget printed no URL"

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

# rbd bench ... -> "iops mibs" from its summary line "elapsed: S ops: N ops/sec: X bytes/sec: Y"
# (Y carries a unit; MiB/s are computed from the IOPS and the IO size instead)
rbd_run() { # bs qd type pattern total out bytes-per-io
	rbd bench --io-size "$1" --io-threads "$2" --io-type "$3" --io-pattern "$4" \
		--io-total "$5" "$IMG" >"$6" 2>&1 || return 1
	awk -v bs="$7" '/^elapsed:/ { for (i = 1; i <= NF; i++) if ($i == "ops/sec:") o = $(i + 1) }
		END { printf "%.1f %.2f\n", o, o * bs / 1048576 }' "$6"
}

ours_run() { # bs qd rw out
	"$BENCH" --url "$URL" --bs "$1" --qd "$2" --rw "$3" --seconds "$RUN_SECS" --ramp 0.5 \
		--target-pid "$MT_PID" --json >"$4" 2>"$4.err" || return 1
	python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
c = r["target_cpu_us_per_io"]
print("%.1f %.2f %s %d" % (r["iops"], r["mibs"], "-" if c is None else "%.1f" % c, r["errors"]))' "$4"
}

median() { sort -g | awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)]; else print "n/a" }'; }

printf '| test | rbd bench IOPS | rbd bench MiB/s | target IOPS | target MiB/s | ratio | target CPU us/IO |\n' >"$OUT/table.md"
printf '|---|---|---|---|---|---|---|\n' >>"$OUT/table.md"
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
	errs=$(awk '{ s += $4 } END { print s + 0 }' "$OUT/$t.ours")
	[[ "$errs" -eq 0 ]] || say "$t: $errs failed commands on our side"
	ratio=$(awk -v a="$oi" -v b="$ri" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }')
	printf '| %s | %s | %s | %s | %s | %sx | %s |\n' "$t" "$ri" "$rm_" "$oi" "$om" "$ratio" "$oc" \
		>>"$OUT/table.md"
done
cat "$OUT/table.md"
say "raw results in $OUT"
