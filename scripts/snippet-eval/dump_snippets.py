#!/usr/bin/env python3
"""Dump a store's snippets with their source lines, for blind readers.
usage: dump_snippets.py SNIPPETS_JSON OUT_MD"""
import json, sys
snips = json.load(open(sys.argv[1]))["snippets"]
def text_of(o):
    m = o.get("message") or {}
    c = m.get("content")
    role = o.get("type")
    out = []
    if isinstance(c, str):
        out.append(c)
    elif isinstance(c, list):
        for b in c:
            t = b.get("type")
            if t == "text": out.append(b.get("text", ""))
            elif t == "tool_use":
                out.append(f"[tool call {b.get('name')}: {json.dumps(b.get('input'))[:400]}]")
            elif t == "tool_result":
                r = b.get("content")
                if isinstance(r, list):
                    r = " ".join(x.get("text", "") for x in r if isinstance(x, dict))
                err = " (error)" if b.get("is_error") else ""
                out.append(f"[tool result{err}: {str(r)[:600]}]")
    return role, "\n".join(out)
with open(sys.argv[2], "w") as f:
    for i, s in enumerate(snips, 1):
        f.write(f"\n\n## Snippet {i} ({s['snippet_type']})\n\n**Title:** {s['title']}\n\n**Content:**\n\n{s['content']}\n\n")
        src = s.get("source_file"); a = s.get("source_line_start"); b = s.get("source_line_end")
        f.write(f"**Source lines {a}-{b}:**\n\n")
        try:
            lines = open(src, encoding="utf-8", errors="replace").read().split("\n")
        except Exception as e:
            f.write(f"(source unreadable: {e})\n"); continue
        lo = max(1, (a or 1) - 2); hi = min(len(lines), (b or a or 1) + 6)
        for n in range(lo, hi + 1):
            try: o = json.loads(lines[n - 1])
            except Exception: continue
            role, t = text_of(o)
            if not t.strip() or role not in ("user", "assistant"): continue
            f.write(f"- line {n} [{role}]: {t[:1500]}\n")
print(len(snips))
