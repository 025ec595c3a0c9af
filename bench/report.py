#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Turn the JSON Lines of vm/report's rounds into docs/results.md.

Each record is one run of a cell on one kernel in one round (see
bench/guest-matrix.py). The kernels are labelled baseline, patched and
baseline-aa (the baseline kernel again: the A/A control). Per cell and fs
the report gives each kernel's median over the rounds with its min-max,
the ratio of the medians, the A/A band (how far the same ratio moves
between two runs of the baseline, under a bootstrap of their rounds), and
the verdict of bench/results.py: faster or slower only when the ranges do not
overlap and the ratio is outside the A/A band, else "no change".
"""
import argparse
import os
import platform
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import results as R  # noqa: E402

PCTS = ("p50", "p90", "p99", "p99.9", "p99.99", "max")
KERNELS = ("baseline", "patched", "baseline-aa")

# name -> (tool, path in the result, higher is better)
BENCH_Q = {
    "iops": (("total", "iops"), True),
    "w_iops": (("write", "iops"), True),
    "r_iops": (("read", "iops"), True),
    "punts_w": (("punts_per_1000_writes",), False),
    "punts_r": (("punts_per_1000_reads",), False),
    "workers": (("io_wq_workers", "created"), False),
    "sub50": (("write", "submit_lat_ns", "p50"), False),
    "sub99": (("write", "submit_lat_ns", "p99"), False),
    "cmp99": (("write", "complete_lat_ns", "p99"), False),
    "rcmp50": (("read", "complete_lat_ns", "p50"), False),
    "rcmp99": (("read", "complete_lat_ns", "p99"), False),
    "cpu": (("cpu", "us_per_write"), False),
    "rcpu": (("cpu", "reader_threads_us_per_read"), False),
    "rshare": (("cpu", "reader_threads_share"), True),
    "batch": (("submit_calls", "mean_batch"), True),
}
FIO_Q = {
    "iops": (("total", "iops"), True),
    "w_iops": (("write", "iops"), True),
    "r_iops": (("read", "iops"), True),
    "punts_w": (("punts_per_1000_writes",), False),
    "punts_r": (("punts_per_1000_reads",), False),
    "rclat50": (("read", "clat_ns", "p50"), False),
    "rclat99": (("read", "clat_ns", "p99"), False),
    "usr": (("cpu", "usr_us_per_io"), False),
    "sys": (("cpu", "sys_us_per_io"), False),
    "slat": (("write", "slat_ns", "mean"), False),
    "clat99": (("write", "clat_ns", "p99"), False),
}


def iops_of(args):
    """The IOPS a cell is judged by: the writers' with --readers (the
    readers have their own table), all ops otherwise."""
    return "w_iops" if "--readers" in args else "iops"


class Data:
    def __init__(self, recs):
        self.runs = {}      # (label, cell, fs, tool, variant) -> [result]
        self.errors = []
        self.fss, self.rounds, self.kernel = [], set(), {}
        # The first fs config of each boot: whether the fs order was
        # shuffled (guest-matrix.py since 2026-12-04) shows in the data.
        self.first_fs = {}
        # The guests' vCPUs and, per round, the kernels that ran it: what
        # the header says about the method comes from the data.
        self.vcpus, self.clocks = set(), set()
        for r in recs:
            if r.get("vcpus"):
                self.vcpus.add(r["vcpus"])
            if r.get("clocksource"):
                self.clocks.add(r["clocksource"])
            self.first_fs.setdefault((r.get("round"), r.get("label")),
                                     r.get("fs"))
            key = (r.get("label"), r.get("cell"), r.get("fs"),
                   r.get("tool"), r.get("variant"))
            res = r.get("result") or {}
            self.rounds.add(r.get("round"))
            if r.get("fs") not in self.fss:
                self.fss.append(r.get("fs"))
            if "error" in res:
                self.errors.append((r.get("round"),) + key +
                                   (res["error"],))
                continue
            self.runs.setdefault(key, []).append(res)
            if r.get("tool") == "bench" and "kernel" in res:
                self.kernel[r.get("label")] = res["kernel"]

    def series(self, label, cell, fs, tool, variant, q):
        path = (BENCH_Q if tool == "bench" else FIO_Q)[q][0]
        return R.Series(R.dig(res, *path) for res in
                        self.runs.get((label, cell, fs, tool, variant), []))

    def pair(self, cell, fs, tool, variant, q, fmt=None):
        """"baseline / patched" medians of quantity q, formatted."""
        fmt = fmt or num
        b = self.series("baseline", cell, fs, tool, variant, q)
        p = self.series("patched", cell, fs, tool, variant, q)
        return "{} / {}".format(fmt(b.median), fmt(p.median))

    def compare(self, cell, fs, tool, variant, q):
        """(baseline series, patched series, ratio, A/A band, verdict)."""
        hib = (BENCH_Q if tool == "bench" else FIO_Q)[q][1]
        b = self.series("baseline", cell, fs, tool, variant, q)
        p = self.series("patched", cell, fs, tool, variant, q)
        a = self.series("baseline-aa", cell, fs, tool, variant, q)
        r = R.ratio(p.median, b.median)
        aa = R.aa_band(b, a)
        return b, p, r, aa, R.verdict(b, p, aa, hib)


def fio_method(d):
    """How this run's fio twins got their file: guest-matrix.py marks
    results on a prefilled file; runs before that let fio make its own."""
    fio = [res for key, runs in d.runs.items() if key[3] == "fio"
           for res in runs]
    if not fio:
        return "fio did not run."
    if all(res.get("file") == "prefilled" for res in fio):
        return ("fio runs every cell that has a twin on a file prefilled as "
                "ours is (written, fsynced, read back; `overwrite=1` keeps "
                "it), once cached (`invalidate=0`) and once dropped from the "
                "cache when fio opens it (`invalidate=1`, fio's default). "
                "fio keeps its default submission (`iodepth_batch_submit=1`: "
                "one `io_uring_enter()` per I/O), where our tool submits what "
                "its queue has room for in one call (the SQEs-per-submit "
                "column); bench/fio-batch measures fio batched like ours.")
    return ("fio ran every cell that has a twin on a file of its own making "
            "(this run predates the prefilled twins), once with "
            "`invalidate=0` (\"cached\") and once with `invalidate=1` "
            "(\"dropped\"). A write-only fio job recreates its file and its "
            "layout leaves nothing in the page cache, so both started on an "
            "uncached file: fio's columns here do not measure cached "
            "overwrites (see the notes).")


def num(v, fmt="{:.0f}"):
    return "-" if v is None else fmt.format(v)


def lat(v):
    if v is None:
        return "-"
    if v >= 1e6:
        return "{:.2f} ms".format(v / 1e6)
    return "{:.1f} us".format(v / 1e3)


# Effects smaller than this (a factor within 1% of 1) get three decimals
# and a "(<1%)" tag on their verdicts.
SMALL = 0.01


def rx(v):
    """A ratio; three decimals within SMALL of 1, where two would print a
    "faster" or "slower" cell as 1.00x."""
    if v is None:
        return "-"
    return "{:.3f}x".format(v) if abs(v - 1) < SMALL else "{:.2f}x".format(v)


def vshow(v, r, bold=False):
    """A verdict as the summary prints it, tagged when the effect is under
    SMALL (the A/A band can be narrower than that under instruction
    counting, and such verdicts have flipped between runs)."""
    if v not in ("faster", "slower"):
        return v
    tag = " (<1%)" if r is not None and abs(r - 1) < SMALL else ""
    return ("**{}**{}" if bold else "{}{}").format(v, tag)


def spread(s, f=num):
    """median [min-max] of a series."""
    if not len(s):
        return "-"
    return "{} [{}-{}]".format(f(s.median), f(s.lo), f(s.hi))


def machine():
    model = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return "{} CPUs ({}), {:.0f} GiB, {}".format(os.cpu_count(), model, mem,
                                                 platform.platform())


def gnuplot(script, plotdir):
    try:
        subprocess.run(["gnuplot"], input=script, text=True, cwd=plotdir,
                       check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError) as e:
        sys.stderr.write("report.py: gnuplot failed: {}\n{}".format(
            e, getattr(e, "stderr", "") or ""))
        return False
    return True


def multiplot(name, fss, title, settings):
    cols = 2 if len(fss) > 1 else 1
    rows = (len(fss) + cols - 1) // cols
    return ['set terminal pngcairo size {},{} font "sans,9"'.format(
        560 * cols, 380 * rows), 'set output "{}"'.format(name),
        'set multiplot layout {},{} title "{}"'.format(rows, cols, title),
        "set grid ytics", "set key top left", "set bars small"] + settings


def finish(name, script, have, plotdir):
    script.append("unset multiplot")
    return name if have and gnuplot("\n".join(script) + "\n", plotdir) \
        else None


def plot_latency(d, cell, plotdir):
    """Submission and completion latency percentiles: medians over the
    rounds, min-max as error bars."""
    name = "latency-{}.png".format(cell)
    script = multiplot(name, d.fss, "{}: write latency percentiles (log "
                       "scale, us; median of the rounds, bars min-max)"
                       .format(cell), ["set logscale y"])
    have = False
    for fs in d.fss:
        rows = []
        for i, pc in enumerate(PCTS):
            row = [str(i)]
            for kind in ("submit_lat_ns", "complete_lat_ns"):
                for label in ("baseline", "patched"):
                    s = R.Series(R.dig(res, "write", kind, pc) for res in
                                 d.runs.get((label, cell, fs, "bench", None),
                                            []))
                    if not len(s):
                        break
                    row += ["{:.3f}".format(x / 1e3)
                            for x in (s.median, s.lo, s.hi)]
            if len(row) == 13:
                rows.append(" ".join(row))
        if len(rows) < len(PCTS):
            continue
        dat = "latency-{}-{}.dat".format(cell, fs)
        with open(os.path.join(plotdir, dat), "w") as f:
            f.write("# pct, then median min max of: base submit, patched "
                    "submit, base complete, patched complete (us)\n")
            f.write("\n".join(rows) + "\n")
        script += ['set title "{}"'.format(fs),
                   "set xtics ({})".format(", ".join(
                       '"{}" {}'.format(pc, i) for i, pc in enumerate(PCTS))),
                   'plot "{0}" u ($1-0.06):2:3:4 w yerrorlines t "baseline '
                   'submit", "{0}" u ($1-0.02):5:6:7 w yerrorlines t '
                   '"patched submit", "{0}" u ($1+0.02):8:9:10 w yerrorlines '
                   't "baseline complete", "{0}" u ($1+0.06):11:12:13 w '
                   'yerrorlines t "patched complete"'.format(dat)]
        have = True
    return finish(name, script, have, plotdir)


def plot_writers(d, cells, plotdir):
    """IOPS against writers for the w4k-t<N>-qd32 cells, bench and fio."""
    series = sorted((int(m.group(1)), c) for c, _ in cells
                    for m in [re.match(r"w4k-t(\d+)-qd32$", c)] if m)
    if len(series) < 2:
        return None
    name = "iops-vs-writers.png"
    script = multiplot(name, d.fss, "random 4 KiB overwrites, QD 32 per "
                       "writer: IOPS against writers (median of the rounds, "
                       "bars min-max)",
                       ["set yrange [0:*]", "set xtics ({})".format(
                           ", ".join(str(n) for n, _ in series))])
    have = False
    for fs in d.fss:
        rows = []
        for n, c in series:
            row = [str(n)]
            for tool, var in (("bench", None), ("fio", "cached")):
                for label in ("baseline", "patched"):
                    s = d.series(label, c, fs, tool, var, "iops")
                    row += (["{:.0f}".format(x) for x in
                             (s.median, s.lo, s.hi)] if len(s) else
                            ["NaN"] * 3)
            rows.append(" ".join(row))
        dat = "writers-{}.dat".format(fs)
        with open(os.path.join(plotdir, dat), "w") as f:
            f.write("# writers, then median min max IOPS of: bench base, "
                    "bench patched, fio-cached base, fio-cached patched\n")
            f.write("\n".join(rows) + "\n")
        script += ['set title "{}"'.format(fs),
                   'plot "{0}" u 1:2:3:4 w yerrorlines t "baseline", '
                   '"{0}" u 1:5:6:7 w yerrorlines t "patched", '
                   '"{0}" u 1:8:9:10 w yerrorlines dt 2 t "fio base", '
                   '"{0}" u 1:11:12:13 w yerrorlines dt 2 t "fio patched"'
                   .format(dat)]
        have = True
    return finish(name, script, have, plotdir)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--results", nargs="+", required=True,
                    help="JSON Lines files of the rounds")
    ap.add_argument("--matrix", required=True)
    ap.add_argument("--accel", default="tcg")
    ap.add_argument("--icount-shift", type=int, default=2,
                    help="with --accel tcg-icount: 2^N ns per instruction")
    ap.add_argument("--cpu", default="",
                    help="the guests' QEMU -cpu model, for the header")
    ap.add_argument("--commit", default="unknown")
    ap.add_argument("--seconds", type=int)
    ap.add_argument("--order", default="",
                    help="the kernels' order in each round, for the header")
    ap.add_argument("--side-by-side", action="store_true",
                    help="the kernels of a round ran at the same time")
    ap.add_argument("--plots", help="directory for PNG plots (gnuplot)")
    ap.add_argument("--notes", help="hand-written notes to append")
    ap.add_argument("--generated", help="when the run ended (default: now); "
                    "for rendering an earlier run's results again")
    ap.add_argument("--machine", help="the machine the run was on (default: "
                    "this one's CPUs, memory and platform)")
    a = ap.parse_args()

    try:
        cells = R.matrix(a.matrix)
    except (OSError, ValueError) as e:
        sys.exit("report.py: {}".format(e))
    recs, bad = R.load_jsonl(a.results)
    if not recs:
        sys.exit("report.py: no records in " + " ".join(a.results))
    d = Data(recs)
    labels = sorted({k[0] for k in d.runs})
    if "baseline-aa" not in labels:
        sys.stderr.write("report.py: no A/A control (baseline-aa) in the "
                         "results: every verdict is '-'\n")
    out = []
    w = out.append
    w("# Results: io_uring buffered overwrites, baseline vs patched")
    w("")
    w("Generated by `vm/report` ({}); do not edit by hand.".format(
        a.generated or time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())))
    w("")
    w("- Machine: {}".format(a.machine or machine()))
    vc = "/".join(str(v) for v in sorted(d.vcpus)) or \
        "2 (runs before 2026-12-05 did not record it)"
    accel = a.accel.upper()
    if a.accel == "tcg-icount":
        ns = 1 << a.icount_shift
        accel = ("TCG with instruction counting (`-icount shift={},sleep=off`"
                 ", single-threaded TCG): each guest's clock advances {} ns "
                 "per guest instruction whatever the host does, so every "
                 "time, rate and CPU figure below is a count of guest "
                 "instructions (1 us = {} instructions; IOPS: operations per "
                 "{} million instructions), close to the same on every "
                 "run of the same work (the A/A band says how close); it "
                 "prices every instruction alike and knows no caches, "
                 "memory bandwidth or lock transfer costs of real "
                 "hardware".format(a.icount_shift, ns, 1000 // ns,
                                   1000 // ns))
        if "-erms" in a.cpu:
            accel += ("; guest CPU `{}`: without ERMS the kernel copies "
                      "from user memory (`rep_movs_alternative()`) with "
                      "`rep movsq`, as the iov_iter code copies from "
                      "kernel memory (gcc inlines those copies as `rep "
                      "movsq`), which the model prices at one instruction "
                      "per 8 bytes, so a copy costs about the same "
                      "whichever path makes it; with ERMS the user copy "
                      "is `rep movsb`, one instruction per byte, and a "
                      "kernel that copies from pinned pages instead of "
                      "from user memory would look cheaper for that "
                      "alone".format(a.cpu))
        elif a.cpu:
            accel += "; guest CPU `{}`".format(a.cpu)
    elif a.accel == "tcg" and a.cpu:
        accel += " in real time, guest CPU `{}`{}".format(
            a.cpu, "" if "-erms" in a.cpu else
            " (with ERMS: TCG runs the kernel's copy from user memory, a "
            "`rep movsb`, a byte at a time, and its copies from kernel "
            "memory, `rep movsq`, 8 bytes at a time, so a kernel that "
            "copies from pinned pages looks faster for that alone)")
    w("- Accelerator: QEMU {}, each guest {} vCPU(s), 4 GiB, scratch file "
      "systems on brd ram disks{}".format(
          accel, vc,
          "; guest clocksource " + "/".join(sorted(d.clocks))
          if d.clocks else ""))
    w("- Kernels: baseline `{}` (Debian linux-source-6.12), patched `{}` "
      "(+ kernel/patches); the A/A control boots the baseline kernel "
      "again".format(d.kernel.get("baseline", "?"),
                     d.kernel.get("patched", "?")))
    w("- Commit: `{}`".format(a.commit))
    if a.side_by_side:
        how = ("the three kernels of a round (baseline, patched, baseline "
               "again) boot at the same time, one guest each, on the "
               "host's CPUs above (with fewer host CPUs than vCPUs in all, "
               "the guests take turns{}); they run the same cells "
               "in the same order at about the same time, so that the "
               "host's noise, the other guests included, falls on all "
               "three alike; they start within milliseconds of each "
               "other, in a launch order that changes from round to "
               "round").format(
                   ", which under instruction counting no figure sees: a "
                   "guest's clock advances only with its own instructions"
                   if a.accel == "tcg-icount" else
                   ", and each guest's timings include the time it waits "
                   "for a host CPU")
    else:
        how = ("the kernels boot one after another, in an order that "
               "changes from round to round")
    w("- Method: {} rounds; in each round every kernel boots once and "
      "runs every cell on every fs config, {} s a cell, {} (the same on "
      "every kernel); {} ({}).".format(
          len(d.rounds), a.seconds or "?",
          "the fs configs and the cells in orders shuffled per round"
          if len(set(d.first_fs.values())) > 1 else
          "cells in an order shuffled per round, the fs configs always in "
          "the same order", how, a.order or "see vm/report"))
    if bad or d.errors:
        w("- Failed runs: {} (listed at the end); unparsable lines: {}"
          .format(len(d.errors), bad))
    w("")
    w("How to read: every figure is the median over the rounds, with the "
      "min-max in brackets. Under TCG absolute times are not real; compare "
      "the ratio patched/baseline of the medians, against the A/A band "
      "of the same cell: the ratio of medians of two runs of the baseline "
      "kernel (the same method), as a factor either way, widened to the "
      "95th percentile of that factor over 2000 bootstrap resamples of "
      "the two runs' rounds. A cell is "
      "**faster** or **slower** only when the two kernels' min-max ranges "
      "do not overlap and the ratio lies outside the A/A band; otherwise "
      "it is \"no change\", "
      "whatever the ratio's sign; \"(<1%)\" marks a verdict on an effect "
      "under 1%, which the A/A band can call under instruction counting "
      "and which has flipped between runs (ratios within 1% of 1 get three "
      "decimals). Punts per 1000 writes (and per 1000 "
      "reads) are counted by opcode by a hist trigger on "
      "`io_uring:io_uring_queue_async_work`; they do not depend on the "
      "host's speed, but a punt per timestamp tick (6.12's XFS punts about "
      "one a tick, 250 a second at HZ=250, where it punts at all) makes the "
      "rate per 1000 writes fall as the kernel writes faster. "
      "Submission latency is one sample per `io_uring_submit()` call; "
      "percentiles come from histograms with 64 buckets per power of two "
      "(at most 1.6% high). " + fio_method(d))
    w("")

    # A/A summary.
    bands = []
    for c, args in cells:
        for fs in d.fss:
            _, _, _, aa, _ = d.compare(c, fs, "bench", None, iops_of(args))
            if aa:
                bands.append((aa, c, fs))
    if bands:
        bands.sort()
        med = bands[len(bands) // 2][0]
        w("A/A control (IOPS, our tool): the band is {:.2f}x at the median "
          "cell and {:.2f}x at the widest ({} on {}).".format(
              med, bands[-1][0], bands[-1][1], bands[-1][2]))
        w("")

    if a.plots:
        os.makedirs(a.plots, exist_ok=True)
        rel = os.path.basename(os.path.normpath(a.plots))
        names = [c for c, _ in cells]
        first = "w4k-t1-qd1" if "w4k-t1-qd1" in names else \
            (names[0] if names else None)
        plots = [plot_latency(d, first, a.plots) if first else None,
                 plot_writers(d, cells, a.plots)]
        plots = [x for x in plots if x]
        if plots:
            w("## Plots")
            w("")
            for x in plots:
                w("![{0}]({1}/{0})".format(x, rel))
                w("")

    # Summary.
    w("## Summary")
    w("")
    w("IOPS ratio patched/baseline (medians) with the verdict, our tool "
      "and fio's twin (the writers' IOPS in a cell with --readers); punts "
      "per 1000 writes, baseline -> patched.")
    w("")
    w("| cell | fs | ours | A/A band | verdict | fio cached | verdict | "
      "fio dropped | verdict | punts/1000 writes | tools |")
    w("|---|---|---|---|---|---|---|---|---|---|---|")
    differ = []
    for c, args in cells:
        q = iops_of(args)
        for fs in d.fss:
            b, p, r, aa, v = d.compare(c, fs, "bench", None, q)
            if not len(b) and not len(p):
                continue
            _, _, fr, faa, fv = d.compare(c, fs, "fio", "cached", q)
            _, _, dr, daa, dv = d.compare(c, fs, "fio", "dropped", q)
            pb, pp, _, _, _ = d.compare(c, fs, "bench", None, "punts_w")
            tools = "-" if fv == "-" else ("same" if fv == v else "differ")
            if tools == "differ":
                differ.append((c, fs, v, r, fv, fr))
            w("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} -> {} | {} |"
              .format(c, fs, rx(r), rx(aa), vshow(v, r, bold=True),
                      rx(fr), vshow(fv, fr), rx(dr), vshow(dv, dr),
                      num(pb.median, "{:.1f}"),
                      num(pp.median, "{:.1f}"), tools))
    w("")
    if differ:
        w("Cells where our tool and fio (cached file) reach different "
          "verdicts: " + "; ".join(
              "{} on {} (ours {} {}, fio {} {})".format(
                  c, fs, v, rx(r), fv, rx(fr))
              for c, fs, v, r, fv, fr in differ) + ". Each is a finding "
          "to explain ({}).".format(
              "bench/" + os.path.basename(a.notes) if a.notes
              else "the notes"))
        w("")

    # References.
    refs = [c for c in ("memcpy-t1", "direct-t1-qd8", "psync-t1")
            if c in [x for x, _ in cells]]
    if "w4k-t1-qd1" in [x for x, _ in cells] and refs:
        w("## References")
        w("")
        w("`w4k-t1-qd1` (buffered io_uring overwrites, 1 writer, QD 1) as "
          "a fraction of the same run's references: `memcpy-t1` (a memcpy "
          "of 4 KiB per op into an in-memory copy of the file, the floor "
          "of the copy a cached overwrite makes), `direct-t1-qd8` "
          "(io_uring O_DIRECT) and `psync-t1` (pwrite). Medians.")
        w("")
        w("| fs | kernel | " + " | ".join("/ " + x for x in refs) + " |")
        w("|---|---|" + "---|" * len(refs))
        for fs in d.fss:
            for label in ("baseline", "patched"):
                v = d.series(label, "w4k-t1-qd1", fs, "bench", None,
                             "iops").median
                row = [num(R.ratio(v, d.series(label, x, fs, "bench", None,
                                                "iops").median), "{:.3f}")
                       for x in refs]
                w("| {} | {} | {} |".format(fs, label, " | ".join(row)))
        w("")

    # Per cell.
    for c, args in cells:
        if not any(("baseline", c, fs, "bench", None) in d.runs
                   for fs in d.fss):
            continue
        w("## {}".format(c))
        w("")
        w("`uring-overwrite {}`".format(args))
        w("")
        iops_q = iops_of(args)
        wk = "write " if iops_q == "w_iops" else ""
        w("| fs | {}IOPS base | {}IOPS patched | ratio | A/A band | verdict | "
          "punts/1000 writes base / patched | io-wq workers | "
          "submit p50 | submit p99 | complete p99 | CPU us/write (all threads, reads too) | "
          "SQEs per submit |".format(wk, wk))
        w("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        mixed = False
        for fs in d.fss:
            b, p, r, aa, v = d.compare(c, fs, "bench", None, iops_q)
            if not len(b) and not len(p):
                continue

            def bp(q, f=None):
                return d.pair(c, fs, "bench", None, q, f)
            if d.series("baseline", c, fs, "bench", None, "r_iops").median:
                mixed = True
            w("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} "
              "| {} |".format(
                  fs, spread(b), spread(p), rx(r), rx(aa), v,
                  bp("punts_w", lambda x: num(x, "{:.1f}")), bp("workers"),
                  bp("sub50", lat), bp("sub99", lat), bp("cmp99", lat),
                  bp("cpu", lambda x: num(x, "{:.1f}")),
                  bp("batch", lambda x: num(x, "{:.1f}"))))
        if mixed:
            w("")
            w("The readers of this cell (read p99 has its own A/A band and verdict; \"slower\" there means a higher p99):")
            w("")
            w("| fs | read IOPS base | read IOPS patched | ratio | A/A band | "
              "verdict | punts/1000 reads base / patched | read p50 | "
              "read p99 base | read p99 patched | ratio | A/A band | "
              "verdict | reading threads' CPU us/read | their CPU share |")
            w("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
            # ours, then fio's readers of the cached twin, same columns
            for fs in d.fss:
                for label, tool, var, p50, p99 in (
                        (fs, "bench", None, "rcmp50", "rcmp99"),
                        (fs + ", fio cached", "fio", "cached", "rclat50",
                         "rclat99")):
                    b, p, r, aa, v = d.compare(c, fs, tool, var, "r_iops")
                    if not len(b) and not len(p):
                        continue
                    lb, lp, lr, laa, lv = d.compare(c, fs, tool, var, p99)

                    def tp(q, f=None):
                        return d.pair(c, fs, tool, var, q, f)
                    w("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} "
                      "| {} | {} | {} | {} | {} |".format(
                          label, spread(b), spread(p), rx(r), rx(aa), v,
                          tp("punts_r", lambda x: num(x, "{:.1f}")),
                          tp(p50, lat), spread(lb, lat), spread(lp, lat),
                          rx(lr), rx(laa), lv,
                          tp("rcpu", lambda x: num(x, "{:.2f}"))
                          if tool == "bench" else "-",
                          tp("rshare", lambda x: num(x, "{:.2f}"))
                          if tool == "bench" else "-"))
        if any(("baseline", c, fs, "fio", "cached") in d.runs
               for fs in d.fss):
            w("")
            w("fio twins (same block size, jobs, depth, file size and mix; "
              "fio's CPU is its own account, getrusage(RUSAGE_THREAD) of its "
              "job threads, which leaves out io-wq workers and so most of "
              "a punted write's cost):")
            w("")
            w("| fs | file | fio {}IOPS base | fio {}IOPS patched | ratio | A/A band "
              "| verdict | punts/1000 writes base / patched | slat mean "
              "base / patched | clat p99 base / patched | fio's CPU us/IO "
              "user, base / patched | system, base / patched |".format(wk, wk))
            w("|---|---|---|---|---|---|---|---|---|---|---|---|")
            for fs in d.fss:
                for var in ("cached", "dropped"):
                    b, p, r, aa, v = d.compare(c, fs, "fio", var, iops_q)
                    if not len(b) and not len(p):
                        continue

                    def fp(q, f=None):
                        return d.pair(c, fs, "fio", var, q, f)
                    w("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} "
                      "| {} |"
                      .format(fs, var, spread(b), spread(p), rx(r), rx(aa),
                              v, fp("punts_w", lambda x: num(x, "{:.1f}")),
                              fp("slat", lat), fp("clat99", lat),
                              fp("usr", lambda x: num(x, "{:.1f}")),
                              fp("sys", lambda x: num(x, "{:.1f}"))))
        w("")

    if d.errors:
        w("## Failed runs")
        w("")
        for e in d.errors:
            w("- round {}, {} {} {} {} {}: {}".format(*e))
        w("")
    if a.notes and os.path.exists(a.notes):
        w("## Reading the numbers (hand-written, bench/{})".format(
            os.path.basename(a.notes)))
        w("")
        with open(a.notes) as f:
            w(f.read().rstrip())
        w("")
    print("\n".join(out))


if __name__ == "__main__":
    main()
