#!/bin/bash
# Runs INSIDE the vm suite's guest (via vm-test.sh / run-guest.sh); the meson test vm/iscsi_tcp
# and kernel-iscsi.sh start it.
#
#   guest-kernel-iscsi.sh PORTAL MINITARGET-ARGS...
#
# /host is the staging dir prepared by kernel-iscsi.sh:
#   /host/examples/minitarget, /host/libscsitgt.so.0 (minitarget's RUNPATH is $ORIGIN/..),
#   /host/guest/iscsi-tcp-ext4.sh, /host/out/ (logs written here).
# Starts minitarget -v on PORTAL, runs guest/iscsi-tcp-ext4.sh against it (kernel
# iscsi_tcp initiator: discovery, login, mkfs.ext4, write/fsck/verify, fio, logout), then
# stops the target with SIGTERM and checks the kernel log. Exit 0 only if everything passed.
# Environment: DIGEST=1 makes the initiator ask for CRC32C header and data digests (and checks
# they were negotiated); EXPECT_DISCARD=1 requires the kernel to discard (thin LUN).
set -uo pipefail
PORTAL=$1
shift
OUT=/host/out
mkdir -p "$OUT"
fail=0

if [ "${DIGEST:-0}" = 1 ]; then
	# Node records created by discovery take these defaults (open-iscsi iscsid.conf).
	printf '%s\n' 'node.conn[0].iscsi.HeaderDigest = CRC32C' \
		'node.conn[0].iscsi.DataDigest = CRC32C' >> /etc/iscsi/iscsid.conf
fi

echo "== ldd minitarget"
ldd /host/examples/minitarget || exit 1

echo "== starting: minitarget -v --portal $PORTAL $*"
/host/examples/minitarget -v --portal "$PORTAL" "$@" > "$OUT/target.log" 2>&1 &
TPID=$!
h=${PORTAL%:*}
p=${PORTAL##*:}
# (bounded at 60 s: the guest runs under TCG on a host that may be loaded)
for i in $(seq 600); do
	(exec 3<>"/dev/tcp/$h/$p") 2>/dev/null && break
	kill -0 "$TPID" 2>/dev/null || break
	sleep 0.1
done
if ! kill -0 "$TPID" 2>/dev/null; then
	echo "target exited early:"
	cat "$OUT/target.log"
	exit 1
fi

# Snapshot what the kernel made of the disk while it exists (iscsi-tcp-ext4.sh logs out at the end).
(
	for i in $(seq 600); do
		for b in /sys/class/iscsi_session/session*/device/target*/*:*:*:*/block/*; do
			[ -e "$b" ] || continue
			d=$(basename "$b")
			sd=$(dirname "$(dirname "$b")")
			sleep 1
			{
				echo "device /dev/$d ($(basename "$sd"))"
				for f in logical_block_size physical_block_size minimum_io_size \
					optimal_io_size max_sectors_kb max_hw_sectors_kb \
					discard_granularity discard_max_bytes discard_max_hw_bytes \
					write_zeroes_max_bytes write_cache rotational; do
					printf '  queue/%-22s %s\n' "$f" "$(cat "/sys/block/$d/queue/$f" 2>/dev/null)"
				done
				for f in "$sd"/scsi_disk/*/provisioning_mode "$sd"/scsi_disk/*/cache_type \
					"$sd"/scsi_disk/*/FUA "$sd"/scsi_disk/*/thin_provisioning \
					"$sd"/scsi_disk/*/max_write_same_blocks "$sd"/scsi_disk/*/protection_type; do
					[ -e "$f" ] && printf '  scsi_disk/%-18s %s\n' "$(basename "$f")" "$(cat "$f")"
				done
				for pg in bl lbpv; do
					echo "  -- sg_vpd -p $pg"
					sg_vpd -p "$pg" "/dev/$d" 2>&1 | sed 's/^/    /'
				done
				echo "  -- sg_readcap -l"
				sg_readcap -l "/dev/$d" 2>&1 | sed 's/^/    /'
				echo "  -- negotiated (iscsiadm -m session -P 2)"
				iscsiadm -m session -P 2 2>&1 | grep -E 'Digest|MaxRecv|MaxXmit|Burst|ImmediateData|InitialR2T|MaxOutstandingR2T' | sed 's/^[[:space:]]*/    /'
			} > "$OUT/disk.txt" 2>&1
			# Keep the last block-layer counters until the disk goes away (logout).
			while cp "/sys/block/$d/stat" "$OUT/stat.tmp" 2>/dev/null; do
				mv "$OUT/stat.tmp" "$OUT/stat.last"
				sleep 0.5
			done
			exit 0
		done
		sleep 0.1
	done
) &
WPID=$!

bash /host/guest/iscsi-tcp-ext4.sh "$PORTAL"
rc=$?
[ $rc = 0 ] || { echo "== iscsi-tcp-ext4.sh FAILED (exit $rc)"; fail=1; }
kill "$WPID" 2>/dev/null
wait "$WPID" 2>/dev/null

echo "== stopping target (SIGTERM)"
kill -TERM "$TPID"
trc=timeout
for i in $(seq 600); do
	if ! kill -0 "$TPID" 2>/dev/null; then
		wait "$TPID"
		trc=$?
		break
	fi
	sleep 0.1
done
echo "target exit status: $trc"
if [ "$trc" != 0 ]; then
	fail=1
	kill -KILL "$TPID" 2>/dev/null
fi

dmesg > "$OUT/dmesg.log"
echo "== disk as seen by the kernel"
cat "$OUT/disk.txt" 2>/dev/null || echo "(no snapshot)"
# /sys/block/<dev>/stat: Documentation/block/stat.rst (fields 12-13: discards, discarded sectors).
read -r rd _ rsec _ wr _ wsec _ _ _ _ dc _ dsec _ fl _ < "$OUT/stat.last" 2>/dev/null
echo "block stats before logout: reads $rd ($rsec sectors), writes $wr ($wsec sectors)," \
	"discards ${dc:-?} (${dsec:-?} sectors), flushes ${fl:-?}"
if [ "${EXPECT_DISCARD:-0}" = 1 ]; then
	mode=$(sed -n 's/.*provisioning_mode *//p' "$OUT/disk.txt" 2>/dev/null)
	if [ "$mode" != unmap ] && [ "$mode" != writesame_16 ] && [ "$mode" != writesame_10 ]; then
		echo "thin LUN but the kernel chose provisioning_mode '$mode' (no discard)"
		fail=1
	elif [ "${dc:-0}" -eq 0 ]; then
		echo "thin LUN but no discard completed"
		fail=1
	fi
fi
if [ "${DIGEST:-0}" = 1 ]; then
	for k in HeaderDigest DataDigest; do
		grep -q "$k: CRC32C" "$OUT/disk.txt" || { echo "$k CRC32C not negotiated"; fail=1; }
	done
fi
echo "== dmesg (scsi/sd/iscsi)"
grep -E 'scsi|sd [0-9]|\[sd[a-z]+\]|iscsi|connection[0-9]|session[0-9]|blk_update|I/O error|EXT4-fs \(sd' \
	"$OUT/dmesg.log"
bad=$(grep -E 'Unhandled|[Ss]ense [Kk]ey|I/O error|critical|detected conn error|blk_update_request|Buffer I/O|EXT4-fs error|timing out command|abort' \
	"$OUT/dmesg.log")
if [ -n "$bad" ]; then
	echo "== kernel reported errors:"
	echo "$bad"
	fail=1
fi
echo "== target log: warnings/errors"
grep -E 'error|warning' "$OUT/target.log" || echo "(none)"
echo "guest verdict: $([ $fail = 0 ] && echo PASS || echo FAIL)"
exit $fail
