#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""workers-cpu.py - where the target's CPU goes with worker threads (issue 18 goal).

Usage: bench/workers-cpu.py [--build DIR] [--seconds S] [--warmup S] [--runs N]
                            [--modes "w0 w2 w2conn w1conn"] [--port P]

For each mode a minitarget with one null LUN (1 GiB) serves two libiscsi iscsi-perf sessions
(libiscsi-bin), each reading 4 KiB blocks at random with 32 requests in flight (-r -m 32):
  w0      --workers 0: everything on the home loop
  w2      --workers 2 with SCSITGT_CONN_WORKERS=0: sockets on the workers, the protocol and
          the core on home (the opt-out)
  w2conn  --workers 2: each connection on its worker end to end (the default)
  w1conn  --workers 1: both connections on the one worker, end to end (the worker machinery
          of w2conn with the wake-up sharing of w0: separates the two costs)
After --warmup seconds of iscsi-perf output (it prints one line per second), the CPU time of
every thread of the target (/proc/PID/task/*/stat utime+stime) is sampled, and again --seconds
lines later; the IOs of the window are the sum of both sessions' "iops current" figures of those
seconds. Printed per mode (median of --runs): IOPS, target CPU per IO (us), the home thread's
share of the target's CPU, the ratio of CPU per IO to w0's, and the context switches per IO of
all the target's threads (voluntary: a loop went to sleep in epoll_wait; involuntary: a thread
was preempted), from /proc/PID/task/*/status over the same window.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

CLK = os.sysconf("SC_CLK_TCK")
IQN = "iqn.2026-11.org.libscsitgt:minitarget"


def thread_cpu(pid):
    """{tid: (comm, cpu seconds)} of every thread of @pid."""
    out = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                s = f.read()
        except OSError:
            continue
        comm = s[s.index("(") + 1:s.rindex(")")]
        fields = s[s.rindex(")") + 2:].split()
        out[int(tid)] = (comm, (int(fields[11]) + int(fields[12])) / CLK)
    return out


def thread_switches(pid):
    """(voluntary, involuntary) context switches summed over every thread of @pid."""
    vol = invol = 0
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/status" % (pid, tid)) as f:
                for line in f:
                    if line.startswith("voluntary_ctxt_switches:"):
                        vol += int(line.split()[1])
                    elif line.startswith("nonvoluntary_ctxt_switches:"):
                        invol += int(line.split()[1])
        except OSError:
            continue
    return vol, invol


def perf_seconds(path):
    """The 'iops current' figures iscsi-perf printed so far, one per second."""
    try:
        with open(path, "rb") as f:
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return []
    return [int(m) for m in re.findall(r"iops current (\d+)", text)]


def wait_lines(paths, n, procs, bound=600):
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        if all(len(perf_seconds(p)) >= n for p in paths):
            return
        for p in procs:
            if p.poll() is not None:
                sys.exit("iscsi-perf ended early")
        time.sleep(0.05)
    sys.exit("iscsi-perf too slow")


def run(args, mode, tmp):
    env = dict(os.environ)
    env.pop("SCSITGT_EXPERIMENTAL_CONN_WORKERS", None)
    workers = {"w0": "0", "w1conn": "1"}.get(mode, "2")
    env["SCSITGT_CONN_WORKERS"] = "1" if mode in ("w2conn", "w1conn") else "0"
    portal = "127.0.0.1:%d" % args.port
    tgt_out = os.path.join(tmp, "target.out")
    tgt = subprocess.Popen([os.path.join(args.build, "examples/minitarget"), "--portal", portal,
                            "--workers", workers, "--lun", "0:null:1G"], env=env,
                           stdout=open(tgt_out, "w"), stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while "iscsi://" not in open(tgt_out).read():
            if tgt.poll() is not None or time.monotonic() > deadline:
                sys.exit("minitarget did not start")
            time.sleep(0.05)
        url = "iscsi://%s/%s/0" % (portal, IQN)
        outs, perfs = [], []
        for i in range(2):
            o = os.path.join(tmp, "perf%d.out" % i)
            outs.append(o)
            perfs.append(subprocess.Popen(
                ["iscsi-perf", "-r", "-m", "32", "-i", "iqn.2026-11.org.libscsitgt:bench%d" % i,
                 url], stdout=open(o, "w"), stderr=subprocess.STDOUT))
        wait_lines(outs, args.warmup, perfs)
        c0 = thread_cpu(tgt.pid)
        s0 = thread_switches(tgt.pid)
        wait_lines(outs, args.warmup + args.seconds, perfs)
        c1 = thread_cpu(tgt.pid)
        s1 = thread_switches(tgt.pid)
        ios = sum(sum(perf_seconds(o)[args.warmup:args.warmup + args.seconds]) for o in outs)
        for p in perfs:
            p.terminate()
            p.wait()
    finally:
        tgt.terminate()
        tgt.wait()
    per = {tid: c1[tid][1] - c0.get(tid, (None, 0.0))[1] for tid in c1}
    total = sum(per.values())
    home = per.get(tgt.pid, 0.0)
    return {"iops": ios / args.seconds, "cpu_us_per_io": total / ios * 1e6,
            "home_share": home / total if total else 0.0,
            "vcs_per_io": (s1[0] - s0[0]) / ios, "ics_per_io": (s1[1] - s0[1]) / ios,
            "threads": {c1[t][0] + ("(home)" if t == tgt.pid else ""): round(v, 2)
                        for t, v in per.items() if v > 0.005}}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(os.path.dirname(__file__), "..", "build"))
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--modes", default="w0 w2 w2conn")
    ap.add_argument("--port", type=int, default=3299)
    args = ap.parse_args()
    res = {m: [] for m in args.modes.split()}
    with tempfile.TemporaryDirectory() as tmp:
        # Modes alternate within each run, so that drift of the machine hits them alike.
        for r in range(args.runs):
            for m in res:
                x = run(args, m, tmp)
                res[m].append(x)
                print("run %d %-6s %8.0f IOPS %6.1f us/IO home %5.1f%% cs/IO %.3f+%.3f %s" % (
                    r + 1, m, x["iops"], x["cpu_us_per_io"], 100 * x["home_share"],
                    x["vcs_per_io"], x["ics_per_io"], x["threads"]), flush=True)
    base = statistics.median(x["cpu_us_per_io"] for x in res.get("w0", [])) \
        if "w0" in res else None
    print("%-7s %9s %10s %10s %9s %13s" % ("mode", "IOPS", "CPU us/IO", "home share", "vs w0",
                                          "cs/IO vol+inv"))
    for m, xs in res.items():
        cpu = statistics.median(x["cpu_us_per_io"] for x in xs)
        print("%-7s %9.0f %10.1f %9.1f%% %9s %6.3f+%.3f" % (
            m, statistics.median(x["iops"] for x in xs), cpu,
            100 * statistics.median(x["home_share"] for x in xs),
            "%.2fx" % (cpu / base) if base else "-",
            statistics.median(x["vcs_per_io"] for x in xs),
            statistics.median(x["ics_per_io"] for x in xs)))


if __name__ == "__main__":
    main()
