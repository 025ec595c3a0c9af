# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# Sourced by the guest sides of bench/fio-batch and bench/lock-trace.

# Writes punted, from the hist file of a 'hist:keys=opcode' trigger on
# io_uring:io_uring_queue_async_work (write opcodes: 2 WRITEV,
# 5 WRITE_FIXED, 23 WRITE).
write_punts() {
	awk '/opcode:/ { gsub(/[{}:]/, " "); if ($2 == 2 || $2 == 5 || $2 == 23) n += $4 } END { print n + 0 }' "$1"
}

# As uring-overwrite's prefill: DIR/fio-file, 32 MiB, written, fsynced
# and read back.
prefill() {
	dd if=/dev/zero of="$1/fio-file" bs=1M count=32 conv=fsync status=none &&
		cat "$1/fio-file" >/dev/null
}
