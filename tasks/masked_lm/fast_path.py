"""A fill-mask export served from raw text without TensorFlow: WordPiece around each
`[MASK]`, packing, and the answers of its raw-text signature, in NumPy around
`model.tflite` (whose `serving_ids` answers each masked position's top-k).

Pipeline position: `serving.load` of a masked-LM export (see `serving.fast_path`).
"""

import numpy as np

from serving.fast_path import FastPath
from tasks.masked_lm import masks


class MaskedLMFastPath(FastPath):
    """`text` in; `token`, `id`, `probability` [batch, masks, top_k] and `mask_count`
    out, as `MaskedLMModule.from_text`. Not run in length groups: the masked positions
    are an input of their own."""

    group_by_length = False

    def __init__(self, config, tokenizer, seq_multiple=8):
        super().__init__(config, tokenizer, seq_multiple)
        self.mask_id = config["mask_id"]
        self.tokens = np.array([b""] * (max(tokenizer.vocab.values()) + 1), dtype=object)
        for token, index in tokenizer.vocab.items():
            self.tokens[index] = token.encode("utf-8")

    def prepare(self, columns):
        rows = masks.ids_with_masks(columns[self.text_inputs[0]], self.tokenizer.ids,
                                    self.mask_id)
        inputs, counts, _ = masks.pack(rows, self.cls_id, self.sep_id, self.mask_id,
                                       self.max_seq_length, self.seq_multiple)
        return inputs, counts

    def answer(self, outputs, counts):
        ids = outputs["top_k_ids"].astype(np.int32)
        real = np.arange(ids.shape[1])[None, :, None] < counts[:, None, None]
        return {"token": np.where(real, self.tokens[ids], b""),
                "id": np.where(real, ids, -1).astype(np.int32),
                "probability": np.where(real, outputs["top_k_probabilities"],
                                        0.0).astype(np.float32),
                "mask_count": counts.astype(np.int32)}
