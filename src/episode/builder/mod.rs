//! The builder's record-by-record rules: prompts open turns and cut episodes, tool results
//! become failures and recoveries, assistant text feeds the vocabulary, the notes and the
//! signals. See the module doc of [`super`] for the model.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use super::feed::{Feed, Last};
use super::open::{add_vocab, end_turn, push_signal};
use super::text::{first_line, head_bytes, in_pasted_line, pasted_failure, sentence_around};
use super::*;
use crate::extract::feedback::FeedbackType;
use crate::extract::redact::Redactor;
use crate::extract::rows::{unix_millis_from_iso, EpisodeRow, FeedbackRow};
use crate::parse::{Kind, Record, FILE_TOOLS};
use crate::text::clip_chars;
use crate::triage_model::{self, Facts, Source};

/// Format version of the stored builder state. The state is a stored format (it outlives the
/// build that wrote it, in `files.episode_state`): a change to [`Builder`]'s fields that older
/// states cannot be read into needs a new version (and a variant of [`Stored`]).
mod reply;

const STATE_VERSION: &str = "1";

/// The stored forms of the builder state, by version (`{"v": "1", ...}`).
#[derive(Deserialize)]
#[serde(tag = "v")]
enum Stored {
    #[serde(rename = "1")]
    V1(Builder),
}

/// [`Stored`] for writing, without a copy of the builder.
#[derive(Serialize)]
#[serde(tag = "v")]
enum StoredRef<'a> {
    #[serde(rename = "1")]
    V1(&'a Builder),
}

/// What every record is judged with.
pub(in crate::episode) struct Ctx<'c> {
    pub rules: &'c Rules,
    pub redactor: &'c Redactor,
    pub targets: &'c HashMap<&'c str, &'c str>,
    /// Drafts the snippets of the episodes that close.
    pub drafter: &'c dyn Drafter,
}

/// A human prompt, where it is and when.
#[derive(Debug, Clone, Copy)]
struct Prompt<'p> {
    line: u64,
    text: &'p str,
    timestamp: Option<&'p str>,
    /// The latest timestamp before it (for the idle-gap cut).
    previous_ts: Option<&'p str>,
}

/// One record as the builder sees it, with what extraction already made of it (redacted), so
/// nothing is parsed or redacted twice.
#[derive(Debug)]
pub struct Input<'r, 'a> {
    /// Physical line.
    pub line_no: u64,
    /// The record.
    pub rec: &'r Record<'a>,
    /// Its message text, already redacted (from the message row).
    pub text: Option<&'r str>,
    /// Its feedback rows (prompts, denials, interruptions), already redacted.
    pub feedback: &'r [FeedbackRow],
}

impl Builder {
    /// A fresh builder for a file generation.
    pub fn new(generation: i64) -> Builder {
        Builder {
            generation,
            ..Builder::default()
        }
    }

    /// Restore from the stored JSON; `None` if it cannot be read or was written in another
    /// format version (the caller starts afresh). States stored before the format carried a
    /// version (no `v` key) are version 1.
    pub fn from_json(s: &str) -> Option<Builder> {
        #[derive(Deserialize)]
        struct Version {
            v: Option<String>,
        }
        match serde_json::from_str::<Version>(s).ok()?.v.as_deref() {
            None => serde_json::from_str(s).ok(),
            Some(STATE_VERSION) => match serde_json::from_str::<Stored>(s).ok()? {
                Stored::V1(b) => Some(b),
            },
            Some(other) => {
                tracing::debug!(version = other, "episode state of another format version");
                None
            }
        }
    }

    /// The state to store with the checkpoint, tagged with its format version.
    pub fn to_json(&self) -> String {
        serde_json::to_string(&StoredRef::V1(self)).unwrap_or_default()
    }

    /// Feed one batch's records (in line order) and note the last line read. `targets` are the
    /// batch's tool targets as extraction redacted them (tool use id -> target). Returns the
    /// episodes that closed, then the open one as `how.last` says (the caller asks for it only
    /// when it will write it: building it costs a triage and some JSON).
    pub(super) fn feed<'r, 'a: 'r>(
        &mut self,
        how: &Feed<'_>,
        session_id: &str,
        inputs: impl IntoIterator<Item = Input<'r, 'a>>,
        last_line: u64,
        targets: &HashMap<&str, &str>,
    ) -> Vec<EpisodeRow> {
        let mut out = Vec::new();
        let ctx = Ctx {
            rules: how.rules,
            redactor: how.redactor,
            targets,
            drafter: how.drafter,
        };
        for input in inputs {
            self.record(&ctx, session_id, &input, &mut out);
        }
        self.last_line = self.last_line.max(last_line);
        match how.last {
            Last::Keep => {}
            Last::Open => out.extend(self.open_row(how.drafter, session_id, false)),
            Last::Closed => out.extend(self.open_row(how.drafter, session_id, true)),
        }
        out
    }

    /// The open episode as a closed row (with the snippets `drafter` drafts): the session
    /// finished. The state is unchanged, so if the session resumes the episode goes on and is
    /// written again.
    pub fn finish(&self, session_id: &str, drafter: &dyn Drafter) -> Option<EpisodeRow> {
        self.open_row(drafter, session_id, true)
    }

    fn open_row(
        &self,
        drafter: &dyn Drafter,
        session_id: &str,
        closed: bool,
    ) -> Option<EpisodeRow> {
        let open = self.open.as_ref()?;
        let end = self.last_line.max(open.start_line);
        Some(self.row(drafter, open, session_id, end, closed))
    }

    fn row(
        &self,
        drafter: &dyn Drafter,
        open: &Open,
        session_id: &str,
        end_line: u64,
        closed: bool,
    ) -> EpisodeRow {
        let mut turn_labels = open.turn_log.clone();
        if let Some(turn) = &open.turn {
            turn_labels.push(triage::turn_label(turn, end_line.max(turn.start_line)));
        }
        let t = triage::decide(open, &turn_labels);
        let snippets = if closed {
            let episode = Closing {
                open,
                triage: &t,
                version: self.version.as_deref(),
                project: self.project.as_deref(),
                end_line,
            };
            drafter.snippets(&episode, &self.kept, &self.kept_titles)
        } else {
            Vec::new()
        };
        EpisodeRow {
            session_id: session_id.to_string(),
            generation: self.generation,
            ordinal: open.ordinal,
            first_turn: open.first_turn,
            turns: open.turns,
            start_line: open.start_line,
            end_line,
            started_at: open.started_at.clone(),
            ended_at: open.ended_at.clone(),
            closed,
            cut_reason: open.cut_reason.clone(),
            triage: t.label.as_str().to_string(),
            confidence: t.confidence,
            evidence: t.evidence_json(),
            labels: triage::labels_json(&turn_labels, t.label),
            turn_labels: triage::turn_labels_json(&turn_labels),
            title: open.title.clone(),
            files_touched: to_json(&open.files),
            tools: to_json(&open.tools),
            agents: to_json(&open.agents),
            snippets,
        }
    }

    fn record(
        &mut self,
        ctx: &Ctx<'_>,
        session_id: &str,
        input: &Input<'_, '_>,
        out: &mut Vec<EpisodeRow>,
    ) {
        let rec = input.rec;
        let line = input.line_no;
        if let Some(v) = rec.version.as_deref() {
            if self.version.as_deref() != Some(v) {
                self.version = Some(v.to_string());
            }
        }
        if self.project.is_none() {
            // Redacted like every stored text: it becomes a snippet tag and part of the state.
            self.project = rec
                .cwd
                .as_deref()
                .map(|c| ctx.redactor.redact(c, &mut BTreeMap::new()).into_owned())
                .as_deref()
                .and_then(|c| c.trim_end_matches(['/', '\\']).rsplit(['/', '\\']).next())
                .filter(|b| !b.is_empty())
                .map(str::to_string);
        }
        // Sub-agent lines inside a main file (Claude Code <= 2.0.19) are the sub-agent's work:
        // linked through the Task call, not part of the turn (their time still counts).
        if !rec.is_sidechain {
            // Judged before this record's timestamp is taken in: a prompt compares its time
            // with the latest one before it (the idle-gap rule).
            match rec.kind {
                Kind::System if rec.subtype.as_deref() == Some("compact_boundary") => {
                    self.pending_cut = Some("compaction".into());
                }
                // Before 2.0.76 a compaction wrote no boundary: its summary line is the mark.
                Kind::User if rec.is_compact_summary => {
                    self.pending_cut = Some("compaction".into());
                }
                Kind::User => self.user(ctx, session_id, input, out),
                Kind::Assistant => self.assistant(ctx, line, rec, input.text),
                _ => {}
            }
        }
        if let Some(ts) = rec.timestamp.as_deref() {
            set_max(&mut self.last_ts, ts);
            if let Some(open) = &mut self.open {
                set_max(&mut open.ended_at, ts);
            }
        }
    }

    fn user(
        &mut self,
        ctx: &Ctx<'_>,
        session_id: &str,
        input: &Input<'_, '_>,
        out: &mut Vec<EpisodeRow>,
    ) {
        let rec = input.rec;
        let line = input.line_no;
        for item in input.feedback {
            match item.feedback_type {
                FeedbackType::Message => {
                    let previous_ts = self.last_ts.clone();
                    let p = Prompt {
                        line,
                        text: &item.content,
                        timestamp: rec.timestamp.as_deref(),
                        previous_ts: previous_ts.as_deref(),
                    };
                    self.prompt(ctx, session_id, &p, out);
                }
                FeedbackType::ToolDenial => {
                    if let Some(open) = &mut self.open {
                        let reason = item.reason.as_deref();
                        // The denied call as "Bash `npm i vite`": the user's words are about it.
                        let tool = item
                            .tool_use_id
                            .as_deref()
                            .and_then(|id| self.calls.get(id))
                            .map(|c| match &c.target {
                                Some(t) if c.name != "ExitPlanMode" => {
                                    let t = first_line(t).replace('`', "'");
                                    // A file is known by its name.
                                    let t = if FILE_TOOLS.contains(&c.name.as_str()) {
                                        t.rsplit(['/', '\\']).next().unwrap_or(&t).to_string()
                                    } else {
                                        t
                                    };
                                    format!("{} `{}`", c.name, clip_chars(&t, 80))
                                }
                                _ => c.name.clone(),
                            })
                            .unwrap_or_else(|| "a tool".into());
                        let (text, weight) = match reason {
                            Some(r) => (format!("denied {tool}: {r}"), 0.95),
                            None => (format!("denied {tool}"), 0.9),
                        };
                        push_signal(
                            open,
                            Signal {
                                line,
                                label: Label::UserCorrection,
                                signal: "tool_denial".into(),
                                text: clip_chars(&text, EVIDENCE_CHARS),
                                weight,
                                followup: None,
                            },
                        );
                        self.awaiting_followup = Some(open.signals.len() - 1);
                    }
                }
                FeedbackType::Interruption => {
                    if self.open.is_some() {
                        self.interrupted_at = Some(line);
                    }
                }
            }
        }
        self.tool_results(ctx.redactor, line, rec);
    }

    fn prompt(
        &mut self,
        ctx: &Ctx<'_>,
        session_id: &str,
        p: &Prompt<'_>,
        out: &mut Vec<EpisodeRow>,
    ) {
        let rules = ctx.rules;
        let Prompt {
            line,
            text,
            timestamp,
            previous_ts,
        } = *p;
        let s = &rules.settings;
        let prompt_terms = terms::of(text, 64);
        // An interruption followed by a prompt redirects the work in progress. The signal
        // belongs to the redirecting turn (the rubric's rule 2), which this prompt opens, and
        // names its line (the interruption lies before the turn, maybe in another episode).
        let redirect = match (self.interrupted_at.take(), &self.open) {
            (Some(_), Some(_)) => Some(Signal {
                line,
                label: Label::UserCorrection,
                signal: "interruption_redirect".into(),
                text: clip_chars(first_line(text), EVIDENCE_CHARS),
                weight: 0.85,
                followup: None,
            }),
            _ => None,
        };
        let after_interruption = redirect.is_some();
        // What the previous turn did: a prompt after edits judges them.
        let after_edits = self
            .open
            .as_ref()
            .and_then(|o| o.turn.as_ref())
            .is_some_and(|t| t.facts.edits > 0);
        if let Some(open) = &mut self.open {
            end_turn(open, line.saturating_sub(1));
            // The prompt after options laid out may pick one.
            for n in open.notes.iter_mut().filter(|n| n.phrase == OPTIONS) {
                if n.choice.is_none() && n.line < line {
                    n.choice = Some((line, clip_chars(text.trim(), 300)));
                }
            }
        }
        let gap = match (previous_ts, timestamp) {
            (Some(a), Some(b)) => unix_millis_from_iso(b)
                .zip(unix_millis_from_iso(a))
                .map(|(b, a)| b - a),
            _ => None,
        };
        let cut = match &self.open {
            None => Some("start".to_string()),
            Some(open) => self.pending_cut.take().or_else(|| {
                if gap.is_some_and(|g| g > s.idle_gap_ms) {
                    return Some("idle_gap".into());
                }
                match s.mode {
                    Mode::Window => {
                        (open.turns >= s.window_turns.max(1) as i64).then(|| "window".into())
                    }
                    Mode::Topic => {
                        let distinct = prompt_terms.len();
                        if distinct < s.min_prompt_terms {
                            return None;
                        }
                        let shared = prompt_terms
                            .iter()
                            .filter(|t| open.vocab.contains(*t))
                            .count();
                        ((shared as f64) < s.topic_threshold * distinct as f64)
                            .then(|| "topic".into())
                    }
                }
            }),
        };
        self.pending_cut = None;
        self.turns += 1;
        if let Some(reason) = cut {
            if let Some(open) = self.open.take() {
                let end = line.saturating_sub(1).max(open.start_line);
                let row = self.row(ctx.drafter, &open, session_id, end, true);
                ctx.drafter
                    .keep(&mut self.kept, &mut self.kept_titles, &row.snippets);
                out.push(row);
            }
            self.episodes += 1;
            self.awaiting_followup = None;
            self.open = Some(Open::new(
                self.episodes,
                self.turns,
                line,
                timestamp,
                reason,
                Some(clip_chars(first_line(text), 200)).filter(|t| !t.is_empty()),
            ));
        } else if let Some(open) = &mut self.open {
            open.turns += 1;
        }
        // Nothing to correct before the assistant has done something in this file.
        let first_of_file = self.turns == 1 && !self.spoke_first;
        let Some(open) = &mut self.open else { return };
        let mut facts = Facts {
            prompt_bytes: u32::try_from(text.len()).unwrap_or(u32::MAX),
            after_question: self.asked,
            after_interruption,
            after_edits,
            first_of_file,
            pasted_failure: pasted_failure(head_bytes(text, PROMPT_SCAN_BYTES)).is_some(),
            ..Facts::default()
        };
        facts.add_words(
            Source::Prompt,
            text,
            triage_model::features::PROMPT_BYTES,
            &triage_model::keeper(),
        );
        if text.trim_end().ends_with('?') {
            facts.add_feature(&["p_asks"], &triage_model::keeper());
        }
        if text.contains("```") || text.lines().count() > 5 {
            facts.add_feature(&["p_block"], &triage_model::keeper());
        }
        open.turn = Some(Turn {
            ordinal: self.turns,
            start_line: line,
            signals: Vec::new(),
            answered: first_of_file,
            prompt: clip_chars(text.trim(), 400),
            facts,
        });
        if let Some(sig) = redirect {
            push_signal(open, sig);
        }
        add_vocab(&mut open.vocab, prompt_terms);
        // A prompt that corrects (never the session's first prompt: nothing to correct yet).
        if !first_of_file {
            // Cut at the last word boundary before the limit: a word cut in two ("now" cut
            // to "no") must not read as a word of its own.
            let head = whole_words(head_bytes(text, PROMPT_SCAN_BYTES), text.len());
            // A correction turns down something the assistant did or set out to do; when it
            // had just asked the user a question, a prompt opening with "no" answers it
            // ("no thanks", "no i dont"): no correction at all.
            let hit = rules.correction.hits(head, 1).into_iter().next();
            let answer = hit
                .as_ref()
                .is_some_and(|h| self.asked && head[..h.start].trim().is_empty());
            // "sorry, the receptor's regime too": an apology for a wish left out is a new wish
            // (something to add), not a correction of what was done.
            let addition = hit.as_ref().is_some_and(|h| h.phrase == "sorry") && adds_to(head);
            // A log line pasted in ("[WARN][com.freerdp.client] - No user name set"): the
            // program's words, not the user's judgement.
            let pasted = hit.as_ref().is_some_and(|h| in_pasted_line(head, h.start));
            let hit = hit.filter(|_| !pasted);
            if let Some(hit) = hit.filter(|_| !answer && !addition) {
                // At the start of the prompt it is strong.
                let at_start = head[..hit.start].trim().is_empty();
                push_signal(
                    open,
                    Signal {
                        line,
                        label: Label::UserCorrection,
                        signal: format!("phrase:{}", hit.phrase),
                        text: clip_chars(
                            &sentence_around(head, hit.start, hit.end),
                            EVIDENCE_CHARS,
                        ),
                        weight: if at_start { 0.8 } else { 0.55 },
                        followup: None,
                    },
                );
                // The whole prompt is the first half of the lesson.
                if let Some(sig) = open.signals.last_mut() {
                    sig.text = clip_chars(text.trim(), EVIDENCE_CHARS);
                }
                self.awaiting_followup = Some(open.signals.len() - 1);
            } else if let Some(err) = pasted_failure(head) {
                // A pasted error: what the assistant built or told the user to run failed.
                push_signal(
                    open,
                    Signal {
                        line,
                        label: Label::UserCorrection,
                        signal: "pasted_failure".into(),
                        text: clip_chars(err, EVIDENCE_CHARS),
                        weight: 0.6,
                        followup: None,
                    },
                );
            }
        }
        self.asked = false;
    }
}

/// `head`, a prefix of a text `full_len` bytes long, without the part of a word the cut left at
/// its end (unchanged when nothing was cut, or when it is one word).
fn whole_words(head: &str, full_len: usize) -> &str {
    if head.len() >= full_len || head.ends_with(char::is_whitespace) {
        return head;
    }
    match head.rfind(char::is_whitespace) {
        Some(i) => &head[..i],
        None => head,
    }
}

/// JSON text of a small collection stored as a text column.
fn to_json<T: Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| "[]".into())
}

/// Keep the larger of two ISO timestamps, reusing the string's buffer.
fn set_max(slot: &mut Option<String>, ts: &str) {
    match slot {
        Some(cur) if ts > cur.as_str() => {
            cur.clear();
            cur.push_str(ts);
        }
        Some(_) => {}
        None => *slot = Some(ts.to_string()),
    }
}

/// Whether a prompt asks for something more ("also", "too", "as well", "también").
fn adds_to(prompt: &str) -> bool {
    prompt
        .split(|c: char| !c.is_alphanumeric())
        .map(str::to_lowercase)
        .any(|w| {
            matches!(
                w.as_str(),
                "also" | "too" | "tambien" | "también" | "additionally" | "aussi" | "auch"
            )
        })
        || prompt.to_lowercase().contains("as well")
}
