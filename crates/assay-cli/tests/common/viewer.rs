//! `assay view` as a user starts it (`assay view --port 0 RUN...`), and its HTTP answers read
//! as sent: requests written by hand, so that a test can send what a browser would normalize.
//! Or the viewer served in the test's own process, for pages a browser only renders.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;

use assay_view::{serve, Viewer};
use serde_json::Value;

use super::assay_command;

/// `assay view` serving `runs`, stopped when dropped.
pub struct Server {
    child: Child,
    /// `http://127.0.0.1:PORT`
    pub url: String,
}

impl Server {
    pub fn start(dir: &Path, runs: &[&Path]) -> Server {
        let mut child = assay_command(dir)
            .args(["view", "--port", "0"])
            .args(runs)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start assay view");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let Some(url) = line
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .map(|u| u.trim_end_matches('/').to_string())
        else {
            let mut err = String::new();
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .unwrap();
            panic!("assay view did not say where it serves: {line:?} {err}");
        };
        Server { child, url }
    }

    /// A raw HTTP/1.1 GET of `target` (sent as written, not normalized) with `host`: the status
    /// line, the headers and the body.
    pub fn get(&self, target: &str, host: &str) -> (u16, String, String) {
        let address = self.url.trim_start_matches("http://");
        let mut stream = TcpStream::connect(address).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        write!(
            stream,
            "GET {target} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).unwrap();
        let answer = String::from_utf8_lossy(&answer).into_owned();
        let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
        let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
        (status, head.to_lowercase(), body.to_string())
    }

    pub fn json(&self, target: &str) -> Value {
        let (status, _, body) = self.get(target, "127.0.0.1");
        assert_eq!(status, 200, "{target}: {body}");
        serde_json::from_str(&body).unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Serves `runs` in this process, on a free loopback port, from a thread of its own; where it
/// listens.
pub fn in_process(runs: &[PathBuf]) -> SocketAddr {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let viewer = Viewer::new(runs, addr).unwrap();
    std::thread::spawn(move || runtime.block_on(serve(viewer, listener)));
    addr
}
