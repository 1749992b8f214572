#!/bin/bash
# build-image.sh - build, or reuse from the cache, the Debian guest that the 'vm' test suite
# boots under QEMU: the Debian kernel, a busybox initramfs that mounts the root image, and an
# ext4 root image made by debootstrap with the initiators and tools the guest tests use
# (open-iscsi, rdma-core, sg3-utils, fio, tgt for comparisons).
#
# Usage: tests/vm/build-image.sh [--force] [--print-dir]
#   --force      rebuild the kernel tree, initramfs and root image (the debootstrap tree is kept)
#   --print-dir  print the directory holding the current image (vmlinuz, initrd.gz, rootfs.img)
# Environment:
#   SCSITGT_VM_CACHE   cache directory (default /var/tmp/scsitgt-vm)
#   SCSITGT_VM_MIRROR  Debian mirror for debootstrap (default http://deb.debian.org/debian)
#   SCSITGT_VM_KPKG    kernel package (default: the one linux-image-amd64 depends on)
#
# Every artefact is named by a hash of what it is made from (package list, kernel version,
# the guest init scripts, this recipe's version), so a change of any input builds a new image
# and an unchanged one is reused in about a second. Exit status: 0 ready; 3 a host tool or
# the network is missing (callers turn that into a skip); 1 any other failure.
set -euo pipefail

CACHE=${SCSITGT_VM_CACHE:-/var/tmp/scsitgt-vm}
MIRROR=${SCSITGT_VM_MIRROR:-http://deb.debian.org/debian}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SUITE=bookworm
FORCE=0
PRINT=0
for a in "$@"; do
	case "$a" in
	--force) FORCE=1 ;;
	--print-dir) PRINT=1 ;;
	*) echo "build-image: unknown argument $a" >&2; exit 2 ;;
	esac
done

# Bump when the recipe below changes in a way the hashed inputs do not show.
RECIPE=1
# The run-time libraries of the host-built minitarget come last: libuv, libaio, liburing,
# nettle, ISA-L (librbd and librados come with tgt). multipath-tools (with udev) is dm-multipath's user
# space for the two-gateway test (rbd-mpath.sh), whose targets run on the host.
PKGS="open-iscsi,rdma-core,ibverbs-providers,ibverbs-utils,rdmacm-utils,sg3-utils,\
e2fsprogs,fio,tgt,kmod,iproute2,procps,lsscsi,busybox-static,multipath-tools,udev,\
libuv1,libaio1,liburing2,libnettle8,libisal2"
# Modules the initramfs loads before it can mount the root image over virtio.
INITRD_MODS="virtio_pci virtio_blk crc32c_generic ext4 9pnet_virtio 9p"
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:$PATH

log() { echo "[build-image $(date +%T)] $*" >&2; }
missing_tool() { log "$*"; exit 3; }

for t in debootstrap cpio mkfs.ext4 dpkg apt-get sha256sum flock; do
	command -v "$t" > /dev/null || missing_tool "missing host tool: $t (scripts/install-deps.sh)"
done
# Not `busybox --list | grep -q`: under pipefail, grep -q leaving early makes busybox die of
# SIGPIPE now and then, and the pipeline (and with it this check) fail.
[ -x /bin/busybox ] && [[ $'\n'"$(/bin/busybox --list)"$'\n' == *$'\n'depmod$'\n'* ]] ||
	missing_tool "missing /bin/busybox with depmod (package busybox-static)"
[ "$(id -u)" = 0 ] || missing_tool "debootstrap and chroot need root"

mkdir -p "$CACHE"
exec 9> "$CACHE/.lock"
flock -w 1800 9 || { log "cannot lock $CACHE/.lock"; exit 1; }

# -- kernel: the Debian package, unpacked; modules indexed by busybox depmod for the initramfs.
KPKG=${SCSITGT_VM_KPKG:-}
if [ -z "$KPKG" ]; then
	KPKG=$(apt-cache depends linux-image-amd64 2> /dev/null |
		awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
	if [ -z "$KPKG" ]; then
		timeout 600 apt-get -q -o DPkg::Lock::Timeout=300 update > /dev/null 2>&1 || true
		KPKG=$(apt-cache depends linux-image-amd64 2> /dev/null |
			awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
	fi
fi
[ -n "$KPKG" ] || missing_tool "cannot resolve the kernel package (apt lists unavailable?)"
KVER=${KPKG#linux-image-}
KDIR=$CACHE/kernel-$KVER
if [ ! -e "$KDIR/.done" ] || [ $FORCE = 1 ]; then
	log "fetching $KPKG"
	rm -rf "$KDIR" "$KDIR.tmp" "$CACHE/dl"
	mkdir -p "$CACHE/dl" "$KDIR.tmp"
	(cd "$CACHE/dl" && timeout 900 apt-get -q download "$KPKG" > /dev/null 2>&1) ||
		missing_tool "cannot download $KPKG (no network or mirror?)"
	dpkg -x "$CACHE/dl/${KPKG}"_*.deb "$KDIR.tmp"
	busybox depmod -b "$KDIR.tmp" "$KVER"
	rm -rf "$CACHE/dl"
	mv "$KDIR.tmp" "$KDIR"
	touch "$KDIR/.done"
fi
MODDIR=$KDIR/lib/modules/$KVER

# -- initramfs: busybox, the listed modules with their dependencies, guest/initrd-init.
IHASH=$( (echo "$RECIPE $KVER $INITRD_MODS"; cat "$HERE/guest/initrd-init") | sha256sum | cut -c1-12)
INITRD=$CACHE/initrd-$IHASH.gz
if [ ! -e "$INITRD" ] || [ $FORCE = 1 ]; then
	log "building $INITRD"
	T=$(mktemp -d /tmp/scsitgt-vm-initrd.XXXXXX)
	mkdir -p "$T"/{bin,sbin,proc,sys,dev,newroot} "$T/lib/modules/$KVER"
	cp /bin/busybox "$T/bin/busybox"
	for m in $INITRD_MODS; do
		# modules.dep lines are "path: dep dep ..."; match the module's file name.
		line=$(awk -v m="${m//-/_}" -F: '{
			n = $1; sub(/.*\//, "", n); sub(/\.ko.*/, "", n); gsub(/-/, "_", n)
			if (n == m) { print; exit }
		}' "$MODDIR/modules.dep")
		[ -n "$line" ] || { log "module $m not in $KVER (built in?)"; continue; }
		for p in ${line%%:*} ${line#*:}; do
			mkdir -p "$T/lib/modules/$KVER/$(dirname "$p")"
			cp -n "$MODDIR/$p" "$T/lib/modules/$KVER/$p"
		done
	done
	cp "$MODDIR/modules.order" "$MODDIR/modules.builtin" "$T/lib/modules/$KVER/"
	busybox depmod -b "$T" "$KVER"
	echo "$INITRD_MODS" > "$T/modules.list"
	install -m 755 "$HERE/guest/initrd-init" "$T/init"
	(cd "$T" && find . | cpio -o -H newc --quiet | gzip -1) > "$INITRD.tmp"
	mv "$INITRD.tmp" "$INITRD"
	rm -rf "$T"
fi

# -- root filesystem: debootstrap (cached by package list), then the kernel's modules, the
# guest init and a few settings, packed into an ext4 image (cached by every input).
BASE=$CACHE/debootstrap-$(echo "$SUITE $PKGS" | sha256sum | cut -c1-12)
if [ ! -e "$BASE/.done" ]; then
	log "debootstrap $SUITE into $BASE (1-3 min)"
	rm -rf "$BASE.tmp"
	if ! timeout 1800 debootstrap --variant=minbase --include="$PKGS" "$SUITE" "$BASE.tmp" \
		"$MIRROR" > "$CACHE/debootstrap.log" 2>&1; then
		tail -n 15 "$CACHE/debootstrap.log" >&2
		rm -rf "$BASE.tmp"
		if grep -qiE 'Failed getting release|Temporary failure|Could not resolve|unable to fetch|Connection (refused|timed out)' \
			"$CACHE/debootstrap.log"; then
			missing_tool "debootstrap could not reach $MIRROR"
		fi
		exit 1
	fi
	rm -rf "$BASE.tmp"/var/cache/apt/archives/*.deb
	mv "$BASE.tmp" "$BASE"
	touch "$BASE/.done"
fi

RHASH=$( (echo "$RECIPE $SUITE $PKGS $KVER"; cat "$HERE/guest/init") | sha256sum | cut -c1-12)
IMG=$CACHE/rootfs-$RHASH.img
if [ ! -e "$IMG" ] || [ $FORCE = 1 ]; then
	log "building $IMG"
	S=$CACHE/stage-$RHASH
	rm -rf "$S"
	cp -a "$BASE" "$S"
	rm -f "$S/.done"
	mkdir -p "$S/lib/modules" "$S/host" "$S/ctl"
	cp -a "$MODDIR" "$S/lib/modules/"
	# busybox wrote those indexes; the guest's kmod wants its own format.
	rm -f "$S/lib/modules/$KVER"/modules.{dep,alias,symbols}*
	chroot "$S" /sbin/depmod -a "$KVER"
	install -m 755 "$HERE/guest/init" "$S/sbin/scsitgt-vm-init"
	echo vmguest > "$S/etc/hostname"
	printf '127.0.0.1 localhost\n127.0.1.1 vmguest\n' > "$S/etc/hosts"
	echo "InitiatorName=iqn.2026-11.org.libscsitgt:vmguest" > "$S/etc/iscsi/initiatorname.iscsi"
	rm -rf "$S"/usr/share/doc/* "$S"/usr/share/man/* "$S"/usr/share/locale/* \
		"$S"/var/lib/apt/lists/*
	rm -f "$IMG.tmp"
	mkfs.ext4 -q -F -L scsitgtvm -d "$S" "$IMG.tmp" 3G
	mv "$IMG.tmp" "$IMG"
	rm -rf "$S"
fi

# Drop what older inputs made (a running guest keeps its open image alive).
for f in "$CACHE"/rootfs-*.img "$CACHE"/initrd-*.gz; do
	[ -e "$f" ] && [ "$f" != "$IMG" ] && [ "$f" != "$INITRD" ] && rm -f "$f"
done
for d in "$CACHE"/debootstrap-* "$CACHE"/kernel-*; do
	[ -d "$d" ] && [ "$d" != "$BASE" ] && [ "$d" != "$KDIR" ] && rm -rf "$d"
done

mkdir -p "$CACHE/current"
ln -sfn "$KDIR/boot/vmlinuz-$KVER" "$CACHE/current/vmlinuz"
ln -sfn "$INITRD" "$CACHE/current/initrd.gz"
ln -sfn "$IMG" "$CACHE/current/rootfs.img"
echo "$KVER" > "$CACHE/current/kver"
log "ready: kernel $KVER, $(basename "$IMG")"
[ $PRINT = 0 ] || echo "$CACHE/current"
