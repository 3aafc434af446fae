//! Markdown to HTML, safely: what the web view and the session export show of the assistant's
//! replies. Raw HTML in the text is shown as text (a reply quoting `<script>` shows it, never
//! runs it), links keep only `http`, `https` and `mailto` targets (a `javascript:` link becomes
//! its text), and an image becomes a link to it: a page that loads nothing from the network
//! (the export must open offline) and runs nothing.

use pulldown_cmark::{html, Event, Options, Parser, Tag, TagEnd};

/// Whether a link target may be followed.
fn safe_url(url: &str) -> bool {
    let lower = url.trim().to_ascii_lowercase();
    ["http://", "https://", "mailto:"]
        .iter()
        .any(|p| lower.starts_with(p))
}

/// `text` (CommonMark with tables, strikethrough and task lists) as an HTML fragment.
pub fn to_html(text: &str) -> String {
    let opts = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    // The ends of links dropped for their target, innermost last.
    let mut dropped: Vec<bool> = Vec::new();
    let events = Parser::new_ext(text, opts).filter_map(|ev| match ev {
        Event::Html(h) | Event::InlineHtml(h) => Some(Event::Text(h)),
        Event::Start(Tag::Link {
            link_type,
            dest_url,
            title,
            id,
        })
        | Event::Start(Tag::Image {
            link_type,
            dest_url,
            title,
            id,
        }) => {
            let ok = safe_url(&dest_url);
            dropped.push(!ok);
            ok.then_some(Event::Start(Tag::Link {
                link_type,
                dest_url,
                title,
                id,
            }))
        }
        Event::End(TagEnd::Link) | Event::End(TagEnd::Image) => {
            let gone = dropped.pop().unwrap_or(false);
            (!gone).then_some(Event::End(TagEnd::Link))
        }
        // Footnote and metadata events are not enabled; anything else renders as is.
        e => Some(e),
    });
    let mut out = String::with_capacity(text.len() + text.len() / 4);
    html::push_html(&mut out, events);
    out
}

/// `text`'s words without their Markdown (`**a**` is `a`, a list item its words): a one-line
/// preview of a reply (a folded reply's summary), where marks shown raw would be noise.
pub fn to_plain(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ev in Parser::new_ext(text, Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH) {
        match ev {
            Event::Text(t) | Event::Code(t) | Event::Html(t) | Event::InlineHtml(t) => {
                out.push_str(&t)
            }
            Event::SoftBreak
            | Event::HardBreak
            | Event::End(
                TagEnd::Paragraph
                | TagEnd::Item
                | TagEnd::Heading(_)
                | TagEnd::TableCell
                | TagEnd::CodeBlock,
            ) if !out.ends_with(' ') && !out.is_empty() => out.push(' '),
            _ => {}
        }
    }
    out.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::{to_html, to_plain};

    #[test]
    fn a_preview_has_no_marks() {
        assert_eq!(
            to_plain("The screensaver is powered by `tte`:\n\n1. **The text/art** \u{2014} edit `~/.config/x`\n2. Done"),
            "The screensaver is powered by tte: The text/art \u{2014} edit ~/.config/x Done"
        );
        assert_eq!(to_plain("a <b>tag</b>"), "a <b>tag</b>");
    }

    #[test]
    fn markdown_renders() {
        let h =
            to_html("# Title\n\nSome **bold** and `code`.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n");
        assert!(h.contains("<h1>Title</h1>"), "{h}");
        assert!(
            h.contains("<strong>bold</strong>") && h.contains("<code>code</code>"),
            "{h}"
        );
        assert!(h.contains("<table>"), "{h}");
    }

    #[test]
    fn raw_html_is_text() {
        let h = to_html("before <script>alert(1)</script> after\n\n<img src=x onerror=alert(1)>\n");
        assert!(
            !h.contains("<script>") && h.contains("&lt;script&gt;"),
            "{h}"
        );
        assert!(!h.contains("<img"), "{h}");
    }

    #[test]
    fn only_safe_links_and_no_remote_images() {
        let h =
            to_html("[ok](https://example.com) [bad](javascript:alert(1)) ![pic](https://x/y.png)");
        assert!(h.contains("<a href=\"https://example.com\">ok</a>"), "{h}");
        assert!(!h.contains("javascript"), "{h}");
        assert!(h.contains("bad"), "the text stays: {h}");
        assert!(!h.contains("<img"), "{h}");
        assert!(h.contains("<a href=\"https://x/y.png\">pic</a>"), "{h}");
    }
}
