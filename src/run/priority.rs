//! Scheduling priority of the reading threads.
//!
//! During a backfill the single writer is ingest's critical path: every group of batches waits
//! for it, and the reading threads (up to `daemon.workers` of them) outnumber the cores. At equal
//! priority the kernel shares the cores evenly among all runnable threads, so the writer got a
//! fraction of a core while the readers ran ahead and then waited on the in-flight budget.
//! Reading threads run at a lower priority (nice +5 on Linux): they still take every cycle the
//! writer leaves, and the writer takes its core when it has work.
//!
//! Only the threads of tokio's blocking pool run read steps; the writer runs on a runtime worker
//! and SQLite's own thread, which keep their priority. A raised nice value cannot be lowered again
//! without privileges, so it is only ever set on threads that do nothing but blocking work.

use std::cell::Cell;

/// Nice value added to a reading thread.
const READER_NICE: i32 = 5;

/// Lower the current thread's priority (once per thread; later calls do nothing).
#[allow(unsafe_code)]
pub fn reading_thread() {
    thread_local!(static LOWERED: Cell<bool> = const { Cell::new(false) });
    if LOWERED.with(|l| l.replace(true)) {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        // SAFETY: gettid and setpriority take and return plain integers and touch no memory of
        // ours; on Linux, PRIO_PROCESS with a thread id changes that thread only.
        let r = unsafe {
            let tid = libc::gettid();
            let now = libc::getpriority(libc::PRIO_PROCESS, tid as libc::id_t);
            libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, now + READER_NICE)
        };
        if r != 0 {
            tracing::debug!("cannot lower the priority of a reading thread");
        }
    }
}
