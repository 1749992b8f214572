#!/bin/bash
# SPDX-License-Identifier: MIT
#
# compare.sh - libscsitgt's minitarget against tgt's tgtd, side by side in one run.
#
# Usage: bench/compare.sh [--build DIR] [--seconds S] [--runs N] [--ramp S] [--pin]
#                         [--luns "null ram"] [--tests "NAME ..."] [--size SIZE]
#                         [--ports OURS,TGTD,IPERF[,OURS_WORKERS]] [--out DIR] [--no-install]
#                         [--tgtd-param KEY=VALUE]... [--workers N|auto]
#
#   --build DIR   meson build directory holding examples/minitarget and bench/scsitgt-bench
#                 (default: <source>/build)
#   --seconds S   measured seconds per run (default 5)
#   --runs N      runs per test and side; the table shows medians (default 3)
#   --ramp S      unmeasured warm-up per run (default 0.5)
#   --pin         targets on CPU 0, the initiator (and iperf3 client) on CPU 1; default: no pinning
#   --luns LIST   which LUN types: null, ram, file (default "null ram"); file is one regular
#                 file served by both sides: ours through the aio backend, tgtd through its
#                 aio store (--bstype aio)
#   --file PATH   the file of the file LUN (default /var/tmp/scsitgt-compare.img; created with
#                 --size, allocated, and removed at the end)
#   --tests LIST  subset of: 4k-randread-qd1 4k-randread-qd32 4k-randwrite-qd1
#                 4k-randwrite-qd32 1m-read-qd8 1m-write-qd8 (default all)
#   --size SIZE   LUN size used on both sides (default 1G)
#   --ports A,B,C[,D] TCP ports of minitarget, tgtd (also its control port), iperf3 and the
#                 minitarget with workers (default 3295,3296,3297,3298)
#   --workers N   also run a second minitarget with --workers N (N or auto) through every test;
#                 the table then has a row for each of our two targets
#   --out DIR     keep raw results there (default: a new directory under /tmp)
#   --no-install  do not apt-get install iperf3 when it is missing (the ceiling shows n/a)
#   --tgtd-param K=V  set a tgtd iSCSI parameter (tgtadm target update), e.g.
#                 MaxRecvDataSegmentLength=262144 FirstBurstLength=262144 InitialR2T=No;
#                 by default each side keeps its own defaults (the table states them)
#
# Both targets run on this machine at the same time, each with a null LUN and a RAM LUN of the
# same size: minitarget's null and ram backends; tgtd's null store (bstype null) and a file on
# /dev/shm through its rdwr store. Both RAM LUNs are written once in full before measuring.
# Runs alternate between the two sides, so slow drift of the machine hits both alike. The
# initiator is bench/scsitgt-bench (libiscsi), on the same cores as the targets.
#
# Needs: tgt (tgtd, tgtadm), the built programs; optional: tshark (login capture), iperf3.
# tgtd ignores SIGTERM: it is stopped through tgtadm (targets deleted, then the system).
set -uo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$SRC/build
RUN_SECS=5
RUNS=3
RAMP=0.5
PIN=0
LUNS="null ram"
ALL_TESTS="4k-randread-qd1 4k-randread-qd32 4k-randwrite-qd1 4k-randwrite-qd32 1m-read-qd8 1m-write-qd8"
TESTS=$ALL_TESTS
SIZE=1G
PORT_OURS=3295
PORT_TGTD=3296
PORT_IPERF=3297
PORT_OURSW=3298
WORKERS=
OUT=
FILE=/var/tmp/scsitgt-compare.img
INSTALL=1
TGTD_PARAMS=()
IQN_TGTD=iqn.2026-11.org.libscsitgt.bench:tgtd
TGTD=${TGTD:-/usr/sbin/tgtd}
TGTADM=${TGTADM:-/usr/sbin/tgtadm}

usage() { sed -n '3,33{s/^# \{0,1\}//;p}' "$0" >&2; exit "${1:-2}"; }
say() { echo "compare: $*" >&2; }
die() { say "$*"; exit 1; }

while [[ $# -gt 0 ]]; do
	case "$1" in
	--build) BUILD=$2; shift 2 ;;
	--seconds) RUN_SECS=$2; shift 2 ;;
	--runs) RUNS=$2; shift 2 ;;
	--ramp) RAMP=$2; shift 2 ;;
	--pin) PIN=1; shift ;;
	--luns) LUNS=$2; shift 2 ;;
	--tests) TESTS=$2; shift 2 ;;
	--size) SIZE=$2; shift 2 ;;
	--ports)
		IFS=, read -r PORT_OURS PORT_TGTD PORT_IPERF p4 <<<"$2"
		PORT_OURSW=${p4:-$PORT_OURSW}
		shift 2 ;;
	--workers) WORKERS=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	--no-install) INSTALL=0; shift ;;
	--tgtd-param) TGTD_PARAMS+=("$2"); shift 2 ;;
	--file) FILE=$2; shift 2 ;;
	-h|--help) usage 0 ;;
	*) say "unknown option $1"; usage ;;
	esac
done
[[ "$RUNS" =~ ^[1-9][0-9]*$ ]] || die "--runs must be a positive integer"
[[ -z $WORKERS || $WORKERS == auto || $WORKERS =~ ^[1-9][0-9]*$ ]] ||
	die "--workers takes a positive number or auto"
# Our sides: "ours" (everything on one loop) and, with --workers, "oursw".
OUR_SIDES=ours
[[ -n $WORKERS ]] && OUR_SIDES="ours oursw"
for p in "$PORT_OURS" "$PORT_TGTD" "$PORT_IPERF" "$PORT_OURSW"; do
	[[ "$p" =~ ^[0-9]+$ ]] || die "bad port '$p'"
done
for l in $LUNS; do [[ $l == null || $l == ram || $l == file ]] || die "unknown LUN type '$l'"; done
WANT_FILE=0
[[ " $LUNS " == *" file "* ]] && WANT_FILE=1
for t in $TESTS; do [[ " $ALL_TESTS " == *" $t "* ]] || die "unknown test '$t'"; done

MINITARGET=$BUILD/examples/minitarget
BENCH=$BUILD/bench/scsitgt-bench
[[ -x $MINITARGET ]] || die "$MINITARGET not built (see --build)"
[[ -x $BENCH ]] || die "$BENCH not built (it needs libiscsi-dev)"
[[ -x $TGTD && -x $TGTADM ]] || die "tgtd/tgtadm not found (Debian package tgt)"

OUT=${OUT:-$(mktemp -d /tmp/scsitgt-compare.XXXXXX)}
mkdir -p "$OUT/raw"
SHMFILE=/dev/shm/scsitgt-compare-tgtd-$PORT_TGTD.img
PIN_TGT=()
PIN_INI=()
if [[ $PIN == 1 ]]; then
	PIN_TGT=(taskset -c 0)
	PIN_INI=(taskset -c 1)
fi

OURS_PID=
OURSW_PID=
TGTD_PID=
# port_busy, tgtd_start/target/open/stop, median
source "$SRC/bench/tgtd-lib.sh"

# --- our side: minitarget prints one URL per LUN once it listens ---
# start_ours [oursw]: the plain minitarget, or (oursw) the one with --workers.
start_ours() {
	local side=${1:-ours} port=$PORT_OURS extra=() nurls=2 pid
	if [[ $side == oursw ]]; then
		port=$PORT_OURSW
		extra=(--workers "$WORKERS")
	fi
	port_busy "$port" && die "port $port is in use"
	if [[ $WANT_FILE == 1 ]]; then
		extra+=(--lun "2:file:$FILE")
		nurls=3
	fi
	"${PIN_TGT[@]}" "$MINITARGET" --portal "127.0.0.1:$port" \
		--lun "0:null:$SIZE" --lun "1:ram:$SIZE" "${extra[@]}" \
		>"$OUT/$side.urls" 2>"$OUT/$side.log" &
	pid=$!
	if [[ $side == oursw ]]; then OURSW_PID=$pid; else OURS_PID=$pid; fi
	for _ in $(seq 100); do
		[[ $(grep -c '^iscsi://' "$OUT/$side.urls") == "$nurls" ]] && break
		kill -0 "$pid" 2>/dev/null || die "minitarget exited: $(tail -3 "$OUT/$side.log")"
		sleep 0.1
	done
	# shellcheck disable=SC2034 # URL_<side>_<lun> are read through side_url's ${!v}
	printf -v "URL_${side}_null" '%s' "$(grep '/0$' "$OUT/$side.urls")"
	printf -v "URL_${side}_ram" '%s' "$(grep '/1$' "$OUT/$side.urls")"
	printf -v "URL_${side}_file" '%s' "$(grep '/2$' "$OUT/$side.urls")"
	[[ -n $(side_url "$side" null) && -n $(side_url "$side" ram) ]] ||
		die "minitarget did not print its URLs"
}

stop_ours() {
	local pid
	for pid in "$OURS_PID" "$OURSW_PID"; do
		[[ -n $pid ]] || continue
		kill -TERM "$pid" 2>/dev/null
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	done
	OURS_PID=
	OURSW_PID=
}

# --- tgtd: foreground process we own (bench/tgtd-lib.sh) ---
start_tgtd() {
	local bytes
	bytes=$(numfmt --from=iec "$SIZE") || die "bad --size $SIZE"
	tgtd_start "$OUT/tgtd.log" "${PIN_TGT[@]}"
	# LUN 1: a RAM file through the rdwr store; LUN 2: the null store.
	tgtd_target "$IQN_TGTD" "$SHMFILE" "$bytes"
	# LUN 3: the same regular file as our file LUN, through tgtd's libaio store.
	if [[ $WANT_FILE == 1 ]]; then
		tgtd_adm --lld iscsi --mode logicalunit --op new --tid 1 --lun 3 --bstype aio \
			--backing-store "$FILE" || die "tgtadm: aio LUN on $FILE failed"
	fi
	for kv in "${TGTD_PARAMS[@]}"; do
		tgtd_adm --lld iscsi --mode target --op update --tid 1 --name "${kv%%=*}" \
			--value "${kv#*=}" || die "tgtadm: parameter $kv refused"
	done
	tgtd_open
	# shellcheck disable=SC2034 # URL_<side>_<lun> are read through side_url's ${!v}
	URL_tgtd_ram=iscsi://127.0.0.1:$PORT_TGTD/$IQN_TGTD/1
	URL_tgtd_null=iscsi://127.0.0.1:$PORT_TGTD/$IQN_TGTD/2
	# shellcheck disable=SC2034 # read through side_url's ${!v}
	URL_tgtd_file=iscsi://127.0.0.1:$PORT_TGTD/$IQN_TGTD/3
}

stop_tgtd() { tgtd_stop "$SHMFILE"; }

cleanup() {
	stop_ours
	stop_tgtd
	[[ $WANT_FILE == 1 ]] && rm -f "$FILE"
	[[ -n ${IPERF_PID:-} ]] && kill "$IPERF_PID" 2>/dev/null
	[[ -n ${TSHARK_PID:-} ]] && kill "$TSHARK_PID" 2>/dev/null
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- helpers on the bench's one-line JSON ---
jnum() { sed -n "s/.*\"$1\":\([-0-9.e+]*\|null\).*/\1/p" <<<"$2"; }
jneg() { sed -n "s/.*\"$1\":\"\([^\"]*\)\".*/\1/p" <<<"$2"; }

test_params() { # name -> "bs qd rw"
	case "$1" in
	4k-randread-qd1) echo "4k 1 randread" ;;
	4k-randread-qd32) echo "4k 32 randread" ;;
	4k-randwrite-qd1) echo "4k 1 randwrite" ;;
	4k-randwrite-qd32) echo "4k 32 randwrite" ;;
	1m-read-qd8) echo "1m 8 read" ;;
	1m-write-qd8) echo "1m 8 write" ;;
	esac
}

side_pid() {
	case "$1" in
	ours) echo "$OURS_PID" ;;
	oursw) echo "$OURSW_PID" ;;
	*) echo "$TGTD_PID" ;;
	esac
}
side_url() { local v="URL_$1_$2"; echo "${!v}"; }

run_bench() { # side lun test run
	local side=$1 lun=$2 t=$3 run=$4 bs qd rw json
	read -r bs qd rw <<<"$(test_params "$t")"
	json=$("${PIN_INI[@]}" "$BENCH" --url "$(side_url "$side" "$lun")" --bs "$bs" --qd "$qd" \
		--rw "$rw" --seconds "$RUN_SECS" --ramp "$RAMP" --size "$SIZE" \
		--target-pid "$(side_pid "$side")" --json 2>>"$OUT/bench.err")
	if [[ -z $json ]]; then
		say "$side $lun $t run $run: no result (see $OUT/bench.err)"
		return
	fi
	echo "$side $lun $t $run $json" >>"$OUT/results.txt"
	printf '%s %s %s %s %s\n' "$(jnum iops "$json")" "$(jnum mibs "$json")" \
		"$(jnum p50 "$json")" "$(jnum target_cpu_us_per_io "$json")" \
		"$(jnum errors "$json")" >>"$OUT/raw/${side}_${lun}_${t}"
	[[ -f $OUT/neg_$side ]] || echo "$json" >"$OUT/neg_$side"
	say "$(printf '%-6s %-4s %-18s run %d: %9.0f IOPS %8.1f MiB/s p50 %7.1f us cpu %s us/IO' \
		"$side" "$lun" "$t" "$run" "$(jnum iops "$json")" "$(jnum mibs "$json")" \
		"$(jnum p50 "$json")" "$(jnum target_cpu_us_per_io "$json")")"
}

# Column @2 (1 iops, 2 mibs, 3 p50, 4 cpu, 5 errors) of a raw file, median (errors: sum).
col() {
	local f="$OUT/raw/$1" c=$2
	[[ -f $f ]] || { echo "-"; return; }
	if [[ $c == 5 ]]; then
		awk '{ s += $5 } END { print s + 0 }' "$f"
	else
		awk -v c="$c" '$c != "null" { print $c }' "$f" | median
	fi
}

# --- login capture: the target's Login Response keys as seen on the wire ---
capture_login() { # side port url
	local side=$1 port=$2 url=$3 pcap="$OUT/login_$1.pcapng"
	command -v tshark >/dev/null || { echo "n/a (no tshark)"; return; }
	tshark -i lo -f "tcp port $port" -a duration:15 -w "$pcap" -q >/dev/null 2>&1 &
	TSHARK_PID=$!
	for _ in $(seq 50); do [[ -s $pcap ]] && break; sleep 0.1; done
	sleep 0.3
	"$BENCH" --url "$url" --seconds 0.2 --ramp 0 --qd 1 >/dev/null 2>&1
	sleep 0.3
	kill -INT "$TSHARK_PID" 2>/dev/null
	wait "$TSHARK_PID" 2>/dev/null
	TSHARK_PID=
	# Opcode 0x23: Login Response (RFC 7143 §11.13); the last one carries the final keys.
	tshark -r "$pcap" -d "tcp.port==$port,iscsi" -Y "iscsi.opcode == 0x23" \
		-T fields -e iscsi.keyvalue 2>/dev/null | tr ',' '\n' | grep -v '^$' >"$OUT/wire_$side"
	echo ok
}

wire_key() { # side key
	local v
	v=$(sed -n "s/^$2=//p" "$OUT/wire_$1" 2>/dev/null | tail -1)
	# RFC 7143 §13.12: a target that does not declare MaxRecvDataSegmentLength gets 8192.
	if [[ -z $v && $2 == MaxRecvDataSegmentLength && -s $OUT/wire_$1 ]]; then
		v="8192 (not declared, RFC 7143 default)"
	fi
	echo "$v"
}

# The key as libiscsi logged the target's reply (the bench's JSON "negotiated" object).
neg_key() { # side key
	local v
	[[ -f $OUT/neg_$1 ]] || return 0
	v=$(jneg "$2" "$(cat "$OUT/neg_$1")")
	if [[ -z $v && $2 == MaxRecvDataSegmentLength ]]; then
		v="8192 (not declared, RFC 7143 default)"
	fi
	echo "$v"
}

# --- loopback TCP ceiling ---
iperf_ceiling() { # write size -> GiB/s or n/a
	local len=$1 js bps
	"${PIN_TGT[@]}" iperf3 -s -1 -p "$PORT_IPERF" >/dev/null 2>&1 &
	IPERF_PID=$!
	sleep 0.5
	js=$("${PIN_INI[@]}" iperf3 -c 127.0.0.1 -p "$PORT_IPERF" -t 3 -l "$len" -J 2>/dev/null)
	wait "$IPERF_PID" 2>/dev/null
	IPERF_PID=
	bps=$(tr -d ' \t\n' <<<"$js" |
		sed -n 's/.*"sum_received":{[^}]*"bits_per_second":\([0-9.e+]*\).*/\1/p')
	if [[ -z $bps ]]; then echo n/a; else awk -v b="$bps" 'BEGIN { printf "%.2f", b / 8 / 2^30 }'; fi
}

have_iperf() {
	command -v iperf3 >/dev/null && return 0
	[[ $INSTALL == 1 && $(id -u) == 0 ]] || return 1
	say "installing iperf3"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q iperf3 >"$OUT/apt.log" 2>&1 ||
		{ apt-get update -q >>"$OUT/apt.log" 2>&1 &&
		  DEBIAN_FRONTEND=noninteractive apt-get install -y -q iperf3 >>"$OUT/apt.log" 2>&1; }
	command -v iperf3 >/dev/null
}

# ============================================================================================
T0=$(date +%s)
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
say "results in $OUT"
if [[ $WANT_FILE == 1 ]]; then
	# Written, not just allocated: reads of unwritten extents would never reach the disk.
	say "writing $SIZE to $FILE for the file LUN"
	dd if=/dev/zero of="$FILE" bs=1M count=$(($(numfmt --from=iec "$SIZE") >> 20)) \
		conv=fsync status=none || die "cannot write $FILE"
fi
start_ours
[[ -n $WORKERS ]] && start_ours oursw
start_tgtd
say "minitarget pid $OURS_PID on $PORT_OURS, tgtd pid $TGTD_PID on $PORT_TGTD"
[[ -n $WORKERS ]] && say "minitarget --workers $WORKERS pid $OURSW_PID on $PORT_OURSW"

WIRE_ours=$(capture_login ours "$PORT_OURS" "$URL_ours_null")
WIRE_tgtd=$(capture_login tgtd "$PORT_TGTD" "$URL_tgtd_null")

if [[ " $LUNS " == *" ram "* ]]; then
	for side in $OUR_SIDES tgtd; do
		say "writing $side's RAM LUN once in full"
		"$BENCH" --url "$(side_url "$side" ram)" --fill --bs 1m --qd 8 --size "$SIZE" \
			>>"$OUT/fill.log" 2>&1 || say "fill of $side's RAM LUN failed (see fill.log)"
	done
fi

for lun in $LUNS; do
	for t in $TESTS; do
		for run in $(seq "$RUNS"); do
			for side in $OUR_SIDES tgtd; do
				run_bench "$side" "$lun" "$t" "$run"
			done
		done
	done
done

if have_iperf; then
	CEIL_1M=$(iperf_ceiling 1M)
	CEIL_128K=$(iperf_ceiling 128K)
else
	CEIL_1M=n/a
	CEIL_128K=n/a
fi

stop_ours
stop_tgtd
LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)

# --- report ---
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || b + 0 == 0) print "-";
	else printf "%.2f", a / b }'; }
fmt() { awk -v v="$1" -v f="$2" 'BEGIN { if (v == "-") print "-"; else printf f, v }'; }

{
	echo "# compare.sh $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, $RUNS runs x ${RUN_SECS}s" \
		"(+${RAMP}s ramp), medians; LUN size $SIZE; pinning: $([[ $PIN == 1 ]] &&
		echo 'targets CPU 0, initiator CPU 1' || echo none)"
	echo
	[[ -n $WORKERS ]] && echo "ours: minitarget (workers 0: one loop); ours-w$WORKERS:" \
		"minitarget --workers $WORKERS. Each row compares that target with the same tgtd runs." &&
		echo
	echo "| test | LUN | ours | ours IOPS | ours MiB/s | ours p50 us | ours CPU us/IO |" \
		"tgtd IOPS | tgtd MiB/s | tgtd p50 us | tgtd CPU us/IO | IOPS ours/tgtd |" \
		"CPU/IO ours/tgtd |"
	echo "|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
	errs=0
	for lun in $LUNS; do
		for t in $TESTS; do
			g="tgtd_${lun}_$t"
			gi=$(col "$g" 1)
			gc=$(col "$g" 4)
			e=$(col "$g" 5 | sed 's/-/0/')
			errs=$((errs + e))
			for side in $OUR_SIDES; do
				o="${side}_${lun}_$t"
				oi=$(col "$o" 1)
				oc=$(col "$o" 4)
				name=ours
				[[ $side == oursw ]] && name="ours-w$WORKERS"
				echo "| $t | $lun | $name | $(fmt "$oi" %.0f) |" \
					"$(fmt "$(col "$o" 2)" %.1f) |" \
					"$(fmt "$(col "$o" 3)" %.1f) | $(fmt "$oc" %.1f) |" \
					"$(fmt "$gi" %.0f) | $(fmt "$(col "$g" 2)" %.1f) |" \
					"$(fmt "$(col "$g" 3)" %.1f) | $(fmt "$gc" %.1f) |" \
					"$(ratio "$oi" "$gi") | $(ratio "$oc" "$gc") |"
				e=$(col "$o" 5 | sed 's/-/0/')
				errs=$((errs + e))
			done
		done
	done
	echo
	echo "Loopback TCP ceiling (iperf3, one stream, 3 s): ${CEIL_1M} GiB/s with 1 MiB writes," \
		"${CEIL_128K} GiB/s with 128 KiB writes."
	echo
	echo "Negotiated (the target's Login Response keys; libiscsi offered" \
		"MaxRecvDataSegmentLength=262144, FirstBurstLength=262144, MaxBurstLength=262144," \
		"InitialR2T=No, ImmediateData=Yes):"
	echo
	echo "| key | ours | tgtd | ours on the wire | tgtd on the wire |"
	echo "|---|---|---|---|---|"
	for k in MaxRecvDataSegmentLength FirstBurstLength MaxBurstLength InitialR2T ImmediateData \
		MaxOutstandingR2T; do
		echo "| $k | $(neg_key ours "$k") | $(neg_key tgtd "$k") |" \
			"$(wire_key ours "$k") | $(wire_key tgtd "$k") |"
	done
	[[ $WIRE_ours == ok && $WIRE_tgtd == ok ]] || echo "(wire capture: ours $WIRE_ours, tgtd $WIRE_tgtd)"
	echo
	if [[ $errs -gt 0 ]]; then
		echo "WARNING: $errs commands failed across all runs (see $OUT/bench.err)."
	else
		echo "No command failed."
	fi
	echo "Load average before: $LOAD0; after: $LOAD1 (other work on the machine skews both sides)."
	[[ ${#TGTD_PARAMS[@]} -gt 0 ]] && echo "tgtd parameters set: ${TGTD_PARAMS[*]}"
	echo "Elapsed: $(( $(date +%s) - T0 )) s. Raw results: $OUT/results.txt"
} | tee "$OUT/table.md"
