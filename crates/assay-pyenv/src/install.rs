//! Building an [`Environment`]: lock, pick an installer, create the venv, install the pins,
//! verify the preload modules import, and only then write the completion marker.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::bounded::{run_bounded, Finished};
use crate::child_env::{self, Inherit};
use crate::environment::{read_marker, MARKER_FILE};
use crate::flock::{self, LockError};
use crate::interpreter::find_on_path;
use crate::{cache_root, nltk, EnvStatus, Environment, Error, Marker, Result};

/// The uv release assay installs from PyPI when none is on `PATH`.
const UV_VERSION: &str = "0.13.9";
const LOCK_WAIT: Duration = Duration::from_secs(60 * 60);
const VENV_TIMEOUT: Duration = Duration::from_secs(10 * 60);
const INSTALL_TIMEOUT: Duration = Duration::from_secs(90 * 60);
const VERIFY_TIMEOUT: Duration = Duration::from_secs(10 * 60);

/// Hears about a setup as it happens (the CLI draws a spinner; tests stay quiet).
pub trait SetupObserver {
    /// A new step started.
    fn step(&self, message: &str);
    /// A line of output from the current step's tool.
    fn output(&self, line: &str);
}

/// An observer that ignores everything.
pub struct SilentObserver;

impl SetupObserver for SilentObserver {
    fn step(&self, _: &str) {}
    fn output(&self, _: &str) {}
}

enum Installer {
    Uv(PathBuf),
    Pip,
}

impl Environment {
    /// The complete environment, set up first if needed; `observer` hears about the setup.
    pub fn ensure(&self, observer: &dyn SetupObserver) -> Result<Marker> {
        match self.status() {
            EnvStatus::Complete(marker) => Ok(*marker),
            _ => self.setup(observer),
        }
    }

    /// Creates (or finishes, or re-verifies) this environment. Safe to call concurrently: a
    /// second caller waits on the lock and then finds the environment complete.
    pub fn setup(&self, observer: &dyn SetupObserver) -> Result<Marker> {
        let started = Instant::now();
        let envs = self.dir.parent().expect("environment dir has a parent");
        std::fs::create_dir_all(envs).map_err(|e| Error::io(envs, e))?;
        let name = self.dir.file_name().expect("environment dir has a name");
        let _lock = lock(
            &envs.join(format!("{}.lock", name.to_string_lossy())),
            observer,
        )?;
        if let Some(marker) = read_marker(&self.dir) {
            if marker.requirements_digest == self.profile.digest() {
                return Ok(marker);
            }
        }

        let installer = choose_installer(&self.interpreter.executable, observer);
        if self.dir.exists() {
            observer.step("removing an incomplete environment");
            std::fs::remove_dir_all(&self.dir).map_err(|e| Error::io(&self.dir, e))?;
        }

        observer.step(&format!(
            "creating a virtual environment with Python {} at {}",
            self.interpreter.version_string(),
            self.dir.display()
        ));
        let mut venv = match &installer {
            Installer::Uv(uv) => {
                let mut c = child_env::command(uv, Inherit::Tools);
                c.arg("venv")
                    .arg("--python")
                    .arg(&self.interpreter.executable);
                c
            }
            Installer::Pip => {
                let mut c = child_env::command(&self.interpreter.executable, Inherit::Tools);
                c.args(["-m", "venv"]);
                c
            }
        };
        venv.arg(&self.dir);
        run_step(
            "creating the virtual environment",
            venv,
            VENV_TIMEOUT,
            observer,
        )?;

        let requirements = self.dir.join("assay-requirements.txt");
        std::fs::write(&requirements, self.profile.requirements)
            .map_err(|e| Error::io(&requirements, e))?;
        observer.step(&format!(
            "installing {} pinned package{} of profile `{}` with {}",
            self.profile.package_count(),
            if self.profile.package_count() == 1 {
                ""
            } else {
                "s"
            },
            self.profile.name,
            match installer {
                Installer::Uv(_) => "uv",
                Installer::Pip => "pip",
            }
        ));
        let mut install = self.pip_install(&installer);
        if matches!(installer, Installer::Uv(_)) {
            // Bytecode now, so that neither the workers nor their jobs compile modules from
            // source on every import (pip does this by default, uv does not).
            install.arg("--compile-bytecode");
        }
        install.arg("-r").arg(&requirements);
        run_step("installing packages", install, INSTALL_TIMEOUT, observer)?;
        self.install_without_deps(&installer, observer)?;
        self.link_programs(observer)?;
        for file in self.profile.files {
            let path = self.site_packages().join(file);
            if !path.is_file() {
                return Err(Error::Install {
                    step: "checking the installed files".into(),
                    detail: format!("{} is missing", path.display()),
                });
            }
        }

        observer.step("checking that the preloaded modules import");
        let mut verify = child_env::command(self.python(), Inherit::Tools);
        verify.args(["-I", "-c", VERIFY_SCRIPT]);
        verify.args(self.profile.preload);
        verify.env("MPLBACKEND", "Agg");
        let out = run_step("checking imports", verify, VERIFY_TIMEOUT, observer)?;
        let packages: Vec<String> =
            serde_json::from_str(out.stdout.trim()).map_err(|e| Error::Install {
                step: "listing installed packages".into(),
                detail: format!("{e}: {}", out.stdout.trim()),
            })?;

        let nltk_data = self.fetch_nltk_data(self.profile.nltk_data, observer)?;
        let marker = Marker {
            profile: self.profile.name.to_string(),
            requirements_digest: self.profile.digest(),
            python_executable: self.interpreter.executable.clone(),
            python_version: self.interpreter.version_string(),
            installer: match installer {
                Installer::Uv(_) => "uv".into(),
                Installer::Pip => "pip".into(),
            },
            installed_at: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
            setup_seconds: started.elapsed().as_secs_f64(),
            packages,
            nltk_data,
        };
        write_marker(&self.dir, &marker)?;
        Ok(marker)
    }

    /// Installs the wheels the profile wants for a file they carry, without their
    /// dependencies.
    fn install_without_deps(
        &self,
        installer: &Installer,
        observer: &dyn SetupObserver,
    ) -> Result<()> {
        let wheels = self.profile.without_deps;
        if wheels.is_empty() {
            return Ok(());
        }
        observer.step(&format!(
            "installing {} without dependencies",
            wheels.join(", ")
        ));
        let mut install = self.pip_install(installer);
        install.arg("--no-deps").args(wheels);
        run_step(
            "installing packages without dependencies",
            install,
            INSTALL_TIMEOUT,
            observer,
        )
        .map(drop)
    }

    /// `pip install` into this environment with `installer`; the caller adds what to install.
    fn pip_install(&self, installer: &Installer) -> Command {
        let (mut c, no_cache) = match installer {
            Installer::Uv(uv) => {
                let mut c = child_env::command(uv, Inherit::Tools);
                c.args(["pip", "install", "--python"]).arg(self.python());
                (c, "--no-cache")
            }
            Installer::Pip => {
                let mut c = child_env::command(self.python(), Inherit::Tools);
                c.args(["-m", "pip", "install", "--disable-pip-version-check"]);
                (c, "--no-cache-dir")
            }
        };
        let build_env = self.profile.build_env;
        if !build_env.is_empty() {
            c.arg(no_cache);
        }
        c.envs(build_env.iter().copied());
        c
    }

    /// Puts the programs the profile's wheels ship on the jobs' `PATH`: an executable link in
    /// the environment's `bin` for each (wheels may ship them without the execute bit).
    fn link_programs(&self, observer: &dyn SetupObserver) -> Result<()> {
        if self.profile.programs.is_empty() {
            return Ok(());
        }
        // Relative to `bin`: the sandbox shows the environment at whatever path the engine was
        // given (a symlink's, say), where an absolute link's target may not be in view.
        let site = self
            .site_packages()
            .strip_prefix(&self.dir)
            .expect("site-packages is inside the environment")
            .to_path_buf();
        let names: Vec<&str> = self.profile.programs.iter().map(|p| p.name).collect();
        observer.step(&format!(
            "linking {} into the environment",
            names.join(", ")
        ));
        for program in self.profile.programs {
            use std::os::unix::fs::PermissionsExt;
            let target = site.join(program.in_site_packages);
            let installed = self.dir.join(&target);
            std::fs::set_permissions(&installed, std::fs::Permissions::from_mode(0o755))
                .map_err(|e| Error::io(&installed, e))?;
            let link = self.dir.join("bin").join(program.name);
            if link.symlink_metadata().is_ok() {
                std::fs::remove_file(&link).map_err(|e| Error::io(&link, e))?;
            }
            std::os::unix::fs::symlink(Path::new("..").join(&target), &link)
                .map_err(|e| Error::io(&link, e))?;
        }
        Ok(())
    }

    /// Tries again to fetch the NLTK data a complete environment lacks (an earlier setup ran
    /// without access to NLTK's servers).
    pub fn fetch_missing_data(&self, observer: &dyn SetupObserver) -> Result<Marker> {
        let envs = self.dir.parent().expect("environment dir has a parent");
        let name = self.dir.file_name().expect("environment dir has a name");
        let _lock = lock(
            &envs.join(format!("{}.lock", name.to_string_lossy())),
            observer,
        )?;
        let Some(mut marker) = read_marker(&self.dir) else {
            return self.setup(observer);
        };
        let missing = self.missing_data(&marker);
        if !missing.is_empty() {
            marker
                .nltk_data
                .extend(self.fetch_nltk_data(&missing, observer)?);
            write_marker(&self.dir, &marker)?;
        }
        Ok(marker)
    }

    fn fetch_nltk_data(
        &self,
        packages: &[&str],
        observer: &dyn SetupObserver,
    ) -> Result<BTreeMap<String, String>> {
        if packages.is_empty() {
            return Ok(BTreeMap::new());
        }
        let index = std::env::var(nltk::INDEX_VAR)
            .ok()
            .filter(|v| !v.is_empty());
        observer.step(&format!(
            "downloading NLTK data ({}) from {}",
            packages.join(", "),
            index.as_deref().unwrap_or("NLTK's servers")
        ));
        let result = nltk::fetch(
            &self.python(),
            &nltk::data_dir(&self.dir),
            packages,
            index.as_deref(),
        )?;
        let failed: Vec<(&String, &String)> = result
            .iter()
            .filter(|(_, state)| *state != nltk::INSTALLED)
            .collect();
        if let Some((_, first)) = failed.first() {
            let names: Vec<&str> = failed.iter().map(|(p, _)| p.as_str()).collect();
            observer.step(&format!(
                "could not download NLTK data {} ({first}); tasks that need it will be \
                 `infra`. Run `assay env setup` again where NLTK's servers can be reached, \
                 or set {} to a mirror's index.xml",
                names.join(", "),
                nltk::INDEX_VAR
            ));
        }
        Ok(result)
    }
}

/// Writes the completion marker, whole or not at all.
fn write_marker(dir: &Path, marker: &Marker) -> Result<()> {
    let tmp = dir.join(format!("{MARKER_FILE}.tmp"));
    let text = serde_json::to_string_pretty(marker).expect("marker serializes");
    std::fs::write(&tmp, text).map_err(|e| Error::io(&tmp, e))?;
    let path = dir.join(MARKER_FILE);
    std::fs::rename(&tmp, &path).map_err(|e| Error::io(&path, e))
}

/// Imports every module named in argv, then prints the installed distributions as JSON.
const VERIFY_SCRIPT: &str = r#"
import importlib, importlib.metadata as md, json, sys
failed = []
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
    except Exception as e:
        failed.append(f"{name}: {type(e).__name__}: {e}")
if failed:
    sys.exit("cannot import: " + "; ".join(failed))
print(json.dumps(sorted(f"{d.metadata['Name']}=={d.version}" for d in md.distributions())))
"#;

/// Holds an exclusive `flock` on `path` for as long as the returned file lives.
fn lock(path: &Path, observer: &dyn SetupObserver) -> Result<File> {
    let file = File::create(path).map_err(|e| Error::io(path, e))?;
    let waiting =
        || observer.step("waiting for another assay process that is installing this environment");
    match flock::exclusive(&file, LOCK_WAIT, waiting) {
        Ok(()) => Ok(file),
        Err(e) => Err(Error::Install {
            step: format!("locking {}", path.display()),
            detail: match e {
                LockError::TimedOut(wait) => format!("still locked after {} s", wait.as_secs()),
                LockError::Io(e) => e.to_string(),
            },
        }),
    }
}

/// `uv` from `PATH`, else the copy assay keeps in its cache (installed from PyPI with the base
/// interpreter's pip on first use), else plain pip.
fn choose_installer(python: &Path, observer: &dyn SetupObserver) -> Installer {
    if let Some(uv) = find_on_path("uv") {
        return Installer::Uv(uv);
    }
    let Ok(root) = cache_root() else {
        return Installer::Pip;
    };
    let tools = root.join("tools").join(format!("uv-{UV_VERSION}"));
    let uv = tools.join("bin").join("uv");
    if uv.is_file() {
        return Installer::Uv(uv);
    }
    observer.step(&format!(
        "installing uv {UV_VERSION} from PyPI (faster installs)"
    ));
    // `--target` needs only pip, not the venv module (which Debian ships separately).
    let mut pip = child_env::command(python, Inherit::Tools);
    pip.args([
        "-m",
        "pip",
        "install",
        "--disable-pip-version-check",
        "-q",
        "--target",
    ])
    .arg(&tools)
    .arg(format!("uv=={UV_VERSION}"));
    match run_step("installing uv", pip, VENV_TIMEOUT, observer) {
        Ok(_) if uv.is_file() => Installer::Uv(uv),
        Ok(_) => Installer::Pip,
        Err(e) => {
            observer.step(&format!(
                "uv is unavailable ({e}); falling back to venv + pip"
            ));
            let _ = std::fs::remove_dir_all(&tools);
            Installer::Pip
        }
    }
}

fn run_step(
    step: &str,
    cmd: Command,
    timeout: Duration,
    observer: &dyn SetupObserver,
) -> Result<Finished> {
    let out = run_bounded(cmd, timeout, &mut |line| observer.output(line)).map_err(|e| {
        Error::Install {
            step: step.into(),
            detail: e.to_string(),
        }
    })?;
    if !out.success {
        let tail: Vec<&str> = out.stderr.lines().rev().take(20).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(Error::Install {
            step: step.into(),
            detail: format!("exited with {}\n{}", out.status, tail.join("\n")),
        });
    }
    Ok(out)
}
