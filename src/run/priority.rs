//! Scheduling priority of the reading threads.
//!
//! During a backfill the single writer is ingest's critical path: every group of batches waits
//! for it, and the reading threads (up to `daemon.workers` of them) outnumber the cores. At equal
//! priority the kernel shares the cores evenly among all runnable threads, so the writer got a
//! fraction of a core while the readers ran ahead and then waited on the in-flight budget.
//! Reading threads run at a lower priority (nice +10 on Linux: four of them weigh less than the
//! writer, so the kernel gives the writer its core whenever it has work) and still take every
//! cycle the writer leaves. Measured on the 1 GB bench tree, SQLite, alternating in one run:
//! nice 0 102.6, +5 92.4 / 126.2, +10 115.9 / 126.0, +19 121.4 / 130.6 MB/s (a slow hour of
//! the VM); +10 rather than +19 so the readers are not starved by whatever else the machine
//! runs.
//!
//! Only the threads of tokio's blocking pool run read steps; the writer runs on a runtime worker
//! (on SQLite its statements too, through the connection's handle: `store::direct`), which
//! keeps its priority. A raised nice value cannot be lowered again
//! without privileges, so it is only ever set on threads that do nothing but blocking work.

use std::cell::Cell;

/// Nice value added to a reading thread.
const READER_NICE: i32 = 10;

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
