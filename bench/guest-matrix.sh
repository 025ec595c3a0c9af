#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Guest side of vm/report: run the benchmark matrix on every mounted
# scratch file system (TEST_MNTS from vm/run). One line per cell on
# stdout: "RESULT <cell> <fs> <json>" from bench/uring-overwrite, or
# "FIO <cell> <fs> <json>" with the fields of fio's JSON we report.
# usage: guest-matrix.sh BENCH-BINARY MATRIX-FILE SECONDS
set -u
bin=$1 matrix=$2 secs=$3
rc=0
[ -r "$matrix" ] || { echo "guest-matrix: cannot read $matrix (host /tmp is not visible in the guest)" >&2; exit 1; }
[ -x "$bin" ] || { echo "guest-matrix: no benchmark at $bin" >&2; exit 1; }
fio_cell() {
	local cell=$1 dir=$2 fs=$3
	shift 3
	local out
	out=$(fio --output-format=json --name="$cell" --directory="$dir" \
		--filename=fio-file --size=32M --runtime="$secs" --time_based \
		--group_reporting --randrepeat=0 "$@" 2>/dev/null) || {
		echo "FIO $cell $fs {\"error\": \"fio failed\"}"
		return 1
	}
	echo "$out" | python3 -c '
import json, sys
j = json.load(sys.stdin)["jobs"][0]["write"]
pct = j.get("clat_ns", {}).get("percentile", {})
print(json.dumps({"iops": j["iops"], "bw_kib": j["bw"],
    "slat_ns": {"mean": j["slat_ns"]["mean"], "max": j["slat_ns"]["max"]},
    "clat_ns": {"mean": j["clat_ns"]["mean"], "p50": pct.get("50.000000"),
                "p99": pct.get("99.000000"), "p99.9": pct.get("99.900000")}}))
' | sed "s/^/FIO $cell $fs /"
	rm -f "$dir/fio-file"
}
for m in $TEST_MNTS; do
	fs=${m%%:*} dir=${m#*:}
	while read -r kind cell args; do
		case "$kind" in '' | '#'*) continue ;; esac
		echo "matrix: $fs $cell" >&2
		if [ "$kind" = fio ]; then
			# shellcheck disable=SC2086
			fio_cell "$cell" "$dir" "$fs" $args || rc=1
		else
			# shellcheck disable=SC2086
			json=$(TEST_FS=$fs TEST_DIR=$dir "$bin" -T "$secs" $args 2>/dev/null) || rc=1
			[ -n "$json" ] || json='{"error": "benchmark failed"}'
			echo "RESULT $cell $fs $json"
		fi
	done <"$matrix"
done
exit $rc
