"""Whole pipelines, run end to end as the daemon + `gleaner pack` would: ingest compresses each
batch (here: each file, one batch) at INGEST level; pack decodes a project's finished files,
groups them in file order into blocks of at most BLOCK bytes (whole files; a larger file in
line-cut pieces), compresses each block at PACK level with window_log WLOG (optionally LDM),
checksum on, and decodes it again to check before it would swap. CPU = ingest + pack (all of
it: decode, compress, check). Restore CPU = decoding every stored block.
Usage: twostep.py  (runs the grid below; SUBSET=small for projects < 1 MiB)."""
import os

import zstandard as zstd

from common import chunks, cparams, cpu, load, record, runs

P = load()
SUBSET = os.environ.get("SUBSET", "all")
if SUBSET == "small":
    P = type(P)((k, v) for k, v in P.items() if sum(len(b) for _, b in v) < (1 << 20))
IN = sum(len(b) for fs in P.values() for _, b in fs)
BATCH = 8 << 20


def pipeline(ingest, pack, block, wlog, ldm=False, per_file=False):
    batches = {k: [chunks(b, BATCH) for _, b in fs] for k, fs in P.items()}  # not timed
    t0 = cpu()
    live = zstd.ZstdCompressor(compression_params=cparams(ingest))
    archived = {k: [[(len(c), live.compress(c)) for c in cs] for cs in v]
                for k, v in batches.items()}
    ingest_cpu = cpu() - t0
    ingest_bytes = sum(len(f) for v in archived.values() for cs in v for _, f in cs)
    if pack is None:
        return dict(ingest_cpu=ingest_cpu, pack_cpu=0.0, restore_cpu=0.0, out=ingest_bytes,
                    ingest_bytes=ingest_bytes, blocks=0)
    t1 = cpu()
    dctx = zstd.ZstdDecompressor()
    cctx = zstd.ZstdCompressor(compression_params=cparams(pack, ldm, wlog))
    stored = []
    for k, files in archived.items():
        if per_file:
            groups = [cs for cs in files]
        else:
            groups = runs([c for cs in files for c in cs], lambda c: c[0], block)
        for g in groups:
            raw = b"".join(dctx.decompress(f) for _, f in g)
            out = cctx.compress(raw)
            assert dctx.decompress(out) == raw
            stored.append(out)
    pack_cpu = cpu() - t1
    t2 = cpu()
    n = sum(len(dctx.decompress(o)) for o in stored)
    restore_cpu = cpu() - t2
    assert n == IN
    return dict(ingest_cpu=ingest_cpu, pack_cpu=pack_cpu, restore_cpu=restore_cpu,
                out=sum(map(len, stored)), ingest_bytes=ingest_bytes, blocks=len(stored))


def run(name, reps=3, **kw):
    best = None
    for _ in range(reps):
        r = pipeline(**kw)
        if best is None or r["ingest_cpu"] + r["pack_cpu"] < best["ingest_cpu"] + best["pack_cpu"]:
            best = r
    record(option=name, family="pipeline", subset=SUBSET, level=kw.get("pack"), ldm=kw.get("ldm", False),
           in_bytes=IN, out_bytes=best["out"], dict_bytes=0,
           ccpu=best["ingest_cpu"] + best["pack_cpu"], dcpu=best["restore_cpu"], train_cpu=0.0,
           frames=best["blocks"], ctx_mb=0, **best)


if __name__ == "__main__":
    run("PIPE ingest L1 only (no pack)", ingest=1, pack=None, block=0, wlog=None)
    run("PIPE ingest L3 only (no pack)", ingest=3, pack=None, block=0, wlog=None)
    run("PIPE ingest L1 + pack per-file L9", ingest=1, pack=9, block=0, wlog=None, per_file=True)
    for lv in (1, 3, 5, 6, 7, 9):
        run(f"PIPE ingest L1 + pack project blocks <=16 MiB L{lv} w27", ingest=1, pack=lv,
            block=16 << 20, wlog=27, reps=3 if lv <= 9 else 1)
    for lv in (3, 6, 9):
        run(f"PIPE ingest L1 + pack project blocks <=4 MiB L{lv} w27", ingest=1, pack=lv,
            block=4 << 20, wlog=27)
        run(f"PIPE ingest L1 + pack project blocks <=16 MiB L{lv} +LDM w27", ingest=1, pack=lv,
            block=16 << 20, wlog=27, ldm=True)
    run("PIPE ingest L1 + pack project blocks <=16 MiB L16 w27", ingest=1, pack=16,
        block=16 << 20, wlog=27, reps=1)
    run("PIPE ingest L1 + pack project blocks <=16 MiB L19 w27", ingest=1, pack=19,
        block=16 << 20, wlog=27, reps=1)
