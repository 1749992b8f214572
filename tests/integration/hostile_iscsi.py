# SPDX-License-Identifier: MIT
"""hostile_iscsi - a small, deliberately permissive iSCSI initiator for the hostile-client tests.

Written from RFC 7143 (standard library only). It builds every PDU field by hand so that the
tests can send what a correct initiator never would: wrong lengths, unknown opcodes, sequence
numbers outside the window, Data-Out that breaks its sequence. No digests are negotiated, so a
PDU on the wire is BHS (48 bytes), AHS, data segment and pad (RFC 7143 §11.1).
"""

import os
import socket
import struct
import time

BHS_LEN = 48  # RFC 7143 §11.2.1
LOGIN_DSL_MAX = 8192  # RFC 7143 §6.2: what a login PDU may carry before negotiation
RESERVED_TAG = 0xFFFFFFFF

# Opcodes (RFC 7143 §11.2.1.2).
OP_NOP_OUT = 0x00
OP_SCSI_CMD = 0x01
OP_TMF_REQ = 0x02
OP_LOGIN_REQ = 0x03
OP_TEXT_REQ = 0x04
OP_DATA_OUT = 0x05
OP_LOGOUT_REQ = 0x06
OP_NOP_IN = 0x20
OP_SCSI_RSP = 0x21
OP_LOGIN_RSP = 0x23
OP_TEXT_RSP = 0x24
OP_DATA_IN = 0x25
OP_LOGOUT_RSP = 0x26
OP_R2T = 0x31
OP_ASYNC = 0x32
OP_REJECT = 0x3F
IMMEDIATE = 0x40
FINAL = 0x80

# Reject reasons (RFC 7143 §11.17.1).
REJECT_PROTOCOL_ERROR = 0x04
REJECT_CMD_NOT_SUPPORTED = 0x05
REJECT_INVALID_PDU_FIELD = 0x09

# Login stages (RFC 7143 §11.12.1).
STAGE_SECURITY = 0
STAGE_OPERATIONAL = 1
STAGE_FFP = 3

# SCSI Command flags (RFC 7143 §11.3.1).
CMD_READ = 0x40
CMD_WRITE = 0x20
ATTR_SIMPLE = 0x01

SAM_GOOD = 0x00
SAM_CHECK_CONDITION = 0x02

INITIATOR_BASE = "iqn.2026-11.org.libscsitgt:hostile"
# How long to wait for something the target must do (an answer, a close): an upper bound for
# a slow, loaded machine, never a measurement; a passing test never waits for it.
WAIT = float(os.environ.get("IT_WAIT_BOUND", "60"))


class ProtocolError(AssertionError):
    """The target answered something the test did not expect."""


class Closed(Exception):
    """The target closed the connection (EOF or reset)."""


def SN_LT(a, b):
    """RFC 1982 serial number comparison a < b on 32 bits (RFC 7143 §4.2.2.1)."""
    return a != b and ((b - a) & 0xFFFFFFFF) < 0x80000000


def pad4(n):
    return (4 - (n & 3)) & 3


def hexdump(b, limit=48):
    return b[:limit].hex()


class PDU:
    """A received PDU: the header, AHS and data segment, with the common fields decoded."""

    def __init__(self, bhs, ahs=b"", data=b""):
        self.bhs = bytes(bhs)
        self.ahs = ahs
        self.data = data
        self.opcode = bhs[0] & 0x3F
        self.flags = bhs[1]
        self.itt = struct.unpack_from(">I", bhs, 16)[0]
        self.ttt = struct.unpack_from(">I", bhs, 20)[0]
        self.stat_sn = struct.unpack_from(">I", bhs, 24)[0]
        self.exp_cmd_sn = struct.unpack_from(">I", bhs, 28)[0]
        self.max_cmd_sn = struct.unpack_from(">I", bhs, 32)[0]

    def u32(self, off):
        return struct.unpack_from(">I", self.bhs, off)[0]

    def __repr__(self):
        return "PDU(op=0x%02x flags=0x%02x itt=0x%08x dsl=%d bhs=%s)" % (
            self.opcode, self.flags, self.itt, len(self.data), hexdump(self.bhs))


def bhs_build(opcode, flags=0, immediate=False, ahs_words=0, dsl=0, lun=0, itt=0,
              fields=None, raw=None):
    """A 48-byte BHS. @fields maps byte offsets to 32-bit big-endian values (bytes 20..47);
    @raw maps offsets to byte strings written last (for anything else)."""
    b = bytearray(BHS_LEN)
    b[0] = (opcode & 0x3F) | (IMMEDIATE if immediate else 0)
    b[1] = flags & 0xFF
    b[4] = ahs_words & 0xFF
    b[5:8] = (dsl & 0xFFFFFF).to_bytes(3, "big")
    struct.pack_into(">Q", b, 8, lun)
    struct.pack_into(">I", b, 16, itt & 0xFFFFFFFF)
    for off, val in (fields or {}).items():
        struct.pack_into(">I", b, off, val & 0xFFFFFFFF)
    for off, val in (raw or {}).items():
        b[off:off + len(val)] = val
    return bytes(b)


def pdu_bytes(bhs, data=b"", ahs=b""):
    """A whole PDU: the BHS's DataSegmentLength must already say len(data)."""
    return bhs + ahs + data + bytes(pad4(len(data)))


def lun_field(lun):
    """Single-level LUN structure (SAM-5 §4.7.3, peripheral addressing for LUN < 256)."""
    return (lun & 0xFF) << 48 if lun < 256 else ((0x40 | (lun >> 8)) << 56) | ((lun & 0xFF) << 48)


def text_keys(pairs):
    return b"".join(("%s=%s" % (k, v)).encode() + b"\0" for k, v in pairs)


def parse_keys(data):
    out = {}
    for item in data.split(b"\0"):
        if b"=" in item:
            k, v = item.split(b"=", 1)
            out[k.decode(errors="replace")] = v.decode(errors="replace")
    return out


def lun_lba_cdb_write16(lba, blocks):
    return struct.pack(">BBQIBB", 0x8A, 0, lba, blocks, 0, 0)


def cdb_read16(lba, blocks):
    return struct.pack(">BBQIBB", 0x88, 0, lba, blocks, 0, 0)


def cdb_tur():
    return bytes(6)


class Conn:
    """One TCP connection to the target, with a bounded-wait PDU reader."""

    def __init__(self, host, port, timeout=WAIT):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.default_timeout = timeout
        self.buf = bytearray()

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def abort(self):
        """Close with a TCP reset rather than a FIN (SO_LINGER 0)."""
        try:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
        self.close()

    def send(self, data):
        try:
            self.sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError) as e:
            raise Closed("send: %s" % e)

    def _fill(self, n, deadline):
        while len(self.buf) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise socket.timeout("no data within the wait")
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(max(65536, n - len(self.buf)))
            except ConnectionResetError as e:
                raise Closed("reset: %s" % e)
            if not chunk:
                raise Closed("EOF")
            self.buf += chunk

    def _take(self, n):
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out

    def recv_pdu(self, timeout=None):
        """The next PDU; raises Closed at EOF, socket.timeout when nothing comes in time."""
        deadline = time.monotonic() + (self.default_timeout if timeout is None else timeout)
        self._fill(BHS_LEN, deadline)
        ahs_len = self.buf[4] * 4
        dsl = int.from_bytes(self.buf[5:8], "big")
        total = BHS_LEN + ahs_len + dsl + pad4(dsl)
        self._fill(total, deadline)
        raw = self._take(total)
        return PDU(raw[:BHS_LEN], raw[BHS_LEN:BHS_LEN + ahs_len],
                   raw[BHS_LEN + ahs_len:BHS_LEN + ahs_len + dsl])

    def wait_closed(self, timeout):
        """True when the target closes the connection within @timeout (input is dropped)."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(65536)
            except ConnectionResetError:
                return True
            except socket.timeout:
                return False
            if not chunk:
                return True

    def closed_now(self):
        """Non-blocking: True if the peer has closed (pending input is drained)."""
        try:
            self.sock.setblocking(False)
            while True:
                chunk = self.sock.recv(65536)
                if not chunk:
                    return True
        except BlockingIOError:
            return False
        except (ConnectionResetError, OSError):
            return True
        finally:
            try:
                self.sock.setblocking(True)
            except OSError:
                pass


class Session(Conn):
    """A normal session on one connection (ErrorRecoveryLevel 0, no digests)."""

    _isid_counter = 0

    def __init__(self, host, port, iqn, lun=0, initiator=None, timeout=WAIT):
        super().__init__(host, port, timeout)
        Session._isid_counter += 1
        self.iqn = iqn
        self.lun = lun
        self.initiator = initiator or "%s:%d" % (INITIATOR_BASE, Session._isid_counter)
        # ISID type 0x80 (random qualifier, RFC 7143 §11.12.5), unique per Session object.
        self.isid = bytes([0x80, 0x12, 0x34]) + (Session._isid_counter & 0xFFFFFF).to_bytes(3, "big")
        self.itt = 0x100
        self.cmd_sn = 1
        self.exp_stat_sn = 0
        self.tsih = 0
        self.max_cmd_sn = 0
        self.target_keys = {}
        # HeaderDigest offered at login. Only "None" suits the PDU code here; login_window.py
        # offers CRC32C and digests its logout itself.
        self.header_digest = "None"
        self.mrdsl_target = LOGIN_DSL_MAX  # what the target accepts from us
        self.mrdsl_ours = 262144            # what we accept (declared)
        self.first_burst = 0
        self.max_burst = 0
        self.immediate_data = False
        self.initial_r2t = True
        self.pings_answered = 0

    def next_itt(self):
        self.itt += 1
        if self.itt == RESERVED_TAG:
            self.itt = 1
        return self.itt

    # --- login (RFC 7143 §6, §11.12) ---

    def login_pdu(self, csg, nsg, transit, data, cont=False, itt=None):
        flags = (csg << 2) | (nsg if transit else 0)
        if transit:
            flags |= 0x80
        if cont:
            flags |= 0x40
        return pdu_bytes(bhs_build(
            OP_LOGIN_REQ, flags, immediate=True, dsl=len(data),
            itt=self.itt if itt is None else itt,
            fields={24: self.cmd_sn, 28: self.exp_stat_sn},
            raw={8: self.isid, 14: struct.pack(">H", self.tsih), 20: struct.pack(">H", 1)}),
            data)

    def security_text(self):
        return text_keys([("InitiatorName", self.initiator), ("SessionType", "Normal"),
                          ("TargetName", self.iqn), ("AuthMethod", "None")])

    def operational_text(self, initial_r2t="No", immediate="Yes"):
        return text_keys([
            ("HeaderDigest", self.header_digest), ("DataDigest", "None"),
            ("MaxRecvDataSegmentLength", str(self.mrdsl_ours)),
            ("InitialR2T", initial_r2t), ("ImmediateData", immediate),
            ("MaxBurstLength", "1048576"), ("FirstBurstLength", "65536"),
            ("MaxOutstandingR2T", "1"), ("ErrorRecoveryLevel", "0"),
            ("DefaultTime2Wait", "0"), ("DefaultTime2Retain", "0"),
            ("MaxConnections", "1"), ("DataPDUInOrder", "Yes"),
            ("DataSequenceInOrder", "Yes")])

    def login_exchange(self, raw_pdu, dribble=0.0):
        """Send one login PDU (optionally one byte at a time, @dribble s apart) and return the
        Login Response; a non-zero status raises ProtocolError."""
        if dribble:
            for i in range(len(raw_pdu)):
                self.send(raw_pdu[i:i + 1])
                time.sleep(dribble)
        else:
            self.send(raw_pdu)
        rsp = self.recv_pdu()
        if rsp.opcode != OP_LOGIN_RSP:
            raise ProtocolError("login: expected a Login Response, got %r" % rsp)
        status = (rsp.bhs[36] << 8) | rsp.bhs[37]
        self.exp_stat_sn = (rsp.stat_sn + 1) & 0xFFFFFFFF
        if status != 0:
            raise ProtocolError("login refused: status 0x%04x" % status)
        self.target_keys.update(parse_keys(rsp.data))
        return rsp

    def login(self, initial_r2t="No", immediate="Yes", dribble_first=0.0):
        """Security stage (AuthMethod=None) then operational stage, into full feature phase."""
        self.next_itt()
        rsp = self.login_exchange(
            self.login_pdu(STAGE_SECURITY, STAGE_OPERATIONAL, True, self.security_text()),
            dribble=dribble_first)
        stage = (rsp.flags & 0x03) if rsp.flags & 0x80 else STAGE_SECURITY
        for _ in range(4):
            if stage == STAGE_OPERATIONAL:
                break
            rsp = self.login_exchange(
                self.login_pdu(STAGE_SECURITY, STAGE_OPERATIONAL, True, b""))
            stage = (rsp.flags & 0x03) if rsp.flags & 0x80 else STAGE_SECURITY
        if stage != STAGE_OPERATIONAL:
            raise ProtocolError("login: the target never left the security stage")
        text = self.operational_text(initial_r2t, immediate)
        for _ in range(4):
            rsp = self.login_exchange(self.login_pdu(STAGE_OPERATIONAL, STAGE_FFP, True, text))
            if rsp.flags & 0x80 and rsp.flags & 0x03 == STAGE_FFP:
                break
            text = b""
        else:
            raise ProtocolError("login: the target never entered full feature phase")
        self.tsih = struct.unpack_from(">H", rsp.bhs, 14)[0]
        self.cmd_sn = rsp.exp_cmd_sn
        self.max_cmd_sn = rsp.max_cmd_sn
        k = self.target_keys
        self.mrdsl_target = int(k.get("MaxRecvDataSegmentLength", LOGIN_DSL_MAX))
        self.first_burst = min(65536, int(k.get("FirstBurstLength", 65536)))
        self.max_burst = min(1048576, int(k.get("MaxBurstLength", 1048576)))
        self.immediate_data = immediate == "Yes" and k.get("ImmediateData", "Yes") == "Yes"
        self.initial_r2t = initial_r2t == "Yes" or k.get("InitialR2T", "No") == "Yes"
        if k.get("HeaderDigest", "None") == "None":
            self.clear_unit_attention()  # SCSI commands here carry no digest
        return rsp

    def clear_unit_attention(self):
        """A new I_T nexus first reports POWER ON, RESET, OR BUS DEVICE RESET OCCURRED (SAM-5
        §5.14, SPC-5 §5.14); like a real initiator, take it with TEST UNIT READY before the
        test's own commands."""
        for _ in range(4):
            st, _, sense, p = self.scsi(cdb_tur())
            self.max_cmd_sn = p.max_cmd_sn
            if st == SAM_GOOD:
                return
            if st != 0x02 or len(sense) < 3 or sense[2] & 0x0F != 0x06:
                raise ProtocolError("TEST UNIT READY after login: status 0x%02x sense %s"
                                    % (st, sense.hex()))
        raise ProtocolError("unit attentions did not clear after login")

    # --- full feature phase ---

    def answer_ping(self, p):
        """If @p is a target's NOP-In ping (RFC 7143 §11.19: a NOP-In with a TTT asks for a
        NOP-Out echo), answer it and return True."""
        if p.opcode != OP_NOP_IN or p.itt != RESERVED_TAG or p.ttt == RESERVED_TAG:
            return False
        self.send(pdu_bytes(bhs_build(
            OP_NOP_OUT, FINAL, immediate=True, lun=struct.unpack_from(">Q", p.bhs, 8)[0],
            itt=RESERVED_TAG, fields={20: p.ttt, 24: self.cmd_sn, 28: self.exp_stat_sn})))
        self.pings_answered += 1
        return True

    def recv(self, timeout=None):
        """The next PDU other than the target's NOP-In pings, which are answered here, and
        Async Messages, which are dropped."""
        while True:
            p = self.recv_pdu(timeout)
            if self.answer_ping(p):
                continue
            if p.opcode == OP_ASYNC:
                continue
            if p.opcode in (OP_SCSI_RSP, OP_NOP_IN, OP_LOGOUT_RSP, OP_REJECT) or (
                    p.opcode == OP_DATA_IN and p.flags & 0x01):
                self.exp_stat_sn = (p.stat_sn + 1) & 0xFFFFFFFF
            return p

    def cmd_pdu(self, cdb, edtl, read=False, write=False, data=b"", final=True, itt=None,
                cmd_sn=None, immediate=False):
        flags = (FINAL if final else 0) | (CMD_READ if read else 0) | \
            (CMD_WRITE if write else 0) | ATTR_SIMPLE
        return pdu_bytes(bhs_build(
            OP_SCSI_CMD, flags, immediate=immediate, dsl=len(data), lun=lun_field(self.lun),
            itt=self.itt if itt is None else itt,
            fields={20: edtl, 24: self.cmd_sn if cmd_sn is None else cmd_sn,
                    28: self.exp_stat_sn},
            raw={32: cdb.ljust(16, b"\0")}), data)

    def data_out_pdu(self, itt, ttt, datasn, offset, data, final=True, dsl=None):
        return pdu_bytes(bhs_build(
            OP_DATA_OUT, FINAL if final else 0, dsl=len(data) if dsl is None else dsl,
            lun=lun_field(self.lun), itt=itt,
            fields={20: ttt, 28: self.exp_stat_sn, 36: datasn, 40: offset}), data)

    def nop_pdu(self, data=b"", itt=None, immediate=True, dsl=None):
        return pdu_bytes(bhs_build(
            OP_NOP_OUT, FINAL, immediate=immediate, dsl=len(data) if dsl is None else dsl,
            itt=self.itt if itt is None else itt,
            fields={20: RESERVED_TAG, 24: self.cmd_sn, 28: self.exp_stat_sn}), data)

    def expect(self, opcode, itt=None, timeout=None, what=""):
        p = self.recv(timeout)
        if p.opcode != opcode or (itt is not None and p.itt != itt):
            raise ProtocolError("%s: expected opcode 0x%02x itt %s, got %r" % (
                what, opcode, "any" if itt is None else "0x%08x" % itt, p))
        return p

    def ping(self, data=b"", timeout=None):
        """NOP-Out ping (immediate, ITT set): the NOP-In must echo ITT and data."""
        itt = self.next_itt()
        self.send(self.nop_pdu(data, itt=itt))
        p = self.expect(OP_NOP_IN, itt, timeout, "ping")
        return p

    def scsi(self, cdb, read_len=0, write_data=None, timeout=None):
        """Run one command to completion with correct R2T handling. Returns (status, data,
        sense, response PDU)."""
        itt = self.next_itt()
        w = write_data is not None
        data = write_data or b""
        edtl = len(data) if w else read_len
        imm = b""
        if w and self.immediate_data:
            imm = data[:min(self.first_burst, self.mrdsl_target)]
        sent = len(imm)
        # Unsolicited Data-Out beyond the immediate data is not used: F is set when no more
        # unsolicited data follows, which keeps every further byte solicited by R2T.
        self.send(self.cmd_pdu(cdb, edtl, read=not w and read_len > 0, write=w, data=imm,
                               itt=itt))
        self.cmd_sn = (self.cmd_sn + 1) & 0xFFFFFFFF
        got = bytearray()
        while True:
            p = self.recv(timeout)
            if p.itt != itt:
                raise ProtocolError("command 0x%08x: unexpected %r" % (itt, p))
            if p.opcode == OP_DATA_IN:
                off = p.u32(40)
                if off != len(got):
                    raise ProtocolError("Data-In offset %d, expected %d" % (off, len(got)))
                got += p.data
                if p.flags & 0x01:
                    return p.bhs[3], bytes(got), b"", p
            elif p.opcode == OP_R2T:
                off, want = p.u32(40), p.u32(44)
                if off + want > len(data):
                    raise ProtocolError("R2T for [%d, +%d) beyond %d bytes" % (off, want, len(data)))
                datasn = 0
                pos = off
                while pos < off + want:
                    n = min(self.mrdsl_target, off + want - pos)
                    self.send(self.data_out_pdu(itt, p.ttt, datasn, pos, data[pos:pos + n],
                                                final=pos + n == off + want))
                    datasn += 1
                    pos += n
                sent = max(sent, off + want)
            elif p.opcode == OP_SCSI_RSP:
                sense = b""
                if len(p.data) >= 2:
                    sl = struct.unpack_from(">H", p.data, 0)[0]
                    sense = p.data[2:2 + sl]
                if p.bhs[2] != 0:
                    raise ProtocolError("command 0x%08x: iSCSI response 0x%02x" % (itt, p.bhs[2]))
                return p.bhs[3], bytes(got), sense, p
            else:
                raise ProtocolError("command 0x%08x: unexpected %r" % (itt, p))

    def read(self, lba, blocks, bs=512):
        st, data, sense, _ = self.scsi(cdb_read16(lba, blocks), read_len=blocks * bs)
        if st != SAM_GOOD:
            raise ProtocolError("READ(16) lba %d: status 0x%02x sense %s" % (lba, st, sense.hex()))
        return data

    def write(self, lba, data, bs=512):
        st, _, sense, _ = self.scsi(lun_lba_cdb_write16(lba, len(data) // bs), write_data=data)
        if st != SAM_GOOD:
            raise ProtocolError("WRITE(16) lba %d: status 0x%02x sense %s" % (lba, st, sense.hex()))

    def logout(self, timeout=None):
        itt = self.next_itt()
        self.send(pdu_bytes(bhs_build(OP_LOGOUT_REQ, FINAL | 0, immediate=True, itt=itt,
                                      fields={20: 1 << 16, 24: self.cmd_sn,
                                              28: self.exp_stat_sn})))
        p = self.expect(OP_LOGOUT_RSP, itt, timeout, "logout")
        if p.bhs[2] != 0:
            raise ProtocolError("logout response 0x%02x" % p.bhs[2])
        return p
