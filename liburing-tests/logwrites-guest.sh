#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Guest half of the flush-granularity crash check (logwrites-check.sh):
# a file system on a dm-log-writes device (data /dev/ram0, log
# /dev/ram1), crash-io's fsynced rounds with a log mark after each fsync,
# then for every mark: replay the log up to it onto a zeroed data device,
# mount (log recovery, as after a crash at that moment), verify every
# fsynced byte, unmount, and check the file system with its fsck.
#
# usage: logwrites-guest.sh FS-CONFIG CRASH-IO REPLAY-LOG SEED ROUNDS
set -u
fs=$1 crash_io=$2 replay=$3 seed=$4 rounds=$5
data=/dev/ram0 log=/dev/ram1 dm=logw mnt=/mnt/logw
# No udev in the guest: libdevmapper makes the /dev/mapper nodes itself.
export DM_DISABLE_UDEV=1

say() {
	echo "logwrites-guest: $*"
}

opts=""
case "$fs" in
*-lazytime) opts="-o lazytime" ;;
esac
case "$fs" in
xfs*) mkfs=(mkfs.xfs -q -f) fsck=(xfs_repair -n) ;;
ext4*) mkfs=(mkfs.ext4 -q -F) fsck=(e2fsck -f -n) ;;
*) say "unknown fs config $fs"; exit 1 ;;
esac
for f in "$crash_io" "$replay"; do
	[ -x "$f" ] || { say "$f is missing"; exit 1; }
done
command -v dmsetup >/dev/null || { say "dmsetup is missing (vm/deps installs it)"; exit 1; }
mkdir -p "$mnt"

# Record: every write that reaches the data device, in flush order.
blkdiscard -f "$data" 2>/dev/null && blkdiscard -f "$log" 2>/dev/null || { say "blkdiscard failed"; exit 1; }
dmsetup create --noudevsync "$dm" \
	--table "0 $(blockdev --getsz "$data") log-writes $data $log" ||
	{ say "cannot create the dm-log-writes target (CONFIG_DM_LOG_WRITES?)"; exit 1; }
"${mkfs[@]}" "/dev/mapper/$dm" >/dev/null || { say "${mkfs[*]} failed"; exit 1; }
mount $opts "/dev/mapper/$dm" "$mnt" || { say "mount $opts failed"; exit 1; }
say "recording on $fs ($(grep " $mnt " /proc/mounts | cut -d' ' -f4)), seed $seed, $rounds fsynced rounds"
"$crash_io" logged "$mnt" "$seed" "$rounds" "$dm"
rc=$?
umount "$mnt" || rc=1
dmsetup remove --noudevsync "$dm" || rc=1
[ "$rc" = 0 ] || { say "the recorded run failed"; exit 1; }
say "log: $("$replay" --log "$log" --num-entries) entries"

# Replay: the disk as it was, for certain, when each fsync returned.
failed=0
for n in $(seq 0 "$rounds"); do
	ok=1
	blkdiscard -f "$data" 2>/dev/null || exit 1
	if ! "$replay" --log "$log" --replay "$data" --end-mark "synced-$n"; then
		say "replay to synced-$n failed"
		exit 1
	fi
	if mount $opts "$data" "$mnt"; then
		"$crash_io" verify "$mnt" "$seed" "$n" || ok=0
		umount "$mnt" || ok=0
	else
		say "synced-$n: the replayed file system does not mount"
		ok=0
	fi
	if ! "${fsck[@]}" "$data" >/tmp/fsck.log 2>&1; then
		say "synced-$n: ${fsck[*]} found problems:"
		sed 's/^/  /' /tmp/fsck.log | tail -20
		ok=0
	fi
	if [ "$ok" = 1 ]; then
		say "ok synced-$n: mounts, every fsynced byte is there, fsck clean"
	else
		say "FAIL synced-$n"
		failed=$((failed + 1))
	fi
done
say "$failed of $((rounds + 1)) marks failed"
[ "$failed" = 0 ]
