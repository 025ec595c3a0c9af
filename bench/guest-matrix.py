#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Guest side of vm/report: one round of the benchmark matrix.

usage: guest-matrix.py --bench BIN --matrix FILE --seconds N --round R
                       --label LABEL [--out FILE.jsonl] [--no-fio]

For every mounted scratch file system (TEST_MNTS from vm/run) and every
cell of the matrix, both in orders shuffled by the round number (the same
orders on every kernel in a round), run bench/uring-overwrite, then its fio
twins: the same block size, jobs, depth, file size and mix, on a file
prefilled the way uring-overwrite prefills its own (written, fsynced and
read back), once kept in the page cache (invalidate=0) and once dropped
from it when fio opens it (invalidate=1, fio's default). fio runs with
overwrite=1 so that it uses the prefilled file: without it, a write-only
fio job unlinks the file, creates a new one and preallocates it, and its
layout leaves nothing cached, so every write starts on an uncached range
(docs/results.md, 2026-12-04). A cell with --prime has its fio file
primed the same way (one RWF_NOWAIT rewrite of its first 4 KiB after the
prefill). Each run appends one JSON object to --out
(JSON Lines):

  {"round", "label", "cell", "fs", "tool": "bench" | "fio",
   "variant": null | "cached" | "dropped", "vcpus": the guest's CPUs,
   "clocksource": the guest kernel's,
   "result": {...}}

fio's result holds its IOPS, submission and completion latencies and the
punts to io-wq by opcode (the same hist trigger uring-overwrite reads).
A run that fails records {"error": ...} and the round goes on; the exit
status is 1 if any run failed.
"""
import argparse
import errno
import json
import os
import random
import re
import shlex
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import results  # noqa: E402  (the matrix parser, shared with report.py)

EVENT = "/sys/kernel/tracing/events/io_uring/io_uring_queue_async_work"
TRIGGER = "hist:keys=opcode"
WRITE_OPS = (2, 5, 23)   # WRITEV, WRITE_FIXED, WRITE
READ_OPS = (1, 4, 22)    # READV, READ_FIXED, READ


def log(msg):
    sys.stderr.write("guest-matrix: {}\n".format(msg))
    sys.stderr.flush()


def trigger(cmd):
    """Write cmd to the punt event's trigger file; False if it failed."""
    try:
        with open(EVENT + "/trigger", "w") as f:
            f.write(cmd)
        return True
    except OSError as e:
        if not cmd.startswith("!"):
            log("no punt counts: {}".format(e))
        return False


def punts_start():
    trigger("!" + TRIGGER)  # one left behind by a killed run
    return trigger(TRIGGER)


def punts_read():
    """Hits by opcode since punts_start()."""
    by_op = {}
    with open(EVENT + "/hist") as f:
        for line in f:
            p = line.replace("{", " ").replace("}", " ").replace(":", " ")
            p = p.split()
            if len(p) >= 4 and p[0] == "opcode" and p[2] == "hitcount":
                by_op[int(p[1])] = by_op.get(int(p[1]), 0) + int(p[3])
    return by_op


def punts_stop():
    trigger("!" + TRIGGER)


def bench_opts(args):
    """The uring-overwrite options of a cell, as a dict."""
    o = {"b": "4096", "t": "1", "q": "8", "s": "64M", "r": "0",
         "m": "uring", "k": "default", "readers": "0"}
    flags = set()
    a = shlex.split(args)
    i = 0
    while i < len(a):
        x = a[i]
        if x in ("-b", "-t", "-q", "-s", "-r", "-m", "-k", "-n", "-f"):
            o[x[1]] = a[i + 1]
            i += 2
            continue
        if x == "--readers":
            o["readers"] = a[i + 1]
            i += 2
            continue
        flags.add(x)
        i += 1
    return o, flags


def fio_twin(args):
    """fio options matching a cell, or None (and why) if fio has no twin."""
    o, flags = bench_opts(args)
    if o["m"] == "memcpy":
        return None, "memcpy floor: no I/O"
    if "-A" in flags:
        return None, "appends: fio has no shared-EOF append job"
    if "-N" in flags or o["k"] != "default":
        return None, "RWF_NOWAIT / ring kind: no fio equivalent"
    if "-P" in flags:
        return None, "a file per writer: not set up"
    rw = "randwrite"
    if "-S" in flags:
        rw = "write"
    if o["r"] != "0":
        rw = "randrw"
    engine = ["--bs=" + o["b"], "--size=" + o["s"]]
    if o["m"] == "psync":
        engine += ["--ioengine=psync", "--direct=0"]
    else:
        engine += ["--ioengine=io_uring", "--iodepth=" + o["q"],
                   "--direct=" + ("1" if o["m"] == "uring-direct" else "0")]
        if "-F" in flags:
            engine.append("--registerfiles=1")
        if "-B" in flags:
            engine.append("--fixedbufs=1")
    opts = engine + ["--numjobs=" + o["t"], "--rw=" + rw]
    if o["r"] != "0":
        opts.append("--rwmixread=" + o["r"])
    if o["readers"] != "0":
        # --readers: a second job of readers on the same file, each with
        # its own ring, in the same reporting group (jobs[0] sums both)
        opts += ["--name=readers", "--rw=randread",
                 "--numjobs=" + o["readers"]] + engine
    return opts, None


def fio_summary(j, by_op):
    job = j["jobs"][0]
    out = {"fio_version": j.get("fio version")}
    for kind in ("write", "read"):
        d = job[kind]
        pct = d.get("clat_ns", {}).get("percentile", {})
        out[kind] = {
            "ios": d.get("total_ios", 0), "iops": d["iops"],
            "bw_kib": d["bw"],
            "slat_ns": {"mean": d["slat_ns"]["mean"],
                        "max": d["slat_ns"]["max"]},
            "clat_ns": {"mean": d["clat_ns"]["mean"],
                        "p50": pct.get("50.000000"),
                        "p99": pct.get("99.000000"),
                        "p99.9": pct.get("99.900000")}}
    out["total"] = {"iops": out["write"]["iops"] + out["read"]["iops"]}
    # fio's own CPU per I/O, user and system apart: usr_cpu and sys_cpu
    # are percentages of job_runtime (the jobs' summed run time in ms),
    # from getrusage(RUSAGE_THREAD) of each job thread (seen with strace,
    # fio 3.33), so io-wq workers, and the punted writes they run, are
    # not in it; our tool's cpu is the whole process, io-wq included
    ios = out["write"]["ios"] + out["read"]["ios"]
    rt = job.get("job_runtime")
    if ios and rt:
        out["cpu"] = {"usr_us_per_io": job["usr_cpu"] / 100.0 * rt * 1000 / ios,
                      "sys_us_per_io": job["sys_cpu"] / 100.0 * rt * 1000 / ios}
    if by_op is not None:
        pw = sum(by_op.get(op, 0) for op in WRITE_OPS)
        pr = sum(by_op.get(op, 0) for op in READ_OPS)
        out["punts_by_opcode"] = {str(k): v for k, v in by_op.items()}
        out["punts_write"], out["punts_read"] = pw, pr
        w, r = out["write"]["ios"], out["read"]["ios"]
        out["punts_per_1000_writes"] = 1000.0 * pw / w if w else None
        out["punts_per_1000_reads"] = 1000.0 * pr / r if r else None
    return out


def size_bytes(s):
    """A size as uring-overwrite's -s takes it: digits and an optional
    K, M or G (powers of 1024)."""
    m = re.fullmatch(r"(\d+)([KMG]?)", s.strip().upper())
    if not m:
        raise ValueError("bad size '{}'".format(s))
    return int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2)]


def prefill(path, size, prime=False):
    """Write [0, size) in 1 MiB chunks, fsync, and read it back, as
    uring-overwrite prefills its file; with prime, rewrite its first 4 KiB
    with their own contents by one RWF_NOWAIT write, as the tool's
    --prime does (a refusal is the fallback of a real user, not an
    error)."""
    chunk = bytes(range(256)) * 4096
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        off = 0
        while off < size:
            n = os.pwrite(fd, chunk[:min(len(chunk), size - off)], off)
            off += n
        os.fsync(fd)
        off = 0
        while off < size:
            n = len(os.pread(fd, min(len(chunk), size - off), off))
            if not n:
                raise OSError("short read back of " + path)
            off += n
        if prime:
            try:
                os.pwritev(fd, [chunk[:4096]], 0, os.RWF_NOWAIT)
            except OSError as e:
                if e.errno not in (errno.EAGAIN, errno.EOPNOTSUPP):
                    raise
    finally:
        os.close(fd)


def run_fio(cell, variant, dirpath, opts, secs, size, prime=False):
    fname = os.path.join(dirpath, "fio-file")
    inval = "0" if variant == "cached" else "1"
    # the options before --name are global: a second job (--readers)
    # shares them
    cmd = ["fio", "--output-format=json",
           "--directory=" + dirpath, "--filename=fio-file",
           "--runtime={}".format(secs), "--time_based", "--group_reporting",
           "--randrepeat=0", "--overwrite=1", "--invalidate=" + inval,
           "--name=" + cell] + opts
    t0 = time.monotonic()
    try:
        prefill(fname, size, prime)
    except OSError as e:
        return {"error": "fio prefill: {}".format(e)}
    t1 = time.monotonic()
    traced = punts_start()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        by_op = punts_read() if traced else None
    finally:
        if traced:
            punts_stop()
        try:
            os.unlink(fname)
        except OSError:
            pass
    if p.returncode:
        return {"error": "fio exit {}: {}".format(
            p.returncode, p.stderr.strip()[-300:])}
    try:
        j = json.loads(p.stdout[p.stdout.index("{"):])
    except ValueError:
        return {"error": "fio output unparsable"}
    out = fio_summary(j, by_op)
    out["file"] = "prefilled"
    # Where a boot's time goes (docs/usage.md, Timings).
    out["wall_s"] = {"prefill": round(t1 - t0, 3),
                     "fio": round(time.monotonic() - t1, 3)}
    return out


def remove_bench_files(dirpath):
    """Unlink the benchmark's files (bench-file, bench-file.N with -P), so
    that every cell starts from new inodes, as fio's twins do: an inode
    kept from an earlier cell keeps its in-memory state (on patched, that
    io_uring used it, which sends blocking writers to the overwrite path:
    kernel/patches 0034)."""
    for name in os.listdir(dirpath):
        if name == "bench-file" or re.fullmatch(r"bench-file\.\d+", name):
            os.unlink(os.path.join(dirpath, name))


def run_bench(binpath, fs, dirpath, args, secs, seed):
    remove_bench_files(dirpath)
    env = dict(os.environ, TEST_FS=fs, TEST_DIR=dirpath)
    cmd = [binpath, "-T", str(secs), "--seed", str(seed)] + shlex.split(args)
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env,
                       timeout=600)
    try:
        r = json.loads(p.stdout)
    except ValueError:
        return {"error": "benchmark exit {}: {}".format(
            p.returncode, p.stderr.strip()[-300:])}
    if p.returncode:
        r["error"] = "benchmark exit {}".format(p.returncode)
    r["wall_s"] = round(time.monotonic() - t0, 3)
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bench", required=True)
    ap.add_argument("--matrix", required=True)
    ap.add_argument("--seconds", type=int, required=True)
    ap.add_argument("--round", type=int, required=True)
    ap.add_argument("--label", required=True)
    ap.add_argument("--out", default=os.path.join(
        os.environ.get("OUTDIR", "."), "results.jsonl"),
        help="JSON Lines file to append to (default: $OUTDIR/results.jsonl, "
        "the run's output directory on the host)")
    ap.add_argument("--no-fio", action="store_true")
    a = ap.parse_args()
    if not os.access(a.bench, os.X_OK):
        raise SystemExit("guest-matrix: no benchmark at " + a.bench)
    try:
        cells = results.matrix(a.matrix)
    except (OSError, ValueError) as e:
        raise SystemExit("guest-matrix: {}".format(e))
    rnd = random.Random(a.round)
    rnd.shuffle(cells)
    mnts = [m.split(":", 1) for m in os.environ.get("TEST_MNTS", "").split()]
    if not mnts:
        raise SystemExit("guest-matrix: no scratch file system (TEST_MNTS)")
    # The fs configs too: none always runs first after boot.
    rnd.shuffle(mnts)
    have_fio = not a.no_fio and subprocess.run(
        ["sh", "-c", "command -v fio"], capture_output=True).returncode == 0
    if not a.no_fio and not have_fio:
        raise SystemExit("guest-matrix: fio is not installed (vm/deps)")
    failed = 0
    vcpus = os.cpu_count()
    try:
        with open("/sys/devices/system/clocksource/clocksource0/"
                  "current_clocksource") as f:
            clock = f.read().strip()
    except OSError:
        clock = None
    with open(a.out, "a") as out:
        def emit(cell, fs, tool, variant, result):
            nonlocal failed
            if "error" in result:
                failed = 1
                log("{} {} {} {}: {}".format(cell, fs, tool, variant or "",
                                             result["error"]))
            out.write(json.dumps({"round": a.round, "label": a.label,
                                  "cell": cell, "fs": fs, "tool": tool,
                                  "variant": variant, "vcpus": vcpus,
                                  "clocksource": clock,
                                  "result": result})
                      + "\n")
            out.flush()
        for fs, dirpath in mnts:
            for cell, args in cells:
                log("round {} {} {} {}".format(a.round, a.label, fs, cell))
                seed = rnd.randrange(1 << 31)
                emit(cell, fs, "bench", None,
                     run_bench(a.bench, fs, dirpath, args, a.seconds, seed))
                if not have_fio:
                    continue
                opts, why = fio_twin(args)
                if opts is None:
                    continue
                o, flags = bench_opts(args)
                size = size_bytes(o["s"])
                prime = "--prime" in flags
                for variant in ("cached", "dropped"):
                    emit(cell, fs, "fio", variant,
                         run_fio(cell, variant, dirpath, opts, a.seconds,
                                 size, prime))
    return failed


if __name__ == "__main__":
    sys.exit(main())
