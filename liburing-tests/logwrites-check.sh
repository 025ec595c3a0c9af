#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Crash consistency at flush granularity, as fstests checks it with
# dm-log-writes (generic/455, 482): record every write of io_uring
# overwrites and fsyncs with their FLUSH/FUA order, replay the log up to
# each fsync's mark and verify that the file system mounts, fsck finds it
# clean, and every byte fsynced by then reads back. Unlike the reset of
# crash-check.sh, this finds a missing or misordered flush: dm-log-writes
# logs a write only once a flush covers it. One guest boot.
#
# usage: logwrites-check.sh VM_RUN CRASH_IO REPLAY_LOG FLAVOUR FS OUTDIR
set -eu
vm_run=$1 crash_io=$2 replay=$3 fl=$4 fs=$5 out=$6
here=$(cd "$(dirname "$0")" && pwd)
rounds=${TEST_CRASH_ROUNDS:-4}
seed=${TEST_SEED:-$(date +%s%N)}

[ -x "$replay" ] || { echo "logwrites-check: no replay-log at '$replay' (vm/fstests --build-only builds it)"; exit 1; }
mkdir -p "$out"
echo "logwrites-check: $fl $fs, seed $seed (rerun with TEST_SEED=$seed), $rounds fsynced rounds"
exec "$vm_run" --flavour "$fl" --timeout 900 --out "$out" -- \
	"$here/logwrites-guest.sh" "$fs" "$crash_io" "$replay" "$seed" "$rounds"
