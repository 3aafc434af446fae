"""Measure each compression option on the corpus; appends one JSON line per option to
results.jsonl. Usage: options.py FAMILY [FAMILY...]   (families: see FAMILIES at the bottom).
Set SUBSET=small to run on projects < 1 MiB only."""
import os
import random
import sys

import zstandard as zstd

from common import (best_of, chunks, cparams, cpu, decomp_time, load, record, lines, runs)

P = load()
SUBSET = os.environ.get("SUBSET", "all")
if SUBSET == "small":
    P = type(P)((k, v) for k, v in P.items() if sum(len(b) for _, b in v) < (1 << 20))
IN = sum(len(b) for fs in P.values() for _, b in fs)
FAST = int(os.environ.get("REPS", "3"))


def reps(level):
    return FAST if level <= 9 else 1


def run_units(name, family, units_of_project, level, ldm=False, wlog=None):
    """One frame per unit; one reused compression context (as ingest keeps one per thread)."""
    units = [u for fs in P.values() for u in units_of_project(fs)]

    def once():
        cctx = zstd.ZstdCompressor(compression_params=cparams(level, ldm, wlog))
        t = cpu()
        frames = [cctx.compress(u) for u in units]
        c = cpu() - t
        return dict(ccpu=c, frames=frames, ctx=cctx.memory_size())

    r = best_of(once, reps(level))
    d = min(decomp_time([(f, None) for f in r["frames"]], expect=units if i == 0 else None)
            for i in range(reps(level)))
    record(option=name, family=family, subset=SUBSET, level=level, ldm=ldm, in_bytes=IN,
           out_bytes=sum(map(len, r["frames"])), dict_bytes=0, ccpu=r["ccpu"], dcpu=d,
           train_cpu=0.0, frames=len(units), ctx_mb=r["ctx"] / 2**20)


def per_file(fs):
    return [b for _, b in fs]


def solid(fs):
    return [b"".join(b for _, b in fs)]


def blocks_of(limit):
    """A project's files, in order, packed into blocks of at most `limit` bytes (whole files;
    a larger file is cut at line ends)."""
    def f(fs):
        pieces = [p for _, b in fs for p in (chunks(b, limit) if len(b) > limit else [b])]
        return [b"".join(r) for r in runs(pieces, len, limit)]
    return f


def chunked(size):
    return lambda fs: [c for _, b in fs for c in chunks(b, size)]


# ---------------------------------------------------------------- families

def fam_levels():
    for lv in (1, 3, 6, 9, 12, 16, 19):
        run_units(f"per-file L{lv}", "per-file", per_file, lv)


def fam_ldm_file():
    for lv in (3, 9, 16):
        run_units(f"per-file L{lv} +LDM w27", "per-file LDM", per_file, lv, ldm=True)


def fam_solid():
    for lv in (1, 3, 6, 9, 16, 19):
        run_units(f"per-project solid L{lv}", "solid", solid, lv)
        run_units(f"per-project solid L{lv} +LDM w27", "solid LDM", solid, lv, ldm=True)


def fam_solid_w27():
    # a large window without LDM (the regular match finder sees the whole project)
    for lv in (3, 9, 16):
        run_units(f"per-project solid L{lv} w27 (no LDM)", "solid w27", solid, lv, wlog=27)


def fam_blocks():
    for mb in (4, 16):
        for lv in (3, 6, 9):
            run_units(f"per-project blocks <={mb} MiB L{lv} +LDM w27", "blocks", blocks_of(mb << 20),
                      lv, ldm=True)


def fam_chunked():
    for size, label in ((256 << 10, "256 KiB"), (1 << 20, "1 MiB"), (4 << 20, "4 MiB")):
        for lv in (1, 3, 9):
            run_units(f"chunks {label} L{lv}", "chunked", chunked(size), lv)


# ---- dictionaries

def train(size, sample_lines, seed=1):
    """fastCover as ZDICT_trainFromBuffer would (d=8, 4 steps over k), single thread, on at
    most 100x the dictionary size of lines (sampled at random when there are more)."""
    cap = 100 * size
    tot = sum(map(len, sample_lines))
    if tot > cap:
        rnd = random.Random(seed)
        sample_lines = list(sample_lines)
        rnd.shuffle(sample_lines)
        acc, n = [], 0
        for l in sample_lines:
            if n >= cap:
                break
            acc.append(l)
            n += len(l)
        sample_lines = acc
    return zstd.train_dictionary(size, sample_lines)


def dict_run(name, family, level, units_of_project, dict_for_project, shared=None):
    """Per project: its dictionary (trained or raw; may be None), prepared at `level`, and one
    frame per unit against it. Dictionary bytes are counted as stored (a level-19 frame of the
    dictionary at the option's level; a shared one counted once). Training CPU counted separately."""
    # train (once; not repeated)
    t = cpu()
    dicts = {}
    if shared is not None:
        sd = shared()
        for k in P:
            dicts[k] = sd
    else:
        for k, fs in P.items():
            dicts[k] = dict_for_project(fs)
    train_cpu = cpu() - t
    if shared is not None:
        train_cpu = shared.cache["cost"]
    if shared is None and hasattr(dict_for_project, "cost"):
        train_cpu = sum(dict_for_project.cost(fs) for fs in P.values())
    uniq = {id(d): d for d in dicts.values() if d is not None}
    units = {k: units_of_project(fs) for k, fs in P.items()}

    def once():
        t = cpu()
        frames = []
        store = 0
        for d in uniq.values():
            store += len(zstd.ZstdCompressor(level=level).compress(d.as_bytes()))
        for k in P:
            d = dicts[k]
            if d is None:
                cctx = zstd.ZstdCompressor(compression_params=cparams(level))
            else:
                # a fresh CDict per use (prepared at this level), as packing prepares one
                dd = zstd.ZstdCompressionDict(d.as_bytes(), dict_type=zstd.DICT_TYPE_FULLDICT
                                              if d.dict_id() else zstd.DICT_TYPE_RAWCONTENT)
                dd.precompute_compress(level=level)
                cctx = zstd.ZstdCompressor(dict_data=dd, compression_params=None, level=level,
                                           write_checksum=True)
                d = dd
            for u in units[k]:
                frames.append((cctx.compress(u), d))
        return dict(ccpu=cpu() - t, frames=frames, store=store)

    r = best_of(once, reps(level))
    expect = [u for k in P for u in units[k]]
    dc = min(decomp_time(r["frames"], expect=expect if i == 0 else None)
             for i in range(reps(level)))
    record(option=name, family=family, subset=SUBSET, level=level, ldm=False, in_bytes=IN,
           out_bytes=sum(len(f) for f, _ in r["frames"]), dict_bytes=r["store"],
           dict_raw=sum(len(d.as_bytes()) for d in uniq.values()), ndicts=len(uniq),
           ccpu=r["ccpu"], dcpu=dc, train_cpu=train_cpu, frames=len(r["frames"]), ctx_mb=0)


_TRAINED = {}


def trained_per_project(size):
    """Memoized per (size, project). A trained dictionary of `size`, or of a tenth of the project when smaller; none under
    4 KiB (then frames are plain)."""
    def f(fs):
        key = (size, fs[0][0])
        if key not in _TRAINED:
            t = cpu()
            d = g(fs)
            _TRAINED[key] = (d, cpu() - t)
        return _TRAINED[key][0]
    f.cost = lambda fs: _TRAINED[(size, fs[0][0])][1]

    def g(fs):
        tot = sum(len(b) for _, b in fs)
        s = min(size, tot // 10)
        if s < 4096:
            return None
        try:
            return train(s, [l for _, b in fs for l in lines(b)])
        except zstd.ZstdError as e:
            print("train failed", s, tot, e, file=sys.stderr)
            return None
    return f


def raw_prefix(size, minimum=64 << 10):
    """The code's dictionary: the project's first `size` bytes as raw content (none under
    64 KiB of project)."""
    def f(fs):
        raw = b"".join(b for _, b in fs)[:size]
        if len(raw) < minimum:
            return None
        return zstd.ZstdCompressionDict(raw, dict_type=zstd.DICT_TYPE_RAWCONTENT)
    return f


def fam_dict_project():
    for size, label in ((16 << 10, "16 KiB"), (64 << 10, "64 KiB"), (256 << 10, "256 KiB"),
                        (4 << 20, "4 MiB")):
        for lv in (3, 9):
            dict_run(f"trained dict/project {label} L{lv} per-file", "dict-project", lv, per_file,
                     trained_per_project(size))
        if size in (64 << 10, 256 << 10):
            for lv in (3, 9):
                dict_run(f"trained dict/project {label} L{lv} 1 MiB chunks", "dict-project", lv,
                         chunked(1 << 20), trained_per_project(size))


def fam_dict_shared():
    all_lines = [l for fs in P.values() for _, b in fs for l in lines(b)]
    for size, label in ((64 << 10, "64 KiB"), (256 << 10, "256 KiB")):
        cache = {}

        def shared(size=size, cache=cache):
            if "d" not in cache:
                t = cpu()
                cache["d"] = train(size, all_lines)
                cache["cost"] = cpu() - t
            return cache["d"]
        shared.cache = cache
        for lv in (3, 9):
            dict_run(f"shared trained dict {label} L{lv} per-file", "dict-shared", lv, per_file,
                     None, shared=shared)
            dict_run(f"shared trained dict {label} L{lv} 1 MiB chunks", "dict-shared", lv,
                     chunked(1 << 20), None, shared=shared)


def fam_dict_shared_heldout():
    """2-fold: a 64 KiB dictionary trained on every other project, used on the rest."""
    names = list(P)
    folds = [set(names[0::2]), set(names[1::2])]
    for lv in (3, 9):
        out = dc = cc = tc = store = 0
        for i in (0, 1):
            train_set, test_set = folds[1 - i], folds[i]
            t = cpu()
            d = train(64 << 10, [l for k in train_set for _, b in P[k] for l in lines(b)])
            tc += cpu() - t
            t = cpu()
            store += len(zstd.ZstdCompressor(level=lv).compress(d.as_bytes()))
            d.precompute_compress(level=lv)
            cctx = zstd.ZstdCompressor(dict_data=d, level=lv, write_checksum=True)
            units = [b for k in test_set for _, b in P[k]]
            frames = [(cctx.compress(u), d) for u in units]
            cc += cpu() - t
            out += sum(len(f) for f, _ in frames)
            dc += decomp_time(frames, expect=units)
        record(option=f"shared trained dict 64 KiB L{lv} per-file, held-out (2-fold)",
               family="dict-shared", subset=SUBSET, level=lv, ldm=False, in_bytes=IN,
               out_bytes=out, dict_bytes=store / 2, ccpu=cc, dcpu=dc, train_cpu=tc / 2,
               frames=0, ctx_mb=0)


def fam_dict_raw():
    # the code's kind of dictionary (first 4 MiB of the project, raw), at other levels
    for lv in (3, 9):
        dict_run(f"raw-prefix dict/project 4 MiB L{lv} per-file", "dict-raw", lv, per_file,
                 raw_prefix(4 << 20))
        dict_run(f"raw-prefix dict/project 256 KiB L{lv} per-file", "dict-raw", lv, per_file,
                 raw_prefix(256 << 10))


FAMILIES = {k[4:]: v for k, v in globals().items() if k.startswith("fam_")}

if __name__ == "__main__":
    for fam in sys.argv[1:]:
        FAMILIES[fam]()
