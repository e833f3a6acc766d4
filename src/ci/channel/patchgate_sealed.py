# patchgate's runner for sealed expectations (issue 46), run by `patchgate ci` in a fresh
# interpreter inside the sandbox. It reads the calls on stdin (module, function, arguments:
# never an expected value), makes each call, and writes one canonical JSON result per call on
# the gate's pipe (fd 3): {"i": N, "value": V} or {"i": N, "raised": {"type", "mro", "message"}}.
# The gate compares the results outside the sandbox. Values JSON cannot hold are
# {"$repr": "..."}: see docs/ci.md, "Sealed expectations", for the encoding.


def _main():
    import ast
    import importlib
    import inspect
    import json
    import math
    import os
    import sys

    # The calls are read before any tested code is imported; then stdin is /dev/null and the
    # pipe moves off its well-known number.
    data = json.loads(sys.stdin.buffer.read().decode())
    nul = os.open(os.devnull, os.O_RDONLY)
    os.dup2(nul, 0)
    os.close(nul)
    out = os.dup(3)
    os.close(3)
    dumps = json.dumps
    write = os.write

    def emit(rec):
        b = (dumps(rec, allow_nan=False) + "\n").encode()
        while b:
            b = b[write(out, b):]

    def lit(v):
        # {"$eval": "python literal"} in the arguments: a tuple, set, bytes, complex (ast.literal_eval).
        if isinstance(v, dict):
            if list(v) == ["$eval"] and isinstance(v["$eval"], str):
                return ast.literal_eval(v["$eval"])
            return {k: lit(x) for k, x in v.items()}
        if isinstance(v, list):
            return [lit(x) for x in v]
        return v

    def crepr(x):
        # repr with a fixed order for sets (hash order changes with PYTHONHASHSEED).
        if type(x) is tuple:
            return "(" + ", ".join(crepr(e) for e in x) + ("," if len(x) == 1 else "") + ")"
        if type(x) is list:
            return "[" + ", ".join(crepr(e) for e in x) + "]"
        if type(x) is dict:
            return "{" + ", ".join(crepr(k) + ": " + crepr(v) for k, v in x.items()) + "}"
        if type(x) in (set, frozenset):
            inner = ", ".join(sorted(crepr(e) for e in x))
            if type(x) is set:
                return "{" + inner + "}" if x else "set()"
            return "frozenset({" + inner + "})" if x else "frozenset()"
        return repr(x)

    def canon(x):
        if x is None or isinstance(x, (bool, str)):
            return x
        if isinstance(x, int):
            return int(x) if abs(x) <= 2 ** 53 else {"$repr": repr(int(x))}
        if isinstance(x, float):
            return float(x) if math.isfinite(x) else {"$repr": repr(float(x))}
        if isinstance(x, list):
            return [canon(e) for e in x]
        if isinstance(x, dict) and all(isinstance(k, str) for k in x):
            return {k: canon(v) for k, v in x.items()}
        return {"$repr": crepr(x)}

    def raised(e):
        try:
            message = str(e)
        except BaseException:
            message = ""
        mro = type(e).__mro__[:-1]  # without object: "raises" names an exception class
        return {"type": type(e).__name__, "mro": [c.__name__ for c in mro] + [c.__module__ + "." + c.__qualname__ for c in mro], "message": message}

    for case in data["cases"]:
        i = case["i"]
        try:
            fn = importlib.import_module(case["module"])
            for part in case["function"].split("."):
                fn = getattr(fn, part)
            value = fn(*lit(case["args"]), **lit(case.get("kwargs") or {}))
            if inspect.iscoroutine(value):
                import asyncio

                value = asyncio.run(value)
        except BaseException as e:  # noqa: B036 - SystemExit and KeyboardInterrupt are results too
            emit({"i": i, "raised": raised(e)})
            continue
        try:
            emit({"i": i, "value": canon(value)})
        except BaseException as e:
            emit({"i": i, "unencodable": "%s: %s" % (type(e).__name__, e)})
    emit({"t": "end"})
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        # Threads or exit handlers the tested code left behind do not decide the exit status.
        os._exit(0)


_main()
