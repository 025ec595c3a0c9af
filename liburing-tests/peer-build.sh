#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Fetch and build liburing's own upstream test suite from Debian's source
# package (liburing 2.3) into the cache, for liburing-tests/peer-run.sh.
# Adds a deb-src entry for Debian's main archive when none exists.
# Prints the directory holding the built tests (*.t) on stdout.
set -eu
. "$(dirname "$0")/../vm/lib.sh"

PEER=$CACHE/peer
SRC_LIST=/etc/apt/sources.list.d/uring-overwrite-deb-src.sources

have_deb_src() {
	apt-get source --print-uris -qq liburing 2>/dev/null | grep -q '\.dsc'
}

add_deb_src() {
	local suite
	[ "$(id -u)" -eq 0 ] || die "no deb-src entry for liburing: run as root, or add one (see docs/usage.md)"
	suite=$(. /etc/os-release && echo "$VERSION_CODENAME")
	[ -n "$suite" ] || die "cannot tell the Debian suite from /etc/os-release"
	say "adding $SRC_LIST (deb-src for $suite)" >&2
	cat >"$SRC_LIST" <<EOF
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: $suite $suite-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
	run apt-get update -q >/dev/null 2>&1 || die "apt-get update failed after adding $SRC_LIST"
	have_deb_src || die "apt-get source liburing still finds no source package"
}

main() {
	local dir
	dir=$(ls -d "$PEER"/liburing-*/ 2>/dev/null | head -n 1)
	if [ -z "$dir" ]; then
		have_deb_src || add_deb_src
		mkdir -p "$PEER"
		say "fetching Debian's liburing source package" >&2
		(cd "$PEER" && run apt-get source -qq liburing >/dev/null 2>&1) ||
			die "apt-get source liburing failed"
		dir=$(ls -d "$PEER"/liburing-*/ | head -n 1)
	fi
	dir=${dir%/}
	if [ ! -f "$dir/test/.built" ]; then
		say "building liburing's tests in $dir/test" >&2
		(
			cd "$dir"
			./configure >/dev/null
			make -s -j"$JOBS" -C src >/dev/null
			make -s -j"$JOBS" -C test >/dev/null
		) || die "building liburing's tests failed in $dir"
		touch "$dir/test/.built"
	fi
	echo "$dir/test"
}

main "$@"
