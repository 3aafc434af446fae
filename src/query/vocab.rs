//! The closed vocabularies of the filters (statuses, kinds, types, labels): each one enum with
//! its stored names, parsed by [`choice`] so that every door accepts the same words and names
//! the same alternatives when a word is wrong.

use super::Error as QueryError;
use crate::episode::Label;
use crate::snippet::SnippetType;
use crate::store::search::SearchKind;
use crate::store::{FeedbackType, SessionSort, SessionStatus, SummaryKind};

/// A closed set of names stored in a column.
pub trait Vocabulary: Copy + Sized + 'static {
    /// Every value, in the order help texts list them.
    const ALL: &'static [Self];
    /// The stored name.
    fn name(self) -> &'static str;
}

/// The value named `text` (case and `-`/`_` ignored), or an error naming `field`, the value
/// and the accepted names.
pub fn choice<T: Vocabulary>(field: &str, text: &str) -> Result<T, QueryError> {
    let norm = text.trim().to_ascii_lowercase().replace('-', "_");
    T::ALL
        .iter()
        .copied()
        .find(|v| v.name() == norm)
        .ok_or_else(|| QueryError::BadValue {
            field: field.to_string(),
            value: text.to_string(),
            expected: format!("one of {}", names::<T>().join(", ")),
        })
}

/// The accepted names of `T`.
pub fn names<T: Vocabulary>() -> Vec<&'static str> {
    T::ALL.iter().map(|v| v.name()).collect()
}

/// Every value named in `texts`, or the first error.
pub fn choices<T: Vocabulary>(field: &str, texts: &[String]) -> Result<Vec<T>, QueryError> {
    texts.iter().map(|t| choice(field, t)).collect()
}

macro_rules! vocabulary {
    ($($t:ty),+) => {
        $(impl Vocabulary for $t {
            const ALL: &'static [Self] = <$t>::ALL;
            fn name(self) -> &'static str {
                self.as_str()
            }
        })+
    };
}

vocabulary!(SessionStatus, FeedbackType, SummaryKind, SessionSort);

impl Vocabulary for SnippetType {
    const ALL: &'static [Self] = &SnippetType::ALL;
    fn name(self) -> &'static str {
        self.as_str()
    }
}

impl Vocabulary for Label {
    const ALL: &'static [Self] = &[
        Label::Routine,
        Label::ErrorRecovery,
        Label::UserCorrection,
        Label::Pivot,
        Label::DesignDecision,
    ];
    fn name(self) -> &'static str {
        self.as_str()
    }
}

impl Vocabulary for SearchKind {
    const ALL: &'static [Self] = &SearchKind::ALL;
    fn name(self) -> &'static str {
        self.as_str()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_in_any_case_and_errors_list_the_alternatives() {
        assert_eq!(
            choice::<FeedbackType>("type", "Tool-Denial").unwrap(),
            FeedbackType::ToolDenial
        );
        assert_eq!(
            choice::<Label>("triage", "design_decision").unwrap(),
            Label::DesignDecision
        );
        let e = choice::<SessionStatus>("status", "done").unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid status \"done\": expected one of active, finished"
        );
        assert!(choices::<SearchKind>("kinds", &["message".into(), "x".into()]).is_err());
    }
}
