//! The benchmark tree: copies of the real corpus with fresh session ids, as large as asked.
#![allow(dead_code)] // Each example uses part of the shared helpers.

use std::collections::HashSet;
use std::fs::{self, File};
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::{bail, Context, Result};
use regex::bytes::{Captures, Regex};

/// A UUID, as transcripts write them.
pub const UUID_RE: &str =
    r"(?-u)[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}";

/// An API id (tool use, message, request): keys of `tool_uses` and `usage_messages`.
pub const API_ID_RE: &str = r"(?-u)\b(toolu|srvtoolu|msg|req)_[0-9A-Za-z]{16,40}";

/// Deterministic fresh API id standing for `old` (`toolu_...`) in copy `k`: the same prefix and
/// length, base62.
pub fn map_api_id(k: u64, old: &[u8]) -> Vec<u8> {
    const B62: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let cut = old.iter().position(|&c| c == b'_').map_or(0, |i| i + 1);
    let mut h = xxhash_rust::xxh3::xxh3_128_with_seed(old, k + 1);
    let mut out = old[..cut].to_vec();
    for _ in cut..old.len() {
        out.push(B62[(h % 62) as usize]);
        h = (h / 62) ^ (h << 7);
    }
    out
}

/// The real transcripts, scanned once, copied as often as a tree of the wanted size needs.
pub struct Corpus {
    /// The corpus folder.
    pub root: PathBuf,
    /// Its `*.jsonl` files (relative) and their sizes.
    pub files: Vec<(PathBuf, u64)>,
    ids: HashSet<Vec<u8>>,
    /// Every UUID of a line is made fresh (message, tool and leaf ids too), and every API id
    /// (`toolu_`, `msg_`, `req_`), not only the session ids: copies then share no key, as
    /// distinct real sessions would.
    every_id: bool,
}

/// Whether `b` is a UUID.
pub fn is_uuid(b: &[u8]) -> bool {
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// Deterministic fresh UUID (version 4 layout) standing for `old` in copy `k`.
pub fn map_uuid(k: u64, old: &[u8]) -> String {
    let mut b = xxhash_rust::xxh3::xxh3_128_with_seed(old, k + 1).to_be_bytes();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

impl Corpus {
    /// Find the files and the session ids to rewrite.
    pub fn scan(root: &Path) -> Result<Corpus> {
        let root = root
            .canonicalize()
            .with_context(|| format!("corpus {} not found (use --corpus DIR)", root.display()))?;
        let (mut files, mut stack) = (Vec::new(), vec![root.clone()]);
        while let Some(dir) = stack.pop() {
            for e in fs::read_dir(&dir).with_context(|| format!("cannot read {}", dir.display()))? {
                let p = e?.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "jsonl") {
                    let len = fs::metadata(&p)?.len();
                    files.push((p.strip_prefix(&root)?.to_path_buf(), len));
                }
            }
        }
        files.sort();
        if files.iter().all(|f| f.1 == 0) {
            bail!("no non-empty *.jsonl file in corpus {}", root.display());
        }
        // Session ids: UUID path components and every "sessionId" value.
        let re = Regex::new(&format!(r#""sessionId"\s*:\s*"({UUID_RE})""#))?;
        let (mut ids, mut buf) = (HashSet::new(), Vec::new());
        for (rel, _) in &files {
            for c in rel.components() {
                let s = c.as_os_str().to_string_lossy();
                let s = s.strip_suffix(".jsonl").unwrap_or(&s);
                if is_uuid(s.as_bytes()) {
                    ids.insert(s.as_bytes().to_vec());
                }
            }
            let mut r = BufReader::new(File::open(root.join(rel))?);
            while {
                buf.clear();
                r.read_until(b'\n', &mut buf)? > 0
            } {
                ids.extend(re.captures_iter(&buf).map(|c| c[1].to_vec()));
            }
        }
        Ok(Corpus {
            root,
            files,
            ids,
            every_id: false,
        })
    }

    /// Make every UUID of each copy fresh, not only the session ids (see `every_id`).
    pub fn with_fresh_ids(mut self) -> Corpus {
        self.every_id = true;
        self
    }

    /// What a finished tree's `tree.done` holds: its target size and how it was made (a tree
    /// made another way is made again).
    pub fn marker(&self, target: u64) -> String {
        match self.every_id {
            true => format!("{target} day-old every-id\n"),
            false => format!("{target} day-old\n"),
        }
    }

    /// Copy the corpus as `copy-<k>/...` with fresh session ids, line by line, until `target`
    /// bytes are written, each file last modified a day ago. Returns (bytes, files).
    pub fn generate(&self, dest: &Path, target: u64) -> Result<(u64, u64)> {
        self.generate_copies(dest, target, 0)
            .map(|(bytes, files, _)| (bytes, files))
    }

    /// [`Corpus::generate`] from copy number `first` on (a tree grown in parts gets fresh ids
    /// in each part). Returns (bytes, files, the next copy number).
    pub fn generate_copies(&self, dest: &Path, target: u64, first: u64) -> Result<(u64, u64, u64)> {
        let re = Regex::new(UUID_RE)?;
        let api = Regex::new(API_ID_RE)?;
        let (mut bytes, mut files, mut buf) = (0u64, 0u64, Vec::new());
        for k in first.. {
            for (rel, _) in &self.files {
                let mut out = dest.join(format!("copy-{k}"));
                for c in rel.components() {
                    let Component::Normal(name) = c else { continue };
                    let name = name.to_string_lossy();
                    let (stem, ext) = name
                        .strip_suffix(".jsonl")
                        .map_or((&*name, ""), |s| (s, ".jsonl"));
                    match self.ids.contains(stem.as_bytes()) {
                        true => out.push(format!("{}{ext}", map_uuid(k, stem.as_bytes()))),
                        false => out.push(&*name),
                    }
                }
                let ctx = || format!("cannot write {}", out.display());
                fs::create_dir_all(out.parent().unwrap_or(dest)).with_context(ctx)?;
                let mut r = BufReader::with_capacity(1 << 20, File::open(self.root.join(rel))?);
                let mut w =
                    BufWriter::with_capacity(1 << 20, File::create(&out).with_context(ctx)?);
                while {
                    buf.clear();
                    r.read_until(b'\n', &mut buf)? > 0
                } {
                    let line = re.replace_all(&buf, |c: &Captures| {
                        match self.every_id || self.ids.contains(&c[0]) {
                            true => map_uuid(k, &c[0]).into_bytes(),
                            false => c[0].to_vec(),
                        }
                    });
                    let line = match self.every_id {
                        true => api
                            .replace_all(&line, |c: &Captures| map_api_id(k, &c[0]))
                            .into_owned(),
                        false => line.into_owned(),
                    };
                    w.write_all(&line).with_context(ctx)?;
                    bytes += line.len() as u64;
                }
                // A day old, like the transcripts a first ingest finds: every session is
                // finished by the ingest's closing sweep (episodes closed, snippets written),
                // whenever the tree was made.
                let day_ago = SystemTime::now() - Duration::from_secs(86_400);
                w.into_inner()
                    .map_err(|e| e.into_error())
                    .and_then(|f| f.set_modified(day_ago))
                    .with_context(ctx)?;
                files += 1;
                if bytes >= target {
                    return Ok((bytes, files, k + 1));
                }
            }
        }
        unreachable!("the copy loop only ends at the target size")
    }

    /// One main transcript of at least `target` bytes at `dest/-one/<id>.jsonl`: the corpus's
    /// lines in order, copy after copy, every session id replaced by the file's own (one
    /// session, like a very long one written over months). Returns its size.
    pub fn one_file(&self, dest: &Path, target: u64) -> Result<u64> {
        let re = Regex::new(UUID_RE)?;
        let sid = map_uuid(u64::MAX, b"one-file");
        let out = dest.join("-one").join(format!("{sid}.jsonl"));
        let ctx = || format!("cannot write {}", out.display());
        fs::create_dir_all(out.parent().unwrap_or(dest)).with_context(ctx)?;
        let mut w = BufWriter::with_capacity(1 << 20, File::create(&out).with_context(ctx)?);
        let (mut bytes, mut buf) = (0u64, Vec::new());
        while bytes < target {
            for (rel, _) in &self.files {
                let mut r = BufReader::with_capacity(1 << 20, File::open(self.root.join(rel))?);
                while {
                    buf.clear();
                    r.read_until(b'\n', &mut buf)? > 0
                } {
                    let line =
                        re.replace_all(&buf, |c: &Captures| match self.ids.contains(&c[0]) {
                            true => sid.clone().into_bytes(),
                            false => c[0].to_vec(),
                        });
                    w.write_all(&line).with_context(ctx)?;
                    bytes += line.len() as u64;
                }
                if bytes >= target {
                    break;
                }
            }
        }
        w.flush().with_context(ctx)?;
        Ok(bytes)
    }

    /// `n` complete user/assistant lines under 4 KB, largest files first; cycled when short.
    pub fn live_lines(&self, n: usize) -> Result<Vec<Vec<u8>>> {
        let mut by_size: Vec<_> = self.files.iter().collect();
        by_size.sort_by_key(|f| std::cmp::Reverse(f.1));
        let mut out = Vec::new();
        'files: for (rel, _) in by_size {
            for line in BufReader::new(File::open(self.root.join(rel))?).split(b'\n') {
                let mut line = line?;
                let Ok(v) = serde_json::from_slice::<serde_json::Value>(&line) else {
                    continue;
                };
                if line.len() < 4095 && matches!(v["type"].as_str(), Some("user" | "assistant")) {
                    line.push(b'\n');
                    out.push(line);
                    if out.len() >= n {
                        break 'files;
                    }
                }
            }
        }
        let have = out.len();
        if have < 21 {
            bail!("the corpus has only {have} user/assistant lines under 4 KB");
        }
        out.extend(
            (have..n)
                .map(|i| out[20 + (i - 20) % (have - 20)].clone())
                .collect::<Vec<_>>(),
        );
        Ok(out)
    }
}
