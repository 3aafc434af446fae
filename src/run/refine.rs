//! `[refine]`: an optional command the user chose (a local model runner, `claude -p`) turns
//! each closed non-routine episode into at most two learnings.
//!
//! Why a command and not a built-in model: Gleaner stays deterministic and local by default;
//! people who want a model's wording pick theirs. Why it can never hurt ingestion: it runs on
//! its own worker, one episode at a time, after the episode's rows are committed, with a
//! timeout and a bounded output; a failure is recorded (`refinements`, status) and retried up to
//! `max_attempts`, never propagated. What it returns is treated like any other input: redacted,
//! then through the snippet gates, and stored with origin `refined`.
//!
//! Protocol: the command runs through `sh -c` and reads ONE JSON object on stdin:
//! `{"episode": {id, session_id, project, triage, labels, title, start_line, end_line},
//! "text": <the episode's transcript lines, redacted>, "snippets": [{type, title, content}],
//! "instructions": <what to return>}`. It prints JSON on stdout: an array of at most two
//! `{"observation", "generalization", "type", "title"}` objects, or `{"learnings": [...]}`.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::config::RefineConfig;
use crate::extract::redact::Redactor;
use crate::extract::rows::{now_iso, SnippetRow};
use crate::snippet::excerpt::{excerpt, Selection};
use crate::snippet::{self as snip, SnippetType};
use crate::store::{PendingEpisode, SnippetSource, Store, StoreError};

/// Longest episode text sent to the command, in bytes.
const MAX_INPUT_TEXT: usize = 60_000;
/// Longest output read from the command, in bytes.
const MAX_OUTPUT: usize = 256 * 1024;
/// Learnings kept per episode.
const MAX_LEARNINGS: usize = 2;

const INSTRUCTIONS: &str = "Read this episode of a coding session. Reply with JSON only: an \
array of at most 2 objects {\"observation\": what happened, concretely, \"generalization\": \
the reusable lesson, \"type\": \"pattern\"|\"mistake\"|\"decision\"|\"preference\", \"title\": \
a short title}. Reply [] when nothing is worth keeping.";

/// What one pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RefineReport {
    /// Episodes the command handled.
    pub refined: u64,
    /// Episodes whose run failed (timeout, exit status, unreadable output).
    pub failed: u64,
    /// Learnings stored.
    pub learnings: u64,
}

/// Why one run failed (recorded, never propagated).
#[derive(Debug, thiserror::Error)]
enum RunFailure {
    #[error("could not start the command: {0}")]
    Spawn(std::io::Error),
    #[error("timed out after {0} s")]
    Timeout(u64),
    #[error("exited with {0}")]
    Status(std::process::ExitStatus),
    #[error("output is not JSON learnings: {0}")]
    Output(String),
    #[error("reading the command failed: {0}")]
    Io(std::io::Error),
}

/// Refine up to `limit` pending episodes, one at a time. Only a store failure is an error.
pub async fn refine_pending(
    store: &Store,
    cfg: &RefineConfig,
    redactor: &Arc<Redactor>,
    limit: i64,
) -> Result<RefineReport, StoreError> {
    let mut report = RefineReport::default();
    let Some(command) = cfg.command.as_deref() else {
        return Ok(report);
    };
    for ep in store.pending_refinements(cfg.max_attempts, limit).await? {
        let snippets = store.episode_snippets(ep.id).await?;
        let input = input_json(&ep, &snippets, redactor).await;
        let attempts = ep.attempts + 1;
        match run_command(command, &input, cfg.timeout).await {
            Ok(learnings) => {
                let mut stored = 0;
                for row in learnings
                    .iter()
                    .take(MAX_LEARNINGS)
                    .filter_map(|l| to_row(l, &ep, redactor))
                {
                    let src = SnippetSource {
                        session_id: &ep.session_id,
                        project: &ep.project,
                        source_file: &ep.path,
                        episode_id: Some(ep.id),
                        created_at: &now_iso(),
                    };
                    if store.insert_snippet(&src, &row).await?.is_some() {
                        stored += 1;
                    }
                }
                store
                    .record_refinement(ep.id, true, attempts, stored, None, &now_iso())
                    .await?;
                report.refined += 1;
                report.learnings += stored as u64;
                tracing::info!(episode = ep.id, learnings = stored, "episode refined");
            }
            Err(e) => {
                let msg = e.to_string();
                store
                    .record_refinement(ep.id, false, attempts, 0, Some(&msg), &now_iso())
                    .await?;
                report.failed += 1;
                tracing::warn!(episode = ep.id, attempts, error = %msg, "refine command failed");
            }
        }
    }
    Ok(report)
}

/// The daemon's refine worker: a pass every `interval` until `cancel`; counts go to `stats`.
pub async fn worker(
    store: Store,
    cfg: RefineConfig,
    redactor: Arc<Redactor>,
    stats: Arc<super::pump::Stats>,
    cancel: tokio_util::sync::CancellationToken,
) {
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = tokio::time::sleep(cfg.interval) => {}
        }
        match refine_pending(&store, &cfg, &redactor, 20).await {
            Ok(r) => {
                stats.refined.fetch_add(r.refined, Ordering::Relaxed);
                stats.refine_failed.fetch_add(r.failed, Ordering::Relaxed);
            }
            Err(e) => tracing::warn!(error = %e, "refine pass failed; retrying later"),
        }
    }
}

/// The command's stdin: the episode, its transcript lines (redacted) and its snippets.
async fn input_json(
    ep: &PendingEpisode,
    snippets: &[crate::store::EpisodeSnippet],
    redactor: &Arc<Redactor>,
) -> String {
    let (path, redactor) = (ep.path.clone(), redactor.clone());
    let (from, to) = (ep.start_line.max(1) as u64, ep.end_line.max(1) as u64);
    // The transcript may be gone (Claude Code deletes old ones): the snippets still go.
    let text = super::blocking(move || {
        excerpt(
            Path::new(&path),
            Selection::Lines(from, to.max(from)),
            &redactor,
        )
        .map(|x| x.content)
        .unwrap_or_default()
    })
    .await
    .unwrap_or_default();
    serde_json::json!({
        "episode": {
            "id": ep.id,
            "session_id": ep.session_id,
            "project": ep.project,
            "triage": ep.triage,
            "labels": serde_json::from_str::<serde_json::Value>(&ep.labels).unwrap_or_default(),
            "title": ep.title,
            "start_line": ep.start_line,
            "end_line": ep.end_line,
        },
        "text": crate::text::truncate_bytes(&text, MAX_INPUT_TEXT),
        "snippets": snippets.iter().map(|(t, title, content)| serde_json::json!({
            "type": t, "title": title, "content": content,
        })).collect::<Vec<_>>(),
        "instructions": INSTRUCTIONS,
    })
    .to_string()
}

/// Run `command` with `input` on stdin; its stdout parsed as learnings.
async fn run_command(
    command: &str,
    input: &str,
    timeout: std::time::Duration,
) -> Result<Vec<serde_json::Value>, RunFailure> {
    let mut child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(RunFailure::Spawn)?;
    let mut stdin = child.stdin.take();
    let mut stdout = child.stdout.take();
    let io = async {
        if let Some(s) = stdin.as_mut() {
            // A command that does not read its input is fine: ignore a closed pipe.
            let _ = s.write_all(input.as_bytes()).await;
        }
        drop(stdin.take());
        let mut out = Vec::new();
        if let Some(s) = stdout.as_mut() {
            s.take(MAX_OUTPUT as u64)
                .read_to_end(&mut out)
                .await
                .map_err(RunFailure::Io)?;
        }
        let status = child.wait().await.map_err(RunFailure::Io)?;
        Ok::<_, RunFailure>((status, out))
    };
    let (status, out) = tokio::time::timeout(timeout, io)
        .await
        .map_err(|_| RunFailure::Timeout(timeout.as_secs()))??;
    if !status.success() {
        return Err(RunFailure::Status(status));
    }
    parse_learnings(&String::from_utf8_lossy(&out))
}

/// An array of learnings, or `{"learnings": [...]}`; surrounding prose or a code fence around
/// the JSON is tolerated (models add them).
fn parse_learnings(out: &str) -> Result<Vec<serde_json::Value>, RunFailure> {
    let start = out.find(['[', '{']);
    let end = out.rfind([']', '}']);
    let json = match (start, end) {
        (Some(s), Some(e)) if e >= s => &out[s..=e],
        _ => return Err(RunFailure::Output("no JSON found".into())),
    };
    match serde_json::from_str::<serde_json::Value>(json) {
        Ok(serde_json::Value::Array(a)) => Ok(a),
        Ok(serde_json::Value::Object(o)) => match o.get("learnings") {
            Some(serde_json::Value::Array(a)) => Ok(a.clone()),
            _ => Err(RunFailure::Output(
                "an object without a learnings array".into(),
            )),
        },
        Ok(_) => Err(RunFailure::Output("neither an array nor an object".into())),
        Err(e) => Err(RunFailure::Output(e.to_string())),
    }
}

/// A learning as a snippet row, redacted and through the gates; `None` when it does not pass.
fn to_row(l: &serde_json::Value, ep: &PendingEpisode, redactor: &Redactor) -> Option<SnippetRow> {
    let field = |k: &str| {
        l.get(k)
            .and_then(|v| v.as_str())
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(|v| redactor.redact(v, &mut BTreeMap::new()).into_owned())
    };
    let generalization = field("generalization")?;
    let observation = field("observation").unwrap_or_default();
    let kind = match field("type").as_deref() {
        Some("mistake") => SnippetType::ErrorReasoning,
        Some("decision") => SnippetType::DecisionRationale,
        _ => SnippetType::LearningPattern,
    };
    let title = crate::text::clip_chars(
        &field("title").unwrap_or_else(|| snip::title_from(&generalization)),
        snip::MAX_TITLE_CHARS,
    );
    let content = if observation.is_empty() {
        generalization.clone()
    } else {
        format!("{generalization}\n\nWhat happened: {observation}")
    };
    let content = crate::text::truncate_bytes(&content, snip::MAX_CONTENT_BYTES);
    snip::validate(&title, &content).ok()?;
    let metadata = snip::with_learning(
        &snip::metadata_json(&content, Some(ep.triage.as_str()), None, None),
        &observation,
        &generalization,
    );
    let mut tags = vec!["refined".to_string()];
    tags.extend(snip::project_tag(&ep.project));
    if let Some(t) = field("type") {
        tags.push(format!("learning:{}", t.to_lowercase()));
    }
    let (start, end) = (ep.start_line.max(1) as u64, ep.end_line.max(1) as u64);
    Some(SnippetRow {
        origin: "refined",
        snippet_type: kind.as_str().to_string(),
        content_hash: snip::normalized_hash(&content),
        title,
        content,
        line_start: start,
        line_end: end.max(start),
        tags,
        metadata,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn learnings_parse_from_arrays_objects_and_fenced_replies() {
        assert_eq!(
            parse_learnings(r#"[{"generalization":"x"}]"#)
                .unwrap()
                .len(),
            1
        );
        assert_eq!(
            parse_learnings("Sure!\n```json\n{\"learnings\": [{}, {}]}\n```")
                .unwrap()
                .len(),
            2
        );
        assert!(parse_learnings("no json here").is_err());
        assert!(parse_learnings(r#"{"other": 1}"#).is_err());
    }
}
