//! The episode stage's entry point: one extracted batch in, its episodes and the builder's
//! new state out (both ride in the batch, to be committed with its checkpoint).

use std::collections::HashMap;

use super::{Builder, Drafter, Input, Rules};
use crate::extract::redact::Redactor;
use crate::extract::Extracted;

/// How a batch is fed.
#[derive(Debug, Clone, Copy)]
pub struct Feed<'a> {
    /// Cutting and triage rules.
    pub rules: &'a Rules,
    /// Redacts the one text no row holds (a failed tool's output) as it enters the state.
    pub redactor: &'a Redactor,
    /// What becomes of the open episode after this batch.
    pub last: Last,
    /// Drafts the snippets of the episodes that close (`crate::snippet::draft::Auto`; see
    /// [`Drafter`] for why the stage is handed it).
    pub drafter: &'a dyn Drafter,
}

/// The open episode at the end of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Last {
    /// Not written: more of the file follows at once (a full batch), so it would be written
    /// again in a moment.
    Keep,
    /// Written `open`: the file is caught up and its session may go on.
    Open,
    /// Written `closed`, with its snippets, as the idle sweep would write it when the session
    /// ends: the file is caught up and has not grown for the session timeout (a backfill's
    /// old transcripts). Closing it here, on a reading thread, spares the sweep decoding the
    /// state again at the end of the ingest (the batch records it: `files.episode_closed_offset`).
    Closed,
}

/// Feed the batch to the file's episode builder (created at the batch's generation when there
/// is none, or replaced when the file was truncated or rewritten: line numbers start again).
/// The episodes it closes and the open one (as [`Feed::last`] says) go into the batch, with the
/// builder's new state. The builder gets the rows extraction made (message text, feedback,
/// tool targets), already redacted.
pub fn feed(slot: &mut Option<Box<Builder>>, ex: &mut Extracted<'_>, how: &Feed<'_>) {
    let Some(session_id) = ex.session_id.as_deref() else {
        return;
    };
    let out = &mut ex.rows;
    let generation = out.checkpoint.generation;
    let builder = slot.get_or_insert_with(|| Box::new(Builder::new(generation)));
    if builder.generation != generation {
        **builder = Builder::new(generation);
    }
    // Message and feedback rows are in record order, each tagged with its (line, seq).
    let mut texts = out.messages.iter().peekable();
    let mut fb = 0;
    let mut inputs = Vec::new();
    for (line, p) in &ex.parsed {
        for (seq, rec) in p.records.iter().enumerate() {
            let at = (line.line_no, seq as u32);
            let mut text = None;
            while let Some(m) = texts.peek() {
                if (m.line_no, m.seq) < at {
                    texts.next();
                    continue;
                }
                if (m.line_no, m.seq) == at {
                    text = m.text.as_deref();
                }
                break;
            }
            while out
                .feedback
                .get(fb)
                .is_some_and(|f| (f.line_no, f.seq) < at)
            {
                fb += 1;
            }
            let start = fb;
            while out
                .feedback
                .get(fb)
                .is_some_and(|f| (f.line_no, f.seq) == at)
            {
                fb += 1;
            }
            inputs.push(Input {
                line_no: line.line_no,
                rec,
                text,
                feedback: &out.feedback[start..fb],
            });
        }
    }
    let targets: HashMap<&str, &str> = out
        .tool_uses
        .iter()
        .filter_map(|t| Some((t.tool_use_id.as_str(), t.target.as_deref()?)))
        .collect();
    let rows = builder.feed(how, session_id, inputs, out.checkpoint.lines, &targets);
    out.episodes = rows;
    out.episode_closed = how.last == Last::Closed;
    out.episode_state = Some(crate::extract::rows::pack_state(&builder.to_json()));
}
