//! Finding transcript files and telling what each one is from its path alone.
//!
//! Claude Code has used three layouts for sub-agents over time (see the format doc, §1.3):
//! inline sidechains in the main file, flat `agent-<id>.jsonl` next to the main files, and
//! `<session>/subagents/**/agent-<id>.jsonl`. [`classify`] maps a path to a [`FileInfo`]; the
//! session id of a file whose name is not a UUID is only known once its lines are read (the
//! pipeline fills it in).

use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Whether a file is a main session transcript or a sub-agent's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// `<project>/<session>.jsonl` (or any other non-agent `*.jsonl`).
    Main,
    /// `agent-<id>.jsonl`, flat or below `<session>/subagents/`.
    Agent,
}

impl FileKind {
    /// The name stored in the database.
    pub fn as_str(self) -> &'static str {
        match self {
            FileKind::Main => "main",
            FileKind::Agent => "agent",
        }
    }
}

/// What the path of a transcript says about it.
///
/// Why `Arc`s: the engine keeps one for every file of the tree for as long as it runs (26,125
/// on the 5 GB bench tree), and shares the path with its map key and queue and the project
/// name with the project's other files, instead of a copy each (issue 30, peak RSS).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileInfo {
    /// Absolute path.
    pub path: Arc<Path>,
    /// Main or sub-agent.
    pub kind: FileKind,
    /// The project folder name (the encoded working directory).
    pub project: Arc<str>,
    /// Session id when the path decides it: a UUID file stem for main files, the UUID directory
    /// above `subagents/` for nested agent files. `None` means "read it from the lines".
    pub session_id: Option<String>,
    /// Sub-agent id (file stem without `agent-`).
    pub agent_id: Option<String>,
}

impl FileInfo {
    /// File stem, the fallback session id of a main file whose lines carry none.
    pub fn stem(&self) -> String {
        file_stem(&self.path)
    }
}

fn file_stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// True for a lower-case or upper-case 8-4-4-4-12 hex UUID.
pub fn is_uuid(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// Classify a `*.jsonl` path found below `root`.
pub fn classify(root: &Path, path: &Path) -> FileInfo {
    let stem = file_stem(path);
    let rel = path.strip_prefix(root).unwrap_or(path);
    let comps: Vec<String> = rel
        .parent()
        .map(|p| {
            p.components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    // Nearest `subagents` ancestor whose parent directory is the session folder.
    let sub_idx = comps.iter().rposition(|c| c == "subagents");
    let is_agent_name = stem.starts_with("agent-");
    let agent_id = is_agent_name.then(|| stem["agent-".len()..].to_string());

    if let Some(i) = sub_idx.filter(|&i| i >= 1) {
        let session_dir = &comps[i - 1];
        let project = if i >= 2 { comps[i - 2].as_str() } else { "" };
        return FileInfo {
            path: Arc::from(path),
            kind: FileKind::Agent,
            project: Arc::from(project),
            session_id: is_uuid(session_dir).then(|| session_dir.to_lowercase()),
            agent_id: agent_id.or(Some(stem)),
        };
    }
    let project: Arc<str> = Arc::from(comps.last().map_or("", String::as_str));
    if is_agent_name {
        return FileInfo {
            path: Arc::from(path),
            kind: FileKind::Agent,
            project,
            session_id: None,
            agent_id,
        };
    }
    FileInfo {
        path: Arc::from(path),
        kind: FileKind::Main,
        project,
        session_id: is_uuid(&stem).then(|| stem.to_lowercase()),
        agent_id: None,
    }
}

/// Every `*.jsonl` file below `root`, sorted (so ingest order is reproducible). Unreadable
/// directories are skipped with a warning; a missing root yields an empty list.
pub fn scan(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(err) => {
                if dir != root || err.kind() != std::io::ErrorKind::NotFound {
                    let key = format!("read_dir:{}", dir.display());
                    if let Some(repeated) = crate::metrics::should_log(&key) {
                        tracing::warn!(dir = %dir.display(), error = %err, repeated, "cannot read directory");
                    }
                }
                continue;
            }
        };
        for entry in entries.flatten() {
            let Ok(ft) = entry.file_type() else { continue };
            let p = entry.path();
            if ft.is_dir() {
                stack.push(p);
            } else if is_transcript(&p) && (ft.is_file() || p.is_file()) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Whether a path names a transcript (`*.jsonl`).
pub fn is_transcript(p: &Path) -> bool {
    p.extension().is_some_and(|e| e == "jsonl")
}

#[cfg(test)]
mod tests {
    use super::*;

    const U: &str = "512f6c74-f82f-4adb-9719-4ae90076677c";

    #[test]
    fn main_file() {
        let root = Path::new("/r");
        let f = classify(root, &Path::new("/r/-home-x").join(format!("{U}.jsonl")));
        assert_eq!(f.kind, FileKind::Main);
        assert_eq!(&*f.project, "-home-x");
        assert_eq!(f.session_id.as_deref(), Some(U));
        assert_eq!(f.agent_id, None);

        let f = classify(root, Path::new("/r/-home-x/notes.jsonl"));
        assert_eq!(f.kind, FileKind::Main);
        assert_eq!(f.session_id, None);
        assert_eq!(f.stem(), "notes");
    }

    #[test]
    fn flat_agent() {
        let f = classify(Path::new("/r"), Path::new("/r/proj/agent-c8d9b115.jsonl"));
        assert_eq!(f.kind, FileKind::Agent);
        assert_eq!(f.agent_id.as_deref(), Some("c8d9b115"));
        assert_eq!(f.session_id, None);
        assert_eq!(&*f.project, "proj");
    }

    #[test]
    fn nested_agents() {
        let p = PathBuf::from(format!("/r/proj/{U}/subagents/agent-acompact-9dce12.jsonl"));
        let f = classify(Path::new("/r"), &p);
        assert_eq!(f.kind, FileKind::Agent);
        assert_eq!(f.session_id.as_deref(), Some(U));
        assert_eq!(f.agent_id.as_deref(), Some("acompact-9dce12"));
        assert_eq!(&*f.project, "proj");

        let p = PathBuf::from(format!("/r/proj/{U}/subagents/workflows/w1/agent-a1.jsonl"));
        let f = classify(Path::new("/r"), &p);
        assert_eq!(f.session_id.as_deref(), Some(U));
        assert_eq!(f.agent_id.as_deref(), Some("a1"));
        assert_eq!(&*f.project, "proj");
    }

    #[test]
    fn uuid_check() {
        assert!(is_uuid(U));
        assert!(!is_uuid("512f6c74-f82f-4adb-9719-4ae90076677"));
        assert!(!is_uuid("agent-a073139c8fe58ba03"));
    }

    #[test]
    fn scans_nested_dirs() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join(format!("p/{U}/subagents"))).unwrap();
        std::fs::write(d.path().join(format!("p/{U}.jsonl")), "").unwrap();
        std::fs::write(d.path().join(format!("p/{U}/subagents/agent-a1.jsonl")), "").unwrap();
        std::fs::write(
            d.path().join(format!("p/{U}/subagents/agent-a1.meta.json")),
            "",
        )
        .unwrap();
        let found = scan(d.path());
        assert_eq!(found.len(), 2);
        assert!(scan(&d.path().join("missing")).is_empty());
    }
}
