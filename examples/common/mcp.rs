//! A minimal MCP client over a child process's stdio, for timing tools through the real server.
#![allow(dead_code)] // Each example uses part of the shared helpers.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

/// `gleaner mcp` on a database, initialised.
pub struct McpClient {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    id: i64,
}

impl McpClient {
    /// Start the server and run the initialisation handshake (protocol 2025-06-18). The
    /// machine id is the benches' (`qbench`, which ingested the trees): a transcript is read
    /// from disk only by the machine holding it.
    pub fn start(bin: &Path, url: &str) -> Result<McpClient> {
        let mut child = Command::new(bin)
            .args(["mcp", "--database-url", url, "--log-level", "warn"])
            .args(["--machine-id", "qbench"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("cannot start gleaner mcp")?;
        let stdin = child.stdin.take().context("stdin")?;
        let stdout = BufReader::new(child.stdout.take().context("stdout")?);
        let mut c = McpClient {
            child,
            stdin,
            stdout,
            id: 0,
        };
        c.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "bench", "version": "1"}}),
        )?;
        writeln!(
            c.stdin,
            r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
        )?;
        Ok(c)
    }

    /// One request and its response.
    pub fn request(&mut self, method: &str, params: Value) -> Result<Value> {
        self.id += 1;
        let req = json!({"jsonrpc": "2.0", "id": self.id, "method": method, "params": params});
        writeln!(self.stdin, "{req}")?;
        self.stdin.flush()?;
        loop {
            let mut line = String::new();
            if self.stdout.read_line(&mut line)? == 0 {
                bail!("gleaner mcp closed its output");
            }
            let v: Value = serde_json::from_str(&line)?;
            if v["id"] == self.id {
                return Ok(v);
            }
        }
    }

    /// Call a tool; an error result is an error.
    pub fn call(&mut self, tool: &str, args: Value) -> Result<Value> {
        let r = self.request("tools/call", json!({"name": tool, "arguments": args}))?;
        let res = &r["result"];
        let text = res["content"][0]["text"].as_str().unwrap_or_default();
        if res["isError"] == true || r.get("error").is_some() {
            bail!("{tool}: {text}{}", r["error"]);
        }
        Ok(serde_json::from_str(text)?)
    }
}

impl Drop for McpClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
