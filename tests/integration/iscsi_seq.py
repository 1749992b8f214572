#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""iscsi_seq.py - RFC 7143 rules of sequences and timers found broken by a review (session 35),
checked against a running minitarget with the raw client of hostile_iscsi.py (started by
iscsi_seq.sh). One check per subcommand; each prints "ok: ..." lines and exits non-zero on the
first failure. Every wait is a bounded poll for the event it needs (hostile_iscsi.WAIT).

  r2t-short              an R2T answered short with F=1: the WRITE fails (0Bh 0Ch/0Dh), no hang
  task-set-r2t           ABORT TASK SET, CLEAR TASK SET, LUN RESET, TARGET WARM RESET with an
                         R2T outstanding: act once it is answered, no Reject of that Data-Out
  task-set-silent        ABORT TASK SET whose R2T is never answered: acts at the TMF timeout
  task-set-later         an immediate ABORT TASK SET waiting for an R2T spares the WRITE sent after it
  task-set-broken        ABORT TASK SET whose R2T is answered with a broken Data-Out: acts then
  logout-cleanup         a Logout whose cleanup times out: Response 3 (§11.15.1)
  tas                    another session's LUN RESET answers our WRITE in the backend TASK
                         ABORTED (TAS 1, the default); after MODE SELECT TAS 0, no answer
  ping-cadence --timeout-ms MS
                         answered NOP-In pings come every nop_interval_ms, not nop_timeout_ms
"""

import argparse
import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hostile_iscsi as hi  # noqa: E402
from iscsi_rules import Failure, check  # noqa: E402

WAIT = hi.WAIT


def recv_by(s, deadline):
    """The next PDU but pings (answered) and Async Messages, by @deadline (time.monotonic());
    socket.timeout after it. Session.recv() would wait afresh after each ping."""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise socket.timeout("nothing by the deadline")
        p = s.recv_pdu(left)
        if s.answer_ping(p) or p.opcode == hi.OP_ASYNC:
            continue
        if p.opcode in (hi.OP_SCSI_RSP, hi.OP_NOP_IN, hi.OP_LOGOUT_RSP, hi.OP_REJECT):
            s.exp_stat_sn = (p.stat_sn + 1) & 0xFFFFFFFF
        return p


def sense_of(p):
    """(key, ASC, ASCQ) of a SCSI Response's sense data."""
    sense = p.data[2:]
    if (sense[0] & 0x7F) >= 0x72:
        return sense[1] & 0x0F, sense[2], sense[3]
    return sense[2] & 0x0F, sense[12], sense[13]


def write_r2t(s, lba, nbytes):
    """Send a WRITE(16) of @nbytes with no immediate data; return (itt, its first R2T)."""
    itt = s.next_itt()
    s.send(s.cmd_pdu(hi.lun_lba_cdb_write16(lba, nbytes // 512), nbytes, write=True, itt=itt))
    s.cmd_sn += 1
    r2t = recv_by(s, time.monotonic() + WAIT)
    check(r2t.opcode == hi.OP_R2T and r2t.itt == itt, "expected an R2T, got %r" % r2t)
    check(r2t.u32(40) == 0 and r2t.u32(44) == nbytes, "R2T for [%d, +%d), expected [0, +%d)"
          % (r2t.u32(40), r2t.u32(44), nbytes))
    return itt, r2t


def send_immediate_tmf(s, func):
    """Send an immediate TMF @func (no referenced task) to the session's LUN; its ITT."""
    titt = s.next_itt()
    s.send(hi.pdu_bytes(hi.bhs_build(
        hi.OP_TMF_REQ, hi.FINAL | func, immediate=True, lun=hi.lun_field(s.lun), itt=titt,
        fields={20: hi.RESERVED_TAG, 24: s.cmd_sn, 28: s.exp_stat_sn, 32: s.cmd_sn})))
    return titt


def cmd_r2t_short(a):
    """RFC 7143 §11.7.1: F=1 marks the last Data-Out of the sequence that answers an R2T. Half
    of the R2T's 8 KiB with F=1: nothing more comes; at ErrorRecoveryLevel 0 the WRITE must end
    (CHECK CONDITION, INCORRECT AMOUNT OF DATA) rather than wait for ever."""
    s = hi.Session(a.host, a.port, a.iqn, timeout=WAIT)
    s.login(initial_r2t="Yes", immediate="No")
    lba = 64
    itt, r2t = write_r2t(s, lba, 8192)
    s.send(s.data_out_pdu(itt, r2t.ttt, 0, 0, b"\x5a" * 4096, final=True))
    try:
        p = recv_by(s, time.monotonic() + WAIT)
    except socket.timeout:
        raise Failure("no response to the WRITE within %.0f s of its short F=1 sequence" % WAIT)
    check(p.opcode == hi.OP_SCSI_RSP and p.itt == itt, "expected the WRITE's response, got %r"
          % p)
    check(p.bhs[3] == hi.SAM_CHECK_CONDITION, "WRITE status 0x%02x, expected CHECK CONDITION"
          % p.bhs[3])
    got = sense_of(p)
    check(got == (0x0B, 0x0C, 0x0D), "sense %02x/%02x/%02x, expected 0b/0c/0d" % got)
    check(b"\x5a" * 16 not in s.read(lba, 16), "the short WRITE's data was written")
    st, _, _, _ = s.scsi(hi.cdb_tur())
    check(st == hi.SAM_GOOD, "TEST UNIT READY after it: status 0x%02x" % st)
    print("ok: an R2T answered short with F=1: CHECK CONDITION 0Bh 0Ch/0Dh, nothing written, "
          "the session goes on")
    s.logout()

def ping_collect(s, what):
    """A NOP-Out ping; every PDU that comes before its echo (pings answered)."""
    itt = s.next_itt()
    s.send(s.nop_pdu(itt=itt))
    got = []
    deadline = time.monotonic() + WAIT
    while True:
        try:
            p = recv_by(s, deadline)
        except socket.timeout:
            raise Failure("%s: no echo of our ping within %.0f s" % (what, WAIT))
        if p.opcode == hi.OP_NOP_IN and p.itt == itt:
            return got
        got.append(p)


def cmd_task_set_r2t(a):
    """RFC 7143 §11.5.1: the initiator MUST go on answering the R2Ts of the tasks an ABORT TASK
    SET or CLEAR TASK SET affects (ending the sequences early with F=1, as it SHOULD), and the
    target MUST wait for those answers before acting; the standard multi-task abort semantics
    (§4.2.3.3) ask the same of LUN RESET and the target resets. The order of the answers tells
    it without timing: a ping sent after the TMF is echoed before the TMF's response while the
    R2T is unanswered; once answered, the TMF responds and the Data-Out draws no Reject (a ping
    after it is echoed with nothing before), and the WRITE gets no response (it is aborted)."""
    s = hi.Session(a.host, a.port, a.iqn, timeout=WAIT)
    s.login(initial_r2t="Yes", immediate="No")
    for func, name, part in ((2, "ABORT TASK SET", 4096), (4, "CLEAR TASK SET", 4096),
                             (5, "LOGICAL UNIT RESET", 8192), (6, "TARGET WARM RESET", 4096)):
        lba = 128
        itt, r2t = write_r2t(s, lba, 8192)
        titt = send_immediate_tmf(s, func)
        early = [p for p in ping_collect(s, name) if p.opcode == 0x22 and p.itt == titt]
        check(not early, "%s answered before the outstanding R2T (TTT 0x%08x) was answered "
              "(RFC 7143 §11.5.1: the target MUST wait)" % (name, r2t.ttt))
        s.send(s.data_out_pdu(itt, r2t.ttt, 0, 0, b"\xa5" * part, final=True))
        got = []
        deadline = time.monotonic() + WAIT
        while not any(p.opcode == 0x22 and p.itt == titt for p in got):
            try:
                got.append(recv_by(s, deadline))
            except socket.timeout:
                raise Failure("%s: no response within %.0f s of the R2T's answer" % (name, WAIT))
        got += ping_collect(s, name)
        rsp = [p for p in got if p.opcode == 0x22][0]
        check(rsp.bhs[2] == 0, "%s: response %d, expected 0 (function complete)"
              % (name, rsp.bhs[2]))
        rej = [p for p in got if p.opcode == hi.OP_REJECT]
        check(not rej, "%s: the R2T's answer drew a Reject (reason 0x%02x)"
              % (name, rej[0].bhs[2] if rej else 0))
        check(not [p for p in got if p.itt == itt], "%s: the aborted WRITE was answered: %r"
              % (name, [p for p in got if p.itt == itt]))
        s.clear_unit_attention()
        check(b"\xa5" * 16 not in s.read(lba, 16), "%s: the aborted WRITE's data was written"
              % name)
        print("ok: %s with an R2T outstanding: answered after the R2T's answer (%d of 8192 "
              "bytes, F=1), no Reject, the WRITE aborted" % (name, part))
    s.logout()

def cmd_task_set_silent(a):
    """The wait of task-set-r2t is bounded: an initiator that never answers the R2T gets the
    ABORT TASK SET's response once the target's TMF timeout (iscsi_seq.sh: 1 s) has passed,
    and no response for the aborted WRITE."""
    s = hi.Session(a.host, a.port, a.iqn, timeout=WAIT)
    s.login(initial_r2t="Yes", immediate="No")
    itt, _ = write_r2t(s, 256, 8192)
    titt = send_immediate_tmf(s, 2)
    try:
        p = recv_by(s, time.monotonic() + WAIT)
    except socket.timeout:
        raise Failure("ABORT TASK SET with its R2T unanswered: no response within %.0f s" % WAIT)
    check(p.opcode == 0x22 and p.itt == titt and p.bhs[2] == 0,
          "expected the TMF's response (function complete), got %r" % p)
    check(not [q for q in ping_collect(s, "after the TMF") if q.itt == itt],
          "the aborted WRITE was answered")
    print("ok: ABORT TASK SET with its R2T never answered: function complete at the TMF "
          "timeout, the WRITE aborted")
    s.logout()


def cmd_task_set_later(a):
    """RFC 7143 §11.5.1: a task-set TMF acts on the commands with a CmdSN lower than its own.
    An immediate ABORT TASK SET waiting for an R2T's answer must spare a WRITE the initiator
    sends after it (CmdSN = the TMF's: immediate PDUs do not advance CmdSN), which is in the
    backend (fault delay, iscsi_seq.sh) when the TMF acts: that WRITE is answered GOOD."""
    import reinstate  # noqa: E402 (its fault counters: minitarget SIGUSR1)
    tgt = reinstate.Target(a.pid, a.out)
    s = hi.Session(a.host, a.port, a.iqn, timeout=WAIT)
    s.login(initial_r2t="Yes", immediate="Yes")
    itt, r2t = write_r2t(s, 128, 8192)
    titt = send_immediate_tmf(s, 2)
    litt = s.next_itt()
    s.send(s.cmd_pdu(hi.lun_lba_cdb_write16(300, 1), 512, write=True, data=b"L" * 512,
                     itt=litt))
    s.cmd_sn += 1
    tgt.wait_fault(lambda st: st["delaying"] == 1, "the later WRITE in the backend")
    s.send(s.data_out_pdu(itt, r2t.ttt, 0, 0, b"\xa5" * 4096, final=True))
    got = []
    deadline = time.monotonic() + WAIT
    while not (any(p.itt == titt for p in got) and any(p.itt == litt for p in got)):
        try:
            got.append(recv_by(s, deadline))
        except socket.timeout:
            raise Failure("after the TMF acted: %s within %.0f s (got %r)" % (
                "no response to the WRITE sent after it" if any(p.itt == titt for p in got)
                else "no TMF response", WAIT, got))
    rsp = [p for p in got if p.itt == litt][0]
    check(rsp.opcode == hi.OP_SCSI_RSP and rsp.bhs[3] == hi.SAM_GOOD,
          "the WRITE sent after the TMF: %r, expected GOOD" % rsp)
    check(not [p for p in got if p.itt == itt], "the aborted WRITE was answered")
    s.clear_unit_attention()
    check(s.read(300, 1) == b"L" * 512, "the WRITE sent after the TMF is not on the medium")
    print("ok: an immediate ABORT TASK SET waiting for an R2T spares the WRITE sent after it")
    s.logout()


def cmd_task_set_broken(a):
    """An ABORT TASK SET waiting for an R2T's answer, which comes broken (DataSN 3 for the
    first PDU of the sequence: Reject, the task takes no more data): the sequence has ended,
    so the TMF acts then, not at its timeout (iscsi_seq.sh: 10 minutes)."""
    s = hi.Session(a.host, a.port, a.iqn, timeout=WAIT)
    s.login(initial_r2t="Yes", immediate="No")
    itt, r2t = write_r2t(s, 128, 8192)
    titt = send_immediate_tmf(s, 2)
    check(not [p for p in ping_collect(s, "before the R2T's answer") if p.itt == titt],
          "ABORT TASK SET answered before the outstanding R2T was answered")
    s.send(s.data_out_pdu(itt, r2t.ttt, 3, 0, b"\xa5" * 4096, final=True))
    got = []
    deadline = time.monotonic() + WAIT
    while not any(p.itt == titt for p in got):
        try:
            got.append(recv_by(s, deadline))
        except socket.timeout:
            raise Failure("no TMF response within %.0f s of the broken Data-Out (got %r)"
                          % (WAIT, got))
    check([p for p in got if p.itt == titt][0].bhs[2] == 0, "TMF response not function complete")
    print("ok: ABORT TASK SET whose R2T is answered with a broken Data-Out: acts then")
    s.logout()


def cmd_logout_cleanup(a):
    """A WRITE the backend never completes, then Logout (close the session): after the
    target's logout_timeout_ms the answer must be Response 3, "cleanup failed" (§11.15.1),
    since the WRITE may still land; then the connection closes."""
    s = hi.Session(a.host, a.port, a.iqn, timeout=WAIT)
    s.login()
    itt = s.next_itt()
    s.send(s.cmd_pdu(hi.lun_lba_cdb_write16(0, 1), 512, write=True, data=b"h" * 512, itt=itt))
    s.cmd_sn += 1
    # The WRITE is in the backend once a command behind it is answered (CmdSN order, and the
    # hang rule holds writes only): a TEST UNIT READY.
    st, _, _, _ = s.scsi(hi.cdb_tur())
    check(st == hi.SAM_GOOD, "TEST UNIT READY behind the held WRITE: status 0x%02x" % st)
    litt = s.next_itt()
    s.send(hi.pdu_bytes(hi.bhs_build(hi.OP_LOGOUT_REQ, hi.FINAL, immediate=True, itt=litt,
                                     fields={20: 1 << 16, 24: s.cmd_sn, 28: s.exp_stat_sn})))
    p = recv_by(s, time.monotonic() + WAIT)
    check(p.opcode == hi.OP_LOGOUT_RSP and p.itt == litt, "expected the Logout Response, got %r"
          % p)
    check(p.bhs[2] == 3, "Logout Response %d with a WRITE still in the backend, expected 3 "
          "(cleanup failed, RFC 7143 §11.15.1)" % p.bhs[2])
    check(s.wait_closed(WAIT), "the connection stays open after the Logout Response")
    print("ok: a Logout whose cleanup timed out: Response 3 (cleanup failed), then closed")


def mode_tas(s, on):
    """MODE SENSE (10) the control page, then MODE SELECT (10) it back with TAS @on."""
    st, data, _, _ = s.scsi(bytes([0x5A, 0x08, 0x0A, 0, 0, 0, 0, 0, 64, 0]), read_len=64)
    check(st == hi.SAM_GOOD and len(data) >= 20 and data[8] == 0x0A,
          "MODE SENSE of the control page: status 0x%02x" % st)
    check(data[8 + 5] & 0x40 == (0x00 if on else 0x40), "TAS was not %d before" % (not on))
    page = bytearray(data[:8 + 12])
    page[0] = page[1] = page[2] = page[3] = 0
    page[8 + 5] = (page[8 + 5] & ~0x40) | (0x40 if on else 0)
    st, _, sense, _ = s.scsi(bytes([0x55, 0x10, 0, 0, 0, 0, 0, 0, len(page), 0]),
                             write_data=bytes(page))
    check(st == hi.SAM_GOOD, "MODE SELECT TAS %d: status 0x%02x sense %s"
          % (on, st, sense.hex()))


def held_write_reset(a, tgt, b, r, lba):
    """B's WRITE of @lba held by the backend (fault delay), then R's LUN RESET; the reset's
    response, and B's ITT of the WRITE."""
    witt = b.next_itt()
    b.send(b.cmd_pdu(hi.lun_lba_cdb_write16(lba, 1), 512, write=True, data=b"B" * 512,
                     itt=witt))
    b.cmd_sn += 1
    tgt.wait_fault(lambda st: st["delaying"] == 1, "B's WRITE in the backend")
    titt = send_immediate_tmf(r, 5)
    p = recv_by(r, time.monotonic() + WAIT)
    check(p.opcode == 0x22 and p.itt == titt and p.bhs[2] == 0,
          "LOGICAL UNIT RESET: expected function complete, got %r" % p)
    return witt


def cmd_tas(a):
    """SPC-5 §7.5.10, SAM-5 §5.6 (reviewj J1): with TAS 1, the default, a command of session B
    that session A's LOGICAL UNIT RESET aborts inside the backend is answered TASK ABORTED (40h)
    once the backend gives it back, rather than never (B would wait for its own timeout). The
    reset answers after that (it waits for the command to leave). With TAS 0 (MODE SELECT from
    B) the same WRITE ends without a response: a ping on B is echoed with nothing before."""
    import reinstate  # noqa: E402 (its fault counters: minitarget SIGUSR1)
    tgt = reinstate.Target(a.pid, a.out)
    r = hi.Session(a.host, a.port, a.iqn, timeout=WAIT)
    r.login()
    r.clear_unit_attention()
    b = hi.Session(a.host, a.port, a.iqn, timeout=WAIT)
    b.login(initial_r2t="No", immediate="Yes")
    b.clear_unit_attention()
    witt = held_write_reset(a, tgt, b, r, 64)
    try:
        p = recv_by(b, time.monotonic() + WAIT)
    except socket.timeout:
        raise Failure("TAS 1: B's WRITE aborted by A's LUN RESET got no response within %.0f s"
                      % WAIT)
    check(p.opcode == hi.OP_SCSI_RSP and p.itt == witt and p.bhs[2] == 0 and p.bhs[3] == 0x40,
          "TAS 1: B's WRITE: expected status TASK ABORTED (40h), got %r status 0x%02x"
          % (p, p.bhs[3]))
    print("ok: TAS 1: another session's LUN RESET answers our WRITE TASK ABORTED")
    b.clear_unit_attention()
    r.clear_unit_attention()
    mode_tas(b, False)
    r.clear_unit_attention()  # MODE PARAMETERS CHANGED
    witt = held_write_reset(a, tgt, b, r, 65)
    check(not [q for q in ping_collect(b, "after the reset") if q.itt == witt],
          "TAS 0: the aborted WRITE was answered")
    print("ok: TAS 0 (MODE SELECT): the same WRITE ends without a response")
    b.clear_unit_attention()
    mode_tas(b, True)
    b.logout()
    r.logout()


def cmd_ping_cadence(a):
    """--nop-interval short, --nop-timeout long: an initiator that answers each ping at once and
    sends nothing else is idle for nop_interval_ms after each answer, so pings come about every
    interval. Four pings must come before one nop_timeout_ms has passed (the bug: one ping per
    timeout), a margin no loaded machine breaks when the interval is a small part of it."""
    s = hi.Session(a.host, a.port, a.iqn, timeout=WAIT)
    s.login()
    timeout_s = a.timeout_ms / 1000.0
    pings = 0
    start = None
    while pings < 4:
        left = WAIT if start is None else start + timeout_s - time.monotonic()
        if left <= 0:
            break
        try:
            p = s.recv_pdu(left)
        except socket.timeout:
            break
        if s.answer_ping(p):
            pings += 1
            if start is None:
                start = time.monotonic()
    check(start is not None, "no NOP-In ping within %.0f s" % WAIT)
    took = time.monotonic() - start
    check(pings >= 4, "%d pings in the %.0f s (nop_timeout_ms) after the first one; an answered "
          "ping must leave the next one to nop_interval_ms" % (pings, timeout_s))
    print("ok: 4 answered pings %.1f s apart on average (nop_timeout_ms %d)"
          % (took / 3, a.timeout_ms))
    s.logout()


CHECKS = {"r2t-short": cmd_r2t_short, "task-set-r2t": cmd_task_set_r2t,
          "task-set-later": cmd_task_set_later, "task-set-broken": cmd_task_set_broken,
          "task-set-silent": cmd_task_set_silent, "logout-cleanup": cmd_logout_cleanup,
          "ping-cadence": cmd_ping_cadence, "tas": cmd_tas}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=sorted(CHECKS))
    for opt in ("--port", "--iqn"):
        ap.add_argument(opt, required=True, type=int if opt == "--port" else str)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--timeout-ms", type=int, default=15000)
    ap.add_argument("--pid", type=int, default=0)
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    try:
        CHECKS[a.cmd](a)
        return 0
    except (Failure, hi.ProtocolError, hi.Closed, socket.timeout) as e:
        print("FAIL: %s: %s" % (a.cmd, e), file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
