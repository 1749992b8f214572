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
#     every block afterwards (no error may reach it: no_path_retry queue), and the longest
#     gap between two completed writes is the failover time the guest saw.
#  3. The checksum of the SIZE_MB read back through the map goes to /host/out/guest.sha256
#     (the host compares it with `rbd export`).
#  4. The host restarts A (/host/out/restart-a, answered by /host/out/a-restarted): its path
#     comes back as a standby ("ghost") path in the enabled group, B's stays active, and a
#     second verification pass reads everything back.
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
# clock: a multipathd query alone can take a second under TCG).
wait_for() {
	local secs=$1 what=$2 end
	shift 2
	end=$((SECONDS + secs))
	while [ $SECONDS -lt $end ]; do
		"$@" > /dev/null 2>&1 && return 0
		sleep 0.1
	done
	"$@" > /dev/null 2>&1 && return 0
	fail "$what (after $secs s)"
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
# The path group lines of multipath -ll: "status=active" / "status=enabled" and their paths.
groups_are() {
	# want: the active group holds $1 alone, the enabled group $2 alone.
	multipath -ll | awk -v a="$1" -v e="$2" '
		/policy=/ { g = ($0 ~ /status=active/) ? "a" : ($0 ~ /status=enabled/) ? "e" : "?" }
		/[0-9]+:[0-9]+:[0-9]+:[0-9]+ sd/ { for (i = 1; i <= NF; i++) if ($i ~ /^sd/) n[g] = n[g] " " $i }
		END { exit !(n["a"] == " " a && n["e"] == " " e) }'
}

step "modules, network, udevd, iscsid"
modprobe iscsi_tcp
modprobe sd_mod
modprobe scsi_dh_alua
modprobe dm_multipath
modprobe dm_round_robin
net_hostloop
UDEVD=$(command -v systemd-udevd || echo /lib/systemd/systemd-udevd)
"$UDEVD" --daemon
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
wait_for 60 "no disk through B" disk_of "$PORT_B"
iscsiadm -m node -T "$IQN" -p "10.0.2.2:$PORT_A" --login
wait_for 60 "no disk through A" disk_of "$PORT_A"
wait_for 60 "no disk through B" disk_of "$PORT_B"
DA=$(disk_of "$PORT_A")
DB=$(disk_of "$PORT_B")
udevadm settle --timeout=60

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
wait_for 60 "A's access_state: $(cat /sys/block/$DA/device/access_state)" \
	access_is "$DA" active/optimized
wait_for 60 "B's access_state: $(cat /sys/block/$DB/device/access_state)" access_is "$DB" standby
echo "A: $DA ($(cat /sys/block/$DA/device/access_state)), B: $DB ($(cat /sys/block/$DB/device/access_state))"
multipath -v3 > "$OUT/multipath-create.log" 2>&1 || fail "multipath: $(tail -n 20 "$OUT/multipath-create.log")"
grep -E "addmap|prio|state =" "$OUT/multipath-create.log" | grep -E "addmap|sd[a-z]: (sysfs|alua) prio|tur state" || true

step "multipathd: A's group active (prio 50), B's enabled (prio 1, ghost)"
multipathd -d -v3 > "$OUT/multipathd.log" 2>&1 &
wait_for 120 "multipathd made no map of $DA and $DB: $(multipath -ll 2>&1)" \
	path_is "$DB" ghost active 1
wait_for 60 "A is not the active path: $(paths)" path_is "$DA" ready active 50
multipath -ll
[ "$(dmsetup ls --target multipath | wc -l)" = 1 ] || fail "not one map: $(dmsetup ls)"
MAP=$(dmsetup ls --target multipath | awk '{print $1}')
groups_are "$DA" "$DB" || fail "path groups: $(multipath -ll)"
access_is "$DA" active/optimized || fail "A's access_state: $(cat /sys/block/$DA/device/access_state)"
access_is "$DB" standby || fail "B's access_state: $(cat /sys/block/$DB/device/access_state)"
DEV=/dev/mapper/$MAP
DM=$(basename "$(readlink -f "$DEV")")

step "fio: $SIZE_MB MiB with crc32c headers through $DEV; A SIGKILLed a quarter of the way"
FIO=(fio --name=mpath --filename="$DEV" --direct=1 --ioengine=libaio --bs=64k --iodepth=4
	--size="${SIZE_MB}M" --verify=crc32c --verify_fatal=1 --output-format=json)
"${FIO[@]}" --rw=write --do_verify=1 --write_lat_log=/tmp/mpath --log_avg_msec=0 \
	--output=/tmp/fio-write.json &
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
wait_for 180 "A's path never failed: $(paths)" path_is "$DA" "faulty|offline|shaky" failed
rc=0
wait $FIO_PID || rc=$?
[ $rc = 0 ] || {
	cat /tmp/fio-write.json
	fail "fio: exit $rc"
}
echo "$(ts) fio wrote and verified $SIZE_MB MiB"
# B carries the I/O now: its path is active, its disk active/optimized.
wait_for 60 "B is not active: $(paths)" path_is "$DB" ready active 50
wait_for 60 "B's access_state: $(cat /sys/block/$DB/device/access_state)" \
	access_is "$DB" active/optimized
multipath -ll
grep -o '"error" : [0-9]*' /tmp/fio-write.json | head -1
# The clat log: "msec since the start, latency, direction (1: write), bytes, offset" per io.
awk -F, '$3 + 0 == 1 { print $1 + 0 }' /tmp/mpath_clat.1.log | sort -n | awk '
	NR > 1 && $1 - p > gap { gap = $1 - p; at = p }
	{ p = $1; n++ }
	END { printf "%d writes completed; the longest gap between two: %d ms, from %.1f s\nfailover_ms %d\n", n, gap, at / 1000, gap }'

step "checksum of the $SIZE_MB MiB through the map (the host compares with rbd export)"
dd if="$DEV" bs=1M count="$SIZE_MB" iflag=direct status=none | sha256sum | awk '{print $1}' \
	> "$OUT/guest.sha256"
cat "$OUT/guest.sha256"

step "A restarted: its path rejoins as a standby (ghost) path, B stays active"
touch "$OUT/restart-a"
wait_for 120 "the host did not restart A" test -e "$OUT/a-restarted"
wait_for 180 "A's path did not come back as standby: $(paths)" path_is "$DA" ghost active 1
path_is "$DB" ready active 50 || fail "B is no longer the active path: $(paths)"
groups_are "$DB" "$DA" || fail "path groups after A's return: $(multipath -ll)"
wait_for 60 "A's access_state: $(cat /sys/block/$DA/device/access_state)" \
	access_is "$DA" standby
multipath -ll
"${FIO[@]}" --rw=write --verify_only --output=/tmp/fio-verify.json ||
	fail "the second verification failed"
echo "$(ts) verified $SIZE_MB MiB again with A back as standby"

step "logout"
multipathd shutdown 2> /dev/null || true
dmsetup remove "$MAP" 2> /dev/null || true
iscsiadm -m node --logout > /dev/null
dump > /dev/null
if dmesg | grep -E "Buffer I/O error|blk_update_request|I/O error, dev dm-" | grep -v " sd"; then
	fail "an I/O error reached the multipath device"
fi
step "PASS"
