"""A million samples streamed through ``RayVerifier.stream``, with a node lost and another added on the way.

    python bench/cluster_million.py [--samples 1000000] [--progress 50000] [--rss-every 5]
                                    [--batch-size 32] [--max-in-flight N]

The cluster: ``ray.cluster_utils.Cluster`` on this machine, a head with ``num_cpus=0`` (it judges nothing) and two
worker nodes of 1 CPU each, health checks every 0.5 s (a removed node is declared dead in about 1.5 s). A thread
watching the count of verdicts handed out removes one worker node at 1/3 of the run and adds a new 1-CPU worker
node at 2/3.

The input is a generator (never a list: the driver's memory must stay flat) cycling over a base set of 328
samples, HumanEval's canonical solutions and a wrong variant of each (body ``return None``). Each streamed sample
is made distinct by a comment line with its number appended to its code, so the cross-cluster dedupe collapses
none of them: every one is executed. The single-host reference is the local ``Verifier`` run once over the base
set.

Checked and recorded: verdicts handed out == N, every index once and in order (lost 0, duplicated 0), each
verdict's status equal to its base sample's local status, pass@1 of the stream equal to the reference's (from the
counts), ``verifier.lost`` (calls sent again), the nodes judging at the end (the added one must be among them, and
its process tree must have spent CPU), the driver's peak RSS (VmHWM; issue 53's bound: 2 GiB) and its RSS every
``--rss-every`` seconds (first and last), total time and samples/s. Progress every ``--progress`` samples. Exit 1
when a check fails. Run it on a quiet machine: at a few hundred samples/s a million takes about an hour.
"""

from __future__ import annotations

import argparse
import itertools
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

from cluster_throughput import NODE, canonical_samples, need_ray, process_table, start_cluster, tree_cpu
from common import write_record

from pytest_humaneval import Verifier

RSS_BOUND_MIB = 2048


def memory_mib() -> tuple[float, float]:
    """(VmRSS, VmHWM) of this process, MiB."""
    fields = {}
    with open("/proc/self/status") as handle:
        for line in handle:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def streamed(base: list[tuple[str, str]], count: int) -> Iterator[tuple[str, str]]:
    """``count`` samples cycling over ``base``, each made distinct by a trailing comment with its number."""
    for index, (task_id, code) in zip(range(count), itertools.cycle(base)):
        yield task_id, f"{code}# sample {index}\n"


def node_cpu_s(node: Any) -> float:
    """CPU seconds so far of a Cluster node's processes and all they started (its raylet's workers, their
    sandboxes), from /proc."""
    table = process_table()
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in table.items():
        children.setdefault(parent, []).append(pid)
    stack = [info.process.pid for infos in node.all_processes.values() for info in infos if info.process]
    total, seen = 0, set()
    while stack:
        pid = stack.pop()
        if pid in seen or pid not in table:
            continue
        seen.add(pid)
        total += table[pid][1]
        stack.extend(children.get(pid, []))
    return total / os.sysconf("SC_CLK_TCK")


class Watcher(threading.Thread):
    """Removes a worker node once ``remove_at`` verdicts are handed out, adds a new one at ``add_at``; samples the
    driver's RSS every ``every`` seconds meanwhile."""

    def __init__(self, cluster: Any, remove_at: int, add_at: int, every: float) -> None:
        super().__init__(daemon=True)
        self.cluster, self.remove_at, self.add_at, self.every = cluster, remove_at, add_at, every
        self.handed = 0  # written by the stream's loop
        self.started_at = time.perf_counter()
        self.done = threading.Event()
        self.events: list[dict[str, Any]] = []
        self.rss: list[dict[str, float]] = []
        self.added: Any = None
        self.added_cpu_at_join = 0.0
        self.error: str | None = None

    def note(self, what: str, **extra: Any) -> None:
        event = {"event": what, "handed": self.handed, "seconds": time.perf_counter() - self.started_at, **extra}
        self.events.append(event)
        print(f"  [{event['seconds']:8.1f} s, {event['handed']} handed out] {what} "
              f"{' '.join(f'{k}={v}' for k, v in extra.items())}", flush=True)

    def run(self) -> None:
        removed = False
        next_rss = 0.0
        try:
            while not self.done.wait(0.1):
                now = time.perf_counter() - self.started_at
                if now >= next_rss:
                    rss, _ = memory_mib()
                    self.rss.append({"seconds": now, "handed": self.handed, "rss_mib": rss})
                    next_rss = now + self.every
                if not removed and self.handed >= self.remove_at:
                    removed = True
                    node = sorted(self.cluster.worker_nodes, key=lambda n: n.node_id)[0]
                    self.note("removing worker node", node=node.node_id[:8])
                    self.cluster.remove_node(node)
                    self.note("removed worker node", node=node.node_id[:8])
                if self.added is None and self.handed >= self.add_at:
                    self.note("adding a worker node")
                    self.added = self.cluster.add_node(**NODE)
                    self.added_cpu_at_join = node_cpu_s(self.added)
                    self.note("added worker node", node=self.added.node_id[:8])
        except Exception as exc:  # said in the output and the record: the run's checks then fail
            self.error = f"{type(exc).__name__}: {exc}"
            self.note("watcher failed", error=self.error)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=1_000_000, help="N, samples streamed (1,000,000)")
    parser.add_argument("--progress", type=int, default=50_000, help="a progress line every this many samples")
    parser.add_argument("--rss-every", type=float, default=5.0, help="seconds between RSS samples (5)")
    parser.add_argument("--batch-size", type=int, default=None, help="RayVerifier's batch_size (default: its 32)")
    parser.add_argument("--max-in-flight", type=int, default=None, help="RayVerifier's max_in_flight (auto)")
    args = parser.parse_args()
    if args.samples < 3:
        parser.error("--samples: expected at least 3 (a third of the run, then another)")
    if args.progress < 1 or args.rss_every <= 0:
        parser.error("--progress: expected an integer >= 1; --rss-every: expected seconds > 0")
    ray = need_ray("cluster_million.py")
    from pytest_humaneval.cluster import RayVerifier

    base = canonical_samples()
    with Verifier("humaneval", workers=2) as alone:
        reference = [verdict.status for verdict in alone.verify(base)]
    print(f"reference: the local Verifier on the {len(base)} base samples: "
          f"{sum(status.value == 'passed' for status in reference)} passed", flush=True)
    print(f"streaming {args.samples} samples, each the base sample index % {len(base)} with '# sample INDEX' "
          "appended to its code: all distinct, so the cross-cluster dedupe collapses none (every one is executed)",
          flush=True)

    # A node is added from the watcher's thread, and Ray's exit hooks (signal handlers) are for the main thread
    # only: none are set, and this script shuts the cluster down itself, on SIGTERM and SIGHUP too.
    for number in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, lambda number, _: sys.exit(128 + number))
    cluster = start_cluster(ray, fast_health=True, exit_hooks=False)
    watcher = Watcher(cluster, args.samples // 3, 2 * args.samples // 3, args.rss_every)
    keywords = {key: value for key, value in (("batch_size", args.batch_size), ("max_in_flight", args.max_in_flight))
                if value is not None}
    handed = out_of_order = disagree = harness_errors = 0
    seen = bytearray(args.samples)  # how many times each index came back (capped): 1 byte a sample, allocated once
    first_disagreements: list[dict[str, Any]] = []
    passed_by_base = [0] * len(base)
    count_by_base = [0] * len(base)
    progress: list[dict[str, float]] = []
    error = None
    try:
        with RayVerifier("humaneval", **keywords) as verifier:
            nodes_at_start = verifier.nodes
            print(f"cluster: nodes judging {nodes_at_start}, isolation {verifier.isolation}", flush=True)
            cpu_before = tree_cpu()
            started = watcher.started_at = time.perf_counter()
            watcher.start()
            last = (started, 0)
            try:
                for verdict in verifier.stream(streamed(base, args.samples)):
                    index = verdict.index
                    if index != handed:
                        out_of_order += 1
                    if 0 <= index < args.samples and seen[index] < 255:
                        seen[index] += 1
                    which = index % len(base)
                    count_by_base[which] += 1
                    passed_by_base[which] += verdict.passed
                    harness_errors += verdict.status.value == "harness_error"
                    if verdict.status is not reference[which]:
                        disagree += 1
                        if len(first_disagreements) < 20:
                            first_disagreements.append({"index": index, "task_id": verdict.task_id,
                                                        "local": reference[which].value, "ray": verdict.status.value,
                                                        "detail": verdict.detail[:300]})
                            print(f"  disagreement: #{index} {verdict.task_id}: local {reference[which].value}, "
                                  f"ray {verdict.status.value}: {verdict.detail[:200]}", flush=True)
                    handed += 1
                    watcher.handed = handed
                    if handed % args.progress == 0:
                        now = time.perf_counter()
                        rss, peak = memory_mib()
                        progress.append({"handed": handed, "seconds": now - started, "rss_mib": rss, "peak_mib": peak,
                                         "rate": (handed - last[1]) / (now - last[0])})
                        print(f"{handed:9} samples  {now - started:8.1f} s  {handed / (now - started):7.1f}/s overall "
                              f"{progress[-1]['rate']:7.1f}/s recent  RSS {rss:7.1f} MiB  peak {peak:7.1f} MiB  "
                              f"nodes {len(verifier.nodes)}  lost {verifier.lost}", flush=True)
                        last = (now, handed)
            except Exception as exc:  # a VerifierError (no node left), say: recorded, the checks below fail
                error = f"{type(exc).__name__}: {exc}"
                print(f"the stream raised after {handed} verdicts: {error}", flush=True)
            seconds = time.perf_counter() - started
            cpu_after = tree_cpu()
            watcher.done.set()
            watcher.join(60)
            lost_calls = verifier.lost
            nodes_at_end = verifier.nodes
        alive = sorted(node["NodeID"][:8] for node in ray.nodes() if node.get("Alive"))
        added = watcher.added
        added_id = added.node_id[:8] if added is not None else None
        added_cpu = node_cpu_s(added) - watcher.added_cpu_at_join if added is not None else None
        removed_ids = [event["node"] for event in watcher.events if event["event"] == "removed worker node"]
    finally:
        ray.shutdown()
        cluster.shutdown()

    # this process and Ray's (a removed node's CPU counts where its processes were reaped, in this process)
    cpu = {kind: cpu_after[kind] - cpu_before[kind] for kind in cpu_after}
    never = seen.count(0)
    duplicated = handed - (args.samples - never)
    tasks: dict[str, list[int]] = {}
    expected: dict[str, list[int]] = {}
    for which, (task_id, _) in enumerate(base):
        times = args.samples // len(base) + (which < args.samples % len(base))
        tasks.setdefault(task_id, [0, 0])
        tasks[task_id][0] += passed_by_base[which]
        tasks[task_id][1] += count_by_base[which]
        expected.setdefault(task_id, [0, 0])
        expected[task_id][0] += times * (reference[which].value == "passed")
        expected[task_id][1] += times
    pass_at_1 = sum((Fraction(c, n) for c, n in tasks.values() if n), Fraction(0)) / max(1, sum(
        1 for _, n in tasks.values() if n))
    pass_at_1_reference = sum(Fraction(c, n) for c, n in expected.values() if n) / sum(
        1 for _, n in expected.values() if n)
    rss_points = watcher.rss
    _, peak = memory_mib()  # VmHWM lags VmRSS a little (the kernel updates it lazily): the larger of the two
    peak = max([peak, *(point["rss_mib"] for point in rss_points), *(point["rss_mib"] for point in progress)])
    added_judging = added_id is not None and any(key.endswith(added_id) for key in nodes_at_end)
    checks = {"handed_out_equals_n": handed == args.samples, "in_order": out_of_order == 0, "lost_0": never == 0,
              "duplicated_0": duplicated == 0, "statuses_agree": disagree == 0,
              "pass_at_1_equal": pass_at_1 == pass_at_1_reference, "peak_rss_under_2_gib": peak <= RSS_BOUND_MIB,
              "added_node_judging": added_judging, "stream_finished": error is None and watcher.error is None}
    figures = {"samples": args.samples, "handed_out": handed, "out_of_order": out_of_order, "never_handed_out": never,
               "duplicated": duplicated, "status_disagreements": disagree, "harness_errors": harness_errors,
               "pass_at_1": float(pass_at_1), "pass_at_1_reference": float(pass_at_1_reference),
               "verifier_lost_calls": lost_calls, "nodes_at_start": nodes_at_start, "nodes_at_end": nodes_at_end,
               "alive_at_end": alive, "removed_node": removed_ids, "added_node": added_id,
               "added_node_cpu_s": added_cpu, "peak_rss_mib": peak, "rss_first_mib": rss_points[0]["rss_mib"]
               if rss_points else None, "rss_last_mib": rss_points[-1]["rss_mib"] if rss_points else None,
               "seconds": seconds, "samples_per_s": handed / seconds, "cpu_s_by_kind": cpu,
               "cpu_ms_per_sample": 1000 * sum(cpu.values()) / max(1, handed), "error": error or watcher.error,
               "distinct": "each sample's code has '# sample INDEX' appended: no two alike, dedupe collapses none",
               "checks": checks}
    print()
    print(f"handed out {handed} of {args.samples}; out of order {out_of_order}; never handed out {never}; "
          f"duplicated {duplicated}")
    print(f"statuses differing from the local reference: {disagree} (harness_errors {harness_errors})")
    print(f"pass@1 {float(pass_at_1):.6f}, reference {float(pass_at_1_reference):.6f}: "
          f"{'equal' if checks['pass_at_1_equal'] else 'DIFFERENT'}")
    print(f"calls lost and sent again (verifier.lost): {lost_calls}")
    print(f"nodes at start {nodes_at_start}; removed {removed_ids}; added {added_id}; judging at the end "
          f"{nodes_at_end}; alive {alive}")
    if added_id is None:
        print("THE NODE WAS NOT ADDED (the run ended before 2/3, or the watcher failed)")
    elif added_judging:
        print(f"the added node {added_id} judged: its process tree used {added_cpu:.1f} CPU s since it joined")
    else:
        print(f"THE ADDED NODE {added_id} IS NOT JUDGING: RayVerifier did not pick it up (not in verifier.nodes; its "
              f"process tree used {added_cpu:.1f} CPU s since it joined)")
    print(f"driver RSS: first {figures['rss_first_mib']} MiB, last {figures['rss_last_mib']} MiB, peak (VmHWM) "
          f"{peak:.1f} MiB (bound {RSS_BOUND_MIB} MiB)")
    print(f"{seconds:.1f} s, {handed / seconds:.1f} samples/s, {figures['cpu_ms_per_sample']:.1f} ms CPU each "
          f"(driver and Ray's processes: {', '.join(f'{k} {v:.1f} s' for k, v in cpu.items())})")
    failed = [name for name, ok in checks.items() if not ok]
    print("checks: " + ("all passed" if not failed else "FAILED: " + ", ".join(failed)))
    write_record("cluster_million", figures, {"events": watcher.events, "rss": rss_points, "progress": progress,
                                              "first_disagreements": first_disagreements})
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
