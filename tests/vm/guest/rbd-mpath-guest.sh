#!/bin/bash
# rbd-mpath-guest.sh PORT_A PORT_B IQN SIZE_MB - in the guest of tests/vm/rbd-mpath.sh: the
# Linux kernel's dm-multipath (scsi_dh_alua, multipath-tools) against two RBD gateways on the
# host (two minitarget processes exporting one image, docs/rbd.md "Several gateways: the HA
# model"), reached at 10.0.2.2:PORT_A (gateway A, target port group 1, the lock owner) and
# 10.0.2.2:PORT_B (B, group 2, standby).
#
#  1. iscsi_tcp logs in to both, B first (the order that once made B's group the map's first);
#     once both paths' ALUA states are known, `multipath` makes one map of the two paths, then
#     multipathd runs: one active path group (A, prio 50: active/optimized) and one enabled (B,
#     prio 1: standby, "ghost"), and the lock stays with A (docs/rbd.md, "Two gateways").
#  2. fio writes SIZE_MB with crc32c verification headers through the map; once a quarter
#     is written the script asks the host to SIGKILL A (/host/out/kill-a) and writing goes on;
#     dm-multipath fails the path, scsi_dh_alua activates B's group (SET TARGET PORT GROUPS or
#     the gateway's implicit takeover), the writes queued meanwhile go to B. fio verifies
#     every block afterwards (no error may reach it: no_path_retry queue). The failover time
#     is from the host's SIGKILL (its clock, written into /host/out/a-killed) to the first
#     write completed after it (fio's completion log in the guest's clock, which is mapped to
#     the host's through the modification time the host gives a file made on /host).
#  3. The host restarts A (/host/out/restart-a, answered by /host/out/a-restarted): its path
#     comes back as a standby ("ghost") path in the enabled group and B's stays active; then
#     the SIZE_MB are read back through the map once more and their checksum goes to
#     /host/out/guest.sha256 (the host compares it with `rbd export`).
#  4. Teardown: multipathd stops (and with it the map's queueing: queue_without_daemon no), udev
#     settles, the map is removed (retried while udev's blkid or kpartx still has it open,
#     bounded, and a map that stays is a failure that names its holders), and only then do the
#     sessions log out: a path pulled from under a live map fails whatever I/O is still sent
#     to it (the kernel log is checked for that last).
# Every wait polls a condition, bounded; nothing sleeps a fixed time.
. /host/guest/iscsid-start.sh
. /host/guest/net-hostloop.sh
set -Eeuo pipefail
PORT_A=$1
PORT_B=$2
IQN=$3
SIZE_MB=$4
OUT=/host/out
T0=$(date +%s.%N)
ts() { awk -v s="$T0" -v e="$(date +%s.%N)" 'BEGIN {printf "[%6.2fs]", e - s}'; }
step() { echo "$(ts) == $*"; }
fail() {
	echo "$(ts) FAIL: $*"
	dump > /dev/null 2>&1
	exit 1
}
dump() {
	multipath -ll 2>&1 || true
	dmesg > "$OUT/dmesg.txt" 2>&1 || true
	dmsetup table > "$OUT/dmtable.txt" 2>&1 || true
	cp /tmp/fio*.json /tmp/*lat*.log "$OUT/" 2> /dev/null || true
}
trap 'echo "--- rbd-mpath-guest.sh FAILED at line $LINENO"; dump; dmesg | tail -n 40' ERR

# wait_for SECONDS WHAT CMD...: poll CMD every 0.1 s until it succeeds, for SECONDS (of the
# clock: a multipathd query alone can take a second under TCG). WHAT is expanded on failure
# only: quoted with '', its $(...) runs once then, not before every wait (a `multipath -ll`
# takes seconds under TCG).
wait_for() {
	local secs=$1 what=$2 end
	shift 2
	end=$((SECONDS + secs))
	while [ $SECONDS -lt $end ]; do
		"$@" > /dev/null 2>&1 && return 0
		sleep 0.1
	done
	"$@" > /dev/null 2>&1 && return 0
	fail "$(eval "echo \"$what\"") (after $secs s)"
}

# The SCSI disk of the session logged in to PORT.
disk_of() {
	local s c
	for s in /sys/class/iscsi_session/session*; do
		c=$(echo "$s"/device/connection*/iscsi_connection/connection*)
		[ "$(cat "$c/persistent_port" 2> /dev/null)" = "$1" ] || continue
		for b in "$s"/device/target*/*:*:*:*/block/*; do
			[ -e "$b" ] && basename "$b" && return 0
		done
	done
	return 1
}

# "DEV CHECKER DMSTATE PRIO" of every path multipathd knows.
paths() { multipathd show paths raw format "%d %T %t %p" | awk '{$1 = $1; print}'; }
# path_is DEV CHECKER DMSTATE [PRIO]: multipathd says so (CHECKER may be a regex: a|b).
path_is() {
	paths | awk -v d="$1" -v c="^($2)\$" -v t="$3" -v p="${4:-}" '
		$1 == d && $2 ~ c && $3 == t && (p == "" || $4 == p) { ok = 1 }
		END { exit !ok }'
}
# access_is DEV STATE: scsi_dh_alua's view of the path's target port group.
access_is() { [ "$(cat "/sys/block/$1/device/access_state")" = "$2" ]; }
# The path groups as multipathd has them (printed; `multipath -ll` would check every path
# again itself, seconds under TCG): "status=active" / "status=enabled" and their paths.
groups_are() {
	local t
	# want: the active group holds $1 alone, the enabled group $2 alone.
	t=$(multipathd show topology)
	echo "$t"
	echo "$t" | awk -v a="$1" -v e="$2" '
		/policy=/ { g = ($0 ~ /status=active/) ? "a" : ($0 ~ /status=enabled/) ? "e" : "?" }
		/[0-9]+:[0-9]+:[0-9]+:[0-9]+ sd/ { for (i = 1; i <= NF; i++) if ($i ~ /^sd/) n[g] = n[g] " " $i }
		END { exit !(n["a"] == " " a && n["e"] == " " e) }'
}

# clock_offset: the host's clock minus the guest's, in seconds, and its error bound: a file
# made on /host (9p, no attribute cache) gets its modification time from the host's clock,
# bracketed by two reads of the guest's ($EPOCHREALTIME: no fork between them); the tightest
# bracket of five. The bound is half the bracket plus 4 ms, a tick of the host's coarse clock
# that stamps files.
clock_offset() {
	local i g0 g1
	for i in 1 2 3 4 5; do
		rm -f "$OUT/clock.$i"
		g0=$EPOCHREALTIME
		: > "$OUT/clock.$i"
		g1=$EPOCHREALTIME
		echo "$g0 $g1 $(stat -c %.9Y "$OUT/clock.$i")"
		rm -f "$OUT/clock.$i"
	done | awk '{ w = $2 - $1; if (NR == 1 || w < best) { best = w; off = $3 - ($1 + $2) / 2 } }
		END { printf "%.6f %.6f\n", off, best / 2 + 0.004 }'
}

# holders DM: the processes that have /dev/DM open (pid, name, command line; a process may
# be gone by the time it is read: nothing here fails).
holders() {
	local f p
	for f in $(find /proc/[0-9]*/fd -lname "/dev/$1" 2> /dev/null || true); do
		p=${f#/proc/}
		p=${p%%/*}
		echo "$p $(cat 2> /dev/null "/proc/$p/comm" || true)" \
			"[$(tr 2> /dev/null '\0' ' ' < "/proc/$p/cmdline" || true)]"
	done | sort -u
}

# exited PID: the process is gone or a zombie (kill -0 succeeds on a zombie).
exited() { [ ! -e "/proc/$1" ] || grep -q '^State:.Z' "/proc/$1/status" 2> /dev/null; }

step "modules, network, udevd, iscsid"
modprobe iscsi_tcp
modprobe sd_mod
modprobe scsi_dh_alua
modprobe dm_multipath
modprobe dm_round_robin
net_hostloop
UDEVD=$(command -v systemd-udevd || echo /lib/systemd/systemd-udevd)
"$UDEVD" --daemon
# The block devices' uevents as udev handled them, with times (kept for a failed teardown).
udevadm monitor --kernel --udev --property --subsystem-match=block > "$OUT/udev-monitor.log" 2>&1 &
UDEVMON=$!
iscsid_start

cat > /etc/multipath.conf << 'EOF'
defaults {
	user_friendly_names no
	find_multipaths off
	polling_interval 1
}
blacklist {
	devnode "^vd[a-z]"
}
devices {
	device {
		vendor "LIBSCSI"
		product ".*"
		hardware_handler "1 alua"
		path_grouping_policy failover
		prio alua
		detect_prio no
		path_checker tur
		failback manual
		no_path_retry queue
	}
}
EOF

step "login to $IQN through 10.0.2.2:$PORT_A (A) and 10.0.2.2:$PORT_B (B)"
for p in "$PORT_A,1" "$PORT_B,2"; do
	iscsiadm -m node -o new -T "$IQN" -p "10.0.2.2:$p" > /dev/null
	# A dead gateway's session fails its commands to dm-multipath 5 s after the connection
	# dropped (open-iscsi's default is 120 s); no_path_retry queue holds them meanwhile.
	iscsiadm -m node -T "$IQN" -p "10.0.2.2:${p%,*}" -o update \
		-n node.session.timeo.replacement_timeout -v 5
done
iscsiadm -m node -T "$IQN" -p "10.0.2.2:$PORT_B" --login
wait_for 180 "no disk through B" disk_of "$PORT_B"
iscsiadm -m node -T "$IQN" -p "10.0.2.2:$PORT_A" --login
wait_for 180 "no disk through A" disk_of "$PORT_A"
wait_for 180 "no disk through B" disk_of "$PORT_B"
DA=$(disk_of "$PORT_A")
DB=$(disk_of "$PORT_B")
# udev has both disks in its database with their identity (multipath groups paths by
# ID_SERIAL): a wait on those two rather than on udev's whole queue (`udevadm settle
# --timeout=60` ran out once, with the host at a load average of 50).
udev_knows() { udevadm info --query=property --name="/dev/$1" | grep -q '^ID_SERIAL='; }
wait_for 300 "udev has no ID_SERIAL for $DA" udev_knows "$DA"
wait_for 300 "udev has no ID_SERIAL for $DB" udev_knows "$DB"

# The map is made only once both paths' ALUA states are known, and by a command that knows
# every path's checker state and priority before it loads the table (docs/rbd.md, "Linux
# dm-multipath"): dm-multipath activates the table's first path group at the first I/O (here
# udev's blkid of the new map), and scsi_dh_alua activates a standby group with SET TARGET
# PORT GROUPS, which moves the lock to that gateway. multipathd 0.9.4 creating the map itself
# waits at most 90 ms for its asynchronous TEST UNIT READY checks and leaves a path still
# pending out of its group's priority: under load both groups scored 0 and the first path
# found (B, logged in first here on purpose) came first. The `multipath` command checks
# synchronously. The alua prioritizer asks each path for its own group's state (detect_prio no:
# by default multipath-tools replaces it by "sysfs", scsi_dh_alua's access_state, which
# scsi_dh_alua also sets from another path's REPORT TARGET PORT GROUPS: a gateway's view of
# its peer, which can lag, once made both paths prio 1, one path group, and a lock move).
# path_grouping_policy failover, not group_by_prio: a failed path keeps its last priority, so
# group_by_prio put the dead owner's path (still prio 50) into the new owner's group, and when
# the restarted gateway's path was reinstated in the current group dm-multipath activated it:
# SET TARGET PORT GROUPS to the standby, the lock moved back.
step "both paths' ALUA states known, then the map: A's group first (prio 50), B's second (prio 1)"
wait_for 180 'access_state of A: $(cat /sys/block/$DA/device/access_state)' \
	access_is "$DA" active/optimized
wait_for 180 'access_state of B: $(cat /sys/block/$DB/device/access_state)' access_is "$DB" standby
echo "A: $DA ($(cat /sys/block/$DA/device/access_state)), B: $DB ($(cat /sys/block/$DB/device/access_state))"
multipath -v3 > "$OUT/multipath-create.log" 2>&1 || fail "multipath: $(tail -n 20 "$OUT/multipath-create.log")"
grep -E "addmap|prio|state =" "$OUT/multipath-create.log" | grep -E "addmap|sd[a-z]: (sysfs|alua) prio|tur state" || true

step "multipathd: A's group active (prio 50), B's enabled (prio 1, ghost)"
multipathd -d -v3 > "$OUT/multipathd.log" 2>&1 &
MULTIPATHD=$!
wait_for 300 'multipathd made no map of $DA and $DB: $(multipathd show topology 2>&1)' \
	path_is "$DB" ghost active 1
wait_for 180 'A is not the active path: $(paths)' path_is "$DA" ready active 50
[ "$(dmsetup ls --target multipath | wc -l)" = 1 ] || fail "not one map: $(dmsetup ls)"
MAP=$(dmsetup ls --target multipath | awk '{print $1}')
# dm-multipath makes a path group active at the map's first I/O (udev's blkid usually, at a
# time of its own): read once ourselves, then wait for the groups (a check at once raced with
# that first I/O: both groups still "enabled", seen once under TCG). The read must go to A's
# group, so it moves nothing: the checks after it hold only if it did.
dd if="/dev/mapper/$MAP" of=/dev/null bs=4k count=1 iflag=direct 2> /dev/null ||
	fail "the first read through /dev/mapper/$MAP failed"
wait_for 180 'path groups: $(multipathd show topology 2>&1)' groups_are "$DA" "$DB"
groups_are "$DA" "$DB" || fail "path groups (above)"
access_is "$DA" active/optimized || fail "A's access_state: $(cat /sys/block/$DA/device/access_state)"
access_is "$DB" standby || fail "B's access_state: $(cat /sys/block/$DB/device/access_state)"
DEV=/dev/mapper/$MAP
DM=$(basename "$(readlink -f "$DEV")")

step "fio: $SIZE_MB MiB with crc32c headers through $DEV; A SIGKILLed a quarter of the way"
FIO=(fio --name=mpath --filename="$DEV" --direct=1 --ioengine=libaio --bs=64k --iodepth=4
	--size="${SIZE_MB}M" --verify=crc32c --verify_fatal=1 --output-format=json)
"${FIO[@]}" --rw=write --do_verify=1 --write_lat_log=/tmp/mpath --log_avg_msec=0 \
	--log_unix_epoch=1 --output=/tmp/fio-write.json &
FIO_PID=$!
# /sys/block/dm-N/stat field 7: sectors written.
quarter=$((SIZE_MB * 2048 / 4))
written() { awk '{print $7}' "/sys/block/$DM/stat"; }
for ((i = 0; i < 6000; i++)); do
	[ "$(written)" -ge $quarter ] && break
	kill -0 $FIO_PID 2> /dev/null || fail "fio ended before a quarter was written"
	sleep 0.1
done
[ "$(written)" -ge $quarter ] || fail "fio wrote $(written) sectors in 600 s"
touch "$OUT/kill-a"
echo "$(ts) asked the host to SIGKILL A after $(written) sectors"
wait_for 120 "the host did not kill A" test -e "$OUT/a-killed"
# The clocks compared now, next to the kill and the failover (TCG's guest clock may drift).
read -r OFFSET OFFSET_ERR <<< "$(clock_offset)"
OFFSET_AT=$SECONDS
echo "$(ts) the host's clock - the guest's: $OFFSET s (+-$OFFSET_ERR s)"
wait_for 180 'the path of A never failed: $(paths)' path_is "$DA" "faulty|offline|shaky" failed
rc=0
wait $FIO_PID || rc=$?
[ $rc = 0 ] || {
	cat /tmp/fio-write.json
	fail "fio: exit $rc"
}
echo "$(ts) fio wrote and verified $SIZE_MB MiB"
# B carries the I/O now: its path is active, its disk active/optimized.
wait_for 180 'B is not active: $(paths)' path_is "$DB" ready active 50
wait_for 180 'access_state of B: $(cat /sys/block/$DB/device/access_state)' \
	access_is "$DB" active/optimized
multipathd show topology
grep -o '"error" : [0-9]*' /tmp/fio-write.json | head -1
# The clat log: "ms since the epoch (guest clock), latency, direction (1: write), bytes,
# offset" per io. The host wrote the time of its SIGKILL (its clock) into a-killed.
KILL=$(cat "$OUT/a-killed")
[ -n "$KILL" ] || fail "the host wrote no kill time"
# The guest's clock under TCG keeps the host's rate (checked: the offset again, some seconds on).
read -r OFFSET2 _ <<< "$(clock_offset)"
echo "$(ts) the host's clock - the guest's: $OFFSET2 s, $((SECONDS - OFFSET_AT)) s after $OFFSET s"
# mawk prints numbers past 2^31 as %.6g: the times are printed as read and computed
# relative to the first one.
awk -F, '$3 + 0 == 1 { print $1 }' /tmp/mpath_clat.1.log | sort -n | awk \
	-v kill="$(awk -v k="$KILL" -v o="$OFFSET" 'BEGIN { printf "%.3f", (k - o) * 1000 }')" \
	-v err="$(awk -v e="$OFFSET_ERR" 'BEGIN { printf "%d", e * 1000 + 1 }')" '
	NR == 1 { base = $1; kill -= base }
	{ t = $1 - base }
	NR > 1 && t - p > gap { gap = t - p; from = p; to = t }
	{ p = t; n++ }
	END {
		printf "%d writes completed; the longest gap between two: %d ms\n", n, gap
		# The kill falls in that gap (the owner completed writes until it died; replies it
		# sent just before may be reaped a little later in a loaded guest): the first
		# write after the gap is the first through the other gateway.
		if (!(kill - err < to && from < kill + 500)) {
			printf "the kill (%d ms) is not in the longest gap (%d-%d ms)\n", kill, from, to
			exit 1
		}
		printf "failover_ms %d (+-%d: SIGKILL to the first write completed after it)\n", to - kill, err
		printf "gap_ms %d\n", gap
	}' || fail "no failover time"

step "A restarted: its path rejoins as a standby (ghost) path, B stays active"
touch "$OUT/restart-a"
wait_for 120 "the host did not restart A" test -e "$OUT/a-restarted"
wait_for 180 'the path of A did not come back as standby: $(paths)' path_is "$DA" ghost active 1
path_is "$DB" ready active 50 || fail "B is no longer the active path: $(paths)"
groups_are "$DB" "$DA" || fail "path groups after A's return (above)"
wait_for 180 'access_state of A: $(cat /sys/block/$DA/device/access_state)' \
	access_is "$DA" standby

# One more pass over everything, with A back (4 MiB reads: a quarter of the round trips of
# 1 MiB ones).
step "checksum of the $SIZE_MB MiB through the map (the host compares with rbd export)"
dd if="$DEV" bs=4M count="$((SIZE_MB / 4))" iflag=direct status=none | sha256sum |
	awk '{print $1}' > "$OUT/guest.sha256"
cat "$OUT/guest.sha256"

# Teardown. multipathd turns the map's queueing off as it exits (queue_without_daemon no), and
# udev may still be reading the map: every change event of a dm-multipath device (the one udev
# makes when a writer closes it, a path failed or reinstated) runs blkid and kpartx on it. A
# `dmsetup remove` meanwhile fails with EBUSY; the map stays, and the logout then pulls both
# paths from under a live map that no longer queues, so whatever reads it next fails (before
# this teardown: 2 of 7 runs, READs of sectors 0, 1, 29 and the last, kpartx's probes, failing
# on dm-0). So: multipathd stopped and gone, udev settled, the map removed (retried while
# something has it open, bounded), checked gone, and only then the logout.
step "teardown: multipathd stopped, the map removed, then logout"
# The command's own status does not count: the daemon may exit before it answers (it did,
# once); its exit does.
multipathd shutdown > /dev/null 2>&1 || echo "$(ts) multipathd shutdown: status $? (no answer)"
wait_for 120 "multipathd did not exit" exited "$MULTIPATHD"
wait "$MULTIPATHD" || echo "multipathd exited with status $?"
tries=0
end=$((SECONDS + 120))
while dmsetup info "$MAP" > /dev/null 2>&1; do
	udevadm settle --timeout=30 || echo "udevadm settle: $?"
	err=$(dmsetup remove "$MAP" 2>&1) && continue
	tries=$((tries + 1))
	echo "$(ts) dmsetup remove $MAP: $err (open count $(dmsetup info -c --noheadings -o open "$MAP" 2> /dev/null)); holders:"
	holders "$DM" | sed 's/^/  /'
	[ $SECONDS -lt $end ] || fail "the map $MAP is still there after 120 s: $(dmsetup info "$MAP" 2>&1)"
	sleep 0.1
done
[ ! -e "/sys/block/$DM" ] || fail "/sys/block/$DM is still there"
echo "$(ts) map $MAP removed ($tries failed tries first)"
iscsiadm -m node --logout > /dev/null
kill "$UDEVMON" 2> /dev/null || true
dump > /dev/null
if dmesg | grep -E "Buffer I/O error|blk_update_request|I/O error, dev dm-" | grep -v " sd"; then
	fail "an I/O error reached the multipath device"
fi
step "PASS"
