#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Guest side of the peer suite: run liburing's own upstream tests (Debian's
# liburing 2.3 source, built on the host by liburing-tests/peer-build.sh)
# from a directory on the scratch file system, and print TAP.
#
# usage: peer-run.sh [--files-only] LIBURING-TEST-DIR RECORD
#
# --files-only runs the tests whose source creates files in the working
# directory (t_create_file, O_CREAT, mkstemp): the ones that exercise the
# scratch file system's write path. Without it, all of them.
#
# RECORD lists, per file system config ('*': all), the tests the baseline
# kernel fails ("<fs> <test> fail <reason>") and those not run at all
# ("<fs> <test> skip <reason>", e.g. they time out under TCG on baseline).
# Every other test must pass or skip (exit 77) on every kernel; a test
# recorded as failing may fail and is reported as an expected failure, so
# nothing is hidden. A splat while a test runs fails it.
set -u

TOP=$(cd "$(dirname "$0")/.." && pwd)
SPLAT_RE=$(cat "$TOP/vm/splat-patterns")
PEER_TIMEOUT=${PEER_TIMEOUT:-180}
FLAVOUR=${TEST_FLAVOUR:-unknown}
FS=${TEST_FS:-none}

# Print "kind reason" recorded for a test on this fs ('*' matches any fs).
recorded() {
	awk -v fs="$FS" -v t="$1" '($1 == fs || $1 == "*") && $2 == t {
		kind = $3; $1 = $2 = $3 = ""; sub(/^ +/, ""); print kind, $0; found = 1; exit }
		END { exit !found }' "$RECORD"
}

main() {
	local dir n=0 failed=0 t name rc log splat kind why files_only=0 t0 set=all
	if [ "${1:-}" = --files-only ]; then
		files_only=1
		set="files"
		shift
	fi
	[ $# -eq 2 ] || { echo "usage: $0 [--files-only] LIBURING-TEST-DIR RECORD" >&2; exit 2; }
	dir=$(readlink -f "$1")
	RECORD=$(readlink -f "$2")
	[ -d "$dir" ] || { echo "Bail out! no liburing test directory $dir"; exit 1; }
	if [ "$files_only" = 1 ]; then
		mapfile -t tests < <(cd "$dir" && grep -l -E 't_create_file|O_CREAT|mkstemp' ./*.c |
			sed 's|^\./||; s|\.c$|.t|' | while read -r t; do [ -x "$t" ] && echo "$t"; done)
	else
		mapfile -t tests < <(cd "$dir" && ls -1 ./*.t | sed 's|^\./||')
	fi
	[ "${#tests[@]}" -gt 0 ] || { echo "Bail out! no *.t in $dir (peer-build.sh not run?)"; exit 1; }
	mkdir -p "${TEST_DIR:?}/peer" && cd "$TEST_DIR/peer" || exit 1
	echo "1..${#tests[@]}"
	echo "# liburing 2.3 upstream tests ($set) in $PWD, kernel $(uname -r) ($FLAVOUR), fs $FS"
	for t in "${tests[@]}"; do
		n=$((n + 1))
		name="peer/${t%.t} [$FLAVOUR/$FS]"
		read -r kind why <<<"$(recorded "${t%.t}")"
		if [ "$kind" = skip ]; then
			echo "ok $n - $name # SKIP recorded: $why"
			continue
		fi
		# "flaky /REGEX/ reason": a failure is allowed when the output
		# matches REGEX (a race in the test itself, not the kernel).
		flaky_re=""
		if [ "$kind" = flaky ]; then
			flaky_re=${why#/}
			flaky_re=${flaky_re%%/ *}
			why=${why#/"$flaky_re"/ }
		fi
		[ "$kind" = fail ] || [ "$kind" = flaky ] || why=""
		log=$(mktemp)
		# As in runtests.sh: the host keeps the whole console, so
		# empty the kernel log and any splat after the test is its own.
		dmesg -C
		t0=$SECONDS
		timeout -s INT -k 10 "$PEER_TIMEOUT" "$dir/$t" >"$log" 2>&1
		rc=$?
		echo "# $t: exit $rc after $((SECONDS - t0)) s"
		splat=$(dmesg | grep -m1 -E -e "$SPLAT_RE")
		if [ -n "$splat" ]; then
			sed 's/^/# /' "$log"
			echo "not ok $n - $name: kernel splat: $splat"
			failed=$((failed + 1))
		elif [ "$rc" = 0 ]; then
			if [ "$kind" = flaky ]; then
				echo "ok $n - $name"
			elif [ -n "$why" ]; then
				echo "ok $n - $name # recorded as failing ($why) but passed: update the record"
			else
				echo "ok $n - $name"
			fi
		elif [ "$rc" = 77 ]; then
			echo "ok $n - $name # SKIP"
		elif [ "$kind" = flaky ] && [ "$rc" = 1 ] && grep -q -E -e "$flaky_re" "$log"; then
			echo "not ok $n - $name # TODO known race in the test: $why (exit $rc)"
		elif [ "$kind" = fail ]; then
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
