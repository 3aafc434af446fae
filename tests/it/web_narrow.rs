//! The web view from 360 px up (issue 49): every page, in headless Chromium driven over the
//! DevTools protocol, at 360, 800 and 1280 px wide. No page is wider than the window (nothing
//! makes the whole page scroll sideways: a wide table scrolls in its own box), and a screenshot
//! of each page at each width is written to `target/tmp/web-screenshots/` to look at.
//!
//! Why the DevTools protocol: the pages' Content-Security-Policy allows no inline script, so a
//! page cannot measure itself; the protocol's `Runtime.evaluate` can.

use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

use base64::Engine;
use serde_json::{json, Value};
use tungstenite::stream::MaybeTlsStream;
use tungstenite::{connect, Message, WebSocket};

use crate::common::*;

/// A DevTools connection to one page.
struct Cdp {
    ws: WebSocket<MaybeTlsStream<TcpStream>>,
    next: u64,
    session: Option<String>,
}

impl Cdp {
    /// Call `method` (on the attached page, once there is one) and return its result.
    fn call(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(s) = &self.session {
            msg["sessionId"] = json!(s);
        }
        self.ws
            .send(Message::text(msg.to_string()))
            .expect("send to the browser");
        loop {
            let m = self.ws.read().expect("read from the browser");
            let Message::Text(t) = m else { continue };
            let v: Value = serde_json::from_str(t.as_str()).expect("DevTools JSON");
            if v["id"] == id {
                if let Some(e) = v.get("error") {
                    panic!("{method}: {e}");
                }
                return v["result"].clone();
            }
        }
    }

    /// Evaluate `expr` in the page and return its value.
    fn eval(&mut self, expr: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({"expression": expr, "returnByValue": true}),
        );
        r["result"]["value"].clone()
    }

    /// Open `url` and wait until it has loaded.
    fn open(&mut self, url: &str) {
        self.call("Page.navigate", json!({"url": url}));
        // The new document may not be there yet: wait for its URL and its load.
        poll_until(Duration::from_secs(20), &format!("{url} to load"), || {
            self.eval("document.readyState") == "complete"
                && self.eval("location.href").as_str() == Some(url)
        });
    }
}

/// Headless Chromium with a DevTools port, and a connection to a blank page in it.
fn browser(dir: &Path) -> (Child, Cdp) {
    let profile = dir.join("chrome-cdp");
    let child = std::process::Command::new(crate::web::browser())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--remote-debugging-port=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("about:blank")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromium");
    let port_file = profile.join("DevToolsActivePort");
    let mut text = String::new();
    poll_until(Duration::from_secs(30), "the DevTools port", || {
        text = std::fs::read_to_string(&port_file).unwrap_or_default();
        text.lines().count() >= 2
    });
    let mut lines = text.lines();
    let (port, path) = (lines.next().unwrap_or(""), lines.next().unwrap_or(""));
    let (ws, _) = connect(format!("ws://127.0.0.1:{port}{path}")).expect("DevTools socket");
    let mut cdp = Cdp {
        ws,
        next: 0,
        session: None,
    };
    let target = cdp.call("Target.createTarget", json!({"url": "about:blank"}));
    let attached = cdp.call(
        "Target.attachToTarget",
        json!({"targetId": target["targetId"], "flatten": true}),
    );
    cdp.session = attached["sessionId"].as_str().map(str::to_string);
    (child, cdp)
}

/// What is wider than the window, if anything: the page's width and the widest element that
/// sticks out, as `tag.class (right edge)`.
const OVERFLOW: &str = "(function () {
  var w = document.documentElement.clientWidth, out = [];
  if (document.documentElement.scrollWidth <= w) return null;
  var contained = function (e) {
    for (var p = e.parentElement; p && p !== document.body; p = p.parentElement) {
      var o = getComputedStyle(p).overflowX;
      if (o !== 'visible' && p.getBoundingClientRect().right <= w) return true;
    }
    return false;
  };
  document.querySelectorAll('body *').forEach(function (e) {
    var r = e.getBoundingClientRect();
    if (r.right > w && !contained(e))
      out.push(e.tagName.toLowerCase() + '.' + e.className + ' (' + Math.round(r.right) + ')');
  });
  return document.documentElement.scrollWidth + ' > ' + w + ': ' + out.slice(-5).join(', ');
})()";

#[tokio::test]
async fn every_page_fits_from_360_px_up() {
    let env = TestEnv::new(Backend::Sqlite).await;
    let corpus = corpus_dir().canonicalize().expect("corpus");
    env.ingest_dir(&corpus);
    let web = crate::web::start_web(&env, &corpus, "127.0.0.1:0");
    let base = web.url.trim_end_matches('/').to_string();
    let (_, list) = crate::web::get(&format!("{base}/sessions?sort=snippets"));
    let sid = crate::web::main_session_with_most_episodes("/sessions?sort=snippets", &list);
    let pages = [
        ("home", "/".to_string()),
        ("search", "/?q=error".to_string()),
        ("sessions", "/sessions".to_string()),
        ("session", format!("/sessions/{sid}")),
        ("read", format!("/sessions/{sid}/read")),
        ("projects", "/projects".to_string()),
        ("snippets", "/snippets".to_string()),
        ("usage", "/usage".to_string()),
    ];
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("web-screenshots");
    std::fs::create_dir_all(&shots).expect("screenshots folder");
    let (mut child, mut cdp) = browser(env.dir.path());
    let mut wide = Vec::new();
    for width in [360, 800, 1280] {
        cdp.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": width < 700}),
        );
        for (name, path) in &pages {
            let url = format!("{base}{path}");
            cdp.open(&url);
            let over = cdp.eval(OVERFLOW);
            if !over.is_null() {
                wide.push(format!("{name} at {width} px: {over}"));
            }
            let png = cdp.call("Page.captureScreenshot", json!({"format": "png"}));
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(png["data"].as_str().unwrap_or(""))
                .expect("base64 PNG");
            assert!(
                bytes.starts_with(b"\x89PNG") && bytes.len() > 5_000,
                "{name} at {width}"
            );
            std::fs::write(shots.join(format!("{name}-{width}.png")), bytes).expect("write PNG");
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    drop(web);
    assert!(
        wide.is_empty(),
        "wider than the window:\n{}",
        wide.join("\n")
    );
    env.cleanup().await;
}
