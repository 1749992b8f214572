#!/bin/bash
# fs-files.sh - sourced by the vm suite's guest scripts (iser-guest.sh, srp-guest.sh): a file
# system with known contents on the LUN under test, and the check that it reads back the same.
#
#   fs_write_files DEV   mkfs.ext4 on DEV, files of FS_FILES_MB MiB (default 1 4 16 64)
#                        written with direct I/O and 100 small files; FS_SUM[MB] and FS_SMALL
#                        keep their checksums, FS_BIG names the largest file's size;
#                        unmounted and the page cache dropped afterwards
#   fs_check_files DEV   mount DEV read-only at /mnt/lun, compare every file, unmount
# Each prints how long its parts took (guest clock), which is where a slow run's time went.

declare -A FS_SUM
FS_SMALL=
FS_FILES_MB=${FS_FILES_MB:-1 4 16 64}
# shellcheck disable=SC2034 # for the scripts that source this
FS_BIG=${FS_FILES_MB##* }

# fs_lap NAME: print the seconds since the previous lap (or the call that set FS_T) as NAME.
fs_lap() {
	local now=$EPOCHREALTIME
	awk -v s="$FS_T" -v e="$now" -v n="$1" 'BEGIN {printf "  %s %.1f s\n", n, e - s}'
	FS_T=$now
}

fs_write_files() {
	local mb i text
	FS_T=$EPOCHREALTIME
	mkfs.ext4 -q -F "$1"
	mkdir -p /mnt/lun
	mount "$1" /mnt/lun
	fs_lap "mkfs.ext4 + mount:"
	for mb in $FS_FILES_MB; do
		dd if=/dev/urandom of=/tmp/blob$mb bs=1M count=$mb status=none
		FS_SUM[$mb]=$(sha256sum < /tmp/blob$mb)
	done
	fs_lap "random data ($FS_FILES_MB MiB) + checksums:"
	for mb in $FS_FILES_MB; do
		dd if=/tmp/blob$mb of=/mnt/lun/file$mb bs=1M oflag=direct status=none
		rm /tmp/blob$mb
	done
	fs_lap "direct-I/O writes:"
	# Written by the shell itself: a process per file costs a second or more per ten files
	# under TCG on a loaded host.
	text=$(head -c 3000 /dev/urandom | base64 -w 0)
	for ((i = 1; i <= 100; i++)); do
		printf '%s' "${text:0:i * 37}" > /mnt/lun/small$i
	done
	FS_SMALL=$(cat /mnt/lun/small* | sha256sum)
	fs_lap "100 small files:"
	sync
	umount /mnt/lun
	echo 3 > /proc/sys/vm/drop_caches
	fs_lap "sync + umount:"
}

fs_check_files() {
	local got

	FS_T=$EPOCHREALTIME
	mount -o ro "$1" /mnt/lun
	for mb in $FS_FILES_MB; do
		got=$(dd if=/mnt/lun/file$mb bs=1M iflag=direct status=none | sha256sum)
		[ "$got" = "${FS_SUM[$mb]}" ] || { echo "file$mb checksum mismatch"; return 1; }
		echo "  file$mb ($mb MiB) checksum ok"
	done
	[ "$(cat /mnt/lun/small* | sha256sum)" = "$FS_SMALL" ] || { echo "small files differ"; return 1; }
	echo "  100 small files ok"
	umount /mnt/lun
	fs_lap "read back by direct I/O + checksums:"
}
