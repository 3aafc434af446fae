//! The live-session benchmark: a daemon following one file, appends timed until committed.

use super::*;

impl Bench {
    /// Start a daemon on a one-file tree, time appends until committed, idle it, stop it.
    pub(super) fn latency(&mut self, name: &str, url: &str, lines: &[Vec<u8>]) -> Result<Live> {
        let root = self.work.join("live").join(name);
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(root.join("proj"))?;
        let file = root
            .join("proj")
            .join(format!("{}.jsonl", map_uuid(7, name.as_bytes())));
        fs::write(&file, lines[..20].concat())?;
        let mut size = fs::metadata(&file)?.len();
        let log = self.work.join(format!("daemon-{name}.log"));
        let child = (self.cmd(&root, url).args(["--log-level", "warn", "daemon"]))
            .stdout(Stdio::null())
            .stderr(File::create(&log)?)
            .spawn()
            .with_context(|| format!("cannot start {}", self.bin.display()))?;
        let pid = child.id() as i32;
        let mut daemon = Daemon(child, false);
        println!("{name}: daemon pid {pid} on {}", root.display());

        // Wait for the first 20 lines; the database may not even exist yet.
        let (t0, path) = (Instant::now(), file.to_string_lossy().into_owned());
        let (mut db, mut last_err): (Option<Reader>, String);
        db = None;
        loop {
            if let Some((code, ..)) = wait_pid(pid, false)? {
                daemon.1 = true;
                bail!(
                    "{name} daemon exited with {code} at startup; {}",
                    log_tail(&log)
                );
            }
            let res = self.rt.block_on(async {
                if db.is_none() {
                    db = Some(Reader::connect(url).await?);
                }
                db.as_mut().context("no connection")?.offset(&path).await
            });
            match res {
                Ok(Some(off)) if off as u64 == size => break,
                Ok(off) => last_err = format!("byte_offset {off:?}, want {size}"),
                Err(e) => (db, last_err) = (None, format!("{e:#}")),
            }
            if t0.elapsed() > Duration::from_secs(30) {
                bail!(
                    "{name} daemon did not ingest {path} within 30 s ({last_err}); {}",
                    log_tail(&log)
                );
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        println!(
            "  initial {size} bytes committed {:.0} ms after start",
            t0.elapsed().as_secs_f64() * 1e3
        );
        let mut db = db.context("no connection")?;

        let mut out = OpenOptions::new().append(true).open(&file)?;
        let mut lat = Vec::new();
        for line in &lines[20..] {
            out.write_all(line)?;
            out.flush()?;
            let t = Instant::now();
            size += line.len() as u64;
            loop {
                let off = self.rt.block_on(db.offset(&path))?.unwrap_or(0) as u64;
                if off > size {
                    self.problems
                        .push(format!("{name}: byte_offset {off} beyond file size {size}"));
                }
                if off >= size {
                    break;
                }
                if t.elapsed() > Duration::from_secs(10) {
                    bail!("{name} daemon did not commit an appended line within 10 s (offset {off}, size {size}); {}", log_tail(&log));
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            lat.push(t.elapsed().as_secs_f64() * 1e3);
            std::thread::sleep(Duration::from_millis(20));
        }
        let p = |q| percentile(&lat, q);
        let (p50, p90, p99, max, n) = (p(0.5), p(0.9), p(0.99), p(1.0), lat.len());
        println!("  latency over {n} appends: p50 {p50:.1} ms, p90 {p90:.1} ms, p99 {p99:.1} ms, max {max:.1} ms");
        self.rt.block_on(db.close());

        let before = cpu_secs(pid)?;
        std::thread::sleep(Duration::from_secs(10));
        let cpu = cpu_secs(pid)? - before;
        let rss = proc_status_kb(pid, "VmRSS:")? * 1024;
        println!(
            "  idle 10 s: {cpu:.2} s CPU ({:.1}% of a core), RSS {:.1} MB",
            cpu * 10.0,
            rss as f64 / 1e6
        );
        // Steady idle: past the memory release that follows the last work (above), and long
        // enough to include one periodic rescan (daemon.rescan_interval_secs = 30).
        let before = cpu_secs(pid)?;
        std::thread::sleep(Duration::from_secs(30));
        let steady = cpu_secs(pid)? - before;
        println!("  then idle 30 s: {steady:.2} s CPU");

        // SAFETY: signalling our own child.
        unsafe { libc::kill(pid, libc::SIGTERM) };
        let t = Instant::now();
        let code = loop {
            if let Some((code, ..)) = wait_pid(pid, false)? {
                daemon.1 = true;
                break code;
            }
            if t.elapsed() > Duration::from_secs(30) {
                bail!(
                    "{name} daemon still running 30 s after SIGTERM (killed); {}",
                    log_tail(&log)
                );
            }
            std::thread::sleep(Duration::from_millis(1));
        };
        println!(
            "  SIGTERM: exit code {code} after {:.0} ms",
            t.elapsed().as_secs_f64() * 1e3
        );
        if code != 0 {
            self.problems.push(format!(
                "{name}: daemon exited with {code} on SIGTERM; {}",
                log_tail(&log)
            ));
        }
        if fs::metadata(&log).map(|m| m.len()).unwrap_or(0) > 0 {
            println!("  daemon warnings: {}", log_tail(&log));
        }
        Ok(Live(lat, cpu, steady, rss))
    }
}

/// A running daemon, killed if the bench bails out before stopping it.
struct Daemon(Child, bool);

impl Drop for Daemon {
    fn drop(&mut self) {
        if !self.1 {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}
