#!/bin/bash
# test.sh - build libscsitgt and run its whole test suite.
#
#   scripts/test.sh              build in build/ (debugoptimized) and run every suite:
#                                unit, fuzz (corpus replay), integration, conformance, headers,
#                                abi, pkgconfig, docs, format; all but 'vm'
#   scripts/test.sh --sanitize   build in build-asan/ with -Db_sanitize=address,undefined and
#                                run the unit, fuzz, integration and conformance suites there
#                                (the integration and conformance scripts start the ASan
#                                build's examples/minitarget; a leak at its shutdown fails)
#   scripts/test.sh --tsan       build in build-tsan/ with -Db_sanitize=thread and run the
#                                unit suite there (the multi-threaded tests: io completion
#                                from backend threads, scsitgt_io_complete_threadsafe)
#   scripts/test.sh --valgrind   in build/, run the integration suite with minitarget under
#                                valgrind (memcheck errors or definite leaks fail the test)
#   scripts/test.sh --vm         in build/, run the 'vm' suite: the Linux kernel's iscsi_tcp,
#                                ib_iser and ib_srp initiators in a QEMU guest (vm/iser and
#                                vm/srp in full; vm/rdma, both shortened in one boot, is what
#                                .ci/run runs), and its dm-multipath against two RBD gateways
#                                (tests/vm)
#   scripts/test.sh --conn-workers
#                                the same configuration, but the suites that start a target
#                                (integration, conformance; vm with --vm) run with every
#                                target on two worker threads and its connections on them end
#                                to end (IT_TARGET_ARGS="--workers 2", the default with
#                                workers, issue 18): alone, every
#                                suite but vm; with --sanitize, unit and fuzz as usual, then
#                                integration and conformance so; with --tsan, the unit suite,
#                                then the integration tests that exercise threads (TSAN_CW
#                                below) so. That part's meson log is
#                                meson-logs/connworkers.json (testlog.json: the rest)
#   scripts/test.sh --exclude NAME
#                                (repeatable) leave test NAME out of the --conn-workers part
#   scripts/test.sh -- ARGS...   extra arguments for `meson test` (e.g. --suite integration)
#
# Installs missing Debian packages first (scripts/install-deps.sh). The output ends with meson's
# test summary; the exit status is non-zero when any test fails.
set -euo pipefail
cd "$(dirname "$0")/.."

SANITIZE=0
TSAN=0
VALGRIND=0
VM=0
CONNW=0
EXCLUDE=()
EXTRA=()
while [[ $# -gt 0 ]]; do
	case "$1" in
	--sanitize)
		SANITIZE=1
		shift
		;;
	--tsan)
		TSAN=1
		shift
		;;
	--valgrind)
		VALGRIND=1
		shift
		;;
	--vm)
		VM=1
		shift
		;;
	--conn-workers)
		CONNW=1
		shift
		;;
	--exclude)
		[[ $# -ge 2 ]] || { echo "test.sh: --exclude needs a test name" >&2; exit 2; }
		EXCLUDE+=("$2")
		shift 2
		;;
	--)
		shift
		EXTRA=("$@")
		break
		;;
	-h | --help)
		sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//p}' "$0"
		exit 0
		;;
	*)
		echo "test.sh: unknown option $1 (try --help)" >&2
		exit 2
		;;
	esac
done

if [[ $CONNW -eq 1 && $VALGRIND -eq 1 ]]; then
	echo "test.sh: --conn-workers does not go with --valgrind" >&2
	exit 2
fi

scripts/install-deps.sh

# The integration tests run under ThreadSanitizer with the switch (--tsan --conn-workers): those
# where several threads meet, each for a reason of its own, and since stop 26 the rest of the
# integration suite too (the last nine below: 36 s more). The RBD tests run with tests/tsan.supp
# (rbd_lib.sh adds it: it ignores what happens inside Ceph's uninstrumented client libraries,
# never our code). The seconds after a test are its time under TSan, one test at a time, load
# average 9-19 (2026-12-02).
TSAN_CW=(
	conn_workers   # the mode's own test: two workers, reinstatement, redirect hook on home
	hostile        # connections dropped mid-PDU and mid-login on a worker: teardown there
	hostile_limits # per-initiator and per-target connection limits: registries of all loops
	iscsi_rules    # CmdSN window, TMFs, async logout on a worker's session
	signals        # SIGTERM/SIGINT with sessions on both workers: shutdown across loops
	acl            # logins on workers read the ACLs and source addresses (cfg_lock readers)
	multipath_alua # SET TARGET PORT GROUPS from a worker runs on home, UAs to other loops
	multipath_kill # PREEMPT AND ABORT across sessions of two workers (tmf_xshard)
	pr_aptpl       # reservations of worker sessions saved by home
	xcopy          # EXTENDED COPY between LUNs from a worker (the target's LUN table)
	file_lun       # the aio backend's context per loop
	file_lun_uring # the io_uring backend's ring per loop
	fault_hang     # a LUN removal that times out with ios stuck on a worker
	fault_async    # a backend completing from its own threads to worker loops
	scsitgtd       # configuration reloads (SIGHUP) while sessions run on workers
	scsitgtd_ops   # metrics gathered from the workers' connections while they serve
	scsitgtctl     # runtime LUN/initiator/address changes and kicks while a session runs
	integrity_workers # 25 s: socket workers only (--conn-workers 0): every PDU crosses loops
	workers           # 23-28 s: eight sessions at once on two workers, four LUNs
	rbd_data        # 57 s: librbd completions to each worker's queue, zero-copy lending there
	rbd_pr          # 14-40 s: the PR object's operations and watch (librados threads -> home)
	rbd_fault       # 26 s: lock stolen, blocklisted under I/O on workers, OSD stopped
	rbd_scsitgtd    # 39 s: an RBD LUN opened off the loop on SIGHUP with sessions on workers
	rbd_ha_basic    # 13 s: two gateways, the gateway object's watch and probes
	rbd_ha_kill     # 20 s: the owner SIGKILLed under writes from workers: takeover, fencing
	rbd_ha_stpg     # 22 s: SET TARGET PORT GROUPS with a write in flight: fenced, reconnected
	rbd_ha_mon      # 25 s: the monitor killed under I/O and during a takeover
	rbd_ha_rewatch  # 22 s: a watch lost and made again (watch error callbacks)
	rbd_ha_ownerwatch # the owner's watch held broken: its heartbeat (aio from home) keeps it
	rbd_scsitgtd_ha # 18 s: the same failover with scsitgtd gateways, reloads
	discovery        # <1 s: SendTargets on a worker's session
	inquiry          # <1 s: every VPD page built on a worker
	readcapacity     # <1 s: READ CAPACITY of LUNs of each block size on a worker
	chap             # 2 s: CHAP secrets read by worker logins
	acl_secrets      # 1 s: per-initiator secrets read by worker logins
	integrity        # 22 s: 64 MiB written and read back through a worker
	integrity_digest # 28 s: the same with CRC32C digests computed on the worker
	scsitgtd_vpd     # 1 s: scsitgtd's VPD settings read by worker commands
	harness_ports    # 11 s: the suite's own port claims (lib.sh), with a TSan minitarget
)

JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
# SUITES: the plain run's meson arguments (testlog.json); with --conn-workers, the run with the
# switch (connworkers.json) takes the tests of the suites CW_SUITES (or only CW_TESTS of them)
# with the arguments CW_ARGS.
CW_SUITES=()
CW_TESTS=()
CW_ARGS=()
if [[ $SANITIZE -eq 1 ]]; then
	BUILD=build-asan
	# shellcheck disable=SC2054
	OPTS=(-Dbuildtype=debugoptimized -Db_sanitize=address,undefined -Db_lundef=false)
	# the integration and conformance suites too, slower under ASan: longer timeouts.
	SUITES=(--suite unit --suite fuzz --suite integration --suite conformance
		--timeout-multiplier 3)
	if [[ $CONNW -eq 1 ]]; then
		SUITES=(--suite unit --suite fuzz --timeout-multiplier 3)
		CW_SUITES=(integration conformance)
		CW_ARGS=(--timeout-multiplier 3)
	fi
	# Any sanitizer report fails the test that triggered it; a target that leaks exits
	# non-zero at shutdown, which the integration scripts' it_stop reports.
	export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:abort_on_error=1:detect_leaks=1}
	# Leaks of other libraries only (glibc's resolver under librados): see the file.
	export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/tests/lsan.supp:print_suppressions=0}
	export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:abort_on_error=1:print_stacktrace=1}
elif [[ $TSAN -eq 1 ]]; then
	BUILD=build-tsan
	# shellcheck disable=SC2054
	OPTS=(-Dbuildtype=debugoptimized -Db_sanitize=thread -Db_lundef=false)
	SUITES=(--suite unit)
	if [[ $CONNW -eq 1 ]]; then
		# minitarget itself under TSan: slower, longer timeouts.
		CW_SUITES=(integration)
		CW_TESTS=("${TSAN_CW[@]}")
		CW_ARGS=(--timeout-multiplier 3)
	fi
	# A data race or lock-order report fails the test that triggered it.
	export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
else
	BUILD=build
	OPTS=(-Dbuildtype=debugoptimized)
	# The 'vm' suite (kernel initiators in a QEMU TCG guest, several minutes a test) runs
	# only with --vm: all of it does not fit the CI time budget on 2 cores (.ci/run runs
	# vm/iscsi_tcp, vm/rdma and vm/rbd_mpath itself).
	SUITES=(--no-suite vm)
	if [[ $CONNW -eq 1 ]]; then
		SUITES=(--no-suite vm --no-suite integration --no-suite conformance)
		CW_SUITES=(integration conformance)
	fi
	if [[ $VM -eq 1 ]]; then
		SUITES=(--suite vm)
		if [[ $CONNW -eq 1 ]]; then
			SUITES=()
			CW_SUITES=(vm)
		fi
	fi
	if [[ $VALGRIND -eq 1 ]]; then
		SUITES=(--suite integration --timeout-multiplier 4)
		export IT_TARGET_WRAPPER="valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite"
	fi
fi

if [[ -f "$BUILD/build.ninja" ]]; then
	meson configure "$BUILD" "${OPTS[@]}" >/dev/null
else
	rm -rf "$BUILD"
	meson setup "$BUILD" "${OPTS[@]}"
fi
ninja -C "$BUILD" -j "$JOBS"

# A log of an earlier run must not be mistaken for this one's (.ci/run counts from it).
rm -f "$BUILD/meson-logs/testlog.json" "$BUILD/meson-logs/connworkers.json"
status=0
if [[ ${#SUITES[@]} -gt 0 ]]; then
	meson test -C "$BUILD" --no-rebuild --print-errorlogs --num-processes "$JOBS" \
		--logbase testlog "${SUITES[@]}" "${EXTRA[@]}" || status=1
fi
if [[ $CONNW -eq 1 ]]; then
	# The tests of CW_SUITES (or CW_TESTS of them) but those of --exclude, by name (meson
	# test has no option to leave a test out).
	mapfile -t names < <(meson introspect --tests "$BUILD" | python3 -c '
import json, sys
suites, want, skip = (set(a.split()) for a in sys.argv[1:4])
seen = set()
for t in json.load(sys.stdin):
    n = t["name"]
    if n in seen or n in skip or (want and n not in want):
        continue
    if suites & {s.split(":")[-1] for s in t["suite"]}:
        seen.add(n)
        print(n)
' "${CW_SUITES[*]}" "${CW_TESTS[*]:-}" "${EXCLUDE[*]:-}")
	for n in "${EXCLUDE[@]}"; do
		echo "test.sh: $n left out of the run with connections on workers (--exclude)"
	done
	if [[ ${#names[@]} -eq 0 ]]; then
		echo "test.sh: no test left to run with connections on workers" >&2
		exit 1
	fi
	# Every target the integration, conformance and vm scripts start (tests/integration/lib.sh,
	# tests/vm/vm-test.sh).
	IT_TARGET_ARGS="--workers 2" \
		meson test -C "$BUILD" --no-rebuild --print-errorlogs --num-processes "$JOBS" \
		--logbase connworkers "${CW_ARGS[@]}" "${EXTRA[@]}" "${names[@]}" || status=1
fi
exit $status
