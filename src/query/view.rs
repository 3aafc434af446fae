//! Views the doors share where a stored value needs reading before it is shown.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One piece of evidence for a triage label (a turn's or an episode's `evidence` column): the
/// line it stands on, the signal that fired, the label it supports and the words. Every door
/// shows it the same way ([`Evidence::line_text`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    /// 1-based line of the transcript.
    pub line: Option<i64>,
    /// What fired (`user said`, `tool failed then passed`, ...).
    pub signal: String,
    /// The label it supports.
    pub label: Option<String>,
    /// The words that show it.
    pub text: Option<String>,
}

impl Evidence {
    /// The evidence items of a stored column, leniently: an array of objects, one object, or
    /// a plain string (older rows); anything else is none.
    pub fn list(v: &Value) -> Vec<Evidence> {
        let one = |e: &Value| Evidence {
            line: e.get("line").and_then(Value::as_i64),
            signal: e
                .get("signal")
                .and_then(Value::as_str)
                .unwrap_or("?")
                .to_string(),
            label: e.get("label").and_then(Value::as_str).map(str::to_string),
            text: e
                .get("text")
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(str::to_string),
        };
        match v {
            Value::Array(items) => items.iter().filter(|e| e.is_object()).map(one).collect(),
            Value::Object(_) => vec![one(v)],
            Value::String(s) if !s.trim().is_empty() => vec![Evidence {
                line: None,
                signal: s.trim().to_string(),
                label: None,
                text: None,
            }],
            _ => Vec::new(),
        }
    }

    /// `L12 signal [label]: text`, the text's first line cut to `max_chars` characters (with
    /// an ellipsis).
    pub fn line_text(&self, max_chars: usize) -> String {
        let mut s = String::new();
        if let Some(line) = self.line {
            s.push_str(&format!("L{line} "));
        }
        s.push_str(&self.signal);
        if let Some(label) = &self.label {
            s.push_str(&format!(" [{label}]"));
        }
        if let Some(text) = &self.text {
            let first = text.lines().next().unwrap_or("").trim();
            if !first.is_empty() {
                s.push_str(": ");
                if first.chars().count() > max_chars {
                    s.extend(first.chars().take(max_chars.saturating_sub(1)));
                    s.push('…');
                } else {
                    s.push_str(first);
                }
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn evidence_reads_every_stored_shape_and_prints_one_way() {
        let v = json!([{"line": 12, "signal": "user said", "label": "user_correction",
                        "text": "no, keep the old name\nsecond line"},
                       {"signal": "tool failed"}, 3]);
        let e = Evidence::list(&v);
        assert_eq!(e.len(), 2);
        assert_eq!(
            e[0].line_text(100),
            "L12 user said [user_correction]: no, keep the old name"
        );
        assert_eq!(e[1].line_text(100), "tool failed");
        assert_eq!(
            e[0].line_text(8),
            "L12 user said [user_correction]: no, kee…"
        );
        assert_eq!(
            Evidence::list(&json!("alternatives weighed"))[0].signal,
            "alternatives weighed"
        );
        assert!(Evidence::list(&Value::Null).is_empty());
    }
}
