"""The current scheme, step for step as src/archive/mod.rs and src/run/pack.rs do it:

ingest: each read batch (<= batch.max_bytes 8 MiB / 20,000 lines, cut at a line end; every file
        here is one batch) -> one zstd frame at LIVE_LEVEL 1 with a checksum, one kept context.
pack:   per project, files in order: dictionary = the project's first DICT_BYTES (4 MiB) of
        archived bytes, raw content (none if < MIN_DICT_BYTES 64 KiB), stored as a level-16
        frame (dict_frame), read back and prepared (CDict at PACK_LEVEL 16 + DDict); each file's
        chunks decoded and packed into blocks of <= BLOCK_BYTES 16 MiB at level 16 against it,
        checksum, then decoded again and compared before the swap.
Prints one JSON line (also appended to results.jsonl)."""
import os

import zstandard as zstd

from common import chunks, cpu, load, record, maxrss_mb, runs

P = load()
SUBSET = os.environ.get("SUBSET", "all")
if SUBSET == "small":
    P = type(P)((k, v) for k, v in P.items() if sum(len(b) for _, b in v) < (1 << 20))
IN = sum(len(b) for fs in P.values() for _, b in fs)

LIVE, PACK, DICT_BYTES, MIN_DICT, BLOCK = 1, 16, 4 << 20, 64 << 10, 16 << 20
BATCH = 8 << 20


def run():
    # ---- ingest
    batches = {k: [chunks(b, BATCH) for _, b in fs] for k, fs in P.items()}  # not timed
    t0 = cpu()
    live = zstd.ZstdCompressor(level=LIVE, write_checksum=True)
    archived = {k: [[(len(c), live.compress(c)) for c in cs] for cs in v]
                for k, v in batches.items()}
    ingest_cpu = cpu() - t0
    ingest_bytes = sum(len(f) for fl in archived.values() for cs in fl for _, f in cs)

    # ---- pack
    t1 = cpu()
    plain = zstd.ZstdDecompressor()
    blocks, dict_frames = [], []
    for k, files in archived.items():
        # first_bytes
        raw = bytearray()
        for cs in files:
            for n, f in cs:
                b = plain.decompress(f)
                raw += b[: DICT_BYTES - len(raw)]
                if len(raw) >= DICT_BYTES:
                    break
            if len(raw) >= DICT_BYTES:
                break
        dd = None
        if len(raw) >= MIN_DICT:
            frame = zstd.ZstdCompressor(level=PACK, write_checksum=True).compress(bytes(raw))
            dict_frames.append(frame)
            back = plain.decompress(frame)  # prepare(): the stored dictionary decoded
            dd = zstd.ZstdCompressionDict(back, dict_type=zstd.DICT_TYPE_RAWCONTENT)
            dd.precompute_compress(level=PACK)
            dctx = zstd.ZstdDecompressor(dict_data=dd)
        for cs in files:
            # pack_file: runs of whole chunks of <= 16 MiB
            for r in runs(cs, lambda c: c[0], BLOCK):
                data = b"".join(plain.decompress(f) for _, f in r)
                if dd is not None:
                    c = zstd.ZstdCompressor(dict_data=dd, level=PACK, write_checksum=True)
                    out = c.compress(data)
                    ok = dctx.decompress(out) == data
                else:
                    out = zstd.ZstdCompressor(level=PACK, write_checksum=True).compress(data)
                    ok = plain.decompress(out) == data
                assert ok
                blocks.append((out, dd))
    pack_cpu = cpu() - t1

    # ---- restore everything from the packed state
    t2 = cpu()
    n = 0
    dctxs = {}
    for fr in dict_frames:
        n += len(plain.decompress(fr))
    for out, dd in blocks:
        if dd is None:
            n += len(plain.decompress(out))
        else:
            if id(dd) not in dctxs:
                dctxs[id(dd)] = zstd.ZstdDecompressor(dict_data=dd)
            n += len(dctxs[id(dd)].decompress(out))
    restore_cpu = cpu() - t2

    packed = sum(len(o) for o, _ in blocks)
    dbytes = sum(map(len, dict_frames))
    return dict(ingest_cpu=ingest_cpu, ingest_bytes=ingest_bytes, pack_cpu=pack_cpu,
                packed_bytes=packed, dict_bytes=dbytes, ndicts=len(dict_frames),
                restore_cpu=restore_cpu)


best = None
for _ in range(int(os.environ.get("REPS", "2"))):
    r = run()
    if best is None or r["ingest_cpu"] + r["pack_cpu"] < best["ingest_cpu"] + best["pack_cpu"]:
        best = r
record(option="CURRENT: ingest L1 per batch, pack L16 + 4 MiB raw dict/project",
       family="baseline", subset=SUBSET, level=16, ldm=False, in_bytes=IN,
       out_bytes=best["packed_bytes"],
       ccpu=best["ingest_cpu"] + best["pack_cpu"], dcpu=best["restore_cpu"], train_cpu=0.0,
       frames=0, ctx_mb=0, maxrss_mb=maxrss_mb(), **best)
