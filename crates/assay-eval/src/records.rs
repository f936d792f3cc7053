//! A run's JSON-lines records read from disk as they are needed, never all held: one at a
//! time in file order ([`each_line`]), or one by where it lies ([`RecordFile`]). What keeps a
//! run's memory flat however many samples it judges.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use assay_rundir::RunDirError;
use serde::de::DeserializeOwned;

/// Where a record's line lies in its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// Its first byte.
    pub offset: u64,
    /// Its length, without the newline.
    pub len: usize,
    /// Its line (from 1), for what is said of it.
    pub line: usize,
}

/// Hands each complete record of `path` (a journal: a line torn by a kill, without its
/// newline, is not one) to `each` with where it lies, in file order. A missing file has none;
/// a line that is not a `T` is an error naming the file and the line. Returns where the
/// complete records end: a file longer than that ends in a line without its newline.
pub fn each_line<T: DeserializeOwned, E: From<RunDirError>>(
    path: &Path,
    mut each: impl FnMut(T, Span) -> Result<(), E>,
) -> Result<u64, E> {
    let io = |source| RunDirError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(io(e).into()),
    };
    let mut reader = BufReader::new(file);
    let (mut line, mut offset) = (Vec::new(), 0u64);
    for number in 1.. {
        line.clear();
        let read = reader.read_until(b'\n', &mut line).map_err(io)?;
        if read == 0 || line.last() != Some(&b'\n') {
            break;
        }
        let text = &line[..read - 1];
        let record = serde_json::from_slice(text).map_err(|e| RunDirError::Corrupt {
            path: path.to_path_buf(),
            line: number,
            message: format!("not a valid record: {e}"),
        })?;
        let span = Span {
            offset,
            len: text.len(),
            line: number,
        };
        each(record, span)?;
        offset += read as u64;
    }
    Ok(offset)
}

/// A journal whose records are read one by one, by where each lies.
pub struct RecordFile {
    path: PathBuf,
    file: File,
}

impl RecordFile {
    /// Opens `path`.
    pub fn open(path: &Path) -> Result<RecordFile, RunDirError> {
        let file = File::open(path).map_err(|source| RunDirError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(RecordFile {
            path: path.to_path_buf(),
            file,
        })
    }

    /// The record at `span`.
    pub fn read<T: DeserializeOwned>(&self, span: Span) -> Result<T, RunDirError> {
        let bytes = self.bytes(span)?;
        serde_json::from_slice(&bytes).map_err(|e| RunDirError::Corrupt {
            path: self.path.clone(),
            line: span.line,
            message: format!("not a valid record (it changed since it was read?): {e}"),
        })
    }

    /// The line at `span`, as it is.
    pub fn bytes(&self, span: Span) -> Result<Vec<u8>, RunDirError> {
        let mut bytes = vec![0; span.len];
        self.file
            .read_exact_at(&mut bytes, span.offset)
            .map_err(|source| RunDirError::Io {
                path: self.path.clone(),
                source,
            })?;
        Ok(bytes)
    }
}
