//! Reading an agent's JSON body by hand: agents send many optional shapes (a string or a list
//! of parts, `null` for absent), and a field of the wrong shape must be refused with its path
//! named (`messages[2].content`), never with a panic.

use serde_json::{Map, Value};

/// A value of the request and the path that names it.
#[derive(Clone, Debug)]
pub(crate) struct Node<'a> {
    value: &'a Value,
    path: String,
}

impl<'a> Node<'a> {
    /// The whole body.
    pub(crate) fn root(value: &'a Value) -> Node<'a> {
        Node {
            value,
            path: String::new(),
        }
    }

    pub(crate) fn value(&self) -> &'a Value {
        self.value
    }

    /// The field `key`; `None` when absent or `null` (agents send both for "not given").
    pub(crate) fn get(&self, key: &str) -> Option<Node<'a>> {
        let value = self.value.get(key).filter(|v| !v.is_null())?;
        let path = if self.path.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.path)
        };
        Some(Node { value, path })
    }

    /// The field `key`, which must be there.
    pub(crate) fn field(&self, key: &str) -> Result<Node<'a>, String> {
        self.get(key).ok_or_else(|| {
            if self.path.is_empty() {
                format!("`{key}` is missing")
            } else {
                format!("`{}.{key}` is missing", self.path)
            }
        })
    }

    /// The items of an array.
    pub(crate) fn items(&self) -> Result<Vec<Node<'a>>, String> {
        let items = self
            .value
            .as_array()
            .ok_or_else(|| self.wrong("an array"))?;
        Ok(items
            .iter()
            .enumerate()
            .map(|(i, value)| Node {
                value,
                path: format!("{}[{i}]", self.path),
            })
            .collect())
    }

    pub(crate) fn object(&self) -> Result<&'a Map<String, Value>, String> {
        self.value
            .as_object()
            .ok_or_else(|| self.wrong("an object"))
    }

    pub(crate) fn str(&self) -> Result<&'a str, String> {
        self.value.as_str().ok_or_else(|| self.wrong("a string"))
    }

    pub(crate) fn f64(&self) -> Result<f64, String> {
        self.value.as_f64().ok_or_else(|| self.wrong("a number"))
    }

    /// A count of tokens: a non-negative integer, saturated at `u32::MAX`.
    pub(crate) fn count(&self) -> Result<u32, String> {
        let n = self
            .value
            .as_u64()
            .ok_or_else(|| self.wrong("a non-negative integer"))?;
        Ok(u32::try_from(n).unwrap_or(u32::MAX))
    }

    pub(crate) fn bool(&self) -> Result<bool, String> {
        self.value
            .as_bool()
            .ok_or_else(|| self.wrong("true or false"))
    }

    /// A string, or a list of them (OpenAI's `stop`).
    pub(crate) fn strings(&self) -> Result<Vec<String>, String> {
        match self.value {
            Value::String(s) => Ok(vec![s.clone()]),
            Value::Array(_) => self
                .items()?
                .iter()
                .map(|item| item.str().map(String::from))
                .collect(),
            _ => Err(self.wrong("a string or an array of strings")),
        }
    }

    /// The `type` of an object, if it has one.
    pub(crate) fn kind(&self) -> Option<&'a str> {
        self.value.get("type").and_then(Value::as_str)
    }

    /// The text of a content field: a string, or the text of its parts joined by newlines,
    /// each part that is not text (an image, a file, audio) replaced by a note that it was
    /// left out: the model is told something was there.
    pub(crate) fn text(&self) -> Result<String, String> {
        match self.value {
            Value::String(s) => Ok(s.clone()),
            Value::Array(_) => {
                let parts: Vec<String> = self
                    .items()?
                    .iter()
                    .map(Node::part_text)
                    .collect::<Result<_, _>>()?;
                Ok(parts.join("\n"))
            }
            _ => Err(self.wrong("a string or an array of content parts")),
        }
    }

    /// The text of one content part.
    pub(crate) fn part_text(&self) -> Result<String, String> {
        if let Value::String(s) = self.value {
            return Ok(s.clone());
        }
        self.object()?;
        if let Some(text) = self.get("text") {
            return text.str().map(String::from);
        }
        if let Some(refusal) = self.get("refusal") {
            return refusal.str().map(String::from);
        }
        let kind = self.kind().unwrap_or("content");
        let what = if kind.contains("image") {
            "image"
        } else {
            kind
        };
        Ok(format!("[{what} omitted]"))
    }

    /// "`path` must be `what`".
    pub(crate) fn wrong(&self, what: &str) -> String {
        if self.path.is_empty() {
            format!("the body must be {what}")
        } else {
            format!("`{}` must be {what}", self.path)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn errors_name_the_field() {
        let body = json!({"messages": [{"role": "user"}, {"role": 3}], "stop": null});
        let root = Node::root(&body);
        let messages = root.field("messages").unwrap().items().unwrap();
        assert_eq!(
            messages[1].field("role").unwrap().str().unwrap_err(),
            "`messages[1].role` must be a string"
        );
        assert_eq!(
            messages[0].field("content").unwrap_err(),
            "`messages[0].content` is missing"
        );
        assert!(root.get("stop").is_none(), "null counts as absent");
        assert_eq!(
            root.field("model").unwrap_err(),
            "`model` is missing",
            "top-level fields are named bare"
        );
    }

    #[test]
    fn content_parts_become_text_with_notes_for_the_rest() {
        let content = json!([
            {"type": "text", "text": "look"},
            {"type": "image_url", "image_url": {"url": "data:..."}},
            {"type": "input_image", "image_url": "data:..."},
            {"type": "input_file", "file_id": "f"},
        ]);
        let text = Node::root(&content).text().unwrap();
        assert_eq!(
            text,
            "look\n[image omitted]\n[image omitted]\n[input_file omitted]"
        );
        let err = Node::root(&json!(3)).text().unwrap_err();
        assert_eq!(
            err,
            "the body must be a string or an array of content parts"
        );
    }
}
