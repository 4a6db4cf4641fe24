"""``RayVerifier`` against the local ``Verifier`` on the same CPUs: samples/s side by side, as paired ratios.

    python bench/cluster_throughput.py [--samples canonical|real] [--pairs 5] [--repeat 5] [--limit 3000]
                                       [--batch-size 32[,8,...]] [--max-in-flight N[,M,...]]

One process, this machine's 2 CPUs two ways:

- local: ``Verifier("humaneval", workers=2, dedupe=False)``: two sandboxes;
- ray: ``RayVerifier("humaneval", dedupe=False)`` on a local cluster made with ``ray.cluster_utils.Cluster``: a
  head with ``num_cpus=0`` (it judges nothing) and two worker nodes of 1 CPU each, one sandbox each, the driver
  being this process. One ray side per ``--batch-size`` x ``--max-in-flight`` value (comma-separated lists; the
  default is RayVerifier's own, 32 and ``auto``), to pick the values that reach issue 53's goal (ray/local >= 0.9).

Samples (``dedupe=False``: every one executed on both sides): ``canonical``, HumanEval's 164 canonical solutions
and a wrong variant of each (body ``return None``), ``--repeat`` times (5: 1,640 samples); ``real``, a fixed
subset of ``--limit`` rows (3,000; seed 53, sorted) of the 14,104 completions real models wrote (the nine samples
files of ``../shared/data/real-samples``, as compare_reference.py reads them; a timeout holds a sandbox 3 s
without CPU, equally on both sides).

A pair runs the local side, then every ray side; each side is made fresh, given a warm-up call (its sandboxes
started and used), then timed on one ``verify`` of the samples. Figures: wall samples/s of that call, the ratio
ray/local of each pair (equal CPUs: the per-core ratio; quote the median), and CPU per sample of the side's
process tree over the call (``/proc/PID/stat``, utime + stime + reaped children: this process with, for the local
side, its sandboxes, for a ray side every Ray process it started: GCS, raylets, the actors and their sandboxes).
Each sample's status must be the same on both sides: the samples that differ are printed and recorded (a timeout
may flap under load; any other difference is a fault). Run it on a quiet machine; exit 1 on a difference other
than a timeout's.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import random
import socket
import statistics
import sys
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

from common import REAL_SAMPLES, write_record
from compare_reference import REAL_FILES

from pytest_humaneval import Verifier
from pytest_humaneval.data.dataset import load_problems

NODE = {"num_cpus": 1, "object_store_memory": 100 * 2**20}  # a worker node: one CPU, so one sandbox
WARM = 64  # samples of the warm-up call, at least two batches: one for each node
RAY_MISSING = 'expected the ray package, found none: pip install "pytest-humaneval[ray]" (the cluster extra)'
TICK = os.sysconf("SC_CLK_TCK")


def need_ray(script: str) -> Any:
    try:
        import ray
    except ImportError as exc:
        sys.exit(f"{script}: {RAY_MISSING}; import ray: {exc}")
    return ray


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_cluster(ray: Any, fast_health: bool = False, exit_hooks: bool = True) -> Any:
    """A head that judges nothing and two 1-CPU worker nodes, all processes of this machine; this process
    connected as the driver. ``fast_health``: a removed node declared dead in about 1.5 s, not tens of seconds.
    ``exit_hooks=False``: Ray sets no signal handler of its own (so a node can be added from a thread; Ray's
    handlers are for the main thread only): the caller shuts the cluster down itself."""
    from ray.cluster_utils import Cluster

    head: dict[str, Any] = {"num_cpus": 0, "include_dashboard": False, "gcs_server_port": free_port(),
                            "object_store_memory": 100 * 2**20}
    if fast_health:
        head["_system_config"] = {"health_check_period_ms": 500, "health_check_failure_threshold": 3}
    cluster = Cluster(initialize_head=True, head_node_args=head, shutdown_at_exit=exit_hooks)
    for _ in range(2):
        cluster.add_node(**NODE)
    ray.init(address=cluster.address, logging_level="WARNING", log_to_driver=False)
    return cluster


def canonical_samples() -> list[tuple[str, str]]:
    """Each problem's canonical solution, then a wrong variant of it (body ``return None``)."""
    found = []
    for problem in load_problems()[1]:
        found += [(problem.task_id, problem.canonical_solution), (problem.task_id, "    return None\n")]
    return found


def real_samples(limit: int) -> list[tuple[str, str]]:
    """A fixed subset of the real completions: ``limit`` rows chosen with seed 53, in file order."""
    if not REAL_SAMPLES.is_dir():
        sys.exit(f"cluster_throughput.py: --samples real: expected the real completions at {REAL_SAMPLES}, found "
                 "no such folder; use --samples canonical")
    rows = []
    for name in REAL_FILES:
        for line in (REAL_SAMPLES / f"{name}.jsonl").read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                rows.append((row["task_id"], row["completion"]))
    chosen = sorted(random.Random(53).sample(range(len(rows)), min(limit, len(rows))))
    return [rows[index] for index in chosen]


# -- CPU of process trees, from /proc (psutil is not a dependency)
def process_table() -> dict[int, tuple[int, int]]:
    """pid -> (parent pid, CPU ticks: utime + stime + cutime + cstime, so reaped children count too)."""
    table = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as handle:
                text = handle.read().decode("ascii", "replace")
        except OSError:  # gone meanwhile
            continue
        fields = text[text.rindex(")") + 2:].split()  # after "pid (comm) ": state, ppid, ...
        table[int(entry.name)] = (int(fields[1]), sum(int(value) for value in fields[11:15]))
    return table


def is_ray(pid: int) -> bool:
    """Whether a child of this process is one of Ray's (GCS, raylet, their helpers), not a local sandbox."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            command = handle.read().replace(b"\0", b" ")
    except OSError:
        return False
    return b"/ray/" in command or b"raylet" in command or b"gcs_server" in command


def tree_cpu(roots: dict[int, str] | None = None) -> dict[str, float]:
    """CPU seconds so far of this process ("driver") and of the trees under its children, summed by kind ("ray":
    Ray's processes and all they started; "local": the rest, the local Verifier's sandboxes). ``roots``: the
    kind of each child seen before (a cmdline is read once per child)."""
    table = process_table()
    me = os.getpid()
    roots = {} if roots is None else roots
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in table.items():
        children.setdefault(parent, []).append(pid)
    found = {"driver": table.get(me, (0, 0))[1] / TICK, "ray": 0.0, "local": 0.0}
    for child in children.get(me, []):
        kind = roots.setdefault(child, "ray" if is_ray(child) else "local")
        stack = [child]
        while stack:
            pid = stack.pop()
            found[kind] += table[pid][1] / TICK
            stack.extend(children.get(pid, []))
    return found


# -- the sides
def statuses(verdicts: list[Any]) -> list[str]:
    return [verdict.status.value for verdict in verdicts]


def timed_side(name: str, make: Any, samples: list[tuple[str, str]], roots: dict[int, str],
               warm: int = WARM) -> dict[str, Any]:
    """A side made fresh, warmed up, then one timed ``verify`` of ``samples``: its seconds, CPU and statuses."""
    with make() as verifier:
        verifier.verify(samples[:warm])
        before = tree_cpu(roots)
        started = time.perf_counter()
        verdicts = verifier.verify(samples)
        seconds = time.perf_counter() - started
        after = tree_cpu(roots)
        extra = {"nodes": verifier.nodes, "lost": verifier.lost} if hasattr(verifier, "nodes") else {}
        isolation = verifier.isolation
    cpu = {kind: after[kind] - before[kind] for kind in after}
    own = cpu["driver"] + (cpu["local"] if name == "local" else cpu["ray"])
    return {"side": name, "seconds": seconds, "samples_per_s": len(samples) / seconds, "cpu_s": own,
            "cpu_ms_per_sample": 1000 * own / len(samples), "cpu_split_s": cpu, "isolation": isolation,
            "statuses": statuses(verdicts), "status_counts": dict(Counter(statuses(verdicts))), **extra}


def differing(samples: list[tuple[str, str]], local: list[str], ray: list[str]) -> list[dict[str, Any]]:
    return [{"index": index, "task_id": samples[index][0], "local": a, "ray": b, "timeout": "timeout" in (a, b)}
            for index, (a, b) in enumerate(zip(local, ray, strict=True)) if a != b]


def numbers(text: str, what: str) -> list[int | None]:
    """A comma-separated list of integers >= 1 (``auto``: RayVerifier's default)."""
    found: list[int | None] = []
    for part in text.split(","):
        if part.strip() == "auto":
            found.append(None)
        elif part.strip().isdigit() and int(part) >= 1:
            found.append(int(part))
        else:
            raise argparse.ArgumentTypeError(f"{what}: expected integers >= 1 (or auto), comma-separated; "
                                             f"found {text!r}")
    return found


def configs(batch_sizes: list[int | None], in_flight: list[int | None]) -> Iterator[dict[str, int | None]]:
    for batch_size in batch_sizes:
        for max_in_flight in in_flight:
            yield {"batch_size": batch_size, "max_in_flight": max_in_flight}


def label(config: dict[str, int | None]) -> str:
    return f"ray bs={config['batch_size'] or 32} mif={config['max_in_flight'] or 'auto'}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", choices=("canonical", "real"), default="canonical")
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=5, help="canonical: copies of the 328 samples (5)")
    parser.add_argument("--limit", type=int, default=3000, help="real: rows of the fixed subset (3000)")
    parser.add_argument("--batch-size", type=lambda text: numbers(text, "--batch-size"), default=[None],
                        help="RayVerifier's batch_size; a comma-separated list tries each (default: its 32)")
    parser.add_argument("--max-in-flight", type=lambda text: numbers(text, "--max-in-flight"), default=[None],
                        help="RayVerifier's max_in_flight; a comma-separated list tries each (default: auto)")
    args = parser.parse_args()
    for name in ("pairs", "repeat", "limit"):
        if getattr(args, name) < 1:
            parser.error(f"--{name}: expected an integer >= 1, found {getattr(args, name)}")
    ray = need_ray("cluster_throughput.py")
    from pytest_humaneval.cluster import RayVerifier

    samples = canonical_samples() * args.repeat if args.samples == "canonical" else real_samples(args.limit)
    sides = list(configs(args.batch_size, args.max_in_flight))
    print(f"{len(samples)} {args.samples} samples, dedupe off (every one executed); {args.pairs} pairs of local, "
          f"then {', '.join(label(config) for config in sides)}", flush=True)
    cluster = start_cluster(ray)
    roots: dict[int, str] = {}
    pairs: list[dict[str, Any]] = []
    differ: list[dict[str, Any]] = []
    try:
        for pair in range(args.pairs):
            local = functools.partial(Verifier, "humaneval", workers=2, dedupe=False)
            row: dict[str, Any] = {"local": timed_side("local", local, samples, roots)}
            print(f"pair {pair + 1}: local {row['local']['samples_per_s']:7.1f} samples/s "
                  f"({row['local']['cpu_ms_per_sample']:.1f} ms CPU each, {row['local']['isolation']}; statuses "
                  f"{row['local']['status_counts']})", flush=True)
            for config in sides:
                keywords = {key: value for key, value in config.items() if value is not None}
                made = functools.partial(RayVerifier, "humaneval", dedupe=False, **keywords)
                side = timed_side(label(config), made, samples, roots, max(WARM, 2 * (config["batch_size"] or 32)))
                side["ratio"] = side["samples_per_s"] / row["local"]["samples_per_s"]
                side["differ"] = differing(samples, row["local"]["statuses"], side["statuses"])
                differ += [{"pair": pair + 1, "side": side["side"], **item} for item in side["differ"]]
                row[side["side"]] = side
                print(f"pair {pair + 1}: {side['side']} {side['samples_per_s']:7.1f} samples/s "
                      f"({side['cpu_ms_per_sample']:.1f} ms CPU each), ratio {side['ratio']:.2f}, statuses differ "
                      f"{len(side['differ'])}, lost {side['lost']}, nodes {len(side['nodes'])}", flush=True)
            pairs.append(row)
    finally:
        ray.shutdown()
        cluster.shutdown()

    names = ["local", *(label(config) for config in sides)]
    figures: dict[str, Any] = {"samples": len(samples), "kind": args.samples, "pairs": args.pairs, "sides": {}}
    print(f"\n{'side':24} {'samples/s':>10} {'CPU ms/sample':>14} {'ray/local':>10} {'differ':>7}")
    for name in names:
        runs = [row[name] for row in pairs]
        summary = {"samples_per_s_median": statistics.median(run["samples_per_s"] for run in runs),
                   "cpu_ms_per_sample_median": statistics.median(run["cpu_ms_per_sample"] for run in runs),
                   "isolation": runs[0]["isolation"]}
        if name != "local":
            summary["ratio_median"] = statistics.median(run["ratio"] for run in runs)
            summary["differ_timeouts"] = sum(item["timeout"] for run in runs for item in run["differ"])
            summary["differ_other"] = sum(not item["timeout"] for run in runs for item in run["differ"])
            summary["lost"] = sum(run["lost"] for run in runs)
        figures["sides"][name] = summary
        ratio = f"{summary['ratio_median']:10.2f}" if "ratio_median" in summary else f"{'':10}"
        count = f"{summary['differ_timeouts'] + summary['differ_other']:7}" if name != "local" else ""
        print(f"{name:24} {summary['samples_per_s_median']:10.1f} {summary['cpu_ms_per_sample_median']:14.1f} "
              f"{ratio} {count}")
    for item in differ[:30]:
        print(f"  differ: pair {item['pair']} {item['side']}: #{item['index']} {item['task_id']}: local "
              f"{item['local']}, ray {item['ray']}")
    if len(differ) > 30:
        print(f"  ... and {len(differ) - 30} more (all in the record)")
    other = sum(not item["timeout"] for item in differ)
    figures["differ_other"] = other
    figures["goal_ratio"] = 0.9
    raw = {"pairs": [{name: {key: value for key, value in side.items() if key not in ("statuses", "differ")}
                      for name, side in row.items()} for row in pairs], "differ": differ}
    write_record(f"cluster_throughput_{args.samples}", figures, raw)
    if other:
        print(f"FAIL: {other} statuses differ other than by a timeout")
    return 1 if other else 0


if __name__ == "__main__":
    sys.exit(main())
