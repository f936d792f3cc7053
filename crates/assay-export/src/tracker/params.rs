//! A run's parameters: what decides its results and never changes for the run, the identity
//! its directory holds (a rerun with other settings is refused there), flattened into names.

use std::collections::BTreeMap;
use std::path::Path;

use assay_records::Manifest;
use serde_json::Value;

use super::name_part;

/// The longest value MLflow keeps in a parameter (`MAX_PARAM_VAL_LENGTH`, MLflow 3): a longer
/// one (a long `--tasks` list) is cut to it, saying how much was left out.
pub const MAX_VALUE_CHARS: usize = 6000;

/// The parameters of `manifest`'s run: `benchmark`, `task` (benchmark and split), `split`,
/// `model`, `kind`, then every identity field as `identity.<field>` (nested ones
/// `identity.<field>.<field>`; lists as JSON). A name two fields would both take (they differ
/// only where a tracker takes no character) keeps the first, with a warning naming both.
pub fn of(
    manifest: &Manifest,
    task: &str,
    model: &str,
    warnings: &mut Vec<String>,
) -> BTreeMap<String, String> {
    let identity = &manifest.identity;
    let mut params = BTreeMap::from([
        ("kind".to_string(), manifest.kind.as_str().to_string()),
        ("task".to_string(), task.to_string()),
        ("model".to_string(), model.to_string()),
    ]);
    if let Some(benchmark) = &identity.benchmark {
        params.insert("benchmark".into(), benchmark.clone());
    }
    if let Some(split) = &identity.split {
        params.insert("split".into(), split.clone());
    }
    let value = serde_json::to_value(identity).unwrap_or_default();
    let mut named = Named::default();
    named.flatten("identity", "identity", &value);
    warnings.append(&mut named.warnings);
    params.extend(
        named
            .params
            .into_iter()
            .map(|(name, (_, value))| (name, value)),
    );
    params
}

/// The model the run is of: the identity's (a replay by its file's name, `replay:trajectory`),
/// or for `assay eval` of a samples file the one the official harness names after the file;
/// `none` when there is none.
pub fn model(manifest: &Manifest) -> String {
    match (&manifest.identity.model, &manifest.samples) {
        (Some(model), _) => match model.split_once(':') {
            Some(("replay", file)) => {
                let stem = Path::new(file).file_stem().unwrap_or_default();
                format!("replay:{}", stem.to_string_lossy())
            }
            _ => model.clone(),
        },
        (None, Some(samples)) => assay_eval::bigcodebench::samples::model_name(samples),
        (None, None) => "none".into(),
    }
}

/// Parameters by name, each with the field it is of (`identity.generation.n`, as the manifest
/// spells it), and what two fields taking one name were.
#[derive(Default)]
struct Named {
    params: BTreeMap<String, (String, String)>,
    warnings: Vec<String>,
}

impl Named {
    /// `value` at the field `path`, named `name`: nested fields as `name.<field>`.
    fn flatten(&mut self, name: &str, path: &str, value: &Value) {
        let text = match value {
            Value::Null => return,
            Value::Object(fields) => {
                for (field, value) in fields {
                    let inner = format!("{name}.{}", name_part(field));
                    self.flatten(&inner, &format!("{path}.{field}"), value);
                }
                return;
            }
            Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        match self.params.entry(name.to_string()) {
            std::collections::btree_map::Entry::Vacant(slot) => {
                slot.insert((path.to_string(), cut(text)));
            }
            std::collections::btree_map::Entry::Occupied(slot) => {
                self.warnings.push(format!(
                    "the fields `{}` and `{path}` are both named parameter `{name}`: the first is \
                     logged",
                    slot.get().0
                ));
            }
        }
    }
}

/// `text` within [`MAX_VALUE_CHARS`]: a longer one ends `… (N more characters)`.
fn cut(text: String) -> String {
    let total = text.chars().count();
    if total <= MAX_VALUE_CHARS {
        return text;
    }
    let note = |left: usize| format!("… ({left} more characters)");
    // The note for `total` is at least as long as the one for what is left out.
    let keep = MAX_VALUE_CHARS - note(total).chars().count();
    let kept: String = text.chars().take(keep).collect();
    format!("{kept}{}", note(total - keep))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_values_are_cut_to_what_mlflow_keeps_saying_how_much_is_left_out() {
        let short = "x".repeat(MAX_VALUE_CHARS);
        assert_eq!(cut(short.clone()), short);
        let long = "é".repeat(MAX_VALUE_CHARS + 500);
        let cut = cut(long);
        // Within the limit, the note's own length reckoned with the most digits it can have.
        let length = cut.chars().count();
        assert!(
            (MAX_VALUE_CHARS - 4..=MAX_VALUE_CHARS).contains(&length),
            "{length}"
        );
        assert!(cut.ends_with(" more characters)"), "{cut}");
        let left: usize = cut
            .rsplit('(')
            .next()
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(
            cut.chars().filter(|&c| c == 'é').count() + left,
            MAX_VALUE_CHARS + 500
        );
    }

    #[test]
    fn nested_identity_fields_are_named_by_their_path_and_lists_kept_as_json() {
        let mut named = Named::default();
        let value = serde_json::json!({
            "model": "openai:gpt-4o",
            "generation": {"temperature": 0.8, "n": 2, "top_p": null},
            "tasks": ["BigCodeBench/1", "BigCodeBench/2"],
            "network": false,
        });
        named.flatten("identity", "identity", &value);
        let into: BTreeMap<_, _> = named.params.into_iter().map(|(k, (_, v))| (k, v)).collect();
        assert_eq!(into["identity.model"], "openai:gpt-4o");
        assert_eq!(into["identity.generation.temperature"], "0.8");
        assert_eq!(into["identity.generation.n"], "2");
        assert!(!into.contains_key("identity.generation.top_p"));
        assert_eq!(
            into["identity.tasks"],
            r#"["BigCodeBench/1","BigCodeBench/2"]"#
        );
        assert_eq!(into["identity.network"], "false");
        assert!(named.warnings.is_empty());
    }

    #[test]
    fn two_fields_taking_one_name_keep_the_first_and_name_both() {
        let mut named = Named::default();
        let value = serde_json::json!({"extra": {"a+b": 1, "a_b": 2}});
        named.flatten("identity", "identity", &value);
        assert_eq!(named.params["identity.extra.a_b"].1, "1");
        assert_eq!(
            named.warnings,
            ["the fields `identity.extra.a+b` and `identity.extra.a_b` are both named parameter \
              `identity.extra.a_b`: the first is logged"]
        );
    }
}
