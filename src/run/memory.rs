//! Memory handed back to the system. glibc's malloc keeps what a thread frees in that thread's
//! arena for reuse, and makes up to eight arenas per core: after a backfill on many threads the
//! daemon sat at twice its live heap (peak heap 80 MB, peak RSS 160-180 MB on the 1 GB bench
//! tree), and idle it kept what the last burst had freed.
//!
//! Rust's allocations go to jemalloc (the binary's global allocator, `src/main.rs`); glibc's
//! malloc still serves SQLite and the other C code.
//!
//! Its `unsafe` calls (the crate has them in three modules: here, `run::priority` and
//! `store::direct`) are two libc functions that take plain integers and touch nothing of ours,
//! and jemalloc's `mallctl` with a fixed name and no values. On
//! other C libraries the libc ones do nothing.

/// Cap glibc's malloc arenas at `n`, before any thread is started (arenas are made as threads
/// first allocate). Threads then share arenas: measured back to back on the 1 GB bench tree
/// (docs/benchmarks.md) the peak RSS drops by a third for a few percent of throughput.
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

/// Times [`release`] was called: each runtime worker gives its cache back the next time it
/// parks after one (see [`on_park`]).
static RELEASES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Return freed heap pages of every arena to the system (the daemon calls it once it has gone
/// quiet after work, so an idle daemon holds its live memory only): jemalloc's (which would
/// otherwise keep them until it is next used: it purges as it allocates) and glibc's. The
/// runtime's workers give back their caches as they park ([`on_park`]).
#[allow(unsafe_code)]
pub fn release() {
    RELEASES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    flush_thread_cache();
    purge_arenas();
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes no pointers; it is safe to call from any thread at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// For the runtime's `on_thread_park`: a worker going idle after a [`release`] gives its
/// jemalloc cache back (what it holds is otherwise kept by an idle daemon: 1.5-2.5 MB
/// measured). One atomic load per park otherwise.
pub fn on_park() {
    thread_local!(static SEEN: std::cell::Cell<u64> = const { std::cell::Cell::new(0) });
    let now = RELEASES.load(std::sync::atomic::Ordering::Relaxed);
    if SEEN.with(|s| s.replace(now)) != now {
        flush_thread_cache();
        purge_arenas();
    }
}

/// Every jemalloc arena's unused dirty pages back to the system
/// (`arena.<MALLCTL_ARENAS_ALL>.purge`).
fn purge_arenas() {
    mallctl_action(c"arena.4096.purge");
}

/// Give the calling thread's jemalloc cache back to the arena. A thread that only frees (the
/// one freeing spent batches) would otherwise hold what it freed in its cache until it next
/// frees, an idle daemon's memory for nothing.
pub fn flush_thread_cache() {
    mallctl_action(c"thread.tcache.flush");
}

/// Run a jemalloc control that reads and writes no value (an action such as a purge); a
/// failure is only logged: memory is given back later or not at all, nothing breaks.
#[allow(unsafe_code)]
fn mallctl_action(name: &std::ffi::CStr) {
    // SAFETY: `name` is a C string; the action reads and writes no value, so the old/new
    // pointers are null with zero lengths, as jemalloc's manual specifies.
    let r = unsafe {
        tikv_jemalloc_sys::mallctl(
            name.as_ptr(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            0,
        )
    };
    if r != 0 {
        tracing::debug!(code = r, name = ?name, "jemalloc control failed");
    }
}

/// jemalloc's `opt.narenas`: the arenas its built-in settings ask for (see `.cargo/config.toml`).
#[allow(unsafe_code)]
pub fn jemalloc_arenas() -> Option<u32> {
    let mut n: u32 = 0;
    let mut len = std::mem::size_of::<u32>();
    // SAFETY: `opt.narenas` is an unsigned int; `n` and `len` describe a buffer of that size.
    let r = unsafe {
        tikv_jemalloc_sys::mallctl(
            c"opt.narenas".as_ptr(),
            (&mut n as *mut u32).cast(),
            &mut len,
            std::ptr::null_mut(),
            0,
        )
    };
    (r == 0).then_some(n)
}

#[cfg(test)]
mod tests {
    #[test]
    fn jemalloc_takes_its_built_in_settings() {
        // `.cargo/config.toml` builds jemalloc with one arena; a build without it would have
        // four per core and a larger peak RSS.
        assert_eq!(super::jemalloc_arenas(), Some(1));
        super::release();
    }
}
