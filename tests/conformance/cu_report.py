#!/usr/bin/env python3
"""Summarise the output of libiscsi's iscsi-test-cu (run with -V).

iscsi-test-cu counts a skipped test as passed in CUnit's totals; the only trace of a skip is a
"[SKIPPED] ..." line in the test's output, printed at the normal and verbose log levels. This
script reads one or more logs, classifies every test as passed, failed or skipped, checks the
counts against CUnit's own "Run Summary", and prints a summary line.

usage: cu_report.py --family SCSI [--allow-skips] [--failures FILE] [--results FILE] LOG...
"""
import argparse
import re
import sys

SUITE_RE = re.compile(r"^Suite: (\S+)")
TEST_RE = re.compile(r"^  Test: (\S+) \.\.\.(.*)$")
ASSERT_RE = re.compile(r"^    \d+\. \S+:\d+ +- ")
SUMMARY_RE = re.compile(r"^\s+tests\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)")
SUITES_RE = re.compile(r"^\s+suites\s+(\d+)\s+(\d+)\s+n/a\s+(\d+)\s+(\d+)")


class Test:
    def __init__(self, name):
        self.name = name
        self.result = None  # "passed" | "failed" | "skipped"
        self.skipped = False
        self.skip_reason = ""
        self.details = []


def parse(path, family):
    tests = []
    summary = None
    suites_failed = 0
    suite = "?"
    cur = None
    with open(path, errors="replace") as f:
        for raw in f:
            line = raw.rstrip("\n")
            m = SUITE_RE.match(line)
            if m:
                suite = m.group(1)
                cur = None
                continue
            m = TEST_RE.match(line)
            if m:
                cur = Test("%s.%s.%s" % (family, suite, m.group(1)))
                tests.append(cur)
                line = m.group(2)
            m = SUMMARY_RE.match(line)
            if m:
                summary = tuple(int(x) for x in m.groups())
                continue
            m = SUITES_RE.match(line)
            if m:
                suites_failed = int(m.group(3))
                continue
            if cur is None:
                continue
            if cur.result is None:
                if "[SKIPPED]" in line:
                    cur.skipped = True
                    if not cur.skip_reason:
                        cur.skip_reason = line.split("[SKIPPED]", 1)[1].strip()
                elif "[FAILED]" in line:
                    cur.details.append(line.strip())
                if line.startswith("passed"):
                    cur.result = "skipped" if cur.skipped else "passed"
                elif line.startswith("FAILED"):
                    cur.result = "failed"
            elif cur.result == "failed" and ASSERT_RE.match(line):
                # Output of the next setup step may follow on the same line.
                cur.details.append(re.split(r"\s{4,}", line.strip())[0])
    return tests, summary, suites_failed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--family", required=True)
    ap.add_argument("--failures", help="write the failed tests with their messages here")
    ap.add_argument("--results", help="write 'name result' for every test here")
    ap.add_argument("--allow-skips", action="store_true",
                    help="skipped tests are reported but do not fail (exit 1 on failures only)")
    ap.add_argument("logs", nargs="+")
    args = ap.parse_args()

    all_tests = []
    problems = []
    suites_failed = 0
    for log in args.logs:
        tests, summary, sf = parse(log, args.family)
        suites_failed += sf
        all_tests += tests
        if summary is None:
            problems.append("%s: no CUnit run summary (did iscsi-test-cu crash?)" % log)
            continue
        total, ran, passed, failed, inactive = summary
        got_failed = sum(1 for t in tests if t.result == "failed")
        got_ok = sum(1 for t in tests if t.result in ("passed", "skipped"))
        if ran != len(tests) or failed != got_failed or passed != got_ok:
            problems.append("%s: parsed %d tests (%d ok, %d failed) but CUnit ran %d "
                            "(%d passed, %d failed)" % (log, len(tests), got_ok, got_failed,
                                                      ran, passed, failed))
        for t in tests:
            if t.result is None:
                problems.append("%s: %s has no result" % (log, t.name))

    counts = {"passed": 0, "failed": 0, "skipped": 0}
    for t in all_tests:
        if t.result in counts:
            counts[t.result] += 1

    if args.results:
        with open(args.results, "w") as f:
            for t in all_tests:
                extra = (" " + t.skip_reason) if t.result == "skipped" else ""
                f.write("%s %s%s\n" % (t.name, t.result, extra))
    if args.failures:
        with open(args.failures, "w") as f:
            for t in all_tests:
                if t.result == "failed":
                    f.write("%s\n" % t.name)
                    for d in t.details[:6]:
                        f.write("    %s\n" % d)

    for t in all_tests:
        if t.result == "failed":
            print("FAILED  %s  %s" % (t.name, t.details[0] if t.details else ""))
    for t in all_tests:
        if t.result == "skipped":
            print("SKIPPED %s  %s" % (t.name, t.skip_reason))
    for p in problems:
        print("PROBLEM %s" % p)
    if suites_failed:
        print("PROBLEM %d suite(s) failed to initialise" % suites_failed)
    print("%s: %d tests, %d passed, %d failed, %d skipped" % (
        args.family, len(all_tests), counts["passed"], counts["failed"], counts["skipped"]))
    # Exit status: 0 all passed, 1 failures or (without --allow-skips) skips, 2 the logs are
    # incomplete or inconsistent.
    if problems or suites_failed:
        return 2
    if counts["failed"] or (counts["skipped"] and not args.allow_skips):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
