//! One conversation stored once, however many machines hold it.
//!
//! A transcript is identified by its session id and its agent id (`files.session_id`,
//! `files.kind`, `files.agent_id`), not by the machine that holds it: people sync `~/.claude`
//! between laptops, so in a shared store the same transcript can be a `files` row on several
//! machines, each with its own path and checkpoint (a *copy*). The rows read from the copies
//! are stored once:
//!
//! - A message is keyed within its transcript by its line uuid. A line without one (in the
//!   real corpus only `summary` lines, whose content the summaries table keeps by leaf and
//!   text) is keyed by its kind, subtype, timestamp, text and line number. The first copy to
//!   store a key is its source (its file and line); another copy skips that line and stores
//!   the lines only it holds (a machine ahead of the other, or a session resumed on the other
//!   laptop and grown differently). Reads merge the copies in conversation order: time, then
//!   line (`read::conversation`, `timeline`).
//! - An episode is keyed within its transcript by the time of its first prompt (by its first
//!   line when that has no time): a copy does not store an episode another copy holds, unless
//!   its own reaches further (more turns, then more lines); then it takes the row over, so the
//!   episode is the one of the copy that went furthest (a session resumed on the other laptop
//!   extends the episode it was in).
//! - Everything else is keyed by content already: summaries by leaf and text, feedback and
//!   tool calls by line uuid, token usage by API message id, snippets by session and content.
//!
//! On PostgreSQL two machines can commit the same transcript at the same moment, and neither
//! transaction sees the other's rows: each group first takes a transaction-scoped advisory lock
//! per transcript it writes, in key order (so two groups never wait on each other in a cycle),
//! before looking the copies up. The second then sees what the first stored.
//!
//! The generations of one file are copies of its transcript too: a file cut short and then
//! grown back (a sync tool, a restored backup) starts generation n+1 from byte 0, and its lines
//! that generation n already stored are not stored again, nor its episodes (reads merge a
//! file's generations by time, as they merge copies).
//!
//! Architecture Invariant: a file's rows never collide with its own rows of the same generation
//! (each line is read once per generation), so only other copies and the file's own earlier
//! generations are looked up, and a transcript held by one machine in one generation (nearly
//! all of them) costs one indexed query per group.

use std::collections::{HashMap, HashSet};

use super::sql::{Arg, Backend, Conn, Sql};
use super::StoreError;
use crate::extract::rows::{uuid_stored, EpisodeRow, MessageRow, PreparedBatch};

/// The other copies of the transcripts a group writes: file id -> the other files holding the
/// same transcript. Empty for nearly every group.
#[derive(Debug, Default)]
pub(super) struct Copies {
    others: HashMap<i64, Vec<i64>>,
    /// The current generation of each other copy (its rows of older ones are not its text).
    generation: HashMap<i64, i64>,
    /// Files of the group written in a generation after the first: their own rows of the
    /// generations before this one (file id -> the generation written) are a copy.
    own_before: HashMap<i64, i64>,
}

/// Which rows of each batch to store (`None` for a batch without copies: all of them).
#[derive(Debug, Default)]
pub(super) struct Keep {
    messages: HashMap<i64, Vec<bool>>,
}

impl Keep {
    /// The message rows of `b` to store.
    pub(super) fn messages<'a>(
        &'a self,
        b: &'a PreparedBatch,
    ) -> impl Iterator<Item = &'a MessageRow> + 'a {
        let mask = self.messages.get(&b.file_id);
        b.messages
            .iter()
            .enumerate()
            .filter(move |(i, _)| mask.is_none_or(|m| m[*i]))
            .map(|(_, m)| m)
    }

    /// How many message rows of `b` are stored.
    pub(super) fn count(&self, b: &PreparedBatch) -> u64 {
        match self.messages.get(&b.file_id) {
            Some(m) => m.iter().filter(|k| **k).count() as u64,
            None => b.messages.len() as u64,
        }
    }
}

/// The key of a message within its transcript (see the module doc).
fn message_key(m: &MessageRow) -> Vec<u8> {
    match m.uuid.as_deref() {
        Some(u) => uuid_stored(u).as_slice().to_vec(),
        None => line_key(
            &m.kind,
            m.subtype.as_deref(),
            m.ts.as_deref(),
            m.line_no as i64,
            m.text.as_deref(),
        ),
    }
}

/// The key of a line without a uuid. Starts with a 0 byte, which no stored uuid does (16 bytes
/// of a canonical UUID are 16 bytes long, any other id is text).
fn line_key(
    kind: &str,
    subtype: Option<&str>,
    ts: Option<&str>,
    line_no: i64,
    text: Option<&str>,
) -> Vec<u8> {
    format!(
        "\0{kind}\0{}\0{}\0{line_no}\0{}",
        subtype.unwrap_or(""),
        ts.unwrap_or(""),
        text.unwrap_or("")
    )
    .into_bytes()
}

/// The key of an episode within its transcript.
fn episode_key(started_at: Option<&str>, start_line: i64) -> String {
    match started_at {
        Some(t) => t.to_string(),
        None => format!("@{start_line}"),
    }
}

/// Lock the transcripts of `file_ids` (PostgreSQL) and find their other copies.
///
/// On PostgreSQL both statements have a constant text with the ids as one array, so each is
/// prepared once per connection and never planned again: they run for every group, and as
/// `IN` lists of up to 128 ids planned each time they cost a fifth of PostgreSQL's ingest speed
/// (measured: 156 -> 125 MB/s on the 1 GB tree).
pub(super) async fn find(c: &mut Conn<'_>, files: &[(i64, i64)]) -> Result<Copies, StoreError> {
    if files.is_empty() {
        return Ok(Copies::default());
    }
    let own_before: HashMap<i64, i64> = files.iter().copied().filter(|(_, g)| *g > 1).collect();
    let mut file_ids: Vec<i64> = files.iter().map(|(f, _)| *f).collect();
    file_ids.sort_unstable();
    file_ids.dedup();
    let file_ids = &file_ids[..];
    let pairs: Vec<(i64, i64, i64)> = if c.backend() == Backend::Postgres {
        let ids = || Arg::TextArray(file_ids.iter().map(i64::to_string).collect());
        let lock = Sql::new(
            "SELECT pg_advisory_xact_lock(k) FROM (SELECT DISTINCT \
             hashtextextended(session_id || '/' || kind || '/' || COALESCE(agent_id, ''), 0) \
             AS k FROM files WHERE session_id IS NOT NULL \
             AND id = ANY(CAST($1 AS bigint[])) ORDER BY k) keys",
        )
        .arg(ids());
        c.execute(&lock).await?;
        // The other copies of each file looked up through the session index, one probe per
        // file (`OFFSET 0` keeps the planner from flattening it into a hash join over every
        // file of the store: 4 ms at 5,000 files, growing with them).
        let q = Sql::new(
            "SELECT f.id, o.id, o.generation FROM files f CROSS JOIN LATERAL (SELECT o.id, \
             o.generation FROM files o \
             WHERE o.session_id = f.session_id AND o.kind = f.kind \
             AND COALESCE(o.agent_id, '') = COALESCE(f.agent_id, '') AND o.id <> f.id \
             OFFSET 0) o WHERE f.session_id IS NOT NULL \
             AND (f.kind = 'main' OR f.agent_id IS NOT NULL) \
             AND f.id = ANY(CAST($1 AS bigint[]))",
        )
        .arg(ids());
        c.fetch_rows(&q).await?
    } else {
        let mut q = Sql::new(format!("{COPIES} AND "));
        q.push_in("f.id", file_ids.iter().copied());
        c.fetch_rows(&q.not_persistent()).await?
    };
    let mut others: HashMap<i64, Vec<i64>> = HashMap::new();
    let mut generation = HashMap::new();
    for (f, o, g) in pairs {
        others.entry(f).or_default().push(o);
        generation.insert(o, g);
    }
    Ok(Copies {
        others,
        generation,
        own_before,
    })
}

/// Each file (`f`) and another holding the same transcript (`o`): only a transcript with an
/// identity, a main file's session or a sub-agent's agent id. (SQLite probes the session index
/// for each file by itself.)
const COPIES: &str =
    "SELECT f.id, o.id, o.generation FROM files f JOIN files o ON o.session_id = f.session_id \
     AND o.kind = f.kind AND COALESCE(o.agent_id, '') = COALESCE(f.agent_id, '') \
     AND o.id <> f.id WHERE f.session_id IS NOT NULL \
     AND (f.kind = 'main' OR f.agent_id IS NOT NULL)";

impl Copies {
    /// Whether no file of the group has another copy or an earlier generation (nearly
    /// always).
    pub(super) fn is_empty(&self) -> bool {
        self.others.is_empty() && self.own_before.is_empty()
    }

    /// The files whose stored rows a batch of `f` must not repeat: the other copies, and `f`
    /// itself when it is written in a later generation (its earlier ones).
    fn holders(&self, f: i64) -> Option<Vec<i64>> {
        let mut out = self.others.get(&f).cloned().unwrap_or_default();
        if self.own_before.contains_key(&f) {
            out.push(f);
        }
        (!out.is_empty()).then_some(out)
    }

    /// `(t.file_id, t.generation) IN (VALUES (a, b), ...)`: the rows of the other copies'
    /// current generations, found by the table's key; and `(t.file_id = f AND t.generation <
    /// g)`, the earlier generations of a file written in generation g. A row-value list, not a
    /// chain of `OR`s: a group of 128 files each with copies (every copy of a corpus in one
    /// tree) made a chain deeper than SQLite's expression limit of 1,000, and the group could
    /// never commit (a new generation is rare: those few are `OR`ed).
    fn push_rows_of_others(&self, q: &mut Sql<'_>, t: &str) {
        let mut ids: Vec<(i64, i64)> = self.generation.iter().map(|(f, g)| (*f, *g)).collect();
        ids.sort_unstable();
        let mut own: Vec<(i64, i64)> = self.own_before.iter().map(|(f, g)| (*f, *g)).collect();
        own.sort_unstable();
        q.push("(");
        if ids.is_empty() {
            q.push("1 = 0");
        } else {
            q.push(&format!("({t}.file_id, {t}.generation) IN (VALUES "));
            for (i, (f, g)) in ids.into_iter().enumerate() {
                if i > 0 {
                    q.push(", ");
                }
                q.push("(").push_bind(f).push(", ").push_bind(g).push(")");
            }
            q.push(")");
        }
        for (f, g) in own {
            q.push(&format!(" OR ({t}.file_id = "))
                .push_bind(f)
                .push(&format!(" AND {t}.generation < "))
                .push_bind(g)
                .push(")");
        }
        q.push(")");
    }

    /// Which message rows of the accepted batches to store: a copy skips the lines another
    /// copy already holds (stored before, or earlier in this group).
    pub(super) async fn keep_messages(
        &self,
        c: &mut Conn<'_>,
        accepted: &[&PreparedBatch],
    ) -> Result<Keep, StoreError> {
        let mut keep = Keep::default();
        if self.is_empty() {
            return Ok(keep);
        }
        let mut held: HashMap<i64, HashSet<Vec<u8>>> = HashMap::new();
        let mut q =
            Sql::new("SELECT m.file_id, m.uuid FROM messages m WHERE m.uuid IS NOT NULL AND ");
        self.push_rows_of_others(&mut q, "m");
        let rows: Vec<(i64, Vec<u8>)> = c.fetch_rows(&q.not_persistent()).await?;
        for (f, u) in rows {
            held.entry(f).or_default().insert(u);
        }
        let mut q = Sql::new(format!(
            "SELECT m.file_id, m.kind, m.subtype, m.ts, m.line_no, {} FROM messages m \
             WHERE m.uuid IS NULL AND ",
            c.backend().stored_text("m.text")
        ));
        self.push_rows_of_others(&mut q, "m");
        type Line = (
            i64,
            String,
            Option<String>,
            Option<String>,
            i64,
            Option<String>,
        );
        let rows: Vec<Line> = c.fetch_rows(&q.not_persistent()).await?;
        for (f, kind, subtype, ts, line, text) in rows {
            let k = line_key(
                &kind,
                subtype.as_deref(),
                ts.as_deref(),
                line,
                text.as_deref(),
            );
            held.entry(f).or_default().insert(k);
        }
        for b in accepted {
            let Some(others) = self.holders(b.file_id) else {
                continue;
            };
            let mask: Vec<bool> = b
                .messages
                .iter()
                .map(|m| {
                    let k = message_key(m);
                    !others
                        .iter()
                        .any(|o| held.get(o).is_some_and(|s| s.contains(&k)))
                })
                .collect();
            // What this batch stores is held by it for the batches after it in the group.
            let mine = held.entry(b.file_id).or_default();
            for (m, kept) in b.messages.iter().zip(&mask) {
                if *kept {
                    mine.insert(message_key(m));
                }
            }
            keep.messages.insert(b.file_id, mask);
        }
        Ok(keep)
    }

    /// Which of `items` (file id, episode) to store: a copy does not store an episode another
    /// copy holds, unless its own reaches further (more turns, then more lines: the session
    /// went on in this copy; then the lower file id); then it takes the row over (same id and
    /// refinements; its automatic snippets are written again when it closes), which the
    /// caller's upsert then brings up to date. The mask is in the
    /// order of `items`.
    pub(super) async fn keep_episodes(
        &self,
        c: &mut Conn<'_>,
        items: &[(i64, &EpisodeRow)],
    ) -> Result<Vec<bool>, StoreError> {
        if !items.iter().any(|(f, _)| self.holders(*f).is_some()) {
            return Ok(vec![true; items.len()]);
        }
        let mut q = Sql::new(
            "SELECT e.id, e.file_id, e.started_at, e.start_line, e.turns, e.end_line \
             FROM episodes e WHERE ",
        );
        self.push_rows_of_others(&mut q, "e");
        type Held = (i64, i64, Option<String>, i64, i64, i64);
        let rows: Vec<Held> = c.fetch_rows(&q.not_persistent()).await?;
        // (file, key) -> who holds it. Reach: turns, then lines, then the lower file id (so
        // that which copy holds an episode does not depend on which committed first).
        type Reach = (i64, i64, std::cmp::Reverse<i64>);
        struct Hold {
            /// The stored row.
            row: Option<i64>,
            /// The item of this call that writes it.
            item: Option<usize>,
            reach: Reach,
        }
        let mut held: HashMap<(i64, String), Hold> = HashMap::new();
        for (id, f, started, line, turns, end) in rows {
            let k = episode_key(started.as_deref(), line);
            let reach = (turns, end - line, std::cmp::Reverse(f));
            held.insert(
                (f, k),
                Hold {
                    row: Some(id),
                    item: None,
                    reach,
                },
            );
        }
        let mut mask = vec![true; items.len()];
        for (i, (f, ep)) in items.iter().enumerate() {
            let Some(others) = self.holders(*f) else {
                continue;
            };
            let k = episode_key(ep.started_at.as_deref(), ep.start_line as i64);
            let reach = (
                ep.turns,
                ep.end_line as i64 - ep.start_line as i64,
                std::cmp::Reverse(*f),
            );
            let holder = others.iter().find(|o| held.contains_key(&(**o, k.clone())));
            let mut row = None;
            if let Some(o) = holder {
                let Some(h) = held.remove(&(*o, k.clone())) else {
                    continue;
                };
                if h.reach >= reach {
                    mask[i] = false;
                    held.insert((*o, k), h);
                    continue;
                }
                // This copy reaches further: it takes the episode over.
                if let Some(j) = h.item {
                    mask[j] = false;
                }
                if let Some(id) = h.row {
                    let q = Sql::new(
                        "UPDATE episodes SET file_id = $1, generation = $2, start_line = $3, \
                         end_line = $4 WHERE id = $5",
                    )
                    .arg(*f)
                    .arg(ep.generation)
                    .arg(ep.start_line as i64)
                    .arg(ep.end_line as i64)
                    .arg(id);
                    c.execute(&q).await?;
                    // Its automatic snippets were cut from the other copy's lines: the new
                    // holder writes its own when the episode closes.
                    let q =
                        Sql::new("DELETE FROM snippets WHERE episode_id = $1 AND origin = 'auto'")
                            .arg(id);
                    c.execute(&q).await?;
                }
                row = h.row;
            }
            held.insert(
                (*f, k),
                Hold {
                    row,
                    item: Some(i),
                    reach,
                },
            );
        }
        Ok(mask)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_without_uuid_never_takes_a_uuid_key() {
        let with = MessageRow {
            uuid: Some("0b5a9f6e-3c1d-4e2f-8a7b-1c2d3e4f5a6b".into()),
            kind: "user".into(),
            ..MessageRow::default()
        };
        let without = MessageRow {
            kind: "summary".into(),
            line_no: 3,
            ..MessageRow::default()
        };
        assert_eq!(message_key(&with).len(), 16);
        assert_eq!(message_key(&without)[0], 0);
        assert_eq!(
            message_key(&without),
            line_key("summary", None, None, 3, None)
        );
        assert_ne!(
            line_key("summary", None, None, 3, None),
            line_key("summary", None, None, 4, None)
        );
    }

    #[test]
    fn an_episode_without_time_is_keyed_by_its_line() {
        assert_eq!(
            episode_key(Some("2026-01-01T00:00:00Z"), 5),
            "2026-01-01T00:00:00Z"
        );
        assert_eq!(episode_key(None, 5), "@5");
    }
}
