"""Shared helpers for the zstd measurement study (Gleaner archive).

Corpus: /work/shared/corpus/real. A "project" is the directory right under a `projects/`
directory when the path has one, else the top-level folder; loose top-level files are grouped
by their `owner__repo` prefix. Files are taken in path order (a stand-in for ingest's file-id
order). Every file is one unit of ingest (all are < 8 MiB and < 20,000 lines, so one batch).
"""
import json
import os
import resource
import time
from collections import OrderedDict

import zstandard as zstd

_HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("GLEANER_CORPUS_DIR", os.path.join(_HERE, "../../../shared/corpus/real"))
OUT = os.environ.get("ZSTUDY_OUT", "results.jsonl")
SCALE_TO = 520e6  # the target tree


def project_of(rel):
    parts = rel.split("/")
    if "projects" in parts[:-1]:
        i = parts.index("projects")
        if i + 1 < len(parts) - 1:
            return "/".join(parts[: i + 2])
    if len(parts) > 1:
        return parts[0]
    p = parts[0].split("__")
    return "__".join(p[:2])


def load():
    """OrderedDict project -> list of (relpath, bytes)."""
    files = []
    for d, _, names in os.walk(ROOT):
        for n in names:
            full = os.path.join(d, n)
            files.append(os.path.relpath(full, ROOT))
    files.sort()
    projects = OrderedDict()
    for rel in sorted(files, key=lambda r: (project_of(r), r)):
        with open(os.path.join(ROOT, rel), "rb") as f:
            projects.setdefault(project_of(rel), []).append((rel, f.read()))
    return projects


def total_bytes(projects):
    return sum(len(b) for fs in projects.values() for _, b in fs)


def lines(b):
    out = b.split(b"\n")
    res = [l + b"\n" for l in out[:-1]]
    if out[-1]:
        res.append(out[-1])
    return res


def runs(items, size, limit):
    """`items` in order, grouped into runs whose `size`s sum to at most `limit` (a run holds at
    least one item, so a larger item is a run of its own)."""
    out, cur, n = [], [], 0
    for it in items:
        if cur and n + size(it) > limit:
            out.append(cur)
            cur, n = [], 0
        cur.append(it)
        n += size(it)
    if cur:
        out.append(cur)
    return out


def chunks(b, target):
    """Cut `b` into pieces of at most `target` bytes at line ends (at least one line each),
    as ingest's batches are cut."""
    return [b"".join(r) for r in runs(lines(b), len, target)]


def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def maxrss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cparams(level, ldm=False, wlog=None):
    kw = {}
    if ldm:
        kw["enable_ldm"] = True
        kw["window_log"] = wlog or 27
    elif wlog:
        kw["window_log"] = wlog
    return zstd.ZstdCompressionParameters.from_level(level, write_checksum=True, **kw)


def record(**kw):
    with open(OUT, "a") as f:
        f.write(json.dumps(kw) + "\n")
    print(json.dumps(kw), flush=True)


def best_of(fn, reps):
    """Run fn() reps times; keep the run with the least CPU (the machine is shared)."""
    best = None
    for _ in range(reps):
        r = fn()
        if best is None or r["ccpu"] < best["ccpu"]:
            best = r
    return best


def decomp_time(frames, dicts=None, expect=None):
    """CPU seconds to decode `frames` (list of (frame, dict_or_None)); verifies against
    `expect` (list of bytes, same order) outside the timed part."""
    dctx_plain = zstd.ZstdDecompressor()
    dctxs = {}
    outs = []
    t = cpu()
    for fr, d in frames:
        if d is None:
            outs.append(dctx_plain.decompress(fr))
        else:
            k = id(d)
            if k not in dctxs:
                dctxs[k] = zstd.ZstdDecompressor(dict_data=d)
            outs.append(dctxs[k].decompress(fr))
    dt = cpu() - t
    if expect is not None:
        assert len(outs) == len(expect) and all(a == b for a, b in zip(outs, expect)), "mismatch"
    return dt
