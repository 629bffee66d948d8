import os
import sys

import lit.formats

config.name = "cvmc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".json", ".txt"]
config.excludes = ["lit.cfg.py", "Inputs", "Output"]
config.test_source_root = os.path.dirname(__file__)
# Tools (cvm-opt, cvm-translate, filecheck) come from the interpreter's environment.
bindir = os.path.dirname(sys.executable)
config.environment["PATH"] = bindir + os.pathsep + config.environment.get("PATH", os.environ.get("PATH", ""))
config.substitutions.append(("%shared", os.path.join(os.path.dirname(__file__), "..", "data")))
# The tools import the checkout that PYTHONPATH names first (a worktree's code, not the installed one's).
if "PYTHONPATH" in os.environ:
    config.environment["PYTHONPATH"] = os.environ["PYTHONPATH"]
