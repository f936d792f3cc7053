//! The environment of every process assay starts, decided here and nowhere else.
//!
//! assay's own environment may hold secrets (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, cloud
//! credentials) that no child needs: not the installers (uv, pip, and whatever build script an
//! sdist brings), not the interpreter probe, not the NLTK download, not the sanitizer's parser,
//! and least of all the sandbox's worker. So no child inherits it. [`command`] starts from an
//! empty environment; [`Inherit::Tools`] lets through by name only what fetching and installing
//! packages needs (the search path, the home and cache directories, locale, proxies, TLS trust
//! and the index settings of uv, pip and npm), and [`Inherit::Nothing`] nothing at all. Whatever else a
//! child needs, its caller sets explicitly. The one exception is a program the user names for
//! assay to start on their behalf (a model server): [`Inherit::AllBut`] gives it their
//! environment without the keys assay holds.

use std::ffi::{OsStr, OsString};
use std::process::Command;

/// What a child takes from assay's own environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inherit {
    /// Nothing: the caller sets every variable the child gets.
    Nothing,
    /// What installers and downloaders need: `TOOL_VARIABLES` by name, `TOOL_PREFIXES`.
    Tools,
    /// Everything but the variables named: for a program the user named, to run as they would
    /// run it themselves (a model server, `--serve`), which needs their search path, GPUs,
    /// caches and tokens; never the provider keys assay holds, which the caller names here.
    AllBut(&'static [&'static str]),
}

/// Variables a set-up tool may see, by exact name.
const TOOL_VARIABLES: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TMPDIR",
    "XDG_CACHE_HOME",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    // Proxies, both spellings (curl and Python read the lower case, others the upper).
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "no_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    // Where TLS trust comes from on machines with their own certificate authority.
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    // Node's (npm installing a coding agent): it trusts only its own bundle otherwise, and an
    // egress proxy with its own authority then fails every install (SELF_SIGNED_CERT_IN_CHAIN).
    "NODE_EXTRA_CA_CERTS",
    // A pyenv shim given as the interpreter resolves its version from these.
    "PYENV_ROOT",
    "PYENV_VERSION",
];

/// Variables a set-up tool may see, by prefix: the installers' own settings (index URLs,
/// caches, certificates, offline mode), npm's among them.
const TOOL_PREFIXES: &[&str] = &["UV_", "PIP_", "npm_config_", "NPM_CONFIG_"];

/// Whether a set-up tool may see the variable `name`.
fn tool_may_see(name: &OsStr) -> bool {
    let Some(name) = name.to_str() else {
        return false;
    };
    TOOL_VARIABLES.contains(&name) || TOOL_PREFIXES.iter().any(|p| name.starts_with(p))
}

/// The part of assay's environment a child with `inherit` gets.
fn inherited(inherit: Inherit) -> Vec<(OsString, OsString)> {
    match inherit {
        Inherit::Nothing => Vec::new(),
        Inherit::Tools => std::env::vars_os()
            .filter(|(name, _)| tool_may_see(name))
            .collect(),
        Inherit::AllBut(hidden) => std::env::vars_os()
            .filter(|(name, _)| !hidden.iter().any(|h| name == h))
            .collect(),
    }
}

/// A command for `program` whose environment is what `inherit` lets through and nothing else. The
/// one way assay makes a child process (`tokio::process::Command::from` turns it async).
pub fn command(program: impl AsRef<OsStr>, inherit: Inherit) -> Command {
    // The one place a process is made; everything else calls this.
    #[allow(clippy::disallowed_methods)]
    let mut command = Command::new(program);
    command.env_clear().envs(inherited(inherit));
    command
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_see_their_settings_and_no_keys() {
        for allowed in [
            "PATH",
            "HOME",
            "https_proxy",
            "UV_INDEX_URL",
            "PIP_CERT",
            "NODE_EXTRA_CA_CERTS",
            "npm_config_cafile",
        ] {
            assert!(tool_may_see(OsStr::new(allowed)), "{allowed}");
        }
        for secret in [
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "AWS_SECRET_ACCESS_KEY",
            "HF_TOKEN",
            "GITHUB_TOKEN",
            "PYTHONPATH",
            "LD_PRELOAD",
            "path",
        ] {
            assert!(!tool_may_see(OsStr::new(secret)), "{secret}");
        }
    }

    #[test]
    fn a_program_of_the_users_sees_all_but_what_is_hidden() {
        let names: Vec<OsString> = inherited(Inherit::AllBut(&["PATH"]))
            .into_iter()
            .map(|(name, _)| name)
            .collect();
        assert!(!names.iter().any(|n| n == "PATH"), "{names:?}");
        let all = std::env::vars_os().count();
        let path = std::env::var_os("PATH").is_some() as usize;
        assert_eq!(names.len(), all - path);
    }

    #[test]
    fn a_command_starts_from_the_allow_list_only() {
        let command = command("/bin/true", Inherit::Tools);
        let names: Vec<&OsStr> = command.get_envs().map(|(name, _)| name).collect();
        assert!(names.iter().all(|n| tool_may_see(n)), "{names:?}");
        // env_clear was applied: nothing outside the list reaches the child.
        let out = super::command("/usr/bin/env", Inherit::Nothing)
            .output()
            .unwrap();
        assert!(out.status.success());
        assert_eq!(String::from_utf8_lossy(&out.stdout), "");
    }
}
