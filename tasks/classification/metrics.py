"""The official metric of each sentence(-pair) classification task, in NumPy.

Pipeline position: the classification task (`tasks.classification.task`) computes these on
the dev set after training (and at each checkpoint, to keep the best one); the runner
writes them to `eval_results.txt`.

GLUE's choices: accuracy; F1 (of the positive class "1") and accuracy for MRPC and QQP;
Matthews correlation for CoLA; Pearson and Spearman correlation for STS-B; accuracy on
matched and mismatched dev sets for MNLI. Beside them, the accuracy (and F1) of always
answering the dev set's most frequent label, the baseline a model must beat, and each
label's recall with the macro-averaged F1, which show a model that neglects a rare label
(trained on imbalanced data, `--class_weights`) where accuracy hides it.
"""

import numpy as np

from common.scores import pearson, spearman


def accuracy(predictions, labels):
    return float(np.mean(np.asarray(predictions) == np.asarray(labels)))


def f1(predictions, labels, positive=1):
    p, y = np.asarray(predictions) == positive, np.asarray(labels) == positive
    tp = float(np.sum(p & y))
    if tp == 0:
        return 0.0
    precision, recall = tp / np.sum(p), tp / np.sum(y)
    return float(2 * precision * recall / (precision + recall))


def matthews_corrcoef(predictions, labels):
    """Binary Matthews correlation, 0 when undefined (as scikit-learn)."""
    p, y = np.asarray(predictions) == 1, np.asarray(labels) == 1
    tp, tn = float(np.sum(p & y)), float(np.sum(~p & ~y))
    fp, fn = float(np.sum(p & ~y)), float(np.sum(~p & y))
    denominator = np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    return float((tp * tn - fp * fn) / denominator) if denominator else 0.0


def per_label(predictions, labels, label_names):
    """`recall(<label>)` of each label of `label_names` (index i is label i), and
    `macro_f1`: the mean over the labels of each one's F1, 0 for a label neither present
    nor predicted (scikit-learn's f1_score(average="macro") and recall_score(average=None))."""
    predictions, labels = np.asarray(predictions), np.asarray(labels)
    results, scores = {}, []
    for i, name in enumerate(label_names):
        p, y = predictions == i, labels == i
        tp, predicted, present = float(np.sum(p & y)), float(np.sum(p)), float(np.sum(y))
        results[f"recall({name})"] = tp / present if present else 0.0
        scores.append(2 * tp / (predicted + present) if predicted + present else 0.0)
    results["macro_f1"] = float(np.mean(scores))
    return results


def task_metrics(task_name, outputs, labels, label_names=None):
    """Metrics of `task_name` for `outputs` (class probabilities [n, k] or scores [n]);
    `label_names`: the labels in the model's order, which name each label's recall
    (default their indexes)."""
    task = task_name.lower()
    if task in ("sts-b", "stsb") or outputs.ndim == 1:
        scores = outputs.reshape(-1)
        results = {"pearson": pearson(scores, labels), "spearman": spearman(scores, labels)}
        results["corr"] = (results["pearson"] + results["spearman"]) / 2
        return results
    predictions = outputs.argmax(-1)
    results = {"accuracy": accuracy(predictions, labels)}
    if task in ("mrpc", "qqp"):
        results["f1"] = f1(predictions, labels)
        results["acc_and_f1"] = (results["accuracy"] + results["f1"]) / 2
    if task == "cola":
        results["matthews_corrcoef"] = matthews_corrcoef(predictions, labels)
    # What always answering the most frequent label scores (MRPC dev: F1 0.812), to read
    # the figures above against; Matthews correlation is 0 for any constant answer.
    majority = np.full(len(labels), np.bincount(np.asarray(labels, np.int64)).argmax())
    results["majority_class_accuracy"] = accuracy(majority, labels)
    if "f1" in results:
        results["majority_class_f1"] = f1(majority, labels)
    results.update(per_label(predictions, labels, label_names or [
        str(i) for i in range(outputs.shape[-1])]))
    return results


def multi_label_metrics(probabilities, labels, threshold=0.5):
    """Multi-label figures of `probabilities` [n, labels] (a sigmoid per label) against
    0/1 `labels` [n, labels], a label predicted from `threshold`:
      micro_f1     F1 of every (example, label) decision pooled: 2 TP / (2 TP + FP + FN);
      macro_f1     the mean over labels of each label's F1 (0 for a label neither
                   present nor predicted, as scikit-learn's f1_score(average="macro"));
      exact_match  the share of examples whose predicted set is their set, none included
                   (scikit-learn's accuracy_score on label rows, "subset accuracy");
    and `empty_set_exact_match`, what predicting no label at all scores on it."""
    predicted = np.asarray(probabilities) >= threshold
    truth = np.asarray(labels) > 0.5
    tp = (predicted & truth).sum(0).astype(np.float64)
    fp = (predicted & ~truth).sum(0).astype(np.float64)
    fn = (~predicted & truth).sum(0).astype(np.float64)
    pooled = 2 * tp.sum() + fp.sum() + fn.sum()
    per_label = np.divide(2 * tp, 2 * tp + fp + fn, out=np.zeros_like(tp),
                          where=(2 * tp + fp + fn) > 0)
    return {"micro_f1": float(2 * tp.sum() / pooled) if pooled else 0.0,
            "macro_f1": float(per_label.mean()),
            "exact_match": float(np.mean(np.all(predicted == truth, axis=1))),
            "empty_set_exact_match": float(np.mean(~truth.any(axis=1)))}


def main_metric(task_name, multi_label=False):
    """The metric that selects the best checkpoint."""
    if multi_label:
        return "micro_f1"
    return {"cola": "matthews_corrcoef", "mrpc": "f1", "qqp": "f1", "sts-b": "corr",
            "stsb": "corr"}.get(task_name.lower(), "accuracy")
