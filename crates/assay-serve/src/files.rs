//! Files in request and response bodies: `{"path": "<base64>"}`, as SandboxFusion carries
//! them.

use std::collections::BTreeMap;

use assay_sandbox::{InputFile, OutputFile};
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;

use crate::error::ApiError;

/// The files of a request's `field`, decoded.
pub fn decode(field: &str, files: &BTreeMap<String, String>) -> Result<Vec<InputFile>, ApiError> {
    files
        .iter()
        .map(|(path, data)| {
            let data = STANDARD
                .decode(data)
                .map_err(|e| ApiError::bad(format!("{field}[{path:?}]: not base64 ({e})")))?;
            Ok(InputFile {
                path: path.clone(),
                data,
            })
        })
        .collect()
}

/// Files read back, as `{"path": "<base64>"}`.
pub fn encode<'a>(files: impl IntoIterator<Item = &'a OutputFile>) -> BTreeMap<String, String> {
    files
        .into_iter()
        .map(|f| (f.path.clone(), STANDARD.encode(&f.data)))
        .collect()
}
