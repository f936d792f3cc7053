"""`python -m assay_code ARGS`: the same as `assay ARGS`."""

import os
import sys

from assay_code import find_assay_bin


def main() -> None:
    """Replace this process with the binary, so that signals, exit codes and the terminal are
    assay's own, with no Python in between."""
    binary = find_assay_bin()
    os.execv(binary, [binary, *sys.argv[1:]])


if __name__ == "__main__":
    main()
