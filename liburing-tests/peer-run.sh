#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Guest side of the peer suite: run liburing's own upstream tests (Debian's
# liburing 2.3 source, built on the host by liburing-tests/peer-build.sh)
# from a directory on the scratch file system, and print TAP.
#
# usage: peer-run.sh LIBURING-TEST-DIR RECORD
#
# RECORD lists, per file system config, the tests the baseline kernel
# fails ("<fs> <test> fail <reason>"). Every other test must pass or skip
# (exit 77) on every kernel; a test recorded as failing may fail, and is
# reported as an expected failure, so nothing is hidden. A splat while a
# test runs fails it.
set -u

TOP=$(cd "$(dirname "$0")/.." && pwd)
SPLAT_RE=$(cat "$TOP/vm/splat-patterns")
PEER_TIMEOUT=${PEER_TIMEOUT:-60}
FLAVOUR=${TEST_FLAVOUR:-unknown}
FS=${TEST_FS:-none}

recorded_failure() {
	awk -v fs="$FS" -v t="$1" '$1 == fs && $2 == t && $3 == "fail" {
		$1 = $2 = $3 = ""; sub(/^ +/, ""); print; found = 1; exit }
		END { exit !found }' "$RECORD"
}

main() {
	local dir n=0 failed=0 t name rc log splat why
	[ $# -eq 2 ] || { echo "usage: $0 LIBURING-TEST-DIR RECORD" >&2; exit 2; }
	dir=$(readlink -f "$1")
	RECORD=$(readlink -f "$2")
	[ -d "$dir" ] || { echo "Bail out! no liburing test directory $dir"; exit 1; }
	mapfile -t tests < <(cd "$dir" && ls -1 ./*.t | sed 's|^\./||')
	[ "${#tests[@]}" -gt 0 ] || { echo "Bail out! no *.t in $dir (peer-build.sh not run?)"; exit 1; }
	mkdir -p "${TEST_DIR:?}/peer" && cd "$TEST_DIR/peer" || exit 1
	echo "1..${#tests[@]}"
	echo "# liburing 2.3 upstream tests in $PWD, kernel $(uname -r) ($FLAVOUR), fs $FS"
	for t in "${tests[@]}"; do
		n=$((n + 1))
		name="peer/${t%.t} [$FLAVOUR/$FS]"
		log=$(mktemp)
		echo "uring-peer: start $t $FLAVOUR $FS" >/dev/kmsg
		timeout -s INT -k 10 "$PEER_TIMEOUT" "$dir/$t" >"$log" 2>&1
		rc=$?
		splat=$(dmesg | sed -n "/uring-peer: start $t $FLAVOUR $FS/,\$p" | grep -m1 -E "$SPLAT_RE")
		why=$(recorded_failure "${t%.t}") || why=""
		if [ -n "$splat" ]; then
			sed 's/^/# /' "$log"
			echo "not ok $n - $name: kernel splat: $splat"
			failed=$((failed + 1))
		elif [ "$rc" = 0 ]; then
			if [ -n "$why" ]; then
				echo "ok $n - $name # recorded as failing ($why) but passed: update the record"
			else
				echo "ok $n - $name"
			fi
		elif [ "$rc" = 77 ]; then
			echo "ok $n - $name # SKIP"
		elif [ -n "$why" ]; then
			echo "not ok $n - $name # TODO fails on baseline too: $why (exit $rc)"
		else
			sed 's/^/# /' "$log" | tail -20
			echo "not ok $n - $name: exit status $rc"
			failed=$((failed + 1))
		fi
		rm -f "$log"
	done
	[ "$failed" = 0 ]
}

main "$@"
