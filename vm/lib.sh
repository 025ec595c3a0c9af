# SPDX-License-Identifier: GPL-2.0
# Shared settings for the vm/ scripts. Sourced, not run.
#
# Environment overrides (see docs/usage.md):
#   URING_VM_CACHE   cache directory (kernel trees, builds, ccache, logs)
#   URING_VM_JOBS    make -j for kernel builds (default: nproc)

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${URING_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/uring-overwrite}
JOBS=${URING_VM_JOBS:-$(nproc)}
FLAVOURS="baseline patched debug"
# Built and booted only when asked for by name: the series plus the
# deliberately wrong patches in kernel/broken/, which the tests must catch
# (vm/test-the-tests), and the series with KCSAN (kernel/config/kcsan.config).
BROKEN_FLAVOURS="broken broken-tear broken-copy broken-stamp broken-log broken-wait broken-mark broken-map broken-share broken-pin broken-source broken-read broken-pileup broken-sharedwq broken-handoff broken-iversion broken-nosec broken-splice"
EXTRA_FLAVOURS="$BROKEN_FLAVOURS kcsan"

# The deliberately wrong patch of each broken flavour (a glob in
# kernel/broken/).
broken_patch() {
	case "$1" in
	broken) echo "0001-*.patch" ;;	# dirties only the first folio
	broken-tear) echo "0002-*.patch" ;;	# locks each folio only for its copy
	broken-copy) echo "0003-*.patch" ;;	# XFS copies the source under its locks
	broken-stamp) echo "0004-*.patch" ;;	# ext4 NOWAIT stamps before the gate
	broken-log) echo "0005-*.patch" ;;	# NOWAIT stamps never logged by the work
	broken-wait) echo "0006-*.patch" ;;	# io_uring never waits for a busy folio
	broken-mark) echo "0007-*.patch" ;;	# XFS readers' copies never marked stale
	broken-map) echo "0008-*.patch" ;;	# XFS trusts a stale mapped run
	broken-share) echo "0009-*.patch" ;;	# XFS overwrites shared blocks in place
	broken-pin) echo "0010-*.patch" ;;	# pinned source read from page starts
	broken-source) echo "0011-*.patch" ;;	# a source in the file written taken shared
	broken-read) echo "0012-*.patch" ;;	# XFS read into a mapping of the file validates
	broken-pileup) echo "0013-*.patch" ;;	# a time item queued for every update
	broken-sharedwq) echo "0014-*.patch" ;;	# one time workqueue for all file systems
	broken-handoff) echo "0015-*.patch" ;;	# every time item runs, one inode's beside another
	broken-iversion) echo "0016-*.patch" ;;	# NOWAIT writers never bump a queried i_version
	broken-nosec) echo "0017-*.patch" ;;	# ext4 inodes not S_NOSEC when read
	broken-splice) echo "0018-*.patch" ;;	# XFS splice readers in the overwrite gate
	esac
}
PROG=$(basename "$0")

die() {
	echo "$PROG: error: $*" >&2
	exit 1
}

# The Meson build directory (URING_BUILD_DIR, default $TOP/build), as an
# absolute path. The guests see the host only through $TOP, so the test
# and benchmark binaries they run must lie under it.
build_dir() {
	local b top
	b=$(realpath -m "${URING_BUILD_DIR:-$TOP/build}")
	top=$(realpath "$TOP")
	case "$b" in
	"$top"/*) echo "$b" ;;
	*) die "URING_BUILD_DIR=$b lies outside $top, the only host directory the guests see" ;;
	esac
}

say() {
	echo "$PROG: $*"
}

# Print an external command, then run it.
run() {
	echo "+ $*" >&2
	"$@"
}

valid_flavour() {
	case " $FLAVOURS $EXTRA_FLAVOURS " in
	*" $1 "*) return 0 ;;
	esac
	return 1
}

kernel_image() {
	echo "$CACHE/$1/build/arch/x86/boot/bzImage"
}

# Refuse to start a long step on a nearly full disk: one clear line.
need_space() {
	local dir=$1 need_mb=$2 have_mb
	mkdir -p "$dir"
	have_mb=$(df -Pm "$dir" | awk 'NR == 2 { print $4 }')
	if [ "$have_mb" -lt "$need_mb" ]; then
		die "not enough disk space in $dir: ${have_mb} MiB free, need ${need_mb} MiB (set URING_VM_CACHE elsewhere?)"
	fi
}
