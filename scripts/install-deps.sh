#!/bin/bash
# install-deps.sh - install the Debian 12 packages libscsitgt needs to build and test.
#
# Idempotent: asks dpkg which packages are missing and installs only those (after an
# apt-get update). When everything is present it returns in well under a second without
# touching the network. Runs non-interactively; uses sudo when not root.
set -euo pipefail

PKGS=(
	build-essential pkg-config meson ninja-build
	libuv1-dev libaio-dev nettle-dev libcmocka-dev
	# liburing: the io_uring engine of the file backend (meson feature 'io_uring'; optional).
	liburing-dev
	# ISA-L: crc32_iscsi for the iSCSI digests (meson feature 'isal'; optional at build time).
	libisal-dev
	rdma-core libibverbs-dev librdmacm-dev
	libiscsi-bin libiscsi-dev
	qemu-utils qemu-block-extra
	clang libclang-rt-14-dev
	# scripts/check-format.sh (suite "format"): the style in .clang-format, checked by clang-format 14.
	clang-format
	valgrind abigail-tools tshark
	# examples/scsitgtd's configuration lexer (libinih); the 'docs' suite's Doxygen build.
	libinih-dev doxygen
	# scsitgtd's control socket and scsitgtctl (JSON-RPC with json-c); promtool (package
	# prometheus) checks `scsitgtctl metrics` in tests/integration/scsitgtctl.sh, and curl
	# scrapes scsitgtd's metrics listener in tests/integration/scsitgtd_ops.sh.
	libjson-c-dev prometheus curl
	# scsitgtd's sd_notify() under systemd (Type=notify).
	libsystemd-dev
	# tests/vm (suite 'vm'): the guest image is built from Debian packages and booted by QEMU.
	qemu-system-x86 debootstrap busybox-static cpio e2fsprogs
	# the RBD backend (meson feature 'rbd') and its tests: librbd/librados to build, and a
	# throwaway cluster on 127.0.0.1 (tests/ceph/micro-ceph.sh: monitor, OSD, the rbd CLI).
	librbd-dev librados-dev ceph-mon ceph-osd ceph-common
	# librados' C++ headers (ceph::bufferlist) for the RBD backend's zero-copy I/O through
	# librbd's C++ API (meson feature 'rbd_zero_copy'; g++ comes with build-essential).
	libradospp-dev
)

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
