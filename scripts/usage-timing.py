#!/usr/bin/env python3
"""Time `gleaner usage` on the query benchmark's stores (docs/benchmarks.md, "Issue 47").

    scripts/usage-timing.py GLEANER_BINARY [RUNS] [SQLITE_URL] [POSTGRES_URL]

Every `--by`, and the session/project/machine reports forced onto the hourly aggregate
(`--since 2000-01-01`), RUNS timed calls each (two warm-up rounds first), the probes
interleaved round-robin so the VM's drift falls on all alike; p50 / p99 in ms, process start
included. Defaults: the stores `query_bench --gb 5 --grow 1 --build-only --work /work/qbench`
leaves.
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time

G = sys.argv[1]
RUNS = int(sys.argv[2]) if len(sys.argv) > 2 else 30
URLS = {
    "sqlite": sys.argv[3] if len(sys.argv) > 3 else "sqlite:///work/qbench/store-5gb.db",
    "postgres": sys.argv[4] if len(sys.argv) > 4
    else "postgres://postgres@127.0.0.1:5432/gleaner_qbench",
}
BYS = ["day", "week", "month", "model", "block", "session", "project", "machine", "user"]
PROBES = [["--by", b] for b in BYS]
PROBES += [["--by", b, "--since", "2000-01-01"] for b in ["session", "project", "machine"]]

home = tempfile.mkdtemp(prefix="usage-timing-")
env = dict(os.environ, HOME=home, XDG_CONFIG_HOME=home + "/cfg", XDG_DATA_HOME=home + "/data")
for name, url in URLS.items():
    times = {i: [] for i in range(len(PROBES))}
    for r in range(RUNS + 2):
        for i, p in enumerate(PROBES):
            start = time.perf_counter()
            out = subprocess.run([G, "--database-url", url, "usage", *p, "--json"],
                                 capture_output=True, env=env)
            ms = (time.perf_counter() - start) * 1000
            if out.returncode != 0:
                sys.exit(f"{name} {' '.join(p)}: {out.stderr.decode()[:300]}")
            if r >= 2:
                times[i].append(ms)
    for i, p in enumerate(PROBES):
        xs = sorted(times[i])
        p99 = xs[min(len(xs) - 1, round(0.99 * (len(xs) - 1)))]
        print(f"{name:9s} {' '.join(p[1:]):28s} p50 {statistics.median(xs):6.1f}  p99 {p99:6.1f}")
