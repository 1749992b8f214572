#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""acl_client.py - raw iSCSI logins for the access-control and limit tests (acl*.sh,
hostile_limits.sh), on hostile_iscsi.py's client. Python's standard library only.

libiscsi cannot choose its source address; this client can (--src), which is how the tests
reach the target from 127.0.0.2 as well as from 127.0.0.1 (Linux routes all of 127/8 to lo).

  acl_client.py login     --port P --iqn IQN --initiator NAME [--src ADDR]
        one normal login; prints "ok" or "refused 0xSSSS"; exit 0 when logged in, 1 when
        refused, 2 on anything else
  acl_client.py discover  --port P --initiator NAME [--src ADDR]
        a discovery session and SendTargets=All; prints the TargetName values, one per line
  acl_client.py luns      --port P --iqn IQN --initiator NAME [--src ADDR]
        log in and print the LUNs of REPORT LUNS (SELECT REPORT 00h), space-separated
  acl_client.py immediate --port P --iqn IQN --initiator NAME --count N --expect-ok K
        log in (InitialR2T=Yes) and send N immediate WRITE(16) commands of one block without
        their data: the first K get an R2T (each then waits, holding a CmdSN window slot), the
        rest a Reject "immediate command reject" (0x06, RFC 7143 §11.17.1); then send the data
        and check that every accepted WRITE completes with GOOD
  acl_client.py hold      --port P --iqn IQN --initiator NAME --count N --expect-ok K
                          [--status 0xSSSS] [--distinct-names]
        open N sessions at once (all from NAME, or NAME-1..NAME-N with --distinct-names) and
        keep them; the first K must log in and the rest be refused with the status; then close
        one of the accepted sessions and check that a new login gets its place
"""

import argparse
import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hostile_iscsi as hi  # noqa: E402

_create_connection = socket.create_connection


def bind_source(src):
    """Make hostile_iscsi's connections leave from @src."""
    if src:
        hi.socket.create_connection = lambda addr, timeout=None: _create_connection(
            addr, timeout=timeout, source_address=(src, 0))


def try_login(args, initiator):
    """A Session in full feature phase, or the login status (int) that refused it."""
    s = hi.Session("127.0.0.1", args.port, args.iqn, initiator=initiator, timeout=hi.WAIT)
    try:
        s.login()
        return s
    except hi.ProtocolError as e:
        s.close()
        msg = str(e)
        if "status 0x" in msg:
            return int(msg.rsplit("0x", 1)[1], 16)
        raise
    except hi.Closed:
        s.close()
        return -1


def cmd_login(args):
    r = try_login(args, args.initiator)
    if isinstance(r, int):
        print("refused 0x%04x" % r if r >= 0 else "refused (connection closed)")
        return 1
    r.scsi(hi.cdb_tur())
    r.logout()
    r.close()
    print("ok")
    return 0


def cmd_luns(args):
    s = hi.Session("127.0.0.1", args.port, args.iqn, initiator=args.initiator, timeout=hi.WAIT)
    # The nexus may see no LUN 0: no TEST UNIT READY after login. REPORT LUNS needs no
    # existing LUN (SPC-5 §6.33); a unit attention it may still report is taken and retried.
    s.clear_unit_attention = lambda: None
    s.login()
    cdb = bytes([0xA0, 0, 0, 0, 0, 0]) + (4096).to_bytes(4, "big") + bytes(2)
    for _ in range(4):
        st, data, sense, _ = s.scsi(cdb, read_len=4096)
        if st == hi.SAM_GOOD:
            break
        if st != 0x02 or len(sense) < 3 or sense[2] & 0x0F != 0x06:
            raise hi.ProtocolError("REPORT LUNS: status 0x%02x sense %s" % (st, sense.hex()))
    else:
        raise hi.ProtocolError("REPORT LUNS: unit attentions did not clear")
    n = int.from_bytes(data[0:4], "big") // 8
    ids = []
    for i in range(n):
        e = data[8 + 8 * i:16 + 8 * i]
        ids.append(e[1] if e[0] >> 6 == 0 else ((e[0] & 0x3F) << 8) | e[1])
    print(" ".join(str(i) for i in ids))
    s.logout()
    s.close()
    return 0


def cmd_immediate(args):
    s = hi.Session("127.0.0.1", args.port, args.iqn, initiator=args.initiator, timeout=hi.WAIT)
    s.login(initial_r2t="Yes", immediate="No")
    pending, rejects = {}, 0
    for i in range(args.count):
        itt = s.next_itt()
        cdb = hi.lun_lba_cdb_write16(4096 + i, 1)
        # Immediate: the CmdSN is not advanced (RFC 7143 §3.2.2.1).
        s.send(s.cmd_pdu(cdb, 512, write=True, itt=itt, immediate=True))
        p = s.recv()
        if p.opcode == hi.OP_R2T and p.itt == itt:
            pending[itt] = p
        elif p.opcode == hi.OP_REJECT and p.bhs[2] == 0x06:
            rejects += 1
        else:
            print("FAIL: command %d: unexpected %r" % (i, p))
            return 1
    print("accepted %d, rejected %d" % (len(pending), rejects))
    if len(pending) != args.expect_ok or rejects != args.count - args.expect_ok:
        print("FAIL: expected %d accepted" % args.expect_ok)
        return 1
    for itt, r2t in pending.items():
        s.send(s.data_out_pdu(itt, r2t.ttt, 0, 0, bytes([0x5A]) * 512))
    for _ in range(len(pending)):
        p = s.recv()
        if p.opcode != hi.OP_SCSI_RSP or p.bhs[3] != hi.SAM_GOOD or p.itt not in pending:
            print("FAIL: WRITE did not complete with GOOD: %r" % p)
            return 1
    s.logout()
    s.close()
    print("every accepted WRITE completed")
    return 0


def cmd_discover(args):
    s = hi.Session("127.0.0.1", args.port, "", initiator=args.initiator, timeout=hi.WAIT)
    s.next_itt()
    text = hi.text_keys([("InitiatorName", args.initiator), ("SessionType", "Discovery"),
                         ("AuthMethod", "None")])
    rsp = s.login_exchange(s.login_pdu(hi.STAGE_SECURITY, hi.STAGE_OPERATIONAL, True, text))
    stage = (rsp.flags & 0x03) if rsp.flags & 0x80 else hi.STAGE_SECURITY
    if stage != hi.STAGE_OPERATIONAL:
        raise hi.ProtocolError("discovery: no operational stage")
    op = hi.text_keys([("HeaderDigest", "None"), ("DataDigest", "None"),
                       ("MaxRecvDataSegmentLength", "65536")])
    rsp = s.login_exchange(s.login_pdu(hi.STAGE_OPERATIONAL, hi.STAGE_FFP, True, op))
    s.cmd_sn = rsp.exp_cmd_sn
    itt = s.next_itt()
    s.send(hi.pdu_bytes(hi.bhs_build(hi.OP_TEXT_REQ, 0x80, immediate=True,
                                     dsl=len(b"SendTargets=All\0"), itt=itt,
                                     fields={20: 0xFFFFFFFF, 24: s.cmd_sn,
                                             28: s.exp_stat_sn}),
                        b"SendTargets=All\0"))
    rsp = s.recv_pdu()
    if rsp.opcode != 0x24:  # Text Response (RFC 7143 §11.11)
        raise hi.ProtocolError("SendTargets: got %r" % rsp)
    for kv in rsp.data.split(b"\0"):
        if kv.startswith(b"TargetName="):
            print(kv[len(b"TargetName="):].decode())
    s.close()
    return 0


def cmd_hold(args):
    held, refused = [], []
    try:
        for i in range(args.count):
            name = "%s-%d" % (args.initiator, i + 1) if args.distinct_names else args.initiator
            r = try_login(args, name)
            (refused if isinstance(r, int) else held).append(r)
        print("held %d, refused %s" % (len(held), ["0x%04x" % r for r in refused]))
        if len(held) != args.expect_ok:
            print("FAIL: expected %d sessions to log in" % args.expect_ok)
            return 1
        if any(r != args.status for r in refused):
            print("FAIL: expected every further login to get 0x%04x" % args.status)
            return 1
        # Every held session still works (the refusals did not disturb them).
        for s in held:
            s.scsi(hi.cdb_tur())
        if held:
            held.pop(0).close()
            name = "%s-new" % args.initiator if args.distinct_names else args.initiator
            r = None
            # The target notices the closed connection a moment later: retry until it has
            # (bounded generously: a loaded machine may take seconds).
            deadline = time.monotonic() + 60
            while True:
                r = try_login(args, name)
                if not isinstance(r, int) or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
            if isinstance(r, int):
                print("FAIL: the freed place was not given to a new login (0x%04x)" % r)
                return 1
            held.append(r)
            print("a new login took the freed place")
        return 0
    finally:
        for s in held:
            s.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=["login", "discover", "luns", "immediate", "hold"])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--iqn", default="")
    ap.add_argument("--initiator", required=True)
    ap.add_argument("--src", default=None)
    ap.add_argument("--count", type=int, default=1)
    ap.add_argument("--expect-ok", type=int, default=1)
    ap.add_argument("--status", type=lambda v: int(v, 0), default=0x0302)
    ap.add_argument("--distinct-names", action="store_true")
    args = ap.parse_args()
    bind_source(args.src)
    try:
        return {"login": cmd_login, "discover": cmd_discover, "luns": cmd_luns,
                "immediate": cmd_immediate, "hold": cmd_hold}[args.cmd](args)
    except (hi.ProtocolError, hi.Closed, OSError) as e:
        print("error: %s" % e)
        return 2


if __name__ == "__main__":
    sys.exit(main())
