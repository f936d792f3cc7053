//! A model server assay starts for a run (`--serve "COMMAND"`), and stops when the run ends.
//!
//! The command is split as a shell would split it (quotes, backslashes; leading `NAME=value`
//! words set variables) and started directly, not through a shell, as the leader of a process
//! group of its own: servers start workers, and stopping means stopping all of them. It gets
//! the user's environment without the provider keys assay holds, and writes its output to a log
//! file (the run directory's `server.log`). assay then asks the server which models it serves
//! until it answers with a list, for at most the time it was given (a large model takes minutes
//! to load); a command that exits first, or never answers, is an error that quotes the end of
//! its log, and a server that answers with something other than a model list (a base URL
//! without `/v1`) is one at once.
//!
//! Stopping sends the group SIGTERM, then SIGKILL to whatever is left after a grace period, and
//! happens when [`ModelServer::stop`] is called or the server is dropped (a run that fails or
//! is interrupted). Should assay die without a chance to (`kill -9`), the kernel sends the
//! leader SIGTERM (`PR_SET_PDEATHSIG`), so no server is left holding a GPU or a port.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use assay_pyenv::child_env::{self, Inherit};
use rustix::process::{Pid, Signal};

use crate::client::{Client, Listing};
use crate::spec::Provider;

/// The variables a server never sees: the keys assay holds.
const KEYS: [&str; 2] = [
    Provider::ALL[0].key_env_var(),
    Provider::ALL[1].key_env_var(),
];
/// How long a stopped server's processes have to end after SIGTERM before SIGKILL.
const GRACE: Duration = Duration::from_secs(15);
/// How often a starting server is asked for its models.
const POLL: Duration = Duration::from_millis(250);
/// What of its log an error quotes.
const LOG_TAIL_LINES: usize = 25;
const LOG_TAIL_BYTES: u64 = 8 << 10;

/// How a server is started.
#[derive(Debug, Clone, PartialEq)]
pub struct ServeSettings {
    /// The command as the user wrote it.
    pub command: String,
    /// How long the server may take before it answers with its models.
    pub ready_timeout: Duration,
}

/// A command as split: the variables its leading `NAME=value` words set, then the program and
/// its arguments.
struct Words {
    vars: Vec<(String, String)>,
    argv: Vec<String>,
}

impl ServeSettings {
    /// The command's words.
    fn words(&self) -> Result<Words, ServeError> {
        let words = shlex::split(&self.command).ok_or_else(|| {
            ServeError::Command("unbalanced quotes or a trailing backslash".into())
        })?;
        let assignment = |word: &str| {
            let (name, value) = word.split_once('=')?;
            let valid = !name.is_empty()
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            valid.then(|| (name.to_string(), value.to_string()))
        };
        let vars: Vec<(String, String)> = words.iter().map_while(|w| assignment(w)).collect();
        let argv = words[vars.len()..].to_vec();
        if argv.is_empty() {
            return Err(ServeError::Command("no program to start".into()));
        }
        Ok(Words { vars, argv })
    }

    /// The base URL the command's own `--port` (and `--host`) say the server listens at, for
    /// `provider`'s API (OpenAI's under `/v1`), when the command says.
    pub fn base_url(&self, provider: &Provider) -> Option<String> {
        let argv = self.words().ok()?.argv;
        let option = |name: &str| {
            let mut found = None;
            for (i, word) in argv.iter().enumerate() {
                if let Some(value) = word.strip_prefix(&format!("{name}=")) {
                    found = Some(value.to_string());
                } else if word == name {
                    found = argv.get(i + 1).cloned();
                }
            }
            found
        };
        let port: u16 = option("--port")?.parse().ok()?;
        let host = match option("--host").as_deref() {
            None | Some("0.0.0.0") | Some("::") | Some("") => "127.0.0.1".to_string(),
            Some(host) if host.contains(':') => format!("[{host}]"),
            Some(host) => host.to_string(),
        };
        let path = match provider {
            Provider::OpenAi => "/v1",
            Provider::Anthropic => "",
        };
        Some(format!("http://{host}:{port}{path}"))
    }
}

/// Why a server could not be started.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The command cannot be run as written.
    #[error("--serve: {0}")]
    Command(String),
    /// The program could not be started.
    #[error("--serve: cannot start `{program}`: {source}")]
    Spawn {
        /// The program.
        program: String,
        /// Why.
        source: std::io::Error,
    },
    /// The log file could not be written.
    #[error("--serve: {path}: {source}")]
    Log {
        /// The log.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Something already answers where the server would: a server left running, or another
    /// one on that port.
    #[error(
        "--serve: {url} already answers (models: {models}); a server left running? Stop it, \
         or use it without --serve"
    )]
    Occupied {
        /// The model list's address.
        url: String,
        /// What it serves.
        models: String,
    },
    /// The server failed before it was ready, or was not ready in time, or answers with
    /// something other than a model list; `log` ends with what it said.
    #[error("--serve: {what}; it was stopped. The end of its log ({}):\n{tail}", log.display())]
    NotReady {
        /// What happened.
        what: String,
        /// The log.
        log: PathBuf,
        /// The end of the log.
        tail: String,
    },
}

/// A model server started for a run.
pub struct ModelServer {
    command: String,
    models: Vec<String>,
    keeper: Keeper,
}

impl ModelServer {
    /// Starts `settings`' command, its output appended to `log`, and waits until the server
    /// `client` talks to answers with its model list.
    pub async fn start(
        settings: &ServeSettings,
        client: &Client,
        log: &Path,
    ) -> Result<ModelServer, ServeError> {
        let Words { vars, argv } = settings.words()?;
        let url = client.models_url();
        if let Listing::Models(models) = client.list_models().await {
            return Err(ServeError::Occupied {
                url,
                models: models.join(", "),
            });
        }
        let log_error = |source| ServeError::Log {
            path: log.to_path_buf(),
            source,
        };
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .map_err(log_error)?;
        writeln!(file, "--- assay --serve: {}", settings.command).map_err(log_error)?;
        let mut command = child_env::command(&argv[0], Inherit::AllBut(&KEYS));
        command
            .args(&argv[1..])
            .envs(vars)
            .stdin(Stdio::null())
            .stdout(file.try_clone().map_err(log_error)?)
            .stderr(file)
            .process_group(0);
        let parent = rustix::process::getpid();
        // SAFETY: runs in the forked child before exec, where only async-signal-safe calls are
        // allowed: `prctl` and `getppid` are plain system calls, and nothing is allocated.
        unsafe {
            command.pre_exec(move || {
                rustix::process::set_parent_process_death_signal(Some(Signal::TERM))?;
                // assay may have died before the line above took effect.
                if rustix::process::getppid() != Some(parent) {
                    return Err(std::io::Error::other("assay exited"));
                }
                Ok(())
            });
        }
        let keeper = Keeper::start(command).map_err(|source| ServeError::Spawn {
            program: argv[0].clone(),
            source,
        })?;
        let mut server = ModelServer {
            command: settings.command.clone(),
            models: Vec::new(),
            keeper,
        };
        let deadline = Instant::now() + settings.ready_timeout;
        loop {
            let what = match client.list_models().await {
                Listing::Models(models) => {
                    server.models = models;
                    return Ok(server);
                }
                Listing::Wrong(said) => {
                    format!("{url} answered, but not with a model list ({said}): is the base URL right? An OpenAI-compatible server lists its models under /v1")
                }
                Listing::NotYet(said) => {
                    if let Some(status) = server.keeper.exited() {
                        format!("the server exited ({status}) before {url} answered")
                    } else if Instant::now() >= deadline {
                        format!(
                            "{url} did not answer within {} s (--serve-timeout; last: {said})",
                            settings.ready_timeout.as_secs()
                        )
                    } else {
                        tokio::time::sleep(POLL).await;
                        continue;
                    }
                }
            };
            server.stop().await;
            return Err(ServeError::NotReady {
                what,
                tail: tail(log),
                log: log.to_path_buf(),
            });
        }
    }

    /// The command as the user wrote it.
    pub fn command(&self) -> &str {
        &self.command
    }

    /// The models the server said it serves.
    pub fn models(&self) -> &[String] {
        &self.models
    }

    /// Stops the server's whole process group (SIGTERM, then SIGKILL after a grace period)
    /// and waits until it has.
    pub async fn stop(self) {
        let keeper = self.keeper;
        let _ = tokio::task::spawn_blocking(move || drop(keeper)).await;
    }
}

/// The thread that started the server and owns it. It must live as long as the server: the
/// kernel's parent-death signal fires when the thread that forked the child ends, not the
/// process. Dropped, it stops the server.
struct Keeper {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
    exited: Arc<Mutex<Option<ExitStatus>>>,
}

impl Keeper {
    fn start(mut command: std::process::Command) -> std::io::Result<Keeper> {
        let (started_tx, started_rx) = mpsc::channel();
        let (stop_tx, stop_rx) = mpsc::channel::<()>();
        let exited = Arc::new(Mutex::new(None));
        let status = exited.clone();
        let thread = std::thread::Builder::new()
            .name("model-server".into())
            .spawn(move || {
                let child = match command.spawn() {
                    Ok(child) => child,
                    Err(e) => {
                        let _ = started_tx.send(Err(e));
                        return;
                    }
                };
                let _ = started_tx.send(Ok(()));
                keep(child, &stop_rx, &status);
            })?;
        started_rx
            .recv()
            .unwrap_or_else(|_| Err(std::io::Error::other("the keeper thread died")))?;
        Ok(Keeper {
            stop: Some(stop_tx),
            thread: Some(thread),
            exited,
        })
    }

    /// How the server's leader exited, if it has.
    fn exited(&self) -> Option<ExitStatus> {
        *self.exited.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for Keeper {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Watches `child` until told to stop (or the sender is gone), noting when it exits; then
/// stops its group.
fn keep(mut child: Child, stop: &mpsc::Receiver<()>, exited: &Mutex<Option<ExitStatus>>) {
    let group = Pid::from_child(&child);
    let note = |status| *exited.lock().unwrap_or_else(|p| p.into_inner()) = Some(status);
    let mut done = false;
    while let Err(mpsc::RecvTimeoutError::Timeout) = stop.recv_timeout(POLL) {
        if !done {
            if let Ok(Some(status)) = child.try_wait() {
                note(status);
                done = true;
            }
        }
    }
    // SIGTERM to the group, then the grace period for the leader and the rest of the group.
    let _ = rustix::process::kill_process_group(group, Signal::TERM);
    let deadline = Instant::now() + GRACE;
    while Instant::now() < deadline {
        if !done {
            if let Ok(Some(status)) = child.try_wait() {
                note(status);
                done = true;
            }
        }
        if done && rustix::process::test_kill_process_group(group).is_err() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = rustix::process::kill_process_group(group, Signal::KILL);
    if let Ok(status) = child.wait() {
        note(status);
    }
}

/// The last lines of `log`.
fn tail(log: &Path) -> String {
    let Ok(mut file) = File::open(log) else {
        return "(no log)".into();
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = file.seek(SeekFrom::Start(len.saturating_sub(LOG_TAIL_BYTES)));
    let mut bytes = Vec::new();
    let _ = file.read_to_end(&mut bytes);
    let text = String::from_utf8_lossy(&bytes);
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.len().saturating_sub(LOG_TAIL_LINES);
    lines[start..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(command: &str) -> ServeSettings {
        ServeSettings {
            command: command.into(),
            ready_timeout: Duration::from_secs(1),
        }
    }

    #[test]
    fn commands_split_as_a_shell_would() {
        let Words { vars, argv } =
            settings("CUDA_VISIBLE_DEVICES=0 HF_HOME='/a b' vllm serve 'Qwen/Q 7B' --port=8000")
                .words()
                .unwrap();
        assert_eq!(
            vars,
            [
                ("CUDA_VISIBLE_DEVICES".to_string(), "0".to_string()),
                ("HF_HOME".to_string(), "/a b".to_string())
            ]
        );
        assert_eq!(argv, ["vllm", "serve", "Qwen/Q 7B", "--port=8000"]);
        for bad in ["", "A=1", "vllm 'serve"] {
            assert!(
                matches!(settings(bad).words(), Err(ServeError::Command(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn the_base_url_comes_from_the_commands_port() {
        let url = |command: &str, provider| settings(command).base_url(&provider);
        assert_eq!(
            url("vllm serve m --port 8000", Provider::OpenAi).as_deref(),
            Some("http://127.0.0.1:8000/v1")
        );
        assert_eq!(
            url(
                "python -m llama_cpp.server --host 0.0.0.0 --port=8090",
                Provider::OpenAi
            )
            .as_deref(),
            Some("http://127.0.0.1:8090/v1")
        );
        assert_eq!(
            url("server --host ::1 --port 9", Provider::Anthropic).as_deref(),
            Some("http://[::1]:9")
        );
        assert_eq!(url("ollama serve", Provider::OpenAi), None);
        assert_eq!(url("server --port eighty", Provider::OpenAi), None);
    }
}
