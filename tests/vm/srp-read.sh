#!/bin/bash
# srp-read.sh - by hand: fio 1 MiB reads at QD 4 over SRP and over iSER in one guest, with
# ib_srp's default segment limit and with ib_iser's, plus the soft-RoCE counters of each run
# (guest/srp-read.sh; docs/srp.md "Measured"). Not a test; figures compare within one run.
#   tests/vm/srp-read.sh [BUILD_DIR]
# Environment: SRP_LOGINS, ROUNDS, IO (see guest/srp-read.sh), IT_TARGET_ARGS (vm-test.sh).
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BUILD=${1:-build}
env=()
for v in SRP_LOGINS ROUNDS IO; do
	[ -n "${!v:-}" ] && env+=("$v=${!v// //}") # VM_ENV splits at spaces
done
VM_ENV="${VM_ENV:-} ${env[*]}" VM_TIMEOUT=${VM_TIMEOUT:-840} exec "$HERE/vm-test.sh" "$BUILD" \
	srp-read "$HERE/guest/srp-read.sh" /host/examples/minitarget
