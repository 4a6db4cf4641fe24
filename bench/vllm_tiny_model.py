"""Build the tiny random model that bench/vllm_server.py serves: run by the interpreter that has vLLM.

    PYTHON_WITH_VLLM bench/vllm_tiny_model.py OUT_DIR HUMANEVAL_JSONL_GZ [--seed 0]

A LlamaForCausalLM with random weights (vocab 2048, hidden 128, 2 layers, 2 heads of 64: vLLM's CPU attention
kernel accepts head sizes 32, 64, 80, ... only) and a byte-level BPE tokenizer trained on the HumanEval prompts,
saved as a PreTrainedTokenizerFast with a plain chat template. Nothing is downloaded. What it writes is a model
directory ``--model`` can name; the last line printed is a JSON object describing it.

This file imports torch, transformers and tokenizers, which the project's own venv does not have: it is never
imported by the project, only run by path.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

VOCAB = 2048
HIDDEN = 128
LAYERS = 2
HEADS = 2
HEAD_DIM = 64
CONTEXT = 2048
SPECIAL = ["<|endoftext|>", "<|bos|>", "<|pad|>"]
# Plain: each message as "role: content", then the assistant's turn; no special markers the model cannot learn.
CHAT_TEMPLATE = ("{% for message in messages %}{{ message['role'] }}: {{ message['content'] }}\n{% endfor %}"
                 "{% if add_generation_prompt %}assistant: {% endif %}")


def build(out: Path, dataset: Path, seed: int) -> dict[str, object]:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    with gzip.open(dataset, "rt", encoding="utf-8") as handle:
        prompts = [json.loads(line)["prompt"] for line in handle if line.strip()]
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(prompts, trainers.BpeTrainer(
        vocab_size=VOCAB, special_tokens=SPECIAL, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|endoftext|>", bos_token="<|bos|>",
                                        pad_token="<|pad|>", model_max_length=CONTEXT)
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.save_pretrained(out)

    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=4 * HIDDEN,
                         num_hidden_layers=LAYERS, num_attention_heads=HEADS, num_key_value_heads=HEADS,
                         head_dim=HEAD_DIM, max_position_embeddings=CONTEXT, tie_word_embeddings=False,
                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id, torch_dtype="float32")
    model = LlamaForCausalLM(config)
    model.save_pretrained(out)
    return {"dir": str(out), "architecture": "LlamaForCausalLM", "vocab": VOCAB, "hidden": HIDDEN,
            "layers": LAYERS, "heads": HEADS, "head_dim": HEAD_DIM, "context": CONTEXT, "seed": seed,
            "tokenizer_trained_on": f"{len(prompts)} HumanEval prompts",
            "parameters": sum(p.numel() for p in model.parameters()),
            "versions": {"torch": torch.__version__, "transformers": __import__("transformers").__version__}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    print(json.dumps(build(args.out, args.dataset, args.seed)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
