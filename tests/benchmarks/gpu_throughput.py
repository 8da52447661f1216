"""Benchmark on one GPU: a GPT-2-small-sized decoder (124M parameters, generated tokens),
bf16-mixed, AdamW, with and without ``torch.compile``; tokens/s, MFU and peak memory of a raw
PyTorch loop, fulmen's Trainer and Lite, and Lightning's Trainer and Fabric (when installed),
interleaved in one run.

Each contender runs in its own process (``gpu_throughput_worker.py``), one after another; every
round runs all of them, in the reverse order of the round before. Ratios are taken against the
raw loop of the same round (paired), then the median over rounds is reported. Goals (issue 38):
Trainer >= 0.99x and Lite >= 0.995x the raw loop's tokens/s, with and without compile, and both
at least Lightning's and Fabric's; peak memory within 2% of the raw loop's.

Without CUDA it says so and exits 0 (``make bench`` runs it everywhere), unless ``--dry-run``,
which runs a tiny model for a few steps on the CPU to check the plan.

    .venv/bin/python tests/benchmarks/gpu_throughput.py [--rounds 2] [--out results.json]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import torch

WORKER = Path(__file__).with_name("gpu_throughput_worker.py")
CONTENDERS = ["raw", "fulmen", "lite", "lightning", "fabric"]
GOALS = {"fulmen": 0.99, "lite": 0.995}


def lightning_installed() -> bool:
    return importlib.util.find_spec("lightning") is not None


def run_one(contender: str, compiled: bool, args: argparse.Namespace) -> dict[str, Any]:
    command = [sys.executable, str(WORKER), "--contender", contender, "--compile",
               str(int(compiled)), "--size", args.size, "--batch", str(args.batch),
               "--warmup", str(args.warmup), "--steps", str(args.steps)]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = (done.stdout + done.stderr)[-3000:]
        return {"contender": contender, "compile": compiled, "error": tail,
                "wall_s": time.perf_counter() - started}
    result = json.loads(lines[-1])
    result["wall_s"] = time.perf_counter() - started
    return result


def summarise(results: list[dict[str, Any]], contenders: list[str]) -> dict[str, Any]:
    """Per compile mode and contender: median tokens/s, MFU, peak memory, and the median of the
    per-round ratios to the raw loop of the same round."""
    summary: dict[str, Any] = {}
    for compiled in sorted({r["compile"] for r in results}):
        mode: dict[str, Any] = {}
        rounds = sorted({r["round"] for r in results if r["compile"] == compiled})
        raw = {r["round"]: r for r in results
               if r["compile"] == compiled and r["contender"] == "raw" and "error" not in r}
        for contender in contenders:
            runs = [r for r in results if r["compile"] == compiled and r["contender"] == contender]
            good = [r for r in runs if "error" not in r]
            if not good:
                mode[contender] = {"error": runs[0]["error"]} if runs else {"not_run": True}
                continue
            ratios = [r["tokens_per_s"] / raw[r["round"]]["tokens_per_s"]
                      for r in good if r["round"] in raw]
            memory = [r["peak_memory_bytes"] / raw[r["round"]]["peak_memory_bytes"]
                      for r in good if r["round"] in raw and r["peak_memory_bytes"]]
            mfus = [r["mfu"] for r in good if r["mfu"] is not None]
            mode[contender] = {
                "tokens_per_s": statistics.median(r["tokens_per_s"] for r in good),
                "ratio_to_raw": statistics.median(ratios) if ratios else None,
                "ratios": ratios,
                "mfu": statistics.median(mfus) if mfus else None,
                "peak_memory_gib": max(r["peak_memory_bytes"] or 0 for r in good) / 2**30,
                "memory_ratio_to_raw": max(memory) if memory else None,
                "rounds": len(good), "of_rounds": len(rounds)}
        summary["compile" if compiled else "eager"] = mode
    return summary


def verdicts(summary: dict[str, Any]) -> list[str]:
    lines = []
    for mode, table in summary.items():
        for ours, goal in GOALS.items():
            mine = table.get(ours, {})
            if mine.get("ratio_to_raw") is None:
                lines.append(f"{mode}: {ours}: no figure ({mine.get('error', 'not run')[-300:]})")
                continue
            ratio = mine["ratio_to_raw"]
            lines.append(f"{mode}: {ours} {ratio:.4f}x raw (goal >= {goal}): "
                         f"{'met' if ratio >= goal else 'MISSED'}")
            peer = {"fulmen": "lightning", "lite": "fabric"}[ours]
            theirs = table.get(peer, {}).get("ratio_to_raw")
            if theirs is not None:
                lines.append(f"{mode}: {ours} vs {peer}: {ratio:.4f} vs {theirs:.4f}: "
                             f"{'met' if ratio >= theirs else 'MISSED'}")
            memory = mine.get("memory_ratio_to_raw")
            if memory is not None:
                lines.append(f"{mode}: {ours} peak memory {memory:.4f}x raw (goal <= 1.02): "
                             f"{'met' if memory <= 1.02 else 'MISSED'}")
    return lines


def table(summary: dict[str, Any]) -> str:
    rows = ["| mode | contender | tokens/s | x raw (median of rounds) | MFU | peak memory GiB |",
            "|---|---|---|---|---|---|"]
    for mode, contenders in summary.items():
        for name, figures in contenders.items():
            if "tokens_per_s" not in figures:
                shown = "error" if "error" in figures else "not run (budget)"
                rows.append(f"| {mode} | {name} | {shown} | | | |")
                continue
            ratio = figures["ratio_to_raw"]
            mfu = figures["mfu"]
            rows.append(f"| {mode} | {name} | {figures['tokens_per_s']:,.0f} | "
                        f"{'' if ratio is None else f'{ratio:.4f}'} | "
                        f"{'' if mfu is None else f'{mfu:.1%}'} | "
                        f"{figures['peak_memory_gib']:.2f} |")
    return "\n".join(rows)


def write_report(results: list[dict[str, Any]], contenders: list[str],
                 args: argparse.Namespace) -> dict[str, Any]:
    summary = summarise(results, contenders)
    report = {"device": next((r["device"] for r in results if "device" in r), None),
              "torch": torch.__version__, "date": time.strftime("%Y-%m-%d"),
              "config": {k: str(v) for k, v in vars(args).items()},
              "summary": summary, "verdicts": verdicts(summary), "runs": results}
    if args.out:
        args.out.write_text(json.dumps(report, indent=1))
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2, help="rounds without compile")
    parser.add_argument("--compile-rounds", type=int, default=1, help="rounds with compile")
    parser.add_argument("--size", default="gpt2-small")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--warmup", type=int, default=8)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--timeout", type=int, default=300, help="seconds per contender run")
    parser.add_argument("--budget", type=float, default=0,
                        help="seconds: start no new run after this (0: no limit)")
    parser.add_argument("--out", type=Path, help="write the results as JSON here (after every run)")
    parser.add_argument("--dry-run", action="store_true",
                        help="a tiny model, a few steps, on the CPU: checks the plan")
    args = parser.parse_args()
    if args.dry_run:
        args.size, args.batch, args.warmup, args.steps = "tiny", 2, 2, 3
        args.rounds, args.compile_rounds = 1, 1
    elif not torch.cuda.is_available():
        print("gpu_throughput: no CUDA device here; skipped (--dry-run checks the plan on CPU)")
        return 0
    contenders = CONTENDERS if lightning_installed() else CONTENDERS[:3]
    if contenders != CONTENDERS:
        print("gpu_throughput: Lightning is not installed: raw, fulmen and lite only")
    plan = [(r, False) for r in range(args.rounds)]
    plan += [(r, True) for r in range(args.compile_rounds)]
    results: list[dict[str, Any]] = []
    started = time.perf_counter()
    for round_, compiled in plan:
        order = contenders if round_ % 2 == 0 else contenders[::-1]
        for contender in order:
            if args.budget and time.perf_counter() - started > args.budget:
                print(f"gpu_throughput: --budget {args.budget:.0f} s spent; runs left out")
                break
            result = run_one(contender, compiled, args)
            result["round"] = round_
            results.append(result)
            shown = (f"{result['tokens_per_s']:,.0f} tokens/s, step {result['step_s'] * 1e3:.1f}"
                     f" ms, wall {result['wall_s']:.0f} s") if "error" not in result \
                else "ERROR " + result["error"][-400:]
            print(f"[{'compile' if compiled else 'eager'} round {round_}] {contender}: {shown}",
                  flush=True)
            report = write_report(results, contenders, args)
    print(table(report["summary"]))
    print("\n".join(report["verdicts"]))
    failed = [r for r in results if "error" in r]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
