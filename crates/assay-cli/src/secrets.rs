//! The API keys and `assay serve`'s secret, moved out of assay's environment before anything
//! else runs.
//!
//! A key in the environment is readable by anything that can read this process's
//! `/proc/<pid>/environ`, which shows the environment the process started with whatever it
//! later removes. Below full isolation a job may run as this process's uid, and the engine's
//! non-dumpable flag is what closes that file to it; this is the second wall: at start, while
//! the process has a single thread, each key is copied here and its bytes in the initial
//! environment are overwritten, then the variable is removed. Children never saw the keys
//! anyway (`assay_pyenv::child_env`).

use std::collections::BTreeMap;
use std::ffi::CString;
use std::sync::OnceLock;

use assay_models::Provider;

/// Each provider's key variable (`Provider::key_env_var`), and the service's secret's, → what
/// it held.
static KEYS: OnceLock<BTreeMap<&'static str, String>> = OnceLock::new();

/// The trackers' secrets (`assay export --to mlflow|wandb`): taken out of the environment as
/// the providers' keys are, and handed to the tracker's uploader only.
pub const TRACKER_SECRETS: [&str; 5] = [
    "WANDB_API_KEY",
    "MLFLOW_TRACKING_TOKEN",
    "MLFLOW_TRACKING_PASSWORD",
    "DATABRICKS_TOKEN",
    "DATABRICKS_CLIENT_SECRET",
];

/// Moves every provider's key, and the trackers' secrets, out of the environment. Call first thing in `main`: the process
/// must have one thread (no other may be reading the environment) and nothing may have read a
/// key yet.
pub fn take_from_environment() {
    let mut keys = BTreeMap::new();
    let names = Provider::ALL
        .iter()
        .map(Provider::key_env_var)
        .chain([SERVE_TOKEN_VAR])
        .chain(TRACKER_SECRETS);
    for name in names {
        if let Ok(value) = std::env::var(name) {
            keys.insert(name, value);
        }
        wipe(name);
        std::env::remove_var(name);
    }
    // Called once, from `main`; a second call would find nothing left to take.
    let _ = KEYS.set(keys);
}

/// The variable `assay serve` reads its secret from (when no `--token-file` is given).
pub const SERVE_TOKEN_VAR: &str = "ASSAY_SERVE_TOKEN";

/// The secret `assay serve`'s variable held when assay started, if any.
pub fn serve_token() -> Option<String> {
    KEYS.get()?.get(SERVE_TOKEN_VAR).cloned()
}

/// The trackers' secrets assay was started with.
pub fn tracker_secrets() -> Vec<(&'static str, String)> {
    TRACKER_SECRETS
        .iter()
        .filter_map(|name| Some((*name, KEYS.get()?.get(name)?.clone())))
        .collect()
}

/// The key `provider`'s variable held when assay started, if any.
pub fn key(provider: &Provider) -> Option<String> {
    KEYS.get()?.get(provider.key_env_var()).cloned()
}

/// Overwrites the value of `name` where the environment keeps it: for a variable assay was
/// started with, the block `/proc/self/environ` shows.
fn wipe(name: &str) {
    let Ok(c_name) = CString::new(name) else {
        return;
    };
    // SAFETY: the process is single-threaded here (see `take_from_environment`), so nothing
    // else reads or changes the environment meanwhile. `getenv` returns null or a pointer to
    // the value's NUL-terminated bytes, which belong to this process and are writable (the
    // initial stack, or memory `setenv` allocated); `strlen` bytes from there are the value.
    unsafe {
        let value = libc::getenv(c_name.as_ptr());
        if !value.is_null() {
            std::ptr::write_bytes(value, 0, libc::strlen(value));
        }
    }
}
