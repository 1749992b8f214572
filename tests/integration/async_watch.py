#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""async_watch.py - hold one normal session and report every Async Message the target sends
(RFC 7143 §11.9), for tests that must see them without depending on a packet capture.

usage: async_watch.py --port PORT --iqn IQN [--lun N] [--max-seconds S] [--probe]

Prints "ready" once logged in (POWER ON cleared), then one line per Async Message as it is
read from the socket, flushed at once:
    async event E lun L sense K/ASC/ASCQ     (AsyncEvent 0: SCSI asynchronous event)
    async event E lun L                      (any other AsyncEvent)
NOP-In pings are answered, so the session stays up; it ends when the target closes it, on
SIGTERM, or after --max-seconds (a bound for a forgotten watcher, not a measurement).
With --probe it only logs in and out (traffic for a capture to show that it runs).
"""

import argparse
import os
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hostile_iscsi as hi  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--iqn", required=True)
    ap.add_argument("--lun", type=int, default=0)
    ap.add_argument("--max-seconds", type=float, default=600.0)
    ap.add_argument("--probe", action="store_true")
    a = ap.parse_args()
    s = hi.Session(a.host, a.port, a.iqn, lun=a.lun, initiator="iqn.2026-11.org.libscsitgt:watch",
                   timeout=60.0)
    s.login()
    if a.probe:
        s.logout()
        return 0
    print("ready", flush=True)
    deadline = time.monotonic() + a.max_seconds
    while time.monotonic() < deadline:
        try:
            # Conn.recv_pdu, not Session.recv: Session.recv drops Async Messages. Pings are
            # answered here the same way.
            p = s.recv_pdu(min(5.0, max(0.1, deadline - time.monotonic())))
        except socket.timeout:
            continue
        except hi.Closed:
            print("closed", flush=True)
            return 0
        if s.answer_ping(p):
            continue
        if p.opcode != hi.OP_ASYNC:
            continue
        s.exp_stat_sn = (p.stat_sn + 1) & 0xFFFFFFFF
        event = p.bhs[36]
        lun = p.bhs[9] if p.bhs[8] == 0 else struct.unpack_from(">Q", p.bhs, 8)[0]
        line = "async event %d lun %d" % (event, lun)
        if event == 0 and len(p.data) >= 2 + 14:
            sd = p.data[2:]
            if (sd[0] & 0x7F) >= 0x72:
                k, asc, ascq = sd[1] & 0x0F, sd[2], sd[3]
            else:
                k, asc, ascq = sd[2] & 0x0F, sd[12], sd[13]
            line += " sense %x/%02x%02x" % (k, asc, ascq)
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
