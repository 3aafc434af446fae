//! The one-long-session benchmark: one finished session of a given size, built from the
//! corpus's main transcripts, extracted, cut into episodes, ingested and printed as text.

use super::*;

/// Figures of the one-long-session benchmark.
pub(super) struct Session {
    pub(super) bytes: u64,
    pub(super) lines: u64,
    pub(super) extract_ms: f64,
    pub(super) episode_ms: f64,
    pub(super) ingest_ms: f64,
    pub(super) episodes: i64,
    pub(super) snippets: i64,
    pub(super) text_ms: f64,
    pub(super) text_bytes: usize,
}

impl Bench {
    /// One finished session of `target` bytes built from the corpus's main transcripts (their
    /// lines concatenated under one session id, modification time a day ago): extraction time
    /// in process (parse, rows, redaction, episodes and snippets, no database), then
    /// `gleaner ingest` end to end into a fresh SQLite database.
    pub(super) fn session(&mut self, corpus: &Corpus, target: u64) -> Result<Session> {
        use gleaner::episode::{Rules, Settings};
        use gleaner::extract::redact::Redactor;
        use gleaner::extract::{extract, FileContext};
        use gleaner::tail::discovery::classify;
        use gleaner::tail::{Tailer, TailerConfig};

        const SID: &str = "5e551011-0000-4000-8000-00000000b11e";
        let root = self.work.join("session");
        let _ = fs::remove_dir_all(&root);
        let path = root.join("-bench-session").join(format!("{SID}.jsonl"));
        fs::create_dir_all(path.parent().context("parent")?)?;
        let re = Regex::new(r#""sessionId"\s*:\s*"[^"]*""#)?;
        let mut mains: Vec<_> = corpus
            .files
            .iter()
            .filter(|(rel, _)| {
                let stem = rel.file_stem().map(|s| s.to_string_lossy().into_owned());
                stem.is_some_and(|s| is_uuid(s.as_bytes()))
                    && !rel.to_string_lossy().contains("subagents")
            })
            .collect();
        mains.sort_by_key(|f| std::cmp::Reverse(f.1));
        let mut w = BufWriter::new(File::create(&path)?);
        let (mut bytes, mut lines, mut buf) = (0u64, 0u64, Vec::new());
        'outer: for (rel, _) in mains.iter().cycle() {
            let mut r = BufReader::new(File::open(corpus.root.join(rel))?);
            while {
                buf.clear();
                r.read_until(b'\n', &mut buf)? > 0
            } {
                if buf.last() != Some(&b'\n') {
                    continue;
                }
                let line = re.replace_all(&buf, format!(r#""sessionId":"{SID}""#).as_bytes());
                w.write_all(&line)?;
                bytes += line.len() as u64;
                lines += 1;
                if bytes >= target {
                    break 'outer;
                }
            }
        }
        w.flush()?;
        drop(w);
        let day_ago = SystemTime::now() - Duration::from_secs(86_400);
        File::options()
            .write(true)
            .open(&path)?
            .set_modified(day_ago)?;

        // In process: the pipeline's pure part, batch by batch as the daemon reads it; the
        // episode share is the difference with the stage switched off (best of three each).
        let redactor = Redactor::builtin();
        let extract_ms = |rules: &Rules| -> Result<f64> {
            let mut best = f64::MAX;
            for _ in 0..3 {
                let info = classify(&root, &path);
                let mut ctx =
                    FileContext::new(1, (MACHINE.into(), MACHINE.into()), info, Some(SID.into()));
                let cfg = TailerConfig {
                    max_line_bytes: 64 << 20,
                    read_chunk: 1 << 20,
                };
                let t0 = Instant::now();
                let (mut t, _) = Tailer::open(&path, None, cfg)?;
                let mut episodes = None;
                let how = gleaner::episode::Feed {
                    rules,
                    redactor: &redactor,
                    last: gleaner::episode::Last::Open,
                    drafter: &gleaner::snippet::draft::Auto,
                };
                while let Some(batch) = t.read_batch(8 << 20, 20_000)? {
                    let mut ex = extract(&mut ctx, &batch, &redactor);
                    if rules.settings.enabled {
                        gleaner::episode::feed(&mut episodes, &mut ex, &how);
                    }
                    std::hint::black_box(&ex.rows);
                }
                std::hint::black_box(
                    episodes
                        .as_ref()
                        .and_then(|b| b.finish(SID, &gleaner::snippet::draft::Auto)),
                );
                best = best.min(t0.elapsed().as_secs_f64() * 1000.0);
            }
            Ok(best)
        };
        let with = extract_ms(&Rules::defaults()?)?;
        let without = extract_ms(&Rules::new(Settings {
            enabled: false,
            ..Settings::defaults()?
        })?)?;
        let best = (with, (with - without).max(0.0));

        // End to end: gleaner ingest (finishes the session: its mtime is a day old).
        for f in ["session.db", "session.db-wal", "session.db-shm"] {
            let _ = fs::remove_file(self.work.join(f));
        }
        let url = format!("sqlite://{}", self.work.join("session.db").display());
        let t0 = Instant::now();
        let Ingest(s, ..) = self.ingest(&root, &url, &self.work.join("ingest-session.log"))?;
        let ingest_ms = t0.elapsed().as_secs_f64() * 1000.0;
        let (episodes, snippets, open) = self.rt.block_on(async {
            let mut db = Reader::connect(&url).await?;
            let e = db.count("SELECT COUNT(*) FROM episodes").await?;
            let s = db.count("SELECT COUNT(*) FROM snippets").await?;
            let o = db
                .count("SELECT COUNT(*) FROM episodes WHERE status = 'open'")
                .await?;
            anyhow::Ok((e, s, o))
        })?;
        if open != 0 || s.errors != 0 {
            self.problems.push(format!(
                "session: {open} episodes left open, {} errors",
                s.errors
            ));
        }
        if best.0 >= 500.0 {
            self.problems.push(format!(
                "session: extraction took {:.0} ms (target 500)",
                best.0
            ));
        }
        // `gleaner text` of the whole session, end to end (best of three).
        let mut text_ms = f64::MAX;
        let mut text_bytes = 0;
        for _ in 0..3 {
            let t0 = Instant::now();
            let out = self.cmd(&root, &url).args(["text", SID]).output()?;
            text_ms = text_ms.min(t0.elapsed().as_secs_f64() * 1000.0);
            if !out.status.success() {
                bail!(
                    "gleaner text failed: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            text_bytes = out.stdout.len();
        }
        if text_ms >= 500.0 {
            self.problems.push(format!(
                "session: gleaner text took {text_ms:.0} ms (target 500)"
            ));
        }
        Ok(Session {
            text_ms,
            text_bytes,
            bytes,
            lines,
            extract_ms: best.0,
            episode_ms: best.1,
            ingest_ms,
            episodes,
            snippets,
        })
    }
}
