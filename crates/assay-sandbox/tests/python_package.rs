//! The worker package's own Python tests (`python/tests`), run with the test environment's
//! interpreter so that they see the same libraries as the sandbox.

mod common;

use std::path::Path;
use std::process::Command;

#[test]
fn the_worker_package_passes_its_own_tests() {
    let python = common::python();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("python");
    let out = Command::new(&python)
        .args([
            "-B", "-m", "unittest", "discover", "-v", "-s", "tests", "-t", "tests",
        ])
        .current_dir(&root)
        .env(
            "PYTHONPATH",
            format!("{}:{}", root.display(), root.join("tests").display()),
        )
        .env("MPLBACKEND", "Agg")
        .output()
        .expect("run the Python tests");
    let report = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{report}");
    assert!(report.contains("OK"), "{report}");
}
