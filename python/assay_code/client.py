"""A Python client for `assay serve`, assay's HTTP service (standard library only).

The server judges BigCodeBench answers, runs unit tests and programs, and keeps PyBench-style
Python sessions, each in assay's sandbox. This module speaks its JSON API so that a training or
evaluation loop needs neither a Rust toolchain nor an HTTP library:

    from assay_code import Client

    with Client.start(jobs=4) as client:             # a local server; or Client("http://host:8000")
        r = client.verify("BigCodeBench/13", answer=model_text)
        print(r.status, [t.name for t in r.tests if t.result != "pass"])
        batch = [("BigCodeBench/13", a1), {"task_id": "BigCodeBench/19", "solution": s, "id": "x"}]
        for r in client.verify_batch(batch):          # as each is judged: completion order
            print(r.id, r.error or r.status)          # ids: the caller's, else the index
        print(client.run("print(input()[::-1])", stdin="abc\n").stdout)
        with client.session() as s:                   # deleted on leaving the block
            s.execute("x = 41")
            print(s.execute("x + 1").text)

Every result is a frozen dataclass holding the fields the API documents; `raw` keeps the whole JSON
object as received, so fields this client does not know yet are not lost. A non-2xx answer raises
AssayError carrying the server's own message; a full queue (503) is retried a bounded number of
times, each wait bounded, honouring Retry-After.
"""

import base64
import collections
import http.client
import json
import os
import re
import signal
import subprocess
import threading
import time
import urllib.parse
import uuid
import weakref
from dataclasses import dataclass, field, fields
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

__all__ = [
    "AssayError",
    "CellError",
    "CellResult",
    "Client",
    "Figure",
    "IntegrityNote",
    "RunResult",
    "Session",
    "SessionFiles",
    "StartError",
    "TestResult",
    "UnittestResult",
    "VerifyResult",
]

FileData = Union[bytes, bytearray, memoryview, str]

# The environment variable the server reads its secret from; the client reads the same one so
# that a client and a server started from one shell agree without repeating the secret.
TOKEN_ENV = "ASSAY_SERVE_TOKEN"
# What the server prints on stdout once it accepts connections (see the spec's "Command").
_LISTENING = re.compile(r"assay serve: listening on (https?://\S+)")
_USER_AGENT = "assay-code-client/1"


class AssayError(Exception):
    """The server answered with a non-2xx status.

    `status` is the HTTP status (401 bad secret, 400 bad body, 404 unknown task or session,
    413 too large, 503 queue full once the retries are spent); `message` is the server's own
    `{"error": ...}` text, which names the offending field, or the body when it is not JSON.
    """

    def __init__(self, status: int, message: str, *, retry_after: Optional[float] = None,
                 body: Any = None):
        super().__init__(status, message)
        self.status = status
        self.message = message
        self.retry_after = retry_after
        self.body = body

    def __str__(self) -> str:
        return f"assay serve answered {self.status}: {self.message}"


class StartError(RuntimeError):
    """`Client.start` could not bring a server up: it exited, or did not print its listening
    line in time. The message ends with the tail of the server's stderr, which says why."""


# ---------------------------------------------------------------------------------------------
# Results


def _object(cls, obj: Any) -> Dict[str, Any]:
    if not isinstance(obj, dict):
        raise TypeError(f"the server sent {obj!r:.200} where a {cls.__name__} object belongs")
    return obj


def _build(cls, obj: Any, **converted):
    """An instance of the result dataclass `cls` from a JSON object: fields the API documents are
    taken by name (None when absent, so an older or newer server still parses), `converted`
    overrides the ones needing more than a copy, and `raw` keeps the whole object."""
    _object(cls, obj)
    kwargs = {f.name: obj.get(f.name) for f in fields(cls) if f.name != "raw"}
    kwargs.update(converted)
    return cls(raw=obj, **kwargs)


def _list(obj: Any, convert) -> tuple:
    return tuple(convert(x) for x in obj) if isinstance(obj, list) else ()


def _text(value: Any) -> Optional[str]:
    """Captured output as text. The server may send a string, or an object {"text",
    "total_bytes", "truncated"} saying how much was kept (the object stays in `raw`)."""
    if isinstance(value, dict):
        value = value.get("text")
    return value if isinstance(value, str) else None


def _decode_files(obj: Any) -> Dict[str, bytes]:
    """The API carries file contents as base64; callers want the bytes."""
    if not isinstance(obj, dict):
        return {}
    return {path: base64.b64decode(data) for path, data in obj.items() if isinstance(data, str)}


def _encode_files(files: Optional[Dict[str, FileData]]) -> Optional[Dict[str, str]]:
    """Text is sent as UTF-8; bytes as they are."""
    if files is None:
        return None
    encoded = {}
    for path, data in files.items():
        if isinstance(data, str):
            data = data.encode("utf-8")
        encoded[os.fspath(path)] = base64.b64encode(bytes(data)).decode("ascii")
    return encoded


@dataclass(frozen=True)
class TestResult:
    """One test method's outcome: `result` is pass, fail, error, ... as the server names it."""

    __test__ = False  # not a test case, whatever test collectors make of its name

    name: Optional[str] = None
    result: Optional[str] = None
    detail: Optional[str] = None
    seconds: Optional[float] = None
    cpu_seconds: Optional[float] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, obj: Any) -> "TestResult":
        return _build(cls, obj)


@dataclass(frozen=True)
class IntegrityNote:
    """Something the sandbox saw a solution do to the harness (e.g. tamper with a test)."""

    kind: Optional[str] = None
    test: Optional[str] = None
    detail: Optional[str] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, obj: Any) -> "IntegrityNote":
        return _build(cls, obj)


@dataclass(frozen=True)
class VerifyResult:
    """The verdict on one BigCodeBench answer (POST /v1/bigcodebench/verify, or one line of
    verify_batch).

    `status` is pass, fail, error, timeout, oom or infra (the harness failed: not the answer's
    fault, never counted as fail). In a batch, an item the server could not judge has `error`
    set and `status` None, rather than ending the stream.
    """

    id: Any = None
    task_id: Optional[str] = None
    version: Optional[str] = None
    split: Optional[str] = None
    status: Optional[str] = None
    official_status: Optional[str] = None
    reason: Optional[str] = None
    solution: Optional[str] = None
    tests: Tuple[TestResult, ...] = ()
    integrity: Tuple[IntegrityNote, ...] = ()
    time_limit_seconds: Optional[float] = None
    reference_seconds: Optional[float] = None
    wall_seconds: Optional[float] = None
    cpu_seconds: Optional[float] = None
    memory_peak_bytes: Optional[int] = None
    stdout: Optional[str] = None
    stderr: Optional[str] = None
    reward: Optional[float] = None
    isolation: Optional[str] = None
    error: Optional[str] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    @classmethod
    def from_json(cls, obj: Any) -> "VerifyResult":
        obj = _object(cls, obj)
        reference = obj.get("reference_seconds")
        if reference is None and isinstance(obj.get("reference"), dict):
            reference = obj["reference"].get("seconds")
        return _build(cls, obj, tests=_list(obj.get("tests"), TestResult.from_json),
                      integrity=_list(obj.get("integrity"), IntegrityNote.from_json),
                      reference_seconds=reference, stdout=_text(obj.get("stdout")),
                      stderr=_text(obj.get("stderr")))


@dataclass(frozen=True)
class UnittestResult:
    """The outcome of POST /v1/unittest: a program and its unittest cases, judged like a
    BigCodeBench answer."""

    id: Any = None
    status: Optional[str] = None
    official_status: Optional[str] = None
    reason: Optional[str] = None
    tests: Tuple[TestResult, ...] = ()
    integrity: Tuple[IntegrityNote, ...] = ()
    time_limit_seconds: Optional[float] = None
    wall_seconds: Optional[float] = None
    cpu_seconds: Optional[float] = None
    memory_peak_bytes: Optional[int] = None
    stdout: Optional[str] = None
    stderr: Optional[str] = None
    isolation: Optional[str] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    @classmethod
    def from_json(cls, obj: Any) -> "UnittestResult":
        obj = _object(cls, obj)
        return _build(cls, obj, tests=_list(obj.get("tests"), TestResult.from_json),
                      integrity=_list(obj.get("integrity"), IntegrityNote.from_json),
                      stdout=_text(obj.get("stdout")), stderr=_text(obj.get("stderr")))


@dataclass(frozen=True)
class RunResult:
    """The outcome of POST /v1/run. `files` holds the fetched files' bytes (decoded from the
    API's base64), by the paths asked for."""

    id: Any = None
    status: Optional[str] = None
    reason: Optional[str] = None
    exit_code: Optional[int] = None
    stdout: Optional[str] = None
    stderr: Optional[str] = None
    error: Optional[str] = None
    time_limit_seconds: Optional[float] = None
    wall_seconds: Optional[float] = None
    cpu_seconds: Optional[float] = None
    memory_peak_bytes: Optional[int] = None
    isolation: Optional[str] = None
    files: Dict[str, bytes] = field(default_factory=dict)
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, obj: Any) -> "RunResult":
        obj = _object(cls, obj)
        return _build(cls, obj, files=_decode_files(obj.get("files")),
                      stdout=_text(obj.get("stdout")), stderr=_text(obj.get("stderr")))


@dataclass(frozen=True)
class Figure:
    """An image a session cell produced (a matplotlib figure), as bytes of type `mime`."""

    mime: Optional[str] = None
    data: bytes = b""
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, obj: Any) -> "Figure":
        obj = _object(cls, obj)
        data = obj.get("data")
        return _build(cls, obj, data=base64.b64decode(data) if isinstance(data, str) else b"")

    def save(self, path: Union[str, os.PathLike]) -> None:
        with open(path, "wb") as f:
            f.write(self.data)


@dataclass(frozen=True)
class CellError:
    """The exception a session cell raised."""

    name: Optional[str] = None
    message: Optional[str] = None
    traceback: Optional[str] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, obj: Any) -> "CellError":
        return _build(cls, obj)


@dataclass(frozen=True)
class CellResult:
    """The outcome of one session cell. `text` is what PyBench's agent reads (output, value and
    error together); `stdout`, `result` and `error` are its parts, `figures` its images, and
    `session_alive` says whether the interpreter survived (a crash or a timeout may end it)."""

    status: Optional[str] = None
    reason: Optional[str] = None
    text: Optional[str] = None
    stdout: Optional[str] = None
    result: Any = None
    error: Optional[CellError] = None
    figures: Tuple[Figure, ...] = ()
    session_alive: Optional[bool] = None
    wall_seconds: Optional[float] = None
    session_id: Optional[str] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, obj: Any) -> "CellResult":
        obj = _object(cls, obj)
        error = obj.get("error")
        error = CellError.from_json(error) if isinstance(error, dict) else None
        # The cell's printed output: `stdout` in the API's draft, `output` as served.
        stdout = obj.get("stdout") if "stdout" in obj else obj.get("output")
        return _build(cls, obj, error=error, stdout=_text(stdout),
                      figures=_list(obj.get("figures"), Figure.from_json))


@dataclass(frozen=True)
class SessionFiles:
    """A session's working folder: every file's bytes by path, and the folders."""

    files: Dict[str, bytes] = field(default_factory=dict)
    dirs: Tuple[str, ...] = ()
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, obj: Any) -> "SessionFiles":
        obj = _object(cls, obj)
        return _build(cls, obj, files=_decode_files(obj.get("files")),
                      dirs=_list(obj.get("dirs"), str))


# ---------------------------------------------------------------------------------------------
# The client


def _stop_server(process: subprocess.Popen, grace: float, threads: Sequence[threading.Thread]):
    """SIGTERM (the server then stops its jobs and sessions), SIGKILL if it has not gone within
    `grace` seconds. A module-level function, so that weakref.finalize can call it for a Client
    dropped or left open at exit without keeping that Client alive."""
    if process.poll() is None:
        try:
            process.send_signal(signal.SIGTERM)
            process.wait(grace)
        except subprocess.TimeoutExpired:
            process.kill()
            try:
                process.wait(grace)
            except subprocess.TimeoutExpired:
                pass
        except ProcessLookupError:
            pass
    # The pumps end at the pipes' end. A child that outlived the server may still hold them:
    # then the pump threads (daemons) are left to it, since closing a stream another thread
    # is reading blocks until that read returns.
    for thread, stream in zip(threads, (process.stdout, process.stderr)):
        thread.join(1.0)
        if not thread.is_alive() and stream is not None:
            try:
                stream.close()
            except OSError:
                pass


class Client:
    """A connection to one `assay serve`.

    Each request opens its own HTTP connection, so one Client may be shared between threads
    (a thread pool submitting verify calls is the usual way to keep a server's jobs busy, besides
    verify_batch).

    `token`: the server's secret, sent as `Authorization: Bearer`; None reads ASSAY_SERVE_TOKEN
    (as the server does), "" sends none. A secret may instead be the base URL's path prefix
    (http://host:8000/SECRET/), which this client keeps in front of every route.
    `timeout`: seconds any one socket operation may take; a request whose own `timeout` asks
    for longer gets that plus a margin, so a long job is not cut short by the transport.
    `retries`, `max_retry_wait`: how often a 503 (queue full) is retried, and the most seconds
    any one wait lasts, whatever Retry-After says.
    """

    def __init__(self, base_url: str = "http://127.0.0.1:8000", token: Optional[str] = None,
                 timeout: float = 600, *, retries: int = 5, max_retry_wait: float = 30):
        parts = urllib.parse.urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"base_url must be http(s)://host[:port][/prefix], not {base_url!r}")
        self.base_url = base_url
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port
        self._prefix = parts.path.rstrip("/")
        if token is None:
            token = os.environ.get(TOKEN_ENV) or None
        self.token = token or None
        self.timeout = timeout
        self.retries = retries
        self.max_retry_wait = max_retry_wait
        self._process: Optional[subprocess.Popen] = None
        self._stderr: Optional[_Output] = None
        self._finalizer = None

    def __repr__(self) -> str:
        return f"Client({self.base_url!r})"

    # -- transport -----------------------------------------------------------------------------

    def _connection(self, timeout: float) -> http.client.HTTPConnection:
        if self._https:
            return http.client.HTTPSConnection(self._host, self._port, timeout=timeout)
        return http.client.HTTPConnection(self._host, self._port, timeout=timeout)

    def _headers(self, extra: Optional[Dict[str, str]], has_body: bool) -> Dict[str, str]:
        headers = {"User-Agent": _USER_AGENT, "Accept": "application/json"}
        if has_body:
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        headers.update(extra or {})
        return headers

    def _retry_wait(self, retry_after: Optional[float], attempt: int) -> float:
        """Retry-After when the server gave one, else a doubling backoff; at most
        max_retry_wait either way."""
        wait = retry_after if retry_after is not None else 0.5 * 2 ** attempt
        return max(0.0, min(wait, self.max_retry_wait))

    def _open(self, method: str, path: str, body: Any = None, *,
              headers: Optional[Dict[str, str]] = None, job_timeout: Optional[float] = None):
        """Send a request and return (connection, response) once a 2xx status arrives, the body
        unread (verify_batch streams it). A 503 is retried; any other non-2xx raises
        AssayError."""
        data = None if body is None else json.dumps(body).encode("utf-8")
        timeout = self.timeout
        if job_timeout is not None:
            timeout = max(timeout, float(job_timeout) + 60)
        sent_headers = self._headers(headers, data is not None)
        attempt = 0
        while True:
            connection = self._connection(timeout)
            try:
                connection.request(method, self._prefix + path, body=data, headers=sent_headers)
                response = connection.getresponse()
            except BaseException:
                connection.close()
                raise
            if 200 <= response.status < 300:
                return connection, response
            try:
                payload = response.read()
            finally:
                connection.close()
            retry_after = _seconds(response.getheader("Retry-After"))
            if response.status == 503 and attempt < self.retries:
                time.sleep(self._retry_wait(retry_after, attempt))
                attempt += 1
                continue
            raise _error(response.status, payload, retry_after)

    def _request(self, method: str, path: str, body: Any = None, *,
                 headers: Optional[Dict[str, str]] = None, job_timeout: Optional[float] = None,
                 text: bool = False) -> Any:
        """The decoded JSON (or, with `text`, the text) of a 2xx answer."""
        connection, response = self._open(method, path, body, headers=headers,
                                          job_timeout=job_timeout)
        try:
            payload = response.read()
        finally:
            connection.close()
        if text:
            return payload.decode("utf-8", errors="replace")
        try:
            return json.loads(payload)
        except ValueError:
            raise AssayError(response.status, f"the server's answer is not JSON: {payload[:300]!r}")

    # -- service -------------------------------------------------------------------------------

    def health(self) -> Dict[str, Any]:
        """GET /health: version, profile, jobs, isolation, queue and sessions, as a dict."""
        return self._request("GET", "/health")

    def metrics(self) -> str:
        """GET /metrics: the Prometheus exposition text."""
        return self._request("GET", "/metrics", text=True)

    # -- BigCodeBench --------------------------------------------------------------------------

    @staticmethod
    def _verify_body(task_id: str, *, answer=None, completion=None, solution=None, version=None,
                     split=None, calibrated=None, id=None) -> Dict[str, Any]:
        given = [k for k, v in (("answer", answer), ("completion", completion),
                                ("solution", solution)) if v is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of answer (raw model text), completion (text "
                             "continuing the Complete prompt) or solution (a whole program), "
                             f"not {given or 'none'}")
        body: Dict[str, Any] = {"task_id": task_id}
        for key, value in (("id", id), ("answer", answer), ("completion", completion),
                           ("solution", solution), ("version", version), ("split", split),
                           ("calibrated", calibrated)):
            if value is not None:
                body[key] = value
        return body

    def verify(self, task_id: str, *, answer: Optional[str] = None,
               completion: Optional[str] = None, solution: Optional[str] = None,
               version: Optional[str] = None, split: Optional[str] = None,
               calibrated: Optional[bool] = None, id: Any = None) -> VerifyResult:
        """Judge one answer to a BigCodeBench task; exactly one of `answer` (raw model text,
        sanitized as `assay generate` does), `completion` (text continuing the Complete prompt)
        or `solution` (a whole program, judged as given). None leaves a setting to the server
        (its --version, the complete split)."""
        body = self._verify_body(task_id, answer=answer, completion=completion,
                                 solution=solution, version=version, split=split,
                                 calibrated=calibrated, id=id)
        return VerifyResult.from_json(self._request("POST", "/v1/bigcodebench/verify", body))

    def verify_batch(self, items: Iterable[Union[Dict[str, Any], Tuple[str, str]]], *,
                     version: Optional[str] = None, split: Optional[str] = None,
                     calibrated: Optional[bool] = None) -> Iterator[VerifyResult]:
        """Judge many answers in one request, yielding each verdict as the server finishes it
        (completion order, not the order given: match them up by `id`).

        An item is a verify body as a dict (`task_id` and one of answer / completion /
        solution, optionally id, version, split, calibrated) or a (task_id, answer) pair. An
        item without an id gets its index in `items`. `version`, `split` and `calibrated`
        apply to the items that do not set their own.

        The response is read line by line as it arrives, never buffered whole. An item the
        server cannot judge yields a result with `.error` set; so does every item still
        unanswered if the stream breaks, so each item gets exactly one result. Errors of the
        request as a whole (401, 400, ...) raise AssayError at the first iteration.
        """
        requests = []
        for index, item in enumerate(items):
            if isinstance(item, dict):
                body = dict(item)
            elif isinstance(item, (tuple, list)) and len(item) == 2:
                body = {"task_id": item[0], "answer": item[1]}
            else:
                raise TypeError(f"item {index}: a dict or a (task_id, answer) pair, "
                                f"not {item!r:.200}")
            body.setdefault("id", index)
            for key, value in (("version", version), ("split", split), ("calibrated", calibrated)):
                if value is not None:
                    body.setdefault(key, value)
            requests.append(body)
        return self._stream_batch(requests)

    def _stream_batch(self, requests: List[Dict[str, Any]]) -> Iterator[VerifyResult]:
        if not requests:
            return
        pending = collections.OrderedDict((_key(r["id"]), r["id"]) for r in requests)
        connection, response = self._open(
            "POST", "/v1/bigcodebench/verify_batch", {"requests": requests},
            headers={"Accept": "application/x-ndjson"})
        broken = None
        try:
            while True:
                try:
                    line = response.readline()
                except (OSError, http.client.HTTPException) as e:
                    broken = f"the stream broke: {e!r}"
                    break
                if not line:
                    break
                line = line.strip()
                if not line:
                    continue
                try:
                    obj = json.loads(line)
                except ValueError:
                    obj = None
                if not isinstance(obj, dict):
                    yield VerifyResult(error=f"the server sent a line that is not a JSON object: "
                                             f"{line[:300]!r}")
                    continue
                pending.pop(_key(obj.get("id")), None)
                yield VerifyResult.from_json(obj)
        finally:
            connection.close()
        reason = broken or "the server ended the stream without this item's result"
        for id_ in pending.values():
            yield VerifyResult(id=id_, error=reason, raw={"id": id_, "error": reason})

    # -- programs ------------------------------------------------------------------------------

    def unittest(self, code: str, test: str, files: Optional[Dict[str, FileData]] = None,
                 timeout: Optional[float] = None, *, test_class: Optional[str] = None,
                 memory_mib: Optional[int] = None, guards: Optional[bool] = None,
                 id: Any = None) -> UnittestResult:
        """Run `test` (unittest cases, class `test_class`, TestCases by default) against `code`
        in the sandbox, with `files` (path -> bytes or text) in its working folder. `guards`
        False runs without the official harness's process guards."""
        body = _drop_none({"id": id, "code": code, "test": test, "test_class": test_class,
                           "files": _encode_files(files), "timeout": timeout,
                           "memory_mib": memory_mib, "guards": guards})
        return UnittestResult.from_json(
            self._request("POST", "/v1/unittest", body, job_timeout=timeout))

    def run(self, code: str, stdin: Optional[str] = None,
            files: Optional[Dict[str, FileData]] = None,
            fetch_files: Optional[Sequence[str]] = None, timeout: Optional[float] = None,
            argv: Optional[Sequence[str]] = None, *,
            memory_mib: Optional[int] = None, id: Any = None) -> RunResult:
        """Run a Python program in the sandbox: `stdin` as its input, `files` (path -> bytes or
        text) in its working folder, `argv` after the script name; the files named in
        `fetch_files` come back as bytes in the result's `files`."""
        body = _drop_none({"id": id, "code": code, "stdin": stdin, "files": _encode_files(files),
                           "fetch_files": None if fetch_files is None else list(fetch_files),
                           "argv": None if argv is None else [str(a) for a in argv],
                           "timeout": timeout, "memory_mib": memory_mib})
        return RunResult.from_json(self._request("POST", "/v1/run", body, job_timeout=timeout))

    # -- sessions ------------------------------------------------------------------------------

    def session(self, files: Optional[Dict[str, FileData]] = None,
                session_id: Optional[str] = None, *, profile: Optional[str] = None) -> "Session":
        """Start a persistent Python interpreter (a PyBench session) with `files` in its working
        folder. Use it as a context manager so that it is deleted on leaving the block; the
        server also deletes one left idle (its --session-idle).

        The id is made here (a uuid4 unless `session_id` is given) and sent as X-Session-ID on
        every request of the session, creation included, so that an ingress hashing that header
        sends all of them to the replica holding the interpreter.
        """
        session_id = session_id or str(uuid.uuid4())
        body = _drop_none({"files": _encode_files(files), "profile": profile,
                           "session_id": session_id})
        answer = self._request("POST", "/v1/sessions", body,
                               headers={"X-Session-ID": session_id})
        return Session(self, answer.get("session_id") or session_id)

    def sessions(self) -> Dict[str, Any]:
        """GET /v1/sessions: {"sessions": [{"session_id", "created", "last_used", "cells"}],
        "max": N}."""
        return self._request("GET", "/v1/sessions")

    # -- a local server ------------------------------------------------------------------------

    @classmethod
    def start(cls, jobs: Optional[int] = None, port: int = 0, profile: Optional[str] = None,
              extra_args: Sequence[str] = (), timeout: float = 900, *,
              assay_bin: Optional[str] = None, token: Optional[str] = None,
              env: Optional[Dict[str, str]] = None, stop_timeout: float = 30,
              **client_kwargs) -> "Client":
        """Start `assay serve` on this machine and return a Client bound to it, which stops the
        server on close() or on leaving a `with` block (also, failing both, when it is garbage
        collected or Python exits).

        The binary is `assay_bin`, else the one installed with this package. Port 0 lets the
        server take any free port; its listening line gives the real one. `timeout` bounds the
        wait for that line: generous, since a first start sets up the Python environment,
        which takes minutes. `token`, when given, becomes the server's ASSAY_SERVE_TOKEN and
        the client's secret; otherwise the client uses the ASSAY_SERVE_TOKEN the server
        inherits, if any. `env` adds to the server's environment. `stop_timeout` is how long
        SIGTERM has before SIGKILL.
        """
        if assay_bin is None:
            from assay_code import find_assay_bin

            assay_bin = find_assay_bin()
        command = [os.fspath(assay_bin), "serve", "--port", str(port)]
        if jobs is not None:
            command += ["--jobs", str(jobs)]
        if profile is not None:
            command += ["--profile", profile]
        command += [str(a) for a in extra_args]
        environ = dict(os.environ)
        environ.update(env or {})
        if token is not None:
            environ[TOKEN_ENV] = token
        elif TOKEN_ENV in environ:
            token = environ[TOKEN_ENV]
        else:
            token = ""

        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, env=environ)
        stdout = _Output(watch=_LISTENING)
        stderr = _Output()
        threads = [
            threading.Thread(target=stdout.pump, args=(process.stdout,), daemon=True,
                             name="assay-serve-stdout"),
            threading.Thread(target=stderr.pump, args=(process.stderr,), daemon=True,
                             name="assay-serve-stderr"),
        ]
        for thread in threads:
            thread.start()
        try:
            base_url = _await_listening(process, stdout, stderr, timeout, command)
        except BaseException:
            _stop_server(process, stop_timeout, threads)
            raise
        client = cls(base_url, token=token, **client_kwargs)
        client._process = process
        client._stderr = stderr
        client._finalizer = weakref.finalize(client, _stop_server, process, stop_timeout, threads)
        return client

    @property
    def server_log(self) -> str:
        """The last lines the server started by `start` wrote on stderr ("" for a remote one):
        what to look at when a request fails with status infra."""
        return self._stderr.tail() if self._stderr is not None else ""

    def close(self) -> None:
        """Stop the server this Client started, if any (SIGTERM, then SIGKILL after
        stop_timeout). A Client of a remote server holds nothing open: nothing to do."""
        if self._finalizer is not None:
            self._finalizer()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Session:
    """A live interpreter on the server, made by Client.session. Cells run in order and share
    their globals; files written by one are seen by the next and by files()."""

    def __init__(self, client: Client, session_id: str):
        self.client = client
        self.id = session_id
        self.closed = False

    def __repr__(self) -> str:
        return f"Session({self.id!r})"

    def _path(self, tail: str = "") -> str:
        return "/v1/sessions/" + urllib.parse.quote(self.id, safe="") + tail

    def _headers(self) -> Dict[str, str]:
        return {"X-Session-ID": self.id}

    def execute(self, code: str, timeout: Optional[float] = None) -> CellResult:
        """Run one cell. An exception in the cell is a result (its `error`), not an AssayError;
        AssayError 404 means the session is gone (deleted, or idle too long)."""
        body = _drop_none({"code": code, "timeout": timeout})
        return CellResult.from_json(self.client._request(
            "POST", self._path("/execute"), body, headers=self._headers(), job_timeout=timeout))

    def listing(self) -> SessionFiles:
        """The working folder: every file's bytes and the folders."""
        return SessionFiles.from_json(
            self.client._request("GET", self._path("/files"), headers=self._headers()))

    def files(self) -> Dict[str, bytes]:
        """Every file of the working folder, path -> bytes."""
        return self.listing().files

    def delete(self) -> None:
        """DELETE the session: its interpreter stops, its files go. Raises AssayError 404 when
        it is already gone."""
        self.client._request("DELETE", self._path(), headers=self._headers())
        self.closed = True

    def close(self) -> None:
        """delete(), tolerating a session already gone; once only."""
        if self.closed:
            return
        try:
            self.delete()
        except AssayError as e:
            if e.status != 404:
                raise
        self.closed = True

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# ---------------------------------------------------------------------------------------------
# Helpers


def _drop_none(body: Dict[str, Any]) -> Dict[str, Any]:
    """Optional settings left None are not sent: the server's defaults apply."""
    return {k: v for k, v in body.items() if v is not None}


def _key(id_: Any) -> str:
    """A hashable key for a JSON id (ids may be any JSON value, lists and objects included)."""
    return json.dumps(id_, sort_keys=True)


def _seconds(value: Optional[str]) -> Optional[float]:
    """Retry-After as seconds; the HTTP-date form, which assay does not send, counts as absent."""
    if value is None:
        return None
    try:
        return float(value.strip())
    except ValueError:
        return None


def _error(status: int, payload: bytes, retry_after: Optional[float]) -> AssayError:
    text = payload.decode("utf-8", errors="replace")
    body: Any = text
    message = text.strip() or http.client.responses.get(status, "")
    try:
        body = json.loads(text)
    except ValueError:
        pass
    else:
        if isinstance(body, dict) and body.get("error") is not None:
            error = body["error"]
            message = error if isinstance(error, str) else json.dumps(error)
    return AssayError(status, message, retry_after=retry_after, body=body)


class _Output:
    """One output stream of a started server, read by a thread of its own so that the pipe never
    fills (a full pipe would stall the server): its last lines are kept, and the first match of
    `watch` is set aside and signalled."""

    def __init__(self, watch: Optional["re.Pattern"] = None):
        self.lines: collections.deque = collections.deque(maxlen=200)
        self.watch = watch
        self.match: Optional["re.Match"] = None
        self.event = threading.Event()  # set on the match, or at the end of the stream
        self.ended = False

    def pump(self, stream) -> None:
        try:
            for raw in iter(stream.readline, b""):
                line = raw.decode("utf-8", errors="replace")
                self.lines.append(line)
                if self.watch is not None and self.match is None:
                    self.match = self.watch.search(line)
                    if self.match is not None:
                        self.event.set()
        except (OSError, ValueError):
            pass
        finally:
            self.ended = True
            self.event.set()

    def tail(self, count: int = 200) -> str:
        return "".join(list(self.lines)[-count:])


def _await_listening(process: subprocess.Popen, stdout: _Output, stderr: _Output,
                     timeout: float, command: List[str]) -> str:
    """The base URL from the server's listening line, waiting at most `timeout` seconds; a
    server that exits first, or is still silent then, raises StartError with its output's
    tail."""
    deadline = time.monotonic() + timeout
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise StartError(f"{command} printed no listening line within {timeout:g} s"
                             + _tails(stdout, stderr))
        stdout.event.wait(min(remaining, 0.5))
        if stdout.match is not None:
            url = stdout.match.group(1)
            return url if url.endswith("/") else url + "/"
        # The server's children may hold stdout open after it dies, so its end is not always
        # seen on the pipe: ask the process too.
        if stdout.ended or process.poll() is not None:
            try:
                code = process.wait(10)
            except subprocess.TimeoutExpired:
                stdout.event.clear()
                continue
            time.sleep(0.2)  # the stderr pump's last lines
            raise StartError(f"{command} exited with {code} before listening"
                             + _tails(stdout, stderr))


def _tails(stdout: _Output, stderr: _Output, count: int = 40) -> str:
    out = stdout.tail(count)
    return (f"\n--- stdout\n{out}" if out else "") + f"\n--- stderr (tail)\n{stderr.tail(count)}"
