#!/bin/bash
# fuzz.sh - build the libFuzzer targets (clang, ASan + UBSan) and run each for a bounded time.
#
#   scripts/fuzz.sh [--seconds N] [--jobs J] [--seed S] [--build DIR] [TARGET...]
#
#   --seconds N   run time of each target (default $FUZZ_SECONDS or 60)
#   --jobs J      targets run at once (default $FUZZ_JOBS or 2); each is one process
#   --seed S      libFuzzer's -seed for every target (default $FUZZ_SEED or 1; 0: libFuzzer
#                 picks one per run, printed in the target's log). Fixed and printed, so that
#                 a failure of a CI run can be repeated with the same binary: the same seed
#                 explores the same inputs (a run bounded by time gets further or less far)
#   --build DIR   build directory (default build-fuzz), configured with
#                 CC=clang CXX=clang++ -Dfuzzing=libfuzzer -Db_sanitize=address,undefined
#   TARGET...     names as in tests/fuzz/meson.build (cdb, pdu, ...); default: every target
#                 that the build has
#
# Each target starts from a scratch copy of tests/fuzz/corpus/<name>/ (the tree's corpus is not
# modified) with -max_total_time=N. Any crash, leak, sanitizer report, timeout or out-of-memory
# fails the run; the reproducer stays in DIR/fuzz-work/<name>/ (crash-*, leak-*, timeout-*,
# oom-*) and its log in DIR/fuzz-work/<name>.log. A table of executions per second and the
# coverage reached (libFuzzer's final "cov:" count of covered edges, and "ft:" features) follows,
# and DIR/fuzz-testlog.json gets one line per target in the format of meson's testlog.json
# (.ci/run counts it). Exit status 0 only when every target ran clean.
set -euo pipefail
cd "$(dirname "$0")/.."

SECONDS_EACH=${FUZZ_SECONDS:-60}
JOBS=${FUZZ_JOBS:-2}
SEED=${FUZZ_SEED:-1}
BUILD=build-fuzz
TARGETS=()
while [[ $# -gt 0 ]]; do
	case "$1" in
	--seconds)
		SECONDS_EACH=$2
		shift 2
		;;
	--jobs)
		JOBS=$2
		shift 2
		;;
	--seed)
		SEED=$2
		shift 2
		;;
	--build)
		BUILD=$2
		shift 2
		;;
	-h | --help)
		sed -n '2,24s/^# \{0,1\}//p' "$0"
		exit 0
		;;
	-*)
		echo "fuzz.sh: unknown option $1 (try --help)" >&2
		exit 2
		;;
	*)
		TARGETS+=("$1")
		shift
		;;
	esac
done
[[ "$SECONDS_EACH" =~ ^[0-9]+$ && "$SECONDS_EACH" -gt 0 ]] || {
	echo "fuzz.sh: bad --seconds '$SECONDS_EACH'" >&2
	exit 2
}
[[ "$SEED" =~ ^[0-9]+$ && "$SEED" -le 4294967295 ]] || {
	echo "fuzz.sh: bad --seed '$SEED' (0..4294967295)" >&2
	exit 2
}
[[ "$JOBS" =~ ^[0-9]+$ && "$JOBS" -gt 0 ]] || {
	echo "fuzz.sh: bad --jobs '$JOBS'" >&2
	exit 2
}
command -v clang >/dev/null || {
	echo "fuzz.sh: clang is needed (scripts/install-deps.sh installs it)" >&2
	exit 1
}

# A log of an earlier run must not be mistaken for this one's (.ci/run counts from it).
rm -f "$BUILD/fuzz-testlog.json"
# shellcheck disable=SC2054
OPTS=(-Dfuzzing=libfuzzer -Db_sanitize=address,undefined -Db_lundef=false
	-Dbuildtype=debugoptimized -Dexamples=false)
if [[ -f "$BUILD/build.ninja" ]]; then
	meson configure "$BUILD" "${OPTS[@]}" >/dev/null
else
	rm -rf "$BUILD"
	# clang for C and C++ alike (src/backend/rbd_zc.cc): g++ has no -fsanitize=fuzzer.
	CC=clang CXX=clang++ meson setup "$BUILD" "${OPTS[@]}" >/dev/null
fi

# The targets this build has: tests/fuzz/fuzz_<name> executables.
mapfile -t AVAILABLE < <(meson introspect --targets "$BUILD" | python3 -c '
import json, sys
for t in json.load(sys.stdin):
    n = t["name"]
    if t["type"] == "executable" and n.startswith("fuzz_") and \
            t["defined_in"].endswith("tests/fuzz/meson.build"):
        print(n[len("fuzz_"):])
')
if [[ ${#TARGETS[@]} -eq 0 ]]; then
	TARGETS=("${AVAILABLE[@]}")
fi
for t in "${TARGETS[@]}"; do
	[[ " ${AVAILABLE[*]} " == *" $t "* ]] || {
		echo "fuzz.sh: no fuzz target '$t' in this build" >&2
		exit 2
	}
done
[[ ${#TARGETS[@]} -gt 0 ]] || {
	echo "fuzz.sh: no fuzz targets" >&2
	exit 1
}
ninja -C "$BUILD" -j "$(nproc 2>/dev/null || echo 2)" "${TARGETS[@]/#/tests/fuzz/fuzz_}"

WORK=$BUILD/fuzz-work
rm -rf "$WORK"
mkdir -p "$WORK"
# Any report ends the run with an error: it counts as a failure of that target.
export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:abort_on_error=1:print_stacktrace=1}

run_one() {
	local t=$1 dir=$WORK/$1 st=0 dict=()
	mkdir -p "$dir/corpus"
	if [[ -d tests/fuzz/corpus/$t ]]; then
		cp -r "tests/fuzz/corpus/$t/." "$dir/corpus/"
	fi
	# A dictionary of the target's tokens (iSCSI keys, ...), where one exists.
	if [[ -f tests/fuzz/dict/$t.dict ]]; then
		dict=(-dict="tests/fuzz/dict/$t.dict")
	fi
	# -timeout: one input that runs this long is a hang; -rss_limit_mb bounds memory.
	"$BUILD/tests/fuzz/fuzz_$t" -max_total_time="$SECONDS_EACH" -print_final_stats=1 \
		-seed="$SEED" -timeout=25 -rss_limit_mb=2048 -artifact_prefix="$dir/" "${dict[@]}" \
		"$dir/corpus" \
		>"$WORK/$t.log" 2>&1 || st=$?
	echo "$st" >"$WORK/$t.status"
}

if [[ $SEED -eq 0 ]]; then
	seed_note="-seed=0 (libFuzzer picks one per target: its log's \"INFO: Seed:\" line)"
else
	seed_note="-seed=$SEED (repeat with FUZZ_SEED=$SEED or --seed $SEED)"
fi
echo "fuzz.sh: ${#TARGETS[@]} targets, ${SECONDS_EACH} s each, $JOBS at a time, $seed_note"
running=0
for t in "${TARGETS[@]}"; do
	if [[ $running -ge $JOBS ]]; then
		wait -n || true
		running=$((running - 1))
	fi
	run_one "$t" &
	running=$((running + 1))
done
wait || true

# The table, the testlog lines and the verdict.
python3 - "$WORK" "$BUILD/fuzz-testlog.json" "$SECONDS_EACH" "${TARGETS[@]}" <<'PY'
import json, os, re, sys
work, testlog, secs, targets = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
rows, failed = [], 0
with open(testlog, "w") as out:
    for t in targets:
        log = open(os.path.join(work, t + ".log"), errors="replace").read()
        try:
            st = int(open(os.path.join(work, t + ".status")).read())
        except (OSError, ValueError):
            st = -1
        stats = dict(re.findall(r"^stat::(\w+):\s*(\d+)", log, re.M))
        cov = re.findall(r"\bcov: (\d+) ft: (\d+)", log)
        corp = re.findall(r"\bcorp: (\d+)/", log)
        artifacts = sorted(f for f in os.listdir(os.path.join(work, t))
                           if re.match(r"(crash|leak|timeout|oom|slow-unit)-", f))
        ok = st == 0 and not artifacts and "stat::number_of_executed_units" in log
        failed += not ok
        rows.append((t, stats.get("number_of_executed_units", "-"),
                     stats.get("average_exec_per_sec", "-"),
                     cov[-1][0] if cov else "-", cov[-1][1] if cov else "-",
                     corp[-1] if corp else "-", stats.get("peak_rss_mb", "-"),
                     "ok" if ok else "FAIL (exit %d%s)" % (st, ", " + artifacts[0]
                                                           if artifacts else "")))
        out.write(json.dumps({"name": "fuzz_run_" + t, "suite": ["fuzzrun"],
                              "result": "OK" if ok else "FAIL",
                              "duration": float(secs)}) + "\n")
hdr = ("target", "execs", "exec/s", "cov", "ft", "corpus", "rss MB", "result")
w = [max(len(str(r[i])) for r in rows + [hdr]) for i in range(len(hdr))]
line = lambda r: "  ".join(str(v).rjust(w[i]) if 0 < i < 7 else str(v).ljust(w[i])
                           for i, v in enumerate(r))
print(line(hdr))
for r in rows:
    print(line(r))
print("fuzz.sh: %d targets, %d failed (logs and reproducers in %s)"
      % (len(rows), failed, work))
sys.exit(1 if failed else 0)
PY
