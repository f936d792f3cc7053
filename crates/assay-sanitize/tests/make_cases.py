"""Regenerates tests/cases.json: our own tricky inputs, with the outputs of the OFFICIAL
BigCodeBench 0.2.5 sanitizer (the oracle). Run it with the interpreter that has the official
package installed, from this directory:

    /work/bench-official/venv/bin/python make_cases.py

Each case records `text`, `entry_point`, and the official `sanitize(text, entry_point)` and
`code_extract(text)`. Inputs on which the official crashes (RecursionError) cannot be here; the
Rust tests cover them separately.
"""

import json
import pathlib

from bigcodebench.sanitize import code_extract, sanitize

FENCE = "```"

CASES = {
    "two fenced blocks with prose, the larger wins": (
        "Here is the solution:\n"
        f"{FENCE}python\nimport os\n\ndef task_func(path):\n    return os.listdir(path)\n{FENCE}\n"
        "And an example:\n"
        f"{FENCE}python\nprint(task_func('.'))\n{FENCE}\nHope this helps.\n"
    ),
    "main guard dropped": (
        "import math\ndef task_func(x):\n    return math.sqrt(x)\n\n"
        "if __name__ == '__main__':\n    print(task_func(4))\n"
    ),
    "decorated task_func lost": (
        "import functools\n@functools.lru_cache\ndef task_func(n):\n    return n * 2\n"
    ),
    "decorated helper dropped": (
        "import functools\n@functools.lru_cache\ndef helper(n):\n    return n\n\n"
        "def task_func(n):\n    return helper(n)\n"
    ),
    "decorated class dropped": (
        "from dataclasses import dataclass\n@dataclass\nclass Point:\n    x: int\n\n"
        "def task_func():\n    return Point(1)\n"
    ),
    "two task_func definitions, first wins": (
        "def task_func():\n    return 1\n\ndef task_func():\n    return 2\n"
    ),
    "try import dropped": (
        "try:\n    import numpy as np\nexcept ImportError:\n    np = None\n\n"
        "import os\ndef task_func():\n    return np.zeros(3)\n"
    ),
    "future import dropped": (
        "from __future__ import annotations\nimport os\n\ndef task_func(x: int) -> int:\n    return x\n"
    ),
    "tab-indented body cut": (
        "import os\ndef task_func(x):\n\treturn helper(x)\n\ndef helper(x):\n\treturn x\n"
    ),
    "prose only": "I cannot help with that.\nSorry about that, really.\n",
    "empty": "",
    "whitespace only": "   \n\t\n \u3000 \n",
    "single invalid line": "x = = 1",
    "crlf line endings": "import os\r\ndef task_func():\r\n    return 1\r\n",
    "crlf with trailing mention": (
        "import os\r\ndef task_func():\r\n    return 1\r\nresult = task_func()\r\n"
    ),
    "old mac line endings": "import os\rdef task_func():\r    return 1\r",
    "one-line def removed": "import os\ndef task_func(x): return x\n",
    "variable shadows entry point": (
        "import os\ntask_func = None\n\ndef task_func():\n    return os.getcwd()\n"
    ),
    "lambda entry point": "import os\ntask_func = lambda x: os.path.join(x, 'a')\n",
    "tuple assignment has no name": (
        "A, B = 1, 2\nC = 3\ndef task_func():\n    return A + B + C\n"
    ),
    "attribute and subscript assignments": (
        "import os\nd = {}\nd['k'] = 4\nos.environ_x = 3\ndef task_func():\n    return d\n"
    ),
    "chained and annotated assignments": (
        "p = q = 7\nx: int = 5\ny: int\ndef task_func():\n    return p + q + x + y\n"
    ),
    "two statements on one line": "a = 1; b = 2\ndef task_func():\n    return a + b\n",
    "trailing call with result": (
        "def task_func(x):\n    result = x * 2\n    return result\n\nresult = task_func(3)\nprint(result)\n"
    ),
    "trailing from task_func import": (
        "import os\ndef task_func():\n    return os.sep\nfrom task_func import something\nimport sys\n"
    ),
    "over-kept variables named like parameters": (
        "import csv\nfile_path = 'data.csv'\nunused = 1\n\n"
        "def task_func(file_path, unused_param=None):\n    return csv.reader(open(file_path))\n"
    ),
    "helper class with methods": (
        "import math\nclass Shape:\n    def area(self):\n        return self.helper()\n"
        "    def helper(self):\n        return math.pi\n\ndef helper():\n    return 0\n\n"
        "def task_func():\n    return Shape().area()\n"
    ),
    "async task_func": "import asyncio\nasync def task_func():\n    await asyncio.sleep(0)\n    return 1\n",
    "entry point not defined": "import os\nimport sys\ndef other():\n    return 1\n",
    "top-level comments and statements": (
        "# setup\nimport os\nos.makedirs('x', exist_ok=True)\nx = 1\nx += 1\n"
        "def task_func():\n    # inner comment\n    return x\n"
    ),
    "duplicate imports kept": "import os\nimport os\nfrom os import path\ndef task_func():\n    return path\n",
    "imports hoisted above definitions": (
        "def task_func():\n    return helper()\nimport os\ndef helper():\n    return os.sep\n"
    ),
    "non-ascii identifiers and strings": (
        "def task_func():\n    café = 'naïve ☃ 日本語 🎉'\n    return café\n"
    ),
    "nul byte": "import os\ndef task_func():\n    return 'a\x00b'\n",
    "nul byte in prose": "Here:\x00\nimport os\ndef task_func():\n    return 1\n",
    "bracket closed after a blank line": (
        "Some prose first.\ndef task_func():\n    data = [\n        1,\n\n        2,\n    ]\n    return data\n"
    ),
    "fence inside a triple-quoted string": (
        f'def task_func():\n    s = """\n{FENCE}python\nnot code\n{FENCE}\n"""\n    return s\n'
    ),
    "u2028 inside a string": "import os\ndef task_func():\n    return 'a\u2028b'\n",
    "u2028 before a trailing mention": (
        "import os\ndef task_func():\n    return 1\nx = 1\u2028y = task_func\n"
    ),
    "information separator whitespace": (
        "\x1cimport os\ndef task_func():\n    return 1\n\x1f\n"
    ),
    "form feed between functions": (
        "import os\n\x0c\ndef helper():\n    return 1\n\x0c\ndef task_func():\n    return helper()\n"
    ),
    "byte order mark": "\ufeffimport os\ndef task_func():\n    return 1\n",
    "leading and trailing blank lines": "\n\ndef f():\n    pass\n\n",
    "ties between equal blocks keep the first": (
        f"{FENCE}python\ndef task_func():\n    return 1\n{FENCE}\n"
        f"{FENCE}python\ndef task_func():\n    return 2\n{FENCE}\n"
    ),
    "prose line that is an expression": "Note\ndef task_func():\n    return 1\n",
    "module-level return accepted by ast": "import os\nreturn 5\ndef task_func():\n    return 1\n",
    "pep 695 rejected by 3.11": (
        "def helper[T](x: T) -> T:\n    return x\n\ndef task_func():\n    return 1\n"
    ),
    "nested same-quote f-string rejected by 3.11": (
        "import os\ndef task_func(d):\n    return f\"{d[\"k\"]}\"\n"
    ),
    "match statement": (
        "def task_func(x):\n    match x:\n        case 1:\n            return 'one'\n"
        "        case _:\n            return 'other'\n"
    ),
    "indented body only": "    return x + 1\n",
    "body indented after a fence": f"{FENCE}python\n    x = 1\n    return x\n{FENCE}\n",
    "backslash continuation": "import os\nX = 1 + \\\n    2\ndef task_func():\n    return X\n",
    "global and if blocks at top level": (
        "import os\nif True:\n    def helper():\n        return 1\nglobal g\n"
        "def task_func():\n    return helper()\n"
    ),
    "walrus and starred": "import os\n*a, b = [1, 2]\ndef task_func():\n    return (n := len(a))\n",
    "entry point substring match": (
        "def task_func():\n    return 1\ndef task_func_v2():\n    return 2\n"
    ),
    "syntax error in the middle": (
        "import os\ndef task_func():\n    return 1\nthis is not python\ndef helper():\n"
        "    return 2\n    more\n"
    ),
    "unclosed string then closed": "x = '''\nprose\n'''\ndef task_func():\n    return x\n",
    "print statement python2": "import os\nprint 'hello'\ndef task_func():\n    return 1\n",
    "trailing whitespace lines": "import os\ndef task_func():\n    return 1\n   \n\t\n",
    "fallback keeps leading blank lines and calls": (
        "\n\ndef task_func(x): return x\nprint(task_func(1))\n\n"
    ),
    "fallback keeps a main guard": (
        "\ndef task_func(x): return x\nif __name__ == '__main__':\n    task_func(1)\n"
    ),
    "indentation error later": (
        "import os\ndef task_func():\n    return 1\n  x = 2\ndef g():\n    return 3\n"
    ),
}

# Cases run with a different entry point than task_func.
OTHER_ENTRY_POINTS = {
    "empty entry point keeps everything": (
        "import os\ndef a():\n    return 1\ndef b():\n    return 2\nx = a()\n",
        "",
    ),
    "empty entry point with indented tail": (
        "import os\ndef a():\n    return 1\n",
        "",
    ),
    "entry point f with blank lines": ("\n\ndef f():\n    pass\n\n", "f"),
}


def case(name, text, entry_point):
    return {
        "name": name,
        "text": text,
        "entry_point": entry_point,
        "sanitized": sanitize(text, entry_point),
        "extracted": code_extract(text),
    }


def main():
    cases = [case(name, text, "task_func") for name, text in CASES.items()]
    cases += [case(name, text, entry) for name, (text, entry) in OTHER_ENTRY_POINTS.items()]
    out = pathlib.Path(__file__).with_name("cases.json")
    out.write_text(json.dumps(cases, indent=1, ensure_ascii=True) + "\n")
    print(f"wrote {len(cases)} cases to {out}")


if __name__ == "__main__":
    main()
