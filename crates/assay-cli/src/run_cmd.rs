//! `assay run bigcodebench[-hard]`: generate, then evaluate, into one run directory. Without
//! `--model` the canonical solutions answer: the whole pipeline checked, offline.

use anyhow::{bail, Result};
use assay_eval::bigcodebench::samples;
use clap::Args;
use indicatif::ProgressDrawTarget;
use serde_json::json;

use crate::bigcodebench_args::{Bar, DatasetArgs, RunDirArgs};
use crate::eval_cmd::{merge, print_summary, Evaluate, JudgingArgs};
use crate::generate_cmd::{generate, manifest, print_outcome, ModelArgs};

#[derive(Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub tasks: DatasetArgs,
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub run_dir: RunDirArgs,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub judging: JudgingArgs,
}

pub async fn run(args: RunArgs) -> Result<i32> {
    let chosen = args.model.choose(true)?;
    let split = chosen.settings.split;
    let benchmark = args.tasks.benchmark.name();
    if args.model.model.is_none() && !args.json {
        eprintln!(
            "assay: no --model: the reference solutions answer (a self-check of the pipeline). \
             To evaluate a model: assay run {benchmark} --model openai:MODEL [--base-url URL] \
             or --model anthropic:MODEL"
        );
    }
    let options = args.judging.options(split)?;
    let dataset = args.tasks.load()?;
    let out = args.run_dir.dir(&args.tasks, split, &chosen.name);
    let judge = args.judging.start(options, &[&out]).await?;
    let mut manifest = manifest(
        "bigcodebench-run",
        &args.tasks,
        &dataset,
        &args.model,
        &chosen,
    );
    merge(&mut manifest["identity"], judge.identity());
    // It continues a directory `assay generate` made with the same settings.
    manifest["extends"] = json!(["bigcodebench-generate"]);
    let opened = judge.open(&out, manifest)?;
    let mut run = opened.dir;
    // The reference solutions run while the model answers: their times set the samples'
    // time limits, and the engine would otherwise wait idle. Their bar shows once the
    // generation's is done.
    let mut prepared = judge.prepare(&dataset).await?;
    let python = judge.python();
    let references = Bar::new(true);
    let shown = references.handle();
    let answers = async {
        let outcome =
            generate(&mut run, &dataset, &chosen, &args.model, &python, args.json).await?;
        if !args.json {
            print_outcome(&outcome, &run);
            shown.set_draw_target(ProgressDrawTarget::stderr());
        }
        Ok::<_, anyhow::Error>(outcome)
    };
    let (outcome, ()) = tokio::try_join!(
        answers,
        judge.measure_references(&mut prepared, &dataset, references),
    )?;
    if outcome.samples == 0 {
        bail!(
            "the model answered no task, so there is nothing to evaluate; rerun the same command \
             to ask again"
        );
    }
    let samples = samples::load(&run.path().join(assay_report::SAMPLES), &dataset)?;
    let unanswered: Vec<(String, String)> = outcome
        .unanswered
        .iter()
        .flat_map(|u| (0..u.samples).map(|_| (u.task_id.clone(), u.reason.clone())))
        .collect();
    let summary = judge
        .evaluate(
            prepared,
            Evaluate {
                dataset: &dataset,
                samples: &samples,
                run: &mut run,
                records: opened.records,
                model: &chosen.name,
                unanswered: &unanswered,
                quiet: args.json,
            },
        )
        .await?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({"generation": outcome, "evaluation": summary}))?
        );
    } else {
        print_summary(benchmark, split, &args.tasks.source(), &summary, run.path());
    }
    Ok(i32::from(!outcome.unanswered.is_empty()))
}
