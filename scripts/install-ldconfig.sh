#!/bin/sh
# Run by `meson install` (meson.add_install_script): refreshes the dynamic linker's cache so that
# programs find the newly installed libscsitgt.so.N in a prefix such as /usr/local at once.
# Debian 12's meson (1.0) does not do it itself. Skipped for a staged install (DESTDIR set: the
# package's own trigger runs ldconfig on the target system), when not root (ldconfig could not
# write its cache), and where there is no ldconfig (not glibc).
[ -n "$DESTDIR" ] && exit 0
[ "$(id -u)" = 0 ] || {
	echo "install-ldconfig: not root: run ldconfig as root so programs find libscsitgt.so"
	exit 0
}
command -v ldconfig >/dev/null 2>&1 || PATH=$PATH:/sbin:/usr/sbin
command -v ldconfig >/dev/null 2>&1 || exit 0
ldconfig
