#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""iscsi_rules.py - RFC 7143 rules an outside conformance suite found broken (issue 17), checked
against a running minitarget with the raw client of hostile_iscsi.py (started by iscsi_rules.sh).

One check per subcommand; each prints "ok: ..." lines and exits non-zero on the first failure.
Every wait is a bounded poll for the event it needs; no timing is asserted.

  chap-a   --offer LIST --expect ANSWER|refused   CHAP_A answer (RFC 7143 §6.2.1, §12.1.3)
  bad-name                   an InitiatorName with a line break: login 0x0200 (§4.2.7)
  forged-chap-login          a CHAP login refused for its response, InitiatorName with a line break
  chap-forged                a refused CHAP login whose CHAP_N and alias hold a forged line
  first-burst                FirstBurstLength above MaxBurstLength (§13.14): answer = in force
  resets                     TARGET WARM RESET keeps sessions, COLD RESET closes all (§11.5.1)
  data-out-sense             DataSN / offset / length errors: sense of §11.4.7.2
  stage-ffp                  a first Login Request with CSG=3: login 0x0200 (§11.12.3)
  discovery-window           a discovery session's window is the one it enforces (§4.2.2.1)
"""

import argparse
import os
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hostile_iscsi as hi  # noqa: E402

FORGED = "FORGED-LINE iscsi: login of iqn.2026-11.org.admin accepted"
WAIT = hi.WAIT  # bound of every wait for an answer or a close (hostile_iscsi.py)


class Failure(AssertionError):
    pass


def check(cond, msg):
    if not cond:
        raise Failure(msg)


def status_of(rsp):
    return (rsp.bhs[36] << 8) | rsp.bhs[37]


def login_step(s, csg, nsg, transit, pairs):
    """One login request; the response (status checked by the caller)."""
    s.next_itt()
    s.send(s.login_pdu(csg, nsg, transit, hi.text_keys(pairs)))
    rsp = s.recv_pdu(WAIT)
    check(rsp.opcode == hi.OP_LOGIN_RSP, "expected a Login Response, got %r" % rsp)
    s.exp_stat_sn = (rsp.stat_sn + 1) & 0xFFFFFFFF
    return rsp


def expect_refused(s, rsp, status, what):
    check(status_of(rsp) == status, "%s: login status 0x%04x, expected 0x%04x"
          % (what, status_of(rsp), status))
    check(s.wait_closed(WAIT), "%s: the connection stays open after the refusal" % what)


def chap_start(s, offer):
    """Security stage up to the target's CHAP_A answer: (response, keys)."""
    rsp = login_step(s, hi.STAGE_SECURITY, hi.STAGE_OPERATIONAL, False, [
        ("InitiatorName", s.initiator), ("SessionType", "Normal"), ("TargetName", s.iqn),
        ("AuthMethod", "CHAP")])
    check(status_of(rsp) == 0, "AuthMethod=CHAP refused: 0x%04x" % status_of(rsp))
    check(hi.parse_keys(rsp.data).get("AuthMethod") == "CHAP", "AuthMethod not CHAP")
    rsp = login_step(s, hi.STAGE_SECURITY, hi.STAGE_OPERATIONAL, False, [("CHAP_A", offer)])
    return rsp, hi.parse_keys(rsp.data)


def cmd_chap_a(a):
    s = hi.Session(a.host, a.port, a.iqn, timeout=WAIT)
    rsp, keys = chap_start(s, a.offer)
    if a.expect == "refused":
        expect_refused(s, rsp, 0x0201, "CHAP_A=%s" % a.offer)
        print("ok: CHAP_A=%s refused (0x0201)" % a.offer)
    else:
        check(status_of(rsp) == 0, "CHAP_A=%s: status 0x%04x" % (a.offer, status_of(rsp)))
        check(keys.get("CHAP_A") == a.expect, "CHAP_A=%s answered %r, expected %s"
              % (a.offer, keys.get("CHAP_A"), a.expect))
        print("ok: CHAP_A=%s answered %s" % (a.offer, a.expect))
    s.close()


def cmd_bad_name(a):
    for name, what in (("iqn.2026-11.org.libscsitgt:evil\n" + FORGED, "a line feed"),
                       ("iqn.2026-11.org.libscsitgt:evil\r\x1b[2K" + FORGED, "CR and CSI"),
                       ("iqn.2026-11.org.libscsitgt:evil\u2028" + FORGED, "U+2028")):
        s = hi.Session(a.host, a.port, a.iqn, initiator=name, timeout=WAIT)
        rsp = login_step(s, hi.STAGE_SECURITY, hi.STAGE_OPERATIONAL, True, [
            ("InitiatorName", name), ("SessionType", "Normal"), ("TargetName", a.iqn),
            ("AuthMethod", "None,CHAP")])
        expect_refused(s, rsp, 0x0200, "InitiatorName with %s" % what)
        print("ok: InitiatorName with %s: 0x0200" % what)
    s = hi.Session(a.host, a.port, a.iqn, timeout=WAIT)
    rsp = login_step(s, hi.STAGE_SECURITY, hi.STAGE_OPERATIONAL, True, [
        ("InitiatorName", s.initiator), ("SessionType", "Normal"),
        ("TargetName", a.iqn + "\n" + FORGED), ("AuthMethod", "None,CHAP")])
    expect_refused(s, rsp, 0x0200, "TargetName with a line feed")
    print("ok: TargetName with a line feed: 0x0200")


def cmd_forged_chap_login(a):
    """The issue's case: an InitiatorName holding a forged line in a CHAP login that fails for
    a wrong response. Refused either way: at the name (0x0200) or at the response (0x0201);
    iscsi_rules.sh then checks that no log line starts with the forged text."""
    name = "iqn.2026-11.org.libscsitgt:evil\n" + FORGED
    s = hi.Session(a.host, a.port, a.iqn, initiator=name, timeout=WAIT)
    rsp = login_step(s, hi.STAGE_SECURITY, hi.STAGE_OPERATIONAL, False, [
        ("InitiatorName", name), ("SessionType", "Normal"), ("TargetName", s.iqn),
        ("AuthMethod", "CHAP")])
    if status_of(rsp) != 0:
        expect_refused(s, rsp, 0x0200, "CHAP login of a forged InitiatorName")
        print("ok: CHAP login of a forged InitiatorName refused at the name (0x0200)")
        return
    rsp = login_step(s, hi.STAGE_SECURITY, hi.STAGE_OPERATIONAL, False, [("CHAP_A", "5")])
    check(status_of(rsp) == 0, "CHAP_A=5: 0x%04x" % status_of(rsp))
    rsp = login_step(s, hi.STAGE_SECURITY, hi.STAGE_OPERATIONAL, True, [
        ("CHAP_N", "it-user"), ("CHAP_R", "0x" + "00" * 16)])
    expect_refused(s, rsp, 0x0201, "wrong CHAP response")
    print("ok: CHAP login of a forged InitiatorName refused at the response (0x0201)")


def cmd_chap_forged(a):
    """A valid name, an alias and a CHAP_N with a forged line, a wrong response: 0x0201."""
    s = hi.Session(a.host, a.port, a.iqn, timeout=WAIT)
    rsp = login_step(s, hi.STAGE_SECURITY, hi.STAGE_OPERATIONAL, False, [
        ("InitiatorName", s.initiator), ("InitiatorAlias", "host\n" + FORGED),
        ("SessionType", "Normal"), ("TargetName", s.iqn), ("AuthMethod", "CHAP")])
    check(status_of(rsp) == 0, "AuthMethod=CHAP refused: 0x%04x" % status_of(rsp))
    rsp = login_step(s, hi.STAGE_SECURITY, hi.STAGE_OPERATIONAL, False, [("CHAP_A", "5")])
    check(status_of(rsp) == 0 and hi.parse_keys(rsp.data).get("CHAP_A") == "5",
          "CHAP_A=5 not accepted")
    rsp = login_step(s, hi.STAGE_SECURITY, hi.STAGE_OPERATIONAL, True, [
        ("CHAP_N", "user\n" + FORGED), ("CHAP_R", "0x" + "00" * 16)])
    expect_refused(s, rsp, 0x0201, "wrong CHAP response")
    print("ok: CHAP refused (0x0201) for a CHAP_N and an alias holding a forged line")


def full_login(s, op_pairs):
    """AuthMethod=None, then the operational stage with @op_pairs, into full feature phase."""
    rsp = login_step(s, hi.STAGE_SECURITY, hi.STAGE_OPERATIONAL, True, [
        ("InitiatorName", s.initiator), ("SessionType", "Normal"), ("TargetName", s.iqn),
        ("AuthMethod", "None")])
    check(status_of(rsp) == 0, "security stage: 0x%04x" % status_of(rsp))
    s.target_keys.update(hi.parse_keys(rsp.data))
    pairs = op_pairs
    for _ in range(4):
        rsp = login_step(s, hi.STAGE_OPERATIONAL, hi.STAGE_FFP, True, pairs)
        check(status_of(rsp) == 0, "operational stage: 0x%04x" % status_of(rsp))
        s.target_keys.update(hi.parse_keys(rsp.data))
        if rsp.flags & 0x80 and rsp.flags & 0x03 == hi.STAGE_FFP:
            break
        pairs = []
    else:
        raise Failure("the target never entered full feature phase")
    s.tsih = struct.unpack_from(">H", rsp.bhs, 14)[0]
    s.cmd_sn = rsp.exp_cmd_sn
    s.max_cmd_sn = rsp.max_cmd_sn
    s.mrdsl_target = int(s.target_keys.get("MaxRecvDataSegmentLength", hi.LOGIN_DSL_MAX))
    s.clear_unit_attention()
    return s.target_keys


OP_KEYS = [("HeaderDigest", "None"), ("DataDigest", "None"),
           ("MaxRecvDataSegmentLength", "262144"), ("InitialR2T", "No"),
           ("ImmediateData", "Yes"), ("MaxOutstandingR2T", "1"), ("ErrorRecoveryLevel", "0"),
           ("DefaultTime2Wait", "0"), ("DefaultTime2Retain", "0"), ("MaxConnections", "1"),
           ("DataPDUInOrder", "Yes"), ("DataSequenceInOrder", "Yes")]


def cmd_first_burst(a):
    """FirstBurstLength=262144 before MaxBurstLength=16384: the answer must be the value the
    session enforces; a WRITE whose immediate data fills the announced first burst is GOOD."""
    s = hi.Session(a.host, a.port, a.iqn, timeout=WAIT)
    keys = full_login(s, [("FirstBurstLength", "262144")] + OP_KEYS +
                      [("MaxBurstLength", "16384")])
    fbl, mbl = int(keys["FirstBurstLength"]), int(keys["MaxBurstLength"])
    check(mbl <= 16384, "MaxBurstLength answered %d above the offer 16384" % mbl)
    check(fbl <= mbl, "FirstBurstLength answered %d above MaxBurstLength %d (RFC 7143 §13.14)"
          % (fbl, mbl))
    print("ok: FirstBurstLength=262144, MaxBurstLength=16384 answered %d, %d" % (fbl, mbl))
    # Immediate data exactly as long as the announced first burst, the rest by R2T.
    s.immediate_data = keys.get("ImmediateData") == "Yes"
    s.first_burst = fbl
    data = bytes((i * 7 + 3) & 0xFF for i in range(65536))
    s.write(2048, data)
    check(s.read(2048, len(data) // 512) == data, "read back differs")
    print("ok: a 64 KiB WRITE with %d bytes of immediate data: GOOD, data read back" %
          min(fbl, s.mrdsl_target))
    s.logout()


def tmf(s, func):
    """Send a task management request (RFC 7143 §11.5); return the response PDU."""
    itt = s.next_itt()
    s.send(hi.pdu_bytes(hi.bhs_build(
        hi.OP_TMF_REQ, hi.FINAL | func, immediate=True, lun=hi.lun_field(s.lun), itt=itt,
        fields={20: hi.RESERVED_TAG, 24: s.cmd_sn, 28: s.exp_stat_sn, 32: s.cmd_sn})))
    while True:
        p = s.recv(WAIT)
        if p.opcode == 0x22 and p.itt == itt:  # Task Management Function Response
            s.exp_stat_sn = (p.stat_sn + 1) & 0xFFFFFFFF
            return p
        check(p.opcode == hi.OP_NOP_IN, "TMF %d: unexpected %r" % (func, p))


def tur_sense(s):
    st, _, sense, _ = s.scsi(hi.cdb_tur())
    if st != hi.SAM_CHECK_CONDITION:
        return st, None
    if (sense[0] & 0x7F) >= 0x72:
        return st, (sense[1] & 0x0F, sense[2], sense[3])
    return st, (sense[2] & 0x0F, sense[12], sense[13])


def wait_closed(s):
    """True when the target closes @s within WAIT; its NOP-In pings are answered meanwhile, so
    that only what the test does can close the connection."""
    deadline = time.monotonic() + WAIT
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        try:
            # recv_pdu, not Session.recv: that one waits afresh after each ping it answers.
            p = s.recv_pdu(left)
        except hi.Closed:
            return True
        except socket.timeout:
            return False
        s.answer_ping(p)


def cmd_resets(a):
    # WARM RESET (function 6): both sessions stay; the other one sees the reset.
    s1 = hi.Session(a.host, a.port, a.iqn, timeout=WAIT)
    s1.login()
    s2 = hi.Session(a.host, a.port, a.iqn, timeout=WAIT)
    s2.login()
    p = tmf(s1, 6)
    check(p.bhs[2] == 0, "TARGET WARM RESET: response %d, expected 0 (complete)" % p.bhs[2])
    s1.ping()
    s2.ping()
    st, sense = tur_sense(s2)
    check(st == hi.SAM_CHECK_CONDITION and sense is not None and sense[0] == 6 and
          sense[1] == 0x29, "after a warm reset the other session's TUR: status %d sense %r"
          % (st, sense))
    print("ok: TARGET WARM RESET: function complete, both sessions up, the other one gets "
          "UNIT ATTENTION %02xh/%02xh" % (sense[1], sense[2]))
    # COLD RESET (function 7): the response, then every connection of every session closes.
    s3 = hi.Session(a.host, a.port, a.iqn, timeout=WAIT)
    s3.login()
    p = tmf(s1, 7)
    check(p.bhs[2] == 0, "TARGET COLD RESET: response %d, expected 0 (complete)" % p.bhs[2])
    for name, s in (("issuing", s1), ("second", s2), ("third", s3)):
        check(wait_closed(s), "TARGET COLD RESET: the %s session's connection stays "
              "open (RFC 7143 §11.5.1)" % name)
        s.close()
    print("ok: TARGET COLD RESET: function complete, then all three sessions closed")
    # The target still serves new logins, with POWER ON reported.
    s4 = hi.Session(a.host, a.port, a.iqn, timeout=WAIT)
    s4.login()
    s4.ping()
    s4.logout()
    print("ok: a new session logs in after the cold reset")


def cmd_data_out_sense(a):
    s = hi.Session(a.host, a.port, a.iqn, timeout=WAIT)
    s.login(initial_r2t="Yes", immediate="No")
    pat = b"\x3c" * 4096
    for what, datasn, off, n, want in (
            ("DataSN 5", 5, 0, 4096, (0x0B, 0x47, 0x05)),
            ("BufferOffset 4096", 0, 4096, 4096, (0x0B, 0x47, 0x05)),
            ("9 KiB for an 8 KiB R2T", 0, 0, 9216, (0x0B, 0x0C, 0x0D))):
        itt = s.next_itt()
        lba = 4096
        s.send(s.cmd_pdu(hi.lun_lba_cdb_write16(lba, 16), 8192, write=True, itt=itt))
        s.cmd_sn += 1
        r2t = s.recv(WAIT)
        check(r2t.opcode == hi.OP_R2T and r2t.itt == itt, "%s: expected an R2T, got %r"
              % (what, r2t))
        s.send(s.data_out_pdu(itt, r2t.ttt, datasn, off, (pat * 3)[:n], final=n > 4096))
        p = s.recv(WAIT)
        check(p.opcode == hi.OP_REJECT and p.bhs[2] == hi.REJECT_PROTOCOL_ERROR,
              "%s: expected a Reject (protocol error), got %r" % (what, p))
        p = s.recv(WAIT)
        check(p.opcode == hi.OP_SCSI_RSP and p.itt == itt, "%s: expected the response, got %r"
              % (what, p))
        check(p.bhs[3] == hi.SAM_CHECK_CONDITION, "%s: status 0x%02x" % (what, p.bhs[3]))
        sense = p.data[2:]
        got = (sense[2] & 0x0F, sense[12], sense[13]) if (sense[0] & 0x7F) < 0x72 else \
            (sense[1] & 0x0F, sense[2], sense[3])
        check(got == want, "%s: sense %02x/%02x/%02x, expected %02x/%02x/%02x (RFC 7143 "
              "§11.4.7.2)" % ((what,) + got + want))
        check(b"\x3c" * 16 not in s.read(lba, 16), "%s: the broken data was written" % what)
        print("ok: %s: CHECK CONDITION %02xh %02xh/%02xh" % ((what,) + got))
    s.logout()


def cmd_stage_ffp(a):
    # CSG=3 names the Full Feature Phase, never a login stage (RFC 7143 §6.3, §11.12.3): such a
    # login could never transit (NSG must exceed CSG) and would hang until the login timeout.
    s = hi.Session(a.host, a.port, a.iqn, timeout=WAIT)
    rsp = login_step(s, hi.STAGE_FFP, 0, False, [
        ("InitiatorName", s.initiator), ("SessionType", "Normal"), ("TargetName", a.iqn)])
    expect_refused(s, rsp, 0x0200, "first Login Request with CSG=3")
    print("ok: a first Login Request with CSG=3: 0x0200")


def cmd_discovery_window(a):
    # The window the final Login Response opens (MaxCmdSN - ExpCmdSN + 1) is the one the
    # session keeps: after a completed SendTargets, the Text Response opens the same window.
    s = hi.Session(a.host, a.port, a.iqn, timeout=WAIT)
    rsp = login_step(s, hi.STAGE_SECURITY, hi.STAGE_FFP, True, [
        ("InitiatorName", s.initiator), ("SessionType", "Discovery"), ("AuthMethod", "None")])
    check(status_of(rsp) == 0, "discovery login: status 0x%04x" % status_of(rsp))
    if (rsp.flags & 0x83) != 0x83:
        rsp = login_step(s, hi.STAGE_OPERATIONAL, hi.STAGE_FFP, True, [
            ("HeaderDigest", "None"), ("DataDigest", "None")])
        check(status_of(rsp) == 0 and (rsp.flags & 0x83) == 0x83,
              "discovery login: no transit to Full Feature Phase")
    login_win = (rsp.u32(32) - rsp.u32(28) + 1) & 0xFFFFFFFF
    itt = s.next_itt()
    data = hi.text_keys([("SendTargets", "All")])
    s.send(hi.pdu_bytes(hi.bhs_build(hi.OP_TEXT_REQ, hi.FINAL, dsl=len(data), itt=itt,
                                     fields={20: 0xFFFFFFFF, 24: s.cmd_sn,
                                             28: (rsp.stat_sn + 1) & 0xFFFFFFFF}), data))
    p = s.recv_pdu(WAIT)
    check(p.opcode == hi.OP_TEXT_RSP, "SendTargets: got %r" % p)
    text_win = (p.u32(32) - p.u32(28) + 1) & 0xFFFFFFFF
    check(login_win == text_win, "the discovery login opened a window of %d, the Text Response"
          " %d with nothing outstanding" % (login_win, text_win))
    print("ok: a discovery session's window: %d at login and after SendTargets" % login_win)
    s.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--iqn", required=True)
    ap.add_argument("--offer")
    ap.add_argument("--expect")
    a = ap.parse_args()
    cmds = {"chap-a": cmd_chap_a, "bad-name": cmd_bad_name, "chap-forged": cmd_chap_forged,
            "forged-chap-login": cmd_forged_chap_login,
            "first-burst": cmd_first_burst, "resets": cmd_resets,
            "data-out-sense": cmd_data_out_sense, "stage-ffp": cmd_stage_ffp,
            "discovery-window": cmd_discovery_window}
    try:
        cmds[a.cmd](a)
    except (Failure, hi.ProtocolError, hi.Closed, socket.timeout, KeyError) as e:
        print("FAIL: %s: %s" % (a.cmd, e), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
