#!/bin/bash
# fresh-check.sh - prove README.md's set-up on a fresh Debian 12, as a new user runs it. A manual
# check: it needs root and a Debian mirror, so it is part of neither scripts/test.sh nor CI.
#
#   scripts/fresh-check.sh [--keep] [--no-install]
#
# 1. debootstrap a minimal Debian 12 (bookworm, variant minbase: less than any installed machine
#    has) into FRESH_ROOT and bind-mount /proc, /sys, /dev and /dev/pts into it;
# 2. `git clone` this repository's HEAD (committed work only) to /root/libscsitgt in it;
# 3. there, as root with no terminal: scripts/demo.sh --portal 127.0.0.1:PORT in the background
#    (PORT: a free one below the kernel's ephemeral range, claimed in tests/integration/lib.sh's
#    registry), waiting for its URL line while it installs packages and builds;
# 4. the README's "Try it" commands against it, inside the fresh root and from this host:
#    iscsi-ls -s, iscsi-inq, qemu-img info, qemu-img convert of a random disk.img (checked by
#    qemu-img compare); then Ctrl-C (SIGINT) must stop the demo with exit status 0;
# 5. unless --no-install, the README's other examples that need no hardware, inside the root:
#    meson install (which runs ldconfig); man pages; examples/embed.c built with pkg-config against the
#    installed library (gnu11 and strict C11) and run on its fixed port 127.0.0.1:3260, and
#    scsitgtd -t and scsitgtd with examples/scsitgtd.conf as it is (port 3260; its pr_dir not
#    made beforehand: scsitgtd makes it), each in a network namespace of its own so that the
#    port is free, probed with iscsi-ls and iscsi-inq (scsitgtd: and an APTPL registration
#    that must reach pr_dir, by tests/integration/pr_client) and stopped by its signal with
#    exit status 0;
# 6. tear-down: unmount, then remove the root (--keep leaves it, unmounted, for a look inside).
#
# Every wait is bounded and waits on a condition. Prints one PASS/FAIL line per probe and a
# summary; exit status 0 only if every probe passed. Logs: FRESH_ROOT.logs/.
# Environment:
#   FRESH_ROOT     the fresh root (default /var/tmp/scsitgt-fresh; removed first if there)
#   FRESH_MIRROR   Debian mirror (default http://deb.debian.org/debian, as tests/vm uses)
#   FRESH_CACHE    .deb cache kept between runs, bind-mounted on the root's apt archive (default
#                  /var/tmp/scsitgt-fresh-cache; empty: none). It saves downloads only: the
#                  package lists are fetched afresh and apt checks every cached file's hash.
#   FRESH_TIMEOUT  seconds for demo.sh's install and build until its URL line (default 5400)
# Needs on this host: root, debootstrap, git, python3, unshare, and for the host-side probes
# iscsi-ls, iscsi-inq and qemu-img with its iscsi driver (scripts/install-deps.sh).
set -euo pipefail

KEEP=0
INSTALL=1
for a in "$@"; do
	case "$a" in
	--keep) KEEP=1 ;;
	--no-install) INSTALL=0 ;;
	-h | --help)
		sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//p}' "$0"
		exit 0
		;;
	*)
		echo "fresh-check: unknown argument $a (try --help)" >&2
		exit 2
		;;
	esac
done

REPO=$(cd "$(dirname "$0")/.." && pwd)
ROOT=${FRESH_ROOT:-/var/tmp/scsitgt-fresh}
ROOT=${ROOT%/}
MIRROR=${FRESH_MIRROR:-http://deb.debian.org/debian}
CACHE=${FRESH_CACHE-/var/tmp/scsitgt-fresh-cache}
DEMO_TIMEOUT=${FRESH_TIMEOUT:-5400}
LOGS=$ROOT.logs
SRC=/root/libscsitgt # the clone, inside the root
IQN=iqn.2026-11.org.libscsitgt:minitarget
PORT_DIR=${IT_PORT_DIR:-${TMPDIR:-/tmp}/scsitgt-ports}
MARK=.scsitgt-fresh-check # in a root this script made, so that it removes no other directory
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:$PATH

log() { echo "[fresh-check $(date +%T)] $*" >&2; }
die() {
	log "$*"
	exit 1
}

[[ $(id -u) -eq 0 ]] || die "needs root (debootstrap, chroot, mount)"
[[ "$ROOT" == /?*/?* ]] ||
	die "FRESH_ROOT '$ROOT' must be an absolute path two levels deep at least"
for t in debootstrap git python3 unshare chroot mount umount ip setsid iscsi-ls iscsi-inq qemu-img; do
	command -v "$t" >/dev/null || die "missing host tool: $t (scripts/install-deps.sh)"
done
qemu-img --help 2>/dev/null | grep -Eq '^Supported formats:.* iscsi( |$)' ||
	die "the host's qemu-img has no iscsi driver (qemu-block-extra)"
if [[ -n $(git -C "$REPO" status --porcelain --untracked-files=no) ]]; then
	log "note: uncommitted changes in $REPO are not checked (the clone takes HEAD)"
fi

# -- the root's mounts and their tear-down. Nothing under ROOT is removed while a mount is there.
MOUNTS=()
under_root() { awk -v r="$ROOT" '$2 == r || index($2, r "/") == 1 { print $2 }' /proc/mounts; }
mounted_under_root() { [[ -n $(under_root) ]]; }
unmount_all() {
	local i m
	for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do
		m=${MOUNTS[i]}
		umount "$m" 2>/dev/null || umount -l "$m" || log "cannot unmount $m"
	done
	MOUNTS=()
	# Anything else under the root (a mount an earlier run left behind), deepest first.
	under_root | sort -r | while read -r m; do umount "$m" 2>/dev/null || umount -l "$m" || true; done
}
remove_root() {
	unmount_all
	if mounted_under_root; then
		log "still mounted under $ROOT: not removing it"
		return 1
	fi
	rm -rf --one-file-system "$ROOT"
}
bind() { # bind SRC DST: bind-mount SRC on ROOT/DST, remembered for the tear-down
	mkdir -p "$ROOT/$2"
	mount --bind "$1" "$ROOT/$2"
	mount --make-private "$ROOT/$2"
	MOUNTS+=("$ROOT/$2")
}

# -- processes this script started (their process groups) and the port it claimed.
PGIDS=()
CLAIMED=()
cleanup() {
	local st=$? g p
	for g in "${PGIDS[@]}"; do
		kill -KILL -- "-$g" 2>/dev/null || true
	done
	# Anything still running inside the root came from this run (a package's daemon, a target
	# left behind): name it and end it by its pid, or the root stays busy.
	for p in /proc/[0-9]*; do
		if [[ "$(readlink "$p/root" 2>/dev/null)" == "$ROOT" ]]; then
			log "still running in the root: pid ${p#/proc/} $(tr '\0' ' ' <"$p/cmdline")"
			kill -KILL "${p#/proc/}" 2>/dev/null || true
		fi
	done
	for p in "${CLAIMED[@]}"; do
		[[ $(cat "$PORT_DIR/$p/pid" 2>/dev/null) == "$$" ]] && rm -rf "${PORT_DIR:?}/${p:?}"
	done
	if [[ -e "$ROOT/$MARK" ]]; then
		if [[ $KEEP -eq 1 ]]; then
			unmount_all
			log "kept $ROOT (unmounted); logs in $LOGS"
		else
			remove_root || st=1
		fi
	fi
	exit "$st"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# wait_for SECONDS WHAT COMMAND...: run COMMAND every 0.2 s until it succeeds; false (with a
# message) once SECONDS have passed, or at once when COMMAND returns 2 (it will never succeed).
wait_for() {
	local secs=$1 what=$2 end st
	end=$((SECONDS + secs))
	shift 2
	while :; do
		st=0
		"$@" || st=$?
		[[ $st -eq 0 ]] && return 0
		if [[ $st -eq 2 ]]; then
			log "gave up waiting for $what: it cannot happen any more"
			return 1
		fi
		if ((SECONDS >= end)); then
			log "gave up after $secs s waiting for $what"
			return 1
		fi
		sleep 0.2
	done
}

# port_free PORT: nothing listens on 127.0.0.1:PORT (a bind would succeed).
port_free() {
	python3 -c 'import socket, sys
s = socket.socket()
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError:
    sys.exit(1)' "$1"
}
# claim_port: set PORT to a free port below the kernel's ephemeral range (no outgoing connection
# takes it while demo.sh installs and builds), claimed the way tests/integration/lib.sh claims.
claim_port() {
	local p
	mkdir -p "$PORT_DIR"
	for ((p = 23260; p < 23300; p++)); do
		port_free "$p" || continue
		mkdir "$PORT_DIR/$p" 2>/dev/null || continue
		echo $$ >"$PORT_DIR/$p/pid"
		CLAIMED+=("$p")
		PORT=$p
		return 0
	done
	return 1
}

# in_root COMMAND: run the shell COMMAND in the root's clone as root logged in there would: a
# clean environment, no terminal.
AS_ROOT_USER=(/usr/bin/env -i HOME=/root USER=root LOGNAME=root SHELL=/bin/bash
	PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin /bin/bash -c)
in_root() {
	chroot "$ROOT" "${AS_ROOT_USER[@]}" "cd $SRC && $1" </dev/null
}

# -- probes: each one's output goes to LOGS/NAME.log; one PASS/FAIL line per probe.
PASSED=()
FAILED=()
probe() { # probe NAME COMMAND...
	local name=$1 st=0
	shift
	"$@" >"$LOGS/$name.log" 2>&1 || st=$?
	if [[ $st -eq 0 ]]; then
		PASSED+=("$name")
		log "PASS $name"
	else
		FAILED+=("$name")
		log "FAIL $name (exit $st); the last lines of $LOGS/$name.log:"
		tail -n 15 "$LOGS/$name.log" | sed 's/^/    /' >&2
	fi
}
# expect PATTERN COMMAND...: COMMAND succeeds and its output (also logged) matches the ERE.
expect() {
	local pat=$1 out st=0
	shift
	out=$("$@" 2>&1) || st=$?
	printf '%s\n' "$out"
	[[ $st -eq 0 ]] || { echo "exit status $st"; return 1; }
	grep -Eq -- "$pat" <<<"$out" || { echo "no line matches: $pat"; return 1; }
}

T0=$SECONDS
# ----------------------------------------------------------------------------------------------
log "fresh root $ROOT (mirror $MIRROR)"
if [[ -e "$ROOT" ]]; then
	[[ -e "$ROOT/$MARK" ]] || die "$ROOT exists and was not made by this script: remove it yourself"
	remove_root || die "cannot remove the earlier $ROOT"
fi
rm -rf "$LOGS"
mkdir -p "$LOGS" "$ROOT"
touch "$ROOT/$MARK"
deb_cache=()
if [[ -n "$CACHE" ]]; then
	mkdir -p "$CACHE/partial"
	deb_cache=(--cache-dir="$CACHE")
fi
t=$SECONDS
if ! debootstrap --variant=minbase "${deb_cache[@]}" bookworm "$ROOT" "$MIRROR" \
	>"$LOGS/debootstrap.log" 2>&1; then
	tail -n 15 "$LOGS/debootstrap.log" >&2
	die "debootstrap failed"
fi
log "debootstrap: $((SECONDS - t)) s"
touch "$ROOT/$MARK" # debootstrap may have left only its own files

bind /proc proc
bind /sys sys
bind /dev dev
bind /dev/pts dev/pts
[[ -z "$CACHE" ]] || bind "$CACHE" var/cache/apt/archives

branch=$(git -C "$REPO" symbolic-ref -q --short HEAD || true)
git clone -q --no-hardlinks ${branch:+--branch "$branch"} "$REPO" "$ROOT$SRC"
[[ -n "$branch" ]] || git -C "$ROOT$SRC" checkout -q "$(git -C "$REPO" rev-parse HEAD)"
log "clone of $(git -C "$REPO" rev-parse --short HEAD) ${branch:+($branch) }in $SRC"

# -- the demo, as the README's quick start runs it (on our port instead of 3260).
claim_port || die "no free port in 23260-23299"
DEMO_CMD="scripts/demo.sh --portal 127.0.0.1:$PORT"
log "$DEMO_CMD (installs packages and builds: minutes)"
t=$SECONDS
setsid chroot "$ROOT" "${AS_ROOT_USER[@]}" "cd $SRC && exec $DEMO_CMD" </dev/null \
	>"$LOGS/demo.out" 2>"$LOGS/demo.err" &
DEMO=$!
PGIDS+=("$DEMO")
URL=iscsi://127.0.0.1:$PORT/$IQN/0
demo_ready() {
	kill -0 "$DEMO" 2>/dev/null || return 2
	grep -qxF "$URL" "$LOGS/demo.out"
}
st=0
wait_for "$DEMO_TIMEOUT" "demo.sh to print $URL" demo_ready || st=$?
if ! grep -qxF "$URL" "$LOGS/demo.out"; then
	FAILED+=(demo)
	log "FAIL demo: no URL line $URL; the last lines of $LOGS/demo.err:"
	tail -n 30 "$LOGS/demo.err" | sed 's/^/    /' >&2
	exit 1
fi
PASSED+=(demo)
log "PASS demo (its URL after $((SECONDS - t)) s)"

# The README's "Try it from another shell", word for word but for the port; disk.img as the
# README makes it.
try_it() { # try_it PREFIX RUN: RUN is in_root or host_sh
	local where=$1 run=$2
	probe "$where-iscsi-ls" expect "^Lun:0 +Type:DIRECT_ACCESS \(Size:102[34]M\)" \
		"$run" "iscsi-ls -s iscsi://127.0.0.1:$PORT"
	probe "$where-iscsi-inq" expect "^Product:[[:graph:]]" "$run" "iscsi-inq $URL"
	probe "$where-qemu-img-info" expect "^virtual size: 1 GiB" "$run" "qemu-img info $URL"
	probe "$where-qemu-img-convert" "$run" "set -e; cd \$(mktemp -d)
		head -c 64M /dev/urandom >disk.img
		qemu-img convert -n -O raw disk.img $URL
		qemu-img compare -f raw -F raw disk.img $URL"
}
host_sh() { (cd /tmp && bash -c "$1" </dev/null); }
try_it fresh in_root
try_it host host_sh

# Ctrl-C: the demo (by now minitarget itself: demo.sh execs it) exits with status 0.
demo_stopped() {
	kill -INT "$DEMO" 2>/dev/null || true
	st=0
	wait_for 60 "the demo to exit on SIGINT" bash -c "! kill -0 $DEMO 2>/dev/null" || return 1
	wait "$DEMO" || st=$?
	echo "demo exit status $st"
	[[ $st -eq 0 ]]
}
probe demo-sigint demo_stopped

# -- the README's other examples that need no hardware, inside the root.
if [[ $INSTALL -eq 1 ]]; then
	log "meson install -C build (builds the rest of the project first: minutes)"
	probe install in_root "meson install -C build && ldconfig -p | grep -q libscsitgt.so"
	probe man in_root "set -e; man -l docs/man/scsitgt.3 | grep -q scsitgt_engine_create
		man 3 scsitgt_lun | grep -q scsitgt_lun_create
		man scsitgt_engine_create | grep -q SYNOPSIS
		man 8 minitarget | grep -q -- --portal"
	# In a network namespace of its own (loopback only), where 3260 is free whatever runs here.
	netns() { # netns SCRIPT: run the shell SCRIPT in the root, in a new network namespace
		unshare --net bash -c 'ip link set lo up && exec "$@"' sh \
			chroot "$ROOT" "${AS_ROOT_USER[@]}" "cd $SRC && $1" </dev/null
	}
	# serve_and_probe: the shell function that the two examples below use inside the root: run
	# a program in the background, wait (bounded) for its portal on 3260, read LUN 0's
	# INQUIRY, run the shell function after_inq (URL), stop it with SIGNAL and want exit
	# status 0.
	# shellcheck disable=SC2016 # expanded inside the root
	SERVE='serve_and_probe() { # SIGNAL IQN PROGRAM ARGS...
		local sig=$1 iqn=$2 pid st=0 i
		shift 2
		"$@" & pid=$!
		for ((i = 0; i < 300; i++)); do
			iscsi-ls iscsi://127.0.0.1:3260 2>/dev/null | grep -q "^Target:$iqn " && break
			kill -0 $pid || { echo "$1 exited"; return 1; }
			sleep 0.2
		done
		iscsi-ls -s iscsi://127.0.0.1:3260 && iscsi-inq iscsi://127.0.0.1:3260/$iqn/0 &&
			after_inq iscsi://127.0.0.1:3260/$iqn/0 || st=1
		kill -$sig $pid
		wait $pid || { echo "$1 exit status $?"; st=1; }
		return $st
	}'
	probe embed-build in_root "set -e; cd examples
		cc embed.c \$(pkg-config --cflags --libs libscsitgt) -o /tmp/embed
		cc -std=c11 -D_POSIX_C_SOURCE=200809L embed.c \$(pkg-config --cflags --libs libscsitgt) \
			-o /tmp/embed-c11"
	probe embed-run netns "$SERVE; set -e; after_inq() { :; }
		serve_and_probe INT iqn.2026-11.org.example:disk /tmp/embed
		serve_and_probe INT iqn.2026-11.org.example:disk /tmp/embed-c11"
	probe scsitgtd-check in_root "scsitgtd -t examples/scsitgtd.conf"
	probe scsitgtd-run netns "$SERVE; set -e
		after_inq() {
			build/tests/integration/pr_client -i iqn.2026-12.org.example:fresh \$1 \
				register 0xf00d aptpl &&
			ls -l /var/lib/scsitgtd/*.lun0.pr && test -s /var/lib/scsitgtd/*.lun0.pr
		}
		serve_and_probe TERM iqn.2024-01.org.example:storage scsitgtd examples/scsitgtd.conf"
fi

log "took $((SECONDS - T0)) s: ${#PASSED[@]} passed, ${#FAILED[@]} failed${FAILED[*]:+:}" \
	"${FAILED[@]}"
[[ ${#FAILED[@]} -eq 0 ]]
