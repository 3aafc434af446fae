//! The closed sets of values some columns hold (each has a `CHECK` constraint in the schema),
//! as enums, so that a filter can only ask for a value the column can hold. Parsing them from
//! text is the query layer's job (`query::vocab`).

use serde::Serialize;

macro_rules! column_values {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
        #[serde(rename_all = "snake_case")]
        pub enum $name { $($(#[$vdoc])* $variant),+ }
        impl $name {
            /// Every value, in the order help texts list them.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            /// The stored name.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
        }
    };
}

column_values!(
    /// A session's lifecycle state (`sessions.status`).
    SessionStatus {
        /// Some file of it grew within the idle timeout, and no end was seen.
        Active = "active",
        /// Idle past the timeout, ended by the hook, or its files deleted.
        Finished = "finished",
    }
);

column_values!(
    /// What the user said, by kind (`feedback.feedback_type`).
    FeedbackType {
        /// A prompt the user typed.
        Message = "message",
        /// A rejected tool use (with the reason typed).
        ToolDenial = "tool_denial",
        /// The user pressed Esc.
        Interruption = "interruption",
    }
);

column_values!(
    /// Summary rows, by kind (`summaries.kind`).
    SummaryKind {
        /// A `summary` line.
        Summary = "summary",
        /// A compaction boundary (trigger, tokens before).
        CompactBoundary = "compact_boundary",
        /// The summary Claude wrote at a compaction.
        CompactSummary = "compact_summary",
    }
);
