//! Unix seconds as the ISO 8601 UTC text Inspect's logs carry (`2026-12-02T02:04:04+00:00`).

use assay_records::Utc;

/// `seconds` after the Unix epoch, as `YYYY-MM-DDTHH:MM:SS+00:00`.
pub fn iso8601(seconds: u64) -> String {
    let t = Utc::of(seconds);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}+00:00",
        t.year, t.month, t.day, t.hour, t.minute, t.second
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_agree_with_pythons_datetime() {
        // datetime.fromtimestamp(s, timezone.utc).isoformat() for each s.
        for (seconds, text) in [
            (0, "1970-01-01T00:00:00+00:00"),
            (951_782_400, "2000-02-29T00:00:00+00:00"),
            (1_796_174_801, "2026-12-02T01:26:41+00:00"),
            (4_107_542_399, "2100-02-28T23:59:59+00:00"),
            (4_107_542_400, "2100-03-01T00:00:00+00:00"),
        ] {
            assert_eq!(iso8601(seconds), text, "{seconds}");
        }
    }
}
