#!/bin/bash
# check_pkgconfig.sh MESON BUILDDIR SRCDIR - install the built library into a temporary DESTDIR,
# build consumer.c with only `pkg-config --cflags --libs libscsitgt` (PKG_CONFIG_SYSROOT_DIR
# points pkg-config into the DESTDIR), run it against the installed shared library, check its
# output and that it really loaded the installed copy.
set -euo pipefail
MESON=${1:?usage: check_pkgconfig.sh MESON BUILDDIR SRCDIR}
BUILDDIR=${2:?}
SRCDIR=${3:?}
CC=${CC:-cc}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/scsitgt-pkgconfig.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
dest=$tmp/dest

# shellcheck disable=SC2086
$MESON install -C "$BUILDDIR" --no-rebuild --quiet --destdir "$dest" >"$tmp/install.log" 2>&1 || {
	cat "$tmp/install.log"
	echo "meson install failed"
	exit 1
}
pc=$(find "$dest" -name libscsitgt.pc | head -n 1)
[[ -n "$pc" ]] || { echo "no libscsitgt.pc installed"; exit 1; }
echo "installed $pc"
find "$dest" -path '*/include/libscsitgt/scsitgt.h' | grep -q . ||
	{ echo "scsitgt.h not installed"; exit 1; }
# What users read: the API's manual pages (docs/man), and the Doxygen HTML when doxygen built it.
find "$dest" -path '*/man/man3/scsitgt.3' | grep -q . || { echo "scsitgt(3) not installed"; exit 1; }
if command -v doxygen >/dev/null; then
	find "$dest" -path '*/doc/libscsitgt/html/index.html' | grep -q . ||
		{ echo "the Doxygen HTML is not installed"; exit 1; }
fi

# A clean environment: pkg-config sees only libscsitgt.pc and libuv.pc (the one public
# dependency), as on a host without nettle, rdma-core, libnl or ISA-L development files. Any
# Requires.private naming them would make the query fail here.
uvpc=$(pkg-config --variable=pcfiledir libuv)/libuv.pc
[[ -f "$uvpc" ]] || { echo "libuv.pc not found"; exit 1; }
mkdir "$tmp/pc"
cp "$pc" "$uvpc" "$tmp/pc/"
unset PKG_CONFIG_PATH
export PKG_CONFIG_LIBDIR=$tmp/pc
export PKG_CONFIG_SYSROOT_DIR=$dest
flags=$(pkg-config --cflags --libs libscsitgt) || { echo "pkg-config failed in a clean environment"; exit 1; }
echo "pkg-config: $flags"
case " $flags " in
*libnl* | *nettle* | *rdma* | *verbs*) echo "private dependencies leak into the flags"; exit 1 ;;
esac
static_flags=$(pkg-config --static --libs libscsitgt) ||
	{ echo "pkg-config --static failed in a clean environment"; exit 1; }
echo "pkg-config --static: $static_flags"
grep -q -- "-lscsitgt" <<<"$static_flags" || { echo "static flags lack -lscsitgt"; exit 1; }
# shellcheck disable=SC2086
$CC -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror -o "$tmp/consumer" \
	"$SRCDIR/consumer.c" $flags

libdir=$(dirname "$(find "$dest" -name 'libscsitgt.so.*' -type f | head -n 1)")
out=$(LD_LIBRARY_PATH=$libdir "$tmp/consumer")
echo "$out"
want_version=$("$SRCDIR/../../scripts/version.sh")
grep -qx "version $want_version" <<<"$out" || { echo "wrong version line"; exit 1; }
grep -qx "engine created and destroyed" <<<"$out" || { echo "engine check missing"; exit 1; }

# The consumer must have loaded the installed library, not the one in the build tree.
loaded=$(LD_LIBRARY_PATH=$libdir ldd "$tmp/consumer" | awk '/libscsitgt\.so/ { print $3 }')
case "$loaded" in
"$dest"/*) echo "loaded $loaded" ;;
*) echo "consumer resolved libscsitgt to '$loaded', not the installed copy"; exit 1 ;;
esac
# The same installed files from C++17: enumeration, lookup, events, scsitgt_engine_post().
CXX=${CXX:-}
if [[ -n "$CXX" ]]; then
	# shellcheck disable=SC2086
	$CXX -std=c++17 -Wall -Wextra -Werror -o "$tmp/consumer-cxx" "$SRCDIR/consumer.cpp" \
		$flags -pthread
	out=$(LD_LIBRARY_PATH=$libdir "$tmp/consumer-cxx")
	echo "$out"
	grep -qx "targets 1 luns 2 4 7" <<<"$out" || { echo "C++: wrong enumeration"; exit 1; }
	grep -qx "post on home, offline event lun 4" <<<"$out" ||
		{ echo "C++: post or event wrong"; exit 1; }
else
	echo "no C++ compiler: the C++ consumer is skipped"
fi
echo "pkgconfig: ok"
