//! Score the per-turn triage against the hand labels in `tests/fixtures/triage-labels.jsonl`
//! (`{file, prompt_line, label, why}`, `file` relative to the corpus).
//!
//! Each labelled file is read through the real stages (tailer, parse, extract with redaction,
//! episode builder) exactly as the daemon reads it; every turn label of every episode is
//! matched to a hand label by its prompt line. Prints per label recall (a hand-labelled turn
//! given its label) and precision (a turn given the label that carries it by hand), the
//! confusion matrix, and every turn it gets wrong with the hand label's reason.
//!
//! `cargo run --release --example triage_eval [-- --labels FILE] [--corpus DIR]`

use std::collections::BTreeMap;
use std::path::PathBuf;

use gleaner::episode::Rules;

#[path = "triage/stages.rs"]
#[allow(dead_code)] // each tool uses a part
mod stages;
use stages::{predict, LABELS};

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

fn main() -> anyhow::Result<()> {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let labels = arg("--labels")
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest.join("tests/fixtures/triage-labels.jsonl"));
    let corpus = arg("--corpus")
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest.join("../shared/corpus/real"));
    let hand = stages::read_labels(&labels.to_string_lossy(), &corpus)?.hand;
    let rules = Rules::defaults()?;
    let mut by_file: BTreeMap<&str, Vec<&stages::Hand>> = BTreeMap::new();
    for h in &hand {
        by_file.entry(h.file.as_str()).or_default().push(h);
    }
    // confusion[hand][predicted]
    let mut confusion: BTreeMap<(&str, String), usize> = BTreeMap::new();
    let mut wrong = Vec::new();
    let mut unmatched = Vec::new();
    for (file, hs) in &by_file {
        let predicted = predict(&corpus.join(file), &rules)?;
        for h in hs {
            let Some(stages::Predicted {
                label: p,
                evidence: ev,
                ..
            }) = predicted.get(&h.prompt_line)
            else {
                unmatched.push(format!("{file}:{} (no turn starts there)", h.prompt_line));
                continue;
            };
            let hl = LABELS
                .iter()
                .find(|l| **l == h.label)
                .copied()
                .unwrap_or("routine");
            *confusion.entry((hl, p.clone())).or_default() += 1;
            if p != hl {
                wrong.push(format!(
                    "{file}:{}  hand {hl}, got {p}{}\n    why: {}",
                    h.prompt_line,
                    if ev.is_empty() {
                        String::new()
                    } else {
                        format!(" ({ev})")
                    },
                    h.why
                ));
            }
        }
    }
    println!(
        "{} labelled turns in {} files; {} matched\n",
        hand.len(),
        by_file.len(),
        hand.len() - unmatched.len()
    );
    println!(
        "{:<16} {:>6} {:>7} {:>9}",
        "label", "hand", "recall", "precision"
    );
    for l in LABELS {
        let n_hand: usize = confusion
            .iter()
            .filter(|((h, _), _)| *h == l)
            .map(|(_, n)| n)
            .sum();
        let n_pred: usize = confusion
            .iter()
            .filter(|((_, p), _)| p == l)
            .map(|(_, n)| n)
            .sum();
        let hit = confusion.get(&(l, l.to_string())).copied().unwrap_or(0);
        let ratio = |a: usize, b: usize| {
            if b == 0 {
                "-".to_string()
            } else {
                format!("{:.2}", a as f64 / b as f64)
            }
        };
        println!(
            "{l:<16} {n_hand:>6} {:>7} {:>9}",
            ratio(hit, n_hand),
            ratio(hit, n_pred)
        );
    }
    println!("\nconfusion (rows: hand, columns: predicted)");
    print!("{:<16}", "");
    for l in LABELS {
        print!(" {:>8}", &l[..l.len().min(8)]);
    }
    println!();
    for h in LABELS {
        print!("{h:<16}");
        for p in LABELS {
            print!(
                " {:>8}",
                confusion.get(&(h, p.to_string())).copied().unwrap_or(0)
            );
        }
        println!();
    }
    println!("\nwrong ({}):", wrong.len());
    for w in &wrong {
        println!("  {w}");
    }
    if !unmatched.is_empty() {
        println!("\nunmatched ({}):", unmatched.len());
        for u in &unmatched {
            println!("  {u}");
        }
    }
    Ok(())
}
