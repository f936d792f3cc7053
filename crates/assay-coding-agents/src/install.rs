//! Installing an agent's pinned packages into assay's cache: npm packages with the Node of
//! the `agent-node` environment, PyPI packages in a virtual environment of their own (made
//! the way every assay environment is). Each install is locked, and complete only once its
//! marker is written.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use assay_pyenv::child_env::{self, Inherit};
use assay_pyenv::{Environment, Interpreter, Profile, SetupObserver, NPM_CLI};
use serde::{Deserialize, Serialize};

use crate::{Declaration, Error};

/// How long one `npm install` may take.
const NPM_TIMEOUT: Duration = Duration::from_secs(30 * 60);
const MARKER: &str = "assay-agent.json";

/// An agent whose packages are installed.
#[derive(Debug, Clone)]
pub struct Installed {
    /// Its declaration.
    pub declaration: Declaration,
    /// Directories whose programs it runs, in `PATH` order (after the benchmark's Python).
    pub path: Vec<PathBuf>,
    /// Directories the sandbox must let it read.
    pub visible: Vec<PathBuf>,
}

/// Written last by an npm install.
#[derive(Debug, Serialize, Deserialize)]
struct Marker {
    packages: Vec<String>,
    node: PathBuf,
    installed_at: u64,
    seconds: f64,
}

/// The agent's install, if complete; nothing is installed.
pub fn installed(
    declaration: &Declaration,
    python: &Interpreter,
) -> Result<Option<Installed>, Error> {
    let mut dirs = Dirs::default();
    if !declaration.install.npm.is_empty() {
        let node = environment(node_profile()?, python)?;
        if !matches!(node.status(), assay_pyenv::EnvStatus::Complete(_)) {
            return Ok(None);
        }
        let dir = npm_dir(declaration, &node)?;
        if !dir.join(MARKER).is_file() {
            return Ok(None);
        }
        dirs.npm(&dir, &node);
    }
    if !declaration.install.pypi.is_empty() {
        let env = pypi_environment(declaration, python)?;
        if !matches!(env.status(), assay_pyenv::EnvStatus::Complete(_)) {
            return Ok(None);
        }
        dirs.pypi(&env);
    }
    Ok(Some(dirs.into_installed(declaration)))
}

/// Installs the agent's packages (nothing when they are already), telling `observer`.
pub async fn install(
    declaration: &Declaration,
    python: &Interpreter,
    observer: &(dyn SetupObserver + Sync),
) -> Result<Installed, Error> {
    let mut dirs = Dirs::default();
    if !declaration.install.npm.is_empty() {
        let node = environment(node_profile()?, python)?;
        node.ensure(observer)?;
        let dir = npm_dir(declaration, &node)?;
        npm_install(&declaration.install.npm, &dir, &node, observer).await?;
        dirs.npm(&dir, &node);
    }
    if !declaration.install.pypi.is_empty() {
        let env = pypi_environment(declaration, python)?;
        env.ensure(observer)?;
        dirs.pypi(&env);
    }
    Ok(dirs.into_installed(declaration))
}

#[derive(Default)]
struct Dirs {
    path: Vec<PathBuf>,
    visible: Vec<PathBuf>,
}

impl Dirs {
    fn npm(&mut self, dir: &Path, node: &Environment) {
        self.path.push(dir.join("node_modules").join(".bin"));
        self.path.push(node.dir.join("bin"));
        self.visible.push(dir.to_path_buf());
        self.visible.push(node.dir.clone());
    }

    fn pypi(&mut self, env: &Environment) {
        self.path.push(env.dir.join("bin"));
        self.visible.push(env.dir.clone());
        // The interpreter the environment's `python` links to, with its standard library.
        let base = env.interpreter.executable.parent().and_then(Path::parent);
        if let Some(prefix) = base {
            self.visible.push(prefix.to_path_buf());
        }
    }

    fn into_installed(self, declaration: &Declaration) -> Installed {
        Installed {
            declaration: declaration.clone(),
            path: self.path,
            visible: self.visible,
        }
    }
}

fn node_profile() -> Result<Profile, Error> {
    Ok(Profile::by_name("agent-node")?)
}

/// `profile`'s environment for `python`, at the real path of the environments' directory
/// (made if missing): a virtual environment names its interpreter in its programs' `#!` lines
/// by the path it was made at, which must not be a link that may go (a test's cache root, a
/// cluster's home).
fn environment(profile: Profile, python: &Interpreter) -> Result<Environment, Error> {
    let mut env = Environment::locate(profile, python.clone())?;
    let envs = env
        .dir
        .parent()
        .expect("an environment has a parent")
        .to_path_buf();
    let io = |source| Error::Io {
        path: envs.clone(),
        source,
    };
    std::fs::create_dir_all(&envs).map_err(io)?;
    let real = std::fs::canonicalize(&envs).map_err(io)?;
    if let Some(name) = env.dir.file_name() {
        env.dir = real.join(name);
    }
    Ok(env)
}

/// `<cache>/agents/<name>-<digest>`: the digest of the pins and of the Node that installs and
/// runs them, so that a changed pin installs afresh beside the old.
fn npm_dir(declaration: &Declaration, node: &Environment) -> Result<PathBuf, Error> {
    let mut hasher = blake3::Hasher::new();
    for pin in &declaration.install.npm {
        hasher.update(pin.as_bytes());
        hasher.update(&[0]);
    }
    // The real path: the same install whether the cache is reached through a link or not.
    let node_dir = std::fs::canonicalize(&node.dir).unwrap_or_else(|_| node.dir.clone());
    hasher.update(node_dir.as_os_str().as_encoded_bytes());
    let digest = &hasher.finalize().to_hex()[..12];
    let agents = assay_pyenv::cache_root()?.join("agents");
    std::fs::create_dir_all(&agents).map_err(|source| Error::Io {
        path: agents.clone(),
        source,
    })?;
    let agents = std::fs::canonicalize(&agents).map_err(|source| Error::Io {
        path: agents.clone(),
        source,
    })?;
    Ok(agents.join(format!("{}-{digest}", declaration.name)))
}

/// The environment of the agent's PyPI packages: a profile made of its pins. A declaration is
/// read once and lives as long as the process, and profiles hold `'static` text, so its pins
/// are leaked once here.
fn pypi_environment(declaration: &Declaration, python: &Interpreter) -> Result<Environment, Error> {
    let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
    let profile = Profile {
        // Named by its pins alone (the directory's digest): agents that pin the same packages
        // share one environment.
        name: "agent-pypi",
        summary: leak(declaration.summary.clone()),
        requirements: leak(declaration.install.pypi.join("\n")),
        preload: &[],
        nltk_data: &[],
        python: (3, 11),
        programs: &[],
        without_deps: &[],
        files: &[],
        build_env: &[],
    };
    environment(profile, python)
}

async fn npm_install(
    pins: &[String],
    dir: &Path,
    node: &Environment,
    observer: &(dyn SetupObserver + Sync),
) -> Result<(), Error> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| Error::Io { path, source }
    };
    let agents = dir.parent().expect("an agent's directory has a parent");
    std::fs::create_dir_all(agents).map_err(io(agents))?;
    let lock_path = dir.with_extension("lock");
    let lock = std::fs::File::create(&lock_path).map_err(io(&lock_path))?;
    let locked = tokio::task::spawn_blocking(move || {
        rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive).map(|()| lock)
    })
    .await
    .map_err(|e| Error::Install(format!("waiting for the install lock: {e}")))?;
    let _lock = locked.map_err(|e| io(&lock_path)(e.into()))?;
    if dir.join(MARKER).is_file() {
        return Ok(());
    }
    if dir.exists() {
        observer.step("removing an incomplete install");
        std::fs::remove_dir_all(dir).map_err(io(dir))?;
    }
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    observer.step(&format!(
        "installing {} with npm into {}",
        pins.join(" "),
        dir.display()
    ));
    let started = std::time::Instant::now();
    let node_bin = node.dir.join("bin").join("node");
    let npm = tokio::process::Command::from(child_env::command(&node_bin, Inherit::Tools))
        .arg(node.site_packages().join(NPM_CLI))
        .args(["install", "--no-audit", "--no-fund", "--no-update-notifier"])
        .args(["--loglevel", "error", "--prefix"])
        .arg(dir)
        .arg("--cache")
        .arg(agents.join("npm-cache"))
        .args(pins)
        .env("PATH", path_with(&node.dir.join("bin")))
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(NPM_TIMEOUT, npm)
        .await
        .map_err(|_| Error::Install(format!("npm install took over {NPM_TIMEOUT:?}")))?
        .map_err(|e| Error::Install(format!("running {}: {e}", node_bin.display())))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(20).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(Error::Install(format!(
            "npm install {} ({}):\n{}",
            pins.join(" "),
            output.status,
            tail.join("\n")
        )));
    }
    let marker = Marker {
        packages: pins.to_vec(),
        node: node_bin,
        installed_at: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        seconds: started.elapsed().as_secs_f64(),
    };
    let text = serde_json::to_string_pretty(&marker).expect("a marker serializes");
    let path = dir.join(MARKER);
    std::fs::write(&path, text).map_err(io(&path))
}

/// `PATH` with `first` in front (npm's install scripts run `node`).
fn path_with(first: &Path) -> std::ffi::OsString {
    let rest = std::env::var_os("PATH").unwrap_or_default();
    let mut paths = vec![first.to_path_buf()];
    paths.extend(std::env::split_paths(&rest));
    std::env::join_paths(paths).unwrap_or_default()
}
