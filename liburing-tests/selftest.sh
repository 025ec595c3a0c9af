#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Checker self-test: run a test program with one of its TEST_SELFTEST_*
# knobs, which makes it damage its own file the way the bug it hunts
# would (a torn write, a lost write), and pass only when the checker
# catches it: a non-zero exit that is not a skip, a timeout or a signal,
# with a line matching REASON. Runs on the host, in a fresh directory
# under DIR: the damage is done from userspace, so any kernel shows it.
#
# usage: selftest.sh KNOB REASON DIR PROG
set -u

main() {
	local knob=$1 reason=$2 base=$3 prog=$4 dir log rc
	[ $# -eq 4 ] || { echo "usage: $0 KNOB REASON DIR PROG" >&2; exit 2; }
	mkdir -p "$base"
	dir=$(mktemp -d "$base/$(basename "$prog").XXXXXX") || exit 2
	log=$dir.log
	env "$knob=1" TEST_DIR="$dir" timeout -k 10 600 "$prog" >"$log" 2>&1
	rc=$?
	rm -rf "$dir"
	tail -n 30 "$log"
	case $rc in
	0) echo "FAIL: $(basename "$prog") with $knob=1 passed: its checker missed the damage"; exit 1 ;;
	77) echo "FAIL: $(basename "$prog") with $knob=1 skipped"; exit 1 ;;
	124 | 137) echo "FAIL: $(basename "$prog") with $knob=1 timed out"; exit 1 ;;
	esac
	if [ "$rc" -gt 128 ]; then
		echo "FAIL: $(basename "$prog") with $knob=1 died of signal $((rc - 128))"
		exit 1
	fi
	if ! grep -q -E -e "$reason" "$log"; then
		echo "FAIL: $(basename "$prog") with $knob=1 failed (exit $rc), but not with /$reason/"
		exit 1
	fi
	echo "ok: $(basename "$prog") with $knob=1 failed as it must (exit $rc, /$reason/)"
	rm -f "$log"
}

main "$@"
