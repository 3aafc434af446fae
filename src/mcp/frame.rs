//! The stdio transport, with JSON-RPC's answer to a line that is not JSON.
//!
//! rmcp reads one JSON-RPC message a line; a line it cannot parse is logged and dropped, so a
//! client that sent a broken line waits for an answer that never comes. JSON-RPC 2.0 says
//! such a line gets a Parse error (-32700) with a null id. Why a filter in front of rmcp
//! rather than a change to its codec: the codec is rmcp's, and the check is one parse of each
//! line. The filter passes every JSON-RPC message to rmcp and answers the other lines itself
//! (text that is not JSON, and JSON that is no message: Invalid Request, with the `id` rmcp's
//! own answer leaves out), on the same stdout, between rmcp's own messages (both go through
//! one writer, a whole line at a time, so nothing interleaves).

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Bytes buffered between the filter and rmcp in each direction.
const PIPE_BYTES: usize = 64 << 10;

/// rmcp's side of the transport, and the task that writes stdout (awaited at the end so that
/// every answer is out before the process exits).
pub(super) struct Checked {
    pub(super) input: DuplexStream,
    pub(super) output: DuplexStream,
    pub(super) writer: JoinHandle<()>,
}

/// The transport over `input` and `output` (stdin and stdout in the server).
pub(super) fn checked<R, W>(input: R, output: W) -> Checked
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (mut to_rmcp, rmcp_in) = tokio::io::duplex(PIPE_BYTES);
    let (from_rmcp, rmcp_out) = tokio::io::duplex(PIPE_BYTES);
    let (errors, mut answers) = mpsc::channel::<String>(16);
    crate::run::task(async move {
        let mut lines = BufReader::new(input);
        let mut line = Vec::new();
        loop {
            line.clear();
            match lines.read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            if let Some(answer) = parse_error(&line) {
                if errors.send(answer).await.is_err() {
                    break;
                }
                continue;
            }
            if !line.ends_with(b"\n") {
                line.push(b'\n');
            }
            if to_rmcp.write_all(&line).await.is_err() {
                break;
            }
        }
        // End of input: rmcp sees it and the service ends.
        let _ = to_rmcp.shutdown().await;
    });
    let writer = crate::run::task(async move {
        let mut out = output;
        let mut from_rmcp = BufReader::new(from_rmcp);
        // rmcp's line in progress: `read_until` is cancel safe, what it read stays here.
        let mut line = Vec::new();
        let mut answers_open = true;
        loop {
            tokio::select! {
                read = from_rmcp.read_until(b'\n', &mut line) => {
                    if !matches!(read, Ok(n) if n > 0) {
                        break;
                    }
                    if write_line(&mut out, &line).await.is_err() {
                        return;
                    }
                    line.clear();
                }
                answer = answers.recv(), if answers_open => match answer {
                    Some(a) => {
                        if write_line(&mut out, a.as_bytes()).await.is_err() {
                            return;
                        }
                    }
                    None => answers_open = false,
                },
            }
        }
        // rmcp is done: what it left without a newline, and answers to broken lines sent
        // just before the end, still go out.
        if !line.is_empty() {
            let _ = write_line(&mut out, &line).await;
        }
        while let Ok(a) = answers.try_recv() {
            let _ = write_line(&mut out, a.as_bytes()).await;
        }
    });
    Checked {
        input: rmcp_in,
        output: rmcp_out,
        writer,
    }
}

/// Write one whole line (its newline added if missing) and flush it.
async fn write_line<W: AsyncWrite + Unpin>(out: &mut W, line: &[u8]) -> std::io::Result<()> {
    out.write_all(line).await?;
    if !line.ends_with(b"\n") {
        out.write_all(b"\n").await?;
    }
    out.flush().await
}

/// JSON-RPC's answer to `line` when it is not a message rmcp can take: a Parse error (-32700)
/// for text that is not JSON, an Invalid Request (-32600) for JSON that is not a request,
/// notification or response object (`[]`, `{}`, `"x"`: rmcp answers those without the `id`
/// JSON-RPC requires); `None` for a message (or a blank line), which goes to rmcp.
fn parse_error(line: &[u8]) -> Option<String> {
    let text = line.strip_suffix(b"\n").unwrap_or(line);
    let text = text.strip_suffix(b"\r").unwrap_or(text);
    if text.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    // rmcp accepts a line that starts with a byte order mark.
    let text = text.strip_prefix("\u{feff}".as_bytes()).unwrap_or(text);
    let (code, message, id) = match serde_json::from_slice::<serde_json::Value>(text) {
        Err(e) => (-32700, format!("Parse error: {e}"), serde_json::Value::Null),
        Ok(serde_json::Value::Object(m)) => {
            let id = m
                .get("id")
                .filter(|i| i.is_string() || i.is_number())
                .cloned()
                .unwrap_or(serde_json::Value::Null);
            let message =
                m.contains_key("method") || m.contains_key("result") || m.contains_key("error");
            if message && m.get("jsonrpc").and_then(|v| v.as_str()) == Some("2.0") {
                return None;
            }
            (
                -32600,
                "Invalid Request: expected a JSON-RPC 2.0 request, notification or response"
                    .to_string(),
                id,
            )
        }
        Ok(_) => (
            -32600,
            "Invalid Request: expected a JSON-RPC 2.0 object (batches are not supported)"
                .to_string(),
            serde_json::Value::Null,
        ),
    };
    let answer = serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": code, "message": message},
    });
    Some(answer.to_string())
}

#[cfg(test)]
mod tests {
    use super::parse_error;

    #[test]
    fn only_lines_that_are_not_messages_are_answered() {
        for ok in [
            &b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n"[..],
            b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}",
            b"{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}",
            b"\n",
            b"  \r\n",
            b"\xef\xbb\xbf{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n",
        ] {
            assert_eq!(parse_error(ok), None, "{}", String::from_utf8_lossy(ok));
        }
        let code = |line: &[u8]| {
            let v: serde_json::Value =
                serde_json::from_str(&parse_error(line).expect("answered")).expect("JSON");
            (v["error"]["code"].as_i64(), v["id"].clone())
        };
        assert_eq!(code(b"not json\n"), (Some(-32700), serde_json::Value::Null));
        assert_eq!(code(b"{\"id\": 1,").0, Some(-32700));
        for invalid in [
            &b"[]"[..],
            b"[1,2]",
            b"{}",
            b"\"x\"",
            b"{\"jsonrpc\":\"1.0\",\"method\":\"m\"}",
        ] {
            assert_eq!(code(invalid), (Some(-32600), serde_json::Value::Null));
        }
        assert_eq!(code(b"{\"id\": 7}"), (Some(-32600), serde_json::json!(7)));
    }
}
