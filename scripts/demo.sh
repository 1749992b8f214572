#!/bin/bash
# demo.sh - build libscsitgt and run the minitarget example in the foreground.
#
# Installs what the build and the README's "Try it" commands need (scripts/install-deps.sh
# --demo; scripts/test.sh installs the test tools), then builds the library and minitarget only
# (ninja -C build builds the rest: tests, other examples).
#
#   scripts/demo.sh                       a 1 GiB RAM LUN 0 on 127.0.0.1:3260
#   scripts/demo.sh --lun 0:ram:64M,thin --portal 127.0.0.1:3261 ...
#
# All arguments go to build/examples/minitarget (see its --help). Then, from another shell:
#   iscsi-ls -s iscsi://127.0.0.1:3260
#   qemu-img info iscsi://127.0.0.1:3260/iqn.2026-11.org.libscsitgt:minitarget/0
# (README.md, "Quick start", has the rest.)
# Stop it with Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh --demo
if [[ -f build/build.ninja ]]; then
	meson configure build -Dexamples=true >/dev/null
else
	rm -rf build
	meson setup build -Dbuildtype=debugoptimized -Dexamples=true
fi
ninja -C build -j "$(nproc 2>/dev/null || echo 2)" examples/minitarget
exec build/examples/minitarget "$@"
