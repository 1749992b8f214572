#!/bin/bash
# perf.sh - in the vm suite's guest: fio against the kernel initiators over
#   (1) our iSER (minitarget --iser-portal, ib_iser over soft-RoCE),
#   (2) our iSCSI/TCP (the same minitarget process, iscsi_tcp over loopback),
#   (3) tgtd's iSER (Debian tgt, same rxe device, same kind of LUN: a file on tmpfs),
# one after the other in one boot. Not a test: run it by hand (tests/vm/perf.sh) and read the
# table; figures under TCG emulation say little about hardware.
#   perf.sh MINITARGET [SECONDS]
# Environment: LUN_SIZE (default 512M), TARGETS (default "tgtd-iser iser tcp"; "other-iser" runs
# the iSER test with /host/other/examples/minitarget, see vm-test.sh VM_OTHER_BUILD).
# iscsid_start (tests/vm/guest/iscsid-start.sh)
. /host/guest/iscsid-start.sh
# step, iscsi_disk (tests/vm/guest/steps.sh)
. /host/guest/steps.sh
set -Eeuo pipefail
BIN=$1
SECS=${2:-8}
LUN_SIZE=${LUN_SIZE:-512M}
TARGETS=${TARGETS:-tgtd-iser iser tcp}
TARGETS=${TARGETS//,/ }
RXE_IP=192.0.2.1 # RFC 5737 TEST-NET-1, only on the guest's dummy device
OUT=/host/out
[ -d $OUT ] || OUT=/ctl
trap 'echo "--- perf.sh FAILED at line $LINENO"; dmesg | tail -n 20; tail -n 20 $OUT/target-*.log $OUT/tgtd.log 2> /dev/null' ERR

step "soft-RoCE rxe0 on rxenet0 ($RXE_IP)"
modprobe rdma_rxe
modprobe ib_uverbs
modprobe rdma_ucm
modprobe ib_umad
ip link add rxenet0 type dummy
ip addr add $RXE_IP/24 dev rxenet0
ip link set rxenet0 up
rdma link add rxe0 type rxe netdev rxenet0
for i in $(seq 50); do
	[ -e /sys/class/infiniband/rxe0/ports/1/gids/1 ] && break
	sleep 0.1
done
# tgtd's iSER allocates a 1 GiB buffer pool of huge pages (SysV shm, SHM_HUGETLB); without them
# it falls back to valloc(), its QP creation then fails (EINVAL, rxe on Linux 6.1) and tgtd
# crashes in librdmacm. Hence a 3 GiB guest, huge pages reserved first, and tgtd run first.
case " $TARGETS " in
*" tgtd-iser "*)
	echo 520 > /proc/sys/vm/nr_hugepages
	grep HugePages_Total /proc/meminfo
	;;
esac
modprobe ib_iser
modprobe iscsi_tcp
modprobe sd_mod
iscsid_start

# fio JOB RW BS QD -> "IOPS MiB/s" of the direction that ran
fio_one() {
	local rw=$2 bs=$3 qd=$4
	fio --name="$1" --filename="$DEV" --direct=1 --rw="$rw" --bs="$bs" --iodepth="$qd" \
		--ioengine=libaio --runtime="$SECS" --time_based --size=256M --group_reporting \
		--output-format=terse --terse-version=3 2> /dev/null |
		awk -F';' -v rw="$rw" '{
			if (rw ~ /read/) { iops = $8; bw = $7 } else { iops = $49; bw = $48 }
			printf "%d %.1f\n", iops, bw / 1024
		}'
}

RESULTS=()
bench() {
	local name=$1 r
	step "$name: fio ($SECS s each) on $DEV"
	r=$(fio_one rr randread 4k 32)
	RESULTS+=("$(printf '%-10s randread  4k QD32 %8s IOPS %8s MiB/s' "$name" $r)")
	r=$(fio_one rw randwrite 4k 32)
	RESULTS+=("$(printf '%-10s randwrite 4k QD32 %8s IOPS %8s MiB/s' "$name" $r)")
	r=$(fio_one sr read 1M 4)
	RESULTS+=("$(printf '%-10s read      1M QD4  %8s IOPS %8s MiB/s' "$name" $r)")
	r=$(fio_one sw write 1M 4)
	RESULTS+=("$(printf '%-10s write     1M QD4  %8s IOPS %8s MiB/s' "$name" $r)")
	printf '  %s\n' "${RESULTS[@]: -4}"
}

run_ours() {
	local kind=$1 bin=${2:-$BIN} label=${3:-ours-$1} portal iface=()
	truncate -s "$LUN_SIZE" /tmp/lun0.img
	"$bin" --iser-portal $RXE_IP:3260 --portal 127.0.0.1:3261 --lun 0:file:/tmp/lun0.img \
		> $OUT/target-$kind.log 2>&1 &
	TPID=$!
	for i in $(seq 150); do
		grep -q "iscsi://" $OUT/target-$kind.log && break
		sleep 0.1
	done
	if [ "$kind" = iser ]; then
		portal=$RXE_IP:3260
		iface=(-I iser)
	else
		portal=127.0.0.1:3261
	fi
	iscsiadm -m discovery -t sendtargets -p $portal "${iface[@]}" > /dev/null
	IQN=iqn.2026-11.org.libscsitgt:minitarget
	iscsiadm -m node -T $IQN -p $portal "${iface[@]}" --login > /dev/null
	iscsi_disk
	bench "$label"
	iscsiadm -m node -T $IQN -p $portal "${iface[@]}" --logout > /dev/null
	iscsiadm -m node -o delete > /dev/null 2>&1
	kill -TERM $TPID
	wait $TPID
	rm -f /tmp/lun0.img
}

run_tgtd() {
	local iqn=iqn.2024-01.org.libscsitgt.vm:tgtd iname
	truncate -s "$LUN_SIZE" /tmp/lun1.img
	# tgtd's iSER driver listens on port 3260 of every RDMA device.
	tgtd -f --iscsi portal=127.0.0.1:3262 > $OUT/tgtd.log 2>&1 &
	TPID=$!
	for i in $(seq 50); do
		tgtadm --lld iser --mode target --op show > /dev/null 2>&1 && break
		sleep 0.1
	done
	tgtadm --lld iser --op new --mode target --tid 1 -T $iqn
	tgtadm --lld iser --op new --mode logicalunit --tid 1 --lun 1 -b /tmp/lun1.img
	tgtadm --lld iser --op bind --mode target --tid 1 -I ALL
	# tgt 1.0.85 refuses iSER logins unless an initiator-name ACL matches too.
	iname=$(sed -n 's/^InitiatorName=//p' /etc/iscsi/initiatorname.iscsi)
	tgtadm --lld iser --op bind --mode target --tid 1 --initiator-name "$iname"
	iscsiadm -m discovery -t sendtargets -p $RXE_IP:3260 -I iser > /dev/null ||
		iscsiadm -m node -o new -T $iqn -p $RXE_IP:3260 -I iser > /dev/null
	iscsiadm -m node -T $iqn -p $RXE_IP:3260 -I iser --login > /dev/null
	iscsi_disk
	bench tgtd-iser
	iscsiadm -m node -T $iqn -p $RXE_IP:3260 -I iser --logout > /dev/null
	tgtadm --op delete --mode system > /dev/null 2>&1 || kill -KILL $TPID
	wait $TPID 2> /dev/null || true
	echo 0 > /proc/sys/vm/nr_hugepages
	rm -f /tmp/lun1.img
}

for t in $TARGETS; do
	case $t in
	iser) run_ours iser ;;
	other-iser) run_ours iser /host/other/examples/minitarget other-iser ;;
	tcp) run_ours tcp ;;
	tgtd-iser) run_tgtd ;;
	esac
done
step "results (fio, direct I/O on the raw disk, $SECS s each, $(nproc) vCPUs)"
printf '%s\n' "${RESULTS[@]}" | tee $OUT/perf.txt
