#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Guest side of bench/sched-trace: run one uring-overwrite cell with the
# scheduler's sched_switch and sched_wakeup events traced, and leave the
# benchmark's JSON (bench.json), the trace (trace.txt) and the trace
# buffer's overrun count (overrun) in $OUTDIR.
# usage: sched-trace.sh BENCH-BINARY SECONDS [uring-overwrite options]
set -u
bin=$1 secs=$2
shift 2
T=/sys/kernel/tracing
[ -x "$bin" ] || { echo "sched-trace: no benchmark at $bin" >&2; exit 1; }
[ -d "$T/events/sched/sched_switch" ] ||
	{ echo "sched-trace: no sched_switch event in $T" >&2; exit 1; }
echo 0 >$T/tracing_on
echo >$T/trace
echo 32768 >$T/buffer_size_kb
for e in sched_switch sched_wakeup sched_wakeup_new; do
	echo 1 >$T/events/sched/$e/enable
done
echo 1 >$T/tracing_on
"$bin" -T "$secs" --seed 1 "$@" >"$OUTDIR/bench.json"
rc=$?
echo 0 >$T/tracing_on
cat $T/trace >"$OUTDIR/trace.txt"
awk '/^overrun:/ {n += $2} END {print n + 0}' $T/per_cpu/cpu*/stats >"$OUTDIR/overrun"
exit $rc
