//! `gleaner status` and `gleaner reload`: questions to the running daemon over its socket.

use super::{output, Outcome, EXIT_ERROR, EXIT_NOT_FOUND, EXIT_OK};
use crate::config::Config;

/// Run `gleaner status`.
pub async fn status(cfg: &Config, json: bool) -> Outcome {
    let sock = crate::run::socket::socket_path(&cfg.data_dir);
    let req = crate::run::socket::Request::Status;
    match crate::run::socket::request(&sock, &req, std::time::Duration::from_secs(5)).await {
        Ok(crate::run::socket::Response::Status(report)) => {
            output::print_status(&report, json)?;
            Ok(EXIT_OK)
        }
        Ok(other) => anyhow::bail!("unexpected answer from the daemon: {other:?}"),
        Err(e @ crate::run::socket::ClientError::NotRunning { .. }) => {
            if json {
                // A script asked for JSON: it gets JSON, and the exit code.
                let v = serde_json::json!({"running": false, "detail": e.to_string()});
                println!("{}", serde_json::to_string_pretty(&v)?);
            } else {
                eprintln!("{e}");
            }
            Ok(EXIT_NOT_FOUND)
        }
        Err(e) => Err(e.into()),
    }
}

/// Run `gleaner reload`.
pub async fn reload(cfg: &Config) -> Outcome {
    let sock = crate::run::socket::socket_path(&cfg.data_dir);
    let req = crate::run::socket::Request::Reload;
    match crate::run::socket::request(&sock, &req, std::time::Duration::from_secs(35)).await {
        Ok(crate::run::socket::Response::Reloaded { changed }) if changed.is_empty() => {
            println!("configuration reloaded; nothing changed");
            Ok(EXIT_OK)
        }
        Ok(crate::run::socket::Response::Reloaded { changed }) => {
            println!("configuration reloaded; changed: {}", changed.join(", "));
            Ok(EXIT_OK)
        }
        Ok(crate::run::socket::Response::Error { message }) => {
            eprintln!("gleaner: {message}");
            Ok(EXIT_ERROR)
        }
        Ok(other) => anyhow::bail!("unexpected answer from the daemon: {other:?}"),
        Err(e @ crate::run::socket::ClientError::NotRunning { .. }) => {
            eprintln!("{e}");
            Ok(EXIT_NOT_FOUND)
        }
        Err(e) => Err(e.into()),
    }
}
