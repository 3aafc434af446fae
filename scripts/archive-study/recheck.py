"""Noise check: the frontier pipelines again, 3 runs each, every run printed."""
from twostep import pipeline
for lv in (3, 5, 6, 7, 9):
    cs = []
    for _ in range(3):
        r = pipeline(ingest=1, pack=lv, block=16 << 20, wlog=27)
        cs.append(round(r["ingest_cpu"] + r["pack_cpu"], 3))
    print(lv, r["out"], cs, flush=True)
