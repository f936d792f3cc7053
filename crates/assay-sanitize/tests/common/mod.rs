//! What the integration tests share: the interpreter and the sanitizer.

use std::path::PathBuf;

use assay_sanitize::Sanitizer;

/// The CPython 3.11 the tests run the helper with (`ASSAY_PYTHON`, else `python3.11`, else
/// `python3` on `PATH`).
pub fn python() -> PathBuf {
    match assay_pyenv::Interpreter::discover(None) {
        Ok(interpreter) => interpreter.executable,
        Err(error) => panic!("these tests need CPython 3.11 (set ASSAY_PYTHON): {error}"),
    }
}

pub fn sanitizer() -> Sanitizer {
    match Sanitizer::new(&python()) {
        Ok(sanitizer) => sanitizer,
        Err(error) => panic!("{error}"),
    }
}
