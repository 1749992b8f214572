#!/bin/bash
# rbd_data.sh MINITARGET READBACK - a LUN on a Ceph RBD image (micro-ceph on 127.0.0.1):
# qemu-img writes a random image into it over iSCSI, iscsi_readback reads it back, and both
# must equal `rbd export` of the image (what the cluster really holds). A second LUN on
# another image has 4096-byte blocks. A second target (another gateway, another IQN) on the
# same image reports the same device identification (VPD 80h serial, 83h designators), and
# the identification differs between images. UNMAP, WRITE SAME (zeros: write_zeroes; other
# blocks: writesame) and GET LBA STATUS (diff iterate) on LUN 0 (thin). A resize with the rbd tool reaches both
# gateways' READ CAPACITY. Skipped without the Ceph packages.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/rbd_lib.sh"
it_init "${1:-}"
READBACK=${2:-}
[[ -x "$READBACK" ]] || it_fail "usage: $0 MINITARGET ISCSI_READBACK"
it_need qemu-img sha256sum iscsi-inq python3
qemu-img --help 2>/dev/null | grep -Eq '^Supported formats:.* iscsi( |$)' ||
	it_skip "qemu-img has no iscsi driver (install qemu-block-extra)"
rbd_need
rbd_cluster_up -S 32M

pool=$MICRO_CEPH_POOL
# img4k without an object map: GET LBA STATUS there lists the objects instead.
rbd create --size 16M --image-feature layering,exclusive-lock "$pool/img4k" ||
	it_fail "rbd create img4k"
# LUN 1 without librbd's cache, and the target's client asks librbd for its zero-copy writes
# (docs/rbd.md, "Zero-copy I/O"): LUN 1's writes take that path, LUN 0's cache copies.
export CEPH_ARGS="--rbd_disable_zero_copy_writes=false"
# -v: the checks below read the RBD backend's info lines (minitarget prints them only with -v).
it_start -v --lun "0:rbd:$pool/$MICRO_CEPH_IMAGE,thin" --lun "1:rbd:$pool/img4k,thin,bs=4096,nocache"
unset CEPH_ARGS

check_lun() { # LUN IMAGE BYTES
	local lun=$1 image=$2 size=$3 url=${IT_URLS[$1]} want got
	head -c "$size" /dev/urandom >"$IT_TMP/random.img"
	want=$(sha256sum <"$IT_TMP/random.img" | cut -d' ' -f1)
	it_log "LUN $lun ($image): writing $size random bytes with qemu-img"
	qemu-img convert -n -f raw -O raw "$IT_TMP/random.img" "$url" ||
		it_fail "qemu-img convert to LUN $lun failed"
	it_alive || it_fail "target died during the write"
	"$READBACK" -o "$IT_TMP/back.img" "$url" "$size" || it_fail "readback of LUN $lun failed"
	got=$(sha256sum <"$IT_TMP/back.img" | cut -d' ' -f1)
	[[ "$got" == "$want" ]] || it_fail "LUN $lun: read back $got, wrote $want"
	# qemu-img ended with SYNCHRONIZE CACHE: the cluster holds the data, whatever librbd's
	# client cache did.
	rbd export "$pool/$image" "$IT_TMP/export.img" >/dev/null 2>&1 ||
		it_fail "rbd export $pool/$image failed"
	got=$(head -c "$size" "$IT_TMP/export.img" | sha256sum | cut -d' ' -f1)
	[[ "$got" == "$want" ]] || it_fail "LUN $lun: rbd export has $got, wrote $want"
	rm -f "$IT_TMP/random.img" "$IT_TMP/back.img" "$IT_TMP/export.img"
}
check_lun 0 "$MICRO_CEPH_IMAGE" $((32 * 1024 * 1024))
check_lun 1 img4k $((16 * 1024 * 1024))

# Thin provisioning (LUN 0): VPD B0 states librbd's discard granularity (64 KiB = 128 blocks;
# smaller discards leave the data), an UNMAP of a whole 4 MiB object deallocates it in the
# cluster, WRITE SAME of zeros (rbd_aio_write_zeroes) reads back as zeros, neighbours keep
# their data. qemu-io sends UNMAP for "discard" and WRITE SAME for "write -z".
if command -v qemu-io >/dev/null 2>&1; then
	iscsi-inq -e 1 -c 176 "${IT_URLS[0]}" | grep -qi "optimal unmap granularity:128$" ||
		it_fail "VPD B0: $(iscsi-inq -e 1 -c 176 "${IT_URLS[0]}" 2>&1 | grep -i unmap)"
	qemu-io -f raw -c "write -P 0x55 0 12M" -c "discard 0 4M" -c "write -z 4M 1M" \
		"${IT_URLS[0]}" >"$IT_TMP/qemu-io.log" || it_fail "qemu-io: $(cat "$IT_TMP/qemu-io.log")"
	rbd diff --whole-object "$pool/$MICRO_CEPH_IMAGE" >"$IT_TMP/diff.txt" ||
		it_fail "rbd diff failed"
	if grep -q '^0 ' "$IT_TMP/diff.txt"; then
		it_fail "UNMAP of object 0 left it allocated: $(cat "$IT_TMP/diff.txt")"
	fi
	grep -q '^4194304 ' "$IT_TMP/diff.txt" || it_fail "object 1 gone: $(cat "$IT_TMP/diff.txt")"
	qemu-io -f raw -c "read -P 0 4M 1M" -c "read -P 0x55 5M 7M" "${IT_URLS[0]}" \
		>"$IT_TMP/qemu-io.log" || it_fail "read back after UNMAP/WRITE SAME: $(cat "$IT_TMP/qemu-io.log")"
	it_log "UNMAP deallocated object 0; WRITE SAME wrote zeros; the rest kept its data"

	# GET LBA STATUS from the image's allocation (rbd_diff_iterate2, whole objects): after
	# discarding object 0 and object 6 (24-28 MiB) of the fully written 32 MiB image, objects
	# 0 and 6 are deallocated, the others mapped. Asked from LBA 0 and from inside a run.
	qemu-io -f raw -c "discard 24M 4M" "${IT_URLS[0]}" >"$IT_TMP/qemu-io.log" ||
		it_fail "qemu-io discard: $(cat "$IT_TMP/qemu-io.log")"
	"$READBACK" -s 0 "${IT_URLS[0]}" >"$IT_TMP/lbas.txt" || it_fail "GET LBA STATUS failed"
	want=$'0 8192 1\n8192 40960 0\n49152 8192 1\n57344 8192 0'
	[[ "$(cat "$IT_TMP/lbas.txt")" == "$want" ]] ||
		it_fail "GET LBA STATUS from 0: $(tr '\n' ' ' <"$IT_TMP/lbas.txt"), want $(tr '\n' ' ' <<<"$want")"
	"$READBACK" -s 50000 "${IT_URLS[0]}" >"$IT_TMP/lbas.txt" || it_fail "GET LBA STATUS failed"
	want=$'50000 7344 1\n57344 8192 0'
	[[ "$(cat "$IT_TMP/lbas.txt")" == "$want" ]] ||
		it_fail "GET LBA STATUS from 50000: $(tr '\n' ' ' <"$IT_TMP/lbas.txt")"
	it_log "GET LBA STATUS reports the discarded objects 0 and 6 deallocated"
	# The same without an object map (LUN 1, 4096-byte blocks: 1024 per object): object 2
	# discarded.
	qemu-io -f raw -c "discard 8M 4M" "${IT_URLS[1]}" >"$IT_TMP/qemu-io.log" ||
		it_fail "qemu-io discard on LUN 1: $(cat "$IT_TMP/qemu-io.log")"
	"$READBACK" -s 0 "${IT_URLS[1]}" >"$IT_TMP/lbas.txt" || it_fail "GET LBA STATUS failed"
	want=$'0 2048 0\n2048 1024 1\n3072 1024 0'
	[[ "$(cat "$IT_TMP/lbas.txt")" == "$want" ]] ||
		it_fail "GET LBA STATUS without an object map: $(tr '\n' ' ' <"$IT_TMP/lbas.txt")"
	it_log "GET LBA STATUS without an object map reports object 2 deallocated"

	# WRITE SAME of a non-zero block (rbd_aio_writesame): 3000 blocks of 0xa7 from LBA 20000,
	# across an object boundary; the cluster holds exactly that, the neighbours are intact.
	"$READBACK" -w 20000,3000,167 "${IT_URLS[0]}" || it_fail "WRITE SAME of 0xa7 failed"
	rbd export "$pool/$MICRO_CEPH_IMAGE" "$IT_TMP/export.img" >/dev/null 2>&1 ||
		it_fail "rbd export failed"
	head -c $((3000 * 512)) /dev/zero | tr '\0' '\247' >"$IT_TMP/want.img"
	cmp <(tail -c +$((20000 * 512 + 1)) "$IT_TMP/export.img" | head -c $((3000 * 512))) \
		"$IT_TMP/want.img" || it_fail "WRITE SAME: the image does not hold the pattern"
	cmp <(tail -c +$((19999 * 512 + 1)) "$IT_TMP/export.img" | head -c 512) \
		<(head -c 512 /dev/zero | tr '\0' 'U') || it_fail "WRITE SAME: block 19999 changed"
	cmp <(tail -c +$((23000 * 512 + 1)) "$IT_TMP/export.img" | head -c 512) \
		<(head -c 512 /dev/zero | tr '\0' 'U') || it_fail "WRITE SAME: block 23000 changed"
	rm -f "$IT_TMP/export.img" "$IT_TMP/want.img"
	it_log "WRITE SAME of a non-zero block landed in the image as written"
fi

# libiscsi's own WRITE SAME (pattern write + read-back "Check" included) and GET LBA STATUS
# families on the thin RBD LUN.
if command -v iscsi-test-cu >/dev/null 2>&1; then
	env -u MALLOC_PERTURB_ timeout -k 10 300 iscsi-test-cu --dataloss \
		-t SCSI.WriteSame10,SCSI.WriteSame16,SCSI.GetLBAStatus "${IT_URLS[0]}" \
		>"$IT_TMP/cu.log" 2>&1 || { tail -40 "$IT_TMP/cu.log" >&2; it_fail "iscsi-test-cu"; }
	grep -Eq '^ +tests +[0-9]+ +[0-9]+ +[0-9]+ +0 ' "$IT_TMP/cu.log" ||
		{ tail -20 "$IT_TMP/cu.log" >&2; it_fail "iscsi-test-cu reported failures"; }
	it_log "iscsi-test-cu WriteSame10/16 and GetLBAStatus pass on the RBD LUN"
fi

# READ CAPACITY follows the image: 32 MiB of 512-byte blocks, 16 MiB of 4096-byte ones.
if command -v iscsi-readcapacity16 >/dev/null 2>&1; then
	cap=$(iscsi-readcapacity16 "${IT_URLS[1]}" 2>&1) || it_fail "READ CAPACITY (16): $cap"
	grep -q "LOGICAL BLOCK LENGTH IN BYTES:4096" <<<"$cap" || it_fail "LUN 1 block size: $cap"
	grep -q "RETURNED LOGICAL BLOCK ADDRESS:4095" <<<"$cap" || it_fail "LUN 1 capacity: $cap"
fi

# Device identification: derived from the image, not from the target.
# URL -> the serial number, then the logical unit's VPD 83h designators (association 0; the
# target port ones differ between gateways by design), in hex: NAA designators are binary.
ident() {
	iscsi-inq -e 1 -c 128 "$1" | sed -n 's/^Unit Serial Number:\[ *\(.*\)\]$/\1/p'
	iscsi-inq -e 1 -c 131 "$1" |
		awk '/^Association:\(0\)/ {lu = 1; next} lu && /^Designator:/ {print; lu = 0}' |
		od -An -tx1 | tr -d ' \n'
	echo
}
a0=$(ident "${IT_URLS[0]}")
a1=$(ident "${IT_URLS[1]}")
[[ -n "$(head -n 1 <<<"$a0")" && -n "$(sed -n 2p <<<"$a0")" ]] ||
	it_fail "LUN 0 lacks a serial number or a logical unit designator: $a0"
[[ "$a0" != "$a1" ]] || it_fail "two images share the identification: $a0"

port2=$(it_free_port)
# shellcheck disable=SC2086 # IT_TARGET_ARGS is a command line (lib.sh)
"$IT_TARGET" --portal "127.0.0.1:$port2" --iqn iqn.2026-11.org.libscsitgt:gateway-b \
	--lun "0:rbd:$pool/$MICRO_CEPH_IMAGE" ${IT_TARGET_ARGS:-} \
	>"$IT_TMP/b.out" 2>"$IT_TMP/b.err" </dev/null &
IT_HELPER_PIDS+=("$!")
for ((i = 0; i < 600; i++)); do
	grep -q '^iscsi://' "$IT_TMP/b.out" && break
	kill -0 "${IT_HELPER_PIDS[0]}" 2>/dev/null || it_fail "gateway B exited: $(cat "$IT_TMP/b.err")"
	sleep 0.1
done
url_b=$(grep -o 'iscsi://[^[:space:]]*' "$IT_TMP/b.out" | head -n 1)
[[ -n "$url_b" ]] || it_fail "gateway B printed no URL"
# Without -v minitarget prints notices and worse, the RBD backend's lines too (userx35 N8:
# its "opened as" info line, and a gateway's probe debug lines, came out all the same).
if grep -E "^minitarget: (info|debug): " "$IT_TMP/b.err"; then
	it_fail "minitarget without -v printed the lines above"
fi
b0=$(ident "$url_b")
it_log "identification on A: $(tr '\n' ' ' <<<"$a0")"
[[ "$a0" == "$b0" ]] || it_fail "gateways A and B report different identifications: $a0 / $b0"

# A resize seen by every gateway (librbd's update watch -> scsitgt_lun_resize(), CAPACITY DATA
# HAS CHANGED): grow the image with the rbd tool, both targets report the new capacity.
it_need iscsi-readcapacity16
rbd resize --size 48M "$pool/$MICRO_CEPH_IMAGE" >/dev/null 2>&1 || it_fail "rbd resize failed"
last=$((48 * 1024 * 1024 / 512 - 1))
for url in "${IT_URLS[0]}" "$url_b"; do
	for ((i = 0; i < 300; i++)); do
		iscsi-readcapacity16 "$url" 2>/dev/null |
			grep -q "RETURNED LOGICAL BLOCK ADDRESS:$last$" && break
		sleep 0.1
	done
	iscsi-readcapacity16 "$url" | grep -q "RETURNED LOGICAL BLOCK ADDRESS:$last$" ||
		it_fail "$url does not report the resized image: $(iscsi-readcapacity16 "$url" 2>&1)"
done
it_log "both gateways report the grown image (last LBA $last)"
kill -TERM "${IT_HELPER_PIDS[0]}"
wait "${IT_HELPER_PIDS[0]}" || it_fail "gateway B exited with status $? on SIGTERM"
IT_HELPER_PIDS=()

it_stop || it_fail "target exited with status $? on SIGTERM"

# Zero-copy I/O (docs/rbd.md; RBD_ZERO_COPY=1 from meson when the build has the C++ read
# path): the 1 MiB READs above went out of librbd's own buffers on both LUNs, and LUN 1
# (nocache, rbd_disable_zero_copy_writes=false) wrote without librbd's copy, so the data
# checks above passed through those paths. LUN 0's writearound cache copies writes.
if [[ "${RBD_ZERO_COPY:-0}" == 1 ]]; then
	grep -q "rbd/$MICRO_CEPH_IMAGE: opened as .*, zero-copy reads$" "$IT_TMP/target.err" ||
		it_fail "LUN 0 did not announce zero-copy reads: $(grep 'opened as' "$IT_TMP/target.err")"
	grep -q "rbd/img4k: opened as .*, zero-copy reads and writes$" "$IT_TMP/target.err" ||
		it_fail "LUN 1 did not announce zero-copy reads and writes: $(grep 'opened as' "$IT_TMP/target.err")"
	for image in "$MICRO_CEPH_IMAGE" img4k; do
		zc=$(grep -o "rbd/$image: closed (zero-copy reads: .*)" "$IT_TMP/target.err" |
			tail -n 1 || true)
		lent=$(sed -n 's/.*zero-copy reads: \([0-9]*\) lent.*/\1/p' <<<"$zc")
		[[ "${lent:-0}" -gt 0 ]] || it_fail "zero-copy reads announced but not used: '$zc'"
		it_log "$zc"
	done
fi
# With connections on worker loops (the default when IT_TARGET_ARGS asks for workers, unless
# --conn-workers 0 or SCSITGT_CONN_WORKERS=0 keeps them home: docs/threading.md), the LUNs' ios
# ran on the workers: the backend made a completion queue for another loop than home
# (docs/rbd.md, "Threads").
cw_env=${SCSITGT_CONN_WORKERS:-${SCSITGT_EXPERIMENTAL_CONN_WORKERS:-}}
if [[ " ${IT_TARGET_ARGS:-} " =~ \ --workers\ ([1-9]|auto) &&
	" ${IT_TARGET_ARGS:-} " != *" --conn-workers 0 "* && "$cw_env" != 0 ]]; then
	grep -q "another loop submits: its own completion queue" "$IT_TMP/target.err" ||
		it_fail "connections on workers, but no RBD io was submitted on a worker loop"
	it_log "RBD ios submitted on worker loops"
fi
it_log "PASS"
