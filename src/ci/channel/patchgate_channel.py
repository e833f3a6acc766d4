# patchgate's pytest reporter. patchgate ci loads it with `-p patchgate_channel` from a folder
# outside the work tree and reads what it writes on a pipe of its own (--patchgate-fd): each
# collected test id, each test's outcome and the session's exit status. The gate cross-checks
# that stream against the JUnit report and the exit code, so a report the tested code forges
# (or a run that dies at import) is red. It also shuffles the run order from a seed and hands
# the run seed to tests as the `patchgate_seed` fixture.
import json
import os
import random
import sys

import pytest

_out = None
_state = {}
_RANK = {"passed": 0, "skipped": 1, "failed": 2}


def pytest_addoption(parser):
    g = parser.getgroup("patchgate")
    g.addoption("--patchgate-fd", type=int, default=None, help="write the gate's stream to this fd")
    g.addoption("--patchgate-seed", default=None, help="the run seed (the patchgate_seed fixture)")
    g.addoption("--patchgate-shuffle", default=None, help="shuffle the test order from this seed")


def _emit(rec):
    if _out is not None:
        _out.write(json.dumps(rec) + "\n")
        _out.flush()


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    global _out
    fd = config.getoption("--patchgate-fd")
    if fd is None or _out is not None:
        return
    # Move the pipe off its well-known number before any tested code is imported.
    private = os.dup(fd)
    os.close(fd)
    _out = os.fdopen(private, "w", buffering=1)
    _emit({"t": "start", "pytest": pytest.__version__})


@pytest.fixture
def patchgate_seed(request):
    return int(request.config.getoption("--patchgate-seed") or 0)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session, config, items):
    s = config.getoption("--patchgate-shuffle")
    if s is not None:
        random.Random(int(s)).shuffle(items)
    for it in items:
        _emit({"t": "collected", "id": it.nodeid})


def pytest_collectreport(report):
    if report.failed:
        _emit({"t": "collect-error", "id": report.nodeid})


def pytest_runtest_logreport(report):
    if report.skipped:
        new = "skipped"
    elif report.failed:
        new = "failed"
    else:
        new = "passed"
    old = _state.get(report.nodeid, "passed")
    _state[report.nodeid] = new if _RANK[new] > _RANK[old] else old


def pytest_runtest_logfinish(nodeid, location):
    _emit({"t": "test", "id": nodeid, "status": _state.get(nodeid, "failed")})


def _module_files():
    # Where each top-level module was imported from: the gate checks that the project's own
    # modules came from the sealed tree, not from an installed copy.
    out = {}
    for name, mod in list(sys.modules.items()):
        if "." in name or mod is None:
            continue
        f = getattr(mod, "__file__", None)
        if not isinstance(f, str):
            p = getattr(mod, "__path__", None)
            try:
                f = next(iter(p)) if p is not None else None
            except Exception:
                f = None
        if isinstance(f, str):
            out[name] = os.path.abspath(f)
    return out


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus):
    _emit({"t": "modules", "files": _module_files()})
    _emit({"t": "end", "exitstatus": int(exitstatus)})
