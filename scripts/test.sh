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
#                                ib_iser and ib_srp initiators in a QEMU guest, and its
#                                dm-multipath against two RBD gateways (tests/vm)
#   scripts/test.sh --conn-workers
#                                in build/, run the integration and conformance suites with
#                                every target on two worker threads and its connections on
#                                them end to end (IT_TARGET_ARGS="--workers 2" and
#                                SCSITGT_EXPERIMENTAL_CONN_WORKERS=1, issue 18); with --tsan,
#                                the integration suite so in build-tsan/. meson's log is
#                                meson-logs/connworkers.json (testlog.json stays the other
#                                runs')
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
	--)
		shift
		EXTRA=("$@")
		break
		;;
	-h | --help)
		sed -n '2,28s/^# \{0,1\}//p' "$0"
		exit 0
		;;
	*)
		echo "test.sh: unknown option $1 (try --help)" >&2
		exit 2
		;;
	esac
done

if [[ $CONNW -eq 1 && ($SANITIZE -eq 1 || $VALGRIND -eq 1 || $VM -eq 1) ]]; then
	echo "test.sh: --conn-workers goes alone or with --tsan" >&2
	exit 2
fi

scripts/install-deps.sh

JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
if [[ $SANITIZE -eq 1 ]]; then
	BUILD=build-asan
	# shellcheck disable=SC2054
	OPTS=(-Dbuildtype=debugoptimized -Db_sanitize=address,undefined -Db_lundef=false)
	# the integration and conformance suites too, slower under ASan: longer timeouts.
	SUITES=(--suite unit --suite fuzz --suite integration --suite conformance
		--timeout-multiplier 3)
	# Any sanitizer report fails the test that triggered it; a target that leaks exits
	# non-zero at shutdown, which the integration scripts' it_stop reports.
	export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:abort_on_error=1:detect_leaks=1}
	export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:abort_on_error=1:print_stacktrace=1}
elif [[ $TSAN -eq 1 ]]; then
	BUILD=build-tsan
	# shellcheck disable=SC2054
	OPTS=(-Dbuildtype=debugoptimized -Db_sanitize=thread -Db_lundef=false)
	SUITES=(--suite unit)
	if [[ $CONNW -eq 1 ]]; then
		# minitarget itself under TSan: slower, longer timeouts.
		SUITES=(--suite integration --timeout-multiplier 3)
	fi
	# A data race or lock-order report fails the test that triggered it.
	export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
else
	BUILD=build
	OPTS=(-Dbuildtype=debugoptimized)
	# The 'vm' suite (kernel initiators in a QEMU TCG guest, several minutes a test) runs
	# only with --vm: it does not fit the CI time budget on 2 cores.
	SUITES=(--no-suite vm)
	if [[ $VM -eq 1 ]]; then
		SUITES=(--suite vm)
	fi
	if [[ $VALGRIND -eq 1 ]]; then
		SUITES=(--suite integration --timeout-multiplier 4)
		export IT_TARGET_WRAPPER="valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite"
	fi
	if [[ $CONNW -eq 1 ]]; then
		SUITES=(--suite integration --suite conformance)
	fi
fi
LOGBASE=testlog
if [[ $CONNW -eq 1 ]]; then
	# Every target the integration and conformance scripts start (tests/integration/lib.sh).
	export IT_TARGET_ARGS="--workers 2"
	export SCSITGT_EXPERIMENTAL_CONN_WORKERS=1
	LOGBASE=connworkers
fi

if [[ -f "$BUILD/build.ninja" ]]; then
	meson configure "$BUILD" "${OPTS[@]}" >/dev/null
else
	rm -rf "$BUILD"
	meson setup "$BUILD" "${OPTS[@]}"
fi
ninja -C "$BUILD" -j "$JOBS"

# A log of an earlier run must not be mistaken for this one's (.ci/run counts from it).
rm -f "$BUILD/meson-logs/$LOGBASE.json"
# meson prints its summary ("Ok: ... Fail: ...") last; nothing is printed after it.
exec meson test -C "$BUILD" --no-rebuild --print-errorlogs --num-processes "$JOBS" \
	--logbase "$LOGBASE" "${SUITES[@]}" "${EXTRA[@]}"
