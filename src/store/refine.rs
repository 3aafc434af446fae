//! The store side of `[refine]`: which closed non-routine episodes still wait for the refine
//! command, what they hold, and the record of each run (`refinements`).

use super::sql::Sql;
use super::{Store, StoreError};

/// A closed non-routine episode the refine command has not handled yet (or failed on fewer
/// than the allowed times).
#[derive(Debug, Clone, PartialEq)]
pub struct PendingEpisode {
    /// Row id.
    pub id: i64,
    /// Its session.
    pub session_id: String,
    /// Its label and every label its turns hold (JSON array).
    pub triage: String,
    /// JSON array of labels.
    pub labels: String,
    /// Its first prompt, clipped.
    pub title: Option<String>,
    /// First line of the episode in its file.
    pub start_line: i64,
    /// Last line.
    pub end_line: i64,
    /// The transcript it was read from.
    pub path: String,
    /// The project (folder) of that transcript.
    pub project: String,
    /// Runs so far.
    pub attempts: i64,
}

/// A pending episode as the query returns it.
type PendingRow = (
    i64,
    String,
    String,
    String,
    Option<String>,
    i64,
    i64,
    String,
    String,
    i64,
);

/// An automatic snippet of an episode: type, title, content.
pub type EpisodeSnippet = (String, String, String);

impl Store {
    /// Up to `limit` episodes waiting for the refine command, oldest first.
    pub async fn pending_refinements(
        &self,
        max_attempts: u32,
        limit: i64,
    ) -> Result<Vec<PendingEpisode>, StoreError> {
        let q = Sql::new(
            "SELECT e.id, e.session_id, e.triage, e.labels, e.title, e.start_line, e.end_line, \
             f.path, f.project, COALESCE(r.attempts, 0) \
             FROM episodes e JOIN files f ON f.id = e.file_id \
             LEFT JOIN refinements r ON r.episode_id = e.id \
             WHERE e.status = 'closed' AND e.triage <> 'routine' \
             AND (r.episode_id IS NULL OR (r.state = 'failed' AND r.attempts < $1)) \
             ORDER BY e.id LIMIT $2",
        )
        .arg(i64::from(max_attempts))
        .arg(limit);
        let rows: Vec<PendingRow> = self.fetch_all(&q).await?;
        Ok(rows
            .into_iter()
            .map(|r| PendingEpisode {
                id: r.0,
                session_id: r.1,
                triage: r.2,
                labels: r.3,
                title: r.4,
                start_line: r.5,
                end_line: r.6,
                path: r.7,
                project: r.8,
                attempts: r.9,
            })
            .collect())
    }

    /// The automatic snippets of an episode (what the deterministic stage kept).
    pub async fn episode_snippets(
        &self,
        episode_id: i64,
    ) -> Result<Vec<EpisodeSnippet>, StoreError> {
        let q = Sql::new(
            "SELECT snippet_type, title, content FROM snippets \
             WHERE episode_id = $1 AND origin = 'auto' ORDER BY id",
        )
        .arg(episode_id);
        self.fetch_all(&q).await
    }

    /// Record a run of the refine command for an episode (`done` with the learnings stored, or
    /// `failed` with the reason); a later run of the same episode overwrites it.
    pub async fn record_refinement(
        &self,
        episode_id: i64,
        done: bool,
        attempts: i64,
        learnings: i64,
        error: Option<&str>,
        now: &str,
    ) -> Result<(), StoreError> {
        let q = Sql::new(
            "INSERT INTO refinements (episode_id, state, attempts, learnings, error, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (episode_id) DO UPDATE SET \
             state = excluded.state, attempts = excluded.attempts, \
             learnings = excluded.learnings, error = excluded.error, \
             updated_at = excluded.updated_at",
        )
        .arg(episode_id)
        .arg(if done { "done" } else { "failed" })
        .arg(attempts)
        .arg(learnings)
        .arg(error)
        .arg(now);
        self.execute(&q).await?;
        Ok(())
    }

    /// Episodes refined, episodes whose last run failed, and learnings stored.
    pub async fn refinement_counts(&self) -> Result<(i64, i64, i64), StoreError> {
        let q = Sql::new(
            "SELECT COALESCE(SUM(CASE WHEN state = 'done' THEN 1 ELSE 0 END), 0), \
             COALESCE(SUM(CASE WHEN state = 'failed' THEN 1 ELSE 0 END), 0), \
             COALESCE(SUM(learnings), 0) FROM refinements",
        );
        let rows: Vec<(i64, i64, i64)> = self.fetch_all(&q).await?;
        Ok(rows.into_iter().next().unwrap_or((0, 0, 0)))
    }
}

/// What `gleaner status` adds from the database: how far behind the files are, sessions by
/// status, rows by kind and secrets redacted by kind.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DaemonFigures {
    /// Size minus committed offset, summed over this machine's live files.
    pub bytes_behind: i64,
    /// Sessions still active.
    pub sessions_active: i64,
    /// Sessions finished.
    pub sessions_finished: i64,
    /// Rows by table: messages, summaries, feedback, episodes, snippets.
    pub rows: std::collections::BTreeMap<String, i64>,
    /// Secrets redacted, by kind.
    pub redactions: std::collections::BTreeMap<String, i64>,
    /// What the transcript archive holds.
    #[serde(default)]
    pub archive: super::ArchiveTotals,
    /// Sessions read by older extraction rules.
    #[serde(default)]
    pub rules: super::RulesCounts,
}

/// Backlog, sessions by status and five row counts, as the query returns them.
type FigureRow = (i64, i64, i64, i64, i64, i64, i64, i64);

impl Store {
    /// The figures `gleaner status` shows for `machine`.
    pub async fn daemon_figures(&self, machine: &str) -> Result<DaemonFigures, StoreError> {
        let q = Sql::new(
            "SELECT CAST(COALESCE((SELECT SUM(CASE WHEN size > byte_offset THEN size - byte_offset \
             ELSE 0 END) FROM files WHERE machine = $1 AND state = 'active'), 0) AS BIGINT), \
             (SELECT COUNT(*) FROM sessions WHERE status = 'active'), \
             (SELECT COUNT(*) FROM sessions WHERE status = 'finished'), \
             (SELECT COUNT(*) FROM messages), (SELECT COUNT(*) FROM summaries), \
             (SELECT COUNT(*) FROM feedback), (SELECT COUNT(*) FROM episodes), \
             (SELECT COUNT(*) FROM snippets)",
        )
        .arg(machine);
        let rows: Vec<FigureRow> = self.fetch_all(&q).await?;
        let r = rows.into_iter().next().unwrap_or_default();
        let q = Sql::new(
            "SELECT name, CAST(SUM(count) AS BIGINT) FROM record_kinds \
             WHERE category = 'redacted' GROUP BY name ORDER BY name",
        );
        let redactions: Vec<(String, i64)> = self.fetch_all(&q).await?;
        let archive = self.archive_totals().await?;
        let rules = self.rules_counts().await?;
        Ok(DaemonFigures {
            archive,
            rules,
            bytes_behind: r.0,
            sessions_active: r.1,
            sessions_finished: r.2,
            rows: [
                ("messages", r.3),
                ("summaries", r.4),
                ("feedback", r.5),
                ("episodes", r.6),
                ("snippets", r.7),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
            redactions: redactions.into_iter().collect(),
        })
    }
}
