use assay_records::Captured;

/// Accumulates a stream up to a cap, then only counts: a job flooding its output keeps
/// running (and meets its time limit) instead of blocking on a full pipe.
#[derive(Debug)]
pub(crate) struct Capture {
    kept: Vec<u8>,
    total: u64,
    cap: usize,
}

impl Capture {
    pub fn new(cap: usize) -> Self {
        Capture {
            kept: Vec::new(),
            total: 0,
            cap,
        }
    }

    pub fn push(&mut self, bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let room = self.cap.saturating_sub(self.kept.len());
        self.kept.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    /// The capture so far; the capture starts again empty.
    pub fn take(&mut self) -> Captured {
        let kept = std::mem::take(&mut self.kept);
        let total = std::mem::take(&mut self.total);
        Captured {
            truncated: total > kept.len() as u64,
            text: String::from_utf8_lossy(&kept).into_owned(),
            total_bytes: total,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_head_and_counts_the_rest() {
        let mut c = Capture::new(5);
        c.push(b"abc");
        c.push(b"defgh");
        let out = c.take();
        assert_eq!(out.text, "abcde");
        assert_eq!(out.total_bytes, 8);
        assert!(out.truncated);
        let empty = c.take();
        assert_eq!(
            (empty.text.as_str(), empty.total_bytes, empty.truncated),
            ("", 0, false)
        );
    }
}
