"""Child process for `logicval_hf.asp.safety.run_program`: caps memory, solves one program, prints JSON."""

from __future__ import annotations

import json
import sys


def main() -> None:
    req = json.load(sys.stdin)
    try:
        import resource

        cap = int(req.get("memory_mb", 2048)) * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    except (ImportError, ValueError, OSError):  # not available on this platform: the timeout still applies
        pass
    import clingo

    messages: list[str] = []
    try:
        ctl = clingo.Control(["--warn=none"], logger=lambda code, msg: messages.append(msg))
        ctl.add("base", [], req["program"])
        ctl.ground([("base", [])])
        model: list[str] = []

        def on_model(m: clingo.Model) -> bool:
            model.extend(sorted(str(s) for s in m.symbols(shown=True)))
            return False

        res = ctl.solve(on_model=on_model)
        json.dump({"satisfiable": bool(res.satisfiable), "model": model}, sys.stdout)
    except RuntimeError as e:
        detail = "; ".join(m.strip().replace("\n", " ") for m in messages) or str(e)
        json.dump({"error": detail}, sys.stdout)


if __name__ == "__main__":
    main()
