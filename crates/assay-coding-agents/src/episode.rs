//! One episode: an installed agent run confined on one prompt, its model requests served by a
//! gateway that only its sandbox can reach, until it exits, its wall time is up, or the
//! gateway stops serving it (a budget spent, the context full, the model failed).

use std::collections::BTreeMap;
use std::io;
use std::path::Path;

use assay_gateway::{Budget, Exchange, ExchangeHook, Gateway, GatewayConfig, Stop, Totals};
use assay_models::Client;
use assay_sandbox::{CommandJob, Connections, Engine, InputFile, Limits, ScriptOutcome};
use tokio::net::TcpStream;

use crate::declaration::{Answer, Values};
use crate::Installed;

/// The port the agent's gateway has on its sandbox's loopback (its own network namespace: no
/// other episode's, and nothing else listens there).
const GATEWAY_PORT: u16 = 4000;

/// The gateway's port for an episode in `engine`: [`GATEWAY_PORT`] in a network namespace of
/// its own; without one (a kernel without namespaces, or `--allow-network`), the host's
/// loopback is shared with every other episode, so a port free there now.
fn gateway_port(engine: &Engine) -> u16 {
    if engine.isolation().layers.net_ns {
        return GATEWAY_PORT;
    }
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_or(GATEWAY_PORT, |a| a.port())
}

/// The model an agent is given.
#[derive(Clone)]
pub struct ModelAccess {
    /// The user's model (it holds the real key).
    pub client: Client,
    /// The model name the agent is told and answered with.
    pub name: String,
    /// The temperature when the agent sends none.
    pub temperature: f64,
    /// The most tokens a reply may have.
    pub max_tokens: u32,
}

/// One task for the agent.
#[derive(Debug, Clone)]
pub struct EpisodeSpec {
    /// What it is asked.
    pub prompt: String,
    /// Files in its working directory.
    pub files: Vec<InputFile>,
    /// Empty folders in its working directory.
    pub dirs: Vec<String>,
    /// The sandbox's limits; `wall` bounds the whole episode.
    pub limits: Limits,
    /// What its model requests may spend (requests, tokens, wall).
    pub budget: Budget,
    /// The turn limit, for agents that have one of their own.
    pub max_turns: u32,
}

/// How an episode ended.
#[derive(Debug)]
pub struct Episode {
    /// The agent's process: exit, output, the files it left in its working directory.
    pub outcome: ScriptOutcome,
    /// Why the gateway stopped serving it, if it did (the agent was then ended).
    pub stop: Option<Stop>,
    /// Its model requests, in order.
    pub exchanges: Vec<Exchange>,
    /// What they used.
    pub totals: Totals,
    /// Its final answer, read where its declaration says.
    pub answer: String,
    /// Wall time of the whole episode: taking a sandbox, the agent's run, its files read
    /// back, the gateway shut down.
    pub seconds: f64,
}

/// Where an episode's time went, as `timing.json` keeps it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Timing {
    /// The whole episode ([`Episode::seconds`]).
    pub episode_seconds: f64,
    /// The agent's job, from its start to its end: the agent's own time, its commands' and
    /// its waits on the model.
    pub job_seconds: f64,
    /// Model requests answered.
    pub requests: usize,
    /// The model's API, over every request.
    pub model_seconds: f64,
    /// The gateway's own, over every request: reading, translating, replying.
    pub gateway_seconds: f64,
}

impl Episode {
    /// Where its time went.
    pub fn timing(&self) -> Timing {
        let answered = self.exchanges.iter().filter(|e| e.error.is_none());
        let (requests, model, total) = answered.fold((0, 0.0, 0.0), |(n, m, t), e| {
            (n + 1, m + e.model_seconds, t + e.latency_seconds)
        });
        Timing {
            episode_seconds: self.seconds,
            job_seconds: self.outcome.usage.wall.as_secs_f64(),
            requests,
            model_seconds: model,
            gateway_seconds: total - model,
        }
    }

    /// Writes the episode's record into `dir` (made if missing): `exchanges.jsonl`, every
    /// model request as the gateway answered it, `timing.json` ([`Timing`]), and the agent's
    /// `stdout.txt` and `stderr.txt`.
    pub fn keep(&self, dir: &Path) -> io::Result<()> {
        std::fs::create_dir_all(dir)?;
        let mut lines = String::new();
        for exchange in &self.exchanges {
            lines.push_str(&serde_json::to_string(exchange).map_err(io::Error::other)?);
            lines.push('\n');
        }
        std::fs::write(dir.join("exchanges.jsonl"), lines)?;
        let timing = serde_json::to_string_pretty(&self.timing()).map_err(io::Error::other)?;
        std::fs::write(dir.join("timing.json"), timing)?;
        std::fs::write(dir.join("stdout.txt"), &self.outcome.stdout.text)?;
        std::fs::write(dir.join("stderr.txt"), &self.outcome.stderr.text)
    }
}

/// The connections a sandboxed agent makes to its gateway, as an HTTP server's listener.
struct Relayed(Connections);

impl axum::serve::Listener for Relayed {
    type Io = TcpStream;
    type Addr = &'static str;

    async fn accept(&mut self) -> (TcpStream, &'static str) {
        match self.0.accept().await {
            Some(stream) => (stream, "the agent's sandbox"),
            // The agent's job is over: nothing more will come (the gateway is shut down next).
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> io::Result<&'static str> {
        Ok("the agent's sandbox")
    }
}

/// A credential only this episode's agent holds: the gateway answers nothing else.
fn placeholder_token() -> String {
    let mut bytes = [0u8; 16];
    for b in &mut bytes {
        *b = fastrand::u8(..);
    }
    format!(
        "assay-{}",
        blake3::hash(&bytes)
            .to_hex()
            .as_str()
            .get(..32)
            .unwrap_or("")
    )
}

/// Runs `agent` on `spec` in `engine`'s sandbox, its model reached through a gateway to
/// `model`; `on_exchange` hears each request as it finishes. `benchmark_bin`: the benchmark's
/// Python environment's `bin`, first on the agent's `PATH`.
pub async fn run_episode(
    engine: &Engine,
    agent: &Installed,
    model: &ModelAccess,
    spec: &EpisodeSpec,
    benchmark_bin: &Path,
    on_exchange: Option<ExchangeHook>,
) -> Episode {
    let started = std::time::Instant::now();
    let declaration = &agent.declaration;
    let token = placeholder_token();
    let port = gateway_port(engine);
    let base_url = format!("http://127.0.0.1:{port}");
    let values = Values {
        prompt: &spec.prompt,
        model: &model.name,
        base_url: &base_url,
        token: &token,
        max_turns: spec.max_turns,
    };
    let run = &declaration.run;
    let mut job = CommandJob::new(run.argv.iter().map(|a| values.render(a)).collect());
    job.files = spec.files.clone();
    job.dirs = spec.dirs.clone();
    job.limits = Some(spec.limits.clone());
    job.relay = Some(port);
    job.home_files = run
        .home_files
        .iter()
        .map(|(path, text)| InputFile {
            path: path.clone(),
            data: values.render(text).into_bytes(),
        })
        .collect();
    let path = agent_path(agent, benchmark_bin);
    // A login shell (Codex runs its commands in one) reads /etc/profile, which sets PATH
    // anew: its own profile puts the benchmark's Python back in front.
    let profile = format!("export PATH=\"{path}\"\n").into_bytes();
    for name in [".profile", ".bash_profile"] {
        job.home_files.push(InputFile {
            path: name.into(),
            data: profile.clone(),
        });
    }
    let mut env: BTreeMap<String, String> = run
        .env
        .iter()
        .map(|(k, v)| (k.clone(), values.render(v)))
        .collect();
    env.insert("PATH".into(), path);
    job.env = env;

    let config = GatewayConfig {
        client: model.client.clone(),
        token,
        served_model: model.name.clone(),
        budget: spec.budget.clone(),
        temperature: model.temperature,
        max_tokens: model.max_tokens,
        on_exchange,
    };
    let gateway: std::sync::Mutex<Option<Gateway>> = std::sync::Mutex::new(None);
    let (stopped_tx, mut stopped_rx) = tokio::sync::mpsc::channel::<Stop>(1);
    let serve = |connections: Connections| {
        let started = Gateway::start(config, Relayed(connections));
        let mut stopped = started.stopped();
        tokio::spawn(async move {
            let stop = match stopped.wait_for(Option::is_some).await {
                Ok(stop) => *stop,
                Err(_) => None,
            };
            if let Some(stop) = stop {
                let _ = stopped_tx.send(stop).await;
            }
        });
        *gateway.lock().expect("poisoned") = Some(started);
    };
    let stop = async {
        match stopped_rx.recv().await {
            Some(stop) => format!(
                "the gateway stopped serving the episode: {}",
                stop.describe()
            ),
            None => std::future::pending().await,
        }
    };
    let outcome = engine.run_command(job, serve, stop).await;
    let gateway = gateway.lock().expect("poisoned").take();
    let (exchanges, totals, stop) = match gateway {
        Some(gateway) => {
            let stop = *gateway.stopped().borrow();
            let totals = gateway.totals();
            (gateway.shutdown().await, totals, stop)
        }
        None => (Vec::new(), Totals::default(), None),
    };
    let answer = answer(&run.answer, &outcome, &exchanges);
    Episode {
        outcome,
        stop,
        exchanges,
        totals,
        answer,
        seconds: started.elapsed().as_secs_f64(),
    }
}

/// The benchmark's Python first (the agent's `python` has the task's libraries), then the
/// agent's own programs, then the system's.
fn agent_path(agent: &Installed, benchmark_bin: &Path) -> String {
    let mut dirs = vec![benchmark_bin.display().to_string()];
    dirs.extend(agent.path.iter().map(|d| d.display().to_string()));
    dirs.extend(["/usr/local/bin", "/usr/bin", "/bin"].map(String::from));
    dirs.join(":")
}

/// The agent's final answer, where its declaration says it is.
fn answer(from: &Answer, outcome: &ScriptOutcome, exchanges: &[Exchange]) -> String {
    let last_text = || {
        exchanges
            .iter()
            .rev()
            .find(|e| e.error.is_none() && !e.text.trim().is_empty())
            .map(|e| e.text.clone())
            .unwrap_or_default()
    };
    match from {
        Answer::Gateway => last_text(),
        Answer::Stdout => outcome.stdout.text.trim_end().to_string(),
        Answer::StdoutJsonLines(pointer) => outcome
            .stdout
            .text
            .lines()
            .rev()
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
            .find_map(|value| value.pointer(pointer).cloned())
            .map(|value| match value {
                serde_json::Value::String(text) => text,
                other => other.to_string(),
            })
            .unwrap_or_else(last_text),
    }
}
