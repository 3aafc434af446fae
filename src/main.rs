//! The `gleaner` binary: parse arguments, run, map the outcome to an exit code.
//! Everything else lives in the library.

/// jemalloc instead of glibc's malloc. Why: glibc capped at two arenas (capped because
/// uncapped it held twice the live heap after a backfill) made the reading threads, the
/// writer and the thread freeing spent batches queue on two arena locks; back to back on the
/// 1 GB bench tree jemalloc ingested 25-30% faster with less CPU and a lower peak RSS
/// (docs/benchmarks.md). Its settings are built in (`.cargo/config.toml`: one arena, dirty
/// pages kept 1 s) and `run::memory::release` hands idle pages back. SQLite's own allocations stay on
/// the C library's malloc.
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

use std::process::ExitCode;

fn main() -> ExitCode {
    quiet_on_closed_pipe();
    match gleaner::cli::Cli::parse_args().run() {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            // A closed stdout pipe (`gleaner files | head`) is not an error.
            if err.chain().any(|e| {
                e.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
                    || e.downcast_ref::<serde_json::Error>()
                        .is_some_and(|j| j.io_error_kind() == Some(std::io::ErrorKind::BrokenPipe))
            }) {
                return ExitCode::from(gleaner::cli::EXIT_OK);
            }
            // Each cause once: an error that prints its source (`cannot listen on X: Address
            // in use`) is followed in the chain by that source, which is not said again.
            let mut msg = String::new();
            for e in err.chain() {
                let part = e.to_string();
                if msg.contains(&part) {
                    continue;
                }
                if !msg.is_empty() {
                    msg.push_str(": ");
                }
                msg.push_str(&part);
            }
            eprintln!("gleaner: {}", msg.replace('\n', " "));
            ExitCode::from(gleaner::cli::EXIT_ERROR)
        }
    }
}

/// `println!` (and crates that print, such as clap's completions) panic when stdout is a pipe
/// its reader closed (`gleaner completions bash | head -1`): that is how a reader says it has
/// enough, so the process ends quietly with exit 0 instead of a backtrace. Every other panic
/// goes to the default hook. (Rust ignores SIGPIPE, so the write fails instead of killing the
/// process; errors returned up to `main` are handled there.)
fn quiet_on_closed_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let msg = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if msg.contains("Broken pipe") || msg.contains("os error 32") {
            std::process::exit(i32::from(gleaner::cli::EXIT_OK));
        }
        default(info);
    }));
}
