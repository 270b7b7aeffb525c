"""Runs the memfit command line for the tools (tools/validate, tools/accuracy): one way to call it.

    from memfit_cli import MemfitError, check_binary, run, estimate

    check_binary("build/cli/memfit")                  # MemfitError if missing or not executable
    r = run("build/cli/memfit", {"model": {...}})     # Run(returncode, result, stderr, stdout)
    result = estimate("build/cli/memfit", "cfg.json") # the result JSON, or MemfitError

A configuration is a dict (written to a temporary file) or the path of a JSON file; either goes to
`memfit --config FILE --json`. Standard library only, so Debian's /usr/bin/python3 runs it.
"""

import json
import os
import subprocess
import tempfile
from typing import NamedTuple, Optional

DEFAULT_TIMEOUT_S = 60


class MemfitError(Exception):
    """memfit could not be run, or did not answer with a result."""


class Run(NamedTuple):
    returncode: int
    result: Optional[dict]  # the parsed JSON on stdout; None when there was none or it was not JSON
    stderr: str
    stdout: str


def check_binary(binary):
    if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
        raise MemfitError("memfit binary not found or not executable: %s (build it: cmake -S . -B build && "
                          "cmake --build build -j2)" % binary)


def run(binary, config, timeout=DEFAULT_TIMEOUT_S):
    """`memfit --config FILE --json` on a dict or a file path. Raises MemfitError only when memfit
    cannot be run (missing, not executable, past the timeout); its own failures come back in Run."""
    path, temporary = config, False
    if isinstance(config, dict):
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(config, f)
        path, temporary = f.name, True
    try:
        proc = subprocess.run([binary, "--config", path, "--json"], capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        raise MemfitError("memfit binary not found: %s" % binary)
    except PermissionError:
        raise MemfitError("memfit binary is not executable: %s" % binary)
    except subprocess.TimeoutExpired:
        raise MemfitError("memfit timed out after %ds on %s" % (timeout, path if not temporary else "a configuration"))
    finally:
        if temporary:
            os.unlink(path)
    result = None
    if proc.stdout.strip():
        try:
            result = json.loads(proc.stdout)
        except ValueError:
            result = None
    return Run(proc.returncode, result, proc.stderr.strip(), proc.stdout)


def estimate(binary, config, timeout=DEFAULT_TIMEOUT_S):
    """The result JSON of one configuration; MemfitError when memfit fails or prints no JSON."""
    where = config if isinstance(config, str) else "a configuration"
    r = run(binary, config, timeout)
    if r.returncode != 0:
        raise MemfitError("memfit exited %d on %s: %s" % (r.returncode, where, (r.stderr or r.stdout).strip()[:500]))
    if r.result is None:
        raise MemfitError("memfit printed no valid JSON for %s: %r" % (where, r.stdout[:300]))
    return r.result
