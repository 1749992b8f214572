#!/bin/bash
# iscsi-tcp-ext4.sh PORTAL - in the guest: the kernel's iSCSI/TCP initiator (iscsi_tcp,
# iscsid/iscsiadm) against the target listening on PORTAL: SendTargets discovery, login,
# mkfs.ext4, mount, 4 x 16 MiB files and 200 small files, fsck.ext4 -f, remount read-only and
# compare checksums, 5 s of fio 4k random read/write at QD 8 (direct I/O), a background short
# and a foreground extended self-test read back through sg_logs (Self-Test Results), logout.
# iscsid_start (tests/vm/guest/iscsid-start.sh)
. /host/guest/iscsid-start.sh
# step, iscsi_disk (tests/vm/guest/steps.sh)
. /host/guest/steps.sh
set -Eeuo pipefail
PORTAL=$1
trap 'echo "--- iscsi-tcp-ext4.sh FAILED at line $LINENO"; dmesg | tail -n 25' ERR

step "iscsi_tcp + iscsid"
modprobe iscsi_tcp
modprobe sd_mod
iscsid_start

step "discovery on $PORTAL"
iscsiadm -m discovery -t sendtargets -p "$PORTAL"
IQN=$(iscsiadm -m node | awk -v p="$PORTAL" 'index($1, p) == 1 {print $2; exit}')
[ -n "$IQN" ] || { echo "no target discovered"; false; }
step "login to $IQN"
iscsiadm -m node -T "$IQN" -p "$PORTAL" --login
iscsi_disk
sg_inq "$DEV" | sed -n '1,8p'
sg_readcap "$DEV" | head -3

step "mkfs.ext4 + files + fsck -f on $DEV"
mkfs.ext4 -q -F "$DEV"
mkdir -p /mnt/lun
mount "$DEV" /mnt/lun
dd if=/dev/urandom of=/tmp/blob bs=1M count=16 status=none
want=$(sha256sum < /tmp/blob)
for n in 1 2 3 4; do
	cp /tmp/blob /mnt/lun/file$n
done
mkdir /mnt/lun/dir
for n in $(seq 200); do
	echo "$n" > /mnt/lun/dir/f$n
done
sync
umount /mnt/lun
echo 3 > /proc/sys/vm/drop_caches
fsck.ext4 -fn "$DEV"
mount -o ro "$DEV" /mnt/lun
for n in 1 2 3 4; do
	[ "$(sha256sum < /mnt/lun/file$n)" = "$want" ] || { echo "file$n: checksum mismatch"; false; }
done
[ "$(cat /mnt/lun/dir/f200)" = 200 ]
umount /mnt/lun

step "fio 5 s randrw 4k QD8 (direct I/O)"
fio --name=rw --filename="$DEV" --direct=1 --rw=randrw --bs=4k --iodepth=8 \
	--ioengine=libaio --runtime=5 --time_based --size=64M --group_reporting \
	--output-format=terse --terse-version=3 |
	awk -F';' '{printf "fio: read %s IOPS, write %s IOPS\n", $8, $49}'

step "self-tests (sg3_utils): background short, foreground extended, log page 10h"
sg_senddiag --selftest=1 "$DEV"
# The background test must be over before the foreground one starts (bounded at 60 s).
for i in $(seq 300); do
	sg_logs --page=0x10 "$DEV" | grep -qi "in progress" || break
	sleep 0.2
done
sg_senddiag --selftest=6 "$DEV"
sg_logs --page=0x10 "$DEV" > /tmp/selftest.txt
sed -n '1,12p' /tmp/selftest.txt
grep -qi "foreground extended" /tmp/selftest.txt
grep -qi "background short" /tmp/selftest.txt
[ "$(grep -ci 'completed without error' /tmp/selftest.txt)" = 2 ]

step "logout"
iscsiadm -m node -T "$IQN" -p "$PORTAL" --logout
step "PASS iscsi-tcp-ext4"
