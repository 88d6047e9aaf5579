"""Execute a notebook with nbclient and/or summarize its outputs, for the
equivalence test (tests/notebook_test.go).

    python3 nbsummary.py --kernel NAME NOTEBOOK   # execute on that kernelspec, then summarize
    python3 nbsummary.py NOTEBOOK                 # summarize the outputs it has

Prints one JSON list, an entry per code cell: the concatenated text of each
stream, the text/plain of execute_result and display_data outputs, the
errors (ename, evalue) and the images (mime type, width, height), which is
what the equivalence compares. Executing clears the outputs first and stops
at the first error, as ripple run --notebooks does.
"""

import argparse
import base64
import json
import os
import re
import struct
import sys
from typing import Any, Dict, List, Optional, Tuple

import nbformat


def png_size(data: str) -> Tuple[int, int]:
    raw = base64.b64decode(data)
    width, height = struct.unpack(">II", raw[16:24])
    return width, height


# A warning names where it was raised: ipykernel's temp file of the cell
# (/tmp/ipykernel_123/456.py:4), ripple the notebook's script line
# (nb.ipynb:12). The place is left out of the comparison, the warning kept.
WARNING_PLACE = re.compile(r"^\S+:\d+: (\w*Warning): ", re.M)


def summarize(nb: Any) -> List[Dict[str, Any]]:
    cells = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        streams: Dict[str, str] = {}
        plain: List[str] = []
        errors: List[List[str]] = []
        images: List[List[Any]] = []
        for out in cell.outputs:
            kind = out.output_type
            if kind == "stream":
                streams[out.name] = streams.get(out.name, "") + out.text
            elif kind in ("execute_result", "display_data"):
                data = out.get("data", {})
                if "text/plain" in data:
                    plain.append(data["text/plain"])
                for mime, value in sorted(data.items()):
                    if mime == "image/png":
                        images.append([mime, *png_size(value)])
                    elif mime.startswith("image/"):
                        images.append([mime, len(value)])
            elif kind == "error":
                errors.append([out.ename, out.evalue])
        streams = {name: WARNING_PLACE.sub(r"<place>: \1: ", text) for name, text in streams.items()}
        cells.append({"streams": streams, "plain": plain, "errors": errors, "images": images})
    return cells


def execute(nb: Any, kernel: str, cwd: str) -> None:
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    client = NotebookClient(nb, kernel_name=kernel, timeout=300, allow_errors=False,
                            resources={"metadata": {"path": cwd}})
    try:
        client.execute()
    except CellExecutionError:
        pass  # the failing cell has its error output; the rest did not run


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kernel", help="execute on this kernelspec first")
    parser.add_argument("notebook")
    args = parser.parse_args(argv)
    nb = nbformat.read(args.notebook, as_version=4)
    if args.kernel:
        execute(nb, args.kernel, os.path.dirname(os.path.abspath(args.notebook)))
    json.dump(summarize(nb), sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
