//! A real headless browser for the page tests: Debian's chromium, found on `PATH` or installed
//! with apt-get (as root, as CI runs), driven over the DevTools protocol so that a test can
//! type into a page as a user does, wait for what the page shows, and hear every console
//! message, uncaught exception and policy violation. A test that cannot get its browser fails
//! with the reason: a browser test must not pass without one.

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{json, Value};
use tungstenite::{Message, WebSocket};

use super::{apt_install, find_program};

/// Chromium's path: on `PATH`, else installed with apt-get (within a time bound).
pub fn chromium() -> PathBuf {
    let found = || {
        ["chromium", "chromium-browser"]
            .into_iter()
            .find_map(find_program)
    };
    if let Some(path) = found() {
        return path;
    }
    apt_install(&["chromium"], &["chromium"]);
    found().expect("chromium, installed")
}

/// The flags every headless run needs here (no GPU, no sandbox as root, small /dev/shm).
pub const HEADLESS: [&str; 4] = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
];

/// How long any one wait on the browser may take.
const WAIT: Duration = Duration::from_secs(30);

/// A browser with one page, driven over the DevTools protocol.
pub struct Browser {
    child: Child,
    socket: WebSocket<TcpStream>,
    session: String,
    next_id: u64,
    /// Console messages, exceptions and log entries (policy violations, failed loads) the
    /// page produced, as `level: text`.
    pub console: Vec<String>,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Starts chromium with one blank page of `width` × `height`.
    pub fn start(width: u32, height: u32) -> Browser {
        let profile = tempfile::tempdir().unwrap();
        #[allow(clippy::disallowed_methods)] // the browser is started as a user would start it
        let mut child = Command::new(chromium())
            .args(HEADLESS)
            .arg("--remote-debugging-port=0")
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start chromium");
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut seen = String::new();
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(url) = line.strip_prefix("DevTools listening on ") {
                    let _ = tx.send(Ok(url.to_string()));
                }
                seen.push_str(&line);
                seen.push('\n');
            }
            let _ = tx.send(Err(seen));
        });
        let url = match rx.recv_timeout(WAIT) {
            Ok(Ok(url)) => url,
            Ok(Err(log)) => panic!("chromium ended before it listened:\n{log}"),
            Err(_) => panic!("chromium did not listen within {WAIT:?}"),
        };
        let address = url
            .strip_prefix("ws://")
            .and_then(|rest| rest.split('/').next())
            .unwrap_or_else(|| panic!("chromium's address: {url}"));
        let stream = TcpStream::connect(address).expect("connect to chromium");
        stream.set_read_timeout(Some(WAIT)).unwrap();
        let (socket, _) = tungstenite::client(url.as_str(), stream).expect("talk to chromium");
        let mut browser = Browser {
            child,
            socket,
            session: String::new(),
            next_id: 0,
            console: Vec::new(),
            _profile: profile,
        };
        let target = browser.call("Target.createTarget", json!({"url": "about:blank"}));
        let attached = browser.call(
            "Target.attachToTarget",
            json!({"targetId": target["targetId"], "flatten": true}),
        );
        browser.session = attached["sessionId"].as_str().unwrap().to_string();
        for domain in ["Page.enable", "Runtime.enable", "Log.enable"] {
            browser.call(domain, json!({}));
        }
        browser.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}),
        );
        browser
    }

    /// Sends a command (to the page once attached) and returns its result, keeping the events
    /// that arrive meanwhile.
    fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({"id": id, "method": method, "params": params});
        if !self.session.is_empty() {
            message["sessionId"] = json!(self.session);
        }
        self.socket
            .send(Message::text(message.to_string()))
            .expect("send to chromium");
        let deadline = Instant::now() + WAIT;
        loop {
            assert!(
                Instant::now() < deadline,
                "chromium did not answer {method}"
            );
            let reply = match self.socket.read().expect("read from chromium") {
                Message::Text(t) => serde_json::from_str::<Value>(t.as_str()).unwrap(),
                _ => continue,
            };
            if reply["id"] == id {
                if let Some(error) = reply.get("error") {
                    panic!("chromium refused {method}: {error}");
                }
                return reply["result"].clone();
            }
            self.keep_event(&reply);
        }
    }

    fn keep_event(&mut self, event: &Value) {
        let params = &event["params"];
        match event["method"].as_str() {
            Some("Runtime.consoleAPICalled") => {
                let args: Vec<String> = params["args"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|a| a["value"].to_string())
                    .collect();
                self.console
                    .push(format!("console.{}: {}", params["type"], args.join(" ")));
            }
            Some("Runtime.exceptionThrown") => self.console.push(format!(
                "exception: {}",
                params["exceptionDetails"]["exception"]["description"]
            )),
            Some("Log.entryAdded") => self.console.push(format!(
                "{}: {}",
                params["entry"]["level"], params["entry"]["text"]
            )),
            _ => {}
        }
    }

    /// Opens `url`.
    pub fn goto(&mut self, url: &str) {
        self.call("Page.navigate", json!({"url": url}));
    }

    /// Evaluates `expression` in the page (promises awaited) and returns its value.
    pub fn eval(&mut self, expression: &str) -> Value {
        let result = self.call(
            "Runtime.evaluate",
            json!({"expression": expression, "awaitPromise": true, "returnByValue": true}),
        );
        if let Some(details) = result.get("exceptionDetails") {
            panic!("{expression}: {details}");
        }
        result["result"]["value"].clone()
    }

    /// Waits until `condition` (an expression) is true in the page; fails naming it and the
    /// page's text when it does not become so in time.
    pub fn wait_for(&mut self, condition: &str) {
        let deadline = Instant::now() + WAIT;
        while Instant::now() < deadline {
            // The page may be between documents: not yet is not an error.
            let probe = format!(
                "(() => {{ try {{ return Boolean({condition}); }} catch {{ return false; }} }})()"
            );
            if self.eval(&probe) == json!(true) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let page = self.text();
        panic!("the page never satisfied `{condition}`; it shows:\n{page}");
    }

    /// The page's visible text.
    pub fn text(&mut self) -> String {
        self.eval("document.body ? document.body.innerText : ''")
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// Fails unless the page has said nothing on its console (no message, exception or
    /// refused load) since it was started.
    pub fn assert_silent(&mut self) {
        self.eval("1"); // collects what the page said meanwhile
        assert!(
            self.console.is_empty(),
            "the page spoke: {:#?}",
            self.console
        );
    }

    /// Types `value` into the input `selector` as a user does (an `input` event per change).
    pub fn type_into(&mut self, selector: &str, value: &str) {
        let script = format!(
            "(() => {{ const e = document.querySelector({s}); e.focus(); e.value = {v}; \
             e.dispatchEvent(new Event('input', {{bubbles: true}})); return true; }})()",
            s = json!(selector),
            v = json!(value)
        );
        assert_eq!(self.eval(&script), json!(true), "{selector}");
    }

    /// Chooses `value` in the select `selector` (a `change` event).
    pub fn choose(&mut self, selector: &str, value: &str) {
        let script = format!(
            "(() => {{ const e = document.querySelector({s}); e.value = {v}; \
             e.dispatchEvent(new Event('change', {{bubbles: true}})); return e.value; }})()",
            s = json!(selector),
            v = json!(value)
        );
        assert_eq!(
            self.eval(&script),
            json!(value),
            "{selector} has no {value}"
        );
    }

    /// Writes a screenshot of the whole page to `path`.
    pub fn screenshot(&mut self, path: &Path) {
        // From the top, so that the sticky header is drawn where the user sees it.
        self.eval("scrollTo(0, 0), true");
        let shot = self.call(
            "Page.captureScreenshot",
            json!({"format": "png", "captureBeyondViewport": true}),
        );
        let png = base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().unwrap())
            .unwrap();
        assert!(png.starts_with(b"\x89PNG"));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, png).unwrap();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Fails unless `page` (a page's text) shows every one of `expected`, naming what it lacks.
pub fn assert_contains(page: &str, expected: &[&str]) {
    for part in expected {
        assert!(page.contains(part), "{part:?} is not on the page:\n{page}");
    }
}

/// Where page tests write their screenshots: `ASSAY_SCREENSHOTS`, else `screenshots/` in the
/// build's scratch space.
pub fn screenshots() -> PathBuf {
    std::env::var_os("ASSAY_SCREENSHOTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("screenshots"))
}
