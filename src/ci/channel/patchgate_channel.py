# patchgate's pytest reporter and tripwire. patchgate ci loads it with `-p patchgate_channel`
# from a folder outside the work tree and reads what it writes on a pipe of its own
# (--patchgate-fd): each collected test id, each test's outcome, the session's exit status,
# where the project's modules were imported from, and every tripwire that fired. The gate
# cross-checks that stream against the JUnit report and the exit code.
#
# The tripwire is installed when this module is imported, which pytest does while it reads its
# arguments: before any conftest and before the project is imported. It has two halves:
# - a `sys.addaudithook` hook (PEP 578: it cannot be removed) that records, when the nearest
#   calling frame outside the standard library is the project's own source, frame and object
#   walks (sys._current_frames, gc.get_objects/get_referrers/get_referents), tracing hooks, an
#   open or compile of a test source, and an import of the runner's internals;
# - a snapshot of the runner's functions and classes, unittest's assertions, builtins and
#   sys.meta_path, compared after every test and at the end, because a plain assignment to a
#   class attribute raises no audit event.
# All state lives in closures: the module keeps no globals of its own and leaves sys.modules.



def _make():
    import importlib
    import json
    import os
    import random
    import sys
    import sysconfig

    import pytest

    dumps = json.dumps
    write = os.write
    getframe = sys._getframe
    root = os.path.realpath(os.getcwd())
    stdlib = tuple({os.path.realpath(p) + os.sep for p in (sysconfig.get_paths().get("stdlib"), sysconfig.get_paths().get("platstdlib")) if p})
    here = os.path.realpath(__file__)
    fd = [None]
    state = {}
    rank = {"passed": 0, "skipped": 1, "failed": 2}
    seen = set()
    busy = [False]
    pending = []
    walks = frozenset(("sys._current_frames", "gc.get_objects", "gc.get_referrers", "gc.get_referents", "sys.settrace", "sys.setprofile", "builtins.breakpoint"))
    watched = walks | {"open", "compile", "import", "object.__getattr__", "sys._getframe"}
    # The runner's own folders: a frame of theirs handed to the project holds the runner's locals.
    import _pytest
    import pluggy
    runner_memo = {}
    runner_dirs = tuple(os.path.realpath(os.path.dirname(m.__file__)) + os.sep for m in (_pytest, pluggy))

    def emit(rec):
        if fd[0] is None:
            pending.append(rec)
            return
        data = (dumps(rec) + "\n").encode()
        while data:
            data = data[write(fd[0], data):]

    realpaths = {}

    def rel(path):
        r = realpaths.get(path)
        if r is None:
            p = os.path.realpath(path)
            r = realpaths[path] = p[len(root) + 1:] if p.startswith(root + os.sep) else p
        return r

    tests_memo = {}

    def is_test_source(path):
        if not isinstance(path, str) or not path.endswith(".py"):
            return False
        v = tests_memo.get(path)
        if v is None:
            v = tests_memo[path] = test_source(path)
        return v

    def test_source(path):
        r = rel(path)
        if r.startswith("/"):
            return False
        parts = r.split("/")
        name = parts[-1]
        return parts[0] == ".patchgate-holdout" or any(p in ("tests", "test", "testing") for p in parts[:-1]) or name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"

    def is_project(path, generated=False):
        # generated: code compiled under a name that is no file (exec/compile of a string in the
        # project) counts as the project's for walks; the standard library's own is <frozen ...>.
        if generated and isinstance(path, str) and path.startswith("<") and not path.startswith("<frozen"):
            return True
        if not isinstance(path, str) or path.startswith("<"):
            return False
        r = rel(path)
        if r.startswith("/") or is_test_source(path):
            return False
        return not any(p in ("site-packages", "dist-packages", "node_modules", ".venv", "venv", ".tox", ".nox") for p in r.split("/"))

    skip_memo = {}

    def skipped(fn):
        v = skip_memo.get(fn)
        if v is None:
            real = os.path.realpath(fn) if not fn.startswith("<") else fn
            v = skip_memo[fn] = fn.startswith("<frozen") or real.startswith(stdlib) or real == here
        return v

    def caller():
        f = getframe(2)
        while f is not None:
            if not skipped(f.f_code.co_filename):
                return f
            f = f.f_back
        return None

    def fire(event, f, detail):
        key = (event, f.f_code.co_filename, f.f_lineno)
        if key in seen:
            return
        seen.add(key)
        emit({"t": "tamper", "event": event, "file": rel(f.f_code.co_filename), "line": f.f_lineno, "detail": detail[:200]})

    def hook(event, args):
        if event not in watched or busy[0]:
            return
        busy[0] = True
        try:
            if event == "open":
                # A test source read to walk the stack (inspect.stack, traceback.extract_stack read
                # it through linecache). The project opening a file a test handed it is no walk.
                if not is_test_source(args[0] if args and isinstance(args[0], str) else None):
                    return
                if os.path.basename(getframe(1).f_code.co_filename) not in ("linecache.py", "tokenize.py", "inspect.py", "traceback.py"):
                    return
                detail = "read the test source %s while walking the stack" % rel(args[0])
            elif event == "compile":
                if len(args) < 2 or not is_test_source(args[1] if isinstance(args[1], str) else None):
                    return
                detail = "compiled the test source " + rel(args[1])
            elif event == "import":
                name = args[0] if args else ""
                top = name.split(".")[0] if isinstance(name, str) else ""
                if top in ("_pytest", "pytest", "pluggy", "unittest", "patchgate_channel"):
                    detail = "imported the runner's module " + name
                else:
                    return
            elif event == "sys._getframe":
                # A frame of the runner's (pytest, pluggy) handed to the project: its locals are the
                # runner's session, items and reports. The project's or a test's own frame is fine.
                fr = args[0] if args else None
                fn = getattr(getattr(fr, "f_code", None), "co_filename", "")
                if not isinstance(fn, str):
                    return
                v = runner_memo.get(fn)
                if v is None:
                    v = runner_memo[fn] = os.path.realpath(fn).startswith(runner_dirs)
                if not v:
                    return
                detail = "took a frame of the runner (%s) with sys._getframe" % os.path.basename(fn)
            elif event == "object.__getattr__":
                attr = args[1] if len(args) > 1 else None
                if attr == "tb_frame":
                    # traceback.format_exc(), logging.exception() and the like read it in the
                    # standard library: formatting the current exception is no walk.
                    if skipped(getframe(1).f_code.co_filename):
                        return
                    detail = "read a traceback's frame (tb_frame)"
                elif attr == "__code__" and is_test_source(getattr(getattr(args[0], "__code__", None), "co_filename", None)):
                    # A callback the test passed in is the caller's own argument; a test function
                    # fetched from its module (sys.modules, gc) is not.
                    f = caller()
                    if f is None or any(v is args[0] for v in f.f_locals.values()):
                        return
                    detail = "read the code object of the test function " + str(getattr(args[0], "__qualname__", "?"))
                else:
                    return
            else:
                detail = "called " + event
            f = caller()
            if f is not None and is_project(f.f_code.co_filename, generated=event in walks or event == "sys._getframe"):
                fire(event, f, detail)
        except Exception:
            pass
        finally:
            busy[0] = False

    sys.addaudithook(hook)

    # Held-out tests handed over on stdin (PATCHGATE_HOLDOUT_FROM_STDIN): read before any tested
    # code runs, compiled at once and the source dropped (issue 46: no held-out source stays in
    # memory the project's code can reach), never written to disk; stdin is then /dev/null.
    held = {}
    if os.environ.pop("PATCHGATE_HOLDOUT_FROM_STDIN", None) == "1":
        chunks = []
        while True:
            b = os.read(0, 1 << 16)
            if not b:
                break
            chunks.append(b)
        files = json.loads(b"".join(chunks).decode())["files"]
        del chunks
        for rel_ in sorted(files):
            held[rel_] = compile(files.pop(rel_), os.path.join(root, ".patchgate-holdout", rel_), "exec", dont_inherit=True)
        del files
        nul = os.open(os.devnull, os.O_RDONLY)
        os.dup2(nul, 0)
        os.close(nul)

    def held_items(session):
        import pathlib
        import types

        class HeldModule(pytest.Module):
            def _getobj(self):
                rel = str(self.path)[len(root) + 1:][len(".patchgate-holdout/"):]
                name = "patchgate_holdout." + rel[:-3].replace("/", ".")
                mod = types.ModuleType(name)
                mod.__file__ = str(self.path)
                sys.modules[name] = mod
                exec(held[rel], mod.__dict__)
                return mod

        out = []
        base = pathlib.Path(root) / ".patchgate-holdout"
        for rel in sorted(held):
            node = HeldModule.from_parent(session, path=base / rel)
            out.extend(session.genitems(node))
        return out

    # The snapshot: what the runner judges with, as it was before the project was imported.
    names = ["_pytest.reports", "_pytest.runner", "_pytest.terminal", "_pytest.junitxml", "_pytest.main", "_pytest.python", "_pytest.outcomes", "_pytest.nodes", "_pytest.skipping", "_pytest.unittest", "_pytest.assertion.rewrite", "_pytest.assertion.util", "_pytest.fixtures", "pytest", "pluggy", "pluggy._hooks", "pluggy._callers", "pluggy._manager", "unittest", "unittest.case", "unittest.result", "builtins", "bdb"]

    def ident(v):
        return (id(v), id(getattr(v, "__code__", None)))

    # The runner's classes and the names they hold: an attribute added to one (a `passed`
    # property on TestReport shadowing BaseReport's) replaces nothing the snapshot holds.
    class_keys = {}

    def take():
        snap = {}
        for n in names:
            try:
                m = importlib.import_module(n)
            except Exception:
                continue
            for k, v in list(vars(m).items()):
                if callable(v):
                    snap[(n, k)] = ident(v)
                if isinstance(v, type) and getattr(v, "__module__", None) == n:
                    class_keys[(n, k)] = (v, frozenset(vars(v)))
                    for ck, cv in list(vars(v).items()):
                        if callable(cv) or isinstance(cv, (property, staticmethod, classmethod)):
                            snap[(n, k, ck)] = ident(cv)
        return snap

    # A debugger object (pdb.Pdb, bdb.Bdb) walks the stack with no audit event: Bdb.get_stack
    # (Pdb.setup and its commands use it) called from the project's code is recorded. Creating
    # one is not (click's CliRunner makes a Pdb for its isolation), and set_trace already fires
    # sys.settrace. pytest's own --pdb calls it from _pytest. pdb.set_trace is pytest's to
    # replace, so bdb alone joins the snapshot.
    import bdb

    bdb_get_stack = bdb.Bdb.get_stack

    def get_stack(self, f, t):
        c = getframe(1)
        while c is not None and skipped(c.f_code.co_filename):
            c = c.f_back
        if c is not None and is_project(c.f_code.co_filename, generated=True):
            fire("debugger", c, "walked the stack with a debugger object (%s.get_stack)" % type(self).__name__)
        return bdb_get_stack(self, f, t)

    bdb.Bdb.get_stack = get_stack

    snap = take()
    meta = [id(x) for x in sys.meta_path]
    mods = {}

    def lookup(key):
        m = mods.get(key[0]) or sys.modules.get(key[0])
        if m is None:
            return None
        mods[key[0]] = m
        v = vars(m).get(key[1], None)
        if len(key) == 3:
            v = vars(v).get(key[2], None) if isinstance(v, type) else None
        return v

    reported = set()

    def runner_code(v):
        # pytest adds some names to its own classes as it configures (legacypath's fspath, startdir).
        f = getattr(v, "fget", None) or getattr(v, "__func__", None) or v
        fn = getattr(getattr(f, "__code__", None), "co_filename", None)
        return isinstance(fn, str) and os.path.realpath(fn).startswith(runner_dirs)

    def compare(when):
        for key, want in snap.items():
            if key in reported:
                continue
            v = lookup(key)
            if v is None or ident(v) != want:
                reported.add(key)
                emit({"t": "tamper", "event": "patched", "file": "", "line": 0, "detail": "%s was %s %s" % (".".join(key), "removed" if v is None else "replaced", when)})
        for (n, k), (cls, keys) in class_keys.items():
            for ck in set(vars(cls)) - keys:
                cv = vars(cls).get(ck)
                if (n, k, ck, "+") not in reported and (callable(cv) or isinstance(cv, (property, staticmethod, classmethod))) and not runner_code(cv):
                    reported.add((n, k, ck, "+"))
                    emit({"t": "tamper", "event": "patched", "file": "", "line": 0, "detail": "%s.%s.%s was added %s" % (n, k, ck, when)})
        plugins_check(when)
        now = set(id(x) for x in sys.meta_path)
        for i in meta:
            if i not in now and ("meta_path", i) not in reported:
                reported.add(("meta_path", i))
                emit({"t": "tamper", "event": "patched", "file": "", "line": 0, "detail": "an import finder was removed from sys.meta_path " + when})

    config_ref = [None]

    def plugins_check(when):
        # A pytest plugin whose code is the project's (registered through a frame's or an object's
        # reach into the runner) can turn failures into passes; conftests are the tests' own.
        cfg = config_ref[0]
        if cfg is None:
            return
        for p in list(cfg.pluginmanager.get_plugins()):
            # Modules are what conftests' `pytest_plugins` name (a project's own fixtures module
            # among them): only objects (a class or an instance) defined in project code count.
            if isinstance(p, type(sys)):
                continue
            owner = p if isinstance(p, type) else type(p)
            f = getattr(sys.modules.get(getattr(owner, "__module__", "")), "__file__", None)
            if isinstance(f, str) and is_project(f) and ("plugin", id(p)) not in reported:
                reported.add(("plugin", id(p)))
                emit({"t": "tamper", "event": "patched", "file": rel(f), "line": 0, "detail": "a pytest plugin from the project's code was registered %s" % when})

    def pytest_addoption(parser):
        g = parser.getgroup("patchgate")
        g.addoption("--patchgate-fd", type=int, default=None, help="write the gate's stream to this fd")
        g.addoption("--patchgate-seed", default=None, help="the run seed (the patchgate_seed fixture)")
        g.addoption("--patchgate-shuffle", default=None, help="shuffle the test order from this seed")
        g.addoption("--patchgate-only", default=None, help="run only the test of this node id (ledger freeze)")

    @pytest.hookimpl(tryfirst=True)
    def pytest_configure(config):
        n = config.getoption("--patchgate-fd")
        if n is None or fd[0] is not None:
            return
        # Move the pipe off its well-known number before the tests run.
        private = os.dup(n)
        os.close(n)
        fd[0] = private
        config_ref[0] = config
        emit({"t": "start", "pytest": pytest.__version__})
        while pending:
            emit(pending.pop(0))
        sys.modules.pop("patchgate_channel", None)

    @pytest.fixture
    def patchgate_seed(request):
        return int(request.config.getoption("--patchgate-seed") or 0)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(session, config, items):
        if held:
            items[:] = [it for it in items if not it.nodeid.startswith(".patchgate-holdout/")] + held_items(session)
        only = config.getoption("--patchgate-only")
        if only is not None:
            # ledger freeze re-runs one test, collected as the whole command collects it (its conftest, its fixtures).
            dropped = [it for it in items if it.nodeid != only]
            items[:] = [it for it in items if it.nodeid == only]
            if dropped:
                config.hook.pytest_deselected(items=dropped)
        s = config.getoption("--patchgate-shuffle")
        if s is not None:
            random.Random(int(s)).shuffle(items)
        for it in items:
            emit({"t": "collected", "id": it.nodeid})

    def pytest_collectreport(report):
        if type(report) is not CollectReport:
            emit({"t": "tamper", "event": "patched", "file": "", "line": 0, "detail": "a collection report's class was changed to %s.%s" % (type(report).__module__, type(report).__qualname__)})
        if report.failed:
            emit({"t": "collect-error", "id": report.nodeid})

    from _pytest.reports import CollectReport, TestReport

    def pytest_runtest_logreport(report):
        if type(report) is not TestReport:
            emit({"t": "tamper", "event": "patched", "file": "", "line": 0, "detail": "a test report's class was changed to %s.%s" % (type(report).__module__, type(report).__qualname__)})
        new = "skipped" if report.skipped else "failed" if report.failed else "passed"
        old = state.get(report.nodeid, "passed")
        state[report.nodeid] = new if rank[new] > rank[old] else old

    def pytest_runtest_logfinish(nodeid, location):
        compare("during " + nodeid)
        emit({"t": "test", "id": nodeid, "status": state.get(nodeid, "failed")})

    def module_files():
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
        compare("by the end of the session")
        emit({"t": "modules", "files": module_files()})
        emit({"t": "end", "exitstatus": int(exitstatus)})

    return {
        "pytest_addoption": pytest_addoption, "pytest_configure": pytest_configure, "patchgate_seed": patchgate_seed,
        "pytest_collection_modifyitems": pytest_collection_modifyitems, "pytest_collectreport": pytest_collectreport,
        "pytest_runtest_logreport": pytest_runtest_logreport, "pytest_runtest_logfinish": pytest_runtest_logfinish,
        "pytest_sessionfinish": pytest_sessionfinish,
    }


globals().update(_make())
del _make
