//! What `triage_eval` and `triage_train` share: hand labels, and a transcript read through the
//! real stages (tailer, parse, extract with redaction, episode builder) exactly as the daemon
//! reads it, giving each turn's label, evidence and learned-model features.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use gleaner::episode::{feed, Builder, Feed, Rules};
use gleaner::extract::redact::Redactor;
use gleaner::extract::{extract, FileContext};
use gleaner::snippet::draft::Auto;
use gleaner::tail::{Tailer, TailerConfig};
use gleaner::triage_model::Collected;

/// The labels, in the weight file's order (ties in the model go to the earlier one).
pub const LABELS: [&str; 5] = [
    "routine",
    "error_recovery",
    "user_correction",
    "pivot",
    "design_decision",
];

/// A hand-labelled turn: `{file, prompt_line, label, why}`, plus `repo` for external labels.
#[derive(serde::Deserialize, Clone)]
pub struct Hand {
    pub file: String,
    pub prompt_line: u64,
    pub label: String,
    #[serde(default)]
    pub why: String,
    #[serde(default)]
    pub repo: Option<String>,
}

impl Hand {
    /// The source the turn came from, for leave-source-out splits: its repository (for the
    /// corpus, the `owner__repo` its file name starts with).
    pub fn source(&self) -> String {
        match &self.repo {
            Some(r) => r.clone(),
            None => {
                let parts: Vec<&str> = self.file.splitn(3, "__").collect();
                parts[..parts.len().min(2)].join("/")
            }
        }
    }
}

/// A set of labels and the folder their files are relative to.
pub struct LabelSet {
    pub hand: Vec<Hand>,
    pub root: PathBuf,
}

/// `FILE=ROOT` or `FILE` (root: the corpus).
pub fn read_labels(spec: &str, default_root: &Path) -> anyhow::Result<LabelSet> {
    let (file, root) = match spec.split_once('=') {
        Some((f, r)) => (PathBuf::from(f), PathBuf::from(r)),
        None => (PathBuf::from(spec), default_root.to_path_buf()),
    };
    let text = std::fs::read_to_string(&file)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", file.display()))?;
    let hand = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    Ok(LabelSet { hand, root })
}

/// One turn as the stages labelled it.
pub struct Predicted {
    pub label: String,
    pub evidence: String,
    /// The learned model's features (and the rules' own label), when collected.
    pub collected: Option<Collected>,
}

/// Every turn of one transcript, by prompt line.
pub fn predict(path: &Path, rules: &Rules) -> anyhow::Result<HashMap<u64, Predicted>> {
    let (rows, collected) = gleaner::triage_model::collecting(|| episodes(path, rules));
    let mut collected: HashMap<u64, Collected> =
        collected.into_iter().map(|c| (c.start_line, c)).collect();
    let mut out = HashMap::new();
    for e in rows? {
        let turns: serde_json::Value = serde_json::from_str(&e.turn_labels)?;
        for t in turns.as_array().into_iter().flatten() {
            let line = t["start_line"].as_u64().unwrap_or(0);
            let label = t["triage"].as_str().unwrap_or("routine").to_string();
            let evidence = t["evidence"][0]["text"].as_str().unwrap_or("").to_string();
            out.insert(
                line,
                Predicted {
                    label,
                    evidence,
                    collected: collected.remove(&line),
                },
            );
        }
    }
    Ok(out)
}

fn episodes(path: &Path, rules: &Rules) -> anyhow::Result<Vec<gleaner::extract::rows::EpisodeRow>> {
    let root = path.parent().unwrap_or(path);
    let info = gleaner::tail::discovery::classify(root, path);
    let mut ctx = FileContext::new(1, ("eval".into(), "eval".into()), info, None);
    let (mut t, _) = Tailer::open(path, None, TailerConfig::default())?;
    let redactor = Redactor::builtin();
    let how = Feed {
        rules,
        redactor: &redactor,
        last: gleaner::episode::Last::Keep,
        drafter: &Auto,
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
        rows.extend(b.finish(sid, &Auto));
    }
    Ok(rows)
}
