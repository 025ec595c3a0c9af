#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Guest side of bench/fio-batch: the 4-writer QD 32 cell (random 4 KiB
# overwrites of a cached 32 MiB file) six ways (below), to see whether fio and
# uring-overwrite disagree because of how they batch submissions:
#   ours        uring-overwrite -t 4 -q 32: fills the queue, then one
#               io_uring_enter() for the batch
#   fio-fresh   fio on a file of its own making: a write-only job unlinks
#               the file, preallocates a new one and lays it out, and that
#               leaves nothing in the page cache, so the first write to
#               every block finds it uncached
#   fio         fio's defaults (iodepth_batch_submit=1: one SQE per
#               io_uring_enter() as soon as it is queued), on a file
#               prefilled as ours is (written, fsynced, read back) and kept
#               (overwrite=1)
#   fio-batch   as fio, with iodepth_batch_submit=32 and
#               iodepth_batch_complete_min=1: batches like ours
#   fio-lean    as fio, with gtod_reduce=1: no latency clocks, so that
#               fio's own per-write cost in userspace weighs less
#   fio-both    as fio-batch, with gtod_reduce=1 too
# One line per run: BATCH <fs> <way> <iops> <write-punts> <sqes-per-enter>
# <user-us> <system-us> (sqes-per-enter only for ours, -1 where unknown;
# CPU per write: for ours getrusage(RUSAGE_SELF) over its measured run,
# the writers and io-wq; for fio its own account, usr_cpu and sys_cpu of
# the job threads over their run time, which leaves io-wq workers out).
# usage: fio-batch.sh BENCH-BINARY SECONDS
set -u
# shellcheck source=bench/guest-fio.sh
. "$(dirname "$0")/guest-fio.sh"
bin=$1 secs=$2
T=/sys/kernel/tracing/events/io_uring/io_uring_queue_async_work
command -v fio >/dev/null || { echo "fio-batch: fio is not installed" >&2; exit 1; }
[ -x "$bin" ] || { echo "fio-batch: no benchmark at $bin" >&2; exit 1; }

punts_start() { echo '!hist:keys=opcode' >$T/trigger 2>/dev/null; echo 'hist:keys=opcode' >$T/trigger; }
punts_read() {
	write_punts $T/hist
	echo '!hist:keys=opcode' >$T/trigger
}
fio_job() {
	local dir=$1
	shift
	fio --output-format=json --name=batch --directory="$dir" --filename=fio-file \
		--size=32M --runtime="$secs" --time_based --group_reporting \
		--randrepeat=0 --invalidate=0 --rw=randwrite --bs=4k --numjobs=4 \
		--iodepth=32 --ioengine=io_uring --direct=0 "$@" 2>/dev/null |
		python3 -c '
import json, sys
j = json.load(sys.stdin)["jobs"][0]
w, rt = j["write"], j["job_runtime"]
print("%d %.2f %.2f" % (round(w["iops"]), j["usr_cpu"] / 100 * rt * 1000 / w["total_ios"],
      j["sys_cpu"] / 100 * rt * 1000 / w["total_ios"]))' ||
		echo -1 -1 -1
	rm -f "$dir/fio-file"
}
# fio_way DIR WAY [fio options]: one fio run, one BATCH line
fio_way() {
	local dir=$1 way=$2 iops usr sys
	shift 2
	punts_start
	read -r iops usr sys < <(fio_job "$dir" "$@")
	echo "BATCH $fs $way $iops $(punts_read) -1 $usr $sys"
}
rc=0
for m in $TEST_MNTS; do
	fs=${m%%:*} dir=${m#*:}
	echo "fio-batch: $fs" >&2
	json=$(TEST_FS=$fs TEST_DIR=$dir "$bin" -T "$secs" -b 4096 -t 4 -q 32 -s 32M 2>/dev/null) || rc=1
	echo "$json" | python3 -c '
import json, sys
j = json.load(sys.stdin)
n = j["total"]["ops"]
c = j["cpu"]
print("BATCH %s ours %d %d %.2f %.2f %.2f" % (sys.argv[1], j["total"]["iops"],
      j["punts_write"], j["submit_calls"]["mean_batch"],
      c["user_s"] * 1e6 / n, c["sys_s"] * 1e6 / n))' "$fs" || rc=1
	rm -f "$dir/fio-file"
	fio_way "$dir" fio-fresh
	for way in fio fio-batch fio-lean fio-both; do
		prefill "$dir" || rc=1
		case $way in
		fio) set -- ;;
		fio-batch) set -- --iodepth_batch_submit=32 --iodepth_batch_complete_min=1 ;;
		fio-lean) set -- --gtod_reduce=1 ;;
		fio-both) set -- --iodepth_batch_submit=32 --iodepth_batch_complete_min=1 --gtod_reduce=1 ;;
		esac
		fio_way "$dir" $way --overwrite=1 "$@"
	done
done
exit $rc
