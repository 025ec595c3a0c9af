#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Guest side of bench/lock-trace: run fio's twin of one cell on a file
# prefilled as the benchmark's (written, fsynced, read back), once cached
# (invalidate=0) and once dropped when fio opens it (invalidate=1, fio's
# default), on every mounted fs config, with three histogram triggers:
# io_uring_queue_async_work by opcode (punts), lock:contention_begin by
# flags and call chain (a rwsem or mutex acquisition that found the lock
# taken and went to its slow path: readers of a rwsem do not spin, so for
# them this is a sleep; a chain through io_wq_submit_work() is an io-wq
# worker's), and sched_switch by thread and state (sleeps in D). One
# event takes one hist trigger, hence the chains rather than the threads.
# One line per run:
#   LOCK <fs> <file> <write-iops> <writes> <write-punts>
#        <iowq-rwsem-read> <iowq-rwsem-write> <iowq-D-sleeps>
#        <submitter-rwsem-read> <submitter-rwsem-write> <submitter-D-sleeps>
# and, for the dropped file, the two most frequent contended call chains.
# usage: lock-trace.sh SECONDS [fio options that replace the cell's]
set -u
# shellcheck source=bench/guest-fio.sh
. "$(dirname "$0")/guest-fio.sh"
secs=$1
shift
T=/sys/kernel/tracing
Q=$T/events/io_uring/io_uring_queue_async_work
C=$T/events/lock/contention_begin
S=$T/events/sched/sched_switch
command -v fio >/dev/null || { echo "lock-trace: fio is not installed" >&2; exit 1; }
for d in "$Q" "$C" "$S"; do
	[ -d "$d" ] || { echo "lock-trace: no trace event $d" >&2; exit 1; }
done
cell=(--rw=randwrite --bs=4k --numjobs=4 --iodepth=32)
[ $# -gt 0 ] && cell=("$@")

QH='hist:keys=opcode'
CS='hist:keys=flags,common_stacktrace:vals=hitcount:sort=hitcount.descending'
SH='hist:keys=prev_comm,prev_state:vals=hitcount'
triggers() {
	local op=$1 w
	for w in "$Q:$QH" "$C:$CS" "$S:$SH"; do
		echo "$op${w#*:}" >"${w%%:*}/trigger" 2>/dev/null
	done
}

rc=0
for m in $TEST_MNTS; do
	fs=${m%%:*} dir=${m#*:}
	for file in cached dropped; do
		inv=0
		[ $file = dropped ] && inv=1
		echo "lock-trace: $fs, $file file: fio ${cell[*]}" >&2
		rm -f "$dir/fio-file"
		prefill "$dir" || rc=1
		triggers '!'
		triggers ''
		json=$(fio --output-format=json --name=lock --directory="$dir" \
			--filename=fio-file --size=32M --runtime="$secs" --time_based \
			--group_reporting --randrepeat=0 --invalidate=$inv --overwrite=1 \
			--ioengine=io_uring --direct=0 "${cell[@]}" 2>/dev/null) || rc=1
		w=$(echo "$json" | python3 -c 'import json, sys
w = json.load(sys.stdin)["jobs"][0]["write"]
print(round(w["iops"]), w["total_ios"])') || { w="-1 -1"; rc=1; }
		punts=$(write_punts "$Q/hist")
		# rwsem read (flags 2) and write (4) slow paths, io-wq's and the rest
		locks=$(awk '/^\{ flags:/ { f = $3 + 0; cls = "s"; next }
				/io_wq_submit_work/ { cls = "w" }
				/hitcount:/ { n = $NF; if (f == 2) r[cls] += n; if (f == 4) x[cls] += n }
			END { printf "%d %d %d %d", r["w"], x["w"], r["s"], x["s"] }' "$C/hist")
		sleeps=$(awk '/prev_comm:/ {
				st = $0; sub(/.*prev_state: */, "", st); sub(/[^0-9].*/, "", st)
				n = $0; sub(/.*hitcount: */, "", n)
				if (st != 2) next
				if ($0 ~ /prev_comm: iou-wrk/) w += n; else if ($0 ~ /prev_comm: (fio|lock)/) s += n
			} END { printf "%d %d", w, s }' "$S/hist")
		# shellcheck disable=SC2086 # two lists of numbers
		set -- $locks $sleeps
		echo "LOCK $fs $file $w $punts $1 $2 $5 $3 $4 $6"
		if [ $file = dropped ]; then
			# the two most frequent contended call chains, 7 frames each
			awk '/^\{ flags:/ { n++; if (n > 2) exit; k = 0; printf "STACK %s flags=%s\n", fs, $3; next }
				n && /^ +[a-z_]/ && k < 7 { k++; printf "STACK %s   %s\n", fs, $1; next }
				n && /hitcount:/ { printf "STACK %s   hits %s\n", fs, $NF }' fs="$fs" "$C/hist"
		fi
		triggers '!'
		rm -f "$dir/fio-file"
	done
done
exit $rc
