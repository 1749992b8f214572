#!/bin/bash
# check_install_prefix.sh MESON SRCDIR - the installed programs start from a --prefix of one's
# own (userx35 D6): configure the source afresh with --prefix in a temporary directory (a libdir
# the dynamic loader does not search, and that ldconfig does not know), build the library,
# minitarget and scsitgtd (when built), install them, and run each from the prefix without
# LD_LIBRARY_PATH: they must load the installed libscsitgt through their RUNPATH. Before it
# they failed with "error while loading shared libraries: libscsitgt.so.0".
set -euo pipefail
MESON=${1:?usage: check_install_prefix.sh MESON SRCDIR}
SRCDIR=${2:?}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/scsitgt-prefix.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
unset LD_LIBRARY_PATH

# The least the programs need: no tests, no optional transports or backends.
"$MESON" setup "$tmp/build" "$SRCDIR" --prefix="$prefix" -Dtests=disabled -Drdma=disabled \
	-Drbd=disabled -Disal=disabled -Dio_uring=disabled >"$tmp/setup.log" 2>&1 ||
	{ cat "$tmp/setup.log"; echo "meson setup failed"; exit 1; }
targets=(examples/minitarget)
grep -q "^build examples/scsitgtd:" "$tmp/build/build.ninja" && targets+=(examples/scsitgtd)
# scsitgtctl does not link libscsitgt, but is installed with the runtime files.
others=()
grep -q "^build examples/scsitgtctl:" "$tmp/build/build.ninja" && others+=(examples/scsitgtctl)
ninja -C "$tmp/build" -j2 "${targets[@]}" "${others[@]}" >"$tmp/build.log" 2>&1 ||
	{ tail -20 "$tmp/build.log"; echo "build failed"; exit 1; }
# The runtime files only (the library and the programs), from what was built.
"$MESON" install -C "$tmp/build" --no-rebuild --tags runtime >"$tmp/install.log" 2>&1 ||
	{ cat "$tmp/install.log"; echo "meson install failed"; exit 1; }
lib=$(find "$prefix" -name 'libscsitgt.so.*' -type f | head -n 1)
[[ -n "$lib" ]] || { echo "libscsitgt.so not installed"; exit 1; }
echo "installed $lib"

for t in "${targets[@]}"; do
	prog=$prefix/bin/$(basename "$t")
	[[ -x "$prog" ]] || { echo "$prog not installed"; exit 1; }
	echo "$(basename "$prog"): $(readelf -d "$prog" | grep -E 'RPATH|RUNPATH' || echo 'no RUNPATH')"
	# It loads the installed library, not one of the build trees.
	ldd "$prog" | grep -q "libscsitgt.so.0 => $(dirname "$lib")/" ||
		{ ldd "$prog"; echo "$prog does not find the installed libscsitgt"; exit 1; }
done
out=$("$prefix/bin/minitarget" --help) || { echo "minitarget --help failed"; exit 1; }
grep -q "^usage: minitarget" <<<"$out" || { echo "minitarget --help: $out"; exit 1; }
echo "minitarget --help from the prefix: ok"
if [[ -x "$prefix/bin/scsitgtd" ]]; then
	printf '[target]\nname = iqn.2026-12.org.example:prefix\n[lun 0]\nbackend = ram\nsize = 1M\n' \
		>"$tmp/t.conf"
	out=$("$prefix/bin/scsitgtd" -t "$tmp/t.conf") || { echo "scsitgtd -t failed: $out"; exit 1; }
	echo "scsitgtd -t from the prefix: $out"
fi
echo "ok"
