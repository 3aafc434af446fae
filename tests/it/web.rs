//! `gleaner web` over a database ingested from the real corpus: every page through HTTP (status,
//! key content, escaping of a transcript line that holds `<script>`), bad requests, the token
//! beyond loopback, and the session page in a real headless Chromium (DOM and screenshot).

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;

use crate::both_backends;
use crate::common::*;

/// The session whose prompt holds markup.
const XSS_SID: &str = "99999999-0000-4000-8000-00000000beef";

pub(crate) struct Web {
    child: Child,
    pub(crate) url: String,
}

impl Drop for Web {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn start_web(env: &TestEnv, projects: &Path, bind: &str) -> Web {
    start_web_cmd(env.cmd_for(projects), bind)
}

/// `gleaner web` run by `cmd` (another database URL, another role).
pub(crate) fn start_web_cmd(mut cmd: std::process::Command, bind: &str) -> Web {
    let mut child = cmd
        .args(["web", "--bind", bind])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("gleaner web");
    let mut out = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    out.read_line(&mut line).expect("the URL line");
    let url = line
        .trim()
        .strip_prefix("Gleaner web view: ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_string();
    // Keep reading stdout so the server never blocks on a full pipe.
    std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = std::io::Read::read_to_string(&mut out, &mut rest);
    });
    Web { child, url }
}

/// GET `url`: status and body (4xx/5xx are answers too).
pub(crate) fn get(url: &str) -> (u16, String) {
    get_with(url, None).0
}

fn get_with(url: &str, cookie: Option<&str>) -> ((u16, String), Option<String>) {
    let mut req = ureq::get(url).timeout(Duration::from_secs(20));
    if let Some(c) = cookie {
        req = req.set("Cookie", c);
    }
    let resp = match req.call() {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("GET {url}: {e}"),
    };
    let status = resp.status();
    let set_cookie = resp.header("set-cookie").map(str::to_string);
    let body = resp.into_string().expect("body");
    ((status, body), set_cookie)
}

/// A copy of the corpus plus one transcript whose prompt and answer hold markup.
fn projects_with_markup(env: &TestEnv) -> PathBuf {
    let projects = env.dir.path().join("corpus");
    let status = std::process::Command::new("cp")
        .arg("-r")
        .arg(corpus_dir())
        .arg(&projects)
        .status()
        .expect("cp");
    assert!(status.success());
    let path = projects.join(format!("-home-u-xss/{XSS_SID}.jsonl"));
    let prompt = user_line(
        XSS_SID,
        "x1",
        "<script>alert('pwned')</script> why does <b>this</b> render?",
    );
    append(&path, prompt.as_bytes());
    projects
}

pub(crate) fn main_session_with_most_episodes(store_path_hint: &str, body: &str) -> String {
    // The sessions page sorted by snippets lists the richest sessions first.
    let start = body
        .find("href=\"/sessions/")
        .unwrap_or_else(|| panic!("no session link on {store_path_hint}"));
    let rest = &body[start + "href=\"/sessions/".len()..];
    rest[..rest.find('"').expect("end of link")].to_string()
}

async fn pages(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let projects = projects_with_markup(&env);
    env.ingest_dir(&projects);
    let web = start_web(&env, &projects, "127.0.0.1:0");
    let base = web.url.trim_end_matches('/').to_string();

    // Home: the search form, counts, recent sessions.
    let (status, home) = get(&format!("{base}/"));
    assert_eq!(status, 200);
    assert!(home.contains("name=\"q\""), "search box");
    assert!(home.contains("Recent sessions") && home.contains("href=\"/sessions/"));
    assert!(home.contains("snippets") && home.contains("episodes"));

    // Search with highlighted excerpts and filters; a bad query is a 400 naming the problem.
    let (status, found) = get(&format!("{base}/?q=migration&kind=message"));
    assert_eq!(status, 200);
    assert!(
        found.contains(" results") && found.contains("<mark>"),
        "highlights"
    );
    // A hit in a sub-agent's transcript (its lines numbered from 1 too) links to that line of
    // the sub-agent, nested in the readable page, not to the session's line of that number.
    let (status, found) = get(&format!("{base}/?q=hyprland&kind=message"));
    assert_eq!(status, 200);
    let link = found
        .split("href=\"")
        .skip(1)
        .filter_map(|s| s.split('"').next())
        .find(|h| h.contains("/read#agent-a073139c8fe58ba03-line-"))
        .expect("a link into the sub-agent");
    assert!(found.contains("sub-agent a073139c"), "labelled");
    let (path, anchor) = link.split_once('#').expect("an anchor");
    let (status, read) = get(&format!("{base}{path}"));
    assert_eq!(status, 200);
    assert!(
        read.contains(&format!("id=\"{anchor}\"")),
        "{anchor} on {path}"
    );
    let (status, bad) = get(&format!("{base}/?q=%22unbalanced"));
    assert_eq!(status, 400);
    assert!(bad.contains("unbalanced quote"), "{bad}");

    // Sessions: sortable, filterable, paginated.
    let (status, list) = get(&format!("{base}/sessions?sort=snippets"));
    assert_eq!(status, 200);
    assert!(
        list.contains("<table") && list.contains("Next →"),
        "a second page"
    );
    let (status, page2) = get(&format!("{base}/sessions?offset=50"));
    assert_eq!(status, 200);
    assert!(page2.contains("← Previous"));
    let (status, filtered) = get(&format!("{base}/sessions?project=xss"));
    assert_eq!(status, 200);
    assert!(
        filtered.contains("Sessions 1–1")
            && filtered.contains(XSS_SID)
            && !filtered.contains("Next →"),
        "the project filter"
    );
    let (status, _) = get(&format!("{base}/sessions?since=yesterdayish"));
    assert_eq!(status, 400);

    // One session: episode bands with labels and evidence, turns, tools, snippets, raw lines.
    let sid = main_session_with_most_episodes("/sessions?sort=snippets", &list);
    let (status, page) = get(&format!("{base}/sessions/{sid}"));
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("class=\"episode "), "episode bands");
    assert!(page.contains("Evidence: "), "evidence");
    assert!(page.contains("class=\"prompt\""), "human prompts");
    assert!(page.contains("class=\"tool"), "tool calls");
    assert!(
        page.contains("class=\"snippet\""),
        "snippets beside their turns"
    );
    assert!(page.contains("/lines?from="), "links to the raw lines");
    let (status, short) = get(&format!("{base}/sessions/{}", &sid[..8]));
    assert_eq!(
        (status, short.len()),
        (200, page.len()),
        "a prefix finds it"
    );
    let (status, raw) = get(&format!("{base}/sessions/{sid}/lines?from=1&to=20"));
    assert_eq!(status, 200);
    assert!(raw.contains("class=\"raw\""), "{raw}");
    let (status, _) = get(&format!("{base}/sessions/ffffffff-none"));
    assert_eq!(status, 404);

    // Transcripts hold markup: shown as text, never as markup.
    let (status, xss) = get(&format!("{base}/sessions/{XSS_SID}"));
    assert_eq!(status, 200);
    assert!(
        xss.contains("&lt;script&gt;alert('pwned')&lt;/script&gt;"),
        "{xss}"
    );
    assert!(!xss.contains("<script>alert"), "never raw");
    assert!(!xss.contains("<b>this</b>"));
    let (_, listed) = get(&format!("{base}/sessions?project=xss"));
    assert!(listed.contains("&lt;script&gt;") && !listed.contains("<script>alert"));

    // Snippets: browse and filter, each with its source link.
    let (status, snips) = get(&format!("{base}/snippets"));
    assert_eq!(status, 200);
    assert!(snips.contains("source: session "), "source links");
    let (status, typed) = get(&format!("{base}/snippets?type=error_reasoning"));
    assert_eq!(status, 200);
    assert!(typed.contains("error_reasoning") && !typed.contains(">decision_rationale</span>"));
    let (status, _) = get(&format!("{base}/no/such/page"));
    assert_eq!(status, 404);
    drop(web);
    env.cleanup().await;
}

both_backends!(web_pages_over_the_corpus, pages);

/// Beyond loopback a token is required: 401 without it, 200 with `?token=` (which sets a
/// cookie), 200 with the cookie alone.
#[tokio::test]
async fn web_beyond_loopback_requires_the_printed_token() {
    let env = TestEnv::new(Backend::Sqlite).await;
    append(
        &env.path("-p/aaaaaaaa-0000-4000-8000-000000000001.jsonl"),
        user_line("aaaaaaaa-0000-4000-8000-000000000001", "u1", "hello").as_bytes(),
    );
    env.ingest();
    let web = start_web(&env, &env.projects, "0.0.0.0:0");
    let (port, token) = {
        // Bound to every interface, the printed URL names loopback: it opens on this machine.
        let rest = web.url.strip_prefix("http://127.0.0.1:").expect("url");
        let (port, q) = rest.split_once('/').expect("path");
        (
            port.to_string(),
            q.strip_prefix("?token=").expect("token").to_string(),
        )
    };
    assert_eq!(token.len(), 32);
    let base = format!("http://127.0.0.1:{port}");
    let (status, body) = get(&format!("{base}/sessions"));
    assert_eq!(status, 401);
    assert!(body.contains("Token required"));
    let ((status, _), cookie) = get_with(&format!("{base}/sessions?token=wrong"), None);
    assert_eq!(status, 401);
    assert!(cookie.is_none());
    let ((status, _), cookie) = get_with(&format!("{base}/sessions?token={token}"), None);
    assert_eq!(status, 200);
    let cookie = cookie.expect("a cookie");
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"));
    let pair = cookie.split(';').next().expect("pair").to_string();
    let ((status, _), _) = get_with(&format!("{base}/sessions"), Some(&pair));
    assert_eq!(status, 200);
    drop(web);
}

/// The headless browser the tests drive (`scripts/test.sh` installs it).
pub(crate) fn browser() -> &'static str {
    ["chromium", "chromium-browser"]
        .into_iter()
        .find(|b| {
            std::process::Command::new(b)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .expect("chromium (scripts/test.sh installs the Debian package when absent)")
}

/// The session page of a real session with episodes in headless Chromium: the rendered DOM has
/// the episode bands and their labels, and a screenshot is taken.
#[tokio::test]
async fn session_page_in_a_real_browser() {
    let browser = browser();
    let env = TestEnv::new(Backend::Sqlite).await;
    let corpus = corpus_dir().canonicalize().expect("corpus");
    env.ingest_dir(&corpus);
    let web = start_web(&env, &corpus, "127.0.0.1:0");
    let base = web.url.trim_end_matches('/').to_string();
    let (_, list) = get(&format!("{base}/sessions?sort=snippets"));
    let sid = main_session_with_most_episodes("/sessions?sort=snippets", &list);
    let url = format!("{base}/sessions/{sid}");
    let shot = env.dir.path().join("session.png");
    let common = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--window-size=1400,1800",
    ];
    let out = std::process::Command::new(browser)
        .args(common)
        .arg(format!(
            "--user-data-dir={}",
            env.dir.path().join("chrome").display()
        ))
        .arg("--dump-dom")
        .arg(&url)
        .output()
        .expect("chromium --dump-dom");
    let dom = String::from_utf8_lossy(&out.stdout);
    assert!(
        dom.contains("<section class=\"episode "),
        "episode bands in the DOM"
    );
    let labelled = [
        "error_recovery",
        "user_correction",
        "design_decision",
        "pivot",
    ]
    .iter()
    .filter(|l| dom.contains(&format!("data-triage=\"{l}\"")))
    .count();
    assert!(labelled >= 1, "a non-routine band");
    assert!(dom.contains("class=\"pill label "), "labels shown");
    let out = std::process::Command::new(browser)
        .args(common)
        .arg(format!(
            "--user-data-dir={}",
            env.dir.path().join("chrome2").display()
        ))
        .arg(format!("--screenshot={}", shot.display()))
        .arg(&url)
        .output()
        .expect("chromium --screenshot");
    let png = std::fs::read(&shot).unwrap_or_else(|e| {
        panic!(
            "no screenshot ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 20_000,
        "a real picture"
    );
    drop(web);
}

/// The home page counts a table's rows up to `ROWS_COUNTED` and estimates beyond (a count of
/// every row would grow with the store); the estimate follows deletions (a prune, a
/// re-extraction), where the largest row id did not.
async fn home_estimates_many_sessions(backend: Backend) {
    use gleaner::store::ROWS_COUNTED;
    let env = TestEnv::new(backend).await;
    let store = env.store().await;
    let add = |from: i64, to: i64| {
        format!(
            "WITH RECURSIVE n(i) AS (SELECT {from} UNION ALL SELECT i + 1 FROM n WHERE i < {to}) \
             INSERT INTO sessions (session_id, machine, project, created_at, updated_at) \
             SELECT 'sess-' || i, 'test', 'p', '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z' \
             FROM n"
        )
    };
    execute(&store, &add(1, ROWS_COUNTED))
        .await
        .expect("sessions");
    let web = start_web(&env, &env.projects, "127.0.0.1:0");
    let (code, body) = get(&web.url);
    assert_eq!(code, 200);
    assert!(
        body.contains(&format!("<b>{ROWS_COUNTED}</b>sessions")),
        "exact up to the cap: {body}"
    );
    let shown = |body: &str| -> (bool, i64) {
        let at = body.find("</b>sessions").expect("the sessions count");
        let shown = &body[body[..at].rfind("<b>").expect("bold") + 3..at];
        let estimated = shown.starts_with('≈');
        (
            estimated,
            shown.trim_start_matches('≈').parse().expect("a number"),
        )
    };
    execute(&store, &add(ROWS_COUNTED + 1, 6 * ROWS_COUNTED))
        .await
        .expect("more sessions");
    // PostgreSQL's statistics take a moment to see what was written.
    poll_until(
        Duration::from_secs(30),
        "an estimate near 6 x the cap",
        || {
            let (est, n) = shown(&get(&web.url).1);
            est && (n - 6 * ROWS_COUNTED).abs() <= 6 * ROWS_COUNTED / 10
        },
    );
    // Two thirds deleted, spread over the ids (as a re-extraction deletes and re-inserts):
    // the figure follows, within a tenth.
    execute(
        &store,
        "DELETE FROM sessions WHERE CAST(substr(session_id, 6) AS INTEGER) % 3 <> 0",
    )
    .await
    .expect("delete");
    poll_until(
        Duration::from_secs(30),
        "the estimate to follow the deletion",
        || {
            let (est, n) = shown(&get(&web.url).1);
            est && (n - 2 * ROWS_COUNTED).abs() <= 2 * ROWS_COUNTED / 10
        },
    );
    store.close().await;
    env.cleanup().await;
}
both_backends!(home_session_total, home_estimates_many_sessions);

/// A snippet written by hand from a file shows on its session's page and says where it came
/// from; after `prune --keep-knowledge` the page still shows the episodes, and says why the
/// conversation is gone.
async fn kept_without_lines(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let corpus = corpus_dir().join("4thehalibit__omarchy-backup/.claude/projects");
    copy_tree(&corpus, &env.projects);
    env.ingest();
    let note = env.dir.path().join("note.txt");
    std::fs::write(
        &note,
        "Hand note: the waybar config must be rewritten whole, a sed on it can leave it empty \
         and the bar then shows nothing at all.\n",
    )
    .expect("write note");
    let out = env
        .cmd()
        .args([
            "snippet",
            "add",
            "--session",
            "5fbb940a",
            "--type",
            "learning_pattern",
            "--title",
            "Hand note on waybar",
            "--content-file",
        ])
        .arg(&note)
        .output()
        .expect("snippet add");
    assert_ok(&out);
    let sid = "5fbb940a-c7f3-404d-bf66-a028fcc250ec";
    let note_path = note.canonicalize().expect("note").display().to_string();
    let web = start_web(&env, &env.projects, "127.0.0.1:0");
    let base = web.url.trim_end_matches('/').to_string();
    let (status, page) = get(&format!("{base}/sessions/{sid}"));
    assert_eq!(status, 200);
    assert!(page.contains("Hand note on waybar"), "the snippet shows");
    assert!(page.contains(&format!("from {note_path}")), "its source");
    let (_, listed) = get(&format!("{base}/snippets?keyword=Hand+note+on+waybar"));
    assert!(listed.contains(&format!("from {note_path}")), "{listed}");
    assert!(!listed.contains("source: session 5fbb940a"), "{listed}");
    drop(web);

    let out = env
        .cmd()
        .args([
            "prune",
            "--before",
            "2100-01-01",
            "--keep-knowledge",
            "--yes",
        ])
        .output()
        .expect("prune");
    assert_ok(&out);
    let web = start_web(&env, &env.projects, "127.0.0.1:0");
    let base = web.url.trim_end_matches('/').to_string();
    let (status, page) = get(&format!("{base}/sessions/{sid}"));
    assert_eq!(status, 200);
    assert!(page.contains("messages were pruned"), "{page}");
    assert!(page.contains("class=\"episode "), "the episodes still show");
    assert!(page.contains("Hand note on waybar"));
    drop(web);
    env.cleanup().await;
}

both_backends!(kept_knowledge_shows_without_its_lines, kept_without_lines);
