#!/usr/bin/env python3
"""Session reinstatement (RFC 7143 §6.3.5) against minitarget or scsitgtd (reinstate.sh):

  stale_write  The old session has a WRITE inside the backend (fault=delay=...@write:count=1)
               when the same initiator port (InitiatorName and ISID, TSIH 0) logs in again:
               the new session's Login Response comes only once that WRITE has left the
               backend, and a WRITE of the new session is not overwritten by the old one.
  bound        The same with a WRITE held longer than the target's logout_timeout_ms: the
               login is refused with 0x0301 (service unavailable, RFC 7143 §11.13.5, the
               initiator retries) while the old WRITE is still in the backend, not accepted.
  fence        A WRITE held longer than logout_timeout_ms, its initiator gone: once the old
               session has ended with the WRITE still in the backend, every retried login of
               that I_T nexus is refused with 0x0301 until the WRITE has left (a login of the
               same initiator with another ISID, another nexus, is not); the first one after
               gets in, and the old WRITE landed before the new session's WRITE (read back).
  fence_hang   The same with a WRITE the backend never gives back: logins stay refused, and
               the target still shuts down cleanly with the fence listed (reinstate.sh checks
               its exit status; under ASan, no leak): the engine's give-up lifts it.
  two_tpg      One initiator port logs in through two portal groups (TPGT 1 and 2): two I_T
               nexuses, neither reinstates the other; a relogin through the first portal
               group reinstates only the first session.

After an ABORT TASK of the old WRITE, answered at the TMF timeout with the WRITE still in the
backend (reviewc F1: what Linux's error handler sends first, for a command that timed out):

  abort_stale  as stale_write: the reinstating login still waits for the aborted WRITE.
  abort_bound  as bound: still refused with 0x0301 while the aborted WRITE is there.
  abort_logout_wait   a Logout waits for the aborted WRITE, then answers 0 (closed).
  abort_logout_bound  a Logout whose logout_timeout_ms passes first answers 3 (cleanup failed).
  logout_relogin      (no ABORT TASK) a Logout answered 3 at logout_timeout_ms: a relogin of
                      the nexus right after is refused 0x0301 at once, not after the bound
                      a second time, and gets in once the WRITE has left.
  abort_lun_reset     ABORT TASK still waiting (long TMF timeout), then LOGICAL UNIT RESET:
                      the reset answers only once the WRITE has left (SAM-5 §7.7), and the
                      initiator's next WRITE is not overwritten by the old one.

  orphan_reset        a WRITE held longer than logout_timeout_ms, its connection gone: once
                      the session has ended with the WRITE left to the backend, another
                      initiator's LOGICAL UNIT RESET answers only once that WRITE has left
                      (SAM-5 §7.7: every task of the LU, whichever nexus it came from;
                      reviewd F2), and that initiator's next WRITE is not overwritten by it.

The fault backend's counters (minitarget prints them on SIGUSR1) say when the old WRITE is in
the backend and when it has left: the checks wait for those conditions, not for time.
"""
import argparse
import os
import re
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hostile_iscsi as hi  # noqa: E402

BOUND = 60.0  # seconds any awaited condition may take, even on a loaded machine
TMF_ABORT_TASK, TMF_LUN_RESET = 1, 5
OP_TMF_RSP = 0x22
FAULT_RE = re.compile(r"^fault lun 0: submitted (\d+) passed (\d+) delayed (\d+) hung (\d+) "
                      r"held (\d+) delaying (\d+)$")


def fail(msg):
    print("FAIL: " + msg, flush=True)
    sys.exit(1)


class Target:
    def __init__(self, pid, out):
        self.pid, self.out = pid, out

    def _lines(self):
        with open(self.out, errors="replace") as f:
            return [m.groups() for m in map(FAULT_RE.match, f.read().splitlines()) if m]

    def fault(self):
        """The fault counters of LUN 0 now: ask (SIGUSR1), wait for the new line."""
        before = len(self._lines())
        os.kill(self.pid, signal.SIGUSR1)
        deadline = time.monotonic() + BOUND
        while time.monotonic() < deadline:
            lines = self._lines()
            if len(lines) > before:
                keys = ("submitted", "passed", "delayed", "hung", "held", "delaying")
                return dict(zip(keys, map(int, lines[-1])))
            time.sleep(0.02)
        fail("minitarget printed no fault counters within %.0f s" % BOUND)

    def wait_fault(self, pred, what):
        deadline = time.monotonic() + BOUND
        while time.monotonic() < deadline:
            st = self.fault()
            if pred(st):
                return st
            time.sleep(0.05)
        fail("%s: not within %.0f s (fault counters %s)" % (what, BOUND, st))


def tmf(a, func, ref_itt=0xFFFFFFFF, ref_cmd_sn=0):
    """Send an immediate task management request of function @func; its ITT."""
    itt = a.next_itt()
    a.send(hi.pdu_bytes(hi.bhs_build(
        hi.OP_TMF_REQ, hi.FINAL | func, immediate=True, lun=hi.lun_field(a.lun), itt=itt,
        fields={20: ref_itt, 24: a.cmd_sn, 28: a.exp_stat_sn, 32: ref_cmd_sn})))
    return itt


def old_write_held(args, tgt, ini, abort=False, counter="delaying"):
    """A session of @ini whose WRITE 'O' of LBA 0 is inside the backend (its fault @counter
    says so); with @abort, aborted by an ABORT TASK the target answered (at its TMF timeout)
    with the WRITE still there."""
    a = hi.Session(args.host, args.port, args.iqn, initiator=ini)
    a.login()
    witt, wsn = a.next_itt(), a.cmd_sn
    a.send(a.cmd_pdu(hi.lun_lba_cdb_write16(0, 1), 512, write=True, data=b"O" * 512, itt=witt))
    a.cmd_sn = (a.cmd_sn + 1) & 0xFFFFFFFF
    a.held = (witt, wsn)
    tgt.wait_fault(lambda s: s[counter] == 1, "the old session's WRITE reaches the backend")
    print("old session: WRITE 'O' of LBA 0 held by the backend", flush=True)
    if abort:
        p = a.expect(OP_TMF_RSP, tmf(a, TMF_ABORT_TASK, witt, wsn), BOUND, "ABORT TASK")
        if tgt.fault()["delaying"] != 1:
            fail("the WRITE left before the ABORT TASK's answer: start the target with a "
                 "TMF timeout well below the backend's delay")
        print("ABORT TASK answered (response %d) with the WRITE still in the backend"
              % p.bhs[2], flush=True)
    return a


def same_port(args, a, ini, port=None):
    """A new session of @a's initiator port (name and ISID, TSIH 0), not logged in yet."""
    b = hi.Session(args.host, port or args.port, args.iqn, initiator=ini)
    b.isid = a.isid
    return b


def t_stale_write(args, tgt, abort=False):
    ini = "iqn.2026-12.test.reinstate:stale"
    a = old_write_held(args, tgt, ini, abort)
    b = same_port(args, a, ini)
    t0 = time.monotonic()
    b.login()
    st = tgt.fault()
    print("new session (same initiator port, TSIH 0) logged in after %.2f s; backend: %d "
          "delaying" % (time.monotonic() - t0, st["delaying"]), flush=True)
    if st["delaying"] != 0:
        fail("the reinstating login was answered while the old session's WRITE was still in "
             "the backend (RFC 7143 §6.3.5)")
    b.write(0, b"N" * 512)
    tgt.wait_fault(lambda s: s["delaying"] == 0 and s["delayed"] >= 1, "the old WRITE left")
    got = b.read(0, 1)[:512]
    if got != b"N" * 512:
        fail("LBA 0 holds %r after the new session's WRITE 'N': the old session's WRITE "
             "landed after it" % got[:4])
    print("ok: LBA 0 holds the new session's data", flush=True)
    b.logout()
    a.close()


def t_bound(args, tgt, abort=False):
    ini = "iqn.2026-12.test.reinstate:bound"
    a = old_write_held(args, tgt, ini, abort)
    b = same_port(args, a, ini)
    t0 = time.monotonic()
    try:
        b.login()
        fail("the reinstating login succeeded while the old WRITE is still in the backend")
    except hi.ProtocolError as e:
        if "0x0301" not in str(e):
            fail("the reinstating login: %s, not 0x0301" % e)
    waited = time.monotonic() - t0
    st = tgt.fault()
    print("reinstating login refused with 0x0301 after %.2f s; backend: %d delaying"
          % (waited, st["delaying"]), flush=True)
    if st["delaying"] != 1:
        fail("the old WRITE left before the refusal: the bound was not what ended the wait")
    check_waited(args, waited, "the refusal")
    b.close()
    a.close()
    # Once it has left, the initiator's retry gets in.
    tgt.wait_fault(lambda s: s["delaying"] == 0, "the old WRITE leaves the backend")
    c = same_port(args, a, ini)
    c.login()
    print("ok: the retry after the old WRITE left logged in", flush=True)
    c.logout()


def t_fence(args, tgt, logout=False):
    ini = "iqn.2026-12.test.reinstate:fence"
    a = old_write_held(args, tgt, ini)
    if logout:
        # A Logout the initiator gives up on: the connection goes while the Logout's
        # quiescence still waits (session.c's second quiescence, with its own fence).
        a.send(hi.pdu_bytes(hi.bhs_build(hi.OP_LOGOUT_REQ, hi.FINAL | 0, immediate=True,
                                         itt=a.next_itt(),
                                         fields={24: a.cmd_sn, 28: a.exp_stat_sn})))
    a.close()  # the initiator drops the connection: the session ends at the bound
    refused, other = 0, None
    deadline = time.monotonic() + BOUND
    while True:
        b = same_port(args, a, ini)
        t0 = time.monotonic()
        try:
            b.login()
        except hi.ProtocolError as e:
            if "0x0301" not in str(e):
                fail("a login of the nexus: %s, not 0x0301" % e)
            b.close()
            refused += 1
            if refused == 1:
                check_waited(args, time.monotonic() - t0, "the first refusal")
                # Another ISID is another I_T nexus (docs/iscsi.md): not fenced.
                other = hi.Session(args.host, args.port, args.iqn, initiator=ini)
                other.login()
                alive(other, "the session of the same initiator with another ISID")
            if time.monotonic() > deadline:
                fail("logins still refused %.0f s after the old WRITE" % BOUND)
            time.sleep(0.05)  # the initiator's retry pace; the loop ends on the counters
            continue
        break
    st = tgt.fault()
    print("login of the nexus admitted after %d refusals (0x0301); backend: %d delaying"
          % (refused, st["delaying"]), flush=True)
    b.write(0, b"N" * 512)
    tgt.wait_fault(lambda s: s["delaying"] == 0 and s["delayed"] >= 1, "the old WRITE left")
    got = b.read(0, 1)[:512]
    if got != b"N" * 512:
        fail("LBA 0 holds %r after the new session's WRITE 'N': the old session's WRITE, "
             "held past logout_timeout_ms, landed after it" % got[:4])
    if st["delaying"] != 0:
        fail("a login of the nexus got in while the old session's WRITE was still in the "
             "backend")
    if refused < 2:
        fail("%d refusal(s): no login was tried after the old session ended" % refused)
    print("ok: refused while the old WRITE was held, LBA 0 holds the new session's data",
          flush=True)
    b.logout()
    other.logout()


def refused_0301(b, what):
    try:
        b.login()
        fail("%s got in while the old WRITE is in the backend" % what)
    except hi.ProtocolError as e:
        if "0x0301" not in str(e):
            fail("%s: %s, not 0x0301" % (what, e))
    b.close()


def t_fence_hang(args, tgt):
    ini = "iqn.2026-12.test.reinstate:hang"
    a = old_write_held(args, tgt, ini, counter="held")
    a.close()
    t0 = time.monotonic()
    refused_0301(same_port(args, a, ini), "the first login")
    check_waited(args, time.monotonic() - t0, "the first refusal")
    refused_0301(same_port(args, a, ini), "the login after the old session ended")
    if tgt.fault()["held"] != 1:
        fail("the hung WRITE left the backend")
    print("ok: the nexus stays fenced while the backend keeps the WRITE; the target's "
          "shutdown (reinstate.sh) gives it up", flush=True)


def check_waited(args, waited, what):
    """@what came @waited s after its request: not before the target's logout_timeout_ms
    (--bound-ms; a margin for the loop's clock) had passed, or nothing was waited for."""
    if waited < args.bound_ms * 0.8 / 1000:
        fail("%s came after %.2f s, before the %d ms bound: the old session's commands were "
             "not waited for" % (what, waited, args.bound_ms))


def logout_response(a, tgt):
    """Logout (close the session): the response code, and the backend's delaying count when
    it came."""
    itt = a.next_itt()
    a.send(hi.pdu_bytes(hi.bhs_build(hi.OP_LOGOUT_REQ, hi.FINAL | 0, immediate=True, itt=itt,
                                     fields={24: a.cmd_sn, 28: a.exp_stat_sn})))
    p = a.expect(hi.OP_LOGOUT_RSP, itt, BOUND, "logout")
    return p.bhs[2], tgt.fault()["delaying"]


def t_abort_logout(args, tgt, bound):
    a = old_write_held(args, tgt, "iqn.2026-12.test.reinstate:logout", abort=True)
    t0 = time.monotonic()
    resp, delaying = logout_response(a, tgt)
    print("Logout response %d after %.2f s; backend: %d delaying"
          % (resp, time.monotonic() - t0, delaying), flush=True)
    if bound:
        check_waited(args, time.monotonic() - t0, "the Logout's answer")
        # RFC 7143 §11.15.1: the aborted WRITE may still land: not "closed successfully".
        if resp != 3 or delaying != 1:
            fail("Logout answered %d with the aborted WRITE %s the backend; expected 3 "
                 "(cleanup failed) at logout_timeout_ms" % (resp, "in" if delaying else "out of"))
    elif resp != 0 or delaying != 0:
        fail("Logout answered %d with the aborted WRITE %s the backend; expected 0 once it "
             "left" % (resp, "still in" if delaying else "out of"))
    print("ok: the Logout's answer covers the aborted WRITE", flush=True)
    a.close()


def t_logout_relogin(args, tgt):
    ini = "iqn.2026-12.test.reinstate:logout3"
    a = old_write_held(args, tgt, ini)
    resp, delaying = logout_response(a, tgt)
    if resp != 3 or delaying != 1:
        fail("Logout answered %d (backend: %d delaying); expected 3 with the WRITE held"
             % (resp, delaying))
    a.close()
    t0 = time.monotonic()
    refused_0301(same_port(args, a, ini), "the relogin after the Logout's Response 3")
    waited = time.monotonic() - t0
    delaying = tgt.fault()["delaying"]
    print("relogin refused with 0x0301 %.2f s after the Logout's answer; backend: %d delaying"
          % (waited, delaying), flush=True)
    # The Logout's quiescence answered: the session ends without a second wait (reviewd N1).
    # reinstate.sh holds the WRITE for less than twice the bound: a session that waited the
    # bound a second time would still be there when the WRITE leaves, and the relogin, held
    # until it ends, would be answered (let in) only then. Refused while the WRITE is still
    # held is an order of events, not a time limit.
    if delaying != 1:
        fail("the relogin was answered only after the old WRITE left the backend (%.2f s "
             "after the Logout's Response 3): the session waited its %d ms bound a second "
             "time" % (waited, args.bound_ms))
    tgt.wait_fault(lambda s: s["delaying"] == 0, "the old WRITE leaves the backend")
    c = same_port(args, a, ini)
    c.login()
    print("ok: refused at once after Response 3, let in once the WRITE left", flush=True)
    c.logout()


def t_abort_lun_reset(args, tgt):
    a = old_write_held(args, tgt, "iqn.2026-12.test.reinstate:lunreset")
    t_abort = tmf(a, TMF_ABORT_TASK, *a.held)
    t_reset = tmf(a, TMF_LUN_RESET)
    answered = set()
    while answered != {t_abort, t_reset}:
        p = a.recv(BOUND)
        if p.opcode != OP_TMF_RSP or p.itt not in (t_abort, t_reset):
            fail("unexpected %r while waiting for the TMF answers" % p)
        delaying = tgt.fault()["delaying"]
        what = "LOGICAL UNIT RESET" if p.itt == t_reset else "ABORT TASK"
        print("%s answered (response %d); backend: %d delaying" % (what, p.bhs[2], delaying),
              flush=True)
        if delaying != 0:
            fail("%s answered while the aborted WRITE was still in the backend (SAM-5 §7.7)"
                 % what)
        answered.add(p.itt)
    a.clear_unit_attention()
    a.write(0, b"N" * 512)
    got = a.read(0, 1)[:512]
    if got != b"N" * 512:
        fail("LBA 0 holds %r after the WRITE 'N' that followed the reset" % got[:4])
    print("ok: the reset answered after the aborted WRITE left; LBA 0 holds the new data",
          flush=True)
    a.logout()


def t_orphan_reset(args, tgt):
    a = old_write_held(args, tgt, "iqn.2026-12.test.reinstate:orphan")
    a.close()
    # The session ends at its bound with the WRITE still in the backend (the target logs it).
    err = args.out.replace("target.out", "target.err")
    deadline = time.monotonic() + BOUND
    while "left to them" not in open(err, errors="replace").read():
        if time.monotonic() > deadline:
            fail("the old session did not end within %.0f s" % BOUND)
        time.sleep(0.05)
    if tgt.fault()["delaying"] != 1:
        fail("the old WRITE left before its session ended: give it a longer delay")
    print("old session ended with its WRITE left to the backend", flush=True)
    b = hi.Session(args.host, args.port, args.iqn, initiator="iqn.2026-12.test.reinstate:other")
    b.login()
    b.clear_unit_attention()
    p = b.expect(OP_TMF_RSP, tmf(b, TMF_LUN_RESET), BOUND, "LOGICAL UNIT RESET")
    delaying = tgt.fault()["delaying"]
    print("another initiator's LOGICAL UNIT RESET answered (response %d); backend: %d delaying"
          % (p.bhs[2], delaying), flush=True)
    if delaying != 0:
        fail("the reset answered while the ended session's WRITE was still in the backend")
    b.clear_unit_attention()
    b.write(0, b"N" * 512)
    got = b.read(0, 1)[:512]
    if got != b"N" * 512:
        fail("LBA 0 holds %r after the WRITE 'N' that followed the reset" % got[:4])
    print("ok: the reset answered after the ended session's WRITE left; LBA 0 holds the new "
          "data", flush=True)
    b.logout()


def alive(s, name):
    st = s.scsi(hi.cdb_tur(), timeout=10)[0]
    if st != 0:
        fail("%s: TEST UNIT READY status 0x%02x" % (name, st))


def t_two_tpg(args, tgt):
    ini = "iqn.2026-12.test.reinstate:mpio"
    a = hi.Session(args.host, args.port, args.iqn, initiator=ini)
    a.login()
    b = same_port(args, a, ini, args.port2)
    b.login()
    tags = (a.target_keys.get("TargetPortalGroupTag"), b.target_keys.get("TargetPortalGroupTag"))
    print("same ISID through TPGT %s (TSIH %d) and TPGT %s (TSIH %d)"
          % (tags[0], a.tsih, tags[1], b.tsih), flush=True)
    if tags[0] == tags[1]:
        fail("both portals have portal group tag %s" % tags[0])
    try:
        alive(a, "the first portal group's session after the second's login")
    except (hi.Closed, OSError) as e:
        fail("the login through another portal group closed the first session (%s)" % e)
    alive(b, "the second portal group's session")
    # Through the first portal group again: that nexus is reinstated, the other one stays.
    c = same_port(args, a, ini)
    c.login()
    if not a.wait_closed(BOUND):
        fail("the relogin through the first portal group did not close its old session")
    alive(b, "the second portal group's session after the first's reinstatement")
    alive(c, "the reinstated session")
    print("ok: one I_T nexus per portal group", flush=True)
    b.logout()
    c.logout()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("test", choices=tuple(TESTS))
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--port2", type=int)
    p.add_argument("--iqn", required=True)
    p.add_argument("--pid", type=int)
    p.add_argument("--out", help="the target's stdout (fault counters)")
    p.add_argument("--bound-ms", type=int, default=0,
                   help="the target's logout_timeout_ms: a refusal or Logout answer comes after")
    args = p.parse_args()
    tgt = Target(args.pid, args.out) if args.pid else None
    TESTS[args.test](args, tgt)


TESTS = {
    "stale_write": t_stale_write,
    "bound": t_bound,
    "fence": t_fence,
    "logout_drop": lambda args, tgt: t_fence(args, tgt, logout=True),
    "fence_hang": t_fence_hang,
    "two_tpg": t_two_tpg,
    "abort_stale": lambda args, tgt: t_stale_write(args, tgt, abort=True),
    "abort_bound": lambda args, tgt: t_bound(args, tgt, abort=True),
    "abort_logout_wait": lambda args, tgt: t_abort_logout(args, tgt, bound=False),
    "abort_logout_bound": lambda args, tgt: t_abort_logout(args, tgt, bound=True),
    "abort_lun_reset": t_abort_lun_reset,
    "logout_relogin": t_logout_relogin,
    "orphan_reset": t_orphan_reset,
}


if __name__ == "__main__":
    main()
