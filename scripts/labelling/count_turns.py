#!/usr/bin/env python3
"""Count human turns in Claude Code JSONL transcripts (rubric definition).

Usage: count_turns.py FILE_OR_DIR... [-v]
Output per file: <turns in file> <turns whose uuid was not seen in an earlier file> <path>; last line: distinct total.
A main-session file is any .jsonl not under a `subagents/` dir, not named agent-*.jsonl.
Lines with isSidechain true are skipped anyway.  -v prints the counted prompts.
Beyond the rubric's list this also skips: isVisibleInTranscriptOnly lines, lines carrying toolUseResult,
the compaction text "This session is being continued from a previous conversation", and the plumbing
markers <command-message>/<command-args>/<local-command-stderr>/<local-command-caveat>/<bash-stderr>/
<bash-notification>/<user-prompt-submit-hook>, "Unknown slash command:", "Unknown command:".
"Trivial" = at most 4 tokens, all from ASSENT (multilingual assent words).
"""
import json, os, re, sys

WRAPPERS = re.compile(r'<(ide_opened_file|ide_selection|system-reminder)>.*?</\1>', re.S)
PLUMBING = ('<command-name>', '<command-message>', '<command-args>', '<local-command-stdout>',
            '<local-command-stderr>', '<local-command-caveat>', '<bash-input>', '<bash-stdout>',
            '<bash-stderr>', '<task-notification>', '<bash-notification>', '<user-prompt-submit-hook>',
            'Caveat: The messages below were generated', '[Request interrupted by user',
            'Unknown skill:', 'Unknown slash command:', 'Unknown command:', 'Operation stopped by hook')
ASSENT = {'ok', 'okay', 'k', 'yes', 'y', 'yep', 'yeah', 'yup', 'sure', 'continue', 'go', 'ahead', 'on',
          'proceed', 'thanks', 'thank', 'you', 'thx', 'ty', 'great', 'good', 'nice', 'cool', 'perfect',
          'do', 'it', 'please', 'pls', 'lgtm', 'sounds', 'fine', 'alright', 'all', 'right', 'keep', 'going',
          'next', 'done', 'agreed', 'agree', 'correct', 'awesome', 'excellent', 'hi', 'hello', 'hey',
          'oui', 'si', 'sí', 'ja', 'да', 'はい', '好的', '好', '继续', '可以', '是', '对', 'ok.', 'merci',
          'vale', 'claro', 'gracias', 'danke', 'weiter', 'continua', 'continuar', 'продолжай', 'спасибо',
          'proceed.', 'yes.', 'continue.', 'thanks.', 'go.', 'y.', '続けて', 'お願いします', 'ありがとう',
          'the', 'with', 'and', 'that', 'this', 'now', 'then', 'so', 'ya', 'np', 'man', 'mate'}

def is_subagent_path(p):
    parts = p.replace('\\', '/').split('/')
    return 'subagents' in parts or os.path.basename(p).startswith('agent-')

def text_of(content):
    """Return (text, has_image, has_tool_result)."""
    if isinstance(content, str):
        return content, False, False
    texts, img, tr = [], False, False
    if isinstance(content, list):
        for b in content:
            if not isinstance(b, dict):
                continue
            t = b.get('type')
            if t == 'text':
                texts.append(b.get('text') or '')
            elif t == 'image':
                img = True
            elif t == 'tool_result':
                tr = True
            elif t == 'document':
                img = True
    return '\n'.join(texts), img, tr

def trivial(text):
    toks = re.findall(r"[^\s,!.?;:…]+", text.lower())
    if not toks:
        return True
    return len(toks) <= 4 and all(t in ASSENT for t in toks)

def human_prompts(path):
    seen, out = set(), []
    if is_subagent_path(path):
        return out
    with open(path, 'rb') as f:
        for raw in f:
            raw = raw.strip()
            if not raw:
                continue
            try:
                d = json.loads(raw)
            except Exception:
                continue
            if not isinstance(d, dict) or d.get('type') != 'user':
                continue
            if d.get('isSidechain') or d.get('isMeta') or d.get('isCompactSummary') or d.get('isVisibleInTranscriptOnly'):
                continue
            if d.get('sourceToolUseID') or d.get('toolUseResult') is not None:
                continue
            msg = d.get('message') or {}
            if not isinstance(msg, dict):
                continue
            text, img, tr = text_of(msg.get('content'))
            if tr:
                continue
            stripped = WRAPPERS.sub('', text).strip()
            if not stripped and not img:
                continue
            if stripped and any(stripped.startswith(p) or p in stripped[:200] for p in PLUMBING):
                continue
            if stripped.startswith('This session is being continued from a previous conversation'):
                continue
            if not img and trivial(stripped):
                continue
            uid = d.get('uuid') or raw[:200]
            if uid in seen:
                continue
            seen.add(uid)
            out.append((uid, stripped))
    return out

def iter_files(args):
    for a in args:
        if os.path.isdir(a):
            for root, _, files in os.walk(a):
                for fn in sorted(files):
                    if fn.endswith('.jsonl'):
                        yield os.path.join(root, fn)
        else:
            yield a

if __name__ == '__main__':
    verbose = '-v' in sys.argv
    args = [a for a in sys.argv[1:] if a != '-v']
    total = 0
    seen = set()   # uuids counted so far: a resumed session replays earlier lines under the same uuid
    for p in sorted(iter_files(args)):
        pr = human_prompts(p)
        new = [t for u, t in pr if u not in seen]
        seen.update(u for u, _ in pr)
        total += len(new)
        # columns: turns in this file, turns not already counted in an earlier file (sorted order), path
        print(f"{len(pr)}\t{len(new)}\t{p}")
        if verbose:
            for t in new:
                print('    > ' + t[:160].replace('\n', ' '))
    print(f"{total}\tTOTAL (distinct uuids)")
