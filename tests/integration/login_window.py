#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""login_window.py --port PORT --iqn IQN [--host HOST] - log in to IQN with the raw client of
hostile_iscsi.py and print the session's command window as the target announced it in the
final Login Response, "window N" with N = MaxCmdSN - ExpCmdSN + 1 (RFC 7143 §4.2.2.1: the
commands the initiator may send), which no SCSI command has used yet: the target's queue_depth
for that session. Then log out. Exits non-zero when the login or logout fails.
"""

import argparse
import os
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hostile_iscsi as hi  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--iqn", required=True)
    a = ap.parse_args()
    try:
        s = hi.Session(a.host, a.port, a.iqn)
        rsp = s.login()
        window = (rsp.max_cmd_sn - rsp.exp_cmd_sn + 1) & 0xFFFFFFFF
        s.logout()
        s.close()
    except (hi.ProtocolError, hi.Closed, socket.timeout, OSError) as e:
        print("FAIL: login to %s: %s" % (a.iqn, e), file=sys.stderr)
        return 1
    print("window %d" % window)
    return 0


if __name__ == "__main__":
    sys.exit(main())
