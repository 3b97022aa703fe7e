"""Side by side: the same rule set through toolregistry 0.19.0 and through toolgate, in one run.

Rule i of N, by i % 4 (the mix of crates/toolgate-policy/examples/mix.rs):
  0: tool name == "tool_i"                                  -> allow
  1: fnmatch(tool name, "svci__*") and the NETWORK tag       -> ask
  2: tool name == "pay_i" and amount < 100 and currency in {EUR, USD} -> allow
  3: the custom tag "tag_i"                                  -> deny
Both sides evaluate the same three calls (the first rule matches, the last rule matches, nothing
matches) and must reach the same decision; each is timed the same way: 201 samples of INNER
back-to-back evaluations after a warm-up, median per call. toolregistry is measured as its own
benchmark does, with `PermissionPolicy.evaluate(tool, params)`.
"""

import fnmatch
import json
import subprocess
import sys
import time
from pathlib import Path

from toolregistry import Tool
from toolregistry.permissions import PermissionPolicy, PermissionResult, PermissionRule
from toolregistry.tool import ToolMetadata, ToolTag

SAMPLES = 201


def rules(n):
    out = []
    for i in range(n):
        kind = i % 4
        if kind == 0:
            name = f"tool_{i}"
            out.append(PermissionRule(f"r{i}", lambda t, p, name=name: t.name == name, PermissionResult.ALLOW))
        elif kind == 1:
            pattern = f"svc{i}__*"
            out.append(
                PermissionRule(
                    f"r{i}",
                    lambda t, p, pattern=pattern: fnmatch.fnmatchcase(t.name, pattern)
                    and ToolTag.NETWORK in t.metadata.tags,
                    PermissionResult.ASK,
                )
            )
        elif kind == 2:
            name = f"pay_{i}"

            def pay(t, p, name=name):
                amount = p.get("amount")
                return (
                    t.name == name
                    and isinstance(amount, (int, float))
                    and not isinstance(amount, bool)
                    and amount < 100
                    and p.get("currency") in ("EUR", "USD")
                )

            out.append(PermissionRule(f"r{i}", pay, PermissionResult.ALLOW))
        else:
            tag = f"tag_{i}"
            out.append(PermissionRule(f"r{i}", lambda t, p, tag=tag: tag in t.metadata.custom_tags, PermissionResult.DENY))
    return out


def tool_for(call):
    def body(**kwargs):
        return None

    tags = set()
    custom = set()
    for tag in call.get("tags", []):
        try:
            tags.add(ToolTag(tag))
        except ValueError:
            custom.add(tag)
    return Tool.from_function(body, name=call["tool"], metadata=ToolMetadata(tags=tags, custom_tags=custom))


def median_ns(fn, inner):
    for _ in range(3):
        for _ in range(inner):
            fn()
    samples = []
    for _ in range(SAMPLES):
        start = time.perf_counter_ns()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter_ns() - start) / inner)
    samples.sort()
    return samples[SAMPLES // 2]


def main():
    n = int(sys.argv[1])
    mix_dir = Path(sys.argv[2])
    toolgate_cmd = sys.argv[3:]
    policy = PermissionPolicy(rules=rules(n), fallback=PermissionResult.ASK)
    calls = [json.loads(line) for line in (mix_dir / "calls.jsonl").read_text().splitlines() if line.strip()]

    python = {}
    for entry in calls:
        call = entry["call"]
        tool = tool_for(call)
        params = call.get("args", {})
        got = policy.evaluate(tool, params)
        decision = got.result if isinstance(got, PermissionRule) else got
        if decision.value != entry["expect"]:
            raise SystemExit(f"toolregistry disagrees on {entry['label']}: {decision.value} != {entry['expect']}")
        inner = 20000 if n <= 10 else max(40, 400000 // n)
        python[entry["label"]] = median_ns(lambda: policy.evaluate(tool, params), inner)

    rust = json.loads(subprocess.run(toolgate_cmd, check=True, capture_output=True, text=True).stdout)

    print(f"{n} rules, median per evaluation (same machine, same run)")
    print(f"{'call':<8}{'toolregistry':>16}{'toolgate':>14}{'ratio':>12}")
    for label in ("first", "last", "miss"):
        py, rs = python[label], rust[label]
        ratio = py / rs
        # Two significant digits below 10 (a ratio under 1 is toolgate behind).
        shown = f"{ratio:.2g}" if ratio < 10 else f"{ratio:.0f}"
        print(f"{label:<8}{py / 1000:>13.2f} µs{rs / 1000:>11.3f} µs{shown:>11}×")


if __name__ == "__main__":
    main()
