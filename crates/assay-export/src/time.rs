//! Unix seconds as the ISO 8601 UTC text Inspect's logs carry (`2026-12-02T02:04:04+00:00`),
//! without a date library: run directories keep whole seconds in UTC, so the civil calendar is
//! all there is to it.

/// `seconds` after the Unix epoch, as `YYYY-MM-DDTHH:MM:SS+00:00`.
pub fn iso8601(seconds: u64) -> String {
    let (days, rest) = (seconds / 86_400, seconds % 86_400);
    let (year, month, day) = civil_date(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}+00:00",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// The proleptic Gregorian date `days` after 1970-01-01: counted in 400-year eras of 146,097
/// days, each year taken to start on March 1st so that the leap day ends it.
fn civil_date(days: u64) -> (u64, u64, u64) {
    let shifted = days + 719_468; // days from 0000-03-01 to 1970-01-01
    let era = shifted / 146_097;
    let day_of_era = shifted % 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    };
    let year = era * 400 + year_of_era + u64::from(month <= 2);
    (year, month, day)
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
