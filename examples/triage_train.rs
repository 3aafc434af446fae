//! Train the learned triage (`src/triage_model/weights.tsv`) on hand-labelled turns, and say
//! how it does against today's rules on turns it was not trained on.
//!
//! Every labelled file is read through the real stages (see `triage/stages.rs`); each turn's
//! features are the ones the daemon computes. Measured by leave-source-out cross-validation:
//! the turns of one repository are predicted by a model fitted on the other repositories
//! only. The held-out labels (`tests/fixtures/triage-heldout.jsonl`) are never fitted on nor
//! used to choose anything: they are scored once, by the model fitted on all the training
//! labels, and reported.
//!
//! ```text
//! cargo run --profile train --example triage_train -- [--write] [--grid]
//!     [--labels FILE=ROOT]... [--heldout FILE=ROOT] [--l2 X] [--balance X] [--epochs N]
//!     [--min-count N] [--wrong] [--dump FILE]
//! ```
//! `scripts/train-triage.sh` restores the external transcripts first and runs it with `--write`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use gleaner::episode::Rules;
use gleaner::triage_model::train::{combined, cross_validate, fit, score, Params, Sample, Scores};
use gleaner::triage_model::Policy;

#[path = "triage/stages.rs"]
#[allow(dead_code)] // each tool uses a part
mod stages;
use stages::{predict, read_labels, Hand, LabelSet, LABELS};

fn args() -> Vec<String> {
    std::env::args().collect()
}

fn arg(name: &str) -> Option<String> {
    let a = args();
    a.iter()
        .position(|x| x == name)
        .and_then(|i| a.get(i + 1).cloned())
}

fn all(name: &str) -> Vec<String> {
    let a = args();
    a.windows(2)
        .filter(|w| w[0] == name)
        .map(|w| w[1].clone())
        .collect()
}

fn flag(name: &str) -> bool {
    args().iter().any(|a| a == name)
}

/// A labelled turn with what the stages made of it.
struct Turn {
    hand: Hand,
    /// The rules' label and the weight of its strongest signal.
    rule: (usize, f64),
    sample: Sample,
}

fn index(label: &str) -> usize {
    LABELS.iter().position(|l| *l == label).unwrap_or(0)
}

/// The turns of a label set that the stages found (a label on a line where no turn starts is
/// counted and reported).
fn turns(set: &LabelSet, rules: &Rules) -> anyhow::Result<(Vec<Turn>, usize)> {
    let mut by_file: BTreeMap<&str, Vec<&Hand>> = BTreeMap::new();
    for h in &set.hand {
        by_file.entry(h.file.as_str()).or_default().push(h);
    }
    let mut out = Vec::new();
    let mut unmatched = 0;
    for (file, hs) in by_file {
        let mut predicted = predict(&set.root.join(file), rules)?;
        for h in hs {
            match predicted.remove(&h.prompt_line).and_then(|p| p.collected) {
                Some(c) => out.push(Turn {
                    rule: (index(&c.rule_label), c.rule_weight),
                    sample: Sample {
                        features: c.features,
                        label: index(&h.label),
                        group: h.source(),
                    },
                    hand: h.clone(),
                }),
                None => unmatched += 1,
            }
        }
    }
    Ok((out, unmatched))
}

fn table(rows: &[(&str, &Scores)]) {
    print!("{:<16} {:>5}", "label", "turns");
    for (name, _) in rows {
        print!("  {:>18}", format!("{name} R / P"));
    }
    println!();
    for (c, l) in LABELS.iter().enumerate() {
        print!("{l:<16} {:>5}", rows[0].1.per_label[c].0);
        for (_, s) in rows {
            let (_, r, p) = s.per_label[c];
            print!("  {:>18}", format!("{r:.2} / {p:.2}"));
        }
        println!();
    }
    print!("{:<16} {:>5}", "accuracy", "");
    for (_, s) in rows {
        print!("  {:>18}", format!("{:.3}", s.accuracy));
    }
    println!("\n");
}

fn macro_f1(s: &Scores) -> f64 {
    let f1: Vec<f64> = s
        .per_label
        .iter()
        .map(|(_, r, p)| {
            if r + p > 0.0 {
                2.0 * r * p / (r + p)
            } else {
                0.0
            }
        })
        .collect();
    f1.iter().sum::<f64>() / f1.len() as f64
}

fn main() -> anyhow::Result<()> {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let corpus = manifest.join("../shared/corpus/real");
    let mut specs = all("--labels");
    if specs.is_empty() {
        specs = vec![
            format!(
                "{}={}",
                manifest
                    .join("tests/fixtures/external/labels.jsonl")
                    .display(),
                manifest.join("../shared/corpus/external").display()
            ),
            manifest
                .join("tests/fixtures/triage-labels.jsonl")
                .display()
                .to_string(),
        ];
    }
    let heldout = arg("--heldout").unwrap_or_else(|| {
        manifest
            .join("tests/fixtures/triage-heldout.jsonl")
            .display()
            .to_string()
    });
    let d = Params::default();
    let num = |name: &str, default: f64| -> anyhow::Result<f64> {
        arg(name).map_or(Ok(default), |v| {
            v.parse().map_err(|e| anyhow::anyhow!("{name} {v:?}: {e}"))
        })
    };
    let params = Params {
        l2: num("--l2", d.l2)?,
        balance: num("--balance", d.balance)?,
        epochs: num("--epochs", d.epochs as f64)? as usize,
        min_count: num("--min-count", d.min_count as f64)? as usize,
        rate: num("--rate", d.rate)?,
        prune: num("--prune", f64::from(d.prune))? as f32,
    };
    let rules = Rules::defaults()?;
    let labels: Vec<String> = LABELS.iter().map(|l| l.to_string()).collect();

    let mut train = Vec::new();
    for spec in &specs {
        let set = read_labels(spec, &corpus)?;
        let (t, unmatched) = turns(&set, &rules)?;
        println!(
            "{spec}: {} labels, {} turns found, {unmatched} on no turn",
            set.hand.len(),
            t.len()
        );
        train.extend(t);
    }
    let sources: BTreeSet<String> = train.iter().map(|t| t.sample.group.clone()).collect();
    println!("{} turns from {} sources\n", train.len(), sources.len());
    let samples: Vec<Sample> = train.iter().map(|t| t.sample.clone()).collect();
    let truth: Vec<usize> = samples.iter().map(|s| s.label).collect();
    let by_rules: Vec<(usize, f64)> = train.iter().map(|t| t.rule).collect();
    let rule_labels: Vec<usize> = by_rules.iter().map(|r| r.0).collect();
    let rules_scores = score(&truth, &rule_labels, LABELS.len());

    if let Some(path) = arg("--dump") {
        // Every turn's features and labels, one JSON object per line, for study elsewhere.
        let mut out = String::new();
        for t in &train {
            let row = serde_json::json!({
                "source": t.sample.group,
                "file": t.hand.file,
                "line": t.hand.prompt_line,
                "label": LABELS[t.sample.label],
                "rule": LABELS[t.rule.0],
                "rule_weight": t.rule.1,
                "features": t.sample.features,
            });
            out.push_str(&row.to_string());
            out.push('\n');
        }
        std::fs::write(&path, out)?;
        println!("wrote {path}");
    }

    if flag("--grid") {
        println!(
            "{:>8} {:>8} {:>9} {:>9}",
            "l2", "balance", "accuracy", "macro F1"
        );
        for l2 in [1e-4, 3e-4, 1e-3, 3e-3, 1e-2] {
            for balance in [0.0, 0.5, 1.0] {
                let p = Params {
                    l2,
                    balance,
                    ..params
                };
                let probs = cross_validate(&samples, &labels, &p);
                let s = score(
                    &truth,
                    &combined(&probs, &by_rules, &Policy::default()),
                    LABELS.len(),
                );
                println!(
                    "{l2:>8} {balance:>8} {:>9.3} {:>9.3}",
                    s.accuracy,
                    macro_f1(&s)
                );
            }
        }
        println!();
    }

    let probs = cross_validate(&samples, &labels, &params);
    let alone = score(
        &truth,
        &combined(&probs, &by_rules, &Policy::default()),
        LABELS.len(),
    );
    // The model gives the labels on which it beats the rules (F1); routine always, or it
    // could never overrule them.
    let f1 = |(_, r, p): (usize, f64, f64)| {
        if r + p > 0.0 {
            2.0 * r * p / (r + p)
        } else {
            0.0
        }
    };
    let allowed: Vec<usize> = (0..LABELS.len())
        .filter(|c| *c == 0 || f1(alone.per_label[*c]) > f1(rules_scores.per_label[*c]))
        .collect();
    // Then the weight at which a rule's signal stands against the model: the best accuracy.
    let mut policy = Policy {
        model_labels: allowed.clone(),
        stand: None,
    };
    let mut best = score(&truth, &combined(&probs, &by_rules, &policy), LABELS.len()).accuracy;
    println!("rules stand at:  never {best:.3}");
    for stand in [0.95, 0.9, 0.85, 0.8, 0.75, 0.7] {
        let p = Policy {
            stand: Some(stand),
            ..policy.clone()
        };
        let acc = score(&truth, &combined(&probs, &by_rules, &p), LABELS.len()).accuracy;
        println!("rules stand at:  {stand} {acc:.3}");
        if acc > best + 1e-9 {
            best = acc;
            policy = p;
        }
    }
    let cv = combined(&probs, &by_rules, &policy);
    let cv_scores = score(&truth, &cv, LABELS.len());
    println!(
        "leave-source-out cross-validation ({} folds), {params:?}",
        sources.len()
    );
    println!(
        "the model gives: {}; the rules the rest; a rule signal stands at {:?}\n",
        allowed
            .iter()
            .map(|c| LABELS[*c])
            .collect::<Vec<_>>()
            .join(", "),
        policy.stand
    );
    table(&[
        ("rules", &rules_scores),
        ("model alone", &alone),
        ("shipped", &cv_scores),
    ]);
    if flag("--wrong") {
        for (t, p) in train.iter().zip(&cv) {
            if *p != t.sample.label {
                println!(
                    "  {}:{} hand {}, model {}: {}",
                    t.hand.file, t.hand.prompt_line, t.hand.label, LABELS[*p], t.hand.why
                );
            }
        }
    }

    let all_refs: Vec<&Sample> = samples.iter().collect();
    let mut model = fit(&all_refs, &labels, &params);
    model.model_labels = allowed.iter().map(|c| LABELS[*c].to_string()).collect();
    model.stand = policy.stand;

    let held = read_labels(&heldout, &corpus)?;
    let (held_turns, unmatched) = turns(&held, &rules)?;
    let held_truth: Vec<usize> = held_turns.iter().map(|t| t.sample.label).collect();
    let held_rules: Vec<usize> = held_turns.iter().map(|t| t.rule.0).collect();
    let held_model: Vec<usize> = held_turns
        .iter()
        .map(|t| {
            model
                .decide(&t.sample.features, t.rule)
                .map_or(0, |d| d.label)
        })
        .collect();
    let held_rules_scores = score(&held_truth, &held_rules, LABELS.len());
    let held_model_scores = score(&held_truth, &held_model, LABELS.len());
    println!(
        "held out ({} turns, {unmatched} labels on no turn; never fitted on)",
        held_turns.len()
    );
    table(&[
        ("rules", &held_rules_scores),
        ("shipped", &held_model_scores),
    ]);

    if flag("--write") {
        let fig = |s: &Scores| {
            LABELS
                .iter()
                .zip(&s.per_label)
                .map(|(l, (n, r, p))| format!("{l} {n} {r:.2}/{p:.2}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        model.notes = vec![
            "Gleaner's learned triage: multinomial logistic regression over named features".into(),
            "(src/triage_model/features.rs). Written by scripts/train-triage.sh; do not edit.".into(),
            format!(
                "Trained on {} turns from {} sources; {:?}.",
                samples.len(),
                sources.len(),
                params
            ),
            format!(
                "Leave-source-out CV, label turns recall/precision: {}; accuracy {:.3} (rules {:.3}).",
                fig(&cv_scores),
                cv_scores.accuracy,
                rules_scores.accuracy
            ),
        ];
        let path = manifest.join("src/triage_model/weights.tsv");
        std::fs::write(&path, model.to_tsv())?;
        println!("wrote {} ({} features)", path.display(), model.len());
    }
    Ok(())
}
