//! Length-prefixed frames on the job pipes: 4 bytes little-endian length, then UTF-8 JSON.
//!
//! Framing only: what a frame says is parsed where it arrives (`protocol`). The reader is
//! cancel-safe (it keeps partial input in its own buffer), so a job's event loop
//! can `select!` between results, output and deadlines without losing bytes, and it enforces
//! per-frame and total size caps: the job process is untrusted, and so is what it sends.

use std::io;

use serde::Serialize;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

const HEADER: usize = 4;

/// Why the results stream stopped making sense.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FrameError {
    #[error("reading results: {0}")]
    Io(#[from] io::Error),
    #[error("a results frame of {0} bytes exceeds the limit")]
    TooLarge(usize),
    #[error("the results stream exceeded {0} bytes")]
    TooMuch(usize),
    #[error("the results stream ended inside a frame")]
    Truncated,
}

pub(crate) struct FrameReader<R> {
    inner: R,
    buf: Vec<u8>,
    max_frame: usize,
    budget: usize,
    consumed: usize,
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    /// `max_frame`: largest single frame; `budget`: all frames together.
    pub fn new(inner: R, max_frame: usize, budget: usize) -> Self {
        FrameReader {
            inner,
            buf: Vec::new(),
            max_frame,
            budget,
            consumed: 0,
        }
    }

    /// The next frame's body, or `None` at a clean end of stream. Cancel-safe.
    pub async fn next(&mut self) -> Result<Option<Vec<u8>>, FrameError> {
        loop {
            if let Some(value) = self.take_frame()? {
                return Ok(Some(value));
            }
            let before = self.buf.len();
            self.buf.reserve(64 << 10);
            let n = self.inner.read_buf(&mut self.buf).await?;
            if n == 0 {
                return if before == 0 {
                    Ok(None)
                } else {
                    Err(FrameError::Truncated)
                };
            }
        }
    }

    /// Starts the total budget again (a session's is per cell, not per lifetime).
    pub fn reset_budget(&mut self) {
        self.consumed = 0;
    }

    fn take_frame(&mut self) -> Result<Option<Vec<u8>>, FrameError> {
        if self.buf.len() < HEADER {
            return Ok(None);
        }
        let len = u32::from_le_bytes(self.buf[..HEADER].try_into().expect("4 bytes")) as usize;
        if len > self.max_frame {
            return Err(FrameError::TooLarge(len));
        }
        if self.consumed + HEADER + len > self.budget {
            return Err(FrameError::TooMuch(self.budget));
        }
        if self.buf.len() < HEADER + len {
            return Ok(None);
        }
        let body = self.buf[HEADER..HEADER + len].to_vec();
        self.buf.drain(..HEADER + len);
        self.consumed += HEADER + len;
        Ok(Some(body))
    }
}

/// Writes one frame.
pub(crate) async fn write_frame<W: AsyncWrite + Unpin>(
    out: &mut W,
    value: &impl Serialize,
) -> io::Result<()> {
    let body = serde_json::to_vec(value).map_err(io::Error::other)?;
    let len = u32::try_from(body.len()).map_err(|_| io::Error::other("frame too large"))?;
    let mut data = Vec::with_capacity(HEADER + body.len());
    data.extend_from_slice(&len.to_le_bytes());
    data.extend_from_slice(&body);
    out.write_all(&data).await?;
    out.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn frame(value: &Value) -> Vec<u8> {
        let body = serde_json::to_vec(value).unwrap();
        let mut out = (body.len() as u32).to_le_bytes().to_vec();
        out.extend(body);
        out
    }

    #[tokio::test]
    async fn reads_frames_split_across_reads() {
        let mut bytes = frame(&json!({"a": 1}));
        bytes.extend(frame(&json!([2, 3])));
        let (mut tx, rx) = tokio::io::duplex(3); // tiny buffer: frames arrive in pieces
        let writer = tokio::spawn(async move { tx.write_all(&bytes).await });
        let mut reader = FrameReader::new(rx, 1 << 20, 1 << 20);
        assert_eq!(reader.next().await.unwrap(), Some(br#"{"a":1}"#.to_vec()));
        assert_eq!(reader.next().await.unwrap(), Some(b"[2,3]".to_vec()));
        writer.await.unwrap().unwrap();
        assert_eq!(reader.next().await.unwrap(), None);
    }

    #[tokio::test]
    async fn rejects_oversized_and_truncated() {
        let big = frame(&json!("x".repeat(100)));
        let mut r = FrameReader::new(&big[..], 50, 1 << 20);
        assert!(matches!(r.next().await, Err(FrameError::TooLarge(_))));

        let two = [frame(&json!(1)), frame(&json!(2))].concat();
        let mut r = FrameReader::new(&two[..], 1 << 20, 6);
        assert_eq!(r.next().await.unwrap(), Some(b"1".to_vec()));
        assert!(matches!(r.next().await, Err(FrameError::TooMuch(6))));
        let mut r = FrameReader::new(&two[..], 1 << 20, 6);
        assert_eq!(r.next().await.unwrap(), Some(b"1".to_vec()));
        r.reset_budget();
        assert_eq!(r.next().await.unwrap(), Some(b"2".to_vec()));

        let cut = &frame(&json!({"k": "v"}))[..7];
        let mut r = FrameReader::new(cut, 1 << 20, 1 << 20);
        assert!(matches!(r.next().await, Err(FrameError::Truncated)));
    }

    #[tokio::test]
    async fn writer_and_reader_agree() {
        let (mut tx, rx) = tokio::io::duplex(1 << 16);
        write_frame(&mut tx, &json!({"op": "exec", "code": "print('é')"}))
            .await
            .unwrap();
        drop(tx);
        let mut r = FrameReader::new(rx, 1 << 20, 1 << 20);
        let body: Value = serde_json::from_slice(&r.next().await.unwrap().unwrap()).unwrap();
        assert_eq!(body["code"], "print('é')");
    }
}
