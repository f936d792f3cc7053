//! The official `extract_target_code_or_empty` after its `code_extract`: keep the imports and
//! the top-level definitions the entry point can reach, then trim trailing lines that mention it.
//!
//! The structure comes from tree-sitter-python 0.23 like the official's (node kinds and byte
//! ranges are grammar facts: `from __future__` is not an import node, decorated definitions and
//! `try` blocks are other kinds and are dropped, and so on). The workspace pins the grammar the
//! official ran, 0.23.5; any upgrade must pass the parity tests again.
//!
//! Quirks kept on purpose because the official output has them: the first definition of a name
//! wins whatever its kind; assignments to several targets or to attributes have no name and are
//! never reachable; "reachable" means "named by any identifier inside a reachable definition"
//! (parameters, attributes and keyword names included); the trim treats only a leading space as
//! indentation.

use std::collections::{HashMap, HashSet, VecDeque};

use tree_sitter::{Node, Parser};

use crate::pystr;

/// The official `extract_target_code_or_empty` minus its first step: `code` is already the
/// extracted span. An empty `entry_point` keeps every definition (the official's falsy check).
pub(crate) fn target_code(code: &str, entry_point: &str) -> String {
    let mut parser = Parser::new();
    // Fails only if the grammar was built for another tree-sitter ABI: a build error.
    parser
        .set_language(&tree_sitter_python::LANGUAGE.into())
        .expect("tree-sitter-python matches the tree-sitter runtime");
    // `parse` gives up only on a timeout or cancellation, and none is set.
    let tree = parser
        .parse(code, None)
        .expect("parsing without a deadline");
    let source = code.as_bytes();
    let top_level = TopLevel::collect(tree.root_node(), source);
    let reachable = (!entry_point.is_empty())
        .then(|| reachable_names(entry_point.as_bytes(), &top_level.definitions, source));

    let mut kept = Vec::with_capacity(source.len());
    let definitions = top_level.definitions.iter().filter(|(name, _)| {
        reachable
            .as_ref()
            .is_none_or(|reachable| name.is_some_and(|name| reachable.contains(name)))
    });
    for node in top_level
        .imports
        .iter()
        .chain(definitions.map(|(_, node)| node))
    {
        kept.extend_from_slice(text(*node, source));
        kept.push(b'\n');
    }
    kept.pop();
    trim_trailing_mentions(&String::from_utf8_lossy(&kept), entry_point)
}

/// A definition's name (`None` when the official finds none) and node.
type Definition<'a, 'tree> = (Option<&'a [u8]>, Node<'tree>);

/// The top-level statements the official looks at, in source order.
struct TopLevel<'a, 'tree> {
    /// Every `import` / `from … import` statement, duplicates included.
    imports: Vec<Node<'tree>>,
    /// Classes, functions and assignments, first of each name only.
    definitions: Vec<Definition<'a, 'tree>>,
}

impl<'a, 'tree> TopLevel<'a, 'tree> {
    fn collect(root: Node<'tree>, source: &'a [u8]) -> Self {
        let mut imports = Vec::new();
        let mut definitions = Vec::new();
        let mut seen = HashSet::new();
        let mut cursor = root.walk();
        for child in root.children(&mut cursor) {
            let definition = match child.kind() {
                "import_statement" | "import_from_statement" => {
                    imports.push(child);
                    continue;
                }
                "class_definition" | "function_definition" => child,
                "expression_statement" => match child.child(0) {
                    Some(first) if first.kind() == "assignment" => first,
                    _ => continue,
                },
                _ => continue,
            };
            let name = definition_name(definition, source);
            if seen.insert(name) {
                definitions.push((name, definition));
            }
        }
        TopLevel {
            imports,
            definitions,
        }
    }
}

/// The text of the node's first direct `identifier` child: the name of a `def`/`class`, the
/// first target of a plain assignment; `None` for `a, b = …`, `obj.x = …`, `d[k] = …`.
fn definition_name<'a>(node: Node, source: &'a [u8]) -> Option<&'a [u8]> {
    let mut cursor = node.walk();
    let name = node
        .children(&mut cursor)
        .find(|child| child.kind() == "identifier");
    name.map(|child| text(child, source))
}

/// The official breadth-first closure from `entry_point` over "identifiers used inside".
fn reachable_names<'a>(
    entry_point: &'a [u8],
    definitions: &[Definition<'a, '_>],
    source: &'a [u8],
) -> HashSet<&'a [u8]> {
    let uses: HashMap<&[u8], HashSet<&[u8]>> = definitions
        .iter()
        .filter_map(|(name, node)| name.map(|name| (name, identifiers_below(*node, source))))
        .collect();
    let mut reached = HashSet::from([entry_point]);
    let mut queue = VecDeque::from([entry_point]);
    while let Some(current) = queue.pop_front() {
        for &used in uses.get(current).into_iter().flatten() {
            if reached.insert(used) {
                queue.push_back(used);
            }
        }
    }
    reached
}

/// The text of every `identifier` node strictly below `node`, walked without recursion so that
/// deeply nested code cannot exhaust the stack.
fn identifiers_below<'a>(node: Node, source: &'a [u8]) -> HashSet<&'a [u8]> {
    let mut found = HashSet::new();
    let mut cursor = node.walk();
    // Levels below `node`, counted here because the cursor's own `depth` costs O(depth).
    let mut depth = 0usize;
    if !cursor.goto_first_child() {
        return found;
    }
    loop {
        let current = cursor.node();
        if current.kind() == "identifier" {
            found.insert(text(current, source));
        } else if cursor.goto_first_child() {
            depth += 1;
            continue;
        }
        while !cursor.goto_next_sibling() {
            if depth == 0 || !cursor.goto_parent() {
                return found;
            }
            depth -= 1;
        }
    }
}

/// The node's source bytes.
fn text<'a>(node: Node, source: &'a [u8]) -> &'a [u8] {
    source.get(node.byte_range()).unwrap_or_default()
}

/// The official "ad-hoc" trim: among the trailing lines that do not start with a space, find
/// the earliest one containing `entry_point` and cut the text before it. Lines are Python
/// `splitlines` lines, re-joined with `"\n"` when a cut happens.
fn trim_trailing_mentions(code: &str, entry_point: &str) -> String {
    let lines = pystr::splitlines(code);
    let earliest = lines
        .iter()
        .enumerate()
        .rev()
        .take_while(|(_, line)| !line.starts_with(' '))
        .filter(|(_, line)| line.contains(entry_point))
        .last()
        .map(|(index, _)| index);
    match earliest {
        Some(index) => lines[..index].join("\n"),
        None => code.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_imports_and_what_the_entry_point_reaches() {
        let code = "import os\ndef helper():\n    return 1\ndef unused():\n    return 2\n\
                    def task_func():\n    return helper()\nfrom sys import argv";
        assert_eq!(
            target_code(code, "task_func"),
            "import os\nfrom sys import argv\ndef helper():\n    return 1\n\
             def task_func():\n    return helper()"
        );
        assert!(target_code(code, "").contains("def unused"));
    }

    #[test]
    fn first_definition_wins_across_kinds_and_unnamed_assignments_are_dropped() {
        let code = "task_func = None\nA, B = 1, 2\ndef task_func():\n    return A";
        // The variable wins, then the trim removes its line: nothing is left.
        assert_eq!(target_code(code, "task_func"), "");
    }

    #[test]
    fn trim_cuts_at_the_earliest_unindented_mention() {
        assert_eq!(
            trim_trailing_mentions(
                "def f():\n    pass\nx = task_func\ny = 1\nz = task_func()",
                "task_func"
            ),
            "def f():\n    pass"
        );
        assert_eq!(trim_trailing_mentions("a\r\nb", "task_func"), "a\r\nb");
        assert_eq!(trim_trailing_mentions("a\r\ntask_func", "task_func"), "a");
    }

    #[test]
    fn deep_nesting_does_not_overflow() {
        let depth = 100_000;
        let code = format!(
            "def task_func():\n    return {}1{}",
            "(".repeat(depth),
            ")".repeat(depth)
        );
        assert!(!target_code(&code, "task_func").is_empty());
    }
}
