//! Fetching NLTK data with the environment's own NLTK, from a real HTTP server on loopback
//! that serves an index in NLTK's format.

// A test starts its own processes as it needs (assay's own children are made by
// `assay_pyenv::child_env`, which the workspace's clippy rule enforces).
#![allow(clippy::disallowed_methods)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use assay_pyenv::{nltk, Environment, Interpreter, Profile, SilentObserver};

fn python() -> PathBuf {
    let env = Environment::locate(
        Profile::by_name("test").unwrap(),
        Interpreter::discover(None).unwrap(),
    )
    .unwrap();
    env.ensure(&SilentObserver).expect("the test environment");
    env.python()
}

/// A directory laid out like NLTK's data server: `index.xml` and one corpus, `stopwords`.
fn mirror(python: &Path, root: &Path, port: u16) {
    let script = r#"
import hashlib, os, sys, zipfile
root, port = sys.argv[1], sys.argv[2]
os.makedirs(f"{root}/packages/corpora")
archive = f"{root}/packages/corpora/stopwords.zip"
with zipfile.ZipFile(archive, "w") as z:
    z.writestr("stopwords/english", "a\nan\nthe\n")
    z.writestr("stopwords/README", "test corpus\n")
data = open(archive, "rb").read()
with open(f"{root}/index.xml", "w") as f:
    f.write(f'''<?xml version="1.0"?>
<nltk_data><packages>
<package id="stopwords" name="Stopwords Corpus" subdir="corpora" unzip="1"
 url="http://127.0.0.1:{port}/packages/corpora/stopwords.zip"
 size="{len(data)}" unzipped_size="20" checksum="{hashlib.md5(data).hexdigest()}" />
</packages><collections></collections></nltk_data>
''')
"#;
    let status = Command::new(python)
        .args(["-c", script])
        .arg(root)
        .arg(port.to_string())
        .status()
        .unwrap();
    assert!(status.success());
}

/// `python -m http.server` on a free loopback port, serving `root`.
struct Server(Child);

impl Server {
    fn start(python: &Path, root: &Path) -> (Self, u16) {
        let mut child = Command::new(python)
            .args(["-u", "-m", "http.server", "--bind", "127.0.0.1", "0"])
            .current_dir(root)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        // "Serving HTTP on 127.0.0.1 port 40123 (http://127.0.0.1:40123/) ..."
        let port = line
            .split_whitespace()
            .skip_while(|w| *w != "port")
            .nth(1)
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("unexpected server banner: {line}"));
        (Server(child), port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn data_comes_from_the_index_and_failures_are_named_not_fatal() {
    let python = python();
    let served = tempfile::tempdir().unwrap();
    let (_server, port) = Server::start(&python, served.path());
    mirror(&python, served.path(), port);
    let target = tempfile::tempdir().unwrap();
    let index = format!("http://127.0.0.1:{port}/index.xml");

    let result = nltk::fetch(
        &python,
        target.path(),
        &["stopwords", "no_such_package"],
        Some(&index),
    )
    .unwrap();
    assert_eq!(result["stopwords"], nltk::INSTALLED, "{result:?}");
    assert!(
        result["no_such_package"].contains("no_such_package"),
        "{result:?}"
    );
    let words = std::fs::read_to_string(target.path().join("corpora/stopwords/english")).unwrap();
    assert_eq!(words, "a\nan\nthe\n");

    // No server at all: every package says why, nothing is raised.
    let offline = nltk::fetch(
        &python,
        tempfile::tempdir().unwrap().path(),
        &["stopwords"],
        Some("http://127.0.0.1:9/index.xml"),
    )
    .unwrap();
    assert_ne!(offline["stopwords"], nltk::INSTALLED);
    assert!(offline["stopwords"].contains("refused"), "{offline:?}");
}

#[test]
fn a_setup_records_the_state_of_the_profiles_nltk_data() {
    let env = Environment::locate(
        Profile::by_name("test").unwrap(),
        Interpreter::discover(None).unwrap(),
    )
    .unwrap();
    let marker = env.ensure(&SilentObserver).unwrap();
    // Installed or not depends on whether NLTK's servers answer here; recorded either way.
    assert_eq!(
        marker.nltk_data.keys().collect::<Vec<_>>(),
        ["stopwords"],
        "{:?}",
        marker.nltk_data
    );
    assert_eq!(
        env.missing_data(&marker).is_empty(),
        marker.nltk_data["stopwords"] == nltk::INSTALLED
    );
}
