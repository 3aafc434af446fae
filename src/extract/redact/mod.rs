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

use builtin::builtin_specs;

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

mod builtin;
mod placeholder;

#[cfg(test)]
mod tests;
