"""A cache directory for assay with no reference results, sharing the real cache's Python
environments (so nothing is installed again): what a first run of a dataset meets.

`envs`, `runtime` and `tools` are symbolic links to the real cache's (found as assay finds it:
ASSAY_CACHE_DIR, else XDG_CACHE_HOME/assay, else ~/.cache/assay); `ground-truth` starts empty.
The sandbox refuses Python environments under /tmp, so keep `path` in the checkout's target/.
"""

import os
import pathlib
import shutil
import sys


def cache_root() -> pathlib.Path:
    """assay's cache folder, found as assay finds it (crates/assay-pyenv/src/cache.rs)."""
    if os.environ.get("ASSAY_CACHE_DIR"):
        return pathlib.Path(os.environ["ASSAY_CACHE_DIR"])
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = pathlib.Path(xdg) if xdg and os.path.isabs(xdg) else pathlib.Path.home() / ".cache"
    return base / "assay"


def cold_cache(path: pathlib.Path) -> pathlib.Path:
    """Makes `path` (emptied first) such a cache and returns it."""
    real = cache_root()
    if not (real / "envs").exists():
        sys.exit(f"no environments under {real}/envs: run `assay env setup` first")
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    for part in ("envs", "runtime", "tools"):
        if (real / part).exists():
            (path / part).symlink_to(real / part)
    return path
