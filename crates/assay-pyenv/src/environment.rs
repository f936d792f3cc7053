use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::{cache_root, Error, Interpreter, Profile, Result};

/// One [`Profile`] installed for one [`Interpreter`], as a virtual environment in the cache.
#[derive(Debug, Clone)]
pub struct Environment {
    /// The requirement set installed.
    pub profile: Profile,
    /// The base interpreter the virtual environment is made from.
    pub interpreter: Interpreter,
    /// `<cache>/envs/<profile>-py<X.Y>-<digest>`.
    pub dir: PathBuf,
}

/// Written as the very last step of a successful setup: its presence is what "complete" means.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Marker {
    /// Name of the profile installed.
    pub profile: String,
    /// [`Profile::digest`] of the requirements installed; a mismatch means the pins changed.
    pub requirements_digest: String,
    /// The base interpreter the environment was made from.
    pub python_executable: PathBuf,
    /// That interpreter's version, `X.Y.Z`.
    pub python_version: String,
    /// `uv` or `pip`.
    pub installer: String,
    /// Unix seconds.
    pub installed_at: u64,
    /// How long the setup took, in seconds.
    pub setup_seconds: f64,
    /// `name==version` of every distribution in the environment.
    pub packages: Vec<String>,
    /// The profile's NLTK data packages: `ok`, or why they are not installed.
    #[serde(default)]
    pub nltk_data: BTreeMap<String, String>,
}

/// What [`Environment::status`] finds on disk.
#[derive(Debug, Clone, PartialEq)]
pub enum EnvStatus {
    /// Nothing has been set up: the directory does not exist.
    Missing,
    /// The directory exists but setup never finished (interrupted, or failed).
    Incomplete,
    /// Setup finished for the current requirements; holds what it recorded.
    Complete(Box<Marker>),
}

pub(crate) const MARKER_FILE: &str = "assay-env.json";

impl Environment {
    /// Its `site-packages`, where wheels put their files.
    pub fn site_packages(&self) -> PathBuf {
        let (major, minor, _) = self.interpreter.version;
        self.dir
            .join("lib")
            .join(format!("python{major}.{minor}"))
            .join("site-packages")
    }

    /// Where `profile` lives for `interpreter`. Nothing is created.
    pub fn locate(profile: Profile, interpreter: Interpreter) -> Result<Self> {
        let (major, minor, _) = interpreter.version;
        if (major, minor) != profile.python {
            return Err(Error::WrongVersion {
                profile: profile.name.to_string(),
                need: format!("{}.{}", profile.python.0, profile.python.1),
                found: interpreter.version_string(),
                path: interpreter.executable.clone(),
            });
        }
        // Different interpreters (paths or patch releases) get different environments: a venv
        // is tied to the binary it was made from.
        let mut hasher = blake3::Hasher::new();
        hasher.update(profile.requirements.as_bytes());
        hasher.update(interpreter.executable.as_os_str().as_encoded_bytes());
        hasher.update(interpreter.version_string().as_bytes());
        let digest = &hasher.finalize().to_hex()[..12];
        let dir = cache_root()?
            .join("envs")
            .join(format!("{}-py{major}.{minor}-{digest}", profile.name));
        Ok(Environment {
            profile,
            interpreter,
            dir,
        })
    }

    /// The environment's own interpreter (`bin/python`), the one the sandbox runs.
    pub fn python(&self) -> PathBuf {
        self.dir.join("bin").join("python")
    }

    /// Whether the environment is set up, judged by its completion marker. Does not run Python.
    pub fn status(&self) -> EnvStatus {
        if !self.dir.exists() {
            return EnvStatus::Missing;
        }
        match read_marker(&self.dir) {
            Some(marker) if marker.requirements_digest == self.profile.digest() => {
                EnvStatus::Complete(Box::new(marker))
            }
            _ => EnvStatus::Incomplete,
        }
    }

    /// The profile's NLTK data packages that `marker` does not record as installed.
    pub fn missing_data(&self, marker: &Marker) -> Vec<&'static str> {
        self.profile
            .nltk_data
            .iter()
            .copied()
            .filter(|p| {
                marker.nltk_data.get(*p).map(String::as_str) != Some(crate::nltk::INSTALLED)
            })
            .collect()
    }

    /// What results computed in this environment depend on, as a name for caches and run
    /// directories: the directory's name (profile, Python, pins), plus the NLTK data
    /// installed, if any.
    pub fn key(&self) -> String {
        let name = self
            .dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let EnvStatus::Complete(marker) = self.status() else {
            return name;
        };
        let installed: Vec<&str> = marker
            .nltk_data
            .iter()
            .filter(|(_, state)| *state == crate::nltk::INSTALLED)
            .map(|(package, _)| package.as_str())
            .collect();
        if installed.is_empty() {
            return name;
        }
        let digest = blake3::hash(installed.join(",").as_bytes()).to_hex();
        format!("{name}-nltk{}", &digest[..8])
    }
}

pub(crate) fn read_marker(dir: &Path) -> Option<Marker> {
    let text = std::fs::read_to_string(dir.join(MARKER_FILE)).ok()?;
    serde_json::from_str(&text).ok()
}
