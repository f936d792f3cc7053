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

use assay_export::tracker::upload::AZURE_SECRETS;
use assay_models::Provider;

/// Each provider's key variable (`Provider::key_env_var`), the service's secret's and the
/// trackers' secrets' → what it held.
static KEYS: OnceLock<BTreeMap<String, String>> = OnceLock::new();

/// The trackers' variables (`assay export --to mlflow|wandb`) that may hold a secret: those
/// of these prefixes whose name holds one of [`TRACKER_SECRET_WORDS`]. Matched rather than
/// listed, since the clients read more than any list keeps up with (Databricks' password,
/// client secret, Google credentials...).
const TRACKER_PREFIXES: [&str; 3] = ["MLFLOW_", "DATABRICKS_", "WANDB_"];

/// What a tracker's variable holding a secret has in its name.
const TRACKER_SECRET_WORDS: [&str; 5] = ["TOKEN", "PASSWORD", "SECRET", "KEY", "CREDENTIALS"];

/// Whether the variable `name` is a tracker's secret: taken out of the environment as the
/// providers' keys are, and handed to the tracker's uploader only.
fn is_tracker_secret(name: &str) -> bool {
    AZURE_SECRETS.contains(&name)
        || (TRACKER_PREFIXES.iter().any(|p| name.starts_with(p))
            && TRACKER_SECRET_WORDS.iter().any(|w| name.contains(w)))
}

/// Moves every provider's key, and the trackers' secrets, out of the environment. Call first
/// thing in `main`: the process must have one thread (no other may be reading the
/// environment) and nothing may have read a key yet.
pub fn take_from_environment() {
    let mut keys = BTreeMap::new();
    let trackers: Vec<String> = std::env::vars_os()
        .filter_map(|(name, _)| name.into_string().ok())
        .filter(|name| is_tracker_secret(name))
        .collect();
    let names = Provider::ALL
        .iter()
        .map(|p| p.key_env_var().to_string())
        .chain([SERVE_TOKEN_VAR.to_string()])
        .chain(trackers);
    for name in names {
        if let Ok(value) = std::env::var(&name) {
            keys.insert(name.clone(), value);
        }
        wipe(&name);
        std::env::remove_var(&name);
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
pub fn tracker_secrets() -> Vec<(String, String)> {
    KEYS.get()
        .into_iter()
        .flatten()
        .filter(|(name, _)| is_tracker_secret(name))
        .map(|(name, value)| (name.clone(), value.clone()))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trackers_secrets_are_matched_by_prefix_and_word() {
        for name in [
            "WANDB_API_KEY",
            "MLFLOW_TRACKING_TOKEN",
            "MLFLOW_TRACKING_PASSWORD",
            "DATABRICKS_TOKEN",
            "DATABRICKS_PASSWORD",
            "DATABRICKS_CLIENT_SECRET",
            "DATABRICKS_GOOGLE_CREDENTIALS",
            "AZURE_CLIENT_SECRET",
            "ARM_CLIENT_SECRET",
        ] {
            assert!(is_tracker_secret(name), "{name}");
        }
        for name in [
            "MLFLOW_TRACKING_URI",
            "WANDB_MODE",
            "DATABRICKS_HOST",
            "AZURE_CLIENT_ID",
            "HOME",
        ] {
            assert!(!is_tracker_secret(name), "{name}");
        }
    }
}
