//! The `gleaner` binary: parse arguments, run, map the outcome to an exit code.
//! Everything else lives in the library.

use std::process::ExitCode;

fn main() -> ExitCode {
    match gleaner::cli::Cli::parse_args().run() {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            // A closed stdout pipe (`gleaner files | head`) is not an error.
            if err.chain().any(|e| {
                e.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) {
                return ExitCode::from(gleaner::cli::EXIT_OK);
            }
            let msg = err
                .chain()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(": ");
            eprintln!("gleaner: {}", msg.replace('\n', " "));
            ExitCode::from(gleaner::cli::EXIT_ERROR)
        }
    }
}
