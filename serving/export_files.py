"""The files of an export folder beside the SavedModel, by name.

Pipeline position: written by the exports (`serving.saved_model`), read by
`serving.load` (`serving.predictor`), which imports no TensorFlow: so they are named here.
"""

SERVING_CONFIG_FILE = "serving.json"  # what serving.load needs: tokenizer, task, files
VOCAB_FILE = "vocab.txt"  # a copy of the vocabulary
TFLITE_FILE = "model.tflite"  # serving_ids as TF Lite, float32
TFLITE_INT8_FILE = "model_int8.tflite"  # the same with int8 weights (dynamic range)
# model.tflite's signature for rows that pack several sequences (`serving.packed_rows`)
PACKED_SIGNATURE = "serving_packed"
