//! Tool calls and their results: which call failed, what changed after it, and the success
//! that closes it (an `error_recovery`); sub-agents started; reverts (a `pivot`).

use std::collections::BTreeMap;

use super::builder::Ctx;
use super::open::{add_vocab, push_capped, push_episode_signal, push_signal};
use super::text::first_line;
use super::*;
use crate::extract::feedback;
use crate::extract::redact::Redactor;
use crate::parse::{Block, Record};
use crate::text::clip_chars;
use crate::triage_model;

impl Builder {
    /// The tool results of a user record: failures to remember, successes that close one.
    pub(super) fn tool_results(&mut self, redactor: &Redactor, line: u64, rec: &Record<'_>) {
        for b in rec.blocks() {
            let Block::ToolResult {
                tool_use_id,
                is_error,
                ..
            } = b
            else {
                continue;
            };
            let call = self.calls.remove(tool_use_id.as_ref());
            let Some(open) = &mut self.open else {
                continue;
            };
            if matches!(
                call.as_ref().map(|c| c.name.as_str()),
                Some("Task" | "Agent")
            ) {
                let agent = rec
                    .tool_use_result_agent_id()
                    .map(|a| format!("agent-{a}"))
                    .unwrap_or_else(|| tool_use_id.to_string());
                push_capped(&mut open.agents, agent, MAX_AGENTS);
            }
            if let Some(turn) = &mut open.turn {
                if !*is_error && turn.facts.errors > 0 {
                    turn.facts.ok_after_error += 1;
                }
            }
            if *is_error {
                let text = b.tool_result_text().unwrap_or_default();
                // Denials and interruptions are the user's doing (feedback), and a call cancelled
                // because a sibling failed did not fail itself.
                if text.starts_with(feedback::DENIAL_PREFIX)
                    || text.starts_with("The user doesn't want to")
                    || text.contains("[Request interrupted")
                    || text.contains("Cancelled: parallel tool call")
                    || text.contains("Sibling tool call errored")
                {
                    continue;
                }
                // Claude Code wraps its own refusals in `<tool_use_error>`: the message is
                // inside.
                if let Some(turn) = &mut open.turn {
                    turn.facts.errors += 1;
                    if turn.facts.error_line == 0 {
                        turn.facts.error_line = line;
                    }
                }
                let text = text
                    .replace("<tool_use_error>", "")
                    .replace("</tool_use_error>", "");
                let cut = crate::text::cut_tool_output(&text, 12);
                let cut = crate::text::truncate_bytes(&cut, 1500);
                let error = redactor.redact(&cut, &mut BTreeMap::new()).into_owned();
                let kind = tags::error_kind(&error);
                if let Some(turn) = open.turn.as_mut().filter(|t| t.facts.errors <= 3) {
                    turn.facts.add_words(
                        triage_model::Source::Error,
                        &error,
                        triage_model::features::ERROR_BYTES,
                        &triage_model::keeper(),
                    );
                    let tool = call.as_ref().map_or("unknown", |c| c.name.as_str());
                    turn.facts
                        .add_feature(&["et:", tool], &triage_model::keeper());
                    if let Some(k) = &kind {
                        turn.facts.add_feature(&["ek:", k], &triage_model::keeper());
                    }
                }
                // Tool mechanics (an edit whose old text moved, a file not read first, a shell
                // already gone) are how the tools work, not a failure anyone learns from.
                if tags::is_mechanics(&kind, call.as_ref().map(|c| c.name.as_str())) {
                    continue;
                }
                if let Some(k) = &kind {
                    open.error_kinds.insert(k.clone());
                }
                let (tool, key, target) = match call {
                    Some(c) => (c.name, c.key, c.target),
                    None => ("tool".into(), String::new(), None),
                };
                if open.failures.len() >= MAX_FAILURES {
                    open.failures.remove(0);
                }
                open.failures.push(Failure {
                    line,
                    tool,
                    key,
                    target,
                    error,
                    kind,
                    tried: Vec::new(),
                    actions: Vec::new(),
                });
            } else if let Some(c) = call.filter(|c| {
                // Asking a program for its help or version fixes nothing.
                !(c.name == "Bash" && c.target.as_deref().is_some_and(terms::is_help_query))
            }) {
                // Success: does it close a failure on the same tool or target?
                // A command must also do what the failed one tried (not just share its program).
                let answers = |f: &Failure| match (c.name.as_str(), &f.target, &c.target) {
                    ("Bash", Some(a), Some(b)) => fix::same_goal(a, b),
                    _ => true,
                };
                let Some(i) = open
                    .failures
                    .iter()
                    .position(|f| !f.key.is_empty() && f.key == c.key && answers(f))
                else {
                    // Only a command can put a command's failure right, and only one of
                    // this turn (a tool's output is read only then: it may be large).
                    let start = open.turn.as_ref().map_or(u64::MAX, |t| t.start_line);
                    if c.name == "Bash"
                        && open
                            .failures
                            .iter()
                            .any(|f| f.tool == "Bash" && f.line >= start)
                    {
                        other_way(open, line, &c, || b.tool_result_text().unwrap_or_default());
                    }
                    continue;
                };
                let failure = open.failures.remove(i);
                open.failures.retain(|f| f.key != c.key);
                let fix_text = self.last_text.clone().filter(|(l, _)| *l >= failure.line);
                let first_error = failure.first_error_line().to_string();
                // A failure of an earlier turn fixed now is the episode's recovery, not this
                // turn's: a turn recovers from its own failures.
                let same_turn = open
                    .turn
                    .as_ref()
                    .is_some_and(|t| failure.line >= t.start_line);
                let record = if same_turn {
                    push_signal
                } else {
                    push_episode_signal
                };
                record(
                    open,
                    Signal {
                        line: failure.line,
                        label: Label::ErrorRecovery,
                        signal: "error_then_success".into(),
                        text: clip_chars(
                            &format!(
                                "{} failed (line {}), succeeded at line {}: {}",
                                failure.tool, failure.line, line, first_error
                            ),
                            EVIDENCE_CHARS,
                        ),
                        weight: 0.85,
                        followup: None,
                    },
                );
                if open.recoveries.len() < MAX_RECOVERIES {
                    let call = match &c.target {
                        Some(t) => format!("{} {}", c.name, t),
                        None => c.name.clone(),
                    };
                    open.recoveries.push(Recovery {
                        failure,
                        line,
                        call,
                        fix_text,
                    });
                }
            }
        }
    }

    pub(super) fn remember_calls(&mut self, ctx: &Ctx<'_>, line: u64, rec: &Record<'_>) {
        for b in rec.blocks() {
            let Block::ToolUse {
                id,
                name,
                target,
                edit,
            } = b
            else {
                continue;
            };
            let target = target
                .as_deref()
                .map(|t| match ctx.targets.get(id.as_ref()) {
                    Some(clean) => (*clean).to_string(),
                    None => ctx.redactor.redact(t, &mut BTreeMap::new()).into_owned(),
                });
            let key = terms::call_key(name, target.as_deref());
            // It acted after asking: the question is no longer the last word.
            self.asked = false;

            if let Some(open) = &mut self.open {
                *open.tools.entry(name.to_string()).or_default() += 1;
                if let Some(turn) = &mut open.turn {
                    turn.facts.calls += 1;
                    turn.facts
                        .add_feature(&["t:", name], &triage_model::keeper());
                    if matches!(
                        name.as_ref(),
                        "Edit" | "Write" | "MultiEdit" | "NotebookEdit"
                    ) {
                        turn.facts.edits += 1;
                    }
                }
                note_action(open, line, name, &key, target.as_deref(), || {
                    edit_diff(edit, ctx.redactor)
                });
                if let Some(t) = &target {
                    if crate::parse::FILE_TOOLS.contains(&name.as_ref()) {
                        // A file's words join the vocabulary the first time it is touched.
                        if !open.files.contains(t) {
                            push_capped(&mut open.files, t.clone(), MAX_FILES);
                            add_vocab(&mut open.vocab, terms::of_path(t));
                        }
                    }
                    if name == "Bash" && terms::is_revert(t) {
                        push_signal(
                            open,
                            Signal {
                                line,
                                label: Label::Pivot,
                                signal: "revert".into(),
                                text: clip_chars(t, EVIDENCE_CHARS),
                                weight: 0.8,
                                followup: None,
                            },
                        );
                    }
                }
            }
            self.call_seq += 1;
            if self.calls.len() >= MAX_PENDING_CALLS {
                // Drop the oldest call still waiting (its result never came).
                if let Some(oldest) = self
                    .calls
                    .iter()
                    .min_by_key(|(_, c)| c.seq)
                    .map(|(k, _)| k.clone())
                {
                    self.calls.remove(&oldest);
                }
            }
            self.calls.insert(
                id.to_string(),
                Call {
                    name: name.to_string(),
                    key,
                    target,
                    line,
                    seq: self.call_seq,
                },
            );
        }
    }
}

/// The compact diff of an editing call (its first two replacements), redacted: the text a
/// snippet shows as the change that fixed a failure.
fn edit_diff(edit: &crate::parse::EditInput<'_>, redactor: &Redactor) -> Option<String> {
    let diffs: Vec<String> = edit
        .pairs(2)
        .iter()
        .filter_map(|(old, new)| fix::compact_diff(old, new))
        .collect();
    if diffs.is_empty() {
        return None;
    }
    let joined = diffs.join("\n");
    Some(redactor.redact(&joined, &mut BTreeMap::new()).into_owned())
}

/// A failed command put right by a different action (label evidence only, no `Recovery`: the
/// draft of a lesson needs the failed call re-run):
/// - a missing module or program installed (`No module named docx`, then
///   `pip install python-docx` works; an install whose output shows it failed is none);
/// - the very next command after the failure runs the same program another way on what failed
///   (`python3 calendar.py` shadows the standard library; renamed, `python3 cal-widget.py`
///   runs); looking around (`ls`, `cat`, `git log`, ...) is no fix, nor is the program run on
///   something else (`cp b.conf` after `cp a.rules` failed);
/// - a merge or rebase conflict, then the commit (or `--continue`) that concludes it.
///
/// Only failures of the same turn count.
fn other_way(open: &mut Open, line: u64, c: &Call, output: impl FnOnce() -> String) {
    let (Some(cmd), "Bash") = (c.target.as_deref(), c.name.as_str()) else {
        return;
    };
    let head = terms::command_head(cmd);
    if head.is_empty() || terms::is_inspection(&head) {
        return;
    }
    let prog = terms::program(cmd);
    let start = open.turn.as_ref().map_or(u64::MAX, |t| t.start_line);
    // Whether the install's output shows it failed: read once, when first asked.
    let mut output = Some(output);
    let mut seen: Option<bool> = None;
    let mut install_failed = || {
        *seen.get_or_insert_with(|| {
            let text = output.take().map(|f| f()).unwrap_or_default();
            let head = crate::text::head_bytes(&text, 2000).to_lowercase();
            [
                "error",
                "failed",
                "a terminal is required",
                "permission denied",
            ]
            .iter()
            .any(|m| head.contains(m))
        })
    };
    let concludes = head == "git commit" || cmd.contains("--continue");
    let found = open.failures.iter().rev().find(|f| {
        let Some(failed) = f
            .target
            .as_deref()
            .filter(|_| f.tool == "Bash" && f.line >= start)
        else {
            return false;
        };
        if fix::is_conflict(&f.error) {
            return concludes;
        }
        let bash_since = f
            .actions
            .iter()
            .filter(|(l, a)| *l <= c.line && a.starts_with("Bash "))
            .count();
        (fix::is_missing_install(&f.error, cmd) && !install_failed())
            || (bash_since <= 1
                && terms::program(failed) == prog
                && fix::touches_what_failed(failed, cmd))
    });
    let Some(f) = found else { return };
    let fline = f.line;
    if open
        .signals
        .iter()
        .any(|s| s.label == Label::ErrorRecovery && s.line == fline)
    {
        return;
    }
    let text = format!(
        "{} failed (line {fline}), put right at line {line}: {}",
        f.tool,
        f.first_error_line()
    );
    push_signal(
        open,
        Signal {
            line: fline,
            label: Label::ErrorRecovery,
            signal: "fixed_another_way".into(),
            text: clip_chars(&text, EVIDENCE_CHARS),
            weight: 0.75,
            followup: None,
        },
    );
}

/// Record a change (a file edit with its compact diff, a command other than the failed one)
/// against every failure still waiting for its fix. The diff is computed only when some
/// failure takes the change.
fn note_action(
    open: &mut Open,
    line: u64,
    tool: &str,
    key: &str,
    target: Option<&str>,
    diff: impl FnOnce() -> Option<String>,
) {
    let is_edit = EDIT_TOOLS.contains(&tool);
    if !(is_edit || tool == "Bash") || open.failures.is_empty() {
        return;
    }
    // A plan or notes file written meanwhile is not part of any fix.
    if is_edit
        && target.is_some_and(|t| t.contains("/.claude/plans/") || t.contains("\\.claude\\plans\\"))
    {
        return;
    }
    let mut what = match target {
        Some(t) => clip_chars(&format!("{tool} {}", first_line(t)), ACTION_CHARS),
        None => tool.to_string(),
    };
    let takes = |f: &Failure| {
        f.key != key
            && f.actions.len() < MAX_ACTIONS
            && line > f.line
            && f.actions.last().is_none_or(|(_, w)| *w != what)
    };
    if !open.failures.iter().any(takes) {
        return;
    }
    if is_edit {
        if let Some(d) = diff() {
            what = format!("{what}\n{d}");
        }
    }
    for f in &mut open.failures {
        // Retrying the failed call (the same command, the same file) is the test of the fix,
        // shown as "what fixed it", not a change.
        if f.key == key || f.actions.len() >= MAX_ACTIONS || line <= f.line {
            continue;
        }
        if f.actions.last().is_some_and(|(_, w)| *w == what) {
            continue;
        }
        f.actions.push((line, what.clone()));
    }
}

impl Failure {
    /// The first line of its error that says something (not blank, not an elision mark).
    fn first_error_line(&self) -> &str {
        self.error
            .lines()
            .find(|l| !l.trim().is_empty() && l.trim() != "…")
            .unwrap_or("")
    }
}
