//! A trajectory as upstream's judge script shows it: `json.dumps(json.loads(line),
//! ensure_ascii=False, indent=4)`. The judge reads these bytes, so they are reproduced
//! exactly: keys in the line's order (a repeated key keeps its first place and its last
//! value, as a Python dict does), four-space indents, Python's string escapes and float
//! forms.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// A JSON value as Python's `json.loads` keeps it: objects in their order.
#[derive(Debug, Clone, PartialEq)]
pub enum PyValue {
    /// `null` (Python's `None`).
    Null,
    /// `true`, `false`.
    Bool(bool),
    /// An integer.
    Int(i128),
    /// A float.
    Float(f64),
    /// A string.
    Str(String),
    /// A list.
    List(Vec<PyValue>),
    /// An object, in the order its keys came.
    Object(Vec<(String, PyValue)>),
}

impl PyValue {
    /// The line read as `json.loads` reads it.
    pub fn parse(line: &str) -> Result<PyValue, serde_json::Error> {
        serde_json::from_str(line)
    }

    /// The value of `key`, if this is an object that has it.
    pub fn get(&self, key: &str) -> Option<&PyValue> {
        match self {
            PyValue::Object(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The object without `key` in the objects of its `list` field (a trajectory's messages
    /// without assay's `thinking`).
    pub fn drop_in_list(&mut self, list: &str, key: &str) {
        if let PyValue::Object(entries) = self {
            for (name, value) in entries.iter_mut() {
                if name == list {
                    if let PyValue::List(items) = value {
                        for item in items {
                            if let PyValue::Object(fields) = item {
                                fields.retain(|(k, _)| k != key);
                            }
                        }
                    }
                }
            }
        }
    }

    /// `json.dumps(value, ensure_ascii=False, indent=4)`.
    pub fn dumps_indented(&self) -> String {
        let mut out = String::new();
        self.write(&mut out, Some(0));
        out
    }

    /// `json.dumps(value, ensure_ascii=False)`: one line, `", "` and `": "` between items.
    pub fn dumps_line(&self) -> String {
        let mut out = String::new();
        self.write(&mut out, None);
        out
    }

    /// Writes the value at `depth` (none: on one line).
    fn write(&self, out: &mut String, depth: Option<usize>) {
        // Before an item (`first`: the first of its container) and before a closing bracket.
        let before = |out: &mut String, depth: Option<usize>, first: bool| match depth {
            Some(depth) => {
                if !first {
                    out.push(',');
                }
                out.push('\n');
                out.extend(std::iter::repeat_n(' ', 4 * depth));
            }
            None if !first => out.push_str(", "),
            None => {}
        };
        let inner = depth.map(|d| d + 1);
        match self {
            PyValue::Null => out.push_str("null"),
            PyValue::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            PyValue::Int(i) => out.push_str(&i.to_string()),
            PyValue::Float(f) => out.push_str(&float_repr(*f)),
            PyValue::Str(s) => write_str(out, s),
            PyValue::List(items) if items.is_empty() => out.push_str("[]"),
            PyValue::List(items) => {
                out.push('[');
                for (n, item) in items.iter().enumerate() {
                    before(out, inner, n == 0);
                    item.write(out, inner);
                }
                if let Some(depth) = depth {
                    out.push('\n');
                    out.extend(std::iter::repeat_n(' ', 4 * depth));
                }
                out.push(']');
            }
            PyValue::Object(entries) if entries.is_empty() => out.push_str("{}"),
            PyValue::Object(entries) => {
                out.push('{');
                for (n, (key, value)) in entries.iter().enumerate() {
                    before(out, inner, n == 0);
                    write_str(out, key);
                    out.push_str(": ");
                    value.write(out, inner);
                }
                if let Some(depth) = depth {
                    out.push('\n');
                    out.extend(std::iter::repeat_n(' ', 4 * depth));
                }
                out.push('}');
            }
        }
    }
}

/// A string as `json.dumps(..., ensure_ascii=False)` writes it.
fn write_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Python's `repr` of a float: the shortest digits that read back, positional when the
/// exponent is from -4 to 15, else `1e+16` / `1e-05`.
fn float_repr(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    // Rust's `{:e}` gives the same shortest round-trip digits: `-1.25e-5`.
    let sci = format!("{f:e}");
    let (mantissa, exponent) = sci.split_once('e').expect("{:e} has an exponent");
    let exponent: i32 = exponent.parse().expect("{:e}'s exponent is a number");
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    if (-4..16).contains(&exponent) {
        let point = exponent + 1;
        let body = if point <= 0 {
            format!("0.{}{digits}", "0".repeat(point.unsigned_abs() as usize))
        } else {
            let point = point as usize;
            if digits.len() <= point {
                format!("{digits}{}.0", "0".repeat(point - digits.len()))
            } else {
                format!("{}.{}", &digits[..point], &digits[point..])
            }
        };
        format!("{sign}{body}")
    } else {
        let mantissa = if digits.len() == 1 {
            digits
        } else {
            format!("{}.{}", &digits[..1], &digits[1..])
        };
        let exp_sign = if exponent < 0 { '-' } else { '+' };
        format!("{sign}{mantissa}e{exp_sign}{:02}", exponent.abs())
    }
}

impl<'de> Deserialize<'de> for PyValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<PyValue, D::Error> {
        deserializer.deserialize_any(PyVisitor)
    }
}

struct PyVisitor;

impl<'de> Visitor<'de> for PyVisitor {
    type Value = PyValue;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E>(self) -> Result<PyValue, E> {
        Ok(PyValue::Null)
    }

    fn visit_bool<E>(self, b: bool) -> Result<PyValue, E> {
        Ok(PyValue::Bool(b))
    }

    fn visit_i64<E>(self, i: i64) -> Result<PyValue, E> {
        Ok(PyValue::Int(i.into()))
    }

    fn visit_u64<E>(self, u: u64) -> Result<PyValue, E> {
        Ok(PyValue::Int(u.into()))
    }

    fn visit_f64<E>(self, f: f64) -> Result<PyValue, E> {
        Ok(PyValue::Float(f))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<PyValue, E> {
        Ok(PyValue::Str(s.to_string()))
    }

    fn visit_string<E>(self, s: String) -> Result<PyValue, E> {
        Ok(PyValue::Str(s))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<PyValue, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(PyValue::List(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<PyValue, A::Error> {
        let mut entries: Vec<(String, PyValue)> = Vec::new();
        while let Some((key, value)) = map.next_entry::<String, PyValue>()? {
            match entries.iter_mut().find(|(k, _)| *k == key) {
                Some(entry) => entry.1 = value,
                None => entries.push((key, value)),
            }
        }
        Ok(PyValue::Object(entries))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_read_as_python_writes_them() {
        for (f, python) in [
            (1.0, "1.0"),
            (0.5, "0.5"),
            (-2.25, "-2.25"),
            (1e15, "1000000000000000.0"),
            (1e16, "1e+16"),
            (1.5e16, "1.5e+16"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-1.25e-7, "-1.25e-07"),
            (123456.789, "123456.789"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1e300, "1e+300"),
        ] {
            assert_eq!(float_repr(f), python, "{f}");
        }
    }

    #[test]
    fn objects_keep_their_order_and_python_layout() {
        let value = PyValue::parse(
            r#"{"z": [1, {"b": "é\u0001\n\"", "a": []}], "y": {}, "z2": null, "y": true}"#,
        )
        .unwrap();
        assert_eq!(
            value.dumps_line(),
            r#"{"z": [1, {"b": "é\u0001\n\"", "a": []}], "y": true, "z2": null}"#
        );
        assert_eq!(
            value.dumps_indented(),
            "{\n    \"z\": [\n        1,\n        {\n            \"b\": \"é\\u0001\\n\\\"\",\n            \
             \"a\": []\n        }\n    ],\n    \"y\": true,\n    \"z2\": null\n}"
        );
    }
}
