//! `assay data pybench`: PyBench's data (upstream's repository at one commit) fetched into
//! assay's cache or a folder, from GitHub or a mirror.

use std::path::PathBuf;

use anyhow::Result;
use assay_pipeline::pybench_data::{fetch, remote_or_default, FetchRequest};
use assay_tasks::pybench::UPSTREAM_COMMIT;
use clap::{Args, Subcommand};

use crate::print;
use crate::progress::Spinner;

#[derive(Subcommand)]
pub enum DataCommand {
    /// Fetch PyBench's data with git (it has no license: for evaluation only).
    ///
    /// Checks out github.com/Mercury7353/PyBench at the commit assay's checks were written
    /// against (fa90fae) into assay's cache, where `assay run pybench` and `assay eval
    /// pybench` find it without --data. A second call finds it there and does nothing; a call
    /// after a fetch cut short starts it over. Then it lists the tasks whose input files the
    /// tree lacks. The data carries no license: use it for evaluation only, and do not
    /// redistribute it.
    Pybench(PybenchArgs),
}

#[derive(Args)]
pub struct PybenchArgs {
    /// Check it out into DIR (new or empty) instead of assay's cache; then pass --data DIR to
    /// the PyBench commands.
    #[arg(long, value_name = "DIR")]
    pub into: Option<PathBuf>,
    /// The git remote to fetch from: any URL or path git accepts (https://, git://, ssh://,
    /// a bare repository's path), e.g. a mirror for machines without GitHub. Default:
    /// $ASSAY_PYBENCH_REPO if set and not empty, else https://github.com/Mercury7353/PyBench.
    // Resolved by `remote_or_default`, which a run without --data shares: clap's `env` would
    // take an empty variable for an empty remote.
    #[arg(long, value_name = "URL")]
    pub from: Option<String>,
    /// The commit to fetch, as a full 40-digit SHA-1: by default upstream's, which assay's
    /// checks were written against.
    ///
    /// Another commit (a fork's, a rebuilt mirror's) is checked out in a folder of its own,
    /// named by the commit, which a run records as its data.

    #[arg(long, value_name = "SHA", default_value = UPSTREAM_COMMIT)]
    pub commit: String,
}

pub fn run(cmd: DataCommand) -> Result<i32> {
    match cmd {
        DataCommand::Pybench(args) => pybench(args),
    }
}

fn pybench(args: PybenchArgs) -> Result<i32> {
    let request = FetchRequest {
        from: remote_or_default(args.from),
        commit: args.commit,
        into: args.into.clone(),
    };
    let fetched = {
        let spinner = Spinner::new();
        fetch(&request, &spinner)?
    };
    if fetched.fresh {
        println!(
            "PyBench's data at {} is in {}",
            fetched.commit,
            fetched.dir.display()
        );
    } else {
        println!(
            "PyBench's data at {} is already in {}; nothing to do",
            fetched.commit,
            fetched.dir.display()
        );
    }
    print!("{}", print::pybench_data(&fetched));
    match args.into {
        Some(_) => println!(
            "Pass --data {} to `assay run pybench` and `assay eval pybench`.",
            fetched.dir.display()
        ),
        None => println!("`assay run pybench` and `assay eval pybench` use it without --data."),
    }
    Ok(0)
}
