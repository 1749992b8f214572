#!/bin/bash
# SPDX-License-Identifier: MIT
#
# vm-compare.sh - CPU per IO of libscsitgt's minitarget against tgt's tgtd, with the Linux
# kernel's iSCSI/TCP initiator (iscsi_tcp, open-iscsi) and fio in a QEMU guest as the load.
#
# Usage: bench/vm-compare.sh [--build DIR] [--runs N] [--seconds S] [--luns "null ram"]
#                            [--tests "TEST ..."] [--size SIZE] [--ports OURS,TGTD]
#                            [--workers N|auto] [--count] [--profile] [--out DIR]
#
#   --build DIR   meson build directory holding examples/minitarget (a release build is what
#                 to quote) and, for RAM LUNs, bench/scsitgt-bench (default: <source>/build)
#   --runs N      rounds per test; a round runs fio once against each target, the order
#                 swapped every round; the table shows medians (default 5)
#   --seconds S   fio's run time per run (default 10)
#   --luns LIST   null, ram or both (default "null ram")
#   --tests LIST  of randread-qd32 randwrite-qd32 randread-qd1 randwrite-qd1 (4 KiB random
#                 I/O at that queue depth; default: all four)
#   --size SIZE   size of both RAM LUNs (default 1G); both null LUNs have tgtd's fixed 1 TiB
#   --ports A,B   TCP ports of minitarget and tgtd (also its control port) on 127.0.0.1
#                 (default 3461,3462)
#   --workers N   run minitarget with --workers N (default: one loop, the single-core case)
#   --count       also one counted run per side, LUN and test (not in the CPU figures): the
#                 target's system calls (perf stat, tracepoints) and TCP segments (ss -ti of
#                 its connection) per IO
#   --profile     also one run of ours (the first LUN and test) under `perf record -g`
#   --out DIR     results (default: a new directory under /tmp)
#   --report DIR  print the tables of an earlier run's results (its --out) again; runs nothing
#
# Both targets run on this host at once, each with a null LUN and a RAM LUN: minitarget's
# null and ram backends, tgtd's null store and a file on /dev/shm through its rdwr store. Both
# RAM LUNs are written once in full first (scsitgt-bench --fill). The guest (tests/vm: Debian,
# TCG emulation where there is no KVM) reaches them at 10.0.2.2 through QEMU's user network
# (slirp: QEMU's own TCP socket to 127.0.0.1 is the target's peer) and logs in to both; for
# each run it asks the host to read the target's CPU time (the sum over its threads of
# /proc/PID/task/*/schedstat's run time, and utime+stime of /proc/PID/stat as a check) right
# before fio starts and right after it ends, and reports the I/Os the disk completed in
# between. CPU per IO is the one divided by the other. Needs: root (the guest image), QEMU,
# tgt (tgtd, tgtadm), perf for --count and --profile.
set -uo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$SRC/build
RUNS=5
SECS=10
LUNS="null ram"
ALL_TESTS="randread-qd32 randwrite-qd32 randread-qd1 randwrite-qd1"
TESTS=$ALL_TESTS
SIZE=1G
PORT_OURS=3461
PORT_TGTD=3462
WORKERS=
COUNT=0
PROFILE=0
OUT=
REPORT=
IQN_TGTD=iqn.2026-12.org.libscsitgt.bench:vm-tgtd
TGTD=${TGTD:-/usr/sbin/tgtd}
TGTADM=${TGTADM:-/usr/sbin/tgtadm}

usage() { sed -n '4,36{s/^# \{0,1\}//;p}' "$0" >&2; exit "${1:-2}"; }
say() { echo "vm-compare: $*" >&2; }
die() { say "$*"; exit 1; }

while [[ $# -gt 0 ]]; do
	case "$1" in
	--build) BUILD=$2; shift 2 ;;
	--runs) RUNS=$2; shift 2 ;;
	--seconds) SECS=$2; shift 2 ;;
	--luns) LUNS=$2; shift 2 ;;
	--tests) TESTS=$2; shift 2 ;;
	--size) SIZE=$2; shift 2 ;;
	--ports) IFS=, read -r PORT_OURS PORT_TGTD <<<"$2"; shift 2 ;;
	--workers) WORKERS=$2; shift 2 ;;
	--count) COUNT=1; shift ;;
	--profile) PROFILE=1; shift ;;
	--out) OUT=$2; shift 2 ;;
	--report) REPORT=$2; shift 2 ;;
	-h|--help) usage 0 ;;
	*) say "unknown option $1"; usage ;;
	esac
done
# --- report: the tables, from OUT's results.txt, counts.txt and params ---
report() {
	# col SIDE TYPE TEST EXPR: the median over the runs of an awk expression of the result fields
	# ($5 IOs, $6 CPU ns, $7 ticks, $8 seconds).
	col() {
		awk -v s="$1" -v l="$2" -v t="$3" '$1 == s && $2 == l && $3 == t { print '"$4"' }' \
			"$OUT/results.txt" | median
	}
	# ratios TYPE TEST: CPU per IO ours / tgtd of each round (same run number), sorted.
	ratios() {
		awk -v l="$1" -v t="$2" '$2 == l && $3 == t && $5 > 0 { c[$1, $4] = $6 / $5; r[$4] = 1 }
			END { for (k in r) if ((("ours", k) in c) && (("tgtd", k) in c))
				printf "%.3f\n", c["ours", k] / c["tgtd", k] }' "$OUT/results.txt" | sort -g
	}
	f1() { awk -v v="$1" 'BEGIN { if (v == "-") print "-"; else printf "%.1f", v }'; }
	f0() { awk -v v="$1" 'BEGIN { if (v == "-") print "-"; else printf "%.0f", v }'; }

	# shellcheck disable=SC2016 # col's awk expressions are awk's, not the shell's
	{
		echo "# vm-compare.sh $RUN_DATE: the Linux kernel's iscsi_tcp in a QEMU" \
			"guest (fio, libaio, direct, 4 KiB random), $RUNS rounds x ${SECS} s, medians;" \
			"RAM LUNs $SIZE, null LUNs 1 TiB; ours: minitarget" \
			"$([[ -n $WORKERS ]] && echo "--workers $WORKERS" || echo "(one loop)")"
		echo
		echo "| test | LUN | ours IOPS | ours CPU us/IO | tgtd IOPS | tgtd CPU us/IO |" \
			"CPU/IO ours/tgtd (median of rounds) | rounds' ratios |"
		echo "|---|---|--:|--:|--:|--:|--:|---|"
		for l in $LUNS; do
			for t in $TESTS; do
				echo "| $t | $l | $(f0 "$(col ours "$l" "$t" '$5 / '"$SECS")") |" \
					"$(f1 "$(col ours "$l" "$t" '$6 / 1000 / $5')") |" \
					"$(f0 "$(col tgtd "$l" "$t" '$5 / '"$SECS")") |" \
					"$(f1 "$(col tgtd "$l" "$t" '$6 / 1000 / $5')") |" \
					"$(ratios "$l" "$t" | median | awk '{ if ($1 == "-") print; else printf "%.2f", $1 }') |" \
					"$(ratios "$l" "$t" | awk '{ printf "%s%.2f", (NR > 1 ? " " : ""), $1 }') |"
			done
		done
		if [[ -s $OUT/counts.txt ]]; then
			echo
			echo "Counted runs (one per side, perf stat on the target, not in the figures above):" \
				"per IO"
			echo
			echo "| test | LUN | side | IOs | system calls | epoll_wait | read+recv | write+send |" \
				"futex | context switches | segments in | segments out | data segments out |"
			echo "|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
			while read -r side l t ios _ si0 so0 _ dso0 _ _ si1 so1 _ dso1 _ _; do
				p=$OUT/counts/$side-$l-$t.perf
				ev() { # events (regex) -> count per IO
					awk -F, -v re="$1" -v n="$ios" '$3 ~ re { s += $1 } END { printf "%.2f", n ? s / n : 0 }' "$p"
				}
				echo "| $t | $l | $side | $ios | $(ev '^raw_syscalls:sys_enter$') |" \
					"$(ev 'sys_enter_epoll_p?wait$') |" \
					"$(ev 'sys_enter_(read|readv|recvfrom|recvmsg)$') |" \
					"$(ev 'sys_enter_(write|writev|sendto|sendmsg)$') |" \
					"$(ev 'sys_enter_futex$') | $(ev '^context-switches$') |" \
					"$(awk -v a="$si0" -v b="$si1" -v n="$ios" 'BEGIN { printf "%.2f", (b - a) / n }') |" \
					"$(awk -v a="$so0" -v b="$so1" -v n="$ios" 'BEGIN { printf "%.2f", (b - a) / n }') |" \
					"$(awk -v a="$dso0" -v b="$dso1" -v n="$ios" 'BEGIN { printf "%.2f", (b - a) / n }') |"
			done <"$OUT/counts.txt"
			echo
			echo "Every counted system call per IO: $OUT/counts/*.perf (perf stat -x, output)."
		fi
		echo
		echo "Negotiated (the guest's iscsiadm -m session -P 2):"
		echo
		sed 's/^/    /' "$OUT/negotiated.txt" 2>/dev/null
		echo
		echo "Load before: $UPTIME0"
		echo "Load after:  $UPTIME1"
		echo "Elapsed: $ELAPSED s. Raw results: $OUT/results.txt (side LUN test round" \
			"IOs CPU-ns ticks seconds load1)"
	} | tee "$OUT/table.md"
}

if [[ -n $REPORT ]]; then
	OUT=$REPORT
	# shellcheck disable=SC1091 # written by the measuring run
	source "$OUT/params" || die "no $OUT/params"
	source "$SRC/bench/tgtd-lib.sh"
	report
	exit 0
fi
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || die "--runs must be a positive integer"
[[ $SECS =~ ^[1-9][0-9]*$ ]] || die "--seconds must be a positive integer"
for l in $LUNS; do [[ $l == null || $l == ram ]] || die "unknown LUN type '$l'"; done
for t in $TESTS; do [[ " $ALL_TESTS " == *" $t "* ]] || die "unknown test '$t'"; done
for p in "$PORT_OURS" "$PORT_TGTD"; do [[ $p =~ ^[0-9]+$ ]] || die "bad port '$p'"; done
BYTES=$(numfmt --from=iec "$SIZE") || die "bad --size $SIZE"
MINITARGET=$BUILD/examples/minitarget
BENCH=$BUILD/bench/scsitgt-bench
[[ -x $MINITARGET ]] || die "$MINITARGET not built (see --build)"
[[ -x $TGTD && -x $TGTADM ]] || die "tgtd/tgtadm not found (Debian package tgt)"
[[ " $LUNS " == *" ram "* && ! -x $BENCH ]] &&
	die "$BENCH not built (it fills the RAM LUNs; it needs libiscsi-dev)"
[[ $((COUNT + PROFILE)) -gt 0 ]] && ! command -v perf >/dev/null && die "--count/--profile need perf"
[[ $(id -u) == 0 ]] || die "needs root (the guest image, tgtd's control socket)"

OUT=${OUT:-$(mktemp -d /tmp/scsitgt-vm-compare.XXXXXX)}
STAGE=$OUT/stage
mkdir -p "$STAGE/guest" "$STAGE/out" "$OUT/counts"
SHMFILE=/dev/shm/scsitgt-vm-compare-tgtd-$PORT_TGTD.img
OURS_PID=
TGTD_PID=
VM_PID=
PERF_PID=

# port_busy, tgtd_start/target/open/stop, median
source "$SRC/bench/tgtd-lib.sh"

# --- ours: minitarget prints one URL per LUN once it listens ---
start_ours() {
	local extra=()
	[[ -n $WORKERS ]] && extra=(--workers "$WORKERS")
	port_busy "$PORT_OURS" && die "port $PORT_OURS is in use"
	"$MINITARGET" --portal "127.0.0.1:$PORT_OURS" --lun 0:null:1T --lun "1:ram:$SIZE" \
		"${extra[@]}" >"$OUT/ours.urls" 2>"$OUT/ours.log" &
	OURS_PID=$!
	for _ in $(seq 100); do
		[[ $(grep -c '^iscsi://' "$OUT/ours.urls") == 2 ]] && break
		kill -0 "$OURS_PID" 2>/dev/null || die "minitarget exited: $(tail -3 "$OUT/ours.log")"
		sleep 0.1
	done
	URL_OURS_RAM=$(grep '/1$' "$OUT/ours.urls")
	[[ -n $URL_OURS_RAM ]] || die "minitarget did not print its URLs"
	IQN_OURS=$(sed -n 's,^iscsi://[^/]*/\([^/]*\)/0$,\1,p' "$OUT/ours.urls")
}

start_tgtd() {
	tgtd_start "$OUT/tgtd.log"
	tgtd_target "$IQN_TGTD" "$SHMFILE" "$BYTES"
	tgtd_open
}

stop_pid() { # PID: SIGTERM, then SIGKILL after 5 s
	[[ -n $1 ]] || return 0
	kill -TERM "$1" 2>/dev/null
	for _ in $(seq 50); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}

cleanup() {
	[[ -n $PERF_PID ]] && stop_pid "$PERF_PID"
	stop_pid "$VM_PID"
	stop_pid "$OURS_PID"
	tgtd_stop "$SHMFILE"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

side_pid() { if [[ $1 == ours ]]; then echo "$OURS_PID"; else echo "$TGTD_PID"; fi; }
side_port() { if [[ $1 == ours ]]; then echo "$PORT_OURS"; else echo "$PORT_TGTD"; fi; }

# cpu_ns PID: the process's CPU time in ns, summed over its threads (schedstat's run time).
cpu_ns() {
	local f s=0 ns
	for f in /proc/"$1"/task/*/schedstat; do
		read -r ns _ <"$f" 2>/dev/null && s=$((s + ns))
	done
	echo "$s"
}
# cpu_ticks PID: utime + stime of the whole process, in clock ticks.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# tcp_counts PORT: "segs_in segs_out data_segs_in data_segs_out bytes_received bytes_sent" of
# the established connections on the target's port (ss -ti: the kernel's tcp_info).
tcp_counts() {
	ss -Htin state established "( sport = :$1 )" | tr ' ' '\n' | awk -F: '
		$1 == "segs_in" { a += $2 } $1 == "segs_out" { b += $2 }
		$1 == "data_segs_in" { c += $2 } $1 == "data_segs_out" { d += $2 }
		$1 == "bytes_received" { e += $2 } $1 == "bytes_sent" { f += $2 }
		END { print a + 0, b + 0, c + 0, d + 0, e + 0, f + 0 }'
}

# The system calls counted: all of them (raw_syscalls) and those a target's I/O path makes.
SYSCALLS="epoll_wait epoll_pwait epoll_ctl read readv recvfrom recvmsg write writev sendto
	sendmsg sendfile64 pread64 pwrite64 preadv pwritev io_submit io_getevents io_uring_enter
	futex poll ppoll nanosleep clock_nanosleep sched_yield ioctl fcntl getsockopt setsockopt
	timerfd_settime"
perf_events() {
	local ev="task-clock,context-switches,raw_syscalls:sys_enter" s
	for s in $SYSCALLS; do
		[[ -d /sys/kernel/tracing/events/syscalls/sys_enter_$s ]] && ev+=",syscalls:sys_enter_$s"
	done
	echo "$ev"
}

# perf_start stat|record PID FILE ARGS...: perf attached to PID with its events disabled, then
# enabled through its control FIFO; returns once perf acknowledged (bounded at 60 s).
perf_start() {
	local kind=$1 pid=$2 file=$3
	shift 3
	rm -f "$OUT/perf.ctl" "$OUT/perf.ack"
	mkfifo "$OUT/perf.ctl" "$OUT/perf.ack"
	perf "$kind" -D -1 --control "fifo:$OUT/perf.ctl,$OUT/perf.ack" -p "$pid" -o "$file" "$@" \
		>>"$OUT/perf.log" 2>&1 &
	PERF_PID=$!
	exec {PERF_CTL}<>"$OUT/perf.ctl" {PERF_ACK}<>"$OUT/perf.ack"
	echo enable >&"$PERF_CTL"
	read -r -t 60 -u "$PERF_ACK" _ || say "perf did not acknowledge 'enable' (see $OUT/perf.log)"
}
perf_stop() {
	echo disable >&"$PERF_CTL"
	read -r -t 60 -u "$PERF_ACK" _ || say "perf did not acknowledge 'disable'"
	kill -INT "$PERF_PID" 2>/dev/null
	for _ in $(seq 300); do kill -0 "$PERF_PID" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$PERF_PID" 2>/dev/null
	wait "$PERF_PID" 2>/dev/null
	PERF_PID=
	exec {PERF_CTL}>&- {PERF_ACK}>&-
}

# handle LINE: one request of the guest (vm-compare-guest.sh).
handle() {
	local what side type t run ios pid now dns dtk dt tc
	read -r what side type t run ios <<<"$1"
	pid=$(side_pid "$side")
	case $what in
	begin | cbegin | pbegin)
		case $what in
		cbegin)
			B_TCP=$(tcp_counts "$(side_port "$side")")
			perf_start stat "$pid" "$OUT/counts/$side-$type-$t.perf" -x, -e "$(perf_events)"
			;;
		pbegin) perf_start record "$pid" "$OUT/perf-$side-$type-$t.data" -g -F 20000 ;;
		esac
		B_NS=$(cpu_ns "$pid")
		B_TK=$(cpu_ticks "$pid")
		B_T=$EPOCHREALTIME
		;;
	end | cend | pend)
		now=$EPOCHREALTIME
		dns=$(($(cpu_ns "$pid") - B_NS))
		dtk=$(($(cpu_ticks "$pid") - B_TK))
		dt=$(awk -v a="$B_T" -v b="$now" 'BEGIN { printf "%.2f", b - a }')
		case $what in
		end)
			echo "$side $type $t $run $ios $dns $dtk $dt $(cut -d' ' -f1 /proc/loadavg)" \
				>>"$OUT/results.txt"
			say "$(printf '%-4s %-4s %-14s run %d: %7d IOs %8.0f IOPS  %6.1f us/IO (ticks: %.1f)  load %s' \
				"$side" "$type" "$t" "$run" "$ios" "$(awk -v n="$ios" -v s="$SECS" 'BEGIN { print n / s }')" \
				"$(awk -v c="$dns" -v n="$ios" 'BEGIN { print n ? c / 1000 / n : 0 }')" \
				"$(awk -v c="$dtk" -v n="$ios" -v h="$(getconf CLK_TCK)" 'BEGIN { print n ? c * 1e6 / h / n : 0 }')" \
				"$(cut -d' ' -f1 /proc/loadavg)")"
			;;
		cend)
			perf_stop
			tc=$(tcp_counts "$(side_port "$side")")
			echo "$side $type $t $ios $dns $B_TCP $tc" >>"$OUT/counts.txt"
			say "counted $side $type $t: $ios IOs"
			;;
		pend)
			perf_stop
			say "profiled $side $type $t: $ios IOs, $OUT/perf-$side-$type-$t.data"
			;;
		esac
		;;
	esac
}

# ============================================================================================
T0=$(date +%s)
UPTIME0=$(uptime)
say "results in $OUT; $UPTIME0"
# What the report needs (--report reads it back).
RUN_DATE=$(date -u '+%Y-%m-%d %H:%M UTC')
declare -p RUNS SECS SIZE WORKERS LUNS TESTS UPTIME0 RUN_DATE >"$OUT/params"
start_ours
start_tgtd
say "minitarget pid $OURS_PID on $PORT_OURS ($IQN_OURS), tgtd pid $TGTD_PID on $PORT_TGTD"
if [[ " $LUNS " == *" ram "* ]]; then
	for url in "$URL_OURS_RAM" "iscsi://127.0.0.1:$PORT_TGTD/$IQN_TGTD/1"; do
		say "writing the RAM LUN $url once in full"
		"$BENCH" --url "$url" --fill --bs 1m --qd 8 --size "$SIZE" >>"$OUT/fill.log" 2>&1 ||
			die "the fill of $url failed (see $OUT/fill.log)"
	done
fi

cp "$SRC"/tests/vm/guest/*.sh "$STAGE/guest/"
cat >"$STAGE/plan" <<EOF
PORTS="$PORT_OURS $PORT_TGTD"
IQNS="$IQN_OURS $IQN_TGTD"
LUNS_ours="null:0 ram:1"
LUNS_tgtd="null:2 ram:1"
TYPES="$LUNS"
TESTS="$TESTS"
RUNS=$RUNS
SECS=$SECS
COUNT=$COUNT
PROFILE=$PROFILE
EOF
nruns=$(($(wc -w <<<"$LUNS") * $(wc -w <<<"$TESTS") * (2 * RUNS + 2 * COUNT) + PROFILE))
# The guest's bound: boot and logins, then each run with fio's start-up under TCG.
VM_TIMEOUT=$((400 + nruns * (SECS + 30)))
say "$nruns fio runs of $SECS s; the guest is bounded at $VM_TIMEOUT s"
VM_NET=hostloop VM_SHARE=$STAGE VM_TIMEOUT=$VM_TIMEOUT \
	"$SRC/tests/vm/run-guest.sh" "$SRC/tests/vm/guest/vm-compare-guest.sh" /host/plan \
	>"$OUT/guest.log" 2>&1 &
VM_PID=$!

# Serve the guest's requests until it says "done" or the VM ends.
n=1
while :; do
	if [[ -e $STAGE/out/q.$n ]]; then
		line=$(cat "$STAGE/out/q.$n")
		handle "$line"
		touch "$STAGE/out/a.$n"
		n=$((n + 1))
		[[ $line == "done" ]] && break
		continue
	fi
	kill -0 "$VM_PID" 2>/dev/null || break
	sleep 0.05
done
st=0
wait "$VM_PID" || st=$?
VM_PID=
cp "$STAGE/out/negotiated.txt" "$OUT/" 2>/dev/null
stop_pid "$OURS_PID"
OURS_PID=
tgtd_stop "$SHMFILE"
UPTIME1=$(uptime)
ELAPSED=$(($(date +%s) - T0))
declare -p UPTIME1 ELAPSED >>"$OUT/params"
[[ $st == 0 ]] || { tail -n 30 "$OUT/guest.log" >&2; die "the guest failed ($st): $OUT/guest.log"; }

if [[ $PROFILE == 1 ]]; then
	for f in "$OUT"/perf-*.data; do
		perf report -i "$f" --no-children --sort dso --stdio -g none 2>/dev/null | grep -v '^#' |
			grep -v '^$' | head -n 15 >"${f%.data}.dso.txt"
		perf report -i "$f" --no-children --sort dso,sym --stdio -g none 2>/dev/null | grep -v '^#' |
			grep -v '^$' | grep '%' | head -n 60 >"${f%.data}.sym.txt"
	done
fi

report
