//! Sampling settings, with the official defaults: greedy (temperature 0, one sample) unless
//! more samples are wanted, then temperature 0.8 and top-p 0.95.

use assay_records::{GenerationSettings, Split};

/// The official generation limit (`max_new_tokens`).
pub const MAX_TOKENS: u32 = 1280;
/// Temperature when sampling several answers and none is given (the BigCodeBench paper's).
pub const SAMPLING_TEMPERATURE: f64 = 0.8;
/// The official nucleus when sampling.
pub const SAMPLING_TOP_P: f64 = 0.95;

/// A sampling setting out of range, named as its option.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct SettingsError(String);

/// Fills in the defaults around what the user gave. `sampling_top_p` says whether the
/// official top-p goes with a temperature above 0 by default: not for APIs that refuse
/// both at once (recent Claude models).
pub fn resolve(
    split: Split,
    n: u32,
    temperature: Option<f64>,
    top_p: Option<f64>,
    max_tokens: Option<u32>,
    sampling_top_p: bool,
) -> Result<GenerationSettings, SettingsError> {
    let bad = |m: String| Err(SettingsError(m));
    if n == 0 {
        return bad("-n must be at least 1".into());
    }
    let temperature = temperature.unwrap_or(if n > 1 { SAMPLING_TEMPERATURE } else { 0.0 });
    if !(0.0..=2.0).contains(&temperature) {
        return bad(format!(
            "--temperature {temperature}: must be within 0 and 2"
        ));
    }
    if n > 1 && temperature == 0.0 {
        return bad(format!(
            "-n {n} with --temperature 0 would ask for {n} copies of the greedy answer; \
                 sample with a temperature above 0 (default {SAMPLING_TEMPERATURE})"
        ));
    }
    if let Some(p) = top_p {
        if !(p > 0.0 && p <= 1.0) {
            return bad(format!("--top-p {p}: must be above 0 and at most 1"));
        }
    }
    let top_p = top_p.or((sampling_top_p && temperature > 0.0).then_some(SAMPLING_TOP_P));
    let max_tokens = max_tokens.unwrap_or(MAX_TOKENS);
    if max_tokens == 0 {
        return bad("--max-tokens must be at least 1".into());
    }
    Ok(GenerationSettings {
        split,
        n,
        temperature,
        top_p,
        max_tokens,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_official_ones() {
        let resolve = |n, temperature, top_p, sampling_top_p| {
            super::resolve(Split::Complete, n, temperature, top_p, None, sampling_top_p)
        };
        let greedy = resolve(1, None, None, true).unwrap();
        assert_eq!(
            (greedy.temperature, greedy.top_p, greedy.max_tokens),
            (0.0, None, 1280)
        );
        let sampled = super::resolve(Split::Instruct, 5, None, None, Some(512), true).unwrap();
        assert_eq!(
            (sampled.temperature, sampled.top_p, sampled.max_tokens),
            (0.8, Some(0.95), 512)
        );
        let claude = resolve(5, None, None, false).unwrap();
        assert_eq!((claude.temperature, claude.top_p), (0.8, None));
        assert_eq!(resolve(5, None, Some(0.9), false).unwrap().top_p, Some(0.9));
        let err = resolve(5, Some(0.0), None, true).unwrap_err();
        assert!(
            err.to_string().contains("copies of the greedy answer"),
            "{err}"
        );
        assert!(resolve(1, Some(3.0), None, true).is_err());
        assert!(resolve(1, None, Some(0.0), true).is_err());
        assert!(resolve(0, None, None, true).is_err());
    }
}
