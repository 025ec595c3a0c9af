#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Where the threads of a uring-overwrite run spend their time, from a
sched_switch/sched_wakeup trace (bench/sched-trace.sh).

For each class of thread (uo-w*: writers, uo-r*: --readers threads,
iou-wrk-*: io-wq workers, other: everything else on the CPUs) it prints
the time running, the time runnable but not running (preempted, or woken
and not yet on a CPU), the time asleep, the number of preemptions and
sleeps, and the distribution of single runnable waits (p50, p99, max).
Only the time between the first and the last event of a benchmark thread
is counted.
"""
import argparse
import re
import sys

EV = re.compile(r'^\s*(?P<task>.+?)-(?P<tid>\d+)\s+\[(?P<cpu>\d+)\]\s+\S+\s+'
                r'(?P<ts>\d+\.\d+): (?P<ev>sched_\w+): (?P<rest>.*)$')
SW = re.compile(r'prev_comm=(?P<pc>.*?) prev_pid=(?P<pp>\d+) prev_prio=\d+ '
                r'prev_state=(?P<ps>\S+) ==> next_comm=(?P<nc>.*?) '
                r'next_pid=(?P<np>\d+)')
WK = re.compile(r'comm=(?P<c>.*?) pid=(?P<p>\d+) ')


def klass(comm):
    if comm.startswith('uo-w'):
        return 'writers'
    if comm.startswith('uo-r'):
        return 'readers'
    if comm.startswith('iou-wrk'):
        return 'io-wq'
    if comm.startswith('swapper'):
        return 'idle'
    return 'other'


def pct(v, p):
    if not v:
        return 0.0
    v = sorted(v)
    return v[min(len(v) - 1, int(p / 100.0 * len(v)))]


def parse(path):
    events = []
    with open(path, errors='replace') as f:
        for line in f:
            m = EV.match(line)
            if not m:
                continue
            t = float(m.group('ts'))
            ev, rest = m.group('ev'), m.group('rest')
            if ev == 'sched_switch':
                s = SW.match(rest)
                if s:
                    events.append((t, 'switch', s.group('pc'), int(s.group('pp')),
                                   s.group('ps'), s.group('nc'), int(s.group('np'))))
            elif ev in ('sched_wakeup', 'sched_wakeup_new'):
                w = WK.match(rest)
                if w:
                    events.append((t, 'wakeup', w.group('c'), int(w.group('p'))))
    return events


def analyse(events):
    bench = [e for e in events if e[1] == 'switch' and
             (klass(e[2]) in ('writers', 'readers') or klass(e[5]) in ('writers', 'readers'))]
    if not bench:
        raise SystemExit('sched-trace: no uo-* thread in the trace')
    t0, t1 = bench[0][0], bench[-1][0]
    # A thread is counted in the class of the last name it had: a new
    # io-wq worker runs under its creator's name (uo-w*) until it renames
    # itself iou-wrk-*, and must not count as a writer.
    final = {}
    for e in events:
        if e[1] == 'switch':
            final[e[3]], final[e[6]] = e[2], e[5]
        else:
            final[e[3]] = e[2]
    state, since = {}, {}
    acc = {}

    def a(k):
        return acc.setdefault(k, {'run': 0.0, 'wait': 0.0, 'sleep': 0.0,
                                  'preempt': 0, 'sleeps': 0, 'waits': [],
                                  'tids': set()})

    def settle(tid, t, new):
        k = klass(final[tid])
        st = state.get(tid)
        if st is not None and tid in since:
            d = max(0.0, min(t, t1) - max(since[tid], t0))
            if st == 'run':
                a(k)['run'] += d
            elif st == 'wait':
                a(k)['wait'] += d
                if since[tid] >= t0 and t <= t1:
                    a(k)['waits'].append(t - since[tid])
            elif st == 'sleep':
                a(k)['sleep'] += d
        state[tid], since[tid] = new, t
        a(k)['tids'].add(tid)

    for e in events:
        t = e[0]
        if t > t1:
            break
        if e[1] == 'switch':
            _, _, _, pp, ps, _, np = e
            if pp:
                preempted = ps.startswith('R')
                if preempted and t >= t0:
                    a(klass(final[pp]))['preempt'] += 1
                elif t >= t0:
                    a(klass(final[pp]))['sleeps'] += 1
                settle(pp, t, 'wait' if preempted else 'sleep')
            if np:
                settle(np, t, 'run')
        else:
            p = e[3]
            if state.get(p) in (None, 'sleep'):
                settle(p, t, 'wait')
    return t1 - t0, acc


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('trace', nargs='+', help='trace.txt files, LABEL=PATH')
    a = ap.parse_args()
    print('| run | class | threads | running s | runnable s | asleep s | '
          'preempted | slept | runnable wait p50 | p99 | max |')
    print('|---|---|---|---|---|---|---|---|---|---|---|')
    for arg in a.trace:
        label, _, path = arg.rpartition('=')
        span, acc = analyse(parse(path))
        for k in ('writers', 'readers', 'io-wq', 'other'):
            if k not in acc:
                continue
            x = acc[k]
            print('| {} | {} | {} | {:.3f} | {:.3f} | {:.3f} | {} | {} | '
                  '{:.1f} us | {:.1f} us | {:.1f} us |'.format(
                      label or path, k, len(x['tids']), x['run'], x['wait'],
                      x['sleep'], x['preempt'], x['sleeps'],
                      pct(x['waits'], 50) * 1e6, pct(x['waits'], 99) * 1e6,
                      max(x['waits'] or [0]) * 1e6))
        print('| {} | (span) | | {:.3f} s traced | | | | | | | |'.format(
            label or path, span))


if __name__ == '__main__':
    sys.exit(main())
