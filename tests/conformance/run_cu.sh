#!/bin/bash
# run_cu.sh MINITARGET CONFIG OUTDIR - libiscsi's iscsi-test-cu against minitarget.
#
# CONFIG names a line of configs.txt (next to this script): the LUN spec minitarget serves and
# the tests (name prefixes) run against it; a prefix written !PREFIX takes those tests out of
# this configuration (they run in another one), and a word --OPTION=VALUE is passed to
# minitarget as --OPTION VALUE.
#   iSCSI tests: a gate: every test must pass; a failure, a skip or an incomplete run fails.
#   SCSI tests:  a gate on failures: any failed test, an incomplete run, a dead target (or one
#                that did not exit cleanly on SIGTERM) or a crashed iscsi-test-cu fails; tests
#                that skip themselves (the LUN lacks what they need) are reported, not failed.
#                The per-test results and the failures are written to OUTDIR.
#
# Both use two initiator names (reservation and nexus-loss tests need a second I_T nexus) and
# pass the LUN URL twice (the MultipathIO tests open a second session to the "other path"). Runs
# are --dataloss and --allow-sanitize. Tests named in skip.txt ("NAME reason...") are not run.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../integration/lib.sh"
# shellcheck disable=SC2034 # used by lib.sh
IT_NAME=conformance-${2:-}
it_init "${1:-}"
MODE=${2:-}
OUTDIR=${3:-}
[[ -n "$MODE" && -n "$OUTDIR" ]] || it_fail "usage: $0 MINITARGET CONFIG OUTDIR"
mkdir -p "$OUTDIR"
it_need iscsi-test-cu python3 timeout

INIT_A=iqn.2026-11.org.libscsitgt:conformance-a
INIT_B=iqn.2026-11.org.libscsitgt:conformance-b
# Upper bound of one iscsi-test-cu run, so that a stuck target yields a report instead of a
# meson timeout. Generous: a whole family takes well under a minute on a healthy target.
CU_TIMEOUT=${CU_TIMEOUT:-600}

# NAME LUN-SPEC PREFIX... from configs.txt.
read -r -a CONF < <(grep -Ev '^[[:space:]]*(#|$)' "$HERE/configs.txt" | awk -v n="$MODE" '$1 == n')
[[ ${#CONF[@]} -ge 3 ]] || it_fail "no configuration '$MODE' in configs.txt"
LUN_SPEC=${CONF[1]}
PREFIXES=()
EXCLUDES=()
TARGET_OPTS=()
for p in "${CONF[@]:2}"; do
	if [[ $p == --*=* ]]; then
		TARGET_OPTS+=("${p%%=*}" "${p#*=}")
	elif [[ $p == !* ]]; then
		EXCLUDES+=("${p#!}")
	else
		PREFIXES+=("$p")
	fi
done
[[ ${#PREFIXES[@]} -ge 1 ]] || it_fail "configuration '$MODE' selects no tests"
FAMILY=${PREFIXES[0]%%.*}
for p in "${PREFIXES[@]}" "${EXCLUDES[@]}"; do
	[[ ${p%%.*} == "$FAMILY" ]] || it_fail "configuration '$MODE' mixes test families"
done

# The tests of the family, minus the skip file.
iscsi-test-cu -l | grep -E "^$FAMILY\\.[^.]+\\.[^.]+\$" | sort >"$IT_TMP/family.txt" ||
	it_fail "iscsi-test-cu -l lists no $FAMILY tests"
: >"$IT_TMP/all.txt"
for p in "${PREFIXES[@]}"; do
	awk -v p="$p" '$0 == p || index($0, p ".") == 1' "$IT_TMP/family.txt" >>"$IT_TMP/all.txt"
done
sort -u -o "$IT_TMP/all.txt" "$IT_TMP/all.txt"
for p in "${EXCLUDES[@]}"; do
	awk -v p="$p" '!($0 == p || index($0, p ".") == 1)' "$IT_TMP/all.txt" >"$IT_TMP/keep.txt"
	mv "$IT_TMP/keep.txt" "$IT_TMP/all.txt"
done
[[ -s "$IT_TMP/all.txt" ]] || it_fail "configuration '$MODE' names no test iscsi-test-cu has"
grep -Ev '^[[:space:]]*(#|$)' "$HERE/skip.txt" | awk '{ print $1 }' | sort >"$IT_TMP/skip.txt" || true
comm -23 "$IT_TMP/all.txt" "$IT_TMP/skip.txt" >"$IT_TMP/run.txt"
nskip=$(comm -12 "$IT_TMP/all.txt" "$IT_TMP/skip.txt" | wc -l)
if [[ $nskip -gt 0 ]]; then
	it_log "not run, listed in skip.txt:"
	comm -12 "$IT_TMP/all.txt" "$IT_TMP/skip.txt" | while read -r t; do
		grep -E "^${t}[[:space:]]" "$HERE/skip.txt" >&2
	done
fi

# Debian's libiscsi 1.19: once SCSI.CompareAndWrite.InvalidDataOutSize has run (and skipped
# part of itself), later 16-byte CDBs of the same process are corrupted on thin LUNs. It runs in
# a process of its own, first.
ALONE=SCSI.CompareAndWrite.InvalidDataOutSize
batches=()
if grep -qx "$ALONE" "$IT_TMP/run.txt"; then
	echo "$ALONE" >"$IT_TMP/alone.txt"
	batches+=(alone)
fi
grep -vx -e "$ALONE" "$IT_TMP/run.txt" >"$IT_TMP/rest.txt" || true
if [[ -s "$IT_TMP/rest.txt" ]]; then
	batches+=(rest)
fi

it_start --lun "$LUN_SPEC" "${TARGET_OPTS[@]}"
url=${IT_URLS[0]}
it_log "$(wc -l <"$IT_TMP/run.txt") $FAMILY tests against $url"

logs=()
crashed=
for b in "${batches[@]}"; do
	log=$OUTDIR/$MODE-$b.log
	logs+=("$log")
	st=0
	# MALLOC_PERTURB_ (set by meson test to shake out our own use-after-free bugs) is kept
	# away from the referee, which is not ours to debug.
	env -u MALLOC_PERTURB_ timeout -k 10 "$CU_TIMEOUT" \
		iscsi-test-cu -V --dataloss --allow-sanitize -i "$INIT_A" -I "$INIT_B" \
		-t "$IT_TMP/$b.txt" "$url" "$url" </dev/null >"$log" 2>&1 || st=$?
	it_log "iscsi-test-cu ($b, $(wc -l <"$IT_TMP/$b.txt") tests) exited with status $st; log: $log"
	if [[ $st -eq 124 || $st -eq 137 ]]; then
		crashed="iscsi-test-cu did not finish within ${CU_TIMEOUT}s"
	elif [[ $st -gt 128 ]]; then
		crashed="iscsi-test-cu was killed by signal $((st - 128))"
	fi
	if ! it_alive; then
		crashed="the target died during the $b run"
		break
	fi
done

report_st=0
allow_skips=()
[[ "$FAMILY" == iSCSI ]] || allow_skips=(--allow-skips)
python3 "$HERE/cu_report.py" --family "$FAMILY" "${allow_skips[@]}" \
	--results "$OUTDIR/$MODE-results.txt" --failures "$OUTDIR/$MODE-failures.txt" \
	"${logs[@]}" | tee "$OUTDIR/$MODE-summary.txt" || report_st=$?

if it_alive; then
	st=0
	it_stop TERM || st=$?
	[[ $st -eq 0 ]] || crashed="${crashed:+$crashed; }the target exited with status $st on SIGTERM"
fi
[[ -z "$crashed" ]] || it_fail "$crashed"

if [[ "$FAMILY" == iSCSI ]]; then
	# Every listed test must have run, and passed.
	ran=$(wc -l <"$OUTDIR/$MODE-results.txt")
	want=$(wc -l <"$IT_TMP/run.txt")
	[[ $ran -eq $want ]] || it_fail "$ran of $want tests reported"
	[[ $report_st -eq 0 ]] || it_fail "iSCSI conformance: failures or skips (see above)"
	it_log "PASS"
else
	[[ $report_st -le 1 ]] || it_fail "incomplete iscsi-test-cu output (see PROBLEM lines)"
	ran=$(wc -l <"$OUTDIR/$MODE-results.txt")
	want=$(wc -l <"$IT_TMP/run.txt")
	[[ $ran -eq $want ]] || it_fail "$ran of $want tests reported"
	[[ $report_st -eq 0 ]] ||
		it_fail "SCSI conformance: failures (see above and $OUTDIR/$MODE-failures.txt)"
	it_log "PASS (self-skipped tests are listed above as SKIPPED)"
fi
