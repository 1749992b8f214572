#!/bin/bash
# vm-compare-guest.sh PLAN - in the guest of bench/vm-compare.sh: the Linux kernel's iSCSI/TCP
# initiator (iscsi_tcp, open-iscsi) and fio against two targets on the host, reached at
# 10.0.2.2 through QEMU's user network (VM_NET=hostloop): ours and tgtd, both logged in for
# the whole run. Not a test: the host measures each target's CPU while fio runs here.
#
# PLAN is one file of KEY=VALUE lines written by the host (bench/vm-compare.sh):
#   PORTS="OURS TGTD"  IQNS="OURS TGTD"  LUNS_ours="null:0 ram:1"  LUNS_tgtd="null:2 ram:1"
#   TYPES="null ram"  TESTS="randread-qd32 ..."  RUNS=N  SECS=S  COUNT=0|1  PROFILE=0|1
#
# Each measured run is bracketed by two requests to the host, so that the host reads the
# target's CPU time right before fio starts and right after it ends: the guest writes
# /host/out/q.N (one line: "begin|end|cbegin|cend|pbegin|pend SIDE TYPE TEST RUN [IOS]") and
# waits for /host/out/a.N. IOS is what the block device completed in the run (its stat
# file's reads or writes completed, before and after), i.e. what the target served. "done"
# ends the run. Every wait is bounded.
. /host/guest/iscsid-start.sh
. /host/guest/net-hostloop.sh
set -Eeuo pipefail
PLAN=$1
# shellcheck disable=SC1090 # the plan the host wrote
. "$PLAN"
OUT=/host/out
T0=$(date +%s.%N)
ts() { awk -v s="$T0" -v e="$(date +%s.%N)" 'BEGIN {printf "[%7.2fs]", e - s}'; }
step() { echo "$(ts) == $*"; }
trap 'echo "--- vm-compare-guest.sh FAILED at line $LINENO"; dmesg | tail -n 30' ERR

# ask LINE: one request to the host, answered by a.N (bounded at 300 s: the host reads a
# few /proc files, or starts perf).
N=0
ask() {
	local i
	N=$((N + 1))
	echo "$*" > "$OUT/q.$N.tmp"
	mv "$OUT/q.$N.tmp" "$OUT/q.$N"
	for ((i = 0; i < 3000; i++)); do
		[ -e "$OUT/a.$N" ] && return 0
		sleep 0.1
	done
	echo "the host did not answer request $N ($*)"
	return 1
}

step "modules, network, iscsid"
modprobe iscsi_tcp
modprobe sd_mod
net_hostloop
iscsid_start

# shellcheck disable=SC2034 # read through ${!port} and ${!iqn}
read -r PORT_ours PORT_tgtd <<< "$PORTS"
# shellcheck disable=SC2034
read -r IQN_ours IQN_tgtd <<< "$IQNS"
for side in ours tgtd; do
	port=PORT_$side
	iqn=IQN_$side
	step "login to ${!iqn} at 10.0.2.2:${!port}"
	# SendTargets would answer with the host's own 127.0.0.1: the node record is made by hand.
	iscsiadm -m node -o new -T "${!iqn}" -p "10.0.2.2:${!port},1" > /dev/null
	iscsiadm -m node -T "${!iqn}" -p "10.0.2.2:${!port}" --login > /dev/null
done

# disk_of PORT LUN: the SCSI disk of the session through PORT with that LUN number.
disk_of() {
	local s c b
	for s in /sys/class/iscsi_session/session*; do
		c=$(echo "$s"/device/connection*/iscsi_connection/connection*)
		[ "$(cat "$c/persistent_port" 2> /dev/null)" = "$1" ] || continue
		for b in "$s"/device/target*/*:*:*:"$2"/block/*; do
			[ -e "$b" ] && basename "$b" && return 0
		done
	done
	return 1
}

for side in ours tgtd; do
	port=PORT_$side
	luns=LUNS_$side
	for tl in ${!luns}; do
		d=
		for ((i = 0; i < 1800; i++)); do
			d=$(disk_of "${!port}" "${tl#*:}") && [ -b "/dev/$d" ] && break
			d=
			sleep 0.1
		done
		[ -n "$d" ] || { echo "no disk for $side LUN ${tl#*:} after 180 s"; false; }
		# No I/O scheduler: fio's 4 KiB random requests go to the initiator as they come.
		echo none > "/sys/block/$d/queue/scheduler" 2> /dev/null || true
		printf -v "DEV_${side}_${tl%:*}" '%s' "$d"
		echo "$side ${tl%:*} (LUN ${tl#*:}): /dev/$d, $(($(cat "/sys/block/$d/size") / 2048)) MiB"
	done
done
{
	echo "# iscsiadm -m session -P 2 (negotiated parameters), guest kernel $(uname -r)"
	iscsiadm -m session -P 2 | grep -E 'Target:|Current Portal|HeaderDigest|DataDigest|MaxRecv|MaxXmit|Burst|ImmediateData|InitialR2T|MaxOutstandingR2T'
	for d in /sys/block/sd*; do
		echo "$(basename "$d"): queue_depth $(cat "$d/device/queue_depth"), nr_requests $(cat "$d/queue/nr_requests"), max_sectors_kb $(cat "$d/queue/max_sectors_kb")"
	done
} > "$OUT/negotiated.txt" 2>&1

# done_ios DEV RW: requests the disk completed in that direction (block/stat fields 1 and 5).
done_ios() {
	if [ "$2" = randread ]; then
		awk '{print $1}' "/sys/block/$1/stat"
	else
		awk '{print $5}' "/sys/block/$1/stat"
	fi
}

# measure KIND SIDE TYPE TEST RUN: one fio run between a begin and an end request.
measure() {
	local kind=$1 side=$2 type=$3 t=$4 run=$5 dev rw qd before after
	dev=DEV_${side}_$type
	dev=${!dev}
	rw=${t%-qd*}
	qd=${t##*-qd}
	before=$(done_ios "$dev" "$rw")
	ask "${kind}begin $side $type $t $run"
	fio --name=vmc --filename="/dev/$dev" --direct=1 --ioengine=libaio --rw="$rw" --bs=4k \
		--iodepth="$qd" --runtime="$SECS" --time_based --norandommap --randrepeat=0 \
		--output-format=terse > "$OUT/fio.last" 2>&1 || { cat "$OUT/fio.last"; false; }
	after=$(done_ios "$dev" "$rw")
	ask "${kind}end $side $type $t $run $((after - before))"
	echo "$(ts) ${kind:-run} $side $type $t #$run: $((after - before)) IOs in $SECS s," \
		"$(((after - before) / SECS)) IOPS"
}

# The measured runs: for each LUN type and test, RUNS rounds, each round both targets, the
# order swapped every round (a slow drift of the machine's load hits both alike).
for type in $TYPES; do
	for t in $TESTS; do
		for ((run = 1; run <= RUNS; run++)); do
			order="ours tgtd"
			[ $((run % 2)) = 0 ] && order="tgtd ours"
			for side in $order; do
				measure "" "$side" "$type" "$t" "$run"
			done
		done
	done
done
# One counted run per side, LUN type and test (system calls and segments on the host: perf
# adds its own cost, so these runs are kept out of the CPU figures).
if [ "$COUNT" = 1 ]; then
	for type in $TYPES; do
		for t in $TESTS; do
			for side in ours tgtd; do
				measure c "$side" "$type" "$t" 0
			done
		done
	done
fi
# One profiled run of ours (perf record on the host).
if [ "$PROFILE" = 1 ]; then
	for t in $TESTS; do
		measure p ours "${TYPES%% *}" "$t" 0
		break
	done
fi
ask "done"
for side in ours tgtd; do
	port=PORT_$side
	iqn=IQN_$side
	iscsiadm -m node -T "${!iqn}" -p "10.0.2.2:${!port}" --logout > /dev/null
done
step "logged out"
if dmesg | grep -Ei 'Sense Key|I/O error|conn error|detected conn' > "$OUT/dmesg-errors.txt"; then
	echo "the kernel logged errors:"
	cat "$OUT/dmesg-errors.txt"
	exit 1
fi
exit 0
