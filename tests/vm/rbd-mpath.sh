#!/usr/bin/env bash
# rbd-mpath.sh BUILD_DIR [SIZE_MB] - meson test vm/rbd_mpath: the Linux kernel's dm-multipath
# as the referee of two RBD gateways (docs/rbd.md, "Several gateways: the HA model").
#
# On the host: a throwaway Ceph cluster (tests/ceph/micro-ceph.sh) and two minitarget gateways
# exporting its image on 127.0.0.1 (A: target port group 1, the lock owner; B: group 2,
# standby). In the guest (run-guest.sh with VM_NET=hostloop: the guest reaches the host's
# loopback at 10.0.2.2): open-iscsi logs in to both, multipathd groups the paths by ALUA
# priority, fio writes SIZE_MB (default 48, a multiple of 4) with verification headers; the
# guest asks for A to be SIGKILLed a quarter of the way (guest/rbd-mpath-guest.sh says what is
# checked). The files in the staged directory's out/ are the signals between the two sides:
#   guest -> host  kill-a      host: SIGKILL A, then write its time (host clock) into a-killed
#   guest -> host  restart-a   host: start A again (same port, same group), touch a-restarted
# Afterwards the host compares the guest's checksum of the written range with `rbd export`.
# Prints "failover_ms N": from the SIGKILL to the first write completed after it in the guest.
# Exit 77 (skipped, the reason on stderr) without QEMU, the guest image, or Ceph.
set -euo pipefail
BUILD=$(cd "${1:?usage: rbd-mpath.sh BUILD_DIR [SIZE_MB]}" && pwd)
SIZE_MB=${2:-48}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
IT_NAME=rbd_mpath
source "$HERE/../integration/lib.sh"
source "$HERE/../integration/rbd_lib.sh"
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:$PATH
it_init "$BUILD/examples/minitarget"
it_need qemu-system-x86_64
rbd_need
IQN=iqn.2026-11.org.libscsitgt:rbd-mpath
NAME=rbd_mpath
STAGE=$BUILD/tests/vm-stage-$NAME
OUT=$STAGE/out

# The image first: without it the test is skipped before a cluster starts.
st=0
"$HERE/build-image.sh" 2>"$IT_TMP/image.log" || st=$?
[[ $st -eq 3 ]] && it_skip "the guest image cannot be built here: $(tail -n 1 "$IT_TMP/image.log")"
[[ $st -eq 0 ]] || { cat "$IT_TMP/image.log" >&2; it_fail "build-image.sh: $st"; }

rbd_cluster_up -S 256M
trap gw_cleanup EXIT
gw_start A 1 2
gw_wait A owner
gw_start B 2 1
gw_wait B standby

# The guest: its helpers staged at /host/guest, its logs and signals in /host/out.
rm -rf "$STAGE"
mkdir -p "$STAGE/guest" "$OUT"
cp "$HERE"/guest/*.sh "$STAGE/guest/"
VM_NET=hostloop VM_SHARE=$STAGE VM_TIMEOUT=${VM_TIMEOUT:-840} "$HERE/run-guest.sh" \
	"$HERE/guest/rbd-mpath-guest.sh" "${GW_PORT[A]}" "${GW_PORT[B]}" "$IQN" "$SIZE_MB" \
	>"$IT_TMP/guest.out" 2>"$IT_TMP/guest.err" &
VM_PID=$!
IT_HELPER_PIDS+=("$VM_PID")
tail -n +1 -F --pid=$VM_PID "$IT_TMP/guest.out" >&2 2>/dev/null &
IT_HELPER_PIDS+=("$!")

# guest_wait FILE: until the guest wrote FILE in out/ (false when the guest ended first).
guest_wait() {
	while [[ ! -e "$OUT/$1" ]]; do
		kill -0 "$VM_PID" 2>/dev/null || return 1
		sleep 0.1
	done
}

# took N NAME: gateway NAME has taken the lock N times (the lock moves only when the owner dies:
# nothing dm-multipath does may move it, no ping-pong).
took() {
	local got
	got=$(grep -c 'took the lock' "$IT_TMP/gw-$2.err" || true)
	[[ $got -eq $1 ]] || it_fail "gateway $2 took the lock $got times, expected $1: $(grep -h \
		-e 'took the lock' -e '-> fenced' "$IT_TMP"/gw-[AB].err | tail -n 6)"
}

if guest_wait kill-a; then
	took 1 A
	took 0 B
	t_kill=$EPOCHREALTIME
	gw_kill A
	it_log "killed gateway A"
	echo "$t_kill" >"$OUT/a-killed.tmp"
	mv "$OUT/a-killed.tmp" "$OUT/a-killed"
	if guest_wait restart-a; then
		gw_wait B owner
		took 1 B
		it_log "B: $(grep -o 'took the lock.*' "$IT_TMP/gw-B.err" | tail -1)"
		gw_start A 1 2
		gw_wait A standby
		touch "$OUT/a-restarted"
	fi
fi
st=0
wait "$VM_PID" || st=$?
cat "$IT_TMP/guest.err" >&2
[[ $st -eq 0 ]] || it_fail "the guest failed ($st); its logs: $OUT"
grep '^failover_ms' "$IT_TMP/guest.out" || it_fail "the guest printed no failover time"
it_log "SIGKILL of A at $(date -d "@$t_kill" +%T.%N | cut -c1-12) (host clock)"

# What the guest read back through the map is what the cluster holds.
rbd export "$MICRO_CEPH_POOL/$MICRO_CEPH_IMAGE" "$IT_TMP/export.img" >/dev/null 2>&1 ||
	it_fail "rbd export failed"
want=$(head -c "$((SIZE_MB << 20))" "$IT_TMP/export.img" | sha256sum | awk '{print $1}')
got=$(cat "$OUT/guest.sha256")
[[ "$got" == "$want" ]] || it_fail "the guest read $got, rbd export holds $want"
it_log "the guest's $SIZE_MB MiB equal rbd export ($want)"
# A came back as standby and stayed so; B took the lock once, at A's death.
took 1 A
took 1 B
for n in B A; do
	kill -TERM "${GW_PID[$n]}"
	st=0
	wait "${GW_PID[$n]}" || st=$?
	unset "GW_PID[$n]"
	[[ $st -eq 0 ]] || it_fail "gateway $n exited with status $st on SIGTERM"
done
it_log "PASS"
