"""How errors read: TensorFlow's messages without their graph decorations.

Pipeline position: under the readers and loaders that wrap a TensorFlow error into one
naming the user's file (TFRecords, checkpoints), and under the error boundary of every
entry point (`cli.boundary`).
"""

import re

# The Python traceback TensorFlow puts in a graph error's text ("Detected at node ...
# defined at (most recent call last):" and its indented "File ..." lines and blank lines).
_GRAPH_TRACEBACK = re.compile(
    r"(Graph execution error:\s*)?Detected at node [^\n]*(\n[ \t][^\n]*|\n[ \t]*(?=\n))*\n?")


def op_error_text(err):
    """A TensorFlow error's text without its graph decorations (`{{function_node ...}}`,
    `[[node ...]]`, `[Op:...]`, the traceback of where the op was defined), on one
    line."""
    text = getattr(err, "message", None) or str(err)
    text = _GRAPH_TRACEBACK.sub("", text)
    text = re.sub(r"\{\{function_node [^}]*\}\}\s*", "", text)
    text = re.sub(r"\s*\[\[[^\]]*\]\]", "", text)
    text = re.sub(r"\s*\[Op:[^\]]*\]( name: \S*)?", "", text)
    return " ".join(text.split())
