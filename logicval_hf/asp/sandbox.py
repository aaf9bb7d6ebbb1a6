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

    from logicval_hf.asp.messages import Messages, control

    messages = Messages()
    try:
        ctl = control(["--warn=none"], messages)
        ctl.add("base", [], req["program"])
        ctl.ground([("base", [])])
        model: list[str] = []

        def on_model(m: clingo.Model) -> bool:
            model.extend(sorted(str(s) for s in m.symbols(shown=True)))
            return False

        res = ctl.solve(on_model=on_model)
        json.dump({"satisfiable": bool(res.satisfiable), "model": model}, sys.stdout)
    except RuntimeError as e:
        json.dump({"error": messages.summary(str(e))}, sys.stdout)


if __name__ == "__main__":
    main()
