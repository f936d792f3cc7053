//! docs/worker-protocol.md is the worker protocol's specification: these tests fail when the
//! Rust types (their JSON schema, derived), the Python worker (its source, read with `ast`) and
//! that page disagree about which messages exist and which fields they carry.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde::Deserialize;
use serde_json::Value;

use super::{job, zygote};
use assay_records::{Conditions, Layers};

type Fields = BTreeSet<String>;
/// Tag → fields, for one direction of one channel.
type Messages = BTreeMap<String, Fields>;

/// The page's four directions, as its `###` headings name them, with the tag key of each.
const SUPERVISOR_TO_ZYGOTE: &str = "Supervisor → zygote";
const ZYGOTE_TO_SUPERVISOR: &str = "Zygote → supervisor";
const SUPERVISOR_TO_JOB: &str = "Supervisor → job process";
const JOB_TO_SUPERVISOR: &str = "Job process → supervisor";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// What the page says: each direction's messages, and the objects inside them.
struct Page {
    directions: BTreeMap<String, Messages>,
    objects: Messages,
}

fn page() -> Page {
    let path = root().join("../../docs/worker-protocol.md");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut page = Page {
        directions: BTreeMap::new(),
        objects: BTreeMap::new(),
    };
    // Where headings put us: a direction (or the objects), and the message (or object).
    let mut direction: Option<String> = None;
    let mut objects = false;
    let mut item: Option<String> = None;
    for line in text.lines() {
        if let Some(heading) = line.strip_prefix("## ") {
            objects = heading.starts_with("Objects");
            direction = None;
            item = None;
        } else if let Some(heading) = line.strip_prefix("### ") {
            direction = heading.contains('→').then(|| heading.trim().to_string());
            item = None;
        } else if let Some(heading) = line.strip_prefix("#### ") {
            let name = heading.trim().trim_matches('`').to_string();
            let messages = match (&direction, objects) {
                (Some(d), _) => page.directions.entry(d.clone()).or_default(),
                (None, true) => &mut page.objects,
                (None, false) => panic!("#### {name} is under no direction"),
            };
            assert!(
                messages.insert(name.clone(), Fields::new()).is_none(),
                "{name} twice"
            );
            item = Some(name);
        } else if let (Some(name), Some(row)) = (&item, line.strip_prefix("| `")) {
            let field = row.split('`').next().unwrap_or_default().to_string();
            let messages = match &direction {
                Some(d) => page.directions.get_mut(d).unwrap(),
                None => &mut page.objects,
            };
            messages.get_mut(name).unwrap().insert(field);
        }
    }
    page
}

/// The messages a derived schema allows: each `oneOf` branch's tag and other properties.
fn messages(schema: &Value, tag: &str) -> Messages {
    let branches = schema["oneOf"]
        .as_array()
        .expect("a tagged enum's schema is a oneOf");
    branches
        .iter()
        .map(|branch| {
            let properties = branch["properties"].as_object().expect("an object branch");
            let name = properties[tag]["const"].as_str().expect("a constant tag");
            let fields = properties.keys().filter(|k| *k != tag).cloned().collect();
            (name.to_string(), fields)
        })
        .collect()
}

/// The objects a schema defines (structs; enums and aliases have no properties), by type name.
fn objects(schema: &Value, into: &mut Messages) {
    for (name, def) in schema["$defs"].as_object().into_iter().flatten() {
        if let Some(properties) = def["properties"].as_object() {
            into.insert(name.clone(), properties.keys().cloned().collect());
        }
    }
}

fn keys_of(value: impl serde::Serialize) -> Fields {
    let value = serde_json::to_value(value).unwrap();
    value.as_object().unwrap().keys().cloned().collect()
}

/// Each direction's messages and the objects, as the Rust types have them.
fn rust() -> Page {
    let schemas = [
        (
            SUPERVISOR_TO_ZYGOTE,
            "op",
            schemars::schema_for!(zygote::Request),
        ),
        (
            ZYGOTE_TO_SUPERVISOR,
            "op",
            schemars::schema_for!(zygote::Reply),
        ),
        (SUPERVISOR_TO_JOB, "op", schemars::schema_for!(job::Control)),
        (JOB_TO_SUPERVISOR, "ev", schemars::schema_for!(job::Event)),
    ];
    let mut page = Page {
        directions: BTreeMap::new(),
        objects: BTreeMap::new(),
    };
    for (direction, tag, schema) in schemas {
        let schema = serde_json::to_value(schema).unwrap();
        page.directions
            .insert(direction.to_string(), messages(&schema, tag));
        objects(&schema, &mut page.objects);
    }
    // Types of other crates the schema leaves opaque: their fields as they serialize.
    page.objects
        .insert("Layers".into(), keys_of(Layers::default()));
    page.objects
        .insert("Conditions".into(), keys_of(Conditions::default()));
    page
}

/// The differences between two listings, one line each; empty when they agree.
fn differences(what: &str, documented: &Messages, actual: &Messages, side: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (name, fields) in actual {
        match documented.get(name) {
            None => out.push(format!("{what}: `{name}` ({side}) is not documented")),
            Some(doc) if doc != fields => out.push(format!(
                "{what}: `{name}` has fields {fields:?} ({side}) but the page lists {doc:?}"
            )),
            Some(_) => {}
        }
    }
    for name in documented.keys().filter(|n| !actual.contains_key(*n)) {
        out.push(format!("{what}: `{name}` is documented but not in {side}"));
    }
    out
}

#[test]
fn the_rust_types_are_the_documented_protocol() {
    let page = page();
    let rust = rust();
    let mut problems = Vec::new();
    for (direction, messages) in &rust.directions {
        let documented = page.directions.get(direction).cloned().unwrap_or_default();
        problems.extend(differences(
            direction,
            &documented,
            messages,
            "the Rust enum",
        ));
    }
    for direction in page.directions.keys() {
        if !rust.directions.contains_key(direction) {
            problems.push(format!("a direction `{direction}` no Rust enum has"));
        }
    }
    problems.extend(differences(
        "objects",
        &page.objects,
        &rust.objects,
        "the Rust types",
    ));
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Reads the worker's source with `ast`: every dict literal tagged `ev` or `op` (what it can
/// send: the test below also requires every sending call to take such a literal, or to
/// forward its own parameter from a sending function), and every tag it dispatches on; and
/// `wire.RECEIVED`, the fields of each message it is sent (it refuses any other).
const READ_WORKER: &str = r#"
import ast, json, pathlib, sys

SENDERS = {"emit", "_emit", "write_frame", "send_message"}
sent, dispatched, problems = [], set(), []

def name_of(func):
    return func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)

def is_op(node):
    """`op`, `x.get("op")` or `x["op"]`."""
    if isinstance(node, ast.Name):
        return node.id == "op"
    if isinstance(node, ast.Call) and name_of(node.func) == "get" and node.args:
        arg = node.args[0]
        return isinstance(arg, ast.Constant) and arg.value == "op"
    if isinstance(node, ast.Subscript):
        return isinstance(node.slice, ast.Constant) and node.slice.value == "op"
    return False

for path in sorted(pathlib.Path(sys.argv[1]).glob("*.py")):
    tree = ast.parse(path.read_text())
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    where = lambda node: f"{path.name}:{node.lineno}"
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            keys = [k.value if isinstance(k, ast.Constant) else None for k in node.keys]
            tags = [k for k in ("ev", "op") if k in keys]
            if not tags:
                continue
            value = node.values[keys.index(tags[0])]
            if None in keys or not isinstance(value, ast.Constant):
                problems.append(f"{where(node)}: a message built from something not literal")
                continue
            fields = sorted(k for k in keys if k != tags[0])
            sent.append({"key": tags[0], "tag": value.value, "fields": fields,
                         "at": where(node)})
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(is_op(s) for s in sides):
                dispatched.update(s.value for s in sides
                                  if isinstance(s, ast.Constant) and isinstance(s.value, str))
        elif isinstance(node, ast.Assign) and any(
                getattr(t, "id", None) == "JOB_KINDS" for t in node.targets):
            dispatched.update(k.value for k in node.value.keys)
        elif isinstance(node, ast.Call) and name_of(node.func) in SENDERS:
            index = 1 if name_of(node.func) in ("write_frame", "send_message") else 0
            if len(node.args) <= index:
                problems.append(f"{where(node)}: a sending call without its message")
                continue
            frame = node.args[index]
            if isinstance(frame, ast.Dict):
                continue
            scope = parents.get(node)
            while scope is not None and not isinstance(scope, ast.FunctionDef):
                scope = parents.get(scope)
            forwards = (isinstance(frame, ast.Name) and scope is not None
                        and scope.name in SENDERS
                        and frame.id in [a.arg for a in scope.args.args])
            if not forwards:
                problems.append(f"{where(node)}: sends a message that is not a literal")

sys.path.insert(0, str(pathlib.Path(sys.argv[1]).parent))
from assay_worker import wire
received = {op: sorted(required | optional) for op, (required, optional) in wire.RECEIVED.items()}
print(json.dumps({"sent": sent, "dispatched": sorted(dispatched), "received": received,
                  "problems": problems}))
"#;

/// What `READ_WORKER` found.
#[derive(Deserialize)]
struct Worker {
    /// Every message literal, where it is.
    sent: Vec<Literal>,
    /// The tags it dispatches on.
    dispatched: BTreeSet<String>,
    /// `wire.RECEIVED`: each message it is sent, with the fields it takes.
    received: Messages,
    /// Sending calls whose message is not a literal, literals with computed parts.
    problems: Vec<String>,
}

#[derive(Deserialize)]
struct Literal {
    /// `ev` (results pipe) or `op` (zygote socket).
    key: String,
    tag: String,
    fields: Fields,
    /// `file:line`.
    at: String,
}

#[test]
#[allow(clippy::disallowed_methods)] // the system python3 reads source; it runs no worker code
fn the_python_worker_is_the_documented_protocol() {
    let worker = root().join("python/assay_worker");
    let out = std::process::Command::new("python3")
        .arg("-c")
        .arg(READ_WORKER)
        .arg(&worker)
        .output()
        .expect("python3 runs (it reads the worker's source)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let found: Worker = serde_json::from_slice(&out.stdout).unwrap();
    let page = page();
    let mut problems = found.problems;
    assert!(found.sent.len() > 5, "too few messages found");
    // What the worker sends: exactly the documented fields, and every documented message.
    let mut sent: BTreeMap<&str, Messages> = BTreeMap::new();
    for message in found.sent {
        let direction = match message.key.as_str() {
            "op" => ZYGOTE_TO_SUPERVISOR,
            _ => JOB_TO_SUPERVISOR,
        };
        let documented = page.directions[direction].get(&message.tag);
        if documented != Some(&message.fields) {
            problems.push(format!(
                "{}: sends `{}` with {:?}; the page ({direction}) lists {documented:?}",
                message.at, message.tag, message.fields
            ));
        }
        sent.entry(direction)
            .or_default()
            .insert(message.tag, message.fields);
    }
    for direction in [ZYGOTE_TO_SUPERVISOR, JOB_TO_SUPERVISOR] {
        for tag in page.directions[direction].keys() {
            if !sent.get(direction).is_some_and(|s| s.contains_key(tag)) {
                problems.push(format!("{direction}: `{tag}` is documented but never sent"));
            }
        }
    }
    // What the worker acts on: the documented messages to it, and no other; each with
    // exactly the documented fields.
    let mut to_worker = Messages::new();
    for direction in [SUPERVISOR_TO_ZYGOTE, SUPERVISOR_TO_JOB] {
        to_worker.extend(page.directions[direction].clone());
    }
    let documented_tags: BTreeSet<String> = to_worker.keys().cloned().collect();
    if found.dispatched != documented_tags {
        problems.push(format!(
            "the worker acts on {:?}; the page lists {documented_tags:?} sent to it",
            found.dispatched
        ));
    }
    problems.extend(differences(
        "what the worker is sent",
        &to_worker,
        &found.received,
        "wire.RECEIVED",
    ));
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The page's reading of itself: a table row outside a message, or a message without its
/// direction, would make the checks above vacuous.
#[test]
fn the_page_lists_all_four_directions() {
    let page = page();
    let counts: Vec<(&str, usize)> = page
        .directions
        .iter()
        .map(|(d, m)| (d.as_str(), m.len()))
        .collect();
    assert_eq!(
        counts,
        [
            (JOB_TO_SUPERVISOR, 14),
            (SUPERVISOR_TO_JOB, 6),
            (SUPERVISOR_TO_ZYGOTE, 3),
            (ZYGOTE_TO_SUPERVISOR, 5)
        ]
    );
    assert!(page.directions[JOB_TO_SUPERVISOR]["test"].contains("outcome"));
    assert!(page.objects["Rusage"].contains("maxrss_kib"));
}
