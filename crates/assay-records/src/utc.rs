//! Unix seconds as a UTC calendar date and time, without a date library: run directories keep
//! whole seconds in UTC, so the civil calendar is all there is to it. The official results'
//! `date` and Inspect's timestamps are both written from it.

/// A moment in UTC, to the second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Utc {
    /// The year.
    pub year: u64,
    /// 1 to 12.
    pub month: u64,
    /// 1 to 31.
    pub day: u64,
    /// 0 to 23.
    pub hour: u64,
    /// 0 to 59.
    pub minute: u64,
    /// 0 to 59.
    pub second: u64,
}

impl Utc {
    /// The moment `seconds` after the Unix epoch.
    pub fn of(seconds: u64) -> Utc {
        let (days, rest) = (seconds / 86_400, seconds % 86_400);
        let (year, month, day) = civil_date(days);
        Utc {
            year,
            month,
            day,
            hour: rest / 3600,
            minute: rest % 3600 / 60,
            second: rest % 60,
        }
    }
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
