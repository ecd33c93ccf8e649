"""A toy sentiment task the classifier tests share: sentences of filler words with one
word that decides the label, and the vocabulary and tiny BERT config that read them."""

import json

POSITIVE, NEGATIVE = ["good", "great", "fine", "nice"], ["bad", "awful", "poor", "sad"]
FILLER = ["the", "movie", "was", "a", "plot", "and", "acting", "very", "really", "film"]
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + POSITIVE + NEGATIVE + FILLER


def sentence(rng, positive):
    """3 to 8 filler words (`rng`: a `random.Random`) with one positive or negative word
    among them."""
    words = [rng.choice(FILLER) for _ in range(rng.randint(3, 8))]
    words.insert(rng.randint(0, len(words)), rng.choice(POSITIVE if positive else NEGATIVE))
    return " ".join(words)


def write_model_files(folder):
    """`folder/vocab.txt` and a tiny `folder/bert_config.json` (2 layers of 32)."""
    (folder / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    config = {"vocab_size": len(VOCAB), "hidden_size": 32, "num_hidden_layers": 2,
              "num_attention_heads": 4, "intermediate_size": 64,
              "max_position_embeddings": 64, "type_vocab_size": 2}
    (folder / "bert_config.json").write_text(json.dumps(config))
