//! The coarse kind of an error: a snippet tag (`error:<kind>`, see `crate::snippet::draft`), and
//! the test of whether a failed call is tool mechanics rather than a failure anyone learns from.

/// Whether a failed call is tool mechanics rather than a real failure (see the caller).
pub fn is_mechanics(kind: &Option<String>, tool: Option<&str>) -> bool {
    matches!(
        kind.as_deref(),
        Some("edit_mismatch" | "stale_read" | "tool_usage")
    ) || matches!(
        tool,
        Some("KillShell" | "KillBash" | "TodoWrite" | "BashOutput")
    )
}

/// A coarse kind for an error text, for tags.
pub fn error_kind(text: &str) -> Option<String> {
    let t = text.to_ascii_lowercase();
    let kind = if t.contains("string to replace not found")
        || t.contains("old_string")
        || t.contains("matches of the string to replace")
    {
        "edit_mismatch"
    } else if t.contains("has not been read yet") || t.contains("file has been modified") {
        "stale_read"
    } else if t.contains("inputvalidationerror")
        || t.contains("no such tool available")
        || t.contains("unknown skill")
        || t.contains("cannot read binary")
    {
        "tool_usage"
    } else if t.contains("error[e")
        || t.contains("mismatched types")
        || t.contains("cannot find")
        || t.contains("could not compile")
    {
        "compile"
    } else if t.contains("syntaxerror")
        || t.contains("syntax error")
        || t.contains("unexpected token")
        || t.contains("parse error")
    {
        "syntax"
    } else if t.contains("typeerror") || t.contains("type error") || t.contains("is not assignable")
    {
        "type"
    } else if t.contains("test result: failed")
        || t.contains("tests failed")
        || t.contains("assertion")
        || t.contains("failed:") && t.contains("test")
    {
        "test"
    } else if t.contains("permission denied")
        || t.contains("eacces")
        || t.contains("operation not permitted")
    {
        "permission"
    } else if t.contains("no such file")
        || t.contains("not found")
        || t.contains("does not exist")
        || t.contains("enoent")
    {
        "not_found"
    } else if t.contains("timed out") || t.contains("timeout") {
        "timeout"
    } else if t.contains("connection refused")
        || t.contains("econnrefused")
        || t.contains("network")
    {
        "network"
    } else if t.contains("exit code") {
        "exit_status"
    } else {
        return None;
    };
    Some(kind.to_string())
}
