#!/bin/bash
# iscsi_seq.sh MINITARGET - RFC 7143 rules of Data-Out sequences, task management, Logout and
# NOP-In timers that a review found broken (session 35), with the raw client of
# hostile_iscsi.py (iscsi_seq.py):
#  - an R2T answered short with F=1 ends its WRITE (§11.7.1), no hang;
#  - ABORT TASK SET, CLEAR TASK SET, LUN RESET and TARGET WARM RESET wait for the answers to
#    the R2Ts of the tasks they abort, and take them without a Reject (§11.5.1, §4.2.3.3);
#  - a Logout whose cleanup timed out answers Response 3, "cleanup failed" (§11.15.1);
#  - after an answered ping the next one comes after nop_interval_ms, not nop_timeout_ms;
#  - TAS: another session's LUN RESET answers a WRITE in the backend TASK ABORTED (TAS 1).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
it_init "${1:-}"
it_need python3
SEQ=(python3 "$(dirname "$0")/iscsi_seq.py")

# seq_target "TARGET ARGS" CHECK [ARGS...]: one check against a target of its own, stopped
# after it (SIGTERM: a clean exit).
seq_target() {
	local -a targs
	read -r -a targs <<<"$1"
	it_start "${targs[@]}"
	"${SEQ[@]}" "$2" --port "$IT_PORT" --iqn "$(it_iqn "${IT_URLS[0]}")" "${@:3}" >&2 ||
		it_fail "iscsi_seq.py ${*:2}"
	it_stop || it_fail "target exited with status $? on SIGTERM after $2"
}

seq_target "--lun 0:ram:16M" r2t-short
seq_target "--lun 0:ram:16M" task-set-r2t
# ... but not for ever: at the TMF timeout it acts all the same.
seq_target "--lun 0:ram:16M --tmf-timeout 1000" task-set-silent
seq_target "--lun 0:ram:16M --tmf-timeout 600000" task-set-broken
# The WRITE sent after the TMF waits 5 s in the backend, so it is there when the TMF acts.
it_start --lun 0:ram:16M,fault=delay=5000@write:count=1
"${SEQ[@]}" task-set-later --port "$IT_PORT" --iqn "$(it_iqn "${IT_URLS[0]}")" --pid "$IT_PID" \
	--out "$IT_TMP/target.out" >&2 || it_fail "iscsi_seq.py task-set-later"
it_stop || it_fail "target exited with status $? on SIGTERM after task-set-later"

# TAS (reviewj J1): B's WRITE waits 3 s in the backend (twice) while A resets the LUN.
it_start --lun 0:ram:16M,fault=delay=3000@write:count=2
"${SEQ[@]}" tas --port "$IT_PORT" --iqn "$(it_iqn "${IT_URLS[0]}")" --pid "$IT_PID" \
	--out "$IT_TMP/target.out" >&2 || it_fail "iscsi_seq.py tas"
it_stop || it_fail "target exited with status $? on SIGTERM after tas"

# A short ping interval under a long ping timeout.
seq_target "--lun 0:ram:16M --nop-interval 500 --nop-timeout 20000" ping-cadence \
	--timeout-ms 20000

# A backend that never returns the WRITE; bounded teardown (fault_hang.sh) ends the target.
seq_target "--lun 0:ram:16M,fault=hang@write --drain-timeout 2000 --tmf-timeout 1000 \
--logout-timeout 1000" logout-cleanup
it_log "PASS"
