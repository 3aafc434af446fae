//! Unit tests of the parent module.

use super::*;

#[test]
fn types_parse_both_spellings() {
    assert_eq!(
        "error-reasoning".parse::<SnippetType>(),
        Ok(SnippetType::ErrorReasoning)
    );
    assert_eq!(
        "learning_pattern".parse::<SnippetType>(),
        Ok(SnippetType::LearningPattern)
    );
    let e = "tip".parse::<SnippetType>().unwrap_err();
    assert!(e.to_string().contains("decision_rationale"), "{e}");
}

#[test]
fn validate_limits() {
    let ok = "x ".repeat(60);
    assert_eq!(validate("A title", &ok), Ok(()));
    assert_eq!(
        validate("A title", "too small but words"),
        Err(SnippetError::ContentSize { bytes: 19 })
    );
    assert!(matches!(
        validate(&"t".repeat(257), &ok),
        Err(SnippetError::TitleTooLong { chars: 257 })
    ));
    assert_eq!(validate("  ", &ok), Err(SnippetError::EmptyTitle));
    let big = "word ".repeat(2100);
    assert!(matches!(
        validate("t", &big),
        Err(SnippetError::ContentSize { .. })
    ));
}

#[test]
fn hash_ignores_case_and_spacing() {
    assert_eq!(
        normalized_hash("The  Fix\nwas here"),
        normalized_hash("the fix was   HERE ")
    );
    assert_ne!(normalized_hash("the fix"), normalized_hash("the fox"));
}

#[test]
fn titles_are_clean_and_short() {
    assert_eq!(
        title_from("**Decision**:\n## Use SQLite by default. Postgres is optional."),
        "Use SQLite by default."
    );
    let long = "word ".repeat(100);
    let t = title_from(&long);
    assert_eq!(t.chars().count(), MAX_TITLE_CHARS);
    assert!(t.ends_with('…'));
}

#[test]
fn project_tags() {
    assert_eq!(
        project_tag("S:\\OneDrive\\Grand Rapids  IT Hub").as_deref(),
        Some("project:grand-rapids-it-hub")
    );
    assert_eq!(
        project_tag("/home/u/Gleaner/").as_deref(),
        Some("project:gleaner")
    );
    assert_eq!(
        project_tag("-Users-testuser-proj").as_deref(),
        Some("project:-users-testuser-proj")
    );
    assert_eq!(project_tag("/"), None);
}

#[test]
fn tags_and_metadata() {
    assert_eq!(path_tags("/a/b/main.RS").as_deref(), Some("ext:rs"));
    assert_eq!(path_tags("/a/Makefile"), None);
    assert_eq!(path_tags("/a/.env"), None);
    let m: serde_json::Value = serde_json::from_str(&metadata_json(
        &"w ".repeat(400),
        Some("pivot"),
        Some(0.8),
        None,
    ))
    .unwrap();
    assert_eq!(m["word_count"], 400);
    assert_eq!(m["reading_time_s"], 120);
    assert_eq!(m["triage"], "pivot");
}
