# shellcheck shell=bash
# rbd_lib.sh - a throwaway Ceph cluster for the RBD tests (source it after lib.sh and it_init).
#
#   source lib.sh; source rbd_lib.sh
#   it_init "$1"
#   rbd_need                        # exit 77 (skipped) without ceph-mon/ceph-osd/rbd
#   rbd_cluster_up [-w 5] [-S 256M] # tests/ceph/micro-ceph.sh up in $IT_TMP/ceph; exports
#                                   # CEPH_CONF CEPH_KEYRING MICRO_CEPH_POOL MICRO_CEPH_IMAGE...
#   rbd ... / minitarget --lun 0:rbd:$MICRO_CEPH_POOL/$MICRO_CEPH_IMAGE
#
# The cluster is torn down by the EXIT trap (after lib.sh's cleanup stopped the target), also
# when the test fails or is interrupted. Tests whose clients get killed pass -w 5 (a short
# watch timeout: a dead client's watch and exclusive lock linger that long).

RBD_MICRO_CEPH=$(cd "$(dirname "${BASH_SOURCE[0]}")/../ceph" && pwd)/micro-ceph.sh
RBD_DIR=

# rbd_need: skip unless the Ceph daemons and tools are installed (scripts/install-deps.sh).
rbd_need() {
	local t
	for t in ceph-mon ceph-osd ceph ceph-authtool monmaptool rbd; do
		command -v "$t" >/dev/null 2>&1 ||
			it_skip "$t is not installed (Debian: ceph-mon ceph-osd ceph-common)"
	done
	[[ -x "$RBD_MICRO_CEPH" ]] || it_fail "$RBD_MICRO_CEPH missing"
}

rbd_cleanup() {
	local rc=$?
	# Stop the target first: it is a client of the cluster.
	if [[ -n "$IT_PID" ]] && kill -0 "$IT_PID" 2>/dev/null; then
		it_stop >/dev/null 2>&1 || true
	fi
	if [[ -n "$RBD_DIR" && -d "$RBD_DIR" ]]; then
		if [[ $rc -ne 0 && $rc -ne 77 ]]; then
			it_log "--- ceph logs (last lines) ---"
			tail -n 15 "$RBD_DIR"/log/*.log >&2 2>/dev/null || true
		fi
		"$RBD_MICRO_CEPH" down "$RBD_DIR" >/dev/null 2>&1 || true
	fi
	# it_cleanup takes the test's exit status from $?.
	(exit "$rc")
	it_cleanup
}

# rbd_cluster_up [micro-ceph up options]: start the cluster and export its environment.
# The directory is short (admin sockets need paths under 107 bytes).
rbd_cluster_up() {
	local out
	RBD_DIR=$(mktemp -u "${TMPDIR:-/tmp}/mc.XXXXXX")
	trap rbd_cleanup EXIT
	# Ceph reads CEPH_KEYRING and CEPH_ARGS over the conf file: never inherit them.
	unset CEPH_KEYRING CEPH_ARGS
	out=$("$RBD_MICRO_CEPH" up "$RBD_DIR" "$@" 2>"$IT_TMP/micro-ceph.err") || {
		tail -n 30 "$IT_TMP/micro-ceph.err" >&2
		it_fail "micro-ceph up failed"
	}
	eval "$out"
	export CEPH_CONF CEPH_KEYRING MICRO_CEPH_POOL MICRO_CEPH_IMAGE MICRO_CEPH_IMAGE_SIZE \
		MICRO_CEPH_MON MICRO_CEPH_DIR
	it_log "ceph cluster up in $RBD_DIR: $(tail -n 1 "$IT_TMP/micro-ceph.err")"
}
