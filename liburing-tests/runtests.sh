#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Run tests inside the guest and print TAP, one line per (test, fs
# config), named with the kernel flavour and file system config. Runs in
# the guest booted by vm/run, which sets TEST_FLAVOUR and TEST_MNTS
# ("name:/mnt/name ..."): every test runs on each mounted fs config in
# turn, so one boot covers all of them. Without TEST_MNTS, TEST_DIR and
# TEST_FS name the one directory to run in.
#
# usage: runtests.sh EXPECTATIONS TEST...
#
# Each test's expected outcome (pass or fail) comes from EXPECTATIONS, a
# table of "test flavour fs expect [reason]" lines where the last matching
# line wins and '*' matches anything. An expected failure whose output
# does not match the reason (an extended regex) is a failure. A test expected to fail that passes is a
# failure: it proved nothing. A kernel splat logged while a test ran fails
# that test whatever it returned.
set -u

TOP=$(cd "$(dirname "$0")/.." && pwd)
SPLAT_RE=$(cat "$TOP/vm/splat-patterns")
TEST_TIMEOUT=${TEST_TIMEOUT:-900}
FLAVOUR=${TEST_FLAVOUR:-unknown}
# Sizes of the long-running tests, per flavour, chosen so that a cold CI
# run fits its time (docs/usage.md, Timings). The integrity tester does
# 20k ops per fs config on the patched kernel (about 25 s under TCG); the
# debug kernel (KASAN, lockdep) runs it about ten times slower, so it does
# 5k per config, and the baseline (a control: the tester must pass on the
# unpatched kernel) 10k. Set them to override; vm/soak runs the long
# integrity runs outside CI, docs/testing.md has their last results.
case "$FLAVOUR" in
debug)
	export TEST_INTEGRITY_OPS=${TEST_INTEGRITY_OPS:-5000}
	export TEST_TORTURE_MS=${TEST_TORTURE_MS:-300}
	;;
patched) export TEST_INTEGRITY_OPS=${TEST_INTEGRITY_OPS:-20000} ;;
*) export TEST_INTEGRITY_OPS=${TEST_INTEGRITY_OPS:-10000} ;;
esac
FS=${TEST_FS:-none}

# Print "expect reason-regex" for a test: the last matching line wins.
expectation() {
	local name=$1 t f s e r want="pass"
	while read -r t f s e r; do
		case "$t" in '' | '#'*) continue ;; esac
		# shellcheck disable=SC2254 # the columns are glob patterns
		case "$name" in $t) ;; *) continue ;; esac
		case "$FLAVOUR" in $f) ;; *) continue ;; esac
		case "$FS" in $s) ;; *) continue ;; esac
		want="$e $r"
	done <"$EXPECT"
	echo "$want"
}

run_one() {
	local bin=$1 n=$2 name log=/tmp/runtests.log rc want reason splat label t0 line
	name=$(basename "$bin")
	label="$name [$FLAVOUR/$FS]"
	read -r want reason <<<"$(expectation "$name")"
	# Empty the kernel log (the host keeps the whole console) so a splat
	# found after the test is this test's. Few processes: on the debug
	# kernel under TCG each exec costs a fraction of a second.
	dmesg -C
	t0=$SECONDS
	timeout -k 10 "$TEST_TIMEOUT" "$bin" >"$log" 2>&1
	rc=$?
	splat=$(dmesg | grep -m1 -E -e "$SPLAT_RE")
	while IFS= read -r line; do
		echo "# $line"
	done <"$log"
	echo "# $name: exit $rc after $((SECONDS - t0)) s"
	if [ -n "$splat" ]; then
		echo "not ok $n - $label: kernel splat: $splat"
		return 1
	fi
	# An expected failure must fail for the reason it targets, and an
	# expected skip skip for its reason.
	if [ "$want" = fail ] && [ "$rc" != 0 ] && [ -n "$reason" ] &&
		! grep -q -E -e "$reason" "$log"; then
		echo "not ok $n - $label: expected to fail with /$reason/ but failed otherwise (exit $rc)"
		return 1
	fi
	if [ "$want" = skip ] && [ "$rc" = 77 ] && ! grep -q -E -e "$reason" "$log"; then
		echo "not ok $n - $label: skipped, but not with /$reason/"
		return 1
	fi
	# A skip (exit 77) passes only where the expectations list it with
	# its reason: a case that cannot run is not a case that passed.
	case "$rc/$want" in
	124/* | 137/*) echo "not ok $n - $label: timed out after ${TEST_TIMEOUT}s"; return 1 ;;
	# Killed by a signal or not run at all: never an expected outcome.
	12[6-9]/* | 1[3-9][0-9]/* | 2[0-9][0-9]/*)
		echo "not ok $n - $label: exit status $rc (a signal or an exec failure, not a test result)"; return 1 ;;
	*/any) echo "ok $n - $label # SKIP outcome not judged here (exit $rc): $reason" ;;
	77/skip) echo "ok $n - $label # SKIP $reason" ;;
	77/*) echo "not ok $n - $label: skipped (exit 77), and the expectations list no skip here"; return 1 ;;
	*/skip) echo "not ok $n - $label: expected to skip with /$reason/ but exited $rc"; return 1 ;;
	0/pass) echo "ok $n - $label" ;;
	0/fail) echo "not ok $n - $label: expected to fail on $FLAVOUR/$FS but passed"; return 1 ;;
	*/fail) echo "not ok $n - $label # TODO expected failure on $FLAVOUR (exit $rc)" ;;
	*/pass) echo "not ok $n - $label: exit status $rc"; return 1 ;;
	*) echo "not ok $n - $label: bad expectation '$want'"; return 1 ;;
	esac
	return 0
}

# Give a scratch file system's freed blocks back to the ram disk, so four
# fs configs in one boot do not hold four disks' worth of guest memory.
release_space() {
	fstrim "$1" >/dev/null 2>&1 || true
}

main() {
	local n=0 failed=0 bin tests mnts m dir
	[ $# -ge 2 ] || { echo "usage: $0 EXPECTATIONS TEST..." >&2; exit 2; }
	EXPECT=$1
	shift
	[ -r "$EXPECT" ] || { echo "Bail out! cannot read $EXPECT"; exit 1; }
	# Paths may be relative to the caller's directory; tests run in /.
	[[ $EXPECT == /* ]] || EXPECT=$PWD/$EXPECT
	tests=()
	for bin in "$@"; do
		[[ $bin == /* ]] || bin=$PWD/$bin
		tests+=("$bin")
	done
	if [ -n "${TEST_MNTS:-}" ]; then
		read -r -a mnts <<<"$TEST_MNTS"
	else
		mnts=("$FS:${TEST_DIR:-/tmp}")
	fi
	echo "1..$((${#tests[@]} * ${#mnts[@]}))"
	cd / || exit 1
	for m in "${mnts[@]}"; do
		FS=${m%%:*}
		dir=${m#*:}
		export TEST_FS=$FS TEST_DIR=$dir
		# Tests create their files in $TEST_DIR; nothing here keeps
		# a working directory on the mount, which a test may unmount
		# and mount again (nowait-stamp).
		if [ ! -d "$dir" ] || [ ! -w "$dir" ]; then
			echo "Bail out! $dir is not a writable directory"
			exit 1
		fi
		echo "# kernel $(uname -r) flavour $FLAVOUR fs $FS ($(findmnt -n -o SOURCE,FSTYPE,OPTIONS -T "$dir" | tr -s ' '))"
		for bin in "${tests[@]}"; do
			n=$((n + 1))
			run_one "$bin" "$n" || failed=$((failed + 1))
		done
		release_space "$dir"
	done
	[ "$failed" = 0 ]
}

main "$@"
