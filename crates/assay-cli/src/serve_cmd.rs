//! `assay serve`: the verifier service (docs/serve.md).

use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use assay_pipeline::judge::JudgeSettings;
use assay_serve::{Extraction, Secret, Settings};
use assay_tasks::bigcodebench::VERSIONS;
use clap::{Args, ValueEnum};
use tokio::signal::unix::{signal, SignalKind};

use crate::args::{heading, EngineArgs, SemanticsArgs};
use crate::secrets;

/// `--help`'s headings of the service's own options.
const NETWORK: &str = "Network";
const BIGCODEBENCH: &str = "BigCodeBench";
const SESSIONS: &str = "Sessions";

#[derive(Args)]
pub struct ServeArgs {
    /// The address to listen on. Any other than loopback needs a secret (--token-file, or
    /// ASSAY_SERVE_TOKEN in the environment), or --open.
    #[arg(long, value_name = "ADDR", default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST),
          help_heading = NETWORK)]
    pub host: IpAddr,
    /// The port (0: any free one; the line printed once listening gives it).
    #[arg(long, default_value_t = 8000, help_heading = NETWORK)]
    pub port: u16,
    /// A file holding the secret every request must carry (`Authorization: Bearer <secret>`,
    /// or the secret as the path's first segment). Never pass the secret itself on the
    /// command line: other users can see it.
    #[arg(long, value_name = "FILE", help_heading = NETWORK)]
    pub token_file: Option<PathBuf>,
    /// Serve an address other than loopback with no secret: anyone who reaches it runs code
    /// in the sandbox.
    #[arg(long, help_heading = NETWORK)]
    pub open: bool,
    /// Jobs that may wait for the sandbox beyond those running; past them requests get 503
    /// with Retry-After (default: 4 x --max-jobs).
    #[arg(long, value_name = "N", help_heading = heading::LIMITS)]
    pub queue: Option<usize>,
    /// The longest any job may run, in seconds, whatever a request asks (BigCodeBench's
    /// time budgets are capped by it too; 240 is the official limit).
    #[arg(long, value_name = "SECS", default_value_t = 240.0, help_heading = heading::LIMITS)]
    pub max_timeout: f64,
    /// The most memory any job may use, in MiB, whatever a request asks (and what
    /// BigCodeBench answers get, as with `assay eval --memory`).
    #[arg(long, value_name = "MIB", default_value_t = 8192, help_heading = heading::LIMITS)]
    pub max_memory: u64,
    /// The largest request body, in MiB.
    #[arg(long, value_name = "MIB", default_value_t = 64, help_heading = heading::LIMITS)]
    pub max_body: usize,
    /// The BigCodeBench version answers are judged against unless they name one.
    #[arg(long, default_value = VERSIONS[0], value_parser = clap::builder::PossibleValuesParser::new(VERSIONS),
          help_heading = BIGCODEBENCH)]
    pub version: String,
    /// How NeMo Gym's /verify finds the code in an answer, unless the request says
    /// (`verifier_metadata.extraction`).
    #[arg(long, value_enum, value_name = "RULES", default_value_t = GymExtraction::Official,
          help_heading = BIGCODEBENCH)]
    pub gym_extraction: GymExtraction,
    /// Run answers as given unless a request asks for the official calibration prefix.
    #[arg(long, help_heading = BIGCODEBENCH)]
    pub no_calibrate: bool,
    /// Judge answers that gamed their tests as the official harness does.
    #[arg(long, help_heading = BIGCODEBENCH)]
    pub gamed_as_official: bool,
    #[command(flatten, next_help_heading = BIGCODEBENCH)]
    pub semantics: SemanticsArgs,
    /// The environment sessions run in, when not the one --profile names: sessions need
    /// IPython, which `pybench` and `test` have and `bigcodebench` does not.
    #[arg(long, value_name = "PROFILE", help_heading = SESSIONS)]
    pub sessions_profile: Option<String>,
    /// Interpreter sessions open at once at most.
    #[arg(long, value_name = "N", default_value_t = 64, help_heading = SESSIONS)]
    pub max_sessions: usize,
    /// Seconds a session may sit unused before it is closed.
    #[arg(long, value_name = "SECS", default_value_t = 600, help_heading = SESSIONS)]
    pub session_idle: u64,
    #[command(flatten)]
    pub engine: EngineArgs,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum GymExtraction {
    /// The official sanitizer.
    Official,
    /// NeMo Gym's own rules, to reproduce NeMo's numbers.
    Nemo,
}

/// The secret, from `--token-file` or the environment (taken out of it at start).
fn secret(token_file: Option<&Path>) -> Result<Option<Secret>> {
    let text = match token_file {
        Some(path) => Some(
            std::fs::read_to_string(path)
                .with_context(|| format!("--token-file {}", path.display()))?,
        ),
        None => secrets::serve_token(),
    };
    let Some(text) = text else { return Ok(None) };
    let from = match token_file {
        Some(path) => path.display().to_string(),
        None => secrets::SERVE_TOKEN_VAR.to_string(),
    };
    Secret::new(&text)
        .map(Some)
        .map_err(|e| anyhow::anyhow!("{from}: {e}"))
}

pub async fn run(args: ServeArgs) -> Result<i32> {
    let secret = secret(args.token_file.as_deref())?;
    if !args.host.is_loopback() && secret.is_none() {
        if !args.open {
            bail!(
                "--host {} lets other machines run code here: give a secret (--token-file \
                 FILE, or ASSAY_SERVE_TOKEN), or --open to serve it to anyone who can reach it",
                args.host
            );
        }
        eprintln!(
            "assay serve: WARNING: serving {} with no secret (--open): anyone who reaches it \
             can run code in the sandbox",
            args.host
        );
    }
    let max_timeout = Duration::try_from_secs_f64(args.max_timeout)
        .ok()
        .filter(|d| !d.is_zero())
        .context("--max-timeout must be a positive number of seconds")?;
    let judge = JudgeSettings {
        calibrated: !args.no_calibrate,
        timeout: None,
        memory_mib: args.max_memory,
        guards: args.semantics.guards(),
        gamed_as_official: args.gamed_as_official,
        engine: args.engine.settings(),
        stability: 0,
    };
    let settings = Settings {
        profile: args.engine.select.profile.clone(),
        sessions_profile: args
            .sessions_profile
            .clone()
            .unwrap_or_else(|| args.engine.select.profile.clone()),
        version: crate::VERSION.to_string(),
        default_dataset: args.version.clone(),
        calibrated: !args.no_calibrate,
        max_timeout,
        max_memory_mib: args.max_memory,
        max_body_bytes: args.max_body << 20,
        queue: args.queue,
        max_sessions: args.max_sessions,
        session_idle: Duration::from_secs(args.session_idle),
        secret,
        gym_extraction: match args.gym_extraction {
            GymExtraction::Official => Extraction::Official,
            GymExtraction::Nemo => Extraction::Nemo,
        },
    };
    let addr = SocketAddr::new(args.host, args.port);
    // Bound before the engine starts, so that a port in use is said at once.
    let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| {
        format!("listening on {addr} (another port: --port N, any free one: --port 0)")
    })?;
    let env = args.engine.environment().await?;
    let sessions_env = match args
        .sessions_profile
        .as_ref()
        .filter(|p| **p != args.engine.select.profile)
    {
        Some(profile) => {
            let mut other = args.engine.clone();
            other.select.profile = profile.clone();
            Some(other.environment().await?)
        }
        None => None,
    };
    let harness: Vec<&Path> = args.token_file.iter().map(PathBuf::as_path).collect();
    let service =
        assay_pipeline::service::start(env, sessions_env, &judge, settings, &harness).await?;
    let bound = listener.local_addr()?;
    let shown = if bound.ip().is_unspecified() {
        SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), bound.port())
    } else {
        bound
    };
    println!("assay serve: listening on http://{shown}/");
    std::io::stdout().flush()?;
    let mut int = signal(SignalKind::interrupt())?;
    let mut term = signal(SignalKind::terminate())?;
    let stop = async move {
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
        }
    };
    assay_serve::serve(service, listener, stop)
        .await
        .context("serving")?;
    eprintln!("assay serve: stopped");
    Ok(0)
}
