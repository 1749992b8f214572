#!/bin/bash
# net-hostloop.sh - sourced by guest scripts of runs with VM_NET=hostloop (run-guest.sh):
# net_hostloop brings up eth0 on QEMU's user network with one host route, to 10.0.2.2 (the
# host's 127.0.0.1 as slirp maps it), and no default route: the guest reaches the targets
# on the host's loopback and nothing else.

net_hostloop() {
	local _
	modprobe virtio_net
	for _ in $(seq 300); do
		[ -e /sys/class/net/eth0 ] && break
		sleep 0.1
	done
	[ -e /sys/class/net/eth0 ] || { echo "no eth0 (VM_NET=hostloop?)"; return 1; }
	ip link set eth0 up
	ip addr add 10.0.2.15/32 dev eth0
	ip route add 10.0.2.2/32 dev eth0
}
