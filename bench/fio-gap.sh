#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Guest side of bench/fio-gap: why fio's buffered cells and ours disagree.
# For each mounted scratch file system (TEST_MNTS from vm/run), run the same
# fio job (random 4 KiB writes, 32 MiB file, psync and io_uring QD 1) on
# files prepared four ways, ROUNDS times, and print one line per run:
#   GAP <fs> <prep> <engine> <iops> <punts> <round>
# prep:
#   fio-layout      fio creates and lays out its own file (what the matrix did
#                   before 2026-12-04), then drops it from the page cache (invalidate=1,
#                   fio's default) before the job
#   fio-cached      the same file, kept in the page cache (invalidate=0)
#   bench-cached    the file uring-overwrite prepares for its own cells
#                   (written, fsynced, read back), invalidate=0
#   bench-dropped   that file, dropped from the page cache (invalidate=1)
# punts: io_uring_queue_async_work events during the job (-1 without
# tracefs).
# usage: fio-gap.sh BENCH-BINARY SECONDS ROUNDS
set -u
bin=$1 secs=$2 rounds=${3:-1}
T=/sys/kernel/tracing
[ -d $T/events ] || T=/sys/kernel/debug/tracing
command -v fio >/dev/null || { echo "fio-gap: fio is not installed" >&2; exit 1; }
[ -x "$bin" ] || { echo "fio-gap: no benchmark at $bin" >&2; exit 1; }

punts_start() {
	[ -w $T/events/io_uring/io_uring_queue_async_work/enable ] || return 0
	echo 0 >$T/tracing_on
	echo >$T/trace
	echo 1 >$T/events/io_uring/io_uring_queue_async_work/enable
	echo 1 >$T/tracing_on
}

punts_read() {
	[ -w $T/events/io_uring/io_uring_queue_async_work/enable ] || { echo -1; return; }
	echo 0 >$T/tracing_on
	echo 0 >$T/events/io_uring/io_uring_queue_async_work/enable
	grep -c io_uring_queue_async_work $T/trace
}

# job FS DIR PREP FILE INVALIDATE ENGINE ROUND
job() {
	local fs=$1 dir=$2 prep=$3 file=$4 inval=$5 engine=$6 round=$7 iops punts
	punts_start
	iops=$(fio --output-format=json --name=gap --directory="$dir" \
		--filename="$file" --size=32M --runtime="$secs" --time_based \
		--randrepeat=0 --direct=0 --rw=randwrite --bs=4k --iodepth=1 \
		--ioengine="$engine" --invalidate="$inval" 2>/dev/null |
		python3 -c 'import json, sys; print(round(json.load(sys.stdin)["jobs"][0]["write"]["iops"]))') ||
		iops=-1
	punts=$(punts_read)
	echo "GAP $fs $prep $engine $iops $punts $round"
}

rc=0
for round in $(seq "$rounds"); do
	for m in $TEST_MNTS; do
		fs=${m%%:*} dir=${m#*:}
		echo "fio-gap: round $round, $fs" >&2
		for engine in psync io_uring; do
			rm -f "$dir/fio-file" "$dir/bench-file"
			job "$fs" "$dir" fio-layout fio-file 1 "$engine" "$round"
			job "$fs" "$dir" fio-cached fio-file 0 "$engine" "$round"
			# -n 1: prepare the file the way our cells do, write once.
			TEST_DIR=$dir "$bin" -n 1 -q 1 -s 32M >/dev/null 2>&1 || rc=1
			job "$fs" "$dir" bench-cached bench-file 0 "$engine" "$round"
			job "$fs" "$dir" bench-dropped bench-file 1 "$engine" "$round"
		done
		rm -f "$dir/fio-file" "$dir/bench-file"
	done
done
exit $rc
