# SPDX-License-Identifier: MIT
"""conn_workers - sessions whose connections run on worker loops end to end (issue 18).

Drives a target started with --workers 2 --conn-workers 1 with the
hand-written initiator of hostile_iscsi.py, where it needs control a real initiator does not
give (two sessions held open at once, the same ISID twice):

  two    two sessions open at once (so on two workers), each writes its own blocks and reads
         both back; logout, then both log in again and read the data back
  reinstate
         session A logs in; B logs in with A's InitiatorName and ISID and TSIH 0 (on the other
         worker while A holds the first): the target closes A (RFC 7143 §6.3.5) and B works
  login_reset
         200 logins reset (RST) right after their last Login Request, while the worker waits
         for home to make the session's nexus (review30 F2: the worker read the session's
         nexus as home wrote it, a ThreadSanitizer report); then a session works

Usage: conn_workers.py HOST PORT IQN LUN TEST (LUN: a RAM LUN of 512-byte blocks, written)
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hostile_iscsi as hi  # noqa: E402

BLOCKS = 8  # 4 KiB per session
LUN = 0


def pattern(tag):
    return bytes((tag * 37 + i) & 0xFF for i in range(BLOCKS * 512))


def check(cond, what):
    if not cond:
        raise hi.ProtocolError(what)


def test_two(host, port, iqn):
    a = hi.Session(host, port, iqn, lun=LUN)
    b = hi.Session(host, port, iqn, lun=LUN)
    a.login()
    b.login()
    a.write(100, pattern(1))
    b.write(200, pattern(2))
    for s in (a, b):
        check(s.read(100, BLOCKS) == pattern(1), "read back of A's blocks differs")
        check(s.read(200, BLOCKS) == pattern(2), "read back of B's blocks differs")
    a.logout()
    b.logout()
    a.close()
    b.close()
    # Log in again (new sessions, placed again) and find the data.
    for tag, lba in ((1, 100), (2, 200)):
        s = hi.Session(host, port, iqn, lun=LUN)
        s.login()
        check(s.read(lba, BLOCKS) == pattern(tag), "data lost across logout and relogin")
        s.logout()
        s.close()


def test_reinstate(host, port, iqn):
    a = hi.Session(host, port, iqn, lun=LUN)
    a.login()
    a.write(300, pattern(3))
    b = hi.Session(host, port, iqn, lun=LUN, initiator=a.initiator)
    b.isid = a.isid
    b.login()
    check(b.tsih != a.tsih, "the reinstated session kept TSIH %u" % a.tsih)
    check(a.wait_closed(hi.WAIT), "the old session's connection was not closed")
    check(b.read(300, BLOCKS) == pattern(3), "read through the new session differs")
    b.logout()
    b.close()
    a.close()


def test_login_reset(host, port, iqn):
    for _ in range(200):
        s = hi.Session(host, port, iqn, lun=LUN)
        s.next_itt()
        s.login_exchange(s.login_pdu(hi.STAGE_SECURITY, hi.STAGE_OPERATIONAL, True,
                                     s.security_text()))
        s.send(s.login_pdu(hi.STAGE_OPERATIONAL, hi.STAGE_FFP, True, s.operational_text()))
        s.abort()
    s = hi.Session(host, port, iqn, lun=LUN)
    s.login()
    s.write(400, pattern(4))
    check(s.read(400, BLOCKS) == pattern(4), "read back after the reset logins differs")
    s.logout()
    s.close()


def main():
    global LUN
    host, port, iqn, test = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[5]
    LUN = int(sys.argv[4])
    {"two": test_two, "reinstate": test_reinstate, "login_reset": test_login_reset}[test](host, port, iqn)
    print("conn_workers %s: ok" % test)


if __name__ == "__main__":
    main()
