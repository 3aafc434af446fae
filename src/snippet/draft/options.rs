//! The `decision_rationale` of alternatives laid out side by side: which options there were,
//! which one was taken (the user's pick in the next prompt, else the assistant's
//! recommendation) and why (the chosen option's own description, or the sentence that
//! recommends it).
//!
//! Why a draft of its own: a message that lays out options for the user usually ends by asking
//! which one ("Which direction sounds best to you?"), so the phrase notes (which skip messages
//! that ask) never see it, and the choice is made in the next prompt ("first option sounds
//! easy", "I like hybrid"). Options without a choice teach nothing and are not kept.

use std::collections::BTreeSet;

use super::candidate::Draft;
use crate::episode::text::list_item;
use crate::episode::{Label, NoteKind, Open, OPTIONS};
use crate::snippet::SnippetType;
use crate::text::sentence::sentences;
use crate::text::{clip_chars, truncate_bytes};

/// Most options read from one message.
const MAX_OPTIONS: usize = 6;

/// Words that mark the assistant's own pick among the options.
const RECOMMENDS: &[&str] = &[
    "recommend",
    "my pick",
    "i'd go",
    "i'd suggest",
    "i'd lean",
    "i suggest",
    "simplest",
    "cleanest",
    "would work well",
    "would give you",
    "the best",
];

/// One alternative: its name and what the message says of it.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Opt {
    pub(super) name: String,
    pub(super) desc: String,
}

/// Text between `**` at the start of `s` and what follows it.
fn bold(s: &str) -> Option<(&str, &str)> {
    s.strip_prefix("**")?.split_once("**")
}

/// Name and description of an option line's body: `**Name** — what it is`, `**Option A —
/// Name**`, `Option 1: Name - what it is`, `A) Name`. `None` for a heading that introduces
/// something else (`**Scenarios:**`) or a body that is no name.
fn option_of(body: &str) -> Option<Opt> {
    let dashes: &[&str] = &[" — ", " – ", " - ", ": "];
    let split = |s: &str| -> (String, String) {
        for d in dashes {
            if let Some((a, b)) = s.split_once(d) {
                return (a.trim().to_string(), b.trim().to_string());
            }
        }
        (s.trim().to_string(), String::new())
    };
    let (name, desc) = match bold(body) {
        Some((inside, rest)) => {
            let rest = rest
                .trim_start_matches(|c: char| c.is_whitespace() || "—–-:".contains(c))
                .trim();
            let (a, b) = split(inside);
            if !b.is_empty() && strip_label(&a).is_empty() {
                // "**Option A — README with setup instructions**": the label names nothing.
                (b, rest.to_string())
            } else if !b.is_empty() {
                // "**Hybrid — what I'd recommend**".
                (a, format!("{b} {rest}").trim().to_string())
            } else {
                (a, rest.to_string())
            }
        }
        None => split(body),
    };
    if name.trim_end().ends_with(':') {
        return None;
    }
    let name = strip_label(&name).trim_matches(['*', '`', ' ']).to_string();
    let words = name.split_whitespace().count();
    (!name.is_empty() && (1..=10).contains(&words)).then(|| Opt {
        name,
        desc: desc.replace("**", ""),
    })
}

/// `Option A` / `Approach 2` / `A)` in front of a name, removed.
fn strip_label(name: &str) -> &str {
    let lower = name.to_ascii_lowercase();
    for w in ["option ", "approach ", "choice "] {
        if lower.starts_with(w) {
            let rest = &name[w.len()..];
            let label_len = rest
                .find(|c: char| !c.is_ascii_alphanumeric())
                .unwrap_or(rest.len());
            if label_len <= 2 {
                return rest[label_len..].trim_start_matches([':', ')', '.', ' ', '-', '—']);
            }
        }
    }
    let mut cs = name.chars();
    match (cs.next(), cs.next()) {
        (Some(c), Some(')')) if c.is_ascii_uppercase() => name[2..].trim_start(),
        _ => name,
    }
}

/// The options of a message: the run of sibling lines that each name an alternative (top-level
/// list items or bold lines: `**Name** — what it is`, `Option A: ...`), with only their
/// sub-items, blank lines and code between them, that holds the line the options were seen at
/// (`anchor`); prose ends a run. An option without a description takes its first sub-item.
/// Fewer than two: none.
pub(super) fn options(text: &str, anchor: &str) -> Vec<Opt> {
    let anchor = anchor.trim();
    let mut best: Vec<Opt> = Vec::new();
    let mut run: Vec<Opt> = Vec::new();
    // The run being read holds the anchor line.
    let mut anchored = false;
    let mut fenced = false;
    // The last option came from a bold line, not a list item: the items after it describe it.
    let mut under_heading = false;
    let mut close = |run: &mut Vec<Opt>, anchored: &mut bool| {
        if *anchored {
            best = std::mem::take(run);
        }
        *anchored = false;
        run.clear();
    };
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced || t.is_empty() {
            continue;
        }
        let nested = line.len() - t.len() >= 2;
        let item = list_item(t);
        let lower = t.to_ascii_lowercase();
        let labelled = [
            "option ",
            "approach ",
            "choice ",
            "**option ",
            "**approach ",
        ]
        .iter()
        .any(|w| lower.starts_with(w));
        let body = match item {
            Some(b) if !nested && (b.starts_with("**") || labelled) => Some(b),
            None if t.starts_with("**") || labelled => Some(t),
            _ => None,
        };
        match body.and_then(option_of) {
            Some(o) => {
                under_heading = item.is_none();
                anchored |= t.trim() == anchor;
                if run.len() < MAX_OPTIONS && !run.iter().any(|x| x.name == o.name) {
                    run.push(o);
                }
            }
            None if item.is_some() && (nested || under_heading) && !run.is_empty() => {
                // A sub-item (or an item under a bold heading) describes the option above;
                // a description of a few words ("what I'd recommend") takes its first one too.
                if let Some(last) = run
                    .last_mut()
                    .filter(|o| o.desc.split_whitespace().count() < 5 && !o.desc.contains("; "))
                {
                    let sub = item.unwrap_or("").replace("**", "");
                    last.desc = if last.desc.is_empty() {
                        sub.trim().to_string()
                    } else {
                        format!("{}; {}", last.desc.trim_end_matches(['.', ':']), sub.trim())
                    };
                }
            }
            None => {
                under_heading = false;
                close(&mut run, &mut anchored);
            }
        }
    }
    close(&mut run, &mut anchored);
    if best.len() < 2 {
        return Vec::new();
    }
    best
}

/// Lowercase content words (4+ letters) of a text.
fn words(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 4)
        .map(str::to_lowercase)
        .filter(|w| {
            ![
                "that", "this", "with", "from", "would", "what", "your", "like", "sounds",
                "option", "options", "think", "just", "some", "more", "less",
            ]
            .contains(&w.as_str())
        })
        .collect()
}

/// The option `text` points at: by position ("first option", "2", "option b", "the last
/// one"), else the one alone sharing the most words with it (a word of its name counts
/// double).
fn pointed(opts: &[Opt], text: &str) -> Option<usize> {
    let lower = text.to_lowercase();
    let tokens: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let ordinals: [&[&str]; 4] = [
        &["first", "1", "one"],
        &["second", "2", "two"],
        &["third", "3", "three"],
        &["fourth", "4", "four"],
    ];
    // "first option", "the second one", "option b", "#2"; a bare "first" or "2" only as a
    // short answer ("the first", "2 please"), not "let's check the other PRs first".
    let short = tokens.len() <= 3;
    let follows = |i: usize| {
        tokens.get(i + 1).is_some_and(|n| {
            ["option", "one", "choice", "approach", "way", "direction"].contains(n)
        })
    };
    for (i, ws) in ordinals.iter().enumerate().take(opts.len()) {
        let by_word = tokens
            .iter()
            .enumerate()
            .any(|(at, t)| ws[..2].contains(t) && (short || follows(at)));
        let by_letter = tokens.windows(2).any(|w| {
            ["option", "approach", "choice"].contains(&w[0])
                && (w[1] == ["a", "b", "c", "d"][i] || w[1] == ws[1])
        });
        if by_word || by_letter {
            return Some(i);
        }
    }
    if tokens
        .iter()
        .enumerate()
        .any(|(at, t)| *t == "last" && (short || follows(at)))
    {
        return Some(opts.len() - 1);
    }
    let said = words(text);
    let scores: Vec<usize> = opts
        .iter()
        .map(|o| words(&o.name).intersection(&said).count())
        .collect();
    let best = *scores.iter().max()?;
    (best > 0 && scores.iter().filter(|s| **s == best).count() == 1)
        .then(|| scores.iter().position(|s| *s == best))
        .flatten()
}

/// The option a recommending sentence names outright: it stands in that option's description
/// ("... This is the cleanest for collaboration."), or holds its whole name or its label
/// ("option 2"). Sharing a word is not enough for the assistant's own pick.
fn recommended(opts: &[Opt], sentence: &str) -> Option<usize> {
    let s = sentence.to_lowercase();
    let core = s.trim_end_matches(['.', '!', ' ']);
    if let Some(i) = opts
        .iter()
        .position(|o| !core.is_empty() && o.desc.to_lowercase().contains(core))
    {
        return Some(i);
    }
    let hits: Vec<usize> = opts
        .iter()
        .enumerate()
        .filter(|(i, o)| {
            s.contains(&o.name.to_lowercase())
                || s.contains(&format!("option {}", i + 1))
                || s.contains(&format!("option {}", ["a", "b", "c", "d", "e", "f"][*i]))
        })
        .map(|(i, _)| i)
        .collect();
    (hits.len() == 1).then(|| hits[0])
}

/// Whether a prompt asks rather than decides ("how many colors should I get?").
fn is_question(text: &str) -> bool {
    let t = text.trim();
    let first = t
        .split_whitespace()
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    t.ends_with('?')
        || [
            "how", "what", "why", "which", "when", "where", "who", "can", "could", "should", "is",
            "are", "do", "does", "will", "would",
        ]
        .contains(&first.as_str())
}

/// The `decision_rationale` draft of the first laid-out options of the episode that were
/// decided: by the user's next prompt pointing at one (not a correction), else by the
/// assistant's recommendation naming one.
pub(super) fn draft(open: &Open) -> Option<Draft> {
    open.notes
        .iter()
        .filter(|n| n.kind == NoteKind::Decision && n.phrase == OPTIONS)
        .find_map(|n| {
            let opts = options(&n.text, &n.sentence);
            if opts.len() < 2 || super::candidate::undone(open, n.line) {
                return None;
            }
            let recommendation = sentences(&n.text).into_iter().find(|s| {
                let l = s.to_lowercase();
                !s.trim_end().ends_with('?') && RECOMMENDS.iter().any(|r| l.contains(r))
            });
            let choice = n.choice.as_ref().filter(|(l, _)| {
                !open
                    .signals
                    .iter()
                    .any(|s| s.line == *l && s.label == Label::UserCorrection)
            });
            // A prompt naming two options or more, or holding a list, repeats them (the user
            // pasted the options back, or asked for several): it picks none.
            let named = |c: &str| {
                let c = c.to_lowercase();
                opts.iter()
                    .filter(|o| c.contains(&o.name.to_lowercase()))
                    .count()
            };
            let listed = |c: &str| {
                c.lines()
                    .filter(|l| list_item(l.trim_start()).is_some())
                    .count()
                    >= 2
            };
            let by_user = choice
                .filter(|(_, c)| !is_question(c) && named(c) < 2 && !listed(c))
                .and_then(|(l, c)| pointed(&opts, c).map(|i| (i, *l, c)));
            let by_assistant = recommendation
                .as_deref()
                .and_then(|r| recommended(&opts, r).map(|i| (i, r)));
            let (chosen, who) = match (by_user, by_assistant) {
                (Some((i, l, c)), _) => (
                    i,
                    format!(
                        "the user chose it (line {l}): \"{}\"",
                        clip_chars(c.lines().next().unwrap_or(c).trim(), 160)
                    ),
                ),
                (None, Some((i, _))) => (i, "the assistant recommended it".to_string()),
                (None, None) => return None,
            };
            build(
                n.line,
                &n.text,
                n.context.as_ref(),
                &opts,
                chosen,
                &who,
                recommendation,
            )
        })
}

fn build(
    line: u64,
    text: &str,
    context: Option<&(u64, String)>,
    opts: &[Opt],
    chosen: usize,
    who: &str,
    recommendation: Option<String>,
) -> Option<Draft> {
    let c = &opts[chosen];
    let others: Vec<&str> = opts
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != chosen)
        .map(|(_, o)| o.name.as_str())
        .collect();
    let names: Vec<&str> = opts.iter().map(|o| o.name.as_str()).collect();
    let list = |v: &[&str]| match v {
        [] => String::new(),
        [one] => (*one).to_string(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    };
    // Why: the chosen option's own description, else the recommendation.
    let why = if !c.desc.trim().is_empty() {
        c.desc.trim().trim_end_matches(['.', ':']).to_string()
    } else {
        recommendation
            .clone()
            .unwrap_or_default()
            .trim_end_matches(['.', ':'])
            .to_string()
    };
    let mut content = String::new();
    let mut start = line;
    if let Some((l, ctx)) = context {
        content.push_str(&truncate_bytes(ctx, 1000));
        content.push_str("\n\n");
        start = *l;
    }
    content.push_str(&truncate_bytes(text, 3000));
    content.push_str(&format!("\n\nChosen: {} ({who}).\n", c.name));
    // A choice read off a list without its reason is no rationale.
    if why.is_empty() {
        return None;
    }
    let mut score: f64 = 0.6;
    if recommendation.is_some() {
        score += 0.1;
    }
    let observation = format!(
        "{} options were weighed ({}); {} was taken: {who}.",
        opts.len(),
        list(&names),
        c.name
    );
    let lesson = format!(
        "When choosing between {}, prefer {}: {why}.",
        list(&names),
        c.name
    );
    let why_short = crate::snippet::title_from(super::wording::without_lead(&why));
    Some(Draft {
        kind: SnippetType::DecisionRationale,
        title: clip_chars(
            &format!("Chose {} over {}: {why_short}", c.name, list(&others)),
            crate::snippet::MAX_TITLE_CHARS,
        ),
        observation: clip_chars(&observation, 600),
        lesson: clip_chars(&lesson, 600),
        content,
        lines: (start, line),
        score,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const GRAPH: &str = "The main question is **authentication**. A few options:\n\n- **Graph API + device code flow** — simplest, you authenticate once in a browser, token is cached\n- **Use your existing Teams session** — trickier to extract tokens\n- **Polling via the MCP tools** — use the tools already connected here\n\nWhich direction sounds best to you?";

    const AB: &str = "Two different directions here, each with tradeoffs:\n\n**Option A — README with setup instructions**\n- Keep `users/me/` as your personal config\n- Simple, no structural changes\n\n**Option B — Generic template + setup script**\n- Rename `users/me/` to `users/template/`\n\n**Hybrid — what I'd recommend**\n- Keep your personal config as-is\n\nWhich direction do you want to go?";

    #[test]
    fn options_are_read_from_the_shapes_assistants_write() {
        let o = options(GRAPH, "- **Graph API + device code flow** — simplest, you authenticate once in a browser, token is cached");
        assert_eq!(
            o.iter().map(|o| o.name.as_str()).collect::<Vec<_>>(),
            [
                "Graph API + device code flow",
                "Use your existing Teams session",
                "Polling via the MCP tools"
            ]
        );
        assert_eq!(o[1].desc, "trickier to extract tokens");
        let o = options(AB, "**Option A — README with setup instructions**");
        assert_eq!(
            o.iter().map(|o| o.name.as_str()).collect::<Vec<_>>(),
            [
                "README with setup instructions",
                "Generic template + setup script",
                "Hybrid"
            ]
        );
        assert_eq!(
            o[2].desc,
            "what I'd recommend; Keep your personal config as-is"
        );
        assert_eq!(recommended(&o, "I'd recommend the Hybrid."), Some(2));
        assert_eq!(
            recommended(&o, "This keeps things simple, I'd recommend it."),
            None
        );
        let numbered = "Approaches:\n1. **Git submodule** - Mount it as `public/tokenizer/`.\n2. **Git subtree** - merges the code in.";
        assert_eq!(
            options(
                numbered,
                "1. **Git submodule** - Mount it as `public/tokenizer/`."
            )
            .len(),
            2
        );
        // Options elsewhere in the message than where they were seen are not these.
        assert!(options(numbered, "Approaches:").is_empty());
        // Steps of one plan are no options; neither is one item.
        assert!(options(
            "Here's the plan:\n1. Write a script\n2. Light the LED",
            "1. Write a script"
        )
        .is_empty());
        assert!(options("- **Read** — reads files", "- **Read** — reads files").is_empty());
        // Section headings are no options, and prose ends a run of them.
        let review = "**Your proposal:**\nKeep it.\n\n**Scenarios:**\n1. **Continue work** - common case\n2. **Dismiss** - start fresh\n\nI'd go with the first.";
        assert_eq!(
            options(review, "1. **Continue work** - common case")
                .iter()
                .map(|o| o.name.as_str())
                .collect::<Vec<_>>(),
            ["Continue work", "Dismiss"]
        );
        assert!(is_question("how many colors should i get from the pallet"));
        assert!(!is_question("first option sounds easy"));
    }

    #[test]
    fn a_choice_points_by_position_or_by_words() {
        let o = options(GRAPH, "- **Graph API + device code flow** — simplest, you authenticate once in a browser, token is cached");
        assert_eq!(pointed(&o, "first option sounds easy"), Some(0));
        assert_eq!(pointed(&o, "go with 2"), Some(1));
        assert_eq!(pointed(&o, "let's check the other PRs first"), None);
        assert_eq!(pointed(&o, "the second one, please"), Some(1));
        assert_eq!(pointed(&o, "polling via MCP then"), Some(2));
        assert_eq!(pointed(&o, "hmm, not sure yet"), None);
        let o = options(AB, "**Option A — README with setup instructions**");
        assert_eq!(pointed(&o, "I like hybrid"), Some(2));
        assert_eq!(pointed(&o, "option b please"), Some(1));
    }
}
