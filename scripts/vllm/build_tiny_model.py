"""Build a tiny random-weight Llama model that vLLM (CPU build) can serve.

No model weights can be downloaded in CI, and the integration tests only need a real server that
speaks the OpenAI protocol and enforces structured outputs, not sensible text. So we build:

* a Llama config small enough to load in seconds (2 layers, hidden 128), whose head size of 64 is
  accepted by vLLM's CPU attention kernel (head size 16 is rejected);
* random weights (fixed seed, so every machine builds the same model) saved as safetensors;
* a byte-level BPE tokenizer, trained on a few sentences, whose alphabet holds all 256 bytes so
  any text (and any JSON the grammar allows) can be tokenized;
* a ChatML-style chat template that honours ``enable_thinking`` (as Qwen3's does), so tests can see
  that ``chat_template_kwargs`` reached the template.

Run with the vLLM virtualenv's python (it has torch, transformers and tokenizers):

    ~/.cache/highlight-service/vllm-venv/bin/python scripts/vllm/build_tiny_model.py OUT_DIR

The model is written to a temporary directory first and renamed, then OUT_DIR/.complete is
written, so an interrupted build is never mistaken for a finished one.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

SEED = 1234
VOCAB_SIZE = 1024
MAX_POSITIONS = 4096

BOS = "<|begin_of_text|>"
EOS = "<|im_end|>"  # ends every chat turn, so it is also the token generation stops at
IM_START = "<|im_start|>"
PAD = "<|pad|>"
SPECIAL_TOKENS = [BOS, EOS, IM_START, PAD, "<think>", "</think>"]

# Enough text for the BPE merges to cover words, digits and JSON punctuation; the byte alphabet
# covers everything else.
TRAINING_TEXT = [
    "The quick brown fox jumps over the lazy dog.",
    "Which sentences of the cited chunk support the answer?",
    "The revenue grew by 12.5% in 2023, from $4,100 to $4,612 million.",
    "Section 3.2 describes the method; Table 4 lists results (p < 0.05).",
    '{"chunks": [{"chunk_id": "c-001", "sentences": [0, 2, 5]}, {"chunk_id": "c-002"}]}',
    '{"id": "chunk-id", "supported": true, "score": 0.87, "reason": null, "items": []}',
    "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20]",
    "system user assistant: You are a helpful assistant. Answer in JSON only.",
    "Die Umsätze stiegen um 5 %. Les résultats sont présentés ci-dessous. 数据 — “quotes”",
]

# ChatML, like Qwen; `enable_thinking=False` pre-fills an empty think block (Qwen3 behaviour).
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\\n' }}"
    "{% if enable_thinking is defined and enable_thinking is false %}"
    "{{ '<think>\\n\\n</think>\\n\\n' }}"
    "{% endif %}"
    "{% endif %}"
)


def build_tokenizer(out: Path) -> tuple[dict[str, int], int]:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        min_frequency=1,
        special_tokens=SPECIAL_TOKENS,
        # All 256 byte symbols, whether or not the training text contains them.
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(TRAINING_TEXT, trainer=trainer)

    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token=BOS,
        eos_token=EOS,
        pad_token=PAD,
        unk_token=None,
        model_max_length=MAX_POSITIONS,
        clean_up_tokenization_spaces=False,
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(out)

    # Older/newer transformers write the template to chat_template.jinja instead; vLLM reads
    # either, but keep it in tokenizer_config.json too, where every loader looks.
    config_path = out / "tokenizer_config.json"
    config = json.loads(config_path.read_text())
    config["chat_template"] = CHAT_TEMPLATE
    config_path.write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n")

    # Every byte must round-trip, or some text (and some JSON) cannot be produced or read.
    sample = 'Ünïcødé {"a": [1, -2.5e3], "b": null} \t\n\x00\x7f ✓ 数据'
    ids = fast.encode(sample, add_special_tokens=False)
    assert fast.decode(ids) == sample, "tokenizer does not round-trip arbitrary text"
    special_ids = {token: fast.convert_tokens_to_ids(token) for token in (BOS, EOS, PAD)}
    return special_ids, len(fast)


def build_model(out: Path, special_ids: dict[str, int], vocab_size: int) -> None:
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    torch.manual_seed(SEED)
    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=2,  # head size 128 / 2 = 64, accepted by the CPU attention kernel
        num_key_value_heads=1,
        max_position_embeddings=MAX_POSITIONS,
        rms_norm_eps=1e-5,
        tie_word_embeddings=False,
        bos_token_id=special_ids[BOS],
        eos_token_id=special_ids[EOS],
        pad_token_id=special_ids[PAD],
        torch_dtype="bfloat16",
    )
    model = LlamaForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(out, safe_serialization=True)
    GenerationConfig(
        bos_token_id=special_ids[BOS],
        eos_token_id=special_ids[EOS],
        pad_token_id=special_ids[PAD],
    ).save_pretrained(out)


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit(f"usage: {sys.argv[0]} OUT_DIR")
    out = Path(sys.argv[1]).expanduser().resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=out.name + ".", dir=out.parent))
    tmp.chmod(0o755)  # mkdtemp makes it private; CI caches and other users may read it
    try:
        special_ids, vocab_size = build_tokenizer(tmp)
        build_model(tmp, special_ids, vocab_size)
        if out.exists():
            shutil.rmtree(out)
        tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    (out / ".complete").write_text(f"seed={SEED}\n")
    print(f"tiny model written to {out}: vocab {vocab_size}, files {sorted(os.listdir(out))}")


if __name__ == "__main__":
    main()
