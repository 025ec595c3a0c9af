#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/sched-trace.py on a made-up trace whose answer is known: a
writer and a reader share one CPU; the reader is preempted twice (waits
of 3 ms and 1 ms), sleeps once (2 ms, then 0.5 ms before it runs), and
an io-wq worker, woken first under its creator's name (as a new io-wq
worker is, before it renames itself), runs once."""
import importlib.util
import os
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location('st', os.path.join(here, 'sched-trace.py'))
st = importlib.util.module_from_spec(spec)
spec.loader.exec_module(st)

SW = ('{p}-{pp} [000] d..2. {t:.6f}: sched_switch: prev_comm={p} prev_pid={pp} '
      'prev_prio=120 prev_state={s} ==> next_comm={n} next_pid={np} next_prio=120\n')
WK = '{c}-{cp} [000] d..2. {t:.6f}: sched_wakeup: comm={w} pid={wp} prio=120 target_cpu=000\n'
R, W, Q = ('uo-r4', 10), ('uo-w0', 11), ('iou-wrk-11', 12)
lines = [
    SW.format(p=W[0], pp=W[1], s='S', n=R[0], np=R[1], t=1.000),   # t0: reader runs
    SW.format(p=R[0], pp=R[1], s='R+', n=W[0], np=W[1], t=1.002),  # preempted
    SW.format(p=W[0], pp=W[1], s='R+', n=R[0], np=R[1], t=1.005),  # back: waited 3 ms
    WK.format(c=R[0], cp=R[1], w=W[0], wp=Q[1], t=1.0055),         # new worker, old name
    SW.format(p=R[0], pp=R[1], s='S', n=Q[0], np=Q[1], t=1.006),   # sleeps
    WK.format(c=Q[0], cp=Q[1], w=R[0], wp=R[1], t=1.008),          # woken after 2 ms
    SW.format(p=Q[0], pp=Q[1], s='S', n=R[0], np=R[1], t=1.0085),  # runs 0.5 ms later
    SW.format(p=R[0], pp=R[1], s='R', n=W[0], np=W[1], t=1.010),   # preempted
    SW.format(p=W[0], pp=W[1], s='S', n=R[0], np=R[1], t=1.011),   # back: waited 1 ms
]
fails = 0


def check(what, got, want):
    global fails
    if abs(got - want) > 1e-9:
        print('FAIL {}: got {}, want {}'.format(what, got, want))
        fails += 1


with tempfile.NamedTemporaryFile('w', suffix='.txt', delete=False) as f:
    f.write('# tracer: nop\n')
    f.writelines('  ' + l for l in lines)
span, acc = st.analyse(st.parse(f.name))
os.unlink(f.name)
r = acc['readers']
check('span', span, 0.011)
check('reader running', r['run'], 0.002 + 0.001 + 0.0015)
check('reader runnable', r['wait'], 0.003 + 0.0005 + 0.001)
check('reader asleep', r['sleep'], 0.002)
check('reader preemptions', r['preempt'], 2)
check('reader sleeps', r['sleeps'], 1)
check('reader waits', len(r['waits']), 3)
check('reader wait max', max(r['waits']), 0.003)
check('reader wait p50', st.pct(r['waits'], 50), 0.001)
check('io-wq running', acc['io-wq']['run'], 0.0025)
check('io-wq runnable', acc['io-wq']['wait'], 0.0005)
check('writer preemptions', acc['writers']['preempt'], 1)
check('writer threads', len(acc['writers']['tids']), 1)
if fails:
    sys.exit(1)
print('selftest-sched-trace: all checks passed')
