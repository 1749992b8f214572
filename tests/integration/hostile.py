#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""hostile.py - hostile-client tests of a running iSCSI target (started by hostile.sh).

Each attack talks raw iSCSI (hostile_iscsi.py) to the target; after each one the target must
(a) still run, (b) keep its resident memory within a generous bound over the baseline, and
(c) still serve a normal initiator on another connection: iscsi-readcapacity16 (libiscsi), a
write with qemu-io (QEMU's libiscsi driver) and a read-back with iscsi_readback (plain READ(16))
of a 1 MiB region whose content the test tracks, so that an attack that corrupts data shows.

Attacks that the target should answer are checked by decoding the answer: Login Response
status class, Reject reason and the rejected header it carries, SCSI status.

Slow attacks (an unfinished login, 200 idle connections, a login dribbled one byte at a time)
start first and run in the background; their outcome is checked at the end, so the whole suite
stays short. Waits are generous upper bounds that poll for the event; no timing is asserted.

usage: hostile.py --pid PID --url iscsi://HOST:PORT/IQN/LUN --readback PATH [--only NAME,...]
"""

import argparse
import os
import random
import socket
import subprocess
import sys
import threading
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hostile_iscsi as hi  # noqa: E402

MIB = 1 << 20
RSS_SLACK = 64 * MIB       # resident memory allowed over the baseline after any attack
VM_SLACK = 768 * MIB       # address space allowed over the baseline while a 1 GiB EDTL waits
LOGIN_TIMEOUT_BOUND = 45   # seconds after which an unfinished login must have been dropped
                           # (--login-timeout-bound: hostile.sh starts the target with a
                           # short login timeout so that the background attacks end sooner)
BS = 512
CHECK_REGION = 1 * MIB     # bytes [0, 1 MiB) of the LUN: written only by the health checks
SLOT = 64 * 1024
ATTACK_LBA = (16 * MIB) // BS  # attacks write at 16 MiB and above, away from CHECK_REGION
OP_TMF_RSP = 0x22              # Task Management Function Response (RFC 7143 §11.6)


def log(msg):
    print("[hostile] %s" % msg, file=sys.stderr, flush=True)


class Failure(AssertionError):
    pass


def check(cond, msg):
    if not cond:
        raise Failure(msg)


class Target:
    def __init__(self, pid, url, readback):
        self.pid = pid
        self.url = url
        rest = url[len("iscsi://"):]
        hostport, self.iqn, lun = rest.split("/")
        self.host, port = hostport.rsplit(":", 1)
        self.port = int(port)
        self.lun = int(lun)
        self.readback = readback
        self.model = bytearray(CHECK_REGION)  # what the LUN's first MiB must contain
        self.nchecks = 0
        self.rss_base = None
        self.vm_base = None

    def status_kib(self, key):
        with open("/proc/%d/status" % self.pid) as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
        raise Failure("no %s in /proc/%d/status" % (key, self.pid))

    def rss(self):
        return self.status_kib("VmRSS")

    def vmsize(self):
        return self.status_kib("VmSize")

    def alive(self):
        try:
            with open("/proc/%d/stat" % self.pid) as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return False
        return state not in ("Z", "X")

    def session(self, **kw):
        s = hi.Session(self.host, self.port, self.iqn, self.lun, **kw)
        return s

    def raw(self, timeout=hi.WAIT):
        return hi.Conn(self.host, self.port, timeout)

    def run(self, argv, timeout=60, binary=False):
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=timeout)
        if p.returncode != 0:
            raise Failure("%s exited %d: %s" % (argv[0], p.returncode,
                                               p.stderr.decode(errors="replace")[-400:]))
        return p.stdout if binary else p.stdout.decode(errors="replace")

    def health(self, tag):
        """The three checks after an attack: alive, bounded memory, a correct initiator works."""
        check(self.alive(), "%s: the target died" % tag)
        rss = self.rss()
        if self.rss_base is not None:
            check(rss <= self.rss_base + RSS_SLACK,
                  "%s: VmRSS %d KiB, baseline %d KiB (bound +%d MiB)" % (
                      tag, rss // 1024, self.rss_base // 1024, RSS_SLACK // MIB))
        out = self.run(["iscsi-readcapacity16", self.url])
        check("Total size:%d" % (64 * MIB) in out,
              "%s: iscsi-readcapacity16 says %r" % (tag, out))
        # Write a fresh pattern into one 64 KiB slot of the check region with qemu-io ...
        slot = self.nchecks % (CHECK_REGION // SLOT)
        pat = 1 + (self.nchecks * 37) % 254
        self.nchecks += 1
        self.run(["qemu-io", "-f", "raw", "-c",
                  "write -P 0x%02x %d %d" % (pat, slot * SLOT, SLOT), self.url])
        self.model[slot * SLOT:(slot + 1) * SLOT] = bytes([pat]) * SLOT
        # ... and read the whole region back with another initiator.
        back = self.run([self.readback, self.url, str(CHECK_REGION)], binary=True)
        if back != bytes(self.model):
            bad = next(i for i in range(min(len(back), CHECK_REGION))
                       if back[i] != self.model[i]) if len(back) == CHECK_REGION else -1
            raise Failure("%s: read-back of the check region differs (length %d, first "
                          "difference at byte %d)" % (tag, len(back), bad))
        check(self.alive(), "%s: the target died during the health check" % tag)
        return rss


# --------------------------------------------------------------------------------------------
# Background attacks: started first, judged at the end.

class HalfBhs:
    """Half a BHS, then silence: the target must drop the connection at its login timeout."""

    name = "half_bhs"

    def start(self, t):
        self.c = t.raw()
        self.c.send(hi.bhs_build(hi.OP_LOGIN_REQ, 0x87, immediate=True)[:24])
        self.t0 = time.monotonic()

    def finish(self, t):
        left = self.t0 + LOGIN_TIMEOUT_BOUND - time.monotonic()
        dropped = self.c.wait_closed(max(left, 0.1))
        self.c.close()
        check(dropped, "half_bhs: an unfinished login was still open after %d s"
              % LOGIN_TIMEOUT_BOUND)
        return "dropped by the target"


class IdleConns:
    """200 connections opened and left idle before login."""

    name = "idle_200"
    N = 200

    def start(self, t):
        self.conns = []
        for _ in range(self.N):
            self.conns.append(t.raw())
        self.t0 = time.monotonic()
        # All of them must have been accepted: a correct initiator still gets served.
        t.health("idle_200 (while open)")

    def finish(self, t):
        deadline = self.t0 + LOGIN_TIMEOUT_BOUND
        open_ = list(self.conns)
        while open_ and time.monotonic() < deadline:
            open_ = [c for c in open_ if not c.closed_now()]
            if open_:
                time.sleep(0.2)
        for c in self.conns:
            c.close()
        check(not open_, "idle_200: %d of %d idle connections still open after %d s"
              % (len(open_), self.N, LOGIN_TIMEOUT_BOUND))
        return "all %d dropped by the login timeout" % self.N


class SlowDrip:
    """A valid login whose first PDU comes one byte every 50 ms, in a thread: it must succeed
    (and the session work) or be dropped cleanly by the login timeout."""

    name = "slow_drip"

    def start(self, t):
        self.result = None
        self.error = None
        self.th = threading.Thread(target=self.body, args=(t,), daemon=True)
        self.th.start()

    def body(self, t):
        try:
            s = t.session(initiator="iqn.2026-11.x:d", timeout=LOGIN_TIMEOUT_BOUND)
            try:
                s.login(dribble_first=0.05)
            except hi.Closed:
                self.result = "dropped during the login (timeout), cleanly"
                return
            data = s.read(0, 8)
            check(len(data) == 8 * BS, "slow_drip: short read")
            s.logout()
            self.result = "login succeeded, READ and logout worked"
        except BaseException as e:  # reported by finish()
            self.error = "%s: %s" % (type(e).__name__, e)

    def finish(self, t):
        self.th.join(LOGIN_TIMEOUT_BOUND + 30)
        check(not self.th.is_alive(), "slow_drip: the dribbled login never ended")
        check(self.error is None, "slow_drip: %s" % self.error)
        return self.result


# --------------------------------------------------------------------------------------------
# Pre-login attacks.

def expect_drop_or_login_reject(c, what, timeout=hi.WAIT):
    """After a bad pre-login PDU: EOF, or a Login Response with a failure status then EOF."""
    try:
        p = c.recv_pdu(timeout)
    except hi.Closed:
        return "dropped"
    except socket.timeout:
        raise Failure("%s: neither an answer nor a drop within %.0f s" % (what, timeout))
    check(p.opcode == hi.OP_LOGIN_RSP, "%s: expected a drop or Login Reject, got %r" % (what, p))
    cls = p.bhs[36]
    check(cls != 0, "%s: Login Response with success status to a bad PDU: %r" % (what, p))
    check(c.wait_closed(timeout), "%s: connection kept open after Login Reject 0x%02x%02x"
          % (what, cls, p.bhs[37]))
    return "Login Reject 0x%02x%02x" % (cls, p.bhs[37])


def a_prelogin_not_login(t):
    """A SCSI Command, a NOP-Out and a Logout before any login: the connection goes."""
    out = []
    for op in (hi.OP_SCSI_CMD, hi.OP_NOP_OUT, hi.OP_LOGOUT_REQ, hi.OP_DATA_OUT, 0x3F):
        c = t.raw()
        c.send(hi.bhs_build(op, 0x80, itt=1))
        out.append("0x%02x:%s" % (op, expect_drop_or_login_reject(c, "opcode 0x%02x" % op)))
        c.close()
    return ", ".join(out)


def a_prelogin_huge_lengths(t):
    """DataSegmentLength 0xffffff and TotalAHSLength 255 before login; bytes streamed after
    the header must not be buffered: the target drops the connection."""
    out = []
    cases = [
        ("login dsl=0xffffff", hi.bhs_build(hi.OP_LOGIN_REQ, 0x87, immediate=True,
                                              dsl=0xFFFFFF, itt=1)),
        ("scsi dsl=0xffffff", hi.bhs_build(hi.OP_SCSI_CMD, 0x80, dsl=0xFFFFFF, itt=1)),
        ("login ahs=255 dsl=0xffffff", hi.bhs_build(hi.OP_LOGIN_REQ, 0x87, immediate=True,
                                                     ahs_words=255, dsl=0xFFFFFF, itt=1)),
        ("nop ahs=255", hi.bhs_build(hi.OP_NOP_OUT, 0x80, ahs_words=255, itt=1)),
    ]
    for what, bhs in cases:
        c = t.raw()
        c.send(bhs)
        # Stream up to 16 MiB behind it; a bounded receiver drops us long before.
        sent = 0
        chunk = bytes(256 * 1024)
        try:
            while sent < 16 * MIB:
                c.sock.settimeout(5)
                c.sock.sendall(chunk)
                sent += len(chunk)
        except (OSError, socket.timeout):
            pass
        res = expect_drop_or_login_reject(c, what)
        out.append("%s: %s after %d KiB" % (what, res, sent // 1024))
        c.close()
        check(t.rss() <= t.rss_base + RSS_SLACK, "%s: VmRSS %d KiB" % (what, t.rss() // 1024))
    return "; ".join(out)


def a_prelogin_random(t):
    """Random 48-byte headers (some with random trailing bytes), then random complete Login
    PDUs (random flags, versions, ISID, AHS, text) that the target must answer or drop."""
    rnd = random.Random(0x5C5175)
    for _ in range(40):
        c = t.raw()
        c.send(rnd.randbytes(48) + rnd.randbytes(rnd.choice((0, 0, 7, 100))))
        c.wait_closed(0.02)
        c.close()
    answered = dropped = 0
    for _ in range(60):
        ahs_words = rnd.choice((0, 0, 0, 1, 3))
        text = rnd.randbytes(rnd.randrange(0, 300))
        if rnd.random() < 0.5:
            text = hi.text_keys([("InitiatorName", "iqn.x:%d" % rnd.randrange(99)),
                                 ("TargetName", t.iqn if rnd.random() < 0.5 else "bogus"),
                                 ("SessionType", rnd.choice(("Normal", "Discovery", "x"))),
                                 ("AuthMethod", rnd.choice(("None", "CHAP", "x,y")))])
        b = bytearray(rnd.randbytes(48))
        b[0] = hi.OP_LOGIN_REQ | rnd.choice((0, hi.IMMEDIATE))
        b[4] = ahs_words
        b[5:8] = len(text).to_bytes(3, "big")
        if rnd.random() < 0.5:
            b[2] = b[3] = 0  # versions right, so that the text is looked at
        c = t.raw()
        c.send(hi.pdu_bytes(bytes(b), text, rnd.randbytes(4 * ahs_words)))
        try:
            p = c.recv_pdu(hi.WAIT)
            check(p.opcode == hi.OP_LOGIN_RSP, "random login: answer %r" % p)
            answered += 1
        except hi.Closed:
            dropped += 1
        except socket.timeout:
            raise Failure("random login PDU %s...: no answer and no drop within %.0f s"
                          % (bytes(b).hex(), hi.WAIT))
        c.close()
    return "40 random headers; 60 random login PDUs: %d answered, %d dropped" % (
        answered, dropped)


def a_login_text_flood(t):
    """Login text split over many continuation PDUs (C bit), far beyond any sane total: the
    target must refuse with a Login Response of status class 2 or 3 and close."""
    s = t.session()
    # One key whose value never ends: 8 KiB of "a" per PDU.
    first = b"InitiatorName=" + b"a" * (hi.LOGIN_DSL_MAX - 14)
    chunk = b"a" * hi.LOGIN_DSL_MAX
    for i in range(2048):  # 16 MiB in total, at most
        data = first if i == 0 else chunk
        try:
            s.send(s.login_pdu(hi.STAGE_SECURITY, hi.STAGE_OPERATIONAL, False, data, cont=True))
            p = s.recv_pdu(hi.WAIT)
        except hi.Closed:
            s.close()
            raise Failure("text flood: dropped without a Login Response after %d PDUs" % i)
        check(p.opcode == hi.OP_LOGIN_RSP, "text flood: got %r" % p)
        cls, det = p.bhs[36], p.bhs[37]
        if cls == 0:
            check(not p.data, "text flood: a partial text is answered with keys")
            continue
        check(cls in (2, 3), "text flood: status 0x%02x%02x" % (cls, det))
        check(s.wait_closed(hi.WAIT), "text flood: still open after the Login Reject")
        s.close()
        return "Login Reject 0x%02x%02x after %d KiB of text" % (cls, det, (i + 1) * 8)
    s.close()
    raise Failure("text flood: 16 MiB of continued login text accepted")


def a_login_dsl_over_8k(t):
    """A login PDU declaring 16 MiB of data (DataSegmentLength 0xffffff) after a first valid
    one, mid-login: dropped, not allocated."""
    s = t.session()
    s.send(s.login_pdu(hi.STAGE_SECURITY, hi.STAGE_OPERATIONAL, False,
                       hi.text_keys([("InitiatorName", s.initiator)]), cont=True))
    p = s.recv_pdu()
    check(p.opcode == hi.OP_LOGIN_RSP and p.bhs[36] == 0, "first login PDU: %r" % p)
    bhs = bytearray(s.login_pdu(hi.STAGE_SECURITY, hi.STAGE_OPERATIONAL, True, b""))
    bhs[5:8] = b"\xff\xff\xff"
    s.send(bytes(bhs))
    try:
        s.send(bytes(MIB))
    except hi.Closed:
        pass
    res = expect_drop_or_login_reject(s, "login dsl 16 MiB")
    s.close()
    return res


# --------------------------------------------------------------------------------------------
# Attacks in full feature phase.

def expect_reject(s, sent_bhs, reasons, what, timeout=hi.WAIT):
    """A Reject (RFC 7143 §11.17) with one of @reasons carrying the header we sent."""
    p = s.recv(timeout)
    check(p.opcode == hi.OP_REJECT, "%s: expected a Reject, got %r" % (what, p))
    check(p.bhs[2] in reasons, "%s: Reject reason 0x%02x, expected one of %s" % (
        what, p.bhs[2], "/".join("0x%02x" % r for r in reasons)))
    check(p.itt == hi.RESERVED_TAG, "%s: Reject ITT 0x%08x" % (what, p.itt))
    check(p.data[:48] == sent_bhs[:48], "%s: the Reject carries %s, not the rejected header"
          % (what, p.data[:48].hex()))
    return p.bhs[2]


def a_edtl_1g_no_data(t):
    """WRITEs announcing 1 GiB (ExpectedDataTransferLength) and sending nothing, then a
    disconnect; once with a CDB of the largest size the target takes, once with 1 GiB."""
    out = []
    vm0 = t.vmsize()
    # (a) CDB 8 MiB, EDTL 1 GiB: the target may solicit (R2T) but must not hold 1 GiB.
    s = t.session()
    s.login()
    itt = s.next_itt()
    s.send(s.cmd_pdu(hi.lun_lba_cdb_write16(ATTACK_LBA, (8 * MIB) // BS), 1 << 30, write=True,
                     itt=itt))
    s.cmd_sn += 1
    p = s.recv()
    check(p.itt == itt and p.opcode in (hi.OP_R2T, hi.OP_SCSI_RSP),
          "edtl 1 GiB: expected R2T or a response, got %r" % p)
    if p.opcode == hi.OP_R2T:
        check(p.u32(40) + p.u32(44) <= 1 << 30, "R2T beyond EDTL: %r" % p)
        out.append("R2T offset %d len %d" % (p.u32(40), p.u32(44)))
    vm = t.vmsize()
    check(vm <= vm0 + VM_SLACK, "edtl 1 GiB pending: VmSize grew by %d MiB" % ((vm - vm0) // MIB))
    out.append("VmSize +%d MiB while pending" % ((vm - vm0) // MIB))
    s.abort()
    # (b) CDB 1 GiB (beyond the LUN and any transfer limit): refused at once.
    s = t.session()
    s.login()
    itt = s.next_itt()
    s.send(s.cmd_pdu(hi.lun_lba_cdb_write16(0, (1 << 30) // BS), 1 << 30, write=True, itt=itt))
    s.cmd_sn += 1
    p = s.recv()
    check(p.itt == itt, "1 GiB CDB: %r" % p)
    if p.opcode == hi.OP_SCSI_RSP:
        check(p.bhs[3] == hi.SAM_CHECK_CONDITION,
              "1 GiB WRITE with no data: status 0x%02x" % p.bhs[3])
        out.append("1 GiB CDB: CHECK CONDITION")
    else:
        check(p.opcode == hi.OP_R2T, "1 GiB CDB: %r" % p)
        out.append("1 GiB CDB: R2T len %d" % p.u32(44))
    s.close()
    return "; ".join(out)


# RFC 7143 §4.2.2.1: once the window is full (MaxCmdSN = ExpCmdSN - 1), the next command is
# ignored. (Found by this test: the target once took CmdSN == ExpCmdSN regardless.)
def a_cmd_window_closed(t):
    """Fill the CmdSN window with WRITEs that wait for their data, then send one more, whose
    CmdSN is MaxCmdSN + 1: it must be ignored (no R2T, no response) while the window is full."""
    s = t.session()
    s.login(initial_r2t="Yes", immediate="No")
    window = (s.max_cmd_sn - s.cmd_sn + 1) & 0xFFFFFFFF
    check(0 < window <= 4096, "login: CmdSN window of %d" % window)
    itts = []
    for _ in range(window):
        itt = s.next_itt()
        itts.append(itt)
        s.send(s.cmd_pdu(hi.lun_lba_cdb_write16(ATTACK_LBA, 8), 4096, write=True, itt=itt))
        s.cmd_sn += 1
    extra = s.next_itt()
    s.send(s.cmd_pdu(hi.lun_lba_cdb_write16(ATTACK_LBA, 8), 4096, write=True, itt=extra))
    # An immediate ping behind it: once its answer is in, the extra command was processed.
    ping = s.next_itt()
    s.send(s.nop_pdu(itt=ping))
    r2t, last = set(), None
    while True:
        p = s.recv()
        check(p.itt != extra, "window of %d full (ExpCmdSN %d, MaxCmdSN %d): the command with "
              "CmdSN %d was accepted: %r" % (window, p.exp_cmd_sn, p.max_cmd_sn, s.cmd_sn, p))
        if p.opcode == hi.OP_NOP_IN and p.itt == ping:
            last = p
            break
        check(p.opcode == hi.OP_R2T and p.itt in itts, "window full: got %r" % p)
        r2t.add(p.itt)
    check(hi.SN_LT(last.max_cmd_sn, s.cmd_sn),
          "window full but MaxCmdSN %d admits CmdSN %d" % (last.max_cmd_sn, s.cmd_sn))
    s.abort()
    return "window %d: %d R2T, the extra command ignored" % (window, len(r2t))


def write_cmd_wait_r2t(s, lba, nbytes):
    itt = s.next_itt()
    s.send(s.cmd_pdu(hi.lun_lba_cdb_write16(lba, nbytes // BS), nbytes, write=True, itt=itt))
    s.cmd_sn += 1
    p = s.recv()
    check(p.opcode == hi.OP_R2T and p.itt == itt, "expected an R2T, got %r" % p)
    return itt, p


def expect_failed_response(s, itt, what, timeout=hi.WAIT):
    """After a broken Data-Out sequence: the command must not succeed (SCSI Response with a
    status other than GOOD), or the connection is dropped (ERL0 recovery)."""
    try:
        while True:
            p = s.recv(timeout)
            if p.opcode == hi.OP_R2T and p.itt == itt:
                continue
            break
    except hi.Closed:
        return "dropped"
    check(p.opcode == hi.OP_SCSI_RSP and p.itt == itt, "%s: expected the response, got %r"
          % (what, p))
    check(p.bhs[2] != 0 or p.bhs[3] != hi.SAM_GOOD,
          "%s: the command completed with GOOD status" % what)
    return "response 0x%02x status 0x%02x" % (p.bhs[2], p.bhs[3])


def a_data_out_bad(t):
    """Data-Out for an unknown ITT, for an unknown TTT, with a wrong DataSN and with a wrong
    BufferOffset: a Reject; a broken sequence fails its command; nothing is written."""
    out = []
    s = t.session()
    s.login(initial_r2t="Yes", immediate="No")
    pat = b"\xa5" * 4096
    # Unknown ITT (no command at all).
    d = s.data_out_pdu(0x7777777, 0x1234, 0, 0, pat)
    s.send(d)
    out.append("unknown ITT: reject 0x%02x" % expect_reject(
        s, d, (hi.REJECT_PROTOCOL_ERROR, hi.REJECT_INVALID_PDU_FIELD), "unknown ITT"))
    s.ping()
    # Known ITT, unknown TTT.
    itt, r2t = write_cmd_wait_r2t(s, ATTACK_LBA, 8192)
    d = s.data_out_pdu(itt, r2t.ttt ^ 0x5A5A, 0, 0, pat)
    s.send(d)
    out.append("unknown TTT: reject 0x%02x" % expect_reject(
        s, d, (hi.REJECT_PROTOCOL_ERROR, hi.REJECT_INVALID_PDU_FIELD), "unknown TTT"))
    # Now the right data: the command must still complete.
    s.send(s.data_out_pdu(itt, r2t.ttt, 0, 0, pat * 2))
    p = s.expect(hi.OP_SCSI_RSP, itt, what="write after an unknown-TTT Data-Out")
    check(p.bhs[3] == hi.SAM_GOOD, "write after an unknown-TTT Data-Out: status 0x%02x"
          % p.bhs[3])
    # Wrong DataSN, then wrong BufferOffset: the command fails, its data is not written.
    for what, datasn, off in (("DataSN 5", 5, 0), ("BufferOffset 4096", 0, 4096)):
        lba = ATTACK_LBA + 64
        itt, r2t = write_cmd_wait_r2t(s, lba, 8192)
        d = s.data_out_pdu(itt, r2t.ttt, datasn, off, b"\x3c" * 4096, final=False)
        s.send(d)
        try:
            p = s.recv()
        except hi.Closed:
            out.append("%s: dropped" % what)
            s.close()
            s = t.session()
            s.login(initial_r2t="Yes", immediate="No")
            continue
        if p.opcode == hi.OP_REJECT:
            check(p.bhs[2] in (hi.REJECT_PROTOCOL_ERROR, hi.REJECT_INVALID_PDU_FIELD),
                  "%s: reject reason 0x%02x" % (what, p.bhs[2]))
            check(p.data[:48] == d[:48], "%s: Reject carries another header" % what)
            res = expect_failed_response(s, itt, what)
        else:
            check(p.opcode == hi.OP_SCSI_RSP and p.itt == itt, "%s: got %r" % (what, p))
            check(p.bhs[2] != 0 or p.bhs[3] != hi.SAM_GOOD, "%s: completed GOOD" % what)
            res = "status 0x%02x" % p.bhs[3]
        data = s.read(lba, 16)
        check(b"\x3c" * 16 not in data, "%s: data of a broken sequence was written" % what)
        out.append("%s: %s" % (what, res))
    s.ping()
    s.logout()
    return "; ".join(out)


def a_dsl_over_mrdsl(t):
    """A PDU whose DataSegmentLength is above the MaxRecvDataSegmentLength the target declared
    (here a NOP-Out with MRDSL + 4 bytes): a protocol error; no echo of the oversized data."""
    s = t.session()
    s.login()
    n = s.mrdsl_target + 4
    itt = s.next_itt()
    s.send(s.nop_pdu(bytes(16), itt=itt, dsl=n))
    try:
        s.send(bytes(n - 16))
    except hi.Closed:
        pass
    try:
        p = s.recv(hi.WAIT)
    except hi.Closed:
        s.close()
        return "dropped (MRDSL %d)" % s.mrdsl_target
    except socket.timeout:
        raise Failure("DSL above MRDSL: neither an answer nor a drop")
    check(p.opcode == hi.OP_REJECT, "DSL above MRDSL: got %r" % p)
    s.close()
    return "Reject 0x%02x" % p.bhs[2]


def a_cmdsn_outside_window(t):
    """Commands with CmdSN far ahead of and behind the window: ignored without an answer
    (RFC 7143 §3.2.2.1); the session goes on."""
    s = t.session()
    s.login()
    far = s.next_itt()
    s.send(s.cmd_pdu(hi.cdb_read16(0, 1), BS, read=True, itt=far,
                     cmd_sn=(s.cmd_sn + 0x40000000) & 0xFFFFFFFF))
    old = s.next_itt()
    s.send(s.cmd_pdu(hi.cdb_read16(0, 1), BS, read=True, itt=old,
                     cmd_sn=(s.cmd_sn - 1000) & 0xFFFFFFFF))
    # The normal command after them must be answered, and nothing for the other two.
    itt = s.next_itt()
    s.send(s.cmd_pdu(hi.cdb_tur(), 0, itt=itt))
    s.cmd_sn += 1
    p = s.recv()
    check(p.itt not in (far, old), "a command outside the CmdSN window was answered: %r" % p)
    check(p.opcode == hi.OP_SCSI_RSP and p.itt == itt and p.bhs[3] == hi.SAM_GOOD,
          "TEST UNIT READY after out-of-window commands: %r" % p)
    data = s.read(0, 4)
    check(len(data) == 4 * BS, "read after out-of-window commands")
    s.logout()
    return "ignored; the session continues (ExpCmdSN %d)" % p.exp_cmd_sn


def a_unknown_opcodes(t):
    """Opcodes no initiator may send (unassigned, vendor, and target-only ones): a Reject
    with reason 0x04 or 0x05 carrying the header (RFC 7143 §11.17.1); the session goes on."""
    s = t.session()
    s.login()
    out = []
    for op in (0x07, 0x0F, 0x11, 0x1C, 0x1E, 0x21, 0x3F):
        b = hi.bhs_build(op, 0x80, immediate=True, itt=s.next_itt(),
                         fields={24: s.cmd_sn, 28: s.exp_stat_sn})
        s.send(b)
        out.append("0x%02x->0x%02x" % (op, expect_reject(
            s, b, (hi.REJECT_PROTOCOL_ERROR, hi.REJECT_CMD_NOT_SUPPORTED),
            "opcode 0x%02x" % op)))
    # One with a data segment, which must be skipped correctly.
    b = hi.bhs_build(0x1D, 0x80, immediate=True, dsl=1001, itt=s.next_itt())
    s.send(hi.pdu_bytes(b, b"\x11" * 1001))
    out.append("0x1d+data->0x%02x" % expect_reject(
        s, b, (hi.REJECT_PROTOCOL_ERROR, hi.REJECT_CMD_NOT_SUPPORTED), "opcode 0x1d"))
    s.ping(b"after")
    s.logout()
    return " ".join(out)


def a_nop_big(t):
    """NOP-Out pings: 1 MiB of ping data (above MRDSL: dropped) and MRDSL-sized data (echoed
    exactly)."""
    s = t.session()
    s.login()
    n = min(s.mrdsl_target, s.mrdsl_ours)
    data = random.Random(7).randbytes(n)
    p = s.ping(data)
    check(p.data == data, "MRDSL ping: echo of %d bytes differs" % len(p.data))
    itt = s.next_itt()
    big = bytes(MIB)
    try:
        s.send(s.nop_pdu(big, itt=itt))
    except hi.Closed:
        s.close()
        return "%d-byte ping echoed; 1 MiB ping: dropped" % n
    try:
        p = s.recv(hi.WAIT)
    except hi.Closed:
        s.close()
        return "%d-byte ping echoed; 1 MiB ping: dropped" % n
    except socket.timeout:
        raise Failure("1 MiB ping: no answer, no drop")
    if s.mrdsl_target >= MIB:
        check(p.opcode == hi.OP_NOP_IN and p.itt == itt, "1 MiB ping: %r" % p)
        res = "echoed"
    else:
        check(p.opcode == hi.OP_REJECT, "1 MiB ping above MRDSL %d: got %r" % (
            s.mrdsl_target, p))
        res = "Reject 0x%02x" % p.bhs[2]
    s.close()
    return "%d-byte ping echoed; 1 MiB ping: %s" % (n, res)


def a_abort_mid_data_out(t):
    """Large WRITEs cut by a disconnect (FIN, and TCP reset) in the middle of their Data-Out
    sequence, 20 times: no leak, and none of the partial data is written."""
    lba = ATTACK_LBA + 4096
    for i in range(20):
        s = t.session()
        s.login(initial_r2t="Yes", immediate="No")
        nbytes = 8 * MIB
        itt, r2t = write_cmd_wait_r2t(s, lba, nbytes)
        want = r2t.u32(44)
        half = min(want // 2, 2 * MIB)
        pos = 0
        datasn = 0
        while pos < half:
            k = min(s.mrdsl_target, half - pos)
            s.send(s.data_out_pdu(itt, r2t.ttt, datasn, pos, b"\xee" * k, final=False))
            pos += k
            datasn += 1
        # Half a PDU on top, then the cut.
        s.send(s.data_out_pdu(itt, r2t.ttt, datasn, pos, b"\xee" * 4096, final=False)[:1000])
        if i % 2:
            s.abort()
        else:
            s.close()
    s = t.session()
    s.login()
    data = s.read(lba, 64)
    s.logout()
    check(b"\xee" * 512 not in data, "the data of a cut WRITE was written")
    return "20 cut WRITEs of 8 MiB, no data written"


def lun_reset(b):
    """LOGICAL UNIT RESET (RFC 7143 §11.5.1, function 5) from session @b; its response comes
    once every session's tasks of the LUN are aborted."""
    tmf_itt = b.next_itt()
    b.send(hi.pdu_bytes(hi.bhs_build(
        hi.OP_TMF_REQ, hi.FINAL | 5, immediate=True, lun=hi.lun_field(b.lun), itt=tmf_itt,
        fields={20: hi.RESERVED_TAG, 24: b.cmd_sn, 28: b.exp_stat_sn})))
    p = b.expect(OP_TMF_RSP, tmf_itt, what="LOGICAL UNIT RESET")
    check(p.bhs[2] == 0, "LOGICAL UNIT RESET: response 0x%02x" % p.bhs[2])


# Was a bug (review29 F1): a WRITE aborted by another session while its PDU's payload was
# still arriving had its task and buffer freed while the receiver kept writing the rest of the
# payload into that buffer (an ASan target reports it). Now the rest is read and dropped
# (src/transport/iscsi/scsi.c task_rx_forget()).
def a_reset_mid_pdu(t):
    """WRITEs whose one Data-Out PDU, or immediate data, is half sent when another session
    resets the LUN; then the rest of the PDU. The session goes on, nothing of it is written."""
    b = t.session()
    b.login()
    seen = {}
    for i in range(8):
        a = t.session()
        a.login(initial_r2t="Yes", immediate="Yes")
        imm = i % 2 == 1
        lba = ATTACK_LBA + 32768 + i * 512  # 256 KiB apart, away from the other attacks
        nbytes = a.first_burst if imm else min(a.mrdsl_target, 256 * 1024)
        payload = b"\xd7" * nbytes
        if imm:
            itt = a.next_itt()
            pdu = a.cmd_pdu(hi.lun_lba_cdb_write16(lba, nbytes // BS), nbytes, write=True,
                            data=payload, itt=itt)
            a.cmd_sn += 1
        else:
            itt, r2t = write_cmd_wait_r2t(a, lba, nbytes)
            pdu = a.data_out_pdu(itt, r2t.ttt, 0, 0, payload)
        cut = 48 + nbytes // 2
        a.send(pdu[:cut])
        lun_reset(b)
        a.send(pdu[cut:])
        # Whatever A's PDU met (aborted mid-payload, or not read yet when the reset came: a
        # Reject of a Data-Out for a task gone, or a command after the reset), the
        # connection answers a ping after it.
        ping = a.next_itt()
        a.send(a.nop_pdu(itt=ping))
        what = "aborted"
        while True:
            p = a.recv()
            if p.opcode == hi.OP_NOP_IN and p.itt == ping:
                break
            if p.opcode == hi.OP_REJECT:
                what = "rejected"
            elif p.opcode == hi.OP_SCSI_RSP and p.itt == itt:
                what = "status 0x%02x" % p.bhs[3]
        seen[what] = seen.get(what, 0) + 1
        a.clear_unit_attention()
        if what in ("aborted", "rejected"):
            check(b"\xd7" * BS not in a.read(lba, nbytes // BS),
                  "the data of a WRITE aborted mid-PDU was written")
        a.logout()
        b.clear_unit_attention()
    b.logout()
    return "8 WRITEs cut by a LUN reset: " + ", ".join(
        "%s %d" % (k, v) for k, v in sorted(seen.items()))


def answered_until_ping(s, aborted, what):
    """The ITTs of the SCSI Responses that come before the answer to an immediate ping (once
    it is answered, everything sent before it was processed); none may be @aborted's."""
    ping = s.next_itt()
    s.send(s.nop_pdu(itt=ping))
    answered = set()
    while True:
        p = s.recv()
        if p.opcode == hi.OP_NOP_IN and p.itt == ping:
            return answered
        check(p.itt != aborted, "after %s: the aborted WRITE was answered: %r" % (what, p))
        check(p.opcode == hi.OP_SCSI_RSP, "after %s: %r" % (what, p))
        answered.add(p.itt)


def abort_task_by_ref(s, cmd_sn, ref_cmd_sn):
    """An immediate ABORT TASK (RFC 7143 §11.5.1, function 1) with CmdSN @cmd_sn of a task
    the target never saw: an unused Referenced Task Tag, the command named by RefCmdSN."""
    itt = s.next_itt()
    s.send(hi.pdu_bytes(hi.bhs_build(
        hi.OP_TMF_REQ, hi.FINAL | 1, immediate=True, lun=hi.lun_field(s.lun), itt=itt,
        fields={20: 0x7F000000 | itt, 24: cmd_sn, 28: s.exp_stat_sn, 32: ref_cmd_sn})))
    return s.expect(OP_TMF_RSP, itt, what="ABORT TASK")


# Was a bug: an ABORT TASK whose RefCmdSN named a command not received yet was answered
# Function complete, but that CmdSN was not "considered received" (RFC 7143 §11.5.1 b): the
# commands after it waited for ever (until the initiator's timeout), and the aborted command,
# should it arrive late, ran. Now its CmdSN is used up (src/transport/iscsi/session.c).
def a_abort_unreceived_cmdsn(t):
    """ABORT TASK of a WRITE not sent yet, by RefCmdSN: at ExpCmdSN, then ahead of it behind
    a gap. The commands after it run; the WRITE, sent late, is ignored and writes nothing."""
    s = t.session()
    s.login()
    lba = ATTACK_LBA + 49152  # 40 MiB, away from the other attacks
    s.write(lba, bytes(8 * BS))
    out = []
    for ahead in (0, 1):
        exp = s.cmd_sn
        # The WRITE got CmdSN exp + ahead; the TMF's is the next one after the commands.
        ref = (exp + ahead) & 0xFFFFFFFF
        tmf_sn = (exp + 2 * ahead + 1) & 0xFFFFFFFF
        p = abort_task_by_ref(s, tmf_sn, ref)
        check(p.bhs[2] == 0, "ABORT TASK by RefCmdSN %d: response 0x%02x" % (ref, p.bhs[2]))
        want = (exp + 1) & 0xFFFFFFFF if ahead == 0 else exp
        check(p.exp_cmd_sn == want, "ABORT TASK by RefCmdSN %d (ExpCmdSN %d): ExpCmdSN %d "
              "after it, expected %d" % (ref, exp, p.exp_cmd_sn, want))
        turs = []
        if ahead:
            turs.append(s.next_itt())  # after the aborted one: held for the gap
            s.send(s.cmd_pdu(hi.cdb_tur(), 0, itt=turs[-1], cmd_sn=(exp + 2) & 0xFFFFFFFF))
        late = s.next_itt()
        s.send(s.cmd_pdu(hi.lun_lba_cdb_write16(lba, 8), 8 * BS, write=True,
                         data=b"\xc3" * (8 * BS), itt=late, cmd_sn=ref))
        turs.append(s.next_itt())  # fills the gap (ahead) or comes next
        s.send(s.cmd_pdu(hi.cdb_tur(), 0, itt=turs[-1], cmd_sn=exp if ahead else tmf_sn))
        answered = answered_until_ping(s, late, "ABORT TASK by RefCmdSN %d" % ref)
        check(answered == set(turs), "after ABORT TASK by RefCmdSN %d: %d of %d commands "
              "answered (ExpCmdSN stuck at the aborted CmdSN?)" % (ref, len(answered),
                                                                   len(turs)))
        # The next CmdSN: the TMF's (immediate, it took none), unless a TUR took it.
        s.cmd_sn = tmf_sn if ahead else (tmf_sn + 1) & 0xFFFFFFFF
        out.append("%s: %d commands after it ran" % ("ahead" if ahead else "at ExpCmdSN",
                                                      len(turs)))
    data = s.read(lba, 8)
    check(data == bytes(8 * BS), "an aborted WRITE, sent late, was written")
    s.logout()
    return "; ".join(out) + "; the late WRITEs ignored"


# Was a bug: a command held for CmdSN order (its CmdSN ahead of ExpCmdSN) and aborted by
# another session's LOGICAL UNIT RESET left the queue but not its CmdSN: once the gap filled,
# ExpCmdSN stopped at it and every later command of the session waited for ever.
def a_reset_held_cmdsn(t):
    """A WRITE sent ahead of a gap in CmdSN, held for its turn, is aborted by another
    session's LOGICAL UNIT RESET; then the gap fills. The commands after it run; the WRITE
    gets no answer and writes nothing."""
    a, b = t.session(), t.session()
    a.login()
    b.login()
    lba = ATTACK_LBA + 49152 + 64  # beside abort_unreceived_cmdsn's blocks
    a.write(lba, bytes(8 * BS))
    exp = a.cmd_sn
    held = a.next_itt()
    a.send(a.cmd_pdu(hi.lun_lba_cdb_write16(lba, 8), 8 * BS, write=True,
                     data=b"\x3c" * (8 * BS), itt=held, cmd_sn=(exp + 1) & 0xFFFFFFFF))
    # Behind an immediate ping's answer, the WRITE is in and held (it waits for exp).
    a.ping()
    lun_reset(b)
    turs = []
    for sn in (exp, exp + 2):  # fills the gap, then the one after the aborted WRITE
        turs.append(a.next_itt())
        a.send(a.cmd_pdu(hi.cdb_tur(), 0, itt=turs[-1], cmd_sn=sn & 0xFFFFFFFF))
    answered = answered_until_ping(a, held, "a LUN reset of a held WRITE")
    check(answered == set(turs), "after the held WRITE's abort: %d of 2 commands answered "
          "(ExpCmdSN stuck at its CmdSN?)" % len(answered))
    a.cmd_sn = (exp + 3) & 0xFFFFFFFF
    a.clear_unit_attention()
    check(a.read(lba, 8) == bytes(8 * BS), "a WRITE aborted while held was written")
    a.logout()
    b.clear_unit_attention()
    b.logout()
    return "the held WRITE aborted, the 2 commands around its CmdSN ran"


REJECT_TASK_IN_PROGRESS = 0x07  # RFC 7143 §11.17.1


def read_answers(s, itts, what):
    """The data of each READ of @itts, once every one has its status (GOOD)."""
    got = {itt: bytearray() for itt in itts}
    done = set()
    while done != set(itts):
        p = s.recv()
        check(p.itt in got and p.opcode in (hi.OP_DATA_IN, hi.OP_SCSI_RSP),
              "%s: unexpected %r" % (what, p))
        if p.opcode == hi.OP_DATA_IN:
            got[p.itt] += p.data
        if p.opcode == hi.OP_SCSI_RSP or p.flags & 0x01:
            check(p.bhs[3] == hi.SAM_GOOD, "%s: READ 0x%08x status 0x%02x" % (
                what, p.itt, p.bhs[3]))
            done.add(p.itt)
    return {itt: bytes(d) for itt, d in got.items()}


# RFC 7143 §7.3: "The CmdSN of the rejected command PDU (if it is a non-immediate command)
# MUST NOT be considered received by the target ... the initiator MUST plug the CmdSN gap",
# by a command with that CmdSN or by aborting the task. review30b F2 took it the other way.
def a_reused_itt_gap(t):
    """A non-immediate READ reusing the ITT of a WRITE that waits for its data: Reject (task
    in progress) carrying ExpCmdSN unmoved. A normal READ after it is held for the gap; the
    initiator plugs it with a READ of the rejected CmdSN: both are answered with the right
    data, and the WRITE, untouched, completes."""
    s = t.session()
    s.login(initial_r2t="Yes", immediate="No")
    lba = ATTACK_LBA + 49152 + 128  # beside reset_held_cmdsn's blocks
    pat = bytes(range(256)) * (8 * BS // 256)
    s.write(lba, pat)
    witt, r2t = write_cmd_wait_r2t(s, lba + 8, 8 * BS)
    gap = s.cmd_sn
    d = s.cmd_pdu(hi.cdb_read16(lba, 8), 8 * BS, read=True, itt=witt, cmd_sn=gap)
    s.send(d)
    p = s.recv()
    check(p.opcode == hi.OP_REJECT and p.bhs[2] == REJECT_TASK_IN_PROGRESS,
          "a command reusing a live ITT: expected Reject 0x07, got %r" % p)
    check(p.data[:48] == d[:48], "the Reject carries another header")
    check(p.exp_cmd_sn == gap, "the Reject's ExpCmdSN %d: the rejected CmdSN %d was taken"
          % (p.exp_cmd_sn, gap))
    held = s.next_itt()
    s.send(s.cmd_pdu(hi.cdb_read16(lba, 8), 8 * BS, read=True, itt=held,
                     cmd_sn=(gap + 1) & 0xFFFFFFFF))
    # An immediate ping is answered at once; the held READ is not (a PDU for it would come
    # first), and ExpCmdSN still waits at the gap.
    p = s.ping()
    check(p.exp_cmd_sn == gap, "after the held READ: ExpCmdSN %d, expected %d" % (
        p.exp_cmd_sn, gap))
    plug = s.next_itt()
    s.send(s.cmd_pdu(hi.cdb_read16(lba, 8), 8 * BS, read=True, itt=plug, cmd_sn=gap))
    s.cmd_sn = (gap + 2) & 0xFFFFFFFF
    data = read_answers(s, (plug, held), "after the plug")
    check(data[plug] == pat and data[held] == pat, "READs around the gap: wrong data")
    wpat = b"\xa7" * (8 * BS)
    s.send(s.data_out_pdu(witt, r2t.ttt, 0, 0, wpat))
    p = s.expect(hi.OP_SCSI_RSP, witt, what="the WRITE whose ITT was reused")
    check(p.bhs[3] == hi.SAM_GOOD, "the WRITE whose ITT was reused: status 0x%02x" % p.bhs[3])
    check(s.read(lba + 8, 8) == wpat, "the WRITE whose ITT was reused: not written")
    s.logout()
    return "rejected with ExpCmdSN %d kept; the plug and the held READ answered" % gap


# Was a bug (review30b F3): a non-immediate ABORT TASK SET, CLEAR TASK SET or LOGICAL UNIT
# RESET delivered the commands held behind its CmdSN first and then aborted them, though RFC
# 7143 §11.5.1 has it act on the commands before it (with workers, CLEAR TASK SET and LUN
# RESET reach the issuing session's tasks by message from home).
def a_tmf_spares_later(t):
    """A WRITE held behind a gap, waiting for its data (InitialR2T=Yes), then a non-immediate
    TMF filling the gap: ABORT TASK SET, CLEAR TASK SET, LOGICAL UNIT RESET. The WRITE, sent
    after the TMF, survives each: it completes once its data comes, and is written."""
    s = t.session()
    s.login(initial_r2t="Yes", immediate="No")
    s.clear_unit_attention()
    lba = ATTACK_LBA + 49152 + 256  # beside reused_itt_gap's blocks
    out = []
    for func, name in ((2, "ABORT TASK SET"), (4, "CLEAR TASK SET"), (5, "LUN RESET")):
        exp = s.cmd_sn
        pat = bytes([func]) * (8 * BS)
        witt = s.next_itt()
        s.send(s.cmd_pdu(hi.lun_lba_cdb_write16(lba, 8), 8 * BS, write=True, itt=witt,
                         cmd_sn=(exp + 1) & 0xFFFFFFFF))
        r2t = s.expect(hi.OP_R2T, witt, what="the held WRITE's R2T")
        tmf = s.next_itt()
        s.send(hi.pdu_bytes(hi.bhs_build(
            hi.OP_TMF_REQ, hi.FINAL | func, lun=hi.lun_field(s.lun), itt=tmf,
            fields={20: hi.RESERVED_TAG, 24: exp, 28: s.exp_stat_sn, 32: exp})))
        p = s.expect(OP_TMF_RSP, tmf, what=name)
        check(p.bhs[2] == 0, "%s: response 0x%02x" % (name, p.bhs[2]))
        check(p.exp_cmd_sn == (exp + 2) & 0xFFFFFFFF, "%s at CmdSN %d: ExpCmdSN %d after it, "
              "expected %d (its CmdSN and the WRITE's passed)" % (name, exp, p.exp_cmd_sn,
                                                                  exp + 2))
        s.send(s.data_out_pdu(witt, r2t.ttt, 0, 0, pat))
        p = s.expect(hi.OP_SCSI_RSP, witt, what="the WRITE held behind %s" % name)
        s.cmd_sn = (exp + 2) & 0xFFFFFFFF
        check(p.bhs[2] == 0 and p.bhs[3] == hi.SAM_GOOD, "the WRITE held behind %s: response "
              "0x%02x status 0x%02x" % (name, p.bhs[2], p.bhs[3]))
        if func == 5:
            s.clear_unit_attention()  # the reset's, for this nexus too
        check(s.read(lba, 8) == pat, "the WRITE held behind %s: not written" % name)
        out.append(name)
    s.logout()
    return "the held WRITE survived %s" % ", ".join(out)


OP_TEXT_RSP = 0x24  # Text Response (RFC 7143 §11.11)


def answers_until(s, stop_itt, what):
    """The PDUs that come up to and with the answer to @stop_itt (no Reject among them)."""
    got = []
    while True:
        p = s.recv()
        check(p.opcode != hi.OP_REJECT, "%s: Reject reason 0x%02x of %s" % (
            what, p.bhs[2], hi.hexdump(p.data)))
        got.append(p)
        if p.itt == stop_itt and p.opcode not in (hi.OP_R2T, hi.OP_DATA_IN):
            return got


# Was a bug: a non-immediate NOP-Out ping, Text Request, Logout Request or TMF Request ahead of
# ExpCmdSN was rejected, while a SCSI Command there was held: RFC 7143 §3.2.2.1 has every
# non-immediate PDU delivered in CmdSN order (src/transport/iscsi/conn.c holds them now).
def a_control_pdus_held(t):
    """A non-immediate ping (with data) and a Text Request (SendTargets) sent ahead of a gap,
    then a Logout ahead of another gap with a command behind it: each waits for its turn (an
    immediate ping passes them), runs when the gap is plugged, in CmdSN order; the Logout ends
    the session there and the command behind it never runs."""
    s = t.session()
    s.login()
    exp = s.cmd_sn
    nop, text = s.next_itt(), s.next_itt()
    ping_data = b"held-ping" * 7
    s.send(hi.pdu_bytes(hi.bhs_build(
        hi.OP_NOP_OUT, hi.FINAL, dsl=len(ping_data), itt=nop,
        fields={20: hi.RESERVED_TAG, 24: (exp + 1) & 0xFFFFFFFF, 28: s.exp_stat_sn}),
        ping_data))
    keys = hi.text_keys([("SendTargets", "All")])
    s.send(hi.pdu_bytes(hi.bhs_build(
        hi.OP_TEXT_REQ, hi.FINAL, dsl=len(keys), itt=text,
        fields={20: hi.RESERVED_TAG, 24: (exp + 2) & 0xFFFFFFFF, 28: s.exp_stat_sn}), keys))
    # Answered at once, before anything of the held ones (s.ping() wants its NOP-In first).
    p = s.ping()
    check(p.exp_cmd_sn == exp, "behind the gap: ExpCmdSN %d, expected %d" % (
        p.exp_cmd_sn, exp))
    plug = s.next_itt()
    s.send(s.cmd_pdu(hi.cdb_tur(), 0, itt=plug, cmd_sn=exp))
    got = answers_until(s, text, "the held ping and Text Request")
    order = [(p.opcode, p.itt) for p in got]
    check(order == [(hi.OP_SCSI_RSP, plug), (hi.OP_NOP_IN, nop), (OP_TEXT_RSP, text)],
          "after the plug: %r" % got)
    check(got[1].data == ping_data, "the held ping's data came back changed")
    check(b"TargetName=" + t.iqn.encode() in got[2].data, "the held SendTargets: %r" %
          got[2].data)
    check(got[2].exp_cmd_sn == (exp + 3) & 0xFFFFFFFF, "after the Text Response: ExpCmdSN %d"
          % got[2].exp_cmd_sn)
    s.exp_stat_sn = (got[2].stat_sn + 1) & 0xFFFFFFFF
    exp = s.cmd_sn = (exp + 3) & 0xFFFFFFFF
    lo, after = s.next_itt(), s.next_itt()
    s.send(hi.pdu_bytes(hi.bhs_build(
        hi.OP_LOGOUT_REQ, hi.FINAL | 0, itt=lo,
        fields={20: 1 << 16, 24: (exp + 1) & 0xFFFFFFFF, 28: s.exp_stat_sn})))
    s.send(s.cmd_pdu(hi.cdb_tur(), 0, itt=after, cmd_sn=(exp + 2) & 0xFFFFFFFF))
    s.ping()
    plug = s.next_itt()
    s.send(s.cmd_pdu(hi.cdb_tur(), 0, itt=plug, cmd_sn=exp))
    got = answers_until(s, lo, "the held Logout")
    check([(p.opcode, p.itt) for p in got] == [(hi.OP_SCSI_RSP, plug),
                                                (hi.OP_LOGOUT_RSP, lo)],
          "after the plug before the Logout: %r" % got)
    check(got[1].bhs[2] == 0, "the held Logout: response 0x%02x" % got[1].bhs[2])
    check(s.wait_closed(hi.WAIT), "not closed after the held Logout's response")
    s.close()
    return "ping and SendTargets answered in their turn; the Logout ended the session there"


# Was a bug: while a non-immediate TMF waited (with workers, LUN RESET goes by way of the home
# loop), a non-immediate ping at the CmdSN after it was rejected: it waits behind it now.
# Without workers the TMF acts at once and this passes either way.
def a_control_behind_tmf(t):
    """A non-immediate LOGICAL UNIT RESET and, in the same segment, a non-immediate ping at
    the CmdSN after it: both answered, no Reject, ExpCmdSN past both."""
    s = t.session()
    s.login()
    s.clear_unit_attention()
    exp = s.cmd_sn
    tmf, nop = s.next_itt(), s.next_itt()
    s.send(hi.pdu_bytes(hi.bhs_build(
        hi.OP_TMF_REQ, hi.FINAL | 5, lun=hi.lun_field(s.lun), itt=tmf,
        fields={20: hi.RESERVED_TAG, 24: exp, 28: s.exp_stat_sn, 32: exp})) +
        hi.pdu_bytes(hi.bhs_build(
            hi.OP_NOP_OUT, hi.FINAL, itt=nop,
            fields={20: hi.RESERVED_TAG, 24: (exp + 1) & 0xFFFFFFFF, 28: s.exp_stat_sn})))
    # The ping runs once the reset has acted, before or after the reset's response is sent.
    got = answers_until(s, nop, "a ping behind a LUN RESET")
    if got[-1].opcode == hi.OP_NOP_IN and len(got) == 1:
        got += answers_until(s, tmf, "a LUN RESET with a ping behind it")
    by = {(p.opcode, p.itt): p for p in got}
    check(len(got) == 2 and set(by) == {(OP_TMF_RSP, tmf), (hi.OP_NOP_IN, nop)},
          "a ping behind a LUN RESET: %r" % got)
    check(by[(OP_TMF_RSP, tmf)].bhs[2] == 0, "LUN RESET: response 0x%02x" %
          by[(OP_TMF_RSP, tmf)].bhs[2])
    check(by[(hi.OP_NOP_IN, nop)].exp_cmd_sn == (exp + 2) & 0xFFFFFFFF,
          "after the ping: ExpCmdSN %d" % by[(hi.OP_NOP_IN, nop)].exp_cmd_sn)
    s.cmd_sn = (exp + 2) & 0xFFFFFFFF
    s.clear_unit_attention()  # the reset's, for this nexus too
    s.logout()
    return "the ping answered after the LUN RESET"


# Was a bug: a command reusing the ITT of a live WRITE is rejected (task in progress, its
# CmdSN a gap); the ABORT TASK of that ITT that plugs the gap (RefCmdSN the rejected one's)
# aborted the live WRITE and left the gap, so the commands behind it never ran. RFC 7143
# §11.5.4: RefCmdSN tells the two apart; §11.5.1 b) uses up the CmdSN not received.
def a_reused_itt_abort_plug(t):
    """A WRITE waiting for its data; a TUR reusing its ITT (Reject 0x07); a TUR held behind
    that gap; an ABORT TASK of the ITT with the rejected TUR's RefCmdSN: Function complete,
    the held TUR runs, and the WRITE, untouched, completes and is written."""
    s = t.session()
    s.login(initial_r2t="Yes", immediate="No")
    lba = ATTACK_LBA + 49152 + 320  # beside tmf_spares_later's blocks
    witt, r2t = write_cmd_wait_r2t(s, lba, 8 * BS)
    gap = s.cmd_sn
    d = s.cmd_pdu(hi.cdb_tur(), 0, itt=witt, cmd_sn=gap)
    s.send(d)
    p = s.recv()
    check(p.opcode == hi.OP_REJECT and p.bhs[2] == REJECT_TASK_IN_PROGRESS,
          "a command reusing a live ITT: expected Reject 0x07, got %r" % p)
    held = s.next_itt()
    s.send(s.cmd_pdu(hi.cdb_tur(), 0, itt=held, cmd_sn=(gap + 1) & 0xFFFFFFFF))
    tmf = s.next_itt()
    s.send(hi.pdu_bytes(hi.bhs_build(
        hi.OP_TMF_REQ, hi.FINAL | 1, immediate=True, lun=hi.lun_field(s.lun), itt=tmf,
        fields={20: witt, 24: (gap + 2) & 0xFFFFFFFF, 28: s.exp_stat_sn, 32: gap})))
    got = answers_until(s, tmf, "ABORT TASK plugging the reused ITT's gap")
    check(got[-1].opcode == OP_TMF_RSP and got[-1].bhs[2] == 0,
          "ABORT TASK plugging the gap: %r" % got[-1])
    answered = {p.itt for p in got if p.opcode == hi.OP_SCSI_RSP}
    answered |= answered_until_ping(s, witt, "ABORT TASK plugging the gap")
    check(answered == {held}, "after the plug: answered %r, expected the held TUR 0x%08x"
          % (sorted(answered), held))
    s.cmd_sn = (gap + 2) & 0xFFFFFFFF
    wpat = b"\x5e" * (8 * BS)
    s.send(s.data_out_pdu(witt, r2t.ttt, 0, 0, wpat))
    p = s.expect(hi.OP_SCSI_RSP, witt, what="the WRITE whose ITT the ABORT TASK named")
    check(p.bhs[3] == hi.SAM_GOOD, "the live WRITE: status 0x%02x" % p.bhs[3])
    check(s.read(lba, 8) == wpat, "the live WRITE: not written")
    s.logout()
    return "the gap plugged, the held TUR ran, the live WRITE untouched"


# Was a bug: a WRITE pinned its whole data buffer (up to 8 MiB) from the moment its CDB
# arrived, so a session could make the target hold queue_depth x 8 MiB for data it never sent.
# Now buffers are allocated when data can arrive, and R2Ts wait while the session holds
# max_write_buffer_bytes (32 MiB) of write buffers (src/transport/iscsi/scsi.c).
def a_many_pending_writes(t):
    """256 of the largest WRITEs, each without data, then a disconnect: the memory reserved
    for commands that never get their data must stay bounded."""
    s = t.session()
    s.login(initial_r2t="Yes", immediate="No")
    vm0 = t.vmsize()
    for _ in range(256):
        itt = s.next_itt()
        s.send(s.cmd_pdu(hi.lun_lba_cdb_write16(ATTACK_LBA, (8 * MIB) // BS), 8 * MIB,
                         write=True, itt=itt))
        s.cmd_sn += 1
    # The R2Ts that come, up to an immediate ping's answer (everything before it is in).
    ping = s.next_itt()
    s.send(s.nop_pdu(itt=ping))
    r2ts = 0
    while True:
        p = s.recv()
        if p.opcode == hi.OP_NOP_IN and p.itt == ping:
            break
        r2ts += p.opcode == hi.OP_R2T
    vm, rss = t.vmsize(), t.rss()
    s.abort()
    check(rss <= t.rss_base + RSS_SLACK, "256 pending 8 MiB WRITEs (%d R2T): VmRSS %d KiB, "
          "VmSize +%d MiB" % (r2ts, rss // 1024, (vm - vm0) // MIB))
    return "%d R2T; VmSize +%d MiB while pending" % (r2ts, (vm - vm0) // MIB)


def a_login_logout_loop(t):
    """50 sessions logging in, reading and logging out; then 20 that just vanish."""
    for i in range(50):
        s = t.session()
        s.login()
        s.read(i, 1)
        s.logout()
        check(s.wait_closed(hi.WAIT), "session %d: not closed after the Logout Response" % i)
        s.close()
    for i in range(20):
        s = t.session()
        s.login()
        s.read(i, 1)
        s.abort()
    return "50 login/logout, 20 abandoned sessions"


ATTACKS = [
    a_prelogin_not_login,
    a_prelogin_huge_lengths,
    a_prelogin_random,
    a_login_text_flood,
    a_login_dsl_over_8k,
    a_edtl_1g_no_data,
    a_data_out_bad,
    a_dsl_over_mrdsl,
    a_cmdsn_outside_window,
    a_unknown_opcodes,
    a_nop_big,
    a_abort_mid_data_out,
    a_reset_mid_pdu,
    a_abort_unreceived_cmdsn,
    a_reset_held_cmdsn,
    a_reused_itt_gap,
    a_tmf_spares_later,
    a_control_pdus_held,
    a_control_behind_tmf,
    a_reused_itt_abort_plug,
    a_login_logout_loop,
    a_cmd_window_closed,
    a_many_pending_writes,
]
BACKGROUND = [HalfBhs, IdleConns, SlowDrip]
# Attacks that expose a target bug not fixed yet (see the # BUG: comment on each); --bugs
# runs them too.
BUGS = [
]


def main():
    global LOGIN_TIMEOUT_BOUND
    ap = argparse.ArgumentParser()
    ap.add_argument("--pid", type=int, required=True)
    ap.add_argument("--url", required=True)
    ap.add_argument("--readback", required=True)
    ap.add_argument("--only", default="", help="comma-separated attack names")
    ap.add_argument("--skip", default="", help="comma-separated attack names")
    ap.add_argument("--bugs", action="store_true", help="also run the known-bug attacks")
    ap.add_argument("--login-timeout-bound", type=float, default=LOGIN_TIMEOUT_BOUND,
                    help="seconds after which an unfinished login must be gone")
    args = ap.parse_args()
    LOGIN_TIMEOUT_BOUND = args.login_timeout_bound
    t = Target(args.pid, args.url, args.readback)
    only = set(filter(None, args.only.split(",")))
    skip = set(filter(None, args.skip.split(",")))

    def wanted(name):
        return (not only or name in only) and name not in skip

    t0 = time.monotonic()
    # The check region as it is now (zeros on a fresh RAM LUN), tracked from here on.
    t.model[:] = t.run([t.readback, t.url, str(CHECK_REGION)], binary=True)
    t.health("baseline")
    t.rss_base = t.rss()
    log("baseline VmRSS %d KiB" % (t.rss_base // 1024))
    failures = []
    bg = []
    for cls in BACKGROUND:
        if wanted(cls.name):
            a = cls()
            try:
                a.start(t)
                bg.append(a)
                log("started %s" % cls.name)
            except Exception as e:
                failures.append(cls.name)
                log("FAIL %s (start): %s" % (cls.name, e))
                traceback.print_exc()
    for fn in ATTACKS + (BUGS if args.bugs else []):
        name = fn.__name__[2:]
        if not wanted(name):
            continue
        t1 = time.monotonic()
        try:
            res = fn(t)
            rss = t.health(name)
            log("ok   %-22s %s [VmRSS %d KiB, %.1f s]" % (name, res, rss // 1024,
                                                          time.monotonic() - t1))
        except Exception as e:
            failures.append(name)
            log("FAIL %-22s %s: %s" % (name, type(e).__name__, e))
            traceback.print_exc()
            if not t.alive():
                log("the target is gone; stopping")
                break
    for a in bg:
        try:
            res = a.finish(t)
            rss = t.health(a.name)
            log("ok   %-22s %s [VmRSS %d KiB]" % (a.name, res, rss // 1024))
        except Exception as e:
            failures.append(a.name)
            log("FAIL %-22s %s: %s" % (a.name, type(e).__name__, e))
    log("%d checks, %.1f s, VmRSS %d KiB at the end (baseline %d KiB)" % (
        t.nchecks, time.monotonic() - t0, t.rss() // 1024 if t.alive() else -1,
        t.rss_base // 1024))
    if failures:
        log("FAILED: %s" % ", ".join(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
