#!/usr/bin/env python3
"""Dump each prompt turn of a transcript in condensed form for hand labelling.
usage: dump.py DB relpath [max_turns]"""
import json, sqlite3, sys
CORPUS = "/work/shared/corpus/real/"
db, rel = sys.argv[1], sys.argv[2]
maxt = int(sys.argv[3]) if len(sys.argv) > 3 else 999
con = sqlite3.connect(db)
prompts = [r[0] for r in con.execute(
    "select fb.line_no from feedback fb join files f on f.id=fb.file_id "
    "where f.path=? and fb.feedback_type='message' order by fb.line_no", (CORPUS + rel,))]
prompts = sorted(set(prompts))
lines = open(CORPUS + rel, encoding="utf-8", errors="replace").read().split("\n")
def clip(s, n):
    s = " ".join(str(s).split())
    return s if len(s) <= n else s[:n] + "…"
def tool_brief(b):
    inp = b.get("input") or {}
    for k in ("command", "file_path", "path", "pattern", "url", "query", "description", "prompt"):
        if k in inp:
            return f"{b.get('name')}({clip(inp[k], 140)})"
    return f"{b.get('name')}({clip(json.dumps(inp)[:140], 140)})"
print(f"=== FILE {rel}")
for i, pl in enumerate(prompts[:maxt]):
    end = prompts[i + 1] - 1 if i + 1 < len(prompts) else len(lines)
    print(f"\n--- TURN prompt_line={pl} (lines {pl}-{end}) turn#{i+1}")
    out = []
    for ln in range(pl, end + 1):
        raw = lines[ln - 1] if ln - 1 < len(lines) else ""
        if not raw.strip():
            continue
        try:
            o = json.loads(raw)
        except Exception:
            continue
        t = o.get("type")
        if o.get("isSidechain"):
            continue
        msg = o.get("message") or {}
        c = msg.get("content")
        if t == "user":
            if ln == pl:
                text = c if isinstance(c, str) else " ".join(x.get("text", "") for x in c if isinstance(x, dict) and x.get("type") == "text")
                out.append(f"USER[{ln}]: {clip(text, 700)}")
                continue
            if isinstance(c, str):
                out.append(f"  user[{ln}]: {clip(c, 200)}")
                continue
            for b in c or []:
                if not isinstance(b, dict):
                    continue
                if b.get("type") == "tool_result":
                    rc = b.get("content")
                    if isinstance(rc, list):
                        rc = " ".join(x.get("text", "") for x in rc if isinstance(x, dict))
                    if b.get("is_error"):
                        out.append(f"  ERR[{ln}]: {clip(rc, 220)}")
                    else:
                        out.append(f"  ok[{ln}]: {clip(rc, 90)}")
                elif b.get("type") == "text":
                    out.append(f"  user[{ln}]: {clip(b.get('text'), 200)}")
        elif t == "assistant":
            for b in c or []:
                if not isinstance(b, dict):
                    continue
                if b.get("type") == "text":
                    out.append(f"  A[{ln}]: {clip(b.get('text'), 400)}")
                elif b.get("type") == "tool_use":
                    out.append(f"  tool[{ln}]: {tool_brief(b)}")
        elif t == "summary":
            out.append(f"  SUMMARY[{ln}]: {clip(o.get('summary'), 100)}")
    if len(out) > 70:
        out = out[:45] + [f"  ... {len(out) - 65} entries cut ..."] + out[-20:]
    print("\n".join(out))
