"""Entity-level precision, recall and F1 exactly as the CoNLL `conlleval` script defines
them: an entity counts as correct only if its type and both its boundaries match.

Pipeline position: the tagging task (`tasks.tagging.task`) scores its dev/test predictions
with `evaluate`, and `run_ner.py --do_eval_only` scores any CoNLL-format predictions file
(word, gold, predicted); `format_results` is the text of eval_results.txt.

Chunk boundaries follow conlleval's `startOfChunk` / `endOfChunk` rules, so IOB1, IOB2
(BIO) and IOBES tag sequences are all read as conlleval reads them; a sentence break ends
every chunk. Figures are percentages, as conlleval prints them.
"""

import collections


def _split(tag):
    """conlleval: `($tag, $type) = split(/-/, $guessed)`; "O" has type ""."""
    prefix, _, kind = tag.partition("-")
    return prefix, kind


# conlleval's startOfChunk / endOfChunk tables, transcribed rule for rule.
_ENDS = {("B", "B"), ("B", "O"), ("I", "B"), ("I", "O"), ("E", "E"), ("E", "I"),
         ("E", "O")}
_STARTS = {("B", "B"), ("I", "B"), ("O", "B"), ("O", "I"), ("E", "E"), ("E", "I"),
           ("O", "E")}


def _ends(prev_tag, tag, prev_type, kind):
    return (prev_tag, tag) in _ENDS or prev_tag in ("]", "[") or (
        prev_tag not in ("O", ".") and prev_type != kind)


def _starts(prev_tag, tag, prev_type, kind):
    return (prev_tag, tag) in _STARTS or tag in ("[", "]") or (
        tag not in ("O", ".") and prev_type != kind)


def chunks(tags):
    """Set of (start, end, type) entities of one sentence's tags (end exclusive)."""
    found, start = set(), None
    prev_tag, prev_type = "O", ""
    for i, tag in enumerate(list(tags) + ["O"]):
        t, k = _split(tag)
        if start is not None and _ends(prev_tag, t, prev_type, k):
            found.add((start, i, prev_type))
            start = None
        if _starts(prev_tag, t, prev_type, k):
            start = i
        prev_tag, prev_type = t, k
    return found


def evaluate(gold_sentences, predicted_sentences):
    """conlleval's figures for lists of per-sentence tag lists.

    Returns:
        dict: "precision", "recall", "f1", "accuracy" (token level), counts, and
        "per_type": {type: {"precision", "recall", "f1", "gold", "predicted",
        "correct"}}.
    """
    gold_count, pred_count, correct = (collections.Counter() for _ in range(3))
    tokens = right_tokens = 0
    for gold, pred in zip(gold_sentences, predicted_sentences):
        if len(gold) != len(pred):
            raise ValueError(f"A sentence has {len(gold)} gold tags but {len(pred)} "
                             f"predicted tags.")
        g, p = chunks(gold), chunks(pred)
        gold_count.update(c[2] for c in g)
        pred_count.update(c[2] for c in p)
        correct.update(c[2] for c in g & p)
        tokens += len(gold)
        right_tokens += sum(a == b for a, b in zip(gold, pred))

    def prf(c, pr, go):
        precision = 100.0 * c / pr if pr else 0.0
        recall = 100.0 * c / go if go else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        return {"precision": precision, "recall": recall, "f1": f1}

    results = prf(sum(correct.values()), sum(pred_count.values()), sum(gold_count.values()))
    results.update({"accuracy": 100.0 * right_tokens / tokens if tokens else 0.0,
                    "gold_entities": sum(gold_count.values()),
                    "predicted_entities": sum(pred_count.values()),
                    "correct_entities": sum(correct.values()), "tokens": tokens})
    results["per_type"] = {
        kind: dict(prf(correct[kind], pred_count[kind], gold_count[kind]),
                   gold=gold_count[kind], predicted=pred_count[kind], correct=correct[kind])
        for kind in sorted(set(gold_count) | set(pred_count))}
    return results


def format_results(results):
    """eval_results.txt / test_results.txt: the overall figures, then one line per type."""
    lines = [f"{k} = {results[k]}" for k in ("precision", "recall", "f1", "accuracy",
                                             "gold_entities", "predicted_entities",
                                             "correct_entities") if k in results]
    for kind, r in results.get("per_type", {}).items():
        lines.append(f"{kind} = precision {r['precision']:.2f} recall {r['recall']:.2f} "
                     f"f1 {r['f1']:.2f} ({r['gold']} gold, {r['predicted']} predicted)")
    return "\n".join(lines) + "\n"


def read_predictions(path):
    """A CoNLL predictions file (word, gold tag, predicted tag per line; blank lines
    between sentences; -DOCSTART- lines ignored) -> (gold sentences, predicted)."""
    gold, pred, g, p = [], [], [], []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            fields = line.split()
            if not fields or fields[0] == "-DOCSTART-":
                if g:
                    gold.append(g)
                    pred.append(p)
                g, p = [], []
                continue
            if len(fields) < 3:
                raise ValueError(f"{path}:{number}: {len(fields)} columns; expected word, "
                                 f"gold tag and predicted tag.")
            g.append(fields[-2])
            p.append(fields[-1])
    if g:
        gold.append(g)
        pred.append(p)
    if not gold:
        raise ValueError(f"{path}: no sentences.")
    return gold, pred
