//! The built-in redaction rules, as data, and the validators that tell a secret from a
//! look-alike.

use super::placeholder::is_placeholder;
use super::Spec;

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
pub(super) fn builtin_specs() -> Vec<Spec> {
    let assign_quoted = format!(
        r#"(?i)(?:^|[^A-Za-z0-9_])(?P<key>[A-Za-z0-9_.\-]*{ASSIGN_KEY})\\?["']?(?P<op>\s*(?::=|=>|=|:)\s*)\\?["'](?P<secret>[^"'\s\\]+)\\?["']"#
    );
    let assign_bare = format!(
        r#"(?i)(?:^|[^A-Za-z0-9_])(?P<key>[A-Za-z0-9_.\-]*{ASSIGN_KEY})\\?["']?(?P<op>\s*(?::=|=>|=|:)\s*)(?P<secret>[^\s"'`,;&<>(){{}}\[\]\\|]+)(?:$|[\s"'`,;&<)}}\]\\|])"#
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
                // A `-` may come before: the prefix and its digit groups are distinctive enough
                // to redact inside a slug or a branch name.
                r"(?:^|[^A-Za-z0-9_])(?P<secret>(?:xoxe\.)?xox[abeoprs]-[0-9]{1,16}-[A-Za-z0-9\-]{10,})",
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
            trigger: r"(?i)secret[_\s\-]?(?:access[_\s\-]?)?key",
            // The key name as code writes it (`AWS_SECRET_ACCESS_KEY=`) or as prose and
            // summaries do (`**Secret Access Key**: `...``): any short run of punctuation and
            // spaces between the name and the 40 characters.
            pattern: r#"(?i)(?:aws[_\s\-]?secret[_\s\-]?access[_\s\-]?key|aws[_\s\-]?secret[_\s\-]?key|secret[_\s\-]?access[_\s\-]?key)(?:\s+is)?[^A-Za-z0-9/+\n]{0,12}(?P<secret>[A-Za-z0-9/+]{40})(?:$|[^A-Za-z0-9/+=])"#,
            validate: Some(aws_secret_ok),
        },
        Spec {
            // An access key id with its secret close behind, whatever the secret is called
            // ("AKIA... / wJalr...", "key AKIA... and secret wJalr..."): the id says the
            // 40-character string next to it is its secret.
            kind: "aws_secret_access_key",
            trigger: r"AKIA|ASIA|ABIA|ACCA",
            pattern: r"(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}[\s\S]{0,160}?(?:[^A-Za-z0-9/+=])(?P<secret>[A-Za-z0-9/+]{40})(?:$|[^A-Za-z0-9/+=])",
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
            trigger: r"://[^\s/@]+:[^\s@/]+@",
            pattern: r#"(?-u:\b)[A-Za-z][A-Za-z0-9+.\-]{1,24}://[^\s:/@'"<>`]+:(?P<secret>[^\s@/'"<>`]+)@[A-Za-z0-9\[]"#,
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

/// An access key id is a credential wherever it stands; only the documentation's
/// (`...EXAMPLE`) and filler (`AKIAXXXXXXXXXXXXXXXX`, `AKIA0000000000000000`) are not.
fn aws_id_ok(s: &str, _: &str, _: &str) -> bool {
    let tail = s.as_bytes().get(4..).unwrap_or_default();
    !s.ends_with("EXAMPLE") && !tail.iter().all(|b| Some(b) == tail.first())
}

fn aws_secret_ok(s: &str, _: &str, _: &str) -> bool {
    !s.contains("EXAMPLEKEY")
        && s.bytes().any(|b| b.is_ascii_digit())
        && s.bytes().any(|b| b.is_ascii_lowercase())
        && s.bytes().any(|b| b.is_ascii_uppercase())
}

fn url_password_ok(s: &str, whole: &str, _: &str) -> bool {
    // At most 128 characters of user and 256 of password: the match is
    // `scheme://user:secret@x`, all delimiters ASCII.
    let user = whole
        .find("://")
        .and_then(|i| whole.get(i + 3..whole.len().saturating_sub(s.len() + 3)))
        .unwrap_or("");
    within(user, 128)
        && within(s, 256)
        && !is_placeholder(s)
        && !s.eq_ignore_ascii_case("password")
        && !s.eq_ignore_ascii_case("pass")
}

/// Whether `s` has at most `n` characters. The patterns match runs of any length (`+`): a
/// counted repetition (`{1,512}`) of a Unicode class compiled to a 1.4 MB automaton, and the
/// rules held 6.5 MB, most of an idle daemon's heap. The limits are applied here instead.
fn within(s: &str, n: usize) -> bool {
    s.len() <= n || s.chars().count() <= n
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
    if !within(s, 512)
        || s.chars().count() < 6
        || s.bytes().all(|b| b.is_ascii_digit() || b == b'.')
    {
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
