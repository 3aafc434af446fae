//! What a session listing is narrowed to and ordered by, and where a walk over it stopped.

use serde::Serialize;

use super::super::super::SessionStatus;
use super::super::Origin;
use super::SessionListing;

/// How a session listing is ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionSort {
    /// Most recent activity first (sessions without a time last). Served by an index.
    #[default]
    Recent,
    /// Least recent activity first: [`SessionSort::Recent`] reversed (sessions without a time
    /// first), served by the same index read backwards.
    Oldest,
    /// Earliest start first.
    Started,
    /// Longest first.
    Duration,
    /// Most feedback first (counts every session's feedback: costs more on a large store).
    Feedback,
    /// Most snippets first (likewise).
    Snippets,
    /// By title.
    Title,
    /// By project.
    Project,
}

impl SessionSort {
    /// Every order, as the doors list them.
    pub const ALL: &'static [SessionSort] = &[
        SessionSort::Recent,
        SessionSort::Oldest,
        SessionSort::Started,
        SessionSort::Duration,
        SessionSort::Feedback,
        SessionSort::Snippets,
        SessionSort::Title,
        SessionSort::Project,
    ];

    /// Its name in flags and URLs.
    pub fn as_str(self) -> &'static str {
        match self {
            SessionSort::Recent => "recent",
            SessionSort::Oldest => "oldest",
            SessionSort::Started => "started",
            SessionSort::Duration => "duration",
            SessionSort::Feedback => "feedback",
            SessionSort::Snippets => "snippets",
            SessionSort::Title => "title",
            SessionSort::Project => "project",
        }
    }

    /// `ORDER BY` terms (NULLs last on both backends; the id makes the order total, so pages
    /// neither skip nor repeat a row).
    pub(super) fn order_by(self) -> &'static str {
        match self {
            SessionSort::Recent => "s.last_activity_at DESC NULLS LAST, s.session_id DESC",
            SessionSort::Oldest => "s.last_activity_at ASC NULLS FIRST, s.session_id ASC",
            SessionSort::Started => "s.started_at ASC NULLS LAST, s.session_id",
            SessionSort::Duration => "s.duration_ms DESC NULLS LAST, s.session_id",
            SessionSort::Feedback => {
                "(SELECT COUNT(*) FROM feedback f WHERE f.session_id = s.session_id) DESC, \
                 s.session_id"
            }
            SessionSort::Snippets => {
                "(SELECT COUNT(*) FROM snippets n WHERE n.session_id = s.session_id) DESC, \
                 s.session_id"
            }
            SessionSort::Title => "s.title ASC NULLS LAST, s.session_id",
            SessionSort::Project => "s.project, s.last_activity_at DESC NULLS LAST, s.session_id",
        }
    }
}

/// What a session listing is narrowed to.
#[derive(Debug, Clone, Default)]
pub struct SessionFilter {
    /// Project folder or working directory containing this text.
    pub project: Option<String>,
    /// Last activity at or after this time (as stored: `query::TimeBound::as_stored`).
    pub since: Option<String>,
    /// Started strictly before this time.
    pub until: Option<String>,
    /// Only sessions in this state.
    pub status: Option<SessionStatus>,
    /// Only these sessions.
    pub session_ids: Option<Vec<String>>,
    /// Who and where: sessions held by this machine or user.
    pub origin: Origin,
    /// Only sessions whose tools read, edited or wrote this file (its path, or a tail of it
    /// after a `/`: `src/auth.rs`).
    pub file: Option<String>,
    /// Only sessions on this git branch (as last seen).
    pub branch: Option<String>,
    /// Only sessions with a reply from a model whose name contains this text (`opus`).
    pub model: Option<String>,
    /// Leave out sessions with no typed prompt (warm-ups, empty ones): the doors' listings do
    /// unless asked for all (`--all`), as they crowd a project's list and hold nothing to
    /// read; exports and internal walks take every session.
    pub hide_unprompted: bool,
    /// The order.
    pub sort: SessionSort,
    /// Only sessions after this one in the `Recent` order (keyset paging: a walk over every
    /// session costs the same per page at its end as at its start, where `OFFSET` would skip
    /// all the rows before).
    pub after: Option<SessionCursor>,
}

/// Where a walk over sessions in the `Recent` order stopped: the last session's activity time
/// and id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionCursor {
    /// Its last activity (`None`: it had none; those come last).
    pub last_activity_at: Option<String>,
    /// Its id.
    pub session_id: String,
}

impl SessionCursor {
    /// The cursor after `s`.
    pub fn after(s: &SessionListing) -> SessionCursor {
        SessionCursor {
            last_activity_at: s.last_activity_at.clone(),
            session_id: s.session_id.clone(),
        }
    }
}

/// Whether session `s` holds a prompt someone typed: Claude Code's warm-up sessions (a
/// `Warmup` prompt it sends itself) and sessions with no prompt are left out of listings
/// unless asked for (`SessionFilter::hide_unprompted`); a session asked for by id is always
/// shown.
pub(in crate::store) const PROMPTED: &str = "SELECT 1 FROM feedback pf \
     WHERE pf.session_id = s.session_id AND pf.feedback_type = 'message' \
     AND pf.content <> 'Warmup'";
