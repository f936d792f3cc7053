//! `assay serve` as the tests start it (a real process on a free loopback port, once it says
//! where it listens) and a raw HTTP/1.1 client for it: requests written by hand on plain
//! sockets, one connection each, so that a test sends exactly what it means to and can walk
//! away mid-request.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::assay_command;

/// How long a server may take to print its listening line (the tests' `test` environment is
/// set up already: seconds).
pub const START_WAIT: Duration = Duration::from_secs(300);
/// How long a stopped server may take to exit before it is killed.
pub const STOP_WAIT: Duration = Duration::from_secs(30);
/// How long [`http`] waits for each read of an answer (the longest job a test runs included).
pub const REQUEST_WAIT: Duration = Duration::from_secs(300);

/// An HTTP answer: its status, headers (names lowercased, in order) and body.
pub type Response = (u16, Vec<(String, String)>, Vec<u8>);

/// One `assay serve` process, stopped (SIGTERM, then SIGKILL) when dropped.
pub struct Server {
    child: Child,
    addr: SocketAddr,
    /// The port it listens on, on loopback.
    pub port: u16,
    stderr: PathBuf,
}

impl Server {
    /// `assay serve --port 0 ARGS` in `dir`, with `env` set, its standard error in a file of
    /// `dir`, once it says where it listens (within [`START_WAIT`]); a panic with what it said
    /// if it exits or says anything else first.
    pub fn start(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Server {
        static STARTED: AtomicUsize = AtomicUsize::new(0);
        let n = STARTED.fetch_add(1, Ordering::Relaxed);
        let stderr = dir.join(format!("serve-{n}.stderr"));
        let child = assay_command(dir)
            .args(["serve", "--port", "0"])
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .expect("start assay serve");
        let mut server = Server {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            port: 0,
            stderr,
        };
        let name = format!("assay serve {args:?}");
        let stdout = server.child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let deadline = Instant::now() + START_WAIT;
        loop {
            match rx.recv_timeout(Duration::from_millis(200)) {
                Ok(line) => {
                    server.addr = line
                        .strip_prefix("assay serve: listening on http://")
                        .and_then(|a| a.strip_suffix('/'))
                        .and_then(|a| a.parse().ok())
                        .unwrap_or_else(|| {
                            panic!(
                                "{name} printed {line:?}, not its listening line: {}",
                                server.log()
                            )
                        });
                    assert!(server.addr.ip().is_loopback(), "{}", server.addr);
                    server.port = server.addr.port();
                    return server;
                }
                Err(RecvTimeoutError::Timeout) => {
                    if let Some(status) = server.child.try_wait().unwrap() {
                        panic!("{name} exited ({status}): {}", server.log());
                    }
                    assert!(
                        Instant::now() < deadline,
                        "{name} did not listen within {START_WAIT:?}: {}",
                        server.log()
                    );
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("{name} closed its output: {}", server.log())
                }
            }
        }
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT` and `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// What it said on standard error.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = rustix::process::kill_process(
            rustix::process::Pid::from_child(&self.child),
            rustix::process::Signal::TERM,
        );
        let deadline = Instant::now() + STOP_WAIT;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One HTTP/1.1 exchange with `addr` on a connection of its own (`connection: close`): `method
/// path` with `headers` and `body` as JSON if given (`content-length: 0` if not), each read
/// of the answer bounded by [`REQUEST_WAIT`]. Its status, headers (names lowercased) and body
/// (de-chunked).
pub fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> Response {
    let fail = |what: &dyn std::fmt::Display| -> ! { panic!("{method} {path} at {addr}: {what}") };
    let mut stream = TcpStream::connect(addr).unwrap_or_else(|e| fail(&e));
    stream.set_read_timeout(Some(REQUEST_WAIT)).unwrap();
    let body = body
        .map(|b| serde_json::to_vec(b).unwrap())
        .unwrap_or_default();
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream
        .write_all(head.as_bytes())
        .unwrap_or_else(|e| fail(&e));
    stream.write_all(&body).unwrap_or_else(|e| fail(&e));
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap_or_else(|e| fail(&e));
    parse_response(&raw).unwrap_or_else(|| {
        fail(&format_args!(
            "not an HTTP answer: {:?}",
            String::from_utf8_lossy(&raw)
        ))
    })
}

/// A whole HTTP/1.1 answer read to the connection's end: status, headers (names lowercased)
/// and body (de-chunked, or as long as its `content-length`).
fn parse_response(raw: &[u8]) -> Option<Response> {
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&raw[..end]);
    let mut lines = head.split("\r\n");
    let status = lines.next()?.split_whitespace().nth(1)?.parse().ok()?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(name, value)| (name.trim().to_lowercase(), value.trim().to_string()))
        .collect();
    let header = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let rest = &raw[end + 4..];
    let body = if header("transfer-encoding").is_some_and(|v| v.to_lowercase().contains("chunked"))
    {
        dechunk(rest)?
    } else {
        let length = header("content-length").and_then(|v| v.parse::<usize>().ok());
        rest[..length.unwrap_or(rest.len()).min(rest.len())].to_vec()
    };
    Some((status, headers, body))
}

/// A chunked body's content, up to its last (empty) chunk.
fn dechunk(mut rest: &[u8]) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let eol = rest.windows(2).position(|w| w == b"\r\n")?;
        let size = std::str::from_utf8(&rest[..eol]).ok()?;
        let size = usize::from_str_radix(size.split(';').next()?.trim(), 16).ok()?;
        rest = &rest[eol + 2..];
        if size == 0 {
            return Some(body);
        }
        body.extend_from_slice(rest.get(..size)?);
        rest = rest.get(size + 2..)?;
    }
}

/// A body as JSON (a panic shows it when it is not).
pub fn json_of(body: &[u8]) -> Value {
    serde_json::from_slice(body)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(body)))
}
