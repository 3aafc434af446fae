//! Child processes as the benchmarks measure them: exit code, CPU and peak RSS from `wait4`.
#![allow(unsafe_code)]
#![allow(dead_code)] // Each example uses part of the shared helpers.

use anyhow::{Context, Result};

/// `wait4`: (exit code, CPU seconds, peak RSS bytes) once the child ended; `None` if running.
pub fn wait_pid(pid: i32, block: bool) -> Result<Option<(i32, f64, u64)>> {
    let mut status = 0;
    // SAFETY: rusage is plain old data.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let flags = if block { 0 } else { libc::WNOHANG };
    loop {
        // SAFETY: valid pointers to locals.
        match unsafe { libc::wait4(pid, &mut status, flags, &mut ru) } {
            0 => return Ok(None),
            r if r < 0 => {
                let e = std::io::Error::last_os_error();
                if e.kind() != std::io::ErrorKind::Interrupted {
                    return Err(e).context("wait4");
                }
            }
            _ => break,
        }
    }
    let code = match libc::WIFEXITED(status) {
        true => libc::WEXITSTATUS(status),
        false => 128 + libc::WTERMSIG(status),
    };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Ok(Some((
        code,
        tv(ru.ru_utime) + tv(ru.ru_stime),
        ru.ru_maxrss as u64 * 1024,
    )))
}
