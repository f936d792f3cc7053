//! The `assay` command line: arguments parsed into the typed requests of `assay-pipeline`,
//! which does the work; progress drawn from its events; results printed. Command files
//! (`*_cmd.rs`) share only `args`, `progress`, `print`, `secrets` and `signals`, never each
//! other.

mod agents_cmd;
mod args;
mod check_cmd;
mod data_cmd;
mod env_cmd;
mod eval_cmd;
mod export_cmd;
mod generate_cmd;
mod judge_cmd;
mod merge_cmd;
mod print;
mod progress;
mod pybench_cmd;
mod report_cmd;
mod run_cmd;
mod sandbox_cmd;
mod secrets;
mod serve_cmd;
mod signals;
mod view_cmd;

use clap::{Parser, Subcommand};

/// The version and the commit it was built from (build.rs), e.g. `0.1.0 (1ebed9e5c 2026-12-04)`.
const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("ASSAY_COMMIT"), ")");

#[derive(Parser)]
#[command(name = "assay", version = VERSION, about, long_about = None)]
struct Cli {
    /// More log output (repeat for more); `RUST_LOG` overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Coding agents as the solver (Codex, Claude Code, mini-swe-agent, or your own
    /// declaration): list them, install them (pinned, into assay's cache), check one runs.
    #[command(subcommand)]
    Agents(agents_cmd::AgentsCommand),
    /// Run the reference solutions: which tasks this environment can pass at all, and why
    /// the others fail (the official ground-truth check). Results are cached.
    Check(check_cmd::CheckArgs),
    /// Fetch a benchmark's data that assay cannot ship: `assay data pybench` checks PyBench's
    /// repository (no license: evaluation only) out into assay's cache.
    #[command(subcommand)]
    Data(data_cmd::DataCommand),
    /// Manage the isolated Python environments evaluated code runs in.
    #[command(subcommand)]
    Env(env_cmd::EnvCommand),
    /// Evaluate a model's samples: every sample run against its tests, the official verdicts
    /// and result files, resumable. `assay eval pybench` judges recorded PyBench trajectories.
    Eval(eval_cmd::EvalArgs),
    /// Ask a model for answers (the official prompts and sanitizer) into a run directory's
    /// samples.jsonl, resumably.
    Generate(generate_cmd::GenerateArgs),
    /// Generate and evaluate, into one run directory: each answer judged as soon as the model
    /// gives it. Without --model the reference
    /// solutions answer: a self-check of the whole pipeline that works offline. `assay run
    /// pybench` runs an agent's PyBench episodes, then their checks.
    Run(run_cmd::RunArgs),
    /// Ask an LLM judge about a run: `assay judge pybench RUN --judge MODEL` gives PyBench's
    /// "Pass Rate (LLM)", win/tie/lose against a reference, and how far the judge agrees
    /// with the unit checks and with itself in the other order.
    #[command(subcommand)]
    Judge(judge_cmd::JudgeCommand),
    /// Join the shards of a run (`--shard I/N`, run on many machines) into one run directory,
    /// its official files and summary written again from the records.
    Merge(merge_cmd::MergeArgs),
    /// Compare runs: pass@k with 95% intervals, status counts, time and tokens, and each run
    /// against a baseline (the paired difference, McNemar's test, the tasks that flipped).
    Report(report_cmd::ReportArgs),
    /// Export run directories: as Inspect AI eval logs, for `inspect view` (by default into
    /// ./logs/, where it looks), or as MLflow or Weights & Biases runs, one per assay run,
    /// updated by a second export.
    Export(export_cmd::ExportArgs),
    /// Browse runs in a local web UI: runs, samples filtered by status, task, library and
    /// error text, each sample's tests and traceback, PyBench episodes turn by turn, diffs.
    View(view_cmd::ViewArgs),
    /// The verifier service: BigCodeBench verdicts, unittest and script jobs and interpreter
    /// sessions over HTTP, with NeMo Gym's /verify and SandboxFusion's /run_code as drop-ins
    /// (docs/serve.md).
    Serve(serve_cmd::ServeArgs),
    /// Run untrusted Python in the sandbox: check the isolation, run a script or a test.
    #[command(subcommand)]
    Sandbox(sandbox_cmd::SandboxCommand),
}

fn main() -> std::process::ExitCode {
    secrets::take_from_environment();
    let cli = Cli::parse();
    init_logging(cli.verbose);
    let result = match cli.command {
        Command::Agents(cmd) => block_on(agents_cmd::run(cmd)),
        Command::Check(args) => block_on(check_cmd::run(args)),
        Command::Data(cmd) => data_cmd::run(cmd),
        Command::Env(cmd) => env_cmd::run(cmd).map(|()| 0),
        Command::Eval(args) => match args.pybench {
            Some(eval_cmd::PybenchEval::Pybench(args)) => block_on(pybench_cmd::eval(args)),
            None => block_on(eval_cmd::run(args)),
        },
        Command::Generate(args) => {
            let serving = args.model.api.serve.serve.is_some();
            block_on(signals::or_interrupted(serving, generate_cmd::run(args)))
        }
        Command::Run(args) => match args.pybench {
            Some(run_cmd::PybenchRun::Pybench(args)) => {
                let serving = args.api.serve.serve.is_some();
                block_on(signals::or_interrupted(serving, pybench_cmd::run(*args)))
            }
            None => {
                let serving = args.model.api.serve.serve.is_some();
                block_on(signals::or_interrupted(serving, run_cmd::run(args)))
            }
        },
        Command::Judge(command) => {
            let serving = command.serving();
            block_on(signals::or_interrupted(serving, judge_cmd::run(command)))
        }
        Command::Merge(args) => merge_cmd::run(args),
        Command::Report(args) => report_cmd::run(args),
        Command::Export(args) => export_cmd::run(args),
        Command::Sandbox(cmd) => block_on(sandbox_cmd::run(cmd)),
        Command::Serve(args) => block_on(serve_cmd::run(args)),
        Command::View(args) => block_on(view_cmd::run(args)),
    };
    match result {
        Ok(code) => std::process::ExitCode::from(u8::try_from(code).unwrap_or(1)),
        Err(err) => {
            eprintln!("error: {err:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn block_on<F: std::future::Future<Output = anyhow::Result<i32>>>(
    future: F,
) -> anyhow::Result<i32> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(future)
}

fn init_logging(verbose: u8) {
    use tracing_subscriber::EnvFilter;
    let default = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}
