//! Small updates of the episode being built: signals for the episode and the turn being read,
//! the end of a turn, capped lists and vocabulary.

use std::collections::BTreeSet;

use super::*;

/// Record a signal for the episode (its snippets and evidence) and for the turn being read
/// (its own label): a signal belongs to the turn in which it was seen.
pub(super) fn push_signal(open: &mut Open, s: Signal) {
    if let Some(turn) = &mut open.turn {
        if turn.signals.len() < MAX_TURN_SIGNALS {
            turn.signals.push(Signal {
                followup: None,
                ..s.clone()
            });
        }
    }
    if open.signals.len() < MAX_SIGNALS {
        open.signals.push(s);
    }
}

/// Record a signal for the episode only (not the turn being read).
pub(super) fn push_episode_signal(open: &mut Open, s: Signal) {
    if open.signals.len() < MAX_SIGNALS {
        open.signals.push(s);
    }
}

/// End the turn being read at `end_line`: decide its label and log it.
pub(super) fn end_turn(open: &mut Open, end_line: u64) {
    if let Some(turn) = open.turn.take() {
        let label = triage::turn_label(&turn, end_line.max(turn.start_line));
        if open.turn_log.len() < MAX_TURN_LABELS || label.triage != Label::Routine {
            open.turn_log.push(label);
        }
    }
}

pub(super) fn push_capped(v: &mut Vec<String>, s: String, cap: usize) {
    if v.len() < cap && !v.contains(&s) {
        v.push(s);
    }
}

pub(super) fn add_vocab(
    vocab: &mut BTreeSet<terms::Term>,
    terms: impl IntoIterator<Item = terms::Term>,
) {
    for t in terms {
        if vocab.len() >= MAX_VOCAB {
            break;
        }
        vocab.insert(t);
    }
}
