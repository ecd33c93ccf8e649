"""SQuAD v1.1 / v2.0 JSON -> examples -> windowed features, as the original `run_squad.py`.

Pipeline position: train/dev JSON -> here -> the SQuAD task (`tasks.squad.task`: training,
prediction) -> `tasks.squad.predictions` (answers) -> `tasks.squad.metrics` (EM / F1).

Reading splits each paragraph on whitespace (space, tab, CR, LF, U+202F) into document
words with a character -> word map; answers become word spans. Features tokenize each
word with WordPiece, keep at most `max_query_length` question pieces, and cut the
document into windows of `max_seq_length - len(query) - 3` pieces that start
`doc_stride` pieces apart; each piece is scored in the window where it has the most
context (min of left and right context + 0.01 x window length; the first window wins
ties). Training answer spans are refined by searching the tokenized answer inside the
initial span; a window that does not contain the answer (or an impossible question)
points at [CLS] (0, 0), as the original does.
"""

import dataclasses
import json

import numpy as np

from common.progress import Progress
from modeling.inputs import INPUT_NAMES


class SquadError(ValueError):
    """A SQuAD file that cannot be read at all."""


@dataclasses.dataclass
class SquadExample:
    qas_id: str
    question_text: str
    doc_tokens: list
    orig_answer_text: str = None
    start_position: int = None
    end_position: int = None
    is_impossible: bool = False


@dataclasses.dataclass
class SquadFeature:
    example_index: int
    doc_span_index: int
    tokens: list
    token_to_orig_map: dict
    token_is_max_context: dict
    input_ids: list
    input_mask: list
    segment_ids: list
    start_position: int = 0
    end_position: int = 0


def _is_whitespace(c):
    return c in (" ", "\t", "\r", "\n") or ord(c) == 0x202F


def read_squad(path, is_training, version_2_with_negative=False, first_answer=False):
    """Examples of a SQuAD file, and counts of what was skipped.

    Training takes questions with exactly one answer, as the original (which stops at the
    first other one); with `first_answer`, a question with several answers (as in SQuAD's
    dev files) is trained on its first, as Hugging Face does.

    Returns:
        (examples, counts): counts has "questions", "skipped_malformed" (entries lacking
        context/qas/question/answers, or of the wrong types), "skipped_not_one_answer"
        (training only: none, or several without `first_answer`),
        "skipped_answer_mismatch" (the answer text is not at `answer_start`, training
        only; the original warns and drops these too) and "empty_contexts".

    Raises:
        SquadError: no usable question, saying why.
    """
    data = load_json(path)
    return squad_examples(data, path, is_training, version_2_with_negative, first_answer)


def load_json(path):
    """A SQuAD file's parsed JSON; `SquadError` names the file and the line of bad JSON."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except json.JSONDecodeError as err:
        raise SquadError(f"{path}: not valid JSON (line {err.lineno}, column {err.colno}: "
                         f"{err.msg}).") from None
    except UnicodeDecodeError as err:
        raise SquadError(f"{path}: not UTF-8 ({err}).") from None


def squad_examples(data, path, is_training, version_2_with_negative=False,
                   first_answer=False):
    """`read_squad` on already-parsed JSON (`path` names it in messages)."""
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise SquadError(f"{path}: no top-level \"data\" list; is this a SQuAD file?")
    counts = {"questions": 0, "skipped_malformed": 0, "skipped_answer_mismatch": 0,
              "empty_contexts": 0}
    if is_training:
        counts["skipped_not_one_answer"] = 0
    examples = []
    for article in data["data"]:
        for paragraph in (article.get("paragraphs") or []) if isinstance(article, dict) \
                else []:
            context = paragraph.get("context") if isinstance(paragraph, dict) else None
            qas = paragraph.get("qas") if isinstance(paragraph, dict) else None
            if not isinstance(context, str) or not isinstance(qas, list):
                skipped = len(qas) if isinstance(qas, list) else 1
                counts["questions"] += skipped
                counts["skipped_malformed"] += skipped
                continue
            doc_tokens, char_to_word, previous_white = [], [], True
            for c in context:
                if _is_whitespace(c):
                    previous_white = True
                else:
                    if previous_white:
                        doc_tokens.append(c)
                    else:
                        doc_tokens[-1] += c
                    previous_white = False
                char_to_word.append(len(doc_tokens) - 1)
            if not doc_tokens:
                counts["empty_contexts"] += 1
            for qa in qas:
                counts["questions"] += 1
                if not isinstance(qa, dict) or not isinstance(qa.get("question"), str) or \
                        "id" not in qa:
                    counts["skipped_malformed"] += 1
                    continue
                example = SquadExample(str(qa["id"]), qa["question"], doc_tokens)
                if is_training:
                    impossible = bool(version_2_with_negative and qa.get("is_impossible"))
                    answers = qa.get("answers")
                    if impossible:
                        example.is_impossible = True
                        example.start_position = example.end_position = -1
                        example.orig_answer_text = ""
                    elif isinstance(answers, list) and (
                            not answers or (len(answers) > 1 and not first_answer)):
                        counts["skipped_not_one_answer"] += 1
                        continue
                    elif not isinstance(answers, list) or not doc_tokens or \
                            not _well_formed(answers[0]):
                        counts["skipped_malformed"] += 1
                        continue
                    else:
                        text, start = answers[0]["text"], answers[0]["answer_start"]
                        if not (0 <= start < len(context)) or not text:
                            counts["skipped_answer_mismatch"] += 1
                            continue
                        end_char = min(start + len(text) - 1, len(context) - 1)
                        s_word, e_word = char_to_word[start], char_to_word[end_char]
                        actual = " ".join(doc_tokens[max(s_word, 0):e_word + 1])
                        if actual.find(" ".join(text.split())) == -1:
                            counts["skipped_answer_mismatch"] += 1
                            continue
                        example.orig_answer_text = text
                        example.start_position, example.end_position = s_word, e_word
                examples.append(example)
    if not examples:
        raise SquadError(f"{path}: no usable question ({counts}).{_why_none(counts)}")
    return examples, counts


def _why_none(counts):
    """What to do when no training question was usable because of its answer count."""
    several = counts.get("skipped_not_one_answer", 0)
    if not several:
        return ""
    return (f" Training takes questions with exactly one answer, as the original; "
            f"{several:,} of the {counts['questions']:,} have none or several (SQuAD's dev "
            f"files give several answers per question). Train on a training file, or add "
            f"--train_on_first_answer to train on each question's first answer (as Hugging "
            f"Face does).")


def _well_formed(answer):
    """An answer with a text string and an integer start (JSON's true is not one)."""
    return (isinstance(answer, dict) and isinstance(answer.get("text"), str) and
            isinstance(answer.get("answer_start"), int) and
            not isinstance(answer.get("answer_start"), bool))


def read_squad_from_text(question, context):
    """One example from a question and a passage (for `run_squad.py --question`)."""
    for name, value, what in (("question", question, "the question"),
                              ("context", context, "the passage to answer from")):
        if not value or not value.strip():
            raise SquadError(f"--{name} is empty: give {what}.")
    data = {"data": [{"paragraphs": [{"context": context, "qas": [
        {"id": "question", "question": question}]}]}]}
    return squad_examples(data, "--question/--context", is_training=False)


def _improve_answer_span(doc_tokens, start, end, tokenizer, answer_text):
    target = " ".join(tokenizer.tokenize(answer_text))
    for new_start in range(start, end + 1):
        for new_end in range(end, new_start - 1, -1):
            if " ".join(doc_tokens[new_start:new_end + 1]) == target:
                return new_start, new_end
    return start, end


def _is_max_context(doc_spans, current, position):
    best_score, best_index = None, None
    for index, (start, length) in enumerate(doc_spans):
        end = start + length - 1
        if position < start or position > end:
            continue
        score = min(position - start, end - position) + 0.01 * length
        if best_score is None or score > best_score:
            best_score, best_index = score, index
    return current == best_index


def convert_examples(examples, tokenizer, max_seq_length, doc_stride, max_query_length,
                     is_training):
    """Features of `examples` (list of `SquadFeature`), the original's algorithm."""
    features = []
    progress = Progress("SQuAD features", ["questions", "features"],
                        total=("questions", len(examples)))
    for example_index, example in enumerate(examples):
        progress.update(questions=1)
        query = tokenizer.tokenize(example.question_text)[:max_query_length]
        tok_to_orig, orig_to_tok, doc_pieces = [], [], []
        for i, word in enumerate(example.doc_tokens):
            orig_to_tok.append(len(doc_pieces))
            for piece in tokenizer.tokenize(word):
                tok_to_orig.append(i)
                doc_pieces.append(piece)
        tok_start = tok_end = None
        if is_training and example.is_impossible:
            tok_start = tok_end = -1
        elif is_training:
            tok_start = orig_to_tok[example.start_position]
            tok_end = orig_to_tok[example.end_position + 1] - 1 \
                if example.end_position < len(example.doc_tokens) - 1 else len(doc_pieces) - 1
            tok_start, tok_end = _improve_answer_span(doc_pieces, tok_start, tok_end,
                                                      tokenizer, example.orig_answer_text)
        max_doc = max_seq_length - len(query) - 3
        if max_doc < 1:
            raise ValueError(f"--max_seq_length={max_seq_length} leaves no room for the "
                             f"document after a {len(query)}-piece question; raise it or "
                             f"lower --max_query_length.")
        spans, start = [], 0
        while start < len(doc_pieces) or not spans:
            length = min(len(doc_pieces) - start, max_doc)
            spans.append((start, length))
            if start + length >= len(doc_pieces):
                break
            start += min(length, doc_stride)
        for span_index, (start, length) in enumerate(spans):
            tokens = ["[CLS]"] + query + ["[SEP]"]
            segment_ids = [0] * len(tokens)
            to_orig, max_context = {}, {}
            for i in range(length):
                position = start + i
                to_orig[len(tokens)] = tok_to_orig[position]
                max_context[len(tokens)] = _is_max_context(spans, span_index, position)
                tokens.append(doc_pieces[position])
                segment_ids.append(1)
            tokens.append("[SEP]")
            segment_ids.append(1)
            ids = tokenizer.convert_tokens_to_ids(tokens)
            pad = max_seq_length - len(ids)
            feature = SquadFeature(example_index, span_index, tokens, to_orig, max_context,
                                   ids + [0] * pad, [1] * len(ids) + [0] * pad,
                                   segment_ids + [0] * pad)
            if is_training and not example.is_impossible:
                if start <= tok_start and tok_end <= start + length - 1:
                    offset = len(query) + 2
                    feature.start_position = tok_start - start + offset
                    feature.end_position = tok_end - start + offset
            features.append(feature)
    progress.close()
    return features


def feature_arrays(features, with_positions):
    """Model inputs (and span labels) of `features` as int32 arrays."""
    arrays = {name: np.array([getattr(f, name) for f in features], np.int32)
              for name in INPUT_NAMES}
    if with_positions:
        for name in ("start_position", "end_position"):
            arrays[name + "s"] = np.array([getattr(f, name) for f in features], np.int32)
    return arrays
