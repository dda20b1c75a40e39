#!/usr/bin/env python3
"""The reference Quarry's embedder is measured against (`quarry eval embedder --python …`, issue 40).

Embeds the texts of a JSONL file (one {"text": …} per line) with the same ONNX model file through
Python onnxruntime, batched the way Quarry batches (texts sorted by token count, at most BATCH_SIZE texts
and BATCH_TOKENS padded tokens a call, truncated at MAX_LENGTH tokens), mean pooling over the attention
mask, L2-normalised. Prints one JSON object: {"seconds", "chunks", "tokens", "threads", "onnxruntime"};
with --vectors-out, writes the vectors as little-endian float32, one row per text in input order, so the
caller can check both engines give the same vectors.

Needs onnxruntime, tokenizers and numpy (scripts/bench-embedder.sh installs them in a venv of their own).
"""
import argparse
import json
import time

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", required=True, help="folder with model.onnx and tokenizer.json")
    parser.add_argument("--texts", required=True, help="JSONL file, one {\"text\": ...} per line")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--batch-tokens", type=int, default=1024)
    parser.add_argument("--max-length", type=int, default=512)
    parser.add_argument("--vectors-out", help="write the vectors here (float32, input order)")
    args = parser.parse_args()

    texts = [json.loads(line)["text"] for line in open(args.texts, encoding="utf-8") if line.strip()]
    tokenizer = Tokenizer.from_file(f"{args.model_dir}/tokenizer.json")
    tokenizer.enable_truncation(max_length=args.max_length)
    tokenizer.no_padding()
    options = ort.SessionOptions()
    options.intra_op_num_threads = args.threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(f"{args.model_dir}/model.onnx", options, providers=["CPUExecutionProvider"])
    inputs = {i.name for i in session.get_inputs()}

    def run(batch_texts):
        encodings = tokenizer.encode_batch(batch_texts)
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        types = np.zeros_like(ids)
        for row, e in enumerate(encodings):
            ids[row, : len(e.ids)] = e.ids
            mask[row, : len(e.ids)] = e.attention_mask
            types[row, : len(e.ids)] = e.type_ids
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in inputs:
            feed["token_type_ids"] = types
        hidden = session.run(None, feed)[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)

    run(texts[:8])  # warm-up, as Quarry's measurement has one
    started = time.perf_counter()
    lengths = [len(e.ids) for e in tokenizer.encode_batch(texts)]
    order = sorted(range(len(texts)), key=lambda i: lengths[i])
    vectors = [None] * len(texts)
    start = 0
    while start < len(order):
        end = start + 1
        while (
            end < len(order)
            and end - start < args.batch_size
            and (end - start + 1) * lengths[order[end]] <= args.batch_tokens
        ):
            end += 1
        out = run([texts[i] for i in order[start:end]])
        for row, i in enumerate(order[start:end]):
            vectors[i] = out[row]
        start = end
    seconds = time.perf_counter() - started
    if args.vectors_out:
        np.asarray(vectors, dtype="<f4").tofile(args.vectors_out)
    print(json.dumps({
        "seconds": seconds,
        "chunks": len(texts),
        "tokens": sum(lengths),
        "threads": args.threads,
        "onnxruntime": ort.__version__,
    }))


if __name__ == "__main__":
    main()
