# patchgate's stand-in for sitecustomize and usercustomize. site.py imports the first module of
# that name on sys.path when the interpreter starts, before any plugin or tripwire, and the
# strict run puts the sealed tree's source roots on PYTHONPATH; an agent's `src/sitecustomize/`
# would run first of all. patchgate's plugin folder comes first on PYTHONPATH, so site.py finds
# this file instead, which runs the interpreter's own module of the same name (one outside the
# sealed tree and this folder), if there is one.
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


_chain(__name__)
del _chain
