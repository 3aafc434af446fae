//! Words and keys that decide whether a prompt continues an episode, and whether a tool
//! success answers an earlier failure.

/// Words too common to say anything about a subject.
const STOPWORDS: &[&str] = &[
    "the",
    "and",
    "for",
    "are",
    "but",
    "not",
    "you",
    "all",
    "any",
    "can",
    "had",
    "her",
    "was",
    "one",
    "our",
    "out",
    "has",
    "have",
    "him",
    "his",
    "how",
    "its",
    "let",
    "may",
    "new",
    "now",
    "old",
    "see",
    "two",
    "way",
    "who",
    "did",
    "get",
    "got",
    "use",
    "used",
    "using",
    "this",
    "that",
    "with",
    "from",
    "they",
    "them",
    "then",
    "than",
    "there",
    "their",
    "what",
    "when",
    "where",
    "which",
    "while",
    "will",
    "would",
    "could",
    "should",
    "about",
    "into",
    "also",
    "just",
    "like",
    "make",
    "made",
    "more",
    "most",
    "much",
    "must",
    "need",
    "needs",
    "only",
    "other",
    "over",
    "some",
    "such",
    "sure",
    "take",
    "very",
    "want",
    "well",
    "were",
    "been",
    "being",
    "does",
    "done",
    "each",
    "even",
    "here",
    "know",
    "look",
    "please",
    "thanks",
    "thank",
    "these",
    "those",
    "thing",
    "things",
    "through",
    "what's",
    "it's",
    "i'm",
    "i'll",
    "let's",
    "don't",
    "can't",
    "yes",
    "okay",
    "now",
    "again",
    "still",
    "because",
    "before",
    "after",
    "first",
    "next",
    "last",
    "same",
    "good",
    "great",
    "right",
    "why",
    "your",
    "yours",
    "mine",
    "ours",
    "we're",
    "you're",
    "there's",
    "should",
    "shall",
    "might",
    "think",
    "check",
    "work",
    "works",
    "working",
    "file",
    "files",
    "code",
    "run",
    "running",
    "try",
    "doing",
    "going",
    "want",
    "something",
    "anything",
    "everything",
    "nothing",
];

fn is_stopword(w: &str) -> bool {
    // A set, not a scan of the list: this runs for every word of every reply (with foldhash:
    // SipHash of each word was most of this function's time).
    type Set = std::collections::HashSet<&'static str, foldhash::fast::FixedState>;
    static SET: std::sync::OnceLock<Set> = std::sync::OnceLock::new();
    w.len() <= 10
        && SET
            .get_or_init(|| STOPWORDS.iter().copied().collect())
            .contains(w)
}

/// A content word as the vocabulary keeps it: the low 32 bits of the xxh3 hash of its
/// lowercase form. Hashes, not strings: the vocabulary is consulted for every word of every
/// reply and stored with every checkpoint. 32 bits, not 64: the stored vocabulary was most of
/// the episode builder state (random numbers do not compress), and 32 bits halved it (the
/// database 1.2% smaller) while a false match among a few thousand terms stays a one in a
/// million event that at worst keeps two turns in one episode.
pub type Term = u32;

/// The term of a lowercase word.
pub fn term(word: &str) -> Term {
    xxhash_rust::xxh3::xxh3_64(word.as_bytes()) as u32
}

/// Deserialise a stored vocabulary, whose terms older builds wrote as 64-bit hashes: their low
/// 32 bits are the same word's term now, so an episode open across an upgrade keeps its words.
pub fn stored_vocab<'de, D>(d: D) -> Result<std::collections::BTreeSet<Term>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let wide: Vec<u64> = serde::Deserialize::deserialize(d)?;
    Ok(wide.into_iter().map(|t| t as u32).collect())
}

/// Call `f` with each content word of `text` (lowercase, 3 to 30 characters, not only digits,
/// not a stopword), in order, until it returns false. One buffer serves every word.
fn for_each_word(text: &str, mut f: impl FnMut(&str) -> bool) {
    let mut buf = String::new();
    for raw in runs(text) {
        let w = raw.trim_matches('\'');
        if w.len() < 3 || w.len() > 120 {
            continue;
        }
        let n = if w.is_ascii() {
            w.len()
        } else {
            w.chars().count()
        };
        if !(3..=30).contains(&n) || w.bytes().all(|c| c.is_ascii_digit()) {
            continue;
        }
        buf.clear();
        if w.is_ascii() {
            buf.push_str(w);
            buf.make_ascii_lowercase();
        } else {
            buf.extend(w.chars().flat_map(char::to_lowercase));
        }
        if !is_stopword(&buf) && !f(&buf) {
            return;
        }
    }
}

/// Whether `c` can be part of a word: letters and digits of any script, `_` and `'`.
fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '\''
}

/// [`is_word_char`] for each ASCII byte.
const ASCII_WORD: [bool; 128] = {
    let mut t = [false; 128];
    let mut b = 0;
    while b < 128 {
        let c = b as u8;
        t[b] = c.is_ascii_alphanumeric() || c == b'_' || c == b'\'';
        b += 1;
    }
    t
};

/// The maximal runs of word characters of `text`, in order (what splitting it at every other
/// character leaves, less the empty pieces). Why by byte: this runs over every reply, and
/// decoding each character to ask its Unicode class was most of the cost; ASCII bytes are
/// looked up in a table, and only a non-ASCII character is decoded.
fn runs(text: &str) -> impl Iterator<Item = &str> {
    let bytes = text.as_bytes();
    // Whether the character at byte `i` (a character boundary) is a word character, and its
    // length in bytes.
    let at = move |i: usize| -> (bool, usize) {
        match bytes[i] {
            b if b < 128 => (ASCII_WORD[b as usize], 1),
            _ => text[i..]
                .chars()
                .next()
                .map_or((false, 1), |c| (is_word_char(c), c.len_utf8())),
        }
    };
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < bytes.len() {
            let (word, len) = at(i);
            if word {
                break;
            }
            i += len;
        }
        if i >= bytes.len() {
            return None;
        }
        let start = i;
        while i < bytes.len() {
            let (word, len) = at(i);
            if !word {
                break;
            }
            i += len;
        }
        Some(&text[start..i])
    })
}

/// Distinct content words of `text`, at most `max`, in order of first appearance.
pub fn of(text: &str, max: usize) -> Vec<Term> {
    let mut out: Vec<Term> = Vec::new();
    for_each_word(text, |w| {
        let t = term(w);
        if !out.contains(&t) {
            out.push(t);
        }
        out.len() < max
    });
    out
}

/// Add the content words of `text` to `vocab` until it holds `cap`.
pub fn add_to(vocab: &mut std::collections::BTreeSet<Term>, text: &str, cap: usize) {
    for_each_word(text, |w| {
        if vocab.len() >= cap {
            return false;
        }
        vocab.insert(term(w));
        true
    });
}

/// Words of a file path: its file stem and the two folders above it.
pub fn of_path(path: &str) -> Vec<Term> {
    let parts: Vec<&str> = path.rsplit(['/', '\\']).take(3).collect();
    let mut text = String::new();
    for p in parts {
        let stem = p.split('.').next().unwrap_or(p);
        text.push_str(stem);
        text.push(' ');
    }
    of(&text.replace(['-', '_'], " "), 8)
}

/// What a tool success must share with a failure to count as its recovery: the target for
/// file tools and searches, the command's program and subcommand for `Bash`
/// (`cargo test -p x` and `cargo test` are the same attempt), the tool name otherwise.
pub fn call_key(name: &str, target: Option<&str>) -> String {
    match (name, target) {
        ("Bash", Some(cmd)) => format!("Bash:{}", command_head(cmd)),
        (_, Some(t)) if !t.trim().is_empty() => format!("target:{}", t.trim()),
        _ => format!("tool:{name}"),
    }
}

/// Program and first argument of the last command of a shell line, skipping `cd x &&`,
/// environment assignments and `sudo`/`timeout N`.
pub fn command_head(cmd: &str) -> String {
    let last = cmd
        .rsplit("&&")
        .map(str::trim)
        .find(|c| !c.is_empty() && !c.starts_with("cd "))
        .unwrap_or(cmd.trim());
    let last = last.split(['|', ';', '\n']).next().unwrap_or(last);
    // A subshell: `(source .venv/bin/activate && pytest -x)` runs `pytest`.
    let last = last.trim().trim_start_matches('(').trim_end_matches(')');
    let mut words = last
        .split_whitespace()
        .filter(|w| !w.contains('=') || w.starts_with('-'))
        .skip_while(|w| matches!(*w, "sudo" | "time" | "timeout" | "env" | "nice"))
        .skip_while(|w| w.chars().all(|c| c.is_ascii_digit() || c == 's'));
    let prog = words.next().unwrap_or("");
    let prog = prog.rsplit('/').next().unwrap_or(prog);
    match words.find(|w| !w.starts_with('-')) {
        Some(sub) if prog_takes_subcommand(prog) => format!("{prog} {sub}"),
        _ => prog.to_string(),
    }
}

/// The program of a shell line's subject command (its last command that is not a `cd`), as
/// [`command_head`] finds it, without the subcommand: `python3 calendar.py` and
/// `python3 cal-widget.py` are the same program.
pub fn program(cmd: &str) -> String {
    let head = command_head(cmd);
    head.split_whitespace().next().unwrap_or("").to_string()
}

/// A command that looks around (lists, reads, searches, prints, asks git how things stand) and
/// changes nothing: its success after a failure fixes nothing. `head` as [`command_head`] gives
/// it.
pub fn is_inspection(head: &str) -> bool {
    let mut words = head.split_whitespace();
    let prog = words.next().unwrap_or("");
    let sub = words.next().unwrap_or("");
    matches!(
        prog,
        "ls" | "cat"
            | "head"
            | "tail"
            | "less"
            | "grep"
            | "rg"
            | "find"
            | "fd"
            | "which"
            | "type"
            | "file"
            | "stat"
            | "wc"
            | "du"
            | "df"
            | "ps"
            | "pwd"
            | "echo"
            | "printf"
            | "test"
            | "["
            | "tree"
            | "whoami"
            | "env"
            | "printenv"
            | "id"
            | "lsof"
            | "sleep"
    ) || (prog == "git"
        && matches!(
            sub,
            "status"
                | "log"
                | "show"
                | "diff"
                | "branch"
                | "remote"
                | "rev-parse"
                | "ls-files"
                | "config"
                | "blame"
                | "reflog"
                | "describe"
        ))
}

/// A command that only asks a program about itself (`--help`, `--version`, `help`, `man`,
/// `which`): its success is no fix of an earlier failure of that program.
pub fn is_help_query(cmd: &str) -> bool {
    let last = cmd
        .rsplit("&&")
        .map(str::trim)
        .find(|c| !c.is_empty())
        .unwrap_or(cmd);
    let last = last.split(['|', ';', '\n']).next().unwrap_or(last);
    let words: Vec<&str> = last.split_whitespace().collect();
    matches!(
        words.first().copied(),
        Some("man" | "which" | "type" | "whereis")
    ) || words
        .iter()
        .skip(1)
        .any(|w| matches!(*w, "--help" | "-h" | "--version" | "-V" | "help"))
}

fn prog_takes_subcommand(prog: &str) -> bool {
    matches!(
        prog,
        "cargo"
            | "git"
            | "npm"
            | "pnpm"
            | "yarn"
            | "go"
            | "docker"
            | "kubectl"
            | "make"
            | "uv"
            | "pip"
            | "poetry"
            | "bun"
            | "deno"
            | "dotnet"
            | "mvn"
            | "gradle"
            | "python"
            | "python3"
            | "node"
            | "nix"
            | "systemctl"
    )
}

/// A shell command that throws away changes: the assistant reverting its own work.
pub fn is_revert(cmd: &str) -> bool {
    let c = cmd.to_ascii_lowercase();
    c.contains("git revert")
        || c.contains("git checkout -- ")
        || c.contains("git restore ")
        || c.contains("git reset --hard")
        || c.contains("git stash") && !c.contains("git stash list")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(words: &[&str]) -> Vec<Term> {
        words.iter().map(|w| term(w)).collect()
    }

    #[test]
    fn content_words() {
        assert_eq!(
            of(
                "Please fix the FAILING test in parser.rs, then run it again; fix it",
                10
            ),
            terms(&["fix", "failing", "test", "parser"])
        );
        assert_eq!(of("ok yes go", 10), Vec::<Term>::new());
        assert_eq!(
            of("Überprüfung der Übersetzung", 10),
            terms(&["überprüfung", "der", "übersetzung"])
        );
        assert_eq!(of("one two three four five", 2).len(), 2);
    }

    proptest::proptest! {
        /// The byte scanner finds the same words as splitting at every non-word character.
        #[test]
        fn runs_match_split(text in "[a-zA-Z0-9_' .,;:()\\-\n\t/éÜß中文😀’\u{300}\u{200b}٣]{0,80}") {
            let want: Vec<&str> = text.split(|c: char| !is_word_char(c)).filter(|w| !w.is_empty()).collect();
            proptest::prop_assert_eq!(runs(&text).collect::<Vec<_>>(), want);
        }
    }

    #[test]
    fn runs_of_any_text() {
        let text = "l'été: Übersetzung_2 (中文) x\u{300}y ٣٤ -- a’b 😀ok";
        let want: Vec<&str> = text
            .split(|c: char| !is_word_char(c))
            .filter(|w| !w.is_empty())
            .collect();
        assert_eq!(runs(text).collect::<Vec<_>>(), want);
        assert_eq!(runs("").count(), 0);
        assert_eq!(runs(" ,; ").count(), 0);
    }

    #[test]
    fn add_to_matches_of() {
        let text = "Please fix the FAILING test in parser.rs, then run it again; fix it";
        let mut v = std::collections::BTreeSet::new();
        add_to(&mut v, text, 100);
        let mut want: Vec<Term> = of(text, 100);
        want.sort();
        assert_eq!(v.into_iter().collect::<Vec<_>>(), want);
        let mut v = std::collections::BTreeSet::new();
        add_to(&mut v, text, 2);
        assert_eq!(v.len(), 2);
    }

    #[test]
    fn path_words() {
        assert_eq!(
            of_path("/home/u/src/gleaner/src/store/query_builder.rs"),
            terms(&["query", "builder", "store", "src"])
        );
    }

    #[test]
    fn command_heads() {
        assert_eq!(command_head("cd /x && cargo test -p gleaner"), "cargo test");
        assert_eq!(
            command_head("RUST_LOG=debug cargo build --release"),
            "cargo build"
        );
        assert_eq!(command_head("timeout 30 npm run lint"), "npm run");
        assert_eq!(command_head("ls -la /tmp | head"), "ls");
        assert_eq!(command_head("/usr/bin/python3 -m pytest"), "python3 pytest");
        assert_eq!(
            command_head("(source .venv/bin/activate && pytest -x)"),
            "pytest"
        );
        assert_eq!(
            call_key("Edit", Some("/a/b.rs")),
            call_key("Read", Some("/a/b.rs"))
        );
        assert_eq!(call_key("TodoWrite", None), "tool:TodoWrite");
    }

    #[test]
    fn help_queries() {
        assert!(is_help_query("cd /tmp && skill-seekers github --help 2>&1"));
        assert!(is_help_query("cargo --version"));
        assert!(is_help_query("git help rebase"));
        assert!(is_help_query("which figlet"));
        assert!(!is_help_query("cargo build -p x"));
        assert!(!is_help_query("git commit -m \"help text\""));
    }

    #[test]
    fn reverts() {
        assert!(is_revert("git checkout -- src/lib.rs"));
        assert!(is_revert("cd x && git reset --hard HEAD~1"));
        assert!(!is_revert("git status"));
        assert!(!is_revert("git stash list"));
    }
}
