//! Tags of a closed episode's snippets: the tools it used, the kinds of files it touched and of
//! errors it met, its project.

use std::collections::BTreeSet;

use crate::episode::Open;
use crate::snippet::{path_tags, project_tag};

/// Tools that organise the work rather than do it: not worth a tag.
const BOOKKEEPING_TOOLS: &[&str] = &[
    "TodoWrite",
    "TodoRead",
    "ExitPlanMode",
    "EnterPlanMode",
    "AskUserQuestion",
    "Skill",
];

/// Tools used (most used first, at most 5), file extensions, error kinds, project.
pub(super) fn tags(open: &Open, project: Option<&str>) -> Vec<String> {
    let mut tools: Vec<(&String, &i64)> = open.tools.iter().collect();
    tools.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let mut out: BTreeSet<String> = tools
        .into_iter()
        .filter(|(t, _)| !BOOKKEEPING_TOOLS.contains(&t.as_str()))
        .take(5)
        .map(|(t, _)| format!("tool:{}", t.to_lowercase()))
        .collect();
    out.extend(open.files.iter().filter_map(|f| path_tags(f)));
    out.extend(open.error_kinds.iter().map(|k| format!("error:{k}")));
    if let Some(p) = project {
        out.extend(project_tag(p));
    }
    out.into_iter().collect()
}
