//! The zygote's control socket: a Unix SOCK_SEQPACKET socket, one JSON message per datagram,
//! descriptors attached as SCM_RIGHTS (`python/assay_worker/zygote.py` is the other end).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::Rusage;

/// Supervisor → zygote.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum Request {
    /// The first message, once: how to confine jobs and what to import.
    Init(Init),
    /// Fork a job process for workspace `workspace`; carries its four descriptors (control
    /// read end, stdout, stderr, results write ends).
    Spawn {
        /// Echoed in `spawned`, `spawn_failed` and `exited`.
        id: u64,
        workspace: u64,
        /// The host directory to use as the workspace: given only without mount namespaces
        /// (with them, the zygote mounts a tmpfs of its own).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        workspace_path: Option<PathBuf>,
    },
    /// Unmount a workspace no job uses any more.
    Release { workspace: u64 },
}

/// The zygote's configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub(crate) struct Init {
    /// Enter user, mount, PID, network, IPC and UTS namespaces if the kernel allows.
    pub namespaces: bool,
    /// Install Landlock in every job process.
    pub landlock: bool,
    /// Jobs may reach the network.
    pub network: bool,
    /// Refuse to start without namespaces rather than degrade.
    pub strict: bool,
    /// Running as root: the unprivileged uid and gid to become.
    pub drop_to: Option<[u32; 2]>,
    /// Degraded mode as root: job processes drop to `drop_to` themselves.
    pub degraded_drop: bool,
    pub job_uid: u32,
    pub job_gid: u32,
    /// What the read-only root shows.
    pub view: View,
    /// Modules to import before forking.
    pub preload: Vec<String>,
    /// Seccomp filters (BPF programs, hex), installed in every job process in order.
    pub seccomp: Vec<String>,
    /// Size of each namespaced workspace tmpfs.
    pub workspace_mib: u64,
    /// Size of each job's `/dev/shm`.
    pub shm_mib: u64,
    /// The zygote's home and temporary directory in degraded mode.
    pub degraded_home: PathBuf,
}

/// The read-only view of the filesystem.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub(crate) struct View {
    /// Paths bound read-only into the new root.
    pub readonly: Vec<PathBuf>,
    /// Paths inside those hidden behind an empty mount.
    pub masks: Vec<PathBuf>,
}

/// Zygote → supervisor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum Reply {
    /// The answer to `init`: set up and preloaded; carries the zygote's pidfd.
    Ready(Ready),
    /// The answer to `init`: bootstrapping failed; the zygote exits.
    Failed { error: String },
    /// A job process was forked; carries its pidfd.
    Spawned { id: u64 },
    /// A job process could not be forked.
    SpawnFailed { id: u64, error: String },
    /// A job process was reaped.
    Exited {
        id: u64,
        /// The raw wait status.
        status: i32,
        rusage: Rusage,
    },
}

/// What the zygote became.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub(crate) struct Ready {
    pub mode: Mode,
    pub preload: PreloadReport,
    /// `sys.version`'s first word.
    pub python: String,
}

/// How the zygote confines jobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub(crate) enum Mode {
    /// In namespaces of their own.
    Namespaced,
    /// Without namespaces (the kernel refused them).
    Degraded,
}

/// What preloading did: each module's import, then each warm-up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct PreloadReport {
    /// By module name.
    pub modules: BTreeMap<String, ModuleLoad>,
    /// By module name: seconds, or why the warm-up failed (it only costs speed).
    pub warm_up: BTreeMap<String, WarmUp>,
}

/// One preloaded module's import.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ModuleLoad {
    /// Imported.
    pub ok: bool,
    /// How long the import took (when it worked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds: Option<f64>,
    /// Not installed in this environment (when it failed): skipped, not a fault.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing: Option<bool>,
    /// The import's exception (when it failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl ModuleLoad {
    /// Failed for another reason than not being installed.
    pub fn failed(&self) -> bool {
        !self.ok && self.missing != Some(true)
    }
}

/// One warm-up: its seconds, or its exception.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(untagged)]
pub enum WarmUp {
    /// Took this long.
    Seconds(f64),
    /// Failed with this exception.
    Failed(String),
}
