#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Guest side of vm/report: one io_uring 4 KiB random overwrite run on each
# mounted scratch file system (TEST_MNTS from vm/run), one line each: the
# benchmark's JSON object (fs, flavour, punts_per_1000_writes, latencies...);
# its per-second status lines go to stderr.
# usage: guest-punts.sh BENCH-BINARY [bench options...]
set -u
bin=$1
shift
rc=0
for m in $TEST_MNTS; do
	TEST_FS=${m%%:*} TEST_DIR=${m#*:} "$bin" "$@" || rc=1
done
exit $rc
