//! The learned triage: a multinomial logistic regression over a turn's named features
//! ([`features`]), trained on hand-labelled turns of public transcripts ([`train`]).
//!
//! Why a model: phrase lists tuned by hand on the corpus's ~500 turns fitted those turns and
//! nothing else (held-out design-decision recall 0.38). Trained on 2,000 labelled turns, each
//! feature's weight is what the labels say it is worth, and rerunning the training is the
//! whole of tuning (`scripts/train-triage.sh`).
//!
//! The weights are a committed text file (`weights.tsv`, one feature per line) embedded in the
//! binary: inference needs no network, no file and no randomness; the same turn gets the same
//! label on every machine. The rules still run: their signals and their label are features,
//! and their signals remain the evidence a label shows when they agree with it.
//!
//! This module knows nothing of episodes: labels are names. `episode` gathers a turn's
//! [`Facts`] and asks [`Model::decide`].

pub mod features;
pub mod train;

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::LazyLock;

pub use features::{features, Facts, RuleSignal, Source};

/// The committed weights (see `scripts/train-triage.sh`).
const WEIGHTS: &str = include_str!("weights.tsv");

/// The model the binary ships.
pub static MODEL: LazyLock<Model> = LazyLock::new(|| match Model::parse(WEIGHTS) {
    Ok(m) => m,
    Err(e) => {
        // A committed file that does not parse is a build defect (a test reads it); the
        // rules alone still label every turn.
        tracing::error!(error = %e, "the embedded triage model does not parse");
        Model::default()
    }
});

/// Weights of one feature, by label (the order of [`Model::labels`]).
type Row = Box<[f32]>;

/// A multinomial logistic regression over named binary features.
#[derive(Debug, Clone, Default)]
pub struct Model {
    /// Label names, in the order of each feature's weights.
    pub labels: Vec<String>,
    /// Feature name -> weights by label.
    weights: HashMap<Box<str>, Row>,
    /// The same rows by [`features::name_hash`] of their name: what inference looks up (a
    /// hash computed once per feature, no string hashed again).
    by_hash: HashMap64,
    /// Header comments kept when written again (how it was trained, its figures).
    pub notes: Vec<String>,
    /// Labels the model may give (`#! model-labels: ...`); the rules give the others. Empty:
    /// every label.
    pub model_labels: Vec<String>,
    /// `#! rules-stand-at: W`: see [`combine`].
    pub stand: Option<f64>,
}

/// What the weight file says of how its labels combine with the rules' (see [`combine`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Policy {
    /// Indices of the labels the model may give (empty: all).
    pub model_labels: Vec<usize>,
    /// A rule label whose strongest signal weighs at least this stands.
    pub stand: Option<f64>,
}

/// How the model's and the rules' labels combine: the rules' label when it is one the model may
/// not give, else the model's most probable label among those it may give.
///
/// Why: training measures each label by leave-source-out cross-validation, and a label is
/// given to the model only where the model beats the rules on it (`triage_train` chooses, the
/// weight file records it); where the rules are better they keep deciding.
///
/// A rule label backed by a signal of at least `stand` (`#! rules-stand-at:`) stands whatever
/// the model says: such signals are the rubric's own definitions (a denied tool call is a
/// correction; a failed call later made to succeed is a recovery).
pub fn combine(
    policy: &Policy,
    rule_label: usize,
    rule_weight: f64,
    probabilities: &[f64],
) -> usize {
    let model_labels = &policy.model_labels;
    let allowed = |i: usize| model_labels.is_empty() || model_labels.contains(&i);
    if !allowed(rule_label) || policy.stand.is_some_and(|s| rule_weight >= s) {
        return rule_label;
    }
    let mut best: Option<usize> = None;
    for (i, p) in probabilities.iter().enumerate() {
        if allowed(i) && best.is_none_or(|b| *p > probabilities[b]) {
            best = Some(i);
        }
    }
    best.unwrap_or(rule_label)
}

impl PartialEq for Model {
    fn eq(&self, other: &Model) -> bool {
        // `known` follows from `weights`.
        self.labels == other.labels
            && self.weights == other.weights
            && self.notes == other.notes
            && self.model_labels == other.model_labels
            && self.stand == other.stand
    }
}

/// A weight file that cannot be read.
#[derive(Debug, thiserror::Error)]
#[error("triage weights, line {line}: {problem}")]
pub struct ParseError {
    line: usize,
    problem: String,
}

/// A model's decision for one turn.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// Index in [`Model::labels`].
    pub label: usize,
    /// Its probability.
    pub probability: f64,
    /// The features that weighed most for it against the runner-up, strongest first (at most
    /// five, only those pulling its way).
    pub because: Vec<String>,
}

impl Model {
    /// Read a weight file: `#` comments, a `feature<TAB>label...` header, then a line per
    /// feature with one weight per label.
    pub fn parse(text: &str) -> Result<Model, ParseError> {
        let mut model = Model::default();
        for (i, line) in text.lines().enumerate() {
            let err = |problem: String| ParseError {
                line: i + 1,
                problem,
            };
            if let Some(w) = line.strip_prefix("#! rules-stand-at:") {
                let w = w.trim();
                model.stand = Some(w.parse().map_err(|e| err(format!("{w:?}: {e}")))?);
                continue;
            }
            if let Some(labels) = line.strip_prefix("#! model-labels:") {
                model.model_labels = labels.split_whitespace().map(str::to_string).collect();
                continue;
            }
            if let Some(note) = line.strip_prefix('#') {
                model.notes.push(note.trim().to_string());
                continue;
            }
            if line.trim().is_empty() {
                continue;
            }
            let mut cols = line.split('\t');
            let name = cols.next().unwrap_or_default();
            if model.labels.is_empty() {
                if name != "feature" {
                    return Err(err("expected the header `feature<TAB>label...`".into()));
                }
                model.labels = cols.map(str::to_string).collect();
                continue;
            }
            let row = cols
                .map(|c| c.parse::<f32>().map_err(|e| err(format!("{c:?}: {e}"))))
                .collect::<Result<Vec<f32>, _>>()?;
            if row.len() != model.labels.len() {
                return Err(err(format!(
                    "{} weights for {} labels",
                    row.len(),
                    model.labels.len()
                )));
            }
            let row = row.into_boxed_slice();
            model
                .by_hash
                .insert(features::name_hash(&[name]), row.clone());
            model.weights.insert(name.into(), row);
        }
        Ok(model)
    }

    /// The weight file for these weights (features sorted: a retrained model's diff is
    /// readable).
    pub fn to_tsv(&self) -> String {
        let mut out = String::new();
        for n in &self.notes {
            out.push_str("# ");
            out.push_str(n);
            out.push('\n');
        }
        if let Some(w) = self.stand {
            out.push_str(&format!("#! rules-stand-at: {w}\n"));
        }
        if !self.model_labels.is_empty() {
            out.push_str("#! model-labels: ");
            out.push_str(&self.model_labels.join(" "));
            out.push('\n');
        }
        out.push_str("feature");
        for l in &self.labels {
            out.push('\t');
            out.push_str(l);
        }
        out.push('\n');
        let mut names: Vec<&Box<str>> = self.weights.keys().collect();
        names.sort();
        for name in names {
            out.push_str(name);
            for w in self.weights[name].iter() {
                out.push_str(&format!("\t{w:.4}"));
            }
            out.push('\n');
        }
        out
    }

    /// A model from trained weights.
    pub fn new(labels: Vec<String>, weights: Vec<(String, Vec<f32>)>, notes: Vec<String>) -> Model {
        Model {
            by_hash: weights
                .iter()
                .map(|(n, w)| (features::name_hash(&[n]), w.clone().into_boxed_slice()))
                .collect(),
            labels,
            weights: weights
                .into_iter()
                .map(|(n, w)| (n.into_boxed_str(), w.into_boxed_slice()))
                .collect(),
            notes,
            model_labels: Vec::new(),
            stand: None,
        }
    }

    /// The file's [`Policy`].
    pub fn policy(&self) -> Policy {
        Policy {
            model_labels: self
                .model_labels
                .iter()
                .filter_map(|l| self.labels.iter().position(|x| x == l))
                .collect(),
            stand: self.stand,
        }
    }

    /// Whether the model weighs this feature (a turn keeps only such words).
    pub fn knows(&self, feature: &str) -> bool {
        self.weights.contains_key(feature)
    }

    /// Features it weighs.
    pub fn len(&self) -> usize {
        self.weights.len()
    }

    /// Whether it weighs nothing (the rules decide alone).
    pub fn is_empty(&self) -> bool {
        self.weights.is_empty()
    }

    /// Probability of each label for these features (softmax of the summed weights).
    pub fn probabilities<S: AsRef<str>>(&self, features: &[S]) -> Vec<f64> {
        let mut score = vec![0f64; self.labels.len()];
        for f in features {
            if let Some(w) = self.by_hash.get(&features::name_hash(&[f.as_ref()])) {
                for (s, w) in score.iter_mut().zip(w.iter()) {
                    *s += f64::from(*w);
                }
            }
        }
        softmax(&mut score);
        score
    }

    /// The most probable label, its probability and the features that decided it. `None` for
    /// a model with no weights.
    ///
    /// `rule` is the rules' label (an index in [`Model::labels`]) and the weight of its
    /// strongest signal: see [`combine`].
    pub fn decide<S: AsRef<str>>(&self, features: &[S], rule: (usize, f64)) -> Option<Decision> {
        if self.is_empty() {
            return None;
        }
        let p = self.probabilities(features);
        let best = combine(&self.policy(), rule.0, rule.1, &p);
        let second = (0..p.len())
            .filter(|i| *i != best)
            .max_by(|a, b| p[*a].total_cmp(&p[*b]).then(b.cmp(a)))
            .unwrap_or(best);
        let mut pulls: Vec<(f32, &str)> = features
            .iter()
            .filter_map(|f| {
                let w = self.by_hash.get(&features::name_hash(&[f.as_ref()]))?;
                let pull = w[best] - w[second];
                (pull > 0.0 && f.as_ref() != "bias").then_some((pull, f.as_ref()))
            })
            .collect();
        pulls.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
        Some(Decision {
            label: best,
            probability: p[best],
            because: pulls
                .into_iter()
                .take(5)
                .map(|(_, f)| f.to_string())
                .collect(),
        })
    }
}

/// In place: scores to probabilities.
pub(crate) fn softmax(score: &mut [f64]) {
    let max = score.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut sum = 0.0;
    for s in score.iter_mut() {
        *s = (*s - max).exp();
        sum += *s;
    }
    for s in score.iter_mut() {
        *s /= sum;
    }
}

/// A turn's features as the episode builder made them, kept while [`collecting`].
#[derive(Debug, Clone)]
pub struct Collected {
    /// Line of the turn's prompt.
    pub start_line: u64,
    /// Its features.
    pub features: Vec<String>,
    /// The label the rules alone gave it.
    pub rule_label: String,
    /// The weight of the rules' strongest signal for it (0 for routine).
    pub rule_weight: f64,
}

thread_local! {
    static SINK: RefCell<Option<Vec<Collected>>> = const { RefCell::new(None) };
}

/// Run `f` and return, with its result, the features of every turn labelled meanwhile on this
/// thread. Training reads the very features inference uses this way, through the real
/// stages, without a sink threaded through the builder for a tool's sake. While collecting,
/// turns keep every word, not only those the shipped model weighs.
pub fn collecting<R>(f: impl FnOnce() -> R) -> (R, Vec<Collected>) {
    SINK.with(|s| *s.borrow_mut() = Some(Vec::new()));
    let r = f();
    let got = SINK.with(|s| s.borrow_mut().take()).unwrap_or_default();
    (r, got)
}

/// Whether [`collecting`] is on for this thread.
pub fn is_collecting() -> bool {
    SINK.with(|s| s.borrow().is_some())
}

/// Hand a labelled turn's features to [`collecting`] (nothing when it is off).
pub fn collect(c: impl FnOnce() -> Collected) {
    SINK.with(|s| {
        if let Some(v) = s.borrow_mut().as_mut() {
            v.push(c());
        }
    });
}

/// Which word features a turn keeps: those the shipped model weighs, or every one while
/// training collects (decided once per call, not per word).
pub fn keeper() -> impl Fn(u64) -> bool {
    let all = is_collecting();
    let model = &*MODEL;
    move |h| all || model.by_hash.contains_key(&h)
}

/// A hasher for keys that are already hashes ([`features::name_hash`]).
#[derive(Default)]
pub(crate) struct Prehashed(u64);

impl std::hash::Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

type HashMap64 = HashMap<u64, Row, std::hash::BuildHasherDefault<Prehashed>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_weights_parse_and_name_the_five_labels() {
        let m = Model::parse(WEIGHTS).expect("weights.tsv parses");
        let mut labels = m.labels.clone();
        labels.sort();
        assert_eq!(
            labels,
            [
                "design_decision",
                "error_recovery",
                "pivot",
                "routine",
                "user_correction"
            ]
        );
        assert!(m.len() > 50, "{} features", m.len());
    }

    #[test]
    fn a_weight_file_round_trips_and_bad_lines_are_named() {
        let m = Model::new(
            vec!["a".into(), "b".into()],
            vec![
                ("bias".into(), vec![0.5, -0.5]),
                ("p:no".into(), vec![-1.0, 2.0]),
            ],
            vec!["note".into()],
        );
        let again = Model::parse(&m.to_tsv()).expect("parses");
        assert_eq!(again, m);
        let d = m.decide(&["bias", "p:no"], (0, 0.0)).expect("a decision");
        assert_eq!((d.label, d.because), (1, vec!["p:no".to_string()]));
        // Labels the model may not give stay the rules'.
        let mut only_a = m.clone();
        only_a.model_labels = vec!["a".into()];
        let again = Model::parse(&only_a.to_tsv()).expect("parses");
        assert_eq!(again.model_labels, ["a"]);
        assert_eq!(
            again.decide(&["bias", "p:no"], (0, 0.0)).map(|d| d.label),
            Some(0)
        );
        assert_eq!(again.decide(&["bias"], (1, 0.0)).map(|d| d.label), Some(1));
        // A rule label backed by a strong enough signal stands.
        let mut standing = m;
        standing.stand = Some(0.9);
        let again = Model::parse(&standing.to_tsv()).expect("parses");
        assert_eq!(
            again.decide(&["bias", "p:no"], (0, 0.95)).map(|d| d.label),
            Some(0)
        );
        assert_eq!(
            again.decide(&["bias", "p:no"], (0, 0.85)).map(|d| d.label),
            Some(1)
        );
        let e = Model::parse("feature\ta\tb\nbias\t1\n").expect_err("short row");
        assert!(e.to_string().contains("line 2"), "{e}");
    }
}
