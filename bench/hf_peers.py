"""Hugging Face's side of the fine-tuning benchmarks: plain PyTorch loops over
`transformers` models, as a user of that library writes them, with the recipe of ours.

The recipe (the original's): AdamW with weight decay 0.01 off LayerNorm and biases, epsilon
1e-6, linear warm-up over the first 10% of steps then linear decay, global-norm clipping
at 1.0, shuffled batches padded to their own longest (dynamic padding, the fast
tokenizer's own collators). Each function returns (training loop seconds, the task's dev
figures); scoring uses this project's metric code (conlleval, the official SQuAD v1.1
script's), so both sides are scored alike.

The benches run these in a process of their own (`--in_process=hugging_face`; finetune_speed's `--hf_seed`) and time it from
launch to exit, beside `run_classifier.py` / `run_ner.py` / `run_squad.py`.
"""

import collections
import time

import numpy as np

RECIPE = {"weight_decay": 0.01, "eps": 1e-6, "warmup_proportion": 0.1, "clip_norm": 1.0}


def adamw(model, learning_rate):
    """PyTorch's AdamW with the recipe's decay (off LayerNorm and biases) and epsilon."""
    import torch
    no_decay = {n for n, _ in model.named_parameters()
                if any(k in n for k in ("bias", "LayerNorm"))}
    return torch.optim.AdamW(
        [{"params": [p for n, p in model.named_parameters() if n not in no_decay],
          "weight_decay": RECIPE["weight_decay"]},
         {"params": [p for n, p in model.named_parameters() if n in no_decay],
          "weight_decay": 0.0}], lr=learning_rate, eps=RECIPE["eps"])


def train(model, loader, learning_rate, epochs=1.0, loss_of=None):
    """Fine-tunes `model` over `loader` (batches of model keyword arguments with labels)
    for `epochs`; returns the loop's seconds. `loss_of(outputs, labels)`: a loss of the
    user's own (the model's by default), as a `Trainer.compute_loss` override gives."""
    import torch
    import transformers
    steps = max(1, int(len(loader) * epochs))
    optimizer = adamw(model, learning_rate)
    schedule = transformers.get_linear_schedule_with_warmup(
        optimizer, int(RECIPE["warmup_proportion"] * steps), steps)
    model.train()
    start, step = time.perf_counter(), 0
    while step < steps:
        for batch in loader:
            if loss_of is None:
                model(**batch).loss.backward()
            else:
                labels = batch.pop("labels")
                loss_of(model(**batch), labels).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), RECIPE["clip_norm"])
            optimizer.step()
            schedule.step()
            optimizer.zero_grad()
            step += 1
            if step == steps:
                break
    model.eval()
    return time.perf_counter() - start


def sequence_classification(model_dir, train_rows, dev_rows, max_seq_length, batch_size,
                            learning_rate, class_weights=None):
    """SST-2 style [text, label] rows -> (loop seconds, {"accuracy": dev accuracy, and each
    label's recall and the macro F1}). `class_weights`: one per label, the loss PyTorch's
    weighted cross-entropy (what Hugging Face users put in a `compute_loss` override)."""
    import torch
    import transformers
    tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir)
    model = transformers.BertForSequenceClassification.from_pretrained(model_dir, num_labels=2)
    encoded = [dict(tokenizer(text, truncation=True, max_length=max_seq_length),
                    labels=int(label)) for text, label in train_rows]
    loader = torch.utils.data.DataLoader(
        encoded, batch_size=batch_size, shuffle=True, drop_last=True,
        collate_fn=transformers.DataCollatorWithPadding(tokenizer))
    loss_of = None
    if class_weights is not None:
        weighted = torch.nn.CrossEntropyLoss(weight=torch.tensor(class_weights,
                                                                 dtype=torch.float32))

        def loss_of(outputs, labels):
            return weighted(outputs.logits, labels)
    seconds = train(model, loader, learning_rate, loss_of=loss_of)
    predicted = []
    with torch.inference_mode():
        for i in range(0, len(dev_rows), 64):
            rows = dev_rows[i:i + 64]
            enc = tokenizer([r[0] for r in rows], padding=True, truncation=True,
                            max_length=max_seq_length, return_tensors="pt")
            predicted.extend(model(**enc).logits.argmax(-1).tolist())
    from tasks.classification import metrics
    labels = np.array([int(r[1]) for r in dev_rows])
    return seconds, dict(metrics.per_label(predicted, labels, ["0", "1"]),
                         accuracy=metrics.accuracy(predicted, labels))


def token_classification(model_dir, train_sentences, dev_sentences, max_seq_length,
                         batch_size, learning_rate, epochs):
    """CoNLL sentences (`tasks.tagging.conll.Sentence`, IOB2 tags) -> (loop seconds,
    conlleval figures on dev). The first piece of each word carries its tag, as the
    original's NER recipe; words cut off by `max_seq_length` are predicted "O"."""
    import torch
    import transformers

    from tasks.tagging import metrics
    labels = sorted({t for s in train_sentences + dev_sentences for t in s.tags})
    index = {label: i for i, label in enumerate(labels)}
    tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir)
    model = transformers.BertForTokenClassification.from_pretrained(
        model_dir, num_labels=len(labels))

    def encode(sentence):
        enc = tokenizer(sentence.words, is_split_into_words=True, truncation=True,
                        max_length=max_seq_length)
        words, previous, tags = enc.word_ids(), None, []
        for word in words:
            tags.append(-100 if word is None or word == previous else
                        index[sentence.tags[word]])
            previous = word
        return dict(enc, labels=tags), words

    loader = torch.utils.data.DataLoader(
        [encode(s)[0] for s in train_sentences], batch_size=batch_size, shuffle=True,
        drop_last=True, collate_fn=transformers.DataCollatorForTokenClassification(tokenizer))
    seconds = train(model, loader, learning_rate, epochs)
    predicted = []
    for i in range(0, len(dev_sentences), 64):
        part = [(s, *encode(s)) for s in dev_sentences[i:i + 64]]
        logits = _logits(model, tokenizer, [enc for _, enc, _ in part],
                         ("input_ids", "token_type_ids", "attention_mask"))
        for (sentence, enc, words), scores in zip(part, logits):
            tags = ["O"] * len(sentence.words)
            for position, (word, label) in enumerate(zip(words, enc["labels"])):
                if label != -100:
                    tags[word] = labels[int(scores[position].argmax())]
            predicted.append(tags)
    return seconds, metrics.evaluate([s.tags for s in dev_sentences], predicted)


def question_answering(model_dir, train_path, predict_path, max_seq_length, doc_stride,
                       batch_size, learning_rate, epochs):
    """SQuAD 1.1 files -> (loop seconds, the official v1.1 scores of the predictions):
    windows of `max_seq_length` every `doc_stride` tokens (the fast tokenizer's
    overflow), a window without the answer trained to [CLS], and the best span of at
    most 30 tokens over each question's windows (top 20 starts and ends), as Hugging
    Face's question-answering example."""
    import torch
    import transformers

    from tasks.squad import data as squad_data
    from tasks.squad import metrics
    tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir)
    model = transformers.BertForQuestionAnswering.from_pretrained(model_dir)
    train_questions = _questions(squad_data.load_json(train_path))
    features = _qa_windows(tokenizer, train_questions, max_seq_length, doc_stride)
    rows = [{"input_ids": f["input_ids"], "token_type_ids": f["token_type_ids"],
             "attention_mask": f["attention_mask"], **_answer_positions(f, q)}
            for f, q in features]
    loader = torch.utils.data.DataLoader(
        rows, batch_size=batch_size, shuffle=True, drop_last=True,
        collate_fn=transformers.DataCollatorWithPadding(tokenizer))
    seconds = train(model, loader, learning_rate, epochs)
    dataset = squad_data.load_json(predict_path)
    predictions = _qa_predictions(model, tokenizer, _questions(dataset), max_seq_length,
                                  doc_stride)
    return seconds, metrics.evaluate_v1(dataset["data"], predictions)


def _questions(dataset):
    """(id, question, context, first answer or None) of a SQuAD file's questions."""
    return [(qa["id"], qa["question"], paragraph["context"],
             qa["answers"][0] if qa.get("answers") else None)
            for article in dataset["data"] for paragraph in article["paragraphs"]
            for qa in paragraph["qas"]]


def _qa_windows(tokenizer, questions, max_seq_length, doc_stride):
    """[(window encoding with offsets, its question)]: each question's context in
    windows, the question first (truncated to fit), the context's offsets kept."""
    windows = []
    for question in questions:
        enc = tokenizer(question[1].lstrip(), question[2], truncation="only_second",
                        max_length=max_seq_length, stride=doc_stride,
                        return_overflowing_tokens=True, return_offsets_mapping=True)
        for i in range(len(enc["input_ids"])):
            window = {key: enc[key][i] for key in ("input_ids", "token_type_ids",
                                                   "attention_mask", "offset_mapping")}
            window["sequence_ids"] = enc.sequence_ids(i)
            windows.append((window, question))
    return windows


def _answer_positions(window, question):
    """{start_positions, end_positions}: the answer's tokens in the window, or [CLS]'s
    (0) when the window does not hold the whole answer."""
    answer = question[3]
    start_char = answer["answer_start"]
    end_char = start_char + len(answer["text"])
    context = [i for i, s in enumerate(window["sequence_ids"]) if s == 1]
    offsets = window["offset_mapping"]
    if not context or offsets[context[0]][0] > start_char or \
            offsets[context[-1]][1] < end_char:
        return {"start_positions": 0, "end_positions": 0}
    start = next(i for i in context if offsets[i][1] > start_char)
    end = next(i for i in reversed(context) if offsets[i][0] < end_char)
    return {"start_positions": start, "end_positions": end}


def _qa_predictions(model, tokenizer, questions, max_seq_length, doc_stride, n_best=20,
                    max_answer_length=30, batch_size=64):
    """{question id: answer text}: the best-scoring valid span over its windows."""
    windows = _qa_windows(tokenizer, questions, max_seq_length, doc_stride)
    best = collections.defaultdict(lambda: (-np.inf, ""))
    for i in range(0, len(windows), batch_size):
        part = windows[i:i + batch_size]
        starts, ends = _logits(model, tokenizer, [w for w, _ in part],
                               ("input_ids", "token_type_ids", "attention_mask"))
        for (window, question), start_logits, end_logits in zip(part, starts, ends):
            context = {j for j, s in enumerate(window["sequence_ids"]) if s == 1}
            offsets = window["offset_mapping"]
            for s in np.argsort(start_logits)[::-1][:n_best]:
                for e in np.argsort(end_logits)[::-1][:n_best]:
                    score = start_logits[s] + end_logits[e]
                    if s in context and e in context and s <= e < s + max_answer_length \
                            and score > best[question[0]][0]:
                        best[question[0]] = (score, question[2][offsets[s][0]:offsets[e][1]])
    return {qid: text for qid, (_, text) in best.items()}


def _logits(model, tokenizer, encodings, keys):
    """The model's outputs on `encodings` padded to their longest, one call: the logits
    (token classification) or (start logits, end logits), as NumPy arrays."""
    import torch
    batch = tokenizer.pad([{key: e[key] for key in keys} for e in encodings],
                          return_tensors="pt")
    with torch.inference_mode():
        out = model(**batch)
    if hasattr(out, "start_logits"):
        return out.start_logits.numpy(), out.end_logits.numpy()
    return out.logits.numpy()


def _masked_lm_steps(model, tokenizer, optimizer, sentences, batch_size, max_seq_length,
                     packed=False):
    """`step(schedule=None) -> loss`: one update of `model` on the next batch of
    `sentences` (an endless shuffled stream), masked by `DataCollatorForLanguageModeling`,
    clipped as the recipe says; `packed`: the sentences' tokens (each with its [CLS] and
    [SEP]) concatenated and cut into blocks of `max_seq_length`, as `run_mlm.py`'s
    `group_texts`."""
    import torch
    import transformers
    examples = [tokenizer(s, truncation=True, max_length=max_seq_length,
                          return_special_tokens_mask=True) for s in sentences]
    if packed:
        keys = ("input_ids", "token_type_ids", "attention_mask", "special_tokens_mask")
        joined = {k: [v for e in examples for v in e[k]] for k in keys}
        blocks = len(joined["input_ids"]) // max_seq_length
        examples = [{k: joined[k][i * max_seq_length:(i + 1) * max_seq_length]
                     for k in keys} for i in range(blocks)]
    loader = torch.utils.data.DataLoader(
        examples, batch_size=batch_size, shuffle=True, drop_last=True,
        collate_fn=transformers.DataCollatorForLanguageModeling(tokenizer,
                                                                mlm_probability=0.15))

    def batches():
        while True:
            yield from loader

    stream = batches()

    def step(schedule=None):
        loss = model(**next(stream)).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), RECIPE["clip_norm"])
        optimizer.step()
        if schedule is not None:
            schedule.step()
        optimizer.zero_grad()
        return float(loss.detach())

    return step


def masked_lm_adaptation(model_dir, sentences, out_dir, budget_seconds, learning_rate,
                         batch_size=32, max_seq_length=128, warmup_share=0.06,
                         calibration_steps=20, seed=0, log=print, packed=False):
    """Continued masked-LM pre-training as a Hugging Face user runs it (`run_mlm.py
    --line_by_line`): `BertForMaskedLM` from `model_dir` (a head it lacks starts from
    random weights, tied to the word embeddings), `DataCollatorForLanguageModeling`
    (15% masked, 80/10/10), each sentence an example, batches padded to their longest;
    the schedule sized to `budget_seconds` as ours is (the first `calibration_steps`
    steps timed, then the steps the rest of the budget buys, linear warm-up and decay),
    the recipe of `train`. Saves the model to `out_dir` (safetensors). Returns
    {"steps", "seconds", "sequences_per_second"} of the timed loop."""
    import torch
    import transformers
    torch.manual_seed(seed)
    tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir)
    model = transformers.BertForMaskedLM.from_pretrained(model_dir)
    optimizer = adamw(model, learning_rate)
    step = _masked_lm_steps(model, tokenizer, optimizer, sentences, batch_size,
                            max_seq_length, packed)
    model.train()
    start = time.perf_counter()
    # Timing steps at a small rate (they also train: the first steps of warm-up).
    for group in optimizer.param_groups:
        group["lr"] = learning_rate * 0.01
    step()
    timed = time.perf_counter()
    for _ in range(calibration_steps - 1):
        step()
    per_step = (time.perf_counter() - timed) / (calibration_steps - 1)
    steps = max(10, int((budget_seconds - (time.perf_counter() - start)) / per_step))
    for group in optimizer.param_groups:
        group["lr"] = learning_rate
    schedule = transformers.get_linear_schedule_with_warmup(
        optimizer, int(warmup_share * steps), steps)
    log(f"Hugging Face: {per_step:.2f} s a step: {steps} steps")
    loop = time.perf_counter()
    for number in range(steps):
        loss = step(schedule)
        if (number + 1) % 100 == 0:
            log(f"Hugging Face: step {number + 1}/{steps} loss {loss:.3f}")
    seconds = time.perf_counter() - loop
    model.eval()
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return {"steps": steps, "seconds": seconds,
            "sequences_per_second": steps * batch_size / seconds}


def multi_label_classification(model_dir, train_rows, dev_rows, labels, max_seq_length,
                               batch_size, learning_rate, epochs, threshold=0.5):
    """Multi-label rows (text, [labels]) -> (loop seconds, this project's multi-label
    figures on the dev rows): `BertForSequenceClassification` with
    `problem_type="multi_label_classification"` (a sigmoid per label, BCEWithLogitsLoss),
    the recipe of `train`, a label predicted from `threshold`."""
    import torch
    import transformers

    from tasks.classification.metrics import multi_label_metrics
    index = {label: i for i, label in enumerate(labels)}

    def row(chosen):
        out = [0.0] * len(labels)
        for label in chosen:
            out[index[label]] = 1.0
        return out

    tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir)
    model = transformers.BertForSequenceClassification.from_pretrained(
        model_dir, num_labels=len(labels), problem_type="multi_label_classification")
    encoded = [dict(tokenizer(text, truncation=True, max_length=max_seq_length),
                    labels=row(chosen)) for text, chosen in train_rows]
    loader = torch.utils.data.DataLoader(
        encoded, batch_size=batch_size, shuffle=True, drop_last=True,
        collate_fn=transformers.DataCollatorWithPadding(tokenizer))
    seconds = train(model, loader, learning_rate, epochs)
    probabilities = []
    with torch.inference_mode():
        for i in range(0, len(dev_rows), 64):
            enc = tokenizer([text for text, _ in dev_rows[i:i + 64]], padding=True,
                            truncation=True, max_length=max_seq_length, return_tensors="pt")
            probabilities.append(torch.sigmoid(model(**enc).logits).numpy())
    truth = np.array([row(chosen) for _, chosen in dev_rows])
    return seconds, multi_label_metrics(np.concatenate(probabilities), truth, threshold)
