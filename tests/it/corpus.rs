//! The whole real corpus, on both backends.

use std::collections::{BTreeSet, HashMap, HashSet};

use crate::both_backends;
use crate::common::*;
use gleaner::tail::discovery;

/// Independent oracle: JSON objects of the message kinds on complete lines (a finished file's
/// last line without its newline is one when it is whole JSON).
fn expected_messages(bytes: &[u8]) -> u64 {
    let (end, _) = finished_checkpoint(bytes);
    let mut n = 0;
    for line in bytes[..end as usize].split(|&b| b == b'\n') {
        let mut line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.starts_with(b"\xEF\xBB\xBF") {
            line = &line[3..];
        }
        for v in serde_json::Deserializer::from_slice(line).into_iter::<serde_json::Value>() {
            let Ok(v) = v else { break };
            if matches!(
                v.get("type").and_then(|t| t.as_str()),
                Some("user" | "assistant" | "system" | "summary")
            ) {
                n += 1;
            }
        }
    }
    n
}

/// The keys of a transcript's message lines (store::copies): the line uuid, or for a line
/// without one its kind, subtype, time and line number.
fn message_keys(bytes: &[u8]) -> Vec<String> {
    let (end, _) = finished_checkpoint(bytes);
    let mut keys = Vec::new();
    for (at, line) in bytes[..end as usize].split(|&b| b == b'\n').enumerate() {
        let mut line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.starts_with(b"\xEF\xBB\xBF") {
            line = &line[3..];
        }
        for v in serde_json::Deserializer::from_slice(line).into_iter::<serde_json::Value>() {
            let Ok(v) = v else { break };
            let kind = v.get("type").and_then(|t| t.as_str()).unwrap_or_default();
            if !matches!(kind, "user" | "assistant" | "system" | "summary") {
                continue;
            }
            keys.push(match v.get("uuid").and_then(|u| u.as_str()) {
                Some(u) => u.to_string(),
                None => format!("{kind}/{}/{}/{}", v["subtype"], v["timestamp"], at + 1),
            });
        }
    }
    keys
}

/// The bytes of each transcript's files, by (session, agent).
type Transcripts = HashMap<(Option<String>, Option<String>), Vec<Vec<u8>>>;

/// Model names are stored once (`models`) and named by id: the names the assistant lines of
/// the corpus carry, each line's through an id that exists.
/// (Copies of one transcript store a line once: counted once per uuid within a transcript.)
async fn check_models(store: &gleaner::store::Store, transcripts: &Transcripts) {
    let (mut names, mut lines) = (BTreeSet::new(), 0i64);
    for files in transcripts.values() {
        let mut seen = HashSet::new();
        for bytes in files {
            let (end, _) = finished_checkpoint(bytes);
            for v in bytes[..end as usize]
                .split(|&b| b == b'\n')
                .filter_map(|l| serde_json::from_slice::<serde_json::Value>(l).ok())
            {
                if v["type"] == "assistant" {
                    if let Some(m) = v["message"]["model"].as_str() {
                        let first = files.len() == 1
                            || v["uuid"]
                                .as_str()
                                .is_none_or(|u| seen.insert(u.to_string()));
                        if first {
                            names.insert(m.to_string());
                            lines += 1;
                        }
                    }
                }
            }
        }
    }
    let stored_names =
        "SELECT DISTINCT mo.name FROM messages m JOIN models mo ON mo.id = m.model_id";
    // Assistant lines naming a model, and ids naming no `models` row.
    let counts = "SELECT (SELECT COUNT(*) FROM (SELECT DISTINCT m.file_id, m.line_no \
                  FROM messages m JOIN models mo ON mo.id = m.model_id) t), \
                  (SELECT COUNT(*) FROM messages m WHERE m.model_id IS NOT NULL \
                  AND NOT EXISTS (SELECT 1 FROM models mo WHERE mo.id = m.model_id))";
    let (got, (n, bad)): (Vec<String>, (i64, i64)) = match store {
        gleaner::store::Store::Sqlite(p) => (
            sqlx::query_scalar(stored_names)
                .fetch_all(p)
                .await
                .expect("names"),
            sqlx::query_as(counts).fetch_one(p).await.expect("counts"),
        ),
        gleaner::store::Store::Postgres(p) => (
            sqlx::query_scalar(stored_names)
                .fetch_all(p)
                .await
                .expect("names"),
            sqlx::query_as(counts).fetch_one(p).await.expect("counts"),
        ),
    };
    assert!(names.len() > 3, "{names:?}");
    assert_eq!(got.into_iter().collect::<BTreeSet<_>>(), names);
    assert_eq!(n, lines, "assistant lines naming a model");
    assert_eq!(bad, 0, "model ids without a models row");
}

async fn whole_corpus(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let corpus = corpus_dir().canonicalize().expect("corpus present");
    // The corpus is read in place and at rest, but a freshly provisioned machine made its files
    // minutes ago: a one-second idle timeout finishes every file (its last line is read even
    // without a newline), as a day-old transcript would be.
    let at_rest = [("GLEANER_SESSIONS__IDLE_TIMEOUT_SECS", "1")];
    let first = env.ingest_dir_env(&corpus, &at_rest);
    assert_eq!(first["errors"], 0, "{first}");

    let store = env.store().await;
    let on_disk = discovery::scan(&corpus);
    assert!(on_disk.len() >= 250, "corpus has {} files", on_disk.len());
    let stored: HashMap<String, _> = files(&store)
        .await
        .into_iter()
        .map(|f| (f.path.clone(), f))
        .collect();
    assert_eq!(stored.len(), on_disk.len());
    let mut messages = 0;
    let mut copies: Transcripts = HashMap::new();
    for p in &on_disk {
        let bytes = std::fs::read(p).expect("read corpus file");
        let (offset, lines) = finished_checkpoint(&bytes);
        let f = &stored[&p.to_string_lossy().to_string()];
        assert_eq!(
            (f.offset as u64, f.lines as u64),
            (offset, lines),
            "{}",
            p.display()
        );
        assert_eq!(f.size as u64, bytes.len() as u64, "{}", p.display());
        assert_eq!((f.generation, f.state.as_str()), (1, "active"));
        let info = discovery::classify(&corpus, p);
        // Sub-agent files below <session>/subagents/ belong to the parent session.
        if let Some(sid) = &info.session_id {
            assert_eq!(
                f.session_id.as_deref(),
                Some(sid.as_str()),
                "{}",
                p.display()
            );
        }
        if offset > 0 {
            assert!(f.session_id.is_some(), "{} has no session", p.display());
        }
        // Copies of one transcript (the corpus holds excerpts of some sessions in other
        // files) store each line once (store::copies).
        let key = (f.session_id.clone(), f.agent_id.clone());
        copies.entry(key).or_default().push(bytes);
    }
    for files in copies.values() {
        if let [one] = files.as_slice() {
            messages += expected_messages(one);
        } else {
            let mut keys = HashSet::new();
            for bytes in files {
                keys.extend(message_keys(bytes));
            }
            messages += keys.len() as u64;
        }
    }
    let after_first = counts(&store).await;
    assert_eq!(after_first.messages as u64, messages);
    assert_eq!(first["rows"].as_u64(), Some(messages));
    assert_eq!(
        after_first.diagnostics, 0,
        "the corpus has no malformed lines"
    );
    check_models(&store, &copies).await;

    // Flat 2.0.x agent files take the parent's sessionId from their lines.
    let flat = on_disk
        .iter()
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("agent-"))
                && !p.components().any(|c| c.as_os_str() == "subagents")
        })
        .expect("a flat agent file");
    let text = std::fs::read_to_string(flat).expect("read");
    let first_sid = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find_map(|v| {
            v.get("sessionId")
                .and_then(|s| s.as_str())
                .map(String::from)
        });
    assert_eq!(
        stored[&flat.to_string_lossy().to_string()].session_id,
        first_sid
    );

    // Sessions: every session has its files, and titles come from real prompts.
    let sessions = store
        .list_sessions(&gleaner::store::SessionFilter::default())
        .await
        .expect("sessions");
    assert!(sessions.len() > 50);
    let titled = sessions.iter().filter(|s| s.title.is_some()).count();
    assert!(
        titled > sessions.len() / 2,
        "{titled} of {} titled",
        sessions.len()
    );
    for s in &sessions {
        assert!(s.files >= 1, "{} has no files", s.session_id);
        if let Some(t) = &s.title {
            assert!(
                !t.starts_with('<') && !t.starts_with("[Request interrupted"),
                "{t}"
            );
        }
    }

    // A second pass reads nothing and inserts nothing.
    let second = env.ingest_dir_env(&corpus, &at_rest);
    assert_eq!(second["rows"], 0);
    assert_eq!(second["bytes"], 0);
    assert_eq!(counts(&store).await, after_first);
    store.close().await;
    env.cleanup().await;
}

both_backends!(whole_corpus_is_ingested_exactly_once, whole_corpus);
