"""Fine-tuning computes the real tokens only (`Task.skip_padding`, `BertEncoder`'s
`skip_padding`) for the tasks whose answers read no padded position: classification (a
linear or BiLSTM head, or a frozen encoder's layers), tagging and multiple choice. The
truth is the padded computation: with dropout off, the same loss and the same gradients
on the same batch; with dropout on, a loss that does not move when the padded positions
hold other ids (padding leaks into nothing, and the dropout drawn for the real tokens is
the padded-free computation's own)."""

import numpy as np
import pytest
import tensorflow as tf

import modeling
from tasks.classification import ClassificationTask
from tasks.multiple_choice import MultipleChoiceTask
from tasks.multiple_choice.model import BertMultipleChoice
from tasks.squad import SquadTask
from tasks.tagging import TaggingTask
from training.task import Task

CONFIG = modeling.BertConfig(vocab_size=60, hidden_size=32, num_hidden_layers=2,
                             num_attention_heads=4, intermediate_size=48,
                             max_position_embeddings=32, hidden_dropout_prob=0.2,
                             attention_probs_dropout_prob=0.2)
LENGTHS = [3, 11, 7, 16, 5, 9]
WIDTH = 20


def _batch(padding_ids, shape=(len(LENGTHS),)):
    """Inputs whose padded positions (mask 0) hold `padding_ids`' ids, for a batch of
    `shape` rows (multiple choice: [examples, choices]) of LENGTHS' lengths."""
    rng = np.random.default_rng(0)
    rows = int(np.prod(shape))
    lengths = np.resize(LENGTHS, rows)
    mask = (np.arange(WIDTH)[None] < lengths[:, None]).astype("int32")
    ids = rng.integers(5, 60, (rows, WIDTH)).astype("int32")
    ids = np.where(mask == 1, ids, padding_ids[:rows]).astype("int32")
    segments = (np.arange(WIDTH)[None] >= lengths[:, None] // 2).astype("int32") * mask
    return {name: value.reshape(*shape, WIDTH) for name, value in
            (("input_ids", ids), ("input_mask", mask), ("segment_ids", segments))}


def _loss(model, batch, kind, training, skip_padding):
    logits = tf.cast(model(batch, training=training, skip_padding=skip_padding)["logits"],
                     tf.float32)
    if kind == "tagging":  # real tokens' tags only, as TaggingTask's loss
        labels = np.arange(WIDTH)[None].repeat(len(logits), 0) % logits.shape[-1]
        xent = tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
        weights = tf.cast(batch["input_mask"], tf.float32)
        return tf.reduce_sum(xent * weights) / tf.reduce_sum(weights)
    labels = np.arange(len(logits)) % logits.shape[-1]
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))


MODELS = {
    "classification": lambda: modeling.BertClassifier(CONFIG, 3),
    "classification, BiLSTM head": lambda: modeling.BertClassifier(
        CONFIG, 3, head="bilstm", bilstm_units=8),
    "classification, frozen layers": lambda: modeling.BertClassifier(
        CONFIG, 3, head="bilstm", bilstm_units=8, feature_based="second_to_last"),
    "tagging": lambda: modeling.BertTokenClassifier(CONFIG, 5),
    "multiple choice": lambda: BertMultipleChoice(CONFIG),
}


def _setup(name):
    tf.keras.utils.set_random_seed(1)
    model = MODELS[name]()
    kind = "tagging" if name == "tagging" else "other"
    shape = (3, 2) if name == "multiple choice" else (len(LENGTHS),)
    zeros = np.zeros(len(LENGTHS), "int32")[:, None].repeat(WIDTH, 1)
    garbage = np.random.default_rng(5).integers(5, 60, (len(LENGTHS), WIDTH))
    return model, kind, _batch(zeros, shape), _batch(garbage, shape)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_the_same_loss_and_gradients_as_the_padded_computation_with_dropout_off(name):
    model, kind, batch, _ = _setup(name)
    results = {}
    for skip in (False, True):
        with tf.GradientTape() as tape:
            loss = _loss(model, batch, kind, False, skip)
        results[skip] = (loss, tape.gradient(loss, model.trainable_variables))
    np.testing.assert_allclose(results[True][0], results[False][0], rtol=1e-5, atol=1e-6)
    for padded, skipped, variable in zip(results[False][1], results[True][1],
                                         model.trainable_variables):
        if padded is None:  # a layer the loss does not reach (the frozen encoder)
            assert skipped is None, variable.path
            continue
        np.testing.assert_allclose(tf.convert_to_tensor(skipped),
                                   tf.convert_to_tensor(padded), rtol=1e-4, atol=1e-6,
                                   err_msg=variable.path)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_with_dropout_on_the_padded_positions_change_nothing(name):
    """The same dropout draws (the seed generators' state restored) on two batches that
    differ only in their padded positions' ids: the same loss, and dropout at work (the
    loss differs from the one without dropout)."""
    model, kind, batch, other = _setup(name)
    _loss(model, batch, kind, True, True)  # builds every layer's seed generator
    seeds = [v for v in model.non_trainable_variables if "seed_generator_state" in v.path]
    assert seeds, "no dropout layer found"
    state = [v.numpy() for v in seeds]
    losses = []
    for inputs in (batch, other):
        for variable, value in zip(seeds, state):
            variable.assign(value)
        losses.append(float(_loss(model, inputs, kind, True, True)))
    assert losses[0] == pytest.approx(losses[1], rel=1e-6, abs=1e-7)
    assert losses[0] != pytest.approx(float(_loss(model, batch, kind, False, True)), rel=1e-4)


class _Recorder:
    """A stand-in model that records how it is called."""

    def __call__(self, inputs, training=None, skip_padding=None):
        self.skip_padding = skip_padding
        return {"logits": tf.zeros([1, 2])}


def test_the_tasks_whose_answers_read_no_padding_skip_it_and_squad_does_not():
    """SQuAD's loss normalises its start and end logits over every position, padding
    included (as the original), so it keeps the padded computation."""
    assert ClassificationTask.skip_padding and TaggingTask.skip_padding and \
        MultipleChoiceTask.skip_padding
    assert not SquadTask.skip_padding and not Task.skip_padding
    recorder = _Recorder()
    task = Task(None)
    task.skip_padding = True
    task.encode(recorder, _batch(np.zeros((6, WIDTH), "int32")), True)
    assert recorder.skip_padding is True

    # Skipped, the padded positions are not computed at all: zeros in the sequence output.
    batch = _batch(np.zeros((6, WIDTH), "int32"))
    sequence = modeling.BertEncoder(CONFIG)(
        batch, training=True, skip_padding=True)["sequence_output"].numpy()
    mask = batch["input_mask"].astype(bool)
    assert not sequence[~mask].any() and np.abs(sequence[mask]).min(axis=-1).max() > 0


def _pretraining_batch(padding_ids):
    """A pre-training batch (LENGTHS' rows, 2 masked positions each, the last slot of the
    shortest row a padding slot of weight 0 pointing at position 0) whose padded positions
    hold `padding_ids`' ids."""
    batch = _batch(padding_ids)
    rng = np.random.default_rng(3)
    positions = np.stack([np.sort(rng.choice(np.arange(1, n), 2, replace=False))
                          for n in LENGTHS]).astype("int32")
    weights = np.ones(positions.shape, "float32")
    positions[0, -1], weights[0, -1] = 0, 0.0
    batch.update(masked_lm_positions=positions, masked_lm_weights=weights,
                 masked_lm_ids=np.take_along_axis(batch["input_ids"], positions, 1),
                 next_sentence_labels=(np.arange(len(LENGTHS)) % 2)[:, None].astype("int32"))
    return batch


@pytest.mark.parametrize("objective", ["mlm_nsp", "ltr"])
def test_pretraining_skips_the_padding_with_the_padded_computations_loss(objective):
    """Pre-training's losses read the masked positions, [CLS] and (left to right) the next
    real tokens only: its task skips the padding, and scores only the predictions that
    count (a slot of weight 0 is left out), with the padded computation's loss and
    gradients (dropout off) and, dropout on, a loss the padded positions' ids do not move."""
    from tasks.pretraining.task import PretrainingTask, pretraining_model
    task = PretrainingTask()
    task.objective = objective
    assert task.skip_padding and task.padding_skipped()
    tf.keras.utils.set_random_seed(1)
    model = pretraining_model(CONFIG, objective)
    zeros = np.zeros((len(LENGTHS), WIDTH), "int32")
    garbage = np.random.default_rng(5).integers(5, 60, (len(LENGTHS), WIDTH))
    batch, other = _pretraining_batch(zeros), _pretraining_batch(garbage)
    normalizers = {name: float(value) for name, value in task.normalizers(batch).items()}

    def loss(inputs, training, skip):
        task.skip_padding = skip
        return task.loss(model, inputs, normalizers, training)[0]

    # The task's own model call skips the padding: nothing computed at padded positions.
    mask = batch["input_mask"].astype(bool)
    for skip in (False, True):
        task.skip_padding = skip
        sequence = task._lm_xent(model, batch, False)[0]["sequence_output"].numpy()
        assert sequence[~mask].any() != skip, skip
    results = {}
    for skip in (False, True):
        with tf.GradientTape() as tape:
            value = loss(batch, False, skip)
        results[skip] = (value, tape.gradient(value, model.trainable_variables))
    np.testing.assert_allclose(results[True][0], results[False][0], rtol=1e-5, atol=1e-6)
    for padded, skipped, variable in zip(results[False][1], results[True][1],
                                         model.trainable_variables):
        if padded is None:  # the pooler, without the next-sentence head
            assert skipped is None, variable.path
            continue
        np.testing.assert_allclose(tf.convert_to_tensor(skipped),
                                   tf.convert_to_tensor(padded), rtol=1e-4, atol=1e-6,
                                   err_msg=variable.path)
    loss(batch, True, True)  # builds every seed generator
    seeds = [v for v in model.non_trainable_variables if "seed_generator_state" in v.path]
    state = [v.numpy() for v in seeds]
    losses = []
    for inputs in (batch, other):
        for variable, value in zip(seeds, state):
            variable.assign(value)
        losses.append(float(loss(inputs, True, True)))
    assert losses[0] == pytest.approx(losses[1], rel=1e-6, abs=1e-7)
    assert losses[0] != pytest.approx(float(results[True][0]), rel=1e-4)
