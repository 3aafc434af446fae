//! The query layer: what every front door (CLI, MCP, web) reads the store through: inputs parsed
//! here, then the store's read side (`store::read`, listings and their views) called with the
//! typed filters this builds.
//!
//! Inputs are parsed once, here, into typed filters: times ([`TimeBound`]), pages ([`Page`]),
//! the closed vocabularies ([`vocab`]) and session references ([`resolve_session`]). A value
//! that does not parse is an [`Error`] naming the field and the value, never an empty answer;
//! the doors only choose how to show it (CLI: one line and exit 2; MCP: an error result; web:
//! a 400 page). Listings are paged in SQL ([`Page::probe`]), so what a call costs depends on
//! the page, not on the size of the store.

pub mod context;
pub mod overview;
mod page;
mod session_ref;
pub mod snippet_add;
pub mod transcript;
mod time;
pub mod usage;
pub mod view;
pub mod vocab;

pub use crate::store::{FeedbackType, SessionStatus, SummaryKind};
pub use crate::store::{Page, Paged};
pub use page::{MAX_LISTING, MAX_OFFSET};
pub use session_ref::{resolve_optional_session, resolve_session, Candidate};
pub use time::{TimeBound, TIME_FORMS};
pub use view::Evidence;
pub use vocab::{choice, choices, Vocabulary};

use crate::store::StoreError;

/// The store as the doors see it: the connection, the filters this layer fills and the views
/// the store's read side returns. The doors (`cli`, `mcp`, `web`) name these through
/// `crate::query`, never `crate::store` (`tests/it/layout.rs` checks it), so a filter or view
/// is added in one place and every door gets it.
pub mod store {
    pub use crate::store::search::{
        self, SearchFilter, SearchHit, SearchKind, SearchPage, MAX_LIMIT,
    };
    pub use crate::store::{
        redact_url, ArchiveFilter, ArchiveTotals, Backend, ConversationRow, DiagnosticListing,
        EpisodeFilter, EpisodeListing, FeedbackCounts, FeedbackFilter, FeedbackListing,
        FeedbackType, FileListing, Origin, Page, Paged, ProjectFilter, ProjectListing, Schema,
        SessionFilter, SessionListing, SessionSort, SessionStatus, SnippetFilter, SnippetListing,
        SnippetPage, Store, StoreError, SubAgent, SummaryCounts, SummaryFilter, SummaryKind,
        SummaryListing, Timeline, TimelineFeedback, TimelineFile, TimelineMessage, TimelineSummary,
        TimelineTool, TokenTotals, Totals, TouchedFile, COUNT_CAP, MAX_TOUCHED,
    };
}

/// Why a query was not answered. Every variant but [`Error::Store`] is the caller's input.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A time that is not one of the accepted forms, or an impossible date.
    #[error("invalid {field} {value:?}: expected {forms}", forms = TIME_FORMS)]
    BadTime {
        /// The filter, as the door names it.
        field: String,
        /// What was given.
        value: String,
    },
    /// A number outside its bounds.
    #[error("invalid {field} {value}: expected {min} to {max}")]
    BadRange {
        /// The argument, as the door names it.
        field: String,
        /// What was given.
        value: String,
        /// Smallest accepted.
        min: u64,
        /// Largest accepted.
        max: u64,
    },
    /// A value outside a closed set, or of the wrong form.
    #[error("invalid {field} {value:?}: expected {expected}")]
    BadValue {
        /// The argument, as the door names it.
        field: String,
        /// What was given.
        value: String,
        /// What is accepted.
        expected: String,
    },
    /// A range whose start is not before its end: nothing could match, which an empty answer
    /// would not say.
    #[error("{since_field} {since:?} is not before {until_field} {until:?}: the range is empty")]
    EmptyRange {
        /// The start's filter, as the door names it.
        since_field: String,
        /// The start as given.
        since: String,
        /// The end's filter, as the door names it.
        until_field: String,
        /// The end as given.
        until: String,
    },
    /// No session has this id or prefix.
    #[error("no session found with id or prefix {prefix:?}")]
    NoSession {
        /// The prefix given.
        prefix: String,
    },
    /// Several sessions start with this prefix.
    #[error(
        "session prefix {prefix:?} is ambiguous: it matches {} (give more characters)",
        list_candidates(candidates)
    )]
    Ambiguous {
        /// The prefix given.
        prefix: String,
        /// Some of the sessions it matches (at most [`session_ref::MAX_CANDIDATES`]).
        candidates: Vec<Candidate>,
    },
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Error {
    /// The caller's input was wrong (as opposed to the store failing).
    pub fn is_input(&self) -> bool {
        !matches!(self, Error::Store(_))
    }

    /// Nothing matched the reference given (no session, or several).
    pub fn is_not_found(&self) -> bool {
        matches!(self, Error::NoSession { .. } | Error::Ambiguous { .. })
    }
}

fn list_candidates(c: &[Candidate]) -> String {
    c.iter()
        .map(|c| c.session_id.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// An optional time filter: `None` stays `None`.
pub fn time_opt(field: &str, text: Option<&str>) -> Result<Option<String>, Error> {
    text.map(|t| TimeBound::parse(field, t).map(TimeBound::as_stored))
        .transpose()
}

/// A range of times, `(field, text)` each: the start as [`TimeBound::parse`] reads it, the end
/// as [`TimeBound::parse_until`] does (a date alone includes its day), and an error when the
/// start is not before the end.
pub fn time_range(
    since: (&str, Option<&str>),
    until: (&str, Option<&str>),
) -> Result<(Option<TimeBound>, Option<TimeBound>), Error> {
    let start = since.1.map(|t| TimeBound::parse(since.0, t)).transpose()?;
    let end = until
        .1
        .map(|t| TimeBound::parse_until(until.0, t))
        .transpose()?;
    if let (Some(s), Some(e), Some(st), Some(ut)) = (start, end, since.1, until.1) {
        if s >= e {
            return Err(Error::EmptyRange {
                since_field: since.0.to_string(),
                since: st.to_string(),
                until_field: until.0.to_string(),
                until: ut.to_string(),
            });
        }
    }
    Ok((start, end))
}

/// [`time_range`] as stored times are written, ready for the store's filters.
pub fn time_range_stored(
    since: (&str, Option<&str>),
    until: (&str, Option<&str>),
) -> Result<(Option<String>, Option<String>), Error> {
    let (s, u) = time_range(since, until)?;
    Ok((s.map(TimeBound::as_stored), u.map(TimeBound::as_stored)))
}

/// The copy of a session's transcript to read from disk: the main one (or sub-agent `agent`'s),
/// held by `machine` when it holds one, else another machine's (whose path is not on this
/// disk: the door says so). A shared store records every machine's copy of a transcript.
pub fn transcript_copy<'a>(
    files: &'a [store::TimelineFile],
    machine: &str,
    agent: Option<&str>,
) -> Option<&'a store::TimelineFile> {
    let wanted = |f: &&store::TimelineFile| match agent {
        Some(a) => f.agent_id.as_deref() == Some(a),
        None => f.kind == "main",
    };
    files
        .iter()
        .filter(wanted)
        .find(|f| f.machine == machine)
        .or_else(|| files.iter().find(wanted))
}

/// Why a transcript's lines cannot be read here: held by another machine, or gone from this
/// one, and not archived. Every door says it the same way.
pub fn unreadable_copy(file: &store::TimelineFile, machine: &str) -> String {
    if file.machine != machine {
        let user = if file.user.is_empty() {
            String::new()
        } else {
            format!(" (user {})", file.user)
        };
        format!(
            "the transcript {} is held by machine {}{user}, not this one ({machine}), and \
             the archive has no copy of it; its stored text is still available",
            file.path, file.machine
        )
    } else {
        format!(
            "the transcript {} is gone (Claude Code deletes transcripts after 30 days) and \
             the archive has no copy of it (it was off); its stored text is still available",
            file.path
        )
    }
}

/// What every door says of a session with no conversation stored and none in its sub-agents:
/// `prune --keep-knowledge` keeps a session's summaries, feedback and episodes but not its
/// messages, and an empty answer alone would look like a fault. The store knows which it is.
pub async fn no_conversation(
    store: &crate::store::Store,
    session_id: &str,
) -> Result<String, crate::store::StoreError> {
    Ok(match store.pruned_at(session_id).await? {
        Some(at) => format!(
            "no conversation is stored for this session: its messages were pruned on {}              (what was kept about it is still listed)",
            at.get(..10).unwrap_or(&at)
        ),
        None => "no conversation is stored for this session: its transcript held none".into(),
    })
}

/// A project filter as the door names it (`("--project", p)`): trimmed, and a blank one is an
/// error naming it. Why: the filter matches a part of the project folder or working directory,
/// and an empty part matches every session, so `--project ''` (a variable left unset) would
/// silently answer for every project.
pub fn project((field, v): (&str, Option<String>)) -> Result<Option<String>, Error> {
    match v {
        Some(v) if v.trim().is_empty() => Err(Error::BadValue {
            field: field.to_string(),
            value: v,
            expected: "a part of a project folder or working directory".to_string(),
        }),
        v => Ok(v.map(|v| v.trim().to_string())),
    }
}

/// A text filter as the door names it (`("--branch", b)`), trimmed; a blank one is an error
/// naming it (it would match nothing, or everything).
pub fn nonblank(
    (field, v): (&str, Option<String>),
    expected: &str,
) -> Result<Option<String>, Error> {
    match v {
        Some(v) if v.trim().is_empty() => Err(Error::BadValue {
            field: field.to_string(),
            value: v,
            expected: expected.to_string(),
        }),
        v => Ok(v.map(|v| v.trim().to_string())),
    }
}

/// A file filter (`("--file", path)`): a path or its tail, with a letter or digit in it (the
/// sessions of a file are found by its words).
pub fn file_path((field, v): (&str, Option<String>)) -> Result<Option<String>, Error> {
    let v = nonblank((field, v), "a file path or its tail, such as src/auth.rs")?;
    match v {
        Some(p) if !p.chars().any(char::is_alphanumeric) => Err(Error::BadValue {
            field: field.to_string(),
            value: p,
            expected: "a file path or its tail, such as src/auth.rs".to_string(),
        }),
        v => Ok(v),
    }
}

/// A search's kinds and tool filter as the door names them (`("--kind", kinds)`,
/// `("--tool", name)`): a tool name makes the search one of tool documents, so the kinds must
/// be none or include `tool` (`--kind message --tool Bash` could only answer nothing); a blank
/// name is an error naming it.
pub fn tool_kinds(
    (kinds_field, kinds): (&str, Vec<store::search::SearchKind>),
    (tool_field, tool): (&str, Option<String>),
) -> Result<(Vec<store::search::SearchKind>, Option<String>), Error> {
    use store::search::SearchKind;
    let Some(tool) = tool else {
        return Ok((kinds, None));
    };
    if tool.trim().is_empty() {
        return Err(Error::BadValue {
            field: tool_field.to_string(),
            value: tool,
            expected: "a tool name such as Bash, Edit or mcp__server__tool".to_string(),
        });
    }
    if !kinds.is_empty() && !kinds.contains(&SearchKind::Tool) {
        let given: Vec<&str> = kinds.iter().map(|k| k.as_str()).collect();
        return Err(Error::BadValue {
            field: kinds_field.to_string(),
            value: given.join(","),
            expected: format!("tool (or no kind) with {tool_field}"),
        });
    }
    Ok((vec![SearchKind::Tool], Some(tool.trim().to_string())))
}

/// The who-and-where filter from a machine id and a user name, as the door names them
/// (`("--machine", m)`). A blank value is an error naming it: it would match nothing, and an
/// empty answer to a typo is what this layer exists to prevent.
pub fn origin(
    (machine_field, machine): (&str, Option<String>),
    (user_field, user): (&str, Option<String>),
) -> Result<store::Origin, Error> {
    let check = |field: &str, v: Option<String>, what: &str| match v {
        Some(v) if v.trim().is_empty() => Err(Error::BadValue {
            field: field.to_string(),
            value: v,
            expected: what.to_string(),
        }),
        v => Ok(v.map(|v| v.trim().to_string())),
    };
    Ok(store::Origin {
        machine: check(machine_field, machine, "a machine id")?,
        user: check(user_field, user, "a user name")?,
    })
}
