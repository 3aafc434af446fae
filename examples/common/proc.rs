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

/// utime + stime of a process, in seconds.
pub fn cpu_secs(pid: i32) -> Result<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let f: Vec<&str> = stat
        .rsplit_once(')')
        .context("bad /proc stat")?
        .1
        .split_whitespace()
        .collect();
    let field = |i: usize| {
        f.get(i)
            .context("short /proc stat")?
            .parse::<u64>()
            .context("bad /proc stat")
    };
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1);
    Ok((field(11)? + field(12)?) as f64 / hz as f64)
}

/// A figure of `/proc/PID/status` (`VmHWM:`, `VmRSS:`...), in kB.
pub fn proc_status_kb(pid: i32, key: &str) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status
        .lines()
        .find(|l| l.starts_with(key))
        .context("no VmRSS in /proc status")?;
    Ok(line
        .split_whitespace()
        .nth(1)
        .context("bad status line")?
        .parse()?)
}
