"""Round 7 of issue 46: the shipped model's features (triage_train --dump $OUT/dump.jsonl) with the
previous and/or next labelled turn's features of the same file added, logistic regression,
leave-one-source-out.  usage: ctx_model.py none|prev|next|prevnext   (needs scikit-learn)
"""
import os
OUT = os.environ.get('OUT', '/tmp/triage-study')
import json, sys, numpy as np
from collections import defaultdict
from sklearn.feature_extraction import DictVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import LeaveOneGroupOut
from sklearn.metrics import accuracy_score, precision_recall_fscore_support
rows = [json.loads(l) for l in open(OUT + '/dump.jsonl')]
LABELS = ['routine', 'user_correction', 'error_recovery', 'design_decision', 'pivot']
mode = sys.argv[1] if len(sys.argv) > 1 else 'none'
byfile = defaultdict(list)
for i, r in enumerate(rows): byfile[r['file']].append(i)
prev, nxt = {}, {}
for f, idx in byfile.items():
    idx.sort(key=lambda i: rows[i]['line'])
    for a, b in zip(idx, idx[1:]): prev[b] = a; nxt[a] = b
def fd(i):
    d = {f: 1 for f in rows[i]['features']}
    if 'prev' in mode and i in prev:
        for f in rows[prev[i]]['features']:
            if not f.startswith(('a2:', 'p2:')): d['P|' + f] = 1
    if 'next' in mode and i in nxt:
        for f in rows[nxt[i]]['features']:
            if f.split(':')[0] not in ('a','a2','p2','r','r2','e','e2','t'): d['N|' + f] = 1
    return d
D = [fd(i) for i in range(len(rows))]
y = np.array([LABELS.index(r['label']) for r in rows]); g = np.array([r['source'] for r in rows])
pred = np.zeros(len(rows), dtype=int)
for tr, te in LeaveOneGroupOut().split(D, y, g):
    v = DictVectorizer(); Xtr = v.fit_transform([D[i] for i in tr]); Xte = v.transform([D[i] for i in te])
    keep = np.asarray((Xtr > 0).sum(0)).ravel() >= 5
    m = LogisticRegression(C=1.0, class_weight='balanced', max_iter=3000).fit(Xtr[:, keep], y[tr])
    pred[te] = m.predict(Xte[:, keep])
ext = np.array(['/' in r['source'] and not r['source'].startswith(('4thehalibit','iansherr','Eduardodmb','obra','Jason','gouchan','chiphuyen','thedotmack','KaceyBui','entireio/cli')) for r in rows])
print(mode, 'accuracy all %.4f' % accuracy_score(y, pred), 'external23 %.4f' % accuracy_score(y[ext], pred[ext]), 'n_ext', ext.sum())
p, r, f, n = precision_recall_fscore_support(y, pred, labels=range(5), zero_division=0)
for i, l in enumerate(LABELS): print('  %-16s n=%4d recall %.2f precision %.2f' % (l, n[i], r[i], p[i]))
np.save(OUT + '/ctxpred_%s.npy' % mode, pred)
