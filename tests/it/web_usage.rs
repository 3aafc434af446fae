//! `/usage` over the usage fixture (two sessions, 2026-03-02 and 2026-03-03, one model without
//! a price): the stacked SVG chart with a segment and tooltip per model and day, the table with
//! its totals and unknown costs, other `by`s, and bad parameters refused with a 400 naming them.

use crate::both_backends;
use crate::common::*;
use crate::web::{get, start_web_cmd};

/// The rest of the table row whose first cell is `key`.
fn row<'a>(page: &'a str, key: &str) -> &'a str {
    let cell = format!("<td>{key}</td>");
    let start = page
        .find(&cell)
        .unwrap_or_else(|| panic!("no row {key} in {page}"));
    let rest = &page[start..];
    &rest[..rest.find("</tr>").expect("end of row")]
}

async fn usage_page(backend: Backend) {
    let env = TestEnv::new(backend).await;
    crate::usage::write_fixture(&env.projects);
    env.ingest();
    // Local days are the server's `TZ`: UTC, so that the fixture's days are the keys.
    let mut cmd = env.cmd();
    cmd.env("TZ", "UTC");
    let web = start_web_cmd(cmd, "127.0.0.1:0");
    let base = web.url.trim_end_matches('/').to_string();

    let (status, page) = get(&format!("{base}/usage?since=2026-03-01&until=2026-03-04"));
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("href=\"/usage\""), "in the navigation");
    assert!(page.contains("<svg"), "the chart");
    assert_eq!(
        page.matches("<rect class=\"seg ").count(),
        4,
        "a segment per model and day: {page}"
    );
    for (day, model, cost) in [
        ("2026-03-02", "claude-sonnet-4-5-20250929", "$0.13"),
        ("2026-03-02", "claude-haiku-4-5-20251001", "$0.00"),
        ("2026-03-03", "claude-opus-4-5-20251101", "$0.50"),
        ("2026-03-03", "gpt-mystery", "unknown"),
    ] {
        let tip = format!("<title>{day} · {model} · ");
        let at = page.find(&tip).unwrap_or_else(|| panic!("{tip} in {page}"));
        let title = &page[at..at + page[at..].find("</title>").expect("end of title")];
        assert!(title.ends_with(cost), "{title}");
    }
    assert!(
        page.contains(">2026-03-01</text>") && page.contains(">2026-03-04</text>"),
        "the first and last day of the range label the axis"
    );
    assert!(row(&page, "2026-03-02").contains("305,518"));
    assert!(row(&page, "2026-03-02").contains("$0.13"));
    let unpriced = row(&page, "2026-03-03");
    assert!(
        unpriced.contains("1,200") && unpriced.contains(">unknown<"),
        "{unpriced}"
    );
    let total = row(&page, "total");
    assert!(
        total.contains("1,118")
            && total.contains("304,000")
            && total.contains("306,718")
            && total.contains(">unknown<"),
        "{total}"
    );
    assert!(
        page.contains("No block is active; the last one ended 2026-03-03 14:00 UTC"),
        "{page}"
    );

    let (status, models) = get(&format!(
        "{base}/usage?by=model&since=2026-03-01&until=2026-03-04"
    ));
    assert_eq!(status, 200, "{models}");
    for m in [
        "claude-sonnet-4-5-20250929",
        "claude-haiku-4-5-20251001",
        "claude-opus-4-5-20251101",
        "gpt-mystery",
    ] {
        row(&models, m);
    }
    assert!(row(&models, "gpt-mystery").contains(">unknown<"));
    assert!(row(&models, "claude-opus-4-5-20251101").contains("$0.50"));

    // Paging keeps the filters.
    let (status, one) = get(&format!(
        "{base}/usage?since=2026-03-01&until=2026-03-04&limit=1"
    ));
    assert_eq!(status, 200);
    assert!(
        one.contains(
            "href=\"/usage?since=2026-03-01&amp;until=2026-03-04&amp;limit=1&amp;offset=1\""
        ),
        "{one}"
    );

    for (query, named) in [
        ("by=fortnight", "fortnight"),
        ("since=2026-13-45", "2026-13-45"),
        ("until=soon", "soon"),
        ("breakdown=maybe", "maybe"),
        ("limit=lots", "lots"),
    ] {
        let (status, bad) = get(&format!("{base}/usage?{query}"));
        assert_eq!(status, 400, "{query}: {bad}");
        assert!(bad.contains(named), "{query}: {bad}");
    }
    drop(web);
    env.cleanup().await;
}

both_backends!(usage_page_over_http, usage_page);
