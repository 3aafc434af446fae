#!/usr/bin/env python3
"""Merge two builds' snippet dumps into one shuffled set for blind readers, and a key saying
which build wrote each; then, given readers' verdicts, count them per build.

usage: judge-set.py make OUT_MD OUT_KEY SEED TAG=DUMP_MD [TAG=DUMP_MD ...]
       judge-set.py count KEY VERDICTS_JSON [VERDICTS_JSON ...]"""
import json, random, re, sys

if sys.argv[1] == "make":
    out_md, out_key, seed = sys.argv[2], sys.argv[3], int(sys.argv[4])
    items = []
    for arg in sys.argv[5:]:
        tag, path = arg.split("=", 1)
        for p in re.split(r"\n\n## Snippet \d+ ", open(path).read())[1:]:
            items.append((tag, p))
    seen, uniq = {}, []
    for tag, p in items:
        if p in seen:
            seen[p].append(tag)
            continue
        seen[p] = [tag]
        uniq.append(p)
    random.seed(seed)
    random.shuffle(uniq)
    with open(out_md, "w") as f:
        f.write("# Snippets to judge\n")
        for i, p in enumerate(uniq, 1):
            f.write(f"\n\n## Snippet {i} " + p)
    json.dump([seen[p] for p in uniq], open(out_key, "w"))
    print(len(items), "snippets,", len(uniq), "distinct")
else:
    key = json.load(open(sys.argv[2]))
    tags = sorted({t for k in key for t in k})
    for path in sys.argv[3:]:
        v = json.load(open(path))
        for tag in tags:
            c = {"keep": 0, "marginal": 0, "noise": 0}
            for x in v:
                if tag in key[x["n"] - 1]:
                    c[x["verdict"]] += 1
            print(path, tag, c)
