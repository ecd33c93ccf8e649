"""An independent NumPy forward pass of BERT, written from the paper's equations and the
original release's conventions, over weights keyed by the original TF1 variable names in
the original TF1 layouts (`output_weights` are [out, in]).

Shares no code with `modeling`: it is the truth the Keras model is tested against.
"""

import math

import numpy as np


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def gelu_erf(x):
    from math import erf
    return 0.5 * x * (1.0 + np.vectorize(erf)(x / math.sqrt(2.0)))


ACTS = {"gelu": gelu_tanh, "gelu_exact": gelu_erf, "relu": lambda x: np.maximum(x, 0),
        "tanh": np.tanh}


def layer_norm(x, gamma, beta, eps=1e-12):
    x = x.astype(np.float64)
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def softmax(x):
    x = x - x.max(-1, keepdims=True)
    e = np.exp(x)
    return e / e.sum(-1, keepdims=True)


def encoder_forward(w, cfg, input_ids, input_mask, segment_ids):
    """Returns dict like BertEncoder's, computed in float64. With `cfg["causal_attention"]`
    a query attends to keys at or before it only, and the pooled vector is the last real
    token's; with `cfg["pooling"] == "mean"`, the real tokens' average; with "pair_mean",
    [u; v; |u - v|; u * v] of segment A's and B's real tokens' averages (v: zeros if no B).
    "attentions": each layer's attention probabilities [B, N, S (queries), S (keys)]."""
    w = {k: np.asarray(v, np.float64) for k, v in w.items()}
    H, N = cfg["hidden_size"], cfg["num_attention_heads"]
    D = H // N
    act = ACTS[cfg.get("hidden_act", "gelu")]
    B, S = input_ids.shape
    x = (w["bert/embeddings/word_embeddings"][input_ids]
         + w["bert/embeddings/token_type_embeddings"][segment_ids]
         + w["bert/embeddings/position_embeddings"][:S][None])
    x = layer_norm(x, w["bert/embeddings/LayerNorm/gamma"], w["bert/embeddings/LayerNorm/beta"])
    emb = x
    adder = (1.0 - input_mask[:, None, None, :].astype(np.float64)) * -10000.0
    causal = cfg.get("causal_attention", False)
    if causal:
        after = np.triu(np.ones((S, S)), k=1)  # [query, key]: the key is later
        adder = adder + after[None, None] * -10000.0
    layers, attentions = [], []
    for i in range(cfg["num_hidden_layers"]):
        p = f"bert/encoder/layer_{i}/"

        def dense(t, name):
            return t @ w[p + name + "/kernel"] + w[p + name + "/bias"]

        def norm(t, which):
            return layer_norm(t, w[p + which + "/LayerNorm/gamma"],
                              w[p + which + "/LayerNorm/beta"])

        pre = cfg.get("pre_layer_norm", False)  # x + f(LN(x)) instead of LN(x + f(x))
        inp = norm(x, "attention/output") if pre else x
        q = dense(inp, "attention/self/query").reshape(B, S, N, D).transpose(0, 2, 1, 3)
        k = dense(inp, "attention/self/key").reshape(B, S, N, D).transpose(0, 2, 1, 3)
        v = dense(inp, "attention/self/value").reshape(B, S, N, D).transpose(0, 2, 1, 3)
        probs = softmax(q @ k.transpose(0, 1, 3, 2) / math.sqrt(D) + adder)
        attentions.append(probs)
        ctx = (probs @ v).transpose(0, 2, 1, 3).reshape(B, S, H)
        if pre:
            a = x + dense(ctx, "attention/output/dense")
            x = a + dense(act(dense(norm(a, "output"), "intermediate/dense")), "output/dense")
        else:
            a = norm(dense(ctx, "attention/output/dense") + x, "attention/output")
            h = act(dense(a, "intermediate/dense"))
            x = norm(dense(h, "output/dense") + a, "output")
        layers.append(x)
    if cfg.get("pre_layer_norm", False):
        x = layer_norm(x, w["bert/encoder/LayerNorm/gamma"], w["bert/encoder/LayerNorm/beta"])
        layers[-1] = x
    if causal:  # the last real token
        summary = x[np.arange(B), input_mask.sum(1) - 1]
    elif cfg.get("pooling", "cls") == "mean":  # the average of the real tokens
        summary = np.stack([x[b, input_mask[b] > 0].mean(0) for b in range(B)])
    elif cfg.get("pooling", "cls") == "pair_mean":  # each segment's average, compared
        rows = []
        for b in range(B):
            real = input_mask[b] > 0
            a, second = x[b, real & (segment_ids[b] == 0)], x[b, real & (segment_ids[b] > 0)]
            u = a.mean(0)
            v = second.mean(0) if len(second) else np.zeros(H)
            rows.append(np.concatenate([u, v, np.abs(u - v), u * v]))
        summary = np.stack(rows)
    else:  # [CLS]
        summary = x[:, 0]
    pooled = np.tanh(summary @ w["bert/pooler/dense/kernel"] + w["bert/pooler/dense/bias"])
    return {"sequence_output": x, "pooled_output": pooled, "encoder_outputs": layers,
            "embedding_output": emb, "attentions": attentions}


def pretrainer_forward(w, cfg, input_ids, input_mask, segment_ids, positions):
    out = encoder_forward(w, cfg, input_ids, input_mask, segment_ids)
    w64 = {k: np.asarray(v, np.float64) for k, v in w.items()}
    act = ACTS[cfg.get("hidden_act", "gelu")]
    seq = out["sequence_output"]
    gathered = np.stack([seq[b, positions[b]] for b in range(seq.shape[0])])
    t = act(gathered @ w64["cls/predictions/transform/dense/kernel"]
            + w64["cls/predictions/transform/dense/bias"])
    t = layer_norm(t, w64["cls/predictions/transform/LayerNorm/gamma"],
                   w64["cls/predictions/transform/LayerNorm/beta"])
    out["masked_lm_logits"] = (t @ w64["bert/embeddings/word_embeddings"].T
                               + w64["cls/predictions/output_bias"])
    out["next_sentence_logits"] = (out["pooled_output"]
                                   @ w64["cls/seq_relationship/output_weights"].T
                                   + w64["cls/seq_relationship/output_bias"])
    return out


def random_google_weights(cfg, rng, heads=("pretraining",), num_labels=3):
    """Random weights for every original variable (non-trivial LayerNorm and biases too),
    keyed by TF1 name, in TF1 layout, float32."""
    V, H, I = cfg["vocab_size"], cfg["hidden_size"], cfg["intermediate_size"]  # noqa: E741 (the paper's V, H, I)
    P, T = cfg["max_position_embeddings"], cfg["type_vocab_size"]
    shapes = {
        "bert/embeddings/word_embeddings": (V, H),
        "bert/embeddings/token_type_embeddings": (T, H),
        "bert/embeddings/position_embeddings": (P, H),
        "bert/embeddings/LayerNorm/gamma": (H,), "bert/embeddings/LayerNorm/beta": (H,),
        "bert/pooler/dense/kernel": (4 * H if cfg.get("pooling") == "pair_mean" else H, H),
        "bert/pooler/dense/bias": (H,),
    }
    for i in range(cfg["num_hidden_layers"]):
        p = f"bert/encoder/layer_{i}/"
        for n in ("query", "key", "value"):
            shapes[p + f"attention/self/{n}/kernel"] = (H, H)
            shapes[p + f"attention/self/{n}/bias"] = (H,)
        shapes[p + "attention/output/dense/kernel"] = (H, H)
        shapes[p + "attention/output/dense/bias"] = (H,)
        shapes[p + "intermediate/dense/kernel"] = (H, I)
        shapes[p + "intermediate/dense/bias"] = (I,)
        shapes[p + "output/dense/kernel"] = (I, H)
        shapes[p + "output/dense/bias"] = (H,)
        for ln in ("attention/output/LayerNorm", "output/LayerNorm"):
            shapes[p + ln + "/gamma"] = (H,)
            shapes[p + ln + "/beta"] = (H,)
    if cfg.get("pre_layer_norm", False):
        shapes["bert/encoder/LayerNorm/gamma"] = shapes["bert/encoder/LayerNorm/beta"] = (H,)
    if "pretraining" in heads:
        shapes.update({
            "cls/predictions/transform/dense/kernel": (H, H),
            "cls/predictions/transform/dense/bias": (H,),
            "cls/predictions/transform/LayerNorm/gamma": (H,),
            "cls/predictions/transform/LayerNorm/beta": (H,),
            "cls/predictions/output_bias": (V,),
            "cls/seq_relationship/output_weights": (2, H),
            "cls/seq_relationship/output_bias": (2,),
        })
    if "classifier" in heads:
        shapes.update({"output_weights": (num_labels, H), "output_bias": (num_labels,)})
    if "squad" in heads:
        shapes.update({"cls/squad/output_weights": (2, H), "cls/squad/output_bias": (2,)})
    weights = {}
    for name, shape in shapes.items():
        if name.endswith("gamma"):
            weights[name] = (1.0 + 0.1 * rng.standard_normal(shape)).astype(np.float32)
        else:
            weights[name] = (0.2 * rng.standard_normal(shape)).astype(np.float32)
    return weights
