#!/usr/bin/env python3
"""scsitgtd_reload.py PORT IQN CONFIG PID OUTFILE - a logged-in initiator across a reload.

Logs in to LUN 0 of IQN, checks REPORT LUNS, then rewrites CONFIG (adds LUN 1, offline LUN 2
stays absent), sends SIGHUP to PID and waits for "scsitgtd: reloaded" in OUTFILE. The same
session must then see REPORTED LUNS DATA HAS CHANGED (SPC-5 §5.14, 3Fh/0Eh) and the new LUN in
REPORT LUNS; an offline LUN answers NOT READY, LOGICAL UNIT NOT READY, OFFLINE (04h/12h).
"""
import os
import signal
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hostile_iscsi import Session  # noqa: E402


def report_luns(s):
    cdb = bytes([0xA0, 0, 0, 0, 0, 0]) + struct.pack(">I", 4096) + bytes(2)
    st, data, sense, _ = s.scsi(cdb, read_len=4096)
    return st, sense, data


def luns_of(data):
    n = struct.unpack_from(">I", data, 0)[0] // 8
    return sorted(struct.unpack_from(">H", data, 8 + 8 * i)[0] & 0x3FFF for i in range(n))


def wait_for(path, needle, count, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(path, encoding="utf-8", errors="replace") as f:
            if f.read().count(needle) >= count:
                return
        time.sleep(0.05)
    raise AssertionError("no %r in %s" % (needle, path))


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def main():
    port, iqn, config, pid, outfile = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), \
        sys.argv[5]
    s = Session("127.0.0.1", int(port), iqn, lun=0)
    s.login()
    st, sense, data = report_luns(s)
    if st != 0 or luns_of(data) != [0]:
        fail("REPORT LUNS before reload: status %d luns %r" % (st, luns_of(data) if st == 0
                                                                  else sense.hex()))
    with open(config, "a", encoding="utf-8") as f:
        f.write("\n[lun 1]\nbackend = ram\nsize = 32M\n"
                "\n[lun 2]\nbackend = null\nsize = 16M\noffline = yes\n")
    os.kill(pid, signal.SIGHUP)
    wait_for(outfile, "scsitgtd: reloaded", 1)

    # The next command of the logged-in nexus reports the change (REPORT LUNS itself is
    # exempt and would clear it, SPC-5 §6.33), so ask with TEST UNIT READY.
    st, _, sense, _ = s.scsi(bytes(6))
    if st != 0x02 or len(sense) < 14 or sense[2] & 0x0F != 0x06 or sense[12:14] != b"\x3f\x0e":
        fail("expected REPORTED LUNS DATA HAS CHANGED, got status %d sense %s"
             % (st, sense.hex()))
    st, sense, data = report_luns(s)
    if st != 0 or luns_of(data) != [0, 1, 2]:
        fail("REPORT LUNS after reload: status %d %r" % (st, luns_of(data) if st == 0
                                                         else sense.hex()))
    # The offline LUN: NOT READY, LOGICAL UNIT NOT READY, OFFLINE.
    s.lun = 2
    for _ in range(3):
        st, _, sense, _ = s.scsi(bytes(6))
        if not (st == 0x02 and sense[2] & 0x0F == 0x06):
            break
    if st != 0x02 or sense[2] & 0x0F != 0x02 or sense[12:14] != b"\x04\x12":
        fail("offline LUN: status %d sense %s" % (st, sense.hex()))
    s.lun = 0
    # PERSISTENT RESERVE OUT, REGISTER (SPC-5 §6.17.2): key 0x1122334455667788, APTPL set, so
    # that the LUN's pr_file is written.
    params = bytes(8) + struct.pack(">Q", 0x1122334455667788) + bytes(4) + bytes([0x01]) + bytes(3)
    cdb = bytes([0x5F, 0x00, 0, 0, 0]) + struct.pack(">I", len(params)) + bytes(1)
    st, _, sense, _ = s.scsi(cdb, write_data=params)
    if st != 0:
        fail("PR OUT REGISTER: status %d sense %s" % (st, sense.hex()))
    # Counters while logged in (SIGUSR1): this connection and this nexus are listed.
    os.kill(pid, signal.SIGUSR1)
    wait_for(outfile, " ffp rx_pdus ", 1)
    with open(outfile, encoding="utf-8", errors="replace") as f:
        out = f.read()
    conn = [ln for ln in out.splitlines() if ln.startswith("conn ") and " ffp " in ln]
    if not conn or int(conn[-1].split(" rx_pdus ")[1].split()[0]) < 5:
        fail("no connection counters for the logged-in session: %r" % conn)
    if ("session %s," % s.initiator) not in out:
        fail("no session counters for %s" % s.initiator)
    s.logout()
    print("ok: LUN 1 appeared with REPORTED LUNS DATA HAS CHANGED; LUN 2 offline")


if __name__ == "__main__":
    main()
