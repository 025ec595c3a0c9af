#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Crash check: io_uring overwrites of cached data, fsync, then a hard
# reset of the guest in the middle of an unsynced round; after a second
# boot every fsynced byte must be there and no unsynced byte anywhere but
# where it was written (crash-io.c has the rules).
#
# usage: crash-check.sh VM_RUN CRASH_IO FLAVOUR FS OUTDIR
# The disk is a sparse raw file in OUTDIR on a virtio-blk device, so it
# survives the reset (the brd disks of the other tests would not).
set -eu
vm_run=$1 crash_io=$2 fl=$3 fs=$4 out=$5
here=$(cd "$(dirname "$0")" && pwd)
rounds=${TEST_CRASH_ROUNDS:-4}
seed=${TEST_SEED:-$(date +%s%N)}

mkdir -p "$out"
img=$out/disk.img
rm -f "$img"
truncate -s 512M "$img"
echo "crash-check: $fl $fs, seed $seed (rerun with TEST_SEED=$seed), $rounds fsynced rounds"

"$vm_run" --flavour "$fl" --disk "$img" --expect-reset --timeout 900 \
	--out "$out/write" -- "$here/crash-guest.sh" write "$fs" "$crash_io" "$seed" "$rounds"
synced=$(sed -n 's/^synced \([0-9]*\)\r*$/\1/p' "$out/write/output.log" | tail -1)
if [ "$synced" != "$rounds" ]; then
	echo "crash-check: the writer reported 'synced ${synced:-nothing}', expected $rounds (output: $out/write/output.log)"
	exit 1
fi
grep -q "crashing in round" "$out/write/output.log" || {
	echo "crash-check: the writer did not reach the crash point"
	exit 1
}
"$vm_run" --flavour "$fl" --disk "$img" --timeout 900 \
	--out "$out/verify" -- "$here/crash-guest.sh" verify "$fs" "$crash_io" "$seed" "$synced"
rm -f "$img"
