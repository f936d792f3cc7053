"""BigCodeBench's process guards (its ``safe_environment``), reproduced for faithful verdicts.

The official evaluator runs every sample under interceptions that change what some code does:

* ``os.kill`` acts only on the process itself and on children started through
  ``subprocess.Popen``; any other target is left alone (with a message), and a pid that does not
  exist is ignored. ``os.killpg`` likewise acts only on its own group and those children's.
* ``os.system``, ``subprocess.call``, ``subprocess.run`` and ``os.popen`` skip commands that
  mention ``kill`` and pretend they succeeded.
* ``subprocess.check_output`` answers ``b""`` to every command that mentions ``ps``.
* ``subprocess.Popen`` starts each child in a new session and records it; ``kill()`` and
  ``terminate()`` become a guarded SIGTERM; ``communicate()`` returns ``(None, None)`` instead
  of raising ``TimeoutExpired``.
* ``os.execv``, ``os.execvp`` and ``os.execvpe`` do nothing.

Verdicts follow from them: a ``multiprocessing.Pool`` used as a context manager never finishes,
because its workers cannot be terminated, so BigCodeBench/363's reference times out officially.
assay keeps such verdicts by default (the sandbox, not these guards, is what keeps code in
check); a job without ``guards`` runs code as it is.
"""

import os
import signal
import subprocess


class _Children:
    """The pids of the children started through ``Popen``.

    The official harness keeps them in a ``multiprocessing.Manager`` list, and its results in
    another manager's dict; every process the code forks inherits both proxies and registers
    with both servers as it starts. That slows worker start-up enough that a
    ``multiprocessing.Pool`` leaving its ``with`` block loses a race in CPython's pool shutdown
    (its workers cannot be killed, and wait for a lock the pool holds): it hangs. Here too, as
    long as both managers exist before the code runs. Starting them costs ~40 ms, which most
    jobs need not pay: they start at once for code that uses ``multiprocessing``, otherwise
    when the first child is recorded. (Not in a fork hook: a manager started there, inside
    ``subprocess``'s fork with a ``preexec_fn``, deadlocks.)
    """

    def __init__(self, eager):
        self._list = None
        if eager:
            self._start()

    def _start(self):
        if self._list is None:
            import multiprocessing

            # The harness's parent holds a second manager's proxy (the results dict) that the
            # code's processes inherit too; each forked process registers with both.
            self._proxies = multiprocessing.Manager().dict(), multiprocessing.Manager().list()
            self._list = self._proxies[1]

    def append(self, pid):
        self._start()
        self._list.append(pid)

    def __contains__(self, pid):
        return self._list is not None and pid in self._list

    def __iter__(self):
        return iter(self._list if self._list is not None else ())


def uses_processes(source):
    """Whether code may start processes the harness's manager interacts with."""
    return "multiprocessing" in source or "ProcessPool" in source


def install(source):
    """Puts the guards in place for the rest of this process's life, for code ``source``."""
    real_kill, real_killpg = os.kill, os.killpg
    real_system, real_popen_command = os.system, os.popen
    real_call, real_check_output, real_run = subprocess.call, subprocess.check_output, subprocess.run
    own_pid = os.getpid()
    own_group = os.getpgid(own_pid)
    children = _Children(eager=uses_processes(source))

    def kill(pid, sig):
        try:
            os.getpgid(pid)  # a pid that does not exist ends here, quietly
            if pid == own_pid or pid in children:
                real_kill(pid, sig)
            else:
                print(f"Prevented attempt to kill PID {pid} with signal {sig}")
        except ProcessLookupError:
            pass

    def killpg(pgid, sig):
        if pgid == own_group or pgid in {os.getpgid(child) for child in children}:
            real_killpg(pgid, sig)
        else:
            print(f"Prevented attempt to kill PGID {pgid} with signal {sig}")

    def mentions_kill(command):
        return "kill" in command or "killall" in command

    def system(command):
        print(f"Intercepted system command: {command}")
        return 0 if mentions_kill(command) else real_system(command)

    def call(command, *args, **kwargs):
        print(f"Intercepted subprocess call: {command}")
        return 0 if mentions_kill(command) else real_call(command, *args, **kwargs)

    def check_output(command, *args, **kwargs):
        print(f"Intercepted command: {command}")
        return b"" if "ps" in command else real_check_output(command, *args, **kwargs)

    def run(*args, **kwargs):
        print(f"Intercepted subprocess run command: {args}")
        if mentions_kill(args[0]):
            return subprocess.CompletedProcess(args, 0, b"", b"")
        return real_run(*args, **kwargs)

    class GuardedPopen(subprocess.Popen):
        def __init__(self, *args, **kwargs):
            print(f"Intercepted Popen command: {args}")
            kwargs["preexec_fn"] = os.setsid
            super().__init__(*args, **kwargs)
            children.append(self.pid)

        def communicate(self, *args, **kwargs):
            try:
                return super().communicate(*args, **kwargs)
            except subprocess.TimeoutExpired:
                print("Timeout expired, intercepted and returning None")
                return None, None

        def kill(self):
            print(f"Intercepted kill call for PID {self.pid}")
            kill(self.pid, signal.SIGTERM)

        def terminate(self):
            print(f"Intercepted terminate call for PID {self.pid}")
            kill(self.pid, signal.SIGTERM)

    def popen_command(command):
        print(f"Intercepted os.popen command: {command}")
        return real_popen_command("echo Intercepted" if mentions_kill(command) else command)

    def no_exec(*args, **kwargs):
        print(f"Intercepted exec command: {args}")

    os.kill, os.killpg, os.system, os.popen = kill, killpg, system, popen_command
    os.execv = os.execvp = os.execvpe = no_exec
    subprocess.call, subprocess.check_output, subprocess.run = call, check_output, run
    subprocess.Popen = GuardedPopen
