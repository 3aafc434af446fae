//! Values that look like secrets but are templates, examples or code: left alone.

/// Values that are templates, not secrets. Kept visible on purpose: a reader should see that
/// the value was `<token>` or `changeme`, and redacting them would only add noise.
///
/// The list: empty or all one filler character (`***`, `xxxx`, `....`, `----`, `####`);
/// a whole value that is a template ([`is_template`]: `<token>`, `{name}`, `[name]`, `%s`,
/// `%(name)s`, `%VAR%`, `$VAR`, `${VAR}`, `$(cmd)`, `{{ var }}`); variable references inside a
/// value (`${`, `{{`, `process.env.X`, `os.environ[...]`, `os.getenv(...)`, `env(...)`,
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
    // Only a whole value is a template: `%uMTk*zp5H!` or `$6$salt$hash` (a crypt(3) hash)
    // merely start with a template's character and are secrets.
    if is_template(v) {
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

/// A value that is, as a whole, a template or a variable reference: `<token>`, `{name}`,
/// `{{ var }}`, `[name]`, `%s`/`%d`/`%(name)s`, `%VAR%`, `$VAR`, `${VAR}`, `$(cmd)`.
pub(crate) fn is_template(v: &str) -> bool {
    let enclosed = |open: char, close: char| {
        v.len() >= 2
            && v.starts_with(open)
            && v.ends_with(close)
            && !v[1..v.len() - 1].contains([open, close])
    };
    let ident = |s: &str| {
        let mut b = s.bytes();
        b.next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_')
            && b.all(|c| c.is_ascii_alphanumeric() || c == b'_')
    };
    if enclosed('<', '>') || enclosed('[', ']') || enclosed('{', '}') {
        return true;
    }
    if let Some(inner) = v.strip_prefix("{{").and_then(|r| r.strip_suffix("}}")) {
        return !inner.contains(['{', '}']);
    }
    if let Some(rest) = v.strip_prefix('$') {
        return ident(rest)
            || rest
                .strip_prefix('{')
                .and_then(|r| r.strip_suffix('}'))
                .is_some_and(|r| !r.is_empty() && !r.contains(['{', '}']))
            || rest
                .strip_prefix('(')
                .and_then(|r| r.strip_suffix(')'))
                .is_some_and(|r| !r.is_empty() && !r.contains(['(', ')']));
    }
    if let Some(rest) = v.strip_prefix('%') {
        if matches!(rest, "s" | "d" | "r" | "i" | "f") {
            return true;
        }
        if let Some(name) = rest
            .strip_prefix('(')
            .and_then(|r| r.strip_suffix(")s").or_else(|| r.strip_suffix(")d")))
        {
            return ident(name);
        }
        return rest.strip_suffix('%').is_some_and(ident);
    }
    false
}
