#!/bin/bash
# srp-read.sh - in the vm suite's guest (tests/vm/srp-read.sh): 1 MiB reads over SRP against
# the same over iSER under soft-RoCE. One minitarget exports one RAM LUN over SRP and iSER;
# ib_iser stays logged in while ib_srp logs in once per entry of SRP_LOGINS (add_target
# options beyond the usual ones, entries separated by spaces or '/'; "-" for none), and each
# login runs ROUNDS pairs of fio 1 MiB sequential reads at QD 4 (io_size IO), SRP then iSER.
# Per run: MiB/s, the reads the disk sent and their mean size, the longest latency, the
# target's user and system CPU time per MiB, what grew in rxe0's counters (both ends of every
# connection are on rxe0) and the longest the guest did not run (a 50 ms wait that ended late:
# the host did not run the vCPUs). Not a test: figures under TCG only compare within one run
# (docs/srp.md "Measured").
#   srp-read.sh MINITARGET [ARGS...]
# Environment: SRP_LOGINS (default "- sg_tablesize=128"), ROUNDS (default 2), IO (default 32M).
. /host/guest/rxe.sh
. /host/guest/iscsid-start.sh
set -Eeuo pipefail
BIN=$1
shift
RXE_IP=192.0.2.1 # RFC 5737 TEST-NET-1, only on the guest's dummy device
G=0x0002c90300abcdef
IQN=iqn.2026-11.org.libscsitgt:minitarget
IO=${IO:-32M}
OUT=/host/out
[ -d $OUT ] || OUT=/ctl
trap 'echo "--- srp-read.sh FAILED at line $LINENO"; cp /tmp/target.log $OUT/ 2>/dev/null; dmesg | tail -n 20' ERR
CNT=/sys/class/infiniband/rxe0/ports/1/hw_counters

rxe_up
echo "guest clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)," \
	"$(dmesg | grep -m1 -E 'tsc: (Detected|PIT calibration)' | sed 's/^\[[^]]*\] //')"
"$BIN" "$@" --srp-portal $RXE_IP:5555 --srp-guid $G --iser-portal $RXE_IP:3260 \
	--lun 0:ram:256M > /tmp/target.log 2>&1 &
TPID=$!
for _ in $(seq 300); do grep -q "srp://" /tmp/target.log && break; sleep 0.1; done
grep -q "srp://" /tmp/target.log
modprobe sd_mod
modprobe ib_srp
modprobe ib_iser
iscsid_start

# The disk of the SRP host (it has ch_count) or of the iSCSI session: srp or iscsi.
disk_of() {
	local b h
	for _ in $(seq 300); do
		if [ "$1" = iscsi ]; then
			for b in /sys/class/iscsi_session/session*/device/target*/*:*:*:*/block/*; do
				[ -b "/dev/$(basename "$b")" ] && basename "$b" && return 0
			done
		else
			for b in /sys/class/scsi_host/host*/device/target*/*:*:*:*/block/*; do
				h=${b#/sys/class/scsi_host/}
				h=${h%%/*}
				[ -e /sys/class/scsi_host/$h/ch_count ] && [ -b "/dev/$(basename "$b")" ] &&
					basename "$b" && return 0
			done
		fi
		sleep 0.1
	done
	return 1
}

timeout 60 iscsiadm -m discovery -t sendtargets -p $RXE_IP:3260 -I iser > /dev/null
timeout 60 iscsiadm -m node -T $IQN -p $RXE_IP:3260 -I iser --login > /dev/null
IDEV=$(disk_of iscsi)

snap() { (cd $CNT && grep -H . * | tr ':' ' ') > "/tmp/cnt.$1"; }
# The longest gap between two wake-ups of a 50 ms wait, in ms, kept in /tmp/stall: shell
# builtins only (a process start alone takes 0.2 s or more under TCG), reading a pipe that
# never has data.
stallmon() {
	local p n max=0
	exec 9<> <(:)
	p=${EPOCHREALTIME/./}
	while :; do
		read -r -t 0.05 -u 9 || true
		n=${EPOCHREALTIME/./}
		((n - p > max * 1000)) && max=$(((n - p) / 1000)) && echo $max > /tmp/stall
		p=$n
	done
}
run() {
	local what=$1 dev=$2 c0 c1 r0 r1 sp
	snap a
	c0=$(awk '{print $14, $15}' /proc/$TPID/stat)
	r0=$(awk '{print $1, $3}' /sys/block/$dev/stat)
	echo 0 > /tmp/stall
	stallmon &
	sp=$!
	fio --name=r --filename=/dev/$dev --direct=1 --rw=read --bs=1M --iodepth=4 --ioengine=libaio \
		--io_size=$IO --size=200M --output-format=terse --terse-version=3 > /tmp/fio.out
	kill $sp
	wait $sp 2> /dev/null || true
	r1=$(awk '{print $1, $3}' /sys/block/$dev/stat)
	c1=$(awk '{print $14, $15}' /proc/$TPID/stat)
	snap b
	awk -F';' -v w="$what" -v c="$c0 $c1" -v r="$r0 $r1" -v st="$(cat /tmp/stall)" '{
		split(r, v, " "); n = v[3] - v[1]; mib = $8 * $9 / 1000
		split(c, t, " "); u = (t[3] - t[1]) * 10; k = (t[4] - t[2]) * 10
		printf "%-4s %6.2f MiB/s, %4d reads of %4.0f KiB, latency max %5.0f ms,", w, $7 / 1024,
			n, (n ? (v[4] - v[2]) / 2 / n : 0), $39 / 1000
		printf " target CPU %3.0f + %3.0f ms/MiB (user + system), guest stall max %d ms\n",
			(mib ? u / mib : 0), (mib ? k / mib : 0), st }' /tmp/fio.out
	join /tmp/cnt.a /tmp/cnt.b | awk '$3 != $2 { printf " %s=+%d", $1, $3 - $2 }' |
		sed 's/^/       rxe0:/'
	echo
}

GID0=$(cat /sys/class/infiniband/rxe0/ports/1/gids/0)
GIDHEX=${GID0//:/}
LOGINS=${SRP_LOGINS:-- sg_tablesize=128}
for opt in ${LOGINS//\// }; do
	extra=
	[ "$opt" = - ] || extra=",$opt"
	login="id_ext=$G,ioc_guid=$G,dest=$RXE_IP:5555,initiator_ext=${GIDHEX:0:16},ch_count=2$extra"
	timeout 60 bash -c "echo '$login' > /sys/class/infiniband_srp/srp-rxe0-1/add_target"
	DEV=$(disk_of srp)
	echo "== ib_srp add_target ...,ch_count=2$extra: $DEV max_segments" \
		"$(cat /sys/block/$DEV/queue/max_segments); ib_iser: $IDEV max_segments" \
		"$(cat /sys/block/$IDEV/queue/max_segments); fio 1 MiB read QD 4, $IO each"
	for _ in $(seq "${ROUNDS:-2}"); do
		run SRP "$DEV"
		run iSER "$IDEV"
	done
	for p in /sys/class/srp_remote_ports/*; do echo 1 > "$p/delete"; done
	for _ in $(seq 100); do [ -z "$(ls /sys/class/srp_remote_ports/)" ] && break; sleep 0.1; done
done
grep -m1 "QP: " /tmp/target.log | sed 's/^.*QP: /target QP: /'
iscsiadm -m node -T $IQN -p $RXE_IP:3260 -I iser --logout > /dev/null
kill -TERM $TPID
wait $TPID
cp /tmp/target.log $OUT/
