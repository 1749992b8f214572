#!/bin/bash
# rbd_scsitgtctl.sh SCSITGTD SCSITGTCTL - scsitgtctl add-lun of RBD LUNs whose image cannot be
# opened (docs/scsitgtd.md, "Control socket"; userx35 B4, D5, D7). add-lun of an image that does
# not exist answers -32002 with the reason (the step and errno the RBD backend logged), after the
# open, and leaves no trace: show, save and a second add-lun of the same number agree. add-lun
# of an existing image answers once the LUN exists (show lists it at once). Without any
# ceph.conf the reason says so and what to set. An open longer than the answer waits (a dead
# monitor): answered "still opening", and its failure later takes the LUN out all the same.
# A reload of a file whose LUNs fail (a missing image, a missing file) answers once the file's
# images are open (10 s at most, then "opening") with each LUN not created and why; show lists
# them as failed with that reason, save writes them, the log line (SIGHUP too) names them.
# Skipped without Ceph, json-c or libinih.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/rbd_lib.sh"
it_init "${1:-}"
CTL=${2:-}
[[ -x "$CTL" ]] || it_fail "usage: $0 SCSITGTD SCSITGTCTL"
it_need jq
rbd_need
rbd_cluster_up -S 16M

IQN=iqn.2026-12.org.libscsitgt:ghost
SOCK=$IT_TMP/ctl.sock
CONF=$IT_TMP/scsitgtd.conf
PORT=$(it_free_port)
ctl() { "$CTL" -s "$SOCK" "$@"; }
luns() { ctl show | jq -c '[.targets[0].luns[].id]'; }
# write_conf [EXTRA-SECTIONS]
write_conf() {
	printf '[engine]\nlog_level = info\ncontrol_socket = %s\n\n' "$SOCK" >"$CONF"
	printf '[portal]\naddress = 127.0.0.1\nport = %s\n\n' "$PORT" >>"$CONF"
	printf '[target]\nname = %s\n\n[lun 0]\nbackend = ram\nsize = 16M\n%s' "$IQN" "${1:-}" \
		>>"$CONF"
}
# expect_failed WHAT PATTERN...: the last add-lun ($IT_TMP/err.json) failed with -32002 and a
# message that matches every PATTERN.
expect_failed() {
	local what=$1 p
	shift
	[[ $(jq -r .code "$IT_TMP/err.json") == -32002 ]] || it_fail "$what: $(cat "$IT_TMP/err.json")"
	for p in "$@"; do
		jq -r .message "$IT_TMP/err.json" | grep -q -- "$p" ||
			it_fail "$what: no \"$p\" in $(cat "$IT_TMP/err.json")"
	done
	it_log "$what: $(jq -r .message "$IT_TMP/err.json")"
}
# not_saved N: `save` does not write a [lun N] section.
not_saved() {
	ctl save "$IT_TMP/saved.conf" >/dev/null || it_fail "save failed"
	if grep -q "^\[lun $1\]" "$IT_TMP/saved.conf"; then
		it_fail "save writes LUN $1, which was not created: $(grep -A3 "^\[lun $1\]" "$IT_TMP/saved.conf")"
	fi
}

# The daemon runs without a ceph.conf of its own: each RBD LUN names one (rbd_conf), but one.
write_conf
conf=$CEPH_CONF
unset CEPH_CONF
it_scsitgtd_start "$CONF"
export CEPH_CONF=$conf

# An image that does not exist: the answer comes after the open, with its reason.
if ctl add-lun "$IQN" 5 backend=rbd path="$MICRO_CEPH_POOL/nosuch" rbd_conf="$CEPH_CONF" \
	>"$IT_TMP/out.json" 2>"$IT_TMP/err.json"; then
	it_fail "add-lun of a missing image answered $(cat "$IT_TMP/out.json")"
fi
expect_failed "add-lun of a missing image" "LUN 5: not created" "nosuch" "rbd_open" \
	"No such file or directory"
[[ $(luns) == "[0]" ]] || it_fail "after the failed add-lun: LUNs $(luns)"
not_saved 5
ctl add-lun "$IQN" 5 backend=ram size=1M >/dev/null || it_fail "LUN 5 still taken after its failure"
ctl remove-lun "$IQN" 5 >/dev/null || it_fail "remove-lun 5 failed"

# An image that exists: "added" means the LUN is there.
ctl add-lun "$IQN" 6 backend=rbd path="$MICRO_CEPH_POOL/$MICRO_CEPH_IMAGE" rbd_conf="$CEPH_CONF" \
	>"$IT_TMP/out.json" || it_fail "add-lun of the image failed"
[[ $(jq -r .changed "$IT_TMP/out.json") == "lun 6 added" ]] ||
	it_fail "add-lun of the image: $(cat "$IT_TMP/out.json")"
[[ $(luns) == "[0,6]" ]] || it_fail "LUN 6 answered added, show lists $(luns)"

# No ceph.conf at all (none given, no $CEPH_CONF, none in the default places): said so.
if [[ ! -e /etc/ceph/ceph.conf && ! -e "$HOME/.ceph/ceph.conf" && ! -e ceph.conf ]]; then
	if ctl add-lun "$IQN" 7 backend=rbd path="$MICRO_CEPH_POOL/$MICRO_CEPH_IMAGE" \
		>"$IT_TMP/out.json" 2>"$IT_TMP/err.json"; then
		it_fail "add-lun without a ceph.conf answered $(cat "$IT_TMP/out.json")"
	fi
	expect_failed "add-lun without a ceph.conf" "rados_connect" "no ceph.conf read" \
		"CEPH_CONF unset" "rbd_conf = FILE"
	[[ $(luns) == "[0,6]" ]] || it_fail "after the add-lun without a ceph.conf: LUNs $(luns)"
	not_saved 7
else
	it_log "a default ceph.conf exists here: the message without one is not checked"
fi

# An open longer than the answer waits (10 s: a monitor nobody answers on, until
# rbd_op_timeout): answered "still opening"; its failure then takes the LUN out.
printf '[global]\nmon_host = 127.0.0.1:%s\nauth_client_required = none\n' "$(it_free_port)" \
	>"$IT_TMP/dead-ceph.conf"
ctl add-lun "$IQN" 9 backend=rbd path="$MICRO_CEPH_POOL/$MICRO_CEPH_IMAGE" \
	rbd_conf="$IT_TMP/dead-ceph.conf" rbd_op_timeout=15 >"$IT_TMP/out.json" ||
	it_fail "add-lun of an image behind a dead monitor failed at once"
[[ $(jq -r .opening "$IT_TMP/out.json") == true ]] ||
	it_fail "add-lun of an image behind a dead monitor: $(cat "$IT_TMP/out.json")"
grep -q "LUN 9: backend" "$IT_TMP/target.err" &&
	it_fail "the open behind a dead monitor ended before the answer: no wait checked"
for ((i = 0; i < 600; i++)); do
	grep -q "LUN 9: not created (.*): taken out" "$IT_TMP/target.err" && break
	sleep 0.1
done
grep -q "LUN 9: not created (.*): taken out" "$IT_TMP/target.err" ||
	it_fail "LUN 9 stays in the running configuration: $(grep "LUN 9" "$IT_TMP/target.err")"
it_log "late failure: $(grep -o "LUN 9: not created.*" "$IT_TMP/target.err")"
[[ $(luns) == "[0,6]" ]] || it_fail "after the late failure: LUNs $(luns)"
not_saved 9
ctl add-lun "$IQN" 9 backend=ram size=1M >/dev/null || it_fail "LUN 9 still taken after its failure"

# A reload of a file with LUNs that cannot be created: its answer waits for the file's images
# and lists each LUN not created with the reason (an image that does not exist, a missing
# file); show lists them, failed, with the same reason (what the file asks for and what runs);
# save writes them as the file has them; the reload's log line names them, SIGHUP's too.
rbd_lun() { printf '\n[lun %s]\nbackend = rbd\npath = %s\nrbd_conf = %s\n%s' "$1" "$2" "$3" "${4:-}"; }
write_conf "$(printf '\n[lun 4]\nbackend = file\npath = %s\n' "$IT_TMP/missing.img")
$(rbd_lun 5 "$MICRO_CEPH_POOL/nosuch" "$CEPH_CONF")
$(rbd_lun 6 "$MICRO_CEPH_POOL/$MICRO_CEPH_IMAGE" "$CEPH_CONF")"
ctl reload >"$IT_TMP/reload.json" || it_fail "reload failed: $(cat "$IT_TMP/reload.json")"
it_log "reload: $(jq -c . "$IT_TMP/reload.json")"
[[ $(jq -c '[[.failed[].id], .opening]' "$IT_TMP/reload.json") == "[[4,5],null]" ]] ||
	it_fail "the reload's answer does not list LUNs 4 and 5: $(cat "$IT_TMP/reload.json")"
jq -r '.failed[1].error' "$IT_TMP/reload.json" | grep -q "rbd $MICRO_CEPH_POOL/nosuch: rbd_open: No such file or directory" ||
	it_fail "the reload's answer does not say why LUN 5 failed: $(cat "$IT_TMP/reload.json")"
[[ $(ctl show | jq -c '[.targets[0].luns[] | [.id, .state]]') == \
	'[[0,"running"],[4,"failed"],[5,"failed"],[6,"running"]]' ]] ||
	it_fail "show: $(ctl show | jq -c .targets[0].luns)"
[[ $(ctl show | jq -r '.targets[0].luns[2].error') == "$(jq -r '.failed[1].error' "$IT_TMP/reload.json")" ]] ||
	it_fail "show does not say why LUN 5 failed: $(ctl show | jq -c .targets[0].luns[2])"
ctl save "$IT_TMP/saved.conf" >/dev/null || it_fail "save failed"
grep -A2 '^\[lun 5\]' "$IT_TMP/saved.conf" | grep -qx "path = $MICRO_CEPH_POOL/nosuch" ||
	it_fail "save does not write LUN 5 as the file has it: $(cat "$IT_TMP/saved.conf")"
logged="reload: 2 LUN(s) of $CONF not created, 0 still opening: $IQN LUN 4: .*; $IQN LUN 5: rbd $MICRO_CEPH_POOL/nosuch: rbd_open"
it_wait_log "$IT_TMP/target.err" "$logged"
kill -HUP "$IT_PID"
it_wait_log -n 2 "$IT_TMP/target.err" "$logged"

# The answer waits 10 s at most, as add-lun's: an image behind a dead monitor is then listed
# as still opening.
write_conf "$(rbd_lun 10 "$MICRO_CEPH_POOL/$MICRO_CEPH_IMAGE" "$IT_TMP/dead-ceph.conf" "rbd_op_timeout = 15")"
t0=$(date +%s%N)
ctl reload >"$IT_TMP/reload.json" || it_fail "reload failed: $(cat "$IT_TMP/reload.json")"
ms=$((($(date +%s%N) - t0) / 1000000))
[[ $(jq -c '[.failed, [.opening[].id]]' "$IT_TMP/reload.json") == "[[],[10]]" ]] ||
	it_fail "reload with an image behind a dead monitor: $(cat "$IT_TMP/reload.json")"
((ms >= 9000)) || it_fail "the reload answered after $ms ms: it did not wait for LUN 10's image"
[[ $(ctl show | jq -c '[.targets[0].luns[] | [.id, .state]]') == '[[0,"running"],[10,"opening"]]' ]] ||
	it_fail "show while LUN 10 opens: $(ctl show | jq -c .targets[0].luns)"
it_log "reload with an image behind a dead monitor: answered after $ms ms: $(jq -c . "$IT_TMP/reload.json")"
it_wait_log "$IT_TMP/target.err" "reload: 0 LUN(s) of $CONF not created, 1 still opening: $IQN LUN 10: still opening"

it_stop || it_fail "scsitgtd did not stop cleanly"
it_log "ok"
