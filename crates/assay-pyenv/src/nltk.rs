//! NLTK data: corpora and models some tasks load at run time (BigCodeBench's tokenizers,
//! stop words, taggers). The official evaluation image downloads them; without them those
//! tasks fail for reasons that have nothing to do with the code under test.
//!
//! The data goes to `<environment>/nltk_data`, a directory NLTK searches on its own
//! (`sys.prefix/nltk_data`), so jobs find it without any variable, read-only like the rest
//! of the environment. Where the NLTK servers cannot be reached the environment is still
//! usable: what is missing is recorded, the evaluation reports the tasks that need it as
//! `infra`, and `assay env setup` tries again.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::bounded::run_bounded;
use crate::child_env::{self, Inherit};
use crate::{Error, Result};

/// Overrides the NLTK data index (an `index.xml` URL): a mirror for machines that cannot
/// reach NLTK's own servers.
pub const INDEX_VAR: &str = "ASSAY_NLTK_INDEX";

/// What a package's entry says when it is installed.
pub const INSTALLED: &str = "ok";

const FETCH_TIMEOUT: Duration = Duration::from_secs(5 * 60);

/// Where an environment keeps its NLTK data.
pub fn data_dir(env_dir: &Path) -> PathBuf {
    env_dir.join("nltk_data")
}

/// Downloads NLTK data `packages` into `target` with the NLTK of `python`, from `index` (an
/// `index.xml` URL; `None`: NLTK's default). Returns, per package, [`INSTALLED`] or why not;
/// only a failure to run the downloader at all is an error.
pub fn fetch(
    python: &Path,
    target: &Path,
    packages: &[&str],
    index: Option<&str>,
) -> Result<BTreeMap<String, String>> {
    // Proxies and TLS trust reach the downloader; nothing else does.
    let mut cmd = child_env::command(python, Inherit::Tools);
    cmd.args(["-I", "-c", FETCH_SCRIPT])
        .arg(target)
        .arg(index.unwrap_or(""))
        .args(packages);
    let out = run_bounded(cmd, FETCH_TIMEOUT, &mut |_| {}).map_err(|e| Error::Install {
        step: "downloading NLTK data".into(),
        detail: e.to_string(),
    })?;
    let last = out.stdout.lines().last().unwrap_or_default();
    serde_json::from_str(last).map_err(|_| Error::Install {
        step: "downloading NLTK data".into(),
        detail: format!("exited with {}\n{}", out.status, out.stderr.trim()),
    })
}

/// argv: target directory, index URL (empty: NLTK's), package ids. Prints one JSON object:
/// package → "ok" or the error.
const FETCH_SCRIPT: &str = r#"
import json, socket, sys
socket.setdefaulttimeout(30)
from nltk.downloader import Downloader
target, index, packages = sys.argv[1], sys.argv[2], sys.argv[3:]
downloader = Downloader(server_index_url=index) if index else Downloader()
result = {}
for package in packages:
    try:
        ok = downloader.download(package, download_dir=target, quiet=True, raise_on_error=True)
        result[package] = "ok" if ok else "not installed"
    except Exception as e:
        result[package] = f"{type(e).__name__}: {e}".strip()
print(json.dumps(result))
"#;
