#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Guest side of vm/soak: run the integrity tester for OPS operations on
# every mounted scratch file system (TEST_MNTS from vm/run), one after the
# other, and print TAP, one line per fs config. A kernel splat during a
# run fails it.
# usage: soak.sh INTEGRITY-BINARY OPS
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
SPLAT_RE=$(cat "$TOP/vm/splat-patterns")
bin=$1 ops=$2
[ -x "$bin" ] || { echo "Bail out! no integrity tester at $bin"; exit 1; }
n=0 failed=0
# shellcheck disable=SC2086 # TEST_MNTS is a list
set -- $TEST_MNTS
echo "1..$#"
for m in "$@"; do
	n=$((n + 1))
	fs=${m%%:*} dir=${m#*:}
	dmesg -C
	t0=$SECONDS
	(cd "$dir" && TEST_FS=$fs TEST_DIR=$dir TEST_INTEGRITY_OPS=$ops \
		"$bin") >/tmp/soak.log 2>&1
	rc=$?
	sed 's/^/# /' /tmp/soak.log
	splat=$(dmesg | grep -m1 -E -e "$SPLAT_RE")
	if [ -n "$splat" ]; then
		echo "not ok $n - integrity $ops ops [$TEST_FLAVOUR/$fs]: kernel splat: $splat"
		failed=$((failed + 1))
	elif [ "$rc" != 0 ]; then
		echo "not ok $n - integrity $ops ops [$TEST_FLAVOUR/$fs]: exit $rc after $((SECONDS - t0)) s"
		failed=$((failed + 1))
	else
		echo "ok $n - integrity $ops ops [$TEST_FLAVOUR/$fs] in $((SECONDS - t0)) s"
	fi
done
[ "$failed" = 0 ]
