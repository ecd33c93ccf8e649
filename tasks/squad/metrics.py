"""Exact match and F1 as the official SQuAD evaluation scripts define them.

Pipeline position: the SQuAD task (`tasks.squad.task`) scores its predictions against the
predict file when it holds answers, and `run_squad.py --do_eval_only` scores any
predictions file without a model.

v1.1 (`evaluate-v1.1.py`): answers normalised (lower-case, punctuation removed, articles
a/an/the removed, whitespace collapsed); EM and token-overlap F1, each the max over the
gold answers; a question without a prediction scores 0. Keys `exact_match`, `f1`.
v2.0 (`evaluate-v2.0.py`): unanswerable questions have the gold answer ""; F1 of an empty
answer is 1 only if both are empty; with null odds, a prediction whose odds exceed
`na_prob_thresh` (1.0) counts as "no answer". Keys `exact`, `f1`, `total`, `HasAns_*`,
`NoAns_*`, and with null odds also `best_exact`, `best_f1` and their thresholds.
"""

import collections
import re
import string

_PUNCTUATION = set(string.punctuation)


def normalize_answer(text):
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def _token_f1(pred_tokens, gold_tokens):
    common = collections.Counter(pred_tokens) & collections.Counter(gold_tokens)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred_tokens), same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def _v1_f1(prediction, gold):
    return _token_f1(normalize_answer(prediction).split(), normalize_answer(gold).split())


def _v2_f1(prediction, gold):
    pred_tokens = normalize_answer(prediction).split()
    gold_tokens = normalize_answer(gold).split()
    if not pred_tokens or not gold_tokens:  # v2.0: 1 if both empty, else 0
        return float(pred_tokens == gold_tokens)
    return _token_f1(pred_tokens, gold_tokens)


def _exact(prediction, gold):
    return float(normalize_answer(prediction) == normalize_answer(gold))


def questions(dataset):
    """The well-formed questions of a SQuAD "data" list (as the official scripts read
    them; entries of other types are passed over)."""
    for article in dataset if isinstance(dataset, list) else []:
        paragraphs = article.get("paragraphs", []) if isinstance(article, dict) else []
        for paragraph in paragraphs if isinstance(paragraphs, list) else []:
            qas = paragraph.get("qas", []) if isinstance(paragraph, dict) else []
            for qa in qas if isinstance(qas, list) else []:
                if isinstance(qa, dict) and "id" in qa:
                    yield qa


def gold_texts(qa):
    answers = qa.get("answers", [])
    return [a["text"] for a in answers if isinstance(a, dict) and
            isinstance(a.get("text"), str)] if isinstance(answers, list) else []


def _prediction(predictions, qid):
    prediction = predictions[qid]
    if not isinstance(prediction, str):
        raise ValueError(f"the prediction for question {qid!r} is {prediction!r}, not a "
                         f"string; predictions map each question id to its answer text.")
    return prediction


def evaluate_v1(dataset, predictions):
    exact = f1 = total = 0
    for qa in questions(dataset):
        total += 1
        if qa["id"] not in predictions:
            continue
        golds = gold_texts(qa)
        if not golds:
            continue
        prediction = _prediction(predictions, qa["id"])
        exact += max(_exact(prediction, g) for g in golds)
        f1 += max(_v1_f1(prediction, g) for g in golds)
    return {"exact_match": 100.0 * exact / total if total else 0.0,
            "f1": 100.0 * f1 / total if total else 0.0}


def evaluate_v2(dataset, predictions, null_odds=None, na_prob_thresh=1.0):
    exact, f1, has_answer = {}, {}, {}
    for qa in questions(dataset):
        qid = qa["id"]
        golds = [text for text in gold_texts(qa) if normalize_answer(text)]
        has_answer[qid] = bool(golds)
        golds = golds or [""]
        if qid not in predictions:
            continue
        prediction = _prediction(predictions, qid)
        exact[qid] = max(_exact(prediction, g) for g in golds)
        f1[qid] = max(_v2_f1(prediction, g) for g in golds)
    odds = null_odds or {qid: 0.0 for qid in predictions}
    exact_t, f1_t = {}, {}
    for qid in has_answer:
        if qid not in exact:
            exact_t[qid] = f1_t[qid] = 0.0
        elif odds.get(qid, 0.0) > na_prob_thresh:
            exact_t[qid] = f1_t[qid] = float(not has_answer[qid])
        else:
            exact_t[qid], f1_t[qid] = exact[qid], f1[qid]

    def summary(ids, prefix=""):
        n = len(ids)
        return {prefix + "exact": 100.0 * sum(exact_t[i] for i in ids) / n if n else 0.0,
                prefix + "f1": 100.0 * sum(f1_t[i] for i in ids) / n if n else 0.0,
                prefix + "total": n}

    results = summary(list(has_answer))
    has = [i for i, h in has_answer.items() if h]
    no = [i for i, h in has_answer.items() if not h]
    if has:
        results.update(summary(has, "HasAns_"))
    if no:
        results.update(summary(no, "NoAns_"))
    if null_odds:
        for name, scores in (("exact", exact), ("f1", f1)):
            best, thresh = _best_threshold(predictions, scores, null_odds, has_answer)
            results["best_" + name] = best
            results["best_" + name + "_thresh"] = thresh
    return results


def _best_threshold(predictions, scores, odds, has_answer):
    """evaluate-v2.0.py's find_best_thresh."""
    current = best = sum(1 for h in has_answer.values() if not h)
    threshold = 0.0
    for qid in sorted(odds, key=lambda k: odds[k]):
        if qid not in scores:
            continue
        if has_answer[qid]:
            diff = scores[qid]
        else:
            diff = -1 if predictions[qid] else 0
        current += diff
        if current > best:
            best, threshold = current, odds[qid]
    return 100.0 * best / len(scores) if scores else 0.0, threshold


def best_null_threshold(dataset, answers, null_odds):
    """The SQuAD 2.0 null-score threshold with the best F1 when each question gets its best
    non-null answer (`answers`) if its null odds are at most the threshold, and no answer
    otherwise: (threshold, that F1). It starts from no answer at all (a threshold below
    every odds; the official script starts at 0.0, meant for probabilities) and answers
    the questions in the order of their odds."""
    base, gain = 0.0, {}
    for qa in questions(dataset):
        qid = qa["id"]
        if qid not in answers or qid not in null_odds:
            continue
        golds = [text for text in gold_texts(qa) if normalize_answer(text)]
        unanswered = 0.0 if golds else 1.0
        answered = max(_v2_f1(_prediction(answers, qid), g) for g in golds or [""])
        base += unanswered
        gain[qid] = answered - unanswered
    if not gain:
        return 0.0, 0.0
    best = current = base
    threshold = min(null_odds[q] for q in gain) - 1.0
    for qid in sorted(gain, key=lambda q: null_odds[q]):
        current += gain[qid]
        if current > best:
            best, threshold = current, null_odds[qid]
    return threshold, 100.0 * best / len(gain)
