"""Run one tutorial as a notebook: convert the jupytext `.py` to a notebook, execute it in a
Jupyter kernel (ipykernel, through nbclient) whose working directory is `cwd`, and write the
executed notebook to `out` (to read its outputs). On a cell error, print nbclient's report
(the failing cell and its traceback) to stderr and exit with status 1.

    python tests/tutorials/run_notebook.py tutorials/02_attention_by_hand.py CWD OUT.ipynb
"""

from __future__ import annotations

import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    import jupytext
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    source, cwd, out = Path(argv[0]), argv[1], Path(argv[2])
    notebook = jupytext.read(source)
    client = NotebookClient(notebook, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": cwd}})
    try:
        client.execute()
        status = 0
    except CellExecutionError as error:
        print(f"{source.name}: a cell failed in the kernel\n{error}", file=sys.stderr)
        status = 1
    nbformat.write(notebook, out)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
