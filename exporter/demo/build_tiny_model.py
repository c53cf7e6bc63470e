"""Build a tiny random-weight Llama model and its tokenizer in a folder (no hub download).

Run with the Python of the vLLM environment (it needs torch, transformers and tokenizers):
    python build_tiny_model.py OUT_DIR
The CPU attention backend rejects head_dim 16, so heads are 64 wide.
"""

from __future__ import annotations

import sys
from pathlib import Path

WORDS = (
    "the a an is are was were be to of and in that have it for not on with he as you do at this but his by "
    "from they we say her she or will my one all would there their what so up out if about who get which go me "
    "when make can like time no just him know take people into year your good some could them see other than "
    "then now look only come its over think also back after use two how our work first well way even new want "
    "because any these give day most us token prompt queue wait decode prefill cache model gpu node pod"
).split()


def build(out: Path) -> None:
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    out.mkdir(parents=True, exist_ok=True)
    specials = ["<unk>", "<s>", "</s>"]
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)] + list("0123456789.,!?")
    vocab = {tok: i for i, tok in enumerate(dict.fromkeys(specials + WORDS + letters))}
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, unk_token="<unk>", bos_token="<s>", eos_token="</s>", pad_token="</s>"
    )
    fast.chat_template = "{% for m in messages %}{{ m['content'] }} {% endfor %}"
    fast.save_pretrained(out)

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=256,
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        head_dim=64,
        max_position_embeddings=2048,
        bos_token_id=vocab["<s>"],
        eos_token_id=vocab["</s>"],
        torch_dtype="float32",
    )
    model = LlamaForCausalLM(config)
    model.save_pretrained(out, safe_serialization=True)


if __name__ == "__main__":
    build(Path(sys.argv[1]))
