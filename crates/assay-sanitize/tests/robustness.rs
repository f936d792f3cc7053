//! The helper process under abuse: inputs that break `ast.parse` in ways the official does not
//! catch, texts that must never run, and interpreters that are missing, wrong or not Python.

mod common;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use assay_sanitize::{Error, Sanitizer};

#[test]
fn sanitizer_can_move_between_threads() {
    fn assert_send<T: Send>() {}
    assert_send::<Sanitizer>();
}

#[test]
fn parser_exceptions_count_as_not_parsing() {
    let mut sanitizer = common::sanitizer();
    let recursion = format!("y = a{}", ".b".repeat(100_000)); // RecursionError in CPython 3.11
    let memory = format!("y = {}1", "-".repeat(100_000)); // MemoryError (parser stack)
    let parentheses = format!("y = {}", "(".repeat(100_000)); // SyntaxError (too many nested)
    for bad in [&recursion, &memory, &parentheses] {
        let text = format!("x = 1\n{bad}");
        assert_eq!(sanitizer.code_extract(&text).unwrap(), "x = 1");
        let text = format!("def task_func():\n    return 1\n{bad}\n");
        assert_eq!(
            sanitizer.sanitize(&text, "task_func").unwrap(),
            "def task_func():\n    return 1"
        );
    }
}

#[test]
fn the_text_is_parsed_never_run() {
    let marker = Path::new(env!("CARGO_TARGET_TMPDIR")).join("assay-sanitize-ran-the-text");
    let _ = fs::remove_file(&marker);
    let text = format!(
        "open({marker:?}, 'w').write('ran')\nimport os\ndef task_func():\n    return os.sep\n",
        marker = marker.display().to_string()
    );
    let mut sanitizer = common::sanitizer();
    sanitizer.sanitize(&text, "task_func").unwrap();
    sanitizer.code_extract(&text).unwrap();
    assert!(!marker.exists(), "the helper executed the text");
}

#[test]
fn a_missing_interpreter_is_named_in_the_error() {
    let missing = Path::new("/nonexistent/bin/python3.11");
    let error = Sanitizer::new(missing).err().expect("no such interpreter");
    assert!(matches!(error, Error::StartPython { .. }), "{error:?}");
    let message = error.to_string();
    assert!(message.contains("/nonexistent/bin/python3.11"), "{message}");
    assert!(message.contains("CPython 3.11"), "{message}");
}

/// An executable shell script standing in for an interpreter.
fn fake_python(name: &str, script: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    fs::write(&path, format!("#!/bin/sh\n{script}\n")).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// `Sanitizer::new(fake)`, once no other thread of this test process holds the script just
/// written open: a thread that forks between our write and its child's exec keeps a copy of
/// the write descriptor for a moment, and executing the script then fails with "Text file
/// busy" (ETXTBSY). Bounded: 50 tries, 20 ms apart.
fn start_fake(fake: &Path) -> Result<Sanitizer, Error> {
    for _ in 0..50 {
        match Sanitizer::new(fake) {
            Err(Error::StartPython { source, .. })
                if source.kind() == std::io::ErrorKind::ExecutableFileBusy =>
            {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            started => return started,
        }
    }
    Sanitizer::new(fake)
}

#[test]
fn another_python_version_is_refused() {
    // Greets like the helper but reports 3.12; also shows what environment it was given.
    let fake = fake_python(
        "fake-python3.12",
        "echo \"assay-sanitize-helper cpython 3.12.1 home=[$HOME] cargo=[$CARGO_MANIFEST_DIR]\"",
    );
    let error = start_fake(&fake).err().expect("3.12 is refused");
    let Error::UnsupportedPython { found, .. } = &error else {
        panic!("{error:?}");
    };
    assert!(found.starts_with("cpython 3.12.1"), "{found}");
    // The caller's environment (which may hold API keys) never reaches the helper.
    assert!(std::env::var_os("HOME").is_some() && std::env::var_os("CARGO_MANIFEST_DIR").is_some());
    assert!(found.ends_with("home=[] cargo=[]"), "{found}");
    assert!(error.to_string().contains("needs CPython 3.11"), "{error}");
}

#[test]
fn something_that_is_not_python_is_reported_with_what_it_said() {
    let fake = fake_python("not-python", "echo 'no such option: -I' >&2\nexit 3");
    let error = start_fake(&fake).err().expect("not a python");
    assert!(matches!(error, Error::HelperHandshake { .. }), "{error:?}");
    let message = error.to_string();
    assert!(message.contains("no such option: -I"), "{message}");
    assert!(message.contains("not-python"), "{message}");
}
