//! The benchmark's data: real assistant texts, snippets generated from them, and the words
//! its queries look for.

use super::*;

/// Assistant text blocks of every `*.jsonl` below `dir`, cut to at most 4,000 bytes (on a
/// character boundary), those under 100 bytes left out, duplicates removed.
pub(super) fn load_texts(dir: &Path) -> Result<Vec<String>> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).with_context(|| format!("cannot read {}", d.display()))? {
            let p = e?.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "jsonl") {
                files.push(p);
            }
        }
    }
    files.sort();
    let (mut seen, mut texts) = (HashSet::new(), Vec::new());
    for f in files {
        let bytes = std::fs::read(&f).with_context(|| format!("cannot read {}", f.display()))?;
        for line in bytes.split(|&b| b == b'\n') {
            for rec in parse_line(line).records {
                if rec.kind != Kind::Assistant {
                    continue;
                }
                let Some(Content::Blocks(blocks)) = rec.message.map(|m| m.content) else {
                    continue;
                };
                for b in blocks {
                    let Block::Text(t) = b else { continue };
                    let t = gleaner::text::head_bytes(t.trim(), 4000);
                    if t.len() >= 100 && seen.insert(t.to_string()) {
                        texts.push(t.to_string());
                    }
                }
            }
        }
    }
    Ok(texts)
}

/// A title from a text: its first non-empty line without Markdown markers, 1..=120 chars.
fn title_of(text: &str) -> String {
    let line = text
        .lines()
        .map(|l| l.trim().trim_start_matches(['#', '*', '-', ' ']).trim())
        .find(|l| !l.is_empty())
        .unwrap_or("untitled");
    line.chars().take(120).collect()
}

pub(super) fn generate(count: usize, texts: &[String], now: i64) -> Vec<Gen> {
    let mut rng = Rng(0x5EED);
    let span = DAYS * 86_400_000;
    (0..count)
        .map(|i| {
            let text = rng.below(texts.len());
            let n_tags = 1 + rng.below(4);
            let mut tags: Vec<String> = Vec::new();
            while tags.len() < n_tags {
                // Skewed towards low numbers: tag 0 is on ~10% of rows, tag 49 on ~0.1%.
                let t = rng.below(TAGS) * rng.below(TAGS) / TAGS;
                let t = tag(t);
                if !tags.contains(&t) {
                    tags.push(t);
                }
            }
            let line_start = 1 + rng.below(5000) as i64;
            Gen {
                session: rng.below(SESSIONS),
                snippet_type: TYPES[rng.below(TYPES.len())],
                origin: if rng.below(20) == 0 { "manual" } else { "auto" },
                title: title_of(&texts[text]),
                text,
                tags,
                line_start,
                line_end: line_start + rng.below(40) as i64,
                created_at: iso_from_unix_millis(now - (rng.next() % span as u64) as i64),
                hash: format!("{:016x}{i:08x}", rng.next()),
            }
        })
        .collect()
}

/// Keywords chosen from the data: a common word (in ~20% of rows), a rare one (~0.05%), and a
/// two-letter one (~5%), each with its approximate row count (by whole words; substring
/// matches are counted by the queries themselves).
pub(super) struct Words {
    pub(super) common: (String, usize),
    pub(super) rare: (String, usize),
    pub(super) short: (String, usize),
}

pub(super) fn pick_words(rows: &[Gen], texts: &[String]) -> Words {
    let mut uses = vec![0usize; texts.len()];
    for r in rows {
        uses[r.text] += 1;
    }
    let mut df: HashMap<String, usize> = HashMap::new();
    for (t, n) in texts.iter().zip(&uses) {
        if *n == 0 {
            continue;
        }
        let words: HashSet<String> = t
            .split(|c: char| !c.is_ascii_alphabetic())
            .filter(|w| w.len() >= 2)
            .map(str::to_ascii_lowercase)
            .collect();
        for w in words {
            *df.entry(w).or_default() += n;
        }
    }
    let total = rows.len() as f64;
    let closest = |share: f64, ok: &dyn Fn(&str) -> bool| {
        let want = (share * total).max(1.0);
        df.iter()
            .filter(|(w, _)| ok(w))
            .min_by(|a, b| {
                let da = (*a.1 as f64 - want).abs();
                let db = (*b.1 as f64 - want).abs();
                da.total_cmp(&db).then_with(|| a.0.cmp(b.0))
            })
            .map_or((String::from("error"), 0), |(w, n)| (w.clone(), *n))
    };
    Words {
        common: closest(0.20, &|w| w.len() >= 5),
        rare: closest(0.0005, &|w| w.len() >= 8),
        short: closest(0.05, &|w| w.len() == 2),
    }
}
