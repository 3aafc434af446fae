//! `gleaner web`: a read-only local site over the database (works with or without the daemon).
//!
//! Server-rendered HTML: `axum` routes, `maud` templates compiled with the binary, a style sheet
//! inline, no JavaScript build. Everything shown is the stored (redacted) text, escaped.
//!
//! Bound to a loopback address it is open to this machine's users, like the database file
//! itself. Bound to any other address it requires a token, generated at start and printed with
//! the URL: `?token=...` once sets a cookie (HttpOnly, SameSite=Strict) that later requests
//! carry; without it a request gets 401.

mod layout;
mod pages;
mod timeline;

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
use crate::store::{Store, StoreError};

pub use timeline::{build as build_timeline, Band, Item, Turn};

/// What every handler reads.
pub struct AppState {
    /// The database.
    pub store: Store,
    /// The configuration (the redactor for raw lines).
    pub cfg: Arc<Config>,
    /// Required token when bound beyond loopback.
    token: Option<String>,
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
        .route("/sessions/{id}", get(pages::session))
        .route("/sessions/{id}/lines", get(pages::lines))
        .route("/snippets", get(pages::snippets))
        .fallback(|| async { WebError::NotFound("no such page".into()) })
        .layer(middleware::from_fn_with_state(state.clone(), require_token))
        .with_state(state)
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
    let url = match &token {
        Some(t) => format!("http://{bound}/?token={t}"),
        None => format!("http://{bound}/"),
    };
    ready(&Listening {
        addr: bound,
        url,
        token_required: token.is_some(),
    });
    let state = Arc::new(AppState { store, cfg, token });
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
}
