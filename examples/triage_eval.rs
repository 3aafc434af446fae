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

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use gleaner::episode::{feed, Builder, Feed, Rules};
use gleaner::extract::redact::Redactor;
use gleaner::extract::{extract, FileContext};
use gleaner::tail::{Tailer, TailerConfig};

const LABELS: [&str; 5] = [
    "routine",
    "error_recovery",
    "user_correction",
    "pivot",
    "design_decision",
];

#[derive(serde::Deserialize)]
struct Hand {
    file: String,
    prompt_line: u64,
    label: String,
    #[serde(default)]
    why: String,
}

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

/// Turn label by prompt line, for one transcript, and the evidence text of each.
fn predict(
    path: &std::path::Path,
    rules: &Rules,
) -> anyhow::Result<HashMap<u64, (String, String)>> {
    let root = path.parent().unwrap_or(path);
    let info = gleaner::tail::discovery::classify(root, path);
    let mut ctx = FileContext::new(1, ("eval".into(), "eval".into()), info, None);
    let (mut t, _) = Tailer::open(path, None, TailerConfig::default())?;
    let redactor = Redactor::builtin();
    let how = Feed {
        rules,
        redactor: &redactor,
        last: gleaner::episode::Last::Keep,
    };
    let mut slot: Option<Box<Builder>> = None;
    let mut rows = Vec::new();
    let mut session = None;
    while let Some(b) = t.read_batch(8 << 20, 2000)? {
        let mut ex = extract(&mut ctx, &b, &redactor);
        feed(&mut slot, &mut ex, &how);
        session = ex.session_id.clone().or(session);
        rows.extend(ex.rows.episodes.into_iter().filter(|e| e.closed));
    }
    if let (Some(b), Some(sid)) = (&slot, &session) {
        rows.extend(b.finish(sid));
    }
    let mut out = HashMap::new();
    for e in rows {
        let turns: serde_json::Value = serde_json::from_str(&e.turn_labels)?;
        for t in turns.as_array().into_iter().flatten() {
            let line = t["start_line"].as_u64().unwrap_or(0);
            let label = t["triage"].as_str().unwrap_or("routine").to_string();
            let ev = t["evidence"][0]["text"].as_str().unwrap_or("").to_string();
            out.insert(line, (label, ev));
        }
    }
    Ok(out)
}

fn main() -> anyhow::Result<()> {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let labels = arg("--labels")
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest.join("tests/fixtures/triage-labels.jsonl"));
    let corpus = arg("--corpus")
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest.join("../shared/corpus/real"));
    let text = std::fs::read_to_string(&labels)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", labels.display()))?;
    let hand: Vec<Hand> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    let rules = Rules::defaults()?;
    let mut by_file: BTreeMap<&str, Vec<&Hand>> = BTreeMap::new();
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
            let Some((p, ev)) = predicted.get(&h.prompt_line) else {
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
