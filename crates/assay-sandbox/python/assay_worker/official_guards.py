"""The official evaluator's process guards, kept because some verdicts depend on them.

BigCodeBench (``bigcodebench`` 0.2.x) evaluates every sample with the calls that signal, spawn
or replace processes intercepted. The interceptions are not a sandbox (assay's sandbox is, and
its hostile suite runs without them); they are part of the benchmark's semantics, because code
behaves differently under them:

* signals reach only the job itself and the children it started through ``subprocess.Popen``
  (pid for ``os.kill``, process group for ``os.killpg``); anything else is refused with a
  printed line, and ``os.kill`` of a pid that does not exist does nothing;
* the command runners print what they were asked to run, and skip commands that mention
  ``kill``, answering as if they had succeeded; ``check_output`` answers ``b""`` to any command
  that mentions ``ps``; ``os.execv``/``execvp``/``execvpe`` do nothing at all;
* every ``Popen`` child starts in a session of its own (its ``preexec_fn`` is replaced by
  ``os.setsid``); its ``kill()`` and ``terminate()`` both become a guarded SIGTERM, and its
  ``communicate()`` answers ``(None, None)`` instead of raising ``TimeoutExpired``.

Verdicts hang on them: a ``multiprocessing.Pool`` leaving its ``with`` block never returns
(its workers cannot be signalled; see ``SpawnRegistry``), so the references of BigCodeBench/363
and BigCodeBench/205 time out, officially and here.

The printed lines are the official texts: they land in the job's stdout capture, as they land
in the official run's swallowed output. The official harness also terminates the recorded
children after the tests and restores the real functions; here the guards stay for the rest of
the job process's life and its PID namespace ends every child with it. Both happen after the
verdict is settled.
"""

import os
import signal
import subprocess

# Words whose mention makes a runner skip a command. Matched with ``in``: a command string
# mentions a word anywhere in it ("pkill x", "skill"), an argument list only as a whole item,
# so ``["killall", "x"]`` mentions "killall" but not "kill", and ``["/bin/kill"]`` neither.
KILL_WORDS = ("kill", "killall")
PS_WORDS = ("ps",)


def mentions(words):
    """A test for commands that mention any of ``words``."""

    def test(command):
        return any(word in command for word in words)

    return test


def _first_mentions(words):
    """``mentions(words)`` applied to the first of a call's positional arguments."""
    test = mentions(words)
    return lambda positional: test(positional[0])


def _always(_):
    return True


# How a runner's arguments are read: the message and the skip test look at ...
ONLY_COMMAND = "only"       # its single argument, the command (any other call is a TypeError);
COMMAND_FIRST = "first"     # its first argument, the rest passed through to the real runner;
POSITIONAL = "positional"   # the tuple of its positional arguments.

# The runners screened, and what each does with a command it will not run:
#   (module, name, announcement, arguments, skipped when, answer instead)
# ``os.popen``'s answer goes through ``os.popen`` again, so that the substitute is announced
# and run like any command (officially too).
RUNNERS = (
    (os, "system", "Intercepted system command: {}",
     ONLY_COMMAND, mentions(KILL_WORDS), lambda _: 0),
    (subprocess, "call", "Intercepted subprocess call: {}",
     COMMAND_FIRST, mentions(KILL_WORDS), lambda _: 0),
    (subprocess, "check_output", "Intercepted command: {}",
     COMMAND_FIRST, mentions(PS_WORDS), lambda _: b""),
    (subprocess, "run", "Intercepted subprocess run command: {}",
     POSITIONAL, _first_mentions(KILL_WORDS),
     lambda positional: subprocess.CompletedProcess(positional, 0, b"", b"")),
    (os, "popen", "Intercepted os.popen command: {}",
     ONLY_COMMAND, mentions(KILL_WORDS), lambda _: os.popen("echo Intercepted")),
    (os, "execv", "Intercepted exec command: {}", POSITIONAL, _always, lambda _: None),
    (os, "execvp", "Intercepted exec command: {}", POSITIONAL, _always, lambda _: None),
    (os, "execvpe", "Intercepted exec command: {}", POSITIONAL, _always, lambda _: None),
)


def screen(real, announcement, arguments, skipped, answer):
    """``real`` wrapped: every call announced, a skipped command answered without running."""

    def skips(subject):
        print(announcement.format(subject))
        return skipped(subject)

    if arguments == ONLY_COMMAND:
        def screened(command):
            return answer(command) if skips(command) else real(command)
    elif arguments == COMMAND_FIRST:
        def screened(command, *args, **kwargs):
            return answer(command) if skips(command) else real(command, *args, **kwargs)
    else:
        def screened(*args, **kwargs):
            return answer(args) if skips(args) else real(*args, **kwargs)
    screened.__name__ = screened.__qualname__ = getattr(real, "__name__", "screened")
    return screened


def starts_worker_processes(source):
    """Whether code may fork processes that the official harness's managers would see start."""
    return "multiprocessing" in source or "ProcessPool" in source


class SpawnRegistry:
    """The pids of the job's ``Popen`` children, visible to every process the job forks.

    Officially they live in a ``multiprocessing.Manager`` list, next to the harness's results
    dict on another manager. Both proxies are inherited by every process the code forks, which
    registers with both servers as it starts; that delay makes a ``multiprocessing.Pool``
    leaving its ``with`` block lose a race in CPython's pool shutdown (its workers cannot be
    signalled, and wait for a lock the pool holds): it hangs. It hangs here too, provided both
    managers run before the code forks. Starting them costs ~40 ms, so they start up front only
    for code that may use ``multiprocessing`` (``eager``), otherwise with the first child
    recorded. They are never started from a fork hook: inside ``subprocess``'s fork with a
    ``preexec_fn``, that deadlocks.
    """

    def __init__(self, eager):
        self._servers = None
        if eager:
            self._serve()

    def _serve(self):
        if self._servers is None:
            import multiprocessing

            # (the results dict's stand-in, the pid list), in the order the harness makes them.
            self._servers = (multiprocessing.Manager().dict(), multiprocessing.Manager().list())

    def _pids(self):
        return () if self._servers is None else self._servers[1]

    def record(self, pid):
        self._serve()
        self._pids().append(pid)

    def __contains__(self, pid):
        return pid in self._pids()

    def __iter__(self):
        return iter(self._pids())

    def groups(self):
        """The children's process groups. A child already reaped raises ProcessLookupError,
        as officially."""
        return {os.getpgid(pid) for pid in self}


class JobGuard:
    """What the job may do to processes: signal itself and what it spawned, nothing else.

    ``pid`` and ``group`` are taken when the guards go in, so a process the job forks is still
    allowed to signal the job, not itself.
    """

    def __init__(self, source):
        self.pid = os.getpid()
        self.group = os.getpgid(self.pid)
        self.spawned = SpawnRegistry(eager=starts_worker_processes(source))
        self._real_kill, self._real_killpg = os.kill, os.killpg

    def may_signal(self, pid):
        return pid == self.pid or pid in self.spawned

    def signal_process(self, pid, sig):
        """``os.kill`` for the job: a process that does not exist (or vanishes meanwhile) is no
        error; one the job may not signal is left alone, and the attempt printed."""
        try:
            os.getpgid(pid)  # ProcessLookupError: nothing to protect
            allowed = self.may_signal(pid)
            if allowed:
                self._real_kill(pid, sig)
        except ProcessLookupError:
            return
        if not allowed:
            print(f"Prevented attempt to kill PID {pid} with signal {sig}")

    def signal_group(self, pgid, sig):
        """``os.killpg`` for the job: its own group, or one of its children's."""
        if pgid != self.group and pgid not in self.spawned.groups():
            print(f"Prevented attempt to kill PGID {pgid} with signal {sig}")
            return
        self._real_killpg(pgid, sig)

    def popen_class(self, base):
        """``base`` (the real ``Popen``) for the job's children: each in its own session and
        recorded; stopping one is a guarded SIGTERM; a ``communicate`` timeout is swallowed.

        Since ``subprocess.run``, ``call`` and ``check_output`` all go through
        ``subprocess.Popen``, their timeouts come back as ``(None, None)`` too: ``run`` waits
        for the child to finish and returns a ``returncode`` of None instead of raising.
        """
        guard = self

        def __init__(self, *args, **kwargs):
            print(f"Intercepted Popen command: {args}")
            # Replaces any preexec_fn of the caller's; with start_new_session=True as well, the
            # second setsid fails and so does the start (SubprocessError), as officially.
            kwargs["preexec_fn"] = os.setsid
            super(guarded, self).__init__(*args, **kwargs)
            guard.spawned.record(self.pid)

        def communicate(self, *args, **kwargs):
            try:
                return super(guarded, self).communicate(*args, **kwargs)
            except subprocess.TimeoutExpired:
                print("Timeout expired, intercepted and returning None")
            return None, None

        def stopper(verb):
            # Not SIGKILL for kill(): both verbs send SIGTERM, whatever state the child is in.
            def stop(self):
                print(f"Intercepted {verb} call for PID {self.pid}")
                guard.signal_process(self.pid, signal.SIGTERM)

            stop.__name__ = stop.__qualname__ = verb
            return stop

        guarded = type("GuardedPopen", (base,), {
            "__module__": __name__,
            "__doc__": "subprocess.Popen under the official guards (see JobGuard.popen_class).",
            "__init__": __init__,
            "communicate": communicate,
            "kill": stopper("kill"),
            "terminate": stopper("terminate"),
        })
        return guarded

    def take_over(self):
        """Puts every interception in place; the real functions stay reachable only here."""
        replacements = [(os, "kill", self.signal_process), (os, "killpg", self.signal_group),
                        (subprocess, "Popen", self.popen_class(subprocess.Popen))]
        for module, name, announcement, arguments, skipped, answer in RUNNERS:
            real = getattr(module, name)
            replacements.append((module, name, screen(real, announcement, arguments, skipped,
                                                      answer)))
        for module, name, replacement in replacements:
            setattr(module, name, replacement)


def install(source):
    """Puts the guards in place for the rest of this process's life, for code ``source``."""
    JobGuard(source).take_over()
