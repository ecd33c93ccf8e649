"""Layer and model contracts: get_config round trips, shapes, mixed precision, a train step."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import modeling
from modeling.heads import ClassificationHead, MaskedLMHead, SpanLabelingHead
from modeling.layers import BertEmbeddings, SelfAttention, TransformerBlock


@pytest.mark.parametrize("cls, kwargs", [
    (BertEmbeddings, dict(vocab_size=30, hidden_size=8, max_position_embeddings=16,
                          type_vocab_size=2, hidden_dropout_prob=0.2, initializer_range=0.05)),
    (SelfAttention, dict(num_attention_heads=2, head_size=4, attention_probs_dropout_prob=0.3)),
    (TransformerBlock, dict(hidden_size=8, num_attention_heads=2, intermediate_size=12,
                            hidden_act="relu")),
    (MaskedLMHead, dict(vocab_size=30, hidden_size=8, hidden_act="gelu_exact")),
    (ClassificationHead, dict(num_classes=3, dropout_rate=0.0)),
    (SpanLabelingHead, dict(initializer_range=0.1)),
])
def test_layer_config_round_trip(cls, kwargs):
    layer = cls(**kwargs, name="x")
    config = layer.get_config()
    for key, value in kwargs.items():
        assert config[key] == value
    clone = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(layer))
    assert type(clone) is cls and clone.get_config() == config


def test_models_round_trip_through_config(tiny_config_dict, tiny_inputs):
    config = modeling.BertConfig.from_dict(tiny_config_dict)
    for model in (modeling.BertEncoder(config), modeling.BertPretrainer(config),
                  modeling.BertClassifier(config, num_classes=3, dropout_rate=0.2),
                  modeling.BertSpanLabeler(config), modeling.BertTokenClassifier(config, 4)):
        clone = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(model))
        assert type(clone) is type(model)
        assert clone.count_params() == model.count_params()
        clone.set_weights(model.get_weights())
        a, b = model(tiny_inputs), clone(tiny_inputs)
        key = "sequence_output" if "sequence_output" in a else sorted(a)[-1]
        np.testing.assert_allclose(a[key], b[key], atol=1e-6)


def test_encoder_accepts_a_config_or_kwargs(tiny_config_dict):
    config = modeling.BertConfig.from_dict(tiny_config_dict)
    a = modeling.BertEncoder(config, name="enc")
    b = modeling.BertEncoder(**config.encoder_kwargs(), name="enc")
    assert a.get_config() == b.get_config()
    assert a.bert_config() == config
    with pytest.raises(modeling.BertConfigError, match="num_attention_heads"):
        modeling.BertEncoder(vocab_size=10, hidden_size=10, num_attention_heads=3)


def test_encoder_selects_inputs_by_name(tiny_config_dict, tiny_inputs):
    encoder = modeling.BertEncoder(modeling.BertConfig.from_dict(tiny_config_dict))
    extra = dict(tiny_inputs, masked_lm_positions=np.zeros((2, 3), np.int32))
    np.testing.assert_array_equal(encoder(tiny_inputs)["sequence_output"],
                                  encoder(extra)["sequence_output"])
    as_lists = {k: v.tolist() for k, v in tiny_inputs.items()}  # plain Python lists work too
    np.testing.assert_array_equal(encoder(tiny_inputs)["sequence_output"],
                                  encoder(as_lists)["sequence_output"])
    with pytest.raises(ValueError, match="segment_ids"):
        encoder({"input_ids": tiny_inputs["input_ids"],
                 "input_mask": tiny_inputs["input_mask"]})


def test_out_of_range_ids_fail_clearly(tiny_config_dict, tiny_inputs):
    encoder = modeling.BertEncoder(modeling.BertConfig.from_dict(tiny_config_dict))
    bad = dict(tiny_inputs, input_ids=tiny_inputs["input_ids"] + 100)
    with pytest.raises(Exception, match="vocab_size=40"):
        encoder(bad)


def test_mixed_precision_forward_and_train_step(tiny_config_dict, tiny_inputs):
    config = modeling.BertConfig.from_dict(tiny_config_dict)
    try:
        keras.mixed_precision.set_global_policy("mixed_float16")
        model = modeling.BertClassifier(config, num_classes=2)
        out = model(tiny_inputs)["logits"]
        assert out.dtype == "float16" and np.all(np.isfinite(out.numpy()))
        assert model.encoder.word_embeddings.dtype == "float32"  # variables stay float32
    finally:
        keras.mixed_precision.set_global_policy("float32")


def test_a_few_training_steps_reduce_the_loss(tiny_config_dict, tiny_inputs):
    keras.utils.set_random_seed(0)
    config = modeling.BertConfig.from_dict(dict(tiny_config_dict, hidden_dropout_prob=0.0,
                                                attention_probs_dropout_prob=0.0))
    model = modeling.BertClassifier(config, num_classes=2, dropout_rate=0.0)
    labels = np.array([0, 1])
    import tensorflow as tf
    opt = keras.optimizers.Adam(3e-3)
    losses = []
    for _ in range(40):
        with tf.GradientTape() as tape:
            logits = model(tiny_inputs, training=True)["logits"]
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))
        grads = tape.gradient(loss, model.trainable_variables)
        assert all(g is not None for g in grads)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        losses.append(float(loss))
    assert losses[-1] < 0.2 * losses[0]


def test_encoder_refuses_a_config_with_keyword_arguments(tiny_config_dict):
    config = modeling.BertConfig.from_dict(tiny_config_dict)
    with pytest.raises(TypeError, match="not both"):
        modeling.BertEncoder(config, hidden_size=8)
    with pytest.raises(TypeError):  # no positional architecture arguments
        modeling.BertEncoder(40, 16)


@pytest.mark.parametrize("options", [{}, {"pre_layer_norm": True},
                                     {"causal_attention": True}])
def test_skip_padding_gives_each_rows_outputs_as_if_it_ran_alone(tiny_config_dict, options):
    """With `skip_padding` the dense layers see only the real tokens: each row's outputs
    at its real positions are those of the row run alone, unpadded; padding gives 0."""
    keras.utils.set_random_seed(5)
    config = modeling.BertConfig.from_dict(dict(tiny_config_dict, **options))
    encoder = modeling.BertEncoder(config)
    lengths = [3, 7, 1, 5]
    ids = np.random.default_rng(0).integers(5, config.vocab_size, (4, 8)).astype("int32")
    mask = (np.arange(8) < np.array(lengths)[:, None]).astype("int32")
    batch = {"input_ids": ids * mask, "input_mask": mask, "segment_ids": mask * (ids % 2)}
    got = encoder(batch, skip_padding=True)
    assert len(got["encoder_outputs"]) == config.num_hidden_layers
    for row, n in enumerate(lengths):
        alone = encoder({name: value[row:row + 1, :n] for name, value in batch.items()})
        np.testing.assert_allclose(got["sequence_output"][row, :n],
                                   alone["sequence_output"][0], atol=1e-5)
        np.testing.assert_allclose(got["encoder_outputs"][0][row, :n],
                                   alone["encoder_outputs"][0][0], atol=1e-5)
        np.testing.assert_allclose(got["pooled_output"][row], alone["pooled_output"][0],
                                   atol=1e-5)
        assert not np.any(got["sequence_output"][row, n:])
    # Through every task model, and in a compiled graph.
    for model in (modeling.BertClassifier(encoder, 3), modeling.BertTokenClassifier(encoder, 4)):
        want = model(batch)["logits"]
        fn = tf.function(lambda inputs: model(inputs, training=False, skip_padding=True))
        real = mask.astype(bool) if len(want.shape) == 3 else slice(None)
        np.testing.assert_allclose(np.asarray(fn(batch)["logits"])[real],
                                   np.asarray(want)[real], atol=1e-5)


def test_the_real_tokens_rows_go_back_to_the_padded_layout_with_zeros():
    """`padded_token_matrix` puts row i of the real tokens at position token_index[i] and
    zeros elsewhere, as NumPy does it, in training (a scatter) and in inference (a gather
    from the rows and a zero row), with or without the inverse index, and for a batch
    with no real token at all."""
    from modeling.layers.attention import padded_token_matrix, real_token_index, token_rows
    rng = np.random.default_rng(1)
    for mask in (np.array([[1, 1, 0, 0], [1, 0, 0, 0], [1, 1, 1, 1]], "int32"),
                 np.zeros((2, 3), "int32")):
        index = real_token_index(mask)
        tokens = rng.normal(size=(int(mask.sum()), 5)).astype("float32")
        want = np.zeros((mask.size, 5), "float32")
        want[np.flatnonzero(mask)] = tokens
        for training in (True, False):
            for rows in (None, token_rows(mask)):
                got = padded_token_matrix(tf.constant(tokens), index, mask.size, training,
                                          rows)
                np.testing.assert_array_equal(np.asarray(got), want)


def test_inference_with_skip_padding_runs_no_scatter(tiny_config_dict):
    """TensorFlow's ScatterNd runs on one thread on CPU: the inference graph of the
    encoder with `skip_padding` puts the real tokens back with gathers (the training
    graph keeps the scatter, whose gradient is a gather)."""
    encoder = modeling.BertEncoder(modeling.BertConfig.from_dict(tiny_config_dict))
    spec = {name: tf.TensorSpec([None, None], tf.int32)
            for name in ("input_ids", "input_mask", "segment_ids")}
    def op_types(training):
        fn = tf.function(lambda inputs: encoder(inputs, training=training,
                                                skip_padding=True)["sequence_output"])
        return {op.type for op in fn.get_concrete_function(spec).graph.get_operations()}
    inference, training = op_types(False), op_types(True)
    assert "ScatterNd" not in inference and "GatherV2" in inference
    assert "ScatterNd" in training
