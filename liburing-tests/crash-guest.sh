#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Guest half of the crash check (see crash-check.sh), run by vm/run with
# --disk: format /dev/vda (write) or mount it again (verify), then run
# crash-io. "write" ends with a reset of the guest, announced to vm/run
# through "reset" in $OUTDIR/status.
set -u
mode=$1 fs=$2 crash_io=$3 seed=$4 n=$5
dev=/dev/vda
mnt=/mnt/crash
opts=""
case "$fs" in
*-lazytime) opts="-o lazytime" ;;
esac
[ -b "$dev" ] || { echo "crash-guest: no disk $dev (vm/run --disk)"; exit 1; }
mkdir -p "$mnt"
if [ "$mode" = write ]; then
	case "$fs" in
	xfs*) mkfs.xfs -q -f "$dev" || exit 1 ;;
	ext4*) mkfs.ext4 -q -F "$dev" || exit 1 ;;
	*) echo "crash-guest: unknown fs config $fs"; exit 1 ;;
	esac
fi
mount $opts "$dev" "$mnt" || { echo "crash-guest: mount $opts $dev failed"; exit 1; }
echo "crash-guest: $mode on $fs ($(grep " $mnt " /proc/mounts | cut -d' ' -f4))"
if [ "$mode" = write ]; then
	echo reset >"$OUTDIR/status"
	"$crash_io" write "$mnt" "$seed" "$n"
	rc=$?
	echo "crash-guest: crash-io returned $rc instead of resetting the guest"
	umount "$mnt"
	exit $((rc ? rc : 1))
fi
"$crash_io" verify "$mnt" "$seed" "$n"
rc=$?
umount "$mnt" || rc=1
exit $rc
