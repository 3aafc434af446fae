#!/usr/bin/env python3
"""Select human turns from the external corpus and dump them into labelling packets.

Standalone (Python 3 standard library only).  Turn and prompt definitions follow
/work/shared/docs/triage-rubric.md; the prompt test mirrors ../count_turns.py (same plumbing and
wrapper lists, same resumed-uuid rule) with a few more assent words in other languages.

Usage (from anywhere):
    dump_turns.py select   # -> turns.jsonl (+ selection_report.txt)
    dump_turns.py dump     # turns.jsonl -> dumps.jsonl, packet-1.txt ... packet-6.txt
    dump_turns.py check    # every turn in exactly one packet, per-packet / per-repo counts
    dump_turns.py show ID  # print one turn's dump (e.g. show t0123)
    dump_turns.py all      # select + dump + check

Corpus root = the parent of this script's folder (/work/shared/corpus/external); output next to the script.
A main session file is any *.jsonl not under a `subagents/` dir and not named agent-*.jsonl.
Files are scanned in sorted relative-path order; a prompt uuid already seen (earlier in the same file or
in an earlier file: resumed sessions replay lines) is not a new prompt.  A turn runs from its prompt line
to the line before the next human prompt of the same file (end_line), or to the end of the file.

Selection: sessions are scored by the share of their turns showing a denial/interruption (weight 2), a tool
error (1) and weighing of options or >=1500 chars of thinking (1).  A common per-repo level is raised until the
total reaches TARGET_TOTAL; per repo a knapsack picks whole sessions filling min(level, REPO_CAP) turns,
maximising sum n*(1+score).  Chinese-prompt repos (>50% of prompts with Han characters and no kana/hangul) get
a lower level if they would exceed CHINESE_SHARE.  Only a session longer than REPO_CAP is ever cut (first N).
Packets: sessions in turns.jsonl order, split contiguously into N_PACKETS of near-equal turn counts.
"""
import json
import os
import random
import re
import sys
from collections import Counter, defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RUBRIC = '/work/shared/docs/triage-rubric.md'

TARGET_TOTAL = 1750
REPO_CAP = 160
CHINESE_SHARE = 0.35
N_PACKETS = 6
TURN_BUDGET = 6000      # chars per turn dump (header + items), approximately
KEEP_EDGE = 15          # items always kept at each end of a long turn

# ---------------------------------------------------------------------------------------------
# Prompt detection (rubric "Turns"; lists copied from ../count_turns.py, plus ide_cursor /
# ide_visible_files wrappers as Gleaner strips them, plus a few assent words)
# ---------------------------------------------------------------------------------------------
WRAPPER_TAGS = ('ide_opened_file', 'ide_selection', 'ide_cursor', 'ide_visible_files', 'system-reminder')
WRAPPERS = re.compile(r'<(%s)>(.*?)</\1>' % '|'.join(WRAPPER_TAGS), re.S)
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
          'the', 'with', 'and', 'that', 'this', 'now', 'then', 'so', 'ya', 'np', 'man', 'mate',
          # added here (not in count_turns.py): assent words in other languages of this corpus
          'давай', 'ага', 'tak', 'sim', 'bora', 'vamos', 'dale', 'jo', '좋아', '다음', '고', '네', '응',
          '예', '好了', '嗯', '行', '你好', '안녕', '继续吧', '好的继续', 'grazie', 'certo', 'vai'}

INTERRUPT_MARK = '[Request interrupted by user'
DENIAL_PREFIXES = ("The user doesn't want to proceed with this tool use",
                   "The user doesn't want to take this action right now")
FAIL_RE = re.compile(r'Exit code [1-9]\d*|Traceback \(most recent call last\)|(?i:\berror:)|'
                     r'No such file or directory|command not found|(?m:^fatal: )')
# tools whose ok output is file content or prose: a failure-looking word in it is not a failure
NO_TEXT_FAIL_TOOLS = {'Read', 'Grep', 'Glob', 'WebFetch', 'WebSearch', 'Task', 'Agent', 'TodoWrite', 'Skill',
                      'Write', 'Edit', 'MultiEdit', 'NotebookEdit', 'AskUserQuestion', 'ExitPlanMode', 'ToolSearch'}
WEIGH_RE = re.compile(r'(?i)\b(instead of|rather than|trade-?offs?|pros and cons|alternatively|'
                      r'option [a-d1-4]\b|approach [a-d1-4]\b|better (?:approach|option)|'
                      r'on the other hand|versus|vs\.?)\b|方案|权衡|相比|而不是|还是|대신|장단점')
HAN = re.compile(r'[\u4e00-\u9fff]')
KANA_HANGUL = re.compile(r'[\u3040-\u30ff\uac00-\ud7af]')


def is_subagent_path(p):
    parts = p.replace('\\', '/').split('/')
    return 'subagents' in parts or os.path.basename(p).startswith('agent-')


def blocks_of(content):
    if isinstance(content, str):
        return [{'type': 'text', 'text': content}]
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    return []


def text_of(content):
    """(joined text blocks, has image/document, has tool_result)."""
    texts, img, tr = [], False, False
    for b in blocks_of(content):
        t = b.get('type')
        if t == 'text':
            texts.append(b.get('text') or '')
        elif t in ('image', 'document'):
            img = True
        elif t == 'tool_result':
            tr = True
    return '\n'.join(texts), img, tr


def strip_wrappers(text):
    """Text without IDE/reminder wrappers, and short notes on the IDE context removed."""
    notes = []
    for m in WRAPPERS.finditer(text):
        tag, inner = m.group(1), m.group(2)
        if tag == 'ide_opened_file':
            mm = re.search(r'opened the file (.+?) in the IDE', inner)
            notes.append('IDE opened ' + (mm.group(1) if mm else '?'))
        elif tag == 'ide_selection':
            mm = re.search(r'selected the lines (\d+) to (\d+) from (\S+)', inner)
            notes.append('IDE selected ' + ('lines %s-%s of %s' % mm.groups() if mm else '?'))
    return WRAPPERS.sub('', text).strip(), notes


def trivial(text):
    toks = re.findall(r"[^\s,!.?;:…，。！？、]+", text.lower())
    if not toks:
        return True
    return len(toks) <= 4 and all(t in ASSENT for t in toks)


def classify_user(d):
    """Classify a parsed `user` line. Returns (kind, text): kind one of
    'prompt', 'tool_result', 'meta', 'compact', 'plumbing', 'interrupt', 'trivial', 'empty', 'sidechain'."""
    if d.get('isSidechain'):
        return 'sidechain', ''
    msg = d.get('message') or {}
    content = msg.get('content') if isinstance(msg, dict) else None
    text, img, tr = text_of(content)
    if d.get('isCompactSummary') or d.get('isVisibleInTranscriptOnly'):
        return 'compact', text
    if d.get('isMeta') or d.get('sourceToolUseID'):
        return 'meta', text
    if tr or d.get('toolUseResult') is not None:
        return 'tool_result', text
    stripped, _ = strip_wrappers(text)
    if not stripped and not img:
        return 'empty', text
    if stripped.startswith(INTERRUPT_MARK):
        return 'interrupt', stripped
    if stripped and any(stripped.startswith(p) or p in stripped[:200] for p in PLUMBING):
        return 'plumbing', stripped
    if stripped.startswith('This session is being continued from a previous conversation'):
        return 'compact', stripped
    if not img and trivial(stripped):
        return 'trivial', stripped
    return 'prompt', stripped


# ---------------------------------------------------------------------------------------------
# Corpus scanning
# ---------------------------------------------------------------------------------------------
def main_files():
    out = []
    for root, dirs, files in os.walk(ROOT):
        if os.path.abspath(root).startswith(HERE):
            continue
        for fn in files:
            if fn.endswith('.jsonl'):
                rel = os.path.relpath(os.path.join(root, fn), ROOT)
                if not is_subagent_path(rel):
                    out.append(rel)
    return sorted(out)


def repo_of(rel):
    top = rel.split('/')[0]
    owner, _, name = top.partition('__')
    return owner + '/' + name


def load_lines(rel):
    """List of parsed objects (None for blank/unparsable), index i = physical line i+1."""
    out = []
    with open(os.path.join(ROOT, rel), 'rb') as f:
        for raw in f:
            raw = raw.strip()
            if not raw:
                out.append(None)
                continue
            try:
                d = json.loads(raw)
            except Exception:
                d = None
            out.append(d if isinstance(d, dict) else None)
    return out


def file_turns(rel, lines, seen):
    """Human turns of one file: list of dicts (prompt_line, uuid, end_line, session_id, text)."""
    prompts = []
    for i, d in enumerate(lines):
        if not d or d.get('type') != 'user':
            continue
        kind, text = classify_user(d)
        if kind != 'prompt':
            continue
        uid = d.get('uuid') or ('%s:%d' % (rel, i + 1))
        if uid in seen:
            continue
        seen.add(uid)
        prompts.append((i + 1, uid, d.get('sessionId') or '', text))
    turns = []
    for k, (ln, uid, sid, text) in enumerate(prompts):
        end = prompts[k + 1][0] - 1 if k + 1 < len(prompts) else len(lines)
        turns.append({'prompt_line': ln, 'uuid': uid, 'end_line': end, 'session_id': sid, 'text': text})
    return turns


def result_text(b):
    c = b.get('content')
    if isinstance(c, str):
        return c
    if isinstance(c, list):
        parts = []
        for x in c:
            if isinstance(x, dict):
                if x.get('type') == 'text':
                    parts.append(x.get('text') or '')
                elif x.get('type') == 'image':
                    parts.append('[image]')
        return '\n'.join(parts)
    return ''


def turn_signals(lines, t):
    """Interest signals of one turn: tool errors, denials, interruptions, reasoning."""
    s = Counter()
    think = 0
    for d in lines[t['prompt_line']:t['end_line']]:
        if not d or d.get('isSidechain'):
            continue
        typ = d.get('type')
        msg = d.get('message') if isinstance(d.get('message'), dict) else {}
        if typ == 'assistant':
            for b in blocks_of(msg.get('content')):
                if b.get('type') == 'thinking':
                    th = b.get('thinking') or ''
                    think += len(th)
                    if WEIGH_RE.search(th):
                        s['weigh'] += 1
                elif b.get('type') == 'text' and WEIGH_RE.search(b.get('text') or ''):
                    s['weigh'] += 1
        elif typ == 'user':
            for b in blocks_of(msg.get('content')):
                if b.get('type') == 'tool_result':
                    rt = result_text(b)
                    if rt.startswith(DENIAL_PREFIXES):
                        s['denial'] += 1
                    elif INTERRUPT_MARK in rt[:300]:
                        s['interrupt'] += 1
                    elif b.get('is_error') or FAIL_RE.search(rt[:3000]):
                        s['error'] += 1
                elif b.get('type') == 'text' and (b.get('text') or '').startswith(INTERRUPT_MARK):
                    s['interrupt'] += 1
    if think >= 1500:
        s['long_think'] += 1
    return s


# ---------------------------------------------------------------------------------------------
# Selection
# ---------------------------------------------------------------------------------------------
def scan_corpus():
    """All sessions (main files with at least one turn): list of dicts."""
    seen = set()
    sessions = []
    for rel in main_files():
        lines = load_lines(rel)
        turns = file_turns(rel, lines, seen)
        if not turns:
            continue
        score = 0.0
        sig_total = Counter()
        for t in turns:
            sg = turn_signals(lines, t)
            sig_total.update({k: 1 for k, v in sg.items() if v})
            score += (2.0 * bool(sg['denial'] or sg['interrupt']) + 1.0 * bool(sg['error'])
                      + 1.0 * bool(sg['weigh'] or sg['long_think']))
            t['sig'] = dict(sg)
        han = sum(1 for t in turns if HAN.search(t['text']) and not KANA_HANGUL.search(t['text']))
        sessions.append({'file': rel, 'repo': repo_of(rel), 'turns': turns, 'n': len(turns),
                         'score': score / len(turns), 'sig': sig_total, 'han': han})
    return sessions


def select(verbose=True):
    sessions = scan_corpus()
    by_repo = defaultdict(list)
    for s in sessions:
        by_repo[s['repo']].append(s)
    # Chinese-prompt repos: most prompts contain Han characters (and no kana/hangul)
    chinese = set()
    for r, ss in by_repo.items():
        n = sum(s['n'] for s in ss)
        h = sum(s['han'] for s in ss)
        if h / n > 0.5:
            chinese.add(r)
    avail = {r: sum(s['n'] for s in ss) for r, ss in by_repo.items()}
    zh_budget = int(CHINESE_SHARE * TARGET_TOTAL)

    def knapsack(ss, cap):
        """Whole sessions filling at most cap turns, maximising sum n*(1+score): fills the quota and
        prefers sessions dense in errors, denials/interruptions and weighing of options."""
        best = {0: (0.0, ())}
        for idx, s in enumerate(ss):
            for used, (val, pick) in list(best.items()):
                u = used + s['n']
                if u > cap:
                    continue
                v = val + s['n'] * (1.0 + s['score'])
                if u not in best or v > best[u][0] + 1e-9:
                    best[u] = (v, pick + (idx,))
        # most turns first, then value
        u = max(best, key=lambda x: (x, best[x][0]))
        return u, [ss[i] for i in best[u][1]]

    def plan(level):
        caps = {r: int(min(avail[r], level, REPO_CAP)) for r in by_repo}
        picks = {}
        for r in sorted(by_repo):
            ss = sorted(by_repo[r], key=lambda s: s['file'])
            big = [s for s in ss if s['n'] > REPO_CAP]
            small = [s for s in ss if s['n'] <= REPO_CAP]
            u, chosen_ss = knapsack(small, caps[r])
            picks[r] = [(s, s['n']) for s in chosen_ss]
            if u < caps[r] - 20 and big:   # one session alone exceeds the cap: its first N turns
                b = max(big, key=lambda s: s['score'])
                picks[r].append((b, caps[r] - u))
        return picks

    def count(picks, only=None):
        return sum(n for r, ps in picks.items() if only is None or r in only for _, n in ps)

    # raise the per-repo level until the total reaches the target (whole sessions, so totals jump)
    level = 1
    picks = plan(level)
    while level < REPO_CAP and count(picks) < TARGET_TOTAL - 10:
        level += 1
        picks = plan(level)
    # keep Chinese-prompt repos within their share: lower their level until it fits
    zh_level = level
    while count(picks, chinese) > zh_budget and zh_level > 1:
        zh_level -= 1
        zp = plan(zh_level)
        for r in chinese:
            picks[r] = zp[r]
    chosen = {s['file']: n for r, ps in picks.items() for s, n in ps}
    taken = Counter({r: sum(n for _, n in ps) for r, ps in picks.items()})
    quota = {r: int(min(avail[r], level if r not in chinese else zh_level, REPO_CAP)) for r in by_repo}

    def total():
        return sum(taken.values())

    def zh_total():
        return sum(taken[r] for r in chinese)

    # write turns.jsonl
    rows = []
    for s in sorted(sessions, key=lambda s: (s['repo'], s['file'])):
        if s['file'] not in chosen:
            continue
        for t in s['turns'][:chosen[s['file']]]:
            rows.append({'repo': s['repo'], 'file': s['file'], 'prompt_line': t['prompt_line'],
                         'uuid': t['uuid'], 'end_line': t['end_line'], 'session_id': t['session_id']})
    for k, row in enumerate(rows, 1):
        row_id = 't%04d' % k
        rows[k - 1] = dict([('id', row_id)] + list(row.items()))
    with open(os.path.join(HERE, 'turns.jsonl'), 'w', encoding='utf-8') as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + '\n')

    # report
    rep = []
    rep.append('sessions with turns: %d, turns available: %d' % (len(sessions), sum(s['n'] for s in sessions)))
    rep.append('chinese-prompt repos: ' + ', '.join(sorted(chinese)))
    rep.append('%-45s %6s %6s %6s %8s %8s %s' % ('repo', 'avail', 'quota', 'taken', 'sess', 'of', 'zh'))
    for r in sorted(by_repo):
        ns = sum(1 for s in by_repo[r] if s['file'] in chosen)
        rep.append('%-45s %6d %6d %6d %8d %8d %s' % (r, avail[r], quota[r], taken[r], ns, len(by_repo[r]),
                                                    'zh' if r in chinese else ''))
    rep.append('total taken: %d (chinese %d = %.1f%%), repos used: %d' % (
        total(), zh_total(), 100.0 * zh_total() / max(1, total()), sum(1 for r in taken if taken[r])))
    cut = [f for f, n in chosen.items() if n < next(s['n'] for s in sessions if s['file'] == f)]
    rep.append('sessions cut to their first N turns: %s' % (cut or 'none'))
    sig = Counter()
    for s in sessions:
        if s['file'] in chosen:
            for t in s['turns'][:chosen[s['file']]]:
                sig.update({k: 1 for k, v in t['sig'].items() if v})
    rep.append('selected turns with signal (heuristic): %s' % dict(sig))
    txt = '\n'.join(rep)
    with open(os.path.join(HERE, 'selection_report.txt'), 'w', encoding='utf-8') as f:
        f.write(txt + '\n')
    if verbose:
        print(txt)
    return rows


# ---------------------------------------------------------------------------------------------
# Rendering
# ---------------------------------------------------------------------------------------------
def one_line(s):
    return re.sub(r'\s*\n\s*', ' ⏎ ', (s or '').strip())


def clip(s, n, tail_share=0.3):
    """At most ~n chars: head and tail kept, the middle replaced by a marker."""
    s = (s or '').strip()
    if len(s) <= n:
        return s
    tail = int(n * tail_share)
    head = n - tail
    mark = ' […%d chars…] ' % (len(s) - head - tail)
    return s[:head].rstrip() + mark + (s[-tail:].lstrip() if tail else '')


def clip_head(s, n):
    s = (s or '').strip()
    return s if len(s) <= n else s[:n].rstrip() + ' […+%d]' % (len(s) - n)


def indent(s):
    s = re.sub(r'\n{3,}', '\n\n', s)
    return s.replace('\n', '\n      ')


def tool_input(name, inp):
    if not isinstance(inp, dict):
        return clip_head(one_line(str(inp)), 200)
    if name == 'AskUserQuestion':
        qs = []
        for q in inp.get('questions') or []:
            if isinstance(q, dict):
                opts = ' / '.join(str(o.get('label')) for o in q.get('options') or [] if isinstance(o, dict))
                qs.append('%s [%s]' % (q.get('question'), opts))
        return clip(one_line(' | '.join(qs)), 400)
    if name in ('TodoWrite',):
        todos = inp.get('todos') or []
        cur = [t.get('content') for t in todos if isinstance(t, dict) and t.get('status') == 'in_progress']
        return '%d todos; in progress: %s' % (len(todos), clip_head(one_line('; '.join(map(str, cur))), 150))
    if name in ('Task', 'Agent'):
        return clip_head(one_line('[%s] %s' % (inp.get('subagent_type', ''), inp.get('description') or
                                               inp.get('prompt') or '')), 200)
    parts = []
    if 'command' in inp:
        parts.append('$ ' + str(inp['command']))
        if inp.get('description'):
            parts.append('(' + str(inp['description']) + ')')
    for k in ('file_path', 'notebook_path', 'pattern', 'path', 'url', 'query', 'skill', 'args'):
        if k in inp and inp[k] not in (None, ''):
            parts.append('%s=%s' % (k, inp[k]) if k not in ('file_path', 'notebook_path') else str(inp[k]))
    if name in ('Edit', 'MultiEdit') and inp.get('replace_all'):
        parts.append('replace_all')
    if not parts:
        if inp.get('description'):
            parts.append(str(inp['description']))
        else:
            parts.append(json.dumps(inp, ensure_ascii=False))
    return clip_head(one_line(' '.join(parts)), 200)


def plumbing_text(s):
    m = re.search(r'<command-name>(.*?)</command-name>', s, re.S)
    if m:
        a = re.search(r'<command-args>(.*?)</command-args>', s, re.S)
        return 'CMD ' + clip_head(one_line(m.group(1) + (' ' + a.group(1) if a and a.group(1) else '')), 200)
    m = re.search(r'<local-command-stdout>(.*?)</local-command-stdout>', s, re.S)
    if m:
        return 'CMD-OUT ' + clip_head(one_line(m.group(1)), 120)
    m = re.search(r'<bash-input>(.*?)</bash-input>', s, re.S)
    if m:
        return 'BASH-MODE $ ' + clip_head(one_line(m.group(1)), 200)
    m = re.search(r'<bash-(stdout|stderr)>(.*?)</bash-\1>', s, re.S)
    if m:
        return 'BASH-MODE-OUT ' + clip_head(one_line(m.group(2)), 120)
    if s.startswith('<task-notification>') or s.startswith('<bash-notification>'):
        st = re.search(r'<status>(.*?)</status>', s)
        sm = re.search(r'<summary>(.*?)</summary>', s, re.S)
        return 'TASK-NOTICE %s %s' % (st.group(1) if st else '', clip_head(one_line(sm.group(1) if sm else ''), 120))
    if s.startswith('Caveat: The messages below'):
        return None
    return 'PLUMBING ' + clip_head(one_line(s), 200)


class Item:
    __slots__ = ('line', 'kind', 'text', 'prio')

    def __init__(self, line, kind, text, prio=0):
        self.line, self.kind, self.text, self.prio = line, kind, text, prio

    def render(self):
        return 'L%d %s%s' % (self.line, self.kind, (': ' + self.text) if self.text else '')


def result_items(ln, b, d, tool_names):
    rt = result_text(b)
    name = tool_names.get(b.get('tool_use_id'), '?')
    if rt.startswith(DENIAL_PREFIXES):
        m = re.search(r'(?:the user said:|reason for the rejection:)\s*(.*)', rt, re.S)
        reason = clip(m.group(1), 600) if m else ''
        return [Item(ln, 'DENIED', '[%s] %s' % (name, ('user said: ' + indent(reason)) if reason
                                               else clip_head(one_line(rt), 110)), 3)]
    if INTERRUPT_MARK in rt[:300] and not b.get('is_error'):
        return [Item(ln, 'INTERRUPT (tool)', clip_head(one_line(rt), 200), 3)]
    if name == 'AskUserQuestion' or rt.startswith('User has answered'):
        return [Item(ln, 'USER-ANSWER', clip(one_line(rt), 400), 3)]
    if name == 'ExitPlanMode':
        return [Item(ln, 'PLAN-RESULT', clip(one_line(rt), 400), 3)]
    tur = d.get('toolUseResult')
    mod = isinstance(tur, dict) and tur.get('userModified')
    if b.get('is_error'):
        if INTERRUPT_MARK in rt[:300]:
            return [Item(ln, 'ERR+INTERRUPT', clip(one_line(rt), 400, 0.4), 3)]
        return [Item(ln, 'ERR', '[%s] %s' % (name, clip(one_line(rt), 400, 0.4)), 3)]
    if name not in NO_TEXT_FAIL_TOOLS and FAIL_RE.search(rt[:3000]):
        return [Item(ln, 'ERR?', '[%s, no is_error] %s' % (name, clip(one_line(rt), 400, 0.4)), 3)]
    it = Item(ln, 'OK', clip_head(one_line(rt), 120), 0)
    if mod:
        it.kind, it.prio = 'OK (USER MODIFIED the proposed edit before accepting)', 3
    return [it]


def render_line(ln, d, tool_names, seen_uuid_prompts, queued_later):
    """Items for one physical line of a turn."""
    if not d or d.get('isSidechain'):
        return []
    typ = d.get('type')
    if typ in ('progress', 'file-history-snapshot', 'summary', 'saved_hook_context', 'last-prompt',
               'permission-mode', 'ai-title', 'custom-title', 'agent-name', 'pr-link'):
        return []
    if typ == 'queue-operation':
        op = d.get('operation')
        c = d.get('content')
        if isinstance(c, list):
            c = text_of(c)[0]
        if op == 'enqueue' and isinstance(c, str) and c.strip():
            c = c.strip()
            if c.startswith('{"task_id"') or c.startswith('<task-notification') or c.startswith('<bash-notif'):
                return []
            note = queued_later.get(ln)
            return [Item(ln, 'QUEUED (typed while the agent worked%s)' % (
                '; later sent as prompt L%d' % note if note else ''), clip(one_line(c), 500), 3)]
        return []
    if typ == 'system':
        st = d.get('subtype')
        if st == 'compact_boundary':
            cm = d.get('compactMetadata') or {}
            return [Item(ln, '=== COMPACTION (%s, preTokens %s) ===' % (cm.get('trigger'), cm.get('preTokens')), '', 3)]
        if st == 'microcompact_boundary':
            return [Item(ln, 'MICROCOMPACT (old tool outputs cleared)', '', 1)]
        if st == 'api_error':
            return [Item(ln, 'API-ERROR (retrying)', clip_head(one_line(json.dumps(d.get('error'))), 100), 1)]
        if st == 'local_command':
            p = plumbing_text(d.get('content') or '')
            return [Item(ln, p, '', 1)] if p else []
        if st == 'stop_hook_summary' and (d.get('hookErrors') or d.get('preventedContinuation')):
            return [Item(ln, 'STOP-HOOK', clip_head(one_line(str(d.get('stopReason') or d.get('hookErrors'))), 200), 2)]
        if st == 'informational' and d.get('content'):
            return [Item(ln, 'INFO', clip_head(one_line(d.get('content')), 150), 0)]
        return []
    if typ == 'attachment':
        a = d.get('attachment') or {}
        at = a.get('type')
        if at == 'queued_command':
            p = a.get('prompt')
            if isinstance(p, list):
                p = text_of(p)[0]
            p = (p or '').strip()
            if not p or p.startswith('<task-notification') or p.startswith('<bash-notif'):
                return []
            return [Item(ln, 'QUEUED (typed while the agent worked, injected mid-turn)', clip(one_line(p), 500), 3)]
        if at in ('hook_blocking_error', 'hook_cancelled'):
            return [Item(ln, 'HOOK ' + at, clip_head(one_line(json.dumps(a, ensure_ascii=False)), 200), 2)]
        if at in ('plan_mode', 'plan_mode_exit', 'plan_mode_reentry', 'auto_mode', 'auto_mode_exit'):
            return [Item(ln, at.upper().replace('_', ' '), '', 0)]
        if at == 'edited_text_file':
            return [Item(ln, 'FILE CHANGED outside the agent', str(a.get('filename')), 1)]
        return []
    msg = d.get('message') if isinstance(d.get('message'), dict) else {}
    if typ == 'assistant':
        items = []
        for b in blocks_of(msg.get('content')):
            bt = b.get('type')
            if bt == 'text':
                t = (b.get('text') or '').strip()
                if not t:
                    continue
                if d.get('isApiErrorMessage') or t.startswith('API Error'):
                    items.append(Item(ln, 'API-ERROR', clip_head(one_line(t), 150), 1))
                else:
                    items.append(Item(ln, 'A', t, 2))   # clipped later (first/last text get more room)
            elif bt == 'thinking':
                t = (b.get('thinking') or '').strip()
                if t:
                    items.append(Item(ln, 'THINK', indent(clip(t, 500)), 1))
            elif bt == 'tool_use':
                name = b.get('name') or '?'
                tool_names[b.get('id')] = name
                inp = b.get('input')
                if name == 'ExitPlanMode' and isinstance(inp, dict) and inp.get('plan'):
                    items.append(Item(ln, 'TOOL ExitPlanMode (plan)', indent(clip(inp['plan'], 600)), 2))
                else:
                    items.append(Item(ln, 'TOOL ' + name, tool_input(name, inp), 0))
        return items
    if typ == 'user':
        kind, text = classify_user(d)
        if kind == 'sidechain':
            return []
        if kind == 'tool_result':
            items = []
            for b in blocks_of(msg.get('content')):
                if b.get('type') == 'tool_result':
                    items += result_items(ln, b, d, tool_names)
                elif b.get('type') == 'text' and (b.get('text') or '').strip():
                    items.append(Item(ln, 'USER-TEXT (beside a tool result)', clip(one_line(b['text']), 400), 3))
            return items
        if kind == 'meta':
            if text.startswith('Caveat: The messages below'):
                return []
            return [Item(ln, 'META (injected, not typed)', clip_head(one_line(text), 100), 0)]
        if kind == 'compact':
            return [Item(ln, 'COMPACT-SUMMARY (injected, %d chars)' % len(text), clip_head(one_line(text), 100), 1)]
        if kind == 'interrupt':
            return [Item(ln, 'INTERRUPT', clip_head(one_line(text), 100), 3)]
        if kind == 'plumbing':
            if text.startswith('Operation stopped by hook'):
                return [Item(ln, 'HOOK-STOP', clip_head(one_line(text), 200), 2)]
            p = plumbing_text(text)
            return [Item(ln, p, '', 1)] if p else []
        if kind == 'trivial':
            return [Item(ln, 'USER (assent, not a prompt)', clip_head(one_line(text), 80), 3)]
        if kind == 'prompt':   # a resumed duplicate of an already counted prompt
            return [Item(ln, 'USER (resumed duplicate of an earlier prompt)', clip_head(one_line(text), 200), 1)]
        return []
    return []


def last_assistant_text(lines, before, stop):
    """(line, text) of the last main-chain assistant text in lines[stop:before] (1-based lines)."""
    for i in range(before - 1, stop - 1, -1):
        d = lines[i - 1]
        if not d or d.get('type') != 'assistant' or d.get('isSidechain') or d.get('isApiErrorMessage'):
            continue
        msg = d.get('message') if isinstance(d.get('message'), dict) else {}
        texts = [(b.get('text') or '').strip() for b in blocks_of(msg.get('content')) if b.get('type') == 'text']
        texts = [t for t in texts if t]
        if texts:
            return i, texts[-1]
    return None, ''


def prev_ending(lines, start, end):
    """How the lines start..end (1-based, inclusive) ended: list of (line, what) of the final events."""
    events = []
    for i in range(start, end + 1):
        d = lines[i - 1]
        if not d or d.get('isSidechain'):
            continue
        typ = d.get('type')
        msg = d.get('message') if isinstance(d.get('message'), dict) else {}
        if typ == 'assistant':
            events.append((i, 'assistant'))
        elif typ == 'user':
            kind, text = classify_user(d)
            if kind == 'interrupt':
                events.append((i, 'INTERRUPTION'))
            elif kind == 'tool_result':
                for b in blocks_of(msg.get('content')):
                    if b.get('type') == 'tool_result':
                        rt = result_text(b)
                        if rt.startswith(DENIAL_PREFIXES):
                            events.append((i, 'DENIAL'))
                        elif INTERRUPT_MARK in rt[:300]:
                            events.append((i, 'INTERRUPTION (tool)'))
                        else:
                            events.append((i, 'result'))
            elif kind in ('trivial',):
                events.append((i, 'user assent'))
    tail = []
    for ev in reversed(events):
        if ev[1] in ('assistant', 'result', 'user assent'):
            break
        tail.append(ev)
    return list(reversed(tail))


def render_turn(row, lines, file_prompts):
    """The dump text of one turn."""
    pl, el = row['prompt_line'], row['end_line']
    d0 = lines[pl - 1]
    msg = d0.get('message') or {}
    raw_text, img, _ = text_of(msg.get('content'))
    ptext, notes = strip_wrappers(raw_text)
    head = []
    extra = []
    if img:
        extra.append('[image attached]')
    extra += ['[%s]' % n for n in notes]
    pt = clip(ptext, 1500, 0.3) if ptext else ''
    head.append('PROMPT L%d%s:\n      %s' % (pl, (' ' + ' '.join(extra)) if extra else '', indent(pt) if pt else '(no text)'))
    # previous turn in this file
    k = file_prompts.index(pl)
    prev_start = file_prompts[k - 1] if k > 0 else 1
    pln, ptxt = last_assistant_text(lines, pl, 1)
    if pln:
        head.append('PREVIOUS ASSISTANT TEXT (L%d%s): %s' % (
            pln, '' if pln >= prev_start else ', before the previous prompt', clip(one_line(ptxt), 400, 0.5)))
    else:
        head.append('PREVIOUS ASSISTANT TEXT: (none)' + (' — first turn of the file' if k == 0 else ''))
    if k == 0:
        head.append('PREVIOUS TURN: none in this file (first turn)')
    else:
        ev = prev_ending(lines, prev_start, pl - 1)
        if ev:
            prev_prompt = text_of((lines[prev_start - 1].get('message') or {}).get('content'))[0]
            head.append('PREVIOUS TURN ENDED WITH: %s; previous prompt (L%d) was: %s' % (
                ' + '.join('%s (L%d)' % (w, i) for i, w in ev), prev_start,
                clip_head(one_line(strip_wrappers(prev_prompt)[0]), 200)))
        else:
            head.append('PREVIOUS TURN ENDED: normally (no interruption or denial at its end)')
    # items
    tool_names = {}
    # tool ids used in this turn may be defined just before the prompt line; scan back a little
    for i in range(max(0, pl - 200), pl - 1):
        d = lines[i]
        if d and d.get('type') == 'assistant':
            for b in blocks_of((d.get('message') or {}).get('content')):
                if b.get('type') == 'tool_use':
                    tool_names[b.get('id')] = b.get('name')
    # queued texts that later became prompts
    queued_later = {}
    later_prompts = {}
    for p in file_prompts:
        if p > pl:
            t = text_of((lines[p - 1].get('message') or {}).get('content'))[0]
            later_prompts.setdefault(strip_wrappers(t)[0][:200], p)
    items = []
    for i in range(pl + 1, el + 1):
        d = lines[i - 1]
        if d and d.get('type') == 'queue-operation' and d.get('operation') == 'enqueue':
            c = d.get('content')
            c = text_of(c)[0] if isinstance(c, list) else (c or '')
            if c.strip()[:200] in later_prompts:
                queued_later[i] = later_prompts[c.strip()[:200]]
        items += render_line(i, d, tool_names, None, queued_later)
    # assistant text lengths: first and last text of the turn 1200, others 600
    a_idx = [j for j, it in enumerate(items) if it.kind == 'A']
    for j in a_idx:
        lim = 1200 if j in (a_idx[0], a_idx[-1]) else 600
        items[j].text = indent(clip(items[j].text, lim))
    header = '\n'.join(head)
    body = shorten(items, max(3000, TURN_BUDGET - len(header)))
    return header + '\n' + ('\n'.join(body) if body else '(no further lines in this turn)')


def shorten(items, budget):
    rendered = [it.render() for it in items]
    total = sum(len(r) + 1 for r in rendered)
    if total <= budget:
        return rendered
    n = len(items)
    keep = set(range(min(KEEP_EDGE, n))) | set(range(max(0, n - KEEP_EDGE), n))
    used = sum(len(rendered[j]) + 1 for j in keep)
    # middle: most important items first (errors, denials, interrupts, user text; the call after an
    # error = the retry; assistant text; thinking), in order within a priority
    prio = {}
    for j, it in enumerate(items):
        p = it.prio
        if j > 0 and items[j - 1].kind.startswith('ERR') and it.kind.startswith('TOOL'):
            p = max(p, 2)
        if j + 1 < n and items[j + 1].kind.startswith('ERR') and it.kind.startswith('TOOL'):
            p = max(p, 2)
        prio[j] = p
    gap_cost = 40
    for p in (3, 2, 1):
        for j in range(n):
            if j in keep or prio[j] != p:
                continue
            cost = len(rendered[j]) + 1 + gap_cost
            if used + cost <= budget:
                keep.add(j)
                used += cost
    # if the kept items alone are too long, clip the longest ones
    kept = sorted(keep)
    while used > budget * 1.05:
        j = max(kept, key=lambda x: len(rendered[x]))
        L = len(rendered[j])
        if L <= 200:
            break
        new = clip(rendered[j], max(200, int(L * 0.6)))
        if len(new) >= L:
            break
        used -= L - len(new)
        rendered[j] = new
    out = []
    prev = -1
    for j in kept:
        if j > prev + 1:
            lines_omitted = len({items[x].line for x in range(prev + 1, j)})
            out.append('      ... %d lines omitted (%d items) ...' % (lines_omitted, j - prev - 1))
        out.append(rendered[j])
        prev = j
    if prev < n - 1:
        out.append('      ... %d items omitted ...' % (n - 1 - prev))
    return out


# ---------------------------------------------------------------------------------------------
# Packets
# ---------------------------------------------------------------------------------------------
def rubric_labels_section():
    txt = open(RUBRIC, encoding='utf-8').read()
    m = re.search(r'^## Labels, by precedence\n.*?(?=^## )', txt, re.S | re.M)
    return m.group(0).rstrip() + '\n'


PACKET_INTRO = """# Labelling packet {k} of {n}: {count} turns, {nsess} sessions

Label every turn below with exactly one label. The definitions are those of the triage rubric
(/work/shared/docs/triage-rubric.md); its "Labels, by precedence" section is repeated verbatim here:

{labels}
## Answer format
One JSON line per turn, in packet order, nothing else:
{{"id": "t0123", "label": "routine|user_correction|error_recovery|pivot|design_decision", "why": "one sentence naming the deciding line(s)"}}
Name lines as L<number> (the physical line of the session file shown before each item).

## How to read a turn dump
* `=== TURN t0123 (file:prompt_line) ===` starts a turn; the turn is the prompt line plus every line up to the
  next human prompt. Only the rendered lines are shown; sidechain, progress and snapshot lines are skipped.
* Header: PROMPT (wrappers removed, long prompts clipped in the middle), PREVIOUS ASSISTANT TEXT (what the user
  reacts to), and whether the PREVIOUS TURN ENDED WITH an interruption or denial (rule 2 of user_correction).
* Items: `A` assistant text; `THINK` assistant thinking; `TOOL <name>` a call (key input only); `OK` a tool
  result (first 120 chars); `ERR` an is_error result; `ERR?` a result without is_error whose text looks like a
  failure (exit code, Traceback, "error:", "No such file", "command not found", "fatal:") — may also be a probe
  or a grep hit, judge by context; `DENIED` a tool denial (rule 1); `INTERRUPT` an Esc marker;
  `QUEUED` / `USER-TEXT` / `USER (assent, not a prompt)` / `USER-ANSWER` text the user typed inside the turn
  (rule 4, and answers to AskUserQuestion); `OK (USER MODIFIED ...)` the user edited the proposed change
  before accepting it; `CMD` slash-command plumbing; `META` injected text (skill bodies etc.);
  `=== COMPACTION ===` a context compaction; `API-ERROR` API failures (never error_recovery).
* `[…N chars…]` marks text clipped in the middle; `... N lines omitted ...` marks middle items left out of a
  long turn (errors, denials, interrupts and user text were kept first).

"""


def split_packets(sessions, k):
    """Contiguous split of the sessions (in order) into k packets whose turn counts are as equal as
    possible (minimises the largest deviation from total/k, then the sum of squared deviations)."""
    sizes = [len(s['rows']) for s in sessions]
    m = len(sizes)
    pre = [0]
    for x in sizes:
        pre.append(pre[-1] + x)
    target = pre[-1] / float(k)
    INF = (float('inf'), float('inf'))
    # best[j][i]: cost of putting sessions[:i] into j packets
    best = [[INF] * (m + 1) for _ in range(k + 1)]
    back = [[0] * (m + 1) for _ in range(k + 1)]
    best[0][0] = (0.0, 0.0)
    for j in range(1, k + 1):
        for i in range(1, m + 1):
            for h in range(j - 1, i):
                if best[j - 1][h] == INF:
                    continue
                dev = abs(pre[i] - pre[h] - target)
                c = (max(best[j - 1][h][0], dev), best[j - 1][h][1] + dev * dev)
                if c < best[j][i]:
                    best[j][i] = c
                    back[j][i] = h
    cuts = []
    i = m
    for j in range(k, 0, -1):
        h = back[j][i]
        cuts.append((h, i))
        i = h
    return [sessions[a:b] for a, b in reversed(cuts)]


def dump_all():
    rows = [json.loads(l) for l in open(os.path.join(HERE, 'turns.jsonl'), encoding='utf-8')]
    # all prompts per file (not only the selected ones) for "previous turn" context
    seen = set()
    prompts_of = {}
    needed = {r['file'] for r in rows}
    cache = {}
    for rel in main_files():
        lines = load_lines(rel) if rel in needed else None
        if lines is None:
            # still feed the resumed-uuid set in the same order as select()
            lines_tmp = load_lines(rel)
            file_turns(rel, lines_tmp, seen)
            continue
        ts = file_turns(rel, lines, seen)
        prompts_of[rel] = [t['prompt_line'] for t in ts]
        cache[rel] = lines
    dumps = []
    for r in rows:
        lines = cache[r['file']]
        assert r['prompt_line'] in prompts_of[r['file']], r
        txt = render_turn(r, lines, prompts_of[r['file']])
        dumps.append({'id': r['id'], 'text': txt})
    with open(os.path.join(HERE, 'dumps.jsonl'), 'w', encoding='utf-8') as f:
        for dmp in dumps:
            f.write(json.dumps(dmp, ensure_ascii=False) + '\n')
    # sessions in order, split into packets of about equal turn count
    sessions = []
    for r, dmp in zip(rows, dumps):
        if not sessions or sessions[-1]['file'] != r['file']:
            sessions.append({'file': r['file'], 'repo': r['repo'], 'sid': r['session_id'], 'rows': []})
        sessions[-1]['rows'].append((r, dmp['text']))
    packets = split_packets(sessions, N_PACKETS)
    labels = rubric_labels_section()
    for k, ss in enumerate(packets, 1):
        count = sum(len(s['rows']) for s in ss)
        out = [PACKET_INTRO.format(k=k, n=N_PACKETS, count=count, nsess=len(ss), labels=labels)]
        for s in ss:
            sids = sorted({r['session_id'] for r, _ in s['rows']})
            out.append('#' * 100)
            out.append('SESSION repo=%s file=%s session=%s (%d turns)' % (s['repo'], s['file'], ','.join(sids), len(s['rows'])))
            out.append('#' * 100 + '\n')
            for r, txt in s['rows']:
                out.append('=== TURN %s (%s:%d) ===' % (r['id'], r['file'], r['prompt_line']))
                out.append(txt)
                out.append('')
        with open(os.path.join(HERE, 'packet-%d.txt' % k), 'w', encoding='utf-8') as f:
            f.write('\n'.join(out))
    sizes = [len(d['text']) for d in dumps]
    print('dumped %d turns; dump chars avg %.0f, median %d, max %d' % (
        len(dumps), sum(sizes) / len(sizes), sorted(sizes)[len(sizes) // 2], max(sizes)))


def check():
    rows = [json.loads(l) for l in open(os.path.join(HERE, 'turns.jsonl'), encoding='utf-8')]
    ids = [r['id'] for r in rows]
    assert len(ids) == len(set(ids))
    assert len({(r['file'], r['prompt_line']) for r in rows}) == len(rows)
    assert len({r['uuid'] for r in rows}) == len(rows), 'duplicate uuid'
    where = defaultdict(list)
    for k in range(1, N_PACKETS + 1):
        txt = open(os.path.join(HERE, 'packet-%d.txt' % k), encoding='utf-8').read()
        found = re.findall(r'^=== TURN (t\d{4}) \((.+?):(\d+)\) ===$', txt, re.M)
        by_repo = Counter()
        rowmap = {r['id']: r for r in rows}
        for tid, f, ln in found:
            where[tid].append(k)
            r = rowmap[tid]
            assert r['file'] == f and r['prompt_line'] == int(ln), (tid, f, ln)
            by_repo[r['repo']] += 1
        print('packet-%d: %4d turns, %5d KB, %2d repos' % (k, len(found), len(txt.encode()) // 1024, len(by_repo)))
    missing = [i for i in ids if len(where[i]) != 1]
    print('turns not in exactly one packet:', missing or 'none')
    rep = Counter(r['repo'] for r in rows)
    sess = defaultdict(set)
    for r in rows:
        sess[r['repo']].add(r['file'])
    print('%-45s %5s %5s' % ('repo', 'turns', 'sess'))
    for r in sorted(rep):
        print('%-45s %5d %5d' % (r, rep[r], len(sess[r])))
    print('%-45s %5d %5d' % ('TOTAL', len(rows), sum(len(v) for v in sess.values())))


def show(tid):
    for l in open(os.path.join(HERE, 'dumps.jsonl'), encoding='utf-8'):
        d = json.loads(l)
        if d['id'] == tid:
            print(d['text'])


if __name__ == '__main__':
    cmd = sys.argv[1] if len(sys.argv) > 1 else 'all'
    if cmd == 'select':
        select()
    elif cmd == 'dump':
        dump_all()
    elif cmd == 'check':
        check()
    elif cmd == 'show':
        show(sys.argv[2])
    elif cmd == 'all':
        select()
        dump_all()
        check()
    else:
        sys.exit(__doc__)
