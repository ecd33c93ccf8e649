"""Training steps of the original release itself (`bert-tensorflow`: Google's
`run_pretraining.py` / `run_classifier.py` `model_fn_builder` and
`optimization.create_optimizer`), run as a script in a subprocess under `tf.compat.v1`:
the truth the training loop of this project is tested against.

    python tests/original_training.py spec.json

`spec.json`: {"task": "pretraining" | "classifier", "bert_config_file", "init_checkpoint",
"batches" (an .npz of arrays [steps, batch, ...], one per feature), "learning_rate",
"num_train_steps", "num_warmup_steps", "num_labels" (classifier), "output" (an .npz),
and optionally "save_checkpoint" (a prefix: the graph's variables saved there after the
last step, with `tf.train.Saver`, as the original's Estimator saves)}.
Writes to `output`: `loss` [steps] (each step's loss, before its update), and every
variable after the last step by its TF1 name (`adam_m` / `adam_v` slots included).

{"task": "masked_lm", "bert_config_file", "init_checkpoint", "batches" (one batch of the
pre-training features, each [1, batch, ...]), "output"}: the pre-training `model_fn` in
EVAL mode, restoring `init_checkpoint` as the original does; writes `log_probs`, the
masked-LM head's (`get_masked_lm_output`) [batch * positions, vocab_size].

The original is TensorFlow 1 code; three things it needs are gone from TensorFlow 2.21
and are put back here, with TF1's tensor shapes (`shape[-1].value`), nothing else: `tf.contrib.layers.layer_norm` (written from its
definition: moments over the last axis, epsilon 1e-12, `LayerNorm/beta` and `gamma`),
`tf.layers.dense` (tf-keras, `TF_USE_LEGACY_KERAS=1`) and the `TPUEstimatorSpec` that
`model_fn` returns (its arguments are kept). The classifier's hard-coded 0.1 dropout on
the pooled output (`keep_prob=0.9`) is turned off with the config's dropout, so that the
steps are deterministic.
"""

import json
import os
import sys
import types

os.environ["TF_USE_LEGACY_KERAS"] = "1"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

tf1 = tf.compat.v1


def _layer_norm(inputs, begin_norm_axis=-1, begin_params_axis=-1, scope=None):
    """`tf.contrib.layers.layer_norm` over the last axis, as the original calls it."""
    with tf1.variable_scope(scope, default_name="LayerNorm"):
        width = inputs.shape[-1]
        beta = tf1.get_variable("beta", [width], initializer=tf1.zeros_initializer())
        gamma = tf1.get_variable("gamma", [width], initializer=tf1.ones_initializer())
        mean, variance = tf.nn.moments(inputs, [-1], keepdims=True)
        return tf.nn.batch_normalization(inputs, mean, variance, beta, gamma, 1e-12)


def _install_tf1_shims():
    contrib = types.ModuleType("tensorflow.contrib")
    contrib.layers = types.SimpleNamespace(layer_norm=_layer_norm)
    sys.modules["tensorflow.contrib"] = contrib
    modes = types.SimpleNamespace(TRAIN="train", EVAL="eval", PREDICT="infer")
    tf1.estimator = types.SimpleNamespace(
        ModeKeys=modes, tpu=types.SimpleNamespace(TPUEstimatorSpec=lambda **kw: kw))
    tf1.disable_eager_execution()
    tf1.disable_v2_tensorshape()  # run_classifier reads `shape[-1].value`


def _model_fn(spec, bert_config):
    if spec["task"] == "pretraining":
        from bert import run_pretraining
        return run_pretraining.model_fn_builder(
            bert_config, spec["init_checkpoint"], spec["learning_rate"],
            spec["num_train_steps"], spec["num_warmup_steps"], use_tpu=False,
            use_one_hot_embeddings=True)
    from bert import run_classifier
    # The only dropout left: run_classifier's hard-coded one on the pooled output.
    run_classifier.tf.nn.dropout = lambda x, *args, **kwargs: x
    return run_classifier.model_fn_builder(
        bert_config, spec["num_labels"], spec["init_checkpoint"], spec["learning_rate"],
        spec["num_train_steps"], spec["num_warmup_steps"], use_tpu=False,
        use_one_hot_embeddings=True)


def run(spec):
    _install_tf1_shims()
    from bert import modeling
    bert_config = modeling.BertConfig.from_json_file(spec["bert_config_file"])
    batches = dict(np.load(spec["batches"]))
    steps = next(iter(batches.values())).shape[0]
    graph = tf.Graph()
    with graph.as_default():
        tf1.set_random_seed(0)
        features = {name: tf1.placeholder(tf.as_dtype(value.dtype), value.shape[1:],
                                          name=name)
                    for name, value in batches.items()}
        if spec["task"] == "masked_lm":
            out = _model_fn(dict(spec, task="pretraining", learning_rate=0.0,
                                 num_train_steps=1, num_warmup_steps=0),
                            bert_config)(features, None, "eval", {})
            log_probs = out["eval_metrics"][1][1]
            with tf1.Session(graph=graph) as session:
                session.run(tf1.global_variables_initializer())
                feed = {features[name]: value[0] for name, value in batches.items()}
                np.savez(spec["output"], log_probs=session.run(log_probs, feed_dict=feed))
            return
        out = _model_fn(spec, bert_config)(features, None, "train", {})
        with tf1.Session(graph=graph) as session:
            session.run(tf1.global_variables_initializer())
            losses = []
            for step in range(steps):
                feed = {features[name]: value[step] for name, value in batches.items()}
                _, loss = session.run([out["train_op"], out["loss"]], feed_dict=feed)
                losses.append(loss)
            values = session.run({v.op.name: v for v in tf1.global_variables()})
            if spec.get("save_checkpoint"):
                tf1.train.Saver().save(session, spec["save_checkpoint"])
    np.savez(spec["output"], loss=np.array(losses, np.float64),
             **{f"var:{name}": value for name, value in values.items()})


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as f:
        run(json.load(f))
