"""Integrity of a unittest job: a test passes only by running its own body to its end.

Code and tests share one interpreter (BigCodeBench's definition), so the code can reach the test
machinery. Rather than list the tricks it could play, the runner establishes, for each test, the
facts a pass needs, at points the code does not control:

* **The test's own code.** The answer and the test source are compiled apart, from the texts the
  supervisor sent, before any of the answer runs (exactly ``code + "\\n" + test`` officially: the
  same line numbers, the same ``__future__`` features, the same module); the code objects of the
  test source are therefore the test's own by construction, whatever the answer does to
  ``__build_class__``, metaclasses, ``sys.modules`` or the parser.
* **Bodies that ran to their end.** Each test method of the source is compiled with a witness:
  ``__assay_done__()`` as its last statement (and around each ``return``), ``__assay_ended__()``
  in an ``except BaseException: ...; raise`` around its body. The witness takes a call only from
  a frame running that method's own code object, with the running test as ``self``, in the job's
  module, with no trace function: then it sends ``body_done`` to the supervisor at once. A test
  whose body did not send it did not pass, whatever unittest recorded: skipped, swallowed by
  unittest's control-flow exceptions, replaced, or never started. Tracebacks are unchanged (the
  wrapper re-raises; the added nodes carry the last statement's line).
* **Machinery unaltered while the bodies ran.** unittest's classes, functions and module
  entries are snapshot before the answer runs and compared after the answer's module ran, at
  each body's end (before its locals die, so an object's ``__del__`` cannot undo a patch first)
  and at the run's end; the test instance may not gain methods over its class's or change its
  equality functions (compared at its body's end and after the test); an audit hook, which
  Python code cannot remove, sees every trace or profile function installed (one can rewrite a
  test's locals or jump over its assertions) and every rewrite of the code or defaults of a
  function that judges (unittest's, the runner's, an assertion library's, the test source's),
  even one undone at once.
* **Values that claim an equality.** The two operands of each ``assert*`` call statement in a
  test body pass through ``__assay_seen__``: an operand whose ``__eq__``/``__ne__`` is the
  answer's own code is asked, and the other operand's own ``__eq__`` too; a claim of equality
  the other does not share is a finding.

Findings travel in the final frame (``integrity``); ``body_done`` and each test's ``ended`` (the
exception that ended its body, and the answer's function it came from) stream with the tests.
The supervisor decides from them (``job/unittest.rs``). What remains possible is in
docs/sandbox.md ("Faking a pass").
"""

import __future__
import ast
import sys
import types
import unittest
from operator import is_
from unittest import case as _case
from unittest import loader as _loader
from unittest import result as _result
from unittest import suite as _suite

_MISSING = object()
_FUTURE_FLAGS = 0
for _feature in __future__.all_feature_names:
    _FUTURE_FLAGS |= getattr(__future__, _feature).compiler_flag
DONE, ENDED, SEEN = "__assay_done__", "__assay_ended__", "__assay_seen__"
# Events that install a trace or profile function.
_TRACE_EVENTS = frozenset({"sys.settrace", "sys.setprofile"})
# Every audit event the hook acts on. It is called for every audited event of the job, and
# a plotting job raises thousands (`id()` in `copy.deepcopy` and matplotlib's transforms), so
# any other event must cost it one set lookup.
_WATCHED = _TRACE_EVENTS | {"object.__setattr__"}
_FUNCTION_PARTS = frozenset({"__code__", "__defaults__", "__kwdefaults__"})
# Dunders through which a value decides a comparison.
_EQUALITY = ("__eq__", "__ne__")
# What unittest itself sets on a test instance while it runs one.
_RUNNER_OWNED = frozenset({"_outcome", "_subtest"})


# Kinds of finding (``kind`` in the protocol; assay_records::IntegrityKind).
TAMPERED, TRACED, ALTERED, FORGED, EQUALITY = "tampered", "traced", "altered", "forged", "equality"


def _watched(value):
    return callable(value) or isinstance(value, (staticmethod, classmethod, property))


# ---------------------------------------------------------------------------------------------
# Compiling the job


class Compiled:
    """The answer and the test source compiled apart, the test's bodies with their witness."""

    def __init__(self, code, test, filename):
        try:
            self.code = compile(code, filename, "exec", dont_inherit=True)
        except SyntaxError:
            # The official error, as the official harness compiles it (the same text, or one
            # the test source completes: never compiled apart, never a pass).
            compile(code + "\n" + test, filename, "exec", dont_inherit=True)
            raise
        flags = self.code.co_flags & _FUTURE_FLAGS
        # ``code + "\n" + test``: the test's first line follows the answer's last.
        tree = compile("\n" * (code.count("\n") + 1) + test, filename, "exec",
                       ast.PyCF_ONLY_AST | flags, dont_inherit=True)
        methods = _instrument(tree)
        self.test = compile(tree, filename, "exec", flags, dont_inherit=True)
        self.filename = filename
        # Every code object of the test source; test methods by name.
        self.test_codes = set()
        self.methods = {}
        stack = [self.test]
        while stack:
            code_object = stack.pop()
            self.test_codes.add(id(code_object))
            if code_object.co_name in methods:
                self.methods.setdefault(code_object.co_name, []).append(code_object)
            stack.extend(c for c in code_object.co_consts if isinstance(c, types.CodeType))
        # (``self.test`` keeps every one of them alive, so their ids stay theirs.)

    def genuine(self, name, code_object):
        return any(c is code_object for c in self.methods.get(name, ()))

    def is_answer(self, code_object):
        """Code the answer wrote (compiled from its text, not the test's)."""
        return code_object.co_filename == self.filename and id(code_object) not in self.test_codes


def _at(node, like):
    """``node`` placed at ``like``'s position (tracebacks name the line of what it stands for)."""
    node.lineno, node.col_offset = like.lineno, like.col_offset
    node.end_lineno, node.end_col_offset = like.end_lineno, like.end_col_offset
    return node


def _call(name, like, *args):
    return _at(ast.Call(_at(ast.Name(name, ast.Load()), like), list(args), []), like)


def _noting(body):
    """``try: body / except BaseException: __assay_ended__(); raise``, at the body's last
    line."""
    last = body[-1]
    handler = _at(ast.ExceptHandler(
        type=_at(ast.Name("BaseException", ast.Load()), last), name=None,
        body=[_at(ast.Expr(_call(ENDED, last)), last), _at(ast.Raise(), last)]), last)
    return _at(ast.Try(body=body, handlers=[handler], orelse=[], finalbody=[]), last)


def _is_subtest(statement):
    return isinstance(statement, ast.With) and any(
        isinstance(item.context_expr, ast.Call)
        and getattr(item.context_expr.func, "attr", None) == "subTest"
        for item in statement.items)


def _witness_statements(statements):
    """Instruments one body's statements, and those of the blocks inside them (not nested
    functions or classes: other scopes). Statements only, so the cost is theirs, not every
    expression node's:

    * ``return x`` -> ``return __assay_done__(x)``;
    * an ``assert*(a, b, ...)`` call statement -> its first two operands through
      ``__assay_seen__``;
    * a ``with self.subTest(...)`` block, where unittest swallows what ends it early and the
      body goes on, gets the handler that notes the exception, so the test cannot pass.
    """
    for statement in statements:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(statement, ast.Return):
            value = [statement.value] if statement.value is not None else []
            statement.value = _call(DONE, statement, *value)
        elif isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
            _see_operands(statement.value)
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(statement, field, None)
            if inner:
                _witness_statements(inner)
        for part in (*getattr(statement, "handlers", ()), *getattr(statement, "cases", ())):
            _witness_statements(part.body)
        if _is_subtest(statement):
            statement.body = [_noting(statement.body)]


def _see_operands(call):
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if name.startswith("assert") and len(call.args) >= 2 and not any(
            isinstance(a, ast.Starred) for a in call.args[:2]):
        for position in (0, 1):
            arg = call.args[position]
            call.args[position] = _call(SEEN, arg, arg, _at(ast.Constant(position), arg))


def _instrument(tree):
    """Gives every test method of the source's top-level classes (the ones the supervisor reads
    the declared tests from) its witness; returns their names."""
    names = set()
    for cls in tree.body:
        if not isinstance(cls, ast.ClassDef):
            continue
        for method in cls.body:
            if not (isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef))
                    and method.name.startswith("test") and method.body):
                continue
            names.add(method.name)
            _witness_statements(method.body)
            last = method.body[-1]
            method.body = [_noting(method.body), _at(ast.Expr(_call(DONE, last)), last)]
    return names


# ---------------------------------------------------------------------------------------------
# The snapshot of unittest


class Snapshot:
    """Identity of everything in unittest that decides a verdict, taken before the answer runs.
    (A function rewritten in place keeps its identity: the audit hook sees that write.)"""

    MODULES = ("unittest", "unittest.case", "unittest.result", "unittest.suite", "unittest.loader")

    def __init__(self, *extra_classes):
        self._owners = []
        for owner in (unittest, _case, _result, _suite, _loader, _case.TestCase,
                      _case._Outcome, _result.TestResult, _suite.BaseTestSuite,
                      _suite.TestSuite, _loader.TestLoader, *extra_classes):
            self.watch(owner)
        self._modules = {name: sys.modules.get(name) for name in self.MODULES}

    def watch(self, owner, names=None):
        current = vars(owner)
        snapshot = {k: v for k, v in current.items()
                    if _watched(v) and (names is None or k in names)}
        whole = (tuple(current), tuple(current.values()))
        self._owners.append((owner, snapshot, names is None, whole))

    def changes(self):
        """What differs from the snapshot now."""
        found = []
        for owner, snapshot, whole, (keys, values) in self._owners:
            current = vars(owner)
            if _same(current, keys, values):
                continue
            label = getattr(owner, "__qualname__", getattr(owner, "__name__", None))
            label = label or f"{type(owner).__name__} instance"
            for name, value in snapshot.items():
                if current.get(name, _MISSING) is not value:
                    found.append(f"{label}.{name}")
            if whole:
                for name in current.keys() - snapshot.keys():
                    value = current[name]
                    # unittest itself keeps classes on its result object (_previousTestClass);
                    # functions appearing on a class or an instance are patches.
                    if _watched(value) and not (not isinstance(owner, type)
                                                and isinstance(value, type)):
                        found.append(f"{label}.{name} (added)")
        for name, module in self._modules.items():
            if sys.modules.get(name) is not module:
                found.append(f"sys.modules[{name!r}]")
        return found


def _same(namespace, keys, values):
    """Whether ``namespace`` still holds exactly these keys and values, in this order: the
    common case of a check, compared at C speed, by identity alone (no value's ``__eq__`` is
    asked)."""
    return (len(namespace) == len(keys) and all(map(is_, namespace.keys(), keys))
            and all(map(is_, namespace.values(), values)))


def _judges(function, code, compiled):
    """Whether ``function`` takes part in a verdict: unittest's, this runner's, an assertion
    library's (``numpy.testing``, ``pandas._testing``...) or the test source's own. Libraries
    rewrite their own functions' code at import (``types.coroutine`` does, in asyncio): not
    these."""
    module = getattr(function, "__module__", None) or ""
    return (module.split(".")[0] in ("unittest", "assay_worker") or "testing" in module
            or (isinstance(code, types.CodeType) and id(code) in compiled.test_codes))


# ---------------------------------------------------------------------------------------------
# The witness


class Witness:
    """What the instrumented test bodies call, and the findings of the job."""

    def __init__(self, compiled, snapshot, emit):
        self._compiled = compiled
        self._snapshot = snapshot
        self._emit = emit
        self.findings = []
        self._seen_findings = set()
        self.test = None        # the running test instance
        self.name = None        # its method name, as unittest loaded it
        self.ended = None       # the exception that ended its body
        self.done = False       # its body sent body_done
        self._instance = None   # the instance's methods and equality functions at its start
        self._pending = None    # the first operand of the assert* call being evaluated
        self._quiet = 0         # inside the witness: the audit hook ignores our own events
        self.module = None

    # -- findings --------------------------------------------------------------------------

    def note(self, kind, what, test=_MISSING):
        test = self.name if test is _MISSING else test
        key = (kind, what, test)
        if key not in self._seen_findings:
            self._seen_findings.add(key)
            self.findings.append({"kind": kind, "test": test, "what": what})

    def check(self):
        """Compares unittest and the running test with their snapshots; notes what changed."""
        self._quiet += 1
        try:
            for what in self._snapshot.changes():
                self.note(TAMPERED, what, None)
            if self.test is not None and self._instance is not None:
                self._check_instance()
        finally:
            self._quiet -= 1

    # -- around each test (the Recorder calls these) ---------------------------------------

    def start(self, test, name):
        self.test, self.name, self.ended, self.done = test, name, None, False
        self._pending = None
        self._instance = self._instance_state(test)

    def stop(self):
        """After the test's tearDown: what the body cannot have been judged by any more. Only
        the instance is compared here; unittest's machinery stays changed (the snapshot
        findings are cumulative) until the next body's end or the run's end compares it."""
        self._quiet += 1
        try:
            self._check_instance()
        finally:
            self._quiet -= 1
        self.test = self._instance = None
        self.name = None

    def _instance_state(self, test):
        funcs = getattr(test, "_type_equality_funcs", None)
        return (dict(vars(test)), dict(funcs) if isinstance(funcs, dict) else funcs)

    def _check_instance(self):
        test = self.test
        before, funcs_before = self._instance
        classes = type(test).__mro__
        for key, value in vars(test).items():
            if key in _RUNNER_OWNED or before.get(key, _MISSING) is value:
                continue
            shadowed = next((vars(c)[key] for c in classes if key in vars(c)), _MISSING)
            if shadowed is not _MISSING and _watched(shadowed):
                self.note(TAMPERED, f"{type(test).__name__}.{key} replaced on the test instance")
        funcs = getattr(test, "_type_equality_funcs", None)
        now = dict(funcs) if isinstance(funcs, dict) else funcs
        if now != funcs_before:
            self.note(TAMPERED, "the test instance's equality functions (_type_equality_funcs)")

    # -- called from the instrumented bodies -----------------------------------------------

    def body_done(self, *value):
        """The last statement of each test body (and each ``return``): accepted only from the
        running test's own code."""
        self._quiet += 1
        try:
            frame = sys._getframe(1)
            code = frame.f_code
            own = (self.name is not None and code.co_name == self.name
                   and self._compiled.genuine(self.name, code)
                   and frame.f_globals is self.module
                   and code.co_varnames[:1] and frame.f_locals.get(code.co_varnames[0]) is self.test)
            if not own:
                self.note(FORGED, f"{code.co_name} (line {frame.f_lineno}) called the witness of "
                          f"{self.name or 'no running test'}")
            elif sys.gettrace() is not None or frame.f_trace is not None:
                self.note(TRACED, "a trace function was active when the body ended")
            elif not self.done:
                self.check()
                self.done = True
                self._emit({"ev": "body_done", "name": self.name})
        finally:
            self._quiet -= 1
        return value[0] if value else None

    def body_ended(self):
        """In the handler around each body: the exception that ended it, and the answer's
        function it came from (the innermost frame of the answer's code in its traceback)."""
        if self.ended is not None:
            return
        try:
            error = sys.exc_info()[1]
            raised_in = None
            frames = error.__traceback__
            while frames is not None:
                if self._compiled.is_answer(frames.tb_frame.f_code):
                    raised_in = frames.tb_frame.f_code.co_name
                frames = frames.tb_next
            self.ended = {"type": type(error).__name__, "raised_in": raised_in}
        except Exception:  # noqa: BLE001 - only the reason's detail is lost
            self.ended = {"type": "?", "raised_in": None}

    def seen(self, value, position):
        """The operands of an ``assert*`` call, first then second: an answer-made equality
        the other operand does not share is a finding. Returns ``value`` unchanged."""
        if position == 0:
            self._pending = value
            return value
        first, self._pending = self._pending, None
        try:
            for claimed, other in ((first, value), (value, first)):
                method = self._answer_equality(claimed)
                if method is not None:
                    self._cross_check(claimed, other, method)
        except Exception:  # noqa: BLE001 - a value that cannot be asked is left to the test
            pass
        return value

    def _answer_equality(self, value):
        """The first of ``__eq__``/``__ne__`` on the value's class that is the answer's own
        code, if either is."""
        for cls in type(value).__mro__:
            for name in _EQUALITY:
                function = vars(cls).get(name)
                code = getattr(function, "__code__", None)
                if isinstance(code, types.CodeType) and self._compiled.is_answer(code):
                    return f"{cls.__qualname__}.{name}"
        return None

    def _cross_check(self, claimed, other, method):
        says_equal = type(claimed).__eq__(claimed, other)
        says_equal = says_equal is True or (says_equal is not NotImplemented
                                             and not type(claimed).__ne__(claimed, other))
        if not says_equal:
            return
        shared = type(other).__eq__(other, claimed)
        if shared is not True:
            self.note(EQUALITY, f"{method} claims equality with a {type(other).__name__} "
                      "that does not claim it back")

    # -- the audit hook -------------------------------------------------------------------

    def hook(self):
        """The audit hook to install: a plain function that passes the events it acts on to
        :meth:`audit` and returns at once on any other (a bound method with its checks costs
        nearly three times as much per event: ``bench/audit_hook.py``). What it needs is bound
        as defaults, whose rewriting the hook itself sees, rather than in closure cells, which
        Python code can rewrite unseen."""
        def hook(event, args, watched=_WATCHED, audit=self.audit):
            if event in watched:
                audit(event, args)
        return hook

    def audit(self, event, args):
        """Sees what Python code cannot hide from an audit hook (which it cannot remove)."""
        if self._quiet:
            return
        if event in _TRACE_EVENTS:
            self.note(TRACED, f"{event} called")
        elif event == "object.__setattr__" and args[1] in _FUNCTION_PARTS:
            self._quiet += 1
            try:
                target = args[0]
                code = getattr(target, "__code__", None)
                if isinstance(target, types.FunctionType) and _judges(target, code, self._compiled):
                    self.note(TAMPERED, f"{getattr(target, '__qualname__', '?')}.{args[1]} "
                              "rewritten")
            except Exception:  # noqa: BLE001 - an audit hook must never raise
                pass
            finally:
                self._quiet -= 1

    def install(self, module_dict):
        """Binds the witness into the job's module, once the answer's module code has run and
        before the test source's runs."""
        self.module = module_dict
        module_dict.update({DONE: self.body_done, ENDED: self.body_ended, SEEN: self.seen})

    def altered_methods(self, test_class, names):
        """Notes loaded tests whose method is not code of the test source: replaced while or
        after the class was created (decorators' ``__wrapped__`` followed). Tests the source
        makes some other way (a decorator adding lambdas) are its own code, but without a
        witness: the supervisor requires ``body_done`` only where it could read the source's
        ``def test...`` methods itself."""
        for name in names:
            value = next((vars(c)[name] for c in test_class.__mro__ if name in vars(c)),
                         None)
            try:
                for _ in range(16):
                    wrapped = getattr(value, "__wrapped__", None)
                    if wrapped is None:
                        break
                    value = wrapped
                code = getattr(value, "__code__", None)
            except Exception:  # noqa: BLE001 - an object that cannot be asked is not the test's
                code = None
            if not (isinstance(code, types.CodeType) and id(code) in self._compiled.test_codes):
                self.note(ALTERED, f"{test_class.__qualname__}.{name} is not the test "
                          "source's own code", name)
