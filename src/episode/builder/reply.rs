//! The assistant's side of a turn: its text (decisions weighed, lessons stated, a plan
//! abandoned) and its tool calls, as signals of the open episode.

use super::super::fix::sentences;
use super::super::open::push_signal;
use super::super::text::{
    ends_with_question, head_bytes, in_prose, laid_out_option, named_alternatives,
    paragraph_around, sentence_around,
};
use super::super::*;
use super::Ctx;
use crate::parse::Record;
use crate::text::clip_chars;
use crate::triage_model;

impl Builder {
    pub(super) fn assistant(
        &mut self,
        ctx: &Ctx<'_>,
        line: u64,
        rec: &Record<'_>,
        text: Option<&str>,
    ) {
        let rules = ctx.rules;
        let Some(open) = &mut self.open else {
            // Before the first prompt: only remember calls so results can be matched.
            self.spoke_first |=
                text.is_some_and(|t| !t.trim().is_empty()) || !rec.tool_names().is_empty();
            self.remember_calls(ctx, line, rec);
            return;
        };
        if let Some(text) = text.filter(|t| !t.trim().is_empty()) {
            let first_reply = open.turn.as_ref().is_some_and(|t| !t.answered);
            if let Some(turn) = &mut open.turn {
                turn.answered = true;
                turn_words(&mut turn.facts, line, text, first_reply);
            }
            // "You're right, ..." as the first words of the reply: the prompt corrected it.
            let opening = head_bytes(text.trim_start(), 60);
            if first_reply {
                let acknowledged =
                    rules
                        .acknowledgement
                        .hits(opening, 1)
                        .first()
                        .is_some_and(|hit| {
                            opening[..hit.start]
                                .trim_matches(|c: char| !c.is_alphanumeric())
                                .is_empty()
                        });
                if acknowledged || still_wrong(text) {
                    {
                        // The evidence: the acknowledging sentence (both kinds of hit lie in
                        // the reply's first) and the one after it (what was wrong); the prompt
                        // it answers rides along for the lesson. Only the reply's head is split.
                        let said = sentences(head_bytes(text.trim_start(), 1000))
                            .into_iter()
                            .take(2)
                            .collect::<Vec<_>>();
                        let prompt = open
                            .turn
                            .as_ref()
                            .map(|t| (t.start_line, t.prompt.clone()))
                            .filter(|(_, p)| !p.is_empty());
                        push_signal(
                            open,
                            Signal {
                                line,
                                label: Label::UserCorrection,
                                signal: "acknowledged".into(),
                                text: clip_chars(&said.join(" "), EVIDENCE_CHARS),
                                weight: 0.8,
                                followup: prompt,
                            },
                        );
                    }
                }
            }
            let piece = crate::text::truncate_bytes(text.trim(), LAST_TEXT_BYTES);
            if let Some(i) = self.awaiting_followup.take() {
                if let Some(sig) = open.signals.get_mut(i) {
                    sig.followup = Some((line, piece.clone()));
                }
            }
            // Judged only when a failure is waiting for what was tried (it is not cheap).
            let wants_tried = open
                .failures
                .iter()
                .any(|f| f.tried.len() < MAX_TRIED && line > f.line);
            if wants_tried && crate::text::noise::noise_reason(text).is_none() {
                for f in &mut open.failures {
                    if f.tried.len() < MAX_TRIED && line > f.line {
                        f.tried
                            .push((line, crate::text::truncate_bytes(text.trim(), 600)));
                    }
                }
            }
            if open.vocab.len() < MAX_VOCAB {
                // The subject of a reply shows in its opening; a long reply's tail adds little.
                terms::add_to(
                    &mut open.vocab,
                    head_bytes(text, VOCAB_SCAN_BYTES),
                    MAX_VOCAB,
                );
            }
            // A message that ends by asking the user ("Which one feels right?", "should I
            // commit them?") decides nothing: no rationale is kept from it. When it also
            // recommends nothing, its options were handed over for the user to pick: the
            // option labels ("A) ...", "Option 2") are then no design-decision signal either.
            let asks_user = ends_with_question(text);
            self.asked = asks_user;
            if let Some(turn) = open.turn.as_mut().filter(|_| asks_user) {
                turn.facts.add_feature(&["a_asks"], &triage_model::keeper());
            }
            let handed_over = asks_user
                && !rules
                    .decision
                    .hits(text, 8)
                    .iter()
                    .any(|h| in_prose(text, h.start) && !is_option_label(&h.phrase));
            let mut options_line = None;
            // Alternatives laid out side by side ("A) ... B) ...", "Option 1 ... Option 2").
            // Named alternatives in a list ("- **A** — ...") are laid out the same way.
            if let Some(opt) = laid_out_option(text)
                .filter(|_| !handed_over)
                .or_else(|| named_alternatives(text))
            {
                options_line = Some(opt.to_string());
                push_signal(
                    open,
                    Signal {
                        line,
                        label: Label::DesignDecision,
                        signal: "options".into(),
                        text: clip_chars(opt, EVIDENCE_CHARS),
                        weight: 0.7,
                        followup: None,
                    },
                );
            }
            let prev = self.last_text.clone();
            for (kind, phrases, label, weight) in [
                (NoteKind::Pivot, &rules.pivot, Label::Pivot, 0.75),
                (
                    NoteKind::Decision,
                    &rules.decision,
                    Label::DesignDecision,
                    0.7,
                ),
                (NoteKind::Learning, &rules.learning, Label::Routine, 0.0),
            ] {
                for hit in phrases
                    .hits(text, 4)
                    .into_iter()
                    .filter(|h| in_prose(text, h.start))
                    .take(2)
                {
                    let sentence = sentence_around(text, hit.start, hit.end);
                    if hit.needs_choice && rules.choice.hits(&sentence, 1).is_empty() {
                        continue;
                    }
                    if label != Label::Routine && !(handed_over && is_option_label(&hit.phrase)) {
                        push_signal(
                            open,
                            Signal {
                                line,
                                label,
                                signal: format!("phrase:{}", hit.phrase),
                                text: clip_chars(&sentence, EVIDENCE_CHARS),
                                weight,
                                followup: None,
                            },
                        );
                    }
                    let n = open.notes.iter().filter(|n| n.kind == kind).count();
                    // A question ("should I use option 1?") weighs nothing yet.
                    let question = sentence.trim_end().ends_with('?');
                    if n < MAX_NOTES_PER_KIND
                        && !question
                        && (kind != NoteKind::Decision || !asks_user)
                        && !open
                            .notes
                            .iter()
                            .any(|n| n.kind == kind && n.line == line && n.phrase != OPTIONS)
                    {
                        open.notes.push(Note {
                            kind,
                            line,
                            phrase: hit.phrase.clone(),
                            sentence,
                            text: paragraph_around(text, hit.start, kind != NoteKind::Learning),
                            context: prev.clone().filter(|(l, _)| *l < line),
                            choice: None,
                        });
                    }
                }
            }
            // Options laid out: kept whole, for the choice the next prompt may make.
            if let Some(opt) = options_line {
                if open.notes.iter().filter(|n| n.phrase == OPTIONS).count() < MAX_NOTES_PER_KIND {
                    open.notes.push(Note {
                        kind: NoteKind::Decision,
                        line,
                        phrase: OPTIONS.into(),
                        sentence: opt,
                        text: crate::text::truncate_bytes(text.trim(), 4000),
                        context: prev.filter(|(l, _)| *l < line),
                        choice: None,
                    });
                }
            }
            self.last_text = Some((line, piece));
        }
        self.remember_calls(ctx, line, rec);
    }
}

/// The learned triage's view of an assistant text: counted, its layout noted, and its words
/// taken (the first reply's opening on its own, then every text's head until the turn's budget
/// is spent). Whether it ends by asking is noted by the caller, which works that out anyway.
fn turn_words(facts: &mut triage_model::Facts, line: u64, text: &str, first_reply: bool) {
    use triage_model::features::{REPLY_BYTES, TEXT_BYTES, TURN_TEXT_BYTES};
    let keep = triage_model::keeper();
    facts.texts += 1;
    if facts.reply_line == 0 {
        facts.reply_line = line;
    }
    if first_reply {
        facts.add_words(
            triage_model::Source::Reply,
            text.trim_start(),
            REPLY_BYTES,
            &keep,
        );
    }
    // How the text is laid out: a table or a list weighs alternatives, a long text is a plan
    // or a report. One pass over the head's lines.
    let head = head_bytes(text, TEXT_BYTES * 4);
    if head.contains("\n|") && head.contains("---") {
        facts.add_feature(&["a_table"], &keep);
    }
    let (mut items, mut headings) = (0, false);
    for l in head.lines() {
        headings |= l.starts_with('#');
        let l = l.trim_start();
        if l.starts_with("- ") || l.starts_with("* ") || l.starts_with("1. ") {
            items += 1;
        }
    }
    if items >= 3 {
        facts.add_feature(&["a_list"], &keep);
    }
    if headings {
        facts.add_feature(&["a_headings"], &keep);
    }
    if text.len() > 3_000 {
        facts.add_feature(&["a_long"], &keep);
    }
    let left = TURN_TEXT_BYTES.saturating_sub(facts.text_bytes as usize);
    if left > 0 {
        let take = left.min(TEXT_BYTES).min(text.len());
        facts.add_words(triage_model::Source::Text, text, take, &keep);
        facts.text_bytes += take as u32;
    }
}

/// Whether the first sentence of the assistant's answer says that what it did last is still
/// wrong ("The buttons are still showing.", "I can see the workspace is still a white box"):
/// the prompt reported a failed fix, whatever its words.
fn still_wrong(text: &str) -> bool {
    const PERSISTS: &[&str] = &[
        " is still ",
        " are still ",
        " still showing",
        " still there",
        " still not ",
        " still fails",
        " still failing",
        " still broken",
        " still the same",
    ];
    let t = text.trim_start();
    let end = t
        .find(['.', '!', '?', '\n', ':'])
        .unwrap_or(t.len())
        .min(200);
    let first = head_bytes(t, end).to_ascii_lowercase();
    PERSISTS.iter().any(|p| first.contains(p))
}

/// A decision phrase that only names an option ("option a", "option 2"), not a choice.
fn is_option_label(phrase: &str) -> bool {
    phrase.starts_with("option ")
}
