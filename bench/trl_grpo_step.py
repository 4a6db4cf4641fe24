"""One real TRL GRPO training step on a tiny local model, with ``trl_reward`` among its reward functions, run as
TRL runs it: what TRL passes our reward function, what it returns, and whether the step finishes.

    python bench/trl_grpo_step.py [--venv DIR] [--prompts 4] [--threads 1] [--out FILE]

Not a timing (the wall time of the step is recorded, nothing is compared). Nothing comes from a model hub:

1. The script makes a venv of its own outside the repository (``--venv``, default
   ``$TMPDIR/pytest-humaneval-bench/trl-venv``, reused when it already imports everything) with
   ``torch==2.13.0`` (the CPU build on this machine's disk), ``trl``, ``transformers``, ``datasets`` and
   ``accelerate`` from PyPI, and this checkout (``pip install -e``), then runs itself again in it, with this
   checkout first on ``PYTHONPATH`` and ``HF_HUB_OFFLINE=1``. The project's own venv never gets torch.
2. In there it trains a byte-level BPE tokenizer (vocab 1,024) on the lines of the bundled HumanEval prompts,
   wraps it in ``PreTrainedTokenizerFast`` with a plain chat template, builds a randomly initialised
   ``LlamaForCausalLM`` (hidden 64, 2 layers, 2 heads) and saves both to a temporary folder; ``GRPOTrainer`` gets
   that folder's path as ``model`` (TRL loads it) and the tokenizer loaded back from it as ``processing_class``.
3. Two runs, one per dataset shape: ``plain`` (``prompt`` is the HumanEval prompt, completions are text) and
   ``conversational`` (``prompt`` is ``[{"role": "user", "content": ...}]``, completions are lists of messages);
   both with a ``task_id`` column, ``--prompts`` problems (HumanEval/0 on), and ``GRPOConfig(max_steps=1,
   per_device_train_batch_size=2 * prompts, num_generations=2, max_completion_length=32, report_to=[],
   use_cpu=True, bf16=False, save_strategy="no")``. Its reward functions, in TRL's order of calls:

   - ``record_trl_call`` (weight 0): records the keywords TRL passed and the shape of each, then calls a
     ``trl_reward("humaneval")`` with exactly those keywords and records what it returned (or raised; then it
     returns Nones, so that the next entry's own failure is what TRL reports);
   - ``trl_reward("humaneval")`` itself (weight 1), as a user would list it;
   - ``humaneval_canonical_first`` (weight 1): ``trl_reward("humaneval")`` on the same call with the first
     completion replaced by that task's canonical solution (the body as text for ``plain``, the whole function in
     a fenced block as the assistant's message for ``conversational``), to show a 1.0 going through TRL.

   The rewards TRL itself kept per function (its completions log) and the advantages are recorded beside the
   functions' own returns.

Printed: a short summary per run. Written: the record as JSON to ``--out`` (default
``$TMPDIR/pytest-humaneval-bench/trl_grpo_step.json``) and, as every bench script does,
``bench/out/records/trl_grpo_step-STAMP.json``: TRL, transformers, torch (and tokenizers, datasets,
accelerate) versions, and per run the keywords, completion shapes, rewards, whether the step finished (else the
error), its wall time (the first run's includes the Verifier's start, which the time of the recorder's own
call shows) and its logged metrics. Exit 1 if a run did not finish or no 1.0 reached TRL.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

from common import ROOT, write_record

SCRATCH = Path(os.environ.get("TMPDIR") or tempfile.gettempdir()) / "pytest-humaneval-bench"
TORCH = "torch==2.13.0"  # the CPU build on this machine's disk: another version would download gigabytes
PACKAGES = [TORCH, "trl", "transformers", "datasets", "accelerate"]
IMPORTS = ("import torch, trl, transformers, datasets, accelerate, tokenizers, pytest_humaneval; "
           "print(torch.__version__)")
INSIDE = "PYTEST_HUMANEVAL_TRL_BENCH_INSIDE"

VOCAB = 1024
HIDDEN = 64
LAYERS = 2
HEADS = 2
CONTEXT = 2048
SPECIAL = ["<|endoftext|>", "<|bos|>", "<|pad|>"]
CHAT_TEMPLATE = ("{% for message in messages %}{{ message['role'] }}: {{ message['content'] }}\n{% endfor %}"
                 "{% if add_generation_prompt %}assistant: {% endif %}")
NUM_GENERATIONS = 2
MAX_COMPLETION = 32


# -- outside: the venv, then this script again in it
def ensure_venv(venv: Path) -> Path:
    """The venv's interpreter, the venv made (or completed) first unless it already imports everything with torch
    2.13.0."""
    python = venv / "bin" / "python"
    if python.exists():
        found = subprocess.run([str(python), "-c", IMPORTS], capture_output=True, text=True, check=False)
        if found.returncode == 0 and found.stdout.strip().startswith("2.13.0"):
            print(f"venv: {venv} (reused, torch {found.stdout.strip()})")
            return python
    print(f"venv: making {venv}: pip install {' '.join(PACKAGES)}; pip install -e {ROOT}", flush=True)
    venv.parent.mkdir(parents=True, exist_ok=True)
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", *PACKAGES], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", "-e", str(ROOT)], check=True)
    return python


def in_venv(venv: Path) -> bool:
    return os.environ.get(INSIDE) == "1" and Path(sys.prefix).resolve() == venv.resolve()


# -- inside
def build_model(folder: Path, prompts: list[str], seed: int) -> dict[str, Any]:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    lines = [line for prompt in prompts for line in prompt.splitlines() if line.strip()]
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(lines, trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=SPECIAL, show_progress=False,
                                                       initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|endoftext|>", bos_token="<|bos|>",
                                        pad_token="<|pad|>", model_max_length=CONTEXT, padding_side="left")
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.save_pretrained(folder)
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=HIDDEN, intermediate_size=4 * HIDDEN,
                         num_hidden_layers=LAYERS, num_attention_heads=HEADS, num_key_value_heads=HEADS,
                         max_position_embeddings=CONTEXT, bos_token_id=tokenizer.bos_token_id,
                         eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    model = LlamaForCausalLM(config)
    model.save_pretrained(folder)
    return {"dir": str(folder), "architecture": type(model).__name__, "vocab": len(tokenizer), "hidden": HIDDEN,
            "layers": LAYERS, "heads": HEADS, "parameters": sum(p.numel() for p in model.parameters()),
            "tokenizer_trained_on": f"{len(lines)} non-blank lines of {len(prompts)} HumanEval prompts"}


def shape(value: Any, depth: int = 0) -> str:
    """A short description of a value's type and structure: ``list[8] of str``, ``list[8] of list[1] of
    dict(role, content)``."""
    if isinstance(value, (list, tuple)):
        inner = shape(value[0], depth + 1) if value and depth < 3 else "?"
        return f"{type(value).__name__}[{len(value)}] of {inner}" if value else f"{type(value).__name__}[0]"
    if isinstance(value, dict):
        return f"dict({', '.join(map(str, value))})"
    if callable(value):
        return f"callable {getattr(value, '__qualname__', type(value).__name__)}"
    return type(value).__name__


def clip(text: Any, size: int = 160) -> str:
    text = repr(text)
    return text if len(text) <= size else text[:size] + "..."


def canonical_first(completions: list[Any], task_ids: list[str], problems: dict[str, Any]) -> list[Any]:
    """The completions with the first replaced by its task's canonical solution, in the completions' own shape."""
    problem = problems[task_ids[0]]
    first = completions[0]
    if isinstance(first, list):  # a conversation: the assistant's message, as a chat model would write it
        first = [{"role": "assistant",
                  "content": f"```python\n{problem.prompt}{problem.canonical_solution}```"}]
    else:  # text continuing the prompt: the body
        first = problem.canonical_solution
    return [first, *completions[1:]]


def run_variant(name: str, model_dir: Path, out_dir: Path, problems: list[Any], by_id: dict[str, Any],
                seed: int) -> dict[str, Any]:
    import dataclasses

    from datasets import Dataset
    from transformers import AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from pytest_humaneval.rewards import trl_reward

    if name == "plain":
        rows = [{"prompt": p.prompt, "task_id": p.task_id} for p in problems]
    else:
        rows = [{"prompt": [{"role": "user", "content": f"Complete this Python function.\n```python\n{p.prompt}```"}],
                 "task_id": p.task_id} for p in problems]
    dataset = Dataset.from_list(rows)
    calls: list[dict[str, Any]] = []
    ours = trl_reward("humaneval")  # the entry under test, as a user lists it
    probe = trl_reward("humaneval")  # the same function, called by the recorder with what TRL passed it
    canonical = trl_reward("humaneval")

    def record_trl_call(**kwargs: Any) -> list[float | None]:
        completions = kwargs.get("completions") or []
        call: dict[str, Any] = {
            "keywords": sorted(kwargs),
            "shapes": {key: shape(value) for key, value in sorted(kwargs.items())},
            "first_completion": clip(completions[0] if completions else None),
            "task_ids": list(kwargs.get("task_id") or []),
            "global_step": getattr(kwargs.get("trainer_state"), "global_step", None)}
        started = time.perf_counter()
        try:
            call["rewards"] = probe(**kwargs)
        except Exception as exc:  # the entry after this one raises it to TRL: recorded here, not hidden
            call["error"] = f"{type(exc).__name__}: {exc}"
            call["rewards"] = None
        call["seconds"] = round(time.perf_counter() - started, 3)  # the process's first call starts the sandboxes
        calls.append(call)
        return call["rewards"] or [None] * len(completions)

    substituted: list[dict[str, Any]] = []

    def humaneval_canonical_first(completions: list[Any], **kwargs: Any) -> list[float | None]:
        swapped = canonical_first(list(completions), list(kwargs["task_id"]), by_id)
        rewards = canonical(completions=swapped, **kwargs)
        substituted.append({"task_id": kwargs["task_id"][0], "completion": clip(swapped[0], 240),
                            "rewards": rewards})
        return rewards

    wanted = {"output_dir": str(out_dir), "max_steps": 1, "per_device_train_batch_size": NUM_GENERATIONS * len(rows),
              "num_generations": NUM_GENERATIONS, "max_completion_length": MAX_COMPLETION, "report_to": [],
              "use_cpu": True, "bf16": False, "save_strategy": "no", "logging_steps": 1, "seed": seed,
              "reward_weights": [0.0, 1.0, 1.0], "disable_tqdm": True, "dataloader_num_workers": 0}
    fields = {f.name for f in dataclasses.fields(GRPOConfig)}
    config = GRPOConfig(**{k: v for k, v in wanted.items() if k in fields})
    result: dict[str, Any] = {"variant": name, "config": {k: v for k, v in wanted.items() if k in fields},
                              "config_names_missing": sorted(set(wanted) - fields), "finished": False}
    trainer = None
    started = time.perf_counter()
    try:
        trainer = GRPOTrainer(model=str(model_dir), processing_class=AutoTokenizer.from_pretrained(model_dir),
                              reward_funcs=[record_trl_call, ours, humaneval_canonical_first], args=config,
                              train_dataset=dataset)
        result["reward_func_names"] = list(trainer.reward_func_names)
        ready = time.perf_counter()
        output = trainer.train()
        done = time.perf_counter()
        result.update(finished=trainer.state.global_step == 1, global_step=trainer.state.global_step,
                      construct_s=round(ready - started, 3), train_s=round(done - ready, 3),
                      training_loss=output.training_loss)
    except Exception as exc:
        result["error"] = f"{type(exc).__name__}: {exc}"
        result["traceback"] = traceback.format_exc()[-4000:]
    result["wall_s"] = round(time.perf_counter() - started, 3)
    result["calls"] = calls
    result["canonical_first"] = substituted
    if trainer is not None:
        logs = getattr(trainer, "_logs", {})
        result["trl_kept_rewards"] = {key: list(values) for key, values in logs.get("rewards", {}).items()}
        result["trl_advantages"] = [round(a, 4) for a in logs.get("advantages", [])]
        result["trl_completions"] = [clip(c) for c in list(logs.get("completion", []))[:2]]
        result["log_history"] = trainer.state.log_history
    return result


def inside(args: argparse.Namespace) -> int:
    import importlib.metadata as metadata

    import torch

    import pytest_humaneval
    from pytest_humaneval.data.dataset import load_problems

    torch.set_num_threads(args.threads)
    _, problems = load_problems()
    by_id = {p.task_id: p for p in problems}
    versions = {name: metadata.version(name) for name in
                ("trl", "transformers", "torch", "tokenizers", "datasets", "accelerate", "pytest-humaneval")}
    record: dict[str, Any] = {"versions": versions, "python": sys.version.split()[0],
                              "pytest_humaneval_from": str(Path(pytest_humaneval.__file__).parent),
                              "hf_hub_offline": os.environ.get("HF_HUB_OFFLINE"), "torch_threads": args.threads}
    with tempfile.TemporaryDirectory(prefix="trl-grpo-step-") as temp:
        model_dir = Path(temp) / "tiny-llama"
        record["model"] = build_model(model_dir, [p.prompt for p in problems], args.seed)
        chosen = problems[:args.prompts]
        record["runs"] = [run_variant(name, model_dir, Path(temp) / f"out-{name}", chosen, by_id, args.seed)
                          for name in ("plain", "conversational")]
    ok = summarize(record)
    record["ok"] = ok
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=1, default=str) + "\n", encoding="utf-8")
    print(f"out: {args.out}")
    figures = {"versions": versions, "ok": ok,
               **{f"{run['variant']}_{key}": run.get(key) for run in record["runs"]
                  for key in ("finished", "wall_s", "train_s", "error")}}
    write_record("trl_grpo_step", figures, record)
    return 0 if ok else 1


def summarize(record: dict[str, Any]) -> bool:
    versions = record["versions"]
    print(f"trl {versions['trl']}, transformers {versions['transformers']}, torch {versions['torch']}, "
          f"tokenizers {versions['tokenizers']}, datasets {versions['datasets']}, accelerate {versions['accelerate']}")
    model = record["model"]
    print(f"model: {model['architecture']}, {model['parameters']:,} parameters, vocab {model['vocab']} "
          f"({model['tokenizer_trained_on']})")
    ok = True
    for run in record["runs"]:
        print(f"\n[{run['variant']}] finished: {run['finished']}, wall {run['wall_s']} s"
              + (f" (trainer {run.get('construct_s')} s, train() {run.get('train_s')} s)" if run["finished"] else ""))
        if run["config_names_missing"]:
            print(f"  GRPOConfig has no {', '.join(run['config_names_missing'])} (left out)")
        if "error" in run:
            print(f"  error: {run['error']}")
        for call in run["calls"]:
            print(f"  keywords TRL passed: {', '.join(call['keywords'])}")
            print(f"  completions: {call['shapes'].get('completions')}; first: {call['first_completion']}")
            print(f"  trl_reward returned: {call['rewards']} in {call['seconds']} s"
                  + (f"  ERROR {call['error']}" if "error" in call else ""))
        for entry in run["canonical_first"]:
            print(f"  canonical for the first completion ({entry['task_id']}): {entry['rewards']}")
        for name, values in run.get("trl_kept_rewards", {}).items():
            print(f"  TRL kept for {name}: {values}")
        if run.get("trl_advantages"):
            print(f"  advantages: {run['trl_advantages']}")
        one = any(entry["rewards"] and entry["rewards"][0] == 1.0 for entry in run["canonical_first"])
        kept = run.get("trl_kept_rewards", {}).get("humaneval_canonical_first", [])
        print(f"  a 1.0 reached TRL: {bool(kept) and kept[0] == 1.0}")
        ok = ok and run["finished"] and one and bool(kept) and kept[0] == 1.0
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--venv", type=Path, default=SCRATCH / "trl-venv",
                        help="the venv with torch and TRL (made if missing; default: %(default)s)")
    parser.add_argument("--prompts", type=int, default=4, help="HumanEval problems in the dataset (default 4)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=SCRATCH / "trl_grpo_step.json",
                        help="the JSON summary (default: %(default)s)")
    args = parser.parse_args()
    args.out = args.out.resolve()
    if in_venv(args.venv):
        return inside(args)
    python = ensure_venv(args.venv)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
               HF_HUB_OFFLINE="1", **{INSIDE: "1"})
    argv = [str(python), str(Path(__file__).resolve()), "--venv", str(args.venv), "--prompts", str(args.prompts),
            "--threads", str(args.threads), "--seed", str(args.seed), "--out", str(args.out)]
    return subprocess.run(argv, env=env, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
