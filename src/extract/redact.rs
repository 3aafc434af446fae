//! Secret redaction: every piece of text is passed through [`Redactor::redact`] before it is
//! stored, so that a key pasted into a prompt or printed by a tool never reaches the database.
//!
//! Secrets are replaced by `[REDACTED:<kind>]`. Where a secret sits in a recognisable context
//! (`Authorization: Bearer <token>`, `postgres://user:<password>@host`, `DB_PASSWORD=<value>`),
//! only the secret part is replaced and the context is kept, because the context is what makes
//! a transcript readable later.
//!
//! # Design
//! - Rules are regexes. A rule either replaces its whole match or, when it has a capture group
//!   named `secret`, only that group. Some rules also have a validator that rejects matches that
//!   only look like secrets (placeholders, code, paths).
//! - The hot path is text with no secret at all. Every built-in rule has a trigger, a few
//!   literals that any match must contain (`sk-`, `AKIA`, `-----BEGIN`, `password`, ...). One
//!   search for the union of the triggers rejects most texts; when it fails (and no extra
//!   pattern is configured) the input is returned borrowed, without allocating. Otherwise only
//!   the rules whose trigger occurs are run.
//! - Rules are tried in priority order (specific token formats before generic contexts) and a
//!   later match that overlaps an earlier accepted one is dropped, so that
//!   `OPENAI_API_KEY=sk-proj-...` is counted once, as `openai_key`.
//!
//! # False positives are bugs
//! UUIDs, git hashes, paths, code and image data must survive untouched. Decisions:
//! - AWS secret access keys are only recognised after a key name (`aws_secret_access_key`,
//!   `SecretAccessKey`, ...), never as a bare 40-character string.
//! - Assignments (`password_assignment`) need a key that *ends* in a secret word (`password`,
//!   `passwd`, `pwd`, `pass` after a separator, `secret`, `token`, `api_key`, `apikey`,
//!   `private_key`, `access_key`, optionally followed by `_key`/`_base`), so
//!   `max_tokens`, `token_type` or `password_hash` do not count. The value must be at least 6
//!   characters, contain no whitespace, not be all digits, not be a path, not be a code
//!   expression (`tokens.next()`, `self.token`, `String`), and not be a placeholder.
//! - Placeholders are kept visible, because a reader wants to see that a value was a template:
//!   see [`is_placeholder`] for the list (`changeme`, `your-api-key-here`, `<token>`, `${VAR}`,
//!   `$VAR`, `process.env.X`, `os.environ[...]`, `xxx`, `***`, `REDACTED`, ...). The AWS
//!   documentation keys (`AKIAIOSFODNN7EXAMPLE`, `...EXAMPLEKEY`) are placeholders too.

use std::borrow::Cow;
use std::collections::BTreeMap;

use regex::Regex;

/// An extra redaction pattern from the configuration that does not compile.
///
/// Why a dedicated type: the configuration loader must tell the user which of their patterns
/// is wrong, so the error carries the pattern's name and the regex engine's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid redaction pattern {pattern:?}: {message}")]
pub struct PatternError {
    /// The configured name of the pattern (its redaction kind).
    pub pattern: String,
    /// Why it was rejected (the regex engine's message, or a problem with the name).
    pub message: String,
}

/// Decides whether a candidate match really is a secret. Receives the secret text (the
/// `secret` group, or the whole match), the whole match, and the part of the whole match after
/// the secret (the consumed terminator, if any).
type Validator = fn(secret: &str, whole: &str, after: &str) -> bool;

/// One compiled rule.
#[derive(Debug)]
struct Rule {
    kind: &'static str,
    re: Regex,
    /// Index of the capture group named `secret`, if the rule has one.
    secret_group: Option<usize>,
    validate: Option<Validator>,
    /// Index into `Redactor::triggers`; `None` (extra patterns) means always try the rule.
    trigger: Option<usize>,
}

/// A built-in rule before compilation. Kept as data so that a test can check that every
/// built-in pattern compiles.
struct Spec {
    kind: &'static str,
    /// A cheap regex (literals) that must match for `pattern` to be able to match.
    trigger: &'static str,
    pattern: &'static str,
    validate: Option<Validator>,
}

/// Characters that may end a token-like secret: anything that cannot be part of it. Used as a
/// consumed guard instead of `\b` (the regex crate has no look-around, and `\b` is wrong after
/// a `-`). The guard is outside the `secret` group, so it is never replaced.
macro_rules! end {
    () => {
        r"(?:$|[^A-Za-z0-9_\-])"
    };
}

/// Key words for generic assignments; the key must end with one of them.
const ASSIGN_KEY: &str = r"(?:password|passwd|pwd|[_.\-]pass|secret|token|api[_\-]?key|private[_\-]?key|access[_\-]?key)(?:[_\-]?(?:key|base))?";

/// The built-in rules, in priority order (first wins on overlap).
fn builtin_specs() -> Vec<Spec> {
    let assign_quoted = format!(
        r#"(?i)(?:^|[^A-Za-z0-9_])(?P<key>[A-Za-z0-9_.\-]*{ASSIGN_KEY})\\?["']?(?P<op>\s*(?::=|=>|=|:)\s*)\\?["'](?P<secret>[^"'\s\\]{{1,512}})\\?["']"#
    );
    let assign_bare = format!(
        r#"(?i)(?:^|[^A-Za-z0-9_])(?P<key>[A-Za-z0-9_.\-]*{ASSIGN_KEY})\\?["']?(?P<op>\s*(?::=|=>|=|:)\s*)(?P<secret>[^\s"'`,;&<>(){{}}\[\]\\|]{{1,512}})(?:$|[\s"'`,;&<)}}\]\\|])"#
    );
    let specs = vec![
        Spec {
            kind: "private_key",
            trigger: r"-----BEGIN",
            pattern: r"-----BEGIN[A-Z0-9 ]{0,24}PRIVATE KEY(?: BLOCK)?-----(?:[A-Za-z0-9+/=\s\\:,.\-]*?-----END[A-Z0-9 ]{0,24}PRIVATE KEY(?: BLOCK)?-----|(?:\s|\\[nr])+[A-Za-z0-9+/=\s\\:,.\-]*)",
            validate: Some(pem_has_body),
        },
        Spec {
            kind: "anthropic_key",
            trigger: r"sk-ant-",
            pattern: concat!(
                r"(?:^|[^A-Za-z0-9_\-])(?P<secret>sk-ant-[a-z]{2,8}[0-9]{0,3}-[A-Za-z0-9_\-]{20,})",
                end!()
            ),
            validate: Some(not_truncated),
        },
        Spec {
            kind: "openai_key",
            trigger: r"sk-",
            pattern: concat!(
                r"(?:^|[^A-Za-z0-9_\-])(?P<secret>sk-(?:(?:proj|svcacct|admin|None)-[A-Za-z0-9_\-]{20,}|[A-Za-z0-9]{32,}))",
                end!()
            ),
            validate: Some(openai_ok),
        },
        Spec {
            kind: "github_token",
            trigger: r"gh[pousr]_|github_pat_",
            pattern: concat!(
                r"(?:^|[^A-Za-z0-9_\-])(?P<secret>(?:gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{50,70}))",
                end!()
            ),
            validate: Some(not_placeholder),
        },
        Spec {
            kind: "gitlab_token",
            trigger: r"gl(?:pat|dt|ptt|rt|cbt|soat|ffct|imt|agent)-",
            pattern: concat!(
                r"(?:^|[^A-Za-z0-9_\-])(?P<secret>gl(?:pat|dt|ptt|rt|cbt|soat|ffct|imt|agent)-[A-Za-z0-9_\-]{20,})",
                end!()
            ),
            validate: Some(has_digit),
        },
        Spec {
            kind: "slack_webhook",
            trigger: r"hooks\.slack\.com",
            pattern: r"https://hooks\.slack\.com/(?:services|workflows|triggers)/(?P<secret>T[A-Za-z0-9_]{6,}/[A-Za-z0-9_/]{8,})",
            validate: Some(not_placeholder),
        },
        Spec {
            kind: "slack_token",
            trigger: r"xox[abeoprs]-",
            pattern: concat!(
                r"(?:^|[^A-Za-z0-9_\-])(?P<secret>(?:xoxe\.)?xox[abeoprs]-[0-9]{1,16}-[A-Za-z0-9\-]{10,})",
                end!()
            ),
            validate: Some(not_placeholder),
        },
        Spec {
            kind: "stripe_key",
            trigger: r"[sr]k_(?:live|test)_|whsec_",
            pattern: concat!(
                r"(?:^|[^A-Za-z0-9_\-])(?P<secret>(?:(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{24,}|whsec_[A-Za-z0-9]{32,}))",
                end!()
            ),
            validate: Some(has_digit),
        },
        Spec {
            kind: "google_api_key",
            trigger: r"AIza",
            pattern: concat!(
                r"(?:^|[^A-Za-z0-9_\-])(?P<secret>AIza[0-9A-Za-z_\-]{35})",
                end!()
            ),
            validate: Some(not_placeholder),
        },
        Spec {
            kind: "aws_access_key_id",
            trigger: r"AKIA|ASIA|ABIA|ACCA",
            pattern: r"(?:^|[^A-Za-z0-9])(?P<secret>(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16})(?:$|[^A-Za-z0-9])",
            validate: Some(aws_id_ok),
        },
        Spec {
            kind: "aws_secret_access_key",
            trigger: r"(?i)secret_?(?:access_?)?key",
            pattern: r#"(?i)(?:aws_?secret_?access_?key|aws_?secret_?key|secret_?access_?key)\\?["']?\s*(?::=|=>|=|:)\s*\\?["']?(?P<secret>[A-Za-z0-9/+]{40})(?:$|[^A-Za-z0-9/+=])"#,
            validate: Some(aws_secret_ok),
        },
        Spec {
            kind: "jwt",
            trigger: r"eyJ",
            pattern: concat!(
                r"(?:^|[^A-Za-z0-9_\-])(?P<secret>eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,})",
                end!()
            ),
            validate: Some(not_placeholder),
        },
        Spec {
            kind: "url_password",
            trigger: r"://[^\s/@]{1,128}:[^\s@/]{1,256}@",
            pattern: r#"(?-u:\b)[A-Za-z][A-Za-z0-9+.\-]{1,24}://[^\s:/@'"<>`]{1,128}:(?P<secret>[^\s@/'"<>`]{1,256})@[A-Za-z0-9\[]"#,
            validate: Some(url_password_ok),
        },
        Spec {
            kind: "bearer_token",
            trigger: r"(?i)(?:bearer|basic|token)\s+[A-Za-z0-9._~+/\-]",
            pattern: r#"(?i)(?-u:\b)(?:bearer|authorization:\s*(?:basic|token))\s+(?P<secret>[A-Za-z0-9._~+/\-]{16,}=*)(?:$|[^A-Za-z0-9._~+/=\-])"#,
            validate: Some(bearer_ok),
        },
        // Leaked to 'static: built once per process from constant text.
        Spec {
            kind: "password_assignment",
            trigger: r#"(?i)(?:pass|pwd|secret|token|key)[a-z_\-]{0,8}\\?["']?\s*(?::|=)"#,
            pattern: Box::leak(assign_quoted.into_boxed_str()),
            validate: Some(assignment_quoted_ok),
        },
        Spec {
            kind: "password_assignment",
            trigger: r#"(?i)(?:pass|pwd|secret|token|key)[a-z_\-]{0,8}\\?["']?\s*(?::|=)"#,
            pattern: Box::leak(assign_bare.into_boxed_str()),
            validate: Some(assignment_bare_ok),
        },
    ];
    specs
}

/// Compiled redaction rules (built-in + extra patterns from config).
///
/// Why a struct: compiling the rules is far more expensive than using them, so the daemon
/// builds one `Redactor` at start-up and shares it (it is `Send + Sync`).
///
/// Kind names of extra patterns are leaked to `&'static str` (once per construction), so that
/// the counts map can use `&'static str` keys for built-in and configured kinds alike. A
/// `Redactor` is built once per configuration load, so the leak is a few bytes per load.
#[derive(Debug)]
pub struct Redactor {
    rules: Vec<Rule>,
    /// Literal triggers of the built-in rules, one per distinct trigger.
    triggers: Vec<Regex>,
    /// The union of all triggers: when it does not match, no built-in rule can.
    prefilter: Option<Regex>,
    /// Whether there are extra (configured) rules, which have no trigger.
    has_extra: bool,
}

impl Redactor {
    /// Built-in rules plus `extra` (name, regex) pairs from config; an invalid extra pattern is
    /// an error naming it.
    ///
    /// Why extra patterns: organisations have their own token formats. An extra pattern with
    /// a capture group named `secret` redacts only that group; otherwise the whole match.
    /// Extra patterns take priority over built-in ones. A built-in pattern that fails to
    /// compile (a programming error, covered by a test) is skipped rather than fatal.
    pub fn new(extra: &[(String, String)]) -> Result<Redactor, PatternError> {
        let mut rules = Vec::with_capacity(extra.len() + 16);
        for (name, pattern) in extra {
            if name.is_empty() {
                return Err(PatternError {
                    pattern: name.clone(),
                    message: "the pattern needs a non-empty name".to_string(),
                });
            }
            let re = Regex::new(pattern).map_err(|e| PatternError {
                pattern: name.clone(),
                message: e.to_string(),
            })?;
            let kind: &'static str = Box::leak(name.clone().into_boxed_str());
            rules.push(make_rule(kind, re, None));
        }
        Ok(Redactor::with_rules(rules))
    }

    /// Only the built-in rules. Infallible, so that a daemon whose configured extra patterns
    /// are rejected still redacts (a built-in pattern that fails to compile is skipped).
    pub fn builtin() -> Redactor {
        Redactor::with_rules(Vec::new())
    }

    /// Appends the built-in rules to `rules` (the extra ones) and builds the prefilter.
    fn with_rules(mut rules: Vec<Rule>) -> Redactor {
        let has_extra = !rules.is_empty();
        let mut triggers: Vec<Regex> = Vec::new();
        for spec in builtin_specs() {
            let (Ok(re), Ok(trigger)) = (Regex::new(spec.pattern), Regex::new(spec.trigger)) else {
                continue;
            };
            let idx = match triggers.iter().position(|t| t.as_str() == spec.trigger) {
                Some(i) => i,
                None => {
                    triggers.push(trigger);
                    triggers.len() - 1
                }
            };
            let mut rule = make_rule(spec.kind, re, spec.validate);
            rule.trigger = Some(idx);
            rules.push(rule);
        }
        let union = triggers
            .iter()
            .map(|t| format!("(?:{})", t.as_str()))
            .collect::<Vec<_>>()
            .join("|");
        let prefilter = Regex::new(&union).ok();
        Redactor {
            rules,
            triggers,
            prefilter,
            has_extra,
        }
    }

    /// Redact `text`, adding one count per replaced secret to `counts` (kind -> n).
    ///
    /// Returns the text unchanged (borrowed) when nothing matched; this is the hot path: most
    /// texts contain no secret, so one literal search over the union of the rules' triggers
    /// decides that before anything is allocated.
    pub fn redact<'a>(
        &self,
        text: &'a str,
        counts: &mut BTreeMap<&'static str, u64>,
    ) -> Cow<'a, str> {
        // `None` only if the union failed to compile; then every rule is tried.
        let builtin = self.prefilter.as_ref().is_none_or(|p| p.is_match(text));
        if !builtin && !self.has_extra {
            return Cow::Borrowed(text);
        }
        let mut fired: Vec<Option<bool>> = vec![None; self.triggers.len()];
        // Accepted spans: (start, end, kind). Few per text, so a linear overlap check is fine.
        let mut spans: Vec<(usize, usize, &'static str)> = Vec::new();
        for rule in &self.rules {
            if let Some(t) = rule.trigger {
                if !builtin {
                    continue;
                }
                let hit = match fired.get(t).copied().flatten() {
                    Some(hit) => hit,
                    None => {
                        let hit = self.triggers.get(t).is_none_or(|re| re.is_match(text));
                        if let Some(slot) = fired.get_mut(t) {
                            *slot = Some(hit);
                        }
                        hit
                    }
                };
                if !hit {
                    continue;
                }
            }
            for caps in rule.re.captures_iter(text) {
                let Some(whole) = caps.get(0) else {
                    continue;
                };
                let secret = match rule.secret_group {
                    Some(g) => match caps.get(g) {
                        Some(m) => m,
                        None => continue,
                    },
                    None => whole,
                };
                if secret.is_empty() {
                    continue;
                }
                if let Some(validate) = rule.validate {
                    let after = text.get(secret.end()..whole.end()).unwrap_or("");
                    if !validate(secret.as_str(), whole.as_str(), after) {
                        continue;
                    }
                }
                let (s, e) = (secret.start(), secret.end());
                if spans.iter().any(|&(a, b, _)| s < b && a < e) {
                    continue;
                }
                spans.push((s, e, rule.kind));
            }
        }
        if spans.is_empty() {
            return Cow::Borrowed(text);
        }
        spans.sort_unstable_by_key(|&(s, _, _)| s);
        let mut out = String::with_capacity(text.len() + spans.len() * 16);
        let mut last = 0;
        for (s, e, kind) in spans {
            out.push_str(&text[last..s]);
            out.push_str("[REDACTED:");
            out.push_str(kind);
            out.push(']');
            last = e;
            *counts.entry(kind).or_insert(0) += 1;
        }
        out.push_str(&text[last..]);
        Cow::Owned(out)
    }
}

fn make_rule(kind: &'static str, re: Regex, validate: Option<Validator>) -> Rule {
    let secret_group = re.capture_names().position(|n| n == Some("secret"));
    Rule {
        kind,
        re,
        secret_group,
        validate,
        trigger: None,
    }
}

// ---- validators ----------------------------------------------------------------------------

fn has_digit(s: &str, _: &str, _: &str) -> bool {
    s.bytes().any(|b| b.is_ascii_digit()) && !is_placeholder(s)
}

/// A PEM block whose body is `...` or a few words is documentation, not a key.
fn pem_has_body(s: &str, _: &str, _: &str) -> bool {
    // Skip the `-----BEGIN ... KEY-----` header; stop at the `-----END` footer. Literal `\n`
    // escapes count as separators, not as body.
    let after_header = s
        .get(11..)
        .and_then(|t| t.find("-----").map(|i| &t[i + 5..]));
    let body = after_header.unwrap_or("");
    let body = body.find("-----END").map_or(body, |i| &body[..i]);
    let n = body
        .replace("\\n", " ")
        .bytes()
        .filter(|b| b.is_ascii_alphanumeric() || *b == b'+' || *b == b'/')
        .count();
    n >= 40
}

fn not_placeholder(s: &str, _: &str, _: &str) -> bool {
    !is_placeholder(s)
}

fn not_truncated(s: &str, _: &str, _: &str) -> bool {
    !s.contains("...") && !is_placeholder(s)
}

/// Random keys mix letters and digits; `sk-` followed by a long word is something else.
fn openai_ok(s: &str, _: &str, _: &str) -> bool {
    let tail = &s[3..];
    tail.bytes().any(|b| b.is_ascii_digit())
        && tail.bytes().any(|b| b.is_ascii_alphabetic())
        && !is_placeholder(s)
}

fn aws_id_ok(s: &str, _: &str, _: &str) -> bool {
    !s.ends_with("EXAMPLE") && s.bytes().skip(4).any(|b| b.is_ascii_digit())
}

fn aws_secret_ok(s: &str, _: &str, _: &str) -> bool {
    !s.contains("EXAMPLEKEY")
        && s.bytes().any(|b| b.is_ascii_digit())
        && s.bytes().any(|b| b.is_ascii_lowercase())
        && s.bytes().any(|b| b.is_ascii_uppercase())
}

fn url_password_ok(s: &str, _: &str, _: &str) -> bool {
    !is_placeholder(s) && !s.eq_ignore_ascii_case("password") && !s.eq_ignore_ascii_case("pass")
}

/// A bearer token is random: letters and digits. "Bearer authentication" is prose.
fn bearer_ok(s: &str, _: &str, _: &str) -> bool {
    s.bytes().any(|b| b.is_ascii_digit())
        && s.bytes().any(|b| b.is_ascii_alphabetic())
        && !is_placeholder(s)
}

fn assignment_quoted_ok(s: &str, whole: &str, _: &str) -> bool {
    assignment_common(s, whole, "")
}

fn assignment_bare_ok(s: &str, whole: &str, after: &str) -> bool {
    if !assignment_common(s, whole, after) {
        return false;
    }
    // An identifier or member path (`tokens.next`, `self.token`, `Secret::new`) is code.
    if is_code_path(s) {
        return false;
    }
    // `key: Value` and `key = value` (with spaces) are also how code declares and assigns;
    // there the value must look random: contain a digit or a symbol.
    let spaced_or_colon = whole.contains(": ")
        || whole.contains(" =")
        || whole.contains("= ")
        || whole.contains("=>");
    // In code, a bare value followed by `,` `;` `)` `}` is an expression or a type
    // (`secret: Uint8Array,`, `f(token = tok1)`); YAML and INI values end the line.
    if spaced_or_colon && after.starts_with([',', ';', ')', '}']) {
        return false;
    }
    if spaced_or_colon && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return s.bytes().any(|b| b.is_ascii_digit()) && s.bytes().any(|b| b.is_ascii_alphabetic());
    }
    true
}

fn assignment_common(s: &str, whole: &str, _: &str) -> bool {
    if s.chars().count() < 6 || s.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return false;
    }
    if is_placeholder(s) || looks_like_path(s) {
        return false;
    }
    // `PWD=/home/x` is the working directory, not a password (already caught as a path), and
    // `pwd` as a shell command is followed by anything but an operator; nothing to add.
    let _ = whole;
    true
}

fn is_code_path(s: &str) -> bool {
    let ident = |p: &str| {
        let mut b = p.bytes();
        matches!(b.next(), Some(c) if c.is_ascii_alphabetic() || c == b'_' || c == b'$')
            && b.all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'$')
    };
    let parts: Vec<&str> = s.split(['.']).flat_map(|p| p.split("::")).collect();
    parts.len() > 1 && parts.iter().all(|p| ident(p))
        || s.starts_with("self.")
        || s.starts_with("this.")
}

fn looks_like_path(s: &str) -> bool {
    s.starts_with('/')
        || s.starts_with("~/")
        || s.starts_with("./")
        || s.starts_with("../")
        || (s.len() > 2 && s.as_bytes()[1] == b':' && matches!(s.as_bytes()[2], b'\\' | b'/'))
}

/// Values that are templates, not secrets. Kept visible on purpose: a reader should see that
/// the value was `<token>` or `changeme`, and redacting them would only add noise.
///
/// The list: empty or all one filler character (`***`, `xxxx`, `....`, `----`, `####`);
/// anything in `<...>`, `{...}`, `[...]`, `%s`/`%(...)s`; variable references (`$VAR`,
/// `${VAR}`, `{{ var }}`, `process.env.X`, `os.environ[...]`, `os.getenv(...)`, `env(...)`,
/// `ENV[...]`); words such as `changeme`, `password`, `secret`, `example`, `dummy`, `placeholder`,
/// `redacted`, `null`, `none`, `undefined`, `true`, `false`; anything starting with `your` or
/// `my-`/`my_` + secret word, or ending with `here`; anything containing `xxxx`, `...`, `…`,
/// `REDACTED`, `EXAMPLE` or `placeholder`.
pub(crate) fn is_placeholder(s: &str) -> bool {
    let v = s.trim_matches(|c| c == '"' || c == '\'' || c == '`');
    if v.is_empty() {
        return true;
    }
    let first = v.chars().next().unwrap_or(' ');
    if v.chars().all(|c| c == first) && matches!(first, '*' | 'x' | 'X' | '.' | '-' | '#' | '•') {
        return true;
    }
    // A crypt(3) hash (`$6$salt$hash`, `$2b$12$...`, `$y$j9T$...`) starts with `$` too, but
    // is secret material, not a variable reference.
    let crypt_hash = first == '$' && v.matches('$').count() >= 3 && v.len() >= 20;
    if matches!(first, '<' | '{' | '[' | '$' | '%') && !crypt_hash {
        return true;
    }
    let lower = v.to_ascii_lowercase();
    const WORDS: &[&str] = &[
        "changeme",
        "change_me",
        "change-me",
        "changeit",
        "password",
        "passwd",
        "secret",
        "token",
        "example",
        "dummy",
        "placeholder",
        "redacted",
        "null",
        "none",
        "nil",
        "undefined",
        "true",
        "false",
        "string",
        "optional",
        "required",
        "hidden",
        "masked",
        "notset",
        "not-set",
        "unset",
    ];
    if WORDS.contains(&lower.as_str()) {
        return true;
    }
    const CONTAINS: &[&str] = &[
        "xxxx",
        "***",
        "•••",
        "...",
        "…",
        "redacted",
        "example",
        "placeholder",
        "process.env",
        "os.environ",
        "os.getenv",
        "getenv(",
        "env(",
        "env[",
        "${",
        "{{",
        "changeme",
        "change_me",
        "change-me",
        "replace_me",
        "replace-me",
        "replaceme",
        "replace_with",
        "replace-with",
        "demo_key",
        "your_",
        "your-",
        "yourapikey",
        "yourtoken",
        "yourpassword",
    ];
    if CONTAINS.iter().any(|p| lower.contains(p)) {
        return true;
    }
    if lower.starts_with("your") || lower.ends_with("_here") || lower.ends_with("-here") {
        return true;
    }
    is_descriptive_name(v)
}

/// `DEMO_KEY`, `phc_development_key`, `dev-api-token`: a value that is a name describing a key
/// (words of one case joined by `_`/`-`, one of them key-ish) is a template, not a secret.
fn is_descriptive_name(v: &str) -> bool {
    let one_case = v
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b == b'_' || b == b'-')
        || v.bytes()
            .all(|b| b.is_ascii_uppercase() || b == b'_' || b == b'-');
    if !one_case {
        return false;
    }
    const KEYISH: &[&str] = &[
        "key",
        "token",
        "secret",
        "password",
        "pass",
        "demo",
        "dev",
        "development",
        "test",
        "sample",
        "dummy",
        "fake",
        "here",
        "api",
        "local",
    ];
    let words: Vec<String> = v
        .split(['_', '-'])
        .filter(|w| !w.is_empty())
        .map(str::to_ascii_lowercase)
        .collect();
    words.len() >= 2 && words.iter().any(|w| KEYISH.contains(&w.as_str()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::path::Path;

    fn red(r: &Redactor, text: &str) -> (String, BTreeMap<&'static str, u64>) {
        let mut counts = BTreeMap::new();
        let out = r.redact(text, &mut counts).into_owned();
        (out, counts)
    }

    /// Every string stored from a transcript line: user string content, text blocks,
    /// tool_result content, tool_use inputs (all strings under `message`).
    fn texts(v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::String(s) => out.push(s.clone()),
            serde_json::Value::Array(a) => a.iter().for_each(|x| texts(x, out)),
            serde_json::Value::Object(o) => {
                for (k, x) in o {
                    if k != "signature" {
                        texts(x, out);
                    }
                }
            }
            _ => {}
        }
    }

    fn line_texts(line: &str) -> Vec<String> {
        let mut out = Vec::new();
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(line) {
            if let Some(m) = v.get("message") {
                texts(m, &mut out);
            }
        }
        out
    }

    fn fixture(name: &str) -> String {
        let p = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name);
        std::fs::read_to_string(p).unwrap()
    }

    #[test]
    fn builtin_patterns_compile() {
        for spec in builtin_specs() {
            assert!(
                Regex::new(spec.pattern).is_ok(),
                "{}: {}",
                spec.kind,
                spec.pattern
            );
        }
        let r = Redactor::new(&[]).unwrap();
        assert_eq!(r.rules.len(), builtin_specs().len());
        assert_eq!(Redactor::builtin().rules.len(), builtin_specs().len());
        assert!(r.prefilter.is_some());
    }

    #[test]
    fn invalid_extra_pattern_is_named() {
        let err = Redactor::new(&[("acme".into(), "acme_[".into())]).unwrap_err();
        assert_eq!(err.pattern, "acme");
        assert!(err.to_string().contains("acme"));
    }

    #[test]
    fn extra_patterns() {
        let r = Redactor::new(&[
            ("acme_token".into(), r"acme_[a-z0-9]{12}".into()),
            ("acme_pin".into(), r"pin=(?P<secret>\d{4})".into()),
        ])
        .unwrap();
        let (out, c) = red(&r, "use acme_abcdef123456 with pin=1234 now");
        assert_eq!(
            out,
            "use [REDACTED:acme_token] with pin=[REDACTED:acme_pin] now"
        );
        assert_eq!(c["acme_token"], 1);
        assert_eq!(c["acme_pin"], 1);
    }

    #[test]
    fn keeps_context() {
        let r = Redactor::new(&[]).unwrap();
        let cases = [
            ("postgres://bob:s3cretPw9@db/x", "postgres://bob:[REDACTED:url_password]@db/x"),
            ("DB_PASSWORD=hunter2", "DB_PASSWORD=[REDACTED:password_assignment]"),
            (
                "<bash-stdout>Password: $y$j9T$79GVabVVh7mD42/nnC31D0$2RDn2GWP1e</bash-stdout>",
                "<bash-stdout>Password: [REDACTED:password_assignment]</bash-stdout>",
            ),
            (
                r#"hashedPassword = "$y$j9T$79GVabVVh7mD42/nnC31D0$2RDn2GWP1e";"#,
                r#"hashedPassword = "[REDACTED:password_assignment]";"#,
            ),
            (r#""api_key": "abc123def456""#, r#""api_key": "[REDACTED:password_assignment]""#),
            (
                "curl -H 'Authorization: Bearer abcdef0123456789abcdef' x",
                "curl -H 'Authorization: Bearer [REDACTED:bearer_token]' x",
            ),
            (
                "export OPENAI_API_KEY=sk-proj-abcdEFGH1234ijklMNOP5678qrst",
                "export OPENAI_API_KEY=[REDACTED:openai_key]",
            ),
            (
                "https://hooks.slack.com/services/T0123ABCD/B0123ABCDEF/abcdefGHIJKL0123456789ab",
                "https://hooks.slack.com/services/[REDACTED:slack_webhook]",
            ),
            ("a\n-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\n-----END PRIVATE KEY-----\nb", "a\n[REDACTED:private_key]\nb"),
        ];
        for (input, want) in cases {
            assert_eq!(red(&r, input).0, want, "input: {input}");
        }
    }

    #[test]
    fn fixture_secrets_are_all_redacted() {
        let r = Redactor::new(&[]).unwrap();
        let secrets: Vec<String> = fixture("secrets.txt")
            .lines()
            .filter(|l| !l.is_empty())
            .map(String::from)
            .collect();
        assert!(secrets.len() >= 60);
        let mut counts = BTreeMap::new();
        let mut redacted = String::new();
        let jsonl = fixture("secrets.jsonl");
        let mut lines = 0;
        for line in jsonl.lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_eq!(v["sessionId"], "5ec2e700-0000-4000-8000-000000000001");
            lines += 1;
            for t in line_texts(line) {
                redacted.push_str(&r.redact(&t, &mut counts));
                redacted.push('\n');
            }
        }
        assert!(lines >= 60);
        for s in &secrets {
            assert!(!redacted.contains(s.as_str()), "secret survived: {s}");
        }
        let kinds = [
            "anthropic_key",
            "openai_key",
            "github_token",
            "gitlab_token",
            "slack_token",
            "slack_webhook",
            "stripe_key",
            "google_api_key",
            "aws_access_key_id",
            "aws_secret_access_key",
            "jwt",
            "private_key",
            "bearer_token",
            "url_password",
            "password_assignment",
        ];
        eprintln!("fixture counts: {counts:?}");
        for k in kinds {
            assert!(
                counts.get(k).copied().unwrap_or(0) >= 3,
                "kind {k}: {counts:?}"
            );
        }
    }

    const MUST_SURVIVE: &[&str] = &[
        "512f6c74-f82f-4adb-9719-4ae90076677c",
        "commit 3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39 fixed it",
        "see a1b2c3d and 0123456789ab",
        "/Users/x/.ssh/id_rsa.pub",
        r"C:\\Users\\x\\token_cache.rs",
        r"C:\Users\x\token_cache.rs",
        "let token = tokens.next();",
        "    password: String,",
        "fn get_api_key() -> String {",
        "if (password === confirm) {",
        "const SECRET_LENGTH = 32;",
        "pip install sk-learn scikit-learn",
        "task-ant-1234567890abcdefghijklmnop",
        r#"{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="}}"#,
        "AKIAs are what AWS calls access keys; WAKIAWAKIAWAKIAWAKIA",
        "Bearer tokens are sent in the Authorization header.",
        "Authorization: Bearer <token>",
        "Authorization: Bearer $TOKEN",
        "curl -H \"Authorization: Bearer ${GITHUB_TOKEN}\" https://api.github.com",
        "https://user@host/path",
        "git@github.com:org/repo.git",
        "ssh://git@github.com/org/repo.git",
        "http://localhost:8080/api@v2",
        "pk_live_51HqLyjWDarjtT1zdp7dcXWs0FT7jjjjjjjjjjjjjjj",
        "pk_test_TYooMQauvdEDq54NiTphI7jx",
        "DB_PASSWORD=",
        "DB_PASSWORD=\"\"",
        "password: ***",
        "password=<password>",
        "API_KEY=${API_KEY}",
        "API_KEY=$API_KEY",
        "token = process.env.GITHUB_TOKEN",
        "api_key = os.environ['OPENAI_API_KEY']",
        "api_key = os.environ[\"OPENAI_API_KEY\"]",
        "password = os.getenv(\"DB_PASSWORD\")",
        "password=xxxxxxxx",
        "DB_PASSWORD=changeme",
        "OPENAI_API_KEY=your-api-key-here",
        "ANTHROPIC_API_KEY=sk-ant-...",
        "GITHUB_TOKEN=<token>",
        "reset your password= link",
        "max_tokens=4096",
        "\"max_tokens\": 4096,",
        "\"input_tokens\": 12345, \"cache_read_input_tokens\": 0",
        "\"token_type\": \"Bearer\"",
        "SECRET_KEY_LENGTH=64",
        "token: CancellationToken,",
        "  password: string;",
        "api_key: Option<String>,",
        "let secret = Secret::new(value);",
        "self.token = self.token.refresh()",
        "token = await getToken();",
        "PWD=/home/user/project",
        "TOKEN_FILE=/run/secrets/token",
        "password: ${{ secrets.DB_PASSWORD }}",
        "api_key: Option<String>",
        "<td>Password:</td><td>hunter22</td>",
        "if line.starts_with(\"-----BEGIN RSA PRIVATE KEY-----\") {",
        "-----BEGIN PRIVATE KEY-----\n...\n-----END PRIVATE KEY-----",
        "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE",
        "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "docker run -v $(pwd):/app node:20",
        "cat /etc/passwd: No such file",
        "password_hash = bcrypt.hash(pw)",
        "The [REDACTED] token was removed",
        "API_KEY=[REDACTED]",
        "const token = useToken();",
        "Use a personal access token (ghp_...) with repo scope",
        "sk-ant-api03-xxxxxxxx",
        "ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    ];

    #[test]
    fn false_positives_survive() {
        let r = Redactor::new(&[]).unwrap();
        let mut bad = Vec::new();
        for s in MUST_SURVIVE {
            let mut counts = BTreeMap::new();
            let out = r.redact(s, &mut counts);
            if out != *s || !counts.is_empty() || matches!(out, Cow::Owned(_)) {
                bad.push(format!("{s:?} -> {out:?}"));
            }
        }
        assert!(bad.is_empty(), "false positives:\n{}", bad.join("\n"));
    }

    fn corpus_texts() -> Vec<String> {
        let mut out = Vec::new();
        for f in crate::test_support::corpus_files() {
            let Ok(s) = std::fs::read_to_string(&f) else {
                continue;
            };
            for line in s.lines() {
                out.extend(line_texts(line));
            }
        }
        out
    }

    #[test]
    fn corpus_review() {
        let r = Redactor::new(&[]).unwrap();
        let texts = corpus_texts();
        if texts.is_empty() {
            return;
        }
        let mut total = BTreeMap::new();
        let mut shown = 0;
        for t in &texts {
            let mut counts = BTreeMap::new();
            let out = r.redact(t, &mut counts);
            if let Cow::Owned(o) = &out {
                for (i, _) in o.match_indices("[REDACTED:") {
                    if shown < 200 {
                        let mut a = i.saturating_sub(60);
                        while !o.is_char_boundary(a) {
                            a -= 1;
                        }
                        let mut b = (i + 90).min(o.len());
                        while !o.is_char_boundary(b) {
                            b += 1;
                        }
                        eprintln!("MATCH {:?}", &o[a..b]);
                    }
                    shown += 1;
                }
            }
            for (k, v) in counts {
                *total.entry(k).or_insert(0) += v;
            }
        }
        eprintln!("corpus tally over {} texts: {total:?}", texts.len());
    }

    #[test]
    fn speed() {
        let r = Redactor::new(&[]).unwrap();
        let texts = corpus_texts();
        let bytes: usize = texts.iter().map(String::len).sum();
        if bytes == 0 {
            return;
        }
        let mut counts = BTreeMap::new();
        let start = std::time::Instant::now();
        let mut rounds = 0;
        while rounds < 3 || start.elapsed().as_secs_f64() < 1.0 {
            for t in &texts {
                std::hint::black_box(r.redact(t, &mut counts));
            }
            rounds += 1;
        }
        let secs = start.elapsed().as_secs_f64();
        let mb = (bytes * rounds) as f64 / 1e6;
        eprintln!(
            "redact: {} texts, {:.1} MB x {rounds}: {:.0} MB/s",
            texts.len(),
            bytes as f64 / 1e6,
            mb / secs
        );
    }
}
