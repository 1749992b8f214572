#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""login_window.py --port PORT --iqn IQN [--host HOST] [--header-digest] - log in to IQN with the
raw client of hostile_iscsi.py and print the session's command window as the target announced
it in the final Login Response, "window N" with N = MaxCmdSN - ExpCmdSN + 1 (RFC 7143 §4.2.2.1:
the commands the initiator may send), which no SCSI command has used yet: the target's
queue_depth for that session. Then log out. Exits non-zero when the login or logout fails.
With --header-digest the login offers HeaderDigest=CRC32C (for a target that requires it), and
the logout and its response carry a header digest (RFC 7143 §13.1), checked.
"""

import argparse
import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hostile_iscsi as hi  # noqa: E402


def crc32c(data):
    """CRC32C (Castagnoli, reflected 0x82F63B78), as iSCSI digests use it (RFC 7143 §13.1)."""
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def logout_digest(s):
    """Logout with a header digest; the response's digest must match its header."""
    itt = s.next_itt()
    bhs = hi.bhs_build(hi.OP_LOGOUT_REQ, hi.FINAL, immediate=True, itt=itt,
                       fields={20: 1 << 16, 24: s.cmd_sn, 28: s.exp_stat_sn})
    s.send(bhs + crc32c(bhs).to_bytes(4, "little"))
    p = s.recv_pdu()
    if p.opcode != hi.OP_LOGOUT_RSP or p.bhs[2] != 0:
        raise hi.ProtocolError("logout: got %r" % p)
    s._fill(4, time.monotonic() + s.default_timeout)
    if s._take(4) != crc32c(p.bhs).to_bytes(4, "little"):
        raise hi.ProtocolError("logout response: bad header digest")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--iqn", required=True)
    ap.add_argument("--header-digest", action="store_true")
    a = ap.parse_args()
    try:
        s = hi.Session(a.host, a.port, a.iqn)
        if a.header_digest:
            s.header_digest = "CRC32C"
        rsp = s.login()
        window = (rsp.max_cmd_sn - rsp.exp_cmd_sn + 1) & 0xFFFFFFFF
        if s.target_keys.get("HeaderDigest", "None") == "CRC32C":
            logout_digest(s)
        else:
            s.logout()
        s.close()
    except (hi.ProtocolError, hi.Closed, socket.timeout, OSError) as e:
        print("FAIL: login to %s: %s" % (a.iqn, e), file=sys.stderr)
        return 1
    print("window %d" % window)
    return 0


if __name__ == "__main__":
    sys.exit(main())
