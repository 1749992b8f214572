#!/bin/bash
# rxe.sh - sourced by the vm suite's RDMA guest scripts (iser-guest.sh, srp-guest.sh, run one
# after the other in one boot by rdma-guest.sh): rxe_up gives the guest soft-RoCE, rxe0 on a
# dummy netdev rig0 at RXE_IP (default 192.0.2.1, RFC 5737 TEST-NET-1, only in the guest).
# A second call finds rxe0 there and does nothing. Exits 77 (meson: skipped) with the reason
# when the guest's kernel cannot give soft-RoCE at all (no rdma_rxe module, or `rdma link add`
# refused): that is the host's kernel package, not the target under test. rxe_remove_readd
# (below) takes rxe0 away under the running target and brings it back.

rxe_up() {
	local ip=${RXE_IP:-192.0.2.1} m _
	[ -e /sys/class/infiniband/rxe0/ports/1/gids/1 ] && return 0
	for m in rdma_rxe ib_uverbs rdma_ucm ib_umad; do
		modprobe "$m" || { echo "SKIP: the guest kernel has no $m (soft-RoCE)"; exit 77; }
	done
	ip link add rig0 type dummy
	ip addr add "$ip/24" dev rig0
	ip link set rig0 up
	rdma link add rxe0 type rxe netdev rig0 ||
		{ echo "SKIP: rdma link add rxe0 failed: no soft-RoCE here"; exit 77; }
	# The port's GIDs appear once the device has its address (bounded: 60 s under TCG).
	for _ in $(seq 600); do
		[ -e /sys/class/infiniband/rxe0/ports/1/gids/1 ] && return 0
		sleep 0.1
	done
	echo "rxe0 has no GID after 60 s"
	return 1
}

# rxe_remove_readd REGEX: the RDMA device goes under our running target (its log, at
# /tmp/target.log, shows DEVICE_REMOVAL), rxe0 is added back on rig0, and the target's log must
# then have a line matching REGEX (grep -E: its listener's "listening again"). Each wait 60 s
# at most. Opt-in in the callers: `rdma link delete` of rxe has hung in D state (README.md).
rxe_remove_readd() {
	local again=$1 _
	timeout 30 rdma link delete rxe0
	for _ in $(seq 600); do grep -q "DEVICE_REMOVAL" /tmp/target.log && break; sleep 0.1; done
	rdma link add rxe0 type rxe netdev rig0
	for _ in $(seq 600); do [ -e /sys/class/infiniband/rxe0/ports/1/gids/1 ] && break; sleep 0.1; done
	for _ in $(seq 600); do grep -qE "$again" /tmp/target.log && break; sleep 0.1; done
	grep -E "DEVICE_REMOVAL|listening again" /tmp/target.log
	grep -qE "$again" /tmp/target.log
}
