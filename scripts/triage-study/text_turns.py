"""Round 7 of issue 46 (docs/triage.md): each labelled external turn rendered as text parts
(prompt, first reply, assistant text, thinking, tool calls, failed and other results) from its raw
lines, for the raw-text models of text_model.py. Run from the repository root after
scripts/labelling/restore-sources.sh; writes $OUT/turns_text.jsonl (OUT defaults to /tmp/triage-study).
"""
import os
OUT = os.environ.get('OUT', '/tmp/triage-study'); os.makedirs(OUT, exist_ok=True)
import json, sys
ROOT = os.environ.get('EXTERNAL', '../shared/corpus/external') + '/'
labels = [json.loads(l) for l in open('tests/fixtures/external/labels.jsonl')]
cache = {}
def lines(f):
    if f not in cache:
        cache[f] = open(ROOT + f, encoding='utf-8', errors='replace').read().split('\n')
    return cache[f]
def texts(content):
    if isinstance(content, str):
        yield ('text', content); return
    if not isinstance(content, list): return
    for c in content:
        if not isinstance(c, dict): continue
        t = c.get('type')
        if t == 'text': yield ('text', c.get('text', ''))
        elif t == 'thinking': yield ('thinking', c.get('thinking', ''))
        elif t == 'tool_use':
            inp = c.get('input', {})
            yield ('tool_use', c.get('name', '') + ' ' + json.dumps(inp, ensure_ascii=False)[:400])
        elif t == 'tool_result':
            r = c.get('content')
            if isinstance(r, list):
                r = ' '.join(x.get('text', '') for x in r if isinstance(x, dict))
            r = str(r or '')
            yield ('error' if c.get('is_error') else 'result', r[:300] + ' ' + r[-300:] if len(r) > 600 else r)
out = open(OUT + '/turns_text.jsonl', 'w')
for lab in labels:
    ls = lines(lab['file'])
    parts = {'prompt': [], 'assistant': [], 'thinking': [], 'tool_use': [], 'error': [], 'result': [], 'first_reply': []}
    for i in range(lab['prompt_line'] - 1, min(lab['end_line'], len(ls))):
        try: o = json.loads(ls[i])
        except Exception: continue
        if not isinstance(o, dict): continue
        m = o.get('message') or {}
        role = m.get('role') if isinstance(m, dict) else None
        for kind, t in texts(m.get('content') if isinstance(m, dict) else None):
            if role == 'user' and kind == 'text':
                parts['prompt'].append(t[:2000])
            elif role == 'assistant' and kind == 'text':
                if not parts['assistant']: parts['first_reply'].append(t[:1500])
                parts['assistant'].append(t[:1500])
            elif kind in parts:
                parts[kind].append(t[:800])
    out.write(json.dumps({'id': lab['id'], 'repo': lab['repo'], 'file': lab['file'], 'line': lab['prompt_line'],
                          'label': lab['label'], 'parts': {k: '\n'.join(v)[:6000] for k, v in parts.items()}},
                         ensure_ascii=False) + '\n')
