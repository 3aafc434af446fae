//! `Store::list_snippets` / `Store::list_episodes` and the `snippets` / `episodes` commands:
//! every filter against an oracle computed from the inserted rows, paging, ordering, and the
//! JSON shapes through the real binary.

use std::collections::BTreeSet;

use gleaner::extract::rows::SnippetRow;
use gleaner::store::{EpisodeFilter, SnippetFilter, SnippetSource, Store};

use crate::both_backends;
use crate::common::*;

mod cli;
mod episodes;

const SESSIONS: [&str; 3] = [
    "aaaaaaaa-1111-4000-8000-000000000001",
    "bbbbbbbb-2222-4000-8000-000000000002",
    "cccccccc-3333-4000-8000-000000000003",
];
/// Working directories of the sessions (the `--project` filter also looks there).
const CWDS: [&str; 3] = ["/home/u/alpha-repo", "/home/u/beta", "/srv/gamma"];
/// Project folders (as Claude Code encodes the cwd).
const PROJECTS: [&str; 3] = ["-home-u-alpha-repo", "-home-u-beta", "-srv-gamma"];
const TYPES: [&str; 3] = ["error_reasoning", "decision_rationale", "learning_pattern"];
const N: usize = 30;

/// One inserted snippet, as the oracle sees it.
#[derive(Debug, Clone)]
struct Spec {
    i: usize,
    id: i64,
    session: usize,
    snippet_type: &'static str,
    title: String,
    content: String,
    tags: Vec<String>,
    created_at: String,
}

fn created_at(i: usize) -> String {
    // Snippets 28 and 29 share a timestamp: the id breaks the tie.
    let h = if i == 29 { 28 } else { i };
    format!("2026-01-{:02}T{:02}:00:00.000Z", 1 + h / 24, h % 24)
}

fn spec(i: usize) -> Spec {
    let mut title = format!("Snippet {i} title");
    let mut content = format!(
        "Content of snippet number {i}. Lorem ipsum dolor sit amet, consectetur adipiscing \
         elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua."
    );
    match i {
        5 => title = "Crossing the Zebra bridge".into(),
        17 => content.push_str(" Then the zebra appeared."),
        7 => title = "Qx first".into(),
        8 => content.push_str(" see qx here"),
        9 => content.push_str(" It got 50% faster."),
        11 => content.push_str(" and then say \"hi\" to it"),
        12 => {
            title = "ends with omega".into();
            content = format!("delta starts the content. {content}");
        }
        _ => {}
    }
    let mut tags = vec!["all".to_string()];
    if i.is_multiple_of(2) {
        tags.push("even".into());
    }
    if i.is_multiple_of(3) {
        tags.push("three".into());
    }
    Spec {
        i,
        id: 0,
        session: i % 3,
        snippet_type: TYPES[(i / 3) % 3],
        title,
        content,
        tags,
        created_at: created_at(i),
    }
}

/// Run raw SQL (test fixtures the store has no writer for).
async fn exec(store: &Store, sql: &str) {
    match store {
        Store::Sqlite(pool) => sqlx::query(sql).execute(pool).await.map(drop),
        Store::Postgres(pool) => sqlx::query(sql).execute(pool).await.map(drop),
    }
    .unwrap_or_else(|e| panic!("{sql}: {e}"));
}

/// Sessions rows (prefix resolution and `--project` through the cwd need them) and the
/// snippets; returns the oracle, index = insertion order.
async fn seed(store: &Store) -> Vec<Spec> {
    for s in 0..3 {
        exec(
            store,
            &format!(
                "INSERT INTO sessions (session_id, machine, project, cwd, created_at, updated_at) \
                 VALUES ('{}', 'test', '{}', '{}', '2026-01-01', '2026-01-01')",
                SESSIONS[s], PROJECTS[s], CWDS[s]
            ),
        )
        .await;
    }
    let mut specs = Vec::new();
    for i in 0..N {
        let mut sp = spec(i);
        let row = SnippetRow {
            origin: if i.is_multiple_of(4) {
                "manual"
            } else {
                "auto"
            },
            snippet_type: sp.snippet_type.to_string(),
            title: sp.title.clone(),
            content: sp.content.clone(),
            content_hash: format!("hash{i}"),
            line_start: i as u64 + 1,
            line_end: i as u64 + 3,
            tags: sp.tags.clone(),
            metadata: format!(r#"{{"word_count": {}, "version": 1}}"#, 20 + i),
        };
        let file = format!("/t/{}.jsonl", SESSIONS[sp.session]);
        let src = SnippetSource {
            session_id: SESSIONS[sp.session],
            project: PROJECTS[sp.session],
            source_file: &file,
            episode_id: None,
            created_at: &sp.created_at,
        };
        sp.id = store
            .insert_snippet(&src, &row)
            .await
            .expect("insert snippet")
            .expect("new snippet");
        specs.push(sp);
    }
    specs
}

/// Indices of the oracle's snippets passing `keep`, newest first.
fn expect(specs: &[Spec], keep: impl Fn(&Spec) -> bool) -> Vec<usize> {
    let mut v: Vec<&Spec> = specs.iter().filter(|s| keep(s)).collect();
    v.sort_by(|a, b| {
        b.created_at
            .cmp(&a.created_at)
            .then_with(|| b.id.cmp(&a.id))
    });
    v.into_iter().map(|s| s.i).collect()
}

/// Run a filter; returns the indices (insertion order) of the page, and the page's counters.
async fn run(store: &Store, specs: &[Spec], f: &SnippetFilter) -> (Vec<usize>, i64, bool) {
    let page = store.list_snippets(f).await.expect("list snippets");
    // SQLite's other plan (every tag and keyword list tested against the newest-first walk
    // instead of driving the query) must give the same answer.
    let walked = store
        .list_snippets_with(f, 0)
        .await
        .expect("list snippets, walking");
    assert_eq!(walked, page, "the two plans disagree on {f:?}");
    let idx = page
        .snippets
        .iter()
        .map(|s| {
            specs
                .iter()
                .position(|sp| sp.id == s.id)
                .unwrap_or_else(|| panic!("unknown id {}", s.id))
        })
        .collect();
    (idx, page.total_count, page.has_more)
}

/// Every match of `f` (limit 500) must be exactly `want`, in order.
async fn check(store: &Store, specs: &[Spec], f: SnippetFilter, want: Vec<usize>, what: &str) {
    let f = SnippetFilter { limit: 500, ..f };
    let (got, total, more) = run(store, specs, &f).await;
    assert_eq!(got, want, "{what}");
    assert_eq!(total, want.len() as i64, "{what}: total_count");
    assert!(!more, "{what}: has_more");
}

fn kw(k: &str) -> SnippetFilter {
    SnippetFilter {
        keyword: Some(k.into()),
        ..SnippetFilter::default()
    }
}

async fn filters(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let store = env.store().await;
    let specs = seed(&store).await;
    let all = |_: &Spec| true;

    // Newest first; equal timestamps by id, descending.
    let newest = expect(&specs, all);
    assert_eq!(newest[..3], [29, 28, 27]);
    check(
        &store,
        &specs,
        SnippetFilter::default(),
        newest.clone(),
        "all",
    )
    .await;

    // Field values come back as stored; JSON columns decoded.
    let page = store
        .list_snippets(&SnippetFilter {
            limit: 1,
            offset: 20,
            ..SnippetFilter::default()
        })
        .await
        .expect("list");
    let s = &page.snippets[0];
    let sp = &specs[newest[20]];
    assert_eq!(s.id, sp.id);
    assert_eq!(s.session_id, SESSIONS[sp.session]);
    assert_eq!(s.episode_id, None);
    assert_eq!(
        s.origin,
        if sp.i.is_multiple_of(4) {
            "manual"
        } else {
            "auto"
        }
    );
    assert_eq!(s.snippet_type, sp.snippet_type);
    assert_eq!(s.title, sp.title);
    assert_eq!(s.content, sp.content);
    assert_eq!(s.project, PROJECTS[sp.session]);
    assert_eq!(s.source_file, format!("/t/{}.jsonl", SESSIONS[sp.session]));
    assert_eq!(
        (s.line_start, s.line_end),
        (sp.i as i64 + 1, sp.i as i64 + 3)
    );
    assert_eq!(s.tags, sp.tags);
    assert_eq!(s.metadata["word_count"], 20 + sp.i);
    assert_eq!(s.created_at, sp.created_at);

    // Sessions.
    let f = SnippetFilter {
        session_ids: Some(vec![SESSIONS[1].into()]),
        ..SnippetFilter::default()
    };
    check(
        &store,
        &specs,
        f,
        expect(&specs, |s| s.session == 1),
        "session",
    )
    .await;
    let f = SnippetFilter {
        session_ids: Some(vec![SESSIONS[0].into(), SESSIONS[2].into()]),
        ..SnippetFilter::default()
    };
    let want = expect(&specs, |s| s.session != 1);
    check(&store, &specs, f, want, "two sessions").await;
    let f = SnippetFilter {
        session_ids: Some(vec![]),
        ..SnippetFilter::default()
    };
    check(&store, &specs, f, vec![], "no session").await;

    // Type.
    for t in TYPES {
        let f = SnippetFilter {
            snippet_type: Some(t.parse().expect("type")),
            ..SnippetFilter::default()
        };
        let want = expect(&specs, |s| s.snippet_type == t);
        check(&store, &specs, f, want, t).await;
    }

    // Project: the session's project folder or its cwd.
    let project = |p: &str| SnippetFilter {
        project: Some(p.into()),
        ..SnippetFilter::default()
    };
    let want0 = expect(&specs, |s| s.session == 0);
    check(&store, &specs, project("u/alpha"), want0, "cwd").await;
    let want1 = expect(&specs, |s| s.session == 1);
    check(&store, &specs, project("-u-beta"), want1, "project").await;
    let want = expect(&specs, |s| s.session != 2);
    check(&store, &specs, project("home"), want, "both").await;
    check(&store, &specs, project("u_alpha"), vec![], "escaped _").await;

    // Tags: all must match.
    let tags = |t: &[&str]| SnippetFilter {
        tags: t.iter().map(|t| t.to_string()).collect(),
        ..SnippetFilter::default()
    };
    let has = |s: &Spec, t: &str| s.tags.iter().any(|x| x == t);
    let want = expect(&specs, |s| has(s, "even"));
    check(&store, &specs, tags(&["even"]), want, "tag").await;
    let want = expect(&specs, |s| has(s, "even") && has(s, "three"));
    assert_eq!(want, [24, 18, 12, 6, 0]);
    check(&store, &specs, tags(&["even", "three"]), want, "two tags").await;
    check(
        &store,
        &specs,
        tags(&["even", "nope"]),
        vec![],
        "missing tag",
    )
    .await;

    // Keyword: case-insensitive substring of title or content, >= 3 characters (trigram
    // index) and shorter (scan), LIKE wildcards and FTS5 syntax taken literally.
    check(&store, &specs, kw("ZEBRA"), vec![17, 5], "title or content").await;
    check(&store, &specs, kw("zebra b"), vec![5], "with a space").await;
    check(&store, &specs, kw("Qx"), vec![8, 7], "2 chars").await;
    check(&store, &specs, kw("QX F"), vec![7], "4 chars").await;
    check(&store, &specs, kw("%"), vec![9], "1 char, literal %").await;
    check(&store, &specs, kw("50%"), vec![9], "literal % via FTS").await;
    check(&store, &specs, kw("0%"), vec![9], "literal % via LIKE").await;
    check(&store, &specs, kw("_"), vec![], "literal _").await;
    check(&store, &specs, kw("\"hi\""), vec![11], "quotes").await;
    check(&store, &specs, kw("hi\" OR"), vec![], "FTS5 operators").await;
    check(&store, &specs, kw("omega"), vec![12], "title end").await;
    check(
        &store,
        &specs,
        kw("omega delta"),
        vec![],
        "not across title/content",
    )
    .await;
    check(&store, &specs, kw("omega\ndelta"), vec![], "no separator").await;
    let want = expect(&specs, |s| s.i == 2 || (20..30).contains(&s.i));
    check(&store, &specs, kw("snippet NUMBER 2"), want, "many").await;
    let want = expect(&specs, |s| {
        [1, 10, 11, 13, 14, 15, 16, 17, 18, 19].contains(&s.i)
    });
    check(&store, &specs, kw("Snippet 1"), want, "title prefix").await;
    // And the same as a plain lowercase substring test, for a few more words.
    for k in ["lorem", "IPSUM DOLOR", "it", "number 1", "Zeb", "ta"] {
        let lk = k.to_lowercase();
        let want = expect(&specs, |s| {
            s.title.to_lowercase().contains(&lk) || s.content.to_lowercase().contains(&lk)
        });
        check(&store, &specs, kw(k), want, k).await;
    }

    // Created-at window: since inclusive, until exclusive; dates compare as prefixes.
    let window = |since: Option<String>, until: Option<String>| SnippetFilter {
        since,
        until,
        ..SnippetFilter::default()
    };
    let want = expect(&specs, |s| s.i >= 10);
    check(
        &store,
        &specs,
        window(Some(created_at(10)), None),
        want,
        "since",
    )
    .await;
    let want = expect(&specs, |s| s.i < 20);
    check(
        &store,
        &specs,
        window(None, Some(created_at(20))),
        want,
        "until",
    )
    .await;
    let want = expect(&specs, |s| (10..20).contains(&s.i));
    let f = window(Some(created_at(10)), Some(created_at(20)));
    check(&store, &specs, f, want, "since and until").await;
    let want = expect(&specs, |s| s.i >= 24);
    let f = window(Some("2026-01-02".into()), None);
    check(&store, &specs, f, want, "since a date").await;
    let want = expect(&specs, |s| s.i < 24);
    let f = window(None, Some("2026-01-02".into()));
    check(&store, &specs, f, want, "until a date").await;

    // Everything at once.
    let f = SnippetFilter {
        session_ids: Some(vec![SESSIONS[0].into()]),
        snippet_type: Some(TYPES[0].parse().expect("type")),
        project: Some("alpha".into()),
        tags: vec!["even".into()],
        keyword: Some("LOREM".into()),
        since: Some(created_at(1)),
        until: Some(created_at(29)),
        ..SnippetFilter::default()
    };
    let want = expect(&specs, |s| {
        s.session == 0
            && s.snippet_type == TYPES[0]
            && has(s, "even")
            && (1..29).contains(&s.i)
            && s.content.contains("Lorem")
    });
    assert_eq!(want, [18]);
    check(&store, &specs, f, want, "combined").await;

    // Paging: limit, offset, total_count, has_more.
    let page = |limit: u32, offset: u32| SnippetFilter {
        limit,
        offset,
        ..SnippetFilter::default()
    };
    assert_eq!(
        run(&store, &specs, &page(7, 0)).await,
        (newest[..7].to_vec(), 30, true)
    );
    assert_eq!(
        run(&store, &specs, &page(7, 21)).await,
        (newest[21..28].to_vec(), 30, true)
    );
    assert_eq!(
        run(&store, &specs, &page(7, 28)).await,
        (newest[28..].to_vec(), 30, false)
    );
    assert_eq!(
        run(&store, &specs, &page(10, 20)).await,
        (newest[20..].to_vec(), 30, false)
    );
    assert_eq!(run(&store, &specs, &page(7, 30)).await, (vec![], 30, false));
    assert_eq!(
        run(&store, &specs, &page(7, 100)).await,
        (vec![], 30, false)
    );
    let even = expect(&specs, |s| has(s, "even"));
    let f = SnippetFilter {
        limit: 5,
        offset: 5,
        ..tags(&["even"])
    };
    assert_eq!(
        run(&store, &specs, &f).await,
        (even[5..10].to_vec(), 15, true)
    );
    let f = SnippetFilter {
        limit: 5,
        offset: 10,
        ..tags(&["even"])
    };
    assert_eq!(
        run(&store, &specs, &f).await,
        (even[10..].to_vec(), 15, false)
    );
    // Pages put together are the whole list, without gaps or repeats.
    let mut paged = Vec::new();
    for offset in (0..30).step_by(4) {
        paged.extend(run(&store, &specs, &page(4, offset)).await.0);
    }
    assert_eq!(paged, newest);

    env.cleanup().await;
}
both_backends!(snippet_filters, filters);

/// Listings count at most `COUNT_CAP` matches exactly; beyond, the total is a lower bound
/// flagged as such (exact again under the cap).
async fn keyword_count_cap(backend: Backend) {
    use gleaner::store::COUNT_CAP;
    let env = TestEnv::new(backend).await;
    let store = env.store().await;
    let n = COUNT_CAP as usize + 5;
    for chunk in (0..n).collect::<Vec<_>>().chunks(250) {
        let values: Vec<String> = chunk
            .iter()
            .map(|i| {
                format!(
                    "('s1', 'manual', 'learning_pattern', 'title {i}', '{}', 'h{i}', 'p', 'f', \
                     1, 1, '[]', '{{}}', '2026-01-01T00:00:{:02}.{:03}Z')",
                    format!("zebra crossing number {i} ").repeat(6),
                    i % 60,
                    i % 1000
                )
            })
            .collect();
        exec(
            &store,
            &format!(
                "INSERT INTO snippets (session_id, origin, snippet_type, title, content, \
                 content_hash, project, source_file, line_start, line_end, tags, metadata, \
                 created_at) VALUES {}",
                values.join(", ")
            ),
        )
        .await;
    }
    // Rows inserted by hand are not indexed on SQLite: the code that inserts snippets writes
    // their documents (`store::late_docs`).
    if backend == Backend::Sqlite {
        exec(
            &store,
            "INSERT INTO snippets_fts (snippets_fts) VALUES ('rebuild')",
        )
        .await;
    }
    let page = store
        .list_snippets(&kw("zebra"))
        .await
        .expect("keyword page");
    assert_eq!(page.snippets.len(), 50);
    assert_eq!(page.total_count, COUNT_CAP);
    assert!(!page.total_count_exact);
    assert!(page.has_more);
    // Deep pages stay consistent: the total never falls below what was shown.
    let deep = SnippetFilter {
        offset: 1_100,
        ..kw("zebra")
    };
    let page = store.list_snippets(&deep).await.expect("deep page");
    assert!(page.snippets.is_empty() && !page.has_more);
    let page = store
        .list_snippets(&SnippetFilter::default())
        .await
        .expect("no keyword");
    assert_eq!(
        (page.total_count, page.total_count_exact),
        (COUNT_CAP, false)
    );
    let since = SnippetFilter {
        since: Some("2026-01-01T00:00:59.000Z".into()),
        ..SnippetFilter::default()
    };
    let page = store.list_snippets(&since).await.expect("since");
    assert!(
        page.total_count_exact && page.total_count > 0,
        "{}",
        page.total_count
    );
    assert!(page.total_count < COUNT_CAP);
    let rare = store
        .list_snippets(&kw("number 1003 "))
        .await
        .expect("rare");
    assert_eq!((rare.total_count, rare.total_count_exact), (1, true));
    // The JSON names the lower bound.
    let out = env
        .cmd()
        .args(["snippets", "--keyword", "zebra", "--json"])
        .output()
        .expect("run");
    assert_ok(&out);
    let v = json_of(&out);
    assert_eq!(v["total_count"], COUNT_CAP);
    assert_eq!(v["total_count_exact"], false);
    store.close().await;
    env.cleanup().await;
}

both_backends!(keyword_totals_are_capped, keyword_count_cap);

fn json_of(out: &std::process::Output) -> serde_json::Value {
    assert_ok(out);
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}
