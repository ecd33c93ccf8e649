"""From start/end logits to answer texts, as the original `write_predictions`.

Pipeline position: the SQuAD task's start/end logits (`tasks.squad.task`) -> here ->
predictions.json, nbest_predictions.json, null_odds.json -> `tasks.squad.metrics`.
"""

import collections
import functools

from common.scores import softmax
from text.tokenization import BasicTokenizer


@functools.lru_cache(maxsize=4096)  # the n-best of a question share their spans' text
def get_final_text(pred_text, orig_text, do_lower_case):
    """Projects a normalised WordPiece answer back onto the original document text (undoing
    lower-casing, accent stripping and punctuation splitting), as the original: find the
    prediction in the basic-tokenized original, then map characters back with spaces
    removed. Falls back to `orig_text` when the alignment fails."""
    def strip_spaces(text):
        chars, mapping = [], {}
        for i, c in enumerate(text):
            if c == " ":
                continue
            mapping[len(chars)] = i
            chars.append(c)
        return "".join(chars), mapping

    tok_text = " ".join(BasicTokenizer(do_lower_case=do_lower_case).tokenize(orig_text))
    start = tok_text.find(pred_text)
    if start == -1:
        return orig_text
    end = start + len(pred_text) - 1
    orig_ns, orig_map = strip_spaces(orig_text)
    tok_ns, tok_map = strip_spaces(tok_text)
    if len(orig_ns) != len(tok_ns):
        return orig_text
    tok_to_ns = {tok_index: i for i, tok_index in tok_map.items()}
    ns_start, ns_end = tok_to_ns.get(start), tok_to_ns.get(end)
    if ns_start is None or ns_end is None or ns_start not in orig_map or \
            ns_end not in orig_map:
        return orig_text
    return orig_text[orig_map[ns_start]:orig_map[ns_end] + 1]


def _top_indexes(logits, n):
    return [i for i, _ in sorted(enumerate(logits), key=lambda x: x[1], reverse=True)[:n]]


def compute_predictions(examples, features, start_logits, end_logits, n_best_size=20,
                        max_answer_length=30, do_lower_case=True,
                        version_2_with_negative=False, null_score_diff_threshold=0.0):
    """Answers for `examples` from the logits of their `features` (same order).

    Returns:
        (predictions {qas_id: text}, nbest {qas_id: [entries]}, null_odds {qas_id: float}
        (v2 only)).
    """
    by_example = collections.defaultdict(list)
    for index, feature in enumerate(features):
        by_example[feature.example_index].append(index)
    predictions, all_nbest, null_odds = {}, {}, {}
    for example_index, example in enumerate(examples):
        candidates, score_null, null_start, null_end = [], None, 0.0, 0.0
        for index in by_example[example_index]:
            feature = features[index]
            starts, ends = start_logits[index], end_logits[index]
            if version_2_with_negative:
                null = starts[0] + ends[0]
                if score_null is None or null < score_null:
                    score_null, null_start, null_end = null, starts[0], ends[0]
            for s in _top_indexes(starts, n_best_size):
                for e in _top_indexes(ends, n_best_size):
                    if s >= len(feature.tokens) or e >= len(feature.tokens):
                        continue
                    if s not in feature.token_to_orig_map or e not in feature.token_to_orig_map:
                        continue
                    if not feature.token_is_max_context.get(s, False):
                        continue
                    if e < s or e - s + 1 > max_answer_length:
                        continue
                    candidates.append((float(starts[s] + ends[e]), index, s, e,
                                       float(starts[s]), float(ends[e])))
        if version_2_with_negative and score_null is not None:
            candidates.append((float(null_start + null_end), None, 0, 0, float(null_start),
                               float(null_end)))
        candidates.sort(key=lambda c: c[0], reverse=True)
        nbest, seen = [], set()
        for score, index, s, e, s_logit, e_logit in candidates:
            if len(nbest) >= n_best_size:
                break
            if index is None:
                text = ""
            else:
                feature = features[index]
                pieces = " ".join(feature.tokens[s:e + 1])
                pieces = " ".join(pieces.replace(" ##", "").replace("##", "").strip().split())
                orig = " ".join(example.doc_tokens[feature.token_to_orig_map[s]:
                                                   feature.token_to_orig_map[e] + 1])
                text = get_final_text(pieces, orig, do_lower_case)
            if text in seen:
                continue
            seen.add(text)
            nbest.append({"text": text, "start_logit": s_logit, "end_logit": e_logit})
        if version_2_with_negative and "" not in seen and score_null is not None:
            nbest.append({"text": "", "start_logit": float(null_start),
                          "end_logit": float(null_end)})
        if not nbest:
            nbest.append({"text": "empty", "start_logit": 0.0, "end_logit": 0.0})
        for entry, p in zip(nbest, softmax([n["start_logit"] + n["end_logit"]
                                            for n in nbest])):
            entry["probability"] = float(p)
        all_nbest[example.qas_id] = nbest
        if not version_2_with_negative:
            predictions[example.qas_id] = nbest[0]["text"]
            continue
        best_non_null = next((n for n in nbest if n["text"]), None)
        if best_non_null is None:
            predictions[example.qas_id] = ""
            null_odds[example.qas_id] = 0.0
            continue
        diff = float(score_null) - best_non_null["start_logit"] - best_non_null["end_logit"]
        null_odds[example.qas_id] = diff
        predictions[example.qas_id] = "" if diff > null_score_diff_threshold else \
            best_non_null["text"]
    return predictions, all_nbest, null_odds


def at_threshold(nbest, null_odds, threshold):
    """SQuAD 2.0 answers at another null-score threshold, from `compute_predictions`'s
    n-best lists and null odds, without running the model again: no answer where the
    null score beats the best answer by more than `threshold`, else the best answer."""
    answers = {}
    for qid, entries in nbest.items():
        best_non_null = next((n["text"] for n in entries if n["text"]), "")
        answers[qid] = "" if null_odds.get(qid, 0.0) > threshold else best_non_null
    return answers
