"""Round 7 of issue 46: a linear SVM over TF-IDF of the turn's own text, leave-one-repository-out.
usage: text_model.py PARTS ANALYZER C   e.g. prompt,first_reply,assistant,error,tool_use char_wb 0.1
(ANALYZER word: words and bigrams, a CJK character a word; char_wb: character 2-4-grams).
Needs scikit-learn; reads $OUT/turns_text.jsonl (text_turns.py).
"""
import os
OUT = os.environ.get('OUT', '/tmp/triage-study')
import json, sys, numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.svm import LinearSVC
from sklearn.model_selection import LeaveOneGroupOut
from sklearn.metrics import accuracy_score, precision_recall_fscore_support
from scipy.sparse import hstack
rows = [json.loads(l) for l in open(OUT + '/turns_text.jsonl')]
LABELS = ['routine', 'user_correction', 'error_recovery', 'design_decision', 'pivot']
y = np.array([LABELS.index(r['label']) for r in rows])
groups = np.array([r['repo'] for r in rows])
PARTS = sys.argv[1].split(',') if len(sys.argv) > 1 else ['prompt', 'first_reply', 'assistant', 'error', 'tool_use', 'thinking']
ANALYZER = sys.argv[2] if len(sys.argv) > 2 else 'char_wb'
C = float(sys.argv[3]) if len(sys.argv) > 3 else 4.0
def feats(train_idx, test_idx):
    mats_tr, mats_te = [], []
    for p in PARTS:
        docs = [r['parts'][p] for r in rows]
        if ANALYZER == 'word':
            v = TfidfVectorizer(analyzer='word', ngram_range=(1, 2), min_df=2, sublinear_tf=True, max_features=50000, token_pattern=r'(?u)[\u4e00-\u9fff\u3040-\u30ff\uac00-\ud7af]|[^\W\u4e00-\u9fff\u3040-\u30ff\uac00-\ud7af]+')
        else:
            v = TfidfVectorizer(analyzer='char_wb', ngram_range=(2, 4), min_df=3, sublinear_tf=True, max_features=80000)
        tr = v.fit_transform([docs[i] for i in train_idx])
        te = v.transform([docs[i] for i in test_idx])
        mats_tr.append(tr); mats_te.append(te)
    # structural counts
    def struct(i):
        pr = rows[i]['parts']
        return [np.log1p(len(pr[k])) for k in PARTS] + [float(bool(pr['error'])), float('interrupted' in pr['prompt'])]
    s_tr = np.array([struct(i) for i in train_idx]); s_te = np.array([struct(i) for i in test_idx])
    return hstack(mats_tr + [s_tr]).tocsr(), hstack(mats_te + [s_te]).tocsr()
pred = np.zeros(len(rows), dtype=int)
for tr, te in LeaveOneGroupOut().split(rows, y, groups):
    Xtr, Xte = feats(tr, te)
    m = LinearSVC(C=C, class_weight='balanced')
    m.fit(Xtr, y[tr])
    pred[te] = m.predict(Xte)
print(PARTS, ANALYZER, C, 'accuracy %.3f' % accuracy_score(y, pred))
p, r, f, n = precision_recall_fscore_support(y, pred, labels=range(5), zero_division=0)
for i, l in enumerate(LABELS):
    print('  %-16s n=%4d recall %.2f precision %.2f' % (l, n[i], r[i], p[i]))
np.save(OUT + '/pred_%s_%s.npy' % (ANALYZER, '-'.join(PARTS)), pred)
