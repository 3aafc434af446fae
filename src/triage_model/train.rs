//! Training and cross-validation of the triage [`Model`]: multinomial logistic regression,
//! fitted by full-batch gradient descent (Adam) with an L2 penalty. Deterministic: no
//! sampling, samples in the given order, so the same labels give the same weight file.
//!
//! Why written here rather than taken from a crate: the whole fit is forty lines over sparse
//! binary features, and the crates that offer it (linfa, smartcore) bring dense matrix stacks
//! that would double the build for a tool run a few times a year.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::{softmax, Model};

/// One labelled turn.
#[derive(Debug, Clone)]
pub struct Sample {
    /// Its features.
    pub features: Vec<String>,
    /// Index of its label.
    pub label: usize,
    /// The source it came from (a repository): cross-validation never splits one.
    pub group: String,
}

/// How a model is fitted.
#[derive(Debug, Clone, Copy)]
pub struct Params {
    /// L2 penalty per weight, against the mean log-loss.
    pub l2: f64,
    /// Passes over the samples.
    pub epochs: usize,
    /// Adam's step.
    pub rate: f64,
    /// A feature seen in fewer training samples is dropped (it would fit one turn).
    pub min_count: usize,
    /// A feature whose weights all lie within this of the label's mean is left out of the
    /// model (it would make the file large and decide nothing).
    pub prune: f32,
    /// Samples weigh `(n / n_label)^balance`: 0 leaves rare labels rare, 1 weighs every
    /// label alike.
    pub balance: f64,
}

impl Default for Params {
    fn default() -> Params {
        // Chosen by `triage_train --grid` (leave-source-out accuracy and macro F1 over
        // l2 1e-4..1e-2, balance 0/0.5/1): the figures barely move across it (0.66-0.68).
        Params {
            l2: 3e-3,
            epochs: 150,
            rate: 0.05,
            min_count: 5,
            balance: 1.0,
            prune: 0.05,
        }
    }
}

/// Fit a model on `samples` (labels named by `labels`).
pub fn fit(samples: &[&Sample], labels: &[String], p: &Params) -> Model {
    let k = labels.len();
    // Vocabulary: features in at least `min_count` samples, in name order.
    let mut count: BTreeMap<&str, usize> = BTreeMap::new();
    for s in samples {
        for f in &s.features {
            *count.entry(f.as_str()).or_default() += 1;
        }
    }
    let names: Vec<&str> = count
        .iter()
        .filter(|(n, c)| **c >= p.min_count || **n == "bias")
        .map(|(n, _)| *n)
        .collect();
    let index: HashMap<&str, usize> = names.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let rows: Vec<Vec<usize>> = samples
        .iter()
        .map(|s| {
            s.features
                .iter()
                .filter_map(|f| index.get(f.as_str()).copied())
                .collect()
        })
        .collect();
    let mut per_label = vec![0usize; k];
    for s in samples {
        per_label[s.label] += 1;
    }
    let n = samples.len().max(1) as f64;
    let weight_of: Vec<f64> = per_label
        .iter()
        .map(|c| (n / (*c).max(1) as f64 / k as f64).powf(p.balance))
        .collect();
    let total_weight: f64 = samples.iter().map(|s| weight_of[s.label]).sum();

    let d = names.len();
    let mut w = vec![0f64; d * k];
    let (mut m1, mut m2) = (vec![0f64; d * k], vec![0f64; d * k]);
    let (b1, b2, eps) = (0.9f64, 0.999f64, 1e-8);
    let mut grad = vec![0f64; d * k];
    let mut score = vec![0f64; k];
    for epoch in 1..=p.epochs {
        grad.iter_mut().for_each(|g| *g = 0.0);
        for (s, row) in samples.iter().zip(&rows) {
            score.iter_mut().for_each(|x| *x = 0.0);
            for &j in row {
                for (c, x) in score.iter_mut().enumerate() {
                    *x += w[j * k + c];
                }
            }
            softmax(&mut score);
            let sw = weight_of[s.label] / total_weight;
            for &j in row {
                for (c, x) in score.iter().enumerate() {
                    let y = if c == s.label { 1.0 } else { 0.0 };
                    grad[j * k + c] += sw * (x - y);
                }
            }
        }
        let (c1, c2) = (1.0 - b1.powi(epoch as i32), 1.0 - b2.powi(epoch as i32));
        for i in 0..d * k {
            let g = grad[i] + p.l2 * w[i];
            m1[i] = b1 * m1[i] + (1.0 - b1) * g;
            m2[i] = b2 * m2[i] + (1.0 - b2) * g * g;
            w[i] -= p.rate * (m1[i] / c1) / ((m2[i] / c2).sqrt() + eps);
        }
    }
    let weights = names
        .iter()
        .enumerate()
        .map(|(j, n)| {
            let row: Vec<f32> = w[j * k..(j + 1) * k].iter().map(|x| *x as f32).collect();
            (n.to_string(), row)
        })
        // Adding the same amount to every label changes no probability: a row is centred,
        // and left out when nothing in it is worth `prune`.
        .map(|(n, row)| {
            let mean = row.iter().sum::<f32>() / row.len().max(1) as f32;
            (n, row.into_iter().map(|x| x - mean).collect::<Vec<f32>>())
        })
        .filter(|(n, row)| n == "bias" || row.iter().any(|x| x.abs() >= p.prune))
        .collect();
    Model::new(labels.to_vec(), weights, Vec::new())
}

/// Leave-source-out cross-validation: for each group, fit on the others and predict its
/// samples. Returns each sample's label probabilities, in the order given. Folds run on every
/// core (each fold is independent; the result does not depend on how they are spread).
pub fn cross_validate(samples: &[Sample], labels: &[String], p: &Params) -> Vec<Vec<f64>> {
    let groups: Vec<&str> = samples
        .iter()
        .map(|s| s.group.as_str())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut out = vec![Vec::new(); samples.len()];
    let per_fold: Vec<Vec<(usize, Vec<f64>)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|w| {
                let groups = &groups;
                scope.spawn(move || {
                    let mut got = Vec::new();
                    for g in groups.iter().skip(w).step_by(workers) {
                        let train: Vec<&Sample> =
                            samples.iter().filter(|s| s.group != *g).collect();
                        let model = fit(&train, labels, p);
                        for (i, s) in samples.iter().enumerate().filter(|(_, s)| s.group == *g) {
                            got.push((i, model.probabilities(&s.features)));
                        }
                    }
                    got
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect()
    });
    for (i, probs) in per_fold.into_iter().flatten() {
        out[i] = probs;
    }
    out
}

/// The labels [`super::combine`] gives, from cross-validated probabilities and the rules'
/// labels with their strongest signal's weight.
pub fn combined(
    probabilities: &[Vec<f64>],
    rules: &[(usize, f64)],
    policy: &super::Policy,
) -> Vec<usize> {
    probabilities
        .iter()
        .zip(rules)
        .map(|(p, (r, w))| super::combine(policy, *r, *w, p))
        .collect()
}

/// Recall and precision of each label, and accuracy, of predictions against the truth.
#[derive(Debug, Clone, PartialEq)]
pub struct Scores {
    /// Per label: (turns with it, recall, precision).
    pub per_label: Vec<(usize, f64, f64)>,
    /// Share of turns labelled right.
    pub accuracy: f64,
}

/// [`Scores`] of `predicted` against `truth` over `k` labels.
pub fn score(truth: &[usize], predicted: &[usize], k: usize) -> Scores {
    let mut per_label = Vec::with_capacity(k);
    for c in 0..k {
        let have = truth.iter().filter(|t| **t == c).count();
        let given = predicted.iter().filter(|p| **p == c).count();
        let right = truth
            .iter()
            .zip(predicted)
            .filter(|(t, p)| **t == c && **p == c)
            .count();
        let ratio = |a: usize, b: usize| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        per_label.push((have, ratio(right, have), ratio(right, given)));
    }
    let right = truth.iter().zip(predicted).filter(|(t, p)| t == p).count();
    Scores {
        per_label,
        accuracy: right as f64 / truth.len().max(1) as f64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(features: &[&str], label: usize, group: &str) -> Sample {
        Sample {
            features: features.iter().map(|f| f.to_string()).collect(),
            label,
            group: group.into(),
        }
    }

    #[test]
    fn it_learns_a_separable_rule_and_cross_validates_by_group() {
        let labels = vec!["routine".to_string(), "user_correction".to_string()];
        let mut samples = Vec::new();
        for g in ["a", "b", "c", "d"] {
            for i in 0..6 {
                samples.push(sample(&["bias", "p:please", &format!("x{i}")], 0, g));
                samples.push(sample(&["bias", "p0:no", &format!("x{i}")], 1, g));
            }
        }
        let p = Params {
            min_count: 1,
            prune: 0.0,
            ..Params::default()
        };
        let all: Vec<&Sample> = samples.iter().collect();
        let m = fit(&all, &labels, &p);
        assert_eq!(
            m.decide(&["bias", "p0:no"], (0, 0.0)).map(|d| d.label),
            Some(1)
        );
        assert_eq!(
            m.decide(&["bias", "p:please"], (0, 0.0)).map(|d| d.label),
            Some(0)
        );
        let probs = cross_validate(&samples, &labels, &p);
        let predicted = combined(
            &probs,
            &vec![(0, 0.0); samples.len()],
            &super::super::Policy::default(),
        );
        let truth: Vec<usize> = samples.iter().map(|s| s.label).collect();
        let s = score(&truth, &predicted, 2);
        assert_eq!(s.accuracy, 1.0);
        assert_eq!(s.per_label[1], (24, 1.0, 1.0));
        // Deterministic: the same samples give the same file.
        assert_eq!(fit(&all, &labels, &p).to_tsv(), m.to_tsv());
    }
}
