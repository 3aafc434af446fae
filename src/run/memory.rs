//! Memory handed back to the system. glibc's malloc keeps what a thread frees in that thread's
//! arena for reuse, and makes up to eight arenas per core: after a backfill on many threads the
//! daemon sat at twice its live heap (peak heap 80 MB, peak RSS 160-180 MB on the 1 GB bench
//! tree), and idle it kept what the last burst had freed.
//!
//! These are the only `unsafe` calls of the crate: two libc functions that take plain integers
//! and touch nothing of ours. On other C libraries they do nothing.

/// Cap glibc's malloc arenas at `n`, before any thread is started (arenas are made as threads
/// first allocate). Threads then share arenas: measured back to back on the 1 GB bench tree
/// (see README, Benchmark) the peak RSS drops by a third for a few percent of throughput.
#[allow(unsafe_code)]
pub fn limit_arenas(n: usize) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let n = i32::try_from(n.max(1)).unwrap_or(i32::MAX);
        // SAFETY: mallopt only sets a malloc tuning value; called before other threads exist.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, n);
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = n;
}

/// Return freed heap pages of every arena to the system (the daemon calls it once it has gone
/// quiet after work, so an idle daemon holds its live memory only).
#[allow(unsafe_code)]
pub fn release() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes no pointers; it is safe to call from any thread at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}
