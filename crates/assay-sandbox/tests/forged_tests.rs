//! A sample cannot pass by changing which tests exist. The tests a test source declares are read
//! on the supervisor's side before the job runs; code that runs before the tests (module-level
//! code, `builtins`, a metaclass, a substituted `unittest`, a trace function) and empties,
//! renames or extends the test class gets `fail`, even with the tests it left all passing.

mod common;

use assay_sandbox::{Status, UnittestJob, UnittestOutcome};
use common::{assert_passed, engine, run, DOUBLE, TRIVIAL_TEST};

/// A wrong answer: every declared test fails on it.
const WRONG: &str = "def task_func(x):\n    return x + 1\n";

fn judge(attack: &str, solution: &str) -> UnittestOutcome {
    let code = format!("{attack}\n{solution}");
    run(engine().run_unittest(UnittestJob::new(code, TRIVIAL_TEST)))
}

/// The attack ran and was caught by the declared-tests check: a `fail` naming the difference
/// (what the worker found the code did is recorded beside it, not instead).
fn assert_caught(out: &UnittestOutcome, missing: &str, extra: &str) {
    assert_eq!(out.status, Status::Fail, "{}", out.reason);
    let expected = format!(
        "the tests that ran are not the ones the test source declares \
         (missing: {missing}; not declared: {extra})"
    );
    assert_eq!(out.reason, expected);
}

/// Module-level code that hooks `builtins.__build_class__` and runs `change` (Python
/// statements on `cls`, indented by eight spaces) on the class `TestCases` once it is built.
fn on_build_class(change: &str) -> String {
    format!(
        r#"
import builtins
_build = builtins.__build_class__
def _hook(func, name, *bases, **kw):
    cls = _build(func, name, *bases, **kw)
    if name == "TestCases":
{change}
    return cls
builtins.__build_class__ = _hook
"#
    )
}

/// Strips every test method.
const STRIP: &str = "        for attr in [a for a in vars(cls) if a.startswith(\"test\")]:
            delattr(cls, attr)";

#[test]
fn emptying_the_class_through_builtins_fails() {
    let out = judge(&on_build_class(STRIP), WRONG);
    assert_caught(&out, "test_double, test_zero", "none");
    assert!(out.tests.is_empty(), "{:?}", out.tests);
}

#[test]
fn renaming_the_tests_fails() {
    // Out of the loader's sight, and one that always passes takes their place.
    let rename = "        for attr in [a for a in vars(cls) if a.startswith(\"test\")]:
            setattr(cls, \"renamed_\" + attr, getattr(cls, attr))
            delattr(cls, attr)
        cls.test_fine = lambda self: None";
    let out = judge(&on_build_class(rename), WRONG);
    assert_caught(&out, "test_double, test_zero", "test_fine");
}

#[test]
fn adding_a_test_fails_even_when_the_declared_ones_pass() {
    let add = "        cls.test_extra = lambda self: None";
    let out = judge(&on_build_class(add), DOUBLE);
    assert_caught(&out, "none", "test_extra");
    let passed: Vec<&str> = out.tests.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(passed, ["test_double", "test_extra", "test_zero"]);
}

/// Module-level code after which `import unittest` in the tests finds a stand-in whose
/// `TestCase` is `_Base`, which `base` defines (it may use `_real`, the real module). Whatever
/// empties the class also puts the real module back, so that nothing in `sys.modules` looks
/// replaced once the tests run.
fn stand_in_unittest(base: &str) -> String {
    format!(
        r#"
import sys, types
import unittest as _real
{base}
_stand_in = types.ModuleType("unittest")
_stand_in.__dict__.update(_real.__dict__)
_stand_in.TestCase = _Base
sys.modules["unittest"] = _stand_in
"#
    )
}

#[test]
fn emptying_the_class_with_a_metaclass_fails() {
    let base = r#"
class _Meta(type):
    def __new__(mcls, name, bases, namespace):
        if name == "TestCases":
            sys.modules["unittest"] = _real
            namespace = {k: v for k, v in namespace.items() if not k.startswith("test")}
        return super().__new__(mcls, name, bases, namespace)

class _Base(_real.TestCase, metaclass=_Meta):
    pass
"#;
    let out = judge(&stand_in_unittest(base), WRONG);
    assert_caught(&out, "test_double, test_zero", "none");
}

#[test]
fn emptying_the_class_with_init_subclass_fails() {
    let base = r#"
class _Base(_real.TestCase):
    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        sys.modules["unittest"] = _real
        for attr in [a for a in vars(cls) if a.startswith("test")]:
            delattr(cls, attr)
"#;
    let out = judge(&stand_in_unittest(base), WRONG);
    assert_caught(&out, "test_double, test_zero", "none");
}

/// Module-level code leaves a trace function behind that empties the class at the moment the
/// runner's loader receives it, after every snapshot of the class could have been taken.
const EMPTY_BY_TRACE: &str = r#"
import sys
def _tracer(frame, event, arg):
    if event == "call" and frame.f_code.co_name == "loadTestsFromTestCase":
        cls = frame.f_locals.get("testCaseClass")
        if cls is not None and cls.__name__ == "TestCases":
            for attr in [a for a in vars(cls) if a.startswith("test")]:
                delattr(cls, attr)
    return None
sys.settrace(_tracer)
"#;

#[test]
fn emptying_the_class_from_a_trace_function_fails() {
    let out = judge(EMPTY_BY_TRACE, WRONG);
    assert_caught(&out, "test_double, test_zero", "none");
}

#[test]
fn honest_code_still_passes_and_unreadable_sources_keep_the_old_checks() {
    assert_passed(&run(
        engine().run_unittest(UnittestJob::new(DOUBLE, TRIVIAL_TEST))
    ));
    // Tests built by a decorator the supervisor cannot read: the job's own list is all there
    // is, and a correct answer passes against it.
    let dynamic = r#"
import unittest

def with_tests(cls):
    cls.test_made = lambda self: self.assertEqual(task_func(3), 6)
    return cls

@with_tests
class TestCases(unittest.TestCase):
    def test_double(self):
        self.assertEqual(task_func(2), 4)
"#;
    let out = run(engine().run_unittest(UnittestJob::new(DOUBLE, dynamic)));
    assert_passed(&out);
    assert_eq!(out.tests.len(), 2);
    let out = run(engine().run_unittest(UnittestJob::new(WRONG, dynamic)));
    assert_eq!(out.status, Status::Fail, "{}", out.reason);
}
