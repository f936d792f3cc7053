//! `assay serve` on two replicas behind a proxy that routes as the Kubernetes recipe's Ingress
//! does (deploy/kubernetes/serve.yaml): a request with `X-Session-ID` to the replica a hash of
//! that id picks, any other round-robin. Two real servers (the `test` profile, one job each)
//! and the proxy in this test, over loopback: the same unittest jobs land on both replicas and
//! get the same verdicts there (each replica's `/metrics` counts its share); each session's
//! requests, the create included, land on the replica its id hashes to, which keeps its
//! variables from cell to cell, while the other replica has never heard of it.

mod common;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// How long a replica may take to print its listening line (the `test` environment is set
/// up already: seconds).
const START_WAIT: Duration = Duration::from_secs(300);
/// How long a stopped replica may take to exit before it is killed.
const STOP_WAIT: Duration = Duration::from_secs(30);
/// The longest one request may take, through the proxy or not.
const REQUEST_WAIT: Duration = Duration::from_secs(120);
/// The longest the whole exchange with both replicas may take.
const TEST_WAIT: Duration = Duration::from_secs(600);
/// The most a request's head may hold before the proxy gives up on it.
const HEAD_LIMIT: usize = 64 << 10;
/// The header that names a session.
const SESSION_HEADER: &str = "X-Session-ID";

/// One `assay serve` process, stopped (SIGTERM, then SIGKILL) when dropped.
struct Replica {
    child: Child,
    addr: SocketAddr,
    stderr: PathBuf,
}

impl Replica {
    /// `assay serve --port 0 --profile test --jobs 1` in `dir`, once it says where it listens.
    fn start(dir: &Path, name: &str) -> Replica {
        let stderr = dir.join(format!("{name}.stderr"));
        let child = common::assay_command(dir)
            .args(["serve", "--port", "0", "--profile", "test", "--jobs", "1"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .expect("start assay serve");
        let mut replica = Replica {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            stderr,
        };
        let stdout = replica.child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
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
                    replica.addr = line
                        .strip_prefix("assay serve: listening on http://")
                        .and_then(|a| a.strip_suffix('/'))
                        .and_then(|a| a.parse().ok())
                        .unwrap_or_else(|| {
                            panic!(
                                "replica {name} printed {line:?}, not its listening line: {}",
                                replica.log()
                            )
                        });
                    assert!(replica.addr.ip().is_loopback(), "{}", replica.addr);
                    return replica;
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    if let Some(status) = replica.child.try_wait().unwrap() {
                        panic!("replica {name} exited ({status}): {}", replica.log());
                    }
                    assert!(
                        Instant::now() < deadline,
                        "replica {name} did not listen within {START_WAIT:?}: {}",
                        replica.log()
                    );
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    panic!("replica {name} closed its output: {}", replica.log())
                }
            }
        }
    }

    /// What it said on standard error.
    fn log(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }
}

impl Drop for Replica {
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

/// The replica a session id goes to: FNV-1a of the id, modulo the replicas.
fn replica_for(id: &str, replicas: usize) -> usize {
    let hash = id.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    (hash % replicas as u64) as usize
}

/// Where the proxy sent one request.
#[derive(Debug, Clone)]
struct Routed {
    /// Its request line.
    line: String,
    /// Its `X-Session-ID`, if any.
    session: Option<String>,
    /// The replica it went to.
    replica: usize,
}

/// A loopback proxy in front of `backends`: each connection's request head is read, the
/// backend picked (by `X-Session-ID` when there is one, else the next in turn), and the
/// bytes relayed both ways. What it routed, in order.
async fn start_proxy(backends: Vec<SocketAddr>) -> (SocketAddr, Arc<Mutex<Vec<Routed>>>) {
    let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let routed = Arc::new(Mutex::new(Vec::new()));
    let log = routed.clone();
    let turn = Arc::new(AtomicUsize::new(0));
    tokio::spawn(async move {
        loop {
            let Ok((client, _)) = listener.accept().await else {
                continue;
            };
            let (backends, log, turn) = (backends.clone(), log.clone(), turn.clone());
            tokio::spawn(async move {
                if let Err(e) = relay(client, &backends, &log, &turn).await {
                    eprintln!("proxy: {e}");
                }
            });
        }
    });
    (addr, routed)
}

/// One connection through the proxy.
async fn relay(
    mut client: TcpStream,
    backends: &[SocketAddr],
    log: &Mutex<Vec<Routed>>,
    turn: &AtomicUsize,
) -> std::io::Result<()> {
    let mut head = Vec::new();
    let mut buf = [0u8; 8192];
    let end = loop {
        if let Some(end) = head.windows(4).position(|w| w == b"\r\n\r\n") {
            break end;
        }
        if head.len() > HEAD_LIMIT {
            return Err(std::io::Error::other("a request head past 64 KiB"));
        }
        let n = client.read(&mut buf).await?;
        if n == 0 {
            return Err(std::io::Error::other(
                "the client left before its head ended",
            ));
        }
        head.extend_from_slice(&buf[..n]);
    };
    let text = String::from_utf8_lossy(&head[..end]).into_owned();
    let line = text.lines().next().unwrap_or_default().to_string();
    let session = text.lines().skip(1).find_map(|h| {
        let (name, value) = h.split_once(':')?;
        name.trim()
            .eq_ignore_ascii_case(SESSION_HEADER)
            .then(|| value.trim().to_string())
    });
    let replica = match &session {
        Some(id) => replica_for(id, backends.len()),
        None => turn.fetch_add(1, Ordering::Relaxed) % backends.len(),
    };
    log.lock().unwrap().push(Routed {
        line,
        session,
        replica,
    });
    let mut upstream = TcpStream::connect(backends[replica]).await?;
    // The head and whatever of the body came with it, then the rest both ways.
    upstream.write_all(&head).await?;
    tokio::io::copy_bidirectional(&mut client, &mut upstream).await?;
    Ok(())
}

/// An HTTP answer.
struct Answer {
    status: u16,
    body: Vec<u8>,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// `method path` to `addr` over HTTP/1.1 on a connection of its own, which it closes; with a
/// JSON body and an `X-Session-ID` if given. Bounded by [`REQUEST_WAIT`].
async fn call(
    addr: SocketAddr,
    method: &str,
    path: &str,
    session: Option<&str>,
    body: Option<&Value>,
) -> Answer {
    let exchange = async {
        let mut stream = TcpStream::connect(addr).await?;
        let body = body.map(Value::to_string).unwrap_or_default();
        let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
        if method != "GET" {
            head += &format!(
                "Content-Type: application/json\r\nContent-Length: {}\r\n",
                body.len()
            );
        }
        if let Some(id) = session {
            head += &format!("{SESSION_HEADER}: {id}\r\n");
        }
        head += "\r\n";
        stream.write_all(head.as_bytes()).await?;
        stream.write_all(body.as_bytes()).await?;
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).await?;
        Ok::<_, std::io::Error>(raw)
    };
    let raw = tokio::time::timeout(REQUEST_WAIT, exchange)
        .await
        .unwrap_or_else(|_| panic!("{method} {path} at {addr}: no answer within {REQUEST_WAIT:?}"))
        .unwrap_or_else(|e| panic!("{method} {path} at {addr}: {e}"));
    parse_answer(&raw).unwrap_or_else(|| {
        panic!(
            "{method} {path} at {addr}: not an HTTP answer: {:?}",
            String::from_utf8_lossy(&raw)
        )
    })
}

/// A whole HTTP/1.1 answer read to the connection's end: status and body (de-chunked).
fn parse_answer(raw: &[u8]) -> Option<Answer> {
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&raw[..end]).ok()?;
    let mut lines = head.split("\r\n");
    let status = lines.next()?.split(' ').nth(1)?.parse().ok()?;
    let mut chunked = false;
    let mut length = None;
    for line in lines {
        let (name, value) = line.split_once(':')?;
        let value = value.trim();
        if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value.eq_ignore_ascii_case("chunked");
        } else if name.eq_ignore_ascii_case("content-length") {
            length = value.parse::<usize>().ok();
        }
    }
    let mut rest = &raw[end + 4..];
    let body = if chunked {
        let mut body = Vec::new();
        loop {
            let eol = rest.windows(2).position(|w| w == b"\r\n")?;
            let size = std::str::from_utf8(&rest[..eol]).ok()?;
            let size = usize::from_str_radix(size.split(';').next()?.trim(), 16).ok()?;
            rest = &rest[eol + 2..];
            if size == 0 {
                break body;
            }
            body.extend_from_slice(rest.get(..size)?);
            rest = rest.get(size + 2..)?;
        }
    } else {
        rest[..length.unwrap_or(rest.len()).min(rest.len())].to_vec()
    };
    Some(Answer { status, body })
}

/// The sum of a Prometheus text exposition's samples of `name` whose labels include every
/// one of `labels`.
fn sample(metrics: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    metrics
        .lines()
        .filter_map(|line| {
            let rest = line.strip_prefix(name)?;
            let (found, value) = match rest.strip_prefix('{') {
                Some(rest) => parse_labels(rest)?,
                None => (Vec::new(), rest),
            };
            let value: f64 = value.split_whitespace().next()?.parse().ok()?;
            labels
                .iter()
                .all(|(k, v)| found.iter().any(|(fk, fv)| fk == k && fv == v))
                .then_some(value)
        })
        .fold(0.0, |sum, v| sum + v)
}

/// `k="v",...}` (values may hold braces and escaped quotes): the labels and what follows.
fn parse_labels(mut rest: &str) -> Option<(Vec<(String, String)>, &str)> {
    let mut labels = Vec::new();
    loop {
        if let Some(after) = rest.strip_prefix('}') {
            return Some((labels, after));
        }
        let (key, after) = rest.split_once("=\"")?;
        let mut value = String::new();
        let mut chars = after.char_indices();
        let close = loop {
            match chars.next()? {
                (_, '\\') => value.push(chars.next()?.1),
                (i, '"') => break i,
                (_, c) => value.push(c),
            }
        };
        labels.push((key.trim_start_matches(',').to_string(), value));
        rest = &after[close + 1..];
        rest = rest.strip_prefix(',').unwrap_or(rest);
    }
}

/// A replica's `/metrics`, asked directly.
async fn metrics(replica: &Replica) -> String {
    let answer = call(replica.addr, "GET", "/metrics", None, None).await;
    assert_eq!(answer.status, 200, "{}", answer.text());
    answer.text()
}

/// Each test's name and result.
fn results(verdict: &Value) -> Vec<(String, String)> {
    let mut results: Vec<(String, String)> = verdict["tests"]
        .as_array()
        .unwrap_or_else(|| panic!("no tests: {verdict}"))
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap().to_string(),
                t["result"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    results.sort();
    results
}

/// Tests of `add`: one the wrong answer passes, one it fails.
const TESTS: &str = "import unittest\n\nclass TestCases(unittest.TestCase):\n    def test_sum(self):\n        self.assertEqual(add(2, 3), 5)\n\n    def test_zero(self):\n        self.assertEqual(add(-1, 1), 0)\n";

#[test]
fn verdicts_spread_over_replicas_and_each_session_stays_on_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let replicas = [
        Replica::start(dir.path(), "replica-0"),
        Replica::start(dir.path(), "replica-1"),
    ];
    assert_ne!(replicas[0].addr, replicas[1].addr);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        tokio::time::timeout(TEST_WAIT, exchange(&replicas))
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "the exchange took longer than {TEST_WAIT:?}; replica 0: {}\nreplica 1: {}",
                    replicas[0].log(),
                    replicas[1].log()
                )
            })
    });
}

async fn exchange(replicas: &[Replica; 2]) {
    let (proxy, routed) = start_proxy(replicas.iter().map(|r| r.addr).collect()).await;
    for replica in replicas {
        let health = call(replica.addr, "GET", "/health", None, None).await;
        assert_eq!(health.status, 200, "{}", health.text());
        assert_eq!(health.json()["profile"], "test", "{}", health.text());
    }

    // (a) The same unittest jobs, each sent twice in a row a few times: round-robin puts
    // every job on both replicas, whatever the turn.
    let passing = json!({"code": "def add(a, b):\n    return a + b\n", "test": TESTS});
    let failing = json!({"code": "def add(a, b):\n    return a + b + (a > 0)\n", "test": TESTS});
    const ROUNDS: usize = 3;
    let mut verdicts: Vec<(&str, Value)> = Vec::new();
    for round in 0..ROUNDS {
        for (kind, job) in [("passing", &passing), ("failing", &failing)] {
            for copy in 0..2 {
                let mut job = job.clone();
                job["id"] = json!(format!("{kind}-{round}-{copy}"));
                let answer = call(proxy, "POST", "/v1/unittest", None, Some(&job)).await;
                assert_eq!(answer.status, 200, "{kind}: {}", answer.text());
                let verdict = answer.json();
                assert_eq!(verdict["id"], job["id"]);
                verdicts.push((kind, verdict));
            }
        }
    }
    for (kind, verdict) in &verdicts {
        let (status, expected) = match *kind {
            "passing" => ("pass", [("test_sum", "pass"), ("test_zero", "pass")]),
            _ => ("fail", [("test_sum", "fail"), ("test_zero", "pass")]),
        };
        assert_eq!(verdict["status"], status, "{kind}: {verdict}");
        assert_eq!(verdict["official_status"], status, "{kind}: {verdict}");
        let expected: Vec<(String, String)> = expected
            .iter()
            .map(|(n, r)| (n.to_string(), r.to_string()))
            .collect();
        assert_eq!(results(verdict), expected, "{kind}: {verdict}");
    }
    // Each replica counted its share, and judged both jobs, alike.
    let jobs = (2 * 2 * ROUNDS) as f64;
    let mut counted = 0.0;
    for (i, replica) in replicas.iter().enumerate() {
        let text = metrics(replica).await;
        let requests = sample(
            &text,
            "assay_requests_total",
            &[("route", "/v1/unittest"), ("status", "200")],
        );
        let passed = sample(
            &text,
            "assay_verdicts_total",
            &[("kind", "unittest"), ("status", "pass")],
        );
        let failed = sample(
            &text,
            "assay_verdicts_total",
            &[("kind", "unittest"), ("status", "fail")],
        );
        assert!(
            passed >= 1.0 && failed >= 1.0,
            "replica {i} did not judge both jobs (pass {passed}, fail {failed}): {text}"
        );
        assert_eq!(requests, passed + failed, "replica {i}: {text}");
        counted += requests;
    }
    assert_eq!(
        counted, jobs,
        "the replicas' counts do not add up to the jobs sent"
    );

    // (b) Two sessions, ids chosen so that one hashes to each replica, their requests
    // interleaved: each keeps its own variables, on its own replica.
    let id_for = |replica: usize| {
        (0..)
            .map(|n| format!("replicas-session-{n}"))
            .find(|id| replica_for(id, 2) == replica)
            .unwrap()
    };
    let ids = [id_for(0), id_for(1)];
    // Who speaks when: an irregular order (round-robin would split each session), a stateless
    // request among them. A session's first request opens it, with its id only in the header,
    // as an ingress that routes by it needs; the rest are its cells.
    const ORDER: [Option<usize>; 9] = [
        Some(0),
        Some(1),
        Some(0),
        Some(0),
        None,
        Some(1),
        Some(0),
        Some(1),
        Some(1),
    ];
    let cells: [[&str; 3]; 2] = [["x = 41", "x += 1", "x"], ["x = 'b'", "x *= 3", "x"]];
    let mut said = [0usize; 2];
    let mut last = [Value::Null, Value::Null];
    for turn in ORDER {
        let Some(s) = turn else {
            let health = call(proxy, "GET", "/health", None, None).await;
            assert_eq!(health.status, 200, "{}", health.text());
            continue;
        };
        let id = &ids[s];
        if said[s] == 0 {
            let created = call(proxy, "POST", "/v1/sessions", Some(id), Some(&json!({}))).await;
            assert_eq!(
                created.status,
                200,
                "opening session {id}: {} (sessions need IPython, which the `test` \
                 environment must have)",
                created.text()
            );
            assert_eq!(created.json()["session_id"], id.as_str());
        } else {
            let step = said[s] - 1;
            let path = format!("/v1/sessions/{id}/execute");
            let body = json!({"code": cells[s][step]});
            let answer = call(proxy, "POST", &path, Some(id), Some(&body)).await;
            assert_eq!(answer.status, 200, "{id}, cell {step}: {}", answer.text());
            let outcome = answer.json();
            assert_eq!(outcome["status"], "pass", "{id}, cell {step}: {outcome}");
            last[s] = outcome;
        }
        said[s] += 1;
    }
    assert_eq!(said, [4, 4]);
    assert_eq!(last[0]["result"], "42", "{}", last[0]);
    assert_eq!(last[1]["result"], "'bbb'", "{}", last[1]);

    // Every request of a session went to the replica its id hashes to...
    let log = routed.lock().unwrap().clone();
    for (s, id) in ids.iter().enumerate() {
        let sent: Vec<&Routed> = log
            .iter()
            .filter(|r| r.session.as_deref() == Some(id.as_str()))
            .collect();
        let lines: Vec<&str> = sent.iter().map(|r| r.line.as_str()).collect();
        let execute = format!("POST /v1/sessions/{id}/execute HTTP/1.1");
        assert_eq!(
            lines,
            ["POST /v1/sessions HTTP/1.1", &execute, &execute, &execute],
            "{sent:?}"
        );
        assert!(sent.iter().all(|r| r.replica == s), "{sent:?}");
    }
    // ...which holds it, with its cells, and the other has none of it: it does not list it,
    // counted only the other session's cells, and answers 404 for it.
    for (s, id) in ids.iter().enumerate() {
        let holder = &replicas[s];
        let other = &replicas[1 - s];
        let listed = |answer: &Answer| -> Vec<(String, u64)> {
            answer.json()["sessions"]
                .as_array()
                .unwrap_or_else(|| panic!("{}", answer.text()))
                .iter()
                .map(|l| {
                    (
                        l["session_id"].as_str().unwrap().to_string(),
                        l["cells"].as_u64().unwrap(),
                    )
                })
                .collect()
        };
        let held = call(holder.addr, "GET", "/v1/sessions", None, None).await;
        assert_eq!(listed(&held), [(id.clone(), 3)], "replica {s}");
        let elsewhere = call(other.addr, "GET", "/v1/sessions", None, None).await;
        assert!(
            !listed(&elsewhere).iter().any(|(l, _)| l == id),
            "replica {} lists {id}: {}",
            1 - s,
            elsewhere.text()
        );
        let text = metrics(holder).await;
        let executed = sample(
            &text,
            "assay_requests_total",
            &[("route", "/v1/sessions/{id}/execute"), ("status", "200")],
        );
        assert_eq!(
            executed, 3.0,
            "replica {s} ran other cells than {id}'s: {text}"
        );
        assert_eq!(
            sample(&text, "assay_verdicts_total", &[("kind", "cell")]),
            3.0,
            "replica {s}: {text}"
        );
        assert_eq!(sample(&text, "assay_sessions_live", &[]), 1.0, "{text}");
    }
    for (s, id) in ids.iter().enumerate() {
        let other = &replicas[1 - s];
        let path = format!("/v1/sessions/{id}/execute");
        let answer = call(
            other.addr,
            "POST",
            &path,
            Some(id),
            Some(&json!({"code": "x"})),
        )
        .await;
        assert_eq!(
            answer.status,
            404,
            "replica {} ran {id}: {}",
            1 - s,
            answer.text()
        );
        assert!(answer.text().contains("no session"), "{}", answer.text());
    }

    // Closed through the proxy too, each on its replica.
    for (s, id) in ids.iter().enumerate() {
        let path = format!("/v1/sessions/{id}");
        let answer = call(proxy, "DELETE", &path, Some(id), None).await;
        assert_eq!(answer.status, 200, "{id}: {}", answer.text());
        assert_eq!(answer.json()["deleted"], true);
        let text = metrics(&replicas[s]).await;
        assert_eq!(sample(&text, "assay_sessions_live", &[]), 0.0, "{text}");
    }
}
