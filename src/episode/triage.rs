//! One label per turn and per episode, with a confidence and the evidence that decided it.
//!
//! A turn's label is the learned model's ([`crate::triage_model`]), which weighs the rules'
//! signals below with the turn's words and events; the weight file says which labels the model
//! may give and at which weight a rule's signal stands. Without a model the rules decide alone,
//! as described here.
//!
//! Rules (each produces [`Signal`]s while the episode is read; weights in parentheses):
//! - `user_correction`: a tool denial (0.9, 0.95 with a typed reason); an interruption followed
//!   by a prompt (0.85); a correction phrase (`triage.correction_phrases`) at the start of a
//!   prompt (0.8) or elsewhere in its first 600 bytes (0.55). Never the session's first prompt.
//!   Phrases written `^phrase` ("no,", "don't", "stop", "actually") count only where they open
//!   a clause: "No, keep it" corrects, "a $1 hard stop" and "we don't log it" do not.
//! - `user_correction` also from the assistant's side: its first reply opens by acknowledging
//!   (`triage.acknowledgement_phrases`, 0.8) or its first sentence says the last fix did not
//!   take ("The buttons are still showing.", 0.8). A file whose assistant worked before its
//!   first prompt continues a conversation: that prompt may correct.
//! - `error_recovery`: a tool call that failed (an error result that is not a denial or an
//!   interruption) later followed by a success on the same target, or for `Bash` the same
//!   program and subcommand (0.85); or, in the same turn, put right another way (0.75,
//!   `fixed_another_way`): the missing module installed, the next command running the same
//!   program on what failed, a conflict concluded by the commit (see `tools::other_way`).
//! - `pivot`: a pivot phrase in assistant text (0.75); a shell command that throws its own
//!   changes away: `git checkout --`, `git restore`, `git reset --hard`, `git revert`,
//!   `git stash` (0.8).
//! - `design_decision`: a decision phrase in assistant text (0.7). Phrases written `~phrase`
//!   ("rather than", "alternatives") count only in a sentence holding a `triage.choice_words`
//!   word: "names rather than IDs" describes, "I'll use the CLI rather than the SDK" decides.
//!
//!   Alternatives laid out side by side ("A) ...", "Option 1: ...") count too (0.7).
//!
//! Phrases in assistant text count only in prose (not in code blocks, tables, headings or
//! quotes). A message that ends by asking the user yields no `decision_rationale` (nothing was
//! decided there); when it recommends nothing either ("Option 1 ... Option 2 ... which do you
//! prefer?"), the choice was handed over, and its option labels give no signal at all.
//!
//! A label's confidence is its strongest signal's weight plus 0.05 for each further distinct
//! signal (capped at 0.99). The label with the highest confidence wins; ties go by precedence
//! `user_correction` > `error_recovery` > `pivot` > `design_decision` (the user's own word is the
//! strongest evidence; an observed failure-then-fix is stronger than words about approaches).
//! With no signal the episode is `routine`, with confidence 0.75 for one turn rising by 0.05
//! per turn to 0.9: the more was seen without a signal, the surer.

use serde::{Deserialize, Serialize};

use super::{Open, Signal, Turn, TurnLabel, EVIDENCE_CHARS, TURN_EVIDENCE};

/// Triage label of an episode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Label {
    /// Nothing worth keeping stood out.
    Routine,
    /// A failure later fixed.
    ErrorRecovery,
    /// The user corrected the assistant.
    UserCorrection,
    /// The assistant abandoned an approach.
    Pivot,
    /// Alternatives were weighed.
    DesignDecision,
}

impl Label {
    /// Precedence order for ties (first wins).
    pub const PRECEDENCE: [Label; 4] = [
        Label::UserCorrection,
        Label::ErrorRecovery,
        Label::Pivot,
        Label::DesignDecision,
    ];

    /// The label stored under this name.
    pub fn from_name(name: &str) -> Option<Label> {
        [
            Label::Routine,
            Label::ErrorRecovery,
            Label::UserCorrection,
            Label::Pivot,
            Label::DesignDecision,
        ]
        .into_iter()
        .find(|l| l.as_str() == name)
    }

    /// Stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Label::Routine => "routine",
            Label::ErrorRecovery => "error_recovery",
            Label::UserCorrection => "user_correction",
            Label::Pivot => "pivot",
            Label::DesignDecision => "design_decision",
        }
    }
}

/// The decision for one episode.
#[derive(Debug, Clone, PartialEq)]
pub struct Triage {
    /// Winning label.
    pub label: Label,
    /// 0..1.
    pub confidence: f64,
    /// Signals of the winning label first, then the others, by line; at most 12.
    pub evidence: Vec<Signal>,
}

impl Triage {
    /// `[{"line", "label", "signal", "text"}]`.
    pub fn evidence_json(&self) -> String {
        let items: Vec<serde_json::Value> = self
            .evidence
            .iter()
            .map(|s| {
                serde_json::json!({
                    "line": s.line,
                    "label": s.label.as_str(),
                    "signal": s.signal,
                    "text": s.text,
                })
            })
            .collect();
        serde_json::Value::Array(items).to_string()
    }
}

/// The winning label of a set of signals and its confidence: each label scores its strongest
/// signal plus 0.05 per further distinct signal kind (capped at 0.99); the highest wins, ties by
/// [`Label::PRECEDENCE`]. `None` without a signal.
fn strongest(signals: &[Signal]) -> Option<(Label, f64)> {
    let mut best: Option<(Label, f64)> = None;
    for label in Label::PRECEDENCE {
        let sigs: Vec<&Signal> = signals.iter().filter(|s| s.label == label).collect();
        let Some(top) = sigs.iter().map(|s| s.weight).reduce(f64::max) else {
            continue;
        };
        let mut kinds: Vec<&str> = sigs.iter().map(|s| s.signal.as_str()).collect();
        kinds.sort_unstable();
        kinds.dedup();
        let conf = (top + 0.05 * (kinds.len() as f64 - 1.0)).min(0.99);
        // Strictly greater: on a tie the earlier label in precedence order stays.
        if best.is_none_or(|(_, b)| conf > b + 1e-9) {
            best = Some((label, conf));
        }
    }
    best
}

/// Routine confidence after `turns` turns without a signal: the more seen, the surer.
fn routine_confidence(turns: i64) -> f64 {
    0.7 + 0.05 * turns.clamp(1, 4) as f64
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// The first label in [`Label::PRECEDENCE`] that the signals hold, with its confidence (as in
/// [`strongest`]). A turn is judged by the definitions' precedence: a correction in it makes it
/// a correction even when a recovery in it scored higher.
fn by_precedence(signals: &[Signal]) -> Option<(Label, f64)> {
    Label::PRECEDENCE.into_iter().find_map(|label| {
        let own: Vec<Signal> = signals
            .iter()
            .filter(|s| s.label == label)
            .cloned()
            .collect();
        strongest(&own)
    })
}

/// The label of one turn: the learned model's, over the turn's facts and the rules' signals
/// (see [`crate::triage_model`]); the rules' alone when no model is embedded. The evidence is
/// the rules' signals for that label when there are any, else the features that decided it.
pub(super) fn turn_label(turn: &Turn, end_line: u64) -> TurnLabel {
    let by_rules = by_precedence(&turn.signals);
    let rule_label = by_rules.map_or(Label::Routine, |(l, _)| l);
    // The weight of the rules' strongest signal for their label (not the confidence, which
    // adds for further signals).
    let rule_weight = turn
        .signals
        .iter()
        .filter(|s| s.label == rule_label)
        .map(|s| s.weight)
        .fold(0.0, f64::max);
    let learned = learned(turn, rule_label, rule_weight);
    // Where the model keeps the rules' label, the rules' confidence stands (their scale is the
    // one episodes are ranked by); a label of the model's own carries its probability.
    let (triage, confidence) = match (&learned, by_rules) {
        (Some((label, _, _)), Some((rule, c))) if *label == rule => (rule, c),
        (Some((label, p, _)), _) => (*label, *p),
        (None, by_rules) => by_rules.unwrap_or((Label::Routine, routine_confidence(1))),
    };
    let mut evidence: Vec<Signal> = turn
        .signals
        .iter()
        .filter(|s| s.label == triage)
        .cloned()
        .collect();
    evidence.sort_by(|a, b| b.weight.total_cmp(&a.weight).then(a.line.cmp(&b.line)));
    evidence.truncate(TURN_EVIDENCE);
    if let (true, Some((_, p, because))) = (evidence.is_empty(), &learned) {
        if triage != Label::Routine {
            evidence.push(model_evidence(turn, triage, *p, because));
        }
    }
    TurnLabel {
        ordinal: turn.ordinal,
        start_line: turn.start_line,
        end_line,
        triage,
        confidence: round2(confidence),
        evidence,
    }
}

/// The model's label for a turn, its probability and the features that decided it; `None`
/// when no model is embedded or it names a label this build does not know.
fn learned(turn: &Turn, rule_label: Label, rule_weight: f64) -> Option<(Label, f64, Vec<String>)> {
    let model = &*crate::triage_model::MODEL;
    if model.is_empty() && !crate::triage_model::is_collecting() {
        return None;
    }
    let signals: Vec<crate::triage_model::RuleSignal<'_>> = turn
        .signals
        .iter()
        .map(|s| crate::triage_model::RuleSignal {
            kind: &s.signal,
            label: s.label.as_str(),
            weight: s.weight,
        })
        .collect();
    let features =
        crate::triage_model::features(&turn.facts, turn.ordinal, &signals, rule_label.as_str());
    crate::triage_model::collect(|| crate::triage_model::Collected {
        start_line: turn.start_line,
        features: features.clone(),
        rule_label: rule_label.as_str().to_string(),
        rule_weight,
    });
    let rule_index = model.labels.iter().position(|l| l == rule_label.as_str())?;
    let d = model.decide(&features, (rule_index, rule_weight))?;
    let label = Label::from_name(model.labels.get(d.label)?)?;
    Some((label, d.probability, d.because))
}

/// Evidence for a label the model gave without a rule signal of it: the line the strongest
/// feature was seen on and what the features were ("prompt words "still", "again"").
pub(super) fn model_evidence(turn: &Turn, label: Label, p: f64, because: &[String]) -> Signal {
    let f = &turn.facts;
    let line = match because.first().map(String::as_str) {
        Some(x) if x.starts_with('r') || x.starts_with('a') => f.reply_line,
        Some(x) if x.starts_with("errors") => f.error_line,
        _ => 0,
    };
    let said: Vec<String> = because.iter().map(|b| describe(b)).collect();
    Signal {
        line: if line == 0 { turn.start_line } else { line },
        label,
        signal: "learned".into(),
        text: crate::text::clip_chars(&said.join("; "), EVIDENCE_CHARS),
        weight: p,
        followup: None,
    }
}

/// A feature's name in words.
fn describe(feature: &str) -> String {
    let (kind, rest) = feature.split_once(':').unwrap_or((feature, ""));
    match kind {
        "p" | "p2" | "p0" => format!("prompt says \"{rest}\""),
        "r" | "r2" => format!("reply opens with \"{rest}\""),
        "a" | "a2" => format!("assistant says \"{rest}\""),
        "s" => format!("rule signal {rest}"),
        "sl" | "sl_strong" => format!("a rule signal of {rest}"),
        "rule" => format!("the rules say {rest}"),
        "errors" => format!("{rest} failed tool results"),
        "calls" => format!("{rest} tool calls"),
        "edits" => format!("{rest} file edits"),
        "after_interruption" => "after an interruption".into(),
        "after_question" => "answers the assistant's question".into(),
        "pasted_failure" => "a pasted failure".into(),
        _ => feature.replace('_', " "),
    }
}

/// The label of an episode: its strongest turn's (highest confidence, ties by precedence), or
/// routine when no turn holds a signal. Evidence: the signals of that label across the
/// episode first, then the others, by line; at most 12.
pub fn decide(open: &Open, turns: &[TurnLabel]) -> Triage {
    let mut best: Option<(Label, f64)> = None;
    let mut best_turn: Option<&TurnLabel> = None;
    for t in turns.iter().filter(|t| t.triage != Label::Routine) {
        let better = match best {
            None => true,
            Some((l, c)) => {
                t.confidence > c + 1e-9
                    || ((t.confidence - c).abs() <= 1e-9 && precedence(t.triage) < precedence(l))
            }
        };
        if better {
            best = Some((t.triage, t.confidence));
            best_turn = Some(t);
        }
    }
    // Episodes stored before turns had labels: their signals decide as one turn.
    if turns.is_empty() {
        best = strongest(&open.signals);
    }
    let (label, confidence) =
        best.unwrap_or_else(|| (Label::Routine, routine_confidence(open.turns)));
    let mut evidence: Vec<Signal> = open
        .signals
        .iter()
        .filter(|s| s.label == label)
        .cloned()
        .collect();
    evidence.sort_by_key(|s| s.line);
    // A label the model gave without a rule signal: its turn's evidence (the line and words
    // that decided it) is the episode's.
    if evidence.is_empty() {
        if let Some(t) = best_turn.filter(|t| t.triage == label) {
            evidence.extend(t.evidence.iter().cloned());
        }
    }
    let mut others: Vec<Signal> = open
        .signals
        .iter()
        .filter(|s| s.label != label)
        .cloned()
        .collect();
    others.sort_by_key(|s| s.line);
    evidence.extend(others);
    evidence.truncate(12);
    Triage {
        label,
        confidence: round2(confidence),
        evidence,
    }
}

fn precedence(l: Label) -> usize {
    Label::PRECEDENCE
        .iter()
        .position(|p| *p == l)
        .unwrap_or(Label::PRECEDENCE.len())
}

/// `["<episode label>", ...the other labels its turns hold, by precedence]`.
pub(super) fn labels_json(turns: &[TurnLabel], episode: Label) -> String {
    let mut labels = vec![episode];
    for l in Label::PRECEDENCE.into_iter().chain([Label::Routine]) {
        if l != episode && turns.iter().any(|t| t.triage == l) {
            labels.push(l);
        }
    }
    serde_json::to_string(&labels).unwrap_or_else(|_| "[]".into())
}

/// `[{"ordinal", "start_line", "end_line", "triage", "confidence", "evidence": [{"line",
/// "signal", "text"}]}]`.
pub(super) fn turn_labels_json(turns: &[TurnLabel]) -> String {
    let items: Vec<serde_json::Value> = turns
        .iter()
        .map(|t| {
            serde_json::json!({
                "ordinal": t.ordinal,
                "start_line": t.start_line,
                "end_line": t.end_line,
                "triage": t.triage.as_str(),
                "confidence": t.confidence,
                "evidence": t.evidence.iter().map(|s| serde_json::json!({
                    "line": s.line,
                    "signal": s.signal,
                    "text": s.text,
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    serde_json::Value::Array(items).to_string()
}
