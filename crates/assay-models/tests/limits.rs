//! The client's limits against a real HTTP server on loopback: concurrency that falls when
//! the server refuses for load and recovers when it copes, and per-minute budgets measured
//! where they matter, at the server.

mod mock;

use std::num::{NonZeroU32, NonZeroU64, NonZeroUsize};
use std::time::Duration;

use assay_models::{ApiKey, Backoff, Client, ClientConfig, Limits, Prompt, Request};
use assay_records::RunEvent;
use mock::{most_in_flight, most_within, MockServer, Recorded, Reply};
use tokio::task::JoinSet;

fn client(server: &MockServer, limits: Limits) -> Client {
    Client::new(ClientConfig {
        spec: "openai:m".parse().unwrap(),
        base_url: Some(server.openai_base()),
        api_key: Some(ApiKey::new("sk-limits-0123456789".into())),
        request_timeout: Duration::from_secs(10),
        retries: 20,
        backoff: Backoff {
            initial: Duration::from_millis(10),
            max: Duration::from_millis(50),
        },
        limits,
        reasoning: Default::default(),
        extra_body: Default::default(),
    })
    .unwrap()
}

fn limits(concurrency: usize, rpm: u32, tpm: u64) -> Limits {
    Limits {
        concurrency: NonZeroUsize::new(concurrency).unwrap(),
        requests_per_minute: NonZeroU32::new(rpm),
        tokens_per_minute: NonZeroU64::new(tpm),
    }
}

fn request() -> Request {
    Request {
        prompt: Prompt::user("p"),
        n: 1,
        temperature: 0.0,
        top_p: None,
        max_tokens: 64,
        stop: Vec::new(),
        frequency_penalty: None,
        presence_penalty: None,
    }
}

/// Sends `n` requests at once and checks that every one is answered.
async fn answer_all(client: &Client, n: usize) {
    let mut running = JoinSet::new();
    for _ in 0..n {
        let client = client.clone();
        running.spawn(async move { client.generate(&request()).await });
    }
    while let Some(done) = running.join_next().await {
        let response = done.unwrap().expect("every request is answered in the end");
        assert_eq!(response.texts, ["reply 0"]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrency_falls_on_429s_and_recovers() {
    let server = MockServer::start().await;
    server.delay_answers(Duration::from_millis(100));
    // Refusals take as long as answers, as over a network, so that the first eight are all at
    // the server at once however slowly a loaded runtime sends them; the wait outlasts them
    // both, so that what arrives after it was sent at the lowered limit.
    let wait = Duration::from_millis(300);
    server.limit_in_flight(
        2,
        Reply::openai_error(429, "requests", "rate_limit_exceeded", "Rate limit reached")
            .with_header("retry-after-ms", &wait.as_millis().to_string())
            .after(Duration::from_millis(100)),
    );
    let client = client(&server, limits(8, 0, 0));
    answer_all(&client, 24).await;
    let busy = server.requests();
    let first_refusal = busy.iter().find(|r| r.refused).expect("some 429s").received;
    let (first, later): (Vec<Recorded>, Vec<Recorded>) = busy
        .iter()
        .cloned()
        .partition(|r| r.received < first_refusal + wait);
    assert_eq!(most_in_flight(&first), 8, "it starts at --concurrency");
    // Once the server's wait is over: never the full eight again while it refuses.
    assert!(!later.is_empty());
    assert!(most_in_flight(&later) <= 4, "{:?}", in_flight(&later));
    let lowered = client.in_flight();
    let RunEvent::InFlight {
        requests,
        load: Some(load),
    } = &lowered
    else {
        panic!("{lowered:?}")
    };
    assert!(load.limit < 8, "{lowered:?}");
    assert_eq!(*requests, 0);

    // The server copes again: the limit climbs back to eight, and eight go at once.
    server.unlimit();
    answer_all(&client, 48).await;
    let calm = &server.requests()[busy.len()..];
    assert!(calm.iter().all(|r| !r.refused));
    assert_eq!(most_in_flight(calm), 8, "{:?}", in_flight(calm));
    assert_eq!(client.load().limit, 8);
}

fn in_flight(requests: &[Recorded]) -> Vec<usize> {
    requests.iter().map(|r| r.in_flight).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_per_minute_are_spread_evenly() {
    let server = MockServer::start().await;
    // 600 a minute: one every 100 ms, however many are waiting.
    let client = client(&server, limits(8, 600, 0));
    answer_all(&client, 12).await;
    let received: Vec<_> = server.requests().iter().map(|r| r.received).collect();
    assert_eq!(received.len(), 12);
    let span = received[11] - received[0];
    assert!(span >= Duration::from_millis(1050), "{span:?}");
    // No second holds more than its share (one more for a send the machine delayed).
    let within = most_within(&received, Duration::from_secs(1));
    assert!(within <= 11, "{within} requests within a second");
    assert!(client.load().per_minute > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_per_minute_count_what_answers_used() {
    let server = MockServer::start().await;
    // 9,000 a minute: 150 a second. Each request is estimated at 65 tokens (a one-character
    // prompt and 64 for the answer), 0.43 s of the budget; the mock reports 15 used (10 in,
    // 5 out), 0.1 s.
    let client = client(&server, limits(1, 0, 9000));
    for _ in 0..6 {
        client.generate(&request()).await.unwrap();
    }
    let received: Vec<_> = server.requests().iter().map(|r| r.received).collect();
    let span = received[5] - received[0];
    assert!(
        span >= Duration::from_millis(450) && span < Duration::from_millis(1500),
        "paced by the usage reported, not by the estimate: {span:?}"
    );
}
