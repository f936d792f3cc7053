//! The `assay` command line: arguments parsed into the typed requests of `assay-pipeline`,
//! which does the work; progress drawn from its events; results printed. Command files
//! (`*_cmd.rs`) share only `args`, `progress`, `print`, `secrets` and `signals`, never each
//! other.

mod agents_cmd;
mod args;
mod check_cmd;
#[cfg(test)]
mod cli_reference;
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
#[command(name = "assay", version = VERSION, about, long_about = None,
          after_help = "Documentation: https://assay-eval.github.io/assay/")]
struct Cli {
    /// Log more (-vv: even more); RUST_LOG overrides.
    // Listed after each command's own options, which matter more to it.
    #[arg(short, long, action = clap::ArgAction::Count, global = true, display_order = 900)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

/// The commands, most used first: clap lists them in this order. The first paragraph of each
/// is its line in `assay --help`; the rest shows in its own `--help`.
#[derive(Subcommand)]
enum Command {
    /// Generate and evaluate in one go: a model's answers judged as they come.
    ///
    /// Each answer is run against its tests as soon as the model gives it, into one run
    /// directory that the same command resumes. Without --model the reference solutions
    /// answer: a check of the whole setup that works offline. `assay run pybench` runs
    /// PyBench instead. See https://assay-eval.github.io/assay/guides/api-model/.
    Run(run_cmd::RunArgs),
    /// Ask a model for answers only, to evaluate later with `assay eval`.
    ///
    /// The official prompts and sanitizer; the answers go to samples.jsonl in a run
    /// directory that the same command resumes.
    Generate(generate_cmd::GenerateArgs),
    /// Evaluate answers already generated: each run against its tests.
    ///
    /// Gives the official verdicts and result files, in a run directory that the same
    /// command resumes. `assay eval pybench` judges recorded PyBench trajectories instead.
    Eval(eval_cmd::EvalArgs),
    /// Compare runs: pass@k with 95% intervals, and each run against a baseline.
    ///
    /// Also status counts, time and tokens; against the baseline, the paired difference,
    /// McNemar's test and the tasks that flipped.
    Report(report_cmd::ReportArgs),
    /// Browse runs in a local web UI.
    ///
    /// Samples filtered by status, task, library and error text; each sample's tests and
    /// traceback; PyBench episodes turn by turn; the differences between runs. See
    /// https://assay-eval.github.io/assay/view/.
    View(view_cmd::ViewArgs),
    /// Export runs to Inspect AI, MLflow or Weights & Biases.
    ///
    /// As Inspect AI eval logs, for `inspect view` (by default into ./logs/, where it looks),
    /// or as MLflow or Weights & Biases runs, one per assay run, which a second export
    /// updates. See https://assay-eval.github.io/assay/export/.
    Export(export_cmd::ExportArgs),
    /// Join the shards of a run split over machines into one run directory.
    ///
    /// The official result files and the summary are written again from the records.
    Merge(merge_cmd::MergeArgs),
    /// Run the reference solutions, to see which tasks this machine can pass at all.
    ///
    /// The official ground-truth check: it says why the tasks that fail fail. Results are
    /// cached.
    Check(check_cmd::CheckArgs),
    /// Ask an LLM judge about a PyBench run.
    #[command(subcommand)]
    Judge(judge_cmd::JudgeCommand),
    /// List, install and check the coding agents that can solve tasks.
    ///
    /// Codex, Claude Code, mini-swe-agent, or an agent of your own declared in a file. See
    /// https://assay-eval.github.io/assay/agents/.
    #[command(subcommand)]
    Agents(agents_cmd::AgentsCommand),
    /// Fetch benchmark data that assay cannot ship (PyBench's).
    #[command(subcommand)]
    Data(data_cmd::DataCommand),
    /// Serve verdicts and sandboxed code runs over HTTP, for training and other tools.
    ///
    /// BigCodeBench verdicts, unittest and script jobs, and interpreter sessions, with NeMo
    /// Gym's /verify and SandboxFusion's /run_code as drop-in replacements. See
    /// https://assay-eval.github.io/assay/serve/.
    Serve(serve_cmd::ServeArgs),
    /// Run untrusted Python in the sandbox: check the isolation, run a script or a test.
    ///
    /// See https://assay-eval.github.io/assay/sandbox/.
    #[command(subcommand)]
    Sandbox(sandbox_cmd::SandboxCommand),
    /// Set up and inspect the Python environments evaluated code runs in.
    #[command(subcommand)]
    Env(env_cmd::EnvCommand),
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
            eprintln!("error: {}", print::error(&err));
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
