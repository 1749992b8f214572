#!/bin/bash
# install-deps.sh - install the Debian 12 packages libscsitgt needs to build and test.
#
#   scripts/install-deps.sh          everything: the build, every test suite, fuzzing, the vm
#                                    suite and the RBD tests (scripts/test.sh)
#   scripts/install-deps.sh --demo   the build and the README's "Try it" tools only
#                                    (scripts/demo.sh): no test-only tools, and none of the
#                                    server packages (Prometheus, Ceph) that Debian starts or
#                                    enables as services when they are installed
#
# The --demo set holds every package `meson setup` looks for (BUILD below), so build/ is
# configured the same either way and a later scripts/test.sh finds every feature in it.
# Idempotent: asks dpkg which packages are missing and installs only those (after an
# apt-get update). When everything is present it returns in well under a second without
# touching the network. Runs non-interactively; uses sudo when not root.
set -euo pipefail

# What meson.build, examples/, tests/ and docs/ look for when configuring (dependency(),
# find_library(), find_program()): a package missing here changes what build/ contains.
BUILD=(
	build-essential pkg-config meson ninja-build
	libuv1-dev libaio-dev nettle-dev libcmocka-dev
	# liburing: the io_uring engine of the file backend (meson feature 'io_uring'; optional).
	liburing-dev
	# ISA-L: crc32_iscsi for the iSCSI digests (meson feature 'isal'; optional at build time).
	libisal-dev
	libibverbs-dev librdmacm-dev
	# tests/ and bench/ link libiscsi (dependency 'libiscsi').
	libiscsi-dev
	# examples/scsitgtd's configuration lexer (libinih); the 'docs' suite's Doxygen build.
	libinih-dev doxygen
	# scsitgtd's control socket and scsitgtctl (JSON-RPC with json-c).
	libjson-c-dev
	# scsitgtd's sd_notify() under systemd (Type=notify).
	libsystemd-dev
	# the RBD backend (meson feature 'rbd'): librbd/librados, and librados' C++ headers
	# (ceph::bufferlist) for its zero-copy I/O through librbd's C++ API (meson feature
	# 'rbd_zero_copy'; g++ comes with build-essential).
	librbd-dev librados-dev libradospp-dev
)
# The README's "Try it" commands and its manual pages (man -l, man 3 scsitgt).
TRY=(
	libiscsi-bin
	qemu-utils qemu-block-extra
	# man-db brings groff, which the 'docs' suite's man test renders every page with.
	man-db
)
# What only the test suites, fuzzing and the vm suite run.
TEST=(
	rdma-core
	# the 'docs' suite's names test lists the tracked files with git ls-files.
	git
	clang libclang-rt-14-dev
	# scripts/check-format.sh (suite "format"): the style in .clang-format, checked by clang-format 14.
	clang-format
	valgrind abigail-tools tshark
	# promtool (package prometheus) checks `scsitgtctl metrics` and jq reads `scsitgtctl show` in
	# tests/integration/scsitgtctl.sh; curl scrapes scsitgtd's metrics listener in
	# tests/integration/scsitgtd_ops.sh.
	prometheus jq curl
	# tests/vm (suite 'vm'): the guest image is built from Debian packages and booted by QEMU.
	qemu-system-x86 debootstrap busybox-static cpio e2fsprogs
	# a throwaway Ceph cluster on 127.0.0.1 for the RBD tests (tests/ceph/micro-ceph.sh:
	# monitor, OSD, the rbd CLI).
	ceph-mon ceph-osd ceph-common
)

case "${1:-}" in
"") PKGS=("${BUILD[@]}" "${TRY[@]}" "${TEST[@]}") ;;
--demo) PKGS=("${BUILD[@]}" "${TRY[@]}") ;;
*)
	echo "install-deps: unknown argument $1 (--demo or none)" >&2
	exit 2
	;;
esac

# One dpkg-query for all: "name status" for every package dpkg knows; unknown ones print nothing.
declare -A installed=()
while read -r name status; do
	if [[ "$status" == ii* ]]; then
		installed[${name%%:*}]=1
	fi
done < <(dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' "${PKGS[@]}" 2>/dev/null || true)

missing=()
for p in "${PKGS[@]}"; do
	if [[ -z "${installed[$p]:-}" ]]; then
		missing+=("$p")
	fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
	exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
	echo "install-deps: missing packages (${missing[*]}) and no apt-get: install them by hand" >&2
	exit 1
fi

SUDO=()
if [[ $(id -u) -ne 0 ]]; then
	if command -v sudo >/dev/null 2>&1; then
		SUDO=(sudo)
	else
		echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2
		exit 1
	fi
fi

echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
# tshark's wireshark-common would otherwise ask whether non-root users may capture.
echo 'wireshark-common wireshark-common/install-setuid boolean false' |
	"${SUDO[@]}" debconf-set-selections
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
	"${missing[@]}" </dev/null
