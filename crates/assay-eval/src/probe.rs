//! What the sandbox's environment can import: any benchmark's tasks name the libraries they
//! need, and a task whose library is missing here is `infra`, not the model's failure.

use std::collections::BTreeSet;

use assay_sandbox::{Engine, ScriptJob, Status};

use crate::error::EvalError;

/// Top-level modules among `modules` that the engine's environment cannot import.
pub async fn missing_modules<'a>(
    engine: &Engine,
    modules: impl IntoIterator<Item = &'a str>,
) -> Result<BTreeSet<String>, EvalError> {
    let modules: BTreeSet<&str> = modules.into_iter().collect();
    let code = format!(
        "import importlib.util, json\nprint(json.dumps([m for m in {modules:?} if importlib.util.find_spec(m) is None]))\n",
        modules = modules.iter().collect::<Vec<_>>()
    );
    let mut job = ScriptJob::new(code);
    job.collect_files = false;
    let outcome = engine.run_script(job).await;
    if outcome.status != Status::Pass {
        return Err(EvalError::Probe(format!(
            "the library probe failed: {} {}",
            outcome.reason, outcome.stderr.text
        )));
    }
    serde_json::from_str(outcome.stdout.text.trim()).map_err(|e| {
        EvalError::Probe(format!(
            "unexpected library probe output ({e}): {}",
            outcome.stdout.text
        ))
    })
}
