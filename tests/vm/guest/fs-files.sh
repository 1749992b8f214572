#!/bin/bash
# fs-files.sh - sourced by the vm suite's guest scripts (iser-guest.sh, srp-guest.sh): a file
# system with known contents on the LUN under test, and the check that it reads back the same.
#
#   fs_write_files DEV   mkfs.ext4 on DEV, files of 1, 4, 16 and 64 MiB written with direct I/O
#                        and 100 small files; FS_SUM[MB] and FS_SMALL keep their checksums;
#                        unmounted and the page cache dropped afterwards
#   fs_check_files DEV   mount DEV read-only at /mnt/lun, compare every file, unmount

declare -A FS_SUM
FS_SMALL=

fs_write_files() {
	mkfs.ext4 -q -F "$1"
	mkdir -p /mnt/lun
	mount "$1" /mnt/lun
	for mb in 1 4 16 64; do
		dd if=/dev/urandom of=/tmp/blob$mb bs=1M count=$mb status=none
		FS_SUM[$mb]=$(sha256sum < /tmp/blob$mb)
		dd if=/tmp/blob$mb of=/mnt/lun/file$mb bs=1M oflag=direct status=none
	done
	for i in $(seq 100); do head -c $((i * 37)) /tmp/blob1 > /mnt/lun/small$i; done
	FS_SMALL=$(cat /mnt/lun/small* | sha256sum)
	sync
	umount /mnt/lun
	echo 3 > /proc/sys/vm/drop_caches
}

fs_check_files() {
	local got

	mount -o ro "$1" /mnt/lun
	for mb in 1 4 16 64; do
		got=$(dd if=/mnt/lun/file$mb bs=1M iflag=direct status=none | sha256sum)
		[ "$got" = "${FS_SUM[$mb]}" ] || { echo "file$mb checksum mismatch"; return 1; }
		echo "  file$mb ($mb MiB) checksum ok"
	done
	[ "$(cat /mnt/lun/small* | sha256sum)" = "$FS_SMALL" ] || { echo "small files differ"; return 1; }
	echo "  100 small files ok"
	umount /mnt/lun
}
