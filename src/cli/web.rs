//! `gleaner web`: serve the read-only site until Ctrl-C or SIGTERM.

use std::sync::Arc;

use crate::config::Config;

use super::{Outcome, EXIT_OK};

/// Serve; print the URL (and the token when bound beyond loopback) once listening.
pub async fn run(
    cfg: Arc<Config>,
    bind: Option<std::net::SocketAddr>,
    allow_hosts: Vec<String>,
    open: bool,
) -> Outcome {
    let store = super::open_shared_store(&cfg).await?;
    // An address given on the command line is insisted on; the configured default falls back
    // to a free port when taken (another gleaner web, another program).
    let (addr, fallback) = match bind {
        Some(a) => (a, false),
        None => (cfg.web.bind, true),
    };
    let stop = async {
        let term = async {
            #[cfg(unix)]
            if let Ok(mut s) =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            {
                s.recv().await;
                return;
            }
            std::future::pending::<()>().await;
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term => {}
        }
    };
    crate::web::serve(
        cfg,
        store.clone(),
        addr,
        &allow_hosts,
        fallback,
        |l| {
            println!("Gleaner web view: {}", l.url);
            if l.token_required {
                println!(
                    "Listening on {} beyond this machine: the token in that URL is required \
                     (a cookie keeps it after the first visit).",
                    l.addr
                );
                if l.addr.ip().is_unspecified() {
                    let other = outward_ip()
                        .map_or_else(|| "this machine's address".to_string(), |ip| ip.to_string());
                    println!(
                        "From another machine: the same URL with {other} for the address \
                         (a name needs --allow-host NAME)."
                    );
                }
            }
            if open {
                open_browser(&l.url);
            }
        },
        stop,
    )
    .await?;
    store.close().await;
    Ok(EXIT_OK)
}

/// Hand the URL to the desktop's opener; a failure is said, not fatal.
fn open_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    if let Err(e) = std::process::Command::new(opener)
        .arg(url)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
    {
        eprintln!("gleaner: cannot run {opener} to open the page: {e}");
    }
}

/// The address this machine reaches others from (the interface of its default route), found
/// without sending anything: a UDP socket "connected" to a documentation address.
fn outward_ip() -> Option<std::net::IpAddr> {
    let s = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    s.connect("192.0.2.1:9").ok()?;
    let ip = s.local_addr().ok()?.ip();
    (!ip.is_unspecified()).then_some(ip)
}
