#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Guest instructions per write, by kernel function, baseline vs patched.

Boots each kernel under instruction counting with the insn-profile TCG
plugin (bench/insn-profile.c) and runs one cell of the benchmark tool
with -n N writes per writer on one fs config. The tool marks the start
and the end of its measured run (URING_BENCH_MARK), and the plugin counts
the instructions executed between the marks, per translated block; per
kernel function (System.map), divided by the writes, that is what a
write costs there, the benchmark tool's own work and the timer ticks
that fall in the run included (the same on both kernels but for the
time each takes). Prints the functions whose cost per write differs most
between the kernels, and the totals.

Needs the kernels built (vm/build) and the Meson build (bench tool).
"""
import argparse
import bisect
import json
import os
import subprocess
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cache_dir():
    c = os.environ.get("URING_VM_CACHE")
    if c:
        return c
    xdg = os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache"))
    return os.path.join(xdg, "uring-overwrite")


def die(msg):
    sys.exit("insn-profile: error: " + msg)


def build_plugin(cache):
    src = os.path.join(TOP, "bench", "insn-profile.c")
    so = os.path.join(cache, "insn-profile.so")
    if (not os.path.exists(so) or
            os.path.getmtime(so) < os.path.getmtime(src)):
        r = subprocess.run(["cc", "-O2", "-Wall", "-shared", "-fPIC", "-o",
                            so, src])
        if r.returncode:
            die("building the plugin failed (cc {})".format(src))
    return so


class Symbols:
    """Text symbols of a kernel's System.map, for address lookup."""

    def __init__(self, path):
        self.addrs, self.names = [], []
        with open(path) as f:
            for line in f:
                a, t, name = line.split()[:3]
                if t in "tTwW":
                    self.addrs.append(int(a, 16))
                    self.names.append(name)
        order = sorted(range(len(self.addrs)), key=self.addrs.__getitem__)
        self.addrs = [self.addrs[i] for i in order]
        self.names = [self.names[i] for i in order]

    def name(self, addr):
        if addr < 0xffff800000000000:
            return "[user]"
        i = bisect.bisect_right(self.addrs, addr) - 1
        return self.names[i] if i >= 0 else "[kernel?]"


def profile(path, syms):
    per = {}
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                continue
            a, n = line.split()
            fn = syms.name(int(a, 16))
            per[fn] = per.get(fn, 0) + int(n)
    return per


def run_guest(a, flavour, n, so, outdir):
    out = os.path.join(outdir, "{}-n{}".format(flavour, n))
    os.makedirs(out, exist_ok=True)
    prof = os.path.join(out, "insns.txt")
    bench = os.path.join(a.build, "bench", "uring-overwrite")
    cmd = [os.path.join(TOP, "vm", "run"), "--flavour", flavour,
           "--icount", str(a.shift), "--plugin", "{},out={}".format(so, prof),
           "--smp", "1", "--fs", a.fs, "--out", out, "--timeout",
           str(a.timeout), "--", "env", "URING_BENCH_MARK=1", bench,
           "--seed", "1"] + a.bench + ["-n", str(n)]
    print("insn-profile: {} with -n {} on {}".format(flavour, n, a.fs),
          file=sys.stderr, flush=True)
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, env=a.env)
    if r.returncode:
        die("the guest run failed (status {}; logs in {})".format(
            r.returncode, out))
    with open(os.path.join(out, "output.log")) as f:
        res = [json.loads(l) for l in f if l.startswith("{")]
    if not res:
        die("no JSON from the benchmark tool in {}/output.log".format(out))
    return prof, res[-1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-k", "--flavours", default="baseline,patched")
    ap.add_argument("-f", "--fs", default="xfs-lazytime")
    ap.add_argument("-n", "--writes", type=int, default=20000,
                    help="writes per writer")
    ap.add_argument("--shift", type=int, default=3)
    ap.add_argument("--timeout", type=int, default=1200)
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("-o", "--out", default=os.path.join(cache_dir(), "runs",
                                                        "insn-profile"))
    ap.add_argument("--build", default=os.environ.get(
        "URING_BUILD_DIR", os.path.join(TOP, "build")))
    ap.add_argument("bench", nargs=argparse.REMAINDER,
                    help="-- then the benchmark tool's options (no -n, -T)")
    a = ap.parse_args()
    a.bench = [x for x in a.bench if x != "--"]
    # As vm/report: without ERMS, a copy from user memory and one between
    # kernel buffers are both rep movsq, priced alike (docs/usage.md).
    a.env = dict(os.environ)
    a.env.setdefault("URING_VM_CPU", "max,-erms")
    if any(x in ("-n", "-T") for x in a.bench):
        die("-n and -T are this script's: give the cell without them")
    if not os.access(os.path.join(a.build, "bench", "uring-overwrite"),
                     os.X_OK):
        die("no benchmark tool in {}/bench: meson compile -C {}".format(
            a.build, a.build))
    cache = cache_dir()
    so = build_plugin(cache)
    flavours = a.flavours.split(",")
    per_write, writes = {}, {}
    for fl in flavours:
        smap = os.path.join(cache, fl, "build", "System.map")
        if not os.path.exists(smap):
            die("no {}: build the kernel with vm/build {}".format(smap, fl))
        syms = Symbols(smap)
        prof, res = run_guest(a, fl, a.writes, so, a.out)
        with open(prof) as f:
            head = f.readline().strip()
        if head != "# window":
            die("{}: the plugin saw no window ({}): a benchmark tool "
                "without the marks?".format(fl, head))
        p = profile(prof, syms)
        w = res["write"]["ok"]
        if w <= 0:
            die("{}: no writes counted".format(fl))
        writes[fl] = w
        per_write[fl] = {fn: n / w for fn, n in p.items()}
    base, pat = flavours[0], flavours[-1]
    fns = set(per_write[base]) | set(per_write[pat])
    rows = sorted(fns, key=lambda fn: -abs(per_write[pat].get(fn, 0) -
                                           per_write[base].get(fn, 0)))
    print("Guest instructions per write by function, {} ({}), "
          "{} vs {}: {} writes per writer between the benchmark tool's "
          "marks, guest CPU {}".format(a.fs, " ".join(a.bench), base, pat,
                                       a.writes, a.env["URING_VM_CPU"]))
    print("| function | {} | {} | difference |".format(base, pat))
    print("|---|---:|---:|---:|")
    for fn in rows[:a.top]:
        b = per_write[base].get(fn, 0)
        p = per_write[pat].get(fn, 0)
        print("| {} | {:.1f} | {:.1f} | {:+.1f} |".format(fn, b, p, p - b))
    tb = sum(per_write[base].values())
    tp = sum(per_write[pat].values())
    print("| **all** | {:.1f} | {:.1f} | {:+.1f} |".format(tb, tp, tp - tb))
    print("writes counted: " + ", ".join("{} {}".format(k, v)
                                         for k, v in writes.items()))


if __name__ == "__main__":
    main()
