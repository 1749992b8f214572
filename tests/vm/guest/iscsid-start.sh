#!/bin/bash
# iscsid-start.sh - sourced by the vm suite's guest scripts: iscsid_start starts open-iscsi's
# iscsid and returns once it listens for iscsiadm (its abstract socket
# @ISCSIADM_ABSTRACT_NAMESPACE shows in /proc/net/unix), instead of sleeping a fixed time that
# a loaded host running the guest under TCG may not honour. Bounded at 60 s; fails after it.
# An iscsid already listening (an earlier script of the same boot started it) is kept.

iscsid_start() {
	local _
	grep -q '@ISCSIADM_ABSTRACT_NAMESPACE' /proc/net/unix && return 0
	iscsid
	for _ in $(seq 600); do
		grep -q '@ISCSIADM_ABSTRACT_NAMESPACE' /proc/net/unix && return 0
		sleep 0.1
	done
	echo "iscsid does not listen for iscsiadm after 60 s"
	return 1
}
