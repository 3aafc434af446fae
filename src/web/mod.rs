//! `gleaner web`: a read-only local site over the database (works with or without the daemon).
//!
//! Server-rendered HTML: `axum` routes, `maud` templates compiled with the binary, one style
//! sheet (`/style.css`), no JavaScript. Everything shown is the stored (redacted) text, escaped.
//!
//! Bound to a loopback address it is open to this machine's users, like the database file
//! itself. Bound to any other address it requires a token, generated at start and printed with
//! the URL: `?token=...` once sets a cookie (HttpOnly, SameSite=Strict) that later requests
//! carry; without it a request gets 401.
//!
//! Whatever the address, a request must name this server in its `Host` header: the bound
//! address, `localhost`, `127.0.0.1`, `[::1]`, or a name given with `--allow-host` (any IP
//! address when bound to all of them). Why: DNS rebinding. A web page the user visits can
//! point a name it controls at 127.0.0.1 and read loopback servers with the browser's
//! credentials; such requests carry the attacker's name as `Host`, and get 421 here. A
//! request other than GET/HEAD from another origin gets 403, and every answer carries a
//! Content-Security-Policy that allows no inline script or style (only the server's own
//! `/copy.js`, the copy button of the resume line; every page works without it), `nosniff`,
//! no referrer and no framing.

mod layout;
mod pages;
mod projects;
mod timeline;
mod usage;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use maud::html;

use crate::config::Config;
use crate::query::store::{Store, StoreError};

pub use timeline::{build as build_timeline, Band, Item, Turn};

/// What every handler reads.
pub struct AppState {
    /// The database.
    pub store: Store,
    /// The configuration (the redactor for raw lines).
    pub cfg: Arc<Config>,
    /// Required token when bound beyond loopback.
    token: Option<String>,
    /// Which `Host` headers name this server.
    hosts: AllowedHosts,
}

/// The `Host` names a request may carry (see the module documentation).
#[derive(Debug, Clone)]
pub struct AllowedHosts {
    bound: SocketAddr,
    names: Vec<String>,
}

impl AllowedHosts {
    /// The bound address's names, plus `extra` (from `--allow-host`).
    pub fn new(bound: SocketAddr, extra: &[String]) -> AllowedHosts {
        AllowedHosts {
            bound,
            names: extra
                .iter()
                .map(|n| n.trim().trim_end_matches('.').to_ascii_lowercase())
                .filter(|n| !n.is_empty())
                .collect(),
        }
    }

    /// Whether a `Host` header value (with or without a port) names this server.
    pub fn allows(&self, host: &str) -> bool {
        let host = host.trim().to_ascii_lowercase();
        // `[::1]:7270`, `[::1]`, `127.0.0.1:7270`, `name:7270`, `name`.
        let name = match host.strip_prefix('[') {
            Some(rest) => match rest.split_once(']') {
                Some((ip, port)) if port.is_empty() || port.starts_with(':') => ip,
                _ => return false,
            },
            None => host.rsplit_once(':').map_or(host.as_str(), |(n, port)| {
                if port.bytes().all(|b| b.is_ascii_digit()) {
                    n
                } else {
                    host.as_str()
                }
            }),
        };
        let name = name.trim_end_matches('.');
        if name == "localhost" || self.names.iter().any(|n| n == name) {
            return true;
        }
        match name.parse::<std::net::IpAddr>() {
            Ok(ip) => ip.is_loopback() || ip == self.bound.ip() || self.bound.ip().is_unspecified(),
            Err(_) => false,
        }
    }
}

/// Why a page could not be served.
#[derive(Debug, thiserror::Error)]
pub enum WebError {
    /// A bad parameter (a query that does not parse, a bad date).
    #[error("{0}")]
    BadRequest(String),
    /// No such session or transcript.
    #[error("{0}")]
    NotFound(String),
    /// A database error.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Anything else.
    #[error("{0}")]
    Internal(String),
}

impl From<crate::query::Error> for WebError {
    fn from(e: crate::query::Error) -> Self {
        match e {
            crate::query::Error::Store(e) => WebError::Store(e),
            e @ crate::query::Error::NoSession { .. } => WebError::NotFound(e.to_string()),
            e => WebError::BadRequest(e.to_string()),
        }
    }
}

impl IntoResponse for WebError {
    fn into_response(self) -> Response {
        let status = match &self {
            WebError::BadRequest(_) => StatusCode::BAD_REQUEST,
            WebError::NotFound(_) => StatusCode::NOT_FOUND,
            WebError::Store(_) | WebError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        };
        if status == StatusCode::INTERNAL_SERVER_ERROR {
            tracing::error!(error = %self, "web request failed");
        }
        let body = layout::page(
            "Error",
            html! { h1 { (status.as_u16()) " " (status.canonical_reason().unwrap_or("")) } p { (self.to_string()) } },
        );
        (status, Html(body.into_string())).into_response()
    }
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The address is taken or not ours.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: String,
        /// The IO error.
        #[source]
        source: std::io::Error,
    },
    /// Serving failed.
    #[error("web server failed: {0}")]
    Serve(#[source] std::io::Error),
}

/// The routes over `state`.
pub fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/", get(pages::home))
        .route("/sessions", get(pages::sessions))
        .route("/projects", get(projects::projects))
        .route("/sessions/{id}", get(pages::session))
        .route("/sessions/{id}/lines", get(pages::lines))
        .route("/sessions/{id}/read", get(projects::read))
        .route("/snippets", get(pages::snippets))
        .route("/usage", get(usage::usage))
        .route("/style.css", get(style))
        .route("/export.css", get(export_style))
        .route("/copy.js", get(copy_script))
        .fallback(|| async { WebError::NotFound("no such page".into()) })
        .layer(middleware::from_fn_with_state(state.clone(), require_token))
        .layer(middleware::from_fn_with_state(state.clone(), guard))
        .with_state(state)
}

async fn style() -> Response {
    (
        [(header::CONTENT_TYPE, "text/css; charset=utf-8")],
        layout::STYLE,
    )
        .into_response()
}

/// The style of a session's reading (`/sessions/{id}/read`), the export's own.
async fn export_style() -> Response {
    (
        [(header::CONTENT_TYPE, "text/css; charset=utf-8")],
        crate::export::session::CSS,
    )
        .into_response()
}

/// The copy buttons (`button[data-copy=ID]` copies the value of the input `#ID`): the only
/// script the pages load, and none of them needs it (the input can be selected by hand).
const COPY_JS: &str = "document.addEventListener('click', function (e) {\n\
  var b = e.target.closest && e.target.closest('button[data-copy]');\n\
  if (!b) return;\n\
  var i = document.getElementById(b.getAttribute('data-copy'));\n\
  if (!i) return;\n\
  i.select();\n\
  var done = function () { b.textContent = 'Copied'; };\n\
  if (navigator.clipboard) { navigator.clipboard.writeText(i.value).then(done, function () {}); }\n\
  else { document.execCommand('copy'); done(); }\n\
});\n";

async fn copy_script() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        COPY_JS,
    )
        .into_response()
}

/// The headers every answer carries (see the module documentation).
const SECURITY_HEADERS: [(&str, &str); 5] = [
    (
        "content-security-policy",
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
         form-action 'self'; \
         frame-ancestors 'none'; base-uri 'none'",
    ),
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "no-referrer"),
    ("x-frame-options", "DENY"),
    ("cross-origin-resource-policy", "same-origin"),
];

/// Refuse requests that do not name this server (DNS rebinding) and writes from another
/// origin; add the security headers to every answer, refusals included.
async fn guard(State(st): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .or_else(|| req.uri().authority().map(|a| a.as_str()));
    let mut resp = match host {
        Some(h) if st.hosts.allows(h) => {
            let safe = matches!(
                *req.method(),
                axum::http::Method::GET | axum::http::Method::HEAD
            );
            if safe || same_origin(&req, &st.hosts) {
                next.run(req).await
            } else {
                refuse(
                    StatusCode::FORBIDDEN,
                    "Cross-origin requests are not served.",
                )
            }
        }
        _ => refuse(
            StatusCode::MISDIRECTED_REQUEST,
            "This Gleaner answers only to its own address (localhost, 127.0.0.1, [::1], the \
             address it listens on, or names given with --allow-host).",
        ),
    };
    let headers = resp.headers_mut();
    for (k, v) in SECURITY_HEADERS {
        headers.insert(k, header::HeaderValue::from_static(v));
    }
    resp
}

/// A write's `Origin` (or, without one, `Sec-Fetch-Site`) says it comes from this server.
fn same_origin(req: &Request, hosts: &AllowedHosts) -> bool {
    if let Some(origin) = req.headers().get(header::ORIGIN) {
        return origin
            .to_str()
            .ok()
            .and_then(|o| o.split_once("://").map(|(_, rest)| rest.to_string()))
            .is_some_and(|authority| hosts.allows(&authority));
    }
    !req.headers()
        .get("sec-fetch-site")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == "cross-site" || v == "same-site")
}

fn refuse(status: StatusCode, why: &str) -> Response {
    let body = layout::page(
        status.canonical_reason().unwrap_or("Refused"),
        html! { h1 { (status.as_u16()) " " (status.canonical_reason().unwrap_or("")) } p { (why) } },
    );
    (status, Html(body.into_string())).into_response()
}

const COOKIE: &str = "gleaner_token";

async fn require_token(State(st): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    let Some(token) = st.token.as_deref() else {
        return next.run(req).await;
    };
    let in_query = req.uri().query().is_some_and(|q| {
        q.split('&').any(|kv| {
            kv.strip_prefix("token=")
                .is_some_and(|v| constant_eq(v, token))
        })
    });
    let in_cookie = req
        .headers()
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .any(|c| {
            c.trim()
                .strip_prefix(COOKIE)
                .and_then(|r| r.strip_prefix('='))
                .is_some_and(|v| constant_eq(v, token))
        });
    if !in_query && !in_cookie {
        let body = layout::page(
            "Token required",
            html! { h1 { "Token required" } p { "This Gleaner is reachable beyond this machine: open the URL with the token it printed at start (?token=...)." } },
        );
        return (StatusCode::UNAUTHORIZED, Html(body.into_string())).into_response();
    }
    let mut resp = next.run(req).await;
    if in_query && !in_cookie {
        let cookie = format!("{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/");
        if let Ok(v) = header::HeaderValue::from_str(&cookie) {
            resp.headers_mut().append(header::SET_COOKIE, v);
        }
    }
    resp
}

/// Equality whose time does not depend on where the strings differ.
fn constant_eq(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// A token: 128 bits from the OS's random source, hex.
fn new_token() -> std::io::Result<String> {
    use std::io::Read;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Where `gleaner web` listens and what it printed.
#[derive(Debug, Clone)]
pub struct Listening {
    /// The bound address.
    pub addr: SocketAddr,
    /// The URL to open (with the token when one is required).
    pub url: String,
    /// Whether a token is required.
    pub token_required: bool,
}

/// Bind `addr` (a taken default port falls back to a free one when `fallback`), then serve
/// until `shutdown` completes. `ready` is called once listening.
pub async fn serve(
    cfg: Arc<Config>,
    store: Store,
    addr: SocketAddr,
    allow_hosts: &[String],
    fallback: bool,
    ready: impl FnOnce(&Listening),
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let listener = match tokio::net::TcpListener::bind(addr).await {
        Ok(l) => l,
        Err(e) if fallback && e.kind() == std::io::ErrorKind::AddrInUse => {
            tokio::net::TcpListener::bind(SocketAddr::new(addr.ip(), 0))
                .await
                .map_err(|source| ServeError::Bind {
                    addr: addr.to_string(),
                    source,
                })?
        }
        Err(source) => {
            return Err(ServeError::Bind {
                addr: addr.to_string(),
                source,
            })
        }
    };
    let bound = listener.local_addr().map_err(ServeError::Serve)?;
    let token = if bound.ip().is_loopback() {
        None
    } else {
        Some(new_token().map_err(ServeError::Serve)?)
    };
    // Bound to every interface (0.0.0.0, ::): the URL names loopback, which this machine can
    // open (the caller says where other machines reach it).
    let shown = if bound.ip().is_unspecified() {
        SocketAddr::new(
            match bound.ip() {
                std::net::IpAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
                std::net::IpAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
            },
            bound.port(),
        )
    } else {
        bound
    };
    let url = match &token {
        Some(t) => format!("http://{shown}/?token={t}"),
        None => format!("http://{shown}/"),
    };
    ready(&Listening {
        addr: bound,
        url,
        token_required: token.is_some(),
    });
    let hosts = AllowedHosts::new(bound, allow_hosts);
    let state = Arc::new(AppState {
        store,
        cfg,
        token,
        hosts,
    });
    axum::serve(listener, router(state))
        .with_graceful_shutdown(shutdown)
        .await
        .map_err(ServeError::Serve)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_compare_and_differ() {
        assert!(constant_eq("abc", "abc"));
        assert!(!constant_eq("abc", "abd"));
        assert!(!constant_eq("abc", "ab"));
        let (a, b) = (new_token().unwrap(), new_token().unwrap());
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
    }

    #[test]
    fn only_this_servers_names_are_hosts() {
        let loopback: SocketAddr = "127.0.0.1:7270".parse().unwrap();
        let h = AllowedHosts::new(loopback, &["gleaner.lan".into()]);
        for ok in [
            "127.0.0.1:7270",
            "127.0.0.1",
            "localhost:7270",
            "LOCALHOST",
            "[::1]:7270",
            "[::1]",
            "gleaner.lan:7270",
            "gleaner.lan.",
        ] {
            assert!(h.allows(ok), "{ok}");
        }
        for bad in [
            "evil.example",
            "evil.example:7270",
            "localhost.evil.example",
            "192.168.1.10:7270",
            "",
            "[::1",
        ] {
            assert!(!h.allows(bad), "{bad}");
        }
        let any: SocketAddr = "0.0.0.0:7270".parse().unwrap();
        let h = AllowedHosts::new(any, &[]);
        assert!(h.allows("192.168.1.10:7270"));
        assert!(!h.allows("evil.example:7270"));
    }
}
