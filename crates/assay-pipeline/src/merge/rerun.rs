//! The exact command that runs a shard: what `assay merge` prints for a shard that is missing
//! or unfinished, made from the command a shard of the same run was started with.

use std::path::Path;

use assay_records::{Invocation, Shard};

/// `from`'s command (`invocation`) made to run shard `to`, as a shell line that runs from
/// anywhere: `cd DIR && ...`. The shard is given as `--shard I/N` (it may have come from a
/// cluster's environment, which a rerun by hand does not have), and an `--out` naming `from`'s
/// shard (`...-shard-0-of-4`) names `to`'s; any other `--out` gets `to`'s suffix, so that the
/// rerun never writes into another shard's directory.
pub fn shard_command(invocation: &Invocation, from: Shard, to: Shard) -> String {
    let mut args: Vec<String> = Vec::with_capacity(invocation.args.len() + 2);
    let mut shard_given = false;
    let mut iter = invocation.args.iter().peekable();
    while let Some(arg) = iter.next() {
        match option(arg) {
            Some(("--shard", inline)) => {
                shard_given = true;
                if inline.is_none() {
                    iter.next();
                }
                args.extend(["--shard".into(), to.to_string()]);
            }
            Some(("--out", inline)) => {
                let value = match inline {
                    Some(value) => Some(value.to_string()),
                    None => iter.next().cloned(),
                };
                match value {
                    Some(value) => args.extend(["--out".into(), out_for(&value, from, to)]),
                    None => args.push(arg.clone()),
                }
            }
            _ => args.push(arg.clone()),
        }
    }
    if !shard_given {
        args.extend(["--shard".into(), to.to_string()]);
    }
    let quoted: Vec<String> = args.iter().map(|a| quote(a)).collect();
    format!(
        "cd {} && {}",
        quote(&invocation.dir.to_string_lossy()),
        quoted.join(" ")
    )
}

/// `arg` as a long option this module rewrites: its name, and its value when given inline
/// (`--out=DIR`).
fn option(arg: &str) -> Option<(&str, Option<&str>)> {
    let (name, value) = match arg.split_once('=') {
        Some((name, value)) => (name, Some(value)),
        None => (arg, None),
    };
    matches!(name, "--shard" | "--out").then_some((name, value))
}

/// The run directory for shard `to`, given `from`'s.
fn out_for(out: &str, from: Shard, to: Shard) -> String {
    let name = Path::new(out)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let renamed = if name.contains(&from.slug()) {
        name.replace(&from.slug(), &to.slug())
    } else if from == to {
        return out.to_string();
    } else {
        format!("{name}-{}", to.slug())
    };
    let trimmed = out.trim_end_matches('/');
    format!("{}{renamed}", &trimmed[..trimmed.len() - name.len()])
}

/// `text` quoted for a POSIX shell where it needs to be (a NUL, which no argument can hold,
/// is shown escaped).
fn quote(text: &str) -> String {
    shlex::try_quote(text).map_or_else(|_| format!("{text:?}"), |q| q.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn invocation(args: &[&str]) -> Invocation {
        Invocation {
            args: args.iter().map(|a| a.to_string()).collect(),
            dir: "/data/my runs".into(),
        }
    }

    fn shard(index: u32, count: u32) -> Shard {
        Shard::new(index, count).unwrap()
    }

    #[test]
    fn the_option_names_the_shard_and_its_directory() {
        let line = shard_command(
            &invocation(&[
                "assay",
                "eval",
                "bigcodebench",
                "--samples",
                "s.jsonl",
                "--shard",
                "0/3",
                "--out",
                "runs/x-shard-0-of-3",
            ]),
            shard(0, 3),
            shard(2, 3),
        );
        assert_eq!(
            line,
            "cd '/data/my runs' && assay eval bigcodebench --samples s.jsonl --shard 2/3 \
             --out runs/x-shard-2-of-3"
        );
    }

    #[test]
    fn a_shard_from_the_environment_is_made_explicit() {
        let line = shard_command(
            &invocation(&["/opt/assay", "run", "bigcodebench-hard", "--model", "a b"]),
            shard(1, 4),
            shard(3, 4),
        );
        assert_eq!(
            line,
            "cd '/data/my runs' && /opt/assay run bigcodebench-hard --model 'a b' --shard 3/4"
        );
    }

    #[test]
    fn an_out_without_the_shard_gets_its_suffix_and_resumes_as_itself() {
        let args = ["assay", "run", "pybench", "--out=/scratch/part0/"];
        assert_eq!(
            shard_command(&invocation(&args), shard(0, 2), shard(1, 2)),
            "cd '/data/my runs' && assay run pybench --out /scratch/part0-shard-1-of-2 --shard 1/2"
        );
        assert_eq!(
            shard_command(&invocation(&args), shard(0, 2), shard(0, 2)),
            "cd '/data/my runs' && assay run pybench --out /scratch/part0/ --shard 0/2"
        );
    }
}
