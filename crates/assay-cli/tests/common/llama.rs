//! A real model behind a real OpenAI-compatible server: llama-cpp-python's server, serving
//! SmolLM2-135M-Instruct on the CPU, from assay's `llama-server` environment (set up in the
//! user's environments directory the first time, which builds llama-cpp-python from its sdist:
//! minutes; every later run reuses it). A test that cannot get it fails with the reason: a
//! real-model test must not pass without a real model.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use assay_pyenv::{Environment, SMOLLM2};

use super::set_up;

/// The name the server gives its model (`--model_alias`), which requests name.
pub const MODEL: &str = "smollm2";
/// How long a server may take to list its model (it takes about 5 s here).
const READY_WAIT: Duration = Duration::from_secs(120);

/// The `llama-server` environment, set up once.
pub fn environment() -> &'static Environment {
    static ENV: OnceLock<Environment> = OnceLock::new();
    ENV.get_or_init(|| set_up("llama-server"))
}

/// The command that serves SmolLM2 with a window of `n_ctx` tokens on `port`.
pub fn command(port: u16, n_ctx: u32) -> Vec<String> {
    let env = environment();
    let model: PathBuf = env.site_packages().join(SMOLLM2);
    vec![
        env.python().display().to_string(),
        "-m".into(),
        "llama_cpp.server".into(),
        "--model".into(),
        model.display().to_string(),
        "--host".into(),
        "127.0.0.1".into(),
        "--port".into(),
        port.to_string(),
        "--n_ctx".into(),
        n_ctx.to_string(),
        "--model_alias".into(),
        MODEL.into(),
    ]
}

/// A port nothing listens on now.
pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    listener.local_addr().unwrap().port()
}

/// What `GET /v1/models` on `port` answers: the status line and body, if anything answers.
pub fn models(port: u16) -> Option<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        stream,
        "GET /v1/models HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n"
    )
    .ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    answer.starts_with("HTTP/").then_some(answer)
}

/// A running server; killed (with `SIGKILL`) when dropped.
pub struct LlamaServer {
    child: Option<Child>,
    /// Where it listens.
    pub port: u16,
    n_ctx: u32,
    /// Its output (stdout and stderr), which a test may read (uvicorn logs every request).
    pub log: PathBuf,
}

impl LlamaServer {
    /// Starts a server with a window of `n_ctx` tokens, its output in `log`, and waits until
    /// it lists its model.
    pub fn start(n_ctx: u32, log: PathBuf) -> LlamaServer {
        let mut server = LlamaServer {
            child: None,
            port: free_port(),
            n_ctx,
            log,
        };
        server.restart();
        server
    }

    /// The base URL requests go to.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// Starts it again on the same port (after [`LlamaServer::kill`]), and waits until it
    /// lists its model.
    pub fn restart(&mut self) {
        let words = command(self.port, self.n_ctx);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .unwrap_or_else(|e| panic!("{}: {e}", self.log.display()));
        // A server the test runs, as a user would run it.
        #[allow(clippy::disallowed_methods)]
        let child = Command::new(&words[0])
            .args(&words[1..])
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("start the llama-cpp-python server: {e}"));
        self.child = Some(child);
        let deadline = Instant::now() + READY_WAIT;
        while !models(self.port).is_some_and(|a| a.contains(MODEL)) {
            if let Some(status) = self.child.as_mut().and_then(|c| c.try_wait().unwrap()) {
                panic!(
                    "the llama-cpp-python server exited ({status}) before it listed its model: {}",
                    self.log_text()
                );
            }
            assert!(
                Instant::now() < deadline,
                "the llama-cpp-python server did not list its model within {READY_WAIT:?}: {}",
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Kills it at once (`SIGKILL`), as a crash would.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Its output so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The chat completions it has answered (uvicorn's access log lines with 200).
    pub fn answered(&self) -> usize {
        self.log_text()
            .lines()
            .filter(|l| l.contains("\"POST /v1/chat/completions HTTP/1.1\" 200"))
            .count()
    }
}

impl Drop for LlamaServer {
    fn drop(&mut self) {
        self.kill();
    }
}
