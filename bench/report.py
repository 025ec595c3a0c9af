#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Turn the benchmark output of vm/report into docs/results.md.

usage: report.py MATRIX BASELINE-OUTPUT PATCHED-OUTPUT ACCEL COMMIT [PLOTDIR]
       > results.md

With PLOTDIR (a directory next to results.md), also write PNG plots there
with gnuplot and link them: latency percentiles of w4k-t1-qd1 (else the first
cell), and
IOPS against writers for the 4 KiB QD 32 cells.

The output files hold "RESULT <cell> <fs> <json>" lines from
bench/uring-overwrite and "FIO <cell> <fs> <json>" lines (guest-matrix.sh).
Absolute numbers under TCG are not real; the tables lead with the ratio
patched/baseline measured in the same run, and with punts per 1000 writes,
which do not depend on speed.
"""
import json
import os
import platform
import re
import subprocess
import sys
import time

PCTS = ("p50", "p90", "p99", "p99.9", "p99.99", "max")


def load(path):
    res, fio = {}, {}
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\r\n")
            for tag, dst in (("RESULT ", res), ("FIO ", fio)):
                if line.startswith(tag):
                    _, cell, fs, js = line.split(" ", 3)
                    try:
                        dst[(cell, fs)] = json.loads(js)
                    except ValueError:
                        dst[(cell, fs)] = {"error": "unparsable"}
    return res, fio


def matrix(path):
    cells = []
    with open(path) as f:
        for line in f:
            p = line.split(None, 2)
            if not p or p[0].startswith("#"):
                continue
            cells.append((p[0], p[1], p[2].strip() if len(p) > 2 else ""))
    return cells


def num(v, fmt="{:.0f}"):
    return "-" if v is None else fmt.format(v)


def lat(v):
    if v is None:
        return "-"
    if v >= 1e6:
        return "{:.2f} ms".format(v / 1e6)
    return "{:.1f} us".format(v / 1e3)


def side(r, what):
    if not r or "error" in r:
        return None
    if what == "iops":
        return r["total"]["iops"]
    if what == "punts":
        return r.get("punts_per_1000_writes")
    if what == "workers":
        return r.get("io_wq_workers", {}).get("created")
    w = r["write"]
    if what == "submean":
        return w["submit_lat_ns"]["mean"]
    if what == "sub50":
        return w["submit_lat_ns"]["p50"]
    if what == "sub99":
        return w["submit_lat_ns"]["p99"]
    if what == "cmp99":
        return w["complete_lat_ns"]["p99"]
    if what == "cpu":
        return r.get("cpu", {}).get("us_per_write")
    return None


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
    """Run a gnuplot script in plotdir; False (and why, on stderr) if not."""
    try:
        subprocess.run(["gnuplot"], input=script, text=True, cwd=plotdir,
                       check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError) as e:
        sys.stderr.write("report.py: gnuplot failed: {}\n{}".format(
            e, getattr(e, "stderr", "") or ""))
        return False
    return True


def multiplot(name, fss, title, settings):
    """Start a gnuplot script: a PNG with one panel per fs config."""
    cols = 2 if len(fss) > 1 else 1
    rows = (len(fss) + cols - 1) // cols
    return ['set terminal pngcairo size {},{} font "sans,9"'.format(
        560 * cols, 380 * rows), 'set output "{}"'.format(name),
        'set multiplot layout {},{} title "{}"'.format(rows, cols, title),
        "set grid ytics", "set key top left",
        "set style data linespoints"] + settings


def finish(name, script, have, plotdir):
    """End the script and run it; the PNG's name, or None."""
    script.append("unset multiplot")
    return name if have and gnuplot("\n".join(script) + "\n", plotdir) \
        else None


def plot_latency(cell, fss, base, pat, plotdir):
    """Submission and completion latency percentiles, one panel per fs."""
    name = "latency-{}.png".format(cell)
    script = multiplot(name, fss, "{}: latency percentiles (log scale, "
                       "us)".format(cell), ["set logscale y"])
    have = False
    for fs in fss:
        b, p = base.get((cell, fs)), pat.get((cell, fs))
        if not b or "error" in b or not p or "error" in p:
            continue
        dat = "latency-{}-{}.dat".format(cell, fs)
        with open(os.path.join(plotdir, dat), "w") as f:
            f.write("# pct base-submit patched-submit base-complete "
                    "patched-complete (us)\n")
            for i, pc in enumerate(PCTS):
                f.write("{} {} {} {} {} {}\n".format(
                    i, pc, *(r["write"][k][pc] / 1e3 for k in
                             ("submit_lat_ns", "complete_lat_ns")
                             for r in (b, p))))
        script += ['set title "{}"'.format(fs),
                   "set xtics ({})".format(", ".join(
                       '"{}" {}'.format(pc, i) for i, pc in enumerate(PCTS))),
                   'plot "{0}" u 1:3 t "baseline submit", '
                   '"{0}" u 1:4 t "patched submit", '
                   '"{0}" u 1:5 t "baseline complete", '
                   '"{0}" u 1:6 t "patched complete"'.format(dat)]
        have = True
    return finish(name, script, have, plotdir)


def plot_writers(cells, fss, base, pat, plotdir):
    """IOPS against writers for the w4k-t<N>-qd32 cells, one panel per fs."""
    series = sorted((int(m.group(1)), c) for k, c, _ in cells
                    if k == "bench"
                    for m in [re.match(r"w4k-t(\d+)-qd32$", c)] if m)
    if len(series) < 2:
        return None
    name = "iops-vs-writers.png"
    script = multiplot(name, fss, "random 4 KiB overwrites, QD 32 per "
                       "writer: IOPS against writers",
                       ["set yrange [0:*]", "set xtics ({})".format(
                           ", ".join(str(n) for n, _ in series))])
    have = False
    for fs in fss:
        rowsd = []
        for n, c in series:
            bi = side(base.get((c, fs)), "iops")
            pi = side(pat.get((c, fs)), "iops")
            if bi is not None and pi is not None:
                rowsd.append("{} {} {}".format(n, bi, pi))
        if len(rowsd) < 2:
            continue
        dat = "writers-{}.dat".format(fs)
        with open(os.path.join(plotdir, dat), "w") as f:
            f.write("# writers baseline-iops patched-iops\n")
            f.write("\n".join(rowsd) + "\n")
        script += ['set title "{}"'.format(fs),
                   'plot "{0}" u 1:2 t "baseline", '
                   '"{0}" u 1:3 t "patched"'.format(dat)]
        have = True
    return finish(name, script, have, plotdir)


def main():
    if len(sys.argv) not in (6, 7):
        sys.exit(__doc__)
    mat, bpath, ppath, accel, commit = sys.argv[1:6]
    plotdir = sys.argv[6] if len(sys.argv) > 6 else None
    cells = matrix(mat)
    base, bfio = load(bpath)
    pat, pfio = load(ppath)
    fss = []
    for (_, fs) in list(base) + list(pat):
        if fs not in fss:
            fss.append(fs)
    kern = {}
    for name, d in (("baseline", base), ("patched", pat)):
        for r in d.values():
            if "kernel" in r:
                kern[name] = r["kernel"]
                break
    out = []
    w = out.append
    w("# Results: io_uring buffered overwrites, baseline vs patched")
    w("")
    w("Generated by `vm/report` ({}); do not edit by hand.".format(
        time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())))
    w("")
    w("- Machine: {}".format(machine()))
    w("- Accelerator: QEMU {}, guest 2 vCPUs, 4 GiB, scratch file systems "
      "on brd ram disks".format(accel.upper()))
    w("- Kernels: baseline `{}` (Debian linux-source-6.12), patched `{}` "
      "(+ kernel/patches)".format(kern.get("baseline", "?"),
                                  kern.get("patched", "?")))
    w("- Commit: `{}`".format(commit))
    w("")
    w("Under TCG absolute times are not real: compare the ratio "
      "patched/baseline, measured in the same run, and the punts per 1000 "
      "writes (counted by a hist trigger on "
      "`io_uring:io_uring_queue_async_work`), which do not depend on speed. "
      "Each cell ran for the same number of seconds on both kernels; "
      "latencies are log-bucketed (a percentile may read up to 25% high), "
      "submission latency is the time inside `io_uring_submit()` divided "
      "by the SQEs it submitted.")
    w("")
    if plotdir:
        os.makedirs(plotdir, exist_ok=True)
        rel = os.path.basename(os.path.normpath(plotdir))
        names = [c for k, c, _ in cells if k == "bench"]
        first = "w4k-t1-qd1" if "w4k-t1-qd1" in names else \
            (names[0] if names else None)
        plots = [plot_latency(first, fss, base, pat, plotdir) if first
                 else None, plot_writers(cells, fss, base, pat, plotdir)]
        plots = [x for x in plots if x]
        if plots:
            w("## Plots")
            w("")
            for x in plots:
                w("![{0}]({1}/{0})".format(x, rel))
                w("")
    for kind, cell, args in cells:
        if kind != "bench":
            continue
        w("## {}".format(cell))
        w("")
        w("`uring-overwrite {}`".format(args))
        w("")
        w("| fs | IOPS base | IOPS patched | ratio | punts/1000 base | "
          "punts/1000 patched | io-wq workers base/patched | "
          "submit p50 base/patched | submit p99 base/patched | "
          "complete p99 base/patched | CPU us/write base/patched |")
        w("|---|---|---|---|---|---|---|---|---|---|---|")
        for fs in fss:
            b, p = base.get((cell, fs)), pat.get((cell, fs))
            if b is None and p is None:
                continue
            bi, pi = side(b, "iops"), side(p, "iops")
            ratio = "{:.2f}x".format(pi / bi) if bi and pi else "-"
            w("| {} | {} | {} | **{}** | {} | {} | {} / {} | {} / {} | "
              "{} / {} | {} / {} | {} / {} |".format(
                  fs, num(bi), num(pi), ratio,
                  num(side(b, "punts"), "{:.1f}"),
                  num(side(p, "punts"), "{:.1f}"),
                  num(side(b, "workers")), num(side(p, "workers")),
                  lat(side(b, "sub50")), lat(side(p, "sub50")),
                  lat(side(b, "sub99")), lat(side(p, "sub99")),
                  lat(side(b, "cmp99")), lat(side(p, "cmp99")),
                  num(side(b, "cpu"), "{:.1f}"),
                  num(side(p, "cpu"), "{:.1f}")))
        if any((cell, fs) in bfio or (cell, fs) in pfio for fs in fss):
            w("")
            w("fio, same cell (`ioengine`, size 32 MiB, time based):")
            w("")
            w("| fs | fio IOPS base | fio IOPS patched | ratio | "
              "fio slat mean base/patched | our submit mean base/patched | "
              "fio clat p99 base/patched |")
            w("|---|---|---|---|---|---|---|")
            for fs in fss:
                b, p = bfio.get((cell, fs)), pfio.get((cell, fs))
                if not b and not p:
                    continue
                bi = b.get("iops") if b else None
                pi = p.get("iops") if p else None
                ratio = "{:.2f}x".format(pi / bi) if bi and pi else "-"
                w("| {} | {} | {} | **{}** | {} / {} | {} / {} | {} / {} |"
                  .format(
                    fs, num(bi), num(pi), ratio,
                    lat(b and b.get("slat_ns", {}).get("mean")),
                    lat(p and p.get("slat_ns", {}).get("mean")),
                    lat(side(base.get((cell, fs)), "submean")),
                    lat(side(pat.get((cell, fs)), "submean")),
                    lat(b and b.get("clat_ns", {}).get("p99")),
                    lat(p and p.get("clat_ns", {}).get("p99"))))
        w("")
    notes = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                         "results-notes.md")
    if os.path.exists(notes):
        w("## Reading the numbers (hand-written, bench/results-notes.md)")
        w("")
        with open(notes) as f:
            w(f.read().rstrip())
        w("")
    print("\n".join(out))


if __name__ == "__main__":
    main()
