import os
"""Build the tables of report.md from results.jsonl (last record per option and subset)."""
import json
import sys

rows = {}
for l in open(os.environ.get("ZSTUDY_OUT", "results.jsonl")):
    r = json.loads(l)
    rows[(r["subset"], r["option"])] = r

ORDER = ["baseline", "per-file", "per-file LDM", "chunked", "solid", "solid LDM", "solid w27",
         "blocks", "pipeline", "dict-raw", "dict-project", "dict-shared"]


def table(subset, scale_to=520e6, only=None):
    rs = [r for (s, _), r in rows.items() if s == subset]
    ref = rows[(subset, "per-file L1")]
    ref_out, ref_cpu = ref["out_bytes"], ref["ccpu"]
    import re
    nat = lambda o: [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", o)]
    rs.sort(key=lambda r: (ORDER.index(r["family"]), nat(r["option"])))
    out = ["| option | compressed MB | % of input | compress CPU s | decompress CPU s | "
           "MB saved per extra CPU s vs per-file L1 | compress CPU s per 520 MB |",
           "|---|---:|---:|---:|---:|---:|---:|"]
    for r in rs:
        if only and not only(r):
            continue
        size = r["out_bytes"] + r["dict_bytes"]
        c = r["ccpu"] + r["train_cpu"]
        saved = (ref_out - size) / 1e6
        extra = c - ref_cpu
        if r is ref:
            eff = "(reference)"
        elif saved <= 0.005:
            eff = "none (not smaller)"
        elif extra <= 0.005:
            eff = f"{saved:+.2f} MB at no extra CPU"
        else:
            eff = f"{saved / extra:.2f}"
        tr = f" (incl. {r['train_cpu']:.2f} training)" if r["train_cpu"] > 0.005 else ""
        out.append(f"| {r['option']} | {size / 1e6:.2f} | {100 * size / r['in_bytes']:.2f} | "
                   f"{c:.3f}{tr} | {r['dcpu']:.3f} | {eff} | "
                   f"{c * scale_to / r['in_bytes']:.1f} |")
    return "\n".join(out)


def frontier(subset, fams):
    """Options not beaten on both size and CPU, cheapest first, with the marginal MB saved per
    extra CPU second from the previous point."""
    rs = [r for (s, _), r in rows.items() if s == subset and r["family"] in fams]
    pts = sorted(((r["ccpu"] + r["train_cpu"], r["out_bytes"] + r["dict_bytes"], r["option"],
                   r["in_bytes"]) for r in rs))
    out, best = [], None
    for c, b, o, n in pts:
        if best is None or b < best[1]:
            m = "" if best is None else f"{(best[1] - b) / 1e6 / max(c - best[0], 1e-9):.2f} MB/CPU s"
            out.append(f"| {o} | {100 * b / n:.2f} | {c * 520e6 / n:.1f} | {m} |")
            best = (c, b)
    return ("| frontier option | % of input | CPU s per 520 MB | marginal MB saved per CPU s |\n"
            "|---|---:|---:|---:|\n" + "\n".join(out))


if __name__ == "__main__":
    sub = sys.argv[1] if len(sys.argv) > 1 else "all"
    print(table(sub))
    if len(sys.argv) > 2:
        print()
        print(frontier(sub, sys.argv[2].split(",")))
