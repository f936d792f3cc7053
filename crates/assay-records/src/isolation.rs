//! How well jobs are isolated: the level, the layers behind it, and the engine's report.

use serde::{Deserialize, Serialize};

/// How well a job was isolated, from best to worst. Recorded in every outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IsolationLevel {
    /// Nothing but rlimits and a separate process.
    Minimal,
    /// No namespaces, but an unprivileged or Landlock- and seccomp-confined process.
    Partial,
    /// Own user, mount, PID, network, IPC and UTS namespaces; read-only filesystem view without
    /// the harness's files; private /tmp and /dev/shm; unprivileged uid without capabilities;
    /// no_new_privs; Landlock; seccomp.
    Full,
}

/// The confinement layers a job process reports having set up (its "ready" frame).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Layers {
    /// A user namespace of its own.
    #[serde(default)]
    pub user_ns: bool,
    /// A mount namespace: its own read-only view of the filesystem.
    #[serde(default)]
    pub mount_ns: bool,
    /// A PID namespace: it sees only its own processes.
    #[serde(default)]
    pub pid_ns: bool,
    /// A network namespace without interfaces.
    #[serde(default)]
    pub net_ns: bool,
    /// Jobs reach the network (by request, or for lack of a network namespace).
    #[serde(default)]
    pub network: bool,
    /// An IPC namespace of its own.
    #[serde(default)]
    pub ipc_ns: bool,
    /// A `/tmp` of its own.
    #[serde(default)]
    pub private_tmp: bool,
    /// A `/dev/shm` of its own: always with namespaces, as root without them.
    #[serde(default)]
    pub private_shm: bool,
    /// Runs as a uid other than root, without capabilities.
    #[serde(default)]
    pub unprivileged: bool,
    /// `no_new_privs`: no setuid escalation.
    #[serde(default)]
    pub no_new_privs: bool,
    /// 0 when Landlock is unavailable.
    #[serde(default)]
    pub landlock_abi: u32,
    /// A seccomp filter on dangerous syscalls.
    #[serde(default)]
    pub seccomp: bool,
}

impl Layers {
    /// The level reached. A network the caller asked for (`EngineConfig::network`) does not
    /// lower it; a network namespace that could not be made does.
    pub fn level(&self) -> IsolationLevel {
        let namespaces = self.user_ns && self.mount_ns && self.pid_ns;
        let confined = self.no_new_privs && self.seccomp && self.landlock_abi > 0;
        let network_isolated_or_allowed = self.net_ns || self.network;
        if namespaces
            && network_isolated_or_allowed
            && self.private_tmp
            && self.private_shm
            && self.unprivileged
            && confined
        {
            IsolationLevel::Full
        } else if self.unprivileged || self.landlock_abi > 0 || self.seccomp {
            IsolationLevel::Partial
        } else {
            IsolationLevel::Minimal
        }
    }
}

/// How resource limits are enforced on this machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Enforcement {
    /// A cgroup (v1 or v2) per job: memory and process counts of the whole tree.
    Cgroup,
    /// Per-process rlimits only.
    Rlimit,
}

/// What the engine achieved on this machine, reported once at start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IsolationReport {
    /// The level every job reaches.
    pub level: IsolationLevel,
    /// The layers of the first job process.
    pub layers: Layers,
    /// `cgroup-v1`, `cgroup-v2` or `none`.
    pub cgroup: String,
    /// How the memory limit is enforced.
    pub memory_limit: Enforcement,
    /// How a job's whole process tree is killed: `pid-namespace`, `cgroup` or `process-group`.
    pub tree_kill: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full() -> Layers {
        Layers {
            user_ns: true,
            mount_ns: true,
            pid_ns: true,
            net_ns: true,
            network: false,
            ipc_ns: true,
            private_tmp: true,
            private_shm: true,
            unprivileged: true,
            no_new_privs: true,
            landlock_abi: 7,
            seccomp: true,
        }
    }

    #[test]
    fn every_layer_is_needed_for_full() {
        assert_eq!(full().level(), IsolationLevel::Full);
        let mut online = full();
        online.net_ns = false;
        online.network = true;
        assert_eq!(online.level(), IsolationLevel::Full, "a network asked for");
        let weakened: [fn(&mut Layers); 7] = [
            |l| l.net_ns = false,
            |l| l.pid_ns = false,
            |l| l.unprivileged = false,
            |l| l.landlock_abi = 0,
            |l| l.seccomp = false,
            |l| l.private_tmp = false,
            |l| l.private_shm = false,
        ];
        for weaken in weakened {
            let mut layers = full();
            weaken(&mut layers);
            assert_eq!(layers.level(), IsolationLevel::Partial, "{layers:?}");
        }
        assert_eq!(Layers::default().level(), IsolationLevel::Minimal);
    }
}
