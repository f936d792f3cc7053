//! `assay serve` on two replicas behind a proxy that routes as the Kubernetes recipe's Ingress
//! does (deploy/kubernetes/serve.yaml): a request with `X-Session-ID` to the replica a hash of
//! that id picks, any other round-robin. Two real servers (the `test` profile, one job each)
//! and the proxy in this test, over loopback: the same unittest jobs land on both replicas and
//! get the same verdicts there (each replica's `/metrics` counts its share); each session's
//! requests, the create included, land on the replica its id hashes to, which keeps its
//! variables from cell to cell, while the other replica has never heard of it.

mod common;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::service::{http, json_of, Server};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The longest one request may take, through the proxy or not.
const REQUEST_WAIT: Duration = Duration::from_secs(120);
/// The longest the whole exchange with both replicas may take.
const TEST_WAIT: Duration = Duration::from_secs(600);
/// The most a request's head may hold before the proxy gives up on it.
const HEAD_LIMIT: usize = 64 << 10;
/// The header that names a session.
const SESSION_HEADER: &str = "X-Session-ID";

/// A replica: `assay serve --port 0 --profile test --jobs 1` in `dir`, once it says where it
/// listens.
fn replica(dir: &Path) -> Server {
    Server::start(dir, &["--profile", "test", "--jobs", "1"], &[])
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
        json_of(&self.body)
    }

    fn text(&self) -> String {
        common::text(&self.body)
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
    let exchange = {
        let (method, path) = (method.to_string(), path.to_string());
        let (session, body) = (session.map(str::to_string), body.cloned());
        // A blocking exchange, on a thread of its own: the runtime's threads relay for the proxy.
        tokio::task::spawn_blocking(move || {
            let headers: Vec<(&str, &str)> = session
                .iter()
                .map(|id| (SESSION_HEADER, id.as_str()))
                .collect();
            http(addr, &method, &path, &headers, body.as_ref())
        })
    };
    let (status, _, body) = tokio::time::timeout(REQUEST_WAIT, exchange)
        .await
        .unwrap_or_else(|_| panic!("{method} {path} at {addr}: no answer within {REQUEST_WAIT:?}"))
        .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
    Answer { status, body }
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
async fn metrics(replica: &Server) -> String {
    let answer = call(replica.addr(), "GET", "/metrics", None, None).await;
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
    let replicas = [replica(dir.path()), replica(dir.path())];
    assert_ne!(replicas[0].addr(), replicas[1].addr());
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

async fn exchange(replicas: &[Server; 2]) {
    let (proxy, routed) = start_proxy(replicas.iter().map(|r| r.addr()).collect()).await;
    for replica in replicas {
        let health = call(replica.addr(), "GET", "/health", None, None).await;
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
        let held = call(holder.addr(), "GET", "/v1/sessions", None, None).await;
        assert_eq!(listed(&held), [(id.clone(), 3)], "replica {s}");
        let elsewhere = call(other.addr(), "GET", "/v1/sessions", None, None).await;
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
            other.addr(),
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
