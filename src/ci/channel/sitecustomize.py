# patchgate's stand-in for sitecustomize and usercustomize. site.py imports the first module of
# that name on sys.path when the interpreter starts, before any plugin or tripwire, and the
# strict run puts the sealed tree's source roots on PYTHONPATH; an agent's `src/sitecustomize/`
# would run first of all. patchgate's plugin folder comes first on PYTHONPATH, so site.py finds
# this file instead, which runs the interpreter's own module of the same name (one outside the
# sealed tree and this folder), if there is one.
#
# It also pins the runner (issue 46): before any path of the project is searched, an import
# finder first on sys.meta_path resolves pytest, _pytest, pluggy, iniconfig, py, pytest_*
# plugins, the policy's -p plugins (patchgate-runner.txt beside this file) and patchgate's own
# modules only from folders outside the sealed tree. A project package of one of those names
# (src/pytest/, a pytest.py at the root that `python -m` would put first) is never imported in
# their place; with no copy outside, the import fails rather than falling back to the project's.
def _pin():
    import importlib.machinery
    import os
    import sys

    here = os.path.dirname(os.path.realpath(__file__))
    root = os.path.realpath(os.getcwd())
    names = {"pytest", "_pytest", "pluggy", "iniconfig", "py", "patchgate_channel", "patchgate_sealed", "sitecustomize", "usercustomize"}
    try:
        with open(os.path.join(here, "patchgate-runner.txt")) as f:
            names.update(n.strip() for n in f if n.strip())
    except OSError:
        pass
    names = frozenset(names)
    find = importlib.machinery.PathFinder.find_spec
    realpath = os.path.realpath

    def outside(p):
        r = realpath(p or ".")
        return r != root and not r.startswith(root + os.sep)

    class PatchgateRunnerPin:
        """patchgate: the test runner's modules load from outside the sealed tree."""

        @staticmethod
        def find_spec(name, path=None, target=None):
            if path is not None or not (name in names or name.startswith("pytest_")):
                return None
            spec = find(name, [p for p in sys.path if outside(p)])
            if spec is None:
                raise ModuleNotFoundError("patchgate: %s is the test runner's and is not installed outside the judged tree; the project's own copy is never imported in its place" % name, name=name)
            return spec

        @staticmethod
        def invalidate_caches():
            pass

    sys.meta_path.insert(0, PatchgateRunnerPin)


def _chain(name):
    import importlib.machinery
    import importlib.util
    import os
    import sys

    here = os.path.dirname(os.path.realpath(__file__))
    root = os.path.realpath(os.getcwd())

    def foreign(p):
        r = os.path.realpath(p or ".")
        return r != here and r != root and not r.startswith(root + os.sep)

    spec = importlib.machinery.PathFinder.find_spec(name, [p for p in sys.path if p and foreign(p)])
    if spec is None or spec.loader is None:
        return
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)


if __name__ == "sitecustomize":
    _pin()
del _pin
_chain(__name__)
del _chain
