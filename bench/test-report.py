#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Self-test of the report's verdict rule (bench/results.py) and of
bench/report.py end to end on made-up rounds: a cell whose ranges do not
overlap and whose ratio is outside the A/A band must read "faster" or
"slower"; one inside its A/A band, or with overlapping ranges, "no change".
Exit 0 when every check holds, 1 (and what failed) otherwise.
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import results as R  # noqa: E402

failed = 0


def check(what, got, want):
    global failed
    if got != want:
        print("not ok: {}: got {!r}, want {!r}".format(what, got, want))
        failed = 1
    else:
        print("ok: {}".format(what))


S = R.Series
check("median of 5", S([5, 1, 4, 2, 3]).median, 3)
check("min-max", (S([5, 1, 4]).lo, S([5, 1, 4]).hi), (1, 5))
check("apart, outside the band: faster",
      R.verdict(S([100, 101, 102]), S([150, 151, 152]), 1.05), "faster")
check("apart, outside the band: slower",
      R.verdict(S([100, 101, 102]), S([50, 51, 52]), 1.05), "slower")
check("apart but inside the A/A band: no change",
      R.verdict(S([100, 101, 102]), S([110, 111, 112]), 1.2), "no change")
check("outside the band but overlapping: no change",
      R.verdict(S([100, 101, 200]), S([150, 151, 152]), 1.05), "no change")
check("lower is better: fewer punts read faster",
      R.verdict(S([10, 11, 12]), S([1, 1, 2]), 1.1, False), "faster")
check("A/A band of identical runs", R.aa_band(S([100] * 5), S([100] * 5)), 1.0)
check("A/A band never below the point ratio",
      R.aa_band(S([100, 100, 100]), S([120, 120, 120])) >= 1.2, True)
noisy = R.aa_band(S([90, 100, 110, 95, 105]), S([92, 99, 108, 97, 104]))
check("A/A band of noisy runs: wider than their ratio of medians",
      noisy > R.band(R.ratio(S([92, 99, 108, 97, 104]).median,
                             S([90, 100, 110, 95, 105]).median)), True)
check("A/A band reproducible", noisy,
      R.aa_band(S([90, 100, 110, 95, 105]), S([92, 99, 108, 97, 104])))
check("A/A band: two rounds give none", R.aa_band(S([1, 2]), S([1, 2])), None)
check("no A/A: no verdict", R.verdict(S([1, 2, 3]), S([7, 8, 9]), None),
      "-")
check("two rounds: no verdict", R.verdict(S([1, 2]), S([7, 8]), 1.01), "-")
check("band is symmetric", R.band(0.8), 1.25)

# End to end: two cells, one clearly faster, one noise.
recs = []
for rnd in range(5):
    for label, fast in (("baseline", 100), ("patched", 200),
                        ("baseline-aa", 100)):
        for cell, iops in (("fast", fast + rnd), ("same", 100 + 7 * rnd)):
            recs.append({"round": rnd, "label": label, "cell": cell,
                         "fs": "xfs", "tool": "bench", "variant": None,
                         "result": {"kernel": "k", "total": {"iops": iops},
                                    "write": {}, "read": {}}})
        # --readers: the writers double, the readers halve, the sum holds
        recs.append({"round": rnd, "label": label, "cell": "rdr",
                     "fs": "xfs", "tool": "bench", "variant": None,
                     "result": {"kernel": "k", "total": {"iops": 300 + rnd},
                                "write": {"iops": fast + rnd},
                                "read": {"iops": 300 - fast + rnd}}})
with tempfile.TemporaryDirectory() as tmp:
    data = os.path.join(tmp, "r.jsonl")
    mat = os.path.join(tmp, "matrix")
    with open(data, "w") as f:
        f.write("\n".join(json.dumps(r) for r in recs) + "\n")
    with open(mat, "w") as f:
        f.write("bench fast -b 4096\nbench same -b 4096\n"
                "bench rdr -b 4096 --readers 2\n")
    p = subprocess.run([sys.executable, os.path.join(HERE, "report.py"),
                        "--results", data, "--matrix", mat],
                       capture_output=True, text=True)
    check("report.py exit", p.returncode, 0)
    rows = {line.split("|")[1].strip(): line for line in p.stdout.split("\n")
            if line.startswith("| fast |") or line.startswith("| same |")
            or line.startswith("| rdr |")}
    check("report: the faster cell", "**faster**" in rows.get("fast", ""),
          True)
    check("report: the noisy cell", "| no change |" in rows.get("same", ""),
          True)
    check("report: --readers judged by its writers",
          "**faster**" in rows.get("rdr", ""), True)
    readers = [line for line in p.stdout.split("\n")
               if line.startswith("| xfs | 202 [")]
    check("report: --readers' readers judged apart",
          len(readers) == 1 and "| slower |" in readers[0], True)
sys.exit(failed)
