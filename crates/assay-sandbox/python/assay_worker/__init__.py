"""assay's in-sandbox runtime.

This package runs inside the sandbox, next to the code under evaluation. It is standard-library
only, embedded into the assay binary, and written to the user cache at run time.

Process tree (namespaced mode; see ``zygote.py``)::

    assay (Rust supervisor)
     └─ shim        the process Rust spawned; waits for the zygote and exits with it
         └─ zygote  PID 1 of its own PID namespace, in its own user, mount, network, IPC and
                    UTS namespaces; pre-imports the heavy libraries once, then forks
             └─ job PID 1 of a fresh PID namespace per job, with its own network, mount, IPC and
                    UTS namespaces, an unprivileged uid without capabilities, Landlock and seccomp;
                    runs one unittest job, one script, or one persistent session

Untrusted code only ever runs in a job process, after its confinement is complete. The zygote
never executes untrusted code, so its state stays clean for the next fork.
"""

PROTOCOL_VERSION = 1
