//! `assay judge pybench RUN`: an LLM judge's verdicts on a PyBench run directory, the
//! paper's "Pass Rate (LLM)" and win/tie/lose, and how far the judge agrees with the unit
//! checks and with itself when the pair comes the other way round.

use std::num::NonZeroUsize;
use std::path::PathBuf;

use anyhow::Result;
use assay_pipeline::pybench_judge::{judge_pybench, JudgePybench, Reference};
use assay_records::JudgePrompt;
use clap::{Args, Subcommand, ValueEnum};

use crate::args::ApiArgs;
use crate::print;
use crate::progress::Progress;

/// What can be judged.
#[derive(Subcommand)]
pub enum JudgeCommand {
    /// A PyBench run or evaluation directory, pair by pair against a reference's
    /// trajectories, with upstream's judge prompts.
    Pybench(Box<PybenchJudgeArgs>),
}

#[derive(Clone, Copy, ValueEnum)]
pub enum PromptArg {
    /// `evaluator_winlose_rate.yaml`: Pass ("executed correctly") and a 0/1 decision per
    /// agent; gives the pass rate, win/tie/lose and the paper's average turns at once.
    Winlose,
    /// `evaluator.yaml`: Pass ("fulfill the user query") and 1-10 reasoning and code scores.
    Scores,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum OrdersArg {
    /// Each pair in the paper's order (the reference first) and the other way round: the
    /// paper's figures, and how far the verdict follows the position (twice the requests).
    Both,
    /// The paper's order only.
    Paper,
}

#[derive(Args)]
pub struct PybenchJudgeArgs {
    /// The run directory (`assay run pybench` or `assay eval pybench`).
    pub run: PathBuf,
    /// The judge: `openai:MODEL` (OPENAI_API_KEY; with --base-url any OpenAI-compatible
    /// server) or `anthropic:MODEL` (ANTHROPIC_API_KEY). The paper's was gpt-4o-2024-05-13.
    #[arg(long)]
    pub judge: String,
    /// Agent1's trajectories: another PyBench run directory, or `replay:FILE` (an
    /// upstream-format trajectory file). Default: the data folder's trajectory.jsonl,
    /// upstream's GPT-3.5 recording (the paper's Agent1).
    #[arg(long, value_name = "RUN|replay:FILE")]
    pub reference: Option<String>,
    /// The data folder whose trajectory.jsonl is the default reference. Default:
    /// $ASSAY_PYBENCH_DATA, else the folder the run was made with.
    #[arg(long, env = "ASSAY_PYBENCH_DATA")]
    pub data: Option<PathBuf>,
    /// Which of upstream's judge prompts.
    #[arg(long, value_enum, default_value_t = PromptArg::Winlose)]
    pub prompt: PromptArg,
    /// Which orders each pair is judged in.
    #[arg(long, value_enum, default_value_t = OrdersArg::Both)]
    pub orders: OrdersArg,
    /// Token limit of a verdict (upstream's 1000; a thinking judge needs more).
    #[arg(long, default_value_t = assay_agent::pybench::judge::MAX_TOKENS)]
    pub max_tokens: u32,
    /// How many times a reply that cannot be read (even with a language tag or trailing
    /// commas forgiven) is asked again before it counts as unreadable. Upstream asked again
    /// on each rerun of its script, as often as it was rerun.
    #[arg(long, default_value_t = assay_agent::pybench::judge::REASKS)]
    pub reasks: u32,
    /// Judge requests in flight at most (fewer while the server answers 429 or 503).
    #[arg(long, default_value_t = NonZeroUsize::new(8).expect("8 is not 0"))]
    pub concurrency: NonZeroUsize,
    #[command(flatten)]
    pub api: ApiArgs,
    /// Print the judging's figures as JSON.
    #[arg(long)]
    pub json: bool,
}

impl JudgeCommand {
    /// Whether it starts a model server (`--serve`), to be stopped on an interrupt.
    pub fn serving(&self) -> bool {
        let JudgeCommand::Pybench(args) = self;
        args.api.serve.serve.is_some()
    }
}

pub async fn run(command: JudgeCommand) -> Result<i32> {
    let JudgeCommand::Pybench(args) = command;
    let reference = match args.reference.as_deref() {
        None => Reference::Data(args.data.clone()),
        Some(given) => match given.strip_prefix("replay:") {
            Some(file) => Reference::File(PathBuf::from(file)),
            None => Reference::Run(PathBuf::from(given)),
        },
    };
    let request = JudgePybench {
        run: args.run,
        judge: args.judge.clone(),
        access: args.api.access(&args.judge),
        reference,
        prompt: match args.prompt {
            PromptArg::Winlose => JudgePrompt::Winlose,
            PromptArg::Scores => JudgePrompt::Scores,
        },
        both_orders: matches!(args.orders, OrdersArg::Both),
        max_tokens: args.max_tokens,
        concurrency: args.concurrency,
        reasks: args.reasks,
    };
    let mut progress = Progress::new(args.json);
    let report = judge_pybench(request, &mut progress).await;
    drop(progress);
    let report = report?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report.figures)?);
    } else {
        print::pybench_judge(&report.figures, &report.dir);
    }
    if report.failed > 0 {
        eprintln!(
            "assay: {} judge requests failed for good; rerun the same command to ask them again",
            report.failed
        );
    }
    Ok(i32::from(report.failed > 0))
}
