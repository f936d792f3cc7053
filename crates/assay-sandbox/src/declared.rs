//! The tests a unittest source declares, read from the source on the supervisor's side.
//!
//! Inside the job, the test class is built by the same interpreter that ran the untrusted code
//! first, and that code can arrange for the class to come out with no test methods, renamed
//! ones or extra ones (a `builtins.__build_class__` hook, a substituted `unittest` module, a
//! metaclass): then "every test passed" is vacuously true. What the source declares is known
//! before anything runs, so the supervisor reads it here, with tree-sitter, and a run whose
//! reported tests are not exactly these is not a pass.
//!
//! `unittest.TestLoader` takes every callable attribute of the class whose name starts with
//! `test`, inherited ones included. This reads the same off the syntax: `def test…` (decorated
//! or not) and nested classes in the class body, plus what top-level base classes of the same
//! source declare. Where the syntax cannot tell (a decorated class, a metaclass keyword, a base
//! from elsewhere, a `test…` name bound to something that is not a plain literal, definitions
//! under `if`/`for`/`try` in the class body), the answer is `None`: nothing declared is known,
//! and the job's own list of tests is all there is to check against.

use std::collections::{BTreeSet, HashMap};

use tree_sitter::{Node, Parser};

/// The prefix `unittest.TestLoader` looks for (`testMethodPrefix`).
const PREFIX: &[u8] = b"test";
/// The library's base classes, which declare no tests of their own.
const LIBRARY_BASES: &[&str] = &[
    "unittest.TestCase",
    "TestCase",
    "unittest.IsolatedAsyncioTestCase",
    "IsolatedAsyncioTestCase",
];
/// Base-class chains longer than this are not followed (and cycles end here too).
const MAX_DEPTH: usize = 16;

/// The test method names `class` declares in `source`, sorted as `unittest` runs them, or
/// `None` when the source does not say (see the module documentation).
pub fn declared_tests(source: &str, class: &str) -> Option<Vec<String>> {
    let mut parser = Parser::new();
    // Fails only if the grammar was built for another tree-sitter ABI: a build error.
    parser
        .set_language(&tree_sitter_python::LANGUAGE.into())
        .expect("tree-sitter-python matches the tree-sitter runtime");
    // `parse` gives up only on a timeout or cancellation, and none is set.
    let tree = parser
        .parse(source, None)
        .expect("parsing without a deadline");
    let source = source.as_bytes();
    let classes = top_level_classes(tree.root_node(), source);
    let names = tests_of(class.as_bytes(), &classes, source, 0)?;
    Some(
        names
            .into_iter()
            .map(|n| String::from_utf8_lossy(n).into_owned())
            .collect(),
    )
}

/// Top-level `class` statements by name; a later one of the same name wins, as at run time.
/// A decorated class is kept as its decorated node, so that its decorators are seen.
fn top_level_classes<'s, 't>(root: Node<'t>, source: &'s [u8]) -> HashMap<&'s [u8], Node<'t>> {
    let mut classes = HashMap::new();
    let mut cursor = root.walk();
    for statement in root.named_children(&mut cursor) {
        let class = match statement.kind() {
            "class_definition" => statement,
            "decorated_definition" => match statement.child_by_field_name("definition") {
                Some(d) if d.kind() == "class_definition" => d,
                _ => continue,
            },
            _ => continue,
        };
        if let Some(name) = class.child_by_field_name("name") {
            classes.insert(text(name, source), statement);
        }
    }
    classes
}

fn tests_of<'s>(
    class: &[u8],
    classes: &HashMap<&[u8], Node>,
    source: &'s [u8],
    depth: usize,
) -> Option<BTreeSet<&'s [u8]>> {
    let statement = *classes.get(class)?;
    if depth > MAX_DEPTH || statement.kind() == "decorated_definition" {
        return None;
    }
    let mut tests = BTreeSet::new();
    if let Some(bases) = statement.child_by_field_name("superclasses") {
        let mut cursor = bases.walk();
        for base in bases.named_children(&mut cursor) {
            match base.kind() {
                "comment" => {}
                "identifier" | "attribute" => {
                    let name = text(base, source);
                    if LIBRARY_BASES.iter().any(|b| b.as_bytes() == name) {
                        continue;
                    }
                    if base.kind() != "identifier" {
                        return None;
                    }
                    tests.extend(tests_of(name, classes, source, depth + 1)?);
                }
                // `metaclass=`, `*bases`, `**kwargs`, or an expression: not readable.
                _ => return None,
            }
        }
    }
    let body = statement.child_by_field_name("body")?;
    let mut cursor = body.walk();
    for member in body.named_children(&mut cursor) {
        match member.kind() {
            "function_definition" | "class_definition" => {
                if let Some(name) = member.child_by_field_name("name") {
                    let name = text(name, source);
                    // A nested class is callable too; a plain `def` always is.
                    if name.starts_with(PREFIX) {
                        tests.insert(name);
                    }
                }
            }
            "decorated_definition" => {
                let name = member
                    .child_by_field_name("definition")
                    .and_then(|d| d.child_by_field_name("name"))?;
                let name = text(name, source);
                if name.starts_with(PREFIX) {
                    // `@patch(...)`, `@unittest.skip(...)` and friends keep a callable; a
                    // decorator that does not (`@property`) cannot be told apart here.
                    if decorated_with(member, source, b"property") {
                        return None;
                    }
                    tests.insert(name);
                }
            }
            "expression_statement" => {
                if let Some(name) = assigned_test_name(member, source)? {
                    // A literal is not callable: not a test, and it hides an inherited one.
                    tests.remove(name);
                }
            }
            "comment" | "pass_statement" => {}
            // Definitions under `if`, `for`, `while`, `with` or `try` depend on run time.
            kind if is_compound(kind) => return None,
            _ => {}
        }
    }
    Some(tests)
}

/// For `test… = <literal>` the name; `Some(None)` for statements that bind no `test…` name;
/// `None` (the class's tests are unknown) when a `test…` name is bound to anything else.
fn assigned_test_name<'s>(statement: Node, source: &'s [u8]) -> Option<Option<&'s [u8]>> {
    let mut cursor = statement.walk();
    for expression in statement.named_children(&mut cursor) {
        if expression.kind() != "assignment" && expression.kind() != "augmented_assignment" {
            continue;
        }
        let Some(left) = expression.child_by_field_name("left") else {
            continue;
        };
        let names = bound_names(left, source);
        if !names.iter().any(|n| n.starts_with(PREFIX)) {
            continue;
        }
        let literal = expression.kind() == "assignment"
            && names.len() == 1
            && expression
                .child_by_field_name("right")
                .is_some_and(|right| is_literal(right));
        return if literal { Some(Some(names[0])) } else { None };
    }
    Some(None)
}

/// The plain names an assignment target binds (`a`, `a, b`, `[a, b]`); attributes and
/// subscripts bind none.
fn bound_names<'s>(target: Node, source: &'s [u8]) -> Vec<&'s [u8]> {
    match target.kind() {
        "identifier" => vec![text(target, source)],
        "pattern_list" | "tuple_pattern" | "list_pattern" | "list_splat_pattern" => {
            let mut cursor = target.walk();
            target
                .named_children(&mut cursor)
                .flat_map(|t| bound_names(t, source))
                .collect()
        }
        _ => Vec::new(),
    }
}

/// Values that can never be callable: literals and displays of them.
fn is_literal(value: Node) -> bool {
    matches!(
        value.kind(),
        "string"
            | "concatenated_string"
            | "integer"
            | "float"
            | "true"
            | "false"
            | "none"
            | "list"
            | "tuple"
            | "dictionary"
            | "set"
            | "list_comprehension"
            | "dictionary_comprehension"
            | "set_comprehension"
    ) || (value.kind() == "parenthesized_expression"
        && value.named_child(0).is_some_and(is_literal))
}

fn is_compound(kind: &str) -> bool {
    matches!(
        kind,
        "if_statement"
            | "for_statement"
            | "while_statement"
            | "with_statement"
            | "try_statement"
            | "match_statement"
    )
}

/// Whether one of `decorated`'s decorators is written exactly `name` (`@property`).
fn decorated_with(decorated: Node, source: &[u8], name: &[u8]) -> bool {
    let mut cursor = decorated.walk();
    let found = decorated
        .named_children(&mut cursor)
        .filter(|n| n.kind() == "decorator")
        .filter_map(|d| d.named_child(0))
        .any(|e| text(e, source) == name);
    found
}

fn text<'s>(node: Node, source: &'s [u8]) -> &'s [u8] {
    &source[node.byte_range()]
}

#[cfg(test)]
mod tests {
    use super::declared_tests;

    fn declared(source: &str) -> Option<Vec<String>> {
        declared_tests(source, "TestCases")
    }

    #[test]
    fn plain_and_decorated_methods_in_name_order() {
        let source = r#"
import unittest
from unittest.mock import patch

class TestCases(unittest.TestCase):
    """Docstring."""
    data_dir = "x"
    test_data_dir = f"{data_dir}/test"
    test_files = {"a": 1}

    def setUp(self):
        self.test_value = 1

    def test_b(self):
        pass

    @patch("os.listdir")
    def test_a(self, listdir):
        pass

    async def test_async(self):
        pass

    def helper_test(self):
        pass

    def test_b(self):  # redefined: one test
        pass
"#;
        assert_eq!(
            declared(source).unwrap(),
            ["test_a", "test_async", "test_b"]
        );
    }

    #[test]
    fn bases_of_the_same_source_contribute_their_tests() {
        let source = r#"
from unittest import TestCase

class Base(TestCase):
    def test_shared(self):
        pass
    test_hidden = None

class TestCases(Base):
    def test_own(self):
        pass
    test_shared = "no longer a test"
"#;
        assert_eq!(declared(source).unwrap(), ["test_own"]);
    }

    #[test]
    fn what_the_syntax_cannot_tell_is_unknown() {
        for source in [
            "class Other(unittest.TestCase):\n    def test_x(self): pass\n",
            "import m\nclass TestCases(m.Mixin, unittest.TestCase):\n    def test_x(self): pass\n",
            "class TestCases(unittest.TestCase, metaclass=M):\n    def test_x(self): pass\n",
            "@decorate\nclass TestCases(unittest.TestCase):\n    def test_x(self): pass\n",
            "class TestCases(unittest.TestCase):\n    if FLAG:\n        def test_x(self): pass\n",
            "class TestCases(unittest.TestCase):\n    test_x = make_test()\n",
            "class TestCases(unittest.TestCase):\n    test_x, other = 1, 2\n",
            "class TestCases(unittest.TestCase):\n    @property\n    def test_x(self): pass\n",
            "class A(B):\n    pass\nclass B(A):\n    pass\nclass TestCases(A):\n    pass\n",
        ] {
            assert_eq!(declared(source), None, "{source}");
        }
    }

    #[test]
    fn the_last_class_of_a_name_wins() {
        let source = "class TestCases(unittest.TestCase):\n    def test_old(self): pass\n\
                      class TestCases(unittest.TestCase):\n    def test_new(self): pass\n";
        assert_eq!(declared(source).unwrap(), ["test_new"]);
    }
}
