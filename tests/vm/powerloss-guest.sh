#!/bin/bash
# Runs INSIDE the vm suite's guest (vm-test.sh / run-guest.sh); the meson test vm/powerloss.
#
#   powerloss-guest.sh ENGINES [MINITARGET-ARGS...]
#
# A power loss, not a SIGKILL: does a write the target acknowledged with FUA, or one written
# before a SYNCHRONIZE CACHE that completed, survive losing the device's volatile state?
# The file backend's LUN files sit on ext4 over dm-log-writes (a loop device on tmpfs as the
# "disk", another as its log). dm-log-writes logs a plain write only once a FLUSH issued after
# it completed, a FUA write once it completed: the log replayed up to a mark (log-replay) is
# what a disk with a volatile write cache is sure to hold if the power goes at that mark,
# while the kernel's page cache and the disk's unflushed writes are lost.
# One LUN per engine of ENGINES ("libaio io_uring") and mode (O_DIRECT, buffered), each its
# own file on the same file system. The kernel's iscsi_tcp initiator logs in; sg_raw and
# sg_sync (sg3-utils) send, LUN after LUN, and a mark follows each acknowledged step:
#   1. WRITE(10) FUA=1 of 4 KiB (pattern A) at LBA 8            -> mark fuaN
#   2. WRITE(10) of 4 KiB (pattern B) at LBA 64, SYNCHRONIZE CACHE(10)  -> mark syncN
#   3. WRITE(10) of 4 KiB (pattern C) at LBA 128 on every LUN, no sync -> mark end
#   4. WCE set to 0 (MODE SELECT), WRITE(10) of 4 KiB (pattern D) at LBA 192 -> mark wtN
# Steps 1-3 run with WCE 1 (sd's cache_type "write back"; a file LUN starts with WCE 0).
# The marks come one per step so that a later flush (another LUN's fsync commits the same
# journal) cannot make up for a missing one. After the log device is detached, the log is
# replayed into a fresh image per mark, the image is mounted (ext4 replays its journal) and
# the LUN file read: at fuaN, A must be there; at syncN, B; at wtN, D; at end every A and B, and no C
# (the control: data the target acknowledged without FUA or a flush is lost, so the checks
# above can fail). Prints the time of each step (guest clock).
# /host as vm-test.sh stages it: examples/minitarget, libscsitgt.so.0, log-replay, guest/*.sh.
# Exit 77 when the guest kernel has no dm-log-writes.
. /host/guest/iscsid-start.sh
# step (tests/vm/guest/steps.sh)
. /host/guest/steps.sh
set -Eeuo pipefail
ENGINES=$1
shift
OUT=/host/out
mkdir -p "$OUT"
trap 'echo "--- powerloss-guest.sh FAILED at line $LINENO"; save_logs; dmesg | tail -n 25' ERR

PORTAL=127.0.0.1:3260
W=/pl                      # tmpfs: the disk, its log, the replayed images
MNT=/mnt/pl                # the LUN files' file system (ext4 over dm-log-writes)
DISK_MB=64
LUN_MB=4

step "dm-log-writes over loop devices on tmpfs"
modprobe loop
if ! modprobe dm-log-writes 2> "$OUT/modprobe.log"; then
	echo "SKIP: the guest kernel has no dm-log-writes: $(cat "$OUT/modprobe.log")" >&2
	exit 77
fi
mkdir -p "$W" "$MNT" /mnt/replay
mount -t tmpfs -o size=512m tmpfs "$W"
truncate -s "${DISK_MB}M" "$W/disk.img"
truncate -s 256M "$W/log.img"
DISK=$(losetup --show -f "$W/disk.img")
LOGDEV=$(losetup --show -f "$W/log.img")
# The log's super block must be invalid before logging begins (the kernel writes it with the
# first FUA write or mark); a new sparse file is all zeros.
dmsetup create pl --table "0 $((DISK_MB * 2048)) log-writes $DISK $LOGDEV"
dmsetup mknodes pl # no udev in the guest
# No discards (log-replay ignores them), every table and the journal written now, 4 KiB
# blocks; commit=600: no timed journal commit (a flush) between a step and its mark.
mkfs.ext4 -q -b 4096 -E nodiscard,lazy_itable_init=0,lazy_journal_init=0 /dev/mapper/pl
mount -o commit=600,noatime /dev/mapper/pl "$MNT"

LUNS=()
ARGS=()
n=0
for e in $ENGINES; do
	for d in 1 0; do
		truncate -s "${LUN_MB}M" "$MNT/lun$n.img"
		ARGS+=(--lun "$n:file:$MNT/lun$n.img,io_engine=$e,direct=$d")
		LUNS+=("$n:$e,direct=$d")
		n=$((n + 1))
	done
done
sync

step "target: ${ARGS[*]} $*"
/host/examples/minitarget -v --portal "$PORTAL" "${ARGS[@]}" "$@" > /tmp/target.log 2>&1 &
# shellcheck disable=SC2034 # steps.sh: target_wait_for, target_stop
TPID=$!
target_wait_for 'listening'

step "iscsi_tcp login"
modprobe iscsi_tcp
modprobe sd_mod
iscsid_start
iscsiadm -m discovery -t sendtargets -p "$PORTAL" > /dev/null
IQN=$(iscsiadm -m node | awk -v p="$PORTAL" 'index($1, p) == 1 {print $2; exit}')
[ -n "$IQN" ] || { echo "no target discovered"; false; }
iscsiadm -m node -T "$IQN" -p "$PORTAL" --login > /dev/null
# DEVS[N]: the disk of LUN N (sysfs: .../target*/H:C:T:N/block/sdX).
declare -A DEVS HCTL
for _ in $(seq 600); do
	for b in /sys/class/iscsi_session/session*/device/target*/*:*:*:*/block/*; do
		[ -e "$b" ] || continue
		h=$(basename "$(dirname "$(dirname "$b")")")
		DEVS[${h##*:}]=/dev/$(basename "$b")
		HCTL[${h##*:}]=$h
	done
	[ "${#DEVS[@]}" -eq "$n" ] && break
	sleep 0.1
done
for l in "${!LUNS[@]}"; do
	[ -b "${DEVS[$l]:-}" ] || { echo "LUN $l: no disk"; false; }
	echo "LUN ${LUNS[$l]}: ${DEVS[$l]}"
done
# cache_type WBTW LUN: MODE SELECT of the caching page by sd (WCE 1: "write back", 0:
# "write through"), read back
cache_type() {
	echo "$1" > "/sys/class/scsi_disk/${HCTL[$2]}/cache_type"
	[ "$(cat "/sys/class/scsi_disk/${HCTL[$2]}/cache_type")" = "$1" ] ||
		{ echo "LUN $2: cache_type not $1"; false; }
}
# A file LUN starts with WCE 0 (every write durable); a volatile write cache is what FUA and
# SYNCHRONIZE CACHE are for.
for l in "${!LUNS[@]}"; do cache_type "write back" "$l"; done

# pattern NAME: 4 KiB of "NAME" padded to 16 bytes, repeated, in $W/NAME
pattern() {
	local s _
	s=$(printf '%-15s' "$1")$'\n'
	for _ in $(seq 8); do s=$s$s; done
	printf '%s' "$s" > "$W/$1"
}
# write10 LUN LBA FUA NAME: WRITE(10) of pattern NAME (8 blocks of 512), FUA bit if FUA=1
write10() {
	local flags=00
	[ "$3" = 1 ] && flags=08
	pattern "$4"
	sg_raw -s 4096 -i "$W/$4" "${DEVS[$1]}" 2a "$flags" 00 00 00 "$(printf %02x "$2")" \
		00 00 08 00 > /tmp/sg_raw.log 2>&1 || true
	grep -q 'SCSI Status: Good' /tmp/sg_raw.log ||
		{ echo "WRITE(10) of $4 to LUN $1:"; cat /tmp/sg_raw.log; false; }
}
mark() { dmsetup message pl 0 mark "$1"; }

step "WRITE FUA, then mark (per LUN)"
for l in "${!LUNS[@]}"; do
	write10 "$l" 8 1 "A$l"
	mark "fua$l"
done
step "WRITE + SYNCHRONIZE CACHE, then mark (per LUN)"
for l in "${!LUNS[@]}"; do
	write10 "$l" 64 0 "B$l"
	sg_sync "${DEVS[$l]}"
	mark "sync$l"
done
step "WRITE without FUA or sync on every LUN (the control), then mark"
for l in "${!LUNS[@]}"; do
	write10 "$l" 128 0 "C$l"
done
mark end
step "WCE 0 (MODE SELECT), WRITE without FUA, then mark (per LUN)"
for l in "${!LUNS[@]}"; do
	cache_type "write through" "$l"
	write10 "$l" 192 0 "D$l"
	mark "wt$l"
done

step "logout, target stopped, file system and log device detached"
iscsiadm -m node -T "$IQN" -p "$PORTAL" --logout > /dev/null
target_stop
umount "$MNT"
dmsetup remove pl
losetup -d "$DISK" "$LOGDEV"
save_logs

# at MARK: the log replayed to MARK into a fresh image, mounted at /mnt/replay
at() {
	rm -f "$W/replay.img"
	truncate -s "${DISK_MB}M" "$W/replay.img"
	/host/log-replay "$W/log.img" "$W/replay.img" "$1"
	mount -o loop,noatime "$W/replay.img" /mnt/replay
}
# has LUN LBA NAME: whether the LUN's file holds pattern NAME at LBA
has() { cmp -s -i "$(($2 * 512)):0" -n 4096 "/mnt/replay/lun$1.img" "$W/$3"; }
fail=0
check() {
	local what=$1 l=$2 lba=$3 name=$4
	if [ "$what" = present ] && ! has "$l" "$lba" "$name"; then
		echo "FAIL: LUN ${LUNS[$l]}: $name at LBA $lba was acknowledged ($5) but is lost"
		fail=1
	elif [ "$what" = absent ] && has "$l" "$lba" "$name"; then
		echo "FAIL: LUN ${LUNS[$l]}: $name at LBA $lba (no FUA, no flush) survived: the" \
			"replay keeps unflushed data, so the checks above cannot fail"
		fail=1
	else
		echo "ok: LUN ${LUNS[$l]}: $name at LBA $lba $what ($5)"
	fi
}

step "replay to each mark and check"
for l in "${!LUNS[@]}"; do
	at "fua$l"
	check present "$l" 8 "A$l" "WRITE FUA=1, power lost right after"
	umount /mnt/replay
	at "sync$l"
	check present "$l" 64 "B$l" "WRITE then SYNCHRONIZE CACHE, power lost right after"
	umount /mnt/replay
	at "wt$l"
	check present "$l" 192 "D$l" "WRITE under WCE 0, power lost right after"
	umount /mnt/replay
done
at end
for l in "${!LUNS[@]}"; do
	check present "$l" 8 "A$l" "FUA, at the end"
	check present "$l" 64 "B$l" "before SYNCHRONIZE CACHE, at the end"
	check absent "$l" 128 "C$l" "plain WRITE, power lost before any flush"
done
umount /mnt/replay
step "done"
exit $fail
