//! `assay judge pybench RUN`: an LLM judge's verdicts on a PyBench run directory, the
//! paper's "Pass Rate (LLM)" and win/tie/lose, and how far the judge agrees with the unit
//! checks and with itself when the pair comes the other way round.

use std::num::NonZeroUsize;
use std::path::PathBuf;

use anyhow::Result;
use assay_pipeline::pybench_judge::{judge_pybench, JudgePybench, Reference};
use assay_records::JudgePrompt;
use clap::{Args, Subcommand, ValueEnum};

use crate::args::{heading, ApiArgs};
use crate::print;
use crate::progress::Progress;

/// What can be judged.
#[derive(Subcommand)]
pub enum JudgeCommand {
    /// Judge a PyBench run with an LLM, episode by episode against a reference run.
    ///
    /// With upstream's judge prompts: gives PyBench's "Pass Rate (LLM)", win/tie/lose
    /// against the reference, and how far the judge agrees with the unit checks, and with
    /// itself when a pair comes the other way round. See
    /// https://assay-eval.github.io/assay/pybench/.
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
    /// The run directory to judge (of `assay run pybench` or `assay eval pybench`).
    pub run: PathBuf,
    /// The judge model: `openai:NAME` (key in OPENAI_API_KEY; any OpenAI-compatible server
    /// with --base-url) or `anthropic:NAME` (ANTHROPIC_API_KEY). The paper's was
    /// gpt-4o-2024-05-13.
    #[arg(long, value_name = "MODEL", help_heading = heading::JUDGING)]
    pub judge: String,
    /// The run to compare with (the paper's Agent1): another PyBench run directory, or
    /// `replay:FILE` (a trajectory file in upstream's format).
    ///
    /// Default: the data folder's trajectory.jsonl, upstream's GPT-3.5 recording.
    #[arg(long, value_name = "RUN|replay:FILE", help_heading = heading::JUDGING)]
    pub reference: Option<String>,
    /// The data folder whose trajectory.jsonl is the default reference (default: the folder
    /// the run was made with).
    #[arg(long, value_name = "DIR", env = "ASSAY_PYBENCH_DATA", help_heading = heading::JUDGING)]
    pub data: Option<PathBuf>,
    /// Which of upstream's judge prompts.
    #[arg(long, value_enum, default_value_t = PromptArg::Winlose, help_heading = heading::JUDGING)]
    pub prompt: PromptArg,
    /// Which orders each pair is judged in.
    #[arg(long, value_enum, default_value_t = OrdersArg::Both, help_heading = heading::JUDGING)]
    pub orders: OrdersArg,
    /// Token limit of a verdict (upstream's 1000; a thinking judge needs more).
    #[arg(long, value_name = "N", default_value_t = assay_agent::pybench::judge::MAX_TOKENS,
          help_heading = heading::JUDGING)]
    pub max_tokens: u32,
    /// How many times to ask again for a verdict that cannot be read, before it counts as
    /// unreadable.
    ///
    /// Replies are read forgivingly (a language tag or trailing commas are fine). Upstream
    /// asked again on each rerun of its script, as often as it was rerun.
    #[arg(long, value_name = "N", default_value_t = assay_agent::pybench::judge::REASKS,
          help_heading = heading::JUDGING)]
    pub reasks: u32,
    /// Judge requests in flight at most (fewer while the server answers 429 or 503).
    #[arg(long, value_name = "N", default_value_t = NonZeroUsize::new(8).expect("8 is not 0"),
          help_heading = heading::JUDGING)]
    pub concurrency: NonZeroUsize,
    #[command(flatten)]
    pub api: ApiArgs,
    /// Print the judging's figures as JSON.
    #[arg(long, help_heading = heading::OUTPUT)]
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
