//! What `/metrics` says, in the Prometheus text format: requests by route and status, the
//! queue, jobs running, verdicts by status, job seconds by kind, live sessions.

use assay_records::Status;
use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    route: String,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct VerdictLabels {
    kind: &'static str,
    status: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    kind: &'static str,
}

/// The service's counters and gauges.
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    verdicts: Family<VerdictLabels, Counter>,
    job_seconds: Family<KindLabels, Histogram>,
    queue_waiting: Gauge,
    jobs_running: Gauge,
    sessions_live: Gauge,
}

/// Job seconds from 10 ms to about 330 s, doubling.
fn job_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.01, 2.0, 16))
}

impl Metrics {
    /// Registers every metric, at zero.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("assay");
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "requests",
            "HTTP requests answered, by route and status",
            requests.clone(),
        );
        let verdicts = Family::<VerdictLabels, Counter>::default();
        registry.register(
            "verdicts",
            "Jobs judged, by kind (bigcodebench, unittest, run, cell) and status",
            verdicts.clone(),
        );
        let job_seconds =
            Family::<KindLabels, Histogram>::new_with_constructor(job_histogram as fn() -> _);
        registry.register(
            "job_seconds",
            "Wall-clock seconds of each job, by kind",
            job_seconds.clone(),
        );
        let queue_waiting = Gauge::default();
        registry.register(
            "queue_waiting",
            "Jobs admitted and waiting for the sandbox",
            queue_waiting.clone(),
        );
        let jobs_running = Gauge::default();
        registry.register(
            "jobs_running",
            "Jobs running in the sandbox",
            jobs_running.clone(),
        );
        let sessions_live = Gauge::default();
        registry.register(
            "sessions_live",
            "Interpreter sessions open",
            sessions_live.clone(),
        );
        Metrics {
            registry,
            requests,
            verdicts,
            job_seconds,
            queue_waiting,
            jobs_running,
            sessions_live,
        }
    }

    /// A request to `route` (its pattern, `/v1/sessions/{id}/execute`) answered `status`.
    pub fn request(&self, route: &str, status: u16) {
        self.requests
            .get_or_create(&RequestLabels {
                route: route.to_string(),
                status,
            })
            .inc();
    }

    /// A job of `kind` ended with `status` after `seconds`.
    pub fn job(&self, kind: &'static str, status: Status, seconds: f64) {
        self.verdicts
            .get_or_create(&VerdictLabels {
                kind,
                status: status.to_string(),
            })
            .inc();
        self.job_seconds
            .get_or_create(&KindLabels { kind })
            .observe(seconds);
    }

    /// The text a scraper reads, with the gauges read now: `admitted` jobs (running or
    /// waiting), `running` in the sandbox (reference runs and sessions' cells included).
    pub fn render(&self, admitted: usize, running: usize, sessions: usize) -> String {
        self.queue_waiting
            .set(admitted.saturating_sub(running) as i64);
        self.jobs_running.set(running as i64);
        self.sessions_live.set(sessions as i64);
        let mut text = String::new();
        encode(&mut text, &self.registry).expect("writing to a String cannot fail");
        text
    }
}
