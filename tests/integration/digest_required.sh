#!/bin/bash
# digest_required.sh MINITARGET READBACK - a target required to use digests never runs without
# them.
# RFC 7143 §6.2.1: when no offered value is acceptable the responder answers Reject or
# terminates the negotiation; Reject leaves the key at its default, None (§13.1), so a target
# that requires CRC32C must fail the login (status 0x0200) instead of going on without it.
#  1. --header-digest: libiscsi offering HeaderDigest=None (iscsi_readback with the URL argument
#     header_digest=none) is refused with 0x0200, and no session is made;
#  2. iscsi-inq, which offers HeaderDigest=None,CRC32C, gets CRC32C, and tshark's iSCSI
#     dissector finds a good header digest on every full feature phase PDU of the target (SCSI
#     Response, Data-In);
#  3. --data-digest: libiscsi offers DataDigest=None only, so its login is refused.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
it_init "${1:-}"
READBACK=${2:-}
[[ -x "$READBACK" ]] || it_fail "usage: $0 MINITARGET ISCSI_READBACK"
it_need iscsi-inq tshark python3

# One login and INQUIRY with iscsi-inq: it offers HeaderDigest=None,CRC32C, DataDigest=None.
inq() {
	iscsi-inq "${IT_URLS[0]}" >"$IT_TMP/inq.out" 2>"$IT_TMP/inq.err"
}

# One login and a 4 KiB read with iscsi_readback, the URL query ($1) choosing the offer.
readback() {
	"$READBACK" "${IT_URLS[0]}$1" 4096 >/dev/null 2>"$IT_TMP/readback.err"
}

it_start --lun 0:ram:16M --header-digest -v

it_log "HeaderDigest=None offered to a target that requires CRC32C"
if readback '?header_digest=none'; then
	it_fail "login with HeaderDigest=None succeeded"
fi
grep -q 'Initiator error' "$IT_TMP/readback.err" ||
	it_fail "libiscsi did not report an initiator error: $(cat "$IT_TMP/readback.err")"
it_wait_log "$IT_TMP/target.err" 'did not agree to the digests required (HeaderDigest=CRC32C'
it_wait_log "$IT_TMP/target.err" 'refused: .*(0x0200)'
grep -q 'normal session login' "$IT_TMP/target.err" &&
	it_fail "a session was created: $(grep 'normal session login' "$IT_TMP/target.err")"

it_log "HeaderDigest=None,CRC32C offered: CRC32C, and digests on the wire"
it_capture_until inq
grep -q 'Vendor' "$IT_TMP/inq.out" || it_fail "no INQUIRY data: $(cat "$IT_TMP/inq.out")"
it_wait_log "$IT_TMP/target.err" 'normal session login.*, header digest'
it_capture_stop
answers=$(it_sent_values HeaderDigest)
it_log "target's HeaderDigest answers: $(sort <<<"$answers" | uniq -c | tr '\n' ' ')"
grep -qv '^CRC32C$' <<<"$answers" && it_fail "the target answered HeaderDigest other than CRC32C"
# Wireshark follows the login text of the conversation and checks the digest it announced.
# Full feature phase PDUs of the target: SCSI Response (0x21), SCSI Data-In (0x25).
# Every iSCSI PDU of the frames that hold one must carry a good one.
tshark -r "$IT_TMP/cap.pcapng" -d "tcp.port==$IT_PORT,iscsi" -V \
	-Y 'iscsi.opcode == 0x21 || iscsi.opcode == 0x25' >"$IT_TMP/ffp.txt" 2>/dev/null || true
pdus=$(grep -c '^iSCSI (' "$IT_TMP/ffp.txt" || true)
good=$(grep -c '^ *HeaderDigest: 0x[0-9a-f]* (Good CRC32)' "$IT_TMP/ffp.txt" || true)
it_log "full feature phase PDUs from the target: $pdus, with a good header digest: $good"
[[ $pdus -gt 0 ]] || it_fail "tshark found no SCSI Response or Data-In in the capture"
[[ $good -eq $pdus ]] ||
	it_fail "not every PDU carries a good header digest: $(grep -E '^iSCSI|Digest' "$IT_TMP/ffp.txt" | head)"
it_stop || it_fail "target exited with status $? on SIGTERM"

it_log "DataDigest required: libiscsi offers DataDigest=None only"
it_start --lun 0:ram:16M --data-digest -v
if inq; then
	it_fail "login without DataDigest=CRC32C succeeded: $(cat "$IT_TMP/inq.out")"
fi
it_wait_log "$IT_TMP/target.err" 'did not agree to the digests required (HeaderDigest=CRC32C,None, DataDigest=CRC32C)'
it_wait_log "$IT_TMP/target.err" 'refused: .*(0x0200)'
it_stop || it_fail "target exited with status $? on SIGTERM"
it_log "PASS"
